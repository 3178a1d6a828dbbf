/* graph.h: a planned network as the backends receive it (tensors with their shapes per
 * image, a topologically ordered list of ops), and the one builder every graph is made
 * with: a gpunet_built_graph owns the arrays and the weight memory, and the functions
 * below add tensors, ops and weights to it and free it.  models/arch_graph.c drives the
 * builder from an architecture; backends read the graph, never change it. */
#ifndef GPUNET_GRAPH_H
#define GPUNET_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "ops.h"

typedef struct {
  int c, h, w;
  int block;          /* the architecture layer whose output this is, or -1 */
} gpunet_tensor_desc;

typedef struct {
  int n_ops;
  gpunet_op *ops;
  int n_tensors;
  gpunet_tensor_desc *tensors;
  int input;          /* tensor id of the 3 x R x R input */
  int output;         /* tensor id of the classes x 1 x 1 logits */
  int n_blocks;       /* architecture layers (without "data") */
} gpunet_graph;

/* A graph plus the memory it owns.  Zero-initialise it, build, gpunet_graph_clear. */
typedef struct {
  gpunet_graph graph;
  int cap_ops, cap_tensors;
  int n_allocs, cap_allocs;
  float **allocs;
  int64_t num_params;  /* as PyTorch counts them (the builder's caller adds them up) */
  double macs;         /* per image (likewise) */
} gpunet_built_graph;

#ifdef __cplusplus
extern "C" {   /* the CUDA module calls the builder (gpunet_graph_pad_channels) */
#endif

/* A new tensor c x h x w (block -1): its id, or -1 when out of memory. */
int gpunet_graph_add_tensor (gpunet_built_graph *bg, int c, int h, int w);

/* A new op (zeroed parameters, no residual) of architecture layer `block`, from tensor
 * `in` to `out`: valid until the next add_op, or NULL when out of memory. */
gpunet_op *gpunet_graph_add_op (gpunet_built_graph *bg, gpunet_op_kind kind, int in, int out,
    int block);

/* n zeroed floats (weights) owned by the graph, or NULL when out of memory. */
float *gpunet_graph_alloc (gpunet_built_graph *bg, size_t n);

/* Builds into *out (overwritten; the caller clears it) the same network with the
 * channel count of every tensor rounded up to a multiple of `multiple`, but for the
 * input, the output, a grouped convolution's tensors and those tied to any of these
 * channel for channel (depthwise, SE, pool, residual add), which keep theirs.  The added
 * channels' weights and biases are zero, so they hold act(0) = 0 throughout and every real
 * channel computes the same sums in the same order (cuDNN's tensor-core kernels want
 * channel counts that are multiples of 8: the CUDA NHWC network's nhwcpad).  Op and tensor
 * ids, blocks, other dimensions and SE's reduced width stay; the copy owns its weights.
 * 0: done; 1: `multiple` below 1 (*why says so, *out is empty); -1: out of memory.  why
 * may be NULL. */
int gpunet_graph_pad_channels (const gpunet_graph *g, int multiple, gpunet_built_graph *out,
    const char **why);

/* Frees what the graph owns and zeroes it. */
void gpunet_graph_clear (gpunet_built_graph *bg);

#ifdef __cplusplus
}
#endif

#endif
