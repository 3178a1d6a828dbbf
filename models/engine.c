/* engine.c: gpunet_engine, one session behind a request queue and a worker thread.
 * Producers submit requests (images + a completion function); the worker takes the
 * oldest queued images of any requests, up to the session's max_batch (waiting up to
 * batch_timeout_us for a partial batch to fill), classifies them in one call and
 * completes the requests whose images are all done, oldest first. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "model_private.h"
#include "session_private.h"

typedef struct request request;
struct request {
  request *next;
  const void *tag;
  gpunet_engine_done_func done;
  void *user;
  int n, k;
  int taken;                   /* images handed to a pass so far */
  int finished;                /* images whose pass has returned */
  int running;                 /* passes holding images of this request */
  gpunet_status status;        /* the first failure of a pass, else GPUNET_OK */
  char *error_text;
  gpunet_image *images;        /* n */
  gpunet_preprocess_params pre;
  gpunet_class_score *scores;  /* n x k */
  int64_t queued_ns;
};

struct gpunet_engine {
  gpunet_session *session;
  gpunet_engine_params params;
  int max_batch;
  int k_max;                   /* the largest k any request may ask */

  pthread_mutex_t lock;
  pthread_cond_t wake;         /* worker: work queued or stopping */
  pthread_cond_t idle;         /* cancel: a pass finished */
  pthread_t worker;
  int stopping;
  request *head, *tail;        /* queued or partly taken, oldest first */
  request *active;             /* requests of the pass being run, in pass order */
  const void **completing;     /* tags of the requests whose done runs now */
  int n_completing;
  int64_t passes, images;

  /* the pass's scratch: worker only */
  gpunet_image *batch;
  gpunet_preprocess_params *batch_pre;
  gpunet_class_score *batch_out;
  request **batch_req;         /* which request each image belongs to */
  int *batch_idx;              /* its index there */
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
run_pass (gpunet_engine *e, int m)
{
  int k = 1;
  for (int i = 0; i < m; i++)
    if (e->batch_req[i]->k > k)
      k = e->batch_req[i]->k;
  char *text = NULL;
  enter (e);
  gpunet_status st = gpunet_session_classify_each (e->session, e->batch, e->batch_pre, m, k,
      e->batch_out, &text);
  if (st == GPUNET_OK) {
    for (int i = 0; i < m; i++) {
      request *r = e->batch_req[i];
      memcpy (r->scores + (size_t) e->batch_idx[i] * r->k, e->batch_out + (size_t) i * k,
          sizeof (gpunet_class_score) * (size_t) r->k);
    }
  } else {
    /* retry per request: runs of consecutive images of one request */
    for (int i = 0, j; i < m; i = j) {
      request *r = e->batch_req[i];
      for (j = i + 1; j < m && e->batch_req[j] == r; j++);
      char *t = NULL;
      gpunet_status rs = m == j - i ? st
          : gpunet_session_classify_each (e->session, e->batch + i, e->batch_pre + i, j - i,
              r->k, e->batch_out, &t);
      if (rs == GPUNET_OK) {
        memcpy (r->scores + (size_t) e->batch_idx[i] * r->k, e->batch_out,
            sizeof (gpunet_class_score) * (size_t) r->k * (size_t) (j - i));
      } else if (r->status == GPUNET_OK) {
        r->status = rs;
        r->error_text = m == j - i ? text : t;
        if (m == j - i)
          text = NULL;
        else
          t = NULL;
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
  gpunet_engine *e = arg;
  pthread_mutex_lock (&e->lock);
  for (;;) {
    while (!e->head && !e->stopping)
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
        if (queued >= e->max_batch || e->stopping || !e->head)
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
    /* take the oldest images, up to max_batch */
    int m = 0;
    request *r = e->head;
    while (r && m < e->max_batch) {
      while (r->taken < r->n && m < e->max_batch) {
        e->batch[m] = r->images[r->taken];
        e->batch_pre[m] = r->pre;
        e->batch_req[m] = r;
        e->batch_idx[m] = r->taken++;
        m++;
      }
      r->running++;
      if (r->taken == r->n) {
        /* fully taken: leaves the queue for the active list */
        e->head = r->next;
        if (!e->head)
          e->tail = NULL;
        r->next = NULL;
        request **a = &e->active;
        while (*a)
          a = &(*a)->next;
        *a = r;
        r = e->head;
      } else {
        break;                  /* the batch is full inside this request */
      }
    }
    pthread_mutex_unlock (&e->lock);

    run_pass (e, m);

    pthread_mutex_lock (&e->lock);
    e->passes++;
    e->images += m;
    /* count finished images; complete fully finished active requests, oldest first */
    for (int i = 0; i < m; i++)
      e->batch_req[i]->finished++;
    for (int i = 0; i < m; i++)
      if (i == 0 || e->batch_req[i] != e->batch_req[i - 1])
        e->batch_req[i]->running--;
    request *done_list = NULL, **done_tail = &done_list;
    e->n_completing = 0;
    while (e->active && e->active->finished == e->active->n && e->active->running == 0) {
      request *d = e->active;
      e->active = d->next;
      d->next = NULL;
      *done_tail = d;
      done_tail = &d->next;
      e->completing[e->n_completing++] = d->tag;
    }
    pthread_mutex_unlock (&e->lock);
    /* cancel() waits for these tags until their done functions returned */
    while (done_list) {
      request *d = done_list;
      done_list = d->next;
      request_complete (d);
    }
    pthread_mutex_lock (&e->lock);
    e->n_completing = 0;
    pthread_cond_broadcast (&e->idle);
  }
  pthread_mutex_unlock (&e->lock);
  return NULL;
}

/* Frees what gpunet_engine_new made, the worker stopped or never started. */
static void
engine_destroy (gpunet_engine *e)
{
  enter (e);
  gpunet_session_free (e->session);
  leave (e);
  pthread_mutex_destroy (&e->lock);
  pthread_cond_destroy (&e->wake);
  pthread_cond_destroy (&e->idle);
  free (e->batch);
  free (e->batch_pre);
  free (e->batch_out);
  free (e->batch_req);
  free (e->batch_idx);
  free (e->completing);
  free (e);
}

gpunet_status
gpunet_engine_new (gpunet_model *model, const gpunet_engine_params *params,
    gpunet_engine **out, char **error_text)
{
  if (!model || !out)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "gpunet_engine_new needs a model and an output pointer");
  *out = NULL;
  gpunet_engine *e = calloc (1, sizeof *e);
  if (!e)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory creating an engine");
  if (params)
    e->params = *params;
  else
    gpunet_engine_params_init (&e->params);
  if (e->params.batch_timeout_us < 0 || e->params.batch_timeout_us > 60 * 1000000LL) {
    int64_t t = e->params.batch_timeout_us;
    free (e);
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT,
        "batch timeout %lld us is out of range (0 to 60 s)", (long long) t);
  }
  enter (e);
  gpunet_status st = gpunet_session_new (model, &e->params.session, &e->session, error_text);
  leave (e);
  if (st != GPUNET_OK) {
    free (e);
    return st;
  }
  e->max_batch = e->params.session.max_batch;
  e->k_max = gpunet_model_num_classes (model);
  e->batch = calloc ((size_t) e->max_batch, sizeof *e->batch);
  e->batch_pre = calloc ((size_t) e->max_batch, sizeof *e->batch_pre);
  e->batch_out = calloc ((size_t) e->max_batch * (size_t) e->k_max, sizeof *e->batch_out);
  e->batch_req = calloc ((size_t) e->max_batch, sizeof *e->batch_req);
  e->batch_idx = calloc ((size_t) e->max_batch, sizeof *e->batch_idx);
  /* a pass completes at most max_batch requests */
  e->completing = calloc ((size_t) e->max_batch + 1, sizeof *e->completing);
  pthread_mutex_init (&e->lock, NULL);
  pthread_cond_init (&e->wake, NULL);
  pthread_cond_init (&e->idle, NULL);
  if (!e->batch || !e->batch_pre || !e->batch_out || !e->batch_req || !e->batch_idx
      || !e->completing || pthread_create (&e->worker, NULL, worker_main, e) != 0) {
    engine_destroy (e);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY,
        "cannot start the engine's worker thread (out of memory or threads)");
  }
  *out = e;
  return GPUNET_OK;
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
  gpunet_status st = gpunet_session_check_images (e->session, images, n, pre, k, error_text);
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
    for (request *r = e->active; r && !busy; r = r->next)
      busy = r->tag == tag;
    for (int i = 0; i < e->n_completing && !busy; i++)
      busy = e->completing[i] == tag;
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
  pthread_mutex_lock (&e->lock);
  e->stopping = 1;
  pthread_cond_broadcast (&e->wake);
  pthread_mutex_unlock (&e->lock);
  pthread_join (e->worker, NULL);
  engine_destroy (e);
}

const char *
gpunet_engine_backend_name (const gpunet_engine *e)
{
  return gpunet_session_backend_name (e->session);
}

const gpunet_model *
gpunet_engine_model (const gpunet_engine *e)
{
  return e->session->model;
}

int
gpunet_engine_max_batch (const gpunet_engine *e)
{
  return e->max_batch;
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
