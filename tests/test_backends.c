/* test_backends.c: the backend registry (kernels/registry.c) against its users: every
 * kind has one name and back, each backend found answers to its kind's name, sessions
 * run on the kind asked for (cpu-ref is the oracle, not the fast path), and unknown
 * names and kinds get a sentence; the CUDA options parse, and a session applies
 * GPUNET_CUDA (a malformed value fails it with a sentence). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gpunet.h"
#include "registry.h"

static void
test_names (void)
{
  int n;
  const gpunet_backend_entry *e = gpunet_backend_entries (&n);
  CHECK (n == 4);
  for (int i = 0; i < n; i++) {
    gpunet_backend_kind k = (gpunet_backend_kind) -1;
    CHECK_MSG (gpunet_backend_kind_from_name (e[i].name, &k, NULL) == GPUNET_OK && k == e[i].kind,
        "%s", e[i].name);
    CHECK_MSG (gpunet_backend_kind_name (e[i].kind) && !strcmp (gpunet_backend_kind_name (e[i].kind),
        e[i].name), "%s", e[i].name);
    for (int j = 0; j < i; j++)
      CHECK_MSG (e[i].kind != e[j].kind && strcmp (e[i].name, e[j].name), "%d %d", i, j);
  }
  CHECK (!strcmp (gpunet_backend_kind_name (GPUNET_BACKEND_CPU_REF), "cpu-ref"));
  CHECK (!strcmp (gpunet_backend_kind_name (GPUNET_BACKEND_CPU), "cpu"));
  CHECK (gpunet_backend_kind_name ((gpunet_backend_kind) 42) == NULL);

  char *err = NULL;
  gpunet_backend_kind k;
  CHECK (gpunet_backend_kind_from_name ("fast", &k, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "unknown backend 'fast': use one of auto, cpu, cuda, cpu-ref");
  free (err);
}

static void
test_find (void)
{
  char *err = NULL;
  const gpunet_backend *ref = gpunet_backend_find (GPUNET_BACKEND_CPU_REF, &err);
  CHECK (ref == &gpunet_backend_cpu_ref && !strcmp (ref->name, "cpu-ref"));
  const gpunet_backend *cpu = gpunet_backend_find (GPUNET_BACKEND_CPU, &err);
#ifdef GPUNET_HAVE_ONEDNN
  CHECK (cpu && cpu != ref && !strcmp (cpu->name, "cpu"));
#else
  CHECK (cpu == ref);
#endif
  const gpunet_backend *cuda = gpunet_backend_find (GPUNET_BACKEND_CUDA, &err);
  if (cuda)
    CHECK (!strcmp (cuda->name, "cuda"));
  else
    CHECK_CONTAINS (err, "CUDA");
  free (err);
  err = NULL;
  CHECK (gpunet_backend_find (GPUNET_BACKEND_AUTO, &err) == NULL);
  CHECK_CONTAINS (err, "auto");
  CHECK (gpunet_backend_find ((gpunet_backend_kind) 42, &err) == NULL);
  CHECK_CONTAINS (err, "backend kind 42");
  free (err);
}

static void
test_sessions (void)
{
  char arch[1024], ckpt[1024];
  snprintf (arch, sizeof arch, "%s/fixtures/tiny-a.json", check_data_dir ());
  snprintf (ckpt, sizeof ckpt, "%s/fixtures/tiny-a/tiny-a.pth.tar", check_data_dir ());
  gpunet_model *m = NULL;
  char *err = NULL;
  CHECK_MSG (gpunet_model_load (arch, ckpt, &m, &err) == GPUNET_OK, "%s", err ? err : "?");
  free (err);
  err = NULL;
  if (!m)
    return;

  const struct { gpunet_backend_kind kind; const char *name; } want[] = {
    {GPUNET_BACKEND_CPU_REF, "cpu-ref"},
#ifdef GPUNET_HAVE_ONEDNN
    {GPUNET_BACKEND_CPU, "cpu"},
#endif
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    gpunet_session_params p;
    gpunet_session_params_init (&p);
    p.backend = want[i].kind;
    gpunet_session *s = NULL;
    CHECK_MSG (gpunet_session_new (m, &p, &s, &err) == GPUNET_OK, "%s", err ? err : "?");
    if (s)
      CHECK_MSG (!strcmp (gpunet_session_backend_name (s), want[i].name), "%s runs on %s",
          want[i].name, gpunet_session_backend_name (s));
    gpunet_session_free (s);
  }

  /* auto: CUDA, else the fast CPU backend, never the oracle */
  gpunet_session_params p;
  gpunet_session_params_init (&p);
  gpunet_session *s = NULL;
  CHECK_MSG (gpunet_session_new (m, &p, &s, &err) == GPUNET_OK, "%s", err ? err : "?");
  if (s)
    CHECK (strcmp (gpunet_session_backend_name (s), "cpu-ref") != 0
        || gpunet_backend_find (GPUNET_BACKEND_CPU, NULL) == &gpunet_backend_cpu_ref);
  gpunet_session_free (s);

  p.backend = (gpunet_backend_kind) 42;
  s = NULL;
  CHECK (gpunet_session_new (m, &p, &s, &err) == GPUNET_ERR_INVALID_ARGUMENT && !s);
  CHECK_CONTAINS (err, "backend kind 42");
  free (err);
  err = NULL;

  /* a thread count past any machine: refused with a sentence, not a per-thread
   * scratch of tens of GB that fails as "out of memory" */
  gpunet_session_params_init (&p);
  p.backend = GPUNET_BACKEND_CPU;
  p.n_threads = 99999;
  s = NULL;
  CHECK (gpunet_session_new (m, &p, &s, &err) == GPUNET_ERR_INVALID_ARGUMENT && !s);
  CHECK_CONTAINS (err, "n_threads 99999");
  CHECK_CONTAINS (err, "1024");
  free (err);
  gpunet_model_unref (m);
}

static void
test_cuda_options (void)
{
  gpunet_cuda_options o = { 0 };
  char *err = NULL;
  CHECK (o.graphs == GPUNET_CUDA_GRAPHS_ON && o.dwconv == GPUNET_CUDA_DW_AUTO);
  CHECK (gpunet_cuda_options_parse (&o, "graphs=off,dwconv=direct", "--x", &err) == GPUNET_OK
      && o.graphs == GPUNET_CUDA_GRAPHS_OFF && o.dwconv == GPUNET_CUDA_DW_DIRECT);
  CHECK (gpunet_cuda_options_parse (&o, "dwconv=auto", "--x", &err) == GPUNET_OK
      && o.graphs == GPUNET_CUDA_GRAPHS_OFF && o.dwconv == GPUNET_CUDA_DW_AUTO);
  CHECK (gpunet_cuda_options_parse (&o, "graphs=on", "--x", &err) == GPUNET_OK
      && o.graphs == GPUNET_CUDA_GRAPHS_ON);
  CHECK (o.nhwc_pad == GPUNET_CUDA_NHWC_PAD_OFF);
  CHECK (gpunet_cuda_options_parse (&o, "nhwcpad=on", "--x", &err) == GPUNET_OK
      && o.nhwc_pad == GPUNET_CUDA_NHWC_PAD_ON && o.graphs == GPUNET_CUDA_GRAPHS_ON);
  CHECK (gpunet_cuda_options_parse (&o, "nhwcpad=off", "--x", &err) == GPUNET_OK
      && o.nhwc_pad == GPUNET_CUDA_NHWC_PAD_OFF);
  CHECK (o.nhwc_strip == GPUNET_CUDA_NHWC_STRIP_64);
  CHECK (gpunet_cuda_options_parse (&o, "nhwcstrip=fill,nhwcpad=on", "--x", &err) == GPUNET_OK
      && o.nhwc_strip == GPUNET_CUDA_NHWC_STRIP_FILL && o.nhwc_pad == GPUNET_CUDA_NHWC_PAD_ON);
  CHECK (gpunet_cuda_options_parse (&o, "nhwcstrip=64,nhwcpad=off", "--x", &err) == GPUNET_OK
      && o.nhwc_strip == GPUNET_CUDA_NHWC_STRIP_64 && o.nhwc_pad == GPUNET_CUDA_NHWC_PAD_OFF);
  CHECK (o.pdl == GPUNET_CUDA_PDL_OFF);
  CHECK (gpunet_cuda_options_parse (&o, "pdl=on", "--x", &err) == GPUNET_OK
      && o.pdl == GPUNET_CUDA_PDL_ON && o.nhwc_strip == GPUNET_CUDA_NHWC_STRIP_64);
  CHECK (gpunet_cuda_options_parse (&o, "pdl=off", "--x", &err) == GPUNET_OK
      && o.pdl == GPUNET_CUDA_PDL_OFF);
  CHECK (o.nhwc_tune == GPUNET_CUDA_NHWC_TUNE_OFF);
  CHECK (gpunet_cuda_options_parse (&o, "nhwctune=on", "--x", &err) == GPUNET_OK
      && o.nhwc_tune == GPUNET_CUDA_NHWC_TUNE_ON && o.pdl == GPUNET_CUDA_PDL_OFF);
  CHECK (gpunet_cuda_options_parse (&o, "nhwctune=off", "--x", &err) == GPUNET_OK
      && o.nhwc_tune == GPUNET_CUDA_NHWC_TUNE_OFF);
  CHECK (gpunet_cuda_options_parse (&o, "nhwcpad=8", "--x", &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "nhwcpad=on");
  free (err);
  err = NULL;
  CHECK (gpunet_cuda_options_parse (&o, NULL, "--x", &err) == GPUNET_OK
      && gpunet_cuda_options_parse (&o, "", "--x", &err) == GPUNET_OK && o.graphs == 0);
  /* a bad pair: a sentence naming it, the options unchanged */
  o.dwconv = GPUNET_CUDA_DW_DIRECT;
  CHECK (gpunet_cuda_options_parse (&o, "dwconv=auto,graphs=0", "GPUNET_CUDA", &err)
      == GPUNET_ERR_INVALID_ARGUMENT && o.dwconv == GPUNET_CUDA_DW_DIRECT);
  CHECK_CONTAINS (err, "'graphs=0'");
  CHECK_CONTAINS (err, "graphs=off");
  free (err);
  err = NULL;
  /* the session reads GPUNET_CUDA: a malformed value fails it, on any backend */
  char arch[1024], ckpt[1024];
  snprintf (arch, sizeof arch, "%s/fixtures/tiny-a.json", check_data_dir ());
  snprintf (ckpt, sizeof ckpt, "%s/fixtures/tiny-a/tiny-a.pth.tar", check_data_dir ());
  gpunet_model *m = NULL;
  if (gpunet_model_load (arch, ckpt, &m, &err) != GPUNET_OK) {
    CHECK_MSG (0, "%s", err ? err : "?");
    free (err);
    return;
  }
  gpunet_session_params p;
  gpunet_session_params_init (&p);
  p.backend = GPUNET_BACKEND_CPU_REF;
  gpunet_session *s = NULL;
  setenv ("GPUNET_CUDA", "graphs=maybe", 1);
  CHECK (gpunet_session_new (m, &p, &s, &err) == GPUNET_ERR_INVALID_ARGUMENT && !s);
  CHECK_CONTAINS (err, "environment variable GPUNET_CUDA");
  free (err);
  err = NULL;
  setenv ("GPUNET_CUDA", "graphs=off", 1);
  CHECK_MSG (gpunet_session_new (m, &p, &s, &err) == GPUNET_OK, "%s", err ? err : "?");
  gpunet_session_free (s);
  unsetenv ("GPUNET_CUDA");
  gpunet_model_unref (m);
}

int
main (void)
{
  test_names ();
  test_find ();
  test_sessions ();
  test_cuda_options ();
  return check_report ();
}
