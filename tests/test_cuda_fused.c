/* test_cuda_fused.c: CPU-side tests of the opt-in fused CUDA kernels: the GPUNET_HD
 * functions of kernels/cuda/cuda_fused.h, run in the order the kernels' warps and blocks
 * run them (head.cu: pool + classifier + softmax + top-k; dwconv2d.cu's squeeze and
 * se.cu's excite), against the reference CPU ops (avgpool, linear, topk, dwconv2d, se);
 * and which ops of the built-in models the fused path takes (cuda_fusion.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_ops.h"
#include "arch.h"
#include "cuda/cuda_fused.h"
#include "cuda/cuda_fusion.h"
#include "gpunet.h"
#include "half.h"
#include "model_private.h"

/* A value rounded through half, and a half copy of an array. */
static float
rh (float v)
{
  return gpunet_half_to_float (gpunet_half_from_float (v));
}

static gpunet_half *
half_array (const float *a, size_t n)
{
  gpunet_half *h = malloc ((n ? n : 1) * sizeof *h);
  for (size_t i = 0; i < n; i++)
    h[i] = gpunet_half_from_float (a[i]);
  return h;
}

/* gpunet_warp_tree_sum against __shfl_down_sync's semantics simulated for all 32 lanes
 * (every lane reads lane l + off's value before any lane adds; lanes past 31 keep their
 * own): lane 0's total must be the same float. */
static void
test_warp_tree (void)
{
  int same = 1;
  for (int rep = 0; rep < 200; rep++) {
    float a[32], b[32];
    for (int l = 0; l < 32; l++)
      a[l] = b[l] = check_frand () * (rep % 7 == 0 ? 1e6f : 1.0f);
    for (int off = 16; off > 0; off /= 2) {
      float src[32];
      memcpy (src, b, sizeof src);
      for (int l = 0; l < 32; l++)
        b[l] += l + off < 32 ? src[l + off] : src[l];
    }
    const float t = gpunet_warp_tree_sum (a);
    same &= memcmp (&t, &b[0], sizeof t) == 0;
  }
  CHECK_MSG (same, "the warp tree differs from the shuffle-down reduction");
  /* the block tree: 128 threads' shares, stride 64 .. 1 */
  float part[128];
  double want = 0.0;
  for (int i = 0; i < 128; i++) {
    part[i] = (float) i;
    want += i;
  }
  for (int s = 64; s > 0; s >>= 1)
    for (int t = 0; t < 128; t++)
      gpunet_tree_step (part, t, s);
  CHECK (part[0] == (float) want);
}

/* The fused head as head_kernel runs it, for image `img`: pooled means, float logits and
 * (k > 0) top-k.  half: input and weights stored as half. */
static void
run_head (const float *x, const gpunet_half *xh, const float *w, const gpunet_half *wh,
    const float *b, int c, long long plane, int classes, int act, int k, int img,
    float *pooled, float *logits, gpunet_class_score *out)
{
  const int half = xh != NULL;
  for (int ch0 = 0; ch0 < c; ch0 += GPUNET_HEAD_ROWS) {
    const int m = c - ch0 < GPUNET_HEAD_ROWS ? c - ch0 : GPUNET_HEAD_ROWS;
    float lanes[GPUNET_HEAD_ROWS][32];
    for (int l = 0; l < 32; l++) {
      float acc[GPUNET_HEAD_ROWS];
      const long long off = ((long long) img * c + ch0) * plane;
      if (half)
        gpunet_row_sum_partials_h (xh + off, plane, m, l, 32, acc);
      else
        gpunet_row_sum_partials (x + off, plane, m, l, 32, acc);
      for (int u = 0; u < GPUNET_HEAD_ROWS; u++)
        lanes[u][l] = acc[u];
    }
    for (int u = 0; u < m; u++)
      pooled[ch0 + u] = gpunet_head_mean (gpunet_warp_tree_sum (lanes[u]), plane);
  }
  const int n_pow2 = gpunet_pow2_ceil (classes);
  float *val = malloc (sizeof (float) * n_pow2);
  int *id = malloc (sizeof (int) * n_pow2);
  for (int j = 0; j < classes; j++) {
    float lanes[32];
    for (int l = 0; l < 32; l++)
      lanes[l] = half ? gpunet_dot_partial_hf (wh + (long long) j * c, pooled, c, l, 32)
          : gpunet_dot_partial (w + (long long) j * c, pooled, c, l, 32);
    logits[j] = gpunet_head_logit (gpunet_warp_tree_sum (lanes), b ? b[j] : 0.0f, act);
    val[j] = logits[j];
    id[j] = j;
  }
  if (k > 0) {
    for (int i = classes; i < n_pow2; i++) {
      val[i] = 0.0f;
      id[i] = -1;
    }
    for (int size = 2; size <= n_pow2; size <<= 1)
      for (int stride = size >> 1; stride > 0; stride >>= 1)
        for (int i = 0; i < n_pow2; i++)
          gpunet_bitonic_step (val, id, i, size, stride);
    const double max = val[0];
    double *part = malloc (sizeof (double) * GPUNET_HEAD_THREADS);
    for (int t = 0; t < GPUNET_HEAD_THREADS; t++)
      part[t] = gpunet_softmax_partial (val, classes, max, t, GPUNET_HEAD_THREADS);
    for (int s = GPUNET_HEAD_THREADS / 2; s > 0; s >>= 1)
      for (int t = 0; t < GPUNET_HEAD_THREADS; t++)
        gpunet_tree_step_d (part, t, s);
    for (int j = 0; j < k; j++) {
      out[j].id = id[j];
      out[j].score = gpunet_softmax_score (val[j], max, part[0]);
    }
    free (part);
  }
  free (val);
  free (id);
}

static void
test_head (void)
{
  static const struct { int n, c, h, w, classes, k; } shapes[] = {
    { 2, 37, 5, 5, 11, 5 },      /* plane 25 < 32 lanes */
    { 1, 64, 7, 7, 1000, 5 },    /* GPUNet's 7 x 7 head plane, 1000 classes */
    { 2, 130, 9, 9, 33, 33 },    /* k = classes */
    { 1, 3, 1, 1, 1, 1 },
  };
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    const int n = shapes[si].n, c = shapes[si].c, classes = shapes[si].classes, k = shapes[si].k;
    const long long plane = (long long) shapes[si].h * shapes[si].w;
    const int act = GPUNET_EPI_NONE;
    CHECK (gpunet_head_shared_bytes (c, classes) <= 48 * 1024);
    float *x = check_frand_array ((size_t) n * c * plane), *w = check_frand_array ((size_t) classes * c);
    float *b = check_frand_array ((size_t) classes);
    float *ref_pool = malloc (sizeof (float) * n * c), *ref_logits = malloc (sizeof (float) * n * classes);
    float *pooled = malloc (sizeof (float) * c), *logits = malloc (sizeof (float) * n * classes);
    gpunet_class_score *got = malloc (sizeof *got * k), *want = malloc (sizeof *want * k);
    const gpunet_avgpool_params pp = { c, shapes[si].h, shapes[si].w };
    const gpunet_linear_params lp = { c, classes, act, w, b };
    gpunet_cpu_avgpool (&pp, x, ref_pool, n);
    gpunet_cpu_linear (&lp, ref_pool, ref_logits, n);
    for (int half = 0; half <= 1; half++) {
      /* fp16: the reference reads the same half-rounded input and weights */
      float *xr = malloc (sizeof (float) * n * c * plane), *wr = malloc (sizeof (float) * classes * c);
      for (long long i = 0; i < (long long) n * c * plane; i++)
        xr[i] = half ? rh (x[i]) : x[i];
      for (long long i = 0; i < (long long) classes * c; i++)
        wr[i] = half ? rh (w[i]) : w[i];
      gpunet_half *xh = half ? half_array (x, (size_t) n * c * plane) : NULL;
      gpunet_half *wh = half ? half_array (w, (size_t) classes * c) : NULL;
      const gpunet_linear_params lpr = { c, classes, act, wr, b };
      gpunet_cpu_avgpool (&pp, xr, ref_pool, n);
      gpunet_cpu_linear (&lpr, ref_pool, ref_logits, n);
      double worst_pool = 0.0, worst_logit = 0.0, worst_score = 0.0;
      int ids_ok = 1;
      for (int img = 0; img < n; img++) {
        run_head (x, xh, w, wh, b, c, plane, classes, act, k, img, pooled, logits + (size_t) img * classes,
            got);
        worst_pool = fmax (worst_pool, check_rel_err (pooled, ref_pool + (size_t) img * c, (size_t) c));
        worst_logit = fmax (worst_logit, check_rel_err (logits + (size_t) img * classes,
            ref_logits + (size_t) img * classes, (size_t) classes));
        /* the top-k of the fused logits must be the CPU's selection of those logits; the
         * CPU's scores of its own logits agree within fp32 rounding */
        gpunet_topk_softmax (logits + (size_t) img * classes, classes, k, want);
        for (int j = 0; j < k; j++) {
          ids_ok &= got[j].id == want[j].id;
          worst_score = fmax (worst_score, fabs ((double) got[j].score - want[j].score));
        }
      }
      CHECK_MSG (worst_pool <= 1e-6 && worst_logit <= 1e-5 && ids_ok && worst_score <= 1e-6,
          "fused head shape %zu (%s): pool rel err %.2e, logits rel err %.2e, top-%d ids %s, "
          "score diff %.2e", si, half ? "fp16" : "fp32", worst_pool, worst_logit, k,
          ids_ok ? "equal" : "differ", worst_score);
      free (xr);
      free (wr);
      free (xh);
      free (wh);
    }
    free (x);
    free (w);
    free (b);
    free (ref_pool);
    free (ref_logits);
    free (pooled);
    free (logits);
    free (got);
    free (want);
  }
}

/* The head pools four channels at a time: each lane's shares are the one-row function's
 * bits, in float and half, for full groups and the last, shorter one. */
static void
test_row_sum_partials (void)
{
  static const long long planes[] = { 1, 31, 32, 49, 100, 144, 289 };
  for (size_t pi = 0; pi < sizeof planes / sizeof planes[0]; pi++) {
    const long long plane = planes[pi];
    float *rows = malloc (sizeof (float) * GPUNET_HEAD_ROWS * plane);
    gpunet_half *rows_h = malloc (sizeof (gpunet_half) * GPUNET_HEAD_ROWS * plane);
    for (long long i = 0; i < GPUNET_HEAD_ROWS * plane; i++) {
      rows[i] = check_frand () * 3.0f;
      rows_h[i] = gpunet_half_from_float (rows[i]);
    }
    int same = 1;
    for (int m = 1; m <= GPUNET_HEAD_ROWS; m++)
      for (int l = 0; l < 32; l++) {
        float acc[GPUNET_HEAD_ROWS], acc_h[GPUNET_HEAD_ROWS];
        gpunet_row_sum_partials (rows, plane, m, l, 32, acc);
        gpunet_row_sum_partials_h (rows_h, plane, m, l, 32, acc_h);
        for (int u = 0; u < GPUNET_HEAD_ROWS; u++) {
          const float want = u < m ? gpunet_row_sum_partial (rows + u * plane, plane, l, 32) : 0.0f;
          const float want_h = u < m ? gpunet_row_sum_partial_h (rows_h + u * plane, plane, l, 32)
              : 0.0f;
          same &= memcmp (&acc[u], &want, sizeof want) == 0
              && memcmp (&acc_h[u], &want_h, sizeof want_h) == 0;
        }
      }
    CHECK_MSG (same, "row_sum_partials over a plane of %lld: not the one-row shares' bits", plane);
    free (rows);
    free (rows_h);
  }
}

/* The head's blocks per image and their classes (head.cu's loop): every class once. */
static void
test_head_split (void)
{
  CHECK (gpunet_head_split (1) == 1 && gpunet_head_split (64) == 1 && gpunet_head_split (65) == 2);
  CHECK (gpunet_head_split (1000) == 16 && gpunet_head_split (GPUNET_CUDA_TOPK_MAX) == 32);
  CHECK (gpunet_head_split (1 << 20) == GPUNET_HEAD_MAX_SPLIT);
  static const int class_counts[] = { 1, 11, 63, 64, 65, 1000, 1001, 2048 };
  const int warps = GPUNET_HEAD_THREADS / 32;
  for (size_t ci = 0; ci < sizeof class_counts / sizeof class_counts[0]; ci++) {
    const int classes = class_counts[ci], split = gpunet_head_split (classes);
    int *count = calloc ((size_t) classes, sizeof (int)), ok = 1;
    for (int part = 0; part < split; part++)
      for (int warp = 0; warp < warps; warp++)
        for (int j = part * warps + warp; j < classes; j += warps * split)
          count[j]++;
    for (int j = 0; j < classes; j++)
      ok &= count[j] == 1;
    CHECK_MSG (ok, "%d classes in %d blocks: a class computed other than once", classes, split);
    free (count);
  }
}

/* The reduce kernel's blocks per image and their rows (se.cu's loop): every row once. */
static void
test_se_split (void)
{
  static const int rds[] = { 1, 7, 8, 9, 64, 176, 511, 512, 513, 2000 };
  const int warps = GPUNET_EXCITE_THREADS / 32;
  for (size_t ri = 0; ri < sizeof rds / sizeof rds[0]; ri++) {
    const int rd = rds[ri], split = gpunet_se_split (rd);
    int *count = calloc ((size_t) rd, sizeof (int)), ok = split >= 1 && split <= 64;
    for (int part = 0; part < split; part++)
      for (int warp = 0; warp < warps; warp++)
        for (int r = part * warps + warp; r < rd; r += warps * split)
          count[r]++;
    for (int r = 0; r < rd; r++)
      ok &= count[r] == 1;
    CHECK_MSG (ok, "rd %d in %d blocks: a row computed other than once", rd, split);
    free (count);
  }
  CHECK (gpunet_se_split (176) == 22 && gpunet_se_split (64) == 8);
}

/* Equal logits: the fused selection keeps the lower id first (cuda_topk.h's order), like
 * gpunet_topk_softmax. */
static void
test_head_ties (void)
{
  const int c = 4, classes = 9, k = 4;
  float x[4] = { 1.0f, 1.0f, 1.0f, 1.0f }, w[36], pooled[4], logits[9];
  for (int i = 0; i < 36; i++)
    w[i] = (i / 4) % 3 == 0 ? 0.5f : 0.25f;   /* classes 0, 3, 6 tie at 2.0 */
  gpunet_class_score got[4], want[4];
  run_head (x, NULL, w, NULL, NULL, c, 1, classes, GPUNET_EPI_NONE, k, 0, pooled, logits, got);
  gpunet_topk_softmax (logits, classes, k, want);
  CHECK (got[0].id == 0 && got[1].id == 3 && got[2].id == 6 && got[3].id == 1);
  for (int j = 0; j < k; j++)
    CHECK (got[j].id == want[j].id && fabsf (got[j].score - want[j].score) <= 1e-7f);
}

/* The fused SE as the kernels run it: the tiled depthwise kernel with its squeeze (every
 * tile of every plane, 128 threads' shares and the block tree), then the reduce kernel
 * (means from the tile sums, warp trees) and the gate kernel (warp tree, scale), against
 * gpunet_cpu_dwconv2d + gpunet_cpu_se. */
static void
test_se_fused (void)
{
  static const struct { int n, c, rd, ih, iw, k, stride; } shapes[] = {
    { 1, 3, 2, 10, 10, 3, 1 }, { 2, 5, 3, 56, 56, 5, 1 }, { 1, 4, 8, 57, 57, 3, 2 },
    { 1, 2, 1, 112, 112, 3, 1 }, { 1, 40, 10, 7, 7, 7, 1 }, { 2, 3, 2, 33, 71, 7, 2 },
  };
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    const int n = shapes[si].n, c = shapes[si].c, rd = shapes[si].rd, ih = shapes[si].ih;
    const int iw = shapes[si].iw, k = shapes[si].k, stride = shapes[si].stride, pad = k / 2;
    const int oh = gpunet_conv_out_dim (ih, k, stride, pad), ow = gpunet_conv_out_dim (iw, k, stride, pad);
    const int act = si % 2 ? GPUNET_EPI_SWISH : GPUNET_EPI_RELU, se_act = GPUNET_EPI_RELU;
    const long long plane = (long long) oh * ow;
    const size_t in_n = (size_t) n * c * ih * iw, out_n = (size_t) n * c * plane;
    float *x = check_frand_array (in_n), *w = check_frand_array ((size_t) c * k * k), *bias = check_frand_array ((size_t) c);
    float *w1 = check_frand_array ((size_t) rd * c), *b1 = check_frand_array ((size_t) rd);
    float *w2 = check_frand_array ((size_t) c * rd), *b2 = check_frand_array ((size_t) c);
    const gpunet_dwconv2d_params dp = { c, k, stride, pad, ih, iw, oh, ow, act, w, bias };
    const gpunet_se_params sp = { c, rd, oh, ow, se_act, w1, b1, w2, b2 };
    float *ref = malloc (sizeof (float) * out_n), *scratch = malloc (sizeof (float) * (c + rd));
    gpunet_cpu_dwconv2d (&dp, x, ref, n);
    float *ref_dw = malloc (sizeof (float) * out_n);
    memcpy (ref_dw, ref, sizeof (float) * out_n);
    gpunet_cpu_se (&sp, ref, scratch, n);

    const gpunet_dw_tiling t = gpunet_dw_tiling_for (oh, ow, k, stride, 256);
    const int tiles = t.tiles_x * t.tiles_y;
    float *tile = malloc (sizeof (float) * (size_t) t.in_rows * t.in_stride), wk[49];
    float *got = malloc (sizeof (float) * out_n), *sums = malloc (sizeof (float) * n * c * tiles);
    float part[GPUNET_DW_SQ_THREADS];
    for (long long pl = 0; pl < (long long) n * c; pl++) {
      const int ch = (int) (pl % c);
      for (int i = 0; i < k * k; i++)
        wk[i] = w[ch * k * k + i];
      for (int tile_i = 0; tile_i < tiles; tile_i++) {
        const int ty = tile_i / t.tiles_x, tx = tile_i % t.tiles_x;
        for (int r = 0; r < t.in_rows; r++)
          for (int col = 0; col < t.in_stride; col++) {
            long long off = 0;
            tile[r * t.in_stride + col] = gpunet_dw_tile_src (&t, ty, tx, stride, pad, ih, iw, r,
                col, &off) ? x[pl * ih * iw + off] : 0.0f;
          }
        for (int th = 0; th < GPUNET_DW_SQ_THREADS; th++) {
          float sq = 0.0f;
          for (int q = th; q < t.quads; q += GPUNET_DW_SQ_THREADS) {
            float acc[4], o[4];
            int inside[4], oy[4], ox[4];
            gpunet_dwconv_quad_at (tile, &t, wk, k, stride, q, acc);
            sq += gpunet_dw_quad_store (&t, ty, tx, q, oh, ow, acc, bias[ch], act, 0, o, inside, oy, ox);
            for (int j = 0; j < 4; j++)
              if (inside[j])
                got[pl * plane + (long long) oy[j] * ow + ox[j]] = o[j];
          }
          part[th] = sq;
        }
        for (int s = GPUNET_DW_SQ_THREADS / 2; s > 0; s >>= 1)
          for (int th = 0; th < GPUNET_DW_SQ_THREADS; th++)
            gpunet_tree_step (part, th, s);
        sums[pl * tiles + tile_i] = part[0];
      }
    }
    const double e_dw = check_rel_err (got, ref_dw, out_n);
    /* the reduce and gate kernels, one image at a time */
    float *mean = malloc (sizeof (float) * c), *mid = malloc (sizeof (float) * rd);
    double worst_mean = 0.0;
    for (int img = 0; img < n; img++) {
      for (int ch = 0; ch < c; ch++) {
        mean[ch] = gpunet_se_mean_from_tiles (sums + ((long long) img * c + ch) * tiles, tiles, plane);
        double s = 0.0;
        for (long long i = 0; i < plane; i++)
          s += ref_dw[((long long) img * c + ch) * plane + i];
        worst_mean = fmax (worst_mean, fabs (mean[ch] - s / (double) plane));
      }
      for (int r = 0; r < rd; r++) {
        float lanes[32];
        for (int l = 0; l < 32; l++)
          lanes[l] = gpunet_dot_partial (w1 + (long long) r * c, mean, c, l, 32);
        mid[r] = gpunet_se_mid (gpunet_warp_tree_sum (lanes), b1[r], se_act);
      }
      for (int ch = 0; ch < c; ch++) {
        float lanes[32];
        for (int l = 0; l < 32; l++)
          lanes[l] = gpunet_dot_partial (w2 + (long long) ch * rd, mid, rd, l, 32);
        const float gate = gpunet_se_gate (gpunet_warp_tree_sum (lanes), b2[ch]);
        float *xc = got + ((long long) img * c + ch) * plane;
        for (long long i = 0; i < plane; i++)   /* gate_scale_kernel */
          xc[i] = xc[i] * gate;
      }
    }
    const double e_se = check_rel_err (got, ref, out_n);
    CHECK_MSG (e_dw <= 1e-6 && worst_mean <= 1e-5 && e_se <= 1e-5,
        "fused SE shape %zu (%d tiles): dw rel err %.2e, mean abs err %.2e, SE rel err %.2e", si,
        tiles, e_dw, worst_mean, e_se);
    CHECK (gpunet_excite_shared_bytes (c, rd) <= 48 * 1024);
    free (x);
    free (w);
    free (bias);
    free (w1);
    free (b1);
    free (w2);
    free (b2);
    free (ref);
    free (ref_dw);
    free (scratch);
    free (tile);
    free (got);
    free (sums);
    free (mean);
    free (mid);
  }
}

/* fp16 storage: the squeeze adds the outputs as stored (rounded to half), so the means
 * are those of the tensor the unfused SE would read. */
static void
test_squeeze_half (void)
{
  const gpunet_dw_tiling t = gpunet_dw_tiling_for (6, 6, 3, 1, 256);
  float acc[4] = { 0.1f, 1.0f / 3.0f, 2.0f / 3.0f, 1e-4f }, o[4];
  int inside[4], oy[4], ox[4];
  /* quad 1 of a 6-wide row covers columns 4..7: only 4 and 5 are inside */
  const float s = gpunet_dw_quad_store (&t, 0, 0, 1, 6, 6, acc, 0.0f, GPUNET_EPI_NONE, 1, o,
      inside, oy, ox);
  CHECK (inside[0] && inside[1] && !inside[2] && !inside[3]);
  CHECK (o[0] == rh (0.1f) && o[1] == rh (1.0f / 3.0f) && o[2] == rh (2.0f / 3.0f));
  CHECK (s == rh (0.1f) + rh (1.0f / 3.0f));
  CHECK (gpunet_stored (0.1f, 0) == 0.1f);
}

/* On each built-in model: the DWCONV2D -> SE pairs and the head the fused path takes,
 * and that each fits the kernel limits plan_fusion checks on the device (the tiled
 * depthwise shapes with the squeeze's 512 static bytes, the excite's and the head's
 * shared memory), so the fused path does not silently fall back there. */
static void
test_fusion_plan (void)
{
  static const struct { const char *name; int pairs, head; } want[] = {
    { "gpunet-0", 2, 1 }, { "gpunet-1", 5, 1 }, { "gpunet-2", 8, 1 }, { "gpunet-p0", 0, 1 },
    { "gpunet-p1", 0, 1 }, { "gpunet-d1", 0, 0 }, { "gpunet-d2", 0, 0 },
  };
  const char *const *names = gpunet_arch_builtin_names ();
  int seen = 0;
  for (int m = 0; names[m]; m++) {
    gpunet_model *model = NULL;
    char *err = NULL;
    if (gpunet_model_new_random (names[m], 1, &model, &err) != GPUNET_OK) {
      CHECK_MSG (0, "%s: %s", names[m], err ? err : "?");
      free (err);
      continue;
    }
    const gpunet_graph *g = gpunet_model_graph (model);
    int pairs = 0, fits = 1;
    for (int i = 0; i < g->n_ops; i++) {
      if (!gpunet_fusion_dw_se_at (g, i))
        continue;
      pairs++;
      const gpunet_dwconv2d_params *dp = &g->ops[i].p.dwconv2d;
      const gpunet_se_params *sp = &g->ops[i + 1].p.se;
      const int k = dp->kernel, st = dp->stride;
      const gpunet_dw_tiling t = gpunet_dw_tiling_for (dp->oh, dp->ow, k, st, 256);
      fits &= (k == 3 || k == 5 || k == 7) && (st == 1 || st == 2)
          && 4 * ((long long) t.in_rows * t.in_stride + k * k) + 4 * GPUNET_DW_SQ_THREADS <= 48 * 1024
          && gpunet_excite_shared_bytes (sp->c, sp->rd) <= 48 * 1024;
    }
    const int head = gpunet_fusion_head_op (g);
    if (head >= 0) {
      const gpunet_linear_params *lp = &g->ops[head + 1].p.linear;
      fits &= head == g->n_ops - 2 && lp->cout <= GPUNET_CUDA_TOPK_MAX
          && gpunet_head_shared_bytes (lp->cin, lp->cout) <= 48 * 1024 - 64;
    }
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++)
      if (!strcmp (want[w].name, names[m])) {
        seen++;
        CHECK_MSG (pairs == want[w].pairs && (head >= 0) == want[w].head && fits,
            "%s: %d depthwise + SE pairs (want %d), head %d, %s", names[m], pairs, want[w].pairs,
            head, fits ? "fits" : "exceeds a kernel limit");
      }
    gpunet_model_unref (model);
  }
  CHECK (seen == (int) (sizeof want / sizeof want[0]));
}

int
main (void)
{
  check_rng_seed (0x243f6a8885a308d3ull);
  test_warp_tree ();
  test_row_sum_partials ();
  test_head ();
  test_head_ties ();
  test_head_split ();
  test_se_fused ();
  test_squeeze_half ();
  test_se_split ();
  test_fusion_plan ();
  return check_report ();
}
