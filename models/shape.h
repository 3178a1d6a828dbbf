/* shape.h (models): the one bound on tensor shapes that every weights reader (PyTorch
 * zip/pickle, safetensors) and the safetensors writer apply, so that a file one of them
 * accepts the others accept too. */
#ifndef GPUNET_MODELS_SHAPE_H
#define GPUNET_MODELS_SHAPE_H

#include <stdint.h>

/* At most this many elements in a tensor, and the same bound on the product of its
 * non-zero sizes: numel times the largest element size (8 bytes) still fits in int64. */
#define GPUNET_SHAPE_MAX_NUMEL (INT64_MAX / 16)

/* 1 when every size of shape[0 .. ndim) is >= 0 and the product of the sizes, zeros
 * counted as ones, is at most GPUNET_SHAPE_MAX_NUMEL (so [0, 2^62, 2^62] is refused
 * although it has no elements); *numel (may be NULL) then receives the element count
 * (1 for a scalar, 0 when a size is 0).  0 otherwise. */
static inline int
gpunet_shape_check (const int64_t *shape, int ndim, int64_t *numel)
{
  int64_t prod = 1;
  int zero = 0;
  for (int k = 0; k < ndim; k++) {
    if (shape[k] < 0)
      return 0;
    if (shape[k] == 0) {
      zero = 1;
      continue;
    }
    if (prod > GPUNET_SHAPE_MAX_NUMEL / shape[k])
      return 0;
    prod *= shape[k];
  }
  if (numel)
    *numel = zero ? 0 : prod;
  return 1;
}

#endif
