/* gstgpunetmodel.h: the model an element classifies with (a shared engine from
 * gstgpunetpool.c and its labels, reference counted) and the hot swap that loads a new
 * one beside it while playing.  The swap's state is under its own lock; it is shared by
 * the streaming thread, property setters, the loader thread and the src task. */
#ifndef __GST_GPUNET_MODEL_H__
#define __GST_GPUNET_MODEL_H__

#include <gst/gst.h>

#include "gpunet.h"
#include "gstgpunetpool.h"

G_BEGIN_DECLS

/* The most results an image keeps, and the top-k property's maximum. */
#define GST_GPUNET_MAX_TOP_K 100

/* A loaded model as frames use it.  Reference counted: queued frames keep the one
 * they were classified with across a swap.  Immutable once made. */
typedef struct
{
  gint refs;
  GstGpunetShared *shared;
  gchar *name;                  /* the records' `model` */
  const gchar *precision;       /* the records' `precision` (the property's nick) */
  gint num_classes;
  guint k;                      /* results per image: min (classes, MAX_TOP_K) */
  gchar **labels;               /* num_classes entries, never NULL entries */
} GstGpunetModelCtx;

GstGpunetModelCtx *gst_gpunet_model_ctx_ref (GstGpunetModelCtx * c);
/* NULL is ignored; the last reference releases the engine to the pool. */
void gst_gpunet_model_ctx_unref (GstGpunetModelCtx * c);

/* What loading a model needs, copied from the element's properties. */
typedef struct
{
  gchar *model, *checkpoint, *labels, *int8_scales;
  GstGpunetEngineRequest req;   /* req.model, req.checkpoint, req.int8_scales: the
                                 * strings above;
                                 * req.cuda_context: a reference or NULL */
} GstGpunetModelArgs;

/* Frees the strings and drops the CUDA context reference. */
void gst_gpunet_model_args_clear (GstGpunetModelArgs * a);

/* Fills `a` with the element's properties as they are now (the loader thread calls
 * it, so it takes the element's object lock itself). */
typedef void (*GstGpunetModelArgsFunc) (GstElement * element,
    GstGpunetModelArgs * a);

/* READY->PAUSED: loads the model of `a` and its labels.  NULL on failure, with the
 * error posted on `element`'s bus (no lock held). */
GstGpunetModelCtx *gst_gpunet_model_ctx_open (GstElement * element,
    GstGpunetModelArgs * a);

/* An engine failure as an element error on `element`: the engine's sentence `text`
 * (or the status's) is the message; `context` and the status go to the debug
 * string.  Call with no lock held. */
void gst_gpunet_post_engine_error (GstElement * element, gpunet_status status,
    const gchar * text, const gchar * context);

/* The model new frames use and the one loading beside it. */
typedef struct _GstGpunetModelSwap GstGpunetModelSwap;

/* `element` (borrowed: it owns the swap) posts the swap's warnings; `args_func`
 * reads its properties for each swap. */
GstGpunetModelSwap *gst_gpunet_model_swap_new (GstElement * element,
    GstGpunetModelArgsFunc args_func);
/* From finalize: never joins the loader (it may be the thread running this). */
void gst_gpunet_model_swap_free (GstGpunetModelSwap * sw);

/* Start: `c` (taken) becomes the model in use; a swap that finished after the last
 * stop belongs to no stream and is dropped. */
void gst_gpunet_model_swap_set (GstGpunetModelSwap * sw, GstGpunetModelCtx * c);

/* Marks every load started so far as superseded (its result is dropped): called
 * before model or checkpoint changes, so a load never pairs the new value of one with
 * the old value of the other.  Any thread. */
void gst_gpunet_model_swap_invalidate (GstGpunetModelSwap * sw);

/* model or checkpoint set while started: loads the properties on a loader thread
 * beside the running model (one load at a time, the latest one wins); a failed load
 * posts a warning and keeps the old model.  Nothing once stopped (a notification
 * that arrives after the stop). */
void gst_gpunet_model_swap_begin (GstGpunetModelSwap * sw);

/* Streaming thread, at a frame boundary: a new reference to the model this frame
 * uses.  When a loaded model was waiting it becomes the one in use first, and
 * *old_name (g_free) names the one before; else *old_name is NULL. */
GstGpunetModelCtx *gst_gpunet_model_swap_take (GstGpunetModelSwap * sw,
    gchar ** old_name);

/* A new reference to the model in use, or NULL when stopped. */
GstGpunetModelCtx *gst_gpunet_model_swap_ref_current (GstGpunetModelSwap * sw);

/* The engine-id property: the serial number of the engine in use, 0 when none. */
guint gst_gpunet_model_swap_engine_id (GstGpunetModelSwap * sw);

/* PAUSED->READY: waits for a load under way and drops both models. */
void gst_gpunet_model_swap_stop (GstGpunetModelSwap * sw);

G_END_DECLS

#endif /* __GST_GPUNET_MODEL_H__ */
