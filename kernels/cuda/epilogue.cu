/* epilogue.cu: the convolution epilogue kernel, act(y + bias) + residual in place over
 * cuDNN's raw output, one grid-stride thread per element; the maths is
 * gpunet_epilogue_at (cuda_math.h), shared with the CPU tests. */
#include "cuda_internal.h"
#include "cuda_math.h"

static __global__ void
epilogue_kernel (float *y, const float *bias, const float *residual, long long total, int c,
    long long plane, int act)
{
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    y[i] = gpunet_epilogue_at (y, bias, residual, i, c, plane, act);
}

cudaError_t
gpunet_cuda_epilogue (float *y, const float *bias, const float *residual, int n, int c,
    long long plane, int act, cudaStream_t stream)
{
  const long long total = (long long) n * c * plane;
  if (total <= 0)
    return cudaSuccess;
  if (!bias && !residual && act == GPUNET_EPI_NONE)
    return cudaSuccess;
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  epilogue_kernel<<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (y, bias, residual, total, c,
      plane, act);
  return cudaGetLastError ();
}

cudaError_t
gpunet_cuda_probe_kernels (void)
{
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes (&attr, epilogue_kernel);
}
