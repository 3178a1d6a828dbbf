/* blocked_ops.h: the fast CPU path's own kernels, for the ops oneDNN has no fused form of:
 * squeeze-excite in place, global average pool, the classifier, and layout conversion.
 * They work on a "channel-blocked" view: element (b, c, s) of a tensor with padded channel
 * count cp and block B (16 = oneDNN nChw16c, 8 = nChw8c, 1 = plain NCHW; at most 16) lives at
 * b*cp*hw + (c/B)*B*hw + s*B + c%B.  All use OpenMP with `nt` threads. */
#ifndef GPUNET_BLOCKED_OPS_H
#define GPUNET_BLOCKED_OPS_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "ops.h"

/* Zeroed, 64-byte aligned floats (at least one line); free() releases them.  NULL when out
 * of memory.  From 2 MiB on, whole 2 MiB pages, aligned to them, with the kernel asked for
 * transparent huge pages (Linux; where they are off, or only on request as on the machines
 * measured, "madvise" mode, plain pages as before): the fast path's activations, scratch,
 * Winograd weights and oneDNN's reordered weights are read in strides across megabytes (a
 * Winograd transform touches 36-64 planes, a 1x1 convolution streams megabytes of weights),
 * and with 4 KiB pages every plane or page of weights costs a TLB miss.  A small gain,
 * measured on AVX2 with 2 threads against plain pages, alternating: sums of per-op minima
 * over 6 rounds GPUNet-2 74.6 -> 74.2 and 71.2 -> 70.8 ms, GPUNet-1 31.1 -> 30.7, GPUNet-0
 * 28.1 -> 27.9; GPUNet-2's bench median over 6 runs of 20, 73.2 -> 72.0 ms.  The cost: the
 * rounding to whole pages, peak RSS of the bench GPUNet-2 252 -> 269 MB, GPUNet-0 123 -> 129. */
#define GPUNET_HUGE_PAGE ((size_t) 2 << 20)
static inline float *
gpunet_blk_alloc (size_t floats)
{
  size_t bytes = (floats * sizeof (float) + 63) / 64 * 64;
  size_t align = 64;
  if (bytes >= GPUNET_HUGE_PAGE) {
    align = GPUNET_HUGE_PAGE;
    bytes = (bytes + GPUNET_HUGE_PAGE - 1) / GPUNET_HUGE_PAGE * GPUNET_HUGE_PAGE;
  }
  float *m = aligned_alloc (align, bytes ? bytes : 64);
  if (!m)
    return NULL;
#ifdef MADV_HUGEPAGE
  if (align == GPUNET_HUGE_PAGE)
    (void) madvise (m, bytes, MADV_HUGEPAGE);   /* a hint: plain pages if refused */
#endif
  memset (m, 0, bytes ? bytes : 64);
  return m;
}

/* Below this many elements a kernel of the fast path runs on the calling thread: waking
 * the team and the barrier cost more than the work (and a descheduled sibling on shared
 * cores stalls it). */
#define GPUNET_BLK_PARALLEL_MIN 65536L

/* Round c up to a whole number of B-channel blocks. */
static inline int
gpunet_blk_pad (int c, int blk)
{
  return (c + blk - 1) / blk * blk;
}

/* Copies n x c x hw from layout (sb, scp) to layout (db, dcp); padded channels of the
 * destination are zeroed. */
void gpunet_blk_relayout (const float *src, int sb, int scp, float *dst, int db, int dcp,
    int n, int c, long hw, int nt);

/* The size of a core's L2 cache in bytes (sysconf), 0 where the C library does not know it. */
size_t gpunet_blk_l2_bytes (void);

/* Squeeze-excite in place on x (layout blk, padded channels cp).  `scratch` holds
 * n * (cp + rd) floats. */
void gpunet_blk_se (const gpunet_se_params *p, float *x, int blk, int cp, int n,
    float *scratch, int nt);

/* Global average pool of `in` (layout blk, cp) to plain n x c. */
void gpunet_blk_avgpool (const gpunet_avgpool_params *p, const float *in, int blk, int cp,
    float *out, int n, int nt);

/* Fully connected layer: in is n vectors of stride in_cp (c x 1 x 1 in any layout),
 * out plain n x cout. */
void gpunet_blk_linear (const gpunet_linear_params *p, const float *in, int in_cp, float *out,
    int n, int nt);

#endif
