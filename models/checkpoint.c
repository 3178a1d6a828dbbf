/* checkpoint.c: gpunet_checkpoint: maps a weights file, detects its format (torch.save
 * zip, safetensors; legacy torch pickles are refused with advice), chooses the state
 * dict like timm (state_dict_ema, state_dict, bare dict), checks every tensor against
 * its storage and exposes contiguous tensors, zero-copy where the bytes allow it. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "pickle.h"
#include "safetensors.h"
#include "shape.h"
#include "zipread.h"

struct gpunet_checkpoint {
  const char *source;
  const uint8_t *bytes;
  size_t size;
  int mapped;              /* bytes come from mmap (else malloc) */
  gpunet_tensor *tensors;
  size_t n, cap;
  void **owned;            /* names and copied tensor data */
  size_t n_owned, cap_owned;
  size_t *index;           /* open addressing: tensor index + 1, 0 = empty */
  size_t index_cap;
  uint64_t copied, copy_limit;
};

/* ---- the tensor table ------------------------------------------------------------ */

static int
own (gpunet_checkpoint *ck, void *p)
{
  if (ck->n_owned == ck->cap_owned) {
    size_t nc = ck->cap_owned ? ck->cap_owned * 2 : 64;
    void **q = realloc (ck->owned, nc * sizeof *q);
    if (!q)
      return 0;
    ck->owned = q;
    ck->cap_owned = nc;
  }
  ck->owned[ck->n_owned++] = p;
  return 1;
}

static size_t
hash_name (const char *s)
{
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char) *s) * 1099511628211ull;
  return (size_t) h;
}

static size_t *
index_slot (const gpunet_checkpoint *ck, const char *name)
{
  size_t mask = ck->index_cap - 1;
  for (size_t h = hash_name (name) & mask;; h = (h + 1) & mask) {
    size_t v = ck->index[h];
    if (!v || strcmp (ck->tensors[v - 1].name, name) == 0)
      return &ck->index[h];
  }
}

static int
index_grow (gpunet_checkpoint *ck)
{
  size_t nc = ck->index_cap ? ck->index_cap * 2 : 64;
  size_t *old = ck->index, old_cap = ck->index_cap;
  ck->index = calloc (nc, sizeof *ck->index);
  if (!ck->index) {
    ck->index = old;
    return 0;
  }
  ck->index_cap = nc;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i])
      *index_slot (ck, ck->tensors[old[i] - 1].name) = old[i];
  free (old);
  return 1;
}

/* Adds a tensor (data already checked) under `name` minus a leading "module."; a
 * repeated name replaces the earlier tensor, as a Python dict would. */
static gpunet_status
add_tensor (gpunet_checkpoint *ck, const char *name, const gpunet_tensor *t, char **error_text)
{
  if (strncmp (name, "module.", 7) == 0)
    name += 7;
  char *copy = strdup (name);
  if (!copy || !own (ck, copy)) {
    free (copy);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  }
  if ((ck->n + 1) * 2 > ck->index_cap && !index_grow (ck))
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  size_t *slot = index_slot (ck, copy);
  gpunet_tensor nt = *t;
  nt.name = copy;
  if (*slot) {
    ck->tensors[*slot - 1] = nt;
    return GPUNET_OK;
  }
  if (ck->n == ck->cap) {
    size_t nc = ck->cap ? ck->cap * 2 : 64;
    gpunet_tensor *q = realloc (ck->tensors, nc * sizeof *q);
    if (!q)
      return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
    ck->tensors = q;
    ck->cap = nc;
  }
  ck->tensors[ck->n++] = nt;
  *slot = ck->n;
  return GPUNET_OK;
}

/* Copies `nbytes` for a tensor, within the budget that stops hostile files from making
 * many copies of one storage. */
static gpunet_status
copy_buffer (gpunet_checkpoint *ck, const char *name, size_t nbytes, uint8_t **out,
    char **error_text)
{
  *out = NULL;
  if (nbytes > ck->copy_limit - ck->copied)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "tensor '%s' needs a %zu-byte copy, beyond what a file of %zu bytes can hold "
        "(storages shared between too many strided tensors)", name, nbytes, ck->size);
  void *p = malloc (nbytes ? nbytes : 1);
  if (!p || !own (ck, p)) {
    free (p);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory copying tensor '%s'", name);
  }
  ck->copied += nbytes;
  *out = p;
  return GPUNET_OK;
}

static gpunet_status
safetensors_sink (void *ctx, const char *name, const gpunet_tensor *t, char **error_text)
{
  gpunet_checkpoint *ck = ctx;
  gpunet_tensor nt = *t;
  if (t->nbytes && (uintptr_t) t->data % gpunet_dtype_size (t->dtype)) {
    uint8_t *p;
    gpunet_status st = copy_buffer (ck, name, t->nbytes, &p, error_text);
    if (st != GPUNET_OK)
      return st;
    memcpy (p, t->data, t->nbytes);
    nt.data = p;
  }
  return add_tensor (ck, name, &nt, error_text);
}

/* ---- torch zip archives ------------------------------------------------------------ */

static void
format_shape (char *buf, size_t cap, const int64_t *shape, int ndim)
{
  size_t len = 0;
  buf[0] = 0;
  if (ndim == 0)
    snprintf (buf, cap, "scalar");
  for (int k = 0; k < ndim && len + 24 < cap; k++)
    len += (size_t) snprintf (buf + len, cap - len, k ? "x%lld" : "%lld", (long long) shape[k]);
}

/* Turns a pickled _rebuild_tensor_v2 result into a checked contiguous tensor. */
static gpunet_status
load_tensor (gpunet_checkpoint *ck, const gpunet_zip *zip, const char *prefix, const char *name,
    const gpunet_pickle_value *t, char **error_text)
{
  const gpunet_pickle_value *sv = t->storage;
  if (sv->type != GPUNET_PICKLE_STORAGE)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "tensor '%s' is not backed by a torch storage (found a %s)", name,
        gpunet_pickle_type_name (sv->type));
  if (sv->kind < 0)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "tensor '%s' uses the unsupported storage type %s", name,
        sv->n && sv->items[0]->s ? sv->items[0]->s : "(not a class)");
  gpunet_dtype dtype = (gpunet_dtype) sv->kind;
  size_t isz = gpunet_dtype_size (dtype);

  size_t plen = strlen (prefix), klen = sv->len;
  char *ename = malloc (plen + 5 + klen + 1);
  if (!ename)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  memcpy (ename, prefix, plen);
  memcpy (ename + plen, "data/", 5);
  memcpy (ename + plen + 5, sv->s, klen + 1);
  const gpunet_zip_entry *entry = gpunet_zip_find (zip, ename);
  if (!entry) {
    gpunet_status st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "tensor '%s': its storage '%s' is missing from the archive", name, ename);
    free (ename);
    return st;
  }
  const uint8_t *sdata;
  size_t ssize;
  gpunet_status st = gpunet_zip_entry_data (zip, entry, &sdata, &ssize, error_text);
  if (st != GPUNET_OK) {
    gpunet_error_prefix (error_text, "tensor '%s'", name);
    free (ename);
    return st;
  }
  int64_t snumel = sv->i;
  if (snumel < 0 || (uint64_t) snumel > ssize / isz) {
    st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "tensor '%s': its storage declares %lld %s elements but the archive entry '%s' "
        "holds only %zu bytes", name, (long long) snumel, gpunet_dtype_name (dtype), ename, ssize);
    free (ename);
    return st;
  }
  free (ename);

  gpunet_tensor out;
  memset (&out, 0, sizeof out);
  out.dtype = dtype;
  out.ndim = t->ndim;
  const int64_t *shape = t->dims, *stride = t->dims + t->ndim;
  char shape_text[200];
  format_shape (shape_text, sizeof shape_text, shape, t->ndim);
  int64_t numel = 1, offset = t->i;
  for (int k = 0; k < t->ndim; k++) {
    if (shape[k] < 0 || stride[k] < 0)
      return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "tensor '%s' has a negative size or stride", name);
    out.shape[k] = shape[k];
  }
  if (!gpunet_shape_check (shape, t->ndim, &numel))
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "tensor '%s' has an impossibly large shape %s", name, shape_text);
  if (offset < 0)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "tensor '%s' has a negative storage offset", name);
  out.numel = numel;
  out.nbytes = (size_t) numel * isz;

  int contiguous = 1;
  if (numel > 0) {
    /* last element index = offset + sum (size - 1) * stride, without overflow */
    int64_t last = offset;
    int too_big = 0;
    for (int k = 0; k < t->ndim; k++) {
      if (stride[k] && shape[k] - 1 > (INT64_MAX - last) / stride[k]) {
        too_big = 1;
        break;
      }
      last += (shape[k] - 1) * stride[k];
    }
    if (too_big || last >= snumel)
      return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "tensor '%s' (shape %s, storage offset %lld) reaches past the end of its storage, "
          "which holds %lld elements", name, shape_text, (long long) offset, (long long) snumel);
    int64_t expect = 1;
    for (int k = t->ndim - 1; k >= 0; k--) {
      if (shape[k] != 1 && stride[k] != expect)
        contiguous = 0;
      expect *= shape[k];
    }
    if (!contiguous && numel > snumel)
      return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "tensor '%s' (shape %s) has more elements than its storage (overlapping strides "
          "are not supported)", name, shape_text);
  }

  const uint8_t *src = sdata + (size_t) offset * isz;
  if (numel == 0)
    out.data = sdata;
  else if (contiguous && (uintptr_t) src % isz == 0)
    out.data = src;
  else {
    uint8_t *dst;
    st = copy_buffer (ck, name, out.nbytes, &dst, error_text);
    if (st != GPUNET_OK)
      return st;
    if (contiguous)
      memcpy (dst, src, out.nbytes);
    else {
      int64_t idx[GPUNET_MAX_DIMS] = { 0 };
      for (int64_t e = 0; e < numel; e++) {
        int64_t pos = 0;
        for (int k = 0; k < t->ndim; k++)
          pos += idx[k] * stride[k];
        memcpy (dst + (size_t) e * isz, src + (size_t) pos * isz, isz);
        for (int k = t->ndim - 1; k >= 0; k--) {
          if (++idx[k] < shape[k])
            break;
          idx[k] = 0;
        }
      }
    }
    out.data = dst;
  }
  return add_tensor (ck, name, &out, error_text);
}

/* A short human description of a pickled value, for "no state dict" errors. */
static void
describe (const gpunet_pickle_value *v, char *buf, size_t cap)
{
  switch (v->type) {
    case GPUNET_PICKLE_DICT: {
      if (v->n == 0) {
        snprintf (buf, cap, "an empty dict");
        return;
      }
      size_t len = (size_t) snprintf (buf, cap, "a dict with keys ");
      for (size_t i = 0; i < v->n && len < cap; i++) {
        const gpunet_pickle_value *k = v->items[2 * i];
        if (i == 12 || len + 60 > cap) {
          snprintf (buf + len, cap - len, ", ... (%zu keys)", v->n);
          return;
        }
        if (k->type == GPUNET_PICKLE_STR)
          len += (size_t) snprintf (buf + len, cap - len, "%s%.40s", i ? ", " : "", k->s);
        else if (k->type == GPUNET_PICKLE_INT)
          len += (size_t) snprintf (buf + len, cap - len, "%s%lld", i ? ", " : "", (long long) k->i);
        else
          len += (size_t) snprintf (buf + len, cap - len, "%s<%s>", i ? ", " : "",
              gpunet_pickle_type_name (k->type));
      }
      return;
    }
    case GPUNET_PICKLE_OBJECT:
      snprintf (buf, cap, "an object of type %.100s", v->s);
      return;
    case GPUNET_PICKLE_GLOBAL:
      snprintf (buf, cap, "the class %.100s", v->s);
      return;
    case GPUNET_PICKLE_NONE:
      snprintf (buf, cap, "None");
      return;
    default:
      snprintf (buf, cap, "a %s", gpunet_pickle_type_name (v->type));
      return;
  }
}

static size_t
count_tensors (const gpunet_pickle_value *d)
{
  size_t n = 0;
  for (size_t i = 0; i < d->n; i++)
    n += d->items[2 * i]->type == GPUNET_PICKLE_STR && d->items[2 * i + 1]->type == GPUNET_PICKLE_TENSOR;
  return n;
}

static gpunet_status
open_zip (gpunet_checkpoint *ck, char **error_text)
{
  gpunet_zip *zip = NULL;
  gpunet_pickle *pk = NULL;
  char *prefix = NULL;
  gpunet_status st = gpunet_zip_open (ck->bytes, ck->size, &zip, error_text);
  if (st != GPUNET_OK)
    return st;

  const gpunet_zip_entry *pkl = NULL;
  for (size_t i = 0; i < gpunet_zip_n_entries (zip); i++) {
    const gpunet_zip_entry *e = gpunet_zip_entry_at (zip, i);
    size_t l = strlen (e->name);
    if ((l == 8 || (l > 8 && e->name[l - 9] == '/')) && strcmp (e->name + l - 8, "data.pkl") == 0
        && (!pkl || l < strlen (pkl->name)))
      pkl = e;
  }
  if (!pkl) {
    st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "the zip archive has no data.pkl entry, so it is not a torch.save checkpoint");
    goto out;
  }
  size_t plen = strlen (pkl->name) - 8;
  prefix = malloc (plen + 16);
  if (!prefix) {
    st = gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
    goto out;
  }
  memcpy (prefix, pkl->name, plen);
  strcpy (prefix + plen, "byteorder");
  const gpunet_zip_entry *bo = gpunet_zip_find (zip, prefix);
  prefix[plen] = 0;
  const uint8_t *bytes;
  size_t nbytes;
  if (bo && gpunet_zip_entry_data (zip, bo, &bytes, &nbytes, NULL) == GPUNET_OK
      && nbytes >= 3 && memcmp (bytes, "big", 3) == 0) {
    st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "the checkpoint was saved on a big-endian machine; only little-endian data is supported");
    goto out;
  }

  st = gpunet_zip_entry_data (zip, pkl, &bytes, &nbytes, error_text);
  if (st != GPUNET_OK)
    goto out;
  const gpunet_pickle_value *root;
  st = gpunet_pickle_parse (bytes, nbytes, &pk, &root, error_text);
  if (st != GPUNET_OK) {
    gpunet_error_prefix (error_text, "entry '%s'", pkl->name);
    goto out;
  }

  char desc[800];
  const gpunet_pickle_value *sd = NULL;
  if (root->type == GPUNET_PICKLE_DICT) {
    const gpunet_pickle_value *ema = gpunet_pickle_dict_get (root, "state_dict_ema");
    const gpunet_pickle_value *plain = gpunet_pickle_dict_get (root, "state_dict");
    if (ema && ema->type != GPUNET_PICKLE_NONE) {
      sd = ema;
      ck->source = "state_dict_ema";
    } else if (plain && plain->type != GPUNET_PICKLE_NONE) {
      sd = plain;
      ck->source = "state_dict";
    } else {
      sd = root;
      ck->source = "state dict";
    }
  }
  if (!sd || count_tensors (sd) == 0 || sd->type != GPUNET_PICKLE_DICT) {
    describe (sd ? sd : root, desc, sizeof desc);
    if (!sd || sd == root)
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "no state dict found: the file holds %s, and no tensors", desc);
    else if (sd->type != GPUNET_PICKLE_DICT)
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "no state dict found: '%s' is %s, not a dict of tensors", ck->source, desc);
    else
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "no tensors found: '%s' is %s, none of them a tensor", ck->source, desc);
    goto out;
  }
  for (size_t i = 0; i < sd->n && st == GPUNET_OK; i++) {
    const gpunet_pickle_value *k = sd->items[2 * i], *v = sd->items[2 * i + 1];
    if (k->type == GPUNET_PICKLE_STR && v->type == GPUNET_PICKLE_TENSOR)
      st = load_tensor (ck, zip, prefix, k->s, v, error_text);
  }

out:
  free (prefix);
  gpunet_pickle_free (pk);
  gpunet_zip_free (zip);
  return st;
}

/* ---- opening ------------------------------------------------------------------------ */

static const uint8_t legacy_magic[10] = { 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19 };

static gpunet_status
open_bytes (gpunet_checkpoint *ck, char **error_text)
{
  const uint8_t *d = ck->bytes;
  size_t size = ck->size;
  ck->copy_limit = (uint64_t) size * 2 + (1u << 20);
  if (size == 0)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT, "the file is empty");
  if (gpunet_zip_detect (d, size))
    return open_zip (ck, error_text);
  if (gpunet_safetensors_detect (d, size)) {
    ck->source = "safetensors";
    return gpunet_safetensors_read (d, size, safetensors_sink, ck, error_text);
  }
  for (size_t i = 0; i + sizeof legacy_magic <= size && i < 16; i++)
    if (memcmp (d + i, legacy_magic, sizeof legacy_magic) == 0)
      return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "this is a legacy (pre-1.6, non-zip) PyTorch checkpoint, which is not supported: "
          "re-save it with torch.save in PyTorch >= 1.6, or convert it to safetensors");
  if (d[0] == 0x80)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "this is a bare Python pickle, not a torch.save zip archive or a safetensors file");
  return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
      "not a PyTorch checkpoint (zip archive written by torch.save) or a safetensors file");
}

static gpunet_checkpoint *
ck_new (void)
{
  return calloc (1, sizeof (gpunet_checkpoint));
}

static gpunet_status
finish (gpunet_checkpoint *ck, gpunet_status st, const char *name, gpunet_checkpoint **out,
    char **error_text)
{
  if (st != GPUNET_OK) {
    gpunet_error_prefix (error_text, "checkpoint '%s'", name);
    gpunet_checkpoint_free (ck);
    return st;
  }
  *out = ck;
  return GPUNET_OK;
}

/* The error for a checkpoint path that names a directory, a FIFO, a device or a socket. */
static gpunet_status
not_regular (const char *path, const struct stat *sb, char **error_text)
{
  const char *what = S_ISDIR (sb->st_mode) ? "a directory" : S_ISFIFO (sb->st_mode) ? "a FIFO"
      : S_ISCHR (sb->st_mode) || S_ISBLK (sb->st_mode) ? "a device"
      : S_ISSOCK (sb->st_mode) ? "a socket" : "not a plain file";
  return gpunet_fail (error_text, GPUNET_ERR_IO, "checkpoint '%s' is not a regular file (%s): "
      "give the path of a .pth, .pth.tar or .safetensors file", path, what);
}

gpunet_status
gpunet_checkpoint_open (const char *path, gpunet_checkpoint **out, char **error_text)
{
  *out = NULL;
  if (!path)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "no checkpoint path given");
  /* open() of a FIFO blocks until a writer comes (a device may too): refuse what is not
   * a regular file before opening it, and open without blocking in case the path changes
   * in between; fstat then decides on what was opened */
  struct stat sb;
  if (stat (path, &sb) == 0 && !S_ISREG (sb.st_mode))
    return not_regular (path, &sb, error_text);
  int fd = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return gpunet_fail (error_text, GPUNET_ERR_IO, "cannot open checkpoint '%s': %s", path,
        strerror (errno));
  if (fstat (fd, &sb) != 0) {
    int e = errno;
    close (fd);
    return gpunet_fail (error_text, GPUNET_ERR_IO, "cannot read checkpoint '%s': %s", path,
        strerror (e));
  }
  if (!S_ISREG (sb.st_mode)) {
    close (fd);
    return not_regular (path, &sb, error_text);
  }
  if ((uint64_t) sb.st_size > (uint64_t) SIZE_MAX / 2) {
    close (fd);
    return gpunet_fail (error_text, GPUNET_ERR_IO, "checkpoint '%s' is too large to map", path);
  }
  gpunet_checkpoint *ck = ck_new ();
  if (!ck) {
    close (fd);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  }
  ck->size = (size_t) sb.st_size;
  if (ck->size > 0) {
    void *m = mmap (NULL, ck->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      int e = errno;
      close (fd);
      gpunet_checkpoint_free (ck);
      return gpunet_fail (error_text, GPUNET_ERR_IO, "cannot map checkpoint '%s': %s", path,
          strerror (e));
    }
    ck->bytes = m;
    ck->mapped = 1;
  }
  close (fd);
  return finish (ck, open_bytes (ck, error_text), path, out, error_text);
}

gpunet_status
gpunet_checkpoint_open_memory (const void *data, size_t size, const char *name,
    gpunet_checkpoint **out, char **error_text)
{
  *out = NULL;
  if (!name)
    name = "(memory)";
  if (!data && size)
    return gpunet_fail (error_text, GPUNET_ERR_INVALID_ARGUMENT, "no checkpoint data given");
  gpunet_checkpoint *ck = ck_new ();
  uint8_t *copy = malloc (size ? size : 1);
  if (!ck || !copy) {
    free (ck);
    free (copy);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  }
  if (size)
    memcpy (copy, data, size);
  ck->bytes = copy;
  ck->size = size;
  return finish (ck, open_bytes (ck, error_text), name, out, error_text);
}

void
gpunet_checkpoint_free (gpunet_checkpoint *ck)
{
  if (!ck)
    return;
  for (size_t i = 0; i < ck->n_owned; i++)
    free (ck->owned[i]);
  free (ck->owned);
  free (ck->tensors);
  free (ck->index);
  if (ck->mapped)
    munmap ((void *) ck->bytes, ck->size);
  else
    free ((void *) ck->bytes);
  free (ck);
}

size_t
gpunet_checkpoint_n_tensors (const gpunet_checkpoint *ck)
{
  return ck ? ck->n : 0;
}

const gpunet_tensor *
gpunet_checkpoint_tensor (const gpunet_checkpoint *ck, size_t i)
{
  return ck && i < ck->n ? &ck->tensors[i] : NULL;
}

const gpunet_tensor *
gpunet_checkpoint_find (const gpunet_checkpoint *ck, const char *name)
{
  if (!ck || !name || !ck->index_cap)
    return NULL;
  size_t v = *index_slot (ck, name);
  return v ? &ck->tensors[v - 1] : NULL;
}

const char *
gpunet_checkpoint_source (const gpunet_checkpoint *ck)
{
  return ck && ck->source ? ck->source : "";
}
