/* preprocess_math.h: the per-pixel and per-tap maths of the fused preprocess, shared by the
 * CPU pass (kernels/host/preprocess.c), a CUDA kernel and the tests: the geometry of the three
 * resize modes, PIL-compatible antialiased bicubic taps, pixel fetch per format (per-plane
 * strides, chroma siting), YUV->RGB (BT.601/BT.709, limited/full range) and normalisation. */
#ifndef GPUNET_PREPROCESS_MATH_H
#define GPUNET_PREPROCESS_MATH_H

#include <math.h>
#include <stdint.h>

#include "hd.h"
#include "gpunet-types.h"

/* ---- normalisation ------------------------------------------------------------- */

/* ImageNet statistics of timm/torchvision, on the 0..1 scale. */
#define GPUNET_MEAN_R 0.485f
#define GPUNET_MEAN_G 0.456f
#define GPUNET_MEAN_B 0.406f
#define GPUNET_STD_R 0.229f
#define GPUNET_STD_G 0.224f
#define GPUNET_STD_B 0.225f

/* (v / 255 - mean[c]) / std[c] for a 0..255 value v of channel c (0 = R, 1 = G, 2 = B). */
GPUNET_HD float
gpunet_normalize (float v, int c)
{
  const float mean = c == 0 ? GPUNET_MEAN_R : c == 1 ? GPUNET_MEAN_G : GPUNET_MEAN_B;
  const float std = c == 0 ? GPUNET_STD_R : c == 1 ? GPUNET_STD_G : GPUNET_STD_B;
  return (v / 255.0f - mean) / std;
}

GPUNET_HD float
gpunet_clamp255 (float v)
{
  v = v < 0.0f ? 0.0f : v;
  return v > 255.0f ? 255.0f : v;
}

/* PIL's 8-bit output of a resampled value: clamped, then rounded half up (clip8). */
GPUNET_HD float
gpunet_quantize8 (float v)
{
  return floorf (gpunet_clamp255 (v) + 0.5f);
}

/* ---- colour ---------------------------------------------------------------------- */

/* YUV->RGB as R = ys * (Y - yo) + rv * (V - 128), G = ys * (Y - yo) - gu * (U - 128)
 * - gv * (V - 128), B = ys * (Y - yo) + bu * (U - 128). */
typedef struct {
  float yo, ys, rv, gu, gv, bu;
} gpunet_yuv_coeffs;

/* Coefficients from Kr/Kb of the matrix; limited range scales Y by 255/219 (16..235) and
 * chroma by 255/224 (16..240), full range uses the codes as they are. */
GPUNET_HD void
gpunet_yuv_coeffs_init (gpunet_yuv_coeffs *c, gpunet_color_matrix matrix, int full_range)
{
  const double kr = matrix == GPUNET_MATRIX_BT709 ? 0.2126 : 0.299;
  const double kb = matrix == GPUNET_MATRIX_BT709 ? 0.0722 : 0.114;
  const double kg = 1.0 - kr - kb;
  const double ys = full_range ? 1.0 : 255.0 / 219.0;
  const double cs = full_range ? 1.0 : 255.0 / 224.0;
  c->yo = full_range ? 0.0f : 16.0f;
  c->ys = (float) ys;
  c->rv = (float) (cs * 2.0 * (1.0 - kr));
  c->gu = (float) (cs * 2.0 * kb * (1.0 - kb) / kg);
  c->gv = (float) (cs * 2.0 * kr * (1.0 - kr) / kg);
  c->bu = (float) (cs * 2.0 * (1.0 - kb));
}

/* One pixel, 0..255 RGB clamped like an 8-bit decoder output (not rounded). */
GPUNET_HD void
gpunet_yuv_to_rgb (const gpunet_yuv_coeffs *c, float y, float u, float v, float *r, float *g,
    float *b)
{
  const float yy = (y - c->yo) * c->ys, uu = u - 128.0f, vv = v - 128.0f;
  *r = gpunet_clamp255 (yy + c->rv * vv);
  *g = gpunet_clamp255 (yy - c->gu * uu - c->gv * vv);
  *b = gpunet_clamp255 (yy + c->bu * uu);
}

/* Chroma siting (4:2:0, chroma size ceil(n / 2)): the two chroma samples a luma position
 * interpolates and the weight of the second.  Horizontally chroma sample i sits on luma
 * column 2i (co-sited, "left"); vertically it sits between luma rows 2j and 2j + 1
 * (centred).  That is MPEG-2/H.264/HEVC's default (GStreamer chroma-site "mpeg2").
 * Positions past the edge repeat the edge sample. */
GPUNET_HD void
gpunet_chroma_taps (int luma, int chroma_size, int cosited, int *i0, int *i1, float *w1)
{
  /* chroma coordinate in quarter samples: cosited luma / 2, centred (luma - 0.5) / 2 */
  const int q = cosited ? 2 * luma : 2 * luma - 1;
  int a = q >= 0 ? q / 4 : -1;  /* floor (q / 4); q >= -1 */
  const int frac = q - 4 * a;
  int bb = a + 1;
  a = a < 0 ? 0 : a > chroma_size - 1 ? chroma_size - 1 : a;
  bb = bb > chroma_size - 1 ? chroma_size - 1 : bb;
  *i0 = a;
  *i1 = bb;
  *w1 = (float) frac * 0.25f;
}

/* Byte layout of the packed RGB formats: bytes per pixel and the offsets of R, G, B.
 * Returns 0 for a YUV format. */
GPUNET_HD int
gpunet_rgb_layout (gpunet_pixel_format f, int *ri, int *gi, int *bi)
{
  const int bgr = f == GPUNET_FORMAT_BGR || f == GPUNET_FORMAT_BGRA || f == GPUNET_FORMAT_BGRX;
  *gi = 1;
  *ri = bgr ? 2 : 0;
  *bi = bgr ? 0 : 2;
  switch (f) {
    case GPUNET_FORMAT_RGB: case GPUNET_FORMAT_BGR: return 3;
    case GPUNET_FORMAT_RGBA: case GPUNET_FORMAT_BGRA:
    case GPUNET_FORMAT_RGBX: case GPUNET_FORMAT_BGRX: return 4;
    default: return 0;
  }
}

/* A frame as kernels read it (a validated gpunet_image plus its YUV coefficients). */
typedef struct {
  gpunet_pixel_format format;
  int width, height;
  const uint8_t *planes[3];
  int strides[3];
  gpunet_yuv_coeffs yuv;
} gpunet_pixel_src;

GPUNET_HD void
gpunet_pixel_src_init (gpunet_pixel_src *s, const gpunet_image *img)
{
  s->format = img->format;
  s->width = img->width;
  s->height = img->height;
  for (int i = 0; i < 3; i++) {
    s->planes[i] = img->planes[i];
    s->strides[i] = img->strides[i];
  }
  gpunet_yuv_coeffs_init (&s->yuv, img->matrix, img->full_range);
}

/* The 0..255 RGB of source pixel (x, y), 0 <= x < width, 0 <= y < height, any format,
 * bit for bit as the CPU row converter computes it: chroma
 * rows blended vertically first (gpunet_chroma_taps, centred), then odd columns take
 * the mean of two co-sited samples. */
GPUNET_HD void
gpunet_fetch_rgb (const gpunet_pixel_src *s, int x, int y, float *r, float *g, float *b)
{
  int ri, gi, bi;
  const int bpp = gpunet_rgb_layout (s->format, &ri, &gi, &bi);
  if (bpp) {
    const uint8_t *p = s->planes[0] + (size_t) y * s->strides[0] + (size_t) x * bpp;
    *r = p[ri];
    *g = p[gi];
    *b = p[bi];
    return;
  }
  const int cw = (s->width + 1) / 2, ch = (s->height + 1) / 2;
  int cy0, cy1;
  float wy;
  gpunet_chroma_taps (y, ch, 0, &cy0, &cy1, &wy);
  const int c0 = x >> 1, c1 = c0 + 1 < cw ? c0 + 1 : cw - 1;
  const int nv12 = s->format == GPUNET_FORMAT_NV12;
  const uint8_t *u0 = s->planes[1] + (size_t) cy0 * s->strides[1];
  const uint8_t *u1 = s->planes[1] + (size_t) cy1 * s->strides[1];
  const uint8_t *v0 = nv12 ? u0 + 1 : s->planes[2] + (size_t) cy0 * s->strides[2];
  const uint8_t *v1 = nv12 ? u1 + 1 : s->planes[2] + (size_t) cy1 * s->strides[2];
  const int step = nv12 ? 2 : 1;
  float u = u0[step * c0] + wy * (float) (u1[step * c0] - u0[step * c0]);
  float v = v0[step * c0] + wy * (float) (v1[step * c0] - v0[step * c0]);
  if (x & 1) {
    const float ub = u0[step * c1] + wy * (float) (u1[step * c1] - u0[step * c1]);
    const float vb = v0[step * c1] + wy * (float) (v1[step * c1] - v0[step * c1]);
    u = 0.5f * (u + ub);
    v = 0.5f * (v + vb);
  }
  gpunet_yuv_to_rgb (&s->yuv, s->planes[0][(size_t) y * s->strides[0] + x], u, v, r, g, b);
}

/* ---- geometry --------------------------------------------------------------------- */

/* One axis of the mapping source -> resized -> output: the source of in_size samples is
 * resampled to `scaled` samples; output index o shows resized index o + offset, or padding
 * when that falls outside 0..scaled-1. */
typedef struct {
  int in_size, scaled, offset, out_size;
} gpunet_axis_map;

/* Python's round() of d / 2 for an integer d (halves go to the even neighbour). */
GPUNET_HD int
gpunet_round_half_even_div2 (int d)
{
  const int q = d >= 0 ? d / 2 : -((-d) / 2);
  if (d % 2 == 0)
    return q;
  /* d / 2 = q +- 0.5: take the even one of q and q +- 1 */
  const int other = d > 0 ? q + 1 : q - 1;
  return (q % 2 == 0) ? q : other;
}

/* torchvision CenterCrop on one axis of a resized image of `size`, crop `crop`: where the
 * crop is larger torchvision pads (crop - size) // 2 before, else it starts at
 * int(round((size - crop) / 2.0)). */
GPUNET_HD int
gpunet_center_crop_offset (int size, int crop)
{
  if (crop > size)
    return -((crop - size) / 2);
  return gpunet_round_half_even_div2 (size - crop);
}

/* The two axis maps of a w x h frame for an R x R output.  center-crop: timm's eval
 * transform (scale_size = floor(R / crop_pct), torchvision Resize(scale_size) of the
 * shorter side, the longer one int(scale_size * long / short), CenterCrop(R));
 * stretch: w x h -> R x R; letterbox: the longer side to R, the other round(n * R / long)
 * (at least 1), centred with (R - n) / 2 padding before.  crop_pct must be > 0. */
GPUNET_HD void
gpunet_preprocess_geometry (gpunet_resize_mode mode, float crop_pct, int w, int h, int R,
    gpunet_axis_map *mx, gpunet_axis_map *my)
{
  int sw = R, sh = R;
  mx->in_size = w;
  my->in_size = h;
  mx->out_size = my->out_size = R;
  mx->offset = my->offset = 0;
  if (mode == GPUNET_RESIZE_CENTER_CROP) {
    const int64_t s = (int64_t) floor ((double) R / (double) crop_pct);
    if (w <= h) {
      sw = (int) s;
      sh = (int) (s * h / w);
    } else {
      sh = (int) s;
      sw = (int) (s * w / h);
    }
    if (sw < 1)
      sw = 1;
    if (sh < 1)
      sh = 1;
    mx->offset = gpunet_center_crop_offset (sw, R);
    my->offset = gpunet_center_crop_offset (sh, R);
  } else if (mode == GPUNET_RESIZE_LETTERBOX) {
    if (w >= h) {
      sh = (int) floor ((double) h * R / w + 0.5);
      sh = sh < 1 ? 1 : sh;
    } else {
      sw = (int) floor ((double) w * R / h + 0.5);
      sw = sw < 1 ? 1 : sw;
    }
    mx->offset = -((R - sw) / 2);
    my->offset = -((R - sh) / 2);
  }
  mx->scaled = sw;
  my->scaled = sh;
}

/* ---- resampling ----------------------------------------------------------------------- */

/* PIL's bicubic kernel (a = -0.5), support 2. */
GPUNET_HD double
gpunet_bicubic (double x)
{
  const double a = -0.5;
  if (x < 0.0)
    x = -x;
  if (x < 1.0)
    return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0)
    return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

/* The most taps any resized sample of this axis reads (PIL's ksize). */
GPUNET_HD int
gpunet_resample_ksize (int in_size, int scaled)
{
  double fs = (double) in_size / scaled;
  fs = fs < 1.0 ? 1.0 : fs;
  return (int) ceil (2.0 * fs) * 2 + 1;
}

/* PIL's antialiased bicubic taps of resized sample j (0 <= j < scaled) of an axis
 * in_size -> scaled: the filter is stretched by the downscale factor (support 2 * scale,
 * 2 when upscaling), centred on (j + 0.5) * in_size / scaled, clipped to the source and
 * normalised to sum 1.  Writes the first source index and up to ksize weights; returns the
 * number of taps. */
GPUNET_HD int
gpunet_resample_taps (int in_size, int scaled, int j, int *first, float *w)
{
  const double scale = (double) in_size / scaled;
  const double fs = scale < 1.0 ? 1.0 : scale;
  const double support = 2.0 * fs, inv = 1.0 / fs;
  const double center = (j + 0.5) * scale;
  int lo = (int) (center - support + 0.5);
  int hi = (int) (center + support + 0.5);
  lo = lo < 0 ? 0 : lo;
  hi = hi > in_size ? in_size : hi;
  double sum = 0.0;
  for (int i = lo; i < hi; i++)
    sum += gpunet_bicubic ((i - center + 0.5) * inv);
  for (int i = lo; i < hi; i++) {
    const double k = gpunet_bicubic ((i - center + 0.5) * inv);
    w[i - lo] = (float) (sum != 0.0 ? k / sum : k);
  }
  *first = lo;
  return hi - lo;
}

#endif /* GPUNET_PREPROCESS_MATH_H */
