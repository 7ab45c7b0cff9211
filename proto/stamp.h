/*
 * stamp.h - hybrid logical clock stamps that order the writes of a key.
 *
 * A stamp is one uint64 so that it compares with `<`, fits a msgpack uint, an
 * SQLite INTEGER (the top bit stays 0) and a relaxed atomic in shared memory:
 *
 *   bit 63     0
 *   bits 62-22 milliseconds since STAMP_EPOCH_MS (41 bits: until 2093)
 *   bits 21-12 counter within that millisecond (10 bits)
 *   bits 11-0  writer id (12 bits: which edge stamped it)
 *
 * The time part never goes backwards: a clock that steps back keeps the last
 * time and counts, and a counter that overflows borrows the next millisecond
 * (the logical part of an HLC).  Two writers never produce the same stamp, so
 * "equal stamp" means "the same write, retried".
 */
#ifndef HKV_STAMP_H
#define HKV_STAMP_H

#include <stdint.h>

#define STAMP_EPOCH_MS 1704067200000ULL /* 2024-01-01T00:00:00Z */
#define STAMP_WRITER_BITS 12
#define STAMP_COUNTER_BITS 10
#define STAMP_WRITER_MAX ((1u << STAMP_WRITER_BITS) - 1)
#define STAMP_COUNTER_MAX ((1u << STAMP_COUNTER_BITS) - 1)
#define STAMP_TIME_SHIFT (STAMP_WRITER_BITS + STAMP_COUNTER_BITS)
#define STAMP_TIME_MAX ((1ULL << 41) - 1)

typedef uint64_t hkv_stamp;

struct hlc {
    uint64_t last_ms;   /* relative to STAMP_EPOCH_MS */
    uint32_t counter;
    uint32_t writer;
};

static inline hkv_stamp stamp_make(uint64_t ms, uint32_t counter, uint32_t writer)
{
    return ((ms & STAMP_TIME_MAX) << STAMP_TIME_SHIFT) |
           ((uint64_t)(counter & STAMP_COUNTER_MAX) << STAMP_WRITER_BITS) |
           (writer & STAMP_WRITER_MAX);
}
static inline uint64_t stamp_ms(hkv_stamp s) { return s >> STAMP_TIME_SHIFT; }
static inline uint32_t stamp_counter(hkv_stamp s)
{
    return (uint32_t)(s >> STAMP_WRITER_BITS) & STAMP_COUNTER_MAX;
}
static inline uint32_t stamp_writer(hkv_stamp s) { return (uint32_t)s & STAMP_WRITER_MAX; }

static inline void hlc_init(struct hlc *h, uint32_t writer)
{
    h->last_ms = 0;
    h->counter = 0;
    h->writer = writer & STAMP_WRITER_MAX;
}

/* The next stamp for a write made at wall-clock `now_unix_ms`. */
static inline hkv_stamp hlc_next(struct hlc *h, uint64_t now_unix_ms)
{
    uint64_t now = now_unix_ms > STAMP_EPOCH_MS ? now_unix_ms - STAMP_EPOCH_MS : 0;
    if (now > h->last_ms) {
        h->last_ms = now;
        h->counter = 0;
    } else if (++h->counter > STAMP_COUNTER_MAX) {
        h->last_ms++;
        h->counter = 0;
    }
    return stamp_make(h->last_ms, h->counter, h->writer);
}

/* Moves the clock past a stamp seen from elsewhere, so this writer's next
 * stamp is newer than anything it has observed. */
static inline void hlc_observe(struct hlc *h, hkv_stamp seen)
{
    uint64_t ms = stamp_ms(seen);
    uint32_t c = stamp_counter(seen);
    if (ms > h->last_ms || (ms == h->last_ms && c > h->counter)) {
        h->last_ms = ms;
        h->counter = c;
    }
}

#endif
