/* se.cu: squeeze-excite in place: row means (pool.cu), reduce FC + act and expand FC +
 * sigmoid (linear.cu), then this file's kernel multiplies each channel plane by its
 * gate.  x and the weights are float or fp16; the scratch is float: means n*c | mid n*rd
 * | gates n*c.  The opt-in fused form (cuda_fused.h) starts from the tile sums the
 * depthwise kernel wrote: a reduce kernel (means, first FC) over several blocks per
 * image, then one kernel computing each channel's gate and scaling its plane.  The NHWC
 * form (the fused path's level 2) runs the same reduce kernel over the strip sums the
 * NHWC depthwise or squeeze kernel wrote, then gate_scale_nhwc_kernel. */
#include "cuda_fused.h"
#include "cuda_internal.h"
#include "cuda_nhwc.h"
#include "cuda_storage.h"

template <typename T>
static __global__ void
scale_kernel (T *x, const float *__restrict__ gate, long long total, long long plane)
{
  gpunet_pdl_wait ();
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    gpunet_st (x, i, gpunet_ld (x, i) * gate[i / plane]);
}

/* The reduce half of the excite: gpunet_se_split (rd) blocks per image each turn the
 * tile sums into the means (all of them, in the same order) and compute their share of
 * mid = act(W1 mean + b1), a warp per row (cuda_fused.h). */
template <typename T>
static __global__ void __launch_bounds__ (GPUNET_EXCITE_THREADS)
reduce_kernel (const float *__restrict__ tile_sums, int tiles, long long plane, int c, int rd,
    int act, int split, const T *__restrict__ w1, const float *__restrict__ b1,
    float *__restrict__ mid)
{
  gpunet_pdl_wait ();
  extern __shared__ __align__ (16) float ex_shared[];
  float *mean = ex_shared;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5, warps = GPUNET_EXCITE_THREADS / 32;
  const long long img = blockIdx.x / split;
  const int part_i = (int) (blockIdx.x % split);
  for (int ch = t; ch < c; ch += GPUNET_EXCITE_THREADS)
    mean[ch] = gpunet_se_mean_from_tiles (tile_sums + (img * c + ch) * tiles, tiles, plane);
  __syncthreads ();
  for (int r = part_i * warps + warp; r < rd; r += warps * split) {
    const float d = gpunet_warp_sum (gpunet_dot_partial_t (w1 + (long long) r * c, mean, c,
        lane, 32));
    if (lane == 0)
      mid[img * rd + r] = gpunet_se_mid (d, b1 ? b1[r] : 0.0f, act);
  }
}

/* The expand half and the scale: block (image, channel) has warp 0 compute the channel's
 * gate = sigmoid(W2 mid + b2) (cuda_fused.h), then every thread multiplies its share of
 * the channel's plane by it, as the unfused scale kernel does. */
template <typename T>
static __global__ void __launch_bounds__ (GPUNET_GATE_THREADS)
gate_scale_kernel (T *x, const float *__restrict__ mid, int c, int rd, long long plane,
    const T *__restrict__ w2, const float *__restrict__ b2)
{
  gpunet_pdl_wait ();
  __shared__ float gate;
  const long long row = blockIdx.x;   /* image * c + channel */
  const long long img = row / c;
  const int ch = (int) (row % c);
  if (threadIdx.x < 32) {
    const float d = gpunet_warp_sum (gpunet_dot_partial_t (w2 + (long long) ch * rd,
        mid + img * rd, rd, (int) threadIdx.x, 32));
    if (threadIdx.x == 0)
      gate = gpunet_se_gate (d, b2 ? b2[ch] : 0.0f);
  }
  __syncthreads ();
  T *xp = x + row * plane;
  for (long long i = threadIdx.x; i < plane; i += GPUNET_GATE_THREADS)
    gpunet_st (xp, i, gpunet_ld (xp, i) * gate);
}

int
gpunet_cuda_excite_fits (int c, int rd)
{
  return c >= 1 && rd >= 1 && gpunet_excite_shared_bytes (c, rd) <= 48 * 1024;
}

/* The reduce kernel over n images' tile (or strip) sums into mid (n * rd floats). */
template <typename T>
static cudaError_t
launch_reduce (const gpunet_se_params *p, const void *w1, const float *b1,
    const float *tile_sums, int tiles, float *mid, int n, cudaStream_t stream)
{
  const int split = gpunet_se_split (p->rd);
  if ((long long) n * split > 0x7fffffffll)
    return cudaErrorInvalidValue;
  gpunet_launch (reduce_kernel<T>, (unsigned) (n * split), GPUNET_EXCITE_THREADS,
      (size_t) gpunet_excite_shared_bytes (p->c, p->rd), stream, tile_sums, tiles,
      (long long) p->h * p->w, p->c, p->rd, p->act, split, (const T *) w1, b1, mid);
  return cudaGetLastError ();
}

template <typename T>
static cudaError_t
launch_fused (const gpunet_se_params *p, const void *w1, const float *b1, const void *w2,
    const float *b2, void *x, const float *tile_sums, int tiles, float *mid, int n,
    cudaStream_t stream)
{
  const long long plane = (long long) p->h * p->w, rows = (long long) n * p->c;
  if (rows > 0x7fffffffll)
    return cudaErrorInvalidValue;
  cudaError_t e = launch_reduce<T> (p, w1, b1, tile_sums, tiles, mid, n, stream);
  if (e != cudaSuccess)
    return e;
  gpunet_launch (gate_scale_kernel<T>, (unsigned) rows, GPUNET_GATE_THREADS, 0, stream, (T *) x, mid, p->c,
      p->rd, plane, (const T *) w2, b2);
  return cudaGetLastError ();
}

cudaError_t
gpunet_cuda_se_fused (gpunet_cuda_dtype t, const gpunet_se_params *p, const void *w1,
    const float *b1, const void *w2, const float *b2, void *x, const float *tile_sums,
    int tiles, float *mid, int n, cudaStream_t stream)
{
  if (n < 1 || tiles < 1 || p->h < 1 || p->w < 1 || !gpunet_cuda_excite_fits (p->c, p->rd))
    return cudaErrorInvalidValue;
  return t == GPUNET_CUDA_F16
      ? launch_fused<gpunet_half> (p, w1, b1, w2, b2, x, tile_sums, tiles, mid, n, stream)
      : launch_fused<float> (p, w1, b1, w2, b2, x, tile_sums, tiles, mid, n, stream);
}

cudaError_t
gpunet_cuda_se (gpunet_cuda_dtype t, const gpunet_se_params *p, const void *w1,
    const float *b1, const void *w2, const float *b2, void *x, float *scratch, int n,
    cudaStream_t stream)
{
  const long long plane = (long long) p->h * p->w, rows = (long long) n * p->c;
  float *mean = scratch, *mid = scratch + rows, *gate = mid + (long long) n * p->rd;
  cudaError_t e = gpunet_cuda_row_mean (t, x, GPUNET_CUDA_F32, mean, rows, plane, stream);
  if (e == cudaSuccess)
    e = gpunet_cuda_linear (p->c, p->rd, p->act, t, w1, b1, GPUNET_CUDA_F32, mean,
        GPUNET_CUDA_F32, mid, n, stream);
  if (e == cudaSuccess)
    e = gpunet_cuda_linear (p->rd, p->c, GPUNET_CUDA_ACT_SIGMOID, t, w2, b2, GPUNET_CUDA_F32,
        mid, GPUNET_CUDA_F32, gate, n, stream);
  if (e != cudaSuccess)
    return e;
  const long long total = rows * plane;
  if (total <= 0)
    return cudaSuccess;
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  if (t == GPUNET_CUDA_F16)
    gpunet_launch (scale_kernel<gpunet_half>, blocks, GPUNET_CUDA_THREADS, 0, stream, (gpunet_half *) x,
        gate, total, plane);
  else
    gpunet_launch (scale_kernel<float>, blocks, GPUNET_CUDA_THREADS, 0, stream, (float *) x, gate, total,
        plane);
  return cudaGetLastError ();
}

static __device__ __forceinline__ float
se_gate_seq_t (const float *w2row, const float *mid, int rd, float bias)
{
  return gpunet_se_gate_seq (w2row, mid, rd, bias);
}

static __device__ __forceinline__ float
se_gate_seq_t (const gpunet_half *w2row, const float *mid, int rd, float bias)
{
  return gpunet_se_gate_seq_h (w2row, mid, rd, bias);
}

/* NHWC, in the geometry of cuda_nhwc.h: block (channel group, strip, image) has its first
 * thread row compute the group's gates (gpunet_se_gate_seq) into shared memory, then every
 * thread scales its channel at its positions of the strip. */
template <typename T>
static __global__ void __launch_bounds__ (GPUNET_NHWC_CH * GPUNET_NHWC_TY)
gate_scale_nhwc_kernel (T *x, const float *__restrict__ mid, int c, int rd, long long plane,
    const T *__restrict__ w2, const float *__restrict__ b2)
{
  gpunet_pdl_wait ();
  __shared__ float gates[GPUNET_NHWC_CH];
  const int ch = blockIdx.x * GPUNET_NHWC_CH + threadIdx.x;
  const long long img = blockIdx.z;
  if (threadIdx.y == 0 && ch < c)
    gates[threadIdx.x] = se_gate_seq_t (w2 + (long long) ch * rd, mid + img * rd, rd,
        b2 ? b2[ch] : 0.0f);
  __syncthreads ();
  if (ch >= c)
    return;
  const float g = gates[threadIdx.x];
  const long long p0 = (long long) blockIdx.y * GPUNET_NHWC_STRIP;
  for (int i = threadIdx.y; i < GPUNET_NHWC_STRIP; i += GPUNET_NHWC_TY) {
    const long long pos = p0 + i;
    if (pos >= plane)
      break;
    const long long at = (img * plane + pos) * c + ch;
    gpunet_st (x, at, gpunet_ld (x, at) * g);
  }
}

template <typename T>
static cudaError_t
launch_nhwc (const gpunet_se_params *p, const void *w1, const float *b1, const void *w2,
    const float *b2, void *x, const float *tile_sums, int tiles, float *mid, int n,
    cudaStream_t stream)
{
  const long long plane = (long long) p->h * p->w;
  if (n > 65535)
    return cudaErrorInvalidValue;
  cudaError_t e = launch_reduce<T> (p, w1, b1, tile_sums, tiles, mid, n, stream);
  if (e != cudaSuccess)
    return e;
  const int strips = gpunet_nhwc_strips (plane);
  if (strips > 65535)
    return cudaErrorInvalidValue;
  const dim3 grid ((unsigned) ((p->c + GPUNET_NHWC_CH - 1) / GPUNET_NHWC_CH), (unsigned) strips,
      (unsigned) n);
  gpunet_launch (gate_scale_nhwc_kernel<T>, grid, dim3 (GPUNET_NHWC_CH, GPUNET_NHWC_TY), 0, stream, (T *) x,
      mid, p->c, p->rd, plane, (const T *) w2, b2);
  return cudaGetLastError ();
}

cudaError_t
gpunet_cuda_se_nhwc (gpunet_cuda_dtype t, const gpunet_se_params *p, const void *w1,
    const float *b1, const void *w2, const float *b2, void *x, const float *tile_sums,
    int tiles, float *mid, int n, cudaStream_t stream)
{
  if (n < 1 || tiles < 1 || p->h < 1 || p->w < 1 || !gpunet_cuda_excite_fits (p->c, p->rd))
    return cudaErrorInvalidValue;
  return t == GPUNET_CUDA_F16
      ? launch_nhwc<gpunet_half> (p, w1, b1, w2, b2, x, tile_sums, tiles, mid, n, stream)
      : launch_nhwc<float> (p, w1, b1, w2, b2, x, tile_sums, tiles, mid, n, stream);
}
