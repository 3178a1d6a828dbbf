/* test_cuda_nhwc.c: CPU-side tests of the NHWC network's arithmetic (the opt-in fused
 * path's level 2): the GPUNET_HD functions of kernels/cuda/cuda_nhwc.h, called in the
 * order nhwc.cu's and se.cu's kernels call them, against the reference ops on the same
 * data in NCHW: index maps, the epilogue, the depthwise window with its squeeze strip
 * sums, the SE from those sums, the pool, and the KRSC filter order; fp16 forms against
 * the NCHW fp16 forms of cuda_math.h, bit for bit. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_ops.h"
#include "cuda/cuda_fused.h"
#include "cuda/cuda_nhwc.h"
#include "half.h"

static float *
rand_array (size_t n, float scale)
{
  float *a = malloc ((n ? n : 1) * sizeof *a);
  for (size_t i = 0; i < n; i++)
    a[i] = check_frand () * scale;
  return a;
}

/* NCHW -> NHWC on the host, by the kernels' index map. */
static float *
to_nhwc (const float *nchw, int n, int c, long long plane)
{
  const long long total = (long long) n * c * plane;
  float *o = malloc ((size_t) total * sizeof *o);
  for (long long i = 0; i < total; i++)
    o[i] = nchw[gpunet_nhwc_to_nchw (i, c, plane)];
  return o;
}

static double
max_rel (const float *a, const float *b, size_t n)
{
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs ((double) a[i] - b[i]);
    err = d > err ? d : err;
    ref = fabs (b[i]) > ref ? fabs (b[i]) : ref;
  }
  return ref > 0.0 ? err / ref : err;
}

static void
test_index_maps (void)
{
  int ok = 1;
  const int c = 5, h = 3, w = 7, n = 2;
  const long long plane = (long long) h * w, total = (long long) n * c * plane;
  for (long long i = 0; i < total; i++) {
    ok &= gpunet_nchw_to_nhwc (gpunet_nhwc_to_nchw (i, c, plane), c, plane) == i;
    ok &= gpunet_nhwc_channel (i, c) == (int) (i % c);
  }
  /* (image, y, x, ch) lands where the NCHW element of the same coordinates maps to */
  for (int img = 0; img < n; img++)
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        for (int ch = 0; ch < c; ch++) {
          const long long nchw = (((long long) img * c + ch) * h + y) * w + x;
          ok &= gpunet_nhwc_at (img, y, x, ch, h, w, c) == gpunet_nchw_to_nhwc (nchw, c, plane);
        }
  CHECK_MSG (ok, "NCHW <-> NHWC index maps disagree");
  /* the KRSC filter index is a permutation of cout * cin * k * k */
  const int co = 3, ci = 4, k = 3;
  char seen[3 * 4 * 3 * 3] = { 0 };
  int perm = 1;
  for (int o = 0; o < co; o++)
    for (int i = 0; i < ci; i++)
      for (int ky = 0; ky < k; ky++)
        for (int kx = 0; kx < k; kx++) {
          const long long at = gpunet_krsc_at (o, i, ky, kx, ci, k);
          perm &= at >= 0 && at < (long long) sizeof seen && !seen[at];
          if (at >= 0 && at < (long long) sizeof seen)
            seen[at] = 1;
          perm &= gpunet_krsc_at (o, i + 1 < ci ? i + 1 : i, ky, kx, ci, k) - at == (i + 1 < ci);
        }
  CHECK_MSG (perm, "gpunet_krsc_at is not KRSC (in channel innermost) or not a permutation");
}

/* A convolution read through KRSC filters and NHWC input equals the reference conv. */
static void
test_krsc_conv (void)
{
  gpunet_conv2d_params p = { .cin = 6, .cout = 5, .kernel = 3, .stride = 2, .pad = 1,
    .groups = 1, .ih = 9, .iw = 7, .act = GPUNET_EPI_SWISH };
  p.oh = gpunet_conv_out_dim (p.ih, p.kernel, p.stride, p.pad);
  p.ow = gpunet_conv_out_dim (p.iw, p.kernel, p.stride, p.pad);
  const int n = 2, k = p.kernel;
  const size_t wn = (size_t) p.cout * p.cin * k * k;
  float *w = rand_array (wn, 0.5f), *b = rand_array ((size_t) p.cout, 0.2f);
  p.weight = w;
  p.bias = b;
  const long long ip = (long long) p.ih * p.iw, op = (long long) p.oh * p.ow;
  float *x = rand_array ((size_t) (n * p.cin * ip), 1.0f);
  float *res = rand_array ((size_t) (n * p.cout * op), 1.0f);
  float *ref = malloc ((size_t) (n * p.cout * op) * sizeof *ref);
  gpunet_cpu_conv2d (&p, x, res, ref, n);
  float *krsc = malloc (wn * sizeof *krsc);
  for (int o = 0; o < p.cout; o++)
    for (int i = 0; i < p.cin; i++)
      for (int ky = 0; ky < k; ky++)
        for (int kx = 0; kx < k; kx++)
          krsc[gpunet_krsc_at (o, i, ky, kx, p.cin, k)] = w[(((size_t) o * p.cin + i) * k + ky) * k + kx];
  float *xh = to_nhwc (x, n, p.cin, ip), *rh = to_nhwc (res, n, p.cout, op);
  float *refh = to_nhwc (ref, n, p.cout, op);
  float *got = malloc ((size_t) (n * p.cout * op) * sizeof *got);
  for (int img = 0; img < n; img++)
    for (int oy = 0; oy < p.oh; oy++)
      for (int ox = 0; ox < p.ow; ox++)
        for (int o = 0; o < p.cout; o++) {
          double acc = 0.0;
          for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
              const int iy = oy * p.stride + ky - p.pad, ix = ox * p.stride + kx - p.pad;
              if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw)
                continue;
              for (int i = 0; i < p.cin; i++)
                acc += (double) krsc[gpunet_krsc_at (o, i, ky, kx, p.cin, k)]
                    * xh[gpunet_nhwc_at (img, iy, ix, i, p.ih, p.iw, p.cin)];
            }
          const long long at = gpunet_nhwc_at (img, oy, ox, o, p.oh, p.ow, p.cout);
          got[at] = (float) acc;
        }
  /* the epilogue over the NHWC raw output, as the fallback kernel runs it */
  for (long long i = 0; i < (long long) n * p.cout * op; i++)
    got[i] = gpunet_epilogue_nhwc_at (got, b, rh, i, p.cout, p.act);
  const double e = max_rel (got, refh, (size_t) (n * p.cout * op));
  CHECK_MSG (e < 1e-5, "KRSC/NHWC convolution + epilogue off the reference by %.3g", e);
  free (w), free (b), free (x), free (res), free (ref), free (krsc), free (xh), free (rh);
  free (refh), free (got);
}

/* The depthwise kernel's thread (image, strip, channel), then the SE from its strip sums
 * (reduce kernel's means and rows in order, gate by gpunet_se_gate_seq, scale), against
 * the reference dwconv2d + se on NCHW. */
static void
test_dw_se (int k, int stride, int ih, int iw, int c, int rd)
{
  gpunet_dwconv2d_params p = { .c = c, .kernel = k, .stride = stride, .pad = k / 2, .ih = ih,
    .iw = iw, .act = GPUNET_EPI_SWISH };
  p.oh = gpunet_conv_out_dim (ih, k, stride, p.pad);
  p.ow = gpunet_conv_out_dim (iw, k, stride, p.pad);
  const int n = 2;
  float *w = rand_array ((size_t) c * k * k, 0.5f), *b = rand_array ((size_t) c, 0.2f);
  p.weight = w;
  p.bias = b;
  const long long ip = (long long) ih * iw, op = (long long) p.oh * p.ow;
  float *x = rand_array ((size_t) (n * c * ip), 1.0f);
  float *ref = malloc ((size_t) (n * c * op) * sizeof *ref);
  gpunet_cpu_dwconv2d (&p, x, ref, n);
  float *xh = to_nhwc (x, n, c, ip), *refh = to_nhwc (ref, n, c, op);
  float *got = malloc ((size_t) (n * c * op) * sizeof *got);
  const long long positions = op;
  const int strips = gpunet_nhwc_strips (positions);
  float *sums = malloc ((size_t) n * c * strips * sizeof *sums);
  float vals[GPUNET_NHWC_STRIP];
  for (int img = 0; img < n; img++)
    for (int strip = 0; strip < strips; strip++)
      for (int ch = 0; ch < c; ch++) {
        int count = 0;
        for (long long pos = (long long) strip * GPUNET_NHWC_STRIP;
            pos < positions && count < GPUNET_NHWC_STRIP; pos++, count++) {
          const int oy = (int) (pos / p.ow), ox = (int) (pos % p.ow);
          const float v = gpunet_epilogue (gpunet_dwconv_nhwc_at (xh + (long long) img * ip * c,
              ih, iw, c, ch, w + (long long) ch * k * k, k, stride, p.pad, oy, ox), b[ch],
              p.act, 0.0f);
          got[gpunet_nhwc_at (img, oy, ox, ch, p.oh, p.ow, c)] = v;
          vals[count] = v;
        }
        sums[((long long) img * c + ch) * strips + strip] = gpunet_nhwc_strip_sum (vals, count);
      }
  /* same taps in the same order as the reference: the same floats */
  CHECK_MSG (memcmp (got, refh, (size_t) (n * c * op) * sizeof *got) == 0,
      "NHWC depthwise k%d/s%d %dx%d differs from the reference", k, stride, ih, iw);
  CHECK (strips >= 1 && (long long) (strips - 1) * GPUNET_NHWC_STRIP < positions
      && (long long) strips * GPUNET_NHWC_STRIP >= positions);
  /* the strip sums add up to the plane's sum */
  double plane_sum = 0.0, from_strips = 0.0;
  for (long long pos = 0; pos < positions; pos++)
    plane_sum += refh[pos * c];
  for (int s = 0; s < strips; s++)
    from_strips += sums[s];
  CHECK_MSG (fabs (plane_sum - from_strips) <= 1e-5 * (1.0 + fabs (plane_sum)),
      "strip sums %.9g, plane %.9g", from_strips, plane_sum);

  /* the SE on the depthwise output */
  gpunet_se_params sp = { .c = c, .rd = rd, .h = p.oh, .w = p.ow, .act = GPUNET_EPI_RELU };
  float *w1 = rand_array ((size_t) rd * c, 0.3f), *b1 = rand_array ((size_t) rd, 0.1f);
  float *w2 = rand_array ((size_t) c * rd, 0.3f), *b2 = rand_array ((size_t) c, 0.1f);
  sp.w_reduce = w1, sp.b_reduce = b1, sp.w_expand = w2, sp.b_expand = b2;
  float *scratch = malloc ((size_t) (c + rd) * sizeof *scratch);
  gpunet_cpu_se (&sp, ref, scratch, n);
  float *se_ref = to_nhwc (ref, n, c, op);
  float *mean = malloc ((size_t) c * sizeof *mean), *mid = malloc ((size_t) rd * sizeof *mid);
  for (int img = 0; img < n; img++) {
    for (int ch = 0; ch < c; ch++)
      mean[ch] = gpunet_se_mean_from_tiles (sums + ((long long) img * c + ch) * strips, strips, op);
    for (int r = 0; r < rd; r++) {
      float d = 0.0f;
      for (int i = 0; i < c; i++)
        d += w1[(long long) r * c + i] * mean[i];
      mid[r] = gpunet_se_mid (d, b1[r], sp.act);
    }
    for (int ch = 0; ch < c; ch++) {
      const float gate = gpunet_se_gate_seq (w2 + (long long) ch * rd, mid, rd, b2[ch]);
      for (long long pos = 0; pos < op; pos++)
        got[((long long) img * op + pos) * c + ch] *= gate;
    }
  }
  const double e = max_rel (got, se_ref, (size_t) (n * c * op));
  CHECK_MSG (e < 2e-6, "NHWC SE from strip sums off the reference by %.3g (c %d, %dx%d)", e, c,
      p.oh, p.ow);
  free (w), free (b), free (x), free (ref), free (xh), free (refh), free (got), free (sums);
  free (w1), free (b1), free (w2), free (b2), free (scratch), free (se_ref), free (mean), free (mid);
}

/* fp16: the NHWC window and epilogue give the NCHW fp16 forms' floats. */
static void
test_half_forms (void)
{
  const int c = 6, ih = 11, iw = 9, k = 5, stride = 2, pad = 2, n = 1;
  const long long ip = (long long) ih * iw;
  const size_t total = (size_t) n * c * ip;
  float *x = rand_array (total, 2.0f), *w = rand_array ((size_t) c * k * k, 0.5f);
  gpunet_half *xh = malloc (total * sizeof *xh), *xn = malloc (total * sizeof *xn);
  gpunet_half *wh = malloc ((size_t) c * k * k * sizeof *wh);
  for (size_t i = 0; i < total; i++)
    xh[i] = gpunet_half_from_float (x[i]);
  for (long long i = 0; i < (long long) total; i++)
    xn[i] = xh[gpunet_nhwc_to_nchw (i, c, ip)];
  for (int i = 0; i < c * k * k; i++)
    wh[i] = gpunet_half_from_float (w[i]);
  const int oh = gpunet_conv_out_dim (ih, k, stride, pad), ow = gpunet_conv_out_dim (iw, k, stride, pad);
  int same = 1;
  for (int ch = 0; ch < c; ch++)
    for (int oy = 0; oy < oh; oy++)
      for (int ox = 0; ox < ow; ox++) {
        const float a = gpunet_dwconv_at_h (xh + ch * ip, ih, iw, wh + ch * k * k, k, stride, pad, oy, ox);
        const float bb = gpunet_dwconv_nhwc_at_h (xn, ih, iw, c, ch, wh + ch * k * k, k, stride, pad, oy, ox);
        same &= memcmp (&a, &bb, sizeof a) == 0;
      }
  CHECK_MSG (same, "the fp16 NHWC depthwise window differs from the NCHW one");
  float bias[6];
  for (int i = 0; i < c; i++)
    bias[i] = check_frand ();
  same = 1;
  for (long long i = 0; i < (long long) total; i++) {
    const long long src = gpunet_nhwc_to_nchw (i, c, ip);
    const float a = gpunet_epilogue_at_h (xh, bias, xh, src, c, ip, GPUNET_EPI_SWISH);
    const float bb = gpunet_epilogue_nhwc_at_h (xn, bias, xn, i, c, GPUNET_EPI_SWISH);
    same &= memcmp (&a, &bb, sizeof a) == 0;
  }
  CHECK_MSG (same, "the fp16 NHWC epilogue differs from the NCHW one");
  float mid[7];
  gpunet_half w2[7];
  float w2f[7];
  for (int r = 0; r < 7; r++) {
    mid[r] = check_frand ();
    w2[r] = gpunet_half_from_float (check_frand ());
    w2f[r] = gpunet_half_to_float (w2[r]);
  }
  const float g1 = gpunet_se_gate_seq_h (w2, mid, 7, 0.25f), g2 = gpunet_se_gate_seq (w2f, mid, 7, 0.25f);
  CHECK (memcmp (&g1, &g2, sizeof g1) == 0);
  free (x), free (w), free (xh), free (xn), free (wh);
}

/* The pool kernel's per-(image, channel) sum in its order against the reference. */
static void
test_pool (void)
{
  const int n = 2, c = 7, h = 5, w = 3;
  const long long plane = (long long) h * w;
  float *x = rand_array ((size_t) (n * c * plane), 1.0f);
  float ref[2 * 7], got[2 * 7];
  gpunet_avgpool_params p = { .c = c, .h = h, .w = w };
  gpunet_cpu_avgpool (&p, x, ref, n);
  float *xh = to_nhwc (x, n, c, plane);
  for (int img = 0; img < n; img++)
    for (int ch = 0; ch < c; ch++) {
      /* the kernel's order: thread rows of strided positions, then the rows */
      float total = 0.0f;
      for (int ty = 0; ty < GPUNET_NHWC_TY; ty++) {
        float acc = 0.0f;
        for (long long pos = ty; pos < plane; pos += GPUNET_NHWC_TY)
          acc += xh[((long long) img * plane + pos) * c + ch];
        total += acc;
      }
      got[img * c + ch] = total / (float) plane;
    }
  const double e = max_rel (got, ref, (size_t) (n * c));
  CHECK_MSG (e < 1e-6, "NHWC pool off the reference by %.3g", e);
  free (x), free (xh);
}

/* nhwcstrip=fill: the strip lengths chosen, and every length's thread mapping (strip
 * `strip` of `slen` positions, thread row ty at positions ty, ty + TY, ... of it, as the
 * depthwise kernels loop) covering each position of a plane exactly once. */
static void
test_fill_strip (void)
{
  /* GPUNet-P1's 5632 x 7 x 7 at batch 1 in fp16 pairs: 88 channel groups; on 132 SMs
   * (528 blocks wanted) 64 gives 88 blocks, 8 gives 616 */
  CHECK (gpunet_nhwc_fill_strip (49, 88, 1, 528) == 8);
  CHECK (gpunet_nhwc_fill_strip (49, 88, 4, 528) == 32);    /* batch 4: 352, then 704 */
  CHECK (gpunet_nhwc_fill_strip (49, 88, 8, 528) == 64);    /* batch 8: 704 */
  CHECK (gpunet_nhwc_fill_strip (49, 88, 1, 0) == 64);
  /* GPUNet-D1's 33 x 228 x 228: 1 group x 813 strips of 64 */
  CHECK (gpunet_nhwc_fill_strip (228 * 228, 1, 1, 528) == 64);
  /* too few channels for any length: the shortest */
  CHECK (gpunet_nhwc_fill_strip (16, 1, 1, 528) == GPUNET_NHWC_TY);
  for (long long positions = 1; positions <= 300; positions += 7)
    for (int groups = 1; groups <= 200; groups += 33) {
      const int slen = gpunet_nhwc_fill_strip (positions, groups, 1, 528);
      CHECK_MSG (slen == 8 || slen == 16 || slen == 32 || slen == 64, "length %d", slen);
      /* the longest that fills, or the shortest */
      const long long blocks = groups * ((positions + slen - 1) / slen);
      const long long longer = slen < 64 ? groups * ((positions + 2 * slen - 1) / (2 * slen)) : 0;
      CHECK_MSG ((blocks >= 528 || slen == 8) && (slen == 64 || longer < 528),
          "positions %lld groups %d: length %d", positions, groups, slen);
    }
  for (int slen = GPUNET_NHWC_TY; slen <= GPUNET_NHWC_STRIP; slen *= 2)
    for (long long positions = 1; positions <= 200; positions += 13) {
      int seen[200] = { 0 }, bad = 0;
      const long long strips = (positions + slen - 1) / slen;
      for (long long strip = 0; strip < strips; strip++)
        for (int ty = 0; ty < GPUNET_NHWC_TY; ty++)
          for (int i = ty; i < slen; i += GPUNET_NHWC_TY) {
            const long long pos = strip * slen + i;
            if (pos >= positions)
              break;
            seen[pos]++;
          }
      for (long long p = 0; p < positions; p++)
        bad += seen[p] != 1;
      CHECK_MSG (bad == 0, "strips of %d over %lld positions: %d positions not covered once",
          slen, positions, bad);
    }
}

int
main (void)
{
  test_fill_strip ();
  test_index_maps ();
  test_krsc_conv ();
  /* GPUNet's depthwise shapes: k 3/5, stride 1/2, odd and even sizes, planes of one
   * strip and of several with a partial last one, channels past one 32-channel group */
  test_dw_se (3, 1, 20, 20, 40, 4);
  test_dw_se (3, 2, 39, 39, 8, 3);
  test_dw_se (5, 2, 20, 20, 9, 5);
  test_dw_se (5, 1, 10, 10, 16, 4);
  test_dw_se (3, 1, 4, 4, 5, 2);
  test_half_forms ();
  test_pool ();
  return check_report ();
}
