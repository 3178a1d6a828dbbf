/* cuda_status_class.h: which engine status a cuDNN 9 status code becomes, as plain C on
 * the numeric codes so tests/test_cuda_math.c needs no cuDNN headers (status.cu checks
 * at compile time that these numbers are cudnn_graph.h's).  In cuDNN 9 the old
 * CUDNN_STATUS_ALLOC_FAILED is only the HOST allocation failure (4003); a device
 * allocation failure is 4004.  A cuDNN that cannot run here (a sub-library missing,
 * driver or runtime too old, GPU not supported) is "backend unavailable", so
 * backend=auto falls back to the CPU. */
#ifndef GPUNET_CUDA_STATUS_CLASS_H
#define GPUNET_CUDA_STATUS_CLASS_H

#include "gpunet-types.h"

enum {
  GPUNET_CUDNN_NOT_INITIALIZED = 1001,
  GPUNET_CUDNN_SUBLIBRARY_VERSION_MISMATCH = 1002,
  GPUNET_CUDNN_SUBLIBRARY_LOADING_FAILED = 1008,
  GPUNET_CUDNN_INCOMPATIBLE_CUDA_DRIVER = 3005,
  GPUNET_CUDNN_INCOMPATIBLE_CUDART = 3006,
  GPUNET_CUDNN_ARCH_MISMATCH = 3007,
  GPUNET_CUDNN_RUNTIME_PREREQUISITE_MISSING = 3008,
  GPUNET_CUDNN_SUBLIBRARY_UNAVAILABLE = 3009,
  GPUNET_CUDNN_HOST_ALLOCATION_FAILED = 4003,
  GPUNET_CUDNN_DEVICE_ALLOCATION_FAILED = 4004
};

static inline gpunet_status
gpunet_cuda_dnn_status_class (int code)
{
  switch (code) {
    case GPUNET_CUDNN_HOST_ALLOCATION_FAILED:
    case GPUNET_CUDNN_DEVICE_ALLOCATION_FAILED:
      return GPUNET_ERR_NO_MEMORY;
    case GPUNET_CUDNN_NOT_INITIALIZED:
    case GPUNET_CUDNN_SUBLIBRARY_VERSION_MISMATCH:
    case GPUNET_CUDNN_SUBLIBRARY_LOADING_FAILED:
    case GPUNET_CUDNN_INCOMPATIBLE_CUDA_DRIVER:
    case GPUNET_CUDNN_INCOMPATIBLE_CUDART:
    case GPUNET_CUDNN_ARCH_MISMATCH:
    case GPUNET_CUDNN_RUNTIME_PREREQUISITE_MISSING:
    case GPUNET_CUDNN_SUBLIBRARY_UNAVAILABLE:
      return GPUNET_ERR_BACKEND_UNAVAILABLE;
    default:
      return GPUNET_ERR_BACKEND;
  }
}

/* A hint appended to the sentence of some codes ("" for the others). */
static inline const char *
gpunet_cuda_dnn_status_hint (int code)
{
  switch (code) {
    case GPUNET_CUDNN_SUBLIBRARY_LOADING_FAILED:
    case GPUNET_CUDNN_SUBLIBRARY_UNAVAILABLE:
    case GPUNET_CUDNN_SUBLIBRARY_VERSION_MISMATCH:
      return " (a cuDNN 9 sub-library such as libcudnn_cnn.so.9 or libcudnn_engines_*.so.9 is "
          "missing or of another version: install the complete cuDNN 9 package)";
    case GPUNET_CUDNN_INCOMPATIBLE_CUDA_DRIVER:
    case GPUNET_CUDNN_INCOMPATIBLE_CUDART:
      return " (the NVIDIA driver or CUDA runtime is too old for this cuDNN)";
    case GPUNET_CUDNN_ARCH_MISMATCH:
      return " (this cuDNN does not support this GPU)";
    case GPUNET_CUDNN_HOST_ALLOCATION_FAILED:
      return " (out of host memory)";
    case GPUNET_CUDNN_DEVICE_ALLOCATION_FAILED:
      return " (out of device memory)";
    default:
      return "";
  }
}

#endif /* GPUNET_CUDA_STATUS_CLASS_H */
