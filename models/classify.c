/* classify.c: the image side of the engine API: checks gpunet_image and preprocess
 * arguments, runs the fused preprocess (kernels/host/preprocess.c) into the session's input
 * buffer, one forward pass for the batch and softmax/top-k per image; device images go
 * to the backend's classify_device slot, and host images to its classify_host slot when
 * it has one (the CUDA backend: upload, then the device preprocess), in one call with
 * one cached plan per image, whatever the mix of sizes and preprocess parameters.
 * Plans are cached per geometry, so batches mixing frame sizes replan nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model_private.h"
#include "session_private.h"
#include "../kernels/host/preprocess.h"

static const char *
format_name (gpunet_pixel_format f)
{
  static const char *names[] = { "RGB", "BGR", "RGBA", "BGRA", "RGBx", "BGRx", "NV12", "I420" };
  return (unsigned) f < sizeof names / sizeof names[0] ? names[f] : "unknown";
}

/* Checks one frame; `what` names it in the sentence ("image 3"). */
static gpunet_status
check_image (const gpunet_image *img, const char *what, char **error_text)
{
  if (!img)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "%s is NULL", what);
  if ((unsigned) img->format > GPUNET_FORMAT_I420)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "%s has an unknown pixel format %d", what, (int) img->format);
  if (img->width < 1 || img->height < 1 || img->width > GPUNET_MAX_FRAME_SIDE
      || img->height > GPUNET_MAX_FRAME_SIDE)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "%s is %dx%d; width and height must be 1 to %d", what, img->width, img->height,
        GPUNET_MAX_FRAME_SIDE);
  const char *fmt = format_name (img->format);
  const int w = img->width, cw = (w + 1) / 2;
  int n_planes, min_stride[3];
  switch (img->format) {
    case GPUNET_FORMAT_NV12:
      n_planes = 2;
      min_stride[0] = w;
      min_stride[1] = 2 * cw;
      break;
    case GPUNET_FORMAT_I420:
      n_planes = 3;
      min_stride[0] = w;
      min_stride[1] = min_stride[2] = cw;
      break;
    case GPUNET_FORMAT_RGB: case GPUNET_FORMAT_BGR:
      n_planes = 1;
      min_stride[0] = 3 * w;
      break;
    default:
      n_planes = 1;
      min_stride[0] = 4 * w;
      break;
  }
  for (int i = 0; i < n_planes; i++) {
    if (!img->planes[i])
      return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
          "%s (%s, %dx%d) has no plane %d", what, fmt, img->width, img->height, i);
    if (img->strides[i] < min_stride[i])
      return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
          "%s (%s, %dx%d): plane %d has stride %d bytes, a row needs at least %d", what, fmt,
          img->width, img->height, i, img->strides[i], min_stride[i]);
  }
  if (img->memory != GPUNET_MEMORY_HOST && img->memory != GPUNET_MEMORY_CUDA)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "%s has an unknown memory kind %d (host or CUDA)", what, (int) img->memory);
  if (n_planes > 1) {
    if (img->matrix != GPUNET_MATRIX_BT601 && img->matrix != GPUNET_MATRIX_BT709)
      return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
          "%s has an unknown colour matrix %d (BT.601 or BT.709)", what, (int) img->matrix);
  }
  return GPUNET_OK;
}

/* Resolves the preprocess parameters (NULL or crop_pct <= 0: the model's defaults). */
static gpunet_status
check_params (const gpunet_model *model, const gpunet_preprocess_params *pre,
    gpunet_resize_mode *mode, float *crop_pct, char **error_text)
{
  *mode = pre ? pre->resize_mode : GPUNET_RESIZE_CENTER_CROP;
  *crop_pct = pre && pre->crop_pct > 0.0f ? pre->crop_pct : gpunet_model_crop_pct (model);
  if (*mode != GPUNET_RESIZE_CENTER_CROP && *mode != GPUNET_RESIZE_STRETCH
      && *mode != GPUNET_RESIZE_LETTERBOX)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "unknown resize mode %d (center-crop, stretch or letterbox)", (int) *mode);
  if (isnan (*crop_pct) || *crop_pct < 0.1f || *crop_pct > 2.0f)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "crop_pct %g is out of range (0.1 to 2; 0 or less means the model's %g)",
        (double) (pre ? pre->crop_pct : *crop_pct), (double) gpunet_model_crop_pct (model));
  return GPUNET_OK;
}

/* The session's cached plan for this frame geometry, built (in the least recently used
 * slot) when none matches.  The plans fetched for one slot call must all survive until
 * it returns: a call carries at most n_plans geometries (see split_geometries), and the
 * least recently used slot is then always one the call has not fetched. */
static gpunet_status
session_plan (gpunet_session *s, const gpunet_image *img, int R, gpunet_resize_mode mode,
    float crop_pct, gpunet_preprocess_plan **out, char **error_text)
{
  int slot = 0;
  for (int i = 0; i < s->n_plans; i++) {
    if (s->plan_used[i] && gpunet_preprocess_plan_matches (&s->plans[i], img->width,
            img->height, R, mode, crop_pct)) {
      s->plan_used[i] = ++s->plan_clock;
      *out = &s->plans[i];
      return GPUNET_OK;
    }
    if (s->plan_used[i] < s->plan_used[slot])
      slot = i;
  }
  gpunet_preprocess_plan *plan = &s->plans[slot];
  gpunet_preprocess_plan_clear (plan);
  s->plan_used[slot] = 0;
  gpunet_status st = gpunet_preprocess_plan_init (plan, img->width, img->height, R, mode,
      crop_pct);
  if (st != GPUNET_OK)
    return gpunet_fail (error_text, st, "cannot plan the preprocess of a %dx%d frame to %dx%d%s",
        img->width, img->height, R, R, st == GPUNET_ERR_NO_MEMORY ? ": out of memory" : "");
  /* simd=portable / avx2 (gpunet_cpu_options) caps the CPU pass's vector code */
  plan->simd_cap = s->params.cpu.simd == GPUNET_CPU_SIMD_PORTABLE ? 0
      : s->params.cpu.simd == GPUNET_CPU_SIMD_AVX2 ? 1 : -1;
  s->plan_used[slot] = ++s->plan_clock;
  *out = plan;
  return GPUNET_OK;
}

/* Resolved preprocess parameters of one image. */
typedef struct {
  gpunet_resize_mode mode;
  float crop_pct;
} resolved_pre;

/* Non-zero when images a and b have one preprocess plan. */
static int
same_geometry (const gpunet_image *a, const resolved_pre *pa, const gpunet_image *b,
    const resolved_pre *pb)
{
  return a->width == b->width && a->height == b->height && pa->mode == pb->mode
      && pa->crop_pct == pb->crop_pct;
}

/* The end of the longest run of images from `first` with at most `most` distinct
 * geometries. */
static int
split_geometries (const gpunet_image *images, const resolved_pre *rp, int first, int n,
    int most)
{
  if (n - first <= most)
    return n;
  int seen[GPUNET_BACKEND_GEOMETRIES_MAX], distinct = 0, i;
  for (i = first; i < n; i++) {
    int j = 0;
    while (j < distinct && !same_geometry (&images[seen[j]], &rp[seen[j]], &images[i], &rp[i]))
      j++;
    if (j == distinct) {
      if (distinct == most)
        break;
      seen[distinct++] = i;
    }
  }
  return i;
}

typedef gpunet_status (*classify_slot) (void *state, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out,
    char **error_text);

/* n images of one memory kind through the backend's classify_device or classify_host
 * slot, with each image's plan: one call (one forward pass) for any mix of sizes and
 * preprocess parameters up to the session's plan count of geometries.  A request with
 * more (only past GPUNET_BACKEND_GEOMETRIES_MAX images) is split into calls of at most
 * that many.  Why a cap and not one plan per image: each plan keeps tables and scratch
 * rows of its frame width (about 1 MB at 1080p), so a session of max_batch 4096 would
 * keep gigabytes; 64 geometries per pass covers region crops of realistic batches. */
static gpunet_status
classify_on_slot (gpunet_session *s, classify_slot slot, const gpunet_image *images,
    const resolved_pre *rp, int n, int k, gpunet_class_score *out, char **error_text)
{
  const int R = gpunet_model_resolution (s->model);
  gpunet_preprocess_plan **plans = malloc (sizeof *plans * (size_t) n);
  if (!plans)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory classifying %d images", n);
  gpunet_status st = GPUNET_OK;
  for (int first = 0; first < n && st == GPUNET_OK;) {
    const int end = split_geometries (images, rp, first, n, s->n_plans);
    for (int i = first; i < end && st == GPUNET_OK; i++)
      st = session_plan (s, &images[i], R, rp[i].mode, rp[i].crop_pct, &plans[i], error_text);
    if (st == GPUNET_OK)
      st = slot (s->state, images + first, end - first,
          (const gpunet_preprocess_plan *const *) plans + first, k, out + (size_t) first * k,
          error_text);
    first = end;
  }
  free (plans);
  return st;
}

/* n host images: the backend's own device preprocess when it has one (any mix of
 * sizes), else one CPU preprocess each, one forward pass, top-k per image. */
static gpunet_status
classify_host_images (gpunet_session *s, const gpunet_image *images, const resolved_pre *rp,
    int n, int k, gpunet_class_score *out, char **error_text)
{
  if (s->backend->classify_host)
    return classify_on_slot (s, s->backend->classify_host, images, rp, n, k, out, error_text);
  const int R = gpunet_model_resolution (s->model);
  const int classes = gpunet_model_num_classes (s->model);
  const size_t per_image = (size_t) 3 * R * R;
  gpunet_preprocess_plan *plan = NULL;
  gpunet_status st;
  for (int i = 0; i < n; i++) {
    st = session_plan (s, &images[i], R, rp[i].mode, rp[i].crop_pct, &plan, error_text);
    if (st != GPUNET_OK)
      return st;
    gpunet_cpu_preprocess (plan, &images[i], s->input + i * per_image);
  }
  st = gpunet_session_forward (s, s->input, n, s->logits, error_text);
  if (st != GPUNET_OK)
    return st;
  for (int i = 0; i < n; i++)
    gpunet_topk_softmax (s->logits + (size_t) i * classes, classes, k, out + (size_t) i * k);
  return GPUNET_OK;
}

/* The images of memory kind `memory` among n through their path (results in order). */
static gpunet_status
classify_memory_kind (gpunet_session *s, gpunet_memory memory, const gpunet_image *images,
    const resolved_pre *rp, int n, int k, gpunet_class_score *out, char **error_text)
{
  gpunet_image *group = malloc (sizeof *group * (size_t) n);
  resolved_pre *group_rp = malloc (sizeof *group_rp * (size_t) n);
  int *index = malloc (sizeof *index * (size_t) n);
  gpunet_class_score *group_out = malloc (sizeof *group_out * (size_t) n * (size_t) k);
  gpunet_status st = GPUNET_OK;
  if (!group || !group_rp || !index || !group_out)
    st = gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory classifying %d images", n);
  int m = 0;
  for (int i = 0; i < n && st == GPUNET_OK; i++)
    if (images[i].memory == memory) {
      group[m] = images[i];
      group_rp[m] = rp[i];
      index[m++] = i;
    }
  if (st == GPUNET_OK && m > 0)
    st = memory == GPUNET_MEMORY_CUDA
        ? classify_on_slot (s, s->backend->classify_device, group, group_rp, m, k, group_out,
            error_text)
        : classify_host_images (s, group, group_rp, m, k, group_out, error_text);
  for (int j = 0; j < m && st == GPUNET_OK; j++)
    memcpy (out + (size_t) index[j] * k, group_out + (size_t) j * k, sizeof *out * (size_t) k);
  free (group);
  free (group_rp);
  free (index);
  free (group_out);
  return st;
}

gpunet_status
gpunet_session_check_images (const gpunet_session *s, const gpunet_image *images, int n,
    const gpunet_preprocess_params *pre, int k, char **error_text)
{
  if (!s || !images)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "a classify request needs a session and images");
  const int classes = gpunet_model_num_classes (s->model);
  if (n < 1)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "a classify request needs at least one image (%d given)", n);
  if (k < 1 || k > classes)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "top-k of %d asked, the model has %d classes (1 to %d)", k, classes, classes);
  gpunet_resize_mode mode;
  float crop_pct;
  gpunet_status st = check_params (s->model, pre, &mode, &crop_pct, error_text);
  for (int i = 0; i < n && st == GPUNET_OK; i++) {
    char what[32];
    snprintf (what, sizeof what, "image %d", i);
    st = check_image (&images[i], what, error_text);
    if (st == GPUNET_OK && images[i].memory == GPUNET_MEMORY_CUDA
        && !s->backend->classify_device)
      st = gpunet_fail (error_text, GPUNET_ERR_UNSUPPORTED,
          "image %d is in CUDA device memory, but the session runs the %s backend, which "
          "reads host memory only: use the CUDA backend or copy the frames to host memory",
          i, s->backend->name);
  }
  return st;
}

gpunet_status
gpunet_session_classify_each (gpunet_session *s, const gpunet_image *images,
    const gpunet_preprocess_params *pres, int n, int k, gpunet_class_score *out,
    char **error_text)
{
  if (n < 1 || n > s->params.max_batch)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch of %d images, but the session was created for 1 to %d", n, s->params.max_batch);
  resolved_pre *rp = malloc (sizeof *rp * (size_t) n);
  if (!rp)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory classifying %d images", n);
  gpunet_status st = GPUNET_OK;
  int any_device = 0, any_host = 0;
  for (int i = 0; i < n && st == GPUNET_OK; i++) {
    st = check_params (s->model, &pres[i], &rp[i].mode, &rp[i].crop_pct, error_text);
    any_device |= images[i].memory == GPUNET_MEMORY_CUDA;
    any_host |= images[i].memory != GPUNET_MEMORY_CUDA;
  }
  /* all images of one memory kind: one slot call (or the CPU path) with every image's
   * plan; host and device images mixed: one of each */
  if (st == GPUNET_OK && !any_device)
    st = classify_host_images (s, images, rp, n, k, out, error_text);
  else if (st == GPUNET_OK && !any_host)
    st = classify_on_slot (s, s->backend->classify_device, images, rp, n, k, out, error_text);
  else if (st == GPUNET_OK)
    st = classify_memory_kind (s, GPUNET_MEMORY_CUDA, images, rp, n, k, out, error_text);
  if (st == GPUNET_OK && any_device && any_host)
    st = classify_memory_kind (s, GPUNET_MEMORY_HOST, images, rp, n, k, out, error_text);
  free (rp);
  return st;
}

gpunet_status
gpunet_preprocess_image (const gpunet_model *model, const gpunet_image *image,
    const gpunet_preprocess_params *pre, float *out_chw, char **error_text)
{
  if (!model || !out_chw)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_preprocess_image needs a model and an output buffer");
  gpunet_resize_mode mode;
  float crop_pct;
  gpunet_status st = check_image (image, "the image", error_text);
  if (st == GPUNET_OK && image->memory != GPUNET_MEMORY_HOST)
    st = gpunet_fail (error_text, GPUNET_ERR_UNSUPPORTED,
        "gpunet_preprocess_image reads host memory only; the image is in CUDA memory");
  if (st == GPUNET_OK)
    st = check_params (model, pre, &mode, &crop_pct, error_text);
  if (st != GPUNET_OK)
    return st;
  const int R = gpunet_model_resolution (model);
  gpunet_preprocess_plan plan;
  memset (&plan, 0, sizeof plan);
  st = gpunet_preprocess_plan_init (&plan, image->width, image->height, R, mode, crop_pct);
  if (st != GPUNET_OK)
    return gpunet_fail (error_text, st, "cannot plan the preprocess of a %dx%d frame to %dx%d%s",
        image->width, image->height, R, R, st == GPUNET_ERR_NO_MEMORY ? ": out of memory" : "");
  gpunet_cpu_preprocess (&plan, image, out_chw);
  gpunet_preprocess_plan_clear (&plan);
  return GPUNET_OK;
}

gpunet_status
gpunet_session_classify (gpunet_session *s, const gpunet_image *images, int n,
    const gpunet_preprocess_params *pre, int k, gpunet_class_score *out, char **error_text)
{
  if (!s || !images || !out)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_session_classify needs a session, images and an output array");
  if (n < 1 || n > s->params.max_batch)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch of %d images, but the session was created for 1 to %d", n, s->params.max_batch);
  gpunet_status st = gpunet_session_check_images (s, images, n, pre, k, error_text);
  if (st != GPUNET_OK)
    return st;
  gpunet_preprocess_params *pres = malloc (sizeof *pres * (size_t) n);
  if (!pres)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory classifying %d images", n);
  for (int i = 0; i < n; i++) {
    if (pre)
      pres[i] = *pre;
    else
      memset (&pres[i], 0, sizeof pres[i]);
  }
  st = gpunet_session_classify_each (s, images, pres, n, k, out, error_text);
  free (pres);
  return st;
}
