/* int8_layout.h: the two layout moves around each int8 convolution of the fast CPU
 * backend (oneDNN 2.6's int8 kernels read and write channels-last only, the network
 * between layers is blocked):
 *   - quantise: a blocked activation (nChw16c or nChw8c, f32 or bf16) into the
 *     convolution's nhwc u8/s8 input, q = saturate(round_even(x * inv));
 *   - unpack: the convolution's nhwc f32 output into the blocked output buffer (f32 or
 *     bf16, rounded to nearest even once), adding the residual the buffer already holds,
 *     the padded channels written 0.
 * The same arithmetic as oneDNN's reorders with an output scale (2.6) and a sum post-op:
 * one f32 multiply, clamping to the type's range before rounding, f32 add, one rounding
 * to bf16.  Each has a portable form (the definition, for the tests) and vector forms:
 * AVX-512 (16-channel blocks; AVX-512BW for the byte stores, AVX-512 BF16 to write bf16)
 * and AVX2 (8-channel blocks, f32).  Private to kernels/onednn. */
#ifndef GPUNET_INT8_LAYOUT_H
#define GPUNET_INT8_LAYOUT_H

#include <stdint.h>

/* Which form runs: GPUNET_I8L_AUTO picks the vector form the block and the CPU allow. */
enum { GPUNET_I8L_AUTO = 0, GPUNET_I8L_PORTABLE = 1 };

/* n images of c channels (cp padded, blocks of blk = 16 or 8) and hw pixels: src blocked
 * (bf16 when src_bf16, else f32) -> dst nhwc, u8 when uns, else s8. */
void gpunet_int8_quantize (const void *src, int src_bf16, int blk, int c, int cp, long hw,
    int n, float inv, int uns, void *dst, int form, int nt);

/* n images: src nhwc f32 (c channels) -> dst blocked (cp padded channels, blocks of blk;
 * bf16 when dst_bf16, else f32), dst += src where add (the residual already in dst). */
void gpunet_int8_unpack (const float *src, int c, int cp, long hw, int n, void *dst,
    int dst_bf16, int blk, int add, int form, int nt);

/* Whether the vector forms run here for this block and output type (tests). */
int gpunet_int8_layout_vector (int blk, int dst_bf16);

#endif
