/* gstgpunetnvmm.h: video/x-raw(memory:NVMM) input of gpunetclassify.  Mapping such a
 * buffer gives DeepStream's NvBufSurface: a batch of numFilled surfaces (one per
 * source after nvstreammux).  This file reads and checks the surfaces, decides what
 * is classified (each whole surface, or each NvDsObjectMeta box of roi-mode=regions,
 * through the per-object cache of gstgpunettrack.c) and makes the images of the
 * buffer's ONE engine request.  The results go out as our own records (a region meta
 * per classified surface or object) and as NvDs metadata (gstgpunetnvdsmeta.c). */
#ifndef __GST_GPUNET_NVMM_H__
#define __GST_GPUNET_NVMM_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpunet.h"
#include "gstgpunetcuda.h"
#include "gstgpunetframe.h"
#include "gstgpunetnvds.h"
#include "gstgpunettrack.h"

G_BEGIN_DECLS

#define GST_GPUNET_NVMM_FEATURE "memory:NVMM"
#define GST_GPUNET_NVMM_FORMATS "{ NV12, RGBA, BGRx, RGB, I420 }"

/* Region meta types of the records made from NVMM input. */
#define GST_GPUNET_NVMM_FRAME_TYPE "nvds-frame"
#define GST_GPUNET_NVMM_OBJECT_TYPE "nvds-object"

/* What the element's properties say, fixed at start. */
typedef struct
{
  gboolean regions;             /* roi-mode regions: each NvDsObjectMeta */
  gint operate_on_gie_id;       /* -1: objects of any component */
  GArray *class_ids;            /* gint; NULL: every class */
  guint roi_min_size;           /* smaller boxes (width or height) are skipped */
  guint roi_max_size;           /* larger ones too, where not 0 */
  gint gie_unique_id;           /* unique_component_id of what we attach */
  gint device;                  /* the gpuId surfaces must have; -1: unchecked */
  gboolean cuda_engine;         /* the engine reads CUDA memory */
  GstGpunetTrackPolicy policy;  /* regions: when an object is classified again */
} GstGpunetNvmmSettings;

typedef struct _GstGpunetNvmm GstGpunetNvmm;

/* The element's DeepStream properties, read under its object lock; the functions
 * taking it free its strings. */
typedef struct
{
  gchar *lib_dir;               /* nvds-lib-dir */
  gchar *class_ids;             /* operate-on-class-ids */
  gint operate_on_gie_id;
  gint gie_unique_id;
  guint interval;               /* the cache's interval without its property */
} GstGpunetNvdsProps;

/* `element` (borrowed) is the logs' object. */
GstGpunetNvmm *gst_gpunet_nvmm_new (GstElement * element);
void gst_gpunet_nvmm_free (GstGpunetNvmm * nv);

/* Jetson surface arrays are mapped for the CUDA context of `cuda` (borrowed: the
 * element's, which outlives every frame). */
void gst_gpunet_nvmm_set_cuda (GstGpunetNvmm * nv, GstGpunetCuda * cuda);

/* READY->PAUSED: opens the libraries (none: NVMM caps are refused; a warning when
 * nvds-lib-dir names a directory without them) and fixes the settings: `regions`
 * (roi-mode), the device the surfaces must be on (`device` for a CUDA engine, else
 * `device_id` when >= 0) and the per-object cache's policy.  FALSE, with the error
 * posted, for operate-on-class-ids that are not a list of ids. */
gboolean gst_gpunet_nvmm_start (GstGpunetNvmm * nv, GstGpunetNvdsProps * props,
    gboolean regions, gint device_id, gint device, gboolean cuda_engine);
void gst_gpunet_nvmm_stop (GstGpunetNvmm * nv);

/* FLUSH_STOP, a new model: every object is new again. */
void gst_gpunet_nvmm_flush (GstGpunetNvmm * nv);

/* The libraries found at start, or NULL. */
const GstGpunetNvds *gst_gpunet_nvmm_libs (GstGpunetNvmm * nv);

/* Whether `caps` are NVMM caps. */
gboolean gst_gpunet_nvmm_caps_are_nvmm (const GstCaps * caps);

/* `caps` without their NVMM structures (a new reference). */
GstCaps *gst_gpunet_nvmm_remove_caps (GstCaps * caps);

/* CAPS: the colour of YUV surfaces (matrix, range) from `info`. */
void gst_gpunet_nvmm_set_info (GstGpunetNvmm * nv, const GstVideoInfo * info);

/* Streaming thread: maps f->buf (writable, NVMM), checks its surfaces, plans what is
 * classified (f->rois with region metas added to f->buf, f->roi_image, f->n_images,
 * f->nvmm) and returns the f->n_images images of its one request (g_free; NULL
 * when n_images is 0).  Whole surfaces (roi-mode frame) follow `interval` per
 * source: a source is classified when new and then every interval + 1 batches,
 * carrying its last result in between; objects follow the cache's policy.  FALSE
 * and *error (g_free: the sentence naming the field and its value) for a surface
 * it cannot read. */
gboolean gst_gpunet_nvmm_plan (GstGpunetNvmm * nv, GstGpunetFrame * f,
    guint interval, gpunet_image ** images, gchar ** error);

/* when-busy: a planned batch (n_images > 0) is not submitted after all: what it
 * was to classify (surfaces, objects) is classified on its next batch instead,
 * and every region carries its last result (gst_gpunet_frame_mark_skipped).
 * The streaming thread, right after gst_gpunet_nvmm_plan. */
void gst_gpunet_nvmm_skip (GstGpunetNvmm * nv, GstGpunetFrame * f);

/* Once the engine is done with the surfaces (idempotent; NULL-safe). */
void gst_gpunet_nvmm_frame_unmap (gpointer nvmm_frame);

/* The per-buffer state (map, cache handles): unmaps and frees. */
void gst_gpunet_nvmm_frame_free (gpointer nvmm_frame);

/* gstgpunetnvdsmeta.c, src task, after the records: each record of f as an
 * NvDsClassifierMeta with one NvDsLabelInfo per listed class, on its NvDsObjectMeta
 * (regions) or, for a whole frame, on a full-frame NvDsObjectMeta added to the
 * frame as nvinfer does for a full-frame classifier.  Nothing without an
 * NvDsBatchMeta. */
void gst_gpunet_nvds_attach (GstGpunetFrame * f, gpunet_class_score * scores);

/* class_init: nvds-lib-dir (its text says whether the libraries load here, and why
 * not), operate-on-gie-id, operate-on-class-ids, gie-unique-id. */
void gst_gpunet_nvmm_install_properties (GObjectClass * klass,
    guint prop_lib_dir, guint prop_gie_id, guint prop_class_ids,
    guint prop_unique_id);

/* Caps queries: `caps` (taken) without NVMM unless the libraries of
 * props->lib_dir (NULL: the search) load. */
GstCaps *gst_gpunet_nvmm_filter_caps (GstCaps * caps, GstGpunetNvdsProps * props);

/* class_init: appends the NVMM caps to the pad templates' `caps`. */
void gst_gpunet_nvmm_add_template_caps (GstCaps * caps);

/* CAPS with NVMM caps: FALSE, with the error posted (why the libraries did not
 * load), when they cannot be read. */
gboolean gst_gpunet_nvmm_set_caps (GstGpunetNvmm * nv, const GstCaps * caps,
    const GstVideoInfo * info);

/* operate-on-class-ids ("0;2"): *out a GArray of gint, NULL for every class; FALSE
 * and *why (g_free) for a list that is not one. */
gboolean gst_gpunet_nvmm_parse_class_ids (const gchar * list, GArray ** out,
    gchar ** why);

G_END_DECLS

#endif /* __GST_GPUNET_NVMM_H__ */
