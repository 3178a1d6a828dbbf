/* cuda_context.h: the rule that every CUDA call of a session runs in the session's CUDA
 * context, as plain C over three driver functions (current, push, pop) so the CPU tests
 * drive it with a fake context stack (tests/test_cuda_context.c) and layer.cu with the
 * driver's cuCtxGetCurrent/cuCtxPushCurrent/cuCtxPopCurrent.
 *
 * Each backend entry point opens a scope: when the calling thread's current context is
 * the session's, nothing happens; otherwise the session's context is pushed and popped
 * again when the scope closes.  Pushing rather than failing: the engine's worker, tool
 * threads and GStreamer streaming threads all call in, memory and streams belong to the
 * session's context, and a push costs well under a microsecond, so the backend makes
 * the right context current itself instead of asking every caller to.  A session given
 * no context picks one without replacing the caller's (gpunet_cuda_ctx_pick), and
 * planning pushes it before any other call, so cudaSetDevice never replaces a context
 * the caller made current. */
#ifndef GPUNET_CUDA_CONTEXT_H
#define GPUNET_CUDA_CONTEXT_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The driver's functions as plain C (CUresult is an int enum, CUcontext a pointer);
 * each returns 0 on success.  `user` is passed back (the fake stack in the tests). */
typedef struct {
  int (*get_current) (void *user, void **ctx);
  int (*push) (void *user, void *ctx);
  int (*pop) (void *user, void **ctx);
  void *user;
  /* For gpunet_cuda_ctx_pick only (may be NULL otherwise): the device of the current
   * context (cudaGetDevice), and making `device`'s primary context current
   * (cudaSetDevice + cudaFree (0), which replace the context on top of the stack). */
  int (*device_of_current) (void *user, int *device);
  int (*set_device) (void *user, int device);
} gpunet_cuda_ctx_api;

typedef struct {
  int pushed;  /* the scope pushed the session's context and pops it on close */
} gpunet_cuda_ctx_scope;

/* Opens a scope for `session_ctx` (not NULL) on the calling thread.  Returns 0, or -1
 * with a sentence in why[len] (the driver call that failed, or a session without a
 * context). */
static inline int
gpunet_cuda_ctx_scope_open (const gpunet_cuda_ctx_api *api, void *session_ctx,
    gpunet_cuda_ctx_scope *scope, char *why, size_t len)
{
  void *current = NULL;
  int r;

  scope->pushed = 0;
  if (session_ctx == NULL) {
    snprintf (why, len, "the session has no CUDA context (it was not planned)");
    return -1;
  }
  r = api->get_current (api->user, &current);
  if (r != 0) {
    snprintf (why, len, "cuCtxGetCurrent failed (CUresult %d) on the calling thread", r);
    return -1;
  }
  if (current == session_ctx)
    return 0;
  r = api->push (api->user, session_ctx);
  if (r != 0) {
    snprintf (why, len, "cannot make the session's CUDA context %p current on this thread "
        "(cuCtxPushCurrent returned %d; the thread had %p): was that context destroyed "
        "(the GstCudaContext freed) before the session?", session_ctx, r, current);
    return -1;
  }
  scope->pushed = 1;
  return 0;
}

/* Closes the scope: pops what it pushed.  Returns 0, or -1 with a sentence when the
 * context on top is no longer the session's (something inside pushed without popping)
 * or the pop failed; the thread's stack is then left as the driver has it. */
static inline int
gpunet_cuda_ctx_scope_close (const gpunet_cuda_ctx_api *api, void *session_ctx,
    gpunet_cuda_ctx_scope *scope, char *why, size_t len)
{
  void *popped = NULL;
  int r;

  if (!scope->pushed)
    return 0;
  scope->pushed = 0;
  r = api->pop (api->user, &popped);
  if (r != 0) {
    snprintf (why, len, "cuCtxPopCurrent failed (CUresult %d) leaving a CUDA backend call", r);
    return -1;
  }
  if (popped != session_ctx) {
    snprintf (why, len, "the CUDA context stack changed inside a backend call: popped %p, "
        "pushed the session's %p", popped, session_ctx);
    return -1;
  }
  return 0;
}

/* The context of a session given none, chosen without replacing the caller's: the
 * thread's current context when it is on `device`; else `device`'s primary context.
 * set_device makes that one current by replacing the top of the stack, so when the
 * thread had a context of another device it is put back (the primary popped, the
 * caller's pushed unless it is on top again).  With nothing current, the primary stays
 * current (there was nothing to replace).  Returns 0 with *out, or -1 with a sentence. */
static inline int
gpunet_cuda_ctx_pick (const gpunet_cuda_ctx_api *api, int device, void **out, char *why,
    size_t len)
{
  void *current = NULL, *primary = NULL, *popped = NULL, *top = NULL;
  int r, dev = -1;

  *out = NULL;
  r = api->get_current (api->user, &current);
  if (r != 0) {
    snprintf (why, len, "cuCtxGetCurrent failed (CUresult %d) choosing the session's context", r);
    return -1;
  }
  if (current != NULL) {
    r = api->device_of_current (api->user, &dev);
    if (r != 0) {
      snprintf (why, len, "cudaGetDevice failed (error %d) in the calling thread's CUDA "
          "context", r);
      return -1;
    }
    if (dev == device) {
      *out = current;
      return 0;
    }
  }
  r = api->set_device (api->user, device);
  if (r == 0)
    r = api->get_current (api->user, &primary) != 0 ? -1 : 0;
  if (r != 0 || primary == NULL) {
    snprintf (why, len, "cannot make the primary CUDA context of device %d current "
        "(cudaSetDevice/cudaFree (0) returned %d)", device, r);
    /* best effort: the caller's context back on top */
    if (current != NULL && api->get_current (api->user, &top) == 0 && top != current
        && top != NULL && api->pop (api->user, &popped) == 0
        && (api->get_current (api->user, &top) != 0 || top != current))
      api->push (api->user, current);
    return -1;
  }
  *out = primary;
  if (current == NULL || current == primary)
    return 0;
  r = api->pop (api->user, &popped);
  if (r == 0 && popped != primary) {
    snprintf (why, len, "choosing device %d's primary CUDA context: popped %p, expected %p",
        device, popped, primary);
    return -1;
  }
  if (r == 0)
    r = api->get_current (api->user, &top);
  if (r == 0 && top != current)
    r = api->push (api->user, current);
  if (r != 0) {
    snprintf (why, len, "cannot put the calling thread's CUDA context %p back after choosing "
        "device %d's primary context (driver error %d)", current, device, r);
    return -1;
  }
  return 0;
}

#ifdef __cplusplus
}
#endif
#endif
