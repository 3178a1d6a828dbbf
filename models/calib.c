/* calib.c: precision=int8's scales: a model's identity (hashes of its graph's structure
 * and of its folded weights), calibration (the f32 reference ops over preprocessed
 * images, recording each quantised convolution's input range), and the per-op
 * quantisation a session plans with (the scales file itself: scales.c). */
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "error.h"
#include "model_private.h"
#include "../kernels/ref/cpu_ops.h"

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
