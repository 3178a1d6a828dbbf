/* check.h: the tiny assertion helpers shared by the engine's unit tests.  Each test
 * program counts checks, prints every failure with file and line, ends with the line
 * "N passed, N failed" and returns non-zero when anything failed. */
#ifndef GPUNET_TEST_CHECK_H
#define GPUNET_TEST_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/common/cpu_paths.h"

static int check_passed_, check_failed_;

#define CHECK(cond) do { \
    if (cond) check_passed_++; \
    else { check_failed_++; fprintf (stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); } \
  } while (0)

#define CHECK_MSG(cond, ...) do { \
    if (cond) check_passed_++; \
    else { check_failed_++; fprintf (stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond); \
      fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); } \
  } while (0)

/* Passes when `text` is non-NULL and contains `needle`. */
#define CHECK_CONTAINS(text, needle) \
  CHECK_MSG ((text) && strstr ((text), (needle)), "'%s' does not contain '%s'", \
      (text) ? (text) : "(null)", (needle))

/* The CPU code paths (kernels/common/cpu_paths.h bits) this program ran, each beside a
 * reference it was compared with, and those it would have run on a CPU that has them.
 * check_report prints them, when any, as one line scripts/test-summary.py reads:
 *   isa-paths: ran=portable,avx512 not-run=avx2 */
static unsigned check_paths_ran_, check_paths_not_run_;

static inline void
check_paths_ran (unsigned paths)
{
  check_paths_ran_ |= paths;
}

static inline void
check_paths_not_run (unsigned paths)
{
  check_paths_not_run_ |= paths;
}

static inline void
check_paths_print_ (const char *key, unsigned paths)
{
  static const char *const names[] = { "portable", "avx2", "avx512" };
  printf (" %s=", key);
  const char *sep = "";
  for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
    if (paths & (1u << i)) {
      printf ("%s%s", sep, names[i]);
      sep = ",";
    }
}

static inline int
check_report (void)
{
  if (check_paths_ran_ | check_paths_not_run_) {
    printf ("isa-paths:");
    check_paths_print_ ("ran", check_paths_ran_);
    check_paths_print_ ("not-run", check_paths_not_run_ & ~check_paths_ran_);
    printf ("\n");
  }
  printf ("%d passed, %d failed\n", check_passed_, check_failed_);
  return check_failed_ ? 1 : 0;
}

/* A deterministic xorshift stream of floats uniform in [-1, 1); check_rng_seed
 * restarts it (each program picks its seed once, at the start). */
static uint64_t check_rng_state_ = 0x9e3779b97f4a7c15ull;

static inline void
check_rng_seed (uint64_t seed)
{
  check_rng_state_ = seed;
}

static inline float
check_frand (void)
{
  check_rng_state_ ^= check_rng_state_ << 13;
  check_rng_state_ ^= check_rng_state_ >> 7;
  check_rng_state_ ^= check_rng_state_ << 17;
  return (float) ((check_rng_state_ >> 40) / (double) (1ull << 24)) * 2.0f - 1.0f;
}

/* n values of check_frand in a malloc()ed array (NULL when out of memory). */
static inline float *
check_frand_array (size_t n)
{
  float *a = malloc ((n ? n : 1) * sizeof (float));
  for (size_t i = 0; a && i < n; i++)
    a[i] = check_frand ();
  return a;
}

/* max |a - b| / max(max |b|, 1e-6); NaN differences count as the largest. */
static inline double
check_rel_err (const float *a, const float *b, size_t n)
{
  double diff = 0.0, scale = 1e-6;
  for (size_t i = 0; i < n; i++) {
    double d = fabs ((double) a[i] - b[i]);
    if (d > diff || isnan (d))
      diff = d;
    if (fabs (b[i]) > scale)
      scale = fabs (b[i]);
  }
  return diff / scale;
}

/* The directory holding test data: $GPUNET_TEST_DATA or the compiled-in default. */
static inline const char *
check_data_dir (void)
{
  const char *d = getenv ("GPUNET_TEST_DATA");
#ifdef GPUNET_TEST_DATA_DIR
  if (!d)
    d = GPUNET_TEST_DATA_DIR;
#endif
  return d ? d : "tests/data";
}

/* 1 where the test runs under an instruction emulator (GPUNET_TEST_EMULATED=1, as
 * scripts/test-emulated-cpu.sh sets it): QEMU's user mode runs vector floating point
 * 100 to 1000 times slower than the CPU, so a test there keeps every code path and
 * every ISA form but leaves out its largest repetitions of one (an HD frame where smaller
 * frames reach the same code, say).  The native runs still do them all. */
static inline int
check_emulated (void)
{
  const char *e = getenv ("GPUNET_TEST_EMULATED");
  return e && *e && strcmp (e, "0") != 0;
}

/* Reads a whole file into malloc()ed memory; NULL on failure. */
static inline void *
check_read_file (const char *path, size_t *size)
{
  FILE *f = fopen (path, "rb");
  if (!f)
    return NULL;
  fseek (f, 0, SEEK_END);
  long n = ftell (f);
  fseek (f, 0, SEEK_SET);
  void *buf = malloc (n > 0 ? (size_t) n : 1);
  if (buf && n > 0 && fread (buf, 1, (size_t) n, f) != (size_t) n) {
    free (buf);
    buf = NULL;
  }
  fclose (f);
  if (buf && size)
    *size = (size_t) n;
  return buf;
}

#endif
