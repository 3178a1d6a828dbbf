/* checkpoint.h: read-only access to the tensors of a weights file: PyTorch zip
 * archives (.pth, .pth.tar: a restricted pickle reader that never executes anything)
 * and safetensors.  For training checkpoints the state dict is chosen like timm's
 * load_checkpoint(use_ema=True): state_dict_ema, then state_dict, then the bare dict;
 * a leading "module." is stripped from names. */
#ifndef GPUNET_CHECKPOINT_H
#define GPUNET_CHECKPOINT_H

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

typedef struct gpunet_checkpoint gpunet_checkpoint;

/* Opens a file (format detected from its content).  Errors name the file and what is
 * wrong; a corrupt, truncated or hostile file never crashes or reads out of bounds. */
gpunet_status gpunet_checkpoint_open (const char *path, gpunet_checkpoint **out, char **error_text);

/* The same from memory (the bytes are copied); `name` is used in errors. */
gpunet_status gpunet_checkpoint_open_memory (const void *data, size_t size, const char *name,
    gpunet_checkpoint **out, char **error_text);

void gpunet_checkpoint_free (gpunet_checkpoint *ckpt);

size_t gpunet_checkpoint_n_tensors (const gpunet_checkpoint *ckpt);
const gpunet_tensor *gpunet_checkpoint_tensor (const gpunet_checkpoint *ckpt, size_t i);
const gpunet_tensor *gpunet_checkpoint_find (const gpunet_checkpoint *ckpt, const char *name);

/* Which weights were chosen: "state_dict_ema", "state_dict", "state dict" (bare) or
 * "safetensors". */
const char *gpunet_checkpoint_source (const gpunet_checkpoint *ckpt);

const char *gpunet_dtype_name (gpunet_dtype dtype);

/* Converts a floating tensor (f32, f16, bf16, f64) to float32; `n` must equal numel. */
gpunet_status gpunet_tensor_to_f32 (const gpunet_tensor *t, float *dst, size_t n, char **error_text);

/* Writes tensors as a safetensors file (header keys sorted, data 8-byte aligned).  On a
 * failed write it removes `path` only when this call created it, never an existing one. */
gpunet_status gpunet_safetensors_write (const char *path, const gpunet_tensor *tensors,
    size_t n, char **error_text);

#endif
