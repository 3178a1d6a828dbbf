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
#include "dwconv.h"
#include "dwconv_state.h"

void
gpunet_dw_free (gpunet_dw *d)
{
  if (!d)
    return;
  free (d->w);
  free (d->bias);
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
  return d->buf_floats;
}

void
gpunet_dw_set_thread_stride (gpunet_dw *d, size_t floats)
{
  if (floats >= d->buf_floats && floats % 16 == 0)
    d->thread_stride = floats;
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
  if (d->in_bf16 || d->out_bf16 || d->in_nhwc || d->out_q8)
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
