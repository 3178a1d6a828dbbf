/* backends.c: which CPU backend sessions use: the oneDNN fast path when built (the
 * environment variable GPUNET_CPU_REFERENCE=1 selects the reference oracle instead).
 * The CUDA backend is found by kernels/cuda_loader.c, which opens its own module so
 * one binary works on hosts without the CUDA libraries. */
#include <stdlib.h>

#include "error.h"
#include "session_private.h"
#ifdef GPUNET_HAVE_ONEDNN
#include "../kernels/onednn/backend_onednn.h"
#endif

const gpunet_backend *
gpunet_backend_cpu_get (void)
{
#ifdef GPUNET_HAVE_ONEDNN
  if (!getenv ("GPUNET_CPU_REFERENCE"))
    return &gpunet_backend_cpu_fast;
#endif
  return &gpunet_backend_cpu_ref;
}
