/* graph.c: the graph builder (graph.h): growing arrays of tensors and ops, and the weight
 * memory the graph owns; and each op's multiply-accumulates (ops.h). */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

float *
gpunet_graph_alloc (gpunet_built_graph *bg, size_t n)
{
  if (bg->n_allocs == bg->cap_allocs) {
    int cap = bg->cap_allocs ? bg->cap_allocs * 2 : 64;
    float **a = realloc (bg->allocs, sizeof (float *) * (size_t) cap);
    if (!a)
      return NULL;
    bg->allocs = a;
    bg->cap_allocs = cap;
  }
  float *p = calloc (n ? n : 1, sizeof (float));
  if (p)
    bg->allocs[bg->n_allocs++] = p;
  return p;
}

int
gpunet_graph_add_tensor (gpunet_built_graph *bg, int c, int h, int w)
{
  gpunet_graph *g = &bg->graph;
  if (g->n_tensors == bg->cap_tensors) {
    int cap = bg->cap_tensors ? bg->cap_tensors * 2 : 64;
    gpunet_tensor_desc *t = realloc (g->tensors, sizeof *t * (size_t) cap);
    if (!t)
      return -1;
    g->tensors = t;
    bg->cap_tensors = cap;
  }
  g->tensors[g->n_tensors] = (gpunet_tensor_desc) { c, h, w, -1 };
  return g->n_tensors++;
}

gpunet_op *
gpunet_graph_add_op (gpunet_built_graph *bg, gpunet_op_kind kind, int in, int out, int block)
{
  gpunet_graph *g = &bg->graph;
  if (g->n_ops == bg->cap_ops) {
    int cap = bg->cap_ops ? bg->cap_ops * 2 : 64;
    gpunet_op *o = realloc (g->ops, sizeof *o * (size_t) cap);
    if (!o)
      return NULL;
    g->ops = o;
    bg->cap_ops = cap;
  }
  gpunet_op *op = &g->ops[g->n_ops++];
  memset (op, 0, sizeof *op);
  op->kind = kind;
  op->in = in;
  op->out = out;
  op->residual = -1;
  op->block = block;
  return op;
}

void
gpunet_graph_clear (gpunet_built_graph *bg)
{
  for (int i = 0; i < bg->n_allocs; i++)
    free (bg->allocs[i]);
  free (bg->allocs);
  free (bg->graph.ops);
  free (bg->graph.tensors);
  memset (bg, 0, sizeof *bg);
}

double
gpunet_op_macs (const gpunet_op *op)
{
  switch (op->kind) {
    case GPUNET_OP_CONV2D: {
      const gpunet_conv2d_params *p = &op->p.conv2d;
      return (double) p->cout * (p->cin / p->groups) * p->kernel * p->kernel * p->oh * p->ow;
    }
    case GPUNET_OP_DWCONV2D: {
      const gpunet_dwconv2d_params *p = &op->p.dwconv2d;
      return (double) p->c * p->kernel * p->kernel * p->oh * p->ow;
    }
    case GPUNET_OP_SE:
      return 2.0 * op->p.se.c * op->p.se.rd;
    case GPUNET_OP_AVGPOOL:
      return 0.0;
    case GPUNET_OP_LINEAR:
      return (double) op->p.linear.cin * op->p.linear.cout;
  }
  return 0.0;
}

/* ---- channel padding (graph.h) ------------------------------------------------ */

static int
round_up (int c, int multiple)
{
  return (c + multiple - 1) / multiple * multiple;
}

/* dst (rows x dst_cols, zeroed) gets src's rows x src_cols at its top left. */
static void
copy_rows (float *dst, int dst_cols, const float *src, int rows, int src_cols, int row_floats)
{
  for (int r = 0; r < rows; r++)
    memcpy (dst + (size_t) r * dst_cols * row_floats, src + (size_t) r * src_cols * row_floats,
        (size_t) src_cols * row_floats * sizeof (float));
}

/* n floats owned by bg holding src's first `have` floats, or NULL (none or no memory:
 * *oom tells which). */
static const float *
padded_vec (gpunet_built_graph *bg, const float *src, int have, int n, int *oom)
{
  if (!src)
    return NULL;
  float *d = gpunet_graph_alloc (bg, (size_t) n);
  if (!d) {
    *oom = 1;
    return NULL;
  }
  memcpy (d, src, (size_t) have * sizeof (float));
  return d;
}

int
gpunet_graph_pad_channels (const gpunet_graph *g, int multiple, gpunet_built_graph *out,
    const char **why)
{
  static const char *no_memory = "out of memory";
  memset (out, 0, sizeof *out);
  if (why)
    *why = NULL;
  if (multiple < 1) {
    if (why)
      *why = "the channel multiple must be at least 1";
    return 1;
  }
  /* tensors that keep their channel count: the input, the output, a grouped
   * convolution's (its groups split the channels), and every tensor tied to one of those
   * channel for channel (depthwise, SE and pool ops; residual adds) */
  char *keep = calloc ((size_t) (g->n_tensors > 0 ? g->n_tensors : 1), 1);
  if (!keep)
    goto oom;
  keep[g->input] = keep[g->output] = 1;
  for (int i = 0; i < g->n_ops; i++)
    if (g->ops[i].kind == GPUNET_OP_CONV2D && g->ops[i].p.conv2d.groups != 1)
      keep[g->ops[i].in] = keep[g->ops[i].out] = 1;
  for (int changed = 1; changed;) {
    changed = 0;
    for (int i = 0; i < g->n_ops; i++) {
      const gpunet_op *op = &g->ops[i];
      const int channelwise = op->kind == GPUNET_OP_DWCONV2D || op->kind == GPUNET_OP_AVGPOOL
          || op->kind == GPUNET_OP_SE;
      if (channelwise && keep[op->in] != keep[op->out]) {
        keep[op->in] = keep[op->out] = 1;
        changed = 1;
      }
      if (op->residual >= 0 && keep[op->residual] != keep[op->out]) {
        keep[op->residual] = keep[op->out] = 1;
        changed = 1;
      }
    }
  }
  for (int t = 0; t < g->n_tensors; t++) {
    const gpunet_tensor_desc *d = &g->tensors[t];
    if (gpunet_graph_add_tensor (out, keep[t] ? d->c : round_up (d->c, multiple), d->h, d->w)
        != t) {
      free (keep);
      goto oom;
    }
    out->graph.tensors[t].block = d->block;
  }
  free (keep);
  out->graph.input = g->input;
  out->graph.output = g->output;
  out->graph.n_blocks = g->n_blocks;
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    const gpunet_tensor_desc *pt = out->graph.tensors;
    const int cin = pt[op->in].c, cout = pt[op->out].c;
    gpunet_op *o = gpunet_graph_add_op (out, op->kind, op->in, op->out, op->block);
    if (!o)
      goto oom;
    *o = *op;
    int oom = 0;
    switch (op->kind) {
      case GPUNET_OP_CONV2D: {
        const gpunet_conv2d_params *p = &op->p.conv2d;
        /* a grouped convolution keeps both channel counts (above): the same rows */
        const int kk = p->kernel * p->kernel;
        float *w = gpunet_graph_alloc (out, (size_t) cout * (cin / p->groups) * kk);
        if (!w)
          goto oom;
        copy_rows (w, cin / p->groups * kk, p->weight, p->cout, p->cin / p->groups * kk, 1);
        o->p.conv2d.weight = w;
        o->p.conv2d.bias = padded_vec (out, p->bias, p->cout, cout, &oom);
        o->p.conv2d.cin = cin;
        o->p.conv2d.cout = cout;
        break;
      }
      case GPUNET_OP_DWCONV2D: {
        const gpunet_dwconv2d_params *p = &op->p.dwconv2d;
        const int kk = p->kernel * p->kernel;
        o->p.dwconv2d.weight = padded_vec (out, p->weight, p->c * kk, cout * kk, &oom);
        o->p.dwconv2d.bias = padded_vec (out, p->bias, p->c, cout, &oom);
        o->p.dwconv2d.c = cout;
        break;
      }
      case GPUNET_OP_SE: {
        const gpunet_se_params *p = &op->p.se;
        /* reduce: rd rows of c; expand: c rows of rd (the added rows zero) */
        float *wr = gpunet_graph_alloc (out, (size_t) p->rd * cout);
        if (!wr)
          goto oom;
        copy_rows (wr, cout, p->w_reduce, p->rd, p->c, 1);
        o->p.se.w_reduce = wr;
        o->p.se.b_reduce = padded_vec (out, p->b_reduce, p->rd, p->rd, &oom);
        o->p.se.w_expand = padded_vec (out, p->w_expand, p->c * p->rd, cout * p->rd, &oom);
        o->p.se.b_expand = padded_vec (out, p->b_expand, p->c, cout, &oom);
        o->p.se.c = cout;
        break;
      }
      case GPUNET_OP_AVGPOOL:
        o->p.avgpool.c = cin;
        break;
      case GPUNET_OP_LINEAR: {
        const gpunet_linear_params *p = &op->p.linear;
        float *w = gpunet_graph_alloc (out, (size_t) cout * cin);
        if (!w)
          goto oom;
        copy_rows (w, cin, p->weight, p->cout, p->cin, 1);
        o->p.linear.weight = w;
        o->p.linear.bias = padded_vec (out, p->bias, p->cout, cout, &oom);
        o->p.linear.cin = cin;
        o->p.linear.cout = cout;
        break;
      }
    }
    if (oom)
      goto oom;
  }
  out->num_params = 0;
  out->macs = 0.0;
  return 0;
oom:
  gpunet_graph_clear (out);
  if (why)
    *why = no_memory;
  return -1;
}
