/* backends.c: the public names of backend kinds (gpunet_backend_kind_name and _from_name),
 * read from the one list of backends in kernels/registry.c. */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "../kernels/registry.h"

const char *
gpunet_backend_kind_name (gpunet_backend_kind kind)
{
  int n;
  const gpunet_backend_entry *e = gpunet_backend_entries (&n);
  for (int i = 0; i < n; i++)
    if (e[i].kind == kind)
      return e[i].name;
  return NULL;
}

gpunet_status
gpunet_backend_kind_from_name (const char *name, gpunet_backend_kind *out, char **error_text)
{
  int n;
  const gpunet_backend_entry *e = gpunet_backend_entries (&n);
  for (int i = 0; name && out && i < n; i++)
    if (!strcmp (e[i].name, name)) {
      *out = e[i].kind;
      return GPUNET_OK;
    }
  char names[128] = "";
  for (int i = 0; i < n; i++) {
    size_t used = strlen (names);
    snprintf (names + used, sizeof names - used, "%s%s", i ? ", " : "", e[i].name);
  }
  return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
      "unknown backend '%s': use one of %s", name ? name : "(null)", names);
}
