/* linear.cu: fully connected layer out = act(W in + b) for n vectors, one warp per output
 * value: each lane takes a strided share of the dot product (gpunet_dot_partial in
 * cuda_math.h), then a shuffle reduction.  Also serves SE's two 1x1 convolutions. */
#include "cuda_internal.h"
#include "cuda_math.h"

enum { WARPS_PER_BLOCK = GPUNET_CUDA_THREADS / 32 };

static __global__ void
linear_kernel (const float *__restrict__ w, const float *__restrict__ b,
    const float *__restrict__ in, float *__restrict__ out, int cin, int cout, long long total,
    int act)
{
  const int lane = threadIdx.x & 31;
  const long long step = (long long) gridDim.x * WARPS_PER_BLOCK;
  for (long long o = (long long) blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5); o < total;
      o += step) {
    const long long img = o / cout;
    const int row = (int) (o % cout);
    float acc = gpunet_dot_partial (w + (long long) row * cin, in + img * cin, cin, lane, 32);
    for (int off = 16; off > 0; off /= 2)
      acc += __shfl_down_sync (0xffffffffu, acc, off);
    if (lane == 0)
      out[o] = gpunet_cuda_act (acc + (b ? b[row] : 0.0f), act);
  }
}

cudaError_t
gpunet_cuda_linear (int cin, int cout, int act, const float *w, const float *b,
    const float *in, float *out, int n, cudaStream_t stream)
{
  const long long total = (long long) n * cout;
  if (total <= 0)
    return cudaSuccess;
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, WARPS_PER_BLOCK, 1 << 20);
  linear_kernel<<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (w, b, in, out, cin, cout, total,
      act);
  return cudaGetLastError ();
}
