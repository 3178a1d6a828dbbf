/* conv2d.cu: dense and grouped convolutions through cuDNN's (legacy) convolution API:
 * descriptors and the algorithm are chosen once at planning for max_batch, the run is
 * cudnnConvolutionForward into the output followed by our epilogue kernel
 * act(y + bias) + residual.  fp32: FMA maths (no TF32), so results match the CPU oracle;
 * fp16: NCHW half tensors and filters, float compute type, tensor-core maths allowed.
 * On the NHWC network (l->nhwc) the same calls describe NHWC tensors and KRSC filters,
 * and each batch size first tries one cuDNN graph of conv + bias + activation + residual
 * (conv_graph.cu); the legacy call and our NHWC epilogue run where cuDNN refuses it. */
#include <stdlib.h>
#include <string.h>

#include "conv_graph.h"
#include "cuda_internal.h"
#include "cuda_math.h"

static cudnnDataType_t
data_type (const gpunet_cuda_layer *l)
{
  return l->dtype == GPUNET_CUDA_F16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

/* Sets the x/y tensor descriptors for n images and checks cuDNN's output shape. */
static gpunet_status
describe (gpunet_cuda_layer *l, int n, const char *name, char **error_text)
{
  const gpunet_conv2d_params *p = &l->op->p.conv2d;
  const cudnnDataType_t dt = data_type (l);
  const cudnnTensorFormat_t fmt = l->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  l->desc_n = 0;   /* until both descriptors describe n: a failure half-way leaves no match */
  GPUNET_DNN_TRY (cudnnSetTensor4dDescriptor (l->xd, fmt, dt, n,
      p->cin, p->ih, p->iw), error_text, "cudnnSetTensor4dDescriptor (input of %s)", name);
  GPUNET_DNN_TRY (cudnnSetTensor4dDescriptor (l->yd, fmt, dt, n,
      p->cout, p->oh, p->ow), error_text, "cudnnSetTensor4dDescriptor (output of %s)", name);
  int on = 0, oc = 0, oh = 0, ow = 0;
  GPUNET_DNN_TRY (cudnnGetConvolution2dForwardOutputDim (l->cd, l->xd, l->wd, &on, &oc, &oh, &ow),
      error_text, "cudnnGetConvolution2dForwardOutputDim (%s)", name);
  if (on != n || oc != p->cout || oh != p->oh || ow != p->ow)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND,
        "%s: cuDNN computes an output of %dx%dx%dx%d but the graph says %dx%dx%dx%d", name, on,
        oc, oh, ow, n, p->cout, p->oh, p->ow);
  l->desc_n = n;
  return GPUNET_OK;
}

/* nhwctune=on: the fastest of the candidate plans for layer l at n images, each run
 * GPUNET_CG_TUNE_RUNS times after one untimed run on scratch tensors of the layer's shapes
 * (the layer's own weights); the kernels' time does not depend on the values.  Returns
 * its index (gpunet_cg_tune_best: a candidate cuDNN failed to run is never kept), 0 (the
 * heuristics' first) when the timing itself fails, -1 when no candidate ran; `why` says
 * what failed. */
enum { GPUNET_CG_TUNE_PLANS = 4, GPUNET_CG_TUNE_RUNS = 5 };

static int
tune_pick (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int n, cudnnBackendDescriptor_t *plans,
    const size_t *ws, int n_plans, char *why, size_t why_len)
{
  const gpunet_conv2d_params *p = &l->op->p.conv2d;
  const size_t es = gpunet_cuda_dtype_size (l->dtype);
  const size_t xb = (size_t) n * p->ih * p->iw * p->cin * es;
  const size_t yb = (size_t) n * p->oh * p->ow * p->cout * es;
  size_t wsb = 0;
  for (int i = 0; i < n_plans; i++)
    wsb = ws[i] > wsb ? ws[i] : wsb;
  void *x = NULL, *y = NULL, *z = NULL, *work = NULL;
  cudaEvent_t ev[2] = { NULL, NULL };
  int ran[GPUNET_CG_TUNE_PLANS] = { 0 };
  float times[GPUNET_CG_TUNE_PLANS] = { 0.0f };
  if (n_plans > GPUNET_CG_TUNE_PLANS)
    n_plans = GPUNET_CG_TUNE_PLANS;
  cudaError_t e = cudaMalloc (&x, xb);
  if (e == cudaSuccess)
    e = cudaMalloc (&y, yb);
  if (e == cudaSuccess && l->op->residual >= 0)
    e = cudaMalloc (&z, yb);
  if (e == cudaSuccess && wsb)
    e = cudaMalloc (&work, wsb);
  if (e == cudaSuccess)
    e = cudaMemsetAsync (x, 0, xb, ctx->stream);
  if (e == cudaSuccess && z)
    e = cudaMemsetAsync (z, 0, yb, ctx->stream);
  for (int i = 0; i < 2 && e == cudaSuccess; i++)
    e = cudaEventCreate (&ev[i]);
  for (int i = 0; i < n_plans && e == cudaSuccess; i++) {
    cudnnStatus_t ds = gpunet_cg_execute (ctx->dnn, plans[i], x, l->w, l->b, z, y, work);
    if (ds == CUDNN_STATUS_SUCCESS)
      e = cudaEventRecord (ev[0], ctx->stream);
    for (int r = 0; r < GPUNET_CG_TUNE_RUNS && ds == CUDNN_STATUS_SUCCESS && e == cudaSuccess; r++)
      ds = gpunet_cg_execute (ctx->dnn, plans[i], x, l->w, l->b, z, y, work);
    if (ds == CUDNN_STATUS_SUCCESS && e == cudaSuccess)
      e = cudaEventRecord (ev[1], ctx->stream);
    if (ds == CUDNN_STATUS_SUCCESS && e == cudaSuccess)
      e = cudaEventSynchronize (ev[1]);
    if (ds == CUDNN_STATUS_SUCCESS && e == cudaSuccess)
      e = cudaEventElapsedTime (&times[i], ev[0], ev[1]);
    if (ds != CUDNN_STATUS_SUCCESS) {
      snprintf (why, why_len, "tuning: candidate %d failed (%s)", i, cudnnGetErrorString (ds));
      continue;   /* that candidate is out; the others are still timed */
    }
    ran[i] = e == cudaSuccess;
  }
  int best = gpunet_cg_tune_best (ran, times, n_plans);
  if (e != cudaSuccess) {
    snprintf (why, why_len, "tuning failed (%s): the heuristics' first plan is kept",
        cudaGetErrorString (e));
    best = 0;
    cudaGetLastError ();   /* not sticky: the session goes on */
  } else if (best < 0) {
    snprintf (why, why_len, "tuning: none of the %d candidate plans ran", n_plans);
  }
  cudaStreamSynchronize (ctx->stream);
  for (int i = 0; i < 2; i++)
    if (ev[i])
      cudaEventDestroy (ev[i]);
  void *bufs[] = { x, y, z, work };
  for (int i = 0; i < 4; i++)
    if (bufs[i])
      cudaFree (bufs[i]);
  return best;
}

/* The NHWC network: tries the cuDNN graph of layer l for n images within ws_limit bytes
 * of workspace (once per batch size); on success gplan[n] is set and *ws its workspace.
 * A refusal is not an error: `why` says what cuDNN refused, and the layer runs the legacy
 * call for that batch. */
static int
graph_try (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int n, size_t ws_limit, size_t *ws,
    char *why, size_t why_len)
{
  const gpunet_conv2d_params *p = &l->op->p.conv2d;
  *ws = 0;
  if (!l->gplan || n < 1 || n > l->max_n || l->gtried[n])
    return l->gplan && n >= 1 && n <= l->max_n && l->gplan[n] != NULL;
  l->gtried[n] = 1;
  if (p->groups != 1) {
    snprintf (why, why_len, "grouped convolution (%d groups)", p->groups);
    return 0;
  }
  gpunet_cg_shape sh;
  memset (&sh, 0, sizeof sh);
  sh.n = n;
  sh.cin = p->cin, sh.cout = p->cout, sh.ih = p->ih, sh.iw = p->iw, sh.oh = p->oh, sh.ow = p->ow;
  sh.kernel = p->kernel, sh.stride = p->stride, sh.pad = p->pad;
  sh.act = p->act == GPUNET_EPI_RELU ? GPUNET_CG_ACT_RELU
      : p->act == GPUNET_EPI_SWISH ? GPUNET_CG_ACT_SWISH : GPUNET_CG_ACT_NONE;
  sh.has_bias = l->b != NULL;
  sh.has_residual = l->op->residual >= 0;
  sh.half = l->dtype == GPUNET_CUDA_F16;
  gpunet_cg_desc g;
  cudnnBackendDescriptor_t plans[GPUNET_CG_TUNE_PLANS] = { NULL };
  size_t pws[GPUNET_CG_TUNE_PLANS] = { 0 };
  int engines[GPUNET_CG_TUNE_PLANS] = { -1 }, n_plans = 0;
  cudnnStatus_t st = gpunet_cg_desc_build (&g, &sh, why, why_len);
  if (st == CUDNN_STATUS_SUCCESS)
    st = gpunet_cg_graph_finalize (&g, ctx->dnn, why, why_len);
  if (st == CUDNN_STATUS_SUCCESS)
    st = gpunet_cg_plans (&g, ctx->dnn, ws_limit, ctx->nhwc_tune ? GPUNET_CG_TUNE_PLANS : 1,
        plans, pws, engines, &n_plans, why, why_len);
  gpunet_cg_desc_destroy (&g);
  if (st != CUDNN_STATUS_SUCCESS || n_plans < 1)
    return 0;
  char tune_why[160] = "";
  const int pick = n_plans > 1 ? tune_pick (ctx, l, n, plans, pws, n_plans, tune_why,
      sizeof tune_why) : 0;
  if (tune_why[0] && pick >= 0) {   /* else the caller reports the refusal */
    char name[128];
    gpunet_cuda_op_name (l->op, l->index, name, sizeof name);
    fprintf (stderr, "gpunet-cuda: %s at batch %d: %s\n", name, n, tune_why);
  }
  for (int i = 0; i < n_plans; i++)
    if (i != pick)
      cudnnBackendDestroyDescriptor (plans[i]);
  if (pick < 0) {
    /* every candidate failed to run: the layer takes the legacy call at this batch */
    snprintf (why, why_len, "%s", tune_why);
    return 0;
  }
  l->gplan[n] = plans[pick];
  *ws = pws[pick];
  if (n == l->max_n)
    l->gengine = engines[pick];
  return 1;
}

gpunet_status
gpunet_cuda_conv_plan (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int max_n, size_t ws_limit,
    char **error_text)
{
  const gpunet_conv2d_params *p = &l->op->p.conv2d;
  char name[128];
  gpunet_cuda_op_name (l->op, l->index, name, sizeof name);
  if (p->groups < 1 || p->cin % p->groups || p->cout % p->groups
      || gpunet_conv_out_dim (p->ih, p->kernel, p->stride, p->pad) != p->oh
      || gpunet_conv_out_dim (p->iw, p->kernel, p->stride, p->pad) != p->ow)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "%s: inconsistent convolution shape", name);

  GPUNET_DNN_TRY (cudnnCreateTensorDescriptor (&l->xd), error_text, "cudnnCreateTensorDescriptor (%s)", name);
  GPUNET_DNN_TRY (cudnnCreateTensorDescriptor (&l->yd), error_text, "cudnnCreateTensorDescriptor (%s)", name);
  GPUNET_DNN_TRY (cudnnCreateFilterDescriptor (&l->wd), error_text, "cudnnCreateFilterDescriptor (%s)", name);
  GPUNET_DNN_TRY (cudnnCreateConvolutionDescriptor (&l->cd), error_text,
      "cudnnCreateConvolutionDescriptor (%s)", name);
  const int half = l->dtype == GPUNET_CUDA_F16;
  GPUNET_DNN_TRY (cudnnSetFilter4dDescriptor (l->wd, data_type (l),
      l->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, p->cout,
      p->cin / p->groups, p->kernel, p->kernel), error_text, "cudnnSetFilter4dDescriptor (%s)", name);
  GPUNET_DNN_TRY (cudnnSetConvolution2dDescriptor (l->cd, p->pad, p->pad, p->stride, p->stride, 1, 1,
      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), error_text,
      "cudnnSetConvolution2dDescriptor (%s)", name);
  GPUNET_DNN_TRY (cudnnSetConvolutionGroupCount (l->cd, p->groups), error_text,
      "cudnnSetConvolutionGroupCount (%s)", name);
  /* fp16: half in and out, float accumulation (compute type above), tensor cores allowed */
  GPUNET_DNN_TRY (cudnnSetConvolutionMathType (l->cd, half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
      error_text, "cudnnSetConvolutionMathType (%s)", name);
  gpunet_status st = describe (l, max_n, name, error_text);
  if (st != GPUNET_OK)
    return st;

  /* Heuristic choice (no benchmarking): the first algorithm cuDNN ranks that works within
   * the workspace limit, in plain FMA maths for fp32 (no TF32) and in tensor-core or
   * plain maths for fp16 (never a conversion to a narrower type); implicit GEMM (no
   * workspace) otherwise.  cudnnGetConvolutionForwardAlgorithm_v7 ranks algorithms in
   * DEFAULT and TENSOR_OP maths whatever the descriptor says, so each candidate is checked
   * with the math type it will run in: its workspace is asked again after setting it, and
   * a candidate cuDNN then refuses (or that needs more) is skipped. */
  int max_count = 0, got = 0;
  GPUNET_DNN_TRY (cudnnGetConvolutionForwardAlgorithmMaxCount (ctx->dnn, &max_count), error_text,
      "cudnnGetConvolutionForwardAlgorithmMaxCount (%s)", name);
  if (max_count < 1)
    max_count = 1;
  cudnnConvolutionFwdAlgoPerf_t *perf =
      (cudnnConvolutionFwdAlgoPerf_t *) calloc ((size_t) max_count, sizeof *perf);
  if (!perf)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning %s", name);
  /* (cudnnFindConvolutionForwardAlgorithm, which times each algorithm, was tried on an
   * H100: its choices made every model 1.3-4.7x slower than this ranking; docs/cuda.md) */
  cudnnStatus_t ds = cudnnGetConvolutionForwardAlgorithm_v7 (ctx->dnn, l->xd, l->wd, l->cd, l->yd,
      max_count, &got, perf);
  if (ds != CUDNN_STATUS_SUCCESS) {
    free (perf);
    char what[192];
    snprintf (what, sizeof what, "cudnnGetConvolutionForwardAlgorithm_v7 (%s)", name);
    return gpunet_cuda_fail_dnn (error_text, ds, what);
  }
  int chosen = 0;
  for (int i = 0; i < got && !chosen; i++) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_limit
        || !(perf[i].mathType == CUDNN_FMA_MATH || perf[i].mathType == CUDNN_DEFAULT_MATH
            || (half && perf[i].mathType == CUDNN_TENSOR_OP_MATH)))
      continue;
    /* fp32 stays FMA: DEFAULT would allow TF32 on Ampere and newer */
    const cudnnMathType_t math = half ? perf[i].mathType : CUDNN_FMA_MATH;
    size_t need = 0;
    if (cudnnSetConvolutionMathType (l->cd, math) == CUDNN_STATUS_SUCCESS
        && cudnnGetConvolutionForwardWorkspaceSize (ctx->dnn, l->xd, l->wd, l->cd, l->yd,
            perf[i].algo, &need) == CUDNN_STATUS_SUCCESS
        && need <= ws_limit) {
      l->algo_max = perf[i].algo;
      l->ws_max = need;
      chosen = 1;
    }
  }
  free (perf);
  if (!chosen) {
    l->algo_max = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    GPUNET_DNN_TRY (cudnnSetConvolutionMathType (l->cd, half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
        error_text, "cudnnSetConvolutionMathType (%s, implicit GEMM)", name);
    GPUNET_DNN_TRY (cudnnGetConvolutionForwardWorkspaceSize (ctx->dnn, l->xd, l->wd, l->cd, l->yd,
        l->algo_max, &l->ws_max), error_text, "cudnnGetConvolutionForwardWorkspaceSize (%s)", name);
  }
  l->algo = l->algo_max;
  if (l->nhwc) {
    l->max_n = max_n;
    l->gengine = -1;
    l->gplan = (cudnnBackendDescriptor_t *) calloc ((size_t) max_n + 1, sizeof *l->gplan);
    l->gtried = (unsigned char *) calloc ((size_t) max_n + 1, 1);
    if (!l->gplan || !l->gtried)
      return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning %s", name);
    char why[320] = "";
    size_t gws = 0;
    if (graph_try (ctx, l, max_n, ws_limit, &gws, why, sizeof why)) {
      if (gws > l->ws_max)
        l->ws_max = gws;
    } else {
      /* the layer keeps the legacy call for every batch size */
      l->graph_refused = 1;
      fprintf (stderr, "gpunet-cuda: %s falls back to cuDNN's convolution and our epilogue: "
          "the fused cuDNN graph was refused (%s)\n", name, why[0] ? why : "no reason given");
    }
  }
  return GPUNET_OK;
}

gpunet_status
gpunet_cuda_conv_set_batch (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int n,
    char **error_text)
{
  char name[128];
  if (l->nhwc && !l->graph_refused && n >= 1 && n <= l->max_n && !l->gtried[n]) {
    char why[320] = "";
    size_t gws = 0;
    if (!graph_try (ctx, l, n, ctx->workspace_bytes, &gws, why, sizeof why)) {
      gpunet_cuda_op_name (l->op, l->index, name, sizeof name);
      fprintf (stderr, "gpunet-cuda: %s at batch %d falls back to cuDNN's convolution and our "
          "epilogue: the fused cuDNN graph was refused (%s)\n", name, n, why[0] ? why : "no reason given");
    }
  }
  if (l->desc_n == n)
    return GPUNET_OK;
  gpunet_cuda_op_name (l->op, l->index, name, sizeof name);
  gpunet_status st = describe (l, n, name, error_text);
  if (st != GPUNET_OK)
    return st;
  /* keep the planned algorithm when it still fits the workspace, else implicit GEMM */
  size_t need = 0;
  cudnnStatus_t ds = cudnnGetConvolutionForwardWorkspaceSize (ctx->dnn, l->xd, l->wd, l->cd,
      l->yd, l->algo_max, &need);
  l->algo = l->algo_max;
  if (ds != CUDNN_STATUS_SUCCESS || need > ctx->workspace_bytes) {
    l->algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    GPUNET_DNN_TRY (cudnnGetConvolutionForwardWorkspaceSize (ctx->dnn, l->xd, l->wd, l->cd, l->yd,
        l->algo, &need), error_text, "cudnnGetConvolutionForwardWorkspaceSize (%s, batch %d)",
        name, n);
    if (need > ctx->workspace_bytes)
      return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND,
          "%s: batch %d needs %zu bytes of cuDNN workspace, planned %zu", name, n, need,
          ctx->workspace_bytes);
  }
  return GPUNET_OK;
}

gpunet_status
gpunet_cuda_conv_run (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, const void *in,
    const void *residual, void *out, int n, char **error_text)
{
  const gpunet_conv2d_params *p = &l->op->p.conv2d;
  const float one = 1.0f, zero = 0.0f;   /* float scaling factors for float and half data */
  gpunet_status st = gpunet_cuda_conv_set_batch (ctx, l, n, error_text);
  if (st != GPUNET_OK)
    return st;
  if (l->nhwc && l->gplan && n >= 1 && n <= l->max_n && l->gplan[n]) {
    cudnnStatus_t gs = gpunet_cg_execute (ctx->dnn, l->gplan[n], in, l->w, l->b, residual, out,
        ctx->workspace);
    if (gs != CUDNN_STATUS_SUCCESS) {
      char what[160], call[256];
      gpunet_cuda_op_name (l->op, l->index, what, sizeof what);
      snprintf (call, sizeof call, "cudnnBackendExecute (fused graph of %s, batch %d)", what, n);
      return gpunet_cuda_fail_dnn (error_text, gs, call);
    }
    return GPUNET_OK;
  }
  cudnnStatus_t ds = cudnnConvolutionForward (ctx->dnn, &one, l->xd, in, l->wd, l->w, l->cd,
      l->algo, ctx->workspace, ctx->workspace_bytes, &zero, l->yd, out);
  if (ds != CUDNN_STATUS_SUCCESS) {
    char what[160];
    gpunet_cuda_op_name (l->op, l->index, what, sizeof what);
    char call[200];
    snprintf (call, sizeof call, "cudnnConvolutionForward (%s)", what);
    return gpunet_cuda_fail_dnn (error_text, ds, call);
  }
  cudaError_t e = l->nhwc
      ? gpunet_cuda_epilogue_nhwc (l->dtype, out, l->b, residual, n, p->cout,
          (long long) p->oh * p->ow, p->act, ctx->stream)
      : gpunet_cuda_epilogue (l->dtype, out, l->b, residual, n, p->cout,
          (long long) p->oh * p->ow, p->act, ctx->stream);
  if (e != cudaSuccess) {
    char what[160];
    gpunet_cuda_op_name (l->op, l->index, what, sizeof what);
    char call[200];
    snprintf (call, sizeof call, "epilogue kernel launch (%s)", what);
    return gpunet_cuda_fail_rt (error_text, e, call);
  }
  return GPUNET_OK;
}

void
gpunet_cuda_conv_clear (gpunet_cuda_layer *l)
{
  if (l->xd)
    cudnnDestroyTensorDescriptor (l->xd);
  if (l->yd)
    cudnnDestroyTensorDescriptor (l->yd);
  if (l->wd)
    cudnnDestroyFilterDescriptor (l->wd);
  if (l->cd)
    cudnnDestroyConvolutionDescriptor (l->cd);
  if (l->gplan)
    for (int i = 0; i <= l->max_n; i++)
      if (l->gplan[i])
        cudnnBackendDestroyDescriptor (l->gplan[i]);
  free (l->gplan);
  free (l->gtried);
  l->gplan = NULL;
  l->gtried = NULL;
  l->xd = l->yd = NULL;
  l->wd = NULL;
  l->cd = NULL;
  l->desc_n = 0;
}
