/* json.h: JSON for the engine through json-glib: reading architecture files and
 * safetensors headers (a strict RFC 8259 check with our limits and error sentences in
 * front of json-glib, which builds the tree) and writing safetensors headers.
 * Engine-internal: json-glib never appears in gpunet.h. */
#ifndef GPUNET_JSON_H
#define GPUNET_JSON_H

#include <stddef.h>

#include <json-glib/json-glib.h>

#include "gpunet.h"

#define GPUNET_JSON_MAX_DEPTH 64

/* Checks `len` bytes (need not be NUL-terminated; a leading UTF-8 byte order mark is
 * skipped) and parses them with json-glib.  On success *out holds the root (release
 * it with json_node_unref).  When `item_lines` is not NULL it gets, for a top-level
 * array, a malloc()ed array of the 1-based line where each element starts (free()),
 * and NULL for any other root.
 * Refused with GPUNET_ERR_FORMAT and a sentence naming line and column: anything
 * outside RFC 8259 (json-glib 1.6 alone accepts comments, single quotes, hex numbers,
 * leading zeros, raw control characters and unknown escapes), \u0000 and unpaired
 * surrogates, integers outside int64 (json-glib would wrap them), numbers beyond a
 * double's range, and nesting deeper than GPUNET_JSON_MAX_DEPTH levels.  Duplicate
 * object keys are allowed: the last one wins, as in Python's json.load. */
gpunet_status gpunet_json_parse (const char *text, size_t len, JsonNode **out,
    int **item_lines, char **error_text);

/* Member `key` of an object node, or NULL (also when `node` is NULL or no object). */
JsonNode *gpunet_json_get (JsonNode *node, const char *key);

/* Appends json-glib's compact text of `node` to `out` (doubles as "%.17g", which reads
 * back to the same value).  Two slips of json-glib 1.6 are fixed in its output: U+001F
 * left raw inside strings becomes \u001f, and "1e+20.0" becomes "1e+20". */
void gpunet_json_generate (JsonNode *node, GString *out);

/* The value type of a scalar node: G_TYPE_INT64 (a number written without fraction
 * or exponent), G_TYPE_DOUBLE, G_TYPE_STRING or G_TYPE_BOOLEAN; G_TYPE_INVALID for
 * null, arrays, objects and NULL. */
static inline GType
gpunet_json_value_type (JsonNode *node)
{
  return node && JSON_NODE_HOLDS_VALUE (node) ? json_node_get_value_type (node)
      : G_TYPE_INVALID;
}

static inline int
gpunet_json_is_number (JsonNode *node)
{
  GType t = gpunet_json_value_type (node);
  return t == G_TYPE_INT64 || t == G_TYPE_DOUBLE;
}

#endif
