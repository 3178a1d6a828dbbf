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
  gpunet_pdl_wait ();
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
    gpunet_launch (nhwc_epilogue_kernel<gpunet_half>, blocks, GPUNET_CUDA_THREADS, 0, stream,
        (gpunet_half *) y, bias, (const gpunet_half *) residual, total, c, act);
  else
    gpunet_launch (nhwc_epilogue_kernel<float>, blocks, GPUNET_CUDA_THREADS, 0, stream, (float *) y, bias,
        (const float *) residual, total, c, act);
  return cudaGetLastError ();
}

/* Sums each thread row's partial (part[ty][lane]) in row order, as
 * gpunet_nhwc_strip_sum does, and has row 0 write the strip's partial. */
static __device__ __forceinline__ void
nhwc_strip_store (float (*part)[GPUNET_NHWC_CH], float mine, int ch, int c, long long img,
    int strip, int strips, float *squeeze)
{
  part[threadIdx.y][threadIdx.x] = mine;
  __syncthreads ();
  if (threadIdx.y == 0 && ch < c) {
    float total = 0.0f;
    for (int ty = 0; ty < GPUNET_NHWC_TY; ty++)
      total += part[ty][threadIdx.x];
    squeeze[(img * c + ch) * strips + strip] = total;
  }
}

/* Block (channel group, strip, image) of GPUNET_NHWC_CH x GPUNET_NHWC_TY threads (the
 * geometry of cuda_nhwc.h): thread (lane, ty) computes channel group * CH + lane at the
 * strip's positions ty, ty + TY, ...; with squeeze != NULL the block also writes each
 * channel's strip sum of the values it stored. */
template <typename T>
static __global__ void __launch_bounds__ (GPUNET_NHWC_CH * GPUNET_NHWC_TY)
nhwc_dw_kernel (const T *__restrict__ in, const T *__restrict__ w, const float *__restrict__ bias,
    T *__restrict__ out, int c, int ih, int iw, int oh, int ow, int k, int stride, int pad,
    int act, float *__restrict__ squeeze, int slen)
{
  gpunet_pdl_wait ();
  __shared__ float part[GPUNET_NHWC_TY][GPUNET_NHWC_CH];
  const int ch = blockIdx.x * GPUNET_NHWC_CH + threadIdx.x;
  const long long img = blockIdx.z;
  const int strip = blockIdx.y, strips = gridDim.y;
  const long long positions = (long long) oh * ow;
  float sum = 0.0f;
  if (ch < c) {
    const T *x = in + img * ih * iw * (long long) c;
    const T *wc = w + (long long) ch * k * k;
    const float b = bias ? bias[ch] : 0.0f;
    const long long p0 = (long long) strip * slen;
    for (int i = threadIdx.y; i < slen; i += GPUNET_NHWC_TY) {
      const long long pos = p0 + i;
      if (pos >= positions)
        break;
      const int oy = (int) (pos / ow), ox = (int) (pos % ow);
      const float v = gpunet_epilogue (nhwc_dw_t (x, ih, iw, c, ch, wc, k, stride, pad, oy, ox),
          b, act, 0.0f);
      gpunet_st (out, (img * positions + pos) * c + ch, v);
      sum += nhwc_stored (out, v);
    }
  }
  if (squeeze)
    nhwc_strip_store (part, sum, ch, c, img, strip, strips, squeeze);
}

/* The fp16 form for an even channel count: each thread computes two adjacent channels
 * (one 4-byte load per tap, a warp covering 64 channels), each with the scalar form's
 * taps in the same order, so the same bits. */
static __global__ void __launch_bounds__ (GPUNET_NHWC_CH * GPUNET_NHWC_TY)
nhwc_dw_h2_kernel (const gpunet_half *__restrict__ in, const gpunet_half *__restrict__ w,
    const float *__restrict__ bias, gpunet_half *__restrict__ out, int c, int ih, int iw, int oh,
    int ow, int k, int stride, int pad, int act, float *__restrict__ squeeze, int slen)
{
  gpunet_pdl_wait ();
  __shared__ float part[2][GPUNET_NHWC_TY][GPUNET_NHWC_CH];
  const int ch = (blockIdx.x * GPUNET_NHWC_CH + threadIdx.x) * 2;
  const long long img = blockIdx.z;
  const int strip = blockIdx.y, strips = gridDim.y;
  const long long positions = (long long) oh * ow;
  float sum0 = 0.0f, sum1 = 0.0f;
  if (ch < c) {
    const gpunet_half *x = in + img * ih * iw * (long long) c + ch;
    const gpunet_half *w0 = w + (long long) ch * k * k, *w1 = w0 + k * k;
    const float b0 = bias ? bias[ch] : 0.0f, b1 = bias ? bias[ch + 1] : 0.0f;
    const long long p0 = (long long) strip * slen;
    for (int i = threadIdx.y; i < slen; i += GPUNET_NHWC_TY) {
      const long long pos = p0 + i;
      if (pos >= positions)
        break;
      const int oy = (int) (pos / ow), ox = (int) (pos % ow);
      float a0 = 0.0f, a1 = 0.0f;
      for (int ky = 0; ky < k; ky++) {
        const int iy = oy * stride + ky - pad;
        if (iy < 0 || iy >= ih)
          continue;
        for (int kx = 0; kx < k; kx++) {
          const int ix = ox * stride + kx - pad;
          if (ix < 0 || ix >= iw)
            continue;
          const unsigned v = *(const unsigned *) (x + ((long long) iy * iw + ix) * c);
          a0 += gpunet_half_to_float (w0[ky * k + kx]) * gpunet_half_to_float ((gpunet_half) (v & 0xffffu));
          a1 += gpunet_half_to_float (w1[ky * k + kx]) * gpunet_half_to_float ((gpunet_half) (v >> 16));
        }
      }
      const gpunet_half h0 = gpunet_half_from_float (gpunet_epilogue (a0, b0, act, 0.0f));
      const gpunet_half h1 = gpunet_half_from_float (gpunet_epilogue (a1, b1, act, 0.0f));
      *(unsigned *) (out + (img * positions + pos) * c + ch) = (unsigned) h0 | ((unsigned) h1 << 16);
      sum0 += gpunet_half_to_float (h0);
      sum1 += gpunet_half_to_float (h1);
    }
  }
  if (!squeeze)
    return;
  part[0][threadIdx.y][threadIdx.x] = sum0;
  part[1][threadIdx.y][threadIdx.x] = sum1;
  __syncthreads ();
  if (threadIdx.y == 0 && ch < c) {
    float t0 = 0.0f, t1 = 0.0f;
    for (int ty = 0; ty < GPUNET_NHWC_TY; ty++) {
      t0 += part[0][ty][threadIdx.x];
      t1 += part[1][ty][threadIdx.x];
    }
    squeeze[(img * c + ch) * strips + strip] = t0;
    squeeze[(img * c + ch + 1) * strips + strip] = t1;
  }
}

int
gpunet_cuda_nhwc_strips (int oh, int ow)
{
  return gpunet_nhwc_strips ((long long) oh * ow);
}

cudaError_t
gpunet_cuda_dwconv2d_nhwc (gpunet_cuda_dtype t, const gpunet_dwconv2d_params *p, const void *w,
    const float *b, const void *in, void *out, int n, float *squeeze, int fill_blocks,
    cudaStream_t stream)
{
  const long long positions = (long long) p->oh * p->ow;
  const int pairs = t == GPUNET_CUDA_F16 && p->c % 2 == 0;   /* two channels a thread */
  const int groups = ((pairs ? p->c / 2 : p->c) + GPUNET_NHWC_CH - 1) / GPUNET_NHWC_CH;
  /* the squeeze's strip sums keep 64-position strips (the SE reads them so) */
  const int slen = squeeze || fill_blocks <= 0 ? GPUNET_NHWC_STRIP
      : gpunet_nhwc_fill_strip (positions, groups, n, fill_blocks);
  const long long strips = (positions + slen - 1) / slen;
  if (n < 1 || n > 65535 || p->c < 1 || p->oh < 1 || p->ow < 1 || strips > 65535)
    return cudaErrorInvalidValue;
  const dim3 grid ((unsigned) groups, (unsigned) strips, (unsigned) n);
  const dim3 block (GPUNET_NHWC_CH, GPUNET_NHWC_TY);
  if (pairs)
    gpunet_launch (nhwc_dw_h2_kernel, grid, block, 0, stream, (const gpunet_half *) in,
        (const gpunet_half *) w, b, (gpunet_half *) out, p->c, p->ih, p->iw, p->oh, p->ow,
        p->kernel, p->stride, p->pad, p->act, squeeze, slen);
  else if (t == GPUNET_CUDA_F16)
    gpunet_launch (nhwc_dw_kernel<gpunet_half>, grid, block, 0, stream, (const gpunet_half *) in,
        (const gpunet_half *) w, b, (gpunet_half *) out, p->c, p->ih, p->iw, p->oh, p->ow,
        p->kernel, p->stride, p->pad, p->act, squeeze, slen);
  else
    gpunet_launch (nhwc_dw_kernel<float>, grid, block, 0, stream, (const float *) in, (const float *) w, b,
        (float *) out, p->c, p->ih, p->iw, p->oh, p->ow, p->kernel, p->stride, p->pad, p->act,
        squeeze, slen);
  return cudaGetLastError ();
}

/* The squeeze of an SE that follows no depthwise layer: the same strip sums, read from
 * the tensor, in the same geometry and order. */
template <typename T>
static __global__ void __launch_bounds__ (GPUNET_NHWC_CH * GPUNET_NHWC_TY)
nhwc_squeeze_kernel (const T *__restrict__ x, int c, long long positions, float *__restrict__ sums)
{
  gpunet_pdl_wait ();
  __shared__ float part[GPUNET_NHWC_TY][GPUNET_NHWC_CH];
  const int ch = blockIdx.x * GPUNET_NHWC_CH + threadIdx.x;
  const long long img = blockIdx.z;
  const int strip = blockIdx.y, strips = gridDim.y;
  float sum = 0.0f;
  if (ch < c) {
    const long long p0 = (long long) strip * GPUNET_NHWC_STRIP;
    for (int i = threadIdx.y; i < GPUNET_NHWC_STRIP; i += GPUNET_NHWC_TY) {
      const long long pos = p0 + i;
      if (pos >= positions)
        break;
      sum += gpunet_ld (x, (img * positions + pos) * c + ch);
    }
  }
  nhwc_strip_store (part, sum, ch, c, img, strip, strips, sums);
}

cudaError_t
gpunet_cuda_squeeze_nhwc (gpunet_cuda_dtype t, const void *x, int n, int c, int h, int w,
    float *sums, cudaStream_t stream)
{
  const long long positions = (long long) h * w;
  const int strips = gpunet_nhwc_strips (positions);
  if (n < 1 || n > 65535 || c < 1 || h < 1 || w < 1 || strips > 65535)
    return cudaErrorInvalidValue;
  const dim3 grid ((unsigned) ((c + GPUNET_NHWC_CH - 1) / GPUNET_NHWC_CH), (unsigned) strips,
      (unsigned) n);
  const dim3 block (GPUNET_NHWC_CH, GPUNET_NHWC_TY);
  if (t == GPUNET_CUDA_F16)
    gpunet_launch (nhwc_squeeze_kernel<gpunet_half>, grid, block, 0, stream, (const gpunet_half *) x, c,
        positions, sums);
  else
    gpunet_launch (nhwc_squeeze_kernel<float>, grid, block, 0, stream, (const float *) x, c, positions, sums);
  return cudaGetLastError ();
}

/* Global average pool: block (channel group, image) of the cuda_nhwc.h geometry; thread
 * row ty sums positions ty, ty + TY, ... of its channel, then row 0 adds the rows. */
template <typename TI, typename TO>
static __global__ void __launch_bounds__ (GPUNET_NHWC_CH * GPUNET_NHWC_TY)
nhwc_pool_kernel (const TI *__restrict__ in, TO *__restrict__ out, int c, long long plane)
{
  gpunet_pdl_wait ();
  __shared__ float part[GPUNET_NHWC_TY][GPUNET_NHWC_CH];
  const int ch = blockIdx.x * GPUNET_NHWC_CH + threadIdx.x;
  const long long img = blockIdx.y;
  float acc = 0.0f;
  if (ch < c)
    for (long long p = threadIdx.y; p < plane; p += GPUNET_NHWC_TY)
      acc += gpunet_ld (in, (img * plane + p) * c + ch);
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads ();
  if (threadIdx.y == 0 && ch < c) {
    float total = 0.0f;
    for (int ty = 0; ty < GPUNET_NHWC_TY; ty++)
      total += part[ty][threadIdx.x];
    gpunet_st (out, img * c + ch, total / (float) plane);
  }
}

cudaError_t
gpunet_cuda_pool_nhwc (gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to, void *out,
    int n, int c, long long plane, cudaStream_t stream)
{
  if (n <= 0 || c <= 0 || plane <= 0)
    return cudaSuccess;
  if (n > 65535)
    return cudaErrorInvalidValue;
  const dim3 grid ((unsigned) ((c + GPUNET_NHWC_CH - 1) / GPUNET_NHWC_CH), (unsigned) n);
  const dim3 block (GPUNET_NHWC_CH, GPUNET_NHWC_TY);
  if (ti == GPUNET_CUDA_F16 && to == GPUNET_CUDA_F16)
    gpunet_launch (nhwc_pool_kernel<gpunet_half, gpunet_half>, grid, block, 0, stream,
        (const gpunet_half *) in, (gpunet_half *) out, c, plane);
  else if (ti == GPUNET_CUDA_F16)
    gpunet_launch (nhwc_pool_kernel<gpunet_half, float>, grid, block, 0, stream,
        (const gpunet_half *) in, (float *) out, c, plane);
  else if (to == GPUNET_CUDA_F16)
    gpunet_launch (nhwc_pool_kernel<float, gpunet_half>, grid, block, 0, stream,
        (const float *) in, (gpunet_half *) out, c, plane);
  else
    gpunet_launch (nhwc_pool_kernel<float, float>, grid, block, 0, stream, (const float *) in, (float *) out,
        c, plane);
  return cudaGetLastError ();
}

/* out (NHWC when to_nhwc, else NCHW) = in (the other layout), converting the storage. */
template <typename TI, typename TO>
static __global__ void
nhwc_relayout_kernel (const TI *__restrict__ in, TO *__restrict__ out, long long total, int c,
    long long plane, int to_nhwc)
{
  gpunet_pdl_wait ();
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
    gpunet_launch (nhwc_relayout_kernel<float, gpunet_half>, blocks, GPUNET_CUDA_THREADS, 0, stream,
        (const float *) in, (gpunet_half *) out, total, c, plane, to_nhwc);
  else if (ti == GPUNET_CUDA_F16 && to == GPUNET_CUDA_F32)
    gpunet_launch (nhwc_relayout_kernel<gpunet_half, float>, blocks, GPUNET_CUDA_THREADS, 0, stream,
        (const gpunet_half *) in, (float *) out, total, c, plane, to_nhwc);
  else if (ti == GPUNET_CUDA_F16)
    gpunet_launch (nhwc_relayout_kernel<gpunet_half, gpunet_half>, blocks, GPUNET_CUDA_THREADS, 0, stream,
        (const gpunet_half *) in, (gpunet_half *) out, total, c, plane, to_nhwc);
  else
    gpunet_launch (nhwc_relayout_kernel<float, float>, blocks, GPUNET_CUDA_THREADS, 0, stream,
        (const float *) in, (float *) out, total, c, plane, to_nhwc);
  return cudaGetLastError ();
}
