/* gpunet-validate: top-1 and top-5 accuracy of a checkpoint on an ImageNet-style set,
 * the job of NVIDIA's validate.py. The set is a folder of class subfolders (named by
 * class index, or by WordNet id: mapped by sorted order like torchvision's
 * ImageFolder, or by --class-map), or a list file of `path label` lines. Photos are
 * decoded by GStreamer (gpunet-run-image.c) and go through the engine's preprocess,
 * as in the element. Prints progress, the accuracies, a per-class confusion summary
 * and the images/s. Exit: 0 done, 1 no image could be classified, 2 usage/setup. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "gpunet-run-image.h"
#include "gpunet.h"
#include "gpunet-tool-args.h"
#include "gpunet-tool-text.h"
#include "gpunet-validate-against.h"

#define IMAGE_EXTS ".jpg.jpeg.png.bmp.webp.tif.tiff.JPEG.JPG.PNG"

typedef struct {
  gchar *path;
  gint label;
} Sample;

typedef struct {
  guint64 n, top1, top5;
  GHashTable *wrong;            /* predicted id -> count of top-1 mistakes */
} ClassStats;

static gboolean
has_image_ext (const gchar * name)
{
  const gchar *dot = strrchr (name, '.');
  gchar *pat;
  gboolean ok;

  if (dot == NULL || dot[1] == '\0')
    return FALSE;
  pat = g_strconcat (dot, ".", NULL);
  ok = strstr (IMAGE_EXTS ".", pat) != NULL;
  g_free (pat);
  return ok;
}

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const gchar * const *) a, *(const gchar * const *) b);
}

/* Class-map file: one class per line in class-index order; the first word of a line
 * is its name (a WordNet id in LOC_synset_mapping.txt style). */
static GHashTable *
read_class_map (const gchar * path, GError ** error)
{
  gchar *text = NULL, **lines;
  GHashTable *map;
  gint idx = 0;

  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  map = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  lines = g_strsplit (text, "\n", -1);
  for (gchar ** l = lines; *l; l++) {
    gchar *s = g_strstrip (*l), *sp;
    if (*s == '\0')
      continue;
    sp = strpbrk (s, " \t,");
    if (sp)
      *sp = '\0';
    g_hash_table_insert (map, g_strdup (s), GINT_TO_POINTER (idx++));
  }
  g_strfreev (lines);
  g_free (text);
  return map;
}

/* A class name to an index: a number is the index; else the class map; else -1. */
static gint
class_index (const gchar * name, GHashTable * class_map)
{
  gchar *end = NULL;
  guint64 v;
  gpointer idx;

  if (class_map && g_hash_table_lookup_extended (class_map, name, NULL, &idx))
    return GPOINTER_TO_INT (idx);
  v = g_ascii_strtoull (name, &end, 10);
  if (end != name && *end == '\0' && v < G_MAXINT)
    return (gint) v;
  return -1;
}

static void
collect_images (const gchar * dir, gint label, GArray * samples)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  const gchar *n;

  if (d == NULL)
    return;
  while ((n = g_dir_read_name (d)))
    g_ptr_array_add (names, g_strdup (n));
  g_dir_close (d);
  g_ptr_array_sort (names, cmp_str);
  for (guint i = 0; i < names->len; i++) {
    gchar *p = g_build_filename (dir, g_ptr_array_index (names, i), NULL);
    if (g_file_test (p, G_FILE_TEST_IS_DIR)) {
      collect_images (p, label, samples);     /* nested folders of one class */
      g_free (p);
    } else if (has_image_ext (p)) {
      Sample s = { p, label };
      g_array_append_val (samples, s);
    } else {
      g_free (p);
    }
  }
  g_ptr_array_unref (names);
}

/* Class subfolders of `root`. Returns FALSE with `error` set when a folder name
 * cannot be mapped. */
static gboolean
scan_folder (const gchar * root, GHashTable * class_map, gint num_classes,
    GArray * samples, GPtrArray * class_names, GError ** error)
{
  GDir *d = g_dir_open (root, 0, error);
  GPtrArray *subs = g_ptr_array_new_with_free_func (g_free);
  const gchar *n;
  gboolean numeric = TRUE, ok = TRUE;

  if (d == NULL)
    return FALSE;
  while ((n = g_dir_read_name (d))) {
    gchar *p = g_build_filename (root, n, NULL);
    if (n[0] != '.' && g_file_test (p, G_FILE_TEST_IS_DIR)) {
      g_ptr_array_add (subs, g_strdup (n));
      if (class_index (n, NULL) < 0)
        numeric = FALSE;
    }
    g_free (p);
  }
  g_dir_close (d);
  g_ptr_array_sort (subs, cmp_str);
  if (subs->len == 0) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "'%s' has no class "
        "subfolders (or give --list FILE)", root);
    ok = FALSE;
  } else if (!numeric && class_map == NULL && (gint) subs->len != num_classes) {
    g_printerr ("gpunet-validate: note: %u class folders for a %d-class model, "
        "mapped by sorted order (as torchvision's ImageFolder); for a subset of "
        "classes give --class-map (e.g. ImageNet's LOC_synset_mapping.txt)\n",
        subs->len, num_classes);
  }
  for (guint i = 0; ok && i < subs->len; i++) {
    const gchar *name = g_ptr_array_index (subs, i);
    gint label = class_map ? class_index (name, class_map) : numeric ?
        class_index (name, NULL) : (gint) i;
    gchar *p;

    if (label < 0 || label >= num_classes) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "class folder '%s' "
          "is not a class of this %d-class model%s", name, num_classes,
          class_map ? " or of --class-map" : "");
      ok = FALSE;
      break;
    }
    if (!numeric && (guint) label < class_names->len
        && !g_ptr_array_index (class_names, label))
      g_ptr_array_index (class_names, label) = g_strdup (name);
    p = g_build_filename (root, name, NULL);
    collect_images (p, label, samples);
    g_free (p);
  }
  g_ptr_array_unref (subs);
  return ok;
}

/* List file: `path label` per line (path relative to the list's folder; label an
 * index or a --class-map name); '#' comments and blank lines skipped. */
static gboolean
read_list (const gchar * list, GHashTable * class_map, gint num_classes,
    GArray * samples, GError ** error)
{
  gchar *text = NULL, **lines, *base = g_path_get_dirname (list);
  gboolean ok = TRUE;
  guint line_no = 0;

  if (!g_file_get_contents (list, &text, NULL, error)) {
    g_free (base);
    return FALSE;
  }
  lines = g_strsplit (text, "\n", -1);
  for (gchar ** l = lines; ok && *l; l++) {
    gchar *s = g_strstrip (*l), *sp;
    gint label;

    line_no++;
    if (*s == '\0' || *s == '#')
      continue;
    sp = strrchr (s, ' ');
    if (sp == NULL)
      sp = strrchr (s, '\t');
    if (sp == NULL) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s:%u: expected "
          "'path label'", list, line_no);
      ok = FALSE;
      break;
    }
    *sp = '\0';
    g_strchomp (s);
    label = class_index (g_strstrip (sp + 1), class_map);
    if (label < 0 || label >= num_classes) {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s:%u: label '%s' "
          "is not a class of this %d-class model%s", list, line_no, sp + 1,
          num_classes, class_map ? "" : " (names need --class-map)");
      ok = FALSE;
      break;
    }
    Sample smp = { g_path_is_absolute (s) ? g_strdup (s) :
          g_build_filename (base, s, NULL), label };
    g_array_append_val (samples, smp);
  }
  g_strfreev (lines);
  g_free (text);
  g_free (base);
  return ok;
}

static const gchar *
class_name (gint id, gint num_classes, GPtrArray * names, gchar * buf, gsize n)
{
  const gchar *s = NULL;

  if (num_classes == 1000)
    s = gpunet_imagenet_label (id);
  if (s == NULL && names && (guint) id < names->len)
    s = g_ptr_array_index (names, id);
  if (s == NULL) {
    g_snprintf (buf, n, "class-%d", id);
    s = buf;
  }
  return s;
}

typedef struct {
  gint id;
  gdouble acc;
  guint64 n;
} ClassOrder;

static gint
cmp_acc (gconstpointer a, gconstpointer b)
{
  const ClassOrder *x = a, *y = b;
  if (x->acc != y->acc)
    return x->acc < y->acc ? -1 : 1;
  return x->id - y->id;
}

int
main (int argc, char **argv)
{
  gchar *model_name = NULL, *ckpt = NULL, *list = NULL, *class_map_path = NULL;
  gchar *backend_s = NULL, **rest = NULL, *against = NULL, *precision_s = NULL;
  gchar *scales = NULL;
  gint threads = 0, limit = 0, show = 10;
  gint64 seed = 1;
  gboolean quiet = FALSE, all_classes = FALSE;
  GError *err = NULL;
  GOptionContext *ctx;
  int rc = 2;

  const GOptionEntry entries[] = {
    {"model", 'm', 0, G_OPTION_ARG_STRING, &model_name,
        "Architecture: built-in name or NVIDIA JSON path", "NAME"},
    {"checkpoint", 'c', 0, G_OPTION_ARG_FILENAME, &ckpt,
        "Weights: .pth.tar/.pth or .safetensors", "FILE"},
    {"list", 'l', 0, G_OPTION_ARG_FILENAME, &list,
        "A list file of 'path label' lines instead of a folder", "FILE"},
    {"class-map", 0, 0, G_OPTION_ARG_FILENAME, &class_map_path,
        "Class names (e.g. WordNet ids) in class-index order, one per line", "FILE"},
    {"limit", 0, 0, G_OPTION_ARG_INT, &limit, "Stop after N images (0, the default: "
          "every image)", "N"},
    {"threads", 0, 0, G_OPTION_ARG_INT, &threads, "CPU threads (0 = all cores)", "N"},
    {"backend", 0, 0, G_OPTION_ARG_STRING, &backend_s, "auto, cpu, cuda or cpu-ref", "NAME"},
    {"worst", 0, 0, G_OPTION_ARG_INT, &show,
        "Classes listed in the confusion summary, worst first (10)", "N"},
    {"all-classes", 0, 0, G_OPTION_ARG_NONE, &all_classes,
        "List every class in the confusion summary", NULL},
    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress lines", NULL},
    {"against", 0, 0, G_OPTION_ARG_STRING, &against, "Compare --precision with this "
          "reference (fp32) over a plain FOLDER of photos: top-1/top-5 agreement and "
          "logit differences; no labels, and --checkpoint optional", "fp32"},
    {"precision", 0, 0, G_OPTION_ARG_STRING, &precision_s, "The precision run: auto "
          "(fp32 on the CPU, the default), fp32, fp16, bf16 or int8; with --against the "
          "one compared (bf16, the default, int8 or fp16)", "NAME"},
    {"scales", 0, 0, G_OPTION_ARG_FILENAME, &scales, "With --precision int8: the int8 "
          "scales file (gpunet-convert --calibrate) of this model and checkpoint", "FILE"},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "With --against and no --checkpoint: the "
          "seed of the random weights (1)", "N"},
    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &rest, NULL, "[FOLDER]"},
    {NULL, 0, 0, 0, NULL, NULL, NULL}
  };

  gpunet_tool_text_init ();
  ctx = g_option_context_new ("- top-1/top-5 accuracy of a GPUNet checkpoint");
  g_option_context_set_summary (ctx, "FOLDER holds one subfolder of images per class, "
      "named by class index (0, 1, ...) or by WordNet id (n01440764, ...: sorted order "
      "is the class index, as in NVIDIA's validate.py, unless --class-map says "
      "otherwise). Or --list FILE with 'path label' lines.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    g_printerr ("gpunet-validate: %s\n", err->message);
    goto out;
  }
  if (limit < 0) {
    g_printerr ("gpunet-validate: --limit needs 0 (every image) or a positive number of "
        "images, got %d\n", limit);
    goto out;
  }
  if (show < 0) {
    g_printerr ("gpunet-validate: --worst needs 0 or a positive number of classes, got "
        "%d\n", show);
    goto out;
  }
  if (threads < 0 || threads > GPUNET_MAX_THREADS) {
    g_printerr ("gpunet-validate: --threads needs an integer from 0 to %d (0 = all "
        "cores), got %d\n", GPUNET_MAX_THREADS, threads);
    goto out;
  }
  /* --precision: the run's (auto), or with --against the one compared (bf16) */
  gpunet_precision prec = against ? GPUNET_PRECISION_BF16 : GPUNET_PRECISION_AUTO;
  if (precision_s && (!gpunet_tool_precision_parse (precision_s, &prec)
          || (against && (prec == GPUNET_PRECISION_AUTO
                  || prec == GPUNET_PRECISION_FP32)))) {
    g_printerr ("gpunet-validate: --precision %s, not '%s'\n", against ?
        "with --against is bf16, int8 or fp16" : "is auto, fp32, fp16, bf16 or int8",
        precision_s);
    goto out;
  }
  if (gpunet_tool_scales_refusal (prec, scales)) {
    g_printerr ("gpunet-validate: %s\n", gpunet_tool_scales_refusal (prec, scales));
    goto out;
  }
  if (against) {
    if (strcmp (against, "fp32")) {
      g_printerr ("gpunet-validate: --against takes fp32 (the exact reference), not '%s'\n",
          against);
      goto out;
    }
    if (!model_name || list || !(rest && rest[0]) || rest[1]) {
      g_printerr ("gpunet-validate: --against needs --model and one FOLDER of photos "
          "(see --help)\n");
      goto out;
    }
    gpunet_session_params ap;
    gpunet_session_params_init (&ap);
    ap.max_batch = 1;
    ap.n_threads = threads;
    ap.int8_scales = scales;
    if (backend_s) {
      char *why = NULL;
      if (gpunet_backend_kind_from_name (backend_s, &ap.backend, &why) != GPUNET_OK) {
        g_printerr ("gpunet-validate: --backend: %s\n", why);
        free (why);
        goto out;
      }
    }
    char *why = NULL;
    gpunet_model *m = NULL;
    gpunet_status ast = ckpt ? gpunet_model_load (model_name, ckpt, &m, &why)
        : gpunet_model_new_random (model_name, (uint64_t) seed, &m, &why);
    if (ast != GPUNET_OK) {
      g_printerr ("gpunet-validate: %s\n", why ? why : gpunet_status_string (ast));
      free (why);
      goto out;
    }
    gpunet_run_image_init (&argc, &argv);
    if (!ckpt)
      printf ("weights=random seed=%" G_GINT64_FORMAT "\n", seed);
    rc = gpunet_validate_against (m, &ap, prec, rest[0], limit, quiet);
    gpunet_model_unref (m);
    goto out;
  }
  if (!model_name || !ckpt || (!list == !(rest && rest[0])) || (rest && rest[0] && rest[1])) {
    g_printerr ("gpunet-validate: needs --model, --checkpoint and one FOLDER or --list "
        "FILE (see --help)\n");
    goto out;
  }

  gpunet_session_params params;
  gpunet_session_params_init (&params);
  params.max_batch = 1;
  params.n_threads = threads;
  params.precision = prec;
  params.int8_scales = scales;
  if (backend_s) {
    char *why = NULL;
    if (gpunet_backend_kind_from_name (backend_s, &params.backend, &why) != GPUNET_OK) {
      g_printerr ("gpunet-validate: --backend: %s\n", why);
      free (why);
      goto out;
    }
  }

  char *etext = NULL;
  gpunet_model *model = NULL;
  gpunet_session *session = NULL;
  gpunet_status st = gpunet_model_load (model_name, ckpt, &model, &etext);
  if (st == GPUNET_OK)
    st = gpunet_session_new (model, &params, &session, &etext);
  if (st != GPUNET_OK) {
    g_printerr ("gpunet-validate: %s\n", etext ? etext : gpunet_status_string (st));
    free (etext);
    gpunet_model_unref (model);
    goto out;
  }
  const gint classes = gpunet_model_num_classes (model);
  GHashTable *class_map = NULL;
  GArray *samples = g_array_new (FALSE, FALSE, sizeof (Sample));
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_set_size (names, classes);
  gboolean ok = TRUE;

  if (class_map_path && !(class_map = read_class_map (class_map_path, &err)))
    ok = FALSE;
  if (ok && class_map) {
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init (&it, class_map);
    while (g_hash_table_iter_next (&it, &k, &v))
      if (GPOINTER_TO_INT (v) < classes)
        g_ptr_array_index (names, GPOINTER_TO_INT (v)) = g_strdup (k);
  }
  if (ok)
    ok = list ? read_list (list, class_map, classes, samples, &err)
        : scan_folder (rest[0], class_map, classes, samples, names, &err);
  if (!ok) {
    g_printerr ("gpunet-validate: %s\n", err->message);
    goto done;
  }
  if (samples->len == 0) {
    g_printerr ("gpunet-validate: no images found\n");
    rc = 1;
    goto done;
  }

  gpunet_run_image_init (&argc, &argv);
  ClassStats *stats = g_new0 (ClassStats, classes);
  const gint k = MIN (5, classes);
  gpunet_class_score top[5];
  gpunet_preprocess_params pre = { GPUNET_RESIZE_CENTER_CROP, 0.0f };
  guint64 done_n = 0, top1 = 0, top5 = 0, unreadable = 0;
  guint total = limit > 0 ? MIN ((guint) limit, samples->len) : samples->len;
  gint64 t0 = g_get_monotonic_time (), next_report = t0 + G_USEC_PER_SEC;
  gboolean tty = isatty (STDERR_FILENO);
  const int width = snprintf (NULL, 0, "%u", total);

  for (guint i = 0; i < total; i++) {
    Sample *s = &g_array_index (samples, Sample, i);
    uint8_t *rgb = NULL;
    gpunet_image img = { 0 };
    char *why = NULL;

    if (gpunet_run_decode_image (s->path, &rgb, &img.width, &img.height, &img.strides[0],
            &why) != 0) {
      g_printerr ("%sgpunet-validate: %s (skipped)\n", tty ? "\r\033[K" : "", why);
      free (why);
      unreadable++;
      continue;
    }
    if (gpunet_run_image_damaged (s->path, &why)) {
      /* a truncated picture is not a fair sample of the model's accuracy */
      g_printerr ("%sgpunet-validate: '%s': %s (skipped)\n", tty ? "\r\033[K" : "",
          s->path, why);
      free (why);
      free (rgb);
      unreadable++;
      continue;
    }
    img.format = GPUNET_FORMAT_RGB;
    img.planes[0] = rgb;
    st = gpunet_session_classify (session, &img, 1, &pre, k, top, &etext);
    free (rgb);
    if (st != GPUNET_OK) {
      g_printerr ("gpunet-validate: '%s': %s\n", s->path, etext ? etext :
          gpunet_status_string (st));
      free (etext);
      etext = NULL;
      unreadable++;
      continue;
    }
    ClassStats *c = &stats[s->label];
    gboolean in5 = FALSE;
    for (gint j = 0; j < k; j++)
      in5 = in5 || top[j].id == s->label;
    c->n++;
    done_n++;
    if (top[0].id == s->label) {
      c->top1++;
      top1++;
    } else {
      if (c->wrong == NULL)
        c->wrong = g_hash_table_new (g_direct_hash, g_direct_equal);
      gpointer old = g_hash_table_lookup (c->wrong, GINT_TO_POINTER (top[0].id));
      g_hash_table_insert (c->wrong, GINT_TO_POINTER (top[0].id),
          GSIZE_TO_POINTER (GPOINTER_TO_SIZE (old) + 1));
    }
    if (in5) {
      c->top5++;
      top5++;
    }
    gint64 now = g_get_monotonic_time ();
    if (!quiet && (now >= next_report || i + 1 == total)) {
      gdouble el = (now - t0) / 1e6;
      g_printerr ("%s[%*u/%u] top-1 %6.2f%%  top-5 %6.2f%%  %.1f images/s%s",
          tty ? "\r\033[K" : "", width, i + 1, total, 100.0 * top1 / done_n,
          100.0 * top5 / done_n, el > 0 ? done_n / el : 0.0, tty ? "" : "\n");
      next_report = now + (tty ? G_USEC_PER_SEC / 4 : 10 * G_USEC_PER_SEC);
    }
  }
  if (!quiet && tty)
    g_printerr ("\n");
  gdouble el = (g_get_monotonic_time () - t0) / 1e6;

  if (done_n == 0) {
    g_printerr ("gpunet-validate: none of the %u images could be classified\n", total);
    rc = 1;
  } else {
    gchar b1[32], b2[32];
    printf ("top-1: %.3f%% (%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT ")  "
        "top-5: %.3f%% (%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT ")\n",
        100.0 * top1 / done_n, top1, done_n, 100.0 * top5 / done_n, top5, done_n);
    printf ("images: %" G_GUINT64_FORMAT " in %.2f s (%.1f images/s, decoding included)"
        "%s", done_n, el, el > 0 ? done_n / el : 0.0, unreadable ? "" : "\n");
    if (unreadable)
      printf ("; %" G_GUINT64_FORMAT " unreadable, not counted\n", unreadable);

    /* per class, worst top-1 first: accuracy and the class most often predicted instead */
    GArray *order = g_array_new (FALSE, FALSE, sizeof (ClassOrder));
    for (gint c = 0; c < classes; c++)
      if (stats[c].n) {
        ClassOrder o = { c, (gdouble) stats[c].top1 / stats[c].n, stats[c].n };
        g_array_append_val (order, o);
      }
    g_array_sort (order, cmp_acc);
    guint n_show = all_classes ? order->len : MIN ((guint) MAX (show, 0), order->len);
    printf ("per class (%u with images; %s):\n", order->len, n_show == order->len ?
        "all, worst first" : "worst first, --all-classes for every one");
    for (guint i = 0; i < n_show; i++) {
      ClassOrder *o = &g_array_index (order, ClassOrder, i);
      ClassStats *c = &stats[o->id];
      gint worst = -1;
      gsize worst_n = 0;
      if (c->wrong) {
        GHashTableIter it;
        gpointer kk, vv;
        g_hash_table_iter_init (&it, c->wrong);
        while (g_hash_table_iter_next (&it, &kk, &vv))
          if (GPOINTER_TO_SIZE (vv) > worst_n || (GPOINTER_TO_SIZE (vv) == worst_n
                  && GPOINTER_TO_INT (kk) < worst)) {
            worst_n = GPOINTER_TO_SIZE (vv);
            worst = GPOINTER_TO_INT (kk);
          }
      }
      printf ("  %4d %-28s top-1 %6.2f%%  top-5 %6.2f%%  (%" G_GUINT64_FORMAT " images)",
          o->id, class_name (o->id, classes, names, b1, sizeof b1), 100.0 * o->acc,
          100.0 * c->top5 / c->n, c->n);
      if (worst >= 0)
        printf ("  mostly confused with %d %s (%zu)", worst,
            class_name (worst, classes, names, b2, sizeof b2), worst_n);
      printf ("\n");
    }
    g_array_unref (order);
    rc = 0;
  }
  for (gint c = 0; c < classes; c++)
    if (stats[c].wrong)
      g_hash_table_unref (stats[c].wrong);
  g_free (stats);

done:
  for (guint i = 0; i < samples->len; i++)
    g_free (g_array_index (samples, Sample, i).path);
  g_array_unref (samples);
  g_ptr_array_unref (names);
  if (class_map)
    g_hash_table_unref (class_map);
  gpunet_session_free (session);
  gpunet_model_unref (model);
out:
  g_clear_error (&err);
  g_option_context_free (ctx);
  g_free (model_name);
  g_free (ckpt);
  g_free (list);
  g_free (class_map_path);
  g_free (backend_s);
  g_free (against);
  g_free (precision_s);
  g_free (scales);
  g_strfreev (rest);
  return rc;
}
