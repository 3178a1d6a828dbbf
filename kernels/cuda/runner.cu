/* runner.cu: the single-op API of cuda_module.h for tools/gpunet-selftest: runs one
 * graph op on the device from host arrays through the same layer code as the backend
 * (weights, cuDNN plan and buffers are made per call; this is a test path), in fp32 or
 * fp16 storage (host float arrays converted on the device). */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "cuda_module.h"

struct gpunet_cuda_op_runner {
  gpunet_cuda_ctx ctx;
};

static void
runner_free (gpunet_cuda_op_runner *r)
{
  if (!r)
    return;
  void *cu = r->ctx.cu_ctx;
  gpunet_cuda_ctx_scope scope = { 0 };
  if (!cu || gpunet_cuda_ctx_enter (cu, &scope, NULL) == GPUNET_OK) {
    gpunet_cuda_ctx_clear (&r->ctx);
    gpunet_cuda_ctx_leave (cu, &scope, GPUNET_OK, NULL);
  }
  free (r);
}

static gpunet_status
runner_new (int device, gpunet_cuda_op_runner **out, char **error_text)
{
  *out = NULL;
  gpunet_cuda_op_runner *r = (gpunet_cuda_op_runner *) calloc (1, sizeof *r);
  if (!r)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  gpunet_cuda_ctx_scope scope = { 0 };
  gpunet_status st = gpunet_cuda_ctx_init (&r->ctx, device, NULL, &scope, error_text);
  st = gpunet_cuda_ctx_leave (r->ctx.cu_ctx, &scope, st, error_text);
  if (st != GPUNET_OK) {
    runner_free (r);
    return st;
  }
  *out = r;
  return GPUNET_OK;
}

/* Input, residual and output floats of one op for n images. */
static void
op_sizes (const gpunet_op *op, int n, size_t *in, size_t *out)
{
  switch (op->kind) {
    case GPUNET_OP_CONV2D: {
      const gpunet_conv2d_params *p = &op->p.conv2d;
      *in = (size_t) n * p->cin * p->ih * p->iw;
      *out = (size_t) n * p->cout * p->oh * p->ow;
      break;
    }
    case GPUNET_OP_DWCONV2D: {
      const gpunet_dwconv2d_params *p = &op->p.dwconv2d;
      *in = (size_t) n * p->c * p->ih * p->iw;
      *out = (size_t) n * p->c * p->oh * p->ow;
      break;
    }
    case GPUNET_OP_SE:
      *in = *out = (size_t) n * op->p.se.c * op->p.se.h * op->p.se.w;
      break;
    case GPUNET_OP_AVGPOOL:
      *in = (size_t) n * op->p.avgpool.c * op->p.avgpool.h * op->p.avgpool.w;
      *out = (size_t) n * op->p.avgpool.c;
      break;
    case GPUNET_OP_LINEAR:
    default:
      *in = (size_t) n * op->p.linear.cin;
      *out = (size_t) n * op->p.linear.cout;
      break;
  }
}

typedef struct {
  char *arena;
  float *in32, *res32, *out32;   /* float copies of the host arrays */
  void *in, *res, *out;          /* the op's tensors in the runner's storage */
} op_buffers;

static gpunet_status
run_with (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, op_buffers *b, const gpunet_op *op, int n,
    const float *in, const float *residual, float *out, char **error_text)
{
  size_t in_f, out_f;
  op_sizes (op, n, &in_f, &out_f);
  const gpunet_cuda_dtype t = ctx->dtype;
  const int half = t == GPUNET_CUDA_F16;
  const size_t es = gpunet_cuda_dtype_size (t);
  const size_t wb = gpunet_cuda_layer_weight_bytes (op, t) + 256;
  GPUNET_CU_TRY (cudaMalloc ((void **) &b->arena, wb), error_text, "cudaMalloc (weights)");
  GPUNET_CU_TRY (cudaMalloc ((void **) &b->in32, in_f * sizeof (float)), error_text, "cudaMalloc (input)");
  GPUNET_CU_TRY (cudaMalloc ((void **) &b->out32, out_f * sizeof (float)), error_text, "cudaMalloc (output)");
  if (residual)
    GPUNET_CU_TRY (cudaMalloc ((void **) &b->res32, out_f * sizeof (float)), error_text,
        "cudaMalloc (residual)");
  if (half) {
    GPUNET_CU_TRY (cudaMalloc (&b->in, in_f * es), error_text, "cudaMalloc (fp16 input)");
    GPUNET_CU_TRY (cudaMalloc (&b->out, out_f * es), error_text, "cudaMalloc (fp16 output)");
    if (residual)
      GPUNET_CU_TRY (cudaMalloc (&b->res, out_f * es), error_text, "cudaMalloc (fp16 residual)");
  }
  void *d_in_t = half ? b->in : b->in32, *d_out_t = half ? b->out : b->out32;
  void *d_res_t = half ? b->res : b->res32;
  char *arena = b->arena;
  gpunet_status st = gpunet_cuda_layer_plan (ctx, l, op, 0, &arena, n, (size_t) 512 << 20, error_text);
  if (st != GPUNET_OK)
    return st;
  size_t scratch = op->kind == GPUNET_OP_SE
      ? (size_t) n * (2 * (size_t) op->p.se.c + (size_t) op->p.se.rd) : 0;
  st = gpunet_cuda_ctx_reserve (ctx, l->ws_max, scratch, error_text);
  if (st != GPUNET_OK)
    return st;
  /* SE runs in place: its input goes straight into the output buffer */
  float *d_in32 = op->kind == GPUNET_OP_SE ? b->out32 : b->in32;
  void *d_in = op->kind == GPUNET_OP_SE ? d_out_t : d_in_t;
  GPUNET_CU_TRY (cudaMemcpyAsync (d_in32, in, in_f * sizeof (float), cudaMemcpyHostToDevice, ctx->stream),
      error_text, "cudaMemcpyAsync (op input)");
  if (residual)
    GPUNET_CU_TRY (cudaMemcpyAsync (b->res32, residual, out_f * sizeof (float), cudaMemcpyHostToDevice,
        ctx->stream), error_text, "cudaMemcpyAsync (op residual)");
  if (half) {
    GPUNET_CU_TRY (gpunet_cuda_convert (GPUNET_CUDA_F32, d_in32, t, d_in, (long long) in_f,
        ctx->stream), error_text, "conversion kernel (op input to fp16)");
    if (residual)
      GPUNET_CU_TRY (gpunet_cuda_convert (GPUNET_CUDA_F32, b->res32, t, b->res, (long long) out_f,
          ctx->stream), error_text, "conversion kernel (op residual to fp16)");
  }
  st = gpunet_cuda_layer_run (ctx, l, d_in, residual ? d_res_t : NULL, d_out_t, n, error_text);
  if (st != GPUNET_OK)
    return st;
  if (half)
    GPUNET_CU_TRY (gpunet_cuda_convert (t, d_out_t, GPUNET_CUDA_F32, b->out32, (long long) out_f,
        ctx->stream), error_text, "conversion kernel (op output to float32)");
  GPUNET_CU_TRY (cudaMemcpyAsync (out, b->out32, out_f * sizeof (float), cudaMemcpyDeviceToHost,
      ctx->stream), error_text, "cudaMemcpyAsync (op output)");
  GPUNET_CU_TRY (cudaStreamSynchronize (ctx->stream), error_text, "cudaStreamSynchronize (op)");
  return GPUNET_OK;
}

static gpunet_status
run_in_context (gpunet_cuda_op_runner *r, const gpunet_op *op, int n, const float *in,
    const float *residual, float *out, char **error_text)
{
  gpunet_cuda_layer l;
  memset (&l, 0, sizeof l);
  op_buffers b;
  memset (&b, 0, sizeof b);
  gpunet_status st = run_with (&r->ctx, &l, &b, op, n, in, op->residual >= 0 ? residual : NULL,
      out, error_text);
  cudaStreamSynchronize (r->ctx.stream);
  gpunet_cuda_layer_clear (&l);
  void *bufs[] = { b.arena, b.in32, b.res32, b.out32, b.in, b.res, b.out };
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (bufs[i])
      cudaFree (bufs[i]);
  return st;
}

static gpunet_status
runner_set_precision (gpunet_cuda_op_runner *r, gpunet_precision precision, char **error_text)
{
  gpunet_cuda_ctx_scope scope;
  gpunet_status st = gpunet_cuda_ctx_enter (r->ctx.cu_ctx, &scope, error_text);
  if (st != GPUNET_OK)
    return st;
  st = gpunet_cuda_resolve_precision (precision, &r->ctx.dtype, error_text);
  return gpunet_cuda_ctx_leave (r->ctx.cu_ctx, &scope, st, error_text);
}

static void
describe_device (int device, char *buf, size_t len)
{
  cudaDeviceProp prop;
  cudaError_t e = cudaGetDeviceProperties (&prop, device);
  if (e != cudaSuccess)
    snprintf (buf, len, "device %d (%s)", device, cudaGetErrorName (e));
  else
    snprintf (buf, len, "%s (sm_%d%d, %zu MiB)", prop.name, prop.major, prop.minor,
        (size_t) (prop.totalGlobalMem >> 20));
}

static gpunet_status
device_upload (const void *src, size_t bytes, void **out, char **error_text)
{
  *out = NULL;
  GPUNET_CU_TRY (cudaMalloc (out, bytes ? bytes : 1), error_text, "cudaMalloc (%zu bytes)", bytes);
  /* From pageable memory cudaMemcpy may return before the DMA has landed, and it runs on
   * the legacy stream, which the sessions' non-blocking streams do not wait for: wait
   * here, so the frames are complete before any session reads them. */
  cudaError_t e = cudaMemcpy (*out, src, bytes, cudaMemcpyHostToDevice);
  if (e == cudaSuccess)
    e = cudaDeviceSynchronize ();
  if (e != cudaSuccess) {
    cudaFree (*out);
    *out = NULL;
    return gpunet_cuda_fail_rt (error_text, e,
        "cudaMemcpy, cudaDeviceSynchronize (frame to the device)");
  }
  return GPUNET_OK;
}

static void
device_free (void *ptr)
{
  if (ptr)
    cudaFree (ptr);
}

static gpunet_status
runner_run (gpunet_cuda_op_runner *r, const gpunet_op *op, int n, const float *in,
    const float *residual, float *out, char **error_text)
{
  if (n < 1)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "batch %d < 1", n);
  gpunet_cuda_ctx_scope scope;
  gpunet_status st = gpunet_cuda_ctx_enter (r->ctx.cu_ctx, &scope, error_text);
  if (st != GPUNET_OK)
    return st;
  st = run_in_context (r, op, n, in, residual, out, error_text);
  return gpunet_cuda_ctx_leave (r->ctx.cu_ctx, &scope, st, error_text);
}

/* The preprocess kernel alone, through the same table upload as the backend. */
static gpunet_status
preprocess_in_context (gpunet_cuda_op_runner *r, const gpunet_image *image,
    const gpunet_preprocess_plan *plan, float *out_chw, char **error_text)
{
  const size_t count = (size_t) 3 * plan->out_size * plan->out_size, bytes = count * sizeof (float);
  const gpunet_cuda_dtype dt = r->ctx.dtype;
  gpunet_cuda_pre_tables t;
  memset (&t, 0, sizeof t);
  float *d_out = NULL;
  void *d_typed = NULL;
  gpunet_cuda_pre_desc *d_desc = NULL;
  gpunet_status st = gpunet_cuda_pre_tables_update (&t, plan, r->ctx.stream, error_text);
  cudaError_t e = cudaSuccess;
  if (st == GPUNET_OK) {
    e = cudaMalloc ((void **) &d_out, bytes);
    if (e == cudaSuccess)
      e = cudaMalloc ((void **) &d_desc, sizeof *d_desc);
    if (e == cudaSuccess && dt != GPUNET_CUDA_F32)
      e = cudaMalloc (&d_typed, count * gpunet_cuda_dtype_size (dt));
    if (e != cudaSuccess)
      st = gpunet_cuda_fail_rt (error_text, e, "cudaMalloc (preprocess output)");
  }
  if (st == GPUNET_OK) {
    gpunet_cuda_pre_desc d;
    gpunet_cuda_pre_desc_init (&d, plan, image);
    d.x = t.x;
    d.y = t.y;
    /* on the runner's stream, ordered before the kernel (a plain cudaMemcpy would go to
     * the legacy stream, which this non-blocking stream does not wait for) */
    e = cudaMemcpyAsync (d_desc, &d, sizeof d, cudaMemcpyHostToDevice, r->ctx.stream);
    if (e == cudaSuccess)
      e = gpunet_cuda_preprocess (d_desc, 1, plan->out_size, dt, d_typed ? d_typed : d_out,
          0, r->ctx.stream);
    if (e == cudaSuccess && d_typed)
      e = gpunet_cuda_convert (dt, d_typed, GPUNET_CUDA_F32, d_out, (long long) count, r->ctx.stream);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync (out_chw, d_out, bytes, cudaMemcpyDeviceToHost, r->ctx.stream);
    if (e == cudaSuccess)
      e = cudaStreamSynchronize (r->ctx.stream);
    if (e != cudaSuccess)
      st = gpunet_cuda_fail_rt (error_text, e, "preprocess kernel (self-test)");
  }
  cudaStreamSynchronize (r->ctx.stream);
  if (d_out)
    cudaFree (d_out);
  if (d_typed)
    cudaFree (d_typed);
  if (d_desc)
    cudaFree (d_desc);
  gpunet_cuda_pre_tables_clear (&t);
  return st;
}

static gpunet_status
runner_preprocess (gpunet_cuda_op_runner *r, const gpunet_image *image,
    const gpunet_preprocess_plan *plan, float *out_chw, char **error_text)
{
  gpunet_cuda_ctx_scope scope;
  gpunet_status st = gpunet_cuda_ctx_enter (r->ctx.cu_ctx, &scope, error_text);
  if (st != GPUNET_OK)
    return st;
  st = preprocess_in_context (r, image, plan, out_chw, error_text);
  return gpunet_cuda_ctx_leave (r->ctx.cu_ctx, &scope, st, error_text);
}

/* The depthwise choice of the options (graphs: the runner never captures). */
static gpunet_status
runner_set_cuda_options (gpunet_cuda_op_runner *r, const gpunet_cuda_options *options,
    char **error_text)
{
  (void) error_text;
  r->ctx.dw_direct = options && options->dwconv == GPUNET_CUDA_DW_DIRECT;
  return GPUNET_OK;
}

extern const gpunet_cuda_op_api gpunet_cuda_op_api_table;
const gpunet_cuda_op_api gpunet_cuda_op_api_table = {
  runner_new,
  runner_run,
  runner_free,
  describe_device,
  device_upload,
  device_free,
  runner_preprocess,
  runner_set_precision,
  runner_set_cuda_options,
};
