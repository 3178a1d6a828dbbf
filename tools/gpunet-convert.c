/* gpunet-convert: writes GPUNet weights as one clean safetensors file: either the
 * tensors a checkpoint holds (after the state_dict_ema / state_dict / bare choice), or
 * seeded random weights for an architecture (benchmarks and tagging without NVIDIA's
 * downloads).  The output loads with model=/--model of the same architecture.  With
 * --onnx, writes a model's graph (BatchNorm folded) as an ONNX model instead
 * (gpunet-onnx.c). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpunet.h"
#include "gpunet-atomic.h"
#include "gpunet-internal.h"
#ifdef GPUNET_HAVE_ONNX
#include "gpunet-onnx.h"
#endif
#ifdef HAVE_GST
#include "gpunet-calibrate.h"
#include "gpunet-run-image.h"
#endif

static void
usage (FILE *f)
{
  fprintf (f,
      "usage: gpunet-convert --checkpoint FILE --output OUT.safetensors\n"
      "       gpunet-convert --random ARCH [--seed N] --output OUT.safetensors\n"
      "       gpunet-convert --onnx OUT.onnx --model ARCH [--checkpoint FILE | --seed N]\n"
      "\n"
      "  --checkpoint  a PyTorch checkpoint (.pth, .pth.tar) or safetensors file\n"
      "  --random      a built-in model name or architecture JSON: seeded random weights\n"
      "                of realistic scale, named as NVIDIA's PyTorch modules name them\n"
      "  --onnx        writes the model (architecture --model, weights --checkpoint or, without\n"
      "                it, seeded random ones) as ONNX, opset 13: input 'input' (batch x 3 x R\n"
      "                x R, normalised float32), output 'logits' (batch x classes), BatchNorm\n"
      "                folded into the convolutions\n"
      "  --model       a built-in model name or architecture JSON (with --onnx, --calibrate)\n"
      "\n"
      "       gpunet-convert --calibrate DIR --model ARCH [--checkpoint FILE | --seed N]\n"
      "                      --output OUT.scales [--method max|percentile]\n"
      "                      [--percentile P] [--limit N]\n"
      "  --calibrate   runs the model in exact f32 over the photos of DIR (preprocessed as\n"
      "                the element does) and writes the int8 scales file precision=int8\n"
      "                needs (the element's int8-scales, the tools' --scales), bound to this\n"
      "                architecture and checkpoint.  --method: each layer's clip is the\n"
      "                largest |x| seen (max, the default) or the mean of each photo's\n"
      "                P-th percentile of |x| (percentile, P = 99.99 unless given)\n");
}

/* A weight source that asks the random source for each tensor and keeps a copy. */
typedef struct {
  gpunet_weight_source base;
  gpunet_random_source_t random;
  gpunet_tensor *tensors;
  size_t n, cap;
} recording_source;

static gpunet_status
record_get (gpunet_weight_source *base, const char *name, gpunet_param_role role, int ndim,
    const int64_t *shape, float *dst, char **error_text)
{
  recording_source *r = (recording_source *) base;
  gpunet_status st = r->random.base.get (&r->random.base, name, role, ndim, shape, dst, error_text);
  if (st != GPUNET_OK)
    return st;
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 256;
    gpunet_tensor *t = realloc (r->tensors, cap * sizeof *t);
    if (!t)
      return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
    r->tensors = t;
    r->cap = cap;
  }
  gpunet_tensor *t = &r->tensors[r->n];
  memset (t, 0, sizeof *t);
  t->ndim = ndim;
  t->numel = 1;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = shape[i];
    t->numel *= shape[i];
  }
  t->dtype = GPUNET_DTYPE_F32;
  t->nbytes = (size_t) t->numel * sizeof (float);
  void *copy = malloc (t->nbytes ? t->nbytes : 1);
  char *n = strdup (name);
  if (!copy || !n) {
    free (copy);
    free (n);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  }
  memcpy (copy, dst, t->nbytes);
  t->data = copy;
  t->name = n;
  r->n++;
  return GPUNET_OK;
}

static int
write_random (const char *arch_name, uint64_t seed, const char *tmp, const char *out)
{
  char *err = NULL;
  gpunet_arch *arch = NULL;
  gpunet_status st = gpunet_arch_load (arch_name, &arch, &err);
  recording_source rec;
  memset (&rec, 0, sizeof rec);
  gpunet_random_source_init (&rec.random, seed);
  rec.base.get = record_get;
  gpunet_built_graph bg;
  if (st == GPUNET_OK && (st = gpunet_graph_build (arch, &rec.base, &bg, &err)) == GPUNET_OK) {
    gpunet_graph_clear (&bg);
    st = gpunet_safetensors_write (tmp, rec.tensors, rec.n, &err);
  }
  if (st == GPUNET_OK)
    printf ("%s: %zu tensors of random weights for '%s' (seed %llu)\n", out, rec.n, arch->name,
        (unsigned long long) seed);
  else
    fprintf (stderr, "gpunet-convert: %s\n", err ? err : gpunet_status_string (st));
  for (size_t i = 0; i < rec.n; i++) {
    free ((void *) rec.tensors[i].name);
    free ((void *) rec.tensors[i].data);
  }
  free (rec.tensors);
  gpunet_arch_free (arch);
  free (err);
  return st == GPUNET_OK ? 0 : 1;
}

static int
write_checkpoint (const char *path, const char *tmp, const char *out)
{
  char *err = NULL;
  gpunet_checkpoint *c = NULL;
  gpunet_status st = gpunet_checkpoint_open (path, &c, &err);
  if (st == GPUNET_OK) {
    size_t n = gpunet_checkpoint_n_tensors (c);
    gpunet_tensor *t = malloc ((n ? n : 1) * sizeof *t);
    if (!t)
      st = gpunet_fail (&err, GPUNET_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; t && i < n; i++)
      t[i] = *gpunet_checkpoint_tensor (c, i);
    if (t)
      st = gpunet_safetensors_write (tmp, t, n, &err);
    if (st == GPUNET_OK)
      printf ("%s: %zu tensors from '%s' (%s)\n", out, n, path, gpunet_checkpoint_source (c));
    free (t);
  }
  if (st != GPUNET_OK)
    fprintf (stderr, "gpunet-convert: %s\n", err ? err : gpunet_status_string (st));
  gpunet_checkpoint_free (c);
  free (err);
  return st == GPUNET_OK ? 0 : 1;
}

/* --onnx: the model (checkpoint, or seeded random weights) as ONNX at `out`. */
static int
write_onnx (const char *arch, const char *ckpt, uint64_t seed, const char *out)
{
#ifdef GPUNET_HAVE_ONNX
  char *err = NULL;
  gpunet_model *m = NULL;
  gpunet_status st = ckpt ? gpunet_model_load (arch, ckpt, &m, &err)
      : gpunet_model_new_random (arch, seed, &m, &err);
  unsigned char *buf = NULL;
  size_t len = 0;
  if (st == GPUNET_OK)
    st = gpunet_onnx_export (m, &buf, &len, &err);
  if (st != GPUNET_OK) {
    fprintf (stderr, "gpunet-convert: %s\n", err ? err : gpunet_status_string (st));
  } else if (gpunet_atomic_write_file (out, buf, len) != 0) {
    fprintf (stderr, "gpunet-convert: cannot write '%s': %s\n", out, strerror (errno));
    st = GPUNET_ERR_IO;
  } else {
    printf ("%s: ONNX model of '%s' (%s), opset 13, %zu bytes\n", out, gpunet_model_name (m),
        ckpt ? ckpt : "seeded random weights", len);
  }
  free (buf);
  free (err);
  if (m)
    gpunet_model_unref (m);
  return st == GPUNET_OK ? 0 : 1;
#else
  (void) arch;
  (void) ckpt;
  (void) seed;
  (void) out;
  fprintf (stderr, "gpunet-convert: this build has no ONNX export (it was built without "
      "protobuf-c): install libprotobuf-c-dev and protobuf-c-compiler and rebuild\n");
  return 1;
#endif
}

int
main (int argc, char **argv)
{
  const char *ckpt = NULL, *random_arch = NULL, *out = NULL, *onnx = NULL, *model = NULL;
  const char *calib_dir = NULL, *method_s = NULL;
  double percentile = 99.99;
  long limit = 0;
  int seed_given = 0;
  unsigned long long seed = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp (argv[i], "--help") || !strcmp (argv[i], "-h")) {
      usage (stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf (stderr, "gpunet-convert: %s needs a value (see --help)\n", argv[i]);
      return 2;
    }
    const char *v = argv[++i];
    if (!strcmp (argv[i - 1], "--checkpoint")) ckpt = v;
    else if (!strcmp (argv[i - 1], "--random")) random_arch = v;
    else if (!strcmp (argv[i - 1], "--output")) out = v;
    else if (!strcmp (argv[i - 1], "--onnx")) onnx = v;
    else if (!strcmp (argv[i - 1], "--model")) model = v;
    else if (!strcmp (argv[i - 1], "--calibrate")) calib_dir = v;
    else if (!strcmp (argv[i - 1], "--method")) method_s = v;
    else if (!strcmp (argv[i - 1], "--percentile") || !strcmp (argv[i - 1], "--limit")) {
      char *end;
      const double x = strtod (v, &end);
      if (*end || end == v || !(x > 0)) {
        fprintf (stderr, "gpunet-convert: %s needs a positive number, got '%s'\n",
            argv[i - 1], v);
        return 2;
      }
      if (argv[i - 1][2] == 'p')
        percentile = x;
      else
        limit = (long) x;
    }
    else if (!strcmp (argv[i - 1], "--seed")) {
      char *end;
      errno = 0;
      seed = strtoull (v, &end, 10);
      seed_given = 1;
      /* strtoull takes "-1" as 2^64 - 1 and saturates past it: digits only, in range */
      if (*end || end == v || !isdigit ((unsigned char) v[0]) || errno == ERANGE) {
        fprintf (stderr, "gpunet-convert: --seed needs a whole number from 0 to "
            "18446744073709551615, got '%s'\n", v);
        return 2;
      }
    } else {
      fprintf (stderr, "gpunet-convert: unknown option '%s' (see --help)\n", argv[i - 1]);
      return 2;
    }
  }
  if (calib_dir) {
    if (!model || !out || onnx || random_arch || (ckpt && seed_given)) {
      fprintf (stderr, "gpunet-convert: --calibrate DIR needs --model ARCH and --output "
          "OUT.scales, and takes the weights from --checkpoint FILE or, without it, seeded "
          "random ones (--seed N)\n");
      return 2;
    }
    if (method_s && strcmp (method_s, "max") && strcmp (method_s, "percentile")) {
      fprintf (stderr, "gpunet-convert: --method is max or percentile, not '%s'\n",
          method_s);
      return 2;
    }
#ifdef HAVE_GST
    gpunet_run_image_init (&argc, &argv);
    return gpunet_convert_calibrate (model, ckpt, seed, calib_dir, out,
        method_s && !strcmp (method_s, "percentile") ? GPUNET_CALIB_PERCENTILE
        : GPUNET_CALIB_MAX, (float) percentile, (int) limit);
#else
    fprintf (stderr, "gpunet-convert: --calibrate decodes photos with GStreamer, and this "
        "build has none: install the GStreamer development packages and rebuild\n");
    return 1;
#endif
  }
  if (method_s || limit) {
    fprintf (stderr, "gpunet-convert: --method, --percentile and --limit belong to "
        "--calibrate\n");
    return 2;
  }
  if (onnx) {
    if (!model || out || random_arch || (ckpt && seed_given)) {
      fprintf (stderr, "gpunet-convert: --onnx OUT needs --model ARCH and takes the weights "
          "from --checkpoint FILE or, without it, seeded random ones (--seed N); --output "
          "and --random belong to the safetensors conversion\n");
      usage (stderr);
      return 2;
    }
    return write_onnx (model, ckpt, seed, onnx);
  }
  if (model) {
    fprintf (stderr, "gpunet-convert: --model is for --onnx; the safetensors conversion "
        "takes --checkpoint FILE or --random ARCH\n");
    return 2;
  }
  if (!out || !ckpt == !random_arch) {
    fprintf (stderr, "gpunet-convert: needs --output and one of --checkpoint or --random\n");
    usage (stderr);
    return 2;
  }
  /* written next to the output and renamed at the end: an output path equal to the
   * checkpoint (which stays mmapped while it is read) never truncates it */
  if (gpunet_atomic_is_special (out))    /* /dev/null and the like: in place */
    return random_arch ? write_random (random_arch, seed, out, out)
        : write_checkpoint (ckpt, out, out);
  char *tmp = gpunet_atomic_temp (out, NULL);
  if (!tmp) {
    fprintf (stderr, "gpunet-convert: cannot create a file next to '%s': %s\n", out,
        strerror (errno));
    return 1;
  }
  int rc = random_arch ? write_random (random_arch, seed, tmp, out)
      : write_checkpoint (ckpt, tmp, out);
  if (rc != 0) {
    gpunet_atomic_abort (tmp);
  } else if (gpunet_atomic_commit (tmp, out) != 0) {
    fprintf (stderr, "gpunet-convert: cannot rename the output to '%s': %s\n", out,
        strerror (errno));
    rc = 1;
  }
  return rc;
}
