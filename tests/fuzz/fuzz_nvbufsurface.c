/* fuzz_nvbufsurface.c: one NvBufSurface entry as the NVMM input reads it from
 * SYSTEM memory (gst_gpunet_surface_image in gst/gstgpunetsurface.c).  The entry's
 * fields come from the input; its dataPtr points at dataSize (at most 1 MiB) bytes of
 * ours, filled from the rest of the input.  An accepted entry is handed to the host
 * preprocess (kernels/host/preprocess.c), which the engine runs on such frames: every
 * byte it reads must lie inside those dataSize bytes (ASan's redzone follows them). */
#include "fuzz_common.h"

#include "gstgpunetsurface.h"
#include "preprocess.h"

enum { OUT = 16 };

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GpunetNvBufSurfaceParams p;
  gpunet_image img;
  gboolean full = FALSE;
  gchar *err = NULL;
  uint8_t *bytes;
  size_t n, rest, i;

  if (size < sizeof p + 1)
    return 0;
  memcpy (&p, data, sizeof p);
  n = p.dataSize % (1u << 20);
  p.dataSize = (uint32_t) n;
  bytes = malloc (n ? n : 1);
  rest = size - sizeof p - 1;
  for (i = 0; i < n; i++)
    bytes[i] = rest ? data[sizeof p + 1 + i % rest] : 0;
  p.dataPtr = bytes;
  memset (&img, 0, sizeof img);
  if (gst_gpunet_surface_image (&p, 0, FALSE, &img, &full, &err)) {
    const uint8_t knobs = data[sizeof p];
    gpunet_preprocess_plan plan;

    img.matrix = (knobs & 1) ? GPUNET_MATRIX_BT709 : GPUNET_MATRIX_BT601;
    img.full_range = full || (knobs & 2);
    img.memory = GPUNET_MEMORY_HOST;
    /* the plan's tap tables grow with the frame: large ones cost time, not coverage */
    if ((uint64_t) img.width * (uint64_t) img.height <= (1u << 22)
        && gpunet_preprocess_plan_init (&plan, img.width, img.height, OUT,
            (gpunet_resize_mode) ((knobs >> 2) % 3), 0.875f) == GPUNET_OK) {
      static float out[3 * OUT * OUT];

      plan.simd_cap = (knobs >> 4) % 3 - 1;   /* what the CPU has, portable, AVX2 */
      gpunet_cpu_preprocess (&plan, &img, out);
      gpunet_preprocess_plan_clear (&plan);
    }
  } else if (err == NULL) {
    abort ();                   /* a refusal always says why */
  }
  g_free (err);
  free (bytes);
  return 0;
}
