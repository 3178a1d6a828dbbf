/* gstgpunetstats.h: gpunetclassify's counters (frames in, classified, carried,
 * skipped, failed, dropped), its latency window and histogram, frames out per second,
 * and the timer that posts them as a `gpunetclassify-stats` element message every
 * stats-interval ms.  One lock; any thread. */
#ifndef __GST_GPUNET_STATS_H__
#define __GST_GPUNET_STATS_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GST_GPUNET_STATS_NAME "gpunetclassify-stats"

typedef struct _GstGpunetStats GstGpunetStats;

/* How a frame left the element. */
typedef enum
{
  GST_GPUNET_OUTCOME_CLASSIFIED,        /* the engine classified it */
  GST_GPUNET_OUTCOME_CARRIED,   /* interval: an earlier result was attached */
  GST_GPUNET_OUTCOME_SKIPPED    /* when-busy=skip: passed with the last result */
} GstGpunetOutcome;

/* What the counters cannot know: the element's engine and queue, read when a
 * structure is made (on the caller's or the timer's thread). */
typedef struct
{
  guint queue_depth;
  gdouble batch_occupancy;
  gdouble pass_ms;              /* mean pass time of the engine */
  guint engine_id;
  const gchar *model;
} GstGpunetStatsEngine;

typedef void (*GstGpunetStatsEngineFunc) (GstElement * element,
    GstGpunetStatsEngine * out, gpointer * to_free);

/* `element` (borrowed: it owns the stats) posts the messages; `engine_func` fills
 * the engine's part, with whatever it must free afterwards in *to_free (g_free). */
GstGpunetStats *gst_gpunet_stats_new (GstElement * element,
    GstGpunetStatsEngineFunc engine_func);
void gst_gpunet_stats_free (GstGpunetStats * s);

/* READY->PAUSED: every count back to 0; the timer posts every `interval_ms`
 * (0 = no messages).  Stop, before the element drops its engine: the timer stops;
 * the counts and the engine's part as it was stay readable. */
void gst_gpunet_stats_start (GstGpunetStats * s, guint interval_ms);
void gst_gpunet_stats_stop (GstGpunetStats * s);

/* stats-interval changed: restarts the timer if started. */
void gst_gpunet_stats_set_interval (GstGpunetStats * s, guint interval_ms);

/* A buffer arrived (chain); returns the monotonic time in us its latency starts at. */
gint64 gst_gpunet_stats_frame_in (GstGpunetStats * s);

/* A frame that arrived at `in_us` leaves now, as `outcome`. */
void gst_gpunet_stats_frame_out (GstGpunetStats * s, GstGpunetOutcome outcome,
    gint64 in_us);

/* `n` frames failed (mapping, the engine: an error was posted), or were dropped
 * without one (flushing, a stopped flow, state change). */
void gst_gpunet_stats_failed (GstGpunetStats * s, guint n);
void gst_gpunet_stats_dropped (GstGpunetStats * s, guint n);

/* The `gpunetclassify-stats` structure now (the stats property). */
GstStructure *gst_gpunet_stats_structure (GstGpunetStats * s);

G_END_DECLS

#endif /* __GST_GPUNET_STATS_H__ */
