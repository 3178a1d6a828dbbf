/* winograd.h: our own Winograd F(4x4, 3x3) and F(3x3, 3x3) convolutions for the fast CPU
 * path, on the nChw16c (AVX-512) or nChw8c (AVX2) activations of backend_onednn.c.  It
 * takes the dense 3x3 stride-1 convolutions that oneDNN 2.6 runs as direct convolutions
 * (its Winograd kernel turns down most GPUNet shapes): 36 multiplies per 4x4 output tile
 * instead of 144; and the 5x5 and 3x3
 * stride-2 ones, through their polyphase decomposition.
 *
 * Per block of tiles: input transform (B^T d B) of 6x6 input patches into
 * V[36][tiles][icp], 36 small GEMMs with the weights transformed at plan time
 * (U = G g G^T, stored U[36][icp][ocp]) for one group of output channels at a time (64
 * with AVX-512, 24 or 16 with AVX2), then the output transform (A^T m A) fused with bias,
 * activation and the residual add, written straight into the blocked output.  The blocks
 * are sized for V and M to fit the L2 cache, but hold at least 36 tiles (each block streams
 * all of U again); the (block, channel group) items are shared out among the threads by
 * work stealing (steal.h). */
#ifndef GPUNET_WINOGRAD_H
#define GPUNET_WINOGRAD_H

#include <stddef.h>

typedef struct gpunet_wino gpunet_wino;

/* 1 when this CPU can run the kernels on blk-channel blocks (16: nChw16c, needs AVX-512F;
 * 8: nChw8c, needs AVX2 and FMA), else 0. */
int gpunet_wino_available (int blk);

/* Plans one convolution (output tiles tile x tile: 4, or 3 for F(3x3, 3x3), which takes
 * 3x3 stride 1 only: 25 multiplies per 3x3 tile instead of 81, with half F(4x4)'s
 * largest transform coefficients, so it rounds less): weight is cout x cin x k x k
 * (plain), bias may be NULL; cp and
 * ocp are the padded (multiple of blk) channel counts of the blocked input and output,
 * blk 16 (nChw16c) or 8 (nChw8c; see gpunet_wino_available).
 * Takes k 3 with stride 1 or 2 and k 5 with stride 2, any pad; the input is ih x iw, the output
 * oh x ow (the usual (ih + 2 pad - k) / stride + 1).  act is a GPUNET_EPI_* value.
 * Returns NULL when out of memory or when the shape is not one it takes. */
gpunet_wino *gpunet_wino_new (const float *weight, const float *bias, int cin, int cout, int k,
    int stride, int pad, int cp, int ocp, int ih, int iw, int oh, int ow, int act, int blk,
    int tile);

/* Floats of scratch gpunet_wino_run needs with nt threads (any batch): nt regions of the
 * per-thread size, or of the stride set by gpunet_wino_set_thread_stride if larger. */
size_t gpunet_wino_scratch_floats (const gpunet_wino *p, int nt);

/* Floats of scratch one thread uses (a multiple of 16). */
size_t gpunet_wino_thread_floats (const gpunet_wino *p);

/* Thread t's scratch starts at t x floats (a multiple of 16, at least
 * gpunet_wino_thread_floats), as gpunet_dw_set_thread_stride.  Call before the first
 * run. */
void gpunet_wino_set_thread_stride (gpunet_wino *p, size_t floats);

/* Whether the input, and the output (with the residual already in it), are stored as bf16
 * (16-bit, the upper half of an f32) rather than f32: a bf16 input is widened exactly, the
 * output rounded to nearest even once, as vcvtneps2bf16 does; all arithmetic stays f32.
 * blk 16 plans only (no BF16 instruction is used, AVX-512F does it); returns -1 for an
 * 8-channel plan asked for bf16, else 0.  Call before the first run. */
int gpunet_wino_set_bf16 (gpunet_wino *p, int in_bf, int out_bf);

/* out = act(conv(in) + bias) (+ out, the residual already in dst, when residual_in_dst)
 * for n images; in and out are blocked as planned, with cp / ocp channels, f32 or bf16
 * elements (gpunet_wino_set_bf16).  Padding lanes of out are written as zeros.  in and out
 * must not overlap.  scratch: 64-byte aligned. */
void gpunet_wino_run (const gpunet_wino *p, const void *in, void *out, int n,
    int residual_in_dst, float *scratch, int nt);

void gpunet_wino_free (gpunet_wino *p);

#endif
