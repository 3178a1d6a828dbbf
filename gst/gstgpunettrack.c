/* gstgpunettrack.c: the per-object re-classification cache (see gstgpunettrack.h).
 * GLib only: a hash table of objects by (source id, object id), each a refcounted
 * GstGpunetTrack whose result has its own lock. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstgpunettrack.h"

#define NEVER G_MAXUINT64

struct _GstGpunetTrack
{
  gint refcount;
  guint32 source_id;
  guint64 object_id;
  /* the cache's thread only */
  guint64 last_seen;            /* frame */
  guint64 last_classified;      /* frame, NEVER before the first */
  guint64 classified_area;      /* the box's area then */
  guint64 prev_classified, prev_area;   /* the two before, for undo */
  /* the result, under lock */
  GMutex lock;
  guint n;
  gpunet_class_score *scores;
};

typedef struct
{
  guint32 source_id;
  guint64 object_id;
} Key;

struct _GstGpunetTrackCache
{
  GHashTable *tracks;           /* Key (g_free) -> GstGpunetTrack (a reference) */
  GstGpunetTrackPolicy policy;
  guint64 frame;                /* the frame begun last; NEVER before the first */
};

static guint
key_hash (gconstpointer p)
{
  const Key *k = p;
  guint64 h = k->object_id * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15)
      ^ ((guint64) k->source_id << 17) ^ k->source_id;

  return (guint) (h ^ (h >> 32));
}

static gboolean
key_equal (gconstpointer a, gconstpointer b)
{
  const Key *x = a, *y = b;

  return x->source_id == y->source_id && x->object_id == y->object_id;
}

GstGpunetTrack *
gst_gpunet_track_ref (GstGpunetTrack * track)
{
  g_atomic_int_inc (&track->refcount);
  return track;
}

void
gst_gpunet_track_unref (GstGpunetTrack * track)
{
  if (track == NULL || !g_atomic_int_dec_and_test (&track->refcount))
    return;
  g_mutex_clear (&track->lock);
  g_free (track->scores);
  g_free (track);
}

static void
track_unref_value (gpointer p)
{
  gst_gpunet_track_unref (p);
}

GstGpunetTrackCache *
gst_gpunet_track_cache_new (void)
{
  GstGpunetTrackCache *cache = g_new0 (GstGpunetTrackCache, 1);

  cache->tracks = g_hash_table_new_full (key_hash, key_equal, g_free,
      track_unref_value);
  cache->frame = NEVER;
  return cache;
}

void
gst_gpunet_track_cache_free (GstGpunetTrackCache * cache)
{
  if (cache == NULL)
    return;
  g_hash_table_unref (cache->tracks);
  g_free (cache);
}

void
gst_gpunet_track_cache_clear (GstGpunetTrackCache * cache)
{
  g_hash_table_remove_all (cache->tracks);
  cache->frame = NEVER;
}

static gboolean
expired (gpointer key, gpointer value, gpointer data)
{
  const GstGpunetTrackCache *cache = data;
  const GstGpunetTrack *t = value;

  (void) key;
  /* frames that went by without it: last_seen + 1 .. frame - 1 */
  return cache->frame - t->last_seen - 1 > cache->policy.track_timeout;
}

guint
gst_gpunet_track_cache_begin_frame (GstGpunetTrackCache * cache,
    const GstGpunetTrackPolicy * policy)
{
  cache->policy = *policy;
  cache->frame = cache->frame == NEVER ? 0 : cache->frame + 1;
  if (g_hash_table_size (cache->tracks) == 0)
    return 0;
  return g_hash_table_foreach_remove (cache->tracks, expired, cache);
}

gboolean
gst_gpunet_track_cache_decide (GstGpunetTrackCache * cache, guint32 source_id,
    guint64 object_id, guint64 area, GstGpunetTrack ** track)
{
  const GstGpunetTrackPolicy *pol = &cache->policy;
  Key key = { source_id, object_id };
  GstGpunetTrack *t;
  gboolean classify;

  /* decide without begin_frame: the first frame */
  if (cache->frame == NEVER)
    cache->frame = 0;
  t = g_hash_table_lookup (cache->tracks, &key);
  if (t == NULL) {
    t = g_new0 (GstGpunetTrack, 1);
    t->refcount = 1;
    t->source_id = source_id;
    t->object_id = object_id;
    t->last_classified = NEVER;
    g_mutex_init (&t->lock);
    g_hash_table_insert (cache->tracks, g_memdup2 (&key, sizeof key), t);
  }
  t->last_seen = cache->frame;

  if (t->last_classified == NEVER)
    classify = TRUE;
  else if (t->last_classified == cache->frame)
    classify = FALSE;           /* twice in one frame: classified once */
  else if (cache->frame - t->last_classified >= MAX (pol->reclassify_interval,
          1))
    classify = TRUE;
  else
    classify = pol->reclassify_on_growth && t->classified_area > 0
        && area * 100 >= t->classified_area *
        (100 + GST_GPUNET_TRACK_GROWTH_PERCENT);

  if (classify) {
    t->prev_classified = t->last_classified;
    t->prev_area = t->classified_area;
    t->last_classified = cache->frame;
    t->classified_area = area;
  }
  if (track != NULL)
    *track = gst_gpunet_track_ref (t);
  return classify;
}

void
gst_gpunet_track_cache_undo (GstGpunetTrackCache * cache,
    GstGpunetTrack * track)
{
  if (track == NULL || cache->frame == NEVER
      || track->last_classified != cache->frame)
    return;
  track->last_classified = track->prev_classified;
  track->classified_area = track->prev_area;
}

guint
gst_gpunet_track_cache_size (GstGpunetTrackCache * cache)
{
  return g_hash_table_size (cache->tracks);
}

guint64
gst_gpunet_track_cache_frame (GstGpunetTrackCache * cache)
{
  return cache->frame == NEVER ? 0 : cache->frame;
}

guint32
gst_gpunet_track_source_id (const GstGpunetTrack * track)
{
  return track->source_id;
}

guint64
gst_gpunet_track_object_id (const GstGpunetTrack * track)
{
  return track->object_id;
}

void
gst_gpunet_track_set_result (GstGpunetTrack * track,
    const gpunet_class_score * scores, guint n)
{
  g_mutex_lock (&track->lock);
  if (n != track->n) {
    g_free (track->scores);
    track->scores = n ? g_new (gpunet_class_score, n) : NULL;
    track->n = n;
  }
  if (n)
    memcpy (track->scores, scores, sizeof (gpunet_class_score) * n);
  g_mutex_unlock (&track->lock);
}

guint
gst_gpunet_track_get_result (GstGpunetTrack * track,
    gpunet_class_score * scores, guint max)
{
  guint n;

  g_mutex_lock (&track->lock);
  n = MIN (track->n, max);
  if (n)
    memcpy (scores, track->scores, sizeof (gpunet_class_score) * n);
  g_mutex_unlock (&track->lock);
  return n;
}
