/* test_nvmm.c: gpunetclassify on video/x-raw(memory:NVMM) with NVIDIA's real
 * DeepStream metadata libraries (libnvds_meta, libnvdsgst_meta from the PyPI wheel
 * nvidia-deepstream-videodecode-cu13, fetched by nvds-libs.sh, which sets
 * GPUNET_NVDS_LIB_DIR).  Buffers are built the way nvstreammux and a detector build
 * them: an NvDsBatchMeta from the library's pools with one NvDsFrameMeta per source
 * and NvDsObjectMeta boxes, on a memory whose map is an NvBufSurface we forge with
 * memType SYSTEM.  Results are read back through the library's lists and compared
 * with our own records and with the system-memory path; every bad surface must give
 * an element error naming the field (the sanitizer build runs this file too). */
#include <dlfcn.h>
#include <math.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <gst/check/gstcheck.h>
#include <gst/check/gstharness.h>
#include <gst/video/video.h>

#include "gpunet-meta.h"
#include "gpunet-nvds-abi.h"
#include "gstgpunetnvds.h"

#define W 64
#define H 48
#define NUM_CLASSES 16
#define TINY_A "fixtures/tiny-a.json", "fixtures/tiny-a/tiny-a.pth.tar"

/* NvDsObjectMeta.classifier_meta_list in 9.1 (after mask_params, text_params and
 * obj_label, whose sizes changed between versions): test_abi checks it against
 * what nvds_add_classifier_meta_to_object writes.  The element never reads it. */
#define OBJ_CLASSIFIER_LIST_9_1 472
#define CLASSIFIERS(o) (*(GList **) ((guint8 *) (o) + OBJ_CLASSIFIER_LIST_9_1))

/* ---- the library, as a DeepStream element uses it ------------------------------ */

static struct
{
  gpointer (*create_batch) (guint);
  gpointer (*acquire_frame) (gpointer);
  void (*add_frame) (gpointer, gpointer);
  gpointer (*acquire_obj) (gpointer);
  void (*add_obj) (gpointer, gpointer, gpointer);
  gpointer (*acquire_cls) (gpointer);
  void (*add_cls) (gpointer, gpointer);
  gpointer (*acquire_label) (gpointer);
  void (*add_label) (gpointer, gpointer);
  gpointer (*add_gst_meta) (GstBuffer *, gpointer, gpointer, gpointer,
      gpointer);
  gpointer (*get_batch) (GstBuffer *);
  gpointer copy_func, release_func;
  gboolean (*destroy_batch) (gpointer);
} ds;

static const gchar *
lib_dir (void)
{
  const gchar *d = g_getenv ("GPUNET_NVDS_LIB_DIR");

  fail_unless (d != NULL, "GPUNET_NVDS_LIB_DIR is not set (run through "
      "tests/gst/nvds-libs.sh)");
  return d;
}

static void
load_ds (void)
{
  gchar *a, *b;
  gpointer m, g;

  if (ds.create_batch != NULL)
    return;
  a = g_build_filename (lib_dir (), "libnvds_meta.so", NULL);
  b = g_build_filename (lib_dir (), "libnvdsgst_meta.so", NULL);
  m = dlopen (a, RTLD_NOW | RTLD_GLOBAL);
  fail_unless (m != NULL, "%s", dlerror ());
  g = dlopen (b, RTLD_NOW | RTLD_GLOBAL);
  fail_unless (g != NULL, "%s", dlerror ());
#define S(f, n) fail_unless ((*(gpointer *) &ds.f = dlsym (g, n)) != NULL, n)
  S (create_batch, "nvds_create_batch_meta");
  S (destroy_batch, "nvds_destroy_batch_meta");
  S (acquire_frame, "nvds_acquire_frame_meta_from_pool");
  S (add_frame, "nvds_add_frame_meta_to_batch");
  S (acquire_obj, "nvds_acquire_obj_meta_from_pool");
  S (add_obj, "nvds_add_obj_meta_to_frame");
  S (acquire_cls, "nvds_acquire_classifier_meta_from_pool");
  S (add_cls, "nvds_add_classifier_meta_to_object");
  S (acquire_label, "nvds_acquire_label_info_meta_from_pool");
  S (add_label, "nvds_add_label_info_meta_to_classifier");
  S (add_gst_meta, "gst_buffer_add_nvds_meta");
  S (get_batch, "gst_buffer_get_nvds_batch_meta");
  S (copy_func, "nvds_batch_meta_copy_func");
  S (release_func, "nvds_batch_meta_release_func");
#undef S
  g_free (a);
  g_free (b);
}

/* An NvDsBatchMeta for `n` sources on `buf`, as nvstreammux attaches it. */
static GpunetNvDsBatchMeta *
add_batch (GstBuffer * buf, guint n)
{
  GpunetNvDsBatchMeta *b = ds.create_batch (n);
  GpunetNvDsGstMeta *m;
  guint i;

  /* nvstreammux sets it; the pools' copy needs it */
  b->max_frames_in_batch = n;
  m = ds.add_gst_meta (buf, b, NULL, ds.copy_func, ds.release_func);
  fail_unless (m != NULL);
  m->meta_type = GPUNET_NVDS_BATCH_GST_META;
  b->base_meta.batch_meta = b;
  for (i = 0; i < n; i++) {
    GpunetNvDsFrameMeta *f = ds.acquire_frame (b);

    f->batch_id = i;
    f->pad_index = i;
    f->source_id = 10 + i;
    f->frame_num = 0;
    f->source_frame_width = W;
    f->source_frame_height = H;
    ds.add_frame (b, f);
  }
  return b;
}

static GpunetNvDsFrameMeta *
frame_of (GpunetNvDsBatchMeta * b, guint batch_id)
{
  GList *l;

  for (l = b->frame_meta_list; l; l = l->next)
    if (((GpunetNvDsFrameMeta *) l->data)->batch_id == batch_id)
      return l->data;
  return NULL;
}

/* A detector's object on frame `f`. */
static GpunetNvDsObjectMeta *
add_object (GpunetNvDsBatchMeta * b, GpunetNvDsFrameMeta * f, gint gie,
    gint class_id, guint64 id, gfloat x, gfloat y, gfloat w, gfloat h)
{
  GpunetNvDsObjectMeta *o = ds.acquire_obj (b);

  o->unique_component_id = gie;
  o->class_id = class_id;
  o->object_id = id;
  o->confidence = 0.9f;
  memset (&o->rect_params, 0, sizeof o->rect_params);
  o->rect_params.left = x;
  o->rect_params.top = y;
  o->rect_params.width = w;
  o->rect_params.height = h;
  ds.add_obj (f, o, NULL);
  return o;
}

/* ---- forged NvBufSurface ------------------------------------------------------- */

typedef struct
{
  gint color;                   /* NvBufSurfaceColorFormat */
  guint width, height, pitch;
  guint seed;
  /* damage */
  gboolean null_data;
  guint num_planes;             /* 0: the format's */
  guint short_by;               /* dataSize this much too small */
  guint chroma_pitch;           /* NV12's planeParams.pitch[1]; 0: pitch */
} Surf;

typedef struct
{
  guint8 *hdr, *list;
  guint8 *data[8];
  guint n;
} Forged;

static void
forged_free (gpointer p)
{
  Forged *fg = p;
  guint i;

  for (i = 0; i < fg->n; i++)
    g_free (fg->data[i]);
  g_free (fg->list);
  g_free (fg->hdr);
  g_free (fg);
}

/* The pixel at byte x of row y of a tightly packed frame, as make_system_frame
 * writes it. */
static guint8
pattern (guint seed, gsize i)
{
  return (guint8) ((i * 7 + seed * 31 + (i / 97) * 13) & 0xff);
}

static guint
row_bytes (gint color, guint w)
{
  return color == GPUNET_NVBUF_COLOR_RGB ? w * 3 : color == GPUNET_NVBUF_COLOR_NV12
      ? w : w * 4;
}

/* A buffer whose one memory maps to an NvBufSurface of `n` surfaces `s` (list
 * entries `stride` bytes apart). */
static GstBuffer *
forge (guint stride, guint batch_size, guint n, gint mem_type, guint gpu,
    const Surf * s, gsize map_size)
{
  Forged *fg = g_new0 (Forged, 1);
  GpunetNvBufSurface hdr = { 0 };
  GstBuffer *buf = gst_buffer_new ();
  guint i;

  fg->hdr = g_malloc0 (64);
  fg->list = g_malloc0 ((gsize) stride * MAX (n, 1));
  fg->n = n;
  for (i = 0; i < n; i++) {
    GpunetNvBufSurfaceParams p;
    gboolean nv12 = s[i].color == GPUNET_NVBUF_COLOR_NV12;
    guint row = row_bytes (s[i].color, s[i].width), y, x;
    gsize size = (gsize) s[i].pitch * s[i].height * (nv12 ? 3 : 2) / 2;

    memset (&p, 0, sizeof p);
    fg->data[i] = g_malloc0 (size);
    /* row y holds the tight frame's row y: the pitch padding is never read */
    for (y = 0; y < s[i].height * (nv12 ? 3 : 2) / 2; y++)
      for (x = 0; x < MIN (row, s[i].pitch); x++)
        fg->data[i][(gsize) y * s[i].pitch + x] =
            pattern (s[i].seed, (gsize) y * row + x);
    p.width = s[i].width;
    p.height = s[i].height;
    p.pitch = s[i].pitch;
    p.colorFormat = s[i].color;
    p.layout = GPUNET_NVBUF_LAYOUT_PITCH;
    p.dataSize = (guint32) (size - s[i].short_by);
    p.dataPtr = s[i].null_data ? NULL : fg->data[i];
    p.planeParams.num_planes = s[i].num_planes ? s[i].num_planes : nv12 ? 2 : 1;
    p.planeParams.pitch[0] = p.planeParams.pitch[1] = s[i].pitch;
    if (s[i].chroma_pitch)
      p.planeParams.pitch[1] = s[i].chroma_pitch;
    p.planeParams.offset[1] = s[i].pitch * s[i].height;
    p.planeParams.width[0] = s[i].width;
    p.planeParams.height[0] = s[i].height;
    memcpy (fg->list + (gsize) i * stride, &p, sizeof p);
  }
  hdr.gpuId = gpu;
  hdr.batchSize = batch_size;
  hdr.numFilled = n;
  hdr.memType = mem_type;
  hdr.surfaceList = fg->list;
  memcpy (fg->hdr, &hdr, sizeof hdr);
  gst_buffer_append_memory (buf, gst_memory_new_wrapped (0, fg->hdr, 64, 0,
          map_size, fg, forged_free));
  GST_BUFFER_PTS (buf) = 0;
  GST_BUFFER_DURATION (buf) = 40 * GST_MSECOND;
  return buf;
}

static const Surf rgba0 = { GPUNET_NVBUF_COLOR_RGBA, W, H, W * 4 + 64, 1, FALSE, 0, 0, 0 };
static const Surf rgba1 = { GPUNET_NVBUF_COLOR_RGBA, W, H, W * 4, 2, FALSE, 0, 0, 0 };

#define NVMM_CAPS(fmt) "video/x-raw(memory:NVMM),format=" fmt \
  ",width=64,height=48,framerate=25/1"

/* ---- the element --------------------------------------------------------------- */

static gchar *
data_path (const gchar * rel)
{
  const gchar *dir = g_getenv ("GPUNET_TEST_DATA");

  fail_unless (dir != NULL, "GPUNET_TEST_DATA is not set");
  return g_build_filename (dir, rel, NULL);
}

/* gpunetclassify on tiny-a reading the wheel's libraries; NULL-terminated
 * property name/value pairs. */
static GstElement *
make_classify (const gchar * first, ...)
{
  GstElement *el = gst_element_factory_make ("gpunetclassify", NULL);
  gchar *m = data_path ("fixtures/tiny-a.json");
  gchar *c = data_path ("fixtures/tiny-a/tiny-a.pth.tar");
  const gchar *name;
  va_list ap;

  fail_unless (el != NULL);
  g_object_set (el, "model", m, "checkpoint", c, "backend", 1 /* cpu */ ,
      "nvds-lib-dir", lib_dir (), NULL);
  g_free (m);
  g_free (c);
  va_start (ap, first);
  for (name = first; name; name = va_arg (ap, const gchar *))
    gst_util_set_object_arg (G_OBJECT (el), name, va_arg (ap, const gchar *));
  va_end (ap);
  return el;
}

static GstHarness *
harness_for (GstElement * el, const gchar * caps)
{
  GstHarness *h = gst_harness_new_with_element (el, "sink", "src");

  gst_object_unref (el);
  gst_harness_set_src_caps_str (h, caps);
  return h;
}

/* Our record of the region meta of `type` whose nvds param has `key` == v. */
static const GstStructure *
record_where (GstBuffer * buf, const gchar * type, const gchar * key,
    guint64 v, GstVideoRegionOfInterestMeta ** roi_out)
{
  gpointer state = NULL;
  GstMeta *meta;

  while ((meta = gst_buffer_iterate_meta_filtered (buf, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *r = (GstVideoRegionOfInterestMeta *) meta;
    const GstStructure *n;
    guint64 got = G_MAXUINT64;
    guint u;

    if (r->roi_type != g_quark_from_string (type))
      continue;
    n = gst_video_region_of_interest_meta_get_param (r, "nvds");
    fail_unless (n != NULL);
    if (gst_structure_get_uint (n, key, &u))
      got = u;
    else
      fail_unless (gst_structure_get_uint64 (n, key, &got));
    if (got == v) {
      if (roi_out)
        *roi_out = r;
      return gst_video_region_of_interest_meta_get_param (r, GPUNET_META_NAME);
    }
  }
  return NULL;
}

static guint
count_regions (GstBuffer * buf)
{
  gpointer state = NULL;
  guint n = 0;

  while (gst_buffer_iterate_meta_filtered (buf, &state,
          GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))
    n++;
  return n;
}

/* The classifier metas of `o`, checked to carry exactly our record `rec`: one
 * label per listed class, same ids, probabilities and labels, best first. */
static void
check_classifier (GpunetNvDsObjectMeta * o, const GstStructure * rec,
    gint unique_id)
{
  GpunetNvDsClassifierMeta *c;
  guint n = gpunet_meta_n_results (rec), j;
  GList *l;

  fail_unless (rec != NULL);
  fail_unless (n > 0);
  fail_unless_equals_int (g_list_length (CLASSIFIERS (o)), 1);
  c = CLASSIFIERS (o)->data;
  fail_unless_equals_int (c->base_meta.meta_type, GPUNET_NVDS_CLASSIFIER_META);
  fail_unless_equals_int (c->unique_component_id, unique_id);
  fail_unless_equals_int (c->num_labels, n);
  fail_unless_equals_int (g_list_length (c->label_info_list), n);
  for (l = c->label_info_list, j = 0; l; l = l->next, j++) {
    GpunetNvDsLabelInfo *li = l->data;

    fail_unless_equals_int (li->result_class_id, gpunet_meta_nth_id (rec, j));
    fail_unless (fabs (li->result_prob - gpunet_meta_nth_score (rec, j)) < 1e-6,
        "label %u: %f vs %f", j, li->result_prob, gpunet_meta_nth_score (rec, j));
    fail_unless_equals_string (li->result_label, gpunet_meta_nth_label (rec, j));
    fail_unless_equals_int (li->num_classes, NUM_CLASSES);
  }
}

/* The same pixels in system memory (tight RGBA) through the system path, with a
 * region meta (x, y, w, h) when w > 0: its record (caller frees). */
static GstStructure *
system_record (guint seed, gint x, gint y, gint w, gint h)
{
  const gchar *caps = "video/x-raw,format=RGBA,width=64,height=48,framerate=25/1";
  GstHarness *hs = harness_for (make_classify ("roi-mode", w > 0 ? "regions" :
          "frame", NULL), caps);
  GstBuffer *buf = gst_harness_create_buffer (hs, W * H * 4), *out;
  GstStructure *s;
  GstMapInfo map;
  gsize i;

  fail_unless (gst_buffer_map (buf, &map, GST_MAP_WRITE));
  for (i = 0; i < map.size; i++)
    map.data[i] = pattern (seed, i);
  gst_buffer_unmap (buf, &map);
  if (w > 0)
    gst_buffer_add_video_region_of_interest_meta (buf, "box", x, y, w, h);
  fail_unless_equals_int (gst_harness_push (hs, buf), GST_FLOW_OK);
  out = gst_harness_pull (hs);
  if (w > 0) {
    GstVideoRegionOfInterestMeta *r = gst_buffer_get_video_region_of_interest_meta
        (out);
    s = gst_structure_copy (gst_video_region_of_interest_meta_get_param (r,
            GPUNET_META_NAME));
  } else {
    s = gst_structure_copy (gst_custom_meta_get_structure
        (gpunet_meta_get (out)));
  }
  gst_buffer_unref (out);
  gst_harness_teardown (hs);
  return s;
}

/* Same classes and (within float rounding of another batch size) scores. */
static void
check_same_record (const GstStructure * a, const GstStructure * b)
{
  guint n = gpunet_meta_n_results (a), j;

  fail_unless (a != NULL && b != NULL);
  fail_unless_equals_int (n, gpunet_meta_n_results (b));
  for (j = 0; j < n; j++) {
    fail_unless_equals_int (gpunet_meta_nth_id (a, j), gpunet_meta_nth_id (b, j));
    fail_unless (fabs (gpunet_meta_nth_score (a, j) -
            gpunet_meta_nth_score (b, j)) < 1e-4);
  }
}

/* ---- ABI ----------------------------------------------------------------------- */

/* Our declared offsets against what the library's own functions write. */
GST_START_TEST (test_abi)
{
  GpunetNvDsBatchMeta *b;
  GpunetNvDsFrameMeta *f;
  GpunetNvDsObjectMeta *o;
  GpunetNvDsClassifierMeta *c;
  GpunetNvDsLabelInfo *li;
  GstBuffer *buf = gst_buffer_new ();
  const GstGpunetNvds *n;
  gchar *why = NULL;

  load_ds ();
  n = gst_gpunet_nvds_open (lib_dir (), &why);
  fail_unless (n != NULL, "%s", why);
  fail_unless_equals_int (n->surface_stride, GPUNET_NVBUF_PARAMS_STRIDE_V8);
  fail_unless_equals_int (n->sizes[0], 232);
  fail_unless_equals_int (n->sizes[1], 552);
  fail_unless_equals_int (n->sizes[2], 64);
  fail_unless_equals_int (n->sizes[3], 200);

  b = add_batch (buf, 2);
  fail_unless_equals_int (b->frame_meta_pool->meta_type, GPUNET_NVDS_FRAME_META);
  fail_unless_equals_int (b->obj_meta_pool->meta_type, GPUNET_NVDS_OBJ_META);
  fail_unless_equals_int (b->num_frames_in_batch, 2);
  fail_unless_equals_int (g_list_length (b->frame_meta_list), 2);
  fail_unless (ds.get_batch (buf) == b);
  f = frame_of (b, 1);
  fail_unless (f != NULL);
  fail_unless_equals_int (f->source_id, 11);
  o = add_object (b, f, 1, 3, 42, 1, 2, 3, 4);
  fail_unless_equals_int (f->num_obj_meta, 1);
  fail_unless (f->obj_meta_list != NULL && f->obj_meta_list->data == o);
  fail_unless (o->base_meta.batch_meta == b);
  fail_unless_equals_int (o->base_meta.meta_type, GPUNET_NVDS_OBJ_META);
  c = ds.acquire_cls (b);
  ds.add_cls (o, c);
  fail_unless (CLASSIFIERS (o) && CLASSIFIERS (o)->data == c);
  li = ds.acquire_label (b);
  ds.add_label (c, li);
  fail_unless (c->label_info_list && c->label_info_list->data == li);
  fail_unless_equals_int (c->num_labels, 1);
  fail_unless_equals_int (li->base_meta.meta_type, GPUNET_NVDS_LABEL_INFO_META);
  /* a copy goes through the pools (max_frames_in_batch set as nvstreammux does) */
  {
    GstBuffer *copy = gst_buffer_copy (buf);
    GpunetNvDsBatchMeta *cb = ds.get_batch (copy);

    fail_unless (cb != NULL && cb != b);
    fail_unless_equals_int (g_list_length (cb->frame_meta_list), 2);
    gst_buffer_unref (copy);
  }
  gst_buffer_unref (buf);
}

GST_END_TEST;

/* The version decision, for what the wheel cannot show. */
GST_START_TEST (test_layout_versions)
{
  static const guint s91[4] = { 232, 552, 64, 200 };
  static const guint other[4] = { 240, 560, 64, 200 };
  static const guint small[4] = { 100, 552, 64, 200 };
  gchar *what, *why;

  fail_unless_equals_int (gst_gpunet_nvds_layout (NULL, s91, &what, &why), 416);
  fail_unless (why == NULL);
  g_free (what);
  fail_unless_equals_int (gst_gpunet_nvds_layout ("7.1", s91, &what, &why),
      384);
  g_free (what);
  fail_unless_equals_int (gst_gpunet_nvds_layout ("6.1", other, &what, &why),
      384);
  g_free (what);
  fail_unless_equals_int (gst_gpunet_nvds_layout ("8.0", other, &what, &why),
      416);
  g_free (what);
  fail_unless_equals_int (gst_gpunet_nvds_layout ("9.1", other, &what, &why),
      0);
  fail_unless (strstr (why, "240/560/64/200") != NULL, "%s", why);
  g_free (what);
  g_free (why);
  fail_unless_equals_int (gst_gpunet_nvds_layout ("6.0", s91, &what, &why), 0);
  fail_unless (strstr (why, "DeepStream 6.0") != NULL, "%s", why);
  g_free (what);
  g_free (why);
  fail_unless_equals_int (gst_gpunet_nvds_layout (NULL, other, &what, &why), 0);
  fail_unless (strstr (why, "cannot tell the DeepStream version") != NULL);
  g_free (what);
  g_free (why);
  fail_unless_equals_int (gst_gpunet_nvds_layout ("9.1", small, &what, &why),
      0);
  fail_unless (strstr (why, "frame meta elements are 100 bytes") != NULL);
  g_free (what);
  g_free (why);
}

GST_END_TEST;

/* ---- caps ---------------------------------------------------------------------- */

static gboolean
sink_offers_nvmm (GstElement * el)
{
  GstPad *pad = gst_element_get_static_pad (el, "sink");
  GstCaps *caps = gst_pad_query_caps (pad, NULL);
  GstCaps *nvmm = gst_caps_from_string (NVMM_CAPS ("RGBA"));
  gboolean ret = gst_caps_can_intersect (caps, nvmm);

  gst_caps_unref (nvmm);
  gst_caps_unref (caps);
  gst_object_unref (pad);
  return ret;
}

/* Offered with the libraries, not without; system memory works either way. */
GST_START_TEST (test_caps_offered)
{
  GstElement *el = make_classify (NULL);
  GstHarness *h;
  GstBuffer *buf, *out;

  fail_unless (sink_offers_nvmm (el));
  g_object_set (el, "nvds-lib-dir", "/nonexistent/deepstream/lib", NULL);
  fail_if (sink_offers_nvmm (el));
  h = harness_for (el, "video/x-raw,format=RGBA,width=64,height=48");
  buf = gst_harness_create_buffer (h, W * H * 4);
  gst_buffer_memset (buf, 0, 0x80, W * H * 4);
  fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (gpunet_meta_get (out) != NULL);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* A library directory holding the wheel's libraries and, beside it, a DeepStream
 * install's version file saying `version`. */
static gchar *
versioned_dir (const gchar * version)
{
  gchar *root = g_dir_make_tmp ("gpunet-nvds-XXXXXX", NULL);
  gchar *lib = g_build_filename (root, "lib", NULL);
  gchar *vf = g_build_filename (root, "version", NULL);
  gchar *text = g_strdup_printf ("Version: %s\n", version);
  const gchar *names[] = { "libnvds_meta.so", "libnvdsgst_meta.so" };
  guint i;

  fail_unless (g_mkdir (lib, 0755) == 0);
  for (i = 0; i < 2; i++) {
    gchar *t = g_build_filename (lib_dir (), names[i], NULL);
    gchar *l = g_build_filename (lib, names[i], NULL);

    fail_unless (symlink (t, l) == 0);
    g_free (t);
    g_free (l);
  }
  fail_unless (g_file_set_contents (vf, text, -1, NULL));
  g_free (vf);
  g_free (text);
  g_free (root);
  return lib;
}

static void
remove_versioned_dir (gchar * lib)
{
  gchar *root = g_path_get_dirname (lib), *p;

  p = g_build_filename (lib, "libnvds_meta.so", NULL);
  g_unlink (p);
  g_free (p);
  p = g_build_filename (lib, "libnvdsgst_meta.so", NULL);
  g_unlink (p);
  g_free (p);
  g_rmdir (lib);
  p = g_build_filename (root, "version", NULL);
  g_unlink (p);
  g_free (p);
  g_rmdir (root);
  g_free (root);
  g_free (lib);
}

/* An unknown version: NVMM refused when the caps come, with the version found. */
GST_START_TEST (test_unknown_version)
{
  gchar *dir = versioned_dir ("5.1");
  GstElement *el = make_classify ("nvds-lib-dir", dir, NULL);
  GstBus *bus = gst_bus_new ();
  GstHarness *h;
  GstMessage *msg;
  GError *err = NULL;

  load_ds ();
  fail_if (sink_offers_nvmm (el));
  gst_element_set_bus (el, bus);
  h = harness_for (el, NVMM_CAPS ("RGBA"));
  fail_if (gst_harness_push (h, forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0,
              &rgba0, 64)) == GST_FLOW_OK);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL);
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (strstr (err->message, "DeepStream 5.1") != NULL, "%s",
      err->message);
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_bus (el, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);

  /* the system-memory path of an element pointed there works as before */
  {
    GstBuffer *buf, *out;

    h = harness_for (make_classify ("nvds-lib-dir", dir, NULL),
        "video/x-raw,format=RGBA,width=64,height=48");
    buf = gst_harness_create_buffer (h, W * H * 4);
    gst_buffer_memset (buf, 0, 0x40, W * H * 4);
    fail_unless_equals_int (gst_harness_push (h, buf), GST_FLOW_OK);
    out = gst_harness_pull (h);
    fail_unless (gpunet_meta_get (out) != NULL);
    gst_buffer_unref (out);
    gst_harness_teardown (h);
  }
  remove_versioned_dir (dir);
}

GST_END_TEST;

/* ---- primary mode -------------------------------------------------------------- */

/* Two sources in one batch: a record per surface, equal to the system-memory path's
 * for the same pixels, and an NvDsClassifierMeta on a full-frame object of each
 * NvDsFrameMeta carrying the same top-k.  `stride` 384 is read with a 7.1 install. */
static void
run_primary (guint stride, const gchar * dir)
{
  GstElement *el = make_classify ("gie-unique-id", "5", "top-k", "5", NULL);
  Surf s[2] = { rgba0, rgba1 };
  GpunetNvDsBatchMeta *b;
  GstBuffer *in, *out;
  GstHarness *h;
  guint i;

  load_ds ();
  if (dir)
    g_object_set (el, "nvds-lib-dir", dir, NULL);
  h = harness_for (el, NVMM_CAPS ("RGBA"));
  in = forge (stride, 4, 2, GPUNET_NVBUF_MEM_SYSTEM, 0, s, 64);
  add_batch (in, 2);
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (out != NULL);
  fail_unless_equals_int (count_regions (out), 2);
  b = ds.get_batch (out);
  fail_unless (b != NULL);
  for (i = 0; i < 2; i++) {
    GpunetNvDsFrameMeta *f = frame_of (b, i);
    GpunetNvDsObjectMeta *o;
    const GstStructure *rec = record_where (out, "nvds-frame", "batch-id", i,
        NULL);
    GstStructure *sys = system_record (s[i].seed, 0, 0, 0, 0);
    gboolean inferred = FALSE;

    fail_unless (rec != NULL);
    fail_unless (gst_structure_get_boolean (rec, "inferred", &inferred)
        && inferred);
    check_same_record (rec, sys);
    gst_structure_free (sys);
    /* the full-frame object nvinfer adds for a full-frame classifier */
    fail_unless_equals_int (g_list_length (f->obj_meta_list), 1);
    o = f->obj_meta_list->data;
    fail_unless_equals_int (o->unique_component_id, 5);
    fail_unless (o->object_id == GPUNET_NVDS_UNTRACKED_OBJECT_ID);
    fail_unless (o->rect_params.left == 0 && o->rect_params.top == 0
        && o->rect_params.width == W && o->rect_params.height == H);
    check_classifier (o, rec, 5);
  }
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_START_TEST (test_primary)
{
  run_primary (GPUNET_NVBUF_PARAMS_STRIDE_V8, NULL);
}

GST_END_TEST;

GST_START_TEST (test_primary_ds71_layout)
{
  gchar *dir = versioned_dir ("7.1");

  run_primary (GPUNET_NVBUF_PARAMS_STRIDE_V6, dir);
  remove_versioned_dir (dir);
}

GST_END_TEST;

/* NV12 surfaces and no NvDsBatchMeta (nvvideoconvert alone): our records only. */
GST_START_TEST (test_primary_nv12_no_batch_meta)
{
  GstHarness *h = harness_for (make_classify (NULL), NVMM_CAPS ("NV12"));
  Surf s = { GPUNET_NVBUF_COLOR_NV12, W, H, 128, 3, FALSE, 0, 0, 0 };
  GstBuffer *out;

  load_ds ();
  fail_unless_equals_int (gst_harness_push (h, forge (416, 1, 1,
              GPUNET_NVBUF_MEM_SYSTEM, 0, &s, 64)), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless (record_where (out, "nvds-frame", "batch-id", 0, NULL) != NULL);
  fail_unless (ds.get_batch (out) == NULL);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* interval=2 per source: source 10 is in every batch and classified on batches 0,
 * 3, 6; source 11 joins at batch 1 and is classified on 1 and 4.  The batches
 * between carry each source's last result (inferred=false, the same top-k) and,
 * as nvinfer leaves a batch it skips, no NvDs classifier meta. */
GST_START_TEST (test_primary_interval)
{
  const gboolean expect[2][7] = {
    {TRUE, FALSE, FALSE, TRUE, FALSE, FALSE, TRUE},
    {FALSE, TRUE, FALSE, FALSE, TRUE, FALSE, FALSE}
  };
  GstStructure *last[2] = { NULL, NULL };
  guint classified = 0, carried = 0, i, src;
  GstHarness *h;

  load_ds ();
  h = harness_for (make_classify ("interval", "2", "gie-unique-id", "3",
          NULL), NVMM_CAPS ("RGBA"));
  for (i = 0; i < 7; i++) {
    Surf s[2] = { rgba0, rgba1 };
    guint n = i == 0 ? 1 : 2;
    GpunetNvDsBatchMeta *b;
    GstBuffer *in, *out;

    /* new pixels every batch: a carried result is not a re-classification */
    s[0].seed = 10 + 2 * i;
    s[1].seed = 11 + 2 * i;
    in = forge (416, 4, n, GPUNET_NVBUF_MEM_SYSTEM, 0, s, 64);
    add_batch (in, n);
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
    out = gst_harness_pull (h);
    fail_unless_equals_int (count_regions (out), n);
    b = ds.get_batch (out);
    for (src = 0; src < n; src++) {
      const GstStructure *rec = record_where (out, "nvds-frame", "source-id",
          10 + src, NULL);
      GpunetNvDsFrameMeta *f = frame_of (b, src);
      gboolean inferred = FALSE;

      fail_unless (rec != NULL, "batch %u, source %u: no record", i, 10 + src);
      fail_unless (gst_structure_get_boolean (rec, "inferred", &inferred));
      fail_unless_equals_int (inferred, expect[src][i]);
      if (inferred) {
        classified++;
        if (last[src])
          gst_structure_free (last[src]);
        last[src] = gst_structure_copy (rec);
        fail_unless_equals_int (g_list_length (f->obj_meta_list), 1);
        check_classifier (f->obj_meta_list->data, rec, 3);
      } else {
        carried++;
        fail_unless (last[src] != NULL);
        check_same_record (rec, last[src]);
        fail_unless_equals_string (gpunet_meta_label (rec),
            gpunet_meta_label (last[src]));
        fail_unless (f->obj_meta_list == NULL, "batch %u, source %u: NvDs "
            "meta on a carried frame", i, 10 + src);
      }
    }
    gst_buffer_unref (out);
  }
  fail_unless_equals_int (classified, 5);
  fail_unless_equals_int (carried, 8);
  for (src = 0; src < 2; src++)
    gst_structure_free (last[src]);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ---- secondary mode ------------------------------------------------------------ */

/* Objects filtered by detector id, class and size; each classified one gets its
 * NvDsClassifierMeta (gie-unique-id 7) with our record's top-k, equal to the
 * system path's crop of the same box. */
GST_START_TEST (test_secondary)
{
  GstElement *el = make_classify ("roi-mode", "regions", "operate-on-gie-id",
      "1", "operate-on-class-ids", "0;2", "gie-unique-id", "7", NULL);
  GpunetNvDsObjectMeta *a, *bb, *c, *d, *e;
  GpunetNvDsBatchMeta *b;
  GpunetNvDsFrameMeta *f;
  GstStructure *sys;
  GstBuffer *in, *out;
  GstHarness *h;

  load_ds ();
  h = harness_for (el, NVMM_CAPS ("RGBA"));
  in = forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &rgba0, 64);
  b = add_batch (in, 1);
  f = frame_of (b, 0);
  a = add_object (b, f, 1, 0, 100, 4, 4, 24, 20);
  bb = add_object (b, f, 1, 1, 101, 4, 4, 24, 20);      /* class 1: not ours */
  c = add_object (b, f, 2, 0, 102, 4, 4, 24, 20);       /* detector 2 */
  d = add_object (b, f, 1, 2, 103, 30, 20, 30, 26);
  e = add_object (b, f, 1, 0, 104, 70, 60, 10, 10);     /* outside the frame */
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_int (count_regions (out), 2);
  b = ds.get_batch (out);
  f = frame_of (b, 0);
  /* the copy made writable may have new metas: find them by object id */
  {
    GList *l;

    a = bb = c = d = e = NULL;
    for (l = f->obj_meta_list; l; l = l->next) {
      GpunetNvDsObjectMeta *o = l->data;

      if (o->object_id == 100)
        a = o;
      else if (o->object_id == 101)
        bb = o;
      else if (o->object_id == 102)
        c = o;
      else if (o->object_id == 103)
        d = o;
      else if (o->object_id == 104)
        e = o;
    }
  }
  fail_unless (a && bb && c && d && e);
  fail_unless_equals_int (g_list_length (f->obj_meta_list), 5);
  check_classifier (a, record_where (out, "nvds-object", "object-id", 100,
          NULL), 7);
  check_classifier (d, record_where (out, "nvds-object", "object-id", 103,
          NULL), 7);
  fail_unless (CLASSIFIERS (bb) == NULL);
  fail_unless (CLASSIFIERS (c) == NULL);
  fail_unless (CLASSIFIERS (e) == NULL);
  sys = system_record (rgba0.seed, 4, 4, 24, 20);
  check_same_record (record_where (out, "nvds-object", "object-id", 100, NULL),
      sys);
  gst_structure_free (sys);
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* roi-min-size and roi-max-size, as nvinfer's input-object-min/max-width/-height:
 * objects narrower or lower than 10 pixels, or wider or higher than 24, get no
 * record and no classifier meta; the others do. */
GST_START_TEST (test_secondary_sizes)
{
  GstElement *el = make_classify ("roi-mode", "regions", "roi-min-size", "10",
      "roi-max-size", "24", NULL);
  GpunetNvDsBatchMeta *b;
  GpunetNvDsFrameMeta *f;
  GstBuffer *in, *out;
  GstHarness *h;

  load_ds ();
  h = harness_for (el, NVMM_CAPS ("RGBA"));
  in = forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &rgba0, 64);
  b = add_batch (in, 1);
  f = frame_of (b, 0);
  add_object (b, f, 1, 0, 200, 4, 4, 24, 24);           /* at the limit: in */
  add_object (b, f, 1, 0, 201, 4, 4, 9, 20);            /* too narrow */
  add_object (b, f, 1, 0, 202, 4, 4, 25, 20);           /* too wide */
  add_object (b, f, 1, 0, 203, 30, 4, 12, 30);          /* too high */
  add_object (b, f, 1, 0, 204, 30, 4, 10, 10);          /* at the minimum: in */
  fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
  out = gst_harness_pull (h);
  fail_unless_equals_int (count_regions (out), 2);
  fail_unless (record_where (out, "nvds-object", "object-id", 200, NULL) != NULL);
  fail_unless (record_where (out, "nvds-object", "object-id", 204, NULL) != NULL);
  fail_unless (record_where (out, "nvds-object", "object-id", 202, NULL) == NULL,
      "an object wider than roi-max-size was classified");
  fail_unless (record_where (out, "nvds-object", "object-id", 203, NULL) == NULL,
      "an object higher than roi-max-size was classified");
  gst_buffer_unref (out);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* The object-id cache: an object is classified, carried (inferred=false, the same
 * classes in its NvDs meta) until its reclassify interval, and classified again
 * at once when its box grows by 20 % or more. */
GST_START_TEST (test_secondary_cache)
{
  GstElement *el = make_classify ("roi-mode", "regions", NULL);
  const gboolean expect[7] = { TRUE, FALSE, FALSE, TRUE, TRUE, FALSE, FALSE };
  gchar *first = NULL;
  GstHarness *h;
  guint i;

  load_ds ();
  /* every 3rd frame: the cache's own property where the element has it */
  if (g_object_class_find_property (G_OBJECT_GET_CLASS (el),
          "reclassify-interval"))
    g_object_set (el, "reclassify-interval", 3, NULL);
  else
    g_object_set (el, "interval", 2, NULL);
  h = harness_for (el, NVMM_CAPS ("RGBA"));
  for (i = 0; i < 7; i++) {
    Surf s = rgba0;
    GstBuffer *in, *out;
    GpunetNvDsBatchMeta *b;
    GpunetNvDsFrameMeta *f;
    const GstStructure *rec;
    gboolean inferred;
    /* frame 4: the box grows from 20x20 to 26x26 (+69 % area) */
    gfloat side = i >= 4 ? 26 : 20;

    s.seed = 1 + i;
    in = forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &s, 64);
    b = add_batch (in, 1);
    f = frame_of (b, 0);
    f->frame_num = (gint) i;
    add_object (b, f, 1, 0, 7, 8, 8, side, side);
    /* an untracked object is classified every time */
    add_object (b, f, 1, 0, GPUNET_NVDS_UNTRACKED_OBJECT_ID, 30, 20, 20, 20);
    fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
    out = gst_harness_pull (h);
    rec = record_where (out, "nvds-object", "object-id", 7, NULL);
    fail_unless (rec != NULL, "frame %u: no record", i);
    fail_unless (gst_structure_get_boolean (rec, "inferred", &inferred));
    fail_unless_equals_int (inferred, expect[i]);
    if (i == 0)
      first = g_strdup (gpunet_meta_label (rec));
    else if (i < 4)
      fail_unless_equals_string (gpunet_meta_label (rec), first);
    rec = record_where (out, "nvds-object", "object-id",
        GPUNET_NVDS_UNTRACKED_OBJECT_ID, NULL);
    fail_unless (rec != NULL);
    fail_unless (gst_structure_get_boolean (rec, "inferred", &inferred)
        && inferred);
    b = ds.get_batch (out);
    f = frame_of (b, 0);
    {
      GList *l;

      for (l = f->obj_meta_list; l; l = l->next) {
        GpunetNvDsObjectMeta *o = l->data;

        check_classifier (o, record_where (out, "nvds-object", "object-id",
                o->object_id, NULL), 0);
      }
    }
    gst_buffer_unref (out);
  }
  g_free (first);
  gst_harness_teardown (h);
}

GST_END_TEST;

/* ---- when-busy ----------------------------------------------------------------- */

/* Our record of `type` with the nvds param's source-id `source` and object-id
 * `object` (any for whole frames). */
static const GstStructure *
record_of (GstBuffer * buf, const gchar * type, guint source, guint64 object)
{
  gpointer state = NULL;
  GstMeta *meta;

  while ((meta = gst_buffer_iterate_meta_filtered (buf, &state,
              GST_VIDEO_REGION_OF_INTEREST_META_API_TYPE))) {
    GstVideoRegionOfInterestMeta *r = (GstVideoRegionOfInterestMeta *) meta;
    const GstStructure *n;
    guint src = G_MAXUINT;
    guint64 obj = 0;

    if (r->roi_type != g_quark_from_string (type))
      continue;
    n = gst_video_region_of_interest_meta_get_param (r, "nvds");
    fail_unless (n && gst_structure_get_uint (n, "source-id", &src)
        && gst_structure_get_uint64 (n, "object-id", &obj));
    if (src == source && (obj == object || object == G_MAXUINT64 - 1))
      return gst_video_region_of_interest_meta_get_param (r, GPUNET_META_NAME);
  }
  return NULL;
}

typedef struct
{
  guint classified, skipped;    /* buffers seen classified, carried */
  gboolean inferred[64];        /* per buffer: classified */
  GstStructure *stats;
} Busy;

/* Output batch i of run_busy: either classified (every record inferred) or
 * skipped; then each tracked object or source carries its last classified
 * top-k (in `last`; NvDs meta: an object's the same, a whole frame none) and the
 * untracked object has none. */
static void
check_busy_out (Busy * out, GstStructure * last[2][3], GstBuffer * buf,
    guint i, gboolean regions)
{
  GpunetNvDsBatchMeta *b = ds.get_batch (buf);
  gint inferred_buf = -1;
  guint src, o;

  fail_unless_equals_uint64 (GST_BUFFER_PTS (buf), i * 40 * GST_MSECOND);
  for (src = 0; src < 2; src++) {
    GpunetNvDsFrameMeta *f = frame_of (b, src);
    guint n_obj = regions ? 3 : 1;

    for (o = 0; o < n_obj; o++) {
      guint64 id = !regions ? G_MAXUINT64 - 1 : o == 2 ?
          GPUNET_NVDS_UNTRACKED_OBJECT_ID : 7 + o;
      const GstStructure *rec = record_of (buf, regions ? "nvds-object" :
          "nvds-frame", 10 + src, id);
      GpunetNvDsObjectMeta *om = NULL;
      gboolean inferred = FALSE;
      GList *l;

      for (l = f->obj_meta_list; regions && l; l = l->next)
        if (((GpunetNvDsObjectMeta *) l->data)->object_id == id)
          om = l->data;
      if (rec == NULL) {
        /* only an untracked object of a skipped batch has no record */
        fail_unless (regions && o == 2 && inferred_buf != 1, "batch %u, "
            "source %u, object %u: no record", i, src, o);
        fail_unless (CLASSIFIERS (om) == NULL);
        inferred_buf = 0;
        continue;
      }
      fail_unless (gst_structure_get_boolean (rec, "inferred", &inferred));
      if (inferred_buf < 0)
        inferred_buf = inferred;
      fail_unless_equals_int (inferred, inferred_buf);
      if (inferred) {
        if (last[src][o])
          gst_structure_free (last[src][o]);
        last[src][o] = gst_structure_copy (rec);
      } else {
        fail_unless (last[src][o] != NULL, "batch %u: carried before a "
            "result", i);
        check_same_record (rec, last[src][o]);
        fail_unless_equals_string (gpunet_meta_label (rec),
            gpunet_meta_label (last[src][o]));
      }
      if (regions)
        check_classifier (om, rec, 4);
      else if (inferred)
        check_classifier (f->obj_meta_list->data, rec, 4);
      else
        fail_unless (f->obj_meta_list == NULL);
    }
  }
  if (i < G_N_ELEMENTS (out->inferred))
    out->inferred[i] = inferred_buf;
  if (inferred_buf)
    out->classified++;
  else
    out->skipped++;
}

/* `n` batches of two sources into a cpu-ref engine (1-3 ms a pass) with
 * `when_busy`, upstream live or not, in bursts of three pushed as fast as they
 * come (microseconds apart: the engine is busy with the first), each burst
 * pulled before the next.  Regions: two tracked objects and an untracked one
 * per source.  Every buffer comes out in order (check_busy_out). */
static void
run_busy_interval (Busy * out, const gchar * when_busy, gboolean live,
    gboolean regions, guint n, const gchar * interval)
{
  GstElement *el = make_classify ("backend", "cpu-ref", "when-busy",
      when_busy, "roi-mode", regions ? "regions" : "frame", "gie-unique-id",
      "4", "interval", interval, NULL);
  GstStructure *last[2][3] = { {NULL} };
  GstHarness *h;
  guint i, j, src, o;

  memset (out, 0, sizeof *out);
  load_ds ();
  h = harness_for (el, NVMM_CAPS ("RGBA"));
  gst_harness_set_live (h, live);
  for (i = 0; i < n; i = j) {
    for (j = i; j < n && j < i + 3; j++) {
      Surf s[2] = { rgba0, rgba1 };
      GpunetNvDsBatchMeta *b;
      GstBuffer *in;

      s[0].seed = 20 + 2 * j;
      s[1].seed = 21 + 2 * j;
      in = forge (416, 2, 2, GPUNET_NVBUF_MEM_SYSTEM, 0, s, 64);
      GST_BUFFER_PTS (in) = j * 40 * GST_MSECOND;
      b = add_batch (in, 2);
      if (regions)
        for (src = 0; src < 2; src++) {
          add_object (b, frame_of (b, src), 1, 0, 7, 4, 4, 24, 20);
          add_object (b, frame_of (b, src), 1, 0, 8, 30, 20, 30, 26);
          add_object (b, frame_of (b, src), 1, 0,
              GPUNET_NVDS_UNTRACKED_OBJECT_ID, 10, 10, 20, 20);
        }
      fail_unless_equals_int (gst_harness_push (h, in), GST_FLOW_OK);
    }
    for (j = i; j < n && j < i + 3; j++) {
      GstBuffer *buf = gst_harness_pull (h);

      fail_unless (buf != NULL, "batch %u did not come out", j);
      check_busy_out (out, last, buf, j, regions);
      gst_buffer_unref (buf);
    }
  }
  for (src = 0; src < 2; src++)
    for (o = 0; o < 3; o++)
      if (last[src][o])
        gst_structure_free (last[src][o]);
  g_object_get (h->element, "stats", &out->stats, NULL);
  fail_unless (out->stats != NULL);
  gst_harness_teardown (h);
}

static void
run_busy (Busy * out, const gchar * when_busy, gboolean live, gboolean regions,
    guint n)
{
  run_busy_interval (out, when_busy, live, regions, n, "0");
}

static guint64
stat_u64 (const GstStructure * s, const gchar * field)
{
  guint64 v = G_MAXUINT64;

  fail_unless (gst_structure_get_uint64 (s, field, &v), "no %s", field);
  return v;
}

/* The buffers seen skipped are the element's `skipped`, the others its
 * `classified`; nothing failed, dropped or carried by interval. */
static void
check_busy_stats (const Busy * b, guint n)
{
  GST_INFO ("classified %u, skipped %u: %" GST_PTR_FORMAT, b->classified,
      b->skipped, b->stats);
  fail_unless_equals_uint64 (stat_u64 (b->stats, "frames-in"), n);
  fail_unless_equals_uint64 (stat_u64 (b->stats, "skipped"), b->skipped);
  fail_unless_equals_uint64 (stat_u64 (b->stats, "classified"), b->classified);
  fail_unless_equals_uint64 (stat_u64 (b->stats, "carried") + stat_u64 (b->stats,
          "failed") + stat_u64 (b->stats, "dropped"), 0);
}

/* skip, primary and secondary: batches arriving while the engine is busy are
 * carried and counted as skipped. */
GST_START_TEST (test_when_busy_skip)
{
  gboolean regions;

  for (regions = FALSE; regions <= TRUE; regions++) {
    Busy b;

    run_busy (&b, "skip", FALSE, regions, 15);
    check_busy_stats (&b, 15);
    fail_unless (b.skipped > 0, "regions=%d: nothing skipped", regions);
    /* the first of each burst at least */
    fail_unless (b.classified >= 5, "regions=%d: %u classified", regions,
        b.classified);
    gst_structure_free (b.stats);
  }
}

GST_END_TEST;

/* A skipped batch does not count as a classification.  interval=1 (every second
 * batch due), bursts of three as in run_busy: a due batch may be skipped only
 * while the engine is busy (never the first of a burst), a batch not due is
 * carried, and the batch after a skipped one is due again; had the skip counted
 * as a classification, a burst would start with a due batch carried. */
GST_START_TEST (test_when_busy_skip_interval)
{
  guint j, skipped = 0;
  gint last = -1;               /* the last batch classified */
  Busy b;

  run_busy_interval (&b, "skip", FALSE, FALSE, 30, "1");
  for (j = 0; j < 30; j++) {
    gboolean due = last < 0 || j - (guint) last >= 2;

    if (!due) {
      fail_if (b.inferred[j], "batch %u classified, not due", j);
    } else if (b.inferred[j]) {
      last = (gint) j;
    } else {
      fail_if (j % 3 == 0, "batch %u: due, the engine idle, yet carried", j);
      skipped++;
    }
  }
  GST_INFO ("due batches skipped: %u", skipped);
  fail_unless (skipped > 0, "no due batch was skipped");
  fail_unless_equals_uint64 (stat_u64 (b.stats, "skipped"), skipped);
  gst_structure_free (b.stats);
}

GST_END_TEST;

/* auto: a live upstream skips, a non-live one waits and classifies every batch. */
GST_START_TEST (test_when_busy_auto)
{
  Busy b;

  run_busy (&b, "auto", TRUE, FALSE, 15);
  check_busy_stats (&b, 15);
  fail_unless (b.skipped > 0, "auto, live: nothing skipped");
  gst_structure_free (b.stats);

  run_busy (&b, "auto", FALSE, FALSE, 12);
  check_busy_stats (&b, 12);
  fail_unless_equals_int (b.skipped, 0);
  fail_unless_equals_int (b.classified, 12);
  gst_structure_free (b.stats);
}

GST_END_TEST;

/* ---- bad surfaces -------------------------------------------------------------- */

/* Pushes `in` into a fresh element (`prop`=`value` set when not NULL): the push
 * fails with an element error whose text holds `field` and `value_text`. */
static void
expect_surface_error (GstBuffer * in, const gchar * prop, const gchar * value,
    const gchar * field, const gchar * value_text)
{
  GstElement *el = make_classify (prop, value, NULL);
  GstBus *bus = gst_bus_new ();
  GstHarness *h;
  GstMessage *msg;
  GError *err = NULL;

  gst_element_set_bus (el, bus);
  h = harness_for (el, NVMM_CAPS ("RGBA"));
  fail_unless (gst_harness_push (h, in) == GST_FLOW_ERROR, "%s accepted",
      field);
  msg = gst_bus_pop_filtered (bus, GST_MESSAGE_ERROR);
  fail_unless (msg != NULL, "no error for %s", field);
  gst_message_parse_error (msg, &err, NULL);
  fail_unless (strstr (err->message, field) != NULL, "'%s' not in: %s", field,
      err->message);
  fail_unless (strstr (err->message, value_text) != NULL, "'%s' not in: %s",
      value_text, err->message);
  g_clear_error (&err);
  gst_message_unref (msg);
  gst_element_set_bus (el, NULL);
  gst_object_unref (bus);
  gst_harness_teardown (h);
}

GST_START_TEST (test_bad_surfaces)
{
  Surf s = rgba0;
  GstBuffer *in;
  GpunetNvDsBatchMeta *b;

  load_ds ();
  {
    Surf two[3] = { rgba0, rgba0, rgba0 };
    expect_surface_error (forge (416, 2, 3, GPUNET_NVBUF_MEM_SYSTEM, 0, two,
            64), NULL, NULL, "numFilled is 3", "batchSize 2");
  }
  s.null_data = TRUE;
  expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &s, 64),
      NULL, NULL, "surfaceList[0].dataPtr", "NULL");
  s = rgba0;
  s.pitch = 100;
  expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &s, 64),
      NULL, NULL, "surfaceList[0].planeParams.pitch[0]", "is 100 bytes");
  s = rgba0;
  s.color = 1;                  /* GRAY8 */
  expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &s, 64),
      NULL, NULL, "surfaceList[0].colorFormat", "is 1");
  s = rgba1;                    /* tight rows: one byte short is past the end */
  s.short_by = 1;
  expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &s, 64),
      NULL, NULL, "surfaceList[0] plane 0", "dataSize");
  s = rgba0;
  s.num_planes = 3;
  expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &s, 64),
      NULL, NULL, "planeParams.num_planes", "is 3");
  {
    /* NV12 two rows high: its one chroma row fits dataSize whatever its pitch, so
     * a pitch past G_MAXINT must be refused by its own check, not made a negative
     * stride */
    Surf nv = { GPUNET_NVBUF_COLOR_NV12, W, 2, 128, 3, FALSE, 0, 0, 0x80000000u };
    expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &nv, 64),
        NULL, NULL, "surfaceList[0]", "2147483648");
  }
  expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 1, &rgba0,
          64), "device-id", "0", "gpuId is 1", "device 0");
  expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_CUDA_DEVICE, 0,
          &rgba0, 64), NULL, NULL, "memType is 2", "backend=cuda");
  expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_SURFACE_ARRAY, 0,
          &rgba0, 64), NULL, NULL, "memType is 4", "backend=cuda");
  expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_HANDLE, 0,
          &rgba0, 64), NULL, NULL, "memType is 5", "NVRM handle");
  expect_surface_error (forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &rgba0,
          8), NULL, NULL, "maps to 8 bytes", "NvBufSurface");
  in = forge (416, 1, 1, GPUNET_NVBUF_MEM_SYSTEM, 0, &rgba0, 64);
  b = add_batch (in, 2);        /* frame meta batch_id 1: no such surface */
  (void) b;
  expect_surface_error (in, NULL, NULL, "NvDsFrameMeta.batch_id is 1",
      "holds 1 surfaces");
}

GST_END_TEST;

static Suite *
nvmm_suite (void)
{
  Suite *s = suite_create ("gpunetclassify-nvmm");
  TCase *tc = tcase_create ("nvmm");

  suite_add_tcase (s, tc);
  tcase_add_test (tc, test_abi);
  tcase_add_test (tc, test_layout_versions);
  tcase_add_test (tc, test_caps_offered);
  tcase_add_test (tc, test_unknown_version);
  tcase_add_test (tc, test_primary);
  tcase_add_test (tc, test_primary_ds71_layout);
  tcase_add_test (tc, test_primary_nv12_no_batch_meta);
  tcase_add_test (tc, test_primary_interval);
  tcase_add_test (tc, test_secondary);
  tcase_add_test (tc, test_secondary_cache);
  tcase_add_test (tc, test_secondary_sizes);
  tcase_add_test (tc, test_when_busy_skip);
  tcase_add_test (tc, test_when_busy_auto);
  tcase_add_test (tc, test_when_busy_skip_interval);
  tcase_add_test (tc, test_bad_surfaces);
  return s;
}

GST_CHECK_MAIN (nvmm);
