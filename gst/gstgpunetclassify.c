/* gstgpunetclassify.c: the gpunetclassify element: properties (object lock), caps,
 * pads, chain, start/stop.  The chain plans each frame (gstgpunetframe.c), queues it
 * (gstgpunetqueue.c: its src task pushes in order) and submits it to the model in use
 * (gstgpunetmodel.c: context and hot swap); gstgpunetrecords.c makes the records. */

/**
 * SECTION:element-gpunetclassify
 * @title: gpunetclassify
 *
 * Classifies video frames (or, with #GstGpunetClassify:roi-mode, the regions an
 * upstream detector marked with #GstVideoRegionOfInterestMeta) with an NVIDIA GPUNet
 * and attaches the top-k classes to each buffer as a #GstCustomMeta named
 * `GstGpunetClassificationMeta` (`model`, `label`, `label-id`, `confidence`, `ids`,
 * `labels`, `scores` best first, `num-classes`, `roi-id`, `inferred`); frames pass
 * through untouched. Optional bus messages (#GstGpunetClassify:post-messages) and JSON
 * lines (#GstGpunetClassify:json-output) carry the same records. `checkpoint` (NVIDIA's
 * `.pth.tar` or `.safetensors`) is required; `model` is a built-in name (gpunet-0 ...
 * gpunet-d2, or NVIDIA's latency names) or an architecture JSON. System memory works on
 * every backend; `video/x-raw(memory:CUDAMemory)` is classified in place on the GPU.
 * Elements with the same model, checkpoint, backend, precision and device share one
 * batching engine (#GstGpunetClassify:share-engine); each pushes its buffers in input
 * order from its own task. docs/element.md is the full reference.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 -m videotestsrc num-buffers=30 ! gpunetclassify checkpoint=0.65ms.pth.tar post-messages=true ! fakesink
 * ]| Classifies 30 test frames and prints one bus message per frame.
 * |[
 * gst-launch-1.0 filesrc location=clip.mp4 ! parsebin ! nvh264dec ! \
 *     gpunetclassify backend=cuda checkpoint=0.65ms.pth.tar ! fakesink
 * ]| Classifies NVDEC's frames where the decoder left them, in GPU memory.
 * |[
 * gst-launch-1.0 v4l2src ! videoconvert ! facedetect display=false ! \
 *     gpunetclassify model=my-gpunet.json checkpoint=my-faces.pth.tar \
 *     labels=my-faces.txt roi-mode=regions roi-types=face ! fakesink
 * ]| Classifies each face facedetect found with a GPUNet trained on face classes.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "gstgpunetanalytics.h"
#include "gstgpunetclassify.h"
#include "gstgpunetcuda.h"
#include "gstgpunetframe.h"
#include "gstgpunetlive.h"
#include "gstgpunetmodel.h"
#include "gstgpunetnvmm.h"
#include "gstgpunetqueue.h"
#include "gstgpunetrecords.h"
#include "gstgpunetroi.h"
#include "gstgpunetstats.h"

GST_DEBUG_CATEGORY_STATIC (gst_gpunet_classify_debug);
#define GST_CAT_DEFAULT gst_gpunet_classify_debug


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
  PROP_RECLASSIFY_INTERVAL,
  PROP_TRACK_TIMEOUT,
  PROP_ROI_SKIPPED_SMALL,
  PROP_ROI_SKIPPED_OUTSIDE,
  PROP_WHEN_BUSY,
  PROP_STATS_INTERVAL,
  PROP_STATS,
  PROP_NVDS_LIB_DIR,
  PROP_OPERATE_ON_GIE_ID,
  PROP_OPERATE_ON_CLASS_IDS,
  PROP_GIE_UNIQUE_ID,
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

  /* streaming thread (chain, sink events) */
  GstVideoInfo info;
  gboolean have_caps;
  gboolean nvmm_caps;           /* the caps are video/x-raw(memory:NVMM) */
  GstSegment segment;
  guint64 frame_count;
  gint skip;                    /* when-busy as resolved for this stream, -1 = not yet */
};

#define gst_gpunet_classify_parent_class parent_class
G_DEFINE_TYPE (GstGpunetClassify, gst_gpunet_classify, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (gpunetclassify, "gpunetclassify", GST_RANK_NONE,
    GST_TYPE_GPUNET_CLASSIFY);

static void gst_gpunet_classify_finalize (GObject * object);
static void gst_gpunet_classify_notify (GObject * object, GParamSpec * pspec);
static void gst_gpunet_classify_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_gpunet_classify_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static GstStateChangeReturn gst_gpunet_classify_change_state (GstElement *
    element, GstStateChange transition);
static void gst_gpunet_classify_set_context (GstElement * element,
    GstContext * context);
static GstFlowReturn gst_gpunet_classify_chain (GstPad * pad,
    GstObject * parent, GstBuffer * buf);
static gboolean gst_gpunet_classify_sink_event (GstPad * pad,
    GstObject * parent, GstEvent * event);
static gboolean gst_gpunet_classify_sink_query (GstPad * pad,
    GstObject * parent, GstQuery * query);
static gboolean gst_gpunet_classify_src_query (GstPad * pad,
    GstObject * parent, GstQuery * query);
static gboolean gst_gpunet_classify_src_activate_mode (GstPad * pad,
    GstObject * parent, GstPadMode mode, gboolean active);
static gboolean gst_gpunet_classify_sink_activate_mode (GstPad * pad,
    GstObject * parent, GstPadMode mode, gboolean active);
static void read_swap_args (GstElement * element, GstGpunetModelArgs * a);
static GstBuffer *finish_frame (gpointer data, gpunet_status status,
    const gchar * error, gpunet_class_score * scores, gpointer user_data);
static void queued_event (GstEvent * event, gpointer user_data);
static void queue_blocked (gpointer user_data);
static void cancel_frames (gpointer * frames, guint n, gpointer user_data);
static void stats_engine (GstElement * element, GstGpunetStatsEngine * out,
    gpointer * to_free);

/* ---- NVMM input (gstgpunetnvmm.c) ---------------------------------------------- */

/* The DeepStream properties as they are now (NVMM settings at start, caps). */
static void
read_nvds_props (GstGpunetClassify * self, GstGpunetNvdsProps * p)
{
  GST_OBJECT_LOCK (self);
  p->lib_dir = g_strdup (self->nvds_lib_dir);
  p->class_ids = g_strdup (self->operate_on_class_ids);
  p->operate_on_gie_id = self->operate_on_gie_id;
  p->gie_unique_id = self->gie_unique_id;
  p->interval = self->interval;
  GST_OBJECT_UNLOCK (self);
}

/* ---- class ----------------------------------------------------------------------- */

static void
gst_gpunet_classify_class_init (GstGpunetClassifyClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;
  GstCaps *caps;

  GST_DEBUG_CATEGORY_INIT (gst_gpunet_classify_debug, "gpunetclassify", 0,
      "GPUNet image classification");

  gobject_class->set_property = gst_gpunet_classify_set_property;
  gobject_class->get_property = gst_gpunet_classify_get_property;
  gobject_class->finalize = gst_gpunet_classify_finalize;
  gobject_class->notify = gst_gpunet_classify_notify;

  g_object_class_install_property (gobject_class, PROP_MODEL,
      g_param_spec_string ("model", "Model",
          "Built-in architecture (gpunet-0, gpunet-1, gpunet-2, gpunet-p0, "
          "gpunet-p1, gpunet-d1, gpunet-d2, or a latency name such as 0.65ms) "
          "or the path of an architecture JSON in NVIDIA's format",
          DEFAULT_MODEL, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_CHECKPOINT,
      g_param_spec_string ("checkpoint", "Checkpoint",
          "Weights file matching the model (required): NVIDIA's .pth.tar/.pth "
          "checkpoint or a .safetensors file. Setting model or checkpoint while "
          "playing loads the new model beside the running one and switches to "
          "it at a frame boundary (message gpunetclassify-model-changed); a "
          "load that fails keeps the old model and posts a warning",
          DEFAULT_CHECKPOINT, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_LABELS,
      g_param_spec_string ("labels", "Labels",
          "Text file with one class label per line, as many lines as the model "
          "has classes (default: the built-in ImageNet-1k names for 1000-class "
          "models, else class-<id>)",
          DEFAULT_LABELS, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_TOP_K,
      g_param_spec_uint ("top-k", "Top k",
          "Number of best classes listed in each result (capped at the model's "
          "number of classes)", 1, GST_GPUNET_MAX_TOP_K, DEFAULT_TOP_K,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_THRESHOLD,
      g_param_spec_float ("threshold", "Threshold",
          "Only classes whose probability is at least this are listed in "
          "ids/labels/scores; the top-1 fields (label, label-id, confidence) "
          "are always set and a result is never dropped", 0.0f, 1.0f,
          DEFAULT_THRESHOLD, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_BACKEND,
      g_param_spec_enum ("backend", "Backend",
          "Compute backend", GST_TYPE_GPUNET_BACKEND, DEFAULT_BACKEND,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_RESIZE_MODE,
      g_param_spec_enum ("resize-mode", "Resize mode",
          "How a frame is fitted to the model's square input",
          GST_TYPE_GPUNET_RESIZE_MODE, DEFAULT_RESIZE_MODE,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_CROP_PCT,
      g_param_spec_float ("crop-pct", "Crop percentage",
          "Centre-crop fraction for resize-mode=center-crop (0 = the model's "
          "default: 1.0 for GPUNet-0/1/2/D1/D2, 0.875 for P0/P1)", 0.0f, 1.0f,
          DEFAULT_CROP_PCT, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_INTERVAL,
      g_param_spec_uint ("interval", "Interval",
          "0 = classify every frame; N = classify one frame, then attach its "
          "result to the next N frames marked inferred=false (a region's "
          "result is carried by its roi-id)", 0, G_MAXUINT,
          DEFAULT_INTERVAL, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_POST_MESSAGES,
      g_param_spec_boolean ("post-messages", "Post messages",
          "Post an element message named gpunetclassify on the bus for every "
          "record, frame or region (the record's fields, roi-id included, plus "
          "timestamp, running-time and frame)",
          DEFAULT_POST_MESSAGES, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_N_THREADS,
      g_param_spec_uint ("n-threads", "Threads",
          "CPU backend threads (0 = all cores)", 0, 1024, DEFAULT_N_THREADS,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_PRECISION,
      g_param_spec_enum ("precision", "Precision",
          "Arithmetic of the CUDA backend (the CPU backends always run fp32)",
          GST_TYPE_GPUNET_PRECISION, DEFAULT_PRECISION,
          rw | GST_PARAM_MUTABLE_READY));
  /**
   * GstGpunetClassify:batch-size:
   *
   * The most images (frames and region crops, of every element sharing the
   * engine) the engine classifies in one pass. Frames are never held back to
   * fill a batch unless #GstGpunetClassify:batch-timeout says so: a pass takes
   * what is queued when the engine becomes free.
   */
  g_object_class_install_property (gobject_class, PROP_BATCH_SIZE,
      g_param_spec_uint ("batch-size", "Batch size",
          "Most images (frames, region crops; of all elements sharing the "
          "engine) per engine pass", 1, MAX_BATCH_SIZE,
          DEFAULT_BATCH_SIZE, rw | GST_PARAM_MUTABLE_READY));
  /**
   * GstGpunetClassify:roi-mode:
   *
   * What is classified: `frame` the whole frame (a GstCustomMeta on the
   * buffer), `regions` each #GstVideoRegionOfInterestMeta of the buffer whose
   * type is in #GstGpunetClassify:roi-types (a parameter structure on that
   * meta; the frame gets no record), `both` the two. A region is cropped to
   * the frame, skipped when empty; NV12/I420 crops start at even coordinates.
   */
  g_object_class_install_property (gobject_class, PROP_ROI_MODE,
      g_param_spec_enum ("roi-mode", "ROI mode",
          "What is classified: the whole frame, each region of interest meta "
          "(GstVideoRegionOfInterestMeta of the types in roi-types: the "
          "region's rectangle clipped to the frame, the result added to that "
          "meta as a parameter structure), or both",
          GST_TYPE_GPUNET_ROI_MODE, DEFAULT_ROI_MODE,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_ROI_TYPES,
      g_param_spec_string ("roi-types", "ROI types",
          "Comma-separated region types (the roi_type of upstream's region "
          "metas, e.g. \"face,person\") classified with roi-mode=regions or "
          "both; empty = every region", DEFAULT_ROI_TYPES,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_JSON_OUTPUT,
      g_param_spec_string ("json-output", "JSON output",
          "File written with one JSON object per record (frame and each "
          "region), one per line: pts, frame, roi-id, model, label, label-id, "
          "confidence, ids, labels, scores, inferred. Created or truncated at "
          "start, flushed after every buffer; empty = off", DEFAULT_JSON_OUTPUT,
          rw | GST_PARAM_MUTABLE_READY));

  g_object_class_install_property (gobject_class, PROP_SHARE_ENGINE,
      g_param_spec_boolean ("share-engine", "Share engine",
          "Share one engine (weights, session, threads, batches) with the "
          "other elements of this process that use the same model, "
          "checkpoint file, backend, precision and device; results are the "
          "same either way", DEFAULT_SHARE_ENGINE,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_BATCH_TIMEOUT,
      g_param_spec_uint64 ("batch-timeout", "Batch timeout",
          "Microseconds a partial batch may wait for more frames before the "
          "engine runs it (0 = run what is queued as soon as the engine is "
          "free: no added latency)", 0, MAX_BATCH_TIMEOUT,
          DEFAULT_BATCH_TIMEOUT, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_PASSES_IN_FLIGHT,
      g_param_spec_uint ("passes-in-flight", "Passes in flight",
          "Forward passes the engine runs at once, each on a session of its "
          "own (on CUDA its own stream and buffers), so one batch is uploaded "
          "while another runs; costs the session's memory once more per pass "
          "and gains nothing on the CPU backends; results and their order are "
          "the same", 1, 4, DEFAULT_PASSES_IN_FLIGHT,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_MAX_IN_FLIGHT,
      g_param_spec_uint ("max-in-flight", "Max in flight",
          "Frames this element may have queued in the engine before it blocks "
          "upstream (bounds memory; upstream pools are asked for this many "
          "more buffers)", 1, 256, DEFAULT_MAX_IN_FLIGHT,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_SMOOTHING,
      g_param_spec_float ("smoothing", "Smoothing",
          "0 = off; else the weight of the past in an exponential moving "
          "average of each stream's class probabilities (per roi-id), applied "
          "before top-k; the frame's own top-1 stays in the record as "
          "raw-label, raw-label-id, raw-confidence", 0.0f, 0.99f,
          DEFAULT_SMOOTHING, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_LABEL_HOLD,
      g_param_spec_uint ("label-hold", "Label hold",
          "Classified frames the (smoothed) top-1 must hold before a "
          "gpunetclassify-label-changed message announces it", 1, 10000,
          DEFAULT_LABEL_HOLD, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_DEVICE_ID,
      g_param_spec_int ("device-id", "Device id",
          "CUDA device: -1 = the CUDA context the neighbouring elements share "
          "(else device 0); N = GPU N (a neighbour's context on another device "
          "is not used, with a warning, and its frames are copied through "
          "system memory)", -1, 1024, DEFAULT_DEVICE_ID,
          rw | GST_PARAM_MUTABLE_READY));
  /**
   * GstGpunetClassify:analytics-meta:
   *
   * Where GStreamer's analytics library was built in (1.24+): each record is
   * also a GstAnalyticsClsMtd (top-k best first, labels as quarks) in the
   * buffer's GstAnalyticsRelationMeta, a region's related to its box
   * (GstAnalyticsODMtd). Built against 1.22 it is FALSE and setting it TRUE
   * only warns at start. gst-inspect's text says which this build is.
   */
  g_object_class_install_property (gobject_class, PROP_ANALYTICS_META,
      g_param_spec_boolean ("analytics-meta", "Analytics meta",
          gst_gpunet_analytics_available ()?
          "Also attach each record as a GstAnalyticsClsMtd (top-k best first, "
          "labels as quarks) in the buffer's GstAnalyticsRelationMeta, a "
          "region's related (RELATE_TO) to its GstAnalyticsODMtd box, made "
          "from the region meta when there is none; GstGpunetClassificationMeta "
          "is attached either way" :
          "Not available in this build (GStreamer < 1.24 or no "
          "gstreamer-analytics-1.0): only GstGpunetClassificationMeta is "
          "attached; setting it true warns at start",
          DEFAULT_ANALYTICS_META, rw | GST_PARAM_MUTABLE_PLAYING));
  /* regions: size filter and per-object re-classification (gstgpunettrack.c) */
  g_object_class_install_property (gobject_class, PROP_ROI_MIN_SIZE,
      g_param_spec_uint ("roi-min-size", "ROI minimum size",
          "Regions whose width or height inside the frame is under this many "
          "pixels are skipped and counted (roi-skipped-small), not classified "
          "blurred (0 = take every size)", 0, G_MAXINT, DEFAULT_ROI_MIN_SIZE,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_RECLASSIFY_INTERVAL,
      g_param_spec_uint ("reclassify-interval", "Re-classify interval",
          "GStreamer 1.24+: a box related to a tracker's object "
          "(GstAnalyticsTrackingMtd) is "
          "classified when the object is new and then every N frames; the "
          "frames between carry its last result (inferred=false).  0 = every "
          "frame.  Boxes without a tracker's id follow interval", 0,
          G_MAXUINT, DEFAULT_RECLASSIFY_INTERVAL,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_TRACK_TIMEOUT,
      g_param_spec_uint ("track-timeout", "Track timeout",
          "A tracked object unseen for more than this many frames is "
          "forgotten: seen again, it is new and classified", 0, G_MAXUINT,
          DEFAULT_TRACK_TIMEOUT, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_ROI_SKIPPED_SMALL,
      g_param_spec_uint ("roi-skipped-small", "Regions skipped as small",
          "Regions skipped since start as under roi-min-size", 0, G_MAXUINT,
          0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property (gobject_class, PROP_ROI_SKIPPED_OUTSIDE,
      g_param_spec_uint ("roi-skipped-outside", "Regions skipped as outside",
          "Regions skipped since start as wholly outside the frame or empty "
          "(each one also a GST_WARNING naming the frame and the box)", 0,
          G_MAXUINT, 0, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  /**
   * GstGpunetClassify:when-busy:
   *
   * What a frame does when this element's frames fill their engine: `wait`
   * holds upstream until there is room (every frame is classified), `skip`
   * passes it on at once with the stream's last result (inferred=false,
   * counted as skipped in #GstGpunetClassify:stats), so no frame waits behind
   * more than one pass of its engine; `auto` skips when upstream is live.
   */
  g_object_class_install_property (gobject_class, PROP_WHEN_BUSY,
      g_param_spec_enum ("when-busy", "When busy",
          "When the engine is busy (this element's max-in-flight frames in it, "
          "its share of the places in the pass running and the next one, or "
          "the images queued in it fill its next pass): wait = hold upstream "
          "until there is room; skip = pass the frame on at once (after the "
          "frames before it) with the stream's last result (inferred=false, "
          "counted as skipped), so latency stays within about two passes; "
          "auto = skip when upstream is live (latency query), else wait",
          GST_TYPE_GPUNET_WHEN_BUSY,
          DEFAULT_WHEN_BUSY, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_STATS_INTERVAL,
      g_param_spec_uint ("stats-interval", "Stats interval",
          "Milliseconds between gpunetclassify-stats element messages (the "
          "stats property's structure); 0 = none", 0, G_MAXUINT,
          DEFAULT_STATS_INTERVAL, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Stats",
          "Counters since start (a gpunetclassify-stats structure): frames-in, "
          "classified, carried, skipped, failed, dropped, queue-depth, "
          "latency-p50-ms, latency-p99-ms (last 1024 frames, buffer in to "
          "buffer out), latency-count, latency-sum-ms, latency-buckets and "
          "latency-bucket-bounds-ms (cumulative histogram), fps, "
          "batch-occupancy, pass-mean-ms, engine-id, model; readable once "
          "stopped, reset at start", GST_TYPE_STRUCTURE,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  gst_gpunet_nvmm_install_properties (gobject_class, PROP_NVDS_LIB_DIR,
      PROP_OPERATE_ON_GIE_ID, PROP_OPERATE_ON_CLASS_IDS, PROP_GIE_UNIQUE_ID);
  g_object_class_install_property (gobject_class, PROP_ENGINE_ID,
      g_param_spec_uint ("engine-id", "Engine id",
          "Serial number of the engine this element uses (elements sharing "
          "one show the same number; 0 = none)", 0, G_MAXUINT, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /* gst-inspect says which metas this build attaches */
  gst_element_class_set_metadata (element_class,
      "GPUNet classifier", "Filter/Analyzer/Video",
      gst_gpunet_analytics_available ()?
      "Classifies video frames (or their regions) with an NVIDIA GPUNet model "
      "and attaches the top-k classes as GstGpunetClassificationMeta and, with "
      "analytics-meta, as GstAnalyticsClsMtd (this build has GstAnalytics)" :
      "Classifies video frames (or their regions) with an NVIDIA GPUNet model "
      "and attaches the top-k classes as GstGpunetClassificationMeta (this "
      "build has no GstAnalytics: GStreamer < 1.24)", "gst-gpunet developers");
  /* CUDAMemory caps come first when built with GStreamer's CUDA library */
  caps = gst_gpunet_cuda_template_caps (GST_VIDEO_CAPS_MAKE (VIDEO_FORMATS));
  /* NVMM: offered by caps queries only where DeepStream's libraries load */
  gst_gpunet_nvmm_add_template_caps (caps);
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
  gst_element_class_add_pad_template (element_class,
      gst_pad_template_new ("src", GST_PAD_SRC, GST_PAD_ALWAYS, caps));
  gst_caps_unref (caps);
  element_class->set_context =
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_set_context);
  element_class->change_state =
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_change_state);

  gst_type_mark_as_plugin_api (GST_TYPE_GPUNET_BACKEND, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPUNET_RESIZE_MODE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPUNET_PRECISION, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPUNET_ROI_MODE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPUNET_WHEN_BUSY, 0);
}

static void
gst_gpunet_classify_init (GstGpunetClassify * self)
{
  GstElementClass *klass = GST_ELEMENT_GET_CLASS (self);

  self->sinkpad = gst_pad_new_from_template
      (gst_element_class_get_pad_template (klass, "sink"), "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_sink_event));
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_sink_query));
  gst_pad_set_activatemode_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_sink_activate_mode));
  GST_PAD_SET_PROXY_ALLOCATION (self->sinkpad);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_template
      (gst_element_class_get_pad_template (klass, "src"), "src");
  gst_pad_set_query_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_src_query));
  gst_pad_set_activatemode_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_src_activate_mode));
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->model_name = g_strdup (DEFAULT_MODEL);
  self->checkpoint = g_strdup (DEFAULT_CHECKPOINT);
  self->labels_path = g_strdup (DEFAULT_LABELS);
  self->top_k = DEFAULT_TOP_K;
  self->threshold = DEFAULT_THRESHOLD;
  self->backend = DEFAULT_BACKEND;
  self->resize_mode = DEFAULT_RESIZE_MODE;
  self->crop_pct = DEFAULT_CROP_PCT;
  self->interval = DEFAULT_INTERVAL;
  self->post_messages = DEFAULT_POST_MESSAGES;
  self->n_threads = DEFAULT_N_THREADS;
  self->precision = DEFAULT_PRECISION;
  self->batch_size = DEFAULT_BATCH_SIZE;
  self->roi_mode = DEFAULT_ROI_MODE;
  self->roi_types = g_strdup (DEFAULT_ROI_TYPES);
  self->roi_type_quarks = gst_gpunet_roi_types_parse (self->roi_types);
  self->json_output = g_strdup (DEFAULT_JSON_OUTPUT);
  self->share_engine = DEFAULT_SHARE_ENGINE;
  self->batch_timeout = DEFAULT_BATCH_TIMEOUT;
  self->passes_in_flight = DEFAULT_PASSES_IN_FLIGHT;
  self->max_in_flight = DEFAULT_MAX_IN_FLIGHT;
  self->smoothing = DEFAULT_SMOOTHING;
  self->label_hold = DEFAULT_LABEL_HOLD;
  self->device_id = DEFAULT_DEVICE_ID;
  self->analytics_meta = DEFAULT_ANALYTICS_META;
  self->roi_min_size = DEFAULT_ROI_MIN_SIZE;
  self->reclassify_interval = DEFAULT_RECLASSIFY_INTERVAL;
  self->track_timeout = DEFAULT_TRACK_TIMEOUT;
  self->when_busy = DEFAULT_WHEN_BUSY;
  self->stats_interval = DEFAULT_STATS_INTERVAL;
  self->nvds_lib_dir = g_strdup (DEFAULT_NVDS_LIB_DIR);
  self->operate_on_gie_id = DEFAULT_OPERATE_ON_GIE_ID;
  self->operate_on_class_ids = g_strdup (DEFAULT_OPERATE_ON_CLASS_IDS);
  self->gie_unique_id = DEFAULT_GIE_UNIQUE_ID;
  self->nvmm = gst_gpunet_nvmm_new (GST_ELEMENT (self));
  self->cuda = gst_gpunet_cuda_new ();
  self->models = gst_gpunet_model_swap_new (GST_ELEMENT (self), read_swap_args);
  {
    const GstGpunetQueueFuncs funcs = { finish_frame, queued_event,
      cancel_frames, (GDestroyNotify) gst_gpunet_frame_free,
      queue_blocked
    };

    self->queue = gst_gpunet_queue_new (GST_ELEMENT (self), self->srcpad,
        &funcs, self);
  }
  self->records = gst_gpunet_records_new (GST_ELEMENT (self));
  self->planner = gst_gpunet_planner_new (GST_ELEMENT (self));
  self->stats = gst_gpunet_stats_new (GST_ELEMENT (self), stats_engine);
  self->skip = -1;
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
}

static void
gst_gpunet_classify_finalize (GObject * object)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (object);

  g_free (self->model_name);
  g_free (self->checkpoint);
  g_free (self->labels_path);
  g_free (self->roi_types);
  g_clear_pointer (&self->roi_type_quarks, g_array_unref);
  g_free (self->json_output);
  g_free (self->nvds_lib_dir);
  g_free (self->operate_on_class_ids);
  gst_gpunet_nvmm_free (self->nvmm);
  /* the loader may hold the last reference and run this: it is never joined */
  gst_gpunet_model_swap_free (self->models);
  gst_gpunet_queue_free (self->queue);
  gst_gpunet_records_free (self->records);
  gst_gpunet_planner_free (self->planner);
  gst_gpunet_stats_free (self->stats);
  gst_gpunet_cuda_free (self->cuda);

  G_OBJECT_CLASS (parent_class)->finalize (object);
}


/* Where each property lives in the instance (0: no field, PROP_ENGINE_ID, PROP_STATS); set and read
 * by the pspec's value type, under the object lock. */
#define F(field) G_STRUCT_OFFSET (GstGpunetClassify, field)
static const gsize prop_field[PROP_LAST] = {
  [PROP_MODEL] = F (model_name),[PROP_CHECKPOINT] = F (checkpoint),
  [PROP_LABELS] = F (labels_path),[PROP_TOP_K] = F (top_k),
  [PROP_THRESHOLD] = F (threshold),[PROP_BACKEND] = F (backend),
  [PROP_RESIZE_MODE] = F (resize_mode),[PROP_CROP_PCT] = F (crop_pct),
  [PROP_INTERVAL] = F (interval),[PROP_POST_MESSAGES] = F (post_messages),
  [PROP_N_THREADS] = F (n_threads),[PROP_PRECISION] = F (precision),
  [PROP_BATCH_SIZE] = F (batch_size),[PROP_ROI_MODE] = F (roi_mode),
  [PROP_ROI_TYPES] = F (roi_types),[PROP_JSON_OUTPUT] = F (json_output),
  [PROP_SHARE_ENGINE] = F (share_engine),[PROP_BATCH_TIMEOUT] = F (batch_timeout),
  [PROP_PASSES_IN_FLIGHT] = F (passes_in_flight),
  [PROP_MAX_IN_FLIGHT] = F (max_in_flight),[PROP_SMOOTHING] = F (smoothing),
  [PROP_LABEL_HOLD] = F (label_hold),[PROP_DEVICE_ID] = F (device_id),
  [PROP_ANALYTICS_META] = F (analytics_meta),
  [PROP_ROI_MIN_SIZE] = F (roi_min_size),
  [PROP_RECLASSIFY_INTERVAL] = F (reclassify_interval),
  [PROP_TRACK_TIMEOUT] = F (track_timeout),
  [PROP_WHEN_BUSY] = F (when_busy),[PROP_STATS_INTERVAL] = F (stats_interval),
  [PROP_NVDS_LIB_DIR] = F (nvds_lib_dir),
  [PROP_OPERATE_ON_GIE_ID] = F (operate_on_gie_id),
  [PROP_OPERATE_ON_CLASS_IDS] = F (operate_on_class_ids),
  [PROP_GIE_UNIQUE_ID] = F (gie_unique_id),
};
#undef F

/* Stores `value` into the field at `p` by its fundamental type (enums are int-sized). */
static void
field_set (gpointer p, const GValue * value)
{
  switch (G_TYPE_FUNDAMENTAL (G_VALUE_TYPE (value))) {
    case G_TYPE_STRING:
      g_free (*(gchar **) p);
      *(gchar **) p = g_value_dup_string (value);
      break;
    case G_TYPE_UINT:
      *(guint *) p = g_value_get_uint (value);
      break;
    case G_TYPE_INT:
      *(gint *) p = g_value_get_int (value);
      break;
    case G_TYPE_UINT64:
      *(guint64 *) p = g_value_get_uint64 (value);
      break;
    case G_TYPE_FLOAT:
      *(gfloat *) p = g_value_get_float (value);
      break;
    case G_TYPE_BOOLEAN:
      *(gboolean *) p = g_value_get_boolean (value);
      break;
    case G_TYPE_ENUM:
      *(gint *) p = g_value_get_enum (value);
      break;
    default:
      g_assert_not_reached ();
  }
}

static void
field_get (gconstpointer p, GValue * value)
{
  switch (G_TYPE_FUNDAMENTAL (G_VALUE_TYPE (value))) {
    case G_TYPE_STRING:
      g_value_set_string (value, *(gchar * const *) p);
      break;
    case G_TYPE_UINT:
      g_value_set_uint (value, *(const guint *) p);
      break;
    case G_TYPE_INT:
      g_value_set_int (value, *(const gint *) p);
      break;
    case G_TYPE_UINT64:
      g_value_set_uint64 (value, *(const guint64 *) p);
      break;
    case G_TYPE_FLOAT:
      g_value_set_float (value, *(const gfloat *) p);
      break;
    case G_TYPE_BOOLEAN:
      g_value_set_boolean (value, *(const gboolean *) p);
      break;
    case G_TYPE_ENUM:
      g_value_set_enum (value, *(const gint *) p);
      break;
    default:
      g_assert_not_reached ();
  }
}

static void
gst_gpunet_classify_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (object);
  gboolean ignored = FALSE;

  if (prop_id >= PROP_LAST || prop_field[prop_id] == 0) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    return;
  }
  GST_OBJECT_LOCK (self);
  if ((pspec->flags & GST_PARAM_MUTABLE_READY)
      && GST_STATE (self) > GST_STATE_READY) {
    ignored = TRUE;
  } else {
    /* model/checkpoint: a load reading the pair now is stale from here on, superseded
     * before the new value can be read beside the other's old one */
    if ((prop_id == PROP_MODEL || prop_id == PROP_CHECKPOINT)
        && GST_STATE (self) > GST_STATE_READY) {
      gst_gpunet_model_swap_invalidate (self->models);
      self->swap_wanted = TRUE;
    }
    field_set (G_STRUCT_MEMBER_P (self, prop_field[prop_id]), value);
    if (prop_id == PROP_BACKEND)
      gst_gpunet_cuda_set_may_use (self->cuda,
          self->backend == GST_GPUNET_BACKEND_AUTO
          || self->backend == GST_GPUNET_BACKEND_CUDA);
    if (prop_id == PROP_ROI_TYPES) {
      /* the streaming thread holds its own reference while it uses a list */
      g_clear_pointer (&self->roi_type_quarks, g_array_unref);
      self->roi_type_quarks = gst_gpunet_roi_types_parse (self->roi_types);
    }
  }
  GST_OBJECT_UNLOCK (self);

  /* where a user sees it: a bus warning, never a silent drop */
  if (ignored)
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("Property '%s' can only be changed in the NULL or READY state; the "
            "new value is ignored until the element is stopped and started "
            "again", pspec->name), ("set while %s",
            gst_element_state_get_name (GST_STATE (self))));
}

static void
gst_gpunet_classify_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (object);

  if (prop_id == PROP_ENGINE_ID) {
    g_value_set_uint (value, gst_gpunet_model_swap_engine_id (self->models));
    return;
  }
  if (prop_id == PROP_ROI_SKIPPED_SMALL || prop_id == PROP_ROI_SKIPPED_OUTSIDE) {
    guint small, outside;

    gst_gpunet_planner_skipped (self->planner, &small, &outside);
    g_value_set_uint (value, prop_id == PROP_ROI_SKIPPED_SMALL ? small : outside);
    return;
  }
  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, gst_gpunet_stats_structure (self->stats));
    return;
  }
  if (prop_id >= PROP_LAST || prop_field[prop_id] == 0) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    return;
  }
  GST_OBJECT_LOCK (self);
  field_get (G_STRUCT_MEMBER_P (self, prop_field[prop_id]), value);
  GST_OBJECT_UNLOCK (self);
}

/* A model/checkpoint pair is applied as one: g_object_set (el, "model", m, "checkpoint",
 * c, NULL) queues both notifications until both values are stored, so the swap starts
 * here, once, with the pair. */
static void
gst_gpunet_classify_notify (GObject * object, GParamSpec * pspec)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (object);
  gboolean swap;

  if (G_OBJECT_CLASS (parent_class)->notify)
    G_OBJECT_CLASS (parent_class)->notify (object, pspec);
  if (strcmp (pspec->name, "stats-interval") == 0) {
    guint ms;

    GST_OBJECT_LOCK (self);
    ms = self->stats_interval;
    GST_OBJECT_UNLOCK (self);
    gst_gpunet_stats_set_interval (self->stats, ms);
    return;
  }
  if (strcmp (pspec->name, "model") && strcmp (pspec->name, "checkpoint"))
    return;
  GST_OBJECT_LOCK (self);
  swap = self->swap_wanted;
  self->swap_wanted = FALSE;
  GST_OBJECT_UNLOCK (self);
  if (swap)
    gst_gpunet_model_swap_begin (self->models);
}


/* ---- start and stop ------------------------------------------------------------ */

/* What loading a model needs, from the properties as they are now. */
static void
read_model_args (GstGpunetClassify * self, GstGpunetModelArgs * a)
{
  memset (a, 0, sizeof *a);
  GST_OBJECT_LOCK (self);
  a->model = g_strdup (self->model_name ? self->model_name : DEFAULT_MODEL);
  a->checkpoint = g_strdup (self->checkpoint);
  a->labels = g_strdup (self->labels_path);
  a->req.backend = (gpunet_backend_kind) self->backend;
  a->req.precision = (gpunet_precision) self->precision;
  a->req.n_threads = self->n_threads;
  a->req.batch_size = self->batch_size;
  a->req.batch_timeout_us = (gint64) self->batch_timeout;
  a->req.passes_in_flight = self->passes_in_flight;
  a->req.share = self->share_engine;
  a->req.device = self->device_id > 0 ? self->device_id : 0;
  GST_OBJECT_UNLOCK (self);
  a->req.model = a->model;
  a->req.checkpoint = a->checkpoint;
}

/* GstGpunetModelArgsFunc of a swap: in the CUDA context the element started with. */
static void
read_swap_args (GstElement * element, GstGpunetModelArgs * a)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (element);

  read_model_args (self, a);
  a->req.cuda_context = gst_gpunet_cuda_context_ref (self->cuda);
}

/* READY->PAUSED: the JSON file, the model, the labels. Posts the error and returns
 * FALSE when something cannot be set up. */
static gboolean
gst_gpunet_classify_start (GstGpunetClassify * self)
{
  GstGpunetModelArgs a;
  gchar *json_path;
  gboolean roi_types_set, have_checkpoint, analytics, ok;
  GstGpunetRoiMode mode;
  GstGpunetModelCtx *c = NULL;
  GstGpunetNvdsProps nvds;
  gint device = 0, device_id;
  guint limit, stats_ms;

  read_model_args (self, &a);
  GST_OBJECT_LOCK (self);
  self->pre.resize_mode = (gpunet_resize_mode) self->resize_mode;
  self->pre.crop_pct = self->crop_pct;
  mode = self->roi_mode;
  roi_types_set = self->roi_type_quarks != NULL;
  json_path = g_strdup (self->json_output);
  device_id = self->device_id;
  limit = self->max_in_flight;
  analytics = self->analytics_meta;
  stats_ms = self->stats_interval;
  GST_OBJECT_UNLOCK (self);
  have_checkpoint = a.checkpoint != NULL && *a.checkpoint != '\0';

  if (have_checkpoint && roi_types_set && mode == GST_GPUNET_ROI_MODE_FRAME)
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("roi-types is set, but roi-mode is 'frame', so no region is "
            "classified: set roi-mode=regions (or both), or clear roi-types"),
        ("roi-types is only read with roi-mode regions or both"));

  if (analytics && !gst_gpunet_analytics_available ())
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("analytics-meta is true, but this build has no GstAnalytics "
            "(built against GStreamer < 1.24 or without gstreamer-analytics-1.0): "
            "only GstGpunetClassificationMeta is attached"), (NULL));

  /* the JSON file before the model: a wrong path fails fast */
  ok = gst_gpunet_records_start (self->records, have_checkpoint ? json_path :
      NULL);
  /* a CUDA engine lives in the GstCudaContext shared with the neighbours */
  if (ok && (a.req.backend == GPUNET_BACKEND_AUTO
          || a.req.backend == GPUNET_BACKEND_CUDA)
      && gst_gpunet_cuda_open (self->cuda, GST_ELEMENT (self), device_id,
          &device)) {
    a.req.device = device;
    a.req.cuda_context = gst_gpunet_cuda_context_ref (self->cuda);
  }
  if (ok)
    c = gst_gpunet_model_ctx_open (GST_ELEMENT (self), &a);
  g_free (json_path);
  gst_gpunet_model_args_clear (&a);
  if (c == NULL) {
    gst_gpunet_records_stop (self->records);
    gst_gpunet_cuda_close (self->cuda);
    return FALSE;
  }

  gst_gpunet_cuda_set_device_path (self->cuda,
      g_strcmp0 (gpunet_engine_backend_name (c->shared->engine), "cuda") == 0);
  read_nvds_props (self, &nvds);
  if (!gst_gpunet_nvmm_start (self->nvmm, &nvds, mode != GST_GPUNET_ROI_MODE_FRAME,
          device_id, device, g_strcmp0 (gpunet_engine_backend_name
              (c->shared->engine), "cuda") == 0)) {
    gst_gpunet_model_ctx_unref (c);
    gst_gpunet_records_stop (self->records);
    gst_gpunet_cuda_close (self->cuda);
    return FALSE;
  }
  gst_gpunet_model_swap_set (self->models, c);
  gst_gpunet_queue_set_limit (self->queue, limit);
  gst_gpunet_planner_start (self->planner, mode != GST_GPUNET_ROI_MODE_REGIONS,
      mode != GST_GPUNET_ROI_MODE_FRAME);
  self->frame_count = 0;
  self->have_caps = FALSE;
  self->skip = -1;
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
  gst_gpunet_stats_start (self->stats, stats_ms);
  return TRUE;
}

/* PAUSED->READY, after the pads stopped: nothing of ours runs any more. */
static void
gst_gpunet_classify_stop (GstGpunetClassify * self)
{
  gst_gpunet_stats_stop (self->stats);
  gst_gpunet_model_swap_stop (self->models);
  gst_gpunet_queue_drop (self->queue);
  gst_gpunet_cuda_close (self->cuda);
  gst_gpunet_planner_stop (self->planner);
  gst_gpunet_records_stop (self->records);
  gst_gpunet_nvmm_stop (self->nvmm);
}

static GstStateChangeReturn
gst_gpunet_classify_change_state (GstElement * element,
    GstStateChange transition)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (element);
  GstStateChangeReturn ret;

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED
      && !gst_gpunet_classify_start (self))
    return GST_STATE_CHANGE_FAILURE;
  ret = GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE) {
    if (transition == GST_STATE_CHANGE_READY_TO_PAUSED)
      gst_gpunet_classify_stop (self);
    return ret;
  }
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_gpunet_classify_stop (self);
  return ret;
}

/* ---- caps ------------------------------------------------------------------------ */

/* The caps this element takes, given `caps` on the other side: the same caps, without
 * CUDA memory unless the engine reads it, within the pad template. */
static GstCaps *
allowed_caps (GstGpunetClassify * self, GstPad * pad, GstCaps * other,
    GstCaps * filter)
{
  GstCaps *templ = gst_pad_get_pad_template_caps (pad);
  GstCaps *caps = other ? gst_caps_intersect_full (other, templ,
      GST_CAPS_INTERSECT_FIRST) : gst_caps_ref (templ);
  GstCaps *ret = gst_gpunet_cuda_filter_caps (self->cuda, caps);

  gst_caps_unref (caps);
  gst_caps_unref (templ);
  {
    GstGpunetNvdsProps p;

    read_nvds_props (self, &p);
    ret = gst_gpunet_nvmm_filter_caps (ret, &p);
  }
  if (filter != NULL) {
    GstCaps *tmp = gst_caps_intersect_full (filter, ret,
        GST_CAPS_INTERSECT_FIRST);

    gst_caps_unref (ret);
    ret = tmp;
  }
  return ret;
}

/* Answers a caps query on `pad` from the peer of the other pad. */
static gboolean
query_caps (GstGpunetClassify * self, GstPad * pad, GstQuery * query)
{
  GstPad *other = pad == self->sinkpad ? self->srcpad : self->sinkpad;
  GstCaps *filter, *peer, *caps, *pf = NULL;

  gst_query_parse_caps (query, &filter);
  if (filter != NULL)
    pf = gst_gpunet_cuda_filter_caps (self->cuda, filter);
  peer = gst_pad_peer_query_caps (other, pf);
  if (pf != NULL)
    gst_caps_unref (pf);
  caps = allowed_caps (self, pad, peer, filter);
  gst_caps_unref (peer);
  gst_query_set_caps_result (query, caps);
  gst_caps_unref (caps);
  return TRUE;
}

/* CAPS event: the frame-to-engine mapping.  FALSE (error posted) when the caps
 * cannot be classified. */
static gboolean
set_caps (GstGpunetClassify * self, GstCaps * caps)
{
  GstVideoInfo info;
  gboolean cuda_engine;
  GstGpunetModelCtx *c;

  if (!gst_video_info_from_caps (&info, caps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Cannot classify video with caps %" GST_PTR_FORMAT, caps),
        ("gst_video_info_from_caps failed"));
    return FALSE;
  }
  c = gst_gpunet_model_swap_ref_current (self->models);
  cuda_engine = c != NULL && g_strcmp0 (gpunet_engine_backend_name
      (c->shared->engine), "cuda") == 0;
  gst_gpunet_model_ctx_unref (c);
  if (gst_gpunet_cuda_caps_are_cuda (caps) && !cuda_engine) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("CUDA memory frames need the CUDA backend, but this element runs on "
            "the CPU: set backend=cuda, or put cudadownload before "
            "gpunetclassify"), ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }

  self->nvmm_caps = gst_gpunet_nvmm_caps_are_nvmm (caps);
  if (self->nvmm_caps && !gst_gpunet_nvmm_set_caps (self->nvmm, caps, &info))
    return FALSE;
  if (!gst_gpunet_planner_set_info (self->planner, &info)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Unsupported video format %s: gpunetclassify takes " VIDEO_FORMATS
            "; put videoconvert before it", GST_VIDEO_INFO_NAME (&info)), (NULL));
    return FALSE;
  }
  self->info = info;
  self->have_caps = TRUE;
  return TRUE;
}

/* ---- per frame (streaming thread) ----------------------------------------------- */

/* A frame for `buf` with the settings its records keep; *types (a reference, or
 * NULL: every type), *interval and *rp (roi-min-size, reclassify-interval,
 * track-timeout) as the properties are now. */
static GstGpunetFrame *
frame_new (GstGpunetClassify * self, GstBuffer * buf, GArray ** types,
    guint * interval, GstGpunetRegionPolicy * rp)
{
  GstGpunetFrame *f = g_new0 (GstGpunetFrame, 1);

  GST_OBJECT_LOCK (self);
  f->rs.top_k = self->top_k;
  f->rs.threshold = self->threshold;
  f->rs.post = self->post_messages;
  f->rs.analytics = self->analytics_meta && gst_gpunet_analytics_available ();
  *interval = self->interval;
  rp->min_size = self->roi_min_size;
  rp->track.reclassify_interval = self->reclassify_interval;
  rp->track.track_timeout = self->track_timeout;
  /* GstAnalytics boxes: the interval only, so a track's schedule is exact */
  rp->track.reclassify_on_growth = FALSE;
  /* roi-types may be replaced while we use it */
  *types = self->roi_type_quarks ? g_array_ref (self->roi_type_quarks) : NULL;
  GST_OBJECT_UNLOCK (self);
  f->rs.frame_no = self->frame_count++;
  f->rs.running_time = gst_segment_to_running_time (&self->segment,
      GST_FORMAT_TIME, GST_BUFFER_PTS (buf));
  return f;
}

/* Hands the queued frame's images (freed here) to its engine.  `f` is the queue's
 * now: once its results are in, the src task may free it. */
static void
submit_images (GstGpunetClassify * self, GstGpunetFrame * f,
    GstGpunetQueueEntry * entry, gpunet_image * images)
{
  gpunet_engine *engine = f->ctx->shared->engine;
  int n = (int) f->n_images, k = (int) f->ctx->k;
  gchar *text = NULL;
  gpunet_status st;

  st = gpunet_engine_submit (engine, images, n, &self->pre, k, self,
      gst_gpunet_queue_done, entry, &text);
  g_free (images);
  /* this frame cannot be classified: it fails this element only */
  if (st != GPUNET_OK)
    gst_gpunet_queue_done (entry, st, text, NULL, 0, 0);
  free (text);
}

static GstFlowReturn
gst_gpunet_classify_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);
  GstGpunetQueueEntry *entry;
  gpunet_image *images = NULL;
  gchar *map_error = NULL;
  GstGpunetFrame *f;
  GArray *types;
  guint interval;
  GstGpunetRegionPolicy rp;
  gboolean full = FALSE;
  GstFlowReturn ret;

  (void) pad;
  if (G_UNLIKELY (!self->have_caps)) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("No caps before the first "
            "buffer"), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }
  f = frame_new (self, buf, &types, &interval, &rp);
  f->in_us = gst_gpunet_stats_frame_in (self->stats);

  /* room in the engine (when-busy=skip: whether there is), then a swapped-in
   * model at this frame boundary */
  if (self->skip < 0) {
    GstGpunetWhenBusy mode;

    GST_OBJECT_LOCK (self);
    mode = self->when_busy;
    GST_OBJECT_UNLOCK (self);
    self->skip = gst_gpunet_when_busy_skips (mode, self->sinkpad);
  }
  if (self->skip)
    ret = gst_gpunet_queue_check_room (self->queue, &full);
  else
    ret = gst_gpunet_queue_wait_room (self->queue);
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT (self, "dropping a buffer: %s", gst_flow_get_name (ret));
    gst_gpunet_stats_dropped (self->stats, 1);
    gst_buffer_unref (buf);
    gst_gpunet_frame_free (f);
    if (types)
      g_array_unref (types);
    return ret;
  }
  f->ctx = gst_gpunet_model_swap_take (self->models, &f->old_model);
  /* metadata is added to the buffer: it must be ours to write */
  f->buf = gst_buffer_make_writable (buf);
  if (self->nvmm_caps) {
    if (types)
      g_array_unref (types);
    if (f->old_model != NULL)
      gst_gpunet_nvmm_flush (self->nvmm);
    if (!gst_gpunet_nvmm_plan (self->nvmm, f, &images, &map_error)) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Frame %" G_GUINT64_FORMAT
              " (NVMM): %s", f->rs.frame_no, map_error), (NULL));
      g_free (map_error);
      gst_gpunet_frame_free (f);
      gst_gpunet_stats_failed (self->stats, 1);
      return GST_FLOW_ERROR;
    }
  } else {
    gst_gpunet_planner_set_region_policy (self->planner, &rp);
    gst_gpunet_planner_plan (self->planner, f, types, interval);
    if (types)
      g_array_unref (types);
    /* skip: a frame that would wait behind more than the engine's next pass goes
     * downstream with the last results, after the frames still in flight */
    if (self->skip && f->n_images > 0 && (full
            || gst_gpunet_engine_busy (f->ctx->shared,
                gst_gpunet_queue_in_engine (self->queue)))) {
      gst_gpunet_frame_mark_skipped (f);
      gst_gpunet_planner_retry (self->planner);
    }
  }

  if (!self->nvmm_caps && f->n_images > 0
      && (images = gst_gpunet_planner_map (self->planner,
              self->cuda, &self->info, f, &map_error)) == NULL) {
    if (map_error != NULL)
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Frame %" G_GUINT64_FORMAT
              ": %s", f->rs.frame_no, map_error), (NULL));
    else
      GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Cannot map the video frame "
              "%" G_GUINT64_FORMAT, f->rs.frame_no), (NULL));
    g_free (map_error);
    gst_gpunet_frame_free (f);
    gst_gpunet_stats_failed (self->stats, 1);
    return GST_FLOW_ERROR;
  }
  entry = gst_gpunet_queue_push_frame (self->queue, f,
      (gsize) f->n_images * f->ctx->k);
  if (images != NULL)
    submit_images (self, f, entry, images);
  return GST_FLOW_OK;
}

/* ---- the queue's callbacks (src task, drop) --------------------------------------- */

/* How a frame that is about to be pushed was served. */
static GstGpunetOutcome
frame_outcome (const GstGpunetFrame * f)
{
  gboolean carried_record = (f->frame_record && !f->frame_inferred)
      || (f->rois != NULL && f->rois->len > 0);

  if (f->skipped)
    return GST_GPUNET_OUTCOME_SKIPPED;
  if (f->n_images == 0 && carried_record)
    return GST_GPUNET_OUTCOME_CARRIED;
  return GST_GPUNET_OUTCOME_CLASSIFIED;
}

/* The queue's cancel callback: frames dropped (flush, stop) count as dropped. */
static void
cancel_frames (gpointer * frames, guint n, gpointer user_data)
{
  GstGpunetClassify *self = user_data;

  gst_gpunet_stats_dropped (self->stats, n);
  gst_gpunet_frames_cancel (frames, n, user_data);
}

/* The stats' engine part: this element's queue, its engine. */
static void
stats_engine (GstElement * element, GstGpunetStatsEngine * out,
    gpointer * to_free)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (element);
  GstGpunetModelCtx *c = gst_gpunet_model_swap_ref_current (self->models);

  out->queue_depth = gst_gpunet_queue_in_engine (self->queue);
  if (c != NULL && c->shared != NULL) {
    out->batch_occupancy = gst_gpunet_engine_occupancy (c->shared->engine);
    out->pass_ms = gpunet_engine_mean_pass_ms (c->shared->engine);
    out->engine_id = c->shared->id;
    out->model = *to_free = g_strdup (c->name);
  }
  gst_gpunet_model_ctx_unref (c);
}

static GstBuffer *
finish_frame (gpointer data, gpunet_status status, const gchar * error,
    gpunet_class_score * scores, gpointer user_data)
{
  GstGpunetClassify *self = user_data;
  GstGpunetFrame *f = data;
  gchar *text = NULL;
  gfloat smoothing;
  guint hold;

  gst_gpunet_frame_unmap (f);
  /* the flow first: a producer that sees the message also sees the flow */
  if (status != GPUNET_OK) {
    gst_gpunet_stats_failed (self->stats, 1);
    gst_gpunet_queue_set_flow_error (self->queue);
    gst_gpunet_post_engine_error (GST_ELEMENT (self), status, error,
        "classifying a frame");
    return NULL;
  }
  GST_OBJECT_LOCK (self);
  smoothing = self->smoothing;
  hold = self->label_hold;
  GST_OBJECT_UNLOCK (self);
  gst_gpunet_nvmm_finish (f, scores);
  if (!gst_gpunet_records_finish (self->records, f, scores, smoothing, hold,
          &text)) {
    gst_gpunet_stats_failed (self->stats, 1);
    gst_gpunet_queue_set_flow_error (self->queue);
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("%s", text),
        ("json-output property"));
    g_free (text);
    return NULL;
  }
  gst_gpunet_nvds_attach (f, scores);
  gst_gpunet_stats_frame_out (self->stats, frame_outcome (f), f->in_us);
  return g_steal_pointer (&f->buf);
}

/* The queue's blocked callback: every buffer this element may have in flight is in
 * the engine, so a partial batch waiting for its batch-timeout must not wait for
 * frames that cannot come. */
static void
queue_blocked (gpointer user_data)
{
  GstGpunetClassify *self = user_data;
  GstGpunetModelCtx *c = gst_gpunet_model_swap_ref_current (self->models);

  if (c != NULL && c->shared != NULL)
    gpunet_engine_kick (c->shared->engine);
  gst_gpunet_model_ctx_unref (c);
}

static void
queued_event (GstEvent * event, gpointer user_data)
{
  GstGpunetClassify *self = user_data;

  if (GST_EVENT_TYPE (event) == GST_EVENT_STREAM_START) {
    const gchar *sid = NULL;

    gst_event_parse_stream_start (event, &sid);
    gst_gpunet_records_set_stream_id (self->records, sid);
  }
}

/* ---- events and queries ---------------------------------------------------------- */

static gboolean
gst_gpunet_classify_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_START:
      gst_gpunet_queue_flush_start (self->queue, event);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      /* the streaming thread is ours again: drop what is queued, restart */
      gst_gpunet_queue_drop (self->queue);
      gst_gpunet_planner_flush (self->planner);
      gst_gpunet_records_flush (self->records);
      gst_gpunet_nvmm_flush (self->nvmm);
      return gst_gpunet_queue_flush_stop (self->queue, event);
    case GST_EVENT_CAPS:{
      GstCaps *caps;

      gst_event_parse_caps (event, &caps);
      /* a new stream may be live where the old one was not */
      self->skip = -1;
      if (!set_caps (self, caps)) {
        gst_event_unref (event);
        return FALSE;
      }
      break;
    }
    case GST_EVENT_SEGMENT:
      gst_event_copy_segment (event, &self->segment);
      break;
    default:
      break;
  }
  if (!GST_EVENT_IS_SERIALIZED (event))
    return gst_pad_event_default (pad, parent, event);
  /* serialized: after the buffers before it */
  return gst_gpunet_queue_push_event (self->queue, event);
}

static gboolean
gst_gpunet_classify_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);
  guint extra;

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:
      return query_caps (self, pad, query);
    case GST_QUERY_ACCEPT_CAPS:{
      GstCaps *caps, *allowed;

      gst_query_parse_accept_caps (query, &caps);
      allowed = allowed_caps (self, pad, NULL, NULL);
      /* NVMM caps the libraries cannot serve: refused in set_caps, with why */
      if (gst_gpunet_nvmm_caps_are_nvmm (caps)) {
        gst_caps_unref (allowed);
        allowed = gst_pad_get_pad_template_caps (pad);
      }
      gst_query_set_accept_caps_result (query,
          gst_caps_can_intersect (caps, allowed));
      gst_caps_unref (allowed);
      return TRUE;
    }
    case GST_QUERY_CONTEXT:
      if (gst_gpunet_cuda_handle_query (self->cuda, GST_ELEMENT (self), query))
        return TRUE;
      return gst_pad_query_default (pad, parent, query);
    case GST_QUERY_ALLOCATION:
      /* serialized: downstream answers once the buffers before it left */
      if (!gst_gpunet_queue_wait_drained (self->queue))
        return FALSE;
      gst_pad_peer_query (self->srcpad, query);
      GST_OBJECT_LOCK (self);
      extra = self->max_in_flight;
      GST_OBJECT_UNLOCK (self);
      gst_gpunet_queue_add_allocation (query, extra);
      return TRUE;
    default:
      if (GST_QUERY_IS_SERIALIZED (query)
          && !gst_gpunet_queue_wait_drained (self->queue))
        return FALSE;
      return gst_pad_query_default (pad, parent, query);
  }
}

static gboolean
gst_gpunet_classify_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);
  GstClockTime wait;
  guint limit;

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:
      return query_caps (self, pad, query);
    case GST_QUERY_CONTEXT:
      if (gst_gpunet_cuda_handle_query (self->cuda, GST_ELEMENT (self), query))
        return TRUE;
      return gst_pad_query_default (pad, parent, query);
    case GST_QUERY_LATENCY:
      if (!gst_pad_peer_query (self->sinkpad, query))
        return FALSE;
      GST_OBJECT_LOCK (self);
      wait = self->batch_timeout * GST_USECOND;
      limit = self->max_in_flight;
      GST_OBJECT_UNLOCK (self);
      gst_gpunet_queue_add_latency (query, wait, limit, &self->info);
      return TRUE;
    default:
      return gst_pad_query_default (pad, parent, query);
  }
}

static void
gst_gpunet_classify_set_context (GstElement * element, GstContext * context)
{
  gst_gpunet_cuda_set_context (GST_GPUNET_CLASSIFY (element)->cuda, element,
      context);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

static gboolean
gst_gpunet_classify_sink_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active)
{
  (void) pad;
  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  /* a chain waiting for room returns */
  if (!active)
    gst_gpunet_queue_set_flushing (GST_GPUNET_CLASSIFY (parent)->queue);
  return TRUE;
}

static gboolean
gst_gpunet_classify_src_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active)
{
  (void) pad;
  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  return gst_gpunet_queue_activate (GST_GPUNET_CLASSIFY (parent)->queue,
      active);
}

gboolean
gst_gpunet_classify_register (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (gpunetclassify, plugin);
}
