/* error.h: how engine code reports failures: a status plus a malloc()ed sentence. */
#ifndef GPUNET_ERROR_H
#define GPUNET_ERROR_H

#include "gpunet.h"

#if defined(__GNUC__)
#define GPUNET_PRINTF(a, b) __attribute__ ((format (printf, a, b)))
#else
#define GPUNET_PRINTF(a, b)
#endif

/* Stores a formatted sentence in *error_text (replacing and freeing an earlier one;
 * error_text may be NULL) and returns `status`, so callers write
 * `return gpunet_fail (err, GPUNET_ERR_FORMAT, "...", ...);`. */
gpunet_status gpunet_fail (char **error_text, gpunet_status status, const char *fmt, ...)
    GPUNET_PRINTF (3, 4);

/* Prepends "prefix: " to an existing *error_text (used to add a file name). */
void gpunet_error_prefix (char **error_text, const char *fmt, ...) GPUNET_PRINTF (2, 3);

#endif
