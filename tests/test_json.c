/* test_json.c: unit tests of the strict JSON reader (models/json.c): escapes and
 * surrogate pairs, the number grammar, error positions, depth limit, duplicate keys,
 * and inputs that are not NUL-terminated. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "error.h"
#include "json.h"

static gpunet_json *
parse_ok (const char *text)
{
  gpunet_json *v = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_json_parse (text, strlen (text), &v, &err);
  CHECK_MSG (st == GPUNET_OK, "'%s' failed: %s", text, err ? err : "");
  free (err);
  return v;
}

/* Parses `text` expecting a format error that contains `needle`. */
static void
parse_bad (const char *text, size_t len, const char *needle)
{
  gpunet_json *v = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_json_parse (text, len, &v, &err);
  CHECK_MSG (st == GPUNET_ERR_FORMAT, "'%.*s' gave status %d", (int) len, text, (int) st);
  CHECK (v == NULL);
  CHECK_CONTAINS (err, needle);
  free (err);
  gpunet_json_free (v);
}

#define BAD(text, needle) parse_bad ((text), strlen (text), (needle))

static void
test_basic (void)
{
  gpunet_json *v = parse_ok ("\n\t [ {\"a\": 1, \"b\": [true, false, null], \"c\": {}}, [], \"x\" ]\r\n");
  CHECK (v && v->type == GPUNET_JSON_ARRAY && v->n == 3);
  if (v && v->n == 3) {
    const gpunet_json *o = &v->items[0];
    CHECK (o->type == GPUNET_JSON_OBJECT && o->n == 3);
    CHECK (o->line == 2);
    const gpunet_json *a = gpunet_json_get (o, "a");
    CHECK (a && a->type == GPUNET_JSON_NUMBER && a->is_integer && a->integer == 1);
    const gpunet_json *b = gpunet_json_get (o, "b");
    CHECK (b && b->type == GPUNET_JSON_ARRAY && b->n == 3);
    if (b && b->n == 3) {
      CHECK (b->items[0].type == GPUNET_JSON_BOOL && b->items[0].boolean == 1);
      CHECK (b->items[1].type == GPUNET_JSON_BOOL && b->items[1].boolean == 0);
      CHECK (b->items[2].type == GPUNET_JSON_NULL);
    }
    CHECK (gpunet_json_get (o, "c") && gpunet_json_get (o, "c")->n == 0);
    CHECK (gpunet_json_get (o, "missing") == NULL);
    CHECK (gpunet_json_get (&v->items[1], "a") == NULL);  /* not an object */
    CHECK (v->items[1].type == GPUNET_JSON_ARRAY && v->items[1].n == 0);
    CHECK (v->items[2].type == GPUNET_JSON_STRING && strcmp (v->items[2].string, "x") == 0);
  }
  gpunet_json_free (v);

  /* Scalars at top level. */
  v = parse_ok (" 42 ");
  CHECK (v && v->type == GPUNET_JSON_NUMBER && v->integer == 42);
  gpunet_json_free (v);
  v = parse_ok ("\"\"");
  CHECK (v && v->type == GPUNET_JSON_STRING && v->string[0] == '\0');
  gpunet_json_free (v);

  /* Duplicate keys: the last one wins, as in Python's json.load. */
  v = parse_ok ("{\"k\": 1, \"k\": 2}");
  CHECK (v && v->n == 2 && gpunet_json_get (v, "k")->integer == 2);
  gpunet_json_free (v);

  /* A UTF-8 byte order mark is ignored. */
  v = parse_ok ("\xef\xbb\xbf[1]");
  CHECK (v && v->type == GPUNET_JSON_ARRAY && v->n == 1);
  gpunet_json_free (v);

  gpunet_json_free (NULL);
}

static void
test_strings (void)
{
  gpunet_json *v = parse_ok ("\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"");
  CHECK (v && strcmp (v->string, "a\"b\\c/d\be\ff\ng\rh\ti") == 0);
  gpunet_json_free (v);

  v = parse_ok ("\"\\u0041\\u00e9\\u20AC\"");
  CHECK (v && strcmp (v->string, "A\xc3\xa9\xe2\x82\xac") == 0);
  gpunet_json_free (v);

  /* U+1F600 as a surrogate pair, and raw UTF-8 passes through. */
  v = parse_ok ("\"\\uD83D\\uDE00 \xf0\x9f\x98\x80 \xc3\xa9\"");
  CHECK (v && strcmp (v->string, "\xf0\x9f\x98\x80 \xf0\x9f\x98\x80 \xc3\xa9") == 0);
  gpunet_json_free (v);

  BAD ("\"\\u0000\"", "NUL");
  BAD ("\"\\uD83D\"", "high surrogate");
  BAD ("\"\\uD83Dx\"", "high surrogate");
  BAD ("\"\\uD83D\\u0041\"", "high surrogate");
  BAD ("\"\\uDE00\"", "low surrogate");
  BAD ("\"\\u12G4\"", "hexadecimal");
  BAD ("\"\\u12\"", "hexadecimal");
  BAD ("\"\\x\"", "after a backslash");
  BAD ("\"a\tb\"", "control character");
  BAD ("\"a\nb\"", "control character");
  BAD ("\"abc", "close the string");
  BAD ("\"abc\\", "after a backslash");
  BAD ("\"\xc3\"", "UTF-8");          /* truncated sequence */
  BAD ("\"\xc0\xaf\"", "UTF-8");      /* overlong */
  BAD ("\"\xed\xa0\x80\"", "UTF-8");  /* encoded surrogate */
  BAD ("\"\xff\"", "UTF-8");
  /* An embedded raw NUL byte is a control character. */
  parse_bad ("\"a\0b\"", 5, "control character");
}

static void
test_numbers (void)
{
  gpunet_json *v = parse_ok ("[0, -0, 7, -12, 1.5, -2.25e2, 1E3, 3.0, 9223372036854775807, "
      "-9223372036854775808, 9223372036854775808, 1e-400, 7.67]");
  CHECK (v && v->n == 13);
  if (v && v->n == 13) {
    gpunet_json *it = v->items;
    CHECK (it[0].is_integer && it[0].integer == 0);
    CHECK (it[1].is_integer && it[1].integer == 0);
    CHECK (it[2].is_integer && it[2].integer == 7 && it[2].number == 7.0);
    CHECK (it[3].is_integer && it[3].integer == -12);
    CHECK (!it[4].is_integer && it[4].number == 1.5);
    CHECK (!it[5].is_integer && it[5].number == -225.0);
    CHECK (!it[6].is_integer && it[6].number == 1000.0);
    CHECK (!it[7].is_integer && it[7].number == 3.0);
    CHECK (it[8].is_integer && it[8].integer == INT64_MAX);
    CHECK (it[9].is_integer && it[9].integer == INT64_MIN);
    CHECK (!it[10].is_integer && it[10].number == 9223372036854775808.0);
    CHECK (!it[11].is_integer && it[11].number == 0.0);
    CHECK (it[12].number == 7.67);
  }
  gpunet_json_free (v);

  BAD ("01", "leading zeros");
  BAD ("-", "a digit");
  BAD ("+1", "expected a JSON value");
  BAD ("1.", "after the decimal point");
  BAD (".5", "expected a JSON value");
  BAD ("1e", "exponent");
  BAD ("1e+", "exponent");
  BAD ("1e400", "too large");
  BAD ("-1e400", "too large");
  BAD ("NaN", "expected a JSON value");
  BAD ("Infinity", "expected a JSON value");
  BAD ("0x10", "end of input after the top-level value");
}

static void
test_errors (void)
{
  BAD ("", "line 1, column 1: expected a JSON value");
  BAD ("   \n  ", "line 2, column 3: expected a JSON value");
  BAD ("[1, 2,]", "line 1, column 7: expected a JSON value");
  BAD ("[\n  1\n  2\n]", "line 3, column 3: expected ',' or ']'");
  BAD ("{\"a\" 1}", "line 1, column 6: expected ':'");
  BAD ("{\"a\": 1,}", "line 1, column 9: expected a member name");
  BAD ("{1: 2}", "member name");
  BAD ("{\"a\": 1 \"b\": 2}", "expected ',' or '}'");
  BAD ("[1] x", "line 1, column 5: expected end of input");
  BAD ("[1]]", "end of input after the top-level value");
  BAD ("tru", "expected a JSON value");
  BAD ("nul", "expected a JSON value");
  BAD ("[true false]", "',' or ']'");
  BAD ("[", "found end of input");
  BAD ("{", "found end of input");
  BAD ("[1,", "found end of input");
  BAD ("\x01", "byte 0x01");
  BAD ("['a']", "found '''");
  BAD ("[1]\f", "byte 0x0c");   /* form feed is not JSON whitespace */
  BAD ("[1] // comment", "end of input");

  /* Depth: 64 levels are fine, 65 are not. */
  char deep[2 * 100 + 1];
  for (int depth = 64; depth <= 100; depth += 36) {
    for (int i = 0; i < depth; i++) {
      deep[i] = '[';
      deep[2 * depth - 1 - i] = ']';
    }
    deep[2 * depth] = '\0';
    gpunet_json *v = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_json_parse (deep, strlen (deep), &v, &err);
    if (depth == 64) {
      CHECK (st == GPUNET_OK);
    } else {
      CHECK (st == GPUNET_ERR_FORMAT);
      CHECK_CONTAINS (err, "64 levels");
    }
    gpunet_json_free (v);
    free (err);
  }
  {
    char d65[131];
    memset (d65, '[', 65);
    memset (d65 + 65, ']', 65);
    d65[130] = '\0';
    BAD (d65, "64 levels");
  }

  /* A NULL error_text pointer is allowed. */
  gpunet_json *v = NULL;
  CHECK (gpunet_json_parse ("[", 1, &v, NULL) == GPUNET_ERR_FORMAT && v == NULL);
}

/* The parser must honour `len` and never read past it. */
static void
test_not_nul_terminated (void)
{
  /* The buffer holds "[1, 2]]" but only the first 6 bytes are the input. */
  const char full[] = { '[', '1', ',', ' ', '2', ']', ']' };
  char *heap = malloc (sizeof full);
  memcpy (heap, full, sizeof full);
  gpunet_json *v = NULL;
  char *err = NULL;
  CHECK (gpunet_json_parse (heap, 6, &v, &err) == GPUNET_OK);
  CHECK (v && v->n == 2 && v->items[1].integer == 2);
  gpunet_json_free (v);
  free (err);
  err = NULL;
  v = NULL;
  CHECK (gpunet_json_parse (heap, sizeof full, &v, &err) == GPUNET_ERR_FORMAT);
  free (err);
  free (heap);

  /* Truncated tokens at the very end of an exactly-sized heap buffer (ASan catches
   * any read past the end). */
  static const char *const cuts[] = { "tru", "fals", "nul", "\"ab", "\"\\u00", "\"\\uD83D\\uDE",
    "12.", "1e", "-", "[1, ", "{\"a\"", "{\"a\":", "\"\xe2\x82" };
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    size_t n = strlen (cuts[i]);
    char *b = malloc (n);
    memcpy (b, cuts[i], n);
    v = NULL;
    err = NULL;
    CHECK_MSG (gpunet_json_parse (b, n, &v, &err) == GPUNET_ERR_FORMAT, "cut '%s'", cuts[i]);
    CHECK (err != NULL);
    free (err);
    free (b);
  }

  /* A number at the very end of the buffer. */
  char *num = malloc (3);
  memcpy (num, "125", 3);
  v = NULL;
  CHECK (gpunet_json_parse (num, 3, &v, NULL) == GPUNET_OK && v && v->integer == 125);
  gpunet_json_free (v);
  free (num);
}

int
main (void)
{
  test_basic ();
  test_strings ();
  test_numbers ();
  test_errors ();
  test_not_nul_terminated ();
  return check_report ();
}
