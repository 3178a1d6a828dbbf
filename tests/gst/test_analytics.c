/* test_analytics.c: GstCheck tests of gpunetclassify's GstAnalytics output and input
 * (GStreamer 1.24+, built only where gstreamer-analytics-1.0 is): a ClsMtd per frame
 * and per region, best first, equal to our own meta's top-k; each region's ClsMtd
 * related to its box, a new ODMtd for a region meta and the detector's own ODMtd for
 * a box given as one; the label read back the way objectdetectionoverlay reads it;
 * ODMtd boxes classified as regions (clipped, filtered by roi-types) exactly as the
 * same boxes given as region metas; analytics-meta=false.  On the tiny-a fixture
 * model, under GST_TRACERS=leaks. */
#include <string.h>

#include <gst/analytics/analytics.h>

#include "tiny_harness.h"

static guint
count_mtds (GstAnalyticsRelationMeta * rmeta, GstAnalyticsMtdType type)
{
  gpointer state = NULL;
  GstAnalyticsMtd m;
  guint n = 0;

  while (gst_analytics_relation_meta_iterate (rmeta, &state, type, &m))
    n++;
  return n;
}

/* `cls` holds the record `s`'s top-k in its order (best first), the labels as
 * quarks and the scores as levels. */
static void
check_cls_is_record (GstAnalyticsClsMtd * cls, const GstStructure * s)
{
  guint i, n = gpunet_meta_n_results (s);

  fail_unless (n > 0);
  fail_unless_equals_int (gst_analytics_cls_mtd_get_length (cls), n);
  for (i = 0; i < n; i++) {
    fail_unless_equals_string (g_quark_to_string
        (gst_analytics_cls_mtd_get_quark (cls, i)), gpunet_meta_nth_label (s, i));
    fail_unless_equals_float (gst_analytics_cls_mtd_get_level (cls, i),
        (gfloat) gpunet_meta_nth_score (s, i));
    if (i > 0)
      fail_unless (gst_analytics_cls_mtd_get_level (cls, i) <=
          gst_analytics_cls_mtd_get_level (cls, i - 1), "not best first");
  }
}

/* The record our own meta puts on the region meta with id `id`, which must exist. */
static const GstStructure *
roi_record_strict (GstBuffer * buf, gint id)
{
  GstVideoRegionOfInterestMeta *roi =
      gst_buffer_get_video_region_of_interest_meta_id (buf, id);
  const GstStructure *s;

  fail_unless (roi != NULL, "no region meta %d", id);
  s = gst_video_region_of_interest_meta_get_param (roi, GPUNET_META_NAME);
  fail_unless (s != NULL, "region %d has no record", id);
  return s;
}

/* What objectdetectionoverlay draws on box `od`: the quark at index 0 of the
 * ClsMtd the box relates to (RELATE_TO), or 0 when there is none. */
static GQuark
overlay_label (GstAnalyticsRelationMeta * rmeta, GstAnalyticsODMtd * od)
{
  GstAnalyticsMtd cls;

  if (!gst_analytics_relation_meta_get_direct_related (rmeta,
          gst_analytics_mtd_get_id (od), GST_ANALYTICS_REL_TYPE_RELATE_TO,
          gst_analytics_cls_mtd_get_mtd_type (), NULL, &cls))
    return 0;
  return gst_analytics_cls_mtd_get_quark (&cls, 0);
}

GST_START_TEST (test_property)
{
  GstElement *el = gst_element_factory_make ("gpunetclassify", NULL);
  gboolean on;

  fail_unless (el != NULL);
  g_object_get (el, "analytics-meta", &on, NULL);
  fail_unless (on, "analytics-meta is on by default where it is built");
  gst_object_unref (el);
}

GST_END_TEST;

/* Every frame: one ClsMtd, the top-k of our meta, best first; interval's carried
 * frames too. */
GST_START_TEST (test_frame_cls)
{
  GstHarness *h = make_harness ("interval", "1", NULL);
  guint i;

  for (i = 0; i < 4; i++) {
    GstBuffer *out = push_pull (h, make_frame (h, i));
    GstAnalyticsRelationMeta *rmeta = gst_buffer_get_analytics_relation_meta (out);
    const GstStructure *s = gpunet_meta_get_structure (gpunet_meta_get (out));
    gpointer state = NULL;
    GstAnalyticsMtd cls;

    fail_unless (rmeta != NULL, "frame %u: no relation meta", i);
    fail_unless (s != NULL);
    fail_unless_equals_int (gpunet_meta_inferred (s), i % 2 == 0);
    fail_unless_equals_int (gpunet_meta_n_results (s), 5);
    fail_unless_equals_int (count_mtds (rmeta,
            gst_analytics_cls_mtd_get_mtd_type ()), 1);
    fail_unless_equals_int (count_mtds (rmeta,
            gst_analytics_od_mtd_get_mtd_type ()), 0);
    fail_unless (gst_analytics_relation_meta_iterate (rmeta, &state,
            gst_analytics_cls_mtd_get_mtd_type (), &cls));
    check_cls_is_record (&cls, s);
    gst_buffer_unref (out);
  }
  gst_harness_teardown (h);
}

GST_END_TEST;

/* top-k=3: the ClsMtd has as many classes as our record */
GST_START_TEST (test_frame_top_k)
{
  GstHarness *h = make_harness ("top-k", "3", NULL);
  GstBuffer *out = push_pull (h, make_frame (h, 1));
  GstAnalyticsRelationMeta *rmeta = gst_buffer_get_analytics_relation_meta (out);
  gpointer state = NULL;
  GstAnalyticsMtd cls;

  fail_unless (rmeta != NULL);
  fail_unless (gst_analytics_relation_meta_iterate (rmeta, &state,
          gst_analytics_cls_mtd_get_mtd_type (), &cls));
  fail_unless_equals_int (gst_analytics_cls_mtd_get_length (&cls), 3);
  check_cls_is_record (&cls, gpunet_meta_get_structure (gpunet_meta_get (out)));
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

GST_START_TEST (test_off)
{
  GstHarness *h = make_harness ("analytics-meta", "false", "roi-mode", "both",
      NULL);
  GstBuffer *in = make_frame (h, 2), *out;
  GstVideoRegionOfInterestMeta *m =
      gst_buffer_add_video_region_of_interest_meta (in, "car", 3, 5, 20, 17);

  m->id = 4;
  out = push_pull (h, in);
  fail_unless (gst_buffer_get_analytics_relation_meta (out) == NULL);
  fail_unless (gpunet_meta_get (out) != NULL);
  fail_unless (roi_record_strict (out, 4) != NULL);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Regions given as region metas: each gets a new ODMtd with its box and type,
 * related to a ClsMtd holding the region's record, the label objectdetectionoverlay
 * draws being the region's best class. */
GST_START_TEST (test_regions_from_roi_meta)
{
  static const struct
  {
    gint id;
    guint x, y, w, h;
  } rois[] = { {7, 3, 5, 20, 17}, {11, 30, 20, 15, 17} };
  GstHarness *h = make_harness ("roi-mode", "regions", NULL);
  GstBuffer *in = make_frame (h, 3), *out;
  GstAnalyticsRelationMeta *rmeta;
  gpointer state = NULL;
  GstAnalyticsMtd m;
  guint i, seen = 0;

  for (i = 0; i < G_N_ELEMENTS (rois); i++)
    gst_buffer_add_video_region_of_interest_meta (in, "car", rois[i].x,
        rois[i].y, rois[i].w, rois[i].h)->id = rois[i].id;
  out = push_pull (h, in);
  fail_unless (gpunet_meta_get (out) == NULL, "roi-mode=regions: no frame record");
  rmeta = gst_buffer_get_analytics_relation_meta (out);
  fail_unless (rmeta != NULL);
  fail_unless_equals_int (count_mtds (rmeta,
          gst_analytics_cls_mtd_get_mtd_type ()), 2);
  fail_unless_equals_int (count_mtds (rmeta,
          gst_analytics_od_mtd_get_mtd_type ()), 2);

  /* as objectdetectionoverlay walks them: every box, its related class */
  while (gst_analytics_relation_meta_iterate (rmeta, &state,
          gst_analytics_od_mtd_get_mtd_type (), &m)) {
    GstAnalyticsODMtd *od = (GstAnalyticsODMtd *) & m;
    GstAnalyticsMtd cls;
    const GstStructure *s = NULL;
    gint x, y, w, hh;
    gfloat conf;

    fail_unless (gst_analytics_od_mtd_get_location (od, &x, &y, &w, &hh, &conf));
    fail_unless_equals_string (g_quark_to_string
        (gst_analytics_od_mtd_get_obj_type (od)), "car");
    for (i = 0; i < G_N_ELEMENTS (rois); i++)
      if (x == (gint) rois[i].x && y == (gint) rois[i].y
          && w == (gint) rois[i].w && hh == (gint) rois[i].h)
        s = roi_record_strict (out, rois[i].id);
    fail_unless (s != NULL, "a box that is no region: %d,%d %dx%d", x, y, w, hh);
    fail_unless (gst_analytics_relation_meta_get_direct_related (rmeta,
            gst_analytics_mtd_get_id (od), GST_ANALYTICS_REL_TYPE_RELATE_TO,
            gst_analytics_cls_mtd_get_mtd_type (), NULL, &cls));
    check_cls_is_record (&cls, s);
    fail_unless_equals_string (g_quark_to_string (overlay_label (rmeta, od)),
        gpunet_meta_label (s));
    seen++;
  }
  fail_unless_equals_int (seen, 2);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* roi-mode=both: the region's ClsMtd relates to its box, the frame's to none. */
GST_START_TEST (test_both)
{
  GstHarness *h = make_harness ("roi-mode", "both", NULL);
  GstBuffer *in = make_frame (h, 4), *out;
  GstAnalyticsRelationMeta *rmeta;
  gpointer state = NULL;
  GstAnalyticsMtd od, cls;
  guint region_cls, n = 0;

  gst_buffer_add_video_region_of_interest_meta (in, "face", 1, 1, 16, 16)->id = 1;
  out = push_pull (h, in);
  rmeta = gst_buffer_get_analytics_relation_meta (out);
  fail_unless (rmeta != NULL);
  fail_unless_equals_int (count_mtds (rmeta,
          gst_analytics_od_mtd_get_mtd_type ()), 1);
  fail_unless (gst_analytics_relation_meta_iterate (rmeta, &state,
          gst_analytics_od_mtd_get_mtd_type (), &od));
  fail_unless (gst_analytics_relation_meta_get_direct_related (rmeta,
          gst_analytics_mtd_get_id (&od), GST_ANALYTICS_REL_TYPE_RELATE_TO,
          gst_analytics_cls_mtd_get_mtd_type (), NULL, &cls));
  check_cls_is_record (&cls, roi_record_strict (out, 1));
  region_cls = gst_analytics_mtd_get_id (&cls);
  state = NULL;
  while (gst_analytics_relation_meta_iterate (rmeta, &state,
          gst_analytics_cls_mtd_get_mtd_type (), &cls)) {
    if (gst_analytics_mtd_get_id (&cls) != region_cls)
      check_cls_is_record (&cls, gpunet_meta_get_structure (gpunet_meta_get
              (out)));
    n++;
  }
  fail_unless_equals_int (n, 2);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* Boxes given as GstAnalyticsODMtd (a 1.24+ detector): classified as regions,
 * filtered by roi-types, clipped to the frame, each ClsMtd related to the
 * detector's own box (no box added), with the records of the same boxes given as
 * region metas. */
GST_START_TEST (test_regions_from_od)
{
  GstHarness *h = make_harness ("roi-mode", "regions", "roi-types", "car",
      NULL);
  GstHarness *ref = make_harness ("roi-mode", "regions", "roi-types", "car",
      NULL);
  GstBuffer *in = make_frame (h, 5), *in_ref, *out, *out_ref;
  GstAnalyticsRelationMeta *rmeta;
  GstAnalyticsODMtd car, person, outside, wide;
  GQuark qcar = g_quark_from_static_string ("car");
  GstVideoRegionOfInterestMeta *made;
  const GstStructure *s;

  in_ref = gst_buffer_copy_deep (in);
  rmeta = gst_buffer_add_analytics_relation_meta (in);
  fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta, qcar, 3, 5, 20,
          17, 0.9f, &car));
  fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta,
          g_quark_from_static_string ("person"), 10, 10, 16, 16, 0.8f,
          &person));
  fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta, qcar, 200, 100,
          10, 10, 0.7f, &outside));
  /* partly outside, on the left: the region is x 0..14 */
  fail_unless (gst_analytics_relation_meta_add_od_mtd (rmeta, qcar, -6, 20,
          20, 40, 0.6f, &wide));
  /* the same boxes as region metas, for the reference */
  gst_buffer_add_video_region_of_interest_meta (in_ref, "car", 3, 5, 20,
      17)->id = 1;
  gst_buffer_add_video_region_of_interest_meta (in_ref, "car", 0, 20, 14,
      17)->id = 2;

  out = push_pull (h, in);
  out_ref = push_pull (ref, in_ref);
  rmeta = gst_buffer_get_analytics_relation_meta (out);
  fail_unless (rmeta != NULL);
  fail_unless_equals_int (count_mtds (rmeta,
          gst_analytics_od_mtd_get_mtd_type ()), 4);
  fail_unless_equals_int (count_mtds (rmeta,
          gst_analytics_cls_mtd_get_mtd_type ()), 2);

  fail_unless (gst_analytics_relation_meta_get_od_mtd (rmeta,
          gst_analytics_mtd_get_id (&car), &car));
  s = roi_record_strict (out, (gint) gst_analytics_mtd_get_id (&car));
  fail_unless_equals_float (gpunet_meta_confidence (s),
      gpunet_meta_confidence (roi_record_strict (out_ref, 1)));
  fail_unless_equals_string (gpunet_meta_label (s),
      gpunet_meta_label (roi_record_strict (out_ref, 1)));
  fail_unless_equals_string (g_quark_to_string (overlay_label (rmeta, &car)),
      gpunet_meta_label (s));
  made = gst_buffer_get_video_region_of_interest_meta_id (out,
      (gint) gst_analytics_mtd_get_id (&car));
  fail_unless_equals_int (made->roi_type, qcar);

  fail_unless (gst_analytics_relation_meta_get_od_mtd (rmeta,
          gst_analytics_mtd_get_id (&wide), &wide));
  s = roi_record_strict (out, (gint) gst_analytics_mtd_get_id (&wide));
  fail_unless_equals_float (gpunet_meta_confidence (s),
      gpunet_meta_confidence (roi_record_strict (out_ref, 2)));
  fail_unless_equals_string (g_quark_to_string (overlay_label (rmeta, &wide)),
      gpunet_meta_label (s));
  made = gst_buffer_get_video_region_of_interest_meta_id (out,
      (gint) gst_analytics_mtd_get_id (&wide));
  fail_unless (made->x == 0 && made->y == 20 && made->w == 14 && made->h == 17);

  /* other types and boxes outside the frame: no class */
  fail_unless (gst_analytics_relation_meta_get_od_mtd (rmeta,
          gst_analytics_mtd_get_id (&person), &person));
  fail_unless_equals_int (overlay_label (rmeta, &person), 0);
  fail_unless (gst_analytics_relation_meta_get_od_mtd (rmeta,
          gst_analytics_mtd_get_id (&outside), &outside));
  fail_unless_equals_int (overlay_label (rmeta, &outside), 0);

  gst_buffer_unref (out);
  gst_buffer_unref (out_ref);
  gst_harness_teardown (h);
  gst_harness_teardown (ref);
}

GST_END_TEST;

/* Two classifiers in a row on region metas: the second relates its class to the
 * box the first made, adding no second box. */
GST_START_TEST (test_second_classifier)
{
  GstHarness *h1 = make_harness ("roi-mode", "regions", NULL);
  GstHarness *h2 = make_harness ("roi-mode", "regions", NULL);
  GstBuffer *in = make_frame (h1, 6), *mid, *out;
  GstAnalyticsRelationMeta *rmeta;
  gpointer state = NULL;
  GstAnalyticsMtd od, cls;
  guint n = 0;

  gst_buffer_add_video_region_of_interest_meta (in, "car", 3, 5, 20, 17)->id = 9;
  mid = push_pull (h1, in);
  out = push_pull (h2, gst_buffer_make_writable (mid));
  rmeta = gst_buffer_get_analytics_relation_meta (out);
  fail_unless (rmeta != NULL);
  fail_unless_equals_int (count_mtds (rmeta,
          gst_analytics_od_mtd_get_mtd_type ()), 1);
  fail_unless_equals_int (count_mtds (rmeta,
          gst_analytics_cls_mtd_get_mtd_type ()), 2);
  fail_unless (gst_analytics_relation_meta_iterate (rmeta, &state,
          gst_analytics_od_mtd_get_mtd_type (), &od));
  state = NULL;
  while (gst_analytics_relation_meta_get_direct_related (rmeta,
          gst_analytics_mtd_get_id (&od), GST_ANALYTICS_REL_TYPE_RELATE_TO,
          gst_analytics_cls_mtd_get_mtd_type (), &state, &cls))
    n++;
  fail_unless_equals_int (n, 2);
  gst_buffer_unref (out);
  gst_harness_teardown (h1);
  gst_harness_teardown (h2);
}

GST_END_TEST;

static Suite *
gpunet_analytics_suite (void)
{
  Suite *s = suite_create ("gpunetclassify-analytics");
  TCase *tc = tcase_create ("general");

  tcase_set_timeout (tc, 300);
  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_property);
  tcase_add_test (tc, test_frame_cls);
  tcase_add_test (tc, test_frame_top_k);
  tcase_add_test (tc, test_off);
  tcase_add_test (tc, test_regions_from_roi_meta);
  tcase_add_test (tc, test_both);
  tcase_add_test (tc, test_regions_from_od);
  tcase_add_test (tc, test_second_classifier);
  return s;
}

GST_CHECK_MAIN (gpunet_analytics);
