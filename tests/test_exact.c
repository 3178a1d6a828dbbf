/* test_exact.c: the fast CPU path on the seven full-size GPUNets (random weights with
 * measured BatchNorm statistics, one random input each, batch 1) against a float64 forward
 * of the same graph written here: the largest logit error must stay within 5e-5 of the
 * largest |logit|.  Also checks that our Winograd kernels run where the plan should put
 * them, with the F(4x4, 3x3) tile.  The small fixtures of test_backend_ops do not show
 * the rounding of Winograd on full-size models.  Arguments: one model (or "all"), a
 * seed, then "contrast" for the stress input (make_input) and "ablate" to print the
 * error with each kernel kind of ours replaced (the error budget, docs/performance.md). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gpunet.h"
#include "model_private.h"
#include "activation.h"
#include "backend.h"
#include "onednn/backend_onednn.h"
#include "onednn/winograd.h"

#define BOUND 5e-5

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double
act64 (double x, int act)
{
  if (act == GPUNET_EPI_RELU)
    return x > 0.0 ? x : 0.0;
  if (act == GPUNET_EPI_SWISH)
    return x / (1.0 + exp (-x));
  return x;
}

/* float64 sums of a convolution of one image, NCHW, without bias: the reference oracle's
 * loop order (kernels/ref/conv2d.c) with double accumulators, by blocks of output rows
 * that stay in the L1 cache while every input channel and tap is added in. */
static void
conv64 (const gpunet_conv2d_params *p, const double *in, double *out)
{
  const int k = p->kernel, s = p->stride, pad = p->pad;
  const int cin_g = p->cin / p->groups, cout_g = p->cout / p->groups;
  const long ip = (long) p->ih * p->iw, op = (long) p->oh * p->ow;
  const int rows = p->ow >= 1024 ? 1 : 1024 / p->ow;   /* 8 KB of outputs per block */
  const int nrb = (p->oh + rows - 1) / rows;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
  for (long job = 0; job < (long) p->cout * nrb; job++) {
    const int oc = (int) (job / nrb), y0 = (int) (job % nrb) * rows;
    const int y1 = y0 + rows < p->oh ? y0 + rows : p->oh;
    const int g = oc / cout_g;
    double *o = out + oc * op;
    memset (o + (long) y0 * p->ow, 0, sizeof (double) * (size_t) (y1 - y0) * p->ow);
    for (int ic = 0; ic < cin_g; ic++) {
      const double *x = in + (long) (g * cin_g + ic) * ip;
      const float *w = p->weight + ((long) oc * cin_g + ic) * k * k;
      if (k == 1 && s == 1 && pad == 0) {
        const double wv = w[0];
        for (long i = (long) y0 * p->ow; i < (long) y1 * p->ow; i++)
          o[i] += wv * x[i];
        continue;
      }
      for (int ky = 0; ky < k; ky++)
        for (int kx = 0; kx < k; kx++) {
          const double wv = w[ky * k + kx];
          int lo = 0, hi = p->ow;   /* output columns whose input column is inside */
          while (lo < hi && lo * s + kx - pad < 0)
            lo++;
          while (hi > lo && (hi - 1) * s + kx - pad >= p->iw)
            hi--;
          for (int oy = y0; oy < y1; oy++) {
            const int iy = oy * s + ky - pad;
            if (iy < 0 || iy >= p->ih)
              continue;
            double *orow = o + (long) oy * p->ow;
            const double *xr = x + (long) iy * p->iw + kx - pad;
            for (int ox = lo; ox < hi; ox++)
              orow[ox] += wv * xr[ox * s];
          }
        }
    }
  }
}

/* ---- BatchNorm statistics ----------------------------------------------------------------
 * gpunet_model_new_random's BatchNorm is close to the identity, so every layer's output
 * keeps the scale of its sums and the float32 rounding of any kernel stays near 1e-6 of the
 * logits: F(6x6, 3x3) passes too.  A trained network's BatchNorm (and the random weights of
 * tools/compare_pytorch.py, whose running statistics are measured on random inputs)
 * normalises each channel, amplifying the channels whose sums nearly cancel, and with them
 * the rounding.  So, as compare_pytorch.py does, a first float64 pass on another random
 * input gives each convolution measured statistics: per channel, pre = sums + bias becomes
 * gamma (pre - mean') / sqrt (var' + 1e-5) + beta, mean' and var' the channel's mean and
 * variance on that input, randomly perturbed (folded into the float32 weights and bias);
 * the reference is then the float64 forward of those float32 weights. */

typedef struct {
  uint64_t s;
} rng64;

static double
uniform (rng64 *r)   /* [0, 1) */
{
  r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
  return (double) (r->s >> 11) / 9007199254740992.0;
}

static double
normal (rng64 *r)
{
  const double u = uniform (r), v = uniform (r);
  return sqrt (-2.0 * log (1.0 - u)) * cos (6.283185307179586 * v);
}

/* Rewrites the weights (w: cout x per weights) and bias of a convolution whose float64
 * sums on the statistics input are y (cout planes of `plane`), as above; *bias is replaced
 * by a new array, the caller's to free.  y is left to be overwritten. */
static void
calibrate (float *w, long per, float **bias, int cout, double *y, long plane, rng64 *r)
{
  float *nb = malloc (sizeof (float) * (size_t) cout);
  for (int c = 0; c < cout; c++) {
    const double b = *bias ? (*bias)[c] : 0.0;
    double sum = 0.0, sq = 0.0;
    for (long i = 0; i < plane; i++)
      sum += y[c * plane + i] + b;
    const double mean = sum / (double) plane;
    for (long i = 0; i < plane; i++) {
      const double d = y[c * plane + i] + b - mean;
      sq += d * d;
    }
    const double var = sq / (double) plane, sd = sqrt (var);
    const double gamma = 0.5 + uniform (r), beta = 0.2 * normal (r);
    const double mean2 = mean + 0.2 * sd * normal (r), var2 = var * exp (0.2 * normal (r));
    const double a = gamma / sqrt (var2 + 1e-5);
    for (long j = 0; j < per; j++)
      w[c * per + j] = (float) (w[c * per + j] * a);
    nb[c] = (float) (a * (b - mean2) + beta);
    for (long i = 0; i < plane; i++)   /* what the next layers of this pass see */
      y[c * plane + i] *= a;
  }
  *bias = nb;
}

static void
se64 (const gpunet_se_params *p, double *x)
{
  const long plane = (long) p->h * p->w;
  double *mean = malloc (sizeof (double) * (size_t) (p->c + p->rd)), *mid = mean + p->c;
  for (int c = 0; c < p->c; c++) {
    double sum = 0.0;
    for (long i = 0; i < plane; i++)
      sum += x[c * plane + i];
    mean[c] = sum / (double) plane;
  }
  for (int r = 0; r < p->rd; r++) {
    double acc = p->b_reduce[r];
    for (int c = 0; c < p->c; c++)
      acc += (double) p->w_reduce[(long) r * p->c + c] * mean[c];
    mid[r] = act64 (acc, p->act);
  }
  for (int c = 0; c < p->c; c++) {
    double acc = p->b_expand[c];
    for (int r = 0; r < p->rd; r++)
      acc += (double) p->w_expand[(long) c * p->rd + r] * mid[r];
    const double gate = 1.0 / (1.0 + exp (-acc));
    for (long i = 0; i < plane; i++)
      x[c * plane + i] *= gate;
  }
  free (mean);
}

/* The epilogue of a convolution's sums y (cout planes): act(y + bias) + residual. */
static void
epilogue64 (double *y, int cout, long plane, const float *bias, int act, const double *res)
{
  for (int c = 0; c < cout; c++)
    for (long i = 0; i < plane; i++) {
      const long j = c * plane + i;
      y[j] = act64 (y[j] + (bias ? bias[c] : 0.0f), act) + (res ? res[j] : 0.0);
    }
}

/* The float64 logits of graph g for one image `input` into out (classes doubles).  With
 * r, gives each convolution measured BatchNorm statistics on the way (calibrate): g's
 * convolutions must then own their weights, and the new biases go to biases[] (one per
 * convolution at most), the caller's to free. */
static int
forward64 (gpunet_graph *g, const float *input, double *out, rng64 *r, float **biases)
{
  double **t = calloc ((size_t) g->n_tensors, sizeof *t);
  int *last = malloc (sizeof (int) * (size_t) g->n_tensors);
  for (int i = 0; i < g->n_tensors; i++)
    last[i] = -1;
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    last[op->in] = i;
    last[op->out] = i;
    if (op->kind == GPUNET_OP_CONV2D && op->residual >= 0)
      last[op->residual] = i;
  }
  const gpunet_tensor_desc *ti = &g->tensors[g->input];
  const size_t in_len = (size_t) ti->c * ti->h * ti->w;
  t[g->input] = malloc (sizeof (double) * in_len);
  for (size_t i = 0; i < in_len; i++)
    t[g->input][i] = input[i];
  int ok = 1, nb = 0;
  for (int i = 0; i < g->n_ops && ok; i++) {
    gpunet_op *op = &g->ops[i];
    const gpunet_tensor_desc *to = &g->tensors[op->out];
    const long plane = (long) to->h * to->w;
    if (!t[op->out])
      t[op->out] = malloc (sizeof (double) * (size_t) to->c * (size_t) plane);
    double *x = t[op->in], *y = t[op->out];
    switch (op->kind) {
      case GPUNET_OP_CONV2D: {
        gpunet_conv2d_params *p = &op->p.conv2d;
        conv64 (p, x, y);
        if (r) {
          float *b = (float *) p->bias;
          calibrate ((float *) p->weight, (long) p->cin / p->groups * p->kernel * p->kernel,
              &b, p->cout, y, plane, r);
          p->bias = biases[nb++] = b;
        }
        epilogue64 (y, p->cout, plane, p->bias, p->act,
            op->residual >= 0 ? t[op->residual] : NULL);
        break;
      }
      case GPUNET_OP_DWCONV2D: {
        gpunet_dwconv2d_params *d = &op->p.dwconv2d;
        const gpunet_conv2d_params p = { .cin = d->c, .cout = d->c, .kernel = d->kernel,
          .stride = d->stride, .pad = d->pad, .groups = d->c, .ih = d->ih, .iw = d->iw,
          .oh = d->oh, .ow = d->ow, .weight = d->weight };
        conv64 (&p, x, y);
        if (r) {
          float *b = (float *) d->bias;
          calibrate ((float *) d->weight, (long) d->kernel * d->kernel, &b, d->c, y, plane, r);
          d->bias = biases[nb++] = b;
        }
        epilogue64 (y, d->c, plane, d->bias, d->act, NULL);
        break;
      }
      case GPUNET_OP_SE:
        se64 (&op->p.se, x);
        break;
      case GPUNET_OP_AVGPOOL: {
        const long ip = (long) op->p.avgpool.h * op->p.avgpool.w;
        for (int c = 0; c < op->p.avgpool.c; c++) {
          double sum = 0.0;
          for (long j = 0; j < ip; j++)
            sum += x[c * ip + j];
          y[c] = sum / (double) ip;
        }
        break;
      }
      case GPUNET_OP_LINEAR: {
        const gpunet_linear_params *p = &op->p.linear;
        for (int o = 0; o < p->cout; o++) {
          double acc = p->bias ? p->bias[o] : 0.0;
          for (int c = 0; c < p->cin; c++)
            acc += (double) p->weight[(long) o * p->cin + c] * x[c];
          y[o] = act64 (acc, p->act);
        }
        break;
      }
      default:
        ok = 0;
    }
    /* the tensors no later op reads or writes (SE works in place) */
    for (int j = 0; j < g->n_tensors; j++)
      if (last[j] == i && j != g->output) {
        free (t[j]);
        t[j] = NULL;
      }
  }
  if (ok)
    memcpy (out, t[g->output], sizeof (double) * (size_t) g->tensors[g->output].c);
  for (int j = 0; j < g->n_tensors; j++)
    free (t[j]);
  free (t);
  free (last);
  return ok;
}

/* g's ops with copies of the convolution weights that forward64 may rewrite (in *own,
 * n_ops entries, the caller's to free); the tensors stay g's. */
static gpunet_graph
copy_graph (const gpunet_graph *g, float ***own)
{
  gpunet_graph c = *g;
  c.ops = malloc (sizeof (gpunet_op) * (size_t) g->n_ops);
  memcpy (c.ops, g->ops, sizeof (gpunet_op) * (size_t) g->n_ops);
  *own = calloc ((size_t) g->n_ops, sizeof (float *));
  for (int i = 0; i < g->n_ops; i++) {
    gpunet_op *op = &c.ops[i];
    const float **w = op->kind == GPUNET_OP_CONV2D ? &op->p.conv2d.weight
        : op->kind == GPUNET_OP_DWCONV2D ? &op->p.dwconv2d.weight : NULL;
    const size_t n = op->kind == GPUNET_OP_CONV2D ? (size_t) op->p.conv2d.cout
        * (size_t) (op->p.conv2d.cin / op->p.conv2d.groups) * op->p.conv2d.kernel
        * op->p.conv2d.kernel
        : op->kind == GPUNET_OP_DWCONV2D ? (size_t) op->p.dwconv2d.c * op->p.dwconv2d.kernel
        * op->p.dwconv2d.kernel : 0;
    if (w) {
      (*own)[i] = malloc (sizeof (float) * n);
      memcpy ((*own)[i], *w, sizeof (float) * n);
      *w = (*own)[i];
    }
  }
  return c;
}

/* Ops our Winograd kernels take (use_own_winograd in backend_onednn.c, for a blocked
 * input): dense 3x3 stride 1 or 2 and 5x5 stride 2, not reading the network input. */
static int
winograd_shape (const gpunet_graph *g, const gpunet_op *op)
{
  if (op->kind != GPUNET_OP_CONV2D || op->in == g->input || op->p.conv2d.groups != 1)
    return 0;
  const gpunet_conv2d_params *p = &op->p.conv2d;
  return (p->kernel == 3 && p->stride <= 2) || (p->kernel == 5 && p->stride == 2);
}

/* Our Winograd kernels where the plan should put them: F(3x3, 3x3) on the stride-1 layers
 * of the first stage, on the tensors of the network's largest size (the stem's output),
 * where F(4x4)'s rounding reaches the logits most (first_stage_hw in backend_onednn.c);
 * F(4x4, 3x3) (F(4x4, 2x2) for 3x3 stride 2) on every other 3x3 and 5x5 stride-2 layer.
 * Returns how many ops run ours. */
static int
check_winograd (const char *name, const gpunet_graph *g, void *sf)
{
  long first = 0;
  for (int t = 0; t < g->n_tensors; t++)
    if (t != g->input && (long) g->tensors[t].h * g->tensors[t].w > first)
      first = (long) g->tensors[t].h * g->tensors[t].w;
  int n_wino = 0, n_shapes = 0, n_bad = 0;
  for (int i = 0; i < g->n_ops; i++) {
    if (!winograd_shape (g, &g->ops[i]))
      continue;
    const gpunet_conv2d_params *p = &g->ops[i].p.conv2d;
    const int first_stage = p->stride == 1 && (long) p->ih * p->iw >= first;
    const int impl = gpunet_onednn_op_impl (sf, i);
    const int want = first_stage ? GPUNET_ONEDNN_WINO3 : GPUNET_ONEDNN_WINO;
    n_shapes++;
    n_wino += impl == GPUNET_ONEDNN_WINO || impl == GPUNET_ONEDNN_WINO3;
    if (impl != want) {
      n_bad++;
      fprintf (stderr, "%s: op %d (%dx%d stride %d, %d->%d, %dx%d) runs impl %d, expected "
          "%s\n", name, i, p->kernel, p->kernel, p->stride, p->cin, p->cout, p->ih, p->iw,
          impl, first_stage ? "our F(3x3, 3x3) (first stage)" : "our F(4x4) Winograd");
    }
  }
  CHECK_MSG (n_bad == 0, "%s: %d of %d Winograd-shaped ops not on the expected kernel",
      name, n_bad, n_shapes);
  return n_wino;
}

/* The input images: `contrast` (the stress case) is a photo-like worst case for
 * activation growth: 8x8 patches at the ends of the normalised range (about -2.1 and
 * +2.6, ImageNet's mean and std applied to 0 and 255) with a fine texture, so every
 * early layer sees large, correlated values; otherwise unit normal noise. */
static void
make_input (float *x, const gpunet_tensor_desc *ti, int contrast, rng64 *r)
{
  for (int c = 0; c < ti->c; c++)
    for (int y = 0; y < ti->h; y++)
      for (int i = 0; i < ti->w; i++) {
        float *v = &x[((size_t) c * ti->h + y) * ti->w + i];
        if (!contrast)
          *v = (float) normal (r);
        else {
          const uint64_t cell = (uint64_t) (y / 8) * 977 + (uint64_t) (i / 8) * 131 + c;
          const double level = ((cell * 0x9e3779b97f4a7c15ull) >> 63) ? 2.6 : -2.1;
          *v = (float) (level + 0.05 * normal (r));
        }
      }
}

/* The fast path's logits for x under cpu options `o`, or 0 with the error printed. */
static int
fast_logits (const gpunet_graph *g, const gpunet_cpu_options *o, const float *x, float *out)
{
  gpunet_session_params sp;
  gpunet_session_params_init (&sp);
  sp.backend = GPUNET_BACKEND_CPU;
  sp.max_batch = 1;
  sp.cpu = *o;
  void *sf = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_backend_plan (&gpunet_backend_cpu_fast, g, &sp, &sf, &err);
  if (st == GPUNET_OK) {
    st = gpunet_backend_cpu_fast.forward (sf, x, 1, out, NULL, NULL, &err);
    gpunet_backend_cpu_fast.destroy (sf);
  }
  if (st != GPUNET_OK)
    printf ("# fast path: %s\n", err ? err : "?");
  free (err);
  return st == GPUNET_OK;
}

static double
logit_error (const float *fast, const double *ref, int classes, double *big_out)
{
  double big = 0.0, e = 0.0;
  for (int c = 0; c < classes; c++) {
    big = fmax (big, fabs (ref[c]));
    e = fmax (e, fabs ((double) fast[c] - ref[c]));
  }
  if (big_out)
    *big_out = big;
  return big > 0.0 ? e / big : e;
}

/* The error budget by kernel kind: the same logits with each of our own kernels
 * replaced by oneDNN's (or switched off), so the change in error is that kernel's
 * share.  Printed, not checked. */
static void
ablate (const char *name, const gpunet_graph *g, const float *x, const double *ref, int classes)
{
  static const struct { const char *what; gpunet_cpu_options o; } v[] = {
    { "default plan", { 0 } },
    { "winograd=own (F(4x4) on the first stage too)", { .winograd = GPUNET_CPU_OWN } },
    { "winograd=onednn", { .winograd = GPUNET_CPU_ONEDNN } },
    { "winograd=none (direct 3x3/5x5)", { .winograd = GPUNET_CPU_OFF } },
    { "pw=onednn strassen=off", { .pw = GPUNET_CPU_ONEDNN, .strassen = GPUNET_CPU_OFF } },
    { "strassen=own", { .strassen = GPUNET_CPU_OWN, .pw = GPUNET_CPU_OWN } },
    { "winograd=none pw=onednn strassen=off", { .winograd = GPUNET_CPU_OFF,
        .pw = GPUNET_CPU_ONEDNN, .strassen = GPUNET_CPU_OFF } },
  };
  float *fast = calloc ((size_t) classes, sizeof (float));
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (fast_logits (g, &v[i].o, x, fast))
      printf ("# %-9s %-44s max |fast - float64| / max |logit| = %.3g\n", name, v[i].what,
          logit_error (fast, ref, classes, NULL));
  free (fast);
}

static void
test_model (const char *name, uint64_t seed, int contrast, int do_ablate)
{
  gpunet_model *m = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_model_new_random (name, seed, &m, &err);
  CHECK_MSG (st == GPUNET_OK, "%s: %s", name, err ? err : "");
  free (err);
  err = NULL;
  if (st != GPUNET_OK)
    return;
  const double t0 = now ();
  float **own;
  gpunet_graph g = copy_graph (gpunet_model_graph (m), &own);
  float **biases = calloc ((size_t) g.n_ops, sizeof (float *));
  const gpunet_tensor_desc *ti = &g.tensors[g.input];
  const int classes = g.tensors[g.output].c;
  const size_t in_len = (size_t) ti->c * ti->h * ti->w;
  float *x = malloc (sizeof (float) * in_len);
  rng64 r = { seed * 0x9e3779b97f4a7c15ull + 1 };
  float *fast = calloc ((size_t) classes, sizeof (float));
  double *ref = calloc ((size_t) classes, sizeof (double));
  /* the statistics from one random input (like a normalised image, as compare_pytorch.py),
   * the float64 logits of another */
  make_input (x, ti, contrast, &r);
  int ok64 = forward64 (&g, x, ref, &r, biases);
  make_input (x, ti, contrast, &r);
  ok64 = ok64 && forward64 (&g, x, ref, NULL, NULL);
  CHECK_MSG (ok64, "%s: float64 forward: unknown op kind", name);
  const double t1 = now ();

  gpunet_session_params sp;
  gpunet_session_params_init (&sp);
  sp.backend = GPUNET_BACKEND_CPU;
  sp.max_batch = 1;
  void *sf = NULL;
  st = gpunet_backend_plan (&gpunet_backend_cpu_fast, &g, &sp, &sf, &err);
  if (st == GPUNET_OK)
    st = gpunet_backend_cpu_fast.forward (sf, x, 1, fast, NULL, NULL, &err);
  CHECK_MSG (st == GPUNET_OK, "%s fast path: %s", name, err ? err : "");
  free (err);
  const double t2 = now ();
  int n_wino = 0;
  if (st == GPUNET_OK) {
    if (gpunet_wino_available (16) || gpunet_wino_available (8))
      n_wino = check_winograd (name, &g, sf);
    else if (!strcmp (name, "gpunet-0"))
      printf ("# this CPU runs none of our Winograd kernels: where they run not checked\n");
    /* what runs each op, one letter per op (gpunet_onednn_impl order), to compare plans
     * across builds (oneDNN 2.x and 3.x must plan the same kernels) */
    static const char impl_letter[GPUNET_ONEDNN_IMPLS + 1] = "cw3dpsSeaLlx";
    char plan[1024];
    int np = 0;
    for (int i = 0; i < g.n_ops && np < (int) sizeof plan - 1; i++) {
      const int impl = gpunet_onednn_op_impl (sf, i);
      plan[np++] = impl >= 0 && impl < GPUNET_ONEDNN_IMPLS ? impl_letter[impl] : '?';
    }
    plan[np] = '\0';
    printf ("plan %-9s %s\n", name, plan);
    gpunet_backend_cpu_fast.destroy (sf);
  }
  if (st == GPUNET_OK && ok64) {
    double big = 0.0, e = 0.0;
    for (int c = 0; c < classes; c++) {
      big = fmax (big, fabs (ref[c]));
      e = fmax (e, fabs ((double) fast[c] - ref[c]));
    }
    const double rel = big > 0.0 ? e / big : e;
    printf ("%-9s %s max |fast - float64| / max |logit| = %.3g (max |logit| %.3g; %d ops on "
        "our Winograd; float64 %.1f s, fast path %.2f s)\n", name, contrast ? "contrast"
        : "noise", rel, big, n_wino, t1 - t0, t2 - t1);
    CHECK_MSG (big > 0.0 && rel <= BOUND, "%s: logit error %.3g of the largest logit, bound "
        "%.0e", name, rel, BOUND);
  }
  if (do_ablate && ok64)
    ablate (name, &g, x, ref, classes);
  for (int i = 0; i < g.n_ops; i++) {
    free (own[i]);
    free (biases[i]);
  }
  free (own);
  free (biases);
  free (g.ops);
  free (x);
  free (fast);
  free (ref);
  gpunet_model_unref (m);
}

int
main (int argc, char **argv)
{
  static const char *const models[] = { "gpunet-0", "gpunet-1", "gpunet-2", "gpunet-p0",
    "gpunet-p1", "gpunet-d1", "gpunet-d2" };
  /* arguments: that model only (or "all"), with that seed; then "contrast" for the
   * stress input, "ablate" for the error budget by kernel kind */
  const uint64_t seed = argc > 2 ? strtoull (argv[2], NULL, 0) : 1000;
  int contrast = 0, do_ablate = 0;
  for (int a = 3; a < argc; a++) {
    contrast |= !strcmp (argv[a], "contrast");
    do_ablate |= !strcmp (argv[a], "ablate");
  }
  for (int i = 0; i < 7; i++)
    if (argc < 2 || !strcmp (argv[1], "all") || !strcmp (argv[1], models[i]))
      test_model (models[i], seed + i, contrast, do_ablate);
  return check_report ();
}
