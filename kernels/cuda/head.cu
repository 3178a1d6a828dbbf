/* head.cu: the opt-in fused head (gpunet_session_params.cuda_fused): global average pool,
 * classifier, and (k > 0) softmax + top-k in one kernel, which writes float logits as
 * well; gpunet_head_split blocks per image share the classes, and the last of them to
 * finish does the top-k.  The arithmetic and its order are cuda_fused.h's; this file maps
 * warps to channels and classes.  Each warp pools four channels at a time: one at a time
 * (each waiting on its loads) the fused path took GPUNet-0 fp16 to 1.067 of the plain
 * path's time on the H200, four at a time to 1.010 (2026-11-26). */
#include "cuda_fused.h"
#include "cuda_internal.h"
#include "cuda_storage.h"

template <typename T>
static __device__ __forceinline__ void
row_shares (const T *rows, long long plane, int m, int lane, float *acc);

template <>
__device__ __forceinline__ void
row_shares<float> (const float *rows, long long plane, int m, int lane, float *acc)
{
  gpunet_row_sum_partials (rows, plane, m, lane, 32, acc);
}

template <>
__device__ __forceinline__ void
row_shares<gpunet_half> (const gpunet_half *rows, long long plane, int m, int lane, float *acc)
{
  gpunet_row_sum_partials_h (rows, plane, m, lane, 32, acc);
}

template <typename T>
static __global__ void __launch_bounds__ (GPUNET_HEAD_THREADS)
head_kernel (const T *__restrict__ in, int c, long long plane, const T *__restrict__ w,
    const float *__restrict__ b, int classes, int act, int n_pow2, int k, int split,
    float *logits, gpunet_class_score *__restrict__ out, unsigned *__restrict__ tickets)
{
  gpunet_pdl_wait ();
  extern __shared__ __align__ (16) double head_shared[];
  double *part = head_shared;
  float *val = (float *) (part + GPUNET_HEAD_THREADS);
  int *id = (int *) (val + n_pow2);
  float *pooled = (float *) (id + n_pow2);
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5, warps = GPUNET_HEAD_THREADS / 32;
  const long long img = blockIdx.x / split;
  const int part_i = (int) (blockIdx.x % split);
  const T *x = in + img * c * plane;
  for (int ch0 = warp * GPUNET_HEAD_ROWS; ch0 < c; ch0 += warps * GPUNET_HEAD_ROWS) {
    const int m = c - ch0 < GPUNET_HEAD_ROWS ? c - ch0 : GPUNET_HEAD_ROWS;
    float acc[GPUNET_HEAD_ROWS];
    row_shares<T> (x + ch0 * plane, plane, m, lane, acc);
#pragma unroll
    for (int u = 0; u < GPUNET_HEAD_ROWS; u++) {
      const float s = gpunet_warp_sum (acc[u]);   /* every lane takes part, u < m or not */
      if (lane == 0 && u < m)
        pooled[ch0 + u] = gpunet_head_mean (s, plane);
    }
  }
  __syncthreads ();
  for (int j = part_i * warps + warp; j < classes; j += warps * split) {
    const float d = gpunet_warp_sum (gpunet_dot_partial_t (w + (long long) j * c, pooled, c,
        lane, 32));
    if (lane == 0)
      logits[img * classes + j] = gpunet_head_logit (d, b ? b[j] : 0.0f, act);
  }
  if (k <= 0)
    return;
  /* the last block of this image to get here sees every block's logits: each makes its
   * stores visible device-wide before taking a ticket */
  __shared__ int last;
  __threadfence ();
  __syncthreads ();
  if (t == 0) {
    const unsigned ticket = atomicAdd (&tickets[img], 1u);
    last = ticket == (unsigned) split - 1;
    if (last)
      tickets[img] = 0;   /* ready for the next launch (or graph replay) */
  }
  __syncthreads ();
  if (!last)
    return;
  for (int i = t; i < n_pow2; i += GPUNET_HEAD_THREADS) {
    val[i] = i < classes ? __ldcg (&logits[img * classes + i]) : 0.0f;   /* not via L1 */
    id[i] = i < classes ? i : -1;
  }
  __syncthreads ();
  for (int size = 2; size <= n_pow2; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = t; i < n_pow2; i += GPUNET_HEAD_THREADS)
        gpunet_bitonic_step (val, id, i, size, stride);
      __syncthreads ();
    }
  const double max = val[0];
  part[t] = gpunet_softmax_partial (val, classes, max, t, GPUNET_HEAD_THREADS);
  __syncthreads ();
  for (int s = GPUNET_HEAD_THREADS / 2; s > 0; s >>= 1) {
    gpunet_tree_step_d (part, t, s);
    __syncthreads ();
  }
  const double sum = part[0];
  for (int j = t; j < k; j += GPUNET_HEAD_THREADS) {
    gpunet_class_score r;
    r.id = id[j];
    r.score = gpunet_softmax_score (val[j], max, sum);
    out[img * k + j] = r;
  }
}

int
gpunet_cuda_head_fits (int c, int classes)
{
  return c >= 1 && classes >= 1 && classes <= GPUNET_CUDA_TOPK_MAX
      && gpunet_head_shared_bytes (c, classes) <= 48 * 1024 - 64;   /* 64: `last` */
}

cudaError_t
gpunet_cuda_head (gpunet_cuda_dtype t, const void *in, int c, long long plane, const void *w,
    const float *b, int classes, int act, int n, int k, float *logits, gpunet_class_score *out,
    unsigned *tickets, cudaStream_t stream)
{
  if (n < 1 || plane < 1 || !gpunet_cuda_head_fits (c, classes) || k > classes
      || (k > 0 && (!out || !tickets)))
    return cudaErrorInvalidValue;
  const size_t shared = (size_t) gpunet_head_shared_bytes (c, classes);
  const int n_pow2 = gpunet_pow2_ceil (classes), split = gpunet_head_split (classes);
  const long long blocks = (long long) n * split;
  if (blocks > 0x7fffffffll)
    return cudaErrorInvalidValue;
  if (t == GPUNET_CUDA_F16)
    gpunet_launch (head_kernel<gpunet_half>, (unsigned) blocks, GPUNET_HEAD_THREADS, shared, stream,
        (const gpunet_half *) in, c, plane, (const gpunet_half *) w, b, classes, act, n_pow2, k,
        split, logits, out, tickets);
  else
    gpunet_launch (head_kernel<float>, (unsigned) blocks, GPUNET_HEAD_THREADS, shared, stream,
        (const float *) in, c, plane, (const float *) w, b, classes, act, n_pow2, k, split,
        logits, out, tickets);
  return cudaGetLastError ();
}
