/* gstgpunetqueue.h: gpunetclassify's ordered in-flight queue and its src pad task.
 * The streaming thread queues buffers (with room for their engine results) and
 * serialized events in arrival order; the engine's callback marks a buffer ready; the
 * task pushes the head once it is ready.  A buffer entry's frame is the element's. */
#ifndef __GST_GPUNET_QUEUE_H__
#define __GST_GPUNET_QUEUE_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpunet.h"

G_BEGIN_DECLS

typedef struct _GstGpunetQueue GstGpunetQueue;
typedef struct _GstGpunetQueueEntry GstGpunetQueueEntry;

/* The element's side, called without the queue's lock. */
typedef struct
{
  /* src task: the head buffer entry `frame` is ready, with the engine's `status`,
   * `error` sentence (status != GPUNET_OK) and `scores` (n_scores asked at push,
   * writable).  Returns the buffer to push (full), or NULL after it called
   * gst_gpunet_queue_set_flow_error and posted an error. */
  GstBuffer *(*finish) (gpointer frame, gpunet_status status,
      const gchar * error, gpunet_class_score * scores, gpointer user_data);
  /* src task: `event` is about to be pushed (stream order) */
  void (*event) (GstEvent * event, gpointer user_data);
  /* drop: withdraws the `n` frames from the engines; no engine callback for them
   * may run once it returns */
  void (*cancel) (gpointer * frames, guint n, gpointer user_data);
  GDestroyNotify frame_free;
  /* streaming thread, may be NULL: no frame of this element comes until one in flight
   * is done (wait_room is about to block with every buffer of the limit in flight,
   * wait_drained waits, or EOS was queued): the engine should run what it holds */
  void (*blocked) (gpointer user_data);
} GstGpunetQueueFuncs;

/* A queue pushing on `srcpad` of `element` (both borrowed: the element owns the
 * queue).  It starts flushing. */
GstGpunetQueue *gst_gpunet_queue_new (GstElement * element, GstPad * srcpad,
    const GstGpunetQueueFuncs * funcs, gpointer user_data);
void gst_gpunet_queue_free (GstGpunetQueue * q);

/* Start: the most buffers in flight before gst_gpunet_queue_wait_room blocks. */
void gst_gpunet_queue_set_limit (GstGpunetQueue * q, guint max_in_flight);

/* Streaming thread: waits for room; GST_FLOW_OK, or the flow that stopped the
 * queue (flushing, or the task's flow error). */
GstFlowReturn gst_gpunet_queue_wait_room (GstGpunetQueue * q);

/* Streaming thread, never blocks (when-busy=skip): GST_FLOW_OK or the flow that
 * stopped the queue; *full when the frames this element has waiting for the engine
 * reach the limit. */
GstFlowReturn gst_gpunet_queue_check_room (GstGpunetQueue * q, gboolean * full);

/* This element's frames waiting for their engine results now (any thread). */
guint gst_gpunet_queue_in_engine (GstGpunetQueue * q);

/* Streaming thread: queues `frame` (taken) with room for `n_scores` results; with
 * n_scores 0 it is ready at once.  Else the returned entry is the user data of the
 * frame's engine request, with gst_gpunet_queue_done as its callback. */
GstGpunetQueueEntry *gst_gpunet_queue_push_frame (GstGpunetQueue * q,
    gpointer frame, gsize n_scores);

/* A gpunet_engine_done_func (`user`: the entry): stores the results and wakes the
 * task.  Also for a request the engine refused (scores NULL). */
void gst_gpunet_queue_done (void *user, gpunet_status status,
    const char *error_text, const gpunet_class_score * scores, int n, int k);

/* Streaming thread: a serialized event (taken) goes after the buffers before it.
 * GST_FLOW_FLUSHING when flushing (a pad being deactivated: upstream then stops
 * quietly, never with an error); EOS goes straight downstream once the task
 * stopped. */
GstFlowReturn gst_gpunet_queue_push_event (GstGpunetQueue * q,
    GstEvent * event);

/* Waits until the queue is empty (serialized queries); FALSE when flushing or when
 * the task stopped on a flow error. */
gboolean gst_gpunet_queue_wait_drained (GstGpunetQueue * q);

/* Src task, before it posts an error: the next buffer's flow is GST_FLOW_ERROR. */
void gst_gpunet_queue_set_flow_error (GstGpunetQueue * q);

/* Sink pad deactivation: a streaming thread waiting for room returns. */
void gst_gpunet_queue_set_flushing (GstGpunetQueue * q);

/* FLUSH_START (taken): wakes and pauses the task, pushes the event. */
void gst_gpunet_queue_flush_start (GstGpunetQueue * q, GstEvent * event);

/* Withdraws the queued buffers from the engines (funcs->cancel) and drops every
 * entry; a sticky event not pushed yet (stream-start, caps, tags; not segment or
 * EOS) is stored on the src pad for the next buffer, where the pad takes it (not
 * while it is flushing or stopped).  With the task paused or stopped: stop, and
 * within gst_gpunet_queue_flush_stop. */
void gst_gpunet_queue_drop (GstGpunetQueue * q);

/* FLUSH_STOP (taken): pushes it, drops what is queued (gst_gpunet_queue_drop,
 * after the src pad left flushing, so it keeps the sticky events) and restarts
 * the task. */
gboolean gst_gpunet_queue_flush_stop (GstGpunetQueue * q, GstEvent * event);

/* Src pad activation: starts or stops the task. */
gboolean gst_gpunet_queue_activate (GstGpunetQueue * q, gboolean active);

/* ALLOCATION query: pools upstream allocates from must hold the `extra` frames this
 * element keeps in flight; with no pool, one for `query`'s caps is proposed. */
void gst_gpunet_queue_add_allocation (GstQuery * query, guint extra);

/* LATENCY query answered by upstream: adds the wait for a batch
 * (`batch_wait`) and the frames held in flight (`max_in_flight` at `fps_n`/`fps_d`
 * frames per second; none where fps_n is 0). */
void gst_gpunet_queue_add_latency (GstQuery * query, GstClockTime batch_wait,
    guint max_in_flight, gint fps_n, gint fps_d);

G_END_DECLS

#endif /* __GST_GPUNET_QUEUE_H__ */
