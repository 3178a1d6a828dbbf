/* test_cuda_context.c: the CUDA backend's context rule (kernels/cuda/cuda_context.h) on
 * a fake driver context stack: a scope leaves the session's context alone when it is
 * current, pushes it over another (or none) and pops it again, restores the caller's
 * stack exactly, nests, and fails with a sentence when the push fails, the stack was
 * changed inside, or the session has no context; and the choice of a context for a
 * session given none (gpunet_cuda_ctx_pick): the caller's when it is on the device, else
 * the device's primary context, the caller's stack as it was either way. */
#include <string.h>

#include "check.h"
#include "cuda/cuda_context.h"

typedef struct {
  void *stack[16];
  int depth;
  int fail_push, fail_get, fail_pop;
  int pushes, pops;
  int set_devices, fail_set;
} fake_driver;

/* Contexts of the fake host: the primary contexts of devices 0 and 1 and the contexts
 * a caller made (U0 on device 0, U1 on device 1). */
static int prim0, prim1, user0, user1;
#define P0 ((void *) &prim0)
#define P1 ((void *) &prim1)
#define U0 ((void *) &user0)
#define U1 ((void *) &user1)

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

static int
fake_device_of_current (void *user, int *device)
{
  fake_driver *d = user;
  void *c = d->depth ? d->stack[d->depth - 1] : NULL;
  *device = c == P1 || c == U1 ? 1 : 0;
  return 0;
}

/* cudaSetDevice: the device's primary context replaces the top of the stack */
static int
fake_set_device (void *user, int device)
{
  fake_driver *d = user;
  d->set_devices++;
  if (d->fail_set)
    return 100;   /* cudaErrorNoDevice */
  if (d->depth == 0)
    d->depth = 1;
  d->stack[d->depth - 1] = device ? P1 : P0;
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
  gpunet_cuda_ctx_api api = { fake_get, fake_push, fake_pop, &d, NULL, NULL };
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

  /* choosing a session's context (none given) */
  gpunet_cuda_ctx_api papi = { fake_get, fake_push, fake_pop, &d, fake_device_of_current,
    fake_set_device };
  void *chosen = NULL;
  /* the caller's context is on the device: that one, nothing set or pushed */
  memset (&d, 0, sizeof d);
  d.stack[d.depth++] = U0;
  CHECK (gpunet_cuda_ctx_pick (&papi, 0, &chosen, why, sizeof why) == 0);
  CHECK (chosen == U0 && d.set_devices == 0 && d.depth == 1 && top (&d) == U0);
  /* the caller's context is on another device: device 1's primary, and the caller's
   * context (never replaced for good) back on top, the stack as deep as before */
  memset (&d, 0, sizeof d);
  d.stack[d.depth++] = P0;
  d.stack[d.depth++] = U0;
  CHECK (gpunet_cuda_ctx_pick (&papi, 1, &chosen, why, sizeof why) == 0);
  CHECK (chosen == P1 && d.set_devices == 1 && d.depth == 2 && top (&d) == U0
      && d.stack[0] == P0);
  /* ... and planning then pushes it over the caller's and pops it again */
  CHECK (gpunet_cuda_ctx_scope_open (&api, chosen, &sc, why, sizeof why) == 0);
  CHECK (sc.pushed && top (&d) == P1 && d.depth == 3);
  CHECK (gpunet_cuda_ctx_scope_close (&api, chosen, &sc, why, sizeof why) == 0);
  CHECK (top (&d) == U0 && d.depth == 2);
  /* nothing current: the primary context, left current (nothing to replace) */
  memset (&d, 0, sizeof d);
  CHECK (gpunet_cuda_ctx_pick (&papi, 1, &chosen, why, sizeof why) == 0);
  CHECK (chosen == P1 && d.depth == 1 && top (&d) == P1);
  /* the primary context cannot be made current: a sentence, the caller's stack kept */
  memset (&d, 0, sizeof d);
  d.stack[d.depth++] = U1;
  d.fail_set = 1;
  why[0] = '\0';
  CHECK (gpunet_cuda_ctx_pick (&papi, 0, &chosen, why, sizeof why) == -1);
  CHECK (chosen == NULL && d.depth == 1 && top (&d) == U1);
  CHECK_CONTAINS (msg, "primary CUDA context of device 0");
  /* the current context cannot be read */
  memset (&d, 0, sizeof d);
  d.fail_get = 1;
  CHECK (gpunet_cuda_ctx_pick (&papi, 0, &chosen, why, sizeof why) == -1);
  CHECK (d.set_devices == 0);
  memset (&d, 0, sizeof d);

  /* a session without a context (never planned) */
  why[0] = '\0';
  CHECK (gpunet_cuda_ctx_scope_open (&api, NULL, &sc, why, sizeof why) == -1);
  CHECK_CONTAINS (msg, "has no CUDA context");

  return check_report ();
}
