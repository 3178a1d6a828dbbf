/* gstgpunetstats.c: gpunetclassify's counters, latency window and histogram, frames
 * out per second, and the stats-interval timer (see gstgpunetstats.h).  Everything
 * under GstGpunetStats's lock; the timer is an async periodic id on the system
 * clock, holding a reference to the element while it is scheduled. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <string.h>

#include "gstgpunetstats.h"

/* latency percentiles over the last LAT_WINDOW frames out; frames/s over the
 * timestamps of the last OUT_WINDOW frames out that fall in the fps window */
#define LAT_WINDOW 1024
#define OUT_WINDOW 4096
#define FPS_DEFAULT_WINDOW_US (2 * G_USEC_PER_SEC)

static const gdouble bucket_bounds_ms[] = {
  5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000
};

#define N_BUCKETS G_N_ELEMENTS (bucket_bounds_ms)

struct _GstGpunetStats
{
  GstElement *element;          /* borrowed */
  GstGpunetStatsEngineFunc engine_func;

  GMutex lock;
  guint64 frames_in, classified, carried, skipped, failed, dropped;
  guint64 latency_count;
  gdouble latency_sum_ms;
  guint64 buckets[N_BUCKETS];   /* per bound, not cumulative */
  gdouble lat[LAT_WINDOW];      /* ring, ms */
  guint lat_n, lat_next;
  gint64 out_us[OUT_WINDOW];    /* ring, monotonic */
  guint out_n, out_next;
  gint64 started_us;            /* first frame in since start, 0 = none yet */

  /* the engine's part as last seen: still readable once stopped */
  gdouble last_occupancy, last_pass_ms;
  guint last_engine_id;
  gchar *last_model;

  guint interval_ms;
  gboolean started;
  GstClock *clock;
  GstClockID timer;
};

typedef struct
{
  GstElement *element;          /* a reference while the timer is scheduled */
  GstGpunetStats *stats;        /* freed only with the element */
} TimerData;

GstGpunetStats *
gst_gpunet_stats_new (GstElement * element, GstGpunetStatsEngineFunc engine_func)
{
  GstGpunetStats *s = g_new0 (GstGpunetStats, 1);

  s->element = element;
  s->engine_func = engine_func;
  g_mutex_init (&s->lock);
  return s;
}

static void
timer_stop_locked (GstGpunetStats * s, GstClockID * old)
{
  *old = s->timer;
  s->timer = NULL;
}

/* Outside the lock: an async callback may be waiting for it. */
static void
timer_release (GstClockID id)
{
  if (id == NULL)
    return;
  gst_clock_id_unschedule (id);
  gst_clock_id_unref (id);
}

void
gst_gpunet_stats_free (GstGpunetStats * s)
{
  GstClockID old;

  g_mutex_lock (&s->lock);
  timer_stop_locked (s, &old);
  g_mutex_unlock (&s->lock);
  timer_release (old);
  if (s->clock)
    gst_object_unref (s->clock);
  g_free (s->last_model);
  g_mutex_clear (&s->lock);
  g_free (s);
}

static void
timer_data_free (gpointer p)
{
  TimerData *d = p;

  gst_object_unref (d->element);
  g_free (d);
}

static gboolean
timer_fired (GstClock * clock, GstClockTime time, GstClockID id,
    gpointer user_data)
{
  TimerData *d = user_data;
  GstStructure *st;
  gboolean current;

  (void) clock;
  (void) time;
  g_mutex_lock (&d->stats->lock);
  current = d->stats->timer == id;
  g_mutex_unlock (&d->stats->lock);
  if (!current)
    return TRUE;
  st = gst_gpunet_stats_structure (d->stats);
  gst_element_post_message (d->element,
      gst_message_new_element (GST_OBJECT (d->element), st));
  return TRUE;
}

/* (Re)starts the periodic timer for the interval set; lock not held. */
static void
timer_restart (GstGpunetStats * s)
{
  GstClockID old, id = NULL;
  guint ms;
  TimerData *d;

  g_mutex_lock (&s->lock);
  timer_stop_locked (s, &old);
  ms = s->interval_ms;
  if (s->started && ms > 0) {
    if (s->clock == NULL)
      s->clock = gst_system_clock_obtain ();
    id = gst_clock_new_periodic_id (s->clock,
        gst_clock_get_time (s->clock) + ms * GST_MSECOND, ms * GST_MSECOND);
    s->timer = id;
  }
  g_mutex_unlock (&s->lock);
  timer_release (old);
  if (id == NULL)
    return;
  d = g_new0 (TimerData, 1);
  d->element = gst_object_ref (s->element);
  d->stats = s;
  if (gst_clock_id_wait_async (id, timer_fired, d, timer_data_free) !=
      GST_CLOCK_OK)
    GST_WARNING_OBJECT (s->element, "cannot schedule the stats timer");
}

void
gst_gpunet_stats_start (GstGpunetStats * s, guint interval_ms)
{
  g_mutex_lock (&s->lock);
  s->frames_in = s->classified = s->carried = s->skipped = 0;
  s->failed = s->dropped = 0;
  s->latency_count = 0;
  s->latency_sum_ms = 0.0;
  memset (s->buckets, 0, sizeof s->buckets);
  s->lat_n = s->lat_next = 0;
  s->out_n = s->out_next = 0;
  s->started_us = 0;
  s->last_occupancy = 0.0;
  s->last_pass_ms = 0.0;
  s->last_engine_id = 0;
  g_clear_pointer (&s->last_model, g_free);
  s->interval_ms = interval_ms;
  s->started = TRUE;
  g_mutex_unlock (&s->lock);
  timer_restart (s);
}

void
gst_gpunet_stats_stop (GstGpunetStats * s)
{
  /* the engine's part as it is before the engine goes */
  gst_structure_free (gst_gpunet_stats_structure (s));
  g_mutex_lock (&s->lock);
  s->started = FALSE;
  g_mutex_unlock (&s->lock);
  timer_restart (s);
}

void
gst_gpunet_stats_set_interval (GstGpunetStats * s, guint interval_ms)
{
  g_mutex_lock (&s->lock);
  s->interval_ms = interval_ms;
  g_mutex_unlock (&s->lock);
  timer_restart (s);
}

gint64
gst_gpunet_stats_frame_in (GstGpunetStats * s)
{
  gint64 now = g_get_monotonic_time ();

  g_mutex_lock (&s->lock);
  s->frames_in++;
  if (s->started_us == 0)
    s->started_us = now;
  g_mutex_unlock (&s->lock);
  return now;
}

void
gst_gpunet_stats_frame_out (GstGpunetStats * s, GstGpunetOutcome outcome,
    gint64 in_us)
{
  gint64 now = g_get_monotonic_time ();
  gdouble ms = (gdouble) (now - in_us) / 1000.0;
  guint b;

  g_mutex_lock (&s->lock);
  switch (outcome) {
    case GST_GPUNET_OUTCOME_CLASSIFIED:
      s->classified++;
      break;
    case GST_GPUNET_OUTCOME_CARRIED:
      s->carried++;
      break;
    case GST_GPUNET_OUTCOME_SKIPPED:
      s->skipped++;
      break;
  }
  s->latency_count++;
  s->latency_sum_ms += ms;
  for (b = 0; b < N_BUCKETS && ms > bucket_bounds_ms[b]; b++);
  if (b < N_BUCKETS)
    s->buckets[b]++;
  s->lat[s->lat_next] = ms;
  s->lat_next = (s->lat_next + 1) % LAT_WINDOW;
  s->lat_n = MIN (s->lat_n + 1, LAT_WINDOW);
  s->out_us[s->out_next] = now;
  s->out_next = (s->out_next + 1) % OUT_WINDOW;
  s->out_n = MIN (s->out_n + 1, OUT_WINDOW);
  g_mutex_unlock (&s->lock);
}

void
gst_gpunet_stats_failed (GstGpunetStats * s, guint n)
{
  g_mutex_lock (&s->lock);
  s->failed += n;
  g_mutex_unlock (&s->lock);
}

void
gst_gpunet_stats_dropped (GstGpunetStats * s, guint n)
{
  g_mutex_lock (&s->lock);
  s->dropped += n;
  g_mutex_unlock (&s->lock);
}

static int
cmp_double (const void *a, const void *b)
{
  gdouble x = *(const gdouble *) a, y = *(const gdouble *) b;

  return (x > y) - (x < y);
}

/* The nearest-rank percentile `p` (0..100) of sorted v[n]. */
static gdouble
percentile (const gdouble * v, guint n, gdouble p)
{
  guint rank;

  if (n == 0)
    return 0.0;
  rank = (guint) (p / 100.0 * n + 0.999999);
  rank = CLAMP (rank, 1, n);
  return v[rank - 1];
}

/* Frames out per second over the fps window ending now.  Lock held. */
static gdouble
fps_locked (GstGpunetStats * s, gint64 now)
{
  gint64 window = s->interval_ms > 0 ? (gint64) s->interval_ms * 1000 :
      FPS_DEFAULT_WINDOW_US, from = now - window, oldest = now;
  guint i, n = 0;

  if (s->started_us == 0)
    return 0.0;
  for (i = 0; i < s->out_n; i++) {
    gint64 t = s->out_us[(s->out_next + OUT_WINDOW - 1 - i) % OUT_WINDOW];

    if (t < from)
      break;
    n++;
    oldest = t;
  }
  /* a young element, or more frames than the ring holds: the span really seen */
  if (s->started_us > from)
    from = s->started_us;
  else if (i == s->out_n && s->out_n == OUT_WINDOW)
    from = oldest;
  if (now <= from)
    return 0.0;
  return (gdouble) n *G_USEC_PER_SEC / (gdouble) (now - from);
}

GstStructure *
gst_gpunet_stats_structure (GstGpunetStats * s)
{
  GstGpunetStatsEngine eng = { 0, 0.0, 0.0, 0, NULL };
  gpointer to_free = NULL;
  gchar *model;
  gdouble sorted[LAT_WINDOW], p50, p99, fps, sum_ms;
  guint64 counts[6], cum[N_BUCKETS], lat_count, c = 0;
  GValue buckets = G_VALUE_INIT, bounds = G_VALUE_INIT, v = G_VALUE_INIT;
  GstStructure *st;
  guint n, i;

  if (s->engine_func)
    s->engine_func (s->element, &eng, &to_free);

  g_mutex_lock (&s->lock);
  if (eng.engine_id != 0) {
    s->last_occupancy = eng.batch_occupancy;
    s->last_pass_ms = eng.pass_ms;
    s->last_engine_id = eng.engine_id;
    if (g_strcmp0 (s->last_model, eng.model) != 0) {
      g_free (s->last_model);
      s->last_model = g_strdup (eng.model);
    }
  }
  eng.batch_occupancy = s->last_occupancy;
  eng.pass_ms = s->last_pass_ms;
  eng.engine_id = s->last_engine_id;
  model = g_strdup (s->last_model ? s->last_model : "");
  counts[0] = s->frames_in;
  counts[1] = s->classified;
  counts[2] = s->carried;
  counts[3] = s->skipped;
  counts[4] = s->failed;
  counts[5] = s->dropped;
  lat_count = s->latency_count;
  sum_ms = s->latency_sum_ms;
  for (i = 0; i < N_BUCKETS; i++) {
    c += s->buckets[i];
    cum[i] = c;
  }
  n = s->lat_n;
  memcpy (sorted, s->lat, sizeof (gdouble) * n);
  fps = fps_locked (s, g_get_monotonic_time ());
  g_mutex_unlock (&s->lock);

  qsort (sorted, n, sizeof (gdouble), cmp_double);
  p50 = percentile (sorted, n, 50.0);
  p99 = percentile (sorted, n, 99.0);

  st = gst_structure_new (GST_GPUNET_STATS_NAME,
      "frames-in", G_TYPE_UINT64, counts[0],
      "classified", G_TYPE_UINT64, counts[1],
      "carried", G_TYPE_UINT64, counts[2],
      "skipped", G_TYPE_UINT64, counts[3],
      "failed", G_TYPE_UINT64, counts[4],
      "dropped", G_TYPE_UINT64, counts[5],
      "queue-depth", G_TYPE_UINT, eng.queue_depth,
      "latency-p50-ms", G_TYPE_DOUBLE, p50,
      "latency-p99-ms", G_TYPE_DOUBLE, p99,
      "latency-count", G_TYPE_UINT64, lat_count,
      "latency-sum-ms", G_TYPE_DOUBLE, sum_ms, NULL);

  g_value_init (&buckets, GST_TYPE_ARRAY);
  g_value_init (&bounds, GST_TYPE_ARRAY);
  for (i = 0; i < N_BUCKETS; i++) {
    g_value_init (&v, G_TYPE_UINT64);
    g_value_set_uint64 (&v, cum[i]);
    gst_value_array_append_and_take_value (&buckets, &v);
    memset (&v, 0, sizeof v);
    g_value_init (&v, G_TYPE_DOUBLE);
    g_value_set_double (&v, bucket_bounds_ms[i]);
    gst_value_array_append_and_take_value (&bounds, &v);
    memset (&v, 0, sizeof v);
  }
  gst_structure_take_value (st, "latency-buckets", &buckets);
  gst_structure_take_value (st, "latency-bucket-bounds-ms", &bounds);
  gst_structure_set (st,
      "fps", G_TYPE_DOUBLE, fps,
      "batch-occupancy", G_TYPE_DOUBLE, eng.batch_occupancy,
      "pass-mean-ms", G_TYPE_DOUBLE, eng.pass_ms,
      "engine-id", G_TYPE_UINT, eng.engine_id,
      "model", G_TYPE_STRING, model, NULL);
  g_free (model);
  g_free (to_free);
  return st;
}
