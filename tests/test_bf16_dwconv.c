/* test_bf16_dwconv: our depthwise kernel with bf16 activations (kernels/onednn/
 * bf16_dwconv.c, AVX-512 BF16) against its f32 form (dwconv.c) on the same values.
 * The inputs are drawn as bf16 numbers, so widening them is exact; the arithmetic is the
 * same f32 in both forms, so a bf16 input must give the f32 kernel's bits exactly, and a
 * bf16 output must be the f32 output rounded to nearest even (8 significant bits, the
 * rounding computed here in portable C).  Shapes: 3x3 and 5x5, strides 1 and 2, rows not
 * a multiple of 8, channels not a multiple of 16 (padded lanes must come out 0), the
 * producer's swish applied on the way in, batch 2, planes taken in several strips of
 * rows; and int8 sessions' io: the input read from an nhwc f32 buffer, the output
 * quantised into an nhwc u8/s8 one.  Exit 77 where the CPU lacks AVX-512 BF16 (the
 * vcvtneps2bf16 instruction).  Also the 1x1 expansion fused into the depthwise op
 * (check_fused), bf16 and f32: the f32 form runs where the CPU has AVX-512 (F, BW, VL)
 * without BF16 as well. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "cpu_has.h"
#include "blocked_ops.h"
#include "bf16_values.h"
#include "cpu_bf16.h"
#include "dwconv.h"
#include "int8_layout.h"

/* one shape: returns the number of mismatches */
static int
check (int c, int k, int s, int ih, int iw, int act, int in_act)
{
  const int blk = 16, cp = (c + blk - 1) / blk * blk, n = 2, pad = k / 2;
  const int oh = (ih + 2 * pad - k) / s + 1, ow = (iw + 2 * pad - k) / s + 1;
  float *w = malloc (sizeof (float) * c * k * k), *bias = malloc (sizeof (float) * c);
  for (int i = 0; i < c * k * k; i++)
    w[i] = frand ();
  for (int i = 0; i < c; i++)
    bias[i] = frand ();
  gpunet_dwconv2d_params p = { .c = c, .kernel = k, .stride = s, .pad = pad, .ih = ih,
    .iw = iw, .oh = oh, .ow = ow, .act = act, .weight = w, .bias = bias };
  gpunet_dw *f = gpunet_dw_new (&p, in_act, cp, blk), *b = gpunet_dw_new (&p, in_act, cp, blk);
  const size_t in_n = (size_t) n * cp * ih * iw, out_n = (size_t) n * cp * oh * ow;
  float *in32 = gpunet_blk_alloc (in_n), *out32 = gpunet_blk_alloc (out_n);
  float *in16 = gpunet_blk_alloc (in_n / 2 + 16), *out16 = gpunet_blk_alloc (out_n);
  float *scratch = gpunet_blk_alloc (gpunet_dw_scratch_floats (f, 2) + 64);
  if (!f || !b || !in32 || !out32 || !in16 || !out16 || !scratch) {
    fprintf (stderr, "FAIL: out of memory\n");
    exit (1);
  }
  uint16_t *in_h = (uint16_t *) in16, *out_h = (uint16_t *) out16;
  for (size_t i = 0; i < in_n; i++) {
    const int ch = (int) ((i / ((size_t) ih * iw * blk)) % (cp / blk)) * blk + (int) (i % blk);
    in_h[i] = ch < c ? gpunet_bf16_rne (4.0f * frand ()) : 0;
    in32[i] = bf16_f32 (in_h[i]);
  }
  gpunet_dw_run (f, in32, out32, n, scratch, 2);
  int bad = 0;
  for (int mode = 1; mode <= 3; mode++) {   /* 1: bf16 in; 2: bf16 out; 3: both */
    const int ibf = mode & 1, obf = (mode >> 1) & 1;
    gpunet_dw_set_bf16 (b, ibf, obf);
    memset (out16, 0xff, sizeof (float) * out_n);   /* padded lanes must be written */
    gpunet_dw_run (b, ibf ? in16 : in32, out16, n, scratch, 2);
    for (size_t i = 0; i < out_n; i++) {
      const float ref = out32[i];
      int ok;
      if (obf)
        ok = out_h[i] == gpunet_bf16_rne (ref);
      else
        ok = memcmp (&out16[i], &ref, sizeof ref) == 0;
      if (!ok && bad++ < 5)
        fprintf (stderr, "FAIL: c=%d k=%d s=%d %dx%d act=%d in_act=%d bf16 in=%d out=%d: "
            "element %zu is %g, the f32 kernel's %g%s\n", c, k, s, ih, iw, act, in_act, ibf,
            obf, i, obf ? (double) bf16_f32 (out_h[i]) : (double) out16[i], (double) ref,
            obf ? " rounded to nearest even" : "");
    }
  }
  /* int8 sessions' io (gpunet_dw_set_int8_io): the input read from nhwc f32, the output
   * quantised into nhwc s8/u8; against the blocked f32 run and the portable quantising
   * move (int8_layout.c) of its output, rounded to bf16 first where the tensor is bf16 */
  {
    const size_t nh_n = (size_t) n * ih * iw * c, q_n = (size_t) n * oh * ow * c;
    float *nh = malloc (sizeof (float) * nh_n), *rounded = gpunet_blk_alloc (out_n);
    uint8_t *q = malloc (q_n), *q_ref = malloc (q_n);
    for (int b0 = 0; b0 < n; b0++)
      for (int ch = 0; ch < c; ch++)
        for (long px = 0; px < (long) ih * iw; px++)
          nh[((size_t) b0 * ih * iw + (size_t) px) * c + (size_t) ch] = in32[((size_t) b0 * cp
                  + (size_t) (ch / blk * blk)) * (size_t) ih * iw + (size_t) px * blk
              + (size_t) (ch % blk)];
    for (int mode = 0; mode < 4; mode++) {   /* bit 0: nhwc input; bit 1: q8 output */
      const int in_nh = mode & 1, q8 = (mode >> 1) & 1, uns = act == GPUNET_EPI_RELU;
      const int obf = q8 && (c & 1);   /* odd channel counts: bf16 rounding before */
      if (!in_nh && !q8)
        continue;
      gpunet_dw_set_bf16 (b, 0, obf);
      gpunet_dw_set_int8_io (b, in_nh, q8, uns, 10.0f);
      memset (out16, 0xff, sizeof (float) * out_n);
      memset (q, 0xa5, q_n);
      gpunet_dw_run (b, in_nh ? nh : in32, q8 ? (float *) q : out16, n, scratch, 2);
      size_t wrong = 0;
      if (q8) {
        for (size_t i = 0; i < out_n; i++)
          rounded[i] = obf ? bf16_f32 (gpunet_bf16_rne (out32[i])) : out32[i];
        gpunet_int8_quantize (rounded, 0, blk, c, cp, (long) oh * ow, n, 10.0f, uns, q_ref,
            GPUNET_I8L_PORTABLE, 1);
        for (size_t i = 0; i < q_n; i++)
          wrong += q[i] != q_ref[i];
      } else
        wrong = memcmp (out16, out32, sizeof (float) * out_n) != 0;
      if (wrong) {
        bad++;
        fprintf (stderr, "FAIL: c=%d k=%d s=%d %dx%d act=%d in_act=%d int8 io: nhwc input %d, "
            "quantised output %d (%s, bf16 first %d): %zu values differ\n", c, k, s, ih, iw,
            act, in_act, in_nh, q8, uns ? "u8" : "s8", obf, wrong);
      }
    }
    gpunet_dw_set_int8_io (b, 0, 0, 0, 0.0f);
    free (nh), free (rounded), free (q), free (q_ref);
  }
  printf ("c=%d k=%d s=%d %dx%d act=%d in_act=%d: %s\n", c, k, s, ih, iw, act, in_act,
      bad ? "FAILED" : "exact");
  gpunet_dw_free (f), gpunet_dw_free (b);
  free (w), free (bias), free (in32), free (out32), free (in16), free (out16), free (scratch);
  return bad;
}

/* The expansion fused in (gpunet_dw_set_expansion): a 1x1 convolution from cin channels
 * to c, then the depthwise op, against the same depthwise kernel run unfused on the
 * expansion computed here in portable C (products summed in double, rounded to f32, the
 * bias).  ibf: bf16 input and weights (values drawn as bf16; the sum rounded to bf16 as the
 * stored tensor is).  The fused kernel sums in f32 (vdpbf16ps, or one FMA a channel), in
 * another order.  bf16: an expanded value may land on the other side of a bf16 rounding
 * boundary, at most one bf16 step (2^-8 of its size), which moves an output by at most
 * 2^-8 of the sum of its terms' sizes (plus the output's own rounding), and nearly every
 * output must still be the unfused one bit for bit.  f32: the sums differ by f32 roundings,
 * cin of them at most (2^-24 each, relative to the sum of the products' sizes), under
 * 2^-16 of the sum of the terms' sizes here.  Returns the failures. */
static int
check_fused (int ibf, int cin, int c, int k, int s, int ih, int iw, int act, int in_act,
    int obf, int n)
{
  const int blk = 16, cp = (c + blk - 1) / blk * blk, cin_p = (cin + blk - 1) / blk * blk;
  const int pad = k / 2;
  const int oh = (ih + 2 * pad - k) / s + 1, ow = (iw + 2 * pad - k) / s + 1;
  const size_t x_n = (size_t) n * cin_p * ih * iw, e_n = (size_t) n * cp * ih * iw;
  const size_t out_n = (size_t) n * cp * oh * ow;
  float *we = malloc (sizeof (float) * c * cin), *be = malloc (sizeof (float) * c);
  float *w = malloc (sizeof (float) * c * k * k), *bias = malloc (sizeof (float) * c);
  float *x = gpunet_blk_alloc (x_n + 16), *e = gpunet_blk_alloc (e_n + 16);
  float *out_ref = gpunet_blk_alloc (out_n), *out = gpunet_blk_alloc (out_n);
  float *mag = malloc (sizeof (float) * out_n);
  uint16_t *xh = (uint16_t *) x, *eh = (uint16_t *) e;
  for (int i = 0; i < c * cin; i++)
    we[i] = frand () / 4.0f;
  for (int i = 0; i < c; i++)
    be[i] = frand ();
  for (int i = 0; i < c * k * k; i++)
    w[i] = frand ();
  for (int i = 0; i < c; i++)
    bias[i] = frand ();
  for (size_t i = 0; i < x_n; i++) {
    const int ch = (int) ((i / ((size_t) ih * iw * blk)) % (cin_p / blk)) * blk + (int) (i % blk);
    const float v = ch < cin ? 4.0f * frand () : 0.0f;
    if (ibf)
      xh[i] = gpunet_bf16_rne (v);
    else
      x[i] = v;
  }
  /* the expansion, portable: blocked [n][cp / 16][ih][iw][16], bf16 or f32 */
  for (int b = 0; b < n; b++)
    for (int oc = 0; oc < cp; oc++)
      for (long px = 0; px < (long) ih * iw; px++) {
        double sum = 0.0;
        for (int ic = 0; ic < cin && oc < c; ic++) {
          const size_t xi = ((size_t) b * cin_p + (size_t) (ic / blk * blk)) * ih * iw
              + (size_t) px * blk + (size_t) (ic % blk);
          const float wv = we[(size_t) oc * cin + ic];
          sum += ibf ? (double) bf16_f32 (gpunet_bf16_rne (wv)) * bf16_f32 (xh[xi])
              : (double) wv * x[xi];
        }
        const float v = oc < c ? (float) sum + be[oc] : 0.0f;
        const size_t ei = ((size_t) b * cp + (size_t) (oc / blk * blk)) * ih * iw
            + (size_t) px * blk + (size_t) (oc % blk);
        if (ibf)
          eh[ei] = gpunet_bf16_rne (v);
        else
          e[ei] = v;
      }
  gpunet_dwconv2d_params p = { .c = c, .kernel = k, .stride = s, .pad = pad, .ih = ih,
    .iw = iw, .oh = oh, .ow = ow, .act = act, .weight = w, .bias = bias };
  gpunet_conv2d_params pe = { .cin = cin, .cout = c, .kernel = 1, .stride = 1, .pad = 0,
    .groups = 1, .ih = ih, .iw = iw, .oh = ih, .ow = iw, .act = in_act, .weight = we,
    .bias = be };
  gpunet_dw *u = gpunet_dw_new (&p, in_act, cp, blk), *f = gpunet_dw_new (&p, in_act, cp, blk);
  if (!u || !f || !x || !e || !out_ref || !out || !mag) {
    fprintf (stderr, "FAIL: out of memory\n");
    exit (1);
  }
  gpunet_dw_set_bf16 (u, ibf, obf);
  gpunet_dw_set_bf16 (f, ibf, obf);
  if (!gpunet_dw_set_expansion (f, &pe, cin_p, 2)) {
    fprintf (stderr, "FAIL: cin=%d c=%d k=%d s=%d %dx%d: the expansion was not taken\n",
        cin, c, k, s, ih, iw);
    exit (1);
  }
  const size_t sf = gpunet_dw_thread_floats (f) > gpunet_dw_thread_floats (u)
      ? gpunet_dw_thread_floats (f) : gpunet_dw_thread_floats (u);
  gpunet_dw_set_thread_stride (u, (sf + 15) / 16 * 16);
  gpunet_dw_set_thread_stride (f, (sf + 15) / 16 * 16);
  float *scratch = gpunet_blk_alloc ((sf + 16) * 2);
  gpunet_dw_run (u, e, out_ref, n, scratch, 2);
  memset (out, 0xff, sizeof (float) * out_n);   /* padded lanes must be written */
  gpunet_dw_run (f, x, out, n, scratch, 2);
  /* the size of each output's terms: the depthwise op over |in_act(expanded)| */
  for (int b = 0; b < n; b++)
    for (int ch = 0; ch < cp; ch++)
      for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++) {
          double m = 0.0;
          for (int ky = 0; ky < k && ch < c; ky++)
            for (int kx = 0; kx < k; kx++) {
              const int iy = oy * s - pad + ky, ix = ox * s - pad + kx;
              if (iy < 0 || iy >= ih || ix < 0 || ix >= iw)
                continue;
              const size_t ei = ((size_t) b * cp + (size_t) (ch / blk * blk)) * ih * iw
                  + ((size_t) iy * iw + ix) * blk + (size_t) (ch % blk);
              const float ev = ibf ? bf16_f32 (eh[ei]) : e[ei];
              m += fabs ((double) w[(size_t) ch * k * k + ky * k + kx]
                  * gpunet_activate (ev, in_act));
            }
          mag[((size_t) b * cp + (size_t) (ch / blk * blk)) * oh * ow
              + ((size_t) oy * ow + ox) * blk + (size_t) (ch % blk)] = (float) m;
        }
  size_t same = 0, bad = 0;
  const double step = ibf ? 1.0 / 256.0 : 1.0 / 65536.0;
  for (size_t i = 0; i < out_n; i++) {
    const float r = obf ? bf16_f32 (((uint16_t *) out_ref)[i]) : out_ref[i];
    const float v = obf ? bf16_f32 (((uint16_t *) out)[i]) : out[i];
    const double tol = mag[i] * step + (obf ? fabs (r) / 128.0 : 0.0) + 1e-6;
    same += memcmp (&r, &v, sizeof r) == 0;
    if (!(fabs ((double) v - r) <= tol) && bad++ < 5)
      fprintf (stderr, "FAIL: fused %s cin=%d c=%d k=%d s=%d %dx%d: element %zu is %g, "
          "unfused %g (tolerance %g)\n", ibf ? "bf16" : "f32", cin, c, k, s, ih, iw, i,
          (double) v, (double) r, tol);
  }
  const int few_same = ibf && same < out_n * 95 / 100;
  if (few_same)
    fprintf (stderr, "FAIL: fused cin=%d c=%d k=%d s=%d %dx%d: only %zu of %zu outputs are "
        "the unfused ones bit for bit\n", cin, c, k, s, ih, iw, same, out_n);
  printf ("fused %s cin=%d c=%d k=%d s=%d %dx%d act=%d in_act=%d bf16 out=%d n=%d: %zu of "
      "%zu outputs bit for bit, %s\n", ibf ? "bf16" : "f32", cin, c, k, s, ih, iw, act,
      in_act, obf, n, same, out_n, bad || few_same ? "FAILED" : "within the bound");
  gpunet_dw_free (u), gpunet_dw_free (f);
  free (we), free (be), free (w), free (bias), free (x), free (e), free (out_ref), free (out);
  free (mag), free (scratch);
  return (bad > 0) + few_same;
}

int
main (void)
{
  if (!CPU_HAS ("avx512f") || !CPU_HAS ("avx512bw")
      || !CPU_HAS ("avx512vl")) {
    printf ("SKIP: this CPU lacks AVX-512 (F, BW and VL), which the fused f32 expansion "
        "and the bf16 depthwise kernel use\n");
    printf ("isa-paths: ran= not-run=avx512,avx512-bf16-vnni\n");
    return 77;
  }
  int bad = 0;
  /* the f32 expansion fused in (f32 sessions; AVX-512 without BF16 runs it too): tails
   * of pixels and channel blocks, each kernel form, one image split in rows */
  bad += check_fused (0, 24, 40, 3, 1, 13, 19, GPUNET_EPI_NONE, GPUNET_EPI_SWISH, 0, 2);
  bad += check_fused (0, 48, 144, 3, 2, 21, 22, GPUNET_EPI_SWISH, GPUNET_EPI_SWISH, 0, 2);
  bad += check_fused (0, 33, 80, 5, 1, 17, 11, GPUNET_EPI_RELU, GPUNET_EPI_RELU, 0, 2);
  bad += check_fused (0, 64, 24, 7, 1, 9, 30, GPUNET_EPI_NONE, GPUNET_EPI_NONE, 0, 2);
  bad += check_fused (0, 16, 16, 5, 1, 40, 120, GPUNET_EPI_SWISH, GPUNET_EPI_SWISH, 0, 1);
  if (!gpunet_cpu_avx512_bf16 ()) {
    printf ("SKIP (bf16 forms): this CPU lacks AVX-512 BF16 (avx512_bf16: vcvtneps2bf16), "
        "which the bf16 depthwise kernel uses\n");
    printf ("isa-paths: ran=avx512 not-run=avx512-bf16-vnni\n");
    printf ("%s\n", bad ? "FAILED" : "passed");
    return bad ? 1 : 0;
  }
  bad += check (40, 3, 1, 13, 19, GPUNET_EPI_SWISH, GPUNET_EPI_NONE);
  bad += check (33, 3, 2, 21, 22, GPUNET_EPI_NONE, GPUNET_EPI_SWISH);
  bad += check (16, 5, 1, 9, 11, GPUNET_EPI_RELU, GPUNET_EPI_RELU);
  bad += check (50, 5, 2, 23, 17, GPUNET_EPI_SWISH, GPUNET_EPI_SWISH);
  bad += check (24, 7, 1, 8, 30, GPUNET_EPI_NONE, GPUNET_EPI_NONE);
  /* planes whose rows do not fit the buffer budget at once: several strips of rows per
   * channel block (dwconv_state.h, DW_BUF_BUDGET), the last one short */
  bad += check (20, 3, 2, 9, 230, GPUNET_EPI_SWISH, GPUNET_EPI_SWISH);
  bad += check (16, 7, 1, 40, 141, GPUNET_EPI_RELU, GPUNET_EPI_SWISH);
  bad += check (17, 5, 1, 37, 133, GPUNET_EPI_SWISH, GPUNET_EPI_NONE);
  /* the expansion fused in: tails of pixels (not a multiple of 6) and of channel blocks
   * (not a multiple of 4), input channels not a multiple of 16, each kernel form; planes
   * taken in several groups of channel blocks (XDW_RING_BUDGET) */
  bad += check_fused (1, 24, 40, 3, 1, 13, 19, GPUNET_EPI_NONE, GPUNET_EPI_SWISH, 1, 2);
  bad += check_fused (1, 48, 144, 3, 2, 21, 22, GPUNET_EPI_SWISH, GPUNET_EPI_SWISH, 1, 2);
  bad += check_fused (1, 33, 80, 5, 1, 17, 11, GPUNET_EPI_RELU, GPUNET_EPI_RELU, 0, 2);
  bad += check_fused (1, 16, 50, 5, 2, 23, 17, GPUNET_EPI_SWISH, GPUNET_EPI_SWISH, 1, 2);
  bad += check_fused (1, 64, 24, 7, 1, 9, 30, GPUNET_EPI_NONE, GPUNET_EPI_NONE, 1, 2);
  bad += check_fused (1, 32, 256, 5, 1, 7, 300, GPUNET_EPI_SWISH, GPUNET_EPI_SWISH, 1, 2);
  /* one channel block, one image: the plane split into ranges of rows, one a thread, each
   * expanding the rows before it again (the second thread's ring holds none of them; planes
   * large enough to run on both threads) */
  bad += check_fused (1, 16, 16, 5, 1, 40, 120, GPUNET_EPI_SWISH, GPUNET_EPI_SWISH, 1, 1);
  bad += check_fused (1, 40, 8, 3, 2, 62, 281, GPUNET_EPI_NONE, GPUNET_EPI_RELU, 0, 1);
  printf ("isa-paths: ran=avx512,avx512-bf16-vnni not-run=\n");
  printf ("%s\n", bad ? "FAILED" : "passed");
  return bad ? 1 : 0;
}
