/* dwconv2d.cu: depthwise convolution (one k x k filter per channel) with the epilogue
 * act(acc + bias) over NCHW, float or fp16 storage.  The default, tiled kernel stages
 * each tile's input window in shared memory and has each thread sum 4 adjacent outputs
 * from it; the direct kernel (other kernel sizes and strides, or the option dwconv=direct)
 * runs one grid-stride thread per output element (gpunet_dwconv_out_at[_h]).  Both give
 * the same bits (cuda_math.h explains why).  For the opt-in fused SE the tiled kernel
 * also writes each tile's output sum, the SE squeeze (cuda_fused.h). */
#include <stdlib.h>
#include <string.h>

#include "cuda_fused.h"
#include "cuda_internal.h"
#include "cuda_storage.h"

template <typename T>
static __global__ void
dwconv2d_kernel (const T *__restrict__ in, const T *__restrict__ w,
    const float *__restrict__ b, T *__restrict__ out, long long total, int c, int ih,
    int iw, int oh, int ow, int k, int stride, int pad, int act)
{
  gpunet_pdl_wait ();
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    gpunet_st (out, i, gpunet_dwconv_out_at_t (in, w, b, i, c, ih, iw, oh, ow, k, stride, pad, act));
}

/* The tiled kernel (cuda_math.h, "the tiled depthwise kernel"): block b computes tile
 * b % tiles of plane b / tiles; dynamic shared memory holds the input window (rows
 * in_stride apart; the columns past in_cols are read by the float4 loads but never summed)
 * and then the filter, as float.  K and S are compile-time so the quad sums unroll into
 * registers.  128 threads, up to 8 window loads in flight per thread, tiles of at most 256
 * quads (tiles of 512 and 1024 quads measured the same on the H100, and so did one window
 * load at a time). */
enum { DW_TILE_THREADS = GPUNET_DW_SQ_THREADS, DW_TILE_LOADS = 8, DW_TILE_QUADS = 256 };

/* SQ (the opt-in fused SE): the block also writes the sum of the outputs it stored to
 * squeeze[blockIdx.x], i.e. tile tile_i of plane `plane` (cuda_fused.h).  Without SQ the
 * code is the default kernel's, unchanged. */
template <typename T, int K, int S, bool SQ>
static __global__ void __launch_bounds__ (DW_TILE_THREADS)
dwconv2d_tiled_kernel (const T *__restrict__ in, const T *__restrict__ w,
    const float *__restrict__ b, T *__restrict__ out, gpunet_dw_tiling t, int c, int ih, int iw,
    int oh, int ow, int pad, int act, float *__restrict__ squeeze)
{
  gpunet_pdl_wait ();
  extern __shared__ __align__ (16) float shared[];
  float *tile = shared, *wk = shared + t.in_rows * t.in_stride;   /* both 16-byte aligned */
  const unsigned tiles = (unsigned) (t.tiles_x * t.tiles_y);
  const long long plane = blockIdx.x / tiles;            /* image * c + channel */
  const int tile_i = (int) (blockIdx.x % tiles), ty = tile_i / t.tiles_x, tx = tile_i % t.tiles_x;
  const int ch = (int) (plane % c);
  const T *src = in + plane * ih * iw;
  for (int i = threadIdx.x; i < K * K; i += DW_TILE_THREADS)
    wk[i] = gpunet_ld (w, (long long) ch * K * K + i);
  /* the window, DW_TILE_LOADS values per thread at a time: the loads first, then the
   * shared stores */
  const int n_in = t.in_rows * t.in_stride;
  for (int base = threadIdx.x; base < n_in; base += DW_TILE_LOADS * DW_TILE_THREADS) {
    float v[DW_TILE_LOADS];
#pragma unroll
    for (int m = 0; m < DW_TILE_LOADS; m++) {
      const int i = base + m * DW_TILE_THREADS, r = i / t.in_stride;
      long long off = 0;
      v[m] = i < n_in && gpunet_dw_tile_src (&t, ty, tx, S, pad, ih, iw, r, i - r * t.in_stride, &off)
          ? gpunet_ld (src, off) : 0.0f;
    }
#pragma unroll
    for (int m = 0; m < DW_TILE_LOADS; m++)
      if (base + m * DW_TILE_THREADS < n_in)
        tile[base + m * DW_TILE_THREADS] = v[m];
  }
  __syncthreads ();
  const float bias = b ? b[ch] : 0.0f;
  T *dst = out + plane * oh * ow;
  if constexpr (!SQ) {
    for (int q = threadIdx.x; q < t.quads; q += DW_TILE_THREADS) {
      float acc[4];
      gpunet_dwconv_quad_at (tile, &t, wk, K, S, q, acc);
#pragma unroll
      for (int j = 0; j < 4; j++) {
        int oy, ox;
        if (gpunet_dw_quad_out (&t, ty, tx, q, j, oh, ow, &oy, &ox))
          gpunet_st (dst, (long long) oy * ow + ox, gpunet_epilogue (acc[j], bias, act, 0.0f));
      }
    }
  } else {
    __shared__ float sq_part[DW_TILE_THREADS];
    const int half = sizeof (T) == 2;
    float sq = 0.0f;
    for (int q = threadIdx.x; q < t.quads; q += DW_TILE_THREADS) {
      float acc[4], o[4];
      int inside[4], oy[4], ox[4];
      gpunet_dwconv_quad_at (tile, &t, wk, K, S, q, acc);
      sq += gpunet_dw_quad_store (&t, ty, tx, q, oh, ow, acc, bias, act, half, o, inside, oy, ox);
#pragma unroll
      for (int j = 0; j < 4; j++)
        if (inside[j])
          gpunet_st (dst, (long long) oy[j] * ow + ox[j], o[j]);
    }
    sq_part[threadIdx.x] = sq;
    __syncthreads ();
    for (int s = DW_TILE_THREADS / 2; s > 0; s >>= 1) {
      gpunet_tree_step (sq_part, threadIdx.x, s);
      __syncthreads ();
    }
    if (threadIdx.x == 0)
      squeeze[blockIdx.x] = sq_part[0];
  }
}

template <typename T, int K, int S>
static cudaError_t
launch_tiled (const gpunet_dwconv2d_params *p, const gpunet_dw_tiling *t, const void *w,
    const float *b, const void *in, void *out, unsigned blocks, size_t shared, cudaStream_t stream,
    float *squeeze)
{
  if (squeeze)
    gpunet_launch (dwconv2d_tiled_kernel<T, K, S, true>, blocks, DW_TILE_THREADS, shared, stream,
        (const T *) in, (const T *) w, b, (T *) out, *t, p->c, p->ih, p->iw, p->oh, p->ow, p->pad,
        p->act, squeeze);
  else
    gpunet_launch (dwconv2d_tiled_kernel<T, K, S, false>, blocks, DW_TILE_THREADS, shared, stream,
        (const T *) in, (const T *) w, b, (T *) out, *t, p->c, p->ih, p->iw, p->oh, p->ow, p->pad,
        p->act, (float *) NULL);
  return cudaGetLastError ();
}

/* The tiling of p's tiled kernel for n images in *t, its dynamic shared bytes and blocks,
 * or 0 when p runs the direct kernel (other shapes, the option dwconv=direct, or too big
 * a window; with the squeeze, the window leaves room for its 128 static floats). */
static int
tiled_plan (const gpunet_dwconv2d_params *p, int n, int squeeze, int direct, gpunet_dw_tiling *t,
    size_t *shared, unsigned *blocks)
{
  const int k = p->kernel, s = p->stride;
  if (direct || !(k == 3 || k == 5 || k == 7) || !(s == 1 || s == 2))
    return 0;
  *t = gpunet_dw_tiling_for (p->oh, p->ow, k, s, DW_TILE_QUADS);
  *shared = sizeof (float) * ((size_t) t->in_rows * t->in_stride + (size_t) k * k);
  const long long nb = (long long) n * p->c * t->tiles_x * t->tiles_y;
  const size_t limit = 48 * 1024 - (squeeze ? sizeof (float) * DW_TILE_THREADS : 0);
  if (*shared > limit || nb > 0x7fffffffll)
    return 0;
  *blocks = (unsigned) nb;
  return 1;
}

template <typename T>
static cudaError_t
launch_tiled_ks (const gpunet_dwconv2d_params *p, const gpunet_dw_tiling *t, const void *w,
    const float *b, const void *in, void *out, unsigned nb, size_t shared, cudaStream_t stream,
    float *squeeze)
{
  switch (p->kernel * 10 + p->stride) {
    case 31: return launch_tiled<T, 3, 1> (p, t, w, b, in, out, nb, shared, stream, squeeze);
    case 32: return launch_tiled<T, 3, 2> (p, t, w, b, in, out, nb, shared, stream, squeeze);
    case 51: return launch_tiled<T, 5, 1> (p, t, w, b, in, out, nb, shared, stream, squeeze);
    case 52: return launch_tiled<T, 5, 2> (p, t, w, b, in, out, nb, shared, stream, squeeze);
    case 71: return launch_tiled<T, 7, 1> (p, t, w, b, in, out, nb, shared, stream, squeeze);
    default: return launch_tiled<T, 7, 2> (p, t, w, b, in, out, nb, shared, stream, squeeze);
  }
}

template <typename T>
static cudaError_t
launch (const gpunet_dwconv2d_params *p, const void *w, const float *b, const void *in,
    void *out, long long total, int direct, cudaStream_t stream)
{
  gpunet_dw_tiling t;
  size_t shared = 0;
  unsigned nb = 0;
  if (tiled_plan (p, (int) (total / ((long long) p->c * p->oh * p->ow)), 0, direct, &t, &shared,
      &nb))
    return launch_tiled_ks<T> (p, &t, w, b, in, out, nb, shared, stream, NULL);
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  gpunet_launch (dwconv2d_kernel<T>, blocks, GPUNET_CUDA_THREADS, 0, stream, (const T *) in, (const T *) w,
      b, (T *) out, total, p->c, p->ih, p->iw, p->oh, p->ow, p->kernel, p->stride, p->pad, p->act);
  return cudaGetLastError ();
}

cudaError_t
gpunet_cuda_dwconv2d (gpunet_cuda_dtype t, const gpunet_dwconv2d_params *p, const void *w,
    const float *b, const void *in, void *out, int n, int direct, cudaStream_t stream)
{
  const long long total = (long long) n * p->c * p->oh * p->ow;
  if (total <= 0)
    return cudaSuccess;
  return t == GPUNET_CUDA_F16 ? launch<gpunet_half> (p, w, b, in, out, total, direct, stream)
      : launch<float> (p, w, b, in, out, total, direct, stream);
}

int
gpunet_cuda_dwconv2d_squeeze_tiles (const gpunet_dwconv2d_params *p, int max_n, int direct)
{
  gpunet_dw_tiling t;
  size_t shared = 0;
  unsigned nb = 0;
  return tiled_plan (p, max_n, 1, direct, &t, &shared, &nb) ? t.tiles_x * t.tiles_y : 0;
}

cudaError_t
gpunet_cuda_dwconv2d_squeeze (gpunet_cuda_dtype dt, const gpunet_dwconv2d_params *p,
    const void *w, const float *b, const void *in, void *out, int n, float *squeeze,
    cudaStream_t stream)
{
  gpunet_dw_tiling t;
  size_t shared = 0;
  unsigned nb = 0;
  if (n < 1 || !squeeze || !tiled_plan (p, n, 1, 0, &t, &shared, &nb))
    return cudaErrorInvalidValue;
  return dt == GPUNET_CUDA_F16
      ? launch_tiled_ks<gpunet_half> (p, &t, w, b, in, out, nb, shared, stream, squeeze)
      : launch_tiled_ks<float> (p, &t, w, b, in, out, nb, shared, stream, squeeze);
}
