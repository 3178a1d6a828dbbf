/* winograd_simd.h: the vector code of winograd.c, included there once per instruction set
 * between simd_begin.h and simd_end.h (which define VW, VEC, V_* and FN); the output
 * channels per GEMM micro-kernel call are the plan's ocb (WINO_OCB).  No include guard:
 * meant to be included more than once. */

/* Element i of an activation tensor: VW floats, or (BF, AVX-512 only) VW bf16 values
 * widened to f32 exactly (a 16-bit shift) */
static inline __attribute__((always_inline)) VEC
FN (wino_ld) (const void *base, size_t i, const int BF)
{
#if VW == 16
  if (BF)
    return _mm512_castsi512_ps (_mm512_slli_epi32 (_mm512_cvtepu16_epi32 (
                _mm256_loadu_si256 ((const __m256i *) ((const uint16_t *) base + i))), 16));
#else
  (void) BF;
#endif
  return V_LOAD ((const float *) base + i);
}

/* Stores v at element i: VW floats, or (BF) VW bf16 values rounded as vcvtneps2bf16 does
 * (gpunet_bf16_rne: nearest even, a subnormal to a signed zero, NaN kept quiet), in
 * AVX-512F integer steps, so that no BF16 instruction is needed here */
static inline __attribute__((always_inline)) void
FN (wino_st) (void *base, size_t i, VEC v, const int BF)
{
#if VW == 16
  if (BF) {
    const __m512i u = _mm512_castps_si512 (v), hi = _mm512_srli_epi32 (u, 16);
    __m512i r = _mm512_srli_epi32 (_mm512_add_epi32 (_mm512_add_epi32 (u,
                _mm512_set1_epi32 (0x7fff)), _mm512_and_si512 (hi, _mm512_set1_epi32 (1))), 16);
    const __mmask16 tiny = _mm512_testn_epi32_mask (u, _mm512_set1_epi32 (0x7f800000));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask (_mm512_and_si512 (u,
            _mm512_set1_epi32 (0x7fffffff)), _mm512_set1_epi32 (0x7f800000));
    r = _mm512_mask_mov_epi32 (r, tiny, _mm512_and_si512 (hi, _mm512_set1_epi32 (0x8000)));
    r = _mm512_mask_mov_epi32 (r, nan, _mm512_or_si512 (hi, _mm512_set1_epi32 (0x40)));
    _mm256_storeu_si256 ((__m256i *) ((uint16_t *) base + i), _mm512_cvtepi32_epi16 (r));
    return;
  }
#else
  (void) BF;
#endif
  V_STORE ((float *) base + i, v);
}

/* out[0..5] = B^T in[0..5] */
static inline __attribute__((always_inline)) void
FN (wino_bt) (const VEC *d, VEC *o)
{
  const VEC four = V_SET1 (4.0f), five = V_SET1 (5.0f),
      two = V_SET1 (2.0f);
  const VEC d4_4d2 = V_FNMA (four, d[2], d[4]);       /* d4 - 4 d2 */
  const VEC d3_4d1 = V_FNMA (four, d[1], d[3]);       /* d3 - 4 d1 */
  const VEC d4_d2 = V_SUB (d[4], d[2]);
  const VEC d3_d1 = V_MUL (two, V_SUB (d[3], d[1]));
  o[0] = V_ADD (V_FNMA (five, d[2], d[4]), V_MUL (four, d[0]));
  o[1] = V_ADD (d4_4d2, d3_4d1);
  o[2] = V_SUB (d4_4d2, d3_4d1);
  o[3] = V_ADD (d4_d2, d3_d1);
  o[4] = V_SUB (d4_d2, d3_d1);
  o[5] = V_ADD (V_FNMA (five, d[3], d[5]), V_MUL (four, d[1]));
}

/* out[0..3] = A^T in[0..5] */
static inline __attribute__((always_inline)) void
FN (wino_at) (const VEC *m, VEC *o)
{
  const VEC a = V_ADD (m[1], m[2]), b = V_SUB (m[1], m[2]);
  const VEC c = V_ADD (m[3], m[4]), d = V_SUB (m[3], m[4]);
  o[0] = V_ADD (V_ADD (m[0], a), c);
  o[1] = V_FMA (V_SET1 (2.0f), d, b);
  o[2] = V_FMA (V_SET1 (4.0f), c, a);
  o[3] = V_ADD (V_FMA (V_SET1 (8.0f), d, b), m[5]);
}

/* out[0..4] = B^T in[0..4] of F(4x4, 2x2) */
static inline __attribute__((always_inline)) void
FN (wino_bt5) (const VEC *d, VEC *o)
{
  const VEC two = V_SET1 (2.0f), three = V_SET1 (3.0f);
  const VEC d3_d2 = V_SUB (d[3], d[2]);
  o[0] = V_ADD (V_FMA (two, V_SUB (d[0], d[2]), d[3]), V_SUB (V_ZERO (), d[1]));
  o[1] = V_FNMA (two, d[1], d3_d2);                          /* -2 d1 - d2 + d3 */
  o[2] = V_FNMA (three, d[2], V_FMA (two, d[1], d[3]));  /* 2 d1 - 3 d2 + d3 */
  o[3] = V_SUB (d[3], d[1]);
  o[4] = V_ADD (V_FMA (two, V_SUB (d[1], d[3]), d[4]), V_SUB (V_ZERO (), d[2]));
}

/* out[0..2] = A^T in[0..4] of F(3x3, 3x3) */
static inline __attribute__((always_inline)) void
FN (wino_at53) (const VEC *m, VEC *o)
{
  const VEC a = V_ADD (m[1], m[2]), b = V_SUB (m[1], m[2]);
  o[0] = V_ADD (V_ADD (m[0], a), m[3]);
  o[1] = V_FMA (V_SET1 (2.0f), m[3], b);
  o[2] = V_ADD (V_FMA (V_SET1 (4.0f), m[3], a), m[4]);
}

/* out[0..3] = A^T in[0..4] of F(4x4, 2x2) */
static inline __attribute__((always_inline)) void
FN (wino_at5) (const VEC *m, VEC *o)
{
  const VEC a = V_ADD (m[1], m[2]), b = V_SUB (m[1], m[2]);
  o[0] = V_ADD (V_ADD (m[0], a), m[3]);
  o[1] = V_FMA (V_SET1 (2.0f), m[3], b);
  o[2] = V_FMA (V_SET1 (4.0f), m[3], a);
  o[3] = V_ADD (V_FMA (V_SET1 (8.0f), m[3], b), m[4]);
}

/* B^T of the A-point transform: 6 (F(4x4, 3x3)) or 5 (F(4x4, 2x2), F(3x3, 3x3)) */
static inline __attribute__((always_inline)) void
FN (wino_bt_any) (const VEC *d, VEC *o, const int A)
{
  if (A == 6)
    FN (wino_bt) (d, o);
  else
    FN (wino_bt5) (d, o);
}

/* c[r][j] += row r of V (stride icp) at channel i x vector j of U row i (stride ocp) */
static inline __attribute__((always_inline)) void
FN (wino_gemm_step) (VEC c[WINO_ROWS][4], const float *v, int icp, const float *u, int ocp,
    int i, const int mr, const int nv)
{
  VEC b[4];
#pragma GCC unroll 4
  for (int j = 0; j < nv; j++)
    b[j] = V_LOAD (u + (size_t) i * ocp + VW * j);
#pragma GCC unroll 6
  for (int r = 0; r < mr; r++) {
    const VEC a = V_SET1 (v[(size_t) r * icp + i]);
#pragma GCC unroll 4
    for (int j = 0; j < nv; j++)
      c[r][j] = V_FMA (a, b[j], c[r][j]);
  }
}

/* M rows 0..mr-1 (stride nv * VW) = V rows 0..mr-1 (stride icp) x U (nv*VW columns, row
 * stride ocp: the plan's ocb for the blocked weights), reduced over the nr ranges of input channels
 * [rng[2 j], rng[2 j + 1]) of V, whose rows U holds one range after the other (the other
 * channels' products are zero: channel padding, or phases whose transformed kernel is zero
 * at this element, see gpunet_wino_new); mr <= WINO_ROWS. */
static inline __attribute__((always_inline)) void
FN (wino_gemm_t) (const float *v, int icp, const int *rng, int nr, const float *u, int ocp,
    float *m, const char *pf, int pfn, const int mr, const int nv)
{
  VEC c[WINO_ROWS][4];
#pragma GCC unroll 6
  for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
    for (int j = 0; j < nv; j++)
      c[r][j] = V_ZERO ();
  for (int j = 0; j < nr; j++) {
    /* this range's rows of U follow the previous ranges' */
    const float *vj = v + rng[2 * j];
    for (int i = 0; i < rng[2 * j + 1] - rng[2 * j]; i++) {
      /* pfn lines of the prefetch range with each row of U (wino_gemm_rows) */
      for (int q = 0; q < pfn; q++, pf += 64)
        _mm_prefetch (pf, _MM_HINT_T0);
      FN (wino_gemm_step) (c, vj, icp, u, ocp, i, mr, nv);
    }
    u += (size_t) (rng[2 * j + 1] - rng[2 * j]) * ocp;
  }
#pragma GCC unroll 6
  for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
    for (int j = 0; j < nv; j++)
      V_STORE (m + (size_t) r * VW * nv + VW * j, c[r][j]);
}

typedef void (*FN (wino_gemm_fn)) (const float *, int, const int *, int, const float *, int,
    float *, const char *, int);

/* FN (wino_gemm_MRxNV): one function per row count MR (1..6) and vector count NV (1..4) */
#define WINO_GEMM_DEF(MR, NV) \
  static void \
  FN (wino_gemm_##MR##x##NV) (const float *v, int icp, const int *rng, int nr, \
      const float *u, int ocp, float *m, const char *pf, int pfn) \
  { \
    FN (wino_gemm_t) (v, icp, rng, nr, u, ocp, m, pf, pfn, MR, NV); \
  }
#define WINO_GEMM_ROW(MR) \
  WINO_GEMM_DEF (MR, 1) WINO_GEMM_DEF (MR, 2) WINO_GEMM_DEF (MR, 3) WINO_GEMM_DEF (MR, 4)
WINO_GEMM_ROW (1) WINO_GEMM_ROW (2) WINO_GEMM_ROW (3)
WINO_GEMM_ROW (4) WINO_GEMM_ROW (5) WINO_GEMM_ROW (6)
#undef WINO_GEMM_ROW
#undef WINO_GEMM_DEF

/* [mr - 1][nv - 1] */
#define WINO_GEMM_ROW(MR) \
  { FN (wino_gemm_##MR##x1), FN (wino_gemm_##MR##x2), FN (wino_gemm_##MR##x3), \
    FN (wino_gemm_##MR##x4) }
static const FN (wino_gemm_fn) FN (wino_gemm_tab)[WINO_ROWS][4] = {
  WINO_GEMM_ROW (1), WINO_GEMM_ROW (2), WINO_GEMM_ROW (3),
  WINO_GEMM_ROW (4), WINO_GEMM_ROW (5), WINO_GEMM_ROW (6),
};
#undef WINO_GEMM_ROW

/* V[e][j][icp] (e stride wino_plane_stride (rows * icp)) for tiles t0 .. t0 + cnt - 1,
 * A x A input tiles (A = alpha); rows cnt .. rows - 1 (layout padding) are left as they are:
 * the GEMMs read only rows 0 .. cnt - 1.  Virtual channel block
 * CB reads real block CB % (cp / VW) of phase CB / (cp / VW): input row
 * stride * (oy + i) + phase / 2 - pad for patch row i of the tile at output row oy
 * (stride 1: phase 0, so oy + i - pad). */
static inline __attribute__((always_inline)) void
FN (wino_input_t) (const gpunet_wino *p, const void *in, int t0, int cnt, int rows, float *V,
    const int A, const int BF)
{
  const int IH = p->ih, IW = p->iw, icp = p->icp, per_img = p->th * p->tw, s = p->stride;
  const int cbs = p->cp / VW;
  const size_t plane = (size_t) IH * IW * VW;
  const size_t e_stride = wino_plane_stride ((size_t) rows * icp);
  const size_t es = BF ? 2 : 4;   /* bytes an element */
  for (int j = 0; j < cnt; j++) {
    const int t = t0 + j, b = t / per_img, r = t % per_img;
    const int oy = r / p->tw * p->m, ox = r % p->tw * p->m;
    const size_t img = (size_t) b * p->cp * IH * IW;   /* elements of in */
    for (int CB = 0; CB < icp / VW; CB++) {
      const int ph = CB / cbs, cb = CB % cbs;
      const int y0 = s * oy + ph / 2 - p->pad, x0 = s * ox + ph % 2 - p->pad;
      const int inside = y0 >= 0 && x0 >= 0 && y0 + (A - 1) * s < IH && x0 + (A - 1) * s < IW;
      const size_t src = img + (size_t) cb * plane;
      VEC t6[8][8];
      if (inside) {
        /* column transforms straight from the loads; the columns the next tile of this
         * row adds are prefetched first (from the L3 at 160x160 and more: without it
         * the loads stalled the transform, GPUNet-0's 32 -> 32 at 160x160 took 20-25%
         * longer, isolated, alternating) */
        const size_t p0 = src + ((size_t) y0 * IW + x0) * VW;
        for (int i = 0; i < A; i++) {
          const size_t q = p0 + ((size_t) (s * i) * IW + s * (A - 1)) * VW;
          _mm_prefetch ((const char *) in + (q + (size_t) s * (p->m / 2) * VW) * es,
              _MM_HINT_T0);
          _mm_prefetch ((const char *) in + (q + (size_t) s * p->m * VW) * es, _MM_HINT_T0);
        }
        for (int k = 0; k < A; k++) {
          VEC col[8], o[8];
          for (int i = 0; i < A; i++)
            col[i] = FN (wino_ld) (in, p0 + ((size_t) (s * i) * IW + s * k) * VW, BF);
          FN (wino_bt_any) (col, o, A);
          for (int i = 0; i < A; i++)
            t6[i][k] = o[i];
        }
      } else {
        VEC d[8][8];
        for (int i = 0; i < A; i++)
          for (int k = 0; k < A; k++) {
            const int y = y0 + s * i, x = x0 + s * k;
            d[i][k] = y >= 0 && y < IH && x >= 0 && x < IW
                ? FN (wino_ld) (in, src + ((size_t) y * IW + x) * VW, BF) : V_ZERO ();
          }
        for (int k = 0; k < A; k++) {
          VEC col[8], o[8];
          for (int i = 0; i < A; i++)
            col[i] = d[i][k];
          FN (wino_bt_any) (col, o, A);
          for (int i = 0; i < A; i++)
            t6[i][k] = o[i];
        }
      }
      float *dst = V + (size_t) j * icp + (size_t) CB * VW;
      for (int i = 0; i < A; i++) {
        VEC o[8];
        FN (wino_bt_any) (t6[i], o, A);
        for (int k = 0; k < A; k++)
          V_STORE (dst + (size_t) (i * A + k) * e_stride, o[k]);
      }
    }
  }
}

/* FN (wino_inputA_BF): one function per input tile (A = alpha) and storage type (BF 1:
 * bf16, AVX-512 only) */
#define WINO_IN_DEF(A, BF) \
  static void \
  FN (wino_input##A##_##BF) (const gpunet_wino *p, const void *in, int t0, int cnt, int rows, \
      float *V) \
  { \
    FN (wino_input_t) (p, in, t0, cnt, rows, V, A, BF); \
  }
WINO_IN_DEF (6, 0) WINO_IN_DEF (5, 0)
#if VW == 16
WINO_IN_DEF (6, 1) WINO_IN_DEF (5, 1)
#endif
#undef WINO_IN_DEF

/* Output channels oc0 .. oc0 + VW nv - 1 of tiles t0 .. t0 + cnt - 1 from
 * M[e][j][VW nv] (e stride wino_plane_stride (rows * VW nv)), A x A tiles (A = alpha). */
static inline __attribute__((always_inline)) void
FN (wino_output_t) (const gpunet_wino *p, const float *M, int rows, int t0, int cnt, int oc0, int nv,
    void *out, int residual, const int A, const int MT, const int BF)
{
  const int H = p->h, W = p->w, ocp = p->ocp, per_img = p->th * p->tw, act = p->act;
  const size_t plane = (size_t) H * W * VW;
  const size_t e_stride = wino_plane_stride ((size_t) rows * VW * nv);
  for (int j = 0; j < cnt; j++) {
    const int t = t0 + j, b = t / per_img, r = t % per_img;
    const int mt = MT;   /* output tile mt x mt */
    const int oy = r / p->tw * mt, ox = r % p->tw * mt;
    const int ny = H - oy < mt ? H - oy : mt, nx = W - ox < mt ? W - ox : mt;
    for (int v = 0; v < nv; v++) {
      const int cb = oc0 / VW + v;
      const float *src = M + (size_t) j * VW * nv + VW * v;
      VEC s4[6][8];
      for (int k = 0; k < A; k++) {
        VEC col[8], o[6];
        for (int i = 0; i < A; i++)
          col[i] = V_LOAD (src + (size_t) (i * A + k) * e_stride);
        if (A == 6)
          FN (wino_at) (col, o);
        else if (MT == 3)
          FN (wino_at53) (col, o);
        else
          FN (wino_at5) (col, o);
        for (int i = 0; i < mt; i++)
          s4[i][k] = o[i];
      }
      const VEC bias = V_LOAD (p->bias + (size_t) cb * VW);
      const size_t dst = (size_t) b * ocp * H * W + (size_t) cb * plane;   /* elements */
      for (int i = 0; i < ny; i++) {
        VEC y[6];
        if (A == 6)
          FN (wino_at) (s4[i], y);
        else if (MT == 3)
          FN (wino_at53) (s4[i], y);
        else
          FN (wino_at5) (s4[i], y);
        for (int k = 0; k < nx; k++) {
          const size_t q = dst + ((size_t) (oy + i) * W + ox + k) * VW;
          VEC val = FN (simd_act) (V_ADD (y[k], bias), act);
          if (residual)
            val = V_ADD (val, FN (wino_ld) (out, q, BF));
          FN (wino_st) (out, q, val, BF);
        }
      }
    }
  }
}

/* FN (wino_outputA_MT_BF): one function per input tile (A), output tile (MT) and storage
 * type (BF 1: bf16, AVX-512 only) */
#define WINO_OUT_DEF(A, MT, BF) \
  static void \
  FN (wino_output##A##_##MT##_##BF) (const gpunet_wino *p, const float *M, int rows, int t0, \
      int cnt, int oc0, int nv, void *out, int residual) \
  { \
    FN (wino_output_t) (p, M, rows, t0, cnt, oc0, nv, out, residual, A, MT, BF); \
  }
WINO_OUT_DEF (6, 4, 0) WINO_OUT_DEF (5, 4, 0) WINO_OUT_DEF (5, 3, 0)
#if VW == 16
WINO_OUT_DEF (6, 4, 1) WINO_OUT_DEF (5, 4, 1) WINO_OUT_DEF (5, 3, 1)
#endif
#undef WINO_OUT_DEF

/* M rows 0 .. cnt - 1 (stride VW nv) = V rows 0 .. cnt - 1 (stride icp) x U slice u (ku
 * rows): in calls of WINO_ROWS rows (4 with AVX2's blocks of 3 vectors), the rest in at
 * most two calls (with 6: of 3 to 5, 7 = 4 + 3, 8 = 4 + 4, 9 = 5 + 4; with 4: 5 = 3 + 2,
 * 6 = 3 + 3, 7 = 4 + 3).  The padding rows of V and M are never computed (a block of 14
 * tiles costs 6 + 4 + 4 rows, not 18), and no call but a block's only one gets 1 or 2 rows,
 * which would run at a fraction of the FMA rate (2 or 4 accumulator chains against the FMA
 * latency).  Meanwhile, with WINO_PREFETCH_MIN_CALLS calls or more, the `lines` cache
 * lines from next on (the next slice of U, NULL: none) are prefetched, an equal share in
 * each call, spread over its rows of U: the first call to use a slice would otherwise read
 * it from the L3 or memory at the rate of the FMAs (as in pwconv.c's pw_prefetch_lines,
 * whose limit of 6 blocks this follows: with 3 a chunk it lost on Zen 4).  On a 2-vCPU
 * Intel Xeon (blocks of 36 tiles, 6 calls a slice; transformed weights from memory,
 * medians of 200 calls) GPUNet-2's 112 -> 336 at 46x46 1.69-1.81 -> 1.19-1.34 ms, its 5x5
 * stride-2 32 -> 192 3.49 -> 2.96; whole GPUNet-2 passes 0.937-0.952 (docs/performance.md). */
#ifndef WINO_PREFETCH_MIN_CALLS
#define WINO_PREFETCH_MIN_CALLS 6
#endif
static inline __attribute__((always_inline)) void
FN (wino_gemm_rows) (const float *v, int icp, const int *rng, int nr, const float *u, int ku,
    int ocb, float *m, int cnt, int nv, const char *next, long lines)
{
  /* rows per full call: 6 (x up to 4 vectors of accumulators in AVX-512's 32 registers,
   * x 2 in AVX2's 16), 4 with AVX2's 3-vector blocks */
  const int V_ROWS = VW == 8 && nv >= 3 ? 4 : WINO_ROWS;
  const FN (wino_gemm_fn) gemm = FN (wino_gemm_tab)[V_ROWS - 1][nv - 1];
  int full = 0;
  while (cnt - full >= V_ROWS + 4 || cnt - full == V_ROWS)
    full += V_ROWS;
  const int rest = cnt - full, ra = rest > V_ROWS ? (rest + 1) / 2 : rest, rb = rest - ra;
  const int calls = full / V_ROWS + (ra > 0) + (rb > 0);
  /* per row of U in each call; call c from line c * pfn * ku, the last ones clipped */
  const int pfn = next && ku > 0 && calls >= WINO_PREFETCH_MIN_CALLS
      ? (int) ((lines + (long) calls * ku - 1) / ((long) calls * ku)) : 0;
  int call = 0;
#define WINO_PF(c) (pfn ? next + 64 * (((long) (c) + 1) * pfn * ku <= lines \
    ? (long) (c) * pfn * ku : lines - (long) pfn * ku > 0 ? lines - (long) pfn * ku : 0) : next)
#define WINO_PFN(c) (pfn && (long) pfn * ku <= lines ? pfn : 0)
  for (int r = 0; r < full; r += V_ROWS, call++)
    gemm (v + (size_t) r * icp, icp, rng, nr, u, ocb, m + (size_t) r * VW * nv, WINO_PF (call),
        WINO_PFN (call));
  if (ra) {
    FN (wino_gemm_tab)[ra - 1][nv - 1] (v + (size_t) full * icp, icp, rng, nr, u, ocb,
        m + (size_t) full * VW * nv, WINO_PF (call), WINO_PFN (call));
    call++;
  }
  if (rb)
    FN (wino_gemm_tab)[rb - 1][nv - 1] (v + (size_t) (full + ra) * icp, icp, rng, nr, u, ocb,
        m + (size_t) (full + ra) * VW * nv, WINO_PF (call), WINO_PFN (call));
#undef WINO_PF
#undef WINO_PFN
}

static void
FN (wino_input) (const gpunet_wino *p, const void *in, int t0, int cnt, int rows, float *V)
{
#if VW == 16
  if (p->in_bf) {
    if (p->alpha == 6)
      FN (wino_input6_1) (p, in, t0, cnt, rows, V);
    else
      FN (wino_input5_1) (p, in, t0, cnt, rows, V);
    return;
  }
#endif
  if (p->alpha == 6)
    FN (wino_input6_0) (p, in, t0, cnt, rows, V);
  else
    FN (wino_input5_0) (p, in, t0, cnt, rows, V);
}

static void
FN (wino_output) (const gpunet_wino *p, const float *M, int rows, int t0, int cnt, int oc0,
    int nv, void *out, int residual)
{
#if VW == 16
  if (p->out_bf) {
    if (p->alpha == 6)
      FN (wino_output6_4_1) (p, M, rows, t0, cnt, oc0, nv, out, residual);
    else if (p->m == 3)
      FN (wino_output5_3_1) (p, M, rows, t0, cnt, oc0, nv, out, residual);
    else
      FN (wino_output5_4_1) (p, M, rows, t0, cnt, oc0, nv, out, residual);
    return;
  }
#endif
  if (p->alpha == 6)
    FN (wino_output6_4_0) (p, M, rows, t0, cnt, oc0, nv, out, residual);
  else if (p->m == 3)
    FN (wino_output5_3_0) (p, M, rows, t0, cnt, oc0, nv, out, residual);
  else
    FN (wino_output5_4_0) (p, M, rows, t0, cnt, oc0, nv, out, residual);
}

/* Input transform of tiles t0 .. t0 + cnt - 1 (cnt <= p->rows_max) into V (one thread's
 * scratch, per_thread_floats) */
static void
FN (wino_block_in) (const gpunet_wino *p, const void *in, int t0, int cnt, float *V)
{
  FN (wino_input) (p, in, t0, cnt, wino_block_rows (cnt), V);
}

/* Output channels oc0 .. oc0 + ocb - 1 (clipped to ocp) of tiles t0 .. t0 + cnt - 1 from
 * their V: the GEMMs into M (after V in the scratch) and the output transform into out. */
static void
FN (wino_block_out) (const gpunet_wino *p, void *out, int t0, int cnt, int residual_in_dst,
    float *V, int oc0)
{
  float *M = V + (size_t) p->ne * wino_plane_stride ((size_t) p->rows_max * p->icp);
  const int rows = wino_block_rows (cnt);
  const float *ut = p->u;
  const int ocb = p->ocb, nvb = ocb / VW;
  const int nv = (p->ocp - oc0) / VW < nvb ? (p->ocp - oc0) / VW : nvb;
  const size_t v_es = wino_plane_stride ((size_t) rows * p->icp);
  const size_t m_es = wino_plane_stride ((size_t) rows * VW * nv);
  for (int e = 0; e < p->ne; e++) {
    /* the slice of U after this one: the next element's, else the next block's first */
    const int en = e + 1 < p->ne ? e + 1 : 0, on = e + 1 < p->ne ? oc0 : oc0 + ocb;
    const float *next = on < p->ocp
        ? ut + ((size_t) (on / ocb) * p->urows + p->uoff[en]) * ocb : NULL;
    FN (wino_gemm_rows) (V + (size_t) e * v_es, p->icp, p->rng[e], p->nrng[e],
        ut + ((size_t) (oc0 / ocb) * p->urows + p->uoff[e]) * ocb, wino_urows (p, e), ocb,
        M + (size_t) e * m_es, cnt, nv, (const char *) next,
        (long) wino_urows (p, en) * ocb * (long) sizeof (float) / 64);
  }
  FN (wino_output) (p, M, rows, t0, cnt, oc0, nv, out, residual_in_dst);
}

/* The work is split into items (block of tiles, ocb output channels), taken in
 * block-major order by work stealing (steal.h): a thread runs a block's input transform
 * once for the consecutive items of that block it takes, and a slower core hands the
 * items it has not reached to the others. */
static void
FN (wino_run) (const gpunet_wino *p, const void *in, void *out, int n, int residual_in_dst,
    float *scratch, int nt)
{
  if (nt < 1)
    nt = 1;
  if (nt > GPUNET_STEAL_MAX_THREADS)
    nt = GPUNET_STEAL_MAX_THREADS;
  const int T = n * p->th * p->tw;
  const int nblk = (T + p->rows_max - 1) / p->rows_max;
  const int tb = (T + nblk - 1) / nblk;
  const int ng = (p->ocp + p->ocb - 1) / p->ocb;   /* items per block: one per ocb channels */
  const size_t per = thread_stride (p);
  gpunet_steal sh[GPUNET_STEAL_MAX_THREADS];
  gpunet_steal_init (sh, nt, nblk * ng);
#pragma omp parallel num_threads(nt)
  {
    const int me = omp_get_thread_num ();
    float *V = scratch + per * (size_t) me;
    int have = -1;   /* the block whose V this thread's scratch holds */
    for (int item; (item = gpunet_steal_next (sh, nt, me)) >= 0;) {
      const int blk = item / ng, g = item % ng;
      const int t0 = blk * tb, cnt = T - t0 < tb ? T - t0 : tb;
      if (cnt <= 0)
        continue;
      if (have != blk) {
        FN (wino_block_in) (p, in, t0, cnt, V);
        have = blk;
      }
      FN (wino_block_out) (p, out, t0, cnt, residual_in_dst, V, g * p->ocb);
    }
  }
}
