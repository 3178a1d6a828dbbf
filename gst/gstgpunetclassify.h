/* gstgpunetclassify.h: the gpunetclassify element (a GstElement that hands frames
 * to a shared, batching engine and pushes them when their results are in): its type;
 * the enum types of its properties are in gstgpunetenums.h. */
#ifndef __GST_GPUNET_CLASSIFY_H__
#define __GST_GPUNET_CLASSIFY_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gstgpunetenums.h"

G_BEGIN_DECLS


#define GST_TYPE_GPUNET_CLASSIFY (gst_gpunet_classify_get_type ())
G_DECLARE_FINAL_TYPE (GstGpunetClassify, gst_gpunet_classify,
    GST, GPUNET_CLASSIFY, GstElement)

/* The element's instance is in gstgpunetinstance.h, for the element and its
 * property table (gstgpunetprops.c) only. */

GST_ELEMENT_REGISTER_DECLARE (gpunetclassify);

/* Registers the element with the plugin; called from plugin_init. */
gboolean gst_gpunet_classify_register (GstPlugin * plugin);

G_END_DECLS

#endif /* __GST_GPUNET_CLASSIFY_H__ */
