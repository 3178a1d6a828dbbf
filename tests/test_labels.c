/* test_labels.c: gpunet_labels_parse, the labels-file reader the element uses: line
 * splitting, stripping, the class-<id> default, the count check and hostile bytes
 * (tests/fuzz/fuzz_labels.c tries the rest). */
#include <stdlib.h>
#include <string.h>

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
  return check_report ();
}
