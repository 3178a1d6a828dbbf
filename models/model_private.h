/* model_private.h: the inside of gpunet_model, shared by the engine's own files only. */
#ifndef GPUNET_MODEL_PRIVATE_H
#define GPUNET_MODEL_PRIVATE_H

#include <stdatomic.h>

#include "arch.h"
#include "arch_graph.h"

struct gpunet_model {
  atomic_int refcount;
  gpunet_arch *arch;
  gpunet_built_graph built;
  char *weights_source;
};

/* gpunet_model_graph, the planned graph backends run (owned by the model) */
#include "gpunet-internal.h"

#endif
