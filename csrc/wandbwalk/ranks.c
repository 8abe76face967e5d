/* The ranks of a file's keys (ranks.h). */

#include "ranks.h"

#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* the last n % 8 bytes of p[0:n] (n at least 8) as the low bytes of a word, from the word that ends there */
static inline uint64_t tail64(const unsigned char *p, size_t n) {
    size_t r = n & 7;
    return r ? load64(p + n - 8) >> (8 * (8 - r)) : 0;
}

static uint64_t hash_key(const unsigned char *p, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;  /* eight bytes a step, each multiplied in (a key is a few words) */
    uint64_t last = 0;
    if (n >= 8) {
        last = tail64(p, n);
        for (size_t k = 0; k + 8 <= n; k += 8)
            h = (h ^ load64(p + k)) * 0xff51afd7ed558ccdull;
    } else {
        for (size_t k = 0; k < n; k++)
            last = (last << 8) | p[k];
    }
    h = (h ^ last) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

/* p[0:n] == q[0:n] */
static inline int same(const unsigned char *p, const unsigned char *q, size_t n) {
    if (n < 8)
        return memcmp(p, q, n) == 0;
    for (size_t k = 0; k + 8 <= n; k += 8)
        if (load64(p + k) != load64(q + k))
            return 0;
    return load64(p + n - 8) == load64(q + n - 8);
}

static int grow(Ranks *w) {
    size_t cap = w->cap ? w->cap * 2 : 256;
    Slot *slots = calloc(cap, sizeof(Slot));
    if (slots == NULL)
        return 0;
    for (size_t k = 0; k < w->cap; k++) {
        Slot *s = &w->slots[k];
        if (s->key == NULL)
            continue;
        size_t at = s->hash & (cap - 1);
        while (slots[at].key != NULL)
            at = (at + 1) & (cap - 1);
        slots[at] = *s;
    }
    free(w->slots);
    w->slots = slots;
    w->cap = cap;
    return 1;
}

uint32_t ww_rank(Ranks *w, const unsigned char *key, size_t len) {
    uint64_t h = hash_key(key, len);
    if (w->cap) {
        size_t at = h & (w->cap - 1);
        for (Slot *s = &w->slots[at]; s->key != NULL; s = &w->slots[at]) {
            if (s->hash == h && s->len == len && same((const unsigned char *)s->key, key, len))
                return s->rank;
            at = (at + 1) & (w->cap - 1);
        }
    }
    if (w->count >= MAX_KEYS || ((w->count + 1) * 2 > w->cap && !grow(w)))
        return UINT32_MAX;
    char *copy = malloc(len ? len : 1);
    if (copy == NULL)
        return UINT32_MAX;
    memcpy(copy, key, len);
    size_t at = h & (w->cap - 1);
    while (w->slots[at].key != NULL)
        at = (at + 1) & (w->cap - 1);
    w->slots[at] = (Slot){copy, len, h, (uint32_t)w->count};
    return (uint32_t)w->count++;
}

void ww_forget(Ranks *w) {
    for (size_t k = 0; k < w->cap; k++)
        free(w->slots[k].key);
    free(w->slots);
    w->slots = NULL;
    w->cap = w->count = 0;
}
