/* weights.c: the weight sources graph building pulls parameters from: a checkpoint
 * (every tensor checked for presence, dtype and shape; all problems listed together,
 * with unexpected tensors) and seeded random weights of realistic scale. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "arch_graph.h"

#define MAX_LISTED 3

enum { PROBLEM_SHAPE, PROBLEM_MISSING, PROBLEM_UNEXPECTED, N_PROBLEM_KINDS };

static void
shape_string (char *buf, size_t size, int ndim, const int64_t *shape)
{
  size_t o = 0;
  buf[0] = '\0';
  if (ndim == 0)
    snprintf (buf, size, "a scalar");
  for (int i = 0; i < ndim && o < size; i++)
    o += (size_t) snprintf (buf + o, size - o, i ? "x%lld" : "%lld", (long long) shape[i]);
}

/* Records one problem of a kind; the first few of each kind keep their sentence. */
static void
add_problem (gpunet_checkpoint_source_t *s, int kind, const char *fmt, ...)
{
  s->n_problems++;
  if (s->counts[kind]++ >= MAX_LISTED)
    return;
  char line[512];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (line, sizeof line, fmt, ap);
  va_end (ap);
  size_t l = strlen (line), have = s->lists[kind] ? strlen (s->lists[kind]) : 0;
  char *p = realloc (s->lists[kind], have + l + 3);
  if (!p)
    return;
  s->lists[kind] = p;
  if (have) {
    memcpy (p + have, ", ", 2);
    have += 2;
  }
  memcpy (p + have, line, l + 1);
}

static gpunet_status
ckpt_get (gpunet_weight_source *base, const char *name, gpunet_param_role role, int ndim,
    const int64_t *shape, float *dst, char **error_text)
{
  gpunet_checkpoint_source_t *s = (gpunet_checkpoint_source_t *) base;
  (void) role;
  const size_t n_t = gpunet_checkpoint_n_tensors (s->ckpt);
  const gpunet_tensor *t = NULL;
  for (size_t i = 0; i < n_t; i++) {
    const gpunet_tensor *c = gpunet_checkpoint_tensor (s->ckpt, i);
    if (strcmp (c->name, name) == 0) {
      t = c;
      if (s->used)
        s->used[i] = 1;
      break;
    }
  }
  if (!t) {
    add_problem (s, PROBLEM_MISSING, "'%s'", name);
    return GPUNET_OK;
  }
  int same = t->ndim == ndim;
  for (int i = 0; same && i < ndim; i++)
    same = t->shape[i] == shape[i];
  if (!same) {
    char have[96], want[96];
    shape_string (have, sizeof have, t->ndim, t->shape);
    shape_string (want, sizeof want, ndim, shape);
    add_problem (s, PROBLEM_SHAPE, "tensor '%s' has shape %s, the architecture needs %s", name,
        have, want);
    return GPUNET_OK;
  }
  if (t->dtype != GPUNET_DTYPE_F32 && t->dtype != GPUNET_DTYPE_F16
      && t->dtype != GPUNET_DTYPE_BF16 && t->dtype != GPUNET_DTYPE_F64) {
    add_problem (s, PROBLEM_SHAPE, "tensor '%s' has dtype %s, a floating type is needed", name,
        gpunet_dtype_name (t->dtype));
    return GPUNET_OK;
  }
  gpunet_status st = gpunet_tensor_to_f32 (t, dst, (size_t) t->numel, error_text);
  if (st != GPUNET_OK)
    gpunet_error_prefix (error_text, "checkpoint '%s'", s->path);
  return st;
}

static int
ends_with (const char *s, const char *suffix)
{
  size_t a = strlen (s), b = strlen (suffix);
  return a >= b && strcmp (s + a - b, suffix) == 0;
}

static gpunet_status
ckpt_finish (gpunet_weight_source *base, char **error_text)
{
  gpunet_checkpoint_source_t *s = (gpunet_checkpoint_source_t *) base;
  const size_t n_t = gpunet_checkpoint_n_tensors (s->ckpt);
  for (size_t i = 0; i < n_t && s->used; i++) {
    const gpunet_tensor *t = gpunet_checkpoint_tensor (s->ckpt, i);
    if (!s->used[i] && !ends_with (t->name, ".num_batches_tracked"))
      add_problem (s, PROBLEM_UNEXPECTED, "'%s'", t->name);
  }
  if (!s->n_problems)
    return GPUNET_OK;
  char parts[N_PROBLEM_KINDS][2048];
  static const char *const what[N_PROBLEM_KINDS] = { "with a wrong shape or type", "missing",
    "unexpected" };
  for (int k = 0; k < N_PROBLEM_KINDS; k++) {
    parts[k][0] = '\0';
    if (!s->counts[k])
      continue;
    if (k == PROBLEM_SHAPE)
      snprintf (parts[k], sizeof parts[k], "%d tensor%s %s (%s%s); ", s->counts[k],
          s->counts[k] == 1 ? "" : "s", what[k], s->lists[k] ? s->lists[k] : "",
          s->counts[k] > MAX_LISTED ? ", ..." : "");
    else
      snprintf (parts[k], sizeof parts[k], "%d tensor%s %s: %s%s; ", s->counts[k],
          s->counts[k] == 1 ? "" : "s", what[k], s->lists[k] ? s->lists[k] : "",
          s->counts[k] > MAX_LISTED ? ", ..." : "");
  }
  return gpunet_fail (error_text, GPUNET_ERR_WEIGHTS,
      "checkpoint '%s' (%s) does not match architecture '%s': %s%s%s"
      "check that the model names the architecture this checkpoint was trained for",
      s->path, gpunet_checkpoint_source (s->ckpt), s->arch_name ? s->arch_name : "?",
      parts[PROBLEM_SHAPE], parts[PROBLEM_MISSING], parts[PROBLEM_UNEXPECTED]);
}

void
gpunet_checkpoint_source_init (gpunet_checkpoint_source_t *s, const gpunet_checkpoint *ckpt,
    const char *path, const char *arch_name)
{
  memset (s, 0, sizeof *s);
  s->arch_name = arch_name;
  s->base.get = ckpt_get;
  s->base.finish = ckpt_finish;
  s->ckpt = ckpt;
  s->path = path;
  s->used = calloc (gpunet_checkpoint_n_tensors (ckpt) + 1, 1);
}

void
gpunet_checkpoint_source_clear (gpunet_checkpoint_source_t *s)
{
  free (s->used);
  for (int k = 0; k < 3; k++)
    free (s->lists[k]);
  memset (s, 0, sizeof *s);
}

/* splitmix64 */
static uint64_t
next_u64 (uint64_t *state)
{
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static float
next_uniform (uint64_t *state)
{
  return (float) ((double) (next_u64 (state) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static gpunet_status
random_get (gpunet_weight_source *base, const char *name, gpunet_param_role role, int ndim,
    const int64_t *shape, float *dst, char **error_text)
{
  gpunet_random_source_t *s = (gpunet_random_source_t *) base;
  (void) name;
  (void) error_text;
  int64_t n = 1, fan_in = 1;
  for (int i = 0; i < ndim; i++)
    n *= shape[i];
  for (int i = 1; i < ndim; i++)
    fan_in *= shape[i];
  /* He-uniform weights keep activations O(1) through the depth of the network */
  const float he = sqrtf (6.0f / (float) (fan_in > 0 ? fan_in : 1));
  for (int64_t i = 0; i < n; i++) {
    const float u = next_uniform (&s->state);
    switch (role) {
      case GPUNET_PARAM_CONV_WEIGHT:
      case GPUNET_PARAM_LINEAR_WEIGHT: dst[i] = u * he; break;
      case GPUNET_PARAM_BIAS: dst[i] = 0.05f * u; break;
      case GPUNET_PARAM_BN_WEIGHT: dst[i] = 1.0f + 0.2f * u; break;
      case GPUNET_PARAM_BN_BIAS: dst[i] = 0.1f * u; break;
      case GPUNET_PARAM_BN_MEAN: dst[i] = 0.1f * u; break;
      case GPUNET_PARAM_BN_VAR: dst[i] = 1.0f + 0.5f * (u + 1.0f); break;
    }
  }
  return GPUNET_OK;
}

void
gpunet_random_source_init (gpunet_random_source_t *s, uint64_t seed)
{
  memset (s, 0, sizeof *s);
  s->base.get = random_get;
  s->state = seed;
}
