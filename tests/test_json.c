/* test_json.c: unit tests of models/json.c: the strict check in front of json-glib
 * (escapes and surrogate pairs, the number grammar, error positions, depth limit,
 * duplicate keys, inputs that are not NUL-terminated, what json-glib 1.6 alone would
 * accept), the trees json-glib builds behind it, and the writer. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "error.h"
#include "json.h"

static JsonNode *
parse_ok (const char *text)
{
  JsonNode *v = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_json_parse (text, strlen (text), &v, NULL, &err);
  CHECK_MSG (st == GPUNET_OK, "'%s' failed: %s", text, err ? err : "");
  free (err);
  return v;
}

/* Parses `text` expecting a format error that contains `needle`. */
static void
parse_bad (const char *text, size_t len, const char *needle)
{
  JsonNode *v = NULL;
  int *lines = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_json_parse (text, len, &v, &lines, &err);
  CHECK_MSG (st == GPUNET_ERR_FORMAT, "'%.*s' gave status %d", (int) len, text, (int) st);
  CHECK (v == NULL && lines == NULL);
  CHECK_CONTAINS (err, needle);
  free (err);
  free (lines);
  if (v)
    json_node_unref (v);
}

static void
node_free (JsonNode *v)
{
  if (v)
    json_node_unref (v);
}

/* Element i of an array node, or NULL. */
static JsonNode *
item (JsonNode *v, guint i)
{
  if (!v || !JSON_NODE_HOLDS_ARRAY (v) || i >= json_array_get_length (json_node_get_array (v)))
    return NULL;
  return json_array_get_element (json_node_get_array (v), i);
}

static guint
length (JsonNode *v)
{
  if (v && JSON_NODE_HOLDS_ARRAY (v))
    return json_array_get_length (json_node_get_array (v));
  if (v && JSON_NODE_HOLDS_OBJECT (v))
    return json_object_get_size (json_node_get_object (v));
  return 0;
}

static int
is_int (JsonNode *v, gint64 want)
{
  return gpunet_json_value_type (v) == G_TYPE_INT64 && json_node_get_int (v) == want;
}

static int
is_double (JsonNode *v, double want)
{
  return gpunet_json_value_type (v) == G_TYPE_DOUBLE && json_node_get_double (v) == want;
}

static int
is_string (JsonNode *v, const char *want)
{
  return gpunet_json_value_type (v) == G_TYPE_STRING && strcmp (json_node_get_string (v), want) == 0;
}

#define BAD(text, needle) parse_bad ((text), strlen (text), (needle))

static void
test_basic (void)
{
  const char *text = "\n\t [ {\"a\": 1, \"b\": [true, false, null], \"c\": {}}, [], \"x\" ]\r\n";
  JsonNode *v = NULL;
  int *lines = NULL;
  char *err = NULL;
  CHECK (gpunet_json_parse (text, strlen (text), &v, &lines, &err) == GPUNET_OK);
  free (err);
  CHECK (v && JSON_NODE_HOLDS_ARRAY (v) && length (v) == 3);
  /* the line where each element of the top-level array starts */
  CHECK (lines && lines[0] == 2 && lines[1] == 2 && lines[2] == 2);
  free (lines);
  if (length (v) == 3) {
    JsonNode *o = item (v, 0);
    CHECK (JSON_NODE_HOLDS_OBJECT (o) && length (o) == 3);
    CHECK (is_int (gpunet_json_get (o, "a"), 1));
    JsonNode *b = gpunet_json_get (o, "b");
    CHECK (b && JSON_NODE_HOLDS_ARRAY (b) && length (b) == 3);
    CHECK (gpunet_json_value_type (item (b, 0)) == G_TYPE_BOOLEAN
        && json_node_get_boolean (item (b, 0)));
    CHECK (gpunet_json_value_type (item (b, 1)) == G_TYPE_BOOLEAN
        && !json_node_get_boolean (item (b, 1)));
    CHECK (item (b, 2) && JSON_NODE_HOLDS_NULL (item (b, 2)));
    CHECK (gpunet_json_value_type (item (b, 2)) == G_TYPE_INVALID);
    CHECK (gpunet_json_get (o, "c") && length (gpunet_json_get (o, "c")) == 0);
    CHECK (gpunet_json_get (o, "missing") == NULL);
    CHECK (gpunet_json_get (item (v, 1), "a") == NULL);  /* not an object */
    CHECK (gpunet_json_get (NULL, "a") == NULL);
    CHECK (JSON_NODE_HOLDS_ARRAY (item (v, 1)) && length (item (v, 1)) == 0);
    CHECK (is_string (item (v, 2), "x"));
  }
  node_free (v);

  /* lines of a multi-line top-level array; none for another root */
  text = "[\n{\"a\":\n [1]},\n\n  7, \"s\"]";
  v = NULL;
  CHECK (gpunet_json_parse (text, strlen (text), &v, &lines, NULL) == GPUNET_OK);
  CHECK (lines && lines[0] == 2 && lines[1] == 5 && lines[2] == 5);
  free (lines);
  node_free (v);
  v = NULL;
  lines = (int *) &err;   /* must be reset */
  CHECK (gpunet_json_parse ("{\"a\": [1]}", 10, &v, &lines, NULL) == GPUNET_OK && !lines);
  node_free (v);
  v = NULL;
  lines = (int *) &err;
  CHECK (gpunet_json_parse ("[]", 2, &v, &lines, NULL) == GPUNET_OK && !lines && length (v) == 0);
  node_free (v);

  /* Scalars at top level. */
  v = parse_ok (" 42 ");
  CHECK (is_int (v, 42));
  node_free (v);
  v = parse_ok ("\"\"");
  CHECK (is_string (v, ""));
  node_free (v);
  v = parse_ok ("null");
  CHECK (v && JSON_NODE_HOLDS_NULL (v));
  node_free (v);

  /* Duplicate keys: the last one wins, as in Python's json.load (json-glib keeps one
   * member per name). */
  v = parse_ok ("{\"k\": 1, \"k\": 2}");
  CHECK (length (v) == 1 && is_int (gpunet_json_get (v, "k"), 2));
  node_free (v);

  /* Empty member names are JSON (json-glib 1.6 accepts them too). */
  v = parse_ok ("{\"\": 3}");
  CHECK (is_int (gpunet_json_get (v, ""), 3));
  node_free (v);

  /* A UTF-8 byte order mark is ignored. */
  v = parse_ok ("\xef\xbb\xbf[1]");
  CHECK (v && JSON_NODE_HOLDS_ARRAY (v) && length (v) == 1);
  node_free (v);
}

static void
test_strings (void)
{
  JsonNode *v = parse_ok ("\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"");
  CHECK (is_string (v, "a\"b\\c/d\be\ff\ng\rh\ti"));
  node_free (v);

  v = parse_ok ("\"\\u0041\\u00e9\\u20AC\"");
  CHECK (is_string (v, "A\xc3\xa9\xe2\x82\xac"));
  node_free (v);

  /* U+1F600 as a surrogate pair, and raw UTF-8 passes through. */
  v = parse_ok ("\"\\uD83D\\uDE00 \xf0\x9f\x98\x80 \xc3\xa9\"");
  CHECK (is_string (v, "\xf0\x9f\x98\x80 \xf0\x9f\x98\x80 \xc3\xa9"));
  node_free (v);

  /* The highest pair and a key with escapes. */
  v = parse_ok ("{\"k\\u00e9\\n\": \"\\uDBFF\\uDFFF\"}");
  CHECK (is_string (gpunet_json_get (v, "k\xc3\xa9\n"), "\xf4\x8f\xbf\xbf"));
  node_free (v);

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
  JsonNode *v = parse_ok ("[0, -0, 7, -12, 1.5, -2.25e2, 1E3, 3.0, 9223372036854775807, "
      "-9223372036854775808, 9.223372036854775808e18, 1e-400, 7.67, 1.7976931348623157e308]");
  CHECK (length (v) == 14);
  if (length (v) == 14) {
    CHECK (is_int (item (v, 0), 0));
    CHECK (is_int (item (v, 1), 0));
    CHECK (is_int (item (v, 2), 7) && json_node_get_double (item (v, 2)) == 7.0);
    CHECK (is_int (item (v, 3), -12));
    CHECK (is_double (item (v, 4), 1.5));
    CHECK (is_double (item (v, 5), -225.0));
    CHECK (is_double (item (v, 6), 1000.0));
    CHECK (is_double (item (v, 7), 3.0));
    CHECK (is_int (item (v, 8), INT64_MAX));
    CHECK (is_int (item (v, 9), INT64_MIN));
    CHECK (is_double (item (v, 10), 9223372036854775808.0));
    CHECK (is_double (item (v, 11), 0.0));
    CHECK (is_double (item (v, 12), 7.67));
    CHECK (is_double (item (v, 13), 1.7976931348623157e308));
  }
  node_free (v);

  /* Integers outside int64: json-glib would wrap them (2^64 became -1), so they are
   * refused with a sentence that says how to write a large number. */
  BAD ("9223372036854775808", "line 1, column 1: integer outside the 64-bit range");
  BAD ("[1, -9223372036854775809]", "line 1, column 5: integer outside the 64-bit range");
  BAD ("[18446744073709551616]", "with a fraction or an exponent");
  BAD ("1.8e308", "too large");

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
    JsonNode *v = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_json_parse (deep, strlen (deep), &v, NULL, &err);
    if (depth == 64) {
      CHECK (st == GPUNET_OK);
    } else {
      CHECK (st == GPUNET_ERR_FORMAT);
      CHECK_CONTAINS (err, "64 levels");
    }
    node_free (v);
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
  JsonNode *v = NULL;
  CHECK (gpunet_json_parse ("[", 1, &v, NULL, NULL) == GPUNET_ERR_FORMAT && v == NULL);
  CHECK (gpunet_json_parse (NULL, 1, &v, NULL, NULL) == GPUNET_ERR_INVALID_ARGUMENT);
}

/* What json-glib 1.6 accepts on its own (comments, single quotes, hex, raw control
 * characters, unknown escapes, \u0000, infinity, wrapped integers): the check in
 * front of it refuses each. */
static void
test_stricter_than_json_glib (void)
{
  static const char *const lax[] = {
    "[1] /* c */", "[1] // c", "['a']", "[0x10]", "[00]", "[-01]", "[1.]", "[.5]",
    "[\"a\tb\"]", "[\"\\x\"]", "[\"\\u12G4\"]", "[\"\\u0000\"]", "[\"\\uD83Dx\"]", "[1e400]",
    "[18446744073709551616]", "[$a]", "", "   ",
  };
  for (size_t i = 0; i < sizeof lax / sizeof lax[0]; i++) {
    JsonNode *v = NULL;
    char *err = NULL;
    CHECK_MSG (gpunet_json_parse (lax[i], strlen (lax[i]), &v, NULL, &err) == GPUNET_ERR_FORMAT,
        "'%s' was accepted", lax[i]);
    CHECK_CONTAINS (err, "line 1, column ");
    free (err);
    node_free (v);
  }
}

/* gpunet_json_generate: json-glib's text, with U+001F escaped as RFC 8259 needs. */
static void
test_generate (void)
{
  JsonNode *v = parse_ok ("{\"n\\u001fm\": [\"a\\u0001\\u001f\\u007f\\\"\\\\\\u00e9\", 12, -3, true, null]}");
  GString *out = g_string_new ("x");
  if (v)
    gpunet_json_generate (v, out);
  CHECK_MSG (strcmp (out->str,
      "x{\"n\\u001fm\":[\"a\\u0001\\u001f\\u007f\\\"\\\\\xc3\xa9\",12,-3,true,null]}") == 0,
      "%s", out->str);
  /* and it reads back to the same tree */
  JsonNode *back = NULL;
  CHECK (gpunet_json_parse (out->str + 1, out->len - 1, &back, NULL, NULL) == GPUNET_OK);
  CHECK (v && back && json_node_equal (v, back));
  node_free (back);
  node_free (v);

  /* doubles: json-glib's "%.17g" reads back exactly; its "1e+20.0" is repaired, also
   * next to strings that look like it */
  v = parse_ok ("[1e20, -2E+22, 1.5, -0.0, 1e-300, 0.1, \"1e+20.0\", true, false, 1e16]");
  g_string_assign (out, "");
  if (v)
    gpunet_json_generate (v, out);
  CHECK_MSG (strstr (out->str, "[1e+20,-2e+22,1.5,-0.0,") == out->str, "%s", out->str);
  CHECK_MSG (strstr (out->str, ",\"1e+20.0\",true,false,10000000000000000.0]"), "%s", out->str);
  back = NULL;
  CHECK (gpunet_json_parse (out->str, out->len, &back, NULL, NULL) == GPUNET_OK);
  CHECK (v && back && json_node_equal (v, back));
  node_free (back);
  node_free (v);
  g_string_free (out, TRUE);
}

/* The parser must honour `len` and never read past it. */
static void
test_not_nul_terminated (void)
{
  /* The buffer holds "[1, 2]]" but only the first 6 bytes are the input. */
  const char full[] = { '[', '1', ',', ' ', '2', ']', ']' };
  char *heap = malloc (sizeof full);
  memcpy (heap, full, sizeof full);
  JsonNode *v = NULL;
  char *err = NULL;
  CHECK (gpunet_json_parse (heap, 6, &v, NULL, &err) == GPUNET_OK);
  CHECK (length (v) == 2 && is_int (item (v, 1), 2));
  node_free (v);
  free (err);
  err = NULL;
  v = NULL;
  CHECK (gpunet_json_parse (heap, sizeof full, &v, NULL, &err) == GPUNET_ERR_FORMAT);
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
    CHECK_MSG (gpunet_json_parse (b, n, &v, NULL, &err) == GPUNET_ERR_FORMAT, "cut '%s'", cuts[i]);
    CHECK (err != NULL);
    free (err);
    free (b);
  }

  /* A number at the very end of the buffer. */
  char *num = malloc (3);
  memcpy (num, "125", 3);
  v = NULL;
  CHECK (gpunet_json_parse (num, 3, &v, NULL, NULL) == GPUNET_OK && is_int (v, 125));
  node_free (v);
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
  test_stricter_than_json_glib ();
  test_generate ();
  return check_report ();
}
