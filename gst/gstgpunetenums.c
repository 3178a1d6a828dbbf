/* gstgpunetenums.c: the GEnum types of gpunetclassify's properties (backend,
 * precision, resize-mode, roi-mode), declared in gstgpunetclassify.h.  No state: each
 * type is registered once, thread safe. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstgpunetenums.h"

GType
gst_gpunet_backend_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPUNET_BACKEND_AUTO,
        "CUDA when built and a GPU works, else CPU (with an info message)", "auto"},
    {GST_GPUNET_BACKEND_CPU, "CPU", "cpu"},
    {GST_GPUNET_BACKEND_CUDA, "CUDA (fails when not built or no GPU)", "cuda"},
    {GST_GPUNET_BACKEND_CPU_REF,
        "CPU reference oracle (plain single-threaded loops: slow; for checking)",
        "cpu-ref"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpunetBackend", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* The precision property's values are gpunet_precision's. */
GType
gst_gpunet_precision_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GPUNET_PRECISION_AUTO,
        "fp16 on GPUs with tensor cores (compute capability 7.0 and newer), "
          "else fp32", "auto"},
    {GPUNET_PRECISION_FP32, "32-bit floats", "fp32"},
    {GPUNET_PRECISION_FP16,
        "16-bit floats for activations and weights, 32-bit accumulation", "fp16"},
    {GPUNET_PRECISION_BF16,
        "CPU: bfloat16 convolutions with 32-bit accumulation (needs AVX-512 BF16 or "
          "AMX; not exact)", "bf16"},
    {GPUNET_PRECISION_INT8,
        "CPU: int8 convolutions with 32-bit accumulation, calibrated scales from "
          "int8-scales (needs AVX2, fast with VNNI; not exact)", "int8"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpunetPrecision", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpunet_resize_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPUNET_RESIZE_CENTER_CROP,
          "Resize the shorter side to resolution / crop-pct, crop the centre "
          "(timm's evaluation transform)", "center-crop"},
    {GST_GPUNET_RESIZE_STRETCH, "Resize the whole frame, ignoring its aspect",
        "stretch"},
    {GST_GPUNET_RESIZE_LETTERBOX,
        "Fit the whole frame keeping its aspect, pad with the mean", "letterbox"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpunetResizeMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpunet_roi_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPUNET_ROI_MODE_FRAME, "Classify the whole frame; region metas are "
          "ignored", "frame"},
    {GST_GPUNET_ROI_MODE_REGIONS, "Classify each region meta (roi-types), "
          "not the frame", "regions"},
    {GST_GPUNET_ROI_MODE_BOTH, "Classify the whole frame and each region meta",
        "both"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpunetRoiMode", values);
    g_once_init_leave (&type, t);
  }
  return type;
}
