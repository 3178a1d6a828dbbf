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
  /* a blended U and V row over the chroma columns, plus U and V per luma column */
  p->chroma = malloc (sizeof (float) * 2 * ((size_t) in_w + 4));
  if (!p->ring_tag || !p->rows || !p->ring || !p->vsum || !p->chroma) {
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
  free (p->chroma);
  memset (p, 0, sizeof *p);
}

#if defined(__GNUC__)
#define GPUNET_ALWAYS_INLINE inline __attribute__ ((always_inline))
#else
#define GPUNET_ALWAYS_INLINE inline
#endif

/* Source row y, columns [x0, x1), as float RGB planes dst[0..n), dst[n..2n), dst[2n..3n).
 * Inlined so the vectorised clones of the caller compile it for their target too. */
static GPUNET_ALWAYS_INLINE void
convert_row (gpunet_preprocess_plan *p, const gpunet_pixel_src *s, int y, int x0, int x1,
    float *restrict dst)
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
  if (s->format == GPUNET_FORMAT_NV12) {
    const uint8_t *restrict r0 = s->planes[1] + (size_t) cy0 * s->strides[1];
    const uint8_t *restrict r1 = s->planes[1] + (size_t) cy1 * s->strides[1];
    for (int c = c0; c < c1; c++) {
      bu[c] = r0[2 * c] + wy * (float) (r1[2 * c] - r0[2 * c]);
      bv[c] = r0[2 * c + 1] + wy * (float) (r1[2 * c + 1] - r0[2 * c + 1]);
    }
  } else {
    const uint8_t *restrict u0 = s->planes[1] + (size_t) cy0 * s->strides[1];
    const uint8_t *restrict u1 = s->planes[1] + (size_t) cy1 * s->strides[1];
    const uint8_t *restrict v0 = s->planes[2] + (size_t) cy0 * s->strides[2];
    const uint8_t *restrict v1 = s->planes[2] + (size_t) cy1 * s->strides[2];
    for (int c = c0; c < c1; c++) {
      bu[c] = u0[c] + wy * (float) (u1[c] - u0[c]);
      bv[c] = v0[c] + wy * (float) (v1[c] - v0[c]);
    }
  }
  /* the edge repeats (gpunet_chroma_taps clamps the same way) */
  bu[c1] = bu[c1 - 1];
  bv[c1] = bv[c1 - 1];
  /* horizontal chroma: co-sited, so even luma columns take their sample and odd ones the
   * mean of two; U goes to dg, V to db, which the conversion then overwrites in place */
  int x = x0;
  if (x & 1) {
    dg[0] = 0.5f * (bu[x >> 1] + bu[(x >> 1) + 1]);
    db[0] = 0.5f * (bv[x >> 1] + bv[(x >> 1) + 1]);
    x++;
  }
  {
    const int a0 = x >> 1, pairs = (x1 - x) / 2;
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
  if (x < x1) {
    dg[x - x0] = bu[x >> 1];
    db[x - x0] = bv[x >> 1];
  }
  const uint8_t *restrict yrow = s->planes[0] + (size_t) y * s->strides[0] + x0;
  const gpunet_yuv_coeffs c = s->yuv;
  for (int i = 0; i < n; i++) {
    float r, g, b;
    gpunet_yuv_to_rgb (&c, yrow[i], dg[i], db[i], &r, &g, &b);
    dr[i] = r;
    dg[i] = g;
    db[i] = b;
  }
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

/* normalise(clamp255(quantize8(v))) of channel c through the plan's table (round8 only):
 * quantize8 leaves an integer 0..255 (and clamp255 nothing to do); a NaN, which 8-bit
 * pixels cannot produce, would map to entry 0. */
static inline float
norm8 (const gpunet_preprocess_plan *p, float v, int c)
{
  const float q = gpunet_quantize8 (v);
  return p->norm[c][q >= 0.0f && q <= 255.0f ? (int) q : 0];
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define GPUNET_PRE_AVX512 1
#include <immintrin.h>

/* The AVX-512 path of the horizontal pass, bit for bit the scalar one: per output and
 * channel, 16 taps at a time: the 16 products, then the pairs (w0 a0 + w1 a1) and
 * (w2 a2 + w3 a3) and their sum g_j for each group j of 4 taps, exactly as the scalar
 * loop forms them (IEEE addition is commutative), and the groups added to the running
 * sum in order.  Groups past an output's taps have zero weights and add +-0, which
 * changes nothing after the clamp.  Needs the CPU's AVX-512F. */

/* The vector horizontal pass this CPU runs (checked once): 2 AVX-512F, 1 AVX2, 0 none. */
static int
horizontal_simd_level (const gpunet_preprocess_plan *p)
{
  static int level = -1;
  if (level < 0) {
    __builtin_cpu_init ();
    level = __builtin_cpu_supports ("avx512f") ? 2 : __builtin_cpu_supports ("avx2") ? 1 : 0;
  }
  return p->round8 && p->x.ksize % 16 == 0 ? level : 0;
}

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
    outr[ox] = norm8 (p, sr, 0);
    outg[ox] = norm8 (p, sg, 1);
    outb[ox] = norm8 (p, sb, 2);
  }
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

__attribute__ ((target ("avx2"))) static void
horizontal_avx2 (const gpunet_preprocess_plan *p, const float *vs, int ncols, float *outr,
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
    __m128 sum = _mm_setzero_ps ();   /* r, g, b, (b) */
    for (int k = 0; k < cx; k += 16) {
      const __m256 hr = pairs16 (wx + k, vr + f + k), hg = pairs16 (wx + k, vg + f + k);
      const __m256 hb = pairs16 (wx + k, vb + f + k);
      const __m256 rg = _mm256_hadd_ps (hr, hg), bb = _mm256_hadd_ps (hb, hb);
      const __m128 lo = _mm256_castps256_ps128 (rg), hi = _mm256_extractf128_ps (rg, 1);
      const __m128 blo = _mm256_castps256_ps128 (bb), bhi = _mm256_extractf128_ps (bb, 1);
      sum = _mm_add_ps (sum, _mm_shuffle_ps (lo, blo, _MM_SHUFFLE (0, 0, 2, 0)));   /* g0 */
      sum = _mm_add_ps (sum, _mm_shuffle_ps (hi, bhi, _MM_SHUFFLE (0, 0, 2, 0)));   /* g1 */
      sum = _mm_add_ps (sum, _mm_shuffle_ps (lo, blo, _MM_SHUFFLE (1, 1, 3, 1)));   /* g2 */
      sum = _mm_add_ps (sum, _mm_shuffle_ps (hi, bhi, _MM_SHUFFLE (1, 1, 3, 1)));   /* g3 */
    }
    /* norm8 of the three lanes without branches: the clamp as max/min (a NaN, which 8-bit
     * pixels cannot produce, also maps to entry 0), then floor (v + 0.5) */
    const __m128 q = _mm_floor_ps (_mm_add_ps (_mm_min_ps (_mm_max_ps (sum, _mm_setzero_ps ()),
                _mm_set1_ps (255.0f)), _mm_set1_ps (0.5f)));
    const __m128i qi = _mm_cvttps_epi32 (q);
    outr[ox] = p->norm[0][_mm_extract_epi32 (qi, 0)];
    outg[ox] = p->norm[1][_mm_extract_epi32 (qi, 1)];
    outb[ox] = p->norm[2][_mm_extract_epi32 (qi, 2)];
  }
}
#endif

/* The AVX2 clone is chosen at load time where the CPU has it; it does not use FMA, so
 * both clones round identically. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
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
          convert_row (p, &src, row, x0, x1, data);
          p->ring_tag[r] = row;
        }
        p->rows[k] = data;
      }
      vertical_sum (vs, (const float *const *) p->rows, wy, cy, 3 * ncols, 0);
    } else {
      /* a huge downscale whose ring would not fit: one row at a time (rows shared with
       * the next output row are converted again) */
      for (int k = 0; k < cy; k++) {
        convert_row (p, &src, fy + k, x0, x1, p->ring);
        const float *data = p->ring;
        vertical_sum (vs, &data, wy + k, 1, 3 * ncols, k > 0);
      }
    }
    /* horizontal pass in groups of 4 taps (zero weights pad each output's taps; vsum has
     * ksize zeroed floats after the last plane), clamp (and round), normalise */
    const float *vr = vs, *vg = vs + ncols, *vb = vs + 2 * ncols;
#ifdef GPUNET_PRE_AVX512
    const int simd = horizontal_simd_level (p);
    if (simd == 2) {
      horizontal_avx512 (p, vs, ncols, outr, outg, outb);
      continue;
    }
    if (simd == 1) {
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
