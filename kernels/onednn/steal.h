/* steal.h: items 0 .. n - 1 shared out among the nt threads of an OpenMP team, each thread
 * first taking its own contiguous share from the front, then, once that is empty, taking
 * items one at a time from the back of the share with the most left.  A thread so keeps
 * the locality of a static split (its items in order, so a kernel can reuse what one item
 * left in its cache or scratch for the next), and a core that runs slower than the others
 * (an SMT sibling at work, a noisy neighbour of a VM, a smaller core) no longer holds the
 * whole team at the end of the op.
 *
 * Usage: a gpunet_steal array of nt entries, set by gpunet_steal_init before the parallel
 * region and shared by it; inside, each thread calls gpunet_steal_next (s, nt, me) until it
 * returns -1.  Every item is returned exactly once. */
#ifndef GPUNET_STEAL_H
#define GPUNET_STEAL_H

#include <stdint.h>

/* one thread's share [next, end), packed as next | end << 32, alone on its cache line */
typedef struct {
  _Alignas (64) uint64_t r;
  char pad[64 - sizeof (uint64_t)];
} gpunet_steal;

#define GPUNET_STEAL_MAX_THREADS 256

static inline void
gpunet_steal_init (gpunet_steal *s, int nt, int n)
{
  for (int t = 0; t < nt; t++) {
    const uint64_t lo = (uint64_t) ((int64_t) n * t / nt);
    const uint64_t hi = (uint64_t) ((int64_t) n * (t + 1) / nt);
    __atomic_store_n (&s[t].r, lo | hi << 32, __ATOMIC_RELAXED);
  }
}

/* Takes one item from share q: its front (own) or its back (steal); -1 when it is empty. */
static inline int
gpunet_steal_take (gpunet_steal *s, int q, int own)
{
  uint64_t cur = __atomic_load_n (&s[q].r, __ATOMIC_RELAXED);
  for (;;) {
    const uint32_t next = (uint32_t) cur, end = (uint32_t) (cur >> 32);
    if (next >= end)
      return -1;
    const uint64_t want = own ? cur + 1 : (uint64_t) next | (uint64_t) (end - 1) << 32;
    if (__atomic_compare_exchange_n (&s[q].r, &cur, want, 0, __ATOMIC_RELAXED,
            __ATOMIC_RELAXED))
      return (int) (own ? next : end - 1);
  }
}

/* The next item for thread me of nt, or -1 when all are taken. */
static inline int
gpunet_steal_next (gpunet_steal *s, int nt, int me)
{
  int item = gpunet_steal_take (s, me, 1);
  while (item < 0) {
    int victim = -1;
    uint32_t most = 0;
    for (int q = 0; q < nt; q++) {
      const uint64_t cur = __atomic_load_n (&s[q].r, __ATOMIC_RELAXED);
      const uint32_t left = (uint32_t) (cur >> 32) > (uint32_t) cur
          ? (uint32_t) (cur >> 32) - (uint32_t) cur : 0;
      if (q != me && left > most) {
        most = left;
        victim = q;
      }
    }
    if (victim < 0)
      return -1;
    item = gpunet_steal_take (s, victim, 0);
  }
  return item;
}

#endif
