/* dwconv_simd.h: the vector code of dwconv.c, included there once per instruction set
 * between simd_begin.h and simd_end.h (which define VW, VEC, V_* and FN).  No include
 * guard: meant to be included more than once. */

/* x -> act(x) over `count` vectors from src to dst, the activation chosen outside the loop */
static inline __attribute__((always_inline)) void
FN (dw_act_copy) (const float *src, float *dst, int count, int act)
{
  if (act == GPUNET_EPI_SWISH)
    for (int x = 0; x < count; x++)
      V_STORE (dst + (size_t) x * VW, FN (simd_act) (V_LOAD (src + (size_t) x * VW),
              GPUNET_EPI_SWISH));
  else if (act == GPUNET_EPI_RELU)
    for (int x = 0; x < count; x++)
      V_STORE (dst + (size_t) x * VW, V_MAX (V_LOAD (src + (size_t) x * VW), V_ZERO ()));
  else
    memcpy (dst, src, sizeof (float) * (size_t) count * VW);
}

/* Rows y0 .. y0 + rows - 1 of the zero-padded, activated input plane of one channel block
 * (src: its ih x iw x VW floats) into buf, rows of cw vectors. */
static void
FN (dw_fill) (const gpunet_dw *d, const float *src, int y0, int rows, float *buf)
{
  const int cw = d->cw, pad = d->pad, iw = d->iw;
  const int x1 = pad + iw < cw ? pad + iw : cw;   /* columns pad .. x1 - 1 are inside */
  for (int r = 0; r < rows; r++) {
    float *row = buf + (size_t) r * cw * VW;
    const int sy = y0 + r - pad;
    if (sy < 0 || sy >= d->ih || x1 <= pad) {
      memset (row, 0, sizeof (float) * (size_t) cw * VW);
      continue;
    }
    for (int x = 0; x < pad; x++)
      V_STORE (row + (size_t) x * VW, V_ZERO ());
    FN (dw_act_copy) (src + (size_t) sy * iw * VW, row + (size_t) pad * VW, x1 - pad, d->in_act);
    for (int x = x1; x < cw; x++)
      V_STORE (row + (size_t) x * VW, V_ZERO ());
  }
}

/* Outputs ox .. ox + G - 1 of one output row (b0: the padded input row it starts from):
 * G accumulators, each weight vector loaded once for the G */
static inline __attribute__((always_inline)) void
FN (dw_group) (const float *b0, int cw, int ox, const float *w, VEC bias, float *o, int act,
    const int K, const int S, const int G)
{
  VEC acc[8];
#pragma GCC unroll 8
  for (int j = 0; j < G; j++)
    acc[j] = bias;
  for (int ky = 0; ky < K; ky++) {
    const float *r = b0 + (size_t) ky * cw * VW + (size_t) ox * S * VW;
    for (int kx = 0; kx < K; kx++) {
      const VEC wv = V_LOAD (w + (size_t) (ky * K + kx) * VW);
#pragma GCC unroll 8
      for (int j = 0; j < G; j++)
        acc[j] = V_FMA (wv, V_LOAD (r + (size_t) (j * S + kx) * VW), acc[j]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < G; j++)
    V_STORE (o + (size_t) (ox + j) * VW, FN (simd_act) (acc[j], act));
}

/* Output rows oy0 .. oy1 - 1 of one channel block from buf (padded input rows from y0 on),
 * K x K kernel w (K * K vectors), stride S: eight outputs of a row at a time, then the
 * row's last ow % 8 in groups of 4, 2 and 1 (single outputs would each be a chain of K * K
 * dependent FMAs, latency-bound: on GPUNet-2's 12- and 23-wide rows they took most of the
 * time). */
static inline __attribute__((always_inline)) void
FN (dw_rows_t) (const gpunet_dw *d, const float *buf, int y0, int oy0, int oy1,
    const float *w, VEC bias, float *dst, const int K, const int S)
{
  const int ow = d->ow, cw = d->cw, act = d->act;
  for (int oy = oy0; oy < oy1; oy++) {
    const float *b0 = buf + (size_t) (oy * S - y0) * cw * VW;
    float *o = dst + (size_t) oy * ow * VW;
    int ox = 0;
    for (; ox + 8 <= ow; ox += 8)
      FN (dw_group) (b0, cw, ox, w, bias, o, act, K, S, 8);
    if (ox + 4 <= ow) {
      FN (dw_group) (b0, cw, ox, w, bias, o, act, K, S, 4);
      ox += 4;
    }
    if (ox + 2 <= ow) {
      FN (dw_group) (b0, cw, ox, w, bias, o, act, K, S, 2);
      ox += 2;
    }
    if (ox < ow)
      FN (dw_group) (b0, cw, ox, w, bias, o, act, K, S, 1);
  }
}

/* the unrolled kernels: K x K, stride S */
#define DW_ROWS_KS(K, S) \
  static void \
  FN (dw_rows_##K##_##S) (const gpunet_dw *d, const float *buf, int y0, int oy0, int oy1, \
      const float *w, VEC bias, float *dst) \
  { \
    FN (dw_rows_t) (d, buf, y0, oy0, oy1, w, bias, dst, K, S); \
  }
DW_ROWS_KS (3, 1)
DW_ROWS_KS (3, 2)
DW_ROWS_KS (5, 1)
DW_ROWS_KS (5, 2)
#undef DW_ROWS_KS

/* any other kernel size or stride (7x7, edited architectures): the same loop, not unrolled */
static void
FN (dw_rows_any) (const gpunet_dw *d, const float *buf, int y0, int oy0, int oy1,
    const float *w, VEC bias, float *dst)
{
  FN (dw_rows_t) (d, buf, y0, oy0, oy1, w, bias, dst, d->k, d->stride);
}

static void
FN (dw_run) (const gpunet_dw *d, const float *in, float *out, int n, float *scratch, int nt)
{
  const int k = d->k, s = d->stride, nblk = d->cp / VW, strips = d->strips;
  const size_t in_plane = (size_t) d->ih * d->iw * VW, out_plane = (size_t) d->oh * d->ow * VW;
  void (*rows_fn) (const gpunet_dw *, const float *, int, int, int, const float *, VEC, float *) =
      k == 3 && s == 1 ? FN (dw_rows_3_1) : k == 3 && s == 2 ? FN (dw_rows_3_2)
      : k == 5 && s == 1 ? FN (dw_rows_5_1) : k == 5 && s == 2 ? FN (dw_rows_5_2)
      : FN (dw_rows_any);
  const long tasks = (long) n * nblk * strips;
  if (nt < 1)
    nt = 1;
#pragma omp parallel num_threads(nt) if ((long) n * d->cp * d->oh * d->ow >= GPUNET_BLK_PARALLEL_MIN)
  {
    float *buf = scratch + d->thread_stride * (size_t) omp_get_thread_num ();
#pragma omp for schedule(static)
    for (long t = 0; t < tasks; t++) {
      /* channel-major: (image, block, strip) */
      const long u = t / strips;
      const int b = (int) (u / nblk);
      const int cb = (int) (u % nblk);
      const int oy0 = (int) (t % strips) * d->strip_rows;
      const int oy1 = oy0 + d->strip_rows < d->oh ? oy0 + d->strip_rows : d->oh;
      const int y0 = oy0 * s, rows = (oy1 - 1 - oy0) * s + k;
      const size_t plane_index = (size_t) b * nblk + (size_t) cb;
      FN (dw_fill) (d, in + plane_index * in_plane, y0, rows, buf);
      rows_fn (d, buf, y0, oy0, oy1, d->w + (size_t) cb * k * k * VW,
          V_LOAD (d->bias + (size_t) cb * VW), out + plane_index * out_plane);
    }
  }
}
