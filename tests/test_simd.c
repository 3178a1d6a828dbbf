/* test_simd.c: the vector maths every kernel of the fast CPU path shares (simd_begin.h's
 * operations, simd_act.h's 2^z and activations), in each instruction-set form this CPU
 * runs (AVX-512F, AVX2 + FMA: they differ in V_LDEXP, the swish's division and its
 * clamping), against double precision on dense sweeps: 2^z over [-125, 125], the swish
 * over [-100, 100] and beyond, ReLU and identity exactly.  The bounds are the accuracy
 * simd_act.h states, with a little room.  Exit 77 where the CPU runs neither form. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "activation.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

/* y = f(x) for n floats (n a multiple of 16, both 64-byte aligned), f: simd_exp2 for
 * act -1, else simd_act (act) */
#define SIMD_WIDTH 16
#include "onednn/simd_begin.h"
static void
FN (apply) (const float *x, float *y, size_t n, int act)
{
  for (size_t i = 0; i < n; i += VW)
    V_STORE (y + i, act < 0 ? FN (simd_exp2) (V_LOAD (x + i)) : FN (simd_act) (V_LOAD (x + i), act));
}
#include "onednn/simd_end.h"

#define SIMD_WIDTH 8
#include "onednn/simd_begin.h"
static void
FN (apply) (const float *x, float *y, size_t n, int act)
{
  for (size_t i = 0; i < n; i += VW)
    V_STORE (y + i, act < 0 ? FN (simd_exp2) (V_LOAD (x + i)) : FN (simd_act) (V_LOAD (x + i), act));
}
#include "onednn/simd_end.h"

typedef void (*apply_fn) (const float *, float *, size_t, int);

#define SWEEP 4096   /* points per unit of x or z */

static double
swish (double x)
{
  return x / (1.0 + exp (-x));
}

/* One instruction-set form against double precision */
static void
test_form (const char *name, apply_fn apply)
{
  const size_t n = (size_t) 250 * SWEEP;
  float *x = aligned_alloc (64, n * sizeof (float)), *y = aligned_alloc (64, n * sizeof (float));
  if (!x || !y) {
    CHECK_MSG (0, "%s: out of memory", name);
    free (x);
    free (y);
    return;
  }
  /* 2^z, z in [-125, 125): the polynomial's 7.5e-8 and a few roundings (measured 2.3e-7
   * in both forms) */
  for (size_t i = 0; i < n; i++)
    x[i] = -125.0f + (float) i / SWEEP;
  apply (x, y, n, -1);
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    const double want = exp2 ((double) x[i]), e = fabs (y[i] - want) / want;
    worst = e <= worst ? worst : isnan (e) ? INFINITY : e;
  }
  CHECK_MSG (worst <= 3e-7, "%s: 2^z relative error %.3g over [-125, 125]", name, worst);
  printf ("%s: 2^z relative error %.3g\n", name, worst);

  /* the swish over [-125, 125): relative error about 6e-8 |x log2 e| (simd_act.h: 6.3e-7
   * over [-10, 10], 3.7e-6 where 2^z is not clamped; measured 5.7e-7 / 6.0e-7 and 3.9e-6);
   * below x = -86.6 the exponent is clamped at 125 and the result is x 2^-125 or less in
   * size (the true value is smaller still); from 88 on, x within an ulp (AVX-512: x
   * itself; AVX2's reciprocal of 1 after its Newton step may be an ulp below) */
  apply (x, y, n, GPUNET_EPI_SWISH);
  double w10 = 0.0, w86 = 0.0;
  int clamped_ok = 1, large_ok = 1;
  for (size_t i = 0; i < n; i++) {
    const double xv = x[i], want = swish (xv), d = fabs (y[i] - want);
    const double e = want != 0.0 ? d / fabs (want) : d;
    if (fabs (xv) <= 10.0)
      w10 = e <= w10 ? w10 : isnan (e) ? INFINITY : e;
    if (xv >= -86.5)
      w86 = e <= w86 ? w86 : isnan (e) ? INFINITY : e;
    else if (!(y[i] <= 0.0f && fabs (y[i]) <= -xv * 0x1p-124))
      clamped_ok = 0;
    if (xv >= 88.0 && !(fabs (y[i] - xv) <= 0x1p-23 * xv))
      large_ok = 0;
  }
  CHECK_MSG (w10 <= 8e-7, "%s: swish relative error %.3g over [-10, 10]", name, w10);
  CHECK_MSG (w86 <= 5e-6, "%s: swish relative error %.3g over [-86.5, 125]", name, w86);
  CHECK_MSG (clamped_ok, "%s: swish below -86.5 is not a tiny non-positive value", name);
  CHECK_MSG (large_ok, "%s: swish from 88 on is not x within an ulp", name);
  printf ("%s: swish relative error %.3g over [-10, 10], %.3g over [-86.5, 125]\n", name, w10,
      w86);

  /* far out: x for large x, a tiny non-positive value for very negative x; signed zeros
   * and the smallest denormals stay zero-sized */
  static const float far[16] = { 1e3f, 1e30f, 3.4e38f, 200.0f, -200.0f, -1e3f, -1e30f, -3.4e38f,
    0.0f, -0.0f, 1e-30f, -1e-30f, 1e-45f, -1e-45f, 1e-10f, -1e-10f };
  for (int i = 0; i < 16; i++)
    x[i] = far[i];
  apply (x, y, 16, GPUNET_EPI_SWISH);
  for (int i = 0; i < 16; i++) {
    const double xv = far[i];
    const int ok = xv > 100.0 ? fabs (y[i] - xv) <= 0x1p-23 * xv
        : xv < -100.0 ? y[i] <= 0.0f && fabs (y[i]) <= -xv * 0x1p-124
        : fabs (y[i] - swish (xv)) <= 1e-6 * fabs (xv) + 0x1p-149;
    CHECK_MSG (ok, "%s: swish (%g) = %g", name, xv, y[i]);
  }

  /* ReLU and no activation: exact */
  for (size_t i = 0; i < n; i++)
    x[i] = -125.0f + (float) i / SWEEP;
  apply (x, y, n, GPUNET_EPI_RELU);
  int relu_ok = 1;
  for (size_t i = 0; i < n; i++)
    relu_ok &= y[i] == (x[i] > 0.0f ? x[i] : 0.0f);
  CHECK_MSG (relu_ok, "%s: ReLU differs from max (x, 0)", name);
  apply (x, y, n, GPUNET_EPI_NONE);
  int none_ok = 1;
  for (size_t i = 0; i < n; i++)
    none_ok &= y[i] == x[i];
  CHECK_MSG (none_ok, "%s: no activation changed a value", name);
  free (x);
  free (y);
}

int
main (void)
{
  __builtin_cpu_init ();
  if (__builtin_cpu_supports ("avx512f")) {
    test_form ("AVX-512", apply_avx512);
    check_paths_ran (GPUNET_CPU_PATH_AVX512);
  } else {
    printf ("# AVX-512 form: this CPU has no AVX-512F, not run\n");
    check_paths_not_run (GPUNET_CPU_PATH_AVX512);
  }
  if (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma")) {
    test_form ("AVX2", apply_avx2);
    check_paths_ran (GPUNET_CPU_PATH_AVX2);
  } else {
    printf ("# AVX2 form: this CPU has no AVX2 + FMA, not run\n");
    check_paths_not_run (GPUNET_CPU_PATH_AVX2);
  }
  const int status = check_report ();
  return status ? status : check_paths_ran_ ? 0 : 77;
}

#else /* no vector forms on this compiler or CPU family */

int
main (void)
{
  printf ("# the vector forms are x86 with GCC only: skipped\n");
  return 77;
}

#endif
