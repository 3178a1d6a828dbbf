/* gpunet-tag-resume.c: an earlier output of gpunet-tag, in memory, split into
 * records and per-input blocks (see gpunet-tag-resume.h). */
#include <stdlib.h>
#include <string.h>

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
  if (q || (f->len - 1 != TAG_CSV_COLUMNS && f->len - 1 != TAG_CSV_COLUMNS_24
          && f->len - 1 != TAG_CSV_COLUMNS_22)) {
    g_strfreev ((gchar **) g_ptr_array_free (f, FALSE));
    return NULL;
  }
  return (gchar **) g_ptr_array_free (f, FALSE);
}

/* ---- a strict reader of one JSON object, for summary records ----
 * json-glib 1.6 leaks on damaged lines (the value built so far when text follows
 * it, a string with a bad \u escape, ...), and a damaged output holds such lines.
 * The tools reach the engine's strict reader (models/json.c) only through
 * gpunet.h, which does not offer it; this one reads RFC 8259, keeps nothing but
 * the top-level string members asked for, and owns every allocation. */
typedef struct {
  const gchar *p, *end;
} Rd;

static void
rd_ws (Rd * r)
{
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n'
          || *r->p == '\r'))
    r->p++;
}

static gint
rd_hex4 (Rd * r)
{
  gint v = 0;

  if (r->end - r->p < 4)
    return -1;
  for (gint k = 0; k < 4; k++) {
    gint d = g_ascii_xdigit_value (*r->p++);

    if (d < 0)
      return -1;
    v = v * 16 + d;
  }
  return v;
}

/* A string at r->p; its UTF-8 appended to `out` when not NULL.  Refused: raw
 * control characters, unknown escapes, \u0000, unpaired surrogates, bad UTF-8. */
static gboolean
rd_string (Rd * r, GString * out)
{
  const gchar *start;

  if (r->p >= r->end || *r->p != '"')
    return FALSE;
  start = ++r->p;
  while (r->p < r->end) {
    guchar c = (guchar) * r->p;

    if (c == '"') {
      gboolean utf8 = g_utf8_validate (start, r->p - start, NULL);

      r->p++;
      return utf8;
    }
    if (c < 0x20)
      return FALSE;
    r->p++;
    if (c != '\\') {
      if (out)
        g_string_append_c (out, (gchar) c);
      continue;
    }
    if (r->p >= r->end)
      return FALSE;
    c = (guchar) * r->p++;
    if (c == 'u') {
      gint u = rd_hex4 (r);

      if (u <= 0 || (u >= 0xdc00 && u <= 0xdfff))
        return FALSE;
      if (u >= 0xd800 && u <= 0xdbff) {
        gint lo;

        if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
          return FALSE;
        r->p += 2;
        lo = rd_hex4 (r);
        if (lo < 0xdc00 || lo > 0xdfff)
          return FALSE;
        u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
      }
      if (out)
        g_string_append_unichar (out, (gunichar) u);
    } else {
      static const gchar from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
      const gchar *e = c ? strchr (from, c) : NULL;

      if (e == NULL)
        return FALSE;
      if (out)
        g_string_append_c (out, to[e - from]);
    }
  }
  return FALSE;
}

static gboolean
rd_digits (Rd * r)
{
  const gchar *q = r->p;

  while (r->p < r->end && g_ascii_isdigit (*r->p))
    r->p++;
  return r->p > q;
}

static gboolean
rd_number (Rd * r)
{
  if (r->p < r->end && *r->p == '-')
    r->p++;
  if (r->p < r->end && *r->p == '0')
    r->p++;
  else if (!rd_digits (r))
    return FALSE;
  if (r->p < r->end && *r->p == '.') {
    r->p++;
    if (!rd_digits (r))
      return FALSE;
  }
  if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
    r->p++;
    if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
      r->p++;
    if (!rd_digits (r))
      return FALSE;
  }
  return TRUE;
}

static gboolean rd_value (Rd * r, gint depth, GString * str, gboolean * is_str);

/* An object at r->p; with `keys` (the top level) its string members "type",
 * "input" and "status" go to keys[0..2] (the last of a repeated key wins, and a
 * value of another kind unsets it). */
static gboolean
rd_object (Rd * r, gint depth, GString ** keys)
{
  static const gchar *const names[] = { "type", "input", "status" };

  r->p++;
  rd_ws (r);
  if (r->p < r->end && *r->p == '}') {
    r->p++;
    return TRUE;
  }
  for (;;) {
    GString *key = g_string_new (NULL), *val;
    gboolean ok, is_str = FALSE;
    gint want = -1;

    rd_ws (r);
    ok = rd_string (r, key);
    for (gint k = 0; ok && keys && k < 3; k++)
      if (strcmp (key->str, names[k]) == 0)
        want = k;
    g_string_free (key, TRUE);
    rd_ws (r);
    if (!ok || r->p >= r->end || *r->p != ':')
      return FALSE;
    r->p++;
    rd_ws (r);
    val = want >= 0 ? g_string_new (NULL) : NULL;
    ok = rd_value (r, depth + 1, val, &is_str);
    if (want >= 0) {
      if (keys[want])
        g_string_free (keys[want], TRUE);
      keys[want] = NULL;
      if (ok && is_str)
        keys[want] = val;
      else
        g_string_free (val, TRUE);
    }
    if (!ok)
      return FALSE;
    rd_ws (r);
    if (r->p < r->end && *r->p == ',') {
      r->p++;
      continue;
    }
    if (r->p < r->end && *r->p == '}') {
      r->p++;
      return TRUE;
    }
    return FALSE;
  }
}

/* One value at r->p (64 levels at most); a string's text goes to `str` when not
 * NULL, and *is_str says whether it was one. */
static gboolean
rd_value (Rd * r, gint depth, GString * str, gboolean * is_str)
{
  static const gchar *const lit[] = { "true", "false", "null" };

  if (is_str)
    *is_str = FALSE;
  if (depth > 64 || r->p >= r->end)
    return FALSE;
  if (*r->p == '"') {
    if (is_str)
      *is_str = TRUE;
    return rd_string (r, str);
  }
  if (*r->p == '{')
    return rd_object (r, depth, NULL);
  if (*r->p == '[') {
    r->p++;
    rd_ws (r);
    if (r->p < r->end && *r->p == ']') {
      r->p++;
      return TRUE;
    }
    for (;;) {
      rd_ws (r);
      if (!rd_value (r, depth + 1, NULL, NULL))
        return FALSE;
      rd_ws (r);
      if (r->p < r->end && *r->p == ',') {
        r->p++;
        continue;
      }
      if (r->p < r->end && *r->p == ']') {
        r->p++;
        return TRUE;
      }
      return FALSE;
    }
  }
  for (guint k = 0; k < G_N_ELEMENTS (lit); k++) {
    gsize n = strlen (lit[k]);

    if ((gsize) (r->end - r->p) >= n && strncmp (r->p, lit[k], n) == 0) {
      r->p += n;
      return TRUE;
    }
  }
  return rd_number (r);
}

/* Reads `rec` as exactly one JSON object (whitespace around it); on success
 * keys[0..2] hold its string members "type", "input" and "status", or NULL. */
static gboolean
read_object (const gchar * rec, gsize len, GString ** keys)
{
  Rd r = { rec, rec + len };
  gboolean ok;

  rd_ws (&r);
  ok = r.p < r.end && *r.p == '{' && rd_object (&r, 0, keys);
  rd_ws (&r);
  return ok && r.p == r.end;
}

/* If the record is a summary, stores its input and status and returns TRUE. */
static gboolean
parse_summary (const gchar * rec, gsize len, TagFormat fmt, gchar ** input,
    gchar ** status)
{
  if (fmt == TAG_FORMAT_JSONL) {
    GString *keys[3] = { NULL, NULL, NULL };
    gboolean ok = FALSE;

    if (g_strstr_len (rec, len, "\"summary\"") == NULL)
      return FALSE;
    if (read_object (rec, len, keys) && keys[0] && keys[1] && keys[2]
        && strcmp (keys[0]->str, "summary") == 0) {
      *input = g_strdup (keys[1]->str);
      *status = g_strdup (keys[2]->str);
      ok = TRUE;
    }
    for (gint k = 0; k < 3; k++)
      if (keys[k])
        g_string_free (keys[k], TRUE);
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
  static const struct {
    const gchar *text;
    guint columns;
  } headers[] = {
    {TAG_CSV_HEADER, TAG_CSV_COLUMNS},
    {TAG_CSV_HEADER_24 "\n", TAG_CSV_COLUMNS_24},
    {TAG_CSV_HEADER_22 "\n", TAG_CSV_COLUMNS_22},
  };
  gsize pos, block_start;

  scan->header_len = 0;
  scan->columns = 0;
  scan->blocks = g_array_new (FALSE, FALSE, sizeof (TagResumeBlock));
  for (guint i = 0; fmt == TAG_FORMAT_CSV && i < G_N_ELEMENTS (headers); i++) {
    const gsize hl = strlen (headers[i].text);

    if (len >= hl && strncmp (data, headers[i].text, hl) == 0) {
      scan->header_len = hl;
      scan->columns = headers[i].columns;
      break;
    }
  }
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
