/* arch_types.h: the layer kinds and activations of a GPUNet architecture, below both
 * arch.h (the validated architecture) and zoo.h (the built-in table arch.c reads), so
 * that neither includes the other. */
#ifndef GPUNET_ARCH_TYPES_H
#define GPUNET_ARCH_TYPES_H

typedef enum { GPUNET_ACT_NONE = 0, GPUNET_ACT_RELU, GPUNET_ACT_SWISH } gpunet_act;

typedef enum {
  GPUNET_LAYER_HEAD, GPUNET_LAYER_HEAD_LARGE, GPUNET_LAYER_CONV,
  GPUNET_LAYER_FUSED_IRB, GPUNET_LAYER_IRB, GPUNET_LAYER_TAIL
} gpunet_layer_type;

#endif
