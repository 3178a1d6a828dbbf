/* gstgpunetanalytics.h: gpunetclassify's GstAnalytics side (GStreamer 1.24+ with
 * gstreamer-analytics-1.0): the records as GstAnalyticsClsMtd in the buffer's
 * GstAnalyticsRelationMeta, related to their region's GstAnalyticsODMtd box, and
 * GstAnalyticsODMtd boxes read as regions.  Built everywhere: without the library
 * (GStreamer 1.22) every function here does nothing and available() is FALSE. */
#ifndef __GST_GPUNET_ANALYTICS_H__
#define __GST_GPUNET_ANALYTICS_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gstgpunetmeta.h"
#include "gstgpunetroi.h"

G_BEGIN_DECLS

/* TRUE when this build attaches GstAnalytics metadata (analytics-meta can be on). */
gboolean gst_gpunet_analytics_available (void);

/* Adds record `c` to the writable `buf` as a GstAnalyticsClsMtd holding its n
 * classes best first (labels as quarks, scores as levels), in the buffer's relation
 * meta (added when it has none).  With `roi` (a region's record), the box the ClsMtd
 * is related to (RELATE_TO, box -> class, as objectdetectionoverlay reads it) is
 * roi->od_id's ODMtd when the region came from one, else a new ODMtd made from
 * roi->meta's rectangle and type.  A record with no class left (threshold) adds
 * nothing.  FALSE when the meta could not be added. */
gboolean gst_gpunet_analytics_add (GstBuffer * buf,
    const GstGpunetClassification * c, const GstGpunetRoi * roi);

/* roi-mode regions: appends to `rois` every GstAnalyticsODMtd box of `buf` (pixels)
 * whose type is in flt->types and which gst_gpunet_roi_accept takes (clipped to the
 * frame; outside, degenerate and small boxes skipped and counted in flt).  A box
 * with the type and rectangle of a region meta already in `rois` (an upstream
 * gpunetclassify made it from that meta) is not a region of its own: that region's
 * od_id becomes the box's.  Each other box gets a GstVideoRegionOfInterestMeta on
 * `buf` (writable; id: the ODMtd's id, type: its object type, rectangle: the box
 * clipped to the frame) to carry our record, and its od_id; unique_id is left to
 * gst_gpunet_roi_mark_unique.  A box related (either way, any relation) to a
 * GstAnalyticsTrackingMtd gets tracked and that object's tracking id. */
void gst_gpunet_analytics_collect (GstBuffer * buf, GstGpunetRoiFilter * flt,
    GArray * rois);

G_END_DECLS

#endif /* __GST_GPUNET_ANALYTICS_H__ */
