/* eltwise.h: our in-place vector swish for the fast CPU path, on the CPUs
 * gpunet_wino_available() accepts.  oneDNN 2.6's swish post-op measured about twice the
 * cost of this pass over a convolution's output (docs/performance.md), so the backend
 * plans oneDNN convolutions whose activation is swish without it and runs this after. */
#ifndef GPUNET_ELTWISE_H
#define GPUNET_ELTWISE_H

#include <stddef.h>

/* x[0 .. n) = x / (1 + exp(-x)) (simd_act.h's swish), n a multiple of blk (16: AVX-512F,
 * 8: AVX2 + FMA), x 64-byte aligned, on nt threads. */
void gpunet_swish_inplace (float *x, size_t n, int blk, int nt);

#endif
