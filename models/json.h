/* json.h: a small strict JSON reader (RFC 8259) building an immutable value tree.
 * Used for architecture files and safetensors headers; no GLib. */
#ifndef GPUNET_JSON_H
#define GPUNET_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "gpunet.h"

typedef enum {
  GPUNET_JSON_NULL, GPUNET_JSON_BOOL, GPUNET_JSON_NUMBER,
  GPUNET_JSON_STRING, GPUNET_JSON_ARRAY, GPUNET_JSON_OBJECT
} gpunet_json_type;

typedef struct gpunet_json gpunet_json;
struct gpunet_json {
  gpunet_json_type type;
  int boolean;
  double number;
  int is_integer;          /* the number was written without fraction or exponent */
  int64_t integer;         /* its value when is_integer (and it fits) */
  char *string;            /* STRING: NUL-terminated UTF-8 (embedded NULs rejected) */
  size_t n;                /* ARRAY/OBJECT: number of items */
  gpunet_json *items;      /* ARRAY/OBJECT: values */
  char **keys;             /* OBJECT: keys, parallel to items */
  int line;                /* 1-based line where the value starts (for error messages) */
};

/* Parses `len` bytes.  On error returns GPUNET_ERR_FORMAT with a sentence naming line
 * and column.  Nesting deeper than 64 levels is rejected. */
gpunet_status gpunet_json_parse (const char *text, size_t len, gpunet_json **out, char **error_text);
void gpunet_json_free (gpunet_json *value);

/* Object member by key, or NULL (also NULL when `obj` is not an object). */
const gpunet_json *gpunet_json_get (const gpunet_json *obj, const char *key);

#endif
