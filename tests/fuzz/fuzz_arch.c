/* fuzz_arch.c: the JSON reader (models/json.c) and the architecture validator on top
 * of it (models/arch.c) over arbitrary bytes: the text an architecture file holds. */
#include "fuzz_common.h"

#include "arch.h"
#include "json.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  gpunet_json *json = NULL;
  gpunet_arch *arch = NULL;
  char *err = NULL;

  if (gpunet_json_parse ((const char *) data, size, &json, &err) == GPUNET_OK) {
    (void) gpunet_json_get (json, "data");
    gpunet_json_free (json);
  }
  fuzz_drop_error (&err);
  if (gpunet_arch_parse ((const char *) data, size, "fuzz.json", &arch, &err) == GPUNET_OK)
    gpunet_arch_free (arch);
  fuzz_drop_error (&err);
  return 0;
}
