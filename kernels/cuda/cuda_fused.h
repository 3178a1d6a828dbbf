/* cuda_fused.h: the arithmetic of the opt-in fused kernels (head.cu, the squeeze of
 * dwconv2d.cu, the excite of se.cu) as GPUNET_HD functions: the orders in which their
 * warps and blocks sum, so tests/test_cuda_fused.c replays exactly what the kernels do
 * on the CPU and compares it with the reference ops.  Plain C99 and CUDA C++. */
#ifndef GPUNET_CUDA_FUSED_H
#define GPUNET_CUDA_FUSED_H

#include "cuda_math.h"
#include "cuda_topk.h"
#include "half.h"
#include "hd.h"

/* Threads of the fused head's block (one block per image) and of the squeeze's block
 * (the tiled depthwise kernel's). */
enum { GPUNET_HEAD_THREADS = 1024, GPUNET_DW_SQ_THREADS = 128, GPUNET_EXCITE_THREADS = 256,
  GPUNET_GATE_THREADS = 128 };

/* ---- reductions: the orders the kernels use ------------------------------------------- */

/* The sum of v[0..31] in the order of a warp's shuffle-down reduction (offsets 16, 8, 4,
 * 2, 1; lane l adds lane l + off), which leaves the total in lane 0.  Overwrites v. */
GPUNET_HD float
gpunet_warp_tree_sum (float v[32])
{
  for (int off = 16; off > 0; off /= 2)
    for (int l = 0; l < off; l++)
      v[l] += v[l + off];
  return v[0];
}

/* One step of a shared-memory tree reduction (stride s = threads / 2, ..., 1): thread
 * t < s adds part[t + s].  After every step (with a barrier between steps) part[0] is
 * the total. */
GPUNET_HD void
gpunet_tree_step (float *part, int t, int s)
{
  if (t < s)
    part[t] += part[t + s];
}

GPUNET_HD void
gpunet_tree_step_d (double *part, int t, int s)
{
  if (t < s)
    part[t] += part[t + s];
}

/* One lane's strided share of the sum of a row of `plane` values (lanes `lanes` apart). */
GPUNET_HD float
gpunet_row_sum_partial (const float *row, long long plane, int lane, int lanes)
{
  float acc = 0.0f;
  for (long long i = lane; i < plane; i += lanes)
    acc += row[i];
  return acc;
}

GPUNET_HD float
gpunet_row_sum_partial_h (const gpunet_half *row, long long plane, int lane, int lanes)
{
  float acc = 0.0f;
  for (long long i = lane; i < plane; i += lanes)
    acc += gpunet_half_to_float (row[i]);
  return acc;
}

/* The lane shares of GPUNET_HEAD_ROWS consecutive rows at once (rows r, r + plane, ...):
 * acc[u] is exactly gpunet_row_sum_partial (rows + u * plane, ...), the same additions in
 * the same order, but the rows' loads are independent, so a warp keeps four in flight
 * where one row at a time waits on each.  m < GPUNET_HEAD_ROWS rows: the first m. */
enum { GPUNET_HEAD_ROWS = 4 };

GPUNET_HD void
gpunet_row_sum_partials (const float *rows, long long plane, int m, int lane, int lanes,
    float *acc)
{
  for (int u = 0; u < GPUNET_HEAD_ROWS; u++)
    acc[u] = 0.0f;
  if (m == GPUNET_HEAD_ROWS) {
    for (long long i = lane; i < plane; i += lanes)
      for (int u = 0; u < GPUNET_HEAD_ROWS; u++)
        acc[u] += rows[u * plane + i];
  } else {
    for (int u = 0; u < m; u++)
      acc[u] = gpunet_row_sum_partial (rows + u * plane, plane, lane, lanes);
  }
}

GPUNET_HD void
gpunet_row_sum_partials_h (const gpunet_half *rows, long long plane, int m, int lane,
    int lanes, float *acc)
{
  for (int u = 0; u < GPUNET_HEAD_ROWS; u++)
    acc[u] = 0.0f;
  if (m == GPUNET_HEAD_ROWS) {
    for (long long i = lane; i < plane; i += lanes)
      for (int u = 0; u < GPUNET_HEAD_ROWS; u++)
        acc[u] += gpunet_half_to_float (rows[u * plane + i]);
  } else {
    for (int u = 0; u < m; u++)
      acc[u] = gpunet_row_sum_partial_h (rows + u * plane, plane, lane, lanes);
  }
}

/* ---- fused head: pool + classifier + softmax + top-k in one kernel ----------------------
 * gpunet_head_split (classes) blocks per image, so the classifier's weights are read by
 * several SMs.  In each, warp w pools channels 4w..4w+3, then those 4 * 32 further on,
 * ...: each lane sums its strided share of the four planes (gpunet_row_sum_partials), the
 * warp tree adds each channel's 32 shares, lane 0 stores gpunet_head_mean (every block of
 * an image pools alike, in the same order).  Then
 * warp w of block part computes classes part * 32 + w, then + 32 * split, ...: lane shares
 * of the dot product with the pooled vector (gpunet_dot_partial[_hf]), the warp tree, and
 * gpunet_head_logit, stored as float.  With k > 0 the image's last block to finish (a
 * ticket counter per image, reset by that block) reads the image's logits, sorts (logit,
 * id) pairs with the bitonic network of cuda_topk.h, sums the softmax denominator in
 * double (gpunet_softmax_partial, a block tree) and writes k gpunet_softmax_score
 * results. */

/* Classes per warp the head aims at: more blocks per image read the weights in parallel,
 * but each pools the image again (from L2).  Not tuned on a GPU. */
enum { GPUNET_HEAD_CLASSES_PER_WARP = 2, GPUNET_HEAD_MAX_SPLIT = 64 };

/* Blocks per image of the fused head: ceil(classes / (32 * 2)), 1 to 64. */
GPUNET_HD int
gpunet_head_split (int classes)
{
  const int per_block = 32 * GPUNET_HEAD_CLASSES_PER_WARP;
  int s = (classes + per_block - 1) / per_block;
  return s < 1 ? 1 : s > GPUNET_HEAD_MAX_SPLIT ? GPUNET_HEAD_MAX_SPLIT : s;
}

/* The pooled mean from the warp's total of the lane shares (gpunet_warp_tree_sum). */
GPUNET_HD float
gpunet_head_mean (float sum, long long plane)
{
  return sum / (float) plane;
}

/* A class's logit from the warp's total of its dot product's lane shares. */
GPUNET_HD float
gpunet_head_logit (float dot, float bias, int act)
{
  return gpunet_cuda_act (dot + bias, act);
}

/* Thread t's share of the softmax denominator over the sorted logits val[0..classes)
 * (max = val[0]), threads apart. */
GPUNET_HD double
gpunet_softmax_partial (const float *val, int classes, double max, int t, int threads)
{
  double s = 0.0;
  for (int i = t; i < classes; i += threads)
    s += exp ((double) val[i] - max);
  return s;
}

GPUNET_HD float
gpunet_softmax_score (float v, double max, double sum)
{
  return (float) (exp ((double) v - max) / sum);
}

/* Dynamic shared memory of the fused head: part[GPUNET_HEAD_THREADS] doubles, then
 * val[n_pow2] floats, id[n_pow2] ints and pooled[c] floats (the kernel adds a few static
 * bytes). */
GPUNET_HD long long
gpunet_head_shared_bytes (int c, int classes)
{
  return (long long) GPUNET_HEAD_THREADS * 8 + (long long) gpunet_pow2_ceil (classes) * 8
      + (long long) c * 4;
}

/* ---- fused squeeze-excite ----------------------------------------------------------------
 * The tiled depthwise kernel (cuda_math.h) also sums what it stores: each thread adds, per
 * quad, gpunet_dw_quad_store's sum of the quad's stored outputs inside the plane; a block
 * tree over the 128 threads gives the tile's sum, written to partials[plane * tiles +
 * tile].  The reduce kernel (gpunet_se_split (rd) blocks per image) turns a channel's tile
 * sums into its mean (gpunet_se_mean_from_tiles), then warp w of block part computes
 * reduce rows part * 8 + w, then + 8 * split, ... (lane shares, warp tree, gpunet_se_mid).
 * The gate kernel (a block per image and channel) has warp 0 compute the channel's gate
 * the same way (gpunet_se_gate) and all threads multiply the plane by it, as the unfused
 * scale kernel does. */

/* Blocks per image of the reduce kernel: one reduce row per warp, 1 to 64 blocks. */
GPUNET_HD int
gpunet_se_split (int rd)
{
  const int per_block = GPUNET_EXCITE_THREADS / 32;
  int s = (rd + per_block - 1) / per_block;
  return s < 1 ? 1 : s > 64 ? 64 : s;
}

/* The value the storage holds for v: v itself (float), or v rounded to half. */
GPUNET_HD float
gpunet_stored (float v, int half)
{
  return half ? gpunet_half_to_float (gpunet_half_from_float (v)) : v;
}

/* The 4 outputs of quad q of tile (ty, tx) from its window sums acc: out[j] =
 * act(acc[j] + bias) as stored, in[j] = 1 when the output lies inside the oh x ow plane.
 * Returns the sum of the stored outputs inside the plane, j = 0..3 in order. */
GPUNET_HD float
gpunet_dw_quad_store (const gpunet_dw_tiling *t, int ty, int tx, int q, int oh, int ow,
    const float acc[4], float bias, int act, int half, float out[4], int in[4], int oy[4],
    int ox[4])
{
  float s = 0.0f;
  for (int j = 0; j < 4; j++) {
    in[j] = gpunet_dw_quad_out (t, ty, tx, q, j, oh, ow, &oy[j], &ox[j]);
    out[j] = gpunet_stored (gpunet_epilogue (acc[j], bias, act, 0.0f), half);
    if (in[j])
      s += out[j];
  }
  return s;
}

/* A channel's mean from its `tiles` tile sums, added in tile order. */
GPUNET_HD float
gpunet_se_mean_from_tiles (const float *tile_sums, int tiles, long long plane)
{
  float s = 0.0f;
  for (int i = 0; i < tiles; i++)
    s += tile_sums[i];
  return s / (float) plane;
}

/* Reduce row r: act(dot + b), dot the warp's total of the lane shares. */
GPUNET_HD float
gpunet_se_mid (float dot, float bias, int act)
{
  return gpunet_activate (dot + bias, act);
}

/* Expand row ch: sigmoid(dot + b), dot the warp's total of the lane shares. */
GPUNET_HD float
gpunet_se_gate (float dot, float bias)
{
  return gpunet_sigmoid (dot + bias);
}

/* Dynamic shared memory of the reduce kernel: mean[c] floats (rd: unused). */
GPUNET_HD long long
gpunet_excite_shared_bytes (int c, int rd)
{
  (void) rd;
  return (long long) c * 4;
}

#endif /* GPUNET_CUDA_FUSED_H */
