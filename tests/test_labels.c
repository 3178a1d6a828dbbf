/* test_labels.c: gpunet_labels_parse, the labels-file reader the element uses: line
 * splitting, stripping, the class-<id> default, the count check, the size bound and
 * hostile bytes (tests/fuzz/fuzz_labels.c tries the rest); gpunet_labels_load on a
 * file, a FIFO and a 3 GiB sparse file. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "gpunet.h"

static char **
parse (const char *text, size_t len, int n, gpunet_status expect, const char *error_part)
{
  char **labels = (char **) 1, *err = NULL;
  gpunet_status st = gpunet_labels_parse (text, len, n, &labels, &err);

  CHECK_MSG (st == expect, "'%.*s' (n %d): status %d, expected %d", (int) len,
      text ? text : "", n, st, expect);
  if (st == GPUNET_OK) {
    CHECK (err == NULL && labels != NULL && labels[n] == NULL);
  } else {
    CHECK (labels == NULL);
    if (error_part)
      CHECK_CONTAINS (err, error_part);
  }
  free (err);
  return labels;
}

int
main (void)
{
  char **l;
  static const char nul[] = "a\nb\0c\n";

  l = parse ("cat\ndog\nbird\n", 13, 3, GPUNET_OK, NULL);
  CHECK (l && !strcmp (l[0], "cat") && !strcmp (l[1], "dog") && !strcmp (l[2], "bird"));
  gpunet_labels_free (l);
  /* no final newline, CRLF, surrounding blanks, an empty line */
  l = parse ("  tabby cat \r\n\r\n\tdog", 20, 3, GPUNET_OK, NULL);
  CHECK (l && !strcmp (l[0], "tabby cat") && !strcmp (l[1], "class-1") && !strcmp (l[2], "dog"));
  gpunet_labels_free (l);
  /* one final newline is not a line, a second one is an empty label */
  l = parse ("a\n\n", 3, 2, GPUNET_OK, NULL);
  CHECK (l && !strcmp (l[0], "a") && !strcmp (l[1], "class-1"));
  gpunet_labels_free (l);
  parse ("a\n\n", 3, 1, GPUNET_ERR_FORMAT, "has 2 labels, but the model has 1 classes");
  parse ("cat\ndog\nbird\n", 13, 16, GPUNET_ERR_FORMAT, "has 3 labels");
  parse ("", 0, 1, GPUNET_ERR_FORMAT, "has 0 labels");
  parse (NULL, 0, 1, GPUNET_ERR_FORMAT, "has 0 labels");
  parse (nul, sizeof nul - 1, 3, GPUNET_ERR_FORMAT, "NUL byte");
  parse ("a", 1, 0, GPUNET_ERR_INVALID_ARGUMENT, NULL);
  parse (NULL, 5, 1, GPUNET_ERR_INVALID_ARGUMENT, NULL);
  gpunet_labels_free (NULL);

  /* issue 43, point 5: a text over GPUNET_LABELS_MAX_BYTES is refused, as an
   * architecture JSON over its bound is (one more byte than the bound, all newlines) */
  {
    size_t big = (size_t) GPUNET_LABELS_MAX_BYTES + 1;
    char *t = malloc (big);
    if (t) {
      memset (t, '\n', big);
      parse (t, big, 3, GPUNET_ERR_FORMAT, "larger than 16 MiB");
      free (t);
    }
  }
  /* the file reader: a good file, a missing one, a FIFO (refused without blocking), a
   * 3 GiB sparse file (refused before it is read) */
  {
    char path[600];
    char **labels = NULL, *err = NULL;
    const char *tmp = getenv ("TMPDIR");
    char tdir[512];
    snprintf (tdir, sizeof tdir, "%s/gpunet-labels-XXXXXX", tmp ? tmp : "/tmp");
    char *d = mkdtemp (tdir);
    CHECK (d != NULL);
    if (d) {
      snprintf (path, sizeof path, "%s/ok.txt", d);
      FILE *f = fopen (path, "w");
      if (f) {
        fputs ("cat\ndog\n", f);
        fclose (f);
      }
      CHECK (gpunet_labels_load (path, 2, &labels, &err) == GPUNET_OK);
      CHECK (labels && !strcmp (labels[0], "cat") && !strcmp (labels[1], "dog"));
      gpunet_labels_free (labels);
      CHECK (gpunet_labels_load (path, 3, &labels, &err) == GPUNET_ERR_FORMAT);
      CHECK_CONTAINS (err, "ok.txt");
      CHECK_CONTAINS (err, "has 2 labels");
      free (err);
      err = NULL;
      unlink (path);
      CHECK (gpunet_labels_load (path, 2, &labels, &err) == GPUNET_ERR_IO);
      CHECK_CONTAINS (err, "No such file");
      free (err);
      err = NULL;

      snprintf (path, sizeof path, "%s/labels.fifo", d);
      if (mkfifo (path, 0600) == 0) {
        CHECK (gpunet_labels_load (path, 2, &labels, &err) == GPUNET_ERR_IO);
        CHECK_CONTAINS (err, "not a regular file");
        free (err);
        err = NULL;
        unlink (path);
      }
      snprintf (path, sizeof path, "%s/huge.txt", d);
      int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd >= 0 && ftruncate (fd, (off_t) 3 << 30) == 0) {
        close (fd);
        CHECK (gpunet_labels_load (path, 2, &labels, &err) == GPUNET_ERR_FORMAT);
        CHECK_CONTAINS (err, "larger than 16 MiB");
        free (err);
        err = NULL;
      } else if (fd >= 0) {
        close (fd);
      }
      unlink (path);
      rmdir (d);
    }
  }
  return check_report ();
}
