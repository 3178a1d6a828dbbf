/* linear.c: the vector fully connected layer (see linear.h). */
#include <stddef.h>

#include <omp.h>

#include "activation.h"
#include "blocked_ops.h"
#include "linear.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))

#define SIMD_WIDTH 16
#include "simd_begin.h"
#include "linear_simd.h"
#include "simd_end.h"

#define SIMD_WIDTH 8
#include "simd_begin.h"
#include "linear_simd.h"
#include "simd_end.h"

void
gpunet_linear_run (const gpunet_linear_params *p, const float *in, int in_cp, float *out,
    int n, int blk, int nt)
{
  if (blk == 16)
    linear_run_avx512 (p, in, in_cp, out, n, nt);
  else
    linear_run_avx2 (p, in, in_cp, out, n, nt);
}

#else /* never planned where gpunet_wino_available is 0 */

void
gpunet_linear_run (const gpunet_linear_params *p, const float *in, int in_cp, float *out,
    int n, int blk, int nt)
{
  (void) p, (void) in, (void) in_cp, (void) out, (void) n, (void) blk, (void) nt;
}

#endif
