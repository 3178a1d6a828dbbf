/* gstgpunetmodel.c: the model context and its hot swap (see gstgpunetmodel.h).
 * Owns the model in use, the one loaded beside it and the loader thread, all under
 * GstGpunetModelSwap's lock; threads: streaming (take), property setters (begin), the
 * loader, and start/stop.  A context itself is immutable and reference counted. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "gstgpunetmodel.h"

/* The precision property's nick. */
static const gchar *
precision_nick (gint precision)
{
  switch (precision) {
    case GPUNET_PRECISION_FP32: return "fp32";
    case GPUNET_PRECISION_FP16: return "fp16";
    case GPUNET_PRECISION_BF16: return "bf16";
    case GPUNET_PRECISION_INT8: return "int8";
    default: return "auto";
  }
}

GST_DEBUG_CATEGORY_STATIC (gst_gpunet_model_debug);
#define GST_CAT_DEFAULT gst_gpunet_model_debug

struct _GstGpunetModelSwap
{
  GstElement *element;          /* borrowed: the element owns the swap */
  GstGpunetModelArgsFunc args_func;

  GMutex lock;
  GstGpunetModelCtx *ctx;       /* the model new frames use */
  GstGpunetModelCtx *pending;   /* loaded, taken at the next frame */
  GThread *loader;
  guint serial;                 /* model/checkpoint sets while started */
  gboolean started;             /* between set (start) and stop: loads may begin */
};

void
gst_gpunet_post_engine_error (GstElement * element, gpunet_status status,
    const gchar * text, const gchar * context)
{
  const gchar *sentence = text ? text : gpunet_status_string (status);

  switch (status) {
    case GPUNET_ERR_IO:
      GST_ELEMENT_ERROR (element, RESOURCE, OPEN_READ, ("%s", sentence),
          ("%s: %s", context, gpunet_status_string (status)));
      break;
    case GPUNET_ERR_NO_MEMORY:
      GST_ELEMENT_ERROR (element, RESOURCE, NO_SPACE_LEFT, ("%s", sentence),
          ("%s: %s", context, gpunet_status_string (status)));
      break;
    case GPUNET_ERR_BACKEND_UNAVAILABLE:
    case GPUNET_ERR_BACKEND:
      GST_ELEMENT_ERROR (element, LIBRARY, INIT, ("%s", sentence),
          ("%s: %s", context, gpunet_status_string (status)));
      break;
    default:
      GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS, ("%s", sentence),
          ("%s: %s", context, gpunet_status_string (status)));
      break;
  }
}

/* ---- contexts -------------------------------------------------------------------- */

GstGpunetModelCtx *
gst_gpunet_model_ctx_ref (GstGpunetModelCtx * c)
{
  g_atomic_int_inc (&c->refs);
  return c;
}

void
gst_gpunet_model_ctx_unref (GstGpunetModelCtx * c)
{
  if (c == NULL || !g_atomic_int_dec_and_test (&c->refs))
    return;
  gst_gpunet_pool_release (c->shared);
  g_free (c->name);
  g_strfreev (c->labels);
  g_free (c);
}

void
gst_gpunet_model_args_clear (GstGpunetModelArgs * a)
{
  g_free (a->model);
  g_free (a->checkpoint);
  g_free (a->labels);
  g_free (a->int8_scales);
  if (a->req.cuda_context != NULL)
    gst_object_unref (a->req.cuda_context);
  memset (a, 0, sizeof *a);
}

/* The labels of a `n`-class model from `path` (gpunet_labels_load) or the defaults; NULL
 * and *error when the file is not a readable regular file of bounded size or has the
 * wrong count.  Each label is made valid UTF-8 (Latin-1 files: U+FFFD for a bad byte). */
static gchar **
load_labels (const gchar * path, gint n, const gchar * model, gchar ** error)
{
  gchar **labels = g_new0 (gchar *, n + 1);
  char **parsed = NULL, *text = NULL;
  gpunet_status st_parse;
  gint i;

  if (path == NULL || *path == '\0') {
    for (i = 0; i < n; i++) {
      const char *l = n == 1000 ? gpunet_imagenet_label (i) : NULL;
      labels[i] = l ? g_strdup (l) : g_strdup_printf ("class-%d", i);
    }
    return labels;
  }
  /* the engine's reader: a regular file of bounded size, checked before reading */
  st_parse = gpunet_labels_load (path, n, &parsed, &text);
  if (st_parse != GPUNET_OK) {
    const gchar *why = text ? text : gpunet_status_string (st_parse);

    /* the engine's sentence whole (most already say what to give), then the
     * advice where it does not */
    *error = g_strdup_printf ("Cannot use the labels of model '%s': %s%s", model, why,
        strstr (why, "one label per line") ? "" : "; set labels to a text file with "
        "one label per line");
    free (text);
    g_strfreev (labels);
    return NULL;
  }
  /* valid UTF-8, each bad byte U+FFFD: a GstStructure drops a string field that is
   * not (the record's label, label-changed's new-label), and JSON lines need it */
  for (i = 0; i < n; i++)
    labels[i] = g_utf8_make_valid (parsed[i], -1);
  gpunet_labels_free (parsed);
  return labels;
}

/* Gets the engine for `a` from the pool and the labels.  NULL on failure with the
 * sentence in *error, the status in *status (or RESOURCE/SETTINGS for labels) and
 * whether it is a labels error in *labels_error. */
static GstGpunetModelCtx *
model_ctx_new (GstElement * element, GstGpunetModelArgs * a,
    gpunet_status * status, gchar ** error, gboolean * labels_error)
{
  gchar *note = NULL;
  GstGpunetShared *sh;
  GstGpunetModelCtx *c;

  *labels_error = FALSE;
  if (a->checkpoint == NULL || *a->checkpoint == '\0') {
    *status = GPUNET_ERR_INVALID_ARGUMENT;
    *error = g_strdup_printf ("No checkpoint is set: set the 'checkpoint' "
        "property to the GPUNet weights file for model '%s' (e.g. "
        "gpunetclassify checkpoint=/path/to/0.65ms.pth.tar)", a->model);
    return NULL;
  }
  sh = gst_gpunet_pool_acquire (&a->req, status, error, &note);
  if (sh == NULL) {
    if (*status == GPUNET_ERR_BACKEND_UNAVAILABLE && a->req.backend ==
        GPUNET_BACKEND_CUDA && (*error == NULL || **error == '\0'
            || g_strcmp0 (*error, gpunet_status_string (*status)) == 0)) {
      g_free (*error);
      *error = g_strdup ("backend=cuda was requested, but the CUDA backend is "
          "not built in or no usable GPU is present; use backend=cpu or auto");
    }
    return NULL;
  }
  if (note != NULL) {
    GST_ELEMENT_WARNING (element, RESOURCE, SETTINGS, ("%s", note), ("%s",
            note));
    g_free (note);
  }
  c = g_new0 (GstGpunetModelCtx, 1);
  c->refs = 1;
  c->shared = sh;
  c->name = g_strdup (gpunet_model_name (sh->model));
  c->precision = precision_nick (a->req.precision);
  c->num_classes = gpunet_model_num_classes (sh->model);
  c->k = MIN (c->num_classes, GST_GPUNET_MAX_TOP_K);
  c->labels = load_labels (a->labels, c->num_classes, c->name, error);
  if (c->labels == NULL) {
    *labels_error = TRUE;
    *status = GPUNET_ERR_INVALID_ARGUMENT;
    gst_gpunet_model_ctx_unref (c);
    return NULL;
  }
  return c;
}

static void
init_debug (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_gpunet_model_debug, "gpunetmodel", 0,
        "gpunetclassify model loading and hot swap");
    g_once_init_leave (&once, 1);
  }
}

GstGpunetModelCtx *
gst_gpunet_model_ctx_open (GstElement * element, GstGpunetModelArgs * a)
{
  gpunet_status st;
  gchar *error = NULL;
  gboolean labels_error;
  GstGpunetModelCtx *c;
  const gchar *backend;

  init_debug ();
  /* a scales file only int8 reads: refused, never ignored (one who forgot
   * precision=int8 would measure fp32 believing it int8) */
  if (a->int8_scales != NULL && *a->int8_scales != '\0'
      && a->req.precision != GPUNET_PRECISION_INT8) {
    GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS, ("int8-scales is set, but "
            "precision is %s: the scales file is read only with precision=int8; "
            "set precision=int8 to run int8, or clear int8-scales",
            precision_nick (a->req.precision)), ("int8-scales without "
            "precision=int8"));
    return NULL;
  }
  c = model_ctx_new (element, a, &st, &error, &labels_error);
  if (c == NULL) {
    if (labels_error)
      GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS, ("%s", error),
          ("labels property"));
    else if (a->checkpoint == NULL || *a->checkpoint == '\0')
      GST_ELEMENT_ERROR (element, RESOURCE, SETTINGS, ("%s", error),
          ("the checkpoint property is required"));
    else {
      gchar *context = g_strdup_printf ("loading model '%s' with checkpoint "
          "'%s'", a->model, a->checkpoint);

      gst_gpunet_post_engine_error (element, st, error, context);
      g_free (context);
    }
    g_free (error);
    return NULL;
  }

  backend = gpunet_engine_backend_name (c->shared->engine);
  /* the records' precision: what the engine runs, not what was asked for, so that no
   * record of a reduced precision reads as an exact one: auto is fp16 on CUDA (every GPU
   * the build supports has tensor cores) and fp32 on the CPU backends */
  if (a->req.precision == GPUNET_PRECISION_AUTO)
    c->precision = g_strcmp0 (backend, "cuda") == 0 ? "fp16" : "fp32";
  if (a->req.backend == GPUNET_BACKEND_AUTO && g_strcmp0 (backend, "cuda") != 0) {
    /* gst-launch prints an INFO message's debug string: the sentence goes in both */
    GST_ELEMENT_INFO (element, RESOURCE, SETTINGS,
        ("backend=auto: CUDA is not available, using the %s backend", backend),
        ("backend=auto: CUDA is not available, using the %s backend", backend));
  }
  GST_INFO_OBJECT (element, "model %s (%d classes, weights from %s) on the %s "
      "backend, engine %u", c->name, c->num_classes,
      gpunet_model_weights_source (c->shared->model), backend, c->shared->id);
  return c;
}

/* ---- the swap ------------------------------------------------------------------ */

GstGpunetModelSwap *
gst_gpunet_model_swap_new (GstElement * element,
    GstGpunetModelArgsFunc args_func)
{
  GstGpunetModelSwap *sw = g_new0 (GstGpunetModelSwap, 1);

  init_debug ();
  sw->element = element;
  sw->args_func = args_func;
  g_mutex_init (&sw->lock);
  return sw;
}

void
gst_gpunet_model_swap_free (GstGpunetModelSwap * sw)
{
  if (sw->loader != NULL)
    g_thread_unref (sw->loader);
  gst_gpunet_model_ctx_unref (sw->pending);
  gst_gpunet_model_ctx_unref (sw->ctx);
  g_mutex_clear (&sw->lock);
  g_free (sw);
}

/* The loader thread: loads, then leaves the new model for the streaming thread to
 * take at the next frame, or warns and keeps the old one.  It holds a reference to
 * the element (and so to the swap) until its last line. */
static gpointer
swap_thread (gpointer data)
{
  GstGpunetModelSwap *sw = data;
  GstElement *element = sw->element;
  GstGpunetModelArgs a;
  gpunet_status st;
  gchar *error = NULL;
  gboolean labels_error;
  GstGpunetModelCtx *c, *old = NULL;
  guint serial;

  /* model and checkpoint are usually set together (g_object_set): let both
   * arrive before reading them */
  g_usleep (20000);
  g_mutex_lock (&sw->lock);
  serial = sw->serial;
  g_mutex_unlock (&sw->lock);
  memset (&a, 0, sizeof a);
  sw->args_func (element, &a);
  c = model_ctx_new (element, &a, &st, &error, &labels_error);
  if (a.req.cuda_context != NULL)
    gst_clear_object (&a.req.cuda_context);
  g_mutex_lock (&sw->lock);
  if (serial != sw->serial) {
    /* superseded: the load that follows decides */
    g_mutex_unlock (&sw->lock);
    GST_DEBUG_OBJECT (element, "model swap superseded by a newer one");
    gst_gpunet_model_ctx_unref (c);
    c = NULL;
  } else if (c != NULL) {
    old = sw->pending;
    sw->pending = c;
    g_mutex_unlock (&sw->lock);
    GST_INFO_OBJECT (element, "model %s loaded (engine %u); switching at the "
        "next frame", c->name, c->shared->id);
  } else {
    g_mutex_unlock (&sw->lock);
    GST_ELEMENT_WARNING (element, RESOURCE, SETTINGS,
        ("Cannot switch to model '%s' with checkpoint '%s': %s. The current "
            "model keeps running", a.model, a.checkpoint ? a.checkpoint :
            "(none)", error), ("model swap while playing: %s",
            gpunet_status_string (st)));
  }
  gst_gpunet_model_ctx_unref (old);
  g_free (error);
  gst_gpunet_model_args_clear (&a);
  gst_object_unref (element);
  return NULL;
}

void
gst_gpunet_model_swap_invalidate (GstGpunetModelSwap * sw)
{
  g_mutex_lock (&sw->lock);
  sw->serial++;
  g_mutex_unlock (&sw->lock);
}

void
gst_gpunet_model_swap_begin (GstGpunetModelSwap * sw)
{
  GThread *prev;

  g_mutex_lock (&sw->lock);
  sw->serial++;
  prev = sw->loader;
  sw->loader = NULL;
  g_mutex_unlock (&sw->lock);
  /* one load at a time, in the order they were asked for */
  if (prev != NULL)
    g_thread_join (prev);
  g_mutex_lock (&sw->lock);
  /* a set while playing whose notification comes after a stop: no stream would take
   * the model, which would hold its engine until the next start */
  if (sw->started) {
    gst_object_ref (sw->element);
    sw->loader = g_thread_new ("gpunet-swap", swap_thread, sw);
  }
  g_mutex_unlock (&sw->lock);
}

void
gst_gpunet_model_swap_set (GstGpunetModelSwap * sw, GstGpunetModelCtx * c)
{
  GstGpunetModelCtx *stale;

  g_mutex_lock (&sw->lock);
  sw->ctx = c;
  sw->started = TRUE;
  stale = g_steal_pointer (&sw->pending);
  g_mutex_unlock (&sw->lock);
  gst_gpunet_model_ctx_unref (stale);
}

GstGpunetModelCtx *
gst_gpunet_model_swap_take (GstGpunetModelSwap * sw, gchar ** old_name)
{
  GstGpunetModelCtx *swapped = NULL, *c;

  *old_name = NULL;
  g_mutex_lock (&sw->lock);
  if (sw->pending != NULL) {
    swapped = sw->ctx;
    sw->ctx = g_steal_pointer (&sw->pending);
    *old_name = g_strdup (swapped ? swapped->name : "");
  }
  c = gst_gpunet_model_ctx_ref (sw->ctx);
  g_mutex_unlock (&sw->lock);
  gst_gpunet_model_ctx_unref (swapped);
  return c;
}

GstGpunetModelCtx *
gst_gpunet_model_swap_ref_current (GstGpunetModelSwap * sw)
{
  GstGpunetModelCtx *c;

  g_mutex_lock (&sw->lock);
  c = sw->ctx ? gst_gpunet_model_ctx_ref (sw->ctx) : NULL;
  g_mutex_unlock (&sw->lock);
  return c;
}

guint
gst_gpunet_model_swap_engine_id (GstGpunetModelSwap * sw)
{
  guint id;

  g_mutex_lock (&sw->lock);
  id = sw->ctx ? sw->ctx->shared->id : 0;
  g_mutex_unlock (&sw->lock);
  return id;
}

void
gst_gpunet_model_swap_stop (GstGpunetModelSwap * sw)
{
  GstGpunetModelCtx *c, *p;
  GThread *t;

  g_mutex_lock (&sw->lock);
  sw->started = FALSE;
  t = sw->loader;
  sw->loader = NULL;
  g_mutex_unlock (&sw->lock);
  if (t != NULL)
    g_thread_join (t);
  g_mutex_lock (&sw->lock);
  c = g_steal_pointer (&sw->ctx);
  p = g_steal_pointer (&sw->pending);
  g_mutex_unlock (&sw->lock);
  gst_gpunet_model_ctx_unref (c);
  gst_gpunet_model_ctx_unref (p);
}
