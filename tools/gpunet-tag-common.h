/* gpunet-tag-common.h: the types the parts of gpunet-tag share: options, inputs, the
 * per-input result and the entry points of each part (inputs + sharding, record
 * writers + resume, the pipeline runner, progress). GLib/GStreamer allowed here. */
#ifndef GPUNET_TAG_COMMON_H
#define GPUNET_TAG_COMMON_H

#include <signal.h>

#include <gst/gst.h>

#include "gpunet-tag-resume.h"

G_BEGIN_DECLS

typedef struct {
  gchar *model, *checkpoint, *labels, *backend;
  gchar *precision;             /* NULL: the element's default (auto) */
  gchar *scales;                /* precision=int8: the scales file, or NULL */
  guint top_k, batch, every, threads;
  gdouble fps;
  gboolean segments, frames, resume, retry_failed, overwrite, all_files, quiet;
  gboolean show_caps;           /* print gpunetclassify's input caps per input */
  TagFormat format;
  gchar *output;                /* NULL or "-": stdout */
  guint shard_index, shard_count;
  gchar **exts;                 /* extensions taken when walking directories */
  gdouble stall_timeout;        /* seconds without progress before an input fails */
  gdouble open_timeout;         /* seconds to wait for a video stream to appear */
} TagOptions;

typedef struct {
  gchar *name;                  /* the key: the path as given (normalised) or the URI */
  gchar *uri;                   /* NULL when discovery already failed */
  gchar *error;                 /* discovery error ("no such file"), or NULL */
} TagInput;

/* One top-1 label and how many classified frames had it. */
typedef struct {
  gint id;
  const gchar *label;
  guint64 count;
} TagLabelCount;

/* What a finished input reports in its summary record. */
typedef struct {
  const gchar *input;
  gboolean ok;
  const gchar *message;         /* NULL when ok and nothing to say */
  const gchar *caps;            /* gpunetclassify's input caps, NULL if none */
  const gchar *decoder;         /* the video decoder's factory name, NULL if none */
  const gchar *model;           /* the records' model and the precision the engine */
  const gchar *precision;       /* ran (fp32, fp16, ...); NULL before a record */
  guint64 decoded, classified;
  guint64 decode_errors;        /* frames a decoder took in and never gave out */
  guint64 frames_missing;       /* frames absent from the timestamps' sequence */
  gdouble duration;             /* seconds covered by decoded frames, < 0 unknown */
  gdouble container_duration;   /* seconds the container announced, < 0 unknown */
  gdouble wall_s, classify_s;
  const TagLabelCount *top;     /* most frequent first */
  guint n_top;
} TagSummary;

/* A run of classified frames with the same top-1 class; [start, end) in seconds
 * and [start_frame, end_frame) in decoded frame numbers. */
typedef struct {
  gboolean open;
  gint label_id;
  gchar *label;
  gdouble start, end;
  guint64 start_frame, end_frame, count;
  gdouble score_sum;
} TagSegment;

/* ---- gpunet-tag-inputs.c ---- */
guint64 tag_fnv1a64 (const gchar * s);
gboolean tag_input_in_shard (const gchar * name, guint index, guint count);
GPtrArray *tag_inputs_discover (gchar ** args, const TagOptions * opt);
void tag_input_free (TagInput * in);

/* ---- gpunet-tag-output.c ---- */
void tag_write_header (GString * out, TagFormat fmt);
void tag_write_frame (GString * out, TagFormat fmt, const gchar * input,
    guint64 frame, gdouble pts, guint n, const gint * ids,
    const gchar * const *labels, const gdouble * scores);
void tag_segment_add (TagSegment * seg, GString * out, TagFormat fmt,
    const gchar * input, guint64 frame, gdouble pts, gint label_id,
    const gchar * label, gdouble score);
void tag_segment_finish (TagSegment * seg, GString * out, TagFormat fmt,
    const gchar * input, guint64 end_frame, gdouble end);
void tag_write_summary (GString * out, TagFormat fmt, const TagSummary * s);
const gchar *tag_summary_status (const TagSummary * s);
gchar *tag_record_key (const gchar * name);
gboolean tag_write_all (int fd, const gchar * p, gsize n);
GHashTable *tag_resume_prepare (const gchar * path, TagFormat fmt,
    gboolean retry_failed, gboolean * need_header, int *locked_fd,
    GError ** error);

/* ---- gpunet-tag-runner.c ---- */
typedef enum { TAG_RESULT_OK, TAG_RESULT_FAILED, TAG_RESULT_INTERRUPTED } TagResult;
typedef struct TagRunner TagRunner;
typedef void (*TagTickFunc) (gpointer user, guint64 decoded, gdouble position,
    gdouble duration);
TagRunner *tag_runner_new (const TagOptions * opt, GError ** error);
/* TRUE when a source never returned from opening: drop the runner without
 * tag_runner_free (that would block too) and make a new one */
gboolean tag_runner_wedged (TagRunner * r);
TagResult tag_runner_process (TagRunner * r, const TagInput * in, GString * out,
    volatile sig_atomic_t * stop, TagTickFunc tick, gpointer user,
    TagSummary * result);
void tag_runner_free (TagRunner * r);
gdouble tag_runner_load_seconds (const TagRunner * r);
/* Where the runner decodes to and why: "decoding into CUDA memory ..." or
 * "decoding into system memory: <reason>"; NULL for --backend cpu. */
const gchar *tag_runner_note (const TagRunner * r);
gboolean tag_runner_cuda_memory (const TagRunner * r);

/* ---- gpunet-tag-progress.c ---- */
typedef struct TagProgress TagProgress;
TagProgress *tag_progress_new (guint total, gboolean quiet);
void tag_progress_input_start (TagProgress * p, guint index, const gchar * name);
void tag_progress_tick (gpointer p, guint64 decoded, gdouble position,
    gdouble duration);
void tag_progress_input_done (TagProgress * p, const gchar * name, gboolean ok,
    guint64 frames, gdouble wall_s, const gchar * message);
void tag_progress_skip (TagProgress * p, const gchar * name);
void tag_progress_message (TagProgress * p, const gchar * fmt, ...) G_GNUC_PRINTF (2, 3);
void tag_progress_free (TagProgress * p);

G_END_DECLS

#endif
