/* gpunet-tool-open.h: a source's state change in a thread of its own, so that a
 * tool can give up on it after a deadline.  A source's start() (filesrc's open(), a
 * network source's connect) blocks for as long as the kernel likes: a FIFO with no
 * writer, a file on a hung mount, a server that never answers.  The tool waits with
 * a deadline (--open-timeout) and stays responsive to signals; an opener that never
 * returns is left behind, holding its element's state lock for good, so the tool
 * must not change that element's state again from a thread it waits on (the
 * element leaves its bin with its state locked, or the bin goes with it).
 * GStreamer only, header only (gpunet-tag, gpunet-streams, gpunet-cameras). */
#ifndef GPUNET_TOOL_OPEN_H
#define GPUNET_TOOL_OPEN_H

#include <signal.h>

#include <gst/gst.h>

typedef enum
{
  GPUNET_TOOL_OPEN_PENDING,     /* the state change has not returned (yet) */
  GPUNET_TOOL_OPEN_OK,
  GPUNET_TOOL_OPEN_FAILED,      /* it returned FAILURE: the error is on the bus */
} GpunetToolOpenState;

/* One state change in flight; shared by the caller and the opener thread, freed
 * by whichever lets go last. */
typedef struct
{
  GMutex lock;
  GCond cond;
  GstElement *element;          /* a reference */
  GstState target;              /* GST_STATE_VOID_PENDING: the parent's */
  GpunetToolOpenState state;    /* under `lock` */
  gint refs;                    /* atomic */
  GThread *thread;
} GpunetToolOpener;

static inline void
gpunet_tool_opener_unref_ (GpunetToolOpener * o)
{
  if (!g_atomic_int_dec_and_test (&o->refs))
    return;
  gst_object_unref (o->element);
  g_cond_clear (&o->cond);
  g_mutex_clear (&o->lock);
  g_free (o);
}

static inline gpointer
gpunet_tool_opener_run_ (gpointer data)
{
  GpunetToolOpener *o = data;
  gboolean ok;

  if (o->target == GST_STATE_VOID_PENDING)
    ok = gst_element_sync_state_with_parent (o->element);
  else
    ok = gst_element_set_state (o->element, o->target) !=
        GST_STATE_CHANGE_FAILURE;
  g_mutex_lock (&o->lock);
  o->state = ok ? GPUNET_TOOL_OPEN_OK : GPUNET_TOOL_OPEN_FAILED;
  g_cond_broadcast (&o->cond);
  g_mutex_unlock (&o->lock);
  gpunet_tool_opener_unref_ (o);
  return NULL;
}

/* Starts changing `element` to `target` (GST_STATE_VOID_PENDING: its parent's
 * state, gst_element_sync_state_with_parent) in a new thread.  Main thread;
 * release the result with gpunet_tool_opener_release. */
static inline GpunetToolOpener *
gpunet_tool_opener_start (GstElement * element, GstState target,
    const gchar * thread_name)
{
  GpunetToolOpener *o = g_new0 (GpunetToolOpener, 1);

  g_mutex_init (&o->lock);
  g_cond_init (&o->cond);
  o->element = gst_object_ref (element);
  o->target = target;
  o->state = GPUNET_TOOL_OPEN_PENDING;
  o->refs = 2;
  o->thread = g_thread_new (thread_name, gpunet_tool_opener_run_, o);
  return o;
}

/* Where the state change stands now. */
static inline GpunetToolOpenState
gpunet_tool_opener_state (GpunetToolOpener * o)
{
  GpunetToolOpenState s;

  g_mutex_lock (&o->lock);
  s = o->state;
  g_mutex_unlock (&o->lock);
  return s;
}

/* Waits until the state change returns, the monotonic time `deadline` (us) passes
 * or `*stop` is set (checked every 50 ms; `stop` may be NULL); returns where it
 * stands then. */
static inline GpunetToolOpenState
gpunet_tool_opener_wait (GpunetToolOpener * o, gint64 deadline,
    volatile sig_atomic_t * stop)
{
  GpunetToolOpenState s;

  g_mutex_lock (&o->lock);
  while (o->state == GPUNET_TOOL_OPEN_PENDING && !(stop && *stop)
      && g_get_monotonic_time () < deadline)
    g_cond_wait_until (&o->cond, &o->lock,
        MIN (g_get_monotonic_time () + 50 * G_TIME_SPAN_MILLISECOND, deadline));
  s = o->state;
  g_mutex_unlock (&o->lock);
  return s;
}

/* A thread function (g_thread_new): stops `element` (a GstElement) and drops the
 * reference it was given.  Stopping waits for the element's streaming threads,
 * and so for a read() or connect() that may never return: a caller that must
 * stay responsive runs it in a thread it need not join. */
static inline gpointer
gpunet_tool_stop_element (gpointer element)
{
  gst_element_set_state (element, GST_STATE_NULL);
  gst_object_unref (element);
  return NULL;
}

/* The caller lets go: a returned opener's thread is joined, a blocked one is left
 * to end (or not) on its own. */
static inline void
gpunet_tool_opener_release (GpunetToolOpener * o)
{
  if (o == NULL)
    return;
  if (gpunet_tool_opener_state (o) != GPUNET_TOOL_OPEN_PENDING)
    g_thread_join (o->thread);
  else
    g_thread_unref (o->thread);
  gpunet_tool_opener_unref_ (o);
}

#endif
