/* CRC-32 as zlib.crc32 computes it (reflected, polynomial 0xEDB88320): the W&B run file's chunk checksum. */

#ifndef WANDBWALK_CRC32_H
#define WANDBWALK_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* the tables, and whether the CPU multiplies carry-less (call once, before ww_crc32) */
void ww_crc32_init(void);

/* zlib's crc32(value, p, len): the CRC-32 of p, continuing from value */
uint32_t ww_crc32(uint32_t value, const unsigned char *p, size_t len);

#endif
