/* cuda_fusion.h: which ops of a graph the opt-in fused path may fuse, by graph shape
 * alone (plain C, so tests/test_cuda_fused.c checks it on the built-in models): a
 * DWCONV2D followed by the SE that runs in place on its whole output, and a graph that
 * ends in AVGPOOL -> LINEAR.  backend_cuda.cu's plan_fusion adds the kernel limits
 * (tiled depthwise shape, shared memory). */
#ifndef GPUNET_CUDA_FUSION_H
#define GPUNET_CUDA_FUSION_H

#include "graph.h"

/* Non-zero when op i is a DWCONV2D whose output op i + 1, an SE, scales in place. */
static inline int
gpunet_fusion_dw_se_at (const gpunet_graph *g, int i)
{
  if (i < 0 || i + 1 >= g->n_ops)
    return 0;
  const gpunet_op *dw = &g->ops[i], *se = &g->ops[i + 1];
  return dw->kind == GPUNET_OP_DWCONV2D && se->kind == GPUNET_OP_SE && se->in == dw->out
      && se->out == dw->out && se->p.se.c == dw->p.dwconv2d.c
      && se->p.se.h == dw->p.dwconv2d.oh && se->p.se.w == dw->p.dwconv2d.ow;
}

/* The AVGPOOL op the fused head would start at (the graph ends in AVGPOOL -> LINEAR
 * writing the output, the classifier reading the pooled vector), or -1. */
static inline int
gpunet_fusion_head_op (const gpunet_graph *g)
{
  const int last = g->n_ops - 1;
  if (last < 1)
    return -1;
  const gpunet_op *pool = &g->ops[last - 1], *fc = &g->ops[last];
  return pool->kind == GPUNET_OP_AVGPOOL && fc->kind == GPUNET_OP_LINEAR
      && fc->in == pool->out && fc->out == g->output && fc->p.linear.cin == pool->p.avgpool.c
      ? last - 1 : -1;
}

#endif /* GPUNET_CUDA_FUSION_H */
