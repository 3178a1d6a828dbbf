/* test_models.c: the seven published architectures build from their names and aliases,
 * with the FLOP counts of the table and PyTorch's parameter count for GPUNet-0;
 * model-level weight errors (wrong architecture, wrong shape, truncated file) give
 * their specific sentences; safetensors written from a checkpoint load identically. */
#include <math.h>

#include "check.h"
#include "checkpoint.h"
#include "safetensors.h"
#include "gpunet.h"

static void
test_zoo (void)
{
  /* GFLOPs (2 x MACs of convolutions and classifier) from the CPU-speed issue's table;
   * parameter counts as PyTorch counts them for NVIDIA's own model code
   * (sum of p.numel() over model.parameters(), measured with tools/compare_pytorch.py;
   * GPUNet-0's is also NVIDIA's published 11,885,432) */
  static const struct { const char *name, *alias; int res; double gflops; int64_t params; } zoo[] = {
    { "gpunet-0", "0.65ms", 320, 6.51, 11885432 }, { "gpunet-1", "0.85ms", 288, 6.62, 12704192 },
    { "gpunet-2", "1.75ms", 384, 16.77, 25798704 }, { "gpunet-p0", "0.5ms-D", 224, 3.74, 22815080 },
    { "gpunet-p1", "0.8ms-D", 224, 6.48, 39905672 }, { "gpunet-d1", "1.25ms-D", 456, 8.58, 10589859 },
    { "gpunet-d2", "2.25ms-D", 528, 31.48, 19036728 },
  };
  for (size_t i = 0; i < sizeof zoo / sizeof zoo[0]; i++) {
    gpunet_model *m = NULL, *a = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_model_new_random (zoo[i].name, 7, &m, &err);
    CHECK_MSG (st == GPUNET_OK, "%s: %s", zoo[i].name, err ? err : "?");
    free (err);
    err = NULL;
    st = gpunet_model_new_random (zoo[i].alias, 7, &a, &err);
    CHECK_MSG (st == GPUNET_OK, "%s: %s", zoo[i].alias, err ? err : "?");
    free (err);
    if (!m || !a) {
      gpunet_model_unref (m);
      gpunet_model_unref (a);
      continue;
    }
    CHECK (gpunet_model_resolution (m) == zoo[i].res);
    CHECK (gpunet_model_num_classes (m) == 1000);
    CHECK (gpunet_model_num_params (m) == gpunet_model_num_params (a));
    double gf = gpunet_model_flops (m) / 1e9;
    CHECK_MSG (fabs (gf - zoo[i].gflops) < 0.006, "%s: %.3f GFLOPs, expected %.2f", zoo[i].name, gf,
        zoo[i].gflops);
    CHECK_MSG (gpunet_model_num_params (m) == zoo[i].params, "%s has %lld parameters, PyTorch %lld",
        zoo[i].name, (long long) gpunet_model_num_params (m), (long long) zoo[i].params);
    gpunet_model_unref (m);
    gpunet_model_unref (a);
  }
  gpunet_model *m = NULL;
  char *err = NULL;
  CHECK (gpunet_model_new_random ("gpunet-9", 1, &m, &err) == GPUNET_ERR_ARCH);
  CHECK_CONTAINS (err, "gpunet-0");
  free (err);
}

static const char *
fx (char *buf, size_t size, const char *rel)
{
  snprintf (buf, size, "%s/fixtures/%s", check_data_dir (), rel);
  return buf;
}

static void
expect_load_error (const char *arch, const char *weights, gpunet_status want, const char *needle)
{
  gpunet_model *m = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_model_load (arch, weights, &m, &err);
  CHECK_MSG (st == want, "%s + %s: status %d (%s), expected %d", arch, weights, st,
      err ? err : "", want);
  CHECK_CONTAINS (err, needle);
  CHECK (m == NULL);
  gpunet_model_unref (m);
  free (err);
}

/* Copies every tensor of `src` into a safetensors file, letting `edit` change one. */
static int
rewrite_as_safetensors (const char *src, const char *dst, const char *drop, const char *shrink)
{
  gpunet_checkpoint *c = NULL;
  if (gpunet_checkpoint_open (src, &c, NULL) != GPUNET_OK)
    return -1;
  size_t n = gpunet_checkpoint_n_tensors (c), k = 0;
  gpunet_tensor *t = calloc (n, sizeof *t);
  for (size_t i = 0; i < n; i++) {
    const gpunet_tensor *s = gpunet_checkpoint_tensor (c, i);
    if (drop && !strcmp (s->name, drop))
      continue;
    t[k] = *s;
    if (shrink && !strcmp (s->name, shrink)) {
      /* one output channel fewer */
      t[k].shape[0]--;
      t[k].numel = t[k].numel / s->shape[0] * t[k].shape[0];
      t[k].nbytes = t[k].nbytes / (size_t) s->shape[0] * (size_t) t[k].shape[0];
    }
    k++;
  }
  int rc = gpunet_safetensors_write (dst, t, k, NULL) == GPUNET_OK ? 0 : -1;
  free (t);
  gpunet_checkpoint_free (c);
  return rc;
}

static void
test_weight_errors (void)
{
  char a_json[1024], d_json[1024], a_ckpt[1024];
  fx (a_json, sizeof a_json, "tiny-a.json");
  fx (d_json, sizeof d_json, "tiny-d.json");
  fx (a_ckpt, sizeof a_ckpt, "tiny-a/tiny-a.pth.tar");

  /* a checkpoint of another architecture */
  expect_load_error (d_json, a_ckpt, GPUNET_ERR_WEIGHTS, "missing: 'network.head:.net.0.weight'");
  expect_load_error (d_json, a_ckpt, GPUNET_ERR_WEIGHTS, "unexpected: 'network.head: 2.net.0.weight'");
  /* missing files */
  expect_load_error (a_json, "/nonexistent/x.pth.tar", GPUNET_ERR_IO, "/nonexistent/x.pth.tar");
  expect_load_error ("/nonexistent/arch.json", a_ckpt, GPUNET_ERR_ARCH, "/nonexistent/arch.json");

  char tmp[] = "/tmp/gpunet-test-XXXXXX";
  if (!mkdtemp (tmp)) {
    CHECK_MSG (0, "mkdtemp failed");
    return;
  }
  char path[1200];
  /* the same weights as safetensors load and give the same logits */
  snprintf (path, sizeof path, "%s/same.safetensors", tmp);
  CHECK (rewrite_as_safetensors (a_ckpt, path, NULL, NULL) == 0);
  gpunet_model *m1 = NULL, *m2 = NULL;
  CHECK (gpunet_model_load (a_json, a_ckpt, &m1, NULL) == GPUNET_OK);
  CHECK (gpunet_model_load (a_json, path, &m2, NULL) == GPUNET_OK);
  if (m1 && m2) {
    CHECK (!strcmp (gpunet_model_weights_source (m2), "safetensors"));
    gpunet_session *s1 = NULL, *s2 = NULL;
    gpunet_session_new (m1, NULL, &s1, NULL);
    gpunet_session_new (m2, NULL, &s2, NULL);
    float *in = calloc (3 * 96 * 96, sizeof (float)), l1[16], l2[16];
    for (int i = 0; i < 3 * 96 * 96; i++)
      in[i] = (float) sin (i * 0.01);
    CHECK (s1 && s2 && gpunet_session_forward (s1, in, 1, l1, NULL) == GPUNET_OK
        && gpunet_session_forward (s2, in, 1, l2, NULL) == GPUNET_OK && !memcmp (l1, l2, sizeof l1));
    free (in);
    gpunet_session_free (s1);
    gpunet_session_free (s2);
  }
  gpunet_model_unref (m1);
  gpunet_model_unref (m2);
  remove (path);

  /* a tensor with one output channel fewer */
  snprintf (path, sizeof path, "%s/shape.safetensors", tmp);
  CHECK (rewrite_as_safetensors (a_ckpt, path, NULL, "network.stage: 4 layer11.conv_pwl.weight") == 0);
  expect_load_error (a_json, path, GPUNET_ERR_WEIGHTS,
      "tensor 'network.stage: 4 layer11.conv_pwl.weight' has shape 23x120x1x1, the architecture needs 24x120x1x1");
  remove (path);

  /* a missing tensor */
  snprintf (path, sizeof path, "%s/missing.safetensors", tmp);
  CHECK (rewrite_as_safetensors (a_ckpt, path, "network.stage: 3 layer9.se.conv_expand.bias", NULL) == 0);
  expect_load_error (a_json, path, GPUNET_ERR_WEIGHTS,
      "1 tensor missing: 'network.stage: 3 layer9.se.conv_expand.bias'");
  remove (path);

  /* a truncated checkpoint */
  size_t size = 0;
  void *bytes = check_read_file (a_ckpt, &size);
  snprintf (path, sizeof path, "%s/truncated.pth.tar", tmp);
  FILE *f = fopen (path, "wb");
  if (bytes && f) {
    fwrite (bytes, 1, size / 2, f);
    fclose (f);
    gpunet_model *m = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_model_load (a_json, path, &m, &err);
    CHECK_MSG (st == GPUNET_ERR_FORMAT, "truncated: %d %s", st, err ? err : "");
    CHECK_CONTAINS (err, "truncated.pth.tar");
    free (err);
    gpunet_model_unref (m);
  }
  free (bytes);
  remove (path);
  remove (tmp);
}

static void
test_topk (void)
{
  const float logits[6] = { 1.0f, 3.0f, 2.0f, 3.0f, -1.0f, 0.5f };
  gpunet_class_score s[6];
  gpunet_topk_softmax (logits, 6, 4, s);
  CHECK (s[0].id == 1 && s[1].id == 3 && s[2].id == 2 && s[3].id == 0);
  double sum = 0;
  for (int i = 0; i < 6; i++)
    sum += exp (logits[i]);
  CHECK (fabs (s[0].score - exp (3.0) / sum) < 1e-6);
  CHECK (s[0].score == s[1].score && s[1].score > s[2].score);
  gpunet_topk_softmax (logits, 6, 10, s);   /* k > n is clamped */
  CHECK (s[5].id == 4);
}

int
main (void)
{
  test_zoo ();
  test_weight_errors ();
  test_topk ();
  return check_report ();
}
