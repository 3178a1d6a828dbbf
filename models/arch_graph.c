/* arch_graph.c: GPUNet architecture -> operator graph, with the semantics of NVIDIA's
 * gpunet_builder.py / gpunet_modules.py: module names (state-dict keys), make_divisible
 * mid channels, SE widths with Python's round, padding per module kind, residual rules,
 * BatchNorm epsilon per module kind, BatchNorm folded into the convolution weights.
 * The graph itself (type, tensors, ops, weight memory) is kernels/graph.[ch]'s. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "arch_graph.h"
#include "../kernels/common/activation.h"

int
gpunet_make_divisible (double v, int divisor)
{
  /* timm: max(min_value, int(v + divisor / 2) // divisor * divisor), +divisor when the
   * rounding lost more than 10 % */
  long n = (long) (v + divisor / 2.0) / divisor * divisor;
  if (n < divisor)
    n = divisor;
  if ((double) n < 0.9 * v)
    n += divisor;
  return (int) n;
}

int
gpunet_python_round (double x)
{
  /* round half to even, as Python 3's round() */
  double f = floor (x), d = x - f;
  if (d > 0.5)
    return (int) f + 1;
  if (d < 0.5)
    return (int) f;
  return fmod (f, 2.0) == 0.0 ? (int) f : (int) f + 1;
}

typedef struct {
  const gpunet_arch *arch;
  gpunet_weight_source *src;
  gpunet_built_graph *bg;
  int cur;            /* current tensor id */
  int block;
  char prefix[128];   /* "network.<block name>" */
  char **err;
} builder;

/* The builder's primitives (kernels/graph.c) for this architecture walk. */
static float *
alloc_floats (builder *b, size_t n)
{
  return gpunet_graph_alloc (b->bg, n);
}

static int
add_tensor (builder *b, int c, int h, int w)
{
  return gpunet_graph_add_tensor (b->bg, c, h, w);
}

static gpunet_op *
add_op (builder *b, gpunet_op_kind kind, int in, int out)
{
  return gpunet_graph_add_op (b->bg, kind, in, out, b->block);
}

static gpunet_status
oom (builder *b)
{
  return gpunet_fail (b->err, GPUNET_ERR_NO_MEMORY, "out of memory building the network");
}

/* Fetches one parameter "<prefix>.<sub>" of the given shape. */
static gpunet_status
fetch (builder *b, const char *sub, gpunet_param_role role, int ndim, const int64_t *shape,
    float *dst)
{
  char name[320];
  snprintf (name, sizeof name, "%s.%s", b->prefix, sub);
  int64_t n = 1;
  for (int i = 0; i < ndim; i++)
    n *= shape[i];
  if (role != GPUNET_PARAM_BN_MEAN && role != GPUNET_PARAM_BN_VAR)
    b->bg->num_params += n;
  return b->src->get (b->src, name, role, ndim, shape, dst, b->err);
}

/* A convolution "<conv>.weight" (+ BatchNorm "<bn>" folded in, or "<bias>" taken as is,
 * or neither) from tensor `in` to a new tensor; returns the new tensor id via *out. */
static gpunet_status
conv (builder *b, int in, int cout, int k, int stride, int pad, int groups, int act,
    const char *conv_name, const char *bn_name, double eps, int residual, int *out)
{
  const gpunet_tensor_desc ti = b->bg->graph.tensors[in];
  const int cin = ti.c;
  const int oh = (ti.h + 2 * pad - k) / stride + 1, ow = (ti.w + 2 * pad - k) / stride + 1;
  if (oh < 1 || ow < 1)
    return gpunet_fail (b->err, GPUNET_ERR_ARCH,
        "layer %d: a %dx%d convolution with stride %d turns a %dx%d input into nothing; "
        "raise img_resolution or remove a stride-2 layer", b->block + 1, k, k, stride, ti.h, ti.w);
  const int depthwise = groups == cin && groups == cout && groups > 1;
  const size_t wn = (size_t) cout * (size_t) (cin / groups) * (size_t) k * (size_t) k;
  float *w = alloc_floats (b, wn), *bias = alloc_floats (b, (size_t) cout);
  if (!w || !bias)
    return oom (b);
  char sub[160];
  int64_t wshape[4] = { cout, cin / groups, k, k };
  snprintf (sub, sizeof sub, "%s.weight", conv_name);
  gpunet_status st = fetch (b, sub, GPUNET_PARAM_CONV_WEIGHT, 4, wshape, w);
  if (st != GPUNET_OK)
    return st;
  if (bn_name) {
    float *gamma = calloc (4 * (size_t) cout, sizeof (float));
    if (!gamma)
      return oom (b);
    float *beta = gamma + cout, *mean = beta + cout, *var = mean + cout;
    int64_t cshape[1] = { cout };
    const char *names[4] = { "weight", "bias", "running_mean", "running_var" };
    const gpunet_param_role roles[4] = { GPUNET_PARAM_BN_WEIGHT, GPUNET_PARAM_BN_BIAS,
      GPUNET_PARAM_BN_MEAN, GPUNET_PARAM_BN_VAR };
    float *dst[4] = { gamma, beta, mean, var };
    for (int i = 0; i < 4 && st == GPUNET_OK; i++) {
      snprintf (sub, sizeof sub, "%s.%s", bn_name, names[i]);
      st = fetch (b, sub, roles[i], 1, cshape, dst[i]);
    }
    if (st == GPUNET_OK) {
      const size_t per = wn / (size_t) cout;
      for (int o = 0; o < cout; o++) {
        const double scale = (double) gamma[o] / sqrt ((double) var[o] + eps);
        for (size_t i = 0; i < per; i++)
          w[o * per + i] = (float) (w[o * per + i] * scale);
        bias[o] = (float) ((double) beta[o] - (double) mean[o] * scale);
      }
    }
    free (gamma);
    if (st != GPUNET_OK)
      return st;
  }
  int t = add_tensor (b, cout, oh, ow);
  if (t < 0)
    return oom (b);
  gpunet_op *op;
  if (depthwise) {
    if (!(op = add_op (b, GPUNET_OP_DWCONV2D, in, t)))
      return oom (b);
    op->p.dwconv2d = (gpunet_dwconv2d_params) { cout, k, stride, pad, ti.h, ti.w, oh, ow, act, w, bias };
  } else {
    if (!(op = add_op (b, GPUNET_OP_CONV2D, in, t)))
      return oom (b);
    op->p.conv2d = (gpunet_conv2d_params) { cin, cout, k, stride, pad, groups, ti.h, ti.w, oh, ow,
      act, w, bias };
    op->residual = residual;
  }
  b->bg->macs += (double) wn * oh * ow;
  *out = t;
  return GPUNET_OK;
}

/* Squeeze-excite "<prefix>.se" in place on tensor x. */
static gpunet_status
squeeze_excite (builder *b, int x, int rd, int act)
{
  const gpunet_tensor_desc tx = b->bg->graph.tensors[x];
  const int c = tx.c;
  float *w1 = alloc_floats (b, (size_t) rd * c), *b1 = alloc_floats (b, (size_t) rd);
  float *w2 = alloc_floats (b, (size_t) rd * c), *b2 = alloc_floats (b, (size_t) c);
  if (!w1 || !b1 || !w2 || !b2)
    return oom (b);
  int64_t s1[4] = { rd, c, 1, 1 }, s1b[1] = { rd }, s2[4] = { c, rd, 1, 1 }, s2b[1] = { c };
  gpunet_status st;
  if ((st = fetch (b, "se.conv_reduce.weight", GPUNET_PARAM_CONV_WEIGHT, 4, s1, w1))
      || (st = fetch (b, "se.conv_reduce.bias", GPUNET_PARAM_BIAS, 1, s1b, b1))
      || (st = fetch (b, "se.conv_expand.weight", GPUNET_PARAM_CONV_WEIGHT, 4, s2, w2))
      || (st = fetch (b, "se.conv_expand.bias", GPUNET_PARAM_BIAS, 1, s2b, b2)))
    return st;
  gpunet_op *op = add_op (b, GPUNET_OP_SE, x, x);
  if (!op)
    return oom (b);
  op->p.se = (gpunet_se_params) { c, rd, tx.h, tx.w, act, w1, b1, w2, b2 };
  b->bg->macs += 2.0 * c * rd;
  return GPUNET_OK;
}

static gpunet_status
avgpool (builder *b, int in, int *out)
{
  *out = -1;   /* set on every path (the builder's calls are out of the compiler's sight) */
  const gpunet_tensor_desc ti = b->bg->graph.tensors[in];
  int t = add_tensor (b, ti.c, 1, 1);
  gpunet_op *op = t < 0 ? NULL : add_op (b, GPUNET_OP_AVGPOOL, in, t);
  if (!op)
    return oom (b);
  op->p.avgpool = (gpunet_avgpool_params) { ti.c, ti.h, ti.w };
  *out = t;
  return GPUNET_OK;
}

/* A fully connected layer from "<prefix>.<name>.weight" (shape cout x cin, or
 * cout x cin x 1 x 1 for a 1x1 convolution on a pooled vector) and optional bias. */
static gpunet_status
linear (builder *b, int in, int cout, const char *name, int as_conv, int with_bias, int act,
    int *out)
{
  const int cin = b->bg->graph.tensors[in].c;
  float *w = alloc_floats (b, (size_t) cout * cin), *bias = NULL;
  if (!w)
    return oom (b);
  char sub[160];
  int64_t shape[4] = { cout, cin, 1, 1 };
  snprintf (sub, sizeof sub, "%s.weight", name);
  gpunet_status st = fetch (b, sub, as_conv ? GPUNET_PARAM_CONV_WEIGHT : GPUNET_PARAM_LINEAR_WEIGHT,
      as_conv ? 4 : 2, shape, w);
  if (st != GPUNET_OK)
    return st;
  if (with_bias) {
    if (!(bias = alloc_floats (b, (size_t) cout)))
      return oom (b);
    int64_t bshape[1] = { cout };
    snprintf (sub, sizeof sub, "%s.bias", name);
    if ((st = fetch (b, sub, GPUNET_PARAM_BIAS, 1, bshape, bias)) != GPUNET_OK)
      return st;
  }
  int t = add_tensor (b, cout, 1, 1);
  gpunet_op *op = t < 0 ? NULL : add_op (b, GPUNET_OP_LINEAR, in, t);
  if (!op)
    return oom (b);
  op->p.linear = (gpunet_linear_params) { cin, cout, act, w, bias };
  b->bg->macs += (double) cin * cout;
  *out = t;
  return GPUNET_OK;
}

static int
epi (gpunet_act act)
{
  return act == GPUNET_ACT_RELU ? GPUNET_EPI_RELU : act == GPUNET_ACT_SWISH ? GPUNET_EPI_SWISH
      : GPUNET_EPI_NONE;
}

/* Non-distilled blocks (eps 1e-3 everywhere). */
static gpunet_status
build_block (builder *b, const gpunet_layer_spec *l)
{
  const double eps = 1e-3;
  const int x = b->cur;
  const int act = epi (l->act);
  int t = x, u, v;
  gpunet_status st = GPUNET_OK;
  switch (l->type) {
    case GPUNET_LAYER_HEAD:
      snprintf (b->prefix, sizeof b->prefix, "network.head: %d", l->json_index);
      st = conv (b, x, l->out_ch, 3, 2, 1, 1, act, "net.0", "net.1", eps, -1, &t);
      break;
    case GPUNET_LAYER_CONV:
      snprintf (b->prefix, sizeof b->prefix, "network.stage: %d layer%d", l->stage, l->json_index);
      st = conv (b, x, l->out_ch, l->kernel, l->stride, ((l->stride - 1) + (l->kernel - 1)) / 2, 1,
          act, "conv", "bn1", eps, -1, &t);
      break;
    case GPUNET_LAYER_FUSED_IRB: {
      snprintf (b->prefix, sizeof b->prefix, "network.stage: %d layer%d", l->stage, l->json_index);
      const int mid = gpunet_make_divisible (l->in_ch * l->expansion, 8);
      /* timm 'same' padding: static (k-1)/2 when stride 1 and k odd; NVIDIA's
       * create_conv2d_pad drops the dynamic case to padding 0 */
      const int pad = (l->stride == 1 && (l->kernel - 1) % 2 == 0) ? (l->kernel - 1) / 2 : 0;
      const int res = (l->in_ch == l->out_ch && l->stride == 1) ? x : -1;
      if ((st = conv (b, x, mid, l->kernel, l->stride, pad, 1, act, "conv_exp", "bn1", eps, -1, &u)))
        break;
      if (l->use_se
          && (st = squeeze_excite (b, u, gpunet_python_round (mid * (0.25 / l->expansion)), act)))
        break;
      st = conv (b, u, l->out_ch, 1, 1, 0, 1, GPUNET_EPI_NONE, "conv_pwl", "bn2", eps, res, &t);
      break;
    }
    case GPUNET_LAYER_IRB: {
      snprintf (b->prefix, sizeof b->prefix, "network.stage: %d layer%d", l->stage, l->json_index);
      const int mid = gpunet_make_divisible (l->in_ch * l->expansion, 8);
      const int res = (l->in_ch == l->out_ch && l->stride == 1) ? x : -1;
      if ((st = conv (b, x, mid, 1, 1, 0, 1, act, "conv_pw", "bn1", eps, -1, &u)))
        break;
      if ((st = conv (b, u, mid, l->kernel, l->stride, ((l->stride - 1) + (l->kernel - 1)) / 2, mid,
                  act, "conv_dw", "bn2", eps, -1, &v)))
        break;
      if (l->use_se
          && (st = squeeze_excite (b, v, gpunet_python_round (mid * (0.25 / l->expansion)), act)))
        break;
      st = conv (b, v, l->out_ch, 1, 1, 0, 1, GPUNET_EPI_NONE, "conv_pwl", "bn3", eps, res, &t);
      break;
    }
    case GPUNET_LAYER_TAIL:
      snprintf (b->prefix, sizeof b->prefix, "network. layer%d", l->json_index);
      if ((st = conv (b, x, l->out_ch, 1, 1, 0, 1, GPUNET_EPI_RELU, "net.0", "net.1", eps, -1, &u))
          || (st = avgpool (b, u, &v)))
        break;
      st = linear (b, v, l->num_classes, "net.6", 0, 1, GPUNET_EPI_NONE, &t);
      break;
    case GPUNET_LAYER_HEAD_LARGE:
      return gpunet_fail (b->err, GPUNET_ERR_ARCH,
          "layer %d: head_large exists only in distilled models (\"distill\": true)", l->json_index - 1);
  }
  b->cur = t;
  return st;
}

/* Distilled blocks: ReLU throughout; BN eps 1e-5 except in Fused_IRB (1e-3). */
static gpunet_status
build_block_distilled (builder *b, const gpunet_layer_spec *l)
{
  const double eps = 1e-5;
  const int x = b->cur, relu = GPUNET_EPI_RELU;
  int t = x, u, v;
  gpunet_status st = GPUNET_OK;
  switch (l->type) {
    case GPUNET_LAYER_HEAD:
      snprintf (b->prefix, sizeof b->prefix, "network.head:");
      st = conv (b, x, l->out_ch, 3, 2, 1, 1, relu, "net.0", "net.1", eps, -1, &t);
      break;
    case GPUNET_LAYER_HEAD_LARGE:
      snprintf (b->prefix, sizeof b->prefix, "network.head:");
      if ((st = conv (b, x, l->out_ch, 3, 2, 1, 1, relu, "net.0", "net.1", eps, -1, &u))
          || (st = conv (b, u, l->out_ch, 3, 1, 1, 1, relu, "net.3", "net.4", eps, -1, &v)))
        break;
      st = conv (b, v, l->out_ch, 3, 1, 1, 1, relu, "net.6", "net.7", eps, -1, &t);
      break;
    case GPUNET_LAYER_FUSED_IRB: {
      snprintf (b->prefix, sizeof b->prefix, "network.stage: %d fused_irb%d", l->stage, l->json_index);
      const int mid = (int) (l->in_ch * l->expansion);
      const int res = (l->in_ch == l->out_ch && l->stride == 1) ? x : -1;
      if ((st = conv (b, x, mid, l->kernel, l->stride, l->kernel / 2, 1, relu, "body.0", "body.1",
                  1e-3, -1, &u)))
        break;
      st = conv (b, u, l->out_ch, 1, 1, 0, 1, GPUNET_EPI_NONE, "body.3", "body.4", 1e-3, res, &t);
      break;
    }
    case GPUNET_LAYER_IRB: {
      snprintf (b->prefix, sizeof b->prefix, "network.stage: %d irb%d", l->stage, l->json_index);
      const int mid = (int) (l->in_ch * l->expansion);
      const int res = (l->in_ch == l->out_ch && l->stride == 1) ? x : -1;
      if ((st = conv (b, x, mid, 1, 1, 0, l->groups, relu, "body.0", "body.1", eps, -1, &u))
          || (st = conv (b, u, mid, l->kernel, l->stride, l->kernel / 2, mid, relu, "body.3",
                  "body.4", eps, -1, &v)))
        break;
      st = conv (b, v, l->out_ch, 1, 1, 0, l->groups, GPUNET_EPI_NONE, "body.6", "body.7", eps, res,
          &t);
      break;
    }
    case GPUNET_LAYER_TAIL:
      snprintf (b->prefix, sizeof b->prefix, "network.tail:");
      if ((st = conv (b, x, 1152, 1, 1, 0, 1, relu, "net.0", "net.1", eps, -1, &u))
          || (st = avgpool (b, u, &v))
          || (st = linear (b, v, l->out_ch, "net.4", 1, 0, relu, &u)))
        break;
      st = linear (b, u, l->num_classes, "net.8", 0, 1, GPUNET_EPI_NONE, &t);
      break;
    case GPUNET_LAYER_CONV:
      return gpunet_fail (b->err, GPUNET_ERR_ARCH,
          "layer %d: conv layers exist only in non-distilled models", l->json_index - 1);
  }
  b->cur = t;
  return st;
}

gpunet_status
gpunet_graph_build (const gpunet_arch *arch, gpunet_weight_source *src, gpunet_built_graph *out,
    char **error_text)
{
  memset (out, 0, sizeof *out);
  builder b = { .arch = arch, .src = src, .bg = out, .err = error_text };
  gpunet_graph *g = &out->graph;
  g->n_blocks = arch->n_layers;
  g->input = add_tensor (&b, 3, arch->resolution, arch->resolution);
  if (g->input < 0)
    return oom (&b);
  b.cur = g->input;
  gpunet_status st = GPUNET_OK;
  for (int i = 0; i < arch->n_layers && st == GPUNET_OK; i++) {
    b.block = i;
    st = arch->distill ? build_block_distilled (&b, &arch->layers[i]) : build_block (&b, &arch->layers[i]);
    if (st == GPUNET_OK)
      g->tensors[b.cur].block = i;
  }
  if (st == GPUNET_OK && src->finish)
    st = src->finish (src, error_text);
  if (st != GPUNET_OK) {
    gpunet_graph_clear (out);
    return st;
  }
  g->output = b.cur;
  return GPUNET_OK;
}
