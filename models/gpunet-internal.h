/* gpunet-internal.h: the one internal header a tool may include besides gpunet.h (see
 * docs/architecture.md, "Layers"): the inside view the project's own benchmark and
 * checking tools need.  gpunet-bench times each backend and op, gpunet-selftest compares
 * each CUDA op with the reference ops, gpunet-convert writes a checkpoint's tensors as
 * safetensors.  Not installed, no stability promise: it changes with the code.
 * Applications, the element and the other tools use gpunet.h only;
 * tests/check_layers.py fails the build's tests when a tool includes anything else. */
#ifndef GPUNET_INTERNAL_H
#define GPUNET_INTERNAL_H

#include "gpunet.h"

/* engine (models/): architectures, checkpoints, the built graph, errors */
#include "arch.h"            /* gpunet_arch_load, gpunet_arch_builtin_names */
#include "checkpoint.h"      /* gpunet_checkpoint_open */
#include "safetensors.h"     /* gpunet_safetensors_write */
#include "error.h"           /* gpunet_fail */
#include "graph.h"           /* gpunet_graph_build (weights from any source) */
#include "model_private.h"   /* gpunet_model_graph, gpunet_model_new_random */

/* kernels/: the backends and their extra hooks */
#include "../kernels/registry.h"          /* gpunet_backend_find, the backend table */
#include "../kernels/ref/cpu_ops.h"       /* the reference ops, one call per op */
#include "../kernels/common/half.h"       /* fp16 rounding as the CUDA backend stores */
#include "../kernels/cuda/cuda_cost.h"    /* per-op MACs and minimum bytes */
#include "../kernels/cuda/cuda_module.h"  /* the CUDA module's op and bench APIs */
#ifdef GPUNET_HAVE_ONEDNN
#include "../kernels/onednn/backend_onednn.h"   /* per-op profile of the fast backend */
#include "../kernels/onednn/blocked_ops.h"      /* blocked buffers for the copy probe */
#endif

#endif
