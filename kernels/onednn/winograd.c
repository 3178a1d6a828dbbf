/* winograd.c: Winograd F(4x4, 3x3) and F(6x6, 3x3) on nChw16c activations with AVX-512
 * (see winograd.h).
 *
 * Transforms (Lavin and Gray, interpolation points 0, 1, -1, 2, -2, infinity):
 *   Y = A^T [ (G g G^T) (.) (B^T d B) ] A,  d: 6x6 input patch, g: 3x3 kernel, Y: 4x4.
 * Work per 4x4 output tile and input/output channel pair: 36 multiply-adds instead of 144.
 * F(6x6, 3x3) (points 0, 1, -1, 2, -2, 1/2, -1/2, infinity; 8x8 input patches) needs 64 per
 * 6x6 tile, 1.78 per output instead of 2.25, but its transformed weights are 1.8x larger:
 * it is used where they fit a core's L2 (WINO_F6_MAX_U_BYTES), since the weights are
 * streamed again for every block of tiles (measured: 12-15% faster on GPUNet-2's 32->32
 * layers, 25% slower on its 112->336 ones with F6 everywhere).
 * A 5x5 stride-2 convolution is run as a 3x3 stride-1 one over the four phase images of
 * its input (Winograd on the polyphase decomposition): 4 x 36 multiply-adds per 4x4 tile
 * instead of 16 x 25, 2.8x fewer.  A 3x3 stride-2 one likewise becomes a 2x2 kernel over
 * the phases, run as F(4x4, 2x2) (5x5 input tiles, points 0, 1, -1, 2): 4 x 25 instead of
 * 16 x 9, 1.44x fewer.
 * The weight transform is done once in double precision; the input and output transforms
 * in float, 16 channels per vector. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "activation.h"
#include "winograd.h"

#define WINO_OCB 64        /* output channels per GEMM pass: 4 vectors */
#define WINO_ROWS 6        /* tiles per GEMM micro-kernel call */
/* V and M of one block of tiles together fit this many bytes (of a 1-2 MiB L2). */
#define WINO_L2_BUDGET (600 * 1024)
/* F(6x6, 3x3) while its transformed weights take at most this many bytes */
#define WINO_F6_MAX_U_BYTES (1024 * 1024)

struct gpunet_wino {
  int cin, cout, icp, ocp, h, w, act;
  int m;             /* output tile m x m: 4, or 6 for F(6x6, 3x3) */
  int th, tw;        /* tiles per image, down and across */
  int rows_max;      /* tiles per block at most (multiple of WINO_ROWS) */
  int alpha, ne;     /* input tile alpha x alpha: 6 for F(4x4, 3x3), 8 for F(6x6, 3x3), 5 for
                      * F(4x4, 2x2); ne = alpha^2 */
  float *u;          /* transformed weights [ne][icp][ocp], zero in padded channels */
  float *bias;       /* [ocp], zero padded */
  /* Input geometry.  Stride 1: the 3x3 kernel reads input rows oy - pad .. oy - pad + 2.
   * Stride 2: the input is seen as 4 phase images (even/odd rows x even/odd columns),
   * channel-stacked (virtual channel phase * cp + c, so icp = 4 cp), and the 5x5 (3x3)
   * stride-2 kernel as a 3x3 (2x2) stride-1 "valid" kernel over them. */
  int stride, pad, ih, iw, cp;
};

static size_t
per_thread_floats (const gpunet_wino *p)
{
  return (size_t) p->ne * p->rows_max * ((size_t) p->icp + WINO_OCB);
}

size_t
gpunet_wino_scratch_floats (const gpunet_wino *p, int nt)
{
  return per_thread_floats (p) * (size_t) (nt > 0 ? nt : 1);
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

#include <immintrin.h>

/* G of F(4x4, 2x2), points 0, 1, -1, 2 (and infinity) */
static const double wino_g2[5][2] = {
  { 1.0 / 2, 0 }, { -1.0 / 2, -1.0 / 2 }, { -1.0 / 6, 1.0 / 6 }, { 1.0 / 6, 1.0 / 3 }, { 0, 1 },
};

/* G of F(4x4, 3x3), points 0, 1, -1, 2, -2 (and infinity) */
static const double wino_g[6][3] = {
  { 1.0 / 4, 0, 0 }, { -1.0 / 6, -1.0 / 6, -1.0 / 6 }, { -1.0 / 6, 1.0 / 6, -1.0 / 6 },
  { 1.0 / 24, 1.0 / 12, 1.0 / 6 }, { 1.0 / 24, -1.0 / 12, 1.0 / 6 }, { 0, 0, 1 },
};

/* G of F(6x6, 3x3), points 0, 1, -1, 2, -2, 1/2, -1/2 (and infinity); row 0 negated
 * together with row 0 of B^T (wino_bt8) */
static const double wino_g8[8][3] = {
  { 1, 0, 0 }, { -2.0 / 9, -2.0 / 9, -2.0 / 9 }, { -2.0 / 9, 2.0 / 9, -2.0 / 9 },
  { 1.0 / 90, 1.0 / 45, 2.0 / 45 }, { 1.0 / 90, -1.0 / 45, 2.0 / 45 },
  { 32.0 / 45, 16.0 / 45, 8.0 / 45 }, { 32.0 / 45, -16.0 / 45, 8.0 / 45 }, { 0, 0, 1 },
};

static void *
alloc64 (size_t floats)
{
  size_t bytes = (floats * sizeof (float) + 63) / 64 * 64;
  void *m = aligned_alloc (64, bytes ? bytes : 64);
  if (m)
    memset (m, 0, bytes ? bytes : 64);
  return m;
}

int
gpunet_wino_available (void)
{
  __builtin_cpu_init ();
  return __builtin_cpu_supports ("avx512f") ? 1 : 0;
}

gpunet_wino *
gpunet_wino_new (const float *weight, const float *bias, int cin, int cout, int k, int stride,
    int pad, int cp, int ocp, int ih, int iw, int oh, int ow, int act, int tile)
{
  if ((tile != 0 && tile != 4 && tile != 6) || cin < 1 || cout < 1 || cp < cin || ocp < cout || cp % 16 || ocp % 16 || ih < 1 || iw < 1
      || oh < 1 || ow < 1 || pad < 0
      || !((k == 3 && stride == 1) || (k == 5 && stride == 2) || (k == 3 && stride == 2)))
    return NULL;
  if (oh != (ih + 2 * pad - k) / stride + 1 || ow != (iw + 2 * pad - k) / stride + 1)
    return NULL;
  gpunet_wino *p = calloc (1, sizeof *p);
  if (!p)
    return NULL;
  const int icp = stride == 1 ? cp : 4 * cp;
  const int r = k == 3 && stride == 2 ? 2 : 3;   /* the virtual kernel is r x r */
  /* F(6x6, 3x3) needs 64 / 36 = 1.78 multiplies per output instead of 2.25 and fewer
   * transform loads per output, but 64 / 36 times the transformed weights, which every
   * block of tiles streams through: it is chosen while those fit the L2 cache
   * (docs/performance.md).  F(4x4, 2x2) stays for the 3x3 stride-2 kernels. */
  const int m = r == 2 ? 4 : tile ? tile
      : (size_t) 64 * icp * ocp * sizeof (float) <= WINO_F6_MAX_U_BYTES ? 6 : 4;
  const int alpha = m + r - 1;
  *p = (gpunet_wino) { cin, cout, icp, ocp, oh, ow, act, m, (oh + m - 1) / m, (ow + m - 1) / m, 0,
    alpha, alpha * alpha, NULL, NULL, stride, pad, ih, iw, cp };
  int rows = WINO_L2_BUDGET / (p->ne * 4 * (icp + WINO_OCB));
  rows = rows / WINO_ROWS * WINO_ROWS;
  p->rows_max = rows < WINO_ROWS ? WINO_ROWS : rows > 96 ? 96 : rows;
  p->u = alloc64 ((size_t) p->ne * icp * ocp);
  p->bias = alloc64 ((size_t) ocp);
  if (!p->u || !p->bias) {
    gpunet_wino_free (p);
    return NULL;
  }
  if (bias)
    memcpy (p->bias, bias, sizeof (float) * (size_t) cout);
  const int phases = stride == 1 ? 1 : 4;
  for (int o = 0; o < cout; o++)
    for (int ph = 0; ph < phases; ph++)
      for (int i = 0; i < cin; i++) {
        const float *kw = weight + ((size_t) o * cin + i) * k * k;
        const double *G = r == 2 ? &wino_g2[0][0] : alpha == 8 ? &wino_g8[0][0] : &wino_g[0][0];
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
          p->u[((size_t) e * icp + vi) * ocp + o] = (float) u[e / alpha][e % alpha];
      }
  return p;
}

#pragma GCC push_options
#pragma GCC target("avx512f")

/* out[0..5] = B^T in[0..5] */
static inline __attribute__((always_inline)) void
wino_bt (const __m512 *d, __m512 *o)
{
  const __m512 four = _mm512_set1_ps (4.0f), five = _mm512_set1_ps (5.0f),
      two = _mm512_set1_ps (2.0f);
  const __m512 d4_4d2 = _mm512_fnmadd_ps (four, d[2], d[4]);       /* d4 - 4 d2 */
  const __m512 d3_4d1 = _mm512_fnmadd_ps (four, d[1], d[3]);       /* d3 - 4 d1 */
  const __m512 d4_d2 = _mm512_sub_ps (d[4], d[2]);
  const __m512 d3_d1 = _mm512_mul_ps (two, _mm512_sub_ps (d[3], d[1]));
  o[0] = _mm512_add_ps (_mm512_fnmadd_ps (five, d[2], d[4]), _mm512_mul_ps (four, d[0]));
  o[1] = _mm512_add_ps (d4_4d2, d3_4d1);
  o[2] = _mm512_sub_ps (d4_4d2, d3_4d1);
  o[3] = _mm512_add_ps (d4_d2, d3_d1);
  o[4] = _mm512_sub_ps (d4_d2, d3_d1);
  o[5] = _mm512_add_ps (_mm512_fnmadd_ps (five, d[3], d[5]), _mm512_mul_ps (four, d[1]));
}

/* out[0..3] = A^T in[0..5] */
static inline __attribute__((always_inline)) void
wino_at (const __m512 *m, __m512 *o)
{
  const __m512 a = _mm512_add_ps (m[1], m[2]), b = _mm512_sub_ps (m[1], m[2]);
  const __m512 c = _mm512_add_ps (m[3], m[4]), d = _mm512_sub_ps (m[3], m[4]);
  o[0] = _mm512_add_ps (_mm512_add_ps (m[0], a), c);
  o[1] = _mm512_fmadd_ps (_mm512_set1_ps (2.0f), d, b);
  o[2] = _mm512_fmadd_ps (_mm512_set1_ps (4.0f), c, a);
  o[3] = _mm512_add_ps (_mm512_fmadd_ps (_mm512_set1_ps (8.0f), d, b), m[5]);
}

/* out[0..7] = B^T in[0..7] of F(6x6, 3x3) (row 0 negated, see wino_g8): rows 2j - 1 and
 * 2j (points +a, -a) share their even part E and odd part O as E + O and E - O. */
static inline __attribute__((always_inline)) void
wino_bt8 (const __m512 *d, __m512 *o)
{
  const __m512 c525 = _mm512_set1_ps (5.25f), c425 = _mm512_set1_ps (4.25f);
  const __m512 c4 = _mm512_set1_ps (4.0f), c5 = _mm512_set1_ps (5.0f), c2 = _mm512_set1_ps (2.0f);
  const __m512 c25 = _mm512_set1_ps (2.5f), c125 = _mm512_set1_ps (1.25f);
  const __m512 c05 = _mm512_set1_ps (0.5f), c025 = _mm512_set1_ps (0.25f);
  /* d0 - 5.25 d2 + 5.25 d4 - d6 and d7 - d1 + 5.25 (d3 - d5) */
  o[0] = _mm512_fmadd_ps (c525, _mm512_sub_ps (d[4], d[2]), _mm512_sub_ps (d[0], d[6]));
  o[7] = _mm512_fmadd_ps (c525, _mm512_sub_ps (d[3], d[5]), _mm512_sub_ps (d[7], d[1]));
  /* +-1: (d2 - 4.25 d4 + d6) +- (d1 - 4.25 d3 + d5) */
  __m512 e = _mm512_fnmadd_ps (c425, d[4], _mm512_add_ps (d[2], d[6]));
  __m512 q = _mm512_fnmadd_ps (c425, d[3], _mm512_add_ps (d[1], d[5]));
  o[1] = _mm512_add_ps (e, q);
  o[2] = _mm512_sub_ps (e, q);
  /* +-2: (0.25 d2 - 1.25 d4 + d6) +- (0.5 d1 - 2.5 d3 + 2 d5) */
  e = _mm512_fnmadd_ps (c125, d[4], _mm512_fmadd_ps (c025, d[2], d[6]));
  q = _mm512_fnmadd_ps (c25, d[3], _mm512_fmadd_ps (c05, d[1], _mm512_mul_ps (c2, d[5])));
  o[3] = _mm512_add_ps (e, q);
  o[4] = _mm512_sub_ps (e, q);
  /* +-1/2: (4 d2 - 5 d4 + d6) +- (2 d1 - 2.5 d3 + 0.5 d5) */
  e = _mm512_fnmadd_ps (c5, d[4], _mm512_fmadd_ps (c4, d[2], d[6]));
  q = _mm512_fnmadd_ps (c25, d[3], _mm512_fmadd_ps (c2, d[1], _mm512_mul_ps (c05, d[5])));
  o[5] = _mm512_add_ps (e, q);
  o[6] = _mm512_sub_ps (e, q);
}

/* out[0..5] = A^T in[0..7] of F(6x6, 3x3) */
static inline __attribute__((always_inline)) void
wino_at8 (const __m512 *m, __m512 *o)
{
  const __m512 s1 = _mm512_add_ps (m[1], m[2]), d1 = _mm512_sub_ps (m[1], m[2]);
  const __m512 s2 = _mm512_add_ps (m[3], m[4]), d2 = _mm512_sub_ps (m[3], m[4]);
  const __m512 s3 = _mm512_add_ps (m[5], m[6]), d3 = _mm512_sub_ps (m[5], m[6]);
  o[0] = _mm512_add_ps (_mm512_add_ps (m[0], s1), _mm512_add_ps (s2, s3));
  o[1] = _mm512_fmadd_ps (_mm512_set1_ps (2.0f), d2, _mm512_fmadd_ps (_mm512_set1_ps (0.5f), d3, d1));
  o[2] = _mm512_fmadd_ps (_mm512_set1_ps (4.0f), s2, _mm512_fmadd_ps (_mm512_set1_ps (0.25f), s3, s1));
  o[3] = _mm512_fmadd_ps (_mm512_set1_ps (8.0f), d2, _mm512_fmadd_ps (_mm512_set1_ps (0.125f), d3, d1));
  o[4] = _mm512_fmadd_ps (_mm512_set1_ps (16.0f), s2, _mm512_fmadd_ps (_mm512_set1_ps (0.0625f), s3, s1));
  o[5] = _mm512_add_ps (_mm512_fmadd_ps (_mm512_set1_ps (32.0f), d2,
      _mm512_fmadd_ps (_mm512_set1_ps (0.03125f), d3, d1)), m[7]);
}

/* out[0..4] = B^T in[0..4] of F(4x4, 2x2) */
static inline __attribute__((always_inline)) void
wino_bt5 (const __m512 *d, __m512 *o)
{
  const __m512 two = _mm512_set1_ps (2.0f), three = _mm512_set1_ps (3.0f);
  const __m512 d3_d2 = _mm512_sub_ps (d[3], d[2]);
  o[0] = _mm512_add_ps (_mm512_fmadd_ps (two, _mm512_sub_ps (d[0], d[2]), d[3]), _mm512_sub_ps (_mm512_setzero_ps (), d[1]));
  o[1] = _mm512_fnmadd_ps (two, d[1], d3_d2);                          /* -2 d1 - d2 + d3 */
  o[2] = _mm512_fnmadd_ps (three, d[2], _mm512_fmadd_ps (two, d[1], d[3]));  /* 2 d1 - 3 d2 + d3 */
  o[3] = _mm512_sub_ps (d[3], d[1]);
  o[4] = _mm512_add_ps (_mm512_fmadd_ps (two, _mm512_sub_ps (d[1], d[3]), d[4]), _mm512_sub_ps (_mm512_setzero_ps (), d[2]));
}

/* out[0..3] = A^T in[0..4] of F(4x4, 2x2) */
static inline __attribute__((always_inline)) void
wino_at5 (const __m512 *m, __m512 *o)
{
  const __m512 a = _mm512_add_ps (m[1], m[2]), b = _mm512_sub_ps (m[1], m[2]);
  o[0] = _mm512_add_ps (_mm512_add_ps (m[0], a), m[3]);
  o[1] = _mm512_fmadd_ps (_mm512_set1_ps (2.0f), m[3], b);
  o[2] = _mm512_fmadd_ps (_mm512_set1_ps (4.0f), m[3], a);
  o[3] = _mm512_add_ps (_mm512_fmadd_ps (_mm512_set1_ps (8.0f), m[3], b), m[4]);
}

/* exp(x) to about 1 ulp for |x| <= 88 (Cody-Waite reduction, degree-6 polynomial). */
static inline __attribute__((always_inline)) __m512
wino_exp (__m512 x)
{
  x = _mm512_max_ps (_mm512_min_ps (x, _mm512_set1_ps (88.0f)), _mm512_set1_ps (-88.0f));
  const __m512 n = _mm512_roundscale_ps (_mm512_mul_ps (x, _mm512_set1_ps (1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps (n, _mm512_set1_ps (0.693359375f), x);
  r = _mm512_fnmadd_ps (n, _mm512_set1_ps (-2.12194440e-4f), r);
  __m512 q = _mm512_set1_ps (1.9875691500e-4f);
  q = _mm512_fmadd_ps (q, r, _mm512_set1_ps (1.3981999507e-3f));
  q = _mm512_fmadd_ps (q, r, _mm512_set1_ps (8.3334519073e-3f));
  q = _mm512_fmadd_ps (q, r, _mm512_set1_ps (4.1665795894e-2f));
  q = _mm512_fmadd_ps (q, r, _mm512_set1_ps (1.6666665459e-1f));
  q = _mm512_fmadd_ps (q, r, _mm512_set1_ps (5.0000001201e-1f));
  const __m512 y = _mm512_add_ps (_mm512_fmadd_ps (_mm512_mul_ps (q, r), r, r), _mm512_set1_ps (1.0f));
  return _mm512_scalef_ps (y, n);
}

static inline __attribute__((always_inline)) __m512
wino_act (__m512 x, int act)
{
  if (act == GPUNET_EPI_RELU)
    return _mm512_max_ps (x, _mm512_setzero_ps ());
  if (act == GPUNET_EPI_SWISH) {
    /* x / (1 + exp(-x)): reciprocal estimate (14 bits) and one Newton step (about 28
     * bits) instead of a division, which is several times slower */
    const __m512 d = _mm512_add_ps (_mm512_set1_ps (1.0f),
        wino_exp (_mm512_sub_ps (_mm512_setzero_ps (), x)));
    __m512 r = _mm512_rcp14_ps (d);
    r = _mm512_mul_ps (r, _mm512_fnmadd_ps (d, r, _mm512_set1_ps (2.0f)));
    return _mm512_mul_ps (x, r);
  }
  return x;
}

/* M rows 0..5 (stride nv * 16) = V rows 0..5 (stride icp) x U (icp x nv*16, stride ocp). */
static inline __attribute__((always_inline)) void
wino_gemm_6xN (const float *v, int icp, const float *u, int ocp, float *m, const int nv)
{
  __m512 c[WINO_ROWS][4];
#pragma GCC unroll 6
  for (int r = 0; r < WINO_ROWS; r++)
#pragma GCC unroll 4
    for (int j = 0; j < nv; j++)
      c[r][j] = _mm512_setzero_ps ();
  for (int i = 0; i < icp; i++) {
    __m512 b[4];
#pragma GCC unroll 4
    for (int j = 0; j < nv; j++)
      b[j] = _mm512_load_ps (u + (size_t) i * ocp + 16 * j);
#pragma GCC unroll 6
    for (int r = 0; r < WINO_ROWS; r++) {
      const __m512 a = _mm512_set1_ps (v[(size_t) r * icp + i]);
#pragma GCC unroll 4
      for (int j = 0; j < nv; j++)
        c[r][j] = _mm512_fmadd_ps (a, b[j], c[r][j]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < WINO_ROWS; r++)
#pragma GCC unroll 4
    for (int j = 0; j < nv; j++)
      _mm512_store_ps (m + (size_t) r * 16 * nv + 16 * j, c[r][j]);
}

static void
wino_gemm_6x4 (const float *v, int icp, const float *u, int ocp, float *m)
{
  wino_gemm_6xN (v, icp, u, ocp, m, 4);
}

static void
wino_gemm_6x3 (const float *v, int icp, const float *u, int ocp, float *m)
{
  wino_gemm_6xN (v, icp, u, ocp, m, 3);
}

static void
wino_gemm_6x2 (const float *v, int icp, const float *u, int ocp, float *m)
{
  wino_gemm_6xN (v, icp, u, ocp, m, 2);
}

static void
wino_gemm_6x1 (const float *v, int icp, const float *u, int ocp, float *m)
{
  wino_gemm_6xN (v, icp, u, ocp, m, 1);
}

/* V[e][j][icp] (e stride rows * icp) for tiles t0 .. t0 + cnt - 1, A x A input tiles
 * (A = alpha); rows cnt .. rows - 1 are zeroed.  Virtual channel block CB reads real block
 * CB % (cp / 16) of phase CB / (cp / 16): input row stride * (oy + i) + phase / 2 - pad
 * for patch row i of the tile at output row oy (stride 1: phase 0, so oy + i - pad). */
static inline __attribute__((always_inline)) void
wino_input_t (const gpunet_wino *p, const float *in, int t0, int cnt, int rows, float *V,
    const int A)
{
  const int IH = p->ih, IW = p->iw, icp = p->icp, per_img = p->th * p->tw, s = p->stride;
  const int cbs = p->cp / 16;
  const size_t plane = (size_t) IH * IW * 16, e_stride = (size_t) rows * icp;
  for (int j = 0; j < cnt; j++) {
    const int t = t0 + j, b = t / per_img, r = t % per_img;
    const int oy = r / p->tw * p->m, ox = r % p->tw * p->m;
    const float *img = in + (size_t) b * p->cp * IH * IW;
    for (int CB = 0; CB < icp / 16; CB++) {
      const int ph = CB / cbs, cb = CB % cbs;
      const int y0 = s * oy + ph / 2 - p->pad, x0 = s * ox + ph % 2 - p->pad;
      const int inside = y0 >= 0 && x0 >= 0 && y0 + (A - 1) * s < IH && x0 + (A - 1) * s < IW;
      const float *src = img + (size_t) cb * plane;
      __m512 d[8][8], t6[8][8];
      if (inside) {
        const float *p0 = src + ((size_t) y0 * IW + x0) * 16;
        for (int i = 0; i < A; i++)
          for (int k = 0; k < A; k++)
            d[i][k] = _mm512_load_ps (p0 + ((size_t) (s * i) * IW + s * k) * 16);
      } else
        for (int i = 0; i < A; i++)
          for (int k = 0; k < A; k++) {
            const int y = y0 + s * i, x = x0 + s * k;
            d[i][k] = y >= 0 && y < IH && x >= 0 && x < IW
                ? _mm512_load_ps (src + ((size_t) y * IW + x) * 16) : _mm512_setzero_ps ();
          }
      for (int k = 0; k < A; k++) {
        __m512 col[8], o[8];
        for (int i = 0; i < A; i++)
          col[i] = d[i][k];
        if (A == 8)
          wino_bt8 (col, o);
        else if (A == 6)
          wino_bt (col, o);
        else
          wino_bt5 (col, o);
        for (int i = 0; i < A; i++)
          t6[i][k] = o[i];
      }
      float *dst = V + (size_t) j * icp + (size_t) CB * 16;
      for (int i = 0; i < A; i++) {
        __m512 o[8];
        if (A == 8)
          wino_bt8 (t6[i], o);
        else if (A == 6)
          wino_bt (t6[i], o);
        else
          wino_bt5 (t6[i], o);
        for (int k = 0; k < A; k++)
          _mm512_store_ps (dst + (size_t) (i * A + k) * e_stride, o[k]);
      }
    }
  }
  if (cnt < rows)
    for (int e = 0; e < A * A; e++)
      memset (V + e * e_stride + (size_t) cnt * icp, 0, sizeof (float) * (size_t) (rows - cnt) * icp);
}

static void
wino_input6 (const gpunet_wino *p, const float *in, int t0, int cnt, int rows, float *V)
{
  wino_input_t (p, in, t0, cnt, rows, V, 6);
}

static void
wino_input8 (const gpunet_wino *p, const float *in, int t0, int cnt, int rows, float *V)
{
  wino_input_t (p, in, t0, cnt, rows, V, 8);
}

static void
wino_input5 (const gpunet_wino *p, const float *in, int t0, int cnt, int rows, float *V)
{
  wino_input_t (p, in, t0, cnt, rows, V, 5);
}

/* Output channels oc0 .. oc0 + 16 nv - 1 of tiles t0 .. t0 + cnt - 1 from
 * M[e][j][16 nv] (e stride rows * 16 nv), A x A tiles (A = alpha). */
static inline __attribute__((always_inline)) void
wino_output_t (const gpunet_wino *p, const float *M, int rows, int t0, int cnt, int oc0, int nv,
    float *out, int residual, const int A)
{
  const int H = p->h, W = p->w, ocp = p->ocp, per_img = p->th * p->tw, act = p->act;
  const size_t plane = (size_t) H * W * 16, e_stride = (size_t) rows * 16 * nv;
  for (int j = 0; j < cnt; j++) {
    const int t = t0 + j, b = t / per_img, r = t % per_img;
    const int mt = A == 8 ? 6 : 4;   /* output tile mt x mt */
    const int oy = r / p->tw * mt, ox = r % p->tw * mt;
    const int ny = H - oy < mt ? H - oy : mt, nx = W - ox < mt ? W - ox : mt;
    for (int v = 0; v < nv; v++) {
      const int cb = oc0 / 16 + v;
      const float *src = M + (size_t) j * 16 * nv + 16 * v;
      __m512 s4[6][8];
      for (int k = 0; k < A; k++) {
        __m512 col[8], o[6];
        for (int i = 0; i < A; i++)
          col[i] = _mm512_load_ps (src + (size_t) (i * A + k) * e_stride);
        if (A == 8)
          wino_at8 (col, o);
        else if (A == 6)
          wino_at (col, o);
        else
          wino_at5 (col, o);
        for (int i = 0; i < mt; i++)
          s4[i][k] = o[i];
      }
      const __m512 bias = _mm512_load_ps (p->bias + (size_t) cb * 16);
      float *dst = out + (size_t) b * ocp * H * W + (size_t) cb * plane;
      for (int i = 0; i < ny; i++) {
        __m512 y[6];
        if (A == 8)
          wino_at8 (s4[i], y);
        else if (A == 6)
          wino_at (s4[i], y);
        else
          wino_at5 (s4[i], y);
        for (int k = 0; k < nx; k++) {
          float *q = dst + ((size_t) (oy + i) * W + ox + k) * 16;
          __m512 val = wino_act (_mm512_add_ps (y[k], bias), act);
          if (residual)
            val = _mm512_add_ps (val, _mm512_load_ps (q));
          _mm512_store_ps (q, val);
        }
      }
    }
  }
}

static void
wino_output6 (const gpunet_wino *p, const float *M, int rows, int t0, int cnt, int oc0, int nv,
    float *out, int residual)
{
  wino_output_t (p, M, rows, t0, cnt, oc0, nv, out, residual, 6);
}

static void
wino_output8 (const gpunet_wino *p, const float *M, int rows, int t0, int cnt, int oc0, int nv,
    float *out, int residual)
{
  wino_output_t (p, M, rows, t0, cnt, oc0, nv, out, residual, 8);
}

static void
wino_output5 (const gpunet_wino *p, const float *M, int rows, int t0, int cnt, int oc0, int nv,
    float *out, int residual)
{
  wino_output_t (p, M, rows, t0, cnt, oc0, nv, out, residual, 5);
}

void
gpunet_wino_run (const gpunet_wino *p, const float *in, float *out, int n, int residual_in_dst,
    float *scratch, int nt)
{
  if (nt < 1)
    nt = 1;
  const int T = n * p->th * p->tw;
  int nblk = (T + p->rows_max - 1) / p->rows_max;
  nblk = (nblk + nt - 1) / nt * nt;   /* whole rounds of blocks for the threads */
  if (nblk > T)
    nblk = T;
  const int tb = (T + nblk - 1) / nblk;
  const size_t per = per_thread_floats (p);
#pragma omp parallel num_threads(nt)
  {
    float *V = scratch + per * (size_t) omp_get_thread_num ();
    float *M = V + (size_t) p->ne * p->rows_max * p->icp;
#pragma omp for schedule(dynamic, 1)
    for (int blk = 0; blk < nblk; blk++) {
      const int t0 = blk * tb, cnt = T - t0 < tb ? T - t0 : tb;
      if (cnt <= 0)
        continue;
      const int rows = (cnt + WINO_ROWS - 1) / WINO_ROWS * WINO_ROWS;
      if (p->alpha == 8)
        wino_input8 (p, in, t0, cnt, rows, V);
      else if (p->alpha == 6)
        wino_input6 (p, in, t0, cnt, rows, V);
      else
        wino_input5 (p, in, t0, cnt, rows, V);
      for (int oc0 = 0; oc0 < p->ocp; oc0 += WINO_OCB) {
        const int nv = (p->ocp - oc0) / 16 < 4 ? (p->ocp - oc0) / 16 : 4;
        void (*gemm) (const float *, int, const float *, int, float *) =
            nv == 4 ? wino_gemm_6x4 : nv == 3 ? wino_gemm_6x3 : nv == 2 ? wino_gemm_6x2 : wino_gemm_6x1;
        for (int e = 0; e < p->ne; e++) {
          const float *ue = p->u + (size_t) e * p->icp * p->ocp + oc0;
          const float *ve = V + (size_t) e * rows * p->icp;
          float *me = M + (size_t) e * rows * 16 * nv;
          for (int r = 0; r < rows; r += WINO_ROWS)
            gemm (ve + (size_t) r * p->icp, p->icp, ue, p->ocp, me + (size_t) r * 16 * nv);
        }
        if (p->alpha == 8)
          wino_output8 (p, M, rows, t0, cnt, oc0, nv, out, residual_in_dst);
        else if (p->alpha == 6)
          wino_output6 (p, M, rows, t0, cnt, oc0, nv, out, residual_in_dst);
        else
          wino_output5 (p, M, rows, t0, cnt, oc0, nv, out, residual_in_dst);
      }
    }
  }
}

#pragma GCC pop_options

#else /* not x86 with GCC-style intrinsics: never used */

int
gpunet_wino_available (void)
{
  return 0;
}

gpunet_wino *
gpunet_wino_new (const float *weight, const float *bias, int cin, int cout, int k, int stride,
    int pad, int cp, int ocp, int ih, int iw, int oh, int ow, int act, int tile)
{
  (void) tile, (void) weight, (void) bias, (void) cin, (void) cout, (void) k, (void) stride, (void) pad;
  (void) cp, (void) ocp, (void) ih, (void) iw, (void) oh, (void) ow, (void) act;
  return NULL;
}

void
gpunet_wino_run (const gpunet_wino *p, const float *in, float *out, int n, int residual_in_dst,
    float *scratch, int nt)
{
  (void) p, (void) in, (void) out, (void) n, (void) residual_in_dst, (void) scratch, (void) nt;
}

#endif
