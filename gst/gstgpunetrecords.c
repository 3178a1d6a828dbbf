/* gstgpunetrecords.c: results to records (see gstgpunetrecords.h).  Owns the results
 * carried between frames, the per-roi-id smoothing and label tracks, the stream-id and
 * the JSON lines file.  Lock: the src pad's stream lock; only the src task touches this
 * state, and start, stop and FLUSH_STOP run while that task is stopped or paused. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib/gstdio.h>

#include "gstgpunetanalytics.h"
#include "gstgpunetmeta.h"
#include "gstgpunetrecords.h"
#include "gstgpunetroi.h"

GST_DEBUG_CATEGORY_STATIC (gst_gpunet_records_debug);
#define GST_CAT_DEFAULT gst_gpunet_records_debug

/* Smoothing and label-change state of one stream position (frame or roi-id). */
typedef struct
{
  gfloat *probs;                /* num_classes smoothed probabilities */
  gboolean have;
  gint shown;                   /* the label last announced, -1 none */
  gint candidate;               /* the smoothed top-1 of the last frames */
  guint candidate_frames;
  guint64 last_frame;           /* the frame it was last updated on */
} Track;

struct _GstGpunetRecords
{
  GstElement *element;          /* borrowed: the element owns the records */

  /* interval: the last classified frame's results, carried to the next ones */
  gpunet_class_score last[GST_GPUNET_MAX_TOP_K];
  guint last_n;
  gboolean have_last;
  GstGpunetRoiCache *roi_cache; /* the same for regions, by roi-id */

  GHashTable *tracks;           /* roi-id -> Track (smoothing, label changes) */
  const gchar *track_model;     /* the model the tracks hold (pointer identity) */
  gchar *stream_id;
  guint nonfinite_warned;

  FILE *json_file;              /* json-output, NULL when off */
  gboolean json_pipe;           /* ... a FIFO: its reader may go away (SIGPIPE) */
  gchar *json_path;
  GString *json_lines;          /* the records of the buffer being finished */
};

/* ---- life ------------------------------------------------------------------------- */

GstGpunetRecords *
gst_gpunet_records_new (GstElement * element)
{
  static gsize once = 0;
  GstGpunetRecords *rec;

  if (g_once_init_enter (&once)) {
    GST_DEBUG_CATEGORY_INIT (gst_gpunet_records_debug, "gpunetrecords", 0,
        "gpunetclassify records, smoothing and label tracks");
    g_once_init_leave (&once, 1);
  }
  rec = g_new0 (GstGpunetRecords, 1);
  rec->element = element;
  return rec;
}

static void
track_free (gpointer data)
{
  Track *t = data;

  g_free (t->probs);
  g_free (t);
}

static void
clear_tracks (GstGpunetRecords * rec)
{
  GHashTableIter iter;
  gpointer v;

  if (rec->tracks == NULL)
    return;
  g_hash_table_iter_init (&iter, rec->tracks);
  while (g_hash_table_iter_next (&iter, NULL, &v))
    track_free (v);
  g_hash_table_remove_all (rec->tracks);
}

gboolean
gst_gpunet_records_start (GstGpunetRecords * rec, const gchar * json_path)
{
  if (json_path != NULL && *json_path != '\0') {
    /* non-blocking only to open: a FIFO without a reader fails (ENXIO) rather than
     * holding the state change until one comes; the writes then block as a file's */
    gint fd = g_open (json_path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC,
        0666);

    GStatBuf st;

    if (fd >= 0 && fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) & ~O_NONBLOCK) == 0)
      rec->json_file = fdopen (fd, "wb");
    rec->json_pipe = rec->json_file != NULL && fstat (fd, &st) == 0
        && S_ISFIFO (st.st_mode);
    if (rec->json_file == NULL) {
      gint err = errno;

      if (fd >= 0)
        close (fd);
      if (err == ENXIO)
        GST_ELEMENT_ERROR (rec->element, RESOURCE, OPEN_WRITE,
            ("Cannot open the JSON output file '%s': it is a FIFO that no process "
                "reads. Start its reader before the pipeline, or set json-output "
                "to a regular file", json_path),
            ("json-output property: open(O_NONBLOCK) gave ENXIO"));
      else
        GST_ELEMENT_ERROR (rec->element, RESOURCE, OPEN_WRITE,
            ("Cannot open the JSON output file '%s' for writing: %s. Set "
                "json-output to the path of a file in an existing, writable "
                "directory, or to an empty string to turn it off", json_path,
                g_strerror (err)),
            ("json-output property: open failed, errno %d", err));
      return FALSE;
    }
    rec->json_path = g_strdup (json_path);
    rec->json_lines = g_string_new (NULL);
  }
  rec->roi_cache = gst_gpunet_roi_cache_new ();
  rec->tracks = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
      NULL);
  rec->nonfinite_warned = 0;
  rec->have_last = FALSE;
  return TRUE;
}

void
gst_gpunet_records_stop (GstGpunetRecords * rec)
{
  g_clear_pointer (&rec->roi_cache, gst_gpunet_roi_cache_free);
  if (rec->tracks != NULL) {
    clear_tracks (rec);
    g_clear_pointer (&rec->tracks, g_hash_table_unref);
  }
  g_clear_pointer (&rec->stream_id, g_free);
  if (rec->json_file != NULL && fclose (rec->json_file) != 0)
    GST_ELEMENT_WARNING (rec->element, RESOURCE, CLOSE,
        ("Closing the JSON output file '%s' failed: %s; its last records may "
            "be missing", rec->json_path, g_strerror (errno)), (NULL));
  rec->json_file = NULL;
  g_clear_pointer (&rec->json_path, g_free);
  if (rec->json_lines != NULL)
    g_string_free (g_steal_pointer (&rec->json_lines), TRUE);
}

void
gst_gpunet_records_free (GstGpunetRecords * rec)
{
  gst_gpunet_records_stop (rec);
  g_free (rec);
}

void
gst_gpunet_records_flush (GstGpunetRecords * rec)
{
  rec->have_last = FALSE;
  if (rec->roi_cache)
    gst_gpunet_roi_cache_clear (rec->roi_cache);
  clear_tracks (rec);
}

void
gst_gpunet_records_set_stream_id (GstGpunetRecords * rec,
    const gchar * stream_id)
{
  g_free (rec->stream_id);
  rec->stream_id = g_strdup (stream_id);
}

/* ---- tracks ----------------------------------------------------------------------- */

/* compare for sorting class scores best first, ids ascending among equals */
static int
compare_scores (const void *a, const void *b)
{
  const gpunet_class_score *x = a, *y = b;

  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  return x->id - y->id;
}

/* The track of `roi_id`, made when new; regions come and go, so when there are many
 * those not seen for a while are forgotten first. */
static Track *
track_get (GstGpunetRecords * rec, gint roi_id, guint64 frame_no)
{
  Track *t = g_hash_table_lookup (rec->tracks, GINT_TO_POINTER (roi_id));

  if (t == NULL && g_hash_table_size (rec->tracks) >= 1024) {
    GHashTableIter iter;
    gpointer v;

    g_hash_table_iter_init (&iter, rec->tracks);
    while (g_hash_table_iter_next (&iter, NULL, &v))
      if (((Track *) v)->last_frame + 300 < frame_no) {
        track_free (v);
        g_hash_table_iter_remove (&iter);
      }
  }
  if (t == NULL) {
    t = g_new0 (Track, 1);
    t->shown = -1;
    t->candidate = -1;
    g_hash_table_insert (rec->tracks, GINT_TO_POINTER (roi_id), t);
  }
  return t;
}

/* Replaces `scores` (k results) by the top-k of `t`'s moving average, updated with
 * this frame's k probabilities (classes outside them count as 0). */
static void
track_smooth (Track * t, guint n, gpunet_class_score * scores, guint k,
    gfloat smoothing)
{
  gpunet_class_score *all;
  guint c, i;

  if (t->probs == NULL)
    t->probs = g_new0 (gfloat, n);
  if (!t->have) {
    memset (t->probs, 0, sizeof (gfloat) * n);
    for (i = 0; i < k; i++)
      t->probs[scores[i].id] = scores[i].score;
  } else {
    for (c = 0; c < n; c++)
      t->probs[c] *= smoothing;
    for (i = 0; i < k; i++)
      t->probs[scores[i].id] += (1.0f - smoothing) * scores[i].score;
  }
  all = g_new (gpunet_class_score, n);
  for (c = 0; c < n; c++) {
    all[c].id = (gint) c;
    all[c].score = t->probs[c];
  }
  qsort (all, n, sizeof *all, compare_scores);
  memcpy (scores, all, sizeof *scores * k);
  g_free (all);
}

/* Smoothing and label changes of one record at `roi_id`: with smoothing > 0,
 * smooths `scores` (track_smooth).  Posts gpunetclassify-label-changed when the
 * (smoothed) top-1 differs from the one last announced and has held for label-hold
 * classified frames. */
static void
track_update (GstGpunetRecords * rec, GstGpunetModelCtx * ctx, gint roi_id,
    gpunet_class_score * scores, guint k, gfloat smoothing, guint hold,
    GstBuffer * buf, guint64 frame_no)
{
  Track *t;
  gint top;
  guint i;

  /* NaN or Inf would poison the average for good: such a frame (its record
   * is marked finite=false) leaves the track as it was */
  for (i = 0; i < k; i++)
    if (!isfinite (scores[i].score))
      return;

  t = track_get (rec, roi_id, frame_no);
  if (smoothing > 0.0f)
    track_smooth (t, (guint) ctx->num_classes, scores, k, smoothing);
  t->have = TRUE;
  t->last_frame = frame_no;

  top = scores[0].id;
  if (top == t->candidate)
    t->candidate_frames++;
  else {
    t->candidate = top;
    t->candidate_frames = 1;
  }
  if (top != t->shown && t->candidate_frames >= hold) {
    GstStructure *s = gst_structure_new (GST_GPUNET_LABEL_CHANGED_MESSAGE,
        "stream-id", G_TYPE_STRING, rec->stream_id,
        "roi-id", G_TYPE_INT, roi_id,
        "pts", G_TYPE_UINT64, (guint64) GST_BUFFER_PTS (buf),
        "model", G_TYPE_STRING, ctx->name,
        "old-label", G_TYPE_STRING, t->shown >= 0 ? ctx->labels[t->shown] : "",
        "old-label-id", G_TYPE_INT, t->shown,
        "new-label", G_TYPE_STRING, ctx->labels[top],
        "new-label-id", G_TYPE_INT, top,
        "confidence", G_TYPE_DOUBLE, (gdouble) scores[0].score, NULL);

    t->shown = top;
    gst_element_post_message (rec->element,
        gst_message_new_element (GST_OBJECT (rec->element), s));
  }
}

/* ---- records ---------------------------------------------------------------------- */

static const gchar *
label_of (const GstGpunetModelCtx * ctx, gint id)
{
  return (id >= 0 && id < ctx->num_classes) ? ctx->labels[id] :
      "class-unknown";
}

/* A record's logits held NaN or Inf: warned about for the first ten frames. */
static void
warn_nonfinite (GstGpunetRecords * rec, const GstGpunetFrame * f,
    gboolean region)
{
  if (rec->nonfinite_warned < 10)
    GST_ELEMENT_WARNING (rec->element, STREAM, DECODE,
        ("Frame %" G_GUINT64_FORMAT " (pts %" GST_TIME_FORMAT ")%s: the "
            "model's outputs are NaN or infinite (a checkpoint with broken "
            "weights, or an fp16 overflow: try precision=fp32); the record "
            "is marked finite=false%s", f->rs.frame_no,
            GST_TIME_ARGS (GST_BUFFER_PTS (f->buf)), region ? ", a region" : "",
            rec->nonfinite_warned == 9 ? "; further frames like this are "
            "not warned about" : ""), (NULL));
  rec->nonfinite_warned++;
}

/* Builds one record from the k best classes `scores` (top-k and threshold
 * applied) and attaches it: to the buffer as the frame's meta when `r` is NULL,
 * else to that region's meta; with analytics-meta also as a GstAnalyticsClsMtd
 * (gstgpunetanalytics.c).  Posts it on the bus and appends its JSON line when
 * asked.  `raw` (smoothing) is the frame's own top-1. */
static void
emit_record (GstGpunetRecords * rec, const GstGpunetFrame * f,
    const GstGpunetRoi * r, const gpunet_class_score * scores,
    guint n_scores, gboolean inferred, const gpunet_class_score * raw)
{
  const GstGpunetModelCtx *ctx = f->ctx;
  GstVideoRegionOfInterestMeta *roi = r ? r->meta : NULL;
  GstGpunetClassification c;
  gint ids[GST_GPUNET_MAX_TOP_K];
  gdouble values[GST_GPUNET_MAX_TOP_K];
  const gchar *labels[GST_GPUNET_MAX_TOP_K];
  guint i, n = 0;

  for (i = 0; i < n_scores && i < f->rs.top_k; i++) {
    const gpunet_class_score *r = &scores[i];

    if (r->score < f->rs.threshold)
      break;                    /* sorted: nothing later passes */
    ids[n] = r->id;
    values[n] = r->score;
    labels[n] = label_of (ctx, r->id);
    n++;
  }

  memset (&c, 0, sizeof c);
  c.model = ctx->name;
  c.precision = ctx->precision;
  c.num_classes = ctx->num_classes;
  c.roi_id = roi ? roi->id : -1;
  c.inferred = inferred;
  c.best_id = scores[0].id;
  c.best_score = scores[0].score;
  c.best_label = label_of (ctx, c.best_id);
  c.n = n;
  c.ids = ids;
  c.scores = values;
  c.labels = labels;
  c.finite = TRUE;
  for (i = 0; i < n_scores; i++)
    c.finite = c.finite && isfinite (scores[i].score);
  if (!c.finite && inferred)
    warn_nonfinite (rec, f, roi != NULL);
  if (raw != NULL) {
    c.has_raw = TRUE;
    c.raw_id = raw->id;
    c.raw_score = raw->score;
    c.raw_label = label_of (ctx, raw->id);
  }

  if (roi != NULL)
    gst_gpunet_classification_add_to_roi (roi, &c);
  else if (gst_buffer_add_gpunet_classification_meta (f->buf, &c) == NULL)
    GST_WARNING_OBJECT (rec->element, "could not add the classification meta");
  if (f->rs.analytics && !gst_gpunet_analytics_add (f->buf, &c, r))
    GST_WARNING_OBJECT (rec->element, "could not add the analytics meta");

  GST_LOG_OBJECT (rec->element, "frame %" G_GUINT64_FORMAT ", roi %d: %s (%d) "
      "%.4f%s", f->rs.frame_no, c.roi_id, c.best_label, c.best_id,
      c.best_score, inferred ? "" : " (carried)");

  if (f->rs.post) {
    GstStructure *s = gst_structure_new_empty (GPUNET_MESSAGE_NAME);

    gst_gpunet_classification_to_structure (&c, s);
    gst_structure_set (s,
        "timestamp", G_TYPE_UINT64, (guint64) GST_BUFFER_PTS (f->buf),
        "running-time", G_TYPE_UINT64, (guint64) f->rs.running_time,
        "frame", G_TYPE_UINT64, f->rs.frame_no, NULL);
    gst_element_post_message (rec->element,
        gst_message_new_element (GST_OBJECT (rec->element), s));
  }
  if (rec->json_lines != NULL)
    gst_gpunet_classification_to_json (&c, GST_BUFFER_PTS (f->buf),
        f->rs.frame_no, rec->json_lines);
}

/* json-output: writes the buffer's records and flushes them to the file.  FALSE and
 * *error when that failed. */
static gboolean
write_json_lines (GstGpunetRecords * rec, gchar ** error)
{
  GString *lines = rec->json_lines;
  gint err = 0;
  sigset_t pipe_set, old_set, pending;
  gboolean was_pending = FALSE;

  if (lines->len == 0)
    return TRUE;
  /* a FIFO whose reader went away: EPIPE, not a SIGPIPE that kills the process.
   * SIGPIPE is blocked on this thread for the write, and the one the write raised
   * is taken back before it is unblocked (a regular file raises none) */
  sigemptyset (&pipe_set);
  sigaddset (&pipe_set, SIGPIPE);
  if (rec->json_pipe) {
    sigpending (&pending);
    was_pending = sigismember (&pending, SIGPIPE);
    pthread_sigmask (SIG_BLOCK, &pipe_set, &old_set);
  }
  errno = 0;
  if (fwrite (lines->str, 1, lines->len, rec->json_file) != lines->len
      || fflush (rec->json_file) != 0)
    err = errno ? errno : EIO;
  if (rec->json_pipe) {
    if (err == EPIPE && !was_pending) {
      const struct timespec zero = { 0, 0 };

      while (sigtimedwait (&pipe_set, NULL, &zero) < 0 && errno == EINTR);
    }
    pthread_sigmask (SIG_SETMASK, &old_set, NULL);
  }
  g_string_truncate (lines, 0);
  if (err == EPIPE) {
    *error = g_strdup_printf ("Cannot write to the JSON output file '%s': its "
        "reader closed it (%s). Keep the reader running, or set json-output to a "
        "regular file", rec->json_path, g_strerror (err));
    return FALSE;
  }
  if (err != 0) {
    *error = g_strdup_printf ("Cannot write to the JSON output file '%s': %s. "
        "Free space on its disk, or set json-output to another file",
        rec->json_path, g_strerror (err));
    return FALSE;
  }
  return TRUE;
}

/* A new model: announced, and what was carried or averaged for the old one goes. */
static void
switch_model (GstGpunetRecords * rec, GstGpunetFrame * f)
{
  if (f->old_model != NULL) {
    gst_element_post_message (rec->element,
        gst_message_new_element (GST_OBJECT (rec->element),
            gst_structure_new (GST_GPUNET_MODEL_CHANGED_MESSAGE,
                "old-model", G_TYPE_STRING, f->old_model,
                "model", G_TYPE_STRING, f->ctx->name,
                "engine-id", G_TYPE_UINT, f->ctx->shared->id,
                "pts", G_TYPE_UINT64, (guint64) GST_BUFFER_PTS (f->buf),
                "frame", G_TYPE_UINT64, f->rs.frame_no, NULL)));
    rec->have_last = FALSE;
    gst_gpunet_roi_cache_clear (rec->roi_cache);
  }
  /* classes differ between models: the averages restart with a new model */
  if (rec->track_model != f->ctx->name) {
    clear_tracks (rec);
    rec->track_model = f->ctx->name;
  }
}

/* The frame's own record: classified now, or the last one carried. */
static void
finish_frame_record (GstGpunetRecords * rec, GstGpunetFrame * f,
    gpunet_class_score * scores, gfloat smoothing, guint hold)
{
  guint k = f->ctx->k;

  if (f->frame_inferred) {
    gpunet_class_score raw = scores[0];

    memcpy (rec->last, scores, sizeof (gpunet_class_score) * k);
    rec->last_n = k;
    rec->have_last = TRUE;
    track_update (rec, f->ctx, -1, rec->last, k, smoothing, hold, f->buf,
        f->rs.frame_no);
    emit_record (rec, f, NULL, rec->last, k, TRUE,
        smoothing > 0.0f ? &raw : NULL);
  } else if (rec->have_last) {
    emit_record (rec, f, NULL, rec->last, rec->last_n, FALSE, NULL);
  }
}

/* Region i's record: classified now (its results kept by roi-id), or carried. */
static void
finish_roi_record (GstGpunetRecords * rec, GstGpunetFrame * f, guint i,
    gpunet_class_score * scores, gfloat smoothing, guint hold)
{
  GstGpunetRoi *r = &g_array_index (f->rois, GstGpunetRoi, i);
  gint img = f->roi_image[i];
  guint k = f->ctx->k;

  if (img >= 0) {
    gpunet_class_score *s = scores + (gsize) img * k;
    gpunet_class_score raw = s[0];

    if (r->unique_id)
      track_update (rec, f->ctx, r->meta->id, s, k, smoothing, hold, f->buf,
          f->rs.frame_no);
    if (r->unique_id)
      gst_gpunet_roi_cache_store (rec->roi_cache, r->meta->id,
          r->meta->roi_type, s, k);
    /* a tracked object: the frames until it is classified again carry this */
    if (r->track != NULL)
      gst_gpunet_track_set_result (r->track, s, k);
    emit_record (rec, f, r, s, k, TRUE,
        smoothing > 0.0f && r->unique_id ? &raw : NULL);
  } else if (r->track != NULL) {
    gpunet_class_score carried[GST_GPUNET_MAX_TOP_K];
    guint n = gst_gpunet_track_get_result (r->track, carried,
        G_N_ELEMENTS (carried));

    if (n > 0)
      emit_record (rec, f, r, carried, n, FALSE, NULL);
    else if (f->skipped)
      GST_LOG_OBJECT (rec->element, "frame %" G_GUINT64_FORMAT " skipped "
          "(when-busy) before object %" G_GUINT64_FORMAT " (region %d) had a "
          "result: no record", f->rs.frame_no,
          gst_gpunet_track_object_id (r->track), r->meta->id);
    else
      GST_WARNING_OBJECT (rec->element, "frame %" G_GUINT64_FORMAT ": tracked "
          "object %" G_GUINT64_FORMAT " (region %d) has no result to carry: its "
          "classification failed", f->rs.frame_no,
          gst_gpunet_track_object_id (r->track), r->meta->id);
  } else if (f->nvmm != NULL) {
    /* an untracked NVMM object of a skipped batch: NVMM regions carry only
     * through their object's track, never by roi-id (untracked ids repeat) */
    GST_LOG_OBJECT (rec->element, "frame %" G_GUINT64_FORMAT ": untracked "
        "object not classified (when-busy): no record", f->rs.frame_no);
  } else {
    guint n;
    const gpunet_class_score *s = gst_gpunet_roi_cache_lookup (rec->roi_cache,
        r->meta->id, r->meta->roi_type, &n);

    if (s != NULL)
      emit_record (rec, f, r, s, n, FALSE, NULL);
    else
      GST_WARNING_OBJECT (rec->element, "region %d: no result to carry",
          r->meta->id);
  }
}

gboolean
gst_gpunet_records_finish (GstGpunetRecords * rec, GstGpunetFrame * f,
    gpunet_class_score * scores, gfloat smoothing, guint hold, gchar ** error)
{
  guint i;

  switch_model (rec, f);
  if (f->cycle_start)
    gst_gpunet_roi_cache_clear (rec->roi_cache);
  if (f->frame_record)
    finish_frame_record (rec, f, scores, smoothing, hold);
  for (i = 0; f->rois && i < f->rois->len; i++)
    finish_roi_record (rec, f, i, scores, smoothing, hold);
  if (rec->json_lines != NULL && !write_json_lines (rec, error))
    return FALSE;
  return TRUE;
}
