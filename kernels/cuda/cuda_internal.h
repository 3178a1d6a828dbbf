/* cuda_internal.h: what the .cu files of the CUDA module share (nvcc only): the kernel
 * launchers (each returns the cudaError_t of its launch), the per-op device layer used by
 * both the backend and the single-op runner, and the status helpers that turn CUDA and
 * cuDNN codes into gpunet_status sentences naming the failing call. */
#ifndef GPUNET_CUDA_INTERNAL_H
#define GPUNET_CUDA_INTERNAL_H

#include <stddef.h>
#include <stdio.h>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "backend.h"
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

/* ---- launchers (one .cu each); all NCHW float32 on `stream` ------------------------ */

enum { GPUNET_CUDA_THREADS = 256 };

/* Fails (cudaErrorNoKernelImageForDevice or similar) when this build has no kernel image
 * the current device can run.  (epilogue.cu) */
cudaError_t gpunet_cuda_probe_kernels (void);
/* y = act(y + bias[c]) + residual, in place; bias/residual may be NULL.  (epilogue.cu) */
cudaError_t gpunet_cuda_epilogue (float *y, const float *bias, const float *residual, int n,
    int c, long long plane, int act, cudaStream_t stream);
/* Depthwise conv with act(acc + bias).  w/b are device copies of p->weight/p->bias. */
cudaError_t gpunet_cuda_dwconv2d (const gpunet_dwconv2d_params *p, const float *w,
    const float *b, const float *in, float *out, int n, cudaStream_t stream);
/* out[r] = mean of row r of `in` (rows x plane): global average pool.  (pool.cu) */
cudaError_t gpunet_cuda_row_mean (const float *in, float *out, long long rows, long long plane,
    cudaStream_t stream);
/* out = act(W in + b) for n vectors; b may be NULL; act may be GPUNET_CUDA_ACT_SIGMOID. */
cudaError_t gpunet_cuda_linear (int cin, int cout, int act, const float *w, const float *b,
    const float *in, float *out, int n, cudaStream_t stream);
/* Squeeze-excite in place on x; scratch holds n * (2 c + rd) floats.  (se.cu) */
cudaError_t gpunet_cuda_se (const gpunet_se_params *p, const float *w1, const float *b1,
    const float *w2, const float *b2, float *x, float *scratch, int n, cudaStream_t stream);

/* Fused preprocess of one image (desc's planes and tables on the device) into the
 * 3 x R x R float32 `out`.  (preprocess.cu) */
cudaError_t gpunet_cuda_preprocess (const gpunet_cuda_pre_desc *desc, float *out,
    cudaStream_t stream);
/* Softmax + top-k of n logit rows (classes <= GPUNET_CUDA_TOPK_MAX, 1 <= k <= classes):
 * k results per row, best first, ties to the lower id.  (topk.cu) */
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

/* ---- device layers and their context (layer.cu, conv2d.cu) -------------------------------------------- */

typedef struct {
  cudaStream_t stream;
  cudnnHandle_t dnn;
  void *workspace;          /* cuDNN workspace, the largest any conv needs */
  size_t workspace_bytes;
  float *scratch;           /* SE scratch */
  size_t scratch_floats;
} gpunet_cuda_ctx;

typedef struct {
  const gpunet_op *op;
  int index;                /* op position, for messages */
  float *w, *b, *w2, *b2;   /* device weights (point into one arena) */
  /* CONV2D only */
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnConvolutionFwdAlgo_t algo_max;  /* chosen for max_batch */
  cudnnConvolutionFwdAlgo_t algo;      /* in use for desc_n */
  size_t ws_max;                       /* workspace algo_max needs at max_batch */
  int desc_n;                          /* batch the descriptors describe, 0 = none */
} gpunet_cuda_layer;

/* Device floats an op's weights need (each piece rounded up to 64 floats). */
size_t gpunet_cuda_layer_weight_floats (const gpunet_op *op);
/* Uploads weights into arena (advanced past them) and, for CONV2D, creates descriptors
 * and chooses the algorithm for max_n images with at most ws_limit bytes of workspace. */
gpunet_status gpunet_cuda_layer_plan (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l,
    const gpunet_op *op, int index, float **arena, int max_n, size_t ws_limit,
    char **error_text);
/* Re-describes a CONV2D layer for n images (no allocation; falls back to an algorithm
 * that fits the planned workspace).  No-op for other ops. */
gpunet_status gpunet_cuda_layer_set_batch (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int n,
    char **error_text);
/* Enqueues the op on ctx->stream; SE runs in place on out (in must equal out). */
gpunet_status gpunet_cuda_layer_run (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l,
    const float *in, const float *residual, float *out, int n, char **error_text);
void gpunet_cuda_layer_clear (gpunet_cuda_layer *l);

/* CONV2D parts (conv2d.cu). */
gpunet_status gpunet_cuda_conv_plan (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int max_n,
    size_t ws_limit, char **error_text);
gpunet_status gpunet_cuda_conv_set_batch (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l, int n,
    char **error_text);
gpunet_status gpunet_cuda_conv_run (gpunet_cuda_ctx *ctx, gpunet_cuda_layer *l,
    const float *in, const float *residual, float *out, int n, char **error_text);
void gpunet_cuda_conv_clear (gpunet_cuda_layer *l);

/* Checks the driver and device count (GPUNET_ERR_BACKEND_UNAVAILABLE with "no CUDA
 * driver..." / "no CUDA device..." sentences) and makes `device` current.  (layer.cu) */
gpunet_status gpunet_cuda_select_device (int device, char **error_text);
/* Selects the device, creates the stream and the cuDNN handle.  (layer.cu) */
gpunet_status gpunet_cuda_ctx_init (gpunet_cuda_ctx *ctx, int device, char **error_text);
/* Grows the workspace / SE scratch to at least the given sizes. */
gpunet_status gpunet_cuda_ctx_reserve (gpunet_cuda_ctx *ctx, size_t workspace_bytes,
    size_t scratch_floats, char **error_text);
void gpunet_cuda_ctx_clear (gpunet_cuda_ctx *ctx);

/* A short op description for messages: "conv2d 3x3/2 32->64 (op 12, block 5)". */
void gpunet_cuda_op_name (const gpunet_op *op, int index, char *buf, size_t len);

#endif
