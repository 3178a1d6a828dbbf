/* test_graph_pad.c: gpunet_graph_pad_channels (kernels/graph.c), the channel padding the
 * CUDA NHWC network plans with (nhwcpad=on).  On the reference backend a padded graph
 * gives the same logits as the original, value for value, and every traced block holds
 * the original's values in its real channels and zeros in the added ones; the added
 * channels are multiples as asked; the input, the output and a grouped convolution's
 * tensors keep theirs, with every tensor tied to them channel for channel.  Hand-built graphs with odd channel counts
 * (every op kind, SE, residual), the three fixture architectures; with the argument
 * `--model NAME`, a built-in model (the 'slow' suite runs GPUNet-D1, the model with odd
 * channel counts). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpunet.h"
#include "model_private.h"
#include "activation.h"
#include "backend.h"
#include "graph.h"

static const float *
weights (gpunet_built_graph *bg, size_t n, float scale)
{
  float *w = gpunet_graph_alloc (bg, n);
  for (size_t i = 0; w && i < n; i++)
    w[i] = check_frand () * scale;
  return w;
}

/* A convolution (groups 1) or, with dw, a depthwise one from tensor in; its output id. */
static int
add_conv (gpunet_built_graph *bg, int in, int cout, int k, int stride, int act, int residual,
    int dw)
{
  const gpunet_tensor_desc ti = bg->graph.tensors[in];
  const int pad = k / 2;
  const int oh = (ti.h + 2 * pad - k) / stride + 1, ow = (ti.w + 2 * pad - k) / stride + 1;
  const int out = gpunet_graph_add_tensor (bg, dw ? ti.c : cout, oh, ow);
  const int block = bg->graph.n_ops;
  bg->graph.tensors[out].block = block;
  gpunet_op *op = gpunet_graph_add_op (bg, dw ? GPUNET_OP_DWCONV2D : GPUNET_OP_CONV2D, in, out,
      block);
  if (dw) {
    op->p.dwconv2d = (gpunet_dwconv2d_params) { ti.c, k, stride, pad, ti.h, ti.w, oh, ow, act,
      weights (bg, (size_t) ti.c * k * k, 0.5f), weights (bg, (size_t) ti.c, 0.2f) };
  } else {
    const int per = ti.c * k * k;
    op->p.conv2d = (gpunet_conv2d_params) { ti.c, cout, k, stride, pad, 1, ti.h, ti.w, oh, ow,
      act, weights (bg, (size_t) cout * per, 1.7f / sqrtf ((float) per)),
      weights (bg, (size_t) cout, 0.2f) };
    op->residual = residual;
  }
  bg->graph.n_blocks = bg->graph.n_ops;
  bg->graph.output = out;
  return out;
}

static void
add_se (gpunet_built_graph *bg, int x, int rd)
{
  const gpunet_tensor_desc t = bg->graph.tensors[x];
  const int block = bg->graph.n_ops;
  bg->graph.tensors[x].block = block;
  const float *wr = weights (bg, (size_t) rd * t.c, 0.3f), *br = weights (bg, (size_t) rd, 0.1f);
  const float *we = weights (bg, (size_t) t.c * rd, 0.3f), *be = weights (bg, (size_t) t.c, 0.1f);
  gpunet_op *op = gpunet_graph_add_op (bg, GPUNET_OP_SE, x, x, block);
  op->p.se = (gpunet_se_params) { t.c, rd, t.h, t.w, GPUNET_EPI_RELU, wr, br, we, be };
  bg->graph.n_blocks = bg->graph.n_ops;
}

static void
add_pool_linear (gpunet_built_graph *bg, int x, int classes)
{
  const gpunet_tensor_desc t = bg->graph.tensors[x];
  const int pooled = gpunet_graph_add_tensor (bg, t.c, 1, 1);
  const int logits = gpunet_graph_add_tensor (bg, classes, 1, 1);
  const int block = bg->graph.n_ops;
  bg->graph.tensors[logits].block = block;
  gpunet_op *op = gpunet_graph_add_op (bg, GPUNET_OP_AVGPOOL, x, pooled, block);
  op->p.avgpool = (gpunet_avgpool_params) { t.c, t.h, t.w };
  const float *w = weights (bg, (size_t) classes * t.c, 1.0f / sqrtf ((float) t.c));
  const float *b = weights (bg, (size_t) classes, 0.1f);
  op = gpunet_graph_add_op (bg, GPUNET_OP_LINEAR, pooled, logits, block);
  op->p.linear = (gpunet_linear_params) { t.c, classes, GPUNET_EPI_NONE, w, b };
  bg->graph.n_blocks = block + 1;
  bg->graph.output = logits;
}

/* One GPUNet-like stage with GPUNet-D1's odd channel counts: every op kind, an SE, a
 * residual, stride 2, k 3 and 5. */
static void
build_odd (gpunet_built_graph *bg)
{
  memset (bg, 0, sizeof *bg);
  bg->graph.input = gpunet_graph_add_tensor (bg, 3, 23, 23);
  int x = add_conv (bg, 0, 33, 3, 2, GPUNET_EPI_SWISH, -1, 0);
  int m = add_conv (bg, x, 99, 1, 1, GPUNET_EPI_SWISH, -1, 0);
  int d = add_conv (bg, m, 0, 5, 1, GPUNET_EPI_SWISH, -1, 1);
  add_se (bg, d, 25);
  int y = add_conv (bg, d, 33, 1, 1, GPUNET_EPI_NONE, x, 0);
  int e = add_conv (bg, y, 67, 3, 2, GPUNET_EPI_RELU, -1, 0);
  int f = add_conv (bg, e, 0, 3, 1, GPUNET_EPI_RELU, -1, 1);
  add_pool_linear (bg, f, 17);
}

typedef struct {
  float *data[128];
  int c[128];
  size_t len[128];
} traces;

static void
store_trace (void *user, int block, const float *data, int n, int c, int h, int w)
{
  traces *t = user;
  if (block < 0 || block >= 128)
    return;
  const size_t len = (size_t) n * c * h * w;
  free (t->data[block]);
  t->data[block] = malloc (len * sizeof (float));
  memcpy (t->data[block], data, len * sizeof (float));
  t->len[block] = len;
  t->c[block] = c;
}

static void
traces_free (traces *t)
{
  for (int b = 0; b < 128; b++)
    free (t->data[b]);
}

/* Runs g on the reference backend for n images of `input`: logits to out (and block
 * outputs to tr when not NULL). */
static int
run_ref (const gpunet_graph *g, const float *input, int n, float *out, traces *tr)
{
  gpunet_session_params params;
  gpunet_session_params_init (&params);
  params.max_batch = n;
  params.precision = GPUNET_PRECISION_FP32;
  void *state = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_backend_plan (&gpunet_backend_cpu_ref, g, &params, &state, &err);
  if (st == GPUNET_OK)
    st = gpunet_backend_cpu_ref.forward (state, input, n, out, tr ? store_trace : NULL, tr, &err);
  CHECK_MSG (st == GPUNET_OK, "reference backend: %s", err ? err : gpunet_status_string (st));
  if (state)
    gpunet_backend_cpu_ref.destroy (state);
  free (err);
  return st == GPUNET_OK;
}

/* The padded graph's structure against the original's: with `strict` every tensor but the
 * input and the output padded, else each tensor padded or kept, and a grouped
 * convolution's kept. */
static void
check_structure (const char *what, const gpunet_graph *g, const gpunet_graph *p, int multiple,
    int strict)
{
  CHECK_MSG (p->n_ops == g->n_ops && p->n_tensors == g->n_tensors && p->input == g->input
      && p->output == g->output && p->n_blocks == g->n_blocks, "%s: ids or counts changed", what);
  if (p->n_ops != g->n_ops || p->n_tensors != g->n_tensors)
    return;
  int bad = 0;
  for (int t = 0; t < g->n_tensors; t++) {
    const gpunet_tensor_desc *a = &g->tensors[t], *b = &p->tensors[t];
    const int keep = t == g->input || t == g->output;
    const int want = keep ? a->c : (a->c + multiple - 1) / multiple * multiple;
    if ((b->c != want && (strict || b->c != a->c)) || b->h != a->h || b->w != a->w || b->block != a->block) {
      if (!bad++)
        fprintf (stderr, "%s: tensor %d is %dx%dx%d (block %d), expected %dx%dx%d (block %d)\n",
            what, t, b->c, b->h, b->w, b->block, want, a->h, a->w, a->block);
    }
  }
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *a = &g->ops[i], *b = &p->ops[i];
    if (a->kind != b->kind || a->in != b->in || a->out != b->out || a->residual != b->residual
        || a->block != b->block)
      bad++;
    if (a->kind == GPUNET_OP_SE && a->p.se.rd != b->p.se.rd)
      bad++;
    if (a->kind == GPUNET_OP_CONV2D && a->p.conv2d.groups != 1
        && (b->p.conv2d.cin != a->p.conv2d.cin || b->p.conv2d.cout != a->p.conv2d.cout))
      bad++;
  }
  CHECK_MSG (bad == 0, "%s: %d tensors or ops differ beyond their channel counts", what, bad);
}

/* Pads g to `multiple`, checks the structure and, on the reference backend at batch n,
 * the logits and (traced) every block's real and added channels. */
static void
check_padded (const char *what, const gpunet_graph *g, int multiple, int n, int traced,
    int strict)
{
  gpunet_built_graph pb;
  const char *why = NULL;
  const int r = gpunet_graph_pad_channels (g, multiple, &pb, &why);
  CHECK_MSG (r == 0, "%s: padding to %d refused: %s", what, multiple, why ? why : "");
  if (r != 0)
    return;
  const gpunet_graph *p = &pb.graph;
  check_structure (what, g, p, multiple, strict);
  const gpunet_tensor_desc *ti = &g->tensors[g->input], *to = &g->tensors[g->output];
  const size_t in_len = (size_t) n * ti->c * ti->h * ti->w, out_len = (size_t) n * to->c;
  float *input = malloc (in_len * sizeof (float));
  for (size_t i = 0; i < in_len; i++)
    input[i] = check_frand ();
  float *want = calloc (out_len, sizeof (float)), *got = calloc (out_len, sizeof (float));
  traces ta, tb;
  memset (&ta, 0, sizeof ta);
  memset (&tb, 0, sizeof tb);
  if (run_ref (g, input, n, want, traced ? &ta : NULL)
      && run_ref (p, input, n, got, traced ? &tb : NULL)) {
    size_t diff = 0;
    for (size_t i = 0; i < out_len; i++)
      diff += !(got[i] == want[i]);
    CHECK_MSG (diff == 0, "%s (padded to %d, batch %d): %zu of %zu logits differ, e.g. %.9g "
        "against %.9g", what, multiple, n, diff, out_len, got[0], want[0]);
    for (int b = 0; traced && b < 128; b++) {
      if (!ta.len[b] && !tb.len[b])
        continue;
      const int c = ta.c[b], cp = tb.c[b];
      const size_t plane = c ? ta.len[b] / ((size_t) n * c) : 0;
      if (!(ta.len[b] && cp >= c && tb.len[b] == (size_t) n * cp * plane)) {
        CHECK_MSG (0, "%s: block %d traced %zu values of %d channels, padded %zu of %d", what,
            b, ta.len[b], c, tb.len[b], cp);
        continue;
      }
      size_t real_diff = 0, pad_nonzero = 0;
      for (int img = 0; img < n; img++)
        for (int ch = 0; ch < cp; ch++)
          for (size_t q = 0; q < plane; q++) {
            const float v = tb.data[b][((size_t) img * cp + ch) * plane + q];
            if (ch < c)
              real_diff += !(v == ta.data[b][((size_t) img * c + ch) * plane + q]);
            else
              pad_nonzero += v != 0.0f;
          }
      CHECK_MSG (real_diff == 0 && pad_nonzero == 0, "%s: block %d (%d -> %d channels): %zu "
          "real values differ, %zu added values are not zero", what, b, c, cp, real_diff,
          pad_nonzero);
    }
  }
  traces_free (&ta);
  traces_free (&tb);
  free (input);
  free (want);
  free (got);
  gpunet_graph_clear (&pb);
}

static void
test_odd_stage (void)
{
  gpunet_built_graph bg;
  build_odd (&bg);
  check_padded ("odd stage", &bg.graph, 8, 1, 1, 1);
  check_padded ("odd stage", &bg.graph, 8, 3, 1, 1);
  check_padded ("odd stage", &bg.graph, 32, 2, 1, 1);
  /* a multiple of 1 changes nothing */
  gpunet_built_graph same;
  CHECK (gpunet_graph_pad_channels (&bg.graph, 1, &same, NULL) == 0);
  for (int t = 0; t < bg.graph.n_tensors && t < same.graph.n_tensors; t++)
    CHECK_MSG (same.graph.tensors[t].c == bg.graph.tensors[t].c, "multiple 1: tensor %d has "
        "%d channels, not %d", t, same.graph.tensors[t].c, bg.graph.tensors[t].c);
  gpunet_graph_clear (&same);
  gpunet_graph_clear (&bg);
}

/* What keeps its channels: a grouped convolution's tensors and what they tie to. */
static void
test_kept (void)
{
  const char *why = NULL;
  gpunet_built_graph bg, out;
  /* a grouped convolution (33 -> 99 in 3 groups), the depthwise op after it tied to its
   * output: 99 channels kept there, 33 kept on its input, and the residual add of that
   * input (op 4) keeps the 33 of its output */
  build_odd (&bg);
  bg.graph.ops[1].p.conv2d.groups = 3;
  CHECK (gpunet_graph_pad_channels (&bg.graph, 8, &out, &why) == 0);
  if (out.graph.n_tensors == bg.graph.n_tensors) {
    const gpunet_op *gc = &bg.graph.ops[1];
    CHECK (out.graph.tensors[gc->in].c == 33 && out.graph.tensors[gc->out].c == 99);
    CHECK (out.graph.tensors[bg.graph.ops[2].out].c == 99);
    CHECK (out.graph.tensors[bg.graph.ops[4].out].c == 33);
    CHECK (out.graph.tensors[bg.graph.ops[5].out].c == 72);   /* 67: padded */
  }
  gpunet_graph_clear (&out);
  check_padded ("odd stage, grouped", &bg.graph, 8, 2, 1, 0);
  gpunet_graph_clear (&bg);
  /* the input read channel for channel by a depthwise op: its output, the pool and the
   * classifier's input keep 3 */
  memset (&bg, 0, sizeof bg);
  bg.graph.input = gpunet_graph_add_tensor (&bg, 3, 9, 9);
  int d = add_conv (&bg, 0, 0, 3, 1, GPUNET_EPI_RELU, -1, 1);
  add_pool_linear (&bg, d, 5);
  CHECK (gpunet_graph_pad_channels (&bg.graph, 8, &out, &why) == 0);
  for (int t = 0; t < out.graph.n_tensors; t++)
    CHECK_MSG (out.graph.tensors[t].c == bg.graph.tensors[t].c, "tensor %d padded", t);
  gpunet_graph_clear (&out);
  check_padded ("depthwise on the input", &bg.graph, 8, 1, 1, 0);
  CHECK (gpunet_graph_pad_channels (&bg.graph, 0, &out, &why) == 1);
  CHECK_CONTAINS (why, "at least 1");
  CHECK (out.graph.n_ops == 0 && out.graph.n_tensors == 0);
  gpunet_graph_clear (&bg);
}

static void
check_model (const char *arch, int n, int traced)
{
  gpunet_model *m = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_model_new_random (arch, 11, &m, &err);
  CHECK_MSG (st == GPUNET_OK, "%s: %s", arch, err ? err : "");
  free (err);
  if (st != GPUNET_OK)
    return;
  const gpunet_graph *g = gpunet_model_graph (m);
  int odd = 0;
  for (int t = 0; t < g->n_tensors; t++)
    odd += g->tensors[t].c % 8 != 0;
  printf ("%s: %d of %d tensors with a channel count not a multiple of 8\n", arch, odd,
      g->n_tensors);
  const char *base = strrchr (arch, '/');
  check_padded (base ? base + 1 : arch, g, 8, n, traced, 0);
  /* what padding costs: multiply-accumulates and activation values per image */
  gpunet_built_graph pb;
  if (gpunet_graph_pad_channels (g, 8, &pb, NULL) == 0) {
    double macs[2] = { 0, 0 }, values[2] = { 0, 0 };
    for (int k = 0; k < 2; k++) {
      const gpunet_graph *x = k ? &pb.graph : g;
      for (int i = 0; i < x->n_ops; i++)
        macs[k] += gpunet_op_macs (&x->ops[i]);
      for (int t = 0; t < x->n_tensors; t++)
        values[k] += (double) x->tensors[t].c * x->tensors[t].h * x->tensors[t].w;
    }
    printf ("%s padded to 8: %.3f x the multiply-accumulates, %.3f x the activation values\n",
        arch, macs[1] / macs[0], values[1] / values[0]);
    gpunet_graph_clear (&pb);
  }
  gpunet_model_unref (m);
}

static void
test_fixtures (void)
{
  const char *names[] = { "tiny-a", "tiny-d", "tiny-dl" };
  for (int i = 0; i < 3; i++) {
    char path[1024];
    snprintf (path, sizeof path, "%s/fixtures/%s.json", check_data_dir (), names[i]);
    check_model (path, 2, 1);
  }
}

int
main (int argc, char **argv)
{
  if (argc == 3 && !strcmp (argv[1], "--model")) {
    check_model (argv[2], 1, 0);
    return check_report ();
  }
  test_odd_stage ();
  test_kept ();
  test_fixtures ();
  return check_report ();
}
