/* half.h: IEEE binary16 storage ("half") for the fp16 CUDA path: float <-> half bit
 * conversions, round to nearest even, GPUNET_HD so the kernels, the module's host code
 * and the CPU tests share them.  Plain C bit arithmetic on the host (checked against a
 * slow reference in tests/test_cuda_math.c); CUDA's own conversions under nvcc. */
#ifndef GPUNET_HALF_H
#define GPUNET_HALF_H

#include <stdint.h>
#include <string.h>

#include "hd.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

/* The 16 bits of one half value (device buffers of fp16 activations and weights). */
typedef uint16_t gpunet_half;

/* The half nearest to f (ties to even): overflow gives +-inf, NaN stays a quiet NaN
 * (sign and the top payload bits kept), tiny values go to subnormals or +-0. */
GPUNET_HD gpunet_half
gpunet_half_from_float (float f)
{
#if defined(__CUDACC__)
  return __half_as_ushort (__float2half_rn (f));
#else
  uint32_t x;
  memcpy (&x, &f, sizeof x);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)   /* inf, NaN */
    return (gpunet_half) (sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  if (ax >= 0x477ff000u)   /* >= 65520: rounds past 65504 */
    return (gpunet_half) (sign | 0x7c00u);
  if (ax >= 0x38800000u) { /* normal half: re-bias the exponent, round 13 bits away */
    const uint32_t r = ax - (112u << 23);
    uint32_t h = r >> 13;
    const uint32_t rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
      h++;
    return (gpunet_half) (sign | h);
  }
  const int e = (int) (ax >> 23);   /* biased float exponent, < 113 here */
  if (e < 102)                      /* below 2^-25: rounds to zero */
    return (gpunet_half) sign;
  /* subnormal half: the value in units of 2^-24 is mant >> (126 - e) */
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  const int shift = 126 - e;        /* 14 .. 24 */
  uint32_t h = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (h & 1u)))
    h++;
  return (gpunet_half) (sign | h);
#endif
}

/* The float value of half bits h (exact). */
GPUNET_HD float
gpunet_half_to_float (gpunet_half h)
{
#if defined(__CUDACC__)
  return __half2float (__ushort_as_half (h));
#else
  const uint32_t sign = ((uint32_t) h & 0x8000u) << 16, e = ((uint32_t) h >> 10) & 0x1fu,
      mant = (uint32_t) h & 0x3ffu;
  uint32_t x;
  if (e == 0x1fu)
    x = sign | 0x7f800000u | (mant << 13);
  else if (e != 0)
    x = sign | ((e + 112u) << 23) | (mant << 13);
  else {
    /* zero or subnormal: mant x 2^-24, exact in float */
    const float v = (float) mant * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  float f;
  memcpy (&f, &x, sizeof f);
  return f;
#endif
}

/* f rounded to the nearest half and back: what an fp16 store then load keeps. */
GPUNET_HD float
gpunet_half_round (float f)
{
  return gpunet_half_to_float (gpunet_half_from_float (f));
}

#endif /* GPUNET_HALF_H */
