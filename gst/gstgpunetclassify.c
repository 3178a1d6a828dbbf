/* gstgpunetclassify.c: the gpunetclassify element.  The sink pad's chain function
 * maps each frame, queues it in the element's FIFO (with the serialized events around
 * it) and hands its images to a shared, batching engine (gstgpunetpool.c,
 * models/engine.c); the source pad's task pushes the FIFO in order once each frame's
 * results are in, attaching them (GstGpunetClassificationMeta, region parameter
 * structures), optionally posting them on the bus and writing them to a JSON lines
 * file.  Interval carry-over, smoothing and label changes are decided in that order. */

/**
 * SECTION:element-gpunetclassify
 * @title: gpunetclassify
 *
 * Classifies video frames with an NVIDIA GPUNet model (ImageNet-1k or a custom
 * architecture) and attaches the result to each buffer as a #GstCustomMeta named
 * `GstGpunetClassificationMeta`. Frames pass through untouched. The meta's
 * structure holds `model`, `label`, `label-id`, `confidence`, the top-k `ids`,
 * `labels` and `scores` (softmax probabilities, best first), `num-classes`,
 * `roi-id` (-1 for the whole frame) and `inferred` (%FALSE when the result was
 * carried over from an earlier frame because of #GstGpunetClassify:interval).
 * With #GstGpunetClassify:post-messages, an element message named
 * `gpunetclassify` with the same fields plus `timestamp`, `running-time` and
 * `frame` is posted for every record.
 *
 * Regions: with #GstGpunetClassify:roi-mode `regions` (or `both`: the frame
 * too), each #GstVideoRegionOfInterestMeta an upstream detector attached to the
 * buffer (only the types listed in #GstGpunetClassify:roi-types, when set) is
 * classified instead of the whole frame: its rectangle clipped to the frame
 * (regions empty or entirely outside it are skipped; for NV12 and I420 the
 * crop's origin is rounded down to even coordinates, so the crop may start one
 * pixel left of and above the region) goes through the same preprocess as a
 * frame, in place, also for frames in CUDA memory. The record is added to that
 * region meta as a parameter structure named `GstGpunetClassificationMeta`
 * (gst_video_region_of_interest_meta_get_param()) with `roi-id` = the meta's
 * id. A buffer's crops go to the engine together (any sizes). With
 * #GstGpunetClassify:interval, a region's result is carried over by roi-id to
 * the frames between (a region whose id is new, or shared by several regions
 * of the buffer, is classified on the frame it appears on).
 *
 * With #GstGpunetClassify:json-output, every record (frame and regions) is also
 * written to a file, one JSON object per line.
 *
 * The `checkpoint` property is required: a GPUNet checkpoint as NVIDIA publishes
 * it (`.pth.tar`, `.pth`) or a `.safetensors` file. `model` names one of the
 * built-in architectures (gpunet-0, gpunet-1, gpunet-2, gpunet-p0, gpunet-p1,
 * gpunet-d1, gpunet-d2, or NVIDIA's latency names such as 0.65ms) or the path
 * of an architecture JSON in NVIDIA's format.
 *
 * Frames in system memory work with every backend. When the plugin is built with
 * GStreamer's CUDA library, `video/x-raw(memory:CUDAMemory)` (NV12, I420, RGBA,
 * BGRA, RGBx, BGRx) is accepted too, while the session runs on the CUDA backend: the
 * frames are then preprocessed on the GPU and never copied to the host. The element
 * shares its #GstCudaContext with its neighbours.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 -m videotestsrc num-buffers=30 ! gpunetclassify checkpoint=0.65ms.pth.tar post-messages=true ! fakesink
 * ]| Classifies 30 test frames and prints one bus message per frame.
 * |[
 * gst-launch-1.0 filesrc location=clip.mp4 ! decodebin ! videoconvert ! \
 *     gpunetclassify model=gpunet-1 checkpoint=0.85ms.pth.tar top-k=3 interval=4 ! \
 *     videoconvert ! autovideosink
 * ]| Classifies every fifth frame of a file and carries the result to the others.
 * |[
 * gst-launch-1.0 v4l2src ! videoconvert ! video/x-raw,format=NV12 ! \
 *     gpunetclassify checkpoint=0.65ms.pth.tar threshold=0.2 ! fakesink
 * ]| Classifies a camera's frames, listing only classes scoring at least 0.2.
 * Many streams, one engine: elements of one process with the same model,
 * checkpoint file, backend, precision and device share one engine (one copy of the
 * weights, one session, one thread pool; #GstGpunetClassify:share-engine). The
 * streaming thread hands each frame to the engine and returns; the frame is pushed,
 * with its metadata, from the element's own thread once its result is in, in input
 * order, with serialized events kept in place. The engine runs up to
 * #GstGpunetClassify:batch-size queued frames (of all its streams) in one pass,
 * waiting at most #GstGpunetClassify:batch-timeout microseconds for a partial batch
 * (0: no wait). #GstGpunetClassify:max-in-flight bounds the frames an element has in
 * the engine before it blocks upstream. Flushing drops what is queued; EOS pushes
 * it all first.
 *
 * |[
 * gst-launch-1.0 filesrc location=clip.mp4 ! parsebin ! nvh264dec ! \
 *     gpunetclassify backend=cuda checkpoint=0.65ms.pth.tar ! fakesink
 * ]| Classifies NVDEC's frames where the decoder left them, in GPU memory.
 * |[
 * gst-launch-1.0 v4l2src ! videoconvert ! facedetect display=false ! \
 *     gpunetclassify model=my-gpunet.json checkpoint=my-faces.pth.tar \
 *     labels=my-faces.txt roi-mode=regions roi-types=face \
 *     json-output=faces.jsonl ! fakesink
 * ]| Classifies each face facedetect found (not the frame) with a GPUNet
 * trained on face classes, and writes one JSON line per face.
 */

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "gstgpunetclassify.h"
#include "gstgpunetcuda.h"
#include "gstgpunetmeta.h"
#include "gstgpunetpool.h"
#include "gstgpunetroi.h"

GST_DEBUG_CATEGORY_STATIC (gst_gpunet_classify_debug);
#define GST_CAT_DEFAULT gst_gpunet_classify_debug

#define MAX_TOP_K 100

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
  PROP_MAX_IN_FLIGHT,
  PROP_SMOOTHING,
  PROP_LABEL_HOLD,
  PROP_ENGINE_ID,
  PROP_DEVICE_ID
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
#define DEFAULT_MAX_IN_FLIGHT 4
#define DEFAULT_SMOOTHING 0.0f
#define DEFAULT_LABEL_HOLD 1
#define DEFAULT_DEVICE_ID -1

#define LABEL_CHANGED_MESSAGE "gpunetclassify-label-changed"
#define MODEL_CHANGED_MESSAGE "gpunetclassify-model-changed"

#define VIDEO_FORMATS "{ NV12, I420, RGBA, BGRA, RGBx, BGRx, RGB, BGR }"

/* A loaded model as frames use it: the shared engine and the labels.  Reference
 * counted: queued frames keep the one they were classified with across a swap. */
typedef struct
{
  gint refs;
  GstGpunetShared *shared;
  gchar *name;                  /* the records' `model` */
  gint num_classes;
  guint k;                      /* results per image: min (classes, MAX_TOP_K) */
  gchar **labels;               /* num_classes entries, never NULL entries */
} ModelCtx;

/* What the records of one buffer share, fixed when it arrived. */
typedef struct
{
  guint top_k;
  gfloat threshold;
  gboolean post;
  guint64 frame_no;
  GstClockTime running_time;
} RecordSettings;

typedef enum
{
  ITEM_BUFFER,
  ITEM_EVENT,
  ITEM_QUERY
} ItemKind;

/* One entry of the element's FIFO: a buffer waiting for its results, or a
 * serialized event or query keeping its place between buffers. */
typedef struct
{
  ItemKind kind;
  GstGpunetClassify *owner;     /* the element (on_results wakes its task) */
  GstEvent *event;
  GstQuery *query;
  gboolean query_result;
  gboolean query_done;

  GstBuffer *buf;
  ModelCtx *ctx;
  RecordSettings rs;
  gboolean frame_record;        /* a record for the whole frame */
  gboolean frame_inferred;      /* ... classified now (else carried) */
  gboolean cycle_start;         /* interval: carried results are dropped here */
  gboolean model_switch;        /* first frame of a model swapped in */
  gchar *old_model;             /* model_switch: the name before */
  GArray *rois;                 /* GstGpunetRoi; scores NULL = carried by roi-id */
  gint *roi_image;              /* per roi: its image in the request, or -1 */
  GstVideoFrame vframe;
  gboolean mapped;
  gint n_images;
  gpunet_class_score *scores;   /* n_images x ctx->k once ready */
  gboolean ready;
  gpunet_status status;
  gchar *error;
} Item;

/* Smoothing and label-change state of one stream position (frame or roi-id). */
typedef struct
{
  gfloat *probs;                /* num_classes smoothed probabilities */
  gboolean have;
  gint shown;                   /* the label last announced, -1 none */
  gint candidate;               /* the smoothed top-1 of the last frames */
  guint candidate_frames;
  guint64 last_frame;           /* the frame it was last updated on */
} Track;

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
  guint max_in_flight;
  gfloat smoothing;
  guint label_hold;
  gint device_id;

  GstGpunetCuda *cuda;

  /* set at READY->PAUSED, dropped at PAUSED->READY */
  ModelCtx *ctx;                /* the model new frames use (streaming thread) */
  gpunet_preprocess_params pre;
  GstGpunetRoiMode mode;        /* roi-mode as started */
  FILE *json_file;              /* json-output, NULL when off (src task) */
  gchar *json_path;
  GString *json_lines;

  /* model swap while playing: the loader thread and what it made (lock) */
  GThread *loader;
  guint swap_serial;            /* model/checkpoint sets while started */
  ModelCtx *pending_ctx;
  gchar *pending_old;           /* loader: nothing; chain: previous name */

  /* the FIFO between chain and the src task */
  GMutex lock;
  GCond cond;
  GQueue items;
  guint in_flight;              /* buffers in `items` */
  guint in_flight_limit;        /* max-in-flight as started */
  gboolean flushing;
  GstFlowReturn srcresult;

  /* streaming thread (chain, sink events) */
  GstVideoInfo info;
  gboolean have_caps;
  gpunet_image image_template;
  GstSegment segment;
  guint64 frame_count;
  gboolean have_last;           /* interval: a frame was classified in this cycle */
  guint carried;
  GHashTable *cycle_rois;       /* interval: roi ids classified in this cycle */

  /* src task */
  gpunet_class_score last[MAX_TOP_K];
  guint last_n;
  gboolean push_have_last;
  GstGpunetRoiCache *roi_cache;
  GHashTable *tracks;           /* roi-id -> Track (smoothing, label changes) */
  gchar *stream_id;
  const gchar *track_model;     /* the model the tracks hold (pointer identity) */
  guint nonfinite_warned;
};

#define gst_gpunet_classify_parent_class parent_class
G_DEFINE_TYPE (GstGpunetClassify, gst_gpunet_classify, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (gpunetclassify, "gpunetclassify", GST_RANK_NONE,
    GST_TYPE_GPUNET_CLASSIFY);


static void gst_gpunet_classify_finalize (GObject * object);
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
static void gst_gpunet_classify_loop (GstGpunetClassify * self);

/* ---- enum types ---------------------------------------------------------------- */

GType
gst_gpunet_backend_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPUNET_BACKEND_AUTO,
        "CUDA when built and a GPU works, else CPU (with an info message)", "auto"},
    {GST_GPUNET_BACKEND_CPU, "CPU", "cpu"},
    {GST_GPUNET_BACKEND_CUDA, "CUDA (fails when not built or no GPU)", "cuda"},
    {GST_GPUNET_BACKEND_CPU_REF,
        "CPU reference oracle (plain single-threaded loops: slow; for checking)",
        "cpu-ref"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpunetBackend", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* The precision property's values are gpunet_precision's. */
#define GST_TYPE_GPUNET_PRECISION (gst_gpunet_precision_get_type ())
static GType
gst_gpunet_precision_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GPUNET_PRECISION_AUTO,
        "fp16 on GPUs with tensor cores (compute capability 7.0 and newer), "
          "else fp32", "auto"},
    {GPUNET_PRECISION_FP32, "32-bit floats", "fp32"},
    {GPUNET_PRECISION_FP16,
        "16-bit floats for activations and weights, 32-bit accumulation", "fp16"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpunetPrecision", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpunet_resize_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPUNET_RESIZE_CENTER_CROP,
          "Resize the shorter side to resolution / crop-pct, crop the centre "
          "(timm's evaluation transform)", "center-crop"},
    {GST_GPUNET_RESIZE_STRETCH, "Resize the whole frame, ignoring its aspect",
        "stretch"},
    {GST_GPUNET_RESIZE_LETTERBOX,
        "Fit the whole frame keeping its aspect, pad with the mean", "letterbox"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpunetResizeMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpunet_roi_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPUNET_ROI_MODE_FRAME, "Classify the whole frame; region metas are "
          "ignored", "frame"},
    {GST_GPUNET_ROI_MODE_REGIONS, "Classify each region meta (roi-types), "
          "not the frame", "regions"},
    {GST_GPUNET_ROI_MODE_BOTH, "Classify the whole frame and each region meta",
        "both"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpunetRoiMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
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
          "number of classes)", 1, MAX_TOP_K, DEFAULT_TOP_K,
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
  g_object_class_install_property (gobject_class, PROP_ENGINE_ID,
      g_param_spec_uint ("engine-id", "Engine id",
          "Serial number of the engine this element uses (elements sharing "
          "one show the same number; 0 = none)", 0, G_MAXUINT, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  gst_element_class_set_static_metadata (element_class,
      "GPUNet classifier", "Filter/Analyzer/Video",
      "Classifies video frames with an NVIDIA GPUNet model and attaches the "
      "top-k classes as GstGpunetClassificationMeta",
      "gst-gpunet developers");
  /* CUDAMemory caps come first when built with GStreamer's CUDA library */
  caps = gst_gpunet_cuda_template_caps (GST_VIDEO_CAPS_MAKE (VIDEO_FORMATS));
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
  self->max_in_flight = DEFAULT_MAX_IN_FLIGHT;
  self->smoothing = DEFAULT_SMOOTHING;
  self->label_hold = DEFAULT_LABEL_HOLD;
  self->device_id = DEFAULT_DEVICE_ID;
  self->cuda = gst_gpunet_cuda_new ();

  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  g_queue_init (&self->items);
  self->flushing = TRUE;
  self->srcresult = GST_FLOW_FLUSHING;
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
}

static void model_ctx_unref (ModelCtx * c);

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
  /* the loader may hold the last reference and run this: never join it here */
  if (self->loader != NULL)
    g_thread_unref (self->loader);
  model_ctx_unref (self->pending_ctx);
  gst_gpunet_cuda_free (self->cuda);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);

  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void start_model_swap (GstGpunetClassify * self);

static void
gst_gpunet_classify_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (object);
  gboolean ignored = FALSE, swap = FALSE;

  GST_OBJECT_LOCK (self);
  if ((pspec->flags & GST_PARAM_MUTABLE_READY)
      && GST_STATE (self) > GST_STATE_READY) {
    ignored = TRUE;
  } else {
    switch (prop_id) {
      case PROP_MODEL:
        g_free (self->model_name);
        self->model_name = g_value_dup_string (value);
        swap = GST_STATE (self) > GST_STATE_READY;
        break;
      case PROP_CHECKPOINT:
        g_free (self->checkpoint);
        self->checkpoint = g_value_dup_string (value);
        swap = GST_STATE (self) > GST_STATE_READY;
        break;
      case PROP_LABELS:
        g_free (self->labels_path);
        self->labels_path = g_value_dup_string (value);
        break;
      case PROP_TOP_K:
        self->top_k = g_value_get_uint (value);
        break;
      case PROP_THRESHOLD:
        self->threshold = g_value_get_float (value);
        break;
      case PROP_BACKEND:
        self->backend = g_value_get_enum (value);
        gst_gpunet_cuda_set_may_use (self->cuda,
            self->backend == GST_GPUNET_BACKEND_AUTO
            || self->backend == GST_GPUNET_BACKEND_CUDA);
        break;
      case PROP_RESIZE_MODE:
        self->resize_mode = g_value_get_enum (value);
        break;
      case PROP_CROP_PCT:
        self->crop_pct = g_value_get_float (value);
        break;
      case PROP_INTERVAL:
        self->interval = g_value_get_uint (value);
        break;
      case PROP_POST_MESSAGES:
        self->post_messages = g_value_get_boolean (value);
        break;
      case PROP_N_THREADS:
        self->n_threads = g_value_get_uint (value);
        break;
      case PROP_PRECISION:
        self->precision = g_value_get_enum (value);
        break;
      case PROP_BATCH_SIZE:
        self->batch_size = g_value_get_uint (value);
        break;
      case PROP_ROI_MODE:
        self->roi_mode = g_value_get_enum (value);
        break;
      case PROP_ROI_TYPES:
        g_free (self->roi_types);
        self->roi_types = g_value_dup_string (value);
        /* the streaming thread holds its own reference while it uses a list */
        g_clear_pointer (&self->roi_type_quarks, g_array_unref);
        self->roi_type_quarks = gst_gpunet_roi_types_parse (self->roi_types);
        break;
      case PROP_JSON_OUTPUT:
        g_free (self->json_output);
        self->json_output = g_value_dup_string (value);
        break;
      case PROP_SHARE_ENGINE:
        self->share_engine = g_value_get_boolean (value);
        break;
      case PROP_BATCH_TIMEOUT:
        self->batch_timeout = g_value_get_uint64 (value);
        break;
      case PROP_MAX_IN_FLIGHT:
        self->max_in_flight = g_value_get_uint (value);
        break;
      case PROP_SMOOTHING:
        self->smoothing = g_value_get_float (value);
        break;
      case PROP_LABEL_HOLD:
        self->label_hold = g_value_get_uint (value);
        break;
      case PROP_DEVICE_ID:
        self->device_id = g_value_get_int (value);
        break;
      default:
        G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
        break;
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
  if (swap)
    start_model_swap (self);
}

static void
gst_gpunet_classify_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODEL:
      g_value_set_string (value, self->model_name);
      break;
    case PROP_CHECKPOINT:
      g_value_set_string (value, self->checkpoint);
      break;
    case PROP_LABELS:
      g_value_set_string (value, self->labels_path);
      break;
    case PROP_TOP_K:
      g_value_set_uint (value, self->top_k);
      break;
    case PROP_THRESHOLD:
      g_value_set_float (value, self->threshold);
      break;
    case PROP_BACKEND:
      g_value_set_enum (value, self->backend);
      break;
    case PROP_RESIZE_MODE:
      g_value_set_enum (value, self->resize_mode);
      break;
    case PROP_CROP_PCT:
      g_value_set_float (value, self->crop_pct);
      break;
    case PROP_INTERVAL:
      g_value_set_uint (value, self->interval);
      break;
    case PROP_POST_MESSAGES:
      g_value_set_boolean (value, self->post_messages);
      break;
    case PROP_N_THREADS:
      g_value_set_uint (value, self->n_threads);
      break;
    case PROP_PRECISION:
      g_value_set_enum (value, self->precision);
      break;
    case PROP_BATCH_SIZE:
      g_value_set_uint (value, self->batch_size);
      break;
    case PROP_ROI_MODE:
      g_value_set_enum (value, self->roi_mode);
      break;
    case PROP_ROI_TYPES:
      g_value_set_string (value, self->roi_types);
      break;
    case PROP_JSON_OUTPUT:
      g_value_set_string (value, self->json_output);
      break;
    case PROP_SHARE_ENGINE:
      g_value_set_boolean (value, self->share_engine);
      break;
    case PROP_BATCH_TIMEOUT:
      g_value_set_uint64 (value, self->batch_timeout);
      break;
    case PROP_MAX_IN_FLIGHT:
      g_value_set_uint (value, self->max_in_flight);
      break;
    case PROP_SMOOTHING:
      g_value_set_float (value, self->smoothing);
      break;
    case PROP_LABEL_HOLD:
      g_value_set_uint (value, self->label_hold);
      break;
    case PROP_DEVICE_ID:
      g_value_set_int (value, self->device_id);
      break;
    case PROP_ENGINE_ID:
      /* the streaming thread swaps ctx under the FIFO lock */
      g_mutex_lock (&self->lock);
      g_value_set_uint (value, self->ctx ? self->ctx->shared->id : 0);
      g_mutex_unlock (&self->lock);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ---- models: load, share, swap ------------------------------------------------- */

/* An engine failure as an element error: the engine's sentence is the message, the
 * status and the context go to the debug string. */
static void
post_engine_error (GstGpunetClassify * self, gpunet_status status,
    const gchar * text, const gchar * context)
{
  const gchar *sentence = text ? text : gpunet_status_string (status);

  switch (status) {
    case GPUNET_ERR_IO:
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", sentence),
          ("%s: %s", context, gpunet_status_string (status)));
      break;
    case GPUNET_ERR_NO_MEMORY:
      GST_ELEMENT_ERROR (self, RESOURCE, NO_SPACE_LEFT, ("%s", sentence),
          ("%s: %s", context, gpunet_status_string (status)));
      break;
    case GPUNET_ERR_BACKEND_UNAVAILABLE:
    case GPUNET_ERR_BACKEND:
      GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("%s", sentence),
          ("%s: %s", context, gpunet_status_string (status)));
      break;
    default:
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", sentence),
          ("%s: %s", context, gpunet_status_string (status)));
      break;
  }
}

static ModelCtx *
model_ctx_ref (ModelCtx * c)
{
  g_atomic_int_inc (&c->refs);
  return c;
}

static void
model_ctx_unref (ModelCtx * c)
{
  if (c == NULL || !g_atomic_int_dec_and_test (&c->refs))
    return;
  gst_gpunet_pool_release (c->shared);
  g_free (c->name);
  g_strfreev (c->labels);
  g_free (c);
}

/* The labels of a `n`-class model from `path` (gpunet_labels_parse) or the defaults; NULL
 * and *error when the file is not a readable regular file or has the wrong count. */
static gchar **
load_labels (const gchar * path, gint n, const gchar * model, gchar ** error)
{
  gchar **labels = g_new0 (gchar *, n + 1);
  gchar *contents = NULL;
  gsize len = 0;
  char **parsed = NULL, *text = NULL;
  gpunet_status st_parse;
  GError *err = NULL;
  GStatBuf st;
  gint i;

  if (path == NULL || *path == '\0') {
    for (i = 0; i < n; i++) {
      const char *l = n == 1000 ? gpunet_imagenet_label (i) : NULL;
      labels[i] = l ? g_strdup (l) : g_strdup_printf ("class-%d", i);
    }
    return labels;
  }
  /* a FIFO or a device would block or never end: regular files only */
  if (g_stat (path, &st) == 0 && !S_ISREG (st.st_mode)) {
    *error = g_strdup_printf ("The labels file '%s' is not a regular file (a "
        "FIFO, device or directory): set labels to a text file with one label "
        "per line", path);
    g_strfreev (labels);
    return NULL;
  }
  if (!g_file_get_contents (path, &contents, &len, &err)) {
    *error = g_strdup_printf ("Cannot read the labels file '%s': %s", path,
        err->message);
    g_clear_error (&err);
    g_strfreev (labels);
    return NULL;
  }
  st_parse = gpunet_labels_parse (contents, len, n, &parsed, &text);
  g_free (contents);
  if (st_parse != GPUNET_OK) {
    *error = g_strdup_printf ("The labels file '%s' %s (model '%s')", path,
        text ? text : gpunet_status_string (st_parse), model);
    free (text);
    g_strfreev (labels);
    return NULL;
  }
  for (i = 0; i < n; i++)
    labels[i] = g_strdup (parsed[i]);
  gpunet_labels_free (parsed);
  return labels;
}

/* What loading a model needs, copied from the properties under the object lock. */
typedef struct
{
  gchar *model, *checkpoint, *labels;
  GstGpunetEngineRequest req;
} LoadArgs;

static void
load_args_get (GstGpunetClassify * self, LoadArgs * a)
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
  a->req.share = self->share_engine;
  a->req.device = self->device_id > 0 ? self->device_id : 0;
  GST_OBJECT_UNLOCK (self);
  a->req.model = a->model;
  a->req.checkpoint = a->checkpoint;
}

static void
load_args_clear (LoadArgs * a)
{
  g_free (a->model);
  g_free (a->checkpoint);
  g_free (a->labels);
}

/* Gets the engine for `a` from the pool and the labels.  NULL on failure with the
 * sentence in *error, the status in *status (or RESOURCE/SETTINGS for labels) and
 * whether it is a labels error in *labels_error. */
static ModelCtx *
model_ctx_new (GstGpunetClassify * self, LoadArgs * a, gpunet_status * status,
    gchar ** error, gboolean * labels_error)
{
  gchar *note = NULL;
  GstGpunetShared *sh;
  ModelCtx *c;

  *labels_error = FALSE;
  if (a->checkpoint == NULL || *a->checkpoint == '\0') {
    *status = GPUNET_ERR_INVALID_ARGUMENT;
    *error = g_strdup_printf ("No checkpoint is set: set the 'checkpoint' "
        "property to the GPUNet weights file for model '%s' (e.g. "
        "gpunetclassify checkpoint=/path/to/0.65ms.pth.tar)", a->model);
    return NULL;
  }
  sh = gst_gpunet_pool_acquire (&a->req, status, error, &note);
  if (sh == NULL) {
    if (*status == GPUNET_ERR_BACKEND_UNAVAILABLE && a->req.backend ==
        GPUNET_BACKEND_CUDA && (*error == NULL || **error == '\0'
            || g_strcmp0 (*error, gpunet_status_string (*status)) == 0)) {
      g_free (*error);
      *error = g_strdup ("backend=cuda was requested, but the CUDA backend is "
          "not built in or no usable GPU is present; use backend=cpu or auto");
    }
    return NULL;
  }
  if (note != NULL) {
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS, ("%s", note), ("%s", note));
    g_free (note);
  }
  c = g_new0 (ModelCtx, 1);
  c->refs = 1;
  c->shared = sh;
  c->name = g_strdup (gpunet_model_name (sh->model));
  c->num_classes = gpunet_model_num_classes (sh->model);
  c->k = MIN (c->num_classes, MAX_TOP_K);
  c->labels = load_labels (a->labels, c->num_classes, c->name, error);
  if (c->labels == NULL) {
    *labels_error = TRUE;
    *status = GPUNET_ERR_INVALID_ARGUMENT;
    model_ctx_unref (c);
    return NULL;
  }
  return c;
}

/* The model swap's loader thread: loads, then leaves the new model for the
 * streaming thread to take at the next frame, or warns and keeps the old one. */
static gpointer
swap_thread (gpointer data)
{
  GstGpunetClassify *self = data;
  LoadArgs a;
  gpunet_status st;
  gchar *error = NULL;
  gboolean labels_error;
  ModelCtx *c, *old = NULL;
  guint serial;

  /* model and checkpoint are usually set together (g_object_set): let both
   * arrive before reading them */
  g_usleep (20000);
  g_mutex_lock (&self->lock);
  serial = self->swap_serial;
  g_mutex_unlock (&self->lock);
  load_args_get (self, &a);
  a.req.cuda_context = gst_gpunet_cuda_context_ref (self->cuda);
  c = model_ctx_new (self, &a, &st, &error, &labels_error);
  if (a.req.cuda_context != NULL)
    gst_object_unref (a.req.cuda_context);
  g_mutex_lock (&self->lock);
  if (serial != self->swap_serial) {
    /* superseded: the load that follows decides */
    g_mutex_unlock (&self->lock);
    GST_DEBUG_OBJECT (self, "model swap superseded by a newer one");
    model_ctx_unref (c);
    c = NULL;
  } else if (c != NULL) {
    old = self->pending_ctx;
    self->pending_ctx = c;
    g_mutex_unlock (&self->lock);
    GST_INFO_OBJECT (self, "model %s loaded (engine %u); switching at the next "
        "frame", c->name, c->shared->id);
  } else {
    g_mutex_unlock (&self->lock);
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("Cannot switch to model '%s' with checkpoint '%s': %s. The current "
            "model keeps running", a.model, a.checkpoint ? a.checkpoint :
            "(none)", error), ("model swap while playing: %s",
            gpunet_status_string (st)));
  }
  model_ctx_unref (old);
  g_free (error);
  load_args_clear (&a);
  gst_object_unref (self);
  return NULL;
}

/* model/checkpoint set while started: load beside the running model. */
static void
start_model_swap (GstGpunetClassify * self)
{
  GThread *prev;

  g_mutex_lock (&self->lock);
  self->swap_serial++;
  prev = self->loader;
  self->loader = NULL;
  g_mutex_unlock (&self->lock);
  /* one load at a time, in the order they were asked for */
  if (prev != NULL)
    g_thread_join (prev);
  g_mutex_lock (&self->lock);
  self->loader = g_thread_new ("gpunet-swap", swap_thread,
      gst_object_ref (self));
  g_mutex_unlock (&self->lock);
}

static void
join_loader (GstGpunetClassify * self)
{
  GThread *t;

  g_mutex_lock (&self->lock);
  t = self->loader;
  self->loader = NULL;
  g_mutex_unlock (&self->lock);
  if (t != NULL)
    g_thread_join (t);
}

/* READY->PAUSED: the model, the labels, the JSON file. Posts the error and returns
 * FALSE when something cannot be set up. */
static gboolean
gst_gpunet_classify_start (GstGpunetClassify * self)
{
  LoadArgs a;
  gpunet_status st;
  gchar *error = NULL, *json_path;
  gboolean labels_error, ok = FALSE, roi_types_set;
  ModelCtx *c = NULL;
  gint device = 0, device_id;

  load_args_get (self, &a);
  GST_OBJECT_LOCK (self);
  self->pre.resize_mode = (gpunet_resize_mode) self->resize_mode;
  self->pre.crop_pct = self->crop_pct;
  self->mode = self->roi_mode;
  roi_types_set = self->roi_type_quarks != NULL;
  json_path = g_strdup (self->json_output);
  device_id = self->device_id;
  GST_OBJECT_UNLOCK (self);

  if (a.checkpoint != NULL && *a.checkpoint != '\0' && roi_types_set
      && self->mode == GST_GPUNET_ROI_MODE_FRAME)
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("roi-types is set, but roi-mode is 'frame', so no region is "
            "classified: set roi-mode=regions (or both), or clear roi-types"),
        ("roi-types is only read with roi-mode regions or both"));

  /* before the model: a wrong path fails fast */
  if (a.checkpoint != NULL && *a.checkpoint != '\0' && json_path != NULL
      && *json_path != '\0') {
    self->json_file = g_fopen (json_path, "wb");
    if (self->json_file == NULL) {
      gint err = errno;

      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
          ("Cannot open the JSON output file '%s' for writing: %s. Set "
              "json-output to the path of a file in an existing, writable "
              "directory, or to an empty string to turn it off", json_path,
              g_strerror (err)),
          ("json-output property: fopen failed, errno %d", err));
      goto done;
    }
    self->json_path = g_strdup (json_path);
    self->json_lines = g_string_new (NULL);
  }

  /* a CUDA engine lives in the GstCudaContext shared with the neighbours */
  if ((a.req.backend == GPUNET_BACKEND_AUTO
          || a.req.backend == GPUNET_BACKEND_CUDA)
      && gst_gpunet_cuda_open (self->cuda, GST_ELEMENT (self), device_id,
          &device)) {
    a.req.device = device;
    a.req.cuda_context = gst_gpunet_cuda_context_ref (self->cuda);
  }
  c = model_ctx_new (self, &a, &st, &error, &labels_error);
  if (a.req.cuda_context != NULL)
    gst_object_unref (a.req.cuda_context);
  if (c == NULL) {
    if (labels_error)
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", error),
          ("labels property"));
    else if (a.checkpoint == NULL || *a.checkpoint == '\0')
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", error),
          ("the checkpoint property is required"));
    else {
      gchar *context = g_strdup_printf ("loading model '%s' with checkpoint "
          "'%s'", a.model, a.checkpoint);

      post_engine_error (self, st, error, context);
      g_free (context);
    }
    goto done;
  }

  if (a.req.backend == GPUNET_BACKEND_AUTO
      && g_strcmp0 (gpunet_engine_backend_name (c->shared->engine),
          "cuda") != 0) {
    /* gst-launch prints an INFO message's debug string: the sentence goes in both */
    GST_ELEMENT_INFO (self, RESOURCE, SETTINGS,
        ("backend=auto: CUDA is not available, using the %s backend",
            gpunet_engine_backend_name (c->shared->engine)),
        ("backend=auto: CUDA is not available, using the %s backend",
            gpunet_engine_backend_name (c->shared->engine)));
  }
  gst_gpunet_cuda_set_device_path (self->cuda,
      g_strcmp0 (gpunet_engine_backend_name (c->shared->engine), "cuda") == 0);
  GST_INFO_OBJECT (self, "model %s (%d classes, weights from %s) on the %s "
      "backend, engine %u", c->name, c->num_classes,
      gpunet_model_weights_source (c->shared->model),
      gpunet_engine_backend_name (c->shared->engine), c->shared->id);

  g_mutex_lock (&self->lock);
  self->ctx = c;
  /* a swap that finished after the last stop belongs to no stream */
  c = g_steal_pointer (&self->pending_ctx);
  g_mutex_unlock (&self->lock);
  model_ctx_unref (c);
  c = NULL;
  self->roi_cache = gst_gpunet_roi_cache_new ();
  self->cycle_rois = g_hash_table_new_full (g_int64_hash, g_int64_equal,
      g_free, NULL);
  GST_OBJECT_LOCK (self);
  self->in_flight_limit = self->max_in_flight;
  GST_OBJECT_UNLOCK (self);
  self->tracks = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
      NULL);
  self->frame_count = 0;
  self->nonfinite_warned = 0;
  self->have_last = FALSE;
  self->push_have_last = FALSE;
  self->carried = 0;
  self->have_caps = FALSE;
  gst_segment_init (&self->segment, GST_FORMAT_TIME);
  ok = TRUE;

done:
  if (!ok && self->json_file != NULL) {
    fclose (self->json_file);
    self->json_file = NULL;
    g_clear_pointer (&self->json_path, g_free);
    if (self->json_lines)
      g_string_free (g_steal_pointer (&self->json_lines), TRUE);
  }
  if (!ok)
    gst_gpunet_cuda_close (self->cuda);
  g_free (error);
  g_free (json_path);
  load_args_clear (&a);
  return ok;
}

static void item_free (Item * it);
static void clear_tracks (GstGpunetClassify * self);

/* Withdraws this element's frames from the engines they are in (no callback runs
 * after this) and drops the FIFO. */
static void
drop_queued (GstGpunetClassify * self)
{
  GList *ctxs = NULL, *l;
  Item *it;

  g_mutex_lock (&self->lock);
  for (l = self->items.head; l; l = l->next) {
    it = l->data;
    if (it->ctx != NULL && !g_list_find (ctxs, it->ctx))
      ctxs = g_list_prepend (ctxs, model_ctx_ref (it->ctx));
  }
  g_mutex_unlock (&self->lock);
  for (l = ctxs; l; l = l->next)
    gpunet_engine_cancel (((ModelCtx *) l->data)->shared->engine, self);
  g_list_free_full (ctxs, (GDestroyNotify) model_ctx_unref);
  g_mutex_lock (&self->lock);
  while ((it = g_queue_pop_head (&self->items)) != NULL)
    item_free (it);
  self->in_flight = 0;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

/* PAUSED->READY, after the pads stopped: nothing of ours runs any more. */
static void
gst_gpunet_classify_stop (GstGpunetClassify * self)
{
  ModelCtx *c, *p;

  join_loader (self);
  drop_queued (self);
  g_mutex_lock (&self->lock);
  c = g_steal_pointer (&self->ctx);
  p = g_steal_pointer (&self->pending_ctx);
  g_mutex_unlock (&self->lock);
  model_ctx_unref (c);
  model_ctx_unref (p);
  gst_gpunet_cuda_close (self->cuda);
  g_clear_pointer (&self->roi_cache, gst_gpunet_roi_cache_free);
  g_clear_pointer (&self->cycle_rois, g_hash_table_unref);
  if (self->tracks != NULL) {
    clear_tracks (self);
    g_clear_pointer (&self->tracks, g_hash_table_unref);
  }
  g_clear_pointer (&self->stream_id, g_free);
  if (self->json_file != NULL && fclose (self->json_file) != 0)
    GST_ELEMENT_WARNING (self, RESOURCE, CLOSE,
        ("Closing the JSON output file '%s' failed: %s; its last records may "
            "be missing", self->json_path, g_strerror (errno)), (NULL));
  self->json_file = NULL;
  g_clear_pointer (&self->json_path, g_free);
  if (self->json_lines != NULL)
    g_string_free (g_steal_pointer (&self->json_lines), TRUE);
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
  gpunet_image *img = &self->image_template;
  GstVideoInfo info;
  gboolean cuda_engine;

  if (!gst_video_info_from_caps (&info, caps)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("Cannot classify video with caps %" GST_PTR_FORMAT, caps),
        ("gst_video_info_from_caps failed"));
    return FALSE;
  }
  g_mutex_lock (&self->lock);
  cuda_engine = self->ctx != NULL && g_strcmp0 (gpunet_engine_backend_name
      (self->ctx->shared->engine), "cuda") == 0;
  g_mutex_unlock (&self->lock);
  if (gst_gpunet_cuda_caps_are_cuda (caps) && !cuda_engine) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("CUDA memory frames need the CUDA backend, but this element runs on "
            "the CPU: set backend=cuda, or put cudadownload before "
            "gpunetclassify"), ("caps %" GST_PTR_FORMAT, caps));
    return FALSE;
  }

  memset (img, 0, sizeof *img);
  switch (GST_VIDEO_INFO_FORMAT (&info)) {
    case GST_VIDEO_FORMAT_NV12:
      img->format = GPUNET_FORMAT_NV12;
      break;
    case GST_VIDEO_FORMAT_I420:
      img->format = GPUNET_FORMAT_I420;
      break;
    case GST_VIDEO_FORMAT_RGBA:
      img->format = GPUNET_FORMAT_RGBA;
      break;
    case GST_VIDEO_FORMAT_BGRA:
      img->format = GPUNET_FORMAT_BGRA;
      break;
    case GST_VIDEO_FORMAT_RGBx:
      img->format = GPUNET_FORMAT_RGBX;
      break;
    case GST_VIDEO_FORMAT_BGRx:
      img->format = GPUNET_FORMAT_BGRX;
      break;
    case GST_VIDEO_FORMAT_RGB:
      img->format = GPUNET_FORMAT_RGB;
      break;
    case GST_VIDEO_FORMAT_BGR:
      img->format = GPUNET_FORMAT_BGR;
      break;
    default:
      GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
          ("Unsupported video format %s: gpunetclassify takes " VIDEO_FORMATS
              "; put videoconvert before it", GST_VIDEO_INFO_NAME (&info)),
          (NULL));
      return FALSE;
  }
  img->width = GST_VIDEO_INFO_WIDTH (&info);
  img->height = GST_VIDEO_INFO_HEIGHT (&info);
  /* BT.2020 and others have no engine matrix: BT.709 is the closer one */
  img->matrix = info.colorimetry.matrix == GST_VIDEO_COLOR_MATRIX_BT601
      || info.colorimetry.matrix == GST_VIDEO_COLOR_MATRIX_FCC
      || info.colorimetry.matrix == GST_VIDEO_COLOR_MATRIX_SMPTE240M ?
      GPUNET_MATRIX_BT601 : GPUNET_MATRIX_BT709;
  if (GST_VIDEO_INFO_IS_YUV (&info)
      && info.colorimetry.matrix != GST_VIDEO_COLOR_MATRIX_BT601
      && info.colorimetry.matrix != GST_VIDEO_COLOR_MATRIX_BT709)
    GST_INFO_OBJECT (self, "colour matrix %d treated as BT.709",
        info.colorimetry.matrix);
  img->full_range = info.colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255;

  self->info = info;
  self->have_caps = TRUE;
  /* a new stream shape: the next frame is classified again */
  self->have_last = FALSE;
  self->carried = 0;
  GST_DEBUG_OBJECT (self, "%s %dx%d, matrix %s, %s range",
      GST_VIDEO_INFO_NAME (&info), img->width, img->height,
      img->matrix == GPUNET_MATRIX_BT709 ? "BT.709" : "BT.601",
      img->full_range ? "full" : "limited");
  return TRUE;
}

/* ---- the FIFO ---------------------------------------------------------------------- */

static void
item_free (Item * it)
{
  if (it->mapped)
    gst_video_frame_unmap (&it->vframe);
  if (it->event)
    gst_event_unref (it->event);
  if (it->buf)
    gst_buffer_unref (it->buf);
  if (it->rois)
    g_array_unref (it->rois);
  g_free (it->roi_image);
  g_free (it->scores);
  g_free (it->error);
  g_free (it->old_model);
  model_ctx_unref (it->ctx);
  g_free (it);
}

/* Queues an item; the src task pushes it when it is at the head and ready. */
static void
enqueue (GstGpunetClassify * self, Item * it)
{
  g_queue_push_tail (&self->items, it);
  if (it->kind == ITEM_BUFFER)
    self->in_flight++;
  g_cond_broadcast (&self->cond);
}

/* gpunet_engine_done_func: the results of one buffer's images. */
static void
on_results (void *user, gpunet_status status, const char *text,
    const gpunet_class_score * scores, int n, int k)
{
  Item *it = user;
  GstGpunetClassify *self = it->owner;

  g_mutex_lock (&self->lock);
  it->status = status;
  if (status == GPUNET_OK)
    memcpy (it->scores, scores, sizeof (gpunet_class_score) * (gsize) n * k);
  else
    it->error = g_strdup (text ? text : gpunet_status_string (status));
  it->ready = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

/* Waits until the FIFO is empty (serialized queries go after the buffers before
 * them); FALSE when flushing or when the src task stopped on a flow error. */
static gboolean
wait_drained (GstGpunetClassify * self)
{
  gboolean ok;

  g_mutex_lock (&self->lock);
  /* a task paused by a flow error never drains: give up then */
  while (!self->flushing && self->srcresult == GST_FLOW_OK
      && self->items.length > 0)
    g_cond_wait (&self->cond, &self->lock);
  ok = !self->flushing && self->srcresult == GST_FLOW_OK;
  g_mutex_unlock (&self->lock);
  return ok;
}

/* ---- per frame (streaming thread) ----------------------------------------------- */

static gint64
roi_key (gint id, GQuark type)
{
  return ((gint64) type << 32) | (guint32) id;
}

static GstFlowReturn
gst_gpunet_classify_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);
  GArray *types = NULL;
  guint interval, i;
  gboolean infer_frame, cycle_start;
  GstFlowReturn ret;
  ModelCtx *swapped = NULL;
  gpunet_image *images = NULL;
  gchar *text = NULL;
  gpunet_status st;
  Item *it;
  gint n = 0;

  (void) pad;
  if (G_UNLIKELY (!self->have_caps)) {
    gst_buffer_unref (buf);
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("No caps before the first "
            "buffer"), (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }

  it = g_new0 (Item, 1);
  it->kind = ITEM_BUFFER;
  GST_OBJECT_LOCK (self);
  it->rs.top_k = self->top_k;
  it->rs.threshold = self->threshold;
  it->rs.post = self->post_messages;
  interval = self->interval;
  /* roi-types may be replaced while we use it */
  if (self->roi_type_quarks != NULL)
    types = g_array_ref (self->roi_type_quarks);
  GST_OBJECT_UNLOCK (self);
  it->rs.frame_no = self->frame_count++;
  it->rs.running_time = gst_segment_to_running_time (&self->segment,
      GST_FORMAT_TIME, GST_BUFFER_PTS (buf));

  /* room in the engine, a swapped-in model at this frame boundary */
  g_mutex_lock (&self->lock);
  while (!self->flushing && self->srcresult == GST_FLOW_OK
      && self->in_flight >= self->in_flight_limit)
    g_cond_wait (&self->cond, &self->lock);
  ret = self->flushing ? GST_FLOW_FLUSHING : self->srcresult;
  if (ret == GST_FLOW_OK && self->pending_ctx != NULL) {
    swapped = self->ctx;
    self->ctx = g_steal_pointer (&self->pending_ctx);
    it->model_switch = TRUE;
    it->old_model = g_strdup (swapped ? swapped->name : "");
  }
  if (ret == GST_FLOW_OK)
    it->ctx = model_ctx_ref (self->ctx);
  g_mutex_unlock (&self->lock);
  model_ctx_unref (swapped);
  if (ret != GST_FLOW_OK) {
    GST_DEBUG_OBJECT (self, "dropping a buffer: %s", gst_flow_get_name (ret));
    gst_buffer_unref (buf);
    g_free (it);
    if (types)
      g_array_unref (types);
    return ret;
  }
  if (it->model_switch) {
    self->have_last = FALSE;
    self->carried = 0;
  }

  /* metadata is added to the buffer: it must be ours to write */
  it->buf = gst_buffer_make_writable (buf);

  /* interval: classify one frame, carry its results to the next `interval` */
  infer_frame = !(self->have_last && self->carried < interval);
  if (infer_frame) {
    self->have_last = TRUE;
    self->carried = 0;
  } else {
    self->carried++;
  }
  cycle_start = infer_frame;
  it->cycle_start = cycle_start;
  it->frame_record = self->mode != GST_GPUNET_ROI_MODE_REGIONS;
  it->frame_inferred = it->frame_record && infer_frame;

  /* regions: new ids (or every region at a cycle start) are classified */
  if (self->mode != GST_GPUNET_ROI_MODE_FRAME) {
    gboolean even = self->image_template.format == GPUNET_FORMAT_NV12
        || self->image_template.format == GPUNET_FORMAT_I420;
    guint skipped;

    if (cycle_start)
      g_hash_table_remove_all (self->cycle_rois);
    it->rois = g_array_new (FALSE, FALSE, sizeof (GstGpunetRoi));
    skipped = gst_gpunet_roi_collect (it->buf, types,
        self->image_template.width, self->image_template.height, even,
        it->rois);
    if (skipped > 0)
      GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": %u empty or outside "
          "regions skipped", it->rs.frame_no, skipped);
    it->roi_image = g_new (gint, MAX (it->rois->len, 1));
  }
  n = it->frame_inferred ? 1 : 0;
  for (i = 0; it->rois && i < it->rois->len; i++) {
    GstGpunetRoi *r = &g_array_index (it->rois, GstGpunetRoi, i);
    gint64 key = roi_key (r->meta->id, r->meta->roi_type);

    if (!cycle_start && r->unique_id && interval > 0
        && g_hash_table_contains (self->cycle_rois, &key)) {
      it->roi_image[i] = -1;    /* carried by roi-id at push time */
    } else {
      it->roi_image[i] = n++;
      if (interval > 0 && r->unique_id) {
        gint64 *k = g_new (gint64, 1);

        *k = key;
        g_hash_table_add (self->cycle_rois, k);
      }
    }
  }
  if (types)
    g_array_unref (types);

  it->n_images = n;
  it->owner = self;

  if (n > 0) {
    gpunet_image frame_img = self->image_template;

    if (!gst_gpunet_cuda_map_frame (self->cuda, GST_ELEMENT (self), it->buf,
            &self->info, &it->vframe, &frame_img)) {
      GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Cannot map the video frame "
              "%" G_GUINT64_FORMAT, it->rs.frame_no), (NULL));
      item_free (it);
      return GST_FLOW_ERROR;
    }
    it->mapped = TRUE;
    images = g_new (gpunet_image, n);
    if (it->frame_inferred)
      images[0] = frame_img;
    for (i = 0; it->rois && i < it->rois->len; i++) {
      GstGpunetRoi *r = &g_array_index (it->rois, GstGpunetRoi, i);

      if (it->roi_image[i] >= 0)
        gst_gpunet_roi_crop_image (&frame_img, r->x, r->y, r->width,
            r->height, &images[it->roi_image[i]]);
    }
    it->scores = g_new0 (gpunet_class_score, (gsize) n * it->ctx->k);
  } else {
    it->ready = TRUE;
  }

  g_mutex_lock (&self->lock);
  enqueue (self, it);
  g_mutex_unlock (&self->lock);
  if (n == 0)
    return GST_FLOW_OK;

  st = gpunet_engine_submit (it->ctx->shared->engine, images, n, &self->pre,
      (int) it->ctx->k, self, on_results, it, &text);
  g_free (images);
  if (st != GPUNET_OK) {
    /* this frame cannot be classified: it fails this element only */
    g_mutex_lock (&self->lock);
    it->status = st;
    it->error = g_strdup (text ? text : gpunet_status_string (st));
    it->ready = TRUE;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
  }
  free (text);
  return GST_FLOW_OK;
}

/* ---- events and queries ---------------------------------------------------------- */

static gboolean
gst_gpunet_classify_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);
  Item *it;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_START:
      /* not serialized: wake and stop the task, then tell downstream */
      g_mutex_lock (&self->lock);
      self->flushing = TRUE;
      self->srcresult = GST_FLOW_FLUSHING;
      g_cond_broadcast (&self->cond);
      g_mutex_unlock (&self->lock);
      gst_pad_push_event (self->srcpad, event);
      gst_pad_pause_task (self->srcpad);
      return TRUE;
    case GST_EVENT_FLUSH_STOP:
      /* the streaming thread is ours again: drop what is queued, restart */
      drop_queued (self);
      self->have_last = FALSE;
      self->carried = 0;
      self->push_have_last = FALSE;
      if (self->cycle_rois)
        g_hash_table_remove_all (self->cycle_rois);
      if (self->roi_cache)
        gst_gpunet_roi_cache_clear (self->roi_cache);
      clear_tracks (self);
      gst_pad_push_event (self->srcpad, event);
      g_mutex_lock (&self->lock);
      self->flushing = FALSE;
      self->srcresult = GST_FLOW_OK;
      g_mutex_unlock (&self->lock);
      return gst_pad_start_task (self->srcpad,
          (GstTaskFunction) gst_gpunet_classify_loop, self, NULL);
    case GST_EVENT_CAPS:{
      GstCaps *caps;

      gst_event_parse_caps (event, &caps);
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
  g_mutex_lock (&self->lock);
  if (self->flushing) {
    g_mutex_unlock (&self->lock);
    gst_event_unref (event);
    return FALSE;
  }
  if (self->srcresult != GST_FLOW_OK && GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    /* the task stopped (not linked, EOS, error): EOS still goes downstream */
    g_mutex_unlock (&self->lock);
    return gst_pad_push_event (self->srcpad, event);
  }
  it = g_new0 (Item, 1);
  it->kind = ITEM_EVENT;
  it->owner = self;
  it->event = event;
  it->ready = TRUE;
  enqueue (self, it);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

/* Pools upstream allocates from must hold the frames this element keeps in the
 * engine: max-in-flight more buffers. */
static void
add_in_flight_buffers (GstGpunetClassify * self, GstQuery * query)
{
  guint extra, i, size, min, max;
  GstBufferPool *pool;

  GST_OBJECT_LOCK (self);
  extra = self->max_in_flight;
  GST_OBJECT_UNLOCK (self);
  if (gst_query_get_n_allocation_pools (query) == 0) {
    GstCaps *caps;
    GstVideoInfo info;

    gst_query_parse_allocation (query, &caps, NULL);
    if (caps != NULL && gst_video_info_from_caps (&info, caps))
      gst_query_add_allocation_pool (query, NULL, info.size, extra + 1, 0);
    return;
  }
  for (i = 0; i < gst_query_get_n_allocation_pools (query); i++) {
    gst_query_parse_nth_allocation_pool (query, i, &pool, &size, &min, &max);
    gst_query_set_nth_allocation_pool (query, i, pool, size, min + extra,
        max == 0 ? 0 : max + extra);
    if (pool)
      gst_object_unref (pool);
  }
}

static gboolean
gst_gpunet_classify_sink_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);
  gboolean ret;

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:
      return query_caps (self, pad, query);
    case GST_QUERY_ACCEPT_CAPS:{
      GstCaps *caps, *allowed;

      gst_query_parse_accept_caps (query, &caps);
      allowed = allowed_caps (self, pad, NULL, NULL);
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
      if (!wait_drained (self))
        return FALSE;
      ret = gst_pad_peer_query (self->srcpad, query);
      add_in_flight_buffers (self, query);
      return TRUE;
    default:
      if (GST_QUERY_IS_SERIALIZED (query) && !wait_drained (self))
        return FALSE;
      ret = gst_pad_query_default (pad, parent, query);
      return ret;
  }
}

static gboolean
gst_gpunet_classify_src_query (GstPad * pad, GstObject * parent,
    GstQuery * query)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);

  switch (GST_QUERY_TYPE (query)) {
    case GST_QUERY_CAPS:
      return query_caps (self, pad, query);
    case GST_QUERY_CONTEXT:
      if (gst_gpunet_cuda_handle_query (self->cuda, GST_ELEMENT (self), query))
        return TRUE;
      return gst_pad_query_default (pad, parent, query);
    case GST_QUERY_LATENCY:{
      gboolean live;
      GstClockTime min, max, wait, held;
      guint limit;

      if (!gst_pad_peer_query (self->sinkpad, query))
        return FALSE;
      gst_query_parse_latency (query, &live, &min, &max);
      GST_OBJECT_LOCK (self);
      wait = self->batch_timeout * GST_USECOND;
      limit = self->max_in_flight;
      GST_OBJECT_UNLOCK (self);
      /* a frame may wait for a batch to fill; up to max-in-flight frames are
       * held while the engine works */
      held = wait;
      if (self->info.fps_n > 0)
        held += gst_util_uint64_scale_int (limit * GST_SECOND, self->info.fps_d,
            self->info.fps_n);
      min += wait;
      if (GST_CLOCK_TIME_IS_VALID (max))
        max += held;
      gst_query_set_latency (query, live, min, max);
      return TRUE;
    }
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
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);

  (void) pad;
  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  if (!active) {
    /* a chain waiting for room returns */
    g_mutex_lock (&self->lock);
    self->flushing = TRUE;
    self->srcresult = GST_FLOW_FLUSHING;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
  }
  return TRUE;
}

static gboolean
gst_gpunet_classify_src_activate_mode (GstPad * pad, GstObject * parent,
    GstPadMode mode, gboolean active)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);

  if (mode != GST_PAD_MODE_PUSH)
    return FALSE;
  g_mutex_lock (&self->lock);
  self->flushing = !active;
  self->srcresult = active ? GST_FLOW_OK : GST_FLOW_FLUSHING;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  if (active)
    return gst_pad_start_task (pad, (GstTaskFunction) gst_gpunet_classify_loop,
        self, NULL);
  return gst_pad_stop_task (pad);
}

/* ---- records (src task) ------------------------------------------------------------ */

static void
track_free (gpointer data)
{
  Track *t = data;

  g_free (t->probs);
  g_free (t);
}

static void
clear_tracks (GstGpunetClassify * self)
{
  GHashTableIter iter;
  gpointer v;

  if (self->tracks == NULL)
    return;
  g_hash_table_iter_init (&iter, self->tracks);
  while (g_hash_table_iter_next (&iter, NULL, &v))
    track_free (v);
  g_hash_table_remove_all (self->tracks);
}

/* compare for sorting class scores best first, ids ascending among equals */
static int
compare_scores (const void *a, const void *b)
{
  const gpunet_class_score *x = a, *y = b;

  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  return x->id - y->id;
}

/* Smoothing and label changes of one record at `roi_id`: with smoothing > 0,
 * replaces `scores` (k results) by the top-k of the moving average, updated with
 * this frame's k probabilities (classes outside them count as 0).  Posts
 * gpunetclassify-label-changed when the (smoothed) top-1 differs from the one last
 * announced and has held for label-hold classified frames. */
static void
track_update (GstGpunetClassify * self, ModelCtx * ctx, gint roi_id,
    gpunet_class_score * scores, guint k, gfloat smoothing, guint hold,
    GstBuffer * buf, guint64 frame_no)
{
  Track *t = g_hash_table_lookup (self->tracks, GINT_TO_POINTER (roi_id));
  gint top;
  guint i;

  /* NaN or Inf would poison the average for good: such a frame (its record
   * is marked finite=false) leaves the track as it was */
  for (i = 0; i < k; i++)
    if (!isfinite (scores[i].score))
      return;

  /* regions come and go: forget those not seen for a while */
  if (t == NULL && g_hash_table_size (self->tracks) >= 1024) {
    GHashTableIter iter;
    gpointer v;

    g_hash_table_iter_init (&iter, self->tracks);
    while (g_hash_table_iter_next (&iter, NULL, &v))
      if (((Track *) v)->last_frame + 300 < frame_no) {
        track_free (v);
        g_hash_table_iter_remove (&iter);
      }
  }
  if (t == NULL) {
    t = g_new0 (Track, 1);
    t->shown = -1;
    t->candidate = -1;
    g_hash_table_insert (self->tracks, GINT_TO_POINTER (roi_id), t);
  }
  if (smoothing > 0.0f) {
    gint c, n = ctx->num_classes;
    gpunet_class_score *all;

    if (t->probs == NULL)
      t->probs = g_new0 (gfloat, n);
    if (!t->have) {
      memset (t->probs, 0, sizeof (gfloat) * n);
      for (i = 0; i < k; i++)
        t->probs[scores[i].id] = scores[i].score;
    } else {
      for (c = 0; c < n; c++)
        t->probs[c] *= smoothing;
      for (i = 0; i < k; i++)
        t->probs[scores[i].id] += (1.0f - smoothing) * scores[i].score;
    }
    all = g_new (gpunet_class_score, n);
    for (c = 0; c < n; c++) {
      all[c].id = c;
      all[c].score = t->probs[c];
    }
    qsort (all, n, sizeof *all, compare_scores);
    memcpy (scores, all, sizeof *scores * k);
    g_free (all);
  }
  t->have = TRUE;
  t->last_frame = frame_no;

  top = scores[0].id;
  if (top == t->candidate)
    t->candidate_frames++;
  else {
    t->candidate = top;
    t->candidate_frames = 1;
  }
  if (top != t->shown && t->candidate_frames >= hold) {
    GstStructure *s = gst_structure_new (LABEL_CHANGED_MESSAGE,
        "stream-id", G_TYPE_STRING, self->stream_id,
        "roi-id", G_TYPE_INT, roi_id,
        "pts", G_TYPE_UINT64, (guint64) GST_BUFFER_PTS (buf),
        "model", G_TYPE_STRING, ctx->name,
        "old-label", G_TYPE_STRING, t->shown >= 0 ? ctx->labels[t->shown] : "",
        "old-label-id", G_TYPE_INT, t->shown,
        "new-label", G_TYPE_STRING, ctx->labels[top],
        "new-label-id", G_TYPE_INT, top,
        "confidence", G_TYPE_DOUBLE, (gdouble) scores[0].score, NULL);

    t->shown = top;
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self), s));
  }
}

/* Builds one record from the k best classes `scores` (top-k and threshold
 * applied) and attaches it: to the buffer as the frame's meta when `roi` is NULL,
 * else to that region meta.  Posts it on the bus and appends its JSON line when
 * asked.  `raw` (smoothing) is the frame's own top-1. */
static void
emit_record (GstGpunetClassify * self, const Item * it,
    GstVideoRegionOfInterestMeta * roi, const gpunet_class_score * scores,
    guint n_scores, gboolean inferred, const gpunet_class_score * raw)
{
  const ModelCtx *ctx = it->ctx;
  GstGpunetClassification c;
  gint ids[MAX_TOP_K];
  gdouble values[MAX_TOP_K];
  const gchar *labels[MAX_TOP_K];
  guint i, n = 0;

  for (i = 0; i < n_scores && i < it->rs.top_k; i++) {
    const gpunet_class_score *r = &scores[i];

    if (r->score < it->rs.threshold)
      break;                    /* sorted: nothing later passes */
    ids[n] = r->id;
    values[n] = r->score;
    labels[n] = (r->id >= 0 && r->id < ctx->num_classes) ?
        ctx->labels[r->id] : "class-unknown";
    n++;
  }

  memset (&c, 0, sizeof c);
  c.model = ctx->name;
  c.num_classes = ctx->num_classes;
  c.roi_id = roi ? roi->id : -1;
  c.inferred = inferred;
  c.best_id = scores[0].id;
  c.best_score = scores[0].score;
  c.best_label = (c.best_id >= 0 && c.best_id < ctx->num_classes) ?
      ctx->labels[c.best_id] : "class-unknown";
  c.n = n;
  c.ids = ids;
  c.scores = values;
  c.labels = labels;
  c.finite = TRUE;
  for (i = 0; i < n_scores; i++)
    c.finite = c.finite && isfinite (scores[i].score);
  if (!c.finite && inferred) {
    if (self->nonfinite_warned < 10)
      GST_ELEMENT_WARNING (self, STREAM, DECODE,
          ("Frame %" G_GUINT64_FORMAT " (pts %" GST_TIME_FORMAT ")%s: the "
              "model's outputs are NaN or infinite (a checkpoint with broken "
              "weights, or an fp16 overflow: try precision=fp32); the record "
              "is marked finite=false%s", it->rs.frame_no,
              GST_TIME_ARGS (GST_BUFFER_PTS (it->buf)), roi ? ", a region" : "",
              self->nonfinite_warned == 9 ? "; further frames like this are "
              "not warned about" : ""), (NULL));
    self->nonfinite_warned++;
  }
  if (raw != NULL) {
    c.has_raw = TRUE;
    c.raw_id = raw->id;
    c.raw_score = raw->score;
    c.raw_label = (raw->id >= 0 && raw->id < ctx->num_classes) ?
        ctx->labels[raw->id] : "class-unknown";
  }

  if (roi != NULL)
    gst_gpunet_classification_add_to_roi (roi, &c);
  else if (gst_buffer_add_gpunet_classification_meta (it->buf, &c) == NULL)
    GST_WARNING_OBJECT (self, "could not add the classification meta");

  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ", roi %d: %s (%d) %.4f%s",
      it->rs.frame_no, c.roi_id, c.best_label, c.best_id, c.best_score,
      inferred ? "" : " (carried)");

  if (it->rs.post) {
    GstStructure *s = gst_structure_new_empty (GPUNET_MESSAGE_NAME);

    gst_gpunet_classification_to_structure (&c, s);
    gst_structure_set (s,
        "timestamp", G_TYPE_UINT64, (guint64) GST_BUFFER_PTS (it->buf),
        "running-time", G_TYPE_UINT64, (guint64) it->rs.running_time,
        "frame", G_TYPE_UINT64, it->rs.frame_no, NULL);
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self), s));
  }
  if (self->json_lines != NULL)
    gst_gpunet_classification_to_json (&c, GST_BUFFER_PTS (it->buf),
        it->rs.frame_no, self->json_lines);
}

/* From the task, before it posts an error: the next chain returns it (so a
 * producer that sees the message also sees the flow). */
static void
set_flow_error (GstGpunetClassify * self)
{
  g_mutex_lock (&self->lock);
  if (self->srcresult == GST_FLOW_OK)
    self->srcresult = GST_FLOW_ERROR;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

/* json-output: writes the buffer's records and flushes them to the file. */
static gboolean
write_json_lines (GstGpunetClassify * self)
{
  GString *lines = self->json_lines;
  gint err = 0;

  errno = 0;
  if (lines->len > 0 && (fwrite (lines->str, 1, lines->len,
              self->json_file) != lines->len || fflush (self->json_file) != 0))
    err = errno ? errno : EIO;
  g_string_truncate (lines, 0);
  if (err != 0) {
    set_flow_error (self);
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Cannot write to the JSON output file '%s': %s. Free space on its "
            "disk, or set json-output to another file", self->json_path,
            g_strerror (err)), ("json-output property"));
    return FALSE;
  }
  return TRUE;
}

/* The records of a buffer whose results are in, in stream order.  FALSE (error
 * posted) when the frame could not be classified or the JSON write failed. */
static gboolean
finish_buffer (GstGpunetClassify * self, Item * it)
{
  gfloat smoothing;
  guint hold, i, k = it->ctx->k;

  if (it->mapped) {
    gst_video_frame_unmap (&it->vframe);
    it->mapped = FALSE;
  }
  if (it->status != GPUNET_OK) {
    set_flow_error (self);
    post_engine_error (self, it->status, it->error, "classifying a frame");
    return FALSE;
  }
  GST_OBJECT_LOCK (self);
  smoothing = self->smoothing;
  hold = self->label_hold;
  GST_OBJECT_UNLOCK (self);

  if (it->model_switch) {
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self),
            gst_structure_new (MODEL_CHANGED_MESSAGE,
                "old-model", G_TYPE_STRING, it->old_model,
                "model", G_TYPE_STRING, it->ctx->name,
                "engine-id", G_TYPE_UINT, it->ctx->shared->id,
                "pts", G_TYPE_UINT64, (guint64) GST_BUFFER_PTS (it->buf),
                "frame", G_TYPE_UINT64, it->rs.frame_no, NULL)));
    self->push_have_last = FALSE;
    gst_gpunet_roi_cache_clear (self->roi_cache);
  }
  /* classes differ between models: the averages restart with a new model */
  if (self->track_model != it->ctx->name) {
    clear_tracks (self);
    self->track_model = it->ctx->name;
  }
  if (it->cycle_start)
    gst_gpunet_roi_cache_clear (self->roi_cache);

  if (it->frame_record) {
    if (it->frame_inferred) {
      gpunet_class_score raw = it->scores[0];

      memcpy (self->last, it->scores, sizeof (gpunet_class_score) * k);
      self->last_n = k;
      self->push_have_last = TRUE;
      track_update (self, it->ctx, -1, self->last, k, smoothing, hold, it->buf,
          it->rs.frame_no);
      emit_record (self, it, NULL, self->last, k, TRUE,
          smoothing > 0.0f ? &raw : NULL);
    } else if (self->push_have_last) {
      emit_record (self, it, NULL, self->last, self->last_n, FALSE, NULL);
    }
  }
  for (i = 0; it->rois && i < it->rois->len; i++) {
    GstGpunetRoi *r = &g_array_index (it->rois, GstGpunetRoi, i);
    gint img = it->roi_image[i];

    if (img >= 0) {
      gpunet_class_score *s = it->scores + (gsize) img * k;
      gpunet_class_score raw = s[0];

      if (r->unique_id)
        track_update (self, it->ctx, r->meta->id, s, k, smoothing, hold,
            it->buf, it->rs.frame_no);
      if (r->unique_id)
        gst_gpunet_roi_cache_store (self->roi_cache, r->meta->id,
            r->meta->roi_type, s, k);
      emit_record (self, it, r->meta, s, k, TRUE,
          smoothing > 0.0f && r->unique_id ? &raw : NULL);
    } else {
      guint n;
      const gpunet_class_score *s = gst_gpunet_roi_cache_lookup
          (self->roi_cache, r->meta->id, r->meta->roi_type, &n);

      if (s != NULL)
        emit_record (self, it, r->meta, s, n, FALSE, NULL);
      else
        GST_WARNING_OBJECT (self, "region %d: no result to carry",
            r->meta->id);
    }
  }
  if (self->json_lines != NULL && !write_json_lines (self))
    return FALSE;
  return TRUE;
}

/* The src pad's task: pushes the FIFO's head once it is ready. */
static void
gst_gpunet_classify_loop (GstGpunetClassify * self)
{
  GstFlowReturn ret = GST_FLOW_OK;
  Item *it;

  g_mutex_lock (&self->lock);
  while (!self->flushing && (self->items.length == 0
          || !((Item *) g_queue_peek_head (&self->items))->ready))
    g_cond_wait (&self->cond, &self->lock);
  if (self->flushing) {
    g_mutex_unlock (&self->lock);
    gst_pad_pause_task (self->srcpad);
    return;
  }
  it = g_queue_pop_head (&self->items);
  if (it->kind == ITEM_BUFFER)
    self->in_flight--;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);

  if (it->kind == ITEM_EVENT) {
    GstEvent *ev = g_steal_pointer (&it->event);

    if (GST_EVENT_TYPE (ev) == GST_EVENT_STREAM_START) {
      const gchar *sid = NULL;

      gst_event_parse_stream_start (ev, &sid);
      g_free (self->stream_id);
      self->stream_id = g_strdup (sid);
    }
    gst_pad_push_event (self->srcpad, ev);
  } else {
    GstBuffer *buf;

    if (!finish_buffer (self, it))
      ret = GST_FLOW_ERROR;
    buf = g_steal_pointer (&it->buf);
    if (ret == GST_FLOW_OK)
      ret = gst_pad_push (self->srcpad, buf);
    else
      gst_buffer_unref (buf);
  }
  item_free (it);

  if (ret != GST_FLOW_OK) {
    g_mutex_lock (&self->lock);
    if (self->srcresult == GST_FLOW_OK || ret != GST_FLOW_FLUSHING)
      self->srcresult = ret;
    g_cond_broadcast (&self->cond);
    g_mutex_unlock (&self->lock);
    if (ret == GST_FLOW_NOT_LINKED || ret < GST_FLOW_EOS) {
      if (ret != GST_FLOW_ERROR)
        GST_ELEMENT_FLOW_ERROR (self, ret);
      gst_pad_push_event (self->srcpad, gst_event_new_eos ());
    }
    GST_DEBUG_OBJECT (self, "pausing the task: %s", gst_flow_get_name (ret));
    gst_pad_pause_task (self->srcpad);
  }
}

gboolean
gst_gpunet_classify_register (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (gpunetclassify, plugin);
}
