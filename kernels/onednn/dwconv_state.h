/* dwconv_state.h: the planned state of our depthwise convolution (dwconv.h), shared by
 * its f32 code (dwconv.c) and its bf16-storage form (bf16_dwconv.c).  Private to
 * kernels/onednn. */
#ifndef GPUNET_DWCONV_STATE_H
#define GPUNET_DWCONV_STATE_H

#include <stddef.h>
#include <stdint.h>

/* Per-thread input buffer: whole planes up to this size (every GPUNet depthwise layer at
 * its model's resolution but the largest), else strips of output rows. */
#define DW_BUF_BUDGET (128 * 1024)

struct gpunet_dw {
  int c, cp, k, stride, pad, ih, iw, oh, ow, act, in_act;
  int vw;
  int cw;              /* buffer row: padded input columns the outputs read, (ow - 1) s + k */
  int strip_rows;      /* output rows per task */
  int strips;          /* tasks per channel block: ceil(oh / strip_rows) */
  size_t buf_floats;   /* per thread */
  size_t thread_stride;   /* floats between threads' buffers: buf_floats or more */
  float *w;            /* [cp / vw][k * k][vw], zero in padded channels */
  float *bias;         /* [cp], zero padded */
  int in_bf16, out_bf16;   /* bf16 activations (gpunet_dw_set_bf16): then run by
                            * gpunet_dw_run_bf16 */
  int in_nhwc;         /* int8 sessions (gpunet_dw_set_int8_io): the input is the nhwc f32
                        * output of the int8 convolution before (c channels a pixel),
                        * rounded to bf16 on the way in where in_bf16 says the tensor is */
  int out_q8, out_uns; /* ... the output quantised into the next int8 convolution's nhwc
                        * u8 (out_uns) or s8 input, x * out_inv rounded to even and
                        * saturated, after rounding to bf16 where out_bf16 says */
  float out_inv;
  struct {             /* the 1x1 expansion before this op, fused in
                        * (gpunet_dw_set_expansion); w NULL where none */
    void *w;           /* bf16 input: [cp / 16][cin_p / 2][16][2] bf16, per output channel
                        * block and pair of input channels each lane's two weights
                        * (vdpbf16ps); f32 input: [cp / 16][cin_p][16] f32 */
    float *bias;       /* [cp], zero padded */
    int cin, cin_p;    /* its input channels, padded to 16 */
    int gblk;          /* channel blocks of one task (its ring within XDW_RING_BUDGET) */
    int nch, nt;       /* ranges of output rows a plane is split into for nt threads */
    size_t ring_floats;   /* per thread: k rows of gblk blocks of cw vectors, and a zero
                           * row */
  } x;
};

/* Per-thread ring of expanded rows of the fused expansion (gpunet_dw_set_expansion): its
 * rows of all the task's channel blocks stay in the core's L2 between the expansion that
 * writes them and the depthwise rows that read them. */
#define XDW_RING_BUDGET (512 * 1024)

/* bf16_dwconv.c: gpunet_dw_run where the input or output is bf16 (AVX-512 BF16) */
void gpunet_dw_run_bf16 (const gpunet_dw *d, const float *in, float *out, int n,
    float *scratch, int nt);

#endif
