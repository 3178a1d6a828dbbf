/* se.c: squeeze-excite on channel-blocked activations (see se.h).
 *
 * Layouts, VW = 16 or 8 floats per vector, rp = rd rounded up to VW:
 *   wr[c][rp]          reduce weights transposed: mid[r .. r + VW) += mean[c] wr[c][r ..]
 *   we[cp / VW][rd][VW] expand weights per channel block: gate[blk] += mid[r] we[blk][r]
 * zero in every padding lane, so padded channels get a gate of sigmoid(0) times x = 0.
 * Against the reference op (kernels/ref: per-output dot products, expf) results differ by
 * rounding only. */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "activation.h"
#include "blocked_ops.h"
#include "se.h"


struct gpunet_se {
  int c, cp, rd, rp, hw, act, vw, max_batch;
  float *wr, *br;      /* [c][rp], [rp] */
  float *we, *be;      /* [cp / vw][rd][vw], [cp] */
  float *means, *mid;  /* [max_batch][cp], [max_batch][rp] */
};

void
gpunet_se_free (gpunet_se *q)
{
  if (!q)
    return;
  free (q->wr);
  free (q->br);
  free (q->we);
  free (q->be);
  free (q->means);
  free (q->mid);
  free (q);
}

gpunet_se *
gpunet_se_new (const gpunet_se_params *p, int cp, int blk, int max_batch)
{
  if ((blk != 16 && blk != 8) || cp % blk || cp < p->c || p->c < 1 || p->rd < 1 || p->h < 1
      || p->w < 1 || max_batch < 1)
    return NULL;
  gpunet_se *q = calloc (1, sizeof *q);
  if (!q)
    return NULL;
  const int rp = gpunet_blk_pad (p->rd, blk);
  *q = (gpunet_se) { .c = p->c, .cp = cp, .rd = p->rd, .rp = rp, .hw = p->h * p->w,
    .act = p->act, .vw = blk, .max_batch = max_batch };
  q->wr = gpunet_blk_alloc ((size_t) p->c * rp);
  q->br = gpunet_blk_alloc ((size_t) rp);
  q->we = gpunet_blk_alloc ((size_t) cp * p->rd);
  q->be = gpunet_blk_alloc ((size_t) cp);
  q->means = gpunet_blk_alloc ((size_t) max_batch * cp);
  q->mid = gpunet_blk_alloc ((size_t) max_batch * rp);
  if (!q->wr || !q->br || !q->we || !q->be || !q->means || !q->mid) {
    gpunet_se_free (q);
    return NULL;
  }
  for (int r = 0; r < p->rd; r++) {
    for (int ch = 0; ch < p->c; ch++)
      q->wr[(size_t) ch * rp + r] = p->w_reduce[(size_t) r * p->c + ch];
    q->br[r] = p->b_reduce[r];
  }
  for (int ch = 0; ch < p->c; ch++) {
    for (int r = 0; r < p->rd; r++)
      q->we[((size_t) (ch / blk) * p->rd + r) * blk + ch % blk] = p->w_expand[(size_t) ch * p->rd + r];
    q->be[ch] = p->b_expand[ch];
  }
  return q;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

#define SIMD_WIDTH 16
#include "simd_begin.h"
#include "se_simd.h"
#include "simd_end.h"

#define SIMD_WIDTH 8
#include "simd_begin.h"
#include "se_simd.h"
#include "simd_end.h"

void
gpunet_se_run (const gpunet_se *q, float *x, int n, int nt)
{
  if (q->vw == 16)
    se_run_avx512 (q, x, n, nt);
  else
    se_run_avx2 (q, x, n, nt);
}

#else /* not x86 with GCC-style intrinsics: never planned (gpunet_wino_available is 0) */

void
gpunet_se_run (const gpunet_se *q, float *x, int n, int nt)
{
  (void) q, (void) x, (void) n, (void) nt;
}

#endif
