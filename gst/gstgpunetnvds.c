/* gstgpunetnvds.c: finds and opens DeepStream's metadata libraries with dlopen (see
 * gstgpunetnvds.h), the way GStreamer 1.26's CUDA library opens DeepStream's buffer
 * pool: no link-time dependency, the symbols looked up one by one, a clear sentence
 * when anything is missing.  The version decides the NvBufSurfaceParams stride; the
 * element sizes the library's pools report are checked against it. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunet-nvds-abi.h"
#include "gstgpunetnvds.h"

/* The element sizes DeepStream 9.1's pools report (frame, object, classifier, label
 * info): the only release whose libraries were checked here. */
static const guint sizes_9_1[4] = { 232, 552, 64, 200 };

static const guint min_sizes[4] = {
  GPUNET_NVDS_MIN_FRAME_SIZE, GPUNET_NVDS_MIN_OBJ_SIZE,
  GPUNET_NVDS_MIN_CLASSIFIER_SIZE, GPUNET_NVDS_MIN_LABEL_SIZE
};

static const gchar *const size_names[4] = {
  "frame meta", "object meta", "classifier meta", "label info"
};

guint
gst_gpunet_nvds_layout (const gchar * version, const guint sizes[4],
    gchar ** what, gchar ** why)
{
  gchar *s = g_strdup_printf ("element sizes %u/%u/%u/%u (frame/object/"
      "classifier/label)", sizes[0], sizes[1], sizes[2], sizes[3]);
  guint major = 0, minor = 0, stride = 0, i;

  *why = NULL;
  *what = g_strdup_printf ("DeepStream %s, %s", version ? version : "(version "
      "unknown)", s);
  for (i = 0; i < 4; i++)
    if (sizes[i] < min_sizes[i]) {
      *why = g_strdup_printf ("the DeepStream library's %s elements are %u bytes, "
          "fewer than the %u this element reads (%s): not a DeepStream 6.1-9.x "
          "library", size_names[i], sizes[i], min_sizes[i], *what);
      g_free (s);
      return 0;
    }
  if (version != NULL && sscanf (version, "%u.%u", &major, &minor) == 2) {
    if ((major == 6 && minor >= 1) || major == 7)
      stride = GPUNET_NVBUF_PARAMS_STRIDE_V6;
    else if (major == 8 || major == 9)
      stride = GPUNET_NVBUF_PARAMS_STRIDE_V8;
    if (stride == 0)
      *why = g_strdup_printf ("DeepStream %s is not a version whose NvBufSurface "
          "layout this element knows (6.1-7.1: 384-byte surfaces, 8.0-9.x: 416); "
          "%s", version, s);
    else if (major == 9 && memcmp (sizes, sizes_9_1, sizeof sizes_9_1) != 0) {
      *why = g_strdup_printf ("the libraries say DeepStream %s, but report %s, "
          "not 9.1's %u/%u/%u/%u: refusing a layout that may not be the one "
          "declared", version, s, sizes_9_1[0], sizes_9_1[1], sizes_9_1[2],
          sizes_9_1[3]);
      stride = 0;
    }
  } else if (memcmp (sizes, sizes_9_1, sizeof sizes_9_1) == 0) {
    /* no version file (the PyPI wheel): the 9.1 pools' sizes say 8.0+ */
    stride = GPUNET_NVBUF_PARAMS_STRIDE_V8;
    g_free (*what);
    *what = g_strdup_printf ("DeepStream 9.x by its %s (no version file)", s);
  } else {
    *why = g_strdup_printf ("cannot tell the DeepStream version: no 'version' "
        "file beside the libraries, and their %s are not 9.1's %u/%u/%u/%u",
        s, sizes_9_1[0], sizes_9_1[1], sizes_9_1[2], sizes_9_1[3]);
  }
  g_free (s);
  return stride;
}

/* "X.Y" from the install's `version` file ("Version: 9.1") beside lib/, or NULL. */
static gchar *
read_version (const gchar * dir)
{
  gchar *parent = g_path_get_dirname (dir), *path, *text = NULL, *v = NULL, *p;

  path = g_build_filename (parent, "version", NULL);
  if (g_file_get_contents (path, &text, NULL, NULL)
      && (p = strstr (text, "Version:")) != NULL) {
    p += strlen ("Version:");
    while (*p == ' ' || *p == '\t')
      p++;
    v = g_strndup (p, strcspn (p, " \t\r\n"));
  }
  g_free (text);
  g_free (path);
  g_free (parent);
  return v;
}

#define SYM(field, name) \
  if ((*(gpointer *) &n->field = dlsym (gst_meta, name)) == NULL) { \
    missing = name; goto fail; }

/* Opens the two libraries of `dir`; NULL and *why when it cannot. */
static GstGpunetNvds *
open_dir (const gchar * dir, gchar ** why)
{
  gchar *meta_path = g_build_filename (dir, "libnvds_meta.so", NULL);
  gchar *gst_path = g_build_filename (dir, "libnvdsgst_meta.so", NULL);
  gpointer meta = NULL, gst_meta = NULL, batch;
  GstGpunetNvds *n = g_new0 (GstGpunetNvds, 1);
  const gchar *missing = NULL;
  gchar *version, *why_layout = NULL;

  *why = NULL;
  if (!g_file_test (meta_path, G_FILE_TEST_EXISTS)
      || !g_file_test (gst_path, G_FILE_TEST_EXISTS)) {
    *why = g_strdup_printf ("no libnvds_meta.so and libnvdsgst_meta.so in '%s'",
        dir);
    goto out;
  }
  /* libnvdsgst_meta needs libnvds_meta: the same directory's, loaded first */
  if ((meta = dlopen (meta_path, RTLD_NOW | RTLD_GLOBAL)) == NULL
      || (gst_meta = dlopen (gst_path, RTLD_NOW | RTLD_GLOBAL)) == NULL) {
    *why = g_strdup_printf ("cannot load DeepStream's metadata libraries from "
        "'%s': %s", dir, dlerror ());
    goto out;
  }
  SYM (get_batch_meta, "gst_buffer_get_nvds_batch_meta");
  SYM (acquire_lock, "nvds_acquire_meta_lock");
  SYM (release_lock, "nvds_release_meta_lock");
  SYM (acquire_obj, "nvds_acquire_obj_meta_from_pool");
  SYM (add_obj_to_frame, "nvds_add_obj_meta_to_frame");
  SYM (acquire_classifier, "nvds_acquire_classifier_meta_from_pool");
  SYM (add_classifier_to_obj, "nvds_add_classifier_meta_to_object");
  SYM (acquire_label, "nvds_acquire_label_info_meta_from_pool");
  SYM (add_label_to_classifier, "nvds_add_label_info_meta_to_classifier");
  SYM (create_batch_meta, "nvds_create_batch_meta");
  SYM (destroy_batch_meta, "nvds_destroy_batch_meta");
  {
    GType (*api_type) (void);

    /* registers the meta API (and the tag gst_buffer_get_nvds_batch_meta looks
     * for) before a buffer without NvDs meta is asked */
    if ((*(gpointer *) &api_type = dlsym (gst_meta, "nvds_meta_api_get_type"))
        == NULL) {
      missing = "nvds_meta_api_get_type";
      goto fail;
    }
    api_type ();
  }

  /* the sizes the library's own pools use */
  batch = n->create_batch_meta (1);
  if (batch == NULL) {
    *why = g_strdup_printf ("DeepStream's nvds_create_batch_meta failed ('%s')",
        dir);
    goto out;
  }
  {
    GpunetNvDsBatchMeta *b = batch;
    GpunetNvDsMetaPool *pools[4] = { b->frame_meta_pool, b->obj_meta_pool,
      b->classifier_meta_pool, b->label_info_meta_pool
    };
    const gint types[4] = { GPUNET_NVDS_FRAME_META, GPUNET_NVDS_OBJ_META,
      GPUNET_NVDS_CLASSIFIER_META, GPUNET_NVDS_LABEL_INFO_META
    };
    guint i;

    for (i = 0; i < 4; i++) {
      if (pools[i] == NULL || pools[i]->meta_type != types[i]) {
        *why = g_strdup_printf ("the DeepStream library in '%s' has a batch meta "
            "whose %s pool is not where DeepStream 6.1-9.x keep it: an unknown "
            "version", dir, size_names[i]);
        n->destroy_batch_meta (batch);
        goto out;
      }
      n->sizes[i] = pools[i]->element_size;
    }
  }
  n->destroy_batch_meta (batch);
  version = read_version (dir);
  n->surface_stride = gst_gpunet_nvds_layout (version, n->sizes, &n->version,
      &why_layout);
  g_free (version);
  if (n->surface_stride == 0) {
    *why = g_strdup_printf ("%s (libraries in '%s')", why_layout, dir);
    g_free (why_layout);
    goto out;
  }
  n->dir = g_strdup (dir);
  g_free (meta_path);
  g_free (gst_path);
  return n;

fail:
  *why = g_strdup_printf ("DeepStream's library in '%s' has no %s", dir, missing);
out:
  /* never dlclose: a library GStreamer has registered a meta from must stay */
  g_free (meta_path);
  g_free (gst_path);
  g_free (n->version);
  g_free (n);
  return NULL;
}

#undef SYM

/* dir (or "" for the search) -> GstGpunetNvds, or the sentence why not (as a string
 * with a leading '!') */
static GHashTable *opened;
static GMutex opened_lock;

static const GstGpunetNvds *
open_cached (const gchar * dir, gchar ** why)
{
  gpointer v;
  GstGpunetNvds *n;

  if (opened == NULL)
    opened = g_hash_table_new (g_str_hash, g_str_equal);
  if ((v = g_hash_table_lookup (opened, dir)) != NULL) {
    if (*(const gchar *) v == '!') {
      *why = g_strdup ((const gchar *) v + 1);
      return NULL;
    }
    return v;
  }
  n = open_dir (dir, why);
  g_hash_table_insert (opened, g_strdup (dir), n ? (gpointer) n :
      (gpointer) g_strconcat ("!", *why, NULL));
  return n;
}

const GstGpunetNvds *
gst_gpunet_nvds_open (const gchar * dir, gchar ** why)
{
  const GstGpunetNvds *n = NULL;
  GString *all;
  gchar **dirs;
  guint i;

  *why = NULL;
  g_mutex_lock (&opened_lock);
  if (dir != NULL && *dir != '\0') {
    n = open_cached (dir, why);
    g_mutex_unlock (&opened_lock);
    if (n == NULL) {
      gchar *w = *why;

      *why = g_strdup_printf ("nvds-lib-dir: %s", w);
      g_free (w);
    }
    return n;
  }
  /* the user's LD_LIBRARY_PATH first, then the standard install */
  all = g_string_new (NULL);
  dirs = g_strsplit (g_getenv ("LD_LIBRARY_PATH") ? g_getenv ("LD_LIBRARY_PATH")
      : "", ":", -1);
  for (i = 0; n == NULL && dirs[i] != NULL; i++) {
    gchar *w = NULL, *p;

    if (*dirs[i] == '\0')
      continue;
    p = g_build_filename (dirs[i], "libnvds_meta.so", NULL);
    /* a directory without the library says nothing; one with it says why not */
    if (g_file_test (p, G_FILE_TEST_EXISTS)) {
      n = open_cached (dirs[i], &w);
      if (n == NULL)
        g_string_append_printf (all, "%s; ", w);
    }
    g_free (p);
    g_free (w);
  }
  g_strfreev (dirs);
  if (n == NULL) {
    gchar *w = NULL;

    n = open_cached (GST_GPUNET_NVDS_STD_DIR, &w);
    if (n == NULL)
      g_string_append (all, w);
    g_free (w);
  }
  g_mutex_unlock (&opened_lock);
  if (n == NULL)
    *why = g_strdup_printf ("DeepStream's metadata libraries were not loaded: "
        "%s (searched LD_LIBRARY_PATH and " GST_GPUNET_NVDS_STD_DIR "; set "
        "nvds-lib-dir to the directory holding libnvds_meta.so)", all->str);
  g_string_free (all, TRUE);
  return n;
}
