/* test_analytics_track.c: GstCheck tests of gpunetclassify's GstAnalytics region
 * input beyond plain boxes (GStreamer 1.24+, built only where gstreamer-analytics-1.0
 * is): per-object re-classification of boxes related to a GstAnalyticsTrackingMtd
 * (reclassify-interval, track-timeout) on a scripted track sequence, checked against
 * the same frames classified on every frame; roi-min-size and boxes partly or wholly
 * outside the frame.  On the tiny-a fixture model, under GST_TRACERS=leaks. */
#include <string.h>

#include <gst/analytics/analytics.h>
#include <glib/gstdio.h>

#define TINY_HARNESS_ROI_MODE "regions"
#include "tiny_harness.h"

#define N_FRAMES 12

/* The top-1 quark of the ClsMtd box `od_id` relates to (what
 * objectdetectionoverlay draws), 0 when none. */
static GQuark
overlay_label (GstBuffer * buf, guint od_id)
{
  GstAnalyticsRelationMeta *rmeta = gst_buffer_get_analytics_relation_meta (buf);
  GstAnalyticsMtd cls;

  if (rmeta == NULL || !gst_analytics_relation_meta_get_direct_related (rmeta,
          od_id, GST_ANALYTICS_REL_TYPE_RELATE_TO,
          gst_analytics_cls_mtd_get_mtd_type (), NULL, &cls))
    return 0;
  return gst_analytics_cls_mtd_get_quark (&cls, 0);
}

static void
check_same_classes (const GstStructure * a, const GstStructure * b,
    const gchar * what)
{
  guint i, n = gpunet_meta_n_results (a);

  fail_unless (n > 0, "%s: no classes", what);
  fail_unless_equals_int (gpunet_meta_n_results (b), n);
  for (i = 0; i < n; i++) {
    fail_unless_equals_int (gpunet_meta_nth_id (a, i), gpunet_meta_nth_id (b,
            i));
    fail_unless (gpunet_meta_nth_score (a, i) == gpunet_meta_nth_score (b, i),
        "%s: class %u scores %g and %g", what, i, gpunet_meta_nth_score (a, i),
        gpunet_meta_nth_score (b, i));
  }
}

/* ---- the scripted track sequence ---- */

enum
{ OBJ_A, OBJ_B, OBJ_C, OBJ_U, N_OBJ };

/* A: on every frame, moving; B: frames 0-3 and 8-11 (gone 4 frames, over
 * track-timeout 2: new again at 8); C: frames 0, 1 and 4-11 (gone 2 frames, within
 * the timeout: carried at 4), related the other way round (tracking -> box); U: an
 * untracked box on every frame. */
static gboolean
present (guint obj, guint f)
{
  switch (obj) {
    case OBJ_B:
      return f <= 3 || f >= 8;
    case OBJ_C:
      return f <= 1 || f >= 4;
    default:
      return TRUE;
  }
}

/* Frames on which each object is classified with reclassify-interval=5,
 * track-timeout=2. */
static gboolean
expect_inferred (guint obj, guint f)
{
  switch (obj) {
    case OBJ_A:
    case OBJ_C:
      return f == 0 || f == 5 || f == 10;
    case OBJ_B:
      return f == 0 || f == 8;
    default:
      return TRUE;
  }
}

/* Frame f with the boxes of the objects present; od_ids[obj] = the box's ODMtd id
 * (-1: absent). */
static GstBuffer *
scripted_frame (GstHarness * h, guint f, gint * od_ids)
{
  static const gint box[N_OBJ][4] = {
    {1, 1, 18, 16}, {5, 18, 15, 15}, {22, 15, 20, 20}, {25, 2, 15, 12},
  };
  GstBuffer *buf = make_frame (h, f);
  GstAnalyticsRelationMeta *rmeta = gst_buffer_add_analytics_relation_meta (buf);
  guint obj;

  for (obj = 0; obj < N_OBJ; obj++) {
    GstAnalyticsODMtd od;
    GstAnalyticsTrackingMtd trk;
    guint od_id, trk_id;

    od_ids[obj] = -1;
    if (!present (obj, f))
      continue;
    /* A moves by a pixel a frame: its crops differ */
    fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta,
            g_quark_from_static_string ("thing"), box[obj][0] + (obj == OBJ_A ?
                (gint) (f % 3) : 0), box[obj][1], box[obj][2], box[obj][3],
            0.9f, &od));
    od_id = gst_analytics_mtd_get_id (&od);
    od_ids[obj] = (gint) od_id;
    if (obj == OBJ_U)
      continue;
    fail_unless (gst_analytics_relation_meta_add_tracking_mtd (rmeta,
            1000 + obj, 0, &trk));
    trk_id = gst_analytics_mtd_get_id (&trk);
    if (obj == OBJ_C)
      fail_unless (gst_analytics_relation_meta_set_relation (rmeta,
              GST_ANALYTICS_REL_TYPE_RELATE_TO, trk_id, od_id));
    else
      fail_unless (gst_analytics_relation_meta_set_relation (rmeta,
              GST_ANALYTICS_REL_TYPE_RELATE_TO, od_id, trk_id));
  }
  return buf;
}

/* Runs the sequence; outs[f] = the output buffers, ids[f][obj] their boxes; the
 * JSON lines go to `json`. */
static void
run_sequence (const gchar * interval, GstBuffer ** outs,
    gint ids[N_FRAMES][N_OBJ], const gchar * json)
{
  GstHarness *h = make_harness ("reclassify-interval", interval,
      "track-timeout", "2", "json-output", json, NULL);
  guint f;

  for (f = 0; f < N_FRAMES; f++)
    outs[f] = push_pull (h, scripted_frame (h, f, ids[f]));
  gst_harness_teardown (h);
}

static guint
count_substr (const gchar * text, const gchar * what)
{
  guint n = 0;

  for (; (text = strstr (text, what)) != NULL; text += strlen (what))
    n++;
  return n;
}

/* reclassify-interval=5: each tracked object is classified on its first frame and
 * every 5 frames after, forgotten after more than track-timeout frames away; the
 * frames between carry its last result (inferred=false, in our meta, the JSON
 * lines and a ClsMtd related to the box); the untracked box is classified on every
 * frame.  Each record equals the one classifying every frame gives on the frame it
 * was classified. */
GST_START_TEST (test_track_reuse)
{
  GstBuffer *every[N_FRAMES], *reuse[N_FRAMES];
  gint every_ids[N_FRAMES][N_OBJ], reuse_ids[N_FRAMES][N_OBJ];
  guint f, obj, classified = 0, carried = 0;
  gint last[N_OBJ];
  gchar *dir = g_dir_make_tmp ("gpunet-track-XXXXXX", NULL);
  gchar *json0 = g_build_filename (dir, "every.jsonl", NULL);
  gchar *json5 = g_build_filename (dir, "reuse.jsonl", NULL);
  gchar *text;

  fail_unless (dir != NULL);
  run_sequence ("0", every, every_ids, json0);
  run_sequence ("5", reuse, reuse_ids, json5);
  for (obj = 0; obj < N_OBJ; obj++)
    last[obj] = -1;
  for (f = 0; f < N_FRAMES; f++) {
    for (obj = 0; obj < N_OBJ; obj++) {
      const GstStructure *e, *r;
      gchar *what;

      if (!present (obj, f))
        continue;
      what = g_strdup_printf ("frame %u object %u", f, obj);
      e = roi_record (every[f], every_ids[f][obj]);
      r = roi_record (reuse[f], reuse_ids[f][obj]);
      fail_unless (e != NULL && r != NULL, "%s: no record", what);
      fail_unless (gpunet_meta_inferred (e), "%s: interval 0 carried", what);
      fail_unless_equals_int (gpunet_meta_inferred (r),
          expect_inferred (obj, f));
      if (gpunet_meta_inferred (r)) {
        classified++;
        last[obj] = (gint) f;
        check_same_classes (r, e, what);
      } else {
        const GstStructure *then;

        carried++;
        fail_unless (last[obj] >= 0, "%s: carried before classified", what);
        then = roi_record (every[last[obj]], every_ids[last[obj]][obj]);
        check_same_classes (r, then, what);
      }
      /* the ClsMtd related to the box, carried frames too */
      fail_unless_equals_string (g_quark_to_string (overlay_label (reuse[f],
                  (guint) reuse_ids[f][obj])), gpunet_meta_nth_label (r, 0));
      g_free (what);
    }
  }
  /* A 3, B 2, C 3, U 12 classified; A 9, B 6, C 7 carried */
  fail_unless_equals_int (classified, 20);
  fail_unless_equals_int (carried, 22);
  /* the JSON lines say the same: 42 records, 22 of them carried */
  fail_unless (g_file_get_contents (json5, &text, NULL, NULL));
  fail_unless_equals_int (count_substr (text, "\n"), 42);
  fail_unless_equals_int (count_substr (text, "\"inferred\":false"), 22);
  fail_unless_equals_int (count_substr (text, "\"inferred\":true"), 20);
  g_free (text);
  fail_unless (g_file_get_contents (json0, &text, NULL, NULL));
  fail_unless_equals_int (count_substr (text, "\"inferred\":true"), 42);
  g_free (text);
  g_unlink (json0);
  g_unlink (json5);
  g_rmdir (dir);
  g_free (json0);
  g_free (json5);
  g_free (dir);
  for (f = 0; f < N_FRAMES; f++) {
    gst_buffer_unref (every[f]);
    gst_buffer_unref (reuse[f]);
  }
}

GST_END_TEST;

/* The property defaults and bounds. */
GST_START_TEST (test_track_properties)
{
  GstElement *el = gst_element_factory_make ("gpunetclassify", NULL);
  guint interval, timeout, min_size, small, outside;

  fail_unless (el != NULL);
  g_object_get (el, "reclassify-interval", &interval, "track-timeout",
      &timeout, "roi-min-size", &min_size, "roi-skipped-small", &small,
      "roi-skipped-outside", &outside, NULL);
  fail_unless_equals_int (interval, 0);
  fail_unless_equals_int (timeout, 30);
  fail_unless_equals_int (min_size, 0);
  fail_unless_equals_int (small, 0);
  fail_unless_equals_int (outside, 0);
  gst_object_unref (el);
}

GST_END_TEST;

/* ---- size and frame bounds ---- */

static guint
add_box (GstBuffer * buf, gint x, gint y, gint w, gint h)
{
  GstAnalyticsRelationMeta *rmeta = gst_buffer_get_analytics_relation_meta (buf);
  GstAnalyticsODMtd od;

  if (rmeta == NULL)
    rmeta = gst_buffer_add_analytics_relation_meta (buf);
  fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta,
          g_quark_from_static_string ("thing"), x, y, w, h, 0.9f, &od));
  return gst_analytics_mtd_get_id (&od);
}

static guint
count_cls (GstBuffer * buf)
{
  GstAnalyticsRelationMeta *rmeta = gst_buffer_get_analytics_relation_meta (buf);
  gpointer state = NULL;
  GstAnalyticsMtd m;
  guint n = 0;

  while (rmeta && gst_analytics_relation_meta_iterate (rmeta, &state,
          gst_analytics_cls_mtd_get_mtd_type (), &m))
    n++;
  return n;
}

/* roi-min-size=8: boxes narrower or lower than 8 pixels inside the frame (one of
 * them only once clipped) are skipped and counted, never classified; the 8x8 one
 * is classified. */
GST_START_TEST (test_od_min_size)
{
  GstHarness *h = make_harness ("roi-min-size", "8", NULL);
  GstBuffer *in = make_frame (h, 3), *out;
  guint ok, thin, low, clipped, small, outside;

  ok = add_box (in, 10, 10, 8, 8);
  thin = add_box (in, 2, 2, 7, 30);
  low = add_box (in, 20, 2, 20, 5);
  clipped = add_box (in, 40, 20, 10, 10);       /* 5 wide in the frame */
  out = push_pull (h, in);
  fail_unless (roi_record (out, ok) != NULL, "the 8x8 box is classified");
  fail_unless (roi_record (out, thin) == NULL, "7 wide: skipped");
  fail_unless (roi_record (out, low) == NULL, "5 high: skipped");
  fail_unless (roi_record (out, clipped) == NULL, "5 wide clipped: skipped");
  fail_unless (overlay_label (out, thin) == 0);
  fail_unless_equals_int (count_cls (out), 1);
  g_object_get (h->element, "roi-skipped-small", &small,
      "roi-skipped-outside", &outside, NULL);
  fail_unless_equals_int (small, 3);
  fail_unless_equals_int (outside, 0);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A box partly outside is classified as its part inside the frame (the same
 * classes as that part given as a box); one wholly outside and an empty one are
 * skipped, counted, and warned about naming the frame and the box. */
GST_START_TEST (test_od_outside)
{
  GstHarness *h = make_harness (NULL);
  GstBuffer *in, *out, *ref_out;
  guint part, ref, away, empty, small, outside;
  gchar *log;

  capture_warnings ();
  in = make_frame (h, 5);
  part = add_box (in, -10, -5, 25, 20);         /* inside: 0,0 15x15 */
  away = add_box (in, 100, 3, 20, 20);
  empty = add_box (in, 5, 5, 0, 10);
  out = push_pull (h, in);
  in = make_frame (h, 5);
  ref = add_box (in, 0, 0, 15, 15);
  ref_out = push_pull (h, in);
  log = captured_warnings ();

  fail_unless (roi_record (out, part) != NULL, "the partial box is classified");
  check_same_classes (roi_record (out, part), roi_record (ref_out, ref),
      "clipped box");
  {
    GstVideoRegionOfInterestMeta *m =
        gst_buffer_get_video_region_of_interest_meta_id (out, part);

    fail_unless (m->x == 0 && m->y == 0 && m->w == 15 && m->h == 15,
        "region meta %u,%u %ux%u", m->x, m->y, m->w, m->h);
  }
  fail_unless (roi_record (out, away) == NULL);
  fail_unless (roi_record (out, empty) == NULL);
  fail_unless_equals_int (count_cls (out), 1);
  g_object_get (h->element, "roi-skipped-small", &small,
      "roi-skipped-outside", &outside, NULL);
  fail_unless_equals_int (small, 0);
  fail_unless_equals_int (outside, 2);
  fail_unless (strstr (log, "frame 0 (pts 0:00:00.200000000, offset 5): "
          "ODMtd box 1 of type 'thing' at x=100 y=3 20x20 is wholly outside "
          "the 45x37 frame") != NULL, "warnings: %s", log);
  fail_unless (strstr (log, "ODMtd box 2 of type 'thing' at x=5 y=5 0x10 is "
          "empty") != NULL, "warnings: %s", log);
  g_free (log);
  gst_buffer_unref (out);
  gst_buffer_unref (ref_out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* when-busy=skip with reclassify-interval=2 on cpu-ref, frames pushed in bursts
 * of three (the engine busy with the first): a skipped frame does not count as
 * its tracked objects' classification.  Object A is due every second frame; a
 * due frame may be carried only when skipped (never the first of a burst, the
 * engine idle then), and the frame after a skipped due one is due again.  Had
 * the skip counted, A would be carried on a due first frame of a burst, or the
 * skipped count would disagree. */
GST_START_TEST (test_track_when_busy_skip)
{
  GstHarness *h = make_harness ("reclassify-interval", "2", "track-timeout",
      "8", "backend", "cpu-ref", "when-busy", "skip", NULL);
  const guint n = 30;
  gint ids[N_OBJ], last = -1;
  guint i, j, due_carried = 0;
  GstStructure *stats = NULL;
  guint64 skipped = 0;

  gst_harness_set_live (h, TRUE);
  for (i = 0; i < n; i = j) {
    gint burst_ids[3][N_OBJ];

    for (j = i; j < n && j < i + 3; j++) {
      /* the script's frames 8-11: every object present */
      GstBuffer *in = scripted_frame (h, 8 + (j % 4), ids);

      GST_BUFFER_PTS (in) = j * 40 * GST_MSECOND;
      GST_BUFFER_OFFSET (in) = j;
      memcpy (burst_ids[j - i], ids, sizeof ids);
      fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
    }
    for (j = i; j < n && j < i + 3; j++) {
      GstBuffer *out = gst_harness_pull (h);
      const GstStructure *r;
      gboolean due = last < 0 || j - (guint) last >= 2;

      fail_unless (out != NULL, "frame %u did not come out", j);
      r = roi_record (out, burst_ids[j - i][OBJ_A]);
      fail_unless (r != NULL, "frame %u: no record for A", j);
      if (!due)
        fail_if (gpunet_meta_inferred (r), "frame %u: A classified, not due", j);
      else if (gpunet_meta_inferred (r))
        last = (gint) j;
      else {
        fail_if (j % 3 == 0, "frame %u: A due, the engine idle, yet carried", j);
        due_carried++;
      }
      gst_buffer_unref (out);
    }
  }
  g_object_get (h->element, "stats", &stats, NULL);
  fail_unless (stats != NULL);
  fail_unless (gst_structure_get_uint64 (stats, "skipped", &skipped));
  GST_INFO ("A due and carried on %u frames, %" G_GUINT64_FORMAT " skipped",
      due_carried, skipped);
  fail_unless (skipped > 0, "nothing was skipped: the engine was never busy");
  /* each frame skipped while A was due carried A; no other carried a due A */
  fail_unless (due_carried <= skipped);
  gst_structure_free (stats);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
gpunet_analytics_track_suite (void)
{
  Suite *s = suite_create ("gpunetclassify-analytics-track");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_track_properties);
  tcase_add_test (tc, test_track_reuse);
  tcase_add_test (tc, test_od_min_size);
  tcase_add_test (tc, test_od_outside);
  tcase_add_test (tc, test_track_when_busy_skip);
  return s;
}

GST_CHECK_MAIN (gpunet_analytics_track);
