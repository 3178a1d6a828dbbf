/* arch.c: GPUNet architectures: reads NVIDIA's JSON layer lists (the format of
 * gpunet_builder.py, distilled and not), builds built-in models from the zoo table, and
 * validates both the same way (fields, ranges, channel chaining, layer order, feature-map
 * size), with errors that name the file, the layer, the field and the fix. */
#include "arch.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "json.h"
#include "zoo.h"

#define MAX_CHANNELS 65536
#define MAX_KERNEL 15
#define MAX_EXPANSION 64.0
#define MAX_CLASSES 100000
#define MIN_RESOLUTION 16
#define MAX_RESOLUTION 4096
#define MAX_STAGE 1000000
#define MAX_LAYERS 10000
#define MAX_FILE_SIZE (16 * 1024 * 1024)

static const char *
type_name (gpunet_layer_type t)
{
  switch (t) {
    case GPUNET_LAYER_HEAD: return "head";
    case GPUNET_LAYER_HEAD_LARGE: return "head_large";
    case GPUNET_LAYER_CONV: return "conv";
    case GPUNET_LAYER_FUSED_IRB: return "fused_irb";
    case GPUNET_LAYER_IRB: return "irb";
    case GPUNET_LAYER_TAIL: return "tail";
  }
  return "?";
}

/* Stores "<source>: <message>" in *err and returns `status`. */
static gpunet_status GPUNET_PRINTF (4, 5)
arch_fail (char **err, gpunet_status status, const char *source, const char *fmt, ...)
{
  if (!err)
    return status;
  va_list ap;
  va_start (ap, fmt);
  char buf[1024];
  vsnprintf (buf, sizeof buf, fmt, ap);
  va_end (ap);
  return gpunet_fail (err, status, "%s: %s", source, buf);
}

void
gpunet_arch_free (gpunet_arch *arch)
{
  if (!arch)
    return;
  free (arch->name);
  free (arch->layers);
  free (arch);
}

/* ---- validation shared by parsed and built-in architectures --------------------- */

typedef struct {
  const char *source;
  char **err;
  int distill;
  int size;        /* feature-map height/width after the previous layer */
  int prev_out;    /* channels after the previous layer */
  int head_at;     /* json_index of the first head, 0 if none yet */
  int tail_at;     /* json_index of the tail, 0 if none yet */
} validator;

static gpunet_status
layer_fail (validator *v, const gpunet_layer_spec *l, const char *fmt, ...) GPUNET_PRINTF (3, 4);

static gpunet_status
layer_fail (validator *v, const gpunet_layer_spec *l, const char *fmt, ...)
{
  char buf[768];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (buf, sizeof buf, fmt, ap);
  va_end (ap);
  return arch_fail (v->err, GPUNET_ERR_ARCH, v->source, "layer %d (%s): %s", l->json_index,
      type_name (l->type), buf);
}

static int
type_allowed (int distill, gpunet_layer_type t)
{
  if (distill)
    return t != GPUNET_LAYER_CONV;
  return t != GPUNET_LAYER_HEAD_LARGE;
}

static gpunet_status
check_channels (validator *v, const gpunet_layer_spec *l)
{
  if (l->in_ch < 1 || l->in_ch > MAX_CHANNELS)
    return layer_fail (v, l, "num_in_channels is %d; channel counts must be from 1 to %d",
        l->in_ch, MAX_CHANNELS);
  if (l->out_ch < 1 || l->out_ch > MAX_CHANNELS)
    return layer_fail (v, l, "num_out_channels is %d; channel counts must be from 1 to %d",
        l->out_ch, MAX_CHANNELS);
  return GPUNET_OK;
}

/* Kernel, stride, expansion, groups, act and stage of conv/irb/fused_irb. */
static gpunet_status
check_block_fields (validator *v, const gpunet_layer_spec *l)
{
  if (l->kernel < 1 || l->kernel > MAX_KERNEL || l->kernel % 2 == 0)
    return layer_fail (v, l, "kernel_size is %d; it must be odd, from 1 to %d", l->kernel,
        MAX_KERNEL);
  if (l->stride != 1 && l->stride != 2)
    return layer_fail (v, l, "stride is %d; it must be 1 or 2", l->stride);
  if (l->stage < 0 || l->stage > MAX_STAGE)
    return layer_fail (v, l, "stage is %d; it must be an integer from 0 to %d", l->stage,
        MAX_STAGE);
  if (l->type == GPUNET_LAYER_CONV)
    return GPUNET_OK;
  if (!(l->expansion > 0.0) || l->expansion > MAX_EXPANSION)
    return layer_fail (v, l, "expansion is %g; it must be greater than 0 and at most %g",
        l->expansion, MAX_EXPANSION);
  if (v->distill) {
    if (l->expansion != floor (l->expansion))
      return layer_fail (v, l, "expansion is %g; distilled configs (\"distill\": true) need a "
          "whole number because NVIDIA's distilled blocks multiply the channel count by it "
          "(fractional expansions exist only in non-distilled configs)", l->expansion);
    if (l->groups < 1 || l->groups > MAX_CHANNELS)
      return layer_fail (v, l, "groups is %d; it must be from 1 to %d", l->groups, MAX_CHANNELS);
    if (l->type == GPUNET_LAYER_IRB) {
      long mid = (long) l->in_ch * (long) l->expansion;
      if (l->in_ch % l->groups != 0)
        return layer_fail (v, l, "groups %d does not divide num_in_channels %d (the 1x1 "
            "convolutions of a distilled irb are grouped); use a divisor of %d",
            l->groups, l->in_ch, l->in_ch);
      if (mid % l->groups != 0)
        return layer_fail (v, l, "groups %d does not divide the expanded channel count %ld "
            "(num_in_channels x expansion); use a divisor of %ld", l->groups, mid, mid);
      if (l->out_ch % l->groups != 0)
        return layer_fail (v, l, "groups %d does not divide num_out_channels %d (the 1x1 "
            "convolutions of a distilled irb are grouped); use a divisor of %d",
            l->groups, l->out_ch, l->out_ch);
    }
  } else if (l->use_se != 0 && l->use_se != 1) {
    return layer_fail (v, l, "use_se must be true or false");
  }
  return GPUNET_OK;
}

/* Output size of a convolution, or -1 when the input is smaller than the kernel. */
static int
conv_out (int size, int k, int s, int pad)
{
  if (size + 2 * pad < k)
    return -1;
  return (size + 2 * pad - k) / s + 1;
}

/* Checks layer `l` after the layers before it (state in `v`). */
static gpunet_status
validate_layer (validator *v, const gpunet_layer_spec *l, int position)
{
  gpunet_status st;
  const char *mode = v->distill ? "distilled configs (\"distill\": true)"
      : "non-distilled configs (\"distill\": false)";
  if (!type_allowed (v->distill, l->type))
    return layer_fail (v, l, "layer_type \"%s\" is not allowed in %s; they accept %s",
        type_name (l->type), mode, v->distill ? "head, head_large, irb, fused_irb and tail"
        : "head, conv, irb, fused_irb and tail");

  /* Order: a head first, one tail last, at most one head when distilled. */
  if (v->tail_at) {
    if (l->type == GPUNET_LAYER_TAIL)
      return layer_fail (v, l, "a second tail (layer %d is already a tail); a network has "
          "exactly one tail and it is the last layer%s", v->tail_at, v->distill
          ? " (NVIDIA's distilled builder registers every tail under the one module name "
            "\"tail:\", so the second would silently replace the first)" : "");
    return layer_fail (v, l, "it follows the tail (layer %d); the tail must be the last "
        "layer, move it to the end", v->tail_at);
  }
  int is_head = l->type == GPUNET_LAYER_HEAD || l->type == GPUNET_LAYER_HEAD_LARGE;
  if (position == 0 && !is_head)
    return layer_fail (v, l, "the first layer after \"data\" must be a %s",
        v->distill ? "head or head_large" : "head");
  if (is_head && v->distill && v->head_at)
    return layer_fail (v, l, "a second head (layer %d is already a head); NVIDIA's distilled "
        "builder registers head and head_large under the one module name \"head:\", so the "
        "second would silently replace the first: keep a single head", v->head_at);
  if (is_head && !v->head_at)
    v->head_at = l->json_index;
  if (l->type == GPUNET_LAYER_TAIL)
    v->tail_at = l->json_index;

  /* Fields and ranges. */
  if ((st = check_channels (v, l)) != GPUNET_OK)
    return st;
  switch (l->type) {
    case GPUNET_LAYER_HEAD:
    case GPUNET_LAYER_HEAD_LARGE:
      if (l->act != GPUNET_ACT_RELU && l->act != GPUNET_ACT_SWISH)
        return layer_fail (v, l, "act must be \"relu\" or \"swish\"");
      break;
    case GPUNET_LAYER_CONV:
    case GPUNET_LAYER_IRB:
    case GPUNET_LAYER_FUSED_IRB:
      if (l->act != GPUNET_ACT_RELU && l->act != GPUNET_ACT_SWISH)
        return layer_fail (v, l, "act must be \"relu\" or \"swish\"");
      if ((st = check_block_fields (v, l)) != GPUNET_OK)
        return st;
      break;
    case GPUNET_LAYER_TAIL:
      if (l->num_classes < 1 || l->num_classes > MAX_CLASSES)
        return layer_fail (v, l, "num_classes is %d; it must be from 1 to %d", l->num_classes,
            MAX_CLASSES);
      break;
  }

  /* Channel chaining. */
  if (l->in_ch != v->prev_out) {
    if (position == 0)
      return layer_fail (v, l, "num_in_channels is %d but the input image has 3 (RGB) "
          "channels; set it to 3", l->in_ch);
    return layer_fail (v, l, "num_in_channels is %d but the previous layer outputs %d "
        "channels; set it to %d or fix the previous layer's num_out_channels",
        l->in_ch, v->prev_out, v->prev_out);
  }
  v->prev_out = l->out_ch;

  /* Feature-map size, with the padding NVIDIA's modules use. */
  int k = 3, s = 2, pad = 1;
  switch (l->type) {
    case GPUNET_LAYER_HEAD:
    case GPUNET_LAYER_HEAD_LARGE:
      break;
    case GPUNET_LAYER_CONV:
      k = l->kernel;
      s = l->stride;
      pad = ((s - 1) + (k - 1)) / 2;
      break;
    case GPUNET_LAYER_FUSED_IRB:
      k = l->kernel;
      s = l->stride;
      if (v->distill)
        pad = k / 2;
      else /* timm "same": static only for stride 1 and odd kernels, else padding 0 */
        pad = (s == 1 && (k - 1) % 2 == 0) ? (k - 1) / 2 : 0;
      break;
    case GPUNET_LAYER_IRB:
      k = l->kernel;
      s = l->stride;
      pad = v->distill ? k / 2 : ((s - 1) + (k - 1)) / 2;
      break;
    case GPUNET_LAYER_TAIL:
      k = 1;
      s = 1;
      pad = 0;
      break;
  }
  int out = conv_out (v->size, k, s, pad);
  if (out < 1)
    return layer_fail (v, l, "the feature map is only %dx%d here, smaller than kernel_size %d "
        "with padding %d%s; raise img_resolution or use fewer stride-2 layers",
        v->size, v->size, k, pad, (l->type == GPUNET_LAYER_FUSED_IRB && !v->distill && pad == 0)
        ? " (NVIDIA's non-distilled fused_irb with stride 2 is not padded)" : "");
  v->size = out;
  return GPUNET_OK;
}

/* Validates a complete architecture; errors name `source`. */
static gpunet_status
validate (const gpunet_arch *a, const char *source, char **err)
{
  validator v;
  memset (&v, 0, sizeof v);
  v.source = source;
  v.err = err;
  v.distill = a->distill;
  v.size = a->resolution;
  v.prev_out = 3;
  if (a->resolution < MIN_RESOLUTION || a->resolution > MAX_RESOLUTION)
    return arch_fail (err, GPUNET_ERR_ARCH, source, "layer 1 (data): img_resolution is %d; "
        "it must be from %d to %d", a->resolution, MIN_RESOLUTION, MAX_RESOLUTION);
  if (a->n_layers < 1)
    return arch_fail (err, GPUNET_ERR_ARCH, source, "there are no layers after \"data\"; a "
        "network needs a head, its blocks and a tail");
  for (int i = 0; i < a->n_layers; i++) {
    gpunet_status st = validate_layer (&v, &a->layers[i], i);
    if (st != GPUNET_OK)
      return st;
  }
  const gpunet_layer_spec *last = &a->layers[a->n_layers - 1];
  if (last->type != GPUNET_LAYER_TAIL)
    return arch_fail (err, GPUNET_ERR_ARCH, source, "the last layer (layer %d, %s) is not a "
        "tail; a network must end with exactly one tail layer (num_in_channels, "
        "num_out_channels, num_classes)", last->json_index, type_name (last->type));
  return GPUNET_OK;
}

/* ---- JSON reading ----------------------------------------------------------------- */

typedef struct {
  JsonNode *obj;
  const char *source;
  char **err;
  int index;
  const char *type;
  const char *needs;   /* "irb layers need ..." */
} field_reader;

static void
describe (JsonNode *j, char *buf, size_t size)
{
  GType t = gpunet_json_value_type (j);
  if (JSON_NODE_HOLDS_ARRAY (j))
    snprintf (buf, size, "an array");
  else if (JSON_NODE_HOLDS_OBJECT (j))
    snprintf (buf, size, "an object");
  else if (t == G_TYPE_BOOLEAN)
    snprintf (buf, size, "%s", json_node_get_boolean (j) ? "true" : "false");
  else if (t == G_TYPE_INT64 || t == G_TYPE_DOUBLE)
    snprintf (buf, size, "the number %.17g", json_node_get_double (j));
  else if (t == G_TYPE_STRING)
    snprintf (buf, size, "the string \"%.40s%s\"", json_node_get_string (j),
        strlen (json_node_get_string (j)) > 40 ? "..." : "");
  else
    snprintf (buf, size, "null");
}

static gpunet_status
field_fail (field_reader *r, const char *fmt, ...) GPUNET_PRINTF (2, 3);

static gpunet_status
field_fail (field_reader *r, const char *fmt, ...)
{
  char buf[768];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (buf, sizeof buf, fmt, ap);
  va_end (ap);
  return arch_fail (r->err, GPUNET_ERR_ARCH, r->source, "layer %d (%s): %s", r->index, r->type,
      buf);
}

static gpunet_status
field_missing (field_reader *r, const char *key)
{
  return field_fail (r, "field \"%s\" is missing; %s", key, r->needs);
}

/* An integer field (a number with an integral value; 3.0 is accepted, 3.5 is not).
 * When absent: an error if `required`, else *out is left alone. */
static gpunet_status
read_int (field_reader *r, const char *key, int required, int *out)
{
  JsonNode *j = gpunet_json_get (r->obj, key);
  char what[96];
  if (!j)
    return required ? field_missing (r, key) : GPUNET_OK;
  if (!gpunet_json_is_number (j)) {
    describe (j, what, sizeof what);
    return field_fail (r, "field \"%s\" must be an integer, not %s (write it without quotes)",
        key, what);
  }
  double v = json_node_get_double (j);
  if (v != floor (v))
    return field_fail (r, "field \"%s\" must be an integer, not %g", key, v);
  if (v < -1e9 || v > 1e9)
    return field_fail (r, "field \"%s\" is %.17g, far outside any valid range", key, v);
  *out = (int) v;
  return GPUNET_OK;
}

static gpunet_status
read_number (field_reader *r, const char *key, double *out)
{
  JsonNode *j = gpunet_json_get (r->obj, key);
  char what[96];
  if (!j)
    return field_missing (r, key);
  if (!gpunet_json_is_number (j)) {
    describe (j, what, sizeof what);
    return field_fail (r, "field \"%s\" must be a number, not %s", key, what);
  }
  *out = json_node_get_double (j);
  return GPUNET_OK;
}

static gpunet_status
read_bool (field_reader *r, const char *key, int *out)
{
  JsonNode *j = gpunet_json_get (r->obj, key);
  char what[96];
  if (!j)
    return field_missing (r, key);
  if (gpunet_json_value_type (j) != G_TYPE_BOOLEAN) {
    describe (j, what, sizeof what);
    return field_fail (r, "field \"%s\" must be true or false, not %s", key, what);
  }
  *out = json_node_get_boolean (j);
  return GPUNET_OK;
}

static gpunet_status
read_act (field_reader *r, int required, gpunet_act *out)
{
  JsonNode *j = gpunet_json_get (r->obj, "act");
  const char *name = gpunet_json_value_type (j) == G_TYPE_STRING ? json_node_get_string (j) : "";
  char what[96];
  if (!j)
    return required ? field_missing (r, "act") : GPUNET_OK;
  if (strcmp (name, "relu") == 0)
    *out = GPUNET_ACT_RELU;
  else if (strcmp (name, "swish") == 0)
    *out = GPUNET_ACT_SWISH;
  else {
    describe (j, what, sizeof what);
    return field_fail (r, "field \"act\" is %s; it must be \"relu\" or \"swish\"", what);
  }
  return GPUNET_OK;
}

static const char *
needs_text (int distill, gpunet_layer_type t)
{
  switch (t) {
    case GPUNET_LAYER_HEAD:
      return distill ? "head layers need num_in_channels and num_out_channels"
          : "head layers need num_in_channels and num_out_channels (\"act\" is optional, "
            "default \"swish\")";
    case GPUNET_LAYER_HEAD_LARGE:
      return "head_large layers need num_in_channels and num_out_channels";
    case GPUNET_LAYER_CONV:
      return "conv layers need num_in_channels, num_out_channels, kernel_size, stride, act, "
          "stage";
    case GPUNET_LAYER_IRB:
      return distill ? "distilled irb layers need num_in_channels, num_out_channels, "
            "kernel_size, stride, expansion, groups, stage"
          : "irb layers need num_in_channels, num_out_channels, kernel_size, stride, "
            "expansion, use_se, act, stage";
    case GPUNET_LAYER_FUSED_IRB:
      return distill ? "distilled fused_irb layers need num_in_channels, num_out_channels, "
            "kernel_size, stride, expansion, groups, stage"
          : "fused_irb layers need num_in_channels, num_out_channels, kernel_size, stride, "
            "expansion, use_se, act, stage";
    case GPUNET_LAYER_TAIL:
      return "tail layers need num_in_channels, num_out_channels, num_classes";
  }
  return "";
}

/* Reads one layer object (not "data") into *l; types and presence only. */
static gpunet_status
read_layer (JsonNode *j, int index, int line, int distill, const char *source,
    gpunet_layer_spec *l, char **err)
{
  static const struct { const char *name; gpunet_layer_type type; } types[] = {
    { "head", GPUNET_LAYER_HEAD }, { "head_large", GPUNET_LAYER_HEAD_LARGE },
    { "conv", GPUNET_LAYER_CONV }, { "irb", GPUNET_LAYER_IRB },
    { "fused_irb", GPUNET_LAYER_FUSED_IRB }, { "tail", GPUNET_LAYER_TAIL },
  };
  const char *accepted = distill ? "head, head_large, irb, fused_irb, tail"
      : "head, conv, irb, fused_irb, tail";
  const char *mode = distill ? "distilled configs (\"distill\": true)"
      : "non-distilled configs (\"distill\": false)";
  char what[96];
  gpunet_status st;

  if (!JSON_NODE_HOLDS_OBJECT (j)) {
    describe (j, what, sizeof what);
    return arch_fail (err, GPUNET_ERR_ARCH, source, "layer %d (line %d) must be a JSON object "
        "with a \"layer_type\", not %s", index, line, what);
  }
  JsonNode *tn = gpunet_json_get (j, "layer_type");
  if (!tn)
    return arch_fail (err, GPUNET_ERR_ARCH, source, "layer %d (line %d): field \"layer_type\" "
        "is missing; it must be one of %s", index, line, accepted);
  if (gpunet_json_value_type (tn) != G_TYPE_STRING) {
    describe (tn, what, sizeof what);
    return arch_fail (err, GPUNET_ERR_ARCH, source, "layer %d (line %d): field \"layer_type\" "
        "must be a string (one of %s), not %s", index, line, accepted, what);
  }
  const char *t = json_node_get_string (tn);
  if (strcmp (t, "data") == 0)
    return arch_fail (err, GPUNET_ERR_ARCH, source, "layer %d (data): only the first entry "
        "may be the \"data\" layer; remove this one", index);
  int found = 0;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    if (strcmp (t, types[i].name) == 0) {
      l->type = types[i].type;
      found = 1;
    }
  }
  if (!found)
    return arch_fail (err, GPUNET_ERR_ARCH, source, "layer %d (line %d): unknown layer_type "
        "\"%.40s\"; %s accept %s", index, line, t, mode, accepted);
  if (!type_allowed (distill, l->type))
    return arch_fail (err, GPUNET_ERR_ARCH, source, "layer %d (%s): layer_type \"%s\" exists "
        "only in %s configs, but this one says \"distill\": %s; %s accept %s", index,
        t, t, distill ? "non-distilled" : "distilled",
        distill ? "true" : "false", mode, accepted);

  field_reader r = { j, source, err, index, type_name (l->type), needs_text (distill, l->type) };
  l->json_index = index;
  l->kernel = 3;
  l->stride = 2;
  l->expansion = 1.0;
  l->groups = 1;
  l->stage = -1;
  l->act = GPUNET_ACT_RELU;
  l->use_se = 0;
  l->num_classes = 0;
  if ((st = read_int (&r, "num_in_channels", 1, &l->in_ch)) != GPUNET_OK ||
      (st = read_int (&r, "num_out_channels", 1, &l->out_ch)) != GPUNET_OK)
    return st;

  switch (l->type) {
    case GPUNET_LAYER_HEAD:
    case GPUNET_LAYER_HEAD_LARGE:
      if (!distill) {
        l->act = GPUNET_ACT_SWISH;  /* NVIDIA's builder: layerConfig.get("act", "swish") */
        if ((st = read_act (&r, 0, &l->act)) != GPUNET_OK)
          return st;
      }
      break;
    case GPUNET_LAYER_TAIL:
      l->kernel = 1;
      l->stride = 1;
      if ((st = read_int (&r, "num_classes", 1, &l->num_classes)) != GPUNET_OK)
        return st;
      break;
    case GPUNET_LAYER_CONV:
    case GPUNET_LAYER_IRB:
    case GPUNET_LAYER_FUSED_IRB:
      if ((st = read_int (&r, "kernel_size", 1, &l->kernel)) != GPUNET_OK ||
          (st = read_int (&r, "stride", 1, &l->stride)) != GPUNET_OK)
        return st;
      if (l->type != GPUNET_LAYER_CONV) {
        if ((st = read_number (&r, "expansion", &l->expansion)) != GPUNET_OK)
          return st;
        if (distill) {
          if ((st = read_int (&r, "groups", 1, &l->groups)) != GPUNET_OK)
            return st;
        } else if ((st = read_bool (&r, "use_se", &l->use_se)) != GPUNET_OK) {
          return st;
        }
      }
      if (!distill && (st = read_act (&r, 1, &l->act)) != GPUNET_OK)
        return st;
      if ((st = read_int (&r, "stage", 1, &l->stage)) != GPUNET_OK)
        return st;
      break;
  }
  /* Heads and tails do not use "stage" (it is not part of their module names): keep it
   * when it is an integer, ignore it otherwise. */
  if (l->type == GPUNET_LAYER_HEAD || l->type == GPUNET_LAYER_HEAD_LARGE ||
      l->type == GPUNET_LAYER_TAIL) {
    JsonNode *s = gpunet_json_get (j, "stage");
    double v = gpunet_json_is_number (s) ? json_node_get_double (s) : -1.0;
    if (v == floor (v) && v >= 0 && v <= MAX_STAGE)
      l->stage = (int) v;
  }
  return GPUNET_OK;
}

/* Reads the "data" entry. */
static gpunet_status
read_data (JsonArray *root, const char *source, gpunet_arch *a, char **err)
{
  const char *needs = "the first entry must be {\"layer_type\": \"data\", \"img_resolution\": "
      "<size>, \"distill\": <true|false>}";
  if (json_array_get_length (root) == 0)
    return arch_fail (err, GPUNET_ERR_ARCH, source, "the layer list is empty; %s", needs);
  JsonNode *d = json_array_get_element (root, 0);
  JsonNode *t = gpunet_json_get (d, "layer_type");
  if (gpunet_json_value_type (t) != G_TYPE_STRING || strcmp (json_node_get_string (t), "data") != 0)
    return arch_fail (err, GPUNET_ERR_ARCH, source, "layer 1 is not the \"data\" entry; %s",
        needs);
  field_reader r = { d, source, err, 1, "data", needs };
  gpunet_status st;
  if ((st = read_int (&r, "img_resolution", 1, &a->resolution)) != GPUNET_OK)
    return st;
  JsonNode *dist = gpunet_json_get (d, "distill");
  if (!dist)
    return field_fail (&r, "field \"distill\" is missing; NVIDIA's builder needs it to choose "
        "the distilled or the plain layer set: add \"distill\": false (or true for "
        "GPUNet-D1/D2-style configs)");
  return read_bool (&r, "distill", &a->distill);
}

gpunet_status
gpunet_arch_parse (const char *json, size_t len, const char *source, gpunet_arch **out,
    char **error_text)
{
  JsonNode *root = NULL;
  int *lines = NULL;
  gpunet_status st;
  if (!source)
    source = "architecture";
  if (!out)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "gpunet_arch_parse: out is NULL");
  *out = NULL;
  st = gpunet_json_parse (json, len, &root, &lines, error_text);
  if (st != GPUNET_OK) {
    gpunet_error_prefix (error_text, "%s", source);
    return st;
  }
  if (!JSON_NODE_HOLDS_ARRAY (root)) {
    char what[96];
    describe (root, what, sizeof what);
    json_node_unref (root);
    return arch_fail (error_text, GPUNET_ERR_ARCH, source, "the top level must be a JSON array "
        "of layers (NVIDIA's GPUNet config format), not %s", what);
  }
  JsonArray *list = json_node_get_array (root);
  guint n_items = json_array_get_length (list);
  if (n_items > MAX_LAYERS) {
    json_node_unref (root);
    free (lines);
    return arch_fail (error_text, GPUNET_ERR_ARCH, source, "%lu layers is more than the %d "
        "this reader accepts", (unsigned long) n_items, MAX_LAYERS);
  }

  gpunet_arch *a = calloc (1, sizeof *a);
  if (!a) {
    json_node_unref (root);
    free (lines);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  }
  a->crop_pct = 1.0f;
  st = read_data (list, source, a, error_text);
  if (st == GPUNET_OK) {
    a->n_layers = (int) n_items - 1;
    a->layers = calloc (n_items, sizeof *a->layers);
    if (!a->layers)
      st = gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  }
  /* Read and validate layer by layer so the first problem in file order is reported. */
  validator v;
  memset (&v, 0, sizeof v);
  v.source = source;
  v.err = error_text;
  v.distill = a->distill;
  v.size = a->resolution;
  v.prev_out = 3;
  if (st == GPUNET_OK && (a->resolution < MIN_RESOLUTION || a->resolution > MAX_RESOLUTION))
    st = arch_fail (error_text, GPUNET_ERR_ARCH, source, "layer 1 (data): img_resolution is %d; "
        "it must be from %d to %d", a->resolution, MIN_RESOLUTION, MAX_RESOLUTION);
  for (int i = 0; st == GPUNET_OK && i < a->n_layers; i++) {
    st = read_layer (json_array_get_element (list, (guint) i + 1), i + 2, lines[i + 1],
        a->distill, source, &a->layers[i], error_text);
    if (st == GPUNET_OK)
      st = validate_layer (&v, &a->layers[i], i);
  }
  if (st == GPUNET_OK)
    st = validate (a, source, error_text);
  json_node_unref (root);
  free (lines);
  if (st != GPUNET_OK) {
    gpunet_arch_free (a);
    return st;
  }
  a->num_classes = a->layers[a->n_layers - 1].num_classes;
  /* The name is the source's base name without ".json". */
  const char *base = strrchr (source, '/');
  base = base ? base + 1 : source;
  size_t n = strlen (base);
  if (n > 5 && strcmp (base + n - 5, ".json") == 0)
    n -= 5;
  a->name = malloc (n + 1);
  if (!a->name) {
    gpunet_arch_free (a);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  }
  memcpy (a->name, base, n);
  a->name[n] = '\0';
  *out = a;
  return GPUNET_OK;
}

/* ---- built-in models and loading ---------------------------------------------------- */

static char *
dup_string (const char *s, size_t n)
{
  char *d = malloc (n + 1);
  if (d) {
    memcpy (d, s, n);
    d[n] = '\0';
  }
  return d;
}

static void
known_names (char *buf, size_t size)
{
  const char *const *names = gpunet_zoo_names ();
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; names[i] && used < size; i++) {
    int n = snprintf (buf + used, size - used, "%s%s", i ? ", " : "", names[i]);
    if (n < 0)
      break;
    used += (size_t) n;
  }
}

gpunet_status
gpunet_arch_builtin (const char *name, gpunet_arch **out, char **error_text)
{
  if (!out)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "gpunet_arch_builtin: out is NULL");
  *out = NULL;
  const gpunet_zoo_model *m = gpunet_zoo_find (name);
  if (!m) {
    char names[256];
    known_names (names, sizeof names);
    return gpunet_fail (error_text, GPUNET_ERR_ARCH, "'%s' is not a built-in model; known: %s "
        "(or NVIDIA's names 0.65ms, 0.85ms, 1.75ms, 0.5ms-D, 0.8ms-D, 1.25ms-D, 2.25ms-D)",
        name ? name : "(null)", names);
  }
  gpunet_arch *a = calloc (1, sizeof *a);
  if (!a)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  a->name = dup_string (m->name, strlen (m->name));
  a->layers = calloc ((size_t) m->n_layers, sizeof *a->layers);
  if (!a->name || !a->layers) {
    gpunet_arch_free (a);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  }
  a->resolution = m->resolution;
  a->distill = m->distill;
  a->crop_pct = m->crop_pct;
  a->n_layers = m->n_layers;
  for (int i = 0; i < m->n_layers; i++) {
    const gpunet_zoo_layer *z = &m->layers[i];
    gpunet_layer_spec *l = &a->layers[i];
    l->type = z->type;
    l->json_index = i + 2;
    l->in_ch = z->in_ch;
    l->out_ch = z->out_ch;
    l->kernel = z->kernel;
    l->stride = z->stride;
    l->expansion = z->expansion > 0 ? z->expansion : 1.0;
    l->groups = z->groups > 0 ? z->groups : 1;
    l->stage = z->stage;
    l->act = z->act;
    l->use_se = z->use_se;
    l->num_classes = z->num_classes;
  }
  gpunet_status st = validate (a, a->name, error_text);
  if (st != GPUNET_OK) {
    gpunet_arch_free (a);
    return st;
  }
  a->num_classes = a->layers[a->n_layers - 1].num_classes;
  *out = a;
  return GPUNET_OK;
}

const char *const *
gpunet_arch_builtin_names (void)
{
  return gpunet_zoo_names ();
}

/* Reads a whole file; GPUNET_ERR_ARCH when it does not exist (the caller's name may have
 * been meant as a built-in), GPUNET_ERR_IO when it exists but cannot be read. */
static gpunet_status
read_file (const char *path, char **data, size_t *size, char **err)
{
  struct stat sb;
  if (stat (path, &sb) != 0) {
    char names[256];
    known_names (names, sizeof names);
    return gpunet_fail (err, GPUNET_ERR_ARCH, "'%s' is neither a built-in model (%s) nor a "
        "readable JSON file: %s", path, names, strerror (errno));
  }
  /* open() of a FIFO blocks until a writer comes (a device may never end): regular files
   * only, checked before opening and again on what was opened (without blocking) */
  int fd = -1;
  if (S_ISREG (sb.st_mode)) {
    fd = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
      return gpunet_fail (err, GPUNET_ERR_IO, "cannot open architecture file '%s': %s", path,
          strerror (errno));
    if (fstat (fd, &sb) != 0)
      sb.st_mode = 0;
  }
  if (!S_ISREG (sb.st_mode)) {
    if (fd >= 0)
      close (fd);
    return gpunet_fail (err, GPUNET_ERR_IO, "'%s' is not a regular file (%s): give a "
        "built-in model name or the path of an architecture JSON file", path,
        S_ISDIR (sb.st_mode) ? "a directory" : S_ISFIFO (sb.st_mode) ? "a FIFO"
        : S_ISCHR (sb.st_mode) || S_ISBLK (sb.st_mode) ? "a device" : "not a plain file");
  }
  FILE *f = fdopen (fd, "rb");
  if (!f) {
    int e = errno;
    close (fd);
    return gpunet_fail (err, GPUNET_ERR_IO, "cannot open architecture file '%s': %s", path,
        strerror (e));
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc (cap);
  while (buf) {
    if (n == cap) {
      if (cap >= MAX_FILE_SIZE) {
        free (buf);
        fclose (f);
        return gpunet_fail (err, GPUNET_ERR_FORMAT, "'%s' is larger than %d MiB; it is not an "
            "architecture JSON file", path, MAX_FILE_SIZE / (1024 * 1024));
      }
      char *nb = realloc (buf, cap * 2);
      if (!nb) {
        free (buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread (buf + n, 1, cap - n, f);
    n += got;
    if (got == 0)
      break;
  }
  if (!buf) {
    fclose (f);
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory reading '%s'", path);
  }
  if (ferror (f)) {
    int e = errno;
    free (buf);
    fclose (f);
    return gpunet_fail (err, GPUNET_ERR_IO, "cannot read architecture file '%s': %s", path,
        strerror (e));
  }
  fclose (f);
  *data = buf;
  *size = n;
  return GPUNET_OK;
}

gpunet_status
gpunet_arch_load (const char *name_or_path, gpunet_arch **out, char **error_text)
{
  if (!out || !name_or_path || !*name_or_path)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_arch_load: no architecture name or path given");
  *out = NULL;
  if (gpunet_zoo_find (name_or_path))
    return gpunet_arch_builtin (name_or_path, out, error_text);

  char *data = NULL;
  size_t size = 0;
  gpunet_status st = read_file (name_or_path, &data, &size, error_text);
  if (st != GPUNET_OK)
    return st;
  gpunet_arch *a = NULL;
  st = gpunet_arch_parse (data, size, name_or_path, &a, error_text);
  free (data);
  if (st != GPUNET_OK)
    return st;

  *out = a;
  return GPUNET_OK;
}
