/* gpunet-run-image.h: decoding a photo (JPEG, PNG, anything GStreamer's decodebin
 * reads) into packed 8-bit RGB for gpunet-run --image. Built only with GStreamer. */
#ifndef GPUNET_RUN_IMAGE_H
#define GPUNET_RUN_IMAGE_H

#include <stdint.h>

#include <glib.h>

/* Initialises GStreamer once; call before gpunet_run_decode_image(). */
void gpunet_run_image_init (int *argc, char ***argv);

/* Decodes the first picture of `path` to RGB: *rgb (free()) holds `*height` rows of
 * `*stride` bytes. Returns 0, or -1 with *error_text (free()) saying why. */
int gpunet_run_decode_image (const char *path, uint8_t **rgb, int *width, int *height,
    int *stride, char **error_text);

/* 1 with *why (free()) when `path` is a JPEG or PNG whose end is missing (decoders fill
 * in the rest of a truncated picture without a word), else 0. */
int gpunet_run_image_damaged (const char *path, char **why);

/* The image files directly in `folder` (by extension: .jpg, .jpeg, .png, .bmp, .webp,
 * .tif, .tiff), as paths sorted by name (g_ptr_array_unref), or NULL with *error when
 * the folder cannot be read. */
GPtrArray *gpunet_run_image_list (const char *folder, GError **error);

#endif
