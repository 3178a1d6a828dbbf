/* fuzz_safetensors.c: the safetensors reader (models/safetensors.c and the JSON
 * header it parses) over arbitrary bytes; the sink reads each tensor's first and
 * last byte so ASan checks every range the reader hands out. */
#include "fuzz_common.h"

#include "checkpoint.h"
#include "safetensors.h"

static gpunet_status
sink (void *ctx, const char *name, const gpunet_tensor *t, char **error_text)
{
  volatile size_t acc = strlen (name);
  (void) ctx;
  (void) error_text;
  if (t->nbytes > 0)
    acc += ((const uint8_t *) t->data)[0] + ((const uint8_t *) t->data)[t->nbytes - 1];
  (void) acc;
  return GPUNET_OK;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *err = NULL;

  (void) gpunet_safetensors_detect (data, size);
  (void) gpunet_safetensors_read (data, size, sink, NULL, &err);
  fuzz_drop_error (&err);
  return 0;
}
