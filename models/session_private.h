/* session_private.h: the inside of gpunet_session and the backend look-ups, shared by
 * the engine's own files only. */
#ifndef GPUNET_SESSION_PRIVATE_H
#define GPUNET_SESSION_PRIVATE_H

#include "gpunet.h"
#include "../kernels/backend.h"
#include "../kernels/cpu/preprocess.h"

struct gpunet_session {
  gpunet_model *model;
  gpunet_session_params params;
  const gpunet_backend *backend;
  void *state;
  char *fallback_reason;  /* why auto did not pick CUDA, or NULL */
  float *input;           /* max_batch x 3 x R x R, preprocess output */
  float *logits;          /* max_batch x classes */
  gpunet_preprocess_plan pre_plan;  /* cached across frames of the same size */
};

/* The CPU backend sessions use (the fast one when built, else the reference). */
const gpunet_backend *gpunet_backend_cpu_get (void);

/* The CUDA backend, or NULL with a reason in *error_text when this build or this host
 * has none (the sentence says which). */
const gpunet_backend *gpunet_backend_cuda_get (char **error_text);

/* Why backend=auto fell back to the CPU, or NULL. */
const char *gpunet_session_fallback_reason (const gpunet_session *session);

#endif
