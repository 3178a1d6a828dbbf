/* dwconv.c: our depthwise convolution on channel-blocked activations (see dwconv.h).
 *
 * Per channel block and strip of output rows, one task: the input rows the strip reads are
 * copied, activated (the producer's deferred activation) and zero-bordered into a per-thread
 * buffer of at most DW_BUF_BUDGET bytes, so the kernel loop has no edge cases; then eight
 * outputs of a row at a time take each weight vector once, bias first, activation at the
 * store.  Against the reference op (kernels/ref/dwconv2d.c: bias added last, no fused
 * multiply-adds) results differ by rounding only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "activation.h"
#include "blocked_ops.h"
#include "cpu_bf16.h"
#include "dwconv.h"
#include "dwconv_state.h"

void
gpunet_dw_free (gpunet_dw *d)
{
  if (!d)
    return;
  free (d->w);
  free (d->bias);
  free (d->x.w);
  free (d->x.bias);
  free (d);
}

size_t
gpunet_dw_scratch_floats (const gpunet_dw *d, int nt)
{
  return d->thread_stride * (size_t) (nt > 0 ? nt : 1);
}

size_t
gpunet_dw_thread_floats (const gpunet_dw *d)
{
  return d->x.w && d->x.ring_floats > d->buf_floats ? d->x.ring_floats : d->buf_floats;
}

void
gpunet_dw_set_thread_stride (gpunet_dw *d, size_t floats)
{
  if (floats >= gpunet_dw_thread_floats (d) && floats % 16 == 0)
    d->thread_stride = floats;
}

/* A fused op's split of its work among nt threads (one image): groups of whole channel
 * blocks (at most gmax, the ring's budget) times ranges of output rows, the pair whose
 * busiest thread has the least work under OpenMP's static schedule, fewer tasks on a tie.
 * A task's work: its blocks times its expanded rows' multiply-adds (each range expands
 * the k - stride rows before it again) and its depthwise rows'. */
static void
xdw_split (gpunet_dw *d, int gmax, int nt)
{
  const int nblk = d->cp / 16, ng_min = (nblk + gmax - 1) / gmax;
  const int k = d->k, s = d->stride, pad = d->pad, oh = d->oh;
  double best = -1.0;
  for (int ng = ng_min; ng <= nblk && ng <= ng_min + 2 * nt; ng++) {
    const int g = (nblk + ng - 1) / ng;
    if ((nblk + g - 1) / g != ng)
      continue;   /* the same groups as a smaller count */
    for (int nch = 1; nch <= nt && nch <= oh; nch++) {
      const int tasks = ng * nch, q = tasks / nt, r = tasks % nt;
      double worst = 0.0;
      for (int t = 0; t < nt; t++) {
        const int lo = t * q + (t < r ? t : r), hi = lo + q + (t < r);
        double w = 0.0;
        for (int u = lo; u < hi; u++) {
          const int blocks = nblk - u / nch * g < g ? nblk - u / nch * g : g;
          const int oy0 = (int) ((long) (u % nch) * oh / nch);
          const int oy1 = (int) ((long) (u % nch + 1) * oh / nch);
          int y0 = oy0 * s - pad, y1 = (oy1 - 1) * s - pad + k;
          y0 = y0 < 0 ? 0 : y0;
          y1 = y1 > d->ih ? d->ih : y1;
          /* vector instructions: vdpbf16ps does two channels a lane, an FMA one */
          w += (double) blocks * ((double) (y1 - y0) * d->iw * d->x.cin_p
              / (d->in_bf16 ? 2.0 : 1.0) + (double) (oy1 - oy0) * d->ow * k * k);
        }
        worst = w > worst ? w : worst;
      }
      if (best < 0.0 || worst < best * (1.0 - 1e-9)) {
        best = worst;
        d->x.gblk = g;
        d->x.nch = nch;
      }
    }
  }
  d->x.nt = nt;
}

int
gpunet_dw_set_expansion (gpunet_dw *d, const gpunet_conv2d_params *pe, int cin_p, int nt)
{
  if (d->vw != 16 || d->in_nhwc || d->out_q8 || pe->kernel != 1
      || pe->stride != 1 || pe->pad != 0 || pe->groups != 1 || pe->cout != d->c
      || pe->ih != d->ih || pe->iw != d->iw || pe->oh != d->ih || pe->ow != d->iw
      || pe->cin < 1 || cin_p < pe->cin || cin_p % 16)
    return 0;
  const int nblk = d->cp / 16, bf = d->in_bf16;
  /* bf16: the lanes of a block hold pairs of input channels (vdpbf16ps) */
  const size_t n_w = (size_t) d->cp * cin_p;
  void *w = bf ? (void *) gpunet_blk_alloc ((n_w + 1) / 2) : (void *) gpunet_blk_alloc (n_w);
  float *bias = gpunet_blk_alloc ((size_t) d->cp);
  if (!w || !bias) {
    free (w);
    free (bias);
    return 0;
  }
  for (int cb = 0; cb < nblk; cb++)
    for (int ic = 0; ic < cin_p; ic++)
      for (int l = 0; l < 16; l++) {
        const int oc = cb * 16 + l;
        const float v = oc < pe->cout && ic < pe->cin ? pe->weight[(size_t) oc * pe->cin + ic]
            : 0.0f;
        if (bf)
          ((uint16_t *) w)[(((size_t) cb * cin_p + (size_t) (ic & ~1)) * 16 + (size_t) l * 2)
              + (size_t) (ic & 1)] = gpunet_bf16_rne (v);
        else
          ((float *) w)[((size_t) cb * cin_p + (size_t) ic) * 16 + (size_t) l] = v;
      }
  for (int c = 0; c < d->cp; c++)
    bias[c] = c < pe->cout && pe->bias ? pe->bias[c] : 0.0f;
  free (d->x.w);
  free (d->x.bias);
  d->x.w = w;
  d->x.bias = bias;
  d->x.cin = pe->cin;
  d->x.cin_p = cin_p;
  const size_t row = (size_t) d->cw * 16;   /* floats of one block's row */
  long g = (long) (XDW_RING_BUDGET / (sizeof (float) * row * (size_t) d->k));
  if (g < 1)
    g = 1;
  if (g > nblk)
    g = nblk;
  xdw_split (d, (int) g, nt > 0 ? nt : 1);
  d->x.ring_floats = ((size_t) d->k * d->x.gblk + 1) * row;
  return 1;
}

void
gpunet_dw_set_bf16 (gpunet_dw *d, int in_bf16, int out_bf16)
{
  d->in_bf16 = in_bf16 && d->vw == 16;
  d->out_bf16 = out_bf16 && d->vw == 16;
}

void
gpunet_dw_set_int8_io (gpunet_dw *d, int in_nhwc, int out_q8, int out_uns, float out_inv)
{
  d->in_nhwc = in_nhwc && d->vw == 16;
  d->out_q8 = out_q8 && d->vw == 16;
  d->out_uns = out_uns;
  d->out_inv = out_inv;
}

gpunet_dw *
gpunet_dw_new (const gpunet_dwconv2d_params *p, int in_act, int cp, int blk)
{
  if ((blk != 16 && blk != 8) || cp % blk || cp < p->c || p->c < 1 || p->kernel < 1
      || p->stride < 1 || p->pad < 0 || p->ih < 1 || p->iw < 1 || p->oh < 1 || p->ow < 1
      || p->oh != (p->ih + 2 * p->pad - p->kernel) / p->stride + 1
      || p->ow != (p->iw + 2 * p->pad - p->kernel) / p->stride + 1)
    return NULL;
  gpunet_dw *d = calloc (1, sizeof *d);
  if (!d)
    return NULL;
  const int k = p->kernel, s = p->stride;
  *d = (gpunet_dw) { .c = p->c, .cp = cp, .k = k, .stride = s, .pad = p->pad, .ih = p->ih,
    .iw = p->iw, .oh = p->oh, .ow = p->ow, .act = p->act, .in_act = in_act, .vw = blk,
    .cw = (p->ow - 1) * s + k };
  const size_t row_bytes = (size_t) d->cw * blk * sizeof (float);
  long fit = (long) (DW_BUF_BUDGET / row_bytes);   /* buffer rows within the budget */
  int sr = fit >= k ? (int) ((fit - k) / s + 1) : 1;
  if (sr > p->oh)
    sr = p->oh;
  d->strip_rows = sr;
  d->strips = (p->oh + sr - 1) / sr;
  d->buf_floats = ((size_t) ((sr - 1) * s + k) * d->cw * blk + 15) / 16 * 16;
  d->thread_stride = d->buf_floats;
  d->w = gpunet_blk_alloc ((size_t) cp * k * k);
  d->bias = gpunet_blk_alloc ((size_t) cp);
  if (!d->w || !d->bias) {
    gpunet_dw_free (d);
    return NULL;
  }
  for (int c = 0; c < p->c; c++) {
    for (int e = 0; e < k * k; e++)
      d->w[((size_t) (c / blk) * k * k + e) * blk + c % blk] = p->weight[(size_t) c * k * k + e];
    d->bias[c] = p->bias ? p->bias[c] : 0.0f;
  }
  return d;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

#define SIMD_WIDTH 16
#include "simd_begin.h"
#include "dwconv_simd.h"
#include "simd_end.h"

#define SIMD_WIDTH 8
#include "simd_begin.h"
#include "dwconv_simd.h"
#include "simd_end.h"

void
gpunet_dw_run (const gpunet_dw *d, const float *in, float *out, int n, float *scratch, int nt)
{
  if (d->in_bf16 || d->out_bf16 || d->in_nhwc || d->out_q8 || d->x.w)
    gpunet_dw_run_bf16 (d, in, out, n, scratch, nt);
  else if (d->vw == 16)
    dw_run_avx512 (d, in, out, n, scratch, nt);
  else
    dw_run_avx2 (d, in, out, n, scratch, nt);
}

#else /* not x86 with GCC-style intrinsics: never planned (gpunet_wino_available is 0) */

void
gpunet_dw_run (const gpunet_dw *d, const float *in, float *out, int n, float *scratch, int nt)
{
  (void) d, (void) in, (void) out, (void) n, (void) scratch, (void) nt;
}

#endif
