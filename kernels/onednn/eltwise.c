/* eltwise.c: the in-place vector swish (see eltwise.h). */
#include <stddef.h>

#include <omp.h>

#include "activation.h"
#include "blocked_ops.h"
#include "eltwise.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

#define SIMD_WIDTH 16
#include "simd_begin.h"
#include "eltwise_simd.h"
#include "simd_end.h"

#define SIMD_WIDTH 8
#include "simd_begin.h"
#include "eltwise_simd.h"
#include "simd_end.h"

void
gpunet_swish_inplace (float *x, size_t n, int blk, int nt)
{
  if (blk == 16)
    swish_inplace_avx512 (x, n, nt);
  else
    swish_inplace_avx2 (x, n, nt);
}

#else /* never planned where gpunet_wino_available is 0 */

void
gpunet_swish_inplace (float *x, size_t n, int blk, int nt)
{
  (void) x, (void) n, (void) blk, (void) nt;
}

#endif
