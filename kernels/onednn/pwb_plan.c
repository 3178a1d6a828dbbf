/* pwb_plan.c: which 1x1 convolutions of a bf16 session run on our bf16 1x1 kernel
 * (bf16_pwconv.c) instead of oneDNN's bf16 one (cpu option bf16pw).  After the bf16
 * tensors are chosen (bf16_act.c), both kernels taking the same tensors (bf16 input, the
 * output and its residual in the output's type), so the choice changes no tensor's type;
 * and after the expansions fused into depthwise ops (xdw_plan.c) have been taken. */
#include "backend_onednn.h"
#include "onednn_state.h"

/* Whether bf16pw=auto gives any layer to our kernel: with oneDNN 2.x on AVX-512 BF16.
 * Not with oneDNN 3.x, whose bf16 1x1 convolutions ran GPUNet-P0 and -P1 in 0.968-0.979
 * of the time with ours (Debian 13's 3.7, Zen 5), nor on a CPU with AMX-BF16: on an Intel
 * Xeon with AMX oneDNN 2.6's (AVX-512 BF16, off AMX on our tensors) took 0.95 and 0.96
 * of ours there, and where oneDNN runs them on AMX ours is unmeasured against it. */
int
gpunet_onednn_pwb_auto (void)
{
#if DNNL_VERSION_MAJOR >= 3
  return 0;
#else
  return !gpunet_onednn_amx_host ();
#endif
}

void
gpunet_onednn_pwb_choose (fast_state *s)
{
  const gpunet_graph *g = s->g;
  if (!s->bf16 || s->int8 || s->blk != 16 || s->opt.bf16pw == GPUNET_CPU_ONEDNN
      || s->opt.simd != GPUNET_CPU_SIMD_AUTO || !gpunet_pwb_available ()
      || (s->opt.bf16pw == GPUNET_CPU_AUTO && !gpunet_onednn_pwb_auto ()))
    return;
  for (int i = 0; i < g->n_ops; i++) {
    fast_op *r = &s->ops[i];
    const gpunet_op *op = r->op;
    if (r->impl != GPUNET_ONEDNN_CONV || op->kind != GPUNET_OP_CONV2D)
      continue;
    const gpunet_conv2d_params *p = &op->p.conv2d;
    if (p->kernel != 1 || p->stride != 1 || p->pad != 0 || p->groups != 1 || p->ih != p->oh
        || p->iw != p->ow || op->in == g->input || !gpunet_onednn_conv_is_bf16 (s, op)
        || !s->t[op->in].bf || s->t[op->in].blk != 16 || s->t[op->out].blk != 16)
      continue;
    /* auto: planes of 32 to 64 pixels (GPUNet-P0/P1's 7x7 stage), where oneDNN 2.6's
     * jit_bf16_1x1 ran at 0.7-0.8 of the vdpbf16ps peak and ours took 0.86-0.95 of its
     * time per layer (2 threads); from 9x9 to 15x15 the two were level, and with them
     * in, GPUNet-0, -1, -2 passes took 1.013-1.025 of oneDNN's; under 32 pixels (a weight
     * used for fewer than 32 multiply-adds: the 4x4 stage) the layer waits on its weights
     * from memory, which oneDNN's kernel streams faster (ours 1.04-1.18 of its time) */
    const long hw = (long) p->oh * p->ow;
    if (s->opt.bf16pw == GPUNET_CPU_AUTO && (hw < GPUNET_CPU_PWB_MIN_HW
            || hw > GPUNET_CPU_PWB_MAX_HW))
      continue;
    gpunet_pwb *k = gpunet_pwb_new (p->weight, p->bias, p->cin, p->cout, s->t[op->in].cp,
        s->t[op->out].cp, (long) p->oh * p->ow, r->act, s->nt);
    if (!k)
      continue;   /* out of memory: oneDNN's kernel runs it */
    gpunet_pwb_set_out_f32 (k, !s->t[op->out].bf);
    r->k.pwb = k;
    r->impl = GPUNET_ONEDNN_PWB;
  }
}
