/* preprocess.c: the CPU fused preprocess.  Per output row it converts the source rows
 * the vertical taps need (each once, into a ring of float RGB rows, only the columns the
 * horizontal taps read), sums them vertically, then filters horizontally, clamps and
 * rounds like PIL's 8-bit output, normalises and writes the three NCHW planes. */
#include <stdlib.h>
#include <string.h>

#include "preprocess.h"

static void
axis_clear (gpunet_resample_axis *a)
{
  free (a->first);
  free (a->count);
  free (a->weights);
  memset (a, 0, sizeof *a);
}

static gpunet_status
axis_init (gpunet_resample_axis *a, const gpunet_axis_map *m, int round)
{
  memset (a, 0, sizeof *a);
  a->map = *m;
  a->n = m->out_size;
  /* rounded up (to 4 vertically, 16 horizontally) so the horizontal pass reads whole
   * groups of 4, or of 16 in its AVX-512 form, of (zero) weights */
  a->ksize = (gpunet_resample_ksize (m->in_size, m->scaled) + round - 1) / round * round;
  a->first = calloc ((size_t) a->n, sizeof (int));
  a->count = calloc ((size_t) a->n, sizeof (int));
  a->weights = calloc ((size_t) a->n * (size_t) a->ksize, sizeof (float));
  if (!a->first || !a->count || !a->weights) {
    axis_clear (a);
    return GPUNET_ERR_NO_MEMORY;
  }
  /* outputs showing resized samples 0..scaled-1 */
  a->lo = -m->offset > 0 ? -m->offset : 0;
  a->hi = m->scaled - m->offset < a->n ? m->scaled - m->offset : a->n;
  if (a->hi < a->lo)
    a->hi = a->lo;
  a->src_lo = m->in_size;
  a->src_hi = 0;
  for (int o = a->lo; o < a->hi; o++) {
    int first;
    const int c = gpunet_resample_taps (m->in_size, m->scaled, o + m->offset, &first,
        a->weights + (size_t) o * a->ksize);
    a->first[o] = first;
    a->count[o] = c;
    if (first < a->src_lo)
      a->src_lo = first;
    if (first + c > a->src_hi)
      a->src_hi = first + c;
  }
  if (a->src_hi < a->src_lo)
    a->src_lo = a->src_hi = 0;
  return GPUNET_OK;
}

gpunet_status
gpunet_preprocess_plan_init (gpunet_preprocess_plan *p, int in_w, int in_h, int out_size,
    gpunet_resize_mode mode, float crop_pct)
{
  memset (p, 0, sizeof *p);
  if (in_w < 1 || in_h < 1 || out_size < 1 || !(crop_pct > 0.0f)
      || (mode != GPUNET_RESIZE_CENTER_CROP && mode != GPUNET_RESIZE_STRETCH
          && mode != GPUNET_RESIZE_LETTERBOX))
    return GPUNET_ERR_INVALID_ARGUMENT;
  p->in_w = in_w;
  p->in_h = in_h;
  p->out_size = out_size;
  p->mode = mode;
  p->crop_pct = crop_pct;
  gpunet_axis_map mx, my;
  gpunet_preprocess_geometry (mode, crop_pct, in_w, in_h, out_size, &mx, &my);
  if (axis_init (&p->x, &mx, 16) != GPUNET_OK || axis_init (&p->y, &my, 4) != GPUNET_OK) {
    gpunet_preprocess_plan_clear (p);
    return GPUNET_ERR_NO_MEMORY;
  }
  p->round8 = 1;
  p->simd_cap = -1;
  for (int c = 0; c < 3; c++)
    for (int v = 0; v < 256; v++)
      p->norm[c][v] = gpunet_normalize ((float) v, c);
  for (int c = 0; c < 3; c++)
    p->pad[c] = mode == GPUNET_RESIZE_LETTERBOX ? 0.0f : gpunet_normalize (0.0f, c);

  /* a ring slot or vsum holds 3 planes of the columns read, plus ksize floats of slack
   * that the zero-weight taps of the horizontal pass may read (calloc: finite zeros) */
  const size_t slot = 3 * (size_t) (p->x.src_hi - p->x.src_lo) + (size_t) p->x.ksize;
  /* a ring of every row one output row reads, unless that passes 64 MiB (a huge
   * downscale): then one row and the slower streaming pass */
  p->ring_rows = slot * (size_t) p->y.ksize * sizeof (float) <= ((size_t) 64 << 20) ? p->y.ksize : 1;
  p->ring_tag = malloc (sizeof (int) * (size_t) p->ring_rows);
  p->rows = malloc (sizeof (float *) * (size_t) p->ring_rows);
  p->ring = calloc (slot * (size_t) p->ring_rows, sizeof (float));
  p->vsum = calloc (slot, sizeof (float));
  p->hsum = malloc (sizeof (float) * 3 * (size_t) out_size);
  /* a blended U and V row over the chroma columns, plus U and V per luma column */
  p->chroma = malloc (sizeof (float) * 2 * ((size_t) in_w + 4));
  if (!p->ring_tag || !p->rows || !p->ring || !p->vsum || !p->hsum || !p->chroma) {
    gpunet_preprocess_plan_clear (p);
    return GPUNET_ERR_NO_MEMORY;
  }
  return GPUNET_OK;
}

int
gpunet_preprocess_plan_matches (const gpunet_preprocess_plan *p, int in_w, int in_h,
    int out_size, gpunet_resize_mode mode, float crop_pct)
{
  return p->ring && p->in_w == in_w && p->in_h == in_h && p->out_size == out_size
      && p->mode == mode && (mode != GPUNET_RESIZE_CENTER_CROP || p->crop_pct == crop_pct);
}

void
gpunet_preprocess_plan_clear (gpunet_preprocess_plan *p)
{
  axis_clear (&p->x);
  axis_clear (&p->y);
  free (p->ring_tag);
  free (p->rows);
  free (p->ring);
  free (p->vsum);
  free (p->hsum);
  free (p->chroma);
  memset (p, 0, sizeof *p);
}

#if defined(__GNUC__)
#define GPUNET_ALWAYS_INLINE inline __attribute__ ((always_inline))
#else
#define GPUNET_ALWAYS_INLINE inline
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
/* x86-64 with gcc: AVX2 and AVX-512 paths beside the portable code, chosen at run time */
#define GPUNET_PRE_SIMD 1
#include <immintrin.h>

/* The vector code this CPU runs (checked once): 2 AVX-512F, 1 AVX2, 0 none; at most the
 * plan's simd_cap, so the tests compare the paths on one CPU.  The engine's worker threads
 * preprocess side by side: the cached level is an atomic (relaxed: each thread that finds
 * it unset computes the same value). */
static int
cpu_simd_level (const gpunet_preprocess_plan *p)
{
  static int cached = -1;
  int level = __atomic_load_n (&cached, __ATOMIC_RELAXED);
  if (level < 0) {
    __builtin_cpu_init ();
    level = __builtin_cpu_supports ("avx512f") ? 2 : __builtin_cpu_supports ("avx2") ? 1 : 0;
    __atomic_store_n (&cached, level, __ATOMIC_RELAXED);
  }
  return p->simd_cap >= 0 && p->simd_cap < level ? p->simd_cap : level;
}

/* The vector horizontal pass: needs rounding and whole groups of 16 weights. */
static int
horizontal_simd_level (const gpunet_preprocess_plan *p)
{
  return p->round8 && p->x.ksize % 16 == 0 ? cpu_simd_level (p) : 0;
}

#endif

/* The blended chroma of columns [c, c1): bu[c] = U of row cy0 + wy * (U of cy1 - U of
 * cy0), bv alike. */
static GPUNET_ALWAYS_INLINE void
chroma_blend (const gpunet_pixel_src *s, int cy0, int cy1, float wy, int c, int c1,
    float *restrict bu, float *restrict bv)
{
  if (s->format == GPUNET_FORMAT_NV12) {
    const uint8_t *restrict r0 = s->planes[1] + (size_t) cy0 * s->strides[1];
    const uint8_t *restrict r1 = s->planes[1] + (size_t) cy1 * s->strides[1];
    for (; c < c1; c++) {
      bu[c] = r0[2 * c] + wy * (float) (r1[2 * c] - r0[2 * c]);
      bv[c] = r0[2 * c + 1] + wy * (float) (r1[2 * c + 1] - r0[2 * c + 1]);
    }
  } else {
    const uint8_t *restrict u0 = s->planes[1] + (size_t) cy0 * s->strides[1];
    const uint8_t *restrict u1 = s->planes[1] + (size_t) cy1 * s->strides[1];
    const uint8_t *restrict v0 = s->planes[2] + (size_t) cy0 * s->strides[2];
    const uint8_t *restrict v1 = s->planes[2] + (size_t) cy1 * s->strides[2];
    for (; c < c1; c++) {
      bu[c] = u0[c] + wy * (float) (u1[c] - u0[c]);
      bv[c] = v0[c] + wy * (float) (v1[c] - v0[c]);
    }
  }
}

/* Luma columns [xa, xb) of source row y into dst, whose three planes of n floats start
 * at column x0.  Chroma from the blended row bu/bv, co-sited, so even columns take their
 * sample and odd ones the mean of two; U goes to dg, V to db, which the conversion then
 * overwrites in place. */
static GPUNET_ALWAYS_INLINE void
upsample_convert (const gpunet_pixel_src *s, int y, int x0, int xa, int xb, int n,
    const float *restrict bu, const float *restrict bv, float *restrict dst)
{
  float *restrict dr = dst, *restrict dg = dst + n, *restrict db = dst + 2 * n;
  int x = xa;
  if (x & 1) {
    dg[x - x0] = 0.5f * (bu[x >> 1] + bu[(x >> 1) + 1]);
    db[x - x0] = 0.5f * (bv[x >> 1] + bv[(x >> 1) + 1]);
    x++;
  }
  {
    const int a0 = x >> 1, pairs = (xb - x) / 2;
    float *restrict du = dg + (x - x0), *restrict dv = db + (x - x0);
    const float *restrict su = bu + a0, *restrict sv = bv + a0;
    for (int j = 0; j < pairs; j++) {
      du[2 * j] = su[j];
      du[2 * j + 1] = 0.5f * (su[j] + su[j + 1]);
      dv[2 * j] = sv[j];
      dv[2 * j + 1] = 0.5f * (sv[j] + sv[j + 1]);
    }
    x += 2 * pairs;
  }
  if (x < xb) {
    dg[x - x0] = bu[x >> 1];
    db[x - x0] = bv[x >> 1];
  }
  const uint8_t *restrict yrow = s->planes[0] + (size_t) y * s->strides[0] + x0;
  const gpunet_yuv_coeffs c = s->yuv;
  for (int i = xa - x0; i < xb - x0; i++) {
    float r, g, b;
    gpunet_yuv_to_rgb (&c, yrow[i], dg[i], db[i], &r, &g, &b);
    dr[i] = r;
    dg[i] = g;
    db[i] = b;
  }
}

#ifdef GPUNET_PRE_SIMD
/* chroma_blend with AVX2, 8 chroma samples at a time, bit for bit the scalar loop (the
 * byte difference is an exact integer, then one multiply and one add, no FMA); returns
 * the column it stopped at, for the scalar loop to finish. */
__attribute__ ((target ("avx2"))) static int
chroma_blend_avx2 (const gpunet_pixel_src *s, int cy0, int cy1, float wy, int c, int c1,
    float *bu, float *bv)
{
  const __m256 w = _mm256_set1_ps (wy);
  if (s->format == GPUNET_FORMAT_NV12) {
    const uint8_t *r0 = s->planes[1] + (size_t) cy0 * s->strides[1];
    const uint8_t *r1 = s->planes[1] + (size_t) cy1 * s->strides[1];
    /* U bytes to the low 8, V bytes to the high 8 */
    const __m128i split = _mm_setr_epi8 (0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    for (; c + 8 <= c1; c += 8) {
      const __m128i a = _mm_shuffle_epi8 (_mm_loadu_si128 ((const __m128i *) (r0 + 2 * c)), split);
      const __m128i b = _mm_shuffle_epi8 (_mm_loadu_si128 ((const __m128i *) (r1 + 2 * c)), split);
      const __m256i ua = _mm256_cvtepu8_epi32 (a), ub = _mm256_cvtepu8_epi32 (b);
      const __m256i va = _mm256_cvtepu8_epi32 (_mm_srli_si128 (a, 8));
      const __m256i vb = _mm256_cvtepu8_epi32 (_mm_srli_si128 (b, 8));
      _mm256_storeu_ps (bu + c, _mm256_add_ps (_mm256_cvtepi32_ps (ua),
              _mm256_mul_ps (w, _mm256_cvtepi32_ps (_mm256_sub_epi32 (ub, ua)))));
      _mm256_storeu_ps (bv + c, _mm256_add_ps (_mm256_cvtepi32_ps (va),
              _mm256_mul_ps (w, _mm256_cvtepi32_ps (_mm256_sub_epi32 (vb, va)))));
    }
    return c;
  }
  const uint8_t *u0 = s->planes[1] + (size_t) cy0 * s->strides[1];
  const uint8_t *u1 = s->planes[1] + (size_t) cy1 * s->strides[1];
  const uint8_t *v0 = s->planes[2] + (size_t) cy0 * s->strides[2];
  const uint8_t *v1 = s->planes[2] + (size_t) cy1 * s->strides[2];
  for (; c + 8 <= c1; c += 8) {
    const __m256i ua = _mm256_cvtepu8_epi32 (_mm_loadl_epi64 ((const __m128i *) (u0 + c)));
    const __m256i ub = _mm256_cvtepu8_epi32 (_mm_loadl_epi64 ((const __m128i *) (u1 + c)));
    const __m256i va = _mm256_cvtepu8_epi32 (_mm_loadl_epi64 ((const __m128i *) (v0 + c)));
    const __m256i vb = _mm256_cvtepu8_epi32 (_mm_loadl_epi64 ((const __m128i *) (v1 + c)));
    _mm256_storeu_ps (bu + c, _mm256_add_ps (_mm256_cvtepi32_ps (ua),
            _mm256_mul_ps (w, _mm256_cvtepi32_ps (_mm256_sub_epi32 (ub, ua)))));
    _mm256_storeu_ps (bv + c, _mm256_add_ps (_mm256_cvtepi32_ps (va),
            _mm256_mul_ps (w, _mm256_cvtepi32_ps (_mm256_sub_epi32 (vb, va)))));
  }
  return c;
}

/* 0..255 clamp as max/min: max (0, v) is v < 0 ? 0 : v and min (255, v) is
 * v > 255 ? 255 : v for every v, -0 and NaN included (both return the second operand
 * when they cannot order), so this is gpunet_clamp255 to the bit. */
__attribute__ ((target ("avx2"))) static inline __m256
clamp255_avx2 (__m256 v)
{
  return _mm256_min_ps (_mm256_set1_ps (255.0f), _mm256_max_ps (_mm256_setzero_ps (), v));
}

/* upsample_convert with AVX2 for 8 luma columns at a time from an even column xa: the
 * chroma of columns 2a .. 2a+7 is s0 m0 s1 m1 s2 m2 s3 m3 (s = bu[a..a+3], m the means
 * of neighbours), then gpunet_yuv_to_rgb's operations in its order.  Returns the column
 * it stopped at. */
__attribute__ ((target ("avx2"))) static int
upsample_convert_avx2 (const gpunet_pixel_src *s, int y, int x0, int xa, int xb, int n,
    const float *bu, const float *bv, float *dst)
{
  float *dr = dst, *dg = dst + n, *db = dst + 2 * n;
  const uint8_t *yrow = s->planes[0] + (size_t) y * s->strides[0] + x0;
  const gpunet_yuv_coeffs *c = &s->yuv;
  const __m256 yo = _mm256_set1_ps (c->yo), ys = _mm256_set1_ps (c->ys);
  const __m256 rv = _mm256_set1_ps (c->rv), gu = _mm256_set1_ps (c->gu);
  const __m256 gv = _mm256_set1_ps (c->gv), bcu = _mm256_set1_ps (c->bu);
  const __m256 c128 = _mm256_set1_ps (128.0f);
  const __m128 half = _mm_set1_ps (0.5f);
  int x = xa;
  for (; x + 8 <= xb; x += 8) {
    const int a = x >> 1, i = x - x0;
    const __m128 su = _mm_loadu_ps (bu + a), sv = _mm_loadu_ps (bv + a);
    const __m128 mu = _mm_mul_ps (half, _mm_add_ps (su, _mm_loadu_ps (bu + a + 1)));
    const __m128 mv = _mm_mul_ps (half, _mm_add_ps (sv, _mm_loadu_ps (bv + a + 1)));
    const __m256 u = _mm256_set_m128 (_mm_unpackhi_ps (su, mu), _mm_unpacklo_ps (su, mu));
    const __m256 v = _mm256_set_m128 (_mm_unpackhi_ps (sv, mv), _mm_unpacklo_ps (sv, mv));
    const __m256 yf = _mm256_cvtepi32_ps (_mm256_cvtepu8_epi32 (
            _mm_loadl_epi64 ((const __m128i *) (yrow + i))));
    const __m256 yy = _mm256_mul_ps (_mm256_sub_ps (yf, yo), ys);
    const __m256 uu = _mm256_sub_ps (u, c128), vv = _mm256_sub_ps (v, c128);
    _mm256_storeu_ps (dr + i, clamp255_avx2 (_mm256_add_ps (yy, _mm256_mul_ps (rv, vv))));
    _mm256_storeu_ps (dg + i, clamp255_avx2 (_mm256_sub_ps (_mm256_sub_ps (yy,
                    _mm256_mul_ps (gu, uu)), _mm256_mul_ps (gv, vv))));
    _mm256_storeu_ps (db + i, clamp255_avx2 (_mm256_add_ps (yy, _mm256_mul_ps (bcu, uu))));
  }
  return x;
}
#endif

/* Source row y, columns [x0, x1), as float RGB planes dst[0..n), dst[n..2n), dst[2n..3n).
 * Inlined so the vectorised clones of the caller compile it for their target too. */
static GPUNET_ALWAYS_INLINE void
convert_row (gpunet_preprocess_plan *p, const gpunet_pixel_src *s, int y, int x0, int x1,
    float *restrict dst, int simd)
{
  const int n = x1 - x0;
  float *restrict dr = dst, *restrict dg = dst + n, *restrict db = dst + 2 * n;
  int ri, gi, bi;
  const int bpp = gpunet_rgb_layout (s->format, &ri, &gi, &bi);
  if (bpp) {
    const uint8_t *restrict row = s->planes[0] + (size_t) y * s->strides[0] + (size_t) x0 * bpp;
    if (bpp == 3) {
      for (int i = 0; i < n; i++) {
        dr[i] = row[3 * i + ri];
        dg[i] = row[3 * i + gi];
        db[i] = row[3 * i + bi];
      }
    } else {
      for (int i = 0; i < n; i++) {
        dr[i] = row[4 * i + ri];
        dg[i] = row[4 * i + gi];
        db[i] = row[4 * i + bi];
      }
    }
    return;
  }

  /* YUV 4:2:0: blend the two chroma rows this luma row sits between, once per row */
  const int cw = (s->width + 1) / 2, ch = (s->height + 1) / 2;
  int cy0, cy1;
  float wy;
  gpunet_chroma_taps (y, ch, 0, &cy0, &cy1, &wy);
  const int c0 = x0 / 2, c1 = (x1 - 1) / 2 + 2 < cw ? (x1 - 1) / 2 + 2 : cw;
  float *restrict bu = p->chroma, *restrict bv = p->chroma + (s->width + 4);
  int c = c0, x = x0;
#ifdef GPUNET_PRE_SIMD
  if (simd >= 1)
    c = chroma_blend_avx2 (s, cy0, cy1, wy, c0, c1, bu, bv);
#endif
  chroma_blend (s, cy0, cy1, wy, c, c1, bu, bv);
  /* the edge repeats (gpunet_chroma_taps clamps the same way) */
  bu[c1] = bu[c1 - 1];
  bv[c1] = bv[c1 - 1];
#ifdef GPUNET_PRE_SIMD
  if (simd >= 1) {
    if (x & 1) {
      upsample_convert (s, y, x0, x, x + 1, n, bu, bv, dst);
      x++;
    }
    x = upsample_convert_avx2 (s, y, x0, x, x1, n, bu, bv, dst);
  }
#endif
  upsample_convert (s, y, x0, x, x1, n, bu, bv, dst);
}

/* out[i] = (or += when `accumulate`) the sum of w[k] * rows[k][i] over k < n, four rows
 * per sweep of out. */
static GPUNET_ALWAYS_INLINE void
vertical_sum (float *restrict out, const float *const *rows, const float *w, int n, int m,
    int accumulate)
{
  int k = 0;
  if (!accumulate && n >= 4) {
    const float *restrict a = rows[0], *restrict b = rows[1], *restrict c = rows[2],
        *restrict d = rows[3];
    const float wa = w[0], wb = w[1], wc = w[2], wd = w[3];
    for (int i = 0; i < m; i++)
      out[i] = wa * a[i] + wb * b[i] + wc * c[i] + wd * d[i];
    k = 4;
  } else if (!accumulate) {
    const float *restrict a = rows[0];
    const float wa = w[0];
    for (int i = 0; i < m; i++)
      out[i] = wa * a[i];
    k = 1;
  }
  for (; k + 4 <= n; k += 4) {
    const float *restrict a = rows[k], *restrict b = rows[k + 1], *restrict c = rows[k + 2],
        *restrict d = rows[k + 3];
    const float wa = w[k], wb = w[k + 1], wc = w[k + 2], wd = w[k + 3];
    for (int i = 0; i < m; i++)
      out[i] += wa * a[i] + wb * b[i] + wc * c[i] + wd * d[i];
  }
  for (; k < n; k++) {
    const float *restrict a = rows[k];
    const float wa = w[k];
    for (int i = 0; i < m; i++)
      out[i] += wa * a[i];
  }
}

#ifdef GPUNET_PRE_SIMD
/* One group of four rows at column i: ((wa a + wb b) + wc c) + wd d, as vertical_sum
 * forms it. */
__attribute__ ((target ("avx2"))) static inline __m256
vgroup4 (const float *const *rows, const __m256 *w, int k, int i)
{
  return _mm256_add_ps (_mm256_add_ps (_mm256_add_ps (
              _mm256_mul_ps (w[k], _mm256_loadu_ps (rows[k] + i)),
              _mm256_mul_ps (w[k + 1], _mm256_loadu_ps (rows[k + 1] + i))),
          _mm256_mul_ps (w[k + 2], _mm256_loadu_ps (rows[k + 2] + i))),
      _mm256_mul_ps (w[k + 3], _mm256_loadu_ps (rows[k + 3] + i)));
}

/* vertical_sum (not accumulating) with AVX2: the running sums of 32 columns stay in
 * registers over all n rows instead of being stored and reloaded per group of four rows
 * (the same operations in the same order, so the same bits; 0.85 -> 0.67 ms per 1080p ->
 * 320 frame in a micro-benchmark, where it runs at about one vector of one row per
 * cycle, cached or not).  Takes n <= GPUNET_PRE_VMAX rows; returns the columns done, a
 * multiple of 32, for vertical_sum to finish. */
#define GPUNET_PRE_VMAX 64
__attribute__ ((target ("avx2"))) static int
vertical_sum_avx2 (float *out, const float *const *rows, const float *wt, int n, int m)
{
  if (n > GPUNET_PRE_VMAX)
    return 0;
  __m256 w[GPUNET_PRE_VMAX];
  for (int k = 0; k < n; k++)
    w[k] = _mm256_set1_ps (wt[k]);
  int i = 0;
  for (; i + 32 <= m; i += 32) {
    __m256 a0, a1, a2, a3;
    int k;
    if (n >= 4) {
      a0 = vgroup4 (rows, w, 0, i);
      a1 = vgroup4 (rows, w, 0, i + 8);
      a2 = vgroup4 (rows, w, 0, i + 16);
      a3 = vgroup4 (rows, w, 0, i + 24);
      k = 4;
    } else {
      a0 = _mm256_mul_ps (w[0], _mm256_loadu_ps (rows[0] + i));
      a1 = _mm256_mul_ps (w[0], _mm256_loadu_ps (rows[0] + i + 8));
      a2 = _mm256_mul_ps (w[0], _mm256_loadu_ps (rows[0] + i + 16));
      a3 = _mm256_mul_ps (w[0], _mm256_loadu_ps (rows[0] + i + 24));
      k = 1;
    }
    for (; k + 4 <= n; k += 4) {
      a0 = _mm256_add_ps (a0, vgroup4 (rows, w, k, i));
      a1 = _mm256_add_ps (a1, vgroup4 (rows, w, k, i + 8));
      a2 = _mm256_add_ps (a2, vgroup4 (rows, w, k, i + 16));
      a3 = _mm256_add_ps (a3, vgroup4 (rows, w, k, i + 24));
    }
    for (; k < n; k++) {
      a0 = _mm256_add_ps (a0, _mm256_mul_ps (w[k], _mm256_loadu_ps (rows[k] + i)));
      a1 = _mm256_add_ps (a1, _mm256_mul_ps (w[k], _mm256_loadu_ps (rows[k] + i + 8)));
      a2 = _mm256_add_ps (a2, _mm256_mul_ps (w[k], _mm256_loadu_ps (rows[k] + i + 16)));
      a3 = _mm256_add_ps (a3, _mm256_mul_ps (w[k], _mm256_loadu_ps (rows[k] + i + 24)));
    }
    _mm256_storeu_ps (out + i, a0);
    _mm256_storeu_ps (out + i + 8, a1);
    _mm256_storeu_ps (out + i + 16, a2);
    _mm256_storeu_ps (out + i + 24, a3);
  }
  return i;
}
#endif

/* normalise(clamp255(quantize8(v))) of channel c through the plan's table (round8 only):
 * quantize8 leaves an integer 0..255 (and clamp255 nothing to do); a NaN, which 8-bit
 * pixels cannot produce, would map to entry 0. */
static inline float
norm8 (const gpunet_preprocess_plan *p, float v, int c)
{
  const float q = gpunet_quantize8 (v);
  return p->norm[c][q >= 0.0f && q <= 255.0f ? (int) q : 0];
}

#ifdef GPUNET_PRE_SIMD

/* Outputs lo .. hi - 1 of a row from their horizontal sums in p->hsum (3 planes of R), 8
 * of a channel at a time, out of the sums' dependency chains: the clamp as max/min (a
 * NaN, which 8-bit pixels cannot produce, gives 0), floor (v + 0.5), and
 * gpunet_normalize's two divisions, which is the norm table's entry to the bit. */
__attribute__ ((target ("avx2"))) static void
normalize_sums_avx2 (const gpunet_preprocess_plan *p, float *outr, float *outg, float *outb)
{
  const int R = p->out_size, lo = p->x.lo, hi = p->x.hi;
  const __m256 zero = _mm256_setzero_ps (), top = _mm256_set1_ps (255.0f);
  const __m256 half = _mm256_set1_ps (0.5f);
  static const float mean[3] = { GPUNET_MEAN_R, GPUNET_MEAN_G, GPUNET_MEAN_B };
  static const float std[3] = { GPUNET_STD_R, GPUNET_STD_G, GPUNET_STD_B };
  float *const out[3] = { outr, outg, outb };
  for (int c = 0; c < 3; c++) {
    const float *sc = p->hsum + (size_t) c * R;
    float *oc = out[c];
    int ox = lo;
    for (; ox + 8 <= hi; ox += 8) {
      const __m256 v = _mm256_min_ps (_mm256_max_ps (_mm256_loadu_ps (sc + ox), zero), top);
      const __m256 q = _mm256_floor_ps (_mm256_add_ps (v, half));
      _mm256_storeu_ps (oc + ox, _mm256_div_ps (_mm256_sub_ps (_mm256_div_ps (q, top),
                  _mm256_set1_ps (mean[c])), _mm256_set1_ps (std[c])));
    }
    for (; ox < hi; ox++)
      oc[ox] = norm8 (p, sc[ox], c);
  }
}

/* The AVX-512 path of the horizontal pass, bit for bit the scalar one: per output and
 * channel, 16 taps at a time: the 16 products, then the pairs (w0 a0 + w1 a1) and
 * (w2 a2 + w3 a3) and their sum g_j for each group j of 4 taps, exactly as the scalar
 * loop forms them (IEEE addition is commutative), and the groups added to the running
 * sum in order.  Groups past an output's taps have zero weights and add +-0, which
 * changes nothing after the clamp.  The sums then go through normalize_sums_avx2.
 * Needs the CPU's AVX-512F. */
__attribute__ ((target ("avx512f"))) static inline float
taps16 (__m512 w, const float *a, float sum)
{
  const __m512 prod = _mm512_mul_ps (w, _mm512_loadu_ps (a));
  /* pair sums in the even lanes: lane 2i + lane 2i+1 */
  const __m512 pair = _mm512_add_ps (prod, _mm512_permute_ps (prod, 0xb1));
  /* group sums in lanes 0, 4, 8, 12: lane 4i + lane 4i+2 */
  const __m512 grp = _mm512_add_ps (pair, _mm512_permute_ps (pair, 0x4e));
  const __m128 g = _mm512_castps512_ps128 (_mm512_permutexvar_ps (
          _mm512_set_epi32 (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), grp));
  float v[4];
  _mm_storeu_ps (v, g);
  return (((sum + v[0]) + v[1]) + v[2]) + v[3];
}

__attribute__ ((target ("avx512f"))) static void
horizontal_avx512 (const gpunet_preprocess_plan *p, const float *vs, int ncols, float *outr,
    float *outg, float *outb)
{
  const gpunet_resample_axis *ax = &p->x;
  const int R = p->out_size, x0 = ax->src_lo, ks = ax->ksize;
  const float *vr = vs, *vg = vs + ncols, *vb = vs + 2 * ncols;
  for (int ox = 0; ox < R; ox++) {
    if (ox < ax->lo || ox >= ax->hi) {
      outr[ox] = p->pad[0];
      outg[ox] = p->pad[1];
      outb[ox] = p->pad[2];
      continue;
    }
    const int f = ax->first[ox] - x0, cx = ax->count[ox];
    const float *wx = ax->weights + (size_t) ox * ks;
    float sr = 0.0f, sg = 0.0f, sb = 0.0f;
    for (int k = 0; k < cx; k += 16) {
      const __m512 w = _mm512_loadu_ps (wx + k);
      sr = taps16 (w, vr + f + k, sr);
      sg = taps16 (w, vg + f + k, sg);
      sb = taps16 (w, vb + f + k, sb);
    }
    p->hsum[ox] = sr;
    p->hsum[R + ox] = sg;
    p->hsum[2 * R + ox] = sb;
  }
  normalize_sums_avx2 (p, outr, outg, outb);
}

/* The same with AVX2 (no FMA, so the products round as the scalar loop's do), for CPUs
 * without AVX-512: 16 taps of the three channels at a time.  Two horizontal adds form the
 * pairs and then the group sums g_j = (w0 a0 + w1 a1) + (w2 a2 + w3 a3) of the 4 groups
 * of 4 taps (lanes: r g0 g2, g g0 g2 low, r g1 g3, g g1 g3 high; b alike on its own), a
 * shuffle gathers group j of r, g and b into one vector G_j, and the running sums of the
 * three channels add G_0 .. G_3 in order, as the scalar loop adds its groups. */

__attribute__ ((target ("avx2"))) static inline __m256
pairs16 (const float *wx, const float *a)
{
  const __m256 p0 = _mm256_mul_ps (_mm256_loadu_ps (wx), _mm256_loadu_ps (a));
  const __m256 p1 = _mm256_mul_ps (_mm256_loadu_ps (wx + 8), _mm256_loadu_ps (a + 8));
  return _mm256_hadd_ps (p0, p1);
}

/* The 16-tap sums of one channel plane v for the 8 outputs whose weights start at w (16
 * per output) and whose taps start at first[j] - x0: per output the pair sums (one hadd of
 * its two product vectors), per two outputs j, k the group sums (one hadd of their pair
 * vectors: j g0 g2, k g0 g2 in the low half, j g1 g3, k g1 g3 in the high one), regathered
 * into G_0 .. G_3 over the 8 outputs and added to 0 in that order, as the scalar loop
 * adds its groups; a third fewer shuffles per output than one output at a time. */
__attribute__ ((target ("avx2"))) static inline __m256
sums16x8 (const float *w, const int *first, int x0, const float *v)
{
  __m256 m[4];
  for (int q = 0; q < 4; q++) {
    const float *wa = w + 32 * q, *wb = wa + 16;
    const float *a = v + first[2 * q] - x0, *b = v + first[2 * q + 1] - x0;
    m[q] = _mm256_hadd_ps (pairs16 (wa, a), pairs16 (wb, b));
  }
  /* outputs 0-3: g0 | g1 and g2 | g3; then 4-7 */
  const __m256 e0 = _mm256_shuffle_ps (m[0], m[1], _MM_SHUFFLE (2, 0, 2, 0));
  const __m256 o0 = _mm256_shuffle_ps (m[0], m[1], _MM_SHUFFLE (3, 1, 3, 1));
  const __m256 e1 = _mm256_shuffle_ps (m[2], m[3], _MM_SHUFFLE (2, 0, 2, 0));
  const __m256 o1 = _mm256_shuffle_ps (m[2], m[3], _MM_SHUFFLE (3, 1, 3, 1));
  __m256 sum = _mm256_add_ps (_mm256_setzero_ps (), _mm256_permute2f128_ps (e0, e1, 0x20));
  sum = _mm256_add_ps (sum, _mm256_permute2f128_ps (e0, e1, 0x31));
  sum = _mm256_add_ps (sum, _mm256_permute2f128_ps (o0, o1, 0x20));
  return _mm256_add_ps (sum, _mm256_permute2f128_ps (o0, o1, 0x31));
}

__attribute__ ((target ("avx2"))) static void
horizontal_avx2 (const gpunet_preprocess_plan *p, const float *vs, int ncols, float *outr,
    float *outg, float *outb)
{
  const gpunet_resample_axis *ax = &p->x;
  const int R = p->out_size, x0 = ax->src_lo, ks = ax->ksize, lo = ax->lo, hi = ax->hi;
  const float *vr = vs, *vg = vs + ncols, *vb = vs + 2 * ncols;
  float *sr = p->hsum, *sg = p->hsum + R, *sb = p->hsum + 2 * R;
  for (int ox = 0; ox < R; ox++)
    if (ox < lo || ox >= hi) {
      outr[ox] = p->pad[0];
      outg[ox] = p->pad[1];
      outb[ox] = p->pad[2];
    }
  int ox = lo;
  /* 8 outputs at a time where every output has at most 16 taps */
  for (; ks == 16 && ox + 8 <= hi; ox += 8) {
    const float *w8 = ax->weights + (size_t) ox * 16;
    _mm256_storeu_ps (sr + ox, sums16x8 (w8, ax->first + ox, x0, vr));
    _mm256_storeu_ps (sg + ox, sums16x8 (w8, ax->first + ox, x0, vg));
    _mm256_storeu_ps (sb + ox, sums16x8 (w8, ax->first + ox, x0, vb));
  }
  /* one output at a time: the three channels together */
  for (; ox < hi; ox++) {
    const int f = ax->first[ox] - x0, cx = ax->count[ox];
    const float *wx = ax->weights + (size_t) ox * ks;
    __m128 sum = _mm_setzero_ps ();   /* r, g, b, (b) */
    for (int k = 0; k < cx; k += 16) {
      const __m256 hr = pairs16 (wx + k, vr + f + k), hg = pairs16 (wx + k, vg + f + k);
      const __m256 hb = pairs16 (wx + k, vb + f + k);
      const __m256 rg = _mm256_hadd_ps (hr, hg), bb = _mm256_hadd_ps (hb, hb);
      const __m128 lo4 = _mm256_castps256_ps128 (rg), hi4 = _mm256_extractf128_ps (rg, 1);
      const __m128 blo = _mm256_castps256_ps128 (bb), bhi = _mm256_extractf128_ps (bb, 1);
      sum = _mm_add_ps (sum, _mm_shuffle_ps (lo4, blo, _MM_SHUFFLE (0, 0, 2, 0)));   /* g0 */
      sum = _mm_add_ps (sum, _mm_shuffle_ps (hi4, bhi, _MM_SHUFFLE (0, 0, 2, 0)));   /* g1 */
      sum = _mm_add_ps (sum, _mm_shuffle_ps (lo4, blo, _MM_SHUFFLE (1, 1, 3, 1)));   /* g2 */
      sum = _mm_add_ps (sum, _mm_shuffle_ps (hi4, bhi, _MM_SHUFFLE (1, 1, 3, 1)));   /* g3 */
    }
    _mm_store_ss (sr + ox, sum);
    _mm_store_ss (sg + ox, _mm_shuffle_ps (sum, sum, _MM_SHUFFLE (1, 1, 1, 1)));
    _mm_store_ss (sb + ox, _mm_shuffle_ps (sum, sum, _MM_SHUFFLE (2, 2, 2, 2)));
  }
  normalize_sums_avx2 (p, outr, outg, outb);
}
#endif

/* The AVX2 clone is chosen at load time where the CPU has it; it does not use FMA, so
 * both clones round identically.  Not under ThreadSanitizer: GCC instruments the clones'
 * resolver, which the dynamic loader runs before the TSan runtime is set up (a crash at
 * start in every program that links the engine). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) \
    && !defined(__SANITIZE_THREAD__)
#define GPUNET_CLONES __attribute__ ((target_clones ("avx2", "default")))
#else
#define GPUNET_CLONES
#endif

GPUNET_CLONES void
gpunet_cpu_preprocess (gpunet_preprocess_plan *p, const gpunet_image *image, float *out_chw)
{
  const int R = p->out_size;
  const size_t plane = (size_t) R * R;
  const gpunet_resample_axis *ax = &p->x, *ay = &p->y;
  const int x0 = ax->src_lo, x1 = ax->src_hi, ncols = x1 - x0;
  const size_t slot = 3 * (size_t) ncols + (size_t) ax->ksize;
  gpunet_pixel_src src;
  gpunet_pixel_src_init (&src, image);
#ifdef GPUNET_PRE_SIMD
  const int simd = cpu_simd_level (p), hsimd = horizontal_simd_level (p);
#else
  const int simd = 0, hsimd = 0;
#endif
  p->paths_ran |= (simd >= 1 || hsimd == 1 ? GPUNET_CPU_PATH_AVX2 : 0)
      | (hsimd == 2 ? GPUNET_CPU_PATH_AVX512 : 0)
      | (simd == 0 || hsimd == 0 ? GPUNET_CPU_PATH_PORTABLE : 0);
  for (int i = 0; i < p->ring_rows; i++)
    p->ring_tag[i] = -1;

  for (int oy = 0; oy < R; oy++) {
    float *outr = out_chw + (size_t) oy * R, *outg = outr + plane, *outb = outg + plane;
    if (oy < ay->lo || oy >= ay->hi || ax->lo >= ax->hi) {
      for (int ox = 0; ox < R; ox++) {
        outr[ox] = p->pad[0];
        outg[ox] = p->pad[1];
        outb[ox] = p->pad[2];
      }
      continue;
    }
    const int fy = ay->first[oy], cy = ay->count[oy];
    const float *wy = ay->weights + (size_t) oy * ay->ksize;
    float *restrict vs = p->vsum;
    if (p->ring_rows >= cy) {
      /* the source rows of this output row, each converted once while it stays in the
       * ring, then the vertical pass over the columns the horizontal taps read */
      for (int k = 0; k < cy; k++) {
        const int row = fy + k, r = row % p->ring_rows;
        float *data = p->ring + (size_t) r * slot;
        if (p->ring_tag[r] != row) {
          convert_row (p, &src, row, x0, x1, data, simd);
          p->ring_tag[r] = row;
        }
        p->rows[k] = data;
      }
      int done = 0;
#ifdef GPUNET_PRE_SIMD
      if (simd >= 1)
        done = vertical_sum_avx2 (vs, (const float *const *) p->rows, wy, cy, 3 * ncols);
#endif
      /* the last columns (all of them without AVX2) */
      for (int k = 0; k < cy && done; k++)
        p->rows[k] += done;
      vertical_sum (vs + done, (const float *const *) p->rows, wy, cy, 3 * ncols - done, 0);
    } else {
      /* a huge downscale whose ring would not fit: one row at a time (rows shared with
       * the next output row are converted again) */
      for (int k = 0; k < cy; k++) {
        convert_row (p, &src, fy + k, x0, x1, p->ring, simd);
        const float *data = p->ring;
        vertical_sum (vs, &data, wy + k, 1, 3 * ncols, k > 0);
      }
    }
    /* horizontal pass in groups of 4 taps (zero weights pad each output's taps; vsum has
     * ksize zeroed floats after the last plane), clamp (and round), normalise */
    const float *vr = vs, *vg = vs + ncols, *vb = vs + 2 * ncols;
#ifdef GPUNET_PRE_SIMD
    if (hsimd == 2) {
      horizontal_avx512 (p, vs, ncols, outr, outg, outb);
      continue;
    }
    if (hsimd == 1) {
      horizontal_avx2 (p, vs, ncols, outr, outg, outb);
      continue;
    }
#endif
    for (int ox = 0; ox < R; ox++) {
      if (ox < ax->lo || ox >= ax->hi) {
        outr[ox] = p->pad[0];
        outg[ox] = p->pad[1];
        outb[ox] = p->pad[2];
        continue;
      }
      const int f = ax->first[ox] - x0, cx = ax->count[ox];
      const float *wx = ax->weights + (size_t) ox * ax->ksize;
      float sr = 0.0f, sg = 0.0f, sb = 0.0f;
      for (int k = 0; k < cx; k += 4) {
        const float w0 = wx[k], w1 = wx[k + 1], w2 = wx[k + 2], w3 = wx[k + 3];
        const float *a = vr + f + k, *b = vg + f + k, *c = vb + f + k;
        sr += (w0 * a[0] + w1 * a[1]) + (w2 * a[2] + w3 * a[3]);
        sg += (w0 * b[0] + w1 * b[1]) + (w2 * b[2] + w3 * b[3]);
        sb += (w0 * c[0] + w1 * c[1]) + (w2 * c[2] + w3 * c[3]);
      }
      if (p->round8) {
        outr[ox] = norm8 (p, sr, 0);
        outg[ox] = norm8 (p, sg, 1);
        outb[ox] = norm8 (p, sb, 2);
        continue;
      }
      outr[ox] = gpunet_normalize (gpunet_clamp255 (sr), 0);
      outg[ox] = gpunet_normalize (gpunet_clamp255 (sg), 1);
      outb[ox] = gpunet_normalize (gpunet_clamp255 (sb), 2);
    }
  }
}
