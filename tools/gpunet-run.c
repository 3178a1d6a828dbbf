/* gpunet-run: runs the engine on one input: a raw float32 NCHW tensor (already
 * normalised), a raw video frame, or photos (--image, decoded by GStreamer) that go
 * through the element's fused preprocess. Writes raw float32 logits (tensor, frame)
 * and prints the top-k classes of each image, with labels for photos. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpunet-atomic.h"
#include "gpunet.h"
#include "gpunet-tool-args.h"
#ifdef HAVE_GST
#include "gpunet-run-image.h"
#endif

static void
usage (FILE *f)
{
  fprintf (f,
      "usage: gpunet-run --model NAME_OR_JSON --checkpoint FILE --image PHOTO [PHOTO...]\n"
      "                  [--resize-mode ...] [--crop-pct P] [--top-k K] [--labels FILE]\n"
      "       gpunet-run --model NAME_OR_JSON --checkpoint FILE\n"
      "                  (--input FILE.bin [--batch N] | --frame FILE --format FMT --width W --height H\n"
      "                   [--stride S[,S2[,S3]]] [--resize-mode center-crop|stretch|letterbox]\n"
      "                   [--crop-pct P] [--matrix bt601|bt709] [--full-range] [--dump-input FILE.bin])\n"
      "                  [--output FILE.bin] [--top-k K] [--backend auto|cpu|cuda|cpu-ref] [--threads T]\n"
      "                  [--precision auto|fp32|fp16|bf16|int8] [--scales FILE]\n"
      "\n"
      "  --image    JPEG, PNG or any picture GStreamer decodes; prints the top-k with labels\n"
      "             (ImageNet names for 1000-class models, else --labels or class-ID)\n"
      "  --labels   a label file, one name per line (class 0 first)\n"
      "  --input    raw little-endian float32 N x 3 x R x R tensor, already normalised\n"
      "  --frame    one raw 8-bit frame; FMT is NV12, I420, RGB, BGR, RGBA, BGRA, RGBx or BGRx\n"
      "  --output   writes N x classes float32 logits\n"
      "  --top-k    classes printed per image (default 5)\n"
      "  --precision  CUDA arithmetic (auto: fp16 on GPUs with tensor cores); the CPU runs fp32,\n"
      "               or bf16 where it has AVX-512 BF16 or AMX, or int8 with --scales (never\n"
      "               exact)\n"
      "  --scales     the int8 scales file of this model and checkpoint (gpunet-convert\n"
      "               --calibrate DIR); needed by --precision int8, refused without it\n");
}

static int
parse_int (const char *opt, const char *v, int lo, int hi, int *out)
{
  char *end;
  errno = 0;
  long x = strtol (v, &end, 10);
  if (errno || *end || end == v || x < lo || x > hi) {
    fprintf (stderr, "gpunet-run: %s needs an integer from %d to %d, got '%s'\n", opt, lo, hi, v);
    return -1;
  }
  *out = (int) x;
  return 0;
}

static void *
read_all (const char *path, size_t *size)
{
  FILE *f = fopen (path, "rb");
  if (!f) {
    fprintf (stderr, "gpunet-run: cannot open '%s': %s\n", path, strerror (errno));
    return NULL;
  }
  size_t cap = 1 << 20, n = 0;
  unsigned char *buf = malloc (cap);
  while (buf) {
    if (n == cap) {
      unsigned char *nb = realloc (buf, cap * 2);
      if (!nb) {
        free (buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t r = fread (buf + n, 1, cap - n, f);
    n += r;
    if (r == 0)
      break;
  }
  if (ferror (f)) {
    fprintf (stderr, "gpunet-run: error reading '%s'\n", path);
    free (buf);
    buf = NULL;
  }
  fclose (f);
  *size = n;
  return buf;
}

/* Through a temporary file renamed at the end (gpunet-atomic.h). */
static int
write_all (const char *path, const void *data, size_t size)
{
  if (gpunet_atomic_write_file (path, data, size) != 0) {
    fprintf (stderr, "gpunet-run: cannot write '%s': %s\n", path, strerror (errno));
    return -1;
  }
  return 0;
}

static const struct { const char *name; gpunet_pixel_format fmt; int bpp; } formats[] = {
  { "RGB", GPUNET_FORMAT_RGB, 3 }, { "BGR", GPUNET_FORMAT_BGR, 3 },
  { "RGBA", GPUNET_FORMAT_RGBA, 4 }, { "BGRA", GPUNET_FORMAT_BGRA, 4 },
  { "RGBx", GPUNET_FORMAT_RGBX, 4 }, { "BGRx", GPUNET_FORMAT_BGRX, 4 },
  { "NV12", GPUNET_FORMAT_NV12, 1 }, { "I420", GPUNET_FORMAT_I420, 1 },
};

/* Fills planes/strides of `img` over `data` and checks the size; returns 0 or -1. */
static int
frame_layout (gpunet_image *img, int bpp, const int *strides, int n_strides,
    const unsigned char *data, size_t size)
{
  const int w = img->width, h = img->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
  size_t need;
  if (img->format == GPUNET_FORMAT_NV12 || img->format == GPUNET_FORMAT_I420) {
    int sy = n_strides > 0 ? strides[0] : w;
    int su = n_strides > 1 ? strides[1] : (img->format == GPUNET_FORMAT_NV12 ? 2 * cw : cw);
    int sv = n_strides > 2 ? strides[2] : su;
    img->strides[0] = sy;
    img->strides[1] = su;
    img->strides[2] = sv;
    img->planes[0] = data;
    img->planes[1] = data + (size_t) sy * h;
    img->planes[2] = img->format == GPUNET_FORMAT_I420 ? img->planes[1] + (size_t) su * ch : NULL;
    need = (size_t) sy * h + (size_t) su * ch + (img->format == GPUNET_FORMAT_I420 ? (size_t) sv * ch : 0);
  } else {
    img->strides[0] = n_strides > 0 ? strides[0] : w * bpp;
    img->planes[0] = data;
    need = (size_t) img->strides[0] * h;
  }
  if (size < need) {
    fprintf (stderr, "gpunet-run: the frame file has %zu bytes, a %dx%d frame with these strides "
        "needs %zu\n", size, w, h, need);
    return -1;
  }
  return 0;
}

typedef struct {
  const char *model, *checkpoint, *labels;
  const char **images;
  int n_images, top_k, threads;
  gpunet_backend_kind backend;
  gpunet_precision precision;
  gpunet_preprocess_params pre;
  const char *scales;
} gpunet_run_images_options;


/* --image: decodes each photo to RGB, classifies it with the engine's preprocess
 * (as the element does) and prints the top-k with labels. Returns the exit code:
 * 0, 1 when a photo or the model failed, 2 when this build has no GStreamer. */
static int
run_images (const gpunet_run_images_options *o, int *argc, char ***argv)
{
#ifndef HAVE_GST
  (void) o;
  (void) argc;
  (void) argv;
  fprintf (stderr, "gpunet-run: --image needs GStreamer, which this build was configured "
      "without\n");
  return 2;
#else
  char *err = NULL, **labels = NULL;
  int n_labels = 0, rc = 0;
  gpunet_model *model = NULL;
  gpunet_session *session = NULL;
  gpunet_session_params params;
  gpunet_status st;

  gpunet_run_image_init (argc, argv);
  st = gpunet_model_load (o->model, o->checkpoint, &model, &err);
  if (st == GPUNET_OK) {
    gpunet_session_params_init (&params);
    params.backend = o->backend;
    params.precision = o->precision;
    params.int8_scales = o->scales;
    params.max_batch = 1;
    params.n_threads = o->threads;
    st = gpunet_session_new (model, &params, &session, &err);
  }
  if (st != GPUNET_OK) {
    fprintf (stderr, "gpunet-run: %s\n", err ? err : gpunet_status_string (st));
    rc = 1;
    goto out;
  }
  const int classes = gpunet_model_num_classes (model);
  /* the engine's reader: a regular file within GPUNET_LABELS_MAX_BYTES, one label per
   * class (a FIFO or a 3 GiB file is refused before it is read) */
  if (o->labels) {
    st = gpunet_labels_load (o->labels, classes, &labels, &err);
    if (st != GPUNET_OK) {
      fprintf (stderr, "gpunet-run: %s\n", err ? err : gpunet_status_string (st));
      rc = 1;
      goto out;
    }
    n_labels = classes;
  }
  const int k = o->top_k < classes ? o->top_k : classes;
  gpunet_class_score *top = malloc (sizeof *top * (size_t) k);
  for (int i = 0; top && i < o->n_images; i++) {
    uint8_t *rgb = NULL;
    gpunet_image img = { 0 };
    free (err);
    err = NULL;
    if (gpunet_run_decode_image (o->images[i], &rgb, &img.width, &img.height, &img.strides[0],
            &err) != 0) {
      fprintf (stderr, "gpunet-run: %s\n", err);
      rc = 1;
      continue;
    }
    char *damage = NULL;
    if (gpunet_run_image_damaged (o->images[i], &damage)) {
      fprintf (stderr, "gpunet-run: warning: '%s': %s; its result below is unreliable\n",
          o->images[i], damage);
      free (damage);
      rc = 1;
    }
    img.format = GPUNET_FORMAT_RGB;
    img.planes[0] = rgb;
    st = gpunet_session_classify (session, &img, 1, &o->pre, k, top, &err);
    if (st != GPUNET_OK) {
      fprintf (stderr, "gpunet-run: '%s': %s\n", o->images[i],
          err ? err : gpunet_status_string (st));
      rc = 1;
    } else {
      printf ("%s (%dx%d):\n", o->images[i], img.width, img.height);
      for (int j = 0; j < k; j++) {
        const char *name = labels && top[j].id < n_labels ? labels[top[j].id]
            : classes == 1000 ? gpunet_imagenet_label (top[j].id) : NULL;
        char fallback[32];
        if (!name) {
          snprintf (fallback, sizeof fallback, "class-%d", top[j].id);
          name = fallback;
        }
        printf ("  %d. %-30s %4d  %.4f\n", j + 1, name, top[j].id, top[j].score);
      }
    }
    free (rgb);
  }
  if (!top)
    rc = 1;
  free (top);
out:
  free (err);
  gpunet_session_free (session);
  gpunet_model_unref (model);
  gpunet_labels_free (labels);
  return rc;
#endif
}

int
main (int argc, char **argv)
{
  const char *model_name = NULL, *ckpt = NULL, *input = NULL, *output = NULL, *frame = NULL;
  const char *format = NULL, *dump = NULL, *labels_path = NULL, *scales = NULL;
  const char **images = calloc ((size_t) argc, sizeof *images);
  int n_images = 0;
  if (!images)
    return 1;
  int batch = 1, top_k = 5, threads = 0, width = 0, height = 0, n_strides = 0, strides[3] = { 0 };
  int full_range = 0;
  gpunet_backend_kind backend = GPUNET_BACKEND_AUTO;
  gpunet_precision precision = GPUNET_PRECISION_AUTO;
  gpunet_preprocess_params pre = { GPUNET_RESIZE_CENTER_CROP, 0.0f };
  gpunet_color_matrix matrix = GPUNET_MATRIX_BT601;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp (a, "--help") || !strcmp (a, "-h")) {
      usage (stdout);
      return 0;
    }
    if (!strcmp (a, "--full-range")) {
      full_range = 1;
      continue;
    }
    if (!strcmp (a, "--image")) {
      /* --image A [B C ...]: every following argument up to the next option */
      if (i + 1 >= argc || argv[i + 1][0] == '-') {
        fprintf (stderr, "gpunet-run: --image needs a file (see --help)\n");
        return 2;
      }
      while (i + 1 < argc && argv[i + 1][0] != '-')
        images[n_images++] = argv[++i];
      continue;
    }
    if (i + 1 >= argc) {
      fprintf (stderr, "gpunet-run: %s needs a value (see --help)\n", a);
      return 2;
    }
    const char *v = argv[++i];
    if (!strcmp (a, "--model")) model_name = v;
    else if (!strcmp (a, "--checkpoint")) ckpt = v;
    else if (!strcmp (a, "--input")) input = v;
    else if (!strcmp (a, "--output")) output = v;
    else if (!strcmp (a, "--frame")) frame = v;
    else if (!strcmp (a, "--format")) format = v;
    else if (!strcmp (a, "--dump-input")) dump = v;
    else if (!strcmp (a, "--labels")) labels_path = v;
    else if (!strcmp (a, "--batch")) { if (parse_int (a, v, 1, 4096, &batch)) return 2; }
    else if (!strcmp (a, "--top-k")) { if (parse_int (a, v, 1, 100000, &top_k)) return 2; }
    else if (!strcmp (a, "--threads")) { if (parse_int (a, v, 0, 1024, &threads)) return 2; }
    else if (!strcmp (a, "--width")) { if (parse_int (a, v, 1, 65536, &width)) return 2; }
    else if (!strcmp (a, "--height")) { if (parse_int (a, v, 1, 65536, &height)) return 2; }
    else if (!strcmp (a, "--stride")) {
      char *copy = strdup (v), *save = NULL;
      for (char *tok = strtok_r (copy, ",", &save); tok; tok = strtok_r (NULL, ",", &save)) {
        if (n_strides == 3 || parse_int (a, tok, 1, 1 << 20, &strides[n_strides++])) {
          free (copy);
          return 2;
        }
      }
      free (copy);
    } else if (!strcmp (a, "--resize-mode")) {
      if (!strcmp (v, "center-crop")) pre.resize_mode = GPUNET_RESIZE_CENTER_CROP;
      else if (!strcmp (v, "stretch")) pre.resize_mode = GPUNET_RESIZE_STRETCH;
      else if (!strcmp (v, "letterbox")) pre.resize_mode = GPUNET_RESIZE_LETTERBOX;
      else {
        fprintf (stderr, "gpunet-run: --resize-mode is center-crop, stretch or letterbox, not '%s'\n", v);
        return 2;
      }
    } else if (!strcmp (a, "--crop-pct")) {
      char *end;
      pre.crop_pct = strtof (v, &end);
      if (*end || !(pre.crop_pct > 0.0f && pre.crop_pct <= 1.0f)) {
        fprintf (stderr, "gpunet-run: --crop-pct needs a number in (0, 1], got '%s'\n", v);
        return 2;
      }
    } else if (!strcmp (a, "--matrix")) {
      if (!strcasecmp (v, "bt601")) matrix = GPUNET_MATRIX_BT601;
      else if (!strcasecmp (v, "bt709")) matrix = GPUNET_MATRIX_BT709;
      else {
        fprintf (stderr, "gpunet-run: --matrix is bt601 or bt709, not '%s'\n", v);
        return 2;
      }
    } else if (!strcmp (a, "--precision")) {
      if (!gpunet_tool_precision_parse (v, &precision)) {
        fprintf (stderr, "gpunet-run: --precision is auto, fp32, fp16, bf16 or int8, not "
            "'%s'\n", v);
        return 2;
      }
    } else if (!strcmp (a, "--scales")) {
      scales = v;
    } else if (!strcmp (a, "--backend")) {
      char *why = NULL;
      if (gpunet_backend_kind_from_name (v, &backend, &why) != GPUNET_OK) {
        fprintf (stderr, "gpunet-run: --backend: %s\n", why);
        free (why);
        return 2;
      }
    } else {
      fprintf (stderr, "gpunet-run: unknown option '%s' (see --help)\n", a);
      return 2;
    }
  }
  if (!model_name || !ckpt || (!!input + !!frame + (n_images > 0)) != 1) {
    fprintf (stderr, "gpunet-run: needs --model, --checkpoint and one of --image, --input or "
        "--frame\n");
    usage (stderr);
    return 2;
  }
  const char *refusal = gpunet_tool_scales_refusal (precision, scales);
  if (refusal) {
    fprintf (stderr, "gpunet-run: %s\n", refusal);
    return 2;
  }
  if (n_images > 0) {
    gpunet_run_images_options o = { model_name, ckpt, labels_path, images, n_images, top_k,
      threads, backend, precision, pre, scales };
    int rc = run_images (&o, &argc, &argv);
    free (images);
    return rc;
  }
  free (images);

  char *err = NULL;
  gpunet_model *model = NULL;
  gpunet_status st = gpunet_model_load (model_name, ckpt, &model, &err);
  if (st != GPUNET_OK) {
    fprintf (stderr, "gpunet-run: %s\n", err ? err : gpunet_status_string (st));
    free (err);
    return 1;
  }
  const int R = gpunet_model_resolution (model), classes = gpunet_model_num_classes (model);
  const size_t per_image = (size_t) 3 * R * R;
  float *in = NULL;
  int rc = 1;

  if (input) {
    size_t size = 0;
    in = read_all (input, &size);
    if (!in)
      goto out;
    if (size != per_image * sizeof (float) * (size_t) batch) {
      fprintf (stderr, "gpunet-run: '%s' has %zu bytes; %d image%s of 3x%dx%d float32 need %zu "
          "(check --batch and the model's resolution)\n", input, size, batch, batch == 1 ? "" : "s",
          R, R, per_image * sizeof (float) * (size_t) batch);
      goto out;
    }
  } else {
    int bpp = 0;
    gpunet_image img = { 0 };
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++)
      if (format && !strcasecmp (format, formats[f].name)) {
        img.format = formats[f].fmt;
        bpp = formats[f].bpp;
      }
    if (!bpp || !width || !height) {
      fprintf (stderr, "gpunet-run: --frame needs --format (NV12, I420, RGB, BGR, RGBA, BGRA, RGBx, "
          "BGRx), --width and --height\n");
      goto out;
    }
    img.width = width;
    img.height = height;
    img.matrix = matrix;
    img.full_range = full_range;
    size_t size = 0;
    unsigned char *data = read_all (frame, &size);
    if (!data)
      goto out;
    batch = 1;
    in = malloc (per_image * sizeof (float));
    if (!in || frame_layout (&img, bpp, strides, n_strides, data, size) != 0) {
      free (data);
      goto out;
    }
    st = gpunet_preprocess_image (model, &img, &pre, in, &err);
    free (data);
    if (st != GPUNET_OK) {
      fprintf (stderr, "gpunet-run: %s\n", err ? err : gpunet_status_string (st));
      goto out;
    }
    if (dump && write_all (dump, in, per_image * sizeof (float)) != 0)
      goto out;
  }

  gpunet_session_params params;
  gpunet_session_params_init (&params);
  params.backend = backend;
  params.precision = precision;
  params.int8_scales = scales;
  params.max_batch = batch;
  params.n_threads = threads;
  gpunet_session *session = NULL;
  st = gpunet_session_new (model, &params, &session, &err);
  if (st != GPUNET_OK) {
    fprintf (stderr, "gpunet-run: %s\n", err ? err : gpunet_status_string (st));
    goto out;
  }
  float *logits = malloc (sizeof (float) * (size_t) batch * classes);
  gpunet_class_score *top = malloc (sizeof *top * (size_t) (top_k < classes ? top_k : classes));
  if (!logits || !top) {
    fprintf (stderr, "gpunet-run: out of memory\n");
  } else if ((st = gpunet_session_forward (session, in, batch, logits, &err)) != GPUNET_OK) {
    fprintf (stderr, "gpunet-run: %s\n", err ? err : gpunet_status_string (st));
  } else if (!output || write_all (output, logits, sizeof (float) * (size_t) batch * classes) == 0) {
    const int k = top_k < classes ? top_k : classes;
    for (int b = 0; b < batch; b++) {
      gpunet_topk_softmax (logits + (size_t) b * classes, classes, k, top);
      printf ("image %d:", b);
      for (int j = 0; j < k; j++)
        printf (" %d:%.6f", top[j].id, top[j].score);
      printf ("\n");
    }
    rc = 0;
  }
  free (logits);
  free (top);
  gpunet_session_free (session);
out:
  free (in);
  free (err);
  gpunet_model_unref (model);
  return rc;
}
