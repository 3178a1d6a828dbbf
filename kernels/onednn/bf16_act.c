/* bf16_act.c: which activations a bf16 session (or an int8 one with int8rest=auto) stores
 * as bf16.  A tensor is bf16 where everything that writes it and everything that reads it
 * takes bf16: oneDNN's bf16 convolutions (bf16 source, bf16 destination, the residual
 * added by the sum post-op in the destination's type), our depthwise kernel
 * (bf16_dwconv.c), our Winograd kernel (winograd.c, its residual in its output's type)
 * and the reorders around an int8 convolution (bf16 blocked to u8/s8
 * nhwc, f32 nhwc to bf16 blocked with the residual sum).  The network input,
 * its output, and the tensors the f32 ops touch (the first convolution's input, squeeze-
 * excite, which scales in place, pooling, the classifier) stay f32; so does a residual
 * that must be copied into its output's buffer.  Halving those bytes is what bf16 buys on
 * the layers that are memory-bound (large planes with few channels, depthwise ones). */
#include <string.h>

#include "onednn_state.h"

void
gpunet_onednn_bf16_tensors (fast_state *s)
{
  const gpunet_graph *g = s->g;
  if (!s->bf16 || s->opt.bf16_f32_act || s->blk != 16)
    return;
  for (int t = 0; t < g->n_tensors; t++)
    s->t[t].bf = t != g->input && t != g->output && s->t[t].blk == 16 && s->t[t].buf >= 0;
  for (int i = 0; i < g->n_ops; i++) {
    const fast_op *r = &s->ops[i];
    const gpunet_op *op = r->op;
    /* int8 convolutions (int8 sessions with int8rest=auto) take bf16 in their reorders */
    const int takes = (r->impl == GPUNET_ONEDNN_CONV && (gpunet_onednn_conv_is_bf16 (s, op)
            || gpunet_onednn_conv_is_int8 (s, op)))
        || (r->impl == GPUNET_ONEDNN_DW && op->residual < 0)
        || r->impl == GPUNET_ONEDNN_WINO || r->impl == GPUNET_ONEDNN_WINO3;
    if (!takes || r->copy_residual) {
      s->t[op->in].bf = 0;
      s->t[op->out].bf = 0;
      if (op->residual >= 0)
        s->t[op->residual].bf = 0;
    }
  }
  /* the sum post-op adds the residual in the output's buffer and type */
  for (int changed = 1; changed;) {
    changed = 0;
    for (int i = 0; i < g->n_ops; i++) {
      const gpunet_op *op = &g->ops[i];
      if (op->residual >= 0 && s->t[op->residual].bf != s->t[op->out].bf) {
        s->t[op->residual].bf = s->t[op->out].bf = 0;
        changed = 1;
      }
    }
  }
  for (int i = 0; i < g->n_ops; i++) {
    if (s->ops[i].impl == GPUNET_ONEDNN_DW)
      gpunet_dw_set_bf16 (s->ops[i].k.dw, s->t[g->ops[i].in].bf, s->t[g->ops[i].out].bf);
    if (s->ops[i].impl == GPUNET_ONEDNN_WINO || s->ops[i].impl == GPUNET_ONEDNN_WINO3)
      gpunet_wino_set_bf16 (s->ops[i].k.wino, s->t[g->ops[i].in].bf, s->t[g->ops[i].out].bf);
  }
}

void
gpunet_onednn_bf16_to_plain (const uint16_t *src, int blk, int cp, float *dst, int n, int c,
    long hw)
{
  for (int b = 0; b < n; b++)
    for (int ch = 0; ch < c; ch++) {
      const uint16_t *p = src + (size_t) b * cp * hw + (size_t) (ch / blk) * hw * blk + ch % blk;
      float *o = dst + ((size_t) b * c + ch) * hw;
      for (long x = 0; x < hw; x++) {
        const uint32_t bits = (uint32_t) p[(size_t) x * blk] << 16;
        memcpy (o + x, &bits, sizeof bits);
      }
    }
}
