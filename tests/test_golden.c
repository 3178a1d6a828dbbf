/* test_golden.c: the whole engine against NVIDIA's PyTorch outputs: each fixture's
 * logits (max |ours - golden| <= 1e-4 * max(1, max |golden|)) and top-5, from the
 * training checkpoint and from the plain state dict; every block's activation; the
 * decoy state_dict weights must not match; parameter counts.  On the fast CPU backend it
 * reports the CPU code paths its plans ran (check.h). */
#include <math.h>

#include "check.h"
#include "gpunet.h"
#include "session_private.h"
#ifdef GPUNET_HAVE_ONEDNN
#include "cpu_module.h"          /* the CPU module's test entries */
#include "registry.h"
#endif

typedef struct {
  const char *name;
  int resolution, classes, n_blocks;
  int64_t params;
} fixture;

static const fixture fixtures[] = {
  { "tiny-a", 96, 16, 16, 56756 },
  { "tiny-d", 64, 10, 9, 58630 },
  { "tiny-dl", 64, 12, 5, 29916 },
};

static float *
load_f32 (const char *dir, const char *fx, const char *file, size_t expect_floats)
{
  char path[1024];
  snprintf (path, sizeof path, "%s/fixtures/%s/%s", dir, fx, file);
  size_t size = 0;
  float *p = check_read_file (path, &size);
  CHECK_MSG (p && size == expect_floats * sizeof (float), "%s: %zu bytes, expected %zu floats", path,
      size, expect_floats);
  if (p && size != expect_floats * sizeof (float)) {
    free (p);
    p = NULL;
  }
  return p;
}

/* max |a - b| / max(1, max |b|) */
static double
rel_error (const float *a, const float *b, size_t n)
{
  double max_diff = 0.0, max_ref = 1.0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs ((double) a[i] - b[i]);
    if (!(d <= max_diff))
      max_diff = d;           /* NaN propagates as a failure */
    if (fabs (b[i]) > max_ref)
      max_ref = fabs (b[i]);
  }
  return max_diff / max_ref;
}

typedef struct {
  const char *dir, *fx;
  int n_checked;
  double worst;
} trace_ctx;

static void
on_block (void *user, int block, const float *data, int n, int c, int h, int w)
{
  trace_ctx *t = user;
  char file[64];
  snprintf (file, sizeof file, "act/%02d.bin", block);
  size_t count = (size_t) n * c * h * w;
  float *ref = load_f32 (t->dir, t->fx, file, count);
  if (!ref)
    return;
  /* each activation against its own max |value| */
  double max_ref = 0.0, max_diff = 0.0;
  for (size_t i = 0; i < count; i++) {
    if (fabs (ref[i]) > max_ref)
      max_ref = fabs (ref[i]);
    double d = fabs ((double) data[i] - ref[i]);
    if (!(d <= max_diff))
      max_diff = d;
  }
  double rel = max_diff / (max_ref > 0 ? max_ref : 1.0);
  CHECK_MSG (rel <= 1e-4, "%s block %d (%dx%dx%d): relative error %.3g", t->fx, block, c, h, w, rel);
  if (rel > t->worst)
    t->worst = rel;
  t->n_checked++;
  free (ref);
}

static void
top5 (const float *logits, int classes, int *ids)
{
  gpunet_class_score s[5];
  gpunet_topk_softmax (logits, classes, 5, s);
  for (int i = 0; i < 5; i++)
    ids[i] = s[i].id;
}

/* the backend every fixture runs on: cpu, or the one named by the first argument */
static gpunet_backend_kind backend = GPUNET_BACKEND_CPU;

static void
run_fixture (const char *dir, const fixture *f)
{
  char arch[1024], ckpt[1024], plain[1024];
  snprintf (arch, sizeof arch, "%s/fixtures/%s.json", dir, f->name);
  snprintf (ckpt, sizeof ckpt, "%s/fixtures/%s/%s.pth.tar", dir, f->name, f->name);
  snprintf (plain, sizeof plain, "%s/fixtures/%s/%s.state_dict.pth", dir, f->name, f->name);
  const size_t in_n = 2 * 3 * (size_t) f->resolution * f->resolution, out_n = 2 * (size_t) f->classes;
  float *input = load_f32 (dir, f->name, "input.bin", in_n);
  float *golden = load_f32 (dir, f->name, "logits.bin", out_n);
  float *wrong = load_f32 (dir, f->name, "logits_wrong_weights.bin", out_n);
  float *logits = calloc (out_n, sizeof (float));
  if (!input || !golden || !wrong || !logits)
    goto out;

  const char *weights[2] = { ckpt, plain };
  const char *expect_source[2] = { "state_dict_ema", "state dict" };
  for (int w = 0; w < 2; w++) {
    gpunet_model *m = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_model_load (arch, weights[w], &m, &err);
    CHECK_MSG (st == GPUNET_OK, "%s: %s", weights[w], err ? err : "?");
    free (err);
    err = NULL;
    if (st != GPUNET_OK)
      continue;
    CHECK (gpunet_model_resolution (m) == f->resolution);
    CHECK (gpunet_model_num_classes (m) == f->classes);
    CHECK_MSG (strcmp (gpunet_model_weights_source (m), expect_source[w]) == 0, "source %s",
        gpunet_model_weights_source (m));
    if (f->params)
      CHECK_MSG (gpunet_model_num_params (m) == f->params, "%s params %lld", f->name,
          (long long) gpunet_model_num_params (m));

    gpunet_session_params p;
    gpunet_session_params_init (&p);
    p.backend = backend;
    p.max_batch = 2;
    gpunet_session *s = NULL;
    st = gpunet_session_new (m, &p, &s, &err);
    CHECK_MSG (st == GPUNET_OK, "session: %s", err ? err : "?");
    free (err);
    err = NULL;
    if (st == GPUNET_OK && backend == GPUNET_BACKEND_CPU_REF)
      CHECK_MSG (strcmp (gpunet_session_backend_name (s), "cpu-ref") == 0,
          "the session runs on %s, not cpu-ref", gpunet_session_backend_name (s));
    if (st == GPUNET_OK) {
      trace_ctx t = { dir, f->name, 0, 0.0 };
      st = gpunet_session_forward_traced (s, input, 2, logits, on_block, &t, &err);
      CHECK_MSG (st == GPUNET_OK, "forward: %s", err ? err : "?");
      free (err);
      err = NULL;
      CHECK_MSG (t.n_checked == f->n_blocks, "%s: %d blocks traced", f->name, t.n_checked);
      double rel = rel_error (logits, golden, out_n);
      CHECK_MSG (rel <= 1e-4, "%s (%s): logits relative error %.3g", f->name, weights[w], rel);
#ifdef GPUNET_HAVE_ONEDNN
      /* the CPU code paths this plan ran (GPUNET_CPU simd= and block= choose them) */
      if (s->backend == gpunet_backend_find (GPUNET_BACKEND_CPU, NULL)) {
        const gpunet_cpu_bench_api *api = gpunet_cpu_bench_api_get (NULL);
        CHECK (api != NULL);
        if (api)
          check_paths_ran (api->cpu_paths (s->state));
      }
#endif
      printf ("%s from %s: logits relative error %.3g, worst block %.3g\n", f->name,
          expect_source[w], rel, t.worst);
      CHECK_MSG (rel_error (logits, wrong, out_n) > 1e-2, "%s matches the decoy weights", f->name);
      for (int b = 0; b < 2; b++) {
        int a[5], g[5];
        top5 (logits + b * f->classes, f->classes, a);
        top5 (golden + b * f->classes, f->classes, g);
        CHECK_MSG (memcmp (a, g, sizeof a) == 0, "%s image %d top-5 differs", f->name, b);
      }
      /* batch 1 gives the same as batch 2 */
      float one[64];
      if (f->classes <= 64 && gpunet_session_forward (s, input + in_n / 2, 1, one, NULL) == GPUNET_OK)
        CHECK (rel_error (one, logits + f->classes, (size_t) f->classes) <= 1e-6);
      /* n above max_batch is refused */
      CHECK (gpunet_session_forward (s, input, 3, logits, NULL) == GPUNET_ERR_INVALID_ARGUMENT);
    }
    gpunet_session_free (s);
    gpunet_model_unref (m);
  }
out:
  free (input);
  free (golden);
  free (wrong);
  free (logits);
}

int
main (int argc, char **argv)
{
  char *err = NULL;
  if (argc > 1 && gpunet_backend_kind_from_name (argv[1], &backend, &err) != GPUNET_OK) {
    fprintf (stderr, "test_golden [BACKEND]: %s\n", err);
    free (err);
    return 2;
  }
  const char *dir = check_data_dir ();
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
    run_fixture (dir, &fixtures[i]);
  return check_report ();
}
