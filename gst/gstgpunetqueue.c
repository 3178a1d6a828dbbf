/* gstgpunetqueue.c: the ordered in-flight queue and its src task (see
 * gstgpunetqueue.h).  Owns the entries, the in-flight count, the flushing flag and the
 * task's flow, all under GstGpunetQueue's lock (with a GCond); threads: the streaming
 * thread, the engine's worker (gst_gpunet_queue_done) and the src pad's task. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstgpunetqueue.h"

GST_DEBUG_CATEGORY_STATIC (gst_gpunet_queue_debug);
#define GST_CAT_DEFAULT gst_gpunet_queue_debug

/* One entry: a buffer waiting for its results, or a serialized event keeping its
 * place between buffers. */
struct _GstGpunetQueueEntry
{
  GstGpunetQueue *queue;
  GstEvent *event;              /* an event entry, else NULL */
  gpointer frame;               /* a buffer entry: the element's */
  gpunet_class_score *scores;   /* n_scores once ready */
  gpunet_status status;
  gchar *error;
  gboolean ready;
  gboolean counted;             /* in the queue's in_engine */
};

struct _GstGpunetQueue
{
  GstElement *element;          /* borrowed: the element owns the queue */
  GstPad *srcpad;
  GstGpunetQueueFuncs funcs;
  gpointer user_data;

  GMutex lock;
  GCond cond;
  GQueue entries;
  guint in_flight;              /* buffer entries in `entries` */
  guint in_engine;              /* ... of them waiting for the engine's results */
  guint limit;                  /* max-in-flight as started */
  gboolean flushing;
  GstFlowReturn srcresult;
};

GstGpunetQueue *
gst_gpunet_queue_new (GstElement * element, GstPad * srcpad,
    const GstGpunetQueueFuncs * funcs, gpointer user_data)
{
  static gsize once = 0;
  GstGpunetQueue *q;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_gpunet_queue_debug, "gpunetqueue", 0,
        "gpunetclassify in-flight queue and src task");
    g_once_init_leave (&once, 1);
  }
  q = g_new0 (GstGpunetQueue, 1);
  q->element = element;
  q->srcpad = srcpad;
  q->funcs = *funcs;
  q->user_data = user_data;
  g_mutex_init (&q->lock);
  g_cond_init (&q->cond);
  g_queue_init (&q->entries);
  q->flushing = TRUE;
  q->srcresult = GST_FLOW_FLUSHING;
  return q;
}

static void
entry_free (GstGpunetQueue * q, GstGpunetQueueEntry * e)
{
  if (e->event)
    gst_event_unref (e->event);
  if (e->frame)
    q->funcs.frame_free (e->frame);
  g_free (e->scores);
  g_free (e->error);
  g_free (e);
}

void
gst_gpunet_queue_free (GstGpunetQueue * q)
{
  GstGpunetQueueEntry *e;

  while ((e = g_queue_pop_head (&q->entries)) != NULL)
    entry_free (q, e);
  g_mutex_clear (&q->lock);
  g_cond_clear (&q->cond);
  g_free (q);
}

void
gst_gpunet_queue_set_limit (GstGpunetQueue * q, guint max_in_flight)
{
  g_mutex_lock (&q->lock);
  q->limit = max_in_flight;
  g_mutex_unlock (&q->lock);
}

/* ---- the streaming thread's side ------------------------------------------------- */

GstFlowReturn
gst_gpunet_queue_wait_room (GstGpunetQueue * q)
{
  GstFlowReturn ret;

  g_mutex_lock (&q->lock);
  if (q->funcs.blocked != NULL && !q->flushing && q->srcresult == GST_FLOW_OK
      && q->in_flight >= q->limit) {
    g_mutex_unlock (&q->lock);
    q->funcs.blocked (q->user_data);
    g_mutex_lock (&q->lock);
  }
  while (!q->flushing && q->srcresult == GST_FLOW_OK
      && q->in_flight >= q->limit)
    g_cond_wait (&q->cond, &q->lock);
  ret = q->flushing ? GST_FLOW_FLUSHING : q->srcresult;
  g_mutex_unlock (&q->lock);
  return ret;
}

GstFlowReturn
gst_gpunet_queue_check_room (GstGpunetQueue * q, gboolean * full)
{
  GstFlowReturn ret;

  g_mutex_lock (&q->lock);
  *full = q->in_engine >= q->limit;
  ret = q->flushing ? GST_FLOW_FLUSHING : q->srcresult;
  g_mutex_unlock (&q->lock);
  return ret;
}

guint
gst_gpunet_queue_in_engine (GstGpunetQueue * q)
{
  guint n;

  g_mutex_lock (&q->lock);
  n = q->in_engine;
  g_mutex_unlock (&q->lock);
  return n;
}

/* Queues `e`; the task pushes it when it is at the head and ready.  Lock held. */
static void
enqueue (GstGpunetQueue * q, GstGpunetQueueEntry * e)
{
  g_queue_push_tail (&q->entries, e);
  if (e->frame != NULL)
    q->in_flight++;
  g_cond_broadcast (&q->cond);
}

GstGpunetQueueEntry *
gst_gpunet_queue_push_frame (GstGpunetQueue * q, gpointer frame,
    gsize n_scores)
{
  GstGpunetQueueEntry *e = g_new0 (GstGpunetQueueEntry, 1);

  e->queue = q;
  e->frame = frame;
  if (n_scores > 0)
    e->scores = g_new0 (gpunet_class_score, n_scores);
  else
    e->ready = TRUE;
  g_mutex_lock (&q->lock);
  if (!e->ready) {
    q->in_engine++;
    e->counted = TRUE;
  }
  enqueue (q, e);
  g_mutex_unlock (&q->lock);
  return e;
}

void
gst_gpunet_queue_done (void *user, gpunet_status status,
    const char *error_text, const gpunet_class_score * scores, int n, int k)
{
  GstGpunetQueueEntry *e = user;
  GstGpunetQueue *q = e->queue;

  g_mutex_lock (&q->lock);
  e->status = status;
  if (status == GPUNET_OK)
    memcpy (e->scores, scores, sizeof (gpunet_class_score) * (gsize) n * k);
  else
    e->error = g_strdup (error_text ? error_text :
        gpunet_status_string (status));
  e->ready = TRUE;
  /* an entry dropped meanwhile was taken off the count already */
  if (e->counted && q->in_engine > 0)
    q->in_engine--;
  e->counted = FALSE;
  g_cond_broadcast (&q->cond);
  g_mutex_unlock (&q->lock);
}

GstFlowReturn
gst_gpunet_queue_push_event (GstGpunetQueue * q, GstEvent * event)
{
  GstGpunetQueueEntry *e;

  g_mutex_lock (&q->lock);
  if (q->flushing) {
    g_mutex_unlock (&q->lock);
    gst_event_unref (event);
    return GST_FLOW_FLUSHING;
  }
  if (q->srcresult != GST_FLOW_OK && GST_EVENT_TYPE (event) == GST_EVENT_EOS) {
    /* the task stopped (not linked, EOS, error): EOS still goes downstream */
    g_mutex_unlock (&q->lock);
    return gst_pad_push_event (q->srcpad, event) ? GST_FLOW_OK : GST_FLOW_ERROR;
  }
  e = g_new0 (GstGpunetQueueEntry, 1);
  e->queue = q;
  e->event = event;
  e->ready = TRUE;
  enqueue (q, e);
  g_mutex_unlock (&q->lock);
  /* no frame follows EOS: the frames before it must not wait for a batch to fill */
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && q->funcs.blocked != NULL)
    q->funcs.blocked (q->user_data);
  return GST_FLOW_OK;
}

gboolean
gst_gpunet_queue_wait_drained (GstGpunetQueue * q)
{
  gboolean ok;

  /* no frame comes while this thread waits: run what the engine holds */
  if (q->funcs.blocked != NULL)
    q->funcs.blocked (q->user_data);
  g_mutex_lock (&q->lock);
  /* a task paused by a flow error never drains: give up then */
  while (!q->flushing && q->srcresult == GST_FLOW_OK && q->entries.length > 0)
    g_cond_wait (&q->cond, &q->lock);
  ok = !q->flushing && q->srcresult == GST_FLOW_OK;
  g_mutex_unlock (&q->lock);
  return ok;
}

/* ---- flushing and activation ------------------------------------------------------ */

/* Sets the flow and the flushing flag, waking every waiter. */
static void
set_state (GstGpunetQueue * q, gboolean flushing, GstFlowReturn result)
{
  g_mutex_lock (&q->lock);
  q->flushing = flushing;
  q->srcresult = result;
  g_cond_broadcast (&q->cond);
  g_mutex_unlock (&q->lock);
}

void
gst_gpunet_queue_set_flushing (GstGpunetQueue * q)
{
  set_state (q, TRUE, GST_FLOW_FLUSHING);
}

void
gst_gpunet_queue_set_flow_error (GstGpunetQueue * q)
{
  g_mutex_lock (&q->lock);
  if (q->srcresult == GST_FLOW_OK)
    q->srcresult = GST_FLOW_ERROR;
  g_cond_broadcast (&q->cond);
  g_mutex_unlock (&q->lock);
}

void
gst_gpunet_queue_flush_start (GstGpunetQueue * q, GstEvent * event)
{
  /* not serialized: wake and stop the task, then tell downstream */
  set_state (q, TRUE, GST_FLOW_FLUSHING);
  gst_pad_push_event (q->srcpad, event);
  gst_pad_pause_task (q->srcpad);
}

void
gst_gpunet_queue_drop (GstGpunetQueue * q)
{
  GQueue dropped = G_QUEUE_INIT;
  GPtrArray *frames = g_ptr_array_new ();
  GstGpunetQueueEntry *e;
  GList *l;

  g_mutex_lock (&q->lock);
  dropped = q->entries;
  g_queue_init (&q->entries);
  q->in_flight = 0;
  q->in_engine = 0;
  for (l = dropped.head; l; l = l->next)
    ((GstGpunetQueueEntry *) l->data)->counted = FALSE;
  g_cond_broadcast (&q->cond);
  g_mutex_unlock (&q->lock);

  /* the entries stay alive until no engine callback can write to them */
  for (l = dropped.head; l; l = l->next) {
    e = l->data;
    if (e->frame != NULL)
      g_ptr_array_add (frames, e->frame);
    /* upstream sends stream-start and caps once: downstream must still get
     * them before the next buffer (as GstQueue keeps them on a flush) */
    else if (GST_EVENT_IS_STICKY (e->event)
        && GST_EVENT_TYPE (e->event) != GST_EVENT_SEGMENT
        && GST_EVENT_TYPE (e->event) != GST_EVENT_EOS
        && gst_pad_store_sticky_event (q->srcpad, e->event) == GST_FLOW_OK)
      q->funcs.event (e->event, q->user_data);
  }
  if (frames->len > 0)
    q->funcs.cancel (frames->pdata, frames->len, q->user_data);
  g_ptr_array_free (frames, TRUE);
  while ((e = g_queue_pop_head (&dropped)) != NULL)
    entry_free (q, e);
}

static void queue_loop (GstGpunetQueue * q);

gboolean
gst_gpunet_queue_flush_stop (GstGpunetQueue * q, GstEvent * event)
{
  gst_pad_push_event (q->srcpad, event);
  gst_gpunet_queue_drop (q);
  set_state (q, FALSE, GST_FLOW_OK);
  return gst_pad_start_task (q->srcpad, (GstTaskFunction) queue_loop, q, NULL);
}

gboolean
gst_gpunet_queue_activate (GstGpunetQueue * q, gboolean active)
{
  set_state (q, !active, active ? GST_FLOW_OK : GST_FLOW_FLUSHING);
  if (active)
    return gst_pad_start_task (q->srcpad, (GstTaskFunction) queue_loop, q,
        NULL);
  return gst_pad_stop_task (q->srcpad);
}

/* ---- the src task ------------------------------------------------------------------ */

/* Pushes a ready buffer entry: its records, then the buffer. */
static GstFlowReturn
push_frame (GstGpunetQueue * q, GstGpunetQueueEntry * e)
{
  GstBuffer *buf = q->funcs.finish (e->frame, e->status, e->error, e->scores,
      q->user_data);

  if (buf == NULL)
    return GST_FLOW_ERROR;
  return gst_pad_push (q->srcpad, buf);
}

/* The src pad's task: pushes the queue's head once it is ready. */
static void
queue_loop (GstGpunetQueue * q)
{
  GstFlowReturn ret = GST_FLOW_OK;
  GstGpunetQueueEntry *e;

  g_mutex_lock (&q->lock);
  while (!q->flushing && (q->entries.length == 0
          || !((GstGpunetQueueEntry *) g_queue_peek_head (&q->entries))->ready))
    g_cond_wait (&q->cond, &q->lock);
  if (q->flushing) {
    g_mutex_unlock (&q->lock);
    gst_pad_pause_task (q->srcpad);
    return;
  }
  e = g_queue_pop_head (&q->entries);
  if (e->frame != NULL)
    q->in_flight--;
  g_cond_broadcast (&q->cond);
  g_mutex_unlock (&q->lock);

  if (e->event != NULL) {
    GstEvent *ev = g_steal_pointer (&e->event);

    q->funcs.event (ev, q->user_data);
    gst_pad_push_event (q->srcpad, ev);
  } else {
    ret = push_frame (q, e);
  }
  entry_free (q, e);

  if (ret != GST_FLOW_OK) {
    g_mutex_lock (&q->lock);
    if (q->srcresult == GST_FLOW_OK || ret != GST_FLOW_FLUSHING)
      q->srcresult = ret;
    g_cond_broadcast (&q->cond);
    g_mutex_unlock (&q->lock);
    if (ret == GST_FLOW_NOT_LINKED || ret < GST_FLOW_EOS) {
      if (ret != GST_FLOW_ERROR)
        GST_ELEMENT_FLOW_ERROR (q->element, ret);
      gst_pad_push_event (q->srcpad, gst_event_new_eos ());
    }
    GST_DEBUG_OBJECT (q->element, "pausing the task: %s",
        gst_flow_get_name (ret));
    gst_pad_pause_task (q->srcpad);
  }
}

/* ---- what holding frames costs the neighbours ---------------------------------- */

void
gst_gpunet_queue_add_allocation (GstQuery * query, guint extra)
{
  guint i, size, min, max;
  GstBufferPool *pool;

  if (gst_query_get_n_allocation_pools (query) == 0) {
    GstCaps *caps;
    GstVideoInfo info;

    gst_query_parse_allocation (query, &caps, NULL);
    if (caps != NULL && gst_video_info_from_caps (&info, caps))
      gst_query_add_allocation_pool (query, NULL, info.size, extra + 1, 0);
    return;
  }
  for (i = 0; i < gst_query_get_n_allocation_pools (query); i++) {
    gst_query_parse_nth_allocation_pool (query, i, &pool, &size, &min, &max);
    gst_query_set_nth_allocation_pool (query, i, pool, size, min + extra,
        max == 0 ? 0 : max + extra);
    if (pool)
      gst_object_unref (pool);
  }
}

void
gst_gpunet_queue_add_latency (GstQuery * query, GstClockTime batch_wait,
    guint max_in_flight, gint fps_n, gint fps_d)
{
  gboolean live;
  GstClockTime min, max, held;

  gst_query_parse_latency (query, &live, &min, &max);
  /* a frame may wait for a batch to fill; up to max-in-flight frames are held
   * while the engine works */
  held = batch_wait;
  if (fps_n > 0)
    held += gst_util_uint64_scale_int (max_in_flight * GST_SECOND, fps_d, fps_n);
  min += batch_wait;
  if (GST_CLOCK_TIME_IS_VALID (max))
    max += held;
  gst_query_set_latency (query, live, min, max);
}
