/* memplan.c: greedy lifetime-based slot assignment for activation tensors. */
#include <stdlib.h>
#include <string.h>

#include "memplan.h"

int
gpunet_memplan_build (gpunet_memplan *plan, const gpunet_graph *g, int max_batch,
    size_t alloc_align)
{
  memset (plan, 0, sizeof *plan);
  int *last_use = malloc (sizeof (int) * (size_t) g->n_tensors);
  plan->tensor_slot = malloc (sizeof (int) * (size_t) g->n_tensors);
  plan->slot_floats = calloc ((size_t) g->n_tensors, sizeof (size_t));
  int *slot_owner = malloc (sizeof (int) * (size_t) g->n_tensors);
  if (!last_use || !plan->tensor_slot || !plan->slot_floats || !slot_owner) {
    free (last_use);
    free (slot_owner);
    gpunet_memplan_clear (plan);
    return -1;
  }
  for (int t = 0; t < g->n_tensors; t++) {
    last_use[t] = t == g->output ? g->n_ops : -1;
    plan->tensor_slot[t] = -1;
  }
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    if (last_use[op->in] < i)
      last_use[op->in] = i;
    if (op->residual >= 0 && last_use[op->residual] < i)
      last_use[op->residual] = i;
    if (last_use[op->out] < i)
      last_use[op->out] = i;
  }
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    int t = op->out;
    if (t != g->input && plan->tensor_slot[t] < 0) {
      const gpunet_tensor_desc *d = &g->tensors[t];
      size_t need = (size_t) max_batch * (size_t) d->c * (size_t) d->h * (size_t) d->w;
      int best = -1;
      for (int sidx = 0; sidx < plan->n_slots; sidx++) {
        if (slot_owner[sidx] >= 0)
          continue;
        /* prefer the smallest free slot that fits, else the largest free one */
        if (best < 0 || (plan->slot_floats[sidx] >= need
                ? (plan->slot_floats[best] < need || plan->slot_floats[sidx] < plan->slot_floats[best])
                : (plan->slot_floats[best] < need && plan->slot_floats[sidx] > plan->slot_floats[best])))
          best = sidx;
      }
      if (best < 0)
        best = plan->n_slots++;
      if (plan->slot_floats[best] < need)
        plan->slot_floats[best] = need;
      slot_owner[best] = t;
      plan->tensor_slot[t] = best;
    }
    /* release tensors whose last use is this op */
    for (int sidx = 0; sidx < plan->n_slots; sidx++)
      if (slot_owner[sidx] >= 0 && last_use[slot_owner[sidx]] <= i)
        slot_owner[sidx] = -1;
  }
  free (last_use);
  free (slot_owner);
  if (alloc_align) {
    plan->slot_mem = calloc ((size_t) plan->n_slots + 1, sizeof (float *));
    if (!plan->slot_mem) {
      gpunet_memplan_clear (plan);
      return -1;
    }
    for (int sidx = 0; sidx < plan->n_slots; sidx++) {
      size_t bytes = plan->slot_floats[sidx] * sizeof (float);
      bytes = (bytes + alloc_align - 1) / alloc_align * alloc_align;
      plan->slot_mem[sidx] = aligned_alloc (alloc_align, bytes ? bytes : alloc_align);
      if (!plan->slot_mem[sidx]) {
        gpunet_memplan_clear (plan);
        return -1;
      }
    }
  }
  return 0;
}

void
gpunet_memplan_clear (gpunet_memplan *plan)
{
  if (plan->slot_mem)
    for (int s = 0; s < plan->n_slots; s++)
      free (plan->slot_mem[s]);
  free (plan->slot_mem);
  free (plan->slot_floats);
  free (plan->tensor_slot);
  memset (plan, 0, sizeof *plan);
}
