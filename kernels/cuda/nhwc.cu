/* nhwc.cu: the kernels of the NHWC network (opt-in fused path, level 2) other than the
 * convolutions and SE: the epilogue of a convolution cuDNN could not fuse, the depthwise
 * convolution (optionally writing the SE squeeze's strip sums), the squeeze of an SE
 * that follows no depthwise layer, the global average pool, and the NCHW <-> NHWC
 * relayouts of the host input and of traced tensors.  The arithmetic is cuda_nhwc.h's;
 * kernels only map threads to elements. */
#include "cuda_internal.h"
#include "cuda_nhwc.h"
#include "cuda_storage.h"

static __device__ __forceinline__ float
nhwc_epi_t (const float *y, const float *bias, const float *res, long long i, int c, int act)
{
  return gpunet_epilogue_nhwc_at (y, bias, res, i, c, act);
}

static __device__ __forceinline__ float
nhwc_epi_t (const gpunet_half *y, const float *bias, const gpunet_half *res, long long i, int c,
    int act)
{
  return gpunet_epilogue_nhwc_at_h (y, bias, res, i, c, act);
}

static __device__ __forceinline__ float
nhwc_dw_t (const float *x, int ih, int iw, int c, int ch, const float *w, int k, int stride,
    int pad, int oy, int ox)
{
  return gpunet_dwconv_nhwc_at (x, ih, iw, c, ch, w, k, stride, pad, oy, ox);
}

static __device__ __forceinline__ float
nhwc_dw_t (const gpunet_half *x, int ih, int iw, int c, int ch, const gpunet_half *w, int k,
    int stride, int pad, int oy, int ox)
{
  return gpunet_dwconv_nhwc_at_h (x, ih, iw, c, ch, w, k, stride, pad, oy, ox);
}

/* The value a store of v into T keeps (half rounding for fp16). */
static __device__ __forceinline__ float
nhwc_stored (const float *, float v)
{
  return v;
}

static __device__ __forceinline__ float
nhwc_stored (const gpunet_half *, float v)
{
  return gpunet_half_to_float (gpunet_half_from_float (v));
}

template <typename T>
static __global__ void
nhwc_epilogue_kernel (T *y, const float *bias, const T *residual, long long total, int c, int act)
{
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    gpunet_st (y, i, nhwc_epi_t (y, bias, residual, i, c, act));
}

cudaError_t
gpunet_cuda_epilogue_nhwc (gpunet_cuda_dtype t, void *y, const float *bias, const void *residual,
    int n, int c, long long plane, int act, cudaStream_t stream)
{
  const long long total = (long long) n * c * plane;
  if (total <= 0 || (!bias && !residual && act == GPUNET_EPI_NONE))
    return cudaSuccess;
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  if (t == GPUNET_CUDA_F16)
    nhwc_epilogue_kernel<gpunet_half><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (
        (gpunet_half *) y, bias, (const gpunet_half *) residual, total, c, act);
  else
    nhwc_epilogue_kernel<float><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> ((float *) y, bias,
        (const float *) residual, total, c, act);
  return cudaGetLastError ();
}

enum { NHWC_DW_THREADS = 64 };

/* Block (channel group, strip, image): thread ch computes the strip's rows of channel ch,
 * every column, and (squeeze != NULL) writes the sum of the values it stored to
 * squeeze[(image * c + ch) * strips + strip]. */
template <typename T>
static __global__ void __launch_bounds__ (NHWC_DW_THREADS)
nhwc_dw_kernel (const T *__restrict__ in, const T *__restrict__ w, const float *__restrict__ bias,
    T *__restrict__ out, int c, int ih, int iw, int oh, int ow, int k, int stride, int pad,
    int act, int strip_rows, float *__restrict__ squeeze)
{
  const int ch = blockIdx.x * NHWC_DW_THREADS + threadIdx.x;
  if (ch >= c)
    return;
  const long long img = blockIdx.z;
  const int strip = blockIdx.y, strips = gridDim.y;
  const T *x = in + img * ih * iw * (long long) c;
  const T *wc = w + (long long) ch * k * k;
  const float b = bias ? bias[ch] : 0.0f;
  const int y0 = strip * strip_rows;
  const int y1 = y0 + strip_rows < oh ? y0 + strip_rows : oh;
  float sum = 0.0f;
  for (int oy = y0; oy < y1; oy++)
    for (int ox = 0; ox < ow; ox++) {
      const float v = gpunet_epilogue (nhwc_dw_t (x, ih, iw, c, ch, wc, k, stride, pad, oy, ox),
          b, act, 0.0f);
      const long long at = gpunet_nhwc_at (img, oy, ox, ch, oh, ow, c);
      gpunet_st (out, at, v);
      sum += nhwc_stored (out, v);
    }
  if (squeeze)
    squeeze[(img * c + ch) * strips + strip] = sum;
}

int
gpunet_cuda_nhwc_strips (int oh, int ow)
{
  return gpunet_dw_nhwc_strips (oh, ow);
}

cudaError_t
gpunet_cuda_dwconv2d_nhwc (gpunet_cuda_dtype t, const gpunet_dwconv2d_params *p, const void *w,
    const float *b, const void *in, void *out, int n, float *squeeze, cudaStream_t stream)
{
  if (n < 1 || n > 65535 || p->c < 1 || p->oh < 1 || p->ow < 1)
    return cudaErrorInvalidValue;
  const int rows = gpunet_dw_nhwc_strip_rows (p->oh, p->ow);
  const int strips = gpunet_dw_nhwc_strips (p->oh, p->ow);
  if (strips > 65535)
    return cudaErrorInvalidValue;
  const dim3 grid ((unsigned) ((p->c + NHWC_DW_THREADS - 1) / NHWC_DW_THREADS), (unsigned) strips,
      (unsigned) n);
  if (t == GPUNET_CUDA_F16)
    nhwc_dw_kernel<gpunet_half><<<grid, NHWC_DW_THREADS, 0, stream>>> ((const gpunet_half *) in,
        (const gpunet_half *) w, b, (gpunet_half *) out, p->c, p->ih, p->iw, p->oh, p->ow,
        p->kernel, p->stride, p->pad, p->act, rows, squeeze);
  else
    nhwc_dw_kernel<float><<<grid, NHWC_DW_THREADS, 0, stream>>> ((const float *) in,
        (const float *) w, b, (float *) out, p->c, p->ih, p->iw, p->oh, p->ow, p->kernel,
        p->stride, p->pad, p->act, rows, squeeze);
  return cudaGetLastError ();
}

/* The squeeze of an SE that follows no depthwise layer: the same strip sums (strips of
 * gpunet_dw_nhwc_strip_rows rows) read from the tensor. */
template <typename T>
static __global__ void __launch_bounds__ (NHWC_DW_THREADS)
nhwc_squeeze_kernel (const T *__restrict__ x, int c, int h, int w, int strip_rows,
    float *__restrict__ sums)
{
  const int ch = blockIdx.x * NHWC_DW_THREADS + threadIdx.x;
  if (ch >= c)
    return;
  const long long img = blockIdx.z;
  const int strip = blockIdx.y, strips = gridDim.y;
  const int y0 = strip * strip_rows;
  const int y1 = y0 + strip_rows < h ? y0 + strip_rows : h;
  float sum = 0.0f;
  for (int y = y0; y < y1; y++)
    for (int xx = 0; xx < w; xx++)
      sum += gpunet_ld (x, gpunet_nhwc_at (img, y, xx, ch, h, w, c));
  sums[(img * c + ch) * strips + strip] = sum;
}

cudaError_t
gpunet_cuda_squeeze_nhwc (gpunet_cuda_dtype t, const void *x, int n, int c, int h, int w,
    float *sums, cudaStream_t stream)
{
  if (n < 1 || n > 65535 || c < 1 || h < 1 || w < 1)
    return cudaErrorInvalidValue;
  const int rows = gpunet_dw_nhwc_strip_rows (h, w), strips = gpunet_dw_nhwc_strips (h, w);
  const dim3 grid ((unsigned) ((c + NHWC_DW_THREADS - 1) / NHWC_DW_THREADS), (unsigned) strips,
      (unsigned) n);
  if (t == GPUNET_CUDA_F16)
    nhwc_squeeze_kernel<gpunet_half><<<grid, NHWC_DW_THREADS, 0, stream>>> (
        (const gpunet_half *) x, c, h, w, rows, sums);
  else
    nhwc_squeeze_kernel<float><<<grid, NHWC_DW_THREADS, 0, stream>>> ((const float *) x, c, h, w,
        rows, sums);
  return cudaGetLastError ();
}

/* Global average pool: thread (image, channel) sums its positions in order. */
template <typename TI, typename TO>
static __global__ void
nhwc_pool_kernel (const TI *__restrict__ in, TO *__restrict__ out, int n, int c, long long plane)
{
  const long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x;   /* image * c + ch */
  if (i >= (long long) n * c)
    return;
  const long long img = i / c;
  const int ch = (int) (i % c);
  const TI *x = in + img * plane * c + ch;
  float acc = 0.0f;
  for (long long p = 0; p < plane; p++)
    acc += gpunet_ld (x, p * c);
  gpunet_st (out, i, acc / (float) plane);
}

cudaError_t
gpunet_cuda_pool_nhwc (gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to, void *out,
    int n, int c, long long plane, cudaStream_t stream)
{
  const long long rows = (long long) n * c;
  if (rows <= 0 || plane <= 0)
    return cudaSuccess;
  const unsigned blocks = (unsigned) ((rows + GPUNET_CUDA_THREADS - 1) / GPUNET_CUDA_THREADS);
  if (ti == GPUNET_CUDA_F16 && to == GPUNET_CUDA_F16)
    nhwc_pool_kernel<gpunet_half, gpunet_half><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (
        (const gpunet_half *) in, (gpunet_half *) out, n, c, plane);
  else if (ti == GPUNET_CUDA_F16)
    nhwc_pool_kernel<gpunet_half, float><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (
        (const gpunet_half *) in, (float *) out, n, c, plane);
  else if (to == GPUNET_CUDA_F16)
    nhwc_pool_kernel<float, gpunet_half><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (
        (const float *) in, (gpunet_half *) out, n, c, plane);
  else
    nhwc_pool_kernel<float, float><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (
        (const float *) in, (float *) out, n, c, plane);
  return cudaGetLastError ();
}

/* out (NHWC when to_nhwc, else NCHW) = in (the other layout), converting the storage. */
template <typename TI, typename TO>
static __global__ void
nhwc_relayout_kernel (const TI *__restrict__ in, TO *__restrict__ out, long long total, int c,
    long long plane, int to_nhwc)
{
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
    const long long src = to_nhwc ? gpunet_nhwc_to_nchw (i, c, plane) : gpunet_nchw_to_nhwc (i, c, plane);
    gpunet_st (out, i, gpunet_ld (in, src));
  }
}

cudaError_t
gpunet_cuda_relayout (gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to, void *out,
    int n, int c, long long plane, int to_nhwc, cudaStream_t stream)
{
  const long long total = (long long) n * c * plane;
  if (total <= 0)
    return cudaSuccess;
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  if (ti == GPUNET_CUDA_F32 && to == GPUNET_CUDA_F16)
    nhwc_relayout_kernel<float, gpunet_half><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (
        (const float *) in, (gpunet_half *) out, total, c, plane, to_nhwc);
  else if (ti == GPUNET_CUDA_F16 && to == GPUNET_CUDA_F32)
    nhwc_relayout_kernel<gpunet_half, float><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (
        (const gpunet_half *) in, (float *) out, total, c, plane, to_nhwc);
  else if (ti == GPUNET_CUDA_F16)
    nhwc_relayout_kernel<gpunet_half, gpunet_half><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (
        (const gpunet_half *) in, (gpunet_half *) out, total, c, plane, to_nhwc);
  else
    nhwc_relayout_kernel<float, float><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (
        (const float *) in, (float *) out, total, c, plane, to_nhwc);
  return cudaGetLastError ();
}
