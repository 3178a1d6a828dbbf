/* gstgpunetclassify.h: the gpunetclassify element (GstBaseTransform, in place):
 * its instance struct and the backend / resize-mode / roi-mode enum types of its
 * properties. */
#ifndef __GST_GPUNET_CLASSIFY_H__
#define __GST_GPUNET_CLASSIFY_H__

#include <stdio.h>

#include <gst/gst.h>
#include <gst/base/gstbasetransform.h>
#include <gst/video/video.h>

#include "gpunet.h"
#include "gstgpunetbatch.h"
#include "gstgpunetroi.h"

G_BEGIN_DECLS

typedef enum
{
  GST_GPUNET_BACKEND_AUTO = GPUNET_BACKEND_AUTO,
  GST_GPUNET_BACKEND_CPU = GPUNET_BACKEND_CPU,
  GST_GPUNET_BACKEND_CUDA = GPUNET_BACKEND_CUDA
} GstGpunetBackend;

typedef enum
{
  GST_GPUNET_RESIZE_CENTER_CROP = GPUNET_RESIZE_CENTER_CROP,
  GST_GPUNET_RESIZE_STRETCH = GPUNET_RESIZE_STRETCH,
  GST_GPUNET_RESIZE_LETTERBOX = GPUNET_RESIZE_LETTERBOX
} GstGpunetResizeMode;

/* What is classified: the whole frame, each region meta, or both. */
typedef enum
{
  GST_GPUNET_ROI_MODE_FRAME = 0,
  GST_GPUNET_ROI_MODE_REGIONS,
  GST_GPUNET_ROI_MODE_BOTH
} GstGpunetRoiMode;

#define GST_TYPE_GPUNET_BACKEND (gst_gpunet_backend_get_type ())
#define GST_TYPE_GPUNET_RESIZE_MODE (gst_gpunet_resize_mode_get_type ())
#define GST_TYPE_GPUNET_ROI_MODE (gst_gpunet_roi_mode_get_type ())
GType gst_gpunet_backend_get_type (void);
GType gst_gpunet_resize_mode_get_type (void);
GType gst_gpunet_roi_mode_get_type (void);

#define GST_TYPE_GPUNET_CLASSIFY (gst_gpunet_classify_get_type ())
G_DECLARE_FINAL_TYPE (GstGpunetClassify, gst_gpunet_classify,
    GST, GPUNET_CLASSIFY, GstBaseTransform)

struct _GstGpunetClassify
{
  GstBaseTransform parent;

  /* properties, under the object lock */
  gchar *model_name;
  gchar *checkpoint;
  gchar *labels_path;
  guint top_k;
  gfloat threshold;
  GstGpunetBackend backend;
  GstGpunetResizeMode resize_mode;
  gfloat crop_pct;
  guint interval;
  gboolean post_messages;
  guint n_threads;
  guint batch_size;
  GstGpunetRoiMode roi_mode;
  gchar *roi_types;
  GArray *roi_type_quarks;      /* parsed roi_types (GQuark), NULL = all */
  gchar *json_output;

  /* set in start(), freed in stop(); used by the streaming thread only */
  gpunet_model *model;
  gpunet_session *session;
  gchar *model_display_name;
  gint num_classes;
  gchar **labels;               /* num_classes entries, never NULL entries */
  gpunet_preprocess_params pre;
  GstGpunetBatch *batch;        /* batch-size > 1, frames classified; else NULL */
  guint max_batch;              /* the session's: images per engine call */
  GstGpunetRoiMode mode;        /* roi-mode as started */
  GstGpunetRoiCache *roi_cache; /* roi-mode regions/both: carried results */
  GArray *rois;                 /* GstGpunetRoi, scratch of one buffer */
  FILE *json_file;              /* json-output, NULL when off */
  gchar *json_path;
  GString *json_lines;          /* the records of one buffer, before writing */

  /* set in set_caps(), streaming thread */
  GstVideoInfo info;
  gpunet_image image_template;  /* format, size, matrix, range; no planes */

  /* per-stream state (streaming thread) */
  guint64 frame_count;
  guint carried;                /* frames that reused `last` since it was made */
  gboolean have_last;            /* with a batch: an inferred frame was queued */
  gboolean batch_inferred;      /* the buffer leaving the batch was classified */
  guint last_n;
  gpunet_class_score last[100];
};

GST_ELEMENT_REGISTER_DECLARE (gpunetclassify);

/* Registers the element with the plugin; called from plugin_init. */
gboolean gst_gpunet_classify_register (GstPlugin * plugin);

G_END_DECLS

#endif /* __GST_GPUNET_CLASSIFY_H__ */
