/* gpunet-tool-args.h: the checks of option pairs that the engine tools share, made
 * before anything starts (no model loaded, no file read), so that an option that
 * would mean nothing is refused rather than ignored.  Plain C over gpunet.h,
 * header only (gpunet-run, gpunet-bench, gpunet-validate, gpunet-tag). */
#ifndef GPUNET_TOOL_ARGS_H
#define GPUNET_TOOL_ARGS_H

#include <stddef.h>

#include "gpunet.h"

/* NULL when --scales (`scales`, NULL when not given) fits `precision`, else the
 * sentence that says why not: the scales file is read only by precision=int8, and
 * a user who forgot --precision int8 would measure another precision believing it
 * int8 (auto never means int8). */
static inline const char *
gpunet_tool_scales_refusal (gpunet_precision precision, const char *scales)
{
  if (scales == NULL || precision == GPUNET_PRECISION_INT8)
    return NULL;
  return "--scales is read only with --precision int8, which this run does not "
      "ask for: add --precision int8 to run int8, or drop --scales";
}

#endif
