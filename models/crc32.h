/* crc32.h: CRC-32 as zip and gzip compute it (crc32.c). */
#ifndef GPUNET_CRC32_H
#define GPUNET_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32 of p[0..n) continued from `crc` (0 to start): gpunet_crc32 (gpunet_crc32 (0,
 * a, n), b, m) is the CRC of a then b. */
uint32_t gpunet_crc32 (uint32_t crc, const uint8_t *p, size_t n);

#endif
