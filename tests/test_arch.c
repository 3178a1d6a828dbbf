/* test_arch.c: unit tests of GPUNet architecture handling (models/arch.c, zoo.c,
 * labels.c): the golden fixture configs, every built-in name and alias, the built-in
 * table against NVIDIA's published JSON files when present, and a table of broken
 * configs that must fail with a precise message. */
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "check.h"
#include "gpunet.h"

static gpunet_arch *
load_fixture (const char *name)
{
  char path[1024];
  snprintf (path, sizeof path, "%s/fixtures/%s.json", check_data_dir (), name);
  gpunet_arch *a = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_arch_load (path, &a, &err);
  CHECK_MSG (st == GPUNET_OK, "%s: %s", path, err ? err : "");
  free (err);
  return a;
}

static void
test_fixtures (void)
{
  gpunet_arch *a = load_fixture ("tiny-a");
  if (a) {
    CHECK (strcmp (a->name, "tiny-a") == 0);
    CHECK (a->resolution == 96 && !a->distill && a->num_classes == 16);
    CHECK (a->crop_pct == 1.0f);
    CHECK (a->n_layers == 16);
    for (int i = 0; i < a->n_layers; i++)
      CHECK (a->layers[i].json_index == i + 2);
    gpunet_layer_spec *l = a->layers;
    CHECK (l[0].type == GPUNET_LAYER_HEAD && l[0].act == GPUNET_ACT_SWISH);
    CHECK (l[0].in_ch == 3 && l[0].out_ch == 8 && l[0].kernel == 3 && l[0].stride == 2);
    CHECK (l[0].stage == -1);
    CHECK (l[1].type == GPUNET_LAYER_CONV && l[1].act == GPUNET_ACT_RELU && l[1].stage == 1);
    CHECK (l[2].kernel == 5 && l[2].stride == 2 && l[2].act == GPUNET_ACT_SWISH);
    CHECK (l[3].type == GPUNET_LAYER_HEAD && l[3].act == GPUNET_ACT_RELU && l[3].json_index == 5);
    CHECK (l[5].type == GPUNET_LAYER_FUSED_IRB && l[5].expansion == 2.0 && !l[5].use_se);
    CHECK (l[6].use_se && l[6].stride == 2 && l[6].expansion == 3.0);
    CHECK (l[8].type == GPUNET_LAYER_FUSED_IRB && l[8].expansion == 1.5);
    CHECK (l[9].type == GPUNET_LAYER_IRB && l[9].expansion == 7.67 && l[9].use_se);
    CHECK (l[9].kernel == 5 && l[9].stage == 4 && l[9].groups == 1);
    CHECK (l[13].expansion == 1.15);
    CHECK (l[15].type == GPUNET_LAYER_TAIL && l[15].num_classes == 16 && l[15].out_ch == 32);
    CHECK (l[15].json_index == 17);
  }
  gpunet_arch_free (a);

  a = load_fixture ("tiny-d");
  if (a) {
    CHECK (strcmp (a->name, "tiny-d") == 0);
    CHECK (a->resolution == 64 && a->distill && a->num_classes == 10 && a->n_layers == 9);
    gpunet_layer_spec *l = a->layers;
    CHECK (l[0].type == GPUNET_LAYER_HEAD && l[0].act == GPUNET_ACT_RELU && l[0].stage == 0);
    CHECK (l[1].type == GPUNET_LAYER_IRB && l[1].expansion == 1.0 && l[1].groups == 1);
    CHECK (l[2].type == GPUNET_LAYER_FUSED_IRB && l[2].json_index == 4 && l[2].stage == 1);
    CHECK (l[3].type == GPUNET_LAYER_FUSED_IRB && l[3].groups == 2 && l[3].kernel == 5);
    CHECK (l[4].type == GPUNET_LAYER_IRB && l[4].groups == 2 && l[4].expansion == 3.0);
    CHECK (l[6].kernel == 7);
    for (int i = 0; i < a->n_layers; i++)
      CHECK (a->layers[i].act == GPUNET_ACT_RELU && !a->layers[i].use_se);
    CHECK (l[8].type == GPUNET_LAYER_TAIL && l[8].json_index == 10);
  }
  gpunet_arch_free (a);

  a = load_fixture ("tiny-dl");
  if (a) {
    CHECK (a->distill && a->n_layers == 5 && a->num_classes == 12 && a->resolution == 64);
    CHECK (a->layers[0].type == GPUNET_LAYER_HEAD_LARGE && a->layers[0].json_index == 2);
    CHECK (a->layers[3].groups == 2 && a->layers[3].kernel == 5);
  }
  gpunet_arch_free (a);
}

static void
test_builtins (void)
{
  static const struct {
    const char *name, *alias, *timm;
    int resolution, distill;
    float crop;
  } models[] = {
    { "gpunet-0", "0.65ms", "gpunet_0", 320, 0, 1.0f },
    { "gpunet-1", "0.85ms", "gpunet_1", 288, 0, 1.0f },
    { "gpunet-2", "1.75ms", "gpunet_2", 384, 0, 1.0f },
    { "gpunet-p0", "0.5ms-D", "gpunet_p0", 224, 0, 0.875f },
    { "gpunet-p1", "0.8ms-D", "gpunet_p1", 224, 0, 0.875f },
    { "gpunet-d1", "1.25ms-D", "gpunet_d1", 456, 1, 1.0f },
    { "gpunet-d2", "2.25ms-D", "gpunet_d2", 528, 1, 1.0f },
  };
  const char *const *names = gpunet_arch_builtin_names ();
  int n = 0;
  while (names && names[n])
    n++;
  CHECK (n == 7);
  for (int i = 0; i < 7; i++) {
    CHECK (i < n && strcmp (names[i], models[i].name) == 0);
    char upper[32];
    size_t k;
    for (k = 0; models[i].name[k] && k + 1 < sizeof upper; k++)
      upper[k] = (char) (models[i].name[k] >= 'a' && models[i].name[k] <= 'z'
          ? models[i].name[k] - 32 : models[i].name[k]);
    upper[k] = '\0';
    const char *variants[] = { models[i].name, models[i].alias, models[i].timm, upper };
    for (int v = 0; v < 4; v++) {
      gpunet_arch *a = NULL;
      char *err = NULL;
      gpunet_status st = gpunet_arch_load (variants[v], &a, &err);
      CHECK_MSG (st == GPUNET_OK, "%s: %s", variants[v], err ? err : "");
      if (a) {
        CHECK (strcmp (a->name, models[i].name) == 0);
        CHECK (a->resolution == models[i].resolution);
        CHECK (a->distill == models[i].distill);
        CHECK (a->num_classes == 1000);
        CHECK (a->crop_pct == models[i].crop);
        CHECK (a->n_layers > 10);
        CHECK (a->layers[a->n_layers - 1].type == GPUNET_LAYER_TAIL);
      }
      gpunet_arch_free (a);
      free (err);
    }
    gpunet_arch *a = NULL;
    CHECK (gpunet_arch_builtin (models[i].alias, &a, NULL) == GPUNET_OK && a);
    gpunet_arch_free (a);
  }

  /* A few published facts. */
  gpunet_arch *a = NULL;
  if (gpunet_arch_builtin ("gpunet-0", &a, NULL) == GPUNET_OK) {
    CHECK (a->n_layers == 14);
    CHECK (a->layers[0].act == GPUNET_ACT_SWISH);   /* head without "act" */
    CHECK (a->layers[3].type == GPUNET_LAYER_FUSED_IRB && a->layers[3].json_index == 5);
  }
  gpunet_arch_free (a);
  a = NULL;
  if (gpunet_arch_builtin ("gpunet-p0", &a, NULL) == GPUNET_OK)
    CHECK (a->layers[0].act == GPUNET_ACT_RELU);
  gpunet_arch_free (a);
  a = NULL;
  if (gpunet_arch_builtin ("gpunet-d2", &a, NULL) == GPUNET_OK) {
    CHECK (a->layers[0].type == GPUNET_LAYER_HEAD_LARGE);
    CHECK (a->n_layers == 27);
  }
  gpunet_arch_free (a);

  /* Unknown names. */
  a = NULL;
  char *err = NULL;
  CHECK (gpunet_arch_builtin ("tiny-a", &a, &err) == GPUNET_ERR_ARCH && !a);
  CHECK_CONTAINS (err, "gpunet-0, gpunet-1");
  free (err);
  err = NULL;
  CHECK (gpunet_arch_load ("gpunet-9", &a, &err) == GPUNET_ERR_ARCH && !a);
  CHECK_CONTAINS (err, "'gpunet-9' is neither a built-in model (gpunet-0");
  CHECK_CONTAINS (err, "nor a readable JSON file: No such file");
  free (err);
  err = NULL;
  CHECK (gpunet_arch_load (check_data_dir (), &a, &err) == GPUNET_ERR_IO && !a);
  CHECK_CONTAINS (err, "directory");
  free (err);
  err = NULL;
  CHECK (gpunet_arch_load ("", &a, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  free (err);
}

/* NVIDIA's published configs must equal the built-in table.  They are not in the
 * repository: $GPUNET_REFERENCE_CONFIGS, else ../shared/reference/gpunet-configs beside
 * the source tree.  Returns 77 (skip, with a line saying why) when they are absent, else
 * 0 with the checks counted. */
static int
test_reference_configs (void)
{
  static const char *const files[] = { "0.65ms", "0.85ms", "1.75ms", "0.5ms-D", "0.8ms-D",
    "1.25ms-D", "2.25ms-D" };
  static const char *const builtin[] = { "gpunet-0", "gpunet-1", "gpunet-2", "gpunet-p0",
    "gpunet-p1", "gpunet-d1", "gpunet-d2" };
  char dir[1024], path[1200];
  const char *env = getenv ("GPUNET_REFERENCE_CONFIGS");
  if (env)
    snprintf (dir, sizeof dir, "%s", env);
  else {
#ifdef GPUNET_SOURCE_ROOT
    snprintf (dir, sizeof dir, "%s/../shared/reference/gpunet-configs", GPUNET_SOURCE_ROOT);
#else
    printf ("SKIP: GPUNET_REFERENCE_CONFIGS is not set: NVIDIA's configs were not compared "
        "with the built-in table\n");
    return 77;
#endif
  }
  snprintf (path, sizeof path, "%s/%s.json", dir, files[0]);
  FILE *probe = fopen (path, "rb");
  if (!probe) {
    printf ("SKIP: NVIDIA's configs are not in %s (set GPUNET_REFERENCE_CONFIGS): they were "
        "not compared with the built-in table\n", dir);
    return 77;
  }
  fclose (probe);

  for (int m = 0; m < 7; m++) {
    snprintf (path, sizeof path, "%s/%s.json", dir, files[m]);
    gpunet_arch *p = NULL, *b = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_arch_load (path, &p, &err);
    CHECK_MSG (st == GPUNET_OK, "%s: %s", path, err ? err : "");
    free (err);
    CHECK (gpunet_arch_builtin (builtin[m], &b, NULL) == GPUNET_OK);
    if (!p || !b) {
      gpunet_arch_free (p);
      gpunet_arch_free (b);
      continue;
    }
    CHECK (strcmp (p->name, files[m]) == 0);
    CHECK (p->crop_pct == 1.0f);
    CHECK_MSG (p->resolution == b->resolution && p->distill == b->distill &&
        p->num_classes == b->num_classes && p->n_layers == b->n_layers, "%s", files[m]);
    for (int i = 0; i < p->n_layers && i < b->n_layers; i++) {
      const gpunet_layer_spec *x = &p->layers[i], *y = &b->layers[i];
      CHECK_MSG (x->type == y->type && x->json_index == y->json_index && x->in_ch == y->in_ch &&
          x->out_ch == y->out_ch && x->kernel == y->kernel && x->stride == y->stride &&
          x->expansion == y->expansion && x->groups == y->groups && x->stage == y->stage &&
          x->act == y->act && x->use_se == y->use_se && x->num_classes == y->num_classes,
          "%s layer %d differs from %s", files[m], x->json_index, builtin[m]);
    }
    gpunet_arch_free (p);
    gpunet_arch_free (b);
  }
  return 0;
}

/* ---- broken configs ---------------------------------------------------------------- */

#define DATA(res, d) "{\"layer_type\": \"data\", \"img_resolution\": " #res ", \"distill\": " #d "}"
#define HEAD "{\"layer_type\": \"head\", \"num_in_channels\": 3, \"num_out_channels\": 8}"
#define CONV(i, o, k, s) "{\"layer_type\": \"conv\", \"num_in_channels\": " #i ", " \
  "\"num_out_channels\": " #o ", \"kernel_size\": " #k ", \"stride\": " #s ", \"act\": \"relu\", " \
  "\"stage\": 1}"
#define IRB_E(i, o, e) "{\"layer_type\": \"irb\", \"num_in_channels\": " #i ", " \
  "\"num_out_channels\": " #o ", \"kernel_size\": 3, \"stride\": 2, \"expansion\": " #e ", " \
  "\"use_se\": false, \"act\": \"swish\", \"stage\": 2}"
#define FIRB_S2 "{\"layer_type\": \"fused_irb\", \"num_in_channels\": 8, \"num_out_channels\": 8, " \
  "\"kernel_size\": 3, \"stride\": 2, \"expansion\": 2, \"use_se\": true, \"act\": \"relu\", " \
  "\"stage\": 2}"
#define TAIL(i) "{\"layer_type\": \"tail\", \"num_in_channels\": " #i ", \"num_out_channels\": 32, " \
  "\"num_classes\": 10}"
#define DHEAD "{\"layer_type\": \"head\", \"num_in_channels\": 3, \"num_out_channels\": 8}"
#define DIRB(i, o, e, g) "{\"layer_type\": \"irb\", \"num_in_channels\": " #i ", " \
  "\"num_out_channels\": " #o ", \"kernel_size\": 3, \"stride\": 1, \"expansion\": " #e ", " \
  "\"groups\": " #g ", \"stage\": 1}"

/* A valid non-distilled net with one replaceable middle layer: data, head, conv, X, tail. */
#define ND(x) "[" DATA (64, false) ", " HEAD ", " CONV (8, 8, 3, 1) ", " x ", " TAIL (16) "]"

typedef struct {
  const char *json;
  gpunet_status status;
  const char *needle;
  const char *needle2;
} bad_case;

static const bad_case bad_cases[] = {
  /* JSON syntax */
  { "[" DATA (64, false) ",]", GPUNET_ERR_FORMAT, "bad.json: line 1, column", "expected a JSON value" },
  { "[" DATA (64, false) ", " HEAD "] x", GPUNET_ERR_FORMAT, "end of input after", NULL },
  { "[" DATA (64, false) ", {\"n\": 1e400}]", GPUNET_ERR_FORMAT, "too large", NULL },
  { "[" DATA (64, false) ", {\"layer_type\": \"he\\u0000ad\"}]", GPUNET_ERR_FORMAT, "NUL", NULL },
  { "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    GPUNET_ERR_FORMAT, "64 levels", NULL },
  /* top level and data entry */
  { "{\"layer_type\": \"data\"}", GPUNET_ERR_ARCH, "top level must be a JSON array", "an object" },
  { "[]", GPUNET_ERR_ARCH, "layer list is empty", NULL },
  { "[" HEAD ", " TAIL (8) "]", GPUNET_ERR_ARCH, "layer 1 is not the \"data\" entry", NULL },
  { "[{\"layer_type\": \"data\", \"img_resolution\": 64}, " HEAD ", " TAIL (8) "]",
    GPUNET_ERR_ARCH, "layer 1 (data): field \"distill\" is missing", NULL },
  { "[{\"layer_type\": \"data\", \"img_resolution\": 64, \"distill\": \"false\"}, " HEAD ", " TAIL (8) "]",
    GPUNET_ERR_ARCH, "field \"distill\" must be true or false", NULL },
  { "[" DATA (8, false) ", " HEAD ", " TAIL (8) "]", GPUNET_ERR_ARCH, "img_resolution is 8", NULL },
  { "[" DATA (64, false) "]", GPUNET_ERR_ARCH, "no layers after \"data\"", NULL },
  { "[" DATA (64, false) ", " DATA (64, false) ", " HEAD ", " TAIL (8) "]", GPUNET_ERR_ARCH,
    "layer 2 (data): only the first entry", NULL },
  /* layer objects and types */
  { "[" DATA (64, false) ", 5]", GPUNET_ERR_ARCH, "layer 2 (line 1) must be a JSON object", NULL },
  { ND ("{\"num_in_channels\": 8}"), GPUNET_ERR_ARCH, "layer 4 (line 1): field \"layer_type\" is missing", NULL },
  { ND ("{\"layer_type\": \"attention\", \"num_in_channels\": 8}"), GPUNET_ERR_ARCH,
    "layer 4 (line 1): unknown layer_type \"attention\"", "accept head, conv" },
  { "[" DATA (64, false) ", {\"layer_type\": \"head_large\", \"num_in_channels\": 3, "
    "\"num_out_channels\": 8}, " TAIL (8) "]", GPUNET_ERR_ARCH,
    "layer 2 (head_large): layer_type \"head_large\" exists only in distilled", NULL },
  { "[" DATA (64, true) ", " DHEAD ", " CONV (8, 8, 3, 1) ", " TAIL (8) "]", GPUNET_ERR_ARCH,
    "layer 3 (conv): layer_type \"conv\" exists only in non-distilled", NULL },
  /* field presence and types */
  { ND ("{\"layer_type\": \"irb\", \"num_in_channels\": 8, \"num_out_channels\": 16, "
        "\"kernel_size\": 3, \"stride\": 2, \"expansion\": 2, \"act\": \"relu\", \"stage\": 2}"),
    GPUNET_ERR_ARCH, "layer 4 (irb): field \"use_se\" is missing; irb layers need",
    "expansion, use_se, act, stage" },
  { ND ("{\"layer_type\": \"irb\", \"num_in_channels\": 8, \"num_out_channels\": 16, "
        "\"kernel_size\": 3, \"stride\": 2, \"use_se\": false, \"act\": \"relu\", \"stage\": 2}"),
    GPUNET_ERR_ARCH, "layer 4 (irb): field \"expansion\" is missing", NULL },
  { ND ("{\"layer_type\": \"irb\", \"num_in_channels\": 8, \"num_out_channels\": 16, "
        "\"kernel_size\": 3, \"stride\": 2, \"expansion\": 2, \"use_se\": \"yes\", \"act\": \"relu\", \"stage\": 2}"),
    GPUNET_ERR_ARCH, "field \"use_se\" must be true or false", NULL },
  { ND ("{\"layer_type\": \"conv\", \"num_in_channels\": 8, \"num_out_channels\": 16, "
        "\"kernel_size\": 3, \"stride\": \"2\", \"act\": \"relu\", \"stage\": 2}"),
    GPUNET_ERR_ARCH, "layer 4 (conv): field \"stride\" must be an integer, not the string \"2\"", NULL },
  { ND ("{\"layer_type\": \"conv\", \"num_in_channels\": 8, \"num_out_channels\": 16, "
        "\"kernel_size\": 3, \"stride\": 2, \"stage\": 2}"),
    GPUNET_ERR_ARCH, "layer 4 (conv): field \"act\" is missing", NULL },
  { ND ("{\"layer_type\": \"conv\", \"num_in_channels\": 8, \"num_out_channels\": 16, "
        "\"kernel_size\": 3, \"stride\": 2, \"act\": \"relu\"}"),
    GPUNET_ERR_ARCH, "layer 4 (conv): field \"stage\" is missing", NULL },
  { ND ("{\"layer_type\": \"conv\", \"num_in_channels\": 8, \"num_out_channels\": 16.5, "
        "\"kernel_size\": 3, \"stride\": 2, \"act\": \"relu\", \"stage\": 2}"),
    GPUNET_ERR_ARCH, "field \"num_out_channels\" must be an integer, not 16.5", NULL },
  { ND ("{\"layer_type\": \"conv\", \"num_in_channels\": 8, \"num_out_channels\": 16, "
        "\"kernel_size\": 3, \"stride\": 2, \"act\": \"gelu\", \"stage\": 2}"),
    GPUNET_ERR_ARCH, "layer 4 (conv): field \"act\" is the string \"gelu\"", "\"relu\" or \"swish\"" },
  { "[" DATA (64, true) ", " DHEAD ", {\"layer_type\": \"irb\", \"num_in_channels\": 8, "
    "\"num_out_channels\": 8, \"kernel_size\": 3, \"stride\": 1, \"expansion\": 2, \"stage\": 1}, "
    TAIL (8) "]", GPUNET_ERR_ARCH, "layer 3 (irb): field \"groups\" is missing", "distilled irb" },
  /* ranges */
  { ND (CONV (8, 16, 3, 3)), GPUNET_ERR_ARCH, "layer 4 (conv): stride is 3", "1 or 2" },
  { ND (CONV (8, 16, 4, 1)), GPUNET_ERR_ARCH, "layer 4 (conv): kernel_size is 4", "odd" },
  { ND (CONV (8, 16, 0, 1)), GPUNET_ERR_ARCH, "layer 4 (conv): kernel_size is 0", NULL },
  { ND (CONV (8, -16, 3, 1)), GPUNET_ERR_ARCH, "layer 4 (conv): num_out_channels is -16", NULL },
  { ND (CONV (8, 100000, 3, 1)), GPUNET_ERR_ARCH, "num_out_channels is 100000", NULL },
  { ND (IRB_E (8, 16, 0)), GPUNET_ERR_ARCH, "layer 4 (irb): expansion is 0", NULL },
  { ND (IRB_E (8, 16, 100)), GPUNET_ERR_ARCH, "layer 4 (irb): expansion is 100", NULL },
  { "[" DATA (64, true) ", " DHEAD ", " DIRB (8, 8, 2.5, 1) ", " TAIL (8) "]", GPUNET_ERR_ARCH,
    "layer 3 (irb): expansion is 2.5; distilled", NULL },
  { "[" DATA (64, true) ", " DHEAD ", " DIRB (8, 8, 2, 3) ", " TAIL (8) "]", GPUNET_ERR_ARCH,
    "layer 3 (irb): groups 3 does not divide num_in_channels 8", NULL },
  { "[" DATA (64, true) ", " DHEAD ", " DIRB (8, 6, 2, 4) ", " TAIL (6) "]", GPUNET_ERR_ARCH,
    "layer 3 (irb): groups 4 does not divide num_out_channels 6", NULL },
  { "[" DATA (64, false) ", " HEAD ", {\"layer_type\": \"tail\", \"num_in_channels\": 8, "
    "\"num_out_channels\": 32, \"num_classes\": 0}]", GPUNET_ERR_ARCH,
    "layer 3 (tail): num_classes is 0", NULL },
  /* chaining and order */
  { ND (CONV (12, 16, 3, 1)), GPUNET_ERR_ARCH,
    "layer 4 (conv): num_in_channels is 12 but the previous layer outputs 8 channels", NULL },
  { "[" DATA (64, false) ", {\"layer_type\": \"head\", \"num_in_channels\": 1, "
    "\"num_out_channels\": 8}, " TAIL (8) "]", GPUNET_ERR_ARCH,
    "layer 2 (head): num_in_channels is 1 but the input image has 3", NULL },
  { "[" DATA (64, false) ", " CONV (3, 8, 3, 1) ", " TAIL (8) "]", GPUNET_ERR_ARCH,
    "layer 2 (conv): the first layer after \"data\" must be a head", NULL },
  { "[" DATA (64, false) ", " HEAD ", " CONV (8, 8, 3, 1) "]", GPUNET_ERR_ARCH,
    "the last layer (layer 3, conv) is not a tail", NULL },
  { "[" DATA (64, false) ", " HEAD ", " TAIL (8) ", " CONV (32, 8, 3, 1) "]", GPUNET_ERR_ARCH,
    "layer 4 (conv): it follows the tail (layer 3)", NULL },
  { "[" DATA (64, false) ", " HEAD ", " TAIL (8) ", " TAIL (32) "]", GPUNET_ERR_ARCH,
    "layer 4 (tail): a second tail (layer 3", NULL },
  { "[" DATA (64, true) ", " DHEAD ", " TAIL (8) ", " TAIL (32) "]", GPUNET_ERR_ARCH,
    "layer 4 (tail): a second tail", "\"tail:\"" },
  { "[" DATA (64, true) ", " DHEAD ", " DIRB (8, 8, 2, 1) ", {\"layer_type\": \"head_large\", "
    "\"num_in_channels\": 8, \"num_out_channels\": 8}, " TAIL (8) "]", GPUNET_ERR_ARCH,
    "layer 4 (head_large): a second head (layer 2", "\"head:\"" },
  /* feature map collapsing: 16 -> head 8 -> 3 -> 1 -> fused_irb k3 s2 without padding */
  { "[" DATA (16, false) ", " HEAD ", " FIRB_S2 ", " FIRB_S2 ", " FIRB_S2 ", " TAIL (8) "]",
    GPUNET_ERR_ARCH, "layer 5 (fused_irb): the feature map is only 1x1", "raise img_resolution" },
};

static void
test_bad_configs (void)
{
  int n = (int) (sizeof bad_cases / sizeof bad_cases[0]);
  CHECK (n >= 25);
  for (int i = 0; i < n; i++) {
    const bad_case *c = &bad_cases[i];
    gpunet_arch *a = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_arch_parse (c->json, strlen (c->json), "bad.json", &a, &err);
    CHECK_MSG (st == c->status, "case %d: status %d, expected %d (%s)", i, (int) st,
        (int) c->status, err ? err : "");
    CHECK (a == NULL);
    CHECK_MSG (err && strncmp (err, "bad.json: ", 10) == 0, "case %d: %s", i, err ? err : "(null)");
    CHECK_CONTAINS (err, c->needle);
    if (c->needle2)
      CHECK_CONTAINS (err, c->needle2);
    if (getenv ("GPUNET_TEST_VERBOSE"))
      printf ("case %d: %s\n", i, err ? err : "(null)");
    free (err);
    gpunet_arch_free (a);
  }
}

/* Things NVIDIA's builder accepts must pass too. */
static void
test_good_variants (void)
{
  static const char *const good[] = {
    /* unknown keys (like 2.25ms-D's stray "stage:") and integral floats */
    "[" DATA (64, false) ", {\"layer_type\": \"head\", \"num_in_channels\": 3, "
    "\"num_out_channels\": 8, \"comment\": \"x\"}, {\"layer_type\": \"conv\", "
    "\"num_in_channels\": 8, \"num_out_channels\": 8.0, \"kernel_size\": 3.0, \"stride\": 1, "
    "\"act\": \"swish\", \"stage\": 1}, {\"layer_type\": \"tail\", \"num_in_channels\": 8, "
    "\"num_out_channels\": 16, \"num_classes\": 5, \"stage:\": 9}]",
    /* TABs, CRLF, an empty first line */
    "\r\n[\t" DATA (32, true) ",\r\n\t" DHEAD ",\t" DIRB (8, 8, 2, 2) ", " TAIL (8) "]\n",
    /* a resolution-16 net that stays >= 1x1 with padded layers */
    "[" DATA (16, false) ", " HEAD ", " IRB_E (8, 16, 2) ", {\"layer_type\": \"irb\", "
    "\"num_in_channels\": 16, \"num_out_channels\": 16, \"kernel_size\": 5, \"stride\": 2, "
    "\"expansion\": 1, \"use_se\": true, \"act\": \"relu\", \"stage\": 3}, " TAIL (16) "]",
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    gpunet_arch *a = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_arch_parse (good[i], strlen (good[i]), "dir/good.json", &a, &err);
    CHECK_MSG (st == GPUNET_OK, "good %d: %s", (int) i, err ? err : "");
    if (a)
      CHECK (strcmp (a->name, "good") == 0 && a->crop_pct == 1.0f);
    gpunet_arch_free (a);
    free (err);
  }
  gpunet_arch *a = NULL;
  if (gpunet_arch_parse (good[0], strlen (good[0]), NULL, &a, NULL) == GPUNET_OK) {
    CHECK (a->layers[1].out_ch == 8 && a->layers[1].kernel == 3);
    CHECK (a->layers[2].stage == -1 && a->num_classes == 5);
  }
  gpunet_arch_free (a);
}

static void
test_labels (void)
{
  CHECK (gpunet_imagenet_label (0) && strcmp (gpunet_imagenet_label (0), "tench") == 0);
  CHECK (gpunet_imagenet_label (999) && strcmp (gpunet_imagenet_label (999), "toilet tissue") == 0);
  CHECK (gpunet_imagenet_label (-1) == NULL);
  CHECK (gpunet_imagenet_label (1000) == NULL);
  for (int i = 0; i < 1000; i++)
    CHECK (gpunet_imagenet_label (i) && gpunet_imagenet_label (i)[0] != '\0');
}

/* With --reference-configs: only the comparison with NVIDIA's configs, exit 77 (skipped)
 * when they are absent, or a failure when GPUNET_REQUIRE_REFERENCE_CONFIGS=1 says they
 * must be there (CI with the configs).  Without: everything else. */
int
main (int argc, char **argv)
{
  if (argc > 1 && !strcmp (argv[1], "--reference-configs")) {
    const int before = check_passed_;
    if (test_reference_configs () == 77) {
      const char *req = getenv ("GPUNET_REQUIRE_REFERENCE_CONFIGS");
      if (!(req && !strcmp (req, "1")))
        return 77;
      CHECK_MSG (0, "GPUNET_REQUIRE_REFERENCE_CONFIGS=1 but the configs are missing");
    }
    CHECK_MSG (check_failed_ || check_passed_ > before, "no reference-config check ran");
    return check_report ();
  }
  test_fixtures ();
  test_builtins ();
  test_bad_configs ();
  test_good_variants ();
  test_labels ();
  return check_report ();
}
