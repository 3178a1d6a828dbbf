/* backend_cuda.cu: the CUDA backend table exported by libgpunet-cuda.so.  plan() checks
 * the driver and device, resolves the precision (fp32, or fp16 storage with float
 * accumulation), creates the stream and cuDNN handle, uploads all weights, places
 * activations with the engine's memplan in device slots and plans every layer; forward()
 * copies the host input through pinned memory, enqueues the layers, returns the logits;
 * classify_device() preprocesses device frames in place of the copy and returns top-k;
 * classify_host() packs host frames into pinned staging memory, copies them to a device
 * staging buffer and continues as classify_device().  Both take one plan per image, so
 * frames of several sizes share one forward pass (each descriptor points at its frame
 * and at its geometry's tables in a small cache; not run on a GPU).  The per-frame work
 * is captured in a CUDA graph per batch size (graph.cu).  The benchmark hooks
 * (cuda_module.h) time each op of a forward pass with cudaEvents.  The opt-in fused path
 * (params->cuda_fused; plan_fusion) replaces depthwise + SE and the
 * pool + classifier (+ softmax + top-k) head with the kernels of cuda_fused.h; its level 2
 * in fp16 (GPUNET_CUDA_FUSED_NHWC) runs the NHWC network: activations NHWC from the
 * preprocess to the pool, each convolution one cuDNN graph with its epilogue
 * (conv_graph.cu), depthwise kernels that also write the SE squeeze (nhwc.cu). */
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "cuda_fusion.h"
#include "cuda_internal.h"
#include "cuda_module.h"
#include "cuda_upload.h"
extern "C" {
#include "memplan.h"
}


size_t
tensor_floats (const gpunet_graph *g, int t, int n)
{
  const gpunet_tensor_desc *d = &g->tensors[t];
  return (size_t) n * (size_t) d->c * (size_t) d->h * (size_t) d->w;
}

/* Frees everything of `s`; the session's context is current (the callers' scope). */
static void
destroy_in_context (cuda_state *s)
{
  if (s->ctx.stream)
    cudaStreamSynchronize (s->ctx.stream);
  for (int i = 0; i <= s->max_batch; i++) {
    if (s->fwd_graph)
      gpunet_cuda_graph_clear (&s->fwd_graph[i]);
    if (s->dev_graph)
      gpunet_cuda_graph_clear (&s->dev_graph[i]);
  }
  free (s->fwd_graph);
  free (s->dev_graph);
  if (s->layers)
    for (int i = 0; i < s->g->n_ops; i++)
      gpunet_cuda_layer_clear (&s->layers[i]);
  free (s->layers);
  if (s->slot)
    for (int i = 0; i < s->plan.n_slots; i++)
      if (s->slot[i])
        cudaFree (s->slot[i]);
  free (s->slot);
  void *dev[] = { s->d_input, s->d_input32, s->d_logits32, s->arena, s->d_trace32, s->d_desc, s->d_topk,
    s->d_head_tickets };
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i])
      cudaFree (dev[i]);
  if (s->ev_start || s->ev_stop)
    for (int i = 0; i < s->g->n_ops; i++) {
      if (s->ev_start && s->ev_start[i])
        cudaEventDestroy (s->ev_start[i]);
      if (s->ev_stop && s->ev_stop[i])
        cudaEventDestroy (s->ev_stop[i]);
    }
  free (s->ev_start);
  free (s->ev_stop);
  for (int i = 0; i < 2; i++)
    if (s->ev_fwd[i])
      cudaEventDestroy (s->ev_fwd[i]);
  if (s->d_stage)
    cudaFree (s->d_stage);
  void *pinned[] = { s->h_input, s->h_logits, s->h_trace, s->h_desc, s->h_topk, s->h_stage };
  for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++)
    if (pinned[i])
      cudaFreeHost (pinned[i]);
  gpunet_cuda_pre_cache_clear (&s->pre);
  free (s->img_tables);
  gpunet_memplan_clear (&s->plan);
  gpunet_cuda_ctx_clear (&s->ctx);
  gpunet_graph_clear (&s->padded);
  free (s);
}

static void
cuda_destroy (void *state)
{
  cuda_state *s = (cuda_state *) state;
  if (!s)
    return;
  void *cu = s->ctx.cu_ctx;
  gpunet_cuda_ctx_scope scope = { 0 };
  /* without the context nothing can be freed safely: leak rather than free elsewhere */
  if (cu && gpunet_cuda_ctx_enter (cu, &scope, NULL) != GPUNET_OK) {
    fprintf (stderr, "gpunet-cuda: cannot make the session's CUDA context current to free it; "
        "its device memory is left allocated\n");
    return;
  }
  destroy_in_context (s);
  gpunet_cuda_ctx_leave (cu, &scope, GPUNET_OK, NULL);
}

static void *
device_tensor (cuda_state *s, int t)
{
  return t == s->g->input ? s->d_input : s->slot[s->plan.tensor_slot[t]];
}

/* The float32 logits on the device: converted for fp16 sessions by enqueue_logits32, or
 * written by the fused head (head: the pass ran it) into d_logits32, never into the output
 * tensor, whose slot the memory plan may share with the head's input. */
float *
logits32 (cuda_state *s, int head)
{
  return s->dtype == GPUNET_CUDA_F16 || head ? s->d_logits32
      : (float *) device_tensor (s, s->g->output);
}

/* Marks what the fused path runs (after the layers are planned, before the scratch is
 * reserved): each DWCONV2D -> SE pair (cuda_fusion.h) whose shape the tiled kernel runs
 * writes tile sums, and that SE runs the excite from them; a final AVGPOOL -> LINEAR pair
 * becomes the fused head.  Returns the SE scratch floats the fused SE ops need. */
static size_t
plan_fusion (cuda_state *s)
{
  const gpunet_graph *g = s->g;
  const int nb = s->max_batch;
  size_t scratch = 0;
  s->head_op = -1;
  if (!s->fused)
    return 0;
  if (s->nhwc) {
    /* every SE reads strip sums: the depthwise op before it writes them, else a squeeze */
    for (int i = 0; i < g->n_ops; i++) {
      if (g->ops[i].kind != GPUNET_OP_SE)
        continue;
      const gpunet_se_params *sp = &g->ops[i].p.se;
      int tiles = gpunet_cuda_nhwc_strips (sp->h, sp->w);
      if (i > 0 && gpunet_fusion_dw_se_at (g, i - 1)) {
        const gpunet_dwconv2d_params *dp = &g->ops[i - 1].p.dwconv2d;
        tiles = gpunet_cuda_nhwc_strips (dp->oh, dp->ow);
        s->layers[i - 1].fused_tiles = s->layers[i].fused_tiles = tiles;
      }
      const size_t need = (size_t) nb * ((size_t) sp->c * tiles + (size_t) sp->rd);
      if (need > scratch)
        scratch = need;
    }
    return scratch;
  }
  for (int i = 0; i + 1 < g->n_ops; i++) {
    if (!gpunet_fusion_dw_se_at (g, i))
      continue;
    const gpunet_se_params *sp = &g->ops[i + 1].p.se;
    const int tiles = gpunet_cuda_dwconv2d_squeeze_tiles (&g->ops[i].p.dwconv2d, nb,
        s->ctx.dw_direct);
    if (!tiles || !gpunet_cuda_excite_fits (sp->c, sp->rd))
      continue;
    s->layers[i].fused_tiles = s->layers[i + 1].fused_tiles = tiles;
    const size_t need = (size_t) nb * ((size_t) sp->c * tiles + (size_t) sp->rd);   /* sums | mid */
    if (need > scratch)
      scratch = need;
  }
  const int head = gpunet_fusion_head_op (g);
  if (head >= 0 && gpunet_cuda_head_fits (g->ops[head + 1].p.linear.cin,
      g->ops[head + 1].p.linear.cout))
    s->head_op = head;
  return scratch;
}

/* fp16: enqueues the conversion of n logit rows to d_logits32. */
gpunet_status
enqueue_logits32 (cuda_state *s, int n, char **error_text)
{
  if (s->dtype != GPUNET_CUDA_F16 || s->nhwc)   /* NHWC: the classifier wrote them */
    return GPUNET_OK;
  GPUNET_CU_TRY (gpunet_cuda_convert (GPUNET_CUDA_F16, device_tensor (s, s->g->output),
      GPUNET_CUDA_F32, s->d_logits32, (long long) tensor_floats (s->g, s->g->output, n),
      s->ctx.stream), error_text, "conversion kernel (fp16 logits to float32)");
  return GPUNET_OK;
}

/* Everything plan() does after the context exists. */
static gpunet_status
plan_buffers (cuda_state *s, char **error_text)
{
  const gpunet_graph *g = s->g;
  const int nb = s->max_batch;
  const int half = s->dtype == GPUNET_CUDA_F16;
  if (gpunet_memplan_build (&s->plan, g, nb, 0) != 0)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning activations");
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    if (op->out == g->input || (op->in != g->input && s->plan.tensor_slot[op->in] < 0)
        || (op->residual >= 0 && op->residual != g->input && s->plan.tensor_slot[op->residual] < 0))
      return gpunet_cuda_fail (error_text, GPUNET_ERR_UNSUPPORTED,
          "op %d reads a tensor no earlier op writes (or writes the input)", i);
  }
  s->slot = (void **) calloc ((size_t) s->plan.n_slots + 1, sizeof (void *));
  s->layers = (gpunet_cuda_layer *) calloc ((size_t) g->n_ops + 1, sizeof *s->layers);
  s->fwd_graph = (gpunet_cuda_graph *) calloc ((size_t) nb + 1, sizeof *s->fwd_graph);
  s->dev_graph = (gpunet_cuda_graph *) calloc ((size_t) nb + 1, sizeof *s->dev_graph);
  if (!s->slot || !s->layers || !s->fwd_graph || !s->dev_graph)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning the CUDA backend");
  for (int i = 0; i < s->plan.n_slots; i++)
    GPUNET_CU_TRY (cudaMalloc (&s->slot[i], s->plan.slot_floats[i] * s->esize + 256),
        error_text, "cudaMalloc (activation slot %d, %zu elements)", i, s->plan.slot_floats[i]);
  const size_t in_floats = tensor_floats (g, g->input, nb), out_floats = tensor_floats (g, g->output, nb);
  GPUNET_CU_TRY (cudaMalloc (&s->d_input, in_floats * s->esize), error_text,
      "cudaMalloc (input, %zu elements)", in_floats);
  if (half)
    GPUNET_CU_TRY (cudaMalloc ((void **) &s->d_input32, in_floats * sizeof (float)), error_text,
        "cudaMalloc (float32 input before fp16 conversion, %zu floats)", in_floats);
  if (half || s->fused)
    GPUNET_CU_TRY (cudaMalloc ((void **) &s->d_logits32, out_floats * sizeof (float)), error_text,
        "cudaMalloc (float32 logits, %zu floats)", out_floats);
  if (s->fused) {
    GPUNET_CU_TRY (cudaMalloc ((void **) &s->d_head_tickets, (size_t) nb * sizeof (unsigned)),
        error_text, "cudaMalloc (fused head counters)");
    GPUNET_CU_TRY (cudaMemsetAsync (s->d_head_tickets, 0, (size_t) nb * sizeof (unsigned),
        s->ctx.stream), error_text, "cudaMemsetAsync (fused head counters)");
  }
  GPUNET_CU_TRY (cudaHostAlloc ((void **) &s->h_input, in_floats * sizeof (float), cudaHostAllocDefault),
      error_text, "cudaHostAlloc (pinned input staging)");
  GPUNET_CU_TRY (cudaHostAlloc ((void **) &s->h_logits, out_floats * sizeof (float), cudaHostAllocDefault),
      error_text, "cudaHostAlloc (pinned logits staging)");
  /* top-k results: at most every class of every image */
  GPUNET_CU_TRY (cudaMalloc ((void **) &s->d_topk, out_floats * sizeof (gpunet_class_score)),
      error_text, "cudaMalloc (top-k results, %zu entries)", out_floats);
  GPUNET_CU_TRY (cudaHostAlloc ((void **) &s->h_topk, out_floats * sizeof (gpunet_class_score),
      cudaHostAllocDefault), error_text, "cudaHostAlloc (pinned top-k results)");
  GPUNET_CU_TRY (cudaMalloc ((void **) &s->d_desc, (size_t) nb * sizeof (gpunet_cuda_pre_desc)),
      error_text, "cudaMalloc (preprocess descriptors)");
  GPUNET_CU_TRY (cudaHostAlloc ((void **) &s->h_desc, (size_t) nb * sizeof (gpunet_cuda_pre_desc),
      cudaHostAllocDefault), error_text, "cudaHostAlloc (pinned preprocess descriptors)");
  /* as many table entries as one call may carry geometries (backend.h), so a call never
   * replaces tables its own descriptors point at */
  s->img_tables = (const gpunet_cuda_pre_tables **) calloc ((size_t) nb, sizeof *s->img_tables);
  if (!s->img_tables)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning the CUDA backend");
  gpunet_status pst = gpunet_cuda_pre_cache_init (&s->pre, gpunet_backend_call_geometries (nb),
      error_text);
  if (pst != GPUNET_OK)
    return pst;

  size_t weight_bytes = 0, scratch = 0;
  for (int i = 0; i < g->n_ops; i++) {
    weight_bytes += gpunet_cuda_layer_weight_bytes (&g->ops[i], s->dtype);
    if (g->ops[i].kind == GPUNET_OP_SE) {
      size_t need = (size_t) nb * (2 * (size_t) g->ops[i].p.se.c + (size_t) g->ops[i].p.se.rd);
      if (need > scratch)
        scratch = need;
    }
  }
  GPUNET_CU_TRY (cudaMalloc ((void **) &s->arena, weight_bytes + 256), error_text,
      "cudaMalloc (weights, %zu bytes)", weight_bytes);

  /* cuDNN workspace: at most 512 MiB and a quarter of the free memory */
  size_t free_b = 0, total_b = 0;
  GPUNET_CU_TRY (cudaMemGetInfo (&free_b, &total_b), error_text, "cudaMemGetInfo");
  size_t ws_limit = free_b / 4 < ((size_t) 512 << 20) ? free_b / 4 : ((size_t) 512 << 20);
  char *arena = s->arena;
  size_t ws = 0;
  for (int i = 0; i < g->n_ops; i++) {
    gpunet_status st = gpunet_cuda_layer_plan (&s->ctx, &s->layers[i], &g->ops[i], i, &arena, nb,
        ws_limit, error_text);
    if (st != GPUNET_OK)
      return st;
    if (s->layers[i].ws_max > ws)
      ws = s->layers[i].ws_max;
  }
  const size_t fused_scratch = plan_fusion (s);
  if (fused_scratch > scratch)
    scratch = fused_scratch;
  gpunet_status st = gpunet_cuda_ctx_reserve (&s->ctx, ws, scratch, error_text);
  if (st != GPUNET_OK)
    return st;
  s->cur_n = nb;
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (after uploading weights)");
  return GPUNET_OK;
}

static gpunet_status
cuda_plan (const gpunet_graph *graph, const gpunet_plan_params *params, void **state,
    char **error_text)
{
  *state = NULL;
  if (params->max_batch < 1)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "max_batch %d < 1",
        params->max_batch);
  cuda_state *s = (cuda_state *) calloc (1, sizeof *s);
  if (!s)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning the CUDA backend");
  s->g = s->user_g = graph;
  s->max_batch = params->max_batch;
  s->graphs = params->cuda.graphs != GPUNET_CUDA_GRAPHS_OFF;
  s->fused = params->cuda_fused;
  s->head_op = -1;
  /* planning runs in the session's context (pushed when the caller has another) */
  gpunet_cuda_ctx_scope scope = { 0 };
  gpunet_status st = gpunet_cuda_ctx_init (&s->ctx, params->device, params->cuda_context, &scope,
      error_text);
  void *cu = s->ctx.cu_ctx;
  if (st == GPUNET_OK)
    st = gpunet_cuda_resolve_precision (params->precision, &s->dtype, error_text);
  if (st == GPUNET_OK) {
    s->ctx.dtype = s->dtype;
    s->ctx.dw_direct = params->cuda.dwconv == GPUNET_CUDA_DW_DIRECT;
    s->esize = gpunet_cuda_dtype_size (s->dtype);
    /* the NHWC network: fp16 only (fp32 keeps the verified NCHW path, which matches the
     * CPU's arithmetic), and only where every SE's excite fits its shared memory */
    s->nhwc = s->fused >= GPUNET_CUDA_FUSED_NHWC && s->dtype == GPUNET_CUDA_F16;
    if (s->nhwc && params->cuda.nhwc_pad == GPUNET_CUDA_NHWC_PAD_ON) {
      /* tensor cores want channel counts that are multiples of 8: plan the same network
       * with zero channels added (graph.h), traces still report the model's channels */
      const char *why = NULL;
      const int r = gpunet_graph_pad_channels (graph, 8, &s->padded, &why);
      if (r < 0)
        st = gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY,
            "out of memory padding the network's channels to multiples of 8");
      else if (r == 0)
        s->g = &s->padded.graph;
    }
    const gpunet_graph *g = s->g;
    for (int i = 0; st == GPUNET_OK && s->nhwc && i < g->n_ops; i++)
      if (g->ops[i].kind == GPUNET_OP_SE
          && !gpunet_cuda_excite_fits (g->ops[i].p.se.c, g->ops[i].p.se.rd)) {
        fprintf (stderr, "gpunet-cuda: SE of %d channels is too wide for the NHWC network's "
            "excite kernel; this session runs the NCHW path\n", g->ops[i].p.se.c);
        s->nhwc = 0;
        s->g = graph;
      }
    s->ctx.nhwc = s->nhwc;
    s->ctx.nhwc_tune = s->nhwc && params->cuda.nhwc_tune == GPUNET_CUDA_NHWC_TUNE_ON;
    int sms = 0;
    if (st == GPUNET_OK && s->nhwc && params->cuda.nhwc_strip == GPUNET_CUDA_NHWC_STRIP_FILL) {
      /* not GPUNET_CU_TRY: a failure here still goes through the cleanup below */
      const cudaError_t e = cudaDeviceGetAttribute (&sms, cudaDevAttrMultiProcessorCount,
          s->ctx.device);
      if (e != cudaSuccess)
        st = gpunet_cuda_fail_rt (error_text, e, "cudaDeviceGetAttribute (multiprocessor count)");
      else
        s->ctx.nhwc_fill_blocks = 4 * sms;
    }
    int major = 0, ptx = 0;
    if (st == GPUNET_OK && params->cuda.pdl == GPUNET_CUDA_PDL_ON) {
      /* programmatic dependent launch needs sm_90 and kernels built with their wait
       * (compute_90+); elsewhere the option does nothing */
      cudaError_t e = cudaDeviceGetAttribute (&major, cudaDevAttrComputeCapabilityMajor,
          s->ctx.device);
      if (e != cudaSuccess)
        st = gpunet_cuda_fail_rt (error_text, e, "cudaDeviceGetAttribute (compute capability)");
      else if (major >= 9 && (e = gpunet_cuda_kernel_ptx_version (&ptx)) != cudaSuccess)
        st = gpunet_cuda_fail_rt (error_text, e, "cudaFuncGetAttributes (the kernels' PTX version)");
      else
        s->ctx.pdl = gpunet_cuda_pdl_usable (major, ptx);
      if (st == GPUNET_OK && major >= 9 && !s->ctx.pdl)
        fprintf (stderr, "gpunet-cuda: pdl=on does nothing here: the kernels run from "
            "compute_%d code, built without the wait programmatic launches need (rebuild "
            "with 90 in gpu_archs)\n", ptx);
    }
    if (st == GPUNET_OK)
      st = plan_buffers (s, error_text);
  }
  if (st != GPUNET_OK) {
    destroy_in_context (s);
    s = NULL;
  }
  st = gpunet_cuda_ctx_leave (cu, &scope, st, error_text);
  if (st != GPUNET_OK) {
    cuda_destroy (s);   /* planned, but the context stack was changed meanwhile */
    return st;
  }
  *state = s;
  return GPUNET_OK;
}

/* Copies tensor t (n images) to the host as float32 and hands it to the trace callback. */
static gpunet_status
trace_tensor (cuda_state *s, int t, int n, gpunet_trace_func trace, void *user, char **error_text)
{
  const gpunet_graph *g = s->g;
  if (!s->trace_floats) {
    /* both buffers or none: a half-done allocation (out of memory) is undone, so a later
     * traced call never converts into a NULL d_trace32 */
    size_t most = 0;
    for (int i = 0; i < g->n_tensors; i++)
      if (tensor_floats (g, i, s->max_batch) > most)
        most = tensor_floats (g, i, s->max_batch);
    const char *call = "cudaHostAlloc (pinned trace buffer";
    cudaError_t e = cudaHostAlloc ((void **) &s->h_trace, most * sizeof (float), cudaHostAllocDefault);
    const int have_host = e == cudaSuccess;
    if (have_host && s->dtype == GPUNET_CUDA_F16) {
      call = "cudaMalloc (float32 trace buffer";
      e = cudaMalloc ((void **) &s->d_trace32, most * sizeof (float));
    }
    if (e != cudaSuccess) {
      if (have_host)
        cudaFreeHost (s->h_trace);
      s->h_trace = NULL;
      s->d_trace32 = NULL;
      char what[128];
      snprintf (what, sizeof what, "%s, %zu floats)", call, most);
      return gpunet_cuda_fail_rt (error_text, e, what);
    }
    s->trace_floats = most;
  }
  const gpunet_tensor_desc *d = &g->tensors[t];
  const size_t count = tensor_floats (g, t, n);
  const void *src = device_tensor (s, t);
  if (s->nhwc && t == g->output) {
    src = s->d_logits32;   /* the classifier's float logits (c x 1 x 1: no relayout) */
  } else if (s->nhwc) {
    GPUNET_CU_TRY (gpunet_cuda_relayout (s->dtype, src, GPUNET_CUDA_F32, s->d_trace32, n, d->c,
        (long long) d->h * d->w, 0, s->ctx.stream), error_text,
        "relayout kernel (NHWC trace of block %d)", d->block);
    src = s->d_trace32;
    const int c = s->user_g->tensors[t].c;
    if (c != d->c) {
      /* padded channels (nhwcpad): each image's first c planes, as the model has them */
      const size_t plane_bytes = (size_t) d->h * d->w * sizeof (float);
      GPUNET_CU_TRY (cudaMemcpy2DAsync (s->h_trace, c * plane_bytes, src, d->c * plane_bytes,
          c * plane_bytes, (size_t) n, cudaMemcpyDeviceToHost, s->ctx.stream), error_text,
          "cudaMemcpy2DAsync (trace of block %d, padded channels left out)", d->block);
      GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
          "cudaStreamSynchronize (trace of block %d)", d->block);
      trace (user, d->block, s->h_trace, n, c, d->h, d->w);
      return GPUNET_OK;
    }
  } else if (s->dtype == GPUNET_CUDA_F16) {
    GPUNET_CU_TRY (gpunet_cuda_convert (GPUNET_CUDA_F16, src, GPUNET_CUDA_F32, s->d_trace32,
        (long long) count, s->ctx.stream), error_text, "conversion kernel (trace of block %d)", d->block);
    src = s->d_trace32;
  }
  GPUNET_CU_TRY (cudaMemcpyAsync (s->h_trace, src, count * sizeof (float),
      cudaMemcpyDeviceToHost, s->ctx.stream), error_text, "cudaMemcpyAsync (trace of block %d)", d->block);
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (trace of block %d)", d->block);
  trace (user, d->block, s->h_trace, n, d->c, d->h, d->w);
  return GPUNET_OK;
}

/* Checks the batch size and, with `describe`, re-describes the layers when it changed
 * (host only; done before any capture, so captured graphs see fixed descriptors).  A run
 * that replays a captured graph passes describe = 0: re-describing every convolution
 * (cuDNN descriptors and a workspace query each) whenever an engine's passes alternate
 * between batch sizes is host time the replay never uses. */
gpunet_status
set_batch (cuda_state *s, int n, int describe, char **error_text)
{
  const gpunet_graph *g = s->g;
  if (n < 1 || n > s->max_batch)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch of %d images, but the session was planned for 1 to %d", n, s->max_batch);
  if (describe && n != s->cur_n) {
    for (int i = 0; i < g->n_ops; i++) {
      gpunet_status st = gpunet_cuda_layer_set_batch (&s->ctx, &s->layers[i], n, error_text);
      if (st != GPUNET_OK) {
        s->cur_n = 0;   /* layers now describe different batches: check them all next time */
        return st;
      }
    }
    s->cur_n = n;
  }
  return GPUNET_OK;
}

/* Keeps the stream busy for `ns` nanoseconds of GPU time.  A profiled pass is enqueued
 * behind it, so the host has queued every op and event before the first op starts and
 * the events time the ops back to back, not the host's launch gaps between them. */
static __global__ void
hold_kernel (unsigned long long ns)
{
  unsigned long long t0, t;
  asm volatile ("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep (1000);
    asm volatile ("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

/* The fused head (ops head_op, head_op + 1) on n images: float logits to logits32 and,
 * when k > 0, top-k results to d_topk. */
static gpunet_status
run_head (cuda_state *s, int n, int k, char **error_text)
{
  const gpunet_op *pool = &s->g->ops[s->head_op];
  const gpunet_cuda_layer *fc = &s->layers[s->head_op + 1];
  const gpunet_linear_params *lp = &fc->op->p.linear;
  GPUNET_CU_TRY (gpunet_cuda_head (s->dtype, device_tensor (s, pool->in), pool->p.avgpool.c,
      (long long) pool->p.avgpool.h * pool->p.avgpool.w, fc->w, fc->b, lp->cout, lp->act, n, k,
      logits32 (s, 1), s->d_topk, s->d_head_tickets, s->ctx.stream), error_text,
      "fused head kernel (pool + classifier%s, %d classes)", k > 0 ? " + top-k" : "", lp->cout);
  return GPUNET_OK;
}

/* Enqueues every layer on d_input (n images); trace (may be NULL) gets block outputs.
 * head_k >= 0: the fused head runs in place of the last two ops (with top-k when > 0),
 * and the float logits are final; -1: every op as planned. */
static gpunet_status
run_layers_in_order (cuda_state *s, int n, int head_k, gpunet_trace_func trace,
    void *trace_user, char **error_text)
{
  const gpunet_graph *g = s->g;
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    gpunet_cuda_pdl = gpunet_cuda_pdl_for_op (s->ctx.pdl, i, s->prof_active, trace != NULL);
    if (s->prof_active)
      GPUNET_CU_TRY (cudaEventRecord (s->ev_start[i], s->ctx.stream), error_text,
          "cudaEventRecord (profile start of op %d)", i);
    gpunet_status st;
    if (head_k >= 0 && i == s->head_op) {
      /* the head's time goes to the pool op; the classifier's events enclose nothing */
      st = run_head (s, n, head_k, error_text);
      if (st == GPUNET_OK && s->prof_active) {
        GPUNET_CU_TRY (cudaEventRecord (s->ev_stop[i], s->ctx.stream), error_text,
            "cudaEventRecord (profile end of op %d)", i);
        GPUNET_CU_TRY (cudaEventRecord (s->ev_start[i + 1], s->ctx.stream), error_text,
            "cudaEventRecord (profile start of op %d)", i + 1);
        GPUNET_CU_TRY (cudaEventRecord (s->ev_stop[i + 1], s->ctx.stream), error_text,
            "cudaEventRecord (profile end of op %d)", i + 1);
      }
      return st;
    }
    if (s->nhwc && op->kind == GPUNET_OP_LINEAR && op->out == g->output) {
      /* NHWC: the classifier writes the float logits itself (no conversion kernel) */
      const gpunet_linear_params *lp = &op->p.linear;
      GPUNET_CU_TRY (gpunet_cuda_linear (lp->cin, lp->cout, lp->act, s->dtype, s->layers[i].w,
          s->layers[i].b, s->dtype, device_tensor (s, op->in), GPUNET_CUDA_F32, s->d_logits32, n,
          s->ctx.stream), error_text, "classifier kernel (%d -> %d, float logits)", lp->cin,
          lp->cout);
      st = GPUNET_OK;
    } else {
      st = gpunet_cuda_layer_run (&s->ctx, &s->layers[i], device_tensor (s, op->in),
          op->residual >= 0 ? device_tensor (s, op->residual) : NULL, device_tensor (s, op->out),
          n, error_text);
    }
    if (st != GPUNET_OK)
      return st;
    if (s->prof_active)
      GPUNET_CU_TRY (cudaEventRecord (s->ev_stop[i], s->ctx.stream), error_text,
          "cudaEventRecord (profile end of op %d)", i);
    /* same rule as the CPU reference: a block's output once its last op wrote it */
    if (trace && g->tensors[op->out].block >= 0 && (i + 1 == g->n_ops || g->ops[i + 1].out != op->out)) {
      st = trace_tensor (s, op->out, n, trace, trace_user, error_text);
      if (st != GPUNET_OK)
        return st;
    }
  }
  return GPUNET_OK;
}

gpunet_status
run_layers (cuda_state *s, int n, int head_k, gpunet_trace_func trace, void *trace_user,
    char **error_text)
{
  /* pdl=on: our kernels among the layers launch with programmatic serialization
   * (op by op: gpunet_cuda_pdl_for_op) */
  const int outer = gpunet_cuda_pdl;
  const gpunet_status st = run_layers_in_order (s, n, head_k, trace, trace_user, error_text);
  gpunet_cuda_pdl = outer;
  return st;
}

/* The input upload of forward: pinned h_input to d_input (through d_input32 for fp16). */
static gpunet_status
enqueue_input (cuda_state *s, int n, char **error_text)
{
  const size_t count = tensor_floats (s->g, s->g->input, n);
  float *dst = s->dtype == GPUNET_CUDA_F16 ? s->d_input32 : (float *) s->d_input;
  GPUNET_CU_TRY (cudaMemcpyAsync (dst, s->h_input, count * sizeof (float), cudaMemcpyHostToDevice,
      s->ctx.stream), error_text, "cudaMemcpyAsync (input to the device)");
  if (s->nhwc) {
    const gpunet_tensor_desc *d = &s->g->tensors[s->g->input];
    GPUNET_CU_TRY (gpunet_cuda_relayout (GPUNET_CUDA_F32, s->d_input32, s->dtype, s->d_input, n,
        d->c, (long long) d->h * d->w, 1, s->ctx.stream), error_text,
        "relayout kernel (input to NHWC fp16)");
  } else if (s->dtype == GPUNET_CUDA_F16)
    GPUNET_CU_TRY (gpunet_cuda_convert (GPUNET_CUDA_F32, s->d_input32, GPUNET_CUDA_F16, s->d_input,
        (long long) count, s->ctx.stream), error_text, "conversion kernel (input to fp16)");
  return GPUNET_OK;
}

/* forward's work as plain launches (traced or profiled runs): the input upload, the
 * layers (block outputs to `trace`, cudaEvents when profiling), the logits to h_logits. */
static gpunet_status
enqueue_plain (cuda_state *s, int n, gpunet_trace_func trace, void *trace_user, char **error_text)
{
  /* traced runs need every block's output, so they keep the unfused head */
  const int head = s->head_op >= 0 && !trace;
  gpunet_status st = enqueue_input (s, n, error_text);
  if (st == GPUNET_OK)
    st = run_layers (s, n, head ? 0 : -1, trace, trace_user, error_text);
  if (st == GPUNET_OK && !head)
    st = enqueue_logits32 (s, n, error_text);
  if (st != GPUNET_OK)
    return st;
  GPUNET_CU_TRY (cudaMemcpyAsync (s->h_logits, logits32 (s, head),
      tensor_floats (s->g, s->g->output, n) * sizeof (float), cudaMemcpyDeviceToHost,
      s->ctx.stream), error_text, "cudaMemcpyAsync (logits to the host)");
  return GPUNET_OK;
}

/* After a synchronised profiled pass: adds each op's event time to s->prof. */
static gpunet_status
collect_profile (cuda_state *s, char **error_text)
{
  for (int i = 0; i < s->g->n_ops; i++) {
    float ms = 0.0f;
    GPUNET_CU_TRY (cudaEventElapsedTime (&ms, s->ev_start[i], s->ev_stop[i]), error_text,
        "cudaEventElapsedTime (profile of op %d)", i);
    s->prof[i] += 1e-3 * (double) ms;
  }
  return GPUNET_OK;
}

/* forward's work after the host copy into h_input, up to the logits in h_logits (the
 * captured form). */
static gpunet_status
enqueue_forward (void *user, char **error_text)
{
  cuda_state *s = (cuda_state *) user;
  return enqueue_plain (s, s->run_n, NULL, NULL, error_text);
}

static gpunet_status
forward_in_context (cuda_state *s, const float *input, int n, float *logits,
    gpunet_trace_func trace, void *trace_user, char **error_text)
{
  const gpunet_graph *g = s->g;
  const int profiled = s->prof != NULL;
  const int replay = n >= 1 && n <= s->max_batch && !trace && !profiled
      && gpunet_graph_will_replay (&s->fwd_graph[n].state, n);
  gpunet_status st = set_batch (s, n, !replay, error_text);
  if (st != GPUNET_OK)
    return st;
  memcpy (s->h_input, input, tensor_floats (g, g->input, n) * sizeof (float));
  s->run_n = n;
  if (profiled) {
    /* 2 ms and 50 us per op: longer than the host takes to enqueue them */
    hold_kernel<<<1, 1, 0, s->ctx.stream>>> (2000000ull + 50000ull * (unsigned long long) g->n_ops);
    cudaError_t e = cudaGetLastError ();
    if (e != cudaSuccess)
      st = gpunet_cuda_fail_rt (error_text, e, "hold kernel (profiled pass)");
  }
  if (st == GPUNET_OK && s->fwd_time) {
    cudaError_t e = cudaEventRecord (s->ev_fwd[0], s->ctx.stream);
    if (e != cudaSuccess)
      st = gpunet_cuda_fail_rt (error_text, e, "cudaEventRecord (start of the timed forward pass)");
  }
  if (st == GPUNET_OK && (trace || profiled)) {
    /* traced runs copy block outputs between layers, profiled runs record events around
     * each op: plain launches */
    s->prof_active = profiled;
    st = enqueue_plain (s, n, trace, trace_user, error_text);
    s->prof_active = 0;
  } else if (st == GPUNET_OK) {
    st = gpunet_cuda_graph_run (&s->fwd_graph[n], n, s->graphs, s->ctx.stream, enqueue_forward, s,
        "the forward pass", error_text);
  }
  if (st == GPUNET_OK && s->fwd_time) {
    cudaError_t e = cudaEventRecord (s->ev_fwd[1], s->ctx.stream);
    if (e != cudaSuccess)
      st = gpunet_cuda_fail_rt (error_text, e, "cudaEventRecord (end of the timed forward pass)");
  }
  if (st != GPUNET_OK) {
    cudaStreamSynchronize (s->ctx.stream);
    return st;
  }
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (end of the forward pass)");
  if (profiled && (st = collect_profile (s, error_text)) != GPUNET_OK)
    return st;
  if (s->fwd_time) {
    float ms = 0.0f;
    GPUNET_CU_TRY (cudaEventElapsedTime (&ms, s->ev_fwd[0], s->ev_fwd[1]), error_text,
        "cudaEventElapsedTime (timed forward pass)");
    *s->fwd_time += 1e-3 * (double) ms;
  }
  memcpy (logits, s->h_logits, tensor_floats (g, g->output, n) * sizeof (float));
  return GPUNET_OK;
}

static gpunet_status
cuda_forward (void *state, const float *input, int n, float *logits, gpunet_trace_func trace,
    void *trace_user, char **error_text)
{
  cuda_state *s = (cuda_state *) state;
  gpunet_cuda_ctx_scope scope;
  gpunet_status st = gpunet_cuda_ctx_enter (s->ctx.cu_ctx, &scope, error_text);
  if (st != GPUNET_OK)
    return st;
  st = forward_in_context (s, input, n, logits, trace, trace_user, error_text);
  return gpunet_cuda_ctx_leave (s->ctx.cu_ctx, &scope, st, error_text);
}

static const gpunet_backend cuda_backend = {
  "cuda",
  cuda_plan,
  cuda_forward,
  cuda_destroy,
  cuda_classify_device,
  cuda_classify_host,
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

/* ---- benchmark hooks (cuda_module.h) ---------------------------------------------------- */

static gpunet_status
profile_in_context (cuda_state *s, double *op_seconds, char **error_text)
{
  const int ops = s->g->n_ops;
  if (!s->ev_start) {
    s->ev_start = (cudaEvent_t *) calloc ((size_t) ops + 1, sizeof (cudaEvent_t));
    s->ev_stop = (cudaEvent_t *) calloc ((size_t) ops + 1, sizeof (cudaEvent_t));
    if (!s->ev_start || !s->ev_stop) {
      free (s->ev_start);
      free (s->ev_stop);
      s->ev_start = s->ev_stop = NULL;
      return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory for profile events");
    }
  }
  /* created once; a failed creation leaves NULLs that the next call fills */
  for (int i = 0; i < ops; i++) {
    cudaEvent_t e = NULL;
    if (!s->ev_start[i]) {
      GPUNET_CU_TRY (cudaEventCreate (&e), error_text, "cudaEventCreate (profile start of op %d)", i);
      s->ev_start[i] = e;
    }
    if (!s->ev_stop[i]) {
      GPUNET_CU_TRY (cudaEventCreate (&e), error_text, "cudaEventCreate (profile end of op %d)", i);
      s->ev_stop[i] = e;
    }
  }
  s->prof = op_seconds;
  return GPUNET_OK;
}

static gpunet_status
cuda_profile (void *state, double *op_seconds, char **error_text)
{
  cuda_state *s = (cuda_state *) state;
  s->prof = NULL;
  if (!op_seconds)
    return GPUNET_OK;
  gpunet_cuda_ctx_scope scope;
  gpunet_status st = gpunet_cuda_ctx_enter (s->ctx.cu_ctx, &scope, error_text);
  if (st != GPUNET_OK)
    return st;
  st = profile_in_context (s, op_seconds, error_text);
  return gpunet_cuda_ctx_leave (s->ctx.cu_ctx, &scope, st, error_text);
}

static gpunet_status
forward_time_in_context (cuda_state *s, double *gpu_seconds, char **error_text)
{
  for (int i = 0; i < 2; i++)
    if (!s->ev_fwd[i])
      GPUNET_CU_TRY (cudaEventCreate (&s->ev_fwd[i]), error_text,
          "cudaEventCreate (forward pass timing)");
  s->fwd_time = gpu_seconds;
  return GPUNET_OK;
}

static gpunet_status
cuda_forward_time (void *state, double *gpu_seconds, char **error_text)
{
  cuda_state *s = (cuda_state *) state;
  s->fwd_time = NULL;
  if (!gpu_seconds)
    return GPUNET_OK;
  gpunet_cuda_ctx_scope scope;
  gpunet_status st = gpunet_cuda_ctx_enter (s->ctx.cu_ctx, &scope, error_text);
  if (st != GPUNET_OK)
    return st;
  st = forward_time_in_context (s, gpu_seconds, error_text);
  return gpunet_cuda_ctx_leave (s->ctx.cu_ctx, &scope, st, error_text);
}

/* The network alone on s->run_n images: the layers from d_input to the float32 logits on
 * the device (what net_time replays). */
static gpunet_status
enqueue_network (void *user, char **error_text)
{
  cuda_state *s = (cuda_state *) user;
  const int head = s->head_op >= 0;
  gpunet_status st = run_layers (s, s->run_n, head ? 0 : -1, NULL, NULL, error_text);
  if (st == GPUNET_OK && !head)
    st = enqueue_logits32 (s, s->run_n, error_text);
  return st;
}

/* Describes the layers for n images and runs fn once as plain launches, synchronised:
 * the warm-up before a capture (cuDNN's one-time set-up stays outside it). */
static gpunet_status
bench_warm_up (cuda_state *s, int n, gpunet_cuda_enqueue_func fn, char **error_text)
{
  gpunet_status st = set_batch (s, n, 1, error_text);
  if (st != GPUNET_OK)
    return st;
  s->run_n = n;
  st = fn (s, error_text);
  if (st != GPUNET_OK) {
    cudaStreamSynchronize (s->ctx.stream);
    return st;
  }
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (after the warm-up pass of %d images)", n);
  return GPUNET_OK;
}

/* What net_time creates, freed by net_bench_clear whatever happened. */
typedef struct {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaEvent_t ev[2];
  double *group_ms;
} net_bench;

static void
net_bench_clear (cuda_state *s, net_bench *b)
{
  cudaStreamSynchronize (s->ctx.stream);
  if (b->exec)
    cudaGraphExecDestroy (b->exec);
  if (b->graph)
    cudaGraphDestroy (b->graph);
  for (int i = 0; i < 2; i++)
    if (b->ev[i])
      cudaEventDestroy (b->ev[i]);
  free (b->group_ms);
  memset (b, 0, sizeof *b);
}

static gpunet_status
net_time_run (cuda_state *s, net_bench *b, int n, int groups, int replays, double *median_ms,
    char **error_text)
{
  gpunet_status st = bench_warm_up (s, n, enqueue_network, error_text);
  if (st != GPUNET_OK)
    return st;
  char *why = gpunet_cuda_capture_raw (&b->graph, s->ctx.stream, enqueue_network, s);
  if (why) {
    st = gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND, "capturing the network (%d images) "
        "as a CUDA graph: %s", n, why);
    free (why);
    return st;
  }
  GPUNET_CU_TRY (cudaGraphInstantiate (&b->exec, b->graph, 0), error_text,
      "cudaGraphInstantiate (the network, %d images)", n);
  for (int i = 0; i < 2; i++)
    GPUNET_CU_TRY (cudaEventCreate (&b->ev[i]), error_text, "cudaEventCreate (network timing)");
  b->group_ms = (double *) calloc ((size_t) groups, sizeof (double));
  if (!b->group_ms)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory for %d group times",
        groups);
  /* untimed replays first, as tools/pytorch_baseline.py does */
  for (int r = 0; r < 10; r++)
    GPUNET_CU_TRY (cudaGraphLaunch (b->exec, s->ctx.stream), error_text,
        "cudaGraphLaunch (the network, untimed replay %d)", r);
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (after the untimed network replays)");
  for (int g = 0; g < groups; g++) {
    GPUNET_CU_TRY (cudaEventRecord (b->ev[0], s->ctx.stream), error_text,
        "cudaEventRecord (start of replay group %d)", g);
    for (int r = 0; r < replays; r++)
      GPUNET_CU_TRY (cudaGraphLaunch (b->exec, s->ctx.stream), error_text,
          "cudaGraphLaunch (the network, group %d, replay %d)", g, r);
    GPUNET_CU_TRY (cudaEventRecord (b->ev[1], s->ctx.stream), error_text,
        "cudaEventRecord (end of replay group %d)", g);
    GPUNET_CU_TRY (cudaEventSynchronize (b->ev[1]), error_text,
        "cudaEventSynchronize (end of replay group %d)", g);
    float ms = 0.0f;
    GPUNET_CU_TRY (cudaEventElapsedTime (&ms, b->ev[0], b->ev[1]), error_text,
        "cudaEventElapsedTime (replay group %d)", g);
    b->group_ms[g] = (double) ms / replays;
  }
  /* the median (insertion sort: a few groups) */
  for (int i = 1; i < groups; i++)
    for (int j = i; j > 0 && b->group_ms[j - 1] > b->group_ms[j]; j--) {
      const double t = b->group_ms[j];
      b->group_ms[j] = b->group_ms[j - 1];
      b->group_ms[j - 1] = t;
    }
  *median_ms = groups % 2 ? b->group_ms[groups / 2]
      : 0.5 * (b->group_ms[groups / 2 - 1] + b->group_ms[groups / 2]);
  return GPUNET_OK;
}

static gpunet_status
cuda_net_time (void *state, int n, int groups, int replays, double *median_ms,
    char **error_text)
{
  cuda_state *s = (cuda_state *) state;
  *median_ms = 0.0;
  if (groups < 1 || replays < 1)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "network timing needs at least one group of one replay (%d groups of %d)", groups, replays);
  gpunet_cuda_ctx_scope scope;
  gpunet_status st = gpunet_cuda_ctx_enter (s->ctx.cu_ctx, &scope, error_text);
  if (st != GPUNET_OK)
    return st;
  net_bench b;
  memset (&b, 0, sizeof b);
  st = net_time_run (s, &b, n, groups, replays, median_ms, error_text);
  net_bench_clear (s, &b);
  return gpunet_cuda_ctx_leave (s->ctx.cu_ctx, &scope, st, error_text);
}

static gpunet_status
graph_nodes_in_context (cuda_state *s, int n, int network, gpunet_cuda_graph_counts *out,
    char **error_text)
{
  gpunet_cuda_enqueue_func fn = network ? enqueue_network : enqueue_forward;
  gpunet_status st = bench_warm_up (s, n, fn, error_text);
  if (st != GPUNET_OK)
    return st;
  cudaGraph_t graph = NULL;
  char *why = gpunet_cuda_capture_raw (&graph, s->ctx.stream, fn, s);
  if (why) {
    st = gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND, "capturing %s (%d images) as a CUDA "
        "graph: %s", network ? "the network" : "the forward pass", n, why);
    free (why);
    return st;
  }
  cudaError_t e = gpunet_cuda_graph_count (graph, out);
  cudaGraphDestroy (graph);
  if (e != cudaSuccess)
    return gpunet_cuda_fail_rt (error_text, e,
        "counting the captured graph's nodes (cudaGraphGetNodes, cudaGraphNodeGetType)");
  return GPUNET_OK;
}

static gpunet_status
cuda_graph_nodes (void *state, int n, int network, gpunet_cuda_graph_counts *out,
    char **error_text)
{
  cuda_state *s = (cuda_state *) state;
  memset (out, 0, sizeof *out);
  gpunet_cuda_ctx_scope scope;
  gpunet_status st = gpunet_cuda_ctx_enter (s->ctx.cu_ctx, &scope, error_text);
  if (st != GPUNET_OK)
    return st;
  st = graph_nodes_in_context (s, n, network, out, error_text);
  return gpunet_cuda_ctx_leave (s->ctx.cu_ctx, &scope, st, error_text);
}

static int
cuda_storage_bytes (const void *state)
{
  return (int) ((const cuda_state *) state)->esize;
}

static const gpunet_cuda_bench_api cuda_bench_api = {
  cuda_profile,
  cuda_storage_bytes,
  cuda_forward_time,
  cuda_net_time,
  cuda_graph_nodes,
};

/* The benchmark hooks (see cuda_module.h). */
extern "C" __attribute__ ((visibility ("default"))) const gpunet_cuda_bench_api *
gpunet_cuda_bench_api_entry (int abi_version, size_t op_size, char **error_text)
{
  return abi_ok (abi_version, op_size, error_text) ? &cuda_bench_api : NULL;
}
