/* eltwise_simd.h: the vector code of eltwise.c, included there once per instruction set
 * between simd_begin.h and simd_end.h (which define VW, VEC, V_* and FN).  No include
 * guard: meant to be included more than once. */

static void
FN (swish_inplace) (float *x, size_t n, int nt)
{
  const long nv = (long) (n / VW);
#pragma omp parallel for num_threads(nt) schedule(static) if (nv * VW >= GPUNET_BLK_PARALLEL_MIN)
  for (long i = 0; i < nv; i++)
    V_STORE (x + (size_t) i * VW, FN (simd_act) (V_LOAD (x + (size_t) i * VW), GPUNET_EPI_SWISH));
}
