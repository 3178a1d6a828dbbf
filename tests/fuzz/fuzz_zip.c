/* fuzz_zip.c: the zip index (models/zipread.c) over arbitrary bytes: open, walk every
 * entry, look each one up by name and read the data of the stored ones. */
#include "fuzz_common.h"

#include "zipread.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  gpunet_zip *zip = NULL;
  char *err = NULL;
  size_t i, n;

  (void) gpunet_zip_detect (data, size);
  if (gpunet_zip_open (data, size, &zip, &err) != GPUNET_OK) {
    fuzz_drop_error (&err);
    return 0;
  }
  n = gpunet_zip_n_entries (zip);
  for (i = 0; i < n; i++) {
    const gpunet_zip_entry *e = gpunet_zip_entry_at (zip, i);
    const uint8_t *bytes = NULL;
    size_t len = 0;

    (void) gpunet_zip_find (zip, e->name);
    if (gpunet_zip_entry_data (zip, e, &bytes, &len, &err) == GPUNET_OK) {
      volatile uint8_t sum = 0;
      if (len > 0)              /* first and last byte: ASan checks the range */
        sum = bytes[0] ^ bytes[len - 1];
      (void) sum;
    }
    fuzz_drop_error (&err);
  }
  gpunet_zip_free (zip);
  return 0;
}
