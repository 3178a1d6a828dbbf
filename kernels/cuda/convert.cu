/* convert.cu: element-wise storage conversion between float32 and fp16 (round to nearest
 * even, gpunet_half_from_float in half.h): the fp16 session's input upload, its logits for
 * the host and the top-k, traces, and the self-test's op runner. */
#include "cuda_internal.h"
#include "cuda_storage.h"

template <typename TI, typename TO>
static __global__ void
convert_kernel (const TI *__restrict__ in, TO *__restrict__ out, long long total)
{
  gpunet_pdl_wait ();
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    gpunet_st (out, i, gpunet_ld (in, i));
}

cudaError_t
gpunet_cuda_convert (gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to, void *out,
    long long count, cudaStream_t stream)
{
  if (count <= 0)
    return cudaSuccess;
  if (ti == to)
    return cudaMemcpyAsync (out, in, (size_t) count * gpunet_cuda_dtype_size (ti),
        cudaMemcpyDeviceToDevice, stream);
  const unsigned blocks = (unsigned) gpunet_grid_blocks (count, GPUNET_CUDA_THREADS, 1 << 20);
  if (ti == GPUNET_CUDA_F32)
    gpunet_launch (convert_kernel<float, gpunet_half>, blocks, GPUNET_CUDA_THREADS, 0, stream,
        (const float *) in, (gpunet_half *) out, count);
  else
    gpunet_launch (convert_kernel<gpunet_half, float>, blocks, GPUNET_CUDA_THREADS, 0, stream,
        (const gpunet_half *) in, (float *) out, count);
  return cudaGetLastError ();
}
