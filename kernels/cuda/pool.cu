/* pool.cu: per-row means (global average pool over each channel plane, also the squeeze
 * of SE): one block per row, each thread sums a strided share in float, then a
 * shared-memory tree reduction.  Input and output float or fp16. */
#include "cuda_internal.h"
#include "cuda_storage.h"

template <typename TI, typename TO>
static __global__ void
row_mean_kernel (const TI *__restrict__ in, TO *__restrict__ out, long long plane)
{
  gpunet_pdl_wait ();
  __shared__ float part[GPUNET_CUDA_THREADS];
  const TI *row = in + (long long) blockIdx.x * plane;
  float acc = 0.0f;
  for (long long i = threadIdx.x; i < plane; i += blockDim.x)
    acc += gpunet_ld (row, i);
  part[threadIdx.x] = acc;
  __syncthreads ();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s)
      part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads ();
  }
  if (threadIdx.x == 0)
    gpunet_st (out, blockIdx.x, part[0] / (float) plane);
}

template <typename TI, typename TO>
static cudaError_t
launch (const void *in, void *out, long long rows, long long plane, cudaStream_t stream)
{
  gpunet_launch (row_mean_kernel<TI, TO>, (unsigned) rows, GPUNET_CUDA_THREADS, 0, stream, (const TI *) in,
      (TO *) out, plane);
  return cudaGetLastError ();
}

cudaError_t
gpunet_cuda_row_mean (gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to, void *out,
    long long rows, long long plane, cudaStream_t stream)
{
  if (rows <= 0 || plane <= 0)
    return cudaSuccess;
  if (rows > 0x7fffffffLL)
    return cudaErrorInvalidValue;
  if (ti == GPUNET_CUDA_F16)
    return to == GPUNET_CUDA_F16 ? launch<gpunet_half, gpunet_half> (in, out, rows, plane, stream)
        : launch<gpunet_half, float> (in, out, rows, plane, stream);
  return to == GPUNET_CUDA_F16 ? launch<float, gpunet_half> (in, out, rows, plane, stream)
      : launch<float, float> (in, out, rows, plane, stream);
}
