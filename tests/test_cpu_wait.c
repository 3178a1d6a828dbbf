/* test_cpu_wait.c: how the fast CPU backend's OpenMP threads wait (gpunet_cpu_options.wait,
 * kernels/cpu_loader.c), checked in libgomp itself: OMP_DISPLAY_ENV=VERBOSE makes libgomp
 * print the wait policy and spin count it read when it was loaded, which happens when the
 * first CPU session opens libgpunet-cpu.so.  This program links neither libgomp nor
 * oneDNN; one mode per process (libgomp reads its environment once):
 *   auto       the engine's bounded spin (GOMP_SPINCOUNT set for the load, unset after)
 *   passive    wait=passive
 *   env        the user's GOMP_SPINCOUNT wins over wait=passive
 *   preloaded  libgomp loaded before the engine: nothing set, a warning sentence */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gpunet.h"

/* Creates one CPU session with `wait` on the tiny fixture; returns what libgomp (and
 * anything else) wrote to stderr meanwhile. */
static char *
session_stderr (int wait)
{
  FILE *capture = tmpfile ();   /* anonymous: gone when closed */
  CHECK (capture != NULL);
  if (!capture)
    return NULL;
  int fd = dup (fileno (capture));
  fclose (capture);
  CHECK (fd >= 0);
  if (fd < 0)
    return NULL;
  fflush (stderr);
  int saved = dup (2);
  dup2 (fd, 2);

  char *err = NULL;
  gpunet_model *m = NULL;
  gpunet_status st = gpunet_model_new_random (GPUNET_TEST_DATA_DIR "/fixtures/tiny-a.json", 1,
      &m, &err);
  gpunet_session *s = NULL;
  if (st == GPUNET_OK) {
    gpunet_session_params p;
    gpunet_session_params_init (&p);
    p.backend = GPUNET_BACKEND_CPU;
    p.n_threads = 2;
    p.cpu.wait = wait;
    st = gpunet_session_new (m, &p, &s, &err);
  }
  fflush (stderr);
  dup2 (saved, 2);
  close (saved);
  CHECK_MSG (st == GPUNET_OK, "session: %s", err ? err : gpunet_status_string (st));
  if (s)
    CHECK (strcmp (gpunet_session_backend_name (s), "cpu") == 0);
  gpunet_session_free (s);
  gpunet_model_unref (m);
  free (err);

  off_t len = lseek (fd, 0, SEEK_END);
  char *text = calloc (1, (size_t) (len > 0 ? len : 0) + 1);
  if (text && len > 0)
    CHECK (pread (fd, text, (size_t) len, 0) == len);
  close (fd);
  return text;
}

int
main (int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "auto";
  /* the suite's own setup sets OMP_WAIT_POLICY=passive; each mode sets what it tests */
  unsetenv ("OMP_WAIT_POLICY");
  unsetenv ("GOMP_SPINCOUNT");
  setenv ("OMP_DISPLAY_ENV", "VERBOSE", 1);
  int warning = -1;
#ifdef GPUNET_ONEDNN_PRELOADED
  if (strcmp (mode, "preloaded") != 0) {
    printf ("skipped: this sanitizer build links oneDNN and libgomp at start (LeakSanitizer "
        "crashes on a dlopen'd libdnnl), so the engine cannot set libgomp's wait\n");
    return 77;
  }
#endif

  void *gomp = dlopen ("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
#ifndef GPUNET_ONEDNN_PRELOADED
  CHECK_MSG (gomp == NULL, "libgomp is loaded before any CPU session: the engine links it");
#endif
  CHECK (gpunet_cpu_wait_note (NULL) == NULL);

  char *text = NULL;
  const char *note;
  if (!strcmp (mode, "auto")) {
    text = session_stderr (GPUNET_CPU_WAIT_AUTO);
    CHECK_CONTAINS (text, "GOMP_SPINCOUNT = '10000'");
    CHECK_MSG (!strstr (text, "OMP_WAIT_POLICY = 'ACTIVE'"), "libgomp read an active policy");
    note = gpunet_cpu_wait_note (&warning);
    CHECK_CONTAINS (note, "GOMP_SPINCOUNT=10000");
    CHECK (warning == 0);
  } else if (!strcmp (mode, "passive")) {
    text = session_stderr (GPUNET_CPU_WAIT_PASSIVE);
    CHECK_CONTAINS (text, "OMP_WAIT_POLICY = 'PASSIVE'");
    CHECK_CONTAINS (text, "GOMP_SPINCOUNT = '0'");
    note = gpunet_cpu_wait_note (&warning);
    CHECK_CONTAINS (note, "wait=passive");
    CHECK (warning == 0);
  } else if (!strcmp (mode, "env")) {
    setenv ("GOMP_SPINCOUNT", "777", 1);
    text = session_stderr (GPUNET_CPU_WAIT_PASSIVE);
    CHECK_CONTAINS (text, "GOMP_SPINCOUNT = '777'");
    note = gpunet_cpu_wait_note (&warning);
    CHECK_CONTAINS (note, "GOMP_SPINCOUNT=777");
    CHECK_CONTAINS (note, "wait=passive not applied");
    CHECK (warning == 0);
    CHECK (getenv ("GOMP_SPINCOUNT") && !strcmp (getenv ("GOMP_SPINCOUNT"), "777"));
  } else if (!strcmp (mode, "preloaded")) {
    unsetenv ("OMP_DISPLAY_ENV");
    gomp = dlopen ("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL);
    CHECK_MSG (gomp != NULL, "cannot load libgomp.so.1: %s", dlerror ());
    text = session_stderr (GPUNET_CPU_WAIT_AUTO);
    note = gpunet_cpu_wait_note (&warning);
    CHECK_CONTAINS (note, "libgomp was loaded before the CPU backend");
    CHECK_CONTAINS (note, "OMP_WAIT_POLICY=PASSIVE");
    CHECK (warning == 1);
  } else {
    fprintf (stderr, "test_cpu_wait: unknown mode '%s' (auto, passive, env, preloaded)\n",
        mode);
    return 2;
  }
  if (strcmp (mode, "env"))
    CHECK_MSG (getenv ("GOMP_SPINCOUNT") == NULL && getenv ("OMP_WAIT_POLICY") == NULL,
        "the engine left the wait setting in the environment");
  free (text);
  printf ("%d passed, %d failed\n", check_passed_, check_failed_);
  return check_failed_ ? 1 : 0;
}
