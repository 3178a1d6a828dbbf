/* registry.c: the list of backends of registry.h and how each is found. */
#include "registry.h"

#include "kernel_error.h"
#include "cuda/cuda_module.h"
#include "cpu_module.h"

static const gpunet_backend_entry entries[] = {
  {GPUNET_BACKEND_AUTO, "auto", "CUDA when built and a GPU works, else cpu"},
  {GPUNET_BACKEND_CPU, "cpu", "the fast CPU backend (oneDNN)"},
  {GPUNET_BACKEND_CUDA, "cuda", "the CUDA backend (a module loaded at run time)"},
  {GPUNET_BACKEND_CPU_REF, "cpu-ref",
      "the reference CPU oracle: plain single-threaded loops, for checking the others"},
};

const gpunet_backend_entry *
gpunet_backend_entries (int *n)
{
  *n = (int) (sizeof entries / sizeof entries[0]);
  return entries;
}

const gpunet_backend *
gpunet_backend_find (gpunet_backend_kind kind, char **error_text)
{
  switch (kind) {
    case GPUNET_BACKEND_CPU:
#ifdef GPUNET_HAVE_ONEDNN
      return gpunet_backend_cpu_get (error_text);
#else
      return &gpunet_backend_cpu_ref;
#endif
    case GPUNET_BACKEND_CPU_REF:
      return &gpunet_backend_cpu_ref;
    case GPUNET_BACKEND_CUDA:
      return gpunet_backend_cuda_get (error_text);
    case GPUNET_BACKEND_AUTO:
      gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
          "backend auto is a choice between backends, not one: ask the session for it");
      return NULL;
  }
  gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
      "backend kind %d is not a gpunet_backend_kind value (auto, cpu, cuda, cpu-ref)",
      (int) kind);
  return NULL;
}
