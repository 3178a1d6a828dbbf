/* calib.c: precision=int8's scales: a model's identity (hashes of its graph's structure
 * and of its folded weights), calibration (the f32 reference ops over preprocessed
 * images, recording each quantised convolution's input range), the scales file (writer
 * and bounded reader, format in docs/performance.md "The scales file"), and the per-op
 * quantisation a session plans with. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calib.h"
#include "error.h"
#include "model_private.h"
#include "../kernels/ref/cpu_ops.h"

static const char scales_magic[8] = { 'G', 'P', 'U', 'N', 'E', 'T', 'S', '8' };

/* ---- identity -------------------------------------------------------------------- */

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t
mix_int (uint64_t h, int64_t v)
{
  uint64_t u = (uint64_t) v;
  for (int i = 0; i < 8; i++, u >>= 8)
    h = (h ^ (u & 0xff)) * FNV_PRIME;
  return h;
}

/* Words at a time (the weights of the largest model are ~100 MB). */
static uint64_t
mix_floats (uint64_t h, const float *f, size_t n)
{
  if (!f)
    return mix_int (h, -1);
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    uint64_t w;
    memcpy (&w, f + i, sizeof w);
    h = (h ^ w) * FNV_PRIME;
    h ^= h >> 29;
  }
  for (; i < n; i++) {
    uint32_t w;
    memcpy (&w, f + i, sizeof w);
    h = (h ^ w) * FNV_PRIME;
  }
  return mix_int (h, (int64_t) n);
}

void
gpunet_graph_identity (const gpunet_graph *g, uint64_t *arch_hash, uint64_t *weights_hash)
{
  uint64_t a = mix_int (FNV_OFFSET, g->n_ops), w = FNV_OFFSET;
  a = mix_int (a, g->n_tensors), a = mix_int (a, g->input), a = mix_int (a, g->output);
  for (int t = 0; t < g->n_tensors; t++) {
    const gpunet_tensor_desc *d = &g->tensors[t];
    a = mix_int (a, d->c), a = mix_int (a, d->h), a = mix_int (a, d->w);
  }
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    a = mix_int (a, op->kind), a = mix_int (a, op->in), a = mix_int (a, op->out);
    a = mix_int (a, op->residual);
    switch (op->kind) {
      case GPUNET_OP_CONV2D: {
        const gpunet_conv2d_params *p = &op->p.conv2d;
        const int v[] = { p->cin, p->cout, p->kernel, p->stride, p->pad, p->groups, p->act };
        for (size_t j = 0; j < sizeof v / sizeof v[0]; j++)
          a = mix_int (a, v[j]);
        w = mix_floats (w, p->weight, (size_t) p->cout * (p->cin / p->groups) * p->kernel
            * p->kernel);
        w = mix_floats (w, p->bias, p->bias ? (size_t) p->cout : 0);
        break;
      }
      case GPUNET_OP_DWCONV2D: {
        const gpunet_dwconv2d_params *p = &op->p.dwconv2d;
        const int v[] = { p->c, p->kernel, p->stride, p->pad, p->act };
        for (size_t j = 0; j < sizeof v / sizeof v[0]; j++)
          a = mix_int (a, v[j]);
        w = mix_floats (w, p->weight, (size_t) p->c * p->kernel * p->kernel);
        w = mix_floats (w, p->bias, p->bias ? (size_t) p->c : 0);
        break;
      }
      case GPUNET_OP_SE: {
        const gpunet_se_params *p = &op->p.se;
        a = mix_int (a, p->c), a = mix_int (a, p->rd), a = mix_int (a, p->act);
        w = mix_floats (w, p->w_reduce, (size_t) p->rd * p->c);
        w = mix_floats (w, p->b_reduce, (size_t) p->rd);
        w = mix_floats (w, p->w_expand, (size_t) p->c * p->rd);
        w = mix_floats (w, p->b_expand, (size_t) p->c);
        break;
      }
      case GPUNET_OP_AVGPOOL:
        break;
      case GPUNET_OP_LINEAR: {
        const gpunet_linear_params *p = &op->p.linear;
        a = mix_int (a, p->cin), a = mix_int (a, p->cout), a = mix_int (a, p->act);
        w = mix_floats (w, p->weight, (size_t) p->cout * p->cin);
        w = mix_floats (w, p->bias, p->bias ? (size_t) p->cout : 0);
        break;
      }
    }
  }
  *arch_hash = a;
  *weights_hash = w;
}

int
gpunet_int8_quantisable (const gpunet_graph *g, int i)
{
  const gpunet_op *op = &g->ops[i];
  return op->kind == GPUNET_OP_CONV2D && op->p.conv2d.groups == 1 && op->in != g->input;
}

/* ---- the file --------------------------------------------------------------------- */

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

/* ---- binding a file to a graph ----------------------------------------------------- */

gpunet_status
gpunet_int8_inputs (const gpunet_graph *g, const char *path, gpunet_int8_input **out,
    char **err)
{
  *out = NULL;
  if (!path || !*path)
    return gpunet_fail (err, GPUNET_ERR_INVALID_ARGUMENT, "precision=int8 needs an int8 "
        "scales file (the element's int8-scales property, the tools' --scales FILE); make "
        "one for this model with gpunet-convert --calibrate DIR");
  gpunet_scales s;
  gpunet_status st = gpunet_scales_load (path, &s, err);
  if (st != GPUNET_OK)
    return st;
  uint64_t ah, wh;
  gpunet_graph_identity (g, &ah, &wh);
  if (s.arch_hash != ah || s.weights_hash != wh) {
    const uint64_t fa = s.arch_hash, fw = s.weights_hash;
    gpunet_scales_clear (&s);
    return gpunet_fail (err, GPUNET_ERR_INVALID_ARGUMENT, "int8 scales file '%s' was "
        "calibrated for another %s (its %s %016llx, this model's %016llx); calibrate this "
        "model and checkpoint with gpunet-convert --calibrate DIR", path,
        fa != ah ? "architecture" : "checkpoint",
        fa != ah ? "architecture hash" : "weights hash",
        (unsigned long long) (fa != ah ? fa : fw), (unsigned long long) (fa != ah ? ah : wh));
  }
  gpunet_int8_input *q = calloc ((size_t) g->n_ops, sizeof *q);
  if (!q) {
    gpunet_scales_clear (&s);
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory reading int8 scales");
  }
  for (int i = 0; i < s.n; i++) {
    const gpunet_scales_entry *e = &s.entries[i];
    const gpunet_tensor_desc *d = e->op < g->n_ops ? &g->tensors[g->ops[e->op].in] : NULL;
    if (!d || !gpunet_int8_quantisable (g, e->op) || d->c != e->c || d->h != e->h
        || d->w != e->w) {
      free (q);
      gpunet_scales_clear (&s);
      return gpunet_fail (err, GPUNET_ERR_INVALID_ARGUMENT, "int8 scales file '%s' names op "
          "%d, which is not a dense convolution of this model's input shape; calibrate "
          "again with gpunet-convert --calibrate DIR", path, e->op);
    }
    if (e->clip <= 0.0f)
      continue;   /* an input that was all zero: f32 */
    q[e->op].is_unsigned = e->min >= 0.0f;
    q[e->op].scale = e->clip / (q[e->op].is_unsigned ? 255.0f : 127.0f);
  }
  gpunet_scales_clear (&s);
  *out = q;
  return GPUNET_OK;
}

/* ---- calibration -------------------------------------------------------------------- */

struct gpunet_calibration {
  gpunet_model *model;
  const gpunet_graph *g;
  gpunet_calib_method method;
  float percentile;
  float **t;           /* every tensor of one image */
  float *scratch;      /* SE; and |x| for the percentile */
  size_t scratch_n;
  float *min, *max;    /* per op: over all images */
  double *pct_sum;     /* per op: the sum of per-image percentiles */
  int n_images;
};

void
gpunet_calibration_free (gpunet_calibration *c)
{
  if (!c)
    return;
  for (int i = 0; c->t && c->g && i < c->g->n_tensors; i++)
    free (c->t[i]);
  free (c->t);
  free (c->scratch);
  free (c->min), free (c->max), free (c->pct_sum);
  gpunet_model_unref (c->model);
  free (c);
}

gpunet_status
gpunet_calibration_new (gpunet_model *model, gpunet_calib_method method, float percentile,
    gpunet_calibration **out, char **err)
{
  *out = NULL;
  if (method != GPUNET_CALIB_MAX && method != GPUNET_CALIB_PERCENTILE)
    return gpunet_fail (err, GPUNET_ERR_INVALID_ARGUMENT, "calibration method is max or "
        "percentile");
  if (method == GPUNET_CALIB_PERCENTILE && !(percentile > 50.0f && percentile <= 100.0f))
    return gpunet_fail (err, GPUNET_ERR_INVALID_ARGUMENT, "calibration percentile %g is "
        "outside (50, 100]; 99.99 is usual", percentile);
  gpunet_calibration *c = calloc (1, sizeof *c);
  if (!c)
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory calibrating");
  c->model = gpunet_model_ref (model);
  c->g = gpunet_model_graph (model);
  c->method = method;
  c->percentile = method == GPUNET_CALIB_PERCENTILE ? percentile : 100.0f;
  const gpunet_graph *g = c->g;
  c->t = calloc ((size_t) g->n_tensors, sizeof *c->t);
  c->min = malloc (sizeof (float) * (size_t) g->n_ops);
  c->max = malloc (sizeof (float) * (size_t) g->n_ops);
  c->pct_sum = calloc ((size_t) g->n_ops, sizeof (double));
  int ok = c->t && c->min && c->max && c->pct_sum;
  for (int i = 0; ok && i < g->n_tensors; i++) {
    const gpunet_tensor_desc *d = &g->tensors[i];
    const size_t n = (size_t) d->c * d->h * d->w;
    if (n > c->scratch_n)
      c->scratch_n = n;
    ok = (c->t[i] = calloc (n ? n : 1, sizeof (float))) != NULL;
  }
  for (int i = 0; ok && i < g->n_ops; i++) {
    c->min[i] = INFINITY, c->max[i] = -INFINITY;
    if (g->ops[i].kind == GPUNET_OP_SE && (size_t) (g->ops[i].p.se.c + g->ops[i].p.se.rd)
        > c->scratch_n)
      c->scratch_n = (size_t) g->ops[i].p.se.c + g->ops[i].p.se.rd;
  }
  if (ok)
    ok = (c->scratch = malloc (sizeof (float) * c->scratch_n)) != NULL;
  if (!ok) {
    gpunet_calibration_free (c);
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory calibrating");
  }
  *out = c;
  return GPUNET_OK;
}

/* The k-th smallest of a[0..n) (a is reordered): Wirth's selection. */
static float
select_kth (float *a, size_t n, size_t k)
{
  ptrdiff_t lo = 0, hi = (ptrdiff_t) n - 1, kk = (ptrdiff_t) k;
  while (lo < hi) {
    const float pivot = a[kk];
    ptrdiff_t i = lo, j = hi;
    do {
      while (a[i] < pivot)
        i++;
      while (pivot < a[j])
        j--;
      if (i <= j) {
        const float t = a[i];
        a[i] = a[j], a[j] = t;
        i++, j--;
      }
    } while (i <= j);
    if (j < kk)
      lo = i;
    if (kk < i)
      hi = j;
  }
  return a[kk];
}

static void
record (gpunet_calibration *c, int op, const float *x, size_t n)
{
  float lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
    c->scratch[i] = fabsf (x[i]);
  }
  c->min[op] = lo < c->min[op] ? lo : c->min[op];
  c->max[op] = hi > c->max[op] ? hi : c->max[op];
  if (c->method == GPUNET_CALIB_PERCENTILE) {
    size_t k = (size_t) floor ((double) c->percentile / 100.0 * (double) (n - 1) + 0.5);
    c->pct_sum[op] += select_kth (c->scratch, n, k < n ? k : n - 1);
  }
}

gpunet_status
gpunet_calibration_add (gpunet_calibration *c, const float *input, char **err)
{
  const gpunet_graph *g = c->g;
  const gpunet_tensor_desc *di = &g->tensors[g->input];
  memcpy (c->t[g->input], input, sizeof (float) * (size_t) di->c * di->h * di->w);
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    const float *in = c->t[op->in];
    float *o = c->t[op->out];
    if (gpunet_int8_quantisable (g, i)) {
      const gpunet_tensor_desc *d = &g->tensors[op->in];
      record (c, i, in, (size_t) d->c * d->h * d->w);
    }
    switch (op->kind) {
      case GPUNET_OP_CONV2D:
        gpunet_cpu_conv2d (&op->p.conv2d, in, op->residual >= 0 ? c->t[op->residual] : NULL,
            o, 1);
        break;
      case GPUNET_OP_DWCONV2D:
        gpunet_cpu_dwconv2d (&op->p.dwconv2d, in, o, 1);
        break;
      case GPUNET_OP_SE:
        gpunet_cpu_se (&op->p.se, o, c->scratch, 1);
        break;
      case GPUNET_OP_AVGPOOL:
        gpunet_cpu_avgpool (&op->p.avgpool, in, o, 1);
        break;
      case GPUNET_OP_LINEAR:
        gpunet_cpu_linear (&op->p.linear, in, o, 1);
        break;
    }
  }
  (void) err;
  c->n_images++;
  return GPUNET_OK;
}

int
gpunet_calibration_images (const gpunet_calibration *c)
{
  return c->n_images;
}

gpunet_status
gpunet_calibration_write (const gpunet_calibration *c, const char *path, char **err)
{
  if (c->n_images == 0)
    return gpunet_fail (err, GPUNET_ERR_INVALID_ARGUMENT, "calibration saw no image; give a "
        "folder of photos the model will see");
  const gpunet_graph *g = c->g;
  gpunet_scales s = { 0 };
  gpunet_graph_identity (g, &s.arch_hash, &s.weights_hash);
  s.method = c->method;
  s.percentile = c->percentile;
  s.n_images = c->n_images;
  s.entries = calloc ((size_t) g->n_ops, sizeof *s.entries);
  if (!s.entries)
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory writing int8 scales");
  for (int i = 0; i < g->n_ops; i++) {
    if (!gpunet_int8_quantisable (g, i))
      continue;
    const gpunet_tensor_desc *d = &g->tensors[g->ops[i].in];
    gpunet_scales_entry *e = &s.entries[s.n++];
    e->op = i, e->c = d->c, e->h = d->h, e->w = d->w;
    e->min = c->min[i];
    const float amax = fmaxf (fabsf (c->min[i]), fabsf (c->max[i]));
    e->clip = c->method == GPUNET_CALIB_PERCENTILE
        ? fminf (amax, (float) (c->pct_sum[i] / c->n_images)) : amax;
    if (e->min > e->clip)
      e->min = e->clip;
  }
  gpunet_status st = gpunet_scales_write (&s, path, err);
  free (s.entries);
  return st;
}
