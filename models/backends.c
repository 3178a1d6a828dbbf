/* backends.c: which compute backends this build has.  The CUDA backend lives in its
 * own module so one binary works on hosts without the CUDA libraries. */
#include "error.h"
#include "session_private.h"

const gpunet_backend *
gpunet_backend_cpu_get (void)
{
  return &gpunet_backend_cpu_ref;
}

const gpunet_backend *
gpunet_backend_cuda_get (char **error_text)
{
  gpunet_fail (error_text, GPUNET_ERR_BACKEND_UNAVAILABLE,
      "the CUDA backend is not part of this build (it was built without nvcc/cuDNN); "
      "use the CPU backend, or rebuild with -Dcuda=enabled on a machine with the CUDA toolkit");
  return NULL;
}
