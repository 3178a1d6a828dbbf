/* cpu_has.h: CPU_HAS ("avx512f") is GCC's __builtin_cpu_supports on x86 and 0 elsewhere
 * (the builtin exists only for x86 there), for tests that ask whether an x86 instruction
 * set is present before they expect a form of a kernel to be planned or run. */
#ifndef GPUNET_TEST_CPU_HAS_H
#define GPUNET_TEST_CPU_HAS_H

#if defined(__x86_64__) || defined(__i386__)
#define CPU_HAS(feature) __builtin_cpu_supports (feature)
#else
#define CPU_HAS(feature) 0
#endif

#endif
