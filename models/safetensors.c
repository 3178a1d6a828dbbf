/* safetensors.c: the safetensors format: reading the index of a mapped file (8-byte
 * little-endian header length, JSON header, checked data offsets, the data's CRC-32
 * where the header records one) for checkpoint.c, and gpunet_safetensors_write (keys
 * sorted, data 8-byte aligned and without holes, the CRC-32 in __metadata__). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "crc32.h"
#include "error.h"
#include "json.h"
#include "safetensors.h"
#include "shape.h"

#define MAX_HEADER ((uint64_t) 100 << 20)
/* The __metadata__ key of the CRC-32 of the data section, written by
 * gpunet_safetensors_write as eight lowercase hex digits. */
#define CRC_KEY "gpunet_data_crc32"

static const char *const st_names[] = {
  [GPUNET_DTYPE_F32] = "F32", [GPUNET_DTYPE_F16] = "F16", [GPUNET_DTYPE_BF16] = "BF16",
  [GPUNET_DTYPE_F64] = "F64", [GPUNET_DTYPE_I64] = "I64", [GPUNET_DTYPE_I32] = "I32",
  [GPUNET_DTYPE_I16] = "I16", [GPUNET_DTYPE_I8] = "I8", [GPUNET_DTYPE_U8] = "U8",
  [GPUNET_DTYPE_BOOL] = "BOOL",
};
#define N_DTYPES ((int) (sizeof st_names / sizeof st_names[0]))

static uint64_t
rd64 (const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

int
gpunet_safetensors_detect (const uint8_t *data, size_t size)
{
  if (size < 10)
    return 0;
  uint64_t n = rd64 (data);
  return n >= 2 && n <= (uint64_t) size - 8 && data[8] == '{';
}

/* A JSON integer (no fraction or exponent) from 0 to 2^53. */
static int
json_uint (JsonNode *v, uint64_t *out)
{
  if (gpunet_json_value_type (v) != G_TYPE_INT64)
    return 0;
  gint64 i = json_node_get_int (v);
  if (i < 0 || i > ((gint64) 1 << 53))
    return 0;
  *out = (uint64_t) i;
  return 1;
}

/* Where __metadata__ records the data's CRC-32 (files gpunet writes), the data section
 * must have it: a flipped or lost byte is an error, not wrong weights. */
static gpunet_status
check_crc (JsonNode *meta, const uint8_t *data, uint64_t size, char **error_text)
{
  JsonNode *v = meta && JSON_NODE_HOLDS_OBJECT (meta) ? gpunet_json_get (meta, CRC_KEY) : NULL;
  if (!v)
    return GPUNET_OK;   /* none recorded (files of other writers) */
  const char *hex = gpunet_json_value_type (v) == G_TYPE_STRING ? json_node_get_string (v) : "";
  uint32_t want = 0;
  int ok = strlen (hex) == 8;
  for (int i = 0; ok && i < 8; i++) {
    const char c = hex[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    ok = d >= 0;
    want = want << 4 | (uint32_t) (d < 0 ? 0 : d);
  }
  if (!ok)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT, "invalid safetensors header: "
        "__metadata__." CRC_KEY " must be eight lowercase hex digits");
  const uint32_t got = gpunet_crc32 (0, data, (size_t) size);
  if (got != want)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT, "the data is damaged: its "
        "%llu bytes have the CRC-32 %08x, but the header records %08x; copy the file again, "
        "or convert it again with gpunet-convert", (unsigned long long) size, got, want);
  return GPUNET_OK;
}

gpunet_status
gpunet_safetensors_read (const uint8_t *data, size_t size, gpunet_safetensors_sink sink,
    void *ctx, char **error_text)
{
  if (size < 8)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "truncated: a safetensors file needs at least 8 bytes but the file has %zu", size);
  uint64_t hlen = rd64 (data);
  if (hlen > (uint64_t) size - 8)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "truncated: the safetensors header ends at byte %llu but the file has %zu bytes",
        (unsigned long long) hlen + 8, size);
  if (hlen > MAX_HEADER)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "the safetensors header is %llu bytes, more than the 100 MiB limit",
        (unsigned long long) hlen);
  JsonNode *root = NULL;
  gpunet_status st = gpunet_json_parse ((const char *) data + 8, (size_t) hlen, &root, NULL,
      error_text);
  if (st != GPUNET_OK) {
    gpunet_error_prefix (error_text, "invalid safetensors header");
    return GPUNET_ERR_FORMAT;
  }
  if (!JSON_NODE_HOLDS_OBJECT (root)) {
    json_node_unref (root);
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "invalid safetensors header: it is not a JSON object");
  }
  const uint8_t *base = data + 8 + hlen;
  uint64_t dsize = (uint64_t) size - 8 - hlen;
  /* members in file order (a repeated name keeps its first place and its last value):
   * every entry checked first, then the data's CRC-32 where the header records one,
   * and only then the tensors handed to the sink */
  JsonObject *index = json_node_get_object (root);
  GList *names = json_object_get_members (index);
  GArray *found = g_array_new (FALSE, FALSE, sizeof (gpunet_tensor));
  for (GList *it = names; it && st == GPUNET_OK; it = it->next) {
    const char *name = it->data;
    JsonNode *e = json_object_get_member (index, name);
    if (strcmp (name, "__metadata__") == 0)
      continue;
    JsonNode *dt = gpunet_json_get (e, "dtype"), *shape = gpunet_json_get (e, "shape");
    JsonNode *offs = gpunet_json_get (e, "data_offsets");
    if (gpunet_json_value_type (dt) != G_TYPE_STRING || !shape || !JSON_NODE_HOLDS_ARRAY (shape)
        || !offs || !JSON_NODE_HOLDS_ARRAY (offs)
        || json_array_get_length (json_node_get_array (offs)) != 2) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "invalid safetensors header: tensor '%s' lacks a dtype, shape or data_offsets", name);
      break;
    }
    const char *dtype = json_node_get_string (dt);
    JsonArray *dims = json_node_get_array (shape), *range = json_node_get_array (offs);
    guint ndim = json_array_get_length (dims);
    gpunet_tensor t;
    memset (&t, 0, sizeof t);
    int d;
    for (d = 0; d < N_DTYPES; d++)
      if (strcmp (dtype, st_names[d]) == 0)
        break;
    if (d == N_DTYPES) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "tensor '%s' has the unsupported safetensors dtype '%s'", name, dtype);
      break;
    }
    t.dtype = (gpunet_dtype) d;
    if (ndim > GPUNET_MAX_DIMS) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "tensor '%s' has %u dimensions (at most %d are supported)", name, ndim,
          GPUNET_MAX_DIMS);
      break;
    }
    t.ndim = (int) ndim;
    uint64_t b = 0, e2 = 0;
    int64_t snumel = 0;
    int bad = 0;
    for (guint k = 0; k < ndim && !bad; k++) {
      uint64_t dim;
      bad = !json_uint (json_array_get_element (dims, k), &dim);
      t.shape[k] = bad ? 0 : (int64_t) dim;
    }
    bad = bad || !gpunet_shape_check (t.shape, t.ndim, &snumel);
    const uint64_t numel = (uint64_t) snumel;
    if (bad) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "tensor '%s' has an invalid shape in the safetensors header", name);
      break;
    }
    if (!json_uint (json_array_get_element (range, 0), &b)
        || !json_uint (json_array_get_element (range, 1), &e2) || b > e2 || e2 > dsize) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "tensor '%s' has data_offsets outside the %llu data bytes of the file%s", name,
          (unsigned long long) dsize, e2 > dsize ? " (truncated?)" : "");
      break;
    }
    if (e2 - b != numel * gpunet_dtype_size (t.dtype)) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "tensor '%s' has %llu data bytes but its shape and dtype need %llu", name,
          (unsigned long long) (e2 - b), (unsigned long long) (numel * gpunet_dtype_size (t.dtype)));
      break;
    }
    t.numel = (int64_t) numel;
    t.nbytes = (size_t) (e2 - b);
    t.data = base + b;
    t.name = name;
    g_array_append_val (found, t);
  }
  if (st == GPUNET_OK)
    st = check_crc (gpunet_json_get (root, "__metadata__"), base, dsize, error_text);
  for (guint i = 0; i < found->len && st == GPUNET_OK; i++) {
    const gpunet_tensor *t = &g_array_index (found, gpunet_tensor, i);
    st = sink (ctx, t->name, t, error_text);
  }
  g_array_free (found, TRUE);
  g_list_free (names);
  json_node_unref (root);
  return st;
}

/* ---- writing ------------------------------------------------------------------- */

typedef struct {
  const gpunet_tensor *t;
  uint64_t offset;
} wentry;

static int
cmp_name (const void *a, const void *b)
{
  return strcmp (((const wentry *) a)->t->name, ((const wentry *) b)->t->name);
}

/* Data order: larger elements first (keeps every tensor aligned without holes), then name. */
static int
cmp_layout (const void *a, const void *b)
{
  const gpunet_tensor *x = *(const gpunet_tensor *const *) a, *y = *(const gpunet_tensor *const *) b;
  size_t sx = gpunet_dtype_size (x->dtype), sy = gpunet_dtype_size (y->dtype);
  if (sx != sy)
    return sx > sy ? -1 : 1;
  return strcmp (x->name, y->name);
}

gpunet_status
gpunet_safetensors_write (const char *path, const gpunet_tensor *tensors, size_t n,
    char **error_text)
{
  if (!path || (n && !tensors))
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_safetensors_write: no path or no tensors given");
  for (size_t i = 0; i < n; i++) {
    const gpunet_tensor *t = &tensors[i];
    int ok = t->name && (int) t->dtype >= 0 && (int) t->dtype < N_DTYPES && t->ndim >= 0
        && t->ndim <= GPUNET_MAX_DIMS;
    int64_t numel = 0;
    ok = ok && gpunet_shape_check (t->shape, t->ndim, &numel);
    if (!ok || numel != t->numel || t->nbytes != (size_t) numel * gpunet_dtype_size (t->dtype)
        || (t->nbytes && !t->data))
      return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
          "cannot write '%s': tensor %zu ('%s') has an inconsistent dtype, shape, numel or size",
          path, i, t->name ? t->name : "(no name)");
  }

  wentry *byname = calloc (n + 1, sizeof *byname);
  const gpunet_tensor **layout = calloc (n + 1, sizeof *layout);
  GString *h = NULL;
  gpunet_status st = GPUNET_OK;
  FILE *f = NULL;
  if (!byname || !layout) {
    st = gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    byname[i].t = &tensors[i];
    layout[i] = &tensors[i];
  }
  qsort (byname, n, sizeof *byname, cmp_name);
  for (size_t i = 1; i < n; i++)
    if (strcmp (byname[i - 1].t->name, byname[i].t->name) == 0) {
      st = gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
          "cannot write '%s': the tensor name '%s' occurs twice", path, byname[i].t->name);
      goto out;
    }
  qsort (layout, n, sizeof *layout, cmp_layout);
  uint64_t off = 0;
  for (size_t i = 0; i < n; i++) {
    /* find the name-sorted entry of layout[i] to store its offset */
    wentry key = { layout[i], 0 };
    wentry *w = bsearch (&key, byname, n, sizeof *byname, cmp_name);
    w->offset = off;
    off += layout[i]->nbytes;
  }

  /* the data section's CRC-32, in layout order, goes into __metadata__ */
  uint32_t crc = 0;
  for (size_t i = 0; i < n; i++)
    crc = gpunet_crc32 (crc, layout[i]->data, layout[i]->nbytes);
  char crc_hex[9];
  snprintf (crc_hex, sizeof crc_hex, "%08x", crc);

  /* the header through json-glib: {"__metadata__":{..},"name":{"dtype":..,"shape":[..],
   * "data_offsets":[b,e]},..} */
  JsonBuilder *jb = json_builder_new ();
  json_builder_begin_object (jb);
  json_builder_set_member_name (jb, "__metadata__");
  json_builder_begin_object (jb);
  json_builder_set_member_name (jb, CRC_KEY);
  json_builder_add_string_value (jb, crc_hex);
  json_builder_end_object (jb);
  for (size_t i = 0; i < n; i++) {
    const gpunet_tensor *t = byname[i].t;
    json_builder_set_member_name (jb, t->name);
    json_builder_begin_object (jb);
    json_builder_set_member_name (jb, "dtype");
    json_builder_add_string_value (jb, st_names[t->dtype]);
    json_builder_set_member_name (jb, "shape");
    json_builder_begin_array (jb);
    for (int k = 0; k < t->ndim; k++)
      json_builder_add_int_value (jb, t->shape[k]);
    json_builder_end_array (jb);
    json_builder_set_member_name (jb, "data_offsets");
    json_builder_begin_array (jb);
    json_builder_add_int_value (jb, (gint64) byname[i].offset);
    json_builder_add_int_value (jb, (gint64) (byname[i].offset + t->nbytes));
    json_builder_end_array (jb);
    json_builder_end_object (jb);
  }
  json_builder_end_object (jb);
  JsonNode *root = json_builder_get_root (jb);
  g_object_unref (jb);
  h = g_string_new (NULL);
  gpunet_json_generate (root, h);
  json_node_unref (root);
  while ((8 + h->len) % 8)
    g_string_append_c (h, ' ');

  /* a failed write removes only a file this call created: never an existing one (a
   * FIFO, /dev/full, or a temporary file the caller owns and removes itself) */
  struct stat sb;
  int existed = lstat (path, &sb) == 0;
  f = fopen (path, "wb");
  if (!f) {
    st = gpunet_fail (error_text, GPUNET_ERR_IO, "cannot create '%s': %s", path, strerror (errno));
    goto out;
  }
  uint8_t len8[8];
  for (int i = 0; i < 8; i++)
    len8[i] = (uint8_t) ((uint64_t) h->len >> (8 * i));
  int ok = fwrite (len8, 1, 8, f) == 8 && fwrite (h->str, 1, h->len, f) == h->len;
  for (size_t i = 0; ok && i < n; i++)
    if (layout[i]->nbytes)
      ok = fwrite (layout[i]->data, 1, layout[i]->nbytes, f) == layout[i]->nbytes;
  int err = errno;
  if (fclose (f) != 0 && ok) {
    ok = 0;
    err = errno;
  }
  f = NULL;
  if (!ok) {
    if (!existed)
      remove (path);
    st = gpunet_fail (error_text, GPUNET_ERR_IO, "cannot write '%s': %s", path, strerror (err));
  }

out:
  free (byname);
  free (layout);
  if (h)
    g_string_free (h, TRUE);
  return st;
}
