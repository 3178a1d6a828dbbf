/* linear.h: our vector fully connected layer (the classifier, and the distilled models'
 * layer before it) for the fast CPU path, on the CPUs gpunet_wino_available() accepts.
 * The plain blocked one (gpunet_blk_linear) is a dot product per output with one 4-wide
 * accumulator: it waits on the adder, about a float a cycle, and took GPUNet-2's
 * 1280 -> 1000 classifier 0.21 ms where streaming its 5 MB of weights takes about 0.1
 * (docs/performance.md). */
#ifndef GPUNET_LINEAR_H
#define GPUNET_LINEAR_H

#include "ops.h"

/* out[b * cout + o] = act(weight row o . in[b * in_cp ..] + bias[o]) for b < n, with
 * vectors of blk floats (16: AVX-512F, 8: AVX2 + FMA), on nt threads.  Each output is one
 * thread's, summed in the same order whatever nt and n. */
void gpunet_linear_run (const gpunet_linear_params *p, const float *in, int in_cp, float *out,
    int n, int blk, int nt);

#endif
