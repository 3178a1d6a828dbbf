/* arch_graph.h: turns a validated architecture into a gpunet_graph with NVIDIA's
 * exact layer semantics, pulling each weight by its PyTorch state-dict name from a
 * weight source and folding BatchNorm into the preceding convolution.  The graph type and
 * the builder it calls are kernels/graph.h's. */
#ifndef GPUNET_ARCH_GRAPH_H
#define GPUNET_ARCH_GRAPH_H

#include "arch.h"
#include "checkpoint.h"
#include "../kernels/graph.h"   /* the graph and its builder */

/* The role of a requested parameter (random sources use it to pick a scale). */
typedef enum {
  GPUNET_PARAM_CONV_WEIGHT, GPUNET_PARAM_LINEAR_WEIGHT, GPUNET_PARAM_BIAS,
  GPUNET_PARAM_BN_WEIGHT, GPUNET_PARAM_BN_BIAS, GPUNET_PARAM_BN_MEAN, GPUNET_PARAM_BN_VAR
} gpunet_param_role;

typedef struct gpunet_weight_source gpunet_weight_source;
struct gpunet_weight_source {
  /* Fills `dst` (product of shape floats) for tensor `name`, or returns an error.  A
   * source may record problems and return GPUNET_OK with zeros to let the builder list
   * every mismatch at once; `finish` then reports them. */
  gpunet_status (*get) (gpunet_weight_source *src, const char *name, gpunet_param_role role,
      int ndim, const int64_t *shape, float *dst, char **error_text);
  gpunet_status (*finish) (gpunet_weight_source *src, char **error_text);
};

/* Builds the graph of `arch` into *out (any contents are overwritten; on failure it is
 * left cleared), pulling each weight from `src`. */
gpunet_status gpunet_graph_build (const gpunet_arch *arch, gpunet_weight_source *src,
    gpunet_built_graph *out, char **error_text);

/* NVIDIA's helpers, exposed for tests. */
int gpunet_make_divisible (double v, int divisor);
int gpunet_python_round (double x);

/* Weight sources: a checkpoint (records missing / mis-shaped / unexpected tensors and
 * reports them in finish), and seeded random weights. */
typedef struct {
  gpunet_weight_source base;
  const gpunet_checkpoint *ckpt;
  const char *path;
  unsigned char *used;
  const char *arch_name;
  int n_problems;
  int counts[3];         /* wrong shape/type, missing, unexpected */
  char *lists[3];        /* the first few of each, ", "-joined */
} gpunet_checkpoint_source_t;

void gpunet_checkpoint_source_init (gpunet_checkpoint_source_t *s, const gpunet_checkpoint *ckpt,
    const char *path, const char *arch_name);
void gpunet_checkpoint_source_clear (gpunet_checkpoint_source_t *s);

typedef struct {
  gpunet_weight_source base;
  uint64_t state;
} gpunet_random_source_t;

void gpunet_random_source_init (gpunet_random_source_t *s, uint64_t seed);

#endif
