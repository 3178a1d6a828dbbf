/* int8_layout.c: the quantising and unpacking layout moves around the int8
 * convolutions (int8_layout.h).  Work is split into tiles of pixels of one image; within
 * a tile, block by block, so that the blocked side is read or written as runs of
 * consecutive pixels and the nhwc side stays within the tile's rows (a few hundred
 * kilobytes at most).  They replace oneDNN's jit:uni reorders, which took two to three
 * times the int8 convolution itself on GPUNet-D1's 114x114 layers. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "blocked_ops.h"
#include "cpu_bf16.h"
#include "int8_layout.h"

#define TILE 64   /* pixels per task */

static inline size_t
blk_index (int blk, int cp, long hw, int b, int ch, long p)
{
  return ((size_t) b * (size_t) cp + (size_t) (ch / blk * blk)) * (size_t) hw
      + (size_t) p * (size_t) blk + (size_t) (ch % blk);
}

static inline float
load_value (const void *src, int bf, size_t i)
{
  if (bf) {
    const uint32_t u = (uint32_t) ((const uint16_t *) src)[i] << 16;
    float f;
    memcpy (&f, &u, sizeof f);
    return f;
  }
  return ((const float *) src)[i];
}

/* ---- portable forms: the definition ---- */

static void
quantize_tile_portable (const void *src, int bf, int blk, int c, int cp, long hw, int b,
    long p0, long p1, float inv, int uns, void *dst)
{
  const float lo = uns ? 0.0f : -128.0f, hi = uns ? 255.0f : 127.0f;
  for (long p = p0; p < p1; p++)
    for (int ch = 0; ch < c; ch++) {
      float x = load_value (src, bf, blk_index (blk, cp, hw, b, ch, p)) * inv;
      x = fminf (fmaxf (x, lo), hi);   /* NaN: lo, as the vector max */
      const size_t o = ((size_t) b * (size_t) hw + (size_t) p) * (size_t) c + (size_t) ch;
      const int q = (int) nearbyintf (x);
      if (uns)
        ((uint8_t *) dst)[o] = (uint8_t) q;
      else
        ((int8_t *) dst)[o] = (int8_t) q;
    }
}

static void
unpack_tile_portable (const float *src, int c, int cp, long hw, int b, long p0, long p1,
    void *dst, int bf, int blk, int add)
{
  for (int ch = 0; ch < cp; ch++)
    for (long p = p0; p < p1; p++) {
      float v = ch < c ? src[((size_t) b * (size_t) hw + (size_t) p) * (size_t) c
          + (size_t) ch] : 0.0f;
      const size_t o = blk_index (blk, cp, hw, b, ch, p);
      if (add)
        v = load_value (dst, bf, o) + v;
      if (bf)
        ((uint16_t *) dst)[o] = gpunet_bf16_rne (v);
      else
        ((float *) dst)[o] = v;
    }
}

/* ---- vector forms ---- */

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define HAVE_VECTOR 1

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
static void
quantize_tile_avx512 (const void *src, int bf, int c, int cp, long hw, int b, long p0,
    long p1, float inv, int uns, void *dst)
{
  const __m512 vinv = _mm512_set1_ps (inv);
  const __m512 lo = _mm512_set1_ps (uns ? 0.0f : -128.0f), hi = _mm512_set1_ps (uns ? 255.0f
      : 127.0f);
  for (int cb = 0; cb * 16 < c; cb++) {
    const int rem = c - cb * 16;
    const __mmask16 m = rem >= 16 ? (__mmask16) 0xffff : (__mmask16) ((1u << rem) - 1u);
    const size_t base = ((size_t) b * (size_t) cp + (size_t) cb * 16) * (size_t) hw;
    for (long p = p0; p < p1; p++) {
      const size_t i = base + (size_t) p * 16;
      __m512 x = bf ? _mm512_castsi512_ps (_mm512_slli_epi32 (_mm512_cvtepu16_epi32 (
                  _mm256_loadu_si256 ((const __m256i *) ((const uint16_t *) src + i))), 16))
          : _mm512_loadu_ps ((const float *) src + i);
      x = _mm512_min_ps (_mm512_max_ps (_mm512_mul_ps (x, vinv), lo), hi);
      const __m128i q = _mm512_cvtepi32_epi8 (_mm512_cvtps_epi32 (x));
      char *o = (char *) dst + ((size_t) b * (size_t) hw + (size_t) p) * (size_t) c
          + (size_t) cb * 16;
      _mm_mask_storeu_epi8 (o, m, q);
    }
  }
}

static void
unpack_tile_avx512_f32 (const float *src, int c, int cp, long hw, int b, long p0, long p1,
    float *dst, int add)
{
  for (int cb = 0; cb * 16 < cp; cb++) {
    const int rem = c - cb * 16;
    const __mmask16 m = rem >= 16 ? (__mmask16) 0xffff : rem <= 0 ? 0
        : (__mmask16) ((1u << rem) - 1u);
    const size_t base = ((size_t) b * (size_t) cp + (size_t) cb * 16) * (size_t) hw;
    for (long p = p0; p < p1; p++) {
      __m512 v = _mm512_maskz_loadu_ps (m, src + ((size_t) b * (size_t) hw + (size_t) p)
          * (size_t) c + (size_t) cb * 16);
      float *o = dst + base + (size_t) p * 16;
      if (add)
        v = _mm512_add_ps (_mm512_loadu_ps (o), v);
      _mm512_storeu_ps (o, v);
    }
  }
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16")
static void
unpack_tile_avx512_bf16 (const float *src, int c, int cp, long hw, int b, long p0, long p1,
    uint16_t *dst, int add)
{
  for (int cb = 0; cb * 16 < cp; cb++) {
    const int rem = c - cb * 16;
    const __mmask16 m = rem >= 16 ? (__mmask16) 0xffff : rem <= 0 ? 0
        : (__mmask16) ((1u << rem) - 1u);
    const size_t base = ((size_t) b * (size_t) cp + (size_t) cb * 16) * (size_t) hw;
    for (long p = p0; p < p1; p++) {
      __m512 v = _mm512_maskz_loadu_ps (m, src + ((size_t) b * (size_t) hw + (size_t) p)
          * (size_t) c + (size_t) cb * 16);
      uint16_t *o = dst + base + (size_t) p * 16;
      if (add)
        v = _mm512_add_ps (_mm512_castsi512_ps (_mm512_slli_epi32 (_mm512_cvtepu16_epi32 (
                        _mm256_loadu_si256 ((const __m256i *) o)), 16)), v);
      _mm256_storeu_si256 ((__m256i *) o, (__m256i) _mm512_cvtneps_pbh (v));
    }
  }
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
static void
quantize_tile_avx2 (const float *src, int c, int cp, long hw, int b, long p0, long p1,
    float inv, int uns, void *dst)
{
  const __m256 vinv = _mm256_set1_ps (inv);
  const __m256 lo = _mm256_set1_ps (uns ? 0.0f : -128.0f), hi = _mm256_set1_ps (uns ? 255.0f
      : 127.0f);
  for (int cb = 0; cb * 8 < c; cb++) {
    const int rem = c - cb * 8 < 8 ? c - cb * 8 : 8;
    const size_t base = ((size_t) b * (size_t) cp + (size_t) cb * 8) * (size_t) hw;
    for (long p = p0; p < p1; p++) {
      __m256 x = _mm256_loadu_ps (src + base + (size_t) p * 8);
      x = _mm256_min_ps (_mm256_max_ps (_mm256_mul_ps (x, vinv), lo), hi);
      const __m256i i32 = _mm256_cvtps_epi32 (x);
      const __m128i w = _mm_packs_epi32 (_mm256_castsi256_si128 (i32),
          _mm256_extracti128_si256 (i32, 1));
      const __m128i q = uns ? _mm_packus_epi16 (w, w) : _mm_packs_epi16 (w, w);
      char *o = (char *) dst + ((size_t) b * (size_t) hw + (size_t) p) * (size_t) c
          + (size_t) cb * 8;
      if (rem == 8)
        _mm_storel_epi64 ((__m128i *) o, q);
      else {
        uint8_t tmp[16];
        _mm_storeu_si128 ((__m128i *) tmp, q);
        memcpy (o, tmp, (size_t) rem);
      }
    }
  }
}

static void
unpack_tile_avx2 (const float *src, int c, int cp, long hw, int b, long p0, long p1,
    float *dst, int add)
{
  for (int cb = 0; cb * 8 < cp; cb++) {
    const int rem = c - cb * 8;
    const __m256i m = _mm256_cmpgt_epi32 (_mm256_set1_epi32 (rem),
        _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7));
    const size_t base = ((size_t) b * (size_t) cp + (size_t) cb * 8) * (size_t) hw;
    for (long p = p0; p < p1; p++) {
      const float *s = src + ((size_t) b * (size_t) hw + (size_t) p) * (size_t) c
          + (size_t) cb * 8;
      __m256 v = rem >= 8 ? _mm256_loadu_ps (s) : rem <= 0 ? _mm256_setzero_ps ()
          : _mm256_maskload_ps (s, m);
      float *o = dst + base + (size_t) p * 8;
      if (add)
        v = _mm256_add_ps (_mm256_loadu_ps (o), v);
      _mm256_storeu_ps (o, v);
    }
  }
}
#pragma GCC pop_options
#else
#define HAVE_VECTOR 0
#endif

int
gpunet_int8_layout_vector (int blk, int dst_bf16)
{
#if HAVE_VECTOR
  if (blk == 16)
    return __builtin_cpu_supports ("avx512f") && __builtin_cpu_supports ("avx512bw")
        && __builtin_cpu_supports ("avx512vl");
  if (blk == 8 && !dst_bf16)
    return __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma");
#endif
  (void) blk, (void) dst_bf16;
  return 0;
}

void
gpunet_int8_quantize (const void *src, int src_bf16, int blk, int c, int cp, long hw,
    int n, float inv, int uns, void *dst, int form, int nt)
{
  const int vec = form == GPUNET_I8L_AUTO && gpunet_int8_layout_vector (blk, 0)
      && (blk == 16 || !src_bf16);
  const long tiles = (hw + TILE - 1) / TILE, tasks = (long) n * tiles;
  if (nt < 1)
    nt = 1;
#pragma omp parallel for num_threads(nt) schedule(static) if ((long) n * cp * hw >= GPUNET_BLK_PARALLEL_MIN)
  for (long t = 0; t < tasks; t++) {
    const int b = (int) (t / tiles);
    const long p0 = t % tiles * TILE, p1 = p0 + TILE < hw ? p0 + TILE : hw;
#if HAVE_VECTOR
    if (vec && blk == 16) {
      quantize_tile_avx512 (src, src_bf16, c, cp, hw, b, p0, p1, inv, uns, dst);
      continue;
    }
    if (vec && blk == 8) {
      quantize_tile_avx2 (src, c, cp, hw, b, p0, p1, inv, uns, dst);
      continue;
    }
#endif
    quantize_tile_portable (src, src_bf16, blk, c, cp, hw, b, p0, p1, inv, uns, dst);
  }
  (void) vec;
}

void
gpunet_int8_unpack (const float *src, int c, int cp, long hw, int n, void *dst,
    int dst_bf16, int blk, int add, int form, int nt)
{
  const int vec = form == GPUNET_I8L_AUTO && gpunet_int8_layout_vector (blk, dst_bf16);
  const long tiles = (hw + TILE - 1) / TILE, tasks = (long) n * tiles;
  if (nt < 1)
    nt = 1;
#pragma omp parallel for num_threads(nt) schedule(static) if ((long) n * cp * hw >= GPUNET_BLK_PARALLEL_MIN)
  for (long t = 0; t < tasks; t++) {
    const int b = (int) (t / tiles);
    const long p0 = t % tiles * TILE, p1 = p0 + TILE < hw ? p0 + TILE : hw;
#if HAVE_VECTOR
    if (vec && blk == 16) {
      if (dst_bf16)
        unpack_tile_avx512_bf16 (src, c, cp, hw, b, p0, p1, dst, add);
      else
        unpack_tile_avx512_f32 (src, c, cp, hw, b, p0, p1, dst, add);
      continue;
    }
    if (vec && blk == 8) {
      unpack_tile_avx2 (src, c, cp, hw, b, p0, p1, dst, add);
      continue;
    }
#endif
    unpack_tile_portable (src, c, cp, hw, b, p0, p1, dst, dst_bf16, blk, add);
  }
  (void) vec;
}
