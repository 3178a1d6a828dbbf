/* test_chaos.c: a seeded randomized stress test of gpunetclassify and its shared
 * engine.  Several appsrc ! gpunetclassify ! appsink pipelines in one process share
 * one engine (tiny-a fixture, CPU backend, n-threads=1); a PRNG drives a fixed number
 * of steps of what an application may do to them: state changes (PLAYING->NULL
 * mid-stream too), flushes, EOS and restart, caps changes (size, format), PLAYING
 * properties while playing, READY properties (json-output, max-in-flight, ...) where
 * allowed and where not (a warning), model swaps to a valid pair and to an invalid
 * one (missing, corrupt, truncated, mismatched checkpoint), a buffer with a forged
 * GstVideoMeta, an element removed from its running pipeline and disposed,
 * pipelines destroyed and created mid-run.
 *
 * Checked: every buffer that leaves has a record and leaves once, in order (PTS
 * strictly increasing per pipeline, whatever happened between); between a start or
 * flush and an EOS every buffer pushed leaves (a forged buffer: those before it);
 * after EOS the stats balance (docs/element.md, "Live sources and stats"); no
 * pipeline gets an ERROR it did not ask for, a failed swap is a WARNING and the old
 * model keeps classifying, an error on one pipeline leaves the others classifying;
 * elements with the same model share one engine, and once every pipeline is gone
 * the engine is too (a new element gets a new engine); no step hangs (a watchdog
 * aborts with the seed and the last steps after GPUNET_CHAOS_HANG_S, default 60 s:
 * a hang detector, not a timing assert); no critical, no leak (GstCheck, the leaks
 * tracer, LeakSanitizer in the sanitizer build).
 *
 * Settings that keep the expectation exact: when-busy=wait (a frame skipped
 * before any result leaves without a record: docs/element.md, "Live sources and
 * stats"), interval=0 for a forged buffer (a carried frame is not mapped, so its
 * geometry is never read).  Flushes are flush-start/stop sent to appsrc (not a
 * seek: appsrc in stream mode is not seekable); appsrc keeps EOS through a
 * flush, so a stream restarts after EOS through READY or NULL.
 *
 * Environment: GPUNET_CHAOS_SEED (first seed; default from the time, printed first),
 * GPUNET_CHAOS_SEEDS (seeds run one after another, default 1), GPUNET_CHAOS_STEPS
 * (default 200). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstcheck.h>
#include <gst/video/video.h>

#include "gpunet-meta.h"

#define MAX_STREAMS 6
#define N_RING 24

typedef struct
{
  guint64 pts;
  GQuark model;
} Out;

typedef struct
{
  guint id;                     /* serial, for names */
  GstElement *pipe, *src, *cls, *sink;
  GstBus *bus;

  /* written by streaming threads and bus posters, under `lock` */
  GArray *out;                  /* Out, in arrival order */
  guint eos;
  guint errors, warnings, swap_warnings, forged_errors;
  gchar *last_error;
  gboolean expect_errors;

  /* the main thread's */
  gboolean running;             /* PAUSED or PLAYING */
  gboolean playing;
  guint64 next_pts;
  guint64 epoch_first;          /* first PTS of the epoch (since start or flush) */
  GArray *pushed;               /* PTS pushed in this epoch */
  gboolean eos_sent;
  GstVideoInfo info;
  const gchar *props_model;     /* "tiny-a" / "tiny-d": the valid pair last set */
  gboolean props_bad;           /* a failed swap left a bad pair in the properties */
  GQuark cur_model;             /* the model every record must name, 0: unknown */
  gboolean share;
} Stream;

static GMutex lock;
static GCond cond;
static gchar *violation;        /* the first broken invariant a streaming thread saw */

static GRand *rnd;
static guint32 cur_seed;
static guint cur_step;
static gchar *ring[N_RING];
static guint ring_pos;
static GMutex ring_lock;         /* the ring, cur_seed, cur_step, step_start_us */
static gint64 step_start_us;    /* 0: no step running */
static volatile gint watchdog_stop;

static Stream *streams[MAX_STREAMS];
static GPtrArray *graveyard;    /* Streams whose pipeline is gone (freed at the end) */
static guint stream_serial;
static guint max_engine_id;
static gchar *tmpdir, *bad_corrupt, *bad_truncated;
/* what a run exercised, printed at its end */
static guint n_epochs, n_checked, n_forged, n_bad_swaps, n_removed, n_first;

static gchar *
data_path (const gchar * rel)
{
  const gchar *d = g_getenv ("GPUNET_TEST_DATA");

  return g_build_filename (d ? d : "tests/data", rel, NULL);
}

static gchar *
model_json (const gchar * m)
{
  gchar *rel = g_strdup_printf ("fixtures/%s.json", m), *p = data_path (rel);

  g_free (rel);
  return p;
}

static gchar *
model_ckpt (const gchar * m)
{
  gchar *rel = g_strdup_printf ("fixtures/%s/%s.pth.tar", m, m);
  gchar *p = data_path (rel);

  g_free (rel);
  return p;
}

/* ---- the operation log and the watchdog --------------------------------------- */

static void
note (const gchar * fmt, ...) G_GNUC_PRINTF (1, 2);

static void
note (const gchar * fmt, ...)
{
  va_list ap;
  gchar *s;

  va_start (ap, fmt);
  s = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_mutex_lock (&ring_lock);
  g_free (ring[ring_pos % N_RING]);
  ring[ring_pos % N_RING] = g_strdup_printf ("step %u: %s", cur_step, s);
  ring_pos++;
  g_mutex_unlock (&ring_lock);
  if (g_getenv ("GPUNET_CHAOS_VERBOSE"))
    g_print ("step %u: %s\n", cur_step, s);
  g_free (s);
}

static void
dump_ring (void)
{
  guint i;

  g_mutex_lock (&ring_lock);
  g_printerr ("chaos: seed %u, the last operations:\n", cur_seed);
  for (i = ring_pos > N_RING ? ring_pos - N_RING : 0; i < ring_pos; i++)
    g_printerr ("  %s\n", ring[i % N_RING]);
  g_mutex_unlock (&ring_lock);
}

/* Step `n` of seed `seed` starts now (the watchdog's clock); steps 0: none runs. */
static void
mark_step (guint32 seed, guint n, gboolean running)
{
  g_mutex_lock (&ring_lock);
  cur_seed = seed;
  cur_step = n;
  step_start_us = running ? g_get_monotonic_time () : 0;
  g_mutex_unlock (&ring_lock);
}

/* Fails the test with the seed and the last operations. */
#define chaos_fail(...) G_STMT_START {                                    \
    dump_ring ();                                                       \
    fail (__VA_ARGS__);                                                 \
  } G_STMT_END
#define chaos_check(cond, ...) G_STMT_START {                             \
    if (!(cond))                                                        \
      chaos_fail (__VA_ARGS__);                                         \
  } G_STMT_END

static gpointer
watchdog_thread (gpointer data)
{
  gint64 limit = (gint64) GPOINTER_TO_UINT (data) * G_USEC_PER_SEC;

  while (!g_atomic_int_get (&watchdog_stop)) {
    gint64 started;
    guint n;

    g_mutex_lock (&ring_lock);
    started = step_start_us;
    n = cur_step;
    g_mutex_unlock (&ring_lock);
    if (started > 0 && g_get_monotonic_time () - started > limit) {
      g_printerr ("chaos: step %u has not finished in %" G_GINT64_FORMAT
          " s: a hang\n", n, limit / G_USEC_PER_SEC);
      dump_ring ();
      abort ();
    }
    g_usleep (G_USEC_PER_SEC / 4);
  }
  return NULL;
}

/* ---- what the pipelines report ------------------------------------------------- */

static void
set_violation (Stream * s, gchar * text)
{
  if (violation == NULL)
    violation = g_strdup_printf ("pipeline %u: %s", s->id, text);
  g_free (text);
  g_cond_broadcast (&cond);
}

static GstFlowReturn
on_sample (GstAppSink * sink, gpointer user_data)
{
  Stream *s = user_data;
  GstSample *sample = gst_app_sink_pull_sample (sink);
  GstBuffer *buf;
  const GstStructure *rec;
  Out o;

  if (sample == NULL)
    return GST_FLOW_OK;
  buf = gst_sample_get_buffer (sample);
  rec = gpunet_meta_get_structure (gpunet_meta_get (buf));
  o.pts = GST_BUFFER_PTS (buf);
  o.model = rec ? g_quark_from_string (gst_structure_get_string (rec,
          "model")) : 0;
  g_mutex_lock (&lock);
  if (rec == NULL)
    set_violation (s, g_strdup_printf ("the buffer of PTS %" G_GUINT64_FORMAT
            " left without a record", o.pts));
  if (s->out->len > 0
      && o.pts <= g_array_index (s->out, Out, s->out->len - 1).pts)
    set_violation (s, g_strdup_printf ("the buffer of PTS %" G_GUINT64_FORMAT
            " left after the one of PTS %" G_GUINT64_FORMAT
            ": a duplicate or out of order", o.pts, g_array_index (s->out, Out,
                s->out->len - 1).pts));
  g_array_append_val (s->out, o);
  g_cond_broadcast (&cond);
  g_mutex_unlock (&lock);
  gst_sample_unref (sample);
  return GST_FLOW_OK;
}

static void
on_eos (GstAppSink * sink, gpointer user_data)
{
  Stream *s = user_data;

  (void) sink;
  g_mutex_lock (&lock);
  s->eos++;
  g_cond_broadcast (&cond);
  g_mutex_unlock (&lock);
}

static GstBusSyncReply
on_message (GstBus * bus, GstMessage * msg, gpointer user_data)
{
  Stream *s = user_data;
  GError *err = NULL;
  gchar *dbg = NULL;

  (void) bus;
  /* a sync handler that drops a message unrefs it (GstBusSyncHandler) */
  if (GST_MESSAGE_TYPE (msg) != GST_MESSAGE_ERROR
      && GST_MESSAGE_TYPE (msg) != GST_MESSAGE_WARNING) {
    gst_message_unref (msg);
    return GST_BUS_DROP;
  }
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR)
    gst_message_parse_error (msg, &err, &dbg);
  else
    gst_message_parse_warning (msg, &err, &dbg);
  g_mutex_lock (&lock);
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    s->errors++;
    g_free (s->last_error);
    s->last_error = g_strdup_printf ("%s: %s (%s)", GST_MESSAGE_SRC_NAME (msg),
        err->message, dbg ? dbg : "");
    if (strstr (err->message, "reaches past its memory") != NULL)
      s->forged_errors++;
    if (!s->expect_errors)
      set_violation (s, g_strdup_printf ("an ERROR nothing asked for: %s",
              s->last_error));
  } else {
    s->warnings++;
    if (strstr (err->message, "Cannot switch to model") != NULL)
      s->swap_warnings++;
  }
  g_cond_broadcast (&cond);
  g_mutex_unlock (&lock);
  g_clear_error (&err);
  g_free (dbg);
  gst_message_unref (msg);
  return GST_BUS_DROP;
}

/* Fails the test on a violation a streaming thread saw. */
static void
check_violation (void)
{
  gchar *v;

  g_mutex_lock (&lock);
  v = g_strdup (violation);
  g_mutex_unlock (&lock);
  if (v != NULL)
    chaos_fail ("%s", v);
}

/* ---- pipelines ------------------------------------------------------------------ */

static const GstVideoFormat formats[] = {
  GST_VIDEO_FORMAT_RGBA, GST_VIDEO_FORMAT_NV12, GST_VIDEO_FORMAT_I420,
};
static const guint widths[] = { 16, 32, 48, 64 };
static const guint heights[] = { 16, 24, 36 };

static void
random_caps (Stream * s)
{
  GstCaps *caps;

  gst_video_info_set_format (&s->info,
      formats[g_rand_int_range (rnd, 0, G_N_ELEMENTS (formats))],
      widths[g_rand_int_range (rnd, 0, G_N_ELEMENTS (widths))],
      heights[g_rand_int_range (rnd, 0, G_N_ELEMENTS (heights))]);
  s->info.fps_n = 25;
  s->info.fps_d = 1;
  caps = gst_video_info_to_caps (&s->info);
  g_object_set (s->src, "caps", caps, NULL);
  note ("pipeline %u: caps %s %ux%u", s->id,
      GST_VIDEO_INFO_NAME (&s->info), GST_VIDEO_INFO_WIDTH (&s->info),
      GST_VIDEO_INFO_HEIGHT (&s->info));
  gst_caps_unref (caps);
}

static void
set_pair (Stream * s, const gchar * m)
{
  gchar *json = model_json (m), *ckpt = model_ckpt (m);

  g_object_set (s->cls, "model", json, "checkpoint", ckpt, NULL);
  s->props_model = m;
  s->props_bad = FALSE;
  g_free (json);
  g_free (ckpt);
}

static Stream *
stream_new (void)
{
  Stream *s = g_new0 (Stream, 1);
  GstAppSinkCallbacks cb;
  gchar name[32];
  static const guint timeouts[] = { 0, 500, 5000 };

  memset (&cb, 0, sizeof cb);
  cb.eos = on_eos;
  cb.new_sample = on_sample;
  s->id = stream_serial++;
  s->out = g_array_new (FALSE, FALSE, sizeof (Out));
  s->pushed = g_array_new (FALSE, FALSE, sizeof (guint64));
  g_snprintf (name, sizeof name, "chaos%u", s->id);
  s->pipe = gst_pipeline_new (name);
  s->src = gst_element_factory_make ("appsrc", NULL);
  s->cls = gst_element_factory_make ("gpunetclassify", NULL);
  s->sink = gst_element_factory_make ("appsink", NULL);
  fail_unless (s->src && s->cls && s->sink);
  g_object_set (s->src, "format", GST_FORMAT_TIME, "is-live", FALSE,
      "block", FALSE, "max-bytes", (guint64) 256 << 20, NULL);
  s->share = TRUE;
  g_object_set (s->cls, "n-threads", 1, "share-engine", TRUE,
      "batch-size", g_rand_int_range (rnd, 1, 5),
      "batch-timeout", (guint64) timeouts[g_rand_int_range (rnd, 0, 3)],
      "max-in-flight", g_rand_int_range (rnd, 1, 6), NULL);
  gst_util_set_object_arg (G_OBJECT (s->cls), "when-busy", "wait");
  /* async=false: an error posted while the pipeline prerolls (a forged buffer)
   * would leave it in PAUSED (GstBin stops an async state change on an error) */
  g_object_set (s->sink, "sync", FALSE, "async", FALSE, "max-buffers", 0,
      "drop", FALSE, NULL);
  gst_app_sink_set_callbacks (GST_APP_SINK (s->sink), &cb, s, NULL);
  gst_bin_add_many (GST_BIN (s->pipe), s->src, s->cls, s->sink, NULL);
  fail_unless (gst_element_link_many (s->src, s->cls, s->sink, NULL));
  s->bus = gst_pipeline_get_bus (GST_PIPELINE (s->pipe));
  gst_bus_set_sync_handler (s->bus, on_message, s, NULL);
  set_pair (s, "tiny-a");
  random_caps (s);
  return s;
}

/* Engines: elements on the same valid pair and sharing share one engine. */
static void
check_sharing (void)
{
  guint i, id_a = 0, id;

  for (i = 0; i < MAX_STREAMS; i++) {
    Stream *s = streams[i];

    if (s == NULL || !s->running)
      continue;
    g_object_get (s->cls, "engine-id", &id, NULL);
    chaos_check (id != 0, "pipeline %u runs without an engine", s->id);
    max_engine_id = MAX (max_engine_id, id);
    if (!s->share || s->cur_model != g_quark_from_string ("tiny-a"))
      continue;
    if (id_a == 0)
      id_a = id;
    chaos_check (id == id_a, "pipeline %u runs on engine %u, another element "
        "on the same model on engine %u", s->id, id, id_a);
  }
}

static void
new_epoch (Stream * s)
{
  s->epoch_first = s->next_pts;
  g_array_set_size (s->pushed, 0);
  s->eos_sent = FALSE;
}

/* NULL/READY -> PAUSED/PLAYING: the properties are the valid pair. */
static void
stream_start (Stream * s, GstState target)
{
  GstStateChangeReturn r;

  if (s->props_bad)
    set_pair (s, s->props_model);
  new_epoch (s);
  r = gst_element_set_state (s->pipe, target);
  check_violation ();
  chaos_check (r != GST_STATE_CHANGE_FAILURE, "pipeline %u failed to start: %s",
      s->id, s->last_error ? s->last_error : "no error posted");
  s->running = TRUE;
  s->playing = target == GST_STATE_PLAYING;
  s->cur_model = g_quark_from_string (s->props_model);
  check_sharing ();
}

static void
stream_stop (Stream * s, GstState target)
{
  chaos_check (gst_element_set_state (s->pipe, target) ==
      GST_STATE_CHANGE_SUCCESS, "pipeline %u did not stop", s->id);
  s->running = s->playing = FALSE;
  g_mutex_lock (&lock);
  s->expect_errors = FALSE;
  g_mutex_unlock (&lock);
}

/* Sets the pipeline to NULL and lets it go (kept until the end for late
 * messages). */
static void
stream_destroy (Stream * s)
{
  if (s->pipe != NULL) {
    gst_element_set_state (s->pipe, GST_STATE_NULL);
    gst_object_unref (s->bus);
    gst_object_unref (s->pipe);
    s->pipe = s->src = s->cls = s->sink = NULL;
  }
  g_ptr_array_add (graveyard, s);
}

static void
stream_free (gpointer data)
{
  Stream *s = data;

  g_array_free (s->out, TRUE);
  g_array_free (s->pushed, TRUE);
  g_free (s->last_error);
  g_free (s);
}

/* A frame of the current caps, PTS the next of the stream; `forged`: a GstVideoMeta
 * whose last plane reaches past the buffer. */
static GstBuffer *
make_frame (Stream * s, gboolean forged)
{
  gsize size = GST_VIDEO_INFO_SIZE (&s->info), i;
  GstBuffer *buf = gst_buffer_new_allocate (NULL, size, NULL);
  guint32 r = g_rand_int (rnd);
  GstMapInfo map;

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (i = 0; i < size; i++)
    map.data[i] = (guint8) ((i * 7 + r + (i / 61) * (r >> 8)) & 0xff);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_PTS (buf) = s->next_pts;
  GST_BUFFER_DURATION (buf) = 40 * GST_MSECOND;
  s->next_pts += 40 * GST_MSECOND;
  if (forged) {
    gsize offset[GST_VIDEO_MAX_PLANES] = { 0 };
    gint stride[GST_VIDEO_MAX_PLANES] = { 0 };
    guint p, n = GST_VIDEO_INFO_N_PLANES (&s->info);

    for (p = 0; p < n; p++) {
      offset[p] = GST_VIDEO_INFO_PLANE_OFFSET (&s->info, p);
      stride[p] = GST_VIDEO_INFO_PLANE_STRIDE (&s->info, p);
    }
    /* one of: a stride far past the memory, an offset past it */
    if (g_rand_boolean (rnd))
      stride[n - 1] = 4096;
    else
      offset[n - 1] = size + 64;
    gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
        GST_VIDEO_INFO_FORMAT (&s->info), GST_VIDEO_INFO_WIDTH (&s->info),
        GST_VIDEO_INFO_HEIGHT (&s->info), n, offset, stride);
  }
  return buf;
}

static void
push_frames (Stream * s, guint n)
{
  guint i;

  for (i = 0; i < n; i++) {
    GstBuffer *buf = make_frame (s, FALSE);
    guint64 pts = GST_BUFFER_PTS (buf);
    GstFlowReturn r = gst_app_src_push_buffer (GST_APP_SRC (s->src), buf);

    chaos_check (r == GST_FLOW_OK, "pipeline %u: appsrc refused a buffer: %s",
        s->id, gst_flow_get_name (r));
    g_array_append_val (s->pushed, pts);
  }
}

/* Waits until the appsink saw EOS number `n` (no timeout: the watchdog). */
static void
wait_eos (Stream * s, guint n)
{
  g_mutex_lock (&lock);
  while (s->eos < n && violation == NULL)
    g_cond_wait (&cond, &lock);
  g_mutex_unlock (&lock);
  check_violation ();
}

/* After EOS: what left in this epoch is exactly what was pushed, in order, each
 * with its record (of the stream's model where it is known); the stats balance. */
static void
check_epoch (Stream * s)
{
  GArray *got = g_array_new (FALSE, FALSE, sizeof (Out));
  GstStructure *st = NULL;
  guint64 in = 0, cl = 0, ca = 0, sk = 0, fa = 0, dr = 0;
  guint i;

  g_mutex_lock (&lock);
  for (i = 0; i < s->out->len; i++)
    if (g_array_index (s->out, Out, i).pts >= s->epoch_first)
      g_array_append_val (got, g_array_index (s->out, Out, i));
  g_mutex_unlock (&lock);
  for (i = 0; i < MIN (got->len, s->pushed->len); i++) {
    chaos_check (g_array_index (got, Out, i).pts ==
        g_array_index (s->pushed, guint64, i), "pipeline %u: buffer %u of the "
        "epoch left with PTS %" G_GUINT64_FORMAT ", the one pushed had %"
        G_GUINT64_FORMAT, s->id, i, g_array_index (got, Out, i).pts,
        g_array_index (s->pushed, guint64, i));
    chaos_check (s->cur_model == 0
        || g_array_index (got, Out, i).model == s->cur_model,
        "pipeline %u: the buffer of PTS %" G_GUINT64_FORMAT " was classified "
        "by '%s', the model in use is '%s'", s->id, g_array_index (got, Out,
            i).pts, g_quark_to_string (g_array_index (got, Out, i).model),
        g_quark_to_string (s->cur_model));
  }
  chaos_check (got->len == s->pushed->len, "pipeline %u: %u buffers pushed "
      "since the epoch began, %u left before EOS", s->id, s->pushed->len,
      got->len);
  n_epochs++;
  n_checked += got->len;
  g_array_free (got, TRUE);

  g_object_get (s->cls, "stats", &st, NULL);
  gst_structure_get (st, "frames-in", G_TYPE_UINT64, &in, "classified",
      G_TYPE_UINT64, &cl, "carried", G_TYPE_UINT64, &ca, "skipped",
      G_TYPE_UINT64, &sk, "failed", G_TYPE_UINT64, &fa, "dropped",
      G_TYPE_UINT64, &dr, NULL);
  gst_structure_free (st);
  chaos_check (in == cl + ca + sk + fa + dr, "pipeline %u: stats after EOS: "
      "frames-in %" G_GUINT64_FORMAT " != classified %" G_GUINT64_FORMAT
      " + carried %" G_GUINT64_FORMAT " + skipped %" G_GUINT64_FORMAT
      " + failed %" G_GUINT64_FORMAT " + dropped %" G_GUINT64_FORMAT, s->id, in,
      cl, ca, sk, fa, dr);
  chaos_check (sk == 0, "pipeline %u: %" G_GUINT64_FORMAT " frames skipped "
      "with when-busy=wait", s->id, sk);
}

static void
ensure_playing (Stream * s)
{
  if (!s->playing) {
    chaos_check (gst_element_set_state (s->pipe, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE, "pipeline %u: PAUSED -> PLAYING failed",
        s->id);
    s->playing = TRUE;
  }
}

/* EOS, then the check of the epoch. */
static void
finish_epoch (Stream * s)
{
  guint n;

  ensure_playing (s);
  g_mutex_lock (&lock);
  n = s->eos + 1;
  g_mutex_unlock (&lock);
  note ("pipeline %u: EOS after %u buffers", s->id, s->pushed->len);
  chaos_check (gst_app_src_end_of_stream (GST_APP_SRC (s->src)) ==
      GST_FLOW_OK, "pipeline %u: appsrc refused EOS", s->id);
  s->eos_sent = TRUE;
  wait_eos (s, n);
  check_epoch (s);
}

static void
flush (Stream * s)
{
  gboolean eos;

  note ("pipeline %u: flush", s->id);
  chaos_check (gst_element_send_event (s->src, gst_event_new_flush_start ()),
      "pipeline %u: flush-start refused", s->id);
  chaos_check (gst_element_send_event (s->src,
          gst_event_new_flush_stop (TRUE)), "pipeline %u: flush-stop refused",
      s->id);
  /* appsrc stays at EOS through a flush */
  eos = s->eos_sent;
  new_epoch (s);
  s->eos_sent = eos;
}

/* A running stream ready for buffers (after an EOS: a flush or a restart). */
static void
make_ready_for_buffers (Stream * s)
{
  if (!s->running) {
    note ("pipeline %u: start", s->id);
    stream_start (s, g_rand_boolean (rnd) ? GST_STATE_PLAYING :
        GST_STATE_PAUSED);
  } else if (s->eos_sent) {
    /* appsrc takes no buffer after EOS until it stops, flush or not */
    GstState t = g_rand_boolean (rnd) ? GST_STATE_READY : GST_STATE_NULL;

    note ("pipeline %u: restart through %s", s->id,
        gst_element_state_get_name (t));
    stream_stop (s, t);
    stream_start (s, g_rand_boolean (rnd) ? GST_STATE_PLAYING :
        GST_STATE_PAUSED);
  }
}

static Stream *
pick_stream (void)
{
  guint i, n = 0;
  Stream *c[MAX_STREAMS];

  for (i = 0; i < MAX_STREAMS; i++)
    if (streams[i] != NULL)
      c[n++] = streams[i];
  return n ? c[g_rand_int_range (rnd, 0, n)] : NULL;
}

static gint
free_slot (void)
{
  guint i;

  for (i = 0; i < MAX_STREAMS; i++)
    if (streams[i] == NULL)
      return (gint) i;
  return -1;
}

static void
replace_stream (Stream * s)
{
  guint i;

  for (i = 0; i < MAX_STREAMS; i++)
    if (streams[i] == s)
      streams[i] = NULL;
  stream_destroy (s);
}

/* ---- the operations ------------------------------------------------------------- */

static void
op_push (Stream * s)
{
  guint n = g_rand_int_range (rnd, 1, 9);

  make_ready_for_buffers (s);
  note ("pipeline %u: push %u", s->id, n);
  push_frames (s, n);
}

static void
op_eos (Stream * s)
{
  make_ready_for_buffers (s);
  finish_epoch (s);
}

static void
op_state (Stream * s)
{
  static const GstState states[] = { GST_STATE_NULL, GST_STATE_READY,
    GST_STATE_PAUSED, GST_STATE_PLAYING
  };
  GstState t = states[g_rand_int_range (rnd, 0, 4)];

  note ("pipeline %u: -> %s (%s)", s->id, gst_element_state_get_name (t),
      s->running ? (s->playing ? "playing" : "paused") : "stopped");
  if (t <= GST_STATE_READY) {
    if (s->running || t == GST_STATE_NULL)
      stream_stop (s, t);
  } else if (!s->running) {
    stream_start (s, t);
  } else {
    chaos_check (gst_element_set_state (s->pipe, t) != GST_STATE_CHANGE_FAILURE,
        "pipeline %u: -> %s failed", s->id, gst_element_state_get_name (t));
    s->playing = t == GST_STATE_PLAYING;
  }
}

static void
op_flush (Stream * s)
{
  if (!s->running)
    return;
  flush (s);
}

static void
op_caps (Stream * s)
{
  random_caps (s);
}

/* PLAYING properties, at any time. */
static void
op_prop (Stream * s)
{
  switch (g_rand_int_range (rnd, 0, 7)) {
    case 0:{
      guint k = g_rand_int_range (rnd, 1, 21);

      note ("pipeline %u: top-k=%u", s->id, k);
      g_object_set (s->cls, "top-k", k, NULL);
      break;
    }
    case 1:{
      gfloat t = (gfloat) g_rand_double_range (rnd, 0, 0.6);

      note ("pipeline %u: threshold=%g", s->id, t);
      g_object_set (s->cls, "threshold", t, NULL);
      break;
    }
    case 2:{
      guint i = g_rand_int_range (rnd, 0, 4);

      note ("pipeline %u: interval=%u", s->id, i);
      g_object_set (s->cls, "interval", i, NULL);
      break;
    }
    case 3:{
      gfloat m = g_rand_boolean (rnd) ? 0 :
          (gfloat) g_rand_double_range (rnd, 0, 0.95);

      note ("pipeline %u: smoothing=%g", s->id, m);
      g_object_set (s->cls, "smoothing", m, "label-hold",
          g_rand_int_range (rnd, 1, 4), NULL);
      break;
    }
    case 4:{
      guint ms = g_rand_boolean (rnd) ? 0 : g_rand_int_range (rnd, 1, 30);

      note ("pipeline %u: stats-interval=%u", s->id, ms);
      g_object_set (s->cls, "stats-interval", ms, NULL);
      break;
    }
    case 5:
      note ("pipeline %u: post-messages toggled", s->id);
      g_object_set (s->cls, "post-messages", g_rand_boolean (rnd), NULL);
      break;
    default:{
      GstStructure *st = NULL;

      note ("pipeline %u: read stats and engine-id", s->id);
      g_object_get (s->cls, "stats", &st, NULL);
      chaos_check (st != NULL, "pipeline %u: no stats", s->id);
      gst_structure_free (st);
      break;
    }
  }
}

/* READY properties: applied where stopped, a WARNING (and ignored) where not. */
static void
op_ready_prop (Stream * s)
{
  if (s->running) {
    guint w, w2;

    g_mutex_lock (&lock);
    w = s->warnings;
    g_mutex_unlock (&lock);
    note ("pipeline %u: batch-size while running", s->id);
    g_object_set (s->cls, "batch-size", 2, NULL);
    g_mutex_lock (&lock);
    w2 = s->warnings;
    g_mutex_unlock (&lock);
    chaos_check (w2 > w, "pipeline %u: a READY property set while running "
        "posted no WARNING", s->id);
    return;
  }
  switch (g_rand_int_range (rnd, 0, 4)) {
    case 0:{
      gchar *path = g_strdup_printf ("%s/out%u.jsonl", tmpdir, s->id);
      gboolean on = g_rand_boolean (rnd);

      note ("pipeline %u: json-output %s", s->id, on ? "on" : "off");
      g_object_set (s->cls, "json-output", on ? path : "", NULL);
      g_free (path);
      break;
    }
    case 1:
      note ("pipeline %u: max-in-flight", s->id);
      g_object_set (s->cls, "max-in-flight", g_rand_int_range (rnd, 1, 9),
          NULL);
      break;
    case 2:
      s->share = g_rand_int_range (rnd, 0, 4) != 0;
      note ("pipeline %u: share-engine=%d", s->id, s->share);
      g_object_set (s->cls, "share-engine", s->share, NULL);
      break;
    default:
      note ("pipeline %u: batch-size, batch-timeout", s->id);
      g_object_set (s->cls, "batch-size", g_rand_int_range (rnd, 1, 9),
          "batch-timeout", (guint64) g_rand_int_range (rnd, 0, 3000), NULL);
      break;
  }
}

static void
op_swap (Stream * s)
{
  const gchar *m = g_rand_boolean (rnd) ? "tiny-a" : "tiny-d";

  note ("pipeline %u: swap to %s (%s)", s->id, m, s->running ? "running" :
      "stopped");
  set_pair (s, m);
  if (s->running)
    s->cur_model = 0;           /* either until the next start */
}

/* A swap to a pair that cannot load: a WARNING, the old model goes on. */
static void
op_bad_swap (Stream * s)
{
  gchar *json, *ckpt;
  guint w, e;
  gint kind = g_rand_int_range (rnd, 0, 4);

  if (!s->running)
    return;
  make_ready_for_buffers (s);
  switch (kind) {
    case 0:
      json = model_json ("tiny-a");
      ckpt = g_build_filename (tmpdir, "missing.pth.tar", NULL);
      break;
    case 1:
      json = model_json ("tiny-a");
      ckpt = g_strdup (bad_corrupt);
      break;
    case 2:
      json = model_json ("tiny-d");
      ckpt = g_strdup (bad_truncated);
      break;
    default:
      json = model_json ("tiny-d");
      ckpt = model_ckpt ("tiny-a");
      break;
  }
  note ("pipeline %u: bad swap %d", s->id, kind);
  n_bad_swaps++;
  g_mutex_lock (&lock);
  w = s->swap_warnings;
  e = s->errors;
  g_mutex_unlock (&lock);
  g_object_set (s->cls, "model", json, "checkpoint", ckpt, NULL);
  s->props_bad = TRUE;
  g_free (json);
  g_free (ckpt);
  g_mutex_lock (&lock);
  while (s->swap_warnings == w && violation == NULL)
    g_cond_wait (&cond, &lock);
  g_mutex_unlock (&lock);
  check_violation ();
  chaos_check (s->errors == e, "pipeline %u: a failed swap posted an ERROR",
      s->id);
  /* the old model keeps classifying every frame */
  push_frames (s, g_rand_int_range (rnd, 1, 5));
  finish_epoch (s);
}

/* Another running pipeline goes on classifying (after one failed beside it). */
static void
others_go_on (Stream * failed)
{
  Stream *s = pick_stream ();

  if (s == NULL || s == failed)
    return;
  note ("pipeline %u: goes on beside %d", s->id, failed ? (gint) failed->id :
      -1);
  make_ready_for_buffers (s);
  push_frames (s, 3);
  finish_epoch (s);
}

/* A buffer whose GstVideoMeta reaches past its memory: an ERROR from the element,
 * the buffers before it leave, the pipeline restarts, the others go on. */
static void
op_forged (Stream * s)
{
  GstBuffer *bad;
  guint n, forged_errors;

  make_ready_for_buffers (s);
  ensure_playing (s);
  /* interval carries a frame's record without mapping it: classify them all */
  g_object_set (s->cls, "interval", 0, NULL);
  g_mutex_lock (&lock);
  s->expect_errors = TRUE;
  n = s->eos + 1;
  forged_errors = s->forged_errors;
  g_mutex_unlock (&lock);
  push_frames (s, g_rand_int_range (rnd, 0, 4));
  note ("pipeline %u: forged buffer after %u", s->id, s->pushed->len);
  n_forged++;
  bad = make_frame (s, TRUE);
  chaos_check (gst_app_src_push_buffer (GST_APP_SRC (s->src), bad) ==
      GST_FLOW_OK, "pipeline %u: appsrc refused a buffer", s->id);
  /* appsrc's task stops on the flow error and sends EOS */
  s->eos_sent = TRUE;
  wait_eos (s, n);
  check_epoch (s);
  g_mutex_lock (&lock);
  n = s->forged_errors;
  g_mutex_unlock (&lock);
  chaos_check (n == forged_errors + 1, "pipeline %u: %u errors for a forged "
      "buffer, not one", s->id, n - forged_errors);
  stream_stop (s, GST_STATE_NULL);
  others_go_on (s);
  stream_start (s, GST_STATE_PLAYING);
}

/* The element taken out of its running pipeline and disposed; the pipeline is
 * then destroyed and a new one takes its place. */
static void
op_remove (Stream * s)
{
  GstElement *cls = s->cls;
  gint slot;
  guint n;

  make_ready_for_buffers (s);
  /* PLAYING: in PAUSED the sink blocks the element's src task in preroll, and
   * an element cannot stop a task blocked downstream (GStreamer's rule for
   * removing elements: unblock or flush downstream first) */
  ensure_playing (s);
  g_mutex_lock (&lock);
  s->expect_errors = TRUE;
  g_mutex_unlock (&lock);
  push_frames (s, g_rand_int_range (rnd, 0, 8));
  note ("pipeline %u: element removed and disposed while playing", s->id);
  n_removed++;
  gst_object_ref (cls);
  chaos_check (gst_element_set_state (cls, GST_STATE_NULL) ==
      GST_STATE_CHANGE_SUCCESS, "pipeline %u: the element did not stop", s->id);
  gst_bin_remove (GST_BIN (s->pipe), cls);
  gst_object_unref (cls);
  s->cls = NULL;
  /* into the unlinked source: accepted or refused, never a crash */
  for (n = g_rand_int_range (rnd, 0, 3); n > 0; n--)
    gst_app_src_push_buffer (GST_APP_SRC (s->src), make_frame (s, FALSE));
  replace_stream (s);
  others_go_on (NULL);
  slot = free_slot ();
  if (slot >= 0) {
    streams[slot] = stream_new ();
    note ("pipeline %u: new", streams[slot]->id);
    stream_start (streams[slot], GST_STATE_PLAYING);
  }
}

static void
op_destroy (Stream * s)
{
  note ("pipeline %u: destroyed (%s)", s->id, s->running ? "running" :
      "stopped");
  replace_stream (s);
}

static void
op_new (void)
{
  gint slot = free_slot ();

  if (slot < 0)
    return;
  streams[slot] = stream_new ();
  note ("pipeline %u: new", streams[slot]->id);
  if (g_rand_int_range (rnd, 0, 4))
    stream_start (streams[slot], GST_STATE_PLAYING);
}

static void
step (void)
{
  Stream *s = pick_stream ();
  guint r = g_rand_int_range (rnd, 0, 100);

  if (s == NULL) {
    op_new ();
    return;
  }
  if (r < 30)
    op_push (s);
  else if (r < 42)
    op_eos (s);
  else if (r < 52)
    op_state (s);
  else if (r < 58)
    op_flush (s);
  else if (r < 64)
    op_caps (s);
  else if (r < 76)
    op_prop (s);
  else if (r < 81)
    op_ready_prop (s);
  else if (r < 85)
    op_swap (s);
  else if (r < 89)
    op_bad_swap (s);
  else if (r < 92)
    op_forged (s);
  else if (r < 94)
    op_remove (s);
  else if (r < 96)
    op_destroy (s);
  else
    op_new ();
}

/* Once every pipeline is gone, so is the engine: a new element gets a new one. */
static void
check_engine_gone (void)
{
  Stream *s = stream_new ();
  guint id;

  stream_start (s, GST_STATE_PAUSED);
  g_object_get (s->cls, "engine-id", &id, NULL);
  chaos_check (id > max_engine_id, "an element started after every pipeline "
      "was gone got engine %u: an engine (up to %u) outlived its elements", id,
      max_engine_id);
  max_engine_id = id;
  stream_destroy (s);
}

static void
run_seed (guint32 seed, guint steps, guint k)
{
  guint i;

  mark_step (seed, 0, FALSE);
  g_print ("chaos: seed %u, %u steps (GPUNET_CHAOS_SEED=%u to repeat)\n", seed,
      steps, seed);
  rnd = g_rand_new_with_seed (seed);
  n_first = stream_serial;
  graveyard = g_ptr_array_new_with_free_func (stream_free);
  for (i = 0; i < k; i++) {
    streams[i] = stream_new ();
    stream_start (streams[i], GST_STATE_PLAYING);
  }
  for (i = 0; i < steps; i++) {
    mark_step (seed, i, TRUE);
    step ();
    check_violation ();
  }
  /* the end: every running stream drains and is checked, then all go */
  mark_step (seed, steps, TRUE);
  for (i = 0; i < MAX_STREAMS; i++) {
    Stream *s = streams[i];

    if (s == NULL)
      continue;
    if (s->running && !s->eos_sent && s->pushed->len > 0) {
      finish_epoch (s);
      check_violation ();
    }
    replace_stream (s);
  }
  check_engine_gone ();
  check_violation ();
  mark_step (seed, steps, FALSE);
  g_print ("chaos: seed %u passed: %u EOS checked (%u buffers), %u forged "
      "buffers, %u failed swaps, %u elements removed, %u pipelines\n", seed,
      n_epochs, n_checked, n_forged, n_bad_swaps, n_removed,
      stream_serial - n_first);
  n_epochs = n_checked = n_forged = n_bad_swaps = n_removed = 0;
  g_ptr_array_free (graveyard, TRUE);
  g_rand_free (rnd);
}

static gchar *
write_bad_files (void)
{
  gchar *ckpt = model_ckpt ("tiny-a"), *data = NULL;
  gsize len = 0;
  GError *err = NULL;
  guint8 garbage[4096];
  guint i;

  for (i = 0; i < sizeof garbage; i++)
    garbage[i] = (guint8) (i * 131 + 17);
  bad_corrupt = g_build_filename (tmpdir, "corrupt.pth.tar", NULL);
  fail_unless (g_file_set_contents (bad_corrupt, (gchar *) garbage,
          sizeof garbage, &err));
  fail_unless (g_file_get_contents (ckpt, &data, &len, &err));
  bad_truncated = g_build_filename (tmpdir, "truncated.pth.tar", NULL);
  fail_unless (g_file_set_contents (bad_truncated, data, len / 2, &err));
  g_free (data);
  return ckpt;
}

GST_START_TEST (test_chaos)
{
  const gchar *v;
  guint32 seed;
  guint steps = 200, seeds = 1, hang_s = 60, i;
  GThread *watchdog;

  v = g_getenv ("GPUNET_CHAOS_SEED");
  seed = v ? (guint32) g_ascii_strtoull (v, NULL, 10) :
      (guint32) (g_get_real_time () ^ getpid ());
  if ((v = g_getenv ("GPUNET_CHAOS_STEPS")))
    steps = (guint) g_ascii_strtoull (v, NULL, 10);
  if ((v = g_getenv ("GPUNET_CHAOS_SEEDS")))
    seeds = MAX (1, (guint) g_ascii_strtoull (v, NULL, 10));
  if ((v = g_getenv ("GPUNET_CHAOS_HANG_S")))
    hang_s = MAX (1, (guint) g_ascii_strtoull (v, NULL, 10));
  g_print ("chaos: seeds %u..%u, %u steps each\n", seed, seed + seeds - 1,
      steps);

  tmpdir = g_dir_make_tmp ("gpunet-chaos-XXXXXX", NULL);
  fail_unless (tmpdir != NULL);
  g_free (write_bad_files ());
  watchdog = g_thread_new ("chaos-watchdog", watchdog_thread,
      GUINT_TO_POINTER (hang_s));
  for (i = 0; i < seeds; i++)
    run_seed (seed + i, steps, 4);
  g_atomic_int_set (&watchdog_stop, 1);
  g_thread_join (watchdog);
  {
    GDir *d = g_dir_open (tmpdir, 0, NULL);
    const gchar *name;

    while (d && (name = g_dir_read_name (d)) != NULL) {
      gchar *p = g_build_filename (tmpdir, name, NULL);

      g_unlink (p);
      g_free (p);
    }
    if (d)
      g_dir_close (d);
    g_rmdir (tmpdir);
  }
  g_free (tmpdir);
  g_free (bad_corrupt);
  g_free (bad_truncated);
  for (i = 0; i < N_RING; i++)
    g_clear_pointer (&ring[i], g_free);
}

GST_END_TEST;

static Suite *
chaos_suite (void)
{
  Suite *s = suite_create ("chaos");
  TCase *tc = tcase_create ("chaos");

  /* the watchdog catches hangs; meson's timeout bounds the whole run */
  tcase_set_timeout (tc, 3600);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_chaos);
  return s;
}

GST_CHECK_MAIN (chaos);
