/* bf16_dwconv.c: our depthwise convolution (dwconv.h) with bf16 activations, for bf16
 * sessions on nChw16c: the input and/or the output stored as bf16, the arithmetic f32.
 * The same schedule as dwconv.c (per channel block and strip of rows, input rows widened,
 * activated and zero-bordered into a per-thread f32 buffer, eight outputs of a row at a
 * time); bf16 inputs are widened exactly (a 16-bit shift), outputs rounded to nearest even
 * once by vcvtneps2bf16 (AVX-512 BF16).  Halves the bytes a depthwise layer moves, which
 * is what it costs (GPUNet-D1 and -D2 are dominated by large depthwise planes).
 * Also the depthwise op with the 1x1 expansion before it fused in (gpunet_dw_set_expansion),
 * bf16 or f32: the f32 form uses no BF16 instruction and runs on any CPU with AVX-512 F,
 * BW and VL (xdw_plan.c checks them). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "activation.h"
#include "blocked_ops.h"
#include "dwconv.h"
#include "dwconv_state.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

#define SIMD_WIDTH 16
#include "simd_begin.h"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")

/* vector i (in elements) of p: 16 bf16 widened to f32, or 16 f32 */
static inline __attribute__((always_inline)) __m512
bf_load (const void *p, size_t i, int bf)
{
  if (bf)
    return _mm512_castsi512_ps (_mm512_slli_epi32 (_mm512_cvtepu16_epi32 (
                _mm256_load_si256 ((const __m256i *) ((const uint16_t *) p + i))), 16));
  return _mm512_load_ps ((const float *) p + i);
}

static inline __attribute__((always_inline)) void
bf_store (void *p, size_t i, __m512 v, int bf)
{
  if (bf)
    _mm256_store_si256 ((__m256i *) ((uint16_t *) p + i), (__m256i) _mm512_cvtneps_pbh (v));
  else
    _mm512_store_ps ((float *) p + i, v);
}

/* v rounded to bf16 and widened back: the value a bf16 tensor would hold */
static inline __attribute__((always_inline)) __m512
bf_round (__m512 v)
{
  return _mm512_castsi512_ps (_mm512_slli_epi32 (_mm512_cvtepu16_epi32 (
              (__m256i) _mm512_cvtneps_pbh (v)), 16));
}

/* Where a task reads and writes: blocked planes (the default), or for int8 sessions an
 * nhwc f32 input (pixels `pix` floats apart, the channel block's lanes under `in_mask`)
 * and an nhwc u8/s8 output (pixels `ostride` bytes apart, lanes under `out_mask`). */
typedef struct {
  int obf, q8, ostride;
  __mmask16 in_mask, out_mask;
  __m512 inv, lo, hi;
} bdw_io;

/* rows y0 .. y0 + rows - 1 of the zero-padded, activated input plane (src: ih x iw
 * vectors, bf16 or f32; or nhwc f32, d->in_nhwc) into buf as f32, rows of cw vectors */
static void
bdw_fill (const gpunet_dw *d, const void *src, int y0, int rows, float *buf,
    __mmask16 in_mask)
{
  const int cw = d->cw, pad = d->pad, iw = d->iw, act = d->in_act;
  const int nh = d->in_nhwc, ibf = d->in_bf16 && !nh, rnd = d->in_bf16 && nh;
  const size_t pix = nh ? (size_t) d->c : VW;
  const int x1 = pad + iw < cw ? pad + iw : cw;
  for (int r = 0; r < rows; r++) {
    float *row = buf + (size_t) r * cw * VW;
    const int sy = y0 + r - pad;
    if (sy < 0 || sy >= d->ih || x1 <= pad) {
      memset (row, 0, sizeof (float) * (size_t) cw * VW);
      continue;
    }
    for (int x = 0; x < pad; x++)
      V_STORE (row + (size_t) x * VW, V_ZERO ());
    const size_t s0 = (size_t) sy * iw * pix;
#define BDW_IN(x) (nh ? (rnd ? bf_round (_mm512_maskz_loadu_ps (in_mask, (const float *) src \
        + s0 + (size_t) ((x) - pad) * pix)) : _mm512_maskz_loadu_ps (in_mask, \
        (const float *) src + s0 + (size_t) ((x) - pad) * pix)) \
    : bf_load (src, s0 + (size_t) ((x) - pad) * VW, ibf))
    if (act == GPUNET_EPI_SWISH)
      for (int x = pad; x < x1; x++)
        V_STORE (row + (size_t) x * VW, simd_act_avx512 (BDW_IN (x), GPUNET_EPI_SWISH));
    else if (act == GPUNET_EPI_RELU)
      for (int x = pad; x < x1; x++)
        V_STORE (row + (size_t) x * VW, V_MAX (BDW_IN (x), V_ZERO ()));
    else
      for (int x = pad; x < x1; x++)
        V_STORE (row + (size_t) x * VW, BDW_IN (x));
#undef BDW_IN
    for (int x = x1; x < cw; x++)
      V_STORE (row + (size_t) x * VW, V_ZERO ());
  }
}

/* outputs ox .. ox + G - 1 of one output row into dst (vector index o0 of the row), from
 * the K buffer rows rows[0 .. K - 1] (zero-bordered, f32) */
static inline __attribute__((always_inline)) void
bdw_group (const float *const *rows, int ox, const float *w, VEC bias, void *dst, size_t o0,
    int act, const bdw_io *io, const int K, const int S, const int G)
{
  VEC acc[8];
#pragma GCC unroll 8
  for (int j = 0; j < G; j++)
    acc[j] = bias;
  for (int ky = 0; ky < K; ky++) {
    const float *r = rows[ky] + (size_t) ox * S * VW;
    for (int kx = 0; kx < K; kx++) {
      const VEC wv = V_LOAD (w + (size_t) (ky * K + kx) * VW);
#pragma GCC unroll 8
      for (int j = 0; j < G; j++)
        acc[j] = V_FMA (wv, V_LOAD (r + (size_t) (j * S + kx) * VW), acc[j]);
    }
  }
  if (io->q8) {   /* int8: quantised into the next convolution's nhwc input */
#pragma GCC unroll 8
    for (int j = 0; j < G; j++) {
      __m512 v = simd_act_avx512 (acc[j], act);
      if (io->obf)
        v = bf_round (v);
      v = _mm512_min_ps (_mm512_max_ps (_mm512_mul_ps (v, io->inv), io->lo), io->hi);
      _mm_mask_storeu_epi8 ((char *) dst + o0 + (size_t) (ox + j) * (size_t) io->ostride,
          io->out_mask, _mm512_cvtepi32_epi8 (_mm512_cvtps_epi32 (v)));
    }
    return;
  }
#pragma GCC unroll 8
  for (int j = 0; j < G; j++)
    bf_store (dst, o0 + (size_t) (ox + j) * VW, simd_act_avx512 (acc[j], act), io->obf);
}

/* one output row from the K buffer rows it reads */
static inline __attribute__((always_inline)) void
bdw_row_t (const gpunet_dw *d, const float *const *rows, const float *w, VEC bias, void *dst,
    size_t o0, const bdw_io *io, const int K, const int S)
{
  const int ow = d->ow, act = d->act;
  int ox = 0;
  for (; ox + 8 <= ow; ox += 8)
    bdw_group (rows, ox, w, bias, dst, o0, act, io, K, S, 8);
  if (ox + 4 <= ow) {
    bdw_group (rows, ox, w, bias, dst, o0, act, io, K, S, 4);
    ox += 4;
  }
  if (ox + 2 <= ow) {
    bdw_group (rows, ox, w, bias, dst, o0, act, io, K, S, 2);
    ox += 2;
  }
  if (ox < ow)
    bdw_group (rows, ox, w, bias, dst, o0, act, io, K, S, 1);
}

/* output rows oy0 .. oy1 - 1 from a buffer of consecutive rows, the first input row y0 */
static inline __attribute__((always_inline)) void
bdw_rows_t (const gpunet_dw *d, const float *buf, int y0, int oy0, int oy1, const float *w,
    VEC bias, void *dst, const bdw_io *io, const int K, const int S)
{
  const int cw = d->cw;
  for (int oy = oy0; oy < oy1; oy++) {
    const float *rows[K];
    for (int ky = 0; ky < K; ky++)
      rows[ky] = buf + (size_t) (oy * S - y0 + ky) * cw * VW;
    bdw_row_t (d, rows, w, bias, dst, (size_t) oy * d->ow * (size_t) io->ostride, io, K, S);
  }
}

typedef void (*bdw_rows_fn) (const gpunet_dw *, const float *, int, int, int, const float *,
    VEC, void *, const bdw_io *);
typedef void (*bdw_row_fn) (const gpunet_dw *, const float *const *, const float *, VEC,
    void *, size_t, const bdw_io *);
#define BDW_ROWS_KS(K, S) \
  static void \
  bdw_rows_##K##_##S (const gpunet_dw *d, const float *buf, int y0, int oy0, int oy1, \
      const float *w, VEC bias, void *dst, const bdw_io *io) \
  { \
    bdw_rows_t (d, buf, y0, oy0, oy1, w, bias, dst, io, K, S); \
  } \
  static void \
  bdw_row_##K##_##S (const gpunet_dw *d, const float *const *rows, const float *w, \
      VEC bias, void *dst, size_t o0, const bdw_io *io) \
  { \
    bdw_row_t (d, rows, w, bias, dst, o0, io, K, S); \
  }
BDW_ROWS_KS (3, 1)
BDW_ROWS_KS (3, 2)
BDW_ROWS_KS (5, 1)
BDW_ROWS_KS (5, 2)
#undef BDW_ROWS_KS

static void
bdw_rows_any (const gpunet_dw *d, const float *buf, int y0, int oy0, int oy1, const float *w,
    VEC bias, void *dst, const bdw_io *io)
{
  bdw_rows_t (d, buf, y0, oy0, oy1, w, bias, dst, io, d->k, d->stride);
}

static void
bdw_row_any (const gpunet_dw *d, const float *const *rows, const float *w, VEC bias,
    void *dst, size_t o0, const bdw_io *io)
{
  bdw_row_t (d, rows, w, bias, dst, o0, io, d->k, d->stride);
}

/* ---- the expansion fused in (gpunet_dw_set_expansion) ---- */

/* M pixels (from src, pixel 0 of them in channel block 0) x NJ channel blocks of the
 * expansion over cin_p input channels (channel blocks `plane` elements apart; the weights
 * of block j at w + j wstride elements), the bias, the producer's activation, into dst[j]
 * (f32 vectors).  BF: bf16 input and weights, vdpbf16ps over the channel pairs, the sum
 * rounded to bf16 as the stored tensor would have been; else f32, one FMA a channel. */
static inline __attribute__((always_inline)) void
xdw_tile (const void *src, size_t plane, int cin_p, const void *w, size_t wstride,
    const float *bias, float *const *dst, int act, const int M, const int NJ, const int BF)
{
  __m512 acc[6][4];
#pragma GCC unroll 6
  for (int p = 0; p < M; p++)
#pragma GCC unroll 4
    for (int j = 0; j < NJ; j++)
      acc[p][j] = _mm512_setzero_ps ();
  for (int ib = 0; ib < cin_p / VW; ib++) {
    if (BF) {
      /* pair q: channels 16 ib + 2 q and the next, lanes 2 q and 2 q + 1 of each pixel */
      const uint16_t *sb = (const uint16_t *) src + (size_t) ib * plane;
      const uint16_t *wb = (const uint16_t *) w + (size_t) ib * 256;
#pragma GCC unroll 2
      for (int q = 0; q < 8; q++) {
        __m512bh wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < NJ; j++)
          wv[j] = (__m512bh) _mm512_load_si512 ((const void *) (wb + j * wstride + q * 32));
#pragma GCC unroll 6
        for (int p = 0; p < M; p++) {
          int32_t pair;
          memcpy (&pair, sb + p * VW + q * 2, sizeof pair);
          const __m512bh a = (__m512bh) _mm512_set1_epi32 (pair);
#pragma GCC unroll 4
          for (int j = 0; j < NJ; j++)
            acc[p][j] = _mm512_dpbf16_ps (acc[p][j], a, wv[j]);
        }
      }
    } else {
      const float *sb = (const float *) src + (size_t) ib * plane;
      const float *wb = (const float *) w + (size_t) ib * 256;
#pragma GCC unroll 2
      for (int q = 0; q < VW; q++) {
        __m512 wv[4];
#pragma GCC unroll 4
        for (int j = 0; j < NJ; j++)
          wv[j] = _mm512_load_ps (wb + j * wstride + q * VW);
#pragma GCC unroll 6
        for (int p = 0; p < M; p++) {
          const __m512 a = _mm512_set1_ps (sb[p * VW + q]);
#pragma GCC unroll 4
          for (int j = 0; j < NJ; j++)
            acc[p][j] = _mm512_fmadd_ps (a, wv[j], acc[p][j]);
        }
      }
    }
  }
  float *out[4];
#pragma GCC unroll 4
  for (int j = 0; j < NJ; j++)
    out[j] = dst[j];
#pragma GCC unroll 4
  for (int j = 0; j < NJ; j++) {
    const __m512 b = _mm512_load_ps (bias + (size_t) j * VW);
#pragma GCC unroll 6
    for (int p = 0; p < M; p++) {
      __m512 v = _mm512_add_ps (acc[p][j], b);
      if (BF)
        v = bf_round (v);
      _mm512_store_ps (out[j] + (size_t) p * VW, simd_act_avx512 (v, act));
    }
  }
}

#define XDW_TILE_NJ(M, BF) \
  switch (nj) { \
    case 4: xdw_tile (src, plane, cin_p, w, wstride, bias, dst, act, M, 4, BF); break; \
    case 3: xdw_tile (src, plane, cin_p, w, wstride, bias, dst, act, M, 3, BF); break; \
    case 2: xdw_tile (src, plane, cin_p, w, wstride, bias, dst, act, M, 2, BF); break; \
    default: xdw_tile (src, plane, cin_p, w, wstride, bias, dst, act, M, 1, BF); break; \
  }
#define XDW_TILE_M(BF) \
  switch (m) { \
    case 6: XDW_TILE_NJ (6, BF) break; \
    case 5: XDW_TILE_NJ (5, BF) break; \
    case 4: XDW_TILE_NJ (4, BF) break; \
    case 3: XDW_TILE_NJ (3, BF) break; \
    case 2: XDW_TILE_NJ (2, BF) break; \
    default: XDW_TILE_NJ (1, BF) break; \
  }

static void
xdw_tile_any (const void *src, size_t plane, int cin_p, const void *w, size_t wstride,
    const float *bias, float *const *dst, int act, int m, int nj, int bf)
{
  if (bf)
    XDW_TILE_M (1)
  else
    XDW_TILE_M (0)
}
#undef XDW_TILE_M
#undef XDW_TILE_NJ

/* Input row `src` (its pixel 0, channel block 0; bf16 or f32 as the op's input is) expanded
 * for the gn channel blocks from cb0 into `ring` (gn rows of cw vectors, gstride floats
 * apart), columns pad on; the columns no output reads are left alone. */
static void
xdw_row (const gpunet_dw *d, const char *src, float *ring, size_t gstride, int cb0, int gn)
{
  const int cin_p = d->x.cin_p, pad = d->pad, bf = d->in_bf16;
  const size_t esz = bf ? 2 : 4;
  const int x1 = d->iw < d->cw - pad ? d->iw : d->cw - pad;
  const size_t plane = (size_t) d->ih * d->iw * VW, wstride = (size_t) cin_p * VW;
  const char *w0 = (const char *) d->x.w + (size_t) cb0 * wstride * esz;
  for (int j = 0; j < gn; j += 4) {   /* a chunk's weights stay in L1 along the row */
    const int nj = gn - j < 4 ? gn - j : 4;
    for (int x = 0; x < x1; x += 6) {
      const int m = x1 - x < 6 ? x1 - x : 6;
      float *dst[4];
      for (int q = 0; q < nj; q++)
        dst[q] = ring + (size_t) (j + q) * gstride + (size_t) (pad + x) * VW;
      xdw_tile_any (src + (size_t) x * VW * esz, plane, cin_p,
          w0 + (size_t) j * wstride * esz, wstride, d->x.bias + (size_t) (cb0 + j) * VW, dst,
          d->in_act, m, nj, bf);
    }
  }
}

static int
gcd_int (int a, int b)
{
  while (b) {
    const int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The fused run: per task (image, group of gblk channel blocks, range of output rows), the
 * input rows each output row reads are expanded into a ring of k rows (slot = row mod k)
 * once, just before the first output row that reads them; rows outside the plane read a
 * zero row.  The ranges of rows split a plane only as far as the threads need tasks: each
 * range expands the k - stride rows before it again. */
static void
bdw_run_x (const gpunet_dw *d, const void *in, void *out, int n, float *scratch, int nt)
{
  const int K = d->k, S = d->stride, pad = d->pad, cw = d->cw, ih = d->ih, oh = d->oh;
  const int nblk = d->cp / VW, G = d->x.gblk, ng = (nblk + G - 1) / G;
  const int x1 = d->iw < cw - pad ? d->iw : cw - pad;
  const size_t row = (size_t) cw * VW, slot = (size_t) G * row;
  const size_t in_img = (size_t) d->x.cin_p * ih * d->iw, esz = d->in_bf16 ? 2 : 4;
  const size_t out_plane = (size_t) oh * d->ow * VW, osz = d->out_bf16 ? 2 : 4;
  const bdw_row_fn row_fn = K == 3 && S == 1 ? bdw_row_3_1 : K == 3 && S == 2 ? bdw_row_3_2
      : K == 5 && S == 1 ? bdw_row_5_1 : K == 5 && S == 2 ? bdw_row_5_2 : bdw_row_any;
  if (nt < 1)
    nt = 1;
  int nch = d->x.nt == nt ? d->x.nch : nt / gcd_int (n * ng, nt);
  if (nch > oh)
    nch = oh;
  const long tasks = (long) n * ng * nch;
  /* the expansion's work counts: its output plane, not the depthwise one's */
#pragma omp parallel num_threads(nt) if ((long) n * d->cp * d->ih * d->iw >= GPUNET_BLK_PARALLEL_MIN)
  {
    float *ring = scratch + d->thread_stride * (size_t) omp_get_thread_num ();
    float *zrow = ring + (size_t) K * slot;
    memset (zrow, 0, sizeof (float) * row);
    const bdw_io io = { d->out_bf16, 0, VW, 0xffff, 0xffff, _mm512_setzero_ps (),
      _mm512_setzero_ps (), _mm512_setzero_ps () };
#pragma omp for schedule(static)
    for (long t = 0; t < tasks; t++) {
      const int b = (int) (t / ((long) ng * nch)), g = (int) (t / nch % ng);
      const int ch = (int) (t % nch);
      const int cb0 = g * G, gn = nblk - cb0 < G ? nblk - cb0 : G;
      const int oy0 = (int) ((long) ch * oh / nch), oy1 = (int) ((long) (ch + 1) * oh / nch);
      /* the zero border columns of the ring's rows */
      for (int r = 0; r < K; r++)
        for (int j = 0; j < gn; j++) {
          float *rr = ring + (size_t) r * slot + (size_t) j * row;
          memset (rr, 0, sizeof (float) * (size_t) pad * VW);
          if (pad + x1 < cw)
            memset (rr + (size_t) (pad + x1) * VW, 0, sizeof (float) * (size_t) (cw - pad - x1)
                * VW);
        }
      const char *src = (const char *) in + (size_t) b * in_img * esz;
      int next = oy0 * S - pad;   /* the first input row not yet expanded */
      for (int oy = oy0; oy < oy1; oy++) {
        const int top = oy * S - pad;
        for (int iy = next > top ? next : top; iy < top + K; iy++)
          if (iy >= 0 && iy < ih)
            xdw_row (d, src + (size_t) iy * d->iw * VW * esz, ring + (size_t) (iy % K) * slot,
                row, cb0, gn);
        next = top + K;
        for (int j = 0; j < gn; j++) {
          const float *rows[K];
          for (int ky = 0; ky < K; ky++) {
            const int iy = top + ky;
            rows[ky] = iy < 0 || iy >= ih ? zrow
                : ring + (size_t) (iy % K) * slot + (size_t) j * row;
          }
          const size_t plane_index = (size_t) b * nblk + (size_t) (cb0 + j);
          row_fn (d, rows, d->w + (size_t) (cb0 + j) * K * K * VW,
              V_LOAD (d->bias + (size_t) (cb0 + j) * VW),
              (char *) out + plane_index * out_plane * osz, (size_t) oy * d->ow * VW, &io);
        }
      }
    }
  }
}

void
gpunet_dw_run_bf16 (const gpunet_dw *d, const float *in, float *out, int n, float *scratch,
    int nt)
{
  if (d->x.w) {
    bdw_run_x (d, in, out, n, scratch, nt);
    return;
  }
  const int k = d->k, s = d->stride, nblk = d->cp / VW, strips = d->strips;
  const size_t in_plane = (size_t) d->ih * d->iw * VW, out_plane = (size_t) d->oh * d->ow * VW;
  const size_t isz = d->in_bf16 ? 2 : 4, osz = d->out_bf16 ? 2 : 4;
  const bdw_rows_fn rows_fn = k == 3 && s == 1 ? bdw_rows_3_1 : k == 3 && s == 2
      ? bdw_rows_3_2 : k == 5 && s == 1 ? bdw_rows_5_1 : k == 5 && s == 2 ? bdw_rows_5_2
      : bdw_rows_any;
  const long tasks = (long) n * nblk * strips;
  if (nt < 1)
    nt = 1;
#pragma omp parallel num_threads(nt) if ((long) n * d->cp * d->oh * d->ow >= GPUNET_BLK_PARALLEL_MIN)
  {
    float *buf = scratch + d->thread_stride * (size_t) omp_get_thread_num ();
    bdw_io io = { d->out_bf16, d->out_q8, d->out_q8 ? d->c : VW, 0xffff, 0xffff,
      _mm512_set1_ps (d->out_inv), _mm512_set1_ps (d->out_uns ? 0.0f : -128.0f),
      _mm512_set1_ps (d->out_uns ? 255.0f : 127.0f) };
#pragma omp for schedule(static)
    for (long t = 0; t < tasks; t++) {
      const long u = t / strips;
      const int b = (int) (u / nblk);
      const int cb = (int) (u % nblk);
      const int oy0 = (int) (t % strips) * d->strip_rows;
      const int oy1 = oy0 + d->strip_rows < d->oh ? oy0 + d->strip_rows : d->oh;
      const int y0 = oy0 * s, rows = (oy1 - 1 - oy0) * s + k;
      const size_t plane_index = (size_t) b * nblk + (size_t) cb;
      /* the lanes of this channel block that hold channels (nhwc sides) */
      const int rem = d->c - cb * VW;
      const __mmask16 lanes = rem >= VW ? (__mmask16) 0xffff : (__mmask16) ((1u << rem) - 1u);
      const void *src = d->in_nhwc
          ? (const void *) (in + ((size_t) b * d->ih * d->iw * d->c + (size_t) cb * VW))
          : (const void *) ((const char *) in + plane_index * in_plane * isz);
      void *dst = d->out_q8
          ? (void *) ((char *) out + (size_t) b * d->oh * d->ow * d->c + (size_t) cb * VW)
          : (void *) ((char *) out + plane_index * out_plane * osz);
      io.in_mask = io.out_mask = lanes;
      bdw_fill (d, src, y0, rows, buf, lanes);
      rows_fn (d, buf, y0, oy0, oy1, d->w + (size_t) cb * k * k * VW,
          V_LOAD (d->bias + (size_t) cb * VW), dst, &io);
    }
  }
}

#include "simd_end.h"

#else /* never planned: bf16 sessions need x86 with AVX-512 BF16 */

void
gpunet_dw_run_bf16 (const gpunet_dw *d, const float *in, float *out, int n, float *scratch,
    int nt)
{
  (void) d, (void) in, (void) out, (void) n, (void) scratch, (void) nt;
}

#endif
