/* backend_onednn.c: the fast CPU backend on oneDNN 2.x: plans per batch size a chain of
 * convolution primitives (bias + eltwise + sum post-ops) over nChw16c activations (nChw8c
 * without AVX-512), owns the activation buffers, the reordered weights and one shared
 * scratchpad, and runs our blocked kernels (blocked_ops.c) for SE, pooling and the classifier,
 * and our Winograd (winograd.c) and depthwise (dwconv.c) convolutions where the CPU has AVX2
 * or AVX-512. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "../../models/error.h"
#include "activation.h"
#include "backend_onednn.h"
#include "blocked_ops.h"
#include "dwconv.h"
#include "linear.h"
#include "pwconv.h"
#include "se.h"
#include "winograd.h"

#if DNNL_VERSION_MAJOR != 2
#error "backend_onednn.c uses the oneDNN 2.x op-descriptor API (convolution_forward_desc_init); \
port plan_conv() to the 3.x dnnl_convolution_forward_primitive_desc_create before building against 3.x"
#endif

/* the longest chain of Winograd ops run as one (plan_winograd) */
#define WINO_CHAIN_MAX 8

/* One set of reordered weights of an op, in the layout some convolution pd asked for. */
typedef struct weights_variant {
  dnnl_memory_t mem;
  float *buf;   /* its memory, ours (gpunet_blk_alloc: huge pages for the large ones) */
  struct weights_variant *next;
} weights_variant;

/* One op planned for one batch size (conv/dwconv only; our own ops need nothing). */
typedef struct {
  dnnl_primitive_t prim;
  dnnl_memory_t src, wei, bias, dst, scratch;
} fast_step;

typedef struct {
  int n;
  fast_step *steps;
  size_t scratch_bytes;
} fast_plan;

typedef struct {
  int blk, cp;    /* layout: the session's block (nChw16c or nChw8c) or 1 (plain NCHW);
                   * padded channels */
  int buf;        /* activation buffer, -1 for the graph input */
} fast_tensor;

typedef struct {
  const gpunet_graph *g;
  gpunet_cpu_options opt;      /* as planned (gpunet_session_params.cpu) */
  int max_batch, nt;
  int blk;                     /* channel block between layers: 16 or 8 (choose_block) */
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  fast_tensor *t;
  int *copy_residual;          /* per op: residual copied into dst before the conv */
  int n_bufs;
  float **bufs;
  void *scratchpad;            /* shared by every primitive (one runs at a time) */
  size_t scratchpad_bytes;
  float *se_scratch, *trace_buf;
  weights_variant **weights;   /* per op */
  fast_plan **plans;           /* [1..max_batch], planned lazily beyond 1 and max_batch */
  gpunet_wino **wino;          /* per op: our Winograd convolution, or NULL (oneDNN) */
  gpunet_dw **dw;              /* per op: our depthwise convolution, or NULL (oneDNN) */
  gpunet_pw **pw;              /* per op: our 1x1 convolution (pwconv.h), or NULL (oneDNN) */
  gpunet_se **se;              /* per op: our vector squeeze-excite (se.h), or NULL
                                * (gpunet_blk_se) */
  int *defer_act;              /* per op: its activation is left to the depthwise op that
                                * reads its output (plan_own_dw) */
  float *sums_scratch;         /* the Strassen 1x1 ops' sums of input quadrants */
  float *own_scratch;          /* shared by our Winograd and depthwise ops
                                * (one at a time) */
  int *dw_in_act;              /* per depthwise op: the activation it applies to its input */
  int *chain;                  /* per op: how many Winograd ops from it on run as one chain
                                * (gpunet_wino_run_chain; 2..WINO_CHAIN_MAX), else 0 */
  long wino_min_hw;            /* input h x w from which a convolution is first-stage and
                                * not ours (wino_first_stage) */
  double *profile;
} fast_state;

/* Process-wide core budget: a forward takes min(n_threads, cores) cores and waits while
 * other sessions hold them, so two elements in one process never run more OpenMP threads
 * than there are cores (they take turns instead; with n-threads=1 each, both run at once). */
static pthread_mutex_t budget_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t budget_cond = PTHREAD_COND_INITIALIZER;
static int budget_total = -1, budget_free;

static int
cores_acquire (int want)
{
  pthread_mutex_lock (&budget_lock);
  if (budget_total < 0)
    budget_total = budget_free = omp_get_num_procs () > 0 ? omp_get_num_procs () : 1;
  if (want > budget_total)
    want = budget_total;
  while (budget_free < want)
    pthread_cond_wait (&budget_cond, &budget_lock);
  budget_free -= want;
  pthread_mutex_unlock (&budget_lock);
  return want;
}

static void
cores_release (int got)
{
  pthread_mutex_lock (&budget_lock);
  budget_free += got;
  pthread_cond_broadcast (&budget_cond);
  pthread_mutex_unlock (&budget_lock);
}

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

/* The channel block of the activations between layers: 16 (nChw16c, one AVX-512 vector)
 * where oneDNN runs AVX-512 kernels, else 8 (nChw8c, one AVX2 vector): oneDNN 2.6 has
 * jit kernels only for the block of the ISA it runs, and falls back to reference ones, tens
 * of times slower, for the other.  The option block=8 or 16 forces it (tests run the
 * 8-channel path on AVX-512 machines with it). */
static int
choose_block (const gpunet_cpu_options *o)
{
  if (o->block == 8 || o->block == 16)
    return o->block;
  const unsigned isa = (unsigned) dnnl_get_effective_cpu_isa ();
  const unsigned avx512 = (unsigned) dnnl_cpu_isa_avx512_core;
  return (isa & avx512) == avx512 ? 16 : 8;
}

static dnnl_format_tag_t
layout_tag (int blk)
{
  return blk == 16 ? dnnl_nChw16c : blk == 8 ? dnnl_nChw8c : dnnl_nchw;
}

static float *
tensor_ptr (const fast_state *s, int t, const float *input)
{
  return t == s->g->input ? (float *) input : s->bufs[s->t[t].buf];
}

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
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
    dnnl_memory_t m[4] = { st->src, st->bias, st->dst, st->scratch };
    for (int j = 0; j < 4; j++)
      if (m[j])
        dnnl_memory_destroy (m[j]);
  }
  free (p->steps);
  free (p);
}

static void
fast_destroy (void *state)
{
  fast_state *s = state;
  if (!s)
    return;
  const int n_ops = s->g->n_ops;
  if (s->plans)
    for (int n = 0; n <= s->max_batch; n++)
      plan_free (s->plans[n], n_ops);
  free (s->plans);
  if (s->weights)
    for (int i = 0; i < n_ops; i++)
      for (weights_variant *v = s->weights[i], *next; v; v = next) {
        next = v->next;
        dnnl_memory_destroy (v->mem);
        free (v->buf);
        free (v);
      }
  free (s->weights);
  for (int i = 0; s->wino && i < n_ops; i++)
    gpunet_wino_free (s->wino[i]);
  free (s->wino);
  for (int i = 0; s->dw && i < n_ops; i++)
    gpunet_dw_free (s->dw[i]);
  free (s->dw);
  for (int i = 0; s->pw && i < n_ops; i++)
    gpunet_pw_free (s->pw[i]);
  free (s->pw);
  free (s->dw_in_act);
  for (int i = 0; s->se && i < n_ops; i++)
    gpunet_se_free (s->se[i]);
  free (s->se);
  free (s->defer_act);
  free (s->own_scratch);
  free (s->sums_scratch);
  free (s->chain);
  for (int b = 0; s->bufs && b < s->n_bufs; b++)
    free (s->bufs[b]);
  free (s->bufs);
  free (s->scratchpad);
  free (s->se_scratch);
  free (s->trace_buf);
  free (s->t);
  free (s->copy_residual);
  if (s->stream)
    dnnl_stream_destroy (s->stream);
  if (s->eng)
    dnnl_engine_destroy (s->eng);
  free (s);
}

/* Lifetimes and buffers: tensors whose lifetimes do not overlap share a buffer, and a
 * convolution's output takes over its residual's buffer when that is the residual's last
 * use (the sum post-op then adds in place); otherwise the residual is copied there first. */
static int
plan_buffers (fast_state *s)
{
  const gpunet_graph *g = s->g;
  int *last_use = malloc (sizeof (int) * (size_t) g->n_tensors);
  int *owner = malloc (sizeof (int) * (size_t) g->n_tensors);
  for (int t = 0; owner && t < g->n_tensors; t++)
    owner[t] = -1;
  size_t *size = calloc ((size_t) g->n_tensors, sizeof (size_t));
  int ok = last_use && owner && size;
  for (int t = 0; ok && t < g->n_tensors; t++) {
    last_use[t] = t == g->output ? g->n_ops : -1;
    s->t[t].buf = -1;
    s->t[t].blk = 1;
    s->t[t].cp = g->tensors[t].c;
  }
  for (int i = 0; ok && i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    int uses[3] = { op->in, op->residual, op->out };
    for (int j = 0; j < 3; j++)
      if (uses[j] >= 0 && last_use[uses[j]] < i)
        last_use[uses[j]] = i;
    if (op->kind == GPUNET_OP_CONV2D || op->kind == GPUNET_OP_DWCONV2D) {
      s->t[op->out].blk = s->blk;
      s->t[op->out].cp = gpunet_blk_pad (g->tensors[op->out].c, s->blk);
    }
  }
  for (int i = 0; ok && i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    const int t = op->out;
    if (t != g->input && s->t[t].buf < 0) {
      const gpunet_tensor_desc *d = &g->tensors[t];
      const size_t need = (size_t) s->max_batch * (size_t) s->t[t].cp * (size_t) d->h * (size_t) d->w;
      const int r = op->residual;
      if (r >= 0 && r != g->input && r != op->in && last_use[r] == i
          && s->t[r].blk == s->t[t].blk && s->t[r].cp == s->t[t].cp
          && g->tensors[r].h == d->h && g->tensors[r].w == d->w) {
        s->t[t].buf = s->t[r].buf;
      } else {
        int best = -1;
        for (int b = 0; b < s->n_bufs; b++) {
          if (owner[b] >= 0)
            continue;
          if (best < 0 || (size[b] >= need
                  ? (size[best] < need || size[b] < size[best])
                  : (size[best] < need && size[b] > size[best])))
            best = b;
        }
        if (best < 0)
          best = s->n_bufs++;
        if (size[best] < need)
          size[best] = need;
        s->t[t].buf = best;
        if (r >= 0)
          s->copy_residual[i] = 1;
      }
      owner[s->t[t].buf] = t;
    }
    for (int b = 0; b < s->n_bufs; b++)
      if (owner[b] >= 0 && owner[b] != t && last_use[owner[b]] <= i)
        owner[b] = -1;
  }
  if (ok) {
    s->bufs = calloc ((size_t) s->n_bufs + 1, sizeof (float *));
    ok = s->bufs != NULL;
    for (int b = 0; ok && b < s->n_bufs; b++)
      ok = (s->bufs[b] = gpunet_blk_alloc (size[b])) != NULL;
  }
  free (last_use);
  free (owner);
  free (size);
  return ok ? 0 : -1;
}

/* The activation a dense convolution is planned with: its own, or none where a depthwise
 * op applies it to the output instead (defer_act). */
static int
planned_act (const fast_state *s, int op_index)
{
  return s->defer_act[op_index] ? GPUNET_EPI_NONE
      : s->g->ops[op_index].p.conv2d.act;
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
    act = planned_act (s, op_index);
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
  weights_variant *nv = NULL;

  dnnl_memory_desc_t src_md, wany_md, wuser_md, bias_md, dst_md;
  dnnl_dims_t dst_dims = { n, cout, oh, ow }, bias_dims = { cout };
  dnnl_dims_t strides = { stride, stride }, pad_l = { pad, pad };
  dnnl_dims_t pad_r = { (oh - 1) * stride + k - ih - pad, (ow - 1) * stride + k - iw - pad };
  dnnl_dims_t w_dims;
  int w_ndims;
  float *padded_w = NULL;

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
    TRY (dnnl_memory_desc_init_by_tag (&src_md, 4, src_dims, dnnl_f32,
            layout_tag (ti->blk)));
    TRY (dnnl_memory_desc_init_by_tag (&dst_md, 4, dst_dims, dnnl_f32, layout_tag (s->blk)));
    TRY (dnnl_memory_desc_init_by_tag (&wany_md, w_ndims, w_dims, dnnl_f32, dnnl_format_tag_any));
    TRY (dnnl_memory_desc_init_by_tag (&wuser_md, w_ndims, w_dims, dnnl_f32,
            groups == 1 ? dnnl_oihw : dnnl_goihw));
    TRY (dnnl_memory_desc_init_by_tag (&bias_md, 1, bias_dims, dnnl_f32, dnnl_x));

    dnnl_convolution_desc_t cd;
    if (!attr) {
      TRY (dnnl_primitive_attr_create (&attr));
      TRY (dnnl_primitive_attr_set_scratchpad_mode (attr, dnnl_scratchpad_mode_user));
      TRY (dnnl_post_ops_create (&po));
      if (act == GPUNET_EPI_RELU)
        TRY (dnnl_post_ops_append_eltwise (po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
      else if (act == GPUNET_EPI_SWISH)
        TRY (dnnl_post_ops_append_eltwise (po, 1.0f, dnnl_eltwise_swish, 1.0f, 0.0f));
      if (op->residual >= 0)
        TRY (dnnl_post_ops_append_sum (po, 1.0f));
      TRY (dnnl_primitive_attr_set_post_ops (attr, po));
    }
    /* 3x3 stride-1 dense convolutions left to oneDNN try its Winograd kernels first;
     * shapes it does not implement use direct convolution.  winograd=off: direct only. */
    const int wino = k == 3 && stride == 1 && groups == 1
        && s->opt.winograd != GPUNET_CPU_OFF;
    dnnl_status_t ws = dnnl_unimplemented;
    if (wino
        && (ws = dnnl_convolution_forward_desc_init (&cd, dnnl_forward_inference,
                dnnl_convolution_winograd, &src_md, &wany_md, bias ? &bias_md : NULL, &dst_md,
                strides, pad_l, pad_r)) == dnnl_success)
      ws = dnnl_primitive_desc_create (&pd, &cd, attr, s->eng, NULL);
    if (ws != dnnl_success) {
      pd = NULL;
      TRY (dnnl_convolution_forward_desc_init (&cd, dnnl_forward_inference,
              dnnl_convolution_direct, &src_md, &wany_md, bias ? &bias_md : NULL, &dst_md,
              strides, pad_l, pad_r));
      TRY (dnnl_primitive_desc_create (&pd, &cd, attr, s->eng, NULL));
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
  const dnnl_memory_desc_t *w_md = dnnl_primitive_desc_query_md (pd, dnnl_query_weights_md, 0);
  if (!w_md) {
    st = gpunet_fail (err, GPUNET_ERR_BACKEND, "oneDNN dnnl_primitive_desc_query_md gave no "
        "weights layout for op %d (block %d) of the fast CPU backend", op_index, op->block);
    goto out;
  }
  for (weights_variant *v = s->weights[op_index]; v && !step->wei; v = v->next) {
    const dnnl_memory_desc_t *have;
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
    TRY (dnnl_memory_create (&user_w, &wuser_md, s->eng, (void *) weight));
    TRY (dnnl_reorder_primitive_desc_create (&rpd, &wuser_md, s->eng, w_md, s->eng, NULL));
    TRY (dnnl_primitive_create (&reorder, rpd));
    dnnl_exec_arg_t rargs[2] = { { DNNL_ARG_FROM, user_w }, { DNNL_ARG_TO, nv->mem } };
    TRY (dnnl_primitive_execute (reorder, s->stream, 2, rargs));
    TRY (dnnl_stream_wait (s->stream));
    nv->next = s->weights[op_index];
    s->weights[op_index] = nv;
    step->wei = nv->mem;
    nv = NULL;
  }
  if (bias)
    TRY (dnnl_memory_create (&step->bias, &bias_md, s->eng, (void *) bias));
  TRY (dnnl_memory_create (&step->src, &src_md, s->eng,
          op->in == g->input ? DNNL_MEMORY_NONE : (void *) s->bufs[ti->buf]));
  TRY (dnnl_memory_create (&step->dst, &dst_md, s->eng, s->bufs[to->buf]));
  const dnnl_memory_desc_t *sp_md = dnnl_primitive_desc_query_md (pd, dnnl_query_scratchpad_md, 0);
  if (sp_md && dnnl_memory_desc_get_size (sp_md) > 0)
    TRY (dnnl_memory_create (&step->scratch, sp_md, s->eng, DNNL_MEMORY_NONE));

out:
  free (padded_w);
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
static gpunet_status
plan_batch (fast_state *s, int n, char **err)
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
    if ((g->ops[i].kind == GPUNET_OP_CONV2D || g->ops[i].kind == GPUNET_OP_DWCONV2D)
        && !s->wino[i] && !s->dw[i] && !s->pw[i])
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
        const dnnl_memory_desc_t *md;
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
out:
  return st;
}

/* The stride-1 convolutions of the first stage, those reading a tensor of the network's
 * largest activation size (the stem's output in every GPUNet), run on oneDNN's direct
 * kernel and not on our Winograd: its rounding there reaches the logits most.  With
 * measured BatchNorm statistics (tests/test_exact.c, as tools/compare_pytorch.py gives
 * them) and a float64 forward as the reference, Winograd on GPUNet-D2's two 48->48
 * stage-1 layers costs 5.3e-5 of the largest logit with F(4x4, 3x3) and 8.9e-5 with
 * F(6x6, 3x3), against 1.2e-5 with them direct (the bound is 5e-5); on the whole of
 * GPUNet-P1 2.4e-5 and 5.4e-5 against 1.5e-5.  Our Winograd on the first stage's strided
 * layers (GPUNet-2's and P1's 5x5 stride-2 ones, the largest convolutions of those
 * networks) and on every later layer adds little: at most 1.6e-5 over the seven models
 * with F(4x4, 3x3).  Sets s->wino_min_hw: the input size (h x w) from which a
 * convolution is first-stage. */
static void
wino_first_stage (fast_state *s)
{
  const gpunet_graph *g = s->g;
  long hw = 0;
  for (int t = 0; t < g->n_tensors; t++)
    if (t != g->input && (long) g->tensors[t].h * g->tensors[t].w > hw)
      hw = (long) g->tensors[t].h * g->tensors[t].w;
  s->wino_min_hw = hw > 0 ? hw : 1;
}

/* Which convolutions run on our own Winograd kernels (winograd.h, AVX-512 on nChw16c or
 * AVX2 + FMA on nChw8c): every dense 3x3 stride-1 or stride-2 and 5x5 stride-2
 * convolution on a blocked input.  Measured in GPUNet-0/1/2 on this machine kind
 * (docs/performance.md), ours is ahead of oneDNN 2.6's direct kernels by 1.3-2x and level
 * with or ahead of its Winograd kernel where that one takes the shape (it turns most
 * GPUNet shapes down).  With AVX2 the 3x3 stride-2 ones (F(4x4, 2x2) on the phase images)
 * measured, per-op minima over 4-6 alternating rounds: GPUNet-1 2.09 -> 1.47 and
 * 3.27 -> 2.85 ms, GPUNet-2 1.11 -> 0.95 ms, GPUNet-P0/P1 level,
 * GPUNet-0 level and 0.93 -> 1.07 ms (where oneDNN's direct kernel is at its best); a rule
 * leaving those with over 1 MiB of transformed weights to oneDNN gained under 1% of a pass
 * and was dropped (docs/performance.md).  Being ours
 * everywhere also makes a batch of n give the same bits as n single frames, which mixing
 * oneDNN's batch-dependent algorithm choice with ours did not.
 * winograd=onednn: none of ours (oneDNN's Winograd where it takes a 3x3 stride-1 shape,
 * else direct); winograd=off: no Winograd of either kind. */
static int
use_own_winograd (const fast_state *s, const gpunet_op *op)
{
  if (s->opt.winograd == GPUNET_CPU_ONEDNN || s->opt.winograd == GPUNET_CPU_OFF
      || !gpunet_wino_available (s->blk))
    return 0;
  if (op->kind != GPUNET_OP_CONV2D)
    return 0;
  const gpunet_conv2d_params *p = &op->p.conv2d;
  /* the first stage's stride-1 layers stay on oneDNN (wino_first_stage), unless ours are
   * forced */
  if (s->opt.winograd != GPUNET_CPU_OWN && p->stride == 1 && (long) p->ih * p->iw >= s->wino_min_hw)
    return 0;
  return p->groups == 1 && s->t[op->in].blk == s->blk && s->t[op->out].blk == s->blk
      && op->in != s->g->input
      && ((p->kernel == 3 && p->stride <= 2) || (p->kernel == 5 && p->stride == 2))
      && p->oh == (p->ih + 2 * p->pad - p->kernel) / p->stride + 1
      && p->ow == (p->iw + 2 * p->pad - p->kernel) / p->stride + 1;
}

/* Which depthwise convolutions run on our kernel (dwconv.h): all on a blocked input, when
 * the CPU runs our vector kernels.  dw=onednn: none (oneDNN's jit_dw). */
static int
use_own_dw (const fast_state *s, const gpunet_op *op)
{
  return op->kind == GPUNET_OP_DWCONV2D && s->opt.dw != GPUNET_CPU_ONEDNN
      && gpunet_wino_available (s->blk) && op->in != s->g->input
      && s->t[op->in].blk == s->blk && s->t[op->out].blk == s->blk;
}

/* Our depthwise convolution of op i, its input activation s->dw_in_act[i]; NULL when out
 * of memory. */
static gpunet_dw *
new_dw (const fast_state *s, int i)
{
  const gpunet_op *op = &s->g->ops[i];
  return gpunet_dw_new (&op->p.dwconv2d, s->dw_in_act[i], s->t[op->out].cp, s->blk);
}

/* Our depthwise convolutions.  Where one is the only reader of a convolution's output (an
 * inverted residual block's expansion), that convolution's activation moves into it
 * (defer_act): oneDNN's swish post-op measured about 0.3 ms on GPUNet-2's 144 -> 864
 * expansions at 23x23, ours 0.09-0.14 ms applied while the depthwise op copies its input.
 * Not when the tensor is traced (a block's output), read by another op, added as a
 * residual, or the producer adds a residual itself (after its activation). */
static gpunet_status
plan_own_dw (fast_state *s, char **err)
{
  const gpunet_graph *g = s->g;
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    if (!use_own_dw (s, op))
      continue;
    const int t = op->in;
    int producer = -1, readers = 0;
    for (int j = 0; j < g->n_ops; j++) {
      const gpunet_op *o = &g->ops[j];
      if (o->out == t)
        producer = j;   /* the last writer (an SE writes in place after its conv) */
      readers += (o->in == t && o->out != t) + (o->residual == t);
    }
    const gpunet_op *pr = producer >= 0 ? &g->ops[producer] : NULL;
    const int defer = pr && pr->kind == GPUNET_OP_CONV2D && pr->residual < 0 && readers == 1
        && t != g->output && g->tensors[t].block < 0 && pr->p.conv2d.act != GPUNET_EPI_NONE;
    s->dw_in_act[i] = defer ? pr->p.conv2d.act : GPUNET_EPI_NONE;
    if (!(s->dw[i] = new_dw (s, i)))
      return gpunet_fail (err, GPUNET_ERR_NO_MEMORY,
          "out of memory planning the depthwise convolution of op %d (block %d)", i, op->block);
    if (defer)
      s->defer_act[producer] = 1;
  }
  return GPUNET_OK;
}

/* Our vector squeeze-excite (se.h) on blocked tensors, where the CPU runs our vector
 * kernels (elsewhere gpunet_blk_se: plain C, per-channel dot products).
 * Sums of per-op minima over 4 alternating rounds (AVX2, 2 threads, a loaded phase): the
 * SE ops of GPUNet-1 1.17 -> 0.42 ms (its 1792-channel ones at 9x9 0.31 -> 0.11, about
 * the time their 1.6 MB of weights take to come from memory), of GPUNet-2 1.31 -> 0.68. */
static gpunet_status
plan_own_se (fast_state *s, char **err)
{
  const gpunet_graph *g = s->g;
  if (!gpunet_wino_available (s->blk))
    return GPUNET_OK;
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    if (op->kind != GPUNET_OP_SE || s->t[op->out].blk != s->blk)
      continue;
    s->se[i] = gpunet_se_new (&op->p.se, s->t[op->out].cp, s->blk, s->max_batch);
    if (!s->se[i])
      return gpunet_fail (err, GPUNET_ERR_NO_MEMORY,
          "out of memory planning the squeeze-excite of op %d (block %d)", i, op->block);
  }
  return GPUNET_OK;
}

/* Our 1x1 convolution of op i (a GPUNET_PW_STRASSEN_* rule), as planned between its
 * tensors; NULL when out of memory. */
static gpunet_pw *
new_pw (const fast_state *s, int i, int strassen)
{
  const gpunet_op *op = &s->g->ops[i];
  const gpunet_conv2d_params *p = &op->p.conv2d;
  return gpunet_pw_new (p->weight, p->bias, p->cin, p->cout, s->t[op->in].cp,
      s->t[op->out].cp, (long) p->oh * p->ow, planned_act (s, i), op->residual >= 0, strassen);
}

/* After plan_own_dw (the deferred activations): our 1x1 convolutions (pwconv.h), every
 * dense 1x1 stride-1 convolution between blocked tensors where the CPU runs AVX-512
 * (gpunet_pw_available).  oneDNN 2.6's jit_1x1 ran GPUNet's at 0.90-0.94 of the FMA peak,
 * ours run at 0.95-0.99 (docs/performance.md).  pw=onednn: none of ours. */
static gpunet_status
plan_own_pw (fast_state *s, char **err)
{
  const gpunet_graph *g = s->g;
  if (s->opt.pw == GPUNET_CPU_ONEDNN || !gpunet_pw_available (s->blk))
    return GPUNET_OK;
  /* strassen=off: never one level of Strassen; own: wherever the shape allows (tests,
   * benchmarks); auto: where pwconv.c's rule takes it */
  const int strassen = s->opt.strassen == GPUNET_CPU_OFF ? GPUNET_PW_STRASSEN_OFF
      : s->opt.strassen == GPUNET_CPU_OWN ? GPUNET_PW_STRASSEN_FORCE : GPUNET_PW_STRASSEN_AUTO;
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    if (op->kind != GPUNET_OP_CONV2D || op->in == g->input)
      continue;
    const gpunet_conv2d_params *p = &op->p.conv2d;
    if (p->kernel != 1 || p->stride != 1 || p->pad != 0 || p->groups != 1
        || p->ih != p->oh || p->iw != p->ow
        || s->t[op->in].blk != s->blk || s->t[op->out].blk != s->blk)
      continue;
    if (!(s->pw[i] = new_pw (s, i, strassen)))
      return gpunet_fail (err, GPUNET_ERR_NO_MEMORY,
          "out of memory planning the 1x1 convolution of op %d (block %d)", i, op->block);
  }
  return GPUNET_OK;
}

/* The chain of ops i .. i + len - 1 may share buffers (a layer writing the one the layer
 * before last read): gpunet_wino_run_chain is right then, image by image, while the tensors
 * sharing one have the same size per image; with different sizes a layer would overwrite
 * the next image of a tensor not yet read. */
static int
chain_buffers_ok (const fast_state *s, int i, int len)
{
  const gpunet_graph *g = s->g;
  for (int a = 0; a <= len; a++)
    for (int b = a + 1; b <= len; b++) {
      const int ta = a ? g->ops[i + a - 1].out : g->ops[i].in;
      const int tb = g->ops[i + b - 1].out;
      if (s->t[ta].buf == s->t[tb].buf && s->t[ta].cp != s->t[tb].cp)
        return 0;
    }
  return 1;
}

/* Before any plan_batch, after plan_own_dw and plan_own_pw: our Winograd convolutions,
 * their transformed weights and one scratch buffer for them, the depthwise ones and the
 * Strassen 1x1 ones (plan_batch then leaves these ops to us). */
static gpunet_status
plan_winograd (fast_state *s, char **err)
{
  const gpunet_graph *g = s->g;
  size_t need = 0;
  wino_first_stage (s);
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    if (!use_own_winograd (s, op))
      continue;
    const gpunet_conv2d_params *p = &op->p.conv2d;
    s->wino[i] = gpunet_wino_new (p->weight, p->bias, p->cin, p->cout, p->kernel, p->stride,
        p->pad, s->t[op->in].cp, s->t[op->out].cp, p->ih, p->iw, p->oh, p->ow,
        planned_act (s, i), 0, s->blk);
    if (!s->wino[i])
      return gpunet_fail (err, GPUNET_ERR_NO_MEMORY,
          "out of memory transforming the Winograd weights of op %d (block %d)", i, op->block);
  }
  /* One per-thread stride for every op: thread t's Winograd and depthwise scratch always
   * starts at the same place, so its lines stay in the caches of the core that uses them
   * instead of moving to the other core as the ops' sizes differ (where the VM's cores are
   * far apart, a line the other core holds costs up to 28 ns to write, docs/performance.md).
   * The Strassen 1x1 ops' sums, which every thread reads, in a buffer of their own. */
  size_t stride = 0, sums = 0;
  for (int i = 0; i < g->n_ops; i++) {
    const size_t f = s->wino[i] ? gpunet_wino_thread_floats (s->wino[i])
        : s->dw[i] ? gpunet_dw_thread_floats (s->dw[i]) : 0;
    if (f > stride)
      stride = f;
    if (s->pw[i] && gpunet_pw_scratch_floats (s->pw[i]) > sums)
      sums = gpunet_pw_scratch_floats (s->pw[i]);
  }
  stride = (stride + 15) / 16 * 16;
  for (int i = 0; i < g->n_ops; i++) {
    if (s->wino[i])
      gpunet_wino_set_thread_stride (s->wino[i], stride);
    if (s->dw[i])
      gpunet_dw_set_thread_stride (s->dw[i], stride);
  }
  need = stride * (size_t) s->nt;
  if ((need && !(s->own_scratch = gpunet_blk_alloc (need)))
      || (sums && !(s->sums_scratch = gpunet_blk_alloc (sums))))
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY,
        "out of memory allocating %zu bytes of Winograd, depthwise and 1x1 scratch",
        (need + sums) * sizeof (float));
  /* Chains: runs of our 3x3 stride-1 Winograd ops, each reading the previous one's output,
   * none adding a residual (GPUNet-0/2's and P0/P1's stage-1 convolutions).  Run
   * interleaved by tile rows, a layer's input is still in the caches when read instead of
   * coming back from memory (docs/performance.md).  chain=off: each on its own. */
  if (s->opt.chain == GPUNET_CPU_OFF)
    return GPUNET_OK;
  for (int i = 0; i < g->n_ops;) {
    int len = 1;
    while (s->wino[i] && i + len < g->n_ops && len < WINO_CHAIN_MAX) {
      const gpunet_op *a = &g->ops[i + len - 1], *b = &g->ops[i + len];
      if (!s->wino[i + len] || b->in != a->out || a->residual >= 0 || b->residual >= 0
          || !gpunet_wino_chains (s->wino[i + len - 1], s->wino[i + len])
          || !chain_buffers_ok (s, i, len + 1))
        break;
      len++;
    }
    if (len > 1)
      s->chain[i] = len;
    i += len;
  }
  return GPUNET_OK;
}

static gpunet_status
fast_plan_graph (const gpunet_graph *graph, const gpunet_session_params *params, void **state,
    char **err)
{
  const int op_index = -1;
  gpunet_status st = GPUNET_OK;
  fast_state *s = calloc (1, sizeof *s);
  if (!s)
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory planning the fast CPU backend");
  s->g = graph;
  s->max_batch = params->max_batch > 0 ? params->max_batch : 1;
  s->nt = params->n_threads > 0 ? params->n_threads : omp_get_num_procs ();
  s->opt = params->cpu;
  s->blk = choose_block (&s->opt);
  const int saved_threads = omp_get_max_threads ();
  omp_set_num_threads (s->nt);   /* oneDNN sizes its kernels for this count */

  TRY (dnnl_engine_create (&s->eng, dnnl_cpu, 0));
  TRY (dnnl_stream_create (&s->stream, s->eng, dnnl_stream_default_flags));

  s->t = calloc ((size_t) graph->n_tensors, sizeof *s->t);
  s->copy_residual = calloc ((size_t) graph->n_ops, sizeof (int));
  s->weights = calloc ((size_t) graph->n_ops, sizeof *s->weights);
  s->plans = calloc ((size_t) s->max_batch + 1, sizeof *s->plans);
  s->wino = calloc ((size_t) graph->n_ops, sizeof *s->wino);
  s->dw = calloc ((size_t) graph->n_ops, sizeof *s->dw);
  s->pw = calloc ((size_t) graph->n_ops, sizeof *s->pw);
  s->defer_act = calloc ((size_t) graph->n_ops, sizeof (int));
  s->chain = calloc ((size_t) graph->n_ops, sizeof (int));
  s->se = calloc ((size_t) graph->n_ops, sizeof *s->se);
  s->dw_in_act = calloc ((size_t) graph->n_ops, sizeof (int));
  if (!s->t || !s->copy_residual || !s->weights || !s->plans || !s->wino || !s->dw || !s->pw
      || !s->dw_in_act
      || !s->defer_act || !s->chain || !s->se
      || plan_buffers (s) != 0) {
    st = gpunet_fail (err, GPUNET_ERR_NO_MEMORY,
        "out of memory allocating activation buffers for batch %d", s->max_batch);
    goto out;
  }
  size_t se_need = 1, trace_need = 1;
  for (int i = 0; i < graph->n_ops; i++) {
    const gpunet_op *op = &graph->ops[i];
    if (op->kind == GPUNET_OP_SE) {
      size_t need = (size_t) s->t[op->out].cp + (size_t) op->p.se.rd;
      if (need > se_need)
        se_need = need;
    }
    const gpunet_tensor_desc *d = &graph->tensors[op->out];
    size_t elems = (size_t) d->c * (size_t) d->h * (size_t) d->w;
    if (elems > trace_need)
      trace_need = elems;
  }
  s->se_scratch = gpunet_blk_alloc (se_need * (size_t) s->max_batch);
  s->trace_buf = gpunet_blk_alloc (trace_need * (size_t) s->max_batch);
  if (!s->se_scratch || !s->trace_buf) {
    st = gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory planning the fast CPU backend");
    goto out;
  }
  st = plan_own_dw (s, err);
  if (st == GPUNET_OK)
    st = plan_own_se (s, err);
  if (st == GPUNET_OK)
    st = plan_own_pw (s, err);
  if (st == GPUNET_OK)
    st = plan_winograd (s, err);
  if (st == GPUNET_OK)
    st = plan_batch (s, s->max_batch, err);
  if (st == GPUNET_OK && s->max_batch > 1)
    st = plan_batch (s, 1, err);
out:
  omp_set_num_threads (saved_threads);
  if (st != GPUNET_OK) {
    fast_destroy (s);
    return st;
  }
  *state = s;
  return GPUNET_OK;
}

static gpunet_status
run (fast_state *s, fast_plan *p, const float *input, float *logits, gpunet_trace_func trace,
    void *trace_user, char **err)
{
  const gpunet_graph *g = s->g;
  const int n = p->n, nt = s->nt;
  gpunet_status st = GPUNET_OK;
  int op_index = -1;
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    const fast_tensor *ti = &s->t[op->in], *to = &s->t[op->out];
    const gpunet_tensor_desc *d = &g->tensors[op->out];
    const long hw = (long) d->h * d->w;
    float *out = tensor_ptr (s, op->out, input);
    const double t0 = s->profile ? now_s () : 0.0;
    op_index = i;
    if (s->chain[i] > 1 && !trace) {
      /* a chain of Winograd ops (plan_winograd); with a trace, each runs on its own, since
       * a layer's output may share its buffer with a later layer's */
      const int len = s->chain[i];
      const gpunet_wino *ps[WINO_CHAIN_MAX];
      const float *ins[WINO_CHAIN_MAX];
      float *outs[WINO_CHAIN_MAX];
      for (int l = 0; l < len; l++) {
        ps[l] = s->wino[i + l];
        ins[l] = tensor_ptr (s, g->ops[i + l].in, input);
        outs[l] = tensor_ptr (s, g->ops[i + l].out, input);
      }
      gpunet_wino_run_chain (ps, len, ins, outs, n, s->own_scratch, nt);
      if (s->profile) {   /* the chain's time shared out by multiply-adds */
        const double dt = now_s () - t0;
        double macs = 0.0;
        for (int l = 0; l < len; l++)
          macs += gpunet_op_macs (&g->ops[i + l]);
        for (int l = 0; l < len; l++)
          s->profile[i + l] += macs > 0.0 ? dt * gpunet_op_macs (&g->ops[i + l]) / macs : 0.0;
      }
      i += len - 1;
      continue;
    }
    switch (op->kind) {
      case GPUNET_OP_CONV2D:
      case GPUNET_OP_DWCONV2D: {
        fast_step *step = &p->steps[i];
        if (s->dw[i]) {
          gpunet_dw_run (s->dw[i],
              tensor_ptr (s, op->in, input), out, n, s->own_scratch, nt);
          break;
        }
        if (s->wino[i] || s->pw[i]) {
          if (s->copy_residual[i]) {
            const fast_tensor *tr = &s->t[op->residual];
            gpunet_blk_relayout (tensor_ptr (s, op->residual, input), tr->blk, tr->cp,
                out, to->blk, to->cp, n, d->c, hw, nt);
          }
          if (s->pw[i])
            gpunet_pw_run (s->pw[i], tensor_ptr (s, op->in, input), out, n,
                op->residual >= 0, s->sums_scratch, nt);
          else
            gpunet_wino_run (s->wino[i],
                tensor_ptr (s, op->in, input), out, n,
                op->residual >= 0, s->own_scratch, nt);
          break;
        }
        if (op->in == g->input)
          TRY (dnnl_memory_set_data_handle (step->src, (void *) input));
        if (s->copy_residual[i]) {
          const fast_tensor *tr = &s->t[op->residual];
          gpunet_blk_relayout (tensor_ptr (s, op->residual, input), tr->blk, tr->cp,
              out, to->blk, to->cp, n, d->c, hw, nt);
        }
        dnnl_exec_arg_t args[5] = {
          { DNNL_ARG_SRC, step->src }, { DNNL_ARG_WEIGHTS, step->wei }, { DNNL_ARG_DST, step->dst },
          { DNNL_ARG_SCRATCHPAD, step->scratch }, { DNNL_ARG_BIAS, step->bias } };
        int nargs = 3;
        if (step->scratch)
          nargs++;
        if (step->bias)
          args[nargs++] = (dnnl_exec_arg_t) { DNNL_ARG_BIAS, step->bias };
        TRY (dnnl_primitive_execute (step->prim, s->stream, nargs, args));
        TRY (dnnl_stream_wait (s->stream));
        break;
      }
      case GPUNET_OP_SE:
        if (s->se[i])
          gpunet_se_run (s->se[i], out, n, nt);
        else
          gpunet_blk_se (&op->p.se, out, to->blk, to->cp, n, s->se_scratch, nt);
        break;
      case GPUNET_OP_AVGPOOL:
        gpunet_blk_avgpool (&op->p.avgpool, tensor_ptr (s, op->in, input), ti->blk, ti->cp,
            out, n, nt);
        break;
      case GPUNET_OP_LINEAR:
        if (gpunet_wino_available (s->blk))
          gpunet_linear_run (&op->p.linear, tensor_ptr (s, op->in, input), ti->cp, out, n,
              s->blk, nt);
        else
          gpunet_blk_linear (&op->p.linear, tensor_ptr (s, op->in, input), ti->cp, out, n, nt);
        break;
    }
    if (s->profile)
      s->profile[i] += now_s () - t0;
    if (trace && d->block >= 0 && (i + 1 == g->n_ops || g->ops[i + 1].out != op->out)) {
      const float *plain = out;
      if (to->blk != 1 || to->cp != d->c) {
        gpunet_blk_relayout (out, to->blk, to->cp, s->trace_buf, 1, d->c, n, d->c, hw, nt);
        plain = s->trace_buf;
      }
      trace (trace_user, d->block, plain, n, d->c, d->h, d->w);
    }
  }
  const fast_tensor *tout = &s->t[g->output];
  const gpunet_tensor_desc *o = &g->tensors[g->output];
  gpunet_blk_relayout (tensor_ptr (s, g->output, input), tout->blk, tout->cp, logits, 1, o->c,
      n, o->c, (long) o->h * o->w, 1);
out:
  return st;
}

static gpunet_status
fast_forward (void *state, const float *input, int n, float *logits, gpunet_trace_func trace,
    void *trace_user, char **err)
{
  fast_state *s = state;
  if (n < 1 || n > s->max_batch)
    return gpunet_fail (err, GPUNET_ERR_INVALID_ARGUMENT,
        "batch of %d images, but the session was planned for 1 to %d", n, s->max_batch);
  const int cores = cores_acquire (s->nt);
  const int saved_threads = omp_get_max_threads ();
  omp_set_num_threads (s->nt);
  gpunet_status st = GPUNET_OK;
  if (!s->plans[n])
    st = plan_batch (s, n, err);   /* a batch size between 1 and max_batch, first seen */
  if (st == GPUNET_OK)
    st = run (s, s->plans[n], input, logits, trace, trace_user, err);
  omp_set_num_threads (saved_threads);
  cores_release (cores);
  return st;
}

void
gpunet_onednn_profile (void *state, double *op_seconds)
{
  ((fast_state *) state)->profile = op_seconds;
}

int
gpunet_onednn_chained_ops (const void *state)
{
  const fast_state *s = state;
  int n = 0;
  for (int i = 0; i < s->g->n_ops; i++)
    n += s->chain[i];
  return n;
}

int
gpunet_onednn_wino_tile (const void *state, int op)
{
  const fast_state *s = state;
  return op >= 0 && op < s->g->n_ops && s->wino[op] ? gpunet_wino_tile (s->wino[op]) : 0;
}

int
gpunet_onednn_wino_ops (const void *state)
{
  const fast_state *s = state;
  int n = 0;
  for (int i = 0; i < s->g->n_ops; i++)
    n += s->wino[i] != NULL;
  return n;
}

int
gpunet_onednn_strassen_ops (const void *state)
{
  const fast_state *s = state;
  int n = 0;
  for (int i = 0; i < s->g->n_ops; i++)
    n += s->pw[i] && gpunet_pw_is_strassen (s->pw[i]);
  return n;
}

const gpunet_backend gpunet_backend_cpu_fast = {
  .name = "cpu",
  .plan = fast_plan_graph,
  .forward = fast_forward,
  .destroy = fast_destroy,
};
