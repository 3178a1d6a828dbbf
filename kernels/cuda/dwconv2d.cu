/* dwconv2d.cu: direct depthwise convolution (one k x k filter per channel) with the
 * epilogue act(acc + bias), one grid-stride thread per output element over NCHW float32.
 * The per-element maths is gpunet_dwconv_out_at (cuda_math.h), shared with the CPU tests. */
#include "cuda_internal.h"
#include "cuda_math.h"

static __global__ void
dwconv2d_kernel (const float *__restrict__ in, const float *__restrict__ w,
    const float *__restrict__ b, float *__restrict__ out, long long total, int c, int ih,
    int iw, int oh, int ow, int k, int stride, int pad, int act)
{
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    out[i] = gpunet_dwconv_out_at (in, w, b, i, c, ih, iw, oh, ow, k, stride, pad, act);
}

cudaError_t
gpunet_cuda_dwconv2d (const gpunet_dwconv2d_params *p, const float *w, const float *b,
    const float *in, float *out, int n, cudaStream_t stream)
{
  const long long total = (long long) n * p->c * p->oh * p->ow;
  if (total <= 0)
    return cudaSuccess;
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  dwconv2d_kernel<<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> (in, w, b, out, total, p->c,
      p->ih, p->iw, p->oh, p->ow, p->kernel, p->stride, p->pad, p->act);
  return cudaGetLastError ();
}
