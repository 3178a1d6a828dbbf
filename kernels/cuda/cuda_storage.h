/* cuda_storage.h: C++ overloads (nvcc only) that let one kernel template serve fp32 and
 * fp16 storage: load/store of float or gpunet_half elements, and the cuda_math.h
 * per-element functions picked by the storage type.  The maths is always float. */
#ifndef GPUNET_CUDA_STORAGE_H
#define GPUNET_CUDA_STORAGE_H

#include "cuda_math.h"
#include "half.h"

GPUNET_HD float gpunet_ld (const float *p, long long i) { return p[i]; }
GPUNET_HD float gpunet_ld (const gpunet_half *p, long long i) { return gpunet_half_to_float (p[i]); }
GPUNET_HD void gpunet_st (float *p, long long i, float v) { p[i] = v; }
GPUNET_HD void gpunet_st (gpunet_half *p, long long i, float v) { p[i] = gpunet_half_from_float (v); }

GPUNET_HD float
gpunet_epilogue_at_t (const float *y, const float *bias, const float *res, long long idx, int c,
    long long plane, int act)
{
  return gpunet_epilogue_at (y, bias, res, idx, c, plane, act);
}

GPUNET_HD float
gpunet_epilogue_at_t (const gpunet_half *y, const float *bias, const gpunet_half *res,
    long long idx, int c, long long plane, int act)
{
  return gpunet_epilogue_at_h (y, bias, res, idx, c, plane, act);
}

GPUNET_HD float
gpunet_dwconv_out_at_t (const float *in, const float *w, const float *bias, long long idx, int c,
    int ih, int iw, int oh, int ow, int k, int stride, int pad, int act)
{
  return gpunet_dwconv_out_at (in, w, bias, idx, c, ih, iw, oh, ow, k, stride, pad, act);
}

GPUNET_HD float
gpunet_dwconv_out_at_t (const gpunet_half *in, const gpunet_half *w, const float *bias,
    long long idx, int c, int ih, int iw, int oh, int ow, int k, int stride, int pad, int act)
{
  return gpunet_dwconv_out_at_h (in, w, bias, idx, c, ih, iw, oh, ow, k, stride, pad, act);
}

GPUNET_HD float
gpunet_dot_partial_t (const float *w, const float *x, int n, int lane, int lanes)
{
  return gpunet_dot_partial (w, x, n, lane, lanes);
}

GPUNET_HD float
gpunet_dot_partial_t (const gpunet_half *w, const gpunet_half *x, int n, int lane, int lanes)
{
  return gpunet_dot_partial_hh (w, x, n, lane, lanes);
}

GPUNET_HD float
gpunet_dot_partial_t (const gpunet_half *w, const float *x, int n, int lane, int lanes)
{
  return gpunet_dot_partial_hf (w, x, n, lane, lanes);
}

/* The sum of v over the 32 lanes of a full warp in gpunet_warp_tree_sum's order
 * (cuda_fused.h: shuffle-down by 16, 8, 4, 2, 1); lane 0 holds the total. */
static __device__ __forceinline__ float
gpunet_warp_sum (float v)
{
  for (int off = 16; off > 0; off /= 2)
    v += __shfl_down_sync (0xffffffffu, v, off);
  return v;
}

#endif /* GPUNET_CUDA_STORAGE_H */
