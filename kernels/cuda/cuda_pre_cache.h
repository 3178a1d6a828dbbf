/* cuda_pre_cache.h: which entry of the CUDA backend's preprocess-table cache holds, or
 * receives, the device tap tables of a plan's geometry, so one call can classify frames
 * of several geometries, each descriptor pointing at its own tables.  Plain C (the
 * bookkeeping only; the uploads are in preprocess.cu), tested on the CPU in test_cuda_math. */
#ifndef GPUNET_CUDA_PRE_CACHE_H
#define GPUNET_CUDA_PRE_CACHE_H

#include <stdint.h>

#include "host/preprocess.h"

/* One entry's bookkeeping: the geometry its tables are for, and when it was last used. */
typedef struct {
  int in_w, in_h, out_size;
  gpunet_resize_mode mode;
  float crop_pct;
  uint64_t used;          /* clock of the last use; 0: empty (no tables, or being replaced) */
} gpunet_pre_cache_slot;

typedef struct {
  gpunet_pre_cache_slot *slots;
  int n;
  uint64_t clock;         /* ticks once per use */
  uint64_t call_start;    /* entries used at or after this tick belong to the current call */
} gpunet_pre_cache_index;

/* Starts a call: the entries it picks from now on are kept until the next call starts. */
static inline void
gpunet_pre_cache_begin (gpunet_pre_cache_index *c)
{
  c->call_start = c->clock + 1;
}

/* The entry for plan p's geometry.  A hit (*hit = 1) is marked used.  A miss (*hit = 0)
 * returns the least recently used entry the current call has not picked, emptied: the
 * caller uploads the tables, then calls gpunet_pre_cache_fill.  -1 when every entry
 * belongs to the current call (more geometries in one call than entries). */
static inline int
gpunet_pre_cache_pick (gpunet_pre_cache_index *c, const gpunet_preprocess_plan *p, int *hit)
{
  int victim = -1;
  for (int i = 0; i < c->n; i++) {
    gpunet_pre_cache_slot *e = &c->slots[i];
    if (e->used && e->in_w == p->in_w && e->in_h == p->in_h && e->out_size == p->out_size
        && e->mode == p->mode && e->crop_pct == p->crop_pct) {
      e->used = ++c->clock;
      *hit = 1;
      return i;
    }
    if (e->used < c->call_start && (victim < 0 || e->used < c->slots[victim].used))
      victim = i;
  }
  *hit = 0;
  if (victim >= 0)
    c->slots[victim].used = 0;
  return victim;
}

/* Records that entry i now holds the tables of p's geometry (after a successful upload). */
static inline void
gpunet_pre_cache_fill (gpunet_pre_cache_index *c, int i, const gpunet_preprocess_plan *p)
{
  gpunet_pre_cache_slot *e = &c->slots[i];
  e->in_w = p->in_w;
  e->in_h = p->in_h;
  e->out_size = p->out_size;
  e->mode = p->mode;
  e->crop_pct = p->crop_pct;
  e->used = ++c->clock;
}

#endif /* GPUNET_CUDA_PRE_CACHE_H */
