/* test_tag_resume.c: gpunet-tag --resume's reader of an earlier output
 * (tag_resume_scan, tools/gpunet-tag-resume.c): which records are summaries, where
 * each input's block ends, what a damaged line does; then every input under
 * tests/fuzz/regressions/resume/.  Issue 43 defect 6: a damaged line such as
 * `0{"":"summary"}` made json-glib leak the value it had read, which the sanitizer
 * build (detect_leaks=1, G_SLICE=always-malloc) reports as a failure of this test. */
#include <string.h>

#include <glib.h>

#include "check.h"
#include "gpunet-tag-resume.h"

static TagResumeScan
scan_text (const char *text, TagFormat fmt, gboolean expect_ok)
{
  TagResumeScan s = { 0 };
  GError *err = NULL;
  gboolean ok = tag_resume_scan (text, strlen (text), fmt, "out", &s, &err);

  CHECK_MSG (ok == expect_ok, "'%s': %s", text, err ? err->message : "accepted");
  g_clear_error (&err);
  return s;
}

static const char *
block_input (TagResumeScan * s, guint i)
{
  return i < s->blocks->len ? g_array_index (s->blocks, TagResumeBlock, i).input
      : "(none)";
}

int
main (void)
{
  const char *jsonl =
      "{\"type\":\"frame\",\"input\":\"a.mp4\",\"frame\":0}\n"
      "{\"type\":\"summary\",\"input\":\"a.mp4\",\"status\":\"ok\"}\n"
      "0{\"\":\"summary\"}\n"       /* damaged: text after a value */
      "{\"type\":\"summary\",\"input\":\"b.mp4\" \"status\":\"ok\"}\n"   /* damaged */
      "{\"type\":\"summary\",\"input\":\"c \\\"x\\\".mp4\",\"status\":\"error\"}\n"
      "{\"type\":\"frame\",\"input\":\"d.mp4\",\"fr";    /* interrupted */
  TagResumeScan s = scan_text (jsonl, TAG_FORMAT_JSONL, TRUE);

  CHECK (s.blocks->len == 2);
  CHECK_MSG (strcmp (block_input (&s, 0), "a.mp4") == 0, "%s", block_input (&s, 0));
  CHECK_MSG (strcmp (block_input (&s, 1), "c \"x\".mp4") == 0, "%s", block_input (&s, 1));
  if (s.blocks->len == 2)
    CHECK (strcmp (g_array_index (s.blocks, TagResumeBlock, 1).status, "error") == 0);
  CHECK (s.keep_end == (gsize) (strstr (jsonl, "{\"type\":\"frame\",\"input\":\"d.mp4\"") - jsonl));
  tag_resume_scan_clear (&s);

  /* a CSV file where JSON lines are expected, and the other way round */
  s = scan_text ("type,input\nsummary,a\n", TAG_FORMAT_JSONL, FALSE);
  tag_resume_scan_clear (&s);
  s = scan_text ("{\"type\":\"summary\"}\n", TAG_FORMAT_CSV, FALSE);
  tag_resume_scan_clear (&s);

  /* CSV: a quoted input with a comma, a quoted newline in the message */
  GString *csv = g_string_new (TAG_CSV_HEADER);
  g_string_append (csv, "summary,\"b,\"\"x\"\".mp4\",,,,,,,,,,,0,0,,,0.1,,,,error,"
      "\"no video\nstream\",0,0\n");
  g_string_append (csv, "frame,c.mp4,0");
  s = scan_text (csv->str, TAG_FORMAT_CSV, TRUE);
  CHECK (s.header_len == strlen (TAG_CSV_HEADER));
  CHECK (s.columns == 26);
  CHECK (s.blocks->len == 1);
  CHECK_MSG (strcmp (block_input (&s, 0), "b,\"x\".mp4") == 0, "%s", block_input (&s, 0));
  tag_resume_scan_clear (&s);
  g_string_free (csv, TRUE);

  /* each layout's header is known, and its summary rows read: 26 columns (model,
   * precision), 24 and 22 (before decode_errors, frames_missing) */
  static const struct {
    const char *header, *summary;
    guint columns;
  } layouts[] = {
    {TAG_CSV_HEADER, "summary,a.mp4,,,,,,,,,,,3,3,,,0.1,,,,ok,,0,0,gpunet-0,fp16\n", 26},
    {TAG_CSV_HEADER_24 "\n", "summary,a.mp4,,,,,,,,,,,3,3,,,0.1,,,,ok,,0,0\n", 24},
    {TAG_CSV_HEADER_22 "\n", "summary,a.mp4,,,,,,,,,,,3,3,,,0.1,,,,ok,\n", 22},
  };
  for (guint i = 0; i < G_N_ELEMENTS (layouts); i++) {
    gchar *text = g_strconcat (layouts[i].header, layouts[i].summary, NULL);

    s = scan_text (text, TAG_FORMAT_CSV, TRUE);
    CHECK_MSG (s.columns == layouts[i].columns && s.header_len == strlen (layouts[i].header),
        "layout %u: %u columns, header %zu bytes", layouts[i].columns, s.columns, s.header_len);
    CHECK_MSG (s.blocks->len == 1 && strcmp (block_input (&s, 0), "a.mp4") == 0,
        "layout %u: the summary row is read", layouts[i].columns);
    tag_resume_scan_clear (&s);
    g_free (text);
  }

  /* the fuzzer's regression inputs (first byte: 0 JSON lines, 1 CSV) */
  const char *dir = GPUNET_SOURCE_ROOT "/tests/fuzz/regressions/resume";
  GDir *d = g_dir_open (dir, 0, NULL);
  const char *name;
  int n = 0;

  CHECK_MSG (d != NULL, "cannot open %s", dir);
  while (d && (name = g_dir_read_name (d)) != NULL) {
    gchar *path = g_build_filename (dir, name, NULL), *data = NULL;
    gsize len = 0;

    CHECK (g_file_get_contents (path, &data, &len, NULL) && len >= 1);
    if (data && len >= 1) {
      TagResumeScan r = { 0 };
      GError *err = NULL;

      tag_resume_scan (data + 1, len - 1, (data[0] & 1) ? TAG_FORMAT_CSV
          : TAG_FORMAT_JSONL, path, &r, &err);
      g_clear_error (&err);
      tag_resume_scan_clear (&r);
      n++;
    }
    g_free (data);
    g_free (path);
  }
  if (d)
    g_dir_close (d);
  CHECK (n >= 1);
  return check_report ();
}
