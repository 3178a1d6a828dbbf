/* gpunet-onnx.c: writes the planned graph of a model (kernels/graph.h: BatchNorm already
 * folded into the convolutions) as ONNX nodes: Conv (group = channels for depthwise),
 * Relu, Sigmoid and Mul (swish), Add (residual), GlobalAveragePool, Conv-Sigmoid-Mul
 * (squeeze-excite), Flatten and Gemm (classifier).  Weights go in as raw little-endian
 * float32 initializers pointing at the graph's own memory (no copy). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunet-internal.h"
#include "gpunet-onnx.h"
#include "gpunet-onnx.pb-c.h"
#include "activation.h"        /* GPUNET_EPI_* of the ops */

#define ONNX_IR_VERSION 7   /* the IR of opset 13 */
#define ONNX_OPSET 13

/* Everything the message tree points at, freed at once. */
typedef struct {
  void **ptrs;
  size_t n, cap;
  int failed;
} arena;

static void *
arena_keep (arena *a, void *p)
{
  if (!p) {
    a->failed = 1;
    return NULL;
  }
  if (a->n == a->cap) {
    size_t cap = a->cap ? a->cap * 2 : 1024;
    void **np = realloc (a->ptrs, cap * sizeof *np);
    if (!np) {
      free (p);
      a->failed = 1;
      return NULL;
    }
    a->ptrs = np;
    a->cap = cap;
  }
  a->ptrs[a->n++] = p;
  return p;
}

static void *
arena_new (arena *a, size_t size)
{
  return arena_keep (a, calloc (1, size ? size : 1));
}

static char *
arena_printf (arena *a, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  int n = vsnprintf (NULL, 0, fmt, ap);
  va_end (ap);
  char *s = n >= 0 ? arena_new (a, (size_t) n + 1) : NULL;
  if (s) {
    va_start (ap, fmt);
    vsnprintf (s, (size_t) n + 1, fmt, ap);
    va_end (ap);
  }
  return s;
}

static void
arena_free (arena *a)
{
  for (size_t i = 0; i < a->n; i++)
    free (a->ptrs[i]);
  free (a->ptrs);
}

/* A growing array of message pointers. */
typedef struct {
  void **items;
  size_t n, cap;
} vec;

static void
vec_push (arena *a, vec *v, void *item)
{
  if (!item) {
    a->failed = 1;
    return;
  }
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 64;
    void **np = arena_new (a, cap * sizeof *np);
    if (!np)
      return;
    if (v->n)
      memcpy (np, v->items, v->n * sizeof *np);
    v->items = np;
    v->cap = cap;
  }
  v->items[v->n++] = item;
}

typedef struct {
  arena a;
  vec nodes, inits;
  int serial;
} builder;

static Onnx__AttributeProto *
attr_int (builder *b, const char *name, int64_t value)
{
  Onnx__AttributeProto *at = arena_new (&b->a, sizeof *at);
  if (!at)
    return NULL;
  onnx__attribute_proto__init (at);
  at->name = (char *) name;
  at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  at->has_type = 1;
  at->i = value;
  at->has_i = 1;
  return at;
}

static Onnx__AttributeProto *
attr_ints (builder *b, const char *name, int n, int64_t v0, int64_t v1)
{
  Onnx__AttributeProto *at = arena_new (&b->a, sizeof *at);
  int64_t *vals = arena_new (&b->a, 4 * sizeof *vals);
  if (!at || !vals)
    return NULL;
  onnx__attribute_proto__init (at);
  at->name = (char *) name;
  at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
  at->has_type = 1;
  for (int i = 0; i < n; i++)
    vals[i] = i % 2 ? v1 : v0;
  at->ints = vals;
  at->n_ints = (size_t) n;
  return at;
}

/* Adds a node with up to three inputs and one output named after `hint`; returns the
 * output's name. */
static const char *
node (builder *b, const char *op_type, const char *hint, const char *in0, const char *in1,
    const char *in2, Onnx__AttributeProto **attrs, int n_attrs)
{
  Onnx__NodeProto *nd = arena_new (&b->a, sizeof *nd);
  char **ins = arena_new (&b->a, 3 * sizeof *ins);
  char **outs = arena_new (&b->a, sizeof *outs);
  if (!nd || !ins || !outs)
    return "";
  onnx__node_proto__init (nd);
  const char *in[3] = { in0, in1, in2 };
  for (int i = 0; i < 3 && in[i]; i++)
    ins[nd->n_input++] = (char *) in[i];
  nd->input = ins;
  outs[0] = arena_printf (&b->a, "%s_%d", hint, ++b->serial);
  nd->output = outs;
  nd->n_output = 1;
  nd->op_type = (char *) op_type;
  nd->name = arena_printf (&b->a, "%s_%d", op_type, b->serial);
  if (n_attrs > 0) {
    Onnx__AttributeProto **ap = arena_new (&b->a, (size_t) n_attrs * sizeof *ap);
    if (ap) {
      for (int i = 0; i < n_attrs; i++) {
        ap[i] = attrs[i];
        if (!attrs[i])
          b->a.failed = 1;
      }
      nd->attribute = ap;
      nd->n_attribute = (size_t) n_attrs;
    }
  }
  vec_push (&b->a, &b->nodes, nd);
  return outs[0] ? outs[0] : "";
}

/* A float32 initializer over `data` (not copied: it lives as long as the model). */
static const char *
initializer (builder *b, const char *hint, const float *data, int ndim, const int64_t *dims)
{
  Onnx__TensorProto *t = arena_new (&b->a, sizeof *t);
  int64_t *d = arena_new (&b->a, (size_t) ndim * sizeof *d);
  if (!t || !d)
    return "";
  onnx__tensor_proto__init (t);
  size_t numel = 1;
  for (int i = 0; i < ndim; i++) {
    d[i] = dims[i];
    numel *= (size_t) dims[i];
  }
  t->dims = d;
  t->n_dims = (size_t) ndim;
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  t->has_data_type = 1;
  t->name = arena_printf (&b->a, "%s_%d", hint, ++b->serial);
  t->raw_data.data = (uint8_t *) data;   /* little-endian float32 on the hosts we build for */
  t->raw_data.len = numel * sizeof (float);
  t->has_raw_data = 1;
  vec_push (&b->a, &b->inits, t);
  return t->name ? t->name : "";
}

static const char *
activation (builder *b, const char *x, int act)
{
  if (act == GPUNET_EPI_RELU)
    return node (b, "Relu", "relu", x, NULL, NULL, NULL, 0);
  if (act == GPUNET_EPI_SWISH) {
    const char *s = node (b, "Sigmoid", "sig", x, NULL, NULL, NULL, 0);
    return node (b, "Mul", "swish", x, s, NULL, NULL, 0);
  }
  return x;
}

static const char *
conv (builder *b, const char *x, const float *w, const float *bias, int cout, int cin_g,
    int k, int stride, int pad, int groups)
{
  const int64_t wd[4] = { cout, cin_g, k, k }, bd[1] = { cout };
  const char *wn = initializer (b, "w", w, 4, wd);
  const char *bn = initializer (b, "b", bias, 1, bd);
  Onnx__AttributeProto *at[4] = {
    attr_ints (b, "kernel_shape", 2, k, k), attr_ints (b, "strides", 2, stride, stride),
    attr_ints (b, "pads", 4, pad, pad), attr_int (b, "group", groups),
  };
  return node (b, "Conv", "conv", x, wn, bn, at, 4);
}

static Onnx__ValueInfoProto *
value_info (builder *b, const char *name, int ndim, const int64_t *dims)
{
  Onnx__ValueInfoProto *vi = arena_new (&b->a, sizeof *vi);
  Onnx__TypeProto *tp = arena_new (&b->a, sizeof *tp);
  Onnx__TypeProto__Tensor *tt = arena_new (&b->a, sizeof *tt);
  Onnx__TensorShapeProto *sh = arena_new (&b->a, sizeof *sh);
  Onnx__TensorShapeProto__Dimension **dv = arena_new (&b->a, (size_t) ndim * sizeof *dv);
  if (!vi || !tp || !tt || !sh || !dv)
    return NULL;
  onnx__value_info_proto__init (vi);
  onnx__type_proto__init (tp);
  onnx__type_proto__tensor__init (tt);
  onnx__tensor_shape_proto__init (sh);
  for (int i = 0; i < ndim; i++) {
    dv[i] = arena_new (&b->a, sizeof *dv[i]);
    if (!dv[i])
      return NULL;
    onnx__tensor_shape_proto__dimension__init (dv[i]);
    if (dims[i] < 0) {   /* the batch */
      dv[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      dv[i]->dim_param = "batch";
    } else {
      dv[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      dv[i]->dim_value = dims[i];
    }
  }
  sh->dim = dv;
  sh->n_dim = (size_t) ndim;
  tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  tt->has_elem_type = 1;
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  vi->name = (char *) name;
  vi->type = tp;
  return vi;
}

gpunet_status
gpunet_onnx_export (const gpunet_model *model, unsigned char **out, size_t *out_len,
    char **error_text)
{
  *out = NULL;
  *out_len = 0;
  const gpunet_graph *g = gpunet_model_graph (model);
  builder b;
  memset (&b, 0, sizeof b);
  const char **name = arena_new (&b.a, (size_t) g->n_tensors * sizeof *name);
  if (!name) {
    arena_free (&b.a);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory exporting ONNX");
  }
  name[g->input] = "input";
  gpunet_status st = GPUNET_OK;
  for (int i = 0; i < g->n_ops && st == GPUNET_OK; i++) {
    const gpunet_op *op = &g->ops[i];
    const char *x = name[op->in];
    if (!x) {
      st = gpunet_fail (error_text, GPUNET_ERR_UNSUPPORTED, "ONNX export: op %d reads tensor "
          "%d before any op wrote it", i, op->in);
      break;
    }
    const char *y = NULL;
    switch (op->kind) {
      case GPUNET_OP_CONV2D: {
        const gpunet_conv2d_params *p = &op->p.conv2d;
        y = conv (&b, x, p->weight, p->bias, p->cout, p->cin / p->groups, p->kernel,
            p->stride, p->pad, p->groups);
        y = activation (&b, y, p->act);
        if (op->residual >= 0)
          y = node (&b, "Add", "res", y, name[op->residual], NULL, NULL, 0);
        break;
      }
      case GPUNET_OP_DWCONV2D: {
        const gpunet_dwconv2d_params *p = &op->p.dwconv2d;
        y = conv (&b, x, p->weight, p->bias, p->c, 1, p->kernel, p->stride, p->pad, p->c);
        y = activation (&b, y, p->act);
        break;
      }
      case GPUNET_OP_SE: {
        const gpunet_se_params *p = &op->p.se;
        const char *m = node (&b, "GlobalAveragePool", "se_mean", x, NULL, NULL, NULL, 0);
        const char *r = conv (&b, m, p->w_reduce, p->b_reduce, p->rd, p->c, 1, 1, 0, 1);
        r = activation (&b, r, p->act);
        const char *e = conv (&b, r, p->w_expand, p->b_expand, p->c, p->rd, 1, 1, 0, 1);
        const char *gate = node (&b, "Sigmoid", "se_gate", e, NULL, NULL, NULL, 0);
        y = node (&b, "Mul", "se", x, gate, NULL, NULL, 0);
        break;
      }
      case GPUNET_OP_AVGPOOL:
        y = node (&b, "GlobalAveragePool", "pool", x, NULL, NULL, NULL, 0);
        break;
      case GPUNET_OP_LINEAR: {
        const gpunet_linear_params *p = &op->p.linear;
        Onnx__AttributeProto *fa[1] = { attr_int (&b, "axis", 1) };
        const char *f = node (&b, "Flatten", "flat", x, NULL, NULL, fa, 1);
        const int64_t wd[2] = { p->cout, p->cin }, bd[1] = { p->cout };
        const char *wn = initializer (&b, "fc_w", p->weight, 2, wd);
        const char *bn = p->bias ? initializer (&b, "fc_b", p->bias, 1, bd) : NULL;
        Onnx__AttributeProto *ga[1] = { attr_int (&b, "transB", 1) };
        y = node (&b, "Gemm", "fc", f, wn, bn, ga, 1);
        y = activation (&b, y, p->act);
        break;
      }
      default:
        st = gpunet_fail (error_text, GPUNET_ERR_UNSUPPORTED, "ONNX export: op %d has kind %d, "
            "which the exporter does not know (tools/gpunet-onnx.c needs a case for it)",
            i, (int) op->kind);
        break;
    }
    name[op->out] = y;
  }
  const gpunet_tensor_desc *in = &g->tensors[g->input], *outd = &g->tensors[g->output];
  if (st == GPUNET_OK && (!name[g->output] || outd->h != 1 || outd->w != 1))
    st = gpunet_fail (error_text, GPUNET_ERR_UNSUPPORTED, "ONNX export: the graph's output is "
        "not a written classes x 1 x 1 tensor");
  if (st == GPUNET_OK) {
    /* the last node's output is renamed "logits" */
    Onnx__NodeProto *last = b.nodes.n ? b.nodes.items[b.nodes.n - 1] : NULL;
    if (!last || strcmp (last->output[0], name[g->output]) != 0)
      st = gpunet_fail (error_text, GPUNET_ERR_UNSUPPORTED, "ONNX export: the last op does "
          "not write the graph's output");
    else
      last->output[0] = "logits";
  }
  if (st == GPUNET_OK) {
    const int64_t in_dims[4] = { -1, in->c, in->h, in->w }, out_dims[2] = { -1, outd->c };
    Onnx__ValueInfoProto *vin = value_info (&b, "input", 4, in_dims);
    Onnx__ValueInfoProto *vout = value_info (&b, "logits", 2, out_dims);
    Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
    graph.name = (char *) gpunet_model_name (model);
    graph.doc_string = "GPUNet exported by gst-gpunet (gpunet-convert --onnx); BatchNorm "
        "folded into the convolutions; input normalised float32 NCHW";
    graph.node = (Onnx__NodeProto **) b.nodes.items;
    graph.n_node = b.nodes.n;
    graph.initializer = (Onnx__TensorProto **) b.inits.items;
    graph.n_initializer = b.inits.n;
    graph.input = &vin;
    graph.n_input = 1;
    graph.output = &vout;
    graph.n_output = 1;
    Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    Onnx__OperatorSetIdProto *opsets[1] = { &opset };
    opset.domain = "";
    opset.version = ONNX_OPSET;
    opset.has_version = 1;
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    m.ir_version = ONNX_IR_VERSION;
    m.has_ir_version = 1;
    m.producer_name = "gst-gpunet";
    m.producer_version = GPUNET_ONNX_PRODUCER_VERSION;
    m.graph = &graph;
    m.opset_import = opsets;
    m.n_opset_import = 1;
    if (b.a.failed || !vin || !vout) {
      st = gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory exporting ONNX");
    } else {
      size_t len = onnx__model_proto__get_packed_size (&m);
      unsigned char *buf = malloc (len ? len : 1);
      if (!buf)
        st = gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory: the ONNX model "
            "takes %zu bytes", len);
      else {
        onnx__model_proto__pack (&m, buf);
        *out = buf;
        *out_len = len;
      }
    }
  }
  arena_free (&b.a);
  return st;
}
