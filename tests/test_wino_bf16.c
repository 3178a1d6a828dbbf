/* test_wino_bf16: our Winograd kernel (kernels/onednn/winograd.c) with bf16 activations,
 * as bf16 sessions run it, against its f32 form on the same values.  The inputs (and the
 * residuals already in the output) are drawn as bf16 numbers, so widening them is exact;
 * the transforms and GEMMs are the same f32 in both forms, so a bf16 input must give the
 * f32 kernel's bits exactly, and a bf16 output must be the f32 output rounded to nearest
 * even (gpunet_bf16_rne, portable C here; the kernel rounds in AVX-512F integer steps).
 * Shapes: F(4x4, 3x3) and F(3x3, 3x3) at stride 1, and the polyphase 3x3 and 5x5 stride-2
 * forms; planes whose tiles overhang the border; channel counts not a multiple of 16
 * (padded lanes must come out 0); swish and ReLU; with and without the residual; batch 2
 * over two threads.  Also the rounding's special values (ties, subnormals, infinities,
 * NaN) through a 1x1 plane.  Exit 77 where the CPU lacks AVX-512F (the bf16 forms exist
 * for 16-channel blocks only), naming it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "blocked_ops.h"
#include "bf16_values.h"
#include "cpu_bf16.h"
#include "winograd.h"

/* one shape: returns the number of mismatches */
static int
check (int cin, int cout, int k, int s, int ih, int iw, int act, int tile, int residual)
{
  const int blk = 16, n = 2, nt = 2, pad = k / 2;
  const int cp = (cin + blk - 1) / blk * blk, ocp = (cout + blk - 1) / blk * blk;
  const int oh = (ih + 2 * pad - k) / s + 1, ow = (iw + 2 * pad - k) / s + 1;
  float *w = malloc (sizeof (float) * cout * cin * k * k), *bias = malloc (sizeof (float) * cout);
  for (int i = 0; i < cout * cin * k * k; i++)
    w[i] = frand () / (float) (cin * k);
  for (int i = 0; i < cout; i++)
    bias[i] = frand ();
  gpunet_wino *f = gpunet_wino_new (w, bias, cin, cout, k, s, pad, cp, ocp, ih, iw, oh, ow,
      act, blk, tile);
  gpunet_wino *b = gpunet_wino_new (w, bias, cin, cout, k, s, pad, cp, ocp, ih, iw, oh, ow,
      act, blk, tile);
  if (!f || !b) {
    fprintf (stderr, "FAIL: no plan for cin=%d cout=%d k=%d s=%d %dx%d tile %d\n", cin, cout,
        k, s, ih, iw, tile);
    exit (1);
  }
  const size_t in_n = (size_t) n * cp * ih * iw, out_n = (size_t) n * ocp * oh * ow;
  float *in32 = gpunet_blk_alloc (in_n), *out32 = gpunet_blk_alloc (out_n);
  float *in16 = gpunet_blk_alloc (in_n / 2 + 16), *out16 = gpunet_blk_alloc (out_n);
  float *res32 = gpunet_blk_alloc (out_n), *res16 = gpunet_blk_alloc (out_n / 2 + 16);
  float *scratch = gpunet_blk_alloc (gpunet_wino_scratch_floats (f, nt) + 64);
  if (!in32 || !out32 || !in16 || !out16 || !res32 || !res16 || !scratch) {
    fprintf (stderr, "FAIL: out of memory\n");
    exit (1);
  }
  uint16_t *in_h = (uint16_t *) in16, *out_h = (uint16_t *) out16, *res_h = (uint16_t *) res16;
  for (size_t i = 0; i < in_n; i++) {
    const int ch = (int) ((i / ((size_t) ih * iw * blk)) % (cp / blk)) * blk + (int) (i % blk);
    in_h[i] = ch < cin ? gpunet_bf16_rne (4.0f * frand ()) : 0;
    in32[i] = bf16_f32 (in_h[i]);
  }
  for (size_t i = 0; i < out_n; i++) {
    const int ch = (int) ((i / ((size_t) oh * ow * blk)) % (ocp / blk)) * blk + (int) (i % blk);
    res_h[i] = residual && ch < cout ? gpunet_bf16_rne (2.0f * frand ()) : 0;
    res32[i] = bf16_f32 (res_h[i]);
  }
  memcpy (out32, res32, sizeof (float) * out_n);
  gpunet_wino_run (f, in32, out32, n, residual, scratch, nt);
  int bad = 0;
  for (int mode = 1; mode <= 3; mode++) {   /* 1: bf16 in; 2: bf16 out; 3: both */
    const int ibf = mode & 1, obf = (mode >> 1) & 1;
    if (gpunet_wino_set_bf16 (b, ibf, obf) != 0) {
      fprintf (stderr, "FAIL: a 16-channel plan refused bf16 in=%d out=%d\n", ibf, obf);
      return bad + 1;
    }
    if (residual)
      memcpy (out16, obf ? res16 : res32, obf ? sizeof (uint16_t) * out_n
          : sizeof (float) * out_n);
    else
      memset (out16, 0xff, sizeof (float) * out_n);   /* padded lanes must be written */
    gpunet_wino_run (b, ibf ? (const void *) in16 : in32, out16, n, residual, scratch, nt);
    for (size_t i = 0; i < out_n; i++) {
      const float ref = out32[i];
      const int ok = obf ? out_h[i] == gpunet_bf16_rne (ref)
          : memcmp (&out16[i], &ref, sizeof ref) == 0;
      if (!ok && bad++ < 5)
        fprintf (stderr, "FAIL: cin=%d cout=%d k=%d s=%d %dx%d act=%d tile %d residual %d "
            "bf16 in=%d out=%d: element %zu is %g, the f32 kernel's %g%s\n", cin, cout, k, s,
            ih, iw, act, tile, residual, ibf, obf, i,
            obf ? (double) bf16_f32 (out_h[i]) : (double) out16[i], (double) ref,
            obf ? " rounded to nearest even" : "");
    }
  }
  printf ("cin=%d cout=%d k=%d s=%d %dx%d act=%d tile %d residual %d: %s\n", cin, cout, k, s,
      ih, iw, act, tile, residual, bad ? "FAILED" : "exact");
  gpunet_wino_free (f), gpunet_wino_free (b);
  free (w), free (bias), free (in32), free (out32), free (in16), free (out16), free (res32);
  free (res16), free (scratch);
  return bad;
}

/* The store's rounding on the values where rounding is delicate: a 1x1 plane whose one
 * output channel is its input (a 3x3 kernel with only the centre tap 1, no bias, no
 * activation), so the output before rounding is the f32 input itself, or for a subnormal
 * one a subnormal near it (checked against the f32 kernel first). */
static int
check_rounding (void)
{
  static const uint32_t bits[] = {
    0x3f808000u,   /* 1 + 2^-8: a tie, even below: 1 */
    0x3f818000u,   /* a tie, odd below: up */
    0x3f807fffu, 0x3f808001u, 0xbf818000u, 0x7f7fffffu,   /* up to infinity */
    0x80400000u, 0x00400001u,   /* subnormals: signed zeros */
    0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u,   /* infinities, NaNs */
    0x3effffffu, 0xc2fe8000u,
  };
  const int m = (int) (sizeof bits / sizeof bits[0]), blk = 16;
  int bad = 0;
  float w[9] = { 0, 0, 0, 0, 1, 0, 0, 0, 0 };
  gpunet_wino *f = gpunet_wino_new (w, NULL, 1, 1, 3, 1, 1, blk, blk, 1, 1, 1, 1,
      GPUNET_EPI_NONE, blk, 4);
  float *in = gpunet_blk_alloc (blk), *out32 = gpunet_blk_alloc (blk);
  float *out16 = gpunet_blk_alloc (blk);
  float *scratch = f ? gpunet_blk_alloc (gpunet_wino_scratch_floats (f, 1) + 64) : NULL;
  if (!f || !in || !out32 || !out16 || !scratch) {
    fprintf (stderr, "FAIL: no plan or memory for the rounding check\n");
    return 1;
  }
  for (int i = 0; i < m; i++) {
    float x;
    memcpy (&x, &bits[i], sizeof x);
    memset (in, 0, sizeof (float) * blk);
    in[0] = x;
    gpunet_wino_set_bf16 (f, 0, 0);
    gpunet_wino_run (f, in, out32, 1, 0, scratch, 1);
    gpunet_wino_set_bf16 (f, 0, 1);
    gpunet_wino_run (f, in, out16, 1, 0, scratch, 1);
    const uint16_t got = ((uint16_t *) out16)[0], want = gpunet_bf16_rne (out32[0]);
    uint32_t o;
    memcpy (&o, &out32[0], sizeof o);
    /* NaN: any quiet NaN will do (the f32 kernel's transforms may change its payload);
     * normal values come through the transforms unchanged, subnormals stay subnormal
     * (their low bits may go): either way the value stored must be its rounding */
    const int nan = isnan (out32[0]);
    const uint32_t e_in = bits[i] & 0x7f800000u, e_out = o & 0x7f800000u;
    if (!nan && (e_in == 0 ? e_out != 0 || (o & 0x7fffffu) == 0 : o != bits[i])) {
      fprintf (stderr, "FAIL: the f32 kernel turned 0x%08x into 0x%08x; the rounding check "
          "needs it unchanged (a subnormal, a nonzero subnormal)\n", bits[i], o);
      bad++;
    } else if (nan ? (got & 0x7fc0u) != 0x7fc0u : got != want) {
      fprintf (stderr, "FAIL: 0x%08x stored as bf16 0x%04x, nearest even is 0x%04x\n", o, got,
          want);
      bad++;
    }
  }
  printf ("rounding of %d special values: %s\n", m, bad ? "FAILED" : "as vcvtneps2bf16");
  gpunet_wino_free (f);
  free (in), free (out32), free (out16), free (scratch);
  return bad;
}

int
main (void)
{
  test_rng = 2024u;
  if (!gpunet_wino_available (16)) {
    printf ("SKIP: this CPU lacks AVX-512F, which the Winograd kernel's bf16 forms (16-channel "
        "blocks) need\n");
    printf ("isa-paths: ran= not-run=avx512\n");
    return 77;
  }
  int bad = 0;
  bad += check (24, 40, 3, 1, 13, 11, GPUNET_EPI_SWISH, 4, 0);
  bad += check (64, 48, 3, 1, 18, 18, GPUNET_EPI_SWISH, 4, 1);
  bad += check (33, 33, 3, 1, 9, 14, GPUNET_EPI_RELU, 3, 1);
  bad += check (16, 96, 3, 1, 23, 7, GPUNET_EPI_NONE, 3, 0);
  bad += check (24, 96, 3, 2, 19, 21, GPUNET_EPI_SWISH, 4, 0);
  bad += check (32, 48, 5, 2, 22, 17, GPUNET_EPI_SWISH, 4, 1);
  /* a 8-channel plan has no bf16 form, and says so */
  {
    float w[9] = { 0 };
    gpunet_wino *p = gpunet_wino_new (w, NULL, 1, 1, 3, 1, 1, 8, 8, 5, 5, 5, 5,
        GPUNET_EPI_NONE, 8, 4);
    if (p && gpunet_wino_set_bf16 (p, 1, 0) != -1) {
      fprintf (stderr, "FAIL: an 8-channel plan took bf16\n");
      bad++;
    }
    gpunet_wino_free (p);
  }
  bad += check_rounding ();
  printf ("isa-paths: ran=avx512 not-run=\n");
  printf ("%s\n", bad ? "FAILED" : "passed");
  return bad ? 1 : 0;
}
