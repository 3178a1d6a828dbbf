/* gpunet-internal.h: the engine's inside view for the project's own tools (see
 * docs/architecture.md, "Layers"), and nothing more: architectures, checkpoints and
 * safetensors, the graph builder and its weight sources, errors, and a model's built
 * graph.  It includes no kernel header beyond the graph type; a tool that needs a
 * backend's hooks (gpunet-bench's per-op timing, gpunet-selftest's single CUDA ops)
 * includes that kernels/ header itself, and tests/check_layers.py lists which tool may
 * include which.  Not installed, no stability promise: it changes with the code.
 * Applications, the element and the other tools use gpunet.h only. */
#ifndef GPUNET_INTERNAL_H
#define GPUNET_INTERNAL_H

#include "gpunet.h"

#include "arch.h"            /* gpunet_arch_load, gpunet_arch_builtin_names */
#include "checkpoint.h"      /* gpunet_checkpoint_open */
#include "error.h"           /* gpunet_fail */
#include "arch_graph.h"      /* gpunet_graph_build (weights from any source), gpunet_graph */
#include "safetensors.h"     /* gpunet_safetensors_write */

/* The planned graph backends run (owned by the model). */
const gpunet_graph *gpunet_model_graph (const gpunet_model *model);

/* 1 where op i of g runs in int8 under precision=int8, given calibrated scales: a dense
 * convolution that does not read the network input (calib.c; gpunet-bench counts their
 * MACs). */
int gpunet_int8_quantisable (const gpunet_graph *g, int i);

/* The kernel-side plan parameters of a session's parameters (what gpunet_session_new
 * passes to a backend's plan(); the environment is not applied here). */
void gpunet_plan_params_from_session (const gpunet_session_params *params,
    gpunet_plan_params *out);

/* `backend`->plan with the plan parameters of `params`: how tools and tests plan a
 * backend directly, as a session does. */
struct gpunet_backend;
gpunet_status gpunet_backend_plan (const struct gpunet_backend *backend,
    const gpunet_graph *graph, const gpunet_session_params *params, void **state,
    char **error_text);

#endif
