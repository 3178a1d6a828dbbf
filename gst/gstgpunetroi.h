/* gstgpunetroi.h: the regions side of gpunetclassify (roi-mode): which
 * GstVideoRegionOfInterestMeta of a buffer are classified (roi-types), the crop each
 * one becomes (clipped to the frame, even origin for 4:2:0 formats, a gpunet_image
 * pointing into the mapped frame) and the results carried between frames by roi-id
 * (interval).  Used by the streaming thread only, apart from the roi-types list. */
#ifndef __GST_GPUNET_ROI_H__
#define __GST_GPUNET_ROI_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpunet.h"
#include "gstgpunettrack.h"

G_BEGIN_DECLS

/* One region to classify, in the order of the buffer's metas. */
typedef struct
{
  GstVideoRegionOfInterestMeta *meta;   /* owned by the buffer */
  gint x, y, width, height;     /* the crop, inside the frame, never empty */
  gboolean unique_id;           /* no other selected region has meta->id */
  gboolean inferred;            /* FALSE: carried from an earlier frame */
  gint od_id;                   /* the GstAnalyticsODMtd it came from (id in the
                                 * buffer's relation meta), -1: a region meta */
  gboolean tracked;             /* its box is related to a tracker's object */
  guint32 track_source;         /* ... of this source (0: GstAnalytics, one
                                 * stream per element) */
  guint64 track_id;             /* ... with this object id */
  GstGpunetTrack *track;        /* tracked (or an NVMM object or surface): its
                                 * cache entry (a reference, the
                                 * frame's until it is freed), else NULL */
} GstGpunetRoi;

/* What selects the regions of one frame, and what was skipped.  Boxes are clipped to
 * the frame; a box wholly outside it, or empty or degenerate (a side under one pixel)
 * once clipped, is skipped with a GST_WARNING naming the frame and the box; a box
 * whose clipped width or height is under min_size, or over a max_size that is not 0, is
 * skipped and counted. */
typedef struct
{
  const GArray *types;          /* roi-types (GQuark), NULL: all */
  gint frame_width, frame_height;
  gboolean even_origin;         /* 4:2:0: crops start on even coordinates */
  guint min_size;               /* roi-min-size, pixels, 0: none */
  guint max_size;               /* roi-max-size, pixels, 0: none */
  /* the warnings' frame */
  GstObject *log_object;
  guint64 frame_no;
  GstClockTime pts;
  guint64 offset;
  /* counted by gst_gpunet_roi_accept */
  guint outside;                /* wholly outside or empty once clipped */
  guint small;                  /* under min_size */
  guint large;                  /* over max_size */
} GstGpunetRoiFilter;

/* Whether the box `x, y, w x h` of type `type` (`id`: its id for the warning, `what`:
 * "region meta" or "ODMtd box") is classified under `flt`: TRUE with roi's crop set;
 * FALSE, counted in flt and warned about when it is outside or degenerate. */
gboolean gst_gpunet_roi_accept (GstGpunetRoiFilter * flt, const gchar * what,
    gint id, GQuark type, gint64 x, gint64 y, gint64 w, gint64 h,
    GstGpunetRoi * roi);

/* Parses roi-types ("face, person"): the quarks of the non-empty names, or NULL
 * when there are none (every type is taken).  Returns a new GArray of GQuark. */
GArray *gst_gpunet_roi_types_parse (const gchar * list);

/* Appends to `rois` (a GArray of GstGpunetRoi) every region meta of `buf` whose
 * type is in flt->types and which gst_gpunet_roi_accept takes (clipped to the
 * frame; the crop's origin rounded down to even coordinates for NV12, I420,
 * keeping its far edges).  Sets each entry's meta, crop and od_id (-1); unique_id
 * is set by gst_gpunet_roi_mark_unique once every region is in.  The skipped ones
 * are counted in flt. */
void gst_gpunet_roi_collect (GstBuffer * buf, GstGpunetRoiFilter * flt,
    GArray * rois);

/* Sets unique_id of every entry of `rois`: whether no other entry has its meta's
 * id. */
void gst_gpunet_roi_mark_unique (GArray * rois);

/* TRUE when `type` is in `types` (NULL: every type is). */
gboolean gst_gpunet_roi_type_selected (const GArray * types, GQuark type);

/* Sets roi's crop to the rectangle x, y, w x h (may reach outside the frame)
 * clipped to the `frame_width` x `frame_height` frame, origin rounded down to even
 * coordinates with `even_origin`; FALSE when nothing of it is inside. */
gboolean gst_gpunet_roi_clip (gint64 x, gint64 y, gint64 w, gint64 h,
    gint frame_width, gint frame_height, gboolean even_origin,
    GstGpunetRoi * roi);

/* Points `crop` at the rectangle x, y, width x height of the mapped `frame`:
 * plane pointers advanced, same strides, format, colour and memory kind (so a
 * crop of a CUDA frame is a device image).  x and y must be even for 4:2:0. */
void gst_gpunet_roi_crop_image (const gpunet_image * frame, gint x, gint y,
    gint width, gint height, gpunet_image * crop);

/* Results kept per roi-id for the frames `interval` carries over. */
typedef struct _GstGpunetRoiCache GstGpunetRoiCache;

/* An empty cache.  Each region keeps as many results as were stored for it:
 * the engine's k for the model that classified it, min (classes, top-k cap),
 * which may be fewer than the element's top-k cap. */
GstGpunetRoiCache *gst_gpunet_roi_cache_new (void);
void gst_gpunet_roi_cache_free (GstGpunetRoiCache * cache);
void gst_gpunet_roi_cache_clear (GstGpunetRoiCache * cache);

/* The results stored for region `id` of type `type` and their count in *n, or
 * NULL and *n = 0 (none, or stored for another type).  Valid until the next
 * store or clear. */
const gpunet_class_score *gst_gpunet_roi_cache_lookup (GstGpunetRoiCache *
    cache, gint id, GQuark type, guint * n);

/* Stores (copies) the `n` results `scores` of region `id`, replacing earlier
 * ones. */
void gst_gpunet_roi_cache_store (GstGpunetRoiCache * cache, gint id,
    GQuark type, const gpunet_class_score * scores, guint n);

G_END_DECLS

#endif /* __GST_GPUNET_ROI_H__ */
