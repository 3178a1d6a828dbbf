/* memplan.h: activation memory planning shared by backends: assigns graph tensors to
 * slots so that tensors whose lifetimes do not overlap share memory (host memory here;
 * a device backend can reuse the slot assignment with its own allocator). */
#ifndef GPUNET_MEMPLAN_H
#define GPUNET_MEMPLAN_H

#include <stddef.h>

#include "graph.h"

typedef struct {
  int n_slots;
  size_t *slot_floats;   /* capacity of each slot, in floats */
  int *tensor_slot;      /* per tensor, -1 for the graph input (caller-provided) */
  float **slot_mem;      /* host allocations (NULL when built with alloc_align == 0) */
} gpunet_memplan;

/* Computes slots for `max_batch` images; allocates host memory aligned to alloc_align
 * bytes unless it is 0.  Returns 0 or -1 (out of memory). */
int gpunet_memplan_build (gpunet_memplan *plan, const gpunet_graph *graph, int max_batch,
    size_t alloc_align);
void gpunet_memplan_clear (gpunet_memplan *plan);

static inline float *
gpunet_memplan_tensor (const gpunet_memplan *plan, int tensor)
{
  return plan->slot_mem[plan->tensor_slot[tensor]];
}

#endif
