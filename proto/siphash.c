/*
 * siphash.c - SipHash-2-4 written from the paper's description.
 *
 * State: four 64-bit words v0..v3 initialised from the key k0,k1 xored with
 * the ASCII constants "somepseudorandomlygeneratedbytes".  The message is cut
 * into 8-byte little-endian words m; each is absorbed as v3 ^= m, two SipRounds,
 * v0 ^= m.  The last word holds the 0-7 leftover bytes and, in its top byte,
 * the message length mod 256.  Finalisation: v2 ^= 0xff, four SipRounds, and
 * the output is v0 ^ v1 ^ v2 ^ v3.  Byte order is explicit, so the result is
 * the same on any host.
 */
#include "siphash.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static inline uint64_t load_le64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
           (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

#define SIPROUND                                                                   \
    do {                                                                           \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);                 \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                     \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                     \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);                 \
    } while (0)

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const void *data, size_t len)
{
    const uint8_t *in = data;
    uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL; /* "somepseu" */
    uint64_t v1 = k1 ^ 0x646f72616e646f6dULL; /* "dorandom" */
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL; /* "lygenera" */
    uint64_t v3 = k1 ^ 0x7465646279746573ULL; /* "tedbytes" */
    size_t whole = len & ~(size_t)7;

    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = load_le64(in + i);
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }

    uint64_t b = (uint64_t)(len & 0xff) << 56;
    for (size_t i = 0; i < (len & 7); i++)
        b |= (uint64_t)in[whole + i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;

    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}
