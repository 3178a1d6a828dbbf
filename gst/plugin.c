/* plugin.c: the "gpunet" plugin entry point; registers gpunetclassify and the
 * GstGpunetClassificationMeta custom meta. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <gst/gst.h>

#include "gstgpunetclassify.h"
#include "gstgpunetmeta.h"

#ifndef GPUNET_ORIGIN
#define GPUNET_ORIGIN "unknown"
#endif

#ifndef GPUNET_VERSION
#define GPUNET_VERSION "0.1.0"
#endif

static gboolean
plugin_init (GstPlugin * plugin)
{
  gst_gpunet_classification_meta_get_info ();
  return gst_gpunet_classify_register (plugin);
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, gpunet,
    "GPUNet image classification (NVIDIA GPUNet models, CPU and CUDA backends)",
    plugin_init, GPUNET_VERSION, "Apache 2.0", "gst-gpunet",
    GPUNET_ORIGIN)
