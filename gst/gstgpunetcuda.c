/* gstgpunetcuda.c: the CUDA glue of gpunetclassify (see gstgpunetcuda.h), on
 * gstreamer-cuda-1.0 (unstable API).  1.22 has no stream API: upstream finishes its work
 * before it pushes.  1.24+ hands over frames still being written on the producer's
 * stream: an event recorded there travels with the image (gpunet_image.cuda_ready) and
 * the engine's stream waits on it.  The engine syncs its own stream before returning.  Without
 * HAVE_GST_CUDA the functions keep the element on system memory. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstgpunetcuda.h"

#ifdef HAVE_GST_CUDA
#include <dlfcn.h>

#include <gst/cuda/gstcudacontext.h>
#include <gst/cuda/gstcudaloader.h>
#include <gst/cuda/gstcudamemory.h>
#include <gst/cuda/gstcudautils.h>
#endif

GST_DEBUG_CATEGORY_STATIC (gst_gpunet_cuda_debug);
#define GST_CAT_DEFAULT gst_gpunet_cuda_debug

struct _GstGpunetCuda
{
#ifdef HAVE_GST_CUDA
  GstCudaContext *context;      /* shared with neighbours; NULL when none */
#endif
  /* atomic: 1 the session runs on CUDA in our context, 0 it does not, -1 not started
   * (no session: caps queries then offer what a start may take) */
  gint device_path;
  gint may_use;                 /* atomic: the backend property allows CUDA */
  gboolean warned_foreign;      /* streaming thread */
  gint device_id;               /* device-id as started: -1 = the neighbours' */
};

GstGpunetCuda *
gst_gpunet_cuda_new (void)
{
  static gsize once = 0;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_gpunet_cuda_debug, "gpunetcuda", 0,
        "gpunetclassify CUDA memory and context handling");
    g_once_init_leave (&once, 1);
  }
  {
    GstGpunetCuda *cuda = g_new0 (GstGpunetCuda, 1);

    cuda->device_id = -1;
    cuda->device_path = -1;
    cuda->may_use = 1;
    return cuda;
  }
}

void
gst_gpunet_cuda_free (GstGpunetCuda * cuda)
{
  if (cuda == NULL)
    return;
  gst_gpunet_cuda_close (cuda);
  g_free (cuda);
}

GstCaps *
gst_gpunet_cuda_template_caps (const gchar * system_caps)
{
#ifdef HAVE_GST_CUDA
  GstCaps *caps = gst_caps_from_string (GST_VIDEO_CAPS_MAKE_WITH_FEATURES
      (GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY, GST_GPUNET_CUDA_FORMATS));

  gst_caps_append (caps, gst_caps_from_string (system_caps));
  return caps;
#else
  return gst_caps_from_string (system_caps);
#endif
}

void
gst_gpunet_cuda_set_context (GstGpunetCuda * cuda, GstElement * element,
    GstContext * context)
{
#ifdef HAVE_GST_CUDA
  /* a neighbour's context on another device than device-id is not taken */
  gst_cuda_handle_set_context (element, context, cuda->device_id,
      &cuda->context);
#else
  (void) cuda;
  (void) element;
  (void) context;
#endif
}

gboolean
gst_gpunet_cuda_handle_query (GstGpunetCuda * cuda, GstElement * element,
    GstQuery * query)
{
#ifdef HAVE_GST_CUDA
  if (GST_QUERY_TYPE (query) == GST_QUERY_CONTEXT)
    return gst_cuda_handle_context_query (element, query, cuda->context);
#else
  (void) cuda;
  (void) element;
  (void) query;
#endif
  return FALSE;
}

#ifdef HAVE_GST_CUDA
/* Asks the peers of `element`'s pads in `direction` for a CUDA context; TRUE when
 * one answered (the answer is in `query`). */
static gboolean
ask_peers (GstElement * element, GstQuery * query, GstPadDirection direction)
{
  GstIterator *it = direction == GST_PAD_SRC ?
      gst_element_iterate_src_pads (element) :
      gst_element_iterate_sink_pads (element);
  GValue item = G_VALUE_INIT;
  gboolean answered = FALSE, done = FALSE;

  while (!done && !answered) {
    switch (gst_iterator_next (it, &item)) {
      case GST_ITERATOR_OK:
        answered = gst_pad_peer_query (g_value_get_object (&item), query);
        g_value_reset (&item);
        break;
      case GST_ITERATOR_RESYNC:
        gst_iterator_resync (it);
        break;
      default:
        done = TRUE;
        break;
    }
  }
  g_value_unset (&item);
  gst_iterator_free (it);
  return answered;
}

/* A GstCudaContext the neighbours or the application already use: asked of
 * downstream, then upstream, then with a need-context message (whoever answers
 * calls set_context, which adopts it when its device fits). */
static void
find_shared_context (GstGpunetCuda * cuda, GstElement * element)
{
  GstQuery *query = gst_query_new_context (GST_CUDA_CONTEXT_TYPE);
  GstContext *found = NULL;

  if (ask_peers (element, query, GST_PAD_SRC)) {
    gst_query_parse_context (query, &found);
    if (found != NULL)
      gst_element_set_context (element, found);
  }
  if (cuda->context == NULL && ask_peers (element, query, GST_PAD_SINK)) {
    gst_query_parse_context (query, &found);
    if (found != NULL)
      gst_element_set_context (element, found);
  }
  gst_query_unref (query);
  if (cuda->context == NULL)
    gst_element_post_message (element,
        gst_message_new_need_context (GST_OBJECT (element),
            GST_CUDA_CONTEXT_TYPE));
}

#define PRIMARY_DEVICES 64

/* The primary CUDA context of device `ordinal`, retained once per process and never
 * released (neighbours may hold the GstCudaContext wrapping it for as long as they
 * live), or NULL where libcuda does not give it.  The CUDA runtime (our backend,
 * cuDNN) and DeepStream's libraries allocate in it; each CUDA context has its own
 * address space, so the kernels of a context made with cuCtxCreate cannot read
 * DeepStream's surfaces in place. */
static CUcontext
primary_context (guint ordinal, CUdevice * device)
{
  typedef CUresult (*RetainFunc) (CUcontext *, CUdevice);
  static GMutex lock;
  static CUcontext retained[PRIMARY_DEVICES];
  CUcontext ctx = NULL;

  if (ordinal >= PRIMARY_DEVICES || CuDeviceGet (device, (int) ordinal) != CUDA_SUCCESS)
    return NULL;
  g_mutex_lock (&lock);
  if (retained[ordinal] == NULL) {
    /* GStreamer's loader opened the driver library; its table has no such entry */
    void *lib = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    RetainFunc retain = lib ? (RetainFunc) dlsym (lib, "cuDevicePrimaryCtxRetain") : NULL;

    if (retain == NULL || retain (&retained[ordinal], *device) != CUDA_SUCCESS)
      retained[ordinal] = NULL;
  }
  ctx = retained[ordinal];
  g_mutex_unlock (&lock);
  return ctx;
}

/* No neighbour has a context: ours wraps the device's primary context and is
 * offered to the neighbours (set on the element, posted as have-context), so that
 * GStreamer's elements, DeepStream's and the engine all work in one address space. */
static void
share_primary_context (GstGpunetCuda * cuda, GstElement * element, gint device_id)
{
  CUdevice device = 0;
  CUcontext primary = primary_context (device_id > 0 ? (guint) device_id : 0,
      &device);
  GstContext *context;

  if (primary == NULL) {
    GST_INFO_OBJECT (element, "no primary CUDA context of device %d: GStreamer "
        "makes a context of its own", device_id > 0 ? device_id : 0);
    return;
  }
  cuda->context = gst_cuda_context_new_wrapped (primary, device);
  if (cuda->context == NULL)
    return;
  GST_INFO_OBJECT (element, "sharing the primary CUDA context of device %d",
      (gint) device);
  context = gst_context_new_cuda_context (cuda->context);
  gst_element_set_context (element, context);
  gst_element_post_message (element,
      gst_message_new_have_context (GST_OBJECT (element), context));
}
#endif

gboolean
gst_gpunet_cuda_open (GstGpunetCuda * cuda, GstElement * element,
    gint device_id, gint * device)
{
#ifdef HAVE_GST_CUDA
  guint id = 0;

  cuda->device_id = device_id;
  /* a context adopted earlier (set_context) on another device than asked */
  if (cuda->context != NULL && device_id >= 0) {
    g_object_get (cuda->context, "cuda-device-id", &id, NULL);
    if ((gint) id != device_id) {
      GST_ELEMENT_WARNING (element, RESOURCE, SETTINGS,
          ("device-id=%d, but the CUDA context shared by the neighbouring "
              "elements is on device %u: this element uses its own context on "
              "device %d, and CUDA frames from upstream are copied through "
              "system memory. Set device-id=-1 to use the neighbours' device, "
              "or put the upstream elements on device %d", device_id, id,
              device_id, device_id), (NULL));
      gst_clear_object (&cuda->context);
    }
  }

  /* the library asserts when used before it found the driver (libcuda) */
  if (!gst_cuda_load_library ()) {
    GST_INFO_OBJECT (element, "GStreamer's CUDA library cannot load the CUDA "
        "driver (no NVIDIA driver here): CUDA memory caps are not offered");
    return FALSE;
  }
  /* the neighbours' context; else one on the device's primary context; else one
   * GStreamer makes */
  if (cuda->context == NULL)
    find_shared_context (cuda, element);
  if (cuda->context == NULL)
    share_primary_context (cuda, element, device_id);
  if (!gst_cuda_ensure_element_context (element, device_id, &cuda->context)) {
    GST_INFO_OBJECT (element, "no CUDA context (no driver or GPU for GStreamer's "
        "CUDA library): CUDA memory caps are not offered");
    return FALSE;
  }
  g_object_get (cuda->context, "cuda-device-id", &id, NULL);
  *device = (gint) id;
  GST_DEBUG_OBJECT (element, "CUDA context %" GST_PTR_FORMAT " on device %u",
      cuda->context, id);
  return TRUE;
#else
  (void) cuda;
  (void) element;
  (void) device_id;
  (void) device;
  return FALSE;
#endif
}

void
gst_gpunet_cuda_set_device_path (GstGpunetCuda * cuda, gboolean enabled)
{
#ifdef HAVE_GST_CUDA
  g_atomic_int_set (&cuda->device_path, enabled && cuda->context != NULL);
#else
  (void) enabled;
  g_atomic_int_set (&cuda->device_path, 0);
#endif
  cuda->warned_foreign = FALSE;
}

void
gst_gpunet_cuda_set_may_use (GstGpunetCuda * cuda, gboolean may_use)
{
  g_atomic_int_set (&cuda->may_use, may_use ? 1 : 0);
}

void
gst_gpunet_cuda_close (GstGpunetCuda * cuda)
{
  g_atomic_int_set (&cuda->device_path, -1);
#ifdef HAVE_GST_CUDA
  gst_clear_object (&cuda->context);
#endif
}

gboolean
gst_gpunet_cuda_push (GstGpunetCuda * cuda)
{
#ifdef HAVE_GST_CUDA
  if (cuda->context != NULL) {
    if (gst_cuda_context_push (cuda->context))
      return TRUE;
    GST_WARNING ("cannot make the CUDA context current on this thread");
  }
#else
  (void) cuda;
#endif
  return FALSE;
}

void
gst_gpunet_cuda_pop (GstGpunetCuda * cuda, gboolean pushed)
{
  (void) cuda;
#ifdef HAVE_GST_CUDA
  if (pushed)
    gst_cuda_context_pop (NULL);
#else
  (void) pushed;
#endif
}

GstObject *
gst_gpunet_cuda_context_ref (GstGpunetCuda * cuda)
{
#ifdef HAVE_GST_CUDA
  if (cuda->context != NULL)
    return gst_object_ref (GST_OBJECT (cuda->context));
#else
  (void) cuda;
#endif
  return NULL;
}

#ifdef HAVE_GST_CUDA
/* Per engine thread: whether each enter not yet left pushed a context (bit 0 the
 * innermost), so that leave pops only what its enter pushed. */
static __thread guint32 enter_pushed;
#endif

void
gst_gpunet_cuda_enter (void *context)
{
#ifdef HAVE_GST_CUDA
  gboolean pushed = FALSE;

  if (context != NULL) {
    pushed = gst_cuda_context_push (GST_CUDA_CONTEXT (context));
    if (!pushed)
      GST_WARNING ("cannot make the CUDA context current on the engine thread");
  }
  enter_pushed = (enter_pushed << 1) | (pushed ? 1u : 0u);
#else
  (void) context;
#endif
}

gpointer
gst_gpunet_cuda_context_handle (GstObject * context)
{
#ifdef HAVE_GST_CUDA
  if (context != NULL)
    return gst_cuda_context_get_handle (GST_CUDA_CONTEXT (context));
#else
  (void) context;
#endif
  return NULL;
}

void
gst_gpunet_cuda_leave (void *context)
{
#ifdef HAVE_GST_CUDA
  const gboolean pushed = (enter_pushed & 1u) != 0;

  (void) context;
  enter_pushed >>= 1;
  if (pushed)
    gst_cuda_context_pop (NULL);
#else
  (void) context;
#endif
}

gboolean
gst_gpunet_cuda_caps_are_cuda (GstCaps * caps)
{
#ifdef HAVE_GST_CUDA
  GstCapsFeatures *f;

  if (caps == NULL || gst_caps_is_empty (caps) || gst_caps_is_any (caps))
    return FALSE;
  f = gst_caps_get_features (caps, 0);
  return f != NULL && gst_caps_features_contains (f,
      GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY);
#else
  (void) caps;
  return FALSE;
#endif
}

GstCaps *
gst_gpunet_cuda_filter_caps (GstGpunetCuda * cuda, GstCaps * caps)
{
#ifdef HAVE_GST_CUDA
  GstCaps *ret;
  guint i;
  gint path = g_atomic_int_get (&cuda->device_path);

  /* before start (a link in NULL, gst_element_link), CUDA caps are offered when
   * the backend property allows CUDA and GStreamer's CUDA library finds a driver:
   * without that, "cudaupload ! video/x-raw(memory:CUDAMemory) ! gpunetclassify"
   * cannot even be linked */
  if (path == 1 || gst_caps_is_any (caps) || (path < 0
          && g_atomic_int_get (&cuda->may_use) && gst_cuda_load_library ()))
    return gst_caps_ref (caps);
  ret = gst_caps_new_empty ();
  for (i = 0; i < gst_caps_get_size (caps); i++) {
    GstCapsFeatures *f = gst_caps_get_features (caps, i);

    if (f != NULL && !gst_caps_features_is_any (f)
        && gst_caps_features_contains (f, GST_CAPS_FEATURE_MEMORY_CUDA_MEMORY))
      continue;
    ret = gst_caps_merge_structure_full (ret,
        gst_structure_copy (gst_caps_get_structure (caps, i)),
        f ? gst_caps_features_copy (f) : NULL);
  }
  return ret;
#else
  (void) cuda;
  return gst_caps_ref (caps);
#endif
}

#if defined(HAVE_GST_CUDA) && GST_CHECK_VERSION(1, 24, 0)
/* A producer's event, and the context it lives in (to destroy it). */
typedef struct
{
  GstCudaContext *context;
  CUevent event;
} ReadyEvent;

/* The frame's pending writes on the producer's stream as an event recorded there, or
 * NULL: nothing pending, the default stream, or no event could be made, in which case
 * the host waits as GStreamer's own consumers do. */
static ReadyEvent *
ready_event (GstCudaContext * context, GstCudaMemory * cmem)
{
  GstCudaStream *stream = gst_cuda_memory_get_stream (cmem);
  CUevent ev = NULL;
  ReadyEvent *r;

  if (stream == NULL
      || !GST_MEMORY_FLAG_IS_SET (cmem, GST_CUDA_MEMORY_TRANSFER_NEED_SYNC))
    return NULL;
  if (gst_cuda_context_push (context)) {
    if (CuEventCreate (&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
      ev = NULL;
    else if (CuEventRecord (ev, gst_cuda_stream_get_handle (stream)) !=
        CUDA_SUCCESS) {
      CuEventDestroy (ev);
      ev = NULL;
    }
    gst_cuda_context_pop (NULL);
  }
  if (ev == NULL) {
    gst_cuda_memory_sync (cmem);
    return NULL;
  }
  r = g_new (ReadyEvent, 1);
  r->context = gst_object_ref (context);
  r->event = ev;
  return r;
}
#endif

void
gst_gpunet_cuda_ready_free (gpointer ready)
{
#if defined(HAVE_GST_CUDA) && GST_CHECK_VERSION(1, 24, 0)
  ReadyEvent *r = ready;

  if (r == NULL)
    return;
  /* a destroyed event still pending is released by the driver once it fires */
  if (gst_cuda_context_push (r->context)) {
    CuEventDestroy (r->event);
    gst_cuda_context_pop (NULL);
  }
  gst_object_unref (r->context);
  g_free (r);
#else
  (void) ready;
#endif
}

gboolean
gst_gpunet_cuda_map_frame (GstGpunetCuda * cuda, GstElement * element,
    GstBuffer * buf, const GstVideoInfo * info, GstVideoFrame * frame,
    gpunet_image * img, gpointer * ready)
{
  GstMapFlags flags = GST_MAP_READ;
  gboolean device = FALSE;
  guint p;
#if defined(HAVE_GST_CUDA) && GST_CHECK_VERSION(1, 24, 0)
  GstCudaMemory *device_mem = NULL;
#endif

  *ready = NULL;
  img->cuda_ready = NULL;

#ifdef HAVE_GST_CUDA
  GstMemory *mem = gst_buffer_peek_memory (buf, 0);

  if (g_atomic_int_get (&cuda->device_path) == 1 && gst_is_cuda_memory (mem)) {
    GstCudaMemory *cmem = GST_CUDA_MEMORY_CAST (mem);

    if (cmem->context == cuda->context) {
      flags |= GST_MAP_CUDA;
      device = TRUE;
#if GST_CHECK_VERSION(1, 24, 0)
      device_mem = cmem;
#endif
    } else if (!cuda->warned_foreign) {
      GST_ELEMENT_WARNING (element, STREAM, FORMAT,
          ("The CUDA frames belong to another CUDA context (or device) than "
              "the element's; they are copied to system memory for "
              "classification. Set device-id=-1 to share upstream's context"),
          ("upstream context %" GST_PTR_FORMAT ", ours %" GST_PTR_FORMAT,
              cmem->context, cuda->context));
      cuda->warned_foreign = TRUE;
    }
  }
#else
  (void) cuda;
  (void) element;
#endif
  if (!gst_video_frame_map (frame, (GstVideoInfo *) info, buf, flags))
    return FALSE;
  for (p = 0; p < GST_VIDEO_FRAME_N_PLANES (frame) && p < 3; p++) {
    img->planes[p] = GST_VIDEO_FRAME_PLANE_DATA (frame, p);
    img->strides[p] = GST_VIDEO_FRAME_PLANE_STRIDE (frame, p);
  }
  img->memory = device ? GPUNET_MEMORY_CUDA : GPUNET_MEMORY_HOST;
#if defined(HAVE_GST_CUDA) && GST_CHECK_VERSION(1, 24, 0)
  /* 1.24+: decoders and converters hand over memory that may still be written
   * on their stream and leave the wait to the consumer: the engine's stream
   * waits on an event, not this thread on the host.  Only after the map: a
   * GST_MAP_CUDA map of memory last written through a system map queues its
   * upload on the memory's stream and only then marks it as needing a sync. */
  if (device_mem != NULL) {
    *ready = ready_event (cuda->context, device_mem);
    if (*ready != NULL)
      img->cuda_ready = ((ReadyEvent *) * ready)->event;
  }
#endif
  return TRUE;
}
