/* linear.cu: fully connected layer out = act(W in + b) for n vectors, one warp per output
 * value: each lane takes a strided share of the dot product (gpunet_dot_partial[_hh/_hf]
 * in cuda_math.h), then a shuffle reduction.  Also serves SE's two 1x1 convolutions
 * (float input from the SE scratch).  Weights float or fp16, biases float. */
#include "cuda_internal.h"
#include "cuda_storage.h"

enum { WARPS_PER_BLOCK = GPUNET_CUDA_THREADS / 32 };

template <typename TW, typename TI, typename TO>
static __global__ void
linear_kernel (const TW *__restrict__ w, const float *__restrict__ b,
    const TI *__restrict__ in, TO *__restrict__ out, int cin, int cout, long long total,
    int act)
{
  gpunet_pdl_wait ();
  const int lane = threadIdx.x & 31;
  const long long step = (long long) gridDim.x * WARPS_PER_BLOCK;
  for (long long o = (long long) blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5); o < total;
      o += step) {
    const long long img = o / cout;
    const int row = (int) (o % cout);
    float acc = gpunet_dot_partial_t (w + (long long) row * cin, in + img * cin, cin, lane, 32);
    for (int off = 16; off > 0; off /= 2)
      acc += __shfl_down_sync (0xffffffffu, acc, off);
    if (lane == 0)
      gpunet_st (out, o, gpunet_cuda_act (acc + (b ? b[row] : 0.0f), act));
  }
}

template <typename TW, typename TI, typename TO>
static cudaError_t
launch (int cin, int cout, int act, const void *w, const float *b, const void *in, void *out,
    long long total, cudaStream_t stream)
{
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, WARPS_PER_BLOCK, 1 << 20);
  gpunet_launch (linear_kernel<TW, TI, TO>, blocks, GPUNET_CUDA_THREADS, 0, stream, (const TW *) w, b,
      (const TI *) in, (TO *) out, cin, cout, total, act);
  return cudaGetLastError ();
}

cudaError_t
gpunet_cuda_linear (int cin, int cout, int act, gpunet_cuda_dtype tw, const void *w,
    const float *b, gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to, void *out,
    int n, cudaStream_t stream)
{
  const long long total = (long long) n * cout;
  if (total <= 0)
    return cudaSuccess;
  const int oh = to == GPUNET_CUDA_F16;
  if (tw == GPUNET_CUDA_F32 && ti == GPUNET_CUDA_F32 && !oh)
    return launch<float, float, float> (cin, cout, act, w, b, in, out, total, stream);
  if (tw != GPUNET_CUDA_F16)
    return cudaErrorInvalidValue;
  if (ti == GPUNET_CUDA_F16)
    return oh ? launch<gpunet_half, gpunet_half, gpunet_half> (cin, cout, act, w, b, in, out, total, stream)
        : launch<gpunet_half, gpunet_half, float> (cin, cout, act, w, b, in, out, total, stream);
  return oh ? launch<gpunet_half, float, gpunet_half> (cin, cout, act, w, b, in, out, total, stream)
      : launch<gpunet_half, float, float> (cin, cout, act, w, b, in, out, total, stream);
}
