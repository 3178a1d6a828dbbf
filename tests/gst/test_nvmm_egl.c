/* test_nvmm_egl.c: what of the Jetson EGL path (gst/gstgpunetnvmmegl.c) runs without
 * a Jetson.  Our CUeglFrame declaration against CUDA's own cudaEGL.h where the
 * toolkit is installed (compile time); the refusals with real libraries that lack
 * the functions (CUDA's link stub libcuda.so has no EGL interop, the wheel's
 * libnvds_meta no NvBufSurfaceMapEglImage) or are missing; the wheel's real dGPU
 * libnvbufsurface, whose NvBufSurfaceMapEglImage maps nothing, refused with the
 * field it left NULL; every CUeglFrame field check on forged frames.  Run through
 * nvds-libs.sh (GPUNET_NVDS_LIB_DIR); GPUNET_CUDA_STUB names CUDA's link stub when
 * the build found one.  Exits 0 or 1. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gpunet-nvds-abi.h"
#include "gstgpunetnvmmegl.h"

#ifdef GPUNET_HAVE_CUDA_EGL_H
#include <cudaEGL.h>
/* our declaration is CUDA's: same offsets, size and values */
G_STATIC_ASSERT (sizeof (GpunetCUeglFrame) == sizeof (CUeglFrame));
G_STATIC_ASSERT (G_STRUCT_OFFSET (GpunetCUeglFrame, planes) ==
    G_STRUCT_OFFSET (CUeglFrame, frame));
G_STATIC_ASSERT (G_STRUCT_OFFSET (GpunetCUeglFrame, width) ==
    G_STRUCT_OFFSET (CUeglFrame, width));
G_STATIC_ASSERT (G_STRUCT_OFFSET (GpunetCUeglFrame, pitch) ==
    G_STRUCT_OFFSET (CUeglFrame, pitch));
G_STATIC_ASSERT (G_STRUCT_OFFSET (GpunetCUeglFrame, planeCount) ==
    G_STRUCT_OFFSET (CUeglFrame, planeCount));
G_STATIC_ASSERT (G_STRUCT_OFFSET (GpunetCUeglFrame, frameType) ==
    G_STRUCT_OFFSET (CUeglFrame, frameType));
G_STATIC_ASSERT (G_STRUCT_OFFSET (GpunetCUeglFrame, cuFormat) ==
    G_STRUCT_OFFSET (CUeglFrame, cuFormat));
G_STATIC_ASSERT (GPUNET_CU_EGL_MAX_PLANES == MAX_PLANES);
G_STATIC_ASSERT ((int) GPUNET_CU_EGL_FRAME_TYPE_PITCH ==
    (int) CU_EGL_FRAME_TYPE_PITCH);
G_STATIC_ASSERT ((int) GPUNET_CU_EGL_FRAME_TYPE_ARRAY ==
    (int) CU_EGL_FRAME_TYPE_ARRAY);
G_STATIC_ASSERT (GPUNET_CU_GRAPHICS_MAP_READ_ONLY ==
    CU_GRAPHICS_MAP_RESOURCE_FLAGS_READ_ONLY);
#endif

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
  fprintf (stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
  fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); } } while (0)

static gboolean
has (const gchar * text, const gchar * part)
{
  return text != NULL && strstr (text, part) != NULL;
}

static gchar *
wheel_lib (const gchar * name)
{
  const gchar *dir = g_getenv ("GPUNET_NVDS_LIB_DIR");

  if (dir == NULL) {
    fprintf (stderr, "GPUNET_NVDS_LIB_DIR is not set (run through "
        "tests/gst/nvds-libs.sh)\n");
    exit (1);
  }
  return g_build_filename (dir, name, NULL);
}

/* Libraries that are not a Jetson's are refused, naming what is missing. */
static void
test_refusals (void)
{
  GstGpunetEgl egl;
  gchar *why = NULL, *meta = wheel_lib ("libnvds_meta.so");
  const gchar *stub = g_getenv ("GPUNET_CUDA_STUB");

  memset (&egl, 0, sizeof egl);
  CHECK (!gst_gpunet_egl_load_cuda (&egl, "libgpunet-no-such-cuda.so.1", &why),
      "a missing library loaded");
  CHECK (has (why, "CUDA's driver library cannot be opened")
      && has (why, "libgpunet-no-such-cuda.so.1"), "%s", why);
  g_free (why);

  if (stub != NULL) {
    /* CUDA's real link stub: a driver library without the EGL interop */
    CHECK (!gst_gpunet_egl_load_cuda (&egl, stub, &why), "the stub loaded");
    CHECK (has (why, "has no function cuGraphicsEGLRegisterImage")
        && has (why, stub), "%s", why);
    g_free (why);
  } else {
    printf ("no CUDA link stub in this build: its refusal not checked\n");
  }

  CHECK (!gst_gpunet_egl_load_nvbufsurface (&egl, meta, &why),
      "libnvds_meta taken for libnvbufsurface");
  CHECK (has (why, "has no function NvBufSurfaceMapEglImage") && has (why,
          "libnvds_meta.so"), "%s", why);
  g_free (why);
  g_free (meta);

  /* the element's search: on this machine (no libcuda.so.1 with EGL interop, or
   * none at all) a sentence, asked twice the same */
  {
    gchar *why2 = NULL;
    const GstGpunetEgl *a = gst_gpunet_egl_open (g_getenv
        ("GPUNET_NVDS_LIB_DIR"), &why);
    const GstGpunetEgl *b = gst_gpunet_egl_open (g_getenv
        ("GPUNET_NVDS_LIB_DIR"), &why2);

    CHECK (a == b, "opened twice differently");
    if (a == NULL)
      CHECK (why != NULL && g_strcmp0 (why, why2) == 0, "%s / %s", why, why2);
    else
      printf ("this host has a CUDA driver with EGL interop (%s, %s)\n",
          a->cuda_path, a->nvbufsurface_path);
    g_free (why);
    g_free (why2);
  }
}

static gint pushes, pops;

static int
count_push (void *ctx)
{
  (void) ctx;
  pushes++;
  return 0;
}

static int
count_pop (void **ctx)
{
  *ctx = NULL;
  pops++;
  return 0;
}

/* The wheel's libnvbufsurface (a dGPU build: its EGL mapping returns success and
 * maps nothing) with CUDA's stub standing in for libcuda.so.1 so that it loads:
 * the batch is refused with the field left NULL, the context pushed and popped
 * as often.  The context hooks are counters here: nothing reaches CUDA. */
static void
test_dgpu_library (void)
{
  const gchar *stub = g_getenv ("GPUNET_CUDA_STUB");
  gchar *lib = wheel_lib ("libnvbufsurface.so"), *why = NULL, *error = NULL;
  guint8 *list = g_malloc0 (GPUNET_NVBUF_PARAMS_STRIDE_V8);
  GpunetNvBufSurface hdr;
  GpunetNvBufSurfaceParams p;
  GstGpunetEglMap *map = (GstGpunetEglMap *) 1;
  gpunet_image img;
  GstGpunetEgl egl;
  int ctx;

  if (stub == NULL || dlopen (stub, RTLD_NOW | RTLD_GLOBAL) == NULL) {
    printf ("no CUDA link stub to load the wheel's libnvbufsurface: not "
        "checked\n");
    g_free (lib);
    g_free (list);
    return;
  }
  /* the wheel's build needs CUDA 13's runtime too: the toolkit's, beside the
   * stub's directory, when the loader's path does not have it */
  {
    gchar *stubs = g_path_get_dirname (stub);
    gchar *libdir = g_path_get_dirname (stubs);
    gchar *cudart = g_build_filename (libdir, "libcudart.so.13", NULL);

    dlopen (cudart, RTLD_NOW | RTLD_GLOBAL);
    g_free (cudart);
    g_free (libdir);
    g_free (stubs);
  }
  memset (&egl, 0, sizeof egl);
  if (!gst_gpunet_egl_load_nvbufsurface (&egl, lib, &why)) {
    /* a library found but not loadable here is not what this checks */
    CHECK (has (why, "cannot be opened"), "%s", why);
    printf ("the wheel's libnvbufsurface does not load here (%s): not "
        "checked\n", why);
    g_free (why);
    g_free (lib);
    g_free (list);
    return;
  }
  egl.ctx_push = count_push;
  egl.ctx_pop = count_pop;

  memset (&p, 0, sizeof p);
  p.width = 64;
  p.height = 48;
  p.pitch = 256;
  p.colorFormat = GPUNET_NVBUF_COLOR_RGBA;
  p.dataSize = 256 * 48;
  p.planeParams.num_planes = 1;
  p.planeParams.pitch[0] = 256;
  memcpy (list, &p, sizeof p);
  memset (&hdr, 0, sizeof hdr);
  hdr.batchSize = hdr.numFilled = 1;
  hdr.memType = GPUNET_NVBUF_MEM_SURFACE_ARRAY;
  hdr.surfaceList = list;
  memset (&img, 0, sizeof img);
  img.format = GPUNET_FORMAT_RGBA;
  img.width = 64;
  img.height = 48;
  img.strides[0] = 256;

  CHECK (!gst_gpunet_egl_map (&egl, &ctx, &hdr, list,
          GPUNET_NVBUF_PARAMS_STRIDE_V8, 1, &img, &map, &error),
      "a dGPU library mapped an EGL image");
  CHECK (has (error, "surfaceList[0].mappedAddr.eglImage is NULL"), "%s",
      error);
  CHECK (map == NULL, "a map returned on failure");
  CHECK (pushes >= 1 && pushes == pops, "pushed %d, popped %d", pushes, pops);
  g_free (error);

  /* no CUDA context (a CPU session): refused before any call */
  pushes = pops = 0;
  CHECK (!gst_gpunet_egl_map (&egl, NULL, &hdr, list,
          GPUNET_NVBUF_PARAMS_STRIDE_V8, 1, &img, &map, &error), "mapped");
  CHECK (has (error, "backend=cuda"), "%s", error);
  CHECK (pushes == 0 && pops == 0, "pushed %d, popped %d", pushes, pops);
  g_free (error);
  g_free (egl.nvbufsurface_path);
  g_free (lib);
  g_free (list);
}

/* Each CUeglFrame field that does not match the surface is named with its value;
 * a matching frame gives the image its planes. */
static void
test_frame_checks (void)
{
  static guint8 y[16], uv[16];
  const struct
  {
    const gchar *what;
    gint frame_type;
    guint planes, width, pitch;
    gboolean null_plane;
    const gchar *expect;
  } cases[] = {
    {"array", GPUNET_CU_EGL_FRAME_TYPE_ARRAY, 2, 64, 128, FALSE,
        "CUeglFrame.frameType is 0"},
    {"planes", GPUNET_CU_EGL_FRAME_TYPE_PITCH, 3, 64, 128, FALSE,
        "CUeglFrame.planeCount is 3"},
    {"width", GPUNET_CU_EGL_FRAME_TYPE_PITCH, 2, 32, 128, FALSE,
        "CUeglFrame is 32x48"},
    {"pitch", GPUNET_CU_EGL_FRAME_TYPE_PITCH, 2, 64, 64, FALSE,
        "CUeglFrame.pitch is 64"},
    {"null", GPUNET_CU_EGL_FRAME_TYPE_PITCH, 2, 64, 128, TRUE,
        "CUeglFrame.frame.pPitch[1] is NULL"},
    {"good", GPUNET_CU_EGL_FRAME_TYPE_PITCH, 2, 64, 128, FALSE, NULL},
  };
  guint c;

  for (c = 0; c < G_N_ELEMENTS (cases); c++) {
    GpunetCUeglFrame fr;
    gpunet_image img;
    gchar *error = NULL;
    gboolean ok;

    memset (&fr, 0, sizeof fr);
    fr.planes[0] = y;
    fr.planes[1] = cases[c].null_plane ? NULL : uv;
    fr.width = cases[c].width;
    fr.height = 48;
    fr.pitch = cases[c].pitch;
    fr.planeCount = cases[c].planes;
    fr.frameType = cases[c].frame_type;
    memset (&img, 0, sizeof img);
    img.format = GPUNET_FORMAT_NV12;
    img.width = 64;
    img.height = 48;
    img.strides[0] = img.strides[1] = 128;
    ok = gst_gpunet_egl_check_frame (&fr, 3, 2, &img, &error);
    if (cases[c].expect == NULL) {
      CHECK (ok, "%s: %s", cases[c].what, error);
      CHECK (img.planes[0] == y && img.planes[1] == uv, "%s: planes",
          cases[c].what);
    } else {
      CHECK (!ok, "%s accepted", cases[c].what);
      CHECK (has (error, cases[c].expect) && has (error, "surface 3"),
          "%s: %s", cases[c].what, error);
      CHECK (img.planes[0] == NULL, "%s: planes set", cases[c].what);
    }
    g_free (error);
  }
}

int
main (void)
{
  test_refusals ();
  test_dgpu_library ();
  test_frame_checks ();
#ifndef GPUNET_HAVE_CUDA_EGL_H
  printf ("no cudaEGL.h in this build: CUeglFrame not compared with CUDA's\n");
#endif
  if (failures)
    fprintf (stderr, "%d checks failed\n", failures);
  else
    printf ("nvmm egl: all checks passed\n");
  return failures ? 1 : 0;
}
