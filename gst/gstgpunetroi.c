/* gstgpunetroi.c: region selection, crop geometry and the per-roi-id carry cache of
 * gpunetclassify's roi-mode (see gstgpunetroi.h).  Knows GstVideoRegionOfInterestMeta
 * and gpunet_image; classifying and attaching results is the element's work. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstgpunetroi.h"

GST_DEBUG_CATEGORY_STATIC (gst_gpunet_roi_debug);
#define GST_CAT_DEFAULT gst_gpunet_roi_debug

GArray *
gst_gpunet_roi_types_parse (const gchar * list)
{
  GArray *types;
  gchar **names;
  guint i;

  if (list == NULL)
    return NULL;
  types = g_array_new (FALSE, FALSE, sizeof (GQuark));
  names = g_strsplit (list, ",", -1);
  for (i = 0; names[i] != NULL; i++) {
    const gchar *name = g_strstrip (names[i]);
    GQuark q;

    if (*name == '\0')
      continue;
    q = g_quark_from_string (name);
    g_array_append_val (types, q);
  }
  g_strfreev (names);
  if (types->len == 0) {
    g_array_unref (types);
    return NULL;
  }
  return types;
}

gboolean
gst_gpunet_roi_type_selected (const GArray * types, GQuark type)
{
  guint i;

  if (types == NULL)
    return TRUE;
  for (i = 0; i < types->len; i++)
    if (g_array_index (types, GQuark, i) == type)
      return TRUE;
  return FALSE;
}

gboolean
gst_gpunet_roi_clip (gint64 x, gint64 y, gint64 w, gint64 h,
    gint frame_width, gint frame_height, gboolean even_origin,
    GstGpunetRoi * roi)
{
  gint64 x0 = CLAMP (x, 0, (gint64) frame_width);
  gint64 y0 = CLAMP (y, 0, (gint64) frame_height);
  gint64 x1 = CLAMP (x + w, 0, (gint64) frame_width);
  gint64 y1 = CLAMP (y + h, 0, (gint64) frame_height);

  if (x1 <= x0 || y1 <= y0)
    return FALSE;
  /* 4:2:0 chroma covers 2x2 pixels: an even origin keeps the crop's chroma
   * samples those of the frame */
  if (even_origin) {
    x0 &= ~(gint64) 1;
    y0 &= ~(gint64) 1;
  }
  roi->x = (gint) x0;
  roi->y = (gint) y0;
  roi->width = (gint) (x1 - x0);
  roi->height = (gint) (y1 - y0);
  return TRUE;
}

gboolean
gst_gpunet_roi_accept (GstGpunetRoiFilter * flt, const gchar * what, gint id,
    GQuark type, gint64 x, gint64 y, gint64 w, gint64 h, GstGpunetRoi * roi)
{
  static gsize once = 0;
  gint64 cw, ch;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_gpunet_roi_debug, "gpunetroi", 0,
        "gpunetclassify regions: boxes taken, clipped and skipped");
    g_once_init_leave (&once, 1);
  }
  if (w <= 0 || h <= 0 || !gst_gpunet_roi_clip (x, y, w, h, flt->frame_width,
          flt->frame_height, FALSE, roi)) {
    flt->outside++;
    GST_WARNING_OBJECT (flt->log_object, "frame %" G_GUINT64_FORMAT " (pts %"
        GST_TIME_FORMAT ", offset %" G_GINT64_FORMAT "): %s %d of type '%s' at "
        "x=%" G_GINT64_FORMAT " y=%" G_GINT64_FORMAT " %" G_GINT64_FORMAT "x%"
        G_GINT64_FORMAT " is %s the %dx%d frame: skipped", flt->frame_no,
        GST_TIME_ARGS (flt->pts), (gint64) flt->offset, what, id,
        GST_STR_NULL (g_quark_to_string (type)), x, y, w, h,
        w <= 0 || h <= 0 ? "empty, not a box in" : "wholly outside",
        flt->frame_width, flt->frame_height);
    return FALSE;
  }
  cw = roi->width;
  ch = roi->height;
  if (cw < (gint64) flt->min_size || ch < (gint64) flt->min_size) {
    flt->small++;
    GST_LOG_OBJECT (flt->log_object, "frame %" G_GUINT64_FORMAT ": %s %d is "
        "%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " in the frame, under "
        "roi-min-size %u: skipped", flt->frame_no, what, id, cw, ch,
        flt->min_size);
    return FALSE;
  }
  if (flt->max_size > 0 && (cw > (gint64) flt->max_size
          || ch > (gint64) flt->max_size)) {
    flt->large++;
    GST_LOG_OBJECT (flt->log_object, "frame %" G_GUINT64_FORMAT ": %s %d is "
        "%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " in the frame, over "
        "roi-max-size %u: skipped", flt->frame_no, what, id, cw, ch,
        flt->max_size);
    return FALSE;
  }
  if (cw != w || ch != h)
    GST_DEBUG_OBJECT (flt->log_object, "frame %" G_GUINT64_FORMAT ": %s %d "
        "at x=%" G_GINT64_FORMAT " y=%" G_GINT64_FORMAT " %" G_GINT64_FORMAT "x%"
        G_GINT64_FORMAT " clipped to the frame: %" G_GINT64_FORMAT "x%"
        G_GINT64_FORMAT, flt->frame_no, what, id, x, y, w, h, cw, ch);
  if (flt->even_origin)
    gst_gpunet_roi_clip (x, y, w, h, flt->frame_width, flt->frame_height, TRUE,
        roi);
  return TRUE;
}

void
gst_gpunet_roi_collect (GstBuffer * buf, GstGpunetRoiFilter * flt,
    GArray * rois)
{
  gpointer state = NULL;
  GstMeta *meta;

  while ((meta = gst_buffer_iterate_meta_filtered (buf, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) != NULL) {
    GstVideoRegionOfInterestMeta *rmeta = (GstVideoRegionOfInterestMeta *) meta;
    GstGpunetRoi roi;

    if (!gst_gpunet_roi_type_selected (flt->types, rmeta->roi_type))
      continue;
    memset (&roi, 0, sizeof roi);
    roi.meta = rmeta;
    roi.od_id = -1;
    if (gst_gpunet_roi_accept (flt, "region meta", rmeta->id,
            rmeta->roi_type, rmeta->x, rmeta->y, rmeta->w, rmeta->h, &roi))
      g_array_append_val (rois, roi);
  }
}

void
gst_gpunet_roi_mark_unique (GArray * rois)
{
  guint i, j;

  for (i = 0; i < rois->len; i++)
    g_array_index (rois, GstGpunetRoi, i).unique_id = TRUE;
  /* few regions per frame: quadratic is fine */
  for (i = 0; i < rois->len; i++) {
    GstGpunetRoi *a = &g_array_index (rois, GstGpunetRoi, i);

    for (j = i + 1; j < rois->len; j++) {
      GstGpunetRoi *b = &g_array_index (rois, GstGpunetRoi, j);

      if (a->meta->id == b->meta->id)
        a->unique_id = b->unique_id = FALSE;
    }
  }
}

void
gst_gpunet_roi_crop_image (const gpunet_image * frame, gint x, gint y,
    gint width, gint height, gpunet_image * crop)
{
  gsize y0 = (gsize) y, x0 = (gsize) x;

  *crop = *frame;
  crop->width = width;
  crop->height = height;
  switch (frame->format) {
    case GPUNET_FORMAT_NV12:
      crop->planes[0] = frame->planes[0] + y0 * frame->strides[0] + x0;
      /* interleaved U, V: two bytes per chroma sample */
      crop->planes[1] = frame->planes[1] + (y0 / 2) * frame->strides[1] + x0;
      break;
    case GPUNET_FORMAT_I420:
      crop->planes[0] = frame->planes[0] + y0 * frame->strides[0] + x0;
      crop->planes[1] = frame->planes[1] + (y0 / 2) * frame->strides[1]
          + x0 / 2;
      crop->planes[2] = frame->planes[2] + (y0 / 2) * frame->strides[2]
          + x0 / 2;
      break;
    case GPUNET_FORMAT_RGB:
    case GPUNET_FORMAT_BGR:
      crop->planes[0] = frame->planes[0] + y0 * frame->strides[0] + 3 * x0;
      break;
    default:                   /* 4 bytes per pixel */
      crop->planes[0] = frame->planes[0] + y0 * frame->strides[0] + 4 * x0;
      break;
  }
}

/* ---- carry cache ---- */

typedef struct
{
  GQuark type;
  guint n;
  gpunet_class_score scores[];
} CacheEntry;

struct _GstGpunetRoiCache
{
  GHashTable *entries;          /* GINT_TO_POINTER (roi id) -> CacheEntry */
};

GstGpunetRoiCache *
gst_gpunet_roi_cache_new (void)
{
  GstGpunetRoiCache *cache = g_new0 (GstGpunetRoiCache, 1);

  cache->entries = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
      g_free);
  return cache;
}

void
gst_gpunet_roi_cache_free (GstGpunetRoiCache * cache)
{
  if (cache == NULL)
    return;
  g_hash_table_unref (cache->entries);
  g_free (cache);
}

void
gst_gpunet_roi_cache_clear (GstGpunetRoiCache * cache)
{
  g_hash_table_remove_all (cache->entries);
}

const gpunet_class_score *
gst_gpunet_roi_cache_lookup (GstGpunetRoiCache * cache, gint id, GQuark type,
    guint * n)
{
  CacheEntry *e = g_hash_table_lookup (cache->entries, GINT_TO_POINTER (id));

  if (e == NULL || e->type != type) {
    *n = 0;
    return NULL;
  }
  *n = e->n;
  return e->scores;
}

void
gst_gpunet_roi_cache_store (GstGpunetRoiCache * cache, gint id, GQuark type,
    const gpunet_class_score * scores, guint n)
{
  CacheEntry *e = g_malloc (sizeof (CacheEntry) +
      sizeof (gpunet_class_score) * n);

  e->type = type;
  e->n = n;
  memcpy (e->scores, scores, sizeof (gpunet_class_score) * n);
  g_hash_table_replace (cache->entries, GINT_TO_POINTER (id), e);
}
