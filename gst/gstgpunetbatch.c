/* gstgpunetbatch.c: the frame queue of gpunetclassify's batch-size property (see
 * gstgpunetbatch.h).  One FIFO of entries; the `waiting` newest of them are not
 * classified yet, everything before them is ready to be pushed. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <string.h>

#include "gstgpunetbatch.h"

typedef struct
{
  GstBuffer *buf;
  gboolean infer;               /* needs inference (else a carried frame) */
  gpunet_class_score *scores;   /* k results once classified, infer only */
} Entry;

struct _GstGpunetBatch
{
  guint max, k;
  GstGpunetBatchClassifyFunc func;
  gpointer user;
  GQueue entries;               /* Entry *, oldest first */
  guint waiting;                /* the newest `waiting` entries are unclassified */
  GstBuffer **bufs;             /* max, scratch for func */
  gpunet_class_score *out;      /* max * k, scratch for func */
};

static void
entry_free (Entry * e)
{
  gst_buffer_unref (e->buf);
  g_free (e->scores);
  g_free (e);
}

GstGpunetBatch *
gst_gpunet_batch_new (guint max, guint k, GstGpunetBatchClassifyFunc func,
    gpointer user)
{
  GstGpunetBatch *batch = g_new0 (GstGpunetBatch, 1);

  g_return_val_if_fail (max >= 1 && k >= 1, NULL);
  batch->max = max;
  batch->k = k;
  batch->func = func;
  batch->user = user;
  g_queue_init (&batch->entries);
  batch->bufs = g_new0 (GstBuffer *, max);
  batch->out = g_new0 (gpunet_class_score, (gsize) max * k);
  return batch;
}

void
gst_gpunet_batch_free (GstGpunetBatch * batch)
{
  if (batch == NULL)
    return;
  gst_gpunet_batch_clear (batch);
  g_free (batch->bufs);
  g_free (batch->out);
  g_free (batch);
}

void
gst_gpunet_batch_clear (GstGpunetBatch * batch)
{
  g_queue_clear_full (&batch->entries, (GDestroyNotify) entry_free);
  batch->waiting = 0;
}

GstFlowReturn
gst_gpunet_batch_drain (GstGpunetBatch * batch)
{
  GList *first, *l;
  guint n = 0, i = 0;
  GstFlowReturn ret = GST_FLOW_OK;

  if (batch->waiting == 0)
    return GST_FLOW_OK;
  first = g_queue_peek_nth_link (&batch->entries,
      g_queue_get_length (&batch->entries) - batch->waiting);
  for (l = first; l; l = l->next) {
    Entry *e = l->data;

    if (e->infer)
      batch->bufs[n++] = e->buf;
  }
  /* carried frames only: nothing to classify, they are ready as they are */
  if (n > 0)
    ret = batch->func (batch->user, batch->bufs, n, batch->k, batch->out);
  memset (batch->bufs, 0, sizeof (GstBuffer *) * batch->max);
  if (ret != GST_FLOW_OK)
    return ret;
  for (l = first; l; l = l->next) {
    Entry *e = l->data;

    if (e->infer) {
      e->scores = g_memdup2 (batch->out + (gsize) i * batch->k,
          sizeof (gpunet_class_score) * batch->k);
      i++;
    }
  }
  batch->waiting = 0;
  return GST_FLOW_OK;
}

GstFlowReturn
gst_gpunet_batch_add (GstGpunetBatch * batch, GstBuffer * buf, gboolean infer)
{
  Entry *e = g_new0 (Entry, 1);

  e->buf = buf;
  e->infer = infer;
  g_queue_push_tail (&batch->entries, e);
  if (++batch->waiting < batch->max)
    return GST_FLOW_OK;
  return gst_gpunet_batch_drain (batch);
}

GstBuffer *
gst_gpunet_batch_pop (GstGpunetBatch * batch, gboolean * inferred,
    gpunet_class_score * scores)
{
  Entry *e;
  GstBuffer *buf;

  if (g_queue_get_length (&batch->entries) <= batch->waiting)
    return NULL;
  e = g_queue_pop_head (&batch->entries);
  *inferred = e->infer;
  if (e->infer)
    memcpy (scores, e->scores, sizeof (gpunet_class_score) * batch->k);
  buf = g_steal_pointer (&e->buf);
  g_free (e->scores);
  g_free (e);
  return buf;
}
