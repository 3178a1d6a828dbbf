/* int8.c: precision=int8 on the fast CPU backend, the parts that are not oneDNN
 * primitives: whether this CPU and this oneDNN can run it, and the per-output-channel
 * weight scales and requantised bias of one convolution (onednn_conv.c plans the
 * primitives with them). */
#include <math.h>
#include <stdlib.h>

#include "blocked_ops.h"   /* gpunet_blk_alloc */

#include <oneapi/dnnl/dnnl.h>

#include "kernel_error.h"
#include "int8_layout.h"
#include "onednn_state.h"

gpunet_status
gpunet_onednn_int8_supported (char **err)
{
  int cpu_avx2 = 0;
#if defined(__x86_64__) || defined(__i386__)
  cpu_avx2 = __builtin_cpu_supports ("avx2");
#endif
  const unsigned isa = (unsigned) dnnl_get_effective_cpu_isa ();
  const unsigned avx2 = (unsigned) dnnl_cpu_isa_avx2;
  if (!cpu_avx2)
    return gpunet_fail (err, GPUNET_ERR_UNSUPPORTED, "precision=int8 needs a CPU with AVX2 "
        "(and AVX-512 VNNI or AVX-VNNI to be fast), and this CPU has no AVX2; use "
        "precision=fp32 here");
  if ((isa & avx2) != avx2)
    return gpunet_fail (err, GPUNET_ERR_UNSUPPORTED, "precision=int8 needs oneDNN's AVX2 "
        "int8 kernels at least, and oneDNN is capped below AVX2 here (ONEDNN_MAX_CPU_ISA or "
        "DNNL_MAX_CPU_ISA); unset the cap or use precision=fp32 (exact)");
  return GPUNET_OK;
}

int
gpunet_onednn_int8_has_vnni (void)
{
  const unsigned isa = (unsigned) dnnl_get_effective_cpu_isa ();
  const unsigned v512 = (unsigned) dnnl_cpu_isa_avx512_core_vnni;
#if DNNL_VERSION_MAJOR == 2 && DNNL_VERSION_MINOR >= 5 || DNNL_VERSION_MAJOR > 2
  const unsigned v256 = (unsigned) dnnl_cpu_isa_avx2_vnni;
  return (isa & v512) == v512 || (isa & v256) == v256;
#else
  return (isa & v512) == v512;
#endif
}

gpunet_status
gpunet_onednn_int8_conv_scales (const float *weight, const float *bias, int cout,
    size_t per_oc, float src_scale, int src_unsigned, float **w_quant, float **out_scales, float **bias_q,
    char **err)
{
  *w_quant = *out_scales = *bias_q = NULL;
  float *wq = malloc (sizeof (float) * (size_t) cout);
  float *os = malloc (sizeof (float) * (size_t) cout);
  float *bq = malloc (sizeof (float) * (size_t) cout);
  if (!wq || !os || !bq) {
    free (wq), free (os), free (bq);
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory planning int8 weights");
  }
  /* Without VNNI, oneDNN multiplies u8 by s8 with vpmaddubsw, which saturates the sum
   * of two products at 32767: 255 x 127 x 2 overflows, 255 x 63 x 2 does not.  So with
   * u8 inputs the weights keep 7 bits there (twice the weight step), 8 with VNNI.  With
   * s8 inputs oneDNN itself halves the weights in their reorder (its scale adjust) and
   * doubles the output scale back, so they are given 8 bits as with VNNI. */
  const int levels = gpunet_onednn_int8_has_vnni () || !src_unsigned ? 127 : 63;
  for (int o = 0; o < cout; o++) {
    float amax = 0.0f;
    const float *w = weight + (size_t) o * per_oc;
    for (size_t j = 0; j < per_oc; j++)
      amax = fmaxf (amax, fabsf (w[j]));
    /* symmetric: the largest |w| of the channel maps to `levels` */
    const float ws = amax > 0.0f ? amax / (float) levels : 1.0f;
    wq[o] = 1.0f / ws;                 /* the weights' reorder multiplies by this */
    os[o] = src_scale * ws;            /* s32 accumulator -> f32 */
    /* oneDNN 2.x adds the bias to the accumulator before the output scale */
    bq[o] = bias ? bias[o] / os[o] : 0.0f;
  }
  *w_quant = wq, *out_scales = os, *bias_q = bq;
  return GPUNET_OK;
}

/* The bytes of memory m's descriptor. */
static size_t
mem_bytes (dnnl_memory_t m)
{
#if DNNL_VERSION_MAJOR == 3
  const_dnnl_memory_desc_t md = NULL;
  return dnnl_memory_get_memory_desc (m, &md) == dnnl_success ? dnnl_memory_desc_get_size (md)
      : 0;
#else
  const dnnl_memory_desc_t *md = NULL;
  return dnnl_memory_get_memory_desc (m, &md) == dnnl_success ? dnnl_memory_desc_get_size (md)
      : 0;
#endif
}

gpunet_status
gpunet_onednn_int8_share_buffers (fast_state *s, char **err)
{
  size_t src = 0, dst = 0;
  for (int b = 1; b <= s->max_batch; b++)
    for (int i = 0; s->plans[b] && i < s->g->n_ops; i++) {
      const fast_step *st = &s->plans[b]->steps[i];
      if (!st->from_nhwc && !st->i8.own)   /* not an int8 convolution */
        continue;
      const size_t a = mem_bytes (st->src), d = mem_bytes (st->dst);
      src = a > src ? a : src;
      dst = d > dst ? d : dst;
    }
  if (src > s->q_src_bytes) {
    free (s->q_src);
    s->q_src_bytes = 0;
    if (!(s->q_src = gpunet_blk_alloc ((src + sizeof (float) - 1) / sizeof (float))))
      return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory allocating %zu bytes of "
          "int8 input", src);
    s->q_src_bytes = src;
  }
  if (dst > s->q_dst_bytes) {
    free (s->q_dst);
    s->q_dst_bytes = 0;
    if (!(s->q_dst = gpunet_blk_alloc ((dst + sizeof (float) - 1) / sizeof (float))))
      return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory allocating %zu bytes of "
          "int8 output", dst);
    s->q_dst_bytes = dst;
  }
  for (int b = 1; b <= s->max_batch; b++)
    for (int i = 0; s->plans[b] && i < s->g->n_ops; i++) {
      const fast_step *st = &s->plans[b]->steps[i];
      if (!st->from_nhwc && !st->i8.own)
        continue;
      if (dnnl_memory_set_data_handle (st->src, s->q_src) != dnnl_success
          || dnnl_memory_set_data_handle (st->dst, s->q_dst) != dnnl_success)
        return gpunet_fail (err, GPUNET_ERR_BACKEND, "oneDNN dnnl_memory_set_data_handle "
            "failed pointing op %d at the int8 buffers", i);
    }
  return GPUNET_OK;
}

void
gpunet_onednn_int8_choose (fast_state *s)
{
  const long min_macs = s->opt.int8_min_macs > 0 ? s->opt.int8_min_macs : GPUNET_CPU_INT8_MIN_MACS;
  for (int i = 0; i < s->g->n_ops; i++) {
    const gpunet_op *op = &s->g->ops[i];
    if (op->kind != GPUNET_OP_CONV2D)
      continue;
    const gpunet_conv2d_params *p = &op->p.conv2d;
    if ((long) p->cin / p->groups * p->kernel * p->kernel < min_macs)
      s->int8[i].scale = 0.0f;
  }
}

void
gpunet_onednn_int8_fuse (fast_state *s)
{
  const gpunet_graph *g = s->g;
  if (!s->int8 || s->opt.int8_fuse_off || s->blk != 16 || s->opt.simd != GPUNET_CPU_SIMD_AUTO
      || !gpunet_int8_layout_vector (16, 0))
    return;
  for (int i = 0; i + 1 < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i], *next = &g->ops[i + 1];
    fast_op *r = &s->ops[i], *rn = &s->ops[i + 1];
    int first;
    /* int8 convolution -> depthwise: the depthwise reads the nhwc f32 output */
    if (r->impl == GPUNET_ONEDNN_CONV && gpunet_onednn_conv_is_int8 (s, op)
        && op->residual < 0 && !r->copy_residual && rn->impl == GPUNET_ONEDNN_DW
        && next->in == op->out && next->residual < 0 && op->out != g->output
        && g->tensors[op->out].block < 0
        && gpunet_onednn_tensor_readers (g, op->out, &first) == 1 && first == i + 1) {
      r->q8_out_nhwc = 1;
      gpunet_dw_set_int8_io (rn->k.dw, 1, 0, 0, 0.0f);
    }
  }
  for (int i = 0; i + 1 < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i], *next = &g->ops[i + 1];
    fast_op *r = &s->ops[i], *rn = &s->ops[i + 1];
    int first;
    /* depthwise -> int8 convolution: the depthwise writes the quantised nhwc input */
    if (r->impl == GPUNET_ONEDNN_DW && op->residual < 0 && rn->impl == GPUNET_ONEDNN_CONV
        && gpunet_onednn_conv_is_int8 (s, next) && next->in == op->out
        && op->out != g->output && g->tensors[op->out].block < 0
        && gpunet_onednn_tensor_readers (g, op->out, &first) == 1 && first == i + 1) {
      const gpunet_int8_input *q = &s->int8[i + 1];
      rn->q8_in_nhwc = 1;
      gpunet_dw_set_int8_io (r->k.dw, i > 0 && s->ops[i - 1].q8_out_nhwc, 1, q->is_unsigned,
          1.0f / q->scale);
    }
  }
}
