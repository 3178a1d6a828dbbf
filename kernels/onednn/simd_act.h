/* simd_act.h: 2^z and the fused activations in vector form, included by simd_begin.h once
 * per instruction set (no include guard). */
/* 2^z, z clamped to [-125, 125]: z = n + f with n integral and |f| <= 1/2, 2^f by a
 * degree-5 polynomial (near-minimax for relative error on [-1/2, 1/2], fitted by iterated
 * weighted least squares: 7.5e-8), n added to the exponent (the result stays normal).
 * Short dependency chains matter more than the count: a swish is latency-bound, since the
 * reorder window holds only a few vectors' chains (measured 0.36-0.46 ns per element on one
 * AVX2 core, against 0.64-0.66 for a Cody-Waite exp with a degree-6 polynomial). */
static inline __attribute__((always_inline)) VEC
FN (simd_exp2) (VEC z)
{
  z = V_MAX (V_MIN (z, V_SET1 (125.0f)), V_SET1 (-125.0f));
  const VEC n = V_ROUND (z);
  const VEC f = V_SUB (z, n);
  VEC p = V_FMA (V_SET1 (1.3276471783e-3f), f, V_SET1 (9.6755413328e-3f));
  p = V_FMA (p, f, V_SET1 (5.5507132741e-2f));
  p = V_FMA (p, f, V_SET1 (2.4022119724e-1f));
  p = V_FMA (p, f, V_SET1 (6.9314696706e-1f));
  p = V_FMA (p, f, V_SET1 (1.0000000717e+0f));
  return V_LDEXP (p, n);
}

static inline __attribute__((always_inline)) VEC
FN (simd_act) (VEC x, int act)
{
  if (act == GPUNET_EPI_RELU)
    return V_MAX (x, V_ZERO ());
  if (act == GPUNET_EPI_SWISH) {
    /* x / (1 + exp(-x)), exp(-x) = 2^(-x log2 e): the rounding of z gives a relative
     * error of about 6e-8 |z| in exp(-x): measured against double precision, 3.7e-6
     * at most over [-100, 100], 6.3e-7 over [-10, 10].  A reciprocal estimate (12 bits or more) and
     * one Newton step instead of a division, which is several times slower. */
    const VEC d = V_ADD (V_SET1 (1.0f),
        FN (simd_exp2) (V_MUL (x, V_SET1 (-1.44269504088896341f))));
    VEC r = V_RCP (d);
    r = V_MUL (r, V_FNMA (d, r, V_SET1 (2.0f)));
    return V_MUL (x, r);
  }
  return x;
}
