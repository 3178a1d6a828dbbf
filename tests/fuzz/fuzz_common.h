/* fuzz_common.h: what every libFuzzer target here shares: the entry point's
 * declaration and the rule that an error sentence is freed (and read, so ASan sees
 * an out-of-bounds or unterminated one). */
#ifndef GPUNET_FUZZ_COMMON_H
#define GPUNET_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Touches every byte of an error sentence and frees it. */
static inline void
fuzz_drop_error (char **error_text)
{
  if (*error_text != NULL) {
    volatile size_t n = strlen (*error_text);
    (void) n;
    free (*error_text);
    *error_text = NULL;
  }
}

#endif
