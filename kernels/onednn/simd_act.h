/* simd_act.h: 2^z and the fused activations in vector form, included by simd_begin.h once
 * per instruction set (no include guard). */
/* 2^z for z at most 125 (and, where V_LDEXP adds to the exponent field, at least -125):
 * z = n + f with n integral and |f| <= 1/2, 2^f by a degree-5 polynomial (near-minimax for
 * relative error on [-1/2, 1/2], fitted by iterated weighted least squares: 7.5e-8) in
 * Estrin's form, n added to the exponent.  Short dependency chains matter more than the
 * operation count: a swish is latency-bound, the reorder window holding only a few
 * vectors' chains.  In-place swish over 228k floats on one AVX2 core, best of 300:
 * 0.34-0.37 ns per element, against 0.45 with the polynomial in Horner's form and
 * 0.64-0.66 for the Cody-Waite exp with a degree-6 polynomial used before. */
static inline __attribute__((always_inline)) VEC
FN (simd_exp2_in_range) (VEC z)
{
  const VEC n = V_ROUND (z);
  const VEC f = V_SUB (z, n);
  const VEC f2 = V_MUL (f, f);
  const VEC p01 = V_FMA (V_SET1 (6.9314696706e-1f), f, V_SET1 (1.0000000717e+0f));
  const VEC p23 = V_FMA (V_SET1 (5.5507132741e-2f), f, V_SET1 (2.4022119724e-1f));
  const VEC p45 = V_FMA (V_SET1 (1.3276471783e-3f), f, V_SET1 (9.6755413328e-3f));
  return V_LDEXP (V_FMA (V_FMA (p45, f2, p23), f2, p01), n);
}

/* 2^z, z clamped to [-125, 125] (the result stays normal) */
static inline __attribute__((always_inline)) VEC
FN (simd_exp2) (VEC z)
{
  return FN (simd_exp2_in_range) (V_MAX (V_MIN (z, V_SET1 (125.0f)), V_SET1 (-125.0f)));
}

static inline __attribute__((always_inline)) VEC
FN (simd_act) (VEC x, int act)
{
  if (act == GPUNET_EPI_RELU)
    return V_MAX (x, V_ZERO ());
  if (act == GPUNET_EPI_SWISH) {
    /* x / (1 + exp(-x)), exp(-x) = 2^(-x log2 e): the rounding of z gives a relative
     * error of about 6e-8 |z| in exp(-x); measured against double precision, 3.7e-6 at
     * most over [-100, 100], 6.3e-7 over [-10, 10]. */
#if VW == 16
    /* AVX-512: z clamped above only (below -125, x > 86.6, the scale step underflows 2^z to
     * zero or a denormal and d is 1 all the same, bit for bit), and a division.  Inside
     * the kernels the swish shares the FMA pipes with the GEMMs and the divider is a unit
     * of its own: on Zen 4 GPUNet-2 ran in 0.990 of the time it took with the reciprocal
     * estimate and Newton step below (docs/performance.md).  Correctly rounded. */
    const VEC z = V_MIN (V_MUL (x, V_SET1 (-1.44269504088896341f)), V_SET1 (125.0f));
    return V_DIV (x, V_ADD (V_SET1 (1.0f), FN (simd_exp2_in_range) (z)));
#else
    /* AVX2: a reciprocal estimate (12 bits or more) and one Newton step instead of a
     * division, which is several times slower there when the swish runs alone (and no
     * faster inside the kernels, measured on Zen 4's AVX2 path). */
    const VEC d = V_ADD (V_SET1 (1.0f),
        FN (simd_exp2) (V_MUL (x, V_SET1 (-1.44269504088896341f))));
    VEC r = V_RCP (d);
    r = V_MUL (r, V_FNMA (d, r, V_SET1 (2.0f)));
    return V_MUL (x, r);
#endif
  }
  return x;
}
