/* gstgpunetnvdsmeta.c: the records of an NVMM buffer as DeepStream metadata, for
 * nvdsosd, nvmsgconv and the application's probes.  Each record (a classified or
 * carried region of gstgpunetnvmm.c) becomes an NvDsClassifierMeta with one
 * NvDsLabelInfo per listed class (top-k after the threshold, best first), taken from
 * and added through the library's own pool functions under nvds_acquire_meta_lock:
 * - regions (secondary mode): on the NvDsObjectMeta it was cropped from;
 * - whole frames (primary mode): on a new NvDsObjectMeta covering the frame, added
 *   to the frame's object list, which is where nvinfer puts the result of a
 *   full-frame classifier (gstnvinfer_meta_utils: attach_metadata_classifier).
 * A carried object keeps its last result; a carried whole frame gets nothing, as
 * nvinfer attaches nothing to a batch its interval skips. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gpunet-nvds-abi.h"
#include "gstgpunetmodel.h"
#include "gstgpunetnvmm.h"
#include "gstgpunetnvmm-private.h"
#include "gstgpunetroi.h"

/* classifier_type of what we attach (a static string: copies keep the pointer) */
static const gchar classifier_type[] = "gpunetclassify";

static const gchar *
label_of (const GstGpunetModelCtx * ctx, gint id)
{
  return (id >= 0 && id < ctx->num_classes) ? ctx->labels[id] :
      "class-unknown";
}

/* The full-frame object nvinfer adds for a frame's classification. */
static GpunetNvDsObjectMeta *
frame_object (const NvmmFrameView * v, guint i)
{
  GpunetNvDsObjectMeta *om = v->nvds->acquire_obj (v->batch);

  if (om == NULL)
    return NULL;
  om->unique_component_id = v->gie_unique_id;
  om->class_id = -1;
  om->object_id = GPUNET_NVDS_UNTRACKED_OBJECT_ID;
  om->confidence = 1.0f;
  om->parent = NULL;
  memset (&om->rect_params, 0, sizeof om->rect_params);
  om->rect_params.width = (gfloat) v->widths[i];
  om->rect_params.height = (gfloat) v->heights[i];
  memcpy (om->detector_bbox_info, &om->rect_params, sizeof (gfloat) * 4);
  v->nvds->add_obj_to_frame (v->frames[i], om, NULL);
  return om;
}

void
gst_gpunet_nvds_attach (GstGpunetFrame * f, gpunet_class_score * scores)
{
  NvmmFrameView view;
  const NvmmFrameView *v = gst_gpunet_nvmm_frame_view (f, &view);
  const GstGpunetModelCtx *ctx = f->ctx;
  guint k = ctx->k, i, j;

  if (v == NULL || v->batch == NULL || f->rois == NULL)
    return;
  v->nvds->acquire_lock (v->batch);
  for (i = 0; i < v->n && i < f->rois->len; i++) {
    const GstGpunetRoi *r = &g_array_index (f->rois, GstGpunetRoi, i);
    gpunet_class_score carried[GST_GPUNET_MAX_TOP_K];
    const gpunet_class_score *s = carried;
    GpunetNvDsClassifierMeta *cm;
    GpunetNvDsObjectMeta *om;
    guint n;

    if (f->roi_image[i] >= 0) {
      s = scores + (gsize) f->roi_image[i] * k;
      n = k;
    } else if (v->objs[i] == NULL) {
      /* a whole frame carried (interval, when-busy): nvinfer attaches nothing
       * to a batch it skips, so neither do we; our record carries it */
      continue;
    } else {
      /* an object carried: its last result, as our record (and nvinfer's
       * object history) has it */
      n = r->track ? gst_gpunet_track_get_result (r->track, carried,
          G_N_ELEMENTS (carried)) : 0;
    }
    if (n == 0 || v->frames[i] == NULL)
      continue;
    om = v->objs[i] ? v->objs[i] : frame_object (v, i);
    cm = om ? v->nvds->acquire_classifier (v->batch) : NULL;
    if (cm == NULL)
      continue;
    cm->unique_component_id = v->gie_unique_id;
    cm->classifier_type = classifier_type;
    /* the same list as our record: top-k, then the threshold (the best always) */
    for (j = 0; j < n && j < f->rs.top_k; j++) {
      GpunetNvDsLabelInfo *li;

      if (j > 0 && s[j].score < f->rs.threshold)
        break;
      if ((li = v->nvds->acquire_label (v->batch)) == NULL)
        break;
      li->num_classes = (guint) ctx->num_classes;
      g_strlcpy (li->result_label, label_of (ctx, s[j].id),
          sizeof li->result_label);
      li->pResult_label = NULL;
      li->result_class_id = (guint) s[j].id;
      li->label_id = 0;
      li->result_prob = s[j].score;
      v->nvds->add_label_to_classifier (cm, li);
    }
    /* best first, as our record (the 9.1 library prepends each label) */
    if (cm->label_info_list != NULL && cm->label_info_list->next != NULL
        && ((GpunetNvDsLabelInfo *) cm->label_info_list->data)->result_class_id
        != (guint) s[0].id)
      cm->label_info_list = g_list_reverse (cm->label_info_list);
    v->nvds->add_classifier_to_obj (om, cm);
  }
  v->nvds->release_lock (v->batch);
}
