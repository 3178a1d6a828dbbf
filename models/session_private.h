/* session_private.h: the inside of gpunet_session, shared by the engine's own files
 * only (backends are found through kernels/registry.h). */
#ifndef GPUNET_SESSION_PRIVATE_H
#define GPUNET_SESSION_PRIVATE_H

#include "gpunet.h"
#include "../kernels/backend.h"
#include "../kernels/host/preprocess.h"

struct gpunet_session {
  gpunet_model *model;
  gpunet_session_params params;
  const gpunet_backend *backend;
  void *state;
  char *fallback_reason;  /* why auto did not pick CUDA, or NULL */
  float *input;           /* max_batch x 3 x R x R, preprocess output */
  float *logits;          /* max_batch x classes */
  /* preprocess plans cached by geometry (frame size, resize mode, crop), so frames of
   * several sizes (streams sharing an engine, region crops) keep their own; the least
   * recently used one is rebuilt when a new geometry comes.  n_plans =
   * gpunet_backend_call_geometries (max_batch): every geometry of one backend call */
  gpunet_preprocess_plan *plans;
  uint64_t *plan_used;
  int n_plans;
  uint64_t plan_clock;
};

/* Checks a classify request (k, preprocess parameters, every image, and that the
 * session can read the images' memory) without running it. */
gpunet_status gpunet_session_check_images (const gpunet_session *session,
    const gpunet_image *images, int n, const gpunet_preprocess_params *pre, int k,
    char **error_text);

/* gpunet_session_classify with one set of preprocess parameters per image (pres[i]),
 * images of any sizes; the request must have passed gpunet_session_check_images. */
gpunet_status gpunet_session_classify_each (gpunet_session *session,
    const gpunet_image *images, const gpunet_preprocess_params *pres, int n, int k,
    gpunet_class_score *out, char **error_text);

/* gpunet_session_new on `backend` instead of the registry's (tests: a fake backend). */
gpunet_status gpunet_session_new_on (gpunet_model *model, const gpunet_session_params *params,
    const gpunet_backend *backend, gpunet_session **out, char **error_text);

/* gpunet_engine_new whose sessions run on `backend` (tests: a fake backend whose passes
 * take their own time).  (engine.c) */
gpunet_status gpunet_engine_new_on (gpunet_model *model, const gpunet_engine_params *params,
    const gpunet_backend *backend, gpunet_engine **out, char **error_text);

/* The most passes the engine's workers have had taken at once (at most
 * passes_in_flight).  (engine.c) */
int gpunet_engine_most_passes (gpunet_engine *engine);

/* Why backend=auto fell back to the CPU, or NULL. */
const char *gpunet_session_fallback_reason (const gpunet_session *session);

#endif
