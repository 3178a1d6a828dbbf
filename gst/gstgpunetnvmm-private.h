/* gstgpunetnvmm-private.h: what gstgpunetnvdsmeta.c reads of a buffer's NVMM state
 * (gstgpunetnvmm.c owns it). */
#ifndef __GST_GPUNET_NVMM_PRIVATE_H__
#define __GST_GPUNET_NVMM_PRIVATE_H__

#include "gpunet-nvds-abi.h"
#include "gstgpunetframe.h"
#include "gstgpunetnvds.h"

typedef struct
{
  const GstGpunetNvds *nvds;
  gpointer batch;               /* NvDsBatchMeta, or NULL */
  gint gie_unique_id;
  guint n;                      /* regions, in f->rois order */
  GpunetNvDsFrameMeta *const *frames;
  GpunetNvDsObjectMeta *const *objs;    /* NULL entry: a whole frame */
  const guint *widths, *heights;
} NvmmFrameView;

/* Fills `v` from f->nvmm: `v`, or NULL when f is not an NVMM frame. */
const NvmmFrameView *gst_gpunet_nvmm_frame_view (const GstGpunetFrame * f,
    NvmmFrameView * v);

#endif
