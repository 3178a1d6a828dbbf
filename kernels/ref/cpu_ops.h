/* cpu_ops.h: the reference CPU implementation of each op in kernels/ops.h, plain C over
 * NCHW float32, n images at a time.  These are the oracle: simple loops whose only
 * optimisation is a unit-stride inner loop. */
#ifndef GPUNET_CPU_OPS_H
#define GPUNET_CPU_OPS_H

#include "ops.h"

/* residual may be NULL; otherwise a tensor of the output's shape added after the act. */
void gpunet_cpu_conv2d (const gpunet_conv2d_params *p, const float *in, const float *residual,
    float *out, int n);
void gpunet_cpu_dwconv2d (const gpunet_dwconv2d_params *p, const float *in, float *out, int n);
/* In place on x (n x c x h x w); `scratch` holds at least c + rd floats. */
void gpunet_cpu_se (const gpunet_se_params *p, float *x, float *scratch, int n);
void gpunet_cpu_avgpool (const gpunet_avgpool_params *p, const float *in, float *out, int n);
void gpunet_cpu_linear (const gpunet_linear_params *p, const float *in, float *out, int n);

#endif
