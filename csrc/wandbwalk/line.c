/* A W&B history record as one JSON object line (line.h). */

#include "line.h"

#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* Bytes a JSON line takes as they are (the loop in Python copies them so too): a key between quotes holds no control
 * character, quote or backslash; a value (value_json: JSON text) no control character. Anything else is the Python
 * reader's to write. Eight bytes at once (exact bit tests: "Bit Twiddling Hacks", S. E. Anderson, hasless and
 * haszero: the high bit of a byte is set where the test holds for some byte of the word). */
#define ONES 0x0101010101010101ull
#define HIGH 0x8080808080808080ull

static inline uint64_t control8(uint64_t x) {
    return (x - ONES * 0x20) & ~x;
}

static inline uint64_t unkey8(uint64_t x) {
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
    return control8(x) | ((q - ONES) & ~q) | ((b - ONES) & ~b);
}

/* whether test(word) leaves every high bit clear over the words of p[0:n] (inlined: test is a constant) */
static inline int all_clear(uint64_t (*test)(uint64_t), const unsigned char *p, size_t n) {
    uint64_t bad = 0;
    if (n >= 8) {
        for (size_t k = 0; k + 8 <= n; k += 8)
            bad |= test(load64(p + k));
        bad |= test(load64(p + n - 8));  /* (the last word: bytes already tested again) */
    } else {
        uint64_t x = ONES * 'a';  /* (a byte that passes where the word has none of p's) */
        for (size_t k = 0; k < n; k++)
            x = (x << 8) | p[k];
        bad = test(x);
    }
    return (bad & HIGH) == 0;
}

static inline int plain_key(const unsigned char *p, size_t n) {
    return all_clear(unkey8, p, n);
}

static inline int plain_value(const unsigned char *p, size_t n) {
    return all_clear(control8, p, n);
}

/* whether `/_type":` is in p[0:n] (the Python reader reads a line holding it item by item: a media value's mark) */
static int type_mark(const unsigned char *p, size_t n) {
    const unsigned char *end = p + n;
    while (end - p >= 8 && (p = memchr(p, '/', (size_t)(end - p - 7))) != NULL) {
        if (memcmp(p, "/_type\":", 8) == 0)
            return 1;
        p++;
    }
    return 0;
}

static int by_place(const void *a, const void *b) {
    const unsigned char *x = ((const Item *)a)->key, *y = ((const Item *)b)->key;
    return (x > y) - (x < y);
}

static int by_rank(const void *a, const void *b) {
    uint32_t x = ((const Item *)a)->rank, y = ((const Item *)b)->rank;
    return (x > y) - (x < y);
}

/* `"key":value,` at o; returns the byte after it */
static inline char *put_item(char *o, const Item *it) {
    *o++ = '"';
    memcpy(o, it->key, it->klen);
    o += it->klen;
    *o++ = '"';
    *o++ = ':';
    memcpy(o, it->value, it->vlen);
    o += it->vlen;
    *o++ = ',';
    return o;
}

/* the line `{"key":value,...}\n` of count items at out; returns its length */
static size_t put_line(char *out, const Item *it, size_t count) {
    char *o = out;
    *o++ = '{';
    for (size_t a = 0; a < count; a++)
        o = put_item(o, &it[a]);
    o[-1] = '}';
    *o++ = '\n';
    return (size_t)(o - out);
}

size_t ww_history_line(Lines *w, const unsigned char *p, const unsigned char *end, char *out) {
    size_t count = 0;
    while (p < end && *p == 0x0a) {
        uint64_t len, klen, vlen;
        const unsigned char *q = varint(p + 1, end, &len);
        if (q == NULL || len > (uint64_t)(end - q))
            return 0;
        const unsigned char *item_end = q + len;
        if (q >= item_end || *q != 0x12)  /* (a key in field 1: the Python reader's general path, see above) */
            return 0;
        const unsigned char *key = varint(q + 1, item_end, &klen);
        if (key == NULL || klen > (uint64_t)(item_end - key))
            return 0;
        const unsigned char *tag = key + klen;
        if (item_end - tag < 3 || tag[0] != 0x82 || tag[1] != 0x01)
            return 0;
        const unsigned char *value = varint(tag + 2, item_end, &vlen);
        if (value == NULL || vlen == 0 || vlen != (uint64_t)(item_end - value))
            return 0;
        if (!plain_key(key, klen) || !plain_value(value, vlen))
            return 0;
        if ((klen >= 6 && memcmp(key + klen - 6, "/_type", 6) == 0) ||
            type_mark(value, vlen))
            return 0;
        if (count == w->items_cap) {
            size_t cap = w->items_cap ? w->items_cap * 2 : 64;
            Item *items = realloc(w->items, cap * sizeof(Item));
            if (items == NULL)
                return 0;
            w->items = items;
            w->items_cap = cap;
        }
        w->items[count++] = (Item){key, value, klen, vlen, 0};
        p = item_end;
    }
    if (count == 0)
        return 0;
    int step = p < end && *p == 0x12;
    if (step) {  /* the step: empty (step 0) or exactly one varint num */
        if (end - p < 2 || p[1] >= 0x80 || p[1] > end - p - 2)
            return 0;
        const unsigned char *step_end = p + 2 + p[1];
        if (p[1] > 0) {
            uint64_t num;
            if (p[2] != 0x08 || varint(p + 3, step_end, &num) != step_end)
                return 0;
        }
        p = step_end;
    }
    if (p < end && !(step && end - p >= 2 && p[0] == 0xc2 && p[1] == 0x0c))  /* _info runs to the record's end */
        return 0;
    /* (a key of a record then left to the Python reader stays ranked: a line holding it comes in its record's
     * order until order() gives it) */
    Item *it = w->items;
    uint32_t lo = UINT32_MAX, hi = 0;
    int sorted = 1, fresh = 0;
    for (size_t a = 0; a < count; a++) {
        uint32_t rank = it[a].rank = ww_rank(&w->ranks, it[a].key, it[a].klen);
        if (rank == UINT32_MAX)
            return 0;  /* (out of memory, or past MAX_KEYS keys) */
        fresh |= rank >= w->confirmed;
        if (a && rank <= it[a - 1].rank)
            sorted = 0;
        lo = rank < lo ? rank : lo;
        hi = rank > hi ? rank : hi;
    }
    if (!sorted) {  /* in rank order: each item at its rank in a table of the record's span of ranks */
        size_t span = (size_t)(hi - lo) + 1;
        if (span > 4 * count + 64) {  /* (a few keys of a file of many: sorted instead) */
            qsort(w->items, count, sizeof(Item), by_rank);
            for (size_t a = 1; a < count; a++)
                if (it[a].rank == it[a - 1].rank)
                    return 0;  /* a key twice */
            if (fresh)  /* (back in the record's order: an item's key lies after the one before it) */
                qsort(w->items, count, sizeof(Item), by_place);
            return put_line(out, it, count);
        }
        if (span > w->at_cap) {
            uint32_t *at = realloc(w->at, span * sizeof(uint32_t));
            if (at == NULL)
                return 0;
            w->at = at;
            w->at_cap = span;
        }
        memset(w->at, 0, span * sizeof(uint32_t));
        for (size_t a = 0; a < count; a++) {
            uint32_t *slot = &w->at[it[a].rank - lo];
            if (*slot)
                return 0;  /* a key twice */
            *slot = (uint32_t)a + 1;
        }
        if (fresh)
            return put_line(out, it, count);
        char *o = out;
        *o++ = '{';
        for (size_t r = 0; r < span; r++)
            if (w->at[r])
                o = put_item(o, &it[w->at[r] - 1]);
        o[-1] = '}';
        *o++ = '\n';
        return (size_t)(o - out);
    }
    return put_line(out, it, count);
}

void ww_lines_free(Lines *w) {
    ww_forget(&w->ranks);
    w->confirmed = 0;
    free(w->items);
    free(w->at);
    w->items = NULL;
    w->at = NULL;
    w->items_cap = w->at_cap = 0;
}
