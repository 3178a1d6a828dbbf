/* example-app.c: a small application that runs gpunetclassify and prints the
 * classification of every frame, read from a pad probe through the header-only
 * helpers of gst/gpunet-meta.h (no link with the plugin needed).
 *
 *   gpunet-example-app CHECKPOINT [MODEL [NUM_FRAMES]]
 *   gpunet-example-app [--frames N] --pipeline 'DESCRIPTION with an element named classify'
 * --frames N prints the first N frames, then ends the pipeline with an EOS.
 */
#include <stdlib.h>
#include <string.h>

#include <gst/gst.h>

#include "gpunet-meta.h"

/* Run from the build tree (build/gst/gpunet-example-app), use the plugin built next
 * to it, so no GST_PLUGIN_PATH is needed; an installed app uses the registry. */
static void
load_plugin_next_to_me (void)
{
  gchar *exe = g_file_read_link ("/proc/self/exe", NULL);
  gchar *dir = exe ? g_path_get_dirname (exe) : NULL;
  gchar *so = dir ? g_build_filename (dir, "libgstgpunet.so", NULL) : NULL;

  if (so && g_file_test (so, G_FILE_TEST_IS_REGULAR)) {
    GstPlugin *p = gst_plugin_load_file (so, NULL);
    if (p)
      gst_object_unref (p);
  }
  g_free (so);
  g_free (dir);
  g_free (exe);
}

static guint max_frames = 0;    /* --frames: 0 = until the stream ends */

static GstPadProbeReturn
print_results (GstPad * pad, GstPadProbeInfo * info, gpointer user_data)
{
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER (info);
  GstCustomMeta *meta;
  gpointer state = NULL;
  guint *count = user_data;

  /* past --frames: drop what is still in flight while the EOS travels */
  if (max_frames && *count >= max_frames)
    return GST_PAD_PROBE_DROP;
  while ((meta = gpunet_meta_iterate (buf, &state)) != NULL) {
    const GstStructure *s = gpunet_meta_get_structure (meta);
    guint i, n = gpunet_meta_n_results (s);

    g_print ("frame %u pts %" GST_TIME_FORMAT ": %s (id %d, %.4f)%s", *count,
        GST_TIME_ARGS (GST_BUFFER_PTS (buf)), gpunet_meta_label (s),
        gpunet_meta_label_id (s), gpunet_meta_confidence (s),
        gpunet_meta_inferred (s) ? "" : " [carried]");
    for (i = 0; i < n; i++)
      g_print ("%s %d:%s=%.4f", i ? "," : " top:", gpunet_meta_nth_id (s, i),
          gpunet_meta_nth_label (s, i), gpunet_meta_nth_score (s, i));
    g_print ("\n");
  }
  (*count)++;
  if (max_frames && *count == max_frames)
    gst_element_post_message (GST_PAD_PARENT (pad),
        gst_message_new_application (GST_OBJECT (GST_PAD_PARENT (pad)),
            gst_structure_new_empty ("gpunet-example-enough")));
  return GST_PAD_PROBE_OK;
}

/* The frames the stream should have had: its duration times the frame rate of the
 * classifier's input, 0 when either is unknown (live or endless sources). */
static guint
expected_frames (GstElement * pipeline, GstElement * classify)
{
  GstPad *pad = gst_element_get_static_pad (classify, "sink");
  GstCaps *caps = gst_pad_get_current_caps (pad);
  gint64 dur = -1;
  gint n = 0, d = 0;
  guint frames = 0;

  if (caps && gst_structure_get_fraction (gst_caps_get_structure (caps, 0), "framerate",
          &n, &d) && n > 0 && d > 0
      && gst_element_query_duration (pipeline, GST_FORMAT_TIME, &dur) && dur > 0)
    frames = (guint) gst_util_uint64_scale_round ((guint64) dur, (guint64) n,
        (guint64) d * GST_SECOND);
  if (caps)
    gst_caps_unref (caps);
  gst_object_unref (pad);
  return frames;
}

int
main (int argc, char **argv)
{
  GstElement *pipeline, *classify;
  GstBus *bus;
  GstMessage *msg;
  GstPad *pad;
  GError *err = NULL;
  gchar *desc;
  guint count = 0, expected = 0;
  int ret = 0;

  gst_init (&argc, &argv);
  load_plugin_next_to_me ();

  if (argc >= 3 && strcmp (argv[1], "--frames") == 0) {
    gchar *end = NULL;
    guint64 n = g_ascii_strtoull (argv[2], &end, 10);
    if (end == argv[2] || *end || n == 0 || n > G_MAXUINT) {
      g_printerr ("--frames needs a positive integer, got '%s'\n", argv[2]);
      return 2;
    }
    max_frames = (guint) n;
    argv += 2;
    argc -= 2;
  }
  if (argc == 3 && strcmp (argv[1], "--pipeline") == 0) {
    desc = g_strdup (argv[2]);
  } else if (argc >= 2 && argc <= 4 && argv[1][0] != '-') {
    guint64 n = 10;

    /* a whole number of frames: "-5" went into num-buffers as -1 (no end) */
    if (argc > 3) {
      gchar *end = NULL;

      n = g_ascii_strtoull (argv[3], &end, 10);
      if (!g_ascii_isdigit (argv[3][0]) || *end || n == 0 || n > G_MAXINT) {
        g_printerr ("NUM_FRAMES needs a positive integer, got '%s'\n", argv[3]);
        return 2;
      }
    }
    desc = g_strdup_printf ("videotestsrc num-buffers=%" G_GUINT64_FORMAT " ! "
        "videoconvert ! gpunetclassify name=classify checkpoint=\"%s\" "
        "model=\"%s\" ! fakesink", n, argv[1], argc > 2 ? argv[2] : "gpunet-0");
  } else {
    g_printerr ("usage: %s CHECKPOINT [MODEL [NUM_FRAMES]]\n"
        "       %s [--frames N] --pipeline 'DESCRIPTION with gpunetclassify "
        "name=classify'\n",
        argv[0], argv[0]);
    return 2;
  }

  pipeline = gst_parse_launch (desc, &err);
  g_free (desc);
  if (pipeline == NULL || err != NULL) {
    g_printerr ("pipeline: %s\n", err ? err->message : "cannot be built");
    g_clear_error (&err);
    if (pipeline)
      gst_object_unref (pipeline);
    return 1;
  }
  classify = gst_bin_get_by_name (GST_BIN (pipeline), "classify");
  if (classify == NULL) {
    g_printerr ("no element named 'classify' in the pipeline\n");
    gst_object_unref (pipeline);
    return 1;
  }
  pad = gst_element_get_static_pad (classify, "src");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, print_results, &count,
      NULL);
  gst_object_unref (pad);

  if (gst_element_set_state (pipeline, GST_STATE_PLAYING) ==
      GST_STATE_CHANGE_FAILURE)
    ret = 1;

  bus = gst_element_get_bus (pipeline);
  for (;;) {
    msg = gst_bus_timed_pop_filtered (bus, GST_CLOCK_TIME_NONE,
        GST_MESSAGE_ERROR | GST_MESSAGE_EOS | GST_MESSAGE_APPLICATION);
    if (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_APPLICATION) {
      /* --frames reached: an EOS from the sources drains the pipeline */
      if (gst_message_has_name (msg, "gpunet-example-enough"))
        gst_element_send_event (pipeline, gst_event_new_eos ());
      gst_clear_message (&msg);
      continue;
    }
    break;
  }
  if (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_ERROR) {
    gchar *dbg = NULL;

    gst_message_parse_error (msg, &err, &dbg);
    /* the message alone: the debug text names internal elements (qtdemux0),
     * GST_DEBUG shows it to whoever needs it.  A decodebin that found no video
     * reports a missing plug-in, or its demuxer stops with not-linked */
    if (count == 0 && (g_error_matches (err, GST_CORE_ERROR,
                GST_CORE_ERROR_MISSING_PLUGIN)
            || g_error_matches (err, GST_STREAM_ERROR,
                GST_STREAM_ERROR_CODEC_NOT_FOUND)
            || (g_error_matches (err, GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED)
                && dbg && strstr (dbg, "not-linked"))))
      g_printerr ("error: no video stream in the input that this GStreamer "
          "installation decodes (audio only, or a video codec with no decoder "
          "installed); give a video file\n");
    else
      g_printerr ("error: %s\n", err->message);
    g_clear_error (&err);
    g_free (dbg);
    ret = 1;
  }
  /* a whole stream played: frames its duration and frame rate promise that never came
   * (a decoder skips a damaged stretch of a file without an error) */
  if (msg && GST_MESSAGE_TYPE (msg) == GST_MESSAGE_EOS && max_frames == 0)
    expected = expected_frames (pipeline, classify);
  gst_clear_message (&msg);
  gst_object_unref (bus);
  gst_element_set_state (pipeline, GST_STATE_NULL);
  gst_object_unref (classify);
  gst_object_unref (pipeline);
  if (expected > count + 1) {
    g_printerr ("warning: the input's duration and frame rate promise %u frames but "
        "%u arrived: %u were lost (a damaged or truncated file; the decoder skipped "
        "them without an error)\n", expected, count, expected - count);
    g_print ("%u frames (%u of %u lost)\n", count, expected - count, expected);
  } else if (ret == 0 || count > 0) {
    /* no count when nothing ran (a model that does not load, no video) */
    g_print ("%u frames\n", count);
  }
  return ret;
}
