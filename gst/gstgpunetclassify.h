/* gstgpunetclassify.h: the gpunetclassify element (a GstElement that hands frames
 * to a shared, batching engine and pushes them when their results are in): its type
 * and the backend / precision / resize-mode / roi-mode enum types of its properties
 * (registered in gstgpunetenums.c). */
#ifndef __GST_GPUNET_CLASSIFY_H__
#define __GST_GPUNET_CLASSIFY_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpunet.h"

G_BEGIN_DECLS

typedef enum
{
  GST_GPUNET_BACKEND_AUTO = GPUNET_BACKEND_AUTO,
  GST_GPUNET_BACKEND_CPU = GPUNET_BACKEND_CPU,
  GST_GPUNET_BACKEND_CUDA = GPUNET_BACKEND_CUDA,
  GST_GPUNET_BACKEND_CPU_REF = GPUNET_BACKEND_CPU_REF
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
/* the precision property's values are gpunet_precision's */
#define GST_TYPE_GPUNET_PRECISION (gst_gpunet_precision_get_type ())
/* gstgpunetenums.c */
GType gst_gpunet_backend_get_type (void);
GType gst_gpunet_precision_get_type (void);
GType gst_gpunet_resize_mode_get_type (void);
GType gst_gpunet_roi_mode_get_type (void);

#define GST_TYPE_GPUNET_CLASSIFY (gst_gpunet_classify_get_type ())
G_DECLARE_FINAL_TYPE (GstGpunetClassify, gst_gpunet_classify,
    GST, GPUNET_CLASSIFY, GstElement)

/* The element's instance is private to gstgpunetclassify.c. */

GST_ELEMENT_REGISTER_DECLARE (gpunetclassify);

/* Registers the element with the plugin; called from plugin_init. */
gboolean gst_gpunet_classify_register (GstPlugin * plugin);

G_END_DECLS

#endif /* __GST_GPUNET_CLASSIFY_H__ */
