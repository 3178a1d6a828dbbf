/* onednn_conv.c: the oneDNN half of the fast CPU backend: the convolutions left to oneDNN
 * (impl GPUNET_ONEDNN_CONV), planned per batch size as primitives with bias, eltwise
 * and sum post-ops over the blocked activations, their weights reordered once per layout,
 * one scratchpad shared by all; and running one of them. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "kernel_error.h"
#include "activation.h"
#include "blocked_ops.h"
#include "cpu_bf16.h"
#include "int8_layout.h"
#include "backend_onednn.h"
#include "onednn_state.h"

/* oneDNN 2.x (Debian 12) and 3.x (Debian 13) differ here in three ways, all kept in the
 * few helpers below: a 3.x memory descriptor is a handle made and destroyed (2.x: a
 * struct filled in place), 3.x makes a convolution's primitive descriptor in one call
 * (2.x: an op descriptor first), and the post-op calls lost the eltwise scale and gained
 * the sum's zero point and data type.  The primitives, layouts and kernels are the same. */
#if DNNL_VERSION_MAJOR == 3
typedef dnnl_memory_desc_t md_t;          /* a handle; NULL until made */
typedef const_dnnl_memory_desc_t md_ref;
#define MD(m) (m)
#elif DNNL_VERSION_MAJOR == 2
typedef dnnl_memory_desc_t md_t;          /* the descriptor itself */
typedef const dnnl_memory_desc_t *md_ref;
#define MD(m) (&(m))
#else
#error "the fast CPU path is written for oneDNN 2.x and 3.x"
#endif

/* (Re)makes *md as a dense descriptor of data type dt, the given dims and layout tag. */
static dnnl_status_t
md_make_dt (md_t *md, int ndims, const dnnl_dims_t dims, dnnl_data_type_t dt,
    dnnl_format_tag_t tag)
{
#if DNNL_VERSION_MAJOR == 3
  if (*md)
    dnnl_memory_desc_destroy (*md);
  *md = NULL;
  return dnnl_memory_desc_create_with_tag (md, ndims, dims, dt, tag);
#else
  return dnnl_memory_desc_init_by_tag (md, ndims, dims, dt, tag);
#endif
}

/* (Re)makes *md as a dense f32 descriptor. */
static dnnl_status_t
md_make (md_t *md, int ndims, const dnnl_dims_t dims, dnnl_format_tag_t tag)
{
  return md_make_dt (md, ndims, dims, dnnl_f32, tag);
}

static void
md_free (md_t *md)
{
#if DNNL_VERSION_MAJOR == 3
  if (*md)
    dnnl_memory_desc_destroy (*md);
  *md = NULL;
#else
  (void) md;
#endif
}

/* A forward-inference convolution's primitive descriptor (no dilation). */
static dnnl_status_t
conv_pd_make (dnnl_primitive_desc_t *pd, dnnl_engine_t eng, dnnl_alg_kind_t alg,
    md_ref src, md_ref wei, md_ref bias, md_ref dst, const dnnl_dims_t strides,
    const dnnl_dims_t pad_l, const dnnl_dims_t pad_r, const_dnnl_primitive_attr_t attr)
{
#if DNNL_VERSION_MAJOR == 3
  const dnnl_dims_t dilates = { 0, 0 };
  return dnnl_convolution_forward_primitive_desc_create (pd, eng, dnnl_forward_inference, alg,
      src, wei, bias, dst, strides, dilates, pad_l, pad_r, attr);
#else
  dnnl_convolution_desc_t cd;
  dnnl_status_t s = dnnl_convolution_forward_desc_init (&cd, dnnl_forward_inference, alg, src,
      wei, bias, dst, strides, pad_l, pad_r);
  return s == dnnl_success ? dnnl_primitive_desc_create (pd, &cd, attr, eng, NULL) : s;
#endif
}

static dnnl_status_t
post_ops_eltwise (dnnl_post_ops_t po, dnnl_alg_kind_t alg, float alpha)
{
#if DNNL_VERSION_MAJOR == 3
  return dnnl_post_ops_append_eltwise (po, alg, alpha, 0.0f);
#else
  return dnnl_post_ops_append_eltwise (po, 1.0f, alg, alpha, 0.0f);
#endif
}

static dnnl_status_t
post_ops_sum (dnnl_post_ops_t po)
{
#if DNNL_VERSION_MAJOR == 3
  return dnnl_post_ops_append_sum (po, 1.0f, 0, dnnl_data_type_undef);
#else
  return dnnl_post_ops_append_sum (po, 1.0f);
#endif
}

/* precision=int8: the scales of argument `arg` of a primitive, per channel (mask
 * 1 << dim) or per tensor (mask 0).  oneDNN 2.x: one set of output scales, its values
 * given now (`v2_values`, n of them; arg unused); 3.x: a scale mask per argument, the
 * values given at execution (ARG_SCALES (arg): fast_step's sc_src, sc_wei). */
static dnnl_status_t
attr_int8_scales (dnnl_primitive_attr_t attr, int arg, int n, int mask, const float *v2_values)
{
#if DNNL_VERSION_MAJOR == 2
  (void) arg;
  return dnnl_primitive_attr_set_output_scales (attr, n, mask, v2_values);
#else
  (void) n, (void) v2_values;
  return dnnl_primitive_attr_set_scales_mask (attr, arg, mask);
#endif
}

/* The execution argument of `arg`'s int8 scales (3.x; 2.x has none, and its steps have no
 * scale memories to pass) */
#if DNNL_VERSION_MAJOR == 3
#define ARG_SCALES(arg) (DNNL_ARG_ATTR_SCALES | (arg))
#else
#define ARG_SCALES(arg) 0
#endif

static gpunet_status
dnnl_failed (char **err, dnnl_status_t s, const char *call, const gpunet_graph *g, int op)
{
  if (op >= 0)
    return gpunet_fail (err, GPUNET_ERR_BACKEND,
        "oneDNN %s failed (%s) planning op %d (block %d) of the fast CPU backend", call,
        dnnl_status2str (s), op, g->ops[op].block);
  return gpunet_fail (err, GPUNET_ERR_BACKEND, "oneDNN %s failed (%s) in the fast CPU backend",
      call, dnnl_status2str (s));
}

/* Evaluates a dnnl call; on failure turns it into a gpunet_status naming the call. */
#define TRY(call) do { \
    dnnl_status_t s_ = (call); \
    if (s_ != dnnl_success) { st = dnnl_failed (err, s_, #call, s->g, op_index); goto out; } \
  } while (0)

static dnnl_format_tag_t
layout_tag (int blk)
{
  return blk == 16 ? dnnl_nChw16c : blk == 8 ? dnnl_nChw8c : dnnl_nchw;
}

static void
plan_free (fast_plan *p, int n_ops)
{
  if (!p)
    return;
  for (int i = 0; p->steps && i < n_ops; i++) {
    fast_step *st = &p->steps[i];
    if (st->prim)
      dnnl_primitive_destroy (st->prim);
    /* st->wei belongs to the op's weights variants */
    if (st->to_bf16)
      dnnl_primitive_destroy (st->to_bf16);
    if (st->from_nhwc)
      dnnl_primitive_destroy (st->from_nhwc);
    dnnl_memory_t m[6] = { st->src, st->bias, st->dst, st->scratch, st->src_f32, st->dst_blk };
    for (int j = 0; j < 6; j++)
      if (m[j])
        dnnl_memory_destroy (m[j]);
    free (st->src_bf16);
    free (st->bias_q);
    free (st->q_scales);
    if (st->sc_src)
      dnnl_memory_destroy (st->sc_src);
    if (st->sc_wei)
      dnnl_memory_destroy (st->sc_wei);
  }
  free (p->steps);
  free (p);
}

/* Plans one convolution (dense, grouped or depthwise) of op `op_index` for batch n. */
static gpunet_status
plan_conv (fast_state *s, int op_index, int n, fast_step *step, char **err)
{
  const gpunet_graph *g = s->g;
  const gpunet_op *op = &g->ops[op_index];
  gpunet_status st = GPUNET_OK;
  int cin, cout, k, stride, pad, groups, ih, iw, oh, ow, act;
  const float *weight, *bias;
  if (op->kind == GPUNET_OP_CONV2D) {
    const gpunet_conv2d_params *p = &op->p.conv2d;
    cin = p->cin, cout = p->cout, k = p->kernel, stride = p->stride, pad = p->pad;
    groups = p->groups, ih = p->ih, iw = p->iw, oh = p->oh, ow = p->ow;
    act = s->ops[op_index].act;
    weight = p->weight, bias = p->bias;
  } else {
    const gpunet_dwconv2d_params *p = &op->p.dwconv2d;
    cin = cout = groups = p->c, k = p->kernel, stride = p->stride, pad = p->pad;
    ih = p->ih, iw = p->iw, oh = p->oh, ow = p->ow, act = p->act;
    weight = p->weight, bias = p->bias;
  }
  const fast_tensor *ti = &s->t[op->in], *to = &s->t[op->out];
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  dnnl_primitive_desc_t pd = NULL, rpd = NULL;
  dnnl_primitive_t reorder = NULL;
  dnnl_memory_t user_w = NULL;
  /* bf16 sessions: dense convolutions but the first read bf16 activations and weights
   * (f32 accumulation, f32 bias and post-ops; the output bf16 where the tensor is, else
   * f32); an f32 input is converted into a buffer of the step's own first */
  const int bf = gpunet_onednn_conv_is_bf16 (s, op);
  /* int8 sessions: the dense convolutions with calibrated inputs read u8/s8 activations
   * (quantised by a reorder) and s8 weights (per output channel), s32 accumulation,
   * output scales to f32 output and post-ops (int8.c) */
  const gpunet_int8_input *q8 = gpunet_onednn_conv_is_int8 (s, op) ? &s->int8[op_index] : NULL;
  const dnnl_data_type_t in_dt = bf ? dnnl_bf16
      : q8 ? (q8->is_unsigned ? dnnl_u8 : dnnl_s8) : dnnl_f32;
  const dnnl_data_type_t w_dt = q8 ? dnnl_s8 : in_dt;
  float *w_quant = NULL, *out_scales = NULL;
  dnnl_primitive_attr_t wattr = NULL, qattr = NULL, battr = NULL;
  dnnl_post_ops_t back_po = NULL;
  md_t blk_dst_md = { 0 };
  md_t src32_md = { 0 };
  weights_variant *nv = NULL;

  md_t src_md = { 0 }, wany_md = { 0 }, wuser_md = { 0 }, bias_md = { 0 }, dst_md = { 0 };
  dnnl_dims_t dst_dims = { n, cout, oh, ow }, bias_dims = { cout };
  dnnl_dims_t strides = { stride, stride }, pad_l = { pad, pad };
  dnnl_dims_t pad_r = { (oh - 1) * stride + k - ih - pad, (ow - 1) * stride + k - iw - pad };
  dnnl_dims_t w_dims;
  int w_ndims;
  float *padded_w = NULL;

  if (q8) {
    st = gpunet_onednn_int8_conv_scales (weight, bias, cout, (size_t) cin * k * k,
        q8->scale, q8->is_unsigned, &w_quant, &out_scales, &step->bias_q, err);
    if (st != GPUNET_OK)
      goto out;
#if DNNL_VERSION_MAJOR == 2
    bias = bias ? step->bias_q : NULL;   /* 2.x adds it to the accumulator */
#else
    /* 3.x scales the accumulator, then adds the f32 bias as it is; the scales are
     * memories given at execution: [0] the input's, [1 ..] each output channel's */
    if (!(step->q_scales = malloc (sizeof (float) * ((size_t) cout + 1)))) {
      st = gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory planning int8 scales");
      goto out;
    }
    step->q_scales[0] = q8->scale;
    for (int o = 0; o < cout; o++)
      step->q_scales[1 + o] = out_scales[o] / q8->scale;
    {
      md_t one = { 0 }, per = { 0 };
      const dnnl_dims_t d1 = { 1 }, dc = { cout };
      TRY (md_make (&one, 1, d1, dnnl_x));
      TRY (md_make (&per, 1, dc, dnnl_x));
      dnnl_status_t ms = dnnl_memory_create (&step->sc_src, MD (one), s->eng, step->q_scales);
      if (ms == dnnl_success)
        ms = dnnl_memory_create (&step->sc_wei, MD (per), s->eng, step->q_scales + 1);
      md_free (&one), md_free (&per);
      TRY (ms);
    }
#endif
  }

  /* oneDNN 2.6 has no jit kernel for a dense k x k convolution whose input channels are
   * not a multiple of the block (it falls back to a slow reference one).  The blocked
   * activation buffers are zero in their padding lanes (allocated zeroed; every writer
   * keeps them zero), so such a convolution is planned again over the padded input
   * channels with zero weights for the padding: the same result at jit speed. */
  for (int attempt = 0; attempt < 2; attempt++) {
    const int cin_d = attempt ? ti->cp : cin;
    dnnl_dims_t src_dims = { n, cin_d, ih, iw };
    if (groups == 1) {
      w_ndims = 4;
      w_dims[0] = cout, w_dims[1] = cin_d, w_dims[2] = k, w_dims[3] = k;
    } else {
      w_ndims = 5;
      w_dims[0] = groups, w_dims[1] = cout / groups, w_dims[2] = cin / groups;
      w_dims[3] = k, w_dims[4] = k;
    }
    /* oneDNN 2.6's int8 kernels (brgconv, jit_int8, jit_uni_int8) take channels-last
     * activations only: an int8 convolution reads nhwc u8/s8 and writes nhwc f32, and
     * reorders move its input from and its output back to the blocked layout */
    TRY (md_make_dt (&src_md, 4, src_dims, in_dt, q8 ? dnnl_nhwc : layout_tag (ti->blk)));
    /* int8 with bf16 for the rest (int8rest=auto): the reorders read and write the bf16
     * blocked activations directly */
    TRY (md_make_dt (&src32_md, 4, src_dims, q8 && ti->bf ? dnnl_bf16 : dnnl_f32,
            layout_tag (ti->blk)));
    if (q8) {   /* int8: an f32 nhwc output, then back to the blocked layout */
      TRY (md_make (&dst_md, 4, dst_dims, dnnl_nhwc));
      TRY (md_make_dt (&blk_dst_md, 4, dst_dims, to->bf ? dnnl_bf16 : dnnl_f32,
              layout_tag (s->blk)));
    } else
      TRY (md_make_dt (&dst_md, 4, dst_dims, to->bf ? dnnl_bf16 : dnnl_f32,
              layout_tag (s->blk)));
    TRY (md_make_dt (&wany_md, w_ndims, w_dims, w_dt, dnnl_format_tag_any));
    TRY (md_make (&wuser_md, w_ndims, w_dims, groups == 1 ? dnnl_oihw : dnnl_goihw));
    TRY (md_make (&bias_md, 1, bias_dims, dnnl_x));

    if (!attr) {
      TRY (dnnl_primitive_attr_create (&attr));
      TRY (dnnl_primitive_attr_set_scratchpad_mode (attr, dnnl_scratchpad_mode_user));
      if (q8) {
#if DNNL_VERSION_MAJOR == 2   /* per output channel (dimension 1 of dst) */
        TRY (attr_int8_scales (attr, DNNL_ARG_DST, cout, 1 << 1, out_scales));
#else                         /* the input's, and per output channel the weights' */
        TRY (attr_int8_scales (attr, DNNL_ARG_SRC, 1, 0, NULL));
        TRY (attr_int8_scales (attr, DNNL_ARG_WEIGHTS, cout, 1 << 0, NULL));
#endif
      }
      TRY (dnnl_post_ops_create (&po));
      if (act == GPUNET_EPI_RELU)
        TRY (post_ops_eltwise (po, dnnl_eltwise_relu, 0.0f));
      else if (act == GPUNET_EPI_SWISH)
        TRY (post_ops_eltwise (po, dnnl_eltwise_swish, 1.0f));
      if (op->residual >= 0 && !q8)   /* int8: the reorder back adds the residual */
        TRY (post_ops_sum (po));
      TRY (dnnl_primitive_attr_set_post_ops (attr, po));
    }
    /* 3x3 stride-1 dense convolutions left to oneDNN try its Winograd kernels first;
     * shapes it does not implement use direct convolution.  winograd=off: direct only. */
    const int wino = k == 3 && stride == 1 && groups == 1 && !q8   /* int8: exact only */
        && s->opt.winograd != GPUNET_CPU_OFF;
    md_ref bias_ref = bias ? MD (bias_md) : NULL;
    dnnl_status_t ws = dnnl_unimplemented;
    if (wino)
      ws = conv_pd_make (&pd, s->eng, dnnl_convolution_winograd, MD (src_md), MD (wany_md),
          bias_ref, MD (dst_md), strides, pad_l, pad_r, attr);
    if (ws != dnnl_success) {
      pd = NULL;
      TRY (conv_pd_make (&pd, s->eng, dnnl_convolution_direct, MD (src_md), MD (wany_md),
              bias_ref, MD (dst_md), strides, pad_l, pad_r, attr));
    }
    const char *impl = NULL;
    TRY (dnnl_primitive_desc_query (pd, dnnl_query_impl_info_str, 0, &impl));
    const int slow = impl && strncmp (impl, "ref", 3) == 0;
    if (attempt || !slow || groups != 1 || ti->blk == 1 || ti->cp == cin)
      break;
    padded_w = calloc ((size_t) cout * ti->cp * k * k, sizeof (float));
    if (!padded_w) {
      st = gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory planning the fast CPU backend");
      goto out;
    }
    for (int o = 0; o < cout; o++)
      memcpy (padded_w + (size_t) o * ti->cp * k * k, weight + (size_t) o * cin * k * k,
          sizeof (float) * (size_t) cin * k * k);
    weight = padded_w;
    dnnl_primitive_desc_destroy (pd);
    pd = NULL;
  }
  TRY (dnnl_primitive_create (&step->prim, pd));

  /* weights: reuse a variant already reordered to this layout, else reorder once now */
  md_ref w_md = dnnl_primitive_desc_query_md (pd, dnnl_query_weights_md, 0);
  if (!w_md) {
    st = gpunet_fail (err, GPUNET_ERR_BACKEND, "oneDNN dnnl_primitive_desc_query_md gave no "
        "weights layout for op %d (block %d) of the fast CPU backend", op_index, op->block);
    goto out;
  }
  for (weights_variant *v = s->ops[op_index].weights; v && !step->wei; v = v->next) {
    md_ref have;
    TRY (dnnl_memory_get_memory_desc (v->mem, &have));
    if (dnnl_memory_desc_equal (have, w_md))
      step->wei = v->mem;
  }
  if (!step->wei) {
    if (!(nv = calloc (1, sizeof *nv))) {
      st = gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory planning the fast CPU backend");
      goto out;
    }
    const size_t w_bytes = dnnl_memory_desc_get_size (w_md);
    if (!(nv->buf = gpunet_blk_alloc ((w_bytes + sizeof (float) - 1) / sizeof (float)))) {
      st = gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory allocating %zu bytes of "
          "weights for op %d (block %d) of the fast CPU backend", w_bytes, op_index, op->block);
      goto out;
    }
    TRY (dnnl_memory_create (&nv->mem, w_md, s->eng, nv->buf));
    TRY (dnnl_memory_create (&user_w, MD (wuser_md), s->eng, (void *) weight));
    if (q8) {   /* f32 -> s8, each output channel times its w_quant (dimension 0) */
      TRY (dnnl_primitive_attr_create (&wattr));
      TRY (attr_int8_scales (wattr, DNNL_ARG_DST, cout, 1 << 0, w_quant));
    }
    TRY (dnnl_reorder_primitive_desc_create (&rpd, MD (wuser_md), s->eng, w_md, s->eng, wattr));
    TRY (dnnl_primitive_create (&reorder, rpd));
    dnnl_exec_arg_t rargs[3] = { { DNNL_ARG_FROM, user_w }, { DNNL_ARG_TO, nv->mem },
      { ARG_SCALES (DNNL_ARG_DST), step->sc_wei } };
    TRY (dnnl_primitive_execute (reorder, s->stream, step->sc_wei ? 3 : 2, rargs));
    TRY (dnnl_stream_wait (s->stream));
    nv->next = s->ops[op_index].weights;
    s->ops[op_index].weights = nv;
    step->wei = nv->mem;
    nv = NULL;
  }
  if (bias)
    TRY (dnnl_memory_create (&step->bias, MD (bias_md), s->eng, (void *) bias));
  if (q8)   /* int8: the shared buffers of int8.c */
    TRY (dnnl_memory_create (&step->src, MD (src_md), s->eng, DNNL_MEMORY_NONE));
  if ((bf && !ti->bf) || q8) {
    const size_t bytes = dnnl_memory_desc_get_size (MD (src_md));
    if (bf
        && !(step->src_bf16 = gpunet_blk_alloc ((bytes + sizeof (float) - 1) / sizeof (float)))) {
      st = gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory allocating the bf16 input "
          "of op %d (block %d) of the fast CPU backend", op_index, op->block);
      goto out;
    }
    if (!step->src)
      TRY (dnnl_memory_create (&step->src, MD (src_md), s->eng, step->src_bf16));
    TRY (dnnl_memory_create (&step->src_f32, MD (src32_md), s->eng,
            op->in == g->input ? DNNL_MEMORY_NONE : (void *) s->bufs[ti->buf]));
    if (rpd)
      dnnl_primitive_desc_destroy (rpd);   /* the weights' reorder, done */
    rpd = NULL;
    if (q8) {   /* x / scale, rounded and saturated to u8 or s8 */
      const float inv = 1.0f / q8->scale;
      TRY (dnnl_primitive_attr_create (&qattr));
      TRY (attr_int8_scales (qattr, DNNL_ARG_DST, 1, 0, &inv));
    }
    if (!q8 || s->opt.int8_layout_onednn) {   /* int8: else our move (int8_layout.c) */
      TRY (dnnl_reorder_primitive_desc_create (&rpd, MD (src32_md), s->eng, MD (src_md),
              s->eng, qattr));
      TRY (dnnl_primitive_create (&step->to_bf16, rpd));
    }
  } else
    TRY (dnnl_memory_create (&step->src, MD (src_md), s->eng,
            op->in == g->input ? DNNL_MEMORY_NONE : (void *) s->bufs[ti->buf]));
  if (q8) {
    TRY (dnnl_memory_create (&step->dst, MD (dst_md), s->eng, DNNL_MEMORY_NONE));
    TRY (dnnl_memory_create (&step->dst_blk, MD (blk_dst_md), s->eng, s->bufs[to->buf]));
    if (op->residual >= 0) {   /* the residual is in the output buffer already */
      TRY (dnnl_primitive_attr_create (&battr));
      TRY (dnnl_post_ops_create (&back_po));
      TRY (post_ops_sum (back_po));
      TRY (dnnl_primitive_attr_set_post_ops (battr, back_po));
    }
    if (rpd)
      dnnl_primitive_desc_destroy (rpd);
    rpd = NULL;
    /* ours instead of both reorders (int8_layout.c), unless int8layout=onednn: the same
     * arithmetic; simd=portable (or avx2 on 16-channel blocks) keeps our plain form */
    step->i8.own = s->opt.int8_layout_onednn == 0;
    if (!step->i8.own) {
      TRY (dnnl_reorder_primitive_desc_create (&rpd, MD (dst_md), s->eng, MD (blk_dst_md),
              s->eng, battr));
      TRY (dnnl_primitive_create (&step->from_nhwc, rpd));
    }
    step->i8.form = s->opt.simd == GPUNET_CPU_SIMD_PORTABLE
        || (s->opt.simd == GPUNET_CPU_SIMD_AVX2 && s->blk == 16)
        ? GPUNET_I8L_PORTABLE : GPUNET_I8L_AUTO;
    step->i8.in_bf16 = ti->bf, step->i8.in_blk = ti->blk, step->i8.cin = cin;
    step->i8.cin_p = ti->cp, step->i8.uns = q8->is_unsigned, step->i8.inv = 1.0f / q8->scale;
    step->i8.out_bf16 = to->bf, step->i8.out_blk = s->blk, step->i8.cout = cout;
    step->i8.cout_p = to->cp, step->i8.add = op->residual >= 0, step->i8.n = n;
    step->i8.in_hw = (long) ih * iw, step->i8.out_hw = (long) oh * ow;
  } else
    TRY (dnnl_memory_create (&step->dst, MD (dst_md), s->eng, s->bufs[to->buf]));
  md_ref sp_md = dnnl_primitive_desc_query_md (pd, dnnl_query_scratchpad_md, 0);
  if (sp_md && dnnl_memory_desc_get_size (sp_md) > 0)
    TRY (dnnl_memory_create (&step->scratch, sp_md, s->eng, DNNL_MEMORY_NONE));

out:
  md_free (&src_md), md_free (&src32_md), md_free (&wany_md), md_free (&wuser_md);
  md_free (&bias_md), md_free (&dst_md);
  free (padded_w);
  free (w_quant), free (out_scales);
  md_free (&blk_dst_md);
  if (back_po)
    dnnl_post_ops_destroy (back_po);
  if (wattr)
    dnnl_primitive_attr_destroy (wattr);
  if (qattr)
    dnnl_primitive_attr_destroy (qattr);
  if (battr)
    dnnl_primitive_attr_destroy (battr);
  if (nv) {
    if (nv->mem)
      dnnl_memory_destroy (nv->mem);
    free (nv->buf);
    free (nv);
  }
  if (user_w)
    dnnl_memory_destroy (user_w);
  if (reorder)
    dnnl_primitive_destroy (reorder);
  if (rpd)
    dnnl_primitive_desc_destroy (rpd);
  if (pd)
    dnnl_primitive_desc_destroy (pd);
  if (po)
    dnnl_post_ops_destroy (po);
  if (attr)
    dnnl_primitive_attr_destroy (attr);
  return st;
}

/* Plans every convolution for batch n, then (re)points all scratchpad memories at one
 * buffer large enough for all plans so far. */
gpunet_status
gpunet_onednn_plan_batch (fast_state *s, int n, char **err)
{
  const gpunet_graph *g = s->g;
  gpunet_status st = GPUNET_OK;
  const int op_index = -1;
  fast_plan *p = calloc (1, sizeof *p);
  if (p)
    p->steps = calloc ((size_t) g->n_ops, sizeof (fast_step));
  if (!p || !p->steps) {
    plan_free (p, g->n_ops);
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory planning the fast CPU backend");
  }
  p->n = n;
  for (int i = 0; i < g->n_ops && st == GPUNET_OK; i++)
    if (s->ops[i].impl == GPUNET_ONEDNN_CONV)
      st = plan_conv (s, i, n, &p->steps[i], err);
  if (st != GPUNET_OK) {
    plan_free (p, g->n_ops);
    return st;
  }
  s->plans[n] = p;

  size_t need = 0;
  for (int b = 1; b <= s->max_batch; b++)
    for (int i = 0; s->plans[b] && i < g->n_ops; i++)
      if (s->plans[b]->steps[i].scratch) {
        md_ref md;
        TRY (dnnl_memory_get_memory_desc (s->plans[b]->steps[i].scratch, &md));
        size_t sz = dnnl_memory_desc_get_size (md);
        if (sz > need)
          need = sz;
      }
  if (need > s->scratchpad_bytes) {
    free (s->scratchpad);
    s->scratchpad_bytes = 0;
    if (!(s->scratchpad = gpunet_blk_alloc ((need + sizeof (float) - 1) / sizeof (float))))
      return gpunet_fail (err, GPUNET_ERR_NO_MEMORY,
          "out of memory allocating a %zu-byte oneDNN scratchpad", need);
    s->scratchpad_bytes = need;
  }
  for (int b = 1; b <= s->max_batch; b++)
    for (int i = 0; s->plans[b] && i < g->n_ops; i++)
      if (s->plans[b]->steps[i].scratch)
        TRY (dnnl_memory_set_data_handle (s->plans[b]->steps[i].scratch, s->scratchpad));
  if (s->int8)
    st = gpunet_onednn_int8_share_buffers (s, err);
out:
  return st;
}

gpunet_status
gpunet_onednn_run_conv (fast_state *s, const fast_plan *p, int i, const float *input,
    char **err)
{
  const fast_step *step = &p->steps[i];
  gpunet_status st = GPUNET_OK;
  const int op_index = i;
  if (s->g->ops[i].in == s->g->input)
    TRY (dnnl_memory_set_data_handle (step->to_bf16 ? step->src_f32 : step->src,
            (void *) input));
  if (s->ops[i].q8_in_nhwc) {
    /* int8: the depthwise op before wrote the quantised input (int8.c) */
  } else if (step->i8.own) {   /* int8: our quantising move (int8_layout.c) */
    void *from = NULL, *to = NULL;
    TRY (dnnl_memory_get_data_handle (step->src_f32, &from));
    TRY (dnnl_memory_get_data_handle (step->src, &to));
    gpunet_int8_quantize (from, step->i8.in_bf16, step->i8.in_blk, step->i8.cin,
        step->i8.cin_p, step->i8.in_hw, step->i8.n, step->i8.inv, step->i8.uns, to,
        step->i8.form, s->nt);
  } else if (step->to_bf16) {
    dnnl_exec_arg_t cargs[3] = { { DNNL_ARG_FROM, step->src_f32 }, { DNNL_ARG_TO, step->src },
      { ARG_SCALES (DNNL_ARG_DST), step->sc_src } };
    TRY (dnnl_primitive_execute (step->to_bf16, s->stream, step->sc_src ? 3 : 2, cargs));
  }
  dnnl_exec_arg_t args[7] = {
    { DNNL_ARG_SRC, step->src }, { DNNL_ARG_WEIGHTS, step->wei }, { DNNL_ARG_DST, step->dst },
    { DNNL_ARG_SCRATCHPAD, step->scratch }, { DNNL_ARG_BIAS, step->bias } };
  int nargs = 3;
  if (step->scratch)
    nargs++;
  if (step->bias)
    args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_BIAS, step->bias };
  if (step->sc_src) {   /* int8 on oneDNN 3.x: the scales at execution */
    args[nargs++] = (dnnl_exec_arg_t) { ARG_SCALES (DNNL_ARG_SRC), step->sc_src };
    args[nargs++] = (dnnl_exec_arg_t) { ARG_SCALES (DNNL_ARG_WEIGHTS), step->sc_wei };
  }
  TRY (dnnl_primitive_execute (step->prim, s->stream, nargs, args));
  if (s->ops[i].q8_out_nhwc) {
    /* int8: the depthwise op after reads the nhwc output where it is (int8.c) */
    TRY (dnnl_stream_wait (s->stream));
  } else if (step->i8.own) {   /* int8: our unpacking move, the residual added */
    void *from = NULL, *to = NULL;
    TRY (dnnl_stream_wait (s->stream));
    TRY (dnnl_memory_get_data_handle (step->dst, &from));
    TRY (dnnl_memory_get_data_handle (step->dst_blk, &to));
    gpunet_int8_unpack (from, step->i8.cout, step->i8.cout_p, step->i8.out_hw, step->i8.n,
        to, step->i8.out_bf16, step->i8.out_blk, step->i8.add, step->i8.form, s->nt);
  } else if (step->from_nhwc) {
    dnnl_exec_arg_t bargs[2] = { { DNNL_ARG_FROM, step->dst }, { DNNL_ARG_TO, step->dst_blk } };
    TRY (dnnl_primitive_execute (step->from_nhwc, s->stream, 2, bargs));
  }
  TRY (dnnl_stream_wait (s->stream));
out:
  return st;
}

void
gpunet_onednn_free_convs (fast_state *s)
{
  const int n_ops = s->g->n_ops;
  if (s->plans)
    for (int n = 0; n <= s->max_batch; n++)
      plan_free (s->plans[n], n_ops);
  free (s->plans);
  s->plans = NULL;
  for (int i = 0; s->ops && i < n_ops; i++)
    for (weights_variant *v = s->ops[i].weights, *next; v; v = next) {
      next = v->next;
      dnnl_memory_destroy (v->mem);
      free (v->buf);
      free (v);
    }
}

gpunet_status
gpunet_onednn_engine (fast_state *s, char **err)
{
  gpunet_status st = GPUNET_OK;
  const int op_index = -1;
  TRY (dnnl_engine_create (&s->eng, dnnl_cpu, 0));
  TRY (dnnl_stream_create (&s->stream, s->eng, dnnl_stream_default_flags));
out:
  return st;
}

/* Whether oneDNN picks an AMX kernel for a bf16 convolution on our tensors: bf16
 * nChw16c in and out, weights in its own layout, a 1x1 and a 3x3 of 64 channels on
 * 20x20 (the kinds our Winograd and bf16 1x1 kernels would otherwise take).  oneDNN 2.6
 * and 3.7 do not: their AMX convolutions take NHWC tensors, and on blocked ones they run
 * avx512_core_bf16 kernels even where the CPU has AMX. */
static int bf16_blocked_amx;

static void
probe_bf16_blocked_amx (void)
{
  dnnl_engine_t eng = NULL;
  if (dnnl_engine_create (&eng, dnnl_cpu, 0) != dnnl_success)
    return;
  int amx = 1;
  for (int k = 1; k <= 3 && amx; k += 2) {
    md_t src = { 0 }, wei = { 0 }, dst = { 0 };
    const dnnl_dims_t act = { 1, 64, 20, 20 }, w = { 64, 64, k, k };
    const dnnl_dims_t strides = { 1, 1 }, pad = { k / 2, k / 2 };
    dnnl_primitive_desc_t pd = NULL;
    const char *impl = NULL;
    amx = md_make_dt (&src, 4, act, dnnl_bf16, dnnl_aBcd16b) == dnnl_success
        && md_make_dt (&wei, 4, w, dnnl_bf16, dnnl_format_tag_any) == dnnl_success
        && md_make_dt (&dst, 4, act, dnnl_bf16, dnnl_aBcd16b) == dnnl_success
        && conv_pd_make (&pd, eng, dnnl_convolution_direct, MD (src), MD (wei), NULL,
            MD (dst), strides, pad, pad, NULL) == dnnl_success
        && dnnl_primitive_desc_query (pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success
        && impl && strstr (impl, "amx") != NULL;
    if (pd)
      dnnl_primitive_desc_destroy (pd);
    md_free (&src);
    md_free (&wei);
    md_free (&dst);
  }
  dnnl_engine_destroy (eng);
  bf16_blocked_amx = amx;
}

int
gpunet_onednn_amx_host (void)
{
  const unsigned isa = (unsigned) dnnl_get_effective_cpu_isa ();
  const unsigned amx = (unsigned) dnnl_cpu_isa_avx512_core_amx;
  return gpunet_cpu_amx_bf16 () && (isa & amx) == amx;
}

int
gpunet_onednn_bf16_amx (void)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if (!gpunet_onednn_amx_host ())
    return 0;
  pthread_once (&once, probe_bf16_blocked_amx);
  return bf16_blocked_amx;
}

gpunet_status
gpunet_onednn_bf16_supported (const gpunet_cpu_options *o, char **err)
{
  const int have = gpunet_cpu_avx512_bf16 () || gpunet_cpu_amx_bf16 ();
  /* oneDNN may be capped below the CPU (ONEDNN_MAX_CPU_ISA / DNNL_MAX_CPU_ISA, as an
   * AVX2-only host is simulated): its bf16 convolutions then do not exist */
  const unsigned isa = (unsigned) dnnl_get_effective_cpu_isa ();
  const unsigned bf16_isa = (unsigned) dnnl_cpu_isa_avx512_core_bf16;
  if (have && !o->no_bf16 && (isa & bf16_isa) != bf16_isa)
    return gpunet_fail (err, GPUNET_ERR_UNSUPPORTED, "precision=bf16 needs oneDNN's AVX-512 "
        "BF16 (avx512_bf16) kernels, and oneDNN is capped below them here "
        "(ONEDNN_MAX_CPU_ISA or DNNL_MAX_CPU_ISA); unset the cap or use precision=fp32 "
        "(exact)");
  if (have && !o->no_bf16)
    return GPUNET_OK;
  return gpunet_fail (err, GPUNET_ERR_UNSUPPORTED, "precision=bf16 needs a CPU with the "
      "AVX-512 BF16 (avx512_bf16) or AMX-BF16 instructions, and this %s has neither; use "
      "precision=fp32 (exact) here", have ? "session (options bf16=off)" : "CPU");
}
