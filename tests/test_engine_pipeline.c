/* test_engine_pipeline.c: the engine with several passes in flight (passes_in_flight),
 * on a fake backend whose passes take 0 to 6 ms depending on their images, so later
 * passes often finish first: every request completes exactly once, in submission
 * order, with the results a session gives each image alone; nothing is lost when the
 * engine is freed with requests still queued (the element's flush and EOS); cancel
 * waits for passes in flight; gpunet_engine_waiting counts the images not yet in a
 * pass; never more passes in a session call than configured, and
 * with enough work queued, that many at once; a failing pass fails only its requests. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "gpunet.h"
#include "session_private.h"

/* ---- the fake backend: logits one-hot at a class the image's first input value
 * picks; a pass sleeps as long as its first image says ---- */

typedef struct {
  int classes, plane;
} fake_state;

static atomic_int in_call, most_in_call, calls;
/* Passes the first pass of a test waits for (0: none): it waits, up to 5 s, until that
 * many run at once, so that a slow machine (an emulated CPU, a loaded host) still sees
 * the pipeline fill, where the engine lets that many run. */
static atomic_int meet;

static gpunet_status
fake_plan (const gpunet_graph *g, const gpunet_plan_params *params, void **state,
    char **error_text)
{
  (void) params;
  (void) error_text;
  fake_state *s = malloc (sizeof *s);
  s->classes = g->tensors[g->output].c;
  s->plane = 3 * g->tensors[g->input].h * g->tensors[g->input].w;
  *state = s;
  return GPUNET_OK;
}

static int
fake_class (float x, int classes)
{
  const int v = (int) ((x + 10.0f) * 37.0f);
  return (v % classes + classes) % classes;
}

static gpunet_status
fake_forward (void *state, const float *input, int n, float *logits, gpunet_trace_func trace,
    void *trace_user, char **error_text)
{
  (void) trace;
  (void) trace_user;
  (void) error_text;
  const fake_state *s = state;
  const int now = atomic_fetch_add (&in_call, 1) + 1;
  int most = atomic_load (&most_in_call);
  while (now > most && !atomic_compare_exchange_weak (&most_in_call, &most, now));
  atomic_fetch_add (&calls, 1);
  if (atomic_load (&meet) > 1) {
    const struct timespec ms = { 0, 1000000L };
    for (int i = 0; i < 5000 && atomic_load (&in_call) < atomic_load (&meet); i++)
      nanosleep (&ms, NULL);
    atomic_store (&meet, 0);
  }
  const struct timespec ts = { 0, 2000000L * (fake_class (input[0], 4) % 4) };
  nanosleep (&ts, NULL);
  for (int j = 0; j < n; j++) {
    const int id = fake_class (input[(size_t) j * s->plane], s->classes);
    for (int c = 0; c < s->classes; c++)
      logits[(size_t) j * s->classes + c] = c == id ? 8.0f : 0.0f;
  }
  atomic_fetch_sub (&in_call, 1);
  return GPUNET_OK;
}

static void
fake_destroy (void *state)
{
  free (state);
}

static const gpunet_backend fake_backend = {
  .name = "fake-timed", .plan = fake_plan, .forward = fake_forward, .destroy = fake_destroy,
};

/* The same fake, failing every pass that holds a white frame (input above 2: the
 * preprocess maps 255 to about 2.2, 0 to about -2); such passes wait, up to 5 s, until
 * two of them run at once, so two workers fail the same request together. */
static atomic_int failing_in_call;

static gpunet_status
failing_forward (void *state, const float *input, int n, float *logits, gpunet_trace_func trace,
    void *trace_user, char **error_text)
{
  const fake_state *s = state;
  int white = 0;
  for (int j = 0; j < n; j++)
    white |= input[(size_t) j * s->plane] > 2.0f;
  if (!white)
    return fake_forward (state, input, n, logits, trace, trace_user, error_text);
  atomic_fetch_add (&failing_in_call, 1);
  const struct timespec ms = { 0, 1000000L };
  for (int i = 0; i < 5000 && atomic_load (&failing_in_call) < 2; i++)
    nanosleep (&ms, NULL);
  if (error_text)
    *error_text = strdup ("fake failure of a white frame");
  return GPUNET_ERR_BACKEND;
}

static const gpunet_backend failing_backend = {
  .name = "fake-failing", .plan = fake_plan, .forward = failing_forward,
  .destroy = fake_destroy,
};

/* ---- requests ---- */

#define N_REQ 120
#define K 2

typedef struct {
  pthread_mutex_t lock;
  int order[N_REQ];
  int times[N_REQ];
  int n_done;
  gpunet_status status[N_REQ];
  gpunet_class_score scores[N_REQ][3 * K];
} sink;

typedef struct {
  sink *s;
  int id;
} ticket;

static void
on_done (void *user, gpunet_status st, const char *text, const gpunet_class_score *scores,
    int n, int k)
{
  ticket *t = user;
  (void) text;
  if (t->id % 7 == 0) {
    /* a slow completion: another worker completing meanwhile would overtake it */
    const struct timespec ts = { 0, 1000000L };
    nanosleep (&ts, NULL);
  }
  pthread_mutex_lock (&t->s->lock);
  t->s->order[t->s->n_done++] = t->id;
  t->s->times[t->id]++;
  t->s->status[t->id] = st;
  if (st == GPUNET_OK)
    memcpy (t->s->scores[t->id], scores, sizeof *scores * (size_t) n * (size_t) k);
  pthread_mutex_unlock (&t->s->lock);
}

/* A solid grey RGB frame: its level sets the fake class and the pass's sleep. */
static uint8_t frames[N_REQ][3][8 * 8 * 3];
static gpunet_image images[N_REQ][3];

static void
make_frames (void)
{
  for (int r = 0; r < N_REQ; r++)
    for (int i = 0; i < 3; i++) {
      memset (frames[r][i], (int) ((r * 29 + i * 71) % 256), sizeof frames[r][i]);
      gpunet_image *im = &images[r][i];
      memset (im, 0, sizeof *im);
      im->width = im->height = 8;
      im->format = GPUNET_FORMAT_RGB;
      im->planes[0] = frames[r][i];
      im->strides[0] = 8 * 3;
    }
}

static int
req_images (int r)
{
  return 1 + r % 3;
}

static gpunet_model *
load_fixture (void)
{
  char arch[1024], ckpt[1024];
  snprintf (arch, sizeof arch, "%s/fixtures/tiny-a.json", check_data_dir ());
  snprintf (ckpt, sizeof ckpt, "%s/fixtures/tiny-a/tiny-a.pth.tar", check_data_dir ());
  gpunet_model *m = NULL;
  char *err = NULL;
  gpunet_status st = gpunet_model_load (arch, ckpt, &m, &err);
  CHECK_MSG (st == GPUNET_OK, "%s", err ? err : "?");
  free (err);
  return m;
}

/* The top-K of every image of every request from a batch-1 session on the fake. */
static gpunet_class_score expected[N_REQ][3 * K];

static void
compute_expected (gpunet_model *m)
{
  gpunet_session_params sp;
  gpunet_session_params_init (&sp);
  gpunet_session *s = NULL;
  char *err = NULL;
  CHECK_MSG (gpunet_session_new_on (m, &sp, &fake_backend, &s, &err) == GPUNET_OK, "%s",
      err ? err : "?");
  for (int r = 0; s && r < N_REQ; r++)
    for (int i = 0; i < req_images (r); i++)
      CHECK (gpunet_session_classify (s, &images[r][i], 1, NULL, K, &expected[r][i * K], &err)
          == GPUNET_OK);
  gpunet_session_free (s);
  free (err);
}

static gpunet_engine *
make_engine (gpunet_model *m, int in_flight, int max_batch)
{
  gpunet_engine_params p;
  gpunet_engine_params_init (&p);
  p.session.max_batch = max_batch;
  p.passes_in_flight = in_flight;
  gpunet_engine *e = NULL;
  char *err = NULL;
  CHECK_MSG (gpunet_engine_new_on (m, &p, &fake_backend, &e, &err) == GPUNET_OK, "%s",
      err ? err : "?");
  free (err);
  return e;
}

/* Everything submitted at once, then the engine freed (a flush): all requests complete
 * once, in order, with the expected results. */
static void
test_order_and_flush (gpunet_model *m, int in_flight, int max_batch)
{
  sink s = { .lock = PTHREAD_MUTEX_INITIALIZER };
  ticket t[N_REQ];
  atomic_store (&most_in_call, 0);
  atomic_store (&calls, 0);
  atomic_store (&meet, in_flight);
  gpunet_engine *e = make_engine (m, in_flight, max_batch);
  if (!e)
    return;
  for (int r = 0; r < N_REQ; r++) {
    t[r] = (ticket) { &s, r };
    char *err = NULL;
    CHECK (gpunet_engine_submit (e, images[r], req_images (r), NULL, K, &t[r % 4], on_done,
        &t[r], &err) == GPUNET_OK);
    free (err);
  }
  const int most = gpunet_engine_most_passes (e);
  gpunet_engine_free (e);   /* runs what is queued */
  CHECK_MSG (s.n_done == N_REQ, "%d of %d requests completed (in flight %d, batch %d)",
      s.n_done, N_REQ, in_flight, max_batch);
  int in_order = 1, once = 1, same = 1;
  for (int i = 0; i < s.n_done; i++)
    in_order &= s.order[i] == i;
  for (int r = 0; r < N_REQ; r++) {
    once &= s.times[r] == 1 && s.status[r] == GPUNET_OK;
    for (int j = 0; j < req_images (r) * K; j++)
      same &= s.scores[r][j].id == expected[r][j].id && s.scores[r][j].score == expected[r][j].score;
  }
  CHECK_MSG (in_order, "requests completed out of submission order (in flight %d, batch %d)",
      in_flight, max_batch);
  CHECK_MSG (once, "a request completed twice, never, or failed (in flight %d)", in_flight);
  CHECK_MSG (same, "results differ from each image alone (in flight %d, batch %d)", in_flight,
      max_batch);
  const int seen = atomic_load (&most_in_call);
  CHECK_MSG (seen <= in_flight && most <= in_flight,
      "%d passes ran at once, %d configured", seen > most ? seen : most, in_flight);
  /* 120 requests of 1-3 images keep every worker busy: the pipeline fills */
  CHECK_MSG (seen == in_flight, "only %d of %d passes ran at once", seen, in_flight);
}

/* A failing pass fails only its requests: a request of two white frames split over
 * two passes that fail at the same time completes once, with the failure and its
 * sentence (each pass records it under the engine's lock: ThreadSanitizer saw the two
 * workers write the request's status at once); the requests around it succeed, and
 * everything completes in submission order. */
typedef struct {
  pthread_mutex_t lock;
  int order[8], times[8], n_done, has_text[8];
  gpunet_status status[8];
} fail_sink;

typedef struct {
  fail_sink *s;
  int id;
} fail_ticket;

static void
on_fail_done (void *user, gpunet_status st, const char *text, const gpunet_class_score *scores,
    int n, int k)
{
  fail_ticket *t = user;
  (void) scores;
  (void) n;
  (void) k;
  pthread_mutex_lock (&t->s->lock);
  t->s->order[t->s->n_done++] = t->id;
  t->s->times[t->id]++;
  t->s->status[t->id] = st;
  t->s->has_text[t->id] = text != NULL && strstr (text, "white frame") != NULL;
  pthread_mutex_unlock (&t->s->lock);
}

static void
test_failing_pass (gpunet_model *m)
{
  static uint8_t white[2][8 * 8 * 3], black[8 * 8 * 3];
  memset (white, 255, sizeof white);
  memset (black, 0, sizeof black);
  gpunet_image w[2], b;
  for (int i = 0; i < 2; i++) {
    memset (&w[i], 0, sizeof w[i]);
    w[i].width = w[i].height = 8;
    w[i].format = GPUNET_FORMAT_RGB;
    w[i].planes[0] = white[i];
    w[i].strides[0] = 8 * 3;
  }
  b = w[0];
  b.planes[0] = black;
  fail_sink s = { .lock = PTHREAD_MUTEX_INITIALIZER };
  fail_ticket t[8];
  for (int i = 0; i < 8; i++)
    t[i] = (fail_ticket) { &s, i };
  gpunet_engine_params p;
  gpunet_engine_params_init (&p);
  p.session.max_batch = 1;
  p.passes_in_flight = 2;
  gpunet_engine *e = NULL;
  char *err = NULL;
  CHECK_MSG (gpunet_engine_new_on (m, &p, &failing_backend, &e, &err) == GPUNET_OK, "%s",
      err ? err : "?");
  free (err);
  if (!e)
    return;
  for (int round = 0; round < 2; round++) {
    atomic_store (&failing_in_call, 0);
    /* request 4 * round: two white frames, one pass each; then three black ones */
    CHECK (gpunet_engine_submit (e, w, 2, NULL, K, &s, on_fail_done, &t[4 * round], NULL)
        == GPUNET_OK);
    for (int i = 1; i < 4; i++)
      CHECK (gpunet_engine_submit (e, &b, 1, NULL, K, &s, on_fail_done, &t[4 * round + i],
          NULL) == GPUNET_OK);
    int done = 0;
    for (int i = 0; i < 500 && done < 4 * (round + 1); i++) {   /* at most 5 s */
      const struct timespec ts = { 0, 10000000L };
      nanosleep (&ts, NULL);
      pthread_mutex_lock (&s.lock);
      done = s.n_done;
      pthread_mutex_unlock (&s.lock);
    }
  }
  gpunet_engine_free (e);
  CHECK_MSG (s.n_done == 8, "%d of 8 requests completed", s.n_done);
  for (int i = 0; i < s.n_done; i++)
    CHECK_MSG (s.order[i] == i, "request %d completed as number %d", s.order[i], i);
  for (int i = 0; i < 8; i++) {
    CHECK_MSG (s.times[i] == 1, "request %d completed %d times", i, s.times[i]);
    if (i % 4 == 0)
      CHECK_MSG (s.status[i] == GPUNET_ERR_BACKEND && s.has_text[i],
          "the white request %d: status %d, its sentence %s", i, (int) s.status[i],
          s.has_text[i] ? "given" : "missing");
    else
      CHECK_MSG (s.status[i] == GPUNET_OK, "black request %d failed (%d) beside a failing pass",
          i, (int) s.status[i]);
  }
}

/* Requests from several threads while cancel withdraws one tag's: cancel returns only
 * when none of that tag's requests is queued, running or completing, and every other
 * request completes once, in order of submission per thread. */
typedef struct {
  gpunet_engine *e;
  sink *s;
  ticket *t;
  int first, count;
  const void *tag;
} producer;

static void *
produce (void *arg)
{
  producer *p = arg;
  for (int r = p->first; r < p->first + p->count; r++) {
    char *err = NULL;
    gpunet_engine_submit (p->e, images[r], req_images (r), NULL, K, p->tag, on_done, &p->t[r],
        &err);
    free (err);
  }
  return NULL;
}

static void
test_cancel (gpunet_model *m)
{
  sink s = { .lock = PTHREAD_MUTEX_INITIALIZER };
  ticket t[N_REQ];
  for (int r = 0; r < N_REQ; r++)
    t[r] = (ticket) { &s, r };
  gpunet_engine *e = make_engine (m, 3, 4);
  if (!e)
    return;
  static const char tags[3] = { 'a', 'b', 'c' };
  producer p[3];
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    p[i] = (producer) { e, &s, t, i * (N_REQ / 3), N_REQ / 3, &tags[i] };
    pthread_create (&th[i], NULL, produce, &p[i]);
  }
  pthread_join (th[1], NULL);
  gpunet_engine_cancel (e, &tags[1]);
  /* nothing of tag b runs or waits now: its requests have all had their done */
  pthread_mutex_lock (&s.lock);
  int b_done = 0;
  for (int r = N_REQ / 3; r < 2 * N_REQ / 3; r++)
    b_done += s.times[r];
  pthread_mutex_unlock (&s.lock);
  CHECK_MSG (b_done == N_REQ / 3, "cancel returned with %d of %d requests of its tag done",
      b_done, N_REQ / 3);
  pthread_join (th[0], NULL);
  pthread_join (th[2], NULL);
  gpunet_engine_free (e);
  int once = 1;
  for (int r = 0; r < N_REQ; r++)
    once &= s.times[r] == 1;
  CHECK_MSG (once, "a request completed twice or never around cancel");
  /* per producer, completions in submission order */
  for (int i = 0; i < 3; i++) {
    int last = -1, ordered = 1;
    for (int j = 0; j < s.n_done; j++) {
      const int r = s.order[j];
      if (r / (N_REQ / 3) != i)
        continue;
      ordered &= r > last;
      last = r;
    }
    CHECK_MSG (ordered, "producer %d's requests completed out of order", i);
  }
}

/* gpunet_engine_kick: a partial batch waiting for a long timeout runs at once. */
static void
test_kick (gpunet_model *m)
{
  sink s = { .lock = PTHREAD_MUTEX_INITIALIZER };
  ticket t = { &s, 0 };
  gpunet_engine_params p;
  gpunet_engine_params_init (&p);
  p.session.max_batch = 8;
  p.batch_timeout_us = 30 * 1000000LL;
  gpunet_engine *e = NULL;
  char *err = NULL;
  CHECK_MSG (gpunet_engine_new_on (m, &p, &fake_backend, &e, &err) == GPUNET_OK, "%s",
      err ? err : "?");
  free (err);
  if (!e)
    return;
  CHECK (gpunet_engine_submit (e, images[1], 1, NULL, K, &t, on_done, &t, NULL) == GPUNET_OK);
  gpunet_engine_kick (e);
  int done = 0;
  for (int i = 0; i < 500 && !done; i++) {   /* at most 5 s of the 30 */
    const struct timespec ts = { 0, 10000000L };
    nanosleep (&ts, NULL);
    pthread_mutex_lock (&s.lock);
    done = s.n_done;
    pthread_mutex_unlock (&s.lock);
  }
  CHECK_MSG (done == 1, "a kicked partial batch still waited for its timeout");
  gpunet_engine_free (e);
  gpunet_engine_kick (NULL);   /* harmless */
}

/* gpunet_engine_waiting: the images queued and not taken by a pass (a partial batch
 * held by its timeout), of every request; none once they are withdrawn.  The
 * worker waiting for the batch is an idle pass. */
static void
test_waiting (gpunet_model *m)
{
  sink s = { .lock = PTHREAD_MUTEX_INITIALIZER };
  ticket t[2] = { { &s, 0 }, { &s, 1 } };
  gpunet_engine_params p;
  gpunet_engine_params_init (&p);
  p.session.max_batch = 8;
  p.batch_timeout_us = 30 * 1000000LL;
  gpunet_engine *e = NULL;
  char *err = NULL;
  CHECK_MSG (gpunet_engine_new_on (m, &p, &fake_backend, &e, &err) == GPUNET_OK, "%s",
      err ? err : "?");
  free (err);
  if (!e)
    return;
  CHECK (gpunet_engine_waiting (e) == 0);
  CHECK (gpunet_engine_idle_passes (e) == 1);
  CHECK (gpunet_engine_submit (e, images[1], 1, NULL, K, &s, on_done, &t[0], NULL)
      == GPUNET_OK);
  CHECK (gpunet_engine_submit (e, images[2], 2, NULL, K, &s, on_done, &t[1], NULL)
      == GPUNET_OK);
  CHECK_MSG (gpunet_engine_waiting (e) == 3, "%d images waiting, 3 queued",
      gpunet_engine_waiting (e));
  /* the worker waits for the batch to fill: in no pass */
  CHECK (gpunet_engine_idle_passes (e) == 1);
  gpunet_engine_cancel (e, &s);
  CHECK (gpunet_engine_waiting (e) == 0 && s.n_done == 2);
  gpunet_engine_free (e);
}

int
main (void)
{
  gpunet_model *m = load_fixture ();
  if (!m)
    return check_report ();
  make_frames ();
  compute_expected (m);
  for (int in_flight = 1; in_flight <= 3; in_flight++)
    for (int batch = 1; batch <= 8; batch *= 2)
      test_order_and_flush (m, in_flight, batch);
  test_cancel (m);
  test_failing_pass (m);
  test_kick (m);
  test_waiting (m);
  /* out of range is refused with a sentence */
  gpunet_engine_params p;
  gpunet_engine_params_init (&p);
  p.passes_in_flight = 5;
  gpunet_engine *e = NULL;
  char *err = NULL;
  CHECK (gpunet_engine_new_on (m, &p, &fake_backend, &e, &err) == GPUNET_ERR_INVALID_ARGUMENT
      && e == NULL);
  CHECK_CONTAINS (err, "passes in flight");
  free (err);
  gpunet_model_unref (m);
  return check_report ();
}
