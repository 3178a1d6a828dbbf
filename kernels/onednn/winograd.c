/* winograd.c: Winograd F(4x4, 3x3) and F(3x3, 3x3) on nChw16c activations with AVX-512
 * or nChw8c ones with AVX2 (see winograd.h).
 *
 * Transforms (Lavin and Gray, interpolation points 0, 1, -1, 2, -2, infinity):
 *   Y = A^T [ (G g G^T) (.) (B^T d B) ] A,  d: 6x6 input patch, g: 3x3 kernel, Y: 4x4.
 * Work per 4x4 output tile and input/output channel pair: 36 multiply-adds instead of 144.
 * (F(6x6, 3x3), 1.78 per output instead of 2.25, measured level in whole passes and
 * rounded twice as much: removed, docs/performance.md.)
 * A 5x5 stride-2 convolution is run as a 3x3 stride-1 one over the four phase images of
 * its input (Winograd on the polyphase decomposition): the odd phases' kernels have 2 taps
 * down or across, not 3, so their transformed kernels are zero in the last row or column
 * of the 6x6 and those products are skipped.  A 3x3 stride-2 one likewise becomes
 * a 2x2 kernel over the phases, run as F(4x4, 2x2) (5x5 input tiles, points 0, 1, -1, 2):
 * 81 of 4 x 25 products per 4x4 tile instead of 16 x 9, 1.78x fewer.
 * The weight transform is done once in double precision; the input and output transforms
 * in float, 16 channels per vector.  In bf16 sessions the activations it reads and writes
 * may be bf16 (AVX-512 only): widened exactly on load, the output rounded once on store;
 * the transforms and GEMMs stay f32, with f32 weights. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "activation.h"
#include "blocked_ops.h"
#include "steal.h"
#include "winograd.h"

#define WINO_ROWS 6        /* tiles per GEMM micro-kernel call */
/* Output channels per GEMM pass for vector width vw and ocp output channels: 6 tiles x 4
 * vectors with AVX-512 (24 accumulators of 32 registers); with AVX2 4 tiles x 3 vectors (12
 * of 16: 7 loads for 12 FMAs, where 6 x 2 took 8), or 6 x 2 where blocks of 3 would leave
 * a last block of 1 vector (32 channels: 16 + 16, not 24 + 8).  4 x 3 took whole passes to
 * GPUNet-0 0.943, GPUNet-2 0.979 and 0.929, D2 0.912, P1 0.965, GPUNet-1 1.007 of 6 x 2's
 * time (2-vCPU AVX2 EPYC, alternating rounds).  The transformed weights are laid out in
 * blocks of this many channels. */
#define WINO_OCB(vw, ocp) ((vw) == 16 ? 64 : (ocp) % 24 == 8 ? 16 : 24)
/* V and M of one block of tiles together fit 7/8 of the L2 cache (the rest for the
 * weights streaming through), between 256 KB and 1792 KB; 600 KB where the C library does
 * not know the L2's size.  Each block streams all the transformed weights again, so the
 * blocks are as large as the L2 allows: on Zen 4 (1 MB L2) 896 KB against the 600 used
 * before took GPUNet-2's 5x5 stride-2 layer from 4.82 to 4.55 ms and its 112 -> 336 ones
 * from 1.84 to 1.74 (10 alternating per-layer runs); whole passes GPUNet-2 0.992, -0 0.990,
 * -1 0.992, D1 0.986, P0 0.998 (30-40 alternating turns, docs/performance.md); 400 KB was
 * slower on both. */
/* Tiles per block at least, even where V and M then overflow the L2 budget: each block
 * streams all of U again, and with many input channels (GPUNet-2's 112 -> 336 at 46x46,
 * its 5x5 stride-2 32 -> 192 over four phases) the budget left 18 tiles a block on a
 * 512 KB L2, too few calls per slice of U for its prefetch (WINO_PREFETCH_MIN_CALLS) and
 * 3-5 MB of U from the L3 per 18 tiles.  Isolated layers, alternating calls on the 2-vCPU
 * AVX2 EPYC: 36 tiles took the 112 -> 336 layer to 0.775 and the 5x5 one to 0.898 of their
 * time (24: 0.856; 48: 0.829); whole passes in one process, alternating: GPUNet-2 0.971,
 * 0.965, 0.977, GPUNet-1 0.976, the others 0.990-1.001 (docs/performance.md). */
#define WINO_MIN_ROWS 36

static size_t
wino_l2_budget (void)
{
  const size_t l2 = gpunet_blk_l2_bytes ();
  const size_t b = l2 ? l2 / 8 * 7 : (size_t) 600 << 10;
  return b < ((size_t) 256 << 10) ? (size_t) 256 << 10
      : b > ((size_t) 1792 << 10) ? (size_t) 1792 << 10 : b;
}

struct gpunet_wino {
  int cin, cout, icp, ocp, h, w, act;
  int m;             /* output tile m x m: 4, or 3 (F(3x3, 3x3)) */
  int th, tw;        /* tiles per image, down and across */
  int rows_max;      /* tiles per block at most (multiple of WINO_ROWS) */
  int vw, ocb;       /* channel block (floats per vector: 16 AVX-512, 8 AVX2) and output
                      * channels per GEMM pass (WINO_OCB: 4, 3 or 2 vectors) */
  int alpha, ne;     /* input tile alpha x alpha: 6 for F(4x4, 3x3), 5 for F(3x3, 3x3) and
                      * F(4x4, 2x2); ne = alpha^2 */
  float *u;          /* transformed weights [ocp / ocb][urows][ocb] (ocp rounded up to ocb;
                      * rows: element e's reduction channels from uoff[e] on): each GEMM
                      * pass reads one contiguous slice; zero in padding */
  float *bias;       /* [ocp], zero padded */
  /* Input geometry.  Stride 1: the 3x3 kernel reads input rows oy - pad .. oy - pad + 2.
   * Stride 2: the input is seen as 4 phase images (even/odd rows x even/odd columns),
   * channel-stacked (virtual channel phase * cp + c, so icp = 4 cp), and the 5x5 (3x3)
   * stride-2 kernel as a 3x3 (2x2) stride-1 "valid" kernel over them. */
  int stride, pad, ih, iw, cp;
  /* The GEMM of transform element e reduces over nrng[e] ranges of the icp (virtual)
   * channels, [rng[e][2 j], rng[e][2 j + 1]) (at most one range per phase): the first cin
   * channels of each phase (stride 1: one phase), merged where contiguous (cin = cp: on
   * GPUNet-2's 32 -> 192 5x5 stride-2 layer four reductions of 32 ran 2-10% slower than one
   * of 128, isolated calls, four alternating rounds), leaving out the padding lanes
   * (GPUNet-D1's 33 -> 33 layers reduce over 33, not 48, GPUNet-1's 24 -> 96 stride-2 layer
   * over 4 x 24, not 4 x 32), and leaving out, at the elements of the last row (column) of
   * U, the phases whose virtual kernel has no last row (column): a 5x5 stride-2 kernel's
   * odd phases have 2 of the 3 taps, a 3x3 stride-2 one's 1 of 2, and G's last row (the
   * point at infinity) takes the last tap alone, so U is exactly zero there.  5x5 stride 2:
   * 121 of the 4 x 36 (element, phase) products, 3x3 stride 2: 81 of 4 x 25. */
  int nrng[64];
  int rng[64][8];
  /* U holds only those channels' rows: element e's at row uoff[e] of each block of output
   * channels, urows in all (the zero rows are not stored, nor streamed) */
  int uoff[64];
  int urows;
  size_t thread_stride;  /* floats between threads' scratch: 0 (per_thread_floats) or more */
  size_t usize;      /* floats of u */
  int in_bf, out_bf; /* the input / the output (and the residual in it) stored as bf16
                      * (gpunet_wino_set_bf16), else f32 */
};

/* Rows of U of transform element e (its reduction channels) */
static inline int
wino_urows (const gpunet_wino *p, int e)
{
  return (e + 1 < p->ne ? p->uoff[e + 1] : p->urows) - p->uoff[e];
}

/* Rows of V and M a block of cnt tiles lays out: whole micro-kernel calls (the GEMMs
 * read only rows 0 .. cnt - 1) */
static inline int
wino_block_rows (int cnt)
{
  return (cnt + WINO_ROWS - 1) / WINO_ROWS * WINO_ROWS;
}

/* Distance between the alpha^2 planes of V or M holding `floats` each: whole 64-byte lines,
 * an odd number of them.  A stride of a multiple of 2 lines maps the planes' lines to a
 * fraction of the L1 sets (6144 bytes, 12 tiles x 128 channels, hits 2 of 64), and each
 * tile's transform touches all alpha^2 planes. */
static inline size_t
wino_plane_stride (size_t floats)
{
  size_t lines = (floats + 15) / 16;
  return (lines | 1) * 16;
}

static size_t
per_thread_floats (const gpunet_wino *p)
{
  return (size_t) p->ne * (wino_plane_stride ((size_t) p->rows_max * p->icp)
      + wino_plane_stride ((size_t) p->rows_max * p->ocb));
}

/* thread t's V and M at scratch + t x this */
static size_t
thread_stride (const gpunet_wino *p)
{
  return p->thread_stride ? p->thread_stride : per_thread_floats (p);
}

size_t
gpunet_wino_scratch_floats (const gpunet_wino *p, int nt)
{
  return thread_stride (p) * (size_t) (nt > 0 ? nt : 1);
}

size_t
gpunet_wino_thread_floats (const gpunet_wino *p)
{
  return per_thread_floats (p);
}

void
gpunet_wino_set_thread_stride (gpunet_wino *p, size_t floats)
{
  if (floats >= per_thread_floats (p) && floats % 16 == 0)
    p->thread_stride = floats;
}

void
gpunet_wino_free (gpunet_wino *p)
{
  if (!p)
    return;
  free (p->u);
  free (p->bias);
  free (p);
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

/* G of F(4x4, 2x2), points 0, 1, -1, 2 (and infinity) */
static const double wino_g2[5][2] = {
  { 1.0 / 2, 0 }, { -1.0 / 2, -1.0 / 2 }, { -1.0 / 6, 1.0 / 6 }, { 1.0 / 6, 1.0 / 3 }, { 0, 1 },
};

/* G of F(3x3, 3x3), points 0, 1, -1, 2 (and infinity): F(4x4, 2x2)'s points, so the
 * input transform is its B^T */
static const double wino_g53[5][3] = {
  { 1.0 / 2, 0, 0 }, { -1.0 / 2, -1.0 / 2, -1.0 / 2 }, { -1.0 / 6, 1.0 / 6, -1.0 / 6 },
  { 1.0 / 6, 1.0 / 3, 2.0 / 3 }, { 0, 0, 1 },
};

/* G of F(4x4, 3x3), points 0, 1, -1, 2, -2 (and infinity) */
static const double wino_g[6][3] = {
  { 1.0 / 4, 0, 0 }, { -1.0 / 6, -1.0 / 6, -1.0 / 6 }, { -1.0 / 6, 1.0 / 6, -1.0 / 6 },
  { 1.0 / 24, 1.0 / 12, 1.0 / 6 }, { 1.0 / 24, -1.0 / 12, 1.0 / 6 }, { 0, 0, 1 },
};

int
gpunet_wino_available (int blk)
{
  __builtin_cpu_init ();
  if (blk == 16)
    return __builtin_cpu_supports ("avx512f") ? 1 : 0;
  if (blk == 8)
    return __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma") ? 1 : 0;
  return 0;
}

gpunet_wino *
gpunet_wino_new (const float *weight, const float *bias, int cin, int cout, int k, int stride,
    int pad, int cp, int ocp, int ih, int iw, int oh, int ow, int act, int blk, int tile)
{
  if ((blk != 16 && blk != 8) || cin < 1 || cout < 1
      || cp < cin || ocp < cout || cp % blk || ocp % blk || ih < 1 || iw < 1
      || oh < 1 || ow < 1 || pad < 0
      || !((k == 3 && stride == 1) || (k == 5 && stride == 2) || (k == 3 && stride == 2))
      || !(tile == 4 || (tile == 3 && k == 3 && stride == 1)))
    return NULL;
  if (oh != (ih + 2 * pad - k) / stride + 1 || ow != (iw + 2 * pad - k) / stride + 1)
    return NULL;
  gpunet_wino *p = calloc (1, sizeof *p);
  if (!p)
    return NULL;
  const int icp = stride == 1 ? cp : 4 * cp;
  const int r = k == 3 && stride == 2 ? 2 : 3;   /* the virtual kernel is r x r */
  /* F(4x4, 3x3) or F(3x3, 3x3), and F(4x4, 2x2) for the 3x3 stride-2 kernels */
  const int m = tile;
  const int alpha = m + r - 1;
  *p = (gpunet_wino) { .cin = cin, .cout = cout, .icp = icp, .ocp = ocp, .h = oh, .w = ow,
    .act = act, .m = m, .th = (oh + m - 1) / m, .tw = (ow + m - 1) / m, .vw = blk,
    .ocb = WINO_OCB (blk, ocp), .alpha = alpha, .ne = alpha * alpha, .stride = stride,
    .pad = pad, .ih = ih, .iw = iw, .cp = cp };
  const int phases = stride == 1 ? 1 : 4;
  for (int e = 0; e < p->ne; e++) {
    int nr = 0;
    for (int ph = 0; ph < phases; ph++) {
      /* the input tap of the virtual kernel's last row (column) in this phase */
      const int last_y = stride * (r - 1) + ph / 2, last_x = stride * (r - 1) + ph % 2;
      if ((e / alpha == alpha - 1 && last_y >= k) || (e % alpha == alpha - 1 && last_x >= k))
        continue;
      const int lo = ph * cp, hi = ph * cp + cin;
      if (nr && p->rng[e][2 * nr - 1] == lo)
        p->rng[e][2 * nr - 1] = hi;
      else {
        p->rng[e][2 * nr] = lo;
        p->rng[e][2 * nr + 1] = hi;
        nr++;
      }
    }
    p->nrng[e] = nr;
    p->uoff[e] = p->urows;
    for (int j = 0; j < nr; j++)
      p->urows += p->rng[e][2 * j + 1] - p->rng[e][2 * j];
  }
  int rows = (int) (wino_l2_budget () / ((size_t) p->ne * 4 * (icp + p->ocb)));
  rows = rows / WINO_ROWS * WINO_ROWS;
  p->rows_max = rows < WINO_MIN_ROWS ? WINO_MIN_ROWS : rows > 96 ? 96 : rows;
  const size_t n_ocb = (size_t) (ocp + p->ocb - 1) / p->ocb;
  p->usize = n_ocb * p->urows * p->ocb;
  p->u = gpunet_blk_alloc (p->usize);
  p->bias = gpunet_blk_alloc ((size_t) ocp);
  if (!p->u || !p->bias) {
    gpunet_wino_free (p);
    return NULL;
  }
  if (bias)
    memcpy (p->bias, bias, sizeof (float) * (size_t) cout);
  for (int o = 0; o < cout; o++)
    for (int ph = 0; ph < phases; ph++)
      for (int i = 0; i < cin; i++) {
        const float *kw = weight + ((size_t) o * cin + i) * k * k;
        const double *G = r == 2 ? &wino_g2[0][0] : alpha == 5 ? &wino_g53[0][0]
            : &wino_g[0][0];
        double gv[3][3], gk[8][3], u[8][8];
        for (int a = 0; a < r; a++)
          for (int b = 0; b < r; b++) {
            const int y = stride * a + ph / 2, x = stride * b + ph % 2;
            gv[a][b] = y < k && x < k ? kw[y * k + x] : 0.0;
          }
        /* u = G gv G^T */
        for (int a = 0; a < alpha; a++)
          for (int c = 0; c < r; c++) {
            double acc = 0.0;
            for (int j = 0; j < r; j++)
              acc += G[a * r + j] * gv[j][c];
            gk[a][c] = acc;
          }
        for (int a = 0; a < alpha; a++)
          for (int b = 0; b < alpha; b++) {
            double acc = 0.0;
            for (int j = 0; j < r; j++)
              acc += gk[a][j] * G[b * r + j];
            u[a][b] = acc;
          }
        const int vi = ph * cp + i;   /* virtual input channel */
        for (int e = 0; e < p->ne; e++)
          for (int j = 0, row = p->uoff[e]; j < p->nrng[e]; j++) {
            const int lo = p->rng[e][2 * j], hi = p->rng[e][2 * j + 1];
            if (vi >= lo && vi < hi)
              p->u[((size_t) (o / p->ocb) * p->urows + row + vi - lo) * p->ocb + o % p->ocb] =
                  (float) u[e / alpha][e % alpha];
            row += hi - lo;
          }
      }
  return p;
}

#define SIMD_WIDTH 16
#include "simd_begin.h"
#include "winograd_simd.h"
#include "simd_end.h"

#define SIMD_WIDTH 8
#include "simd_begin.h"
#include "winograd_simd.h"
#include "simd_end.h"

int
gpunet_wino_set_bf16 (gpunet_wino *p, int in_bf, int out_bf)
{
  if ((in_bf || out_bf) && p->vw != 16)
    return -1;
  p->in_bf = in_bf != 0;
  p->out_bf = out_bf != 0;
  return 0;
}

void
gpunet_wino_run (const gpunet_wino *p, const void *in, void *out, int n, int residual_in_dst,
    float *scratch, int nt)
{
  if (p->vw == 16)
    wino_run_avx512 (p, in, out, n, residual_in_dst, scratch, nt);
  else
    wino_run_avx2 (p, in, out, n, residual_in_dst, scratch, nt);
}

#else /* not x86 with GCC-style intrinsics: never used */

int
gpunet_wino_available (int blk)
{
  (void) blk;
  return 0;
}

gpunet_wino *
gpunet_wino_new (const float *weight, const float *bias, int cin, int cout, int k, int stride,
    int pad, int cp, int ocp, int ih, int iw, int oh, int ow, int act, int blk, int tile)
{
  (void) blk, (void) tile, (void) weight, (void) bias, (void) cin, (void) cout, (void) k, (void) stride, (void) pad;
  (void) cp, (void) ocp, (void) ih, (void) iw, (void) oh, (void) ow, (void) act;
  return NULL;
}

int
gpunet_wino_set_bf16 (gpunet_wino *p, int in_bf, int out_bf)
{
  (void) p;
  return in_bf || out_bf ? -1 : 0;
}

void
gpunet_wino_run (const gpunet_wino *p, const void *in, void *out, int n, int residual_in_dst,
    float *scratch, int nt)
{
  (void) p, (void) in, (void) out, (void) n, (void) residual_in_dst, (void) scratch, (void) nt;
}

#endif
