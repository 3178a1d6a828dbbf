/* gpunet-validate-against.c: gpunet-validate --against fp32: two sessions on one model,
 * the exact f32 one and one in the precision asked, fed the same preprocessed photos;
 * compares their logits (relative to the largest f32 logit of each image) and their
 * top-1 and top-5 (as sets of ids). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "gpunet-run-image.h"
#include "gpunet-validate-against.h"

/* The ids of the k largest logits, best first. */
static void
top_ids (const float *l, int n, int k, int *ids)
{
  for (int j = 0; j < k; j++) {
    int best = -1;
    for (int c = 0; c < n; c++) {
      int taken = 0;
      for (int t = 0; t < j && !taken; t++)
        taken = ids[t] == c;
      if (!taken && (best < 0 || l[c] > l[best]))
        best = c;
    }
    ids[j] = best;
  }
}

static const char *
precision_name (gpunet_precision p)
{
  switch (p) {
    case GPUNET_PRECISION_FP16: return "fp16";
    case GPUNET_PRECISION_BF16: return "bf16";
    case GPUNET_PRECISION_INT8: return "int8";
    case GPUNET_PRECISION_FP32: return "fp32";
    default: return "auto";
  }
}

int
gpunet_validate_against (gpunet_model *model, const gpunet_session_params *params,
    gpunet_precision precision, const char *folder, int limit, int quiet)
{
  GError *gerr = NULL;
  GPtrArray *files = gpunet_run_image_list (folder, &gerr);
  if (!files) {
    g_printerr ("gpunet-validate: cannot read the folder '%s': %s\n", folder, gerr->message);
    g_error_free (gerr);
    return 2;
  }
  if (files->len == 0) {
    g_printerr ("gpunet-validate: the folder '%s' holds no image files (.jpg, .jpeg, .png, "
        ".bmp, .webp, .tif); put the photos to compare on directly in it\n", folder);
    g_ptr_array_unref (files);
    return 1;
  }

  gpunet_session_params p32 = *params, plow = *params;
  p32.precision = GPUNET_PRECISION_FP32;
  p32.int8_scales = NULL;       /* the reference reads no scales */
  plow.precision = precision;
  gpunet_session *ref = NULL, *low = NULL;
  char *etext = NULL;
  gpunet_status st = gpunet_session_new (model, &p32, &ref, &etext);
  if (st == GPUNET_OK)
    st = gpunet_session_new (model, &plow, &low, &etext);
  if (st != GPUNET_OK) {
    g_printerr ("gpunet-validate: %s\n", etext ? etext : gpunet_status_string (st));
    free (etext);
    gpunet_session_free (ref);
    g_ptr_array_unref (files);
    return 2;
  }

  const int res = gpunet_model_resolution (model), nc = gpunet_model_num_classes (model);
  const int k = nc < 5 ? nc : 5;
  float *input = malloc (sizeof (float) * 3 * (size_t) res * res);
  float *la = malloc (sizeof (float) * (size_t) nc), *lb = malloc (sizeof (float) * (size_t) nc);
  gpunet_preprocess_params pre = { GPUNET_RESIZE_CENTER_CROP, 0.0f };
  long n = 0, agree1 = 0, agree5 = 0, skipped = 0;
  double sum_rel = 0.0, max_rel = 0.0;
  const unsigned total = limit > 0 && (unsigned) limit < files->len ? (unsigned) limit
      : files->len;
  int rc = 0;
  if (!input || !la || !lb) {
    g_printerr ("gpunet-validate: out of memory\n");
    rc = 2;
    goto out;
  }
  for (unsigned i = 0; i < total; i++) {
    const char *path = files->pdata[i];
    uint8_t *rgb = NULL;
    gpunet_image img = { 0 };
    char *why = NULL;
    if (gpunet_run_decode_image (path, &rgb, &img.width, &img.height, &img.strides[0],
            &why) != 0) {
      g_printerr ("gpunet-validate: %s (skipped)\n", why);
      free (why);
      skipped++;
      continue;
    }
    img.format = GPUNET_FORMAT_RGB;
    img.planes[0] = rgb;
    st = gpunet_preprocess_image (model, &img, &pre, input, &etext);
    free (rgb);
    if (st == GPUNET_OK)
      st = gpunet_session_forward (ref, input, 1, la, &etext);
    if (st == GPUNET_OK)
      st = gpunet_session_forward (low, input, 1, lb, &etext);
    if (st != GPUNET_OK) {
      g_printerr ("gpunet-validate: '%s': %s (skipped)\n", path, etext ? etext
          : gpunet_status_string (st));
      free (etext);
      etext = NULL;
      skipped++;
      continue;
    }
    double big = 0.0, img_sum = 0.0, img_max = 0.0;
    for (int c = 0; c < nc; c++)
      big = fmax (big, fabs (la[c]));
    if (big == 0.0)
      big = 1.0;
    for (int c = 0; c < nc; c++) {
      const double d = fabs ((double) lb[c] - la[c]) / big;
      img_sum += d;
      img_max = fmax (img_max, d);
    }
    int ia[5] = { 0 }, ib[5] = { 0 };
    top_ids (la, nc, k, ia);
    top_ids (lb, nc, k, ib);
    int same5 = 1;
    for (int a = 0; a < k && same5; a++) {
      int found = 0;
      for (int b = 0; b < k && !found; b++)
        found = ia[a] == ib[b];
      same5 = found;
    }
    agree1 += ia[0] == ib[0];
    agree5 += same5;
    sum_rel += img_sum / nc;
    max_rel = fmax (max_rel, img_max);
    n++;
    if (!quiet)
      printf ("%s: top1 %d/%d%s max_rel_diff=%.3g\n", path, ia[0], ib[0],
          same5 ? "" : " top5 differs", img_max);
  }
  if (n == 0) {
    g_printerr ("gpunet-validate: none of the %u image(s) in '%s' could be classified\n",
        total, folder);
    rc = 1;
    goto out;
  }
  printf ("against=fp32 precision=%s images=%ld skipped=%ld top1_agree=%ld/%ld (%.1f%%) "
      "top5_agree=%ld/%ld (%.1f%%) mean_rel_logit_diff=%.3g max_rel_logit_diff=%.3g\n",
      precision_name (precision), n, skipped, agree1, n, 100.0 * agree1 / n, agree5, n,
      100.0 * agree5 / n, sum_rel / n, max_rel);
out:
  free (input), free (la), free (lb);
  gpunet_session_free (low);
  gpunet_session_free (ref);
  g_ptr_array_unref (files);
  return rc;
}
