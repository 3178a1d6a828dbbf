/* gpunet-meta.h: header-only helpers for applications that read the classification
 * results gpunetclassify attaches to buffers (a GstCustomMeta named
 * "GstGpunetClassificationMeta"). Needs only gstreamer-1.0 (1.20+); no link with
 * the plugin. Strings and values returned stay valid while the buffer is alive. */
#ifndef __GPUNET_META_H__
#define __GPUNET_META_H__

#include <gst/gst.h>

G_BEGIN_DECLS

#define GPUNET_META_NAME "GstGpunetClassificationMeta"
#define GPUNET_MESSAGE_NAME "gpunetclassify"

/* With roi-mode=regions or both, a region's record is a parameter structure of
 * that region's GstVideoRegionOfInterestMeta, with the same name and fields
 * (roi-id = the meta's id):
 *   s = gst_video_region_of_interest_meta_get_param (roi, GPUNET_META_NAME);
 * The readers below take it like a frame record's structure. */

/* The first classification meta of `buffer`, or NULL (also NULL when the plugin
 * was never loaded, so the meta is not registered). */
static inline GstCustomMeta *
gpunet_meta_get (GstBuffer * buffer)
{
  if (gst_meta_get_info (GPUNET_META_NAME) == NULL)
    return NULL;
  return gst_buffer_get_custom_meta (buffer, GPUNET_META_NAME);
}

/* Iterates over every classification meta of `buffer` (one per gpunetclassify
 * element or region); start with *state = NULL, stops with NULL. */
static inline GstCustomMeta *
gpunet_meta_iterate (GstBuffer * buffer, gpointer * state)
{
  const GstMetaInfo *info = gst_meta_get_info (GPUNET_META_NAME);
  GstMeta *meta;

  if (info == NULL)
    return NULL;
  meta = gst_buffer_iterate_meta_filtered (buffer, state, info->api);
  return (GstCustomMeta *) meta;
}

/* The structure of a classification meta (owned by the meta), or NULL. The same
 * field names are used by the element's bus message. */
static inline const GstStructure *
gpunet_meta_get_structure (GstCustomMeta * meta)
{
  return meta ? gst_custom_meta_get_structure (meta) : NULL;
}

/* The top-1 label ("class-<id>" when the label is unknown), or NULL. */
static inline const gchar *
gpunet_meta_label (const GstStructure * s)
{
  return gst_structure_get_string (s, "label");
}

/* The top-1 class id, or -1. */
static inline gint
gpunet_meta_label_id (const GstStructure * s)
{
  gint id = -1;

  gst_structure_get_int (s, "label-id", &id);
  return id;
}

/* The top-1 softmax probability, or 0. */
static inline gdouble
gpunet_meta_confidence (const GstStructure * s)
{
  gdouble c = 0.0;

  gst_structure_get_double (s, "confidence", &c);
  return c;
}

/* -1 for a whole-frame record, else the id of the region meta it belongs to. */
static inline gint
gpunet_meta_roi_id (const GstStructure * s)
{
  gint id = -1;

  gst_structure_get_int (s, "roi-id", &id);
  return id;
}

/* TRUE when the frame was classified, FALSE when the result was carried over
 * from an earlier frame (interval > 0). */
static inline gboolean
gpunet_meta_inferred (const GstStructure * s)
{
  gboolean inferred = FALSE;

  gst_structure_get_boolean (s, "inferred", &inferred);
  return inferred;
}

/* FALSE when the record's logits held NaN or Inf (an fp16 overflow, a bad
 * checkpoint): its scores are then not probabilities.  TRUE when absent. */
static inline gboolean
gpunet_meta_finite (const GstStructure * s)
{
  gboolean finite = TRUE;

  if (s != NULL)
    gst_structure_get_boolean (s, "finite", &finite);
  return finite;
}

/* Number of top-k entries (those at or above the element's threshold; may be 0). */
static inline guint
gpunet_meta_n_results (const GstStructure * s)
{
  const GValue *v = gst_structure_get_value (s, "ids");

  return (v && GST_VALUE_HOLDS_ARRAY (v)) ? gst_value_array_get_size (v) : 0;
}

/* Entry i of the top-k (best first): class id, or -1 when out of range. */
static inline gint
gpunet_meta_nth_id (const GstStructure * s, guint i)
{
  const GValue *v = gst_structure_get_value (s, "ids");

  if (!v || !GST_VALUE_HOLDS_ARRAY (v) || i >= gst_value_array_get_size (v))
    return -1;
  return g_value_get_int (gst_value_array_get_value (v, i));
}

/* Entry i of the top-k: label, or NULL when out of range. */
static inline const gchar *
gpunet_meta_nth_label (const GstStructure * s, guint i)
{
  const GValue *v = gst_structure_get_value (s, "labels");

  if (!v || !GST_VALUE_HOLDS_ARRAY (v) || i >= gst_value_array_get_size (v))
    return NULL;
  return g_value_get_string (gst_value_array_get_value (v, i));
}

/* Entry i of the top-k: softmax probability, or 0 when out of range. */
static inline gdouble
gpunet_meta_nth_score (const GstStructure * s, guint i)
{
  const GValue *v = gst_structure_get_value (s, "scores");

  if (!v || !GST_VALUE_HOLDS_ARRAY (v) || i >= gst_value_array_get_size (v))
    return 0.0;
  return g_value_get_double (gst_value_array_get_value (v, i));
}

G_END_DECLS

#endif /* __GPUNET_META_H__ */
