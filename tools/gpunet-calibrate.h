/* gpunet-calibrate.h: gpunet-convert --calibrate DIR (gpunet-calibrate.c): the int8
 * scales file of a model from a folder of photos. */
#ifndef GPUNET_CALIBRATE_H
#define GPUNET_CALIBRATE_H

#include <stdint.h>

#include "gpunet.h"

/* Calibrates the model `arch` (weights from `ckpt`, or seeded random ones when NULL) on
 * up to `limit` (0: all) photos of `dir`, decoded and preprocessed as the element does
 * (centre crop), and writes the scales to `out`.  Returns the exit status (0, 1 for a
 * failure said on stderr in one sentence, nothing written). */
int gpunet_convert_calibrate (const char *arch, const char *ckpt, uint64_t seed,
    const char *dir, const char *out, gpunet_calib_method method, float percentile,
    int limit);

#endif
