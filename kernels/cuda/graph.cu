/* graph.cu: CUDA graph capture of a session's per-frame work: for each key (batch size,
 * k) the first call runs the enqueue function as plain launches (the warm-up, so one-time
 * set-up inside cuDNN and the lazy loading of kernels happen outside the capture), the
 * second captures what it puts on the stream and launches the graph, later calls replay
 * it with one cudaGraphLaunch (the policy is cuda_graph_state.h).  A capture that fails
 * (cuDNN or the driver refusing an operation in capture) is logged once and the work
 * runs as plain launches. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

int
gpunet_cuda_graphs_enabled (void)
{
  const char *v = getenv ("GPUNET_CUDA_GRAPHS");
  return !(v && (!strcmp (v, "0") || !strcmp (v, "no") || !strcmp (v, "off")));
}

void
gpunet_cuda_graph_clear (gpunet_cuda_graph *g)
{
  if (g->exec)
    cudaGraphExecDestroy (g->exec);
  memset (g, 0, sizeof *g);
}

/* Captures fn into *exec; on failure returns a sentence (malloc()ed) and leaves *exec
 * NULL.  Thread-local mode: only this thread's capture-unsafe calls (cudaMalloc, a
 * synchronisation...) invalidate the capture, so other sessions and GStreamer elements
 * may keep using CUDA on their threads meanwhile; the stream is non-blocking, so their
 * use of the legacy default stream does not touch it either. */
static char *
capture (cudaGraphExec_t *exec, cudaStream_t stream, gpunet_cuda_enqueue_func fn, void *user)
{
  char *why = NULL, *fn_err = NULL;
  cudaGraph_t graph = NULL;
  *exec = NULL;
  cudaError_t e = cudaStreamBeginCapture (stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    gpunet_cuda_fail_rt (&why, e, "cudaStreamBeginCapture");
    cudaGetLastError ();
    return why;
  }
  gpunet_status st = fn (user, &fn_err);
  e = cudaStreamEndCapture (stream, &graph);
  if (st != GPUNET_OK) {
    gpunet_cuda_fail (&why, st, "enqueueing in capture: %s", fn_err ? fn_err : "?");
  } else if (e != cudaSuccess) {
    gpunet_cuda_fail_rt (&why, e, "cudaStreamEndCapture");
  } else {
    e = cudaGraphInstantiate (exec, graph, 0);
    if (e != cudaSuccess) {
      *exec = NULL;
      gpunet_cuda_fail_rt (&why, e, "cudaGraphInstantiate");
    }
  }
  free (fn_err);
  if (graph)
    cudaGraphDestroy (graph);
  if (why)
    cudaGetLastError ();   /* clear a non-sticky capture error before the plain launches */
  return why;
}

gpunet_status
gpunet_cuda_graph_run (gpunet_cuda_graph *g, int key, int enabled, cudaStream_t stream,
    gpunet_cuda_enqueue_func fn, void *user, const char *what, char **error_text)
{
  int drop = 0;
  gpunet_graph_action action = gpunet_graph_next (&g->state, key, enabled, &drop);
  if (drop && g->exec) {
    cudaGraphExecDestroy (g->exec);
    g->exec = NULL;
  }
  if (action == GPUNET_GRAPH_CAPTURE) {
    char *why = capture (&g->exec, stream, fn, user);
    gpunet_graph_done (&g->state, action, why == NULL);
    if (why) {
      static int logged;
      if (!logged) {
        logged = 1;
        fprintf (stderr, "gpunet-cuda: CUDA graph capture of %s failed, using plain launches "
            "(GPUNET_CUDA_GRAPHS=0 skips the attempt): %s\n", what, why);
      }
      free (why);
      action = GPUNET_GRAPH_PLAIN;   /* nothing ran: do the work now */
    } else {
      action = GPUNET_GRAPH_REPLAY;
    }
  }
  if (action == GPUNET_GRAPH_REPLAY) {
    GPUNET_CU_TRY (cudaGraphLaunch (g->exec, stream), error_text, "cudaGraphLaunch (%s)", what);
    return GPUNET_OK;
  }
  gpunet_status st = fn (user, error_text);
  gpunet_graph_done (&g->state, GPUNET_GRAPH_PLAIN, st == GPUNET_OK);
  return st;
}
