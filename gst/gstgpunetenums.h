/* gstgpunetenums.h: the enum types of the gpunetclassify element's properties (backend,
 * precision, resize mode, roi mode), registered in gstgpunetenums.c. */
#ifndef __GST_GPUNET_ENUMS_H__
#define __GST_GPUNET_ENUMS_H__

#include <gst/gst.h>

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

G_END_DECLS

#endif
