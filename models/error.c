/* error.c: status names and gpunet_error_prefix (gpunet_fail is in kernels/). */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
gpunet_status_string (gpunet_status status)
{
  switch (status) {
    case GPUNET_OK: return "success";
    case GPUNET_ERR_INVALID_ARGUMENT: return "invalid argument";
    case GPUNET_ERR_IO: return "file cannot be read";
    case GPUNET_ERR_FORMAT: return "corrupt or unsupported file";
    case GPUNET_ERR_ARCH: return "invalid architecture";
    case GPUNET_ERR_WEIGHTS: return "checkpoint does not match the architecture";
    case GPUNET_ERR_NO_MEMORY: return "out of memory";
    case GPUNET_ERR_BACKEND_UNAVAILABLE: return "backend unavailable";
    case GPUNET_ERR_BACKEND: return "backend failure";
    case GPUNET_ERR_UNSUPPORTED: return "unsupported";
    case GPUNET_ERR_CANCELLED: return "cancelled";
  }
  return "unknown status";
}

void
gpunet_error_prefix (char **error_text, const char *fmt, ...)
{
  if (!error_text || !*error_text)
    return;
  va_list ap;
  va_start (ap, fmt);
  char *p = gpunet_vformat (fmt, ap);
  va_end (ap);
  if (!p)
    return;
  size_t lp = strlen (p), le = strlen (*error_text);
  char *s = malloc (lp + 2 + le + 1);
  if (s) {
    memcpy (s, p, lp);
    memcpy (s + lp, ": ", 2);
    memcpy (s + lp + 2, *error_text, le + 1);
    free (*error_text);
    *error_text = s;
  }
  free (p);
}
