/* cpu_module.c: the entry points of libgpunet-cpu.so, the fast CPU backend as a module
 * (cpu_module.h): the backend table after an ABI check, and what gpunet-bench measures on
 * the module's oneDNN and OpenMP threads besides the network. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <oneapi/dnnl/dnnl.h>

#include "backend_onednn.h"
#include "cpu_module.h"
#include "kernel_error.h"

#define EXPORT __attribute__ ((visibility ("default")))

EXPORT const gpunet_backend *gpunet_cpu_backend_entry (int abi_version, size_t op_size,
    char **why);
EXPORT const gpunet_cpu_bench_api *gpunet_cpu_bench_entry (int abi_version);

const gpunet_backend *
gpunet_cpu_backend_entry (int abi_version, size_t op_size, char **why)
{
  if (abi_version != GPUNET_CPU_ABI_VERSION || op_size != sizeof (gpunet_op)) {
    gpunet_fail (why, GPUNET_ERR_BACKEND_UNAVAILABLE, "the CPU module was built for "
        "another engine (ABI %d, op size %zu; the engine has ABI %d, op size %zu): install "
        "the module of the same build", GPUNET_CPU_ABI_VERSION, sizeof (gpunet_op),
        abi_version, op_size);
    return NULL;
  }
  return &gpunet_backend_cpu_fast;
}

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static double
sgemm_gflops (int threads)
{
  const int n = 2048;
  float *a = malloc (sizeof (float) * n * n), *b = malloc (sizeof (float) * n * n);
  float *c = malloc (sizeof (float) * n * n);
  double best = 0.0;
  if (a && b && c) {
    for (long i = 0; i < (long) n * n; i++) {
      a[i] = (float) (i % 7) * 0.1f;
      b[i] = (float) (i % 5) * 0.1f;
    }
    const int saved = omp_get_max_threads ();
    omp_set_num_threads (threads);
    for (int r = 0; r < 4; r++) {
      double t0 = now_s ();
      if (dnnl_sgemm ('N', 'N', n, n, n, 1.0f, a, n, b, n, 0.0f, c, n) != dnnl_success)
        break;
      double gf = 2.0 * n * n * (double) n / (now_s () - t0) / 1e9;
      if (r > 0 && gf > best)   /* the first run warms up */
        best = gf;
    }
    omp_set_num_threads (saved);
  }
  free (a);
  free (b);
  free (c);
  return best;
}

/* Nanoseconds per line for thread 0 of a 2-thread OpenMP team to overwrite `lines`
 * 64-byte lines of buf (64-byte aligned) that thread 1 has just read (other_reads 1), or
 * that nobody else has (0); -1 when fewer than two threads run. */
static double
write_lines_ns (unsigned char *buf, int lines, int other_reads)
{
  double dt = 0.0;
  int team = 0;
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num ();
    if (t == 0) {
      team = omp_get_num_threads ();
      memset (buf, 0, (size_t) lines * 64);
    }
#pragma omp barrier
    if (t == 1 && other_reads) {
      const volatile unsigned char *vb = buf;   /* every line read, whatever the compiler knows */
      unsigned sum = 0;
      for (int l = 0; l < lines; l++)
        sum += vb[(size_t) l * 64];
      if (sum != 0)
        buf[0] = (unsigned char) sum;   /* never: the lines hold zeros */
    }
#pragma omp barrier
    if (t == 0) {
      const double t0 = omp_get_wtime ();
      memset (buf, 1, (size_t) lines * 64);
      __sync_synchronize ();   /* the stores done, not only issued */
      dt = omp_get_wtime () - t0;
    }
  }
  return team >= 2 ? dt * 1e9 / lines : -1.0;
}

/* 512 KB written whole (beyond the store buffer, within L2), minimum of 9 tries */
static void
cross_core_write_ns (double *shared_ns, double *own_ns)
{
  *shared_ns = *own_ns = -1.0;
  enum { LINES = 8192 };
  unsigned char *buf = aligned_alloc (64, (size_t) LINES * 64);
  for (int pass = 0; buf && pass < 2; pass++) {
    double best = -1.0;
    for (int rep = 0; rep < 9; rep++) {
      const double ns = write_lines_ns (buf, LINES, pass == 0);
      if (best < 0 || ns < best)
        best = ns;
    }
    *(pass == 0 ? shared_ns : own_ns) = best;
  }
  free (buf);
}

static const gpunet_cpu_bench_api bench_api = {
  gpunet_onednn_profile, sgemm_gflops, cross_core_write_ns, gpunet_onednn_cpu_paths,
  gpunet_onednn_op_impl,
};

const gpunet_cpu_bench_api *
gpunet_cpu_bench_entry (int abi_version)
{
  return abi_version == GPUNET_CPU_ABI_VERSION ? &bench_api : NULL;
}
