/* gpunet-atomic.h: how the tools write an output file. Everything goes to a
 * temporary file in the output's directory that is renamed over the output only
 * once complete, so a crash, a full disk or an output path equal to an input (still
 * open or mmapped) never destroys what was there. Plain C, header only. */
#ifndef GPUNET_ATOMIC_H
#define GPUNET_ATOMIC_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* TRUE when `path` exists and is not a regular file (/dev/null, a FIFO, a terminal):
 * such an output is written in place, never replaced by a rename. */
static inline int
gpunet_atomic_is_special (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 && !S_ISREG (st.st_mode);
}

/* Reserves a new empty temporary file next to `path` (".NAME.XXXXXX", mode 0666
 * less the umask, as a plain create would give) and returns its malloc'ed name, or
 * NULL with errno set. The caller writes it, then gpunet_atomic_commit() or
 * gpunet_atomic_abort(). With `fd_out` non-NULL the file stays open there. */
static inline char *
gpunet_atomic_temp (const char *path, int *fd_out)
{
  const char *slash = strrchr (path, '/');
  size_t dir_len = slash ? (size_t) (slash - path) + 1 : 0;
  const char *base = slash ? slash + 1 : path;
  size_t n = dir_len + strlen (base) + 16;
  char *tmp = malloc (n);
  int fd;
  mode_t mask;

  if (tmp == NULL)
    return NULL;
  snprintf (tmp, n, "%.*s.%s.XXXXXX", (int) dir_len, path, base);
  fd = mkstemp (tmp);
  if (fd < 0) {
    int e = errno;
    free (tmp);
    errno = e;
    return NULL;
  }
  mask = umask (0);
  umask (mask);
  if (fchmod (fd, 0666 & ~mask) != 0) {
    /* keep mkstemp's 0600: not worth failing for */
  }
  if (fd_out)
    *fd_out = fd;
  else
    close (fd);
  return tmp;
}

/* Renames the finished temporary file over `path`; frees `tmp`. 0, or -1 with
 * errno set (the temporary file is then removed). */
static inline int
gpunet_atomic_commit (char *tmp, const char *path)
{
  int rc = rename (tmp, path);
  int e = errno;

  if (rc != 0)
    unlink (tmp);
  free (tmp);
  errno = e;
  return rc;
}

/* Removes the temporary file and frees `tmp` (NULL is ignored). */
static inline void
gpunet_atomic_abort (char *tmp)
{
  if (tmp) {
    unlink (tmp);
    free (tmp);
  }
}

/* Writes `size` bytes to `path` through a temporary file; 0, or -1 with errno set. */
static inline int
gpunet_atomic_write_file (const char *path, const void *data, size_t size)
{
  int fd = -1;
  char *tmp = NULL;
  const char *p = data;

  if (gpunet_atomic_is_special (path)) {
    FILE *f = fopen (path, "wb");
    int ok = f && fwrite (data, 1, size, f) == size;
    if (f && fclose (f) != 0)
      ok = 0;
    return ok ? 0 : -1;
  }
  tmp = gpunet_atomic_temp (path, &fd);
  if (tmp == NULL)
    return -1;
  while (size > 0) {
    ssize_t w = write (fd, p, size);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      int e = w < 0 ? errno : EIO;
      close (fd);
      gpunet_atomic_abort (tmp);
      errno = e;
      return -1;
    }
    p += w;
    size -= (size_t) w;
  }
  if (close (fd) != 0) {
    int e = errno;
    gpunet_atomic_abort (tmp);
    errno = e;
    return -1;
  }
  return gpunet_atomic_commit (tmp, path);
}

#endif
