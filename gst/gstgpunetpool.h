/* gstgpunetpool.h: the process-wide pool of shared gpunet engines behind
 * gpunetclassify's share-engine property.  Elements whose architecture, weights file
 * (by identity: device, inode, size, modification time), backend, precision, device
 * and CUDA context are equal get the same engine: the weights loaded once, one session,
 * one thread pool, one batching worker.  Thread safe. */
#ifndef __GST_GPUNET_POOL_H__
#define __GST_GPUNET_POOL_H__

#include <gst/gst.h>

#include "gpunet.h"

G_BEGIN_DECLS

/* What an element asks for. */
typedef struct
{
  const gchar *model;           /* built-in name or architecture JSON path */
  const gchar *checkpoint;
  gpunet_backend_kind backend;
  gpunet_precision precision;
  const gchar *int8_scales;     /* precision=int8: the scales file, else ignored */
  gint device;
  guint n_threads;
  guint batch_size;             /* most images per forward pass */
  gint64 batch_timeout_us;
  guint passes_in_flight;       /* forward passes the engine runs at once */
  GstObject *cuda_context;      /* borrowed; NULL without CUDA */
  gboolean share;               /* FALSE: always a new engine of its own */
} GstGpunetEngineRequest;

/* One engine and what it was made from; hold it with acquire/release. */
typedef struct
{
  gpunet_engine *engine;
  gpunet_model *model;
  guint id;                     /* serial number, 1, 2, ... in this process */
  guint batch_size;             /* as asked by the first element */
  guint max_batch;              /* as planned (smaller when the device could
                                 * not plan batch_size) */
  gint64 batch_timeout_us;
  guint n_threads;
  guint passes_in_flight;
  /* private */
  gchar *key;
  gint users;
  GstObject *cuda_context;
} GstGpunetShared;

/* The shared engine for `req`: an existing one (a new user) or one made now.  On
 * failure NULL, *status and *error (g_free) say why.  When an existing engine was
 * made with other batch-size, batch-timeout, n-threads or passes-in-flight, or a device backend could
 * not plan batch-size and got a smaller batch, *note (g_free) says so. */
GstGpunetShared *gst_gpunet_pool_acquire (const GstGpunetEngineRequest * req,
    gpunet_status * status, gchar ** error, gchar ** note);

/* Drops one user; the last one frees the engine (after what it has queued ran). */
void gst_gpunet_pool_release (GstGpunetShared * shared);

/* Engines alive in this process (tests, tools). */
guint gst_gpunet_pool_count (void);

/* The elements holding `sh` now (when-busy shares its passes among them). */
guint gst_gpunet_pool_users (GstGpunetShared * sh);

G_END_DECLS

#endif /* __GST_GPUNET_POOL_H__ */
