/* error.h: how engine code reports failures: a status plus a malloc()ed sentence.
 * gpunet_fail comes from the kernels' error header, shared by both layers. */
#ifndef GPUNET_ERROR_H
#define GPUNET_ERROR_H

#include "gpunet.h"
#include "kernel_error.h"

/* Prepends "prefix: " to an existing *error_text (used to add a file name). */
void gpunet_error_prefix (char **error_text, const char *fmt, ...) GPUNET_PRINTF (2, 3);

#endif
