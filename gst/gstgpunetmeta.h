/* gstgpunetmeta.h: the GstGpunetClassificationMeta custom meta (registration, how a
 * classification record becomes a GstStructure, and how it is attached to a buffer
 * or to a region's GstVideoRegionOfInterestMeta) and the record's JSON line.
 * Applications that only read the meta use the header-only gpunet-meta.h instead. */
#ifndef __GST_GPUNET_META_H__
#define __GST_GPUNET_META_H__

#include <gst/gst.h>
#include <gst/video/video.h>

#include "gpunet-meta.h"

G_BEGIN_DECLS

/* One classification record (frame or region), as the element produces it.
 * The lists hold n entries, best first; the pointers are borrowed. */
typedef struct
{
  const gchar *model;
  const gchar *precision;       /* the precision asked: auto, fp32, fp16 or bf16 (bf16
                                 * and fp16 are never exact), or NULL (not written) */
  gint num_classes;
  gint roi_id;                  /* -1: the whole frame, else the region meta's id */
  gboolean inferred;            /* FALSE: carried over from an earlier frame */
  gint best_id;                 /* top-1, always set even when n == 0 */
  gdouble best_score;
  const gchar *best_label;
  guint n;
  const gint *ids;
  const gdouble *scores;
  const gchar *const *labels;
  gboolean finite;              /* FALSE: the logits held NaN or Inf */
  /* smoothing: the frame's own top-1 before the moving average (has_raw) */
  gboolean has_raw;
  gint raw_id;
  gdouble raw_score;
  const gchar *raw_label;
} GstGpunetClassification;

/* Registers the custom meta once (thread safe) and returns its info. */
const GstMetaInfo *gst_gpunet_classification_meta_get_info (void);

/* Sets the record's fields (model, label, label-id, confidence, ids, labels, scores,
 * num-classes, roi-id, inferred, finite; raw-label, raw-label-id, raw-confidence with
 * smoothing) on `s`, replacing fields of the same name. */
void gst_gpunet_classification_to_structure (const GstGpunetClassification * c,
    GstStructure * s);

/* Adds a new classification meta holding `c` to the writable `buffer`; returns the
 * meta (owned by the buffer) or NULL. */
GstCustomMeta *gst_buffer_add_gpunet_classification_meta (GstBuffer * buffer,
    const GstGpunetClassification * c);

/* Adds `c` to the region meta `roi` (of a writable buffer) as a parameter
 * structure named GPUNET_META_NAME holding the fields above. */
void gst_gpunet_classification_add_to_roi (GstVideoRegionOfInterestMeta * roi,
    const GstGpunetClassification * c);

/* Appends `c` to `out` as one JSON object and a newline: pts (nanoseconds, or
 * null when `pts` is GST_CLOCK_TIME_NONE), frame, roi-id, model, label,
 * label-id, confidence, ids, labels, scores, inferred (then "finite": false when
 * the logits were not finite, and raw-label, raw-label-id, raw-confidence with
 * smoothing). */
void gst_gpunet_classification_to_json (const GstGpunetClassification * c,
    GstClockTime pts, guint64 frame, GString * out);

G_END_DECLS

#endif /* __GST_GPUNET_META_H__ */
