/* gstgpunetsurface.c: one NvBufSurface entry as our image (see gstgpunetsurface.h).
 * Every field is checked before a plane pointer is formed: pointer, layout, colour
 * format, size, plane count, each pitch against its row and G_MAXINT, each plane's
 * extent against dataSize.  Plain GLib, no GStreamer: fuzzed by
 * tests/fuzz/fuzz_nvbufsurface.c, which then reads every pixel the host preprocess reads. */
#include "gstgpunetsurface.h"

/* Our pixel format of NvBufSurfaceColorFormat `cf`; FALSE when we do not read it. */
static gboolean
color_format (gint cf, gpunet_pixel_format * fmt, gboolean * full_range,
    guint * planes)
{
  *full_range = FALSE;
  switch (cf) {
    case GPUNET_NVBUF_COLOR_YUV420_ER:
      *full_range = TRUE;
      /* fall through */
    case GPUNET_NVBUF_COLOR_YUV420:
      *fmt = GPUNET_FORMAT_I420;
      *planes = 3;
      return TRUE;
    case GPUNET_NVBUF_COLOR_NV12_ER:
      *full_range = TRUE;
      /* fall through */
    case GPUNET_NVBUF_COLOR_NV12:
      *fmt = GPUNET_FORMAT_NV12;
      *planes = 2;
      return TRUE;
    case GPUNET_NVBUF_COLOR_RGBA:
      *fmt = GPUNET_FORMAT_RGBA;
      break;
    case GPUNET_NVBUF_COLOR_BGRA:
      *fmt = GPUNET_FORMAT_BGRA;
      break;
    case GPUNET_NVBUF_COLOR_RGBx:
      *fmt = GPUNET_FORMAT_RGBX;
      break;
    case GPUNET_NVBUF_COLOR_BGRx:
      *fmt = GPUNET_FORMAT_BGRX;
      break;
    case GPUNET_NVBUF_COLOR_RGB:
      *fmt = GPUNET_FORMAT_RGB;
      break;
    case GPUNET_NVBUF_COLOR_BGR:
      *fmt = GPUNET_FORMAT_BGR;
      break;
    default:
      return FALSE;
  }
  *planes = 1;
  return TRUE;
}

/* Row bytes and rows of plane p of a w x h image of `fmt`. */
static void
plane_extent (gpunet_pixel_format fmt, guint p, guint64 w, guint64 h,
    guint64 * row, guint64 * rows)
{
  switch (fmt) {
    case GPUNET_FORMAT_NV12:
      *row = p == 0 ? w : (w + 1) / 2 * 2;
      *rows = p == 0 ? h : (h + 1) / 2;
      return;
    case GPUNET_FORMAT_I420:
      *row = p == 0 ? w : (w + 1) / 2;
      *rows = p == 0 ? h : (h + 1) / 2;
      return;
    case GPUNET_FORMAT_RGB:
    case GPUNET_FORMAT_BGR:
      *row = w * 3;
      *rows = h;
      return;
    default:
      *row = w * 4;
      *rows = h;
      return;
  }
}

gboolean
gst_gpunet_surface_image (const GpunetNvBufSurfaceParams * p, guint i,
    gboolean egl, gpunet_image * img, gboolean * full_range, gchar ** error)
{
  gboolean full;
  guint planes, k;

  /* a surface array's dataPtr is not valid: its planes come from EGL */
  if (p->dataPtr == NULL && !egl) {
    *error = g_strdup_printf ("NvBufSurface.surfaceList[%u].dataPtr is NULL: "
        "the surface has no memory", i);
    return FALSE;
  }
  if (p->layout != GPUNET_NVBUF_LAYOUT_PITCH) {
    *error = g_strdup_printf ("NvBufSurface.surfaceList[%u].layout is %d (block "
        "linear): only pitch-linear surfaces are read; put nvvideoconvert before "
        "gpunetclassify", i, p->layout);
    return FALSE;
  }
  if (!color_format (p->colorFormat, &img->format, &full, &planes)) {
    *error = g_strdup_printf ("NvBufSurface.surfaceList[%u].colorFormat is %d, "
        "not one gpunetclassify reads (NV12, I420, RGBA, BGRA, RGBx, BGRx, RGB, "
        "BGR): convert with nvvideoconvert", i, p->colorFormat);
    return FALSE;
  }
  if (p->width == 0 || p->height == 0) {
    *error = g_strdup_printf ("NvBufSurface.surfaceList[%u] is %ux%u: an empty "
        "surface", i, p->width, p->height);
    return FALSE;
  }
  if (p->planeParams.num_planes != planes) {
    *error = g_strdup_printf ("NvBufSurface.surfaceList[%u].planeParams.num_planes "
        "is %u, but colorFormat %d has %u", i, p->planeParams.num_planes,
        p->colorFormat, planes);
    return FALSE;
  }
  for (k = 0; k < planes; k++) {
    guint64 row, rows, pitch = p->planeParams.pitch[k];

    plane_extent (img->format, k, p->width, p->height, &row, &rows);
    if (pitch > (guint64) G_MAXINT) {
      *error = g_strdup_printf ("NvBufSurface.surfaceList[%u].planeParams.pitch"
          "[%u] is %" G_GUINT64_FORMAT " bytes: too large (at most %d)", i, k,
          pitch, G_MAXINT);
      return FALSE;
    }
    if (pitch < row) {
      *error = g_strdup_printf ("NvBufSurface.surfaceList[%u].planeParams.pitch"
          "[%u] is %" G_GUINT64_FORMAT " bytes, less than a row of the %ux%u "
          "surface (%" G_GUINT64_FORMAT " bytes)", i, k, pitch, p->width,
          p->height, row);
      return FALSE;
    }
    if ((guint64) p->planeParams.offset[k] + (rows - 1) * pitch + row >
        p->dataSize) {
      *error = g_strdup_printf ("NvBufSurface.surfaceList[%u] plane %u (offset "
          "%u, pitch %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT " rows) reaches "
          "past its dataSize of %u bytes", i, k, p->planeParams.offset[k], pitch,
          rows, p->dataSize);
      return FALSE;
    }
    /* a surface array's planes come from its EGL frame (gstgpunetnvmmegl.c) */
    img->planes[k] = p->dataPtr == NULL ? NULL :
        (const uint8_t *) p->dataPtr + p->planeParams.offset[k];
    img->strides[k] = (int) pitch;
  }
  if (p->width > G_MAXINT / 4 || p->height > G_MAXINT / 4) {
    *error = g_strdup_printf ("NvBufSurface.surfaceList[%u] is %ux%u: too large",
        i, p->width, p->height);
    return FALSE;
  }
  img->width = (int) p->width;
  img->height = (int) p->height;
  *full_range = full;
  return TRUE;
}
