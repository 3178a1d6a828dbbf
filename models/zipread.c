/* zipread.c: the zip index of zipread.h: end-of-central-directory search (with comment
 * and ZIP64 records), central directory and local headers, each offset checked against
 * the buffer; a sorted name index for lookups; each entry's CRC-32 checked the first
 * time its bytes are handed out.  No decompression: torch.save archives are stored,
 * and compressed entries are reported as unsupported. */
#include "zipread.h"

#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "error.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOC64 0x07064b50u

struct gpunet_zip {
  const uint8_t *data;
  size_t size;
  gpunet_zip_entry *entries;
  size_t n;
  const gpunet_zip_entry **sorted;   /* entries sorted by (name, position) */
  unsigned char *crc_ok;             /* per entry: its CRC-32 was checked and matched */
};

static uint16_t
rd16 (const uint8_t *p)
{
  return (uint16_t) (p[0] | (p[1] << 8));
}

static uint32_t
rd32 (const uint8_t *p)
{
  return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

static uint64_t
rd64 (const uint8_t *p)
{
  return (uint64_t) rd32 (p) | ((uint64_t) rd32 (p + 4) << 32);
}

int
gpunet_zip_detect (const uint8_t *data, size_t size)
{
  if (size < 4)
    return 0;
  uint32_t sig = rd32 (data);
  return sig == SIG_LOCAL || sig == SIG_EOCD;
}

/* True when [off, off + len) lies within a buffer of `size` bytes. */
static int
in_bounds (uint64_t off, uint64_t len, size_t size)
{
  return off <= (uint64_t) size && len <= (uint64_t) size - off;
}

static int
cmp_entry (const void *a, const void *b)
{
  const gpunet_zip_entry *ea = *(const gpunet_zip_entry *const *) a;
  const gpunet_zip_entry *eb = *(const gpunet_zip_entry *const *) b;
  int c = strcmp (ea->name, eb->name);
  if (c)
    return c;
  return ea < eb ? -1 : ea > eb;   /* same array: keeps the archive order */
}

/* Reads the ZIP64 extended-information extra field of a central directory record,
 * replacing the 32-bit fields that are saturated. */
static int
apply_zip64_extra (const uint8_t *extra, size_t len, uint64_t *size, uint64_t *comp,
    uint64_t *offset, int need_size, int need_comp, int need_offset)
{
  size_t p = 0;
  while (p + 4 <= len) {
    uint16_t id = rd16 (extra + p), n = rd16 (extra + p + 2);
    if (p + 4 + n > len)
      return 0;
    if (id == 0x0001) {
      const uint8_t *f = extra + p + 4;
      size_t q = 0;
      if (need_size) {
        if (q + 8 > n)
          return 0;
        *size = rd64 (f + q);
        q += 8;
      }
      if (need_comp) {
        if (q + 8 > n)
          return 0;
        *comp = rd64 (f + q);
        q += 8;
      }
      if (need_offset) {
        if (q + 8 > n)
          return 0;
        *offset = rd64 (f + q);
      }
      return 1;
    }
    p += 4 + (size_t) n;
  }
  return !(need_size || need_comp || need_offset);
}

gpunet_status
gpunet_zip_open (const uint8_t *data, size_t size, gpunet_zip **out, char **error_text)
{
  *out = NULL;
  if (size < 22)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "truncated: a zip archive needs at least 22 bytes but the file has %zu", size);

  /* The end-of-central-directory record: 22 bytes plus a comment of up to 64 KiB. */
  size_t eocd = 0;
  int found = 0;
  size_t lowest = size - 22 > 65535 ? size - 22 - 65535 : 0;
  for (size_t p = size - 22 + 1; p-- > lowest;) {
    if (rd32 (data + p) == SIG_EOCD && p + 22 + (size_t) rd16 (data + p + 20) <= size) {
      eocd = p;
      found = 1;
      break;
    }
  }
  if (!found)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "truncated or corrupt: no zip end-of-central-directory record in the last %zu "
        "bytes (the file was probably cut short)", size - lowest);

  const uint8_t *e = data + eocd;
  uint64_t n_entries = rd16 (e + 10);
  uint64_t cd_size = rd32 (e + 12);
  uint64_t cd_offset = rd32 (e + 16);
  uint16_t disk = rd16 (e + 4), cd_disk = rd16 (e + 6);
  if ((disk != 0 && disk != 0xffff) || (cd_disk != 0 && cd_disk != 0xffff))
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "multi-part (spanned) zip archives are not supported");

  if (eocd >= 20 && rd32 (data + eocd - 20) == SIG_LOC64) {
    uint64_t off64 = rd64 (data + eocd - 20 + 8);
    if (!in_bounds (off64, 56, size) || rd32 (data + off64) != SIG_EOCD64)
      return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "corrupt: the ZIP64 end-of-central-directory record at byte %llu is missing "
          "or lies outside the file (%zu bytes)", (unsigned long long) off64, size);
    const uint8_t *z = data + off64;
    n_entries = rd64 (z + 32);
    cd_size = rd64 (z + 40);
    cd_offset = rd64 (z + 48);
  }

  if (cd_offset > (uint64_t) size || cd_size > (uint64_t) size - cd_offset)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "truncated: the zip central directory ends at byte %llu but the file has %zu bytes",
        (unsigned long long) cd_offset + (unsigned long long) cd_size, size);
  if (n_entries > cd_size / 46)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "corrupt: the zip directory claims %llu entries but is only %llu bytes long",
        (unsigned long long) n_entries, (unsigned long long) cd_size);

  gpunet_zip *zip = calloc (1, sizeof *zip);
  if (!zip)
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  zip->data = data;
  zip->size = size;
  zip->entries = calloc (n_entries ? (size_t) n_entries : 1, sizeof *zip->entries);
  zip->sorted = calloc (n_entries ? (size_t) n_entries : 1, sizeof *zip->sorted);
  zip->crc_ok = calloc (n_entries ? (size_t) n_entries : 1, 1);
  if (!zip->entries || !zip->sorted || !zip->crc_ok) {
    gpunet_zip_free (zip);
    return gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
  }

  gpunet_status st = GPUNET_OK;
  uint64_t p = cd_offset, end = cd_offset + cd_size;
  for (uint64_t i = 0; i < n_entries; i++) {
    if (end - p < 46 || rd32 (data + p) != SIG_CENTRAL) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "corrupt: zip directory record %llu (at byte %llu) is damaged",
          (unsigned long long) i, (unsigned long long) p);
      goto fail;
    }
    const uint8_t *c = data + p;
    uint16_t flags = rd16 (c + 8), method = rd16 (c + 10);
    uint32_t crc = rd32 (c + 16);
    uint64_t comp = rd32 (c + 20), usize = rd32 (c + 24), loff = rd32 (c + 42);
    size_t nlen = rd16 (c + 28), xlen = rd16 (c + 30), clen = rd16 (c + 32);
    if (end - p - 46 < (uint64_t) nlen + xlen + clen) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "corrupt: zip directory record %llu (at byte %llu) runs past the directory",
          (unsigned long long) i, (unsigned long long) p);
      goto fail;
    }
    gpunet_zip_entry *en = &zip->entries[zip->n];
    en->name = malloc (nlen + 1);
    if (!en->name) {
      st = gpunet_fail (error_text, GPUNET_ERR_NO_MEMORY, "out of memory");
      goto fail;
    }
    memcpy (en->name, c + 46, nlen);
    en->name[nlen] = 0;
    zip->n++;
    if (memchr (c + 46, 0, nlen)) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "corrupt: zip entry %llu has a NUL byte in its name", (unsigned long long) i);
      goto fail;
    }
    if (!apply_zip64_extra (c + 46 + nlen, xlen, &usize, &comp, &loff,
            usize == 0xffffffffu, comp == 0xffffffffu, loff == 0xffffffffu)) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "corrupt: zip entry '%s' has a damaged ZIP64 extra field", en->name);
      goto fail;
    }
    en->method = method;
    en->encrypted = flags & 1;
    en->crc32 = crc;
    en->comp_size = comp;
    en->size = usize;
    en->header_offset = loff;

    if (!in_bounds (loff, 30, size) || rd32 (data + loff) != SIG_LOCAL) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT, in_bounds (loff, 30, size)
          ? "corrupt: the local header of zip entry '%s' (byte %llu) is damaged"
          : "truncated: the local header of zip entry '%s' is at byte %llu, past the end of the file",
          en->name, (unsigned long long) loff);
      goto fail;
    }
    uint64_t dstart = loff + 30 + rd16 (data + loff + 26) + rd16 (data + loff + 28);
    if (!in_bounds (dstart, comp, size)) {
      st = gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "truncated: zip entry '%s' ends at byte %llu but the file has %zu bytes",
          en->name, (unsigned long long) (dstart + comp), size);
      goto fail;
    }
    en->data_offset = dstart;
    p += 46 + (uint64_t) nlen + xlen + clen;
  }

  for (size_t i = 0; i < zip->n; i++)
    zip->sorted[i] = &zip->entries[i];
  qsort (zip->sorted, zip->n, sizeof *zip->sorted, cmp_entry);
  *out = zip;
  return GPUNET_OK;

fail:
  gpunet_zip_free (zip);
  return st;
}

void
gpunet_zip_free (gpunet_zip *zip)
{
  if (!zip)
    return;
  for (size_t i = 0; i < zip->n; i++)
    free (zip->entries[i].name);
  free (zip->entries);
  free (zip->sorted);
  free (zip->crc_ok);
  free (zip);
}

size_t
gpunet_zip_n_entries (const gpunet_zip *zip)
{
  return zip->n;
}

const gpunet_zip_entry *
gpunet_zip_entry_at (const gpunet_zip *zip, size_t i)
{
  return i < zip->n ? &zip->entries[i] : NULL;
}

const gpunet_zip_entry *
gpunet_zip_find (const gpunet_zip *zip, const char *name)
{
  size_t lo = 0, hi = zip->n;   /* first sorted position whose name is > `name` */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp (zip->sorted[mid]->name, name) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return NULL;
  const gpunet_zip_entry *e = zip->sorted[lo - 1];
  return strcmp (e->name, name) == 0 ? e : NULL;
}

gpunet_status
gpunet_zip_entry_data (const gpunet_zip *zip, const gpunet_zip_entry *entry,
    const uint8_t **data, size_t *size, char **error_text)
{
  *data = NULL;
  *size = 0;
  if (entry->encrypted)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "entry '%s' is encrypted; encrypted zip archives are not supported", entry->name);
  if (entry->method != 0)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "entry '%s' is compressed (%s); only uncompressed archives as written by torch.save "
        "are supported: re-save the file with torch.save (or convert it to safetensors)",
        entry->name, entry->method == 8 ? "deflate" : "unknown zip method");
  if (entry->comp_size != entry->size)
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "corrupt: stored zip entry '%s' has a compressed size of %llu bytes but a size of %llu",
        entry->name, (unsigned long long) entry->comp_size, (unsigned long long) entry->size);
  if (!in_bounds (entry->data_offset, entry->size, zip->size))
    return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
        "truncated: zip entry '%s' runs past the end of the file", entry->name);
  /* a damaged file (a bad disk, an interrupted copy that kept the directory) must
   * not load as different weights */
  size_t idx = (size_t) (entry - zip->entries);
  if (idx < zip->n && !zip->crc_ok[idx]) {
    uint32_t crc = gpunet_crc32 (0, zip->data + entry->data_offset, (size_t) entry->size);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    /* (fuzzers, scripts/fuzz.sh, skip the check to reach the parsers behind it) */
    if (crc != entry->crc32)
#else
    if (0)
#endif
      return gpunet_fail (error_text, GPUNET_ERR_FORMAT,
          "corrupt: zip entry '%s' fails its CRC-32 check (the archive says %08x, its "
          "bytes give %08x): the file is damaged; download or copy it again",
          entry->name, (unsigned) entry->crc32, (unsigned) crc);
    zip->crc_ok[idx] = 1;
  }
  *data = zip->data + entry->data_offset;
  *size = (size_t) entry->size;
  return GPUNET_OK;
}
