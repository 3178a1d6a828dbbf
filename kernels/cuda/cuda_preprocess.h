/* cuda_preprocess.h: the per-output-pixel function of the CUDA fused preprocess
 * (preprocess.cu), GPUNET_HD so the tests call it on the host against
 * gpunet_cpu_preprocess.  It reads the tap tables of a gpunet_preprocess_plan and sums
 * in the CPU pass's order (vertical per column, then horizontal in groups of 4). */
#ifndef GPUNET_CUDA_PREPROCESS_H
#define GPUNET_CUDA_PREPROCESS_H

#include "hd.h"
#include "preprocess_math.h"
#include "host/preprocess.h"

/* One axis of the plan as the kernel reads it (host or device copies of the tables). */
typedef struct {
  const int *first;       /* out_size: first source index of output o */
  const int *count;       /* out_size: taps of output o */
  const float *weights;   /* out_size x ksize, zero past count */
  int ksize, lo, hi;      /* outputs outside [lo, hi) are padding */
} gpunet_cuda_axis;

/* Everything one image's kernel launch needs, passed by value. */
typedef struct {
  gpunet_pixel_src src;   /* planes: device pointers in the kernel */
  gpunet_cuda_axis x, y;
  int out_size;
  int round8;
  float pad[3];
} gpunet_cuda_pre_desc;

/* Fills `d` from a plan and a validated image of the plan's size, pointing at the plan's
 * own (host) tables; the module then repoints the six table pointers at device copies. */
static inline void
gpunet_cuda_pre_desc_init (gpunet_cuda_pre_desc *d, const gpunet_preprocess_plan *p,
    const gpunet_image *img)
{
  gpunet_pixel_src_init (&d->src, img);
  d->x.first = p->x.first;
  d->x.count = p->x.count;
  d->x.weights = p->x.weights;
  d->x.ksize = p->x.ksize;
  d->x.lo = p->x.lo;
  d->x.hi = p->x.hi;
  d->y.first = p->y.first;
  d->y.count = p->y.count;
  d->y.weights = p->y.weights;
  d->y.ksize = p->y.ksize;
  d->y.lo = p->y.lo;
  d->y.hi = p->y.hi;
  d->out_size = p->out_size;
  d->round8 = p->round8;
  for (int c = 0; c < 3; c++)
    d->pad[c] = p->pad[c];
}

/* The vertical sum of source column x over output row oy's taps, RGB, in the order of
 * the CPU pass's vertical_sum (4 rows, then groups of 4, then single rows). */
GPUNET_HD void
gpunet_cuda_column_sum (const gpunet_cuda_pre_desc *d, int x, int fy, int cy, const float *w,
    float *sr, float *sg, float *sb)
{
  float r[4], g[4], b[4], ar, ag, ab;
  int k;
  if (cy >= 4) {
    for (int j = 0; j < 4; j++)
      gpunet_fetch_rgb (&d->src, x, fy + j, &r[j], &g[j], &b[j]);
    ar = w[0] * r[0] + w[1] * r[1] + w[2] * r[2] + w[3] * r[3];
    ag = w[0] * g[0] + w[1] * g[1] + w[2] * g[2] + w[3] * g[3];
    ab = w[0] * b[0] + w[1] * b[1] + w[2] * b[2] + w[3] * b[3];
    k = 4;
  } else {
    gpunet_fetch_rgb (&d->src, x, fy, &r[0], &g[0], &b[0]);
    ar = w[0] * r[0];
    ag = w[0] * g[0];
    ab = w[0] * b[0];
    k = 1;
  }
  for (; k + 4 <= cy; k += 4) {
    for (int j = 0; j < 4; j++)
      gpunet_fetch_rgb (&d->src, x, fy + k + j, &r[j], &g[j], &b[j]);
    const float *wk = w + k;
    ar += wk[0] * r[0] + wk[1] * r[1] + wk[2] * r[2] + wk[3] * r[3];
    ag += wk[0] * g[0] + wk[1] * g[1] + wk[2] * g[2] + wk[3] * g[3];
    ab += wk[0] * b[0] + wk[1] * b[1] + wk[2] * b[2] + wk[3] * b[3];
  }
  for (; k < cy; k++) {
    gpunet_fetch_rgb (&d->src, x, fy + k, &r[0], &g[0], &b[0]);
    ar += w[k] * r[0];
    ag += w[k] * g[0];
    ab += w[k] * b[0];
  }
  *sr = ar;
  *sg = ag;
  *sb = ab;
}

/* The normalised R, G, B of output pixel (ox, oy): padding outside the resized image,
 * else the separable antialiased bicubic sum, rounded like PIL's 8-bit output when
 * round8, clamped and normalised.  Taps past an output's count weigh zero and are not
 * read (the CPU reads finite neighbours there: same sum). */
GPUNET_HD void
gpunet_cuda_preprocess_pixel (const gpunet_cuda_pre_desc *d, int ox, int oy, float *out_r,
    float *out_g, float *out_b)
{
  if (oy < d->y.lo || oy >= d->y.hi || ox < d->x.lo || ox >= d->x.hi) {
    *out_r = d->pad[0];
    *out_g = d->pad[1];
    *out_b = d->pad[2];
    return;
  }
  const int fy = d->y.first[oy], cy = d->y.count[oy];
  const float *wy = d->y.weights + (size_t) oy * d->y.ksize;
  const int fx = d->x.first[ox], cx = d->x.count[ox];
  const float *wx = d->x.weights + (size_t) ox * d->x.ksize;
  float sr = 0.0f, sg = 0.0f, sb = 0.0f;
  for (int k = 0; k < cx; k += 4) {
    float r[4], g[4], b[4];
    for (int j = 0; j < 4; j++) {
      r[j] = g[j] = b[j] = 0.0f;
      if (k + j < cx)
        gpunet_cuda_column_sum (d, fx + k + j, fy, cy, wy, &r[j], &g[j], &b[j]);
    }
    const float w0 = wx[k], w1 = wx[k + 1], w2 = wx[k + 2], w3 = wx[k + 3];
    sr += (w0 * r[0] + w1 * r[1]) + (w2 * r[2] + w3 * r[3]);
    sg += (w0 * g[0] + w1 * g[1]) + (w2 * g[2] + w3 * g[3]);
    sb += (w0 * b[0] + w1 * b[1]) + (w2 * b[2] + w3 * b[3]);
  }
  if (d->round8) {
    sr = gpunet_quantize8 (sr);
    sg = gpunet_quantize8 (sg);
    sb = gpunet_quantize8 (sb);
  }
  *out_r = gpunet_normalize (gpunet_clamp255 (sr), 0);
  *out_g = gpunet_normalize (gpunet_clamp255 (sg), 1);
  *out_b = gpunet_normalize (gpunet_clamp255 (sb), 2);
}

#endif /* GPUNET_CUDA_PREPROCESS_H */
