/* test_int8_layout: the layout moves around int8 convolutions (kernels/onednn/
 * int8_layout.c).  The portable form is the definition: it is checked here on values
 * whose results are known (ties to even, saturation, NaN, the residual sum, bf16
 * rounding).  Each vector form this CPU has (AVX-512 on 16-channel blocks, bf16 output
 * with AVX-512 BF16; AVX2 on 8-channel blocks) must then give the portable form's bytes
 * exactly, on random values with special ones mixed in, channel counts on and off the
 * block, pixel counts across the 64-pixel tiles, two images, both directions, u8 and s8,
 * f32 and bf16.  That the moves equal oneDNN's reorders is checked on whole networks by
 * test_int8 (layout).  Exit 77 where the CPU has no vector form (AVX2 or AVX-512BW). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocked_ops.h"
#include "cpu_bf16.h"
#include "int8_layout.h"

static uint32_t rng = 2463534242u;

static float
frand (void)   /* [-1, 1) */
{
  rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
  return (float) (rng >> 8) / 8388608.0f - 1.0f;
}

static float
bits (uint32_t u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

/* a value for element i: mostly uniform over a range past the int8 one (at scale
 * 1/inv), some exact halves, some specials */
static float
value (size_t i, float scale)
{
  switch (i % 29) {
    case 3: return NAN;
    case 7: return INFINITY;
    case 11: return -INFINITY;
    case 13: return bits (0x00000003u);            /* subnormal */
    case 17: return ((float) (int) (frand () * 100.0f) + 0.5f) * scale;   /* a tie */
    case 19: return -0.0f;
    default: return frand () * 300.0f * scale;
  }
}

static uint16_t
to_bf16_trunc (float f)
{
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  return (uint16_t) (u >> 16);
}

static int failures;

#define CHECK(cond, ...) \
  do { \
    if (!(cond)) { \
      failures++; \
      fprintf (stderr, "FAIL: " __VA_ARGS__); \
      fputc ('\n', stderr); \
    } \
  } while (0)

/* the portable form on known values */
static void
known_values (void)
{
  /* one image, 3 channels in a 16-block, 1 pixel; inv = 0.5 (scale 2) */
  float src[16] = { 5.0f, -5.0f, 3.0f };   /* 2.5 -> 2, -2.5 -> -2, 1.5 -> 2 */
  int8_t s8[3];
  uint8_t u8[3];
  gpunet_int8_quantize (src, 0, 16, 3, 16, 1, 1, 0.5f, 0, s8, GPUNET_I8L_PORTABLE, 1);
  CHECK (s8[0] == 2 && s8[1] == -2 && s8[2] == 2, "ties to even: %d %d %d", s8[0], s8[1],
      s8[2]);
  src[0] = 1000.0f, src[1] = -1000.0f, src[2] = NAN;
  gpunet_int8_quantize (src, 0, 16, 3, 16, 1, 1, 0.5f, 0, s8, GPUNET_I8L_PORTABLE, 1);
  CHECK (s8[0] == 127 && s8[1] == -128 && s8[2] == -128, "s8 saturation, NaN: %d %d %d",
      s8[0], s8[1], s8[2]);
  gpunet_int8_quantize (src, 0, 16, 3, 16, 1, 1, 0.5f, 1, u8, GPUNET_I8L_PORTABLE, 1);
  CHECK (u8[0] == 255 && u8[1] == 0 && u8[2] == 0, "u8 saturation, NaN: %d %d %d", u8[0],
      u8[1], u8[2]);
  /* bf16 input read exactly: 1.5 * 2 = 3 */
  uint16_t sb[16] = { to_bf16_trunc (1.5f), to_bf16_trunc (-7.0f) };
  gpunet_int8_quantize (sb, 1, 16, 2, 16, 1, 1, 2.0f, 0, s8, GPUNET_I8L_PORTABLE, 1);
  CHECK (s8[0] == 3 && s8[1] == -14, "bf16 input: %d %d", s8[0], s8[1]);

  /* unpack: 2 channels nhwc -> 16-block with the residual; padded lanes 0 */
  float nhwc[2] = { 1.0f, 2.0f };
  float blk[16];
  for (int i = 0; i < 16; i++)
    blk[i] = 9.0f;
  gpunet_int8_unpack (nhwc, 2, 16, 1, 1, blk, 0, 16, 0, GPUNET_I8L_PORTABLE, 1);
  int zero = 1;
  for (int i = 2; i < 16; i++)
    zero &= blk[i] == 0.0f;
  CHECK (blk[0] == 1.0f && blk[1] == 2.0f && zero, "unpack: %g %g, padded lanes 0: %d",
      blk[0], blk[1], zero);
  gpunet_int8_unpack (nhwc, 2, 16, 1, 1, blk, 0, 16, 1, GPUNET_I8L_PORTABLE, 1);
  CHECK (blk[0] == 2.0f && blk[1] == 4.0f, "unpack adds the residual: %g %g", blk[0], blk[1]);
  /* bf16 output: 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1; 1 + 3 * 2^-8 goes
   * up to 1 + 2^-6 */
  float t[2] = { 1.0f + 1.0f / 256.0f, 1.0f + 3.0f / 256.0f };
  uint16_t ob[16];
  gpunet_int8_unpack (t, 2, 16, 1, 1, ob, 1, 16, 0, GPUNET_I8L_PORTABLE, 1);
  CHECK (ob[0] == 0x3f80 && ob[1] == 0x3f82, "bf16 rounding: %04x %04x", ob[0], ob[1]);
}

/* the vector form (GPUNET_I8L_AUTO) against the portable form */
static void
compare (int blk, int c, long hw, int n, int src_bf16, int uns, int dst_bf16, int add)
{
  const int cp = (c + blk - 1) / blk * blk;
  const size_t nb = (size_t) n * (size_t) cp * (size_t) hw, nn = (size_t) n * (size_t) hw * c;
  const float scale = 0.05f, inv = 1.0f / scale;
  float *bf = gpunet_blk_alloc (nb), *nh = gpunet_blk_alloc (nn + 16);
  uint16_t *b16 = (uint16_t *) gpunet_blk_alloc (nb / 2 + 16);
  uint8_t *qa = malloc (nn + 1), *qb = malloc (nn + 1);
  float *oa = gpunet_blk_alloc (nb), *ob = gpunet_blk_alloc (nb);
  if (!bf || !nh || !b16 || !qa || !qb || !oa || !ob) {
    fprintf (stderr, "FAIL: out of memory\n");
    exit (1);
  }
  for (size_t i = 0; i < nb; i++) {
    bf[i] = value (i, scale);
    b16[i] = to_bf16_trunc (bf[i]);
  }
  for (size_t i = 0; i < nn; i++)
    nh[i] = value (i + 5, 1.0f);
  const void *src = src_bf16 ? (const void *) b16 : (const void *) bf;
  gpunet_int8_quantize (src, src_bf16, blk, c, cp, hw, n, inv, uns, qa, GPUNET_I8L_AUTO, 2);
  gpunet_int8_quantize (src, src_bf16, blk, c, cp, hw, n, inv, uns, qb,
      GPUNET_I8L_PORTABLE, 2);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < nn; i++)
    if (qa[i] != qb[i] && !bad++)
      first = i;
  CHECK (!bad, "quantise blk=%d c=%d hw=%ld n=%d %s %s: %zu bytes differ (first %zu: %d, "
      "portable %d)", blk, c, hw, n, src_bf16 ? "bf16" : "f32", uns ? "u8" : "s8", bad, first,
      qa[first], qb[first]);
  /* unpack into buffers holding the same residual (padded lanes 0, as in a network) */
  const size_t osz = dst_bf16 ? 2 : 4;
  for (size_t i = 0; i < nb; i++) {
    const int lane_c = (int) (i / ((size_t) hw * blk) % (size_t) (cp / blk)) * blk
        + (int) (i % (size_t) blk);
    const float r = lane_c < c ? frand () * 4.0f : 0.0f;
    if (dst_bf16) {
      ((uint16_t *) oa)[i] = ((uint16_t *) ob)[i] = to_bf16_trunc (r);
    } else
      oa[i] = ob[i] = r;
  }
  gpunet_int8_unpack (nh, c, cp, hw, n, oa, dst_bf16, blk, add, GPUNET_I8L_AUTO, 2);
  gpunet_int8_unpack (nh, c, cp, hw, n, ob, dst_bf16, blk, add, GPUNET_I8L_PORTABLE, 2);
  bad = memcmp (oa, ob, nb * osz) != 0;
  CHECK (!bad, "unpack blk=%d c=%d hw=%ld n=%d to %s%s: the vector form differs", blk, c, hw,
      n, dst_bf16 ? "bf16" : "f32", add ? " adding the residual" : "");
  free (bf), free (nh), free (b16), free (qa), free (qb), free (oa), free (ob);
}

int
main (void)
{
  known_values ();
  const int v16 = gpunet_int8_layout_vector (16, 0), v8 = gpunet_int8_layout_vector (8, 0);
  const int bf = v16 && gpunet_cpu_avx512_bf16 ();
  if (!v16 && !v8) {
    printf ("%s\nSKIP: this CPU has neither AVX-512BW nor AVX2: no vector form to compare "
        "(the portable form's known values above were checked)\n", failures ? "FAILED" : "");
    return failures ? 1 : 77;
  }
  const int cs[] = { 5, 16, 33, 99 };
  const long hws[] = { 1, 63, 130 };
  for (int ci = 0; ci < 4; ci++)
    for (int hi = 0; hi < 3; hi++)
      for (int uns = 0; uns < 2; uns++)
        for (int add = 0; add < 2; add++) {
          if (v16) {
            compare (16, cs[ci], hws[hi], 2, 0, uns, 0, add);
            compare (16, cs[ci], hws[hi], 2, 1, uns, 0, add);
            if (bf)
              compare (16, cs[ci], hws[hi], 2, 1, uns, 1, add);
          }
          if (v8)
            compare (8, cs[ci], hws[hi], 2, 0, uns, 0, add);
        }
  char ran[64] = "", not_run[64] = "";
  strcat (v16 ? ran : not_run, "avx512,");
  strcat (bf ? ran : not_run, "avx512-bf16,");
  strcat (v8 ? ran : not_run, "avx2,");
  ran[strlen (ran) ? strlen (ran) - 1 : 0] = '\0';
  not_run[strlen (not_run) ? strlen (not_run) - 1 : 0] = '\0';
  printf ("isa-paths: ran=%s not-run=%s\n", ran, not_run);
  printf ("%s\n", failures ? "FAILED" : "passed");
  return failures ? 1 : 0;
}
