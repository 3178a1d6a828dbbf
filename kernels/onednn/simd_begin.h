/* simd_begin.h: opens one instruction set for the vector kernels of the fast CPU path.
 * Define SIMD_WIDTH as 16 (AVX-512F, nChw16c) or 8 (AVX2 + FMA, nChw8c), include this, then
 * the kernel code, then simd_end.h; a file may do that once per width.  Between the two the
 * functions are compiled for that target and these are defined: VW (floats per vector, the
 * channel block), VEC (the vector type), V_LOAD/V_STORE (aligned), V_LOADU, V_ADD, V_SUB,
 * V_MUL, V_FMA (a b + c), V_FNMA (-a b + c), V_SET1, V_ZERO, V_MAX, V_MIN, V_ROUND (to
 * nearest), V_LDEXP (y 2^n for integral n, y 2^n normal), V_RCP (reciprocal estimate, at
 * least 12 bits), FN (name) (the instruction set's name for a function), and the
 * activations FN (simd_exp2) and FN (simd_act) (simd_act.h).  x86 with GCC only. */
#include <immintrin.h>

#if SIMD_WIDTH == 16
#pragma GCC push_options
#pragma GCC target("avx512f")
#define VW 16
#define VEC __m512
#define V_LOAD _mm512_load_ps
#define V_LOADU _mm512_loadu_ps
#define V_STORE _mm512_store_ps
#define V_ADD _mm512_add_ps
#define V_SUB _mm512_sub_ps
#define V_MUL _mm512_mul_ps
#define V_DIV _mm512_div_ps
#define V_FMA _mm512_fmadd_ps
#define V_FNMA _mm512_fnmadd_ps
#define V_SET1 _mm512_set1_ps
#define V_ZERO _mm512_setzero_ps
#define V_MAX _mm512_max_ps
#define V_MIN _mm512_min_ps
#define V_ROUND(x) _mm512_roundscale_ps ((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_LDEXP _mm512_scalef_ps
#define V_RCP _mm512_rcp14_ps
#define FN(name) name##_avx512
#elif SIMD_WIDTH == 8
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define VW 8
#define VEC __m256
#define V_LOAD _mm256_load_ps
#define V_LOADU _mm256_loadu_ps
#define V_STORE _mm256_store_ps
#define V_ADD _mm256_add_ps
#define V_SUB _mm256_sub_ps
#define V_MUL _mm256_mul_ps
#define V_DIV _mm256_div_ps
#define V_FMA _mm256_fmadd_ps
#define V_FNMA _mm256_fnmadd_ps
#define V_SET1 _mm256_set1_ps
#define V_ZERO _mm256_setzero_ps
#define V_MAX _mm256_max_ps
#define V_MIN _mm256_min_ps
#define V_ROUND(x) _mm256_round_ps ((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* y 2^n: n added to y's exponent field (y 2^n must be a normal float) */
#define V_LDEXP(y, n) _mm256_castsi256_ps (_mm256_add_epi32 (_mm256_castps_si256 (y), \
    _mm256_slli_epi32 (_mm256_cvtps_epi32 (n), 23)))
#define V_RCP _mm256_rcp_ps
#define FN(name) name##_avx2
#else
#error "simd_begin.h: define SIMD_WIDTH as 16 or 8"
#endif

#include "simd_act.h"
