/* Little helpers of the W&B walk's parts: unaligned loads and protobuf varints. */

#ifndef WANDBWALK_WIRE_H
#define WANDBWALK_WIRE_H

#include <stdint.h>
#include <string.h>

static inline uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t load64(const unsigned char *p) {
    uint64_t x;
    memcpy(&x, p, 8);  /* (one unaligned load) */
    return x;
}

/* a varint at p (before end) -> its value in *out; the byte after it, or NULL when it runs past end or 64 bits */
static inline const unsigned char *varint(const unsigned char *p, const unsigned char *end, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
        unsigned char b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80) {
            *out = v;
            return p;
        }
    }
    return NULL;
}

#endif
