/* The hot loop of the W&B run file reader (steptable/ingest/readers/wandb.py), in C: walk the file's whole FULL
 * chunks, check each one's CRC-32, pass over the record kinds no row comes from, and write each history record of the
 * usual layout as one JSON object line. Anything else (a chunk that is part of a record, a bad checksum or header,
 * any other record kind or layout) stops the walk at that chunk for the Python reader, which reads and reports it
 * as it reads every chunk without this module. So this module only ever takes work off the Python reader: the rows
 * it writes are the ones the Python reader writes for the same records (tests/ingest/readers/test_wandbwalk.py).
 *
 * Optional: built where a C compiler is (setuptools' optional extension); the reader runs without it. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 32768
#define CHUNK_HEADER 7
#define FULL 1
#define FIRST 2
#define MIDDLE 3
#define LAST 4

/* why a walk stopped: at a chunk the Python reader must read; at the end of the bytes (a chunk not all there);
 * with its budget of rows or bytes spent and bytes left */
enum { AT_CHUNK = 0, AT_END = 1, AT_BUDGET = 2 };

static uint32_t crc_table[16][256];

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 16; k++)
            crc_table[k][n] = (crc_table[k - 1][n] >> 8) ^ crc_table[0][crc_table[k - 1][n] & 0xff];
}

static inline uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* the CRC register (inverted CRC) after p, sixteen bytes a step (slicing-by-16), then byte by byte */
static uint32_t crc_tables(uint32_t c, const unsigned char *p, size_t len) {
#define T(k, x, s) crc_table[k][((x) >> (s)) & 0xff]
    while (len >= 16) {
        uint32_t a = le32(p) ^ c, b = le32(p + 4), d = le32(p + 8), e = le32(p + 12);
        c = T(15, a, 0) ^ T(14, a, 8) ^ T(13, a, 16) ^ T(12, a, 24) ^ T(11, b, 0) ^ T(10, b, 8) ^ T(9, b, 16) ^
            T(8, b, 24) ^ T(7, d, 0) ^ T(6, d, 8) ^ T(5, d, 16) ^ T(4, d, 24) ^ T(3, e, 0) ^ T(2, e, 8) ^
            T(1, e, 16) ^ T(0, e, 24);
        p += 16;
        len -= 16;
    }
#undef T
    while (len--)
        c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_CLMUL 1
static int use_clmul;

/* The CRC register after p (len a multiple of 16, at least 64) by carry-less multiplication: four lanes of 16 bytes
 * folded 64 bytes a step, then into one, then Barrett-reduced to 32 bits (Gopal et al., "Fast CRC computation for
 * generic polynomials using PCLMULQDQ", Intel, 2009; the constants are those of the bit-reflected CRC-32 polynomial
 * given there, as zlib's and Linux's x86 code use them). Checked against zlib.crc32 by the tests. */
__attribute__((target("sse4.1,pclmul"))) static uint32_t crc_clmul(uint32_t c, const unsigned char *p, size_t len) {
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
    const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
    const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
    const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
    __m128i x1 = _mm_loadu_si128((const __m128i *)p), x2 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32)), x4 = _mm_loadu_si128((const __m128i *)(p + 48));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)c));
    p += 64;
    len -= 64;
    for (; len >= 64; p += 64, len -= 64) {
        __m128i x5 = _mm_clmulepi64_si128(x1, k1k2, 0x00), x6 = _mm_clmulepi64_si128(x2, k1k2, 0x00);
        __m128i x7 = _mm_clmulepi64_si128(x3, k1k2, 0x00), x8 = _mm_clmulepi64_si128(x4, k1k2, 0x00);
        x1 = _mm_xor_si128(_mm_clmulepi64_si128(x1, k1k2, 0x11), x5);
        x2 = _mm_xor_si128(_mm_clmulepi64_si128(x2, k1k2, 0x11), x6);
        x3 = _mm_xor_si128(_mm_clmulepi64_si128(x3, k1k2, 0x11), x7);
        x4 = _mm_xor_si128(_mm_clmulepi64_si128(x4, k1k2, 0x11), x8);
        x1 = _mm_xor_si128(x1, _mm_loadu_si128((const __m128i *)p));
        x2 = _mm_xor_si128(x2, _mm_loadu_si128((const __m128i *)(p + 16)));
        x3 = _mm_xor_si128(x3, _mm_loadu_si128((const __m128i *)(p + 32)));
        x4 = _mm_xor_si128(x4, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
#define FOLD(x, next)                                                                                               \
    x = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k3k4, 0x11), next), _mm_clmulepi64_si128(x, k3k4, 0x00))
    FOLD(x1, x2);
    FOLD(x1, x3);
    FOLD(x1, x4);
    for (; len >= 16; p += 16, len -= 16)
        FOLD(x1, _mm_loadu_si128((const __m128i *)p));
#undef FOLD
    /* 128 bits to 64, then Barrett reduction to 32 */
    x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, low32), k5, 0x00), x2);
    x2 = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), poly, 0x10);
    x2 = _mm_clmulepi64_si128(_mm_and_si128(x2, low32), poly, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x1, x2), 1);
}
#endif

/* zlib's crc32(value, p, len): CRC-32 (reflected, polynomial 0xEDB88320) of p, continuing from value */
static uint32_t crc32_update(uint32_t value, const unsigned char *p, size_t len) {
    uint32_t c = ~value;
#ifdef HAVE_CLMUL
    if (use_clmul && len >= 64) {
        size_t whole = len & ~(size_t)15;
        c = crc_clmul(c, p, whole);
        p += whole;
        len -= whole;
    }
#endif
    return ~crc_tables(c, p, len);
}

/* a varint at p (before end) -> its value in *out; the byte after it, or NULL when it runs past end or 64 bits */
static const unsigned char *varint(const unsigned char *p, const unsigned char *end, uint64_t *out) {
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

/* Bytes a JSON line takes as they are (the loop in Python copies them so too): a key between quotes holds no control
 * character, quote or backslash; a value (value_json: JSON text) no control character. Anything else is the Python
 * reader's to write. Eight bytes at once (exact bit tests: "Bit Twiddling Hacks", S. E. Anderson, hasless and
 * haszero: the high bit of a byte is set where the test holds for some byte of the word). */
static inline uint64_t load64(const unsigned char *p) {
    uint64_t x;
    memcpy(&x, p, 8);  /* (one unaligned load) */
    return x;
}

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

/* one history item: its key and value (in the record), the key's rank */
typedef struct {
    const unsigned char *key, *value;
    size_t klen, vlen;
    uint32_t rank;
} Item;

/* a key seen in the file: a copy of its bytes, its hash and its rank (keys in the order first seen) */
typedef struct {
    char *key;
    size_t len;
    uint64_t hash;
    uint32_t rank;
} Slot;

/* keys past this many are not ranked: the records holding one are the Python reader's to write */
#define MAX_KEYS (1u << 20)

typedef struct {
    PyObject_HEAD
    Slot *slots;  /* open addressing, a power of two of them, at most half used */
    size_t cap, count;
    Item *items;  /* one record's items */
    size_t items_cap;
    uint32_t *at;  /* one record's items by rank (1 + the item's index; 0: none) */
    size_t at_cap;
    unsigned char *joined;  /* one record's parts joined (FIRST, MIDDLE..., LAST) */
    size_t joined_cap;
    uint32_t confirmed;  /* keys ranked below this were given to order(): keys the rows have shown */
    int busy;
} Walker;

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

static int grow_keys(Walker *w) {
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

/* the rank of a key (a new key gets the next one); UINT32_MAX when out of memory or past MAX_KEYS */
static uint32_t rank_of(Walker *w, const unsigned char *key, size_t len) {
    uint64_t h = hash_key(key, len);
    if (w->cap) {
        size_t at = h & (w->cap - 1);
        for (Slot *s = &w->slots[at]; s->key != NULL; s = &w->slots[at]) {
            if (s->hash == h && s->len == len && same((const unsigned char *)s->key, key, len))
                return s->rank;
            at = (at + 1) & (w->cap - 1);
        }
    }
    if (w->count >= MAX_KEYS || ((w->count + 1) * 2 > w->cap && !grow_keys(w)))
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

/* A HistoryRecord at [p, end) of the usual layout, each item a key (one nested_key part, field 2) then value_json
 * (field 16) and nothing else, both as a line takes them (above), then at most the step (field 2, HistoryStep{num})
 * and, after a step, _info (field 200): the records the Python reader writes as they are (wandbwire.history_line;
 * it reads any other, a value holding `/_type":` included, item by item, which writes keys and reports invalid
 * UTF-8 in them otherwise and keeps the last line's clock otherwise): written at out as `{"key":value,...}\n`, its
 * keys in the order given to order() (wandb writes each record's items in a new order; one order lets the JSON
 * decoder find each key where it looks first), or in the record's order where it holds a key order() did not give
 * (a key the rows may not have shown yet: the store's columns come in the order the rows first show them, and a
 * line of a record the JSON decoder refuses shows none; its decoder has no field for the key either). Returns the
 * bytes written, 0 for any other record, a key twice in it included (what was written then does not count). A key
 * ending in `/_type` names a media value (a wandb.Table, an image), whose cells the Python reader leaves out. out
 * has room for end - p + 2 bytes: each item takes at least 7 bytes of tags and lengths beside its key and value,
 * and 4 in the line. */
static size_t history_line(Walker *w, const unsigned char *p, const unsigned char *end, char *out) {
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
        uint32_t rank = it[a].rank = rank_of(w, it[a].key, it[a].klen);
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

/* the chunk header at data[i] (file offset base + i), past a block's zero tail: its kind, data and length in *kind,
 * *rec, *length, and where the chunk after it starts; -1 when the bytes end first, -2 for a header or checksum the
 * Python reader must report */
static Py_ssize_t chunk(const unsigned char *data, Py_ssize_t n, Py_ssize_t i, Py_ssize_t base, int *kind,
                        const unsigned char **rec, Py_ssize_t *length) {
    Py_ssize_t left = BLOCK - (base + i) % BLOCK;
    if (left < CHUNK_HEADER) {  /* a block's tail too short for a chunk header: zero padding */
        if (n - i < left)
            return -1;
        i += left;
        left = BLOCK;
    }
    if (n - i < CHUNK_HEADER)
        return -1;
    const unsigned char *h = data + i;
    *length = (Py_ssize_t)h[4] | ((Py_ssize_t)h[5] << 8);
    *kind = h[6];
    if (*kind < FULL || *kind > LAST || *length > left - CHUNK_HEADER)
        return -2;
    if (*length > n - i - CHUNK_HEADER)
        return -1;
    *rec = h + CHUNK_HEADER;
    unsigned char type = (unsigned char)*kind;
    if (crc32_update(crc32_update(0, &type, 1), *rec, (size_t)*length) != le32(h))
        return -2;
    return i + CHUNK_HEADER + *length;
}

/* the record whose FIRST part starts at data[i]: its parts joined in w->joined (*rec, *length); the offset after its
 * LAST part, -1 when the bytes end first, -2 for anything the Python reader must read (a part out of order, a bad
 * checksum, no memory) */
static Py_ssize_t joined(Walker *w, const unsigned char *data, Py_ssize_t n, Py_ssize_t i, Py_ssize_t base,
                         const unsigned char **rec, Py_ssize_t *length) {
    size_t size = 0;
    for (int first = 1;; first = 0) {
        int kind;
        const unsigned char *part;
        Py_ssize_t len, next = chunk(data, n, i, base, &kind, &part, &len);
        if (next < 0)
            return next;
        if (kind != (first ? FIRST : kind == LAST ? LAST : MIDDLE))
            return -2;
        if (size + (size_t)len > w->joined_cap) {
            size_t cap = w->joined_cap ? w->joined_cap : BLOCK;
            while (cap < size + (size_t)len)
                cap *= 2;
            unsigned char *grown = realloc(w->joined, cap);
            if (grown == NULL)
                return -2;
            w->joined = grown;
            w->joined_cap = cap;
        }
        if (len > 0) {  /* (a FIRST part may be empty: a header in a block's last 7 bytes; joined is NULL yet) */
            memcpy(w->joined + size, part, (size_t)len);
            size += (size_t)len;
        }
        i = next;
        if (kind == LAST)
            break;
    }
    *rec = w->joined;
    *length = (Py_ssize_t)size;
    return i;
}

PyDoc_STRVAR(walk_doc,
"walk(data, i, base, max_rows, max_bytes) -> (i, lines, rows, why)\n\n"
"Walk the chunks of a W&B run file's bytes ``data`` from index ``i`` (file offset ``base + i``, the start of a chunk\n"
"or of a block's zero tail; no part of a record read before it): history records of the usual layout become\n"
"``lines`` (JSON object lines joined by newlines, none at the end; ``rows`` of them), records no row comes from are\n"
"passed over. Stops (``i``: where) at a chunk the Python reader must read (``why`` 0), at the end of ``data`` or a\n"
"record not all in it (1), or once ``max_rows`` rows or ``max_bytes`` bytes of lines are written with bytes left\n"
"(2). The keys of each line come in the order given to :meth:`order`, or in the record's order where it holds a\n"
"key not given (one walker per file).");

static PyObject *Walker_walk(Walker *w, PyObject *args) {
    Py_buffer view;
    Py_ssize_t i, base, max_rows, max_bytes;
    if (!PyArg_ParseTuple(args, "y*nnnn", &view, &i, &base, &max_rows, &max_bytes))
        return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t n = view.len;
    if (i < 0 || i > n || base < 0 || w->busy) {
        PyBuffer_Release(&view);
        PyErr_SetString(w->busy ? PyExc_RuntimeError : PyExc_ValueError,
                        w->busy ? "walk: already walking" : "walk: i out of range");
        return NULL;
    }
    /* a line is never longer than its record (+2: the record's tags take more); the walk stops once max_bytes are
     * written, and takes a record only where its line fits */
    Py_ssize_t room = n - i + 2;
    if (max_bytes >= 0 && max_bytes < room - BLOCK - 2)
        room = max_bytes + BLOCK + 2;
    PyObject *lines = PyBytes_FromStringAndSize(NULL, room);
    if (lines == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    char *out = PyBytes_AS_STRING(lines);
    Py_ssize_t used = 0, rows = 0;
    int why = AT_CHUNK;
    w->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        int kind;
        const unsigned char *rec;
        Py_ssize_t length, next = chunk(data, n, i, base, &kind, &rec, &length);
        if (next >= 0 && kind == FIRST) {
            next = joined(w, data, n, i, base, &rec, &length);
            if (next == -1)
                next = -2;  /* (a record not all here yet: the Python reader holds its first parts meanwhile) */
        } else if (next >= 0 && kind != FULL)
            next = -2;
        if (next < 0) {
            why = next == -1 ? AT_END : AT_CHUNK;
            if (next == -1 && BLOCK - (base + i) % BLOCK < CHUNK_HEADER && n - i >= BLOCK - (base + i) % BLOCK)
                i += BLOCK - (base + i) % BLOCK;  /* (past a block's zero tail: where the next chunk starts) */
            break;
        }
        /* Record.num (a varint) first, then the tag of the record's kind (as the Python reader finds it) */
        if (length < 3 || rec[0] != 0x08)
            break;
        Py_ssize_t j = 1;
        while (j < length && rec[j] > 0x7f && j < 11)
            j++;
        if (j + 1 >= length)
            break;
        unsigned char tag = rec[j + 1];
        if ((tag & 7) == 2 && (tag >> 3) >= 3 && (tag >> 3) <= 13) {  /* summary, output, stats...: no row */
            i = next;
            continue;
        }
        if (tag != 0x12)
            break;
        uint64_t hlen;
        const unsigned char *hist = varint(rec + j + 2, rec + length, &hlen);
        if (hist == NULL || hlen > (uint64_t)(rec + length - hist) || (Py_ssize_t)hlen + 2 > room - used)
            break;
        size_t wrote = history_line(w, hist, hist + hlen, out + used);
        if (wrote == 0)
            break;
        used += (Py_ssize_t)wrote;
        rows++;
        i = next;
        if ((rows >= max_rows || used >= max_bytes) && i < n) {
            why = AT_BUDGET;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    w->busy = 0;
    PyBuffer_Release(&view);
    if (used > 0)
        used--;  /* (no newline after the last line) */
    if (_PyBytes_Resize(&lines, used) < 0)
        return NULL;
    return Py_BuildValue("nNni", i, lines, rows, why);
}

/* forget every key's rank */
static void forget_keys(Walker *w) {
    for (size_t k = 0; k < w->cap; k++)
        free(w->slots[k].key);
    free(w->slots);
    w->slots = NULL;
    w->cap = w->count = 0;
    w->confirmed = 0;
}

PyDoc_STRVAR(order_doc,
"order(keys)\n\n"
"Rank ``keys`` (a list of bytes: keys the rows have shown), in their order: the lines of the next walks write them\n"
"in it (the order a JSON decoder of the rows reads fastest); a line holding another key comes in its record's order.");

static PyObject *Walker_order(Walker *w, PyObject *keys) {
    if (w->busy) {
        PyErr_SetString(PyExc_RuntimeError, "order: walking");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(keys, "order: a list of bytes");
    if (seq == NULL)
        return NULL;
    forget_keys(w);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t k = 0; k < n; k++) {
        char *key;
        Py_ssize_t len;
        if (PyBytes_AsStringAndSize(PySequence_Fast_GET_ITEM(seq, k), &key, &len) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        if (rank_of(w, (const unsigned char *)key, (size_t)len) == UINT32_MAX) {
            if (w->count >= MAX_KEYS)
                break;  /* (the rest are ranked as they are seen: past MAX_KEYS, none is) */
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
    }
    Py_DECREF(seq);
    w->confirmed = (uint32_t)w->count;
    Py_RETURN_NONE;
}

static void Walker_dealloc(Walker *w) {
    forget_keys(w);
    free(w->items);
    free(w->at);
    free(w->joined);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static PyMethodDef Walker_methods[] = {
    {"walk", (PyCFunction)Walker_walk, METH_VARARGS, walk_doc},
    {"order", (PyCFunction)Walker_order, METH_O, order_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject WalkerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "steptable.ingest.readers._wandbwalk.Walker",
    .tp_doc = PyDoc_STR("Walker(): one W&B run file's chunk walk, with its keys' ranks (see order)."),
    .tp_basicsize = sizeof(Walker),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)Walker_dealloc,
    .tp_methods = Walker_methods,
};

PyDoc_STRVAR(crc32_doc, "crc32(data, value=0) -> int\n\nzlib.crc32's CRC-32 of ``data``, continuing from ``value``.");

static PyObject *crc32(PyObject *self, PyObject *args) {
    Py_buffer view;
    unsigned int value = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*|I", &view, &value))
        return NULL;
    uint32_t c = crc32_update(value, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef methods[] = {
    {"crc32", crc32, METH_VARARGS, crc32_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_wandbwalk",
    "The W&B run file reader's chunk walk in C (steptable.ingest.readers.wandb).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__wandbwalk(void) {
    crc_init();
#ifdef HAVE_CLMUL
    __builtin_cpu_init();
    use_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
    if (PyType_Ready(&WalkerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&WalkerType);
    if (PyModule_AddObject(m, "Walker", (PyObject *)&WalkerType) < 0) {
        Py_DECREF(&WalkerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
