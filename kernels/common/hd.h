/* hd.h: the GPUNET_HD marker for per-element maths shared by the CPU backend, the CUDA
 * kernels and the tests: __host__ __device__ under nvcc, plain static inline otherwise. */
#ifndef GPUNET_HD_H
#define GPUNET_HD_H

#if defined(__CUDACC__)
#define GPUNET_HD static __host__ __device__ __forceinline__
#else
#define GPUNET_HD static inline
#endif

#endif
