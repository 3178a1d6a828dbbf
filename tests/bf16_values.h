/* bf16_values.h: the values the bf16 kernel tests draw and read (test_bf16_dwconv.c,
 * test_wino_bf16.c, test_bf16_pwconv.c): a seeded linear congruential generator in
 * [-1, 1) (set test_rng first for a test's own sequence) and the exact widening of a bf16
 * number to f32. */
#ifndef GPUNET_TEST_BF16_VALUES_H
#define GPUNET_TEST_BF16_VALUES_H

#include <stdint.h>
#include <string.h>

static uint32_t test_rng = 12345u;

static inline float
frand (void)
{
  test_rng = test_rng * 1664525u + 1013904223u;
  return (float) ((test_rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static inline float
bf16_f32 (uint16_t h)
{
  const uint32_t u = (uint32_t) h << 16;
  float x;
  memcpy (&x, &u, sizeof x);
  return x;
}

#endif
