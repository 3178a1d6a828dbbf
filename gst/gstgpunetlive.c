/* gstgpunetlive.c: the when-busy policy of gpunetclassify (see gstgpunetlive.h).
 * No state of its own: each call reads the pad or the engine it is given. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gstgpunetlive.h"

GType
gst_gpunet_when_busy_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_GPUNET_WHEN_BUSY_WAIT,
        "Wait for room in the engine (upstream is held back; every frame is "
          "classified: files, offline work)", "wait"},
    {GST_GPUNET_WHEN_BUSY_SKIP,
        "When the engine is busy, pass the frame on at once with the stream's "
          "last result (inferred=false, counted as skipped)", "skip"},
    {GST_GPUNET_WHEN_BUSY_AUTO,
        "skip when upstream is live (its latency query says so), else wait",
        "auto"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpunetWhenBusy", values);
    g_once_init_leave (&type, t);
  }
  return type;
}

gboolean
gst_gpunet_when_busy_skips (GstGpunetWhenBusy mode, GstPad * sinkpad)
{
  GstQuery *q;
  gboolean live = FALSE;

  if (mode != GST_GPUNET_WHEN_BUSY_AUTO)
    return mode == GST_GPUNET_WHEN_BUSY_SKIP;
  q = gst_query_new_latency ();
  if (gst_pad_peer_query (sinkpad, q))
    gst_query_parse_latency (q, &live, NULL, NULL);
  gst_query_unref (q);
  GST_DEBUG_OBJECT (sinkpad, "when-busy=auto: upstream is %slive, so %s",
      live ? "" : "not ", live ? "skip" : "wait");
  return live;
}

gboolean
gst_gpunet_engine_busy (GstGpunetShared * shared, guint in_engine)
{
  gpunet_engine *engine = shared->engine;
  guint max = (guint) MAX (gpunet_engine_max_batch (engine), 1);
  guint users = MAX (gst_gpunet_pool_users (shared), 1);
  /* the frames the passes running and the next one hold, shared out */
  guint share = MAX (max * (MAX (shared->passes_in_flight, 1) + 1) / users, 1);

  /* the images an idle pass is about to take do not wait for the next one */
  guint next = max * (1 + (guint) gpunet_engine_idle_passes (engine));

  return (guint) gpunet_engine_waiting (engine) >= next || in_engine >= share;
}

void
gst_gpunet_frame_mark_skipped (GstGpunetFrame * f)
{
  guint i;

  f->skipped = TRUE;
  f->frame_inferred = FALSE;
  /* the carried results of this cycle stay: nothing new replaces them */
  f->cycle_start = FALSE;
  f->n_images = 0;
  for (i = 0; f->rois && i < f->rois->len; i++)
    f->roi_image[i] = -1;
}

gdouble
gst_gpunet_engine_occupancy (gpunet_engine * engine)
{
  int64_t passes = 0, images = 0;
  int max = gpunet_engine_max_batch (engine);

  gpunet_engine_stats (engine, &passes, &images);
  if (passes <= 0 || max <= 0)
    return 0.0;
  return (gdouble) images / (gdouble) passes / (gdouble) max;
}
