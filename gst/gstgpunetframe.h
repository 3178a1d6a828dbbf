/* gstgpunetframe.h: what of each buffer gpunetclassify classifies and the images it
 * hands the engine: the image template chosen once per caps, the interval cycle (one
 * frame classified, its results carried to the next `interval`), the regions
 * classified now or carried by roi-id, and the mapped frame with its crops. */
#ifndef __GST_GPUNET_FRAME_H__
#define __GST_GPUNET_FRAME_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpunet.h"
#include "gstgpunetcuda.h"
#include "gstgpunetmodel.h"
#include "gstgpunettrack.h"

G_BEGIN_DECLS

/* What the records of one buffer share, fixed when it arrived. */
typedef struct
{
  guint top_k;
  gfloat threshold;
  gboolean post;
  gboolean analytics;           /* analytics-meta, where this build has it */
  guint64 frame_no;
  GstClockTime running_time;
} GstGpunetRecordSettings;

/* One buffer on its way through the engine: made by the streaming thread, read by
 * the src task once its results are in. */
typedef struct
{
  GstBuffer *buf;
  GstGpunetModelCtx *ctx;       /* the model it is classified with (a reference) */
  GstGpunetRecordSettings rs;
  gboolean frame_record;        /* a record for the whole frame */
  gboolean frame_inferred;      /* ... classified now (else carried) */
  gboolean cycle_start;         /* interval: carried results are dropped here */
  gchar *old_model;             /* first frame of a swapped-in model: the name
                                 * before; else NULL */
  GArray *rois;                 /* GstGpunetRoi; NULL with roi-mode frame */
  gint *roi_image;              /* per roi: its image in the request, or -1
                                 * (carried by roi-id) */
  GstVideoFrame vframe;
  gboolean mapped;
  gpointer cuda_ready;          /* the producer's CUDA event the engine waits on
                                 * (gst_gpunet_cuda_map_frame), freed at unmap */
  guint n_images;               /* images submitted: the frame's, then crops */
  gint64 in_us;                 /* stats: when it arrived (monotonic) */
  gboolean skipped;             /* when-busy=skip: carried, not submitted */
  gpointer nvmm;                /* NVMM input: its surfaces and NvDs targets
                                 * (gstgpunetnvmm.c), else NULL */
  GDestroyNotify nvmm_unmap;    /* ... once the engine is done with it */
  GDestroyNotify nvmm_free;     /* ... with the frame */
} GstGpunetFrame;

/* Unmaps the frame once the engine is done with it (idempotent). */
void gst_gpunet_frame_unmap (GstGpunetFrame * f);
void gst_gpunet_frame_free (GstGpunetFrame * f);

/* Withdraws the `n` frames from the engines they were submitted to with `tag`
 * (gpunet_engine_cancel: no callback for them runs once it returns). */
void gst_gpunet_frames_cancel (gpointer * frames, guint n, gpointer tag);

/* The streaming thread's plan of what is classified, frame after frame. */
typedef struct _GstGpunetPlanner GstGpunetPlanner;

/* `element` (borrowed: it owns the planner) is the logs' object. */
GstGpunetPlanner *gst_gpunet_planner_new (GstElement * element);
void gst_gpunet_planner_free (GstGpunetPlanner * p);

/* READY->PAUSED: whether the whole frame and the regions are classified (roi-mode);
 * the first frame starts a cycle. */
void gst_gpunet_planner_start (GstGpunetPlanner * p, gboolean frames,
    gboolean regions);

/* PAUSED->READY. */
void gst_gpunet_planner_stop (GstGpunetPlanner * p);

/* CAPS: the images' format, size and colour from `info`; the next frame starts a
 * cycle.  FALSE when the format is not one the engine reads. */
gboolean gst_gpunet_planner_set_info (GstGpunetPlanner * p,
    const GstVideoInfo * info);

/* FLUSH_STOP: the next frame starts a cycle, every roi-id is new. */
void gst_gpunet_planner_flush (GstGpunetPlanner * p);

/* roi-mode regions, read once per frame: roi-min-size, roi-max-size and the per-object
 * re-classification of tracked boxes (reclassify-interval, track-timeout). */
typedef struct
{
  guint min_size;
  guint max_size;               /* 0: no limit */
  GstGpunetTrackPolicy track;
} GstGpunetRegionPolicy;

/* The policy the next gst_gpunet_planner_plan uses (copied). */
void gst_gpunet_planner_set_region_policy (GstGpunetPlanner * p,
    const GstGpunetRegionPolicy * policy);

/* Any thread: the regions skipped since start as under roi-min-size (*small), over
 * roi-max-size (*large) and as outside the frame or degenerate (*outside). */
void gst_gpunet_planner_skipped (GstGpunetPlanner * p, guint * small,
    guint * large, guint * outside);

/* Decides what of f->buf (writable) is classified: sets f's cycle_start,
 * frame_record, frame_inferred, rois, roi_image and n_images.  `types` (NULL: all)
 * and `interval` are the properties now; a frame with old_model starts a cycle. */
void gst_gpunet_planner_plan (GstGpunetPlanner * p, GstGpunetFrame * f,
    const GArray * types, guint interval);

/* Frame f, just planned, is skipped (when-busy): the next frame starts a new
 * cycle and is classified, and each tracked region f was to classify is decided
 * again on its next frame (the cache does not count the skip as its
 * classification).  Before gst_gpunet_frame_mark_skipped (f). */
void gst_gpunet_planner_retry (GstGpunetPlanner * p, GstGpunetFrame * f);

/* Maps f->buf (`info`: its caps) through `cuda`: its n_images images (the frame,
 * then the crops; g_free), or NULL when it cannot be mapped, with *error (g_free)
 * saying why when the buffer shows it: its video meta describes planes beyond its
 * memory, or it is smaller than a frame of the caps. */
gpunet_image *gst_gpunet_planner_map (GstGpunetPlanner * p,
    GstGpunetCuda * cuda, const GstVideoInfo * info, GstGpunetFrame * f,
    gchar ** error);

G_END_DECLS

#endif /* __GST_GPUNET_FRAME_H__ */
