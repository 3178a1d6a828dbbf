/* cuda_internal.h: what the .cu files of the CUDA module share (nvcc only): the kernel
 * launchers (each returns the cudaError_t of its launch), the per-op device layer used by
 * both the backend and the single-op runner, and the status helpers that turn CUDA and
 * cuDNN codes into gpunet_status sentences naming the failing call. */
#ifndef GPUNET_CUDA_INTERNAL_H
#define GPUNET_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include <utility>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "backend.h"
#include "cuda_context.h"
#include "cuda_graph_state.h"
#include "cuda_module.h"
#include "cuda_pre_cache.h"
#include "cuda_preprocess.h"
#include "cuda_topk.h"

/* ---- status helpers (status.cu) ---------------------------------------------------- */

/* Like the engine's gpunet_fail: stores a malloc()ed sentence, returns status. */
gpunet_status gpunet_cuda_fail (char **error_text, gpunet_status status, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));
/* "<what>: cudaErrorX (text)" with the status class of err (no memory, unavailable, ...). */
gpunet_status gpunet_cuda_fail_rt (char **error_text, cudaError_t err, const char *what);
/* "<what>: CUDNN_STATUS_X (text)". */
gpunet_status gpunet_cuda_fail_dnn (char **error_text, cudnnStatus_t st, const char *what);

/* Evaluate a CUDA runtime / cuDNN call; on failure return its status from the caller.
 * `what` is a printf format naming the call and its context. */
#define GPUNET_CU_TRY(call, err_text, ...) \
  do { \
    cudaError_t e_ = (call); \
    if (e_ != cudaSuccess) { \
      char w_[256]; \
      snprintf (w_, sizeof w_, __VA_ARGS__); \
      return gpunet_cuda_fail_rt ((err_text), e_, w_); \
    } \
  } while (0)
#define GPUNET_DNN_TRY(call, err_text, ...) \
  do { \
    cudnnStatus_t s_ = (call); \
    if (s_ != CUDNN_STATUS_SUCCESS) { \
      char w_[256]; \
      snprintf (w_, sizeof w_, __VA_ARGS__); \
      return gpunet_cuda_fail_dnn ((err_text), s_, w_); \
    } \
  } while (0)

/* ---- programmatic dependent launch (the option pdl=on, sm_90+) --------------------- */

/* Set on the calling thread while a session with pdl=on enqueues its layers (run_layers):
 * gpunet_launch then launches with programmatic stream serialization, so a kernel may be
 * scheduled while the kernel before it in the stream finishes.  Defined in layer.cu. */
extern thread_local int gpunet_cuda_pdl;
/* The PTX version (cudaFuncAttributes.ptxVersion, e.g. 90) the module's kernels run from
 * on the current device: below 90 gpunet_pdl_wait is compiled out, and pdl=on must stay
 * off (gpunet_cuda_pdl_usable).  Defined in layer.cu. */
cudaError_t gpunet_cuda_kernel_ptx_version (int *ptx_version);

/* First statement of every kernel launched through gpunet_launch: nothing of the kernel
 * before it in the stream is read or overwritten until that kernel is done (a no-op
 * without a programmatic dependency, and before sm_90). */
static __device__ __forceinline__ void
gpunet_pdl_wait (void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize ();
#endif
}

/* kernel<<<grid, block, shared, stream>>> (args...), with the PDL attribute while
 * gpunet_cuda_pdl is set; errors come back through cudaGetLastError () as before. */
template <typename... P, typename... A>
static inline void
gpunet_launch (void (*kernel) (P...), dim3 grid, dim3 block, size_t shared,
    cudaStream_t stream, A &&... args)
{
  if (!gpunet_cuda_pdl) {
    kernel<<<grid, block, shared, stream>>> (std::forward<A> (args)...);
    return;
  }
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = shared;
  cfg.stream = stream;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  cudaLaunchKernelEx (&cfg, kernel, std::forward<A> (args)...);
}

/* ---- launchers (one .cu each); NCHW on `stream`, storage float32 or fp16 ----------- */

enum { GPUNET_CUDA_THREADS = 256 };

/* Storage type of activations and weights (biases, SE scratch and logits for the host
 * stay float32).  The maths is float32 in both. */
typedef enum { GPUNET_CUDA_F32 = 0, GPUNET_CUDA_F16 = 1 } gpunet_cuda_dtype;

static inline size_t
gpunet_cuda_dtype_size (gpunet_cuda_dtype t)
{
  return t == GPUNET_CUDA_F16 ? 2 : 4;
}

/* Fails (cudaErrorNoKernelImageForDevice or similar) when this build has no kernel image
 * the current device can run.  (epilogue.cu) */
cudaError_t gpunet_cuda_probe_kernels (void);
/* y = act(y + bias[c]) + residual, in place; y and residual of type t; bias (float) and
 * residual may be NULL.  (epilogue.cu) */
cudaError_t gpunet_cuda_epilogue (gpunet_cuda_dtype t, void *y, const float *bias,
    const void *residual, int n, int c, long long plane, int act, cudaStream_t stream);
/* Depthwise conv with act(acc + bias): in, out, w of type t (device copy of p->weight),
 * b float or NULL.  (dwconv2d.cu) */
cudaError_t gpunet_cuda_dwconv2d (gpunet_cuda_dtype t, const gpunet_dwconv2d_params *p,
    const void *w, const float *b, const void *in, void *out, int n, int direct,
    cudaStream_t stream);
/* out[r] = mean of row r of `in` (rows x plane): global average pool.  (pool.cu) */
cudaError_t gpunet_cuda_row_mean (gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to,
    void *out, long long rows, long long plane, cudaStream_t stream);
/* out = act(W in + b) for n vectors; b (float) may be NULL; act may be
 * GPUNET_CUDA_ACT_SIGMOID.  Weight/input/output types: (f32, f32, f32), (f16, f16, any) or
 * (f16, f32, any); others return cudaErrorInvalidValue.  (linear.cu) */
cudaError_t gpunet_cuda_linear (int cin, int cout, int act, gpunet_cuda_dtype tw,
    const void *w, const float *b, gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to,
    void *out, int n, cudaStream_t stream);
/* Squeeze-excite in place on x (type t, weights type t, biases float); scratch holds
 * n * (2 c + rd) floats.  (se.cu) */
cudaError_t gpunet_cuda_se (gpunet_cuda_dtype t, const gpunet_se_params *p, const void *w1,
    const float *b1, const void *w2, const float *b2, void *x, float *scratch, int n,
    cudaStream_t stream);

/* ---- the opt-in fused path (cuda_fused.h; gpunet_session_params.cuda_fused) ---------- */

/* Tiles per plane of p's tiled depthwise kernel for up to max_n images, 0 when p runs
 * the direct kernel (then the squeeze cannot be fused).  (dwconv2d.cu) */
int gpunet_cuda_dwconv2d_squeeze_tiles (const gpunet_dwconv2d_params *p, int max_n, int direct);
/* gpunet_cuda_dwconv2d through the tiled kernel, which also writes each tile's output
 * sum to squeeze[(image * c + channel) * tiles + tile] (n * c * tiles floats);
 * cudaErrorInvalidValue when p has no tiled kernel.  (dwconv2d.cu) */
cudaError_t gpunet_cuda_dwconv2d_squeeze (gpunet_cuda_dtype t, const gpunet_dwconv2d_params *p,
    const void *w, const float *b, const void *in, void *out, int n, float *squeeze,
    cudaStream_t stream);
/* Non-zero when the reduce kernel's shared memory holds the c means.  (se.cu) */
int gpunet_cuda_excite_fits (int c, int rd);
/* SE in place on x from the tile sums of gpunet_cuda_dwconv2d_squeeze: a reduce kernel
 * writes n * rd floats to mid, then a kernel computes each channel's gate and scales its
 * plane.  (se.cu) */
cudaError_t gpunet_cuda_se_fused (gpunet_cuda_dtype t, const gpunet_se_params *p, const void *w1,
    const float *b1, const void *w2, const float *b2, void *x, const float *tile_sums,
    int tiles, float *mid, int n, cudaStream_t stream);
/* Non-zero when the fused head takes c channels and `classes` classes (shared memory,
 * at most GPUNET_CUDA_TOPK_MAX classes).  (head.cu) */
int gpunet_cuda_head_fits (int c, int classes);
/* Global average pool of in (n x c x plane, type t), classifier act(W x + b) (W classes x
 * c of type t, b float or NULL), float logits (n x classes) and, when k > 0, softmax +
 * top-k (n x k into out), in one kernel.  tickets: n zeroed counters (needed when k > 0),
 * left zeroed by the kernel.  (head.cu) */
cudaError_t gpunet_cuda_head (gpunet_cuda_dtype t, const void *in, int c, long long plane,
    const void *w, const float *b, int classes, int act, int n, int k, float *logits,
    gpunet_class_score *out, unsigned *tickets, cudaStream_t stream);

/* ---- the NHWC network (the fused path's level 2; cuda_nhwc.h has the arithmetic) ---- */

/* Convolution epilogue over an NHWC tensor (nhwc.cu; cf. gpunet_cuda_epilogue). */
cudaError_t gpunet_cuda_epilogue_nhwc (gpunet_cuda_dtype t, void *y, const float *bias,
    const void *residual, int n, int c, long long plane, int act, cudaStream_t stream);
/* Squeeze strips per channel of an oh x ow NHWC tensor (gpunet_nhwc_strips of oh * ow). */
int gpunet_cuda_nhwc_strips (int oh, int ow);
/* Depthwise convolution with act(acc + bias) over NHWC tensors (filters c x k x k); with
 * squeeze != NULL also the strip sums of its output, n * c * strips floats.  Without a
 * squeeze and with fill_blocks > 0 (nhwcstrip=fill), strips as short as 8 positions until
 * the grid has fill_blocks blocks (gpunet_nhwc_fill_strip); else 64.  (nhwc.cu) */
cudaError_t gpunet_cuda_dwconv2d_nhwc (gpunet_cuda_dtype t, const gpunet_dwconv2d_params *p,
    const void *w, const float *b, const void *in, void *out, int n, float *squeeze,
    int fill_blocks, cudaStream_t stream);
/* The strip sums of an NHWC tensor, as the depthwise kernel writes them.  (nhwc.cu) */
cudaError_t gpunet_cuda_squeeze_nhwc (gpunet_cuda_dtype t, const void *x, int n, int c, int h,
    int w, float *sums, cudaStream_t stream);
/* SE in place on NHWC x from strip sums: the reduce kernel (means, first FC) into mid
 * (n * rd floats), then the gates and the scale.  (se.cu) */
cudaError_t gpunet_cuda_se_nhwc (gpunet_cuda_dtype t, const gpunet_se_params *p, const void *w1,
    const float *b1, const void *w2, const float *b2, void *x, const float *tile_sums,
    int tiles, float *mid, int n, cudaStream_t stream);
/* Global average pool of an NHWC tensor to n x c.  (nhwc.cu) */
cudaError_t gpunet_cuda_pool_nhwc (gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to,
    void *out, int n, int c, long long plane, cudaStream_t stream);
/* n x c x plane between NCHW and NHWC (to_nhwc: NCHW in, NHWC out), converting the
 * storage type.  (nhwc.cu) */
cudaError_t gpunet_cuda_relayout (gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to,
    void *out, int n, int c, long long plane, int to_nhwc, cudaStream_t stream);

/* out[i] = in[i] converted between storage types, count elements.  (convert.cu) */
cudaError_t gpunet_cuda_convert (gpunet_cuda_dtype ti, const void *in, gpunet_cuda_dtype to,
    void *out, long long count, cudaStream_t stream);

/* Fused preprocess of n images into the n x 3 x R x R tensor `out` of type t: descs is a
 * DEVICE array of n descriptors (planes and tables on the device), so a captured graph
 * can be replayed on other frames after the descriptors are copied in; nhwc: the
 * n x R x R x 3 layout instead.  (preprocess.cu) */
cudaError_t gpunet_cuda_preprocess (const gpunet_cuda_pre_desc *descs, int n, int out_size,
    gpunet_cuda_dtype t, void *out, int nhwc, cudaStream_t stream);
/* Softmax + top-k of n float32 logit rows (classes <= GPUNET_CUDA_TOPK_MAX, 1 <= k <=
 * classes): k results per row, best first, ties to the lower id.  (topk.cu) */
cudaError_t gpunet_cuda_topk (const float *logits, int n, int classes, int k,
    gpunet_class_score *out, cudaStream_t stream);

/* Device copies of a preprocess plan's tap tables, re-uploaded only when the plan's
 * geometry changes.  (preprocess.cu) */
typedef struct {
  void *dev;
  size_t bytes;
  int valid, in_w, in_h, out_size;
  gpunet_resize_mode mode;
  float crop_pct;
  gpunet_cuda_axis x, y;   /* pointers into dev */
} gpunet_cuda_pre_tables;

/* Uploads the tables of `plan` on `stream` unless they are already there (growing the
 * buffer, after a stream sync, when needed). */
gpunet_status gpunet_cuda_pre_tables_update (gpunet_cuda_pre_tables *tables,
    const gpunet_preprocess_plan *plan, cudaStream_t stream, char **error_text);
void gpunet_cuda_pre_tables_clear (gpunet_cuda_pre_tables *tables);

/* The device tap tables of several geometries at once (cuda_pre_cache.h picks the
 * entry), so one call's descriptors each point at their own image's tables.  Entries
 * picked during a call are not replaced before the next call begins.  (preprocess.cu) */
typedef struct {
  gpunet_cuda_pre_tables *tables;   /* index.n entries */
  gpunet_pre_cache_index index;
} gpunet_cuda_pre_cache;

/* Allocates the bookkeeping of `entries` empty entries (no device memory yet). */
gpunet_status gpunet_cuda_pre_cache_init (gpunet_cuda_pre_cache *cache, int entries,
    char **error_text);
/* Starts a call (see gpunet_pre_cache_begin). */
void gpunet_cuda_pre_cache_begin (gpunet_cuda_pre_cache *cache);
/* The device tables of plan's geometry, uploaded on `stream` into a free or least
 * recently used entry when no entry has them; fails (GPUNET_ERR_INVALID_ARGUMENT) when
 * the call already uses every entry. */
gpunet_status gpunet_cuda_pre_cache_get (gpunet_cuda_pre_cache *cache,
    const gpunet_preprocess_plan *plan, cudaStream_t stream,
    const gpunet_cuda_pre_tables **out, char **error_text);
/* Frees every entry's device tables and the bookkeeping; safe on a zeroed cache. */
void gpunet_cuda_pre_cache_clear (gpunet_cuda_pre_cache *cache);

/* ---- CUDA graphs of the per-frame work (graph.cu) ------------------------------------ */

/* Enqueues work on the stream (no host-blocking calls); returns its status. */
typedef gpunet_status (*gpunet_cuda_enqueue_func) (void *user, char **error_text);

typedef struct {
  cudaGraphExec_t exec[GPUNET_GRAPH_WAYS]; /* per way of `state`: NULL until captured */
  gpunet_graph_state state; /* keys, warm-up, capture outcomes (cuda_graph_state.h) */
} gpunet_cuda_graph;

/* Runs fn's work on stream: replays g's graph for `key` when one was captured; otherwise
 * calls fn directly the first time (warm-up) and, when enabled and the policy allows,
 * captures fn into g and launches it the second time (cuda_graph_state.h: a few keys per
 * slot, retries after a failed capture).  A failed capture is a log line on stderr (once
 * per process), then a plain run of that pass, not an error.  `what` names the work in
 * messages. */
gpunet_status gpunet_cuda_graph_run (gpunet_cuda_graph *g, int key, int enabled,
    cudaStream_t stream, gpunet_cuda_enqueue_func fn, void *user, const char *what,
    char **error_text);
void gpunet_cuda_graph_clear (gpunet_cuda_graph *g);
/* Captures fn's work on stream into *out (thread-local mode) without instantiating or
 * running it; returns NULL, or a malloc()ed sentence with *out NULL. */
char *gpunet_cuda_capture_raw (cudaGraph_t *out, cudaStream_t stream,
    gpunet_cuda_enqueue_func fn, void *user);
/* Adds the nodes of `graph` (child graphs counted through) to *c (cuda_module.h). */
cudaError_t gpunet_cuda_graph_count (cudaGraph_t graph, gpunet_cuda_graph_counts *c);

/* ---- device layers and their context (layer.cu, conv2d.cu) -------------------------------------------- */

typedef struct {
  int device;               /* the CUDA device the stream and handle belong to */
  void *cu_ctx;             /* the CUcontext everything of the session lives in */
  cudaStream_t stream;
  cudnnHandle_t dnn;
  gpunet_cuda_dtype dtype;  /* storage of activations and weights; set before planning */
  void *workspace;          /* cuDNN workspace, the largest any conv needs */
  size_t workspace_bytes;
  float *scratch;           /* SE scratch */
  size_t scratch_floats;
  int nhwc;                 /* the NHWC network: layers plan NHWC (set before planning) */
  int dw_direct;            /* the option dwconv=direct: the direct depthwise kernel */
  int nhwc_fill_blocks;     /* nhwcstrip=fill: the NHWC depthwise grids' target (4 blocks
                             * per SM), else 0 */
  int pdl;                  /* pdl=on on an sm_90+ device: run_layers sets gpunet_cuda_pdl */
  int nhwc_tune;            /* nhwctune=on: time the first plans of each fused convolution */
} gpunet_cuda_ctx;

typedef struct {
  const gpunet_op *op;
  int index;                /* op position, for messages */
  gpunet_cuda_dtype dtype;  /* storage of w, w2 and the activations (ctx->dtype at plan) */
  void *w, *w2;             /* device weights of type dtype (point into one arena) */
  float *b, *b2;            /* device biases, float32 */
  /* CONV2D only */
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnConvolutionFwdAlgo_t algo_max;  /* chosen for max_batch */
  cudnnConvolutionFwdAlgo_t algo;      /* in use for desc_n */
  size_t ws_max;                       /* workspace algo_max needs at max_batch */
  int desc_n;                          /* batch the descriptors describe, 0 = none */
  /* fused SE (set by the backend after planning, 0 = unfused): DWCONV2D writes tile sums
   * of this many tiles per plane into the SE scratch; the SE op after it runs the excite
   * from them */
  int fused_tiles;
  /* the NHWC network (ctx->nhwc at plan): tensors NHWC, conv filters KRSC; a CONV2D runs
   * its cuDNN graph (conv_graph.h) for batch n when gplan[n] is set, else the legacy
   * call and our NHWC epilogue (graph_refused: at planning, so never tried again) */
  int nhwc;
  int max_n;
  cudnnBackendDescriptor_t *gplan;   /* max_n + 1 entries */
  unsigned char *gtried;             /* max_n + 1: a plan was attempted for that batch */
  int graph_refused;
  int gengine;                       /* the engine's global index at max_n, -1 */
} gpunet_cuda_layer;

/* Device bytes an op's weights need in storage t (each piece rounded up to 256 bytes). */
size_t gpunet_cuda_layer_weight_bytes (const gpunet_op *op, gpunet_cuda_dtype t);
/* Uploads weights (converted to ctx->dtype; biases float) into arena (advanced past
 * them) and, for CONV2D, creates descriptors and chooses the algorithm for max_n images
 * with at most ws_limit bytes of workspace. */
gpunet_status gpunet_cuda_layer_plan (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l,
    const gpunet_op *op, int index, char **arena, int max_n, size_t ws_limit,
    char **error_text);
/* Re-describes a CONV2D layer for n images (no allocation; falls back to an algorithm
 * that fits the planned workspace).  No-op for other ops. */
gpunet_status gpunet_cuda_layer_set_batch (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int n,
    char **error_text);
/* Enqueues the op on ctx->stream (tensors of the layer's dtype); SE runs in place on out
 * (in must equal out).  Makes no host-blocking call, so it can be graph-captured once
 * the batch is set. */
gpunet_status gpunet_cuda_layer_run (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l,
    const void *in, const void *residual, void *out, int n, char **error_text);
void gpunet_cuda_layer_clear (gpunet_cuda_layer *l);

/* CONV2D parts (conv2d.cu). */
gpunet_status gpunet_cuda_conv_plan (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int max_n,
    size_t ws_limit, char **error_text);
gpunet_status gpunet_cuda_conv_set_batch (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int n,
    char **error_text);
gpunet_status gpunet_cuda_conv_run (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l,
    const void *in, const void *residual, void *out, int n, char **error_text);
void gpunet_cuda_conv_clear (gpunet_cuda_layer *l);

/* Checks the driver and device count (GPUNET_ERR_BACKEND_UNAVAILABLE with "no CUDA
 * driver..." / "no CUDA device..." sentences); makes no context current.  (layer.cu) */
gpunet_status gpunet_cuda_check_device (int device, char **error_text);
/* Makes the session's context current: `cu_context` (a CUcontext of `device`, e.g. the
 * GstCudaContext's; pushed here when another is current, before any other call) or, when
 * NULL, the one gpunet_cuda_ctx_pick chooses (the caller's current context on `device`,
 * else the device's primary context; the caller's stack is left as it was).  Records it in ctx->cu_ctx, creates the stream and the cuDNN
 * handle in it; dtype starts as F32.  On success `scope` is open (pushed or not):
 * close it with gpunet_cuda_ctx_leave when planning is done.  (layer.cu) */
gpunet_status gpunet_cuda_ctx_init (gpunet_cuda_ctx *ctx, int device, void *cu_context,
    gpunet_cuda_ctx_scope *scope, char **error_text);
/* Every entry point of the backend and the op runner: makes cu_ctx (the session's
 * ctx.cu_ctx) current on the
 * calling thread for the scope (cuda_context.h: nothing when it already is, else a
 * push), so no CUDA call of a session runs in another context whatever the caller did.
 * GPUNET_ERR_BACKEND with a sentence when it cannot. */
gpunet_status gpunet_cuda_ctx_enter (void *cu_ctx, gpunet_cuda_ctx_scope *scope,
    char **error_text);
/* Closes the scope (pops what enter pushed) and returns `st`, or, when `st` is GPUNET_OK
 * and the pop finds a changed context stack, GPUNET_ERR_BACKEND with a sentence. */
gpunet_status gpunet_cuda_ctx_leave (void *cu_ctx, gpunet_cuda_ctx_scope *scope,
    gpunet_status st, char **error_text);
/* Grows the workspace / SE scratch to at least the given sizes. */
gpunet_status gpunet_cuda_ctx_reserve (gpunet_cuda_ctx *ctx, size_t workspace_bytes,
    size_t scratch_floats, char **error_text);
void gpunet_cuda_ctx_clear (gpunet_cuda_ctx *ctx);

/* The storage a session of `precision` uses on the current device: fp16 for FP16, and
 * for AUTO when the device has tensor cores (compute capability 7.0 or newer).  (layer.cu) */
gpunet_status gpunet_cuda_resolve_precision (int precision, gpunet_cuda_dtype *out,
    char **error_text);

/* A short op description for messages: "conv2d 3x3/2 32->64 (op 12, block 5)". */
void gpunet_cuda_op_name (const gpunet_op *op, int index, char *buf, size_t len);

#endif
