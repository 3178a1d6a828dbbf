/* engine.c: gpunet_engine, sessions behind a request queue: one worker thread and one
 * session per pass in flight (passes_in_flight).  Producers submit requests (images + a
 * completion function); a free worker takes the oldest queued images of any requests,
 * up to max_batch (waiting up to batch_timeout_us for a partial batch to fill),
 * classifies them in one call on its own session and then completes the requests
 * whose images are all done, oldest first.  `lock` guards the queue, the active list,
 * the counters and each request's status; `complete_lock` makes the workers run
 * completion functions one worker at a time, in the order the requests were submitted,
 * whichever pass ends first. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "model_private.h"
#include "session_private.h"

typedef struct request request;
struct request {
  request *next;               /* in the queue */
  request *active_next;        /* in the active list, then in a worker's completions */
  const void *tag;
  gpunet_engine_done_func done;
  void *user;
  int n, k;
  int taken;                   /* images handed to a pass so far */
  int finished;                /* images whose pass has returned */
  int running;                 /* passes holding images of this request */
  gpunet_status status;        /* the first failure of a pass, else GPUNET_OK (lock) */
  char *error_text;
  gpunet_image *images;        /* n */
  gpunet_preprocess_params pre;
  gpunet_class_score *scores;  /* n x k */
  int64_t queued_ns;
};

typedef struct worker worker;
struct worker {
  gpunet_engine *e;
  gpunet_session *session;
  pthread_t thread;
  int started;
  /* the pass's scratch: this worker only */
  gpunet_image *batch;
  gpunet_preprocess_params *batch_pre;
  gpunet_class_score *batch_out;
  request **batch_req;         /* which request each image belongs to */
  int *batch_idx;              /* its index there */
  /* the tag of the request whose done runs now (engine lock) */
  const void *completing;
  int is_completing;
};

struct gpunet_engine {
  gpunet_engine_params params;
  int max_batch;
  int k_max;                   /* the largest k any request may ask */
  int n_workers;               /* passes in flight */
  worker *workers;

  pthread_mutex_t lock;
  pthread_mutex_t complete_lock; /* held while a worker completes requests */
  pthread_cond_t wake;         /* workers: work queued or stopping */
  pthread_cond_t idle;         /* cancel: a pass finished */
  int stopping;
  request *head, *tail;        /* queued or partly taken, oldest first */
  request *active;             /* taken requests not completed yet, in submission order */
  int64_t passes, images;
  int64_t pass_ns;             /* summed wall time of the passes (run_pass) */
  int kicked;                  /* gpunet_engine_kick: run the partial batch now */
  int running_passes, most_passes; /* passes in a session call now, and the most at once */
};

static int64_t
now_ns (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (int64_t) t.tv_sec * 1000000000 + t.tv_nsec;
}

void
gpunet_engine_params_init (gpunet_engine_params *p)
{
  memset (p, 0, sizeof *p);
  gpunet_session_params_init (&p->session);
}

static void
request_free (request *r)
{
  free (r->images);
  free (r->scores);
  free (r->error_text);
  free (r);
}

/* Calls the request's completion function and frees it (no lock held). */
static void
request_complete (request *r)
{
  if (r->status == GPUNET_OK)
    r->done (r->user, GPUNET_OK, NULL, r->scores, r->n, r->k);
  else
    r->done (r->user, r->status, r->error_text, NULL, r->n, r->k);
  request_free (r);
}

static void
enter (gpunet_engine *e)
{
  if (e->params.enter)
    e->params.enter (e->params.hook_user);
}

static void
leave (gpunet_engine *e)
{
  if (e->params.leave)
    e->params.leave (e->params.hook_user);
}

/* Runs the images batch[0..m) in one call; when that fails, each request's images
 * again on their own, so one bad request never fails the others. */
static void
run_pass (worker *w, int m)
{
  gpunet_engine *e = w->e;
  int k = 1;
  for (int i = 0; i < m; i++)
    if (w->batch_req[i]->k > k)
      k = w->batch_req[i]->k;
  char *text = NULL;
  enter (e);
  gpunet_status st = gpunet_session_classify_each (w->session, w->batch, w->batch_pre, m, k,
      w->batch_out, &text);
  if (st == GPUNET_OK) {
    for (int i = 0; i < m; i++) {
      request *r = w->batch_req[i];
      memcpy (r->scores + (size_t) w->batch_idx[i] * r->k, w->batch_out + (size_t) i * k,
          sizeof (gpunet_class_score) * (size_t) r->k);
    }
  } else {
    /* retry per request: runs of consecutive images of one request */
    for (int i = 0, j; i < m; i = j) {
      request *r = w->batch_req[i];
      for (j = i + 1; j < m && w->batch_req[j] == r; j++);
      char *t = NULL;
      gpunet_status rs = m == j - i ? st
          : gpunet_session_classify_each (w->session, w->batch + i, w->batch_pre + i, j - i,
              r->k, w->batch_out, &t);
      if (rs == GPUNET_OK) {
        memcpy (r->scores + (size_t) w->batch_idx[i] * r->k, w->batch_out,
            sizeof (gpunet_class_score) * (size_t) r->k * (size_t) (j - i));
      } else {
        /* under the lock: another pass may hold r's other images and fail now too */
        pthread_mutex_lock (&e->lock);
        if (r->status == GPUNET_OK) {
          r->status = rs;
          r->error_text = m == j - i ? text : t;
          if (m == j - i)
            text = NULL;
          else
            t = NULL;
        }
        pthread_mutex_unlock (&e->lock);
      }
      free (t);
    }
  }
  leave (e);
  free (text);
}

static void *
worker_main (void *arg)
{
  worker *w = arg;
  gpunet_engine *e = w->e;
  pthread_mutex_lock (&e->lock);
  for (;;) {
    /* only requests with images left to take are work: a partly taken request whose
     * last images another worker holds is not */
    while ((!e->head || e->head->taken == e->head->n) && !e->stopping)
      pthread_cond_wait (&e->wake, &e->lock);
    if (!e->head)
      break;                    /* stopping with nothing queued */
    /* a partial batch waits for more images until its oldest has waited the timeout */
    if (e->params.batch_timeout_us > 0 && !e->stopping) {
      const int64_t deadline = e->head->queued_ns + e->params.batch_timeout_us * 1000;
      for (;;) {
        int queued = 0;
        for (request *r = e->head; r && queued < e->max_batch; r = r->next)
          queued += r->n - r->taken;
        if (queued >= e->max_batch || e->stopping || !e->head || e->kicked)
          break;
        int64_t t = now_ns ();
        if (t >= deadline)
          break;
        struct timespec ts;
        clock_gettime (CLOCK_REALTIME, &ts);
        int64_t wake_at = (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec + (deadline - t);
        ts.tv_sec = wake_at / 1000000000;
        ts.tv_nsec = wake_at % 1000000000;
        pthread_cond_timedwait (&e->wake, &e->lock, &ts);
      }
      if (!e->head)
        continue;               /* cancelled while waiting */
    }
    e->kicked = 0;
    /* take the oldest images, up to max_batch; a request joins the active list (in
     * submission order) when its first image is taken, and leaves the queue when its
     * last one is */
    int m = 0;
    request *r = e->head;
    while (r && m < e->max_batch) {
      if (r->taken == 0) {
        request **a = &e->active;
        while (*a)
          a = &(*a)->active_next;
        *a = r;
        r->active_next = NULL;
      }
      while (r->taken < r->n && m < e->max_batch) {
        w->batch[m] = r->images[r->taken];
        w->batch_pre[m] = r->pre;
        w->batch_req[m] = r;
        w->batch_idx[m] = r->taken++;
        m++;
      }
      r->running++;
      if (r->taken == r->n) {
        e->head = r->next;
        if (!e->head)
          e->tail = NULL;
        r->next = NULL;
        r = e->head;
      } else {
        break;                  /* the batch is full inside this request */
      }
    }
    if (m == 0)
      continue;
    e->running_passes++;
    if (e->running_passes > e->most_passes)
      e->most_passes = e->running_passes;
    /* another worker may start on what is left */
    if (e->head && e->head->taken < e->head->n)
      pthread_cond_signal (&e->wake);
    pthread_mutex_unlock (&e->lock);

    const int64_t pass_start = now_ns ();
    run_pass (w, m);
    const int64_t pass_ns = now_ns () - pass_start;

    /* completions run one worker at a time, oldest request first */
    pthread_mutex_lock (&e->complete_lock);
    pthread_mutex_lock (&e->lock);
    e->running_passes--;
    e->passes++;
    e->images += m;
    e->pass_ns += pass_ns;
    for (int i = 0; i < m; i++)
      w->batch_req[i]->finished++;
    for (int i = 0; i < m; i++)
      if (i == 0 || w->batch_req[i] != w->batch_req[i - 1])
        w->batch_req[i]->running--;
    /* one request at a time, its tag in w->completing while its done runs (cancel()
     * waits for it) */
    while (e->active && e->active->finished == e->active->n && e->active->running == 0) {
      request *d = e->active;
      e->active = d->active_next;
      d->active_next = NULL;
      w->completing = d->tag;
      w->is_completing = 1;
      pthread_mutex_unlock (&e->lock);
      request_complete (d);
      pthread_mutex_lock (&e->lock);
      w->is_completing = 0;
      pthread_cond_broadcast (&e->idle);
    }
    pthread_mutex_unlock (&e->complete_lock);
    pthread_cond_broadcast (&e->idle);
  }
  pthread_mutex_unlock (&e->lock);
  return NULL;
}

/* Frees what engine_new made, the workers stopped or never started. */
static void
engine_destroy (gpunet_engine *e)
{
  for (int i = 0; i < e->n_workers; i++) {
    worker *w = &e->workers[i];
    enter (e);
    gpunet_session_free (w->session);
    leave (e);
    free (w->batch);
    free (w->batch_pre);
    free (w->batch_out);
    free (w->batch_req);
    free (w->batch_idx);
  }
  free (e->workers);
  pthread_mutex_destroy (&e->lock);
  pthread_mutex_destroy (&e->complete_lock);
  pthread_cond_destroy (&e->wake);
  pthread_cond_destroy (&e->idle);
  free (e);
}

/* Stops and joins the workers started so far. */
static void
engine_stop (gpunet_engine *e)
{
  pthread_mutex_lock (&e->lock);
  e->stopping = 1;
  pthread_cond_broadcast (&e->wake);
  pthread_mutex_unlock (&e->lock);
  for (int i = 0; i < e->n_workers; i++)
    if (e->workers[i].started)
      pthread_join (e->workers[i].thread, NULL);
}

static gpunet_status
engine_new (gpunet_model *model, const gpunet_engine_params *params,
    const gpunet_backend *backend, gpunet_engine **out, char **error_text)
{
  if (!model || !out)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_engine_new needs a model and an output pointer");
  *out = NULL;
  gpunet_engine_params p;
  if (params)
    p = *params;
  else
    gpunet_engine_params_init (&p);
  if (p.batch_timeout_us < 0 || p.batch_timeout_us > 60 * 1000000LL)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch timeout %lld us is out of range (0 to 60 s)", (long long) p.batch_timeout_us);
  if (p.passes_in_flight < 0 || p.passes_in_flight > 4)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "%d passes in flight is out of range (1 to 4, or 0 for 1)", p.passes_in_flight);
  gpunet_engine *e = calloc (1, sizeof *e);
  if (!e)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory creating an engine");
  e->params = p;
  e->n_workers = p.passes_in_flight > 0 ? p.passes_in_flight : 1;
  e->max_batch = p.session.max_batch;
  e->k_max = gpunet_model_num_classes (model);
  pthread_mutex_init (&e->lock, NULL);
  pthread_mutex_init (&e->complete_lock, NULL);
  pthread_cond_init (&e->wake, NULL);
  pthread_cond_init (&e->idle, NULL);
  e->workers = calloc ((size_t) e->n_workers, sizeof *e->workers);
  if (!e->workers) {
    e->n_workers = 0;
    engine_destroy (e);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory creating an engine");
  }
  /* every session first, so a session that cannot be made fails before any thread runs */
  for (int i = 0; i < e->n_workers; i++) {
    worker *w = &e->workers[i];
    w->e = e;
    enter (e);
    gpunet_status st = backend
        ? gpunet_session_new_on (model, &e->params.session, backend, &w->session, error_text)
        : gpunet_session_new (model, &e->params.session, &w->session, error_text);
    leave (e);
    if (st != GPUNET_OK) {
      engine_destroy (e);
      return st;
    }
    w->batch = calloc ((size_t) e->max_batch, sizeof *w->batch);
    w->batch_pre = calloc ((size_t) e->max_batch, sizeof *w->batch_pre);
    w->batch_out = calloc ((size_t) e->max_batch * (size_t) e->k_max, sizeof *w->batch_out);
    w->batch_req = calloc ((size_t) e->max_batch, sizeof *w->batch_req);
    w->batch_idx = calloc ((size_t) e->max_batch, sizeof *w->batch_idx);
    if (!w->batch || !w->batch_pre || !w->batch_out || !w->batch_req || !w->batch_idx) {
      engine_destroy (e);
      return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory creating an engine");
    }
  }
  e->params.session.int8_scales = NULL;   /* read by the sessions above, not kept */

  for (int i = 0; i < e->n_workers; i++) {
    if (pthread_create (&e->workers[i].thread, NULL, worker_main, &e->workers[i]) != 0) {
      engine_stop (e);
      engine_destroy (e);
      return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY,
          "cannot start the engine's worker threads (out of memory or threads)");
    }
    e->workers[i].started = 1;
  }
  *out = e;
  return GPUNET_OK;
}

gpunet_status
gpunet_engine_new (gpunet_model *model, const gpunet_engine_params *params,
    gpunet_engine **out, char **error_text)
{
  return engine_new (model, params, NULL, out, error_text);
}

gpunet_status
gpunet_engine_new_on (gpunet_model *model, const gpunet_engine_params *params,
    const gpunet_backend *backend, gpunet_engine **out, char **error_text)
{
  if (!backend)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_engine_new_on needs a backend");
  return engine_new (model, params, backend, out, error_text);
}

gpunet_status
gpunet_engine_submit (gpunet_engine *e, const gpunet_image *images, int n,
    const gpunet_preprocess_params *pre, int k, const void *tag,
    gpunet_engine_done_func done, void *user, char **error_text)
{
  if (!e || !images || !done)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_engine_submit needs an engine, images and a completion function");
  if (n > 65536)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "a request of %d images is too large (at most 65536)", n);
  /* the session's fields read here (model, backend) never change after creation */
  gpunet_status st = gpunet_session_check_images (e->workers[0].session, images, n, pre, k,
      error_text);
  if (st != GPUNET_OK)
    return st;
  request *r = calloc (1, sizeof *r);
  if (r) {
    r->images = malloc (sizeof *r->images * (size_t) n);
    r->scores = malloc (sizeof *r->scores * (size_t) n * (size_t) k);
  }
  if (!r || !r->images || !r->scores) {
    if (r)
      request_free (r);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory queueing %d images", n);
  }
  memcpy (r->images, images, sizeof *images * (size_t) n);
  if (pre)
    r->pre = *pre;
  r->n = n;
  r->k = k;
  r->tag = tag;
  r->done = done;
  r->user = user;
  r->queued_ns = now_ns ();
  pthread_mutex_lock (&e->lock);
  if (e->tail)
    e->tail->next = r;
  else
    e->head = r;
  e->tail = r;
  pthread_cond_signal (&e->wake);
  pthread_mutex_unlock (&e->lock);
  return GPUNET_OK;
}

void
gpunet_engine_cancel (gpunet_engine *e, const void *tag)
{
  if (!e)
    return;
  request *cancelled = NULL, **ctail = &cancelled;
  pthread_mutex_lock (&e->lock);
  /* queued requests not started yet leave the queue; a partly taken one must finish */
  request **p = &e->head;
  e->tail = NULL;
  while (*p) {
    request *r = *p;
    if (r->tag == tag && r->taken == 0) {
      *p = r->next;
      r->next = NULL;
      *ctail = r;
      ctail = &r->next;
    } else {
      e->tail = r;
      p = &r->next;
    }
  }
  /* wait until no request of `tag` is queued or running */
  for (;;) {
    int busy = 0;
    for (request *r = e->head; r && !busy; r = r->next)
      busy = r->tag == tag;
    for (request *r = e->active; r && !busy; r = r->active_next)
      busy = r->tag == tag;
    for (int w = 0; w < e->n_workers && !busy; w++)
      busy = e->workers[w].is_completing && e->workers[w].completing == tag;
    if (!busy)
      break;
    pthread_cond_wait (&e->idle, &e->lock);
  }
  pthread_mutex_unlock (&e->lock);
  while (cancelled) {
    request *r = cancelled;
    cancelled = r->next;
    r->status = GPUNET_ERR_CANCELLED;
    request_complete (r);
  }
}

void
gpunet_engine_free (gpunet_engine *e)
{
  if (!e)
    return;
  engine_stop (e);
  engine_destroy (e);
}

const char *
gpunet_engine_backend_name (const gpunet_engine *e)
{
  return gpunet_session_backend_name (e->workers[0].session);
}

const gpunet_model *
gpunet_engine_model (const gpunet_engine *e)
{
  return e->workers[0].session->model;
}

int
gpunet_engine_max_batch (const gpunet_engine *e)
{
  return e->max_batch;
}

void
gpunet_engine_kick (gpunet_engine *e)
{
  if (!e)
    return;
  pthread_mutex_lock (&e->lock);
  /* only for what is queued now: a kick with nothing queued must not cut short the
   * wait of a batch that starts later */
  if (e->head) {
    e->kicked = 1;
    pthread_cond_broadcast (&e->wake);
  }
  pthread_mutex_unlock (&e->lock);
}

int
gpunet_engine_most_passes (gpunet_engine *e)
{
  pthread_mutex_lock (&e->lock);
  const int most = e->most_passes;
  pthread_mutex_unlock (&e->lock);
  return most;
}

void
gpunet_engine_stats (gpunet_engine *e, int64_t *passes, int64_t *images)
{
  pthread_mutex_lock (&e->lock);
  if (passes)
    *passes = e->passes;
  if (images)
    *images = e->images;
  pthread_mutex_unlock (&e->lock);
}

int
gpunet_engine_waiting (gpunet_engine *e)
{
  int n = 0;
  pthread_mutex_lock (&e->lock);
  for (request *r = e->head; r; r = r->next)
    n += r->n - r->taken;
  pthread_mutex_unlock (&e->lock);
  return n;
}

double
gpunet_engine_mean_pass_ms (gpunet_engine *e)
{
  double ms = 0.0;
  pthread_mutex_lock (&e->lock);
  if (e->passes > 0)
    ms = (double) e->pass_ns / (double) e->passes / 1e6;
  pthread_mutex_unlock (&e->lock);
  return ms;
}

int
gpunet_engine_idle_passes (gpunet_engine *e)
{
  pthread_mutex_lock (&e->lock);
  const int idle = e->n_workers - e->running_passes;
  pthread_mutex_unlock (&e->lock);
  return idle > 0 ? idle : 0;
}
