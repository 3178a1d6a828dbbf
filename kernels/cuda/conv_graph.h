/* conv_graph.h: a convolution with its epilogue as one cuDNN backend-API operation graph
 * (conv_graph.cu).  Host code only (nvcc or a C++ compiler with cudnn.h): the CUDA
 * module's NHWC path and tests/test_cuda_graph_api.cu use it. */
#ifndef GPUNET_CONV_GRAPH_H
#define GPUNET_CONV_GRAPH_H

#include <stddef.h>

#include <cudnn.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  GPUNET_CG_ACT_NONE = 0, GPUNET_CG_ACT_RELU = 1, GPUNET_CG_ACT_SWISH = 2,  /* = GPUNET_EPI_* */
  GPUNET_CG_MAX_CONFIGS = 32,
  /* tensor ids bound by the variant pack, then the virtual intermediates */
  GPUNET_CG_UID_X = 1, GPUNET_CG_UID_W = 2, GPUNET_CG_UID_B = 3, GPUNET_CG_UID_Z = 4,
  GPUNET_CG_UID_Y = 5, GPUNET_CG_UID_T0 = 10
};

/* One convolution: shapes per image and the batch n; NHWC activations, KRSC filter. */
typedef struct {
  int n, cin, cout, ih, iw, oh, ow, kernel, stride, pad;
  int act;            /* GPUNET_CG_ACT_* */
  int has_bias, has_residual;
  int half;           /* fp16 activations and filter (else float32); bias float32 */
} gpunet_cg_shape;

/* Every descriptor of one graph (NULL where unused). */
typedef struct {
  cudnnBackendDescriptor_t x, w, b, z, y, t[3];
  cudnnBackendDescriptor_t conv, pw[3], op[4], graph;
  int n_ops;
} gpunet_cg_desc;

/* Operations in the graph of a convolution: the conv, then bias add, activation and
 * residual add where present. */
int gpunet_cg_n_ops (int has_bias, int act, int has_residual);
/* Creates and finalizes the tensor, convolution and operation descriptors (no handle
 * needed).  On failure `why` names the failing call; g holds what was made (destroy it). */
cudnnStatus_t gpunet_cg_desc_build (gpunet_cg_desc *g, const gpunet_cg_shape *sh, char *why,
    size_t why_len);
/* Creates and finalizes the operation graph on `handle`. */
cudnnStatus_t gpunet_cg_graph_finalize (gpunet_cg_desc *g, cudnnHandle_t handle, char *why,
    size_t why_len);
/* The ranked engine configurations (heuristics mode A) whose execution plans finalize
 * with at most ws_limit bytes of workspace, the first max_plans of them in order:
 * *n_plans plans (destroy each with cudnnBackendDestroyDescriptor), their workspaces and
 * the engines' global indices (-1 where unknown).  max_plans 1 is the plain choice,
 * more the candidates nhwctune=on times.  CUDNN_STATUS_NOT_SUPPORTED with a sentence in
 * `why` when none does. */
cudnnStatus_t gpunet_cg_plans (gpunet_cg_desc *g, cudnnHandle_t handle, size_t ws_limit,
    int max_plans, cudnnBackendDescriptor_t *plans, size_t *ws, int *engines, int *n_plans,
    char *why, size_t why_len);
/* Runs the plan on the handle's stream: b and z NULL when the graph has no bias or
 * residual.  Builds a variant pack per call (host only; nothing blocks). */
cudnnStatus_t gpunet_cg_execute (cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
    const void *x, const void *w, const float *b, const void *z, void *y, void *workspace);
void gpunet_cg_desc_destroy (gpunet_cg_desc *g);
/* nhwctune=on's choice among n timed candidates: the index of the fastest that ran
 * (ran[i] != 0, ms[i] its time), the earlier one on a tie; -1 when none ran. */
int gpunet_cg_tune_best (const int *ran, const float *ms, int n);

#ifdef __cplusplus
}
#endif

#endif /* GPUNET_CONV_GRAPH_H */
