/* preprocess.cu: the fused preprocess on the device: one thread per output pixel reads
 * an NV12/I420/RGB-family frame in device memory (per-plane pitches) and writes the
 * normalised NCHW (or, for the NHWC network, NHWC) network input, float32 or fp16 (rounded once from the float value);
 * the maths is gpunet_cuda_preprocess_pixel (cuda_preprocess.h), the taps come from the
 * engine's plans, uploaded once per geometry into a small cache (cuda_pre_cache.h).  One
 * launch per batch (grid z = image; each image's descriptor points at its own frame and
 * tables, so one batch mixes sizes); the descriptors are read from device memory so a
 * captured CUDA graph replays on new frames of any geometries (mixed geometries in one
 * batch: not run on a GPU). */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "cuda_preprocess.h"
#include "cuda_storage.h"

template <typename T>
static __global__ void
preprocess_kernel (const gpunet_cuda_pre_desc *descs, T *out, int nhwc)
{
  __shared__ gpunet_cuda_pre_desc d;
  if (threadIdx.x == 0 && threadIdx.y == 0)
    d = descs[blockIdx.z];
  __syncthreads ();
  const int ox = blockIdx.x * blockDim.x + threadIdx.x;
  const int oy = blockIdx.y * blockDim.y + threadIdx.y;
  const int R = d.out_size;
  if (ox >= R || oy >= R)
    return;
  const size_t plane = (size_t) R * R, at = (size_t) oy * R + ox;
  T *o = out + (size_t) blockIdx.z * 3 * plane;
  float r, g, b;
  gpunet_cuda_preprocess_pixel (&d, ox, oy, &r, &g, &b);
  /* NCHW: three planes; NHWC: the pixel's three channels side by side */
  const long long c0 = nhwc ? (long long) (3 * at) : (long long) at;
  const long long cs = nhwc ? 1 : (long long) plane;
  gpunet_st (o, c0, r);
  gpunet_st (o, c0 + cs, g);
  gpunet_st (o, c0 + 2 * cs, b);
}

cudaError_t
gpunet_cuda_preprocess (const gpunet_cuda_pre_desc *descs, int n, int out_size,
    gpunet_cuda_dtype t, void *out, int nhwc, cudaStream_t stream)
{
  if (n < 1 || out_size < 1 || n > 65535)
    return cudaErrorInvalidValue;
  const dim3 block (32, 8);
  const dim3 grid ((unsigned) (out_size + 31) / 32, (unsigned) (out_size + 7) / 8, (unsigned) n);
  if (t == GPUNET_CUDA_F16)
    preprocess_kernel<gpunet_half><<<grid, block, 0, stream>>> (descs, (gpunet_half *) out, nhwc);
  else
    preprocess_kernel<float><<<grid, block, 0, stream>>> (descs, (float *) out, nhwc);
  return cudaGetLastError ();
}

/* Bytes of one axis's tables: first and count (R ints each), then R x ksize weights. */
static size_t
axis_bytes (const gpunet_resample_axis *a)
{
  return 2 * (size_t) a->n * sizeof (int) + (size_t) a->n * (size_t) a->ksize * sizeof (float);
}

/* Copies one axis's tables to dev (async on stream) and points `ax` at the copies;
 * returns the bytes used. */
static cudaError_t
upload_axis (const gpunet_resample_axis *a, char *dev, gpunet_cuda_axis *ax, size_t *used,
    cudaStream_t stream)
{
  const size_t ib = (size_t) a->n * sizeof (int), wb = (size_t) a->n * (size_t) a->ksize * sizeof (float);
  cudaError_t e = cudaMemcpyAsync (dev, a->first, ib, cudaMemcpyHostToDevice, stream);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync (dev + ib, a->count, ib, cudaMemcpyHostToDevice, stream);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync (dev + 2 * ib, a->weights, wb, cudaMemcpyHostToDevice, stream);
  ax->first = (const int *) dev;
  ax->count = (const int *) (dev + ib);
  ax->weights = (const float *) (dev + 2 * ib);
  ax->ksize = a->ksize;
  ax->lo = a->lo;
  ax->hi = a->hi;
  *used = (2 * ib + wb + 255) / 256 * 256;
  return e;
}

gpunet_status
gpunet_cuda_pre_tables_update (gpunet_cuda_pre_tables *t, const gpunet_preprocess_plan *p,
    cudaStream_t stream, char **error_text)
{
  if (t->valid && t->in_w == p->in_w && t->in_h == p->in_h && t->out_size == p->out_size
      && t->mode == p->mode && t->crop_pct == p->crop_pct)
    return GPUNET_OK;
  t->valid = 0;
  const size_t need = axis_bytes (&p->x) + axis_bytes (&p->y) + 512;
  if (need > t->bytes) {
    /* the old tables may still be read by queued kernels */
    GPUNET_CU_TRY (cudaStreamSynchronize (stream), error_text,
        "cudaStreamSynchronize (before replacing the preprocess tables)");
    if (t->dev)
      cudaFree (t->dev);
    t->dev = NULL;
    t->bytes = 0;
    GPUNET_CU_TRY (cudaMalloc (&t->dev, need), error_text,
        "cudaMalloc (preprocess tap tables, %zu bytes)", need);
    t->bytes = need;
  }
  size_t used = 0;
  GPUNET_CU_TRY (upload_axis (&p->x, (char *) t->dev, &t->x, &used, stream), error_text,
      "cudaMemcpyAsync (horizontal preprocess taps of a %dx%d frame)", p->in_w, p->in_h);
  GPUNET_CU_TRY (upload_axis (&p->y, (char *) t->dev + used, &t->y, &used, stream), error_text,
      "cudaMemcpyAsync (vertical preprocess taps of a %dx%d frame)", p->in_w, p->in_h);
  t->in_w = p->in_w;
  t->in_h = p->in_h;
  t->out_size = p->out_size;
  t->mode = p->mode;
  t->crop_pct = p->crop_pct;
  t->valid = 1;
  return GPUNET_OK;
}

void
gpunet_cuda_pre_tables_clear (gpunet_cuda_pre_tables *t)
{
  if (t->dev)
    cudaFree (t->dev);
  memset (t, 0, sizeof *t);
}

gpunet_status
gpunet_cuda_pre_cache_init (gpunet_cuda_pre_cache *c, int entries, char **error_text)
{
  memset (c, 0, sizeof *c);
  c->tables = (gpunet_cuda_pre_tables *) calloc ((size_t) entries, sizeof *c->tables);
  c->index.slots = (gpunet_pre_cache_slot *) calloc ((size_t) entries, sizeof *c->index.slots);
  if (!c->tables || !c->index.slots) {
    gpunet_cuda_pre_cache_clear (c);
    return gpunet_cuda_fail (error_text, GPUNET_ERR_NO_MEMORY,
        "out of memory for the preprocess table cache (%d entries)", entries);
  }
  c->index.n = entries;
  return GPUNET_OK;
}

void
gpunet_cuda_pre_cache_begin (gpunet_cuda_pre_cache *c)
{
  gpunet_pre_cache_begin (&c->index);
}

gpunet_status
gpunet_cuda_pre_cache_get (gpunet_cuda_pre_cache *c, const gpunet_preprocess_plan *p,
    cudaStream_t stream, const gpunet_cuda_pre_tables **out, char **error_text)
{
  int hit = 0;
  const int i = gpunet_pre_cache_pick (&c->index, p, &hit);
  if (i < 0)
    return gpunet_cuda_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "one call has more frame geometries than the %d the preprocess table cache holds "
        "(at a %dx%d frame)", c->index.n, p->in_w, p->in_h);
  if (!hit) {
    /* the entry's old tables are not read by this call (the pick guarantees it) and no
     * earlier call's kernels are queued (every call synchronises before returning); the
     * upload is ordered on the stream before this call's preprocess anyway */
    gpunet_status st = gpunet_cuda_pre_tables_update (&c->tables[i], p, stream, error_text);
    if (st != GPUNET_OK)
      return st;
    gpunet_pre_cache_fill (&c->index, i, p);
  }
  *out = &c->tables[i];
  return GPUNET_OK;
}

void
gpunet_cuda_pre_cache_clear (gpunet_cuda_pre_cache *c)
{
  if (c->tables)
    for (int i = 0; i < c->index.n; i++)
      gpunet_cuda_pre_tables_clear (&c->tables[i]);
  free (c->tables);
  free (c->index.slots);
  memset (c, 0, sizeof *c);
}
