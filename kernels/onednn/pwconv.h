/* pwconv.h: our own 1x1 (pointwise) convolution for the fast CPU path, on nChw16c
 * activations with AVX-512F:
 *   out = act(W in + bias) (+ out, the residual already in dst)
 * as a register-blocked GEMM: 6 pixels x 64 output channels (24 vector accumulators) per
 * call of the micro-kernel, each input scalar broadcast once for 4 weight vectors, the
 * bias in the accumulators from the start.  The work (images x output-channel chunks x
 * blocks of 6 pixels) is split into one contiguous range per thread, in an order chosen
 * at plan time by what streams: weights split between the threads where they are large,
 * pixels where they are small (pwconv.c).  oneDNN 2.6's jit_1x1 kernel runs GPUNet's 1x1
 * convolutions at 0.90-0.94 of the FMA peak; this one at 0.95-0.99 (docs/performance.md).
 * Where the channel counts are large, one level of Strassen's algorithm does 7 half-size
 * products instead of 8 (7/8 of the multiply-adds, 7/4 of the weight bytes): GPUNet-2's
 * 832 <-> 1664 layers at 12x12 run in 0.91 of the plain kernel's time. */
#ifndef GPUNET_PWCONV_H
#define GPUNET_PWCONV_H

#include <stddef.h>

typedef struct gpunet_pw gpunet_pw;

/* 1 when this CPU can run it on blk-channel blocks: blk 16 (nChw16c) with AVX-512F.
 * (With AVX2 a 6 x 64 block does not fit the 16 vector registers; oneDNN keeps those.) */
int gpunet_pw_available (int blk);

/* Whether a plan may use one level of Strassen's algorithm (7/8 of the multiply-adds,
 * pwconv.c): OFF never, AUTO where the plan rule expects it to be faster, FORCE wherever
 * the shape allows it (tests, benchmarks). */
enum { GPUNET_PW_STRASSEN_OFF, GPUNET_PW_STRASSEN_AUTO, GPUNET_PW_STRASSEN_FORCE };

/* Plans out = act(weight in + bias) for hw pixels: weight is cout x cin (plain), bias may
 * be NULL, cp / ocp the padded (multiple of 16) channel counts of the blocked input and
 * output, act a GPUNET_EPI_* value, residual 1 when the runs will add a residual (then
 * Strassen is only used without an activation), strassen a GPUNET_PW_STRASSEN_* value
 * (Strassen never where cout < ocp: it would leave rounding residue in padding lanes).
 * NULL when out of memory or the arguments are invalid. */
gpunet_pw *gpunet_pw_new (const float *weight, const float *bias, int cin, int cout, int cp,
    int ocp, long hw, int act, int residual, int strassen);

/* 1 when each thread takes a contiguous range of pixels (all output channels of them):
 * the pixel-major order, not Strassen. */
int gpunet_pw_splits_pixels (const gpunet_pw *p);

/* 1 when the plan runs one level of Strassen. */
int gpunet_pw_is_strassen (const gpunet_pw *p);

/* Floats of scratch gpunet_pw_run needs (any batch, any thread count); 0 without Strassen. */
size_t gpunet_pw_scratch_floats (const gpunet_pw *p);

/* n images; with residual_in_dst (only if planned with residual), out already holds the
 * residual, added after the activation.  Padding lanes of out are written as zeros (given
 * zero padding lanes in a residual).  in and out must not overlap.  scratch: 64-byte
 * aligned, gpunet_pw_scratch_floats of them (NULL when that is 0). */
void gpunet_pw_run (const gpunet_pw *p, const float *in, float *out, int n,
    int residual_in_dst, float *scratch, int nt);

void gpunet_pw_free (gpunet_pw *p);

#endif
