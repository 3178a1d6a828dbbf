/* activation.h: activation and epilogue maths (act(x + bias) + residual, sigmoid) shared
 * by every backend, so the CUDA epilogues compute exactly what the CPU oracle does. */
#ifndef GPUNET_ACTIVATION_H
#define GPUNET_ACTIVATION_H

#include <math.h>

#include "hd.h"

/* Matches gpunet_act in models/arch.h. */
enum { GPUNET_EPI_NONE = 0, GPUNET_EPI_RELU = 1, GPUNET_EPI_SWISH = 2 };

GPUNET_HD float
gpunet_sigmoid (float x)
{
  return 1.0f / (1.0f + expf (-x));
}

GPUNET_HD float
gpunet_activate (float x, int act)
{
  if (act == GPUNET_EPI_RELU)
    return x > 0.0f ? x : 0.0f;
  if (act == GPUNET_EPI_SWISH)
    return x * gpunet_sigmoid (x);
  return x;
}

/* The convolution epilogue: activation of (accumulator + bias), then the residual. */
GPUNET_HD float
gpunet_epilogue (float acc, float bias, int act, float residual)
{
  return gpunet_activate (acc + bias, act) + residual;
}

#endif
