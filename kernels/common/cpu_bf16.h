/* cpu_bf16.h: whether this CPU has the bf16 instructions, by CPUID: AVX-512 BF16
 * (leaf 7 sub-leaf 1, EAX bit 5: vcvtneps2bf16, vdpbf16ps) and AMX-BF16 (leaf 7 sub-leaf
 * 0, EDX bit 22); both only where avx512f says the OS saves the AVX-512 state.  One
 * definition for the bf16 session check (onednn_conv.c) and the tests that need the
 * instructions.  0 off x86.  Also the portable rounding of f32 to bf16, as the
 * instructions do it. */
#ifndef GPUNET_CPU_BF16_H
#define GPUNET_CPU_BF16_H

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static inline int
gpunet_cpu_avx512_bf16 (void)
{
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__builtin_cpu_supports ("avx512f") || !__get_cpuid_count (7, 0, &a, &b, &c, &d) || a < 1
      || !__get_cpuid_count (7, 1, &a, &b, &c, &d))
    return 0;
  return (a >> 5) & 1;
#else
  return 0;
#endif
}

static inline int
gpunet_cpu_amx_bf16 (void)
{
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__builtin_cpu_supports ("avx512f") || !__get_cpuid_count (7, 0, &a, &b, &c, &d))
    return 0;
  return (d >> 22) & 1;
#else
  return 0;
#endif
}

/* f to bf16 as vcvtneps2bf16 does it: nearest, ties to even; a subnormal input counts as
 * zero (its sign kept); NaN stays a quiet NaN */
static inline uint16_t
gpunet_bf16_rne (float f)
{
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0)
    return (uint16_t) ((u >> 16) & 0x8000u);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t) ((u >> 16) | 0x40u);
  return (uint16_t) ((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif
