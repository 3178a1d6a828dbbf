/* safetensors.h: the safetensors format, read and written.  checkpoint.c reads a
 * safetensors file through it; gpunet-convert writes one.  It builds on tensor.h only
 * (never on checkpoint.h), so the readers form a line, not a circle. */
#ifndef GPUNET_SAFETENSORS_H
#define GPUNET_SAFETENSORS_H

#include "tensor.h"

/* Receives each tensor of a safetensors file (data points into the file's bytes). */
typedef gpunet_status (*gpunet_safetensors_sink) (void *ctx, const char *name,
    const gpunet_tensor *t, char **error_text);

/* Non-zero when the bytes look like a safetensors file (plausible header length and '{'). */
int gpunet_safetensors_detect (const uint8_t *data, size_t size);

/* Checks the header and every data range, and the data's CRC-32 where __metadata__
 * records one (gpunet_data_crc32), then calls `sink` once per tensor. */
gpunet_status gpunet_safetensors_read (const uint8_t *data, size_t size,
    gpunet_safetensors_sink sink, void *ctx, char **error_text);

/* Writes tensors as a safetensors file (header keys sorted, data 8-byte aligned, the data's
 * CRC-32 as __metadata__.gpunet_data_crc32, eight hex digits).  On a
 * failed write it removes `path` only when this call created it, never an existing one. */
gpunet_status gpunet_safetensors_write (const char *path, const gpunet_tensor *tensors,
    size_t n, char **error_text);

#endif
