/* glib-tsan.c: makes GLib's locks visible to ThreadSanitizer (scripts/test-tsan.sh).
 *
 * On Linux GLib's GMutex, GRecMutex and GCond are futexes and atomics inside libglib,
 * which is not instrumented: ThreadSanitizer sees none of their ordering and reports every
 * access that one of them protects as a race (the object lock, the pads' stream locks, our
 * own GMutex-guarded state).  Preloaded (LD_PRELOAD), this library
 * wraps the calls into libglib from other libraries and programs with __tsan_acquire and
 * __tsan_release on the lock's address, the way TSan's own pthread interceptors do, and
 * calls GLib's functions for the locking itself.  Calls inside libglib are not wrapped;
 * nothing of ours runs under those locks.  Not instrumented itself; not part of any build.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdlib.h>

/* weak: in a program without the TSan runtime (python3 running one of our instrumented
 * tools, which inherits LD_PRELOAD) the wrappers only forward */
void __tsan_acquire (void *addr) __attribute__ ((weak));
void __tsan_release (void *addr) __attribute__ ((weak));
#define __tsan_acquire(a) (__tsan_acquire ? __tsan_acquire (a) : (void) 0)
#define __tsan_release(a) (__tsan_release ? __tsan_release (a) : (void) 0)
void __tsan_func_entry (void *pc) __attribute__ ((weak));
void __tsan_func_exit (void) __attribute__ ((weak));

typedef int gboolean;
typedef long gint64;

#define REAL(name, type)                                                \
  static __typeof__ (type) real_##name;                                 \
  if (!real_##name) {                                                   \
    real_##name = (__typeof__ (type)) dlsym (RTLD_NEXT, #name);         \
    if (!real_##name) abort ();                                         \
  }

void
g_mutex_lock (void *m)
{
  REAL (g_mutex_lock, void (*) (void *));
  real_g_mutex_lock (m);
  __tsan_acquire (m);
}

gboolean
g_mutex_trylock (void *m)
{
  REAL (g_mutex_trylock, gboolean (*) (void *));
  gboolean r = real_g_mutex_trylock (m);
  if (r)
    __tsan_acquire (m);
  return r;
}

void
g_mutex_unlock (void *m)
{
  REAL (g_mutex_unlock, void (*) (void *));
  __tsan_release (m);
  real_g_mutex_unlock (m);
}

/* A GRecMutex is a pthread mutex, which TSan's interceptor sees and puts in its lock-order
 * graph (GStreamer's state and stream locks): its reports' stacks would end at this
 * wrapper, TSan knowing only the instrumented frames.  The callers of the lock, unwound
 * here (libgcc, from the libraries' unwind tables), go on TSan's stack for the call, so a
 * report names the GStreamer code that took the lock (and tsan.supp can match it). */
#define REC_CALLERS 12

static inline __attribute__ ((always_inline)) int
push_callers (void)
{
  void *pc[REC_CALLERS + 1];
  int n, i;

  if (!__tsan_func_entry)
    return 0;
  n = backtrace (pc, REC_CALLERS + 1);  /* pc[0]: in this wrapper */
  for (i = n - 1; i >= 1; i--)
    __tsan_func_entry (pc[i]);
  return n > 0 ? n - 1 : 0;
}

static void
pop_callers (int n)
{
  while (n-- > 0)
    __tsan_func_exit ();
}

void
g_rec_mutex_lock (void *m)
{
  REAL (g_rec_mutex_lock, void (*) (void *));
  int n = push_callers ();
  real_g_rec_mutex_lock (m);
  pop_callers (n);
  __tsan_acquire (m);
}

gboolean
g_rec_mutex_trylock (void *m)
{
  REAL (g_rec_mutex_trylock, gboolean (*) (void *));
  int n = push_callers ();
  gboolean r = real_g_rec_mutex_trylock (m);
  pop_callers (n);
  if (r)
    __tsan_acquire (m);
  return r;
}

void
g_rec_mutex_unlock (void *m)
{
  REAL (g_rec_mutex_unlock, void (*) (void *));
  __tsan_release (m);
  real_g_rec_mutex_unlock (m);
}

void
g_rw_lock_writer_lock (void *l)
{
  REAL (g_rw_lock_writer_lock, void (*) (void *));
  real_g_rw_lock_writer_lock (l);
  __tsan_acquire (l);
}

gboolean
g_rw_lock_writer_trylock (void *l)
{
  REAL (g_rw_lock_writer_trylock, gboolean (*) (void *));
  gboolean r = real_g_rw_lock_writer_trylock (l);
  if (r)
    __tsan_acquire (l);
  return r;
}

void
g_rw_lock_writer_unlock (void *l)
{
  REAL (g_rw_lock_writer_unlock, void (*) (void *));
  __tsan_release (l);
  real_g_rw_lock_writer_unlock (l);
}

void
g_rw_lock_reader_lock (void *l)
{
  REAL (g_rw_lock_reader_lock, void (*) (void *));
  real_g_rw_lock_reader_lock (l);
  __tsan_acquire (l);
}

gboolean
g_rw_lock_reader_trylock (void *l)
{
  REAL (g_rw_lock_reader_trylock, gboolean (*) (void *));
  gboolean r = real_g_rw_lock_reader_trylock (l);
  if (r)
    __tsan_acquire (l);
  return r;
}

void
g_rw_lock_reader_unlock (void *l)
{
  REAL (g_rw_lock_reader_unlock, void (*) (void *));
  __tsan_release (l);
  real_g_rw_lock_reader_unlock (l);
}

void
g_cond_wait (void *c, void *m)
{
  REAL (g_cond_wait, void (*) (void *, void *));
  __tsan_release (m);
  real_g_cond_wait (c, m);
  __tsan_acquire (m);
}

gboolean
g_cond_wait_until (void *c, void *m, gint64 end_time)
{
  REAL (g_cond_wait_until, gboolean (*) (void *, void *, gint64));
  __tsan_release (m);
  gboolean r = real_g_cond_wait_until (c, m, end_time);
  __tsan_acquire (m);
  return r;
}

/* g_once_init_enter's fast path is an atomic load in the caller (instrumented); the
 * value is stored in libglib: a release there pairs with that acquire load */
gboolean
g_once_init_enter (volatile void *location)
{
  REAL (g_once_init_enter, gboolean (*) (volatile void *));
  gboolean r = real_g_once_init_enter (location);
  __tsan_acquire ((void *) location);
  return r;
}

void
g_once_init_leave (volatile void *location, unsigned long result)
{
  REAL (g_once_init_leave, void (*) (volatile void *, unsigned long));
  __tsan_release ((void *) location);
  real_g_once_init_leave (location, result);
}

/* GAsyncQueue (GstHarness hands buffers and events over in them) locks inside libglib */
void
g_async_queue_push (void *q, void *data)
{
  REAL (g_async_queue_push, void (*) (void *, void *));
  __tsan_release (q);
  real_g_async_queue_push (q, data);
}

void *
g_async_queue_pop (void *q)
{
  REAL (g_async_queue_pop, void *(*) (void *));
  void *r = real_g_async_queue_pop (q);
  __tsan_acquire (q);
  return r;
}

void *
g_async_queue_try_pop (void *q)
{
  REAL (g_async_queue_try_pop, void *(*) (void *));
  void *r = real_g_async_queue_try_pop (q);
  __tsan_acquire (q);
  return r;
}

void *
g_async_queue_timeout_pop (void *q, unsigned long long timeout)
{
  REAL (g_async_queue_timeout_pop, void *(*) (void *, unsigned long long));
  void *r = real_g_async_queue_timeout_pop (q, timeout);
  __tsan_acquire (q);
  return r;
}

void
g_async_queue_lock (void *q)
{
  REAL (g_async_queue_lock, void (*) (void *));
  real_g_async_queue_lock (q);
  __tsan_acquire (q);
}

void
g_async_queue_unlock (void *q)
{
  REAL (g_async_queue_unlock, void (*) (void *));
  __tsan_release (q);
  real_g_async_queue_unlock (q);
}

/* The last unref of a mini object (buffers, events, caps) frees it in whichever thread
 * drops it; the atomic count that orders that free is inside libgstreamer.  Release and
 * acquire on the object, as a reference count's decrement does. */
void
gst_mini_object_unref (void *o)
{
  REAL (gst_mini_object_unref, void (*) (void *));
  __tsan_release (o);
  __tsan_acquire (o);
  real_gst_mini_object_unref (o);
}

/* GThreadPool (GstTask's default pool runs the pads' tasks in one) hands a pushed item to
 * its thread through a GAsyncQueue inside libglib: release on the pool when pushing, and
 * acquire in a trampoline before the pool's function runs */
typedef struct
{
  void (*func) (void *data, void *user_data);
  void *user_data;
  void *pool;
} pool_tramp;

static void
pool_trampoline (void *data, void *user_data)
{
  pool_tramp *t = user_data;
  __tsan_acquire (t);
  t->func (data, t->user_data);
}

void *
g_thread_pool_new (void (*func) (void *, void *), void *user_data, int max_threads,
    int exclusive, void **error)
{
  REAL (g_thread_pool_new, void *(*) (void (*) (void *, void *), void *, int, int, void **));
  /* never freed: pools live as long as their users, a few per process */
  pool_tramp *t = calloc (1, sizeof *t);
  if (!t)
    abort ();
  t->func = func;
  t->user_data = user_data;
  void *pool = real_g_thread_pool_new (pool_trampoline, t, max_threads, exclusive, error);
  t->pool = pool;
  return pool;
}

/* GThreadPool's first member is its func, its second its user_data (public struct) */
gboolean
g_thread_pool_push (void *pool, void *data, void **error)
{
  REAL (g_thread_pool_push, gboolean (*) (void *, void *, void **));
  void **pub = pool;
  if (pub[0] == (void *) pool_trampoline)
    __tsan_release (pub[1]);
  return real_g_thread_pool_push (pool, data, error);
}

/* GstBus queues messages in a lock-free GstAtomicQueue inside libgstreamer: release on the
 * message when it is posted, acquire on it when it is popped.  The poster's own unrefs
 * inside libgstreamer (a bin forwarding a child's message) are not seen either: the wrapper
 * holds a reference of its own over the post and drops it after an acquire, so that a free
 * in the posting thread is ordered after the reader's release. */
static void *
post_ref (void *msg)
{
  REAL (gst_mini_object_ref, void *(*) (void *));
  if (msg) {
    real_gst_mini_object_ref (msg);
    __tsan_release (msg);
  }
  return msg;
}

static void
post_unref (void *msg)
{
  REAL (gst_mini_object_unref, void (*) (void *));
  if (msg) {
    __tsan_acquire (msg);
    real_gst_mini_object_unref (msg);
  }
}

gboolean
gst_element_post_message (void *element, void *msg)
{
  REAL (gst_element_post_message, gboolean (*) (void *, void *));
  post_ref (msg);
  gboolean r = real_gst_element_post_message (element, msg);
  post_unref (msg);
  return r;
}

gboolean
gst_bus_post (void *bus, void *msg)
{
  REAL (gst_bus_post, gboolean (*) (void *, void *));
  post_ref (msg);
  gboolean r = real_gst_bus_post (bus, msg);
  post_unref (msg);
  return r;
}

#define POP_WRAP(name, params, args)                                    \
  void *name params                                                     \
  {                                                                     \
    REAL (name, void *(*) params);                                      \
    void *m = real_##name args;                                         \
    if (m)                                                              \
      __tsan_acquire (m);                                               \
    return m;                                                           \
  }

POP_WRAP (gst_bus_pop, (void *bus), (bus))
POP_WRAP (gst_bus_pop_filtered, (void *bus, int types), (bus, types))
POP_WRAP (gst_bus_timed_pop, (void *bus, unsigned long long timeout), (bus, timeout))
POP_WRAP (gst_bus_timed_pop_filtered, (void *bus, unsigned long long timeout, int types),
    (bus, timeout, types))
POP_WRAP (gst_bus_poll, (void *bus, int events, long long timeout), (bus, events, timeout))

/* GQuark's table and string arena are guarded by a lock inside libglib (a structure's
 * field names, the type system's names): one sync point for every call from outside */
static int quark_sync;

#define QUARK_WRAP(ret, name, params, args)                             \
  ret name params                                                       \
  {                                                                     \
    REAL (name, ret (*) params);                                        \
    __tsan_acquire (&quark_sync);                                       \
    ret r = real_##name args;                                           \
    __tsan_release (&quark_sync);                                       \
    return r;                                                           \
  }

QUARK_WRAP (unsigned, g_quark_from_string, (const char *s), (s))
QUARK_WRAP (unsigned, g_quark_from_static_string, (const char *s), (s))
QUARK_WRAP (unsigned, g_quark_try_string, (const char *s), (s))
QUARK_WRAP (const char *, g_quark_to_string, (unsigned q), (q))
QUARK_WRAP (const char *, g_intern_string, (const char *s), (s))
QUARK_WRAP (const char *, g_intern_static_string, (const char *s), (s))
