/* test_element.c: GstCheck/GstHarness tests of gpunetclassify on the tiny-a fixture
 * model (tests/data/fixtures): metadata for every format and odd sizes, the fixture's
 * golden top-5 through the whole element, untouched data and timestamps, interval,
 * properties changed while PLAYING, bus messages, every start() error, state cycling
 * and caps changes, batch-size (same records as batch 1, EOS/caps/flush, interval),
 * regions (roi-mode, roi-types: records on region metas, crops equal to the regions
 * cut out, interval, messages, batching; models with fewer classes than the top-k
 * cap, swapped while playing), and json-output (parsed back; open and write
 * errors).
 * Run under GST_TRACERS=leaks (meson sets it): a leaked GstObject
 * or GstMiniObject fails the test. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "gpunet-meta.h"
#include "json.h"               /* the engine's strict JSON reader */

#define RES 96
#define NUM_CLASSES 16

/* tests/data/fixtures/tiny-a/golden.json "top5_golden" */
static const gint golden_top5[2][5] = {
  {8, 4, 5, 12, 15},
  {12, 4, 14, 15, 0},
};

static gchar *
data_path (const gchar * rel)
{
  const gchar *dir = g_getenv ("GPUNET_TEST_DATA");

  fail_unless (dir != NULL, "GPUNET_TEST_DATA is not set");
  return g_build_filename (dir, rel, NULL);
}

/* A new gpunetclassify on the tiny-a fixture; `props` is NULL-terminated
 * name/value string pairs applied with gst_util_set_object_arg. */
static GstElement *
make_classify (const gchar * model_rel, const gchar * ckpt_rel,
    const gchar * first_prop, ...)
{
  GstElement *el = gst_element_factory_make ("gpunetclassify", NULL);
  const gchar *name;
  va_list ap;

  fail_unless (el != NULL, "gpunetclassify not found (GST_PLUGIN_PATH?)");
  if (model_rel) {
    gchar *p = data_path (model_rel);
    g_object_set (el, "model", p, NULL);
    g_free (p);
  }
  if (ckpt_rel) {
    gchar *p = data_path (ckpt_rel);
    g_object_set (el, "checkpoint", p, NULL);
    g_free (p);
  }
  va_start (ap, first_prop);
  for (name = first_prop; name; name = va_arg (ap, const gchar *)) {
    const gchar *value = va_arg (ap, const gchar *);
    gst_util_set_object_arg (G_OBJECT (el), name, value);
  }
  va_end (ap);
  return el;
}

#define TINY_A "fixtures/tiny-a.json", "fixtures/tiny-a/tiny-a.pth.tar"

static GstHarness *
harness_for (GstElement * el, const gchar * caps)
{
  GstHarness *h = gst_harness_new_with_element (el, "sink", "src");

  gst_object_unref (el);        /* the harness holds it */
  /* frames from memory, as from a file: when-busy=auto waits, none is skipped */
  gst_harness_set_live (h, FALSE);
  gst_harness_set_src_caps_str (h, caps);
  return h;
}

/* A buffer for `caps` with a deterministic pattern and timestamps.  `h` NULL: a plain
 * allocation, without the harness's allocation query (serialized: the element answers
 * it once its queue drained, which a blocked src pad never does). */
static GstBuffer *
make_frame (GstHarness * h, const gchar * caps_str, guint seed)
{
  GstCaps *caps = gst_caps_from_string (caps_str);
  GstVideoInfo info;
  GstBuffer *buf;
  GstMapInfo map;
  gsize i;

  fail_unless (gst_video_info_from_caps (&info, caps));
  gst_caps_unref (caps);
  buf = h ? gst_harness_create_buffer (h, GST_VIDEO_INFO_SIZE (&info)) :
      gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
  for (i = 0; i < map.size; i++)
    map.data[i] = (guint8) ((i * 7 + seed * 31 + (i / 97) * 13) & 0xff);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_PTS (buf) = seed * GST_MSECOND * 40;
  GST_BUFFER_DTS (buf) = seed * GST_MSECOND * 40 + 1;
  GST_BUFFER_DURATION (buf) = GST_MSECOND * 40;
  return buf;
}

/* Checks the fields of one classification structure of region `roi_id` (-1:
 * the frame); returns the top-k size. */
static guint
check_record_roi (const GstStructure * s, gboolean inferred, gint roi_id)
{
  guint i, n = gpunet_meta_n_results (s);
  gint label_id, num_classes, roi;
  gboolean inf;
  const gchar *model;

  fail_unless (s != NULL);
  model = gst_structure_get_string (s, "model");
  fail_unless (model != NULL && *model != '\0');
  /* the precision the engine runs (auto resolved), so that a bf16/fp16/int8 record never
   * passes for an exact one */
  fail_unless (g_strv_contains ((const gchar *[]) { "fp32", "fp16", "bf16", "int8", NULL },
          gst_structure_get_string (s, "precision") ?
          gst_structure_get_string (s, "precision") : ""));
  fail_unless (gst_structure_get_int (s, "num-classes", &num_classes));
  fail_unless_equals_int (num_classes, NUM_CLASSES);
  fail_unless (gst_structure_get_int (s, "roi-id", &roi));
  fail_unless_equals_int (roi, roi_id);
  fail_unless (gst_structure_get_boolean (s, "inferred", &inf));
  fail_unless_equals_int (inf, inferred);
  fail_unless (gst_structure_get_int (s, "label-id", &label_id));
  fail_unless (label_id >= 0 && label_id < NUM_CLASSES);
  fail_unless (gpunet_meta_label (s) != NULL);
  fail_unless (gpunet_meta_confidence (s) > 0.0
      && gpunet_meta_confidence (s) <= 1.0);
  if (n > 0) {
    fail_unless_equals_int (gpunet_meta_nth_id (s, 0), label_id);
    fail_unless_equals_string (gpunet_meta_nth_label (s, 0),
        gpunet_meta_label (s));
  }
  for (i = 0; i < n; i++) {
    gchar *expect = g_strdup_printf ("class-%d", gpunet_meta_nth_id (s, i));

    fail_unless_equals_string (gpunet_meta_nth_label (s, i), expect);
    g_free (expect);
    if (i > 0)
      fail_unless (gpunet_meta_nth_score (s, i) <=
          gpunet_meta_nth_score (s, i - 1));
  }
  return n;
}

/* Checks a whole-frame record; returns the top-k size. */
static guint
check_record (const GstStructure * s, gboolean inferred)
{
  return check_record_roi (s, inferred, -1);
}

/* Pushes `in` (keeping a copy of its bytes and fields), pulls the output and
 * checks it is the same frame; returns the output (caller unrefs). */
static GstBuffer *
push_and_check_passthrough (GstHarness * h, GstBuffer * in)
{
  GstClockTime pts = GST_BUFFER_PTS (in), dts = GST_BUFFER_DTS (in);
  GstClockTime dur = GST_BUFFER_DURATION (in);
  GstBufferFlags flags;
  GstMapInfo map;
  GstBuffer *out;
  gpointer bytes;
  gsize size;

  GST_BUFFER_FLAG_SET (in, GST_BUFFER_FLAG_DISCONT | GST_BUFFER_FLAG_DELTA_UNIT);
  flags = GST_BUFFER_FLAGS (in);
  fail_unless (gst_buffer_map (in, &map, GST_MAP_READ));
  bytes = g_memdup2 (map.data, map.size);
  size = map.size;
  gst_buffer_unmap (in, &map);

  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL);
  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), pts);
  fail_unless_equals_uint64 (GST_BUFFER_DTS (out), dts);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), dur);
  fail_unless_equals_int (GST_BUFFER_FLAGS (out) & flags, flags);
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  fail_unless_equals_uint64 (map.size, size);
  fail_unless (memcmp (map.data, bytes, size) == 0, "frame data changed");
  gst_buffer_unmap (out, &map);
  g_free (bytes);
  return out;
}

static const GstStructure *
out_record (GstBuffer * out)
{
  GstCustomMeta *meta = gpunet_meta_get (out);

  fail_unless (meta != NULL, "no GstGpunetClassificationMeta on the buffer");
  return gpunet_meta_get_structure (meta);
}

/* ---- formats, sizes, data and timestamps ---------------------------------------- */

static const gchar *formats[] = {
  "NV12", "I420", "RGBA", "BGRA", "RGBx", "BGRx", "RGB", "BGR"
};

static const gint sizes[][2] = { {33, 17}, {64, 48}, {1, 1}, {17, 200} };

GST_START_TEST (test_formats_and_sizes)
{
  guint f, z;

  for (f = 0; f < G_N_ELEMENTS (formats); f++) {
    for (z = 0; z < G_N_ELEMENTS (sizes); z++) {
      gchar *caps = g_strdup_printf ("video/x-raw,format=%s,width=%d,"
          "height=%d,framerate=30/1", formats[f], sizes[z][0], sizes[z][1]);
      GstHarness *h = harness_for (make_classify (TINY_A, NULL), caps);
      GstBuffer *out;

      GST_INFO ("%s", caps);
      out = push_and_check_passthrough (h, make_frame (h, caps, f + z));
      fail_unless_equals_int (check_record (out_record (out), TRUE), 5);
      gst_buffer_unref (out);
      gst_harness_teardown (h);
      g_free (caps);
    }
  }
}

GST_END_TEST;

/* ---- golden top-5 through the element ------------------------------------------- */

static void
check_golden (const gchar * resize_mode, const gchar * crop_pct,
    const gchar * backend)
{
  const gchar *caps = "video/x-raw,format=RGB,width=96,height=96,"
      "framerate=30/1";
  gchar *path = data_path ("fixtures/tiny-a/input_rgb_u8.bin");
  gchar *rgb = NULL;
  gsize len = 0;
  GstHarness *h;
  gint img, i, y;

  fail_unless (g_file_get_contents (path, &rgb, &len, NULL));
  fail_unless_equals_uint64 (len, 2 * RES * RES * 3);
  h = harness_for (make_classify (TINY_A, "resize-mode", resize_mode,
          "crop-pct", crop_pct, "backend", backend, NULL), caps);
  {
    /* the property took the name (an unknown nick would leave the default) */
    GParamSpec *ps = g_object_class_find_property (G_OBJECT_GET_CLASS (h->element),
        "backend");
    GEnumClass *k = g_type_class_ref (ps->value_type);
    gint v;

    g_object_get (h->element, "backend", &v, NULL);
    fail_unless_equals_string (g_enum_get_value (k, v)->value_nick, backend);
    g_type_class_unref (k);
  }

  for (img = 0; img < 2; img++) {
    GstBuffer *in = make_frame (h, caps, img), *out;
    const GstStructure *s;
    GstVideoFrame frame;
    GstVideoInfo info;
    GstCaps *c = gst_caps_from_string (caps);

    gst_video_info_from_caps (&info, c);
    gst_caps_unref (c);
    fail_unless (gst_video_frame_map (&frame, &info, in, GST_MAP_WRITE));
    for (y = 0; y < RES; y++)
      memcpy ((guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&frame, 0) +
          y * GST_VIDEO_FRAME_PLANE_STRIDE (&frame, 0),
          rgb + ((gsize) img * RES + y) * RES * 3, RES * 3);
    gst_video_frame_unmap (&frame);

    out = push_and_check_passthrough (h, in);
    s = out_record (out);
    fail_unless_equals_int (check_record (s, TRUE), 5);
    for (i = 0; i < 5; i++)
      fail_unless_equals_int (gpunet_meta_nth_id (s, i), golden_top5[img][i]);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
  g_free (rgb);
  g_free (path);
}

GST_START_TEST (test_golden_stretch)
{
  check_golden ("stretch", "0", "cpu");
}

GST_END_TEST;

/* the reference oracle through the element's backend property */
GST_START_TEST (test_golden_cpu_ref)
{
  check_golden ("stretch", "0", "cpu-ref");
}

GST_END_TEST;

GST_START_TEST (test_golden_center_crop)
{
  check_golden ("center-crop", "1.0", "cpu");
}

GST_END_TEST;

/* ---- meta survives copies ----------------------------------------------------------- */

GST_START_TEST (test_meta_copy)
{
  const gchar *caps = "video/x-raw,format=I420,width=32,height=32";
  GstHarness *h = harness_for (make_classify (TINY_A, NULL), caps);
  GstBuffer *out, *copy;
  gchar *a, *b;

  out = push_and_check_passthrough (h, make_frame (h, caps, 3));
  copy = gst_buffer_copy_deep (out);
  a = gst_structure_to_string (out_record (out));
  b = gst_structure_to_string (out_record (copy));
  fail_unless_equals_string (a, b);
  g_free (a);
  g_free (b);
  gst_buffer_unref (copy);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* an input buffer that is not writable is not changed: the output is a new
 * buffer sharing its memory, with the meta */
GST_START_TEST (test_not_writable)
{
  const gchar *caps = "video/x-raw,format=NV12,width=32,height=24";
  GstHarness *h = harness_for (make_classify (TINY_A, NULL), caps);
  GstBuffer *in = make_frame (h, caps, 9), *out;

  gst_buffer_ref (in);
  out = push_and_check_passthrough (h, in);
  fail_unless (out != in);
  fail_unless (gpunet_meta_get (in) == NULL);
  check_record (out_record (out), TRUE);
  fail_unless (gst_buffer_peek_memory (out, 0) == gst_buffer_peek_memory (in,
          0));
  gst_buffer_unref (in);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ---- interval, properties while PLAYING, labels ------------------------------------- */

GST_START_TEST (test_interval)
{
  const gchar *caps = "video/x-raw,format=RGBx,width=40,height=30";
  GstHarness *h = harness_for (make_classify (TINY_A, "interval", "2", NULL),
      caps);
  static const gboolean expect[] = { TRUE, FALSE, FALSE, TRUE, FALSE, FALSE,
    TRUE
  };
  gchar *inferred_str = NULL;
  guint i;

  for (i = 0; i < G_N_ELEMENTS (expect); i++) {
    GstBuffer *out = push_and_check_passthrough (h, make_frame (h, caps, i));
    GstStructure *s = gst_structure_copy (out_record (out));
    gchar *str;

    check_record (s, expect[i]);
    /* a carried record equals the last inferred one but for `inferred` */
    gst_structure_remove_field (s, "inferred");
    str = gst_structure_to_string (s);
    if (expect[i]) {
      g_free (inferred_str);
      inferred_str = str;
    } else {
      fail_unless_equals_string (str, inferred_str);
      g_free (str);
    }
    gst_structure_free (s);
    gst_buffer_unref (out);
  }
  /* interval back to 0 while PLAYING: every frame is inferred again */
  g_object_set (h->element, "interval", 0, NULL);
  for (i = 0; i < 3; i++) {
    GstBuffer *out = push_and_check_passthrough (h, make_frame (h, caps, i));
    check_record (out_record (out), TRUE);
    gst_buffer_unref (out);
  }
  g_free (inferred_str);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_top_k_threshold_playing)
{
  const gchar *caps = "video/x-raw,format=BGR,width=50,height=50";
  GstHarness *h = harness_for (make_classify (TINY_A, NULL), caps);
  GstBuffer *out;
  const GstStructure *s;
  guint n;

  out = push_and_check_passthrough (h, make_frame (h, caps, 1));
  fail_unless_equals_int (check_record (out_record (out), TRUE), 5);
  gst_buffer_unref (out);

  g_object_set (h->element, "top-k", 3, NULL);
  out = push_and_check_passthrough (h, make_frame (h, caps, 2));
  fail_unless_equals_int (check_record (out_record (out), TRUE), 3);
  gst_buffer_unref (out);

  /* more than the model has classes: capped */
  g_object_set (h->element, "top-k", 100, NULL);
  out = push_and_check_passthrough (h, make_frame (h, caps, 3));
  fail_unless_equals_int (check_record (out_record (out), TRUE), NUM_CLASSES);
  gst_buffer_unref (out);

  /* threshold: lists shrink to the passing entries, top-1 fields stay */
  g_object_set (h->element, "top-k", 5, "threshold", 1.0f, NULL);
  out = push_and_check_passthrough (h, make_frame (h, caps, 4));
  s = out_record (out);
  fail_unless_equals_int (check_record (s, TRUE), 0);
  fail_unless (gpunet_meta_label (s) != NULL);
  gst_buffer_unref (out);

  g_object_set (h->element, "threshold", 0.05f, NULL);
  out = push_and_check_passthrough (h, make_frame (h, caps, 5));
  s = out_record (out);
  n = check_record (s, TRUE);
  fail_unless (n <= 5);
  if (n > 0)
    fail_unless (gpunet_meta_nth_score (s, n - 1) >= 0.05 - 1e-6);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_labels_file)
{
  const gchar *caps = "video/x-raw,format=RGB,width=20,height=20";
  GString *text = g_string_new (NULL);
  gchar *path = NULL;
  GstHarness *h;
  GstBuffer *out;
  const GstStructure *s;
  gint i, fd;

  for (i = 0; i < NUM_CLASSES; i++)
    g_string_append_printf (text, "label number %d\n", i);
  fd = g_file_open_tmp ("gpunet-labels-XXXXXX.txt", &path, NULL);
  fail_unless (fd >= 0);
  close (fd);
  fail_unless (g_file_set_contents (path, text->str, -1, NULL));

  h = harness_for (make_classify (TINY_A, "labels", path, NULL), caps);
  out = push_and_check_passthrough (h, make_frame (h, caps, 0));
  s = out_record (out);
  for (i = 0; i < (gint) gpunet_meta_n_results (s); i++) {
    gchar *expect = g_strdup_printf ("label number %d",
        gpunet_meta_nth_id (s, i));
    fail_unless_equals_string (gpunet_meta_nth_label (s, i), expect);
    g_free (expect);
  }
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_unlink (path);
  g_free (path);
  g_string_free (text, TRUE);
}

GST_END_TEST;

/* A labels file in Latin-1 (bytes that are not UTF-8): GstStructure drops a string
 * field that is not valid UTF-8 (with "Please file a bug"), so the record's label and
 * the label-changed message's new-label were missing.  The element makes each label
 * valid UTF-8 as it loads them, each bad byte U+FFFD, as json-output writes them. */
GST_START_TEST (test_labels_not_utf8)
{
  const gchar *caps = "video/x-raw,format=RGB,width=20,height=20";
  GString *text = g_string_new (NULL);
  gchar *path = NULL;
  GstHarness *h;
  GstBuffer *out;
  GstBus *bus;
  GstMessage *msg;
  const GstStructure *s;
  gboolean changed = FALSE;
  gint i, fd;

  for (i = 0; i < NUM_CLASSES; i++)
    g_string_append_printf (text, "caf\xe9 %d\n", i);
  fd = g_file_open_tmp ("gpunet-labels-XXXXXX.txt", &path, NULL);
  fail_unless (fd >= 0);
  close (fd);
  fail_unless (g_file_set_contents (path, text->str, -1, NULL));

  h = harness_for (make_classify (TINY_A, "labels", path, NULL), caps);
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  out = push_and_check_passthrough (h, make_frame (h, caps, 0));
  s = out_record (out);
  fail_unless (gpunet_meta_n_results (s) > 0);
  for (i = 0; i < (gint) gpunet_meta_n_results (s); i++) {
    gchar *expect = g_strdup_printf ("caf\xef\xbf\xbd %d", gpunet_meta_nth_id (s, i));
    fail_unless_equals_string (gpunet_meta_nth_label (s, i), expect);
    g_free (expect);
  }
  fail_unless (gpunet_meta_label (s) != NULL, "the record lost its label");
  fail_unless (g_utf8_validate (gpunet_meta_label (s), -1, NULL));
  while ((msg = gst_bus_pop (bus)) != NULL) {
    const GstStructure *m = gst_message_get_structure (msg);

    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT
        && gst_structure_has_name (m, "gpunetclassify-label-changed")) {
      const gchar *l = gst_structure_get_string (m, "new-label");

      fail_unless (l != NULL, "label-changed lost its new-label");
      fail_unless (g_str_has_prefix (l, "caf\xef\xbf\xbd "));
      changed = TRUE;
    }
    gst_message_unref (msg);
  }
  fail_unless (changed, "no gpunetclassify-label-changed message");
  gst_buffer_unref (out);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_unlink (path);
  g_free (path);
  g_string_free (text, TRUE);
}

GST_END_TEST;

/* ---- bus messages --------------------------------------------------------------------- */

/* Runs the pipeline's bus to EOS (failing on errors or after 60 s) and returns
 * how many gpunetclassify messages it carried, checking their fields. */
static guint
count_messages_to_eos (GstBus * bus)
{
  GstMessage *msg;
  guint n = 0;
  gboolean done = FALSE;

  while (!done) {
    msg = gst_bus_timed_pop (bus, 60 * GST_SECOND);
    fail_unless (msg != NULL, "timed out");
    fail_unless (GST_MESSAGE_TYPE (msg) != GST_MESSAGE_ERROR, "error message");
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS)
      done = TRUE;
    if (GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ELEMENT &&
        gst_structure_has_name (gst_message_get_structure (msg),
            GPUNET_MESSAGE_NAME)) {
      const GstStructure *s = gst_message_get_structure (msg);
      guint64 frame, ts, rt;

      check_record (s, TRUE);
      fail_unless (gst_structure_get_uint64 (s, "frame", &frame));
      fail_unless_equals_uint64 (frame, n);
      fail_unless (gst_structure_get_uint64 (s, "timestamp", &ts));
      fail_unless (gst_structure_get_uint64 (s, "running-time", &rt));
      fail_unless_equals_uint64 (rt, ts);
      n++;
    }
    gst_message_unref (msg);
  }
  return n;
}

GST_START_TEST (test_post_messages)
{
  gchar *model = data_path ("fixtures/tiny-a.json");
  gchar *ckpt = data_path ("fixtures/tiny-a/tiny-a.pth.tar");
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=30 ! "
      "video/x-raw,width=64,height=48 ! gpunetclassify model=\"%s\" "
      "checkpoint=\"%s\" post-messages=true ! fakesink", model, ckpt);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstBus *bus;

  fail_unless (pipeline != NULL);
  bus = gst_element_get_bus (pipeline);
  fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
      GST_STATE_CHANGE_FAILURE);
  fail_unless_equals_int (count_messages_to_eos (bus), 30);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_free (desc);
  g_free (model);
  g_free (ckpt);
}

GST_END_TEST;

/* ---- errors --------------------------------------------------------------------------- */

/* Starts `el` (taking it), expects the state change to fail with an error
 * message on the bus; returns the error's message text. */
static gchar *
expect_start_error (GstElement * el, GQuark * domain)
{
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;
  gchar *dbg = NULL, *text;

  gst_element_set_bus (el, bus);
  fail_unless_equals_int (gst_element_set_state (el, GST_STATE_PLAYING),
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error message posted");
  gst_message_parse_error (msg, &err, &dbg);
  GST_INFO ("error: %s (%s)", err->message, dbg);
  text = g_strdup (err->message);
  if (domain)
    *domain = err->domain;
  g_clear_error (&err);
  g_free (dbg);
  gst_message_unref (msg);
  gst_element_set_state (el, GST_STATE_NULL);
  gst_element_set_bus (el, NULL);
  gst_object_unref (bus);
  gst_object_unref (el);
  return text;
}

static void
assert_contains (const gchar * text, const gchar * phrase)
{
  gchar *lt = g_ascii_strdown (text, -1), *lp = g_ascii_strdown (phrase, -1);

  fail_unless (strstr (lt, lp) != NULL, "'%s' does not mention '%s'", text,
      phrase);
  g_free (lt);
  g_free (lp);
}

GST_START_TEST (test_error_no_checkpoint)
{
  gchar *text = expect_start_error (make_classify ("fixtures/tiny-a.json",
          NULL, NULL), NULL);

  assert_contains (text, "checkpoint");
  assert_contains (text, "property");
  g_free (text);
}

GST_END_TEST;

GST_START_TEST (test_error_missing_file)
{
  gchar *text = expect_start_error (make_classify ("fixtures/tiny-a.json",
          "fixtures/tiny-a/does-not-exist.pth.tar", NULL), NULL);

  assert_contains (text, "does-not-exist.pth.tar");
  g_free (text);
}

GST_END_TEST;

GST_START_TEST (test_error_corrupt_file)
{
  gchar *path = NULL, *text;
  GstElement *el;
  guint8 garbage[4096];
  gint fd;
  guint i;

  for (i = 0; i < sizeof garbage; i++)
    garbage[i] = (guint8) (i * 131 + 7);
  memcpy (garbage, "PK\003\004", 4);    /* looks like a zip, is not one */
  fd = g_file_open_tmp ("gpunet-garbage-XXXXXX.pth.tar", &path, NULL);
  fail_unless (fd >= 0);
  close (fd);
  fail_unless (g_file_set_contents (path, (const gchar *) garbage,
          sizeof garbage, NULL));

  el = make_classify ("fixtures/tiny-a.json", NULL, "checkpoint", path, NULL);
  text = expect_start_error (el, NULL);
  assert_contains (text, "gpunet-garbage-");
  g_free (text);
  g_unlink (path);
  g_free (path);
}

GST_END_TEST;

GST_START_TEST (test_error_mismatch)
{
  GQuark domain = 0;
  gchar *text = expect_start_error (make_classify ("fixtures/tiny-d.json",
          "fixtures/tiny-a/tiny-a.pth.tar", NULL), &domain);

  fail_unless (domain == GST_RESOURCE_ERROR);
  fail_unless (strlen (text) > 10);
  g_free (text);
}

GST_END_TEST;

GST_START_TEST (test_error_labels_unreadable)
{
  gchar *text = expect_start_error (make_classify (TINY_A, "labels",
          "/nonexistent/labels.txt", NULL), NULL);

  assert_contains (text, "labels file");
  assert_contains (text, "/nonexistent/labels.txt");
  g_free (text);

  /* a directory: the engine's sentence whole, the advice once (it used to read
   * "Cannot use the labels file '/' is not a regular file ...: give a text file with
   * one label per line (model 'tiny-a'): set labels to a text file with one label
   * per line") */
  text = expect_start_error (make_classify (TINY_A, "labels", "/", NULL), NULL);
  fail_unless (g_str_has_prefix (text, "Cannot use the labels of model 'tiny-a': "
          "labels file '/' is not a regular file"), "%s", text);
  fail_unless (strstr (text, "one label per line") != NULL
      && strstr (strstr (text, "one label per line") + 1, "one label per line") == NULL,
      "%s", text);
  g_free (text);
}

GST_END_TEST;

/* a labels file over the engine's bound is refused before it is read (a sparse file:
 * no disk used) */
GST_START_TEST (test_error_labels_too_large)
{
  gchar *path = NULL, *text;
  gint fd = g_file_open_tmp ("gpunet-labels-XXXXXX.txt", &path, NULL);

  fail_unless (fd >= 0);
  fail_unless (ftruncate (fd, (off_t) 3 << 30) == 0);
  close (fd);
  text = expect_start_error (make_classify (TINY_A, "labels", path, NULL),
      NULL);
  assert_contains (text, "labels file");
  assert_contains (text, "larger than 16 MiB");
  g_free (text);
  g_unlink (path);
  g_free (path);
}

GST_END_TEST;
/* Pads stop src first (PAUSED->READY), so upstream may push a serialized event
 * between the element's src and sink pad deactivation: it must get
 * GST_FLOW_FLUSHING and pause quietly.  A refusal as a plain FALSE was
 * GST_FLOW_ERROR (NOT_NEGOTIATED for caps), and an appsrc or basesrc upstream
 * posted "Internal data stream error" on an ordinary stop (test_chaos.c found it). */
GST_START_TEST (test_event_while_stopping)
{
  const gchar *caps = "video/x-raw,format=RGBA,width=32,height=24";
  GstHarness *h = harness_for (make_classify (TINY_A, NULL), caps);
  GstPad *srcpad = gst_element_get_static_pad (h->element, "src");
  GstBuffer *out;

  out = push_and_check_passthrough (h, make_frame (h, caps, 1));
  gst_buffer_unref (out);
  /* the first half of PAUSED->READY: the src pad (and its queue) stops */
  fail_unless (gst_pad_set_active (srcpad, FALSE));
  /* new sticky events, pushed before the next buffer, meet the stopped queue */
  gst_harness_set_src_caps_str (h, "video/x-raw,format=RGBA,width=16,height=16");
  fail_unless_equals_int (gst_harness_push (h, make_frame (h,
              "video/x-raw,format=RGBA,width=16,height=16", 2)),
      GST_FLOW_FLUSHING);
  gst_object_unref (srcpad);
  gst_harness_teardown (h);
}

GST_END_TEST;
static GstPadProbeReturn
block_probe (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  (void) pad;
  (void) info;
  (void) user_data;
  return GST_PAD_PROBE_OK;
}

/* A flush while stream-start and caps still wait in the element's queue (here:
 * downstream blocks the src task at the first event): upstream sends them once,
 * so downstream must still get them before the next buffer.  They were dropped
 * with the queue: "Got data flow before stream-start event", and a buffer with
 * no caps downstream (test_chaos.c found it). */
GST_START_TEST (test_flush_keeps_sticky_events)
{
  const gchar *caps = "video/x-raw,format=RGBA,width=32,height=24";
  GstHarness *h = gst_harness_new_with_element (make_classify (TINY_A, NULL),
      "sink", "src");
  GstPad *srcpad = gst_element_get_static_pad (h->element, "src");
  GstSegment segment;
  GstCaps *got, *want = gst_caps_from_string (caps);
  GstBuffer *out;
  gulong probe;

  gst_object_unref (h->element);        /* the harness holds it */
  gst_harness_set_live (h, FALSE);
  probe = gst_pad_add_probe (srcpad, GST_PAD_PROBE_TYPE_BLOCK_DOWNSTREAM,
      block_probe, NULL, NULL);
  gst_harness_set_src_caps_str (h, caps);
  fail_unless_equals_int (gst_harness_push (h, make_frame (NULL, caps, 1)),
      GST_FLOW_OK);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  gst_pad_remove_probe (srcpad, probe);
  gst_segment_init (&segment, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  out = push_and_check_passthrough (h, make_frame (NULL, caps, 2));
  check_record (out_record (out), TRUE);
  got = gst_pad_get_current_caps (h->sinkpad);
  fail_unless (got != NULL && gst_caps_is_equal (got, want),
      "downstream has no caps after the flush");
  gst_caps_unref (got);
  gst_caps_unref (want);
  gst_buffer_unref (out);
  gst_object_unref (srcpad);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A GstVideoMeta whose chroma stride reaches past the buffer (a forged geometry): the
 * element refuses that frame with a sentence (no read past the memory: the sanitizer
 * build runs this), and another element sharing its engine goes on classifying. */
GST_START_TEST (test_forged_video_meta)
{
  const gchar *caps = "video/x-raw,format=NV12,width=32,height=24";
  GstHarness *bad = harness_for (make_classify (TINY_A, NULL), caps);
  GstHarness *good = harness_for (make_classify (TINY_A, NULL), caps);
  GstBus *bus = gst_bus_new ();
  gsize offset[GST_VIDEO_MAX_PLANES] = { 0, 32 * 24 };
  gint stride[GST_VIDEO_MAX_PLANES] = { 32, 4096 };
  GstBuffer *buf = make_frame (bad, caps, 3), *out;
  GstMessage *msg;
  GError *err = NULL;

  gst_element_set_bus (bad->element, bus);
  gst_buffer_add_video_meta_full (buf, GST_VIDEO_FRAME_FLAG_NONE,
      GST_VIDEO_FORMAT_NV12, 32, 24, 2, offset, stride);
  fail_unless_equals_int (gst_harness_push (bad, buf), GST_FLOW_ERROR);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error message posted");
  gst_message_parse_error (msg, &err, NULL);
  assert_contains (err->message, "reaches past its memory");
  assert_contains (err->message, "plane 1");
  g_clear_error (&err);
  gst_message_unref (msg);

  /* the engine both share still serves the other element */
  out = push_and_check_passthrough (good, make_frame (good, caps, 4));
  check_record (out_record (out), TRUE);
  gst_buffer_unref (out);
  gst_element_set_bus (bad->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (bad);
  gst_harness_teardown (good);
}

GST_END_TEST;
GST_START_TEST (test_error_labels_count)
{
  gchar *path = NULL, *text;
  gint fd = g_file_open_tmp ("gpunet-labels-XXXXXX.txt", &path, NULL);

  fail_unless (fd >= 0);
  close (fd);
  fail_unless (g_file_set_contents (path, "cat\ndog\nbird\n", -1, NULL));
  text = expect_start_error (make_classify (TINY_A, "labels", path, NULL),
      NULL);
  assert_contains (text, "has 3 labels");
  assert_contains (text, "16 classes");
  g_free (text);
  g_unlink (path);
  g_free (path);
}

GST_END_TEST;

/* TRUE when the element's sink pad, queried with no peer, offers CUDA memory */
static gboolean
sink_offers_cuda (GstElement * el)
{
  GstPad *pad = gst_element_get_static_pad (el, "sink");
  GstCaps *caps = gst_pad_query_caps (pad, NULL);
  gboolean cuda = FALSE;

  for (guint i = 0; i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    cuda |= f != NULL && gst_caps_features_contains (f, "memory:CUDAMemory");
  }
  gst_caps_unref (caps);
  gst_object_unref (pad);
  return cuda;
}

/* "cudaupload ! video/x-raw(memory:CUDAMemory) ! gpunetclassify" is linked in NULL,
 * before there is a session: the element must offer CUDA caps then wherever its CUDA
 * backend can start (it refused the link before), and never with backend=cpu */
GST_START_TEST (test_cuda_caps_before_start)
{
  GstElement *cpu = make_classify (TINY_A, "backend", "cpu", NULL);
  GstElement *fresh = make_classify (TINY_A, "backend", "cuda", NULL);
  GstElement *cycled = make_classify (TINY_A, "backend", "cuda", NULL);
  gboolean offered = sink_offers_cuda (fresh), started;

  fail_if (sink_offers_cuda (cpu), "backend=cpu offers CUDA caps before start");
  fail_unless_equals_int (gst_element_set_state (cpu, GST_STATE_PAUSED),
      GST_STATE_CHANGE_SUCCESS);
  fail_if (sink_offers_cuda (cpu), "backend=cpu offers CUDA caps when started");
  gst_element_set_state (cpu, GST_STATE_NULL);
  started = gst_element_set_state (cycled, GST_STATE_PAUSED)
      != GST_STATE_CHANGE_FAILURE;
  gst_element_set_state (cycled, GST_STATE_NULL);
  if (started) {
    fail_unless (offered, "backend=cuda starts here, but offered no CUDA caps "
        "before its first start");
    fail_unless (sink_offers_cuda (cycled), "backend=cuda offered no CUDA caps "
        "after a start and stop");
  } else
    GST_INFO ("no CUDA backend here: only backend=cpu checked");
  gst_object_unref (cpu);
  gst_object_unref (fresh);
  gst_object_unref (cycled);
}

GST_END_TEST;

GST_START_TEST (test_error_cuda_unavailable)
{
  GstElement *el = make_classify (TINY_A, "backend", "cuda", NULL);
  GstStateChangeReturn ret;

  /* a build or machine with a working CUDA backend starts fine */
  ret = gst_element_set_state (el, GST_STATE_PAUSED);
  gst_element_set_state (el, GST_STATE_NULL);
  if (ret != GST_STATE_CHANGE_FAILURE) {
    GST_INFO ("CUDA backend available; skipping");
    gst_object_unref (el);
    return;
  }
  {
    gchar *text = expect_start_error (el, NULL);
    assert_contains (text, "cuda");
    g_free (text);
  }
}

GST_END_TEST;

/* ---- state changes and caps changes --------------------------------------------------- */

GST_START_TEST (test_state_cycles)
{
  gchar *model = data_path ("fixtures/tiny-a.json");
  gchar *ckpt = data_path ("fixtures/tiny-a/tiny-a.pth.tar");
  gchar *desc = g_strdup_printf ("videotestsrc num-buffers=2 ! "
      "video/x-raw,format=NV12,width=48,height=36 ! gpunetclassify "
      "model=\"%s\" checkpoint=\"%s\" ! fakesink", model, ckpt);
  GstElement *pipeline = gst_parse_launch (desc, NULL);
  GstBus *bus = gst_element_get_bus (pipeline);
  gint i;

  for (i = 0; i < 50; i++) {
    GstMessage *msg;

    fail_unless (gst_element_set_state (pipeline, GST_STATE_PLAYING) !=
        GST_STATE_CHANGE_FAILURE);
    msg = gst_bus_timed_pop_filtered (bus, 30 * GST_SECOND,
        GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    fail_unless (msg != NULL && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS);
    gst_message_unref (msg);
    fail_unless_equals_int (gst_element_set_state (pipeline, GST_STATE_NULL),
        GST_STATE_CHANGE_SUCCESS);
  }
  gst_object_unref (bus);
  gst_object_unref (pipeline);
  g_free (desc);
  g_free (model);
  g_free (ckpt);
}

GST_END_TEST;

GST_START_TEST (test_caps_change)
{
  static const gchar *caps[] = {
    "video/x-raw,format=RGB,width=96,height=96,framerate=30/1",
    "video/x-raw,format=NV12,width=33,height=17,framerate=30/1",
    "video/x-raw,format=I420,width=640,height=360,framerate=30/1",
    "video/x-raw,format=BGRA,width=7,height=5,framerate=30/1",
  };
  GstHarness *h = harness_for (make_classify (TINY_A, "interval", "5", NULL),
      caps[0]);
  guint i, j;

  for (i = 0; i < G_N_ELEMENTS (caps); i++) {
    if (i > 0)
      gst_harness_set_src_caps_str (h, caps[i]);
    for (j = 0; j < 2; j++) {
      GstBuffer *out = push_and_check_passthrough (h, make_frame (h, caps[i],
              j));
      /* the first frame after a caps change is classified again */
      check_record (out_record (out), j == 0);
      gst_buffer_unref (out);
    }
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ---- batch-size ------------------------------------------------------------------ */

/* What a frame was when it went in, to compare with what comes out. */
typedef struct
{
  GstClockTime pts, dts, dur;
  GstBufferFlags flags;
  gpointer bytes;
  gsize size;
} FrameCopy;

static void
frame_copy_of (FrameCopy * c, GstBuffer * in)
{
  GstMapInfo map;

  GST_BUFFER_FLAG_SET (in, GST_BUFFER_FLAG_DISCONT | GST_BUFFER_FLAG_DELTA_UNIT);
  c->pts = GST_BUFFER_PTS (in);
  c->dts = GST_BUFFER_DTS (in);
  c->dur = GST_BUFFER_DURATION (in);
  c->flags = GST_BUFFER_FLAGS (in);
  fail_unless (gst_buffer_map (in, &map, GST_MAP_READ));
  c->bytes = g_memdup2 (map.data, map.size);
  c->size = map.size;
  gst_buffer_unmap (in, &map);
}

/* Checks `out` is the frame `c` describes; frees c's bytes. Returns "ids;inferred"
 * of its record (caller frees). */
static gchar *
check_copy (FrameCopy * c, GstBuffer * out)
{
  const GstStructure *s = out_record (out);
  GString *str = g_string_new (NULL);
  gboolean inferred = FALSE;
  GstMapInfo map;
  guint i;

  fail_unless_equals_uint64 (GST_BUFFER_PTS (out), c->pts);
  fail_unless_equals_uint64 (GST_BUFFER_DTS (out), c->dts);
  fail_unless_equals_uint64 (GST_BUFFER_DURATION (out), c->dur);
  fail_unless_equals_int (GST_BUFFER_FLAGS (out) & c->flags, c->flags);
  fail_unless (gst_buffer_map (out, &map, GST_MAP_READ));
  fail_unless_equals_uint64 (map.size, c->size);
  fail_unless (memcmp (map.data, c->bytes, c->size) == 0, "frame data changed");
  gst_buffer_unmap (out, &map);
  g_clear_pointer (&c->bytes, g_free);

  fail_unless (gst_structure_get_boolean (s, "inferred", &inferred));
  check_record (s, inferred);
  for (i = 0; i < gpunet_meta_n_results (s); i++)
    g_string_append_printf (str, "%d:%.5f,", gpunet_meta_nth_id (s, i),
        gpunet_meta_nth_score (s, i));
  g_string_append_printf (str, ";%d", inferred);
  return g_string_free (str, FALSE);
}

/* Classifies frames seed 0..n-1 of `caps` with `props` ("batch-size=4 ..."),
 * switching to caps2 (when set) before frame `switch_at`; pushes EOS at the
 * end. Frames leave asynchronously: checks they all leave, in order, unchanged,
 * with the EOS after them, and returns the n records in order (g_strfreev). */
static gchar **
run_frames (const gchar * props, const gchar * caps, const gchar * caps2,
    guint switch_at, guint n)
{
  gchar *model = data_path ("fixtures/tiny-a.json");
  gchar *ckpt = data_path ("fixtures/tiny-a/tiny-a.pth.tar");
  gchar *desc = g_strdup_printf ("gpunetclassify model=\"%s\" "
      "checkpoint=\"%s\" %s", model, ckpt, props);
  GstHarness *h = gst_harness_new_parse (desc);
  FrameCopy *copies = g_new0 (FrameCopy, n);
  gchar **recs = g_new0 (gchar *, n + 1);
  GstEvent *ev;
  guint i;

  gst_harness_set_live (h, FALSE);
  gst_harness_set_src_caps_str (h, caps);
  for (i = 0; i < n; i++) {
    const gchar *c = caps2 && i >= switch_at ? caps2 : caps;
    GstBuffer *in;

    if (caps2 && i == switch_at)
      gst_harness_set_src_caps_str (h, caps2);
    in = make_frame (h, c, i * 5 + 3);
    frame_copy_of (&copies[i], in);
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  }
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  for (i = 0; i < n; i++) {
    GstBuffer *out = gst_harness_pull (h);

    fail_unless (out != NULL, "frame %u did not leave", i);
    recs[i] = check_copy (&copies[i], out);
    gst_buffer_unref (out);
  }
  /* EOS leaves after every frame */
  while ((ev = gst_harness_pull_event (h)) != NULL
      && GST_EVENT_TYPE (ev) != GST_EVENT_EOS)
    gst_event_unref (ev);
  fail_unless (ev != NULL, "no EOS");
  gst_event_unref (ev);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  gst_harness_teardown (h);
  g_free (copies);
  g_free (desc);
  g_free (model);
  g_free (ckpt);
  return recs;
}

/* Records "id:score,...;inferred" agree: same ids in the same order, same inferred flag,
 * scores within 1e-4 (a batch may run other kernels than a single frame, e.g. Winograd,
 * so the last bits of a score can differ; classes whose scores round to 0 may swap). */
static void
check_same_records (gchar ** a, gchar ** b, guint n)
{
  guint i;

  for (i = 0; i < n; i++) {
    const gchar *pa = a[i], *pb = b[i];

    GST_INFO ("frame %u: %s / %s", i, a[i], b[i]);
    while (*pa != ';' && *pb != ';' && *pa && *pb) {
      gchar *ea, *eb;
      glong ia = strtol (pa, &ea, 10), ib = strtol (pb, &eb, 10);
      gdouble sa, sb;

      fail_unless (*ea == ':' && *eb == ':', "frame %u: %s vs %s", i, a[i], b[i]);
      sa = g_ascii_strtod (ea + 1, &ea);
      sb = g_ascii_strtod (eb + 1, &eb);
      fail_unless (fabs (sa - sb) <= 1e-4, "frame %u: %s vs %s", i, a[i], b[i]);
      /* near-equal scores may come in either order */
      fail_unless (ia == ib || sa <= 1e-4, "frame %u: %s vs %s", i, a[i], b[i]);
      fail_unless (*ea == ',' && *eb == ',', "frame %u: %s vs %s", i, a[i], b[i]);
      pa = ea + 1;
      pb = eb + 1;
    }
    fail_unless_equals_string (pa, pb);   /* ";inferred" */
  }
}

GST_START_TEST (test_batch)
{
  const gchar *caps = "video/x-raw,format=RGBx,width=40,height=30";
  gchar **one = run_frames ("", caps, NULL, 0, 10);
  gchar **four = run_frames ("batch-size=4 batch-timeout=20000", caps, NULL, 0, 10);
  guint i, distinct = 0;

  /* varied frames: the records differ, and batching changes none of them */
  for (i = 1; i < 10; i++)
    distinct += g_strcmp0 (one[i], one[0]) != 0;
  fail_unless (distinct > 0, "all frames gave the same record");
  check_same_records (one, four, 10);
  g_strfreev (one);
  g_strfreev (four);

  /* a batch of 1 frame */
  one = run_frames ("", caps, NULL, 0, 1);
  four = run_frames ("batch-size=64 batch-timeout=1000 max-in-flight=16",
      caps, NULL, 0, 1);
  check_same_records (one, four, 1);
  g_strfreev (one);
  g_strfreev (four);
}

GST_END_TEST;

/* passes-in-flight: two passes at once give every frame its record of one pass at a
 * time, in order (the engine completes requests in submission order) */
GST_START_TEST (test_passes_in_flight)
{
  const gchar *caps = "video/x-raw,format=RGBx,width=40,height=30";
  gchar **one = run_frames ("batch-size=2", caps, NULL, 0, 12);
  gchar **two = run_frames ("batch-size=2 passes-in-flight=2 max-in-flight=8", caps,
      NULL, 0, 12);
  gchar **three = run_frames ("passes-in-flight=3 max-in-flight=6 share-engine=false",
      caps, NULL, 0, 12);

  check_same_records (one, two, 12);
  check_same_records (one, three, 12);
  g_strfreev (one);
  g_strfreev (two);
  g_strfreev (three);
}

GST_END_TEST;

/* batch-size larger than this element can ever have in flight, with the longest
 * batch-timeout: the element tells the engine when it is blocked on max-in-flight (or
 * at EOS), so passes do not wait the 10 s for frames that cannot come (before: 10 s a
 * frame). */
GST_START_TEST (test_batch_cannot_fill)
{
  const gchar *caps = "video/x-raw,format=RGBx,width=40,height=30";
  GstHarness *h = harness_for (make_classify (TINY_A, "batch-size", "8",
          "batch-timeout", "10000000", "max-in-flight", "1", "share-engine",
          "false", NULL), caps);
  gint64 t0 = g_get_monotonic_time ();
  guint i;

  for (i = 0; i < 4; i++)
    fail_unless_equals_int (gst_harness_push (h, make_frame (h, caps, i)),
        GST_FLOW_OK);
  /* the last frame has no successor to block on: EOS lets it run */
  fail_unless (gst_harness_push_event (h, gst_event_new_eos ()));
  for (i = 0; i < 4; i++) {
    GstBuffer *out = gst_harness_pull (h);

    fail_unless (out != NULL);
    check_record (out_record (out), TRUE);
    gst_buffer_unref (out);
  }
  /* four frames, each of which would have waited out the 10 s timeout */
  fail_unless (g_get_monotonic_time () - t0 < 8 * G_USEC_PER_SEC,
      "4 frames took %.1f s", (g_get_monotonic_time () - t0) / 1e6);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_batch_caps_change)
{
  const gchar *a = "video/x-raw,format=RGB,width=96,height=96";
  const gchar *b = "video/x-raw,format=NV12,width=33,height=18";
  gchar **one = run_frames ("", a, b, 6, 9);
  gchar **four = run_frames ("batch-size=4 batch-timeout=20000", a, b, 6, 9);

  check_same_records (one, four, 9);
  g_strfreev (one);
  g_strfreev (four);
}

GST_END_TEST;

GST_START_TEST (test_batch_interval)
{
  const gchar *caps = "video/x-raw,format=I420,width=40,height=30";
  gchar **one = run_frames ("interval=2", caps, NULL, 0, 11);
  gchar **four = run_frames ("interval=2 batch-size=4 batch-timeout=20000",
      caps, NULL, 0, 11);
  gchar **three = run_frames ("interval=4 batch-size=3 max-in-flight=1", caps,
      NULL, 0, 11);
  guint i;

  check_same_records (one, four, 11);
  for (i = 0; i < 11; i++) {
    gchar *want = g_strdup_printf (";%d", i % 3 == 0);

    fail_unless (g_str_has_suffix (four[i], want), "frame %u: %s", i, four[i]);
    g_free (want);
    want = g_strdup_printf (";%d", i % 5 == 0);
    fail_unless (g_str_has_suffix (three[i], want), "frame %u: %s", i,
        three[i]);
    g_free (want);
  }
  g_strfreev (one);
  g_strfreev (four);
  g_strfreev (three);
}

GST_END_TEST;

/* A flush drops the frames waiting in the engine (a 10 s batch timeout keeps
 * two frames there; the leaks tracer checks they are freed) and the next frame
 * is classified afresh. */
GST_START_TEST (test_batch_flush)
{
  const gchar *caps = "video/x-raw,format=BGRx,width=24,height=16";
  gchar *model = data_path ("fixtures/tiny-a.json");
  gchar *ckpt = data_path ("fixtures/tiny-a/tiny-a.pth.tar");
  gchar *desc = g_strdup_printf ("gpunetclassify model=\"%s\" "
      "checkpoint=\"%s\" batch-size=3 batch-timeout=10000000 interval=10",
      model, ckpt);
  GstHarness *h = gst_harness_new_parse (desc);
  GstSegment segment;
  GstElement *el;
  GstBuffer *out;
  guint i, bs = 0;

  el = gst_harness_find_element (h, "gpunetclassify");
  g_object_get (el, "batch-size", &bs, NULL);
  gst_object_unref (el);
  fail_unless_equals_int (bs, 3);
  gst_harness_set_live (h, FALSE);
  gst_harness_set_src_caps_str (h, caps);
  /* frame 0 is classified (it waits for a batch); frame 1 carries its result
   * and waits behind it */
  for (i = 0; i < 2; i++)
    fail_unless_equals_int (gst_harness_push (h, make_frame (h, caps, i)),
        GST_FLOW_OK);
  g_usleep (100000);
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_start ()));
  fail_unless (gst_harness_push_event (h, gst_event_new_flush_stop (TRUE)));
  fail_unless_equals_int (gst_harness_buffers_in_queue (h), 0);
  gst_segment_init (&segment, GST_FORMAT_TIME);
  fail_unless (gst_harness_push_event (h, gst_event_new_segment (&segment)));
  /* three classified frames fill a batch: no waiting */
  el = gst_harness_find_element (h, "gpunetclassify");
  g_object_set (el, "interval", 0, NULL);
  gst_object_unref (el);
  for (i = 0; i < 3; i++)
    fail_unless_equals_int (gst_harness_push (h, make_frame (h, caps, i)),
        GST_FLOW_OK);
  for (i = 0; i < 3; i++) {
    out = gst_harness_pull (h);
    fail_unless (out != NULL);
    check_record (out_record (out), TRUE);
    gst_buffer_unref (out);
  }
  /* stop with a frame in the engine */
  fail_unless_equals_int (gst_harness_push (h, make_frame (h, caps, 9)),
      GST_FLOW_OK);
  gst_harness_teardown (h);
  g_free (desc);
  g_free (model);
  g_free (ckpt);
}

GST_END_TEST;

/* ---- regions: roi-mode, roi-types ------------------------------------------------ */

/* One region meta a test puts on a buffer. */
typedef struct
{
  const gchar *type;
  gint id;
  guint x, y, w, h;
} TestRoi;

static void
add_rois (GstBuffer * buf, const TestRoi * rois, guint n)
{
  guint i;

  for (i = 0; i < n; i++) {
    GstVideoRegionOfInterestMeta *m =
        gst_buffer_add_video_region_of_interest_meta (buf, rois[i].type,
        rois[i].x, rois[i].y, rois[i].w, rois[i].h);

    fail_unless (m != NULL);
    m->id = rois[i].id;
  }
}

/* How many classification records `roi` carries; the first in *first. */
static guint
roi_records (GstVideoRegionOfInterestMeta * roi, const GstStructure ** first)
{
  GList *l;
  guint n = 0;

  *first = NULL;
  for (l = roi->params; l != NULL; l = l->next) {
    if (gst_structure_has_name (l->data, GPUNET_META_NAME)) {
      if (n == 0)
        *first = l->data;
      n++;
    }
  }
  return n;
}

/* The classification record of the region meta with id `id` (exactly one). */
static const GstStructure *
roi_record (GstBuffer * buf, gint id)
{
  GstVideoRegionOfInterestMeta *roi =
      gst_buffer_get_video_region_of_interest_meta_id (buf, id);
  const GstStructure *s;

  fail_unless (roi != NULL, "no region %d", id);
  fail_unless_equals_int (roi_records (roi, &s), 1);
  return s;
}

/* A new buffer holding the x, y, w x h rectangle of the frame `in` as a frame of
 * its own (same format and colorimetry); its caps in *caps_str. */
static GstBuffer *
cut_out (GstBuffer * in, const GstVideoInfo * in_info, gint x, gint y, gint w,
    gint h, gchar ** caps_str)
{
  GstVideoInfo info;
  GstVideoFrame src, dst;
  GstBuffer *out;
  GstCaps *caps;
  guint p;

  gst_video_info_set_format (&info, GST_VIDEO_INFO_FORMAT (in_info), w, h);
  info.colorimetry = in_info->colorimetry;
  caps = gst_video_info_to_caps (&info);
  *caps_str = gst_caps_to_string (caps);
  gst_caps_unref (caps);

  out = gst_buffer_new_allocate (NULL, GST_VIDEO_INFO_SIZE (&info), NULL);
  gst_buffer_memset (out, 0, 0, GST_VIDEO_INFO_SIZE (&info));   /* padding */
  fail_unless (gst_video_frame_map (&src, (GstVideoInfo *) in_info, in,
          GST_MAP_READ));
  fail_unless (gst_video_frame_map (&dst, &info, out, GST_MAP_WRITE));
  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (&dst); p++) {
    gint comp[GST_VIDEO_MAX_COMPONENTS], c, ps, rows, row_bytes, r;
    const guint8 *sp;
    guint8 *dp = GST_VIDEO_FRAME_PLANE_DATA (&dst, p);

    gst_video_format_info_component (info.finfo, p, comp);
    c = comp[0];
    ps = GST_VIDEO_FRAME_COMP_PSTRIDE (&dst, c);
    rows = GST_VIDEO_FRAME_COMP_HEIGHT (&dst, c);
    row_bytes = GST_VIDEO_FRAME_COMP_WIDTH (&dst, c) * ps;
    sp = (const guint8 *) GST_VIDEO_FRAME_PLANE_DATA (&src, p)
        + (y >> GST_VIDEO_FORMAT_INFO_H_SUB (info.finfo, c))
        * GST_VIDEO_FRAME_PLANE_STRIDE (&src, p)
        + (x >> GST_VIDEO_FORMAT_INFO_W_SUB (info.finfo, c)) * ps;
    for (r = 0; r < rows; r++)
      memcpy (dp + r * GST_VIDEO_FRAME_PLANE_STRIDE (&dst, p),
          sp + r * GST_VIDEO_FRAME_PLANE_STRIDE (&src, p), row_bytes);
  }
  gst_video_frame_unmap (&dst);
  gst_video_frame_unmap (&src);
  GST_BUFFER_PTS (out) = GST_BUFFER_PTS (in);
  return out;
}

/* Two records of the same picture agree: top-1 and ids equal, scores and
 * confidence within `tol`. */
static void
check_same_result (const GstStructure * a, const GstStructure * b,
    gdouble tol)
{
  guint i, n = gpunet_meta_n_results (a);

  fail_unless_equals_int (gpunet_meta_label_id (a), gpunet_meta_label_id (b));
  fail_unless (fabs (gpunet_meta_confidence (a) - gpunet_meta_confidence (b))
      <= tol, "confidence %.9f vs %.9f", gpunet_meta_confidence (a),
      gpunet_meta_confidence (b));
  fail_unless_equals_int (n, gpunet_meta_n_results (b));
  for (i = 0; i < n; i++) {
    fail_unless_equals_int (gpunet_meta_nth_id (a, i), gpunet_meta_nth_id (b,
            i));
    fail_unless (fabs (gpunet_meta_nth_score (a, i) -
            gpunet_meta_nth_score (b, i)) <= tol, "score %u: %.9f vs %.9f", i,
        gpunet_meta_nth_score (a, i), gpunet_meta_nth_score (b, i));
  }
}

#define ROI_W 45
#define ROI_H 37

/* On a 45x37 frame: two regions classified, the others filtered out by type,
 * empty or outside the frame. */
static const TestRoi test_rois[] = {
  {"object", 7, 3, 5, 20, 17},  /* inside, odd origin */
  {"face", 5, 10, 10, 16, 16},  /* not in roi-types */
  {"object", 11, 30, 20, 40, 40},       /* partly outside: clipped to 15x17 */
  {"object", 13, 8, 8, 0, 12},  /* empty */
  {"car", 17, 200, 100, 10, 10},        /* outside the frame */
};

static void
check_regions (const gchar * format)
{
  gchar *caps = g_strdup_printf ("video/x-raw,format=%s,width=%d,height=%d,"
      "framerate=30/1", format, ROI_W, ROI_H);
  gboolean yuv420 = !g_strcmp0 (format, "NV12") || !g_strcmp0 (format, "I420");
  /* the classified crops: for 4:2:0 the origin rounded down to even */
  const gint expect[2][5] = {
    {7, yuv420 ? 2 : 3, yuv420 ? 4 : 5, yuv420 ? 21 : 20, yuv420 ? 18 : 17},
    {11, 30, 20, ROI_W - 30, ROI_H - 20},
  };
  GstHarness *h;
  GstBuffer *in, *out;
  GstVideoInfo info;
  GstCaps *c;
  guint i;

  GST_INFO ("%s", caps);
  c = gst_caps_from_string (caps);
  fail_unless (gst_video_info_from_caps (&info, c));
  gst_caps_unref (c);

  /* regions: a record on each selected region, none on the frame */
  h = harness_for (make_classify (TINY_A, "roi-mode", "regions", "roi-types",
          " object, car ,", NULL), caps);
  in = make_frame (h, caps, 4);
  add_rois (in, test_rois, G_N_ELEMENTS (test_rois));
  out = push_and_check_passthrough (h, in);
  fail_unless (gpunet_meta_get (out) == NULL, "a frame record with "
      "roi-mode=regions");
  for (i = 0; i < G_N_ELEMENTS (test_rois); i++) {
    GstVideoRegionOfInterestMeta *roi =
        gst_buffer_get_video_region_of_interest_meta_id (out, test_rois[i].id);
    const GstStructure *s;
    gboolean selected = test_rois[i].id == 7 || test_rois[i].id == 11;

    fail_unless (roi != NULL);
    fail_unless_equals_int (roi_records (roi, &s), selected ? 1 : 0);
    if (selected)
      fail_unless_equals_int (check_record_roi (s, TRUE, test_rois[i].id), 5);
  }

  /* each region's result is the one of its crop cut out as a frame of its own:
   * the crop's plane offsets are right */
  for (i = 0; i < G_N_ELEMENTS (expect); i++) {
    gchar *crop_caps = NULL;
    GstBuffer *crop = cut_out (out, &info, expect[i][1], expect[i][2],
        expect[i][3], expect[i][4], &crop_caps);
    GstHarness *h2 = harness_for (make_classify (TINY_A, NULL), crop_caps);
    GstBuffer *crop_out = push_and_check_passthrough (h2, crop);

    GST_INFO ("region %d as %s", expect[i][0], crop_caps);
    check_same_result (roi_record (out, expect[i][0]), out_record (crop_out),
        1e-6);
    gst_buffer_unref (crop_out);
    gst_harness_teardown (h2);
    g_free (crop_caps);
  }
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  /* both: the frame record too; frame (the default): only the frame's */
  h = harness_for (make_classify (TINY_A, "roi-mode", "both", "roi-types",
          "object,car", NULL), caps);
  in = make_frame (h, caps, 4);
  add_rois (in, test_rois, G_N_ELEMENTS (test_rois));
  out = push_and_check_passthrough (h, in);
  check_record (out_record (out), TRUE);
  check_record_roi (roi_record (out, 7), TRUE, 7);
  check_record_roi (roi_record (out, 11), TRUE, 11);
  gst_buffer_unref (out);
  gst_harness_teardown (h);

  h = harness_for (make_classify (TINY_A, NULL), caps);
  in = make_frame (h, caps, 4);
  add_rois (in, test_rois, G_N_ELEMENTS (test_rois));
  out = push_and_check_passthrough (h, in);
  check_record (out_record (out), TRUE);
  for (i = 0; i < G_N_ELEMENTS (test_rois); i++) {
    const GstStructure *s;

    fail_unless_equals_int (roi_records
        (gst_buffer_get_video_region_of_interest_meta_id (out,
                test_rois[i].id), &s), 0);
  }
  gst_buffer_unref (out);
  gst_harness_teardown (h);
  g_free (caps);
}

GST_START_TEST (test_regions_rgba)
{
  check_regions ("RGBA");
}

GST_END_TEST;

GST_START_TEST (test_regions_nv12)
{
  check_regions ("NV12");
}

GST_END_TEST;

GST_START_TEST (test_regions_other_formats)
{
  check_regions ("I420");
  check_regions ("BGR");
}

GST_END_TEST;

/* The records of every region of `buf`, in meta order, as "id;inferred;rest"
 * strings (g_strfreev). */
static gchar **
region_records (GstBuffer * buf)
{
  GPtrArray *recs = g_ptr_array_new ();
  gpointer state = NULL;
  GstMeta *meta;

  while ((meta = gst_buffer_iterate_meta_filtered (buf, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE)) != NULL) {
    GstVideoRegionOfInterestMeta *roi = (GstVideoRegionOfInterestMeta *) meta;
    const GstStructure *s;
    GstStructure *copy;
    gboolean inferred = FALSE;
    gchar *rest;

    fail_unless_equals_int (roi_records (roi, &s), 1);
    fail_unless (gst_structure_get_boolean (s, "inferred", &inferred));
    check_record_roi (s, inferred, roi->id);
    copy = gst_structure_copy (s);
    gst_structure_remove_field (copy, "inferred");
    rest = gst_structure_to_string (copy);
    g_ptr_array_add (recs, g_strdup_printf ("%d;%d;%s", roi->id, inferred,
            rest));
    g_free (rest);
    gst_structure_free (copy);
  }
  g_ptr_array_add (recs, NULL);
  return (gchar **) g_ptr_array_free (recs, FALSE);
}

/* interval: a region's result is carried by roi-id; a new id, or an id two
 * regions share, is classified on the frame it appears on. */
GST_START_TEST (test_regions_interval)
{
  const gchar *caps = "video/x-raw,format=RGBx,width=40,height=30";
  static const TestRoi rois[] = {
    {"object", 1, 0, 0, 20, 20},
    {"object", 2, 10, 5, 24, 20},
    {"object", 9, 4, 4, 12, 12},
    {"object", 9, 20, 10, 16, 16},
    {"object", 3, 5, 15, 30, 15},       /* from frame 1 on */
  };
  /* inferred per frame and region: frames 0..3, interval 2 */
  static const gchar *expect[] = {
    "1;1 2;1 9;1 9;1",
    "1;0 2;0 9;1 9;1 3;1",
    "1;0 2;0 9;1 9;1 3;0",
    "1;1 2;1 9;1 9;1 3;1",
  };
  GstHarness *h = harness_for (make_classify (TINY_A, "roi-mode", "regions",
          "interval", "2", NULL), caps);
  gchar **first = NULL;
  guint f, i;

  for (f = 0; f < G_N_ELEMENTS (expect); f++) {
    GstBuffer *in = make_frame (h, caps, f * 3 + 1), *out;
    GString *got = g_string_new (NULL);
    gchar **recs;

    add_rois (in, rois, f == 0 ? 4 : 5);
    out = push_and_check_passthrough (h, in);
    fail_unless (gpunet_meta_get (out) == NULL);
    recs = region_records (out);
    for (i = 0; recs[i] != NULL; i++) {
      gchar **parts = g_strsplit (recs[i], ";", 3);

      g_string_append_printf (got, "%s%s;%s", i ? " " : "", parts[0],
          parts[1]);
      /* carried: the record of frame 0 but for `inferred` */
      if (f > 0 && i < 2 && parts[1][0] == '0') {
        gchar **p0 = g_strsplit (first[i], ";", 3);

        fail_unless_equals_string (parts[2], p0[2]);
        g_strfreev (p0);
      }
      g_strfreev (parts);
    }
    fail_unless_equals_string (got->str, expect[f]);
    g_string_free (got, TRUE);
    if (f == 0)
      first = recs;
    else
      g_strfreev (recs);
    gst_buffer_unref (out);
  }
  g_strfreev (first);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* post-messages: one message per record, with its roi-id. */
GST_START_TEST (test_regions_messages)
{
  const gchar *caps = "video/x-raw,format=NV12,width=45,height=37";
  GstHarness *h = harness_for (make_classify (TINY_A, "roi-mode", "both",
          "roi-types", "object,car", "post-messages", "true", NULL), caps);
  GstBus *bus = gst_bus_new ();
  static const gint expect_ids[] = { -1, 7, 11 };
  GstBuffer *in, *out;
  GstMessage *msg;
  guint n = 0;

  gst_element_set_bus (h->element, bus);
  in = make_frame (h, caps, 2);
  add_rois (in, test_rois, G_N_ELEMENTS (test_rois));
  out = push_and_check_passthrough (h, in);
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)) != NULL) {
    const GstStructure *s = gst_message_get_structure (msg);
    guint64 frame;

    if (gst_structure_has_name (s, GPUNET_MESSAGE_NAME)) {
      fail_unless (n < G_N_ELEMENTS (expect_ids));
      check_record_roi (s, TRUE, expect_ids[n]);
      fail_unless (gst_structure_get_uint64 (s, "frame", &frame));
      fail_unless_equals_uint64 (frame, 0);
      n++;
    }
    gst_message_unref (msg);
  }
  fail_unless_equals_int (n, G_N_ELEMENTS (expect_ids));
  gst_buffer_unref (out);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* batch-size: crops of one size share an engine call, with the results of one
 * call per crop; roi-mode=regions holds no frame back, both does. */
GST_START_TEST (test_regions_batch)
{
  const gchar *caps = "video/x-raw,format=I420,width=48,height=40";
  static const TestRoi rois[] = {
    {"object", 1, 0, 0, 16, 16},
    {"object", 2, 20, 10, 16, 16},
    {"object", 3, 2, 20, 30, 18},
    {"object", 4, 30, 22, 16, 16},
  };
  GstHarness *one = harness_for (make_classify (TINY_A, "roi-mode", "both",
          NULL), caps);
  GstHarness *four = harness_for (make_classify (TINY_A, "roi-mode",
          "regions", "batch-size", "4", NULL), caps);
  GstHarness *three = harness_for (make_classify (TINY_A, "roi-mode", "both",
          "batch-size", "3", NULL), caps);
  GstBuffer *ref[3], *out;
  guint f, i;

  for (f = 0; f < 3; f++) {
    GstBuffer *in = make_frame (one, caps, f + 7);

    add_rois (in, rois, G_N_ELEMENTS (rois));
    ref[f] = push_and_check_passthrough (one, in);

    in = make_frame (four, caps, f + 7);
    add_rois (in, rois, G_N_ELEMENTS (rois));
    out = push_and_check_passthrough (four, in);
    fail_unless (gpunet_meta_get (out) == NULL);
    for (i = 0; i < G_N_ELEMENTS (rois); i++)
      check_same_result (roi_record (out, rois[i].id), roi_record (ref[f],
              rois[i].id), 1e-4);
    gst_buffer_unref (out);

    in = make_frame (three, caps, f + 7);
    add_rois (in, rois, G_N_ELEMENTS (rois));
    fail_unless_equals_int (gst_harness_push (three, in), GST_FLOW_OK);
  }
  /* the 3 frames leave in order, each with all its records */
  for (f = 0; f < 3; f++) {
    out = gst_harness_pull (three);
    check_same_result (out_record (out), out_record (ref[f]), 1e-4);
    for (i = 0; i < G_N_ELEMENTS (rois); i++)
      check_same_result (roi_record (out, rois[i].id), roi_record (ref[f],
              rois[i].id), 1e-4);
    gst_buffer_unref (out);
    gst_buffer_unref (ref[f]);
  }
  gst_harness_teardown (one);
  gst_harness_teardown (four);
  gst_harness_teardown (three);
}

GST_END_TEST;

/* roi-types without roi-mode regions/both is a mistake worth a warning. */
GST_START_TEST (test_regions_types_warning)
{
  GstElement *el = make_classify (TINY_A, "roi-types", "face", NULL);
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  GError *err = NULL;

  gst_element_set_bus (el, bus);
  fail_unless (gst_element_set_state (el, GST_STATE_PAUSED) !=
      GST_STATE_CHANGE_FAILURE);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING);
  fail_unless (msg != NULL, "no warning");
  gst_message_parse_warning (msg, &err, NULL);
  assert_contains (err->message, "roi-mode=regions");
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_state (el, GST_STATE_NULL);
  gst_element_set_bus (el, NULL);
  gst_object_unref (bus);
  gst_object_unref (el);
}

GST_END_TEST;

/* ---- json-output ------------------------------------------------------------------- */

static const gchar *json_labels[] = {
  "say \"hi\"", "back\\slash", "tab\there", "caf\xc3\xa9 \xe2\x9c\x93",
  "bell\x07", "quote\"and\\both", "unit\x1fseparator",
};

/* The label of class `id` in the labels file of test_json_output. */
static gchar *
json_label (gint id)
{
  if (id < (gint) G_N_ELEMENTS (json_labels))
    return g_strdup (json_labels[id]);
  return g_strdup_printf ("label %d", id);
}

/* Element i of an array node (failing the test when there is none). */
static JsonNode *
json_item (JsonNode * v, guint i)
{
  fail_unless (v && JSON_NODE_HOLDS_ARRAY (v));
  fail_unless (i < json_array_get_length (json_node_get_array (v)));
  return json_array_get_element (json_node_get_array (v), i);
}

/* One parsed JSON line agrees with record `s` of a buffer with `pts`. */
static void
check_json_record (JsonNode * j, const GstStructure * s,
    GstClockTime pts, guint64 frame)
{
  JsonNode *v;
  gboolean inferred;
  guint i, n = gpunet_meta_n_results (s);

  fail_unless (j != NULL && JSON_NODE_HOLDS_OBJECT (j));
  fail_unless_equals_int (json_object_get_size (json_node_get_object (j)), 12);
  v = gpunet_json_get (j, "pts");
  if (GST_CLOCK_TIME_IS_VALID (pts)) {
    fail_unless (gpunet_json_value_type (v) == G_TYPE_INT64);
    fail_unless_equals_uint64 ((guint64) json_node_get_int (v), pts);
  } else {
    fail_unless (v && JSON_NODE_HOLDS_NULL (v));
  }
  v = gpunet_json_get (j, "frame");
  fail_unless (gpunet_json_value_type (v) == G_TYPE_INT64);
  fail_unless_equals_uint64 ((guint64) json_node_get_int (v), frame);
  v = gpunet_json_get (j, "roi-id");
  fail_unless (gpunet_json_value_type (v) == G_TYPE_INT64);
  fail_unless_equals_int ((gint) json_node_get_int (v), gpunet_meta_roi_id (s));
  v = gpunet_json_get (j, "model");
  fail_unless (gpunet_json_value_type (v) == G_TYPE_STRING);
  fail_unless_equals_string (json_node_get_string (v),
      gst_structure_get_string (s, "model"));
  v = gpunet_json_get (j, "precision");
  fail_unless (gpunet_json_value_type (v) == G_TYPE_STRING);
  fail_unless_equals_string (json_node_get_string (v),
      gst_structure_get_string (s, "precision"));
  v = gpunet_json_get (j, "label");
  fail_unless (gpunet_json_value_type (v) == G_TYPE_STRING);
  fail_unless_equals_string (json_node_get_string (v), gpunet_meta_label (s));
  v = gpunet_json_get (j, "label-id");
  fail_unless (gpunet_json_value_type (v) == G_TYPE_INT64);
  fail_unless_equals_int ((gint) json_node_get_int (v),
      gpunet_meta_label_id (s));
  v = gpunet_json_get (j, "confidence");
  fail_unless (gpunet_json_is_number (v));
  fail_unless (fabs (json_node_get_double (v) - gpunet_meta_confidence (s)) <=
      1e-7);
  v = gpunet_json_get (j, "inferred");
  fail_unless (gpunet_json_value_type (v) == G_TYPE_BOOLEAN);
  fail_unless (gst_structure_get_boolean (s, "inferred", &inferred));
  fail_unless_equals_int (json_node_get_boolean (v), inferred);

  v = gpunet_json_get (j, "ids");
  fail_unless (v && JSON_NODE_HOLDS_ARRAY (v));
  fail_unless_equals_int (json_array_get_length (json_node_get_array (v)), n);
  for (i = 0; i < n; i++)
    fail_unless_equals_int ((gint) json_node_get_int (json_item (v, i)),
        gpunet_meta_nth_id (s, i));
  v = gpunet_json_get (j, "labels");
  fail_unless (v && JSON_NODE_HOLDS_ARRAY (v));
  fail_unless_equals_int (json_array_get_length (json_node_get_array (v)), n);
  for (i = 0; i < n; i++) {
    gchar *want = json_label (gpunet_meta_nth_id (s, i));

    fail_unless (gpunet_json_value_type (json_item (v, i)) == G_TYPE_STRING);
    fail_unless_equals_string (json_node_get_string (json_item (v, i)), want);
    fail_unless_equals_string (json_node_get_string (json_item (v, i)),
        gpunet_meta_nth_label (s, i));
    g_free (want);
  }
  v = gpunet_json_get (j, "scores");
  fail_unless (v && JSON_NODE_HOLDS_ARRAY (v));
  fail_unless_equals_int (json_array_get_length (json_node_get_array (v)), n);
  for (i = 0; i < n; i++)
    fail_unless (fabs (json_node_get_double (json_item (v, i)) -
            gpunet_meta_nth_score (s, i)) <= 1e-7);
}

GST_START_TEST (test_json_output)
{
  const gchar *caps = "video/x-raw,format=NV12,width=45,height=37";
  GString *labels = g_string_new (NULL);
  gchar *labels_path = NULL, *json_path = NULL, *text = NULL;
  GPtrArray *records = g_ptr_array_new_with_free_func ((GDestroyNotify)
      gst_structure_free);
  GArray *pts = g_array_new (FALSE, FALSE, sizeof (GstClockTime));
  GArray *frames = g_array_new (FALSE, FALSE, sizeof (guint64));
  gchar **lines;
  GstHarness *h;
  gint fd, i;
  guint f, n_lines;
  gsize len;

  for (i = 0; i < NUM_CLASSES; i++) {
    gchar *l = json_label (i);

    g_string_append_printf (labels, "%s\n", l);
    g_free (l);
  }
  fd = g_file_open_tmp ("gpunet-labels-XXXXXX.txt", &labels_path, NULL);
  fail_unless (fd >= 0);
  close (fd);
  fail_unless (g_file_set_contents (labels_path, labels->str, -1, NULL));
  fd = g_file_open_tmp ("gpunet-json-XXXXXX.jsonl", &json_path, NULL);
  fail_unless (fd >= 0);
  close (fd);

  /* every label listed in every record: all of them get escaped */
  h = harness_for (make_classify (TINY_A, "roi-mode", "both", "roi-types",
          "object,car", "top-k", "16", "interval", "1", "labels", labels_path,
          "json-output", json_path, NULL), caps);
  for (f = 0; f < 4; f++) {
    GstBuffer *in = make_frame (h, caps, f), *out;
    GstClockTime t;
    guint64 frame = f;

    if (f == 2)
      GST_BUFFER_PTS (in) = GST_CLOCK_TIME_NONE;
    t = GST_BUFFER_PTS (in);
    add_rois (in, test_rois, G_N_ELEMENTS (test_rois));
    out = push_and_check_passthrough (h, in);
    /* the file is flushed after each buffer */
    fail_unless (g_file_get_contents (json_path, &text, &len, NULL));
    fail_unless_equals_int (g_strv_length (lines = g_strsplit (text, "\n",
                -1)), 3 * (f + 1) + 1);
    g_strfreev (lines);
    g_free (text);
    g_ptr_array_add (records, gst_structure_copy (out_record (out)));
    g_ptr_array_add (records, gst_structure_copy (roi_record (out, 7)));
    g_ptr_array_add (records, gst_structure_copy (roi_record (out, 11)));
    for (i = 0; i < 3; i++) {
      g_array_append_val (pts, t);
      g_array_append_val (frames, frame);
    }
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);

  fail_unless (g_file_get_contents (json_path, &text, &len, NULL));
  /* escaped as JSON wants it, UTF-8 as it is */
  {
    static const gchar *escaped[] = {
      "\"say \\\"hi\\\"\"", "\"back\\\\slash\"", "\"tab\\there\"",
      "\"caf\xc3\xa9 \xe2\x9c\x93\"", "\"bell\\u0007\"",
      "\"quote\\\"and\\\\both\"", "\"unit\\u001fseparator\"",
    };

    for (i = 0; i < (gint) G_N_ELEMENTS (escaped); i++)
      fail_unless (strstr (text, escaped[i]) != NULL, "%s not in the file",
          escaped[i]);
  }
  fail_unless (g_str_has_suffix (text, "}\n"));
  lines = g_strsplit (text, "\n", -1);
  n_lines = g_strv_length (lines) - 1;  /* after the final newline */
  fail_unless_equals_int (n_lines, records->len);
  for (f = 0; f < n_lines; f++) {
    JsonNode *j = NULL;
    char *err = NULL;

    GST_LOG ("%s", lines[f]);
    fail_unless (gpunet_json_parse (lines[f], strlen (lines[f]), &j, NULL,
            &err) == GPUNET_OK, "line %u: %s", f, err);
    check_json_record (j, g_ptr_array_index (records, f),
        g_array_index (pts, GstClockTime, f), g_array_index (frames, guint64,
            f));
    json_node_unref (j);
  }
  g_strfreev (lines);
  g_free (text);

  g_unlink (json_path);
  g_unlink (labels_path);
  g_free (json_path);
  g_free (labels_path);
  g_string_free (labels, TRUE);
  g_ptr_array_unref (records);
  g_array_unref (pts);
  g_array_unref (frames);
}

GST_END_TEST;

GST_START_TEST (test_error_json_output)
{
  GQuark domain = 0;
  gchar *text = expect_start_error (make_classify (TINY_A, "json-output",
          "/nonexistent-dir/records.jsonl", NULL), &domain);

  fail_unless (domain == GST_RESOURCE_ERROR);
  assert_contains (text, "/nonexistent-dir/records.jsonl");
  assert_contains (text, g_strerror (ENOENT));
  assert_contains (text, "json-output");
  g_free (text);
}

GST_END_TEST;

/* A write that fails (a full disk: /dev/full) stops the stream with an error. */
GST_START_TEST (test_error_json_write)
{
  const gchar *caps = "video/x-raw,format=RGBA,width=16,height=16";
  GstHarness *h;
  GstBus *bus;
  GstMessage *msg;
  GError *err = NULL;

  if (!g_file_test ("/dev/full", G_FILE_TEST_EXISTS)) {
    GST_INFO ("no /dev/full; skipping");
    return;
  }
  h = harness_for (make_classify (TINY_A, "json-output", "/dev/full", NULL),
      caps);
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  /* the write happens when the frame leaves: a later push returns the error */
  fail_unless_equals_int (gst_harness_push (h, make_frame (h, caps, 1)),
      GST_FLOW_OK);
  msg = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error message posted");
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (err->domain == GST_RESOURCE_ERROR);
  assert_contains (err->message, "/dev/full");
  assert_contains (err->message, g_strerror (ENOSPC));
  g_clear_error (&err);
  gst_message_unref (msg);
  fail_unless_equals_int (gst_harness_push (h, make_frame (h, caps, 2)),
      GST_FLOW_ERROR);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* json-output naming a FIFO that no process reads: opening it for writing used to
 * block the READY -> PAUSED change for good; now a start error that says so.  (The
 * alarm ends the old behaviour's wait.) */
GST_START_TEST (test_error_json_fifo_no_reader)
{
  gchar *dir = g_dir_make_tmp ("gpunet-fifo-XXXXXX", NULL);
  gchar *fifo = g_build_filename (dir, "records.jsonl", NULL);
  gchar *text;

  fail_unless (mkfifo (fifo, 0600) == 0);
  alarm (60);
  text = expect_start_error (make_classify (TINY_A, "json-output", fifo, NULL), NULL);
  alarm (0);
  assert_contains (text, fifo);
  assert_contains (text, "no process reads");
  g_free (text);
  g_unlink (fifo);
  g_rmdir (dir);
  g_free (fifo);
  g_free (dir);
}

GST_END_TEST;

/* json-output to a FIFO whose reader goes away: the write fails with EPIPE and the
 * stream stops with an error; the process is not killed by SIGPIPE (it was). */
GST_START_TEST (test_error_json_fifo_reader_gone)
{
  const gchar *caps = "video/x-raw,format=RGBA,width=16,height=16";
  gchar *dir = g_dir_make_tmp ("gpunet-fifo-XXXXXX", NULL);
  gchar *fifo = g_build_filename (dir, "records.jsonl", NULL);
  GstHarness *h;
  GstBus *bus;
  GstMessage *msg = NULL;
  GError *err = NULL;
  GstFlowReturn ret = GST_FLOW_OK;
  gint rfd, i;
  gchar buf[4096];

  fail_unless (mkfifo (fifo, 0600) == 0);
  rfd = open (fifo, O_RDONLY | O_NONBLOCK);
  fail_unless (rfd >= 0);
  h = harness_for (make_classify (TINY_A, "json-output", fifo, NULL), caps);
  bus = gst_bus_new ();
  gst_element_set_bus (h->element, bus);
  /* a FIFO with a reader works as a file does: the first frame's line arrives */
  fail_unless_equals_int (gst_harness_push (h, make_frame (h, caps, 0)), GST_FLOW_OK);
  gst_buffer_unref (gst_harness_pull (h));
  fail_unless (read (rfd, buf, sizeof buf) > 0);
  close (rfd);
  for (i = 1; i < 20 && ret == GST_FLOW_OK; i++) {
    ret = gst_harness_push (h, make_frame (h, caps, i));
    msg = gst_bus_timed_pop_filtered (bus, 200 * GST_MSECOND, GST_MESSAGE_ERROR);
    if (msg)
      break;
  }
  if (msg == NULL)
    msg = gst_bus_timed_pop_filtered (bus, 10 * GST_SECOND, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error message posted");
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (err->domain == GST_RESOURCE_ERROR);
  assert_contains (err->message, fifo);
  assert_contains (err->message, "reader");
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
  g_unlink (fifo);
  g_rmdir (dir);
  g_free (fifo);
  g_free (dir);
}

GST_END_TEST;

/* ---- fewer classes than the top-k cap (issue 49) ------------------------------------ */

#define MAX_TOP_K 100           /* the top-k property's maximum */

/* `s` lists every class of a `classes`-class model once, as top-k=100 (the
 * cap, more than the model has) asks: each id in range, none twice, the
 * probabilities of the whole softmax summing to 1.  Entries read from past the
 * results would break one of these, and AddressSanitizer reports the read
 * itself. */
static void
check_all_classes (const GstStructure * s, gint classes)
{
  gboolean seen[MAX_TOP_K] = { FALSE };
  gdouble sum = 0.0;
  gint i;

  fail_unless (classes > 0 && classes < MAX_TOP_K);
  fail_unless_equals_int (gpunet_meta_n_results (s), classes);
  for (i = 0; i < classes; i++) {
    gint id = gpunet_meta_nth_id (s, i);

    fail_unless (id >= 0 && id < classes && !seen[id], "entry %d: id %d",
        i, id);
    seen[id] = TRUE;
    sum += gpunet_meta_nth_score (s, i);
  }
  fail_unless (fabs (sum - 1.0) < 1e-4, "the scores sum to %.9g", sum);
}

/* The JSON line `line` lists NUM_CLASSES ids and scores, with roi-id `roi_id`. */
static void
check_json_all_classes (const gchar * line, gint roi_id)
{
  JsonNode *j = NULL, *v;
  char *err = NULL;

  fail_unless (gpunet_json_parse (line, strlen (line), &j, NULL, &err) ==
      GPUNET_OK, "%s: %s", line, err);
  v = gpunet_json_get (j, "roi-id");
  fail_unless (gpunet_json_value_type (v) == G_TYPE_INT64);
  fail_unless_equals_int ((gint) json_node_get_int (v), roi_id);
  v = gpunet_json_get (j, "ids");
  fail_unless (v && JSON_NODE_HOLDS_ARRAY (v));
  fail_unless_equals_int (json_array_get_length (json_node_get_array (v)),
      NUM_CLASSES);
  v = gpunet_json_get (j, "scores");
  fail_unless (v && JSON_NODE_HOLDS_ARRAY (v));
  fail_unless_equals_int (json_array_get_length (json_node_get_array (v)),
      NUM_CLASSES);
  json_node_unref (j);
}

/* Regions (and the frame) of the 16-class fixture with top-k=100, interval=2,
 * with and without smoothing: every record, fresh or carried by roi-id, on the
 * region meta, the frame meta, the bus and in the JSON lines, holds the 16
 * classes the engine returned and nothing more.  One region per frame, so its
 * results are the last (with roi-mode=regions the only) row of the frame's
 * results: the carry cache used to copy 100 entries from it (issue 49). */
GST_START_TEST (test_regions_few_classes)
{
  const gchar *caps = "video/x-raw,format=RGBA,width=40,height=30";
  static const TestRoi roi = { "object", 4, 6, 3, 25, 22 };
  static const gchar *modes[] = { "regions", "both" };
  static const gchar *smoothing[] = { "0", "0.5" };
  static const gboolean inferred[] = { TRUE, FALSE, FALSE, TRUE };
  guint m, sm, f;

  for (m = 0; m < G_N_ELEMENTS (modes); m++) {
    for (sm = 0; sm < G_N_ELEMENTS (smoothing); sm++) {
      gboolean both = m == 1;
      guint per_frame = both ? 2 : 1, n_msgs = 0, i;
      gchar *json_path = NULL, *text = NULL, **lines;
      GstStructure *first_roi = NULL, *first_frame = NULL;
      GstHarness *h;
      GstBus *bus = gst_bus_new ();
      GstMessage *msg;
      gint fd;

      fd = g_file_open_tmp ("gpunet-json-XXXXXX.jsonl", &json_path, NULL);
      fail_unless (fd >= 0);
      close (fd);
      h = harness_for (make_classify (TINY_A, "roi-mode", modes[m], "top-k",
              "100", "interval", "2", "smoothing", smoothing[sm],
              "post-messages", "true", "json-output", json_path, NULL), caps);
      gst_element_set_bus (h->element, bus);
      for (f = 0; f < G_N_ELEMENTS (inferred); f++) {
        GstBuffer *in = make_frame (h, caps, f + 3), *out;
        const GstStructure *s;

        GST_INFO ("roi-mode=%s smoothing=%s frame %u", modes[m],
            smoothing[sm], f);
        add_rois (in, &roi, 1);
        out = push_and_check_passthrough (h, in);
        s = roi_record (out, roi.id);
        check_record_roi (s, inferred[f], roi.id);
        check_all_classes (s, NUM_CLASSES);
        /* carried: the classified frame's record, to the bit */
        if (f == 0)
          first_roi = gst_structure_copy (s);
        else if (!inferred[f])
          check_same_result (s, first_roi, 0.0);
        if (both) {
          s = out_record (out);
          check_record (s, inferred[f]);
          check_all_classes (s, NUM_CLASSES);
          if (f == 0)
            first_frame = gst_structure_copy (s);
          else if (!inferred[f])
            check_same_result (s, first_frame, 0.0);
        } else {
          fail_unless (gpunet_meta_get (out) == NULL);
        }
        gst_buffer_unref (out);
      }
      while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ELEMENT)) != NULL) {
        const GstStructure *s = gst_message_get_structure (msg);

        if (gst_structure_has_name (s, GPUNET_MESSAGE_NAME)) {
          check_all_classes (s, NUM_CLASSES);
          n_msgs++;
        }
        gst_message_unref (msg);
      }
      fail_unless_equals_int (n_msgs, per_frame * G_N_ELEMENTS (inferred));
      gst_element_set_bus (h->element, NULL);
      gst_object_unref (bus);
      gst_harness_teardown (h);

      fail_unless (g_file_get_contents (json_path, &text, NULL, NULL));
      lines = g_strsplit (text, "\n", -1);
      /* after the final newline, one empty string */
      fail_unless_equals_int (g_strv_length (lines),
          per_frame * G_N_ELEMENTS (inferred) + 1);
      for (i = 0; lines[i][0] != '\0'; i++)
        check_json_all_classes (lines[i], both && i % 2 == 0 ? -1 : roi.id);
      g_strfreev (lines);
      g_free (text);
      g_unlink (json_path);
      g_free (json_path);
      gst_structure_free (first_roi);
      if (first_frame)
        gst_structure_free (first_frame);
    }
  }
}

GST_END_TEST;

/* A 10-class model swapped for a 16-class one and back while PLAYING, with
 * roi-mode=both, top-k=100, smoothing and interval=2: every record, fresh or
 * carried, lists exactly the classes of the model that made it.  The region
 * cache and the smoothing tracks hold rows of one model's size; a row kept
 * across the swap would be read past its end (AddressSanitizer) or miss
 * classes. */
/* A swap storm: model and checkpoint set together (one g_object_set) every frame,
 * alternating two models: every record is one whole pair's (name and class count
 * agree), no load ever pairs one model with the other's checkpoint (that would post
 * "Cannot switch"), and the last pair set is the one that stays. */
GST_START_TEST (test_swap_storm)
{
  const gchar *caps = "video/x-raw,format=RGBA,width=40,height=30";
  static const struct
  {
    const gchar *json, *ckpt, *name;
    gint classes;
  } models[] = {
    {"fixtures/tiny-d.json", "fixtures/tiny-d/tiny-d.pth.tar", "tiny-d", 10},
    {"fixtures/tiny-a.json", "fixtures/tiny-a/tiny-a.pth.tar", "tiny-a", 16},
  };
  GstHarness *h = harness_for (make_classify (models[1].json, models[1].ckpt,
          "top-k", "100", NULL), caps);
  GstBus *bus = gst_bus_new ();
  GstMessage *msg;
  guint i, seed = 0, last = 1;

  gst_element_set_bus (h->element, bus);
  for (i = 0; i < 60; i++) {
    GstBuffer *out;
    const GstStructure *rec;
    const gchar *name;
    gint classes = 0, k;

    if (i < 40) {
      gchar *json, *ckpt;

      last = i % 2;
      json = data_path (models[last].json);
      ckpt = data_path (models[last].ckpt);
      g_object_set (h->element, "model", json, "checkpoint", ckpt, NULL);
      g_free (json);
      g_free (ckpt);
    } else {
      g_usleep (10000);         /* the last pair loads */
    }
    out = push_and_check_passthrough (h, make_frame (h, caps, seed++));
    rec = out_record (out);
    name = gst_structure_get_string (rec, "model");
    fail_unless (name != NULL);
    for (k = 0; k < (gint) G_N_ELEMENTS (models); k++)
      if (g_str_equal (name, models[k].name))
        classes = models[k].classes;
    fail_unless (gst_structure_get_int (rec, "num-classes", &k));
    fail_unless_equals_int (k, classes);
    check_all_classes (rec, classes);
    if (i == 59)
      fail_unless_equals_string (name, models[last].name);
    gst_buffer_unref (out);
  }
  while ((msg = gst_bus_pop_filtered (bus, GST_MESSAGE_WARNING)) != NULL) {
    GError *err = NULL;

    gst_message_parse_warning (msg, &err, NULL);
    fail_unless (strstr (err->message, "Cannot switch") == NULL,
        "a swap paired a model with another's checkpoint: %s", err->message);
    g_clear_error (&err);
    gst_message_unref (msg);
  }
  gst_element_set_bus (h->element, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* model set while PLAYING, its notification held (g_object_freeze_notify) until the
 * element has stopped: no load may start then.  A loader started after the stop held
 * the element (and, once loaded, an engine) until the next start; its reference is
 * taken before the thread runs, so the count shows it at once. */
GST_START_TEST (test_swap_after_stop)
{
  const gchar *caps = "video/x-raw,format=RGBA,width=40,height=30";
  GstHarness *h = harness_for (make_classify ("fixtures/tiny-a.json",
          "fixtures/tiny-a/tiny-a.pth.tar", NULL), caps);
  gchar *json = data_path ("fixtures/tiny-d.json");
  gchar *ckpt = data_path ("fixtures/tiny-d/tiny-d.pth.tar");
  gint refs;

  gst_buffer_unref (push_and_check_passthrough (h, make_frame (h, caps, 0)));
  g_object_freeze_notify (G_OBJECT (h->element));
  g_object_set (h->element, "model", json, "checkpoint", ckpt, NULL);
  fail_unless_equals_int (gst_element_set_state (h->element, GST_STATE_NULL),
      GST_STATE_CHANGE_SUCCESS);
  refs = GST_OBJECT_REFCOUNT_VALUE (h->element);
  g_object_thaw_notify (G_OBJECT (h->element));
  fail_unless_equals_int (GST_OBJECT_REFCOUNT_VALUE (h->element), refs);
  g_free (json);
  g_free (ckpt);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_swap_class_counts)
{
  const gchar *caps = "video/x-raw,format=RGBA,width=40,height=30";
  static const TestRoi roi = { "object", 4, 6, 3, 25, 22 };
  static const struct
  {
    const gchar *json, *ckpt, *name;
    gint classes;
  } models[] = {
    {"fixtures/tiny-d.json", "fixtures/tiny-d/tiny-d.pth.tar", "tiny-d", 10},
    {"fixtures/tiny-a.json", "fixtures/tiny-a/tiny-a.pth.tar", "tiny-a", 16},
    {"fixtures/tiny-d.json", "fixtures/tiny-d/tiny-d.pth.tar", "tiny-d", 10},
  };
  /* from the frame that switches: a new interval cycle */
  static const gboolean inferred[] = { TRUE, FALSE, FALSE, TRUE };
  GstHarness *h = harness_for (make_classify (models[0].json, models[0].ckpt,
          "roi-mode", "both", "top-k", "100", "smoothing", "0.5", "interval",
          "2", NULL), caps);
  guint m, seed = 0;

  for (m = 0; m < G_N_ELEMENTS (models); m++) {
    guint after = 0, tries;

    if (m > 0) {
      gchar *json = data_path (models[m].json);
      gchar *ckpt = data_path (models[m].ckpt);

      g_object_set (h->element, "model", json, "checkpoint", ckpt, NULL);
      g_free (json);
      g_free (ckpt);
    }
    /* frames of the old model until the swap, then four of the new one */
    for (tries = 0; after < G_N_ELEMENTS (inferred); tries++) {
      GstBuffer *in = make_frame (h, caps, seed++), *out;
      const GstStructure *recs[2];
      gboolean swapped;
      guint r;

      fail_unless (tries < 400, "never switched to %s", models[m].name);
      add_rois (in, &roi, 1);
      out = push_and_check_passthrough (h, in);
      recs[0] = out_record (out);
      recs[1] = roi_record (out, roi.id);
      swapped = g_strcmp0 (gst_structure_get_string (recs[0], "model"),
          models[m].name) == 0;
      for (r = 0; r < 2; r++) {
        const gchar *model = gst_structure_get_string (recs[r], "model");
        gint classes = 0, k;

        fail_unless (model != NULL);
        for (k = 0; k < (gint) G_N_ELEMENTS (models); k++)
          if (g_str_equal (model, models[k].name))
            classes = models[k].classes;
        fail_unless (classes > 0, "model %s", model);
        fail_unless_equals_string (model, gst_structure_get_string (recs[0],
                "model"));
        fail_unless (gst_structure_get_int (recs[r], "num-classes", &k));
        fail_unless_equals_int (k, classes);
        check_all_classes (recs[r], classes);
        if (swapped)
          fail_unless_equals_int (gpunet_meta_inferred (recs[r]),
              inferred[after]);
      }
      gst_buffer_unref (out);
      if (swapped)
        after++;
      else
        g_usleep (5000);        /* the new model loads beside */
    }
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
gpunetclassify_suite (void)
{
  Suite *s = suite_create ("gpunetclassify");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_formats_and_sizes);
  tcase_add_test (tc, test_golden_stretch);
  tcase_add_test (tc, test_golden_cpu_ref);
  tcase_add_test (tc, test_golden_center_crop);
  tcase_add_test (tc, test_meta_copy);
  tcase_add_test (tc, test_not_writable);
  tcase_add_test (tc, test_interval);
  tcase_add_test (tc, test_top_k_threshold_playing);
  tcase_add_test (tc, test_labels_file);
  tcase_add_test (tc, test_labels_not_utf8);
  tcase_add_test (tc, test_post_messages);
  tcase_add_test (tc, test_error_no_checkpoint);
  tcase_add_test (tc, test_error_missing_file);
  tcase_add_test (tc, test_error_corrupt_file);
  tcase_add_test (tc, test_error_mismatch);
  tcase_add_test (tc, test_error_labels_unreadable);
  tcase_add_test (tc, test_error_labels_count);
  tcase_add_test (tc, test_error_labels_too_large);
  tcase_add_test (tc, test_forged_video_meta);
  tcase_add_test (tc, test_event_while_stopping);
  tcase_add_test (tc, test_flush_keeps_sticky_events);
  tcase_add_test (tc, test_error_cuda_unavailable);
  tcase_add_test (tc, test_cuda_caps_before_start);
  tcase_add_test (tc, test_state_cycles);
  tcase_add_test (tc, test_caps_change);
  tcase_add_test (tc, test_batch);
  tcase_add_test (tc, test_passes_in_flight);
  tcase_add_test (tc, test_batch_cannot_fill);
  tcase_add_test (tc, test_batch_caps_change);
  tcase_add_test (tc, test_batch_interval);
  tcase_add_test (tc, test_batch_flush);
  tcase_add_test (tc, test_regions_rgba);
  tcase_add_test (tc, test_regions_nv12);
  tcase_add_test (tc, test_regions_other_formats);
  tcase_add_test (tc, test_regions_interval);
  tcase_add_test (tc, test_regions_messages);
  tcase_add_test (tc, test_regions_batch);
  tcase_add_test (tc, test_regions_types_warning);
  tcase_add_test (tc, test_regions_few_classes);
  tcase_add_test (tc, test_swap_class_counts);
  tcase_add_test (tc, test_swap_storm);
  tcase_add_test (tc, test_swap_after_stop);
  tcase_add_test (tc, test_json_output);
  tcase_add_test (tc, test_error_json_output);
  tcase_add_test (tc, test_error_json_write);
  tcase_add_test (tc, test_error_json_fifo_no_reader);
  tcase_add_test (tc, test_error_json_fifo_reader_gone);
  return s;
}

GST_CHECK_MAIN (gpunetclassify);
