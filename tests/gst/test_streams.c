/* test_streams.c: many gpunetclassify elements on one shared engine (CPU backend,
 * tiny-a fixture): 4 and 8 streams of different patterns, sizes and formats give
 * each stream the records it gets alone, on one engine; serialized events keep
 * their place between asynchronously pushed buffers; one stream failing leaves the
 * others running; a model swap switches at a frame boundary and a failed swap keeps
 * the old model; smoothing and label changes on a scripted sequence; state cycles
 * with 4 streams leak nothing (the leaks tracer). */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "gpunet-meta.h"

#define TINY_A_JSON "fixtures/tiny-a.json"
#define TINY_A_CKPT "fixtures/tiny-a/tiny-a.pth.tar"
#define TINY_D_JSON "fixtures/tiny-d.json"
#define TINY_D_CKPT "fixtures/tiny-d/tiny-d.pth.tar"

static gchar *
data_path (const gchar * rel)
{
  const gchar *d = g_getenv ("GPUNET_TEST_DATA");

  return g_build_filename (d ? d : "tests/data", rel, NULL);
}

/* "model|id:score,...|inferred" of a buffer's frame record (%.9g: exact bits). */
static gchar *
record_string (GstBuffer * buf)
{
  const GstStructure *s = gpunet_meta_get_structure (gpunet_meta_get (buf));
  GString *str = g_string_new (NULL);
  gboolean inferred = FALSE;
  guint i;

  fail_unless (s != NULL, "a buffer left without its record");
  g_string_append_printf (str, "%s|", gst_structure_get_string (s, "model"));
  for (i = 0; i < gpunet_meta_n_results (s); i++)
    g_string_append_printf (str, "%d:%.9g,", gpunet_meta_nth_id (s, i),
        gpunet_meta_nth_score (s, i));
  gst_structure_get_boolean (s, "inferred", &inferred);
  g_string_append_printf (str, "|%d", inferred);
  return g_string_free (str, FALSE);
}

typedef struct
{
  const gchar *src;             /* videotestsrc properties and caps */
} StreamSpec;

static const StreamSpec specs[8] = {
  {"pattern=smpte ! video/x-raw,format=NV12,width=64,height=48"},
  {"pattern=ball ! video/x-raw,format=RGBA,width=40,height=30"},
  {"pattern=snow ! video/x-raw,format=I420,width=52,height=36"},
  {"pattern=checkers-8 ! video/x-raw,format=BGRx,width=64,height=64"},
  {"pattern=circular ! video/x-raw,format=RGB,width=30,height=44"},
  {"pattern=zone-plate ! video/x-raw,format=NV12,width=48,height=32"},
  {"pattern=gradient ! video/x-raw,format=RGBx,width=36,height=36"},
  {"pattern=pinwheel ! video/x-raw,format=I420,width=64,height=40"},
};

/* Runs streams `first`..`first+n-1` of `specs` (frames each) in one pipeline with
 * `props` on every element; returns per stream the list of record strings, and
 * the engine-id of each element in ids (n entries). */
static GPtrArray **
run_streams (guint first, guint n, guint frames, const gchar * props,
    guint * ids)
{
  gchar *json = data_path (TINY_A_JSON), *ckpt = data_path (TINY_A_CKPT);
  GString *desc = g_string_new (NULL);
  GPtrArray **out = g_new0 (GPtrArray *, n);
  GstElement *pipe;
  GstBus *bus;
  GstMessage *msg;
  guint i, eos = 0;

  for (i = 0; i < n; i++)
    g_string_append_printf (desc, "videotestsrc num-buffers=%u %s ! "
        "gpunetclassify name=c%u model=\"%s\" checkpoint=\"%s\" n-threads=1 %s "
        "! appsink name=s%u sync=false ", frames, specs[first + i].src, i,
        json, ckpt, props, i);
  pipe = gst_parse_launch (desc->str, NULL);
  fail_unless (pipe != NULL);
  fail_unless (gst_element_set_state (pipe, GST_STATE_PAUSED) !=
      GST_STATE_CHANGE_FAILURE);
  for (i = 0; i < n; i++) {
    gchar name[16];
    GstElement *c;

    g_snprintf (name, sizeof name, "c%u", i);
    c = gst_bin_get_by_name (GST_BIN (pipe), name);
    g_object_get (c, "engine-id", &ids[i], NULL);
    gst_object_unref (c);
    out[i] = g_ptr_array_new_with_free_func (g_free);
  }
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  /* each appsink is drained in turn until all reached EOS */
  while (eos < n) {
    eos = 0;
    for (i = 0; i < n; i++) {
      gchar name[16];
      GstElement *s;
      GstSample *sample;

      g_snprintf (name, sizeof name, "s%u", i);
      s = gst_bin_get_by_name (GST_BIN (pipe), name);
      while ((sample = gst_app_sink_try_pull_sample (GST_APP_SINK (s),
                  GST_MSECOND)) != NULL) {
        g_ptr_array_add (out[i], record_string (gst_sample_get_buffer
                (sample)));
        gst_sample_unref (sample);
      }
      eos += gst_app_sink_is_eos (GST_APP_SINK (s));
      gst_object_unref (s);
    }
    bus = gst_element_get_bus (pipe);
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    gst_object_unref (bus);
    fail_unless (msg == NULL, "the pipeline failed");
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (pipe);
  g_string_free (desc, TRUE);
  g_free (json);
  g_free (ckpt);
  return out;
}

static void
free_runs (GPtrArray ** r, guint n)
{
  guint i;

  for (i = 0; i < n; i++)
    g_ptr_array_unref (r[i]);
  g_free (r);
}

/* n streams sharing one engine (batched) against each stream alone. */
static void
check_shared_equals_alone (guint n, guint frames, const gchar * props)
{
  guint ids[8], alone_id, i, j;
  GPtrArray **shared = run_streams (0, n, frames, props, ids);

  for (i = 0; i < n; i++) {
    GPtrArray **alone = run_streams (i, 1, frames, props, &alone_id);

    fail_unless_equals_int (ids[i], ids[0]);    /* one engine for all */
    fail_unless_equals_int (shared[i]->len, frames);
    fail_unless_equals_int (alone[0]->len, frames);
    for (j = 0; j < frames; j++)
      fail_unless_equals_string (g_ptr_array_index (shared[i], j),
          g_ptr_array_index (alone[0], j));
    free_runs (alone, 1);
  }
  free_runs (shared, n);
}

GST_START_TEST (test_four_streams)
{
  check_shared_equals_alone (4, 12, "batch-size=4 batch-timeout=5000");
}

GST_END_TEST;

GST_START_TEST (test_eight_streams)
{
  check_shared_equals_alone (8, 8, "batch-size=8 batch-timeout=2000 "
      "max-in-flight=2 interval=1");
}

GST_END_TEST;

/* Without sharing every element has an engine of its own. */
GST_START_TEST (test_no_share)
{
  guint ids[3];
  GPtrArray **r = run_streams (0, 3, 2, "share-engine=false", ids);

  fail_unless (ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
  free_runs (r, 3);
}

GST_END_TEST;

/* device-id is a property (gst-inspect shows it), -1 by default. */
GST_START_TEST (test_device_id_property)
{
  GstElement *el = gst_element_factory_make ("gpunetclassify", NULL);
  GParamSpec *p;
  gint id = 0;

  fail_unless (el != NULL);
  p = g_object_class_find_property (G_OBJECT_GET_CLASS (el), "device-id");
  fail_unless (p != NULL && G_PARAM_SPEC_VALUE_TYPE (p) == G_TYPE_INT);
  g_object_get (el, "device-id", &id, NULL);
  fail_unless_equals_int (id, -1);
  g_object_set (el, "device-id", 1, NULL);
  g_object_get (el, "device-id", &id, NULL);
  fail_unless_equals_int (id, 1);
  gst_object_unref (el);
}

GST_END_TEST;

/* Buffers and serialized events leave in the order they came, though buffers
 * wait for the engine (a 30 ms batch timeout) and events do not.  The log is written
 * by the src task and read by the test: under its own lock. */
typedef struct
{
  GMutex lock;
  GString *str;
} EventLog;

static GstPadProbeReturn
log_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  EventLog *log = user;
  gchar c = 0;

  (void) pad;
  if (info->type & GST_PAD_PROBE_TYPE_BUFFER)
    c = 'B';
  else if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) ==
      GST_EVENT_CUSTOM_DOWNSTREAM)
    c = 'C';
  else if (GST_EVENT_TYPE (GST_PAD_PROBE_INFO_EVENT (info)) == GST_EVENT_EOS)
    c = 'E';
  if (c != 0) {
    g_mutex_lock (&log->lock);
    g_string_append_c (log->str, c);
    g_mutex_unlock (&log->lock);
  }
  return GST_PAD_PROBE_OK;
}

/* the log so far (free it) */
static gchar *
log_copy (EventLog * log)
{
  gchar *s;

  g_mutex_lock (&log->lock);
  s = g_strdup (log->str->str);
  g_mutex_unlock (&log->lock);
  return s;
}

GST_START_TEST (test_event_order)
{
  gchar *json = data_path (TINY_A_JSON), *ckpt = data_path (TINY_A_CKPT);
  gchar *desc = g_strdup_printf ("gpunetclassify model=\"%s\" checkpoint=\"%s\" "
      "batch-size=4 batch-timeout=30000", json, ckpt);
  const gchar *caps = "video/x-raw,format=RGB,width=32,height=24,framerate=30/1";
  GstHarness *h = gst_harness_new_parse (desc);
  EventLog log_, *log = &log_;
  gchar *seen = NULL;
  GstPad *src;
  guint i;

  g_mutex_init (&log->lock);
  log->str = g_string_new (NULL);

  src = gst_element_get_static_pad (h->element, "src");
  fail_unless (src != NULL);
  gst_object_unref (src);
  /* the harness wraps the element: probe its src pad */
  {
    GstElement *el = gst_harness_find_element (h, "gpunetclassify");

    src = gst_element_get_static_pad (el, "src");
    gst_pad_add_probe (src, GST_PAD_PROBE_TYPE_BUFFER |
        GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM, log_probe, log, NULL);
    gst_object_unref (src);
    gst_object_unref (el);
  }
  gst_harness_set_src_caps_str (h, caps);
  for (i = 0; i < 6; i++) {
    GstBuffer *b = gst_buffer_new_allocate (NULL, 32 * 24 * 3, NULL);

    gst_buffer_memset (b, 0, (guint8) (i * 40), 32 * 24 * 3);
    GST_BUFFER_PTS (b) = i * GST_SECOND / 30;
    fail_unless_equals_int (gst_harness_push (h, b), GST_FLOW_OK);
    if (i == 1 || i == 4)
      fail_unless (gst_harness_push_event (h,
              gst_event_new_custom (GST_EVENT_CUSTOM_DOWNSTREAM,
                  gst_structure_new_empty ("marker"))));
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  for (i = 0; i < 6; i++)
    gst_buffer_unref (gst_harness_pull (h));
  /* the task pushes EOS after the last buffer: wait for it */
  for (i = 0; i < 500; i++) {
    g_free (seen);
    seen = log_copy (log);
    if (strchr (seen, 'E') != NULL)
      break;
    g_usleep (2000);
  }
  fail_unless_equals_string (seen, "BBCBBBCBE");
  g_free (seen);
  gst_harness_teardown (h);
  g_string_free (log->str, TRUE);
  g_mutex_clear (&log->lock);
  g_free (desc);
  g_free (json);
  g_free (ckpt);
}

GST_END_TEST;

/* Two streams on one engine; the second gets frames shorter than its caps say:
 * it fails with an error, the first runs to its end with every record. */
GST_START_TEST (test_one_stream_fails)
{
  gchar *json = data_path (TINY_A_JSON), *ckpt = data_path (TINY_A_CKPT);
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=30 ! "
      "video/x-raw,format=RGB,width=32,height=24,framerate=30/1 ! "
      "gpunetclassify name=a "
      "model=\"%s\" checkpoint=\"%s\" ! appsink name=sa sync=true "
      "appsrc name=bad format=time caps=video/x-raw,format=RGB,width=32,"
      "height=24,framerate=30/1 ! gpunetclassify name=b model=\"%s\" "
      "checkpoint=\"%s\" ! fakesink sync=false async=false", json, ckpt, json,
      ckpt);
  GstElement *pipe = gst_parse_launch (desc, NULL);
  GstElement *bad = gst_bin_get_by_name (GST_BIN (pipe), "bad");
  GstElement *sa = gst_bin_get_by_name (GST_BIN (pipe), "sa");
  GstBus *bus = gst_element_get_bus (pipe);
  GstMessage *msg;
  GstSample *sample;
  guint got = 0, ida = 0, idb = 1;
  GstElement *a, *b;

  /* an error during an asynchronous state change fails the whole change: the
   * bad frame comes once the pipeline plays */
  fail_unless_equals_int (gst_element_set_state (pipe, GST_STATE_PLAYING),
      GST_STATE_CHANGE_ASYNC);
  fail_unless_equals_int (gst_element_get_state (pipe, NULL, NULL,
          10 * GST_SECOND), GST_STATE_CHANGE_SUCCESS);
  /* 5 bytes: not a 32x24 RGB frame */
  gst_app_src_push_buffer (GST_APP_SRC (bad), gst_buffer_new_allocate (NULL, 5,
          NULL));
  msg = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "the bad stream posted no error");
  fail_unless_equals_string (GST_OBJECT_NAME (GST_MESSAGE_SRC (msg)), "b");
  {
    GError *e = NULL;

    /* what is wrong, not only that the frame could not be mapped */
    gst_message_parse_error (msg, &e, NULL);
    fail_unless (strstr (e->message, "holds 5 bytes, but a 32x24 RGB frame of "
            "the negotiated caps needs 2304") != NULL, "%s", e->message);
    g_clear_error (&e);
  }
  gst_message_unref (msg);
  while ((sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sa),
              5 * GST_SECOND)) != NULL) {
    gchar *r = record_string (gst_sample_get_buffer (sample));

    g_free (r);
    gst_sample_unref (sample);
    got++;
  }
  fail_unless_equals_int (got, 30);
  fail_unless (gst_app_sink_is_eos (GST_APP_SINK (sa)));
  a = gst_bin_get_by_name (GST_BIN (pipe), "a");
  b = gst_bin_get_by_name (GST_BIN (pipe), "b");
  g_object_get (a, "engine-id", &ida, NULL);
  g_object_get (b, "engine-id", &idb, NULL);
  fail_unless_equals_int (ida, idb);
  gst_object_unref (a);
  gst_object_unref (b);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (bad);
  gst_object_unref (sa);
  gst_object_unref (pipe);
  g_free (desc);
  g_free (json);
  g_free (ckpt);
}

GST_END_TEST;

/* Pulls buffers until one has a record of `model`; returns how many were
 * pulled before it, -1 when none within `max`. */
static gint
frames_until_model (GstHarness * h, const gchar * caps, const gchar * model,
    guint max, GstClockTime * pts)
{
  guint i;

  for (i = 0; i < max; i++) {
    GstBuffer *in = gst_harness_create_buffer (h, 32 * 24 * 3), *out;
    gchar *r;

    (void) caps;
    GST_BUFFER_PTS (in) = i * GST_MSECOND;
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
    out = gst_harness_pull (h);
    r = record_string (out);
    if (g_str_has_prefix (r, model)) {
      *pts = GST_BUFFER_PTS (out);
      g_free (r);
      gst_buffer_unref (out);
      return (gint) i;
    }
    g_free (r);
    gst_buffer_unref (out);
    g_usleep (5000);
  }
  return -1;
}

GST_START_TEST (test_model_swap)
{
  gchar *json = data_path (TINY_A_JSON), *ckpt = data_path (TINY_A_CKPT);
  gchar *djson = data_path (TINY_D_JSON), *dckpt = data_path (TINY_D_CKPT);
  gchar *desc = g_strdup_printf ("gpunetclassify model=\"%s\" checkpoint=\"%s\"",
      json, ckpt);
  const gchar *caps = "video/x-raw,format=RGB,width=32,height=24";
  GstHarness *h = gst_harness_new_parse (desc);
  GstElement *el = gst_harness_find_element (h, "gpunetclassify");
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GstClockTime pts = GST_CLOCK_TIME_NONE;
  const GstStructure *s;
  guint64 msg_pts = 0;
  gint n;

  gst_element_set_bus (el, bus);
  gst_harness_set_src_caps_str (h, caps);
  n = frames_until_model (h, caps, "tiny-a|", 5, &pts);
  fail_unless_equals_int (n, 0);

  /* a swap to a file that does not exist: a warning, tiny-a keeps running */
  g_object_set (el, "checkpoint", "/nonexistent/w.pth.tar", NULL);
  msg = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning for the failed swap");
  {
    GError *err = NULL;

    gst_message_parse_warning (msg, &err, NULL);
    fail_unless (strstr (err->message, "/nonexistent/w.pth.tar") != NULL,
        "%s", err->message);
    fail_unless (strstr (err->message, "keeps running") != NULL);
    g_clear_error (&err);
  }
  gst_message_unref (msg);
  n = frames_until_model (h, caps, "tiny-a|", 3, &pts);
  fail_unless_equals_int (n, 0);

  /* the swap: frames go on being classified, the first of tiny-d is announced */
  g_object_set (el, "model", djson, "checkpoint", dckpt, NULL);
  n = frames_until_model (h, caps, "tiny-d|", 400, &pts);
  fail_unless (n >= 0, "never switched to tiny-d");
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)) != NULL) {
    s = gst_message_get_structure (msg);
    if (gst_structure_has_name (s, "gpunetclassify-model-changed")) {
      fail_unless (gst_structure_get_uint64 (s, "pts", &msg_pts));
      fail_unless_equals_string (gst_structure_get_string (s, "model"),
          "tiny-d");
      fail_unless_equals_string (gst_structure_get_string (s, "old-model"),
          "tiny-a");
      gst_message_unref (msg);
      break;
    }
    gst_message_unref (msg);
  }
  fail_unless (msg != NULL, "no model-changed message");
  fail_unless_equals_uint64 (msg_pts, pts);
  fail_unless ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING)) == NULL);

  gst_element_set_bus (el, NULL);
  gst_object_unref (bus);
  gst_object_unref (el);
  gst_harness_teardown (h);
  g_free (desc);
  g_free (json);
  g_free (ckpt);
  g_free (djson);
  g_free (dckpt);
}

GST_END_TEST;

/* The scores of all 16 classes of a frame record, by id. */
static void
all_scores (GstBuffer * buf, gdouble * p)
{
  const GstStructure *s = gpunet_meta_get_structure (gpunet_meta_get (buf));
  guint i;

  memset (p, 0, sizeof (gdouble) * 16);
  for (i = 0; i < gpunet_meta_n_results (s); i++)
    p[gpunet_meta_nth_id (s, i)] = gpunet_meta_nth_score (s, i);
}

/* Frames of two contents A and B: A A A B A A B B B B.  Unsmoothed, the
 * records hold each frame's own probabilities and label-hold=3 announces A at
 * frame 3 and B at frame 9 only.  With smoothing=0.5 every record is the moving
 * average of the unsmoothed ones, and raw-label-id is the frame's own top-1. */
static GstHarness *
smoothing_harness (const gchar * props)
{
  gchar *json = data_path (TINY_A_JSON), *ckpt = data_path (TINY_A_CKPT);
  gchar *desc = g_strdup_printf ("gpunetclassify model=\"%s\" checkpoint=\"%s\" "
      "top-k=16 %s", json, ckpt, props);
  GstHarness *h = gst_harness_new_parse (desc);

  gst_harness_set_src_caps_str (h,
      "video/x-raw,format=RGB,width=32,height=24");
  g_free (desc);
  g_free (json);
  g_free (ckpt);
  return h;
}

static GstBuffer *
scripted (GstHarness * h, gboolean b, guint i)
{
  GstBuffer *buf = gst_harness_create_buffer (h, 32 * 24 * 3);
  GstMapInfo map;
  guint j;

  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  for (j = 0; j < map.size; j++)
    map.data[j] = b ? (guint8) ((j * 37) ^ (j >> 3)) : (guint8) (j % 3 == 0 ?
        230 : 20);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_PTS (buf) = i * GST_MSECOND;
  return buf;
}

GST_START_TEST (test_smoothing_and_label_changes)
{
  static const gboolean seq[10] = { 0, 0, 0, 1, 0, 0, 1, 1, 1, 1 };
  GstHarness *raw_h = smoothing_harness ("label-hold=3");
  GstHarness *sm_h = smoothing_harness ("smoothing=0.5");
  GstElement *el = gst_harness_find_element (raw_h, "gpunetclassify");
  GstBus *bus = gst_bus_new ();
  gdouble raw[10][16], avg[16] = { 0 }, sm[16];
  gint raw_top[10], top_a, top_b, changes = 0, change_frame[4];
  GstMessage *msg;
  guint i, c;

  gst_element_set_bus (el, bus);
  for (i = 0; i < 10; i++) {
    GstBuffer *out;
    const GstStructure *s;
    gint raw_id = -1;

    fail_unless_equals_int (gst_harness_push (raw_h, scripted (raw_h, seq[i],
                i)), GST_FLOW_OK);
    out = gst_harness_pull (raw_h);
    all_scores (out, raw[i]);
    raw_top[i] = gpunet_meta_label_id (gpunet_meta_get_structure
        (gpunet_meta_get (out)));
    gst_buffer_unref (out);

    fail_unless_equals_int (gst_harness_push (sm_h, scripted (sm_h, seq[i],
                i)), GST_FLOW_OK);
    out = gst_harness_pull (sm_h);
    all_scores (out, sm);
    s = gpunet_meta_get_structure (gpunet_meta_get (out));
    fail_unless (gst_structure_get_int (s, "raw-label-id", &raw_id));
    fail_unless_equals_int (raw_id, raw_top[i]);
    for (c = 0; c < 16; c++) {
      avg[c] = i == 0 ? raw[i][c] : 0.5 * avg[c] + 0.5 * raw[i][c];
      fail_unless (fabs (sm[c] - avg[c]) < 1e-6, "frame %u class %u: %g, "
          "the average is %g", i, c, sm[c], avg[c]);
    }
    gst_buffer_unref (out);
  }
  top_a = raw_top[0];
  top_b = raw_top[3];
  fail_unless (top_a != top_b, "the scripted frames A and B have one label");
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)) != NULL) {
    const GstStructure *s = gst_message_get_structure (msg);
    guint64 pts;
    gint id;

    if (gst_structure_has_name (s, "gpunetclassify-label-changed")) {
      fail_unless (changes < 4);
      gst_structure_get_uint64 (s, "pts", &pts);
      gst_structure_get_int (s, "new-label-id", &id);
      change_frame[changes++] = (gint) (pts / GST_MSECOND);
      fail_unless_equals_int (id, changes == 1 ? top_a : top_b);
    }
    gst_message_unref (msg);
  }
  fail_unless_equals_int (changes, 2);
  fail_unless_equals_int (change_frame[0], 2);
  fail_unless_equals_int (change_frame[1], 8);
  gst_element_set_bus (el, NULL);
  gst_object_unref (bus);
  gst_object_unref (el);
  gst_harness_teardown (raw_h);
  gst_harness_teardown (sm_h);
}

GST_END_TEST;

/* 50 cycles to PLAYING and back with 4 streams on one engine, frames in flight
 * when they stop; the leaks tracer fails the test on a leaked object. */
GST_START_TEST (test_state_cycles_four_streams)
{
  gchar *json = data_path (TINY_A_JSON), *ckpt = data_path (TINY_A_CKPT);
  GString *desc = g_string_new (NULL);
  GstElement *pipe;
  guint i;

  for (i = 0; i < 4; i++)
    g_string_append_printf (desc, "videotestsrc is-live=%s %s ! "
        "gpunetclassify model=\"%s\" checkpoint=\"%s\" n-threads=1 "
        "batch-size=4 batch-timeout=3000 ! fakesink sync=false ",
        i % 2 ? "true" : "false", specs[i].src, json, ckpt);
  pipe = gst_parse_launch (desc->str, NULL);
  fail_unless (pipe != NULL);
  for (i = 0; i < 50; i++) {
    fail_unless (gst_element_set_state (pipe, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE);
    gst_element_get_state (pipe, NULL, NULL, GST_SECOND);
    g_usleep (2000 * (i % 5));
    fail_unless_equals_int (gst_element_set_state (pipe, i % 3 ? GST_STATE_NULL
            : GST_STATE_READY), GST_STATE_CHANGE_SUCCESS);
  }
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (pipe);
  g_string_free (desc, TRUE);
  g_free (json);
  g_free (ckpt);
}

GST_END_TEST;


/* A checkpoint whose classifier bias is NaN (written into a safetensors copy of
 * tiny-a made with gpunet-convert): every record is marked finite=false, in the
 * meta and the JSON line, and a warning names the frame. */
static gchar *
nan_checkpoint (const gchar * dir)
{
  const gchar *convert = g_getenv ("GPUNET_CONVERT");
  gchar *ckpt = data_path (TINY_A_CKPT);
  gchar *out = g_build_filename (dir, "nan.safetensors", NULL);
  gchar *argv[] = { (gchar *) convert, (gchar *) "--checkpoint", ckpt,
    (gchar *) "--output", out, NULL
  };
  gchar *data = NULL, *bias, *offs;
  gsize len = 0;
  guint64 hlen, a, b, i;
  gint status = 1;

  fail_unless (convert != NULL, "GPUNET_CONVERT is not set");
  fail_unless (g_spawn_sync (NULL, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
          NULL, NULL, NULL, &status, NULL) && status == 0);
  fail_unless (g_file_get_contents (out, &data, &len, NULL));
  memcpy (&hlen, data, 8);
  /* tiny-a's classifier (the head's linear layer) */
  bias = g_strstr_len (data + 8, hlen, "layer17.net.6.bias");
  fail_unless (bias != NULL, "no classifier bias in the safetensors header");
  offs = strstr (bias, "data_offsets");
  fail_unless (offs != NULL && sscanf (strchr (offs, '[') + 1,
          "%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT, &a, &b) == 2);
  for (i = 8 + hlen + a; i + 4 <= 8 + hlen + b; i += 4) {
    const guint32 nan_bits = 0x7fc00000;

    memcpy (data + i, &nan_bits, 4);
  }
  /* the data no longer has the CRC-32 the header records: rename that field, so the
   * file reads as one of another writer's (no CRC), not as a damaged one */
  offs = g_strstr_len (data + 8, hlen, "\"gpunet_data_crc32\"");
  fail_unless (offs != NULL, "no gpunet_data_crc32 in the safetensors header");
  offs[1] = 'X';
  fail_unless (g_file_set_contents (out, data, len, NULL));
  g_free (data);
  g_free (ckpt);
  return out;
}

GST_START_TEST (test_non_finite)
{
  gchar *dir = g_dir_make_tmp ("gpunet-nan-XXXXXX", NULL);
  gchar *ckpt = nan_checkpoint (dir), *json = data_path (TINY_A_JSON);
  gchar *jsonl = g_build_filename (dir, "out.jsonl", NULL);
  gchar *desc = g_strdup_printf ("gpunetclassify model=\"%s\" checkpoint=\"%s\" "
      "json-output=\"%s\" smoothing=0.5", json, ckpt, jsonl);
  GstHarness *h = gst_harness_new_parse (desc);
  GstElement *el = gst_harness_find_element (h, "gpunetclassify");
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;
  gchar *lines = NULL;
  GstBuffer *out;
  const GstStructure *s;
  guint i;

  gst_element_set_bus (el, bus);
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGB,width=32,height=24");
  for (i = 0; i < 2; i++) {
    fail_unless_equals_int (gst_harness_push (h, gst_harness_create_buffer (h,
                32 * 24 * 3)), GST_FLOW_OK);
    out = gst_harness_pull (h);
    s = gpunet_meta_get_structure (gpunet_meta_get (out));
    fail_unless (s != NULL);
    fail_if (gpunet_meta_finite (s));
    gst_buffer_unref (out);
  }
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning for NaN outputs");
  gst_message_parse_warning (msg, &err, NULL);
  fail_unless (strstr (err->message, "Frame 0") != NULL, "%s", err->message);
  fail_unless (strstr (err->message, "finite=false") != NULL);
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_bus (el, NULL);
  gst_object_unref (bus);
  gst_object_unref (el);
  gst_harness_teardown (h);
  fail_unless (g_file_get_contents (jsonl, &lines, NULL, NULL));
  fail_unless (strstr (lines, "\"finite\":false") != NULL, "%s", lines);
  fail_unless (strstr (lines, "NaN") == NULL && strstr (lines, "nan") == NULL);
  g_free (lines);
  g_unlink (jsonl);
  g_unlink (ckpt);
  g_rmdir (dir);
  g_free (jsonl);
  g_free (desc);
  g_free (json);
  g_free (ckpt);
  g_free (dir);
}

GST_END_TEST;

/* Opens `fifo` for writing (and closes it) from a helper thread once `after_us` have
 * passed, so that a reader blocked in open() comes back and the test can fail instead
 * of hanging; `fired` says that it had to. */
typedef struct
{
  const gchar *fifo;
  gint64 deadline;
  volatile gint stop, fired;
} FifoRescue;

/* the deadline is set by the test while the thread reads it: an atomic */
static void
rescue_set_deadline (FifoRescue * r, gint64 deadline)
{
  __atomic_store_n (&r->deadline, deadline, __ATOMIC_RELAXED);
}

static gpointer
fifo_rescue_thread (gpointer data)
{
  FifoRescue *r = data;

  while (!g_atomic_int_get (&r->stop)) {
    gint64 deadline = __atomic_load_n (&r->deadline, __ATOMIC_RELAXED);

    if (g_get_monotonic_time () >= deadline) {
      int fd = open (r->fifo, O_WRONLY | O_NONBLOCK);

      if (fd >= 0) {            /* a reader was blocked: let it go */
        g_atomic_int_set (&r->fired, 1);
        close (fd);
      }
    }
    g_usleep (20000);
  }
  return NULL;
}

/* Issue 43, point 1: a FIFO given as checkpoint or model fails the start at once
 * with a sentence, and a swap to one while playing leaves the old model running
 * (both used to block in open(): at start, and in set_state(NULL) after a swap). */
GST_START_TEST (test_fifo_weights)
{
  gchar *json = data_path (TINY_A_JSON), *ckpt = data_path (TINY_A_CKPT);
  gchar *dir = g_dir_make_tmp ("gpunet-fifo-XXXXXX", NULL);
  gchar *fifo = g_build_filename (dir, "weights.fifo", NULL);
  const gchar *caps = "video/x-raw,format=RGB,width=32,height=24";
  FifoRescue rescue = { fifo, 0, 0, 0 };
  GThread *thread;
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;
  GstClockTime pts = GST_CLOCK_TIME_NONE;
  GstHarness *h;
  GstElement *el;
  gint64 t0;
  gint i;

  fail_unless (mkfifo (fifo, 0600) == 0);
  rescue_set_deadline (&rescue, g_get_monotonic_time () + 8 * G_TIME_SPAN_SECOND);
  thread = g_thread_new ("fifo-rescue", fifo_rescue_thread, &rescue);
  for (i = 0; i < 2; i++) {
    el = gst_element_factory_make ("gpunetclassify", NULL);
    g_object_set (el, "model", i == 0 ? json : fifo, "checkpoint",
        i == 0 ? fifo : ckpt, NULL);
    gst_element_set_bus (el, bus);
    t0 = g_get_monotonic_time ();
    fail_unless_equals_int (gst_element_set_state (el, GST_STATE_PAUSED),
        GST_STATE_CHANGE_FAILURE);
    fail_if (g_atomic_int_get (&rescue.fired), "the start blocked on a FIFO %s",
        i == 0 ? "checkpoint" : "model");
    fail_unless (g_get_monotonic_time () - t0 < 5 * G_TIME_SPAN_SECOND);
    msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
    fail_unless (msg != NULL);
    gst_message_parse_error (msg, &err, NULL);
    fail_unless (strstr (err->message, "not a regular file") != NULL, "%s",
        err->message);
    g_clear_error (&err);
    gst_message_unref (msg);
    gst_element_set_state (el, GST_STATE_NULL);
    gst_element_set_bus (el, NULL);
    gst_object_unref (el);
  }

  /* a swap to a FIFO checkpoint while playing: a warning, tiny-a keeps running */
  {
    gchar *desc = g_strdup_printf ("gpunetclassify model=\"%s\" "
        "checkpoint=\"%s\"", json, ckpt);

    h = gst_harness_new_parse (desc);
    g_free (desc);
  }
  el = gst_harness_find_element (h, "gpunetclassify");
  gst_element_set_bus (el, bus);
  gst_harness_set_src_caps_str (h, caps);
  fail_unless_equals_int (frames_until_model (h, caps, "tiny-a|", 5, &pts), 0);
  rescue_set_deadline (&rescue, g_get_monotonic_time () + 8 * G_TIME_SPAN_SECOND);
  g_object_set (el, "checkpoint", fifo, NULL);
  msg = gst_bus_timed_pop_filtered (bus, 15 * GST_SECOND, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning for the swap to a FIFO");
  fail_if (g_atomic_int_get (&rescue.fired), "the swap blocked on a FIFO");
  gst_message_parse_warning (msg, &err, NULL);
  fail_unless (strstr (err->message, "not a regular file") != NULL, "%s",
      err->message);
  g_clear_error (&err);
  gst_message_unref (msg);
  fail_unless_equals_int (frames_until_model (h, caps, "tiny-a|", 3, &pts), 0);
  gst_element_set_bus (el, NULL);
  gst_object_unref (el);
  gst_harness_teardown (h);

  g_atomic_int_set (&rescue.stop, 1);
  g_thread_join (thread);
  gst_object_unref (bus);
  g_unlink (fifo);
  g_rmdir (dir);
  g_free (fifo);
  g_free (dir);
  g_free (json);
  g_free (ckpt);
}

GST_END_TEST;

/* First-hour points 3, 14 and 15: a labels path naming a FIFO fails the start
 * at once with a sentence (it used to block forever); a READY-only property set
 * while playing posts a WARNING the user sees; backend=auto falling back to the
 * CPU says so in the INFO message's debug string too (what gst-launch prints). */
GST_START_TEST (test_first_hour_element_points)
{
  gchar *json = data_path (TINY_A_JSON), *ckpt = data_path (TINY_A_CKPT);
  gchar *dir = g_dir_make_tmp ("gpunet-fifo-XXXXXX", NULL);
  gchar *fifo = g_build_filename (dir, "labels.fifo", NULL);
  GstElement *el;
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;
  gchar *debug = NULL;
  GstHarness *h;

  fail_unless (mkfifo (fifo, 0600) == 0);
  el = gst_element_factory_make ("gpunetclassify", NULL);
  g_object_set (el, "model", json, "checkpoint", ckpt, "labels", fifo, NULL);
  gst_element_set_bus (el, bus);
  fail_unless_equals_int (gst_element_set_state (el, GST_STATE_PAUSED),
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (strstr (err->message, "not a regular file") != NULL, "%s",
      err->message);
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_state (el, GST_STATE_NULL);
  gst_element_set_bus (el, NULL);
  gst_object_unref (el);
  g_unlink (fifo);
  g_rmdir (dir);

  {
    gchar *desc = g_strdup_printf ("gpunetclassify model=\"%s\" "
        "checkpoint=\"%s\"", json, ckpt);

    h = gst_harness_new_parse (desc);
    g_free (desc);
  }
  el = gst_harness_find_element (h, "gpunetclassify");
  gst_element_set_bus (el, bus);
  /* the harness started it before the bus was set: look at a fresh start */
  gst_element_set_state (el, GST_STATE_READY);
  gst_element_set_state (el, GST_STATE_PLAYING);
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_INFO)) != NULL) {
    gst_message_parse_info (msg, &err, &debug);
    /* only on a host without a usable GPU */
    if (strstr (err->message, "CUDA is not available") != NULL)
      fail_unless (debug && strstr (debug, "CUDA is not available") != NULL,
          "debug string: %s", debug);
    g_clear_error (&err);
    g_free (debug);
    debug = NULL;
    gst_message_unref (msg);
  }
  g_object_set (el, "n-threads", 3, NULL);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning for a READY-only property set while "
      "playing");
  gst_message_parse_warning (msg, &err, NULL);
  fail_unless (strstr (err->message, "n-threads") != NULL, "%s", err->message);
  fail_unless (strstr (err->message, "NULL or READY") != NULL);
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_bus (el, NULL);
  gst_object_unref (el);
  gst_harness_teardown (h);
  gst_object_unref (bus);
  g_free (fifo);
  g_free (dir);
  g_free (json);
  g_free (ckpt);
}

GST_END_TEST;

static Suite *
streams_suite (void)
{
  Suite *s = suite_create ("gpunetclassify-streams");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_four_streams);
  tcase_add_test (tc, test_eight_streams);
  tcase_add_test (tc, test_no_share);
  tcase_add_test (tc, test_device_id_property);
  tcase_add_test (tc, test_event_order);
  tcase_add_test (tc, test_one_stream_fails);
  tcase_add_test (tc, test_model_swap);
  tcase_add_test (tc, test_smoothing_and_label_changes);
  tcase_add_test (tc, test_state_cycles_four_streams);
  tcase_add_test (tc, test_non_finite);
  tcase_add_test (tc, test_first_hour_element_points);
  tcase_add_test (tc, test_fifo_weights);
  return s;
}

GST_CHECK_MAIN (streams);
