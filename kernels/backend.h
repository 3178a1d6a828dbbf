/* backend.h: the table of functions every compute backend provides.  A backend plans
 * a graph once per session (buffers, threads, device state) and then runs it.
 * Optional slots may be NULL; the engine checks before calling. */
#ifndef GPUNET_BACKEND_H
#define GPUNET_BACKEND_H

#include "gpunet-types.h"
#include "graph.h"
#include "host/preprocess.h"

/* The most distinct preprocess geometries one classify_device / classify_host call
 * carries: max_batch, at least 8 and at most 64.  The engine caches that many plans per
 * session and splits a request with more geometries (only possible past 64 images) into
 * several calls, so a backend caching per-geometry device state with this many entries
 * never has to replace one the current call still reads; the cap bounds the plans a
 * session keeps (each holds tap tables and scratch rows of its frame width). */
#define GPUNET_BACKEND_GEOMETRIES_MIN 8
#define GPUNET_BACKEND_GEOMETRIES_MAX 64
static inline int
gpunet_backend_call_geometries (int max_batch)
{
  return max_batch < GPUNET_BACKEND_GEOMETRIES_MIN ? GPUNET_BACKEND_GEOMETRIES_MIN
      : max_batch > GPUNET_BACKEND_GEOMETRIES_MAX ? GPUNET_BACKEND_GEOMETRIES_MAX : max_batch;
}

typedef struct gpunet_backend gpunet_backend;
struct gpunet_backend {
  const char *name;

  /* Required.  Returns GPUNET_ERR_BACKEND_UNAVAILABLE (with a sentence) when the
   * backend cannot run here (no device, no driver).  The graph outlives the state.
   * `params` is the kernel-side gpunet_plan_params (gpunet-types.h) the engine fills
   * from the session's parameters. */
  gpunet_status (*plan) (const gpunet_graph *graph, const gpunet_plan_params *params,
      void **state, char **error_text);

  /* Required.  input: n x 3 x R x R host float32; logits: n x classes host float32.
   * trace (may be NULL) receives each block's output. */
  gpunet_status (*forward) (void *state, const float *input, int n, float *logits,
      gpunet_trace_func trace, void *trace_user, char **error_text);

  /* Required. */
  void (*destroy) (void *state);

  /* Optional (NULL: the backend reads host memory only; the CPU backends).  Classifies n
   * images whose planes are device pointers of this backend (GPUNET_MEMORY_CUDA), image i
   * of the size plans[i] was built for.  The images may differ in size, format, resize
   * mode and crop (one plan per image; images of one geometry may share a plan): one call
   * is one forward pass.  The engine owns the plans; they do not change during the call,
   * but between calls a plan may be rebuilt for another geometry, so a backend that keeps
   * device copies of their tables keys them by geometry (in_w, in_h, out_size, mode,
   * crop_pct), not by address.  A call carries at most
   * gpunet_backend_call_geometries (max_batch) distinct geometries.  Preprocess on the
   * device into the network input, forward pass, softmax + top-k, k results per image
   * into `out` (host).  Images are validated by the engine.  Returns only when the device
   * is done reading the images. */
  gpunet_status (*classify_device) (void *state, const gpunet_image *images, int n,
      const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out,
      char **error_text);

  /* Optional (NULL: host images are preprocessed on the CPU and go through `forward`).
   * The contract of classify_device for n images whose planes are HOST pointers
   * (GPUNET_MEMORY_HOST), image i of the size plans[i] was built for, any format and
   * any mix of sizes: the backend copies the planes it needs (honouring strides) to its
   * own staging memory, then preprocesses on the device, runs the network and returns
   * the k results per image.  Images are validated by the engine; they may be freed once
   * the call returns. */
  gpunet_status (*classify_host) (void *state, const gpunet_image *images, int n,
      const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out,
      char **error_text);
};

/* The reference CPU backend: plain C, the oracle every other backend is compared with. */
extern const gpunet_backend gpunet_backend_cpu_ref;

#endif
