/* classify.c: the image side of the engine API: checks gpunet_image and preprocess
 * arguments, runs the fused preprocess (kernels/cpu/preprocess.c) into the session's input
 * buffer, one forward pass for the batch and softmax/top-k per image; device images go
 * to the backend's classify_device slot with the session's cached preprocess plan, and
 * host images to its classify_host slot when it has one (the CUDA backend: upload, then
 * the device preprocess) and the batch is of one size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model_private.h"
#include "session_private.h"
#include "../kernels/cpu/preprocess.h"

#define MAX_FRAME_SIDE 32768

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
  if (img->width < 1 || img->height < 1 || img->width > MAX_FRAME_SIDE
      || img->height > MAX_FRAME_SIDE)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "%s is %dx%d; width and height must be 1 to %d", what, img->width, img->height,
        MAX_FRAME_SIDE);
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

/* Rebuilds `plan` when the frame's geometry differs from the one it was built for. */
static gpunet_status
ensure_plan (gpunet_preprocess_plan *plan, const gpunet_image *img, int R,
    gpunet_resize_mode mode, float crop_pct, char **error_text)
{
  if (!gpunet_preprocess_plan_matches (plan, img->width, img->height, R, mode, crop_pct)) {
    gpunet_preprocess_plan_clear (plan);
    gpunet_status st = gpunet_preprocess_plan_init (plan, img->width, img->height, R, mode,
        crop_pct);
    if (st != GPUNET_OK)
      return gpunet_fail (error_text, st, "cannot plan the preprocess of a %dx%d frame to %dx%d%s",
          img->width, img->height, R, R, st == GPUNET_ERR_NO_MEMORY ? ": out of memory" : "");
  }
  return GPUNET_OK;
}

/* Preprocesses host image `img` into `out` with `plan` (rebuilt when needed). */
static gpunet_status
run_preprocess (gpunet_preprocess_plan *plan, const gpunet_image *img, int R,
    gpunet_resize_mode mode, float crop_pct, float *out, char **error_text)
{
  gpunet_status st = ensure_plan (plan, img, R, mode, crop_pct, error_text);
  if (st == GPUNET_OK)
    gpunet_cpu_preprocess (plan, img, out);
  return st;
}

/* A batch of device images: the backend's classify_device slot does all of it. */
static gpunet_status
classify_device (gpunet_session *s, const gpunet_image *images, int n, int R,
    gpunet_resize_mode mode, float crop_pct, int k, gpunet_class_score *out, char **error_text)
{
  if (!s->backend->classify_device)
    return gpunet_fail (error_text, GPUNET_ERR_UNSUPPORTED,
        "the images are in CUDA device memory, but the session runs the %s backend, which "
        "reads host memory only: use the CUDA backend or copy the frames to host memory",
        s->backend->name);
  for (int i = 1; i < n; i++)
    if (images[i].memory != GPUNET_MEMORY_CUDA || images[i].width != images[0].width
        || images[i].height != images[0].height)
      return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
          "image %d (%dx%d, %s memory) differs from image 0 (%dx%d, CUDA memory): a batch of "
          "device images must be all in CUDA memory and of one size", i, images[i].width,
          images[i].height, images[i].memory == GPUNET_MEMORY_CUDA ? "CUDA" : "host",
          images[0].width, images[0].height);
  gpunet_status st = ensure_plan (&s->pre_plan, &images[0], R, mode, crop_pct, error_text);
  if (st != GPUNET_OK)
    return st;
  return s->backend->classify_device (s->state, images, n, &s->pre_plan, k, out, error_text);
}

/* A batch of host images on a backend with classify_host: the backend uploads the frames
 * and preprocesses them itself.  Only for batches of one size (the caller checks). */
static gpunet_status
classify_host (gpunet_session *s, const gpunet_image *images, int n, int R,
    gpunet_resize_mode mode, float crop_pct, int k, gpunet_class_score *out, char **error_text)
{
  gpunet_status st = ensure_plan (&s->pre_plan, &images[0], R, mode, crop_pct, error_text);
  if (st != GPUNET_OK)
    return st;
  return s->backend->classify_host (s->state, images, n, &s->pre_plan, k, out, error_text);
}

/* Non-zero when the backend takes this batch through classify_host: all images in host
 * memory and of image 0's size (every pixel format is read by the device preprocess). */
static int
use_classify_host (const gpunet_session *s, const gpunet_image *images, int n)
{
  if (!s->backend->classify_host)
    return 0;
  for (int i = 0; i < n; i++)
    if (images[i].memory != GPUNET_MEMORY_HOST || images[i].width != images[0].width
        || images[i].height != images[0].height)
      return 0;
  return 1;
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
  gpunet_preprocess_plan plan;
  memset (&plan, 0, sizeof plan);
  st = run_preprocess (&plan, image, gpunet_model_resolution (model), mode, crop_pct, out_chw,
      error_text);
  gpunet_preprocess_plan_clear (&plan);
  return st;
}

gpunet_status
gpunet_session_classify (gpunet_session *s, const gpunet_image *images, int n,
    const gpunet_preprocess_params *pre, int k, gpunet_class_score *out, char **error_text)
{
  if (!s || !images || !out)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_session_classify needs a session, images and an output array");
  const int classes = gpunet_model_num_classes (s->model);
  const int R = gpunet_model_resolution (s->model);
  if (n < 1 || n > s->params.max_batch)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch of %d images, but the session was created for 1 to %d", n, s->params.max_batch);
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
  }
  if (st != GPUNET_OK)
    return st;
  if (images[0].memory == GPUNET_MEMORY_CUDA)
    return classify_device (s, images, n, R, mode, crop_pct, k, out, error_text);
  if (use_classify_host (s, images, n))
    return classify_host (s, images, n, R, mode, crop_pct, k, out, error_text);

  /* the session keeps its plan: rebuilt only when the frame size or mode changes */
  const size_t per_image = (size_t) 3 * R * R;
  for (int i = 0; i < n && st == GPUNET_OK; i++)
    st = images[i].memory != GPUNET_MEMORY_HOST ? gpunet_fail (error_text,
        GPUNET_ERR_INVALID_ARGUMENT, "image %d is in CUDA memory but image 0 in host memory: "
        "a batch must be all host or all device images", i)
        : run_preprocess (&s->pre_plan, &images[i], R, mode, crop_pct, s->input + i * per_image,
        error_text);
  if (st != GPUNET_OK)
    return st;

  st = gpunet_session_forward (s, s->input, n, s->logits, error_text);
  if (st != GPUNET_OK)
    return st;
  for (int i = 0; i < n; i++)
    gpunet_topk_softmax (s->logits + (size_t) i * classes, classes, k, out + (size_t) i * k);
  return GPUNET_OK;
}
