/* test_bf16: precision=bf16 on the fast CPU backend.
 *   refusal: a CPU without AVX-512 BF16 or AMX-BF16 (simulated by the cpu option
 *            bf16=off) gets one sentence naming the instruction sets, and no session.
 *   network: the tiny fixture networks in bf16 against the cpu-ref backend (f32), batch 2;
 *            exit 77 where the CPU lacks the instructions.
 * The tolerance comes from the format: bf16 keeps 8 significant bits, so rounding an
 * input or a weight moves it by at most u = 2^-8 of itself and a product by 2u; every
 * convolution rounds both, so its output moves by at most 2u of the sum of the magnitudes
 * of its terms.  With the activations stored as bf16 between layers (the default,
 * bf16act=auto) the depthwise layers round their input and output too.  Allowing each
 * such layer that full 2u relative to the largest logit, over the largest of the tiny
 * nets (tiny-a: 26 dense convolutions, the first included, and 6 depthwise ones), gives
 * 64u (0.25).  tiny-a's random head cancels strongly (its logits are small beside its
 * activations) and measures about 0.14 here (0.12 with bf16act=f32, where the first
 * convolution stays f32); a wrong weight layout, a wrongly typed buffer or a lost layer
 * moves the logits by their own size.  The run must also differ from f32 by more
 * than u/64 on some logit: the bf16 kernels ran, the session did not fall back to f32.
 *   fused: the 1x1 expansions fused into the depthwise ops after them (cpu option xdw,
 *          kernels/onednn/xdw_plan.c) against the same network unfused, in bf16 and in
 *          f32, through the fast backend itself: each plane's expansion must be fused
 *          where xdw=all and none where xdw=off.  The two differ only in the order of the
 *          f32 sums inside an expansion.  bf16: an expanded value may move by one bf16
 *          step (u) where its sum lies near a rounding boundary: each depthwise op's output
 *          by at most u of the sum of its terms' sizes, 2u allowed per fused op over
 *          tiny-a's six, 12u of the largest logit.  f32: rounding only, held to 1e-5 of
 *          the largest logit (a fifth of the exactness bound).  A misplaced row, a lost
 *          buffer or a wrong weight moves the logits by their own size.  The f32 half
 *          needs AVX-512 (F, BW, VL), the bf16 half AVX-512 BF16. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <oneapi/dnnl/dnnl.h>

#include "cpu_has.h"
#include "gpunet.h"
#include "backend.h"
#include "model_private.h"
#include "registry.h"
#include "common/cpu_paths.h"
#include "onednn/backend_onednn.h"
#include "onednn/bf16_pwconv.h"

static const char *
data_dir (void)
{
  const char *d = getenv ("GPUNET_TEST_DATA");
  return d ? d : "tests/data";
}

static int
load (const char *name, gpunet_model **m)
{
  char arch[1024], ckpt[1024];
  char *err = NULL;
  snprintf (arch, sizeof arch, "%s/fixtures/%s.json", data_dir (), name);
  snprintf (ckpt, sizeof ckpt, "%s/fixtures/%s/%s.pth.tar", data_dir (), name, name);
  if (gpunet_model_load (arch, ckpt, m, &err) != GPUNET_OK) {
    fprintf (stderr, "FAIL: loading %s: %s\n", name, err ? err : "?");
    free (err);
    return 1;
  }
  return 0;
}

static int
test_refusal (void)
{
  gpunet_model *m = NULL;
  if (load ("tiny-a", &m))
    return 1;
  gpunet_session_params p;
  gpunet_session_params_init (&p);
  p.backend = GPUNET_BACKEND_CPU;
  p.precision = GPUNET_PRECISION_BF16;
  p.cpu.no_bf16 = 1;
  gpunet_session *s = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_session_new (m, &p, &s, &err);
  int fail = 0;
  if (st != GPUNET_ERR_UNSUPPORTED || s) {
    fprintf (stderr, "FAIL: bf16 without the instructions gave status %d (%s), session %p; "
        "wanted GPUNET_ERR_UNSUPPORTED and none\n", st, gpunet_status_string (st), (void *) s);
    fail = 1;
  } else if (!err || !strstr (err, "avx512_bf16") || !strstr (err, "AMX-BF16")
      || !strstr (err, "precision=fp32") || strchr (err, '\n')) {
    fprintf (stderr, "FAIL: the refusal should be one sentence naming avx512_bf16 and "
        "AMX-BF16 and saying precision=fp32; got: %s\n", err ? err : "(none)");
    fail = 1;
  } else
    printf ("refusal: %s\n", err);
  free (err);
  gpunet_session_free (s);
  /* the cpu options string reaches the same switch */
  gpunet_cpu_options o = { 0 };
  err = NULL;
  if (gpunet_cpu_options_parse (&o, "bf16=off", "GPUNET_CPU", &err) != GPUNET_OK
      || o.no_bf16 != 1) {
    fprintf (stderr, "FAIL: GPUNET_CPU=bf16=off not parsed: %s\n", err ? err : "?");
    fail = 1;
  }
  free (err);
  gpunet_model_unref (m);
  return fail;
}

/* Returns 0 passed, 1 failed, 77 skipped. */
static int
test_network (const char *name, int f32_act)
{
  gpunet_model *m = NULL;
  if (load (name, &m))
    return 1;
  const int r = gpunet_model_resolution (m), nc = gpunet_model_num_classes (m), n = 2;
  char path[1024];
  snprintf (path, sizeof path, "%s/fixtures/%s/input.bin", data_dir (), name);
  float *in = malloc (sizeof (float) * n * 3 * r * r);
  float *ref = malloc (sizeof (float) * n * nc), *low = malloc (sizeof (float) * n * nc);
  FILE *f = fopen (path, "rb");
  if (!f || fread (in, sizeof (float), (size_t) n * 3 * r * r, f) != (size_t) n * 3 * r * r) {
    fprintf (stderr, "FAIL: cannot read %s\n", path);
    return 1;
  }
  fclose (f);
  gpunet_session_params p;
  gpunet_session_params_init (&p);
  p.max_batch = n;
  p.n_threads = 2;
  p.backend = GPUNET_BACKEND_CPU_REF;
  p.precision = GPUNET_PRECISION_FP32;
  gpunet_session *sr = NULL, *sb = NULL;
  char *err = NULL;
  int rc = 0;
  if (gpunet_session_new (m, &p, &sr, &err) != GPUNET_OK
      || gpunet_session_forward (sr, in, n, ref, &err) != GPUNET_OK) {
    fprintf (stderr, "FAIL: %s cpu-ref: %s\n", name, err ? err : "?");
    rc = 1;
    goto out;
  }
  p.backend = GPUNET_BACKEND_CPU;
  p.precision = GPUNET_PRECISION_BF16;
  p.cpu.bf16_f32_act = f32_act;
  gpunet_status st = gpunet_session_new (m, &p, &sb, &err);
  if (st == GPUNET_ERR_UNSUPPORTED) {
    printf ("SKIP: this CPU cannot run bf16 (%s)\n", err ? err : "?");
    rc = 77;
    goto out;
  }
  if (st != GPUNET_OK || gpunet_session_forward (sb, in, n, low, &err) != GPUNET_OK) {
    fprintf (stderr, "FAIL: %s bf16: %s\n", name, err ? err : "?");
    rc = 1;
    goto out;
  }
  const double u = 1.0 / 256.0, tol = 64 * u, floor_ = u / 64;
  for (int b = 0; b < n; b++) {
    double big = 0.0, worst = 0.0;
    for (int c = 0; c < nc; c++)
      big = fmax (big, fabs (ref[b * nc + c]));
    for (int c = 0; c < nc; c++)
      worst = fmax (worst, fabs ((double) low[b * nc + c] - ref[b * nc + c]) / big);
    printf ("%s bf16act=%s image %d: max |bf16 - f32| / max |f32 logit| = %.3g (bound %.3g, "
        "floor %.3g)\n", name, f32_act ? "f32" : "auto", b, worst, tol, floor_);
    if (!(worst <= tol)) {
      fprintf (stderr, "FAIL: %s image %d: bf16 logits off by %.3g of the largest, over the "
          "bound %.3g\n", name, b, worst, tol);
      rc = 1;
    }
    if (worst < floor_) {
      fprintf (stderr, "FAIL: %s image %d: bf16 logits within %.3g of f32: the bf16 "
          "kernels did not run\n", name, b, worst);
      rc = 1;
    }
  }
out:
  free (err);
  gpunet_session_free (sr);
  gpunet_session_free (sb);
  gpunet_model_unref (m);
  free (in), free (ref), free (low);
  return rc;
}

/* The same network planned two ways and run on the same input: pwb 0: the 1x1 expansions
 * fused into the depthwise ops (xdw=all) against none (xdw=off), f32 or bf16; pwb 1: bf16,
 * our bf16 1x1 kernel on every 1x1 convolution it takes (bf16pw=own) against oneDNN's
 * (bf16pw=onednn).  The logits differ by the order of f32 sums, and in bf16 by a bf16 step
 * where a sum lands on the other side of a rounding boundary.  Returns 0 passed, 1 failed,
 * 77 skipped. */
static int
test_fused (const char *name, int bf16, int pwb)
{
  gpunet_model *m = NULL;
  if (load (name, &m))
    return 1;
  const gpunet_graph *g = gpunet_model_graph (m);
  const int r = gpunet_model_resolution (m), nc = gpunet_model_num_classes (m), n = 2;
  char path[1024];
  snprintf (path, sizeof path, "%s/fixtures/%s/input.bin", data_dir (), name);
  float *in = malloc (sizeof (float) * n * 3 * r * r);
  float *lo[2] = { malloc (sizeof (float) * n * nc), malloc (sizeof (float) * n * nc) };
  FILE *f = fopen (path, "rb");
  if (!f || fread (in, sizeof (float), (size_t) n * 3 * r * r, f) != (size_t) n * 3 * r * r) {
    fprintf (stderr, "FAIL: cannot read %s\n", path);
    return 1;
  }
  fclose (f);
  void *st[2] = { NULL, NULL };
  int rc = 0, fused[2] = { 0, 0 };
  char *err = NULL;
  const char *what = pwb ? "bf16pw" : "xdw", *on = pwb ? "own" : "all";
  const char *off = pwb ? "onednn" : "off";
  for (int v = 0; v < 2 && rc == 0; v++) {   /* 0: xdw=all (bf16pw=own), 1: off (onednn) */
    gpunet_session_params p;
    gpunet_session_params_init (&p);
    p.max_batch = n;
    p.n_threads = 2;
    p.precision = bf16 ? GPUNET_PRECISION_BF16 : GPUNET_PRECISION_FP32;
    if (pwb)
      p.cpu.bf16pw = v ? GPUNET_CPU_ONEDNN : GPUNET_CPU_OWN;
    else
      p.cpu.xdw = v ? 1 : 2;
    gpunet_status s = gpunet_backend_plan (&gpunet_backend_cpu_fast, g, &p, &st[v], &err);
    if (s == GPUNET_ERR_UNSUPPORTED) {
      printf ("SKIP: this CPU cannot run bf16 (%s)\n", err ? err : "?");
      rc = 77;
      break;
    }
    if (s != GPUNET_OK || gpunet_backend_cpu_fast.forward (st[v], in, n, lo[v], NULL, NULL,
            &err) != GPUNET_OK) {
      fprintf (stderr, "FAIL: %s %s %s=%s: %s\n", name, bf16 ? "bf16" : "f32", what,
          v ? off : on, err ? err : "?");
      rc = 1;
      break;
    }
    for (int i = 0; i < g->n_ops; i++)
      fused[v] += gpunet_onednn_op_impl (st[v], i) == (pwb ? GPUNET_ONEDNN_PWB
          : GPUNET_ONEDNN_XDW);
  }
  if (rc == 0 && pwb && fused[0] == 0 && !gpunet_pwb_available ()) {
    printf ("SKIP: our bf16 1x1 kernel needs AVX-512 BF16 (and F, BW, VL), which this CPU "
        "lacks (its bf16 runs on AMX alone)\n");
    rc = 77;
  }
  if (rc == 0 && !bf16 && fused[0] == 0 && (!CPU_HAS ("avx512bw")
          || !CPU_HAS ("avx512vl")
          || !(gpunet_onednn_cpu_paths (st[0]) & GPUNET_CPU_PATH_AVX512))) {
    printf ("SKIP: no f32 expansion is fused here: it needs AVX-512 (F, BW and VL) and the "
        "16-channel block (an AVX2 cap plans the 8-channel one)\n");
    rc = 77;
  }
  if (rc == 0 && (fused[0] < 1 || fused[1] != 0)) {
    fprintf (stderr, "FAIL: %s: %d ops planned with %s=%s (wanted some), %d with %s=%s "
        "(wanted none)\n", name, fused[0], what, on, fused[1], what, off);
    rc = 1;
  }
  const double u = 1.0 / 256.0, tol = bf16 ? 12 * u : 1e-5;
  for (int b = 0; rc == 0 && b < n; b++) {
    double big = 0.0, worst = 0.0;
    for (int c = 0; c < nc; c++)
      big = fmax (big, fabs (lo[1][b * nc + c]));
    for (int c = 0; c < nc; c++)
      worst = fmax (worst, fabs ((double) lo[0][b * nc + c] - lo[1][b * nc + c]) / big);
    printf ("%s %s %s=%s (%d ops) image %d: max |%s - %s| / max |logit| = %.3g (bound "
        "%.3g)\n", name, bf16 ? "bf16" : "f32", what, on, fused[0], b, on, off, worst, tol);
    if (!(worst <= tol)) {
      fprintf (stderr, "FAIL: %s image %d: %s=%s logits off by %.3g of the largest, over "
          "the bound %.3g\n", name, b, what, on, worst, tol);
      rc = 1;
    }
  }
  free (err);
  for (int v = 0; v < 2; v++)
    if (st[v])
      gpunet_backend_cpu_fast.destroy (st[v]);
  gpunet_model_unref (m);
  free (in), free (lo[0]), free (lo[1]);
  return rc;
}

/* Plans model `m` (named `name`) in bf16 with the default options on 2 threads and
 * counts the ops that run on our Winograd kernels (`wino`) and on our bf16 1x1 kernel.
 * Returns 1, having said why, when it cannot be planned. */
static int
count_ours (gpunet_model *m, const char *name, int wino, int *ours)
{
  gpunet_session_params p;
  gpunet_session_params_init (&p);
  p.n_threads = 2;
  p.precision = GPUNET_PRECISION_BF16;
  void *st = NULL;
  char *err = NULL;
  const gpunet_graph *g = gpunet_model_graph (m);
  *ours = 0;
  if (gpunet_backend_plan (&gpunet_backend_cpu_fast, g, &p, &st, &err) != GPUNET_OK) {
    fprintf (stderr, "FAIL: %s bf16: %s\n", name, err ? err : "?");
    free (err);
    return 1;
  }
  for (int i = 0; i < g->n_ops; i++) {
    const int impl = gpunet_onednn_op_impl (st, i);
    *ours += impl == GPUNET_ONEDNN_PWB
        || (wino && (impl == GPUNET_ONEDNN_WINO || impl == GPUNET_ONEDNN_WINO3));
  }
  gpunet_backend_cpu_fast.destroy (st);
  free (err);
  return 0;
}

/* Where oneDNN's bf16 convolutions run on AMX, a default bf16 plan gives none of them to
 * our Winograd or bf16 1x1 kernels (measured against its AVX-512 BF16 kernels only).
 * On an AMX host whose oneDNN runs them off AMX (2.6: our tensors are blocked, its AMX
 * kernels take NHWC), tiny-a's 3x3 stride-1 layers go to our Winograd kernel. */
static int
test_amx_off_rule (void)
{
  gpunet_model *m = NULL;
  int ours = 0, rc = 0;
  if (load ("tiny-a", &m))
    return 1;
  if (count_ours (m, "tiny-a", 1, &ours)) {
    rc = 1;
  } else {
    printf ("tiny-a bf16 on an AMX host, oneDNN's bf16 off AMX: %d convolutions on our "
        "Winograd or bf16 1x1 kernels (want some)\n", ours);
    if (!ours) {
      fprintf (stderr, "FAIL: tiny-a: bf16 on an AMX host whose oneDNN runs it off AMX "
          "planned none of its convolutions on our Winograd kernel\n");
      rc = 1;
    }
  }
  gpunet_model_unref (m);
  return rc;
}

static int
test_amx_rule (void)
{
  const char *nets[] = { "tiny-a", "tiny-d", "tiny-dl" };
  int rc = 0;
  for (int k = 0; k < 3; k++) {
    gpunet_model *m = NULL;
    int ours = 0;
    if (load (nets[k], &m))
      return 1;
    if (count_ours (m, nets[k], 1, &ours)) {
      rc = 1;
    } else {
      printf ("%s bf16 on AMX: %d convolutions on our Winograd or bf16 1x1 kernels (want 0)\n",
          nets[k], ours);
      if (ours) {
        fprintf (stderr, "FAIL: %s: bf16 on an AMX host planned %d convolutions on our "
            "kernels\n", nets[k], ours);
        rc = 1;
      }
    }
    gpunet_model_unref (m);
  }
  return rc;
}

/* The bf16pw=auto rule on GPUNet-P1 (seeded random weights), whose 7x7 stage has the
 * planes of 32-64 pixels auto gives our kernel: some of its 1x1 convolutions with
 * oneDNN 2.x, none with oneDNN 3.x (its bf16 1x1 kernel was the faster there) or on a
 * CPU with AMX-BF16. */
static int
test_pwb_auto_rule (void)
{
  gpunet_model *m = NULL;
  char *err = NULL;
  if (gpunet_model_new_random ("gpunet-p1", 1, &m, &err) != GPUNET_OK) {
    fprintf (stderr, "FAIL: gpunet-p1 with random weights: %s\n", err ? err : "?");
    free (err);
    return 1;
  }
  int rc = 0, ours = 0;
  if (count_ours (m, "gpunet-p1", 0, &ours)) {
    rc = 1;
  } else {
    const dnnl_version_t *v = dnnl_version ();
    const int want = v->major < 3 && !gpunet_onednn_amx_host ();
    printf ("gpunet-p1 bf16, bf16pw=auto, oneDNN %d.%d%s: %d convolutions on our bf16 1x1 "
        "kernel (want %s)\n", v->major, v->minor, gpunet_onednn_amx_host () ? ", AMX host" : "",
        ours, want ? "some" : "none");
    if (want ? ours == 0 : ours != 0) {
      fprintf (stderr, "FAIL: bf16pw=auto planned %d convolutions on our kernel, wanted %s\n",
          ours, want ? "some" : "none");
      rc = 1;
    }
  }
  gpunet_model_unref (m);
  return rc;
}

int
main (int argc, char **argv)
{
  if (argc > 1 && !strcmp (argv[1], "refusal"))
    return test_refusal ();
  if (argc > 1 && !strcmp (argv[1], "fused")) {
    int rc = 0, ran[2] = { 1, 1 };
    const char *nets[] = { "tiny-a", "tiny-dl" };
    for (int i = 0; i < 4; i++) {   /* f32, then bf16 */
      const int bf16 = i >= 2;
      if (!ran[bf16])
        continue;
      const int r = test_fused (nets[i % 2], bf16, 0);
      if (r == 77)
        ran[bf16] = 0;
      else
        rc |= r;
    }
    printf ("isa-paths: ran=%s%s%s not-run=%s%s%s\n", ran[0] ? "avx512" : "",
        ran[0] && ran[1] ? "," : "", ran[1] ? "avx512-bf16-vnni" : "", ran[0] ? "" : "avx512",
        !ran[0] && !ran[1] ? "," : "", ran[1] ? "" : "avx512-bf16-vnni");
    if (!ran[0] && !ran[1])
      return 77;
    printf ("%s\n", rc ? "FAILED" : "passed");
    return rc;
  }
  if (argc > 1 && !strcmp (argv[1], "pwb")) {
    int rc = 0;
    const char *nets[] = { "tiny-a", "tiny-d", "tiny-dl" };
    for (int i = 0; i < 3; i++) {
      const int r = test_fused (nets[i], 1, 1);
      if (r == 77) {
        printf ("isa-paths: ran= not-run=avx512-bf16-vnni,amx\n");
        return 77;
      }
      rc |= r;
    }
    rc |= test_pwb_auto_rule ();
    const int amx = gpunet_onednn_bf16_amx (), host = gpunet_onednn_amx_host ();
    if (amx)
      rc |= test_amx_rule ();
    else if (host)
      rc |= test_amx_off_rule ();
    else
      printf ("AMX: this CPU (or oneDNN's cap) has no AMX-BF16; the rules for AMX hosts "
          "are not checked\n");
    printf ("isa-paths: ran=avx512-bf16-vnni%s not-run=%s\n", host ? ",amx" : "",
        host ? "" : "amx");
    printf ("%s\n", rc ? "FAILED" : "passed");
    return rc;
  }
  int rc = 0;
  const char *nets[] = { "tiny-a", "tiny-d", "tiny-dl" };
  for (int i = 0; i < 6; i++) {
    int r = test_network (nets[i / 2], i % 2);
    if (r == 77) {
      /* scripts/test-summary.py's line: the bf16 kernels were not run here */
      printf ("isa-paths: ran= not-run=avx512-bf16-vnni\n");
      return 77;
    }
    rc |= r;
  }
  printf ("isa-paths: ran=avx512-bf16-vnni not-run=\n");
  printf ("%s\n", rc ? "FAILED" : "passed");
  return rc;
}
