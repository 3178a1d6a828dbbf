/* gpunet-vnni-peak.c: gpunet-bench's int8 reference: the int8 multiply-accumulates per
 * second this CPU's AVX-512 VNNI instruction (VPDPBUSD, 64 u8 x s8 products per 512-bit
 * instruction) sustains on `threads` threads, each running twelve independent
 * accumulator chains, so latency does not limit it.  0 where the CPU lacks it. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "gpunet-vnni-peak.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ITERS 2000000

__attribute__((target ("avx512f,avx512vnni")))
static void *
chains (void *out)
{
  __m512i acc[12];
  const __m512i a = _mm512_set1_epi8 (3), b = _mm512_set1_epi8 (-2);
  for (int i = 0; i < 12; i++)
    acc[i] = _mm512_setzero_si512 ();
  for (long it = 0; it < ITERS; it++)
    for (int i = 0; i < 12; i++)
      acc[i] = _mm512_dpbusd_epi32 (acc[i], a, b);
  __m512i s = acc[0];
  for (int i = 1; i < 12; i++)
    s = _mm512_add_epi32 (s, acc[i]);
  *(int32_t *) out = _mm512_reduce_add_epi32 (s);   /* keeps the loop */
  return NULL;
}

static double
now_s (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

double
gpunet_vnni_peak_gmacs (int threads)
{
  if (!__builtin_cpu_supports ("avx512vnni") || threads < 1 || threads > 64)
    return 0.0;
  pthread_t th[64];
  int32_t sink[64];
  double best = 0.0;
  for (int round = 0; round < 3; round++) {   /* the best of three: others share the cores */
    const double t0 = now_s ();
    int started = 0;
    for (int t = 0; t < threads; t++)
      started += pthread_create (&th[t], NULL, chains, &sink[t]) == 0;
    for (int t = 0; t < started; t++)
      pthread_join (th[t], NULL);
    const double macs = (double) started * ITERS * 12 * 64;
    const double g = macs / (now_s () - t0) / 1e9;
    best = g > best ? g : best;
  }
  return best;
}
#else
double
gpunet_vnni_peak_gmacs (int threads)
{
  (void) threads;
  return 0.0;
}
#endif
