/* se.h: our squeeze-excite for the fast CPU path, on nChw16c (AVX-512F) or nChw8c (AVX2 +
 * FMA) activations, for the CPUs gpunet_wino_available() accepts (blocked_ops.c keeps the
 * plain-C one for the others):
 *   x *= sigmoid(W_e act(W_r mean(x) + b_r) + b_e), per channel, in place.
 * Both small matrices are laid out at plan time so that every multiply-add is a vertical
 * vector FMA (no per-channel dot products and horizontal sums), and the sigmoid gate is
 * computed in vectors; each thread prefetches the weights it will read while the means are
 * summed, since at batch 1 they come from memory every frame (GPUNet-1's 1792-channel SE
 * layers hold 1.6 MB of them). */
#ifndef GPUNET_SE_H
#define GPUNET_SE_H

#include <stddef.h>

#include "ops.h"

typedef struct gpunet_se gpunet_se;

/* Plans p over blk-channel blocks (16 or 8) with cp padded channels, for up to max_batch
 * images.  NULL when out of memory or the arguments are invalid. */
gpunet_se *gpunet_se_new (const gpunet_se_params *p, int cp, int blk, int max_batch);

/* n images (n <= max_batch) of x, scaled in place; padded channels stay 0. */
void gpunet_se_run (const gpunet_se *q, float *x, int n, int nt);

void gpunet_se_free (gpunet_se *q);

#endif
