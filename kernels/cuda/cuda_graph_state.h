/* cuda_graph_state.h: the capture policy of graph.cu as plain C, so tests/test_cuda_math.c
 * runs it on the CPU.  One state per graph slot (one batch size) holds up to
 * GPUNET_GRAPH_WAYS graphs, one per key (classify: the top-k; forward: the batch size),
 * so callers that alternate between a few keys (elements with different top-k sharing one
 * engine) each keep their graph; a further key replaces the least recently used one.
 * Per key, the first run is a plain run, a warm-up, so that the one-time set-up of cuDNN
 * and of lazily loaded kernels (allocations, module loading: calls a capture refuses)
 * happens outside any capture; the second run captures and launches the graph; later
 * runs replay it.  A failed capture is not final: that pass runs as plain launches, and
 * a capture is tried again once GPUNET_GRAPH_RETRY_AFTER plain passes (that one
 * included) have succeeded; after GPUNET_GRAPH_MAX_FAILS failed captures the slot stays plain (the
 * count is per slot, not per key: the reason is usually the work, not its arguments). */
#ifndef GPUNET_CUDA_GRAPH_STATE_H
#define GPUNET_CUDA_GRAPH_STATE_H

#define GPUNET_GRAPH_WAYS 4          /* graphs (keys) kept per slot */
#define GPUNET_GRAPH_RETRY_AFTER 64  /* plain passes after a failed capture before the next try */
#define GPUNET_GRAPH_MAX_FAILS 3     /* failed captures after which a slot stays plain */

typedef enum {
  GPUNET_GRAPH_PLAIN,     /* call the enqueue function directly */
  GPUNET_GRAPH_CAPTURE,   /* capture it into a graph, then launch the graph */
  GPUNET_GRAPH_REPLAY     /* launch the graph captured before */
} gpunet_graph_action;

typedef struct {
  int key;            /* what the entry describes; 0 = unused (keys are >= 1) */
  int warmed;         /* a plain run for `key` succeeded */
  int captured;       /* the caller holds an executable graph for `key` in this way */
  unsigned last_use;  /* the slot's clock at the entry's last use (least recently used goes) */
} gpunet_graph_entry;

typedef struct {
  gpunet_graph_entry way[GPUNET_GRAPH_WAYS];
  unsigned clock;     /* counts gpunet_graph_next calls */
  int fails;          /* failed captures so far */
  int wait;           /* successful plain passes left before a capture is tried again */
} gpunet_graph_state;

/* The way holding `key`, or -1. */
static inline int
gpunet_graph_find (const gpunet_graph_state *s, int key)
{
  for (int i = 0; i < GPUNET_GRAPH_WAYS; i++)
    if (s->way[i].key == key)
      return i;
  return -1;
}

/* What the next run for `key` does, and in which way (*way, the index of the caller's
 * executable graph).  *drop is set when the caller must first destroy the graph it holds
 * in *way (captured for the key that way held before: the least recently used). */
static inline gpunet_graph_action
gpunet_graph_next (gpunet_graph_state *s, int key, int enabled, int *way, int *drop)
{
  int w = gpunet_graph_find (s, key);
  *drop = 0;
  if (w < 0) {
    w = 0;
    for (int i = 0; i < GPUNET_GRAPH_WAYS; i++) {
      if (s->way[i].key == 0) {   /* an unused way first */
        w = i;
        break;
      }
      if (s->way[i].last_use < s->way[w].last_use)
        w = i;
    }
    *drop = s->way[w].captured;
    s->way[w].key = key;
    s->way[w].warmed = 0;
    s->way[w].captured = 0;
  }
  s->way[w].last_use = ++s->clock;
  *way = w;
  if (s->way[w].captured)
    return GPUNET_GRAPH_REPLAY;
  if (enabled && s->way[w].warmed && s->wait == 0 && s->fails < GPUNET_GRAPH_MAX_FAILS)
    return GPUNET_GRAPH_CAPTURE;
  return GPUNET_GRAPH_PLAIN;
}

/* Whether the next run for `key` replays a captured graph: the work's host-side set-up
 * (the layers' cuDNN descriptors for the batch size) then goes unused and can be
 * skipped. */
static inline int
gpunet_graph_will_replay (const gpunet_graph_state *s, int key)
{
  const int w = gpunet_graph_find (s, key);
  return w >= 0 && s->way[w].captured;
}

/* Records the outcome of the run gpunet_graph_next chose for `way` (ok: it succeeded;
 * for a capture, that a graph was captured and instantiated).  Returns 1 when this was
 * the slot's first failed capture (the caller's cue to log it), else 0. */
static inline int
gpunet_graph_done (gpunet_graph_state *s, int way, gpunet_graph_action action, int ok)
{
  if (way < 0 || way >= GPUNET_GRAPH_WAYS)
    return 0;
  if (action == GPUNET_GRAPH_PLAIN && ok) {
    s->way[way].warmed = 1;
    if (s->wait > 0)
      s->wait--;
  } else if (action == GPUNET_GRAPH_CAPTURE) {
    if (ok) {
      s->way[way].captured = 1;
    } else {
      s->fails++;
      s->wait = GPUNET_GRAPH_RETRY_AFTER;
      return s->fails == 1;
    }
  }
  return 0;
}

/* Whether pdl=on may launch our kernels with programmatic stream serialization: on an
 * sm_90+ device (device_major) running kernels compiled from compute_90 or later PTX
 * (ptx_version: cudaFuncAttributes.ptxVersion of a kernel of the module, 90 for
 * compute_90), the only ones in which gpunet_pdl_wait is compiled in.  A module whose
 * gpu_archs stop below 90 runs on an H100 through the JIT of its older PTX: its kernels
 * have no wait, and a programmatic launch would let each read its input before the
 * kernel writing it has finished. */
static inline int
gpunet_cuda_pdl_usable (int device_major, int ptx_version)
{
  return device_major >= 9 && ptx_version >= 90;
}

/* Whether op `op_index` of a pass launches our kernels with programmatic stream
 * serialization, with PDL usable on the session (`enabled`): only where the work
 * before it in the stream is a kernel of the pass.  Not the first op (the input's copy
 * or the preprocess comes before it), and not while per-op events (`profiling`) or
 * trace copies (`tracing`) sit between the ops: a programmatic edge only leaves a
 * kernel, and an event between two kernels times the overlap, not an op. */
static inline int
gpunet_cuda_pdl_for_op (int enabled, int op_index, int profiling, int tracing)
{
  return enabled && op_index > 0 && !profiling && !tracing;
}

#endif /* GPUNET_CUDA_GRAPH_STATE_H */
