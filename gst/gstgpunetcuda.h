/* gstgpunetcuda.h: the CUDA glue of gpunetclassify: video/x-raw(memory:CUDAMemory) caps,
 * the shared GstCudaContext (context query, set_context, ensure at start), pushing it
 * around engine calls and mapping CUDA frames for the engine.  Built with HAVE_GST_CUDA;
 * without it every function is a no-op and the element stays system-memory only. */
#ifndef __GST_GPUNET_CUDA_H__
#define __GST_GPUNET_CUDA_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpunet.h"

G_BEGIN_DECLS

typedef struct _GstGpunetCuda GstGpunetCuda;

/* The CUDA-memory formats the element takes (what nvh264dec, cudaupload and
 * cudaconvertscale produce). */
#define GST_GPUNET_CUDA_FORMATS "{ NV12, I420, RGBA, BGRA, RGBx, BGRx }"

/* Per-element state; free with gst_gpunet_cuda_free (finalize). */
GstGpunetCuda *gst_gpunet_cuda_new (void);
void gst_gpunet_cuda_free (GstGpunetCuda * cuda);

/* Pad template caps: `system_caps` preceded by the CUDAMemory caps when built with
 * GstCuda (preferred where both sides can do either).  Returns a new reference. */
GstCaps *gst_gpunet_cuda_template_caps (const gchar * system_caps);

/* GstElement::set_context: adopts a neighbour's GstCudaContext (NULL-safe no-op
 * without GstCuda).  The caller chains up. */
void gst_gpunet_cuda_set_context (GstGpunetCuda * cuda, GstElement * element,
    GstContext * context);

/* Answers a CUDA context query with our context; FALSE when not handled. */
gboolean gst_gpunet_cuda_handle_query (GstGpunetCuda * cuda, GstElement * element,
    GstQuery * query);

/* start(): finds or creates the GstCudaContext on `device_id` (-1: the
 * neighbours' context, else device 0; N: device N, with a warning when the
 * neighbours' context is on another device).  TRUE and the context's device in
 * *device when there is one; FALSE (logged, not an error) when CUDA cannot start
 * here.  The engine session is then created inside it.  On 1.24+ mapping waits on
 * the memory's stream (gst_cuda_memory_sync). */
gboolean gst_gpunet_cuda_open (GstGpunetCuda * cuda, GstElement * element,
    gint device_id, gint * device);

/* Records whether the session runs on the CUDA backend inside our context: only then
 * are CUDA caps offered and device frames handed to the engine. */
void gst_gpunet_cuda_set_device_path (GstGpunetCuda * cuda, gboolean enabled);

/* The backend property allows CUDA (auto or cuda): before start, caps queries offer
 * CUDA caps only then (and only where the CUDA driver loads). */
void gst_gpunet_cuda_set_may_use (GstGpunetCuda * cuda, gboolean may_use);

/* stop(): drops the context (after the session was freed with it pushed). */
void gst_gpunet_cuda_close (GstGpunetCuda * cuda);

/* Makes our context current on this thread; returns TRUE when it pushed one, to be
 * passed to gst_gpunet_cuda_pop. */
gboolean gst_gpunet_cuda_push (GstGpunetCuda * cuda);
void gst_gpunet_cuda_pop (GstGpunetCuda * cuda, gboolean pushed);

/* A new reference to our GstCudaContext (as a GstObject), or NULL without one:
 * kept by a shared engine whose worker thread pushes it (gst_gpunet_cuda_enter). */
GstObject *gst_gpunet_cuda_context_ref (GstGpunetCuda * cuda);

/* gpunet_engine hooks: make `context` (a GstCudaContext or NULL) current on the
 * calling thread, and pop it again. */
void gst_gpunet_cuda_enter (void *context);
void gst_gpunet_cuda_leave (void *context);

/* The CUcontext of `context` (a GstCudaContext or NULL), for
 * gpunet_session_params.cuda_context: the CUDA backend makes it current itself at
 * every call, whatever the calling thread has pushed. */
gpointer gst_gpunet_cuda_context_handle (GstObject * context);

/* Caps queries: `caps` without its CUDAMemory structures unless the device path is on
 * (started) or may be (not started; see gst_gpunet_cuda_set_may_use).  Returns a new
 * reference. */
GstCaps *gst_gpunet_cuda_filter_caps (GstGpunetCuda * cuda, GstCaps * caps);

/* TRUE when the first structure of `caps` has the memory:CUDAMemory feature. */
gboolean gst_gpunet_cuda_caps_are_cuda (GstCaps * caps);

/* Maps `buf` read-only into `frame` and points img's planes and strides at it: device
 * pointers (img->memory = GPUNET_MEMORY_CUDA) for CUDA memory of our context when the
 * device path is on, else host memory (GstCudaMemory then downloads).  On GStreamer
 * 1.24+, where the producer may still be writing the frame on its CUDA stream, an event
 * is recorded there (img->cuda_ready, for the engine's stream to wait on) instead of a
 * host sync; *ready then holds it until gst_gpunet_cuda_ready_free, once the engine is
 * done with the frame (else NULL).  FALSE when the buffer cannot be mapped. */
gboolean gst_gpunet_cuda_map_frame (GstGpunetCuda * cuda, GstElement * element,
    GstBuffer * buf, const GstVideoInfo * info, GstVideoFrame * frame,
    gpunet_image * img, gpointer * ready);

/* Destroys what map_frame put in *ready (NULL is fine). */
void gst_gpunet_cuda_ready_free (gpointer ready);

G_END_DECLS

#endif /* __GST_GPUNET_CUDA_H__ */
