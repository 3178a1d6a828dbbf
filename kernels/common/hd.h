/* hd.h: the GPUNET_HD marker for per-element maths shared by the CPU backend, the CUDA
 * kernels and the tests: __host__ __device__ under nvcc, plain static inline otherwise.
 * GPUNET_UNROLL before a loop asks nvcc to unroll it (fully, where the trip count is a
 * constant once inlined); it is empty for the host compilers. */
#ifndef GPUNET_HD_H
#define GPUNET_HD_H

#if defined(__CUDACC__)
#define GPUNET_HD static __host__ __device__ __forceinline__
#else
#define GPUNET_HD static inline
#endif
#if defined(__CUDA_ARCH__)    /* nvcc's device pass */
#define GPUNET_UNROLL _Pragma ("unroll")
#else
#define GPUNET_UNROLL
#endif

#endif
