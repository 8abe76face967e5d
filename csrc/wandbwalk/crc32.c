/* CRC-32 (crc32.h): sixteen bytes a step by table lookups (slicing-by-16), and by carry-less multiplication where
 * an x86-64 CPU has it (chosen at ww_crc32_init). */

#include "crc32.h"

#include "wire.h"

static uint32_t crc_table[16][256];

static void tables_init(void) {
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

uint32_t ww_crc32(uint32_t value, const unsigned char *p, size_t len) {
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

void ww_crc32_init(void) {
    tables_init();
#ifdef HAVE_CLMUL
    __builtin_cpu_init();
    use_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}
