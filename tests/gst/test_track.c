/* test_track.c: the per-object re-classification cache (gst/gstgpunettrack.c) alone,
 * no GStreamer: the classify/carry schedule of reclassify_interval, the growth rule,
 * keys of (source, object), results carried through handles that outlive the
 * cache's entry, a decision undone (when-busy), and the bound: 10 000 synthetic tracker ids that jump and repeat
 * never leave more objects than track_timeout allows.  Exits 0 or 1. */
#include <stdio.h>
#include <string.h>

#include "gstgpunettrack.h"

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; \
  fprintf (stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
  fprintf (stderr, __VA_ARGS__); fputc ('\n', stderr); } } while (0)

static const GstGpunetTrackPolicy *
policy (guint interval, guint timeout, gboolean growth)
{
  static GstGpunetTrackPolicy p;

  p.reclassify_interval = interval;
  p.track_timeout = timeout;
  p.reclassify_on_growth = growth;
  return &p;
}

/* interval 5: one object seen on frames 0..11 is classified on 0, 5 and 10;
 * interval 0 and 1: every frame. */
static void
test_interval (void)
{
  guint interval;

  for (interval = 0; interval <= 5; interval += (interval == 1 ? 4 : 1)) {
    GstGpunetTrackCache *c = gst_gpunet_track_cache_new ();
    guint f, classified = 0;

    for (f = 0; f < 12; f++) {
      gboolean now;

      gst_gpunet_track_cache_begin_frame (c, policy (interval, 30, FALSE));
      now = gst_gpunet_track_cache_decide (c, 0, 42, 100, NULL);
      CHECK (now == (interval <= 1 || f % interval == 0),
          "interval %u frame %u: classify=%d", interval, f, now);
      classified += now;
    }
    CHECK (classified == (interval <= 1 ? 12u : 3u), "interval %u: %u",
        interval, classified);
    gst_gpunet_track_cache_free (c);
  }
}

/* undo (when-busy skipped the frame that was to classify): interval 5, frame 5's
 * classification undone, frame 6 classifies and starts the count again (11);
 * a new object undone on its first frame is new on its next. */
static void
test_undo (void)
{
  GstGpunetTrackCache *c = gst_gpunet_track_cache_new ();
  GstGpunetTrack *t = NULL;
  guint f;

  for (f = 0; f < 12; f++) {
    gboolean now;

    gst_gpunet_track_cache_begin_frame (c, policy (5, 30, FALSE));
    now = gst_gpunet_track_cache_decide (c, 0, 42, 100, &t);
    CHECK (now == (f == 0 || f == 5 || f == 6 || f == 11), "frame %u: "
        "classify=%d", f, now);
    if (f == 5)
      gst_gpunet_track_cache_undo (c, t);
    /* a carried frame: nothing to undo */
    if (f == 7)
      gst_gpunet_track_cache_undo (c, t);
    gst_gpunet_track_unref (t);
    /* object 43 appears on frame 3, undone: classified on frame 4 */
    if (f == 3 || f == 4) {
      now = gst_gpunet_track_cache_decide (c, 0, 43, 100, &t);
      CHECK (now, "object 43, frame %u: carried", f);
      if (f == 3)
        gst_gpunet_track_cache_undo (c, t);
      gst_gpunet_track_unref (t);
    }
  }
  gst_gpunet_track_cache_free (c);
}

/* (source, object) is the key: the same object id in two sources is two objects,
 * and an object twice in one frame is classified once. */
static void
test_keys (void)
{
  GstGpunetTrackCache *c = gst_gpunet_track_cache_new ();

  gst_gpunet_track_cache_begin_frame (c, policy (5, 30, FALSE));
  CHECK (gst_gpunet_track_cache_decide (c, 0, 7, 0, NULL), "new");
  CHECK (gst_gpunet_track_cache_decide (c, 1, 7, 0, NULL), "other source");
  CHECK (!gst_gpunet_track_cache_decide (c, 0, 7, 0, NULL), "twice a frame");
  CHECK (gst_gpunet_track_cache_decide (c, 0, G_MAXUINT64, 0, NULL), "big id");
  CHECK (gst_gpunet_track_cache_size (c) == 3, "%u",
      gst_gpunet_track_cache_size (c));
  gst_gpunet_track_cache_begin_frame (c, policy (5, 30, FALSE));
  CHECK (!gst_gpunet_track_cache_decide (c, 1, 7, 0, NULL), "carried");
  gst_gpunet_track_cache_clear (c);
  CHECK (gst_gpunet_track_cache_size (c) == 0, "cleared");
  gst_gpunet_track_cache_begin_frame (c, policy (5, 30, FALSE));
  CHECK (gst_gpunet_track_cache_decide (c, 1, 7, 0, NULL), "new after clear");
  gst_gpunet_track_cache_free (c);
}

/* The result set through the classifying frame's handle is what a carried frame's
 * handle reads; a handle outlives the entry the cache dropped. */
static void
test_results (void)
{
  GstGpunetTrackCache *c = gst_gpunet_track_cache_new ();
  gpunet_class_score in[3] = { {5, 0.5f}, {2, 0.3f}, {9, 0.1f} }, out[4];
  GstGpunetTrack *t0, *t1;

  gst_gpunet_track_cache_begin_frame (c, policy (3, 0, FALSE));
  CHECK (gst_gpunet_track_cache_decide (c, 2, 11, 0, &t0), "new");
  CHECK (gst_gpunet_track_get_result (t0, out, 4) == 0, "no result yet");
  gst_gpunet_track_set_result (t0, in, 3);
  CHECK (gst_gpunet_track_source_id (t0) == 2, "source");
  CHECK (gst_gpunet_track_object_id (t0) == 11, "object");
  gst_gpunet_track_cache_begin_frame (c, policy (3, 0, FALSE));
  CHECK (!gst_gpunet_track_cache_decide (c, 2, 11, 0, &t1), "carried");
  CHECK (t0 == t1, "same object");
  memset (out, 0, sizeof out);
  CHECK (gst_gpunet_track_get_result (t1, out, 4) == 3, "three classes");
  CHECK (memcmp (out, in, sizeof in) == 0, "the stored classes");
  CHECK (gst_gpunet_track_get_result (t1, out, 2) == 2, "capped at max");
  /* timeout 0: missing from frame 2 drops it at frame 3 */
  gst_gpunet_track_cache_begin_frame (c, policy (3, 0, FALSE));
  gst_gpunet_track_cache_begin_frame (c, policy (3, 0, FALSE));
  CHECK (gst_gpunet_track_cache_size (c) == 0, "dropped: %u",
      gst_gpunet_track_cache_size (c));
  CHECK (gst_gpunet_track_get_result (t1, out, 4) == 3, "handle outlives it");
  gst_gpunet_track_unref (t0);
  gst_gpunet_track_unref (t1);
  gst_gpunet_track_cache_begin_frame (c, policy (3, 0, FALSE));
  CHECK (gst_gpunet_track_cache_decide (c, 2, 11, 0, NULL), "new again");
  gst_gpunet_track_cache_free (c);
}

/* reclassify_on_growth: 20 % more area than at the last classification
 * classifies before the interval is up; less does not; off ignores it. */
static void
test_growth (void)
{
  gboolean growth;

  for (growth = FALSE; growth <= TRUE; growth++) {
    GstGpunetTrackCache *c = gst_gpunet_track_cache_new ();

    gst_gpunet_track_cache_begin_frame (c, policy (100, 30, growth));
    CHECK (gst_gpunet_track_cache_decide (c, 0, 1, 1000, NULL), "new");
    gst_gpunet_track_cache_begin_frame (c, policy (100, 30, growth));
    CHECK (!gst_gpunet_track_cache_decide (c, 0, 1, 1199, NULL), "19.9 %%");
    gst_gpunet_track_cache_begin_frame (c, policy (100, 30, growth));
    CHECK (gst_gpunet_track_cache_decide (c, 0, 1, 1200, NULL) == growth,
        "20 %% with growth=%d", growth);
    /* measured from the new classification's area when there was one */
    gst_gpunet_track_cache_begin_frame (c, policy (100, 30, growth));
    CHECK (!gst_gpunet_track_cache_decide (c, 0, 1, growth ? 1400 : 1100,
            NULL), "under 20 %% of the last");
    gst_gpunet_track_cache_free (c);
  }
}

/* Track timeout: an object unseen for `timeout` frames is kept and carried; one
 * more frame and it is new. */
static void
test_timeout (void)
{
  GstGpunetTrackCache *c = gst_gpunet_track_cache_new ();
  guint f;

  gst_gpunet_track_cache_begin_frame (c, policy (1000, 3, FALSE));
  CHECK (gst_gpunet_track_cache_decide (c, 0, 5, 0, NULL), "new");
  for (f = 0; f < 3; f++)
    gst_gpunet_track_cache_begin_frame (c, policy (1000, 3, FALSE));
  CHECK (gst_gpunet_track_cache_size (c) == 1, "kept after 2 unseen");
  gst_gpunet_track_cache_begin_frame (c, policy (1000, 3, FALSE));
  CHECK (gst_gpunet_track_cache_size (c) == 1, "kept after 3 unseen");
  CHECK (!gst_gpunet_track_cache_decide (c, 0, 5, 0, NULL), "carried");
  for (f = 0; f < 5; f++)
    gst_gpunet_track_cache_begin_frame (c, policy (1000, 3, FALSE));
  CHECK (gst_gpunet_track_cache_size (c) == 0, "forgotten after 4 unseen");
  CHECK (gst_gpunet_track_cache_decide (c, 0, 5, 0, NULL), "new again");
  gst_gpunet_track_cache_free (c);
}

/* 10 000 synthetic tracker ids over 2 000 frames: each frame sees 8 objects, some
 * ids jumping far (a tracker that restarts, a 64-bit counter), some repeating
 * older ids, some reused in another source.  The cache never holds more objects
 * than the frames track_timeout keeps can have shown, and every handle is
 * released (a leak shows under the sanitizer build and valgrind). */
static void
test_bound (void)
{
  const guint timeout = 10, per_frame = 8, frames = 2000;
  GstGpunetTrackCache *c = gst_gpunet_track_cache_new ();
  guint32 rng = 12345;
  guint f, i, max_size = 0, ids = 0;
  guint64 next = 0;

  for (f = 0; f < frames; f++) {
    gst_gpunet_track_cache_begin_frame (c, policy (5, timeout, TRUE));
    for (i = 0; i < per_frame; i++) {
      GstGpunetTrack *t;
      guint64 id;
      guint32 src = 0;

      rng = rng * 1664525u + 1013904223u;
      if ((rng >> 28) < 5 && next >= 16) {
        id = next - 1 - ((rng >> 8) % 16);      /* a recent id repeats */
      } else {
        /* a new id: every 7th jumps far, as a restarted tracker's would */
        id = (ids % 7 == 6) ? G_GUINT64_CONSTANT (1) << 40 | next : next;
        next++;
        ids++;
        src = ids % 3;
      }
      if (ids > 10000)
        break;
      gst_gpunet_track_cache_decide (c, src, id, 100 + (rng & 0xff), &t);
      gst_gpunet_track_unref (t);
    }
    max_size = MAX (max_size, gst_gpunet_track_cache_size (c));
    CHECK (gst_gpunet_track_cache_size (c) <= (timeout + 2) * per_frame,
        "frame %u: %u objects", f, gst_gpunet_track_cache_size (c));
    if (ids > 10000)
      break;
  }
  CHECK (ids > 10000, "only %u ids", ids);
  printf ("10000 ids over %u frames: at most %u objects (bound %u)\n", f,
      max_size, (timeout + 2) * per_frame);
  for (f = 0; f < timeout + 2; f++)
    gst_gpunet_track_cache_begin_frame (c, policy (5, timeout, TRUE));
  CHECK (gst_gpunet_track_cache_size (c) == 0, "all forgotten: %u",
      gst_gpunet_track_cache_size (c));
  gst_gpunet_track_cache_free (c);
}

int
main (void)
{
  test_interval ();
  test_keys ();
  test_undo ();
  test_results ();
  test_growth ();
  test_timeout ();
  test_bound ();
  if (failures)
    fprintf (stderr, "%d checks failed\n", failures);
  else
    printf ("track cache: all checks passed\n");
  return failures ? 1 : 0;
}
