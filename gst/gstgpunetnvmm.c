/* gstgpunetnvmm.c: NVMM input (see gstgpunetnvmm.h).  Every field read from a
 * surface is checked before a pixel is touched: the batch against its own count,
 * each surface's pointer, layout, colour format, pitches and plane extents against
 * its dataSize, its gpuId against the session's device.  A surface that fails gives
 * the sentence naming the field and its value; nothing is read out of bounds.
 * Lock: the streaming thread's (plan) and the src task's (finish), as for frames. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gpunet-nvds-abi.h"
#include "gstgpunetlive.h"
#include "gstgpunetmodel.h"
#include "gstgpunetnvmm.h"
#include "gstgpunetnvmm-private.h"
#include "gstgpunetnvmmegl.h"
#include "gstgpunetroi.h"
#include "gstgpunetsurface.h"

#ifdef HAVE_NVMM

GST_DEBUG_CATEGORY_STATIC (gst_gpunet_nvmm_debug);
#define GST_CAT_DEFAULT gst_gpunet_nvmm_debug

struct _GstGpunetNvmm
{
  GstElement *element;
  GstGpunetCuda *cuda;          /* borrowed: the element's (Jetson surfaces) */
  const GstGpunetNvds *nvds;
  GstGpunetNvmmSettings s;
  GstGpunetTrackCache *cache;
  gpunet_color_matrix matrix;
  gboolean full_range;
  gboolean warned_no_batch;
  gchar *why;                   /* why the libraries did not load */
};

/* One buffer's NVMM state, from plan to push. */
typedef struct
{
  const GstGpunetNvds *nvds;
  GstMemory *mem;
  GstMapInfo map;
  gboolean mapped;
  GstGpunetEglMap *egl;         /* Jetson surfaces mapped for CUDA, or NULL */
  GstObject *cuda_context;      /* ... in this context (a reference) */
  gpointer batch;               /* NvDsBatchMeta, or NULL */
  gint gie_unique_id;
  guint n;                      /* regions (f->rois) */
  GpunetNvDsFrameMeta **frames; /* per region: its frame, or NULL */
  GpunetNvDsObjectMeta **objs;  /* per region: its object, NULL: whole frame */
  guint *widths, *heights;      /* per region: its surface's size */
} NvmmFrame;

GstGpunetNvmm *
gst_gpunet_nvmm_new (GstElement * element)
{
  static gsize once = 0;
  GstGpunetNvmm *nv;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_gpunet_nvmm_debug, "gpunetnvmm", 0,
        "gpunetclassify NVMM input and NvDs metadata");
    g_once_init_leave (&once, 1);
  }
  nv = g_new0 (GstGpunetNvmm, 1);
  nv->element = element;
  nv->matrix = GPUNET_MATRIX_BT709;
  return nv;
}

void
gst_gpunet_nvmm_set_cuda (GstGpunetNvmm * nv, GstGpunetCuda * cuda)
{
  nv->cuda = cuda;
}

void
gst_gpunet_nvmm_stop (GstGpunetNvmm * nv)
{
  g_clear_pointer (&nv->cache, gst_gpunet_track_cache_free);
  g_clear_pointer (&nv->s.class_ids, g_array_unref);
  nv->nvds = NULL;
}

void
gst_gpunet_nvmm_free (GstGpunetNvmm * nv)
{
  gst_gpunet_nvmm_stop (nv);
  g_free (nv->why);
  g_free (nv);
}

static void
configure (GstGpunetNvmm * nv, const GstGpunetNvds * nvds,
    GstGpunetNvmmSettings * settings)
{
  gst_gpunet_nvmm_stop (nv);
  nv->nvds = nvds;
  nv->s = *settings;
  settings->class_ids = NULL;
  nv->cache = gst_gpunet_track_cache_new ();
  nv->warned_no_batch = FALSE;
}

void
gst_gpunet_nvmm_flush (GstGpunetNvmm * nv)
{
  if (nv->cache)
    gst_gpunet_track_cache_clear (nv->cache);
}

const GstGpunetNvds *
gst_gpunet_nvmm_libs (GstGpunetNvmm * nv)
{
  return nv->nvds;
}

gboolean
gst_gpunet_nvmm_caps_are_nvmm (const GstCaps * caps)
{
  guint i;

  for (i = 0; caps && i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    if (f && gst_caps_features_contains (f, GST_GPUNET_NVMM_FEATURE))
      return TRUE;
  }
  return FALSE;
}

GstCaps *
gst_gpunet_nvmm_remove_caps (GstCaps * caps)
{
  GstCaps *out = gst_caps_new_empty ();
  guint i;

  if (gst_caps_is_any (caps))
    return gst_caps_ref (caps);
  for (i = 0; i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    if (f && gst_caps_features_contains (f, GST_GPUNET_NVMM_FEATURE))
      continue;
    gst_caps_append_structure_full (out,
        gst_structure_copy (gst_caps_get_structure (caps, i)),
        f ? gst_caps_features_copy (f) : NULL);
  }
  return out;
}

void
gst_gpunet_nvmm_set_info (GstGpunetNvmm * nv, const GstVideoInfo * info)
{
  GstVideoColorMatrix m = info->colorimetry.matrix;

  nv->matrix = m == GST_VIDEO_COLOR_MATRIX_BT601
      || m == GST_VIDEO_COLOR_MATRIX_FCC
      || m == GST_VIDEO_COLOR_MATRIX_SMPTE240M ?
      GPUNET_MATRIX_BT601 : GPUNET_MATRIX_BT709;
  nv->full_range = info->colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255;
}

void
gst_gpunet_nvmm_frame_unmap (gpointer data)
{
  NvmmFrame *nf = data;

  if (nf == NULL || nf->mem == NULL)
    return;
  /* CUDA's view of the surfaces first, then the surfaces */
  g_clear_pointer (&nf->egl, gst_gpunet_egl_unmap);
  if (nf->mapped)
    gst_memory_unmap (nf->mem, &nf->map);
  nf->mapped = FALSE;
  gst_memory_unref (nf->mem);
  nf->mem = NULL;
}

void
gst_gpunet_nvmm_frame_free (gpointer data)
{
  NvmmFrame *nf = data;

  if (nf == NULL)
    return;
  gst_gpunet_nvmm_frame_unmap (nf);
  if (nf->cuda_context)
    gst_object_unref (nf->cuda_context);
  g_free (nf->frames);
  g_free (nf->objs);
  g_free (nf->widths);
  g_free (nf->heights);
  g_free (nf);
}

/* ---- surfaces ------------------------------------------------------------------- */

/* Surface i of the batch as an image (planes in place), or FALSE and *error. */
static gboolean
read_surface (GstGpunetNvmm * nv, const guint8 * list, guint i,
    gboolean cuda, gboolean egl, gpunet_image * img, gchar ** error)
{
  GpunetNvBufSurfaceParams p;
  gboolean full;

  /* the leading fields of entry i (the stride is the version's) */
  memcpy (&p, list + (gsize) i * nv->nvds->surface_stride, sizeof p);
  if (!gst_gpunet_surface_image (&p, i, egl, img, &full, error))
    return FALSE;
  img->matrix = nv->matrix;
  img->full_range = full || nv->full_range;
  img->memory = cuda ? GPUNET_MEMORY_CUDA : GPUNET_MEMORY_HOST;
  return TRUE;
}

/* Whether memType is read in place on the GPU (*cuda; *egl: through an EGL
 * mapping) or by the host path; FALSE and *error when this element cannot read
 * it. */
static gboolean
memory_kind (GstGpunetNvmm * nv, gint mem_type, gboolean * cuda,
    gboolean * egl, gchar ** error)
{
  *egl = FALSE;
  switch (mem_type) {
    case GPUNET_NVBUF_MEM_SYSTEM:
      *cuda = FALSE;
      return TRUE;
    case GPUNET_NVBUF_MEM_CUDA_PINNED:
    case GPUNET_NVBUF_MEM_CUDA_UNIFIED:
      /* host-visible: in place on the GPU, else through the host path */
      *cuda = nv->s.cuda_engine;
      return TRUE;
    case GPUNET_NVBUF_MEM_DEFAULT:
    case GPUNET_NVBUF_MEM_CUDA_DEVICE:
      if (!nv->s.cuda_engine) {
        *error = g_strdup_printf ("NvBufSurface.memType is %d (CUDA device "
            "memory), but this element runs on the CPU: set backend=cuda, or "
            "have nvvideoconvert output nvbuf-memory-type=%d (system) or %d "
            "(pinned)", mem_type, GPUNET_NVBUF_MEM_SYSTEM,
            GPUNET_NVBUF_MEM_CUDA_PINNED);
        return FALSE;
      }
      *cuda = TRUE;
      return TRUE;
    case GPUNET_NVBUF_MEM_SURFACE_ARRAY:
      if (!nv->s.cuda_engine) {
        *error = g_strdup_printf ("NvBufSurface.memType is %d (a Jetson "
            "surface array), read through CUDA's EGL interop, but this element "
            "runs on the CPU: set backend=cuda, or have nvvideoconvert output "
            "nvbuf-memory-type=%d (CUDA unified), which the CPU reads", mem_type,
            GPUNET_NVBUF_MEM_CUDA_UNIFIED);
        return FALSE;
      }
      *cuda = TRUE;
      *egl = TRUE;
      return TRUE;
    case GPUNET_NVBUF_MEM_HANDLE:
      *error = g_strdup_printf ("NvBufSurface.memType is %d (a Jetson NVRM "
          "handle), which gpunetclassify does not map: have nvvideoconvert "
          "output surface-array (%d) or CUDA memory", mem_type,
          GPUNET_NVBUF_MEM_SURFACE_ARRAY);
      return FALSE;
    default:
      *error = g_strdup_printf ("NvBufSurface.memType is %d, not a memory type "
          "of DeepStream 6.1-9.x", mem_type);
      return FALSE;
  }
}

static gboolean
class_selected (const GArray * ids, gint class_id)
{
  guint i;

  if (ids == NULL)
    return TRUE;
  for (i = 0; i < ids->len; i++)
    if (g_array_index (ids, gint, i) == class_id)
      return TRUE;
  return FALSE;
}

/* Adds region i (the rectangle of `roi`, image `image` or -1) of surface `frame`. */
static void
add_region (GstGpunetFrame * f, NvmmFrame * nf, GstGpunetRoi * roi,
    const gchar * type, gint id, GpunetNvDsFrameMeta * fm,
    GpunetNvDsObjectMeta * om, guint surface, const gpunet_image * img,
    GstGpunetTrack * track, gboolean classify)
{
  GstVideoRegionOfInterestMeta *m;
  GstStructure *s;
  guint i = f->rois->len;

  m = gst_buffer_add_video_region_of_interest_meta (f->buf, type, roi->x,
      roi->y, roi->width, roi->height);
  m->id = id;
  s = gst_structure_new ("nvds", "batch-id", G_TYPE_UINT, surface,
      "source-id", G_TYPE_UINT, fm ? fm->source_id : surface,
      "frame-num", G_TYPE_INT, fm ? fm->frame_num : -1,
      "object-id", G_TYPE_UINT64, om ? om->object_id :
      GPUNET_NVDS_UNTRACKED_OBJECT_ID, NULL);
  gst_video_region_of_interest_meta_add_param (m, s);
  roi->meta = m;
  roi->od_id = -1;
  /* the records store a fresh result in it and carry its last one */
  roi->track = track;
  g_array_append_val (f->rois, *roi);
  nf->frames[i] = fm;
  nf->objs[i] = om;
  nf->widths[i] = (guint) img->width;
  nf->heights[i] = (guint) img->height;
  f->roi_image[i] = classify ? (gint) f->n_images++ : -1;
  nf->n = i + 1;
}

/* Jetson surface arrays: each surface's planes from its EGL image, mapped for
 * the CUDA session's context (unmapped with the frame's map). */
static gboolean
map_egl (GstGpunetNvmm * nv, NvmmFrame * nf, const GpunetNvBufSurface * hdr,
    gpunet_image * surf, gchar ** error)
{
  const GstGpunetEgl *lib;
  gchar *why = NULL;

  lib = gst_gpunet_egl_open (nv->nvds->dir, &why);
  if (lib == NULL) {
    *error = g_strdup_printf ("NvBufSurface.memType is %d (a Jetson surface "
        "array), read through its EGL mapping, which cannot be used here: %s",
        hdr->memType, why);
    g_free (why);
    return FALSE;
  }
  nf->cuda_context = nv->cuda ? gst_gpunet_cuda_context_ref (nv->cuda) : NULL;
  return gst_gpunet_egl_map (lib, nf->cuda_context ?
      gst_gpunet_cuda_context_handle (nf->cuda_context) : NULL,
      nf->map.data, hdr->surfaceList, nv->nvds->surface_stride,
      hdr->numFilled, surf, &nf->egl, error);
}

gboolean
gst_gpunet_nvmm_plan (GstGpunetNvmm * nv, GstGpunetFrame * f, guint interval,
    gpunet_image ** images_out, gchar ** error)
{
  NvmmFrame *nf = g_new0 (NvmmFrame, 1);
  GpunetNvBufSurface hdr;
  GpunetNvDsFrameMeta **by_surface = NULL;
  gpunet_image *surf = NULL;
  GArray *images;
  gboolean cuda = FALSE, egl = FALSE, ok = FALSE, locked = FALSE;
  guint i, cap;
  GList *l;

  *images_out = NULL;
  *error = NULL;
  f->nvmm = nf;
  f->nvmm_unmap = gst_gpunet_nvmm_frame_unmap;
  f->nvmm_free = gst_gpunet_nvmm_frame_free;
  f->frame_record = FALSE;
  f->frame_inferred = FALSE;
  /* results are carried by the per-object cache, not by the records' roi-id cache:
   * a cycle start keeps that one from growing with every object id seen */
  f->cycle_start = TRUE;
  f->n_images = 0;
  nf->nvds = nv->nvds;
  nf->gie_unique_id = nv->s.gie_unique_id;
  images = g_array_new (FALSE, FALSE, sizeof (gpunet_image));

  if (gst_buffer_n_memory (f->buf) != 1) {
    *error = g_strdup_printf ("an NVMM buffer holds one memory (its "
        "NvBufSurface), this one holds %u", gst_buffer_n_memory (f->buf));
    goto done;
  }
  nf->mem = gst_memory_ref (gst_buffer_peek_memory (f->buf, 0));
  if (!gst_memory_map (nf->mem, &nf->map, GST_MAP_READ)) {
    *error = g_strdup ("the NVMM memory cannot be mapped");
    goto done;
  }
  nf->mapped = TRUE;
  if (nf->map.size < sizeof hdr) {
    *error = g_strdup_printf ("the NVMM memory maps to %" G_GSIZE_FORMAT
        " bytes, fewer than an NvBufSurface (%" G_GSIZE_FORMAT "): not "
        "DeepStream memory", nf->map.size, sizeof hdr);
    goto done;
  }
  memcpy (&hdr, nf->map.data, sizeof hdr);
  if (hdr.numFilled > hdr.batchSize) {
    *error = g_strdup_printf ("NvBufSurface.numFilled is %u, more than its "
        "batchSize %u", hdr.numFilled, hdr.batchSize);
    goto done;
  }
  if (hdr.numFilled > 0 && hdr.surfaceList == NULL) {
    *error = g_strdup_printf ("NvBufSurface.surfaceList is NULL, with numFilled "
        "%u", hdr.numFilled);
    goto done;
  }
  if (nv->s.device >= 0 && hdr.gpuId != (guint) nv->s.device) {
    *error = g_strdup_printf ("NvBufSurface.gpuId is %u, but this element's "
        "session runs on device %d: set device-id=%u, or gpu-id=%d on the "
        "DeepStream elements upstream", hdr.gpuId, nv->s.device, hdr.gpuId,
        nv->s.device);
    goto done;
  }
  if (!memory_kind (nv, hdr.memType, &cuda, &egl, error))
    goto done;

  surf = g_new0 (gpunet_image, MAX (hdr.numFilled, 1));
  for (i = 0; i < hdr.numFilled; i++)
    if (!read_surface (nv, hdr.surfaceList, i, cuda, egl, &surf[i], error))
      goto done;
  if (egl && hdr.numFilled > 0 && !map_egl (nv, nf, &hdr, surf, error))
    goto done;

  by_surface = g_new0 (GpunetNvDsFrameMeta *, MAX (hdr.numFilled, 1));
  nf->batch = nv->nvds->get_batch_meta (f->buf);
  if (nf->batch != NULL) {
    nv->nvds->acquire_lock (nf->batch);
    locked = TRUE;
    for (l = ((GpunetNvDsBatchMeta *) nf->batch)->frame_meta_list; l;
        l = l->next) {
      GpunetNvDsFrameMeta *fm = l->data;

      if (fm->batch_id >= hdr.numFilled) {
        *error = g_strdup_printf ("NvDsFrameMeta.batch_id is %u (source %u), "
            "but the NvBufSurface holds %u surfaces", fm->batch_id,
            fm->source_id, hdr.numFilled);
        goto done;
      }
      by_surface[fm->batch_id] = fm;
    }
  } else if (nv->s.regions && !nv->warned_no_batch) {
    nv->warned_no_batch = TRUE;
    GST_ELEMENT_WARNING (nv->element, STREAM, FORMAT, ("roi-mode=regions on "
            "NVMM input classifies the NvDsObjectMeta of the buffer's "
            "NvDsBatchMeta, and this buffer has none: put nvstreammux and a "
            "detector before gpunetclassify"), (NULL));
  }

  /* the most regions: every surface, or every object */
  cap = hdr.numFilled;
  if (nv->s.regions) {
    cap = 0;
    for (i = 0; i < hdr.numFilled; i++)
      if (by_surface[i])
        cap += g_list_length (by_surface[i]->obj_meta_list);
  }
  f->rois = g_array_sized_new (FALSE, FALSE, sizeof (GstGpunetRoi), cap);
  f->roi_image = g_new (gint, MAX (cap, 1));
  nf->frames = g_new0 (GpunetNvDsFrameMeta *, MAX (cap, 1));
  nf->objs = g_new0 (GpunetNvDsObjectMeta *, MAX (cap, 1));
  nf->widths = g_new0 (guint, MAX (cap, 1));
  nf->heights = g_new0 (guint, MAX (cap, 1));

  if (!nv->s.regions) {
    /* interval, per source: a source is classified when new, then once every
     * interval + 1 batches; the batches between carry its last result */
    GstGpunetTrackPolicy frames = nv->s.policy;

    frames.reclassify_interval = interval + 1;
    frames.reclassify_on_growth = FALSE;
    gst_gpunet_track_cache_begin_frame (nv->cache, &frames);
    for (i = 0; i < hdr.numFilled; i++) {
      GstGpunetRoi roi = { 0 };
      GstGpunetTrack *track = NULL;
      guint32 source = by_surface[i] ? by_surface[i]->source_id : i;
      gboolean classify = gst_gpunet_track_cache_decide (nv->cache, source,
          GPUNET_NVDS_UNTRACKED_OBJECT_ID, 0, &track);

      roi.width = surf[i].width;
      roi.height = surf[i].height;
      add_region (f, nf, &roi, GST_GPUNET_NVMM_FRAME_TYPE, (gint) source,
          by_surface[i], NULL, i, &surf[i], track, classify);
      if (classify)
        g_array_append_val (images, surf[i]);
    }
  } else {
    gst_gpunet_track_cache_begin_frame (nv->cache, &nv->s.policy);
    for (i = 0; i < hdr.numFilled; i++) {
      gboolean even = surf[i].format == GPUNET_FORMAT_NV12
          || surf[i].format == GPUNET_FORMAT_I420;

      for (l = by_surface[i] ? by_surface[i]->obj_meta_list : NULL; l;
          l = l->next) {
        GpunetNvDsObjectMeta *om = l->data;
        const GpunetNvOSDRect *r = &om->rect_params;
        GstGpunetRoi roi = { 0 };
        GstGpunetTrack *track = NULL;
        gboolean classify = TRUE;

        if (nv->s.operate_on_gie_id >= 0
            && om->unique_component_id != nv->s.operate_on_gie_id)
          continue;
        if (!class_selected (nv->s.class_ids, om->class_id))
          continue;
        /* NaN and out-of-range boxes: clipped, or skipped when empty */
        if (!(r->width >= (gfloat) nv->s.roi_min_size
                && r->height >= (gfloat) nv->s.roi_min_size)
            || (nv->s.roi_max_size > 0 && (r->width > (gfloat) nv->s.roi_max_size
                    || r->height > (gfloat) nv->s.roi_max_size))
            || !(r->left > -1e9f && r->left < 1e9f && r->top > -1e9f
                && r->top < 1e9f && r->width < 1e9f && r->height < 1e9f))
          continue;
        if (!gst_gpunet_roi_clip ((gint64) r->left, (gint64) r->top,
                (gint64) r->width, (gint64) r->height, surf[i].width,
                surf[i].height, even, &roi))
          continue;
        if (om->object_id != GPUNET_NVDS_UNTRACKED_OBJECT_ID)
          classify = gst_gpunet_track_cache_decide (nv->cache,
              by_surface[i]->source_id, om->object_id,
              (guint64) roi.width * (guint64) roi.height, &track);
        add_region (f, nf, &roi, GST_GPUNET_NVMM_OBJECT_TYPE,
            (gint) (om->object_id & G_MAXINT), by_surface[i], om, i, &surf[i],
            track, classify);
        if (classify) {
          gpunet_image crop;

          gst_gpunet_roi_crop_image (&surf[i], roi.x, roi.y, roi.width,
              roi.height, &crop);
          g_array_append_val (images, crop);
        }
      }
    }
  }
  gst_gpunet_roi_mark_unique (f->rois);
  ok = TRUE;

done:
  if (locked)
    nv->nvds->release_lock (nf->batch);
  g_free (by_surface);
  g_free (surf);
  if (ok && images->len > 0)
    *images_out = (gpunet_image *) g_array_free (images, FALSE);
  else
    g_array_free (images, TRUE);
  return ok;
}

void
gst_gpunet_nvmm_skip (GstGpunetNvmm * nv, GstGpunetFrame * f)
{
  guint i;

  for (i = 0; f->rois && i < f->rois->len; i++)
    if (f->roi_image[i] >= 0)
      gst_gpunet_track_cache_undo (nv->cache,
          g_array_index (f->rois, GstGpunetRoi, i).track);
  gst_gpunet_frame_mark_skipped (f);
}

/* ---- for gstgpunetnvdsmeta.c ---------------------------------------------------- */

const NvmmFrameView *
gst_gpunet_nvmm_frame_view (const GstGpunetFrame * f, NvmmFrameView * v)
{
  const NvmmFrame *nf = f->nvmm;

  if (nf == NULL)
    return NULL;
  v->nvds = nf->nvds;
  v->batch = nf->batch;
  v->gie_unique_id = nf->gie_unique_id;
  v->n = nf->n;
  v->frames = nf->frames;
  v->objs = nf->objs;
  v->widths = nf->widths;
  v->heights = nf->heights;
  return v;
}

/* ---- the element's side: properties, caps, settings ---------------------------- */

void
gst_gpunet_nvmm_install_properties (GObjectClass * klass, guint prop_lib_dir,
    guint prop_gie_id, guint prop_class_ids, guint prop_unique_id)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  gchar *why = NULL, *blurb;
  const GstGpunetNvds *n = gst_gpunet_nvds_open (NULL, &why);

  /* gst-inspect says whether NVMM caps are offered on this host, and why not */
  if (n != NULL)
    blurb = g_strdup_printf ("Directory of DeepStream's libnvds_meta.so and "
        "libnvdsgst_meta.so (empty: LD_LIBRARY_PATH, then "
        GST_GPUNET_NVDS_STD_DIR "). On this host they were found in '%s' (%s): "
        "video/x-raw(memory:NVMM) caps are offered", n->dir, n->version);
  else
    blurb = g_strdup_printf ("Directory of DeepStream's libnvds_meta.so and "
        "libnvdsgst_meta.so (empty: LD_LIBRARY_PATH, then "
        GST_GPUNET_NVDS_STD_DIR "). On this host NVMM caps are not offered: "
        "%s", why);
  g_free (why);
  g_object_class_install_property (klass, prop_lib_dir,
      g_param_spec_string ("nvds-lib-dir", "DeepStream library directory",
          blurb, NULL, G_PARAM_READWRITE | G_PARAM_STATIC_NAME |
          G_PARAM_STATIC_NICK | GST_PARAM_MUTABLE_READY));
  g_free (blurb);               /* the param spec keeps its own copy */
  g_object_class_install_property (klass, prop_gie_id,
      g_param_spec_int ("operate-on-gie-id", "Operate on GIE id",
          "NVMM input, roi-mode=regions: classify only the NvDsObjectMeta "
          "whose unique_component_id is this (the detector's gie-unique-id); "
          "-1 = objects of every component", -1, G_MAXINT, -1,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (klass, prop_class_ids,
      g_param_spec_string ("operate-on-class-ids", "Operate on class ids",
          "NVMM input, roi-mode=regions: classify only objects of these "
          "detector class ids, separated by ';' or ',' (as nvinfer's "
          "operate-on-class-ids); empty = every class", NULL,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (klass, prop_unique_id,
      g_param_spec_int ("gie-unique-id", "GIE unique id",
          "NVMM input: unique_component_id of the NvDsClassifierMeta (and "
          "full-frame NvDsObjectMeta) this element attaches, as nvinfer's "
          "gie-unique-id", 0, G_MAXINT, 0, rw | GST_PARAM_MUTABLE_READY));
}

GstCaps *
gst_gpunet_nvmm_filter_caps (GstCaps * caps, GstGpunetNvdsProps * p)
{
  gchar *why = NULL;
  GstCaps *ret = caps;

  if (gst_gpunet_nvmm_caps_are_nvmm (caps)
      && gst_gpunet_nvds_open (p->lib_dir, &why) == NULL) {
    ret = gst_gpunet_nvmm_remove_caps (caps);
    gst_caps_unref (caps);
  }
  g_free (why);
  g_free (p->lib_dir);
  g_free (p->class_ids);
  return ret;
}

void
gst_gpunet_nvmm_add_template_caps (GstCaps * caps)
{
  gst_caps_append (caps, gst_caps_from_string (GST_VIDEO_CAPS_MAKE_WITH_FEATURES
          (GST_GPUNET_NVMM_FEATURE, GST_GPUNET_NVMM_FORMATS)));
}

gboolean
gst_gpunet_nvmm_set_caps (GstGpunetNvmm * nv, const GstCaps * caps,
    const GstVideoInfo * info)
{
  if (nv->nvds == NULL) {
    GST_ELEMENT_ERROR (nv->element, CORE, NEGOTIATION,
        ("NVMM frames need DeepStream's metadata libraries: %s", nv->why),
        ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }
  gst_gpunet_nvmm_set_info (nv, info);
  return TRUE;
}

/* A uint (or int) property of another part of the element (the per-object cache's,
 * where this build has it), else `fallback`. */
static guint
optional_uint (GstElement * element, const gchar * name, guint fallback)
{
  GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (element),
      name);
  guint v = fallback;

  if (ps != NULL && G_PARAM_SPEC_VALUE_TYPE (ps) == G_TYPE_UINT) {
    g_object_get (element, name, &v, NULL);
  } else if (ps != NULL && G_PARAM_SPEC_VALUE_TYPE (ps) == G_TYPE_INT) {
    gint i = 0;

    g_object_get (element, name, &i, NULL);
    v = (guint) MAX (i, 0);
  }
  return v;
}

gboolean
gst_gpunet_nvmm_start (GstGpunetNvmm * nv, GstGpunetNvdsProps * p,
    gboolean regions, gint device_id, gint device, gboolean cuda_engine)
{
  GstGpunetNvmmSettings s;
  const GstGpunetNvds *n;
  gchar *why = NULL;

  memset (&s, 0, sizeof s);
  s.operate_on_gie_id = p->operate_on_gie_id;
  s.gie_unique_id = p->gie_unique_id;
  if (!gst_gpunet_nvmm_parse_class_ids (p->class_ids, &s.class_ids, &why)) {
    GST_ELEMENT_ERROR (nv->element, RESOURCE, SETTINGS, ("%s", why), (NULL));
    g_free (why);
    g_free (p->class_ids);
    g_free (p->lib_dir);
    return FALSE;
  }
  n = gst_gpunet_nvds_open (p->lib_dir, &why);
  if (n == NULL && p->lib_dir != NULL && *p->lib_dir != '\0')
    GST_ELEMENT_WARNING (nv->element, RESOURCE, NOT_FOUND, ("%s: NVMM input is "
            "refused, system and CUDA memory work as before", why), (NULL));
  g_free (p->class_ids);
  g_free (p->lib_dir);
  s.regions = regions;
  s.cuda_engine = cuda_engine;
  /* the surfaces' GPU: the CUDA session's, else the one device-id names */
  s.device = cuda_engine ? device : device_id;
  /* the per-object cache: its properties where the element has them, else
   * interval's cycle (classify, then carry `interval` frames) */
  s.roi_min_size = optional_uint (nv->element, "roi-min-size", 0);
  s.roi_max_size = optional_uint (nv->element, "roi-max-size", 0);
  s.policy.reclassify_interval = optional_uint (nv->element,
      "reclassify-interval", p->interval + 1);
  s.policy.track_timeout = optional_uint (nv->element, "track-timeout", 30);
  s.policy.reclassify_on_growth = TRUE;
  configure (nv, n, &s);
  g_free (nv->why);
  nv->why = why;
  return TRUE;
}

gboolean
gst_gpunet_nvmm_parse_class_ids (const gchar * list, GArray ** out,
    gchar ** why)
{
  gchar **parts;
  guint i;

  *out = NULL;
  *why = NULL;
  if (list == NULL)
    return TRUE;
  parts = g_strsplit_set (list, ";,", -1);
  for (i = 0; parts[i] != NULL; i++) {
    gchar *t = g_strstrip (parts[i]), *end = NULL;
    gint64 v;

    if (*t == '\0')
      continue;
    v = g_ascii_strtoll (t, &end, 10);
    if (end == t || *end != '\0' || v < G_MININT || v > G_MAXINT) {
      *why = g_strdup_printf ("operate-on-class-ids: '%s' is not a class id "
          "(write integers separated by ';', e.g. \"0;2\")", t);
      g_strfreev (parts);
      g_clear_pointer (out, g_array_unref);
      return FALSE;
    }
    if (*out == NULL)
      *out = g_array_new (FALSE, FALSE, sizeof (gint));
    {
      gint id = (gint) v;

      g_array_append_val (*out, id);
    }
  }
  g_strfreev (parts);
  return TRUE;
}

#else /* !HAVE_NVMM: built with -Dnvmm=disabled: no NVMM caps, nothing read */

struct _GstGpunetNvmm
{
  GstElement *element;
};

GstGpunetNvmm *
gst_gpunet_nvmm_new (GstElement * element)
{
  GstGpunetNvmm *nv = g_new0 (GstGpunetNvmm, 1);

  nv->element = element;
  return nv;
}

void
gst_gpunet_nvmm_free (GstGpunetNvmm * nv)
{
  g_free (nv);
}

void
gst_gpunet_nvmm_set_cuda (GstGpunetNvmm * nv, GstGpunetCuda * cuda)
{
  (void) nv;
  (void) cuda;
}

void
gst_gpunet_nvmm_stop (GstGpunetNvmm * nv)
{
  (void) nv;
}

void
gst_gpunet_nvmm_flush (GstGpunetNvmm * nv)
{
  (void) nv;
}

gboolean
gst_gpunet_nvmm_caps_are_nvmm (const GstCaps * caps)
{
  (void) caps;
  return FALSE;
}

void
gst_gpunet_nvmm_add_template_caps (GstCaps * caps)
{
  (void) caps;
}

GstCaps *
gst_gpunet_nvmm_filter_caps (GstCaps * caps, GstGpunetNvdsProps * p)
{
  g_free (p->lib_dir);
  g_free (p->class_ids);
  return caps;
}

gboolean
gst_gpunet_nvmm_set_caps (GstGpunetNvmm * nv, const GstCaps * caps,
    const GstVideoInfo * info)
{
  (void) info;
  GST_ELEMENT_ERROR (nv->element, CORE, NEGOTIATION, ("This build has no NVMM "
          "input (built with -Dnvmm=disabled)"), ("caps %" GST_PTR_FORMAT, caps));
  return FALSE;
}

gboolean
gst_gpunet_nvmm_start (GstGpunetNvmm * nv, GstGpunetNvdsProps * p,
    gboolean regions, gint device_id, gint device, gboolean cuda_engine)
{
  (void) nv;
  (void) regions;
  (void) device_id;
  (void) device;
  (void) cuda_engine;
  g_free (p->lib_dir);
  g_free (p->class_ids);
  return TRUE;
}

gboolean
gst_gpunet_nvmm_plan (GstGpunetNvmm * nv, GstGpunetFrame * f, guint interval,
    gpunet_image ** images, gchar ** error)
{
  (void) nv;
  (void) f;
  (void) interval;
  *images = NULL;
  *error = g_strdup ("this build has no NVMM input");
  return FALSE;
}

void
gst_gpunet_nvmm_skip (GstGpunetNvmm * nv, GstGpunetFrame * f)
{
  (void) nv;
  (void) f;
}

void
gst_gpunet_nvds_attach (GstGpunetFrame * f, gpunet_class_score * scores)
{
  (void) f;
  (void) scores;
}

void
gst_gpunet_nvmm_install_properties (GObjectClass * klass, guint prop_lib_dir,
    guint prop_gie_id, guint prop_class_ids, guint prop_unique_id)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;

  /* the properties exist, so launch lines work on every build */
  g_object_class_install_property (klass, prop_lib_dir,
      g_param_spec_string ("nvds-lib-dir", "DeepStream library directory",
          "Not available in this build (-Dnvmm=disabled): no NVMM input",
          NULL, rw));
  g_object_class_install_property (klass, prop_gie_id,
      g_param_spec_int ("operate-on-gie-id", "Operate on GIE id",
          "Not available in this build (-Dnvmm=disabled)", -1, G_MAXINT, -1,
          rw));
  g_object_class_install_property (klass, prop_class_ids,
      g_param_spec_string ("operate-on-class-ids", "Operate on class ids",
          "Not available in this build (-Dnvmm=disabled)", NULL, rw));
  g_object_class_install_property (klass, prop_unique_id,
      g_param_spec_int ("gie-unique-id", "GIE unique id",
          "Not available in this build (-Dnvmm=disabled)", 0, G_MAXINT, 0, rw));
}

#endif /* HAVE_NVMM */
