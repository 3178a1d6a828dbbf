/* checkpoint.h: read-only access to the tensors of a weights file: PyTorch zip
 * archives (.pth, .pth.tar: a restricted pickle reader that never executes anything)
 * and safetensors.  For training checkpoints the state dict is chosen like timm's
 * load_checkpoint(use_ema=True): state_dict_ema, then state_dict, then the bare dict;
 * a leading "module." is stripped from names.  The tensor type is tensor.h's; safetensors
 * files are written by safetensors.h. */
#ifndef GPUNET_CHECKPOINT_H
#define GPUNET_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "gpunet.h"
#include "tensor.h"

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

#endif
