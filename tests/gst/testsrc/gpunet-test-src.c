/* gpunet-test-src.c: a test-only source plugin (not installed) that puts
 * gpunet-streams' pipeline into the states a real input leaves it in by chance,
 * on purpose and at a chosen moment.  Element gpunettestsrc, also the handler of
 * URIs "gpunet-test://?KEY=VALUE&...", so that a tool's uridecodebin makes it
 * from a URI given on the command line.  It gives small grey NV12 frames
 * (64x48, 10 frames/s timestamps) as fast as asked, then ends or hangs:
 *
 *   frames=N        frames before it ends (default 5)
 *   end=eos|block   then end of stream (default), or block without one (a stall)
 *   lose-state=1    after the frames, post ASYNC_START and never ASYNC_DONE, as
 *                   an element re-prerolling does: the pipeline loses its PLAYING
 *                   state and stays PAUSED while the elements run on
 *   preroll-ms=M    post ASYNC_START when starting and ASYNC_DONE M ms later,
 *                   before the first frame: the pipeline waits that long for it
 *                   to preroll (a source whose decoder is slow to set up)
 *   live=1          a live source: it gives frames only while PLAYING
 *   error=early     post an error instead of the first frame
 *   error=late      post an error instead of a frame; once the source's outermost
 *                   bin below the pipeline has left it, post a second one on the
 *                   bus that bin had: what a streaming thread that took the bus
 *                   before the bin left does (GStreamer's post is not atomic
 *                   with the removal), and what aborted gpunet-streams' change to
 *                   PLAYING for good on GStreamer 1.26 now and then */
#include <stdlib.h>
#include <string.h>

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>

#define WIDTH 64
#define HEIGHT 48
#define FRAME_NS (GST_SECOND / 10)

typedef struct
{
  GstPushSrc parent;

  gchar *uri;
  gint frames;
  gboolean block, lose_state, early_error, late_error, live;
  gint preroll_ms;

  GMutex lock;
  GCond cond;
  gboolean flushing;            /* under lock: unlock() asked */
  gint sent;
  gboolean prerolled;
} GpunetTestSrc;

typedef struct
{
  GstPushSrcClass parent_class;
} GpunetTestSrcClass;

static GType gpunet_test_src_get_type (void);
static void gpunet_test_src_uri_init (gpointer iface, gpointer data);

G_DEFINE_TYPE_WITH_CODE (GpunetTestSrc, gpunet_test_src, GST_TYPE_PUSH_SRC,
    G_IMPLEMENT_INTERFACE (GST_TYPE_URI_HANDLER, gpunet_test_src_uri_init));

enum
{
  PROP_0,
  PROP_URI,
};

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("video/x-raw, format=NV12, width=64, height=48, "
        "framerate=10/1, pixel-aspect-ratio=1/1"));

static gint
query_int (GstUri * u, const gchar * key, gint def)
{
  const gchar *v = gst_uri_get_query_value (u, key);

  return v ? atoi (v) : def;
}

static gboolean
set_uri (GpunetTestSrc * self, const gchar * uri, GError ** error)
{
  GstUri *u = gst_uri_from_string (uri);
  const gchar *end, *err;

  if (u == NULL || g_strcmp0 (gst_uri_get_scheme (u), "gpunet-test") != 0) {
    g_set_error (error, GST_URI_ERROR, GST_URI_ERROR_BAD_URI,
        "not a gpunet-test:// URI: %s", uri);
    if (u)
      gst_uri_unref (u);
    return FALSE;
  }
  self->frames = query_int (u, "frames", 5);
  end = gst_uri_get_query_value (u, "end");
  self->block = g_strcmp0 (end, "block") == 0;
  self->lose_state = query_int (u, "lose-state", 0) != 0;
  self->preroll_ms = query_int (u, "preroll-ms", 0);
  err = gst_uri_get_query_value (u, "error");
  self->early_error = g_strcmp0 (err, "early") == 0;
  self->late_error = g_strcmp0 (err, "late") == 0;
  self->live = query_int (u, "live", 0) != 0;
  gst_base_src_set_live (GST_BASE_SRC (self), self->live);
  gst_uri_unref (u);
  g_free (self->uri);
  self->uri = g_strdup (uri);
  return TRUE;
}

/* Waits `ms` milliseconds (< 0: until unlocked); FALSE when unlocked. */
static gboolean
wait_ms (GpunetTestSrc * self, gint ms)
{
  gint64 end = g_get_monotonic_time () + (gint64) ms * 1000;
  gboolean ok;

  g_mutex_lock (&self->lock);
  while (!self->flushing && (ms < 0 || g_get_monotonic_time () < end)) {
    if (ms < 0)
      g_cond_wait (&self->cond, &self->lock);
    else
      g_cond_wait_until (&self->cond, &self->lock, end);
  }
  ok = !self->flushing;
  g_mutex_unlock (&self->lock);
  return ok;
}

/* The outermost bin holding `self` below its pipeline (a reference), or NULL. */
static GstElement *
outer_bin (GpunetTestSrc * self)
{
  GstObject *obj = gst_object_ref (GST_OBJECT (self)), *parent;

  while ((parent = gst_object_get_parent (obj)) != NULL) {
    if (GST_IS_PIPELINE (parent)) {
      gst_object_unref (parent);
      return GST_ELEMENT (obj);
    }
    gst_object_unref (obj);
    obj = parent;
  }
  gst_object_unref (obj);
  return NULL;
}

static GstFlowReturn
late_error (GpunetTestSrc * self)
{
  GstElement *outer = outer_bin (self);
  GstBus *bus = outer ? gst_element_get_bus (outer) : NULL;
  gint i;

  GST_ELEMENT_ERROR (self, STREAM, FAILED, ("gpunet-test: the first error"),
      (NULL));
  /* the outer bin leaves the pipeline (the tool ends the stream); 5 s at most */
  for (i = 0; outer && i < 500; i++) {
    GstObject *p = gst_object_get_parent (GST_OBJECT (outer));

    if (p == NULL)
      break;
    gst_object_unref (p);
    g_usleep (10000);
  }
  if (bus) {
    GError *e = g_error_new_literal (GST_STREAM_ERROR, GST_STREAM_ERROR_FAILED,
        "gpunet-test: a later error, posted after the source left");

    gst_bus_post (bus, gst_message_new_error (GST_OBJECT (self), e, NULL));
    g_error_free (e);
    gst_object_unref (bus);
  }
  if (outer)
    gst_object_unref (outer);
  return GST_FLOW_ERROR;
}

static GstFlowReturn
gpunet_test_src_create (GstPushSrc * src, GstBuffer ** out)
{
  GpunetTestSrc *self = (GpunetTestSrc *) src;
  GstBuffer *buf;
  GstMapInfo map;

  if (self->early_error) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("gpunet-test: an error"), (NULL));
    return GST_FLOW_ERROR;
  }
  if (self->late_error)
    return late_error (self);
  if (self->preroll_ms > 0 && !self->prerolled) {
    self->prerolled = TRUE;
    if (!wait_ms (self, self->preroll_ms))
      return GST_FLOW_FLUSHING;
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_async_done (GST_OBJECT (self), GST_CLOCK_TIME_NONE));
  }
  if (self->sent >= self->frames) {
    if (self->lose_state && self->sent == self->frames) {
      self->sent++;
      gst_element_post_message (GST_ELEMENT (self),
          gst_message_new_async_start (GST_OBJECT (self)));
    }
    if (!self->block)
      return GST_FLOW_EOS;
    wait_ms (self, -1);
    return GST_FLOW_FLUSHING;
  }
  buf = gst_buffer_new_allocate (NULL, WIDTH * HEIGHT * 3 / 2, NULL);
  gst_buffer_map (buf, &map, GST_MAP_WRITE);
  memset (map.data, 128, map.size);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_PTS (buf) = self->sent * FRAME_NS;
  GST_BUFFER_DURATION (buf) = FRAME_NS;
  self->sent++;
  *out = buf;
  return GST_FLOW_OK;
}

static gboolean
gpunet_test_src_start (GstBaseSrc * src)
{
  GpunetTestSrc *self = (GpunetTestSrc *) src;

  self->sent = 0;
  self->prerolled = FALSE;
  if (self->preroll_ms > 0)
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_async_start (GST_OBJECT (self)));
  return TRUE;
}

static gboolean
gpunet_test_src_unlock (GstBaseSrc * src)
{
  GpunetTestSrc *self = (GpunetTestSrc *) src;

  g_mutex_lock (&self->lock);
  self->flushing = TRUE;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static gboolean
gpunet_test_src_unlock_stop (GstBaseSrc * src)
{
  GpunetTestSrc *self = (GpunetTestSrc *) src;

  g_mutex_lock (&self->lock);
  self->flushing = FALSE;
  g_mutex_unlock (&self->lock);
  return TRUE;
}

static void
gpunet_test_src_set_property (GObject * obj, guint id, const GValue * value,
    GParamSpec * pspec)
{
  if (id == PROP_URI)
    set_uri ((GpunetTestSrc *) obj, g_value_get_string (value), NULL);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID (obj, id, pspec);
}

static void
gpunet_test_src_get_property (GObject * obj, guint id, GValue * value,
    GParamSpec * pspec)
{
  if (id == PROP_URI)
    g_value_set_string (value, ((GpunetTestSrc *) obj)->uri);
  else
    G_OBJECT_WARN_INVALID_PROPERTY_ID (obj, id, pspec);
}

static void
gpunet_test_src_finalize (GObject * obj)
{
  GpunetTestSrc *self = (GpunetTestSrc *) obj;

  g_free (self->uri);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  G_OBJECT_CLASS (gpunet_test_src_parent_class)->finalize (obj);
}

static void
gpunet_test_src_class_init (GpunetTestSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *base_class = GST_BASE_SRC_CLASS (klass);

  gobject_class->set_property = gpunet_test_src_set_property;
  gobject_class->get_property = gpunet_test_src_get_property;
  gobject_class->finalize = gpunet_test_src_finalize;
  g_object_class_install_property (gobject_class, PROP_URI,
      g_param_spec_string ("uri", "URI", "gpunet-test://?KEY=VALUE&...", NULL,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class, "gpunet test source",
      "Source/Video", "Frames, then the pipeline states the tests need",
      "gst-gpunet");
  base_class->start = gpunet_test_src_start;
  base_class->unlock = gpunet_test_src_unlock;
  base_class->unlock_stop = gpunet_test_src_unlock_stop;
  GST_PUSH_SRC_CLASS (klass)->create = gpunet_test_src_create;
}

static void
gpunet_test_src_init (GpunetTestSrc * self)
{
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  self->frames = 5;
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
}

static GstURIType
uri_get_type (GType type)
{
  (void) type;
  return GST_URI_SRC;
}

static const gchar *const *
uri_get_protocols (GType type)
{
  static const gchar *protocols[] = { "gpunet-test", NULL };

  (void) type;
  return protocols;
}

static gchar *
uri_get_uri (GstURIHandler * handler)
{
  return g_strdup (((GpunetTestSrc *) handler)->uri);
}

static gboolean
uri_set_uri (GstURIHandler * handler, const gchar * uri, GError ** error)
{
  return set_uri ((GpunetTestSrc *) handler, uri, error);
}

static void
gpunet_test_src_uri_init (gpointer iface, gpointer data)
{
  GstURIHandlerInterface *i = iface;

  (void) data;
  i->get_type = uri_get_type;
  i->get_protocols = uri_get_protocols;
  i->get_uri = uri_get_uri;
  i->set_uri = uri_set_uri;
}

static gboolean
plugin_init (GstPlugin * plugin)
{
  return gst_element_register (plugin, "gpunettestsrc", GST_RANK_PRIMARY,
      gpunet_test_src_get_type ());
}

GST_PLUGIN_DEFINE (GST_VERSION_MAJOR, GST_VERSION_MINOR, gpunettest,
    "gst-gpunet's test source (tests only)", plugin_init, "1.0", "Apache",
    "gst-gpunet", "gst-gpunet")
