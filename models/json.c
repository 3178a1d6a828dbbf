/* json.c: gpunet_json_parse: one pass over the bytes that enforces RFC 8259 and our
 * limits, with the error sentences users see, then json-glib builds the tree.  The
 * pass only checks (it decodes and converts nothing), never reads past `len` and
 * keeps no recursion: json-glib, whose parser recurses, sees at most 64 levels.
 * Also gpunet_json_generate: json-glib's writer, with its two RFC 8259 slips fixed. */
#include "json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef struct {
  const unsigned char *s;
  size_t len, pos;
  int line;            /* 1-based line of s[pos] */
  size_t line_start;   /* offset of the first byte of that line */
  char **err;
} scan;

/* "line L, column C: expected WHAT, found X"; the column counts bytes from 1. */
static gpunet_status
fail_at (scan *p, size_t at, const char *what)
{
  char found[32];
  if (at >= p->len)
    snprintf (found, sizeof found, "end of input");
  else if (p->s[at] >= 0x20 && p->s[at] < 0x7f)
    snprintf (found, sizeof found, "'%c'", p->s[at]);
  else
    snprintf (found, sizeof found, "byte 0x%02x", p->s[at]);
  return gpunet_fail (p->err, GPUNET_ERR_FORMAT, "line %d, column %lu: expected %s, found %s",
      p->line, (unsigned long) (at - p->line_start + 1), what, found);
}

static gpunet_status
fail_msg (scan *p, size_t at, const char *msg)
{
  return gpunet_fail (p->err, GPUNET_ERR_FORMAT, "line %d, column %lu: %s",
      p->line, (unsigned long) (at - p->line_start + 1), msg);
}

static void
skip_ws (scan *p)
{
  while (p->pos < p->len) {
    unsigned char c = p->s[p->pos];
    if (c == '\n') {
      p->pos++;
      p->line++;
      p->line_start = p->pos;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      p->pos++;
    } else {
      break;
    }
  }
}

static int
peek (const scan *p)
{
  return p->pos < p->len ? p->s[p->pos] : -1;
}

static int
is_digit (int c)
{
  return c >= '0' && c <= '9';
}

/* ---- strings ------------------------------------------------------------------ */

/* Four hex digits at p->pos (consumed), or -1 when they are not there. */
static long
hex4 (scan *p)
{
  if (p->len - p->pos < 4)
    return -1;
  long v = 0;
  for (int i = 0; i < 4; i++) {
    int c = g_ascii_xdigit_value ((char) p->s[p->pos + i]);
    if (c < 0)
      return -1;
    v = v * 16 + c;
  }
  p->pos += 4;
  return v;
}

/* Length of the valid UTF-8 sequence at s (at most `avail` bytes), 0 when invalid:
 * overlong forms, UTF-16 surrogates and code points above U+10FFFF are invalid. */
static size_t
utf8_len (const unsigned char *s, size_t avail)
{
  unsigned char c = s[0];
  size_t n;
  unsigned long cp, min;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) { n = 2; cp = c & 0x1f; min = 0x80; }
  else if (c >= 0xe0 && c <= 0xef) { n = 3; cp = c & 0x0f; min = 0x800; }
  else if (c >= 0xf0 && c <= 0xf4) { n = 4; cp = c & 0x07; min = 0x10000; }
  else return 0;
  if (avail < n)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

/* Checks the string whose opening quote is at p->pos and moves past its closing one. */
static gpunet_status
check_string (scan *p)
{
  p->pos++;
  for (;;) {
    if (p->pos >= p->len)
      return fail_at (p, p->pos, "'\"' to close the string");
    unsigned char c = p->s[p->pos];
    if (c == '"') {
      p->pos++;
      return GPUNET_OK;
    }
    if (c < 0x20)
      return fail_msg (p, p->pos,
          "control character inside a string (write it as an escape such as \\n or \\t)");
    if (c != '\\') {
      size_t n = utf8_len (p->s + p->pos, p->len - p->pos);
      if (n == 0)
        return fail_msg (p, p->pos, "invalid UTF-8 byte sequence inside a string");
      p->pos += n;
      continue;
    }
    size_t esc_at = p->pos++;
    int e = peek (p);
    p->pos++;
    if (e > 0 && strchr ("\"\\/bfnrt", e))
      continue;
    if (e != 'u')
      return fail_at (p, esc_at + 1,
          "one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX after a backslash");
    long cp = hex4 (p);
    if (cp < 0)
      return fail_at (p, p->pos, "4 hexadecimal digits after \\u");
    if (cp == 0)
      return fail_msg (p, esc_at, "\\u0000 (NUL) is not allowed inside a string");
    if (cp >= 0xdc00 && cp <= 0xdfff)
      return fail_msg (p, esc_at,
          "unpaired UTF-16 low surrogate (\\uDC00-\\uDFFF must follow a high surrogate)");
    if (cp >= 0xd800 && cp <= 0xdbff) {
      long lo = -1;
      if (p->len - p->pos >= 2 && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
        p->pos += 2;
        lo = hex4 (p);
      }
      if (lo < 0xdc00 || lo > 0xdfff)
        return fail_msg (p, esc_at,
            "UTF-16 high surrogate not followed by a \\uDC00-\\uDFFF low surrogate");
    }
  }
}

/* ---- numbers ------------------------------------------------------------------ */

static gpunet_status
check_number (scan *p)
{
  size_t start = p->pos;
  int negative = 0, integral = 1;
  if (peek (p) == '-') {
    negative = 1;
    p->pos++;
  }
  if (peek (p) == '0') {
    p->pos++;
    if (is_digit (peek (p)))
      return fail_msg (p, p->pos, "numbers must not have leading zeros");
  } else if (is_digit (peek (p))) {
    while (is_digit (peek (p)))
      p->pos++;
  } else {
    return fail_at (p, p->pos, "a digit");
  }
  if (peek (p) == '.') {
    integral = 0;
    p->pos++;
    if (!is_digit (peek (p)))
      return fail_at (p, p->pos, "a digit after the decimal point");
    while (is_digit (peek (p)))
      p->pos++;
  }
  if (peek (p) == 'e' || peek (p) == 'E') {
    integral = 0;
    p->pos++;
    if (peek (p) == '+' || peek (p) == '-')
      p->pos++;
    if (!is_digit (peek (p)))
      return fail_at (p, p->pos, "a digit in the exponent");
    while (is_digit (peek (p)))
      p->pos++;
  }

  if (integral) {
    /* json-glib stores integers as int64 and wraps larger ones silently */
    uint64_t acc = 0, limit = negative ? (uint64_t) INT64_MAX + 1u : (uint64_t) INT64_MAX;
    for (size_t i = start + (size_t) negative; i < p->pos; i++) {
      unsigned dg = (unsigned) (p->s[i] - '0');
      if (acc > (limit - dg) / 10)
        return fail_msg (p, start, "integer outside the 64-bit range "
            "(-9223372036854775808 to 9223372036854775807); write it with a fraction or "
            "an exponent if a floating-point number is meant");
      acc = acc * 10 + dg;
    }
    return GPUNET_OK;
  }
  /* A fraction or an exponent: json-glib would turn an overflow into infinity. */
  size_t n = p->pos - start;
  char small[64];
  char *buf = n < sizeof small ? small : malloc (n + 1);
  if (!buf)
    return gpunet_fail (p->err, GPUNET_ERR_NO_MEMORY, "out of memory while parsing JSON");
  memcpy (buf, p->s + start, n);
  buf[n] = '\0';
  double d = g_ascii_strtod (buf, NULL);
  if (buf != small)
    free (buf);
  if (!isfinite (d))
    return fail_msg (p, start, "number is too large for a double");
  return GPUNET_OK;
}

/* ---- structure ---------------------------------------------------------------- */

static int
match_literal (scan *p, const char *lit)
{
  size_t n = strlen (lit);
  if (p->len - p->pos < n || memcmp (p->s + p->pos, lit, n) != 0)
    return 0;
  p->pos += n;
  return 1;
}

/* Records the line of an item of the top-level array. */
static int
push_line (int **lines, size_t *n, size_t *cap, int line)
{
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    int *q = realloc (*lines, nc * sizeof *q);
    if (!q)
      return 0;
    *lines = q;
    *cap = nc;
  }
  (*lines)[(*n)++] = line;
  return 1;
}

/* The whole grammar as a loop over a stack of open containers ('[' or '{'). */
static gpunet_status
check_text (scan *p, int **lines, size_t *n_lines)
{
  enum { VALUE, FIRST_VALUE, KEY, FIRST_KEY, AFTER } state = VALUE;
  char open[GPUNET_JSON_MAX_DEPTH];
  int depth = 0;
  size_t cap = 0;
  gpunet_status st;

  skip_ws (p);
  for (;;) {
    int c = peek (p);
    if (state == KEY || state == FIRST_KEY) {
      if (c == '}' && state == FIRST_KEY) {
        p->pos++;
        depth--;
        state = AFTER;
      } else if (c != '"') {
        return fail_at (p, p->pos, state == KEY ? "a member name in double quotes"
            : "a member name in double quotes or '}'");
      } else {
        if ((st = check_string (p)) != GPUNET_OK)
          return st;
        skip_ws (p);
        if (peek (p) != ':')
          return fail_at (p, p->pos, "':' after the member name");
        p->pos++;
        state = VALUE;
      }
    } else if (state == AFTER) {
      if (depth == 0) {
        if (p->pos < p->len)
          return fail_at (p, p->pos, "end of input after the top-level value");
        return GPUNET_OK;
      }
      int is_object = open[depth - 1] == '{';
      if (c == ',') {
        p->pos++;
        state = is_object ? KEY : VALUE;
      } else if (c == (is_object ? '}' : ']')) {
        p->pos++;
        depth--;
      } else {
        return fail_at (p, p->pos, is_object ? "',' or '}' after an object member"
            : "',' or ']' after an array element");
      }
    } else if (c == ']' && state == FIRST_VALUE) {
      p->pos++;
      depth--;
      state = AFTER;
    } else {
      /* a value */
      if (lines && depth == 1 && open[0] == '['
          && !push_line (lines, n_lines, &cap, p->line))
        return gpunet_fail (p->err, GPUNET_ERR_NO_MEMORY, "out of memory while parsing JSON");
      state = AFTER;
      if (c == '[' || c == '{') {
        if (depth == GPUNET_JSON_MAX_DEPTH)
          return fail_msg (p, p->pos, "arrays and objects are nested more than 64 levels deep");
        open[depth++] = (char) c;
        p->pos++;
        state = c == '[' ? FIRST_VALUE : FIRST_KEY;
      } else if (c == '"') {
        if ((st = check_string (p)) != GPUNET_OK)
          return st;
      } else if (c == '-' || is_digit (c)) {
        if ((st = check_number (p)) != GPUNET_OK)
          return st;
      } else if (!((c == 't' && match_literal (p, "true"))
            || (c == 'f' && match_literal (p, "false"))
            || (c == 'n' && match_literal (p, "null")))) {
        return fail_at (p, p->pos,
            "a JSON value (object, array, string, number, true, false or null)");
      }
    }
    skip_ws (p);
  }
}

gpunet_status
gpunet_json_parse (const char *text, size_t len, JsonNode **out, int **item_lines,
    char **error_text)
{
  if (item_lines)
    *item_lines = NULL;
  if (!out || (!text && len))
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "gpunet_json_parse: no input");
  *out = NULL;
  if (len > (size_t) G_MAXSSIZE)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT, "the JSON text is too large");
  scan p = { (const unsigned char *) (text ? text : ""), len, 0, 1, 0, error_text };
  /* A UTF-8 byte order mark is tolerated (RFC 8259 section 8.1 allows ignoring it). */
  if (len >= 3 && p.s[0] == 0xef && p.s[1] == 0xbb && p.s[2] == 0xbf)
    p.pos = p.line_start = 3;
  size_t start = p.pos, n_lines = 0;
  int *lines = NULL;
  gpunet_status st = check_text (&p, item_lines ? &lines : NULL, &n_lines);
  if (st != GPUNET_OK) {
    free (lines);
    return st;
  }

  JsonParser *parser = json_parser_new ();
  GError *gerr = NULL;
  if (!json_parser_load_from_data (parser, (const gchar *) p.s + start,
          (gssize) (len - start), &gerr)) {
    st = gpunet_fail (error_text, GPUNET_ERR_FORMAT, "json-glib refused the JSON text: %s",
        gerr ? gerr->message : "unknown error");
    g_clear_error (&gerr);
    g_object_unref (parser);
    free (lines);
    return st;
  }
  JsonNode *root = json_parser_steal_root (parser);
  g_object_unref (parser);
  if (item_lines && root && JSON_NODE_HOLDS_ARRAY (root)) {
    *item_lines = lines;
    lines = NULL;
  }
  free (lines);
  *out = root;
  return GPUNET_OK;
}

/* json-glib 1.6's two slips, fixed in its output from byte `from` on: U+001F left raw
 * inside strings (RFC 8259 needs \u001f), and ".0" appended to a double printed in
 * exponent form without a point ("1e+20.0", which is not JSON). */
static void
fix_generated (GString *out, gsize from)
{
  int in_string = 0;
  for (gsize i = from; i < out->len; i++) {
    char c = out->str[i];
    if (in_string) {
      if (c == '\\') {
        i++;
      } else if (c == '"') {
        in_string = 0;
      } else if (c == 0x1f) {
        out->str[i] = '\\';
        g_string_insert (out, (gssize) i + 1, "u001f");
        i += 5;
      }
    } else if (c == '"') {
      in_string = 1;
    } else if (c == 'e' || c == 'E') {   /* outside strings: an exponent (or true/false) */
      gsize j = i + 1;
      if (j < out->len && (out->str[j] == '+' || out->str[j] == '-'))
        j++;
      while (j < out->len && g_ascii_isdigit (out->str[j]))
        j++;
      if (j + 1 < out->len && out->str[j] == '.' && out->str[j + 1] == '0')
        g_string_erase (out, (gssize) j, 2);
      i = j - 1;
    }
  }
}

void
gpunet_json_generate (JsonNode *node, GString *out)
{
  JsonGenerator *gen = json_generator_new ();
  gsize from = out->len;
  json_generator_set_root (gen, node);
  json_generator_to_gstring (gen, out);
  g_object_unref (gen);
  fix_generated (out, from);
}

JsonNode *
gpunet_json_get (JsonNode *node, const char *key)
{
  if (!node || !key || !JSON_NODE_HOLDS_OBJECT (node))
    return NULL;
  return json_object_get_member (json_node_get_object (node), key);
}
