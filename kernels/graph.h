/* graph.h: a planned network as the backends receive it: tensors (shapes per image) and
 * a topologically ordered list of ops.  Built by models/graph.c, read-only afterwards. */
#ifndef GPUNET_GRAPH_H
#define GPUNET_GRAPH_H

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

#endif
