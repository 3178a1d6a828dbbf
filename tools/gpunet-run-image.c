/* gpunet-run-image.c: gpunet-run's photo decoder. One short pipeline per file:
 * uridecodebin ! videoconvert ! video/x-raw,format=RGB ! appsink; the first sample
 * is copied out row by row. The engine's own preprocess (gpunet_session_classify)
 * does the resize, crop and normalisation, exactly as the element does. */
#include "gpunet-run-image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>
#include <gst/app/gstappsink.h>
#include <gst/gst.h>

#include "gpunet-tool-errors.h"

void
gpunet_run_image_init (int *argc, char ***argv)
{
  gst_init (argc, argv);
}

static int
fail (char **error_text, const char *path, const char *why)
{
  if (error_text)
    *error_text = g_strdup_printf ("cannot decode '%s': %s", path, why);
  return -1;
}

/* TRUE for the caps name of a real stream other than video, as decodebin's
 * missing-plugin messages name them (audio, subtitles): the file then holds no
 * picture.  FALSE for one that is no media at all (application/x-gzip: what a
 * type finder makes of a few stray bytes). */
static gboolean
is_stream_kind (const gchar * kind)
{
  return kind == NULL || g_str_has_prefix (kind, "audio/")
      || g_str_has_prefix (kind, "text/") || g_str_has_prefix (kind, "subpicture/")
      || g_str_has_prefix (kind, "closedcaption/") || strstr (kind, "subtitle")
      || strcmp (kind, "application/x-ssa") == 0
      || strcmp (kind, "application/x-ass") == 0;
}

/* Why `path`, given as a picture, decodes to none although it is neither
 * missing nor audio (g_free): corrupt or truncated, with its size (a file of
 * a few bytes says it all) and `what` GStreamer made of it. */
static gchar *
corrupt_why (const char *path, const char *what)
{
  GStatBuf st;

  if (g_stat (path, &st) == 0)
    return g_strdup_printf ("the file is corrupt or truncated (%lld bytes; %s); "
        "replace it with a whole copy of the picture", (long long) st.st_size, what);
  return g_strdup_printf ("the file is corrupt or truncated (%s); replace it with "
      "a whole copy of the picture", what);
}

int
gpunet_run_decode_image (const char *path, uint8_t **rgb, int *width, int *height,
    int *stride, char **error_text)
{
  GError *err = NULL;
  gchar *uri, *desc, *why = NULL;
  GstElement *pipe;
  GstSample *sample = NULL;
  GstBus *bus;
  int rc = -1;
  GpunetToolMissing missing = { NULL, FALSE, NULL };
  gboolean why_done = FALSE;

  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    return fail (error_text, path, g_file_test (path, G_FILE_TEST_EXISTS)
        ? "not a regular file (a FIFO, device or folder): give a picture file"
        : "no such file");
  uri = gst_filename_to_uri (path, &err);
  if (uri == NULL) {
    rc = fail (error_text, path, err->message);
    g_clear_error (&err);
    return rc;
  }
  desc = g_strdup_printf ("uridecodebin uri=\"%s\" caps=video/x-raw ! videoconvert ! "
      "video/x-raw,format=RGB ! appsink name=sink sync=false", uri);
  pipe = gst_parse_launch (desc, &err);
  g_free (desc);
  g_free (uri);
  if (pipe == NULL || err) {
    rc = fail (error_text, path, err ? err->message : "cannot build the decoding pipeline");
    g_clear_error (&err);
    if (pipe)
      gst_object_unref (pipe);
    return rc;
  }
  GstElement *sink = gst_bin_get_by_name (GST_BIN (pipe), "sink");
  bus = gst_element_get_bus (pipe);
  gst_element_set_state (pipe, GST_STATE_PLAYING);
  /* a sample, or an error / EOS on the bus, whichever comes first (10 s at most) */
  for (int i = 0; i < 100 && sample == NULL && why == NULL; i++) {
    sample = gst_app_sink_try_pull_sample (GST_APP_SINK (sink), 100 * GST_MSECOND);
    GstMessage *m = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR | GST_MESSAGE_EOS
        | GST_MESSAGE_ELEMENT);
    if (m && GST_MESSAGE_TYPE (m) == GST_MESSAGE_ELEMENT) {
      gpunet_tool_missing_note (&missing, m);
    } else if (m && sample == NULL) {
      if (GST_MESSAGE_TYPE (m) == GST_MESSAGE_ERROR) {
        gst_message_parse_error (m, &err, NULL);
        /* uridecodebin's "missing a plug-in" also when the file has no video at
         * all (only audio): its missing-plugin messages say which it is */
        if (g_error_matches (err, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN)
            && missing.video == NULL && missing.other
            && !is_stream_kind (missing.other_kind)) {
          /* a few stray bytes that a type finder took for an archive, say:
           * not a file without video, a picture file cut or overwritten */
          gchar *what = g_strdup_printf ("GStreamer reads it as %s, not a picture",
              missing.other_kind);

          why = corrupt_why (path, what);
          g_free (what);
        } else if (g_error_matches (err, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN)
            && missing.video == NULL && missing.other) {
          g_clear_error (&err);
          if (error_text)
            *error_text = g_strdup_printf ("no video stream in '%s' (audio or "
                "other streams only)", path);
          why_done = TRUE;
          why = g_strdup ("");
        } else if (g_error_matches (err, GST_CORE_ERROR,
                GST_CORE_ERROR_MISSING_PLUGIN) && missing.video) {
          why = g_strdup_printf ("no decoder for its %s is installed; install the "
              "GStreamer plug-in that decodes it", missing.video);
        } else if (g_error_matches (err, GST_STREAM_ERROR,
                GST_STREAM_ERROR_TYPE_NOT_FOUND)) {
          why = corrupt_why (path, "in no format GStreamer recognizes");
        } else if (g_error_matches (err, GST_STREAM_ERROR,
                GST_STREAM_ERROR_WRONG_TYPE)) {
          /* a whole file of another kind ("This appears to be a text file.") */
          why = g_strdup_printf ("not a picture (%s); give a picture file",
              err->message);
        } else if (err->domain == GST_STREAM_ERROR
            && err->code != GST_STREAM_ERROR_CODEC_NOT_FOUND) {
          /* the decoder's or the parser's own words, without their full stop */
          gchar *what = g_strdup_printf ("GStreamer says: %s", err->message);

          if (g_str_has_suffix (what, "."))
            what[strlen (what) - 1] = '\0';
          why = corrupt_why (path, what);
          g_free (what);
        } else {
          why = g_strdup (err->message);
        }
        g_clear_error (&err);
      } else {
        why = corrupt_why (path, "no picture in it");
      }
    }
    if (m)
      gst_message_unref (m);
  }
  if (sample) {
    GstCaps *caps = gst_sample_get_caps (sample);
    GstStructure *s = caps ? gst_caps_get_structure (caps, 0) : NULL;
    GstBuffer *buf = gst_sample_get_buffer (sample);
    GstMapInfo map;
    int w = 0, h = 0;

    if (s && gst_structure_get_int (s, "width", &w) && gst_structure_get_int (s, "height", &h)
        && w > 0 && h > 0 && buf && gst_buffer_map (buf, &map, GST_MAP_READ)) {
      /* GStreamer's default RGB layout: rows padded to 4 bytes */
      size_t src_stride = ((size_t) w * 3 + 3) & ~(size_t) 3;
      if (map.size >= src_stride * (size_t) (h - 1) + (size_t) w * 3) {
        *rgb = malloc ((size_t) w * 3 * (size_t) h);
        if (*rgb) {
          for (int y = 0; y < h; y++)
            memcpy (*rgb + (size_t) y * w * 3, map.data + (size_t) y * src_stride, (size_t) w * 3);
          *width = w;
          *height = h;
          *stride = w * 3;
          rc = 0;
        } else {
          why = g_strdup ("out of memory");
        }
      } else {
        why = g_strdup ("the decoded picture is smaller than its caps say");
      }
      gst_buffer_unmap (buf, &map);
    } else {
      why = g_strdup ("the decoder gave no picture size");
    }
    gst_sample_unref (sample);
  } else if (why == NULL) {
    why = g_strdup ("no picture after 10 s");
  }
  if (rc != 0 && !why_done)
    fail (error_text, path, why);
  g_free (why);
  gpunet_tool_missing_clear (&missing);
  gst_element_set_state (pipe, GST_STATE_NULL);
  gst_object_unref (bus);
  gst_object_unref (sink);
  gst_object_unref (pipe);
  return rc;
}

int
gpunet_run_image_damaged (const char *path, char **why)
{
  guint8 head[8], tail[4096];
  FILE *f = fopen (path, "rb");
  long size, n;
  int damaged = 0;

  *why = NULL;
  if (f == NULL)
    return 0;
  if (fread (head, 1, sizeof head, f) != sizeof head || fseek (f, 0, SEEK_END) != 0
      || (size = ftell (f)) < 0) {
    fclose (f);
    return 0;
  }
  n = size < (long) sizeof tail ? size : (long) sizeof tail;
  if (fseek (f, size - n, SEEK_SET) != 0 || fread (tail, 1, (size_t) n, f) != (size_t) n) {
    fclose (f);
    return 0;
  }
  fclose (f);
  if (head[0] == 0xff && head[1] == 0xd8 && head[2] == 0xff) {
    /* a JPEG ends with the EOI marker (some writers pad after it) */
    damaged = 1;
    for (long i = n - 2; i >= 0 && damaged; i--)
      damaged = !(tail[i] == 0xff && tail[i + 1] == 0xd9);
    if (damaged)
      *why = strdup ("the JPEG has no end marker: the file is truncated, and the part "
          "of the picture past the cut is filled in by the decoder");
  } else if (memcmp (head, "\x89PNG\r\n\x1a\n", 8) == 0) {
    damaged = 1;
    for (long i = n - 4; i >= 0 && damaged; i--)
      damaged = memcmp (tail + i, "IEND", 4) != 0;
    if (damaged)
      *why = strdup ("the PNG has no IEND chunk: the file is truncated");
  }
  return damaged;
}

static int
is_image (const char *name)
{
  static const char *const exts[] = { ".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif",
    ".tiff", NULL };
  const char *dot = strrchr (name, '.');
  for (int i = 0; dot && exts[i]; i++)
    if (!g_ascii_strcasecmp (dot, exts[i]))
      return 1;
  return 0;
}

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

GPtrArray *
gpunet_run_image_list (const char *folder, GError **error)
{
  /* our own words: GLib's messages quote the path again, with typographic quotes */
  if (!g_file_test (folder, G_FILE_TEST_IS_DIR)) {
    g_set_error_literal (error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR,
        g_file_test (folder, G_FILE_TEST_EXISTS) ? "not a folder" : "no such folder");
    return NULL;
  }
  GDir *d = g_dir_open (folder, 0, NULL);
  if (!d) {
    const int e = errno;
    g_set_error_literal (error, G_FILE_ERROR, g_file_error_from_errno (e), g_strerror (e));
    return NULL;
  }
  GPtrArray *files = g_ptr_array_new_with_free_func (g_free);
  for (const char *name; (name = g_dir_read_name (d));)
    if (is_image (name))
      g_ptr_array_add (files, g_build_filename (folder, name, NULL));
  g_dir_close (d);
  if (files->len > 1)
    qsort (files->pdata, files->len, sizeof (char *), cmp_str);
  return files;
}
