/* test_cuda_math.c: CPU-side tests of the CUDA backend: the GPUNET_HD per-element maths
 * of kernels/cuda/cuda_math.h (what the kernels compute per thread) against the reference
 * CPU ops, the fp16 conversions of kernels/common/half.h against a slow reference and the
 * fp16-storage variants against the float ones, the host-frame packing of classify_host
 * (kernels/cuda/cuda_upload.h) through the CPU preprocess, the engine's dispatch of mixed
 * sizes to the classify slots (one call, a plan per image) and the table-cache bookkeeping
 * (cuda_pre_cache.h), the per-op byte counts of
 * gpunet-bench (kernels/cuda/cuda_cost.h), the CUDA graph capture policy
 * (cuda_graph_state.h), the classes of cuDNN statuses (cuda_status_class.h), and the
 * module loader: with no GPU (or no
 * module) the CUDA backend must refuse with GPUNET_ERR_BACKEND_UNAVAILABLE and a clear
 * sentence, and auto must fall back. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_ops.h"
#include "host/preprocess.h"
#include "cuda/cuda_cost.h"
#include "cuda/cuda_graph_state.h"
#include "cuda/cuda_math.h"
#include "cuda/cuda_pre_cache.h"
#include "cuda/cuda_status_class.h"
#include "cuda/cuda_upload.h"
#include "half.h"
#include "cuda/cuda_module.h"
#include "gpunet.h"
#include "model_private.h"
#include "session_private.h"

static void
test_activation (void)
{
  const float xs[] = { -30.0f, -3.5f, -1e-3f, 0.0f, 1e-3f, 0.5f, 4.0f, 30.0f };
  for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
    const float x = xs[i];
    CHECK (gpunet_cuda_act (x, GPUNET_EPI_NONE) == x);
    CHECK (gpunet_cuda_act (x, GPUNET_EPI_RELU) == (x > 0.0f ? x : 0.0f));
    CHECK (gpunet_cuda_act (x, GPUNET_EPI_SWISH) == gpunet_activate (x, GPUNET_EPI_SWISH));
    CHECK (gpunet_cuda_act (x, GPUNET_CUDA_ACT_SIGMOID) == gpunet_sigmoid (x));
  }
  CHECK (fabsf (gpunet_cuda_act (0.0f, GPUNET_CUDA_ACT_SIGMOID) - 0.5f) < 1e-7f);
}

static void
test_index_maps (void)
{
  /* every flat index maps to the channel of its nested position */
  const int n = 2, c = 5, plane = 7;
  long long idx = 0;
  int ok = 1;
  for (int b = 0; b < n; b++)
    for (int ch = 0; ch < c; ch++)
      for (int i = 0; i < plane; i++, idx++)
        ok &= gpunet_nchw_channel (idx, c, plane) == ch;
  CHECK (ok);
  CHECK (gpunet_conv_out_dim (224, 3, 2, 1) == 112);
  CHECK (gpunet_conv_out_dim (112, 5, 1, 2) == 112);
  CHECK (gpunet_conv_out_dim (7, 1, 1, 0) == 7);
  CHECK (gpunet_conv_out_dim (15, 3, 2, 1) == 8);
  CHECK (gpunet_grid_blocks (0, 256, 1000) == 1);
  CHECK (gpunet_grid_blocks (1, 256, 1000) == 1);
  CHECK (gpunet_grid_blocks (256, 256, 1000) == 1);
  CHECK (gpunet_grid_blocks (257, 256, 1000) == 2);
  CHECK (gpunet_grid_blocks (1ll << 40, 256, 1 << 20) == 1 << 20);
}

/* act(y + bias) + residual in place (the conv epilogue) equals the CPU conv2d with an
 * identity 1x1 weight, the same bias and residual. */
static void
test_epilogue (void)
{
  const int n = 2, c = 6, h = 5, w = 3, plane = h * w;
  const size_t total = (size_t) n * c * plane;
  float *x = check_frand_array (total), *res = check_frand_array (total), *bias = check_frand_array ((size_t) c);
  float *wid = calloc ((size_t) c * c, sizeof (float));
  float *ref = malloc (total * sizeof (float)), *got = malloc (total * sizeof (float));
  for (int i = 0; i < c; i++)
    wid[i * c + i] = 1.0f;
  for (int act = GPUNET_EPI_NONE; act <= GPUNET_EPI_SWISH; act++) {
    for (int with_res = 0; with_res < 2; with_res++) {
      gpunet_conv2d_params p = { .cin = c, .cout = c, .kernel = 1, .stride = 1, .pad = 0,
        .groups = 1, .ih = h, .iw = w, .oh = h, .ow = w, .act = act, .weight = wid, .bias = bias };
      gpunet_cpu_conv2d (&p, x, with_res ? res : NULL, ref, n);
      for (size_t i = 0; i < total; i++)
        got[i] = gpunet_epilogue_at (x, bias, with_res ? res : NULL, (long long) i, c, plane, act);
      CHECK_MSG (check_rel_err (got, ref, total) < 1e-6, "epilogue act %d residual %d: %g", act, with_res,
          check_rel_err (got, ref, total));
    }
  }
  /* NULL bias and residual: the activation alone */
  CHECK (gpunet_epilogue_at (x, NULL, NULL, 3, c, plane, GPUNET_EPI_RELU) == (x[3] > 0 ? x[3] : 0));
  free (x);
  free (res);
  free (bias);
  free (wid);
  free (ref);
  free (got);
}

static void
test_dwconv (void)
{
  const int shapes[][5] = {   /* c, ih, k, stride, act */
    { 4, 9, 3, 1, GPUNET_EPI_RELU }, { 3, 10, 3, 2, GPUNET_EPI_SWISH }, { 5, 11, 5, 2, GPUNET_EPI_NONE },
    { 2, 7, 5, 1, GPUNET_EPI_SWISH }, { 3, 1, 3, 1, GPUNET_EPI_RELU },
  };
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int n = 2, c = shapes[s][0], ih = shapes[s][1], iw = ih + 1, k = shapes[s][2];
    const int stride = shapes[s][3], pad = k / 2;
    gpunet_dwconv2d_params p = { .c = c, .kernel = k, .stride = stride, .pad = pad, .ih = ih,
      .iw = iw, .oh = gpunet_conv_out_dim (ih, k, stride, pad),
      .ow = gpunet_conv_out_dim (iw, k, stride, pad), .act = shapes[s][4] };
    const size_t in_n = (size_t) n * c * ih * iw, out_n = (size_t) n * c * p.oh * p.ow;
    float *in = check_frand_array (in_n), *wt = check_frand_array ((size_t) c * k * k), *b = check_frand_array ((size_t) c);
    float *ref = malloc (out_n * sizeof (float)), *got = malloc (out_n * sizeof (float));
    p.weight = wt;
    p.bias = b;
    gpunet_cpu_dwconv2d (&p, in, ref, n);
    for (size_t i = 0; i < out_n; i++)
      got[i] = gpunet_dwconv_out_at (in, wt, b, (long long) i, c, ih, iw, p.oh, p.ow, k, stride,
          pad, p.act);
    CHECK_MSG (check_rel_err (got, ref, out_n) < 1e-6, "dwconv shape %zu: %g", s, check_rel_err (got, ref, out_n));
    free (in);
    free (wt);
    free (b);
    free (ref);
    free (got);
  }
}

/* What one warp of linear.cu computes for output o: 32 strided partials, summed. */
static float
linear_out (const float *w, const float *b, const float *in, long long o, int cin, int cout, int act)
{
  const long long img = o / cout;
  const int row = (int) (o % cout);
  float part[32];
  for (int lane = 0; lane < 32; lane++)
    part[lane] = gpunet_dot_partial (w + (long long) row * cin, in + img * cin, cin, lane, 32);
  for (int off = 16; off > 0; off /= 2)   /* the shuffle-down tree */
    for (int lane = 0; lane < off; lane++)
      part[lane] += part[lane + off];
  return gpunet_cuda_act (part[0] + (b ? b[row] : 0.0f), act);
}

static void
test_linear (void)
{
  const int dims[][2] = { { 1, 1 }, { 31, 7 }, { 32, 5 }, { 100, 10 }, { 1280, 16 } };
  for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
    const int n = 3, cin = dims[d][0], cout = dims[d][1];
    float *w = check_frand_array ((size_t) cin * cout), *b = check_frand_array ((size_t) cout);
    float *in = check_frand_array ((size_t) n * cin);
    float *ref = malloc ((size_t) n * cout * sizeof (float)), *got = malloc ((size_t) n * cout * sizeof (float));
    for (int act = GPUNET_EPI_NONE; act <= GPUNET_EPI_SWISH; act++) {
      gpunet_linear_params p = { .cin = cin, .cout = cout, .act = act, .weight = w,
        .bias = act == GPUNET_EPI_NONE ? NULL : b };
      gpunet_cpu_linear (&p, in, ref, n);
      for (long long o = 0; o < (long long) n * cout; o++)
        got[o] = linear_out (w, p.bias, in, o, cin, cout, act);
      CHECK_MSG (check_rel_err (got, ref, (size_t) n * cout) < 1e-5, "linear %dx%d act %d: %g", cin, cout,
          act, check_rel_err (got, ref, (size_t) n * cout));
    }
    free (w);
    free (b);
    free (in);
    free (ref);
    free (got);
  }
}

/* se.cu's decomposition (row means, reduce FC + act, expand FC + sigmoid, scale) against
 * the CPU squeeze-excite. */
static void
test_se (void)
{
  const int n = 2, c = 12, rd = 3, h = 6, w = 5, plane = h * w;
  const size_t total = (size_t) n * c * plane;
  float *x = check_frand_array (total), *ref = malloc (total * sizeof (float));
  float *w1 = check_frand_array ((size_t) rd * c), *b1 = check_frand_array ((size_t) rd);
  float *w2 = check_frand_array ((size_t) c * rd), *b2 = check_frand_array ((size_t) c);
  float *scratch = malloc ((size_t) (c + rd) * sizeof (float));
  float *mean = malloc ((size_t) n * c * sizeof (float)), *mid = malloc ((size_t) n * rd * sizeof (float));
  float *gate = malloc ((size_t) n * c * sizeof (float));
  memcpy (ref, x, total * sizeof (float));
  gpunet_se_params p = { .c = c, .rd = rd, .h = h, .w = w, .act = GPUNET_EPI_RELU,
    .w_reduce = w1, .b_reduce = b1, .w_expand = w2, .b_expand = b2 };
  gpunet_cpu_se (&p, ref, scratch, n);
  for (int r = 0; r < n * c; r++) {
    float s = 0.0f;
    for (int i = 0; i < plane; i++)
      s += x[(size_t) r * plane + i];
    mean[r] = s / (float) plane;
  }
  for (long long o = 0; o < (long long) n * rd; o++)
    mid[o] = linear_out (w1, b1, mean, o, c, rd, p.act);
  for (long long o = 0; o < (long long) n * c; o++)
    gate[o] = linear_out (w2, b2, mid, o, rd, c, GPUNET_CUDA_ACT_SIGMOID);
  for (size_t i = 0; i < total; i++)
    x[i] *= gate[i / (size_t) plane];
  CHECK_MSG (check_rel_err (x, ref, total) < 1e-5, "se: %g", check_rel_err (x, ref, total));
  free (x);
  free (ref);
  free (w1);
  free (b1);
  free (w2);
  free (b2);
  free (scratch);
  free (mean);
  free (mid);
  free (gate);
}

/* The loader: bad module paths give sentences naming the file and never crash. */
static void
test_loader_errors (void)
{
  char *err = NULL;
  const gpunet_backend *be = gpunet_cuda_module_open ("/nonexistent/libgpunet-cuda.so", NULL, &err);
  CHECK (be == NULL);
  CHECK_CONTAINS (err, "/nonexistent/libgpunet-cuda.so");
  CHECK_CONTAINS (err, "cannot load the CUDA backend module");
  free (err);
  err = NULL;
  be = gpunet_cuda_module_open ("libm.so.6", NULL, &err);
  CHECK (be == NULL);
  CHECK_CONTAINS (err, "is not a gpunet CUDA module");
  free (err);
}

/* With no GPU: the CUDA backend (if its module loads) refuses to plan with
 * GPUNET_ERR_BACKEND_UNAVAILABLE; sessions asking for CUDA fail clearly, auto runs on
 * the CPU.  On a host with a working GPU the refusal checks are skipped. */
static void
test_no_gpu (void)
{
  gpunet_model *model = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_model_new_random ("gpunet-0", 7, &model, &err);
  CHECK_MSG (st == GPUNET_OK, "%s", err ? err : "");
  free (err);
  err = NULL;
  if (!model)
    return;

  int gpu_works = 0;
  const gpunet_backend *be = gpunet_backend_cuda_get (&err);
  if (!be) {
    printf ("# CUDA module not loaded: %s\n", err ? err : "(no reason)");
    CHECK (err && strlen (err) > 20);
    /* missing libraries are the machine's; a symbol the module itself lacks is a build
     * defect (a C function declared without C linkage to nvcc, say) */
    CHECK_MSG (!(err && strstr (err, "undefined symbol")), "the module is broken: %s", err);
  } else {
    gpunet_session_params params;
    gpunet_session_params_init (&params);
    void *state = NULL;
    free (err);
    err = NULL;
    st = gpunet_backend_plan (be, gpunet_model_graph (model), &params, &state, &err);
    if (st == GPUNET_OK) {
      printf ("# a CUDA device works here: skipping the no-GPU checks\n");
      gpu_works = 1;
      be->destroy (state);
    } else {
      printf ("# CUDA plan: %s\n", err ? err : "(no reason)");
      CHECK (st == GPUNET_ERR_BACKEND_UNAVAILABLE);
      CHECK (state == NULL);
      CHECK_MSG (err && (strstr (err, "no CUDA driver") || strstr (err, "no CUDA device")
              || strstr (err, "cudnnCreate")), "unexpected reason: %s", err ? err : "(null)");
    }
    /* the op API answers too (or says why not) */
    free (err);
    err = NULL;
    const gpunet_cuda_op_api *api = gpunet_cuda_op_api_get (&err);
    CHECK_MSG (api != NULL, "%s", err ? err : "");
    if (api && !gpu_works) {
      gpunet_cuda_op_runner *r = NULL;
      free (err);
      err = NULL;
      CHECK (api->runner_new (0, &r, &err) == GPUNET_ERR_BACKEND_UNAVAILABLE);
      CHECK (r == NULL && err != NULL);
    }
  }
  free (err);
  err = NULL;

  if (!gpu_works) {
    gpunet_session_params params;
    gpunet_session_params_init (&params);
    params.backend = GPUNET_BACKEND_CUDA;
    gpunet_session *s = NULL;
    st = gpunet_session_new (model, &params, &s, &err);
    CHECK (st == GPUNET_ERR_BACKEND_UNAVAILABLE && s == NULL);
    CHECK_CONTAINS (err, "CUDA");
    free (err);
    err = NULL;
    params.backend = GPUNET_BACKEND_AUTO;
    st = gpunet_session_new (model, &params, &s, &err);
    CHECK_MSG (st == GPUNET_OK, "%s", err ? err : "");
    if (s) {
      CHECK (strcmp (gpunet_session_backend_name (s), "cpu") == 0);
      CHECK (gpunet_session_fallback_reason (s) != NULL);
      gpunet_session_free (s);
    }
    free (err);
  }
  gpunet_model_unref (model);
}

/* ---- fp16 ---------------------------------------------------------------------------- */

/* The value of half bits h from the IEEE 754 definition, in double. */
static double
half_ref_value (unsigned h)
{
  const int sign = (h >> 15) & 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0x1f)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp ((double) m, -24);
  else
    v = ldexp ((double) (1024 + m), e - 25);
  return sign ? -v : v;
}

/* The slow reference of float -> half, round to nearest even: the two neighbouring
 * halves by binary search over the ordered positive values, then the nearer (the even
 * one on a tie); past the largest finite half, the midpoint to 2^16 decides. */
static unsigned
half_ref_from_float (float f)
{
  if (isnan (f))
    return 0x7e00;   /* any NaN; callers compare NaN-ness */
  const unsigned sign = signbit (f) ? 0x8000u : 0u;
  const double a = fabs ((double) f);
  if (a >= 65520.0)   /* the tie at 65520 goes to the even neighbour, 2^16 = inf */
    return sign | 0x7c00u;
  unsigned lo = 0, hi = 0x7bffu;   /* value(lo) <= a, find the last such */
  while (lo < hi) {
    const unsigned mid = (lo + hi + 1) / 2;
    if (half_ref_value (mid) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == 0x7bffu || half_ref_value (lo) == a)
    return sign | lo;
  const double dlo = a - half_ref_value (lo), dhi = half_ref_value (lo + 1) - a;
  if (dlo < dhi || (dlo == dhi && !(lo & 1u)))
    return sign | lo;
  return sign | (lo + 1);
}

static int
half_is_nan (unsigned h)
{
  return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
}

/* Non-zero when gpunet_half_from_float (f) matches the reference (NaN: any NaN). */
static int
half_matches (float f)
{
  const unsigned got = gpunet_half_from_float (f), want = half_ref_from_float (f);
  if (isnan (f))
    return half_is_nan (got);
  return got == want;
}

static float
float_from_bits (uint32_t x)
{
  float f;
  memcpy (&f, &x, sizeof f);
  return f;
}

static void
test_half_all_values (void)
{
  int bad_value = 0, bad_trip = 0;
  for (unsigned h = 0; h < 65536u; h++) {
    const float f = gpunet_half_to_float ((gpunet_half) h);
    const double ref = half_ref_value (h);
    if (half_is_nan (h)) {
      bad_value += !isnan (f) || (signbit (f) != 0) != ((h & 0x8000u) != 0);
      /* quiet NaNs keep sign and payload; signalling ones become quiet */
      bad_trip += !half_is_nan (gpunet_half_from_float (f))
          || (gpunet_half_from_float (f) & 0x8000u) != (h & 0x8000u);
      continue;
    }
    bad_value += (double) f != ref || (signbit (f) != 0) != ((h & 0x8000u) != 0);
    bad_trip += gpunet_half_from_float (f) != h;
  }
  CHECK_MSG (bad_value == 0, "%d half values decode wrongly", bad_value);
  CHECK_MSG (bad_trip == 0, "%d half values do not round-trip", bad_trip);
}

static void
test_half_rounding (void)
{
  int bad = 0;
  float first_bad = 0.0f;
  /* edges: zeros, infinities, NaN, the largest finite half and the overflow tie, the
   * subnormal range's ends and its ties to zero */
  const float edges[] = { 0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65519.0f, 65519.996f,
    65520.0f, -65520.0f, 65536.0f, 1e10f, 6.103515625e-05f, 6.1035156e-05f, 6.0975552e-05f,
    5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f, 2.9802319e-08f, 8.940697e-08f, 1e-30f,
    float_from_bits (1), float_from_bits (0x80000001u), 1.0f, 1.00048828125f, 1.000244140625f,
    1.0007324f, 2047.5f, 2048.5f, 2049.0f, 4095.0f, 3.1415927f, -0.33333334f };
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
    if (!half_matches (edges[i])) {
      bad++;
      fprintf (stderr, "half rounding of %.9g: got 0x%04x, want 0x%04x\n", edges[i],
          (unsigned) gpunet_half_from_float (edges[i]), half_ref_from_float (edges[i]));
    }
  /* every midpoint between neighbouring finite halves, and the floats either side of it */
  for (unsigned h = 0; h < 0x7bffu; h++) {
    const double mid = (half_ref_value (h) + half_ref_value (h + 1)) / 2.0;
    const float m = (float) mid;   /* exact: 12 significant bits */
    const float around[] = { m, nextafterf (m, 0.0f), nextafterf (m, INFINITY), -m };
    for (int j = 0; j < 4; j++)
      if (!half_matches (around[j])) {
        if (!bad++)
          first_bad = around[j];
      }
  }
  /* random bit patterns (all exponents), and random values inside the half range */
  for (int i = 0; i < 1000000; i++) {
    check_rng_state_ ^= check_rng_state_ << 13;
    check_rng_state_ ^= check_rng_state_ >> 7;
    check_rng_state_ ^= check_rng_state_ << 17;
    const float a = float_from_bits ((uint32_t) (check_rng_state_ >> 32));
    const float b = ldexpf (check_frand (), (int) (check_rng_state_ % 44) - 27);
    if (!half_matches (a) || !half_matches (b)) {
      if (!bad++)
        first_bad = half_matches (a) ? b : a;
    }
  }
  CHECK_MSG (bad == 0, "%d float->half roundings differ from the reference (first %.9g)", bad,
      first_bad);
  CHECK (gpunet_half_round (1.0f / 3.0f) == (float) half_ref_value (half_ref_from_float (1.0f / 3.0f)));
}

static gpunet_half *
half_array (const float *f, size_t n)
{
  gpunet_half *h = malloc ((n ? n : 1) * sizeof *h);
  for (size_t i = 0; h && i < n; i++)
    h[i] = gpunet_half_from_float (f[i] * 4.0f);
  return h;
}

static float *
half_to_float_array (const gpunet_half *h, size_t n)
{
  float *f = malloc ((n ? n : 1) * sizeof *f);
  for (size_t i = 0; f && i < n; i++)
    f[i] = gpunet_half_to_float (h[i]);
  return f;
}

/* The fp16-storage variants compute exactly what the float ones compute on the
 * half-rounded values (same float maths, same order). */
static void
test_half_variants (void)
{
  const int n = 2, c = 5, ih = 9, iw = 8, k = 3;
  const long long plane = (long long) ih * iw;
  const size_t total = (size_t) n * c * plane;
  float *rx = check_frand_array (total), *rr = check_frand_array (total), *bias = check_frand_array ((size_t) c);
  float *rw = check_frand_array ((size_t) c * k * k);
  gpunet_half *hx = half_array (rx, total), *hr = half_array (rr, total);
  gpunet_half *hw = half_array (rw, (size_t) c * k * k);
  float *fx = half_to_float_array (hx, total), *fr = half_to_float_array (hr, total);
  float *fw = half_to_float_array (hw, (size_t) c * k * k);
  int bad = 0;
  for (int act = GPUNET_EPI_NONE; act <= GPUNET_EPI_SWISH; act++)
    for (long long i = 0; i < (long long) total; i++) {
      bad += gpunet_epilogue_at_h (hx, bias, hr, i, c, plane, act)
          != gpunet_epilogue_at (fx, bias, fr, i, c, plane, act);
      bad += gpunet_epilogue_at_h (hx, NULL, NULL, i, c, plane, act)
          != gpunet_epilogue_at (fx, NULL, NULL, i, c, plane, act);
    }
  CHECK_MSG (bad == 0, "%d fp16 epilogue values differ from the float ones", bad);
  bad = 0;
  for (int stride = 1; stride <= 2; stride++) {
    const int pad = k / 2, oh = gpunet_conv_out_dim (ih, k, stride, pad);
    const int ow = gpunet_conv_out_dim (iw, k, stride, pad);
    for (long long i = 0; i < (long long) n * c * oh * ow; i++)
      bad += gpunet_dwconv_out_at_h (hx, hw, bias, i, c, ih, iw, oh, ow, k, stride, pad,
          GPUNET_EPI_SWISH)
          != gpunet_dwconv_out_at (fx, fw, bias, i, c, ih, iw, oh, ow, k, stride, pad,
              GPUNET_EPI_SWISH);
  }
  CHECK_MSG (bad == 0, "%d fp16 depthwise values differ from the float ones", bad);
  bad = 0;
  for (int lane = 0; lane < 32; lane++) {
    bad += gpunet_dot_partial_hh (hw, hx, c * k * k, lane, 32)
        != gpunet_dot_partial (fw, fx, c * k * k, lane, 32);
    bad += gpunet_dot_partial_hf (hw, rr, c * k * k, lane, 32)
        != gpunet_dot_partial (fw, rr, c * k * k, lane, 32);
  }
  CHECK_MSG (bad == 0, "%d fp16 dot partials differ from the float ones", bad);
  free (rx);
  free (rr);
  free (bias);
  free (rw);
  free (hx);
  free (hr);
  free (hw);
  free (fx);
  free (fr);
  free (fw);
}

/* ---- classify_host's frame packing ---------------------------------------------------- */

/* The layout numbers of the formats, by hand, at an odd size. */
static void
test_upload_layout (void)
{
  gpunet_frame_layout l;
  CHECK (gpunet_frame_layout_init (&l, GPUNET_FORMAT_NV12, 641, 359) == 0);
  CHECK (l.n_planes == 2 && l.rows[0] == 359 && l.row_bytes[0] == 641);
  CHECK (l.rows[1] == 180 && l.row_bytes[1] == 642);
  CHECK (l.offset[0] == 0 && l.offset[1] == 230144);   /* 641 x 359 = 230119, to 256 */
  CHECK (l.bytes == 230144 + 115712);                  /* 642 x 180 = 115560, to 256 */
  CHECK (gpunet_frame_layout_init (&l, GPUNET_FORMAT_I420, 641, 359) == 0);
  CHECK (l.n_planes == 3 && l.row_bytes[1] == 321 && l.row_bytes[2] == 321);
  CHECK (l.rows[1] == 180 && l.rows[2] == 180);
  CHECK (l.offset[1] == 230144 && l.offset[2] == 230144 + 57856);   /* 321 x 180 = 57780 */
  CHECK (l.bytes == 230144 + 2 * 57856);
  CHECK (gpunet_frame_layout_init (&l, GPUNET_FORMAT_RGBA, 641, 359) == 0);
  CHECK (l.n_planes == 1 && l.row_bytes[0] == 2564 && l.rows[0] == 359);
  CHECK (l.bytes == 920576);                           /* 2564 x 359 = 920476 */
  CHECK (gpunet_frame_layout_init (&l, GPUNET_FORMAT_BGR, 1, 1) == 0);
  CHECK (l.n_planes == 1 && l.row_bytes[0] == 3 && l.bytes == 256);
  CHECK (gpunet_frame_layout_init (&l, GPUNET_FORMAT_NV12, 1, 1) == 0);
  CHECK (l.row_bytes[1] == 2 && l.rows[1] == 1 && l.bytes == 512);
  CHECK (gpunet_frame_layout_init (&l, (gpunet_pixel_format) 99, 4, 4) == -1);
  CHECK (gpunet_frame_layout_init (&l, GPUNET_FORMAT_RGB, 0, 4) == -1);
}

/* A w x h frame of `fmt` in one buffer at an odd offset, each row padded by `pad` random
 * bytes (pad 0: tight planes), every byte random. */
static gpunet_image
upload_frame (gpunet_pixel_format fmt, int w, int h, int pad, uint8_t **mem)
{
  gpunet_frame_layout l;
  gpunet_frame_layout_init (&l, fmt, w, h);
  size_t total = 3;
  int stride[3] = { 0, 0, 0 };
  for (int p = 0; p < l.n_planes; p++) {
    stride[p] = (int) l.row_bytes[p] + pad;
    total += (size_t) stride[p] * (size_t) l.rows[p] + 5;
  }
  *mem = malloc (total);
  for (size_t i = 0; *mem && i < total; i++)
    (*mem)[i] = (uint8_t) (check_frand () * 128.0f + 128.0f);
  gpunet_image img;
  memset (&img, 0, sizeof img);
  img.format = fmt;
  img.width = w;
  img.height = h;
  img.matrix = GPUNET_MATRIX_BT601;
  img.full_range = w % 2;
  size_t at = 3;
  for (int p = 0; *mem && p < l.n_planes; p++) {
    img.planes[p] = *mem + at;
    img.strides[p] = stride[p];
    at += (size_t) stride[p] * (size_t) l.rows[p] + 5;
  }
  return img;
}

/* Packing a frame (padded strides, odd offsets) and preprocessing the packed copy through
 * gpunet_frame_view gives the CPU preprocess of the original bit for bit, for every
 * format; the packed buffer starts as random bytes, so a byte the layout leaves out
 * (a row too short, a plane too small) would show. */
static void
test_upload_pack (void)
{
  static const int sizes[][2] = { { 641, 359 }, { 1, 1 }, { 3, 700 }, { 224, 224 }, { 2, 5 } };
  const int R = 32;
  float *want = malloc (sizeof (float) * 3 * R * R), *got = malloc (sizeof (float) * 3 * R * R);
  int bad_frames = 0, frames = 0;
  for (int f = GPUNET_FORMAT_RGB; f <= GPUNET_FORMAT_I420; f++)
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
      for (int pad = 0; pad <= 37; pad += 37) {
        const int w = sizes[z][0], h = sizes[z][1];
        uint8_t *mem = NULL;
        gpunet_image img = upload_frame ((gpunet_pixel_format) f, w, h, pad, &mem);
        gpunet_frame_layout l;
        gpunet_frame_layout_init (&l, (gpunet_pixel_format) f, w, h);
        uint8_t *packed = malloc (l.bytes);
        gpunet_preprocess_plan plan;
        if (!mem || !packed || !want || !got
            || gpunet_preprocess_plan_init (&plan, w, h, R, GPUNET_RESIZE_STRETCH, 0.875f) != GPUNET_OK) {
          CHECK_MSG (0, "out of memory");
          free (mem);
          free (packed);
          continue;
        }
        for (size_t i = 0; i < l.bytes; i++)
          packed[i] = (uint8_t) (check_frand () * 128.0f + 128.0f);
        gpunet_frame_pack (&l, &img, packed);
        const gpunet_image view = gpunet_frame_view (&l, &img, packed, GPUNET_MEMORY_HOST);
        gpunet_cpu_preprocess (&plan, &img, want);
        gpunet_cpu_preprocess (&plan, &view, got);
        frames++;
        bad_frames += memcmp (want, got, sizeof (float) * 3 * R * R) != 0;
        CHECK (view.memory == GPUNET_MEMORY_HOST && view.format == img.format
            && view.matrix == img.matrix && view.full_range == img.full_range);
        for (int p = 0; p < 3; p++)
          CHECK (p < l.n_planes ? view.strides[p] == (int) l.row_bytes[p]
              && view.planes[p] == packed + l.offset[p] && l.offset[p] % GPUNET_UPLOAD_ALIGN == 0
              : view.planes[p] == NULL);
        gpunet_preprocess_plan_clear (&plan);
        free (mem);
        free (packed);
      }
  CHECK_MSG (bad_frames == 0, "%d of %d packed frames preprocess differently", bad_frames, frames);
  free (want);
  free (got);
}

/* The engine's dispatch to classify_host and classify_device, with a stand-in backend
 * that does on the CPU what the CUDA one does on the device: pack each host frame
 * (cuda_upload.h; device frames are read in place), preprocess it with the plan the
 * engine passes for that image, one forward pass for the call, top-k.  Its results must
 * equal the CPU session's bit for bit; any mix of sizes and preprocess parameters is one
 * slot call per memory kind.  Each call also checks the slot contract: one plan per
 * image, of the image's size, still intact during the call (a plan evicted and rebuilt
 * for another image of the call would no longer match its first image), distinct
 * geometries on distinct plans, and no more than the contract allows. */
static const gpunet_backend *fake_inner;
static int fake_calls, fake_device_calls;
static int fake_classes;       /* the model's, set by whoever installs the fakes */
static int fake_most_geometries = GPUNET_BACKEND_GEOMETRIES_MIN;
static int fake_dry;          /* no forward: result j of image i is (width, height) */
static int fake_last_n, fake_last_plans;
/* the last classify_device call's images: first plane and cuda_ready, in order */
static const uint8_t *fake_seen_plane[64];
static void *fake_seen_ready[64];
static int fake_seen_n;

static gpunet_status
fake_classify (void *state, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out,
    gpunet_memory memory, char **error_text)
{
  const int R = plans[0]->out_size, classes = fake_classes;
  int distinct = 0;
  for (int i = 0; i < n; i++) {
    CHECK (images[i].memory == memory);
    CHECK_MSG (plans[i] && plans[i]->in_w == images[i].width
        && plans[i]->in_h == images[i].height && plans[i]->out_size == R,
        "image %d of %d (%dx%d) has a plan for %dx%d", i, n, images[i].width,
        images[i].height, plans[i] ? plans[i]->in_w : 0, plans[i] ? plans[i]->in_h : 0);
    int first_use = 1;
    for (int j = 0; j < i; j++)
      if (plans[j] == plans[i])
        first_use = 0;
      else
        CHECK (!gpunet_preprocess_plan_matches (plans[j], plans[i]->in_w, plans[i]->in_h,
            plans[i]->out_size, plans[i]->mode, plans[i]->crop_pct));
    distinct += first_use;
  }
  CHECK_MSG (distinct <= fake_most_geometries, "%d geometries in one call, at most %d",
      distinct, fake_most_geometries);
  fake_last_n = n;
  fake_last_plans = distinct;
  if (fake_dry) {
    for (int i = 0; i < n; i++)
      for (int j = 0; j < k; j++)
        out[(size_t) i * k + j] = (gpunet_class_score) { images[i].width, (float) images[i].height };
    return GPUNET_OK;
  }
  float *input = calloc (3 * (size_t) R * R * (size_t) n, sizeof (float));
  float *logits = malloc (sizeof (float) * (size_t) classes * (size_t) n);
  gpunet_status st = input && logits ? GPUNET_OK : GPUNET_ERR_NO_MEMORY;
  for (int i = 0; i < n && st == GPUNET_OK; i++) {
    float *dst = input + (size_t) i * 3 * R * R;
    if (memory == GPUNET_MEMORY_CUDA) {
      gpunet_cpu_preprocess ((gpunet_preprocess_plan *) plans[i], &images[i], dst);
      continue;
    }
    gpunet_frame_layout l;
    if (gpunet_frame_layout_init (&l, images[i].format, images[i].width, images[i].height)) {
      st = GPUNET_ERR_INVALID_ARGUMENT;
      break;
    }
    uint8_t *packed = malloc (l.bytes);
    if (!packed) {
      st = GPUNET_ERR_NO_MEMORY;
      break;
    }
    gpunet_frame_pack (&l, &images[i], packed);
    const gpunet_image view = gpunet_frame_view (&l, &images[i], packed, GPUNET_MEMORY_HOST);
    gpunet_cpu_preprocess ((gpunet_preprocess_plan *) plans[i], &view, dst);
    free (packed);
  }
  if (st == GPUNET_OK)
    st = fake_inner->forward (state, input, n, logits, NULL, NULL, error_text);
  for (int i = 0; i < n && st == GPUNET_OK; i++)
    gpunet_topk_softmax (logits + (size_t) i * classes, classes, k, out + (size_t) i * k);
  free (input);
  free (logits);
  return st;
}

static gpunet_status
fake_classify_host (void *state, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out,
    char **error_text)
{
  fake_calls++;
  return fake_classify (state, images, n, plans, k, out, GPUNET_MEMORY_HOST, error_text);
}

static gpunet_status
fake_classify_device (void *state, const gpunet_image *images, int n,
    const gpunet_preprocess_plan *const *plans, int k, gpunet_class_score *out,
    char **error_text)
{
  fake_device_calls++;
  fake_seen_n = n < 64 ? n : 64;
  for (int i = 0; i < fake_seen_n; i++) {
    fake_seen_plane[i] = images[i].planes[0];
    fake_seen_ready[i] = images[i].cuda_ready;
  }
  return fake_classify (state, images, n, plans, k, out, GPUNET_MEMORY_CUDA, error_text);
}

/* A random-weight model of tests/data/fixtures/tiny-a.json (96 x 96 input, 16 classes). */
static gpunet_model *
tiny_model (void)
{
  char arch[1024];
  snprintf (arch, sizeof arch, "%s/fixtures/tiny-a.json", check_data_dir ());
  gpunet_model *m = NULL;
  char *err = NULL;
  CHECK_MSG (gpunet_model_new_random (arch, 5, &m, &err) == GPUNET_OK, "tiny model: %s",
      err ? err : "?");
  free (err);
  return m;
}

static void
test_classify_host_dispatch (void)
{
  gpunet_model *model = tiny_model ();
  char *err = NULL;
  if (!model)
    return;
  CHECK (gpunet_model_num_classes (model) == 16);
  fake_classes = gpunet_model_num_classes (model);
  gpunet_session_params params;
  gpunet_session_params_init (&params);
  params.backend = GPUNET_BACKEND_CPU;
  params.max_batch = 3;
  gpunet_session *plain = NULL, *staged = NULL;
  CHECK (gpunet_session_new (model, &params, &plain, &err) == GPUNET_OK);
  CHECK (gpunet_session_new (model, &params, &staged, &err) == GPUNET_OK);
  if (!plain || !staged) {
    gpunet_session_free (plain);
    gpunet_session_free (staged);
    gpunet_model_unref (model);
    free (err);
    return;
  }
  /* the CPU backend's own functions plus the slot */
  static gpunet_backend fake;
  fake_inner = staged->backend;
  fake = *fake_inner;
  fake.classify_host = fake_classify_host;
  staged->backend = &fake;

  uint8_t *mem[4] = { NULL };
  gpunet_image f[4];
  f[0] = upload_frame (GPUNET_FORMAT_NV12, 641, 359, 19, &mem[0]);
  f[1] = upload_frame (GPUNET_FORMAT_RGBA, 641, 359, 8, &mem[1]);
  f[2] = upload_frame (GPUNET_FORMAT_I420, 641, 359, 0, &mem[2]);
  f[3] = upload_frame (GPUNET_FORMAT_BGR, 100, 80, 3, &mem[3]);
  enum { K = 5 };
  gpunet_class_score want[3 * K], got[3 * K];
  /* one size, three formats: through the slot */
  fake_calls = 0;
  CHECK (gpunet_session_classify (plain, f, 3, NULL, K, want, &err) == GPUNET_OK);
  CHECK (gpunet_session_classify (staged, f, 3, NULL, K, got, &err) == GPUNET_OK);
  CHECK (fake_calls == 1);
  CHECK (memcmp (want, got, sizeof want) == 0);
  /* another size: through the slot again (the plan is rebuilt for it) */
  CHECK (gpunet_session_classify (plain, &f[3], 1, NULL, K, want, &err) == GPUNET_OK);
  CHECK (gpunet_session_classify (staged, &f[3], 1, NULL, K, got, &err) == GPUNET_OK);
  CHECK (fake_calls == 2);
  CHECK (memcmp (want, got, sizeof (gpunet_class_score) * K) == 0);
  /* mixed sizes: through the slot too, in one call with a plan each */
  const gpunet_image mixed[2] = { f[0], f[3] };
  CHECK (gpunet_session_classify (plain, mixed, 2, NULL, K, want, &err) == GPUNET_OK);
  CHECK (gpunet_session_classify (staged, mixed, 2, NULL, K, got, &err) == GPUNET_OK);
  CHECK (fake_calls == 3 && fake_last_n == 2 && fake_last_plans == 2);
  CHECK (memcmp (want, got, sizeof (gpunet_class_score) * 2 * K) == 0);
  /* a host image then a CUDA one on a backend without a device slot: the engine
   * refuses the CUDA image before any slot runs */
  gpunet_image bad[2] = { f[0], f[0] };
  bad[1].memory = GPUNET_MEMORY_CUDA;
  free (err);
  err = NULL;
  CHECK (gpunet_session_classify (staged, bad, 2, NULL, K, got, &err) == GPUNET_ERR_UNSUPPORTED);
  CHECK_CONTAINS (err, "image 1 is in CUDA device memory");
  CHECK (fake_calls == 3);
  staged->backend = fake_inner;
  for (int i = 0; i < 4; i++)
    free (mem[i]);
  gpunet_session_free (plain);
  gpunet_session_free (staged);
  gpunet_model_unref (model);
  free (err);
}

/* Two CPU sessions of `model`: `plain`, and `staged` with the fake slots in place. */
static int
fake_sessions (gpunet_model *model, int max_batch, gpunet_session **plain,
    gpunet_session **staged)
{
  static gpunet_backend fake;
  gpunet_session_params params;
  gpunet_session_params_init (&params);
  params.backend = GPUNET_BACKEND_CPU;
  params.max_batch = max_batch;
  params.n_threads = 1;
  char *err = NULL;
  *plain = *staged = NULL;
  CHECK (gpunet_session_new (model, &params, plain, &err) == GPUNET_OK);
  CHECK (gpunet_session_new (model, &params, staged, &err) == GPUNET_OK);
  free (err);
  if (!*plain || !*staged) {
    gpunet_session_free (*plain);
    gpunet_session_free (*staged);
    return 0;
  }
  fake_inner = (*staged)->backend;
  fake = *fake_inner;
  fake.classify_host = fake_classify_host;
  fake.classify_device = fake_classify_device;
  (*staged)->backend = &fake;
  fake_classes = gpunet_model_num_classes (model);
  fake_most_geometries = gpunet_backend_call_geometries (max_batch);
  fake_calls = fake_device_calls = 0;
  return 1;
}

static void
fake_sessions_free (gpunet_session *plain, gpunet_session *staged)
{
  staged->backend = fake_inner;
  gpunet_session_free (plain);
  gpunet_session_free (staged);
}

/* Results of n images against the same images classified one by one on `plain` (each
 * with its own parameters): same ids, scores within float rounding of the batched
 * forward pass. */
static void
check_one_by_one (gpunet_session *plain, const gpunet_image *images,
    const gpunet_preprocess_params *pres, int n, int k, const gpunet_class_score *got,
    const char *what)
{
  gpunet_class_score one[16];
  char *err = NULL;
  double worst = 0.0;
  int same_ids = 1;
  for (int i = 0; i < n; i++) {
    CHECK (gpunet_session_classify_each (plain, &images[i], &pres[i], 1, k, one, &err)
        == GPUNET_OK);
    for (int j = 0; j < k; j++) {
      same_ids &= one[j].id == got[(size_t) i * k + j].id;
      worst = fmax (worst, fabs ((double) one[j].score - got[(size_t) i * k + j].score));
    }
  }
  CHECK_MSG (same_ids && worst <= 1e-6, "%s: ids %s the one-by-one results, max score "
      "difference %.3g", what, same_ids ? "equal" : "differ from", worst);
  free (err);
}

/* Each device image of the last classify_device call (`want` of them) came with its own
 * producer event (cuda_ready: the CUDA backend's stream waits on it). */
static void
check_producer_events (const gpunet_image *dev, int n, int want)
{
  CHECK_MSG (fake_seen_n == want, "classify_device got %d images, expected %d", fake_seen_n,
      want);
  for (int j = 0; j < fake_seen_n; j++) {
    int i = 0;
    while (i < n && dev[i].planes[0] != fake_seen_plane[j])
      i++;
    CHECK_MSG (i < n && dev[i].memory == GPUNET_MEMORY_CUDA
        && fake_seen_ready[j] == dev[i].cuda_ready, "image %d of the call: producer event "
        "%p, expected %p", j, fake_seen_ready[j], i < n ? dev[i].cuda_ready : NULL);
  }
}

/* One request mixing frame sizes, formats, resize modes and crops (and frames sharing a
 * geometry): one slot call with a plan per image, results as one by one; on device
 * frames, one classify_device call; host and device frames mixed: one call of each. */
static void
test_classify_mixed (void)
{
  gpunet_model *model = tiny_model ();
  gpunet_session *plain, *staged;
  if (!model || !fake_sessions (model, 6, &plain, &staged)) {
    gpunet_model_unref (model);
    return;
  }
  enum { N = 6, K = 4 };
  uint8_t *mem[N] = { NULL };
  gpunet_image f[N];
  gpunet_preprocess_params pres[N];
  memset (pres, 0, sizeof pres);
  f[0] = upload_frame (GPUNET_FORMAT_NV12, 641, 359, 19, &mem[0]);
  f[1] = upload_frame (GPUNET_FORMAT_BGR, 100, 80, 3, &mem[1]);
  pres[1].resize_mode = GPUNET_RESIZE_STRETCH;
  f[2] = upload_frame (GPUNET_FORMAT_RGBA, 37, 53, 0, &mem[2]);   /* a region crop */
  pres[2].resize_mode = GPUNET_RESIZE_LETTERBOX;
  f[3] = upload_frame (GPUNET_FORMAT_I420, 641, 359, 0, &mem[3]); /* f[0]'s size, */
  pres[3].crop_pct = 0.95f;                                       /* another crop */
  f[4] = upload_frame (GPUNET_FORMAT_RGBX, 5, 3, 7, &mem[4]);
  f[5] = upload_frame (GPUNET_FORMAT_NV12, 641, 359, 2, &mem[5]); /* f[0]'s geometry */
  char *err = NULL;
  gpunet_class_score want[N * K], got[N * K];
  int ok = 1;
  for (int i = 0; i < N; i++)
    ok &= mem[i] != NULL;
  if (ok) {
    /* host frames: one classify_host call, 5 plans for 6 images */
    CHECK (gpunet_session_classify_each (plain, f, pres, N, K, want, &err) == GPUNET_OK);
    CHECK (gpunet_session_classify_each (staged, f, pres, N, K, got, &err) == GPUNET_OK);
    CHECK_MSG (fake_calls == 1 && fake_device_calls == 0 && fake_last_n == N
        && fake_last_plans == 5, "host: %d call(s), last of %d images and %d plans",
        fake_calls, fake_last_n, fake_last_plans);
    CHECK (memcmp (want, got, sizeof want) == 0);
    check_one_by_one (plain, f, pres, N, K, got, "mixed host frames");

    /* the same frames as device frames (the fake reads them in place): one
     * classify_device call */
    gpunet_image dev[N];
    static char producer_event[N];   /* stand-ins: the fake only reads the pointers */
    for (int i = 0; i < N; i++) {
      dev[i] = f[i];
      dev[i].memory = GPUNET_MEMORY_CUDA;
      dev[i].cuda_ready = i % 2 ? &producer_event[i] : NULL;
    }
    memset (got, 0, sizeof got);
    CHECK (gpunet_session_classify_each (staged, dev, pres, N, K, got, &err) == GPUNET_OK);
    CHECK_MSG (fake_calls == 1 && fake_device_calls == 1 && fake_last_n == N
        && fake_last_plans == 5, "device: %d call(s), last of %d images and %d plans",
        fake_device_calls, fake_last_n, fake_last_plans);
    CHECK (memcmp (want, got, sizeof want) == 0);
    check_producer_events (dev, N, N);
    /* host and device frames in one request: one call of each, results in order */
    dev[1].memory = dev[3].memory = GPUNET_MEMORY_HOST;
    memset (got, 0, sizeof got);
    CHECK (gpunet_session_classify_each (staged, dev, pres, N, K, got, &err) == GPUNET_OK);
    CHECK (fake_calls == 2 && fake_device_calls == 2);
    check_one_by_one (plain, f, pres, N, K, got, "host and device frames");
    check_producer_events (dev, N, N - 2);
  } else {
    CHECK_MSG (0, "out of memory");
  }
  for (int i = 0; i < N; i++)
    free (mem[i]);
  fake_sessions_free (plain, staged);
  gpunet_model_unref (model);
  free (err);
}

/* More geometries in one request than one call may carry: split into calls of at most
 * that many, every plan intact during its call (checked by the fake), results in order. */
static void
test_classify_many_geometries (void)
{
  gpunet_model *model = tiny_model ();
  gpunet_session *plain, *staged;
  enum { N = GPUNET_BACKEND_GEOMETRIES_MAX + 6 };
  if (!model || !fake_sessions (model, N, &plain, &staged)) {
    gpunet_model_unref (model);
    return;
  }
  CHECK (fake_most_geometries == GPUNET_BACKEND_GEOMETRIES_MAX);
  CHECK (gpunet_backend_call_geometries (1) == GPUNET_BACKEND_GEOMETRIES_MIN);
  CHECK (gpunet_backend_call_geometries (20) == 20);
  static uint8_t px[3 * 3 * (N + 8)];
  gpunet_image img[N];
  gpunet_class_score out[N];
  memset (img, 0, sizeof img);
  for (int i = 0; i < N; i++) {
    img[i].format = GPUNET_FORMAT_RGB;
    img[i].width = 4 + i;   /* every image its own geometry */
    img[i].height = 3;
    img[i].planes[0] = px;
    img[i].strides[0] = 3 * (N + 8);
  }
  char *err = NULL;
  fake_dry = 1;
  for (int memory = 0; memory < 2; memory++) {
    for (int i = 0; i < N; i++)
      img[i].memory = memory ? GPUNET_MEMORY_CUDA : GPUNET_MEMORY_HOST;
    const int before = memory ? fake_device_calls : fake_calls;
    CHECK (gpunet_session_classify (staged, img, N, NULL, 1, out, &err) == GPUNET_OK);
    const int calls = (memory ? fake_device_calls : fake_calls) - before;
    CHECK_MSG (calls == 2 && fake_last_n == N - GPUNET_BACKEND_GEOMETRIES_MAX,
        "%d distinct geometries: %d calls, the last of %d images", N, calls, fake_last_n);
    int in_order = 1;
    for (int i = 0; i < N; i++)
      in_order &= out[i].id == 4 + i && out[i].score == 3.0f;
    CHECK (in_order);
  }
  /* as many images, three geometries: one call */
  for (int i = 0; i < N; i++)
    img[i].width = 4 + i % 3;
  const int before = fake_device_calls;
  CHECK (gpunet_session_classify (staged, img, N, NULL, 1, out, &err) == GPUNET_OK);
  CHECK (fake_device_calls == before + 1 && fake_last_n == N && fake_last_plans == 3);
  fake_dry = 0;
  fake_sessions_free (plain, staged);
  gpunet_model_unref (model);
  free (err);
}

/* The CUDA backend's table-cache bookkeeping (cuda_pre_cache.h): hits, misses into the
 * least recently used entry, never an entry the current call already picked. */
static void
test_pre_cache (void)
{
  gpunet_pre_cache_slot slots[4];
  memset (slots, 0, sizeof slots);
  gpunet_pre_cache_index c = { slots, 4, 0, 0 };
  gpunet_preprocess_plan p[6];
  memset (p, 0, sizeof p);
  for (int i = 0; i < 6; i++) {
    p[i].in_w = 10 + i;
    p[i].in_h = 10;
    p[i].out_size = 32;
    p[i].mode = GPUNET_RESIZE_STRETCH;
    p[i].crop_pct = 1.0f;
  }
  int hit, at[6];
  /* call 1: four geometries fill the four entries; a fifth does not fit */
  gpunet_pre_cache_begin (&c);
  at[0] = gpunet_pre_cache_pick (&c, &p[0], &hit);
  CHECK (at[0] >= 0 && !hit);
  gpunet_pre_cache_fill (&c, at[0], &p[0]);
  at[1] = gpunet_pre_cache_pick (&c, &p[1], &hit);
  CHECK (at[1] >= 0 && at[1] != at[0] && !hit);
  gpunet_pre_cache_fill (&c, at[1], &p[1]);
  CHECK (gpunet_pre_cache_pick (&c, &p[0], &hit) == at[0] && hit);
  for (int i = 2; i < 4; i++) {
    at[i] = gpunet_pre_cache_pick (&c, &p[i], &hit);
    CHECK (at[i] >= 0 && !hit);
    gpunet_pre_cache_fill (&c, at[i], &p[i]);
  }
  CHECK (at[2] != at[3] && at[2] != at[0] && at[2] != at[1] && at[3] != at[0] && at[3] != at[1]);
  CHECK (gpunet_pre_cache_pick (&c, &p[4], &hit) == -1);
  /* call 2: p[4] replaces the least recently used (p[1]), then p[1] replaces p[0]; with
   * p[2] and p[3] hits, all four entries belong to the call and p[0] fits nowhere */
  gpunet_pre_cache_begin (&c);
  at[4] = gpunet_pre_cache_pick (&c, &p[4], &hit);
  CHECK (at[4] == at[1] && !hit);
  gpunet_pre_cache_fill (&c, at[4], &p[4]);
  const int again = gpunet_pre_cache_pick (&c, &p[1], &hit);
  CHECK (again == at[0] && !hit);
  gpunet_pre_cache_fill (&c, again, &p[1]);
  CHECK (gpunet_pre_cache_pick (&c, &p[2], &hit) == at[2] && hit);
  CHECK (gpunet_pre_cache_pick (&c, &p[3], &hit) == at[3] && hit);
  CHECK (gpunet_pre_cache_pick (&c, &p[0], &hit) == -1);
  /* call 3: a geometry differing only in crop_pct is a miss; an entry emptied by a
   * failed upload (no fill) is picked again, and is no hit */
  gpunet_pre_cache_begin (&c);
  p[5] = p[2];
  p[5].crop_pct = 0.875f;
  const int v = gpunet_pre_cache_pick (&c, &p[5], &hit);
  CHECK (v >= 0 && !hit);
  CHECK (gpunet_pre_cache_pick (&c, &p[5], &hit) == v && !hit);
  CHECK (slots[v].used == 0);
}

/* ---- gpunet-bench's byte counts ---------------------------------------------------------- */

static void
test_op_bytes (void)
{
  static const float dummy[1] = { 0.0f };
  gpunet_op op;
  memset (&op, 0, sizeof op);
  op.kind = GPUNET_OP_CONV2D;
  op.residual = 3;
  op.p.conv2d = (gpunet_conv2d_params) { .cin = 8, .cout = 16, .kernel = 3, .stride = 2, .pad = 1,
    .groups = 2, .ih = 10, .iw = 10, .oh = 5, .ow = 5, .weight = dummy, .bias = dummy };
  /* n 2 fp16: 2 x 2 x (800 in + 400 out + 400 residual) + 2 x 576 weights + 4 x 16 bias */
  CHECK (gpunet_op_min_bytes (&op, 2, 2) == 7616.0);
  op.residual = -1;
  op.p.conv2d.bias = NULL;
  CHECK (gpunet_op_min_bytes (&op, 2, 4) == 11904.0);   /* 2 x 4 x 1200 + 4 x 576 */
  memset (&op, 0, sizeof op);
  op.kind = GPUNET_OP_DWCONV2D;
  op.residual = -1;
  op.p.dwconv2d = (gpunet_dwconv2d_params) { .c = 6, .kernel = 5, .stride = 2, .pad = 2,
    .ih = 8, .iw = 8, .oh = 4, .ow = 4, .weight = dummy, .bias = dummy };
  CHECK (gpunet_op_min_bytes (&op, 3, 4) == 6384.0);    /* 3 x 4 x 480 + 4 x 150 + 4 x 6 */
  memset (&op, 0, sizeof op);
  op.kind = GPUNET_OP_SE;
  op.residual = -1;
  op.p.se = (gpunet_se_params) { .c = 12, .rd = 3, .h = 4, .w = 4 };
  CHECK (gpunet_op_min_bytes (&op, 2, 2) == 1740.0);    /* 2 x 2 x 2 x 192 + 2 x 72 + 4 x 15 */
  memset (&op, 0, sizeof op);
  op.kind = GPUNET_OP_AVGPOOL;
  op.residual = -1;
  op.p.avgpool = (gpunet_avgpool_params) { .c = 10, .h = 7, .w = 7 };
  CHECK (gpunet_op_min_bytes (&op, 2, 4) == 4000.0);    /* 2 x 4 x (490 + 10) */
  memset (&op, 0, sizeof op);
  op.kind = GPUNET_OP_LINEAR;
  op.residual = -1;
  op.p.linear = (gpunet_linear_params) { .cin = 10, .cout = 5, .weight = dummy, .bias = dummy };
  CHECK (gpunet_op_min_bytes (&op, 4, 2) == 240.0);     /* 4 x 2 x 15 + 2 x 50 + 4 x 5 */

  /* a whole network: fp16 moves between half and all of fp32's bytes, and more images
   * move more */
  gpunet_model *model = NULL;
  char *err = NULL;
  if (gpunet_model_new_random ("gpunet-0", 3, &model, &err) != GPUNET_OK) {
    CHECK_MSG (0, "%s", err ? err : "");
    free (err);
    return;
  }
  const gpunet_graph *g = gpunet_model_graph (model);
  double b32 = 0.0, b16 = 0.0, b32x8 = 0.0;
  int bad = 0;
  for (int i = 0; i < g->n_ops; i++) {
    const double x = gpunet_op_min_bytes (&g->ops[i], 1, 4);
    bad += !(x > 0.0);
    b32 += x;
    b16 += gpunet_op_min_bytes (&g->ops[i], 1, 2);
    b32x8 += gpunet_op_min_bytes (&g->ops[i], 8, 4);
  }
  CHECK_MSG (bad == 0, "%d ops of gpunet-0 move no bytes", bad);
  CHECK (b16 >= 0.5 * b32 && b16 < b32);
  CHECK (b32x8 > b32 && b32x8 < 8.0 * b32);
  gpunet_model_unref (model);
}

/* The capture policy of graph.cu: warm-up, capture, replay per key; a few keys (top-k
 * values) keep their graphs side by side, a further one replaces the least recently used;
 * a failed capture runs that pass plain and is retried after GPUNET_GRAPH_RETRY_AFTER
 * plain passes, at most GPUNET_GRAPH_MAX_FAILS times; disabled graphs never capture. */
static gpunet_graph_action
graph_step (gpunet_graph_state *g, int key, int enabled, int ok, int *way, int *drop)
{
  gpunet_graph_action a = gpunet_graph_next (g, key, enabled, way, drop);
  gpunet_graph_done (g, *way, a, ok);
  return a;
}

static void
test_graph_state (void)
{
  gpunet_graph_state g;
  memset (&g, 0, sizeof g);
  int drop = -1, way = -1, way4;
  /* first run for key 4: plain (warm-up) */
  gpunet_graph_action a = graph_step (&g, 4, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_PLAIN && drop == 0 && way >= 0 && way < GPUNET_GRAPH_WAYS);
  way4 = way;
  /* second: capture, in the same way */
  a = graph_step (&g, 4, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_CAPTURE && drop == 0 && way == way4);
  /* then replays, which need no descriptors: only a captured graph of this key says so */
  CHECK (gpunet_graph_will_replay (&g, 4) && !gpunet_graph_will_replay (&g, 5));
  for (int i = 0; i < 3; i++) {
    a = graph_step (&g, 4, 1, 1, &way, &drop);
    CHECK (a == GPUNET_GRAPH_REPLAY && drop == 0 && way == way4);
  }
  /* a second key (another element's top-k): its own way; key 4's graph stays */
  a = graph_step (&g, 5, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_PLAIN && drop == 0 && way != way4 && gpunet_graph_will_replay (&g, 4)
      && !gpunet_graph_will_replay (&g, 5));
  a = graph_step (&g, 5, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_CAPTURE && drop == 0);
  /* alternating k = 4, 5, 4, 5: every pass a replay, nothing dropped */
  for (int i = 0; i < 8; i++) {
    a = graph_step (&g, 4 + i % 2, 1, 1, &way, &drop);
    CHECK (a == GPUNET_GRAPH_REPLAY && drop == 0 && (way == way4) == (i % 2 == 0));
  }
  /* fill the other ways (keys 6, 7), then use 4 so 5 is the least recently used */
  for (int key = 6; key <= 7; key++) {
    graph_step (&g, key, 1, 1, &way, &drop);
    a = graph_step (&g, key, 1, 1, &way, &drop);
    CHECK (a == GPUNET_GRAPH_CAPTURE && drop == 0);
  }
  CHECK (GPUNET_GRAPH_WAYS == 4);
  a = graph_step (&g, 4, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_REPLAY);
  /* a fifth key replaces 5 (least recently used): its graph is dropped; 4, 6, 7 stay */
  a = graph_step (&g, 8, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_PLAIN && drop == 1 && !gpunet_graph_will_replay (&g, 5)
      && gpunet_graph_will_replay (&g, 4) && gpunet_graph_will_replay (&g, 6)
      && gpunet_graph_will_replay (&g, 7) && !gpunet_graph_will_replay (&g, 8));
  a = graph_step (&g, 8, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_CAPTURE && drop == 0);
  a = graph_step (&g, 8, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_REPLAY);

  /* a failed plain run does not count as the warm-up */
  memset (&g, 0, sizeof g);
  graph_step (&g, 1, 1, 0, &way, &drop);
  a = graph_step (&g, 1, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_PLAIN);
  /* a failed capture: gpunet_graph_done says so the first time (the caller logs it once) */
  a = gpunet_graph_next (&g, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_CAPTURE);
  CHECK (gpunet_graph_done (&g, way, a, 0) == 1);
  CHECK (!gpunet_graph_will_replay (&g, 1));
  /* ... then plain passes (graph.cu runs the failed pass's work plain: one of them), for
   * every key, until GPUNET_GRAPH_RETRY_AFTER of them succeeded */
  int plain = 0;
  for (int i = 0; i < 1000; i++) {
    a = gpunet_graph_next (&g, 1 + i % 2, 1, &way, &drop);
    if (a != GPUNET_GRAPH_PLAIN)
      break;
    gpunet_graph_done (&g, way, a, 1);
    plain++;
  }
  CHECK (plain == GPUNET_GRAPH_RETRY_AFTER && a == GPUNET_GRAPH_CAPTURE);
  /* a failed plain pass does not bring the retry closer */
  memset (&g, 0, sizeof g);
  graph_step (&g, 2, 1, 1, &way, &drop);
  graph_step (&g, 2, 1, 0, &way, &drop);   /* failed capture */
  graph_step (&g, 2, 1, 0, &way, &drop);   /* failed plain pass */
  CHECK (g.wait == GPUNET_GRAPH_RETRY_AFTER);
  /* a retry that succeeds replays from then on */
  for (int i = 0; i < GPUNET_GRAPH_RETRY_AFTER; i++)
    graph_step (&g, 2, 1, 1, &way, &drop);
  a = graph_step (&g, 2, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_CAPTURE);
  a = graph_step (&g, 2, 1, 1, &way, &drop);
  CHECK (a == GPUNET_GRAPH_REPLAY);
  /* GPUNET_GRAPH_MAX_FAILS failed captures: plain for good (bounded attempts), and only
   * the first failure asks for the log line */
  memset (&g, 0, sizeof g);
  int captures = 0, logs = 0;
  graph_step (&g, 3, 1, 1, &way, &drop);
  for (int i = 0; i < 20 * GPUNET_GRAPH_RETRY_AFTER; i++) {
    a = gpunet_graph_next (&g, 3, 1, &way, &drop);
    const int fail = a == GPUNET_GRAPH_CAPTURE;
    captures += fail;
    logs += gpunet_graph_done (&g, way, a, !fail);
    if (fail)
      gpunet_graph_done (&g, way, GPUNET_GRAPH_PLAIN, 1);   /* the pass's plain run */
  }
  CHECK (captures == GPUNET_GRAPH_MAX_FAILS && logs == 1 && !gpunet_graph_will_replay (&g, 3));

  /* disabled (GPUNET_CUDA=graphs=off): never a capture */
  memset (&g, 0, sizeof g);
  for (int i = 0; i < 4; i++) {
    a = graph_step (&g, 3, 0, 1, &way, &drop);
    CHECK (a == GPUNET_GRAPH_PLAIN && drop == 0);
  }
}

/* cuDNN 9 statuses: both allocation failures are out of memory (the old ALLOC_FAILED is
 * only the host one), a cuDNN that cannot run here is "unavailable" (auto falls back to
 * the CPU), anything else a backend error. */
/* a device frame's planes: only memory the session's context can address is read */
static void
test_plane_access (void)
{
  static const char buf[16];
  const void *addr = buf;
  CHECK (gpunet_plane_access_of (2, 0, 0, addr) == GPUNET_PLANE_READABLE);
  CHECK (gpunet_plane_access_of (1, 0, 0, addr) == GPUNET_PLANE_READABLE);   /* pinned */
  CHECK (gpunet_plane_access_of (3, 0, 0, addr) == GPUNET_PLANE_READABLE);   /* managed */
  CHECK (gpunet_plane_access_of (1, 1, 0, addr) == GPUNET_PLANE_READABLE);   /* pinned: any device */
  CHECK (gpunet_plane_access_of (0, -2, 0, NULL) == GPUNET_PLANE_HOST);
  CHECK (gpunet_plane_access_of (2, 1, 0, addr) == GPUNET_PLANE_OTHER_DEVICE);
  /* device memory of another context on the session's GPU: no address here */
  CHECK_MSG (gpunet_plane_access_of (2, 0, 0, NULL) == GPUNET_PLANE_OTHER_CONTEXT,
      "device memory with no address in the session's context taken as readable");
  CHECK (gpunet_plane_access_of (1, 0, 0, NULL) == GPUNET_PLANE_OTHER_CONTEXT);
}

/* pdl=on only where the kernels carry the wait: an sm_90+ device and compute_90+ code */
static void
test_pdl_usable (void)
{
  CHECK (gpunet_cuda_pdl_usable (9, 90));
  CHECK (gpunet_cuda_pdl_usable (10, 90));    /* sm_100 JIT-compiling compute_90 PTX */
  CHECK (gpunet_cuda_pdl_usable (10, 100));
  CHECK (!gpunet_cuda_pdl_usable (8, 86));     /* no PDL before sm_90 */
  CHECK (!gpunet_cuda_pdl_usable (8, 90));
  /* gpu_archs=75 (run-tests.sh's default) or 75,80,86,89 on an H100: compute_75/89 PTX
   * JIT-compiled, gpunet_pdl_wait compiled out */
  CHECK_MSG (!gpunet_cuda_pdl_usable (9, 75), "PDL on with kernels of compute_75");
  CHECK_MSG (!gpunet_cuda_pdl_usable (9, 89), "PDL on with kernels of compute_89");
  CHECK (!gpunet_cuda_pdl_usable (9, 0));       /* the kernel's attributes unknown */
  /* op by op: never the first op (a memcpy or the preprocess before it), nor with
   * per-op events or trace copies between the ops */
  CHECK (gpunet_cuda_pdl_for_op (1, 1, 0, 0));
  CHECK (gpunet_cuda_pdl_for_op (1, 35, 0, 0));
  CHECK_MSG (!gpunet_cuda_pdl_for_op (1, 0, 0, 0), "PDL on the pass's first op");
  CHECK_MSG (!gpunet_cuda_pdl_for_op (1, 5, 1, 0), "PDL with per-op events");
  CHECK_MSG (!gpunet_cuda_pdl_for_op (1, 5, 0, 1), "PDL with trace copies");
  CHECK (!gpunet_cuda_pdl_for_op (0, 5, 0, 0));
}

static void
test_dnn_status_class (void)
{
  CHECK (gpunet_cuda_dnn_status_class (4003) == GPUNET_ERR_NO_MEMORY);
  CHECK (gpunet_cuda_dnn_status_class (4004) == GPUNET_ERR_NO_MEMORY);
  const int unavailable[] = { 1001, 1002, 1008, 3005, 3006, 3007, 3008, 3009 };
  for (size_t i = 0; i < sizeof unavailable / sizeof unavailable[0]; i++)
    CHECK_MSG (gpunet_cuda_dnn_status_class (unavailable[i]) == GPUNET_ERR_BACKEND_UNAVAILABLE,
        "cuDNN status %d", unavailable[i]);
  const int backend[] = { 2000, 2002, 3000, 3002, 4000, 5000 };
  for (size_t i = 0; i < sizeof backend / sizeof backend[0]; i++)
    CHECK_MSG (gpunet_cuda_dnn_status_class (backend[i]) == GPUNET_ERR_BACKEND, "cuDNN status %d",
        backend[i]);
  CHECK_CONTAINS (gpunet_cuda_dnn_status_hint (1008), "libcudnn_cnn.so.9");
  CHECK_CONTAINS (gpunet_cuda_dnn_status_hint (4004), "device memory");
  CHECK (strcmp (gpunet_cuda_dnn_status_hint (3000), "") == 0);
}

/* The tiled depthwise kernel (the default) run block by block and thread by thread as the
 * GPU would, with the same cuda_math.h functions: every output written exactly once, and
 * bit for bit the direct kernel's value (float and fp16 storage). */
static void
test_dwconv_tiled (void)
{
  static const struct { int n, c, ih, iw, k, stride; } shapes[] = {
    { 1, 3, 10, 10, 3, 1 }, { 2, 2, 12, 12, 5, 1 }, { 1, 2, 20, 20, 3, 2 },
    { 1, 2, 33, 33, 5, 1 }, { 1, 2, 46, 46, 7, 2 }, { 1, 1, 132, 132, 5, 1 },
    { 1, 2, 37, 71, 3, 2 }, { 1, 2, 1, 1, 3, 1 }, { 1, 1, 5, 200, 5, 2 }, { 3, 1, 9, 17, 7, 1 },
    { 1, 1, 264, 264, 3, 1 }, { 1, 2, 17, 17, 5, 1 }, { 1, 1, 66, 66, 7, 1 }, { 2, 1, 7, 3, 3, 2 },
    { 1, 1, 264, 264, 7, 2 }, { 1, 1, 300, 300, 7, 2 },
  };
  const int threads = 128;   /* DW_TILE_THREADS */
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    const int n = shapes[si].n, c = shapes[si].c, ih = shapes[si].ih, iw = shapes[si].iw;
    const int k = shapes[si].k, stride = shapes[si].stride, pad = k / 2;
    const int oh = gpunet_conv_out_dim (ih, k, stride, pad), ow = gpunet_conv_out_dim (iw, k, stride, pad);
    const int act = si % 2 ? GPUNET_EPI_SWISH : GPUNET_EPI_RELU;
    const size_t in_n = (size_t) n * c * ih * iw, out_n = (size_t) n * c * oh * ow;
    float *rx = check_frand_array (in_n), *rw = check_frand_array ((size_t) c * k * k), *bias = check_frand_array ((size_t) c);
    gpunet_half *hx = half_array (rx, in_n), *hw = half_array (rw, (size_t) c * k * k);
    const int max_quads = si % 3 == 0 ? 1024 : 256;   /* 256: DW_TILE_QUADS */
    const gpunet_dw_tiling t = gpunet_dw_tiling_for (oh, ow, k, stride, max_quads);
    CHECK_MSG (t.tw % 4 == 0 && t.tw <= 40 && t.quads <= max_quads && t.tw * t.tiles_x >= ow
        && t.th * t.tiles_y >= oh && t.tw * (t.tiles_x - 1) < ow && t.th * (t.tiles_y - 1) < oh
        && t.in_stride % 4 == 0 && t.in_stride >= t.in_cols
        && (t.tw - 4) * stride + 4 * gpunet_dw_seg4 (k, stride) <= t.in_stride
        && sizeof (float) * ((size_t) t.in_rows * t.in_stride + (size_t) k * k) <= 48 * 1024,
        "tiling %zu: %d x %d tiles of %d x %d", si, t.tiles_x, t.tiles_y, t.tw, t.th);
    float *tile = malloc (sizeof (float) * (size_t) t.in_rows * t.in_stride), *wk = malloc (sizeof (float) * k * k);
    float *got = malloc (sizeof (float) * out_n);
    int *count = calloc (out_n, sizeof (int));
    for (int half = 0; half <= 1; half++) {
      memset (count, 0, sizeof (int) * out_n);
      for (long long plane = 0; plane < (long long) n * c; plane++) {
        const int ch = (int) (plane % c);
        for (int tile_i = 0; tile_i < t.tiles_x * t.tiles_y; tile_i++) {
          const int ty = tile_i / t.tiles_x, tx = tile_i % t.tiles_x;
          for (int i = 0; i < k * k; i++)
            wk[i] = half ? gpunet_half_to_float (hw[(long long) ch * k * k + i]) : rw[ch * k * k + i];
          for (int r = 0; r < t.in_rows; r++)
            for (int col = 0; col < t.in_stride; col++) {
              long long off = 0;
              const int inside = gpunet_dw_tile_src (&t, ty, tx, stride, pad, ih, iw, r, col, &off);
              tile[r * t.in_stride + col] = !inside ? 0.0f
                  : half ? gpunet_half_to_float (hx[plane * ih * iw + off]) : rx[plane * ih * iw + off];
            }
          for (int th = 0; th < threads; th++)
            for (int q = th; q < t.quads; q += threads) {
              float acc[4];
              gpunet_dwconv_quad_at (tile, &t, wk, k, stride, q, acc);
              for (int j = 0; j < 4; j++) {
                int oy, ox;
                if (!gpunet_dw_quad_out (&t, ty, tx, q, j, oh, ow, &oy, &ox))
                  continue;
                const long long idx = plane * oh * ow + (long long) oy * ow + ox;
                got[idx] = gpunet_epilogue (acc[j], bias[ch], act, 0.0f);
                count[idx]++;
              }
            }
        }
      }
      int bad = 0, unwritten = 0;
      for (long long i = 0; i < (long long) out_n; i++) {
        const float want = half ? gpunet_dwconv_out_at_h (hx, hw, bias, i, c, ih, iw, oh, ow, k, stride, pad, act)
            : gpunet_dwconv_out_at (rx, rw, bias, i, c, ih, iw, oh, ow, k, stride, pad, act);
        unwritten += count[i] != 1;
        bad += count[i] == 1 && memcmp (&got[i], &want, sizeof want) != 0;
      }
      CHECK_MSG (unwritten == 0 && bad == 0, "tiled dwconv shape %zu (%s): %d outputs not written "
          "once, %d differ from the direct kernel", si, half ? "fp16" : "fp32", unwritten, bad);
    }
    free (rx);
    free (rw);
    free (bias);
    free (hx);
    free (hw);
    free (tile);
    free (wk);
    free (got);
    free (count);
  }
}

int
main (void)
{
  test_activation ();
  test_index_maps ();
  test_epilogue ();
  test_dwconv ();
  test_dwconv_tiled ();
  test_linear ();
  test_se ();
  test_half_all_values ();
  test_half_rounding ();
  test_half_variants ();
  test_upload_layout ();
  test_upload_pack ();
  test_plane_access ();
  test_classify_host_dispatch ();
  test_classify_mixed ();
  test_classify_many_geometries ();
  test_pre_cache ();
  test_op_bytes ();
  test_graph_state ();
  test_pdl_usable ();
  test_dnn_status_class ();
  test_loader_errors ();
  test_no_gpu ();
  return check_report ();
}
