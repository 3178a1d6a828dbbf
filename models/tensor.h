/* tensor.h: the tensor of a weights file as the readers hand it out (pickle, checkpoint,
 * safetensors): element type, shape and contiguous little-endian bytes.  The bottom of
 * the weights readers: checkpoint.c reads through safetensors.c, and both build on this
 * header only, so neither calls back into the other. */
#ifndef GPUNET_TENSOR_H
#define GPUNET_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "gpunet.h"

typedef enum {
  GPUNET_DTYPE_F32, GPUNET_DTYPE_F16, GPUNET_DTYPE_BF16, GPUNET_DTYPE_F64,
  GPUNET_DTYPE_I64, GPUNET_DTYPE_I32, GPUNET_DTYPE_I16, GPUNET_DTYPE_I8,
  GPUNET_DTYPE_U8, GPUNET_DTYPE_BOOL
} gpunet_dtype;

#define GPUNET_MAX_DIMS 8

typedef struct {
  const char *name;              /* state-dict key, "module." removed */
  gpunet_dtype dtype;
  int ndim;                      /* 0 for a scalar */
  int64_t shape[GPUNET_MAX_DIMS];
  int64_t numel;
  const void *data;              /* contiguous row-major little-endian elements */
  size_t nbytes;
} gpunet_tensor;

/* Bytes per element of a dtype. */
size_t gpunet_dtype_size (gpunet_dtype dtype);

const char *gpunet_dtype_name (gpunet_dtype dtype);

/* Converts a floating tensor (f32, f16, bf16, f64) to float32; `n` must equal numel. */
gpunet_status gpunet_tensor_to_f32 (const gpunet_tensor *t, float *dst, size_t n, char **error_text);

#endif
