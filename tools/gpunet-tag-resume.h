/* gpunet-tag-resume.h: reading an earlier output of gpunet-tag back for --resume,
 * from memory: which records are summaries, and which byte ranges form each input's
 * block.  GLib only (no GStreamer, no file access), so that a fuzzer can run it over
 * arbitrary bytes (tests/fuzz/fuzz_resume.c); gpunet-tag-output.c does the file work. */
#ifndef GPUNET_TAG_RESUME_H
#define GPUNET_TAG_RESUME_H

#include <glib.h>

G_BEGIN_DECLS

typedef enum { TAG_FORMAT_JSONL = 0, TAG_FORMAT_CSV } TagFormat;

/* The CSV layouts, newest first: each adds columns at the end of the one before.
 * --resume appends to a file in the layout its header names. */
#define TAG_CSV_HEADER_22 "type,input,frame,end_frame,pts,end,label_id,label,score," \
  "ids,labels,scores,frames,classified,duration,container_duration,wall_s," \
  "decode_fps,classify_fps,top_labels,status,message"
#define TAG_CSV_HEADER_24 TAG_CSV_HEADER_22 ",decode_errors,frames_missing"
#define TAG_CSV_HEADER TAG_CSV_HEADER_24 ",model,precision\n"
#define TAG_CSV_COLUMNS 26
#define TAG_CSV_COLUMNS_24 24
#define TAG_CSV_COLUMNS_22 22

/* One input's block: its records, [start, end) in bytes, ending with its summary. */
typedef struct {
  gsize start, end;
  gchar *input;                 /* the summary's "input" */
  gchar *status;                /* the summary's "status" ("ok", "error", ...) */
} TagResumeBlock;

/* What tag_resume_scan found in an earlier output. */
typedef struct {
  gsize header_len;             /* a CSV header's length at the start, else 0 */
  guint columns;                /* its layout (22, 24 or 26 columns), else 0 */
  gsize keep_end;               /* end of the last summary: what follows is partial */
  GArray *blocks;               /* of TagResumeBlock, in file order */
} TagResumeScan;

/* Splits `len` bytes of an earlier output into records and the blocks that end with
 * a summary.  Lines that are no record of this tool (damaged, truncated) are part of
 * the block they sit in and never fail the scan.  FALSE with `error` set only when
 * the first record shows a file of the other format (or not of this tool).  Free the
 * result with tag_resume_scan_clear (also after FALSE). */
gboolean tag_resume_scan (const gchar * data, gsize len, TagFormat fmt,
    const gchar * path, TagResumeScan * scan, GError ** error);
void tag_resume_scan_clear (TagResumeScan * scan);

G_END_DECLS

#endif
