/* test_checkpoint.c: unit tests of the weights readers (models/checkpoint.c, zipread.c,
 * pickle.c, safetensors.c): the three fixtures' checkpoints against state_dict_keys.txt,
 * EMA selection, safetensors round trips and dtype conversion, and hostile inputs built
 * in memory (truncations, bit flips, os.system pickles, bad strides, deflate, ZIP64). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "checkpoint.h"
#include "safetensors.h"
#include "zipread.h"
#include "gpunet.h"

static const char *fixtures[] = { "tiny-a", "tiny-d", "tiny-dl" };

/* ---- byte buffers, zip and pickle builders ---------------------------------------- */

typedef struct {
  uint8_t *p;
  size_t len, cap;
} buf;

static void
b_add (buf *b, const void *d, size_t n)
{
  if (b->len + n > b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 1024;
    while (nc < b->len + n)
      nc *= 2;
    b->p = realloc (b->p, nc);
    if (!b->p)
      abort ();
    b->cap = nc;
  }
  if (n)
    memcpy (b->p + b->len, d, n);
  b->len += n;
}

static void
b_le (buf *b, uint64_t v, int n)
{
  for (int i = 0; i < n; i++) {
    uint8_t c = (uint8_t) (v >> (8 * i));
    b_add (b, &c, 1);
  }
}

static void
b_u8 (buf *b, int c)
{
  b_le (b, (uint64_t) c, 1);
}

typedef struct {
  const char *name;
  const void *data;
  size_t size;
  int method;
} zentry;

/* CRC-32 as zip stores it, one bit at a time (the reader's own is table-driven). */
static uint32_t
test_crc32 (const void *data, size_t n)
{
  const uint8_t *p = data;
  uint32_t c = 0xffffffffu;
  while (n--) {
    c ^= *p++;
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
  }
  return c ^ 0xffffffffu;
}

/* Writes the CRC-32 of entry `name`'s bytes into its central and local headers, after
 * a test changed those bytes in place (sizes and offsets from the central directory,
 * as the reader takes them; no ZIP64 entries). */
static void
refresh_crc (uint8_t *d, size_t size, const char *name)
{
  size_t nl = strlen (name);
  int done = 0;
  for (size_t i = 46; i + nl <= size; i++) {
    if (memcmp (d + i, name, nl) != 0 || d[i - 46] != 'P' || d[i - 45] != 'K'
        || d[i - 44] != 1 || d[i - 43] != 2)
      continue;
    uint8_t *c = d + i - 46;
    uint32_t len = (uint32_t) c[24] | ((uint32_t) c[25] << 8) | ((uint32_t) c[26] << 16)
        | ((uint32_t) c[27] << 24);
    size_t local = (size_t) c[42] | ((size_t) c[43] << 8) | ((size_t) c[44] << 16)
        | ((size_t) c[45] << 24);
    size_t start = local + 30 + (size_t) (d[local + 26] | (d[local + 27] << 8))
        + (size_t) (d[local + 28] | (d[local + 29] << 8));
    CHECK (start + len <= size);
    if (start + len > size)
      return;
    uint32_t crc = test_crc32 (d + start, len);
    for (int k = 0; k < 4; k++)
      c[16 + k] = d[local + 14 + k] = (uint8_t) (crc >> (8 * k));
    done = 1;
  }
  CHECK (done);
}

/* A zip archive of `n` entries (with the CRC-32s the reader checks); `zip64`
 * writes ZIP64 extra fields and end records; `pad` puts one byte before each entry's
 * data so storages land on odd addresses. */
static uint8_t *
make_zip (const zentry *e, size_t n, int zip64, int pad, const char *comment, size_t *size)
{
  buf b = { 0 };
  uint64_t *offs = calloc (n + 1, sizeof *offs);
  for (size_t i = 0; i < n; i++) {
    offs[i] = b.len;
    size_t nl = strlen (e[i].name);
    b_le (&b, 0x04034b50, 4);
    b_le (&b, 20, 2);
    b_le (&b, 0, 2);
    b_le (&b, (uint64_t) e[i].method, 2);
    b_le (&b, 0, 4);
    b_le (&b, test_crc32 (e[i].data, e[i].size), 4);   /* crc */
    b_le (&b, e[i].size, 4);
    b_le (&b, e[i].size, 4);
    b_le (&b, nl, 2);
    b_le (&b, (uint64_t) pad, 2);
    b_add (&b, e[i].name, nl);
    for (int k = 0; k < pad; k++)
      b_u8 (&b, 0);
    b_add (&b, e[i].data, e[i].size);
  }
  uint64_t cd = b.len;
  for (size_t i = 0; i < n; i++) {
    size_t nl = strlen (e[i].name);
    b_le (&b, 0x02014b50, 4);
    b_le (&b, 45, 2);
    b_le (&b, 45, 2);
    b_le (&b, 0, 2);
    b_le (&b, (uint64_t) e[i].method, 2);
    b_le (&b, 0, 4);
    b_le (&b, test_crc32 (e[i].data, e[i].size), 4);
    b_le (&b, zip64 ? 0xffffffffu : e[i].size, 4);
    b_le (&b, zip64 ? 0xffffffffu : e[i].size, 4);
    b_le (&b, nl, 2);
    b_le (&b, zip64 ? 28 : 0, 2);
    b_le (&b, 0, 2);
    b_le (&b, 0, 2);
    b_le (&b, 0, 2);
    b_le (&b, 0, 4);
    b_le (&b, zip64 ? 0xffffffffu : offs[i], 4);
    b_add (&b, e[i].name, nl);
    if (zip64) {
      b_le (&b, 1, 2);
      b_le (&b, 24, 2);
      b_le (&b, e[i].size, 8);
      b_le (&b, e[i].size, 8);
      b_le (&b, offs[i], 8);
    }
  }
  uint64_t cd_size = b.len - cd;
  if (zip64) {
    uint64_t eocd64 = b.len;
    b_le (&b, 0x06064b50, 4);
    b_le (&b, 44, 8);
    b_le (&b, 45, 2);
    b_le (&b, 45, 2);
    b_le (&b, 0, 4);
    b_le (&b, 0, 4);
    b_le (&b, n, 8);
    b_le (&b, n, 8);
    b_le (&b, cd_size, 8);
    b_le (&b, cd, 8);
    b_le (&b, 0x07064b50, 4);
    b_le (&b, 0, 4);
    b_le (&b, eocd64, 8);
    b_le (&b, 1, 4);
  }
  size_t cl = comment ? strlen (comment) : 0;
  b_le (&b, 0x06054b50, 4);
  b_le (&b, 0, 2);
  b_le (&b, 0, 2);
  b_le (&b, zip64 ? 0xffff : n, 2);
  b_le (&b, zip64 ? 0xffff : n, 2);
  b_le (&b, zip64 ? 0xffffffffu : cd_size, 4);
  b_le (&b, zip64 ? 0xffffffffu : cd, 4);
  b_le (&b, cl, 2);
  b_add (&b, comment, cl);
  free (offs);
  *size = b.len;
  return b.p;
}

static void
pk_str (buf *b, const char *s)
{
  b_u8 (b, 'X');
  b_le (b, strlen (s), 4);
  b_add (b, s, strlen (s));
}

static void
pk_int (buf *b, int32_t v)
{
  b_u8 (b, 'J');
  b_le (b, (uint32_t) v, 4);
}

/* v as BININT when it fits in 32 bits, else LONG1 with 8 bytes */
static void
pk_i64 (buf *b, int64_t v)
{
  if (v >= INT32_MIN && v <= INT32_MAX) {
    pk_int (b, (int32_t) v);
    return;
  }
  b_u8 (b, 0x8a);
  b_u8 (b, 8);
  b_le (b, (uint64_t) v, 8);
}

static void
pk_global (buf *b, const char *mod, const char *name)
{
  b_u8 (b, 'c');
  b_add (b, mod, strlen (mod));
  b_u8 (b, '\n');
  b_add (b, name, strlen (name));
  b_u8 (b, '\n');
}

/* torch._utils._rebuild_tensor_v2 (('storage', torch.<cls>, key, 'cpu', numel), ...). */
static void
pk_tensor64 (buf *b, const char *cls, const char *key, int numel, int offset, int ndim,
    const int64_t *shape, const int64_t *stride)
{
  pk_global (b, "torch._utils", "_rebuild_tensor_v2");
  b_u8 (b, '(');
  b_u8 (b, '(');
  pk_str (b, "storage");
  pk_global (b, "torch", cls);
  pk_str (b, key);
  pk_str (b, "cpu");
  pk_int (b, numel);
  b_u8 (b, 't');
  b_u8 (b, 'Q');
  pk_int (b, offset);
  b_u8 (b, '(');
  for (int k = 0; k < ndim; k++)
    pk_i64 (b, shape[k]);
  b_u8 (b, 't');
  b_u8 (b, '(');
  for (int k = 0; k < ndim; k++)
    pk_i64 (b, stride[k]);
  b_u8 (b, 't');
  b_u8 (b, 0x89);
  pk_global (b, "collections", "OrderedDict");
  b_u8 (b, ')');
  b_u8 (b, 'R');
  b_u8 (b, 't');
  b_u8 (b, 'R');
}

static void
pk_tensor (buf *b, const char *cls, const char *key, int numel, int offset, int ndim,
    const int *shape, const int *stride)
{
  int64_t sh[8], st[8];
  for (int k = 0; k < ndim && k < 8; k++)
    sh[k] = shape[k], st[k] = stride[k];
  pk_tensor64 (b, cls, key, numel, offset, ndim, sh, st);
}

/* Opens in-memory bytes, expecting an error whose text contains `needle` (if given). */
static void
expect_error (const void *data, size_t size, gpunet_status want, const char *needle, int line)
{
  gpunet_checkpoint *ck = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_checkpoint_open_memory (data, size, "crafted.pth", &ck, &err);
  CHECK_MSG (st == want, "line %d: status %d, want %d (%s)", line, (int) st, (int) want,
      err ? err : "no error");
  CHECK_MSG (ck == NULL, "line %d: checkpoint returned with an error", line);
  if (needle)
    CHECK_MSG (err && strstr (err, needle), "line %d: '%s' lacks '%s'", line,
        err ? err : "(null)", needle);
  CHECK_CONTAINS (err, "checkpoint 'crafted.pth'");
  free (err);
  gpunet_checkpoint_free (ck);
}

#define EXPECT_ERROR(d, n, st, needle) expect_error ((d), (n), (st), (needle), __LINE__)

/* A torch-like archive holding one pickle and storages "0", "1", ... */
static uint8_t *
make_ckpt (const buf *pkl, const void *const *storages, const size_t *sizes, int n_storages,
    int pkl_method, int pad, size_t *size)
{
  zentry e[16];
  char names[16][64];
  e[0] = (zentry) { "my model/data.pkl", pkl->p, pkl->len, pkl_method };
  for (int i = 0; i < n_storages; i++) {
    snprintf (names[i], sizeof names[i], "my model/data/%d", i);
    e[i + 1] = (zentry) { names[i], storages[i], sizes[i], 0 };
  }
  e[n_storages + 1] = (zentry) { "my model/version", "3\n", 2, 0 };
  return make_zip (e, (size_t) n_storages + 2, 0, pad, NULL, size);
}

/* ---- fixtures ------------------------------------------------------------------------ */

static char *
fixture_path (const char *fx, const char *suffix)
{
  static char path[4][1024];
  static int k;
  k = (k + 1) % 4;
  snprintf (path[k], sizeof path[k], "%s/fixtures/%s/%s%s", check_data_dir (), fx,
      suffix[0] == '.' ? fx : "", suffix);
  return path[k];
}

static gpunet_checkpoint *
open_ok (const char *path)
{
  gpunet_checkpoint *ck = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_checkpoint_open (path, &ck, &err);
  CHECK_MSG (st == GPUNET_OK && ck, "%s: %s", path, err ? err : "");
  free (err);
  return ck;
}

static void
shape_text (const gpunet_tensor *t, char *out, size_t cap)
{
  size_t len = 0;
  if (t->ndim == 0)
    snprintf (out, cap, "scalar");
  for (int k = 0; k < t->ndim; k++)
    len += (size_t) snprintf (out + len, cap - len, k ? "x%lld" : "%lld", (long long) t->shape[k]);
}

/* The checkpoint's names, dtypes and shapes equal state_dict_keys.txt, line by line. */
static void
check_keys (const gpunet_checkpoint *ck, const char *fx)
{
  size_t size;
  char *text = check_read_file (fixture_path (fx, "state_dict_keys.txt"), &size);
  CHECK_MSG (text != NULL, "cannot read state_dict_keys.txt of %s", fx);
  if (!text)
    return;
  text = realloc (text, size + 1);
  text[size] = 0;
  size_t i = 0;
  int mismatches = 0;
  for (char *line = strtok (text, "\n"); line; line = strtok (NULL, "\n"), i++) {
    const gpunet_tensor *t = gpunet_checkpoint_tensor (ck, i);
    char want[1200];
    if (!t) {
      mismatches++;
      continue;
    }
    char shape[200];
    shape_text (t, shape, sizeof shape);
    snprintf (want, sizeof want, "%s\t%s\t%s", t->name, gpunet_dtype_name (t->dtype), shape);
    if (strcmp (want, line) != 0) {
      if (mismatches++ < 3)
        fprintf (stderr, "%s line %zu: '%s' != '%s'\n", fx, i + 1, want, line);
    }
    CHECK (gpunet_checkpoint_find (ck, t->name) == t);
  }
  CHECK_MSG (mismatches == 0, "%s: %d key lines differ", fx, mismatches);
  CHECK_MSG (i == gpunet_checkpoint_n_tensors (ck), "%s: %zu lines, %zu tensors", fx, i,
      gpunet_checkpoint_n_tensors (ck));
  free (text);
}

static int
same_tensor (const gpunet_tensor *a, const gpunet_tensor *b)
{
  return a && b && a->dtype == b->dtype && a->ndim == b->ndim && a->numel == b->numel
      && a->nbytes == b->nbytes && memcmp (a->shape, b->shape, sizeof a->shape[0] * (size_t) a->ndim) == 0
      && (a->nbytes == 0 || memcmp (a->data, b->data, a->nbytes) == 0);
}

static void
test_fixtures (void)
{
  for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
    const char *fx = fixtures[f];
    gpunet_checkpoint *full = open_ok (fixture_path (fx, ".pth.tar"));
    gpunet_checkpoint *plain = open_ok (fixture_path (fx, ".state_dict.pth"));
    if (!full || !plain) {
      gpunet_checkpoint_free (full);
      gpunet_checkpoint_free (plain);
      continue;
    }
    CHECK (strcmp (gpunet_checkpoint_source (full), "state_dict_ema") == 0);
    CHECK (strcmp (gpunet_checkpoint_source (plain), "state dict") == 0);
    check_keys (full, fx);
    check_keys (plain, fx);
    /* the plain file holds the EMA weights: identical bytes for every tensor */
    size_t n = gpunet_checkpoint_n_tensors (full), differ = 0, misaligned = 0, conv_bad = 0;
    for (size_t i = 0; i < n; i++) {
      const gpunet_tensor *t = gpunet_checkpoint_tensor (full, i);
      differ += !same_tensor (t, gpunet_checkpoint_find (plain, t->name));
      if (t->dtype == GPUNET_DTYPE_F32 && (uintptr_t) t->data % 4)
        misaligned++;
      if (t->dtype == GPUNET_DTYPE_F32) {
        float *v = malloc (t->nbytes + 4);
        char *err = NULL;
        if (gpunet_tensor_to_f32 (t, v, (size_t) t->numel, &err) != GPUNET_OK
            || (t->nbytes && memcmp (v, t->data, t->nbytes)))
          conv_bad++;
        free (err);
        free (v);
      }
    }
    CHECK_MSG (differ == 0, "%s: %zu tensors differ between .pth.tar EMA and the plain file", fx, differ);
    CHECK (misaligned == 0);
    CHECK (conv_bad == 0);
    gpunet_checkpoint_free (full);
    gpunet_checkpoint_free (plain);
  }
}

/* Renaming the "state_dict_ema" key in memory makes the reader fall back to the decoy
 * "state_dict", whose float tensors all differ from the EMA ones. */
static void
test_ema_fallback (void)
{
  const char *path = fixture_path ("tiny-a", ".pth.tar");
  size_t size;
  uint8_t *d = check_read_file (path, &size);
  CHECK (d != NULL);
  if (!d)
    return;
  size_t hits = 0;
  for (size_t i = 0; i + 14 <= size; i++)
    if (memcmp (d + i, "state_dict_ema", 14) == 0) {
      d[i + 13] = 'x';
      hits++;
    }
  CHECK (hits == 1);
  refresh_crc (d, size, "tiny-a.pth/data.pkl");
  gpunet_checkpoint *decoy = NULL, *ema = open_ok (path);
  char *err = NULL;
  CHECK (gpunet_checkpoint_open_memory (d, size, "patched", &decoy, &err) == GPUNET_OK);
  free (err);
  if (decoy && ema) {
    CHECK (strcmp (gpunet_checkpoint_source (decoy), "state_dict") == 0);
    CHECK (gpunet_checkpoint_n_tensors (decoy) == gpunet_checkpoint_n_tensors (ema));
    size_t n_float = 0, n_differ = 0;
    for (size_t i = 0; i < gpunet_checkpoint_n_tensors (ema); i++) {
      const gpunet_tensor *t = gpunet_checkpoint_tensor (ema, i);
      const gpunet_tensor *u = gpunet_checkpoint_find (decoy, t->name);
      CHECK (u != NULL);
      if (t->dtype == GPUNET_DTYPE_F32 && u) {
        n_float++;
        n_differ += !same_tensor (t, u);
      }
    }
    CHECK_MSG (n_float > 0 && n_differ == n_float, "%zu of %zu float tensors differ", n_differ, n_float);
  }
  gpunet_checkpoint_free (decoy);
  gpunet_checkpoint_free (ema);
  free (d);
}

/* ---- safetensors and conversion ------------------------------------------------------ */

static void
temp_path (char *out, size_t cap, const char *what)
{
  const char *dir = getenv ("TMPDIR");
  snprintf (out, cap, "%s/gpunet-test-%ld-%s.safetensors", dir ? dir : "/tmp", (long) getpid (), what);
}

static void
test_safetensors_roundtrip (void)
{
  gpunet_checkpoint *ck = open_ok (fixture_path ("tiny-a", ".pth.tar"));
  if (!ck)
    return;
  size_t n = gpunet_checkpoint_n_tensors (ck);
  gpunet_tensor *ts = calloc (n, sizeof *ts);
  for (size_t i = 0; i < n; i++)
    ts[i] = *gpunet_checkpoint_tensor (ck, i);
  char path[512];
  temp_path (path, sizeof path, "roundtrip");
  char *err = NULL;
  CHECK (gpunet_safetensors_write (path, ts, n, &err) == GPUNET_OK);
  free (err);
  gpunet_checkpoint *back = open_ok (path);
  if (back) {
    CHECK (strcmp (gpunet_checkpoint_source (back), "safetensors") == 0);
    CHECK (gpunet_checkpoint_n_tensors (back) == n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
      const gpunet_tensor *u = gpunet_checkpoint_find (back, ts[i].name);
      bad += !same_tensor (&ts[i], u) || (u->numel && (uintptr_t) u->data % (u->nbytes / (size_t) u->numel));
    }
    CHECK_MSG (bad == 0, "%zu tensors differ after a safetensors round trip", bad);
    /* header length makes the data start 8-byte aligned */
    size_t size;
    uint8_t *raw = check_read_file (path, &size);
    CHECK (raw && size > 8 && raw[0] % 8 == 0);
    /* truncations of a safetensors file fail cleanly */
    for (int k = 0; raw && k < 32; k++)
      EXPECT_ERROR (raw, size * (size_t) k / 32, GPUNET_ERR_FORMAT, NULL);
    if (raw)
      EXPECT_ERROR (raw, size - 1, GPUNET_ERR_FORMAT, "data_offsets");
    /* the data's CRC-32 is in the header: one flipped bit anywhere in the data, or a
     * byte appended, is refused with a sentence; a malformed CRC field is too */
    const char *crc = raw ? memmem (raw, size, "\"gpunet_data_crc32\":\"", 21) : NULL;
    CHECK_MSG (crc != NULL, "no gpunet_data_crc32 in the header of %s", path);
    if (raw && crc) {
      const size_t data0 = 8 + (size_t) raw[0] + ((size_t) raw[1] << 8) + ((size_t) raw[2] << 16);
      uint8_t *bad = malloc (size + 1);
      for (int k = 0; k < 4; k++) {
        memcpy (bad, raw, size);
        bad[data0 + (size - data0) * (size_t) k / 4] ^= (uint8_t) (1u << k);
        EXPECT_ERROR (bad, size, GPUNET_ERR_FORMAT, "data is damaged");
      }
      memcpy (bad, raw, size);
      bad[size] = 0;
      EXPECT_ERROR (bad, size + 1, GPUNET_ERR_FORMAT, "CRC-32");
      memcpy (bad, raw, size);
      bad[(const uint8_t *) crc - raw + 21] = 'G';
      EXPECT_ERROR (bad, size, GPUNET_ERR_FORMAT, "eight lowercase hex digits");
      free (bad);
    }
    free (raw);
  }
  /* a duplicate name is refused */
  if (n >= 2) {
    ts[1].name = ts[0].name;
    CHECK (gpunet_safetensors_write (path, ts, 2, &err) == GPUNET_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS (err, "twice");
    free (err);
    err = NULL;
  }
  /* the shape bound the .pth reader applies (models/shape.h): a zero size hides no huge
   * ones, in the writer and in the reader */
  gpunet_tensor z0 = { .name = "z", .dtype = GPUNET_DTYPE_F32, .ndim = 3,
    .shape = { 0, (int64_t) 1 << 50, (int64_t) 1 << 50 }, .numel = 0, .nbytes = 0 };
  CHECK (gpunet_safetensors_write (path, &z0, 1, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "inconsistent dtype, shape");
  free (err);
  err = NULL;
  static const char hz[] =
      "{\"z\":{\"dtype\":\"F32\",\"shape\":[0,1125899906842624,1125899906842624],"
      "\"data_offsets\":[0,0]}}";
  buf sf = { 0 };
  b_le (&sf, sizeof hz - 1, 8);
  b_add (&sf, hz, sizeof hz - 1);
  EXPECT_ERROR (sf.p, sf.len, GPUNET_ERR_FORMAT, "tensor 'z' has an invalid shape");
  free (sf.p);
  CHECK (gpunet_safetensors_write ("/nonexistent-dir/x.safetensors", ts, 1, &err) == GPUNET_ERR_IO);
  CHECK_CONTAINS (err, "/nonexistent-dir/x.safetensors");
  free (err);
  remove (path);
  gpunet_checkpoint_free (back);
  gpunet_checkpoint_free (ck);
  free (ts);
}

static void
test_module_prefix_and_dtypes (void)
{
  const uint16_t f16[] = { 0x3c00, 0x0001, 0x03ff, 0x7c00, 0xfc00, 0x7e00, 0x8000, 0x7bff, 0xc000 };
  const uint16_t bf16[] = { 0x3f80, 0xc000, 0x7f80, 0x0001 };
  const double f64[] = { 1.5, -1e-3 };
  const int64_t i64[] = { 7 };
  const uint8_t u8[] = { 1, 2, 3 };
  gpunet_tensor ts[5];
  memset (ts, 0, sizeof ts);
  ts[0] = (gpunet_tensor) { "module.a.half", GPUNET_DTYPE_F16, 1, { 9 }, 9, f16, sizeof f16 };
  ts[1] = (gpunet_tensor) { "module.b", GPUNET_DTYPE_BF16, 2, { 2, 2 }, 4, bf16, sizeof bf16 };
  ts[2] = (gpunet_tensor) { "c.double", GPUNET_DTYPE_F64, 1, { 2 }, 2, f64, sizeof f64 };
  ts[3] = (gpunet_tensor) { "module.n", GPUNET_DTYPE_I64, 0, { 0 }, 1, i64, sizeof i64 };
  ts[4] = (gpunet_tensor) { "module.bytes \"quoted\"\\", GPUNET_DTYPE_U8, 1, { 3 }, 3, u8, 3 };
  char path[512];
  temp_path (path, sizeof path, "prefix");
  char *err = NULL;
  CHECK (gpunet_safetensors_write (path, ts, 5, &err) == GPUNET_OK);
  free (err);
  err = NULL;
  gpunet_checkpoint *ck = open_ok (path);
  remove (path);
  if (!ck)
    return;
  CHECK (gpunet_checkpoint_n_tensors (ck) == 5);
  CHECK (gpunet_checkpoint_find (ck, "module.b") == NULL);
  const gpunet_tensor *h = gpunet_checkpoint_find (ck, "a.half");
  const gpunet_tensor *b = gpunet_checkpoint_find (ck, "b");
  const gpunet_tensor *d = gpunet_checkpoint_find (ck, "c.double");
  const gpunet_tensor *n = gpunet_checkpoint_find (ck, "n");
  const gpunet_tensor *q = gpunet_checkpoint_find (ck, "bytes \"quoted\"\\");
  CHECK (h && b && d && n && q);
  if (!(h && b && d && n && q)) {
    gpunet_checkpoint_free (ck);
    return;
  }
  CHECK (n->ndim == 0 && n->numel == 1 && *(const int64_t *) n->data == 7);
  CHECK (b->ndim == 2 && b->shape[0] == 2 && b->shape[1] == 2);
  CHECK (q->nbytes == 3 && memcmp (q->data, u8, 3) == 0);
  float v[9];
  CHECK (gpunet_tensor_to_f32 (h, v, 9, &err) == GPUNET_OK);
  CHECK (v[0] == 1.0f);
  CHECK (v[1] == ldexpf (1.0f, -24));           /* smallest subnormal */
  CHECK (v[2] == ldexpf (1023.0f, -24));        /* largest subnormal */
  CHECK (isinf (v[3]) && v[3] > 0);
  CHECK (isinf (v[4]) && v[4] < 0);
  CHECK (isnan (v[5]));
  CHECK (v[6] == 0.0f && signbit (v[6]));
  CHECK (v[7] == 65504.0f);
  CHECK (v[8] == -2.0f);
  CHECK (gpunet_tensor_to_f32 (b, v, 4, &err) == GPUNET_OK);
  CHECK (v[0] == 1.0f && v[1] == -2.0f && isinf (v[2]) && v[3] > 0 && v[3] < 1e-38f);
  CHECK (gpunet_tensor_to_f32 (d, v, 2, &err) == GPUNET_OK);
  CHECK (v[0] == 1.5f && v[1] == -1e-3f);
  CHECK (gpunet_tensor_to_f32 (d, v, 3, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "c.double");
  CHECK (gpunet_tensor_to_f32 (n, v, 1, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "int64");
  free (err);
  gpunet_checkpoint_free (ck);
}

/* ---- crafted torch archives ---------------------------------------------------------- */

static void
test_crafted_ok (void)
{
  /* module. prefix, a transposed (non-contiguous) tensor, a storage offset, odd data
   * addresses (pad), a parameter wrapper, hostile-looking globals that stay inert. */
  const float w[6] = { 0, 1, 2, 3, 4, 5 };   /* storage of a 3x2 tensor */
  const float bias[4] = { 9, 10, 11, 12 };
  const int64_t count = 42;
  buf p = { 0 };
  b_u8 (&p, 0x80);
  b_u8 (&p, 2);
  b_u8 (&p, '}');
  b_u8 (&p, '(');
  pk_str (&p, "args");
  pk_global (&p, "argparse", "Namespace");
  b_u8 (&p, ')');
  b_u8 (&p, 0x81);              /* NEWOBJ */
  b_u8 (&p, '}');
  pk_str (&p, "cmd");
  pk_global (&p, "os", "system");
  pk_str (&p, "echo never");
  b_u8 (&p, 0x85);
  b_u8 (&p, 'R');               /* os.system ("echo never") stays inert */
  b_u8 (&p, 's');
  b_u8 (&p, 'b');               /* BUILD */
  pk_str (&p, "state_dict");
  pk_global (&p, "collections", "OrderedDict");
  b_u8 (&p, ')');
  b_u8 (&p, 'R');
  b_u8 (&p, '(');
  pk_str (&p, "module.fc.weight.t");   /* 2x3 view of the 3x2 storage: strides (1, 2) */
  pk_tensor (&p, "FloatStorage", "0", 6, 0, 2, (const int[]) { 2, 3 }, (const int[]) { 1, 2 });
  pk_str (&p, "module.fc.bias");
  pk_global (&p, "torch._utils", "_rebuild_parameter");
  pk_tensor (&p, "FloatStorage", "1", 4, 1, 1, (const int[]) { 3 }, (const int[]) { 1 });
  b_u8 (&p, 0x88);
  pk_global (&p, "collections", "OrderedDict");
  b_u8 (&p, ')');
  b_u8 (&p, 'R');
  b_u8 (&p, 0x87);              /* TUPLE3 */
  b_u8 (&p, 'R');
  pk_str (&p, "module.bn.num_batches_tracked");
  pk_tensor (&p, "LongStorage", "2", 1, 0, 0, NULL, NULL);
  pk_str (&p, "evil");          /* STACK_GLOBAL builtins.eval, called: inert, not a tensor */
  pk_str (&p, "builtins");
  pk_str (&p, "eval");
  b_u8 (&p, 0x93);
  pk_str (&p, "__import__('os').system('false')");
  b_u8 (&p, 0x85);
  b_u8 (&p, 'R');
  b_u8 (&p, 'u');               /* SETITEMS */
  b_u8 (&p, 'u');
  b_u8 (&p, '.');
  const void *st[3] = { w, bias, &count };
  const size_t sz[3] = { sizeof w, sizeof bias, sizeof count };
  for (int pad = 0; pad <= 1; pad++) {
    size_t size;
    uint8_t *z = make_ckpt (&p, st, sz, 3, 0, pad, &size);
    gpunet_checkpoint *ck = NULL;
    char *err = NULL;
    CHECK (gpunet_checkpoint_open_memory (z, size, "crafted", &ck, &err) == GPUNET_OK);
    if (err)
      fprintf (stderr, "%s\n", err);
    free (err);
    if (ck) {
      CHECK (strcmp (gpunet_checkpoint_source (ck), "state_dict") == 0);
      CHECK (gpunet_checkpoint_n_tensors (ck) == 3);
      const gpunet_tensor *t = gpunet_checkpoint_find (ck, "fc.weight.t");
      const gpunet_tensor *bb = gpunet_checkpoint_find (ck, "fc.bias");
      const gpunet_tensor *c = gpunet_checkpoint_find (ck, "bn.num_batches_tracked");
      CHECK (t && bb && c);
      if (t && bb && c) {
        const float want[6] = { 0, 2, 4, 1, 3, 5 };
        CHECK (t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->numel == 6);
        CHECK (memcmp (t->data, want, sizeof want) == 0);
        CHECK (bb->numel == 3 && memcmp (bb->data, bias + 1, 3 * sizeof (float)) == 0);
        CHECK ((uintptr_t) t->data % 4 == 0 && (uintptr_t) bb->data % 4 == 0);
        CHECK (c->ndim == 0 && c->dtype == GPUNET_DTYPE_I64 && c->nbytes == 8);
        CHECK ((uintptr_t) c->data % 8 == 0 && *(const int64_t *) c->data == 42);
      }
    }
    gpunet_checkpoint_free (ck);
    free (z);
  }
  /* the same archive as ZIP64 with a comment */
  {
    zentry e[4] = { { "a/data.pkl", p.p, p.len, 0 }, { "a/data/0", w, sizeof w, 0 },
                    { "a/data/1", bias, sizeof bias, 0 }, { "a/data/2", &count, sizeof count, 0 } };
    size_t size;
    uint8_t *z = make_zip (e, 4, 1, 0, "a zip comment", &size);
    gpunet_checkpoint *ck = NULL;
    char *err = NULL;
    CHECK (gpunet_checkpoint_open_memory (z, size, "zip64", &ck, &err) == GPUNET_OK);
    if (err)
      fprintf (stderr, "%s\n", err);
    free (err);
    CHECK (gpunet_checkpoint_n_tensors (ck) == 3);
    gpunet_checkpoint_free (ck);
    for (size_t cut = 1; cut < 120; cut += 7)
      EXPECT_ERROR (z, size - cut, GPUNET_ERR_FORMAT, NULL);
    free (z);
  }
  free (p.p);
}

/* An archive whose pickle holds {'state_dict': {'w': <tensor>}}. */
/* An archive whose state dict holds one tensor 'w' (64-bit shape and strides). */
static uint8_t *
one_tensor_ckpt64 (int numel, int ndim, const int64_t *shape, const int64_t *stride,
    const void *storage, size_t storage_size, size_t *size)
{
  buf p = { 0 };
  b_u8 (&p, 0x80);
  b_u8 (&p, 2);
  b_u8 (&p, '}');
  pk_str (&p, "state_dict");
  b_u8 (&p, '}');
  pk_str (&p, "w");
  pk_tensor64 (&p, "FloatStorage", "0", numel, 0, ndim, shape, stride);
  b_u8 (&p, 's');
  b_u8 (&p, 's');
  b_u8 (&p, '.');
  zentry e[2] = { { "x/data.pkl", p.p, p.len, 0 }, { "x/data/0", storage, storage_size, 0 } };
  uint8_t *z = make_zip (e, 2, 0, 0, NULL, size);
  free (p.p);
  return z;
}

static uint8_t *
one_tensor_ckpt (const char *cls, int numel, int offset, int ndim, const int *shape,
    const int *stride, const void *storage, size_t storage_size, int pkl_method,
    int storage_method, size_t *size)
{
  buf p = { 0 };
  b_u8 (&p, 0x80);
  b_u8 (&p, 2);
  b_u8 (&p, '}');
  pk_str (&p, "state_dict");
  b_u8 (&p, '}');
  pk_str (&p, "w");
  pk_tensor (&p, cls, "0", numel, offset, ndim, shape, stride);
  b_u8 (&p, 's');
  b_u8 (&p, 's');
  b_u8 (&p, '.');
  zentry e[2] = { { "x/data.pkl", p.p, p.len, pkl_method },
                  { "x/data/0", storage, storage_size, storage_method } };
  uint8_t *z = make_zip (e, 2, 0, 0, NULL, size);
  free (p.p);
  return z;
}

static void
test_crafted_errors (void)
{
  float s[8] = { 0 };
  size_t size;
  uint8_t *z;
  int sh10[1] = { 10 }, st1[1] = { 1 }, sh4[1] = { 4 }, sh22[2] = { 2, 2 }, big[2] = { 1, 1000 };

  z = one_tensor_ckpt ("FloatStorage", 8, 0, 1, sh10, st1, s, sizeof s, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "tensor 'w'");
  free (z);
  z = one_tensor_ckpt ("FloatStorage", 8, 6, 1, sh4, st1, s, sizeof s, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "tensor 'w' (shape 4, storage offset 6) reaches past");
  free (z);
  z = one_tensor_ckpt ("FloatStorage", 8, 0, 2, sh22, big, s, sizeof s, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "tensor 'w'");
  free (z);
  z = one_tensor_ckpt ("FloatStorage", 8, -1, 1, sh4, st1, s, sizeof s, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "tensor 'w'");
  free (z);
  /* the storage claims more elements than its entry holds */
  z = one_tensor_ckpt ("FloatStorage", 9, 0, 1, sh4, st1, s, sizeof s, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "tensor 'w': its storage declares 9");
  free (z);
  z = one_tensor_ckpt ("DoubleStorage", 8, 0, 1, sh4, st1, s, sizeof s, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "tensor 'w'");
  free (z);
  z = one_tensor_ckpt ("ComplexFloatStorage", 1, 0, 1, st1, st1, s, sizeof s, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "unsupported storage type torch.ComplexFloatStorage");
  free (z);
  /* compressed entries */
  z = one_tensor_ckpt ("FloatStorage", 8, 0, 1, sh4, st1, s, sizeof s, 8, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "entry 'x/data.pkl' is compressed (deflate)");
  free (z);
  z = one_tensor_ckpt ("FloatStorage", 8, 0, 1, sh4, st1, s, sizeof s, 0, 8, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "entry 'x/data/0' is compressed (deflate)");
  free (z);
  /* a zero size does not hide huge other sizes from the shape bound (models/shape.h,
   * shared with the safetensors reader and writer) */
  const int64_t huge[4] = { 0, (int64_t) 1 << 62, (int64_t) 1 << 62, (int64_t) 1 << 62 };
  const int64_t hstride[4] = { 1, 1, 1, 1 };
  z = one_tensor_ckpt64 (8, 4, huge, hstride, s, sizeof s, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "tensor 'w' has an impossibly large shape 0x");
  free (z);
  /* ... while an empty tensor of a sane shape loads, with no elements */
  const int64_t empty[2] = { 0, 4 }, estride[2] = { 4, 1 };
  z = one_tensor_ckpt64 (8, 2, empty, estride, s, sizeof s, &size);
  {
    gpunet_checkpoint *ck0 = NULL;
    char *err0 = NULL;
    CHECK_MSG (gpunet_checkpoint_open_memory (z, size, "empty", &ck0, &err0) == GPUNET_OK,
        "a 0x4 tensor: %s", err0 ? err0 : "");
    const gpunet_tensor *w = ck0 ? gpunet_checkpoint_find (ck0, "w") : NULL;
    CHECK (w && w->numel == 0 && w->nbytes == 0 && w->ndim == 2 && w->shape[1] == 4);
    gpunet_checkpoint_free (ck0);
    free (err0);
  }
  free (z);
  /* a sane one loads */
  z = one_tensor_ckpt ("FloatStorage", 8, 4, 1, sh4, st1, s, sizeof s, 0, 0, &size);
  gpunet_checkpoint *ck = NULL;
  char *err = NULL;
  CHECK (gpunet_checkpoint_open_memory (z, size, "ok", &ck, &err) == GPUNET_OK);
  CHECK (ck && gpunet_checkpoint_n_tensors (ck) == 1);
  gpunet_checkpoint_free (ck);
  free (err);
  free (z);
}

/* os.system and friends are never called: the file is inert, and has no state dict. */
static void
test_hostile_pickles (void)
{
  char marker[256];
  snprintf (marker, sizeof marker, "/tmp/gpunet-pwned-%ld", (long) getpid ());
  char cmd[300];
  snprintf (cmd, sizeof cmd, "touch %s", marker);
  buf p = { 0 };
  b_u8 (&p, 0x80);
  b_u8 (&p, 2);
  pk_global (&p, "os", "system");
  pk_str (&p, cmd);
  b_u8 (&p, 0x85);
  b_u8 (&p, 'R');
  b_u8 (&p, '.');
  size_t size;
  uint8_t *z = make_ckpt (&p, NULL, NULL, 0, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "no state dict found: the file holds an object of type os.system");
  CHECK (access (marker, F_OK) != 0);
  free (z);
  free (p.p);

  /* a training dict without weights names its keys */
  memset (&p, 0, sizeof p);
  b_u8 (&p, 0x80);
  b_u8 (&p, 2);
  b_u8 (&p, '}');
  b_u8 (&p, '(');
  pk_str (&p, "epoch");
  pk_int (&p, 3);
  pk_str (&p, "arch");
  pk_str (&p, "gpunet_0");
  pk_str (&p, "state_dict_ema");
  b_u8 (&p, 'N');
  b_u8 (&p, 'u');
  b_u8 (&p, '.');
  z = make_ckpt (&p, NULL, NULL, 0, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "no state dict found: the file holds a dict with keys epoch, arch, state_dict_ema");
  free (z);
  free (p.p);

  /* malformed pickles give errors */
  static const struct { const char *bytes; size_t len; const char *needle; } bad[] = {
    { "\x80\x02.", 3, "stack underflow" },
    { "\x80\x02h\x05.", 5, "missing memo" },
    { "\x80\x02Nr\xff\xff\xff\x7f.", 9, "memo index too large" },
    { "\x80\x02}q", 4, "truncated pickle" },
    { "\x80\x02X\xff\xff\xff\x00" "abc.", 11, "runs past the end" },
    { "\x80\x02\xff", 3, "unknown opcode 0xff" },
    { "\x80\x02" "cos\nsys", 9, "unterminated" },
    { "\x80\x02(Q.", 4, "stack underflow" },
    { "\x80\x02K\x01Q.", 5, "persistent id" },
    { "\x80\x02K\x01K\x02R.", 7, "call of a int" },
    { "\x80\x02}K\x01" "a.", 7, "not a list" },
    { "\x80\x02]K\x01K\x02s.", 9, "not a dict" },
    { "\x80\x06}.", 4, "protocol" },
    { "\x80\x02}(K\x01u.", 8, "odd number" },
    { "\x80\x02}", 3, "without a STOP" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    buf q = { 0 };
    b_add (&q, bad[i].bytes, bad[i].len);
    z = make_ckpt (&q, NULL, NULL, 0, 0, 0, &size);
    EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, bad[i].needle);
    free (z);
    free (q.p);
  }
  /* MARK then a collection on a stack never used: empty collections (an empty tuple, as
   * Python builds), no arithmetic on the stack's NULL pointer nor memcpy from it (UBSan) */
  static const struct { const char *bytes; size_t len; const char *needle; } empty[] = {
    { "\x80\x02(t.", 5, "holds a tuple" },
    { "(t.", 3, "holds a tuple" },
    { "\x80\x02(l.", 5, "holds a list" },
    { "\x80\x02(d.", 5, "holds an empty dict" },
    { "\x80\x02(1N.", 6, "holds None" },
    { "\x80\x02(\x91.", 5, "no state dict found" },
    { "\x80\x02(tt.", 6, "MARK missing" },
  };
  for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
    buf q = { 0 };
    b_add (&q, empty[i].bytes, empty[i].len);
    z = make_ckpt (&q, NULL, NULL, 0, 0, 0, &size);
    EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, empty[i].needle);
    free (z);
    free (q.p);
  }
  /* deep MARK nesting and long chains are bounded */
  buf q = { 0 };
  b_add (&q, "\x80\x02", 2);
  for (int i = 0; i < 70000; i++)
    b_u8 (&q, '(');
  b_u8 (&q, '.');
  z = make_ckpt (&q, NULL, NULL, 0, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "MARK");
  free (z);
  free (q.p);
  /* a self-containing list (cycle) is freed without recursion */
  memset (&q, 0, sizeof q);
  b_add (&q, "\x80\x02]q\x00h\x00" "a.", 9);
  z = make_ckpt (&q, NULL, NULL, 0, 0, 0, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "no state dict found: the file holds a list");
  free (z);
  free (q.p);
}

static void
test_other_formats (void)
{
  gpunet_checkpoint *ck = NULL;
  char *err = NULL;
  const char *missing = "/nonexistent/dir/model.pth.tar";
  CHECK (gpunet_checkpoint_open (missing, &ck, &err) == GPUNET_ERR_IO);
  CHECK_CONTAINS (err, missing);
  CHECK_CONTAINS (err, "No such file");
  CHECK (ck == NULL);
  free (err);
  err = NULL;
  CHECK (gpunet_checkpoint_open (check_data_dir (), &ck, &err) == GPUNET_ERR_IO);
  free (err);

  static const uint8_t legacy[] = { 0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20,
                                     0x6a, 0xa8, 0x50, 0x19, '.', 0x80, 0x02, 'M', 0xe9, 0x03, '.' };
  EXPECT_ERROR (legacy, sizeof legacy, GPUNET_ERR_FORMAT, "legacy");
  EXPECT_ERROR (legacy, sizeof legacy, GPUNET_ERR_FORMAT, "PyTorch >= 1.6");
  EXPECT_ERROR ("", 0, GPUNET_ERR_FORMAT, "empty");
  EXPECT_ERROR ("hello world, not weights", 24, GPUNET_ERR_FORMAT, "not a PyTorch checkpoint");
  EXPECT_ERROR ("\x80\x02}.", 4, GPUNET_ERR_FORMAT, "bare Python pickle");
  EXPECT_ERROR ("PK\x03\x04 short", 10, GPUNET_ERR_FORMAT, "truncated");
  /* a zip without data.pkl */
  zentry e[1] = { { "readme.txt", "hi", 2, 0 } };
  size_t size;
  uint8_t *z = make_zip (e, 1, 0, 0, NULL, &size);
  EXPECT_ERROR (z, size, GPUNET_ERR_FORMAT, "no data.pkl");
  free (z);
}

/* A FIFO (or a device) given as weights or architecture: open() of a FIFO blocks until a
 * writer comes, so the loaders must refuse it before a blocking open (issue 43, point 1).
 * An alarm turns a hang into a failure instead of a meson timeout. */
static void
on_alarm (int sig)
{
  (void) sig;
  static const char msg[] = "test_checkpoint: FAILED: a loader blocked on a FIFO\n";
  if (write (2, msg, sizeof msg - 1) < 0) {
    /* nothing more to do */
  }
  _exit (1);
}

static void
test_non_regular (void)
{
  char fifo[512];
  const char *dir = getenv ("TMPDIR");
  snprintf (fifo, sizeof fifo, "%s/gpunet-test-%ld.fifo", dir ? dir : "/tmp", (long) getpid ());
  unlink (fifo);
  if (mkfifo (fifo, 0600) != 0) {
    fprintf (stderr, "test_non_regular: cannot make a FIFO, skipped\n");
    return;
  }
  signal (SIGALRM, on_alarm);
  alarm (20);
  const char *paths[] = { fifo, "/dev/null" };
  for (int i = 0; i < 2; i++) {
    gpunet_checkpoint *ck = NULL;
    char *err = NULL;
    CHECK (gpunet_checkpoint_open (paths[i], &ck, &err) == GPUNET_ERR_IO);
    CHECK (ck == NULL);
    CHECK_CONTAINS (err, paths[i]);
    CHECK_CONTAINS (err, "not a regular file");
    free (err);

    gpunet_model *m = NULL;
    err = NULL;
    char arch[1024];
    snprintf (arch, sizeof arch, "%s/fixtures/tiny-a.json", check_data_dir ());
    CHECK (gpunet_model_load (arch, paths[i], &m, &err) == GPUNET_ERR_IO);
    CHECK (m == NULL);
    CHECK_CONTAINS (err, "not a regular file");
    free (err);
    err = NULL;
    CHECK (gpunet_model_load (paths[i], fixture_path ("tiny-a", ".pth.tar"), &m, &err)
        == GPUNET_ERR_IO);
    CHECK (m == NULL);
    CHECK_CONTAINS (err, paths[i]);
    CHECK_CONTAINS (err, "not a regular file");
    free (err);
  }
  alarm (0);
  signal (SIGALRM, SIG_DFL);
  unlink (fifo);
}

/* ---- truncation and corruption of the real files ----------------------------------- */

static void
touch_all (const gpunet_checkpoint *ck, unsigned *sink)
{
  for (size_t i = 0; i < gpunet_checkpoint_n_tensors (ck); i++) {
    const gpunet_tensor *t = gpunet_checkpoint_tensor (ck, i);
    const uint8_t *d = t->data;
    for (size_t k = 0; k < t->nbytes; k++)
      *sink += d[k];
    *sink += (unsigned) strlen (t->name);
  }
}

static void
test_truncation (void)
{
  const char *files[2] = { fixture_path ("tiny-dl", ".pth.tar"), fixture_path ("tiny-dl", ".state_dict.pth") };
  for (int f = 0; f < 2; f++) {
    size_t size;
    uint8_t *d = check_read_file (files[f], &size);
    CHECK (d != NULL);
    if (!d)
      continue;
    for (size_t k = 0; k < 64; k++)
      EXPECT_ERROR (d, size * k / 64, GPUNET_ERR_FORMAT, NULL);
    for (size_t cut = 1; cut <= 40; cut++)
      EXPECT_ERROR (d, size - cut, GPUNET_ERR_FORMAT, NULL);
    EXPECT_ERROR (d, size - 22, GPUNET_ERR_FORMAT, "end-of-central-directory");
    free (d);
  }
}

static uint64_t
xorshift (uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

#ifndef FLIP_TRIALS
#define FLIP_TRIALS 600
#endif

/* A damaged file whose zip structure survived (a bad disk, a bad copy): one bit
 * flipped in the middle of every tensor storage, or in the pickle, must not load as
 * other weights.  Before the reader checked CRC-32s it loaded such a file silently
 * and the element's scores changed. */
static void
test_crc_damage (void)
{
  size_t size;
  uint8_t *orig = check_read_file (fixture_path ("tiny-a", ".pth.tar"), &size);
  CHECK (orig != NULL);
  if (!orig)
    return;
  uint8_t *d = malloc (size);
  gpunet_zip *z = NULL;
  CHECK (gpunet_zip_open (orig, size, &z, NULL) == GPUNET_OK);
  for (int pickle = 0; z && pickle < 2; pickle++) {
    memcpy (d, orig, size);
    for (size_t i = 0; i < gpunet_zip_n_entries (z); i++) {
      const gpunet_zip_entry *e = gpunet_zip_entry_at (z, i);
      if (e->size >= 4 && strstr (e->name, pickle ? "/data.pkl" : "/data/"))
        d[e->data_offset + e->size / 2] ^= 0x40;
    }
    EXPECT_ERROR (d, size, GPUNET_ERR_FORMAT, "fails its CRC-32 check");
    EXPECT_ERROR (d, size, GPUNET_ERR_FORMAT, pickle ? "zip entry 'tiny-a.pth/data.pkl'"
        : "the file is damaged; download or copy it again");
  }
  /* the undamaged bytes still load */
  gpunet_checkpoint *ck = NULL;
  CHECK (gpunet_checkpoint_open_memory (orig, size, "orig", &ck, NULL) == GPUNET_OK);
  gpunet_checkpoint_free (ck);
  gpunet_zip_free (z);
  free (d);
  free (orig);
}

static void
test_bit_flips (void)
{
  size_t size;
  uint8_t *orig = check_read_file (fixture_path ("tiny-dl", ".pth.tar"), &size);
  CHECK (orig != NULL);
  if (!orig)
    return;
  uint8_t *d = malloc (size);
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  unsigned sink = 0;
  int loaded = 0, failed = 0, bad_errors = 0;
  for (int trial = 0; trial < FLIP_TRIALS; trial++) {
    memcpy (d, orig, size);
    int flips = 1 + (int) (xorshift (&seed) % 3);
    for (int k = 0; k < flips; k++) {
      uint64_t r = xorshift (&seed);
      size_t pos;
      switch (trial % 3) {   /* the pickle, the central directory, anywhere */
        case 0: pos = (size_t) (r % 40000); break;
        case 1: pos = size - 1 - (size_t) (r % 30000); break;
        default: pos = (size_t) (r % size); break;
      }
      d[pos] ^= (uint8_t) (1u << ((r >> 32) % 8));
    }
    gpunet_checkpoint *ck = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_checkpoint_open_memory (d, size, "flipped", &ck, &err);
    if (st == GPUNET_OK) {
      loaded++;
      touch_all (ck, &sink);
    } else {
      failed++;
      bad_errors += !err || !strstr (err, "checkpoint 'flipped'") || ck != NULL;
    }
    gpunet_checkpoint_free (ck);
    free (err);
  }
  CHECK (loaded + failed == FLIP_TRIALS);
  CHECK (failed > 20 && loaded > 20);
  CHECK (bad_errors == 0);
  printf ("bit flips: %d loaded, %d rejected (checksum %u)\n", loaded, failed, sink);
  free (d);
  free (orig);
}

int
main (void)
{
  test_fixtures ();
  test_ema_fallback ();
  test_safetensors_roundtrip ();
  test_module_prefix_and_dtypes ();
  test_crafted_ok ();
  test_crafted_errors ();
  test_hostile_pickles ();
  test_other_formats ();
  test_non_regular ();
  test_truncation ();
  test_bit_flips ();
  test_crc_damage ();
  return check_report ();
}
