/* test_preprocess.c: the fused preprocess (kernels/host/preprocess.c, models/classify.c)
 * against a slow double-precision reference written here (PIL-style horizontal then
 * vertical antialiased bicubic, torchvision/timm geometry), a hand-computed example, the
 * tiny-a fixture input and top-5, all 8 pixel formats, odd sizes, strides and errors.
 * Also prints (never asserts) the time of a 1080p NV12 frame to a 320x320 input. */
#include <math.h>
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "gpunet.h"
#include "preprocess.h"
#include "preprocess_math.h"

/* ---- helpers -------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t
rng_u32 (void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t) (rng_state >> 11);
}

static double
max_abs_diff (const float *a, const float *b, size_t n, double *mean)
{
  double m = 0.0, s = 0.0;
  for (size_t i = 0; i < n; i++) {
    const double d = fabs ((double) a[i] - (double) b[i]);
    s += d;
    if (d > m || isnan (d))
      m = isnan (d) ? INFINITY : d;
  }
  if (mean)
    *mean = n ? s / (double) n : 0.0;
  return m;
}

/* A smooth RGB picture (gradients of a few 0..255 units per pixel at most). */
static uint8_t *
smooth_rgb (int w, int h)
{
  uint8_t *p = malloc ((size_t) w * h * 3);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      uint8_t *q = p + ((size_t) y * w + x) * 3;
      q[0] = (uint8_t) lrint (128 + 60 * sin (x / 19.0 + y / 23.0));
      q[1] = (uint8_t) lrint (120 + 50 * cos (x / 29.0 - y / 17.0));
      q[2] = (uint8_t) lrint (110 + 70 * sin (x / 31.0) * cos (y / 25.0));
    }
  return p;
}

static uint8_t *
random_rgb (int w, int h)
{
  uint8_t *p = malloc ((size_t) w * h * 3);
  for (size_t i = 0; i < (size_t) w * h * 3; i++)
    p[i] = (uint8_t) (rng_u32 () & 255);
  return p;
}

/* The test's own RGB -> Y'CbCr encoder: Kr/Kb per matrix, limited range 16..235 /
 * 16..240 or full, chroma of sample (i, j) taken at luma column 2i and between rows 2j and
 * 2j + 1 (the siting the engine decodes). */
static void
encode_yuv (const uint8_t *rgb, int w, int h, gpunet_color_matrix m, int full, uint8_t *Y,
    uint8_t *U, uint8_t *V)
{
  const double kr = m == GPUNET_MATRIX_BT709 ? 0.2126 : 0.299;
  const double kb = m == GPUNET_MATRIX_BT709 ? 0.0722 : 0.114, kg = 1 - kr - kb;
  const int cw = (w + 1) / 2, ch = (h + 1) / 2;
  const double ys = full ? 1.0 : 219.0 / 255.0, cs = full ? 1.0 : 224.0 / 255.0;
  const double yo = full ? 0.0 : 16.0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const uint8_t *p = rgb + ((size_t) y * w + x) * 3;
      const double l = kr * p[0] + kg * p[1] + kb * p[2];
      Y[(size_t) y * w + x] = (uint8_t) fmin (255, fmax (0, lrint (yo + ys * l)));
    }
  for (int j = 0; j < ch; j++)
    for (int i = 0; i < cw; i++) {
      double cb = 0, cr = 0;
      for (int r = 0; r < 2; r++) {
        const int yy = 2 * j + r < h ? 2 * j + r : h - 1;
        const uint8_t *p = rgb + ((size_t) yy * w + 2 * i) * 3;
        const double l = kr * p[0] + kg * p[1] + kb * p[2];
        cb += 0.5 * (p[2] - l) / (2 * (1 - kb));
        cr += 0.5 * (p[0] - l) / (2 * (1 - kr));
      }
      U[(size_t) j * cw + i] = (uint8_t) fmin (255, fmax (0, lrint (128 + cs * cb)));
      V[(size_t) j * cw + i] = (uint8_t) fmin (255, fmax (0, lrint (128 + cs * cr)));
    }
}

/* A frame of `fmt` showing `rgb`, every row padded by `pad` bytes of garbage; the
 * storage is returned in *mem (free() it). */
static gpunet_image
make_frame (gpunet_pixel_format fmt, const uint8_t *rgb, int w, int h, int pad,
    gpunet_color_matrix m, int full, uint8_t **mem)
{
  gpunet_image img;
  memset (&img, 0, sizeof img);
  img.format = fmt;
  img.width = w;
  img.height = h;
  img.matrix = m;
  img.full_range = full;
  const int cw = (w + 1) / 2, ch = (h + 1) / 2;
  if (fmt == GPUNET_FORMAT_NV12 || fmt == GPUNET_FORMAT_I420) {
    uint8_t *Y = malloc ((size_t) w * h), *U = malloc ((size_t) cw * ch), *V = malloc ((size_t) cw * ch);
    encode_yuv (rgb, w, h, m, full, Y, U, V);
    const int sy = w + pad, sc = (fmt == GPUNET_FORMAT_NV12 ? 2 * cw : cw) + pad;
    const size_t size = (size_t) sy * h + (size_t) sc * ch * 2;
    uint8_t *buf = malloc (size);
    for (size_t i = 0; i < size; i++)
      buf[i] = (uint8_t) (rng_u32 () & 255);
    for (int y = 0; y < h; y++)
      memcpy (buf + (size_t) y * sy, Y + (size_t) y * w, (size_t) w);
    uint8_t *c1 = buf + (size_t) sy * h, *c2 = c1 + (size_t) sc * ch;
    for (int j = 0; j < ch; j++)
      for (int i = 0; i < cw; i++) {
        if (fmt == GPUNET_FORMAT_NV12) {
          c1[(size_t) j * sc + 2 * i] = U[(size_t) j * cw + i];
          c1[(size_t) j * sc + 2 * i + 1] = V[(size_t) j * cw + i];
        } else {
          c1[(size_t) j * sc + i] = U[(size_t) j * cw + i];
          c2[(size_t) j * sc + i] = V[(size_t) j * cw + i];
        }
      }
    img.planes[0] = buf;
    img.strides[0] = sy;
    img.planes[1] = c1;
    img.strides[1] = sc;
    if (fmt == GPUNET_FORMAT_I420) {
      img.planes[2] = c2;
      img.strides[2] = sc;
    }
    free (Y);
    free (U);
    free (V);
    *mem = buf;
    return img;
  }
  int ri, gi, bi;
  const int bpp = gpunet_rgb_layout (fmt, &ri, &gi, &bi);
  const int stride = w * bpp + pad;
  uint8_t *buf = malloc ((size_t) stride * h);
  for (size_t i = 0; i < (size_t) stride * h; i++)
    buf[i] = (uint8_t) (rng_u32 () & 255);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      uint8_t *q = buf + (size_t) y * stride + (size_t) x * bpp;
      const uint8_t *p = rgb + ((size_t) y * w + x) * 3;
      q[ri] = p[0];
      q[gi] = p[1];
      q[bi] = p[2];
    }
  img.planes[0] = buf;
  img.strides[0] = stride;
  *mem = buf;
  return img;
}

/* Runs the kernel directly for any output size; round8 as in the plan. */
static int
kernel_run_r (const gpunet_image *img, int R, gpunet_resize_mode mode, float crop_pct,
    int round8, float *out)
{
  gpunet_preprocess_plan plan;
  if (gpunet_preprocess_plan_init (&plan, img->width, img->height, R, mode, crop_pct) != GPUNET_OK)
    return -1;
  plan.round8 = round8;
  gpunet_cpu_preprocess (&plan, img, out);
  gpunet_preprocess_plan_clear (&plan);
  return 0;
}

static int
kernel_run (const gpunet_image *img, int R, gpunet_resize_mode mode, float crop_pct, float *out)
{
  return kernel_run_r (img, R, mode, crop_pct, 1, out);
}

/* ---- the slow reference ------------------------------------------------------------ */

/* PIL's precompute_coeffs for one output sample, written out again, in double. */
static int
ref_coeffs (int in, int out, int j, double *w)
{
  const double scale = (double) in / out, fs = scale > 1 ? scale : 1, support = 2 * fs;
  const double center = (j + 0.5) * scale;
  int lo = (int) (center - support + 0.5), hi = (int) (center + support + 0.5);
  if (lo < 0)
    lo = 0;
  if (hi > in)
    hi = in;
  double sum = 0;
  for (int i = lo; i < hi; i++) {
    double x = fabs ((i - center + 0.5) / fs), k;
    if (x < 1)
      k = 1.5 * x * x * x - 2.5 * x * x + 1;           /* a = -0.5 */
    else if (x < 2)
      k = -0.5 * x * x * x + 2.5 * x * x - 4 * x + 2;
    else
      k = 0;
    w[i] = k;
    sum += k;
  }
  for (int i = 0; i < in; i++)
    w[i] = i >= lo && i < hi && sum != 0 ? w[i] / sum : 0;
  return 0;
}

/* Resizes w x h RGB to sw x sh (horizontal pass over every row, then vertical), then
 * places it at output (o - off) with padding `padv` (0..255, or NAN for "normalises to 0"),
 * clamps and normalises: the transform written the simple way. */
static void
ref_preprocess (const uint8_t *rgb, int w, int h, int R, gpunet_resize_mode mode,
    float crop_pct, float *out)
{
  int sw = R, sh = R, offx = 0, offy = 0;
  double padv = 0;
  if (mode == GPUNET_RESIZE_CENTER_CROP) {
    const int s = (int) floor ((double) R / (double) crop_pct);
    if (w <= h) {
      sw = s;
      sh = (int) ((double) s * h / w);
    } else {
      sh = s;
      sw = (int) ((double) s * w / h);
    }
    /* torchvision center_crop: pad when smaller, else int(round((size - R) / 2.0)) */
    offx = sw < R ? -((R - sw) / 2) : (int) nearbyint ((sw - R) / 2.0);
    offy = sh < R ? -((R - sh) / 2) : (int) nearbyint ((sh - R) / 2.0);
  } else if (mode == GPUNET_RESIZE_LETTERBOX) {
    const int lng = w > h ? w : h;
    if (w >= h)
      sh = (int) fmax (1, floor ((double) h * R / lng + 0.5));
    else
      sw = (int) fmax (1, floor ((double) w * R / lng + 0.5));
    offx = -((R - sw) / 2);
    offy = -((R - sh) / 2);
    padv = NAN;
  }
  double *tmp = calloc ((size_t) sw * h * 3, sizeof (double));
  double *res = calloc ((size_t) sw * sh * 3, sizeof (double));
  double *wx = malloc (sizeof (double) * (size_t) w), *wy = malloc (sizeof (double) * (size_t) h);
  for (int x = 0; x < sw; x++) {
    ref_coeffs (w, sw, x, wx);
    for (int y = 0; y < h; y++)
      for (int c = 0; c < 3; c++) {
        double s = 0;
        for (int i = 0; i < w; i++)
          s += wx[i] * rgb[((size_t) y * w + i) * 3 + c];
        tmp[((size_t) y * sw + x) * 3 + c] = s;
      }
  }
  for (int y = 0; y < sh; y++) {
    ref_coeffs (h, sh, y, wy);
    for (int x = 0; x < sw; x++)
      for (int c = 0; c < 3; c++) {
        double s = 0;
        for (int i = 0; i < h; i++)
          s += wy[i] * tmp[((size_t) i * sw + x) * 3 + c];
        res[((size_t) y * sw + x) * 3 + c] = s;
      }
  }
  static const double mean[3] = { 0.485, 0.456, 0.406 }, sd[3] = { 0.229, 0.224, 0.225 };
  for (int c = 0; c < 3; c++)
    for (int oy = 0; oy < R; oy++)
      for (int ox = 0; ox < R; ox++) {
        const int x = ox + offx, y = oy + offy;
        double v;
        if (x < 0 || x >= sw || y < 0 || y >= sh) {
          if (isnan (padv)) {
            out[((size_t) c * R + oy) * R + ox] = 0.0f;
            continue;
          }
          v = padv;
        } else {
          v = fmin (255, fmax (0, res[((size_t) y * sw + x) * 3 + c]));
        }
        out[((size_t) c * R + oy) * R + ox] = (float) ((v / 255.0 - mean[c]) / sd[c]);
      }
  free (tmp);
  free (res);
  free (wx);
  free (wy);
}

/* ---- tests ---------------------------------------------------------------------------- */

/* Hand-computed PIL example: a 4-pixel row [0, 255, 0, 255] downscaled to 2 (scale 2,
 * support 4).  Output 0 is centred at 1.0; its taps at x = 0..3 sit at (x - 0.5) / 2 =
 * -0.25, 0.25, 0.75, 1.25 in filter units, weights 111/128, 111/128, 29/128, -9/128, sum
 * 242/128: output 0 = 255 * (111 - 9) / 242 = 255 * 51 / 121, output 1 (mirrored) =
 * 255 * (29 + 111) / 242 = 255 * 70 / 121.  PIL prints 107 and 148 (rounded). */
static void
test_hand_example (void)
{
  int first;
  float w[16];
  const int n = gpunet_resample_taps (4, 2, 0, &first, w);
  CHECK (n == 4 && first == 0);
  const double expect[4] = { 111 / 242.0, 111 / 242.0, 29 / 242.0, -9 / 242.0 };
  for (int i = 0; i < 4 && n == 4; i++)
    CHECK_MSG (fabs (w[i] - expect[i]) < 1e-7, "weight %d: %.9f, expected %.9f", i, w[i], expect[i]);
  CHECK (gpunet_resample_ksize (4, 2) == 9);

  const uint8_t row[12] = { 0, 0, 0, 255, 255, 255, 0, 0, 0, 255, 255, 255 };
  gpunet_image img = { GPUNET_FORMAT_RGB, 4, 1, { row }, { 12 }, 0, 0, GPUNET_MEMORY_HOST, NULL };
  float out[3 * 2 * 2];
  for (int round8 = 0; round8 < 2; round8++) {
    CHECK (kernel_run_r (&img, 2, GPUNET_RESIZE_STRETCH, 1.0f, round8, out) == 0);
    const double v0 = round8 ? 107 : 255.0 * 51 / 121, v1 = round8 ? 148 : 255.0 * 70 / 121;
    for (int c = 0; c < 3; c++)
      for (int y = 0; y < 2; y++) {
        CHECK_MSG (fabs (out[(c * 2 + y) * 2 + 0] - gpunet_normalize ((float) v0, c)) < 1e-5,
            "channel %d row %d: %f", c, y, out[(c * 2 + y) * 2 + 0]);
        CHECK_MSG (fabs (out[(c * 2 + y) * 2 + 1] - gpunet_normalize ((float) v1, c)) < 1e-5,
            "channel %d row %d: %f", c, y, out[(c * 2 + y) * 2 + 1]);
      }
  }
  /* upscaling keeps support 2: 2 -> 4, sample 0 at 0.25 reads x = 0, 1 */
  const int n2 = gpunet_resample_taps (2, 4, 0, &first, w);
  CHECK (n2 == 2 && first == 0);
  /* identity: 1:1 gives the weight 1 on the sample itself */
  const int n3 = gpunet_resample_taps (10, 10, 5, &first, w);
  CHECK (n3 == 4 && first == 4 && w[0] == 0.0f && w[1] == 1.0f && w[2] == 0.0f && w[3] == 0.0f);
}

static void
test_geometry (void)
{
  gpunet_axis_map mx, my;
  /* GPUNet-0 on 1080p: 1080 -> 320, 1920 -> int(320 * 1920 / 1080) = 568, left
   * round(248 / 2) = 124 */
  gpunet_preprocess_geometry (GPUNET_RESIZE_CENTER_CROP, 1.0f, 1920, 1080, 320, &mx, &my);
  CHECK (mx.scaled == 568 && my.scaled == 320 && mx.offset == 124 && my.offset == 0);
  /* crop_pct 0.875 at 224: floor(256.0) = 256; 500x375 -> 341x256; round(117/2 = 58.5) = 58
   * (half to even), round(32 / 2) = 16 */
  gpunet_preprocess_geometry (GPUNET_RESIZE_CENTER_CROP, 0.875f, 500, 375, 224, &mx, &my);
  CHECK (mx.scaled == 341 && my.scaled == 256 && mx.offset == 58 && my.offset == 16);
  CHECK (gpunet_round_half_even_div2 (5) == 2 && gpunet_round_half_even_div2 (7) == 4);
  CHECK (gpunet_round_half_even_div2 (1) == 0 && gpunet_round_half_even_div2 (3) == 2);
  /* letterbox 64x32 into 96: 96x48 placed 24 rows down */
  gpunet_preprocess_geometry (GPUNET_RESIZE_LETTERBOX, 1.0f, 64, 32, 96, &mx, &my);
  CHECK (mx.scaled == 96 && my.scaled == 48 && mx.offset == 0 && my.offset == -24);
}

static void
test_yuv_known_colours (void)
{
  gpunet_yuv_coeffs c;
  float r, g, b;
  gpunet_yuv_coeffs_init (&c, GPUNET_MATRIX_BT601, 0);
  gpunet_yuv_to_rgb (&c, 235, 128, 128, &r, &g, &b);
  CHECK (fabsf (r - 255) < 1e-3f && fabsf (g - 255) < 1e-3f && fabsf (b - 255) < 1e-3f);
  gpunet_yuv_to_rgb (&c, 16, 128, 128, &r, &g, &b);
  CHECK (r == 0 && g == 0 && b == 0);
  gpunet_yuv_to_rgb (&c, 81, 90, 240, &r, &g, &b);   /* BT.601 limited red */
  CHECK_MSG (r > 253 && g < 2 && b < 2, "601 red -> %f %f %f", r, g, b);
  gpunet_yuv_coeffs_init (&c, GPUNET_MATRIX_BT709, 0);
  gpunet_yuv_to_rgb (&c, 63, 102, 240, &r, &g, &b);  /* BT.709 limited red */
  CHECK_MSG (r > 253 && g < 2 && b < 2, "709 red -> %f %f %f", r, g, b);
  gpunet_yuv_coeffs_init (&c, GPUNET_MATRIX_BT601, 1);
  gpunet_yuv_to_rgb (&c, 76.245f, 84.972f, 255.5f, &r, &g, &b);  /* full-range red */
  CHECK_MSG (fabsf (r - 255) < 0.01f && g < 0.01f && b < 0.01f, "full red -> %f %f %f", r, g, b);
  gpunet_yuv_coeffs_init (&c, GPUNET_MATRIX_BT709, 1);
  gpunet_yuv_to_rgb (&c, 100, 128, 128, &r, &g, &b);
  CHECK (r == 100 && g == 100 && b == 100);
}

/* The fused pass against the slow reference on random pictures: every mode, sizes from
 * 1x1 to 300 wide, up- and downscaling, crop_pct below and above 1. */
static void
test_against_reference (void)
{
  static const int sizes[][2] = { { 1, 1 }, { 33, 17 }, { 17, 33 }, { 64, 64 }, { 200, 100 },
    { 5, 300 }, { 97, 61 } };
  static const int outs[] = { 7, 32, 96 };
  static const float pcts[] = { 1.0f, 0.875f, 1.15f };
  double worst = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    const int w = sizes[si][0], h = sizes[si][1];
    uint8_t *rgb = random_rgb (w, h), *mem;
    gpunet_image img = make_frame (GPUNET_FORMAT_RGB, rgb, w, h, 3, 0, 0, &mem);
    for (size_t oi = 0; oi < sizeof outs / sizeof outs[0]; oi++)
      for (int mode = 0; mode < 3; mode++)
        for (size_t pi = 0; pi < (mode == GPUNET_RESIZE_CENTER_CROP ? 3u : 1u); pi++) {
          const int R = outs[oi];
          /* under an emulator the slow reference at 96 x 96 takes minutes; 7 and 32
           * reach the same up- and downscaling loops */
          if (check_emulated () && R > 32)
            continue;
          float *a = malloc (sizeof (float) * 3 * R * R), *b = malloc (sizeof (float) * 3 * R * R);
          CHECK (kernel_run_r (&img, R, mode, pcts[pi], 0, a) == 0);
          ref_preprocess (rgb, w, h, R, mode, pcts[pi], b);
          const double d = max_abs_diff (a, b, (size_t) 3 * R * R, NULL);
          CHECK_MSG (d < 2e-4, "%dx%d -> %d mode %d crop_pct %g: max diff %g", w, h, R, mode,
              pcts[pi], d);
          worst = d > worst ? d : worst;
          /* rounded to 8 bits: within half a unit (0.5 / 255 / 0.224) of the exact value */
          CHECK (kernel_run (&img, R, mode, pcts[pi], a) == 0);
          const double dr = max_abs_diff (a, b, (size_t) 3 * R * R, NULL);
          CHECK_MSG (dr < 0.5 / 255 / 0.224 + 2e-4, "rounded %dx%d -> %d mode %d: %g", w, h, R,
              mode, dr);
          free (a);
          free (b);
        }
    free (rgb);
    free (mem);
  }
  printf ("fused pass vs slow reference: max abs diff %.2e (normalised units)\n", worst);
}

/* The streaming vertical pass (used when the ring of rows would pass 64 MiB) gives
 * the ring's results. */
static void
test_streaming (void)
{
  const int w = 301, h = 203, R = 24;
  uint8_t *rgb = random_rgb (w, h), *mem;
  gpunet_image img = make_frame (GPUNET_FORMAT_I420, rgb, w, h, 1, 0, 0, &mem);
  float a[3 * 24 * 24], b[3 * 24 * 24];
  gpunet_preprocess_plan plan;
  CHECK (gpunet_preprocess_plan_init (&plan, w, h, R, GPUNET_RESIZE_CENTER_CROP, 0.875f) == GPUNET_OK);
  gpunet_cpu_preprocess (&plan, &img, a);
  CHECK (plan.ring_rows > 1);
  plan.ring_rows = 1;
  gpunet_cpu_preprocess (&plan, &img, b);
  CHECK_MSG (max_abs_diff (a, b, sizeof a / sizeof a[0], NULL) < 1e-4, "streaming differs");
  gpunet_preprocess_plan_clear (&plan);
  free (mem);
  free (rgb);
}

/* Every format of the same picture.  The packed RGB layouts must agree exactly.  YUV:
 * 8-bit codes are rounded (Y to 255/219 = 1.16 RGB steps in limited range, chroma to
 * 255/224 steps times the largest coefficient 1.77 (BT.601) / 1.86 (BT.709)), so one
 * pixel's R, G or B can move by about 0.6 + 1.1 = 1.7 units, and the 4:2:0 chroma is
 * interpolated from samples up to a pixel away (the picture changes by under 4 units per
 * pixel): a max of 6 units = 6 / 255 / 0.224 = 0.105 and a mean of 1 unit (0.0175)
 * normalised. */
static void
test_formats_agree (void)
{
  static const int sizes[][2] = { { 33, 17 }, { 64, 48 }, { 1, 1 }, { 2, 3 }, { 120, 90 } };
  const int R = 24;
  double worst = 0, worst_mean = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    const int w = sizes[si][0], h = sizes[si][1];
    uint8_t *rgb = smooth_rgb (w, h);
    for (int mode = 0; mode < 3; mode++) {
      float ref[3 * 24 * 24], out[3 * 24 * 24];
      uint8_t *mem;
      gpunet_image img = make_frame (GPUNET_FORMAT_RGB, rgb, w, h, 0, 0, 0, &mem);
      kernel_run (&img, R, mode, 0.875f, ref);
      free (mem);
      for (int f = GPUNET_FORMAT_RGB; f <= GPUNET_FORMAT_I420; f++)
        for (int pad = 0; pad <= 5; pad += 5)
          for (int mat = 0; mat < 2; mat++)
            for (int full = 0; full < 2; full++) {
              if (f < GPUNET_FORMAT_NV12 && (mat || full))
                continue;
              img = make_frame (f, rgb, w, h, pad, mat, full, &mem);
              CHECK (kernel_run (&img, R, mode, 0.875f, out) == 0);
              double mean;
              const double d = max_abs_diff (out, ref, sizeof out / sizeof out[0], &mean);
              if (f < GPUNET_FORMAT_NV12)
                CHECK_MSG (d == 0, "format %d %dx%d pad %d mode %d: max diff %g", f, w, h, pad,
                    mode, d);
              else {
                worst = fmax (worst, d);
                worst_mean = fmax (worst_mean, mean);
              }
              if (f >= GPUNET_FORMAT_NV12)
                CHECK_MSG (d < 0.105 && mean < 0.035, "format %d %dx%d pad %d mode %d matrix %d "
                    "full %d: max diff %g mean %g", f, w, h, pad, mode, mat, full, d, mean);
              free (mem);
            }
    }
    free (rgb);
  }
  printf ("YUV vs RGB of the same smooth picture: max abs diff %.4f, worst mean %.4f "
      "(normalised units)\n", worst, worst_mean);
}

/* The generic per-pixel fetch (the CUDA path's) against the CPU row converter: a
 * stretch of an R x R frame is the identity, so the kernel's output is the fetched
 * pixel normalised. */
static void
test_fetch_matches_rows (void)
{
  const int R = 21;
  uint8_t *rgb = random_rgb (R, R);
  for (int f = GPUNET_FORMAT_RGB; f <= GPUNET_FORMAT_I420; f++) {
    uint8_t *mem;
    gpunet_image img = make_frame (f, rgb, R, R, 3, GPUNET_MATRIX_BT709, 0, &mem);
    float out[3 * 21 * 21];
    kernel_run_r (&img, R, GPUNET_RESIZE_STRETCH, 1.0f, 0, out);
    gpunet_pixel_src s;
    gpunet_pixel_src_init (&s, &img);
    double d = 0;
    for (int y = 0; y < R; y++)
      for (int x = 0; x < R; x++) {
        float c[3];
        gpunet_fetch_rgb (&s, x, y, &c[0], &c[1], &c[2]);
        for (int k = 0; k < 3; k++)
          d = fmax (d, fabs (gpunet_normalize (c[k], k) - out[(k * R + y) * R + x]));
      }
    CHECK_MSG (d < 1e-5, "format %d: fetch vs rows %g", f, d);
    free (mem);
  }
  free (rgb);
}

static void
test_byte_order (void)
{
  const int w = 40, h = 30, R = 16;
  uint8_t *rgb = random_rgb (w, h), *mem;
  float a[3 * 16 * 16], b[3 * 16 * 16];
  const size_t plane = (size_t) R * R;
  gpunet_image img = make_frame (GPUNET_FORMAT_RGB, rgb, w, h, 0, 0, 0, &mem);
  kernel_run (&img, R, GPUNET_RESIZE_CENTER_CROP, 1.0f, a);
  img.format = GPUNET_FORMAT_BGR;   /* same bytes read as BGR */
  kernel_run (&img, R, GPUNET_RESIZE_CENTER_CROP, 1.0f, b);
  free (mem);
  /* un-normalise: channel c of a (0..255) is channel 2 - c of b */
  double d = 0;
  for (int c = 0; c < 3; c++)
    for (size_t i = 0; i < plane; i++) {
      const double va = (a[c * plane + i] * (c == 0 ? 0.229 : c == 1 ? 0.224 : 0.225)
          + (c == 0 ? 0.485 : c == 1 ? 0.456 : 0.406)) * 255;
      const int o = 2 - c;
      const double vb = (b[o * plane + i] * (o == 0 ? 0.229 : o == 1 ? 0.224 : 0.225)
          + (o == 0 ? 0.485 : o == 1 ? 0.456 : 0.406)) * 255;
      d = fmax (d, fabs (va - vb));
    }
  CHECK_MSG (d < 1e-3, "RGB vs BGR swap: %g", d);
  /* RGBA and RGBx ignore the 4th byte, BGRA reads B first */
  uint8_t px[8] = { 10, 20, 30, 99, 10, 20, 30, 7 };
  float o4[3];
  gpunet_image one = { GPUNET_FORMAT_BGRA, 1, 1, { px }, { 4 }, 0, 0, GPUNET_MEMORY_HOST, NULL };
  kernel_run (&one, 1, GPUNET_RESIZE_STRETCH, 1.0f, o4);
  CHECK (fabsf (o4[0] - gpunet_normalize (30, 0)) < 1e-6f && fabsf (o4[2] - gpunet_normalize (10, 2)) < 1e-6f);
  one.format = GPUNET_FORMAT_RGBX;
  one.planes[0] = px + 4;
  kernel_run (&one, 1, GPUNET_RESIZE_STRETCH, 1.0f, o4);
  CHECK (fabsf (o4[0] - gpunet_normalize (10, 0)) < 1e-6f && fabsf (o4[1] - gpunet_normalize (20, 1)) < 1e-6f);
  free (rgb);
}

static void
test_letterbox_and_constant (void)
{
  const int R = 32;
  float out[3 * 32 * 32];
  /* a wide frame letterboxed: rows above and below the picture are exactly 0 */
  uint8_t *rgb = random_rgb (64, 20), *mem;
  gpunet_image img = make_frame (GPUNET_FORMAT_RGBX, rgb, 64, 20, 4, 0, 0, &mem);
  kernel_run (&img, R, GPUNET_RESIZE_LETTERBOX, 1.0f, out);
  int zeros = 1, picture_nonzero = 0;
  for (int c = 0; c < 3; c++)
    for (int y = 0; y < R; y++)
      for (int x = 0; x < R; x++) {
        const float v = out[(c * R + y) * R + x];
        if (y < 11 || y >= 21)   /* 20 * 32 / 64 = 10 rows at (32 - 10) / 2 = 11 */
          zeros &= v == 0.0f;
        if (y >= 11 && y < 21 && v != 0.0f)
          picture_nonzero = 1;
      }
  CHECK (zeros && picture_nonzero);
  free (mem);
  free (rgb);

  /* a constant 1080p frame, every mode and format: constant output */
  const int w = 1920, h = 1080;
  uint8_t *flat = malloc ((size_t) w * h * 3);
  for (size_t i = 0; i < (size_t) w * h; i++) {
    flat[3 * i] = 37;
    flat[3 * i + 1] = 150;
    flat[3 * i + 2] = 220;
  }
  for (int f = GPUNET_FORMAT_RGB; f <= GPUNET_FORMAT_I420; f += 6) {
    img = make_frame (f, flat, w, h, 0, 0, 1, &mem);
    for (int mode = 0; mode < 2; mode++) {
      kernel_run (&img, R, mode, 0.875f, out);
      double d = 0;
      float expect[3] = { 37, 150, 220 };
      if (f == GPUNET_FORMAT_NV12) {
        gpunet_pixel_src s;
        gpunet_pixel_src_init (&s, &img);
        gpunet_fetch_rgb (&s, 0, 0, &expect[0], &expect[1], &expect[2]);
        for (int c = 0; c < 3; c++)
          expect[c] = gpunet_quantize8 (expect[c]);
      }
      for (int c = 0; c < 3; c++)
        for (int i = 0; i < R * R; i++)
          d = fmax (d, fabs (out[c * R * R + i] - gpunet_normalize (expect[c], c)));
      CHECK_MSG (d < 1e-5, "constant frame format %d mode %d: %g", f, mode, d);
    }
    free (mem);
  }
  free (flat);
}

static void
test_errors (gpunet_model *model)
{
  float out[3 * 96 * 96];
  char *err = NULL;
  uint8_t px[64] = { 0 };
  gpunet_image img = { GPUNET_FORMAT_RGB, 4, 4, { px }, { 12 }, 0, 0, GPUNET_MEMORY_HOST, NULL };
  CHECK (gpunet_preprocess_image (model, &img, NULL, out, &err) == GPUNET_OK);
  img.strides[0] = 11;
  CHECK (gpunet_preprocess_image (model, &img, NULL, out, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "stride 11");
  img.strides[0] = 12;
  img.width = 0;
  CHECK (gpunet_preprocess_image (model, &img, NULL, out, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "0x4");
  img.width = 4;
  img.planes[0] = NULL;
  CHECK (gpunet_preprocess_image (model, &img, NULL, out, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "no plane 0");
  gpunet_image nv = { GPUNET_FORMAT_NV12, 5, 3, { px, px }, { 5, 5 }, 0, 0, GPUNET_MEMORY_HOST, NULL };
  CHECK (gpunet_preprocess_image (model, &nv, NULL, out, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "at least 6");
  nv.strides[1] = 6;
  CHECK (gpunet_preprocess_image (model, &nv, NULL, out, &err) == GPUNET_OK);
  gpunet_image i420 = { GPUNET_FORMAT_I420, 5, 3, { px, px, NULL }, { 5, 3, 3 }, 0, 0, GPUNET_MEMORY_HOST, NULL };
  CHECK (gpunet_preprocess_image (model, &i420, NULL, out, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "no plane 2");
  i420.planes[2] = px;
  i420.matrix = (gpunet_color_matrix) 7;
  CHECK (gpunet_preprocess_image (model, &i420, NULL, out, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "colour matrix");
  i420.matrix = GPUNET_MATRIX_BT601;
  gpunet_preprocess_params pre = { (gpunet_resize_mode) 9, 0 };
  CHECK (gpunet_preprocess_image (model, &i420, &pre, out, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "resize mode");
  pre.resize_mode = GPUNET_RESIZE_CENTER_CROP;
  pre.crop_pct = 0.01f;
  CHECK (gpunet_preprocess_image (model, &i420, &pre, out, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "crop_pct");
  img.format = (gpunet_pixel_format) 42;
  CHECK (gpunet_preprocess_image (model, &img, NULL, out, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK (gpunet_preprocess_image (model, NULL, NULL, out, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK (gpunet_preprocess_image (model, &i420, NULL, NULL, &err) == GPUNET_ERR_INVALID_ARGUMENT);
  free (err);
}

static void
test_fixture (const char *dir)
{
  char arch[1024], ckpt[1024], path[1024];
  snprintf (arch, sizeof arch, "%s/fixtures/tiny-a.json", dir);
  snprintf (ckpt, sizeof ckpt, "%s/fixtures/tiny-a/tiny-a.pth.tar", dir);
  gpunet_model *model = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_model_load (arch, ckpt, &model, &err);
  CHECK_MSG (st == GPUNET_OK, "loading tiny-a: %s", err ? err : "?");
  if (st != GPUNET_OK) {
    free (err);
    return;
  }
  const int R = gpunet_model_resolution (model);
  CHECK (R == 96);
  size_t n_u8 = 0, n_f = 0;
  snprintf (path, sizeof path, "%s/fixtures/tiny-a/input_rgb_u8.bin", dir);
  uint8_t *u8 = check_read_file (path, &n_u8);
  snprintf (path, sizeof path, "%s/fixtures/tiny-a/input.bin", dir);
  float *golden = check_read_file (path, &n_f);
  const size_t per = (size_t) 3 * R * R;
  CHECK (u8 && n_u8 == 2 * per && golden && n_f == 2 * per * sizeof (float));
  if (u8 && golden && n_u8 == 2 * per && n_f == 2 * per * sizeof (float)) {
    float *out = malloc (sizeof (float) * per);
    for (int i = 0; i < 2; i++) {
      gpunet_image img = { GPUNET_FORMAT_RGB, R, R, { u8 + i * per }, { 3 * R }, 0, 0, GPUNET_MEMORY_HOST, NULL };
      for (int mode = 0; mode < 2; mode++) {
        gpunet_preprocess_params pre = { mode, 1.0f };
        CHECK (gpunet_preprocess_image (model, &img, &pre, out, &err) == GPUNET_OK);
        const double d = max_abs_diff (out, golden + i * per, per, NULL);
        CHECK_MSG (d <= 1e-6, "fixture image %d mode %d: max diff %g", i, mode, d);
      }
    }
    free (out);

    /* classify through RGB frames (and BGRx) gives the golden top-5 */
    gpunet_session_params sp;
    gpunet_session_params_init (&sp);
    sp.backend = GPUNET_BACKEND_CPU;
    sp.max_batch = 2;
    gpunet_session *s = NULL;
    st = gpunet_session_new (model, &sp, &s, &err);
    CHECK_MSG (st == GPUNET_OK, "session: %s", err ? err : "?");
    if (st == GPUNET_OK) {
      static const int top5[2][5] = { { 8, 4, 5, 12, 15 }, { 12, 4, 14, 15, 0 } };
      gpunet_image imgs[2];
      uint8_t *mem[2];
      for (int i = 0; i < 2; i++)
        imgs[i] = make_frame (i ? GPUNET_FORMAT_BGRX : GPUNET_FORMAT_RGB, u8 + i * per, R, R, 8,
            0, 0, &mem[i]);
      gpunet_class_score res[10];
      st = gpunet_session_classify (s, imgs, 2, NULL, 5, res, &err);
      CHECK_MSG (st == GPUNET_OK, "classify: %s", err ? err : "?");
      for (int i = 0; i < 2 && st == GPUNET_OK; i++)
        for (int j = 0; j < 5; j++)
          CHECK_MSG (res[i * 5 + j].id == top5[i][j], "image %d rank %d: class %d, golden %d", i,
              j, res[i * 5 + j].id, top5[i][j]);
      CHECK (st != GPUNET_OK || (res[0].score >= res[1].score && res[0].score <= 1.0f));
      /* argument checks */
      CHECK (gpunet_session_classify (s, imgs, 3, NULL, 5, res, &err) == GPUNET_ERR_INVALID_ARGUMENT);
      CHECK_CONTAINS (err, "batch of 3");
      CHECK (gpunet_session_classify (s, imgs, 0, NULL, 5, res, &err) == GPUNET_ERR_INVALID_ARGUMENT);
      CHECK (gpunet_session_classify (s, imgs, 1, NULL, 0, res, &err) == GPUNET_ERR_INVALID_ARGUMENT);
      CHECK (gpunet_session_classify (s, imgs, 1, NULL, 17, res, &err) == GPUNET_ERR_INVALID_ARGUMENT);
      CHECK_CONTAINS (err, "16 classes");
      CHECK (gpunet_session_classify (s, NULL, 1, NULL, 5, res, &err) == GPUNET_ERR_INVALID_ARGUMENT);
      imgs[1].strides[0] = 3;
      CHECK (gpunet_session_classify (s, imgs, 2, NULL, 5, res, &err) == GPUNET_ERR_INVALID_ARGUMENT);
      CHECK_CONTAINS (err, "image 1");
      free (mem[0]);
      free (mem[1]);
      gpunet_session_free (s);
    }
    test_errors (model);
  }
  free (u8);
  free (golden);
  free (err);
  gpunet_model_unref (model);
}

int
main (void)
{
  test_hand_example ();
  test_geometry ();
  test_yuv_known_colours ();
  test_against_reference ();
  test_streaming ();
  test_formats_agree ();
  test_fetch_matches_rows ();
  test_byte_order ();
  test_letterbox_and_constant ();
  test_fixture (check_data_dir ());
  return check_report ();
}
