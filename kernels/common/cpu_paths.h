/* cpu_paths.h: the CPU code paths of our kernels (the instruction-set forms a kernel is
 * compiled in), as bits, so that a plan or a pass can tell the tests which of them it
 * runs and the suite's summary can name those it ran and those it could not run
 * (scripts/test-summary.py).  The bf16 kernels (bf16_dwconv.c) report through the tests
 * that run them; none of ours has an AMX form. */
#ifndef GPUNET_CPU_PATHS_H
#define GPUNET_CPU_PATHS_H

enum {
  GPUNET_CPU_PATH_PORTABLE = 1 << 0,   /* the plain C form of a kernel that has vector ones */
  GPUNET_CPU_PATH_AVX2 = 1 << 1,       /* AVX2 + FMA (nChw8c kernels, preprocess) */
  GPUNET_CPU_PATH_AVX512 = 1 << 2,     /* AVX-512F (nChw16c kernels, 1x1, preprocess) */
};

#endif
