/* gpunet-streams: N video streams through gpunetclassify in one process, the way an
 * NVR or a DeepStream-style app runs them: synthetic videotestsrc patterns (one
 * pattern per stream) or the files/URIs given, each into its own element, the
 * elements sharing one engine unless --no-share.  Prints per-stream counts and a
 * last line
 *   streams=N frames=T fps=X p50_ms=A p99_ms=B engines=E rss_mb=R
 * where latency is a buffer entering the element to leaving it, fps counts frames
 * of all streams over the wall time from PLAYING to the last EOS, engines counts
 * distinct engine-id values and rss_mb is the process's peak resident size.
 * Each stream is named by its index and label (its test pattern or its input's
 * file name), in its lines and in its errors; after the run a line per stream gives
 * the element's stats (frames in, classified, carried, skipped, failed, dropped, its
 * own p50/p99 and frames/s); --stats-interval prints them while it runs.
 * --live runs the synthetic sources on the clock at --fps, --when-busy sets the
 * element's policy (wait, skip, auto).
 * A missing, empty or non-regular input file is reported and left out; an input
 * that fails while running (damaged, no video stream) is named with what went
 * wrong, in words that name no GStreamer element, and ends while the others run.
 * So does an input that hangs: one whose source does not open or that gives no
 * frame within --open-timeout, or one whose element sees nothing come in or go
 * out, with no end of stream or error, for --stall-timeout, whatever the
 * pipeline's state (each file's or URI's source changes state in a thread of
 * its own, gpunet-tool-open.h, so that one blocked in open() holds up no other).
 * Every stream ended and still no end from the pipeline (it is not PLAYING) for
 * --stall-timeout: the run ends, and says so.
 * A file cut short, which most demuxers end without an error at its last
 * complete frame, is found after the run as gpunet-tag finds it (its frames end
 * before its container's duration, gpunet-tool-errors.h) and named, with the
 * frames it should have had, on stderr and in its count line.
 * Exit: 0 ok, 1 a stream failed or was truncated, or an input was left out, 2
 * usage or the run could not start (a model that does not load: its error
 * alone, no summary). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <glib/gstdio.h>
#include <gst/gst.h>

#include "gpunet.h"
#include "gpunet-plugin-find.h"
#include "gpunet-tool-errors.h"
#include "gpunet-tool-open.h"
#include "gpunet-tool-text.h"

typedef struct
{
  GMutex lock;
  GHashTable *entered;          /* PTS -> entry time (us), per stream */
  GArray *latencies;            /* gdouble ms, all streams */
  guint64 frames;
} Stats;

typedef struct
{
  Stats *stats;
  GHashTable *entered;
  guint64 in;                   /* frames into the element (video seen) */
  guint64 out;
  gint64 last_us;               /* a frame entered or left the element (monotonic) */
  GstClockTime duration;        /* the last frame's duration, or NONE */
  gboolean eos;                 /* EOS reached the element */
  gboolean done;                /* EOS left the element: the stream ended */
  gdouble last_end;             /* the end of the last frame into the element
                                 * (stream time, seconds), or -1 */
  gboolean other_streams;       /* its demuxer gave a stream other than video */
  GpunetToolMissing missing;    /* main thread: decodebin's missing plug-ins */
  gboolean failed;              /* main thread: an input error ended it */
  GpunetToolOpener *opener;     /* main thread: its source's state change, until
                                 * it returned and the source joined the pipeline */
  gboolean open_failed;         /* main thread: that state change failed */
  gboolean truncated;           /* main thread: it ended, without an error,
                                 * before the duration its container announced */
  guint64 expected;             /* main thread: the frames that duration holds at
                                 * the stream's frame rate (0: unknown) */
} StreamProbe;

static GstPadProbeReturn
on_enter (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  StreamProbe *sp = user;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  gint64 *t = g_new (gint64, 1);
  GstEvent *ev = gst_pad_get_sticky_event (pad, GST_EVENT_SEGMENT, 0);
  const GstSegment *segment = NULL;
  gdouble pos;

  if (ev)
    gst_event_parse_segment (ev, &segment);
  pos = gpunet_tool_buffer_seconds (GST_BUFFER_PTS (buf), segment);
  if (pos >= 0 && GST_BUFFER_DURATION_IS_VALID (buf))
    pos += (gdouble) GST_BUFFER_DURATION (buf) / GST_SECOND;
  if (ev)
    gst_event_unref (ev);
  *t = g_get_monotonic_time ();
  g_mutex_lock (&sp->stats->lock);
  g_hash_table_insert (sp->entered, GUINT_TO_POINTER (GST_BUFFER_PTS (buf) + 1),
      t);
  sp->in++;
  sp->last_us = *t;
  sp->duration = GST_BUFFER_DURATION (buf);
  sp->last_end = MAX (sp->last_end, pos);
  g_mutex_unlock (&sp->stats->lock);
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
on_leave (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  StreamProbe *sp = user;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  gint64 now = g_get_monotonic_time (), *t;
  gpointer key = GUINT_TO_POINTER (GST_BUFFER_PTS (buf) + 1);

  (void) pad;
  g_mutex_lock (&sp->stats->lock);
  t = g_hash_table_lookup (sp->entered, key);
  if (t != NULL) {
    gdouble ms = (now - *t) / 1000.0;

    g_array_append_val (sp->stats->latencies, ms);
    g_hash_table_remove (sp->entered, key);
  }
  sp->stats->frames++;
  sp->out++;
  sp->last_us = now;
  g_mutex_unlock (&sp->stats->lock);
  return GST_PAD_PROBE_OK;
}

/* EOS reached the element (its sink pad) or left it (its src pad: everything of
 * the stream went downstream). */
static GstPadProbeReturn
on_event (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  StreamProbe *sp = user;

  if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) == GST_EVENT_EOS) {
    g_mutex_lock (&sp->stats->lock);
    if (GST_PAD_IS_SRC (pad))
      sp->done = TRUE;
    else
      sp->eos = TRUE;
    sp->last_us = g_get_monotonic_time ();
    g_mutex_unlock (&sp->stats->lock);
  }
  return GST_PAD_PROBE_OK;
}

/* A demuxer's stream other than video (audio, subtitles): the container's
 * duration may then be that stream's (gpunet_tool_truncated). */
static void
on_demux_pad_added (GstElement * demux, GstPad * pad, gpointer user)
{
  StreamProbe *sp = user;

  (void) demux;
  if (!gpunet_tool_demux_pad_is_video (pad)) {
    g_mutex_lock (&sp->stats->lock);
    sp->other_streams = TRUE;
    g_mutex_unlock (&sp->stats->lock);
  }
}

/* Each demuxer a file's or URI's source plugs in: which streams it gives. */
static void
on_deep_element_added (GstBin * bin, GstBin * sub, GstElement * e,
    gpointer user)
{
  GstElementFactory *f = gst_element_get_factory (e);
  const gchar *klass = f ? gst_element_factory_get_metadata (f,
      GST_ELEMENT_METADATA_KLASS) : NULL;

  (void) bin;
  (void) sub;
  if (klass && strstr (klass, "Demux"))
    g_signal_connect (e, "pad-added", G_CALLBACK (on_demux_pad_added), user);
}

static int
compare_double (const void *a, const void *b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return x < y ? -1 : x > y;
}

/* The parent of `obj` (a reference, taken under its lock), and `obj`'s
 * reference dropped: a failed input's source is stopped and freed in a thread
 * of its own while its elements' messages are still read here. */
static GstObject *
up (GstObject * obj)
{
  GstObject *parent = gst_object_get_parent (obj);

  gst_object_unref (obj);
  return parent;
}

/* The stream of element `obj`, or -1: each stream's elements are named by a
 * letter and its index (s source, v videoconvert, f capsfilter, c the element,
 * k the sink), the elements inside a source bin by their parents. */
static gint
stream_index (GstObject * obj)
{
  gint found = -1;

  for (obj = gst_object_ref (obj); obj != NULL && found < 0; obj = up (obj)) {
    const gchar *name = GST_OBJECT_NAME (obj);
    gchar *end;
    gint64 k;

    if (name && name[0] && strchr ("svfck", name[0]) && g_ascii_isdigit (name[1])) {
      k = g_ascii_strtoll (name + 1, &end, 10);
      if (*end == '\0')
        found = (gint) k;
    }
  }
  if (obj != NULL)
    gst_object_unref (obj);
  return found;
}

/* TRUE when `obj` is a stream's gpunetclassify (c<index>): its errors are the
 * engine's sentences (the model, the frame), not the input's. */
static gboolean
is_classifier (GstObject * obj)
{
  const gchar *name = GST_OBJECT_NAME (obj);

  return name && name[0] == 'c' && g_ascii_isdigit (name[1]);
}

/* The sentence for an error from stream `k`'s elements (g_free): the engine's as
 * it is, an input's in words that name no element (gpunet-tool-errors.h). */
static gchar *
stream_error_text (GstMessage * msg, const StreamProbe * sp)
{
  GError *e = NULL;
  gchar *dbg = NULL, *text;
  gboolean seen = FALSE;

  if (sp) {
    g_mutex_lock (&sp->stats->lock);
    seen = sp->in > 0;
    g_mutex_unlock (&sp->stats->lock);
  }
  gst_message_parse_error (msg, &e, &dbg);
  if (is_classifier (GST_MESSAGE_SRC (msg)))
    text = g_strdup (e->message);
  else
    text = gpunet_tool_error_text (e, dbg, seen, sp ? &sp->missing : NULL);
  g_clear_error (&e);
  g_free (dbg);
  return text;
}

/* FALSE for an element of a failed input's source, which has left the pipeline
 * (its later errors are still on the bus). */
static gboolean
in_pipeline (GstObject * obj, GstElement * pipe)
{
  for (obj = gst_object_ref (obj); obj != NULL && obj != GST_OBJECT (pipe);)
    obj = up (obj);
  if (obj == NULL)
    return FALSE;
  gst_object_unref (obj);
  return TRUE;
}

/* Sends EOS into the element (user_data, its name) from a thread of GStreamer's
 * pool: a sink still prerolling holds the sending thread until PLAYING. */
static void
send_eos (GstElement * pipe, gpointer name)
{
  GstElement *c = gst_bin_get_by_name (GST_BIN (pipe), name);

  if (c) {
    GstPad *pad = gst_element_get_static_pad (c, "sink");

    gst_pad_send_event (pad, gst_event_new_eos ());
    gst_object_unref (pad);
    gst_object_unref (c);
  }
}

/* Stream `k`'s source leaves the pipeline (which then stops waiting for it to
 * preroll: decodebin never does after an error) and is stopped in a thread left
 * behind if it never returns.  Under the pipeline's state lock: a state change
 * of the pipeline in another thread (the one that follows an async-done) must
 * not take the source between the locking and the removal, and then wait for
 * ever on its state lock, which the stopping thread may hold for good.  Main
 * thread. */
static void
detach_source (GstElement * pipe, StreamProbe * sp, gint k)
{
  gchar name[16];
  GstElement *e;

  g_clear_pointer (&sp->opener, gpunet_tool_opener_release);
  g_snprintf (name, sizeof name, "s%d", k);
  e = gst_bin_get_by_name (GST_BIN (pipe), name);
  if (e) {
    GST_STATE_LOCK (pipe);
    gst_element_set_locked_state (e, TRUE);
    gst_bin_remove (GST_BIN (pipe), e);
    GST_STATE_UNLOCK (pipe);
    g_thread_unref (g_thread_new ("gpunet-streams-close",
            gpunet_tool_stop_element, e));
  }
}

/* The pipeline's change to PLAYING, asked again after an input's error.  A bin
 * marks its state change failed on every ERROR posted inside it (before the
 * message reaches this bus) and from then on ignores its children's ASYNC_DONE:
 * a change to PLAYING still waiting for a source that prerolls (one joining
 * while the error comes) is abandoned, the pipeline stays PAUSED and its EOS,
 * posted only in PLAYING, never comes.  Asking again clears the mark.  So after
 * every input's error, its first (end_stream) and any later one: a failed
 * input's further errors, and one a streaming thread of a source already out of
 * the pipeline posts there (it took the bus before the source left).  Main
 * thread. */
static void
play_again (GstElement * pipe)
{
  gst_element_set_state (pipe, GST_STATE_PLAYING);
}

/* Ends stream `k` after its input failed or hung, so that the pipeline's EOS
 * still comes once the other streams end: its source leaves, and an EOS into the
 * stream's element drains what it holds and ends its sink.  Main thread. */
static void
end_stream (GstElement * pipe, StreamProbe * sp, gint k)
{
  detach_source (pipe, sp, k);
  gst_element_call_async (pipe, send_eos, g_strdup_printf ("c%d", k), g_free);
  play_again (pipe);
}

/* Stream `k`'s source, opened in a thread of its own (`sp->opener`) with its
 * state locked, joins the pipeline's state changes once that returned: the
 * pipeline's base time, unlocked, the pipeline's state.  Under the pipeline's
 * state lock, so that its change to PLAYING does not pass the source by between
 * the base time and the unlocking.  Main thread. */
static void
join_source (GstElement * pipe, gint k)
{
  gchar name[16];
  GstElement *e;

  g_snprintf (name, sizeof name, "s%d", k);
  e = gst_bin_get_by_name (GST_BIN (pipe), name);
  if (e == NULL)
    return;
  GST_STATE_LOCK (pipe);
  gst_element_set_base_time (e, gst_element_get_base_time (pipe));
  gst_element_set_start_time (e, gst_element_get_start_time (pipe));
  gst_element_set_locked_state (e, FALSE);
  gst_element_sync_state_with_parent (e);
  GST_STATE_UNLOCK (pipe);
  gst_object_unref (e);
}

/* Stream `k` of a file or URI, ended without an error (its EOS left its
 * element): whether its frames end before the duration its container announces,
 * by gpunet-tag's rule (gpunet_tool_truncated), as a file cut short does with
 * most demuxers (they end at its last complete frame, without an error or a
 * warning).  Then it says so on stderr, with the frames that duration holds at
 * the stream's frame rate, and marks the stream.  After the run, before the
 * pipeline stops (its source still answers the duration query).  Main thread. */
static void
check_truncated (GstElement * pipe, StreamProbe * sp, gint k,
    const gchar * label)
{
  gchar name[16];
  GstElement *c;
  GstPad *pad;
  GstCaps *caps;
  gint64 d = -1;
  gint fn = 0, fd = 0;
  gdouble end, container = -1.0;
  gboolean other, done;
  guint64 out;
  gchar *text;

  g_mutex_lock (&sp->stats->lock);
  end = sp->last_end;
  other = sp->other_streams;
  done = sp->done;
  out = sp->out;
  g_mutex_unlock (&sp->stats->lock);
  if (sp->failed || !done)
    return;
  g_snprintf (name, sizeof name, "c%d", k);
  c = gst_bin_get_by_name (GST_BIN (pipe), name);
  if (c == NULL)
    return;
  pad = gst_element_get_static_pad (c, "sink");
  if (gst_pad_peer_query_duration (pad, GST_FORMAT_TIME, &d) && d > 0)
    container = (gdouble) d / GST_SECOND;
  caps = gst_pad_get_current_caps (pad);
  if (caps == NULL || gst_caps_get_size (caps) == 0
      || !gst_structure_get_fraction (gst_caps_get_structure (caps, 0),
          "framerate", &fn, &fd))
    fn = fd = 0;
  if (caps)
    gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_object_unref (c);
  if (!gpunet_tool_truncated (end, container, other))
    return;
  sp->truncated = TRUE;
  if (fn > 0 && fd > 0)
    sp->expected = (guint64) (container * fn / fd + 0.5);
  text = gpunet_tool_truncated_text (end, container);
  if (sp->expected > out)
    g_printerr ("gpunet-streams: stream %d (%s): %s, so only %"
        G_GUINT64_FORMAT " of its %" G_GUINT64_FORMAT " frames went through "
        "the classifier (the file is cut short or damaged: copy or download it "
        "again in full)\n", k, label, text, out, sp->expected);
  else
    g_printerr ("gpunet-streams: stream %d (%s): %s (the file is cut short or "
        "damaged: copy or download it again in full)\n", k, label, text);
  g_free (text);
}

/* What the main loop knows of the run (main thread). */
typedef struct
{
  GstElement *pipe;
  GstBus *bus;
  StreamProbe *probes;
  gchar **labels;
  gint n;
  gdouble open_timeout;         /* seconds to the first frame (and to open) */
  gdouble stall_timeout;        /* seconds without a frame; 0: no check */
  gint64 t0;                    /* PLAYING asked (monotonic us) */
  gint64 hold_us;               /* the pipeline last waited for a source still
                                 * opening (monotonic us): the stall clock's start */
  gint64 ended_us;              /* every stream had ended (0: not yet) */
  gint ended;                   /* streams ended by their input */
  gboolean failed;              /* the engine's or the pipeline's error: the end */
  gboolean eos;                 /* every stream ended */
} Run;

#define RUN_MESSAGES (GST_MESSAGE_EOS | GST_MESSAGE_ERROR | GST_MESSAGE_ELEMENT)

static void print_stats (gint k, const gchar * label, const GstStructure * s);

/* Ends stream `k`, its input at fault: says why (`text`, taken) and goes on. */
static void
fail_stream (Run * r, gint k, gchar * text)
{
  g_printerr ("gpunet-streams: stream %d (%s): %s\n", k, r->labels[k], text);
  g_free (text);
  r->probes[k].failed = TRUE;
  end_stream (r->pipe, &r->probes[k], k);
  r->ended++;
}

static void
handle_message (Run * r, GstMessage * msg)
{
  gint k = -1;
  gboolean stream;

  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR
      || GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT)
    k = stream_index (GST_MESSAGE_SRC (msg));
  stream = k >= 0 && k < r->n;
  if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    gboolean input = stream && !is_classifier (GST_MESSAGE_SRC (msg));

    if ((input && r->probes[k].failed)
        || !in_pipeline (GST_MESSAGE_SRC (msg), r->pipe)) {
      /* a failed input's later errors: said once, but they too abort the
       * pipeline's change to PLAYING */
      play_again (r->pipe);
    } else if (input) {
      /* an input's failure ends its stream only: the others run on */
      fail_stream (r, k, stream_error_text (msg, &r->probes[k]));
    } else {
      /* the engine's (or the pipeline's) error ends the run */
      gchar *text = stream_error_text (msg, NULL);

      if (stream)
        g_printerr ("gpunet-streams: stream %d (%s): %s\n", k, r->labels[k],
            text);
      else
        g_printerr ("gpunet-streams: %s\n", text);
      g_free (text);
      r->failed = TRUE;
    }
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT) {
    const GstStructure *st = gst_message_get_structure (msg);

    if (stream)
      gpunet_tool_missing_note (&r->probes[k].missing, msg);
    if (stream && gst_structure_has_name (st, "gpunetclassify-stats")) {
      printf ("t=%.1fs ", (g_get_monotonic_time () - r->t0) / 1e6);
      print_stats (k, r->labels[k], st);
    }
  } else if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS) {
    r->eos = TRUE;
  }
}

/* Where the pipeline stands, for a sentence: "PAUSED (PLAYING pending)". */
static gchar *
pipeline_state_text (GstElement * pipe, gboolean * playing)
{
  GstState cur = GST_STATE_VOID_PENDING, pending = GST_STATE_VOID_PENDING;

  gst_element_get_state (pipe, &cur, &pending, 0);
  *playing = cur == GST_STATE_PLAYING;
  if (pending == GST_STATE_VOID_PENDING || pending == cur)
    return g_strdup (gst_element_state_get_name (cur));
  return g_strdup_printf ("%s (%s pending)", gst_element_state_get_name (cur),
      gst_element_state_get_name (pending));
}

/* The sentence for a stream without progress for `limit` s after `in` frames
 * entered its element and `out` left (g_free): the input's stall while the
 * pipeline plays, else what holds it (the classifier, the pipeline's state).
 * The pipeline's graph goes to GST_DEBUG_DUMP_DOT_DIR when that is set. */
static gchar *
stall_text (Run * r, gdouble limit, guint64 in, guint64 out)
{
  gboolean playing;
  gchar *state = pipeline_state_text (r->pipe, &playing), *text;

  GST_DEBUG_BIN_TO_DOT_FILE_WITH_TS (GST_BIN (r->pipe),
      GST_DEBUG_GRAPH_SHOW_ALL, "gpunet-streams-stall");
  if (!playing)
    text = g_strdup_printf ("no frame for %g s after %" G_GUINT64_FORMAT
        " frames, the pipeline stuck in %s instead of PLAYING (set "
        "GST_DEBUG_DUMP_DOT_DIR for a graph of its state, and report it)", limit,
        in, state);
  else if (in > out)
    text = g_strdup_printf ("no frame left the classifier for %g s, %"
        G_GUINT64_FORMAT " of the %" G_GUINT64_FORMAT " frames that entered "
        "are still in it (the engine made no progress); raise --stall-timeout "
        "if it is only slow", limit, in - out, in);
  else
    text = gpunet_tool_stall_text (limit, in);
  g_free (state);
  return text;
}

/* Joins the sources whose state change returned, and ends the streams whose
 * input hangs: no frame into the element within --open-timeout of the start
 * (its source not even open, or open and silent), or nothing into or out of
 * the element (frames, its EOS) for --stall-timeout or three frame durations,
 * the longer (a slow live source), until its EOS left the element: whatever
 * the pipeline's state, except that the stall clock restarts while the
 * pipeline is not PLAYING and a source is still opening (GStreamer holds the
 * pipeline in PAUSED while a source's decoder is being set up; --open-timeout
 * bounds that).  Every stream ended and no EOS from the pipeline for as long:
 * the run ends, said on stderr.  Main thread. */
static void
watch_streams (Run * r)
{
  gint64 now = g_get_monotonic_time ();
  GstMessage *msg;
  GstState cur = GST_STATE_VOID_PENDING;
  gboolean opening = FALSE, ended = TRUE;
  gint k;

  for (k = 0; k < r->n; k++) {
    StreamProbe *sp = &r->probes[k];
    GpunetToolOpenState st;

    if (sp->opener == NULL || sp->failed)
      continue;
    st = gpunet_tool_opener_state (sp->opener);
    if (st == GPUNET_TOOL_OPEN_PENDING)
      continue;
    g_clear_pointer (&sp->opener, gpunet_tool_opener_release);
    if (st == GPUNET_TOOL_OPEN_OK)
      join_source (r->pipe, k);
    else
      sp->open_failed = TRUE;
  }
  /* a failed state change posted its error before it returned: say that one */
  while (!r->failed && !r->eos
      && (msg = gst_bus_pop_filtered (r->bus, RUN_MESSAGES)) != NULL) {
    handle_message (r, msg);
    gst_message_unref (msg);
  }
  /* the open timeouts; which streams still open, which ended */
  for (k = 0; k < r->n && !r->failed && !r->eos; k++) {
    StreamProbe *sp = &r->probes[k];
    guint64 in;
    gboolean eos, done;

    if (sp->failed)
      continue;
    if (sp->open_failed) {
      fail_stream (r, k, gpunet_tool_open_failed_text ());
      continue;
    }
    g_mutex_lock (&sp->stats->lock);
    in = sp->in;
    eos = sp->eos;
    done = sp->done;
    g_mutex_unlock (&sp->stats->lock);
    if (in == 0 && !eos) {
      if (now - r->t0 > (gint64) (r->open_timeout * 1e6))
        fail_stream (r, k, sp->opener ?
            gpunet_tool_open_timeout_text (r->open_timeout) :
            gpunet_tool_no_frame_text (r->open_timeout));
      else
        opening = TRUE;
    }
    if (!sp->failed && !done)
      ended = FALSE;
  }
  if (r->failed || r->eos)
    return;
  gst_element_get_state (r->pipe, &cur, NULL, 0);
  if (opening && cur != GST_STATE_PLAYING)
    r->hold_us = now;
  if (r->stall_timeout <= 0)
    return;
  /* the stalls: streams that gave frames (or their EOS) and then nothing */
  for (k = 0; k < r->n && !r->failed && !r->eos; k++) {
    StreamProbe *sp = &r->probes[k];
    guint64 in, out;
    gint64 last;
    GstClockTime dur;
    gboolean eos, done;
    gdouble limit = r->stall_timeout;

    if (sp->failed)
      continue;
    g_mutex_lock (&sp->stats->lock);
    in = sp->in;
    out = sp->out;
    last = sp->last_us;
    dur = sp->duration;
    eos = sp->eos;
    done = sp->done;
    g_mutex_unlock (&sp->stats->lock);
    if (done || (in == 0 && !eos))
      continue;
    if (GST_CLOCK_TIME_IS_VALID (dur))
      limit = MAX (limit, 3.0 * dur / GST_SECOND);
    if (now - MAX (last, r->hold_us) > (gint64) (limit * 1e6)) {
      fail_stream (r, k, stall_text (r, limit, in, out));
      ended = FALSE;            /* its EOS is still to leave */
    }
  }
  /* every stream ended, the pipeline's EOS never came and it is not PLAYING (in
   * PLAYING its sinks may still wait on the clock for their last frames: a live
   * source's, a frame duration or more) */
  if (!ended || cur == GST_STATE_PLAYING) {
    r->ended_us = 0;
  } else if (r->ended_us == 0) {
    r->ended_us = now;
  } else if (now - r->ended_us > (gint64) (r->stall_timeout * 1e6)) {
    gboolean playing;
    gchar *state = pipeline_state_text (r->pipe, &playing);

    GST_DEBUG_BIN_TO_DOT_FILE_WITH_TS (GST_BIN (r->pipe),
        GST_DEBUG_GRAPH_SHOW_ALL, "gpunet-streams-stall");
    g_printerr ("gpunet-streams: every stream ended, but the pipeline did not "
        "for %g s (it is %s; set GST_DEBUG_DUMP_DOT_DIR for a graph of its "
        "state, and report it): the run ends here\n", r->stall_timeout, state);
    g_free (state);
    r->eos = TRUE;
  }
}

static guint64
field_u64 (const GstStructure * s, const gchar * f)
{
  guint64 v = 0;

  gst_structure_get_uint64 (s, f, &v);
  return v;
}

static gdouble
field_double (const GstStructure * s, const gchar * f)
{
  gdouble v = 0;

  gst_structure_get_double (s, f, &v);
  return v;
}

/* One line of an element's gpunetclassify-stats. */
static void
print_stats (gint k, const gchar * label, const GstStructure * s)
{
  guint depth = 0;

  gst_structure_get_uint (s, "queue-depth", &depth);
  printf ("stream %d (%s) stats: in=%" G_GUINT64_FORMAT " classified=%"
      G_GUINT64_FORMAT " carried=%" G_GUINT64_FORMAT " skipped=%"
      G_GUINT64_FORMAT " failed=%" G_GUINT64_FORMAT " dropped=%"
      G_GUINT64_FORMAT " queue=%u p50_ms=%.2f p99_ms=%.2f fps=%.1f "
      "occupancy=%.2f pass_ms=%.1f\n", k, label, field_u64 (s, "frames-in"),
      field_u64 (s, "classified"), field_u64 (s, "carried"),
      field_u64 (s, "skipped"), field_u64 (s, "failed"),
      field_u64 (s, "dropped"), depth, field_double (s, "latency-p50-ms"),
      field_double (s, "latency-p99-ms"), field_double (s, "fps"),
      field_double (s, "batch-occupancy"), field_double (s, "pass-mean-ms"));
  fflush (stdout);
}

/* --format: the system-memory formats gpunetclassify's sink pad takes */
static const gchar *const stream_formats[] = { "NV12", "I420", "RGBA", "BGRA", "RGBx",
  "BGRx", "RGB", "BGR", NULL
};

static const gchar *patterns[] = { "smpte", "ball", "snow", "checkers-8",
  "circular", "zone-plate", "gradient", "pinwheel", "spokes", "colors",
  "smpte75", "bar"
};

int
main (int argc, char **argv)
{
  gint streams = 8, frames = 24, width = 640, height = 480, batch = 1,
      in_flight = 0, threads = 0;
  guint64 timeout = 0;
  gboolean no_share = FALSE, live = FALSE;
  gint rate = 30;
  gchar *format = NULL, *model = NULL, *checkpoint = NULL, *backend = NULL;
  gchar **inputs = NULL, *when_busy = NULL, **labels;
  gint stats_ms = 0;
  gdouble open_timeout = 20.0, stall_timeout = 30.0;
  GOptionEntry entries[] = {
    {"streams", 0, 0, G_OPTION_ARG_INT, &streams, "Streams (default 8)", "N"},
    {"frames", 0, 0, G_OPTION_ARG_INT, &frames,
        "Frames per synthetic stream (default 24)", "F"},
    {"width", 0, 0, G_OPTION_ARG_INT, &width, "Width (default 640)", "W"},
    {"height", 0, 0, G_OPTION_ARG_INT, &height, "Height (default 480)", "H"},
    {"format", 0, 0, G_OPTION_ARG_STRING, &format,
        "Pixel format: NV12 (default), I420, RGBA, BGRA, RGBx, BGRx, RGB or BGR", "FMT"},
    {"model", 0, 0, G_OPTION_ARG_STRING, &model,
        "Built-in model or architecture JSON (default gpunet-0)", "NAME"},
    {"checkpoint", 0, 0, G_OPTION_ARG_FILENAME, &checkpoint,
        "Weights file (required)", "FILE"},
    {"backend", 0, 0, G_OPTION_ARG_STRING, &backend,
        "auto, cpu or cuda (default auto)", "B"},
    {"n-threads", 0, 0, G_OPTION_ARG_INT, &threads,
        "CPU threads of each engine (0 = all cores)", "T"},
    {"batch-size", 0, 0, G_OPTION_ARG_INT, &batch,
        "Most images per engine pass (default 1)", "N"},
    {"batch-timeout", 0, 0, G_OPTION_ARG_INT64, &timeout,
        "Microseconds a partial batch may wait (default 0)", "US"},
    {"max-in-flight", 0, 0, G_OPTION_ARG_INT, &in_flight,
        "Frames per element queued in the engine (default: the element's)",
        "N"},
    {"no-share", 0, 0, G_OPTION_ARG_NONE, &no_share,
        "One engine per element (share-engine=false), for comparison", NULL},
    {"live", 0, 0, G_OPTION_ARG_NONE, &live,
        "Synthetic sources at --fps frames/s on the clock (latency at camera "
          "rate)", NULL},
    {"fps", 0, 0, G_OPTION_ARG_INT, &rate,
        "Frame rate of the synthetic sources (default 30)", "F"},
    {"when-busy", 0, 0, G_OPTION_ARG_STRING, &when_busy,
        "The elements' when-busy: wait, skip or auto (default: the element's, "
          "auto: skip on live sources)", "MODE"},
    {"open-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &open_timeout,
        "Fail an input whose source does not open, or gives no frame, within "
          "SEC (default 20)", "SEC"},
    {"stall-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &stall_timeout,
        "Fail an input that gives no frame for SEC while playing, without end "
          "of stream (default 30, 0 = off)", "SEC"},
    {"stats-interval", 0, 0, G_OPTION_ARG_INT, &stats_ms,
        "Print each stream's stats every MS milliseconds while running "
          "(default 0: only at the end)", "MS"},
    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &inputs,
        "Video files or URIs (one stream each; default: synthetic)", NULL},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("[FILE-OR-URI...]");
  GError *err = NULL;
  GString *desc = g_string_new (NULL);
  GstElement *pipe;
  GstBus *bus;
  StreamProbe *probes;
  Stats stats;
  GHashTable *engines;
  gint64 t0, t1;
  gint i, n, failed = 0, bad_inputs = 0, ended = 0, start_failed = 0,
      truncated = 0;
  gint64 next_watch = 0;
  Run run = { 0 };
  struct rusage ru;

  gpunet_tool_text_init ();     /* GLib's quotes as ASCII in the C locale */
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_add_group (ctx, gst_init_get_option_group ());
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("gpunet-streams: %s (see --help)\n", err->message);
    return 2;
  }
  g_option_context_free (ctx);
  if (inputs) {
    /* a missing, empty or non-regular file is reported and left out: the other
     * streams run (a bad input used to stop them all, a missing one silently) */
    gint k = 0;

    for (i = 0; inputs[i] != NULL; i++) {
      GStatBuf st;
      const gchar *why = NULL;

      if (gst_uri_is_valid (inputs[i]))
        ;
      else if (g_stat (inputs[i], &st) != 0)
        why = g_strerror (errno);
      else if (!S_ISREG (st.st_mode))
        why = "not a regular file (a FIFO, device or directory)";
      else if (st.st_size == 0)
        why = "the file is empty";
      if (why) {
        g_printerr ("gpunet-streams: input '%s': %s; give a video file or a URI "
            "(the other streams run without it)\n", inputs[i], why);
        bad_inputs++;
        g_free (inputs[i]);
      } else {
        inputs[k++] = inputs[i];
      }
    }
    inputs[k] = NULL;
    if (k == 0) {
      g_printerr ("gpunet-streams: no input left to run\n");
      g_strfreev (inputs);
      return 1;
    }
  }
  n = inputs ? (gint) g_strv_length (inputs) : streams;
  if (checkpoint == NULL || n < 1 || n > 256 || frames < 1 || batch < 1
      || batch > 64 || rate < 1 || rate > 1000 || stats_ms < 0) {
    g_printerr ("gpunet-streams: --checkpoint is required; --streams 1..256, "
        "--frames >= 1, --batch-size 1..64, --fps 1..1000, --stats-interval "
        ">= 0\n");
    return 2;
  }
  /* the engine classifies frames of at most GPUNET_MAX_FRAME_SIDE a side (the
   * element's caps take any size): a larger frame failed at the first buffer,
   * as "Internal data stream error" where the source could not allocate it */
  if (width < 1 || height < 1 || width > GPUNET_MAX_FRAME_SIDE
      || height > GPUNET_MAX_FRAME_SIDE) {
    g_printerr ("gpunet-streams: --width %d --height %d is out of range: use "
        "--width and --height 1..%d (the largest frame side the engine "
        "classifies)\n", width, height, GPUNET_MAX_FRAME_SIDE);
    return 2;
  }
  /* the element's ranges (n-threads, max-in-flight, batch-timeout) and formats: said
   * here, rather than a GLib warning and the default used, or caps that fail as "no
   * video stream in this input" */
  if (threads < 0 || threads > 1024 || in_flight < 0 || in_flight > 256
      || (gint64) timeout < 0 || timeout > 10000000) {
    g_printerr ("gpunet-streams: --n-threads 0..1024 (0 = all cores), "
        "--max-in-flight 1..256 (0 = the element's), --batch-timeout 0..10000000 "
        "microseconds\n");
    return 2;
  }
  if (format != NULL && !g_strv_contains (stream_formats, format)) {
    gchar *list = g_strjoinv (", ", (gchar **) stream_formats);

    g_printerr ("gpunet-streams: --format '%s' is not a format gpunetclassify "
        "takes: use one of %s\n", format, list);
    g_free (list);
    return 2;
  }
  if (!(open_timeout > 0 && open_timeout <= 1e6)
      || !(stall_timeout >= 0 && stall_timeout <= 1e6)) {
    g_printerr ("gpunet-streams: --open-timeout must be more than 0 seconds and "
        "--stall-timeout 0 (no stall check) or more, both at most 1000000\n");
    return 2;
  }
  if (when_busy != NULL && strcmp (when_busy, "wait") != 0
      && strcmp (when_busy, "skip") != 0 && strcmp (when_busy, "auto") != 0) {
    g_printerr ("gpunet-streams: --when-busy '%s': use wait, skip or "
        "auto\n", when_busy);
    return 2;
  }
  /* the build tree's plugin when run from it, else the installed one */
  if (!gpunet_plugin_find_built (NULL)) {
    g_printerr ("gpunet-streams: the GStreamer element 'gpunetclassify' "
        "is not available: install the gpunet plugin or set GST_PLUGIN_PATH to "
        "its directory\n");
    return 2;
  }

  labels = g_new0 (gchar *, n + 1);
  for (i = 0; i < n; i++) {
    if (inputs)
      labels[i] = g_path_get_basename (inputs[i]);
    else
      labels[i] = g_strdup (patterns[i % G_N_ELEMENTS (patterns)]);
  }
  for (i = 0; i < n; i++) {
    if (inputs) {
      gchar *uri = gst_uri_is_valid (inputs[i]) ? g_strdup (inputs[i]) :
          gst_filename_to_uri (inputs[i], NULL);

      /* not expose-all-streams=false: decodebin then drops a video pad whose decoder
       * has not fixed its caps when the demuxer's queue fills (avdec_h264 fixes them
       * only with its first picture), and the stream runs no frame; a file's other
       * streams are exposed undecoded and stay unlinked */
      g_string_append_printf (desc, "uridecodebin name=s%d uri=\"%s\" "
          "caps=video/x-raw ! videoconvert name=v%d ! capsfilter name=f%d "
          "caps=video/x-raw,format=%s ! ", i, uri, i, i, format ? format : "NV12");
      g_free (uri);
    } else {
      g_string_append_printf (desc, "videotestsrc name=s%d num-buffers=%d "
          "pattern=%s is-live=%s ! capsfilter name=f%d caps=\"video/x-raw,"
          "format=%s,width=%d,height=%d,framerate=%d/1\" ! ", i, frames,
          patterns[i % G_N_ELEMENTS (patterns)],
          live ? "true" : "false", i, format ? format : "NV12", width, height,
          rate);
    }
    g_string_append_printf (desc, "gpunetclassify name=c%d model=\"%s\" "
        "checkpoint=\"%s\" backend=%s n-threads=%d", i,
        model ? model : "gpunet-0", checkpoint, backend ? backend : "auto",
        threads);
    /* only what was asked, so the tool also drives older elements */
    if (batch != 1)
      g_string_append_printf (desc, " batch-size=%d", batch);
    if (timeout != 0)
      g_string_append_printf (desc, " batch-timeout=%" G_GUINT64_FORMAT,
          timeout);
    if (in_flight > 0)
      g_string_append_printf (desc, " max-in-flight=%d", in_flight);
    if (no_share)
      g_string_append (desc, " share-engine=false");
    if (when_busy != NULL)
      g_string_append_printf (desc, " when-busy=%s", when_busy);
    if (stats_ms > 0)
      g_string_append_printf (desc, " stats-interval=%d", stats_ms);
    /* files and URIs: sinks that do not preroll, so the pipeline plays (and
     * picks its clock) at once, not when every stream has a frame: a live
     * source that joins later finds the clock its jitterbuffer needs, and a
     * stream that opens slowly or never holds up no other */
    g_string_append_printf (desc, " ! fakesink name=k%d sync=%s%s ", i,
        live ? "true" : "false", inputs ? " async=false" : "");
  }
  pipe = gst_parse_launch (desc->str, &err);
  if (pipe == NULL) {
    g_printerr ("gpunet-streams: cannot build the pipeline: %s\n",
        err->message);
    return 2;
  }

  g_mutex_init (&stats.lock);
  stats.latencies = g_array_new (FALSE, FALSE, sizeof (gdouble));
  stats.frames = 0;
  probes = g_new0 (StreamProbe, n);
  for (i = 0; i < n; i++) {
    gchar name[16];
    GstElement *c;
    GstPad *pad;

    g_snprintf (name, sizeof name, "c%d", i);
    c = gst_bin_get_by_name (GST_BIN (pipe), name);
    probes[i].stats = &stats;
    probes[i].entered = g_hash_table_new_full (g_direct_hash, g_direct_equal,
        NULL, g_free);
    probes[i].duration = GST_CLOCK_TIME_NONE;
    probes[i].last_end = -1.0;
    if (inputs) {
      /* opened in a thread of its own once the rest plays (watch_streams) */
      GstElement *src;

      g_snprintf (name, sizeof name, "s%d", i);
      src = gst_bin_get_by_name (GST_BIN (pipe), name);
      gst_element_set_locked_state (src, TRUE);
      g_signal_connect (src, "deep-element-added",
          G_CALLBACK (on_deep_element_added), &probes[i]);
      gst_object_unref (src);
    }
    pad = gst_element_get_static_pad (c, "sink");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_enter, &probes[i],
        NULL);
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, on_event,
        &probes[i], NULL);
    gst_object_unref (pad);
    pad = gst_element_get_static_pad (c, "src");
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, on_leave, &probes[i],
        NULL);
    gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, on_event,
        &probes[i], NULL);
    gst_object_unref (pad);
    gst_object_unref (c);
  }

  if (gst_element_set_state (pipe, GST_STATE_PAUSED) ==
      GST_STATE_CHANGE_FAILURE) {
    /* say why: the error is on the bus (a model that does not load, a source
     * that cannot open); then no counts, as nothing ran */
    GstBus *b = gst_element_get_bus (pipe);
    GstMessage *msg = gst_bus_pop_filtered (b, GST_MESSAGE_ERROR);

    if (msg) {
      gint k = stream_index (GST_MESSAGE_SRC (msg));
      gchar *text = stream_error_text (msg, k >= 0 && k < n ? &probes[k] : NULL);

      if (k >= 0 && k < n && !is_classifier (GST_MESSAGE_SRC (msg)))
        g_printerr ("gpunet-streams: cannot start: stream %d (%s): %s\n", k,
            labels[k], text);
      else
        g_printerr ("gpunet-streams: cannot start: %s\n", text);
      g_free (text);
      gst_message_unref (msg);
    } else {
      g_printerr ("gpunet-streams: cannot start the pipeline\n");
    }
    gst_object_unref (b);
    failed = 1;
    start_failed = 1;
  }
  engines = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (i = 0; i < n && !failed; i++) {
    gchar name[16];
    GstElement *c;
    guint id = 0;

    g_snprintf (name, sizeof name, "c%d", i);
    c = gst_bin_get_by_name (GST_BIN (pipe), name);
    if (g_object_class_find_property (G_OBJECT_GET_CLASS (c), "engine-id")) {
      g_object_get (c, "engine-id", &id, NULL);
      g_hash_table_add (engines, GUINT_TO_POINTER (id));
    } else {
      /* an element without engines: one session each */
      g_hash_table_add (engines, GUINT_TO_POINTER (i + 1000000));
    }
    gst_object_unref (c);
  }

  bus = gst_element_get_bus (pipe);
  run.pipe = pipe;
  run.bus = bus;
  run.probes = probes;
  run.labels = labels;
  run.n = n;
  run.open_timeout = open_timeout;
  run.stall_timeout = stall_timeout;
  run.t0 = run.hold_us = t0 = g_get_monotonic_time ();
  run.failed = failed;
  if (!failed) {
    gst_element_set_state (pipe, GST_STATE_PLAYING);
    /* each file's or URI's source, its state locked, opens in a thread of its
     * own, so that one blocked in open() holds up no other (watch_streams) */
    for (i = 0; inputs && i < n; i++) {
      gchar name[16];
      GstElement *e;

      g_snprintf (name, sizeof name, "s%d", i);
      e = gst_bin_get_by_name (GST_BIN (pipe), name);
      probes[i].opener = gpunet_tool_opener_start (e, GST_STATE_PAUSED,
          "gpunet-streams-open");
      gst_object_unref (e);
    }
  }
  /* every stream's EOS: fakesinks post none of their own, the pipeline's comes
   * once all sinks have one */
  while (!run.failed && !run.eos) {
    GstMessage *msg = gst_bus_timed_pop_filtered (bus, 50 * GST_MSECOND,
        RUN_MESSAGES);

    if (msg) {
      handle_message (&run, msg);
      gst_message_unref (msg);
    }
    if (!run.failed && !run.eos && (msg == NULL
            || g_get_monotonic_time () >= next_watch)) {
      watch_streams (&run);
      next_watch = g_get_monotonic_time () + 50 * G_TIME_SPAN_MILLISECOND;
    }
  }
  t1 = g_get_monotonic_time ();
  failed = run.failed;
  ended = run.ended;
  /* a source whose state change had not returned when the run ended (its data
   * can flow to the end before it does) stops with the pipeline once it returned,
   * or is left behind; one never opened (the run could not start) with it */
  for (i = 0; i < n; i++) {
    if (probes[i].opener == NULL) {
      if (start_failed && inputs)
        join_source (pipe, i);
      continue;
    }
    if (gpunet_tool_opener_wait (probes[i].opener, t0 + (gint64) (open_timeout
                * 1e6), NULL) == GPUNET_TOOL_OPEN_PENDING) {
      detach_source (pipe, &probes[i], i);
    } else {
      g_clear_pointer (&probes[i].opener, gpunet_tool_opener_release);
      join_source (pipe, i);
    }
  }
  /* a file cut short ends without an error: its frames end before its
   * container's duration (as gpunet-tag finds it) */
  for (i = 0; inputs && i < n && !failed; i++) {
    check_truncated (pipe, &probes[i], i, labels[i]);
    if (probes[i].truncated)
      truncated++;
  }
  /* the stats stay readable once stopped */
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  if (start_failed)
    goto out;

  for (i = 0; i < n; i++) {
    printf ("stream %d: %" G_GUINT64_FORMAT " frames", i, probes[i].out);
    if (probes[i].failed)
      printf (" (its input failed, see above)");
    else if (probes[i].truncated && probes[i].expected > probes[i].out)
      printf (" (of %" G_GUINT64_FORMAT ": its input is truncated, see above)",
          probes[i].expected);
    else if (probes[i].truncated)
      printf (" (its input is truncated, see above)");
    printf ("\n");
  }
  for (i = 0; i < n && !failed; i++) {
    gchar name[16];
    GstElement *c;
    GstStructure *st = NULL;

    g_snprintf (name, sizeof name, "c%d", i);
    c = gst_bin_get_by_name (GST_BIN (pipe), name);
    if (g_object_class_find_property (G_OBJECT_GET_CLASS (c), "stats"))
      g_object_get (c, "stats", &st, NULL);
    if (st != NULL) {
      print_stats (i, labels[i], st);
      gst_structure_free (st);
    }
    gst_object_unref (c);
  }
  {
    GArray *l = stats.latencies;
    gdouble p50 = 0, p99 = 0, secs = (t1 - t0) / 1e6;

    if (l->len > 0) {
      qsort (l->data, l->len, sizeof (gdouble), compare_double);
      p50 = g_array_index (l, gdouble, (l->len - 1) / 2);
      p99 = g_array_index (l, gdouble, (guint) ((l->len - 1) * 0.99));
    }
    getrusage (RUSAGE_SELF, &ru);
    printf ("streams=%d frames=%" G_GUINT64_FORMAT " fps=%.1f p50_ms=%.2f "
        "p99_ms=%.2f engines=%u rss_mb=%.0f\n", n, stats.frames,
        secs > 0 ? stats.frames / secs : 0.0, p50, p99,
        g_hash_table_size (engines), ru.ru_maxrss / 1024.0);
  }
out:
  for (i = 0; i < n; i++) {
    g_hash_table_unref (probes[i].entered);
    gpunet_tool_missing_clear (&probes[i].missing);
  }
  g_free (probes);
  g_hash_table_unref (engines);
  g_array_unref (stats.latencies);
  gst_object_unref (pipe);
  g_string_free (desc, TRUE);
  g_strfreev (labels);
  if (start_failed)
    return 2;
  return failed || ended || bad_inputs || truncated ? 1 : 0;
}
