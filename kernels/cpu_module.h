/* cpu_module.h: the fast CPU backend as a module (libgpunet-cpu.so: oneDNN, OpenMP and our
 * kernels), opened at run time by cpu_loader.c so that the OpenMP runtime (libgomp) starts
 * only after the engine has chosen how its idle threads wait (docs/performance.md,
 * "Threads under contention").  Plain C; shared by the loader and the module. */
#ifndef GPUNET_CPU_MODULE_H
#define GPUNET_CPU_MODULE_H

#include <stddef.h>

#include "backend.h"

/* Bumped whenever backend.h, gpunet-types.h's plan parameters or this header change
 * incompatibly; a module of another version is refused, not run. */
#define GPUNET_CPU_ABI_VERSION 2   /* 2: gpunet_plan_params.int8 */

#define GPUNET_CPU_MODULE_NAME "libgpunet-cpu.so"

/* The module's entry: the backend, or NULL with a sentence in *why (malloc'd). */
#define GPUNET_CPU_ENTRY_SYMBOL "gpunet_cpu_backend_entry"
typedef const gpunet_backend *(*gpunet_cpu_entry_func) (int abi_version, size_t op_size,
    char **why);

/* What gpunet-bench (and tests) measure besides the network, inside the module because it runs on
 * oneDNN and on the module's OpenMP threads. */
typedef struct {
  /* gpunet_onednn_profile of backend_onednn.h */
  void (*profile) (void *state, double *op_seconds);
  /* median GFLOP/s of a 2048^3 oneDNN sgemm on `threads` threads; <= 0 when it failed */
  double (*sgemm_gflops) (int threads);
  /* ns per 64-byte line for one OpenMP thread to overwrite lines another has just read
   * (*shared_ns) or nobody else has (*own_ns); -1 with fewer than two threads */
  void (*cross_core_write_ns) (double *shared_ns, double *own_ns);
  /* tests: gpunet_onednn_cpu_paths and gpunet_onednn_op_impl of backend_onednn.h */
  unsigned (*cpu_paths) (const void *state);
  int (*op_impl) (const void *state, int op);
} gpunet_cpu_bench_api;
#define GPUNET_CPU_BENCH_SYMBOL "gpunet_cpu_bench_entry"
typedef const gpunet_cpu_bench_api *(*gpunet_cpu_bench_func) (int abi_version);

/* ---- the loader (cpu_loader.c, in the engine) ---- */

/* How the OpenMP threads of the module wait at the end of a parallel region
 * (gpunet_cpu_options.wait); the first session's choice holds for the process. */
void gpunet_cpu_module_request_wait (int wait);

/* The fast CPU backend, loading the module once per process; NULL with a sentence. */
const gpunet_backend *gpunet_backend_cpu_get (char **error_text);

/* gpunet-bench's measurements; NULL with a sentence when the module is missing. */
const gpunet_cpu_bench_api *gpunet_cpu_bench_api_get (char **error_text);

/* One sentence saying how the module's OpenMP threads wait and why (what the engine set,
 * the user's environment, or libgomp loaded before the engine so nothing could be set);
 * NULL before the module is loaded.  Owned by the loader, valid for the process. */
const char *gpunet_cpu_module_wait_note (int *is_warning);

#endif
