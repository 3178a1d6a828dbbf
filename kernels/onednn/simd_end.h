/* simd_end.h: closes what simd_begin.h opened (see there). */
#pragma GCC pop_options
#undef SIMD_WIDTH
#undef VW
#undef VEC
#undef V_LOAD
#undef V_LOADU
#undef V_STORE
#undef V_ADD
#undef V_SUB
#undef V_MUL
#undef V_DIV
#undef V_FMA
#undef V_FNMA
#undef V_SET1
#undef V_ZERO
#undef V_MAX
#undef V_MIN
#undef V_ROUND
#undef V_LDEXP
#undef V_RCP
#undef FN
