/* gstgpunetnvmmegl.c: Jetson surface arrays through EGL and CUDA (see
 * gstgpunetnvmmegl.h).  The libraries are opened once per process; a batch maps its
 * surfaces on the streaming thread and is unmapped by whichever thread frees it,
 * each CUDA call made with the session's context pushed.  Every field the CUDA
 * frame gives is checked against the surface before the engine reads it. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <string.h>

#include "gpunet-nvds-abi.h"
#include "gstgpunetnvmmegl.h"

struct _GstGpunetEglMap
{
  const GstGpunetEgl *egl;
  gpointer context;
  gpointer surface;
  guint n;                      /* surfaces mapped as EGL images */
  void **resources;             /* per surface: registered with CUDA, or NULL */
};

/* dlopen's failure as text, or `fallback`. */
static const gchar *
dl_error (const gchar * fallback)
{
  const gchar *e = dlerror ();

  return e ? e : fallback;
}

/* Looks up `name` in `lib` into *slot; FALSE and *why naming it. */
static gboolean
lookup (gpointer lib, const gchar * path, const gchar * name, gpointer slot,
    gchar ** why)
{
  gpointer f = dlsym (lib, name);

  if (f == NULL) {
    *why = g_strdup_printf ("%s has no function %s: not a library with "
        "CUDA's EGL interop and NvBufSurface's EGL mapping (a Jetson's)", path,
        name);
    return FALSE;
  }
  memcpy (slot, &f, sizeof f);
  return TRUE;
}

gboolean
gst_gpunet_egl_load_cuda (GstGpunetEgl * egl, const gchar * path, gchar ** why)
{
  gpointer lib;

  *why = NULL;
  if (path == NULL)
    path = "libcuda.so.1";
  /* global: libnvbufsurface needs it too */
  if ((lib = dlopen (path, RTLD_NOW | RTLD_GLOBAL)) == NULL) {
    *why = g_strdup_printf ("CUDA's driver library cannot be opened: %s",
        dl_error (path));
    return FALSE;
  }
  if (!lookup (lib, path, "cuGraphicsEGLRegisterImage", &egl->register_image,
          why)
      || !lookup (lib, path, "cuGraphicsResourceGetMappedEglFrame",
          &egl->mapped_frame, why)
      || !lookup (lib, path, "cuGraphicsUnregisterResource", &egl->unregister,
          why)
      || !lookup (lib, path, "cuCtxPushCurrent_v2", &egl->ctx_push, why)
      || !lookup (lib, path, "cuCtxPopCurrent_v2", &egl->ctx_pop, why)) {
    /* the library stays open: dlclose of a CUDA driver is not worth the risk */
    return FALSE;
  }
  *(gpointer *) & egl->error_name = dlsym (lib, "cuGetErrorName");
  g_free (egl->cuda_path);
  egl->cuda_path = g_strdup (path);
  return TRUE;
}

gboolean
gst_gpunet_egl_load_nvbufsurface (GstGpunetEgl * egl, const gchar * path,
    gchar ** why)
{
  gpointer lib;

  *why = NULL;
  if ((lib = dlopen (path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
    *why = g_strdup_printf ("libnvbufsurface cannot be opened: %s",
        dl_error (path));
    return FALSE;
  }
  if (!lookup (lib, path, "NvBufSurfaceMapEglImage", &egl->map_egl, why)
      || !lookup (lib, path, "NvBufSurfaceUnMapEglImage", &egl->unmap_egl, why))
    return FALSE;
  g_free (egl->nvbufsurface_path);
  egl->nvbufsurface_path = g_strdup (path);
  return TRUE;
}

const GstGpunetEgl *
gst_gpunet_egl_open (const gchar * nvds_dir, gchar ** why)
{
  static GMutex lock;
  static GHashTable *opened;    /* dir -> GstGpunetEgl, or the sentence */
  static GHashTable *failed;
  const gchar *key = nvds_dir ? nvds_dir : "";
  GstGpunetEgl *egl;

  *why = NULL;
  g_mutex_lock (&lock);
  if (opened == NULL) {
    opened = g_hash_table_new (g_str_hash, g_str_equal);
    failed = g_hash_table_new (g_str_hash, g_str_equal);
  }
  if ((egl = g_hash_table_lookup (opened, key)) == NULL
      && g_hash_table_lookup (failed, key) == NULL) {
    gchar *lib = nvds_dir ? g_build_filename (nvds_dir, "libnvbufsurface.so",
        NULL) : NULL;

    egl = g_new0 (GstGpunetEgl, 1);
    if (gst_gpunet_egl_load_cuda (egl, NULL, why)
        && gst_gpunet_egl_load_nvbufsurface (egl, lib
            && g_file_test (lib, G_FILE_TEST_EXISTS) ? lib :
            "libnvbufsurface.so", why)) {
      g_hash_table_insert (opened, g_strdup (key), egl);
    } else {
      g_hash_table_insert (failed, g_strdup (key), g_strdup (*why));
      g_free (egl->cuda_path);
      g_free (egl->nvbufsurface_path);
      g_free (egl);
      egl = NULL;
    }
    g_free (lib);
  }
  if (egl == NULL && *why == NULL)
    *why = g_strdup (g_hash_table_lookup (failed, key));
  g_mutex_unlock (&lock);
  return egl;
}

/* ---- one batch ------------------------------------------------------------------ */

static gchar *
cu_error (const GstGpunetEgl * egl, int r)
{
  const char *name = NULL;

  if (egl->error_name == NULL || egl->error_name (r, &name) != 0
      || name == NULL)
    name = "unknown";
  return g_strdup_printf ("%d (%s)", r, name);
}

gboolean
gst_gpunet_egl_check_frame (const GpunetCUeglFrame * fr, guint i, guint planes,
    gpunet_image * img, gchar ** error)
{
  guint k;

  if (fr->frameType != GPUNET_CU_EGL_FRAME_TYPE_PITCH) {
    *error = g_strdup_printf ("surface %u: CUeglFrame.frameType is %d (a CUDA "
        "array, block linear): only pitch-linear surfaces are read; put "
        "nvvideoconvert (bl-output=false) before gpunetclassify", i,
        fr->frameType);
    return FALSE;
  }
  if (fr->planeCount != planes) {
    *error = g_strdup_printf ("surface %u: CUeglFrame.planeCount is %u, but "
        "its colorFormat has %u planes", i, fr->planeCount, planes);
    return FALSE;
  }
  if (fr->width != (guint) img->width || fr->height != (guint) img->height) {
    *error = g_strdup_printf ("surface %u: CUeglFrame is %ux%u, but the "
        "surface is %dx%d", i, fr->width, fr->height, img->width,
        img->height);
    return FALSE;
  }
  if (fr->pitch != (guint) img->strides[0]) {
    *error = g_strdup_printf ("surface %u: CUeglFrame.pitch is %u, but the "
        "surface's planeParams.pitch[0] is %d", i, fr->pitch, img->strides[0]);
    return FALSE;
  }
  for (k = 0; k < planes; k++)
    if (fr->planes[k] == NULL) {
      *error = g_strdup_printf ("surface %u: CUeglFrame.frame.pPitch[%u] is "
          "NULL", i, k);
      return FALSE;
    }
  for (k = 0; k < planes; k++)
    img->planes[k] = fr->planes[k];
  return TRUE;
}

/* Plane count of an image of `fmt`. */
static guint
plane_count (gpunet_pixel_format fmt)
{
  return fmt == GPUNET_FORMAT_I420 ? 3 : fmt == GPUNET_FORMAT_NV12 ? 2 : 1;
}

gboolean
gst_gpunet_egl_map (const GstGpunetEgl * egl, gpointer context,
    gpointer surface, const guint8 * list, guint stride, guint n,
    gpunet_image * imgs, GstGpunetEglMap ** out, gchar ** error)
{
  GstGpunetEglMap *m = g_new0 (GstGpunetEglMap, 1);
  gboolean pushed = FALSE;
  guint i;

  *out = NULL;
  *error = NULL;
  m->egl = egl;
  m->context = context;
  m->surface = surface;
  m->resources = g_new0 (void *, MAX (n, 1));
  if (context == NULL) {
    *error = g_strdup ("Jetson surfaces are read through CUDA, and this "
        "element has no CUDA context: set backend=cuda");
    goto fail;
  }
  if (egl->ctx_push (context) != 0) {
    *error = g_strdup ("cuCtxPushCurrent failed for the session's CUDA "
        "context");
    goto fail;
  }
  pushed = TRUE;
  for (i = 0; i < n; i++) {
    GpunetNvBufSurfaceParams p;
    GpunetCUeglFrame frame;
    int r;

    r = egl->map_egl (surface, (int) i);
    if (r != 0) {
      *error = g_strdup_printf ("NvBufSurfaceMapEglImage (surface %u) failed "
          "with %d", i, r);
      goto fail;
    }
    m->n = i + 1;
    /* the entry again: the call wrote its mappedAddr.eglImage */
    memcpy (&p, list + (gsize) i * stride, sizeof p);
    if (p.mappedAddr_eglImage == NULL) {
      *error = g_strdup_printf ("NvBufSurface.surfaceList[%u].mappedAddr."
          "eglImage is NULL after NvBufSurfaceMapEglImage: this "
          "libnvbufsurface maps no EGL images (not a Jetson's)", i);
      goto fail;
    }
    r = egl->register_image (&m->resources[i], p.mappedAddr_eglImage,
        GPUNET_CU_GRAPHICS_MAP_READ_ONLY);
    if (r != 0) {
      gchar *e = cu_error (egl, r);

      m->resources[i] = NULL;
      *error = g_strdup_printf ("cuGraphicsEGLRegisterImage (surface %u) "
          "failed with %s", i, e);
      g_free (e);
      goto fail;
    }
    memset (&frame, 0, sizeof frame);
    r = egl->mapped_frame (&frame, m->resources[i], 0, 0);
    if (r != 0) {
      gchar *e = cu_error (egl, r);

      *error = g_strdup_printf ("cuGraphicsResourceGetMappedEglFrame (surface "
          "%u) failed with %s", i, e);
      g_free (e);
      goto fail;
    }
    if (!gst_gpunet_egl_check_frame (&frame, i, plane_count (imgs[i].format),
            &imgs[i], error))
      goto fail;
  }
  {
    void *popped = NULL;

    egl->ctx_pop (&popped);
  }
  *out = m;
  return TRUE;

fail:
  if (pushed) {
    void *popped = NULL;

    egl->ctx_pop (&popped);
  }
  gst_gpunet_egl_unmap (m);
  return FALSE;
}

void
gst_gpunet_egl_unmap (GstGpunetEglMap * m)
{
  gboolean pushed;
  guint i;

  if (m == NULL)
    return;
  pushed = m->context != NULL && m->egl->ctx_push (m->context) == 0;
  for (i = 0; i < m->n; i++) {
    if (m->resources[i] != NULL && pushed)
      m->egl->unregister (m->resources[i]);
    m->egl->unmap_egl (m->surface, (int) i);
  }
  if (pushed) {
    void *popped = NULL;

    m->egl->ctx_pop (&popped);
  }
  g_free (m->resources);
  g_free (m);
}
