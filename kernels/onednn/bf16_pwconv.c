/* bf16_pwconv.c: our 1x1 convolution for bf16 sessions (see bf16_pwconv.h).
 *
 * Weights at plan time, rounded to bf16 (nearest even, as oneDNN's reorder does): per
 * chunk of nj <= 4 vectors of 16 output channels, [cp / 2][nj * 16][2]: for each pair of
 * input channels, nj vectors, each lane holding the pair, the operand layout of
 * vdpbf16ps; zero in padded channels.  The ocp / 16 vectors are split evenly into the
 * chunks (144 channels: 3 + 3 + 3 vectors, not 4 + 4 + 1, whose last chunk would keep
 * only 6 chains of sums, too few for vdpbf16ps's latency).  The micro-kernel keeps 6
 * pixels x nj vectors of f32 sums in registers (24 of the 32, 4 for the weights, 1 for
 * the broadcast pair of input values) and goes over a segment of input channel pairs:
 * per pair nj weight loads, 6 broadcasts and 6 nj vdpbf16ps.  Pixels are taken in blocks
 * of 5 or 6 (hw split evenly into ceil(hw / 6) blocks: no block of 1 or 2 pixels, which
 * would run at a fraction of the rate).
 *
 * Order of work, a unit being (image, chunk, blocks of pixels), each thread taking one
 * contiguous range of units:
 *   - weights of at most PWB_L1_W bytes (they stay in L1): pixel-major, each block of
 *     pixels read once, all input channels in one segment;
 *   - larger: chunk-major over groups of pixel blocks holding at most PWB_GROUP bytes of
 *     input, so that a group's input stays in L2 while every chunk's weights pass it once
 *     per group.  A unit takes a range of the group's blocks segment by segment: a
 *     segment's weights (PWB_SEG_W bytes) come from memory once, prefetched while the
 *     segment before runs, and serve every block of the range from L1; the sums wait in a
 *     per-thread buffer between segments.  The chunk count is a multiple of the thread
 *     count where it can be, so that the threads share whole chunks evenly.
 * GPUNet-P1's 7x7 layers (704 <-> 5200-5600 channels, 7-8 MB of weights): one group, each
 * thread streaming its half of the weights once; 0.86-0.95 of oneDNN 2.6's jit_bf16_1x1
 * time per layer.  Pixel-major there would read all of a chunk's weights from L2 again
 * for every block of 6 pixels. */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "activation.h"
#include "bf16_pwconv.h"
#include "blocked_ops.h"
#include "cpu_bf16.h"

#define PWB_MR 6                        /* pixels per micro-kernel call, at most */
#define PWB_NV 4                        /* vectors of 16 output channels per chunk, at most */
#define PWB_L1_W ((size_t) 32 << 10)
#define PWB_GROUP ((size_t) 640 << 10)
/* chunk-major layers: input channels in segments whose weights (per chunk) take at most
 * this many bytes, so that they stay in L1 for all the blocks of a range of pixels, the
 * sums waiting in a buffer of at most PWB_RANGE blocks between segments */
#define PWB_SEG_W ((size_t) 32 << 10)
#define PWB_RANGE 32

struct gpunet_pwb {
  int cin, cout, cp, ocp, act, out_f32;
  long hw;
  int nch;          /* chunks of output channels: ceil(ocp / 64); chunk c holds vectors
                     * c nv / nch .. (c + 1) nv / nch - 1 of the nv = ocp / 16 */
  long nb;          /* blocks of pixels: ceil(hw / 6) */
  long gb;          /* blocks per group (chunk-major order); 0: pixel-major */
  uint16_t *w;      /* chunk c at w + v0 * cp * 16 (v0 its first vector): [cp / 2][nj * 16][2] */
  float *bias;      /* [ocp], zero padded */
};

void
gpunet_pwb_set_out_f32 (gpunet_pwb *p, int out_f32)
{
  p->out_f32 = out_f32 != 0;
}

void
gpunet_pwb_free (gpunet_pwb *p)
{
  if (!p)
    return;
  free (p->w);
  free (p->bias);
  free (p);
}

/* Chunk c's first vector of output channels and its vector count */
static inline void
pwb_chunk (const gpunet_pwb *p, int c, int *v0, int *nj)
{
  const int nv = p->ocp / 16;
  *v0 = c * nv / p->nch;
  *nj = (c + 1) * nv / p->nch - *v0;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

int
gpunet_pwb_available (void)
{
  __builtin_cpu_init ();
  return __builtin_cpu_supports ("avx512f") && __builtin_cpu_supports ("avx512bw")
      && __builtin_cpu_supports ("avx512vl") && gpunet_cpu_avx512_bf16 ();
}

gpunet_pwb *
gpunet_pwb_new (const float *weight, const float *bias, int cin, int cout, int cp, int ocp,
    long hw, int act, int nt)
{
  if (!gpunet_pwb_available () || cin < 1 || cout < 1 || cp < cin || ocp < cout || cp % 16
      || ocp % 16 || hw < 1)
    return NULL;
  gpunet_pwb *p = calloc (1, sizeof *p);
  if (!p)
    return NULL;
  p->cin = cin, p->cout = cout, p->cp = cp, p->ocp = ocp, p->act = act, p->hw = hw;
  p->nch = (ocp / 16 + PWB_NV - 1) / PWB_NV;
  p->nb = (hw + PWB_MR - 1) / PWB_MR;
  const size_t wbytes = (size_t) cp * ocp * sizeof (uint16_t);
  /* chunk-major layers (below) share whole chunks out to the threads: a multiple of nt
   * of them, where there are vectors enough (GPUNet-P1's 704 outputs: 12 chunks of 3-4
   * vectors, not 11 of 4, of which one thread would take 6 and the other 5) */
  if (wbytes > PWB_L1_W && nt > 1 && p->nch % nt && (p->nch + nt - 1) / nt * nt <= ocp / 16)
    p->nch = (p->nch + nt - 1) / nt * nt;
  if (wbytes > PWB_L1_W) {
    const size_t block_bytes = (size_t) PWB_MR * cp * sizeof (uint16_t);
    p->gb = (long) (PWB_GROUP / block_bytes);
    if (p->gb < 1)
      p->gb = 1;
    if (p->gb > p->nb)
      p->gb = p->nb;
  }
  p->w = aligned_alloc (64, (size_t) cp * ocp * sizeof (uint16_t));
  p->bias = aligned_alloc (64, (size_t) ocp * sizeof (float));
  if (!p->w || !p->bias) {
    gpunet_pwb_free (p);
    return NULL;
  }
  for (int c = 0; c < p->nch; c++) {
    int v0, nj;
    pwb_chunk (p, c, &v0, &nj);
    uint16_t *wc = p->w + (size_t) v0 * cp * 16;
    for (int k = 0; k < cp / 2; k++)
      for (int j = 0; j < nj; j++)
        for (int l = 0; l < 16; l++)
          for (int h = 0; h < 2; h++) {
            const int oc = (v0 + j) * 16 + l, ic = 2 * k + h;
            wc[((size_t) k * nj + j) * 32 + 2 * l + h] = oc < cout && ic < cin
                ? gpunet_bf16_rne (weight[(size_t) oc * cin + ic]) : 0;
          }
  }
  for (int oc = 0; oc < ocp; oc++)
    p->bias[oc] = oc < cout && bias ? bias[oc] : 0.0f;
  return p;
}

#define SIMD_WIDTH 16
#include "simd_begin.h"
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")

/* One call of the micro-kernel: MR pixels x NJ vectors of output channels over one segment
 * of the input channels (all of them, or kseg pairs of a chunk-major layer's). */
typedef struct {
  const uint16_t *in;   /* the block's first pixel in the segment's first channel block
                         * (stride hw * 16 between channel blocks) */
  long hw;
  int ncb;              /* channel blocks (8 pairs each) in the segment */
  const uint16_t *w;    /* the chunk's weights from the segment's first pair */
  const float *bias;    /* the chunk's */
  void *out;            /* the block's first pixel in the chunk's first output block */
  float *part;          /* MR x NJ x 16 sums carried between segments */
  int obf, act, residual, first, last;
} pwb_job;

/* sums (+)= the segment's products; after the last segment out = act(sums + bias) (+ out) */
static inline __attribute__((always_inline)) void
pwb_tile (const pwb_job *jb, const int MR, const int NJ)
{
  __m512 acc[PWB_MR][4];
#pragma GCC unroll 6
  for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
    for (int j = 0; j < NJ; j++)
      acc[r][j] = jb->first ? _mm512_setzero_ps ()
          : _mm512_load_ps (jb->part + ((size_t) r * NJ + j) * 16);
  const long hw = jb->hw;
  for (int cb = 0; cb < jb->ncb; cb++) {
    const uint16_t *ib = jb->in + (size_t) cb * hw * 16;
    const uint16_t *wb = jb->w + (size_t) cb * 8 * NJ * 32;
#pragma GCC unroll 2
    for (int k = 0; k < 8; k++) {
      __m512i b[4];
#pragma GCC unroll 4
      for (int j = 0; j < NJ; j++)
        b[j] = _mm512_load_si512 ((const void *) (wb + ((size_t) k * NJ + j) * 32));
#pragma GCC unroll 6
      for (int r = 0; r < MR; r++) {
        int32_t pair;
        memcpy (&pair, ib + (size_t) r * 16 + 2 * k, sizeof pair);
        const __m512bh a = (__m512bh) _mm512_set1_epi32 (pair);
#pragma GCC unroll 4
        for (int j = 0; j < NJ; j++)
          acc[r][j] = _mm512_dpbf16_ps (acc[r][j], a, (__m512bh) b[j]);
      }
    }
  }
  if (!jb->last) {
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
      for (int j = 0; j < NJ; j++)
        _mm512_store_ps (jb->part + ((size_t) r * NJ + j) * 16, acc[r][j]);
    return;
  }
#pragma GCC unroll 4
  for (int j = 0; j < NJ; j++) {
    const __m512 bv = _mm512_load_ps (jb->bias + 16 * j);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
      const size_t o = ((size_t) j * hw + r) * 16;
      __m512 v = simd_act_avx512 (_mm512_add_ps (acc[r][j], bv), jb->act);
      if (jb->obf) {
        uint16_t *q = (uint16_t *) jb->out + o;
        if (jb->residual)
          v = _mm512_add_ps (v, _mm512_castsi512_ps (_mm512_slli_epi32 (
                      _mm512_cvtepu16_epi32 (_mm256_loadu_si256 ((const __m256i *) q)), 16)));
        _mm256_storeu_si256 ((__m256i *) q, (__m256i) _mm512_cvtneps_pbh (v));
      } else {
        float *q = (float *) jb->out + o;
        if (jb->residual)
          v = _mm512_add_ps (v, _mm512_loadu_ps (q));
        _mm512_storeu_ps (q, v);
      }
    }
  }
}

typedef void (*pwb_fn) (const pwb_job *);

#define PWB_DEF(MR, NJ) \
  static void \
  pwb_tile_##MR##x##NJ (const pwb_job *jb) \
  { \
    pwb_tile (jb, MR, NJ); \
  }
#define PWB_ROW(MR) PWB_DEF (MR, 1) PWB_DEF (MR, 2) PWB_DEF (MR, 3) PWB_DEF (MR, 4)
PWB_ROW (1) PWB_ROW (2) PWB_ROW (3) PWB_ROW (4) PWB_ROW (5) PWB_ROW (6)
#undef PWB_ROW
#undef PWB_DEF
#define PWB_ROW(MR) \
  { pwb_tile_##MR##x1, pwb_tile_##MR##x2, pwb_tile_##MR##x3, pwb_tile_##MR##x4 }
static const pwb_fn pwb_tab[PWB_MR][4] = {
  PWB_ROW (1), PWB_ROW (2), PWB_ROW (3), PWB_ROW (4), PWB_ROW (5), PWB_ROW (6),
};
#undef PWB_ROW

/* Blocks b0 .. b1 - 1 of image img, chunk c, all input channels in segments of at most
 * kseg pairs (a multiple of 8), segment-major: a segment's weights are read from L2 or
 * further once for all the blocks; the sums in between wait in part. */
static void
pwb_blocks (const gpunet_pwb *p, const uint16_t *in, void *out, int img, int c, long b0,
    long b1, int residual, float *part)
{
  int v0, nj;
  pwb_chunk (p, c, &v0, &nj);
  const size_t osz = p->out_f32 ? sizeof (float) : sizeof (uint16_t);
  const int kpairs = p->cp / 2;
  int kseg = (int) (PWB_SEG_W / ((size_t) nj * 64) / 8 * 8);
  if (kseg < 8)
    kseg = 8;
  if (b1 - b0 == 1 || kseg > kpairs)
    kseg = kpairs;
  pwb_job jb = { .hw = p->hw, .obf = !p->out_f32, .act = p->act, .residual = residual,
    .bias = p->bias + (size_t) v0 * 16 };
  for (int k0 = 0; k0 < kpairs; k0 += kseg) {
    const int k1 = k0 + kseg < kpairs ? k0 + kseg : kpairs;
    jb.ncb = (k1 - k0) / 8;
    jb.w = p->w + (size_t) v0 * p->cp * 16 + (size_t) k0 * nj * 32;
    jb.first = k0 == 0;
    jb.last = k1 == kpairs;
    /* the weights that follow this segment's (the chunk's next segment, else the next
     * chunk's first), as many bytes as this one's, prefetched in equal shares before each
     * block: a chunk-major layer's weights come from memory once, at the rate the sums
     * consume them */
    const char *next = (const char *) (jb.w + (size_t) (k1 - k0) * nj * 32);
    const char *wend = (const char *) (p->w + (size_t) p->cp * p->ocp);
    long lines = (long) (k1 - k0) * nj * 64 / 64;
    if (next + lines * 64 > wend)
      lines = (wend - next) / 64;
    for (long b = b0; b < b1; b++) {
      const long px0 = b * p->hw / p->nb, px1 = (b + 1) * p->hw / p->nb;
      if (part)
        for (long q = lines * (b - b0) / (b1 - b0); q < lines * (b - b0 + 1) / (b1 - b0); q++)
          _mm_prefetch (next + q * 64, _MM_HINT_T1);
      jb.in = in + (size_t) img * p->cp * p->hw + (size_t) (k0 / 8) * p->hw * 16
          + (size_t) px0 * 16;
      jb.out = (char *) out + ((size_t) img * p->ocp * p->hw + (size_t) v0 * 16 * p->hw
          + (size_t) px0 * 16) * osz;
      jb.part = part + (size_t) (b - b0) * PWB_MR * PWB_NV * 16;
      pwb_tab[px1 - px0 - 1][nj - 1] (&jb);
    }
  }
}

void
gpunet_pwb_run (const gpunet_pwb *p, const uint16_t *in, void *out, int n,
    int residual_in_dst, int nt)
{
  if (nt < 1)
    nt = 1;
  if (!p->gb) {
    /* pixel-major: units (image, block, chunk); the weights stay in L1 */
    const long per_img = (long) p->nch * p->nb, units = per_img * n;
    if (nt > units)
      nt = (int) units;
#pragma omp parallel num_threads(nt)
    {
      const int t = omp_get_thread_num ();
      const long u0 = units * t / nt, u1 = units * (t + 1) / nt;
      for (long u = u0; u < u1; u++) {
        const int img = (int) (u / per_img);
        const long b = (u % per_img) / p->nch;
        pwb_blocks (p, in, out, img, (int) (u % per_img % p->nch), b, b + 1, residual_in_dst,
            NULL);
      }
    }
    return;
  }
  /* chunk-major: the blocks in nrange ranges of equal length (within one block), at most
   * PWB_RANGE and the group's gb; where the chunks do not split evenly between the
   * threads (gpunet_pwb_new makes their count a multiple of its thread count where it
   * can), also short enough for at least 8 units a thread, so that one thread's share is
   * at most a short unit longer than another's (each range reads its chunk's weights
   * again); consecutive ranges form the groups, chunk-major within each: units (image,
   * group, chunk, range) */
  long len = p->nb;
  if (p->nch % nt)
    len = (long) p->nb * p->nch / (8L * nt);
  if (len > PWB_RANGE)
    len = PWB_RANGE;
  if (len > p->gb)
    len = p->gb;
  if (len < 1)
    len = 1;
  const long nrange = (p->nb + len - 1) / len, rg = p->gb / len > 0 ? p->gb / len : 1;
  const long per_img = nrange * p->nch, units = per_img * n;
  if (nt > units)
    nt = (int) units;
#pragma omp parallel num_threads(nt)
  {
    float part[PWB_RANGE * PWB_MR * PWB_NV * 16] __attribute__((aligned (64)));
    const int t = omp_get_thread_num ();
    const long u0 = units * t / nt, u1 = units * (t + 1) / nt;
    for (long u = u0; u < u1; u++) {
      const int img = (int) (u / per_img);
      const long rest = u % per_img, r0 = rest / (rg * p->nch) * rg;   /* the group's first */
      const long gr = nrange - r0 < rg ? nrange - r0 : rg;   /* its ranges */
      const long in_g = rest - r0 * p->nch;
      const int c = (int) (in_g / gr);
      const long r = r0 + in_g % gr;
      pwb_blocks (p, in, out, img, c, r * p->nb / nrange, (r + 1) * p->nb / nrange,
          residual_in_dst, part);
    }
  }
}

#include "simd_end.h"

#else /* never planned: bf16 sessions need x86 with AVX-512 BF16 */

int
gpunet_pwb_available (void)
{
  return 0;
}

gpunet_pwb *
gpunet_pwb_new (const float *weight, const float *bias, int cin, int cout, int cp, int ocp,
    long hw, int act, int nt)
{
  (void) weight, (void) bias, (void) cin, (void) cout, (void) cp, (void) ocp, (void) hw;
  (void) act, (void) nt;
  return NULL;
}

void
gpunet_pwb_run (const gpunet_pwb *p, const uint16_t *in, void *out, int n,
    int residual_in_dst, int nt)
{
  (void) p, (void) in, (void) out, (void) n, (void) residual_in_dst, (void) nt;
}

#endif
