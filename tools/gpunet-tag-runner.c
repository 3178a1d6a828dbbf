/* gpunet-tag-runner.c: the GStreamer side of gpunet-tag. One pipeline lives for
 * the whole run: a persistent "queue ! videoconvert ! capsfilter ! gpunetclassify
 * ! appsink" part stays PLAYING (so the model is loaded once, in the element's
 * start()), and a uridecodebin is attached, flushed away and replaced per input.
 * When gpunetclassify runs on CUDA and nvcodec is present, the front is "queue !
 * cudaupload ! cudaconvert ! capsfilter(memory:CUDAMemory)" instead: nvh264dec's
 * frames stay on the GPU and are classified in place (cudaupload passes them
 * through; it uploads only what a software decoder made). */
#include <string.h>

#include <gst/app/gstappsink.h>

#include "gpunet-tool-errors.h"
#include "gpunet-tool-open.h"
#include "gpunet-tag-common.h"
#include "gpunet-meta.h"

#define CLASSIFY_FORMATS "{ NV12, I420, RGBA, BGRA, RGBx, BGRx, RGB, BGR }"
/* what gpunetclassify reads in place (GST_GPUNET_CUDA_FORMATS) */
#define CLASSIFY_CUDA_CAPS "video/x-raw(memory:CUDAMemory), " \
  "format={ NV12, I420, RGBA, BGRA, RGBx, BGRx }"
#define TICK_US (250 * 1000)
#define MAX_K 100
#define N_TOP_LABELS 5

typedef struct {
  gint id;
  gchar *label;
  guint64 count;
} LabelCount;

struct TagRunner {
  const TagOptions *opt;
  GstElement *pipeline, *queue, *classify, *sink;
  GstPad *entry;                /* the queue's sink pad: where a source links */
  GstBus *bus;
  gdouble load_s;
  gboolean cuda_memory;         /* the front keeps frames in CUDA memory */
  gchar *note;                  /* why (not) CUDA memory; NULL for backend=cpu */

  /* per input; written by streaming threads, read by the main thread */
  GMutex lock;
  GstElement *src;
  gboolean linked;
  const gchar *name;
  GString *out;
  guint64 decoded, classified;
  guint64 dec_in, dec_out;      /* buffers into / frames out of the video decoder */
  guint64 missing;              /* frames absent from the timestamps' sequence */
  gdouble prev_pts, prev_dur;
  GQueue pending;               /* frame numbers (guint64 *) inside gpunetclassify */
  gdouble next_keep, first_pts, last_pts, last_end;
  gint64 t_enter, t_leave, classify_us, last_activity;
  TagSegment seg;
  GHashTable *labels;           /* label id -> LabelCount */
  gchar *meta_error;
  TagLabelCount top_out[N_TOP_LABELS];
  gchar *message;
  gchar *caps;                  /* gpunetclassify's input caps for this input */
  gchar *decoder;               /* the video decoder's factory name, or NULL */
  gboolean other_streams;       /* the demuxer gave a stream other than video */
  gchar *model, *precision;     /* of the first record */

  gboolean wedged;              /* an opener never returned: the runner is lost */
};

static void
label_count_free (LabelCount * c)
{
  g_free (c->label);
  g_free (c);
}

/* On gpunetclassify's sink pad: counts every decoded frame and drops those that
 * --every/--fps skip before the element sees them (so they are never
 * preprocessed). Runs in the queue's streaming thread. */
static GstPadProbeReturn
classify_sink_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  TagRunner *r = user;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstEvent *ev = gst_pad_get_sticky_event (pad, GST_EVENT_SEGMENT, 0);
  const GstSegment *segment = NULL;
  gdouble t, dur;
  guint64 n;
  gboolean keep;

  if (ev)
    gst_event_parse_segment (ev, &segment);
  t = gpunet_tool_buffer_seconds (GST_BUFFER_PTS (buf), segment);
  dur = GST_BUFFER_DURATION_IS_VALID (buf) ?
      (gdouble) GST_BUFFER_DURATION (buf) / GST_SECOND : 0.0;

  g_mutex_lock (&r->lock);
  n = r->decoded++;
  r->last_activity = g_get_monotonic_time ();
  if (t >= 0) {
    /* a frame later than the previous one's end by more than half a frame:
     * the frames between were lost (decode errors, a damaged container) */
    if (r->prev_pts >= 0 && r->prev_dur > 0
        && t > r->prev_pts + 1.5 * r->prev_dur)
      r->missing += (guint64) ((t - r->prev_pts) / r->prev_dur + 0.5) - 1;
    r->prev_pts = t;
    r->prev_dur = dur;
    if (r->first_pts < 0)
      r->first_pts = t;
    r->last_pts = t;
    r->last_end = MAX (r->last_end, t + dur);
  }
  if (r->opt->every > 1) {
    keep = n % r->opt->every == 0;
  } else if (r->opt->fps > 0 && t >= 0) {
    /* keep the first frame at or after each 1/fps step (1 ms tolerance) */
    keep = t >= r->next_keep - 0.001;
    if (keep) {
      r->next_keep += 1.0 / r->opt->fps;
      if (r->next_keep <= t)
        r->next_keep = t + 1.0 / r->opt->fps;
    }
  } else {
    keep = TRUE;
  }
  if (keep) {
    g_queue_push_tail (&r->pending, g_memdup2 (&n, sizeof n));
    r->t_enter = r->last_activity;
  }
  g_mutex_unlock (&r->lock);
  if (ev)
    gst_event_unref (ev);
  return keep ? GST_PAD_PROBE_OK : GST_PAD_PROBE_DROP;
}

/* appsink: one classified frame, the oldest of `pending` (frames leave
 * gpunetclassify in order). The element works in the same thread just before:
 * with batch-size 1 it runs from `t_enter` to now; with a batch, the frames
 * of one batch leave together from the call that got the last of them (since
 * `t_enter`), so only the time since the previous frame left counts. */
static GstFlowReturn
on_new_sample (GstAppSink * sink, gpointer user)
{
  TagRunner *r = user;
  GstSample *sample = gst_app_sink_pull_sample (sink);
  GstBuffer *buf;
  const GstStructure *s;
  gint ids[MAX_K];
  const gchar *labels[MAX_K];
  gdouble scores[MAX_K];
  guint n, i;
  gdouble t;
  gint best;
  gint64 now;
  guint64 frame_no;
  LabelCount *c;

  if (sample == NULL)
    return GST_FLOW_OK;
  buf = gst_sample_get_buffer (sample);
  s = gpunet_meta_get_structure (gpunet_meta_get (buf));
  t = gpunet_tool_buffer_seconds (GST_BUFFER_PTS (buf), gst_sample_get_segment (sample));

  g_mutex_lock (&r->lock);
  now = g_get_monotonic_time ();
  r->classify_us += now - MAX (r->t_enter, r->t_leave);
  r->t_leave = now;
  frame_no = g_queue_is_empty (&r->pending) ? r->decoded :
      *(guint64 *) g_queue_peek_head (&r->pending);
  g_free (g_queue_pop_head (&r->pending));
  if (s == NULL) {
    if (r->meta_error == NULL)
      r->meta_error = g_strdup ("a frame left gpunetclassify without a "
          "classification meta");
    goto done;
  }
  r->classified++;
  if (r->model == NULL) {
    r->model = g_strdup (gst_structure_get_string (s, "model"));
    r->precision = g_strdup (gst_structure_get_string (s, "precision"));
  }
  n = MIN (gpunet_meta_n_results (s), MAX_K);
  for (i = 0; i < n; i++) {
    ids[i] = gpunet_meta_nth_id (s, i);
    labels[i] = gpunet_meta_nth_label (s, i);
    scores[i] = gpunet_meta_nth_score (s, i);
    if (labels[i] == NULL)
      labels[i] = "";
  }
  best = gpunet_meta_label_id (s);
  if (r->opt->frames)
    tag_write_frame (r->out, r->opt->format, r->name, frame_no, t, n,
        ids, labels, scores);
  if (r->opt->segments)
    tag_segment_add (&r->seg, r->out, r->opt->format, r->name,
        frame_no, t, best, gpunet_meta_label (s),
        gpunet_meta_confidence (s));
  c = g_hash_table_lookup (r->labels, GINT_TO_POINTER (best));
  if (c == NULL) {
    c = g_new0 (LabelCount, 1);
    c->id = best;
    c->label = g_strdup (gpunet_meta_label (s));
    g_hash_table_insert (r->labels, GINT_TO_POINTER (best), c);
  }
  c->count++;
done:
  g_mutex_unlock (&r->lock);
  gst_sample_unref (sample);
  return GST_FLOW_OK;
}

/* appsink: the input is finished; tell the main thread through the bus. */
static void
on_eos (GstAppSink * sink, gpointer user)
{
  TagRunner *r = user;

  (void) sink;
  gst_element_post_message (r->sink,
      gst_message_new_application (GST_OBJECT (r->sink),
          gst_structure_new_empty ("gpunet-tag-eos")));
}

/* Counts what goes into and out of a video decoder inside uridecodebin: frames
 * it took and never gave out are decode errors (decoders drop them silently). */
static GstPadProbeReturn
decoder_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  TagRunner *r = user;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);

  if (GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DECODE_ONLY)
      || GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_HEADER))
    return GST_PAD_PROBE_OK;
  g_mutex_lock (&r->lock);
  if (GST_PAD_DIRECTION (pad) == GST_PAD_SINK)
    r->dec_in++;
  else
    r->dec_out++;
  g_mutex_unlock (&r->lock);
  return GST_PAD_PROBE_OK;
}

/* A demuxer's stream: one that is not video may run past the video's end (the
 * truncation rule in tag_runner_process). */
static void
on_demux_pad_added (GstElement * demux, GstPad * pad, gpointer user)
{
  TagRunner *r = user;

  (void) demux;
  if (!gpunet_tool_demux_pad_is_video (pad)) {
    g_mutex_lock (&r->lock);
    r->other_streams = TRUE;
    g_mutex_unlock (&r->lock);
  }
}

static void
on_deep_element_added (GstBin * bin, GstBin * sub, GstElement * e,
    gpointer user)
{
  GstElementFactory *f = gst_element_get_factory (e);
  const gchar *klass;
  GstPad *sink, *src;

  (void) bin;
  (void) sub;
  if (f == NULL)
    return;
  klass = gst_element_factory_get_metadata (f, GST_ELEMENT_METADATA_KLASS);
  if (klass && strstr (klass, "Demux")) {
    g_signal_connect (e, "pad-added", G_CALLBACK (on_demux_pad_added), user);
    return;
  }
  if (klass == NULL || !strstr (klass, "Decoder") || !strstr (klass, "Video"))
    return;
  {
    TagRunner *r = user;

    g_mutex_lock (&r->lock);
    if (r->decoder == NULL)
      r->decoder = g_strdup (GST_OBJECT_NAME (f));
    g_mutex_unlock (&r->lock);
  }
  sink = gst_element_get_static_pad (e, "sink");
  src = gst_element_get_static_pad (e, "src");
  if (sink && src) {
    gst_pad_add_probe (sink, GST_PAD_PROBE_TYPE_BUFFER, decoder_probe, user,
        NULL);
    gst_pad_add_probe (src, GST_PAD_PROBE_TYPE_BUFFER, decoder_probe, user,
        NULL);
  }
  g_clear_object (&sink);
  g_clear_object (&src);
}

/* uridecodebin exposes only video pads (its caps property); the first one is
 * linked to the persistent part, later ones are left alone. */
static void
on_pad_added (GstElement * src, GstPad * pad, gpointer user)
{
  TagRunner *r = user;
  gboolean link = FALSE;

  g_mutex_lock (&r->lock);
  if (!r->linked && src == r->src) {
    r->linked = TRUE;
    link = TRUE;
  }
  g_mutex_unlock (&r->lock);
  if (link && gst_pad_link (pad, r->entry) != GST_PAD_LINK_OK)
    GST_ELEMENT_ERROR (src, CORE, NEGOTIATION,
        ("Cannot link the decoded video stream to gpunetclassify"), (NULL));
}

static void
on_no_more_pads (GstElement * src, gpointer user)
{
  (void) user;
  gst_element_post_message (src, gst_message_new_application (GST_OBJECT (src),
          gst_structure_new_empty ("gpunet-tag-no-more-pads")));
}

static GstElement *
make (const gchar * factory, GError ** error)
{
  GstElement *e = gst_element_factory_make (factory, NULL);

  if (e == NULL)
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
        "the GStreamer element '%s' is not available%s", factory,
        strcmp (factory, "gpunetclassify") == 0 ? " (is the gpunet plugin "
        "installed, or GST_PLUGIN_PATH set to its directory?)" : "");
  return e;
}

/* Pops the first error posted on the bus, if any, into `error`. */
static void
take_bus_error (GstBus * bus, GError ** error)
{
  GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);

  if (m) {
    GError *e = NULL;

    gst_message_parse_error (m, &e, NULL);
    g_propagate_error (error, e);
    gst_message_unref (m);
  } else {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_STATE_CHANGE,
        "the pipeline failed to start");
  }
}

static void
set_classify_options (TagRunner * r)
{
  const TagOptions *o = r->opt;

  g_object_set (r->classify, "checkpoint", o->checkpoint, "top-k", o->top_k,
      NULL);
  if (o->model)
    g_object_set (r->classify, "model", o->model, NULL);
  if (o->labels)
    g_object_set (r->classify, "labels", o->labels, NULL);
  if (o->backend)
    gst_util_set_object_arg (G_OBJECT (r->classify), "backend", o->backend);
  if (o->precision)
    gst_util_set_object_arg (G_OBJECT (r->classify), "precision",
        o->precision);
  if (o->scales)
    g_object_set (r->classify, "int8-scales", o->scales, NULL);
  if (o->threads)
    g_object_set (r->classify, "n-threads", o->threads, NULL);
  if (o->batch > 1)
    g_object_set (r->classify, "batch-size", o->batch, NULL);
}

/* TRUE when gpunetclassify's sink pad, now that its engine runs, takes CUDA
 * memory: the element offers those caps only while its session is on the CUDA
 * backend inside its GstCudaContext. */
static gboolean
classify_takes_cuda (GstElement * classify)
{
  GstPad *pad = gst_element_get_static_pad (classify, "sink");
  GstCaps *caps = gst_pad_query_caps (pad, NULL);
  gboolean cuda = FALSE;

  for (guint i = 0; caps && i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    if (f && !gst_caps_features_is_any (f)
        && gst_caps_features_contains (f, "memory:CUDAMemory"))
      cuda = TRUE;
  }
  if (caps)
    gst_caps_unref (caps);
  gst_object_unref (pad);
  return cuda;
}

static gboolean
have_factory (const gchar * name)
{
  GstElementFactory *f = gst_element_factory_find (name);

  if (f)
    gst_object_unref (f);
  return f != NULL;
}

/* nvh264dec and its siblings have the rank of the software decoders (primary),
 * and decodebin breaks ties by name (avdec_h264 first). For this process only,
 * nvcodec's video decoders are ranked above them, so uridecodebin picks NVDEC and
 * its frames stay in CUDA memory. */
static void
prefer_nvcodec_decoders (void)
{
  GList *features = gst_registry_get_feature_list_by_plugin (gst_registry_get (),
      "nvcodec");

  for (GList * l = features; l; l = l->next) {
    GstPluginFeature *f = l->data;
    const gchar *klass;

    if (!GST_IS_ELEMENT_FACTORY (f))
      continue;
    klass = gst_element_factory_get_metadata (GST_ELEMENT_FACTORY (f),
        GST_ELEMENT_METADATA_KLASS);
    if (klass && strstr (klass, "Decoder") && strstr (klass, "Video")
        && gst_plugin_feature_get_rank (f) < GST_RANK_PRIMARY + 1)
      gst_plugin_feature_set_rank (f, GST_RANK_PRIMARY + 1);
  }
  gst_plugin_feature_list_free (features);
}

/* Where decoded frames should live, once gpunetclassify has started: CUDA
 * memory when the element runs on CUDA and nvcodec's cudaupload exists, else
 * system memory. Sets r->note to a sentence saying which and why (NULL for
 * --backend cpu or cpu-ref, where system memory is the plain choice). */
static void
choose_memory (TagRunner * r)
{
  const gchar *backend = r->opt->backend ? r->opt->backend : "auto";

  r->cuda_memory = FALSE;
  if (strcmp (backend, "cpu") == 0 || strcmp (backend, "cpu-ref") == 0)
    return;
  if (!classify_takes_cuda (r->classify)) {
    /* backend=auto posts an INFO message when it fell back to the CPU */
    GstMessage *m = gst_bus_pop_filtered (r->bus, GST_MESSAGE_INFO);

    r->note = g_strdup_printf ("decoding into system memory: %s",
        m ? "backend=auto found no usable CUDA GPU and runs gpunetclassify "
        "on the CPU (--backend cuda says why)" : "gpunetclassify runs on "
        "CUDA but takes no CUDA memory (the plugin was built without "
        "GStreamer's CUDA library, gstreamer-cuda-1.0); frames are copied to "
        "the GPU by gpunetclassify");
    if (m)
      gst_message_unref (m);
    return;
  }
  if (!have_factory ("cudaupload")) {
    r->note = g_strdup ("decoding into system memory: GStreamer's nvcodec "
        "plugin offers no cudaupload/nvh264dec here (install "
        "gstreamer1.0-plugins-bad with nvcodec; it registers its elements only "
        "where an NVIDIA driver and GPU are found); frames are copied to the "
        "GPU by gpunetclassify");
    return;
  }
  r->cuda_memory = TRUE;
  prefer_nvcodec_decoders ();
  r->note = g_strdup ("decoding into CUDA memory (nvcodec): frames are "
      "classified in place on the GPU");
}

/* Builds the persistent part and brings it to PLAYING, which loads the model
 * once for the whole run: first gpunetclassify ! appsink (the model loads and
 * the element settles on its backend), then the front that suits it
 * (choose_memory). Returns NULL with `error` set when that fails. */
TagRunner *
tag_runner_new (const TagOptions * opt, GError ** error)
{
  TagRunner *r = g_new0 (TagRunner, 1);
  GstElement *convert = NULL, *upload = NULL, *capsf = NULL;
  GstCaps *caps;
  GstAppSinkCallbacks cb = { 0 };
  GstPad *pad;
  gint64 t0;

  r->opt = opt;
  g_mutex_init (&r->lock);
  r->labels = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
      (GDestroyNotify) label_count_free);
  r->pipeline = gst_pipeline_new ("gpunet-tag");
  r->bus = gst_element_get_bus (r->pipeline);
  if (!(r->classify = make ("gpunetclassify", error))
      || !(r->sink = make ("appsink", error)))
    goto fail;

  set_classify_options (r);
  g_object_set (r->sink, "sync", FALSE, "async", FALSE, "max-buffers", 2,
      "drop", FALSE, "enable-last-sample", FALSE, NULL);
  cb.new_sample = on_new_sample;
  cb.eos = on_eos;
  gst_app_sink_set_callbacks (GST_APP_SINK (r->sink), &cb, r, NULL);
  gst_bin_add_many (GST_BIN (r->pipeline), r->classify, r->sink, NULL);
  if (!gst_element_link (r->classify, r->sink)) {
    g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
        "cannot link gpunetclassify ! appsink");
    goto fail;
  }
  pad = gst_element_get_static_pad (r->classify, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, classify_sink_probe, r,
      NULL);
  gst_object_unref (pad);

  t0 = g_get_monotonic_time ();
  if (gst_element_set_state (r->pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    take_bus_error (r->bus, error);
    goto fail;
  }
  r->load_s = (g_get_monotonic_time () - t0) / 1e6;

  choose_memory (r);
  if (!(r->queue = make ("queue", error)))
    goto fail;
  if (r->cuda_memory) {
    /* cudaconvert (absent from some builds) turns other CUDA formats into
     * one the element reads; cudaupload passes CUDA memory through */
    if (!(upload = make ("cudaupload", error)))
      goto fail;
    if (have_factory ("cudaconvert") && !(convert = make ("cudaconvert",
                error)))
      goto fail;
  } else if (!(convert = make ("videoconvert", error))) {
    goto fail;
  }
  if (!(capsf = make ("capsfilter", error)))
    goto fail;
  /* a few frames of slack so decoding overlaps with classification */
  g_object_set (r->queue, "max-size-buffers", 4, "max-size-bytes", 0,
      "max-size-time", (guint64) 0, NULL);
  caps = gst_caps_from_string (r->cuda_memory ? CLASSIFY_CUDA_CAPS :
      "video/x-raw, format=" CLASSIFY_FORMATS);
  g_object_set (capsf, "caps", caps, NULL);
  gst_caps_unref (caps);
  {
    GstElement *chain[5];
    guint n = 0;

    chain[n++] = r->queue;
    if (upload)
      chain[n++] = upload;
    if (convert)
      chain[n++] = convert;
    chain[n++] = capsf;
    chain[n++] = r->classify;
    for (guint i = 0; i + 1 < n; i++)
      gst_bin_add (GST_BIN (r->pipeline), chain[i]);
    for (guint i = 0; i + 1 < n; i++)
      if (!gst_element_link (chain[i], chain[i + 1])) {
        g_set_error (error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION,
            "cannot link %s to %s", GST_OBJECT_NAME (chain[i]),
            GST_OBJECT_NAME (chain[i + 1]));
        goto fail;
      }
    for (guint i = 0; i + 1 < n; i++)
      if (!gst_element_sync_state_with_parent (chain[i])) {
        take_bus_error (r->bus, error);
        goto fail;
      }
  }
  r->entry = gst_element_get_static_pad (r->queue, "sink");
  return r;

fail:
  {
    /* elements made but not yet in the bin */
    GstElement *all[] = { r->queue, upload, convert, capsf, r->classify,
      r->sink
    };
    for (guint i = 0; i < G_N_ELEMENTS (all); i++)
      if (all[i] && !GST_OBJECT_PARENT (all[i]))
        gst_object_unref (gst_object_ref_sink (all[i]));
  }
  tag_runner_free (r);
  return NULL;
}

gdouble
tag_runner_load_seconds (const TagRunner * r)
{
  return r->load_s;
}

const gchar *
tag_runner_note (const TagRunner * r)
{
  return r->note;
}

gboolean
tag_runner_cuda_memory (const TagRunner * r)
{
  return r->cuda_memory;
}

void
tag_runner_free (TagRunner * r)
{
  if (r == NULL)
    return;
  if (r->pipeline) {
    gst_element_set_state (r->pipeline, GST_STATE_NULL);
    gst_object_unref (r->pipeline);
  }
  if (r->entry)
    gst_object_unref (r->entry);
  if (r->bus)
    gst_object_unref (r->bus);
  g_hash_table_unref (r->labels);
  g_queue_clear_full (&r->pending, g_free);
  g_free (r->meta_error);
  g_free (r->message);
  g_free (r->caps);
  g_free (r->decoder);
  g_free (r->model);
  g_free (r->precision);
  g_free (r->note);
  g_free (r->seg.label);
  g_mutex_clear (&r->lock);
  g_free (r);
}

gboolean
tag_runner_wedged (TagRunner * r)
{
  return r != NULL && r->wedged;
}

/* Detaches the current source: flush-start unblocks any streaming thread
 * waiting downstream, the source goes to NULL and away, and flush-stop leaves
 * the persistent part (not EOS any more) ready for the next input.  Stopping and
 * removing happen under the pipeline's state lock: the pipeline's own state
 * change in GStreamer's thread pool (the one that follows an async-done, or a
 * child with a pending async-start leaving) holds that lock while it sets every
 * child's state, and could otherwise take the source just before it is stopped
 * and set it PLAYING again just after; the source then runs on outside the
 * pipeline and is disposed, still PLAYING, by that thread (use after free, seen
 * as GStreamer-CRITICALs and crashes after inputs that fail while prerolling). */
static void
detach_source (TagRunner * r)
{
  gst_pad_send_event (r->entry, gst_event_new_flush_start ());
  GST_STATE_LOCK (r->pipeline);
  gst_element_set_state (r->src, GST_STATE_NULL);
  gst_bin_remove (GST_BIN (r->pipeline), r->src);
  GST_STATE_UNLOCK (r->pipeline);
  r->src = NULL;
  gst_pad_send_event (r->entry, gst_event_new_flush_stop (TRUE));
  /* an input's error marks the pipeline's state change failed (GstBin does so
   * on every ERROR) and it then ignores the next source's preroll: left in the
   * PAUSED its source's preroll put it in, the next input would be synced to
   * PAUSED, where a live source (RTSP) gives nothing until --stall-timeout.
   * PLAYING again clears the mark. */
  gst_element_set_state (r->pipeline, GST_STATE_PLAYING);
}

static gint
cmp_count (gconstpointer a, gconstpointer b)
{
  const LabelCount *x = *(LabelCount * const *) a, *y = *(LabelCount * const *) b;

  if (x->count != y->count)
    return x->count < y->count ? 1 : -1;
  return x->id - y->id;
}

static void
reset_input (TagRunner * r, const TagInput * in, GString * out)
{
  g_mutex_lock (&r->lock);
  r->linked = FALSE;
  r->other_streams = FALSE;
  r->name = in->name;
  r->out = out;
  r->decoded = r->classified = 0;
  r->dec_in = r->dec_out = r->missing = 0;
  r->prev_pts = r->prev_dur = -1.0;
  g_queue_clear_full (&r->pending, g_free);
  r->next_keep = -G_MAXDOUBLE;
  r->first_pts = r->last_pts = r->last_end = -1.0;
  r->t_enter = r->t_leave = r->classify_us = 0;
  r->last_activity = g_get_monotonic_time ();
  g_clear_pointer (&r->seg.label, g_free);
  r->seg.open = FALSE;
  g_hash_table_remove_all (r->labels);
  g_clear_pointer (&r->meta_error, g_free);
  g_clear_pointer (&r->message, g_free);
  g_clear_pointer (&r->caps, g_free);
  g_clear_pointer (&r->decoder, g_free);
  g_clear_pointer (&r->model, g_free);
  g_clear_pointer (&r->precision, g_free);
  g_mutex_unlock (&r->lock);
}

static gdouble
query_duration (TagRunner * r)
{
  gint64 d = -1;

  if (gst_element_query_duration (r->pipeline, GST_FORMAT_TIME, &d) && d > 0)
    return (gdouble) d / GST_SECOND;
  return -1.0;
}

/* Waits for the input to end: EOS, an error, no video stream, a stall, or a
 * stop request. Returns the outcome; `r->message` says why it failed. */
static TagResult
wait_input (TagRunner * r, volatile sig_atomic_t * stop, TagTickFunc tick,
    gpointer user, gdouble * container)
{
  gint64 next_tick = 0, t0 = g_get_monotonic_time ();
  GpunetToolMissing missing = { NULL, FALSE, NULL };   /* decodebin's missing plug-ins */

  for (;;) {
    GstMessage *m = gst_bus_timed_pop (r->bus, 50 * GST_MSECOND);
    gint64 now = g_get_monotonic_time (), idle;
    guint64 decoded;
    gdouble pos;
    gboolean linked;

    if (m) {
      TagResult res = TAG_RESULT_OK;
      gboolean end = FALSE;
      GError *e = NULL;
      gchar *dbg = NULL;

      switch (GST_MESSAGE_TYPE (m)) {
        case GST_MESSAGE_ERROR:
          gst_message_parse_error (m, &e, &dbg);
          g_mutex_lock (&r->lock);
          /* decodebin's "missing plug-in" also when only non-video streams
           * exist (audio, subtitles): its missing-plugin messages say which;
           * no element names, they mean nothing to users */
          r->message = gpunet_tool_error_text (e, dbg, r->linked, &missing);
          g_mutex_unlock (&r->lock);
          g_clear_error (&e);
          g_free (dbg);
          res = TAG_RESULT_FAILED;
          end = TRUE;
          break;
        case GST_MESSAGE_ELEMENT:
          gpunet_tool_missing_note (&missing, m);
          break;
        case GST_MESSAGE_APPLICATION:
          if (gst_message_has_name (m, "gpunet-tag-eos")) {
            end = TRUE;
          } else if (gst_message_has_name (m, "gpunet-tag-no-more-pads")
              && GST_MESSAGE_SRC (m) == GST_OBJECT (r->src)) {
            g_mutex_lock (&r->lock);
            if (!r->linked) {
              r->message = g_strdup ("no video stream in this input");
              res = TAG_RESULT_FAILED;
              end = TRUE;
            }
            g_mutex_unlock (&r->lock);
          }
          break;
        default:
          break;
      }
      gst_message_unref (m);
      if (end) {
        gpunet_tool_missing_clear (&missing);
        return res;
      }
    }
    if (*stop) {
      gpunet_tool_missing_clear (&missing);
      return TAG_RESULT_INTERRUPTED;
    }

    g_mutex_lock (&r->lock);
    decoded = r->decoded;
    pos = r->last_pts;
    idle = now - r->last_activity;
    linked = r->linked;
    g_mutex_unlock (&r->lock);
    /* decodebin2 can swallow a demuxer's error raised while it links the
     * demuxer (its "filtered" errors); nothing else would end such an input */
    if (!linked && now - t0 > (gint64) (r->opt->open_timeout * 1e6)) {
      r->message = gpunet_tool_no_frame_text (r->opt->open_timeout);
      gpunet_tool_missing_clear (&missing);
      return TAG_RESULT_FAILED;
    }
    if (idle > (gint64) (r->opt->stall_timeout * 1e6)) {
      r->message = gpunet_tool_stall_text (r->opt->stall_timeout, decoded);
      gpunet_tool_missing_clear (&missing);
      return TAG_RESULT_FAILED;
    }
    if (now >= next_tick) {
      if (*container < 0 && decoded > 0)
        *container = query_duration (r);
      if (tick)
        tick (user, decoded, pos, *container);
      next_tick = now + TICK_US;
    }
  }
}

/* Classifies one input, appending its records and, unless interrupted, its
 * summary to `out`. `result` describes the input (valid until the next call). */
TagResult
tag_runner_process (TagRunner * r, const TagInput * in, GString * out,
    volatile sig_atomic_t * stop, TagTickFunc tick, gpointer user,
    TagSummary * result)
{
  GstCaps *caps;
  TagResult res;
  gint64 t0 = g_get_monotonic_time ();
  gdouble container = -1.0, end;
  GHashTableIter it;
  gpointer v;
  GPtrArray *counts;
  guint i;

  reset_input (r, in, out);
  /* messages left over from the previous input must not end this one */
  gst_bus_set_flushing (r->bus, TRUE);
  gst_bus_set_flushing (r->bus, FALSE);

  r->src = gst_element_factory_make ("uridecodebin", NULL);
  if (r->src == NULL) {
    r->message = g_strdup ("the GStreamer element 'uridecodebin' is missing");
    res = TAG_RESULT_FAILED;
    goto summary;
  }
  caps = gst_caps_from_string ("video/x-raw(ANY)");
  g_object_set (r->src, "uri", in->uri, "caps", caps, "expose-all-streams",
      FALSE, NULL);
  gst_caps_unref (caps);
  g_signal_connect (r->src, "pad-added", G_CALLBACK (on_pad_added), r);
  g_signal_connect (r->src, "no-more-pads", G_CALLBACK (on_no_more_pads), r);
  g_signal_connect (r->src, "deep-element-added",
      G_CALLBACK (on_deep_element_added), r);
  gst_bin_add (GST_BIN (r->pipeline), r->src);

  /* the state change in an opener thread, so that --open-timeout and a signal
   * work while it blocks; a source that never returns takes the runner with it
   * (its pipeline's state lock is held for good): the caller makes a new one */
  {
    GpunetToolOpener *o = gpunet_tool_opener_start (r->src,
        GST_STATE_VOID_PENDING, "gpunet-tag-open");
    GpunetToolOpenState st = gpunet_tool_opener_wait (o,
        g_get_monotonic_time () + (gint64) (r->opt->open_timeout * 1e6), stop);

    gpunet_tool_opener_release (o);
    if (st == GPUNET_TOOL_OPEN_PENDING) {
      r->wedged = TRUE;
      if (*stop) {
        res = TAG_RESULT_INTERRUPTED;
      } else {
        r->message = gpunet_tool_open_timeout_text (r->opt->open_timeout);
        res = TAG_RESULT_FAILED;
      }
      goto summary;
    }
    if (st == GPUNET_TOOL_OPEN_FAILED)
      goto open_failed;
  }
  if (TRUE) {
    res = wait_input (r, stop, tick, user, &container);
  } else {
  open_failed:;
    GError *e = NULL;

    take_bus_error (r->bus, &e);
    r->message = g_strdup (e->message);
    g_clear_error (&e);
    res = TAG_RESULT_FAILED;
  }
  if (res == TAG_RESULT_OK && container < 0)
    container = query_duration (r);
  {
    GstPad *pad = gst_element_get_static_pad (r->classify, "sink");
    GstCaps *caps = gst_pad_get_current_caps (pad);

    if (caps) {
      r->caps = gst_caps_to_string (caps);
      gst_caps_unref (caps);
    }
    gst_object_unref (pad);
  }
  detach_source (r);

summary:
  result->wall_s = (g_get_monotonic_time () - t0) / 1e6;
  if (res == TAG_RESULT_INTERRUPTED)
    return res;

  g_mutex_lock (&r->lock);
  end = r->last_end >= 0 ? r->last_end : r->last_pts;
  if (res == TAG_RESULT_OK && r->meta_error) {
    r->message = g_strdup (r->meta_error);
    res = TAG_RESULT_FAILED;
  } else if (res == TAG_RESULT_OK && r->decoded == 0) {
    r->message = g_strdup ("no video frames decoded");
    res = TAG_RESULT_FAILED;
  } else if (res == TAG_RESULT_OK
      && gpunet_tool_truncated (end, container, r->other_streams)) {
    /* the container announced more than was decoded */
    r->message = gpunet_tool_truncated_text (end, container);
    res = TAG_RESULT_FAILED;
  }
  if (r->opt->segments)
    tag_segment_finish (&r->seg, out, r->opt->format, in->name, r->decoded,
        end);

  counts = g_ptr_array_new ();
  g_hash_table_iter_init (&it, r->labels);
  while (g_hash_table_iter_next (&it, NULL, &v))
    g_ptr_array_add (counts, v);
  g_ptr_array_sort (counts, cmp_count);
  for (i = 0; i < counts->len && i < N_TOP_LABELS; i++) {
    LabelCount *c = g_ptr_array_index (counts, i);
    r->top_out[i].id = c->id;
    r->top_out[i].label = c->label;
    r->top_out[i].count = c->count;
  }
  g_ptr_array_unref (counts);

  result->input = in->name;
  result->ok = res == TAG_RESULT_OK;
  result->decoded = r->decoded;
  result->classified = r->classified;
  /* only an input decoded to its end has drained its decoder */
  result->decode_errors = res == TAG_RESULT_OK && r->dec_in > r->dec_out ?
      r->dec_in - r->dec_out : 0;
  result->frames_missing = r->missing;
  if (res == TAG_RESULT_OK && r->message == NULL
      && (result->decode_errors || result->frames_missing))
    r->message = g_strdup_printf ("frames lost: %" G_GUINT64_FORMAT " the "
        "decoder could not decode, %" G_GUINT64_FORMAT " missing from the "
        "timestamps' sequence", result->decode_errors, result->frames_missing);
  result->message = r->message;
  result->caps = r->caps;
  result->decoder = r->decoder;
  result->model = r->model;
  result->precision = r->precision;
  result->duration = (r->first_pts >= 0 && end >= 0) ? end - r->first_pts : -1;
  result->container_duration = container;
  result->classify_s = r->classify_us / 1e6;
  result->top = r->top_out;
  result->n_top = i;
  g_mutex_unlock (&r->lock);

  tag_write_summary (out, r->opt->format, result);
  return res;
}
