/* gpunet-tag-resume.c: an earlier output of gpunet-tag, in memory, split into
 * records and per-input blocks (see gpunet-tag-resume.h). */
#include <stdlib.h>
#include <string.h>

#include <json-glib/json-glib.h>

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

/* TRUE when `rec` is one JSON object and nothing else: '{' first, its
 * matching '}' (strings and escapes skipped) and only whitespace after.  Checked
 * before json-glib sees a line: json-glib 1.6 leaks the value it has built when
 * text follows it ("0{...}", "{...}x"), and a damaged output holds such lines.
 * (The tools reach the engine's strict reader, models/json.c, only through
 * gpunet.h, which does not offer it.) */
static gboolean
one_object (const gchar * rec, gsize len)
{
  gsize i = 0;
  gint depth = 0;
  gboolean in_str = FALSE;

  while (i < len && g_ascii_isspace (rec[i]))
    i++;
  if (i == len || rec[i] != '{')
    return FALSE;
  for (; i < len; i++) {
    gchar c = rec[i];

    if (in_str) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_str = FALSE;
      else if ((guchar) c < 0x20)
        return FALSE;
    } else if (c == '"') {
      in_str = TRUE;
    } else if (c == '{' || c == '[') {
      if (++depth > 64)
        return FALSE;
    } else if (c == '}' || c == ']') {
      if (--depth == 0)
        break;
    }
  }
  if (i >= len)
    return FALSE;
  for (i++; i < len; i++)
    if (!g_ascii_isspace (rec[i]))
      return FALSE;
  return TRUE;
}

/* The string member `key` of an object, or NULL. */
static const gchar *
string_member (JsonObject * o, const char *key)
{
  JsonNode *m = json_object_get_member (o, key);

  return m && JSON_NODE_HOLDS_VALUE (m)
      && json_node_get_value_type (m) == G_TYPE_STRING ? json_node_get_string (m)
      : NULL;
}

/* If the record is a summary, stores its input and status and returns TRUE. */
static gboolean
parse_summary (const gchar * rec, gsize len, TagFormat fmt, gchar ** input,
    gchar ** status)
{
  if (fmt == TAG_FORMAT_JSONL) {
    JsonParser *parser;
    JsonNode *root;
    JsonObject *o;
    const gchar *t, *i, *s;
    gboolean ok = FALSE;

    if (g_strstr_len (rec, len, "\"summary\"") == NULL || !one_object (rec, len))
      return FALSE;
    parser = json_parser_new ();
    if (!json_parser_load_from_data (parser, rec, (gssize) len, NULL)
        || (root = json_parser_get_root (parser)) == NULL
        || !JSON_NODE_HOLDS_OBJECT (root)) {
      g_object_unref (parser);
      return FALSE;
    }
    o = json_node_get_object (root);
    t = string_member (o, "type");
    i = string_member (o, "input");
    s = string_member (o, "status");
    if (t && !strcmp (t, "summary") && i && s) {
      *input = g_strdup (i);
      *status = g_strdup (s);
      ok = TRUE;
    }
    g_object_unref (parser);
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
