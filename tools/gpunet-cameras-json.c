/* gpunet-cameras-json.c: JSON lines, into one file or one file per camera
 * (DIR/NAME.jsonl), appended.  Each line is written whole with write(2), so a line
 * is on disk or counted lost; a full disk or any write error is reported once per
 * run of failures on stderr and counted, never fatal. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "gpunet-cameras.h"

typedef struct
{
  gchar *file, *dir;
  gint fd;                      /* the single file, or -1 */
  GHashTable *fds;              /* camera -> fd, with dir */
  guint64 written, lost;
  GHashTable *failing;          /* paths whose last write failed */
} CamJson;

static gint
open_append (const gchar * path, gchar ** error)
{
  /* non-blocking only to open: a FIFO without a reader fails (ENXIO) rather than
   * holding the service before its first camera; the writes then block */
  gint fd = g_open (path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
  gint err = errno;

  if (fd >= 0 && fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    err = errno;
    close (fd);
    fd = -1;
  }
  if (fd < 0 && error)
    *error = err == ENXIO ? g_strdup_printf ("cannot open the JSON output '%s': it is "
        "a FIFO that no process reads; start its reader first, or give a regular file",
        path) : g_strdup_printf ("cannot open the JSON output '%s': %s", path,
        g_strerror (err));
  return fd;
}

gpointer
cam_json_open (const gchar * file, const gchar * dir, gchar ** error)
{
  CamJson *j = g_new0 (CamJson, 1);

  j->fd = -1;
  if (file && (j->fd = open_append (file, error)) < 0) {
    g_free (j);
    return NULL;
  }
  if (dir && g_mkdir_with_parents (dir, 0755) != 0) {
    *error = g_strdup_printf ("cannot create the JSON directory '%s': %s",
        dir, g_strerror (errno));
    if (j->fd >= 0)
      close (j->fd);
    g_free (j);
    return NULL;
  }
  j->file = g_strdup (file);
  j->dir = g_strdup (dir);
  j->fds = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  j->failing = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  return j;
}

static gboolean
write_all (gint fd, const gchar * s, gsize n, gint * err)
{
  while (n > 0) {
    gssize w = write (fd, s, n);

    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      *err = w < 0 ? errno : ENOSPC;
      return FALSE;
    }
    s += w;
    n -= w;
  }
  return TRUE;
}

static void
write_to (CamJson * j, gint fd, const gchar * path, const gchar * line)
{
  gint err = 0;
  gchar *l = g_strconcat (line, "\n", NULL);

  if (fd >= 0 && write_all (fd, l, strlen (l), &err)) {
    j->written++;
    if (g_hash_table_remove (j->failing, path))
      fprintf (stderr, "gpunet-cameras: JSON output '%s' writes again (%"
          G_GUINT64_FORMAT " lines lost so far)\n", path, j->lost);
  } else {
    j->lost++;
    if (!g_hash_table_contains (j->failing, path)) {
      fprintf (stderr, "{\"event\":\"error\",\"output\":\"json\",\"file\":"
          "\"%s\",\"error\":\"%s\",\"lost\":%" G_GUINT64_FORMAT "}\n", path,
          g_strerror (err ? err : EBADF), j->lost);
      g_hash_table_add (j->failing, g_strdup (path));
    }
  }
  g_free (l);
}

void
cam_json_write (gpointer p, const gchar * camera, const gchar * line)
{
  CamJson *j = p;

  if (j == NULL)
    return;
  if (j->file)
    write_to (j, j->fd, j->file, line);
  if (j->dir && camera) {
    gchar *name = g_strconcat (camera, ".jsonl", NULL);
    gchar *path = g_build_filename (j->dir, name, NULL);
    gpointer v;
    gint fd;

    if (g_hash_table_lookup_extended (j->fds, camera, NULL, &v))
      fd = GPOINTER_TO_INT (v) - 1;
    else {
      fd = open_append (path, NULL);
      if (fd >= 0)
        g_hash_table_insert (j->fds, g_strdup (camera), GINT_TO_POINTER (fd + 1));
    }
    write_to (j, fd, path, line);
    g_free (name);
    g_free (path);
  }
}

guint64
cam_json_lost (gpointer p)
{
  return p ? ((CamJson *) p)->lost : 0;
}

guint64
cam_json_written (gpointer p)
{
  return p ? ((CamJson *) p)->written : 0;
}

void
cam_json_close (gpointer p)
{
  CamJson *j = p;
  GHashTableIter it;
  gpointer v;

  if (j == NULL)
    return;
  if (j->fd >= 0) {
    fsync (j->fd);
    close (j->fd);
  }
  g_hash_table_iter_init (&it, j->fds);
  while (g_hash_table_iter_next (&it, NULL, &v)) {
    fsync (GPOINTER_TO_INT (v) - 1);
    close (GPOINTER_TO_INT (v) - 1);
  }
  g_hash_table_unref (j->fds);
  g_hash_table_unref (j->failing);
  g_free (j->file);
  g_free (j->dir);
  g_free (j);
}
