/* gpunet-bench: times a GPUNet forward pass on a CPU backend (the fast oneDNN path or the
 * reference) or the CUDA backend (--backend cuda, --precision), optionally per op (fast:
 * host clock around each op; cuda: cudaEvent pairs on the stream) with FLOP and minimum
 * byte counts, optionally over a sweep of batch sizes, beside a oneDNN sgemm peak and the
 * fused 1080p NV12 preprocess measured in the same run.  CUDA also times the network
 * alone as back-to-back CUDA graph replays (gpu_net_ms=) and, with --graph-nodes, counts
 * the captured graph's kernels.  Without --checkpoint it uses seeded random weights.  The last line is machine-readable: model= batch= threads=
 * median_ms= min_ms= gflops= achieved_gflops_s= */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "gpunet.h"
#include "gpunet-internal.h"
#include "gpunet-tool-args.h"
#include "gpunet-vnni-peak.h"
#include "cuda/cuda_cost.h"       /* per-op MACs and minimum bytes */
#include "cuda/cuda_module.h"     /* the CUDA module's bench API */
#include "registry.h"             /* gpunet_backend_find */
#ifdef GPUNET_HAVE_ONEDNN
#include "cpu_module.h"             /* the CPU module's bench API */
#endif

static void
usage (FILE *f)
{
  fprintf (f,
      "usage: gpunet-bench --model NAME_OR_JSON [--checkpoint FILE] [--batch N] [--threads T]\n"
      "                    [--runs R] [--warmup W] [--per-layer] [--backend cpu|cpu-ref|cuda]\n"
      "                    [--precision auto|fp32|fp16|bf16|int8] [--scales FILE] [--batch-sweep]\n"
      "                    [--preprocess-runs P]\n"
      "                    [--stdin-runs] [--cuda-fused] [--cpu SPEC] [--cuda SPEC] [--ab SPEC]\n"
      "                    [--no-peak] [--graph-nodes] [--net-groups G] [--net-replays R]\n"
      "\n"
      "  --model       built-in name (gpunet-0 ... gpunet-d2) or an architecture JSON\n"
      "  --checkpoint  weights; without it, seeded random weights of realistic scale\n"
      "  --batch       images per forward pass (default 1)\n"
      "  --threads     CPU threads (default 2; 0 = all cores); a list (1,2,4,8,16) runs the\n"
      "                whole benchmark once per value, one after the other\n"
      "  --runs        timed forward passes (default 20); --warmup untimed ones first (default 3)\n"
      "  --stdin-runs  instead of --runs: after the warm-up, prints 'ready', then reads whole\n"
      "                numbers from standard input, one per line; for each N > 0 times N forward\n"
      "                passes and prints 'times_ms=T1,...,TN'; at 0 or end of input the summary\n"
      "                covers every pass timed (for a driver that interleaves another program's\n"
      "                passes with ours: tools/compare_pytorch.py)\n"
      "  --preprocess-runs  timed runs of the 1080p NV12 preprocess, its plan built once as a\n"
      "                session keeps it (default 20; 0: not timed)\n"
      "  --per-layer   also prints the time of every op (fast: host clock around each op,\n"
      "                median over the runs; cuda: GPU time between cudaEvents recorded on the\n"
      "                stream around each op, plain launches, median over the runs after the\n"
      "                warm-up ones) with its GFLOP/s and minimum traffic in MB (input, output,\n"
      "                weights and residual, 4 bytes per value in fp32, 2 in fp16, biases 4),\n"
      "                or of every block (ref: mean)\n"
      "  --batch-sweep also times batches 1, 2, 4, ... 64, each planned on its own, one line\n"
      "                each (batch= median_ms= min_ms= images_per_s= achieved_gflops_s=);\n"
      "                stops at the first batch the backend cannot plan or run\n"
      "  --backend     cpu (oneDNN, the default), cpu-ref (the plain reference ops) or cuda\n"
      "                (host input to host logits, wall time per synchronised forward pass)\n"
      "  --precision   CUDA arithmetic: auto (fp16 with tensor cores, the default), fp32, fp16;\n"
      "                fast CPU backend: bf16 (bf16 convolutions, f32 accumulation), int8\n"
      "                (int8 convolutions with the scales of --scales FILE, written by\n"
      "                gpunet-convert --calibrate for the same model and weights; --scales\n"
      "                without --precision int8 is refused) or f32;\n"
      "                otherwise (auto, fp32, fp16) the CPU backends run fp32\n"
      "  --no-peak     skip the oneDNN sgemm reference line (1-2 s a run; quick checks)\n"
      "  --graph-nodes CUDA: captures one forward pass and one network pass as CUDA graphs\n"
      "                (not run) and prints their nodes by type: graph_nodes= lines and\n"
      "                graph_kernels= (kernel nodes of the captured forward pass)\n"
      "  --net-groups, --net-replays  CUDA: gpu_net_ms is the median of G groups (default\n"
      "                10) of R back-to-back replays (default 50) of the network alone as a\n"
      "                CUDA graph, events around each group (tools/pytorch_baseline.py's\n"
      "                timing); --net-groups 0 skips it\n"
      "  --cuda-fused[=N]  CUDA: the opt-in fused path (session parameter cuda_fused):\n"
      "                2 (the default of the flag) the NHWC network in fp16, each convolution\n"
      "                one cuDNN graph with its epilogue; 1 the fused head and squeeze-excite\n"
      "                kernels only (docs/cuda.md, Fused path)\n"
      "  --cpu SPEC    fast CPU backend options, key=value,... as in the environment\n"
      "                variable GPUNET_CPU (which sessions read; this tool plans the backend\n"
      "                directly and reads only --cpu): winograd=auto|own|onednn|off,\n"
      "                pw=auto|own|onednn, strassen=auto|own|off, block=auto|8|16,\n"
      "                wait=auto|spin|passive (--ab cannot change wait: one per process)\n"
      "                (docs/performance.md, Options)\n"
      "  --cuda SPEC   CUDA backend options, key=value,... as in the environment variable\n"
      "                GPUNET_CUDA (which sessions read; this tool reads only --cuda):\n"
      "                graphs=on|off, dwconv=auto|direct, nhwcpad=off|on (docs/cuda.md, Options)\n"
      "  --ab SPEC     also plans a second state B, SPEC applied over A's options, and times\n"
      "                --runs pairs, A and B in turn (AB, BA, AB, ...), in this one process, so\n"
      "                a shared machine's slow phases hit both alike; prints ab_pairs=\n"
      "                a_median_ms= b_median_ms= and the median and quartiles of the per-pair\n"
      "                ratios B / A (b_over_a=, q25=, q75=); the other lines are A's.  Fast CPU\n"
      "                backend: SPEC as --cpu's, whole passes timed.  CUDA: SPEC as --cuda's\n"
      "                plus fused=0|1|2 (B's --cuda-fused level); each side of a pair is the\n"
      "                network alone, one group of --net-replays graph replays (timing=gpu_net)\n"
      "  Where more than one thread runs, cross_core_write_ns_per_line= is what writing a cache\n"
      "  line another core has just read costs (own_write_ns_per_line=: no reader), which tells\n"
      "  a VM's cores sharing an L2 (about 1 ns) or an L3 (about 7) from far apart ones (28).\n"
      "  The line before backend= gives the minimum traffic of the whole network at --batch\n"
      "  and its FLOPs per byte (bytes_mb= arith_intensity_flop_per_byte= storage_bytes=).\n");
}

static int
parse_int (const char *opt, const char *v, int lo, int hi, int *out)
{
  char *end;
  errno = 0;
  long x = v ? strtol (v, &end, 10) : 0;
  if (!v || errno || *end || end == v || x < lo || x > hi) {
    fprintf (stderr, "gpunet-bench: %s needs an integer from %d to %d, got '%s'\n", opt, lo, hi,
        v ? v : "");
    return -1;
  }
  *out = (int) x;
  return 0;
}

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static double
median (double *v, int n)
{
  qsort (v, (size_t) n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Reference backend per-block times: the gap between consecutive trace callbacks. */
typedef struct {
  double last;
  double *block_s;
  int n_blocks;
} block_timer;

static void
time_block (void *user, int block, const float *data, int n, int c, int h, int w)
{
  (void) data, (void) n, (void) c, (void) h, (void) w;
  block_timer *bt = user;
  double t = now_s ();
  if (block >= 0 && block < bt->n_blocks)
    bt->block_s[block] += t - bt->last;
  bt->last = now_s ();
}

static const char *
op_name (gpunet_op_kind k)
{
  static const char *names[] = { "conv2d", "dwconv2d", "se", "avgpool", "linear" };
  return (unsigned) k < 5 ? names[k] : "?";
}

/* The per-op table: op_ms[i] is op i's median time in ms for `batch` images; `storage`
 * the bytes per stored activation/weight value (MB column). */
static void
print_op_table (const gpunet_graph *g, int batch, const double *op_ms, int storage)
{
  double total = 0.0;
  printf ("%-4s %-5s %-8s %-26s %9s %9s %9s\n", "op", "block", "kind", "shape (in -> out)", "ms",
      "GFLOP/s", "MB");
  for (int i = 0; i < g->n_ops; i++) {
    const gpunet_op *op = &g->ops[i];
    const gpunet_tensor_desc *ti = &g->tensors[op->in], *to = &g->tensors[op->out];
    const double ms = op_ms[i];
    char shape[64];
    snprintf (shape, sizeof shape, "%dx%dx%d -> %dx%dx%d", ti->c, ti->h, ti->w, to->c, to->h,
        to->w);
    /* 0.1 us steps: a GPU op takes a few microseconds */
    printf ("%-4d %-5d %-8s %-26s %9.4f %9.1f %9.3f\n", i, op->block, op_name (op->kind), shape, ms,
        ms > 0 ? 2.0 * gpunet_op_macs (op) * batch / (ms * 1e-3) / 1e9 : 0.0,
        gpunet_op_min_bytes (op, batch, storage) / 1e6);
    total += ms;
  }
  printf ("sum of per-op medians: %.3f ms\n", total);
}

static const gpunet_cuda_bench_api *cuda_bench;   /* set with --backend cuda */

/* warmup + runs forward passes of n images; times[r] gets the wall seconds of timed run r
 * (times may be NULL), gpu_times[r] (CUDA only, else NULL) its GPU seconds from the
 * upload of the input to the logits in pinned memory (the bench API's forward_time). */
static gpunet_status
run_forward (const gpunet_backend *be, void *state, const float *input, int n, float *logits,
    int warmup, int runs, double *times, double *gpu_times, char **err)
{
  double gpu = 0.0;
  gpunet_status st = gpu_times ? cuda_bench->forward_time (state, &gpu, err) : GPUNET_OK;
  for (int i = 0; i < warmup + runs && st == GPUNET_OK; i++) {
    double t0 = now_s ();
    gpu = 0.0;
    st = be->forward (state, input, n, logits, NULL, NULL, err);
    if (i >= warmup && times)
      times[i - warmup] = now_s () - t0;
    if (i >= warmup && gpu_times)
      gpu_times[i - warmup] = gpu;
  }
  if (gpu_times)
    cuda_bench->forward_time (state, NULL, NULL);
  return st;
}

/* --stdin-runs: warmup untimed passes, 'ready', then per line N of standard input N timed
 * passes, their times printed on one line, until 0 or the end of input.  *times and
 * *gpu_times (CUDA only, else left NULL) are grown to hold them all; *runs gets the count.
 * Returns 0, 1 when a pass failed (*st, *err say why) or 2 on bad input or no memory. */
static int
run_stdin (const gpunet_backend *be, void *state, const float *input, int n, float *logits,
    int warmup, double **times, double **gpu_times, int *runs, gpunet_status *st, char **err)
{
  *runs = 0;
  *st = run_forward (be, state, input, n, logits, warmup, 0, NULL, NULL, err);
  if (*st != GPUNET_OK)
    return 1;
  printf ("ready\n");
  fflush (stdout);
  char line[64];
  int cap = 0;
  while (fgets (line, sizeof line, stdin)) {
    char *end;
    errno = 0;
    const long k = strtol (line, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
      end++;
    if (end == line || *end || errno || k < 0 || k > 1000000 || *runs + k > 100000000) {
      line[strcspn (line, "\r\n")] = '\0';
      fprintf (stderr, "gpunet-bench: --stdin-runs reads one whole number of passes (0 to "
          "1000000, 0 to finish) per line, not '%s'\n", line);
      return 2;
    }
    if (k == 0)
      break;
    if (*runs + k > cap) {
      cap = (int) (*runs + k) * 2;
      double *t = realloc (*times, sizeof (double) * (size_t) cap);
      if (t)
        *times = t;
      double *g = gpu_times && t ? realloc (*gpu_times, sizeof (double) * (size_t) cap) : NULL;
      if (g)
        *gpu_times = g;
      if (!t || (gpu_times && !g)) {
        fprintf (stderr, "gpunet-bench: out of memory\n");
        return 2;
      }
    }
    *st = run_forward (be, state, input, n, logits, 0, (int) k, *times + *runs,
        gpu_times ? *gpu_times + *runs : NULL, err);
    if (*st != GPUNET_OK)
      return 1;
    printf ("times_ms=");
    for (long i = 0; i < k; i++)
      printf ("%s%.3f", i ? "," : "", 1e3 * (*times)[*runs + i]);
    printf ("\n");
    fflush (stdout);
    *runs += (int) k;
  }
  if (*runs == 0) {
    fprintf (stderr, "gpunet-bench: --stdin-runs: standard input asked for no timed passes\n");
    return 2;
  }
  return 0;
}

/* Per-op medians (ms) over `runs` forward passes with a per-op profile hook on: `hook`
 * turns it on (op_seconds) or off (NULL) and may fail.  warmup profiled passes first. */
typedef gpunet_status (*profile_hook) (void *state, double *op_seconds, char **err);

static gpunet_status
profile_ops (const gpunet_backend *be, void *state, profile_hook hook, const float *input,
    int n, float *logits, int warmup, int runs, int n_ops, double *op_ms, char **err)
{
  double *all = malloc (sizeof (double) * ((size_t) runs * (size_t) n_ops + 1));
  double *col = malloc (sizeof (double) * ((size_t) runs + 1));
  double *cur = calloc ((size_t) n_ops + 1, sizeof (double));
  gpunet_status st = GPUNET_OK;
  if (!all || !col || !cur) {
    fprintf (stderr, "gpunet-bench: out of memory\n");
    st = GPUNET_ERR_NO_MEMORY;
  }
  for (int r = 0; r < warmup + runs && st == GPUNET_OK; r++) {
    memset (cur, 0, sizeof (double) * (size_t) n_ops);
    st = hook (state, cur, err);
    if (st == GPUNET_OK)
      st = be->forward (state, input, n, logits, NULL, NULL, err);
    gpunet_status off = hook (state, NULL, NULL);
    if (st == GPUNET_OK)
      st = off;
    if (r >= warmup)
      memcpy (all + (size_t) (r - warmup) * n_ops, cur, sizeof (double) * (size_t) n_ops);
  }
  for (int i = 0; i < n_ops && st == GPUNET_OK; i++) {
    for (int r = 0; r < runs; r++)
      col[r] = all[(size_t) r * n_ops + i];
    op_ms[i] = 1e3 * median (col, runs);
  }
  free (all);
  free (col);
  free (cur);
  return st;
}

#ifdef GPUNET_HAVE_ONEDNN
static gpunet_status
onednn_hook (void *state, double *op_seconds, char **err)
{
  const gpunet_cpu_bench_api *api = gpunet_cpu_bench_api_get (err);
  if (!api)
    return GPUNET_ERR_BACKEND_UNAVAILABLE;
  api->profile (state, op_seconds);
  return GPUNET_OK;
}
#endif

static gpunet_status
cuda_hook (void *state, double *op_seconds, char **err)
{
  return cuda_bench->profile (state, op_seconds, err);
}

/* One side of an --ab pair: `state`'s time in seconds. */
typedef struct {
  const gpunet_backend *be;
  const float *input;
  float *logits;
  int n, replays;
} ab_ctx;

/* Fast CPU backend: a whole forward pass, wall time. */
static gpunet_status
ab_forward (const ab_ctx *c, void *state, double *s, char **err)
{
  const double t0 = now_s ();
  gpunet_status st = c->be->forward (state, c->input, c->n, c->logits, NULL, NULL, err);
  *s = now_s () - t0;
  return st;
}

/* CUDA: the network alone, one group of `replays` graph replays (net_time, each call
 * capturing its graph anew). */
static gpunet_status
ab_net (const ab_ctx *c, void *state, double *s, char **err)
{
  double ms = 0.0;
  gpunet_status st = cuda_bench->net_time (state, c->n, 1, c->replays, &ms, err);
  *s = 1e-3 * ms;
  return st;
}

/* --ab: warmup passes of each state (none with a side that warms up itself), then `runs`
 * pairs, A then B in even pairs and B then A in odd ones; a_times gets A's seconds.
 * Prints the ab_ line (`timing` names the side when it is not wall time). */
static gpunet_status
run_ab (gpunet_status (*side) (const ab_ctx *, void *, double *, char **), const ab_ctx *c,
    void *a, void *b, const char *spec, const char *timing, int warmup, int runs,
    double *a_times, char **err)
{
  double *bt = malloc (sizeof (double) * (size_t) runs);
  double *ratio = malloc (sizeof (double) * (size_t) runs);
  gpunet_status st = bt && ratio ? GPUNET_OK : GPUNET_ERR_NO_MEMORY;
  if (st != GPUNET_OK)
    fprintf (stderr, "gpunet-bench: out of memory\n");
  double unused;
  for (int i = 0; i < warmup && st == GPUNET_OK; i++) {
    st = side (c, a, &unused, err);
    if (st == GPUNET_OK)
      st = side (c, b, &unused, err);
  }
  for (int r = 0; r < runs && st == GPUNET_OK; r++)
    for (int k = 0; k < 2 && st == GPUNET_OK; k++) {
      const int is_b = (r + k) % 2;   /* AB, BA, AB, ... */
      st = side (c, is_b ? b : a, is_b ? &bt[r] : &a_times[r], err);
    }
  if (st == GPUNET_OK) {
    for (int r = 0; r < runs; r++)
      ratio[r] = bt[r] / a_times[r];
    /* median () sorts: the caller's summary reads a_times in any order */
    const double rm = median (ratio, runs);
    const int digits = timing ? 4 : 3;   /* GPU network times: tenths of microseconds */
    printf ("ab_pairs=%d spec=%s%s%s a_median_ms=%.*f b_median_ms=%.*f b_over_a=%.3f q25=%.3f "
        "q75=%.3f\n", runs, spec, timing ? " timing=" : "", timing ? timing : "", digits,
        1e3 * median (a_times, runs), digits, 1e3 * median (bt, runs), rm, ratio[runs / 4],
        ratio[(3 * runs) / 4]);
  }
  free (bt);
  free (ratio);
  return st;
}

/* --ab with --backend cuda: SPEC's fused=0|1|2 sets the fused level (cuda_fused), its
 * other pairs the CUDA options (gpunet_cuda_options_parse), over *p. */
static gpunet_status
cuda_ab_apply (gpunet_session_params *p, const char *spec, char **err)
{
  char rest[256] = "";
  for (const char *item = spec; item && *item;) {
    const char *end = strchr (item, ',');
    const size_t len = end ? (size_t) (end - item) : strlen (item);
    if (len == 7 && !strncmp (item, "fused=", 6) && item[6] >= '0' && item[6] <= '2')
      p->cuda_fused = item[6] - '0';
    else if (!strncmp (item, "fused=", 6)) {
      if (err)
        *err = strdup ("--ab: fused= takes 0, 1 or 2 (the --cuda-fused levels)");
      return GPUNET_ERR_INVALID_ARGUMENT;
    } else if (strlen (rest) + len + 2 < sizeof rest) {
      if (*rest)
        strcat (rest, ",");
      strncat (rest, item, len);
    } else {
      if (err)
        *err = strdup ("--ab: too long a list of CUDA options");
      return GPUNET_ERR_INVALID_ARGUMENT;
    }
    item = end ? end + 1 : NULL;
  }
  return gpunet_cuda_options_parse (&p->cuda, rest, "--ab", err);
}

/* Batches 1, 2, 4, ... 64, each on a state planned for exactly that batch; one line each.
 * Stops (with a line saying why) at the first batch that cannot be planned or run. */
static void
batch_sweep (const gpunet_backend *be, const gpunet_graph *g, const gpunet_session_params *base,
    double flops, const float *input, float *logits, int warmup, int runs, double *times,
    double *gpu_times)
{
  for (int b = 1; b <= 64; b *= 2) {
    gpunet_session_params params = *base;
    params.max_batch = b;
    void *state = NULL;
    char *err = NULL;
    gpunet_status st = gpunet_backend_plan (be, g, &params, &state, &err);
    if (st != GPUNET_OK) {
      printf ("batch=%d not run: planning failed: %s\n", b, err ? err : gpunet_status_string (st));
      free (err);
      return;
    }
    st = run_forward (be, state, input, b, logits, warmup, runs, times, gpu_times, &err);
    be->destroy (state);
    if (st != GPUNET_OK) {
      printf ("batch=%d not run: forward failed: %s\n", b, err ? err : gpunet_status_string (st));
      free (err);
      return;
    }
    double mn = times[0];
    for (int i = 1; i < runs; i++)
      mn = times[i] < mn ? times[i] : mn;
    const double med = median (times, runs);
    printf ("batch=%d median_ms=%.3f min_ms=%.3f images_per_s=%.1f achieved_gflops_s=%.1f", b,
        1e3 * med, 1e3 * mn, b / med, flops * b / med / 1e9);
    if (gpu_times)
      printf (" gpu_median_ms=%.3f", 1e3 * median (gpu_times, runs));
    printf ("\n");
    fflush (stdout);
  }
}


/* How long one core takes to write a cache line that another core has just read, in ns
 * per line (512 KB written whole, minimum of 9 tries), and the same write with no other
 * reader, so that a run's numbers can be read against the machine's state.  On this
 * project's 2-vCPU VMs: about 0.7 where the two vCPUs share an L2, about 7 where they share
 * an L3, about 28 where they sit on different dies (each line is then taken back from the
 * other core one at a time; the CPU path runs 15-20% slower in that state,
 * docs/performance.md).  A measurement of the machine, not of the engine, so it lives
 * here rather than in kernels/.  Runs on the OpenMP threads the engine uses; -1 when
 * fewer than two threads can run. */
static void
cross_core_write_ns (double *shared_ns, double *own_ns)
{
  *shared_ns = *own_ns = -1.0;
#ifdef GPUNET_HAVE_ONEDNN
  const gpunet_cpu_bench_api *api = gpunet_cpu_bench_api_get (NULL);
  if (api)
    api->cross_core_write_ns (shared_ns, own_ns);
#endif
}

/* --no-peak: no sgemm reference (about 1-2 s per run; the tests skip it) */
static int no_peak;

/* Median GFLOP/s of a 2048^3 oneDNN sgemm on the current thread count, 0 when not built. */
static double
sgemm_peak (int threads)
{
#ifdef GPUNET_HAVE_ONEDNN
  if (no_peak)
    return -1.0;
  const gpunet_cpu_bench_api *api = gpunet_cpu_bench_api_get (NULL);
  return api ? api->sgemm_gflops (threads) : 0.0;
#else
  (void) threads;
  return 0.0;
#endif
}

/* Median milliseconds of the fused preprocess of a synthetic 1920x1080 NV12 frame to the
 * model's input (one thread) as a session runs it per frame: the plan (tap tables and
 * scratch) is built once, *plan_ms, and kept while the frame size repeats.  Returns -1
 * with a message when it fails. */
static double
time_preprocess (const gpunet_model *m, int runs, double *plan_ms)
{
  const int w = 1920, h = 1080, r = gpunet_model_resolution (m);
  uint8_t *y = malloc ((size_t) w * h), *uv = malloc ((size_t) w * h / 2);
  float *out = malloc (sizeof (float) * 3 * (size_t) r * r);
  double *t = malloc (sizeof (double) * (size_t) runs), result = -1.0;
  gpunet_preprocess_plan plan;
  memset (&plan, 0, sizeof plan);
  if (y && uv && out && t) {
    for (int j = 0; j < h; j++)
      for (int i = 0; i < w; i++)
        y[(size_t) j * w + i] = (uint8_t) (16 + (i * 3 + j * 5) % 220);
    for (size_t i = 0; i < (size_t) w * h / 2; i++)
      uv[i] = (uint8_t) (64 + i % 128);
    gpunet_image img = { .format = GPUNET_FORMAT_NV12, .width = w, .height = h,
      .planes = { y, uv, NULL }, .strides = { w, w, 0 }, .matrix = GPUNET_MATRIX_BT709 };
    const double t0 = now_s ();
    const gpunet_status st = gpunet_preprocess_plan_init (&plan, w, h, r,
        GPUNET_RESIZE_CENTER_CROP, gpunet_model_crop_pct (m));
    *plan_ms = 1e3 * (now_s () - t0);
    if (st == GPUNET_OK) {
      for (int i = 0; i < runs + 2; i++) {
        const double t1 = now_s ();
        gpunet_cpu_preprocess (&plan, &img, out);
        if (i >= 2)
          t[i - 2] = now_s () - t1;
      }
      result = 1e3 * median (t, runs);
    } else {
      fprintf (stderr, "gpunet-bench: cannot plan the preprocess: %s\n", gpunet_status_string (st));
    }
  }
  gpunet_preprocess_plan_clear (&plan);
  free (y);
  free (uv);
  free (out);
  free (t);
  return result;
}

extern char **environ;

/* --threads A,B,...: runs this program once per value (each a fresh process, so every
 * run plans its own thread pool), in order, with --threads replaced.  Returns the first
 * non-zero exit status, or 0; -1 when the list is not a list of whole numbers. */
static int
run_thread_list (int argc, char **argv, int at, const char *list)
{
  char **args = calloc ((size_t) argc + 1, sizeof *args);
  char value[32];
  int rc = 0;
  if (!args)
    return 1;
  /* whole numbers of at most 4 digits between single commas; checked before any run */
  for (const char *p = list; *p;) {
    size_t n = strspn (p, "0123456789");
    if (n == 0 || n > 4 || (p[n] != ',' && p[n] != '\0') || (p[n] == ',' && p[n + 1] == '\0'))
      return free (args), -1;
    p += n + (p[n] == ',');
  }
  for (int i = 0; i < argc; i++)
    args[i] = argv[i];
  for (const char *p = list; *p && rc == 0;) {
    size_t n = strcspn (p, ",");
    memcpy (value, p, n);
    value[n] = '\0';
    p += n + (p[n] == ',');
    args[at] = value;
    fflush (stdout);
    pid_t pid;
    int status = 0;
    if (posix_spawn (&pid, "/proc/self/exe", NULL, NULL, args, environ) != 0
        || waitpid (pid, &status, 0) < 0) {
      fprintf (stderr, "gpunet-bench: cannot run itself for --threads %s: %s\n", value,
          strerror (errno));
      rc = 1;
    } else if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
      rc = WIFEXITED (status) ? WEXITSTATUS (status) : 1;
    }
  }
  free (args);
  return rc;
}

int
main (int argc, char **argv)
{
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp (argv[i], "--threads") && strchr (argv[i + 1], ',')) {
      int rc = run_thread_list (argc, argv, i + 1, argv[i + 1]);
      if (rc < 0) {
        fprintf (stderr, "gpunet-bench: --threads takes a whole number or a list of them "
            "separated by commas (1,2,4,8,16), not '%s'\n", argv[i + 1]);
        return 2;
      }
      return rc;
    }
  const char *model_name = NULL, *checkpoint = NULL, *backend_name = NULL;
  int batch = 1, threads = 2, runs = 20, warmup = 3, per_layer = 0, sweep = 0, pre_runs = 20;
  int stdin_runs = 0;
  gpunet_precision precision = GPUNET_PRECISION_AUTO;
  int cuda_fused = 0, graph_nodes = 0, net_groups = 10, net_replays = 50;
  const char *cpu_spec = NULL, *cuda_spec = NULL, *ab_spec = NULL, *scales = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (!strcmp (a, "--model") && v)
      model_name = argv[++i];
    else if (!strcmp (a, "--checkpoint") && v)
      checkpoint = argv[++i];
    else if (!strcmp (a, "--backend") && v)
      backend_name = argv[++i];
    else if (!strcmp (a, "--batch"))
      bad = parse_int (a, v, 1, 4096, &batch), i++;
    else if (!strcmp (a, "--threads"))
      bad = parse_int (a, v, 0, 1024, &threads), i++;
    else if (!strcmp (a, "--runs"))
      bad = parse_int (a, v, 1, 1000000, &runs), i++;
    else if (!strcmp (a, "--preprocess-runs"))
      bad = parse_int (a, v, 0, 1000000, &pre_runs), i++;
    else if (!strcmp (a, "--warmup"))
      bad = parse_int (a, v, 0, 1000000, &warmup), i++;
    else if (!strcmp (a, "--per-layer"))
      per_layer = 1;
    else if (!strcmp (a, "--batch-sweep"))
      sweep = 1;
    else if (!strcmp (a, "--stdin-runs"))
      stdin_runs = 1;
    else if (!strcmp (a, "--cuda-fused"))
      cuda_fused = GPUNET_CUDA_FUSED_NHWC;
    else if (!strcmp (a, "--cuda-fused=1") || !strcmp (a, "--cuda-fused=2"))
      cuda_fused = a[13] - '0';
    else if (!strcmp (a, "--graph-nodes"))
      graph_nodes = 1;
    else if (!strcmp (a, "--net-groups"))
      bad = parse_int (a, v, 0, 100000, &net_groups), i++;
    else if (!strcmp (a, "--net-replays"))
      bad = parse_int (a, v, 1, 100000, &net_replays), i++;
    else if (!strcmp (a, "--no-peak"))
      no_peak = 1;
    else if (!strcmp (a, "--cpu") && v)
      cpu_spec = argv[++i];
    else if (!strcmp (a, "--cuda") && v)
      cuda_spec = argv[++i];
    else if (!strcmp (a, "--ab") && v)
      ab_spec = argv[++i];
    else if (!strcmp (a, "--scales") && v)
      scales = argv[++i];
    else if (!strcmp (a, "--precision") && v) {
      v = argv[++i];
      if (!gpunet_tool_precision_parse (v, &precision)) {
        fprintf (stderr, "gpunet-bench: --precision is auto, fp32, fp16, bf16 or int8, not "
            "'%s'\n", v);
        bad = 1;
      }
    }
    else if (!strcmp (a, "--help") || !strcmp (a, "-h")) {
      usage (stdout);
      return 0;
    } else {
      fprintf (stderr, "gpunet-bench: unknown or incomplete option '%s'\n", a);
      bad = 1;
    }
    if (bad) {
      usage (stderr);
      return 2;
    }
  }
  if (!model_name) {
    usage (stderr);
    return 2;
  }
  const char *refusal = gpunet_tool_scales_refusal (precision, scales);
  if (refusal) {
    fprintf (stderr, "gpunet-bench: %s\n", refusal);
    return 2;
  }
  if (stdin_runs && (per_layer || sweep)) {
    fprintf (stderr, "gpunet-bench: --stdin-runs times whole passes only; leave out --per-layer "
        "and --batch-sweep\n");
    return 2;
  }
  if (ab_spec && (stdin_runs || per_layer || sweep)) {
    fprintf (stderr, "gpunet-bench: --ab times whole passes of two plans in turn; leave out "
        "--stdin-runs, --per-layer and --batch-sweep\n");
    return 2;
  }

  /* the backends by their registry names (cpu: oneDNN when built, cpu-ref, cuda) */
  gpunet_backend_kind kind = GPUNET_BACKEND_CPU;
  char *why = NULL;
  if (backend_name && gpunet_backend_kind_from_name (backend_name, &kind, &why) != GPUNET_OK) {
    fprintf (stderr, "gpunet-bench: --backend: %s\n", why);
    free (why);
    return 2;
  }
  if (kind == GPUNET_BACKEND_AUTO) {
    fprintf (stderr, "gpunet-bench: --backend auto chooses at run time; name the backend to "
        "time: cpu, cpu-ref or cuda\n");
    return 2;
  }
  const int is_cuda = kind == GPUNET_BACKEND_CUDA;
  {
    /* --cpu wait= is read when the CPU module loads, before anything is planned (a bad
     * --cpu is reported below) */
    gpunet_cpu_options early = { 0 };
    if (gpunet_cpu_options_parse (&early, cpu_spec, "--cpu", NULL) == GPUNET_OK)
      gpunet_cpu_module_request_wait (early.wait);
  }
  const gpunet_backend *be = gpunet_backend_find (kind, &why);
  if (be && is_cuda)
    cuda_bench = gpunet_cuda_bench_api_get (&why);
  if (!be || (is_cuda && !cuda_bench)) {
    fprintf (stderr, "gpunet-bench: %s\n", why ? why : "no CUDA backend");
    free (why);
    return 1;
  }

  if (ab_spec) {
#ifdef GPUNET_HAVE_ONEDNN
    const int fast = kind == GPUNET_BACKEND_CPU;
#else
    const int fast = 0;
#endif
    gpunet_cpu_options probe = { 0 };
    gpunet_session_params probe_cuda;
    gpunet_session_params_init (&probe_cuda);
    char *why_ab = NULL;
    if (!fast && !is_cuda) {
      fprintf (stderr, "gpunet-bench: --ab compares two option sets of the fast CPU backend "
          "(--backend cpu, built with oneDNN) or of the CUDA backend, not of %s\n", be->name);
      return 2;
    }
    if (is_cuda ? cuda_ab_apply (&probe_cuda, ab_spec, &why_ab) != GPUNET_OK
        : gpunet_cpu_options_parse (&probe, ab_spec, "--ab", &why_ab) != GPUNET_OK) {
      fprintf (stderr, "gpunet-bench: %s\n", why_ab ? why_ab : "bad --ab options");
      free (why_ab);
      return 2;
    }
  }

  gpunet_model *m = NULL;
  char *err = NULL;
  gpunet_status st = checkpoint ? gpunet_model_load (model_name, checkpoint, &m, &err)
      : gpunet_model_new_random (model_name, 1, &m, &err);
  if (st != GPUNET_OK) {
    fprintf (stderr, "gpunet-bench: %s\n", err ? err : gpunet_status_string (st));
    free (err);
    return 1;
  }
  const gpunet_graph *g = gpunet_model_graph (m);
  const int res = gpunet_model_resolution (m), classes = gpunet_model_num_classes (m);
  const int most = sweep && batch < 64 ? 64 : batch;   /* images the buffers hold */
  const size_t in_len = (size_t) most * 3 * res * res;
  float *input = malloc (sizeof (float) * in_len);
  float *logits = malloc (sizeof (float) * (size_t) most * classes);
  double *times = malloc (sizeof (double) * (size_t) runs);
  double *gpu_times = is_cuda ? malloc (sizeof (double) * (size_t) runs) : NULL;
  double *op_s = calloc ((size_t) g->n_ops + (size_t) g->n_blocks + 1, sizeof (double));
  if (!input || !logits || !times || !op_s || (is_cuda && !gpu_times)) {
    fprintf (stderr, "gpunet-bench: out of memory\n");
    return 1;
  }
  unsigned seed = 12345;
  for (size_t i = 0; i < in_len; i++) {
    seed = seed * 1103515245u + 12345u;
    input[i] = (float) ((seed >> 9) & 0xffff) / 16384.0f - 2.0f;
  }

  gpunet_session_params params;
  gpunet_session_params_init (&params);
  params.max_batch = batch;
  params.n_threads = threads;
  params.precision = precision;
  params.int8_scales = scales;
  params.cuda_fused = cuda_fused;
  if ((st = gpunet_cpu_options_parse (&params.cpu, cpu_spec, "--cpu", &err)) != GPUNET_OK) {
    fprintf (stderr, "gpunet-bench: %s\n", err ? err : gpunet_status_string (st));
    free (err);
    return 2;
  }
  if ((st = gpunet_cuda_options_parse (&params.cuda, cuda_spec, "--cuda", &err)) != GPUNET_OK) {
    fprintf (stderr, "gpunet-bench: %s\n", err ? err : gpunet_status_string (st));
    free (err);
    return 2;
  }
  /* B: --ab's options over A's (checked before anything was allocated) */
  gpunet_session_params params_b = params;
  if (ab_spec && is_cuda)
    cuda_ab_apply (&params_b, ab_spec, NULL);
  else if (ab_spec)
    gpunet_cpu_options_parse (&params_b.cpu, ab_spec, "--ab", NULL);
  void *state = NULL, *state_b = NULL;
  if (ab_spec && (st = gpunet_backend_plan (be, g, &params_b, &state_b, &err)) != GPUNET_OK) {
    fprintf (stderr, "gpunet-bench: planning --ab %s failed: %s\n", ab_spec,
        err ? err : gpunet_status_string (st));
    free (err);
    return 1;
  }
  const double plan_t0 = now_s ();
  if ((st = gpunet_backend_plan (be, g, &params, &state, &err)) != GPUNET_OK) {
    if (state_b)
      be->destroy (state_b);
    fprintf (stderr, "gpunet-bench: planning failed: %s\n", err ? err : gpunet_status_string (st));
    free (err);
    return 1;
  }
  const double plan_ms_session = 1e3 * (now_s () - plan_t0);
  int exit_code = 0;
  if (stdin_runs) {
    if (run_stdin (be, state, input, batch, logits, warmup, &times, is_cuda ? &gpu_times : NULL,
            &runs, &st, &err) == 2) {
      be->destroy (state);
      exit_code = 2;
      goto done;
    }
  } else if (state_b && is_cuda) {
    const ab_ctx c = { be, input, logits, batch, net_replays };
    st = run_ab (ab_net, &c, state, state_b, ab_spec, "gpu_net", 0, runs, times, &err);
    if (st == GPUNET_OK)   /* A's whole passes for the lines below */
      st = run_forward (be, state, input, batch, logits, warmup, runs, times, gpu_times, &err);
    be->destroy (state_b);
  } else if (state_b) {
    const ab_ctx c = { be, input, logits, batch, 0 };
    st = run_ab (ab_forward, &c, state, state_b, ab_spec, NULL, warmup, runs, times, &err);
    be->destroy (state_b);
  } else
    st = run_forward (be, state, input, batch, logits, warmup, runs, times, gpu_times, &err);
  /* CUDA: the network alone as graph replays, and the captured graphs' nodes (whole
   * passes only: not with --stdin-runs or --ab) */
  double net_ms = -1.0;
  char *net_why = NULL;
  gpunet_cuda_graph_counts fwd_nodes = { 0 }, net_nodes = { 0 };
  if (st == GPUNET_OK && is_cuda && !stdin_runs && net_groups > 0
      && cuda_bench->net_time (state, batch, net_groups, net_replays, &net_ms, &net_why)
      != GPUNET_OK)
    net_ms = -1.0;   /* reported below with its sentence; the other figures stand */
  if (st == GPUNET_OK && is_cuda && graph_nodes) {
    st = cuda_bench->graph_nodes (state, batch, 0, &fwd_nodes, &err);
    if (st == GPUNET_OK)
      st = cuda_bench->graph_nodes (state, batch, 1, &net_nodes, &err);
  }
  /* bytes per stored value: the CPU backends are fp32, CUDA as `auto` resolved */
  const int storage = is_cuda ? cuda_bench->storage_bytes (state) : 4;
  if (st == GPUNET_OK && per_layer) {
    profile_hook hook = is_cuda ? cuda_hook : NULL;
    int hook_warmup = warmup;
#ifdef GPUNET_HAVE_ONEDNN
    if (kind == GPUNET_BACKEND_CPU) {
      hook = onednn_hook;
      hook_warmup = 0;   /* the timed passes above warmed it up; no mode switch */
    }
#endif
    if (hook) {
      /* per-op medians over the runs: robust to a noisy neighbour on shared cores */
      if (is_cuda)
        printf ("per-op GPU time: cudaEvent pairs around each op on the stream, plain launches "
            "(no CUDA graph) queued behind a hold kernel so host launch gaps are not counted, median of "
            "%d runs after %d warm-up, %s storage\n", runs,
            hook_warmup, storage == 2 ? "fp16" : "fp32");
      st = profile_ops (be, state, hook, input, batch, logits, hook_warmup, runs, g->n_ops, op_s,
          &err);
      if (st == GPUNET_OK)
        print_op_table (g, batch, op_s, storage);
    } else {
      block_timer bt = { 0.0, op_s, g->n_blocks };
      for (int i = 0; i < runs && st == GPUNET_OK; i++) {
        bt.last = now_s ();
        st = be->forward (state, input, batch, logits, time_block, &bt, &err);
      }
      printf ("%-5s %9s\n", "block", "ms");
      for (int b = 0; b < g->n_blocks; b++)
        printf ("%-5d %9.3f\n", b, 1e3 * op_s[b] / runs);
    }
  }
  be->destroy (state);
  if (st != GPUNET_OK) {
    fprintf (stderr, "gpunet-bench: forward failed: %s\n", err ? err : gpunet_status_string (st));
    free (err);
    return 1;
  }

  const double flops = gpunet_model_flops (m);
  const double min_ms = 1e3 * (runs ? times[0] : 0.0);
  double mn = min_ms;
  for (int i = 0; i < runs; i++)
    if (1e3 * times[i] < mn)
      mn = 1e3 * times[i];
  const double med_ms = 1e3 * median (times, runs);
  const double achieved = flops * batch / (med_ms * 1e-3) / 1e9;
  /* before the sweep, which reuses times and gpu_times */
  const double gpu_med_ms = gpu_times ? 1e3 * median (gpu_times, runs) : 0.0;
  if (sweep)
    batch_sweep (be, g, &params, flops, input, logits, warmup, runs, times, gpu_times);
  const double peak = is_cuda ? 0.0 : sgemm_peak (threads > 0 ? threads : 1);
  if (is_cuda)
    printf ("plan_ms=%.1f (descriptors, algorithms, weights upload)\n", plan_ms_session);
  if (is_cuda)
    printf ("gpu_ms=%.3f gpu_median_ms=%.3f (median of %d passes, cudaEvents around the input "
        "upload, the network and the logits copy)\n", gpu_med_ms, gpu_med_ms, runs);
  if (is_cuda && net_ms > 0)
    printf ("gpu_net_ms=%.4f net_images_per_s=%.1f batch=%d (the network alone: median of %d "
        "groups of %d back-to-back CUDA graph replays, cudaEvents around each group)\n", net_ms,
        batch / (net_ms * 1e-3), batch, net_groups, net_replays);
  else if (is_cuda && net_why)
    printf ("gpu_net_ms=n/a (%s)\n", net_why);
  free (net_why);
  if (is_cuda && graph_nodes) {
    const gpunet_cuda_graph_counts *c[2] = { &fwd_nodes, &net_nodes };
    for (int i = 0; i < 2; i++)
      printf ("graph_nodes=%s batch=%d kernels=%d memcpy=%d memset=%d other=%d total=%d\n",
          i ? "network" : "forward", batch, c[i]->kernels, c[i]->memcpys, c[i]->memsets,
          c[i]->others, c[i]->total);
    printf ("graph_kernels=%d (kernel nodes of one captured forward pass, batch %d: input "
        "conversion, network, logits)\n", fwd_nodes.kernels, batch);
  }
  if (!is_cuda && peak > 0)
    printf ("sgemm_2048_gflops_s=%.1f threads=%d achieved_over_peak=%.2f\n", peak, threads,
        achieved / peak);
  else if (!is_cuda && peak < 0)
    printf ("sgemm_2048_gflops_s=n/a (--no-peak)\n");
  else if (!is_cuda)
    printf ("sgemm_2048_gflops_s=n/a (built without oneDNN)\n");
  if (!is_cuda && threads != 1) {
    double shared_ns, own_ns;
    cross_core_write_ns (&shared_ns, &own_ns);
    if (shared_ns >= 0)
      printf ("cross_core_write_ns_per_line=%.1f own_write_ns_per_line=%.1f\n", shared_ns, own_ns);
  }
  double plan_ms = 0.0;
  const double pre_ms = pre_runs > 0 ? time_preprocess (m, pre_runs, &plan_ms) : -1.0;
  if (pre_ms >= 0)
    printf ("preprocess_nv12_1920x1080_to_%dx%d_ms=%.3f threads=1 plan_once_ms=%.3f\n", res,
        res, pre_ms, plan_ms);
  double bytes = 0.0;
  for (int i = 0; i < g->n_ops; i++)
    bytes += gpunet_op_min_bytes (&g->ops[i], batch, storage);
  printf ("bytes_mb=%.3f arith_intensity_flop_per_byte=%.2f storage_bytes=%d\n", bytes / 1e6,
      bytes > 0 ? flops * batch / bytes : 0.0, storage);
  if (precision == GPUNET_PRECISION_INT8) {
    /* the floor: the int8 convolutions' MACs at the CPU's int8 peak (docs/performance.md) */
    double q = 0.0, rest = 0.0;
    const long min_macs = params.cpu.int8_min_macs > 0 ? params.cpu.int8_min_macs
        : GPUNET_CPU_INT8_MIN_MACS;
    for (int i = 0; i < g->n_ops; i++) {
      const gpunet_conv2d_params *c = &g->ops[i].p.conv2d;
      const int in8 = gpunet_int8_quantisable (g, i)
          && (long) c->cin * c->kernel * c->kernel >= min_macs;
      *(in8 ? &q : &rest) += gpunet_op_macs (&g->ops[i]);
    }
    printf ("int8_gmacs=%.3f f32_gmacs=%.3f (per image: the int8 convolutions, the rest)\n",
        q / 1e9, rest / 1e9);
    const double vp = no_peak ? -1.0 : gpunet_vnni_peak_gmacs (threads > 0 ? threads : 1);
    if (vp > 0)
      printf ("vnni_peak_gmacs_s=%.1f threads=%d int8_floor_ms=%.3f min_over_floor=%.2f\n",
          vp, threads, q * batch / vp / 1e6, mn / (q * batch / vp / 1e6));
    else
      printf ("vnni_peak_gmacs_s=n/a (%s)\n", no_peak ? "--no-peak" : "no AVX-512 VNNI");
  }
  printf ("backend=%s images_per_s=%.1f\n", be->name, batch / (med_ms * 1e-3));
#ifdef GPUNET_HAVE_ONEDNN
  if (kind == GPUNET_BACKEND_CPU && gpunet_cpu_wait_note (NULL))
    printf ("cpu_wait=%s\n", gpunet_cpu_wait_note (NULL));
#endif
  printf ("model=%s batch=%d threads=%d median_ms=%.3f min_ms=%.3f gflops=%.2f achieved_gflops_s=%.1f\n",
      gpunet_model_name (m), batch, threads, med_ms, mn, flops / 1e9, achieved);
done:
  free (input);
  free (logits);
  free (times);
  free (gpu_times);
  free (op_s);
  gpunet_model_unref (m);
  return exit_code;
}
