/* status.cu: turns CUDA runtime and cuDNN codes into gpunet_status values with a
 * malloc()ed sentence that names the failing call, and the short op names used in those
 * sentences.  The module keeps its own copy of the formatting so it needs no engine
 * symbols (it is dlopen()ed with RTLD_LOCAL). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_internal.h"
#include "cuda_status_class.h"

/* cuda_status_class.h works on the numbers: they must be this cuDNN's. */
static_assert (GPUNET_CUDNN_NOT_INITIALIZED == (int) CUDNN_STATUS_NOT_INITIALIZED
    && GPUNET_CUDNN_SUBLIBRARY_VERSION_MISMATCH == (int) CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH
    && GPUNET_CUDNN_SUBLIBRARY_LOADING_FAILED == (int) CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED
    && GPUNET_CUDNN_INCOMPATIBLE_CUDA_DRIVER == (int) CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER
    && GPUNET_CUDNN_INCOMPATIBLE_CUDART == (int) CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART
    && GPUNET_CUDNN_ARCH_MISMATCH == (int) CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH
    && GPUNET_CUDNN_RUNTIME_PREREQUISITE_MISSING
        == (int) CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING
    && GPUNET_CUDNN_SUBLIBRARY_UNAVAILABLE == (int) CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE
    && GPUNET_CUDNN_HOST_ALLOCATION_FAILED == (int) CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED
    && GPUNET_CUDNN_DEVICE_ALLOCATION_FAILED == (int) CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
    "cuDNN status codes differ from cuda_status_class.h");

gpunet_status
gpunet_cuda_fail (char **error_text, gpunet_status status, const char *fmt, ...)
{
  if (!error_text)
    return status;
  va_list ap;
  va_start (ap, fmt);
  int len = vsnprintf (NULL, 0, fmt, ap);
  va_end (ap);
  char *s = len >= 0 ? (char *) malloc ((size_t) len + 1) : NULL;
  if (s) {
    va_start (ap, fmt);
    vsnprintf (s, (size_t) len + 1, fmt, ap);
    va_end (ap);
  }
  free (*error_text);
  *error_text = s;
  return status;
}

/* The engine status class of a runtime error. */
static gpunet_status
rt_status (cudaError_t err)
{
  switch (err) {
    case cudaErrorMemoryAllocation:
      return GPUNET_ERR_NO_MEMORY;
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return GPUNET_ERR_BACKEND_UNAVAILABLE;
    default:
      return GPUNET_ERR_BACKEND;
  }
}

gpunet_status
gpunet_cuda_fail_rt (char **error_text, cudaError_t err, const char *what)
{
  const char *hint = "";
  if (err == cudaErrorNoKernelImageForDevice)
    hint = " (this build has no kernels for this GPU's architecture: rebuild with it in -Dgpu_archs)";
  else if (err == cudaErrorInsufficientDriver)
    hint = " (the NVIDIA driver is missing or older than this CUDA runtime needs)";
  return gpunet_cuda_fail (error_text, rt_status (err), "%s: %s (%s)%s", what,
      cudaGetErrorName (err), cudaGetErrorString (err), hint);
}

gpunet_status
gpunet_cuda_fail_dnn (char **error_text, cudnnStatus_t st, const char *what)
{
  return gpunet_cuda_fail (error_text, gpunet_cuda_dnn_status_class ((int) st),
      "%s: %s (cuDNN status %d)%s", what, cudnnGetErrorString (st), (int) st,
      gpunet_cuda_dnn_status_hint ((int) st));
}

void
gpunet_cuda_op_name (const gpunet_op *op, int index, char *buf, size_t len)
{
  switch (op->kind) {
    case GPUNET_OP_CONV2D: {
      const gpunet_conv2d_params *p = &op->p.conv2d;
      snprintf (buf, len, "conv2d %dx%d/%d %d->%d%s (op %d, block %d)", p->kernel, p->kernel,
          p->stride, p->cin, p->cout, p->groups > 1 ? " grouped" : "", index, op->block);
      break;
    }
    case GPUNET_OP_DWCONV2D:
      snprintf (buf, len, "dwconv2d %dx%d/%d c%d (op %d, block %d)", op->p.dwconv2d.kernel,
          op->p.dwconv2d.kernel, op->p.dwconv2d.stride, op->p.dwconv2d.c, index, op->block);
      break;
    case GPUNET_OP_SE:
      snprintf (buf, len, "se c%d rd%d (op %d, block %d)", op->p.se.c, op->p.se.rd, index,
          op->block);
      break;
    case GPUNET_OP_AVGPOOL:
      snprintf (buf, len, "avgpool c%d (op %d, block %d)", op->p.avgpool.c, index, op->block);
      break;
    case GPUNET_OP_LINEAR:
      snprintf (buf, len, "linear %d->%d (op %d, block %d)", op->p.linear.cin, op->p.linear.cout,
          index, op->block);
      break;
    default:
      snprintf (buf, len, "op kind %d (op %d)", (int) op->kind, index);
      break;
  }
}
