/* pwconv.c: our 1x1 convolution on nChw16c activations (see pwconv.h).
 *
 * Weights at plan time: per chunk of (at most) 64 output channels, [cp][nj * 16] with nj
 * vectors of 16 output channels (nj = 4 but in a last, narrower chunk), zero in padded
 * input and output channels.  The micro-kernel keeps 6 pixels x nj vectors of
 * accumulators in registers and goes over all input channels: per input channel nj weight
 * vector loads, 6 broadcasts and 6 nj FMAs.  The input of 6 pixels (24 floats per input
 * channel block) stays in L1 across its chunks; a chunk's weights (cp x 256 bytes) come
 * from L2.
 *
 * Order of work, a unit being (image, chunk, block of 6 pixels) and each thread taking one
 * contiguous range of units:
 *   - weights of at most PW_SMALL_W bytes and more than 64 input channels: pixel-major
 *     (each thread reads the whole weight matrix into its L2 once and half the pixels once);
 *   - larger weights, an input of at most PW_ONE_GROUP bytes: chunk-major (the threads
 *     split the weights, both read the whole input, which stays in L2);
 *   - both large: pixel groups of PW_GROUP bytes of input, chunk-major within a group,
 *     where the groups' weight re-reads stream fewer bytes than the chunks' input re-reads.
 * Measured on GPUNet's shapes (AVX-512, 2 threads, medians of 50, docs/performance.md):
 * the orders each lose 10-45% on the shapes the rule gives to another.
 *
 * Where the channel counts are large, one level of Strassen's algorithm instead (its own
 * weight packing, unit order and thread split: see the comment above gpunet_pw_new and
 * pw_run_strassen). */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "activation.h"
#include "blocked_ops.h"
#include "pwconv.h"
#include "winograd.h"

#define PW_MR 6                        /* pixels per micro-kernel call */
#define PW_NR 64                       /* output channels per chunk */
#define PW_SMALL_W ((size_t) 1 << 20)  /* bytes of weights read whole by each thread */
#define PW_ONE_GROUP ((size_t) 640 << 10)
/* 384 KB rather than 256: the projections to 268-288 channels (GPUNet-1's 1440 -> 288,
 * GPUNet-D1's 1140/1608 -> 268, GPUNet-D2's 1152/1632 -> 272) ran 8-16% faster in
 * isolated calls (3 rounds, medians of 32), the other grouped shapes within 1-2%; in the
 * networks (alternating passes) GPUNet-1 2.8%, D2 2.0%, D1 1.6%, GPUNet-0 0.6% faster. */
#define PW_GROUP ((size_t) 384 << 10)
#define PW_NS 5                        /* Strassen: combinations of input quadrants */
/* Strassen's AUTO rule (pw_strassen_fits): a product's left operand (h1 x k2 floats) of at
 * most this many bytes, read from L2 for every chunk of output channels */
#define PW_STRASSEN_MAX_OPERAND ((size_t) 512 << 10)
#define PW_STRASSEN_MIN_H1 36      /* and at least this many pixels per half */
/* Software prefetch of the next chunk (pw_prefetch_lines) where a chunk's weights are at
 * most pw_prefetch_max_chunk () bytes and at least this many blocks of pixels use each in
 * turn */
#define PW_PREFETCH_MIN_BLOCKS 6

struct gpunet_pw {
  int cin, cout, cp, ocp, act;
  long hw;
  int nch;        /* chunks of output channels: ceil(ocp / 64) */
  long npb;       /* blocks of pixels: ceil(hw / 6) */
  long pg;        /* pixel blocks per group (npb: one group) */
  int pixel_major;
  float *w;       /* chunk c at w + c * cp * 64: [cp][nj * 16]; NULL with Strassen */
  float *bias;    /* [ocp], zero padded */
  /* One level of Strassen (see the comment above gpunet_pw_new), else strassen 0 */
  int strassen;
  int k2;         /* input channels per half: cp / 2 */
  int n2;         /* output channels per half: ocp / 2 */
  int nch2;       /* chunks of 64 per output half */
  long h1, h2;    /* pixels of the top and bottom halves: h1 = ceil(hw / 2) */
  long npb1;      /* blocks of 6 pixels per half: ceil(h1 / 6) */
  float *t;       /* the 7 weight combinations T1..T7, each nch2 chunks of [k2][nj * 16] */
};


/* Pixels px .. px + rows - 1 of block pb: blocks of 6, a shorter one last (blocks of 6
 * and 5 where that leaves a block of 1 or 2 measured 0.991 of the pass on GPUNet-P1:
 * dropped, docs/performance.md).  The same arithmetic for every output whatever the blocks. */
static inline void
pw_block (const gpunet_pw *p, long pb, long *px, int *rows)
{
  *px = pb * PW_MR;
  *rows = p->hw - *px < PW_MR ? (int) (p->hw - *px) : PW_MR;
}

/* The largest chunk of weights whose next one is prefetched (pw_prefetch_lines): 3/8 of
 * the L2, so that this chunk and the next share it with room for the input.  On Zen 4
 * (1 MB L2) 384 KB: larger chunks there were measured only beyond the L2 (P1's 5632 -> 704,
 * 1.4 MB: no gain).  On a 2-vCPU Intel Xeon (2 MB L2; its L3 gives a core only about 30
 * GB/s) 768 KB: GPUNet-2's plain 1664 -> 832 at 12x12 (426 KB chunks; weights from the
 * L3, medians of 300 calls) 1.10 -> 0.97 ms, whole passes P0 0.958, D1 0.984, P1 and D2
 * 0.99 (30 alternating turns, docs/performance.md).  384 KB where the C library does not
 * know the L2's size. */
static size_t
pw_prefetch_max_chunk (void)
{
  const size_t l2 = gpunet_blk_l2_bytes ();
  return l2 ? l2 / 8 * 3 : (size_t) 384 << 10;
}

/* Vectors of 16 output channels in chunk ch: 4, or fewer in a last, narrower chunk. */
static inline int
pw_chunk_vectors (int ocp, int ch)
{
  const int v = (ocp - ch * PW_NR) / 16;
  return v < 4 ? v : 4;
}

int
gpunet_pw_available (int blk)
{
  return blk == 16 && gpunet_wino_available (16);
}

void
gpunet_pw_free (gpunet_pw *p)
{
  if (!p)
    return;
  free (p->w);
  free (p->t);
  free (p->bias);
  free (p);
}

int
gpunet_pw_is_strassen (const gpunet_pw *p)
{
  return p->strassen;
}

size_t
gpunet_pw_scratch_floats (const gpunet_pw *p)
{
  return p->strassen ? (size_t) PW_NS * p->h1 * p->k2 : 0;
}

/* Weight y[o][i] of half (kh, nh) of the padded cp x ocp matrix: zero in padding. */
static inline double
pw_y (const gpunet_pw *p, const float *weight, int kh, int nh, int i, int o)
{
  const int ii = kh * p->k2 + i, oo = nh * p->n2 + o;
  return ii < p->cin && oo < p->cout ? weight[(size_t) oo * p->cin + ii] : 0.0;
}

/* Packs T1..T7 (the products' right-hand sides, pw_products) into p->t. */
static void
pw_pack_strassen (gpunet_pw *p, const float *weight)
{
  const size_t tsize = (size_t) p->nch2 * p->k2 * PW_NR;
  for (int o = 0; o < p->n2; o++) {
    const int ch = o / PW_NR, nj = pw_chunk_vectors (p->n2, ch);
    for (int i = 0; i < p->k2; i++) {
      const double y11 = pw_y (p, weight, 0, 0, i, o), y12 = pw_y (p, weight, 0, 1, i, o);
      const double y21 = pw_y (p, weight, 1, 0, i, o), y22 = pw_y (p, weight, 1, 1, i, o);
      const double tv[7] = { y11 + y22, y11, y12 - y22, y21 - y11, y22, y11 + y12, y21 + y22 };
      for (int k = 0; k < 7; k++)
        p->t[k * tsize + (size_t) ch * p->k2 * PW_NR + (size_t) i * nj * 16 + o % PW_NR] =
            (float) tv[k];
    }
  }
}

/* One level of Strassen's algorithm.  As a GEMM, Z (pixels x output channels) = X (pixels
 * x input channels) Y (input x output channels), each split in 2 x 2 quadrants (X_pk: pixel
 * half p, input-channel half k; Y_kn; Z_pn), the top pixel half taking the odd pixel:
 *   M1 = (X11 + X22)(Y11 + Y22)   M2 = (X21 + X22) Y11   M3 = X11 (Y12 - Y22)
 *   M4 = X22 (Y21 - Y11)   M5 = (X11 + X12) Y22   M6 = (X21 - X11)(Y11 + Y12)
 *   M7 = (X12 - X22)(Y21 + Y22)
 *   Z11 = M1 + M4 - M5 + M7   Z12 = M3 + M5   Z21 = M2 + M4   Z22 = M1 - M2 + M3 + M6
 * 7 half-size products instead of 8: 7/8 of the multiply-adds.  The right-hand sides
 * T1..T7 are packed at plan time (7/4 of the weights' bytes), the five sums of input
 * quadrants S1, S2, S5, S6, S7 computed per image into scratch; X11 and X22 are read
 * where they are.  The products are accumulated straight into the output quadrants, each
 * one's last contribution adding the bias and applying the activation.  With an odd pixel
 * count the bottom half is read as if it had a zero last pixel (exact: that pixel's
 * outputs are not written).  The rounding differs from the plain GEMM by a few units in
 * the last place of the sums' magnitudes (the combinations of weights and inputs are
 * rounded once each). */

/* Whether one level of Strassen is taken: both halves of whole 16-channel blocks, no
 * padded output channel (an output of the second half mixes products of the first half's
 * weights, which would leave rounding residue in its padding lanes), and not an
 * activation before a residual (the residual sits in the output the quadrants accumulate
 * into).  The AUTO rule: the extra passes (the input sums, the output
 * quadrants' updates, shorter reductions per call) measured as a time ratio to the plain
 * GEMM of about 0.875 + 11 / k2 + 11 / n2 (k2, n2: input and output channels per half;
 * per-call minima on Zen 4, 2 threads: 416 x 832 and 832 x 416 0.914, 416 x 640 0.918,
 * 224 x 416 0.954, 112 x 336 1.03, 336 x 112 1.10, 240 x 80 0.99), so it is taken where
 * 1 / k2 + 1 / n2 <= 1 / 128 (a saving of 4% or more), with at least 36 pixels per half
 * (with fewer, the blocks of 6 pixels are too often partial: GPUNet-P0/P1's layers at 4x4
 * lost 26-40%, the reductions to 704 channels at 7x7, 25 + 24 pixels, 3-4%), and while a
 * product's left operand stays in L2. */
static int
pw_strassen_fits (int cp, int ocp, int cout, long hw, int act, int residual, int force)
{
  if (cp % 32 || ocp % 32 || cout != ocp || hw < 2 || (residual && act != GPUNET_EPI_NONE))
    return 0;
  if (force)
    return 1;
  const long k2 = cp / 2, n2 = ocp / 2, h1 = (hw + 1) / 2;
  return 128 * (k2 + n2) <= k2 * n2 && h1 >= PW_STRASSEN_MIN_H1
      && (size_t) h1 * k2 * sizeof (float) <= PW_STRASSEN_MAX_OPERAND;
}

gpunet_pw *
gpunet_pw_new (const float *weight, const float *bias, int cin, int cout, int cp, int ocp,
    long hw, int act, int residual, int strassen)
{
  if (!weight || cin < 1 || cout < 1 || cp < cin || ocp < cout || cp % 16 || ocp % 16
      || hw < 1 || act < GPUNET_EPI_NONE || act > GPUNET_EPI_SWISH
      || strassen < GPUNET_PW_STRASSEN_OFF || strassen > GPUNET_PW_STRASSEN_FORCE)
    return NULL;
  gpunet_pw *p = calloc (1, sizeof *p);
  if (!p)
    return NULL;
  *p = (gpunet_pw) { .cin = cin, .cout = cout, .cp = cp, .ocp = ocp, .act = act, .hw = hw,
    .nch = (ocp + PW_NR - 1) / PW_NR, .npb = (hw + PW_MR - 1) / PW_MR };
  /* blocks of 6 and 5 where every block can have 5 or more (pw_block), else of 6 */
  p->strassen = strassen != GPUNET_PW_STRASSEN_OFF
      && pw_strassen_fits (cp, ocp, cout, hw, act, residual,
          strassen == GPUNET_PW_STRASSEN_FORCE);
  p->bias = gpunet_blk_alloc ((size_t) ocp);
  if (!p->bias) {
    gpunet_pw_free (p);
    return NULL;
  }
  for (int o = 0; o < ocp; o++)
    p->bias[o] = bias && o < cout ? bias[o] : 0.0f;
  if (p->strassen) {
    p->k2 = cp / 2;
    p->n2 = ocp / 2;
    p->nch2 = (p->n2 + PW_NR - 1) / PW_NR;
    p->h1 = (hw + 1) / 2;
    p->h2 = hw / 2;
    p->npb1 = (p->h1 + PW_MR - 1) / PW_MR;
    p->t = gpunet_blk_alloc ((size_t) 7 * p->nch2 * p->k2 * PW_NR);
    if (!p->t) {
      gpunet_pw_free (p);
      return NULL;
    }
    pw_pack_strassen (p, weight);
    return p;
  }
  p->w = gpunet_blk_alloc ((size_t) p->nch * cp * PW_NR);
  if (!p->w) {
    gpunet_pw_free (p);
    return NULL;
  }
  for (int o = 0; o < cout; o++) {
    const int ch = o / PW_NR, nj = pw_chunk_vectors (ocp, ch);
    float *wc = p->w + (size_t) ch * cp * PW_NR;
    for (int i = 0; i < cin; i++)
      wc[(size_t) i * nj * 16 + o % PW_NR] = weight[(size_t) o * cin + i];
  }
  const size_t w_bytes = (size_t) cp * ocp * sizeof (float);
  const size_t in_bytes = (size_t) cp * hw * sizeof (float);
  /* pixel-major for small weights, but not with 64 input channels or fewer: there the
   * 12-25% per-call overhead of short reductions is better spent on whole output planes
   * per thread, which the depthwise op after an expansion then reads from its own core's
   * caches (GPUNet-P1's 64 -> 512 at 56x56: 1.09-1.24 ms chunk-major against 1.20-1.36
   * pixel-major, two alternating rounds) */
  p->pixel_major = w_bytes <= PW_SMALL_W && cp > 64;
  p->pg = p->npb;
  if (!p->pixel_major && in_bytes > PW_ONE_GROUP) {
    /* groups re-read the weights once per group, one group re-reads the input once per
     * chunk: groups only where that streams fewer bytes (GPUNet-P1's 5632 -> 704 at 7x7,
     * 16 MB of weights, took 2.1 ms in groups against 1.85 in one) */
    const long px = (long) (PW_GROUP / ((size_t) cp * sizeof (float)));
    const long pg = px / PW_MR > 0 ? px / PW_MR : 1;
    const long ng = (p->npb + pg - 1) / pg;
    if ((double) ng * (double) w_bytes < (double) p->nch * (double) in_bytes)
      p->pg = pg;
  }
  return p;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

#define SIMD_WIDTH 16
#include "simd_begin.h"

/* acc[r][j] += input channel c of pixel r (at ip + r * 16 + c) x weight vector j of
 * channel c (at wq + c * NJ * 16 + 16 j) */
static inline __attribute__((always_inline)) void
pw_channel (__m512 acc[PW_MR][4], const float *ip, const float *wq, int c, const int R,
    const int NJ)
{
  __m512 wv[4];
#pragma GCC unroll 4
  for (int j = 0; j < NJ; j++)
    wv[j] = _mm512_load_ps (wq + c * NJ * 16 + 16 * j);
#pragma GCC unroll 6
  for (int r = 0; r < R; r++) {
    const __m512 x = _mm512_set1_ps (ip[r * 16 + c]);
#pragma GCC unroll 4
    for (int j = 0; j < NJ; j++)
      acc[r][j] = _mm512_fmadd_ps (x, wv[j], acc[r][j]);
  }
}

/* The reduction of the micro-kernels: ncb whole channel blocks (stride floats apart in
 * the input, 16 x NJ vectors each in the packed weights w), then the rem real channels of
 * a last, partly padded block (zero weights beyond them).  With each whole block, pfn
 * cache lines from pf on are prefetched (pw_prefetch_lines; pfn 0: none). */
static inline __attribute__((always_inline)) void
pw_reduce (__m512 acc[PW_MR][4], const float *in, long stride, const float *w, int ncb,
    int rem, const char *pf, int pfn, const int R, const int NJ)
{
  for (int cb = 0; cb < ncb; cb++) {
    for (int i = 0; i < pfn; i++)
      _mm_prefetch (pf + ((size_t) cb * pfn + i) * 64, _MM_HINT_T0);
    const float *ip = in + (size_t) cb * stride;
    const float *wq = w + (size_t) cb * 16 * NJ * 16;
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++)
      pw_channel (acc, ip, wq, c, R, NJ);
  }
  const float *ip = in + (size_t) ncb * stride;
  const float *wq = w + (size_t) ncb * 16 * NJ * 16;
  for (int c = 0; c < rem; c++)
    pw_channel (acc, ip, wq, c, R, NJ);
}

/* Software prefetch of the next chunk's weights.  The first block of pixels to use a chunk
 * reads its weights (up to 180 KB at 704 input channels) from memory at the rate of the
 * FMAs, several times what memory gives a core, and the later blocks find them in L2: a
 * burst the hardware prefetcher does not smooth.  So block blk of nblk fetches its share
 * of the next chunk's `lines` cache lines (from next on), *pfn per input channel block of
 * its ncb; the range returned stays inside those lines.  Measured (AVX-512, 2 threads,
 * weights from memory, medians of 320 calls): GPUNet-P1's 704 -> 5632 at 7x7 1.78-1.86 ->
 * 1.71-1.72 ms, its FMA floor 1.66; no gain where a chunk outgrows L2 (5632 -> 704) and a
 * loss with 3 blocks a chunk (704 -> 1984 at 4x4 0.22 -> 0.30): hence pw_prefetch_max_chunk
 * and PW_PREFETCH_MIN_BLOCKS. */
static inline const char *
pw_prefetch_lines (const float *next, long lines, long blk, long nblk, int ncb, int *pfn)
{
  const long n = (lines + nblk * ncb - 1) / (nblk * ncb);
  long l0 = lines * blk / nblk;
  if (l0 + n * ncb > lines)
    l0 = lines - n * ncb;
  *pfn = (int) n;
  return (const char *) next + l0 * 64;
}

/* The accumulators into tmp (vector r * 4 + j), for the epilogues that work from memory */
static inline __attribute__((always_inline)) void
pw_spill (float *tmp, __m512 acc[PW_MR][4], const int R, const int NJ)
{
#pragma GCC unroll 4
  for (int j = 0; j < NJ; j++)
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
      _mm512_store_ps (tmp + (r * 4 + j) * 16, acc[r][j]);
}

/* The micro-kernel for R pixels x NJ vectors of output channels (compile-time constants
 * after inlining): in points at the first pixel in input channel block 0 (blocks hw * 16
 * floats apart), w at the chunk's weights, out at the first pixel in the chunk's first
 * output block.  act none / relu applied in registers, swish from a spill to memory. */
static inline __attribute__((always_inline)) void
pw_kernel (const float *in, long hw, const float *w, int ncb, int rem, const float *bias,
    float *out, int act, int res, const char *pf, int pfn, const int R, const int NJ)
{
  __m512 acc[PW_MR][4];
#pragma GCC unroll 4
  for (int j = 0; j < NJ; j++) {
    const __m512 b = _mm512_load_ps (bias + 16 * j);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
      acc[r][j] = b;
  }
  pw_reduce (acc, in, hw * 16, w, ncb, rem, pf, pfn, R, NJ);
  if (act == GPUNET_EPI_SWISH) {
    /* a rare epilogue out of line: the accumulators go through memory to it */
    float tmp[PW_MR * 4 * 16] __attribute__((aligned (64)));
    pw_spill (tmp, acc, R, NJ);
    for (int j = 0; j < NJ; j++)
      for (int r = 0; r < R; r++) {
        __m512 v = FN (simd_act) (_mm512_load_ps (tmp + (r * 4 + j) * 16), GPUNET_EPI_SWISH);
        float *o = out + (size_t) j * hw * 16 + r * 16;
        /* the swish's last multiply rounded on its own, never fused with the residual add
         * into an FMA (which the compiler may do in some of the kernels and not in others:
         * the blocks of pixels would then change the results) */
        __asm__ ("" : "+v" (v));
        if (res)
          v = _mm512_add_ps (v, _mm512_load_ps (o));
        _mm512_store_ps (o, v);
      }
    return;
  }
#pragma GCC unroll 4
  for (int j = 0; j < NJ; j++)
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
      __m512 v = acc[r][j];
      float *o = out + (size_t) j * hw * 16 + r * 16;
      if (act == GPUNET_EPI_RELU)
        v = _mm512_max_ps (v, _mm512_setzero_ps ());
      if (res)
        v = _mm512_add_ps (v, _mm512_load_ps (o));
      _mm512_store_ps (o, v);
    }
}

typedef void (*pw_fn) (const float *, long, const float *, int, int, const float *, float *,
    int, int, const char *, int);
#define PW_DEF(R, J) \
  static void pw_k##R##x##J (const float *in, long hw, const float *w, int ncb, int rem, \
      const float *bias, float *out, int act, int res, const char *pf, int pfn) \
  { pw_kernel (in, hw, w, ncb, rem, bias, out, act, res, pf, pfn, R, J); }
#define PW_DEF_ROW(R) PW_DEF (R, 1) PW_DEF (R, 2) PW_DEF (R, 3) PW_DEF (R, 4)
PW_DEF_ROW (1) PW_DEF_ROW (2) PW_DEF_ROW (3) PW_DEF_ROW (4) PW_DEF_ROW (5) PW_DEF_ROW (6)
#define PW_ROW(R) { pw_k##R##x1, pw_k##R##x2, pw_k##R##x3, pw_k##R##x4 }
static const pw_fn pw_kernels[PW_MR][4] = {
  PW_ROW (1), PW_ROW (2), PW_ROW (3), PW_ROW (4), PW_ROW (5), PW_ROW (6) };

/* Strassen: the quadrant updates of one product (pw_products).  The output quadrant ops: */
#define PW_ST 1      /* dst = acc (first contribution) */
#define PW_ADD 2     /* dst += acc */
#define PW_SUB 3     /* dst -= acc */
#define PW_FIN 4     /* flag: the last contribution: then dst = act(dst + bias) */

/* acc (R x NJ vectors, through tmp) into rows 0 .. rows - 1 of one quadrant block d
 * (channel blocks stride floats apart) with op (PW_ST / PW_ADD / PW_SUB, maybe | PW_FIN). */
static inline __attribute__((always_inline)) void
pws_update (const float *tmp, float *d, long stride, int rows, int op, const float *bias,
    int act, const int NJ)
{
  for (int j = 0; j < NJ; j++) {
    const __m512 b = _mm512_load_ps (bias + 16 * j);
    for (int r = 0; r < rows; r++) {
      float *o = d + (size_t) j * stride + r * 16;
      __m512 v = _mm512_load_ps (tmp + (r * 4 + j) * 16);
      if ((op & 3) == PW_ADD)
        v = _mm512_add_ps (_mm512_load_ps (o), v);
      else if ((op & 3) == PW_SUB)
        v = _mm512_sub_ps (_mm512_load_ps (o), v);
      if (op & PW_FIN)
        v = FN (simd_act) (_mm512_add_ps (v, b), act);
      _mm512_store_ps (o, v);
    }
  }
}

/* One Strassen product for R pixels x NJ vectors: a (stride: channel blocks a_stride
 * floats apart) times the packed T chunk w over ncb input blocks, then up to two quadrant
 * updates (op1 0: none). */
static inline __attribute__((always_inline)) void
pws_kernel (const float *a, long a_stride, const float *w, int ncb, float *d0, int op0,
    int rows0, const float *b0, float *d1, int op1, int rows1, const float *b1, long d_stride,
    int act, const char *pf, int pfn, const int R, const int NJ)
{
  __m512 acc[PW_MR][4];
#pragma GCC unroll 4
  for (int j = 0; j < NJ; j++)
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
      acc[r][j] = _mm512_setzero_ps ();
  pw_reduce (acc, a, a_stride, w, ncb, 0, pf, pfn, R, NJ);
  float tmp[PW_MR * 4 * 16] __attribute__((aligned (64)));
  pw_spill (tmp, acc, R, NJ);
  if (op0 && rows0 > 0)
    pws_update (tmp, d0, d_stride, rows0 < R ? rows0 : R, op0, b0, act, NJ);
  if (op1 && rows1 > 0)
    pws_update (tmp, d1, d_stride, rows1 < R ? rows1 : R, op1, b1, act, NJ);
}

typedef void (*pws_fn) (const float *, long, const float *, int, float *, int, int,
    const float *, float *, int, int, const float *, long, int, const char *, int);
#define PWS_DEF(R, J) \
  static void pws_k##R##x##J (const float *a, long a_stride, const float *w, int ncb, \
      float *d0, int op0, int rows0, const float *b0, float *d1, int op1, int rows1, \
      const float *b1, long d_stride, int act, const char *pf, int pfn) \
  { pws_kernel (a, a_stride, w, ncb, d0, op0, rows0, b0, d1, op1, rows1, b1, d_stride, act, \
      pf, pfn, R, J); }
#define PWS_DEF_ROW(R) PWS_DEF (R, 1) PWS_DEF (R, 2) PWS_DEF (R, 3) PWS_DEF (R, 4)
PWS_DEF_ROW (1) PWS_DEF_ROW (2) PWS_DEF_ROW (3) PWS_DEF_ROW (4) PWS_DEF_ROW (5)
PWS_DEF_ROW (6)
#define PWS_ROW(R) { pws_k##R##x1, pws_k##R##x2, pws_k##R##x3, pws_k##R##x4 }
static const pws_fn pws_kernels[PW_MR][4] = {
  PWS_ROW (1), PWS_ROW (2), PWS_ROW (3), PWS_ROW (4), PWS_ROW (5), PWS_ROW (6) };

/* The input sums of kernel blocks cb0 .. cb1 - 1 of one image: S1 = X11 + X22,
 * S2 = X21 + X22, S5 = X11 + X12, S6 = X21 - X11, S7 = X12 - X22, each [k2 / 16][h1][16]
 * at s + i * h1 * k2; the bottom half's missing pixel (odd hw) read as zero.  Cached
 * stores: the lines stay in the caches from one Strassen op to the next (streaming stores
 * with an eviction after each op measured 0.97-1.03 of this depending on the machine: no
 * longer a choice, docs/performance.md). */
static void
pws_sums (const gpunet_pw *p, const float *in, float *s, int cb0, int cb1)
{
  const long hw = p->hw, h1 = p->h1, h2 = p->h2;
  const int kb = p->k2 / 16;
  const size_t ss = (size_t) h1 * p->k2;
  for (int cb = cb0; cb < cb1; cb++) {
    const float *x1 = in + (size_t) cb * hw * 16, *x2 = in + (size_t) (cb + kb) * hw * 16;
    float *o = s + (size_t) cb * h1 * 16;
    for (long px = 0; px < h1; px++) {
      const __m512 x11 = _mm512_load_ps (x1 + px * 16), x12 = _mm512_load_ps (x2 + px * 16);
      const __m512 x21 = px < h2 ? _mm512_load_ps (x1 + (h1 + px) * 16) : _mm512_setzero_ps ();
      const __m512 x22 = px < h2 ? _mm512_load_ps (x2 + (h1 + px) * 16) : _mm512_setzero_ps ();
      float *q = o + px * 16;
      const __m512 v[PW_NS] = { _mm512_add_ps (x11, x22), _mm512_add_ps (x21, x22),
        _mm512_add_ps (x11, x12), _mm512_sub_ps (x21, x11), _mm512_sub_ps (x12, x22) };
#pragma GCC unroll 5
      for (int i = 0; i < PW_NS; i++)
        _mm512_store_ps (q + i * ss, v[i]);
    }
  }
}

/* The seven products in the order they run, so that every quadrant's first contribution
 * stores (PW_ST) and its last one finishes it (PW_FIN).  a: the left operand, 0..4 the
 * sums S1, S2, S5, S6, S7, 5 X11, 6 X22; t: which of T1..T7; q: output quadrants (2 p + n
 * for Z_pn, zero-based), -1 for none. */
static const struct { signed char a, t, q0, op0, q1, op1; } pw_products[7] = {
  { 0, 0, 0, PW_ST, 3, PW_ST },                   /* M1 = S1 T1: Z11 =, Z22 = */
  { 5, 2, 1, PW_ST, 3, PW_ADD },                  /* M3 = X11 T3: Z12 =, Z22 += */
  { 1, 1, 2, PW_ST, 3, PW_SUB },                  /* M2 = S2 T2: Z21 =, Z22 -= */
  { 3, 5, 3, PW_ADD | PW_FIN, -1, 0 },            /* M6 = S6 T6: Z22 += */
  { 6, 3, 0, PW_ADD, 2, PW_ADD | PW_FIN },        /* M4 = X22 T4: Z11 +=, Z21 += */
  { 2, 4, 0, PW_SUB, 1, PW_ADD | PW_FIN },        /* M5 = S5 T5: Z11 -=, Z12 += */
  { 4, 6, 0, PW_ADD | PW_FIN, -1, 0 },            /* M7 = S7 T7: Z11 += */
};

/* The first unit of thread t of team (units: chunk-major, see pw_run_strassen): the
 * split is by work, a unit weighing its chunk's vector count, since a narrower last chunk
 * per half (416 = 6 x 64 + 32 channels) would otherwise leave one thread a share of
 * full-width units up to 8% larger. */
static long
pws_split (const gpunet_pw *p, long units, int t, int team)
{
  if (t <= 0)
    return 0;
  if (t >= team)
    return units;
  const long total = (long) (p->n2 / 16) * p->npb1, goal = total * t / team;
  long done = 0;
  for (int ch = 0; ch < p->nch2; ch++) {
    const int nj = pw_chunk_vectors (p->n2, ch);
    if (done + (long) nj * p->npb1 > goal)
      return ch * p->npb1 + (goal - done + nj - 1) / nj;
    done += (long) nj * p->npb1;
  }
  return units;
}

/* Strassen for n images: per image, the threads compute the input sums (split by channel
 * blocks), then each takes one contiguous range of units (chunk of 64 channels of an
 * output half x block of 6 pixels of a pixel half, chunk-major) and runs the seven
 * products for each; a unit's four output quadrant blocks are written by its thread
 * only, so the products need no barrier between them. */
static void
pw_run_strassen (const gpunet_pw *p, const float *in, float *out, int n, int residual_in_dst,
    float *scratch, int nt)
{
  const long hw = p->hw, h1 = p->h1, h2 = p->h2, npb1 = p->npb1;
  const int kb = p->k2 / 16, nb2 = p->n2 / 16;
  const long units = (long) p->nch2 * npb1;
  const size_t tsize = (size_t) p->nch2 * p->k2 * PW_NR, ss = (size_t) h1 * p->k2;
  const int prefetch = npb1 >= PW_PREFETCH_MIN_BLOCKS
      && (size_t) p->k2 * PW_NR * sizeof (float) <= pw_prefetch_max_chunk ();
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num (), team = omp_get_num_threads ();
    const long u0 = pws_split (p, units, t, team), u1 = pws_split (p, units, t + 1, team);
    for (int img = 0; img < n; img++) {
      const float *x = in + (size_t) img * p->cp * hw;
      float *z = out + (size_t) img * p->ocp * hw;
      pws_sums (p, x, scratch, kb * t / team, kb * (t + 1) / team);
#pragma omp barrier
      for (int k = 0; k < 7; k++)
        for (long u = u0; u < u1; u++) {
          const int ch = (int) (u / npb1), nj = pw_chunk_vectors (p->n2, ch);
          const long pb = u % npb1, px = pb * PW_MR;
          const int top = h1 - px < PW_MR ? (int) (h1 - px) : PW_MR;
          const int bot = h2 - px < PW_MR ? (int) (h2 - px) : PW_MR;   /* may be <= 0 */
          const int a = pw_products[k].a, q0 = pw_products[k].q0, q1 = pw_products[k].q1;
          /* rows: of the operand (S2 and X22 bottom-half, the rest top-half), at most
           * those of the quadrants written */
          const int arows = a == 1 || a == 6 ? bot : top;
          const int r0 = q0 < 2 ? top : bot, r1 = q1 < 0 ? 0 : q1 < 2 ? top : bot;
          const int need = r1 > r0 ? r1 : r0, rows = arows < need ? arows : need;
          if (rows <= 0)
            continue;
          const float *ap;
          long as;
          if (a < 5) {
            ap = scratch + a * ss + (size_t) px * 16;
            as = h1 * 16;
          } else {
            ap = a == 5 ? x + (size_t) px * 16 : x + ((size_t) kb * hw + h1 + px) * 16;
            as = hw * 16;
          }
          int op0 = pw_products[k].op0, op1 = pw_products[k].op1;
          /* the chunk this thread takes next: this product's next one, else the next
           * product's first (pw_prefetch_lines) */
          const char *pf = NULL;
          int pfn = 0;
          const int last = ((long) ch + 1) * npb1 >= u1;   /* this thread's last chunk */
          if (prefetch && !(last && k == 6)) {
            const int nk = last ? k + 1 : k, nc = last ? (int) (u0 / npb1) : ch + 1;
            pf = pw_prefetch_lines (p->t + pw_products[nk].t * tsize + (size_t) nc * p->k2 * PW_NR,
                (long) p->k2 * pw_chunk_vectors (p->n2, nc), pb, npb1, kb, &pfn);
          }
          if (residual_in_dst) {   /* the residual is in the output: add to it */
            op0 = (op0 & 3) == PW_ST ? (op0 & PW_FIN) | PW_ADD : op0;
            op1 = (op1 & 3) == PW_ST ? (op1 & PW_FIN) | PW_ADD : op1;
          }
          /* quadrant Z_pn (q = 2 p + n) of this unit */
#define PW_ZQ(q) (z + ((size_t) ((q) % 2 * nb2 + ch * 4) * hw + (size_t) ((q) / 2) * h1 + px) * 16)
          pws_kernels[rows - 1][nj - 1] (ap, as,
              p->t + pw_products[k].t * tsize + (size_t) ch * p->k2 * PW_NR, kb,
              PW_ZQ (q0), op0, r0, p->bias + (q0 % 2) * p->n2 + ch * PW_NR,
              q1 >= 0 ? PW_ZQ (q1) : NULL, q1 >= 0 ? op1 : 0, r1,
              p->bias + (q1 >= 0 ? q1 % 2 : 0) * p->n2 + ch * PW_NR, hw * 16, p->act, pf, pfn);
#undef PW_ZQ
        }
      /* the sums of the next image overwrite the scratch */
#pragma omp barrier
    }
  }
}

#include "simd_end.h"

void
gpunet_pw_run (const gpunet_pw *p, const float *in, float *out, int n, int residual_in_dst,
    float *scratch, int nt)
{
  if (p->strassen) {
    pw_run_strassen (p, in, out, n, residual_in_dst, scratch, nt);
    return;
  }
  const long npb = p->npb, pg = p->pg, hw = p->hw;
  const long per_img = (long) p->nch * npb;
  const long units = per_img * n;
  /* whole blocks of real input channels, then the rest of a padded last block */
  const int ncb = p->cin / 16, rem = p->cin % 16;
  /* chunk-major, with chunks small enough for this one and the next to share L2 */
  const int prefetch = !p->pixel_major && ncb > 0
      && (size_t) p->cp * PW_NR * sizeof (float) <= pw_prefetch_max_chunk ();
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num (), team = omp_get_num_threads ();
    const long u0 = units * t / team, u1 = units * (t + 1) / team;
    const float *wt = p->w;
    for (long u = u0; u < u1; u++) {
      const long img = u / per_img, v = u % per_img;
      long pb;
      int ch;
      const char *pf = NULL;
      int pfn = 0;
      if (p->pixel_major) {
        pb = v / p->nch;
        ch = (int) (v % p->nch);
      } else {
        /* groups g of pg pixel blocks (the last may be shorter), chunk-major inside */
        const long g = v / ((long) p->nch * pg);
        const long g0 = g * pg, len = g0 + pg <= npb ? pg : npb - g0;
        const long w = v - g0 * p->nch;
        ch = (int) (w / len);
        pb = g0 + w % len;
        /* the chunk this thread takes next: the next one of the group, else the first of
         * the next group or image */
        if (prefetch && len >= PW_PREFETCH_MIN_BLOCKS && u + len - (pb - g0) < u1) {
          const int nx = (ch + 1) % p->nch;
          pf = pw_prefetch_lines (wt + (size_t) nx * p->cp * PW_NR,
              (long) p->cp * pw_chunk_vectors (p->ocp, nx), pb - g0, len, ncb, &pfn);
        }
      }
      const int nj = pw_chunk_vectors (p->ocp, ch);
      long px;
      int rows;
      pw_block (p, pb, &px, &rows);
      /* an image is cp x hw floats; a channel block hw x 16 */
      pw_kernels[rows - 1][nj - 1] (in + (size_t) img * p->cp * hw + (size_t) px * 16,
          hw, wt + (size_t) ch * p->cp * PW_NR, ncb, rem, p->bias + ch * PW_NR,
          out + (size_t) img * p->ocp * hw + ((size_t) ch * 4 * hw + (size_t) px) * 16,
          p->act, residual_in_dst, pf, pfn);
    }
  }
}

#else /* not x86 with GCC-style intrinsics: never planned (gpunet_pw_available is 0) */

void
gpunet_pw_run (const gpunet_pw *p, const float *in, float *out, int n, int residual_in_dst,
    float *scratch, int nt)
{
  (void) p, (void) in, (void) out, (void) n, (void) residual_in_dst, (void) scratch, (void) nt;
}

#endif
