/* linear_simd.h: the vector code of linear.c, included there once per instruction set
 * between simd_begin.h and simd_end.h (which define VW, VEC, V_* and FN).  No include
 * guard: meant to be included more than once. */

/* The sum of v's lanes, in a fixed order */
static inline __attribute__((always_inline)) float
FN (linear_hsum) (VEC v)
{
#if VW == 16
  const __m256 h = _mm256_add_ps (_mm512_castps512_ps256 (v),
      _mm256_castpd_ps (_mm512_extractf64x4_pd (_mm512_castps_pd (v), 1)));
#else
  const __m256 h = v;
#endif
  __m128 q = _mm_add_ps (_mm256_castps256_ps128 (h), _mm256_extractf128_ps (h, 1));
  q = _mm_add_ps (q, _mm_movehl_ps (q, q));
  q = _mm_add_ss (q, _mm_movehdup_ps (q));
  return _mm_cvtss_f32 (q);
}

/* Groups of LIN_ROWS outputs: each image's input read once for the group's rows, two
 * vector accumulators a row (8 independent chains), the rows' weights streamed once per
 * image (from L1 after the first image).  A last group shorter than LIN_ROWS repeats its
 * last row and stores only its own. */
#define LIN_ROWS 4
static void
FN (linear_run) (const gpunet_linear_params *p, const float *in, int in_cp, float *out, int n,
    int nt)
{
  const int cin = p->cin, cout = p->cout, act = p->act;
  const long groups = (cout + LIN_ROWS - 1) / LIN_ROWS;
#pragma omp parallel for num_threads(nt) schedule(static) \
    if ((long) n * cout * cin >= 4 * GPUNET_BLK_PARALLEL_MIN)
  for (long g = 0; g < groups; g++) {
    const int o0 = (int) g * LIN_ROWS;
    const float *w[LIN_ROWS];
#pragma GCC unroll 4
    for (int r = 0; r < LIN_ROWS; r++)
      w[r] = p->weight + (size_t) (o0 + r < cout ? o0 + r : cout - 1) * cin;
    for (int b = 0; b < n; b++) {
      const float *x = in + (size_t) b * in_cp;
      VEC acc[LIN_ROWS][2];
#pragma GCC unroll 4
      for (int r = 0; r < LIN_ROWS; r++)
        acc[r][0] = acc[r][1] = V_ZERO ();
      int i = 0;
      for (; i + 2 * VW <= cin; i += 2 * VW) {
        const VEC x0 = V_LOADU (x + i), x1 = V_LOADU (x + i + VW);
#pragma GCC unroll 4
        for (int r = 0; r < LIN_ROWS; r++) {
          acc[r][0] = V_FMA (V_LOADU (w[r] + i), x0, acc[r][0]);
          acc[r][1] = V_FMA (V_LOADU (w[r] + i + VW), x1, acc[r][1]);
        }
      }
      for (int r = 0; r < LIN_ROWS && o0 + r < cout; r++) {
        float s = FN (linear_hsum) (V_ADD (acc[r][0], acc[r][1]));
        for (int j = i; j < cin; j++)
          s += w[r][j] * x[j];
        out[(size_t) b * cout + o0 + r] = gpunet_activate (s + (p->bias ? p->bias[o0 + r] : 0.0f),
            act);
      }
    }
  }
}
#undef LIN_ROWS
