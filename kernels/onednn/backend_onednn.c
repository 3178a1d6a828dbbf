/* backend_onednn.c: the fast CPU backend: per session, one record per graph op (fast_op:
 * what runs it, its kernel plan, its flags), filled at plan time by one pure selection
 * function (select_impl: op + options + CPU -> impl) and two passes over the records
 * (activations moved into depthwise ops, scratch), then run by one loop with one switch.
 * Activations stay in oneDNN's blocked layout between layers (nChw16c with AVX-512,
 * nChw8c with AVX2); the convolutions left to oneDNN are in onednn_conv.c. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "kernel_error.h"
#include "activation.h"
#include "cpu_paths.h"
#include "blocked_ops.h"
#include "linear.h"
#include "backend_onednn.h"
#include "onednn_state.h"

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

/* The channel block of the activations between layers: 16 (nChw16c, one AVX-512 vector)
 * where oneDNN runs AVX-512 kernels, else 8 (nChw8c, one AVX2 vector): oneDNN 2.6 has no
 * AVX2 kernels for nChw16c and falls back to reference ones, tens of times slower (on
 * AVX-512 it runs nChw8c with its AVX2 kernels).  The option block=8 or 16 forces it
 * (tests run the 8-channel path on AVX-512 machines with it). */
static int
choose_block (const gpunet_cpu_options *o)
{
  if (o->block == 8 || o->block == 16)
    return o->block;
  if (o->simd != GPUNET_CPU_SIMD_AUTO)
    return 8;   /* our 16-channel kernels are AVX-512 ones */
  const unsigned isa = (unsigned) dnnl_get_effective_cpu_isa ();
  const unsigned avx512 = (unsigned) dnnl_cpu_isa_avx512_core;
  return (isa & avx512) == avx512 ? 16 : 8;
}

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static float *
tensor_ptr (const fast_state *s, int t, const float *input)
{
  return t == s->g->input ? (float *) input : s->bufs[s->t[t].buf];
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
    /* a depthwise op right after a 1x1 convolution may read that one's input instead
     * (gpunet_onednn_xdw_fuse): its output must not take that input's buffer */
    const int xin = !s->int8 && s->opt.xdw != 1 && i > 0
        && op->kind == GPUNET_OP_DWCONV2D && g->ops[i - 1].kind == GPUNET_OP_CONV2D
        && g->ops[i - 1].out == op->in && g->ops[i - 1].p.conv2d.kernel == 1
        ? g->ops[i - 1].in : -1;
    int uses[4] = { op->in, op->residual, op->out, xin };
    for (int j = 0; j < 4; j++)
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
          s->ops[i].copy_residual = 1;
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

/* What this CPU runs of ours on blk-channel blocks */
typedef struct {
  int own;   /* Winograd, depthwise, SE, classifier: AVX-512 (blk 16) or AVX2 + FMA (8) */
  int pw;    /* 1x1: AVX-512 only */
} fast_isa;

/* The stride-1 convolutions of the first stage, those reading a tensor of the network's
 * largest activation size (the stem's output in every GPUNet), run on our F(3x3, 3x3)
 * Winograd, not F(4x4, 3x3): the rounding there reaches the logits most.  With
 * measured BatchNorm statistics (tests/test_exact.c, as tools/compare_pytorch.py gives
 * them) and a float64 forward as the reference, GPUNet-D2's two 48->48 stage-1 layers
 * cost 5.3e-5 of the largest logit with F(4x4, 3x3) and 8.9e-5 with F(6x6, 3x3), 2.3e-5
 * with F(3x3, 3x3) and 1.2e-5 with oneDNN's direct kernel (the bound is 5e-5); on the
 * whole of GPUNet-P1 F(4x4) gave 2.4e-5, F(3x3) 1.6e-5.  Our Winograd on the first
 * stage's strided layers (GPUNet-2's and P1's 5x5 stride-2 ones, their largest
 * convolutions) and on every later layer adds little: at most 1.6e-5 over the seven models
 * with F(4x4, 3x3).  Returns the input size (h x w) from which a convolution is
 * first-stage. */
static long
first_stage_hw (const gpunet_graph *g)
{
  long hw = 0;
  for (int t = 0; t < g->n_tensors; t++)
    if (t != g->input && (long) g->tensors[t].h * g->tensors[t].w > hw)
      hw = (long) g->tensors[t].h * g->tensors[t].w;
  return hw > 0 ? hw : 1;
}

/* Whether our Winograd kernels (winograd.h) take dense convolution p between blocked
 * tensors: 3x3 stride 1 or 2, 5x5 stride 2.  Measured in GPUNet-0/1/2 (docs/performance.md),
 * ours is ahead of oneDNN 2.6's direct kernels by 1.3-2x and level with or ahead of its
 * Winograd kernel where that one takes the shape (it turns most GPUNet shapes down).  With
 * AVX2 the 3x3 stride-2 ones (F(4x4, 2x2) on the phase images) measured, per-op minima over
 * 4-6 alternating rounds: GPUNet-1 2.09 -> 1.47 and 3.27 -> 2.85 ms, GPUNet-2 1.11 -> 0.95,
 * GPUNet-P0/P1 level, GPUNet-0 level and 0.93 -> 1.07 ms; a rule leaving those with over
 * 1 MiB of transformed weights to oneDNN gained under 1% of a pass and was dropped.  Being
 * ours everywhere also makes a batch of n give the same bits as n single frames. */
static int
wino_shape (const gpunet_conv2d_params *p)
{
  return p->groups == 1
      && ((p->kernel == 3 && p->stride <= 2) || (p->kernel == 5 && p->stride == 2))
      && p->oh == (p->ih + 2 * p->pad - p->kernel) / p->stride + 1
      && p->ow == (p->iw + 2 * p->pad - p->kernel) / p->stride + 1;
}

/* What runs op i of g, given the tensors' layouts t, the session's block, the options and
 * what the CPU runs; pure.
 *   - dense 1x1 stride 1 not on the graph input: ours with AVX-512 (oneDNN's jit_1x1 ran
 *     GPUNet's at 0.90-0.94 of the FMA peak, ours at 0.95-0.99); pw=onednn: oneDNN.
 *   - dense Winograd shapes (wino_shape): ours, F(3x3, 3x3) on the first stage's stride-1
 *     layers (first_hw) unless winograd=own (F(4x4) there too); winograd=onednn or off:
 *     oneDNN.
 *   - depthwise: ours (oneDNN's jit_dw measured level in whole passes, but ours takes
 *     the expansions' activations, below).
 *   - squeeze-excite and the classifier: our vector kernels where the CPU runs them.
 * Everything else, and everything on a plain (unblocked) tensor: oneDNN or the plain
 * blocked ops. */
/* pw=auto's CPU rule: oneDNN's jit_1x1 on AMD family 26 (Zen 5), where a same-run A/B
 * over the seven GPUNets (gpunet-bench --ab pw=onednn, 2-vCPU EPYC, 2026-11-28) gave
 * 0.91-1.00 of ours (P1 0.91, D2 0.92, P0 0.93, G1 0.96, G2 0.97, D1 0.99, G0 1.00); ours
 * elsewhere (Zen 4 and Intel measured it ahead: docs/performance.md, "Options"). */
static int
pw_auto_prefers_onednn (void)
{
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid (0, &a, &b, &c, &d) || b != 0x68747541u /* "Auth" */
      || d != 0x69746e65u /* "enti" */ || c != 0x444d4163u /* "cAMD" */ )
    return 0;
  if (!__get_cpuid (1, &a, &b, &c, &d))
    return 0;
  const unsigned family = ((a >> 8) & 0xf) + (((a >> 8) & 0xf) == 0xf ? (a >> 20) & 0xff : 0);
  return family == 0x1a;
#else
  return 0;
#endif
}

static gpunet_onednn_impl
select_impl (const gpunet_graph *g, int i, const fast_tensor *t, int blk, long first_hw,
    const gpunet_cpu_options *o, fast_isa isa, int bf16, int bf16_wino)
{
  const gpunet_op *op = &g->ops[i];
  const int blocked = op->in != g->input && t[op->in].blk == blk && t[op->out].blk == blk;
  switch (op->kind) {
    case GPUNET_OP_CONV2D: {
      const gpunet_conv2d_params *p = &op->p.conv2d;
      if (bf16) {
        /* bf16: oneDNN's bf16 kernels, but our F(4x4, 3x3) Winograd (f32 arithmetic and
         * weights, bf16 activations in and out) on the stride-1 3x3 layers, a quarter of
         * the multiplies at half the rate of oneDNN's bf16 direct kernel (vdpbf16ps), and
         * on the 5x5 stride-2 ones (polyphase: 0.3 of the multiplies; GPUNet-2's 32 -> 192
         * 2.9 -> 2.2 ms).  Whole passes, --ab winograd=off on Zen 5: GPUNet-0 1.07,
         * GPUNet-1 1.09, GPUNet-2 1.10, D2 1.03, the others level (their stride-1 3x3
         * layers are the first stage's, 32 or 33 channels; F(3x3, 3x3) lost there, F(4x4)
         * did not).  Its rounding is far below bf16's, so the first stage needs no F(3x3)
         * here.  The 3x3 stride-2 ones stay oneDNN's (their polyphase form, 0.56 of the
         * multiplies, lost on three of four layers: GPUNet-1's 64 -> 256 0.45 -> 0.71 ms) */
        if (bf16_wino && blocked && isa.own && wino_shape (p)
            && (p->stride == 1 || p->kernel == 5))
          return GPUNET_ONEDNN_WINO;
        return GPUNET_ONEDNN_CONV;
      }
      if (blocked && isa.pw && o->pw != GPUNET_CPU_ONEDNN && p->kernel == 1 && p->stride == 1
          && p->pad == 0 && p->groups == 1 && p->ih == p->oh && p->iw == p->ow)
        return GPUNET_ONEDNN_PW;
      if (blocked && isa.own && wino_shape (p) && o->winograd == GPUNET_CPU_OWN)
        return GPUNET_ONEDNN_WINO;
      if (blocked && isa.own && wino_shape (p) && o->winograd == GPUNET_CPU_AUTO)
        return p->stride == 1 && (long) p->ih * p->iw >= first_hw ? GPUNET_ONEDNN_WINO3
            : GPUNET_ONEDNN_WINO;
      return GPUNET_ONEDNN_CONV;
    }
    case GPUNET_OP_DWCONV2D:
      return blocked && isa.own ? GPUNET_ONEDNN_DW : GPUNET_ONEDNN_CONV;
    case GPUNET_OP_SE:
      return isa.own && t[op->out].blk == blk ? GPUNET_ONEDNN_SE : GPUNET_ONEDNN_SE_PLAIN;
    case GPUNET_OP_AVGPOOL:
      return GPUNET_ONEDNN_AVGPOOL;
    case GPUNET_OP_LINEAR:
      return isa.own ? GPUNET_ONEDNN_LINEAR : GPUNET_ONEDNN_LINEAR_PLAIN;
  }
  return GPUNET_ONEDNN_CONV;
}

/* After select_impl: where one of our depthwise ops is the only reader of a dense
 * convolution's output (an inverted residual block's expansion), that convolution's
 * activation moves into it: oneDNN's swish post-op measured about 0.3 ms on GPUNet-2's
 * 144 -> 864 expansions at 23x23, ours 0.09-0.14 ms applied while the depthwise op copies
 * its input.  Not when the tensor is traced (a block's output), read by another op, added
 * as a residual, or the producer adds a residual itself (after its activation). */
static void
defer_activations (fast_state *s)
{
  const gpunet_graph *g = s->g;
  for (int i = 0; i < g->n_ops; i++)
    s->ops[i].act = g->ops[i].kind == GPUNET_OP_CONV2D ? g->ops[i].p.conv2d.act
        : g->ops[i].kind == GPUNET_OP_DWCONV2D ? g->ops[i].p.dwconv2d.act : GPUNET_EPI_NONE;
  for (int i = 0; i < g->n_ops; i++) {
    if (s->ops[i].impl != GPUNET_ONEDNN_DW)
      continue;
    const int t = g->ops[i].in;
    int producer = -1, first;
    for (int j = 0; j < g->n_ops; j++)
      if (g->ops[j].out == t)
        producer = j;   /* the last writer (an SE writes in place after its conv) */
    const int readers = gpunet_onednn_tensor_readers (g, t, &first);
    const gpunet_op *pr = producer >= 0 ? &g->ops[producer] : NULL;
    if (pr && pr->kind == GPUNET_OP_CONV2D && pr->residual < 0 && readers == 1
        && t != g->output && g->tensors[t].block < 0 && pr->p.conv2d.act != GPUNET_EPI_NONE) {
      s->ops[i].in_act = pr->p.conv2d.act;
      s->ops[producer].act = GPUNET_EPI_NONE;
    }
  }
}

/* After defer_activations: our kernels' plans (weights packed or transformed once). */
static gpunet_status
plan_kernels (fast_state *s, char **err)
{
  const gpunet_graph *g = s->g;
  const int strassen = s->opt.strassen == GPUNET_CPU_OFF ? GPUNET_PW_STRASSEN_OFF
      : s->opt.strassen == GPUNET_CPU_OWN ? GPUNET_PW_STRASSEN_FORCE : GPUNET_PW_STRASSEN_AUTO;
  for (int i = 0; i < g->n_ops; i++) {
    fast_op *r = &s->ops[i];
    const gpunet_op *op = r->op;
    const int cp = s->t[op->in].cp, ocp = s->t[op->out].cp;
    int ok = 1;
    switch (r->impl) {
      case GPUNET_ONEDNN_WINO:
      case GPUNET_ONEDNN_WINO3: {
        const gpunet_conv2d_params *p = &op->p.conv2d;
        ok = (r->k.wino = gpunet_wino_new (p->weight, p->bias, p->cin, p->cout, p->kernel,
                p->stride, p->pad, cp, ocp, p->ih, p->iw, p->oh, p->ow, r->act, s->blk,
                r->impl == GPUNET_ONEDNN_WINO3 ? 3 : 4)) != NULL;
        break;
      }
      case GPUNET_ONEDNN_DW:
        ok = (r->k.dw = gpunet_dw_new (&op->p.dwconv2d, r->in_act, ocp, s->blk)) != NULL;
        break;
      case GPUNET_ONEDNN_PW: {
        const gpunet_conv2d_params *p = &op->p.conv2d;
        ok = (r->k.pw = gpunet_pw_new (p->weight, p->bias, p->cin, p->cout, cp, ocp,
                (long) p->oh * p->ow, r->act, op->residual >= 0, strassen)) != NULL;
        if (ok && gpunet_pw_is_strassen (r->k.pw))
          r->impl = GPUNET_ONEDNN_PW_STRASSEN;
        break;
      }
      case GPUNET_ONEDNN_SE:
        ok = (r->k.se = gpunet_se_new (&op->p.se, ocp, s->blk, s->max_batch)) != NULL;
        break;
      default:
        break;
    }
    if (!ok)
      return gpunet_fail (err, GPUNET_ERR_NO_MEMORY,
          "out of memory planning op %d (block %d) of the fast CPU backend", i, op->block);
  }
  return GPUNET_OK;
}

/* After plan_kernels: one scratch for our Winograd and depthwise ops and one for the
 * Strassen 1x1 ops' sums.  One per-thread stride for every op: thread t's scratch always
 * starts at the same place, so its lines stay in the caches of the core that uses them. */
static gpunet_status
plan_scratch (fast_state *s, char **err)
{
  const gpunet_graph *g = s->g;
  size_t stride = 0, sums = 0;
  for (int i = 0; i < g->n_ops; i++) {
    const fast_op *r = &s->ops[i];
    const int wino = r->impl == GPUNET_ONEDNN_WINO || r->impl == GPUNET_ONEDNN_WINO3;
    const size_t f = wino ? gpunet_wino_thread_floats (r->k.wino)
        : r->impl == GPUNET_ONEDNN_DW ? gpunet_dw_thread_floats (r->k.dw) : 0;
    if (f > stride)
      stride = f;
    if ((r->impl == GPUNET_ONEDNN_PW || r->impl == GPUNET_ONEDNN_PW_STRASSEN)
        && gpunet_pw_scratch_floats (r->k.pw) > sums)
      sums = gpunet_pw_scratch_floats (r->k.pw);
  }
  stride = (stride + 15) / 16 * 16;
  for (int i = 0; i < g->n_ops; i++) {
    if (s->ops[i].impl == GPUNET_ONEDNN_WINO || s->ops[i].impl == GPUNET_ONEDNN_WINO3)
      gpunet_wino_set_thread_stride (s->ops[i].k.wino, stride);
    else if (s->ops[i].impl == GPUNET_ONEDNN_DW)
      gpunet_dw_set_thread_stride (s->ops[i].k.dw, stride);
  }
  const size_t need = stride * (size_t) s->nt;
  if ((need && !(s->own_scratch = gpunet_blk_alloc (need)))
      || (sums && !(s->sums_scratch = gpunet_blk_alloc (sums))))
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY,
        "out of memory allocating %zu bytes of Winograd, depthwise and 1x1 scratch",
        (need + sums) * sizeof (float));
  return GPUNET_OK;
}

static void
fast_destroy (void *state)
{
  fast_state *s = state;
  if (!s)
    return;
  gpunet_onednn_free_convs (s);
  for (int i = 0; s->ops && i < s->g->n_ops; i++) {
    fast_op *r = &s->ops[i];
    switch (r->impl) {
      case GPUNET_ONEDNN_WINO:
      case GPUNET_ONEDNN_WINO3:
        gpunet_wino_free (r->k.wino);
        break;
      case GPUNET_ONEDNN_DW:
        gpunet_dw_free (r->k.dw);
        break;
      case GPUNET_ONEDNN_PW:
      case GPUNET_ONEDNN_PW_STRASSEN:
        gpunet_pw_free (r->k.pw);
        break;
      case GPUNET_ONEDNN_PWB:
        gpunet_pwb_free (r->k.pwb);
        break;
      case GPUNET_ONEDNN_SE:
        gpunet_se_free (r->k.se);
        break;
      default:
        break;
    }
  }
  free (s->ops);
  free (s->int8);
  free (s->q_src);
  free (s->q_dst);
  free (s->own_scratch);
  free (s->sums_scratch);
  for (int b = 0; s->bufs && b < s->n_bufs; b++)
    free (s->bufs[b]);
  free (s->bufs);
  free (s->scratchpad);
  free (s->se_scratch);
  free (s->trace_buf);
  free (s->t);
  if (s->stream)
    dnnl_stream_destroy (s->stream);
  if (s->eng)
    dnnl_engine_destroy (s->eng);
  free (s);
}

static gpunet_status
fast_plan_graph (const gpunet_graph *graph, const gpunet_plan_params *params, void **state,
    char **err)
{
  gpunet_status st = GPUNET_OK;
  fast_state *s = calloc (1, sizeof *s);
  if (!s)
    return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory planning the fast CPU backend");
  s->g = graph;
  s->opt = params->cpu;
  s->max_batch = params->max_batch > 0 ? params->max_batch : 1;
  s->nt = params->n_threads > 0 ? params->n_threads : omp_get_num_procs ();
  if (params->precision == GPUNET_PRECISION_BF16) {
    /* bf16: the dense convolutions go to oneDNN's bf16 kernels (our own f32 1x1 kernel is
     * not used), but the 3x3 stride-1 and 5x5 stride-2 ones to our Winograd kernel, f32
     * arithmetic with bf16 activations in and out, unless winograd=onednn or off
     * (select_impl), and the 1x1 ones on small planes to our bf16 1x1 kernel (option
     * bf16pw, pwb_plan.c); SE, pooling and the classifier stay f32 (docs/performance.md,
     * "Precisions") */
    if ((st = gpunet_onednn_bf16_supported (&s->opt, err)) != GPUNET_OK) {
      free (s);
      return st;
    }
    s->bf16 = 1;
    s->opt.pw = GPUNET_CPU_ONEDNN;
    /* auto: not where oneDNN's bf16 convolutions on our tensors run on AMX (unmeasured
     * there, and AMX's rate is several times vdpbf16ps's; oneDNN 2.6 and 3.7 do not run
     * them on AMX, and there ours took 0.70-0.76 of the time of their AVX-512 BF16 kernels
     * on GPUNet-0, -1 and -2); own: there too */
    s->bf16_wino = s->opt.winograd == GPUNET_CPU_OWN
        || (s->opt.winograd == GPUNET_CPU_AUTO && !gpunet_onednn_bf16_amx ());
  }
  if (params->precision == GPUNET_PRECISION_INT8) {
    /* int8: the dense convolutions after the first go to oneDNN's int8 kernels with the
     * session's calibrated input scales (int8.c; docs/performance.md, "precision=int8") */
    if ((st = gpunet_onednn_int8_supported (err)) != GPUNET_OK) {
      free (s);
      return st;
    }
    if (!params->int8) {
      free (s);
      return gpunet_fail (err, GPUNET_ERR_INVALID_ARGUMENT, "precision=int8 needs the "
          "scales of an int8 scales file; make one with gpunet-convert --calibrate DIR");
    }
    if (!(s->int8 = malloc (sizeof *s->int8 * (size_t) graph->n_ops))) {
      free (s);
      return gpunet_fail (err, GPUNET_ERR_NO_MEMORY, "out of memory planning the fast CPU "
          "backend");
    }
    memcpy (s->int8, params->int8, sizeof *s->int8 * (size_t) graph->n_ops);
    gpunet_onednn_int8_choose (s);
    /* int8rest=auto: the layers int8 does not take (the first convolution, the narrow
     * ones, the depthwise) run in bf16 as a bf16 session runs them, with bf16
     * activations between them, where the CPU has AVX-512 BF16 or AMX (bf16_act.c);
     * bf16 activations need 16-channel blocks, so 8-channel sessions (simd=avx2,
     * block=8) keep the f32 rest, unmeasured with bf16 */
    if (!s->opt.int8_rest_f32 && choose_block (&s->opt) == 16
        && gpunet_onednn_bf16_supported (&s->opt, NULL) == GPUNET_OK) {
      s->bf16 = 1;
      s->opt.pw = GPUNET_CPU_ONEDNN;
      s->opt.winograd = GPUNET_CPU_OFF;
    }
  }
  s->blk = choose_block (&s->opt);
  const int saved_threads = omp_get_max_threads ();
  omp_set_num_threads (s->nt);   /* oneDNN sizes its kernels for this count */

  s->t = calloc ((size_t) graph->n_tensors, sizeof *s->t);
  s->ops = calloc ((size_t) graph->n_ops, sizeof *s->ops);
  s->plans = calloc ((size_t) s->max_batch + 1, sizeof *s->plans);
  if (!s->t || !s->ops || !s->plans || plan_buffers (s) != 0) {
    st = gpunet_fail (err, GPUNET_ERR_NO_MEMORY,
        "out of memory allocating activation buffers for batch %d", s->max_batch);
    goto out;
  }
  st = gpunet_onednn_engine (s, err);
  if (st != GPUNET_OK)
    goto out;
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
  /* simd=portable: none of our vector kernels (the plain blocked ops; oneDNN for the
   * convolutions); simd=avx2 keeps the 8-channel block, whose kernels are AVX2 ones */
  const int own_simd = s->opt.simd != GPUNET_CPU_SIMD_PORTABLE;
  if (s->opt.pw == GPUNET_CPU_AUTO && pw_auto_prefers_onednn ())
    s->opt.pw = GPUNET_CPU_ONEDNN;
  const fast_isa isa = { own_simd && gpunet_wino_available (s->blk),
    own_simd && gpunet_pw_available (s->blk) };
  const long first_hw = first_stage_hw (graph);
  for (int i = 0; i < graph->n_ops; i++) {
    s->ops[i].op = &graph->ops[i];
    s->ops[i].impl = select_impl (graph, i, s->t, s->blk, first_hw, &s->opt, isa, s->bf16,
        s->bf16_wino);
    if (s->int8 && s->int8[i].scale > 0.0f)   /* int8: oneDNN's int8 kernels */
      s->ops[i].impl = GPUNET_ONEDNN_CONV;
  }
  defer_activations (s);
  st = plan_kernels (s, err);
  if (st == GPUNET_OK) {
    gpunet_onednn_bf16_tensors (s);
    gpunet_onednn_int8_fuse (s);
    gpunet_onednn_xdw_fuse (s);
    gpunet_onednn_pwb_choose (s);
    st = plan_scratch (s, err);
  }
  if (st == GPUNET_OK)
    st = gpunet_onednn_plan_batch (s, s->max_batch, err);
  if (st == GPUNET_OK && s->max_batch > 1)
    st = gpunet_onednn_plan_batch (s, 1, err);
out:
  omp_set_num_threads (saved_threads);
  if (st != GPUNET_OK) {
    fast_destroy (s);
    return st;
  }
  *state = s;
  return GPUNET_OK;
}

/* The forward pass: one record after the other, one switch. */
static gpunet_status
run (fast_state *s, fast_plan *p, const float *input, float *logits, gpunet_trace_func trace,
    void *trace_user, char **err)
{
  const gpunet_graph *g = s->g;
  const int n = p->n, nt = s->nt;
  gpunet_status st = GPUNET_OK;
  for (int i = 0; i < g->n_ops && st == GPUNET_OK; i++) {
    const fast_op *r = &s->ops[i];
    const gpunet_op *op = r->op;
    const fast_tensor *ti = &s->t[op->in], *to = &s->t[op->out];
    const gpunet_tensor_desc *d = &g->tensors[op->out];
    const long hw = (long) d->h * d->w;
    const float *in = tensor_ptr (s, op->in, input);
    float *out = tensor_ptr (s, op->out, input);
    const double t0 = s->profile ? now_s () : 0.0;
    if (r->copy_residual) {
      const fast_tensor *tr = &s->t[op->residual];
      gpunet_blk_relayout (tensor_ptr (s, op->residual, input), tr->blk, tr->cp, out, to->blk,
          to->cp, n, d->c, hw, nt);
    }
    switch (r->impl) {
      case GPUNET_ONEDNN_CONV:
        st = gpunet_onednn_run_conv (s, p, i, input, err);
        break;
      case GPUNET_ONEDNN_WINO:
      case GPUNET_ONEDNN_WINO3:
        gpunet_wino_run (r->k.wino, in, out, n, op->residual >= 0, s->own_scratch, nt);
        break;
      case GPUNET_ONEDNN_DW:   /* int8 neighbours: their nhwc buffers (int8.c); a fused
                                * expansion: its input */
        gpunet_dw_run (r->k.dw, i > 0 && s->ops[i - 1].impl == GPUNET_ONEDNN_XDW
            ? tensor_ptr (s, g->ops[i - 1].in, input)
            : i > 0 && s->ops[i - 1].q8_out_nhwc ? s->q_dst : in,
            i + 1 < g->n_ops && s->ops[i + 1].q8_in_nhwc ? s->q_src : out, n,
            s->own_scratch, nt);
        break;
      case GPUNET_ONEDNN_PW:
      case GPUNET_ONEDNN_PW_STRASSEN:
        gpunet_pw_run (r->k.pw, in, out, n, op->residual >= 0, s->sums_scratch, nt);
        break;
      case GPUNET_ONEDNN_PWB:
        gpunet_pwb_run (r->k.pwb, (const uint16_t *) in, out, n, op->residual >= 0, nt);
        break;
      case GPUNET_ONEDNN_SE:
        gpunet_se_run (r->k.se, out, n, nt);
        break;
      case GPUNET_ONEDNN_SE_PLAIN:
        gpunet_blk_se (&op->p.se, out, to->blk, to->cp, n, s->se_scratch, nt);
        break;
      case GPUNET_ONEDNN_AVGPOOL:
        gpunet_blk_avgpool (&op->p.avgpool, in, ti->blk, ti->cp, out, n, nt);
        break;
      case GPUNET_ONEDNN_LINEAR:
        gpunet_linear_run (&op->p.linear, in, ti->cp, out, n, s->blk, nt);
        break;
      case GPUNET_ONEDNN_LINEAR_PLAIN:
        gpunet_blk_linear (&op->p.linear, in, ti->cp, out, n, nt);
        break;
      case GPUNET_ONEDNN_XDW:   /* runs inside the depthwise op after it */
      case GPUNET_ONEDNN_IMPLS:
        break;
    }
    if (s->profile)
      s->profile[i] += now_s () - t0;
    if (trace && d->block >= 0 && (i + 1 == g->n_ops || g->ops[i + 1].out != op->out)) {
      const float *plain = out;
      if (to->bf) {
        gpunet_onednn_bf16_to_plain ((const uint16_t *) out, to->blk, to->cp, s->trace_buf, n,
            d->c, hw);
        plain = s->trace_buf;
      } else if (to->blk != 1 || to->cp != d->c) {
        gpunet_blk_relayout (out, to->blk, to->cp, s->trace_buf, 1, d->c, n, d->c, hw, nt);
        plain = s->trace_buf;
      }
      trace (trace_user, d->block, plain, n, d->c, d->h, d->w);
    }
  }
  if (st != GPUNET_OK)
    return st;
  const fast_tensor *tout = &s->t[g->output];
  const gpunet_tensor_desc *o = &g->tensors[g->output];
  gpunet_blk_relayout (tensor_ptr (s, g->output, input), tout->blk, tout->cp, logits, 1, o->c,
      n, o->c, (long) o->h * o->w, 1);
  return GPUNET_OK;
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
    st = gpunet_onednn_plan_batch (s, n, err);   /* a batch size between 1 and max_batch */
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
gpunet_onednn_op_impl (const void *state, int op)
{
  const fast_state *s = state;
  return op >= 0 && op < s->g->n_ops ? (int) s->ops[op].impl : -1;
}

unsigned
gpunet_onednn_cpu_paths (const void *state)
{
  const fast_state *s = state;
  const unsigned vec = s->blk == 16 ? GPUNET_CPU_PATH_AVX512 : GPUNET_CPU_PATH_AVX2;
  unsigned paths = 0;
  for (int i = 0; i < s->g->n_ops; i++)
    switch (s->ops[i].impl) {
      case GPUNET_ONEDNN_WINO:
      case GPUNET_ONEDNN_WINO3:
      case GPUNET_ONEDNN_DW:
      case GPUNET_ONEDNN_SE:
      case GPUNET_ONEDNN_LINEAR:
        paths |= vec;
        break;
      case GPUNET_ONEDNN_PW:
      case GPUNET_ONEDNN_PW_STRASSEN:
      case GPUNET_ONEDNN_PWB:
        paths |= GPUNET_CPU_PATH_AVX512;
        break;
      case GPUNET_ONEDNN_SE_PLAIN:
      case GPUNET_ONEDNN_LINEAR_PLAIN:
        paths |= GPUNET_CPU_PATH_PORTABLE;
        break;
      default:   /* oneDNN's primitives; the average pool has one (plain) form */
        break;
    }
  return paths;
}

const gpunet_backend gpunet_backend_cpu_fast = {
  .name = "cpu",
  .plan = fast_plan_graph,
  .forward = fast_forward,
  .destroy = fast_destroy,
};
