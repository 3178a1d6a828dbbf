/* gstgpunetprops.c: the gpunetclassify element's properties as GObject sees them: their
 * param specs (names, ranges, defaults, blurbs, when they may change), where each
 * lives in the instance, and the snapshots the element takes of them at start.  No
 * state of its own: the values are the element's, under its object lock. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstgpunetclassify.h"
#include "gstgpunetinstance.h"

/* Installs every property of the element on its class. */
void
gst_gpunet_classify_install_properties (GObjectClass * gobject_class)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;

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
          "CPU backend threads (0 = all cores)", 0, GPUNET_MAX_THREADS, DEFAULT_N_THREADS,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_PRECISION,
      g_param_spec_enum ("precision", "Precision",
          "Arithmetic: CUDA fp32 or fp16; on the fast CPU backend fp32, bf16 or int8 "
          "(auto is fp32 there)",
          GST_TYPE_GPUNET_PRECISION, DEFAULT_PRECISION,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property (gobject_class, PROP_INT8_SCALES,
      g_param_spec_string ("int8-scales", "int8 scales",
          "precision=int8: the scales file gpunet-convert --calibrate wrote for "
          "this model and checkpoint (needed there; another model's is refused, "
          "and so is any with another precision)",
          NULL, rw | GST_PARAM_MUTABLE_READY));
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
  g_object_class_install_property (gobject_class, PROP_ROI_MAX_SIZE,
      g_param_spec_uint ("roi-max-size", "ROI maximum size",
          "Regions whose width or height inside the frame is over this many "
          "pixels are skipped and counted (roi-skipped-large), as nvinfer's "
          "input-object-max-width/-height skip them (0 = no limit)", 0,
          G_MAXINT, DEFAULT_ROI_MAX_SIZE, rw | GST_PARAM_MUTABLE_PLAYING));
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
  g_object_class_install_property (gobject_class, PROP_ROI_SKIPPED_LARGE,
      g_param_spec_uint ("roi-skipped-large", "Regions skipped as large",
          "Regions skipped since start as over roi-max-size", 0, G_MAXUINT,
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
}

/* Where each property lives in the instance (0: no field, PROP_ENGINE_ID, PROP_STATS); set and read
 * by the pspec's value type, under the object lock. */
#define F(field) G_STRUCT_OFFSET (struct _GstGpunetClassify, field)
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
  [PROP_ROI_MAX_SIZE] = F (roi_max_size),
  [PROP_RECLASSIFY_INTERVAL] = F (reclassify_interval),
  [PROP_TRACK_TIMEOUT] = F (track_timeout),
  [PROP_WHEN_BUSY] = F (when_busy),[PROP_STATS_INTERVAL] = F (stats_interval),
  [PROP_NVDS_LIB_DIR] = F (nvds_lib_dir),
  [PROP_OPERATE_ON_GIE_ID] = F (operate_on_gie_id),
  [PROP_OPERATE_ON_CLASS_IDS] = F (operate_on_class_ids),
  [PROP_GIE_UNIQUE_ID] = F (gie_unique_id),
  [PROP_INT8_SCALES] = F (int8_scales),
};
#undef F

/* Stores `value` into the field at `p` by its fundamental type (enums are int-sized). */
void
gst_gpunet_prop_field_set (gpointer p, const GValue * value)
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

void
gst_gpunet_prop_field_get (gconstpointer p, GValue * value)
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

gpointer
gst_gpunet_classify_prop_field (struct _GstGpunetClassify * self, guint prop_id)
{
  if (prop_id >= PROP_LAST || prop_field[prop_id] == 0)
    return NULL;
  return G_STRUCT_MEMBER_P (self, prop_field[prop_id]);
}

/* Every property with a field starts at its param spec's default, the value
 * gst-inspect shows, so a default is written once, in the spec. */
void
gst_gpunet_classify_props_init (struct _GstGpunetClassify * self)
{
  guint i, n;
  GParamSpec **specs =
      g_object_class_list_properties (G_OBJECT_GET_CLASS (self), &n);

  for (i = 0; i < n; i++) {
    GValue v = G_VALUE_INIT;
    gpointer field = specs[i]->owner_type != GST_TYPE_GPUNET_CLASSIFY ? NULL :
        gst_gpunet_classify_prop_field (self, specs[i]->param_id);

    if (field == NULL)
      continue;
    g_value_init (&v, specs[i]->value_type);
    g_param_value_set_default (specs[i], &v);
    gst_gpunet_prop_field_set (field, &v);
    g_value_unset (&v);
  }
  g_free (specs);
  self->roi_type_quarks = gst_gpunet_roi_types_parse (self->roi_types);
}

/* What loading a model needs, from the properties as they are now. */
void
gst_gpunet_classify_read_model_args (struct _GstGpunetClassify * self,
    GstGpunetModelArgs * a)
{
  memset (a, 0, sizeof *a);
  GST_OBJECT_LOCK (self);
  a->model = g_strdup (self->model_name ? self->model_name : DEFAULT_MODEL);
  a->checkpoint = g_strdup (self->checkpoint);
  a->labels = g_strdup (self->labels_path);
  a->req.backend = (gpunet_backend_kind) self->backend;
  a->req.precision = (gpunet_precision) self->precision;
  a->int8_scales = g_strdup (self->int8_scales);
  a->req.n_threads = self->n_threads;
  a->req.batch_size = self->batch_size;
  a->req.batch_timeout_us = (gint64) self->batch_timeout;
  a->req.passes_in_flight = self->passes_in_flight;
  a->req.share = self->share_engine;
  a->req.device = self->device_id > 0 ? self->device_id : 0;
  GST_OBJECT_UNLOCK (self);
  a->req.model = a->model;
  a->req.checkpoint = a->checkpoint;
  a->req.int8_scales = a->int8_scales;
}

/* The DeepStream properties as they are now (NVMM settings at start, caps). */
void
gst_gpunet_classify_read_nvds_props (struct _GstGpunetClassify * self,
    GstGpunetNvdsProps * p)
{
  GST_OBJECT_LOCK (self);
  p->lib_dir = g_strdup (self->nvds_lib_dir);
  p->class_ids = g_strdup (self->operate_on_class_ids);
  p->operate_on_gie_id = self->operate_on_gie_id;
  p->gie_unique_id = self->gie_unique_id;
  p->interval = self->interval;
  GST_OBJECT_UNLOCK (self);
}
