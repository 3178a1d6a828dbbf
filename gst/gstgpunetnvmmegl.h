/* gstgpunetnvmmegl.h: Jetson NVMM surfaces (memType NVBUF_MEM_SURFACE_ARRAY) read in
 * place by the CUDA engine.  Such a surface has no device pointer of its own: it is
 * mapped as an EGLImage by libnvbufsurface (NvBufSurfaceMapEglImage), the image is
 * registered with CUDA's driver (cuGraphicsEGLRegisterImage) and its mapped frame
 * (cuGraphicsResourceGetMappedEglFrame) gives a pitch-linear pointer per plane.
 * Both libraries are opened with dlopen and only what is called is declared here,
 * written from NVIDIA's public API references (nvbufsurface.h, cudaEGL.h); no NVIDIA
 * header is included.  Built on every platform; on a dGPU no surface has this
 * memType, so the path is never taken there.  Not run on a Jetson yet. */
#ifndef __GST_GPUNET_NVMM_EGL_H__
#define __GST_GPUNET_NVMM_EGL_H__

#include <glib.h>

#include "gpunet.h"

G_BEGIN_DECLS

/* ---- CUDA driver API, as cudaEGL.h documents it -------------------------------- */

#define GPUNET_CU_EGL_MAX_PLANES 3

/* CUeglFrameType */
enum
{
  GPUNET_CU_EGL_FRAME_TYPE_ARRAY = 0,
  GPUNET_CU_EGL_FRAME_TYPE_PITCH = 1
};

/* CU_GRAPHICS_MAP_RESOURCE_FLAGS_READ_ONLY (CUgraphicsMapResourceFlags) */
#define GPUNET_CU_GRAPHICS_MAP_READ_ONLY 1

/* CUeglFrame */
typedef struct
{
  void *planes[GPUNET_CU_EGL_MAX_PLANES];       /* pPitch[] (or pArray[]) */
  uint32_t width;
  uint32_t height;
  uint32_t depth;
  uint32_t pitch;               /* of plane 0, bytes */
  uint32_t planeCount;
  uint32_t numChannels;
  int32_t frameType;            /* GPUNET_CU_EGL_FRAME_TYPE_* */
  int32_t eglColorFormat;
  int32_t cuFormat;
} GpunetCUeglFrame;

G_STATIC_ASSERT (G_STRUCT_OFFSET (GpunetCUeglFrame, width) == 24);
G_STATIC_ASSERT (G_STRUCT_OFFSET (GpunetCUeglFrame, frameType) == 48);
G_STATIC_ASSERT (sizeof (GpunetCUeglFrame) == 64);

/* ---- the libraries ---------------------------------------------------------------- */

/* The functions the EGL path calls; CUDA's return a CUresult (0: success),
 * libnvbufsurface's an int (0: success). */
typedef struct
{
  gchar *cuda_path;             /* what was opened, for messages */
  gchar *nvbufsurface_path;
  int (*map_egl) (void *surface, int index);
  int (*unmap_egl) (void *surface, int index);
  int (*register_image) (void **resource, void *egl_image, unsigned int flags);
  int (*mapped_frame) (GpunetCUeglFrame * frame, void *resource,
      unsigned int index, unsigned int mip_level);
  int (*unregister) (void *resource);
  int (*ctx_push) (void *context);
  int (*ctx_pop) (void **context);
  int (*error_name) (int result, const char **name);    /* may be NULL */
} GstGpunetEgl;

/* Opens CUDA's driver library `path` (NULL: "libcuda.so.1") into `egl` and looks up
 * its EGL interop and context functions: FALSE and *why (g_free: the library or
 * the first function missing) when it cannot. */
gboolean gst_gpunet_egl_load_cuda (GstGpunetEgl * egl, const gchar * path,
    gchar ** why);

/* The same for libnvbufsurface `path` (its NvBufSurfaceMapEglImage and
 * NvBufSurfaceUnMapEglImage).  It needs CUDA's driver: load that first. */
gboolean gst_gpunet_egl_load_nvbufsurface (GstGpunetEgl * egl,
    const gchar * path, gchar ** why);

/* Both libraries: libnvbufsurface.so from `nvds_dir` (the metadata libraries'
 * directory), else from the loader's search path; CUDA's libcuda.so.1.  Opened
 * once per process (the answer, and the sentence of a failure, are kept): NULL and
 * *why (g_free) when either is missing. */
const GstGpunetEgl *gst_gpunet_egl_open (const gchar * nvds_dir, gchar ** why);

/* ---- one batch ------------------------------------------------------------------ */

typedef struct _GstGpunetEglMap GstGpunetEglMap;

/* Maps the `n` surfaces of `surface` (the mapped NvBufSurface; `list` its
 * surfaceList, entries `stride` bytes apart) for CUDA in `cuda_context` (a
 * CUcontext, pushed around every CUDA call): each imgs[i] (read from the surface:
 * format, size, strides) gets the plane pointers of its mapped EGL frame.  FALSE
 * and *error (g_free: the call or field and its value) when a surface cannot be
 * mapped; what was mapped is undone.  *out: what gst_gpunet_egl_unmap undoes. */
gboolean gst_gpunet_egl_map (const GstGpunetEgl * egl, gpointer cuda_context,
    gpointer surface, const guint8 * list, guint stride, guint n,
    gpunet_image * imgs, GstGpunetEglMap ** out, gchar ** error);

/* Unregisters and unmaps a batch once the engine is done with it (NULL-safe). */
void gst_gpunet_egl_unmap (GstGpunetEglMap * map);

/* The checks of surface i's mapped frame `frame` against what the surface says
 * (`img`: its format, size and strides; `planes` its plane count): pitch-linear,
 * as many planes as the format, the surface's size, a plane-0 pitch equal to
 * the surface's, no NULL plane.  TRUE with img's planes set to the frame's, or
 * FALSE and *error (g_free) naming the CUeglFrame field and its value. */
gboolean gst_gpunet_egl_check_frame (const GpunetCUeglFrame * frame, guint i,
    guint planes, gpunet_image * img, gchar ** error);

G_END_DECLS

#endif /* __GST_GPUNET_NVMM_EGL_H__ */
