/* backend.h: the table of functions every compute backend provides.  A backend plans
 * a graph once per session (buffers, threads, device state) and then runs it.
 * Optional slots may be NULL; the engine checks before calling. */
#ifndef GPUNET_BACKEND_H
#define GPUNET_BACKEND_H

#include "gpunet.h"
#include "graph.h"
#include "cpu/preprocess.h"

typedef struct gpunet_backend gpunet_backend;
struct gpunet_backend {
  const char *name;

  /* Required.  Returns GPUNET_ERR_BACKEND_UNAVAILABLE (with a sentence) when the
   * backend cannot run here (no device, no driver).  The graph outlives the state. */
  gpunet_status (*plan) (const gpunet_graph *graph, const gpunet_session_params *params,
      void **state, char **error_text);

  /* Required.  input: n x 3 x R x R host float32; logits: n x classes host float32.
   * trace (may be NULL) receives each block's output. */
  gpunet_status (*forward) (void *state, const float *input, int n, float *logits,
      gpunet_trace_func trace, void *trace_user, char **error_text);

  /* Required. */
  void (*destroy) (void *state);

  /* Optional (NULL: the backend reads host memory only; the CPU backends).  Classifies n
   * images whose planes are device pointers of this backend (GPUNET_MEMORY_CUDA), all of
   * the size `pre` was built for (the engine owns and caches the plan; the backend uploads
   * its tap tables when the plan's geometry changes): preprocess on the device into the
   * network input, forward pass, softmax + top-k, k results per image into `out` (host).
   * Images are validated by the engine.  Returns only when the device is done reading
   * the images. */
  gpunet_status (*classify_device) (void *state, const gpunet_image *images, int n,
      const gpunet_preprocess_plan *pre, int k, gpunet_class_score *out, char **error_text);

  /* Optional (NULL: host images are preprocessed on the CPU and go through `forward`).
   * The contract of classify_device for n images whose planes are HOST pointers
   * (GPUNET_MEMORY_HOST), all of the size `pre` was built for, any format: the backend
   * copies the planes it needs (honouring strides) to its own staging memory, then
   * preprocesses on the device, runs the network and returns the k results per image.
   * Images are validated by the engine; they may be freed once the call returns. */
  gpunet_status (*classify_host) (void *state, const gpunet_image *images, int n,
      const gpunet_preprocess_plan *pre, int k, gpunet_class_score *out, char **error_text);
};

/* The reference CPU backend: plain C, the oracle every other backend is compared with. */
extern const gpunet_backend gpunet_backend_cpu_ref;

#endif
