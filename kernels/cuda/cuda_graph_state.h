/* cuda_graph_state.h: the capture policy of graph.cu as plain C, so tests/test_cuda_math.c
 * runs it on the CPU.  One state per graph slot (one batch size): the first run for a key
 * (batch size, k) is a plain run, a warm-up, so that the one-time set-up of cuDNN and of
 * lazily loaded kernels (allocations, module loading: calls a capture refuses) happens
 * outside any capture; the second run captures and launches the graph; later runs replay
 * it.  A new key drops the graph and warms up again.  A failed capture means plain runs
 * from then on (for every key: the reason is the work, not its arguments). */
#ifndef GPUNET_CUDA_GRAPH_STATE_H
#define GPUNET_CUDA_GRAPH_STATE_H

typedef enum {
  GPUNET_GRAPH_PLAIN,     /* call the enqueue function directly */
  GPUNET_GRAPH_CAPTURE,   /* capture it into a graph, then launch the graph */
  GPUNET_GRAPH_REPLAY     /* launch the graph captured before */
} gpunet_graph_action;

typedef struct {
  int key;        /* what the state describes; 0 = nothing yet (keys are >= 1) */
  int warmed;     /* a plain run for `key` succeeded */
  int captured;   /* the caller holds an executable graph for `key` */
  int failed;     /* a capture failed: plain runs only */
} gpunet_graph_state;

/* What the next run for `key` does.  *drop is set when the caller must destroy the graph
 * it holds (captured for another key) before going on. */
static inline gpunet_graph_action
gpunet_graph_next (gpunet_graph_state *s, int key, int enabled, int *drop)
{
  *drop = 0;
  if (s->key != key) {
    *drop = s->captured;
    s->key = key;
    s->warmed = 0;
    s->captured = 0;
  }
  if (s->captured)
    return GPUNET_GRAPH_REPLAY;
  if (enabled && !s->failed && s->warmed)
    return GPUNET_GRAPH_CAPTURE;
  return GPUNET_GRAPH_PLAIN;
}

/* Whether the next run for `key` replays a captured graph: the work's host-side set-up
 * (the layers' cuDNN descriptors for the batch size) then goes unused and can be
 * skipped. */
static inline int
gpunet_graph_will_replay (const gpunet_graph_state *s, int key)
{
  return s->key == key && s->captured;
}

/* Records the outcome of the run gpunet_graph_next chose (ok: it succeeded; for a
 * capture, that a graph was captured and instantiated). */
static inline void
gpunet_graph_done (gpunet_graph_state *s, gpunet_graph_action action, int ok)
{
  if (action == GPUNET_GRAPH_PLAIN && ok)
    s->warmed = 1;
  else if (action == GPUNET_GRAPH_CAPTURE) {
    if (ok)
      s->captured = 1;
    else
      s->failed = 1;
  }
}

#endif /* GPUNET_CUDA_GRAPH_STATE_H */
