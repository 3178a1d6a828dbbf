/* gpunet-element-check: the element checks of scripts/gpu-check.sh that gst-launch cannot
 * express, in C so that they run wherever GStreamer does (no PyGObject needed).
 *
 *   gpunet-element-check regions --model M --checkpoint C [--memory cuda|system]
 *       [--backend B] [--frames N]
 *     two regions of interest (GstVideoRegionOfInterestMeta, added by a probe on the
 *     element's sink pad) on every frame, roi-mode=both: every frame gives one full-frame
 *     record and two region records (roi-id 0 and 1), every score in [0, 1]; with
 *     --memory cuda (the default) the frames reach the element as
 *     video/x-raw(memory:CUDAMemory), after cudaupload and a capsfilter (cudaupload
 *     alone passes system memory through to an element that takes both).
 *   gpunet-element-check cycles --model M --checkpoint C [--memory cuda|system]
 *       [--backend B] [--cycles N]
 *     the same pipeline (without regions) brought to PLAYING, run until 3 frames were
 *     classified, and back to NULL, N times (default 50): no error, every cycle classifies
 *     frames in the memory asked for.
 *
 * The last line is "detail: ..." (what gpu-check.sh puts in its table).  Exit 0 ok, 1 a
 * check failed, 2 usage, 77 with --memory cuda where there is no cudaupload. */
#include <gst/gst.h>
#include <gst/video/video.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "gpunet-plugin-find.h"
#include "gpunet-tool-text.h"

typedef struct
{
  const gchar *model, *checkpoint, *memory, *backend;
  gint frames, cycles;
} Args;

static gchar *
pipeline_desc (const Args * a, const gchar * json_path, const gchar * extra,
    gint frames)
{
  return g_strdup_printf ("videotestsrc pattern=ball num-buffers=%d ! "
      "video/x-raw,format=NV12,width=640,height=480,framerate=30/1 ! %s"
      "gpunetclassify name=cls model=\"%s\" checkpoint=\"%s\" backend=%s top-k=3 "
      "json-output=\"%s\" %s ! fakesink name=sink", frames,
      g_strcmp0 (a->memory, "cuda") == 0 ?
      "cudaupload ! video/x-raw(memory:CUDAMemory) ! " : "", a->model,
      a->checkpoint, a->backend, json_path, extra);
}

/* The pipeline of pipeline_desc with probe cb (data) on the sink pad of the element named
 * `probe_on`; NULL after printing the detail line when it cannot be built. */
static GstElement *
make_pipeline (const Args * a, const gchar * json_path, const gchar * extra, gint frames,
    const gchar * probe_on, GstPadProbeCallback cb, gpointer data)
{
  gchar *desc = pipeline_desc (a, json_path, extra, frames);
  GError *err = NULL;
  GstElement *pipe = gst_parse_launch (desc, &err), *el;
  GstPad *pad;

  g_free (desc);
  if (pipe == NULL) {
    printf ("detail: FAIL: cannot build the pipeline: %s\n", err->message);
    g_error_free (err);
    return NULL;
  }
  el = gst_bin_get_by_name (GST_BIN (pipe), probe_on);
  pad = gst_element_get_static_pad (el, "sink");
  gst_pad_add_probe (pad, GST_PAD_PROBE_TYPE_BUFFER, cb, data, NULL);
  gst_object_unref (pad);
  gst_object_unref (el);
  return pipe;
}

/* two fixed regions on each buffer entering the element */
static GstPadProbeReturn
add_rois (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  static const guint boxes[2][4] = { {40, 30, 200, 160}, {320, 200, 240, 240} };
  GstBuffer *buf = gst_buffer_make_writable (GST_PAD_PROBE_INFO_BUFFER (info));

  (void) pad;
  (void) user;
  for (gint i = 0; i < 2; i++) {
    GstVideoRegionOfInterestMeta *m = gst_buffer_add_video_region_of_interest_meta
        (buf, "face", boxes[i][0], boxes[i][1], boxes[i][2], boxes[i][3]);
    m->id = i;
  }
  GST_PAD_PROBE_INFO_DATA (info) = buf;
  return GST_PAD_PROBE_OK;
}

static GstPadProbeReturn
count_buffer (GstPad * pad, GstPadProbeInfo * info, gpointer user)
{
  (void) pad;
  (void) info;
  g_atomic_int_inc ((gint *) user);
  return GST_PAD_PROBE_OK;
}

/* PLAYING until *count reaches want (want 0: until EOS), an error, or timeout_s; returns
 * an error sentence (g_free) or NULL */
static gchar *
run_until (GstElement * pipe, gint * count, gint want, gint timeout_s)
{
  GstBus *bus = gst_element_get_bus (pipe);
  gint64 end = g_get_monotonic_time () + (gint64) timeout_s * G_USEC_PER_SEC;
  gchar *why = NULL;

  if (gst_element_set_state (pipe, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
    why = g_strdup ("cannot go to PLAYING");
  while (why == NULL) {
    GstMessage *m = gst_bus_timed_pop_filtered (bus, 20 * GST_MSECOND,
        GST_MESSAGE_ERROR | GST_MESSAGE_EOS);
    gboolean eos = m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_EOS;

    if (m != NULL && GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
      GError *err = NULL;

      gst_message_parse_error (m, &err, NULL);
      why = g_strdup (err->message);
      g_error_free (err);
    }
    if (m != NULL)
      gst_message_unref (m);
    if (why != NULL || eos || (want > 0 && g_atomic_int_get (count) >= want))
      break;
    if (g_get_monotonic_time () > end)
      why = g_strdup_printf ("no progress within %d s", timeout_s);
  }
  gst_object_unref (bus);
  return why;
}

static gboolean
sink_caps_are_cuda (GstElement * pipe, gchar ** text)
{
  GstElement *cls = gst_bin_get_by_name (GST_BIN (pipe), "cls");
  GstPad *pad = gst_element_get_static_pad (cls, "sink");
  GstCaps *caps = gst_pad_get_current_caps (pad);
  gboolean cuda = caps != NULL && gst_caps_get_size (caps) > 0
      && gst_caps_features_contains (gst_caps_get_features (caps, 0),
      "memory:CUDAMemory");

  *text = caps ? gst_caps_to_string (caps) : g_strdup ("(none)");
  if (caps)
    gst_caps_unref (caps);
  gst_object_unref (pad);
  gst_object_unref (cls);
  return cuda;
}

static int
regions (const Args * a, const gchar * tmp)
{
  gchar *path = g_build_filename (tmp, "regions.jsonl", NULL);
  GstElement *pipe = make_pipeline (a, path, "roi-mode=both", a->frames, "cls",
      add_rois, NULL);
  gchar *why, *caps_text = NULL, *contents = NULL, **lines;
  gint full = 0, roi = 0, bad_scores = 0, bad_lines = 0, ids = 0, dummy = 0;
  gboolean cuda;
  GString *bad;

  if (pipe == NULL) {
    g_free (path);
    return 1;
  }
  bad = g_string_new (NULL);
  why = run_until (pipe, &dummy, 0, 120);
  cuda = sink_caps_are_cuda (pipe, &caps_text);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (pipe);
  if (why != NULL) {
    printf ("detail: FAIL: %s\n", why);
    return 1;
  }
  if (!g_file_get_contents (path, &contents, NULL, NULL)) {
    printf ("detail: FAIL: no json-output file %s\n", path);
    return 1;
  }
  lines = g_strsplit (contents, "\n", -1);
  for (gint i = 0; lines[i] != NULL; i++) {
    JsonParser *p;
    JsonObject *o;
    JsonArray *scores;
    gint64 id;

    if (lines[i][0] == '\0')
      continue;
    p = json_parser_new ();
    if (!json_parser_load_from_data (p, lines[i], -1, NULL)
        || !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (p))) {
      bad_lines++;
      g_object_unref (p);
      continue;
    }
    o = json_node_get_object (json_parser_get_root (p));
    id = json_object_has_member (o, "roi-id") ?
        json_object_get_int_member (o, "roi-id") : -2;
    if (id == -1)
      full++;
    else if (id == 0 || id == 1) {
      roi++;
      ids |= 1 << id;
    } else
      bad_lines++;
    scores = json_object_has_member (o, "scores") ?
        json_object_get_array_member (o, "scores") : NULL;
    for (guint j = 0; scores != NULL && j < json_array_get_length (scores); j++) {
      gdouble s = json_array_get_double_element (scores, j);
      if (!(s >= 0.0 && s <= 1.0))
        bad_scores++;
    }
    if (scores == NULL)
      bad_lines++;
    g_object_unref (p);
  }
  g_strfreev (lines);
  g_free (contents);
  if (full != a->frames)
    g_string_append_printf (bad, "%d full-frame records for %d frames; ", full,
        a->frames);
  if (roi != 2 * a->frames || ids != 3)
    g_string_append_printf (bad, "%d region records for 2 regions x %d frames; ",
        roi, a->frames);
  if (bad_scores)
    g_string_append_printf (bad, "%d scores outside [0, 1]; ", bad_scores);
  if (bad_lines)
    g_string_append_printf (bad, "%d records without a roi-id of -1, 0 or 1, or "
        "without scores; ", bad_lines);
  if ((g_strcmp0 (a->memory, "cuda") == 0) != cuda)
    g_string_append_printf (bad, "caps on gpunetclassify's sink pad: %s; ",
        caps_text);
  printf ("%d full-frame and %d region records; sink caps %s\n", full, roi,
      caps_text);
  printf ("detail: %s%s%d frames x 2 regions on %s memory\n",
      bad->len ? "FAIL: " : "ok: ", bad->str, a->frames, a->memory);
  g_free (caps_text);
  g_free (path);
  return bad->len ? 1 : 0;
}

static int
cycles (const Args * a, const gchar * tmp)
{
  gchar *path = g_build_filename (tmp, "cycles.jsonl", NULL);
  gchar *caps_text = NULL;
  gint count = 0, failures = 0;
  /* the source never ends within a cycle */
  GstElement *pipe = make_pipeline (a, path, "", 1000000, "sink", count_buffer, &count);

  g_free (path);
  if (pipe == NULL)
    return 1;
  for (gint i = 0; i < a->cycles; i++) {
    gchar *why;

    g_atomic_int_set (&count, 0);
    why = run_until (pipe, &count, 3, 30);
    if (why == NULL
        && sink_caps_are_cuda (pipe, &caps_text) != (strcmp (a->memory, "cuda") == 0))
      why = g_strdup_printf ("caps on gpunetclassify's sink pad: %s", caps_text);
    g_clear_pointer (&caps_text, g_free);
    if (gst_element_set_state (pipe, GST_STATE_NULL) == GST_STATE_CHANGE_FAILURE
        && why == NULL)
      why = g_strdup ("cannot go back to NULL");
    if (why != NULL || g_atomic_int_get (&count) < 3) {
      if (failures++ < 5)
        printf ("cycle %d: %s\n", i + 1, why ? why : "fewer than 3 frames");
    }
    g_free (why);
  }
  gst_object_unref (pipe);
  printf ("detail: %s%d/%d PLAYING->NULL cycles classified frames on %s memory\n",
      failures ? "FAIL: " : "ok: ", a->cycles - failures, a->cycles, a->memory);
  return failures ? 1 : 0;
}

int
main (int argc, char **argv)
{
  Args a = { NULL, NULL, "cuda", "cuda", 60, 50 };
  GOptionEntry entries[] = {
    {"model", 0, 0, G_OPTION_ARG_STRING, &a.model, "built-in name or JSON", "M"},
    {"checkpoint", 0, 0, G_OPTION_ARG_FILENAME, &a.checkpoint, "weights", "C"},
    {"memory", 0, 0, G_OPTION_ARG_STRING, &a.memory, "cuda (default) or system",
        "MEM"},
    {"backend", 0, 0, G_OPTION_ARG_STRING, &a.backend, "default cuda", "B"},
    {"frames", 0, 0, G_OPTION_ARG_INT, &a.frames, "regions: frames (default 60)",
        "N"},
    {"cycles", 0, 0, G_OPTION_ARG_INT, &a.cycles, "cycles: count (default 50)", "N"},
    {NULL}
  };
  GOptionContext *ctx = g_option_context_new ("regions|cycles - gpu-check.sh's "
      "element checks");
  GError *err = NULL;
  gchar *tmp;
  int rc;

  gpunet_tool_text_init ();     /* GLib's quotes as ASCII in the C locale */
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &err) || argc != 2
      || (strcmp (argv[1], "regions") && strcmp (argv[1], "cycles"))
      || a.model == NULL || a.checkpoint == NULL || a.frames < 1 || a.cycles < 1
      || (strcmp (a.memory, "cuda") && strcmp (a.memory, "system"))) {
    g_printerr ("usage: gpunet-element-check regions|cycles --model M "
        "--checkpoint C [--memory cuda|system] [--backend B] [--frames N] "
        "[--cycles N]%s%s\n", err ? ": " : "", err ? err->message : "");
    return 2;
  }
  g_option_context_free (ctx);
  gst_init (NULL, NULL);
  if (!gpunet_plugin_find_built (NULL)) {
    printf ("detail: FAIL: the element gpunetclassify is not available (set "
        "GST_PLUGIN_PATH to the plugin's directory)\n");
    return 1;
  }
  if (strcmp (a.memory, "cuda") == 0
      && gst_element_factory_find ("cudaupload") == NULL) {
    printf ("detail: skipped: no cudaupload (GStreamer's nvcodec plugin, a GPU)\n");
    return 77;
  }
  tmp = g_dir_make_tmp ("gpunet-element-check-XXXXXX", NULL);
  if (tmp == NULL) {
    printf ("detail: FAIL: cannot make a temporary directory\n");
    return 1;
  }
  rc = strcmp (argv[1], "regions") == 0 ? regions (&a, tmp) : cycles (&a, tmp);
  for (const gchar * const *f = (const gchar * const[]) {"regions.jsonl",
          "cycles.jsonl", NULL}; *f != NULL; f++) {
    gchar *path = g_build_filename (tmp, *f, NULL);
    g_remove (path);
    g_free (path);
  }
  g_rmdir (tmp);
  g_free (tmp);
  return rc;
}
