/* scales.c: precision=int8's scales file (format in docs/performance.md, "The scales
 * file"): the writer and the bounded reader (regular files only, a size bound, an exact
 * size, versioned; fuzzed by tests/fuzz/fuzz_scales.c).  No other engine code. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calib.h"
#include "error.h"

static const char scales_magic[8] = { 'G', 'P', 'U', 'N', 'E', 'T', 'S', '8' };

static void
put_u32 (uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t) (v >> (8 * i));
}

static void
put_u64 (uint8_t *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t) (v >> (8 * i));
}

static void
put_f32 (uint8_t *p, float f)
{
  uint32_t v;
  memcpy (&v, &f, sizeof v);
  put_u32 (p, v);
}

static uint32_t
get_u32 (const uint8_t *p)
{
  return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
      | (uint32_t) p[3] << 24;
}

static uint64_t
get_u64 (const uint8_t *p)
{
  return (uint64_t) get_u32 (p) | (uint64_t) get_u32 (p + 4) << 32;
}

static float
get_f32 (const uint8_t *p)
{
  uint32_t v = get_u32 (p);
  float f;
  memcpy (&f, &v, sizeof f);
  return f;
}

void
gpunet_scales_clear (gpunet_scales *s)
{
  free (s->entries);
  memset (s, 0, sizeof *s);
}

gpunet_status
gpunet_scales_parse (const uint8_t *data, size_t len, gpunet_scales *out, char **err)
{
  memset (out, 0, sizeof *out);
  if (len < GPUNET_SCALES_HEADER_BYTES || memcmp (data, scales_magic, 8) != 0)
    return gpunet_fail (err, GPUNET_ERR_FORMAT, "not a gst-gpunet int8 scales file (no "
        "GPUNETS8 header); make one with gpunet-convert --calibrate");
  const uint32_t version = get_u32 (data + 8);
  if (version != GPUNET_SCALES_VERSION)
    return gpunet_fail (err, GPUNET_ERR_FORMAT, "int8 scales file version %u, this build "
        "reads version %d; calibrate again with this gpunet-convert", version,
        GPUNET_SCALES_VERSION);
  const uint32_t n = get_u32 (data + 12);
  if (n > GPUNET_SCALES_MAX_ENTRIES
      || len != GPUNET_SCALES_HEADER_BYTES + (size_t) n * GPUNET_SCALES_ENTRY_BYTES)
    return gpunet_fail (err, GPUNET_ERR_FORMAT, "int8 scales file is %zu bytes, its header "
        "says %u entries (%zu bytes); the file is truncated or damaged: calibrate again",
        len, n, (size_t) GPUNET_SCALES_HEADER_BYTES
        + (size_t) (n > GPUNET_SCALES_MAX_ENTRIES ? 0 : n) * GPUNET_SCALES_ENTRY_BYTES);
  const uint32_t method = get_u32 (data + 32);
  const float pct = get_f32 (data + 36);
  if ((method != GPUNET_CALIB_MAX && method != GPUNET_CALIB_PERCENTILE)
      || !(pct > 0.0f && pct <= 100.0f))
    return gpunet_fail (err, GPUNET_ERR_FORMAT, "int8 scales file names calibration method "
        "%u with percentile %g; the file is damaged: calibrate again", method, pct);
  out->arch_hash = get_u64 (data + 16);
  out->weights_hash = get_u64 (data + 24);
  out->method = (int) method;
  out->percentile = pct;
  out->n_images = (int) (get_u32 (data + 40) & 0x7fffffff);
  out->n = (int) n;
  out->entries = calloc (n ? n : 1, sizeof *out->entries);
  if (!out->entries)
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory reading int8 scales");
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *e = data + GPUNET_SCALES_HEADER_BYTES + (size_t) i * GPUNET_SCALES_ENTRY_BYTES;
    gpunet_scales_entry *x = &out->entries[i];
    x->op = (int) get_u32 (e);
    x->c = (int) get_u32 (e + 4), x->h = (int) get_u32 (e + 8), x->w = (int) get_u32 (e + 12);
    x->min = get_f32 (e + 16), x->clip = get_f32 (e + 20);
    if (x->op < 0 || x->c <= 0 || x->h <= 0 || x->w <= 0 || (i > 0 && x->op <= out->entries[i - 1].op)
        || !isfinite (x->min) || !isfinite (x->clip) || x->clip < 0.0f || x->min > x->clip) {
      gpunet_scales_clear (out);
      return gpunet_fail (err, GPUNET_ERR_FORMAT, "int8 scales file entry %u is invalid "
          "(op order, shape or range); the file is damaged: calibrate again", i);
    }
  }
  return GPUNET_OK;
}

gpunet_status
gpunet_scales_load (const char *path, gpunet_scales *out, char **err)
{
  memset (out, 0, sizeof *out);
  if (!path || !*path)
    return gpunet_fail (err, GPUNET_ERR_INVALID_ARGUMENT, "no int8 scales file given");
  struct stat sb;
  int fd = -1;
  /* a FIFO would block in open(), a device might never end: regular files only */
  if (stat (path, &sb) != 0)
    return gpunet_fail (err, GPUNET_ERR_IO, "cannot open int8 scales file '%s': %s", path,
        strerror (errno));
  if (!S_ISREG (sb.st_mode))
    return gpunet_fail (err, GPUNET_ERR_IO, "int8 scales file '%s' is not a regular file (a "
        "FIFO, device or directory): give the file gpunet-convert --calibrate wrote", path);
  fd = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return gpunet_fail (err, GPUNET_ERR_IO, "cannot open int8 scales file '%s': %s", path,
        strerror (errno));
  if (fstat (fd, &sb) != 0 || !S_ISREG (sb.st_mode) || sb.st_size > GPUNET_SCALES_MAX_BYTES) {
    close (fd);
    return gpunet_fail (err, GPUNET_ERR_FORMAT, "int8 scales file '%s' is not a regular file "
        "of at most %d bytes; give the file gpunet-convert --calibrate wrote", path,
        GPUNET_SCALES_MAX_BYTES);
  }
  /* read at most one byte past the bound, whatever the size said */
  uint8_t *buf = malloc ((size_t) GPUNET_SCALES_MAX_BYTES + 1);
  size_t n = 0;
  if (!buf) {
    close (fd);
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory reading int8 scales");
  }
  while (n <= (size_t) GPUNET_SCALES_MAX_BYTES) {
    ssize_t r = read (fd, buf + n, (size_t) GPUNET_SCALES_MAX_BYTES + 1 - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      const int e = errno;
      close (fd);
      free (buf);
      return gpunet_fail (err, GPUNET_ERR_IO, "cannot read int8 scales file '%s': %s", path,
          strerror (e));
    }
    if (r == 0)
      break;
    n += (size_t) r;
  }
  close (fd);
  gpunet_status st = n > (size_t) GPUNET_SCALES_MAX_BYTES
      ? gpunet_fail (err, GPUNET_ERR_FORMAT, "int8 scales file is larger than %d bytes",
          GPUNET_SCALES_MAX_BYTES)
      : gpunet_scales_parse (buf, n, out, err);
  free (buf);
  if (st != GPUNET_OK)
    gpunet_error_prefix (err, "int8 scales file '%s'", path);
  return st;
}

gpunet_status
gpunet_scales_write (const gpunet_scales *s, const char *path, char **err)
{
  const size_t len = GPUNET_SCALES_HEADER_BYTES + (size_t) s->n * GPUNET_SCALES_ENTRY_BYTES;
  uint8_t *buf = calloc (1, len);
  if (!buf)
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory writing int8 scales");
  memcpy (buf, scales_magic, 8);
  put_u32 (buf + 8, GPUNET_SCALES_VERSION);
  put_u32 (buf + 12, (uint32_t) s->n);
  put_u64 (buf + 16, s->arch_hash);
  put_u64 (buf + 24, s->weights_hash);
  put_u32 (buf + 32, (uint32_t) s->method);
  put_f32 (buf + 36, s->percentile);
  put_u32 (buf + 40, (uint32_t) s->n_images);
  for (int i = 0; i < s->n; i++) {
    uint8_t *e = buf + GPUNET_SCALES_HEADER_BYTES + (size_t) i * GPUNET_SCALES_ENTRY_BYTES;
    const gpunet_scales_entry *x = &s->entries[i];
    put_u32 (e, (uint32_t) x->op), put_u32 (e + 4, (uint32_t) x->c);
    put_u32 (e + 8, (uint32_t) x->h), put_u32 (e + 12, (uint32_t) x->w);
    put_f32 (e + 16, x->min), put_f32 (e + 20, x->clip);
  }
  FILE *f = fopen (path, "wb");
  gpunet_status st = GPUNET_OK;
  if (!f || fwrite (buf, 1, len, f) != len)
    st = gpunet_fail (err, GPUNET_ERR_IO, "cannot write int8 scales file '%s': %s", path,
        strerror (errno));
  if (f && fclose (f) != 0 && st == GPUNET_OK)
    st = gpunet_fail (err, GPUNET_ERR_IO, "cannot write int8 scales file '%s': %s", path,
        strerror (errno));
  free (buf);
  return st;
}

