/* cuda_math.h: the per-element arithmetic of the CUDA kernels (index maps, the depthwise
 * window sum, the strided dot-product partials, epilogues, launch geometry) as GPUNET_HD
 * functions, so tests/test_cuda_math.c runs exactly this code on the CPU against the
 * reference backend.  Plain C99 and CUDA C++; the kernels only map threads to calls. */
#ifndef GPUNET_CUDA_MATH_H
#define GPUNET_CUDA_MATH_H

#include "activation.h"
#include "half.h"
#include "hd.h"

/* An activation code beyond GPUNET_EPI_*, used by the SE gate (expand FC + sigmoid). */
enum { GPUNET_CUDA_ACT_SIGMOID = 16 };

/* gpunet_activate extended with GPUNET_CUDA_ACT_SIGMOID. */
GPUNET_HD float
gpunet_cuda_act (float x, int act)
{
  return act == GPUNET_CUDA_ACT_SIGMOID ? gpunet_sigmoid (x) : gpunet_activate (x, act);
}

/* The channel of flat NCHW element `idx`, given c channels of `plane` elements each. */
GPUNET_HD int
gpunet_nchw_channel (long long idx, int c, long long plane)
{
  return (int) ((idx / plane) % c);
}

/* The convolution epilogue at flat NCHW element idx of y (in place over cuDNN's raw
 * output): act(y + bias[ch]) + residual[idx]; bias and residual may be NULL. */
GPUNET_HD float
gpunet_epilogue_at (const float *y, const float *bias, const float *residual, long long idx,
    int c, long long plane, int act)
{
  const int ch = gpunet_nchw_channel (idx, c, plane);
  return gpunet_epilogue (y[idx], bias ? bias[ch] : 0.0f, act, residual ? residual[idx] : 0.0f);
}

/* Output size of a convolution along one axis (symmetric padding, no dilation). */
GPUNET_HD int
gpunet_conv_out_dim (int in, int kernel, int stride, int pad)
{
  return (in + 2 * pad - kernel) / stride + 1;
}

/* The depthwise window sum at output (oy, ox) of one channel of an ih x iw plane whose
 * element (y, x) is x[y * row + x * col] (NCHW: row = iw, col = 1; NHWC: row = iw * c,
 * col = c), `w` its k x k filter; taps outside the plane read zero.  Same tap order as
 * the CPU reference, whatever the layout. */
GPUNET_HD float
gpunet_dwconv_window (const float *x, int ih, int iw, long long row, int col, const float *w,
    int k, int stride, int pad, int oy, int ox)
{
  float acc = 0.0f;
  for (int ky = 0; ky < k; ky++) {
    const int iy = oy * stride + ky - pad;
    if (iy < 0 || iy >= ih)
      continue;
    for (int kx = 0; kx < k; kx++) {
      const int ix = ox * stride + kx - pad;
      if (ix < 0 || ix >= iw)
        continue;
      acc += w[ky * k + kx] * x[iy * row + (long long) ix * col];
    }
  }
  return acc;
}

/* gpunet_dwconv_window over an NCHW plane. */
GPUNET_HD float
gpunet_dwconv_at (const float *x, int ih, int iw, const float *w, int k, int stride, int pad,
    int oy, int ox)
{
  return gpunet_dwconv_window (x, ih, iw, iw, 1, w, k, stride, pad, oy, ox);
}

/* ---- the tiled depthwise kernel (the default; dwconv2d.cu) ------------------------------
 * A block computes a tile of th x tw outputs of one (image, channel) plane.  Its threads
 * first copy the tile's input window, in_rows x in_cols values with zeros outside the
 * plane, and the channel's k x k filter into shared memory as float.  Then each thread
 * takes "quads", runs of 4 adjacent outputs of one tile row, and sums their taps from
 * there: the 4 outputs share most of each window row, so a row is read once for all 4
 * (the kernel is compiled for k in {3, 5, 7} and stride in {1, 2}, with every loop
 * unrolled).  Each output's taps are summed in the order of gpunet_dwconv_at.  A tap
 * outside the plane adds w * 0 where gpunet_dwconv_at skips it: acc + (+-0) is acc for any
 * acc the sum can hold (it starts at +0, and a sum rounds to -0 only when both terms are
 * -0), so the outputs are the direct kernel's bit for bit.  The functions below are all
 * the indexing and arithmetic the kernel does; tests/test_cuda_math.c runs them as the
 * blocks would. */
typedef struct {
  int tw, th;              /* outputs per tile: tw columns (a multiple of 4) by th rows */
  int tiles_x, tiles_y;    /* tiles per output plane */
  int in_cols, in_rows;    /* the input window one tile reads */
  int in_stride;           /* floats per window row in shared memory: in_cols rounded up to 4 */
  int quads;               /* th * tw / 4 runs of 4 outputs */
} gpunet_dw_tiling;

/* Tiles at most 40 columns wide and at most max_quads quads big (and 48 KB of shared
 * memory), each axis split evenly so the last tile is not mostly empty (a 33 x 33 plane
 * with max_quads 256: one tile of 36 x 17 and one of 36 x 16 rows' worth). */
GPUNET_HD gpunet_dw_tiling
gpunet_dw_tiling_for (int oh, int ow, int k, int stride, int max_quads)
{
  gpunet_dw_tiling t;
  t.tiles_x = (ow + 39) / 40;
  t.tw = ((ow + t.tiles_x - 1) / t.tiles_x + 3) / 4 * 4;
  t.in_cols = (t.tw - 1) * stride + k;
  t.in_stride = (t.in_cols + 3) / 4 * 4;
  const int quads_per_row = t.tw / 4;
  const int rows_fit = (12 * 1024 - k * k) / t.in_stride;    /* floats in 48 KB */
  int th_max = max_quads / quads_per_row;
  if (th_max > (rows_fit - k) / stride + 1)
    th_max = (rows_fit - k) / stride + 1;
  if (th_max < 1)
    th_max = 1;
  t.tiles_y = (oh + th_max - 1) / th_max;
  t.th = (oh + t.tiles_y - 1) / t.tiles_y;
  t.in_rows = (t.th - 1) * stride + k;
  t.quads = t.th * quads_per_row;
  return t;
}

/* Row r, column col of tile (ty, tx)'s input window: 1 and its offset in the ih x iw plane
 * when inside the plane, else 0 (the tile holds zero there). */
GPUNET_HD int
gpunet_dw_tile_src (const gpunet_dw_tiling *t, int ty, int tx, int stride, int pad, int ih,
    int iw, int r, int col, long long *offset)
{
  const int iy = ty * t->th * stride - pad + r;
  const int ix = tx * t->tw * stride - pad + col;
  if (iy < 0 || iy >= ih || ix < 0 || ix >= iw)
    return 0;
  *offset = (long long) iy * iw + ix;
  return 1;
}

/* The values a quad reads from one window row, 3 * stride + k, in whole groups of 4 (at
 * most 16, for k 7 stride 2).  A quad's row segment starts at a multiple of 4 and ends
 * within the row's in_stride (tests/test_cuda_math.c checks it). */
GPUNET_HD int
gpunet_dw_seg4 (int k, int stride)
{
  return (3 * stride + k + 3) / 4;
}

/* Copies n4 groups of 4 floats; on the GPU as float4 loads from shared memory (src is
 * 16-byte aligned there), so a warp's quads read whole 16-byte lines instead of one
 * float per lane 16 bytes apart (4-way bank conflicts). */
GPUNET_HD void
gpunet_dw_copy4 (const float *src, float *dst, int n4)
{
#if defined(__CUDA_ARCH__)
  GPUNET_UNROLL
  for (int i = 0; i < n4; i++) {
    const float4 v = reinterpret_cast<const float4 *> (src)[i];
    dst[4 * i] = v.x;
    dst[4 * i + 1] = v.y;
    dst[4 * i + 2] = v.z;
    dst[4 * i + 3] = v.w;
  }
#else
  for (int i = 0; i < 4 * n4; i++)
    dst[i] = src[i];
#endif
}

/* The window sums of quad q of a tile (rows in_stride apart) with the float filter w:
 * acc[j] is the output at tile row q / (tw / 4), column 4 * (q % (tw / 4)) + j, its taps
 * in gpunet_dwconv_at's order. */
GPUNET_HD void
gpunet_dwconv_quad_at (const float *tile, const gpunet_dw_tiling *t, const float *w, int k,
    int stride, int q, float acc[4])
{
  const int qr = q / (t->tw / 4), qc = q % (t->tw / 4);
  const float *x = tile + qr * stride * t->in_stride + 4 * qc * stride;
  acc[0] = acc[1] = acc[2] = acc[3] = 0.0f;
  GPUNET_UNROLL
  for (int ky = 0; ky < k; ky++) {
    float xs[16];
    gpunet_dw_copy4 (x + ky * t->in_stride, xs, gpunet_dw_seg4 (k, stride));
    GPUNET_UNROLL
    for (int kx = 0; kx < k; kx++)
      GPUNET_UNROLL
      for (int j = 0; j < 4; j++)
        acc[j] += w[ky * k + kx] * xs[j * stride + kx];
  }
}

/* The output (oy, ox) of quad q's element j in tile (ty, tx): 1 when inside the plane. */
GPUNET_HD int
gpunet_dw_quad_out (const gpunet_dw_tiling *t, int ty, int tx, int q, int j, int oh, int ow,
    int *oy, int *ox)
{
  *oy = ty * t->th + q / (t->tw / 4);
  *ox = tx * t->tw + 4 * (q % (t->tw / 4)) + j;
  return *oy < oh && *ox < ow;
}

/* Output element `idx` (flat NCHW over n x c x oh x ow) of a depthwise convolution with
 * the epilogue act(acc + bias); bias may be NULL.  One GPU thread computes one of these. */
GPUNET_HD float
gpunet_dwconv_out_at (const float *in, const float *w, const float *bias, long long idx, int c,
    int ih, int iw, int oh, int ow, int k, int stride, int pad, int act)
{
  const int ox = (int) (idx % ow);
  const int oy = (int) ((idx / ow) % oh);
  const long long nc = idx / ((long long) ow * oh);   /* image * c + channel */
  const int ch = (int) (nc % c);
  const float acc = gpunet_dwconv_at (in + nc * ih * iw, ih, iw, w + (long long) ch * k * k, k,
      stride, pad, oy, ox);
  return gpunet_epilogue (acc, bias ? bias[ch] : 0.0f, act, 0.0f);
}

/* One lane's share of dot(w, x) over n elements when `lanes` lanes split it by stride;
 * the partials of lanes 0..lanes-1 sum to the dot product. */
GPUNET_HD float
gpunet_dot_partial (const float *w, const float *x, int n, int lane, int lanes)
{
  float acc = 0.0f;
  for (int i = lane; i < n; i += lanes)
    acc += w[i] * x[i];
  return acc;
}

/* ---- fp16 storage variants: the same maths in float, reading gpunet_half tensors and
 * weights (biases stay float); the kernels round the result to half when they store. */

/* gpunet_epilogue_at over half y and residual (residual may be NULL). */
GPUNET_HD float
gpunet_epilogue_at_h (const gpunet_half *y, const float *bias, const gpunet_half *residual,
    long long idx, int c, long long plane, int act)
{
  const int ch = gpunet_nchw_channel (idx, c, plane);
  return gpunet_epilogue (gpunet_half_to_float (y[idx]), bias ? bias[ch] : 0.0f, act,
      residual ? gpunet_half_to_float (residual[idx]) : 0.0f);
}

/* gpunet_dwconv_window over half data and a half filter (same tap order). */
GPUNET_HD float
gpunet_dwconv_window_h (const gpunet_half *x, int ih, int iw, long long row, int col,
    const gpunet_half *w, int k, int stride, int pad, int oy, int ox)
{
  float acc = 0.0f;
  for (int ky = 0; ky < k; ky++) {
    const int iy = oy * stride + ky - pad;
    if (iy < 0 || iy >= ih)
      continue;
    for (int kx = 0; kx < k; kx++) {
      const int ix = ox * stride + kx - pad;
      if (ix < 0 || ix >= iw)
        continue;
      acc += gpunet_half_to_float (w[ky * k + kx])
          * gpunet_half_to_float (x[iy * row + (long long) ix * col]);
    }
  }
  return acc;
}

/* gpunet_dwconv_at over a half plane and half filter (same tap order). */
GPUNET_HD float
gpunet_dwconv_at_h (const gpunet_half *x, int ih, int iw, const gpunet_half *w, int k,
    int stride, int pad, int oy, int ox)
{
  return gpunet_dwconv_window_h (x, ih, iw, iw, 1, w, k, stride, pad, oy, ox);
}

/* gpunet_dwconv_out_at over half input and filter, float bias. */
GPUNET_HD float
gpunet_dwconv_out_at_h (const gpunet_half *in, const gpunet_half *w, const float *bias,
    long long idx, int c, int ih, int iw, int oh, int ow, int k, int stride, int pad, int act)
{
  const int ox = (int) (idx % ow);
  const int oy = (int) ((idx / ow) % oh);
  const long long nc = idx / ((long long) ow * oh);
  const int ch = (int) (nc % c);
  const float acc = gpunet_dwconv_at_h (in + nc * ih * iw, ih, iw, w + (long long) ch * k * k, k,
      stride, pad, oy, ox);
  return gpunet_epilogue (acc, bias ? bias[ch] : 0.0f, act, 0.0f);
}

/* gpunet_dot_partial with half weights and half (hh) or float (hf) inputs. */
GPUNET_HD float
gpunet_dot_partial_hh (const gpunet_half *w, const gpunet_half *x, int n, int lane, int lanes)
{
  float acc = 0.0f;
  for (int i = lane; i < n; i += lanes)
    acc += gpunet_half_to_float (w[i]) * gpunet_half_to_float (x[i]);
  return acc;
}

GPUNET_HD float
gpunet_dot_partial_hf (const gpunet_half *w, const float *x, int n, int lane, int lanes)
{
  float acc = 0.0f;
  for (int i = lane; i < n; i += lanes)
    acc += gpunet_half_to_float (w[i]) * x[i];
  return acc;
}

/* Blocks for a grid-stride launch over `total` elements: ceil(total / threads), at
 * least 1, at most max_blocks. */
GPUNET_HD long long
gpunet_grid_blocks (long long total, int threads, long long max_blocks)
{
  long long b = (total + threads - 1) / threads;
  if (b < 1)
    b = 1;
  return b > max_blocks ? max_blocks : b;
}

#endif
