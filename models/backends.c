/* backends.c: which CPU backend sessions use.  The CUDA backend is found by
 * kernels/cuda_loader.c, which opens its own module so one binary works on hosts
 * without the CUDA libraries. */
#include "error.h"
#include "session_private.h"

const gpunet_backend *
gpunet_backend_cpu_get (void)
{
  return &gpunet_backend_cpu_ref;
}
