/* tensor.c: the weights readers' tensor type: element sizes and names, conversion to
 * float32.  Below both checkpoint.c and safetensors.c, which it knows nothing of. */
#include "tensor.h"

#include <math.h>
#include <string.h>

#include "error.h"

size_t
gpunet_dtype_size (gpunet_dtype d)
{
  switch (d) {
    case GPUNET_DTYPE_F64: case GPUNET_DTYPE_I64: return 8;
    case GPUNET_DTYPE_F32: case GPUNET_DTYPE_I32: return 4;
    case GPUNET_DTYPE_F16: case GPUNET_DTYPE_BF16: case GPUNET_DTYPE_I16: return 2;
    default: return 1;
  }
}

const char *
gpunet_dtype_name (gpunet_dtype dtype)
{
  switch (dtype) {
    case GPUNET_DTYPE_F32: return "float32";
    case GPUNET_DTYPE_F16: return "float16";
    case GPUNET_DTYPE_BF16: return "bfloat16";
    case GPUNET_DTYPE_F64: return "float64";
    case GPUNET_DTYPE_I64: return "int64";
    case GPUNET_DTYPE_I32: return "int32";
    case GPUNET_DTYPE_I16: return "int16";
    case GPUNET_DTYPE_I8: return "int8";
    case GPUNET_DTYPE_U8: return "uint8";
    case GPUNET_DTYPE_BOOL: return "bool";
  }
  return "unknown";
}

/* ---- conversion ---------------------------------------------------------------------- */

static float
half_to_float (uint16_t h)
{
  uint32_t sign = (uint32_t) (h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    float f = ldexpf ((float) mant, -24);   /* zero and subnormals */
    return sign ? -f : f;
  } else if (exp == 31)
    bits = sign | 0x7f800000u | (mant << 13);   /* inf, nan (payload kept) */
  else
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  float f;
  memcpy (&f, &bits, sizeof f);
  return f;
}

gpunet_status
gpunet_tensor_to_f32 (const gpunet_tensor *t, float *dst, size_t n, char **error_text)
{
  if (!t || (n && !dst))
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "gpunet_tensor_to_f32: no tensor");
  const char *name = t->name ? t->name : "(unnamed)";
  if (t->numel < 0 || (uint64_t) n != (uint64_t) t->numel)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "tensor '%s' has %lld elements, not %zu", name, (long long) t->numel, n);
  if (t->nbytes != n * gpunet_dtype_size (t->dtype))
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "tensor '%s' has %zu bytes, which does not match its %zu %s elements", name,
        t->nbytes, n, gpunet_dtype_name (t->dtype));
  const uint8_t *s = t->data;
  switch (t->dtype) {
    case GPUNET_DTYPE_F32:
      if (n)
        memcpy (dst, s, n * 4);
      return GPUNET_OK;
    case GPUNET_DTYPE_F16:
      for (size_t i = 0; i < n; i++)
        dst[i] = half_to_float ((uint16_t) (s[2 * i] | (s[2 * i + 1] << 8)));
      return GPUNET_OK;
    case GPUNET_DTYPE_BF16:
      for (size_t i = 0; i < n; i++) {
        uint32_t bits = ((uint32_t) s[2 * i] << 16) | ((uint32_t) s[2 * i + 1] << 24);
        memcpy (&dst[i], &bits, sizeof bits);
      }
      return GPUNET_OK;
    case GPUNET_DTYPE_F64:
      for (size_t i = 0; i < n; i++) {
        double d;
        memcpy (&d, s + 8 * i, sizeof d);
        dst[i] = (float) d;
      }
      return GPUNET_OK;
    default:
      return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
          "tensor '%s' holds %s values, not floating point", name, gpunet_dtype_name (t->dtype));
  }
}
