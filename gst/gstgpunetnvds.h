/* gstgpunetnvds.h: DeepStream's metadata libraries (libnvds_meta, libnvdsgst_meta),
 * found and opened at run time with dlopen: the functions gpunetclassify calls and
 * the NvBufSurface layout of the version found.  Nothing here links to DeepStream:
 * a build and a host without it work as before, with no NVMM caps. */
#ifndef __GST_GPUNET_NVDS_H__
#define __GST_GPUNET_NVDS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

/* The standard DeepStream install's library directory. */
#define GST_GPUNET_NVDS_STD_DIR "/opt/nvidia/deepstream/deepstream/lib"

/* The libraries of one directory, opened once per process and never closed. */
typedef struct
{
  gchar *dir;                   /* where they were found */
  gchar *version;               /* what was detected, for messages */
  guint surface_stride;         /* sizeof NvBufSurfaceParams of that version */
  guint sizes[4];               /* element sizes: frame, object, classifier, label */

  gpointer (*get_batch_meta) (GstBuffer * buf);
  void (*acquire_lock) (gpointer batch_meta);
  void (*release_lock) (gpointer batch_meta);
  gpointer (*acquire_obj) (gpointer batch_meta);
  void (*add_obj_to_frame) (gpointer frame, gpointer obj, gpointer parent);
  gpointer (*acquire_classifier) (gpointer batch_meta);
  void (*add_classifier_to_obj) (gpointer obj, gpointer cls);
  gpointer (*acquire_label) (gpointer batch_meta);
  void (*add_label_to_classifier) (gpointer cls, gpointer label);
  gpointer (*create_batch_meta) (guint max_batch_size);
  gboolean (*destroy_batch_meta) (gpointer batch_meta);
} GstGpunetNvds;

/* The libraries from `dir` (NULL or empty: the LD_LIBRARY_PATH directories, then
 * GST_GPUNET_NVDS_STD_DIR), or NULL and *why (g_free): the sentence saying what was
 * not found or which version is not one we read.  Thread safe; the result is
 * shared and lives as long as the process. */
const GstGpunetNvds *gst_gpunet_nvds_open (const gchar * dir, gchar ** why);

/* The NvBufSurfaceParams stride for DeepStream `version` ("9.1"; NULL: unknown) whose
 * library reports the element sizes `sizes` (frame, object, classifier, label
 * info), or 0 and *why (g_free).  *what (g_free) describes what was found. */
guint gst_gpunet_nvds_layout (const gchar * version, const guint sizes[4],
    gchar ** what, gchar ** why);

G_END_DECLS

#endif /* __GST_GPUNET_NVDS_H__ */
