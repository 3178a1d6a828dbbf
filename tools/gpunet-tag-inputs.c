/* gpunet-tag-inputs.c: turns the command line's INPUT arguments into the ordered,
 * de-duplicated list of inputs (files, recursed directories, globs, URIs), and
 * picks this worker's share of them with a stable hash (--shard I/N). */
#include <errno.h>
#include <glob.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpunet-tag-common.h"

/* FNV-1a, 64 bit: stable across machines, builds and GLib versions (unlike
 * g_str_hash), which is what sharding over many hosts needs. */
guint64
tag_fnv1a64 (const gchar * s)
{
  guint64 h = G_GUINT64_CONSTANT (14695981039346656037);

  for (; *s; s++) {
    h ^= (guchar) * s;
    h *= G_GUINT64_CONSTANT (1099511628211);
  }
  return h;
}

gboolean
tag_input_in_shard (const gchar * name, guint index, guint count)
{
  if (count <= 1)
    return TRUE;
  return tag_fnv1a64 (name) % count == index;
}

/* The key of a path: repeated slashes collapsed, "./" components and a trailing
 * slash removed, so "dir//a.mp4", "./dir/a.mp4" and "dir/a.mp4" hash alike.
 * Relative paths stay relative (the same on every worker that shares a cwd). */
static gchar *
normalise_path (const gchar * path)
{
  gchar **parts = g_strsplit (path, "/", -1);
  GString *s = g_string_new (path[0] == '/' ? "/" : "");
  gboolean first = TRUE;

  for (gchar ** p = parts; *p; p++) {
    if (**p == '\0' || strcmp (*p, ".") == 0)
      continue;
    if (!first)
      g_string_append_c (s, '/');
    g_string_append (s, *p);
    first = FALSE;
  }
  g_strfreev (parts);
  if (s->len == 0)
    g_string_assign (s, ".");
  return g_string_free (s, FALSE);
}

static gboolean
has_wanted_ext (const gchar * name, const TagOptions * opt)
{
  const gchar *dot = strrchr (name, '.');

  if (opt->all_files)
    return TRUE;
  if (dot == NULL || opt->exts == NULL)
    return FALSE;
  for (gchar ** e = opt->exts; *e; e++)
    if (g_ascii_strcasecmp (dot + 1, *e) == 0)
      return TRUE;
  return FALSE;
}

static gint
cmp_str (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const gchar * const *) a, *(const gchar * const *) b);
}

static void
add_input (GPtrArray * list, GHashTable * seen, gchar * name, const gchar * uri,
    gchar * error)
{
  TagInput *in;

  if (g_hash_table_contains (seen, name)) {
    g_free (name);
    g_free (error);
    return;
  }
  in = g_new0 (TagInput, 1);
  in->name = name;
  in->uri = g_strdup (uri);
  in->error = error;
  g_hash_table_add (seen, in->name);
  g_ptr_array_add (list, in);
}

static void add_path (GPtrArray * list, GHashTable * seen, const gchar * path,
    const TagOptions * opt, gboolean explicit_arg, guint depth);

/* Adds the wanted files below `dir`, entries sorted bytewise so every worker and
 * every run sees the same order. Symlinked directories are not followed. */
static void
add_dir (GPtrArray * list, GHashTable * seen, const gchar * dir,
    const TagOptions * opt, guint depth)
{
  GError *err = NULL;
  GDir *d = g_dir_open (dir, 0, &err);
  GPtrArray *names;
  const gchar *e;

  if (d == NULL) {
    add_input (list, seen, normalise_path (dir), NULL,
        g_strdup_printf ("cannot read directory: %s", err->message));
    g_clear_error (&err);
    return;
  }
  names = g_ptr_array_new_with_free_func (g_free);
  while ((e = g_dir_read_name (d)) != NULL)
    if (e[0] != '.')
      g_ptr_array_add (names, g_strdup (e));
  g_dir_close (d);
  g_ptr_array_sort (names, cmp_str);
  for (guint i = 0; i < names->len; i++) {
    gchar *child = g_build_filename (dir, g_ptr_array_index (names, i), NULL);
    struct stat st;

    if (lstat (child, &st) == 0 && S_ISLNK (st.st_mode)
        && g_file_test (child, G_FILE_TEST_IS_DIR)) {
      g_free (child);
      continue;
    }
    add_path (list, seen, child, opt, FALSE, depth + 1);
    g_free (child);
  }
  g_ptr_array_unref (names);
}

/* One path: a directory is walked, a file is taken when given explicitly or
 * when its extension is wanted; a missing or unreadable explicit file, or one that
 * is not a regular file (a FIFO, a device), becomes an input that fails with its
 * reason without being opened (so the summary reports it). */
static void
add_path (GPtrArray * list, GHashTable * seen, const gchar * path,
    const TagOptions * opt, gboolean explicit_arg, guint depth)
{
  gchar *name;
  struct stat st;

  if (depth > 64)
    return;
  if (stat (path, &st) == 0 && S_ISDIR (st.st_mode)) {
    add_dir (list, seen, path, opt, depth);
    return;
  }
  if (!explicit_arg && !has_wanted_ext (path, opt))
    return;
  name = normalise_path (path);
  if (stat (path, &st) == 0 && !S_ISREG (st.st_mode)) {
    /* opening a FIFO blocks until a writer comes, a device may never end: such an
     * input is skipped with its summary record saying why */
    add_input (list, seen, name, NULL, g_strdup_printf ("skipped: not a regular "
            "file (%s); give a video file", S_ISFIFO (st.st_mode) ? "a FIFO" :
            S_ISCHR (st.st_mode) || S_ISBLK (st.st_mode) ? "a device" :
            S_ISSOCK (st.st_mode) ? "a socket" : "not a plain file"));
  } else if (access (path, R_OK) != 0) {
    add_input (list, seen, name, NULL, g_strdup_printf ("cannot open: %s",
            g_strerror (errno)));
  } else {
    gchar *abs = g_canonicalize_filename (path, NULL);
    gchar *uri = gst_filename_to_uri (abs, NULL);

    if (uri == NULL)
      add_input (list, seen, name, NULL, g_strdup ("cannot make a URI"));
    else
      add_input (list, seen, name, uri, NULL);
    g_free (uri);
    g_free (abs);
  }
}

GPtrArray *
tag_inputs_discover (gchar ** args, const TagOptions * opt)
{
  GPtrArray *list = g_ptr_array_new_with_free_func ((GDestroyNotify)
      tag_input_free);
  GHashTable *seen = g_hash_table_new (g_str_hash, g_str_equal);

  for (gchar ** a = args; a && *a; a++) {
    const gchar *arg = *a;

    if (strstr (arg, "://") && gst_uri_is_valid (arg)) {
      add_input (list, seen, g_strdup (arg), arg, NULL);
    } else if (!g_file_test (arg, G_FILE_TEST_EXISTS)
        && strpbrk (arg, "*?[") != NULL) {
      glob_t g;
      int rc = glob (arg, GLOB_NOSORT, NULL, &g);

      if (rc == 0) {
        qsort (g.gl_pathv, g.gl_pathc, sizeof (char *), cmp_str);
        for (size_t i = 0; i < g.gl_pathc; i++)
          add_path (list, seen, g.gl_pathv[i], opt, TRUE, 0);
      } else {
        add_input (list, seen, g_strdup (arg), NULL,
            g_strdup (rc == GLOB_NOMATCH ? "the pattern matches no file" :
                "cannot expand the pattern"));
      }
      if (rc == 0 || rc == GLOB_NOMATCH)
        globfree (&g);
    } else {
      add_path (list, seen, arg, opt, TRUE, 0);
    }
  }
  g_hash_table_unref (seen);
  return list;
}

void
tag_input_free (TagInput * in)
{
  if (in == NULL)
    return;
  g_free (in->name);
  g_free (in->uri);
  g_free (in->error);
  g_free (in);
}
