/* xdw_plan.c: which 1x1 expansions run inside the depthwise op after them (cpu option
 * xdw; the kernel: gpunet_dw_set_expansion, bf16_dwconv.c).  An inverted residual block's
 * expansion writes a tensor that only its depthwise op reads; on large planes that tensor's
 * round trip through memory costs more than the expansion's arithmetic saves by running in
 * oneDNN's 1x1 kernel, so the depthwise op computes it row by row itself and it is never
 * written.  bf16 sessions (vdpbf16ps: AVX-512 BF16) and f32 ones (AVX-512F FMAs) on
 * 16-channel blocks. */
#include "activation.h"
#include "cpu_bf16.h"
#include "onednn_state.h"

void
gpunet_onednn_xdw_fuse (fast_state *s)
{
  const gpunet_graph *g = s->g;
  if (s->int8 || s->blk != 16 || s->opt.xdw == 1 || s->opt.simd != GPUNET_CPU_SIMD_AUTO
      || (s->bf16 && !gpunet_cpu_avx512_bf16 ()))
    return;   /* a bf16 session on a CPU with AMX-BF16 alone runs unfused */
#if defined(__x86_64__) || defined(__i386__)
  /* the f32 form runs in bf16_dwconv.c, compiled for AVX-512F, BW, VL and BF16: it uses
   * no BF16 instruction, but the compiler may use BW and VL ones */
  if (!__builtin_cpu_supports ("avx512bw") || !__builtin_cpu_supports ("avx512vl"))
    return;
#else
  return;
#endif
  for (int i = 1; i < g->n_ops; i++) {
    fast_op *r = &s->ops[i], *pr = &s->ops[i - 1];
    const gpunet_op *op = r->op, *x = pr->op;
    int first;
    /* the expansion: oneDNN's bf16 convolution in bf16 sessions; oneDNN's f32 one or our
     * 1x1 kernel in f32 ones */
    const int producer = s->bf16
        ? pr->impl == GPUNET_ONEDNN_CONV && gpunet_onednn_conv_is_bf16 (s, x)
        : pr->impl == GPUNET_ONEDNN_CONV || pr->impl == GPUNET_ONEDNN_PW
        || pr->impl == GPUNET_ONEDNN_PW_STRASSEN;
    if (r->impl != GPUNET_ONEDNN_DW || op->residual >= 0 || x->kind != GPUNET_OP_CONV2D
        || !producer || x->residual >= 0 || x->out != op->in || pr->act != GPUNET_EPI_NONE
        || r->in_act != x->p.conv2d.act || s->t[x->in].bf != s->bf16
        || s->t[op->in].bf != s->bf16 || s->t[x->in].blk != 16 || s->t[op->in].blk != 16
        || g->tensors[op->in].block >= 0 || op->in == g->output
        || gpunet_onednn_tensor_readers (g, op->in, &first) != 1
        || s->t[x->in].buf == s->t[op->out].buf)
      continue;
    if (s->opt.xdw != 2 && (long) g->tensors[op->in].h * g->tensors[op->in].w
        < (s->bf16 ? GPUNET_CPU_XDW_MIN_HW_BF16 : GPUNET_CPU_XDW_MIN_HW_F32))
      continue;
    if (!gpunet_dw_set_expansion (r->k.dw, &x->p.conv2d, s->t[x->in].cp, s->nt))
      continue;
    if (pr->impl == GPUNET_ONEDNN_PW || pr->impl == GPUNET_ONEDNN_PW_STRASSEN) {
      gpunet_pw_free (pr->k.pw);
      pr->k.pw = NULL;
    }
    pr->impl = GPUNET_ONEDNN_XDW;
  }
}
