/* gpunet-calibrate.c: gpunet-convert --calibrate DIR: decodes the photos of a folder
 * (sorted by name, as gpunet-validate --against reads them), preprocesses each as the
 * element does, feeds them to the engine's calibration and writes the int8 scales file
 * next to the output and renames it there at the end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "gpunet-atomic.h"
#include "gpunet-calibrate.h"
#include "gpunet-run-image.h"

int
gpunet_convert_calibrate (const char *arch, const char *ckpt, uint64_t seed,
    const char *dir, const char *out, gpunet_calib_method method, float percentile,
    int limit)
{
  GError *gerr = NULL;
  GPtrArray *files = gpunet_run_image_list (dir, &gerr);
  if (!files) {
    fprintf (stderr, "gpunet-convert: cannot read the calibration folder '%s': %s\n", dir,
        gerr->message);
    g_error_free (gerr);
    return 1;
  }

  char *err = NULL;
  gpunet_model *m = NULL;
  gpunet_calibration *c = NULL;
  float *input = NULL;
  int rc = 1;
  gpunet_status st = ckpt ? gpunet_model_load (arch, ckpt, &m, &err)
      : gpunet_model_new_random (arch, seed, &m, &err);
  if (st == GPUNET_OK)
    st = gpunet_calibration_new (m, method, percentile, &c, &err);
  if (st != GPUNET_OK) {
    fprintf (stderr, "gpunet-convert: %s\n", err ? err : gpunet_status_string (st));
    goto out;
  }
  const int res = gpunet_model_resolution (m);
  input = malloc (sizeof (float) * 3 * (size_t) res * res);
  const gpunet_preprocess_params pre = { GPUNET_RESIZE_CENTER_CROP, 0.0f };
  const unsigned total = limit > 0 && (unsigned) limit < files->len ? (unsigned) limit
      : files->len;
  int skipped = 0;
  for (unsigned i = 0; input && i < total; i++) {
    const char *path = files->pdata[i];
    uint8_t *rgb = NULL;
    gpunet_image img = { 0 };
    char *why = NULL;
    if (gpunet_run_decode_image (path, &rgb, &img.width, &img.height, &img.strides[0],
            &why) != 0) {
      fprintf (stderr, "gpunet-convert: %s (skipped)\n", why);
      free (why);
      skipped++;
      continue;
    }
    img.format = GPUNET_FORMAT_RGB;
    img.planes[0] = rgb;
    st = gpunet_preprocess_image (m, &img, &pre, input, &err);
    free (rgb);
    if (st == GPUNET_OK)
      st = gpunet_calibration_add (c, input, &err);
    if (st != GPUNET_OK) {
      fprintf (stderr, "gpunet-convert: '%s': %s (skipped)\n", path, err ? err : "?");
      free (err);
      err = NULL;
      skipped++;
    }
  }
  if (!input) {
    fprintf (stderr, "gpunet-convert: out of memory\n");
    goto out;
  }
  if (gpunet_calibration_images (c) == 0) {
    fprintf (stderr, "gpunet-convert: the calibration folder '%s' holds no readable image "
        "(%u image file(s), %d unreadable); put photos like those the model will see "
        "(.jpg, .png, ...) directly in it\n", dir, files->len, skipped);
    goto out;
  }
  char *tmp = gpunet_atomic_is_special (out) ? NULL : gpunet_atomic_temp (out, NULL);
  if (!tmp && !gpunet_atomic_is_special (out)) {
    fprintf (stderr, "gpunet-convert: cannot create a file next to '%s': %s\n", out,
        strerror (errno));
    goto out;
  }
  st = gpunet_calibration_write (c, tmp ? tmp : out, &err);
  if (st != GPUNET_OK) {
    fprintf (stderr, "gpunet-convert: %s\n", err ? err : gpunet_status_string (st));
    if (tmp)
      gpunet_atomic_abort (tmp);
  } else if (tmp && gpunet_atomic_commit (tmp, out) != 0) {
    fprintf (stderr, "gpunet-convert: cannot rename the output to '%s': %s\n", out,
        strerror (errno));
  } else {
    printf ("%s: int8 scales of '%s' (%s) from %d image(s) of '%s' (%d skipped), method %s\n",
        out, gpunet_model_name (m), ckpt ? ckpt : "seeded random weights",
        gpunet_calibration_images (c), dir, skipped, method == GPUNET_CALIB_MAX ? "max"
        : "percentile");
    rc = 0;
  }
out:
  free (err);
  free (input);
  gpunet_calibration_free (c);
  if (m)
    gpunet_model_unref (m);
  g_ptr_array_unref (files);
  return rc;
}
