/* gstgpunettrack.h: the per-object re-classification cache.  A tracker gives each
 * object an id that stays the same from frame to frame; the cache, keyed by (source
 * id, object id), says for each object seen in a frame whether it is classified now
 * or carries the result of its last classification, and forgets objects unseen for
 * track_timeout frames.  What DeepStream's secondary nvinfer does with its object
 * history, kept apart from any metadata so that every region reader (GstAnalytics
 * tracking relations, NvDsObjectMeta.object_id) can use it.
 *
 * Threading: the cache (begin_frame, decide, clear, size) belongs to one thread, the
 * one that decides what is classified.  A GstGpunetTrack handle it returns may be
 * handed on with the frame: its result is set and read under its own lock, by any
 * thread, after the cache dropped the object too. */
#ifndef __GST_GPUNET_TRACK_H__
#define __GST_GPUNET_TRACK_H__

#include <glib.h>

#include "gpunet.h"

G_BEGIN_DECLS

/* The policy, read once per frame (gst_gpunet_track_cache_begin_frame). */
typedef struct
{
  /* an object is classified when it is new or was last classified (decided:
   * the result may still be on its way) this many frames ago or more: 0 and 1
   * classify on every frame, 5 on frames 0, 5, 10, ... of the object, carrying
   * the result in between */
  guint reclassify_interval;
  /* an object unseen for more than this many frames is forgotten (its next
   * appearance is new); 0: forgotten when missing from one frame */
  guint track_timeout;
  /* also classify when the box's area grew by 20 % or more since the object's
   * last classification (DeepStream nvinfer's rule: a closer object is worth a
   * new look) */
  gboolean reclassify_on_growth;
} GstGpunetTrackPolicy;

/* Area growth (percent) that reclassify_on_growth re-classifies at. */
#define GST_GPUNET_TRACK_GROWTH_PERCENT 20

/* One object, as long as someone holds it. */
typedef struct _GstGpunetTrack GstGpunetTrack;

typedef struct _GstGpunetTrackCache GstGpunetTrackCache;

GstGpunetTrackCache *gst_gpunet_track_cache_new (void);
void gst_gpunet_track_cache_free (GstGpunetTrackCache * cache);

/* Forgets every object (a flush, a new model): each is new on its next frame. */
void gst_gpunet_track_cache_clear (GstGpunetTrackCache * cache);

/* Starts the next frame under `policy` (copied) and drops the objects unseen for
 * more than policy->track_timeout frames.  Returns how many were dropped. */
guint gst_gpunet_track_cache_begin_frame (GstGpunetTrackCache * cache,
    const GstGpunetTrackPolicy * policy);

/* Object (source_id, object_id), seen in this frame with a box of `area` pixels
 * (for reclassify_on_growth; 0 when unknown).  Returns TRUE when it is to be
 * classified now (the cache counts this frame as its last classification), FALSE
 * when it carries its last result.  *track (when not NULL) receives a new
 * reference to the object (gst_gpunet_track_unref): the classification's result
 * goes there (gst_gpunet_track_set_result), and a carried frame reads it
 * (gst_gpunet_track_get_result).  Seeing an object twice in one frame
 * classifies it at most once. */
gboolean gst_gpunet_track_cache_decide (GstGpunetTrackCache * cache,
    guint32 source_id, guint64 object_id, guint64 area,
    GstGpunetTrack ** track);

/* The classification decided for `track` in the frame begun last did not happen
 * (when-busy skipped the frame): the object's next frame decides as if this one
 * had carried its last result (a new object is new again).  Nothing when this
 * frame did not decide to classify it.  The cache's thread. */
void gst_gpunet_track_cache_undo (GstGpunetTrackCache * cache,
    GstGpunetTrack * track);

/* The objects remembered now. */
guint gst_gpunet_track_cache_size (GstGpunetTrackCache * cache);

/* Frames begun since the cache was made or cleared. */
guint64 gst_gpunet_track_cache_frame (GstGpunetTrackCache * cache);

GstGpunetTrack *gst_gpunet_track_ref (GstGpunetTrack * track);
void gst_gpunet_track_unref (GstGpunetTrack * track);

guint32 gst_gpunet_track_source_id (const GstGpunetTrack * track);
guint64 gst_gpunet_track_object_id (const GstGpunetTrack * track);

/* Stores (copies) the `n` best classes `scores` (best first) of the object's
 * classification, replacing the ones before. */
void gst_gpunet_track_set_result (GstGpunetTrack * track,
    const gpunet_class_score * scores, guint n);

/* Copies the object's last result into `scores` (room for `max` classes): returns
 * how many were copied, 0 when it has none yet. */
guint gst_gpunet_track_get_result (GstGpunetTrack * track,
    gpunet_class_score * scores, guint max);

G_END_DECLS

#endif /* __GST_GPUNET_TRACK_H__ */
