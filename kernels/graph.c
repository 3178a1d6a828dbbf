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
