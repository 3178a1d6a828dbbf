/* gpunet-cameras-source.c: one camera = one pipeline (source ! decode ! convert !
 * gpunetclassify ! fakesink) with its own bus watch, and the health machine that
 * tears it down and rebuilds it with exponential back-off.  A camera's pipeline is
 * shut down in a thread of its own, so a source stuck in the network never holds
 * up the main loop or another camera.  Main-loop thread only, except the probes,
 * which touch CamCounters. */
#include <string.h>

#include <gst/pbutils/pbutils.h>
#include <gst/video/video.h>

#include "gpunet-cameras.h"
#include "gpunet-tool-errors.h"
#include "gpunet-tool-open.h"

const gchar *
cam_state_name (CamState s)
{
  static const gchar *n[] = { "starting", "up", "stalled", "reconnecting",
    "down", "stopped"
  };
  return n[s];
}

static CamCounters *
counters_new (void)
{
  CamCounters *c = g_atomic_rc_box_new0 (CamCounters);

  g_mutex_init (&c->lock);
  c->entered = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
      g_free);
  return c;
}

static void
counters_clear (CamCounters * c)
{
  g_hash_table_unref (c->entered);
  g_mutex_clear (&c->lock);
}

static void
counters_unref (gpointer c)
{
  g_atomic_rc_box_release_full (c, (GDestroyNotify) counters_clear);
}

static void
counters_closure_unref (gpointer c, GClosure * closure)
{
  (void) closure;
  counters_unref (c);
}

static GstPadProbeReturn
on_enter (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  CamCounters *c = user;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  gint64 *t = g_new (gint64, 1);

  (void) pad;
  *t = g_get_monotonic_time ();
  __atomic_add_fetch (&c->frames_in, 1, __ATOMIC_RELAXED);
  __atomic_store_n (&c->last_frame_us, *t, __ATOMIC_RELAXED);
  g_mutex_lock (&c->lock);
  /* bounded: a frame that never leaves (a flushed one) must not pile up */
  if (g_hash_table_size (c->entered) > 1000)
    g_hash_table_remove_all (c->entered);
  g_hash_table_insert (c->entered, GSIZE_TO_POINTER (GST_BUFFER_PTS (buf) + 1),
      t);
  g_mutex_unlock (&c->lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_leave (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  CamCounters *c = user;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  gpointer key = GSIZE_TO_POINTER (GST_BUFFER_PTS (buf) + 1);
  gint64 *t;

  (void) pad;
  g_mutex_lock (&c->lock);
  t = g_hash_table_lookup (c->entered, key);
  if (t != NULL) {
    gdouble ms = (g_get_monotonic_time () - *t) / 1000.0;

    for (gint i = 0; i < CAM_N_BUCKETS; i++)
      if (ms <= cam_bucket_bounds_ms[i])
        c->lat_buckets[i]++;
    c->lat_count++;
    c->lat_sum_ms += ms;
    g_hash_table_remove (c->entered, key);
  }
  g_mutex_unlock (&c->lock);
  return GST_PAD_PROBE_OK;
}

/* the region of interest: a region meta the element classifies (roi-mode=regions) */
static GstPadProbeReturn
on_roi (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  const gint *roi = user;
  GstBuffer *buf = gst_buffer_make_writable (GST_PAD_PROBE_INFO_BUFFER (info));

  GstCaps *caps = gst_pad_get_current_caps (pad);
  GstVideoInfo vi;

  /* a rectangle wholly outside the frame (set for another resolution) would give
   * no record at all, frame after frame, with the camera up: said once instead */
  if (caps && gst_video_info_from_caps (&vi, caps)
      && (roi[0] >= GST_VIDEO_INFO_WIDTH (&vi) || roi[1] >= GST_VIDEO_INFO_HEIGHT (&vi))
      && !g_object_get_data (G_OBJECT (pad), "gpunet-roi-outside")) {
    GstElement *el = gst_pad_get_parent_element (pad);

    g_object_set_data (G_OBJECT (pad), "gpunet-roi-outside", GINT_TO_POINTER (1));
    if (el) {
      gst_element_post_message (el, gst_message_new_application (GST_OBJECT (el),
              gst_structure_new ("gpunet-cameras-roi-outside", "width", G_TYPE_INT,
                  GST_VIDEO_INFO_WIDTH (&vi), "height", G_TYPE_INT,
                  GST_VIDEO_INFO_HEIGHT (&vi), NULL)));
      gst_object_unref (el);
    }
  }
  if (caps)
    gst_caps_unref (caps);
  gst_buffer_add_video_region_of_interest_meta (buf, "camera-roi", roi[0],
      roi[1], roi[2], roi[3]);
  GST_PAD_PROBE_INFO_DATA (info) = buf;
  return GST_PAD_PROBE_OK;
}

typedef struct
{
  CamCounters *c;
  gboolean seen;
} DamageProbe;

static void
damage_probe_free (gpointer p)
{
  counters_unref (((DamageProbe *) p)->c);
  g_free (p);
}

/* a gap in the RTP sequence reaches the depayloader as a DISCONT buffer; a decoder
 * marks what it could not decode CORRUPTED */
static GstPadProbeReturn
on_damage (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  DamageProbe *d = user;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);

  (void) pad;
  if ((GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_DISCONT) && d->seen)
      || GST_BUFFER_FLAG_IS_SET (buf, GST_BUFFER_FLAG_CORRUPTED))
    __atomic_add_fetch (&d->c->damaged, 1, __ATOMIC_RELAXED);
  d->seen = TRUE;
  return GST_PAD_PROBE_OK;
}

static void
on_element_added (GstBin * bin, GstBin * sub, GstElement * e, gpointer user)
{
  CamCounters *c = user;
  GstElementFactory *f = gst_element_get_factory (e);
  const gchar *klass;
  GstPad *pad;

  (void) bin;
  (void) sub;
  if (f == NULL)
    return;
  klass = gst_element_factory_get_metadata (f, GST_ELEMENT_METADATA_KLASS);
  if (klass == NULL || (strstr (klass, "Depayloader") == NULL
          && strstr (klass, "Decoder") == NULL))
    return;
  pad = gst_element_get_static_pad (e, "sink");
  if (pad) {
    DamageProbe *d = g_new0 (DamageProbe, 1);

    d->c = g_atomic_rc_box_acquire (c);
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_damage, d,
        damage_probe_free);
    gst_object_unref (pad);
  }
}

/* rtspsrc: report a dead server in seconds, not after its 20 s default */
static void
on_source_setup (GstElement * dec, GstElement * src, gpointer user)
{
  Camera *cam = user;
  (void) dec;
  if (g_object_class_find_property (G_OBJECT_GET_CLASS (src), "tcp-timeout")) {
    guint64 us = (guint64) (cam->svc->cfg->stall_timeout * 1e6);
    g_object_set (src, "tcp-timeout", us, "timeout", us, NULL);
  }
}

/* uridecodebin's pads: the first video one goes to the classifier, every other
 * stream (audio, a second video) into a fakesink of its own, so it never stops
 * the source with not-linked.  (caps=video/x-raw expose-all-streams=false would
 * do this, but then decodebin finds no decoder for some H.264 RTP streams.) */
static void
on_pad_added (GstElement * src, GstPad * pad, gpointer user)
{
  GstElement *pipe = user, *vc = gst_bin_get_by_name (GST_BIN (pipe), "vc");
  GstPad *sink = vc ? gst_element_get_static_pad (vc, "sink") : NULL;
  GstCaps *caps = gst_pad_get_current_caps (pad);
  const gchar *name = caps && gst_caps_get_size (caps) > 0 ?
      gst_structure_get_name (gst_caps_get_structure (caps, 0)) : "";

  (void) src;
  if (sink && !gst_pad_is_linked (sink) && g_str_equal (name, "video/x-raw")) {
    gst_pad_link (pad, sink);
  } else {
    GstElement *fs = gst_element_factory_make ("fakesink", NULL);

    g_object_set (fs, "sync", FALSE, "async", FALSE, NULL);
    gst_bin_add (GST_BIN (pipe), fs);
    gst_element_sync_state_with_parent (fs);
    gst_element_link_pads (src, GST_PAD_NAME (pad), fs, "sink");
  }
  if (caps)
    gst_caps_unref (caps);
  if (sink)
    gst_object_unref (sink);
  if (vc)
    gst_object_unref (vc);
}

/* uridecodebin exposed all its streams and none was video (an audio-only file or
 * stream): said on the bus, as its own error would only be about a plug-in */
static void
on_no_more_pads (GstElement * src, gpointer user)
{
  GstElement *pipe = user, *vc = gst_bin_get_by_name (GST_BIN (pipe), "vc");
  GstPad *sink = vc ? gst_element_get_static_pad (vc, "sink") : NULL;

  if (sink && !gst_pad_is_linked (sink))
    gst_element_post_message (src, gst_message_new_application (GST_OBJECT (src),
            gst_structure_new_empty ("gpunet-cameras-no-video")));
  if (sink)
    gst_object_unref (sink);
  if (vc)
    gst_object_unref (vc);
}

static void teardown (Camera * cam, gboolean wait);
static void fail (Camera * cam, const gchar * reason, gboolean permanent);

static void
set_state (Camera * cam, CamState s, const gchar * reason)
{
  if (cam->state == s && g_strcmp0 (reason, cam->reason) == 0)
    return;
  cam->state = s;
  g_free (cam->reason);
  cam->reason = g_strdup (reason);
  cam->state_since = g_get_monotonic_time ();
  service_state_event (cam->svc, cam);
}

static gboolean
on_bus (GstBus * bus, GstMessage * m, gpointer user)
{
  Camera *cam = user;
  GError *e = NULL;
  gchar *dbg = NULL, *why;

  (void) bus;
  switch (GST_MESSAGE_TYPE (m)) {
    case GST_MESSAGE_ELEMENT:{
      const GstStructure *s = gst_message_get_structure (m);

      if (gst_structure_has_name (s, "gpunetclassify"))
        service_record (cam->svc, cam, s);
      else if (gst_is_missing_plugin_message (m)) {
        /* not fatal by itself (an audio stream may lack a decoder); kept for
         * the reason of the error that follows when the video lacks one */
        g_free (cam->missing);
        cam->missing = gst_missing_plugin_message_get_description (m);
      }
      break;
    }
    case GST_MESSAGE_WARNING:
      cam->warnings++;
      break;
    case GST_MESSAGE_APPLICATION:
      if (gst_message_has_name (m, "gpunet-cameras-no-video")) {
        why = g_strdup_printf ("no video stream in this input (audio or other "
            "streams only); give a video file or stream (%s)", cam->spec->uri);
        fail (cam, why, g_str_has_prefix (cam->spec->uri, "file:"));
        g_free (why);
        return G_SOURCE_REMOVE;
      }
      if (gst_message_has_name (m, "gpunet-cameras-roi-outside")) {
        const GstStructure *s = gst_message_get_structure (m);
        gint w = 0, h = 0;
        const gint *r = cam->spec->roi;

        gst_structure_get_int (s, "width", &w);
        gst_structure_get_int (s, "height", &h);
        /* another try gives the same frames: down until a SIGHUP mends the roi */
        why = g_strdup_printf ("roi=%d,%d,%d,%d lies wholly outside the camera's "
            "%dx%d frame, so nothing would be classified; set roi inside the frame",
            r[0], r[1], r[2], r[3], w, h);
        fail (cam, why, TRUE);
        g_free (why);
        return G_SOURCE_REMOVE;
      }
      break;
    case GST_MESSAGE_ERROR:{
      gboolean permanent;

      gst_message_parse_error (m, &e, &dbg);
      /* what another try cannot fix: no decoder, a file that is not there,
       * a source this host has no element for */
      permanent = g_error_matches (e, GST_CORE_ERROR,
          GST_CORE_ERROR_MISSING_PLUGIN)
          || g_error_matches (e, GST_STREAM_ERROR, GST_STREAM_ERROR_CODEC_NOT_FOUND)
          || g_error_matches (e, GST_STREAM_ERROR, GST_STREAM_ERROR_WRONG_TYPE)
          || g_error_matches (e, GST_STREAM_ERROR, GST_STREAM_ERROR_TYPE_NOT_FOUND)
          || (g_str_has_prefix (cam->spec->uri, "file:")
          && g_error_matches (e, GST_RESOURCE_ERROR,
              GST_RESOURCE_ERROR_NOT_FOUND));
      if (cam->missing && g_error_matches (e, GST_CORE_ERROR,
              GST_CORE_ERROR_MISSING_PLUGIN))
        why = g_strdup_printf ("unsupported codec or format: no GStreamer "
            "element for %s is installed", cam->missing);
      else {
        /* no element names: they mean nothing to users */
        gchar *text = g_strcmp0 (GST_OBJECT_NAME (GST_MESSAGE_SRC (m)), "c") == 0 ?
            g_strdup (e->message) : gpunet_tool_error_text (e, dbg,
            cam->frames_seen > 0, NULL);

        why = g_strdup_printf ("%s (%s)", text, cam->spec->uri);
        g_free (text);
      }
      fail (cam, why, permanent);
      g_free (why);
      g_clear_error (&e);
      g_free (dbg);
      return G_SOURCE_REMOVE;
    }
    case GST_MESSAGE_EOS:
      if (g_str_has_prefix (cam->spec->uri, "file:"))
        fail (cam, "end of the file", TRUE);
      else
        fail (cam, "the source ended the stream", FALSE);
      return G_SOURCE_REMOVE;
    default:
      break;
  }
  return G_SOURCE_CONTINUE;
}

static gboolean
build (Camera * cam)
{
  CamConfig *cfg = cam->svc->cfg;
  GString *d = g_string_new (NULL);
  GError *err = NULL;
  GstElement *c;
  GstPad *pad;
  GstBus *bus;

  if (g_str_has_prefix (cam->spec->uri, "v4l2://"))
    g_string_append_printf (d, "v4l2src device=\"%s\" ! decodebin ! ",
        cam->spec->uri + strlen ("v4l2://"));
  else
    g_string_append_printf (d, "uridecodebin name=src uri=\"%s\" ",
        cam->spec->uri);
  g_string_append_printf (d, "videoconvert name=vc ! gpunetclassify name=c "
      "model=\"%s\" checkpoint=\"%s\" backend=%s n-threads=%d "
      "post-messages=true interval=%u", cfg->model, cfg->checkpoint,
      cfg->backend, cfg->n_threads, cam->spec->interval);
  if (cfg->batch_size != 1)
    g_string_append_printf (d, " batch-size=%d", cfg->batch_size);
  if (cam->spec->has_roi)
    g_string_append (d, " roi-mode=regions roi-types=camera-roi");
  g_string_append (d, " ! fakesink sync=false async=false");
  cam->pipe = gst_parse_launch (d->str, &err);
  g_string_free (d, TRUE);
  if (cam->pipe == NULL) {
    gchar *why = g_strdup_printf ("cannot build the pipeline: %s",
        err->message);

    g_clear_error (&err);
    set_state (cam, CAM_DOWN, why);
    g_free (why);
    return FALSE;
  }
  g_clear_error (&err);         /* a warning-level parse problem */
  c = gst_bin_get_by_name (GST_BIN (cam->pipe), "c");
  if (cfg->when_busy) {
    if (g_object_class_find_property (G_OBJECT_GET_CLASS (c), "when-busy"))
      gst_util_set_object_arg (G_OBJECT (c), "when-busy", cfg->when_busy);
  }
  if (g_object_class_find_property (G_OBJECT_GET_CLASS (c), "stats-interval"))
    g_object_set (c, "stats-interval", 1000, NULL);
  pad = gst_element_get_static_pad (c, "sink");
  if (cam->spec->has_roi)
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_roi, cam->spec->roi,
        NULL);
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_enter,
      g_atomic_rc_box_acquire (cam->cnt), counters_unref);
  gst_object_unref (pad);
  pad = gst_element_get_static_pad (c, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_leave,
      g_atomic_rc_box_acquire (cam->cnt), counters_unref);
  gst_object_unref (pad);
  gst_object_unref (c);
  g_signal_connect_data (cam->pipe, "deep-element-added",
      G_CALLBACK (on_element_added), g_atomic_rc_box_acquire (cam->cnt),
      counters_closure_unref, 0);
  if ((c = gst_bin_get_by_name (GST_BIN (cam->pipe), "src")) != NULL) {
    g_signal_connect (c, "source-setup", G_CALLBACK (on_source_setup), cam);
    g_signal_connect (c, "pad-added", G_CALLBACK (on_pad_added), cam->pipe);
    g_signal_connect (c, "no-more-pads", G_CALLBACK (on_no_more_pads),
        cam->pipe);
    gst_object_unref (c);
  }
  bus = gst_element_get_bus (cam->pipe);
  cam->bus_watch = gst_bus_add_watch (bus, on_bus, cam);
  gst_object_unref (bus);
  cam->start_us = g_get_monotonic_time ();
  cam->skipped_base = cam->skipped;
  cam->failed_base = cam->failed;
  cam->dropped_base = cam->dropped;
  cam->frames_seen = __atomic_load_n (&cam->cnt->frames_in, __ATOMIC_RELAXED);
  if (gst_element_set_state (cam->pipe, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE) {
    /* the reason is an ERROR on the bus; the watch handles it */
  }
  return TRUE;
}

static GPtrArray *pending_shutdowns;

/* on the main loop: a finished teardown thread is joined, so its stack is freed
 * (a camera that reconnects for days must not pile up threads) */
static gboolean
join_finished (gpointer t)
{
  if (pending_shutdowns && g_ptr_array_remove (pending_shutdowns, t))
    g_thread_join (t);
  return G_SOURCE_REMOVE;
}

static gpointer
shutdown_thread_main (gpointer p)
{
  gpunet_tool_stop_element (p);
  g_idle_add (join_finished, g_thread_self ());
  return NULL;
}

static void
teardown (Camera * cam, gboolean wait)
{
  GThread *t;

  if (cam->bus_watch) {
    g_source_remove (cam->bus_watch);
    cam->bus_watch = 0;
  }
  if (cam->pipe == NULL)
    return;
  {
    /* the element's last stats before it goes */
    camera_poll_stats (cam);
  }
  if (wait) {
    gpunet_tool_stop_element (cam->pipe);
  } else {
    if (pending_shutdowns == NULL)
      pending_shutdowns = g_ptr_array_new ();
    t = g_thread_new ("cam-teardown", shutdown_thread_main, cam->pipe);
    g_ptr_array_add (pending_shutdowns, t);
  }
  cam->pipe = NULL;
}

static gboolean
on_retry (gpointer user)
{
  Camera *cam = user;

  cam->retry_timer = 0;
  cam->reconnects++;
  build (cam);
  return G_SOURCE_REMOVE;
}

static void
fail (Camera * cam, const gchar * reason, gboolean permanent)
{
  CamConfig *cfg = cam->svc->cfg;
  gdouble delay;

  teardown (cam, FALSE);
  cam->bus_watch = 0;
  if (cam->svc->stopping)
    return;
  cam->attempts++;
  if (permanent || (cfg->max_retries > 0 && cam->attempts > cfg->max_retries)) {
    gchar *why = permanent ? g_strdup (reason) :
        g_strdup_printf ("%s (gave up after %d tries; max-retries)", reason,
        cfg->max_retries);

    set_state (cam, CAM_DOWN, why);
    g_free (why);
    return;
  }
  delay = cfg->reconnect_min * (1 << MIN (cam->attempts - 1, 20));
  delay = MIN (delay, cfg->reconnect_max);
  {
    gchar *why = g_strdup_printf ("%s; next try in %.1f s", reason, delay);

    set_state (cam, CAM_RECONNECTING, why);
    g_free (why);
  }
  cam->retry_timer = g_timeout_add ((guint) (delay * 1000), on_retry, cam);
}

/* the element's stats structure, when it has one (the `stats` property) */
void
camera_poll_stats (Camera * cam)
{
  GstElement *c;
  GstStructure *s = NULL;

  if (cam->pipe == NULL)
    return;
  c = gst_bin_get_by_name (GST_BIN (cam->pipe), "c");
  if (c && g_object_class_find_property (G_OBJECT_GET_CLASS (c), "stats"))
    g_object_get (c, "stats", &s, NULL);
  if (s) {
    guint64 v;
    guint q;
    gdouble d;

    cam->have_element_stats = TRUE;
    if (gst_structure_get_uint64 (s, "skipped", &v))
      cam->skipped = cam->skipped_base + v;
    if (gst_structure_get_uint64 (s, "failed", &v))
      cam->failed = cam->failed_base + v;
    if (gst_structure_get_uint (s, "queue-depth", &q))
      cam->queue_depth = q;
    if (gst_structure_get_uint64 (s, "dropped", &v))
      cam->dropped = cam->dropped_base + v;
    if (gst_structure_get_double (s, "batch-occupancy", &d))
      cam->batch_occupancy = d;
    if (gst_structure_get_double (s, "pass-mean-ms", &d))
      cam->pass_ms = d;
    if (gst_structure_get_double (s, "latency-p50-ms", &d))
      cam->p50_ms = d;
    if (gst_structure_get_double (s, "latency-p99-ms", &d))
      cam->p99_ms = d;
    gst_structure_free (s);
  }
  if (c)
    gst_object_unref (c);
}

static gboolean
on_tick (gpointer user)
{
  Camera *cam = user;
  gint64 now = g_get_monotonic_time ();
  guint64 in = __atomic_load_n (&cam->cnt->frames_in, __ATOMIC_RELAXED);
  gint64 last = __atomic_load_n (&cam->cnt->last_frame_us, __ATOMIC_RELAXED);
  gdouble stall = cam->svc->cfg->stall_timeout;

  /* frames/s over the last second or so */
  if (now - cam->fps_t >= 1000000) {
    cam->fps = cam->fps_t ? (in - cam->frames_prev) * 1e6 / (now - cam->fps_t)
        : 0;
    cam->frames_prev = in;
    cam->fps_t = now;
    camera_poll_stats (cam);
  }
  if (cam->pipe == NULL)
    return G_SOURCE_CONTINUE;
  if (in > cam->frames_seen) {
    cam->frames_seen = in;
    cam->attempts = 0;
    if (cam->state != CAM_UP)
      set_state (cam, CAM_UP, NULL);
  } else if (cam->state == CAM_UP && now - last > stall * 1e6) {
    gchar *why = g_strdup_printf ("no frame for %.1f s (stall-timeout)", stall);

    set_state (cam, CAM_STALLED, why);
    fail (cam, why, FALSE);
    g_free (why);
  } else if (cam->state != CAM_UP && now - cam->start_us > stall * 1e6) {
    gchar *why = g_strdup_printf ("no frame within %.1f s of connecting "
        "(stall-timeout)", stall);

    fail (cam, why, FALSE);
    g_free (why);
  }
  return G_SOURCE_CONTINUE;
}

Camera *
camera_start (Service * svc, const CamSpec * spec)
{
  Camera *cam = g_new0 (Camera, 1);

  cam->svc = svc;
  cam->spec = cam_spec_copy (spec);
  cam->cnt = counters_new ();
  cam->state = CAM_STOPPED;
  set_state (cam, CAM_STARTING, NULL);
  build (cam);
  cam->timer = g_timeout_add (100, on_tick, cam);
  return cam;
}

void
camera_stop (Camera * cam)
{
  if (cam->timer)
    g_source_remove (cam->timer);
  if (cam->retry_timer)
    g_source_remove (cam->retry_timer);
  teardown (cam, TRUE);
  set_state (cam, CAM_STOPPED, NULL);
  counters_unref (cam->cnt);
  cam_spec_free (cam->spec);
  g_free (cam->reason);
  g_free (cam->missing);
  g_free (cam);
}

/* joins the pipelines still shutting down, waiting at most `ms` in all */
void
camera_join_pending (guint ms)
{
  gint64 end = g_get_monotonic_time () + ms * 1000;

  /* each thread ends by queueing join_finished on the main context */
  while (pending_shutdowns && pending_shutdowns->len > 0
      && g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, FALSE) || (g_usleep (10000), TRUE);
  if (pending_shutdowns && pending_shutdowns->len > 0)
    g_printerr ("gpunet-cameras: %u camera pipelines did not stop within %u "
        "ms; exiting without them\n", pending_shutdowns->len, ms);
}
