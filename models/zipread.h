/* zipread.h: a read-only zip archive index over bytes already in memory (the mapped
 * checkpoint).  Handles ZIP64 and archive comments; gives out pointers to "stored"
 * (uncompressed) entries only, which is what torch.save writes.  Every offset and size
 * is checked against the buffer, so a corrupt archive gives an error, never a bad read. */
#ifndef GPUNET_ZIPREAD_H
#define GPUNET_ZIPREAD_H

#include <stddef.h>
#include <stdint.h>

#include "gpunet.h"

typedef struct {
  char *name;            /* NUL-terminated (names with embedded NULs are rejected) */
  uint64_t header_offset; /* local header position */
  uint64_t data_offset;  /* first byte of the entry's data */
  uint64_t comp_size, size;
  uint32_t crc32;        /* CRC-32 of the data, from the central directory */
  int method;            /* 0 stored, 8 deflate, ... */
  int encrypted;
} gpunet_zip_entry;

typedef struct gpunet_zip gpunet_zip;

/* Nonzero when the bytes begin like a zip archive (local header or empty-archive EOCD). */
int gpunet_zip_detect (const uint8_t *data, size_t size);

/* Indexes the archive held in data[0..size) (which must outlive the index).  Errors are
 * sentences without the file name (callers prefix it). */
gpunet_status gpunet_zip_open (const uint8_t *data, size_t size, gpunet_zip **out,
    char **error_text);
void gpunet_zip_free (gpunet_zip *zip);

size_t gpunet_zip_n_entries (const gpunet_zip *zip);
const gpunet_zip_entry *gpunet_zip_entry_at (const gpunet_zip *zip, size_t i);
/* The entry with exactly this name, or NULL (the last one when names repeat). */
const gpunet_zip_entry *gpunet_zip_find (const gpunet_zip *zip, const char *name);

/* The bytes of a stored entry; a compressed or encrypted entry, or one whose bytes do not
 * match its CRC-32 (checked on the first call for each entry), gives GPUNET_ERR_FORMAT
 * with a sentence naming the entry.  Not thread-safe for one zip (the check's mark). */
gpunet_status gpunet_zip_entry_data (const gpunet_zip *zip, const gpunet_zip_entry *entry,
    const uint8_t **data, size_t *size, char **error_text);

#endif
