/* gstgpunetanalytics.c: records as GstAnalytics metadata and ODMtd boxes as regions
 * (see gstgpunetanalytics.h).  Knows GstAnalyticsRelationMeta, ClsMtd and ODMtd;
 * compiled to stubs where the library is missing.  Called from the src task
 * (records) and the streaming thread (collect), each on a buffer it owns. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstgpunetanalytics.h"
#include "gstgpunetmodel.h"

#if defined (HAVE_GST_ANALYTICS) && GST_CHECK_VERSION (1, 24, 0)
#define GPUNET_ANALYTICS 1
#include <gst/analytics/analytics.h>
#endif

#ifdef GPUNET_ANALYTICS

gboolean
gst_gpunet_analytics_available (void)
{
  return TRUE;
}

static GstAnalyticsRelationMeta *
relation_meta (GstBuffer * buf)
{
  GstAnalyticsRelationMeta *rmeta = gst_buffer_get_analytics_relation_meta (buf);

  return rmeta ? rmeta : gst_buffer_add_analytics_relation_meta (buf);
}

gboolean
gst_gpunet_analytics_add (GstBuffer * buf, const GstGpunetClassification * c,
    const GstGpunetRoi * roi)
{
  GstAnalyticsRelationMeta *rmeta;
  GstAnalyticsClsMtd cls;
  GstAnalyticsODMtd od;
  gfloat levels[GST_GPUNET_MAX_TOP_K];
  GQuark quarks[GST_GPUNET_MAX_TOP_K];
  guint i, n = MIN (c->n, GST_GPUNET_MAX_TOP_K);

  if (n == 0)
    return TRUE;                /* nothing passed the threshold: no class to give */
  for (i = 0; i < n; i++) {
    levels[i] = (gfloat) c->scores[i];
    quarks[i] = g_quark_from_string (c->labels[i]);
  }
  if ((rmeta = relation_meta (buf)) == NULL)
    return FALSE;
  if (!gst_analytics_relation_meta_add_cls_mtd (rmeta, n, levels, quarks, &cls))
    return FALSE;
  if (roi == NULL)
    return TRUE;

  if (roi->od_id >= 0) {
    if (!gst_analytics_relation_meta_get_od_mtd (rmeta, (guint) roi->od_id, &od))
      return FALSE;
  } else {
    /* region metas carry no confidence: the box is as sure as its detector said
     * by putting it there */
    if (!gst_analytics_relation_meta_add_od_mtd (rmeta, roi->meta->roi_type,
            (gint) roi->meta->x, (gint) roi->meta->y, (gint) roi->meta->w,
            (gint) roi->meta->h, 1.0f, &od))
      return FALSE;
  }
  return gst_analytics_relation_meta_set_relation (rmeta,
      GST_ANALYTICS_REL_TYPE_RELATE_TO, gst_analytics_mtd_get_id (&od),
      gst_analytics_mtd_get_id (&cls));
}

/* The region of `rois` that came from a region meta of `type` with exactly this
 * rectangle and has no box yet, or NULL. */
static GstGpunetRoi *
same_region (GArray * rois, GQuark type, gint x, gint y, gint w, gint h)
{
  guint i;

  for (i = 0; i < rois->len; i++) {
    GstGpunetRoi *r = &g_array_index (rois, GstGpunetRoi, i);

    if (r->od_id < 0 && r->meta->roi_type == type && (gint64) r->meta->x == x
        && (gint64) r->meta->y == y && (gint64) r->meta->w == w
        && (gint64) r->meta->h == h)
      return r;
  }
  return NULL;
}

/* The tracker's object box `od_id` is related to (either direction, any relation
 * type): TRUE and its id in *track_id, or FALSE. */
static gboolean
box_track (GstAnalyticsRelationMeta * rmeta, guint od_id, guint64 * track_id)
{
  GstAnalyticsMtd trk;
  gpointer state = NULL;
  gboolean found;

  found = gst_analytics_relation_meta_get_direct_related (rmeta, od_id,
      GST_ANALYTICS_REL_TYPE_ANY, gst_analytics_tracking_mtd_get_mtd_type (),
      NULL, &trk);
  while (!found && gst_analytics_relation_meta_iterate (rmeta, &state,
          gst_analytics_tracking_mtd_get_mtd_type (), &trk))
    found = gst_analytics_relation_meta_get_relation (rmeta,
        gst_analytics_mtd_get_id (&trk), od_id) != GST_ANALYTICS_REL_TYPE_NONE;
  return found && gst_analytics_tracking_mtd_get_info (
      (GstAnalyticsTrackingMtd *) & trk, track_id, NULL, NULL, NULL);
}

/* One box to become a region: its ODMtd, type and rectangle as given. */
typedef struct
{
  GstGpunetRoi roi;
  GQuark type;
  gint x, y, w, h;
} Box;

void
gst_gpunet_analytics_collect (GstBuffer * buf, GstGpunetRoiFilter * flt,
    GArray * rois)
{
  GstAnalyticsRelationMeta *rmeta = gst_buffer_get_analytics_relation_meta (buf);
  GstAnalyticsMtd m;
  GArray *boxes;
  gpointer state = NULL;
  guint i;

  if (rmeta == NULL)
    return;
  /* first the boxes, then their region metas: nothing is added to the buffer
   * while its metas are iterated */
  boxes = g_array_new (FALSE, FALSE, sizeof (Box));
  while (gst_analytics_relation_meta_iterate (rmeta, &state,
          gst_analytics_od_mtd_get_mtd_type (), &m)) {
    GstAnalyticsODMtd *od = (GstAnalyticsODMtd *) & m;
    GstGpunetRoi *same;
    Box b;
    gfloat conf;

    memset (&b, 0, sizeof b);
    b.type = gst_analytics_od_mtd_get_obj_type (od);
    if (!gst_gpunet_roi_type_selected (flt->types, b.type)
        || !gst_analytics_od_mtd_get_location (od, &b.x, &b.y, &b.w, &b.h,
            &conf))
      continue;
    b.roi.od_id = (gint) gst_analytics_mtd_get_id (&m);
    if (!gst_gpunet_roi_accept (flt, "ODMtd box", b.roi.od_id, b.type, b.x,
            b.y, b.w, b.h, &b.roi))
      continue;
    b.roi.tracked = box_track (rmeta, (guint) b.roi.od_id, &b.roi.track_id);
    /* a region meta with the same box (an upstream gpunetclassify made the box
     * from it, or the detector gave both): one region, related to that box */
    if ((same = same_region (rois, b.type, b.x, b.y, b.w, b.h)) != NULL) {
      same->od_id = b.roi.od_id;
      same->tracked = b.roi.tracked;
      same->track_id = b.roi.track_id;
    } else {
      g_array_append_val (boxes, b);
    }
  }
  for (i = 0; i < boxes->len; i++) {
    Box *b = &g_array_index (boxes, Box, i);
    gint64 x0 = CLAMP ((gint64) b->x, 0, flt->frame_width);
    gint64 y0 = CLAMP ((gint64) b->y, 0, flt->frame_height);
    gint64 x1 = CLAMP ((gint64) b->x + b->w, 0, flt->frame_width);
    gint64 y1 = CLAMP ((gint64) b->y + b->h, 0, flt->frame_height);

    /* the region meta's rectangle: the box clipped to the frame (region metas
     * are unsigned), without the crop's even rounding */
    b->roi.meta = gst_buffer_add_video_region_of_interest_meta_id (buf,
        b->type, (guint) x0, (guint) y0, (guint) (x1 - x0), (guint) (y1 - y0));
    b->roi.meta->id = b->roi.od_id;
    g_array_append_val (rois, b->roi);
  }
  g_array_unref (boxes);
}

#else /* no GstAnalytics */

gboolean
gst_gpunet_analytics_available (void)
{
  return FALSE;
}

gboolean
gst_gpunet_analytics_add (GstBuffer * buf, const GstGpunetClassification * c,
    const GstGpunetRoi * roi)
{
  (void) buf;
  (void) c;
  (void) roi;
  return TRUE;
}

void
gst_gpunet_analytics_collect (GstBuffer * buf, GstGpunetRoiFilter * flt,
    GArray * rois)
{
  (void) buf;
  (void) flt;
  (void) rois;
}

#endif
