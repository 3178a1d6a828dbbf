/* blocked_ops.c: squeeze-excite, average pool, classifier and layout conversion over
 * channel-blocked tensors (see blocked_ops.h).  The 16- and 8-channel blocks are written
 * with a constant inner width so the compiler keeps each block in one vector register. */
#include <string.h>
#include <unistd.h>

#include <omp.h>
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#endif

#include "activation.h"
#include "blocked_ops.h"

#define PARALLEL_MIN GPUNET_BLK_PARALLEL_MIN

size_t
gpunet_blk_l2_bytes (void)
{
  static long l2;   /* a race here writes the same value */
  if (!l2) {
    long v = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
    v = sysconf (_SC_LEVEL2_CACHE_SIZE);
#endif
    l2 = v > 0 ? v : -1;
  }
  return l2 > 0 ? (size_t) l2 : 0;
}

void
gpunet_blk_relayout (const float *src, int sb, int scp, float *dst, int db, int dcp,
    int n, int c, long hw, int nt)
{
  const long total = (long) n * dcp;
#pragma omp parallel for num_threads(nt) schedule(static) if (total * hw >= PARALLEL_MIN)
  for (long bc = 0; bc < total; bc++) {
    const int b = (int) (bc / dcp), ch = (int) (bc % dcp);
    const long dbase = (long) b * dcp * hw + (long) (ch / db) * db * hw + ch % db;
    if (ch >= c) {
      for (long s = 0; s < hw; s++)
        dst[dbase + s * db] = 0.0f;
      continue;
    }
    const long sbase = (long) b * scp * hw + (long) (ch / sb) * sb * hw + ch % sb;
    for (long s = 0; s < hw; s++)
      dst[dbase + s * db] = src[sbase + s * sb];
  }
}

/* Per-channel means of one B-channel block (B = 16 or 8, a constant after inlining, so
 * the block stays in one AVX-512 or AVX2 register): mean[0..B-1].  Each lane sums its
 * channel in the same order whatever B is, so both blocks give the same bits. */
static inline __attribute__((always_inline)) void
block_mean (const float *x, long hw, float *mean, const int B)
{
  float acc[16] = { 0 };
  for (long s = 0; s < hw; s++) {
    const float *v = x + s * B;
#pragma omp simd
    for (int j = 0; j < B; j++)
      acc[j] += v[j];
  }
  for (int j = 0; j < B; j++)
    mean[j] = acc[j] / (float) hw;
}

static inline __attribute__((always_inline)) void
block_scale (float *x, long hw, const float *gate, const int B)
{
  float g[16];
  memcpy (g, gate, sizeof (float) * (size_t) B);
  for (long s = 0; s < hw; s++) {
    float *v = x + s * B;
#pragma omp simd
    for (int j = 0; j < B; j++)
      v[j] *= g[j];
  }
}

/* block_mean / block_scale for any block: the 16 and 8 ones specialised */
static void
any_block_mean (const float *x, long hw, float *mean, int blk)
{
  if (blk == 16)
    block_mean (x, hw, mean, 16);
  else if (blk == 8)
    block_mean (x, hw, mean, 8);
  else
    for (int j = 0; j < blk; j++) {
      float sum = 0.0f;
      for (long s = 0; s < hw; s++)
        sum += x[s * blk + j];
      mean[j] = sum / (float) hw;
    }
}

static void
any_block_scale (float *x, long hw, const float *gate, int blk)
{
  if (blk == 16)
    block_scale (x, hw, gate, 16);
  else if (blk == 8)
    block_scale (x, hw, gate, 8);
  else
    for (long s = 0; s < hw; s++)
      for (int j = 0; j < blk; j++)
        x[s * blk + j] *= gate[j];
}

static float
dot (const float *a, const float *b, int len)
{
  float acc = 0.0f;
#pragma omp simd reduction(+:acc)
  for (int i = 0; i < len; i++)
    acc += a[i] * b[i];
  return acc;
}

void
gpunet_blk_se (const gpunet_se_params *p, float *x, int blk, int cp, int n, float *scratch,
    int nt)
{
  const long hw = (long) p->h * p->w;
  const int nblk = cp / blk, c = p->c, rd = p->rd;
  const long stride = cp + rd;

#pragma omp parallel num_threads(nt) if ((long) n * cp * hw >= PARALLEL_MIN)
  {
    /* 1. per-channel means (padded channels give 0 and are never read below) */
#pragma omp for schedule(static)
    for (long bb = 0; bb < (long) n * nblk; bb++) {
      const int b = (int) (bb / nblk), k = (int) (bb % nblk);
      const float *xb = x + (long) b * cp * hw + (long) k * blk * hw;
      float *mean = scratch + b * stride + (long) k * blk;
      any_block_mean (xb, hw, mean, blk);
    }
    /* 2. reduce: rd outputs per image */
#pragma omp for schedule(static)
    for (long br = 0; br < (long) n * rd; br++) {
      const int b = (int) (br / rd), r = (int) (br % rd);
      const float *mean = scratch + b * stride;
      const float acc = dot (p->w_reduce + (long) r * c, mean, c);
      scratch[b * stride + cp + r] = gpunet_activate (acc + p->b_reduce[r], p->act);
    }
    /* 3. expand + sigmoid gate for one block of channels, then scale that block */
#pragma omp for schedule(static)
    for (long bb = 0; bb < (long) n * nblk; bb++) {
      const int b = (int) (bb / nblk), k = (int) (bb % nblk);
      const float *mid = scratch + b * stride + cp;
      float gate[16];
      for (int j = 0; j < blk; j++) {
        const int ch = k * blk + j;
        gate[j] = ch < c
            ? gpunet_sigmoid (dot (p->w_expand + (long) ch * rd, mid, rd) + p->b_expand[ch])
            : 0.0f;
      }
      float *xb = x + (long) b * cp * hw + (long) k * blk * hw;
      any_block_scale (xb, hw, gate, blk);
    }
  }
}

void
gpunet_blk_avgpool (const gpunet_avgpool_params *p, const float *in, int blk, int cp,
    float *out, int n, int nt)
{
  const long hw = (long) p->h * p->w;
  const int nblk = cp / blk, c = p->c;
#pragma omp parallel for num_threads(nt) schedule(static) if ((long) n * cp * hw >= PARALLEL_MIN)
  for (long bb = 0; bb < (long) n * nblk; bb++) {
    const int b = (int) (bb / nblk), k = (int) (bb % nblk);
    const float *xb = in + (long) b * cp * hw + (long) k * blk * hw;
    float mean[16];
    any_block_mean (xb, hw, mean, blk);
    for (int j = 0; j < blk && k * blk + j < c; j++)
      out[(long) b * c + k * blk + j] = mean[j];
  }
}

void
gpunet_blk_linear (const gpunet_linear_params *p, const float *in, int in_cp, float *out,
    int n, int nt)
{
#pragma omp parallel for num_threads(nt) schedule(static) \
    if ((long) n * p->cout * p->cin >= 4 * PARALLEL_MIN)
  for (long bo = 0; bo < (long) n * p->cout; bo++) {
    const int b = (int) (bo / p->cout), o = (int) (bo % p->cout);
    const float acc = dot (p->weight + (long) o * p->cin, in + (long) b * in_cp, p->cin);
    out[bo] = gpunet_activate (acc + (p->bias ? p->bias[o] : 0.0f), p->act);
  }
}
