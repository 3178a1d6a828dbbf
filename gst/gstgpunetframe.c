/* gstgpunetframe.c: frames and the plan of what is classified (see
 * gstgpunetframe.h).  Owns the image template, the interval cycle and the roi-ids
 * classified in it.  Lock: the sink pad's stream lock; only the streaming thread
 * (chain, sink events) and start/stop, while no buffer flows, touch it. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstgpunetanalytics.h"
#include "gstgpunetframe.h"
#include "gstgpunetroi.h"

GST_DEBUG_CATEGORY_STATIC (gst_gpunet_frame_debug);
#define GST_CAT_DEFAULT gst_gpunet_frame_debug

struct _GstGpunetPlanner
{
  GstElement *element;          /* borrowed: the element owns the planner */
  gboolean frames, regions;     /* roi-mode as started */
  gpunet_image image_template;  /* format, size and colour; no planes */
  gboolean have_last;           /* interval: a frame was classified in this cycle */
  guint carried;
  GHashTable *cycle_rois;       /* interval: roi ids classified in this cycle */
  GstGpunetRegionPolicy policy; /* for the next frame */
  GstGpunetTrackCache *tracks;  /* tracked boxes: when each object is classified */
  gint skipped_small, skipped_large, skipped_outside;  /* since start (atomic: read by any
                                         * thread) */
};

void
gst_gpunet_frame_unmap (GstGpunetFrame * f)
{
  if (f->mapped) {
    gst_video_frame_unmap (&f->vframe);
    f->mapped = FALSE;
  }
  gst_gpunet_cuda_ready_free (f->cuda_ready);
  f->cuda_ready = NULL;
  if (f->nvmm != NULL)
    f->nvmm_unmap (f->nvmm);
}

void
gst_gpunet_frame_free (GstGpunetFrame * f)
{
  gst_gpunet_frame_unmap (f);
  /* its map first: the buffer may hold the last reference to the memory */
  if (f->nvmm != NULL)
    f->nvmm_free (f->nvmm);
  if (f->buf)
    gst_buffer_unref (f->buf);
  if (f->rois) {
    guint i;

    for (i = 0; i < f->rois->len; i++)
      gst_gpunet_track_unref (g_array_index (f->rois, GstGpunetRoi, i).track);
    g_array_unref (f->rois);
  }
  g_free (f->roi_image);
  g_free (f->old_model);
  gst_gpunet_model_ctx_unref (f->ctx);
  g_free (f);
}

void
gst_gpunet_frames_cancel (gpointer * frames, guint n, gpointer tag)
{
  GPtrArray *engines = g_ptr_array_new ();
  guint i;

  for (i = 0; i < n; i++) {
    gpunet_engine *e = ((GstGpunetFrame *) frames[i])->ctx->shared->engine;

    if (!g_ptr_array_find (engines, e, NULL)) {
      g_ptr_array_add (engines, e);
      gpunet_engine_cancel (e, tag);
    }
  }
  g_ptr_array_free (engines, TRUE);
}

GstGpunetPlanner *
gst_gpunet_planner_new (GstElement * element)
{
  static gsize once = 0;
  GstGpunetPlanner *p;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_gpunet_frame_debug, "gpunetframe", 0,
        "gpunetclassify frames: what is classified, images and crops");
    g_once_init_leave (&once, 1);
  }
  p = g_new0 (GstGpunetPlanner, 1);
  p->element = element;
  return p;
}

void
gst_gpunet_planner_stop (GstGpunetPlanner * p)
{
  g_clear_pointer (&p->cycle_rois, g_hash_table_unref);
  g_clear_pointer (&p->tracks, gst_gpunet_track_cache_free);
}

void
gst_gpunet_planner_free (GstGpunetPlanner * p)
{
  gst_gpunet_planner_stop (p);
  g_free (p);
}

void
gst_gpunet_planner_start (GstGpunetPlanner * p, gboolean frames,
    gboolean regions)
{
  p->frames = frames;
  p->regions = regions;
  p->cycle_rois = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
      NULL);
  p->tracks = gst_gpunet_track_cache_new ();
  p->have_last = FALSE;
  p->carried = 0;
  g_atomic_int_set (&p->skipped_small, 0);
  g_atomic_int_set (&p->skipped_large, 0);
  g_atomic_int_set (&p->skipped_outside, 0);
}

void
gst_gpunet_planner_set_region_policy (GstGpunetPlanner * p,
    const GstGpunetRegionPolicy * policy)
{
  p->policy = *policy;
}

void
gst_gpunet_planner_skipped (GstGpunetPlanner * p, guint * small,
    guint * large, guint * outside)
{
  *small = (guint) g_atomic_int_get (&p->skipped_small);
  *large = (guint) g_atomic_int_get (&p->skipped_large);
  *outside = (guint) g_atomic_int_get (&p->skipped_outside);
}

void
gst_gpunet_planner_flush (GstGpunetPlanner * p)
{
  p->have_last = FALSE;
  p->carried = 0;
  if (p->cycle_rois)
    g_hash_table_remove_all (p->cycle_rois);
  if (p->tracks)
    gst_gpunet_track_cache_clear (p->tracks);
}

gboolean
gst_gpunet_planner_set_info (GstGpunetPlanner * p, const GstVideoInfo * info)
{
  static const struct
  {
    GstVideoFormat video;
    gpunet_pixel_format format;
  } formats[] = {
    {GST_VIDEO_FORMAT_NV12, GPUNET_FORMAT_NV12},
    {GST_VIDEO_FORMAT_I420, GPUNET_FORMAT_I420},
    {GST_VIDEO_FORMAT_RGBA, GPUNET_FORMAT_RGBA},
    {GST_VIDEO_FORMAT_BGRA, GPUNET_FORMAT_BGRA},
    {GST_VIDEO_FORMAT_RGBx, GPUNET_FORMAT_RGBX},
    {GST_VIDEO_FORMAT_BGRx, GPUNET_FORMAT_BGRX},
    {GST_VIDEO_FORMAT_RGB, GPUNET_FORMAT_RGB},
    {GST_VIDEO_FORMAT_BGR, GPUNET_FORMAT_BGR},
  };
  gpunet_image *img = &p->image_template;
  GstVideoColorMatrix matrix = info->colorimetry.matrix;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (formats); i++)
    if (formats[i].video == GST_VIDEO_INFO_FORMAT (info))
      break;
  if (i == G_N_ELEMENTS (formats))
    return FALSE;
  memset (img, 0, sizeof *img);
  img->format = formats[i].format;
  img->width = GST_VIDEO_INFO_WIDTH (info);
  img->height = GST_VIDEO_INFO_HEIGHT (info);
  /* BT.2020 and others have no engine matrix: BT.709 is the closer one */
  img->matrix = matrix == GST_VIDEO_COLOR_MATRIX_BT601
      || matrix == GST_VIDEO_COLOR_MATRIX_FCC
      || matrix == GST_VIDEO_COLOR_MATRIX_SMPTE240M ?
      GPUNET_MATRIX_BT601 : GPUNET_MATRIX_BT709;
  if (GST_VIDEO_INFO_IS_YUV (info) && matrix != GST_VIDEO_COLOR_MATRIX_BT601
      && matrix != GST_VIDEO_COLOR_MATRIX_BT709)
    GST_INFO_OBJECT (p->element, "colour matrix %d treated as BT.709", matrix);
  img->full_range = info->colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255;

  /* a new stream shape: the next frame is classified again */
  p->have_last = FALSE;
  p->carried = 0;
  GST_DEBUG_OBJECT (p->element, "%s %dx%d, matrix %s, %s range",
      GST_VIDEO_INFO_NAME (info), img->width, img->height,
      img->matrix == GPUNET_MATRIX_BT709 ? "BT.709" : "BT.601",
      img->full_range ? "full" : "limited");
  return TRUE;
}

static gint64
roi_key (gint id, GQuark type)
{
  return ((gint64) type << 32) | (guint32) id;
}

/* Regions: collects the buffer's region metas and numbers the images of those
 * classified now, after the frame's own: a box of a tracked object when the track
 * cache says so (reclassify-interval), any other when its roi-id is new or shared,
 * or at a cycle start (interval).  The others are carried, by their object or
 * roi-id, at push time. */
static void
plan_regions (GstGpunetPlanner * p, GstGpunetFrame * f, const GArray * types,
    guint interval)
{
  GstGpunetRoiFilter flt;
  guint i, dropped;

  memset (&flt, 0, sizeof flt);
  flt.types = types;
  flt.frame_width = p->image_template.width;
  flt.frame_height = p->image_template.height;
  flt.even_origin = p->image_template.format == GPUNET_FORMAT_NV12
      || p->image_template.format == GPUNET_FORMAT_I420;
  flt.min_size = p->policy.min_size;
  flt.max_size = p->policy.max_size;
  flt.log_object = GST_OBJECT (p->element);
  flt.frame_no = f->rs.frame_no;
  flt.pts = GST_BUFFER_PTS (f->buf);
  flt.offset = GST_BUFFER_OFFSET (f->buf);

  if (f->cycle_start)
    g_hash_table_remove_all (p->cycle_rois);
  /* a new model: every tracked object is classified again */
  if (f->old_model != NULL)
    gst_gpunet_track_cache_clear (p->tracks);
  dropped = gst_gpunet_track_cache_begin_frame (p->tracks, &p->policy.track);
  if (dropped > 0)
    GST_LOG_OBJECT (p->element, "frame %" G_GUINT64_FORMAT ": %u tracked "
        "objects unseen for more than %u frames forgotten", f->rs.frame_no,
        dropped, p->policy.track.track_timeout);
  f->rois = g_array_new (FALSE, FALSE, sizeof (GstGpunetRoi));
  gst_gpunet_roi_collect (f->buf, &flt, f->rois);
  /* GstAnalytics (1.24+): the detector's ODMtd boxes are regions too */
  gst_gpunet_analytics_collect (f->buf, &flt, f->rois);
  gst_gpunet_roi_mark_unique (f->rois);
  if (flt.small > 0 || flt.large > 0 || flt.outside > 0) {
    gint small = g_atomic_int_add (&p->skipped_small, (gint) flt.small);
    gint large = g_atomic_int_add (&p->skipped_large, (gint) flt.large);
    gint outside = g_atomic_int_add (&p->skipped_outside, (gint) flt.outside);

    GST_DEBUG_OBJECT (p->element, "frame %" G_GUINT64_FORMAT ": %u regions "
        "under roi-min-size %u, %u over roi-max-size %u and %u outside the "
        "frame skipped (%u, %u and %u since start)", f->rs.frame_no, flt.small,
        p->policy.min_size, flt.large, p->policy.max_size, flt.outside,
        small + flt.small, large + flt.large, outside + flt.outside);
  }
  f->roi_image = g_new (gint, MAX (f->rois->len, 1));
  for (i = 0; i < f->rois->len; i++) {
    GstGpunetRoi *r = &g_array_index (f->rois, GstGpunetRoi, i);
    gint64 key = roi_key (r->meta->id, r->meta->roi_type);

    if (r->tracked) {
      if (gst_gpunet_track_cache_decide (p->tracks, r->track_source,
              r->track_id, (guint64) r->width * (guint64) r->height,
              &r->track))
        f->roi_image[i] = f->n_images++;
      else
        f->roi_image[i] = -1;
    } else if (!f->cycle_start && r->unique_id && interval > 0
        && g_hash_table_contains (p->cycle_rois, &key)) {
      f->roi_image[i] = -1;
    } else {
      f->roi_image[i] = f->n_images++;
      if (interval > 0 && r->unique_id)
        g_hash_table_add (p->cycle_rois, g_memdup2 (&key, sizeof key));
    }
  }
}

void
gst_gpunet_planner_retry (GstGpunetPlanner * p, GstGpunetFrame * f)
{
  guint i;

  p->have_last = FALSE;
  p->carried = 0;
  for (i = 0; f->rois != NULL && i < f->rois->len; i++) {
    GstGpunetRoi *r = &g_array_index (f->rois, GstGpunetRoi, i);

    if (r->tracked && f->roi_image[i] >= 0 && r->track != NULL)
      gst_gpunet_track_cache_undo (p->tracks, r->track);
  }
}

void
gst_gpunet_planner_plan (GstGpunetPlanner * p, GstGpunetFrame * f,
    const GArray * types, guint interval)
{
  gboolean infer_frame;

  if (f->old_model != NULL) {
    p->have_last = FALSE;
    p->carried = 0;
  }
  /* interval: classify one frame, carry its results to the next `interval` */
  infer_frame = !(p->have_last && p->carried < interval);
  if (infer_frame) {
    p->have_last = TRUE;
    p->carried = 0;
  } else {
    p->carried++;
  }
  f->cycle_start = infer_frame;
  f->frame_record = p->frames;
  f->frame_inferred = f->frame_record && infer_frame;
  f->n_images = f->frame_inferred ? 1 : 0;
  if (p->regions)
    plan_regions (p, f, types, interval);
}

/* NULL when every plane the preprocess reads lies inside the memory mapped for it, else
 * the sentence saying which does not: a GstVideoMeta's offsets and strides come from
 * upstream and are not checked against the memory by gst_video_frame_map. */
static gchar *
check_geometry (const GstVideoFrame * vf)
{
  const GstVideoFormatInfo *fi = vf->info.finfo;
  guint p, c;

  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (vf); p++) {
    /* the memory plane p was mapped from: its own map with a video meta, else the
     * whole buffer's (map[0]) */
    const GstMapInfo *m = vf->map[p].data ? &vf->map[p] : &vf->map[0];
    const guint8 *base = m->data, *data = GST_VIDEO_FRAME_PLANE_DATA (vf, p);
    const gint stride = GST_VIDEO_FRAME_PLANE_STRIDE (vf, p);
    gsize row = 0, rows = 0, need;

    for (c = 0; c < GST_VIDEO_FORMAT_INFO_N_COMPONENTS (fi); c++)
      if (GST_VIDEO_FORMAT_INFO_PLANE (fi, c) == p) {
        gsize w = (gsize) GST_VIDEO_FRAME_COMP_WIDTH (vf, c)
            * (gsize) ABS (GST_VIDEO_FRAME_COMP_PSTRIDE (vf, c));
        row = MAX (row, w);
        rows = MAX (rows, (gsize) GST_VIDEO_FRAME_COMP_HEIGHT (vf, c));
      }
    if (rows == 0)
      continue;
    if (stride <= 0 || (gsize) stride < row)
      return g_strdup_printf ("plane %u has a stride of %d bytes, less than its "
          "rows of %" G_GSIZE_FORMAT " bytes", p, stride, row);
    need = (rows - 1) * (gsize) stride + row;
    if (base == NULL || data < base || (gsize) (data - base) > m->size
        || m->size - (gsize) (data - base) < need)
      return g_strdup_printf ("plane %u needs %" G_GSIZE_FORMAT " bytes from "
          "offset %" G_GSSIZE_FORMAT " (stride %d, %" G_GSIZE_FORMAT " rows) but its "
          "memory holds %" G_GSIZE_FORMAT, p, need, (gssize) (data - base), stride,
          rows, m->size);
  }
  return NULL;
}

/* Why gst_video_frame_map refused `buf`, when the buffer shows it: a GstVideoMeta
 * plane outside the buffer, or a buffer smaller than a frame of the caps; else NULL
 * (the caller says only that the frame could not be mapped). */
static gchar *
map_failure_text (GstBuffer * buf, const GstVideoInfo * info)
{
  GstVideoMeta *vm = gst_buffer_get_video_meta (buf);
  gsize size = gst_buffer_get_size (buf);
  guint i;

  if (vm != NULL) {
    for (i = 0; i < vm->n_planes && i < GST_VIDEO_MAX_PLANES; i++)
      if (vm->offset[i] >= size)
        return g_strdup_printf ("The buffer's video layout reaches past its memory "
            "(its GstVideoMeta puts plane %u at byte %" G_GSIZE_FORMAT " of a %"
            G_GSIZE_FORMAT "-byte buffer): the upstream element attached a "
            "GstVideoMeta that does not fit the buffer", i, vm->offset[i], size);
    return NULL;
  }
  if (size < GST_VIDEO_INFO_SIZE (info))
    return g_strdup_printf ("The buffer holds %" G_GSIZE_FORMAT " bytes, but a "
        "%dx%d %s frame of the negotiated caps needs %" G_GSIZE_FORMAT ": the "
        "upstream element sends buffers that do not match its caps", size,
        GST_VIDEO_INFO_WIDTH (info), GST_VIDEO_INFO_HEIGHT (info),
        GST_VIDEO_INFO_NAME (info), (gsize) GST_VIDEO_INFO_SIZE (info));
  return NULL;
}

gpunet_image *
gst_gpunet_planner_map (GstGpunetPlanner * p, GstGpunetCuda * cuda,
    const GstVideoInfo * info, GstGpunetFrame * f, gchar ** error)
{
  gpunet_image frame_img = p->image_template, *images;
  gchar *why;
  guint i;

  *error = NULL;
  if (!gst_gpunet_cuda_map_frame (cuda, p->element, f->buf, info, &f->vframe,
          &frame_img, &f->cuda_ready)) {
    *error = map_failure_text (f->buf, info);
    return NULL;
  }
  f->mapped = TRUE;
  if ((why = check_geometry (&f->vframe)) != NULL) {
    *error = g_strdup_printf ("The buffer's video layout reaches past its memory "
        "(%s): the upstream element attached a GstVideoMeta that does not fit the "
        "buffer", why);
    g_free (why);
    gst_video_frame_unmap (&f->vframe);
    f->mapped = FALSE;
    gst_gpunet_cuda_ready_free (f->cuda_ready);
    f->cuda_ready = NULL;
    return NULL;
  }
  images = g_new (gpunet_image, f->n_images);
  if (f->frame_inferred)
    images[0] = frame_img;
  for (i = 0; f->rois && i < f->rois->len; i++) {
    GstGpunetRoi *r = &g_array_index (f->rois, GstGpunetRoi, i);

    if (f->roi_image[i] >= 0)
      gst_gpunet_roi_crop_image (&frame_img, r->x, r->y, r->width,
          r->height, &images[f->roi_image[i]]);
  }
  return images;
}
