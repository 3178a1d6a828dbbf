/* cuda_nhwc.h: the per-element arithmetic of the NHWC network (the opt-in fused path at
 * level 2, GPUNET_CUDA_FUSED_NHWC): index maps between NCHW and NHWC, the convolution
 * epilogue and the depthwise window read from NHWC tensors, the squeeze's row sums and
 * the SE gate, as GPUNET_HD functions, so tests/test_cuda_nhwc.c runs this code on the
 * CPU against the reference ops.  Same tap and sum orders as the NCHW forms in
 * cuda_math.h: only the addresses differ.  Plain C99 and CUDA C++. */
#ifndef GPUNET_CUDA_NHWC_H
#define GPUNET_CUDA_NHWC_H

#include "cuda_math.h"

/* Flat NHWC index of (image, y, x, channel) in an h x w x c tensor. */
GPUNET_HD long long
gpunet_nhwc_at (long long img, int y, int x, int ch, int h, int w, int c)
{
  return ((img * h + y) * (long long) w + x) * c + ch;
}

/* The channel of flat NHWC element idx. */
GPUNET_HD int
gpunet_nhwc_channel (long long idx, int c)
{
  return (int) (idx % c);
}

/* The flat NCHW index of the element stored at flat NHWC index idx (c channels of
 * `plane` = h * w positions). */
GPUNET_HD long long
gpunet_nhwc_to_nchw (long long idx, int c, long long plane)
{
  const int ch = (int) (idx % c);
  const long long pos = idx / c;            /* image * plane + y * w + x */
  const long long img = pos / plane, yx = pos % plane;
  return (img * c + ch) * plane + yx;
}

/* The flat NHWC index of the element stored at flat NCHW index idx. */
GPUNET_HD long long
gpunet_nchw_to_nhwc (long long idx, int c, long long plane)
{
  const long long yx = idx % plane;
  const long long ic = idx / plane;         /* image * c + channel */
  const int ch = (int) (ic % c);
  const long long img = ic / c;
  return (img * plane + yx) * c + ch;
}

/* The convolution epilogue at flat NHWC element idx: act(y + bias[ch]) + residual[idx]. */
GPUNET_HD float
gpunet_epilogue_nhwc_at (const float *y, const float *bias, const float *residual,
    long long idx, int c, int act)
{
  const int ch = gpunet_nhwc_channel (idx, c);
  return gpunet_epilogue (y[idx], bias ? bias[ch] : 0.0f, act, residual ? residual[idx] : 0.0f);
}

GPUNET_HD float
gpunet_epilogue_nhwc_at_h (const gpunet_half *y, const float *bias, const gpunet_half *residual,
    long long idx, int c, int act)
{
  const int ch = gpunet_nhwc_channel (idx, c);
  return gpunet_epilogue (gpunet_half_to_float (y[idx]), bias ? bias[ch] : 0.0f, act,
      residual ? gpunet_half_to_float (residual[idx]) : 0.0f);
}

/* The depthwise window sum of channel ch at output (oy, ox): x is one image's ih x iw x c
 * NHWC tensor, w the channel's k x k filter (filters stay c x k x k);
 * gpunet_dwconv_window's tap order. */
GPUNET_HD float
gpunet_dwconv_nhwc_at (const float *x, int ih, int iw, int c, int ch, const float *w, int k,
    int stride, int pad, int oy, int ox)
{
  return gpunet_dwconv_window (x + ch, ih, iw, (long long) iw * c, c, w, k, stride, pad, oy,
      ox);
}

GPUNET_HD float
gpunet_dwconv_nhwc_at_h (const gpunet_half *x, int ih, int iw, int c, int ch,
    const gpunet_half *w, int k, int stride, int pad, int oy, int ox)
{
  return gpunet_dwconv_window_h (x + ch, ih, iw, (long long) iw * c, c, w, k, stride, pad, oy,
      ox);
}

/* The NHWC depthwise, squeeze and gate-scale kernels share one geometry: a block holds
 * GPUNET_NHWC_CH channels (a warp, channels innermost, so loads coalesce) times
 * GPUNET_NHWC_TY rows of threads, and covers a strip of GPUNET_NHWC_STRIP consecutive
 * positions (y * w + x) of one image; thread row ty takes positions ty, ty + TY, ...  The
 * squeeze writes one partial sum per (image, channel, strip): each thread row's sum in
 * position order, then the TY row sums in order (gpunet_nhwc_strip_sum), and the reduce
 * kernel adds the strips in order (gpunet_se_mean_from_tiles). */
enum { GPUNET_NHWC_CH = 32, GPUNET_NHWC_TY = 8, GPUNET_NHWC_STRIP = 64 };

/* Strips of a plane of `positions` positions. */
GPUNET_HD int
gpunet_nhwc_strips (long long positions)
{
  return (int) ((positions + GPUNET_NHWC_STRIP - 1) / GPUNET_NHWC_STRIP);
}

/* The strip length (positions) of an NHWC depthwise launch that writes no squeeze, with
 * nhwcstrip=fill: the longest of 64, 32, 16 and 8 whose grid (channel_groups x strips x n
 * blocks) has at least min_blocks blocks, else 8 (each thread row then computes one
 * position).  At batch 1 GPUNet-P1's 7x7 layers have 88 blocks of 64-position strips on an
 * H100's 132 SMs.  The outputs do not depend on it: each is its own window sum. */
GPUNET_HD int
gpunet_nhwc_fill_strip (long long positions, int channel_groups, int n, int min_blocks)
{
  for (int len = GPUNET_NHWC_STRIP; len > GPUNET_NHWC_TY; len /= 2) {
    const long long blocks = (long long) channel_groups * n * ((positions + len - 1) / len);
    if (blocks >= min_blocks)
      return len;
  }
  return GPUNET_NHWC_TY;
}

/* The squeeze partial of one strip from its values v[0 .. count) in position order, in the
 * kernels' order of additions. */
GPUNET_HD float
gpunet_nhwc_strip_sum (const float *v, int count)
{
  float total = 0.0f;
  for (int ty = 0; ty < GPUNET_NHWC_TY; ty++) {
    float part = 0.0f;
    for (int i = ty; i < count; i += GPUNET_NHWC_TY)
      part += v[i];
    total += part;
  }
  return total;
}

/* The SE gate of channel ch from the reduce row mid (rd floats): sigmoid(w2[ch] . mid + b2),
 * the dot summed in index order. */
GPUNET_HD float
gpunet_se_gate_seq (const float *w2row, const float *mid, int rd, float bias)
{
  float d = 0.0f;
  for (int r = 0; r < rd; r++)
    d += w2row[r] * mid[r];
  return gpunet_sigmoid (d + bias);
}

GPUNET_HD float
gpunet_se_gate_seq_h (const gpunet_half *w2row, const float *mid, int rd, float bias)
{
  float d = 0.0f;
  for (int r = 0; r < rd; r++)
    d += gpunet_half_to_float (w2row[r]) * mid[r];
  return gpunet_sigmoid (d + bias);
}

/* The KRSC (NHWC filter) index of OIHW weight element (o, i, ky, kx): what the weight
 * upload of the NHWC path writes. */
GPUNET_HD long long
gpunet_krsc_at (int o, int i, int ky, int kx, int cin, int k)
{
  return (((long long) o * k + ky) * k + kx) * cin + i;
}

#endif /* GPUNET_CUDA_NHWC_H */
