/* se.cu: squeeze-excite in place: row means (pool.cu), reduce FC + act and expand FC +
 * sigmoid (linear.cu), then this file's kernel multiplies each channel plane by its
 * gate.  x and the weights are float or fp16; the scratch is float: means n*c | mid n*rd
 * | gates n*c. */
#include "cuda_internal.h"
#include "cuda_storage.h"

template <typename T>
static __global__ void
scale_kernel (T *x, const float *__restrict__ gate, long long total, long long plane)
{
  const long long step = (long long) gridDim.x * blockDim.x;
  for (long long i = (long long) blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step)
    gpunet_st (x, i, gpunet_ld (x, i) * gate[i / plane]);
}

cudaError_t
gpunet_cuda_se (gpunet_cuda_dtype t, const gpunet_se_params *p, const void *w1,
    const float *b1, const void *w2, const float *b2, void *x, float *scratch, int n,
    cudaStream_t stream)
{
  const long long plane = (long long) p->h * p->w, rows = (long long) n * p->c;
  float *mean = scratch, *mid = scratch + rows, *gate = mid + (long long) n * p->rd;
  cudaError_t e = gpunet_cuda_row_mean (t, x, GPUNET_CUDA_F32, mean, rows, plane, stream);
  if (e == cudaSuccess)
    e = gpunet_cuda_linear (p->c, p->rd, p->act, t, w1, b1, GPUNET_CUDA_F32, mean,
        GPUNET_CUDA_F32, mid, n, stream);
  if (e == cudaSuccess)
    e = gpunet_cuda_linear (p->rd, p->c, GPUNET_CUDA_ACT_SIGMOID, t, w2, b2, GPUNET_CUDA_F32,
        mid, GPUNET_CUDA_F32, gate, n, stream);
  if (e != cudaSuccess)
    return e;
  const long long total = rows * plane;
  if (total <= 0)
    return cudaSuccess;
  const unsigned blocks = (unsigned) gpunet_grid_blocks (total, GPUNET_CUDA_THREADS, 1 << 20);
  if (t == GPUNET_CUDA_F16)
    scale_kernel<gpunet_half><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> ((gpunet_half *) x,
        gate, total, plane);
  else
    scale_kernel<float><<<blocks, GPUNET_CUDA_THREADS, 0, stream>>> ((float *) x, gate, total,
        plane);
  return cudaGetLastError ();
}
