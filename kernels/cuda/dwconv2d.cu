/* dwconv2d.cu: direct depthwise convolution (one k x k filter per channel) with the
 * epilogue act(acc + bias), one grid-stride thread per output element over NCHW, float
 * or fp16 storage.  The per-element maths is gpunet_dwconv_out_at[_h] (cuda_math.h). */
#include "cuda_internal.h"
#include "cuda_storage.h"

template <typename T>
static __global__ void
dwconv2d_kernel (const T *__restrict__ in, const T *__restrict__ w,
    const float *__restrict__ b, T *__restrict__ out, long long total, int c, int ih,
    int iw, int oh, int ow, int k, int stride, int pad, int act)
{
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    gpunet_st (out, i, gpunet_dwconv_out_at_t (in, w, b, i, c, ih, iw, oh, ow, k, stride, pad, act));
}

template <typename T>
static cudaError_t
launch (const gpunet_dwconv2d_params *p, const void *w, const float *b, const void *in,
    void *out, long long total, cudaStream_t stream)
{
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  dwconv2d_kernel<T><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> ((const T *) in, (const T *) w,
      b, (T *) out, total, p->c, p->ih, p->iw, p->oh, p->ow, p->kernel, p->stride, p->pad, p->act);
  return cudaGetLastError ();
}

cudaError_t
gpunet_cuda_dwconv2d (gpunet_cuda_dtype t, const gpunet_dwconv2d_params *p, const void *w,
    const float *b, const void *in, void *out, int n, cudaStream_t stream)
{
  const long long total = (long long) n * p->c * p->oh * p->ow;
  if (total <= 0)
    return cudaSuccess;
  return t == GPUNET_CUDA_F16 ? launch<gpunet_half> (p, w, b, in, out, total, stream)
      : launch<float> (p, w, b, in, out, total, stream);
}
