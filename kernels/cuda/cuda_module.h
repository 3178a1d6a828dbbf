/* cuda_module.h: the contract between the engine and the separately built CUDA module
 * libgpunet-cuda.so (opened with dlopen by kernels/cuda_loader.c so that hosts without
 * the CUDA libraries still load the engine): exported symbol names, their types, the
 * ABI check, and the loader functions the self-test uses.  Plain C, no CUDA headers. */
#ifndef GPUNET_CUDA_MODULE_H
#define GPUNET_CUDA_MODULE_H

#include <stddef.h>

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUNET_CUDA_MODULE_NAME "libgpunet-cuda.so"

/* Bump when gpunet-types.h, backend.h, graph.h, ops.h or this header change
 * incompatibly; the public gpunet.h is not part of the module's ABI. */
#define GPUNET_CUDA_ABI_VERSION 18  /* 2: backend.h gained classify_device; 3: set_precision;
                                     * 4: classify_host and the bench API;
                                     * 5: the bench API's forward_time;
                                     * 6: classify_device/_host take one plan per image;
                                     * 7: gpunet_session_params.cuda_fused;
                                     * 8: gpunet_session_params.cuda_context;
                                     * 9: the bench API's net_time and graph_nodes;
                                     * 10: gpunet_session_params.cuda, the op API's
                                     * set_cuda_options;
                                     * 11: plan() takes gpunet_plan_params
                                     * (gpunet-types.h), no longer the public
                                     * gpunet_session_params;
                                     * 12: gpunet_cpu_options.wait;
                                     * 13: gpunet_plan_params.int8;
                                     * 14: gpunet_cuda_options.nhwc_pad;
                                     * 15: gpunet_cuda_options.nhwc_strip;
                                     * 16: gpunet_image.cuda_ready;
                                     * 17: gpunet_cuda_options.pdl;
                                     * 18: gpunet_cuda_options.nhwc_tune */

/* The module's main entry: the backend table, or NULL with a sentence.  The engine passes
 * its ABI version and sizeof (gpunet_op) so a stale module is refused, not run. */
#define GPUNET_CUDA_ENTRY_SYMBOL "gpunet_cuda_backend_entry"
typedef const gpunet_backend *(*gpunet_cuda_entry_func) (int abi_version, size_t op_size,
    char **error_text);

/* Runs single ops on the device from host arrays (used by tools/gpunet-selftest). */
typedef struct gpunet_cuda_op_runner gpunet_cuda_op_runner;
typedef struct {
  /* Creates a stream and a cuDNN handle on `device`; GPUNET_ERR_BACKEND_UNAVAILABLE
   * without a usable device. */
  gpunet_status (*runner_new) (int device, gpunet_cuda_op_runner **out, char **error_text);
  /* One op on n images: in/residual/out are host NCHW float32 of the op's shapes
   * (residual NULL unless op->residual >= 0; SE reads `in` and writes `out`). */
  gpunet_status (*run) (gpunet_cuda_op_runner *runner, const gpunet_op *op, int n,
      const float *in, const float *residual, float *out, char **error_text);
  void (*runner_free) (gpunet_cuda_op_runner *runner);
  /* Writes "NAME (sm_XY, N MiB)" of the device into buf. */
  void (*describe_device) (int device, char *buf, size_t len);
  /* Device-frame tests: a cudaMalloc()ed copy of `bytes` host bytes (free it with
   * device_free), and the fused preprocess kernel alone on a GPUNET_MEMORY_CUDA image of
   * the plan's size, its 3 x R x R output copied to out_chw (host). */
  gpunet_status (*device_upload) (const void *src, size_t bytes, void **out, char **error_text);
  void (*device_free) (void *ptr);
  gpunet_status (*preprocess) (gpunet_cuda_op_runner *runner, const gpunet_image *image,
      const gpunet_preprocess_plan *plan, float *out_chw, char **error_text);
  /* The storage the runner's run() and preprocess() use from now on (fp32 at creation;
   * AUTO resolves as a session would): host arrays stay float32, converted on the
   * device, so fp16 results carry fp16 rounding of inputs, weights and outputs. */
  gpunet_status (*set_precision) (gpunet_cuda_op_runner *runner, gpunet_precision precision,
      char **error_text);
  /* The options run() follows from now on (dwconv; the runner never captures graphs). */
  gpunet_status (*set_cuda_options) (gpunet_cuda_op_runner *runner,
      const gpunet_cuda_options *options, char **error_text);
} gpunet_cuda_op_api;

#define GPUNET_CUDA_OP_API_SYMBOL "gpunet_cuda_op_api_entry"
typedef const gpunet_cuda_op_api *(*gpunet_cuda_op_api_func) (int abi_version, size_t op_size,
    char **error_text);

/* Nodes of a captured CUDA graph by type (child graphs counted through). */
typedef struct {
  int kernels;   /* kernel nodes: what a profiler counts as launches */
  int memcpys;   /* memcpy nodes (host <-> device copies, device copies) */
  int memsets;   /* memset nodes */
  int others;    /* every other type (event record/wait, host, conditional...) */
  int total;     /* all of the above */
} gpunet_cuda_graph_counts;

/* Benchmark hooks on a state planned by the module's backend (used by tools/gpunet-bench). */
typedef struct {
  /* When op_seconds is non-NULL (one double per graph op, zeroed by the caller), each
   * later `forward` on `state` runs as plain launches (no CUDA graph) with a cudaEvent
   * recorded on the session's stream before and after every op, and adds each op's GPU
   * time in seconds to op_seconds[i] once the pass has finished.  The pass is enqueued
   * behind a kernel that holds the stream for 2 ms + 50 us per op, so the ops run back to
   * back and the host's launch gaps are not counted.  NULL stops.  Fails
   * only when the events cannot be created. */
  gpunet_status (*profile) (void *state, double *op_seconds, char **error_text);
  /* Bytes per stored activation and weight element of the planned state: 4 (fp32) or
   * 2 (fp16), the precision `auto` resolved to. */
  int (*storage_bytes) (const void *state);
  /* When gpu_seconds is non-NULL, each later `forward` on `state` adds to *gpu_seconds the
   * GPU time between cudaEvents recorded on the session's stream before its work (the
   * input upload) and after it (the logits copied to pinned memory), whether the work
   * ran as a CUDA graph or as plain launches.  NULL stops.  Fails only when the events
   * cannot be created. */
  gpunet_status (*forward_time) (void *state, double *gpu_seconds, char **error_text);
  /* The network alone on n images (1 to the planned batch), timed as PyTorch is timed by
   * tools/pytorch_baseline.py: the layers from the device input (already in the storage
   * precision) to the float32 logits on the device (no input upload or conversion, no
   * copy to the host) captured once as a CUDA graph after one plain warm-up pass, 10
   * untimed replays, then `groups` groups of `replays` back-to-back replays, a cudaEvent
   * pair around each group; *median_ms gets the median over the groups of (group time /
   * replays).  Fails with a sentence when the capture is refused (no plain fallback: the
   * figure is a graph's). */
  gpunet_status (*net_time) (void *state, int n, int groups, int replays, double *median_ms,
      char **error_text);
  /* Captures one pass on n images (after a plain warm-up pass) without running it and
   * counts its nodes: network = 0, what `forward` captures and replays (input upload and
   * conversion, the layers, the logits to the host); network = 1, what net_time replays. */
  gpunet_status (*graph_nodes) (void *state, int n, int network, gpunet_cuda_graph_counts *out,
      char **error_text);
} gpunet_cuda_bench_api;

#define GPUNET_CUDA_BENCH_API_SYMBOL "gpunet_cuda_bench_api_entry"
typedef const gpunet_cuda_bench_api *(*gpunet_cuda_bench_api_func) (int abi_version,
    size_t op_size, char **error_text);

/* ---- kernels/cuda_loader.c (compiled into the engine) ------------------------------ */

/* The CUDA backend of the module found by the search (GPUNET_CUDA_MODULE, next to the
 * binary, the install directory, the build tree), loaded once per process, or NULL with
 * the sentence saying why this build or this host has none.  kernels/registry.c is its
 * one caller in the engine; tools reach it through gpunet_backend_find. */
const gpunet_backend *gpunet_backend_cuda_get (char **error_text);

/* Loads one module file (no search, no caching) and returns its backend, or NULL with
 * a sentence that names the file and includes dlerror().  On success *handle_out (may
 * be NULL) receives the dlopen handle, which stays open. */
const gpunet_backend *gpunet_cuda_module_open (const char *path, void **handle_out,
    char **error_text);

/* The single-op API of the module gpunet_backend_cuda_get() loaded, or NULL with a
 * sentence (module missing, or too old to have it). */
const gpunet_cuda_op_api *gpunet_cuda_op_api_get (char **error_text);

/* The benchmark hooks of the loaded module, or NULL with a sentence. */
const gpunet_cuda_bench_api *gpunet_cuda_bench_api_get (char **error_text);

#ifdef __cplusplus
}
#endif
#endif
