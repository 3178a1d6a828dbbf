/* backend_cuda.cu: the CUDA backend table exported by libgpunet-cuda.so.  plan() checks
 * the driver and device, creates the stream and cuDNN handle, uploads all weights, places
 * activations with the engine's memplan in device slots and plans every layer; forward()
 * copies the host input through pinned memory, enqueues the layers, returns the logits;
 * classify_device() preprocesses device frames in place of the copy and returns top-k. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "cuda_module.h"
extern "C" {
#include "memplan.h"
}

typedef struct {
  const gpunet_graph *g;
  int max_batch, cur_n;
  gpunet_cuda_ctx ctx;
  gpunet_memplan plan;
  float **slot;              /* device memory per memplan slot */
  float *d_input;            /* max_batch x 3 x R x R */
  float *h_input, *h_logits; /* pinned staging */
  float *arena;              /* all weights */
  gpunet_cuda_layer *layers; /* one per op */
  float *h_trace;            /* pinned, allocated on the first traced forward */
  size_t trace_floats;
  gpunet_cuda_pre_tables pre;        /* device tap tables of the last frame size */
  gpunet_class_score *d_topk, *h_topk; /* max_batch x classes results (device, pinned) */
} cuda_state;

static size_t
tensor_floats (const gpunet_graph *g, int t, int n)
{
  const gpunet_tensor_desc *d = &g->tensors[t];
  return (size_t) n * (size_t) d->c * (size_t) d->h * (size_t) d->w;
}

static void
cuda_destroy (void *state)
{
  cuda_state *s = (cuda_state *) state;
  if (!s)
    return;
  if (s->ctx.stream)
    cudaStreamSynchronize (s->ctx.stream);
  if (s->layers)
    for (int i = 0; i < s->g->n_ops; i++)
      gpunet_cuda_layer_clear (&s->layers[i]);
  free (s->layers);
  if (s->slot)
    for (int i = 0; i < s->plan.n_slots; i++)
      if (s->slot[i])
        cudaFree (s->slot[i]);
  free (s->slot);
  if (s->d_input)
    cudaFree (s->d_input);
  if (s->arena)
    cudaFree (s->arena);
  if (s->h_input)
    cudaFreeHost (s->h_input);
  if (s->h_logits)
    cudaFreeHost (s->h_logits);
  if (s->h_trace)
    cudaFreeHost (s->h_trace);
  gpunet_cuda_pre_tables_clear (&s->pre);
  if (s->d_topk)
    cudaFree (s->d_topk);
  if (s->h_topk)
    cudaFreeHost (s->h_topk);
  gpunet_memplan_clear (&s->plan);
  gpunet_cuda_ctx_clear (&s->ctx);
  free (s);
}

static float *
device_tensor (cuda_state *s, int t)
{
  return t == s->g->input ? s->d_input : s->slot[s->plan.tensor_slot[t]];
}

/* Everything plan() does after the context exists. */
static gpunet_status
plan_buffers (cuda_state *s, char **error_text)
{
  const gpunet_graph *g = s->g;
  const int nb = s->max_batch;
  if (gpunet_memplan_build (&s->plan, g, nb, 0) != 0)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning activations");
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    if (op->out == g->input || (op->in != g->input && s->plan.tensor_slot[op->in] < 0)
        || (op->residual >= 0 && op->residual != g->input && s->plan.tensor_slot[op->residual] < 0))
      return gpunet_cuda_fail (error_text, GPUNET_ERR_UNSUPPORTED,
          "op %d reads a tensor no earlier op writes (or writes the input)", i);
  }
  s->slot = (float **) calloc ((size_t) s->plan.n_slots + 1, sizeof (float *));
  s->layers = (gpunet_cuda_layer *) calloc ((size_t) g->n_ops + 1, sizeof *s->layers);
  if (!s->slot || !s->layers)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning the CUDA backend");
  for (int i = 0; i < s->plan.n_slots; i++)
    GPUNET_CU_TRY (cudaMalloc ((void **) &s->slot[i], s->plan.slot_floats[i] * sizeof (float) + 256),
        error_text, "cudaMalloc (activation slot %d, %zu floats)", i, s->plan.slot_floats[i]);
  const size_t in_floats = tensor_floats (g, g->input, nb), out_floats = tensor_floats (g, g->output, nb);
  GPUNET_CU_TRY (cudaMalloc ((void **) &s->d_input, in_floats * sizeof (float)), error_text,
      "cudaMalloc (input, %zu floats)", in_floats);
  GPUNET_CU_TRY (cudaHostAlloc ((void **) &s->h_input, in_floats * sizeof (float), cudaHostAllocDefault),
      error_text, "cudaHostAlloc (pinned input staging)");
  GPUNET_CU_TRY (cudaHostAlloc ((void **) &s->h_logits, out_floats * sizeof (float), cudaHostAllocDefault),
      error_text, "cudaHostAlloc (pinned logits staging)");
  /* top-k results: at most every class of every image */
  GPUNET_CU_TRY (cudaMalloc ((void **) &s->d_topk, out_floats * sizeof (gpunet_class_score)),
      error_text, "cudaMalloc (top-k results, %zu entries)", out_floats);
  GPUNET_CU_TRY (cudaHostAlloc ((void **) &s->h_topk, out_floats * sizeof (gpunet_class_score),
      cudaHostAllocDefault), error_text, "cudaHostAlloc (pinned top-k results)");

  size_t weight_floats = 0, scratch = 0;
  for (int i = 0; i < g->n_ops; i++) {
    weight_floats += gpunet_cuda_layer_weight_floats (&g->ops[i]);
    if (g->ops[i].kind == GPUNET_OP_SE) {
      size_t need = (size_t) nb * (2 * (size_t) g->ops[i].p.se.c + (size_t) g->ops[i].p.se.rd);
      if (need > scratch)
        scratch = need;
    }
  }
  GPUNET_CU_TRY (cudaMalloc ((void **) &s->arena, (weight_floats + 64) * sizeof (float)), error_text,
      "cudaMalloc (weights, %zu floats)", weight_floats);

  /* cuDNN workspace: at most 512 MiB and a quarter of the free memory */
  size_t free_b = 0, total_b = 0;
  GPUNET_CU_TRY (cudaMemGetInfo (&free_b, &total_b), error_text, "cudaMemGetInfo");
  size_t ws_limit = free_b / 4 < ((size_t) 512 << 20) ? free_b / 4 : ((size_t) 512 << 20);
  float *arena = s->arena;
  size_t ws = 0;
  for (int i = 0; i < g->n_ops; i++) {
    gpunet_status st = gpunet_cuda_layer_plan (&s->ctx, &s->layers[i], &g->ops[i], i, &arena, nb,
        ws_limit, error_text);
    if (st != GPUNET_OK)
      return st;
    if (s->layers[i].ws_max > ws)
      ws = s->layers[i].ws_max;
  }
  gpunet_status st = gpunet_cuda_ctx_reserve (&s->ctx, ws, scratch, error_text);
  if (st != GPUNET_OK)
    return st;
  s->cur_n = nb;
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (after uploading weights)");
  return GPUNET_OK;
}

static gpunet_status
cuda_plan (const gpunet_graph *graph, const gpunet_session_params *params, void **state,
    char **error_text)
{
  *state = NULL;
  if (params->precision == GPUNET_PRECISION_FP16)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_UNSUPPORTED,
        "the CUDA backend runs fp32 only in this version (fp16 is not implemented yet); "
        "use precision fp32 or auto");
  if (params->max_batch < 1)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "max_batch %d < 1",
        params->max_batch);
  cuda_state *s = (cuda_state *) calloc (1, sizeof *s);
  if (!s)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning the CUDA backend");
  s->g = graph;
  s->max_batch = params->max_batch;
  gpunet_status st = gpunet_cuda_ctx_init (&s->ctx, params->device, error_text);
  if (st == GPUNET_OK)
    st = plan_buffers (s, error_text);
  if (st != GPUNET_OK) {
    cuda_destroy (s);
    return st;
  }
  *state = s;
  return GPUNET_OK;
}

/* Copies tensor t (n images) to the host and hands it to the trace callback. */
static gpunet_status
trace_tensor (cuda_state *s, int t, int n, gpunet_trace_func trace, void *user, char **error_text)
{
  const gpunet_graph *g = s->g;
  if (!s->h_trace) {
    size_t most = 0;
    for (int i = 0; i < g->n_tensors; i++)
      if (tensor_floats (g, i, s->max_batch) > most)
        most = tensor_floats (g, i, s->max_batch);
    GPUNET_CU_TRY (cudaHostAlloc ((void **) &s->h_trace, most * sizeof (float), cudaHostAllocDefault),
        error_text, "cudaHostAlloc (pinned trace buffer, %zu floats)", most);
    s->trace_floats = most;
  }
  const gpunet_tensor_desc *d = &g->tensors[t];
  GPUNET_CU_TRY (cudaMemcpyAsync (s->h_trace, device_tensor (s, t), tensor_floats (g, t, n) * sizeof (float),
      cudaMemcpyDeviceToHost, s->ctx.stream), error_text, "cudaMemcpyAsync (trace of block %d)", d->block);
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (trace of block %d)", d->block);
  trace (user, d->block, s->h_trace, n, d->c, d->h, d->w);
  return GPUNET_OK;
}

/* Checks the batch size and re-describes the layers when it changed. */
static gpunet_status
set_batch (cuda_state *s, int n, char **error_text)
{
  const gpunet_graph *g = s->g;
  if (n < 1 || n > s->max_batch)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch of %d images, but the session was planned for 1 to %d", n, s->max_batch);
  if (n != s->cur_n) {
    for (int i = 0; i < g->n_ops; i++) {
      gpunet_status st = gpunet_cuda_layer_set_batch (&s->ctx, &s->layers[i], n, error_text);
      if (st != GPUNET_OK)
        return st;
    }
    s->cur_n = n;
  }
  return GPUNET_OK;
}

/* Enqueues every layer on d_input (n images); trace (may be NULL) gets block outputs. */
static gpunet_status
run_layers (cuda_state *s, int n, gpunet_trace_func trace, void *trace_user, char **error_text)
{
  const gpunet_graph *g = s->g;
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    gpunet_status st = gpunet_cuda_layer_run (&s->ctx, &s->layers[i], device_tensor (s, op->in),
        op->residual >= 0 ? device_tensor (s, op->residual) : NULL, device_tensor (s, op->out), n,
        error_text);
    if (st != GPUNET_OK)
      return st;
    /* same rule as the CPU reference: a block's output once its last op wrote it */
    if (trace && g->tensors[op->out].block >= 0 && (i + 1 == g->n_ops || g->ops[i + 1].out != op->out)) {
      st = trace_tensor (s, op->out, n, trace, trace_user, error_text);
      if (st != GPUNET_OK)
        return st;
    }
  }
  return GPUNET_OK;
}

static gpunet_status
cuda_forward (void *state, const float *input, int n, float *logits, gpunet_trace_func trace,
    void *trace_user, char **error_text)
{
  cuda_state *s = (cuda_state *) state;
  const gpunet_graph *g = s->g;
  gpunet_status st = set_batch (s, n, error_text);
  if (st != GPUNET_OK)
    return st;
  const size_t in_bytes = tensor_floats (g, g->input, n) * sizeof (float);
  memcpy (s->h_input, input, in_bytes);
  GPUNET_CU_TRY (cudaMemcpyAsync (s->d_input, s->h_input, in_bytes, cudaMemcpyHostToDevice,
      s->ctx.stream), error_text, "cudaMemcpyAsync (input to the device)");
  st = run_layers (s, n, trace, trace_user, error_text);
  if (st != GPUNET_OK)
    return st;
  const size_t out_bytes = tensor_floats (g, g->output, n) * sizeof (float);
  GPUNET_CU_TRY (cudaMemcpyAsync (s->h_logits, device_tensor (s, g->output), out_bytes,
      cudaMemcpyDeviceToHost, s->ctx.stream), error_text, "cudaMemcpyAsync (logits to the host)");
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (end of the forward pass)");
  memcpy (logits, s->h_logits, out_bytes);
  return GPUNET_OK;
}

/* Fails unless every plane of `img` is memory the current context's kernels can read. */
static gpunet_status
check_device_planes (const gpunet_image *img, int index, char **error_text)
{
  const int planes = img->format == GPUNET_FORMAT_I420 ? 3 : img->format == GPUNET_FORMAT_NV12 ? 2 : 1;
  for (int p = 0; p < planes; p++) {
    cudaPointerAttributes a;
    GPUNET_CU_TRY (cudaPointerGetAttributes (&a, img->planes[p]), error_text,
        "cudaPointerGetAttributes (image %d, plane %d)", index, p);
    if (a.type == cudaMemoryTypeUnregistered)
      return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
          "image %d is marked as CUDA memory, but plane %d (%p) is plain host memory the GPU "
          "cannot read", index, p, (const void *) img->planes[p]);
  }
  return GPUNET_OK;
}

/* Preprocess, layers and top-k of classify_device, ending with a stream sync. */
static gpunet_status
classify_device_run (cuda_state *s, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *pre, int k, gpunet_class_score *out, char **error_text)
{
  const gpunet_graph *g = s->g;
  const int classes = (int) tensor_floats (g, g->output, 1);
  const size_t per_image = tensor_floats (g, g->input, 1);
  gpunet_status st;
  for (int i = 0; i < n; i++) {
    gpunet_cuda_pre_desc d;
    gpunet_cuda_pre_desc_init (&d, pre, &images[i]);
    d.x = s->pre.x;
    d.y = s->pre.y;
    GPUNET_CU_TRY (gpunet_cuda_preprocess (&d, s->d_input + (size_t) i * per_image, s->ctx.stream),
        error_text, "preprocess kernel (image %d, %dx%d)", i, images[i].width, images[i].height);
  }
  st = run_layers (s, n, NULL, NULL, error_text);
  if (st != GPUNET_OK)
    return st;
  const float *d_logits = device_tensor (s, g->output);
  if (classes <= GPUNET_CUDA_TOPK_MAX) {
    const size_t bytes = (size_t) n * k * sizeof (gpunet_class_score);
    GPUNET_CU_TRY (gpunet_cuda_topk (d_logits, n, classes, k, s->d_topk, s->ctx.stream),
        error_text, "softmax + top-k kernel (%d classes, k %d)", classes, k);
    GPUNET_CU_TRY (cudaMemcpyAsync (s->h_topk, s->d_topk, bytes, cudaMemcpyDeviceToHost,
        s->ctx.stream), error_text, "cudaMemcpyAsync (top-k results to the host)");
    GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
        "cudaStreamSynchronize (end of the device classification)");
    memcpy (out, s->h_topk, bytes);
    return GPUNET_OK;
  }
  /* too many classes for the shared-memory sort: select on the host */
  const size_t out_bytes = (size_t) n * classes * sizeof (float);
  GPUNET_CU_TRY (cudaMemcpyAsync (s->h_logits, d_logits, out_bytes, cudaMemcpyDeviceToHost,
      s->ctx.stream), error_text, "cudaMemcpyAsync (logits to the host)");
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (end of the device classification)");
  for (int i = 0; i < n; i++)
    gpunet_topk_softmax (s->h_logits + (size_t) i * classes, classes, k, out + (size_t) i * k);
  return GPUNET_OK;
}

static gpunet_status
cuda_classify_device (void *state, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *pre, int k, gpunet_class_score *out, char **error_text)
{
  cuda_state *s = (cuda_state *) state;
  const gpunet_graph *g = s->g;
  const int classes = (int) tensor_floats (g, g->output, 1);
  const gpunet_tensor_desc *in = &g->tensors[g->input];
  if (pre->out_size != in->h || in->h != in->w || in->c != 3)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "the preprocess plan writes 3x%dx%d, the network takes %dx%dx%d", pre->out_size,
        pre->out_size, in->c, in->h, in->w);
  if (k < 1 || k > classes)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "top-k of %d asked, the model has %d classes", k, classes);
  gpunet_status st = set_batch (s, n, error_text);
  if (st == GPUNET_OK)
    st = gpunet_cuda_pre_tables_update (&s->pre, pre, s->ctx.stream, error_text);
  for (int i = 0; i < n && st == GPUNET_OK; i++)
    st = check_device_planes (&images[i], i, error_text);
  if (st != GPUNET_OK)
    return st;
  st = classify_device_run (s, images, n, pre, k, out, error_text);
  /* on failure, work already queued may still read the frames: wait for it (its own
   * error, if any, is the one already reported) */
  if (st != GPUNET_OK)
    cudaStreamSynchronize (s->ctx.stream);
  return st;
}

static const gpunet_backend cuda_backend = {
  "cuda",
  cuda_plan,
  cuda_forward,
  cuda_destroy,
  cuda_classify_device,
};

/* Refuses a module built against other engine headers. */
static int
abi_ok (int abi_version, size_t op_size, char **error_text)
{
  if (abi_version == GPUNET_CUDA_ABI_VERSION && op_size == sizeof (gpunet_op))
    return 1;
  gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND_UNAVAILABLE,
      "the CUDA module was built for another engine version (module ABI %d, op size %zu; "
      "engine ABI %d, op size %zu): rebuild and reinstall them together",
      GPUNET_CUDA_ABI_VERSION, sizeof (gpunet_op), abi_version, op_size);
  return 0;
}

/* The module's exported entry (see cuda_module.h). */
extern "C" __attribute__ ((visibility ("default"))) const gpunet_backend *
gpunet_cuda_backend_entry (int abi_version, size_t op_size, char **error_text)
{
  return abi_ok (abi_version, op_size, error_text) ? &cuda_backend : NULL;
}

extern const gpunet_cuda_op_api gpunet_cuda_op_api_table;

/* The single-op API for the self-test (see cuda_module.h). */
extern "C" __attribute__ ((visibility ("default"))) const gpunet_cuda_op_api *
gpunet_cuda_op_api_entry (int abi_version, size_t op_size, char **error_text)
{
  return abi_ok (abi_version, op_size, error_text) ? &gpunet_cuda_op_api_table : NULL;
}
