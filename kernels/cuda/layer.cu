/* layer.cu: one graph op on the device: weight upload into the session's arena, the
 * per-kind dispatch to cuDNN (conv2d.cu) or our launchers, and the context every layer
 * runs in (stream, cuDNN handle, workspace, SE scratch) with the device selection and
 * the CUDA context scope of every entry point (cuda_context.h over the driver's
 * functions, fetched through cudart: the module never links libcuda). */
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "cuda_internal.h"
#include "cuda_nhwc.h"
#include "half.h"

thread_local int gpunet_cuda_pdl = 0;

/* Never launched: its attributes tell which PTX the module's kernels run from here. */
static __global__ void
pdl_probe_kernel (void)
{
  gpunet_pdl_wait ();
}

cudaError_t
gpunet_cuda_kernel_ptx_version (int *ptx_version)
{
  cudaFuncAttributes a;
  memset (&a, 0, sizeof a);
  const cudaError_t e = cudaFuncGetAttributes (&a, pdl_probe_kernel);
  *ptx_version = e == cudaSuccess ? a.ptxVersion : 0;
  return e;
}

/* Bytes rounded up to a 256-byte boundary, so every weight piece stays aligned. */
static size_t
padded (size_t bytes)
{
  return (bytes + 255) / 256 * 256;
}

size_t
gpunet_cuda_layer_weight_bytes (const gpunet_op *op, gpunet_cuda_dtype t)
{
  const size_t ws = gpunet_cuda_dtype_size (t), fs = sizeof (float);
  switch (op->kind) {
    case GPUNET_OP_CONV2D: {
      const gpunet_conv2d_params *p = &op->p.conv2d;
      return padded ((size_t) p->cout * (p->cin / p->groups) * p->kernel * p->kernel * ws)
          + (p->bias ? padded ((size_t) p->cout * fs) : 0);
    }
    case GPUNET_OP_DWCONV2D: {
      const gpunet_dwconv2d_params *p = &op->p.dwconv2d;
      return padded ((size_t) p->c * p->kernel * p->kernel * ws) + (p->bias ? padded ((size_t) p->c * fs) : 0);
    }
    case GPUNET_OP_SE: {
      const gpunet_se_params *p = &op->p.se;
      return 2 * padded ((size_t) p->c * p->rd * ws) + padded ((size_t) p->rd * fs)
          + padded ((size_t) p->c * fs);
    }
    case GPUNET_OP_LINEAR: {
      const gpunet_linear_params *p = &op->p.linear;
      return padded ((size_t) p->cout * p->cin * ws) + (p->bias ? padded ((size_t) p->cout * fs) : 0);
    }
    default:
      return 0;
  }
}

/* Copies `floats` host floats to *arena, as type t, and advances the arena; *dst is the
 * device copy (NULL for a NULL source).  fp16 pieces are converted on the host into a
 * temporary buffer and copied synchronously (planning only). */
static cudaError_t
upload_as (gpunet_cuda_ctx *ctx, char **arena, const float *src, size_t floats,
    gpunet_cuda_dtype t, void **dst)
{
  *dst = NULL;
  if (!src || !floats)
    return cudaSuccess;
  *dst = *arena;
  *arena += padded (floats * gpunet_cuda_dtype_size (t));
  if (t == GPUNET_CUDA_F32)
    return cudaMemcpyAsync (*dst, src, floats * sizeof (float), cudaMemcpyHostToDevice, ctx->stream);
  gpunet_half *tmp = (gpunet_half *) malloc (floats * sizeof *tmp);
  if (!tmp)
    return cudaErrorMemoryAllocation;
  for (size_t i = 0; i < floats; i++)
    tmp[i] = gpunet_half_from_float (src[i]);
  cudaError_t e = cudaMemcpyAsync (*dst, tmp, floats * sizeof *tmp, cudaMemcpyHostToDevice, ctx->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize (ctx->stream);
  free (tmp);
  return e;
}

/* Weights in the layer's storage type. */
static cudaError_t
upload_w (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, char **arena, const float *src,
    size_t floats, void **dst)
{
  return upload_as (ctx, arena, src, floats, l->dtype, dst);
}

/* Biases: always float32. */
static cudaError_t
upload_b (gpunet_cuda_ctx *ctx, char **arena, const float *src, size_t floats, float **dst)
{
  void *d = NULL;
  cudaError_t e = upload_as (ctx, arena, src, floats, GPUNET_CUDA_F32, &d);
  *dst = (float *) d;
  return e;
}

gpunet_status
gpunet_cuda_layer_plan (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, const gpunet_op *op,
    int index, char **arena, int max_n, size_t ws_limit, char **error_text)
{
  memset (l, 0, sizeof *l);
  l->op = op;
  l->index = index;
  l->dtype = ctx->dtype;
  l->nhwc = ctx->nhwc;
  char name[128];
  gpunet_cuda_op_name (op, index, name, sizeof name);
  cudaError_t e = cudaSuccess;
  switch (op->kind) {
    case GPUNET_OP_CONV2D: {
      const gpunet_conv2d_params *p = &op->p.conv2d;
      if (p->groups < 1 || p->cin % p->groups)
        return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "%s: bad group count", name);
      const size_t count = (size_t) p->cout * (p->cin / p->groups) * p->kernel * p->kernel;
      if (l->nhwc && p->kernel > 1) {
        /* the NHWC network's filters are KRSC: out channel, row, column, in channel */
        float *krsc = (float *) malloc (count * sizeof *krsc);
        if (!krsc)
          return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning %s", name);
        const int ci = p->cin / p->groups, k = p->kernel;
        for (int o = 0; o < p->cout; o++)
          for (int i = 0; i < ci; i++)
            for (int ky = 0; ky < k; ky++)
              for (int kx = 0; kx < k; kx++)
                krsc[gpunet_krsc_at (o, i, ky, kx, ci, k)] =
                    p->weight[(((size_t) o * ci + i) * k + ky) * k + kx];
        e = upload_w (ctx, l, arena, krsc, count, &l->w);
        free (krsc);
      } else {
        e = upload_w (ctx, l, arena, p->weight, count, &l->w);
      }
      if (e == cudaSuccess)
        e = upload_b (ctx, arena, p->bias, (size_t) p->cout, &l->b);
      break;
    }
    case GPUNET_OP_DWCONV2D: {
      const gpunet_dwconv2d_params *p = &op->p.dwconv2d;
      e = upload_w (ctx, l, arena, p->weight, (size_t) p->c * p->kernel * p->kernel, &l->w);
      if (e == cudaSuccess)
        e = upload_b (ctx, arena, p->bias, (size_t) p->c, &l->b);
      break;
    }
    case GPUNET_OP_SE: {
      const gpunet_se_params *p = &op->p.se;
      e = upload_w (ctx, l, arena, p->w_reduce, (size_t) p->c * p->rd, &l->w);
      if (e == cudaSuccess)
        e = upload_b (ctx, arena, p->b_reduce, (size_t) p->rd, &l->b);
      if (e == cudaSuccess)
        e = upload_w (ctx, l, arena, p->w_expand, (size_t) p->c * p->rd, &l->w2);
      if (e == cudaSuccess)
        e = upload_b (ctx, arena, p->b_expand, (size_t) p->c, &l->b2);
      break;
    }
    case GPUNET_OP_LINEAR: {
      const gpunet_linear_params *p = &op->p.linear;
      e = upload_w (ctx, l, arena, p->weight, (size_t) p->cout * p->cin, &l->w);
      if (e == cudaSuccess)
        e = upload_b (ctx, arena, p->bias, (size_t) p->cout, &l->b);
      break;
    }
    case GPUNET_OP_AVGPOOL:
      break;
    default:
      return gpunet_cuda_fail (error_text, GPUNET_ERR_UNSUPPORTED, "%s: unknown op kind", name);
  }
  if (e != cudaSuccess) {
    char what[192];
    snprintf (what, sizeof what, "cudaMemcpyAsync (weights of %s)", name);
    return gpunet_cuda_fail_rt (error_text, e, what);
  }
  if (op->kind == GPUNET_OP_CONV2D)
    return gpunet_cuda_conv_plan (ctx, l, max_n, ws_limit, error_text);
  return GPUNET_OK;
}

gpunet_status
gpunet_cuda_layer_set_batch (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int n,
    char **error_text)
{
  if (l->op->kind != GPUNET_OP_CONV2D)
    return GPUNET_OK;
  return gpunet_cuda_conv_set_batch (ctx, l, n, error_text);
}

gpunet_status
gpunet_cuda_layer_run (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, const void *in,
    const void *residual, void *out, int n, char **error_text)
{
  const gpunet_op *op = l->op;
  cudaError_t e = cudaSuccess;
  switch (op->kind) {
    case GPUNET_OP_CONV2D:
      return gpunet_cuda_conv_run (ctx, l, in, residual, out, n, error_text);
    case GPUNET_OP_DWCONV2D:
      if (l->nhwc)          /* strip sums to the scratch when an SE follows (cuda_nhwc.h) */
        e = gpunet_cuda_dwconv2d_nhwc (l->dtype, &op->p.dwconv2d, l->w, l->b, in, out, n,
            l->fused_tiles ? ctx->scratch : NULL, ctx->nhwc_fill_blocks, ctx->stream);
      else if (l->fused_tiles)   /* tile sums to the scratch (cuda_fused.h) */
        e = gpunet_cuda_dwconv2d_squeeze (l->dtype, &op->p.dwconv2d, l->w, l->b, in, out, n,
            ctx->scratch, ctx->stream);
      else
        e = gpunet_cuda_dwconv2d (l->dtype, &op->p.dwconv2d, l->w, l->b, in, out, n,
            ctx->dw_direct, ctx->stream);
      break;
    case GPUNET_OP_SE: {
      const gpunet_se_params *p = &op->p.se;
      if (l->nhwc) {
        /* strip sums from the depthwise op before (fused_tiles) or from a squeeze here */
        const int tiles = l->fused_tiles ? l->fused_tiles : gpunet_cuda_nhwc_strips (p->h, p->w);
        const size_t sums = (size_t) n * p->c * tiles;
        if (in != out || sums + (size_t) n * p->rd > ctx->scratch_floats) {
          char name[128];
          gpunet_cuda_op_name (op, l->index, name, sizeof name);
          return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND,
              "%s: NHWC SE must run in place with %zu scratch floats planned", name,
              ctx->scratch_floats);
        }
        if (!l->fused_tiles)
          e = gpunet_cuda_squeeze_nhwc (l->dtype, out, n, p->c, p->h, p->w, ctx->scratch,
              ctx->stream);
        if (e == cudaSuccess)
          e = gpunet_cuda_se_nhwc (l->dtype, p, l->w, l->b, l->w2, l->b2, out, ctx->scratch,
              tiles, ctx->scratch + sums, n, ctx->stream);
        break;
      }
      if (l->fused_tiles) {
        const size_t sums = (size_t) n * p->c * l->fused_tiles;
        if (in != out || sums + (size_t) n * p->rd > ctx->scratch_floats) {
          char name[128];
          gpunet_cuda_op_name (op, l->index, name, sizeof name);
          return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND,
              "%s: fused SE must run in place with %zu scratch floats planned", name,
              ctx->scratch_floats);
        }
        e = gpunet_cuda_se_fused (l->dtype, p, l->w, l->b, l->w2, l->b2, out, ctx->scratch,
            l->fused_tiles, ctx->scratch + sums, n, ctx->stream);
        break;
      }
      if (in != out || (size_t) n * (2 * (size_t) p->c + (size_t) p->rd) > ctx->scratch_floats) {
        char name[128];
        gpunet_cuda_op_name (op, l->index, name, sizeof name);
        return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND,
            "%s: SE must run in place with %zu scratch floats planned", name, ctx->scratch_floats);
      }
      e = gpunet_cuda_se (l->dtype, p, l->w, l->b, l->w2, l->b2, out, ctx->scratch, n, ctx->stream);
      break;
    }
    case GPUNET_OP_AVGPOOL: {
      const gpunet_avgpool_params *p = &op->p.avgpool;
      e = l->nhwc
          ? gpunet_cuda_pool_nhwc (l->dtype, in, l->dtype, out, n, p->c, (long long) p->h * p->w,
              ctx->stream)
          : gpunet_cuda_row_mean (l->dtype, in, l->dtype, out, (long long) n * p->c,
              (long long) p->h * p->w, ctx->stream);
      break;
    }
    case GPUNET_OP_LINEAR: {
      const gpunet_linear_params *p = &op->p.linear;
      e = gpunet_cuda_linear (p->cin, p->cout, p->act, l->dtype, l->w, l->b, l->dtype, in,
          l->dtype, out, n, ctx->stream);
      break;
    }
  }
  if (e != cudaSuccess) {
    char name[128], what[192];
    gpunet_cuda_op_name (op, l->index, name, sizeof name);
    snprintf (what, sizeof what, "kernel launch (%s)", name);
    return gpunet_cuda_fail_rt (error_text, e, what);
  }
  return GPUNET_OK;
}

void
gpunet_cuda_layer_clear (gpunet_cuda_layer *l)
{
  if (l->op && l->op->kind == GPUNET_OP_CONV2D)
    gpunet_cuda_conv_clear (l);
  memset (l, 0, sizeof *l);
}

/* The device count checks of planning: a sentence for no driver, no device, or a
 * device number out of range.  Makes no context current (cudaGetDeviceCount needs none). */
gpunet_status
gpunet_cuda_check_device (int device, char **error_text)
{
  int count = 0;   /* left unwritten when the call fails */
  cudaError_t e = cudaGetDeviceCount (&count);
  if (e == cudaErrorInsufficientDriver)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND_UNAVAILABLE,
        "no CUDA driver: cudaGetDeviceCount returned cudaErrorInsufficientDriver (the NVIDIA "
        "driver is not installed, not loaded, or older than CUDA %d.%d needs); use the CPU backend",
        CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
    return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND_UNAVAILABLE,
        "no CUDA device: the driver reports no NVIDIA GPU on this host; use the CPU backend");
  if (e != cudaSuccess) {
    gpunet_cuda_fail_rt (error_text, e, "cudaGetDeviceCount");
    return GPUNET_ERR_BACKEND_UNAVAILABLE;
  }
  if (device < 0 || device >= count)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND_UNAVAILABLE,
        "CUDA device %d was requested but this host has %d (0 to %d)", device, count, count - 1);
  return GPUNET_OK;
}

/* The driver's context functions, fetched once through cudart (thread-safe static). */
typedef struct {
  PFN_cuCtxGetCurrent_v4000 get_current;
  PFN_cuCtxPushCurrent_v4000 push;
  PFN_cuCtxPopCurrent_v4000 pop;
  cudaError_t error;
  const char *missing;
} driver_ctx_fns;

static driver_ctx_fns
load_driver_ctx_fns (void)
{
  driver_ctx_fns f;
  memset (&f, 0, sizeof f);
  const struct { const char *name; void **fn; } want[] = {
    { "cuCtxGetCurrent", (void **) &f.get_current },
    { "cuCtxPushCurrent", (void **) &f.push },
    { "cuCtxPopCurrent", (void **) &f.pop },
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion (want[i].name, want[i].fn, CUDART_VERSION,
        cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*want[i].fn) {
      f.error = e != cudaSuccess ? e : cudaErrorSymbolNotFound;
      f.missing = want[i].name;
      return f;
    }
  }
  return f;
}

static const driver_ctx_fns *
driver_ctx (void)
{
  static const driver_ctx_fns f = load_driver_ctx_fns ();
  return &f;
}

static int
drv_get_current (void *user, void **ctx)
{
  (void) user;
  return (int) driver_ctx ()->get_current ((CUcontext *) ctx);
}

static int
drv_push (void *user, void *ctx)
{
  (void) user;
  return (int) driver_ctx ()->push ((CUcontext) ctx);
}

static int
drv_pop (void *user, void **ctx)
{
  (void) user;
  return (int) driver_ctx ()->pop ((CUcontext *) ctx);
}

static int
rt_device_of_current (void *user, int *device)
{
  (void) user;
  return (int) cudaGetDevice (device);
}

static int
rt_set_device (void *user, int device)
{
  (void) user;
  cudaError_t e = cudaSetDevice (device);
  if (e == cudaSuccess)
    e = cudaFree (NULL);   /* initialises the primary context */
  return (int) e;
}

static const gpunet_cuda_ctx_api driver_api = { drv_get_current, drv_push, drv_pop, NULL,
  rt_device_of_current, rt_set_device };

static gpunet_status
driver_ready (char **error_text)
{
  const driver_ctx_fns *f = driver_ctx ();
  if (f->missing) {
    char what[160];
    snprintf (what, sizeof what, "cudaGetDriverEntryPointByVersion (%s: the driver's context "
        "functions are needed to keep every call in the session's context)", f->missing);
    gpunet_cuda_fail_rt (error_text, f->error, what);
    return GPUNET_ERR_BACKEND_UNAVAILABLE;
  }
  return GPUNET_OK;
}

gpunet_status
gpunet_cuda_ctx_enter (void *cu_ctx, gpunet_cuda_ctx_scope *scope, char **error_text)
{
  char why[320];
  scope->pushed = 0;
  gpunet_status st = driver_ready (error_text);
  if (st != GPUNET_OK)
    return st;
  if (gpunet_cuda_ctx_scope_open (&driver_api, cu_ctx, scope, why, sizeof why) != 0)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND, "%s", why);
  return GPUNET_OK;
}

gpunet_status
gpunet_cuda_ctx_leave (void *cu_ctx, gpunet_cuda_ctx_scope *scope, gpunet_status st,
    char **error_text)
{
  char why[320];
  if (gpunet_cuda_ctx_scope_close (&driver_api, cu_ctx, scope, why, sizeof why) != 0
      && st == GPUNET_OK)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND, "%s", why);
  return st;
}

gpunet_status
gpunet_cuda_ctx_init (gpunet_cuda_ctx *ctx, int device, void *cu_context,
    gpunet_cuda_ctx_scope *scope, char **error_text)
{
  memset (ctx, 0, sizeof *ctx);
  scope->pushed = 0;
  gpunet_status st = gpunet_cuda_check_device (device, error_text);
  if (st == GPUNET_OK)
    st = driver_ready (error_text);
  if (st != GPUNET_OK)
    return st;
  if (cu_context == NULL) {
    /* the caller's context when it is on `device`, else the device's primary one; the
     * caller's stack is left as it was (cuda_context.h) */
    char why[320];
    if (gpunet_cuda_ctx_pick (&driver_api, device, &cu_context, why, sizeof why) != 0) {
      cudaGetLastError ();
      return gpunet_cuda_fail (error_text, GPUNET_ERR_BACKEND_UNAVAILABLE, "%s", why);
    }
  }
  /* the session's context first: nothing below may replace the caller's */
  ctx->cu_ctx = cu_context;
  st = gpunet_cuda_ctx_enter (cu_context, scope, error_text);
  if (st != GPUNET_OK)
    return st;
  int in_ctx = -1;
  GPUNET_CU_TRY (cudaGetDevice (&in_ctx), error_text, "cudaGetDevice (in the session's context)");
  if (in_ctx != device)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "the CUDA context given to the session is on device %d, but the session asks for "
        "device %d: pass that context's device (or no context)", in_ctx, device);
  ctx->device = device;
  cudaError_t e = gpunet_cuda_probe_kernels ();
  if (e != cudaSuccess) {
    cudaDeviceProp prop;
    char what[512];
    if (cudaGetDeviceProperties (&prop, device) == cudaSuccess)
      snprintf (what, sizeof what, "no usable kernels for %s (sm_%d%d) in this build; rebuild with "
          "%d%d in -Dgpu_archs (kernel check)", prop.name, prop.major, prop.minor, prop.major, prop.minor);
    else
      snprintf (what, sizeof what, "kernel image check on CUDA device %d", device);
    gpunet_cuda_fail_rt (error_text, e, what);
    return GPUNET_ERR_BACKEND_UNAVAILABLE;
  }
  GPUNET_CU_TRY (cudaStreamCreateWithFlags (&ctx->stream, cudaStreamNonBlocking), error_text,
      "cudaStreamCreateWithFlags");
  cudnnStatus_t ds = cudnnCreate (&ctx->dnn);
  if (ds != CUDNN_STATUS_SUCCESS) {
    ctx->dnn = NULL;
    st = gpunet_cuda_fail_dnn (error_text, ds, "cudnnCreate (cuDNN cannot start on this GPU/driver)");
    return st == GPUNET_ERR_NO_MEMORY ? st : GPUNET_ERR_BACKEND_UNAVAILABLE;
  }
  GPUNET_DNN_TRY (cudnnSetStream (ctx->dnn, ctx->stream), error_text, "cudnnSetStream");
  return GPUNET_OK;
}

gpunet_status
gpunet_cuda_ctx_reserve (gpunet_cuda_ctx *ctx, size_t workspace_bytes, size_t scratch_floats,
    char **error_text)
{
  if (workspace_bytes > ctx->workspace_bytes) {
    if (ctx->workspace)
      cudaFree (ctx->workspace);
    ctx->workspace = NULL;
    ctx->workspace_bytes = 0;
    GPUNET_CU_TRY (cudaMalloc (&ctx->workspace, workspace_bytes), error_text,
        "cudaMalloc (%zu bytes of cuDNN workspace)", workspace_bytes);
    ctx->workspace_bytes = workspace_bytes;
  }
  if (scratch_floats > ctx->scratch_floats) {
    if (ctx->scratch)
      cudaFree (ctx->scratch);
    ctx->scratch = NULL;
    ctx->scratch_floats = 0;
    GPUNET_CU_TRY (cudaMalloc ((void **) &ctx->scratch, scratch_floats * sizeof (float)),
        error_text, "cudaMalloc (%zu floats of SE scratch)", scratch_floats);
    ctx->scratch_floats = scratch_floats;
  }
  return GPUNET_OK;
}

gpunet_status
gpunet_cuda_resolve_precision (int precision, gpunet_cuda_dtype *out, char **error_text)
{
  *out = GPUNET_CUDA_F32;
  if (precision == GPUNET_PRECISION_FP32)
    return GPUNET_OK;
  if (precision == GPUNET_PRECISION_FP16) {
    *out = GPUNET_CUDA_F16;
    return GPUNET_OK;
  }
  if (precision == GPUNET_PRECISION_BF16)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_UNSUPPORTED, "precision=bf16 is the fast "
        "CPU backend's; on CUDA use fp16 (tensor cores) or fp32");
  if (precision == GPUNET_PRECISION_INT8)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_UNSUPPORTED, "precision=int8 is the fast "
        "CPU backend's; on CUDA use fp16 (tensor cores) or fp32");
  if (precision != GPUNET_PRECISION_AUTO)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "unknown precision %d",
        precision);
  int device = 0, major = 0;
  GPUNET_CU_TRY (cudaGetDevice (&device), error_text, "cudaGetDevice (choosing the precision)");
  GPUNET_CU_TRY (cudaDeviceGetAttribute (&major, cudaDevAttrComputeCapabilityMajor, device),
      error_text, "cudaDeviceGetAttribute (compute capability of device %d)", device);
  /* tensor cores from compute capability 7.0 (Volta) on */
  *out = major >= 7 ? GPUNET_CUDA_F16 : GPUNET_CUDA_F32;
  return GPUNET_OK;
}

/* Frees the context's objects; the caller has the session's context current (a scope
 * opened by gpunet_cuda_ctx_init or gpunet_cuda_ctx_enter). */
void
gpunet_cuda_ctx_clear (gpunet_cuda_ctx *ctx)
{
  if (ctx->stream)
    cudaStreamSynchronize (ctx->stream);
  if (ctx->workspace)
    cudaFree (ctx->workspace);
  if (ctx->scratch)
    cudaFree (ctx->scratch);
  if (ctx->dnn)
    cudnnDestroy (ctx->dnn);
  if (ctx->stream)
    cudaStreamDestroy (ctx->stream);
  memset (ctx, 0, sizeof *ctx);
}
