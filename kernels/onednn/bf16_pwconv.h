/* bf16_pwconv.h: our 1x1 convolution for bf16 sessions, on nChw16c activations whose input
 * is bf16 (the output bf16 or f32), with AVX-512 BF16's vdpbf16ps: bf16 products of
 * input-channel pairs accumulated in f32, the bias, the activation and the residual sum
 * in f32, the output rounded to bf16 once where the tensor is bf16 (the arithmetic of
 * oneDNN's bf16 convolutions, in another order of the sums).  oneDNN 2.6's jit_bf16_1x1
 * kernel ran the 7x7 planes of GPUNet-P0/P1's last stage (several megabytes of weights
 * each) at 0.7-0.8 of the vdpbf16ps peak; this one keeps 6 pixels x 64 output channels of
 * sums in registers and streams each chunk's weights once, segment by segment.  Which
 * layers take it: cpu option bf16pw (pwb_plan.c). */
#ifndef GPUNET_BF16_PWCONV_H
#define GPUNET_BF16_PWCONV_H

#include <stdint.h>

typedef struct gpunet_pwb gpunet_pwb;

/* 1 when this CPU runs the kernel (AVX-512 F, BW, VL and BF16), else 0. */
int gpunet_pwb_available (void);

/* Plans out = act(in x weight + bias) for a 1x1 stride-1 convolution of cin -> cout
 * channels (weight cout x cin, plain f32, rounded to bf16 here; bias may be NULL) over hw
 * pixels, between nChw16c tensors padded to cp and ocp channels.  act: GPUNET_EPI_*.
 * nt: the threads it will run on (the work is shaped for them; any count works).
 * The output is bf16 unless gpunet_pwb_set_out_f32.  NULL when out of memory or the CPU
 * lacks the instructions. */
gpunet_pwb *gpunet_pwb_new (const float *weight, const float *bias, int cin, int cout, int cp,
    int ocp, long hw, int act, int nt);

/* The output (and the residual already in it) stored as f32 instead of bf16. */
void gpunet_pwb_set_out_f32 (gpunet_pwb *p, int out_f32);

/* Runs n images: in is bf16 nChw16c (cp channels), out nChw16c (ocp channels, bf16 or
 * f32); with residual_in_dst the residual is already in out and is added after the
 * activation.  Padding channels of out are written as zeros (plus the residual's, zero).
 * in and out must not overlap. */
void gpunet_pwb_run (const gpunet_pwb *p, const uint16_t *in, void *out, int n,
    int residual_in_dst, int nt);

void gpunet_pwb_free (gpunet_pwb *p);

#endif
