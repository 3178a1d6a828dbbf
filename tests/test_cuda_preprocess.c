/* test_cuda_preprocess.c: CPU-side tests of the CUDA device-frame path: the per-pixel
 * function of the CUDA preprocess kernel (kernels/cuda/cuda_preprocess.h) called on the
 * host against gpunet_cpu_preprocess on random frames of every format, size and resize
 * mode, and a batch mixing geometries (each descriptor with its own tables); the
 * device top-k's sort network and softmax run on the host against
 * gpunet_topk_softmax; and the engine's checks of GPUNET_MEMORY_CUDA images. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "host/preprocess.h"
#include "cuda/cuda_preprocess.h"
#include "cuda/cuda_topk.h"
#include "gpunet.h"

/* the CPU pass's vector code: -1 what this CPU has; "portable" (argument) 0, so the plain
 * loops are held to the same per-pixel maths on a CPU with AVX2 or AVX-512; "avx2" 1, so
 * are the AVX2 ones on a CPU with AVX-512 */
static int simd_cap = -1;

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint32_t
rnd (void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t) (rng_state >> 32);
}

/* A w x h frame of `fmt` with random bytes everywhere (padding included) and rows
 * padded by `pad` bytes; *mem holds the storage. */
static gpunet_image
random_frame (gpunet_pixel_format fmt, int w, int h, int pad, uint8_t **mem)
{
  gpunet_image img;
  memset (&img, 0, sizeof img);
  img.format = fmt;
  img.width = w;
  img.height = h;
  img.matrix = rnd () & 1 ? GPUNET_MATRIX_BT709 : GPUNET_MATRIX_BT601;
  img.full_range = (int) (rnd () & 1);
  const int cw = (w + 1) / 2, ch = (h + 1) / 2;
  int rows[3] = { h, 0, 0 }, stride[3] = { 0, 0, 0 }, planes = 1;
  switch (fmt) {
    case GPUNET_FORMAT_NV12:
      planes = 2;
      stride[0] = w + pad;
      stride[1] = 2 * cw + pad;
      rows[1] = ch;
      break;
    case GPUNET_FORMAT_I420:
      planes = 3;
      stride[0] = w + pad;
      stride[1] = stride[2] = cw + pad;
      rows[1] = rows[2] = ch;
      break;
    case GPUNET_FORMAT_RGB: case GPUNET_FORMAT_BGR:
      stride[0] = 3 * w + pad;
      break;
    default:
      stride[0] = 4 * w + pad;
      break;
  }
  size_t size = 0, off[3];
  for (int p = 0; p < planes; p++) {
    off[p] = size;
    size += (size_t) stride[p] * rows[p];
  }
  *mem = malloc (size);
  for (size_t i = 0; *mem && i < size; i++)
    (*mem)[i] = (uint8_t) rnd ();
  for (int p = 0; p < planes && *mem; p++) {
    img.planes[p] = *mem + off[p];
    img.strides[p] = stride[p];
  }
  return img;
}

/* One frame through both paths; returns the number of values that differ and updates
 * *worst with the largest difference. */
static int
compare_frame (const gpunet_image *img, int R, gpunet_resize_mode mode, float crop_pct,
    double *worst)
{
  gpunet_preprocess_plan plan;
  if (gpunet_preprocess_plan_init (&plan, img->width, img->height, R, mode, crop_pct) != GPUNET_OK) {
    CHECK_MSG (0, "plan %dx%d -> %d", img->width, img->height, R);
    return 1;
  }
  plan.simd_cap = simd_cap;
  const size_t plane = (size_t) R * R;
  float *cpu = malloc (3 * plane * sizeof (float));
  gpunet_cpu_preprocess (&plan, img, cpu);
  check_paths_ran (plan.paths_ran);
  gpunet_cuda_pre_desc d;
  gpunet_cuda_pre_desc_init (&d, &plan, img);
  int differ = 0;
  for (int oy = 0; oy < R; oy++)
    for (int ox = 0; ox < R; ox++) {
      float v[3];
      gpunet_cuda_preprocess_pixel (&d, ox, oy, &v[0], &v[1], &v[2]);
      for (int c = 0; c < 3; c++) {
        const float ref = cpu[c * plane + (size_t) oy * R + ox];
        const double e = fabs ((double) v[c] - ref);
        if (v[c] != ref)
          differ++;
        if (!(e <= *worst))
          *worst = isnan (e) ? INFINITY : e;
      }
    }
  free (cpu);
  gpunet_preprocess_plan_clear (&plan);
  return differ;
}

static void
test_preprocess_pixel (void)
{
  static const gpunet_pixel_format formats[] = {
    GPUNET_FORMAT_NV12, GPUNET_FORMAT_I420, GPUNET_FORMAT_RGBA, GPUNET_FORMAT_BGRA,
    GPUNET_FORMAT_RGBX, GPUNET_FORMAT_BGRX, GPUNET_FORMAT_RGB, GPUNET_FORMAT_BGR
  };
  static const char *names[] = { "NV12", "I420", "RGBA", "BGRA", "RGBx", "BGRx", "RGB", "BGR" };
  static const int sizes[][2] = {
    { 1, 1 }, { 2, 3 }, { 7, 5 }, { 33, 17 }, { 64, 64 }, { 101, 67 }, { 320, 240 },
    { 640, 361 }, { 57, 300 }, { 1280, 720 }
  };
  static const gpunet_resize_mode modes[] = {
    GPUNET_RESIZE_CENTER_CROP, GPUNET_RESIZE_STRETCH, GPUNET_RESIZE_LETTERBOX
  };
  for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
    long values = 0, differ = 0;
    double worst = 0.0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      for (size_t m = 0; m < 3; m++) {
        /* under an emulator the HD frame alone takes minutes; 640 x 361 and 320 x 240
         * reach the same loops */
        if (check_emulated () && sizes[s][0] * sizes[s][1] > 640 * 480)
          continue;
        const int R = s % 3 == 0 ? 224 : s % 3 == 1 ? 37 : 64;
        const float crop = m == 0 && s % 2 ? 0.875f : 1.0f;
        uint8_t *mem = NULL;
        gpunet_image img = random_frame (formats[f], sizes[s][0], sizes[s][1],
            (int) (rnd () % 9), &mem);
        if (!mem) {
          CHECK_MSG (0, "out of memory");
          continue;
        }
        differ += compare_frame (&img, R, modes[m], crop, &worst);
        values += 3L * R * R;
        free (mem);
      }
    /* same functions, same summation order: equal to the bit */
    CHECK_MSG (differ == 0 && worst == 0.0,
        "%s: %ld of %ld values differ from the CPU preprocess, max |diff| %.3g", names[f],
        differ, values, worst);
  }
}

/* A copy of one axis's tables in its own buffer (as preprocess.cu uploads them), the
 * descriptor's axis pointed at the copy. */
static void *
copy_axis (const gpunet_resample_axis *a, gpunet_cuda_axis *ax)
{
  const size_t ib = (size_t) a->n * sizeof (int), wb = (size_t) a->n * a->ksize * sizeof (float);
  char *mem = malloc (2 * ib + wb);
  if (!mem)
    return NULL;
  memcpy (mem, a->first, ib);
  memcpy (mem + ib, a->count, ib);
  memcpy (mem + 2 * ib, a->weights, wb);
  ax->first = (const int *) mem;
  ax->count = (const int *) (mem + ib);
  ax->weights = (const float *) (mem + 2 * ib);
  return mem;
}

/* One batch of frames of different sizes, formats, resize modes and crops, as the
 * preprocess kernel runs it (grid z = image, each image's descriptor pointing at its own
 * frame and at its own geometry's copy of the tap tables, images of one geometry sharing
 * one copy, the plans freed before the batch runs): every image of the batch gets the
 * bits of the CPU preprocess of that image alone. */
static void
test_mixed_batch (void)
{
  enum { N = 5, R = 48 };
  static const struct {
    gpunet_pixel_format fmt;
    int w, h, shares;   /* shares: index of an earlier image of the same geometry, or -1 */
    gpunet_resize_mode mode;
    float crop;
  } cases[N] = {
    { GPUNET_FORMAT_NV12, 641, 359, -1, GPUNET_RESIZE_CENTER_CROP, 0.875f },
    { GPUNET_FORMAT_RGBA, 37, 53, -1, GPUNET_RESIZE_LETTERBOX, 1.0f },
    { GPUNET_FORMAT_I420, 641, 359, -1, GPUNET_RESIZE_CENTER_CROP, 0.95f },
    { GPUNET_FORMAT_BGR, 100, 80, -1, GPUNET_RESIZE_STRETCH, 1.0f },
    { GPUNET_FORMAT_NV12, 641, 359, 0, GPUNET_RESIZE_CENTER_CROP, 0.875f },
  };
  const size_t plane = (size_t) R * R, per_image = 3 * plane;
  uint8_t *mem[N] = { NULL };
  void *tables[2 * N] = { NULL };
  gpunet_image img[N];
  gpunet_cuda_pre_desc desc[N];
  float *want = malloc (N * per_image * sizeof (float));
  float *got = malloc (N * per_image * sizeof (float));
  int ok = want && got;
  for (int i = 0; i < N && ok; i++) {
    img[i] = random_frame (cases[i].fmt, cases[i].w, cases[i].h, (int) (rnd () % 9), &mem[i]);
    gpunet_preprocess_plan plan;
    ok = mem[i] && gpunet_preprocess_plan_init (&plan, cases[i].w, cases[i].h, R,
        cases[i].mode, cases[i].crop) == GPUNET_OK;
    if (!ok)
      break;
    plan.simd_cap = simd_cap;
    gpunet_cpu_preprocess (&plan, &img[i], want + i * per_image);
    check_paths_ran (plan.paths_ran);
    gpunet_cuda_pre_desc_init (&desc[i], &plan, &img[i]);
    if (cases[i].shares >= 0) {
      desc[i].x = desc[cases[i].shares].x;
      desc[i].y = desc[cases[i].shares].y;
    } else {
      tables[2 * i] = copy_axis (&plan.x, &desc[i].x);
      tables[2 * i + 1] = copy_axis (&plan.y, &desc[i].y);
      ok = tables[2 * i] && tables[2 * i + 1];
    }
    gpunet_preprocess_plan_clear (&plan);
  }
  if (ok) {
    for (int z = 0; z < N; z++)
      for (int oy = 0; oy < R; oy++)
        for (int ox = 0; ox < R; ox++) {
          float *o = got + z * per_image + (size_t) oy * R + ox;
          gpunet_cuda_preprocess_pixel (&desc[z], ox, oy, &o[0], &o[plane], &o[2 * plane]);
        }
    for (int i = 0; i < N; i++) {
      long differ = 0;
      for (size_t v = 0; v < per_image; v++)
        differ += got[i * per_image + v] != want[i * per_image + v];
      CHECK_MSG (differ == 0, "batch image %d (%dx%d, mode %d): %ld of %zu values differ "
          "from its CPU preprocess", i, cases[i].w, cases[i].h, (int) cases[i].mode, differ,
          per_image);
    }
    /* the geometries really differ: image 2 has image 0's size but another crop */
    CHECK (desc[2].x.lo != desc[0].x.lo || desc[2].x.first[R / 2] != desc[0].x.first[R / 2]);
  } else {
    CHECK_MSG (0, "out of memory or plan failure");
  }
  for (int i = 0; i < N; i++)
    free (mem[i]);
  for (int i = 0; i < 2 * N; i++)
    free (tables[i]);
  free (want);
  free (got);
}

/* The device top-k as topk_kernel runs it, on the host: same network, same sums. */
enum { SIM_THREADS = 1024 };

static void
sim_topk (const float *l, int classes, int k, gpunet_class_score *out)
{
  static float val[GPUNET_CUDA_TOPK_MAX];
  static int id[GPUNET_CUDA_TOPK_MAX];
  static double part[SIM_THREADS];
  const int n_pow2 = gpunet_pow2_ceil (classes);
  for (int i = 0; i < n_pow2; i++) {
    val[i] = i < classes ? l[i] : 0.0f;
    id[i] = i < classes ? i : -1;
  }
  for (int size = 2; size <= n_pow2; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1)
      for (int i = 0; i < n_pow2; i++)
        gpunet_bitonic_step (val, id, i, size, stride);
  const double max = val[0];
  for (int t = 0; t < SIM_THREADS; t++) {
    part[t] = 0.0;
    for (int i = t; i < classes; i += SIM_THREADS)
      part[t] += exp ((double) l[i] - max);
  }
  for (int h = SIM_THREADS / 2; h > 0; h >>= 1)
    for (int t = 0; t < h; t++)
      part[t] += part[t + h];
  for (int j = 0; j < k; j++) {
    out[j].id = id[j];
    out[j].score = (float) (exp ((double) val[j] - max) / part[0]);
  }
}

static void
test_topk (void)
{
  static const int classes_list[] = { 1, 2, 3, 5, 17, 100, 1000, 1001, 1024, 2048 };
  static float l[GPUNET_CUDA_TOPK_MAX];
  static gpunet_class_score want[GPUNET_CUDA_TOPK_MAX], got[GPUNET_CUDA_TOPK_MAX];
  for (size_t c = 0; c < sizeof classes_list / sizeof classes_list[0]; c++)
    for (int trial = 0; trial < 4; trial++) {
      const int classes = classes_list[c];
      for (int i = 0; i < classes; i++) {
        /* trial 1 and 3: few distinct values, so many ties */
        const uint32_t r = rnd ();
        l[i] = trial & 1 ? (float) (r % 7) - 3.0f : (float) ((double) r / 4294967296.0 * 40.0 - 20.0);
      }
      const int ks[] = { 1, 5, classes };
      for (int q = 0; q < 3; q++) {
        const int k = ks[q] < classes ? ks[q] : classes;
        gpunet_topk_softmax (l, classes, k, want);
        sim_topk (l, classes, k, got);
        int same_ids = 1;
        double worst = 0.0;
        for (int j = 0; j < k; j++) {
          same_ids &= got[j].id == want[j].id;
          worst = fmax (worst, fabs ((double) got[j].score - want[j].score) / fmax (want[j].score, 1e-30));
        }
        CHECK_MSG (same_ids && worst <= 1e-6, "%d classes, k %d, trial %d: ids %s, max rel "
            "score error %.3g", classes, k, trial, same_ids ? "agree" : "differ", worst);
      }
    }
}

/* A CUDA-memory image on a CPU session, mixed batches, and the preprocess-only call. */
static void
test_engine_checks (void)
{
  /* a small random-weight model: the checks are of the call, not of the network */
  char arch[1024];
  snprintf (arch, sizeof arch, "%s/fixtures/tiny-a.json", check_data_dir ());
  gpunet_model *model = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_model_new_random (arch, 7, &model, &err);
  CHECK_MSG (st == GPUNET_OK, "model: %s", err ? err : "?");
  if (st != GPUNET_OK)
    return;
  gpunet_session_params sp;
  gpunet_session_params_init (&sp);
  sp.backend = GPUNET_BACKEND_CPU;
  sp.max_batch = 2;
  gpunet_session *s = NULL;
  st = gpunet_session_new (model, &sp, &s, &err);
  CHECK_MSG (st == GPUNET_OK, "session: %s", err ? err : "?");
  if (st == GPUNET_OK) {
    static uint8_t px[64 * 48 * 4];
    gpunet_image imgs[2];
    memset (imgs, 0, sizeof imgs);
    for (int i = 0; i < 2; i++) {
      imgs[i].format = GPUNET_FORMAT_RGBA;
      imgs[i].width = 64;
      imgs[i].height = 48;
      imgs[i].planes[0] = px;
      imgs[i].strides[0] = 256;
      imgs[i].memory = GPUNET_MEMORY_CUDA;
    }
    gpunet_class_score res[10];
    st = gpunet_session_classify (s, imgs, 1, NULL, 5, res, &err);
    CHECK (st == GPUNET_ERR_UNSUPPORTED);
    CHECK_CONTAINS (err, "reads host memory only");

    imgs[1].memory = GPUNET_MEMORY_HOST;
    st = gpunet_session_classify (s, imgs, 2, NULL, 5, res, &err);
    CHECK (st == GPUNET_ERR_UNSUPPORTED || st == GPUNET_ERR_INVALID_ARGUMENT);
    imgs[0].memory = GPUNET_MEMORY_HOST;
    imgs[1].memory = GPUNET_MEMORY_CUDA;
    /* mixed host and device images are one request on the CUDA backend; this CPU
     * session refuses the device image by its index */
    st = gpunet_session_classify (s, imgs, 2, NULL, 5, res, &err);
    CHECK (st == GPUNET_ERR_UNSUPPORTED);
    CHECK_CONTAINS (err, "image 1 is in CUDA device memory");

    imgs[1].memory = (gpunet_memory) 7;
    st = gpunet_session_classify (s, imgs, 2, NULL, 5, res, &err);
    CHECK (st == GPUNET_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS (err, "unknown memory kind");

    imgs[1].memory = GPUNET_MEMORY_HOST;   /* both host again: runs */
    st = gpunet_session_classify (s, imgs, 2, NULL, 5, res, &err);
    CHECK_MSG (st == GPUNET_OK, "host batch: %s", err ? err : "?");

    static float chw[3 * 224 * 224];   /* more than the model's 96 x 96 */
    imgs[0].memory = GPUNET_MEMORY_CUDA;
    st = gpunet_preprocess_image (model, &imgs[0], NULL, chw, &err);
    CHECK (st == GPUNET_ERR_UNSUPPORTED);
    CHECK_CONTAINS (err, "host memory only");
  }
  gpunet_session_free (s);
  gpunet_model_unref (model);
  free (err);
}

int
main (int argc, char **argv)
{
  if (argc > 1 && !strcmp (argv[1], "portable"))
    simd_cap = 0;
  else if (argc > 1 && !strcmp (argv[1], "avx2"))
    simd_cap = 1;
  else if (argc > 1) {
    fprintf (stderr, "usage: test_cuda_preprocess [portable|avx2]\n");
    return 2;
  }
  test_preprocess_pixel ();
  test_mixed_batch ();
  test_topk ();
  test_engine_checks ();
  if (simd_cap == 1 && !(check_paths_ran_ & GPUNET_CPU_PATH_AVX2)) {
    /* what this run is for did not run: a CPU without AVX2 */
    check_paths_not_run (GPUNET_CPU_PATH_AVX2);
    if (check_report () != 0)
      return 1;
    printf ("# the CPU pass's AVX2 code: this CPU has no AVX2, skipped\n");
    return 77;
  }
  return check_report ();
}
