/* test_engine.c: gpunet_engine (models/engine.c) on the CPU backend with the tiny-a
 * fixture: results through the engine are the bits of a session classifying each
 * request alone, whatever shares a pass (sizes and formats mixed, requests spread over
 * passes); a timeout gathers requests into fewer passes; requests complete in order
 * from many threads; a bad frame fails its own submission only; cancel withdraws
 * queued requests and returns only once none of them runs; all with one pass in flight
 * and with two. */
#include <pthread.h>
#include <stdint.h>

#include "check.h"
#include "gpunet.h"

#define K 5
#define MAX_REQ 256

typedef struct {
  pthread_mutex_t lock;
  int order[MAX_REQ];     /* completion order (request numbers) */
  int n_done;
  gpunet_status status[MAX_REQ];
  gpunet_class_score scores[MAX_REQ][4 * K];
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
  pthread_mutex_lock (&t->s->lock);
  t->s->order[t->s->n_done++] = t->id;
  t->s->status[t->id] = st;
  if (st == GPUNET_OK)
    memcpy (t->s->scores[t->id], scores, sizeof *scores * (size_t) n * (size_t) k);
  pthread_mutex_unlock (&t->s->lock);
}

/* A deterministic frame of one of several formats and sizes. */
typedef struct {
  gpunet_image img;
  uint8_t *data;
} frame;

static void
make_frame (frame *f, int variant)
{
  static const int sizes[][2] = { { 64, 48 }, { 40, 40 }, { 96, 54 }, { 33, 71 } };
  const int w = sizes[variant % 4][0], h = sizes[variant % 4][1];
  memset (f, 0, sizeof *f);
  f->img.width = w;
  f->img.height = h;
  if (variant % 2) {
    f->img.format = GPUNET_FORMAT_NV12;
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    f->data = malloc ((size_t) w * h + (size_t) 2 * cw * ch);
    f->img.planes[0] = f->data;
    f->img.strides[0] = w;
    f->img.planes[1] = f->data + (size_t) w * h;
    f->img.strides[1] = 2 * cw;
    for (size_t i = 0; i < (size_t) w * h + (size_t) 2 * cw * ch; i++)
      f->data[i] = (uint8_t) ((i * 7 + (size_t) variant * 31) ^ (i >> 5));
  } else {
    f->img.format = GPUNET_FORMAT_RGB;
    f->data = malloc ((size_t) w * h * 3);
    f->img.planes[0] = f->data;
    f->img.strides[0] = 3 * w;
    for (size_t i = 0; i < (size_t) w * h * 3; i++)
      f->data[i] = (uint8_t) ((i * 13 + (size_t) variant * 17) ^ (i >> 7));
  }
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

/* passes in flight of every engine made: main runs the tests with 1 and 2 */
static int g_passes = 1;

static gpunet_engine *
make_engine (gpunet_model *m, int max_batch, int64_t timeout_us)
{
  gpunet_engine_params p;
  gpunet_engine_params_init (&p);
  p.passes_in_flight = g_passes;
  p.session.backend = GPUNET_BACKEND_CPU;
  p.session.max_batch = max_batch;
  p.session.n_threads = 1;
  p.batch_timeout_us = timeout_us;
  gpunet_engine *e = NULL;
  char *err = NULL;
  CHECK_MSG (gpunet_engine_new (m, &p, &e, &err) == GPUNET_OK, "%s", err ? err : "?");
  free (err);
  return e;
}

/* Requests of 1-3 frames of mixed sizes through engines of several batch sizes and
 * timeouts, against a batch-1 session classifying each frame alone. */
static void
test_same_bits (gpunet_model *m)
{
  enum { N_REQ = 24 };
  frame frames[N_REQ][3];
  int n_img[N_REQ];
  gpunet_class_score alone[N_REQ][3 * K];
  gpunet_session_params sp;
  gpunet_session_params_init (&sp);
  sp.backend = GPUNET_BACKEND_CPU;
  sp.n_threads = 1;
  gpunet_session *s = NULL;
  CHECK (gpunet_session_new (m, &sp, &s, NULL) == GPUNET_OK);
  gpunet_preprocess_params pre = { GPUNET_RESIZE_CENTER_CROP, 0.0f };
  for (int r = 0; r < N_REQ; r++) {
    n_img[r] = 1 + r % 3;
    for (int i = 0; i < n_img[r]; i++) {
      make_frame (&frames[r][i], r * 3 + i);
      CHECK (gpunet_session_classify (s, &frames[r][i].img, 1, &pre, K, alone[r] + i * K,
              NULL) == GPUNET_OK);
    }
  }
  gpunet_session_free (s);

  static const struct { int batch; int64_t timeout; } cfg[] = {
    { 1, 0 }, { 4, 0 }, { 4, 20000 }, { 8, 200000 }, { 2, 5000 },
  };
  for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
    gpunet_engine *e = make_engine (m, cfg[c].batch, cfg[c].timeout);
    if (!e)
      continue;
    sink sk;
    memset (&sk, 0, sizeof sk);
    pthread_mutex_init (&sk.lock, NULL);
    ticket t[N_REQ];
    for (int r = 0; r < N_REQ; r++) {
      gpunet_image imgs[3];
      for (int i = 0; i < n_img[r]; i++)
        imgs[i] = frames[r][i].img;
      t[r].s = &sk;
      t[r].id = r;
      CHECK (gpunet_engine_submit (e, imgs, n_img[r], &pre, K, NULL, on_done, &t[r], NULL)
          == GPUNET_OK);
    }
    int64_t passes = 0, images = 0;
    gpunet_engine_free (e); /* runs what is queued first */
    CHECK (sk.n_done == N_REQ);
    for (int r = 0; r < N_REQ; r++) {
      CHECK (sk.order[r] == r);
      CHECK (sk.status[r] == GPUNET_OK);
      CHECK_MSG (memcmp (sk.scores[r], alone[r], sizeof (gpunet_class_score) * K * n_img[r]) == 0,
          "batch %d timeout %lld: request %d differs from its frames classified alone",
          cfg[c].batch, (long long) cfg[c].timeout, r);
    }
    (void) passes;
    (void) images;
    pthread_mutex_destroy (&sk.lock);
  }
  for (int r = 0; r < N_REQ; r++)
    for (int i = 0; i < n_img[r]; i++)
      free (frames[r][i].data);
}

/* A timeout makes 8 single-frame requests, submitted at once, share passes. */
static void
test_batching (gpunet_model *m)
{
  gpunet_engine *e = make_engine (m, 8, 500000);
  if (!e)
    return;
  frame f;
  make_frame (&f, 0);
  sink sk;
  memset (&sk, 0, sizeof sk);
  pthread_mutex_init (&sk.lock, NULL);
  ticket t[8];
  for (int r = 0; r < 8; r++) {
    t[r].s = &sk;
    t[r].id = r;
    CHECK (gpunet_engine_submit (e, &f.img, 1, NULL, K, NULL, on_done, &t[r], NULL) == GPUNET_OK);
  }
  /* wait for all 8 (the pass starts once 8 images wait); up to 2 minutes, as a
   * pass under an emulator or valgrind can take seconds */
  for (int i = 0; i < 120000; i++) {
    pthread_mutex_lock (&sk.lock);
    int d = sk.n_done;
    pthread_mutex_unlock (&sk.lock);
    if (d == 8)
      break;
    struct timespec ts = { 0, 1000000 };
    nanosleep (&ts, NULL);
  }
  int64_t passes = -1, images = -1;
  gpunet_engine_stats (e, &passes, &images);
  CHECK_MSG (passes == 1 && images == 8, "8 frames took %lld passes (%lld images)",
      (long long) passes, (long long) images);
  gpunet_engine_free (e);
  pthread_mutex_destroy (&sk.lock);
  free (f.data);
}

/* A frame the engine cannot take fails its submission; the engine keeps serving. */
static void
test_bad_frame (gpunet_model *m)
{
  gpunet_engine *e = make_engine (m, 4, 0);
  if (!e)
    return;
  frame f;
  make_frame (&f, 1);
  gpunet_image bad = f.img;
  bad.strides[0] = 1;
  sink sk;
  memset (&sk, 0, sizeof sk);
  pthread_mutex_init (&sk.lock, NULL);
  ticket t[3] = { { &sk, 0 }, { &sk, 1 }, { &sk, 2 } };
  char *err = NULL;
  CHECK (gpunet_engine_submit (e, &f.img, 1, NULL, K, NULL, on_done, &t[0], NULL) == GPUNET_OK);
  CHECK (gpunet_engine_submit (e, &bad, 1, NULL, K, NULL, on_done, &t[1], &err)
      == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "stride");
  free (err);
  err = NULL;
  gpunet_image dev = f.img;
  dev.memory = GPUNET_MEMORY_CUDA;
  CHECK (gpunet_engine_submit (e, &dev, 1, NULL, K, NULL, on_done, &t[1], &err)
      == GPUNET_ERR_UNSUPPORTED);
  CHECK_CONTAINS (err, "host memory");
  free (err);
  err = NULL;
  CHECK (gpunet_engine_submit (e, &f.img, 1, NULL, 17, NULL, on_done, &t[1], &err)
      == GPUNET_ERR_INVALID_ARGUMENT);
  CHECK_CONTAINS (err, "top-k");
  free (err);
  CHECK (gpunet_engine_submit (e, &f.img, 1, NULL, K, NULL, on_done, &t[2], NULL) == GPUNET_OK);
  gpunet_engine_free (e);
  CHECK (sk.n_done == 2 && sk.status[0] == GPUNET_OK && sk.status[2] == GPUNET_OK);
  pthread_mutex_destroy (&sk.lock);
  free (f.data);
}

/* Four threads submit 40 requests each into one engine; each thread's requests
 * complete in its own order, all with the bits of the frame alone. */
typedef struct {
  gpunet_engine *e;
  sink *s;
  frame *f;
  int base;
  ticket t[40];
} producer;

static void *
produce (void *arg)
{
  producer *p = arg;
  for (int i = 0; i < 40; i++) {
    p->t[i].s = p->s;
    p->t[i].id = p->base + i;
    if (gpunet_engine_submit (p->e, &p->f->img, 1, NULL, K, p, on_done, &p->t[i], NULL)
        != GPUNET_OK)
      break;
  }
  return NULL;
}

static void
test_threads_and_cancel (gpunet_model *m)
{
  gpunet_engine *e = make_engine (m, 4, 1000);
  if (!e)
    return;
  frame f[4];
  gpunet_class_score ref[4][K];
  for (int i = 0; i < 4; i++)
    make_frame (&f[i], i);
  gpunet_session_params sp;
  gpunet_session_params_init (&sp);
  sp.backend = GPUNET_BACKEND_CPU;
  sp.n_threads = 1;
  gpunet_session *s = NULL;
  CHECK (gpunet_session_new (m, &sp, &s, NULL) == GPUNET_OK);
  for (int i = 0; i < 4 && s; i++)
    CHECK (gpunet_session_classify (s, &f[i].img, 1, NULL, K, ref[i], NULL) == GPUNET_OK);
  gpunet_session_free (s);

  static sink sk;
  memset (&sk, 0, sizeof sk);
  pthread_mutex_init (&sk.lock, NULL);
  static producer p[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    p[i].e = e;
    p[i].s = &sk;
    p[i].f = &f[i];
    p[i].base = i * 40;
    pthread_create (&th[i], NULL, produce, &p[i]);
  }
  for (int i = 0; i < 4; i++)
    pthread_join (th[i], NULL);
  /* producer 3 leaves: its queued requests are withdrawn, none runs after this */
  gpunet_engine_cancel (e, &p[3]);
  pthread_mutex_lock (&sk.lock);
  int done_at_cancel = 0, cancelled = 0;
  for (int i = 0; i < sk.n_done; i++)
    if (sk.order[i] >= 120) {
      done_at_cancel++;
      cancelled += sk.status[sk.order[i]] == GPUNET_ERR_CANCELLED;
    }
  pthread_mutex_unlock (&sk.lock);
  CHECK_MSG (done_at_cancel == 40, "%d of producer 3's requests were completed or cancelled "
      "when cancel returned", done_at_cancel);
  gpunet_engine_free (e);
  CHECK (sk.n_done == 160);
  int last[4] = { -1, -1, -1, -1 }, in_order = 1, same = 1;
  for (int i = 0; i < sk.n_done; i++) {
    int id = sk.order[i], who = id / 40;
    in_order = in_order && id > last[who];
    last[who] = id;
    if (sk.status[id] == GPUNET_OK)
      same = same && memcmp (sk.scores[id], ref[who], sizeof ref[who]) == 0;
    else
      same = same && who == 3 && sk.status[id] == GPUNET_ERR_CANCELLED;
  }
  CHECK (in_order);
  CHECK (same);
  printf ("cancel withdrew %d of producer 3's 40 queued requests\n", cancelled);
  pthread_mutex_destroy (&sk.lock);
  for (int i = 0; i < 4; i++)
    free (f[i].data);
}

int
main (void)
{
  gpunet_model *m = load_fixture ();
  if (!m)
    return check_report ();
  /* under an emulator (check_emulated) two passes in flight only: one pass there takes
   * half a second, and two in flight is the engine's harder case */
  for (g_passes = check_emulated () ? 2 : 1; g_passes <= 2; g_passes++) {
    test_same_bits (m);
    test_batching (m);
    test_bad_frame (m);
    test_threads_and_cancel (m);
  }
  gpunet_model_unref (m);
  return check_report ();
}
