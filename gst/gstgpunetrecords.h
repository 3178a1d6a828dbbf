/* gstgpunetrecords.h: what gpunetclassify makes of a frame's results, in stream order:
 * interval carry-over, smoothing and label tracks, and the records (the meta on the
 * buffer or its region metas, bus messages, JSON lines).  Its state belongs to the src
 * task: see gstgpunetrecords.c. */
#ifndef __GST_GPUNET_RECORDS_H__
#define __GST_GPUNET_RECORDS_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpunet.h"
#include "gstgpunetframe.h"
#include "gstgpunetmodel.h"

G_BEGIN_DECLS

#define GST_GPUNET_LABEL_CHANGED_MESSAGE "gpunetclassify-label-changed"
#define GST_GPUNET_MODEL_CHANGED_MESSAGE "gpunetclassify-model-changed"

typedef struct _GstGpunetRecords GstGpunetRecords;

/* `element` (borrowed: it owns the records) posts the messages. */
GstGpunetRecords *gst_gpunet_records_new (GstElement * element);
void gst_gpunet_records_free (GstGpunetRecords * rec);

/* READY->PAUSED: fresh tracks and caches; opens `json_path` (NULL or empty: off),
 * created or truncated.  FALSE, with the error posted, when it cannot be opened. */
gboolean gst_gpunet_records_start (GstGpunetRecords * rec,
    const gchar * json_path);

/* PAUSED->READY (the src task stopped): closes the JSON file, warning when its last
 * records may be lost, and drops every track. */
void gst_gpunet_records_stop (GstGpunetRecords * rec);

/* FLUSH_STOP (the src task paused): forgets the carried results and the tracks. */
void gst_gpunet_records_flush (GstGpunetRecords * rec);

/* STREAM_START, in stream order: the stream-id of label-changed messages. */
void gst_gpunet_records_set_stream_id (GstGpunetRecords * rec,
    const gchar * stream_id);

/* Src task: the records of `f`, whose results `scores` (n_images x ctx->k, best
 * first per image; smoothing rewrites them) are in, attached to f->buf and
 * posted/written as asked.  `smoothing` and `hold` are the properties now.  FALSE
 * when the JSON write failed: *error (g_free) is the sentence to post. */
gboolean gst_gpunet_records_finish (GstGpunetRecords * rec, GstGpunetFrame * f,
    gpunet_class_score * scores, gfloat smoothing, guint hold, gchar ** error);

G_END_DECLS

#endif /* __GST_GPUNET_RECORDS_H__ */
