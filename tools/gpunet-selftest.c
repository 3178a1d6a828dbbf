/* gpunet-selftest: checks the CUDA backend against the reference CPU backend on a machine
 * with a GPU: every op of every built-in model (random weights, random inputs) and each
 * whole network (logits, every block's output, top-k agreement, and a smaller batch than
 * planned), then device frames (uploaded from host) through the CUDA preprocess kernel
 * and gpunet_session_classify against the CPU path, then host frames on a CUDA session
 * (the classify_host upload path) against the CPU path and against the same frames as
 * device images, in fp32 and fp16 (--precision).  The opt-in fused path (session
 * parameter cuda_fused: fused depthwise + SE and pool + classifier + top-k kernels) gets
 * the whole-network and host-frame checks again, labelled "fp32+fused" / "fp16+fused".
 * Exit 0 when all are within the tolerances printed, 1 otherwise, 77 when this host has
 * no usable CUDA backend. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunet.h"
#include "gpunet-internal.h"
#include "common/half.h"          /* fp16 rounding as the CUDA backend stores */
#include "cuda/cuda_module.h"     /* the CUDA module's op API, gpunet_backend_cuda_get */
#include "ref/cpu_ops.h"          /* the reference ops, one call per op */

/* Tolerances, fp32: errors are max |cuda - cpu| / max |cpu| over a tensor. */
#define TOL_OP 1e-4       /* one op */
#define TOL_NET 1e-3      /* logits and block outputs of a whole network */
#define TOL_TIE 1e-3      /* top-1 may differ when the CPU's top-2 margin is below this x max|logit| */
#define TOL_PRE (1.0 / (255.0 * 0.224) + 1e-5)  /* device preprocess: one 8-bit level */
#define TOL_PRE_FRACTION 1e-4   /* ... in at most this fraction of values (0 expected) */
#define TOL_SCORE 1e-3    /* device classify: |probability difference| of the top-k */
#define TOP_K 5
/* fp16 storage with float accumulation (tests/data/fixtures/README.md: "about 1e-2
 * relative; compare top-1/top-5"): same measures, wider bounds, plus top-5 overlap. */
#define TOL16_OP 1e-2
#define TOL16_NET 1e-2
#define TOL16_TIE 1e-2
#define TOL16_SCORE 1e-2
#define TOL16_TOP5 0.8    /* fraction of the CPU's top-5 ids found in the CUDA top-5 */

/* The bounds one precision is checked against. */
typedef struct {
  const char *name;
  gpunet_precision precision;
  double op, net, tie, score, top5;
} tolerances;

static const tolerances tol_fp32 = { "fp32", GPUNET_PRECISION_FP32, TOL_OP, TOL_NET, TOL_TIE,
  TOL_SCORE, 0.0 };
static const tolerances tol_fp16 = { "fp16", GPUNET_PRECISION_FP16, TOL16_OP, TOL16_NET,
  TOL16_TIE, TOL16_SCORE, TOL16_TOP5 };

static const char *kind_names[] = { "conv2d", "dwconv2d", "se", "avgpool", "linear" };
enum { N_KINDS = 5 };

static int verbose;
/* GPUNET_CUDA as parsed in main: the whole-network checks plan the backend directly (no
 * session reads the environment for them), so they get the options from here */
static gpunet_cuda_options cuda_opts;
static uint64_t rng = 0x2545f4914f6cdd1dull;

static float
frand (void)   /* uniform in [-1, 1) */
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float) ((rng >> 40) / (double) (1ull << 24)) * 2.0f - 1.0f;
}

static float *
frand_array (size_t n)
{
  float *a = malloc ((n ? n : 1) * sizeof (float));
  for (size_t i = 0; a && i < n; i++)
    a[i] = frand ();
  return a;
}

static double
rel_err (const float *got, const float *ref, size_t n)
{
  double diff = 0.0, scale = 1e-12;
  for (size_t i = 0; i < n; i++) {
    double d = fabs ((double) got[i] - ref[i]);
    if (!(d <= diff))   /* also catches NaN */
      diff = isnan (d) ? INFINITY : d;
    if (fabs (ref[i]) > scale)
      scale = fabs (ref[i]);
  }
  return diff / scale;
}

/* Input and output floats of one op for n images. */
static void
op_sizes (const gpunet_op *op, int n, size_t *in, size_t *out)
{
  switch (op->kind) {
    case GPUNET_OP_CONV2D:
      *in = (size_t) n * op->p.conv2d.cin * op->p.conv2d.ih * op->p.conv2d.iw;
      *out = (size_t) n * op->p.conv2d.cout * op->p.conv2d.oh * op->p.conv2d.ow;
      break;
    case GPUNET_OP_DWCONV2D:
      *in = (size_t) n * op->p.dwconv2d.c * op->p.dwconv2d.ih * op->p.dwconv2d.iw;
      *out = (size_t) n * op->p.dwconv2d.c * op->p.dwconv2d.oh * op->p.dwconv2d.ow;
      break;
    case GPUNET_OP_SE:
      *in = *out = (size_t) n * op->p.se.c * op->p.se.h * op->p.se.w;
      break;
    case GPUNET_OP_AVGPOOL:
      *in = (size_t) n * op->p.avgpool.c * op->p.avgpool.h * op->p.avgpool.w;
      *out = (size_t) n * op->p.avgpool.c;
      break;
    default:
      *in = (size_t) n * op->p.linear.cin;
      *out = (size_t) n * op->p.linear.cout;
      break;
  }
}

/* The CPU reference of one op. */
static void
cpu_op (const gpunet_op *op, int n, const float *in, const float *res, float *out)
{
  switch (op->kind) {
    case GPUNET_OP_CONV2D:
      gpunet_cpu_conv2d (&op->p.conv2d, in, res, out, n);
      break;
    case GPUNET_OP_DWCONV2D:
      gpunet_cpu_dwconv2d (&op->p.dwconv2d, in, out, n);
      break;
    case GPUNET_OP_SE: {
      size_t in_n, out_n;
      op_sizes (op, n, &in_n, &out_n);
      float *scratch = malloc (((size_t) op->p.se.c + (size_t) op->p.se.rd) * sizeof (float));
      memcpy (out, in, out_n * sizeof (float));
      if (scratch)
        gpunet_cpu_se (&op->p.se, out, scratch, n);
      free (scratch);
      break;
    }
    case GPUNET_OP_AVGPOOL:
      gpunet_cpu_avgpool (&op->p.avgpool, in, out, n);
      break;
    case GPUNET_OP_LINEAR:
      gpunet_cpu_linear (&op->p.linear, in, out, n);
      break;
  }
}

/* Every op of the graph on random inputs; returns the number of failures. */
static int
check_ops (const gpunet_cuda_op_api *api, gpunet_cuda_op_runner *runner, const char *model,
    const gpunet_graph *g, int n, const tolerances *tol)
{
  double worst[N_KINDS] = { 0 };
  int worst_op[N_KINDS], count[N_KINDS] = { 0 }, failures = 0;
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    size_t in_n, out_n;
    op_sizes (op, n, &in_n, &out_n);
    float *in = frand_array (in_n), *res = op->residual >= 0 ? frand_array (out_n) : NULL;
    float *ref = malloc (out_n * sizeof (float)), *got = malloc (out_n * sizeof (float));
    char *err = NULL;
    if (!in || !ref || !got || (op->residual >= 0 && !res)) {
      fprintf (stderr, "gpunet-selftest: out of memory\n");
      exit (1);
    }
    cpu_op (op, n, in, res, ref);
    gpunet_status st = api->run (runner, op, n, in, res, got, &err);
    double e = st == GPUNET_OK ? rel_err (got, ref, out_n) : INFINITY;
    int k = (int) op->kind;
    if (st != GPUNET_OK)
      printf ("  %-10s op %3d (%s): FAILED: %s\n", model, i, kind_names[k], err ? err : "?");
    else if (verbose || e > tol->op)
      printf ("  %-10s op %3d %-8s block %3d  rel err %.2e%s\n", model, i, kind_names[k],
          op->block, e, e > tol->op ? "  FAIL" : "");
    failures += !(e <= tol->op);
    if (!count[k]++ || e > worst[k]) {
      worst[k] = e;
      worst_op[k] = i;
    }
    free (err);
    free (in);
    free (res);
    free (ref);
    free (got);
  }
  for (int k = 0; k < N_KINDS; k++)
    if (count[k])
      printf ("  %-10s %s %-8s x%-3d max rel err %.2e (op %d)  %s\n", model, tol->name,
          kind_names[k], count[k], worst[k], worst_op[k], worst[k] <= tol->op ? "ok" : "FAIL");
  return failures;
}

/* Block outputs of the CPU run, kept for the CUDA run to compare with. */
typedef struct {
  int n_blocks;
  float **data;
  size_t *size;
  double worst;
  int worst_block;
} trace_store;

static void
trace_keep (void *user, int block, const float *data, int n, int c, int h, int w)
{
  trace_store *t = user;
  if (block < 0 || block >= t->n_blocks)
    return;
  size_t sz = (size_t) n * c * h * w;
  free (t->data[block]);
  t->data[block] = malloc (sz * sizeof (float));
  if (t->data[block])
    memcpy (t->data[block], data, sz * sizeof (float));
  t->size[block] = sz;
}

static void
trace_compare (void *user, int block, const float *data, int n, int c, int h, int w)
{
  trace_store *t = user;
  size_t sz = (size_t) n * c * h * w;
  double e = INFINITY;
  if (block >= 0 && block < t->n_blocks && t->data[block] && t->size[block] == sz)
    e = rel_err (data, t->data[block], sz);
  if (!(e <= t->worst)) {
    t->worst = e;
    t->worst_block = block;
  }
}

/* Indices of the k largest of v[0..n), best first. */
static void
top_k (const float *v, int n, int k, int *out)
{
  for (int j = 0; j < k; j++) {
    int best = -1;
    for (int i = 0; i < n; i++) {
      int taken = 0;
      for (int q = 0; q < j; q++)
        taken |= out[q] == i;
      if (!taken && (best < 0 || v[i] > v[best]))
        best = i;
    }
    out[j] = best;
  }
}

/* The whole network, CPU reference vs CUDA (fused: the opt-in fused path; its traced run
 * keeps the unfused head, so the untraced runs compare the fused head with it); returns
 * the number of failures. */
static int
check_network (const gpunet_backend *cuda, const char *model, const gpunet_graph *g, int n,
    int device, const tolerances *tol, int fused)
{
  const gpunet_tensor_desc *ti = &g->tensors[g->input], *to = &g->tensors[g->output];
  const size_t in_n = (size_t) n * ti->c * ti->h * ti->w;
  const int classes = to->c * to->h * to->w;
  float *input = frand_array (in_n);
  float *ref = malloc ((size_t) n * classes * sizeof (float));
  float *got = malloc ((size_t) n * classes * sizeof (float));
  trace_store ts = { g->n_blocks, calloc ((size_t) g->n_blocks + 1, sizeof (float *)),
    calloc ((size_t) g->n_blocks + 1, sizeof (size_t)), 0.0, -1 };
  gpunet_session_params params;
  gpunet_session_params_init (&params);
  params.max_batch = n;
  params.device = device;
  params.precision = GPUNET_PRECISION_FP32;   /* the CPU reference */
  void *cpu_state = NULL, *cuda_state = NULL;
  char *err = NULL;
  int failures = 0;

  gpunet_status st = gpunet_backend_plan (&gpunet_backend_cpu_ref, g, &params, &cpu_state, &err);
  if (st == GPUNET_OK)
    st = gpunet_backend_cpu_ref.forward (cpu_state, input, n, ref, trace_keep, &ts, &err);
  if (st != GPUNET_OK) {
    printf ("  %-10s CPU reference failed: %s\n", model, err ? err : "?");
    failures++;
    goto done;
  }
  params.precision = tol->precision;
  params.cuda_fused = fused;
  params.cuda = cuda_opts;
  st = gpunet_backend_plan (cuda, g, &params, &cuda_state, &err);
  if (st == GPUNET_OK)
    st = cuda->forward (cuda_state, input, n, got, trace_compare, &ts, &err);
  if (st != GPUNET_OK) {
    printf ("  %-10s CUDA network failed: %s\n", model, err ? err : "?");
    failures++;
    goto done;
  }
  double e = rel_err (got, ref, (size_t) n * classes);
  int top1 = 0, ties = 0, overlap = 0;
  for (int b = 0; b < n; b++) {
    int kr[TOP_K] = { 0 }, kg[TOP_K] = { 0 };
    const int k = classes < TOP_K ? classes : TOP_K;
    top_k (ref + (size_t) b * classes, classes, k, kr);
    top_k (got + (size_t) b * classes, classes, k, kg);
    for (int i = 0; i < k; i++)
      for (int j = 0; j < k; j++)
        overlap += kr[i] == kg[j];
    double scale = 1e-12;
    for (int i = 0; i < classes; i++)
      scale = fmax (scale, fabs (ref[(size_t) b * classes + i]));
    const double margin = k > 1 ? ref[(size_t) b * classes + kr[0]] - ref[(size_t) b * classes + kr[1]] : 1.0;
    if (kr[0] == kg[0])
      top1++;
    else if (margin < tol->tie * scale)
      ties++;
  }
  const int k5 = classes < TOP_K ? classes : TOP_K;
  int ok = e <= tol->net && ts.worst <= tol->net && top1 + ties == n
      && overlap >= tol->top5 * n * k5;
  printf ("  %-10s %s network batch %d: logits rel err %.2e, worst block %d rel err %.2e, top-1 "
      "%d/%d (%d near-ties), top-%d overlap %d/%d  %s\n", model, tol->name, n, e, ts.worst_block,
      ts.worst, top1, n, ties, TOP_K, overlap, n * k5, ok ? "ok" : "FAIL");
  failures += !ok;

  /* untraced runs go through the CUDA graph (plain launches on the first, the warm-up;
   * captured and launched on the second; replayed on the third); all must give the
   * traced (plain launch) logits */
  for (int rep = 0; rep < 3; rep++) {
    float *again = malloc ((size_t) n * classes * sizeof (float));
    st = again ? cuda->forward (cuda_state, input, n, again, NULL, NULL, &err) : GPUNET_ERR_NO_MEMORY;
    const double eg = st == GPUNET_OK ? rel_err (again, got, (size_t) n * classes) : INFINITY;
    printf ("  %-10s %s network batch %d untraced run %d (CUDA graph unless disabled): logits vs "
        "traced rel err %.2e  %s%s\n", model, tol->name, n, rep + 1, eg, eg <= tol->op ? "ok" : "FAIL",
        st == GPUNET_OK ? "" : err);
    failures += !(eg <= tol->op);
    free (again);
  }

  /* a smaller batch than planned re-describes the convolutions */
  if (n > 1) {
    st = cuda->forward (cuda_state, input, 1, got, NULL, NULL, &err);
    double e1 = st == GPUNET_OK ? rel_err (got, ref, (size_t) classes) : INFINITY;
    printf ("  %-10s %s network batch 1 of %d planned: logits rel err %.2e  %s%s\n", model,
        tol->name, n, e1,
        e1 <= tol->net ? "ok" : "FAIL", st == GPUNET_OK ? "" : err);
    failures += !(e1 <= tol->net);
    /* back to the planned batch: its graph, captured before the batch-1 run re-described
     * the convolutions, must replay to the same logits */
    float *again = malloc ((size_t) n * classes * sizeof (float));
    st = again ? cuda->forward (cuda_state, input, n, again, NULL, NULL, &err) : GPUNET_ERR_NO_MEMORY;
    const double eb = st == GPUNET_OK ? rel_err (again, ref, (size_t) n * classes) : INFINITY;
    printf ("  %-10s %s network batch %d again after batch 1 (graph replay): logits rel err %.2e  "
        "%s%s\n", model, tol->name, n, eb, eb <= tol->net ? "ok" : "FAIL", st == GPUNET_OK ? "" : err);
    failures += !(eb <= tol->net);
    free (again);
  }
done:
  if (cpu_state)
    gpunet_backend_cpu_ref.destroy (cpu_state);
  if (cuda_state)
    cuda->destroy (cuda_state);
  for (int i = 0; i < ts.n_blocks; i++)
    free (ts.data[i]);
  free (ts.data);
  free (ts.size);
  free (err);
  free (input);
  free (ref);
  free (got);
  return failures;
}

/* A w x h frame of `fmt` in one host buffer (rows padded by 64 bytes, random bytes). */
static gpunet_image
random_frame (gpunet_pixel_format fmt, int w, int h, uint8_t **mem, size_t *size)
{
  gpunet_image img;
  memset (&img, 0, sizeof img);
  img.format = fmt;
  img.width = w;
  img.height = h;
  img.matrix = GPUNET_MATRIX_BT709;
  const int cw = (w + 1) / 2, ch = (h + 1) / 2, pad = 64;
  int planes = 1, stride[3] = { 4 * w + pad, 0, 0 }, rows[3] = { h, ch, ch };
  if (fmt == GPUNET_FORMAT_NV12) {
    planes = 2;
    stride[0] = w + pad;
    stride[1] = 2 * cw + pad;
  } else if (fmt == GPUNET_FORMAT_I420) {
    planes = 3;
    stride[0] = w + pad;
    stride[1] = stride[2] = cw + pad;
  }
  size_t off[3] = { 0, 0, 0 }, total = 0;
  for (int p = 0; p < planes; p++) {
    off[p] = total;
    total += (size_t) stride[p] * rows[p];
  }
  *mem = malloc (total);
  if (!*mem) {
    fprintf (stderr, "gpunet-selftest: out of memory\n");
    exit (1);
  }
  for (size_t i = 0; i < total; i++)
    (*mem)[i] = (uint8_t) (frand () * 128.0f + 128.0f);
  for (int p = 0; p < planes; p++) {
    img.planes[p] = *mem + off[p];
    img.strides[p] = stride[p];
  }
  *size = total;
  return img;
}

/* The same frame with its planes in the device copy `dev` of `host`. */
static gpunet_image
device_view (const gpunet_image *img, const uint8_t *host, void *dev)
{
  gpunet_image d = *img;
  for (int p = 0; p < 3; p++)
    if (img->planes[p])
      d.planes[p] = (const uint8_t *) dev + (img->planes[p] - host);
  d.memory = GPUNET_MEMORY_CUDA;
  return d;
}

/* Device frames of every CUDA format: the preprocess kernel against the CPU pass, and
 * gpunet_session_classify (CUDA session, device images) against a CPU session. */
/* A random-weight model and two sessions on it (batch 2): the CPU one (fp32) and the
 * CUDA one on `device` in `precision`. */
static gpunet_status
open_pair (const char *model_name, uint64_t seed, int device, gpunet_precision precision,
    int fused, gpunet_model **model, gpunet_session **cpu, gpunet_session **gpu, char **err)
{
  gpunet_session_params sp;
  gpunet_session_params_init (&sp);
  sp.max_batch = 2;
  sp.device = device;
  sp.precision = GPUNET_PRECISION_FP32;
  gpunet_status st = gpunet_model_new_random (model_name, seed, model, err);
  if (st == GPUNET_OK) {
    sp.backend = GPUNET_BACKEND_CPU;
    st = gpunet_session_new (*model, &sp, cpu, err);
  }
  if (st == GPUNET_OK) {
    sp.backend = GPUNET_BACKEND_CUDA;
    sp.precision = precision;
    sp.cuda_fused = fused;
    st = gpunet_session_new (*model, &sp, gpu, err);
  }
  return st;
}

static int
check_device_frames (const gpunet_cuda_op_api *api, gpunet_cuda_op_runner *runner,
    const char *model_name, uint64_t seed, int device, const tolerances *tol)
{
  static const gpunet_pixel_format formats[] = {
    GPUNET_FORMAT_NV12, GPUNET_FORMAT_I420, GPUNET_FORMAT_RGBA, GPUNET_FORMAT_BGRA,
    GPUNET_FORMAT_RGBX, GPUNET_FORMAT_BGRX
  };
  static const char *names[] = { "NV12", "I420", "RGBA", "BGRA", "RGBx", "BGRx" };
  static const int sizes[][2] = { { 1920, 1080 }, { 641, 359 }, { 224, 224 }, { 3, 700 } };
  int failures = 0;
  char *err = NULL;
  gpunet_model *model = NULL;
  gpunet_session *cpu = NULL, *gpu = NULL;
  const int half = tol->precision == GPUNET_PRECISION_FP16;
  gpunet_status st = open_pair (model_name, seed, device, tol->precision, 0, &model, &cpu,
      &gpu, &err);
  if (st != GPUNET_OK) {
    printf ("  device frames: cannot set up %s: %s  FAIL\n", model_name, err ? err : "?");
    failures++;
    goto done;
  }
  const int R = gpunet_model_resolution (model);
  float *ref = malloc ((size_t) 3 * R * R * sizeof (float));
  float *got = malloc ((size_t) 3 * R * R * sizeof (float));
  for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
    double worst = 0.0;
    long inexact = 0, values = 0;
    int agree = 0, frames = 0;
    double worst_score = 0.0;
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
      uint8_t *host = NULL;
      size_t bytes = 0;
      void *dev = NULL;
      gpunet_image img = random_frame (formats[f], sizes[z][0], sizes[z][1], &host, &bytes);
      st = api->device_upload (host, bytes, &dev, &err);
      gpunet_image dimg = device_view (&img, host, dev);
      for (int mode = 0; mode < 3 && st == GPUNET_OK; mode++) {
        gpunet_preprocess_plan plan;
        if (gpunet_preprocess_plan_init (&plan, img.width, img.height, R,
            (gpunet_resize_mode) mode, gpunet_model_crop_pct (model)) != GPUNET_OK) {
          fprintf (stderr, "gpunet-selftest: out of memory\n");
          exit (1);
        }
        gpunet_cpu_preprocess (&plan, &img, ref);
        st = api->preprocess (runner, &dimg, &plan, got, &err);
        gpunet_preprocess_plan_clear (&plan);
        for (size_t i = 0; st == GPUNET_OK && i < (size_t) 3 * R * R; i++) {
          /* fp16: the kernel rounds the exact float value once to half */
          const float want = half ? gpunet_half_round (ref[i]) : ref[i];
          const double e = fabs ((double) got[i] - want);
          inexact += got[i] != want;
          if (!(e <= worst))
            worst = isnan (e) ? INFINITY : e;
        }
        values += 3L * R * R;
      }
      /* the whole path: a batch of the same device frame twice */
      gpunet_image dimgs[2] = { dimg, dimg }, himgs[2] = { img, img };
      gpunet_class_score rc[2 * TOP_K], rg[2 * TOP_K];
      if (st == GPUNET_OK)
        st = gpunet_session_classify (cpu, himgs, 2, NULL, TOP_K, rc, &err);
      if (st == GPUNET_OK)
        st = gpunet_session_classify (gpu, dimgs, 2, NULL, TOP_K, rg, &err);
      for (int b = 0; st == GPUNET_OK && b < 2; b++) {
        const gpunet_class_score *c = rc + b * TOP_K, *g = rg + b * TOP_K;
        frames++;
        agree += c[0].id == g[0].id || c[0].score - c[1].score < tol->score;
        for (int j = 0; j < TOP_K; j++)
          worst_score = fmax (worst_score, fabs ((double) c[j].score - g[j].score));
      }
      if (st != GPUNET_OK) {
        printf ("  device frames %s %dx%d: FAILED: %s\n", names[f], img.width, img.height,
            err ? err : "?");
        failures++;
        st = GPUNET_OK;
      }
      api->device_free (dev);
      free (host);
    }
    const int pre_ok = worst <= TOL_PRE && inexact <= (long) (TOL_PRE_FRACTION * values);
    const int cls_ok = agree == frames && worst_score <= tol->score;
    printf ("  device frames %s %-4s preprocess: max |diff| %.2e, %ld of %ld values inexact  %s; "
        "classify: top-1 %d/%d, max |score diff| %.2e  %s\n", tol->name, names[f], worst, inexact, values,
        pre_ok ? "ok" : "FAIL", agree, frames, worst_score, cls_ok ? "ok" : "FAIL");
    failures += !pre_ok + !cls_ok;
  }
  free (ref);
  free (got);
done:
  gpunet_session_free (cpu);
  gpunet_session_free (gpu);
  gpunet_model_unref (model);
  free (err);
  return failures;
}

/* Compares k CUDA results with k CPU results: ids equal, except that two ids whose CPU
 * scores are within tol->score of each other may swap (the tolerance does not order
 * them); scores within tol->score.  Adds to *swaps and *worst; returns 1 when it passes. */
static int
same_topk (const gpunet_class_score *c, const gpunet_class_score *g, int k, double tol_score,
    int *swaps, double *worst)
{
  int ok = 1;
  for (int j = 0; j < k; j++) {
    const double d = fabs ((double) c[j].score - g[j].score);
    if (!(d <= *worst))
      *worst = isnan (d) ? INFINITY : d;
    ok &= d <= tol_score;
    if (c[j].id == g[j].id)
      continue;
    int tie = 0;
    for (int q = 0; q < k; q++)
      tie |= c[q].id == g[j].id && fabs ((double) c[q].score - c[j].score) <= tol_score;
    *swaps += tie;
    ok &= tie;
  }
  return ok;
}

/* Host frames on the CUDA session (the classify_host path: pinned staging, upload, device
 * preprocess) against the CPU session: NV12 and RGBA at 641x359 (padded strides, odd
 * plane offsets), batches of two different frames and one of mixed formats, a larger
 * frame (the staging grows), one batch of two sizes (one call, each image with its own
 * tables, the same CUDA graph replayed) and the first batch again.  The same frames
 * uploaded as device images must give the host path's results (same kernel, same
 * bytes), for one size and for two sizes in one batch. */
static int
check_host_frames (const gpunet_backend *cuda, const gpunet_cuda_op_api *api,
    const char *model_name, uint64_t seed, int device, const tolerances *tol, int fused)
{
  if (!cuda->classify_host) {
    printf ("  host frames %s: the CUDA module has no classify_host  FAIL\n", tol->name);
    return 1;
  }
  int failures = 0;
  char *err = NULL;
  gpunet_model *model = NULL;
  gpunet_session *cpu = NULL, *gpu = NULL;
  uint8_t *mem[5] = { NULL };
  void *dev[3] = { NULL };
  gpunet_image f[5];
  gpunet_status st = open_pair (model_name, seed, device, tol->precision, fused, &model, &cpu,
      &gpu, &err);
  if (st != GPUNET_OK) {
    printf ("  host frames: cannot set up %s: %s  FAIL\n", model_name, err ? err : "?");
    failures++;
    goto done;
  }
  size_t bytes[5];
  f[0] = random_frame (GPUNET_FORMAT_NV12, 641, 359, &mem[0], &bytes[0]);
  f[1] = random_frame (GPUNET_FORMAT_NV12, 641, 359, &mem[1], &bytes[1]);
  f[2] = random_frame (GPUNET_FORMAT_RGBA, 641, 359, &mem[2], &bytes[2]);
  f[3] = random_frame (GPUNET_FORMAT_RGBA, 641, 359, &mem[3], &bytes[3]);
  f[4] = random_frame (GPUNET_FORMAT_NV12, 1280, 720, &mem[4], &bytes[4]);
  static const int batches[][2] = { { 0, 1 }, { 2, 3 }, { 0, 2 }, { 4, 4 }, { 0, 4 },
    { 0, 1 } };
  static const char *what[] = { "NV12 x2", "RGBA x2", "NV12+RGBA", "NV12 1280x720 x2",
    "NV12 641x359+1280", "NV12 x2 again" };
  gpunet_class_score first[2 * TOP_K] = { { 0 } };
  for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
    const gpunet_image himgs[2] = { f[batches[b][0]], f[batches[b][1]] };
    gpunet_class_score rc[2 * TOP_K], rg[2 * TOP_K];
    int swaps = 0, ok = 1;
    double worst = 0.0;
    st = gpunet_session_classify (cpu, himgs, 2, NULL, TOP_K, rc, &err);
    if (st == GPUNET_OK)
      st = gpunet_session_classify (gpu, himgs, 2, NULL, TOP_K, rg, &err);
    if (st != GPUNET_OK) {
      printf ("  host frames %s %s: FAILED: %s\n", tol->name, what[b], err ? err : "?");
      failures++;
      continue;
    }
    for (int i = 0; i < 2; i++)
      ok &= same_topk (rc + i * TOP_K, rg + i * TOP_K, TOP_K, tol->score, &swaps, &worst);
    if (b == 0)
      memcpy (first, rg, sizeof first);
    /* the same batch after the staging grew: the same results */
    int again_ok = 1;
    if (b + 1 == sizeof batches / sizeof batches[0])
      for (int i = 0; i < 2 * TOP_K; i++)
        again_ok &= first[i].id == rg[i].id && fabsf (first[i].score - rg[i].score) <= 1e-6f;
    printf ("  host frames %s %-16s vs CPU: top-%d ids equal (%d near-tie swaps), max |score "
        "diff| %.2e  %s%s\n", tol->name, what[b], TOP_K, swaps, worst, ok ? "ok" : "FAIL",
        again_ok ? "" : "; differs from the first run  FAIL");
    failures += !ok + !again_ok;
  }

  /* host path against the device path on the same bytes, one size and two sizes */
  static const int pairs[][2] = { { 0, 1 }, { 0, 4 } };
  static const int up[] = { 0, 1, 4 };
  static const char *pair_what[] = { "NV12 x2", "NV12 641x359+1280" };
  for (int i = 0; i < 3 && st == GPUNET_OK; i++)
    st = api->device_upload (mem[up[i]], bytes[up[i]], &dev[i], &err);
  for (int p = 0; p < 2 && st == GPUNET_OK; p++) {
    const int a = pairs[p][0], b = pairs[p][1], da = a, db = b == 4 ? 2 : b;
    const gpunet_image dimgs[2] = { device_view (&f[a], mem[a], dev[da]),
      device_view (&f[b], mem[b], dev[db]) };
    const gpunet_image himgs[2] = { f[a], f[b] };
    gpunet_class_score rh[2 * TOP_K], rd[2 * TOP_K];
    st = gpunet_session_classify (gpu, himgs, 2, NULL, TOP_K, rh, &err);
    if (st == GPUNET_OK)
      st = gpunet_session_classify (gpu, dimgs, 2, NULL, TOP_K, rd, &err);
    if (st == GPUNET_OK) {
      int same = 1;
      double worst = 0.0;
      for (int i = 0; i < 2 * TOP_K; i++) {
        same &= rh[i].id == rd[i].id;
        worst = fmax (worst, fabs ((double) rh[i].score - rd[i].score));
      }
      same &= worst <= 1e-6;
      printf ("  host frames %s %s host path vs device path: ids %s, max |score diff| "
          "%.2e  %s\n", tol->name, pair_what[p], same ? "equal" : "differ", worst,
          same ? "ok" : "FAIL");
      failures += !same;
    }
  }
  if (st != GPUNET_OK) {
    printf ("  host frames %s host vs device path: FAILED: %s\n", tol->name, err ? err : "?");
    failures++;
  }
done:
  for (int i = 0; i < 3; i++)
    api->device_free (dev[i]);
  for (int i = 0; i < 5; i++)
    free (mem[i]);
  gpunet_session_free (cpu);
  gpunet_session_free (gpu);
  gpunet_model_unref (model);
  free (err);
  return failures;
}

static void
usage (FILE *f)
{
  fprintf (f,
      "usage: gpunet-selftest [--model NAME] [--batch N] [--seed S] [--device D]\n"
      "                       [--precision fp32|fp16|all] [--fused 1|2] [--verbose]\n"
      "  Compares the CUDA backend with the CPU reference (always fp32) on random weights and\n"
      "  inputs, in each precision asked (all: fp32 then fp16; the default).\n"
      "  fp32 tolerances (max |cuda - cpu| / max |cpu|): %.0e per op, %.0e for logits and\n"
      "  block outputs; top-1 must agree unless the CPU's top-2 margin is below %.0e of\n"
      "  max |logit|.\n"
      "  fp16 tolerances (fp16 storage, fp32 accumulation; tests/data/fixtures/README.md):\n"
      "  %.0e per op, %.0e for logits and block outputs, top-1 as above with a margin of\n"
      "  %.0e, and at least %.0f%% of the CPU's top-%d ids in the CUDA top-%d.\n"
      "  Untraced forward runs (captured in a CUDA graph unless GPUNET_CUDA=graphs=off) must give\n"
      "  the traced run's logits within the per-op tolerance.\n"
      "  Device frames (NV12, I420, RGBA, BGRA, RGBx, BGRx uploaded from host): the CUDA\n"
      "  preprocess may differ from the CPU one (rounded once to half in fp16) by one 8-bit\n"
      "  level (%.4f) in at most %.0e of the values (it is built to match exactly);\n"
      "  classifying them on the CUDA session must give the CPU session's top-1 and top-%d\n"
      "  probabilities within %.0e (fp32) / %.0e (fp16).\n"
      "  Host frames on the CUDA session (NV12 and RGBA at 641x359, through the pinned upload\n"
      "  and the device preprocess) against the CPU session: the same top-%d ids (two ids\n"
      "  whose CPU probabilities are within the score tolerance may swap) and probabilities\n"
      "  within the same tolerances; and the host path must give the device path's results\n"
      "  on the same frames (probabilities within 1e-6).\n"
      "  The whole-network and host-frame checks run again on the opt-in fused path (session\n"
      "  parameter cuda_fused at the level of --fused: 2, the default, the NHWC network in\n"
      "  fp16 and the fused kernels in fp32; 1 the fused kernels; labelled fp32+fused /\n"
      "  fp16+fused or fp16+nhwc) with the same bounds.\n"
      "  Exit status: 0 pass, 1 fail, 77 no usable CUDA backend here (no module/driver/GPU).\n",
      TOL_OP, TOL_NET, TOL_TIE, TOL16_OP, TOL16_NET, TOL16_TIE, TOL16_TOP5 * 100.0, TOP_K, TOP_K,
      TOL_PRE, TOL_PRE_FRACTION, TOP_K, TOL_SCORE, TOL16_SCORE, TOP_K);
}

int
main (int argc, char **argv)
{
  const char *only = NULL;
  int batch = 2, device = 0, fused_level = GPUNET_CUDA_FUSED_NHWC;
  unsigned long long seed = 1;
  const tolerances *tols[2] = { &tol_fp32, &tol_fp16 };
  int n_tols = 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end = NULL;
    if (!strcmp (a, "--verbose") || !strcmp (a, "-v"))
      verbose = 1;
    else if (!strcmp (a, "--help") || !strcmp (a, "-h")) {
      usage (stdout);
      return 0;
    } else if (v && !strcmp (a, "--model")) {
      only = v;
      i++;
    } else if (v && !strcmp (a, "--fused")) {
      if (strcmp (v, "1") && strcmp (v, "2")) {
        fprintf (stderr, "gpunet-selftest: bad value '%s' for --fused (1 or 2)\n", v);
        return 1;
      }
      fused_level = v[0] - '0';
      i++;
    } else if (v && !strcmp (a, "--precision")) {
      if (!strcmp (v, "fp32")) {
        n_tols = 1;
      } else if (!strcmp (v, "fp16")) {
        tols[0] = &tol_fp16;
        n_tols = 1;
      } else if (strcmp (v, "all")) {
        fprintf (stderr, "gpunet-selftest: bad value '%s' for --precision (fp32, fp16 or all)\n", v);
        return 1;
      }
      i++;
    } else if (v && (!strcmp (a, "--batch") || !strcmp (a, "--device") || !strcmp (a, "--seed"))) {
      errno = 0;
      unsigned long long x = strtoull (v, &end, 10);
      if (errno || !*v || *end || (strcmp (a, "--seed") && x > 4096) || (!strcmp (a, "--batch") && x < 1)) {
        fprintf (stderr, "gpunet-selftest: bad value '%s' for %s\n", v, a);
        return 1;
      }
      if (!strcmp (a, "--batch"))
        batch = (int) x;
      else if (!strcmp (a, "--device"))
        device = (int) x;
      else
        seed = x;
      i++;
    } else {
      usage (stderr);
      return 1;
    }
  }
  rng ^= seed * 0x9e3779b97f4a7c15ull;

  char *err = NULL;
  const gpunet_backend *cuda = gpunet_backend_cuda_get (&err);
  const gpunet_cuda_op_api *api = cuda ? gpunet_cuda_op_api_get (&err) : NULL;
  if (!cuda || !api) {
    printf ("gpunet-selftest: skipped, no CUDA backend here: %s\n", err ? err : "?");
    free (err);
    return 77;
  }
  gpunet_cuda_op_runner *runner = NULL;
  gpunet_status st = api->runner_new (device, &runner, &err);
  if (st != GPUNET_OK) {
    printf ("gpunet-selftest: %s: %s\n", st == GPUNET_ERR_BACKEND_UNAVAILABLE ? "skipped" : "error",
        err ? err : "?");
    free (err);
    return st == GPUNET_ERR_BACKEND_UNAVAILABLE ? 77 : 1;
  }
  char dev[256];
  api->describe_device (device, dev, sizeof dev);
  printf ("gpunet-selftest: CUDA device %d: %s; %s, batch %d, seed %llu\n", device, dev,
      n_tols == 2 ? "fp32 and fp16" : tols[0]->name, batch, seed);
  /* the options that change which kernels run: the sessions read GPUNET_CUDA themselves,
   * the op runner and the whole-network checks (cuda_opts) get them here */
  gpunet_cuda_options copts = { 0 };
  const char *cuda_env = getenv ("GPUNET_CUDA");
  if (gpunet_cuda_options_parse (&copts, cuda_env, "environment variable GPUNET_CUDA", &err)
      != GPUNET_OK || api->set_cuda_options (runner, &copts, &err) != GPUNET_OK) {
    printf ("gpunet-selftest: %s\n", err ? err : "?");
    free (err);
    api->runner_free (runner);
    return 1;
  }
  cuda_opts = copts;
  if (cuda_env && *cuda_env)
    printf ("gpunet-selftest: GPUNET_CUDA=%s\n", cuda_env);

  int failures = 0, models = 0;
  const char *const *names = gpunet_arch_builtin_names ();
  for (int t = 0; t < n_tols; t++) {
    const tolerances *tol = tols[t];
    tolerances tol_fused = *tol;   /* the same bounds, labelled */
    tol_fused.name = tol->precision != GPUNET_PRECISION_FP16 ? "fp32+fused"
        : fused_level == GPUNET_CUDA_FUSED_NHWC ? "fp16+nhwc" : "fp16+fused";
    printf ("%s tolerances: op %.0e, network %.0e (max abs error / max abs reference)\n", tol->name,
        tol->op, tol->net);
    st = api->set_precision (runner, tol->precision, &err);
    if (st != GPUNET_OK) {
      printf ("gpunet-selftest: cannot run ops in %s: %s\n", tol->name, err ? err : "?");
      free (err);
      err = NULL;
      failures++;
      continue;
    }
    for (int m = 0; only ? m < 1 : names[m] != NULL; m++) {
      const char *name = only ? only : names[m];
      gpunet_model *model = NULL;
      st = gpunet_model_new_random (name, seed + (unsigned) m, &model, &err);
      if (st != GPUNET_OK) {
        printf ("%s: cannot build: %s\n", name, err ? err : "?");
        failures++;
        continue;
      }
      const gpunet_graph *g = gpunet_model_graph (model);
      printf ("%s (%s): %d ops, %d blocks\n", name, tol->name, g->n_ops, g->n_blocks);
      failures += check_ops (api, runner, name, g, batch, tol);
      failures += check_network (cuda, name, g, batch, device, tol, 0);
      failures += check_network (cuda, name, g, batch, device, &tol_fused, fused_level);
      gpunet_model_unref (model);
      models += t == 0;
    }
    printf ("device frames (%s, %s):\n", only ? only : names[0], tol->name);
    failures += check_device_frames (api, runner, only ? only : names[0], seed, device, tol);
    printf ("host frames (%s, %s):\n", only ? only : names[0], tol->name);
    failures += check_host_frames (cuda, api, only ? only : names[0], seed, device, tol, 0);
    printf ("host frames, fused path (%s, %s):\n", only ? only : names[0], tol_fused.name);
    failures += check_host_frames (cuda, api, only ? only : names[0], seed, device, &tol_fused,
        fused_level);
  }
  api->runner_free (runner);
  free (err);
  printf ("gpunet-selftest: %d model(s) x %d precision(s), %d failure(s): %s\n", models, n_tols,
      failures, failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
