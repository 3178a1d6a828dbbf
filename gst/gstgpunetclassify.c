/* gstgpunetclassify.c: the gpunetclassify element. Loads a GPUNet model in start(),
 * chooses the frame-to-engine format mapping in set_info(), classifies frames and/or
 * their region metas in place (the data is never modified) and attaches the results
 * (GstGpunetClassificationMeta, region parameter structures), optionally also posting
 * them on the bus and writing them to a JSON lines file. */

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
 * id. Crops of one size are classified together, up to
 * #GstGpunetClassify:batch-size per engine call. With
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
 * With #GstGpunetClassify:batch-size N > 1, frames are queued and classified N at
 * a time in one engine call (better throughput, especially on a GPU); up to N-1
 * frames are held back, so it suits offline work rather than live pipelines. The
 * queue is classified early at EOS, on a caps change and before any other
 * serialized event (frames and events keep their order), and dropped on a flush.
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
#include <string.h>

#include <glib/gstdio.h>

#include "gstgpunetclassify.h"
#include "gstgpunetcuda.h"
#include "gstgpunetmeta.h"

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
  PROP_JSON_OUTPUT
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

#define VIDEO_FORMATS "{ NV12, I420, RGBA, BGRA, RGBx, BGRx, RGB, BGR }"

/* the CUDA glue's state (gstgpunetcuda.c) */
typedef struct
{
  GstGpunetCuda *cuda;
  gint precision;               /* PROP_PRECISION, a gpunet_precision */
} GstGpunetClassifyPrivate;

#define gst_gpunet_classify_parent_class parent_class
G_DEFINE_TYPE_WITH_PRIVATE (GstGpunetClassify, gst_gpunet_classify,
    GST_TYPE_BASE_TRANSFORM);
#define CUDA(self) (((GstGpunetClassifyPrivate *) \
    gst_gpunet_classify_get_instance_private (self))->cuda)
#define PRECISION(self) (((GstGpunetClassifyPrivate *) \
    gst_gpunet_classify_get_instance_private (self))->precision)
GST_ELEMENT_REGISTER_DEFINE (gpunetclassify, "gpunetclassify", GST_RANK_NONE,
    GST_TYPE_GPUNET_CLASSIFY);

static void gst_gpunet_classify_finalize (GObject * object);
static void gst_gpunet_classify_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec);
static void gst_gpunet_classify_get_property (GObject * object, guint prop_id,
    GValue * value, GParamSpec * pspec);
static gboolean gst_gpunet_classify_start (GstBaseTransform * trans);
static gboolean gst_gpunet_classify_stop (GstBaseTransform * trans);
static gboolean gst_gpunet_classify_set_caps (GstBaseTransform * trans,
    GstCaps * incaps, GstCaps * outcaps);
static GstFlowReturn gst_gpunet_classify_transform_ip (GstBaseTransform *
    trans, GstBuffer * buf);
static void gst_gpunet_classify_set_context (GstElement * element,
    GstContext * context);
static gboolean gst_gpunet_classify_query (GstBaseTransform * trans,
    GstPadDirection direction, GstQuery * query);
static GstCaps *gst_gpunet_classify_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter);
static GstFlowReturn gst_gpunet_classify_submit_input_buffer (GstBaseTransform *
    trans, gboolean is_discont, GstBuffer * buf);
static GstFlowReturn gst_gpunet_classify_generate_output (GstBaseTransform *
    trans, GstBuffer ** outbuf);
static gboolean gst_gpunet_classify_sink_event (GstBaseTransform * trans,
    GstEvent * event);
static gboolean gst_gpunet_classify_propose_allocation (GstBaseTransform *
    trans, GstQuery * decide_query, GstQuery * query);
static GstFlowReturn classify_frames (gpointer user, GstBuffer ** bufs, guint n,
    guint k, gpunet_class_score * out);

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
  GstBaseTransformClass *trans_class = GST_BASE_TRANSFORM_CLASS (klass);
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
          DEFAULT_MODEL, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_CHECKPOINT,
      g_param_spec_string ("checkpoint", "Checkpoint",
          "Weights file matching the model (required): NVIDIA's .pth.tar/.pth "
          "checkpoint or a .safetensors file",
          DEFAULT_CHECKPOINT, rw | GST_PARAM_MUTABLE_READY));
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
   * Frames classified together in one engine call. With N > 1 the element
   * holds up to N-1 frames back (latency) until N have arrived; EOS, a caps
   * change and other serialized events classify a partial batch, a flush drops
   * it. Frames leave in order, with their timestamps and flags. Region crops
   * of one size go through the engine up to N at a time; with
   * roi-mode=regions no frame is held back.
   */
  g_object_class_install_property (gobject_class, PROP_BATCH_SIZE,
      g_param_spec_uint ("batch-size", "Batch size",
          "Frames classified together; >1 holds up to N-1 frames back "
          "(latency) and suits offline work. Also the most region crops of "
          "one size per engine call (roi-mode=regions holds no frame back)",
          1, MAX_BATCH_SIZE,
          DEFAULT_BATCH_SIZE, rw | GST_PARAM_MUTABLE_READY));
  /**
   * GstGpunetClassify:roi-mode:
   *
   * What is classified: `frame` the whole frame (a GstCustomMeta on the
   * buffer), `regions` each #GstVideoRegionOfInterestMeta of the buffer whose
   * type is in #GstGpunetClassify:roi-types (a parameter structure on that
   * meta; the frame gets no record), `both` the two. A region is cropped to
   * the frame, skipped when empty; NV12/I420 crops start at even coordinates.
   * With `regions`, batch-size only bounds the crops per engine call and no
   * frame is held back.
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

  trans_class->start = GST_DEBUG_FUNCPTR (gst_gpunet_classify_start);
  trans_class->stop = GST_DEBUG_FUNCPTR (gst_gpunet_classify_stop);
  trans_class->set_caps = GST_DEBUG_FUNCPTR (gst_gpunet_classify_set_caps);
  trans_class->transform_ip =
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_transform_ip);
  trans_class->query = GST_DEBUG_FUNCPTR (gst_gpunet_classify_query);
  trans_class->transform_caps =
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_transform_caps);
  trans_class->submit_input_buffer =
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_submit_input_buffer);
  trans_class->generate_output =
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_generate_output);
  trans_class->sink_event = GST_DEBUG_FUNCPTR (gst_gpunet_classify_sink_event);
  trans_class->propose_allocation =
      GST_DEBUG_FUNCPTR (gst_gpunet_classify_propose_allocation);
  trans_class->passthrough_on_same_caps = FALSE;
  trans_class->transform_ip_on_passthrough = FALSE;

  gst_type_mark_as_plugin_api (GST_TYPE_GPUNET_BACKEND, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPUNET_RESIZE_MODE, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPUNET_PRECISION, 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPUNET_ROI_MODE, 0);
}

static void
gst_gpunet_classify_init (GstGpunetClassify * self)
{
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
  self->batch_size = DEFAULT_BATCH_SIZE;
  self->roi_mode = DEFAULT_ROI_MODE;
  self->roi_types = g_strdup (DEFAULT_ROI_TYPES);
  self->roi_type_quarks = gst_gpunet_roi_types_parse (self->roi_types);
  self->json_output = g_strdup (DEFAULT_JSON_OUTPUT);
  PRECISION (self) = DEFAULT_PRECISION;
  CUDA (self) = gst_gpunet_cuda_new ();

  /* metadata is written to every buffer: in place, never passthrough (that
   * would skip transform_ip); basetransform makes the buffer writable */
  gst_base_transform_set_in_place (GST_BASE_TRANSFORM (self), TRUE);
  gst_base_transform_set_passthrough (GST_BASE_TRANSFORM (self), FALSE);
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
  gst_gpunet_cuda_free (CUDA (self));

  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* Properties that need a reload only take effect at the next start(). */
static gboolean
check_ready_mutable (GstGpunetClassify * self, GParamSpec * pspec)
{
  if (GST_STATE (self) > GST_STATE_READY) {
    GST_WARNING_OBJECT (self, "property '%s' can only be changed in the NULL "
        "or READY state; ignored", pspec->name);
    return FALSE;
  }
  return TRUE;
}

static void
gst_gpunet_classify_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (object);

  GST_OBJECT_LOCK (self);
  if ((pspec->flags & GST_PARAM_MUTABLE_READY)
      && !check_ready_mutable (self, pspec)) {
    GST_OBJECT_UNLOCK (self);
    return;
  }
  switch (prop_id) {
    case PROP_MODEL:
      g_free (self->model_name);
      self->model_name = g_value_dup_string (value);
      break;
    case PROP_CHECKPOINT:
      g_free (self->checkpoint);
      self->checkpoint = g_value_dup_string (value);
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
      PRECISION (self) = g_value_get_enum (value);
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
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
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
      g_value_set_enum (value, PRECISION (self));
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
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

/* ---- start / stop ---------------------------------------------------------------- */

/* Posts an engine failure as an element error: the engine's sentence is the
 * message, the status and the context go to the debug string. Takes `text`. */
static void
post_engine_error (GstGpunetClassify * self, gpunet_status status, char *text,
    const gchar * context)
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
  free (text);
}

/* Fills self->labels from `path` (one per line) or the defaults. Posts the error
 * and returns FALSE when the file cannot be read or has the wrong count. */
static gboolean
load_labels (GstGpunetClassify * self, const gchar * path)
{
  gint n = self->num_classes, i;

  self->labels = g_new0 (gchar *, n + 1);

  if (path == NULL || *path == '\0') {
    for (i = 0; i < n; i++) {
      const char *l = n == 1000 ? gpunet_imagenet_label (i) : NULL;
      self->labels[i] = l ? g_strdup (l) : g_strdup_printf ("class-%d", i);
    }
    return TRUE;
  } else {
    gchar *contents = NULL;
    gchar **lines;
    GError *err = NULL;
    guint n_lines;

    if (!g_file_get_contents (path, &contents, NULL, &err)) {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Cannot read the labels file '%s': %s", path, err->message),
          ("labels property"));
      g_clear_error (&err);
      return FALSE;
    }
    lines = g_strsplit (contents, "\n", -1);
    g_free (contents);
    n_lines = g_strv_length (lines);
    /* a final newline leaves one empty string: not a label */
    if (n_lines > 0 && lines[n_lines - 1][0] == '\0')
      n_lines--;
    if ((gint) n_lines != n) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("The labels file '%s' has %u labels, but model '%s' has %d classes",
              path, n_lines, self->model_display_name, n),
          ("one label per line is expected"));
      g_strfreev (lines);
      return FALSE;
    }
    for (i = 0; i < n; i++) {
      gchar *l = g_strstrip (lines[i]);
      self->labels[i] = *l ? g_strdup (l) : g_strdup_printf ("class-%d", i);
    }
    g_strfreev (lines);
    return TRUE;
  }
}

static gboolean
gst_gpunet_classify_start (GstBaseTransform * trans)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (trans);
  gchar *model_name, *checkpoint, *labels_path, *context, *json_path;
  GstGpunetBackend backend;
  gpunet_session_params params;
  gpunet_status st;
  char *text = NULL;
  gboolean ok = FALSE, pushed, roi_types_set;
  guint batch_size;

  GST_OBJECT_LOCK (self);
  model_name = g_strdup (self->model_name ? self->model_name : DEFAULT_MODEL);
  checkpoint = g_strdup (self->checkpoint);
  labels_path = g_strdup (self->labels_path);
  backend = self->backend;
  gpunet_session_params_init (&params);
  params.backend = (gpunet_backend_kind) backend;
  params.n_threads = (int) self->n_threads;
  batch_size = self->batch_size;
  params.max_batch = (int) batch_size;
  params.precision = (gpunet_precision) PRECISION (self);
  self->pre.resize_mode = (gpunet_resize_mode) self->resize_mode;
  self->pre.crop_pct = self->crop_pct;
  self->mode = self->roi_mode;
  roi_types_set = self->roi_type_quarks != NULL;
  json_path = g_strdup (self->json_output);
  GST_OBJECT_UNLOCK (self);

  if (checkpoint == NULL || *checkpoint == '\0') {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("No checkpoint is set: set the 'checkpoint' property to the GPUNet "
            "weights file for model '%s' (e.g. gpunetclassify "
            "checkpoint=/path/to/0.65ms.pth.tar)", model_name),
        ("the checkpoint property is required"));
    goto done;
  }
  if (roi_types_set && self->mode == GST_GPUNET_ROI_MODE_FRAME)
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("roi-types is set, but roi-mode is 'frame', so no region is "
            "classified: set roi-mode=regions (or both), or clear roi-types"),
        ("roi-types is only read with roi-mode regions or both"));

  /* before the model: a wrong path fails fast */
  if (json_path != NULL && *json_path != '\0') {
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
    self->json_path = g_steal_pointer (&json_path);
    self->json_lines = g_string_new (NULL);
  }

  context = g_strdup_printf ("loading model '%s' with checkpoint '%s'",
      model_name, checkpoint);
  st = gpunet_model_load (model_name, checkpoint, &self->model, &text);
  if (st != GPUNET_OK) {
    post_engine_error (self, st, text, context);
    g_free (context);
    goto done;
  }
  g_free (context);

  self->num_classes = gpunet_model_num_classes (self->model);
  self->model_display_name = g_strdup (gpunet_model_name (self->model));
  if (!load_labels (self, labels_path))
    goto done;

  /* a CUDA session lives in the GstCudaContext shared with the neighbours */
  if (backend != GST_GPUNET_BACKEND_CPU)
    gst_gpunet_cuda_open (CUDA (self), GST_ELEMENT (self), &params.device);
  pushed = gst_gpunet_cuda_push (CUDA (self));
  st = gpunet_session_new (self->model, &params, &self->session, &text);
  gst_gpunet_cuda_pop (CUDA (self), pushed);
  if (st != GPUNET_OK) {
    if (text == NULL && st == GPUNET_ERR_BACKEND_UNAVAILABLE)
      text = strdup ("backend=cuda was requested, but the CUDA backend is not "
          "built in or no usable GPU is present; use backend=cpu or auto");
    post_engine_error (self, st, text, "creating a session");
    goto done;
  }

  if (backend == GST_GPUNET_BACKEND_AUTO
      && g_strcmp0 (gpunet_session_backend_name (self->session), "cuda") != 0) {
    GST_ELEMENT_INFO (self, RESOURCE, SETTINGS,
        ("backend=auto: CUDA is not available, using the %s backend",
            gpunet_session_backend_name (self->session)), (NULL));
  }
  gst_gpunet_cuda_set_device_path (CUDA (self),
      g_strcmp0 (gpunet_session_backend_name (self->session), "cuda") == 0);
  GST_INFO_OBJECT (self, "model %s (%d classes, %dx%d input, weights from %s) "
      "on the %s backend", self->model_display_name, self->num_classes,
      gpunet_model_resolution (self->model),
      gpunet_model_resolution (self->model),
      gpunet_model_weights_source (self->model),
      gpunet_session_backend_name (self->session));

  /* with regions only, no frame waits: batch-size bounds the crops per call */
  self->max_batch = batch_size;
  if (batch_size > 1 && self->mode != GST_GPUNET_ROI_MODE_REGIONS)
    self->batch = gst_gpunet_batch_new (batch_size,
        MIN (self->num_classes, MAX_TOP_K), classify_frames, self);
  if (self->mode != GST_GPUNET_ROI_MODE_FRAME) {
    self->roi_cache = gst_gpunet_roi_cache_new (MIN (self->num_classes,
            MAX_TOP_K));
    self->rois = g_array_new (FALSE, FALSE, sizeof (GstGpunetRoi));
  }
  self->frame_count = 0;
  self->have_last = FALSE;
  self->carried = 0;
  ok = TRUE;

done:
  g_free (model_name);
  g_free (checkpoint);
  g_free (labels_path);
  g_free (json_path);
  if (!ok)
    gst_gpunet_classify_stop (trans);
  return ok;
}

static gboolean
gst_gpunet_classify_stop (GstBaseTransform * trans)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (trans);
  gboolean pushed;

  /* queued frames go first: the streaming thread has stopped */
  g_clear_pointer (&self->batch, gst_gpunet_batch_free);
  pushed = gst_gpunet_cuda_push (CUDA (self));
  g_clear_pointer (&self->session, gpunet_session_free);
  gst_gpunet_cuda_pop (CUDA (self), pushed);
  gst_gpunet_cuda_close (CUDA (self));
  g_clear_pointer (&self->model, gpunet_model_unref);
  g_clear_pointer (&self->labels, g_strfreev);
  g_clear_pointer (&self->model_display_name, g_free);
  g_clear_pointer (&self->roi_cache, gst_gpunet_roi_cache_free);
  g_clear_pointer (&self->rois, g_array_unref);
  if (self->json_file != NULL && fclose (self->json_file) != 0)
    GST_ELEMENT_WARNING (self, RESOURCE, CLOSE,
        ("Closing the JSON output file '%s' failed: %s; its last records may "
            "be missing", self->json_path, g_strerror (errno)), (NULL));
  self->json_file = NULL;
  g_clear_pointer (&self->json_path, g_free);
  if (self->json_lines != NULL)
    g_string_free (g_steal_pointer (&self->json_lines), TRUE);
  self->num_classes = 0;
  self->have_last = FALSE;
  return TRUE;
}

/* ---- caps ------------------------------------------------------------------------ */

static gboolean
gst_gpunet_classify_set_caps (GstBaseTransform * trans, GstCaps * incaps,
    GstCaps * outcaps)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (trans);
  gpunet_image *img = &self->image_template;
  GstVideoInfo info;

  (void) outcaps;

  if (!gst_video_info_from_caps (&info, incaps)) {
    GST_ERROR_OBJECT (self, "invalid caps %" GST_PTR_FORMAT, incaps);
    return FALSE;
  }
  if (gst_gpunet_cuda_caps_are_cuda (incaps) && (self->session == NULL
          || g_strcmp0 (gpunet_session_backend_name (self->session),
              "cuda") != 0)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION,
        ("CUDA memory frames need the CUDA backend, but this session runs on "
            "the %s backend: set backend=cuda, or put cudadownload before "
            "gpunetclassify", self->session ?
            gpunet_session_backend_name (self->session) : "no"),
        ("caps %" GST_PTR_FORMAT, incaps));
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
      GST_ERROR_OBJECT (self, "unsupported format %s",
          GST_VIDEO_INFO_NAME (&info));
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
  /* a new stream shape: the next frame is classified again */
  self->have_last = FALSE;
  self->carried = 0;

  GST_DEBUG_OBJECT (self, "%s %dx%d, matrix %s, %s range",
      GST_VIDEO_INFO_NAME (&info), img->width, img->height,
      img->matrix == GPUNET_MATRIX_BT709 ? "BT.709" : "BT.601",
      img->full_range ? "full" : "limited");
  return TRUE;
}

/* ---- per frame ------------------------------------------------------------------- */

/* Maps `buf` for the engine (device pointers for CUDA memory of our context,
 * else host memory) into `frame` and `img`; posts the error and returns FALSE
 * when it cannot. */
static gboolean
map_frame (GstGpunetClassify * self, GstBuffer * buf, GstVideoFrame * frame,
    gpunet_image * img)
{
  *img = self->image_template;
  if (!gst_gpunet_cuda_map_frame (CUDA (self), GST_ELEMENT (self), buf,
          &self->info, frame, img)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Cannot map the video frame"),
        (NULL));
    return FALSE;
  }
  return TRUE;
}

/* Classifies the mapped frame `img` into self->last. */
static GstFlowReturn
classify_frame (GstGpunetClassify * self, const gpunet_image * img)
{
  gpunet_status st;
  char *text = NULL;
  gboolean pushed;
  gint k = MIN (self->num_classes, MAX_TOP_K);

  /* always the largest k: top-k may grow while a result is carried; the
   * engine returns once the GPU is done with the frame */
  pushed = gst_gpunet_cuda_push (CUDA (self));
  st = gpunet_session_classify (self->session, img, 1, &self->pre, k,
      self->last, &text);
  gst_gpunet_cuda_pop (CUDA (self), pushed);

  if (st != GPUNET_OK) {
    post_engine_error (self, st, text, "classifying a frame");
    return GST_FLOW_ERROR;
  }
  self->last_n = k;
  return GST_FLOW_OK;
}

/* What the records of one buffer share. */
typedef struct
{
  GstBuffer *buf;
  guint64 frame_no;
  guint top_k;
  gfloat threshold;
  guint interval;
  gboolean post;
} RecordContext;

/* Builds one record from the `n_scores` best classes `scores` (top-k and
 * threshold applied) and attaches it: to the buffer as the frame's meta when
 * `roi` is NULL, else to that region meta. Posts it on the bus and appends its
 * JSON line when asked. */
static void
emit_record (GstGpunetClassify * self, const RecordContext * rc,
    GstVideoRegionOfInterestMeta * roi, const gpunet_class_score * scores,
    guint n_scores, gboolean inferred)
{
  GstGpunetClassification c;
  gint ids[MAX_TOP_K];
  gdouble values[MAX_TOP_K];
  const gchar *labels[MAX_TOP_K];
  guint i, n = 0;

  for (i = 0; i < n_scores && i < rc->top_k; i++) {
    const gpunet_class_score *r = &scores[i];

    if (r->score < rc->threshold)
      break;                    /* sorted: nothing later passes */
    ids[n] = r->id;
    values[n] = r->score;
    labels[n] = (r->id >= 0 && r->id < self->num_classes) ?
        self->labels[r->id] : "class-unknown";
    n++;
  }

  c.model = self->model_display_name;
  c.num_classes = self->num_classes;
  c.roi_id = roi ? roi->id : -1;
  c.inferred = inferred;
  c.best_id = scores[0].id;
  c.best_score = scores[0].score;
  c.best_label = (c.best_id >= 0 && c.best_id < self->num_classes) ?
      self->labels[c.best_id] : "class-unknown";
  c.n = n;
  c.ids = ids;
  c.scores = values;
  c.labels = labels;

  if (roi != NULL)
    gst_gpunet_classification_add_to_roi (roi, &c);
  else if (gst_buffer_add_gpunet_classification_meta (rc->buf, &c) == NULL)
    GST_WARNING_OBJECT (self, "could not add the classification meta");

  GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ", roi %d: %s (%d) %.4f%s",
      rc->frame_no, c.roi_id, c.best_label, c.best_id, c.best_score,
      inferred ? "" : " (carried)");

  if (rc->post) {
    GstStructure *s = gst_structure_new_empty (GPUNET_MESSAGE_NAME);
    GstClockTime ts = GST_BUFFER_PTS (rc->buf);
    GstClockTime rt =
        gst_segment_to_running_time (&GST_BASE_TRANSFORM (self)->segment,
        GST_FORMAT_TIME, ts);

    gst_gpunet_classification_to_structure (&c, s);
    gst_structure_set (s,
        "timestamp", G_TYPE_UINT64, (guint64) ts,
        "running-time", G_TYPE_UINT64, (guint64) rt,
        "frame", G_TYPE_UINT64, rc->frame_no, NULL);
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_element (GST_OBJECT (self), s));
  }
  if (self->json_lines != NULL)
    gst_gpunet_classification_to_json (&c, GST_BUFFER_PTS (rc->buf),
        rc->frame_no, self->json_lines);
}

/* qsort: regions by crop size, so that crops of one size are neighbours. */
static int
compare_crop_size (const void *a, const void *b)
{
  const GstGpunetRoi *ra = *(GstGpunetRoi * const *) a;
  const GstGpunetRoi *rb = *(GstGpunetRoi * const *) b;

  if (ra->width != rb->width)
    return ra->width < rb->width ? -1 : 1;
  if (ra->height != rb->height)
    return ra->height < rb->height ? -1 : 1;
  return 0;
}

/* Classifies the crops of the `n` regions `rois` (reordered) of the mapped
 * frame `img`: crops of one size together, up to the session's max_batch per
 * engine call (a CUDA batch must be of one size). Writes k results per region
 * to `out` and points each region's scores at its own. */
static GstFlowReturn
classify_crops (GstGpunetClassify * self, const gpunet_image * img,
    GstGpunetRoi ** rois, guint n, guint k, gpunet_class_score * out)
{
  gpunet_image *crops = g_new (gpunet_image, MIN (n, self->max_batch));
  gpunet_status st = GPUNET_OK;
  char *text = NULL;
  gboolean pushed;
  guint start, end, i;

  qsort (rois, n, sizeof (GstGpunetRoi *), compare_crop_size);
  pushed = gst_gpunet_cuda_push (CUDA (self));
  for (start = 0; start < n && st == GPUNET_OK; start = end) {
    for (end = start + 1; end < n && end - start < self->max_batch
        && compare_crop_size (&rois[start], &rois[end]) == 0; end++);
    for (i = start; i < end; i++) {
      GstGpunetRoi *r = rois[i];

      gst_gpunet_roi_crop_image (img, r->x, r->y, r->width, r->height,
          &crops[i - start]);
      r->scores = out + (gsize) i * k;
      r->inferred = TRUE;
    }
    st = gpunet_session_classify (self->session, crops, (int) (end - start),
        &self->pre, (int) k, out + (gsize) start * k, &text);
  }
  gst_gpunet_cuda_pop (CUDA (self), pushed);
  g_free (crops);

  if (st != GPUNET_OK) {
    post_engine_error (self, st, text, "classifying region crops");
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

/* roi-mode regions/both: selects the buffer's regions into self->rois (`types`,
 * NULL = all), takes the results carried by roi-id within an interval cycle
 * (not at `cycle_start`) and classifies the other crops; their results go to
 * *scores (free it once the records are attached). Maps the buffer into
 * `frame`/`img` unless *mapped says it is. */
static GstFlowReturn
classify_regions (GstGpunetClassify * self, const RecordContext * rc,
    gboolean cycle_start, const GArray * types, GstVideoFrame * frame,
    gpunet_image * img, gboolean * mapped, gpunet_class_score ** scores)
{
  GArray *rois = self->rois;
  GstGpunetRoi **todo = NULL;
  guint k = MIN (self->num_classes, MAX_TOP_K), n_todo = 0, skipped, i;
  gboolean even = self->image_template.format == GPUNET_FORMAT_NV12
      || self->image_template.format == GPUNET_FORMAT_I420;
  GstFlowReturn ret = GST_FLOW_OK;

  *scores = NULL;
  if (cycle_start)
    gst_gpunet_roi_cache_clear (self->roi_cache);
  g_array_set_size (rois, 0);
  skipped = gst_gpunet_roi_collect (rc->buf, types, self->image_template.width,
      self->image_template.height, even, rois);
  if (skipped > 0)
    GST_LOG_OBJECT (self, "frame %" G_GUINT64_FORMAT ": %u empty or outside "
        "regions skipped", rc->frame_no, skipped);
  if (rois->len == 0)
    return GST_FLOW_OK;

  /* a region can be recognised on a later frame only by an id of its own */
  todo = g_new (GstGpunetRoi *, rois->len);
  for (i = 0; i < rois->len; i++) {
    GstGpunetRoi *r = &g_array_index (rois, GstGpunetRoi, i);

    if (!cycle_start && r->unique_id)
      r->scores = gst_gpunet_roi_cache_lookup (self->roi_cache, r->meta->id,
          r->meta->roi_type);
    r->inferred = FALSE;
    if (r->scores == NULL)
      todo[n_todo++] = r;
  }

  if (n_todo > 0) {
    if (!*mapped) {
      if (!map_frame (self, rc->buf, frame, img)) {
        ret = GST_FLOW_ERROR;
        goto done;
      }
      *mapped = TRUE;
    }
    *scores = g_new (gpunet_class_score, (gsize) n_todo * k);
    ret = classify_crops (self, img, todo, n_todo, k, *scores);
    if (ret != GST_FLOW_OK)
      goto done;
    if (rc->interval > 0) {
      for (i = 0; i < n_todo; i++)
        if (todo[i]->unique_id)
          gst_gpunet_roi_cache_store (self->roi_cache, todo[i]->meta->id,
              todo[i]->meta->roi_type, todo[i]->scores);
    }
  }

done:
  g_free (todo);
  if (ret != GST_FLOW_OK)
    g_array_set_size (rois, 0);
  return ret;
}

/* json-output: writes the buffer's records and flushes them to the file. */
static GstFlowReturn
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
    GST_ELEMENT_ERROR (self, RESOURCE, WRITE,
        ("Cannot write to the JSON output file '%s': %s. Free space on its "
            "disk, or set json-output to another file", self->json_path,
            g_strerror (err)), ("json-output property"));
    return GST_FLOW_ERROR;
  }
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_gpunet_classify_transform_ip (GstBaseTransform * trans, GstBuffer * buf)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (trans);
  RecordContext rc;
  GArray *types = NULL;
  GstVideoFrame frame;
  gpunet_image img;
  gpunet_class_score *roi_scores = NULL;
  gboolean mapped = FALSE, cycle_start;
  GstFlowReturn ret = GST_FLOW_OK;

  if (G_UNLIKELY (self->session == NULL)) {
    GST_ELEMENT_ERROR (self, CORE, NEGOTIATION, ("The element is not started"),
        (NULL));
    return GST_FLOW_NOT_NEGOTIATED;
  }

  rc.buf = buf;
  GST_OBJECT_LOCK (self);
  rc.top_k = self->top_k;
  rc.threshold = self->threshold;
  rc.interval = self->interval;
  rc.post = self->post_messages;
  /* roi-types may be replaced while we use it */
  if (self->roi_type_quarks != NULL)
    types = g_array_ref (self->roi_type_quarks);
  GST_OBJECT_UNLOCK (self);

  rc.frame_no = self->frame_count++;
  if (self->batch != NULL) {
    /* classified in a batch; generate_output put the result in `last` */
    cycle_start = self->batch_inferred;
  } else if (self->have_last && self->carried < rc.interval) {
    self->carried++;
    cycle_start = FALSE;
  } else {
    if (self->mode != GST_GPUNET_ROI_MODE_REGIONS) {
      if (!map_frame (self, buf, &frame, &img)) {
        ret = GST_FLOW_ERROR;
        goto done;
      }
      mapped = TRUE;
      ret = classify_frame (self, &img);
      if (ret != GST_FLOW_OK)
        goto done;
    }
    /* with regions only, the cycle of `interval` runs all the same */
    self->have_last = TRUE;
    self->carried = 0;
    cycle_start = TRUE;
  }

  if (self->mode != GST_GPUNET_ROI_MODE_FRAME) {
    ret = classify_regions (self, &rc, cycle_start, types, &frame, &img,
        &mapped, &roi_scores);
    if (ret != GST_FLOW_OK)
      goto done;
  }
  /* a mapped frame holds a reference: the buffer is writable again after */
  if (mapped) {
    gst_video_frame_unmap (&frame);
    mapped = FALSE;
  }

  if (self->mode != GST_GPUNET_ROI_MODE_REGIONS)
    emit_record (self, &rc, NULL, self->last, self->last_n, cycle_start);
  if (self->mode != GST_GPUNET_ROI_MODE_FRAME) {
    guint i, k = MIN (self->num_classes, MAX_TOP_K);

    for (i = 0; i < self->rois->len; i++) {
      GstGpunetRoi *r = &g_array_index (self->rois, GstGpunetRoi, i);

      emit_record (self, &rc, r->meta, r->scores, k, r->inferred);
    }
    g_array_set_size (self->rois, 0);
  }
  if (self->json_lines != NULL)
    ret = write_json_lines (self);

done:
  if (mapped)
    gst_video_frame_unmap (&frame);
  g_free (roi_scores);
  if (self->json_lines != NULL)
    g_string_truncate (self->json_lines, 0);
  if (types != NULL)
    g_array_unref (types);
  return ret;
}

/* ---- batch-size > 1 (the queue is gstgpunetbatch.c) ------------------------------ */

/* GstGpunetBatchClassifyFunc: maps all `n` frames as classify_frame maps one,
 * classifies them in one engine call and unmaps them after. */
static GstFlowReturn
classify_frames (gpointer user, GstBuffer ** bufs, guint n, guint k,
    gpunet_class_score * out)
{
  GstGpunetClassify *self = user;
  GstVideoFrame *frames = g_new0 (GstVideoFrame, n);
  gpunet_image *imgs = g_new0 (gpunet_image, n);
  gpunet_status st = GPUNET_OK;
  GstFlowReturn ret = GST_FLOW_OK;
  char *text = NULL;
  gboolean pushed;
  guint mapped, start, i;

  for (mapped = 0; mapped < n; mapped++) {
    imgs[mapped] = self->image_template;
    if (!gst_gpunet_cuda_map_frame (CUDA (self), GST_ELEMENT (self),
            bufs[mapped], &self->info, &frames[mapped], &imgs[mapped])) {
      GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Cannot map the video frame"),
          (NULL));
      ret = GST_FLOW_ERROR;
      goto done;
    }
  }
  /* one engine call per run of frames in the same memory (a frame of a
   * foreign CUDA context is mapped to host memory) */
  pushed = gst_gpunet_cuda_push (CUDA (self));
  for (start = 0; start < n && st == GPUNET_OK; start = i) {
    for (i = start + 1; i < n && imgs[i].memory == imgs[start].memory; i++);
    st = gpunet_session_classify (self->session, imgs + start,
        (int) (i - start), &self->pre, (int) k, out + (gsize) start * k, &text);
  }
  gst_gpunet_cuda_pop (CUDA (self), pushed);
  if (st != GPUNET_OK) {
    post_engine_error (self, st, text, "classifying a batch of frames");
    ret = GST_FLOW_ERROR;
  }

done:
  for (i = 0; i < mapped; i++)
    gst_video_frame_unmap (&frames[i]);
  g_free (frames);
  g_free (imgs);
  return ret;
}

/* With a batch: queues the buffer (after basetransform's own checks) and
 * decides there whether it needs inference (interval), as transform_ip would. */
static GstFlowReturn
gst_gpunet_classify_submit_input_buffer (GstBaseTransform * trans,
    gboolean is_discont, GstBuffer * buf)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (trans);
  GstFlowReturn ret;
  gboolean infer;
  guint interval;

  ret = GST_BASE_TRANSFORM_CLASS (parent_class)->submit_input_buffer (trans,
      is_discont, buf);
  if (self->batch == NULL || ret != GST_FLOW_OK || trans->queued_buf == NULL)
    return ret;

  GST_OBJECT_LOCK (self);
  interval = self->interval;
  GST_OBJECT_UNLOCK (self);
  infer = !(self->have_last && self->carried < interval);
  if (infer) {
    self->have_last = TRUE;
    self->carried = 0;
  } else {
    self->carried++;
  }
  return gst_gpunet_batch_add (self->batch,
      g_steal_pointer (&trans->queued_buf), infer);
}

/* With a batch: hands the oldest classified buffer to the default code (which
 * makes it writable and calls transform_ip); NULL while a batch fills. */
static GstFlowReturn
gst_gpunet_classify_generate_output (GstBaseTransform * trans,
    GstBuffer ** outbuf)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (trans);
  GstBuffer *buf;

  if (self->batch != NULL && trans->queued_buf == NULL) {
    buf = gst_gpunet_batch_pop (self->batch, &self->batch_inferred,
        self->last);
    if (buf == NULL) {
      *outbuf = NULL;
      return GST_FLOW_OK;
    }
    if (self->batch_inferred)
      self->last_n = MIN (self->num_classes, MAX_TOP_K);
    trans->queued_buf = buf;
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->generate_output (trans,
      outbuf);
}

/* Classifies what the batch holds and pushes it all, in order. */
static GstFlowReturn
drain_batch (GstGpunetClassify * self)
{
  GstBaseTransform *trans = GST_BASE_TRANSFORM (self);
  GstFlowReturn ret = gst_gpunet_batch_drain (self->batch);
  GstBuffer *out;

  while (ret == GST_FLOW_OK) {
    out = NULL;
    ret = gst_gpunet_classify_generate_output (trans, &out);
    if (out == NULL)
      break;
    if (ret == GST_FLOW_OK)
      ret = gst_pad_push (trans->srcpad, out);
    else
      gst_buffer_unref (out);
  }
  if (ret != GST_FLOW_OK)
    GST_DEBUG_OBJECT (self, "draining the batch: %s", gst_flow_get_name (ret));
  return ret;
}

/* With a batch: frames queued before a serialized event (EOS, caps, segment,
 * ...) leave before it, classified with the caps they came with; a flush drops
 * them. FLUSH_START is not serialized with the streaming thread, so the queue
 * is dropped at the FLUSH_STOP that always follows it. */
static gboolean
gst_gpunet_classify_sink_event (GstBaseTransform * trans, GstEvent * event)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (trans);

  if (self->batch != NULL) {
    if (GST_EVENT_TYPE (event) == GST_EVENT_FLUSH_STOP) {
      gst_gpunet_batch_clear (self->batch);
      self->have_last = FALSE;
      self->carried = 0;
    } else if (GST_EVENT_IS_SERIALIZED (event)) {
      drain_batch (self);
    }
  }
  return GST_BASE_TRANSFORM_CLASS (parent_class)->sink_event (trans, event);
}

/* With a batch, upstream must be able to let batch-size - 1 more buffers wait
 * here: asks for that many more in its pools. */
static gboolean
gst_gpunet_classify_propose_allocation (GstBaseTransform * trans,
    GstQuery * decide_query, GstQuery * query)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (trans);
  guint extra, i, size, min, max;
  GstBufferPool *pool;
  gboolean ret;

  ret = GST_BASE_TRANSFORM_CLASS (parent_class)->propose_allocation (trans,
      decide_query, query);
  if (self->batch == NULL)
    return ret;
  GST_OBJECT_LOCK (self);
  extra = self->batch_size - 1;
  GST_OBJECT_UNLOCK (self);
  if (gst_query_get_n_allocation_pools (query) == 0) {
    GstCaps *caps;
    GstVideoInfo info;

    gst_query_parse_allocation (query, &caps, NULL);
    if (caps != NULL && gst_video_info_from_caps (&info, caps))
      gst_query_add_allocation_pool (query, NULL, info.size, extra + 1, 0);
    return TRUE;
  }
  for (i = 0; i < gst_query_get_n_allocation_pools (query); i++) {
    gst_query_parse_nth_allocation_pool (query, i, &pool, &size, &min, &max);
    gst_query_set_nth_allocation_pool (query, i, pool, size, min + extra,
        max == 0 ? 0 : max + extra);
    if (pool)
      gst_object_unref (pool);
  }
  return TRUE;
}

/* ---- CUDA context sharing and caps (the work is in gstgpunetcuda.c) -------------- */

static void
gst_gpunet_classify_set_context (GstElement * element, GstContext * context)
{
  gst_gpunet_cuda_set_context (CUDA (GST_GPUNET_CLASSIFY (element)), element,
      context);
  GST_ELEMENT_CLASS (parent_class)->set_context (element, context);
}

static gboolean
gst_gpunet_classify_query (GstBaseTransform * trans, GstPadDirection direction,
    GstQuery * query)
{
  if (gst_gpunet_cuda_handle_query (CUDA (GST_GPUNET_CLASSIFY (trans)),
          GST_ELEMENT (trans), query))
    return TRUE;
  return GST_BASE_TRANSFORM_CLASS (parent_class)->query (trans, direction,
      query);
}

/* Same caps on both pads; CUDA memory only while the session can read it. */
static GstCaps *
gst_gpunet_classify_transform_caps (GstBaseTransform * trans,
    GstPadDirection direction, GstCaps * caps, GstCaps * filter)
{
  GstCaps *ret = gst_gpunet_cuda_filter_caps (CUDA (GST_GPUNET_CLASSIFY (trans)),
      caps);

  (void) direction;
  if (filter != NULL) {
    GstCaps *tmp = gst_caps_intersect_full (filter, ret,
        GST_CAPS_INTERSECT_FIRST);

    gst_caps_unref (ret);
    ret = tmp;
  }
  return ret;
}

gboolean
gst_gpunet_classify_register (GstPlugin * plugin)
{
  return GST_ELEMENT_REGISTER (gpunetclassify, plugin);
}
