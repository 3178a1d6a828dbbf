/* gpunet-tag-output.c: the records gpunet-tag writes (frame, segment, summary) in
 * JSON lines or CSV, and --resume: reading an earlier output file back, dropping
 * an interrupted input's partial block, and listing the inputs already done. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "gpunet-atomic.h"
#include "gpunet-json-write.h"
#include "gpunet-tag-common.h"

#define CSV_HEADER TAG_CSV_HEADER

/* ---- primitive writers (JSON strings: gst/gpunet-json-write.h) ---- */

/* A number in the C locale; NaN, infinities and negative "unknown" values
 * (when `unknown_if_negative`) become JSON null / an empty CSV field. */
static void
num (GString * out, TagFormat fmt, gdouble v, const gchar * spec,
    gboolean unknown_if_negative)
{
  gchar buf[G_ASCII_DTOSTR_BUF_SIZE];

  if (!isfinite (v) || (unknown_if_negative && v < 0)) {
    if (fmt == TAG_FORMAT_JSONL)
      g_string_append (out, "null");
    return;
  }
  g_string_append (out, g_ascii_formatd (buf, sizeof buf, spec, v));
}

/* One CSV field, quoted (RFC 4180) when it holds a comma, quote or line break. */
static void
csv_str (GString * out, const gchar * s)
{
  if (s == NULL)
    return;
  if (strpbrk (s, ",\"\r\n") == NULL) {
    g_string_append (out, s);
    return;
  }
  g_string_append_c (out, '"');
  for (; *s; s++) {
    if (*s == '"')
      g_string_append_c (out, '"');
    g_string_append_c (out, *s);
  }
  g_string_append_c (out, '"');
}

/* The columns CSV rows are written in: the newest layout, or with --resume the
 * layout of the file's header (tag_resume_prepare). Set before any row is
 * written, read only after. */
static guint csv_columns = TAG_CSV_COLUMNS;

/* The cells of a CSV row after `message`, as many as the layout has:
 * decode_errors and frames_missing (24 columns), model and precision (26);
 * empty but for a summary `s`. Ends the row. */
static void
csv_tail (GString * out, const TagSummary * s)
{
  if (csv_columns >= TAG_CSV_COLUMNS_24) {
    if (s)
      g_string_append_printf (out, ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT,
          s->decode_errors, s->frames_missing);
    else
      g_string_append (out, ",,");
  }
  if (csv_columns >= TAG_CSV_COLUMNS) {
    g_string_append_c (out, ',');
    csv_str (out, s ? s->model : NULL);
    g_string_append_c (out, ',');
    csv_str (out, s ? s->precision : NULL);
  }
  g_string_append_c (out, '\n');
}

/* A JSON string, or null for NULL. */
static void
json_str_or_null (GString * out, const gchar * s)
{
  if (s)
    gpunet_json_write_string (out, s);
  else
    g_string_append (out, "null");
}

/* The input's name as records carry it: valid UTF-8 (JSON needs it). */
gchar *
tag_record_key (const gchar * name)
{
  return g_utf8_make_valid (name, -1);
}

void
tag_write_header (GString * out, TagFormat fmt)
{
  if (fmt == TAG_FORMAT_CSV)
    g_string_append (out, CSV_HEADER);
}

/* ---- frame records ---- */

void
tag_write_frame (GString * out, TagFormat fmt, const gchar * input,
    guint64 frame, gdouble pts, guint n, const gint * ids,
    const gchar * const *labels, const gdouble * scores)
{
  gchar *key = tag_record_key (input);

  if (fmt == TAG_FORMAT_JSONL) {
    g_string_append (out, "{\"type\":\"frame\",\"input\":");
    gpunet_json_write_string (out, key);
    g_string_append_printf (out, ",\"frame\":%" G_GUINT64_FORMAT ",\"pts\":",
        frame);
    num (out, fmt, pts, "%.6f", TRUE);
    if (n > 0) {
      g_string_append_printf (out, ",\"label_id\":%d,\"label\":", ids[0]);
      gpunet_json_write_string (out, labels[0]);
      g_string_append (out, ",\"score\":");
      num (out, fmt, scores[0], "%.6f", FALSE);
    }
    g_string_append (out, ",\"ids\":[");
    for (guint i = 0; i < n; i++)
      g_string_append_printf (out, "%s%d", i ? "," : "", ids[i]);
    g_string_append (out, "],\"labels\":[");
    for (guint i = 0; i < n; i++) {
      if (i)
        g_string_append_c (out, ',');
      gpunet_json_write_string (out, labels[i]);
    }
    g_string_append (out, "],\"scores\":[");
    for (guint i = 0; i < n; i++) {
      if (i)
        g_string_append_c (out, ',');
      num (out, fmt, scores[i], "%.6f", FALSE);
    }
    g_string_append (out, "]}\n");
  } else {
    GString *l = g_string_new (NULL);

    g_string_append (out, "frame,");
    csv_str (out, key);
    g_string_append_printf (out, ",%" G_GUINT64_FORMAT ",,", frame);
    num (out, fmt, pts, "%.6f", TRUE);
    g_string_append (out, ",,");
    if (n > 0) {
      g_string_append_printf (out, "%d,", ids[0]);
      csv_str (out, labels[0]);
      g_string_append_c (out, ',');
      num (out, fmt, scores[0], "%.6f", FALSE);
    } else {
      g_string_append (out, ",,");
    }
    g_string_append_c (out, ',');
    for (guint i = 0; i < n; i++)
      g_string_append_printf (out, "%s%d", i ? "|" : "", ids[i]);
    g_string_append_c (out, ',');
    for (guint i = 0; i < n; i++)
      g_string_append_printf (l, "%s%s", i ? "|" : "", labels[i]);
    csv_str (out, l->str);
    g_string_append_c (out, ',');
    for (guint i = 0; i < n; i++) {
      if (i)
        g_string_append_c (out, '|');
      num (out, fmt, scores[i], "%.6f", FALSE);
    }
    g_string_append (out, ",,,,,,,,,,");
    csv_tail (out, NULL);
    g_string_free (l, TRUE);
  }
  g_free (key);
}

/* ---- segments ---- */

static void
segment_write (const TagSegment * seg, GString * out, TagFormat fmt,
    const gchar * input)
{
  gchar *key = tag_record_key (input);
  gdouble mean = seg->count ? seg->score_sum / (gdouble) seg->count : 0.0;

  if (fmt == TAG_FORMAT_JSONL) {
    g_string_append (out, "{\"type\":\"segment\",\"input\":");
    gpunet_json_write_string (out, key);
    g_string_append (out, ",\"start\":");
    num (out, fmt, seg->start, "%.6f", TRUE);
    g_string_append (out, ",\"end\":");
    num (out, fmt, seg->end, "%.6f", TRUE);
    g_string_append_printf (out, ",\"start_frame\":%" G_GUINT64_FORMAT
        ",\"end_frame\":%" G_GUINT64_FORMAT ",\"frames\":%" G_GUINT64_FORMAT
        ",\"label_id\":%d,\"label\":", seg->start_frame, seg->end_frame,
        seg->count, seg->label_id);
    gpunet_json_write_string (out, seg->label);
    g_string_append (out, ",\"mean_score\":");
    num (out, fmt, mean, "%.6f", FALSE);
    g_string_append (out, "}\n");
  } else {
    g_string_append (out, "segment,");
    csv_str (out, key);
    g_string_append_printf (out, ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
        ",", seg->start_frame, seg->end_frame);
    num (out, fmt, seg->start, "%.6f", TRUE);
    g_string_append_c (out, ',');
    num (out, fmt, seg->end, "%.6f", TRUE);
    g_string_append_printf (out, ",%d,", seg->label_id);
    csv_str (out, seg->label);
    g_string_append_c (out, ',');
    num (out, fmt, mean, "%.6f", FALSE);
    g_string_append_printf (out, ",,,,,%" G_GUINT64_FORMAT ",,,,,,,,",
        seg->count);
    csv_tail (out, NULL);
  }
  g_free (key);
}

/* Feeds one classified frame: a new top-1 class closes the open run at this
 * frame's time (so consecutive segments share their boundary: no gaps). */
void
tag_segment_add (TagSegment * seg, GString * out, TagFormat fmt,
    const gchar * input, guint64 frame, gdouble pts, gint label_id,
    const gchar * label, gdouble score)
{
  if (seg->open && seg->label_id == label_id) {
    seg->count++;
    seg->score_sum += score;
    return;
  }
  if (seg->open) {
    seg->end = pts;
    seg->end_frame = frame;
    segment_write (seg, out, fmt, input);
    g_free (seg->label);
  }
  seg->open = TRUE;
  seg->label_id = label_id;
  seg->label = g_strdup (label);
  seg->start = pts;
  seg->start_frame = frame;
  seg->count = 1;
  seg->score_sum = score;
}

/* Closes the open run at the end of the stream (the last decoded frame's end). */
void
tag_segment_finish (TagSegment * seg, GString * out, TagFormat fmt,
    const gchar * input, guint64 end_frame, gdouble end)
{
  if (seg->open) {
    seg->end = end;
    seg->end_frame = end_frame;
    segment_write (seg, out, fmt, input);
  }
  g_clear_pointer (&seg->label, g_free);
  seg->open = FALSE;
}

/* ---- summary ---- */

/* "error" when the input failed, "partial" when frames were lost on the way
 * (decode errors, gaps in the timestamps), else "ok". */
const gchar *
tag_summary_status (const TagSummary * s)
{
  if (!s->ok)
    return "error";
  return s->decode_errors || s->frames_missing ? "partial" : "ok";
}

void
tag_write_summary (GString * out, TagFormat fmt, const TagSummary * s)
{
  gchar *key = tag_record_key (s->input);
  gdouble dec_fps = s->wall_s > 0 ? s->decoded / s->wall_s : NAN;
  gdouble cls_fps = s->classify_s > 0 ? s->classified / s->classify_s : NAN;

  if (fmt == TAG_FORMAT_JSONL) {
    g_string_append (out, "{\"type\":\"summary\",\"input\":");
    gpunet_json_write_string (out, key);
    g_string_append (out, ",\"model\":");
    json_str_or_null (out, s->model);
    g_string_append (out, ",\"precision\":");
    json_str_or_null (out, s->precision);
    g_string_append_printf (out, ",\"status\":\"%s\",\"message\":",
        tag_summary_status (s));
    json_str_or_null (out, s->message);
    g_string_append_printf (out, ",\"frames\":%" G_GUINT64_FORMAT
        ",\"frames_decoded\":%" G_GUINT64_FORMAT ",\"decode_errors\":%"
        G_GUINT64_FORMAT ",\"frames_missing\":%" G_GUINT64_FORMAT
        ",\"classified\":%" G_GUINT64_FORMAT ",\"duration\":", s->decoded,
        s->decoded, s->decode_errors, s->frames_missing, s->classified);
    num (out, fmt, s->duration, "%.6f", TRUE);
    g_string_append (out, ",\"container_duration\":");
    num (out, fmt, s->container_duration, "%.6f", TRUE);
    g_string_append (out, ",\"wall_s\":");
    num (out, fmt, s->wall_s, "%.4f", TRUE);
    g_string_append (out, ",\"decode_fps\":");
    num (out, fmt, dec_fps, "%.2f", TRUE);
    g_string_append (out, ",\"classify_fps\":");
    num (out, fmt, cls_fps, "%.2f", TRUE);
    g_string_append (out, ",\"top_labels\":[");
    for (guint i = 0; i < s->n_top; i++) {
      g_string_append_printf (out, "%s{\"label_id\":%d,\"label\":",
          i ? "," : "", s->top[i].id);
      gpunet_json_write_string (out, s->top[i].label);
      g_string_append_printf (out, ",\"frames\":%" G_GUINT64_FORMAT "}",
          s->top[i].count);
    }
    g_string_append (out, "]}\n");
  } else {
    GString *t = g_string_new (NULL);

    g_string_append (out, "summary,");
    csv_str (out, key);
    g_string_append (out, ",,,,,,,,,,,");
    g_string_append_printf (out, "%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT
        ",", s->decoded, s->classified);
    num (out, fmt, s->duration, "%.6f", TRUE);
    g_string_append_c (out, ',');
    num (out, fmt, s->container_duration, "%.6f", TRUE);
    g_string_append_c (out, ',');
    num (out, fmt, s->wall_s, "%.4f", TRUE);
    g_string_append_c (out, ',');
    num (out, fmt, dec_fps, "%.2f", TRUE);
    g_string_append_c (out, ',');
    num (out, fmt, cls_fps, "%.2f", TRUE);
    g_string_append_c (out, ',');
    for (guint i = 0; i < s->n_top; i++)
      g_string_append_printf (t, "%s%s:%" G_GUINT64_FORMAT, i ? "|" : "",
          s->top[i].label, s->top[i].count);
    csv_str (out, t->str);
    g_string_append_printf (out, ",%s,", tag_summary_status (s));
    csv_str (out, s->message);
    csv_tail (out, s);
    g_string_free (t, TRUE);
  }
  g_free (key);
}

/* ---- resume (the scan of the file: gpunet-tag-resume.c) ---- */

/* Writes all n bytes to fd, retrying after signals; FALSE on an error. */
gboolean
tag_write_all (int fd, const gchar * p, gsize n)
{
  while (n > 0) {
    gssize w = write (fd, p, n);

    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return FALSE;
    p += w;
    n -= (gsize) w;
  }
  return TRUE;
}

/* Reads an earlier output of this tool. Each input's records form one block
 * ending with its summary (the tool appends a block at once), so everything after
 * the last summary is an interrupted input's partial block and is cut off. With
 * `retry_failed` the blocks of failed inputs are removed too (the file is
 * rewritten through a temporary file and a rename). Returns the set of inputs
 * whose block is kept (to skip); `need_header` says whether a CSV header is
 * still to be written. `locked_fd` is the caller's open, flock'ed descriptor of
 * `path`; after a rewrite it is replaced by one of the new file, locked before
 * the rename (so no other run can slip in) and in O_APPEND mode. NULL with `error` set when the file cannot be used. */
GHashTable *
tag_resume_prepare (const gchar * path, TagFormat fmt, gboolean retry_failed,
    gboolean * need_header, int *locked_fd, GError ** error)
{
  GHashTable *done = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
      NULL);
  gchar *data = NULL;
  gsize len = 0;
  TagResumeScan scan = { 0 };
  gboolean *dropped = NULL, drop_any = FALSE;
  GError *err = NULL;

  *need_header = fmt == TAG_FORMAT_CSV;
  if (!g_file_get_contents (path, &data, &len, &err)) {
    if (g_error_matches (err, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
      g_clear_error (&err);
      return done;
    }
    g_propagate_error (error, err);
    goto fail;
  }
  if (!tag_resume_scan (data, len, fmt, path, &scan, error))
    goto fail;
  if (scan.header_len > 0)
    *need_header = FALSE;
  /* rows continue in the layout the file's header names */
  if (scan.columns > 0)
    csv_columns = scan.columns;
  dropped = g_new0 (gboolean, scan.blocks->len + 1);
  for (guint i = 0; i < scan.blocks->len; i++) {
    TagResumeBlock *b = &g_array_index (scan.blocks, TagResumeBlock, i);

    /* a second block of the same input, or a failed one to retry, goes */
    if (g_hash_table_contains (done, b->input) || (retry_failed
            && strcmp (b->status, "error") == 0)) {
      drop_any = TRUE;
      dropped[i] = TRUE;
    } else {
      g_hash_table_add (done, g_strdup (b->input));
    }
  }
  if (drop_any) {
    int fd = -1;
    gchar *tmp = gpunet_atomic_temp (path, &fd);
    gboolean ok = tmp != NULL && flock (fd, LOCK_EX | LOCK_NB) == 0
        && tag_write_all (fd, data, scan.header_len);

    for (guint i = 0; ok && i < scan.blocks->len; i++) {
      TagResumeBlock *b = &g_array_index (scan.blocks, TagResumeBlock, i);

      if (!dropped[i])
        ok = tag_write_all (fd, data + b->start, b->end - b->start);
    }
    ok = ok && fcntl (fd, F_SETFL, O_APPEND) == 0;
    if (!ok || rename (tmp, path) != 0) {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
          "cannot rewrite '%s' for --resume: %s", path, g_strerror (errno));
      if (fd >= 0)
        close (fd);
      gpunet_atomic_abort (tmp);
      goto fail;
    }
    free (tmp);
    close (*locked_fd);
    *locked_fd = fd;
  } else if (scan.keep_end < len
      && ftruncate (*locked_fd, (off_t) scan.keep_end) != 0) {
    g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (errno),
        "cannot truncate '%s' for --resume: %s", path, g_strerror (errno));
    goto fail;
  }
  if (fmt == TAG_FORMAT_CSV && scan.header_len == 0 && scan.keep_end == 0)
    *need_header = TRUE;
  tag_resume_scan_clear (&scan);
  g_free (dropped);
  g_free (data);
  return done;

fail:
  tag_resume_scan_clear (&scan);
  g_free (dropped);
  g_free (data);
  g_hash_table_unref (done);
  return NULL;
}
