/* gstgpunetlive.h: gpunetclassify on live sources: the when-busy policy (wait for
 * room in the engine, or pass a frame at once with the stream's last result) and
 * what it decides from: whether upstream is live, whether the engine is busy. */
#ifndef __GST_GPUNET_LIVE_H__
#define __GST_GPUNET_LIVE_H__

#include <gst/gst.h>

#include "gpunet.h"
#include "gstgpunetframe.h"
#include "gstgpunetpool.h"

G_BEGIN_DECLS

typedef enum
{
  GST_GPUNET_WHEN_BUSY_WAIT = 0,
  GST_GPUNET_WHEN_BUSY_SKIP,
  GST_GPUNET_WHEN_BUSY_AUTO
} GstGpunetWhenBusy;

#define GST_TYPE_GPUNET_WHEN_BUSY (gst_gpunet_when_busy_get_type ())
GType gst_gpunet_when_busy_get_type (void);

/* Streaming thread: whether `mode` skips for the stream upstream of `sinkpad`
 * (auto asks upstream's LATENCY query: a live source skips; no answer = wait). */
gboolean gst_gpunet_when_busy_skips (GstGpunetWhenBusy mode, GstPad * sinkpad);

/* Whether a frame of an element with `in_engine` frames in `shared`'s engine
 * waits for more than the pass that runs next: the images already queued fill
 * that pass (and those an idle pass is about to take), or the element holds its share of the passes running and next (so
 * streams sharing an engine take turns rather than the quickest taking every
 * free place). */
gboolean gst_gpunet_engine_busy (GstGpunetShared * shared, guint in_engine);

/* A planned frame (n_images > 0) is not submitted after all: it carries the
 * stream's last results (its frame and regions, inferred=false) and is marked
 * skipped; nothing of it is mapped yet. */
void gst_gpunet_frame_mark_skipped (GstGpunetFrame * f);

/* The batch occupancy of `engine` since it was made: mean images per forward pass
 * over its max batch (0 before the first pass). */
gdouble gst_gpunet_engine_occupancy (gpunet_engine * engine);

G_END_DECLS

#endif /* __GST_GPUNET_LIVE_H__ */
