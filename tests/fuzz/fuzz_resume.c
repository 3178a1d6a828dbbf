/* fuzz_resume.c: gpunet-tag --resume's reader of an earlier output (tag_resume_scan
 * in tools/gpunet-tag-resume.c) over arbitrary bytes.  The first byte's low bit
 * picks the format (0 JSON lines, 1 CSV); the rest is the file.  Checks that every
 * block lies inside the file, in order, and ends where the kept part ends or before. */
#include "fuzz_common.h"

#include "gpunet-tag-resume.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  TagResumeScan scan = { 0 };
  GError *err = NULL;
  TagFormat fmt;
  gsize last_end;

  if (size < 1)
    return 0;
  fmt = (data[0] & 1) ? TAG_FORMAT_CSV : TAG_FORMAT_JSONL;
  if (tag_resume_scan ((const gchar *) data + 1, size - 1, fmt, "fuzz", &scan,
          &err)) {
    last_end = scan.header_len;
    for (guint i = 0; i < scan.blocks->len; i++) {
      TagResumeBlock *b = &g_array_index (scan.blocks, TagResumeBlock, i);

      if (b->start != last_end || b->end <= b->start || b->end > size - 1
          || b->input == NULL || b->status == NULL)
        abort ();
      last_end = b->end;
    }
    if (scan.keep_end != last_end || scan.keep_end > size - 1)
      abort ();
  } else if (err == NULL || err->message == NULL) {
    abort ();                   /* a refusal always says why */
  }
  g_clear_error (&err);
  tag_resume_scan_clear (&scan);
  return 0;
}
