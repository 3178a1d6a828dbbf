/* fuzz_checkpoint.c: a whole weights file from memory (models/checkpoint.c: format
 * detection, zip + pickle + tensor checks, or safetensors), then every tensor converted
 * to float32 where it is floating, as the engine does when it loads weights. */
#include "fuzz_common.h"

#include <stdio.h>

#include "checkpoint.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  gpunet_checkpoint *ck = NULL;
  char *err = NULL;
  size_t i, n;

  if (gpunet_checkpoint_open_memory (data, size, "fuzz", &ck, &err) != GPUNET_OK) {
    fuzz_drop_error (&err);
    return 0;
  }
  (void) gpunet_checkpoint_source (ck);
  n = gpunet_checkpoint_n_tensors (ck);
  for (i = 0; i < n; i++) {
    const gpunet_tensor *t = gpunet_checkpoint_tensor (ck, i);
    int64_t prod = 1;
    int d;

    /* the reader's promise: an accepted shape multiplies out (zeros aside) without
     * overflow, so a converted file is one our safetensors reader accepts too */
    for (d = 0; d < t->ndim; d++)
      if (t->shape[d] < 0 || (t->shape[d] > 0
              && __builtin_mul_overflow (prod, t->shape[d], &prod))) {
        fprintf (stderr, "fuzz_checkpoint: shape overflow in tensor '%s'\n", t->name);
        abort ();
      }

    (void) gpunet_checkpoint_find (ck, t->name);
    (void) gpunet_dtype_name (t->dtype);
    /* bounded so that a legal but huge tensor does not trip the fuzzer's RSS limit */
    if (t->numel > 0 && t->numel <= (1 << 20) && t->dtype <= GPUNET_DTYPE_F64) {
      float *f = malloc ((size_t) t->numel * sizeof *f);
      if (f != NULL) {
        (void) gpunet_tensor_to_f32 (t, f, (size_t) t->numel, &err);
        fuzz_drop_error (&err);
        free (f);
      }
    }
  }
  gpunet_checkpoint_free (ck);
  return 0;
}
