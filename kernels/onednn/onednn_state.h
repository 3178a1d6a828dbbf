/* onednn_state.h: the fast CPU backend's planned state, shared by its two halves:
 * backend_onednn.c (kernel selection, memory plan, the run loop) and onednn_conv.c (the
 * oneDNN convolution primitives).  Private to kernels/onednn. */
#ifndef GPUNET_ONEDNN_STATE_H
#define GPUNET_ONEDNN_STATE_H

#include <stdint.h>

#include <oneapi/dnnl/dnnl.h>

#include "backend.h"
#include "onednn_impl.h"
#include "bf16_pwconv.h"
#include "dwconv.h"
#include "pwconv.h"
#include "se.h"
#include "winograd.h"

/* One set of reordered weights of an op, in the layout some convolution pd asked for. */
typedef struct weights_variant {
  dnnl_memory_t mem;
  float *buf;   /* its memory, ours (gpunet_blk_alloc: huge pages for the large ones) */
  struct weights_variant *next;
} weights_variant;

/* One oneDNN convolution planned for one batch size. */
typedef struct {
  dnnl_primitive_t prim;
  dnnl_memory_t src, wei, bias, dst, scratch;
  dnnl_primitive_t to_bf16;     /* bf16 and int8 sessions: the f32 input (src_f32) to
                                 * src's bf16, or u8/s8 (scaled) */
  dnnl_memory_t src_f32;
  void *src_bf16;               /* src's buffer then (ours) */
  float *bias_q;                /* int8: the bias as the int8 primitive adds it (ours) */
  float *q_scales;              /* int8 on oneDNN 3.x: [0] the input's scale, [1 ..] each
                                 * output channel's weight scale (ours) */
  dnnl_memory_t sc_src, sc_wei; /* ... as memories, given at execution */
  dnnl_primitive_t from_nhwc;   /* int8: dst (nhwc f32, in the shared s->q_dst) to
                                 * dst_blk, the blocked output buffer, adding the
                                 * residual there */
  dnnl_memory_t dst_blk;
  struct {                      /* int8: our layout moves instead of to_bf16 and
                                 * from_nhwc (int8_layout.c; cpu option int8layout) */
    int own, form;
    int in_bf16, in_blk, cin, cin_p, uns;
    int out_bf16, out_blk, cout, cout_p, add, n;
    long in_hw, out_hw;
    float inv;
  } i8;
} fast_step;

/* The oneDNN primitives of one batch size: steps[i] for the ops whose impl is
 * GPUNET_ONEDNN_CONV, empty for the others. */
typedef struct {
  int n;
  fast_step *steps;
} fast_plan;

typedef struct {
  int blk, cp;    /* layout: the session's block (nChw16c or nChw8c) or 1 (plain NCHW);
                   * padded channels */
  int buf;        /* activation buffer, -1 for the graph input */
  int bf;         /* stored as bf16 (bf16 sessions: gpunet_onednn_bf16_tensors) */
} fast_tensor;

/* One planned op: what runs it and how. */
typedef struct {
  gpunet_onednn_impl impl;
  const gpunet_op *op;
  int copy_residual;           /* the residual copied into the output buffer first */
  int q8_out_nhwc;             /* int8 convolution: its nhwc f32 output is read where it
                                * is by the depthwise op after it (no move back) */
  int q8_in_nhwc;              /* int8 convolution: its nhwc u8/s8 input written by the
                                * depthwise op before it (no quantising move) */
  int act;                     /* the activation the op's kernel applies: its own, or none
                                * where a depthwise op reading its output applies it
                                * (defer_activations) */
  int in_act;                  /* depthwise: the activation it applies to its input */
  union {
    gpunet_wino *wino;
    gpunet_dw *dw;
    gpunet_pw *pw;
    gpunet_se *se;
    gpunet_pwb *pwb;
  } k;                         /* our kernel's plan, by impl */
  weights_variant *weights;    /* GPUNET_ONEDNN_CONV: the reordered weights */
} fast_op;

typedef struct {
  const gpunet_graph *g;
  gpunet_cpu_options opt;      /* as planned (gpunet_plan_params.cpu) */
  int max_batch, nt;
  int blk;                     /* channel block between layers: 16 or 8 (choose_block) */
  int bf16;                    /* precision=bf16 (or int8's bf16 rest): the dense
                                * convolutions in bf16 with f32 accumulation */
  int bf16_wino;               /* precision=bf16 with winograd=auto or own: our f32
                                * Winograd, bf16 in and out, on the stride-1 3x3 layers */
  gpunet_int8_input *int8;     /* precision=int8: per op (a copy of the plan params'),
                                * else NULL */
  void *q_src, *q_dst;         /* int8: the quantised input and the nhwc f32 output of
                                * every int8 convolution (one runs at a time) */
  size_t q_src_bytes, q_dst_bytes;
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  fast_tensor *t;              /* per tensor */
  fast_op *ops;                /* per graph op */
  int n_bufs;
  float **bufs;
  void *scratchpad;            /* shared by every primitive (one runs at a time) */
  size_t scratchpad_bytes;
  float *se_scratch, *trace_buf;
  fast_plan **plans;           /* [1..max_batch], planned lazily beyond 1 and max_batch */
  float *sums_scratch;         /* the Strassen 1x1 ops' sums of input quadrants */
  float *own_scratch;          /* shared by our Winograd and depthwise ops (one at a time) */
  double *profile;
} fast_state;

/* onednn_conv.c: plans the oneDNN convolutions (impl GPUNET_ONEDNN_CONV) for batch n into
 * s->plans[n] and points every plan's scratchpad at one buffer large enough for all. */
gpunet_status gpunet_onednn_plan_batch (fast_state *s, int n, char **err);

/* Runs op i's oneDNN convolution of plan p on input (the graph input, used where op i
 * reads it). */
gpunet_status gpunet_onednn_run_conv (fast_state *s, const fast_plan *p, int i,
    const float *input, char **err);

/* Frees s->plans and every op's weights variants. */
void gpunet_onednn_free_convs (fast_state *s);

/* GPUNET_OK where precision=bf16 can run: the CPU has AVX-512 BF16 or AMX-BF16 and
 * o->no_bf16 is 0; else GPUNET_ERR_UNSUPPORTED with one sentence naming what is missing. */
gpunet_status gpunet_onednn_bf16_supported (const gpunet_cpu_options *o, char **err);

/* The ops that read tensor t, as input (an op writing t in place is no reader) or as
 * residual; *first gets the first of them (-1: none).  The plan's passes that move work
 * across a tensor (defer_activations, gpunet_onednn_int8_fuse) need t read once. */
static inline int
gpunet_onednn_tensor_readers (const gpunet_graph *g, int t, int *first)
{
  int n = 0;
  *first = -1;
  for (int j = 0; j < g->n_ops; j++)
    if ((g->ops[j].in == t && g->ops[j].out != t) || g->ops[j].residual == t) {
      if (!n++)
        *first = j;
    }
  return n;
}

/* Whether op (impl GPUNET_ONEDNN_CONV) runs as an int8 convolution: int8 sessions, dense,
 * not the first, calibrated and kept by gpunet_onednn_int8_choose. */
static inline int
gpunet_onednn_conv_is_int8 (const fast_state *s, const gpunet_op *op)
{
  return s->int8 && op->kind == GPUNET_OP_CONV2D && op->p.conv2d.groups == 1
      && op->in != s->g->input && s->int8[op - s->g->ops].scale > 0.0f;
}

/* Whether op (impl GPUNET_ONEDNN_CONV) runs as a bf16 convolution: bf16 sessions and int8
 * sessions with bf16 for the rest (int8rest=auto), dense, not an int8 one;
 * the first (reading the network input, converted to bf16 each pass) only with bf16
 * activations (option bf16act=auto), so that its output is bf16 too. */
static inline int
gpunet_onednn_conv_is_bf16 (const fast_state *s, const gpunet_op *op)
{
  return s->bf16 && op->kind == GPUNET_OP_CONV2D && op->p.conv2d.groups == 1
      && !gpunet_onednn_conv_is_int8 (s, op)
      && (op->in != s->g->input || (!s->opt.bf16_f32_act && s->blk == 16));
}

/* bf16_act.c: after the buffers and kernels are planned, marks the tensors stored as bf16
 * (fast_tensor.bf) and tells our depthwise ops (bf16 sessions, 16-channel blocks, option
 * bf16act=auto; a no-op otherwise). */
void gpunet_onednn_bf16_tensors (fast_state *s);

/* xdw_plan.c, after gpunet_onednn_bf16_tensors: where a 1x1 expansion's output is read
 * only by our depthwise op right after it (an inverted residual block), bf16 or f32 on
 * 16-channel blocks, the expansion runs inside that op (gpunet_dw_set_expansion), its own
 * impl becoming GPUNET_ONEDNN_XDW; the expanded tensor is never written.  Cpu option xdw:
 * auto on planes of at least GPUNET_CPU_XDW_MIN_HW_BF16 or _F32 pixels, all, off.  Before the scratch
 * is sized. */
void gpunet_onednn_xdw_fuse (fast_state *s);

/* pwb_plan.c, after gpunet_onednn_xdw_fuse: which of the bf16 session's 1x1 convolutions
 * that oneDNN would run with a bf16 input run on our bf16 1x1 kernel instead (cpu option
 * bf16pw), their impl becoming GPUNET_ONEDNN_PWB.  Before the scratch is sized. */
void gpunet_onednn_pwb_choose (fast_state *s);

/* bf16_act.c: n images of a bf16 tensor (blk-channel blocks, cp padded channels) to plain
 * NCHW f32 with c channels (trace callbacks). */
void gpunet_onednn_bf16_to_plain (const uint16_t *src, int blk, int cp, float *dst, int n,
    int c, long hw);

/* int8.c: GPUNET_OK where precision=int8 can run (AVX2 in the CPU and in oneDNN's
 * effective ISA); else GPUNET_ERR_UNSUPPORTED with one sentence naming what
 * is missing. */
gpunet_status gpunet_onednn_int8_supported (char **err);

/* int8: leaves in f32 (scale 0) the calibrated convolutions where int8 does not pay
 * (fewer than s->opt.int8_min_macs, by default GPUNET_CPU_INT8_MIN_MACS, multiply-
 * accumulates per output value: the quantising and layout reorders around an int8
 * convolution cost more than it saves). */
void gpunet_onednn_int8_choose (fast_state *s);

/* 1 where oneDNN's int8 kernels have VNNI here (AVX-512 VNNI or AVX-VNNI). */
int gpunet_onednn_int8_has_vnni (void);

/* One convolution's int8 numbers, per output channel (malloc()ed cout floats each):
 * w_quant = L / max |w| (the weights' reorder scale; L = 127, or 63 for u8 inputs
 * without VNNI so that oneDNN's u8 x s8 pairs cannot saturate), out_scales = src_scale / w_quant
 * (the s32 accumulator back to f32), bias_q = the bias as oneDNN 2.x adds it to the
 * accumulator (bias / out_scales).  per_oc: weights per output channel. */
gpunet_status gpunet_onednn_int8_conv_scales (const float *weight, const float *bias,
    int cout, size_t per_oc, float src_scale, int src_unsigned, float **w_quant, float **out_scales,
    float **bias_q, char **err);

/* int8.c: after planning a batch, points every int8 convolution's quantised input and
 * nhwc output (of every plan) at two buffers shared by all, grown as needed. */
gpunet_status gpunet_onednn_int8_share_buffers (fast_state *s, char **err);

/* int8.c, after gpunet_onednn_bf16_tensors: where an int8 convolution's output is read
 * only by the depthwise op right after it, that op reads the nhwc f32 output directly;
 * where a depthwise op's output is read only by the int8 convolution right after it, the
 * op writes that convolution's nhwc u8/s8 input directly (cpu option int8fuse; 16-channel
 * blocks with AVX-512BW).  The blocked tensors between are then never written.  The
 * values are the same (bf16 roundings kept): only the moves go. */
void gpunet_onednn_int8_fuse (fast_state *s);

/* Creates s->eng and s->stream. */
gpunet_status gpunet_onednn_engine (fast_state *s, char **err);

#endif
