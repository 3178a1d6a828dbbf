/* gpunet-tool-args.h: the checks of option pairs that the engine tools share, made
 * before anything starts (no model loaded, no file read), so that an option that
 * would mean nothing is refused rather than ignored.  Plain C over gpunet.h,
 * header only (gpunet-run, gpunet-bench, gpunet-validate, gpunet-tag); also the
 * --precision words they share. */
#ifndef GPUNET_TOOL_ARGS_H
#define GPUNET_TOOL_ARGS_H

#include <stddef.h>
#include <string.h>

#include "gpunet.h"

/* The precision a --precision value names (auto, fp32, fp16, bf16, int8) into
 * *out: 1, or 0 for another word. */
static inline int
gpunet_tool_precision_parse (const char *name, gpunet_precision *out)
{
  static const struct { const char *name; gpunet_precision p; } names[] = {
    { "auto", GPUNET_PRECISION_AUTO }, { "fp32", GPUNET_PRECISION_FP32 },
    { "fp16", GPUNET_PRECISION_FP16 }, { "bf16", GPUNET_PRECISION_BF16 },
    { "int8", GPUNET_PRECISION_INT8 },
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (name && !strcmp (name, names[i].name)) {
      *out = names[i].p;
      return 1;
    }
  return 0;
}

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
