/* gstgpunetmeta.c: registers the GstGpunetClassificationMeta custom meta, with a
 * transform function so the record survives buffer copies and scaling (a whole-frame
 * classification does not depend on the frame's size or colour format), and turns a
 * classification record into the meta's (and the bus message's and a region's)
 * structure and into a JSON line. */
#include "gstgpunetmeta.h"
#include "gpunet-json-write.h"

#include <gst/video/video.h>

static gboolean
copy_field (GQuark field_id, const GValue * value, gpointer user_data)
{
  gst_structure_id_set_value ((GstStructure *) user_data, field_id, value);
  return TRUE;
}

static gboolean
gst_gpunet_classification_meta_transform (GstBuffer * transbuf,
    GstCustomMeta * meta, GstBuffer * buffer, GQuark type, gpointer data,
    gpointer user_data)
{
  GstCustomMeta *dmeta;

  (void) buffer;
  (void) data;
  (void) user_data;

  /* copies (also of a region: the record is about the picture, not the bytes)
   * and video scaling keep the result; unknown transforms drop it */
  if (!GST_META_TRANSFORM_IS_COPY (type)
      && type != gst_video_meta_transform_scale_get_quark ())
    return FALSE;

  dmeta = gst_buffer_add_custom_meta (transbuf, GPUNET_META_NAME);
  if (dmeta == NULL)
    return FALSE;
  gst_structure_foreach (gst_custom_meta_get_structure (meta), copy_field,
      gst_custom_meta_get_structure (dmeta));
  return TRUE;
}

const GstMetaInfo *
gst_gpunet_classification_meta_get_info (void)
{
  static const GstMetaInfo *info = NULL;

  if (g_once_init_enter (&info)) {
    /* no tags: elements that copy untagged metas by default keep it */
    static const gchar *tags[] = { NULL };
    const GstMetaInfo *registered;

    registered = gst_meta_get_info (GPUNET_META_NAME);
    if (registered == NULL)
      registered = gst_meta_register_custom (GPUNET_META_NAME, tags,
          gst_gpunet_classification_meta_transform, NULL, NULL);
    g_once_init_leave (&info, registered);
  }
  return info;
}

void
gst_gpunet_classification_to_structure (const GstGpunetClassification * c,
    GstStructure * s)
{
  GValue ids = G_VALUE_INIT, labels = G_VALUE_INIT, scores = G_VALUE_INIT;
  GValue v = G_VALUE_INIT;
  guint i;

  gst_value_array_init (&ids, c->n);
  gst_value_array_init (&labels, c->n);
  gst_value_array_init (&scores, c->n);
  for (i = 0; i < c->n; i++) {
    g_value_init (&v, G_TYPE_INT);
    g_value_set_int (&v, c->ids[i]);
    gst_value_array_append_and_take_value (&ids, &v);
    g_value_init (&v, G_TYPE_STRING);
    g_value_set_string (&v, c->labels[i]);
    gst_value_array_append_and_take_value (&labels, &v);
    g_value_init (&v, G_TYPE_DOUBLE);
    g_value_set_double (&v, c->scores[i]);
    gst_value_array_append_and_take_value (&scores, &v);
  }

  gst_structure_set (s,
      "model", G_TYPE_STRING, c->model,
      "label", G_TYPE_STRING, c->best_label,
      "label-id", G_TYPE_INT, c->best_id,
      "confidence", G_TYPE_DOUBLE, c->best_score,
      "num-classes", G_TYPE_INT, c->num_classes,
      "roi-id", G_TYPE_INT, c->roi_id,
      "inferred", G_TYPE_BOOLEAN, c->inferred,
      "finite", G_TYPE_BOOLEAN, c->finite, NULL);
  if (c->precision)
    gst_structure_set (s, "precision", G_TYPE_STRING, c->precision, NULL);
  if (c->has_raw)
    gst_structure_set (s,
        "raw-label", G_TYPE_STRING, c->raw_label,
        "raw-label-id", G_TYPE_INT, c->raw_id,
        "raw-confidence", G_TYPE_DOUBLE, c->raw_score, NULL);
  gst_structure_take_value (s, "ids", &ids);
  gst_structure_take_value (s, "labels", &labels);
  gst_structure_take_value (s, "scores", &scores);
}

GstCustomMeta *
gst_buffer_add_gpunet_classification_meta (GstBuffer * buffer,
    const GstGpunetClassification * c)
{
  GstCustomMeta *meta;

  g_return_val_if_fail (GST_IS_BUFFER (buffer), NULL);
  g_return_val_if_fail (gst_buffer_is_writable (buffer), NULL);

  gst_gpunet_classification_meta_get_info ();
  meta = gst_buffer_add_custom_meta (buffer, GPUNET_META_NAME);
  if (meta == NULL)
    return NULL;
  gst_gpunet_classification_to_structure (c, gst_custom_meta_get_structure
      (meta));
  return meta;
}

void
gst_gpunet_classification_add_to_roi (GstVideoRegionOfInterestMeta * roi,
    const GstGpunetClassification * c)
{
  GstStructure *s;

  g_return_if_fail (roi != NULL);

  s = gst_structure_new_empty (GPUNET_META_NAME);
  gst_gpunet_classification_to_structure (c, s);
  /* takes the structure; buffer copies keep it (1.22's scale transform of the
   * region meta does not) */
  gst_video_region_of_interest_meta_add_param (roi, s);
}

void
gst_gpunet_classification_to_json (const GstGpunetClassification * c,
    GstClockTime pts, guint64 frame, GString * out)
{
  guint i;

  g_string_append (out, "{\"pts\":");
  if (GST_CLOCK_TIME_IS_VALID (pts))
    g_string_append_printf (out, "%" G_GUINT64_FORMAT, (guint64) pts);
  else
    g_string_append (out, "null");
  g_string_append_printf (out, ",\"frame\":%" G_GUINT64_FORMAT
      ",\"roi-id\":%d,\"model\":", frame, c->roi_id);
  gpunet_json_write_string (out, c->model);
  if (c->precision) {
    g_string_append (out, ",\"precision\":");
    gpunet_json_write_string (out, c->precision);
  }
  g_string_append (out, ",\"label\":");
  gpunet_json_write_string (out, c->best_label);
  g_string_append_printf (out, ",\"label-id\":%d,\"confidence\":",
      c->best_id);
  /* 9 significant digits: the engine's float scores exactly */
  gpunet_json_write_number (out, c->best_score, "%.9g");
  g_string_append (out, ",\"ids\":[");
  for (i = 0; i < c->n; i++)
    g_string_append_printf (out, "%s%d", i ? "," : "", c->ids[i]);
  g_string_append (out, "],\"labels\":[");
  for (i = 0; i < c->n; i++) {
    if (i)
      g_string_append_c (out, ',');
    gpunet_json_write_string (out, c->labels[i]);
  }
  g_string_append (out, "],\"scores\":[");
  for (i = 0; i < c->n; i++) {
    if (i)
      g_string_append_c (out, ',');
    gpunet_json_write_number (out, c->scores[i], "%.9g");
  }
  g_string_append_printf (out, "],\"inferred\":%s",
      c->inferred ? "true" : "false");
  if (!c->finite)
    g_string_append (out, ",\"finite\":false");
  if (c->has_raw) {
    g_string_append (out, ",\"raw-label\":");
    gpunet_json_write_string (out, c->raw_label);
    g_string_append_printf (out, ",\"raw-label-id\":%d,\"raw-confidence\":",
        c->raw_id);
    gpunet_json_write_number (out, c->raw_score, "%.9g");
  }
  g_string_append (out, "}\n");
}
