/* backend_cpu_ref.c: the reference CPU backend: plans activation buffers once per
 * session (tensors share slots when their lifetimes do not overlap) and runs each op
 * with the plain loops of cpu_ops.h.  Single-threaded; the oracle for every backend. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cpu_ops.h"
#include "kernel_error.h"
#include "memplan.h"

typedef struct {
  const gpunet_graph *graph;
  int max_batch;
  gpunet_memplan plan;
  float *scratch;            /* SE: c + rd floats */
} cpu_ref_state;

static void
cpu_ref_destroy (void *state)
{
  cpu_ref_state *s = state;
  if (!s)
    return;
  gpunet_memplan_clear (&s->plan);
  free (s->scratch);
  free (s);
}

static gpunet_status
cpu_ref_plan (const gpunet_graph *graph, const gpunet_plan_params *params, void **state,
    char **error_text)
{
  cpu_ref_state *s = calloc (1, sizeof *s);
  if (!s)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory planning the CPU backend");
  s->graph = graph;
  s->max_batch = params->max_batch;
  size_t scratch = 1;
  for (int i = 0; i < graph->n_ops; i++)
    if (graph->ops[i].kind == GPUNET_OP_SE) {
      size_t need = (size_t) graph->ops[i].p.se.c + (size_t) graph->ops[i].p.se.rd;
      if (need > scratch)
        scratch = need;
    }
  s->scratch = malloc (scratch * sizeof (float));
  if (!s->scratch || gpunet_memplan_build (&s->plan, graph, params->max_batch, 16) != 0) {
    cpu_ref_destroy (s);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY,
        "out of memory allocating activation buffers for batch %d", params->max_batch);
  }
  *state = s;
  return GPUNET_OK;
}

static gpunet_status
cpu_ref_forward (void *state, const float *input, int n, float *logits,
    gpunet_trace_func trace, void *trace_user, char **error_text)
{
  cpu_ref_state *s = state;
  const gpunet_graph *g = s->graph;
  if (n < 1 || n > s->max_batch)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch of %d images, but the session was planned for 1 to %d", n, s->max_batch);

  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    const float *in = op->in == g->input ? input : gpunet_memplan_tensor (&s->plan, op->in);
    float *out = gpunet_memplan_tensor (&s->plan, op->out);
    switch (op->kind) {
      case GPUNET_OP_CONV2D:
        gpunet_cpu_conv2d (&op->p.conv2d, in,
            op->residual >= 0 ? (op->residual == g->input ? input
                : gpunet_memplan_tensor (&s->plan, op->residual)) : NULL, out, n);
        break;
      case GPUNET_OP_DWCONV2D:
        gpunet_cpu_dwconv2d (&op->p.dwconv2d, in, out, n);
        break;
      case GPUNET_OP_SE:
        gpunet_cpu_se (&op->p.se, out, s->scratch, n);
        break;
      case GPUNET_OP_AVGPOOL:
        gpunet_cpu_avgpool (&op->p.avgpool, in, out, n);
        break;
      case GPUNET_OP_LINEAR:
        gpunet_cpu_linear (&op->p.linear, in, out, n);
        break;
    }
    const gpunet_tensor_desc *t = &g->tensors[op->out];
    if (trace && t->block >= 0 && (i + 1 == g->n_ops || g->ops[i + 1].out != op->out))
      trace (trace_user, t->block, out, n, t->c, t->h, t->w);
  }
  const gpunet_tensor_desc *o = &g->tensors[g->output];
  memcpy (logits, gpunet_memplan_tensor (&s->plan, g->output),
      sizeof (float) * (size_t) n * (size_t) o->c * (size_t) o->h * (size_t) o->w);
  return GPUNET_OK;
}

const gpunet_backend gpunet_backend_cpu_ref = {
  .name = "cpu-ref",
  .plan = cpu_ref_plan,
  .forward = cpu_ref_forward,
  .destroy = cpu_ref_destroy,
};
