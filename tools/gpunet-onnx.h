/* gpunet-onnx.h: gpunet-convert --onnx: a model's planned graph (BatchNorm folded) as an
 * ONNX model, opset 13, written with protobuf-c from our subset of ONNX's schema
 * (tools/onnx/gpunet-onnx.proto). */
#ifndef GPUNET_ONNX_H
#define GPUNET_ONNX_H

#include <stddef.h>

#include "gpunet.h"

/* The ONNX model of `model` in a malloc'd buffer (*out, *out_len): input "input"
 * (batch x 3 x R x R float32, normalised as gpunet_session_forward takes it, the batch
 * dimension named "batch"), output "logits" (batch x classes).  GPUNET_OK, or a status
 * with a sentence in *error_text. */
gpunet_status gpunet_onnx_export (const gpunet_model *model, unsigned char **out,
    size_t *out_len, char **error_text);

#endif
