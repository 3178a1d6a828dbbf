/* test_backend_ops.c: every op and whole networks on the fast CPU backend (oneDNN) against
 * the reference CPU backend: hand-built graphs per op kind and shape (grouped, depthwise,
 * stride 2, k 5/7, residual in place and copied, SE, pool, linear), random GPUNets and the
 * golden fixtures, batch 1 and 3 (and 2 on a batch-3 plan); logits within relative 1e-4.
 * With the argument `cuda`, the same graphs on the CUDA backend in fp32 (logits within
 * 1e-3, the self-test's network bound); `cuda-all` also in fp16 (1e-2), on the NHWC network
 * and with the options that await a measurement (run_cuda); exit 77 where no CUDA
 * backend runs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gpunet.h"
#include "model_private.h"
#include "activation.h"
#include "backend.h"
#include "registry.h"
#include "onednn/blocked_ops.h"
#include "onednn/dwconv.h"
#include "onednn/pwconv.h"
#include "onednn/linear.h"
#include "onednn/se.h"
#include "onednn/winograd.h"
#include "onednn/backend_onednn.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float
frand (void)   /* uniform in [-1, 1) */
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float) ((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

/* All test allocations, freed at the end. */
#define POOL_MAX 16384
static void *pool[POOL_MAX];
static int n_pool;

static float *
rand_floats (size_t n, float scale)
{
  if (n_pool == POOL_MAX) {
    fprintf (stderr, "test_backend_ops: more than %d test allocations: raise POOL_MAX\n", POOL_MAX);
    abort ();
  }
  float *p = malloc (sizeof (float) * (n ? n : 1));
  for (size_t i = 0; i < n; i++)
    p[i] = frand () * scale;
  pool[n_pool++] = p;
  return p;
}

/* A graph under construction: tensor 0 is the input. */
typedef struct {
  gpunet_graph g;
  gpunet_op ops[16];
  gpunet_tensor_desc t[17];
} test_graph;

static void
tg_init (test_graph *tg, int c, int h, int w)
{
  memset (tg, 0, sizeof *tg);
  tg->g.ops = tg->ops;
  tg->g.tensors = tg->t;
  tg->t[0] = (gpunet_tensor_desc) { c, h, w, -1 };
  tg->g.n_tensors = 1;
}

static int
tg_tensor (test_graph *tg, int c, int h, int w)
{
  tg->t[tg->g.n_tensors] = (gpunet_tensor_desc) { c, h, w, tg->g.n_ops };
  return tg->g.n_tensors++;
}

static gpunet_op *
tg_op (test_graph *tg, gpunet_op_kind kind, int in, int out)
{
  gpunet_op *op = &tg->ops[tg->g.n_ops];
  memset (op, 0, sizeof *op);
  op->kind = kind;
  op->in = in;
  op->out = out;
  op->residual = -1;
  op->block = tg->g.n_ops++;
  tg->g.output = out;
  tg->g.n_blocks = tg->g.n_ops;
  return op;
}

static int
tg_conv_pad (test_graph *tg, int in, int cout, int k, int stride, int pad, int groups, int act,
    int residual)
{
  const gpunet_tensor_desc ti = tg->t[in];
  const int oh = (ti.h + 2 * pad - k) / stride + 1, ow = (ti.w + 2 * pad - k) / stride + 1;
  const int out = tg_tensor (tg, cout, oh, ow);
  const int per = ti.c / groups * k * k;
  const float *w = rand_floats ((size_t) cout * per, 1.7f / sqrtf ((float) per));
  const float *b = rand_floats ((size_t) cout, 0.2f);
  if (groups == ti.c && groups == cout && groups > 1) {
    gpunet_op *op = tg_op (tg, GPUNET_OP_DWCONV2D, in, out);
    op->p.dwconv2d = (gpunet_dwconv2d_params) { cout, k, stride, pad, ti.h, ti.w, oh, ow, act, w, b };
  } else {
    gpunet_op *op = tg_op (tg, GPUNET_OP_CONV2D, in, out);
    op->p.conv2d = (gpunet_conv2d_params) { ti.c, cout, k, stride, pad, groups, ti.h, ti.w, oh, ow,
      act, w, b };
    op->residual = residual;
  }
  return out;
}

static int
tg_conv (test_graph *tg, int in, int cout, int k, int stride, int groups, int act, int residual)
{
  return tg_conv_pad (tg, in, cout, k, stride, ((stride - 1) + (k - 1)) / 2, groups, act, residual);
}

static void
tg_se (test_graph *tg, int x, int rd, int act)
{
  const gpunet_tensor_desc t = tg->t[x];
  gpunet_op *op = tg_op (tg, GPUNET_OP_SE, x, x);
  op->p.se = (gpunet_se_params) { t.c, rd, t.h, t.w, act,
    rand_floats ((size_t) rd * t.c, 2.0f / sqrtf ((float) t.c)), rand_floats ((size_t) rd, 0.2f),
    rand_floats ((size_t) rd * t.c, 2.0f / sqrtf ((float) rd)), rand_floats ((size_t) t.c, 0.5f) };
}

static int
tg_pool_linear (test_graph *tg, int in, int classes, int with_bias)
{
  const gpunet_tensor_desc t = tg->t[in];
  const int p = tg_tensor (tg, t.c, 1, 1);
  tg_op (tg, GPUNET_OP_AVGPOOL, in, p)->p.avgpool = (gpunet_avgpool_params) { t.c, t.h, t.w };
  const int o = tg_tensor (tg, classes, 1, 1);
  tg_op (tg, GPUNET_OP_LINEAR, p, o)->p.linear = (gpunet_linear_params) { t.c, classes,
    GPUNET_EPI_NONE, rand_floats ((size_t) classes * t.c, 1.0f / sqrtf ((float) t.c)),
    with_bias ? rand_floats ((size_t) classes, 0.1f) : NULL };
  return o;
}

/* ---- running both backends ---------------------------------------------------- */

/* The fast backend's options for every plan the tests make (gpunet_session_params.cpu);
 * a test sets what it needs and puts the defaults back (all zero). */
static gpunet_cpu_options opts;

/* When >= 0: compare() checks that the fast plan runs at least one op on this impl
 * (gpunet_onednn_impl), so a test of a kernel cannot pass on another one; and when
 * expect_count is >= 0 too, exactly that many ops. */
static int expect_impl = -1;

/* The backend compared with the reference: the fast CPU one, or CUDA (argument `cuda`),
 * and its bound on the relative error. */
static const gpunet_backend *under_test = &gpunet_backend_cpu_fast;
static int cuda_mode;
static double tol = 1e-4;
/* CUDA: the pass's precision, fused level and options (run_cuda) */
static gpunet_precision cuda_precision = GPUNET_PRECISION_FP32;
static int cuda_fused;
static gpunet_cuda_options cuda_opts;

/* The session parameters both backends are planned with. */
static void
test_params (gpunet_session_params *params, int max_batch)
{
  gpunet_session_params_init (params);
  params->max_batch = max_batch;
  params->n_threads = 2;
  params->cpu = opts;
  params->precision = GPUNET_PRECISION_FP32;
  if (cuda_mode) {
    params->precision = cuda_precision;
    params->cuda_fused = cuda_fused;
    params->cuda = cuda_opts;
  }
}
static int expect_count = -1;
/* expect_count holds only where the plan has the 16-channel AVX-512 block (our 1x1
 * kernels): elsewhere no op may be planned on expect_impl */
static int expect_avx512;

/* How many ops of a planned fast state run on impl */
static int
count_impl (const void *sf, const gpunet_graph *g, int impl)
{
  int n = 0;
  for (int i = 0; i < g->n_ops; i++)
    n += gpunet_onednn_op_impl (sf, i) == impl;
  return n;
}

typedef struct {
  float *data[64];
  size_t len[64];
} trace_store;

static void
store_trace (void *user, int block, const float *data, int n, int c, int h, int w)
{
  trace_store *ts = user;
  if (block < 0 || block >= 64)
    return;
  size_t len = (size_t) n * c * h * w;
  free (ts->data[block]);
  ts->data[block] = malloc (len * sizeof (float));
  memcpy (ts->data[block], data, len * sizeof (float));
  ts->len[block] = len;
}

static double
rel_err (const float *got, const float *want, size_t len)
{
  double diff = 0.0, scale = 1e-20;
  for (size_t i = 0; i < len; i++) {
    double d = fabs ((double) got[i] - (double) want[i]);
    if (!(d <= diff))   /* also catches NaN */
      diff = isnan (d) ? INFINITY : d;
    if (fabs ((double) want[i]) > scale)
      scale = fabs ((double) want[i]);
  }
  return diff / scale;
}

/* Plans both backends for max_batch, runs n images (traced when `traced`), compares the
 * output and every traced block; returns the worst relative error. */
static double
compare (const char *what, const gpunet_graph *g, int max_batch, int n, int traced)
{
  gpunet_session_params params;
  test_params (&params, max_batch);
  const gpunet_tensor_desc *ti = &g->tensors[g->input], *to = &g->tensors[g->output];
  const size_t in_len = (size_t) n * ti->c * ti->h * ti->w, out_len = (size_t) n * to->c * to->h * to->w;
  float *input = rand_floats (in_len, 1.0f);
  float *ref = calloc (out_len, sizeof (float)), *fast = calloc (out_len, sizeof (float));
  void *sr = NULL, *sf = NULL;
  char *err = NULL;
  trace_store tr = { { 0 }, { 0 } }, tf = { { 0 }, { 0 } };
  double worst = INFINITY;

  gpunet_status st = gpunet_backend_plan (&gpunet_backend_cpu_ref, g, &params, &sr, &err);
  CHECK_MSG (st == GPUNET_OK, "%s: reference plan: %s", what, err ? err : "");
  if (st == GPUNET_OK) {
    st = gpunet_backend_plan (under_test, g, &params, &sf, &err);
    CHECK_MSG (st == GPUNET_OK, "%s: fast plan: %s", what, err ? err : "");
    if (st == GPUNET_OK && !cuda_mode && expect_impl >= 0 && expect_count < 0)
      CHECK_MSG (count_impl (sf, g, expect_impl) > 0, "%s: no op planned on impl %d", what,
          expect_impl);
    if (st == GPUNET_OK && !cuda_mode && expect_impl >= 0 && expect_count >= 0) {
      /* an impl of our AVX-512 1x1 kernel cannot be planned on the 8-channel block
       * (an AVX2-only CPU, or oneDNN capped at AVX2 by DNNL_MAX_CPU_ISA): none then */
      const int want = expect_avx512 && !(gpunet_onednn_cpu_paths (sf) & GPUNET_CPU_PATH_AVX512)
          ? 0 : expect_count;
      CHECK_MSG (count_impl (sf, g, expect_impl) == want, "%s: %d ops planned on "
          "impl %d, expected %d", what, count_impl (sf, g, expect_impl), expect_impl, want);
    }
  }
  if (st == GPUNET_OK) {
    st = gpunet_backend_cpu_ref.forward (sr, input, n, ref, traced ? store_trace : NULL, &tr, &err);
    CHECK_MSG (st == GPUNET_OK, "%s: reference forward: %s", what, err ? err : "");
  }
  if (st == GPUNET_OK) {
    /* twice: the second run must not depend on state left by the first */
    st = under_test->forward (sf, input, n, fast, NULL, NULL, &err);
    if (st == GPUNET_OK)
      st = under_test->forward (sf, input, n, fast, traced ? store_trace : NULL, &tf, &err);
    CHECK_MSG (st == GPUNET_OK, "%s: fast forward: %s", what, err ? err : "");
  }
  if (st == GPUNET_OK) {
    worst = rel_err (fast, ref, out_len);
    if (!cuda_mode)
      check_paths_ran (gpunet_onednn_cpu_paths (sf));
    CHECK_MSG (worst <= tol, "%s (batch %d of %d): output relative error %.3g", what, n,
        max_batch, worst);
    for (int b = 0; traced && b < 64; b++) {
      CHECK_MSG (tr.len[b] == tf.len[b], "%s: block %d traced %zu vs %zu values", what, b,
          tf.len[b], tr.len[b]);
      if (tr.len[b] && tr.len[b] == tf.len[b]) {
        double e = rel_err (tf.data[b], tr.data[b], tr.len[b]);
        CHECK_MSG (e <= tol, "%s: block %d trace relative error %.3g", what, b, e);
      }
    }
  }
  for (int b = 0; b < 64; b++) {
    free (tr.data[b]);
    free (tf.data[b]);
  }
  if (sr)
    gpunet_backend_cpu_ref.destroy (sr);
  if (sf)
    under_test->destroy (sf);
  free (ref);
  free (fast);
  free (err);
  return worst;
}

/* Set while the op tests run in a channel block this CPU has no vector kernels for (nChw16c
 * without AVX-512): oneDNN's generic kernels and our plain blocked loops, 10-50x slower;
 * the batches are tested in the CPU's own block. */
static int batch1_only;

static void
compare_batches (const char *what, const gpunet_graph *g)
{
  compare (what, g, 1, 1, 1);
  /* under an emulator (check_emulated) batch 1 only too: the batches run the same
   * instructions, six images' worth of the reference where one tells whether they run */
  if (batch1_only || check_emulated ())
    return;
  compare (what, g, 3, 3, 1);
  compare (what, g, 3, 2, 0);   /* a batch size planned lazily */
}

/* ---- op tests ----------------------------------------------------------------- */

static void
test_conv2d (void)
{
  /* oneDNN's convolutions: none of ours where they would take a layer */
  opts.winograd = GPUNET_CPU_ONEDNN;
  opts.pw = GPUNET_CPU_ONEDNN;
  expect_impl = GPUNET_ONEDNN_CONV;
  static const struct { int cin, h, cout, k, stride, groups, act; } cases[] = {
    { 3, 33, 32, 3, 2, 1, GPUNET_EPI_SWISH },    /* stem on plain NCHW input */
    { 16, 20, 32, 1, 1, 1, GPUNET_EPI_RELU },
    { 24, 17, 40, 3, 1, 1, GPUNET_EPI_NONE },    /* channels not a multiple of 16 */
    { 32, 18, 48, 3, 2, 1, GPUNET_EPI_SWISH },
    { 16, 15, 24, 5, 1, 1, GPUNET_EPI_RELU },
    { 8, 14, 16, 7, 2, 1, GPUNET_EPI_SWISH },
    { 32, 12, 64, 3, 1, 4, GPUNET_EPI_RELU },    /* grouped */
    { 48, 11, 24, 1, 1, 2, GPUNET_EPI_SWISH },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    test_graph tg;
    tg_init (&tg, 3, cases[i].h, cases[i].h + 3);
    int x = 0;
    if (cases[i].cin != 3)   /* give the conv under test a blocked input, as in a network */
      x = tg_conv (&tg, 0, cases[i].cin, 1, 1, 1, GPUNET_EPI_NONE, -1);
    tg_conv (&tg, x, cases[i].cout, cases[i].k, cases[i].stride, cases[i].groups, cases[i].act, -1);
    char what[96];
    snprintf (what, sizeof what, "conv2d %d->%d k%d s%d g%d act%d", cases[i].cin, cases[i].cout,
        cases[i].k, cases[i].stride, cases[i].groups, cases[i].act);
    compare_batches (what, &tg.g);
  }
  expect_impl = -1;
  opts.winograd = opts.pw = GPUNET_CPU_AUTO;
}

/* Our Winograd kernels (kernels/onednn/winograd.c), forced on with
 * winograd=own: channel counts that are not multiples of 16 or 64 (every GEMM
 * width 1..4 vectors), sizes that are not multiples of 4 or 6, 1x1 and 2x2 images, more
 * tiles than one block holds, every activation, residuals added in place and copied. */
static void
test_own_winograd (void)
{
  const char *tn = "";
  static const struct { int cin, h, w, cout, act; } cases[] = {
    { 24, 17, 20, 40, GPUNET_EPI_NONE }, { 64, 13, 14, 256, GPUNET_EPI_RELU },
    { 80, 9, 11, 200, GPUNET_EPI_SWISH }, { 16, 1, 1, 48, GPUNET_EPI_RELU },
    { 40, 2, 5, 16, GPUNET_EPI_SWISH }, { 64, 41, 43, 64, GPUNET_EPI_SWISH },
    { 112, 6, 7, 336, GPUNET_EPI_RELU },
  };
  /* 3x3 stride 1 in both tile sizes: F(4x4, 3x3) forced on with winograd=own, and
   * F(3x3, 3x3), which the default plans for these layers: they read the largest tensor
   * of their graph, as a network's first stage does */
  for (int tile = 4; tile >= 3; tile--) {
    opts.winograd = tile == 4 ? GPUNET_CPU_OWN : GPUNET_CPU_AUTO;
    expect_impl = tile == 4 ? GPUNET_ONEDNN_WINO : GPUNET_ONEDNN_WINO3;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      test_graph tg;
      tg_init (&tg, 3, cases[i].h, cases[i].w);
      int x = tg_conv (&tg, 0, cases[i].cin, 1, 1, 1, GPUNET_EPI_NONE, -1);
      tg_conv (&tg, x, cases[i].cout, 3, 1, 1, cases[i].act, -1);
      char what[112];
      snprintf (what, sizeof what, "%sown winograd F(%d) %d->%d %dx%d act%d", tn, tile,
          cases[i].cin, cases[i].cout, cases[i].h, cases[i].w, cases[i].act);
      compare_batches (what, &tg.g);
    }
    /* 1 to 26 tiles per image (a block's tiles go to the GEMM in calls of 6 rows, then of
     * 1 to 5: every split of the rest is run) */
    for (int t = 1; t <= 13; t++) {
      test_graph tg;
      tg_init (&tg, 3, 5, 5 * t + 1);
      int x = tg_conv (&tg, 0, 24, 1, 1, 1, GPUNET_EPI_NONE, -1);
      tg_conv (&tg, x, 40, 3, 1, 1, GPUNET_EPI_RELU, -1);
      char what[112];
      snprintf (what, sizeof what, "%sown winograd F(%d) 24->40 5x%d (tile count)", tn, tile,
          5 * t + 1);
      compare_batches (what, &tg.g);
    }
  }
  expect_impl = GPUNET_ONEDNN_WINO;
  /* 5x5 and 3x3 stride 2 (polyphase): ours by default */
  static const struct { int k, cin, h, w, cout, pad, act; } s2[] = {
    { 5, 32, 19, 22, 48, 2, GPUNET_EPI_SWISH }, { 5, 24, 8, 8, 40, 2, GPUNET_EPI_RELU },
    { 5, 16, 13, 13, 16, 0, GPUNET_EPI_NONE }, { 5, 32, 30, 27, 192, 0, GPUNET_EPI_SWISH },
    { 5, 48, 5, 6, 24, 1, GPUNET_EPI_RELU }, { 5, 16, 7, 9, 32, 2, GPUNET_EPI_RELU },
    { 3, 32, 21, 18, 160, 1, GPUNET_EPI_SWISH }, { 3, 24, 9, 9, 96, 1, GPUNET_EPI_RELU },
    { 3, 64, 17, 17, 256, 0, GPUNET_EPI_NONE }, { 3, 16, 2, 3, 48, 1, GPUNET_EPI_SWISH },
    { 3, 40, 1, 1, 24, 1, GPUNET_EPI_RELU }, { 3, 48, 33, 30, 64, 1, GPUNET_EPI_RELU },
  };
  opts.winograd = GPUNET_CPU_AUTO;   /* ours by default there */
  for (size_t i = 0; i < sizeof s2 / sizeof s2[0]; i++) {
      test_graph tg;
      tg_init (&tg, 3, s2[i].h, s2[i].w);
      int x = tg_conv (&tg, 0, s2[i].cin, 1, 1, 1, GPUNET_EPI_NONE, -1);
      tg_conv_pad (&tg, x, s2[i].cout, s2[i].k, 2, s2[i].pad, 1, s2[i].act, -1);
      char what[112];
      snprintf (what, sizeof what, "%swinograd %dx%d s2 pad %d %d->%d %dx%d act%d", tn,
          s2[i].k, s2[i].k, s2[i].pad, s2[i].cin, s2[i].cout, s2[i].h, s2[i].w, s2[i].act);
      compare_batches (what, &tg.g);
  }
  for (int tile = 4; tile >= 3; tile--) {
    opts.winograd = tile == 4 ? GPUNET_CPU_OWN : GPUNET_CPU_AUTO;
    expect_impl = tile == 4 ? GPUNET_ONEDNN_WINO : GPUNET_ONEDNN_WINO3;
    for (int act = 0; act <= 2; act++) {
      test_graph tg;
      char what[96];
      /* in place: the 3x3 adds a residual whose last use it is */
      tg_init (&tg, 3, 11, 10);
      int a = tg_conv (&tg, 0, 72, 1, 1, 1, GPUNET_EPI_SWISH, -1);
      int b = tg_conv (&tg, a, 72, 1, 1, 1, GPUNET_EPI_RELU, -1);
      tg_conv (&tg, b, 72, 3, 1, 1, act, a);
      snprintf (what, sizeof what, "%sown winograd F(%d) residual in place act%d", tn, tile,
          act);
      compare_batches (what, &tg.g);
      /* copied: the residual is used again afterwards */
      tg_init (&tg, 3, 10, 9);
      a = tg_conv (&tg, 0, 64, 1, 1, 1, GPUNET_EPI_RELU, -1);
      b = tg_conv (&tg, a, 64, 3, 1, 1, act, a);
      tg_conv (&tg, b, 64, 1, 1, 1, GPUNET_EPI_NONE, a);
      snprintf (what, sizeof what, "%sown winograd F(%d) residual copied act%d", tn, tile,
          act);
      compare_batches (what, &tg.g);
    }
  }
  opts.winograd = GPUNET_CPU_AUTO;
  expect_impl = -1;
}

/* The CPU code path of our vector kernels on blk-channel blocks */
static unsigned
blk_path (int blk)
{
  return blk == 16 ? GPUNET_CPU_PATH_AVX512 : GPUNET_CPU_PATH_AVX2;
}

/* rand_floats, 64-byte aligned (as the fast path's buffers; its kernels use aligned loads) */
static float *
rand_floats_aligned (size_t n, float scale)
{
  if (n_pool == POOL_MAX) {
    fprintf (stderr, "test_backend_ops: more than %d test allocations: raise POOL_MAX\n", POOL_MAX);
    abort ();
  }
  float *p = gpunet_blk_alloc (n);
  if (!p) {
    fprintf (stderr, "test_backend_ops: out of memory\n");
    abort ();
  }
  for (size_t i = 0; i < n; i++)
    p[i] = frand () * scale;
  pool[n_pool++] = p;
  return p;
}

/* Plans g on the fast backend for batches up to max_batch on 2 threads (*sf: the state). */
static gpunet_status
plan_fast (const gpunet_graph *g, int max_batch, void **sf, char **err)
{
  gpunet_session_params params;
  test_params (&params, max_batch);
  return gpunet_backend_plan (under_test, g, &params, sf, err);
}

static void
test_dwconv2d (void)
{
  expect_impl = batch1_only ? -1 : GPUNET_ONEDNN_DW;
  static const struct { int c, h, k, stride, act; } cases[] = {
    { 32, 20, 3, 1, GPUNET_EPI_SWISH }, { 48, 19, 3, 2, GPUNET_EPI_RELU },
    { 24, 16, 5, 1, GPUNET_EPI_NONE }, { 40, 21, 5, 2, GPUNET_EPI_SWISH },
    { 64, 14, 7, 1, GPUNET_EPI_RELU }, { 56, 15, 7, 2, GPUNET_EPI_SWISH },
    /* rows of 6, 9, 6 and 12 outputs: narrower than a group of 8, and one past it */
    { 32, 6, 3, 1, GPUNET_EPI_RELU }, { 24, 9, 5, 1, GPUNET_EPI_SWISH },
    { 16, 12, 3, 2, GPUNET_EPI_NONE }, { 40, 12, 5, 1, GPUNET_EPI_RELU },
    /* rows of 28, 36 and 4 outputs: groups of 8 then 12, and 4 alone */
    { 24, 28, 3, 1, GPUNET_EPI_SWISH }, { 8, 36, 5, 1, GPUNET_EPI_NONE },
    { 16, 4, 3, 1, GPUNET_EPI_RELU },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    test_graph tg;
    tg_init (&tg, 3, cases[i].h, cases[i].h);
    int x = tg_conv (&tg, 0, cases[i].c, 1, 1, 1, GPUNET_EPI_NONE, -1);
    tg_conv (&tg, x, cases[i].c, cases[i].k, cases[i].stride, cases[i].c, cases[i].act, -1);
    char what[96];
    snprintf (what, sizeof what, "dwconv2d c%d k%d s%d act%d", cases[i].c, cases[i].k,
        cases[i].stride, cases[i].act);
    compare_batches (what, &tg.g);
  }
  /* planes larger than our kernel's buffer (kernels/onednn/dwconv.c: strips of rows) */
  static const struct { int c, h, w, k, stride; } big[] = {
    { 24, 100, 90, 5, 1 }, { 16, 131, 127, 3, 2 }, { 40, 70, 140, 7, 1 },
  };
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    test_graph tg;
    tg_init (&tg, 3, big[i].h, big[i].w);
    int x = tg_conv (&tg, 0, big[i].c, 1, 1, 1, GPUNET_EPI_NONE, -1);
    tg_conv (&tg, x, big[i].c, big[i].k, big[i].stride, big[i].c, GPUNET_EPI_SWISH, -1);
    char what[96];
    snprintf (what, sizeof what, "dwconv2d c%d %dx%d k%d s%d", big[i].c, big[i].h, big[i].w,
        big[i].k, big[i].stride);
    compare (what, &tg.g, 1, 1, 1);
  }
  /* An inverted residual block between 1x1 convolutions, with and without a
   * squeeze-excite, a residual at the end (compare_batches: 2 threads) */
  for (int se = 0; se <= 1; se++) {
    test_graph tg;
    tg_init (&tg, 3, 15, 13);
    int x = tg_conv (&tg, 0, 80, 1, 1, 1, GPUNET_EPI_NONE, -1);
    int e = tg_conv (&tg, x, 240, 1, 1, 1, GPUNET_EPI_SWISH, -1);
    int d = tg_conv (&tg, e, 240, 3, 1, 240, GPUNET_EPI_SWISH, -1);
    if (se)
      tg_se (&tg, d, 20, GPUNET_EPI_RELU);
    tg_conv (&tg, d, 80, 1, 1, 1, GPUNET_EPI_NONE, x);
    compare_batches (se ? "1x1, dwconv2d, se, 1x1 + residual"
        : "1x1, dwconv2d, 1x1 + residual", &tg.g);
  }
  /* An inverted residual block's expansion: its output is read by the depthwise op only
   * and not traced (not a block's output), so its activation moves into the depthwise
   * op's input pass (kernels/onednn/backend_onednn.c, plan_own_dw); then the same with the
   * expansion's output read again as a residual, where it must stay. */
  /* (each activation, kernel size, stride and reread at least once: 6 of the 16) */
  for (int act = GPUNET_EPI_RELU; act <= GPUNET_EPI_SWISH; act++)
    for (int k = 3; k <= 5; k += 2)
      for (int stride = 1; stride <= 2; stride++)
        for (int reread = 0; reread <= 1; reread++) {
          if ((act + k / 2 + stride + reread) % 3 != 0 && !(act == GPUNET_EPI_SWISH && k == 3
                  && stride == 1 && reread))
            continue;
          test_graph tg;
          tg_init (&tg, 3, 17, 19);
          int x = tg_conv (&tg, 0, 40, 1, 1, 1, act, -1);
          tg.t[x].block = -1;
          int y = tg_conv (&tg, x, 40, k, stride, 40, GPUNET_EPI_SWISH, -1);
          if (reread && stride == 1)
            tg_conv (&tg, y, 40, 1, 1, 1, GPUNET_EPI_NONE, x);
          else
            tg_conv (&tg, y, 24, 1, 1, 1, GPUNET_EPI_NONE, -1);
          char what[112];
          snprintf (what, sizeof what, "expansion act%d into dwconv2d k%d s%d%s", act, k,
              stride, reread && stride == 1 ? ", also a residual" : "");
          compare_batches (what, &tg.g);
        }
  expect_impl = -1;
}

static void
test_residual (void)
{
  for (int act = 0; act <= 2; act++) {
    /* in place: the residual's last use is the conv that adds it */
    test_graph tg;
    tg_init (&tg, 3, 13, 13);
    int a = tg_conv (&tg, 0, 24, 3, 1, 1, GPUNET_EPI_SWISH, -1);
    int b = tg_conv (&tg, a, 48, 1, 1, 1, GPUNET_EPI_SWISH, -1);
    tg_conv (&tg, b, 24, 1, 1, 1, act, a);
    char what[64];
    snprintf (what, sizeof what, "residual in place act%d", act);
    compare_batches (what, &tg.g);

    /* copied: the residual is still needed afterwards */
    tg_init (&tg, 3, 12, 12);
    a = tg_conv (&tg, 0, 32, 3, 1, 1, GPUNET_EPI_RELU, -1);
    b = tg_conv (&tg, a, 32, 3, 1, 1, act, a);
    tg_conv (&tg, b, 32, 1, 1, 1, GPUNET_EPI_NONE, a);
    snprintf (what, sizeof what, "residual copied act%d", act);
    compare_batches (what, &tg.g);
  }
  /* the graph input as residual (plain layout into a blocked sum) */
  test_graph tg;
  tg_init (&tg, 16, 10, 10);
  tg_conv (&tg, 0, 16, 3, 1, 1, GPUNET_EPI_RELU, 0);
  compare_batches ("residual from the input", &tg.g);
}

static void
test_se (void)
{
  expect_impl = batch1_only ? -1 : GPUNET_ONEDNN_SE;
  static const struct { int c, h, rd, act; } cases[] = {
    { 32, 16, 8, GPUNET_EPI_RELU }, { 40, 9, 10, GPUNET_EPI_SWISH }, { 120, 7, 30, GPUNET_EPI_RELU },
    { 44, 3, 11, GPUNET_EPI_SWISH }, { 20, 1, 5, GPUNET_EPI_RELU },
    { 1792, 9, 112, GPUNET_EPI_SWISH },   /* GPUNet-1's largest, on both threads */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    test_graph tg;
    tg_init (&tg, 3, cases[i].h, cases[i].h);
    int x = tg_conv (&tg, 0, cases[i].c, 3, 1, 1, GPUNET_EPI_SWISH, -1);
    tg_se (&tg, x, cases[i].rd, cases[i].act);
    tg_conv (&tg, x, 16, 1, 1, 1, GPUNET_EPI_NONE, -1);
    char what[64];
    snprintf (what, sizeof what, "se c%d rd%d act%d", cases[i].c, cases[i].rd, cases[i].act);
    compare_batches (what, &tg.g);
  }
  /* SE as the last op: its output is the graph's */
  test_graph tg;
  tg_init (&tg, 3, 9, 9);
  int x = tg_conv (&tg, 0, 24, 1, 1, 1, GPUNET_EPI_NONE, -1);
  tg_se (&tg, x, 6, GPUNET_EPI_RELU);
  compare_batches ("se after a 1x1", &tg.g);
  expect_impl = -1;
}

/* gpunet_se_run (ours, vector) against gpunet_blk_se (plain C) on the same blocked data:
 * channel counts off the block, rd off the vector, 1x1 to 13x13, batch 1 to 3, 1 to 3
 * threads (and one thread below the parallel threshold), every activation; the padding
 * lanes must stay zero. */
static void
test_se_direct (int blk)
{
  static const struct { int c, h, rd; } cases[] = {
    { 8, 1, 1 }, { 44, 3, 11 }, { 120, 13, 30 }, { 1792, 9, 112 }, { 672, 12, 56 }, { 19, 5, 17 },
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
    for (int act = 0; act <= 2; act++)
      for (int n = 1; n <= 3; n++)
        for (int nt = 1; nt <= 3; nt++) {
          const int c = cases[ci].c, h = cases[ci].h, rd = cases[ci].rd;
          const int cp = (c + blk - 1) / blk * blk;
          const size_t len = (size_t) n * cp * h * h;
          gpunet_se_params p = { c, rd, h, h, act,
            rand_floats ((size_t) rd * c, 1.7f / sqrtf ((float) c)), rand_floats ((size_t) rd, 0.2f),
            rand_floats ((size_t) c * rd, 1.7f / sqrtf ((float) rd)), rand_floats ((size_t) c, 0.2f) };
          float *x = rand_floats_aligned (len, 2.0f), *y = rand_floats_aligned (len, 0.0f);
          for (size_t i = 0; i < len; i++)
            if ((i / ((size_t) h * h * blk) * blk + i % blk) % cp >= (size_t) c)
              x[i] = 0.0f;   /* padding lanes */
          memcpy (y, x, sizeof (float) * len);
          float *scratch = rand_floats ((size_t) n * (cp + rd), 0.0f);
          gpunet_se *q = gpunet_se_new (&p, cp, blk, 3);
          CHECK_MSG (q != NULL, "se direct c%d rd%d: plan failed", c, rd);
          if (!q)
            continue;
          gpunet_blk_se (&p, y, blk, cp, n, scratch, nt);
          gpunet_se_run (q, x, n, nt);
          /* the vector form of blk and the plain one (what plans without it run) */
          check_paths_ran (blk_path (blk) | GPUNET_CPU_PATH_PORTABLE);
          double e = rel_err (x, y, len);
          CHECK_MSG (e <= 1e-5, "se direct c%d h%d rd%d act%d batch %d threads %d: "
              "relative error %.3g", c, h, rd, act, n, nt, e);
          int pad_ok = 1;
          for (size_t i = 0; i < len; i++)
            if ((i / ((size_t) h * h * blk) * blk + i % blk) % cp >= (size_t) c && x[i] != 0.0f)
              pad_ok = 0;
          CHECK_MSG (pad_ok, "se direct c%d rd%d: a padding lane is not zero", c, rd);
          gpunet_se_free (q);
        }
}

/* gpunet_pw_run (our 1x1 convolution, AVX-512 on nChw16c) against a plain double-precision
 * one on the same blocked data: channel counts off the block and off the 64-channel chunk
 * (every chunk width 16 to 64), pixel counts leaving every remainder of 6 (1 to 5 rows),
 * every work order (pixel-major: small weights, over 64 input channels; chunk-major: small
 * weights with few input channels, large weights; pixel groups: a large input with large
 * weights; one group where groups would stream more), every activation, with and without
 * the residual, batches of 1 and 3, 1 to 3 threads, plain and forced Strassen; padding
 * lanes must come out zero. */
static void
test_pw_direct (void)
{
  static const struct { int cin, cout; long hw; } cases[] = {
    { 12, 10, 9 }, { 16, 64, 7 }, { 24, 48, 20 }, { 40, 112, 25 }, { 33, 200, 11 },
    { 832, 400, 4 }, { 600, 520, 13 }, { 1024, 272, 170 }, { 2000, 160, 90 }, { 80, 100, 31 },
    { 7, 16, 1 }, { 100, 64, 49 }, { 48, 80, 529 },
    /* 64 -> 20: halves of whole blocks, but padded output channels: no Strassen */
    { 64, 20, 13 },
    /* shapes one level of Strassen takes (halves of whole 16-channel blocks): odd and even
     * pixel counts, a bottom half without a block of its own (hw 13: 7 + 6 pixels), a
     * narrower last chunk per half (n2 80 = 64 + 16); halves of 25 over 24, 50 and 10
     * pixels (a last block of 1, 2 or 4) */
    { 64, 64, 13 }, { 96, 160, 7 }, { 256, 384, 23 }, { 192, 64, 12 }, { 32, 32, 2 },
    { 64, 96, 49 }, { 96, 64, 100 }, { 32, 64, 20 },
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
    for (int n = 1; n <= 3; n += 2) {
      const int cin = cases[ci].cin, cout = cases[ci].cout;
      const long hw = cases[ci].hw;
      const int cp = (cin + 15) / 16 * 16, ocp = (cout + 15) / 16 * 16;
      const size_t in_len = (size_t) n * cp * hw, out_len = (size_t) n * ocp * hw;
      float *w = rand_floats ((size_t) cout * cin, 1.7f / sqrtf ((float) cin));
      float *bias = rand_floats ((size_t) cout, 0.3f);
      float *x = rand_floats_aligned (in_len, 1.0f), *y = rand_floats_aligned (out_len, 0.0f);
      float *r = rand_floats (out_len, 1.0f), *want = rand_floats (out_len, 0.0f);
      double *raw = calloc (out_len, sizeof (double));
      for (size_t i = 0; i < in_len; i++)
        if ((i / ((size_t) hw * 16) * 16 + i % 16) % cp >= (size_t) cin)
          x[i] = 0.0f;   /* padding lanes */
      for (size_t i = 0; i < out_len; i++)
        if ((i / ((size_t) hw * 16) * 16 + i % 16) % ocp >= (size_t) cout)
          r[i] = 0.0f;   /* the residual's padding lanes */
      for (int b = 0; b < n; b++)
        for (int o = 0; o < cout; o++)
          for (long px = 0; px < hw; px++) {
            double v = bias[o];
            for (int i = 0; i < cin; i++)
              v += (double) w[(size_t) o * cin + i] * x[(size_t) b * cp * hw
                  + (size_t) (i / 16) * hw * 16 + (size_t) px * 16 + i % 16];
            raw[(size_t) b * ocp * hw + (size_t) (o / 16) * hw * 16 + (size_t) px * 16 + o % 16] = v;
          }
      for (int act = 0; act <= 2; act++)
        for (int res = 0; res <= 1; res++) {
          for (size_t i = 0; i < out_len; i++) {
            const double v = raw[i];
            want[i] = (float) ((act == GPUNET_EPI_RELU ? (v > 0.0 ? v : 0.0)
                    : act == GPUNET_EPI_SWISH ? v / (1.0 + exp (-v)) : v) + (res ? r[i] : 0.0));
          }
          for (int sm = GPUNET_PW_STRASSEN_OFF; sm <= GPUNET_PW_STRASSEN_FORCE; sm += 2) {
            gpunet_pw *q = gpunet_pw_new (w, bias, cin, cout, cp, ocp, hw, act, res, sm);
            CHECK_MSG (q != NULL, "pw direct %d->%d: plan failed", cin, cout);
            if (!q)
              continue;
            /* Strassen when forced and the shape allows it, never with an activation
             * before a residual */
            const int st_want = sm == GPUNET_PW_STRASSEN_FORCE && cp % 32 == 0
                && ocp % 32 == 0 && cout == ocp && hw >= 2 && !(res && act != GPUNET_EPI_NONE);
            CHECK_MSG (gpunet_pw_is_strassen (q) == st_want, "pw direct %d->%d hw %ld act %d "
                "residual %d: Strassen %d, expected %d", cin, cout, hw, act, res,
                gpunet_pw_is_strassen (q), st_want);
            const size_t sf = gpunet_pw_scratch_floats (q);
            float *scratch = sf ? gpunet_blk_alloc (sf) : NULL;
            for (int nt = 1; nt <= 3; nt++) {
              for (size_t i = 0; i < out_len; i++)
                y[i] = res ? r[i] : 12345.0f;   /* without a residual, all overwritten */
              gpunet_pw_run (q, x, y, n, res, scratch, nt);
              check_paths_ran (GPUNET_CPU_PATH_AVX512);
              double e = rel_err (y, want, out_len);
              CHECK_MSG (e <= 1e-5, "pw direct %d->%d hw %ld act %d residual %d batch %d "
                  "threads %d Strassen %d: relative error %.3g", cin, cout, hw, act, res, n, nt,
                  gpunet_pw_is_strassen (q), e);
              int pad_ok = 1;
              for (size_t i = 0; i < out_len; i++)
                if ((i / ((size_t) hw * 16) * 16 + i % 16) % ocp >= (size_t) cout && y[i] != 0.0f)
                  pad_ok = 0;
              CHECK_MSG (pad_ok, "pw direct %d->%d: a padding lane is not zero", cin, cout);
            }
            free (scratch);
            gpunet_pw_free (q);
          }
        }
      free (raw);
    }
}

static void
test_pool_linear (void)
{
  expect_impl = batch1_only ? -1 : GPUNET_ONEDNN_LINEAR;
  for (int bias = 0; bias <= 1; bias++) {
    test_graph tg;
    tg_init (&tg, 3, 11, 11);
    int x = tg_conv (&tg, 0, 40, 3, 2, 1, GPUNET_EPI_SWISH, -1);
    tg_pool_linear (&tg, x, 37, bias);
    compare_batches (bias ? "avgpool + linear with bias" : "avgpool + linear", &tg.g);
  }
  /* pool directly on the plain input, then a 1x1 conv head on the pooled vector */
  test_graph tg;
  tg_init (&tg, 20, 7, 7);
  int p = tg_tensor (&tg, 20, 1, 1);
  tg_op (&tg, GPUNET_OP_AVGPOOL, 0, p)->p.avgpool = (gpunet_avgpool_params) { 20, 7, 7 };
  int h = tg_conv (&tg, p, 48, 1, 1, 1, GPUNET_EPI_RELU, -1);
  int o = tg_tensor (&tg, 10, 1, 1);
  tg_op (&tg, GPUNET_OP_LINEAR, h, o)->p.linear = (gpunet_linear_params) { 48, 10, GPUNET_EPI_SWISH,
    rand_floats (480, 0.2f), rand_floats (10, 0.1f) };
  compare_batches ("avgpool + conv head + linear", &tg.g);
  expect_impl = -1;
}

/* The vector fully connected layer (linear.h) against double precision: input lengths
 * around its vector steps, output counts around its groups of 4, with and without bias,
 * every activation, batches 1 and 3 (a padded input stride), 1 to 3 threads; each thread
 * count gives the same bits. */
static void
test_linear_direct (int blk)
{
  static const int cins[] = { 1, 7, 16, 31, 32, 33, 100, 1280 };
  static const int couts[] = { 1, 3, 4, 5, 37 };
  for (size_t a = 0; a < sizeof cins / sizeof cins[0]; a++)
    for (size_t c = 0; c < sizeof couts / sizeof couts[0]; c++)
      for (int act = GPUNET_EPI_NONE; act <= GPUNET_EPI_SWISH; act++)
        for (int n = 1; n <= 3; n += 2) {
          const int cin = cins[a], cout = couts[c], in_cp = cin + 5, bias = (act + n) % 2;
          const size_t len = (size_t) n * cout;
          const gpunet_linear_params p = { cin, cout, act, rand_floats ((size_t) cout * cin, 0.3f),
            bias ? rand_floats ((size_t) cout, 0.5f) : NULL };
          const float *x = rand_floats ((size_t) n * in_cp, 1.0f);
          float *want = malloc (sizeof (float) * len), *first = malloc (sizeof (float) * len);
          float *y = malloc (sizeof (float) * len);
          double *mag = malloc (sizeof (double) * len);   /* sum of |terms| per output */
          if (!want || !first || !y || !mag) {
            CHECK_MSG (0, "linear: out of memory");
            free (want), free (first), free (y), free (mag);
            return;
          }
          for (int b = 0; b < n; b++)
            for (int o = 0; o < cout; o++) {
              double v = bias ? p.bias[o] : 0.0, m = fabs (v);
              for (int i = 0; i < cin; i++) {
                const double t = (double) p.weight[(size_t) o * cin + i] * x[(size_t) b * in_cp + i];
                v += t;
                m += fabs (t);
              }
              want[(size_t) b * cout + o] = (float) (act == GPUNET_EPI_RELU ? (v > 0.0 ? v : 0.0)
                  : act == GPUNET_EPI_SWISH ? v / (1.0 + exp (-v)) : v);
              mag[(size_t) b * cout + o] = m;
            }
          for (int nt = 1; nt <= 3; nt++) {
            float *o = nt == 1 ? first : y;
            for (size_t i = 0; i < len; i++)
              o[i] = NAN;   /* every output written */
            gpunet_linear_run (&p, x, in_cp, o, n, blk, nt);
            check_paths_ran (blk_path (blk));
            /* error against the magnitude of the terms (a sum may cancel to near zero) */
            double e = 0.0;
            for (size_t i = 0; i < len; i++) {
              const double d = fabs ((double) o[i] - want[i]) / (mag[i] + 1e-30);
              e = d <= e ? e : isnan (d) ? INFINITY : d;
            }
            CHECK_MSG (e <= 1e-6, "linear blk %d %d -> %d act %d batch %d threads %d: error "
                "%.3g of the terms' magnitude", blk, cin, cout, act, n, nt, e);
            if (nt > 1)
              CHECK_MSG (!memcmp (y, first, sizeof (float) * len), "linear blk %d %d -> %d "
                  "batch %d: %d threads change the results", blk, cin, cout, n, nt);
          }
          free (want);
          free (first);
          free (y);
          free (mag);
        }
}

/* A small random network mixing every op, like one GPUNet stage. */
static void
test_random_network (unsigned seed)
{
  rng = 0x9e3779b97f4a7c15ull ^ ((uint64_t) seed * 0x100000001b3ull);
  test_graph tg;
  tg_init (&tg, 3, 40, 40);
  int x = tg_conv (&tg, 0, 24, 3, 2, 1, GPUNET_EPI_SWISH, -1);
  int m = tg_conv (&tg, x, 72, 1, 1, 1, GPUNET_EPI_SWISH, -1);
  int d = tg_conv (&tg, m, 72, 5, 1, 72, GPUNET_EPI_SWISH, -1);
  tg_se (&tg, d, 18, GPUNET_EPI_RELU);
  int y = tg_conv (&tg, d, 24, 1, 1, 1, GPUNET_EPI_NONE, x);
  int e = tg_conv (&tg, y, 96, 3, 2, 1, GPUNET_EPI_RELU, -1);
  int f = tg_conv (&tg, e, 96, 7, 1, 96, GPUNET_EPI_RELU, -1);
  int z = tg_conv (&tg, f, 48, 1, 1, 2, GPUNET_EPI_NONE, -1);
  tg_pool_linear (&tg, z, 17, 1);
  char what[48];
  snprintf (what, sizeof what, "random network %u", seed);
  compare_batches (what, &tg.g);
}

/* The fixture architecture `name` (test data) with seeded random weights; NULL (a failed
 * check) when it does not load. */
static gpunet_model *
random_fixture (const char *name, uint64_t seed)
{
  char path[1024];
  snprintf (path, sizeof path, "%s/fixtures/%s.json", check_data_dir (), name);
  gpunet_model *m = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_model_new_random (path, seed, &m, &err);
  CHECK_MSG (st == GPUNET_OK, "%s: %s", path, err ? err : "");
  free (err);
  return st == GPUNET_OK ? m : NULL;
}

static void
test_models (void)
{
  const char *fixtures[] = { "tiny-a", "tiny-d", "tiny-dl" };
  /* the 1x1 convolutions forced Strassen takes in each (halves of whole 16-channel
   * blocks, no padded output channel: pwconv.c): tiny-a's 24 -> 64 but not its
   * 120 -> 24 (32 output channels, 8 of them padding), tiny-d's 20 -> 1152, none of
   * tiny-dl's (each reads 16 channels or fewer) */
  static const int strassen_ops[] = { 1, 1, 0 };
  for (int i = 0; i < 3; i++) {
    gpunet_model *m = random_fixture (fixtures[i], 7 + i);
    if (m) {
      compare_batches (fixtures[i], gpunet_model_graph (m));
      char what[64];
      snprintf (what, sizeof what, "%s (own winograd everywhere)", fixtures[i]);
      opts.winograd = GPUNET_CPU_OWN;
      compare_batches (what, gpunet_model_graph (m));
      opts.winograd = GPUNET_CPU_AUTO;
      /* every 1x1 convolution whose shape allows it through one level of Strassen (our
       * 1x1 kernels need AVX-512: elsewhere the same plan as the first) */
      snprintf (what, sizeof what, "%s (Strassen 1x1 everywhere)", fixtures[i]);
      opts.strassen = GPUNET_CPU_OWN;
      opts.pw = GPUNET_CPU_OWN;   /* pw=auto is oneDNN's on some CPUs */
      expect_impl = GPUNET_ONEDNN_PW_STRASSEN;
      expect_count = strassen_ops[i];
      expect_avx512 = 1;
      compare_batches (what, gpunet_model_graph (m));
      expect_impl = expect_count = -1;
      expect_avx512 = 0;
      opts.strassen = GPUNET_CPU_AUTO;
      opts.pw = GPUNET_CPU_AUTO;
      gpunet_model_unref (m);
    }
  }
}

/* Real GPUNets, every block traced against the reference backend (a few seconds each
 * there; in the 'slow' suite, beside test_exact's float64 check of all seven). */
static void
test_full_models (void)
{
  const char *names[] = { "gpunet-0", "gpunet-p0" };
  for (int i = 0; i < 2; i++) {
    gpunet_model *m = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_model_new_random (names[i], 42, &m, &err);
    CHECK_MSG (st == GPUNET_OK, "%s: %s", names[i], err ? err : "");
    if (st == GPUNET_OK) {
      double e = compare (names[i], gpunet_model_graph (m), 1, 1, 1);
      printf ("%s: logits relative error %.2g\n", names[i], e);
      gpunet_model_unref (m);
    }
    free (err);
  }
}

/* The golden fixtures' NVIDIA PyTorch logits, through the fast backend. */
static void
test_golden (void)
{
  char dir[1024], path[1100];
  snprintf (dir, sizeof dir, "%s/fixtures/tiny-a", check_data_dir ());
  snprintf (path, sizeof path, "%s/tiny-a.pth.tar", dir);
  char arch[1100];
  snprintf (arch, sizeof arch, "%s/fixtures/tiny-a.json", check_data_dir ());
  gpunet_model *m = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_model_load (arch, path, &m, &err);
  CHECK_MSG (st == GPUNET_OK, "tiny-a: %s", err ? err : "");
  free (err);
  if (st != GPUNET_OK)
    return;
  size_t in_size = 0, want_size = 0;
  snprintf (path, sizeof path, "%s/input.bin", dir);
  float *input = check_read_file (path, &in_size);
  snprintf (path, sizeof path, "%s/logits.bin", dir);
  float *want = check_read_file (path, &want_size);
  CHECK (input && want);
  const int classes = gpunet_model_num_classes (m);
  if (input && want && want_size == 2 * classes * sizeof (float)) {
    void *sf = NULL;
    float got[2 * 64];
    err = NULL;
    st = plan_fast (gpunet_model_graph (m), 2, &sf, &err);
    if (st == GPUNET_OK && classes <= 64)
      st = under_test->forward (sf, input, 2, got, NULL, NULL, &err);
    CHECK_MSG (st == GPUNET_OK, "tiny-a fast: %s", err ? err : "");
    if (st == GPUNET_OK) {
      double e = rel_err (got, want, 2 * (size_t) classes);
      CHECK_MSG (e <= tol, "tiny-a golden logits relative error %.3g", e);
    }
    if (sf)
      under_test->destroy (sf);
    free (err);
  }
  free (input);
  free (want);
  gpunet_model_unref (m);
}

static void
test_bad_batch (void)
{
  test_graph tg;
  tg_init (&tg, 3, 8, 8);
  tg_conv (&tg, 0, 16, 3, 1, 1, GPUNET_EPI_RELU, -1);
  gpunet_session_params params;
  gpunet_session_params_init (&params);
  params.max_batch = 2;
  void *sf = NULL;
  char *err = NULL;
  float in[4 * 3 * 64], out[4 * 16 * 64];
  CHECK (gpunet_backend_plan (under_test, &tg.g, &params, &sf, &err) == GPUNET_OK);
  if (sf) {
    CHECK (under_test->forward (sf, in, 3, out, NULL, NULL, &err)
        == GPUNET_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS (err, "planned for 1 to 2");
    under_test->destroy (sf);
  }
  free (err);
}

/* gpunet_cpu_options_parse and GPUNET_CPU: every key and value, and a bad key, a bad
 * value and a pair without '=' refused with a sentence naming it and the valid ones,
 * the options untouched; gpunet_session_new refuses a malformed GPUNET_CPU the same way
 * and plans with a good one. */
static void
test_cpu_options (void)
{
  gpunet_cpu_options o = { 0 };
  char *err = NULL;
  CHECK (gpunet_cpu_options_parse (&o, "winograd=off,pw=own,strassen=own,block=8", "--cpu",
          &err) == GPUNET_OK);
  CHECK (o.winograd == GPUNET_CPU_OFF && o.pw == GPUNET_CPU_OWN && o.strassen == GPUNET_CPU_OWN
      && o.block == 8);
  CHECK (gpunet_cpu_options_parse (&o, "winograd=onednn,block=auto", "--cpu", &err) == GPUNET_OK);
  CHECK (o.winograd == GPUNET_CPU_ONEDNN && o.block == 0 && o.pw == GPUNET_CPU_OWN);
  CHECK (gpunet_cpu_options_parse (&o, "", "--cpu", &err) == GPUNET_OK
      && gpunet_cpu_options_parse (&o, NULL, "--cpu", &err) == GPUNET_OK
      && o.winograd == GPUNET_CPU_ONEDNN);
  CHECK (gpunet_cpu_options_parse (&o, "wait=passive", "--cpu", &err) == GPUNET_OK
      && o.wait == GPUNET_CPU_WAIT_PASSIVE && o.winograd == GPUNET_CPU_ONEDNN);
  CHECK (gpunet_cpu_options_parse (&o, "wait=spin", "--cpu", &err) == GPUNET_OK
      && o.wait == GPUNET_CPU_WAIT_SPIN);
  CHECK (gpunet_cpu_options_parse (&o, "wait=auto", "--cpu", &err) == GPUNET_OK
      && o.wait == GPUNET_CPU_WAIT_AUTO);
  static const struct { const char *spec, *says[2]; } bad[] = {
    { "winograd=fast", { "'fast' is not a value of winograd", "auto, own, onednn or off" } },
    { "pw=own,wino=off", { "'wino=off'", "winograd, pw, strassen, block, simd, wait, bf16, bf16act, int8_min, int8rest, int8layout, int8fuse, xdw and bf16pw" } },
    { "simd=avx512", { "'avx512' is not a value of simd", "auto, avx2 or portable" } },
    { "wait=sleep", { "'sleep' is not a value of wait", "auto, spin or passive" } },
    { "strassen", { "'strassen'", "key=value" } },
    { "block=12", { "'12'", "8 or 16" } },
    { "pw=own,,strassen=off", { "''", "known key" } },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gpunet_cpu_options before = o;
    CHECK_MSG (gpunet_cpu_options_parse (&o, bad[i].spec, "--cpu", &err)
        == GPUNET_ERR_INVALID_ARGUMENT, "'%s' accepted", bad[i].spec);
    CHECK_CONTAINS (err, "--cpu: ");
    CHECK_CONTAINS (err, bad[i].says[0]);
    CHECK_CONTAINS (err, bad[i].says[1]);
    CHECK_MSG (!memcmp (&o, &before, sizeof o), "'%s' changed the options", bad[i].spec);
    free (err);
    err = NULL;
  }
  CHECK (gpunet_cpu_options_parse (&o, "simd=avx2", "--cpu", &err) == GPUNET_OK
      && o.simd == GPUNET_CPU_SIMD_AVX2);
  CHECK (gpunet_cpu_options_parse (&o, "simd=portable", "--cpu", &err) == GPUNET_OK
      && o.simd == GPUNET_CPU_SIMD_PORTABLE);
  gpunet_model *m = random_fixture ("tiny-a", 5);
  if (m) {
    /* simd=portable plans none of our vector kernels, whatever this CPU has */
    const gpunet_graph *g = gpunet_model_graph (m);
    gpunet_session_params params;
    gpunet_session_params_init (&params);
    params.cpu.simd = GPUNET_CPU_SIMD_PORTABLE;
    void *state = NULL;
    CHECK (gpunet_backend_plan (under_test, g, &params, &state, &err) == GPUNET_OK);
    for (int i = 0; state && i < g->n_ops; i++) {
      const int impl = gpunet_onednn_op_impl (state, i);
      CHECK_MSG (impl != GPUNET_ONEDNN_WINO && impl != GPUNET_ONEDNN_WINO3
          && impl != GPUNET_ONEDNN_DW
          && impl != GPUNET_ONEDNN_PW && impl != GPUNET_ONEDNN_PW_STRASSEN
          && impl != GPUNET_ONEDNN_SE && impl != GPUNET_ONEDNN_LINEAR,
          "simd=portable planned our vector kernel %d at op %d", impl, i);
    }
    if (state)
      under_test->destroy (state);
    gpunet_session *session = NULL;
    setenv ("GPUNET_CPU", "winograd=off,strassen=maybe", 1);
    CHECK (gpunet_session_new (m, NULL, &session, &err) == GPUNET_ERR_INVALID_ARGUMENT
        && !session);
    CHECK_CONTAINS (err, "environment variable GPUNET_CPU: 'maybe' is not a value of "
        "strassen; use auto, own or off");
    free (err);
    err = NULL;
    setenv ("GPUNET_CPU", "winograd=off,strassen=off,block=8", 1);
    CHECK_MSG (gpunet_session_new (m, NULL, &session, &err) == GPUNET_OK && session,
        "a good GPUNET_CPU: %s", err ? err : "");
    unsetenv ("GPUNET_CPU");
    gpunet_session_free (session);
    free (err);
    gpunet_model_unref (m);
  }
}

static int n_only;
static char **only;

/* Runs test `name` (fn) unless names were given on the command line without it (or, for
 * an opt-in test, unless it was named); prints its wall time. */
static void
run_if (const char *name, void (*fn) (void), int opt_in)
{
  int wanted = n_only == 0 && !opt_in;
  for (int i = 0; i < n_only && !wanted; i++)
    wanted = !strcmp (only[i], name);
  if (!wanted)
    return;
  struct timespec t0, t1;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  fn ();
  clock_gettime (CLOCK_MONOTONIC, &t1);
  printf ("# %s: %.2f s\n", name, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
}

static void
run (const char *name, void (*fn) (void))
{
  run_if (name, fn, 0);
}

static int cur_blk;
static void random_networks (void) { for (unsigned seed = 1; seed <= 3; seed++) test_random_network (seed); }
static void se_direct (void) { test_se_direct (cur_blk); }
static void linear_direct (void) { test_linear_direct (cur_blk); }

/* The op tests every backend runs: each op kind on its shapes, random networks. */
static void
run_backend_neutral (void)
{
  run ("conv2d", test_conv2d);
  run ("dwconv2d", test_dwconv2d);
  run ("residual", test_residual);
  run ("se", test_se);
  run ("pool_linear", test_pool_linear);
  run ("random_network", random_networks);
}

/* The tests that are not about the CPU backend's own kernels, on the CUDA backend: fp32;
 * with `all`, also fp32 with pdl=on, fp16 (bound 1e-2, the self-test's), the NHWC network
 * in fp16 (cuda_fused 2), and that with nhwcpad, nhwcstrip, nhwctune and pdl on.  77 (a
 * skip) where it cannot run here. */
static int
run_cuda (int all)
{
  char *err = NULL;
  under_test = gpunet_backend_find (GPUNET_BACKEND_CUDA, &err);
  void *state = NULL;
  if (under_test) {
    test_graph tg;
    tg_init (&tg, 3, 8, 8);
    tg_conv (&tg, 0, 8, 3, 1, 1, GPUNET_EPI_RELU, -1);
    if (plan_fast (&tg.g, 1, &state, &err) == GPUNET_OK)
      under_test->destroy (state);
    else
      under_test = NULL;
  }
  if (!under_test) {
    printf ("backend_ops cuda: skipped, the CUDA backend cannot run here: %s\n",
        err ? err : "?");
    free (err);
    return 77;
  }
  free (err);
  static const struct {
    const char *name;
    gpunet_precision precision;
    int fused;
    const char *options;   /* GPUNET_CUDA's syntax */
    double tol;
  } passes[] = {
    { "fp32", GPUNET_PRECISION_FP32, 0, "", 1e-3 },
    { "fp32, pdl=on", GPUNET_PRECISION_FP32, 0, "pdl=on", 1e-3 },
    { "fp16", GPUNET_PRECISION_FP16, 0, "", 1e-2 },
    { "fp16, the NHWC network", GPUNET_PRECISION_FP16, GPUNET_CUDA_FUSED_NHWC, "", 1e-2 },
    { "fp16, the NHWC network, nhwcpad=on, nhwcstrip=fill, nhwctune=on, pdl=on",
      GPUNET_PRECISION_FP16, GPUNET_CUDA_FUSED_NHWC, "nhwcpad=on,nhwcstrip=fill,nhwctune=on,pdl=on",
      1e-2 },
  };
  for (size_t p = 0; p < (all ? sizeof passes / sizeof passes[0] : 1); p++) {
    cuda_precision = passes[p].precision;
    cuda_fused = passes[p].fused;
    memset (&cuda_opts, 0, sizeof cuda_opts);
    CHECK (gpunet_cuda_options_parse (&cuda_opts, passes[p].options, "pass", NULL) == GPUNET_OK);
    tol = passes[p].tol;
    printf ("# op tests on %s (%s) against the reference, bound %g\n", under_test->name,
        passes[p].name, tol);
    run_backend_neutral ();
    run ("golden", test_golden);
    run ("models", test_models);
  }
  for (int i = 0; i < n_pool; i++)
    free (pool[i]);
  return check_report ();
}

/* Arguments: the names of the tests to run (as printed); without, all but full_models;
 * `cuda`: the CUDA backend instead of the fast CPU one (run_cuda). */
int
main (int argc, char **argv)
{
  /* The op tests run in each channel block whose vector kernels this CPU runs (16,
   * nChw16c: AVX-512; 8, nChw8c: AVX2), so that every form the CPU has is compared with
   * the reference backend, and always in the block it plans by default.  "all-blocks":
   * also in a block it has no vector kernels for (16 without AVX-512: oneDNN's generic
   * kernels and our plain loops, which take minutes under the sanitizers: the slow
   * suite runs it). */
  int all_blocks = 0;
  only = argv + 1;
  n_only = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp (argv[i], "all-blocks"))
      all_blocks = 1;
    else if (!strcmp (argv[i], "cuda"))
      cuda_mode = 1;
    else if (!strcmp (argv[i], "cuda-all"))
      cuda_mode = 2;
    else
      only[n_only++] = argv[i];
  }
  if (cuda_mode)
    return run_cuda (cuda_mode == 2);
  const char *blocks[] = { "16", "8" };
  const int native = gpunet_wino_available (16) ? 16 : 8;
  for (int i = 0; i < 2; i++) {
    opts.block = atoi (blocks[i]);
    cur_blk = atoi (blocks[i]);
    batch1_only = !gpunet_wino_available (cur_blk);
    if (batch1_only)
      check_paths_not_run (blk_path (cur_blk));
    if (batch1_only && !all_blocks && cur_blk != native) {
      printf ("# op tests with block=%s: this CPU has no vector kernels for it, skipped "
          "(all-blocks runs them)\n", blocks[i]);
      continue;
    }
    printf ("# op tests with block=%s%s\n", blocks[i],
        batch1_only ? " (no vector kernels for it on this CPU: batch 1 only)" : "");
    run_backend_neutral ();
    /* ours in both too: AVX-512 kernels on nChw16c, AVX2 ones on nChw8c */
    if (gpunet_wino_available (cur_blk)) {
      run ("own_winograd", test_own_winograd);
      run ("se_direct", se_direct);
      run ("linear_direct", linear_direct);
    }
    else
      printf ("# own Winograd kernels for block %s: this CPU cannot run them, skipped\n",
          blocks[i]);
  }
  opts.block = 0;
  batch1_only = 0;
  if (gpunet_pw_available (16))
    run ("pw_direct", test_pw_direct);
  else {
    printf ("# own 1x1 convolution: this CPU has no AVX-512, skipped\n");
    check_paths_not_run (GPUNET_CPU_PATH_AVX512);
  }
  run ("bad_batch", test_bad_batch);
  run ("cpu_options", test_cpu_options);
  run ("golden", test_golden);
  run ("models", test_models);
  run_if ("full_models", test_full_models, 1);   /* opt-in: the 'slow' suite runs it */
  for (int i = 0; i < n_pool; i++)
    free (pool[i]);
  return check_report ();
}
