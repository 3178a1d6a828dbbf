/* graph.cu: CUDA graph capture of a session's per-frame work: for each key (classify:
 * the top-k; forward: the batch size) of a slot (one batch size) the first call runs the
 * enqueue function as plain launches (the warm-up, so one-time set-up inside cuDNN and
 * the lazy loading of kernels happen outside the capture), the second captures what it
 * puts on the stream and launches the graph, later calls replay it with one
 * cudaGraphLaunch; a slot keeps a graph for each of a few keys (the policy is
 * cuda_graph_state.h).  A capture that fails (cuDNN or the driver refusing an operation
 * in capture) is logged once, that pass runs as plain launches, and a capture is tried
 * again later, a bounded number of times.  Also the raw capture and node count the
 * benchmark hooks use. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

void
gpunet_cuda_graph_clear (gpunet_cuda_graph *g)
{
  for (int i = 0; i < GPUNET_GRAPH_WAYS; i++)
    if (g->exec[i])
      cudaGraphExecDestroy (g->exec[i]);
  memset (g, 0, sizeof *g);
}

/* Thread-local mode: only this thread's capture-unsafe calls (cudaMalloc, a
 * synchronisation...) invalidate the capture, so other sessions and GStreamer elements
 * may keep using CUDA on their threads meanwhile; the stream is non-blocking, so their
 * use of the legacy default stream does not touch it either. */
char *
gpunet_cuda_capture_raw (cudaGraph_t *out, cudaStream_t stream, gpunet_cuda_enqueue_func fn,
    void *user)
{
  char *why = NULL, *fn_err = NULL;
  cudaGraph_t graph = NULL;
  *out = NULL;
  cudaError_t e = cudaStreamBeginCapture (stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    gpunet_cuda_fail_rt (&why, e, "cudaStreamBeginCapture");
    cudaGetLastError ();
    return why;
  }
  gpunet_status st = fn (user, &fn_err);
  e = cudaStreamEndCapture (stream, &graph);
  if (st != GPUNET_OK)
    gpunet_cuda_fail (&why, st, "enqueueing in capture: %s", fn_err ? fn_err : "?");
  else if (e != cudaSuccess)
    gpunet_cuda_fail_rt (&why, e, "cudaStreamEndCapture");
  else if (!graph)
    gpunet_cuda_fail (&why, GPUNET_ERR_BACKEND, "cudaStreamEndCapture returned no graph");
  free (fn_err);
  if (why) {
    if (graph)
      cudaGraphDestroy (graph);
    cudaGetLastError ();   /* clear a non-sticky capture error before the plain launches */
    return why;
  }
  *out = graph;
  return NULL;
}

/* Captures fn into *exec; on failure returns a sentence (malloc()ed) and leaves *exec
 * NULL. */
static char *
capture (cudaGraphExec_t *exec, cudaStream_t stream, gpunet_cuda_enqueue_func fn, void *user)
{
  char *why = NULL;
  cudaGraph_t graph = NULL;
  *exec = NULL;
  why = gpunet_cuda_capture_raw (&graph, stream, fn, user);
  if (why)
    return why;
  cudaError_t e = cudaGraphInstantiate (exec, graph, 0);
  if (e != cudaSuccess) {
    *exec = NULL;
    gpunet_cuda_fail_rt (&why, e, "cudaGraphInstantiate");
    cudaGetLastError ();
  }
  cudaGraphDestroy (graph);
  return why;
}

static cudaError_t
count_nodes (cudaGraph_t graph, gpunet_cuda_graph_counts *c, int depth)
{
  size_t n = 0;
  cudaError_t e = cudaGraphGetNodes (graph, NULL, &n);
  if (e != cudaSuccess || n == 0)
    return e;
  if (depth > 8)
    return cudaErrorInvalidValue;   /* child graphs nested deeper than any capture makes */
  cudaGraphNode_t *nodes = (cudaGraphNode_t *) calloc (n, sizeof *nodes);
  if (!nodes)
    return cudaErrorMemoryAllocation;
  e = cudaGraphGetNodes (graph, nodes, &n);
  for (size_t i = 0; i < n && e == cudaSuccess; i++) {
    enum cudaGraphNodeType t;
    e = cudaGraphNodeGetType (nodes[i], &t);
    if (e != cudaSuccess)
      break;
    if (t == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = NULL;
      e = cudaGraphChildGraphNodeGetGraph (nodes[i], &child);
      if (e == cudaSuccess)
        e = count_nodes (child, c, depth + 1);
      continue;
    }
    c->total++;
    if (t == cudaGraphNodeTypeKernel)
      c->kernels++;
    else if (t == cudaGraphNodeTypeMemcpy)
      c->memcpys++;
    else if (t == cudaGraphNodeTypeMemset)
      c->memsets++;
    else
      c->others++;
  }
  free (nodes);
  return e;
}

cudaError_t
gpunet_cuda_graph_count (cudaGraph_t graph, gpunet_cuda_graph_counts *c)
{
  return count_nodes (graph, c, 0);
}

gpunet_status
gpunet_cuda_graph_run (gpunet_cuda_graph *g, int key, int enabled, cudaStream_t stream,
    gpunet_cuda_enqueue_func fn, void *user, const char *what, char **error_text)
{
  int drop = 0, way = 0;
  gpunet_graph_action action = gpunet_graph_next (&g->state, key, enabled, &way, &drop);
  if (drop && g->exec[way]) {
    cudaGraphExecDestroy (g->exec[way]);
    g->exec[way] = NULL;
  }
  if (action == GPUNET_GRAPH_REPLAY && !g->exec[way])
    action = GPUNET_GRAPH_PLAIN;   /* cannot happen: the state says captured only with an exec */
  if (action == GPUNET_GRAPH_CAPTURE) {
    char *why = capture (&g->exec[way], stream, fn, user);
    const int first_failure = gpunet_graph_done (&g->state, way, action, why == NULL);
    if (why) {
      static int logged;   /* once per process; engine workers may fail at once */
      if (first_failure && __atomic_exchange_n (&logged, 1, __ATOMIC_RELAXED) == 0) {
        fprintf (stderr, "gpunet-cuda: CUDA graph capture of %s failed, using plain launches "
            "and trying again after %d passes, at most %d times (GPUNET_CUDA=graphs=off skips "
            "the attempts): %s\n", what, GPUNET_GRAPH_RETRY_AFTER, GPUNET_GRAPH_MAX_FAILS, why);
      }
      free (why);
      action = GPUNET_GRAPH_PLAIN;   /* nothing ran: do the work now */
    } else {
      action = GPUNET_GRAPH_REPLAY;
    }
  }
  if (action == GPUNET_GRAPH_REPLAY) {
    GPUNET_CU_TRY (cudaGraphLaunch (g->exec[way], stream), error_text, "cudaGraphLaunch (%s)",
        what);
    return GPUNET_OK;
  }
  gpunet_status st = fn (user, error_text);
  gpunet_graph_done (&g->state, way, GPUNET_GRAPH_PLAIN, st == GPUNET_OK);
  return st;
}
