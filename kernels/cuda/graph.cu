/* graph.cu: CUDA graph capture of a session's per-frame work: the first call for a key
 * (batch size, k) captures what the enqueue function puts on the stream, later calls
 * replay it with one cudaGraphLaunch.  A capture that fails (cuDNN or the driver refusing
 * an operation in capture) is logged once and the work runs as plain launches. */
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

/* Captures fn into g->exec; on failure returns a sentence (malloc()ed) and leaves g empty. */
static char *
capture (gpunet_cuda_graph *g, cudaStream_t stream, gpunet_cuda_enqueue_func fn, void *user)
{
  char *why = NULL, *fn_err = NULL;
  cudaGraph_t graph = NULL;
  cudaError_t e = cudaStreamBeginCapture (stream, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    gpunet_cuda_fail_rt (&why, e, "cudaStreamBeginCapture");
    return why;
  }
  gpunet_status st = fn (user, &fn_err);
  e = cudaStreamEndCapture (stream, &graph);
  if (st != GPUNET_OK) {
    gpunet_cuda_fail (&why, st, "enqueueing in capture: %s", fn_err ? fn_err : "?");
    free (fn_err);
  } else if (e != cudaSuccess) {
    gpunet_cuda_fail_rt (&why, e, "cudaStreamEndCapture");
  } else {
    e = cudaGraphInstantiate (&g->exec, graph, 0);
    if (e != cudaSuccess) {
      g->exec = NULL;
      gpunet_cuda_fail_rt (&why, e, "cudaGraphInstantiate");
    }
  }
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
  if (g->exec && g->key != key)
    gpunet_cuda_graph_clear (g);
  if (enabled && !g->exec && !g->failed) {
    char *why = capture (g, stream, fn, user);
    if (why) {
      static int logged;
      if (!logged) {
        logged = 1;
        fprintf (stderr, "gpunet-cuda: CUDA graph capture of %s failed, using plain launches "
            "(GPUNET_CUDA_GRAPHS=0 skips the attempt): %s\n", what, why);
      }
      free (why);
      g->failed = 1;
    } else {
      g->key = key;
    }
  }
  if (g->exec) {
    GPUNET_CU_TRY (cudaGraphLaunch (g->exec, stream), error_text, "cudaGraphLaunch (%s)", what);
    return GPUNET_OK;
  }
  return fn (user, error_text);
}
