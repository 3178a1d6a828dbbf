/* cuda_upload.h: how a host frame is packed for its upload by the CUDA backend's
 * classify_host: the bytes the device preprocess reads of each plane (rows x row bytes,
 * per format), the plane offsets in the packed copy (tight rows, each plane starting on
 * a 256-byte boundary), the row-by-row copy that honours the source strides, and the
 * image that describes the packed copy at a given base address.  Plain C (host only, and
 * valid C++ for nvcc), so tests/test_cuda_math.c runs exactly this code on the CPU. */
#ifndef GPUNET_CUDA_UPLOAD_H
#define GPUNET_CUDA_UPLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpunet-types.h"

enum { GPUNET_UPLOAD_ALIGN = 256 };

/* One frame as classify_host stages it. */
typedef struct {
  int n_planes;
  int rows[3];            /* rows of each plane the preprocess reads */
  size_t row_bytes[3];    /* bytes of a row it reads (also the packed pitch) */
  size_t offset[3];       /* start of each plane in the packed frame */
  size_t bytes;           /* size of the packed frame, a multiple of GPUNET_UPLOAD_ALIGN */
} gpunet_frame_layout;

static inline size_t
gpunet_upload_round (size_t bytes)
{
  return (bytes + GPUNET_UPLOAD_ALIGN - 1) / GPUNET_UPLOAD_ALIGN * GPUNET_UPLOAD_ALIGN;
}

/* The layout of a frame of `format`, width x height (both >= 1): NV12 reads w bytes x h
 * rows of Y and 2 ceil(w/2) bytes x ceil(h/2) rows of interleaved UV; I420 w x h, then
 * ceil(w/2) x ceil(h/2) twice; RGB/BGR 3w x h; the 4-byte formats 4w x h.  These are the
 * minimum strides the engine accepts, so every byte counted is one the preprocess may
 * read.  Returns 0, or -1 for an unknown format (layout zeroed). */
static inline int
gpunet_frame_layout_init (gpunet_frame_layout *l, gpunet_pixel_format format, int width,
    int height)
{
  memset (l, 0, sizeof *l);
  if (width < 1 || height < 1)
    return -1;
  const size_t w = (size_t) width, cw = (size_t) (width + 1) / 2;
  const int ch = (height + 1) / 2;
  switch (format) {
    case GPUNET_FORMAT_NV12:
      l->n_planes = 2;
      l->rows[0] = height;
      l->row_bytes[0] = w;
      l->rows[1] = ch;
      l->row_bytes[1] = 2 * cw;
      break;
    case GPUNET_FORMAT_I420:
      l->n_planes = 3;
      l->rows[0] = height;
      l->row_bytes[0] = w;
      l->rows[1] = l->rows[2] = ch;
      l->row_bytes[1] = l->row_bytes[2] = cw;
      break;
    case GPUNET_FORMAT_RGB: case GPUNET_FORMAT_BGR:
      l->n_planes = 1;
      l->rows[0] = height;
      l->row_bytes[0] = 3 * w;
      break;
    case GPUNET_FORMAT_RGBA: case GPUNET_FORMAT_BGRA:
    case GPUNET_FORMAT_RGBX: case GPUNET_FORMAT_BGRX:
      l->n_planes = 1;
      l->rows[0] = height;
      l->row_bytes[0] = 4 * w;
      break;
    default:
      return -1;
  }
  size_t at = 0;
  for (int p = 0; p < l->n_planes; p++) {
    l->offset[p] = at;
    at += gpunet_upload_round (l->row_bytes[p] * (size_t) l->rows[p]);
  }
  l->bytes = at;
  return 0;
}

/* Copies the planes of host image `img` (validated by the engine: strides at least the
 * row bytes) into dst, laid out as `l` says.  A plane whose stride equals its row bytes
 * is one copy, others one copy per row (the padding past each row is not read). */
static inline void
gpunet_frame_pack (const gpunet_frame_layout *l, const gpunet_image *img, uint8_t *dst)
{
  for (int p = 0; p < l->n_planes; p++) {
    const uint8_t *src = img->planes[p];
    uint8_t *out = dst + l->offset[p];
    const size_t rb = l->row_bytes[p], stride = (size_t) img->strides[p];
    if (stride == rb) {
      memcpy (out, src, rb * (size_t) l->rows[p]);
      continue;
    }
    for (int r = 0; r < l->rows[p]; r++)
      memcpy (out + (size_t) r * rb, src + (size_t) r * stride, rb);
  }
}

/* `img` with its planes moved to the packed copy at `base` (tight strides) in `memory`. */
static inline gpunet_image
gpunet_frame_view (const gpunet_frame_layout *l, const gpunet_image *img, const uint8_t *base,
    gpunet_memory memory)
{
  gpunet_image v = *img;
  for (int p = 0; p < 3; p++) {
    v.planes[p] = p < l->n_planes ? base + l->offset[p] : NULL;
    v.strides[p] = p < l->n_planes ? (int) l->row_bytes[p] : 0;
  }
  v.memory = memory;
  return v;
}

/* ---- device frames: whether the session's kernels may read a plane ----------------- */

typedef enum {
  GPUNET_PLANE_READABLE,
  GPUNET_PLANE_HOST,            /* plain host memory marked as CUDA memory */
  GPUNET_PLANE_OTHER_DEVICE,    /* device memory of another GPU */
  GPUNET_PLANE_OTHER_CONTEXT    /* no address the session's context can use */
} gpunet_plane_access;

/* What cudaPointerGetAttributes, asked in the session's context, says of a plane:
 * `kind` its memory type (cudaMemoryType's values: 0 unregistered, 1 host, 2 device,
 * 3 managed), `device` its device, `device_pointer` the address through which kernels of
 * the current context may read it (NULL when there is none).  Device memory allocated in
 * another CUDA context of the same GPU (DeepStream's surfaces live in the primary context,
 * a GstCudaContext made by GStreamer is another one) has no such address: each context
 * has its own address space, and a kernel reading it would fault and end the context. */
static inline gpunet_plane_access
gpunet_plane_access_of (int kind, int device, int session_device, const void *device_pointer)
{
  if (kind == 0)
    return GPUNET_PLANE_HOST;
  if (kind == 2 && device != session_device)
    return GPUNET_PLANE_OTHER_DEVICE;
  return device_pointer ? GPUNET_PLANE_READABLE : GPUNET_PLANE_OTHER_CONTEXT;
}

#endif /* GPUNET_CUDA_UPLOAD_H */
