/* test_bf16_pwconv: our bf16 1x1 convolution (kernels/onednn/bf16_pwconv.c, vdpbf16ps)
 * against a portable reference on the same values: the input drawn as bf16 numbers, the
 * weights rounded to bf16 here as the kernel rounds them (gpunet_bf16_rne), the products
 * summed in double, then the bias, the activation and the residual in double.  The kernel
 * sums in f32 in its own order, so an output may differ from the reference by the f32
 * roundings of its sum, at most cin of them (2^-24 each, relative to the sum of the
 * products' sizes); a bf16 output also by one bf16 step where the two sums lie on either
 * side of a rounding boundary, which must be rare (at least 95 % of the bf16 outputs are
 * the reference rounded to nearest even, bit for bit).  Shapes: channel counts not a
 * multiple of 16 or 64 (padded lanes must come out 0; chunks of 1-4 vectors), odd input
 * channel counts (a pair with one padding lane), blocks of 5 and 6 pixels and a plane
 * under 6, each order of work (pixel-major; chunk-major in one group and in several),
 * swish, ReLU and none, with and without the residual, bf16 and f32 output, batch 2 on two
 * threads.  Exit 77 where the CPU lacks AVX-512 BF16 (or F, BW, VL), naming it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "bf16_pwconv.h"
#include "blocked_ops.h"
#include "bf16_values.h"
#include "cpu_bf16.h"

static double
act_d (double v, int act)
{
  if (act == GPUNET_EPI_RELU)
    return v > 0.0 ? v : 0.0;
  if (act == GPUNET_EPI_SWISH)
    return v / (1.0 + exp (-v));
  return v;
}

/* one shape: returns the number of failures */
static int
check (int cin, int cout, long hw, int act, int residual, int obf)
{
  const int blk = 16, n = 2, nt = 2;
  const int cp = (cin + blk - 1) / blk * blk, ocp = (cout + blk - 1) / blk * blk;
  float *w = malloc (sizeof (float) * cout * cin), *bias = malloc (sizeof (float) * cout);
  for (int i = 0; i < cout * cin; i++)
    w[i] = frand () / sqrtf ((float) cin);
  for (int i = 0; i < cout; i++)
    bias[i] = frand ();
  gpunet_pwb *p = gpunet_pwb_new (w, bias, cin, cout, cp, ocp, hw, act, nt);
  if (!p) {
    fprintf (stderr, "FAIL: no plan for cin=%d cout=%d hw=%ld\n", cin, cout, hw);
    exit (1);
  }
  gpunet_pwb_set_out_f32 (p, !obf);
  const size_t in_n = (size_t) n * cp * hw, out_n = (size_t) n * ocp * hw;
  uint16_t *in = (uint16_t *) gpunet_blk_alloc (in_n / 2 + 16);
  float *out = gpunet_blk_alloc (out_n), *res = malloc (sizeof (float) * out_n);
  double *ref = malloc (sizeof (double) * out_n), *mag = malloc (sizeof (double) * out_n);
  float *wr = malloc (sizeof (float) * cout * cin);
  if (!in || !out || !res || !ref || !mag || !wr) {
    fprintf (stderr, "FAIL: out of memory\n");
    exit (1);
  }
  for (int i = 0; i < cout * cin; i++)
    wr[i] = bf16_f32 (gpunet_bf16_rne (w[i]));
  for (size_t i = 0; i < in_n; i++) {
    const int ch = (int) ((i / ((size_t) hw * blk)) % (cp / blk)) * blk + (int) (i % blk);
    in[i] = ch < cin ? gpunet_bf16_rne (3.0f * frand ()) : 0;
  }
  /* the residual already in the output, in its type; padding lanes zero */
  uint16_t *out_h = (uint16_t *) out;
  for (size_t i = 0; i < out_n; i++) {
    const int ch = (int) ((i / ((size_t) hw * blk)) % (ocp / blk)) * blk + (int) (i % blk);
    res[i] = residual && ch < cout ? bf16_f32 (gpunet_bf16_rne (2.0f * frand ())) : 0.0f;
    if (!residual)
      continue;
    if (obf)
      out_h[i] = gpunet_bf16_rne (res[i]);
    else
      out[i] = res[i];
  }
  if (!residual)
    memset (out, 0xff, sizeof (float) * out_n);   /* padded lanes must be written */
  for (int b = 0; b < n; b++)
    for (int oc = 0; oc < ocp; oc++)
      for (long px = 0; px < hw; px++) {
        double s = 0.0, m = 0.0;
        for (int ic = 0; ic < cin && oc < cout; ic++) {
          const size_t xi = ((size_t) b * cp + (size_t) (ic / blk * blk)) * hw
              + (size_t) px * blk + (size_t) (ic % blk);
          const double t = (double) wr[(size_t) oc * cin + ic] * bf16_f32 (in[xi]);
          s += t;
          m += fabs (t);
        }
        const size_t oi = ((size_t) b * ocp + (size_t) (oc / blk * blk)) * hw
            + (size_t) px * blk + (size_t) (oc % blk);
        ref[oi] = oc < cout ? act_d (s + bias[oc], act) + res[oi] : 0.0;
        mag[oi] = m;
      }
  gpunet_pwb_run (p, in, out, n, residual, nt);
  size_t same = 0, bad = 0;
  for (size_t i = 0; i < out_n; i++) {
    const double v = obf ? bf16_f32 (out_h[i]) : out[i];
    const float want = (float) ref[i];
    const double tol = mag[i] * (cin + 2) * ldexp (1.0, -24) * 2.0
        + (obf ? fabs (ref[i]) / 128.0 : fabs (ref[i]) * ldexp (1.0, -22)) + 1e-7;
    if (obf)
      same += out_h[i] == gpunet_bf16_rne (want);
    if (!(fabs (v - ref[i]) <= tol) && bad++ < 5)
      fprintf (stderr, "FAIL: cin=%d cout=%d hw=%ld act=%d residual %d %s out: element %zu is "
          "%.9g, the reference %.9g (tolerance %.3g)\n", cin, cout, hw, act, residual,
          obf ? "bf16" : "f32", i, v, ref[i], tol);
  }
  const int few_same = obf && same < out_n * 95 / 100;
  if (few_same)
    fprintf (stderr, "FAIL: cin=%d cout=%d hw=%ld: only %zu of %zu bf16 outputs are the "
        "reference rounded to nearest even\n", cin, cout, hw, same, out_n);
  printf ("cin=%d cout=%d hw=%ld act=%d residual %d %s out: %s", cin, cout, hw, act, residual,
      obf ? "bf16" : "f32", bad || few_same ? "FAILED" : "within the bound");
  if (obf)
    printf (" (%zu of %zu the reference rounded)", same, out_n);
  printf ("\n");
  gpunet_pwb_free (p);
  free (w), free (bias), free (in), free (out), free (res), free (ref), free (mag), free (wr);
  return (bad > 0) + few_same;
}

int
main (void)
{
  test_rng = 777u;
  if (!gpunet_pwb_available ()) {
    printf ("SKIP: this CPU lacks AVX-512 BF16 (avx512_bf16: vdpbf16ps) or AVX-512 F, BW, "
        "VL, which the bf16 1x1 kernel uses\n");
    printf ("isa-paths: ran= not-run=avx512-bf16-vnni\n");
    return 77;
  }
  int bad = 0;
  /* pixel-major (small weights): chunks of 4 and 2 vectors, blocks of 5 and 6 */
  bad += check (48, 96, 16, GPUNET_EPI_SWISH, 0, 1);
  bad += check (33, 40, 13, GPUNET_EPI_RELU, 1, 1);
  bad += check (64, 24, 4, GPUNET_EPI_NONE, 1, 0);
  bad += check (190, 200, 841, GPUNET_EPI_SWISH, 1, 1);
  /* chunk-major, one group: 1.3 MB of weights */
  bad += check (1024, 640, 49, GPUNET_EPI_NONE, 1, 1);
  bad += check (1024, 648, 49, GPUNET_EPI_SWISH, 0, 0);
  /* chunk-major over several groups of pixel blocks */
  bad += check (2048, 304, 400, GPUNET_EPI_SWISH, 1, 1);
  printf ("isa-paths: ran=avx512-bf16-vnni not-run=\n");
  printf ("%s\n", bad ? "FAILED" : "passed");
  return bad ? 1 : 0;
}
