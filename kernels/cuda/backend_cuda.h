/* backend_cuda.h: the CUDA backend's session state and the functions its files share
 * (backend_cuda.cu: plan, forward, destroy, the module entries and benchmark hooks;
 * classify.cu: classify_device and classify_host).  Inside the module only. */
#ifndef GPUNET_BACKEND_CUDA_H
#define GPUNET_BACKEND_CUDA_H

#include "cuda_internal.h"
extern "C" {
#include "graph.h"
#include "memplan.h"
}

typedef struct {
  const gpunet_graph *g;     /* what runs: the caller's graph, or `padded` */
  const gpunet_graph *user_g; /* the caller's graph (traces report its channels) */
  gpunet_built_graph padded; /* nhwcpad=on on the NHWC network: channels padded to 8 */
  int max_batch, cur_n;
  gpunet_cuda_dtype dtype;   /* activations and weights */
  size_t esize;              /* bytes per activation element */
  gpunet_cuda_ctx ctx;
  gpunet_memplan plan;
  void **slot;               /* device memory per memplan slot */
  void *d_input;             /* max_batch x 3 x R x R, dtype */
  float *d_input32;          /* fp16 only: the float input before conversion */
  float *d_logits32;         /* fp16 or fused: float logits for the host and the top-k */
  float *h_input, *h_logits; /* pinned staging */
  char *arena;               /* all weights */
  gpunet_cuda_layer *layers; /* one per op */
  float *h_trace;            /* pinned, allocated on the first traced forward */
  float *d_trace32;          /* fp16 only: a traced tensor converted to float */
  size_t trace_floats;
  gpunet_cuda_pre_cache pre;         /* device tap tables of the recent geometries */
  const gpunet_cuda_pre_tables **img_tables; /* max_batch: the tables of each image of a call */
  gpunet_cuda_pre_desc *h_desc, *d_desc; /* max_batch preprocess descriptors (pinned, device) */
  gpunet_class_score *d_topk, *h_topk; /* max_batch x classes results (device, pinned) */
  int graphs;                          /* capture the per-frame work (the option graphs) */
  gpunet_cuda_graph *fwd_graph, *dev_graph; /* per batch size 1..max_batch */
  int run_n, run_k;                    /* arguments of the work being enqueued */
  uint8_t *h_stage, *d_stage;          /* classify_host: packed frames (pinned, device) */
  size_t stage_bytes;                  /* capacity of both, grown with the frames */
  double *prof;                        /* per-op seconds to add to (bench API), or NULL */
  int prof_active;                     /* record the events in run_layers (plain launches) */
  cudaEvent_t *ev_start, *ev_stop;     /* per op, created by the first profile() */
  double *fwd_time;                    /* forward GPU seconds to add to (bench API), or NULL */
  cudaEvent_t ev_fwd[2];               /* around forward's work, created by forward_time() */
  int fused;                           /* the opt-in fused path's level (plan_fusion) */
  int nhwc;                            /* level 2 in fp16: the NHWC network (cuda_nhwc.h) */
  int head_op;                         /* fused: the AVGPOOL op the fused head starts at, or -1 */
  unsigned *d_head_tickets;            /* fused head: max_batch zeroed counters (head.cu) */
} cuda_state;

size_t tensor_floats (const gpunet_graph *g, int t, int n);
float * logits32 (cuda_state *s, int head);
gpunet_status set_batch (cuda_state *s, int n, int describe, char **error_text);
gpunet_status run_layers (cuda_state *s, int n, int head_k, gpunet_trace_func trace, void *trace_user, char **error_text);
gpunet_status enqueue_logits32 (cuda_state *s, int n, char **error_text);
gpunet_status cuda_classify_device (void *state, const gpunet_image *images, int n, const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out, char **error_text);
gpunet_status cuda_classify_host (void *state, const gpunet_image *images, int n, const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out, char **error_text);

#endif
