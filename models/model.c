/* model.c: gpunet_model: an architecture plus its built, BatchNorm-folded graph,
 * loaded from a checkpoint or made with random weights; reference counted, immutable
 * after loading and therefore shareable between threads. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "arch_graph.h"
#include "model_private.h"

static gpunet_status
model_build (const char *arch_name, gpunet_weight_source *src, const char *source_label,
    gpunet_arch *arch, gpunet_model **out, char **error_text)
{
  gpunet_model *m = calloc (1, sizeof *m);
  if (!m) {
    gpunet_arch_free (arch);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory loading '%s'", arch_name);
  }
  m->arch = arch;
  atomic_init (&m->refcount, 1);
  gpunet_status st = gpunet_graph_build (arch, src, &m->built, error_text);
  if (st != GPUNET_OK) {
    gpunet_arch_free (arch);
    free (m);
    return st;
  }
  m->weights_source = strdup (source_label);
  *out = m;
  return GPUNET_OK;
}

gpunet_status
gpunet_model_load (const char *arch_name, const char *weights, gpunet_model **out,
    char **error_text)
{
  if (!arch_name || !weights || !out)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_model_load needs an architecture, a weights file and an output pointer");
  *out = NULL;
  gpunet_arch *arch = NULL;
  gpunet_status st = gpunet_arch_load (arch_name, &arch, error_text);
  if (st != GPUNET_OK)
    return st;
  gpunet_checkpoint *ckpt = NULL;
  st = gpunet_checkpoint_open (weights, &ckpt, error_text);
  if (st != GPUNET_OK) {
    gpunet_arch_free (arch);
    return st;
  }
  gpunet_checkpoint_source_t src;
  gpunet_checkpoint_source_init (&src, ckpt, weights, arch->name);
  st = model_build (arch_name, &src.base, gpunet_checkpoint_source (ckpt), arch, out, error_text);
  gpunet_checkpoint_source_clear (&src);
  gpunet_checkpoint_free (ckpt);
  return st;
}

gpunet_status
gpunet_model_new_random (const char *arch_name, uint64_t seed, gpunet_model **out,
    char **error_text)
{
  if (!arch_name || !out)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_model_new_random needs an architecture and an output pointer");
  *out = NULL;
  gpunet_arch *arch = NULL;
  gpunet_status st = gpunet_arch_load (arch_name, &arch, error_text);
  if (st != GPUNET_OK)
    return st;
  gpunet_random_source_t src;
  gpunet_random_source_init (&src, seed);
  return model_build (arch_name, &src.base, "random", arch, out, error_text);
}

gpunet_model *
gpunet_model_ref (gpunet_model *m)
{
  if (m)
    atomic_fetch_add (&m->refcount, 1);
  return m;
}

void
gpunet_model_unref (gpunet_model *m)
{
  if (!m || atomic_fetch_sub (&m->refcount, 1) != 1)
    return;
  gpunet_graph_clear (&m->built);
  gpunet_arch_free (m->arch);
  free (m->weights_source);
  free (m);
}

const char *gpunet_model_name (const gpunet_model *m) { return m->arch->name; }
int gpunet_model_resolution (const gpunet_model *m) { return m->arch->resolution; }
int gpunet_model_num_classes (const gpunet_model *m) { return m->arch->num_classes; }
float gpunet_model_crop_pct (const gpunet_model *m) { return m->arch->crop_pct; }
int64_t gpunet_model_num_params (const gpunet_model *m) { return m->built.num_params; }
double gpunet_model_flops (const gpunet_model *m) { return 2.0 * m->built.macs; }
const char *gpunet_model_weights_source (const gpunet_model *m) { return m->weights_source; }

const gpunet_graph *
gpunet_model_graph (const gpunet_model *m)
{
  return &m->built.graph;
}
