/* classify.cu: the CUDA backend's classify_device and classify_host (backend_cuda.h):
 * checks the frames, fills one preprocess descriptor per image (its geometry's device tap
 * tables from the session's small cache), packs host frames into pinned staging memory,
 * and runs preprocess + forward + softmax + top-k as one enqueued piece of work (captured
 * in a CUDA graph per batch size).  Not run on a GPU since the split from
 * backend_cuda.cu. */
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "cuda_internal.h"
#include "cuda_module.h"
#include "cuda_upload.h"

/* Fails unless every plane of `img` is memory the current context's kernels can read. */
static gpunet_status
check_device_planes (const gpunet_image *img, int index, int device, char **error_text)
{
  const int planes = img->format == GPUNET_FORMAT_I420 ? 3 : img->format == GPUNET_FORMAT_NV12 ? 2 : 1;
  for (int p = 0; p < planes; p++) {
    cudaPointerAttributes a;
    GPUNET_CU_TRY (cudaPointerGetAttributes (&a, img->planes[p]), error_text,
        "cudaPointerGetAttributes (image %d, plane %d)", index, p);
    /* memory the session's kernels cannot address would be an illegal address here,
     * which ends the context (cuda_upload.h) */
    switch (gpunet_plane_access_of ((int) a.type, a.device, device, a.devicePointer)) {
      case GPUNET_PLANE_READABLE:
        break;
      case GPUNET_PLANE_HOST:
        return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
            "image %d is marked as CUDA memory, but plane %d (%p) is plain host memory the GPU "
            "cannot read", index, p, (const void *) img->planes[p]);
      case GPUNET_PLANE_OTHER_DEVICE:
        return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
            "image %d, plane %d is memory of CUDA device %d, but the session runs on device %d",
            index, p, a.device, device);
      case GPUNET_PLANE_OTHER_CONTEXT:
        return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
            "image %d, plane %d (%p) is CUDA memory of another CUDA context than the "
            "session's: its kernels cannot address it (share the producer's context, or "
            "copy the frame)", index, p, (const void *) img->planes[p]);
    }
  }
  return GPUNET_OK;
}

/* classify_device's work once h_desc holds the n descriptors: descriptor upload,
 * preprocess, layers, then top-k results (or, past GPUNET_CUDA_TOPK_MAX classes, the
 * float logits) copied to pinned memory. */
static gpunet_status
enqueue_classify (void *user, char **error_text)
{
  cuda_state *s = (cuda_state *) user;
  const gpunet_graph *g = s->g;
  const int n = s->run_n, k = s->run_k;
  const int classes = (int) tensor_floats (g, g->output, 1);
  const int R = g->tensors[g->input].h;
  GPUNET_CU_TRY (cudaMemcpyAsync (s->d_desc, s->h_desc, (size_t) n * sizeof (gpunet_cuda_pre_desc),
      cudaMemcpyHostToDevice, s->ctx.stream), error_text,
      "cudaMemcpyAsync (preprocess descriptors to the device)");
  GPUNET_CU_TRY (gpunet_cuda_preprocess (s->d_desc, n, R, s->dtype, s->d_input, s->nhwc,
      s->ctx.stream),
      error_text, "preprocess kernel (%d image(s) to %dx%d)", n, R, R);
  /* the fused head (head_op >= 0 implies classes <= GPUNET_CUDA_TOPK_MAX) does the top-k */
  const int head = s->head_op >= 0;
  gpunet_status st = run_layers (s, n, head ? k : -1, NULL, NULL, error_text);
  if (st == GPUNET_OK && !head)
    st = enqueue_logits32 (s, n, error_text);
  if (st != GPUNET_OK)
    return st;
  if (head) {
    GPUNET_CU_TRY (cudaMemcpyAsync (s->h_topk, s->d_topk, (size_t) n * k * sizeof (gpunet_class_score),
        cudaMemcpyDeviceToHost, s->ctx.stream), error_text, "cudaMemcpyAsync (top-k results to the host)");
  } else if (classes <= GPUNET_CUDA_TOPK_MAX) {
    GPUNET_CU_TRY (gpunet_cuda_topk (logits32 (s, 0), n, classes, k, s->d_topk, s->ctx.stream),
        error_text, "softmax + top-k kernel (%d classes, k %d)", classes, k);
    GPUNET_CU_TRY (cudaMemcpyAsync (s->h_topk, s->d_topk, (size_t) n * k * sizeof (gpunet_class_score),
        cudaMemcpyDeviceToHost, s->ctx.stream), error_text, "cudaMemcpyAsync (top-k results to the host)");
  } else {
    /* too many classes for the shared-memory sort: select on the host */
    GPUNET_CU_TRY (cudaMemcpyAsync (s->h_logits, logits32 (s, 0), (size_t) n * classes * sizeof (float),
        cudaMemcpyDeviceToHost, s->ctx.stream), error_text, "cudaMemcpyAsync (logits to the host)");
  }
  return GPUNET_OK;
}

/* The checks classify_device and classify_host share, for image i and its plan. */
static gpunet_status
check_classify (cuda_state *s, const gpunet_image *img, int i, const gpunet_preprocess_plan *pre,
    int k, char **error_text)
{
  const gpunet_graph *g = s->g;
  const int classes = (int) tensor_floats (g, g->output, 1);
  const gpunet_tensor_desc *in = &g->tensors[g->input];
  if (!pre)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "image %d has no preprocess plan", i);
  if (pre->out_size != in->h || in->h != in->w || in->c != 3)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "the preprocess plan of image %d writes 3x%dx%d, the network takes %dx%dx%d", i,
        pre->out_size, pre->out_size, in->c, in->h, in->w);
  /* the tables index the frame by the plan's size: a smaller frame would be read past
   * its end */
  if (img->width != pre->in_w || img->height != pre->in_h)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "image %d is %dx%d, its preprocess plan was built for %dx%d", i, img->width,
        img->height, pre->in_w, pre->in_h);
  if (k < 1 || k > classes)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "top-k of %d asked, the model has %d classes", k, classes);
  return GPUNET_OK;
}

/* Once h_desc holds the n descriptors (and the frames they point at are on the device, or
 * queued to be): the classification (one CUDA graph per (n, k)), the wait, the results. */
static gpunet_status
run_classify (cuda_state *s, int n, int k, gpunet_class_score *out, const char *what,
    char **error_text)
{
  const gpunet_graph *g = s->g;
  const int classes = (int) tensor_floats (g, g->output, 1);
  s->run_n = n;
  s->run_k = k;
  /* frame pointers, sizes and tap-table pointers travel only in the descriptors (copied
   * from pinned h_desc by the graph's first node at each replay; the tables live in the
   * cache, uploaded before the launch), so one graph per (n, k) serves any mix of
   * geometries; the launch grid depends on n and the network's R only (mixed sizes:
   * not run on a GPU) */
  gpunet_status st = gpunet_cuda_graph_run (&s->dev_graph[n], k, s->graphs, s->ctx.stream,
      enqueue_classify, s, what, error_text);
  /* on failure, work already queued may still read the frames: wait for it (its own
   * error, if any, is the one already reported) */
  if (st != GPUNET_OK) {
    cudaStreamSynchronize (s->ctx.stream);
    return st;
  }
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (end of %s)", what);
  if (classes <= GPUNET_CUDA_TOPK_MAX)
    memcpy (out, s->h_topk, (size_t) n * k * sizeof (gpunet_class_score));
  else
    for (int i = 0; i < n; i++)
      gpunet_topk_softmax (s->h_logits + (size_t) i * classes, classes, k, out + (size_t) i * k);
  return GPUNET_OK;
}

/* What classify_device and classify_host do first (in the session's context): the
 * arguments checked, the batch described and each image's tap tables on the device
 * (img_tables[i]; geometries the cache holds cost nothing). */
static gpunet_status
begin_classify (cuda_state *s, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *const *plans, int k, char **error_text)
{
  gpunet_status st = GPUNET_OK;
  if (!plans)
    st = gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "no preprocess plans");
  for (int i = 0; i < n && st == GPUNET_OK; i++)
    st = check_classify (s, &images[i], i, plans[i], k, error_text);
  /* a replayed graph needs no layer descriptors (set_batch) */
  if (st == GPUNET_OK)
    st = set_batch (s, n, !(n >= 1 && n <= s->max_batch
        && gpunet_graph_will_replay (&s->dev_graph[n].state, k)), error_text);
  if (st != GPUNET_OK)
    return st;
  gpunet_cuda_pre_cache_begin (&s->pre);
  for (int i = 0; i < n && st == GPUNET_OK; i++)
    st = gpunet_cuda_pre_cache_get (&s->pre, plans[i], s->ctx.stream, &s->img_tables[i],
        error_text);
  return st;
}

/* Preprocess descriptor i for device image `img` (of plan `pre`'s size), pointing at the
 * device tap tables begin_classify found for it. */
static void
set_desc (cuda_state *s, int i, const gpunet_preprocess_plan *pre, const gpunet_image *img)
{
  gpunet_cuda_pre_desc_init (&s->h_desc[i], pre, img);
  s->h_desc[i].x = s->img_tables[i]->x;
  s->h_desc[i].y = s->img_tables[i]->y;
}

static gpunet_status
classify_device_in_context (cuda_state *s, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out,
    char **error_text)
{
  gpunet_status st = begin_classify (s, images, n, plans, k, error_text);
  for (int i = 0; i < n && st == GPUNET_OK; i++)
    st = check_device_planes (&images[i], i, s->ctx.device, error_text);
  if (st != GPUNET_OK)
    return st;
  /* frames a producer may still be writing: the stream waits for their events on the
   * GPU, before the classification's graph is launched or captured (an event recorded
   * outside a capture cannot be waited on inside it) */
  for (int i = 0; i < n; i++)
    if (images[i].cuda_ready && (i == 0 || images[i].cuda_ready != images[i - 1].cuda_ready))
      GPUNET_CU_TRY (cudaStreamWaitEvent (s->ctx.stream, (cudaEvent_t) images[i].cuda_ready, 0),
          error_text, "cudaStreamWaitEvent (image %d's producer event)", i);
  /* the previous call synchronised, so the pinned descriptors are free to rewrite */
  for (int i = 0; i < n; i++)
    set_desc (s, i, plans[i], &images[i]);
  return run_classify (s, n, k, out, "the device classification", error_text);
}

/* Grows the frame staging buffers (pinned and device) to at least `bytes`; they are
 * never shrunk, so frames of one size allocate nothing after the first call. */
static gpunet_status
ensure_staging (cuda_state *s, size_t bytes, char **error_text)
{
  if (bytes <= s->stage_bytes)
    return GPUNET_OK;
  /* every call synchronises before returning; wait anyway, the old buffers go away */
  GPUNET_CU_TRY (cudaStreamSynchronize (s->ctx.stream), error_text,
      "cudaStreamSynchronize (before growing the frame staging buffers)");
  if (s->h_stage)
    cudaFreeHost (s->h_stage);
  if (s->d_stage)
    cudaFree (s->d_stage);
  s->h_stage = s->d_stage = NULL;
  s->stage_bytes = 0;
  /* write-combined: the host only writes it (memcpy), the copy engine reads it */
  GPUNET_CU_TRY (cudaHostAlloc ((void **) &s->h_stage, bytes, cudaHostAllocWriteCombined),
      error_text, "cudaHostAlloc (pinned frame staging, %zu bytes)", bytes);
  GPUNET_CU_TRY (cudaMalloc ((void **) &s->d_stage, bytes), error_text,
      "cudaMalloc (device frame staging, %zu bytes)", bytes);
  s->stage_bytes = bytes;
  return GPUNET_OK;
}

/* Host frames: each is packed into pinned staging memory (the rows the preprocess
 * reads, cuda_upload.h) and its copy to the device queued at once, so the packing of
 * the next frame overlaps the copy of this one; then the device path. */
static gpunet_status
classify_host_in_context (cuda_state *s, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out,
    char **error_text)
{
  gpunet_status st = begin_classify (s, images, n, plans, k, error_text);
  if (st != GPUNET_OK)
    return st;
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    gpunet_frame_layout lay;
    if (images[i].memory != GPUNET_MEMORY_HOST
        || gpunet_frame_layout_init (&lay, images[i].format, images[i].width, images[i].height))
      return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
          "image %d (format %d, memory kind %d) is not a host frame the device preprocess reads",
          i, (int) images[i].format, (int) images[i].memory);
    total += lay.bytes;
  }
  st = ensure_staging (s, total, error_text);
  if (st != GPUNET_OK)
    return st;
  /* the previous call synchronised: the pinned staging and descriptors are free */
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    gpunet_frame_layout lay;
    gpunet_frame_layout_init (&lay, images[i].format, images[i].width, images[i].height);
    gpunet_frame_pack (&lay, &images[i], s->h_stage + at);
    cudaError_t e = cudaMemcpyAsync (s->d_stage + at, s->h_stage + at, lay.bytes,
        cudaMemcpyHostToDevice, s->ctx.stream);
    if (e != cudaSuccess) {
      char what[128];
      snprintf (what, sizeof what, "cudaMemcpyAsync (host frame %d to the device, %zu bytes)", i,
          lay.bytes);
      st = gpunet_cuda_fail_rt (error_text, e, what);
      cudaStreamSynchronize (s->ctx.stream);   /* earlier copies still read h_stage */
      return st;
    }
    const gpunet_image view = gpunet_frame_view (&lay, &images[i], s->d_stage + at,
        GPUNET_MEMORY_CUDA);
    set_desc (s, i, plans[i], &view);
    at += lay.bytes;
  }
  return run_classify (s, n, k, out, "the host-frame classification", error_text);
}

/* The two classify entries: the work above inside the session's CUDA context. */
gpunet_status
cuda_classify_device (void *state, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out,
    char **error_text)
{
  cuda_state *s = (cuda_state *) state;
  gpunet_cuda_ctx_scope scope;
  gpunet_status st = gpunet_cuda_ctx_enter (s->ctx.cu_ctx, &scope, error_text);
  if (st != GPUNET_OK)
    return st;
  st = classify_device_in_context (s, images, n, plans, k, out, error_text);
  return gpunet_cuda_ctx_leave (s->ctx.cu_ctx, &scope, st, error_text);
}

gpunet_status
cuda_classify_host (void *state, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out,
    char **error_text)
{
  cuda_state *s = (cuda_state *) state;
  gpunet_cuda_ctx_scope scope;
  gpunet_status st = gpunet_cuda_ctx_enter (s->ctx.cu_ctx, &scope, error_text);
  if (st != GPUNET_OK)
    return st;
  st = classify_host_in_context (s, images, n, plans, k, out, error_text);
  return gpunet_cuda_ctx_leave (s->ctx.cu_ctx, &scope, st, error_text);
}

