/* pool.cu: per-row means (global average pool over each channel plane, also the squeeze
 * of SE): one block per row, each thread sums a strided share, then a shared-memory tree
 * reduction. */
#include "cuda_internal.h"

static __global__ void
row_mean_kernel (const float *__restrict__ in, float *__restrict__ out, long long plane)
{
  __shared__ float part[GPUNET_CUDA_THREADS];
  const float *row = in + (long long) blockIdx.x * plane;
  float acc = 0.0f;
  for (long long i = threadIdx.x; i < plane; i += blockDim.x)
    acc += row[i];
  part[threadIdx.x] = acc;
  __syncthreads ();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads ();
  }
  if (threadIdx.x == 0)
    out[blockIdx.x] = part[0] / (float) plane;
}

cudaError_t
gpunet_cuda_row_mean (const float *in, float *out, long long rows, long long plane,
    cudaStream_t stream)
{
  if (rows <= 0 || plane <= 0)
    return cudaSuccess;
  if (rows > 0x7fffffffLL)
    return cudaErrorInvalidValue;
  row_mean_kernel<<<(unsigned) rows, GPUNET_CUDA_THREADS, 0, stream>>> (in, out, plane);
  return cudaGetLastError ();
}
