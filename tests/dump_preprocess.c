/* dump_preprocess.c: a test helper that runs the CPU fused preprocess on one raw 8-bit
 * frame for any output size, without a model or checkpoint, and writes the float32
 * 3 x R x R result (tools/compare_preprocess.py compares it with torchvision). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preprocess.h"

static const struct { const char *name; gpunet_pixel_format fmt; int bpp; } formats[] = {
  { "RGB", GPUNET_FORMAT_RGB, 3 }, { "BGR", GPUNET_FORMAT_BGR, 3 },
  { "RGBA", GPUNET_FORMAT_RGBA, 4 }, { "BGRA", GPUNET_FORMAT_BGRA, 4 },
  { "RGBx", GPUNET_FORMAT_RGBX, 4 }, { "BGRx", GPUNET_FORMAT_BGRX, 4 },
  { "NV12", GPUNET_FORMAT_NV12, 0 }, { "I420", GPUNET_FORMAT_I420, 0 },
};

int
main (int argc, char **argv)
{
  if (argc != 9) {
    fprintf (stderr, "usage: dump_preprocess FORMAT WIDTH HEIGHT IN.raw R "
        "center-crop|stretch|letterbox CROP_PCT OUT.bin\n"
        "  IN.raw: tightly packed planes (NV12: Y then UV; I420: Y, U, V), BT.601 limited\n");
    return 2;
  }
  int fi = -1;
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (!strcmp (argv[1], formats[i].name))
      fi = (int) i;
  const int w = atoi (argv[2]), h = atoi (argv[3]), R = atoi (argv[5]);
  const float pct = (float) atof (argv[7]);
  gpunet_resize_mode mode = !strcmp (argv[6], "stretch") ? GPUNET_RESIZE_STRETCH
      : !strcmp (argv[6], "letterbox") ? GPUNET_RESIZE_LETTERBOX : GPUNET_RESIZE_CENTER_CROP;
  if (fi < 0 || w < 1 || h < 1 || R < 1 || !(pct > 0.0f)) {
    fprintf (stderr, "dump_preprocess: bad arguments\n");
    return 2;
  }
  FILE *f = fopen (argv[4], "rb");
  if (!f) {
    perror (argv[4]);
    return 1;
  }
  const int cw = (w + 1) / 2, ch = (h + 1) / 2;
  const size_t size = formats[fi].bpp ? (size_t) w * h * formats[fi].bpp
      : (size_t) w * h + 2 * (size_t) cw * ch;
  unsigned char *data = malloc (size);
  if (!data || fread (data, 1, size, f) != size) {
    fprintf (stderr, "dump_preprocess: %s is shorter than %zu bytes\n", argv[4], size);
    return 1;
  }
  fclose (f);
  gpunet_image img;
  memset (&img, 0, sizeof img);
  img.format = formats[fi].fmt;
  img.width = w;
  img.height = h;
  img.planes[0] = data;
  if (formats[fi].bpp) {
    img.strides[0] = w * formats[fi].bpp;
  } else {
    img.strides[0] = w;
    img.planes[1] = data + (size_t) w * h;
    img.strides[1] = img.format == GPUNET_FORMAT_NV12 ? 2 * cw : cw;
    img.planes[2] = img.planes[1] + (size_t) cw * ch;
    img.strides[2] = cw;
  }
  gpunet_preprocess_plan plan;
  if (gpunet_preprocess_plan_init (&plan, w, h, R, mode, pct) != GPUNET_OK) {
    fprintf (stderr, "dump_preprocess: cannot plan\n");
    return 1;
  }
  float *out = malloc (sizeof (float) * 3 * R * R);
  gpunet_cpu_preprocess (&plan, &img, out);
  f = fopen (argv[8], "wb");
  if (!f || fwrite (out, sizeof (float), (size_t) 3 * R * R, f) != (size_t) 3 * R * R) {
    perror (argv[8]);
    return 1;
  }
  fclose (f);
  gpunet_preprocess_plan_clear (&plan);
  free (out);
  free (data);
  return 0;
}
