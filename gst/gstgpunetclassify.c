/* gstgpunetclassify.c: the gpunetclassify element: properties (object lock), caps,
 * pads, chain, start/stop.  The chain plans each frame (gstgpunetframe.c), queues it
 * (gstgpunetqueue.c: its src task pushes in order) and submits it to the model in use
 * (gstgpunetmodel.c: context and hot swap); gstgpunetrecords.c makes the records;
 * gstgpunetprops.c holds the property specs and gstgpunetinstance.h the instance. */

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

#include "gstgpunetclassify.h"
#include "gstgpunetinstance.h"

GST_DEBUG_CATEGORY_STATIC (gst_gpunet_classify_debug);
#define GST_CAT_DEFAULT gst_gpunet_classify_debug

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
static GstFlowReturn gst_gpunet_classify_sink_event (GstPad * pad,
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

/* ---- class ----------------------------------------------------------------------- */

static void
gst_gpunet_classify_class_init (GstGpunetClassifyClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstCaps *caps;

  GST_DEBUG_CATEGORY_INIT (gst_gpunet_classify_debug, "gpunetclassify", 0,
      "GPUNet image classification");

  gobject_class->set_property = gst_gpunet_classify_set_property;
  gobject_class->get_property = gst_gpunet_classify_get_property;
  gobject_class->finalize = gst_gpunet_classify_finalize;
  gobject_class->notify = gst_gpunet_classify_notify;

  gst_gpunet_classify_install_properties (gobject_class);

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
  gst_pad_set_event_full_function (self->sinkpad,
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

  gst_gpunet_classify_props_init (self);
  self->nvmm = gst_gpunet_nvmm_new (GST_ELEMENT (self));
  self->cuda = gst_gpunet_cuda_new ();
  gst_gpunet_nvmm_set_cuda (self->nvmm, self->cuda);
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
  g_free (self->int8_scales);
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



static void
gst_gpunet_classify_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (object);
  gboolean ignored = FALSE;

  if (gst_gpunet_classify_prop_field (self, prop_id) == NULL) {
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
    gst_gpunet_prop_field_set (gst_gpunet_classify_prop_field (self, prop_id), value);
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
  if (prop_id == PROP_ROI_SKIPPED_SMALL || prop_id == PROP_ROI_SKIPPED_LARGE
      || prop_id == PROP_ROI_SKIPPED_OUTSIDE) {
    guint small, large, outside;

    gst_gpunet_planner_skipped (self->planner, &small, &large, &outside);
    g_value_set_uint (value, prop_id == PROP_ROI_SKIPPED_SMALL ? small :
        prop_id == PROP_ROI_SKIPPED_LARGE ? large : outside);
    return;
  }
  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, gst_gpunet_stats_structure (self->stats));
    return;
  }
  if (gst_gpunet_classify_prop_field (self, prop_id) == NULL) {
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    return;
  }
  GST_OBJECT_LOCK (self);
  gst_gpunet_prop_field_get (gst_gpunet_classify_prop_field (self, prop_id), value);
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

/* GstGpunetModelArgsFunc of a swap: in the CUDA context the element started with. */
static void
read_swap_args (GstElement * element, GstGpunetModelArgs * a)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (element);

  gst_gpunet_classify_read_model_args (self, a);
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

  gst_gpunet_classify_read_model_args (self, &a);
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
  gst_gpunet_classify_read_nvds_props (self, &nvds);
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

    gst_gpunet_classify_read_nvds_props (self, &p);
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
  GST_OBJECT_LOCK (self);
  self->fps_n = GST_VIDEO_INFO_FPS_N (&info);
  self->fps_d = GST_VIDEO_INFO_FPS_D (&info);
  GST_OBJECT_UNLOCK (self);
  return TRUE;
}

/* ---- per frame (streaming thread) ----------------------------------------------- */

/* A frame for `buf` with the settings its records keep; *types (a reference, or
 * NULL: every type), *interval and *rp (roi-min-size, roi-max-size, reclassify-interval,
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
  rp->max_size = self->roi_max_size;
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

/* Room in the engine for the next frame: when-busy=skip only looks (*full says whether
 * it is), wait holds the streaming thread until there is room. */
static GstFlowReturn
wait_room (GstGpunetClassify * self, gboolean * full)
{
  if (self->skip < 0) {
    GstGpunetWhenBusy mode;

    GST_OBJECT_LOCK (self);
    mode = self->when_busy;
    GST_OBJECT_UNLOCK (self);
    self->skip = gst_gpunet_when_busy_skips (mode, self->sinkpad);
  }
  *full = FALSE;
  if (self->skip)
    return gst_gpunet_queue_check_room (self->queue, full);
  return gst_gpunet_queue_wait_room (self->queue);
}

/* when-busy skip: whether planned frame `f` would wait behind more than the
 * engine's next pass (`full`: this element's max-in-flight frames are out), so
 * goes downstream with the last results, after the frames still in flight. */
static gboolean
busy_skip (GstGpunetClassify * self, GstGpunetFrame * f, gboolean full)
{
  return self->skip && f->n_images > 0 && (full
      || gst_gpunet_engine_busy (f->ctx->shared,
          gst_gpunet_queue_in_engine (self->queue)));
}

/* Decides what frame `f` classifies (NVMM surfaces, or the frame and its regions; a
 * skipped frame nothing) and maps those images.  Returns FALSE after posting the
 * error and freeing `f`; *images is NULL where nothing is submitted. */
static gboolean
plan_frame (GstGpunetClassify * self, GstGpunetFrame * f, GArray * types,
    guint interval, const GstGpunetRegionPolicy * rp, gboolean full,
    gpunet_image ** images)
{
  gchar *map_error = NULL;

  *images = NULL;
  if (self->nvmm_caps) {
    if (types)
      g_array_unref (types);
    if (f->old_model != NULL)
      gst_gpunet_nvmm_flush (self->nvmm);
    if (gst_gpunet_nvmm_plan (self->nvmm, f, interval, images, &map_error)) {
      if (busy_skip (self, f, full)) {
        g_clear_pointer (images, g_free);
        gst_gpunet_nvmm_skip (self->nvmm, f);
      }
      return TRUE;
    }
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Frame %" G_GUINT64_FORMAT
            " (NVMM): %s", f->rs.frame_no, map_error), (NULL));
  } else {
    gst_gpunet_planner_set_region_policy (self->planner, rp);
    gst_gpunet_planner_plan (self->planner, f, types, interval);
    if (types)
      g_array_unref (types);
    /* skip: a frame that would wait behind more than the engine's next pass goes
     * downstream with the last results, after the frames still in flight */
    if (busy_skip (self, f, full)) {
      gst_gpunet_planner_retry (self->planner, f);
      gst_gpunet_frame_mark_skipped (f);
    }
    if (f->n_images == 0 || (*images = gst_gpunet_planner_map (self->planner,
                self->cuda, &self->info, f, &map_error)) != NULL)
      return TRUE;
    if (map_error != NULL)
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Frame %" G_GUINT64_FORMAT
              ": %s", f->rs.frame_no, map_error), (NULL));
    else
      GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Cannot map the video frame "
              "%" G_GUINT64_FORMAT, f->rs.frame_no), (NULL));
  }
  g_free (map_error);
  gst_gpunet_frame_free (f);
  gst_gpunet_stats_failed (self->stats, 1);
  return FALSE;
}

static GstFlowReturn
gst_gpunet_classify_chain (GstPad * pad, GstObject * parent, GstBuffer * buf)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);
  GstGpunetQueueEntry *entry;
  gpunet_image *images;
  GstGpunetFrame *f;
  GArray *types;
  guint interval;
  GstGpunetRegionPolicy rp;
  gboolean full;
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

  /* room in the engine, then a swapped-in model at this frame boundary */
  ret = wait_room (self, &full);
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
  if (!plan_frame (self, f, types, interval, &rp, full, &images))
    return GST_FLOW_ERROR;
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

/* An event_full function: a serialized event refused while the pads stop returns
 * GST_FLOW_FLUSHING, so that upstream stops quietly instead of posting an error
 * (GstPad turns a FALSE into GST_FLOW_ERROR, or NOT_NEGOTIATED for caps). */
static GstFlowReturn
gst_gpunet_classify_sink_event (GstPad * pad, GstObject * parent,
    GstEvent * event)
{
  GstGpunetClassify *self = GST_GPUNET_CLASSIFY (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_FLUSH_START:
      gst_gpunet_queue_flush_start (self->queue, event);
      return GST_FLOW_OK;
    case GST_EVENT_FLUSH_STOP:
      /* the streaming thread is ours again: drop what is queued (in
       * gst_gpunet_queue_flush_stop), restart */
      gst_gpunet_planner_flush (self->planner);
      gst_gpunet_records_flush (self->records);
      gst_gpunet_nvmm_flush (self->nvmm);
      return gst_gpunet_queue_flush_stop (self->queue, event) ? GST_FLOW_OK :
          GST_FLOW_ERROR;
    case GST_EVENT_CAPS:{
      GstCaps *caps;

      gst_event_parse_caps (event, &caps);
      /* a new stream may be live where the old one was not */
      self->skip = -1;
      if (!set_caps (self, caps)) {
        gst_event_unref (event);
        return GST_FLOW_NOT_NEGOTIATED;
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
    return gst_pad_event_default (pad, parent, event) ? GST_FLOW_OK :
        GST_FLOW_ERROR;
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
  gint fps_n, fps_d;

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
      /* not self->info: the streaming thread rewrites it on a caps change */
      fps_n = self->fps_n;
      fps_d = self->fps_d;
      GST_OBJECT_UNLOCK (self);
      gst_gpunet_queue_add_latency (query, wait, limit, fps_n, fps_d);
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
