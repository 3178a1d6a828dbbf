/* kernel_error.h: how kernels (and the engine above them) report a failure: a status of
 * gpunet-types.h plus a malloc()ed sentence in *error_text.  The kernels' own error header, so
 * nothing in kernels/ includes models/; models/error.h includes this one. */
#ifndef GPUNET_KERNEL_ERROR_H
#define GPUNET_KERNEL_ERROR_H

#include <stdarg.h>

#include "gpunet-types.h"

#if defined(__GNUC__)
#define GPUNET_PRINTF(a, b) __attribute__ ((format (printf, a, b)))
#else
#define GPUNET_PRINTF(a, b)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Stores a formatted sentence in *error_text (replacing and freeing an earlier one;
 * error_text may be NULL) and returns `status`, so callers write
 * `return gpunet_fail (err, GPUNET_ERR_FORMAT, "...", ...);`. */
gpunet_status gpunet_fail (char **error_text, gpunet_status status, const char *fmt, ...)
    GPUNET_PRINTF (3, 4);

/* A malloc()ed string formatted from fmt and ap, or NULL when out of memory. */
char *gpunet_vformat (const char *fmt, va_list ap);

/* The same from fmt and its arguments. */
char *gpunet_format (const char *fmt, ...) GPUNET_PRINTF (1, 2);

#ifdef __cplusplus
}
#endif

#endif
