/* cuda_topk.h: the arithmetic of the device softmax + top-k (topk.cu): the ordering of
 * (logit, class id) pairs that gpunet_topk_softmax uses (larger logit first, the lower
 * id first among equal ones) and one compare-exchange of the bitonic sort network, both
 * GPUNET_HD so the tests run the whole network on the host. */
#ifndef GPUNET_CUDA_TOPK_H
#define GPUNET_CUDA_TOPK_H

#include "hd.h"

/* Classes the device top-k sorts in shared memory (a power of two); larger models copy
 * the logits back and select on the host. */
#define GPUNET_CUDA_TOPK_MAX 2048

/* Non-zero when (va, ia) ranks before (vb, ib).  Padding entries carry id -1 and rank
 * last; a NaN logit ranks after every number. */
GPUNET_HD int
gpunet_topk_before (float va, int ia, float vb, int ib)
{
  if (ib < 0)
    return ia >= 0;
  if (ia < 0)
    return 0;
  if (va > vb)
    return 1;
  if (va == vb)
    return ia < ib;
  return vb != vb && va == va;   /* only b is NaN */
}

/* The smallest power of two >= n (n >= 1). */
GPUNET_HD int
gpunet_pow2_ceil (int n)
{
  int p = 1;
  while (p < n)
    p <<= 1;
  return p;
}

/* Element i's step of the bitonic network stage (size, stride) over n_pow2 entries,
 * sorting into gpunet_topk_before order: the lower index of each pair swaps when the
 * pair is out of order for its half.  Every index < n_pow2 runs each stage once. */
GPUNET_HD void
gpunet_bitonic_step (float *val, int *id, int i, int size, int stride)
{
  const int j = i ^ stride;
  if (j <= i)
    return;
  /* blocks with (i & size) == 0 sort in "before" order, the others in reverse */
  const int swap = (i & size) == 0 ? gpunet_topk_before (val[j], id[j], val[i], id[i])
      : gpunet_topk_before (val[i], id[i], val[j], id[j]);
  if (swap) {
    const float tv = val[i];
    const int ti = id[i];
    val[i] = val[j];
    id[i] = id[j];
    val[j] = tv;
    id[j] = ti;
  }
}

#endif /* GPUNET_CUDA_TOPK_H */
