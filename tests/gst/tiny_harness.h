/* tiny_harness.h: the GstCheck helpers the region tests share (test_regions.c,
 * test_analytics.c, test_analytics_track.c): a GstHarness around gpunetclassify on
 * the tiny-a fixture model, W x H RGBA frames with a pattern per seed, push-and-pull,
 * the record our meta puts on a region, and the capture of region warnings.  Define
 * TINY_HARNESS_ROI_MODE (a roi-mode value) before including it to start every harness
 * in that mode.
 * Header only: each test is its own program. */
#ifndef TINY_HARNESS_H
#define TINY_HARNESS_H

#include <stdarg.h>
#include <string.h>

#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "gpunet-meta.h"

#define W 45
#define H 37
#define CAPS "video/x-raw,format=RGBA,width=45,height=37,framerate=25/1"

#ifndef TINY_HARNESS_ROI_MODE
#define TINY_HARNESS_ROI_MODE NULL
#endif

/* `rel` under GPUNET_TEST_DATA (g_free). */
G_GNUC_UNUSED static gchar *
data_path (const gchar * rel)
{
  const gchar *dir = g_getenv ("GPUNET_TEST_DATA");

  fail_unless (dir != NULL, "GPUNET_TEST_DATA is not set");
  return g_build_filename (dir, rel, NULL);
}

/* A harness around a gpunetclassify on tiny-a (roi-mode TINY_HARNESS_ROI_MODE when
 * set), with caps CAPS; `first_prop`: NULL-terminated name/value string pairs. */
G_GNUC_UNUSED static GstHarness *
make_harness (const gchar * first_prop, ...)
{
  GstElement *el = gst_element_factory_make ("gpunetclassify", NULL);
  gchar *model = data_path ("fixtures/tiny-a.json");
  gchar *ckpt = data_path ("fixtures/tiny-a/tiny-a.pth.tar");
  const gchar *name, *roi_mode = TINY_HARNESS_ROI_MODE;
  GstHarness *h;
  va_list ap;

  fail_unless (el != NULL, "gpunetclassify not found (GST_PLUGIN_PATH?)");
  g_object_set (el, "model", model, "checkpoint", ckpt, NULL);
  if (roi_mode != NULL)
    gst_util_set_object_arg (G_OBJECT (el), "roi-mode", roi_mode);
  g_free (model);
  g_free (ckpt);
  va_start (ap, first_prop);
  for (name = first_prop; name; name = va_arg (ap, const gchar *))
    gst_util_set_object_arg (G_OBJECT (el), name, va_arg (ap, const gchar *));
  va_end (ap);
  h = gst_harness_new_with_element (el, "sink", "src");
  gst_object_unref (el);
  gst_harness_set_src_caps_str (h, CAPS);
  return h;
}

/* A W x H RGBA frame with a pattern of its own for each seed; PTS seed x 40 ms,
 * offset seed. */
G_GNUC_UNUSED static GstBuffer *
make_frame (GstHarness * h, guint seed)
{
  GstBuffer *buf = gst_harness_create_buffer (h, W * H * 4);
  GstMapInfo map;
  gsize i;

  fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
  for (i = 0; i < map.size; i++)
    map.data[i] = (guint8) ((i * 7 + seed * 31 + (i / 97) * 13) & 0xff);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_PTS (buf) = seed * 40 * GST_MSECOND;
  GST_BUFFER_OFFSET (buf) = seed;
  return buf;
}

G_GNUC_UNUSED static GstBuffer *
push_pull (GstHarness * h, GstBuffer * in)
{
  GstBuffer *out;

  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL);
  return out;
}

/* The record our meta put on the region meta `id`, or NULL. */
G_GNUC_UNUSED static const GstStructure *
roi_record (GstBuffer * buf, gint id)
{
  GstVideoRegionOfInterestMeta *roi =
      gst_buffer_get_video_region_of_interest_meta_id (buf, id);

  return roi ? gst_video_region_of_interest_meta_get_param (roi,
      GPUNET_META_NAME) : NULL;
}

/* Warnings of the element's region category (gpunetroi) while capturing:
 * capture_warnings () starts, captured_warnings () stops and returns them (g_free). */
G_GNUC_UNUSED static GMutex log_lock;
G_GNUC_UNUSED static GString *warnings;

G_GNUC_UNUSED static void
log_func (GstDebugCategory * category, GstDebugLevel level, const gchar * file,
    const gchar * function, gint line, GObject * object, GstDebugMessage * msg,
    gpointer data)
{
  (void) file;
  (void) function;
  (void) line;
  (void) object;
  (void) data;
  if (level != GST_LEVEL_WARNING
      || strcmp (gst_debug_category_get_name (category), "gpunetroi") != 0)
    return;
  g_mutex_lock (&log_lock);
  g_string_append (warnings, gst_debug_message_get (msg));
  g_string_append_c (warnings, '\n');
  g_mutex_unlock (&log_lock);
}

G_GNUC_UNUSED static void
capture_warnings (void)
{
  warnings = g_string_new (NULL);
  gst_debug_set_threshold_for_name ("gpunetroi", GST_LEVEL_WARNING);
  gst_debug_add_log_function (log_func, NULL, NULL);
}

G_GNUC_UNUSED static gchar *
captured_warnings (void)
{
  gst_debug_remove_log_function (log_func);
  gst_debug_set_threshold_for_name ("gpunetroi", GST_LEVEL_NONE);
  return g_string_free (warnings, FALSE);
}

#endif
