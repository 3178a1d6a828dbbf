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
 * the orders each lose 10-45% on the shapes the rule gives to another. */
#include <stdlib.h>

#include <omp.h>

#include "activation.h"
#include "blocked_ops.h"
#include "pwconv.h"
#include "winograd.h"

#define PW_MR 6                        /* pixels per micro-kernel call */
#define PW_NR 64                       /* output channels per chunk */
#define PW_SMALL_W ((size_t) 1 << 20)  /* bytes of weights read whole by each thread */
#define PW_ONE_GROUP ((size_t) 640 << 10)
#define PW_GROUP ((size_t) 256 << 10)

struct gpunet_pw {
  int cin, cout, cp, ocp, act;
  long hw;
  int nch;        /* chunks of output channels: ceil(ocp / 64) */
  long npb;       /* blocks of 6 pixels: ceil(hw / 6) */
  long pg;        /* pixel blocks per group (npb: one group) */
  int pixel_major;
  float *w;       /* chunk c at w + c * cp * 64: [cp][nj * 16] */
  float *bias;    /* [ocp], zero padded */
};

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
  free (p->bias);
  free (p);
}

gpunet_pw *
gpunet_pw_new (const float *weight, const float *bias, int cin, int cout, int cp, int ocp,
    long hw, int act)
{
  if (!weight || cin < 1 || cout < 1 || cp < cin || ocp < cout || cp % 16 || ocp % 16
      || hw < 1 || act < GPUNET_EPI_NONE || act > GPUNET_EPI_SWISH)
    return NULL;
  gpunet_pw *p = calloc (1, sizeof *p);
  if (!p)
    return NULL;
  *p = (gpunet_pw) { .cin = cin, .cout = cout, .cp = cp, .ocp = ocp, .act = act, .hw = hw,
    .nch = (ocp + PW_NR - 1) / PW_NR, .npb = (hw + PW_MR - 1) / PW_MR };
  p->w = gpunet_blk_alloc ((size_t) p->nch * cp * PW_NR);
  p->bias = gpunet_blk_alloc ((size_t) ocp);
  if (!p->w || !p->bias) {
    gpunet_pw_free (p);
    return NULL;
  }
  for (int o = 0; o < cout; o++) {
    const int ch = o / PW_NR, nj = pw_chunk_vectors (ocp, ch);
    float *wc = p->w + (size_t) ch * cp * PW_NR;
    for (int i = 0; i < cin; i++)
      wc[(size_t) i * nj * 16 + o % PW_NR] = weight[(size_t) o * cin + i];
    p->bias[o] = bias ? bias[o] : 0.0f;
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

/* The micro-kernel for R pixels x NJ vectors of output channels (compile-time constants
 * after inlining): in points at the first pixel in input channel block 0 (blocks hw * 16
 * floats apart), w at the chunk's weights, out at the first pixel in the chunk's first
 * output block.  act none / relu here, swish through pw_swish_store. */
static inline __attribute__((always_inline)) void
pw_kernel (const float *in, long hw, const float *w, int ncb, const float *bias, float *out,
    int act, int res, const int R, const int NJ)
{
  __m512 acc[PW_MR][4];
#pragma GCC unroll 4
  for (int j = 0; j < NJ; j++) {
    const __m512 b = _mm512_load_ps (bias + 16 * j);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
      acc[r][j] = b;
  }
  for (int cb = 0; cb < ncb; cb++) {
    const float *ip = in + (size_t) cb * hw * 16;
    const float *wq = w + (size_t) cb * 16 * NJ * 16;
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++) {
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
  }
  if (act == GPUNET_EPI_SWISH) {
    /* a rare epilogue out of line: the accumulators go through memory to it */
    float tmp[PW_MR * 4 * 16] __attribute__((aligned (64)));
#pragma GCC unroll 4
    for (int j = 0; j < NJ; j++)
#pragma GCC unroll 6
      for (int r = 0; r < R; r++)
        _mm512_store_ps (tmp + (r * 4 + j) * 16, acc[r][j]);
    for (int j = 0; j < NJ; j++)
      for (int r = 0; r < R; r++) {
        __m512 v = FN (simd_act) (_mm512_load_ps (tmp + (r * 4 + j) * 16), GPUNET_EPI_SWISH);
        float *o = out + (size_t) j * hw * 16 + r * 16;
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

typedef void (*pw_fn) (const float *, long, const float *, int, const float *, float *, int,
    int);
#define PW_DEF(R, J) \
  static void pw_k##R##x##J (const float *in, long hw, const float *w, int ncb, \
      const float *bias, float *out, int act, int res) \
  { pw_kernel (in, hw, w, ncb, bias, out, act, res, R, J); }
#define PW_DEF_ROW(R) PW_DEF (R, 1) PW_DEF (R, 2) PW_DEF (R, 3) PW_DEF (R, 4)
PW_DEF_ROW (1) PW_DEF_ROW (2) PW_DEF_ROW (3) PW_DEF_ROW (4) PW_DEF_ROW (5) PW_DEF_ROW (6)
#define PW_ROW(R) { pw_k##R##x1, pw_k##R##x2, pw_k##R##x3, pw_k##R##x4 }
static const pw_fn pw_kernels[PW_MR][4] = {
  PW_ROW (1), PW_ROW (2), PW_ROW (3), PW_ROW (4), PW_ROW (5), PW_ROW (6) };

#include "simd_end.h"

void
gpunet_pw_run (const gpunet_pw *p, const float *in, float *out, int n, int residual_in_dst,
    int nt)
{
  const long npb = p->npb, pg = p->pg, hw = p->hw;
  const long per_img = (long) p->nch * npb;
  const long units = per_img * n;
  const int ncb = p->cp / 16;
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num (), team = omp_get_num_threads ();
    const long u0 = units * t / team, u1 = units * (t + 1) / team;
    for (long u = u0; u < u1; u++) {
      const long img = u / per_img, v = u % per_img;
      long pb;
      int ch;
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
      }
      const int nj = pw_chunk_vectors (p->ocp, ch);
      const int rows = hw - pb * PW_MR < PW_MR ? (int) (hw - pb * PW_MR) : PW_MR;
      /* an image is cp x hw floats; a channel block hw x 16 */
      pw_kernels[rows - 1][nj - 1] (in + (size_t) img * p->cp * hw + (size_t) pb * PW_MR * 16,
          hw, p->w + (size_t) ch * p->cp * PW_NR, ncb, p->bias + ch * PW_NR,
          out + (size_t) img * p->ocp * hw + ((size_t) ch * 4 * hw + (size_t) pb * PW_MR) * 16,
          p->act, residual_in_dst);
    }
  }
}

#else /* not x86 with GCC-style intrinsics: never planned (gpunet_pw_available is 0) */

void
gpunet_pw_run (const gpunet_pw *p, const float *in, float *out, int n, int residual_in_dst,
    int nt)
{
  (void) p, (void) in, (void) out, (void) n, (void) residual_in_dst, (void) nt;
}

#endif
