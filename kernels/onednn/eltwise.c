/* eltwise.c: the in-place vector swish (see eltwise.h). */
#include <stddef.h>

#include <omp.h>

#include "activation.h"
#include "eltwise.h"

/* Below this many elements the pass runs on the calling thread (as blocked_ops.c) */
#define SWISH_PARALLEL_MIN 65536L

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

#define SIMD_WIDTH 16
#include "simd_begin.h"
static void
FN (swish_inplace) (float *x, size_t n, int nt)
{
  const long nv = (long) (n / VW);
#pragma omp parallel for num_threads(nt) schedule(static) if (nv * VW >= SWISH_PARALLEL_MIN)
  for (long i = 0; i < nv; i++)
    V_STORE (x + (size_t) i * VW, FN (simd_act) (V_LOAD (x + (size_t) i * VW), GPUNET_EPI_SWISH));
}
#include "simd_end.h"

#define SIMD_WIDTH 8
#include "simd_begin.h"
static void
FN (swish_inplace) (float *x, size_t n, int nt)
{
  const long nv = (long) (n / VW);
#pragma omp parallel for num_threads(nt) schedule(static) if (nv * VW >= SWISH_PARALLEL_MIN)
  for (long i = 0; i < nv; i++)
    V_STORE (x + (size_t) i * VW, FN (simd_act) (V_LOAD (x + (size_t) i * VW), GPUNET_EPI_SWISH));
}
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
