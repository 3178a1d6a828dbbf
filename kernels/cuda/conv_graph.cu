/* conv_graph.cu: one convolution of the NHWC network as one cuDNN operation graph (the
 * cuDNN 9 backend API, no frontend library): conv -> add bias -> activation (relu or
 * swish) -> add residual, intermediates virtual in float, input, filter (KRSC), residual
 * and output in the session's storage type, NHWC strides.  The engine heuristics (mode
 * A) rank the engine configurations; the first whose execution plan finalizes within the
 * workspace limit is kept, one plan per batch size (tensor shapes include the batch).
 * When none finalizes the caller falls back to the legacy call plus our epilogue and says
 * which layer did.  Descriptor building is split from finalizing so the CPU tests
 * (tests/test_cuda_graph_api.c) can build and finalize the tensor and operation
 * descriptors without a GPU. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conv_graph.h"

/* The backend API's calls return a status; these keep a failing call's name. */
#define CG_TRY(call, what) \
  do { \
    cudnnStatus_t s_ = (call); \
    if (s_ != CUDNN_STATUS_SUCCESS) { \
      cg_why (why, why_len, s_, what); \
      return s_; \
    } \
  } while (0)

static void
cg_why (char *why, size_t why_len, cudnnStatus_t st, const char *what)
{
  if (why && why_len)
    snprintf (why, why_len, "%s: %s", what, cudnnGetErrorString (st));
}

static cudnnStatus_t
cg_set (cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
    cudnnBackendAttributeType_t type, int64_t count, const void *values)
{
  return cudnnBackendSetAttribute (d, name, type, count, values);
}

void
gpunet_cg_desc_destroy (gpunet_cg_desc *g)
{
  cudnnBackendDescriptor_t *all[] = { &g->x, &g->w, &g->b, &g->z, &g->y, &g->t[0], &g->t[1],
    &g->t[2], &g->conv, &g->pw[0], &g->pw[1], &g->pw[2], &g->op[0], &g->op[1], &g->op[2],
    &g->op[3], &g->graph };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (*all[i]) {
      cudnnBackendDestroyDescriptor (*all[i]);
      *all[i] = NULL;
    }
  g->n_ops = 0;
}

/* A finalized tensor descriptor: dims n, c, h, w (always in that order), NHWC strides
 * (c innermost), 16-byte alignment. */
static cudnnStatus_t
cg_tensor (cudnnBackendDescriptor_t *out, int64_t uid, cudnnDataType_t dt, int64_t n, int64_t c,
    int64_t h, int64_t w, int is_virtual, char *why, size_t why_len)
{
  CG_TRY (cudnnBackendCreateDescriptor (CUDNN_BACKEND_TENSOR_DESCRIPTOR, out),
      "cudnnBackendCreateDescriptor (tensor)");
  const int64_t dims[4] = { n, c, h, w };
  const int64_t strides[4] = { c * h * w, 1, w * c, c };
  const int64_t align = 16;
  const bool virt = is_virtual != 0;
  CG_TRY (cg_set (*out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt),
      "tensor data type");
  CG_TRY (cg_set (*out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims), "tensor dimensions");
  CG_TRY (cg_set (*out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides), "tensor strides");
  CG_TRY (cg_set (*out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid), "tensor id");
  CG_TRY (cg_set (*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align),
      "tensor alignment");
  CG_TRY (cg_set (*out, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt),
      "tensor virtual flag");
  CG_TRY (cudnnBackendFinalize (*out), "cudnnBackendFinalize (tensor)");
  return CUDNN_STATUS_SUCCESS;
}

/* A finalized pointwise operation y = mode(x [, b]). */
static cudnnStatus_t
cg_pointwise (cudnnBackendDescriptor_t *pw, cudnnBackendDescriptor_t *op,
    cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
    cudnnBackendDescriptor_t y, char *why, size_t why_len)
{
  const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  CG_TRY (cudnnBackendCreateDescriptor (CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw),
      "cudnnBackendCreateDescriptor (pointwise)");
  CG_TRY (cg_set (*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode),
      "pointwise mode");
  CG_TRY (cg_set (*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec),
      "pointwise precision");
  CG_TRY (cudnnBackendFinalize (*pw), "cudnnBackendFinalize (pointwise)");
  CG_TRY (cudnnBackendCreateDescriptor (CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op),
      "cudnnBackendCreateDescriptor (pointwise operation)");
  CG_TRY (cg_set (*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      1, pw), "pointwise operation descriptor");
  CG_TRY (cg_set (*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x),
      "pointwise input");
  if (b)
    CG_TRY (cg_set (*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
        &b), "pointwise second input");
  CG_TRY (cg_set (*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y),
      "pointwise output");
  CG_TRY (cudnnBackendFinalize (*op), "cudnnBackendFinalize (pointwise operation)");
  return CUDNN_STATUS_SUCCESS;
}

int
gpunet_cg_n_ops (int has_bias, int act, int has_residual)
{
  return 1 + (has_bias != 0) + (act != GPUNET_CG_ACT_NONE) + (has_residual != 0);
}

cudnnStatus_t
gpunet_cg_desc_build (gpunet_cg_desc *g, const gpunet_cg_shape *sh, char *why, size_t why_len)
{
  memset (g, 0, sizeof *g);
  if (why && why_len)
    why[0] = '\0';
  const cudnnDataType_t io = sh->half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  cudnnStatus_t st;
  /* the tensors: what the variant pack binds, and up to three virtual intermediates */
  if ((st = cg_tensor (&g->x, GPUNET_CG_UID_X, io, sh->n, sh->cin, sh->ih, sh->iw, 0, why,
      why_len)) != CUDNN_STATUS_SUCCESS)
    return st;
  /* the filter: dims k, c, r, s with KRSC strides (the NHWC filter layout) */
  if ((st = cg_tensor (&g->w, GPUNET_CG_UID_W, io, sh->cout, sh->cin, sh->kernel, sh->kernel, 0,
      why, why_len)) != CUDNN_STATUS_SUCCESS)
    return st;
  if (sh->has_bias && (st = cg_tensor (&g->b, GPUNET_CG_UID_B, f32, 1, sh->cout, 1, 1, 0, why,
      why_len)) != CUDNN_STATUS_SUCCESS)
    return st;
  if (sh->has_residual && (st = cg_tensor (&g->z, GPUNET_CG_UID_Z, io, sh->n, sh->cout, sh->oh,
      sh->ow, 0, why, why_len)) != CUDNN_STATUS_SUCCESS)
    return st;
  if ((st = cg_tensor (&g->y, GPUNET_CG_UID_Y, io, sh->n, sh->cout, sh->oh, sh->ow, 0, why,
      why_len)) != CUDNN_STATUS_SUCCESS)
    return st;
  const int n_ops = gpunet_cg_n_ops (sh->has_bias, sh->act, sh->has_residual);
  /* op i writes t[i] (virtual, float) except the last, which writes y */
  for (int i = 0; i + 1 < n_ops; i++)
    if ((st = cg_tensor (&g->t[i], GPUNET_CG_UID_T0 + i, f32, sh->n, sh->cout, sh->oh, sh->ow, 1,
        why, why_len)) != CUDNN_STATUS_SUCCESS)
      return st;
#define CG_OUT(i) ((i) + 1 == n_ops ? g->y : g->t[i])

  /* the convolution */
  CG_TRY (cudnnBackendCreateDescriptor (CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &g->conv),
      "cudnnBackendCreateDescriptor (convolution)");
  const int64_t dims = 2, one[2] = { 1, 1 }, stride[2] = { sh->stride, sh->stride },
      pad[2] = { sh->pad, sh->pad };
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  CG_TRY (cg_set (g->conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32),
      "convolution compute type");
  CG_TRY (cg_set (g->conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode),
      "convolution mode");
  CG_TRY (cg_set (g->conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims),
      "convolution spatial dims");
  CG_TRY (cg_set (g->conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one),
      "convolution dilations");
  CG_TRY (cg_set (g->conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride),
      "convolution strides");
  CG_TRY (cg_set (g->conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad),
      "convolution padding");
  CG_TRY (cg_set (g->conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad),
      "convolution padding");
  CG_TRY (cudnnBackendFinalize (g->conv), "cudnnBackendFinalize (convolution)");

  const float alpha = 1.0f, beta = 0.0f;
  const cudnnBackendDescriptor_t conv_out = CG_OUT (0);
  CG_TRY (cudnnBackendCreateDescriptor (CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
      &g->op[0]), "cudnnBackendCreateDescriptor (convolution operation)");
  CG_TRY (cg_set (g->op[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->x), "convolution input");
  CG_TRY (cg_set (g->op[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->w), "convolution filter");
  CG_TRY (cg_set (g->op[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv_out), "convolution output");
  CG_TRY (cg_set (g->op[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->conv), "convolution descriptor");
  CG_TRY (cg_set (g->op[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
      &alpha), "convolution alpha");
  CG_TRY (cg_set (g->op[0], CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1,
      &beta), "convolution beta");
  CG_TRY (cudnnBackendFinalize (g->op[0]), "cudnnBackendFinalize (convolution operation)");

  /* the epilogue in our order: act(conv + bias) + residual */
  int i = 1, pwi = 0;
  if (sh->has_bias) {
    if ((st = cg_pointwise (&g->pw[pwi], &g->op[i], CUDNN_POINTWISE_ADD, CG_OUT (i - 1), g->b,
        CG_OUT (i), why, why_len)) != CUDNN_STATUS_SUCCESS)
      return st;
    i++, pwi++;
  }
  if (sh->act != GPUNET_CG_ACT_NONE) {
    const cudnnPointwiseMode_t m = sh->act == GPUNET_CG_ACT_RELU ? CUDNN_POINTWISE_RELU_FWD
        : CUDNN_POINTWISE_SWISH_FWD;
    if ((st = cg_pointwise (&g->pw[pwi], &g->op[i], m, CG_OUT (i - 1), NULL, CG_OUT (i), why,
        why_len)) != CUDNN_STATUS_SUCCESS)
      return st;
    i++, pwi++;
  }
  if (sh->has_residual) {
    if ((st = cg_pointwise (&g->pw[pwi], &g->op[i], CUDNN_POINTWISE_ADD, CG_OUT (i - 1), g->z,
        CG_OUT (i), why, why_len)) != CUDNN_STATUS_SUCCESS)
      return st;
    i++, pwi++;
  }
#undef CG_OUT
  g->n_ops = i;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
gpunet_cg_graph_finalize (gpunet_cg_desc *g, cudnnHandle_t handle, char *why, size_t why_len)
{
  CG_TRY (cudnnBackendCreateDescriptor (CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph),
      "cudnnBackendCreateDescriptor (operation graph)");
  CG_TRY (cg_set (g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      g->n_ops, g->op), "operation graph ops");
  CG_TRY (cg_set (g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle),
      "operation graph handle");
  CG_TRY (cudnnBackendFinalize (g->graph), "cudnnBackendFinalize (operation graph)");
  return CUDNN_STATUS_SUCCESS;
}

/* Execution plans of the heuristics' ranked configurations, the first max_plans that
 * finalize with at most ws_limit bytes of workspace.  *n_plans is 0 when none does. */
cudnnStatus_t
gpunet_cg_plans (gpunet_cg_desc *g, cudnnHandle_t handle, size_t ws_limit, int max_plans,
    cudnnBackendDescriptor_t *plans, size_t *ws, int *engines, int *n_plans, char *why,
    size_t why_len)
{
  *n_plans = 0;
  cudnnBackendDescriptor_t heur = NULL;
  cudnnStatus_t st = cudnnBackendCreateDescriptor (CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur);
  if (st != CUDNN_STATUS_SUCCESS) {
    cg_why (why, why_len, st, "cudnnBackendCreateDescriptor (engine heuristics)");
    return st;
  }
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  int64_t count = 0;
  cudnnBackendDescriptor_t cfg[GPUNET_CG_MAX_CONFIGS] = { NULL };
  int64_t n_cfg = 0;
  st = cg_set (heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
      &g->graph);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cg_set (heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnBackendFinalize (heur);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnBackendGetAttribute (heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL);
  if (st != CUDNN_STATUS_SUCCESS) {
    cg_why (why, why_len, st, "engine heuristics (mode A)");
    cudnnBackendDestroyDescriptor (heur);
    return st;
  }
  if (count > GPUNET_CG_MAX_CONFIGS)
    count = GPUNET_CG_MAX_CONFIGS;
  for (int64_t i = 0; i < count && st == CUDNN_STATUS_SUCCESS; i++)
    st = cudnnBackendCreateDescriptor (CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg[i]);
  if (st == CUDNN_STATUS_SUCCESS && count > 0)
    st = cudnnBackendGetAttribute (heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &n_cfg, cfg);
  if (st != CUDNN_STATUS_SUCCESS)
    cg_why (why, why_len, st, "engine heuristics results");
  if (st == CUDNN_STATUS_SUCCESS && n_cfg == 0)
    cg_why (why, why_len, CUDNN_STATUS_NOT_SUPPORTED,
        "engine heuristics: no engine configuration for this graph");
  for (int64_t i = 0; st == CUDNN_STATUS_SUCCESS && i < n_cfg && *n_plans < max_plans; i++) {
    cudnnBackendDescriptor_t p = NULL;
    int64_t need = 0, got = 0;
    cudnnStatus_t ps = cudnnBackendCreateDescriptor (CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &p);
    if (ps == CUDNN_STATUS_SUCCESS)
      ps = cg_set (p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    if (ps == CUDNN_STATUS_SUCCESS)
      ps = cg_set (p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
          &cfg[i]);
    if (ps == CUDNN_STATUS_SUCCESS)
      ps = cudnnBackendFinalize (p);
    if (ps == CUDNN_STATUS_SUCCESS)
      ps = cudnnBackendGetAttribute (p, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
          CUDNN_TYPE_INT64, 1, &got, &need);
    if (ps == CUDNN_STATUS_SUCCESS && need >= 0 && (size_t) need <= ws_limit) {
      const int k = (*n_plans)++;
      plans[k] = p;
      ws[k] = (size_t) need;
      engines[k] = -1;
      /* the engine's global index, for the log */
      cudnnBackendDescriptor_t eng = NULL;
      int64_t idx = -1, cnt = 0;
      if (cudnnBackendCreateDescriptor (CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) == CUDNN_STATUS_SUCCESS) {
        if (cudnnBackendGetAttribute (cfg[i], CUDNN_ATTR_ENGINECFG_ENGINE,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cnt, &eng) == CUDNN_STATUS_SUCCESS
            && cudnnBackendGetAttribute (eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                &cnt, &idx) == CUDNN_STATUS_SUCCESS)
          engines[k] = (int) idx;
        cudnnBackendDestroyDescriptor (eng);
      }
      continue;
    }
    if (ps == CUDNN_STATUS_SUCCESS)
      snprintf (why, why_len, "every engine configuration needs more than %zu bytes of workspace",
          ws_limit);
    else
      cg_why (why, why_len, ps, "execution plan (each ranked engine configuration)");
    if (p)
      cudnnBackendDestroyDescriptor (p);
  }
  for (int64_t i = 0; i < count; i++)
    if (cfg[i])
      cudnnBackendDestroyDescriptor (cfg[i]);
  cudnnBackendDestroyDescriptor (heur);
  if (st != CUDNN_STATUS_SUCCESS) {
    for (int k = 0; k < *n_plans; k++)
      cudnnBackendDestroyDescriptor (plans[k]);
    *n_plans = 0;
    return st;
  }
  return *n_plans ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
}

cudnnStatus_t
gpunet_cg_execute (cudnnHandle_t handle, cudnnBackendDescriptor_t plan, const void *x,
    const void *w, const float *b, const void *z, void *y, void *workspace)
{
  int64_t uids[5];
  void *ptrs[5];
  int64_t k = 0;
  uids[k] = GPUNET_CG_UID_X, ptrs[k++] = (void *) x;
  uids[k] = GPUNET_CG_UID_W, ptrs[k++] = (void *) w;
  if (b)
    uids[k] = GPUNET_CG_UID_B, ptrs[k++] = (void *) b;
  if (z)
    uids[k] = GPUNET_CG_UID_Z, ptrs[k++] = (void *) z;
  uids[k] = GPUNET_CG_UID_Y, ptrs[k++] = y;
  cudnnBackendDescriptor_t vp = NULL;
  cudnnStatus_t st = cudnnBackendCreateDescriptor (CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
  if (st != CUDNN_STATUS_SUCCESS)
    return st;
  st = cg_set (vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, k, uids);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cg_set (vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, k, ptrs);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cg_set (vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnBackendFinalize (vp);
  if (st == CUDNN_STATUS_SUCCESS)
    st = cudnnBackendExecute (handle, plan, vp);
  cudnnBackendDestroyDescriptor (vp);
  return st;
}

int
gpunet_cg_tune_best (const int *ran, const float *ms, int n)
{
  int best = -1;
  for (int i = 0; i < n; i++)
    if (ran[i] && (best < 0 || ms[i] < ms[best]))
      best = i;
  return best;
}
