/* gstgpunetbatch.h: the frame queue behind gpunetclassify's batch-size property.
 * Buffers are queued in arrival order, each marked as needing inference or as a
 * carried frame (interval); once batch-size frames wait, the ones needing inference
 * are classified in one call of a caller-given function and the whole run becomes
 * ready to leave, still in order.  Used by the streaming thread only. */
#ifndef __GST_GPUNET_BATCH_H__
#define __GST_GPUNET_BATCH_H__

#include <gst/gst.h>

#include "gpunet.h"

G_BEGIN_DECLS

typedef struct _GstGpunetBatch GstGpunetBatch;

/* Classifies `n` buffers (n <= max) and writes k results per buffer to `out`
 * (buffer i at out[i * k]); anything but GST_FLOW_OK fails the batch. */
typedef GstFlowReturn (*GstGpunetBatchClassifyFunc) (gpointer user,
    GstBuffer ** bufs, guint n, guint k, gpunet_class_score * out);

GstGpunetBatch *gst_gpunet_batch_new (guint max, guint k,
    GstGpunetBatchClassifyFunc func, gpointer user);
/* Drops (unrefs) every queued buffer and frees the queue. */
void gst_gpunet_batch_free (GstGpunetBatch * batch);

/* Queues `buf` (takes the reference); classifies the waiting frames when
 * there are `max` of them. */
GstFlowReturn gst_gpunet_batch_add (GstGpunetBatch * batch, GstBuffer * buf,
    gboolean infer);

/* Classifies whatever waits, however few (EOS, caps change, other events). */
GstFlowReturn gst_gpunet_batch_drain (GstGpunetBatch * batch);

/* The oldest buffer whose result is ready, or NULL.  `inferred` says whether it
 * was classified; its k results are then copied to `scores`. */
GstBuffer *gst_gpunet_batch_pop (GstGpunetBatch * batch, gboolean * inferred,
    gpunet_class_score * scores);

/* Drops (unrefs) every queued buffer, classified or not (flushing). */
void gst_gpunet_batch_clear (GstGpunetBatch * batch);

G_END_DECLS

#endif /* __GST_GPUNET_BATCH_H__ */
