/* gpunet-plugin-find.h: how the GStreamer tools find the gpunet plugin without
 * environment variables. A tool run from the build tree it was built in loads that
 * tree's plugin first (so a fresh clone works as the README says); an installed
 * tool falls back to the directory `meson install` put the plugin in. */
#ifndef GPUNET_PLUGIN_FIND_H
#define GPUNET_PLUGIN_FIND_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gst/gst.h>

/* TRUE when this executable lives in `build_tools_dir` (the build tree's tools/). */
static inline gboolean
gpunet_running_from_build_tree (const gchar * build_tools_dir)
{
  gchar *exe = g_file_read_link ("/proc/self/exe", NULL), *dir, *a, *b;
  gboolean same = FALSE;

  if (exe == NULL || build_tools_dir == NULL)
    goto out;
  dir = g_path_get_dirname (exe);
  a = realpath (dir, NULL);
  b = realpath (build_tools_dir, NULL);
  same = a && b && strcmp (a, b) == 0;
  free (a);
  free (b);
  g_free (dir);
out:
  g_free (exe);
  return same;
}

/* Makes `gpunetclassify` available after gst_init(). Order: `explicit_dir` (a
 * --plugin-path option) when given; else the build tree's plugin when this tool
 * runs from that tree (it replaces an installed copy of the same plugin); else
 * whatever the registry already knows (GST_PLUGIN_PATH, the system directories);
 * else `installed_dir`. Returns TRUE when the element can be made. */
static inline gboolean
gpunet_plugin_find (const gchar * explicit_dir, const gchar * build_tools_dir,
    const gchar * build_plugin_file, const gchar * installed_dir)
{
  GstRegistry *reg = gst_registry_get ();
  GstElementFactory *f;

  if (explicit_dir) {
    gst_registry_scan_path (reg, explicit_dir);
  } else if (build_plugin_file && gpunet_running_from_build_tree (build_tools_dir)
      && g_file_test (build_plugin_file, G_FILE_TEST_IS_REGULAR)) {
    GstPlugin *p = gst_plugin_load_file (build_plugin_file, NULL);
    if (p)
      gst_object_unref (p);
  }
  f = gst_element_factory_find ("gpunetclassify");
  if (f == NULL && installed_dir) {
    gst_registry_scan_path (reg, installed_dir);
    f = gst_element_factory_find ("gpunetclassify");
  }
  if (f)
    gst_object_unref (f);
  return f != NULL;
}

/* The locations meson passes to the tools (tools/meson.build); NULL without them. */
#ifndef GPUNET_BUILD_TOOLS_DIR
#define GPUNET_BUILD_TOOLS_DIR NULL
#define GPUNET_BUILD_PLUGIN_FILE NULL
#endif
#ifndef GPUNET_PLUGIN_DIR
#define GPUNET_PLUGIN_DIR NULL
#endif

/* gpunet_plugin_find with the locations this tool was built with. */
static inline gboolean
gpunet_plugin_find_built (const gchar * explicit_dir)
{
  return gpunet_plugin_find (explicit_dir, GPUNET_BUILD_TOOLS_DIR,
      GPUNET_BUILD_PLUGIN_FILE, GPUNET_PLUGIN_DIR);
}

#endif
