/* topk.cu: softmax + top-k on the device, one block per image: the logits and their ids
 * are bitonic-sorted in shared memory (gpunet_bitonic_step, cuda_topk.h), the softmax
 * denominator is a double-precision block sum, and only k (id, score) pairs are written. */
#include "cuda_internal.h"
#include "cuda_topk.h"

enum { TOPK_THREADS = 1024 };

/* 1024 threads per block leave at most 64 registers per thread: the bound keeps ptxas
 * (and the driver's JIT of the PTX for newer GPUs) within that, else the launch fails
 * with cudaErrorLaunchOutOfResources. */
static __global__ void __launch_bounds__ (TOPK_THREADS)
topk_kernel (const float *logits, int classes, int n_pow2, int k, gpunet_class_score *out)
{
  __shared__ float val[GPUNET_CUDA_TOPK_MAX];
  __shared__ int id[GPUNET_CUDA_TOPK_MAX];
  __shared__ double part[TOPK_THREADS];
  const float *l = logits + (size_t) blockIdx.x * classes;
  const int t = threadIdx.x;
  for (int i = t; i < n_pow2; i += blockDim.x) {
    val[i] = i < classes ? l[i] : 0.0f;
    id[i] = i < classes ? i : -1;
  }
  __syncthreads ();
  for (int size = 2; size <= n_pow2; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = t; i < n_pow2; i += blockDim.x)
        gpunet_bitonic_step (val, id, i, size, stride);
      __syncthreads ();
    }
  const double max = val[0];
  double s = 0.0;
  for (int i = t; i < classes; i += blockDim.x)
    s += exp ((double) l[i] - max);
  part[t] = s;
  __syncthreads ();
  for (int h = blockDim.x >> 1; h > 0; h >>= 1) {
    if (t < h)
      part[t] += part[t + h];
    __syncthreads ();
  }
  const double sum = part[0];
  for (int j = t; j < k; j += blockDim.x) {
    gpunet_class_score r;
    r.id = id[j];
    r.score = (float) (exp ((double) val[j] - max) / sum);
    out[(size_t) blockIdx.x * k + j] = r;
  }
}

cudaError_t
gpunet_cuda_topk (const float *logits, int n, int classes, int k, gpunet_class_score *out,
    cudaStream_t stream)
{
  if (classes < 1 || classes > GPUNET_CUDA_TOPK_MAX || k < 1 || k > classes || n < 1)
    return cudaErrorInvalidValue;
  topk_kernel<<<n, TOPK_THREADS, 0, stream>>> (logits, classes, gpunet_pow2_ceil (classes), k,
      out);
  return cudaGetLastError ();
}
