/* fuzz_labels.c: the labels-file reader (gpunet_labels_parse in models/labels.c) over
 * arbitrary bytes.  The first byte picks the class count (1..256), so that the count
 * check passes often enough for the line splitting and stripping to be exercised. */
#include "fuzz_common.h"

#include "gpunet.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char **labels = NULL, *err = NULL;
  int n_classes;

  if (size < 1)
    return 0;
  n_classes = 1 + data[0];
  if (gpunet_labels_parse ((const char *) data + 1, size - 1, n_classes, &labels,
          &err) == GPUNET_OK) {
    volatile size_t acc = 0;
    int i;
    for (i = 0; i < n_classes; i++)
      acc += strlen (labels[i]);
    (void) acc;
    if (labels[n_classes] != NULL)
      abort ();                 /* the array is NULL-terminated */
  }
  fuzz_drop_error (&err);
  gpunet_labels_free (labels);
  return 0;
}
