/* module_find.c: the search for a run-time backend module (module_find.h). */
#include "module_find.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel_error.h"

static const char anchor = 0;   /* an address inside the engine, for dladdr() */

/* The directory of the binary this code is linked into (the plugin or a tool), or NULL. */
static char *
own_dir (void)
{
  Dl_info info;
  char buf[PATH_MAX];
  const char *file = NULL;
  if (dladdr (&anchor, &info) && info.dli_fname && strchr (info.dli_fname, '/'))
    file = info.dli_fname;
  else {
    ssize_t n = readlink ("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
      return NULL;
    buf[n] = '\0';
    file = buf;
  }
  const char *slash = strrchr (file, '/');
  return gpunet_format ("%.*s", slash == file ? 1 : (int) (slash - file), file);
}

char *
gpunet_module_find (const char *name, const char *install_dir, const char *build_path,
    char **looked)
{
  char *candidates[3];
  int n = 0;
  char *dir = own_dir ();
  if (dir)
    candidates[n++] = gpunet_format ("%s/%s", dir, name);
  free (dir);
  if (install_dir)
    candidates[n++] = gpunet_format ("%s/%s", install_dir, name);
  if (build_path)
    candidates[n++] = gpunet_format ("%s", build_path);
  char *found = NULL, *list = NULL;
  for (int i = 0; i < n; i++) {
    if (!candidates[i])
      continue;
    if (!found && access (candidates[i], F_OK) == 0) {
      found = candidates[i];
      continue;
    }
    if (!found) {
      char *more = gpunet_format ("%s%s%s", list ? list : "", list ? ", " : "",
          candidates[i]);
      free (list);
      list = more;
    }
    free (candidates[i]);
  }
  if (found || !looked)
    free (list);
  else
    *looked = list ? list : gpunet_format ("nowhere");
  return found;
}
