/* se.cu: squeeze-excite in place: row means (pool.cu), reduce FC + act and expand FC +
 * sigmoid (linear.cu), then this file's kernel multiplies each channel plane by its
 * gate.  Scratch layout: means n*c | mid n*rd | gates n*c. */
#include "cuda_internal.h"
#include "cuda_math.h"

static __global__ void
scale_kernel (float *x, const float *__restrict__ gate, long long total, long long plane)
{
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    x[i] *= gate[i / plane];
}

cudaError_t
gpunet_cuda_se (const gpunet_se_params *p, const float *w1, const float *b1, const float *w2,
    const float *b2, float *x, float *scratch, int n, cudaStream_t stream)
{
  const long long plane = (long long) p->h * p->w, rows = (long long) n * p->c;
  float *mean = scratch, *mid = scratch + rows, *gate = mid + (long long) n * p->rd;
  cudaError_t e = gpunet_cuda_row_mean (x, mean, rows, plane, stream);
  if (e == cudaSuccess)
    e = gpunet_cuda_linear (p->c, p->rd, p->act, w1, b1, mean, mid, n, stream);
  if (e == cudaSuccess)
    e = gpunet_cuda_linear (p->rd, p->c, GPUNET_CUDA_ACT_SIGMOID, w2, b2, mid, gate, n, stream);
  if (e != cudaSuccess)
    return e;
  const long long total = rows * plane;
  if (total <= 0)
    return cudaSuccess;
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  scale_kernel<<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (x, gate, total, plane);
  return cudaGetLastError ();
}
