/* json.c: the strict RFC 8259 reader of json.h.  Owns tokenising, UTF-8 and escape
 * handling, number conversion and the value tree's memory.  The input is a byte range
 * that need not be NUL-terminated; every read is bounds-checked.  Duplicate object
 * keys are kept; gpunet_json_get returns the LAST one, as Python's json.load does. */
#include "json.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define JSON_MAX_DEPTH 64

typedef struct {
  const unsigned char *s;
  size_t len, pos;
  int line;            /* 1-based line of s[pos] */
  size_t line_start;   /* offset of the first byte of that line */
  char **err;
} parser;

static void
free_contents (gpunet_json *v)
{
  if (!v)
    return;
  free (v->string);
  if (v->items) {
    for (size_t i = 0; i < v->n; i++)
      free_contents (&v->items[i]);
    free (v->items);
  }
  if (v->keys) {
    for (size_t i = 0; i < v->n; i++)
      free (v->keys[i]);
    free (v->keys);
  }
  memset (v, 0, sizeof *v);
}

/* Column of byte offset `at` on the current line (1-based, counting bytes). */
static gpunet_status
fail_at (parser *p, size_t at, const char *what)
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
fail_msg (parser *p, size_t at, const char *msg)
{
  return gpunet_fail (p->err, GPUNET_ERR_FORMAT, "line %d, column %lu: %s",
      p->line, (unsigned long) (at - p->line_start + 1), msg);
}

static gpunet_status
no_memory (parser *p)
{
  return gpunet_fail (p->err, GPUNET_ERR_NO_MEMORY, "out of memory while parsing JSON");
}

static void
skip_ws (parser *p)
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
peek (const parser *p)
{
  return p->pos < p->len ? p->s[p->pos] : -1;
}

/* ---- strings ------------------------------------------------------------------ */

typedef struct {
  char *d;
  size_t n, cap;
} strbuf;

static int
sb_put (strbuf *b, const unsigned char *src, size_t n)
{
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 32;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *d = realloc (b->d, cap);
    if (!d)
      return 0;
    b->d = d;
    b->cap = cap;
  }
  memcpy (b->d + b->n, src, n);
  b->n += n;
  b->d[b->n] = '\0';
  return 1;
}

static int
sb_put_cp (strbuf *b, unsigned long cp)
{
  unsigned char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (unsigned char) cp;
    n = 1;
  } else if (cp < 0x800) {
    u[0] = (unsigned char) (0xc0 | (cp >> 6));
    u[1] = (unsigned char) (0x80 | (cp & 0x3f));
    n = 2;
  } else if (cp < 0x10000) {
    u[0] = (unsigned char) (0xe0 | (cp >> 12));
    u[1] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
    u[2] = (unsigned char) (0x80 | (cp & 0x3f));
    n = 3;
  } else {
    u[0] = (unsigned char) (0xf0 | (cp >> 18));
    u[1] = (unsigned char) (0x80 | ((cp >> 12) & 0x3f));
    u[2] = (unsigned char) (0x80 | ((cp >> 6) & 0x3f));
    u[3] = (unsigned char) (0x80 | (cp & 0x3f));
    n = 4;
  }
  return sb_put (b, u, n);
}

/* Reads 4 hex digits at p->pos; -1 when they are not there. */
static long
read_hex4 (parser *p)
{
  if (p->len - p->pos < 4)
    return -1;
  long v = 0;
  for (int i = 0; i < 4; i++) {
    int c = p->s[p->pos + i], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    v = v * 16 + d;
  }
  p->pos += 4;
  return v;
}

/* Length of a valid UTF-8 sequence starting at s[0] (at most `avail` bytes), 0 if invalid
 * (overlong forms, UTF-16 surrogates and code points above U+10FFFF are invalid). */
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

/* Parses a string whose opening quote is at p->pos; *out gets a malloc()ed copy. */
static gpunet_status
parse_string (parser *p, char **out)
{
  strbuf b = { NULL, 0, 0 };
  p->pos++;  /* opening quote */
  if (!sb_put (&b, (const unsigned char *) "", 0))
    return no_memory (p);
  for (;;) {
    if (p->pos >= p->len) {
      free (b.d);
      return fail_at (p, p->pos, "'\"' to close the string");
    }
    unsigned char c = p->s[p->pos];
    if (c == '"') {
      p->pos++;
      *out = b.d;
      return GPUNET_OK;
    }
    if (c < 0x20) {
      free (b.d);
      return fail_msg (p, p->pos,
          "control character inside a string (write it as an escape such as \\n or \\t)");
    }
    if (c == '\\') {
      size_t esc_at = p->pos;
      p->pos++;
      int e = peek (p);
      unsigned char one;
      int ok = 1;
      p->pos++;
      switch (e) {
        case '"': one = '"'; break;
        case '\\': one = '\\'; break;
        case '/': one = '/'; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': {
          long cp = read_hex4 (p);
          if (cp < 0) {
            free (b.d);
            return fail_at (p, p->pos, "4 hexadecimal digits after \\u");
          }
          if (cp == 0) {
            free (b.d);
            return fail_msg (p, esc_at, "\\u0000 (NUL) is not allowed inside a string");
          }
          if (cp >= 0xdc00 && cp <= 0xdfff) {
            free (b.d);
            return fail_msg (p, esc_at,
                "unpaired UTF-16 low surrogate (\\uDC00-\\uDFFF must follow a high surrogate)");
          }
          if (cp >= 0xd800 && cp <= 0xdbff) {
            long lo = -1;
            if (p->len - p->pos >= 2 && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u') {
              p->pos += 2;
              lo = read_hex4 (p);
            }
            if (lo < 0xdc00 || lo > 0xdfff) {
              free (b.d);
              return fail_msg (p, esc_at,
                  "UTF-16 high surrogate not followed by a \\uDC00-\\uDFFF low surrogate");
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          ok = sb_put_cp (&b, (unsigned long) cp);
          if (!ok) {
            free (b.d);
            return no_memory (p);
          }
          continue;
        }
        default:
          free (b.d);
          return fail_at (p, esc_at + 1,
              "one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX after a backslash");
      }
      if (!sb_put (&b, &one, 1)) {
        free (b.d);
        return no_memory (p);
      }
      continue;
    }
    /* A run of plain bytes. */
    size_t start = p->pos;
    while (p->pos < p->len) {
      c = p->s[p->pos];
      if (c == '"' || c == '\\' || c < 0x20)
        break;
      size_t n = utf8_len (p->s + p->pos, p->len - p->pos);
      if (n == 0) {
        free (b.d);
        return fail_msg (p, p->pos, "invalid UTF-8 byte sequence inside a string");
      }
      p->pos += n;
    }
    if (!sb_put (&b, p->s + start, p->pos - start)) {
      free (b.d);
      return no_memory (p);
    }
  }
}

/* ---- numbers ------------------------------------------------------------------ */

static int
is_digit (int c)
{
  return c >= '0' && c <= '9';
}

static gpunet_status
parse_number (parser *p, gpunet_json *v)
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
  size_t n = p->pos - start;

  /* strtod needs a NUL-terminated copy, with the locale's decimal point. */
  char small[64];
  char *buf = n < sizeof small ? small : malloc (n + 1);
  if (!buf)
    return no_memory (p);
  memcpy (buf, p->s + start, n);
  buf[n] = '\0';
  const struct lconv *lc = localeconv ();
  char dp = (lc && lc->decimal_point && lc->decimal_point[0]) ? lc->decimal_point[0] : '.';
  if (dp != '.') {
    char *dot = strchr (buf, '.');
    if (dot)
      *dot = dp;
  }
  double d = strtod (buf, NULL);
  if (buf != small)
    free (buf);
  if (isinf (d) || isnan (d))
    return fail_msg (p, start, "number is too large for a double");

  v->type = GPUNET_JSON_NUMBER;
  v->number = d;
  if (integral) {
    /* Exact int64 conversion with overflow check. */
    uint64_t acc = 0, limit = negative ? (uint64_t) INT64_MAX + 1u : (uint64_t) INT64_MAX;
    int fits = 1;
    for (size_t i = start + (size_t) negative; i < p->pos; i++) {
      unsigned dg = (unsigned) (p->s[i] - '0');
      if (acc > (limit - dg) / 10) {
        fits = 0;
        break;
      }
      acc = acc * 10 + dg;
    }
    if (fits) {
      v->is_integer = 1;
      if (negative)
        v->integer = acc == (uint64_t) INT64_MAX + 1u ? INT64_MIN : -(int64_t) acc;
      else
        v->integer = (int64_t) acc;
    }
  }
  return GPUNET_OK;
}

/* ---- values ------------------------------------------------------------------- */

static gpunet_status parse_value (parser *p, gpunet_json *v, int depth);

static int
match_literal (parser *p, const char *lit)
{
  size_t n = strlen (lit);
  if (p->len - p->pos < n || memcmp (p->s + p->pos, lit, n) != 0)
    return 0;
  p->pos += n;
  return 1;
}

/* Appends *item (and key) to v's arrays, growing them; takes ownership on success. */
static int
push_item (gpunet_json *v, size_t *cap, gpunet_json *item, char *key, int with_keys)
{
  if (v->n == *cap) {
    size_t nc = *cap ? *cap * 2 : 8;
    gpunet_json *items = realloc (v->items, nc * sizeof *items);
    if (!items)
      return 0;
    v->items = items;
    if (with_keys) {
      char **keys = realloc (v->keys, nc * sizeof *keys);
      if (!keys)
        return 0;
      v->keys = keys;
    }
    *cap = nc;
  }
  v->items[v->n] = *item;
  if (with_keys)
    v->keys[v->n] = key;
  v->n++;
  return 1;
}

static gpunet_status
parse_container (parser *p, gpunet_json *v, int depth, int is_object)
{
  size_t cap = 0;
  char close = is_object ? '}' : ']';
  v->type = is_object ? GPUNET_JSON_OBJECT : GPUNET_JSON_ARRAY;
  if (depth > JSON_MAX_DEPTH)
    return fail_msg (p, p->pos, "arrays and objects are nested more than 64 levels deep");
  p->pos++;
  skip_ws (p);
  if (peek (p) == close) {
    p->pos++;
    return GPUNET_OK;
  }
  for (;;) {
    char *key = NULL;
    gpunet_status st;
    if (is_object) {
      if (peek (p) != '"')
        return fail_at (p, p->pos, v->n ? "a member name in double quotes"
            : "a member name in double quotes or '}'");
      if ((st = parse_string (p, &key)) != GPUNET_OK)
        return st;
      skip_ws (p);
      if (peek (p) != ':') {
        free (key);
        return fail_at (p, p->pos, "':' after the member name");
      }
      p->pos++;
      skip_ws (p);
    }
    gpunet_json item;
    memset (&item, 0, sizeof item);
    st = parse_value (p, &item, depth);
    if (st != GPUNET_OK) {
      free_contents (&item);
      free (key);
      return st;
    }
    if (!push_item (v, &cap, &item, key, is_object)) {
      free_contents (&item);
      free (key);
      return no_memory (p);
    }
    skip_ws (p);
    int c = peek (p);
    if (c == ',') {
      p->pos++;
      skip_ws (p);
      continue;
    }
    if (c == close) {
      p->pos++;
      return GPUNET_OK;
    }
    return fail_at (p, p->pos, is_object ? "',' or '}' after an object member"
        : "',' or ']' after an array element");
  }
}

static gpunet_status
parse_value (parser *p, gpunet_json *v, int depth)
{
  v->line = p->line;
  int c = peek (p);
  switch (c) {
    case '{':
      return parse_container (p, v, depth + 1, 1);
    case '[':
      return parse_container (p, v, depth + 1, 0);
    case '"':
      v->type = GPUNET_JSON_STRING;
      return parse_string (p, &v->string);
    case 't':
      if (match_literal (p, "true")) {
        v->type = GPUNET_JSON_BOOL;
        v->boolean = 1;
        return GPUNET_OK;
      }
      break;
    case 'f':
      if (match_literal (p, "false")) {
        v->type = GPUNET_JSON_BOOL;
        return GPUNET_OK;
      }
      break;
    case 'n':
      if (match_literal (p, "null")) {
        v->type = GPUNET_JSON_NULL;
        return GPUNET_OK;
      }
      break;
    default:
      if (c == '-' || is_digit (c))
        return parse_number (p, v);
      break;
  }
  return fail_at (p, p->pos, "a JSON value (object, array, string, number, true, false or null)");
}

gpunet_status
gpunet_json_parse (const char *text, size_t len, gpunet_json **out, char **error_text)
{
  parser p;
  if (!out || (!text && len))
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "gpunet_json_parse: no input");
  *out = NULL;
  p.s = (const unsigned char *) (text ? text : "");
  p.len = len;
  p.pos = 0;
  p.line = 1;
  p.line_start = 0;
  p.err = error_text;
  /* A UTF-8 byte order mark is tolerated (RFC 8259 section 8.1 allows ignoring it). */
  if (len >= 3 && p.s[0] == 0xef && p.s[1] == 0xbb && p.s[2] == 0xbf)
    p.pos = p.line_start = 3;

  gpunet_json *root = calloc (1, sizeof *root);
  if (!root)
    return no_memory (&p);
  skip_ws (&p);
  gpunet_status st = parse_value (&p, root, 0);
  if (st == GPUNET_OK) {
    skip_ws (&p);
    if (p.pos < p.len)
      st = fail_at (&p, p.pos, "end of input after the top-level value");
  }
  if (st != GPUNET_OK) {
    gpunet_json_free (root);
    return st;
  }
  *out = root;
  return GPUNET_OK;
}

void
gpunet_json_free (gpunet_json *value)
{
  if (!value)
    return;
  free_contents (value);
  free (value);
}

const gpunet_json *
gpunet_json_get (const gpunet_json *obj, const char *key)
{
  if (!obj || obj->type != GPUNET_JSON_OBJECT || !key)
    return NULL;
  for (size_t i = obj->n; i-- > 0;)
    if (strcmp (obj->keys[i], key) == 0)
      return &obj->items[i];
  return NULL;
}
