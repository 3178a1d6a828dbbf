/* test_regions.c: GstCheck tests of gpunetclassify's region selection on
 * GstVideoRegionOfInterestMeta (every GStreamer version): roi-min-size skips and
 * counts small regions, a region partly outside the frame is classified as its
 * part inside, one wholly outside or empty is skipped, counted and warned about
 * naming the frame and the region.  On the tiny-a fixture model. */
#include <string.h>

#define TINY_HARNESS_ROI_MODE "regions"
#include "tiny_harness.h"

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

static GstVideoRegionOfInterestMeta *
add_region (GstBuffer * buf, gint id, guint x, guint y, guint w, guint h)
{
  GstVideoRegionOfInterestMeta *m =
      gst_buffer_add_video_region_of_interest_meta (buf, "thing", x, y, w, h);

  m->id = id;
  return m;
}

/* roi-min-size=8: regions narrower or lower than 8 pixels inside the frame (one
 * of them only once clipped) are skipped and counted; the 8x8 one is classified;
 * roi-min-size=0 classifies them all. */
GST_START_TEST (test_min_size)
{
  guint min_size;

  for (min_size = 0; min_size <= 8; min_size += 8) {
    gchar *prop = g_strdup_printf ("%u", min_size);
    GstHarness *h = make_harness ("roi-min-size", prop, NULL);
    GstBuffer *in = make_frame (h, 3), *out;
    guint small, outside;

    add_region (in, 1, 10, 10, 8, 8);
    add_region (in, 2, 2, 2, 7, 30);
    add_region (in, 3, 20, 2, 20, 5);
    add_region (in, 4, 40, 20, 10, 10);         /* 5 wide in the frame */
    out = push_pull (h, in);
    fail_unless (roi_record (out, 1) != NULL, "the 8x8 region is classified");
    fail_unless ((roi_record (out, 2) == NULL) == (min_size == 8));
    fail_unless ((roi_record (out, 3) == NULL) == (min_size == 8));
    fail_unless ((roi_record (out, 4) == NULL) == (min_size == 8));
    g_object_get (h->element, "roi-skipped-small", &small,
        "roi-skipped-outside", &outside, NULL);
    fail_unless_equals_int (small, min_size == 8 ? 3 : 0);
    fail_unless_equals_int (outside, 0);
    gst_buffer_unref (out);
    gst_harness_teardown (h);
    g_free (prop);
  }
}

GST_END_TEST;

/* roi-max-size=20: regions wider or higher than 20 pixels inside the frame (one of
 * them only before clipping, and so classified) are skipped and counted; the 20x20
 * one is classified; roi-max-size=0 classifies them all. */
GST_START_TEST (test_max_size)
{
  guint max_size;

  for (max_size = 0; max_size <= 20; max_size += 20) {
    gchar *prop = g_strdup_printf ("%u", max_size);
    GstHarness *h = make_harness ("roi-max-size", prop, NULL);
    GstBuffer *in = make_frame (h, 3), *out;
    guint small, large, outside;

    add_region (in, 1, 2, 2, 20, 20);
    add_region (in, 2, 2, 2, 21, 8);
    add_region (in, 3, 24, 2, 8, 30);
    add_region (in, 4, W - 10, 2, 30, 10);       /* 10 wide in the frame */
    out = push_pull (h, in);
    fail_unless (roi_record (out, 1) != NULL, "the 20x20 region is classified");
    fail_unless ((roi_record (out, 2) == NULL) == (max_size == 20));
    fail_unless ((roi_record (out, 3) == NULL) == (max_size == 20));
    fail_unless (roi_record (out, 4) != NULL, "a region under the limit once "
        "clipped is classified");
    g_object_get (h->element, "roi-skipped-small", &small, "roi-skipped-large",
        &large, "roi-skipped-outside", &outside, NULL);
    fail_unless_equals_int (large, max_size == 20 ? 2 : 0);
    fail_unless_equals_int (small, 0);
    fail_unless_equals_int (outside, 0);
    gst_buffer_unref (out);
    gst_harness_teardown (h);
    g_free (prop);
  }
}

GST_END_TEST;

/* A region partly outside is classified as its part inside the frame (the same
 * classes as that part given as a region); one wholly outside and an empty one are
 * skipped, counted and warned about. */
GST_START_TEST (test_outside)
{
  GstHarness *h = make_harness (NULL);
  GstBuffer *in, *out, *ref_out;
  guint small, outside;
  gchar *log;

  capture_warnings ();
  in = make_frame (h, 5);
  add_region (in, 1, 30, 22, 40, 40);           /* inside: 30,22 15x15 */
  add_region (in, 2, 45, 3, 20, 20);            /* from the right edge on */
  add_region (in, 3, 5, 5, 10, 0);
  out = push_pull (h, in);
  in = make_frame (h, 5);
  add_region (in, 1, 30, 22, 15, 15);
  ref_out = push_pull (h, in);
  log = captured_warnings ();

  fail_unless (roi_record (out, 1) != NULL, "the partial region is classified");
  check_same_classes (roi_record (out, 1), roi_record (ref_out, 1),
      "clipped region");
  fail_unless (roi_record (out, 2) == NULL);
  fail_unless (roi_record (out, 3) == NULL);
  g_object_get (h->element, "roi-skipped-small", &small,
      "roi-skipped-outside", &outside, NULL);
  fail_unless_equals_int (small, 0);
  fail_unless_equals_int (outside, 2);
  fail_unless (strstr (log, "frame 0 (pts 0:00:00.200000000, offset 5): "
          "region meta 2 of type 'thing' at x=45 y=3 20x20 is wholly outside "
          "the 45x37 frame") != NULL, "warnings: %s", log);
  fail_unless (strstr (log, "region meta 3 of type 'thing' at x=5 y=5 10x0 is "
          "empty") != NULL, "warnings: %s", log);
  g_free (log);
  gst_buffer_unref (out);
  gst_buffer_unref (ref_out);
  gst_harness_teardown (h);
}

GST_END_TEST;

static Suite *
gpunet_regions_suite (void)
{
  Suite *s = suite_create ("gpunetclassify-regions");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_min_size);
  tcase_add_test (tc, test_max_size);
  tcase_add_test (tc, test_outside);
  return s;
}

GST_CHECK_MAIN (gpunet_regions);
