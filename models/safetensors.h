/* safetensors.h: engine-internal parts of the weights readers shared by checkpoint.c
 * and safetensors.c: element sizes and the safetensors index reader. */
#ifndef GPUNET_SAFETENSORS_H
#define GPUNET_SAFETENSORS_H

#include "checkpoint.h"

/* Bytes per element of a dtype. */
size_t gpunet_dtype_size (gpunet_dtype dtype);

/* Receives each tensor of a safetensors file (data points into the file's bytes). */
typedef gpunet_status (*gpunet_safetensors_sink) (void *ctx, const char *name,
    const gpunet_tensor *t, char **error_text);

/* Non-zero when the bytes look like a safetensors file (plausible header length and '{'). */
int gpunet_safetensors_detect (const uint8_t *data, size_t size);

/* Checks the header and every data range, then calls `sink` once per tensor. */
gpunet_status gpunet_safetensors_read (const uint8_t *data, size_t size,
    gpunet_safetensors_sink sink, void *ctx, char **error_text);

#endif
