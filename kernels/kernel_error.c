/* kernel_error.c: the error-sentence helpers of kernel_error.h. */
#include "kernel_error.h"

#include <stdio.h>
#include <stdlib.h>

char *
gpunet_vformat (const char *fmt, va_list ap)
{
  va_list ap2;
  va_copy (ap2, ap);
  int n = vsnprintf (NULL, 0, fmt, ap2);
  va_end (ap2);
  if (n < 0)
    return NULL;
  char *s = malloc ((size_t) n + 1);
  if (s)
    vsnprintf (s, (size_t) n + 1, fmt, ap);
  return s;
}

char *
gpunet_format (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *s = gpunet_vformat (fmt, ap);
  va_end (ap);
  return s;
}

gpunet_status
gpunet_fail (char **error_text, gpunet_status status, const char *fmt, ...)
{
  if (!error_text)
    return status;
  va_list ap;
  va_start (ap, fmt);
  char *s = gpunet_vformat (fmt, ap);
  va_end (ap);
  free (*error_text);
  *error_text = s;
  return status;
}
