/* dwconv2d.cu: direct depthwise convolution (one k x k filter per channel) with the
 * epilogue act(acc + bias) over NCHW, float or fp16 storage.  The default kernel runs one
 * grid-stride thread per output element (gpunet_dwconv_out_at[_h], cuda_math.h); the
 * tiled one (GPUNET_CUDA_DWCONV=tiled, not yet run on a GPU) stages each tile's input
 * window in shared memory and gives the same bits (cuda_math.h explains why). */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "cuda_storage.h"

template <typename T>
static __global__ void
dwconv2d_kernel (const T *__restrict__ in, const T *__restrict__ w,
    const float *__restrict__ b, T *__restrict__ out, long long total, int c, int ih,
    int iw, int oh, int ow, int k, int stride, int pad, int act)
{
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    gpunet_st (out, i, gpunet_dwconv_out_at_t (in, w, b, i, c, ih, iw, oh, ow, k, stride, pad, act));
}

/* The tiled kernel (cuda_math.h, "the tiled depthwise kernel"): block b computes tile
 * b % tiles of plane b / tiles; dynamic shared memory holds the input window and the
 * filter as float. */
template <typename T>
static __global__ void
dwconv2d_tiled_kernel (const T *__restrict__ in, const T *__restrict__ w,
    const float *__restrict__ b, T *__restrict__ out, gpunet_dw_tiling t, int c, int ih, int iw,
    int oh, int ow, int k, int stride, int pad, int act)
{
  extern __shared__ float shared[];
  float *tile = shared, *wk = shared + t.in_rows * t.in_cols;
  const int tiles = t.tiles_x * t.tiles_y;
  const long long plane = blockIdx.x / tiles;            /* image * c + channel */
  const int tile_i = (int) (blockIdx.x % tiles), ty = tile_i / t.tiles_x, tx = tile_i % t.tiles_x;
  const int ch = (int) (plane % c);
  const T *src = in + plane * ih * iw;
  for (int i = threadIdx.x; i < k * k; i += blockDim.x)
    wk[i] = gpunet_ld (w, (long long) ch * k * k + i);
  for (int i = threadIdx.x; i < t.in_rows * t.in_cols; i += blockDim.x) {
    long long off = 0;
    tile[i] = gpunet_dw_tile_src (&t, ty, tx, stride, pad, ih, iw, i, &off) ? gpunet_ld (src, off)
        : 0.0f;
  }
  __syncthreads ();
  int oy, ox;
  if (gpunet_dw_tile_out (&t, ty, tx, threadIdx.x, oh, ow, &oy, &ox)) {
    const float acc = gpunet_dwconv_tile_at (tile, &t, wk, k, stride, threadIdx.x);
    gpunet_st (out, plane * oh * ow + (long long) oy * ow + ox,
        gpunet_epilogue (acc, b ? b[ch] : 0.0f, act, 0.0f));
  }
}

/* GPUNET_CUDA_DWCONV=tiled: the tiled kernel where its shared memory and grid fit; else
 * (the default, the kernel measured on the H100) one thread per output.  Read once per
 * process (a C++ function-local static: initialised once, thread-safe), not per launch. */
static int
read_tiled_env (void)
{
  const char *v = getenv ("GPUNET_CUDA_DWCONV");
  return v && !strcmp (v, "tiled");
}

static int
use_tiled (void)
{
  static const int tiled = read_tiled_env ();
  return tiled;
}

template <typename T>
static cudaError_t
launch (const gpunet_dwconv2d_params *p, const void *w, const float *b, const void *in,
    void *out, long long total, cudaStream_t stream)
{
  if (use_tiled ()) {
    const gpunet_dw_tiling t = gpunet_dw_tiling_for (p->oh, p->ow, p->kernel, p->stride,
        GPUNET_CUDA_THREADS);
    const size_t shared = sizeof (float) * ((size_t) t.in_rows * t.in_cols
        + (size_t) p->kernel * p->kernel);
    const long long planes = total / ((long long) p->oh * p->ow);
    const long long blocks = planes * t.tiles_x * t.tiles_y;
    if (shared <= 48 * 1024 && blocks <= 0x7fffffffll) {
      dwconv2d_tiled_kernel<T><<<(unsigned) blocks, GPUNET_CUDA_THREADS, shared, stream>>> (
          (const T *) in, (const T *) w, b, (T *) out, t, p->c, p->ih, p->iw, p->oh, p->ow,
          p->kernel, p->stride, p->pad, p->act);
      return cudaGetLastError ();
    }
  }
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  dwconv2d_kernel<T><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> ((const T *) in, (const T *) w,
      b, (T *) out, total, p->c, p->ih, p->iw, p->oh, p->ow, p->kernel, p->stride, p->pad, p->act);
  return cudaGetLastError ();
}

cudaError_t
gpunet_cuda_dwconv2d (gpunet_cuda_dtype t, const gpunet_dwconv2d_params *p, const void *w,
    const float *b, const void *in, void *out, int n, cudaStream_t stream)
{
  const long long total = (long long) n * p->c * p->oh * p->ow;
  if (total <= 0)
    return cudaSuccess;
  return t == GPUNET_CUDA_F16 ? launch<gpunet_half> (p, w, b, in, out, total, stream)
      : launch<float> (p, w, b, in, out, total, stream);
}
