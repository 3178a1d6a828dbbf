/* fuzz_scales.c: the int8 scales-file reader (gpunet_scales_parse in models/scales.c)
 * over arbitrary bytes; what it accepts must satisfy its own invariants. */
#include "fuzz_common.h"

#include "calib.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  gpunet_scales s;
  char *err = NULL;

  if (gpunet_scales_parse (data, size, &s, &err) == GPUNET_OK) {
    for (int i = 0; i < s.n; i++)
      if (s.entries[i].min > s.entries[i].clip || (i && s.entries[i].op <= s.entries[i - 1].op))
        abort ();               /* the reader's own checks */
    gpunet_scales_clear (&s);
  }
  fuzz_drop_error (&err);
  return 0;
}
