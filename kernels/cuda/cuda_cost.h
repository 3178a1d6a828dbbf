/* cuda_cost.h: the minimum memory traffic of one graph op, the byte side of the roofline
 * that tools/gpunet-bench prints beside gpunet_op_macs (the FLOP side): every input
 * activation read once, every output written once, every weight read once, and the
 * residual read once where a convolution has one.  Activations and weights count
 * `storage` bytes per element (4 for fp32, 2 for fp16); biases count 4 bytes, since every
 * backend keeps them float32.  Caches, re-reads, workspaces and the SE scratch are not
 * counted: a real run moves at least this much.  Plain C (host only). */
#ifndef GPUNET_CUDA_COST_H
#define GPUNET_CUDA_COST_H

#include "ops.h"

/* Bytes op `op` must move for n images with `storage` bytes per stored element. */
static inline double
gpunet_op_min_bytes (const gpunet_op *op, int n, int storage)
{
  const double e = (double) storage, f = 4.0, nn = (double) n;
  switch (op->kind) {
    case GPUNET_OP_CONV2D: {
      const gpunet_conv2d_params *p = &op->p.conv2d;
      const double in = (double) p->cin * p->ih * p->iw, out = (double) p->cout * p->oh * p->ow;
      const double w = (double) p->cout * (p->cin / p->groups) * p->kernel * p->kernel;
      return nn * e * (in + out + (op->residual >= 0 ? out : 0.0)) + e * w
          + (p->bias ? f * p->cout : 0.0);
    }
    case GPUNET_OP_DWCONV2D: {
      const gpunet_dwconv2d_params *p = &op->p.dwconv2d;
      const double in = (double) p->c * p->ih * p->iw, out = (double) p->c * p->oh * p->ow;
      return nn * e * (in + out) + e * (double) p->c * p->kernel * p->kernel
          + (p->bias ? f * p->c : 0.0);
    }
    case GPUNET_OP_SE: {
      /* in place: x read (the mean and the scaling need it) and written back */
      const gpunet_se_params *p = &op->p.se;
      const double x = (double) p->c * p->h * p->w;
      return nn * e * 2.0 * x + e * 2.0 * p->c * p->rd + f * ((double) p->rd + p->c);
    }
    case GPUNET_OP_AVGPOOL: {
      const gpunet_avgpool_params *p = &op->p.avgpool;
      return nn * e * ((double) p->c * p->h * p->w + p->c);
    }
    case GPUNET_OP_LINEAR: {
      const gpunet_linear_params *p = &op->p.linear;
      return nn * e * ((double) p->cin + p->cout) + e * (double) p->cin * p->cout
          + (p->bias ? f * p->cout : 0.0);
    }
  }
  return 0.0;
}

#endif /* GPUNET_CUDA_COST_H */
