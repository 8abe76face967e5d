/* The ranks of a file's keys: each key's place in the order its rows' lines write them (a hash table of the keys,
 * copied, in the order they were ranked). */

#ifndef WANDBWALK_RANKS_H
#define WANDBWALK_RANKS_H

#include <stddef.h>
#include <stdint.h>

/* keys past this many are not ranked: the records holding one are the Python reader's to write */
#define MAX_KEYS (1u << 20)

/* a ranked key: a copy of its bytes, its hash and its rank */
typedef struct {
    char *key;
    size_t len;
    uint64_t hash;
    uint32_t rank;
} Slot;

typedef struct {
    Slot *slots;  /* open addressing, a power of two of them, at most half used */
    size_t cap, count;
} Ranks;

/* the rank of a key (a key not ranked yet gets the next one); UINT32_MAX when out of memory or past MAX_KEYS */
uint32_t ww_rank(Ranks *ranks, const unsigned char *key, size_t len);

/* forget every key (and the table's memory) */
void ww_forget(Ranks *ranks);

#endif
