/* se_simd.h: the vector code of se.c, included there once per instruction set between
 * simd_begin.h and simd_end.h (which define VW, VEC, V_* and FN).  No include guard: meant
 * to be included more than once. */

/* The sum over pixels p0 .. p1 - 1 of one channel block's plane xb (four partial sums for
 * the adder's latency) */
static inline VEC
FN (se_block_sum) (const float *xb, long p0, long p1)
{
  VEC a0 = V_ZERO (), a1 = V_ZERO (), a2 = V_ZERO (), a3 = V_ZERO ();
  long s = p0;
  for (; s + 4 <= p1; s += 4) {
    a0 = V_ADD (a0, V_LOAD (xb + (s + 0) * VW));
    a1 = V_ADD (a1, V_LOAD (xb + (s + 1) * VW));
    a2 = V_ADD (a2, V_LOAD (xb + (s + 2) * VW));
    a3 = V_ADD (a3, V_LOAD (xb + (s + 3) * VW));
  }
  for (; s < p1; s++)
    a0 = V_ADD (a0, V_LOAD (xb + s * VW));
  return V_ADD (V_ADD (a0, a1), V_ADD (a2, a3));
}

/* means[k * VW ..] of channel blocks k0 .. k1 - 1 of one image */
static void
FN (se_means) (const gpunet_se *q, const float *x, float *means, int k0, int k1)
{
  const long hw = q->hw;
  const VEC inv = V_SET1 (1.0f / (float) hw);
  for (int k = k0; k < k1; k++)
    V_STORE (means + (size_t) k * VW, V_MUL (FN (se_block_sum) (x + (size_t) k * hw * VW, 0, hw),
        inv));
}

/* mid[v * VW ..] = act(br + sum_c mean[c] wr[c][v * VW ..]) for NV vectors from v */
static inline __attribute__((always_inline)) void
FN (se_reduce_t) (const gpunet_se *q, const float *means, float *mid, int v, const int NV)
{
  VEC acc[4];
  for (int j = 0; j < NV; j++)
    acc[j] = V_LOAD (q->br + (size_t) (v + j) * VW);
  const float *w = q->wr + (size_t) v * VW;
  for (int ch = 0; ch < q->c; ch++) {
    const VEC m = V_SET1 (means[ch]);
    for (int j = 0; j < NV; j++)
      acc[j] = V_FMA (m, V_LOAD (w + (size_t) ch * q->rp + j * VW), acc[j]);
  }
  for (int j = 0; j < NV; j++)
    V_STORE (mid + (size_t) (v + j) * VW, FN (simd_act) (acc[j], q->act));
}

static void
FN (se_reduce) (const gpunet_se *q, const float *means, float *mid, int v0, int v1)
{
  int v = v0;
  for (; v + 4 <= v1; v += 4)
    FN (se_reduce_t) (q, means, mid, v, 4);
  for (; v < v1; v++)
    FN (se_reduce_t) (q, means, mid, v, 1);
}

/* The gate of channel block k: sigmoid(be + sum_r mid[r] we[k][r]) */
static inline VEC
FN (se_gate) (const gpunet_se *q, const float *mid, int k)
{
  const int rd = q->rd;
  const VEC one = V_SET1 (1.0f), two = V_SET1 (2.0f);
  const float *w = q->we + (size_t) k * rd * VW;
  VEC a0 = V_LOAD (q->be + (size_t) k * VW), a1 = V_ZERO (), a2 = V_ZERO (), a3 = V_ZERO ();
  int r = 0;
  for (; r + 4 <= rd; r += 4) {
    a0 = V_FMA (V_SET1 (mid[r + 0]), V_LOAD (w + (size_t) (r + 0) * VW), a0);
    a1 = V_FMA (V_SET1 (mid[r + 1]), V_LOAD (w + (size_t) (r + 1) * VW), a1);
    a2 = V_FMA (V_SET1 (mid[r + 2]), V_LOAD (w + (size_t) (r + 2) * VW), a2);
    a3 = V_FMA (V_SET1 (mid[r + 3]), V_LOAD (w + (size_t) (r + 3) * VW), a3);
  }
  for (; r < rd; r++)
    a0 = V_FMA (V_SET1 (mid[r]), V_LOAD (w + (size_t) r * VW), a0);
  const VEC z = V_ADD (V_ADD (a0, a1), V_ADD (a2, a3));
  /* 1 / (1 + exp(-z)): the reciprocal estimate and two Newton steps (full precision) */
  const VEC d = V_ADD (one, FN (simd_exp2) (V_MUL (z, V_SET1 (-1.44269504088896341f))));
  VEC g = V_RCP (d);
  g = V_MUL (g, V_FNMA (d, g, two));
  return V_MUL (g, V_FNMA (d, g, two));
}

/* channel blocks k0 .. k1 - 1 of one image: each scaled by its gate */
static void
FN (se_expand_scale) (const gpunet_se *q, float *x, const float *mid, int k0, int k1)
{
  const long hw = q->hw;
  for (int k = k0; k < k1; k++) {
    const VEC g = FN (se_gate) (q, mid, k);
    float *xb = x + (size_t) k * hw * VW;
    for (long s = 0; s < hw; s++)
      V_STORE (xb + s * VW, V_MUL (V_LOAD (xb + s * VW), g));
  }
}

static void
FN (se_run) (const gpunet_se *q, float *x, int n, int nt)
{
  const int nblk = q->cp / VW, nrv = q->rp / VW;
  const int team_max = (long) n * q->cp * q->hw >= GPUNET_BLK_PARALLEL_MIN && nt > 1 ? nt : 1;
#pragma omp parallel num_threads(team_max)
  {
    const int me = omp_get_thread_num (), team = omp_get_num_threads ();
    const int k0 = nblk * me / team, k1 = nblk * (me + 1) / team;
    const int v0 = nrv * me / team, v1 = nrv * (me + 1) / team;
    for (int b = 0; b < n; b++) {
      float *xb = x + (size_t) b * q->cp * q->hw;
      float *means = q->means + (size_t) b * q->cp, *mid = q->mid + (size_t) b * q->rp;
      FN (se_means) (q, xb, means, k0, k1);
#pragma omp barrier
      FN (se_reduce) (q, means, mid, v0, v1);
#pragma omp barrier
      FN (se_expand_scale) (q, xb, mid, k0, k1);
    }
  }
}
