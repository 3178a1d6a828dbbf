/* gstgpunetinstance.h: the gpunetclassify element's instance, its property ids
 * and defaults, shared by the element (gstgpunetclassify.c) and its property table
 * (gstgpunetprops.c) only. */
#ifndef __GST_GPUNET_INSTANCE_H__
#define __GST_GPUNET_INSTANCE_H__

#include "gstgpunetanalytics.h"
#include "gstgpunetenums.h"
#include "gstgpunetcuda.h"
#include "gstgpunetframe.h"
#include "gstgpunetlive.h"
#include "gstgpunetmodel.h"
#include "gstgpunetnvmm.h"
#include "gstgpunetqueue.h"
#include "gstgpunetrecords.h"
#include "gstgpunetroi.h"
#include "gstgpunetstats.h"

G_BEGIN_DECLS

enum
{
  PROP_0,
  PROP_MODEL,
  PROP_CHECKPOINT,
  PROP_LABELS,
  PROP_TOP_K,
  PROP_THRESHOLD,
  PROP_BACKEND,
  PROP_RESIZE_MODE,
  PROP_CROP_PCT,
  PROP_INTERVAL,
  PROP_POST_MESSAGES,
  PROP_N_THREADS,
  PROP_PRECISION,
  PROP_BATCH_SIZE,
  PROP_ROI_MODE,
  PROP_ROI_TYPES,
  PROP_JSON_OUTPUT,
  PROP_SHARE_ENGINE,
  PROP_BATCH_TIMEOUT,
  PROP_PASSES_IN_FLIGHT,
  PROP_MAX_IN_FLIGHT,
  PROP_SMOOTHING,
  PROP_LABEL_HOLD,
  PROP_ENGINE_ID,
  PROP_DEVICE_ID,
  PROP_ANALYTICS_META,
  PROP_ROI_MIN_SIZE,
  PROP_ROI_MAX_SIZE,
  PROP_RECLASSIFY_INTERVAL,
  PROP_TRACK_TIMEOUT,
  PROP_ROI_SKIPPED_SMALL,
  PROP_ROI_SKIPPED_OUTSIDE,
  PROP_ROI_SKIPPED_LARGE,
  PROP_WHEN_BUSY,
  PROP_STATS_INTERVAL,
  PROP_STATS,
  PROP_NVDS_LIB_DIR,
  PROP_OPERATE_ON_GIE_ID,
  PROP_OPERATE_ON_CLASS_IDS,
  PROP_GIE_UNIQUE_ID,
  PROP_INT8_SCALES,
  PROP_LAST
};

#define DEFAULT_MODEL "gpunet-0"
#define DEFAULT_CHECKPOINT NULL
#define DEFAULT_LABELS NULL
#define DEFAULT_TOP_K 5
#define DEFAULT_THRESHOLD 0.0f
#define DEFAULT_BACKEND GST_GPUNET_BACKEND_AUTO
#define DEFAULT_RESIZE_MODE GST_GPUNET_RESIZE_CENTER_CROP
#define DEFAULT_CROP_PCT 0.0f
#define DEFAULT_INTERVAL 0
#define DEFAULT_POST_MESSAGES FALSE
#define DEFAULT_N_THREADS 0
#define DEFAULT_PRECISION GPUNET_PRECISION_AUTO
#define DEFAULT_BATCH_SIZE 1
#define MAX_BATCH_SIZE 64
#define DEFAULT_ROI_MODE GST_GPUNET_ROI_MODE_FRAME
#define DEFAULT_ROI_TYPES NULL
#define DEFAULT_JSON_OUTPUT NULL
#define DEFAULT_SHARE_ENGINE TRUE
#define DEFAULT_BATCH_TIMEOUT 0
#define MAX_BATCH_TIMEOUT 10000000
#define DEFAULT_PASSES_IN_FLIGHT 1
#define DEFAULT_MAX_IN_FLIGHT 4
#define DEFAULT_SMOOTHING 0.0f
#define DEFAULT_LABEL_HOLD 1
#define DEFAULT_DEVICE_ID -1
/* on where this build has GstAnalytics (GStreamer 1.24+), else off */
#define DEFAULT_ANALYTICS_META (gst_gpunet_analytics_available ())
#define DEFAULT_ROI_MIN_SIZE 0
#define DEFAULT_ROI_MAX_SIZE 0
#define DEFAULT_RECLASSIFY_INTERVAL 0
#define DEFAULT_TRACK_TIMEOUT 30
#define DEFAULT_WHEN_BUSY GST_GPUNET_WHEN_BUSY_AUTO
#define DEFAULT_STATS_INTERVAL 0

#define DEFAULT_NVDS_LIB_DIR NULL
#define DEFAULT_OPERATE_ON_GIE_ID -1
#define DEFAULT_OPERATE_ON_CLASS_IDS NULL
#define DEFAULT_GIE_UNIQUE_ID 0

#define VIDEO_FORMATS "{ NV12, I420, RGBA, BGRA, RGBx, BGRx, RGB, BGR }"

struct _GstGpunetClassify
{
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties, under the object lock */
  gchar *model_name;
  gchar *checkpoint;
  gchar *labels_path;
  guint top_k;
  gfloat threshold;
  GstGpunetBackend backend;
  GstGpunetResizeMode resize_mode;
  gfloat crop_pct;
  guint interval;
  gboolean post_messages;
  guint n_threads;
  gint precision;
  gchar *int8_scales;           /* precision=int8: the scales file */
  guint batch_size;
  GstGpunetRoiMode roi_mode;
  gchar *roi_types;
  GArray *roi_type_quarks;      /* parsed roi_types (GQuark), NULL = all */
  gchar *json_output;
  gboolean share_engine;
  guint64 batch_timeout;
  guint passes_in_flight;
  guint max_in_flight;
  gfloat smoothing;
  guint label_hold;
  gint device_id;
  gboolean analytics_meta;
  guint roi_min_size;
  guint roi_max_size;
  guint reclassify_interval;
  guint track_timeout;
  GstGpunetWhenBusy when_busy;
  guint stats_interval;
  gchar *nvds_lib_dir;
  gint operate_on_gie_id;
  gchar *operate_on_class_ids;
  gint gie_unique_id;

  /* each with its own lock or thread, see their files */
  GstGpunetCuda *cuda;
  GstGpunetModelSwap *models;   /* the model in use, the one loading beside it */
  gboolean swap_wanted;         /* model or checkpoint set while started: a swap
                                 * starts once the setter's notifications go out */
  GstGpunetQueue *queue;        /* the in-flight queue and the src task */
  GstGpunetRecords *records;    /* the src task's records, tracks, JSON file */
  GstGpunetPlanner *planner;    /* the streaming thread's plan per frame */
  GstGpunetStats *stats;        /* counters, latency, the stats messages */
  GstGpunetNvmm *nvmm;          /* NVMM input (streaming thread, src task) */

  gpunet_preprocess_params pre; /* set at READY->PAUSED */

  /* object lock: the caps' framerate, for LATENCY queries, which come on any thread */
  gint fps_n, fps_d;

  /* streaming thread (chain, sink events) */
  GstVideoInfo info;
  gboolean have_caps;
  gboolean nvmm_caps;           /* the caps are video/x-raw(memory:NVMM) */
  GstSegment segment;
  guint64 frame_count;
  gint skip;                    /* when-busy as resolved for this stream, -1 = not yet */
};

/* gstgpunetprops.c */
void gst_gpunet_classify_install_properties (GObjectClass * gobject_class);
/* The instance field that holds property `prop_id`, or NULL for a property with no
 * field (engine-id, stats, the region counters) or an unknown id. */
gpointer gst_gpunet_classify_prop_field (struct _GstGpunetClassify * self, guint prop_id);
/* Store / read a field by the value's fundamental type (enums are int-sized); the
 * caller holds the object lock. */
void gst_gpunet_prop_field_set (gpointer p, const GValue * value);
void gst_gpunet_prop_field_get (gconstpointer p, GValue * value);
/* Every field-backed property at its param spec's default (instance init). */
void gst_gpunet_classify_props_init (struct _GstGpunetClassify * self);
/* Snapshots of the properties, each taken under the object lock: what a model load
 * needs, and the DeepStream settings. */
void gst_gpunet_classify_read_model_args (struct _GstGpunetClassify * self,
    GstGpunetModelArgs * a);
void gst_gpunet_classify_read_nvds_props (struct _GstGpunetClassify * self,
    GstGpunetNvdsProps * p);

G_END_DECLS

#endif
