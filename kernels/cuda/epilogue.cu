/* epilogue.cu: the convolution epilogue kernel, act(y + bias) + residual in place over
 * cuDNN's raw output, one grid-stride thread per element, templated on the storage
 * (float or fp16); the maths is gpunet_epilogue_at[_h] (cuda_math.h), tested on the CPU. */
#include "cuda_internal.h"
#include "cuda_storage.h"

template <typename T>
static __global__ void
epilogue_kernel (T *y, const float *bias, const T *residual, long long total, int c,
    long long plane, int act)
{
  gpunet_pdl_wait ();
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    gpunet_st (y, i, gpunet_epilogue_at_t (y, bias, residual, i, c, plane, act));
}

cudaError_t
gpunet_cuda_epilogue (gpunet_cuda_dtype t, void *y, const float *bias, const void *residual,
    int n, int c, long long plane, int act, cudaStream_t stream)
{
  const long long total = (long long) n * c * plane;
  if (total <= 0)
    return cudaSuccess;
  if (!bias && !residual && act == GPUNET_EPI_NONE)
    return cudaSuccess;
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  if (t == GPUNET_CUDA_F16)
    gpunet_launch (epilogue_kernel<gpunet_half>, blocks, GPUNET_CUDA_THREADS, 0, stream, (gpunet_half *) y,
        bias, (const gpunet_half *) residual, total, c, plane, act);
  else
    gpunet_launch (epilogue_kernel<float>, blocks, GPUNET_CUDA_THREADS, 0, stream, (float *) y, bias,
        (const float *) residual, total, c, plane, act);
  return cudaGetLastError ();
}

cudaError_t
gpunet_cuda_probe_kernels (void)
{
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes (&attr, epilogue_kernel<float>);
}
