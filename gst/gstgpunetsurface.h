/* gstgpunetsurface.h: one entry of an NvBufSurface's surfaceList, as the gpunet_image
 * the engine reads: the pure part of the NVMM input (gstgpunetnvmm.c), so that it can
 * be fuzzed without GStreamer or DeepStream. */
#ifndef __GST_GPUNET_SURFACE_H__
#define __GST_GPUNET_SURFACE_H__

#include <glib.h>

#include "gpunet-nvds-abi.h"
#include "gpunet-types.h"

G_BEGIN_DECLS

/* Entry `p` (surface `i` of the batch, for the sentences) as an image: format, size,
 * planes in place at dataPtr + offset and their strides; *full_range from its colour
 * format.  With `egl` (a Jetson surface array) dataPtr may be NULL and the planes are
 * left NULL for the EGL mapping.  Each plane of rows x row bytes lies inside dataSize
 * bytes from dataPtr.  The caller sets matrix, full_range and memory.  FALSE and the
 * sentence naming the field and its value in *error when the entry cannot be read. */
gboolean gst_gpunet_surface_image (const GpunetNvBufSurfaceParams * p, guint i,
    gboolean egl, gpunet_image * img, gboolean * full_range, gchar ** error);

G_END_DECLS

#endif
