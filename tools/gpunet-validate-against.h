/* gpunet-validate-against.h: gpunet-validate --against fp32: how far a session in another
 * precision moves the logits and the top-k of the exact f32 run over a folder of photos. */
#ifndef GPUNET_VALIDATE_AGAINST_H
#define GPUNET_VALIDATE_AGAINST_H

#include "gpunet.h"

/* Runs every image of `folder` (its files with an image extension, sorted by name; at
 * most `limit` of them when limit > 0) through an f32 session and one of `precision`
 * (both from `params`, on `model`) and prints one summary line: images, top-1 and top-5
 * agreement, and the mean and max absolute logit difference relative to the largest f32
 * logit of the image.  Returns the exit status: 0 done, 1 no image could be classified,
 * 2 setup failed (the reason printed as one sentence). */
int gpunet_validate_against (gpunet_model *model, const gpunet_session_params *params,
    gpunet_precision precision, const char *folder, int limit, int quiet);

#endif
