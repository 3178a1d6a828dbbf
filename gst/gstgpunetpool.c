/* gstgpunetpool.c: the process-wide engine pool (see gstgpunetpool.h).  One mutex
 * guards the table; loading a model happens under it, so two elements asking for the
 * same engine at once load it once. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdlib.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#include "gstgpunetcuda.h"
#include "gstgpunetpool.h"

static GMutex pool_lock;
static GHashTable *pool;        /* key -> GstGpunetShared (shared ones only) */
static guint pool_live;         /* shared or not */
static guint pool_serial;

/* The sharing key, or NULL when the weights file cannot be identified (the load then
 * says why). */
static gchar *
make_key (const GstGpunetEngineRequest * req)
{
  GStatBuf st, sc = { 0 };

  if (req->checkpoint == NULL || g_stat (req->checkpoint, &st) != 0)
    return NULL;
  /* int8: the scales file by identity too (none: the load says why) */
  if (req->precision == GPUNET_PRECISION_INT8 && (req->int8_scales == NULL
          || g_stat (req->int8_scales, &sc) != 0))
    return NULL;
  return g_strdup_printf ("%s\n%" G_GUINT64_FORMAT ":%" G_GUINT64_FORMAT ":%"
      G_GINT64_FORMAT ":%" G_GINT64_FORMAT ".%ld\n%d %d %d %p\n%" G_GUINT64_FORMAT
      ":%" G_GUINT64_FORMAT ":%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT ".%ld", req->model,
      (guint64) st.st_dev, (guint64) st.st_ino, (gint64) st.st_size,
      (gint64) st.st_mtim.tv_sec, (long) st.st_mtim.tv_nsec, (int) req->backend,
      (int) req->precision, req->device, (void *) req->cuda_context,
      (guint64) sc.st_dev, (guint64) sc.st_ino, (gint64) sc.st_size,
      (gint64) sc.st_mtim.tv_sec, (long) sc.st_mtim.tv_nsec);
}

GstGpunetShared *
gst_gpunet_pool_acquire (const GstGpunetEngineRequest * req,
    gpunet_status * status, gchar ** error, gchar ** note)
{
  GstGpunetShared *sh = NULL;
  gchar *key = req->share ? make_key (req) : NULL;
  gpunet_engine_params p;
  gpunet_model *model = NULL;
  char *text = NULL;
  gpunet_status st;

  *status = GPUNET_OK;
  *error = NULL;
  *note = NULL;
  g_mutex_lock (&pool_lock);
  if (pool == NULL)
    pool = g_hash_table_new (g_str_hash, g_str_equal);
  if (key != NULL && (sh = g_hash_table_lookup (pool, key)) != NULL) {
    sh->users++;
    if (sh->batch_size != req->batch_size
        || sh->batch_timeout_us != req->batch_timeout_us
        || sh->n_threads != req->n_threads
        || sh->passes_in_flight != req->passes_in_flight)
      *note = g_strdup_printf ("this element shares engine %u, made with "
          "batch-size=%u batch-timeout=%" G_GINT64_FORMAT " n-threads=%u "
          "passes-in-flight=%u; its own batch-size=%u batch-timeout=%"
          G_GINT64_FORMAT " n-threads=%u passes-in-flight=%u are not used (set "
          "share-engine=false for an engine of its own)", sh->id,
          sh->batch_size, sh->batch_timeout_us, sh->n_threads,
          sh->passes_in_flight, req->batch_size, req->batch_timeout_us,
          req->n_threads, req->passes_in_flight);
    g_mutex_unlock (&pool_lock);
    g_free (key);
    return sh;
  }

  st = gpunet_model_load (req->model, req->checkpoint, &model, &text);
  if (st == GPUNET_OK) {
    gpunet_engine *engine = NULL;

    gpunet_engine_params_init (&p);
    p.session.backend = req->backend;
    p.session.precision = req->precision;
    p.session.int8_scales = req->int8_scales;
    p.session.device = req->device;
    p.session.n_threads = (int) req->n_threads;
    p.session.max_batch = (int) req->batch_size;
    p.batch_timeout_us = req->batch_timeout_us;
    p.passes_in_flight = (int) req->passes_in_flight;
    if (req->cuda_context != NULL) {
      /* the backend checks (and pushes) this context at each call; the hooks
       * keep the engine's own work between calls in it too */
      p.session.cuda_context = gst_gpunet_cuda_context_handle (req->cuda_context);
      p.enter = gst_gpunet_cuda_enter;
      p.leave = gst_gpunet_cuda_leave;
      p.hook_user = req->cuda_context;
    }
    st = gpunet_engine_new (model, &p, &engine, &text);
    /* a batch the device cannot plan (memory): smaller ones, with a note */
    while (st != GPUNET_OK && p.session.max_batch > 1
        && (st == GPUNET_ERR_NO_MEMORY || st == GPUNET_ERR_BACKEND)
        && (req->backend == GPUNET_BACKEND_AUTO
            || req->backend == GPUNET_BACKEND_CUDA)) {
      gint tried = p.session.max_batch;

      p.session.max_batch /= 2;
      g_free (*note);
      *note = g_strdup_printf ("batch-size=%d cannot be planned on the %s "
          "backend (%s); using batch-size=%d", tried,
          req->backend == GPUNET_BACKEND_CUDA ? "cuda" : "chosen",
          text ? text : gpunet_status_string (st), p.session.max_batch);
      free (text);
      text = NULL;
      st = gpunet_engine_new (model, &p, &engine, &text);
    }
    if (st == GPUNET_OK && *note == NULL) {
      /* the application loaded libgomp first: say why passes may crawl on busy cores */
      int cpu_wait_warning = 0;
      const char *cpu_wait = gpunet_cpu_wait_note (&cpu_wait_warning);
      if (cpu_wait_warning && g_strcmp0 (gpunet_engine_backend_name (engine), "cpu") == 0)
        *note = g_strdup (cpu_wait);
    }
    if (st == GPUNET_OK) {
      sh = g_new0 (GstGpunetShared, 1);
      sh->engine = engine;
      sh->model = model;
      sh->id = ++pool_serial;
      sh->batch_size = req->batch_size;
      sh->max_batch = (guint) p.session.max_batch;
      sh->batch_timeout_us = req->batch_timeout_us;
      sh->n_threads = req->n_threads;
      sh->passes_in_flight = req->passes_in_flight;
      sh->users = 1;
      sh->cuda_context = req->cuda_context ?
          gst_object_ref (req->cuda_context) : NULL;
      sh->key = g_steal_pointer (&key);
      if (sh->key != NULL)
        g_hash_table_insert (pool, sh->key, sh);
      pool_live++;
      model = NULL;
    }
  }
  g_mutex_unlock (&pool_lock);
  if (model != NULL)
    gpunet_model_unref (model);
  g_free (key);
  if (sh == NULL) {
    *status = st;
    *error = g_strdup (text ? text : gpunet_status_string (st));
  }
  free (text);
  return sh;
}

void
gst_gpunet_pool_release (GstGpunetShared * sh)
{
  gboolean last;

  if (sh == NULL)
    return;
  g_mutex_lock (&pool_lock);
  last = --sh->users == 0;
  if (last) {
    if (sh->key != NULL)
      g_hash_table_remove (pool, sh->key);
    pool_live--;
  }
  g_mutex_unlock (&pool_lock);
  if (!last)
    return;
  /* the engine's hooks still use the CUDA context: it goes after the engine */
  gpunet_engine_free (sh->engine);
  gpunet_model_unref (sh->model);
  if (sh->cuda_context != NULL)
    gst_object_unref (sh->cuda_context);
  g_free (sh->key);
  g_free (sh);
}

guint
gst_gpunet_pool_count (void)
{
  guint n;

  g_mutex_lock (&pool_lock);
  n = pool_live;
  g_mutex_unlock (&pool_lock);
  return n;
}

guint
gst_gpunet_pool_users (GstGpunetShared * sh)
{
  guint n;

  g_mutex_lock (&pool_lock);
  n = (guint) sh->users;
  g_mutex_unlock (&pool_lock);
  return n;
}
