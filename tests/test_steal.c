/* test_steal.c: kernels/onednn/steal.h, the work stealing of our Winograd kernel.  Every
 * item must be handed out exactly once, whatever the team size and however unevenly the
 * threads run; each thread must get its own share in order; and a thread held back
 * must see its items taken by the others (else a slow core still holds the whole op). */
#include <omp.h>
#include <time.h>

#include "check.h"
#include "steal.h"

static void
sleep_us (long us)
{
  struct timespec t = { us / 1000000, (us % 1000000) * 1000 };
  nanosleep (&t, NULL);
}

/* Runs n items on nt threads, thread `slow` (or -1: none) sleeping `delay_us` per item;
 * checks each item ran once and owners took their own items in increasing order; returns
 * how many items a thread other than their owner ran. */
static int
run_items (int n, int nt, int slow, long delay_us)
{
  int *count = calloc ((size_t) (n > 0 ? n : 1), sizeof (int));
  int *runner = calloc ((size_t) (n > 0 ? n : 1), sizeof (int));
  gpunet_steal sh[GPUNET_STEAL_MAX_THREADS];
  int in_order = 1;
  gpunet_steal_init (sh, nt, n);
  omp_set_dynamic (0);
#pragma omp parallel num_threads(nt) reduction(&&:in_order)
  {
    const int me = omp_get_thread_num ();
    const int lo = (int) ((long) n * me / nt), hi = (int) ((long) n * (me + 1) / nt);
    int last_own = lo - 1;
    for (int item; (item = gpunet_steal_next (sh, nt, me)) >= 0;) {
      __atomic_add_fetch (&count[item], 1, __ATOMIC_RELAXED);
      runner[item] = me;
      if (item >= lo && item < hi) {
        in_order = in_order && item == last_own + 1;
        last_own = item;
      }
      if (me == slow)
        sleep_us (delay_us);
    }
  }
  int once = 1, moved = 0;
  for (int i = 0; i < n; i++) {
    once = once && count[i] == 1;
    int owner = 0;
    while ((long) n * (owner + 1) / nt <= i)
      owner++;
    moved += runner[i] != owner;
  }
  CHECK_MSG (once, "n %d, %d threads: an item ran more or less than once", n, nt);
  CHECK_MSG (in_order, "n %d, %d threads: an owner skipped or reordered its own items", n,
      nt);
  free (count);
  free (runner);
  return moved;
}

int
main (void)
{
  /* every size and team, each thread at its own speed */
  const int ns[] = { 0, 1, 2, 7, 64, 1000, 100000 };
  const int nts[] = { 1, 2, 3, 4, 8 };
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (size_t b = 0; b < sizeof nts / sizeof nts[0]; b++)
      run_items (ns[a], nts[b], -1, 0);

  /* a thread that sleeps 2 ms per item: the others take over most of its share */
  for (int nt = 2; nt <= 4; nt++) {
    const int n = 40 * nt;
    const int moved = run_items (n, nt, 0, 2000);
    CHECK_MSG (moved >= 20, "%d threads, thread 0 held back: only %d of its %d items moved",
        nt, moved, n / nt);
  }

  /* a team smaller than the shares (nested or capped OpenMP): the missing threads' shares
   * are still run, by stealing */
  {
    gpunet_steal sh[4];
    int seen[100] = { 0 };
    gpunet_steal_init (sh, 4, 100);
    for (int item; (item = gpunet_steal_next (sh, 4, 1)) >= 0;)
      seen[item]++;
    int all = 1;
    for (int i = 0; i < 100; i++)
      all = all && seen[i] == 1;
    CHECK_MSG (all, "one thread of four did not run every item once");
  }
  return check_report ();
}
