/* simd_act.h: exp and the fused activations in vector form, included by simd_begin.h once
 * per instruction set (no include guard). */
/* exp(x) to about 1 ulp for |x| <= 88 (Cody-Waite reduction, degree-6 polynomial). */
static inline __attribute__((always_inline)) VEC
FN (simd_exp) (VEC x)
{
  x = V_MAX (V_MIN (x, V_SET1 (88.0f)), V_SET1 (-88.0f));
  const VEC n = V_ROUND (V_MUL (x, V_SET1 (1.44269504088896341f)));
  VEC r = V_FNMA (n, V_SET1 (0.693359375f), x);
  r = V_FNMA (n, V_SET1 (-2.12194440e-4f), r);
  VEC q = V_SET1 (1.9875691500e-4f);
  q = V_FMA (q, r, V_SET1 (1.3981999507e-3f));
  q = V_FMA (q, r, V_SET1 (8.3334519073e-3f));
  q = V_FMA (q, r, V_SET1 (4.1665795894e-2f));
  q = V_FMA (q, r, V_SET1 (1.6666665459e-1f));
  q = V_FMA (q, r, V_SET1 (5.0000001201e-1f));
  const VEC y = V_ADD (V_FMA (V_MUL (q, r), r, r), V_SET1 (1.0f));
  return V_SCALE2 (y, n);
}

static inline __attribute__((always_inline)) VEC
FN (simd_act) (VEC x, int act)
{
  if (act == GPUNET_EPI_RELU)
    return V_MAX (x, V_ZERO ());
  if (act == GPUNET_EPI_SWISH) {
    /* x / (1 + exp(-x)): reciprocal estimate (14 bits) and one Newton step (about 28
     * bits) instead of a division, which is several times slower */
    const VEC d = V_ADD (V_SET1 (1.0f),
        FN (simd_exp) (V_SUB (V_ZERO (), x)));
    VEC r = V_RCP (d);
    r = V_MUL (r, V_FNMA (d, r, V_SET1 (2.0f)));
    return V_MUL (x, r);
  }
  return x;
}
