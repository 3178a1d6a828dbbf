/* gpunet-tag-resume.c: an earlier output of gpunet-tag, in memory, split into
 * records and per-input blocks (see gpunet-tag-resume.h). */
#include <stdlib.h>
#include <string.h>

#include "json.h"               /* models/: the engine's strict JSON reader */
#include "gpunet-tag-resume.h"

/* Splits one CSV record into fields (quotes undone); NULL when malformed. */
static gchar **
csv_split (const gchar * rec, gsize len)
{
  GPtrArray *f = g_ptr_array_new ();
  GString *cur = g_string_new (NULL);
  gboolean q = FALSE;
  gsize i;

  for (i = 0; i < len; i++) {
    gchar c = rec[i];

    if (q) {
      if (c == '"' && i + 1 < len && rec[i + 1] == '"') {
        g_string_append_c (cur, '"');
        i++;
      } else if (c == '"') {
        q = FALSE;
      } else {
        g_string_append_c (cur, c);
      }
    } else if (c == '"') {
      q = TRUE;
    } else if (c == ',') {
      g_ptr_array_add (f, g_string_free (cur, FALSE));
      cur = g_string_new (NULL);
    } else if (c != '\n' && c != '\r') {
      g_string_append_c (cur, c);
    }
  }
  g_ptr_array_add (f, g_string_free (cur, FALSE));
  g_ptr_array_add (f, NULL);
  if (q || (f->len - 1 != TAG_CSV_COLUMNS && f->len - 1 != TAG_CSV_COLUMNS_OLD)) {
    g_strfreev ((gchar **) g_ptr_array_free (f, FALSE));
    return NULL;
  }
  return (gchar **) g_ptr_array_free (f, FALSE);
}

/* The string member `key` of an object node, or NULL. */
static const gchar *
string_member (JsonNode * node, const char *key)
{
  JsonNode *m = gpunet_json_get (node, key);

  return gpunet_json_value_type (m) == G_TYPE_STRING ? json_node_get_string (m)
      : NULL;
}

/* If the record is a summary, stores its input and status and returns TRUE. */
static gboolean
parse_summary (const gchar * rec, gsize len, TagFormat fmt, gchar ** input,
    gchar ** status)
{
  if (fmt == TAG_FORMAT_JSONL) {
    JsonNode *root = NULL;
    char *err = NULL;
    const gchar *t, *i, *s;
    gboolean ok = FALSE;

    if (g_strstr_len (rec, len, "\"summary\"") == NULL)
      return FALSE;
    /* the engine's strict reader, not json_parser_load_from_data: json-glib 1.6
     * leaks the value it has built when text follows it ("0{...}"), and a damaged
     * output holds such lines; this one refuses them before json-glib sees them */
    if (gpunet_json_parse (rec, len, &root, NULL, &err) != GPUNET_OK) {
      free (err);
      return FALSE;
    }
    t = string_member (root, "type");
    i = string_member (root, "input");
    s = string_member (root, "status");
    if (t && !strcmp (t, "summary") && i && s) {
      *input = g_strdup (i);
      *status = g_strdup (s);
      ok = TRUE;
    }
    json_node_unref (root);
    return ok;
  } else {
    gchar **f;

    if (len < 8 || strncmp (rec, "summary,", 8) != 0)
      return FALSE;
    f = csv_split (rec, len);
    if (f == NULL)
      return FALSE;
    *input = g_strdup (f[1]);
    *status = g_strdup (f[20]);
    g_strfreev (f);
    return TRUE;
  }
}

/* Length of the next record at `p` (through its newline; CSV records may hold
 * quoted newlines), or 0 when the rest is an unterminated (partial) record. */
static gsize
next_record (const gchar * p, gsize left, TagFormat fmt)
{
  gboolean q = FALSE;

  for (gsize i = 0; i < left; i++) {
    if (fmt == TAG_FORMAT_CSV && p[i] == '"')
      q = !q;
    else if (p[i] == '\n' && !q)
      return i + 1;
  }
  return 0;
}

gboolean
tag_resume_scan (const gchar * data, gsize len, TagFormat fmt,
    const gchar * path, TagResumeScan * scan, GError ** error)
{
  gsize pos, block_start;
  const gsize hl = strlen (TAG_CSV_HEADER);

  scan->header_len = 0;
  scan->blocks = g_array_new (FALSE, FALSE, sizeof (TagResumeBlock));
  if (fmt == TAG_FORMAT_CSV && len >= hl && strncmp (data, TAG_CSV_HEADER, hl) == 0)
    scan->header_len = hl;
  pos = block_start = scan->keep_end = scan->header_len;
  while (pos < len) {
    gsize n = next_record (data + pos, len - pos, fmt);
    gchar *input = NULL, *status = NULL;

    if (n == 0)
      break;
    if (pos == scan->header_len && n > 1 && ((fmt == TAG_FORMAT_JSONL) !=
            (data[pos] == '{'))) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "'%s' is not a "
          "%s output of gpunet-tag; refusing to append to it", path,
          fmt == TAG_FORMAT_JSONL ? "JSON lines" : "CSV");
      return FALSE;
    }
    if (parse_summary (data + pos, n, fmt, &input, &status)) {
      TagResumeBlock b = { block_start, pos + n, input, status };

      g_array_append_val (scan->blocks, b);
      block_start = scan->keep_end = pos + n;
    }
    pos += n;
  }
  return TRUE;
}

void
tag_resume_scan_clear (TagResumeScan * scan)
{
  if (scan->blocks == NULL)
    return;
  for (guint i = 0; i < scan->blocks->len; i++) {
    TagResumeBlock *b = &g_array_index (scan->blocks, TagResumeBlock, i);

    g_free (b->input);
    g_free (b->status);
  }
  g_array_unref (scan->blocks);
  scan->blocks = NULL;
}
