/* session.c: gpunet_session: picks a backend (auto: CUDA when built and a device
 * works, else CPU), lets it plan the model's graph for a batch size, and runs it. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "error.h"
#include "model_private.h"
#include "session_private.h"
#include "../kernels/registry.h"
#include "../kernels/cpu_module.h"   /* gpunet_cpu_module_request_wait */

void
gpunet_session_params_init (gpunet_session_params *p)
{
  memset (p, 0, sizeof *p);
  p->backend = GPUNET_BACKEND_AUTO;
  p->precision = GPUNET_PRECISION_AUTO;
  p->max_batch = 1;
  p->cpu = (gpunet_cpu_options) { 0 };   /* every choice GPUNET_CPU_AUTO, block by the ISA */
}

/* One key of gpunet_cpu_options_parse: its field and the values it takes. */
typedef struct {
  const char *key;
  size_t offset;             /* of an int-sized field of gpunet_cpu_options */
  const char *names[5];      /* the values, NULL-terminated */
  int values[5];
  const char *valid;         /* the values for the error sentence */
} cpu_key;

static const cpu_key cpu_keys[] = {
  { "winograd", offsetof (gpunet_cpu_options, winograd), { "auto", "own", "onednn", "off" },
    { GPUNET_CPU_AUTO, GPUNET_CPU_OWN, GPUNET_CPU_ONEDNN, GPUNET_CPU_OFF }, "auto, own, onednn or off" },
  { "pw", offsetof (gpunet_cpu_options, pw), { "auto", "own", "onednn" },
    { GPUNET_CPU_AUTO, GPUNET_CPU_OWN, GPUNET_CPU_ONEDNN }, "auto, own or onednn" },
  { "strassen", offsetof (gpunet_cpu_options, strassen), { "auto", "own", "off" },
    { GPUNET_CPU_AUTO, GPUNET_CPU_OWN, GPUNET_CPU_OFF }, "auto, own or off" },
  { "block", offsetof (gpunet_cpu_options, block), { "0", "auto", "8", "16" },
    { 0, 0, 8, 16 }, "auto (or 0), 8 or 16" },
  { "simd", offsetof (gpunet_cpu_options, simd), { "auto", "avx2", "portable" },
    { GPUNET_CPU_SIMD_AUTO, GPUNET_CPU_SIMD_AVX2, GPUNET_CPU_SIMD_PORTABLE },
    "auto, avx2 or portable" },
  { "wait", offsetof (gpunet_cpu_options, wait), { "auto", "spin", "passive" },
    { GPUNET_CPU_WAIT_AUTO, GPUNET_CPU_WAIT_SPIN, GPUNET_CPU_WAIT_PASSIVE },
    "auto, spin or passive" },
  { "bf16", offsetof (gpunet_cpu_options, no_bf16), { "auto", "off" }, { 0, 1 },
    "auto (what the CPU has) or off (act as if it lacked AVX-512 BF16 and AMX)" },
  { "bf16act", offsetof (gpunet_cpu_options, bf16_f32_act), { "auto", "f32" }, { 0, 1 },
    "auto (bf16 between the layers that take it) or f32 (f32 between all layers)" },
  { "int8_min", offsetof (gpunet_cpu_options, int8_min_macs), { "auto", "all", "128", "256" },
    { 0, 1, 128, 256 }, "auto (64 MACs per output value), all, 128 or 256" },
  { "int8rest", offsetof (gpunet_cpu_options, int8_rest_f32), { "auto", "f32" }, { 0, 1 },
    "auto (the layers int8 does not take in bf16 where the CPU has it) or f32" },
  { "int8layout", offsetof (gpunet_cpu_options, int8_layout_onednn), { "auto", "onednn" },
    { 0, 1 }, "auto (ours) or onednn" },
  { "int8fuse", offsetof (gpunet_cpu_options, int8_fuse_off), { "auto", "off" }, { 0, 1 },
    "auto or off" },
  { "xdw", offsetof (gpunet_cpu_options, xdw), { "auto", "off", "all" }, { 0, 1, 2 },
    "auto, off or all" },
  { "bf16pw", offsetof (gpunet_cpu_options, bf16pw), { "auto", "own", "onednn" },
    { GPUNET_CPU_AUTO, GPUNET_CPU_OWN, GPUNET_CPU_ONEDNN }, "auto, own or onednn" },
};

gpunet_status
gpunet_cpu_options_parse (gpunet_cpu_options *options, const char *spec, const char *source,
    char **error_text)
{
  if (!options)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_cpu_options_parse needs options to fill");
  if (!source)
    source = "cpu options";
  gpunet_cpu_options o = *options;
  const size_t n_keys = sizeof cpu_keys / sizeof cpu_keys[0];
  for (const char *item = spec; item && *item;) {
    const char *end = strchr (item, ',');
    const size_t len = end ? (size_t) (end - item) : strlen (item);
    const char *eq = memchr (item, '=', len);
    const size_t klen = eq ? (size_t) (eq - item) : len;
    const cpu_key *k = NULL;
    for (size_t i = 0; i < n_keys && !k; i++)
      if (strlen (cpu_keys[i].key) == klen && !strncmp (cpu_keys[i].key, item, klen))
        k = &cpu_keys[i];
    if (len == 0 || !k || !eq)
      return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "%s: '%.*s' is not a "
          "key=value pair with a known key; the keys are winograd, pw, strassen, block, simd, wait, bf16, bf16act, int8_min, int8rest, int8layout, int8fuse, xdw and bf16pw "
          "(for example %s=winograd=off,strassen=off)", source, (int) len, item,
          source);
    const char *val = eq + 1;
    const size_t vlen = len - klen - 1;
    int found = 0;
    for (int v = 0; k->names[v] && !found; v++)
      if (strlen (k->names[v]) == vlen && !strncmp (k->names[v], val, vlen)) {
        *(int *) ((char *) &o + k->offset) = k->values[v];
        found = 1;
      }
    if (!found)
      return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "%s: '%.*s' is not a "
          "value of %s; use %s", source, (int) vlen, val, k->key, k->valid);
    item = end ? end + 1 : NULL;
  }
  *options = o;
  return GPUNET_OK;
}

/* The pairs GPUNET_CUDA takes (docs/cuda.md, Options): each sets one field. */
static const struct {
  const char *pair;
  size_t field;   /* offsetof in gpunet_cuda_options */
  int value;
} cuda_pairs[] = {
  { "graphs=on", offsetof (gpunet_cuda_options, graphs), GPUNET_CUDA_GRAPHS_ON },
  { "graphs=off", offsetof (gpunet_cuda_options, graphs), GPUNET_CUDA_GRAPHS_OFF },
  { "dwconv=auto", offsetof (gpunet_cuda_options, dwconv), GPUNET_CUDA_DW_AUTO },
  { "dwconv=direct", offsetof (gpunet_cuda_options, dwconv), GPUNET_CUDA_DW_DIRECT },
  { "nhwcpad=off", offsetof (gpunet_cuda_options, nhwc_pad), GPUNET_CUDA_NHWC_PAD_OFF },
  { "nhwcpad=on", offsetof (gpunet_cuda_options, nhwc_pad), GPUNET_CUDA_NHWC_PAD_ON },
  { "nhwcstrip=64", offsetof (gpunet_cuda_options, nhwc_strip), GPUNET_CUDA_NHWC_STRIP_64 },
  { "nhwcstrip=fill", offsetof (gpunet_cuda_options, nhwc_strip), GPUNET_CUDA_NHWC_STRIP_FILL },
  { "pdl=off", offsetof (gpunet_cuda_options, pdl), GPUNET_CUDA_PDL_OFF },
  { "pdl=on", offsetof (gpunet_cuda_options, pdl), GPUNET_CUDA_PDL_ON },
  { "nhwctune=off", offsetof (gpunet_cuda_options, nhwc_tune), GPUNET_CUDA_NHWC_TUNE_OFF },
  { "nhwctune=on", offsetof (gpunet_cuda_options, nhwc_tune), GPUNET_CUDA_NHWC_TUNE_ON },
};

gpunet_status
gpunet_cuda_options_parse (gpunet_cuda_options *options, const char *spec, const char *source,
    char **error_text)
{
  if (!options)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_cuda_options_parse needs options to fill");
  if (!source)
    source = "CUDA options";
  const size_t n_pairs = sizeof cuda_pairs / sizeof cuda_pairs[0];
  gpunet_cuda_options o = *options;
  for (const char *item = spec; item && *item;) {
    const char *end = strchr (item, ',');
    const size_t len = end ? (size_t) (end - item) : strlen (item);
    size_t i = 0;
    while (i < n_pairs && !(strlen (cuda_pairs[i].pair) == len
        && !strncmp (cuda_pairs[i].pair, item, len)))
      i++;
    if (i == n_pairs) {
      char valid[256] = "";
      for (size_t j = 0; j < n_pairs; j++) {
        strcat (valid, j ? ", " : "");
        strcat (valid, cuda_pairs[j].pair);
      }
      return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "%s: '%.*s' is not one of "
          "%s (for example %s%sgraphs=off)", source, len > 64 ? 64 : (int) len, item, valid,
          source, source[0] == '-' ? " " : "=");
    }
    *(int *) ((char *) &o + cuda_pairs[i].field) = cuda_pairs[i].value;
    item = end ? end + 1 : NULL;
  }
  *options = o;
  return GPUNET_OK;
}

void
gpunet_plan_params_from_session (const gpunet_session_params *params, gpunet_plan_params *out)
{
  memset (out, 0, sizeof *out);
  out->precision = params->precision;
  out->max_batch = params->max_batch;
  out->n_threads = params->n_threads;
  out->device = params->device;
  out->cuda_fused = params->cuda_fused;
  out->cuda_context = params->cuda_context;
  out->cpu = params->cpu;
  out->cuda = params->cuda;
}

gpunet_status
gpunet_backend_plan (const gpunet_backend *be, const gpunet_graph *graph,
    const gpunet_session_params *params, void **state, char **error_text)
{
  gpunet_plan_params pp;
  gpunet_plan_params_from_session (params, &pp);
  gpunet_int8_input *q = NULL;
  if (params->precision == GPUNET_PRECISION_INT8) {
    /* the scales are read and checked against this graph here; a backend reads them at
     * plan time only */
    gpunet_status st = gpunet_int8_inputs (graph, params->int8_scales, &q, error_text);
    if (st != GPUNET_OK)
      return st;
    pp.int8 = q;
  }
  gpunet_status st = be->plan (graph, &pp, state, error_text);
  free (q);
  return st;
}

static gpunet_status
try_backend (gpunet_session *s, const gpunet_backend *be, char **error_text)
{
  gpunet_status st = gpunet_backend_plan (be, gpunet_model_graph (s->model), &s->params,
      &s->state, error_text);
  if (st == GPUNET_OK)
    s->backend = be;
  return st;
}

/* gpunet_session_new; `forced` (tests: a fake backend) replaces the registry's choice. */
static gpunet_status
session_new (gpunet_model *model, const gpunet_session_params *params,
    const gpunet_backend *forced, gpunet_session **out, char **error_text)
{
  if (!model || !out)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_session_new needs a model and an output pointer");
  *out = NULL;
  gpunet_session_params p;
  if (params)
    p = *params;
  else
    gpunet_session_params_init (&p);
  if (p.max_batch < 1 || p.max_batch > 4096)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch size %d is out of range (1 to 4096)", p.max_batch);
  if (p.n_threads < 0 || p.n_threads > GPUNET_MAX_THREADS)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "n_threads %d is out of range (0 means all cores, at most %d)", p.n_threads,
        GPUNET_MAX_THREADS);
  /* the one place the library reads GPUNET_CPU */
  gpunet_status cst = gpunet_cpu_options_parse (&p.cpu, getenv ("GPUNET_CPU"),
      "environment variable GPUNET_CPU", error_text);
  if (cst != GPUNET_OK)
    return cst;
  /* and GPUNET_CUDA, the one place the library reads it */
  cst = gpunet_cuda_options_parse (&p.cuda, getenv ("GPUNET_CUDA"),
      "environment variable GPUNET_CUDA", error_text);
  if (cst != GPUNET_OK)
    return cst;

  /* bf16 is the fast CPU backend's: auto means it, and the f32 oracle refuses it */
  if (p.precision == GPUNET_PRECISION_BF16 && p.backend == GPUNET_BACKEND_AUTO)
    p.backend = GPUNET_BACKEND_CPU;
  if (p.precision == GPUNET_PRECISION_BF16 && p.backend == GPUNET_BACKEND_CPU_REF)
    return gpunet_fail (error_text, GPUNET_ERR_UNSUPPORTED, "precision=bf16 runs on the fast "
        "CPU backend (backend=cpu); cpu-ref is the exact f32 reference");

  /* int8 likewise, and it needs its scales file before anything starts */
  if (p.precision == GPUNET_PRECISION_INT8 && p.backend == GPUNET_BACKEND_AUTO)
    p.backend = GPUNET_BACKEND_CPU;
  if (p.precision == GPUNET_PRECISION_INT8 && p.backend != GPUNET_BACKEND_CPU && !forced)
    return gpunet_fail (error_text, GPUNET_ERR_UNSUPPORTED, "precision=int8 runs on the fast "
        "CPU backend (backend=cpu); %s", p.backend == GPUNET_BACKEND_CPU_REF
        ? "cpu-ref is the exact f32 reference" : "the CUDA backend runs fp32 or fp16");
  if (p.precision != GPUNET_PRECISION_INT8 && p.int8_scales && *p.int8_scales)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "an int8 scales file is "
        "given (int8_scales, the element's int8-scales, the tools' --scales), but the "
        "precision is not int8: the file is read only with precision=int8; set it, or "
        "leave the scales file out");
  if (p.precision == GPUNET_PRECISION_INT8 && (!p.int8_scales || !*p.int8_scales))
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "precision=int8 needs an "
        "int8 scales file (the element's int8-scales property, the tools' --scales FILE); "
        "make one for this model with gpunet-convert --calibrate DIR");

  gpunet_session *s = calloc (1, sizeof *s);
  if (!s)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory creating a session");
  s->model = gpunet_model_ref (model);
  s->params = p;

  /* auto: CUDA, else (keeping the reason) the fast CPU backend; any other kind is
   * the registry's backend of that kind or the sentence saying why there is none */
  gpunet_status st;
  gpunet_cpu_module_request_wait (p.cpu.wait);   /* before the CPU module first loads */
  const gpunet_backend *be = forced ? forced : gpunet_backend_find (
      p.backend == GPUNET_BACKEND_AUTO ? GPUNET_BACKEND_CUDA : p.backend, error_text);
  if (be)
    st = try_backend (s, be, error_text);
  else
    st = p.backend == GPUNET_BACKEND_CUDA || p.backend == GPUNET_BACKEND_AUTO
        ? GPUNET_ERR_BACKEND_UNAVAILABLE : GPUNET_ERR_INVALID_ARGUMENT;
  if (!forced && p.backend == GPUNET_BACKEND_AUTO && st == GPUNET_ERR_BACKEND_UNAVAILABLE) {
    /* keep the reason for callers that want to log it, then fall back */
    free (s->fallback_reason);
    s->fallback_reason = error_text && *error_text ? strdup (*error_text) : NULL;
    st = try_backend (s, gpunet_backend_find (GPUNET_BACKEND_CPU, NULL), error_text);
    if (st == GPUNET_OK && error_text) {
      free (*error_text);
      *error_text = NULL;
    }
  }
  s->params.int8_scales = NULL;   /* read by the backend's planning, not kept */
  if (st != GPUNET_OK) {
    gpunet_session_free (s);
    return st;
  }
  s->logits = malloc (sizeof (float) * (size_t) p.max_batch * (size_t) gpunet_model_num_classes (model));
  s->input = malloc (sizeof (float) * (size_t) p.max_batch * 3 * (size_t) gpunet_model_resolution (model)
      * (size_t) gpunet_model_resolution (model));
  s->n_plans = gpunet_backend_call_geometries (p.max_batch);
  s->plans = calloc ((size_t) s->n_plans, sizeof *s->plans);
  s->plan_used = calloc ((size_t) s->n_plans, sizeof *s->plan_used);
  if (!s->logits || !s->input || !s->plans || !s->plan_used) {
    gpunet_session_free (s);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory creating a session");
  }
  *out = s;
  return GPUNET_OK;
}

gpunet_status
gpunet_session_new (gpunet_model *model, const gpunet_session_params *params,
    gpunet_session **out, char **error_text)
{
  return session_new (model, params, NULL, out, error_text);
}

gpunet_status
gpunet_session_new_on (gpunet_model *model, const gpunet_session_params *params,
    const gpunet_backend *backend, gpunet_session **out, char **error_text)
{
  if (!backend)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_session_new_on needs a backend");
  return session_new (model, params, backend, out, error_text);
}

void
gpunet_session_free (gpunet_session *s)
{
  if (!s)
    return;
  if (s->backend && s->state)
    s->backend->destroy (s->state);
  gpunet_model_unref (s->model);
  free (s->fallback_reason);
  for (int i = 0; s->plans && i < s->n_plans; i++)
    gpunet_preprocess_plan_clear (&s->plans[i]);
  free (s->plans);
  free (s->plan_used);
  free (s->logits);
  free (s->input);
  free (s);
}

const char *
gpunet_cpu_wait_note (int *is_warning)
{
  return gpunet_cpu_module_wait_note (is_warning);
}

const char *
gpunet_session_backend_name (const gpunet_session *s)
{
  return s->backend->name;
}

const char *
gpunet_session_fallback_reason (const gpunet_session *s)
{
  return s->fallback_reason;
}

gpunet_status
gpunet_session_forward_traced (gpunet_session *s, const float *input, int n, float *logits,
    gpunet_trace_func trace, void *user, char **error_text)
{
  if (!s || !input || !logits)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_session_forward needs a session, an input and an output");
  if (n < 1 || n > s->params.max_batch)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch of %d images, but the session was created for 1 to %d", n, s->params.max_batch);
  return s->backend->forward (s->state, input, n, logits, trace, user, error_text);
}

gpunet_status
gpunet_session_forward (gpunet_session *s, const float *input, int n, float *logits,
    char **error_text)
{
  return gpunet_session_forward_traced (s, input, n, logits, NULL, NULL, error_text);
}
