/* session.c: gpunet_session: picks a backend (auto: CUDA when built and a device
 * works, else CPU), lets it plan the model's graph for a batch size, and runs it. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "model_private.h"
#include "session_private.h"
#include "../kernels/registry.h"

void
gpunet_session_params_init (gpunet_session_params *p)
{
  memset (p, 0, sizeof *p);
  p->backend = GPUNET_BACKEND_AUTO;
  p->precision = GPUNET_PRECISION_AUTO;
  p->max_batch = 1;
}

static gpunet_status
try_backend (gpunet_session *s, const gpunet_backend *be, char **error_text)
{
  gpunet_status st = be->plan (gpunet_model_graph (s->model), &s->params, &s->state, error_text);
  if (st == GPUNET_OK)
    s->backend = be;
  return st;
}

gpunet_status
gpunet_session_new (gpunet_model *model, const gpunet_session_params *params,
    gpunet_session **out, char **error_text)
{
  if (!model || !out)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_session_new needs a model and an output pointer");
  *out = NULL;
  gpunet_session_params p;
  if (params)
    p = *params;
  else
    gpunet_session_params_init (&p);
  if (p.max_batch < 1 || p.max_batch > 4096)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch size %d is out of range (1 to 4096)", p.max_batch);
  if (p.n_threads < 0)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "n_threads %d is negative (0 means all cores)", p.n_threads);

  gpunet_session *s = calloc (1, sizeof *s);
  if (!s)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory creating a session");
  s->model = gpunet_model_ref (model);
  s->params = p;

  /* auto: CUDA, else (keeping the reason) the fast CPU backend; any other kind is
   * the registry's backend of that kind or the sentence saying why there is none */
  gpunet_status st;
  const gpunet_backend *be = gpunet_backend_find (
      p.backend == GPUNET_BACKEND_AUTO ? GPUNET_BACKEND_CUDA : p.backend, error_text);
  if (be)
    st = try_backend (s, be, error_text);
  else
    st = p.backend == GPUNET_BACKEND_CUDA || p.backend == GPUNET_BACKEND_AUTO
        ? GPUNET_ERR_BACKEND_UNAVAILABLE : GPUNET_ERR_INVALID_ARGUMENT;
  if (p.backend == GPUNET_BACKEND_AUTO && st == GPUNET_ERR_BACKEND_UNAVAILABLE) {
    /* keep the reason for callers that want to log it, then fall back */
    free (s->fallback_reason);
    s->fallback_reason = error_text && *error_text ? strdup (*error_text) : NULL;
    st = try_backend (s, gpunet_backend_find (GPUNET_BACKEND_CPU, NULL), error_text);
    if (st == GPUNET_OK && error_text) {
      free (*error_text);
      *error_text = NULL;
    }
  }
  if (st != GPUNET_OK) {
    gpunet_session_free (s);
    return st;
  }
  s->logits = malloc (sizeof (float) * (size_t) p.max_batch * (size_t) gpunet_model_num_classes (model));
  s->input = malloc (sizeof (float) * (size_t) p.max_batch * 3 * (size_t) gpunet_model_resolution (model)
      * (size_t) gpunet_model_resolution (model));
  s->n_plans = gpunet_backend_call_geometries (p.max_batch);
  s->plans = calloc ((size_t) s->n_plans, sizeof *s->plans);
  s->plan_used = calloc ((size_t) s->n_plans, sizeof *s->plan_used);
  if (!s->logits || !s->input || !s->plans || !s->plan_used) {
    gpunet_session_free (s);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory creating a session");
  }
  *out = s;
  return GPUNET_OK;
}

void
gpunet_session_free (gpunet_session *s)
{
  if (!s)
    return;
  if (s->backend && s->state)
    s->backend->destroy (s->state);
  gpunet_model_unref (s->model);
  free (s->fallback_reason);
  for (int i = 0; s->plans && i < s->n_plans; i++)
    gpunet_preprocess_plan_clear (&s->plans[i]);
  free (s->plans);
  free (s->plan_used);
  free (s->logits);
  free (s->input);
  free (s);
}

const char *
gpunet_session_backend_name (const gpunet_session *s)
{
  return s->backend->name;
}

const char *
gpunet_session_fallback_reason (const gpunet_session *s)
{
  return s->fallback_reason;
}

gpunet_status
gpunet_session_forward_traced (gpunet_session *s, const float *input, int n, float *logits,
    gpunet_trace_func trace, void *user, char **error_text)
{
  if (!s || !input || !logits)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_session_forward needs a session, an input and an output");
  if (n < 1 || n > s->params.max_batch)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch of %d images, but the session was created for 1 to %d", n, s->params.max_batch);
  return s->backend->forward (s->state, input, n, logits, trace, user, error_text);
}

gpunet_status
gpunet_session_forward (gpunet_session *s, const float *input, int n, float *logits,
    char **error_text)
{
  return gpunet_session_forward_traced (s, input, n, logits, NULL, NULL, error_text);
}
