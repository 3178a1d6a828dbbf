/* dwconv.h: our own depthwise convolution for the fast CPU path, on nChw16c (AVX-512F) or
 * nChw8c (AVX2 + FMA) activations, for the CPUs gpunet_wino_available() accepts:
 *   out = act(dwconv(in_act(in)) + bias)
 * in_act is the activation of the convolution that produced `in`, moved here when this
 * depthwise convolution is that tensor's only reader: each input element is activated once,
 * in the pass that copies a strip of the input plane into a zero-bordered buffer, instead of
 * by oneDNN's eltwise post-op (whose swish measured 2x slower than ours, simd_act.h). */
#ifndef GPUNET_DWCONV_H
#define GPUNET_DWCONV_H

#include <stddef.h>

#include "ops.h"

typedef struct gpunet_dw gpunet_dw;

/* Plans one depthwise convolution p over blk-channel blocks (16 or 8) with cp padded
 * channels; in_act is a GPUNET_EPI_* applied to the input first.  NULL when out of memory
 * or the arguments are invalid. */
gpunet_dw *gpunet_dw_new (const gpunet_dwconv2d_params *p, int in_act, int cp, int blk);

/* Floats of scratch gpunet_dw_run needs with nt threads: nt regions of the per-thread
 * size, or of the stride set by gpunet_dw_set_thread_stride if larger. */
size_t gpunet_dw_scratch_floats (const gpunet_dw *d, int nt);

/* Floats of scratch one thread uses (a multiple of 16). */
size_t gpunet_dw_thread_floats (const gpunet_dw *d);

/* Thread t's scratch starts at t x floats (a multiple of 16, at least
 * gpunet_dw_thread_floats): with every op of a session given the same stride, each
 * thread reuses its own scratch lines from op to op, which stay in its core's caches
 * instead of changing cores (docs/performance.md).  Call before the first run. */
void gpunet_dw_set_thread_stride (gpunet_dw *d, size_t floats);

/* bf16 sessions (16-channel blocks only): the input and/or the output are bf16 (the
 * pointers of gpunet_dw_run then point at uint16_t), the arithmetic stays f32: each input
 * element widened exactly, each output rounded to nearest even once (vcvtneps2bf16).
 * Needs AVX-512 BF16 when either is set.  Call before the first run. */
void gpunet_dw_set_bf16 (gpunet_dw *d, int in_bf16, int out_bf16);

/* int8 sessions on 16-channel blocks (needs AVX-512BW): the input read straight from the
 * nhwc f32 output of the int8 convolution before it (in_nhwc; `in` of gpunet_dw_run then
 * points at it), and/or the output written straight as the next int8 convolution's nhwc
 * u8/s8 input (out_q8: x * inv, rounded to even, saturated; `out` points at it).  The
 * values are those of the blocked path: where gpunet_dw_set_bf16 said the tensor is bf16,
 * they are rounded to bf16 first, as storing it would.  Call after gpunet_dw_set_bf16. */
void gpunet_dw_set_int8_io (gpunet_dw *d, int in_nhwc, int out_q8, int out_uns, float out_inv);

/* The 1x1 expansion pe (over cin_p padded input channels) that writes this op's input,
 * fused in: `in` of gpunet_dw_run is then the expansion's input, bf16 or f32 as
 * gpunet_dw_set_bf16 said this op's input is (call it first), whose rows are expanded
 * into a per-thread ring of k rows, from which the depthwise rows are computed: the
 * expanded tensor never goes to memory.  bf16: vdpbf16ps (f32 sums of bf16 products), the
 * bias, the rounding to bf16 the stored tensor would have had, in_act (AVX-512 BF16); f32:
 * one FMA an input channel, the bias, in_act (AVX-512 F, BW, VL).  16-channel blocks; pe
 * must be a dense 1x1 stride-1 convolution to this op's channels and plane.  1 on success,
 * 0 where it does not apply or memory ran out (the op then runs unfused).  The work is
 * split for nt threads (another count at run time splits it less evenly).  Call before the
 * thread stride is set (its ring counts in gpunet_dw_thread_floats). */
int gpunet_dw_set_expansion (gpunet_dw *d, const gpunet_conv2d_params *pe, int cin_p,
    int nt);

/* n images: out = act(dwconv(in_act(in)) + bias); padded channels of out are written 0. */
void gpunet_dw_run (const gpunet_dw *d, const float *in, float *out, int n, float *scratch,
    int nt);

void gpunet_dw_free (gpunet_dw *d);

#endif
