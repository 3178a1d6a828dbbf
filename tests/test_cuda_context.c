/* test_cuda_context.c: the CUDA backend's context rule (kernels/cuda/cuda_context.h) on
 * a fake driver context stack: a scope leaves the session's context alone when it is
 * current, pushes it over another (or none) and pops it again, restores the caller's
 * stack exactly, nests, and fails with a sentence when the push fails, the stack was
 * changed inside, or the session has no context. */
#include "check.h"
#include "cuda/cuda_context.h"

typedef struct {
  void *stack[16];
  int depth;
  int fail_push, fail_get, fail_pop;
  int pushes, pops;
} fake_driver;

static int
fake_get (void *user, void **ctx)
{
  fake_driver *d = user;
  if (d->fail_get)
    return 201;   /* CUDA_ERROR_INVALID_CONTEXT */
  *ctx = d->depth ? d->stack[d->depth - 1] : NULL;
  return 0;
}

static int
fake_push (void *user, void *ctx)
{
  fake_driver *d = user;
  if (d->fail_push || d->depth == 16)
    return 201;
  d->stack[d->depth++] = ctx;
  d->pushes++;
  return 0;
}

static int
fake_pop (void *user, void **ctx)
{
  fake_driver *d = user;
  if (d->fail_pop || d->depth == 0)
    return 201;
  *ctx = d->stack[--d->depth];
  d->pops++;
  return 0;
}

static void *
top (const fake_driver *d)
{
  return d->depth ? d->stack[d->depth - 1] : NULL;
}

int
main (void)
{
  fake_driver d = { 0 };
  gpunet_cuda_ctx_api api = { fake_get, fake_push, fake_pop, &d };
  int session_a, session_b, other;   /* their addresses stand for CUcontexts */
  void *A = &session_a, *B = &session_b, *O = &other;
  gpunet_cuda_ctx_scope sc, inner;
  char why[320];
  const char *msg = why;   /* CHECK_CONTAINS tests its pointer */

  /* already current (the element pushed its GstCudaContext): nothing pushed */
  d.stack[d.depth++] = A;
  CHECK (gpunet_cuda_ctx_scope_open (&api, A, &sc, why, sizeof why) == 0);
  CHECK (!sc.pushed && d.pushes == 0 && top (&d) == A);
  CHECK (gpunet_cuda_ctx_scope_close (&api, A, &sc, why, sizeof why) == 0);
  CHECK (d.pops == 0 && d.depth == 1 && top (&d) == A);

  /* another context current (a second element's, another thread's): pushed for the
   * scope, and the caller's stack is exactly as before afterwards */
  d.depth = 0;
  d.stack[d.depth++] = O;
  CHECK (gpunet_cuda_ctx_scope_open (&api, A, &sc, why, sizeof why) == 0);
  CHECK (sc.pushed && top (&d) == A && d.depth == 2);
  CHECK (gpunet_cuda_ctx_scope_close (&api, A, &sc, why, sizeof why) == 0);
  CHECK (!sc.pushed && d.depth == 1 && top (&d) == O);

  /* nothing current (a fresh engine worker thread): pushed and popped to empty */
  d.depth = 0;
  CHECK (gpunet_cuda_ctx_scope_open (&api, A, &sc, why, sizeof why) == 0);
  CHECK (sc.pushed && top (&d) == A);
  CHECK (gpunet_cuda_ctx_scope_close (&api, A, &sc, why, sizeof why) == 0);
  CHECK (d.depth == 0);

  /* nested scopes of two sessions (destroy inside a plan failure, two engines on one
   * thread): each restores what it found */
  d.depth = 0;
  CHECK (gpunet_cuda_ctx_scope_open (&api, A, &sc, why, sizeof why) == 0);
  CHECK (gpunet_cuda_ctx_scope_open (&api, B, &inner, why, sizeof why) == 0);
  CHECK (inner.pushed && top (&d) == B && d.depth == 2);
  CHECK (gpunet_cuda_ctx_scope_close (&api, B, &inner, why, sizeof why) == 0);
  CHECK (top (&d) == A);
  CHECK (gpunet_cuda_ctx_scope_open (&api, A, &inner, why, sizeof why) == 0);
  CHECK (!inner.pushed);   /* the same session again: no second push */
  CHECK (gpunet_cuda_ctx_scope_close (&api, A, &inner, why, sizeof why) == 0);
  CHECK (gpunet_cuda_ctx_scope_close (&api, A, &sc, why, sizeof why) == 0);
  CHECK (d.depth == 0 && d.pushes == d.pops);

  /* a context pushed inside the call and never popped is reported, not hidden */
  d.depth = 0;
  CHECK (gpunet_cuda_ctx_scope_open (&api, A, &sc, why, sizeof why) == 0);
  fake_push (&d, O);
  why[0] = '\0';
  CHECK (gpunet_cuda_ctx_scope_close (&api, A, &sc, why, sizeof why) == -1);
  CHECK_CONTAINS (msg, "context stack changed inside a backend call");

  /* the push fails (the GstCudaContext was destroyed before the session) */
  d.depth = 0;
  d.stack[d.depth++] = O;
  d.fail_push = 1;
  why[0] = '\0';
  CHECK (gpunet_cuda_ctx_scope_open (&api, A, &sc, why, sizeof why) == -1);
  CHECK (!sc.pushed && top (&d) == O);
  CHECK_CONTAINS (msg, "cannot make the session's CUDA context");
  CHECK_CONTAINS (msg, "cuCtxPushCurrent returned 201");
  d.fail_push = 0;
  /* closing a scope that failed to open touches nothing */
  CHECK (gpunet_cuda_ctx_scope_close (&api, A, &sc, why, sizeof why) == 0 && top (&d) == O);

  /* the current context cannot be read */
  d.fail_get = 1;
  why[0] = '\0';
  CHECK (gpunet_cuda_ctx_scope_open (&api, A, &sc, why, sizeof why) == -1);
  CHECK_CONTAINS (msg, "cuCtxGetCurrent failed");
  d.fail_get = 0;

  /* the pop fails */
  d.depth = 0;
  CHECK (gpunet_cuda_ctx_scope_open (&api, A, &sc, why, sizeof why) == 0);
  d.fail_pop = 1;
  why[0] = '\0';
  CHECK (gpunet_cuda_ctx_scope_close (&api, A, &sc, why, sizeof why) == -1);
  CHECK_CONTAINS (msg, "cuCtxPopCurrent failed");
  d.fail_pop = 0;

  /* a session without a context (never planned) */
  why[0] = '\0';
  CHECK (gpunet_cuda_ctx_scope_open (&api, NULL, &sc, why, sizeof why) == -1);
  CHECK_CONTAINS (msg, "has no CUDA context");

  return check_report ();
}
