/*
 * cache.h - the colo segment: one shared-memory mapping per colo, made by
 * the master before it forks and shared by every edge of the colo.  It holds
 * the cache entries, the per-key refresh locks, the hot-key sketch and the
 * cache counters.
 *
 * Rules of the segment (it is shared by processes that may die at any
 * instruction, so nothing in it is trusted):
 * - Offsets, never pointers.  A header (magic, layout version, generation,
 *   sizes, checksum) opens it and is checked by cache_attach.  The header,
 *   the counter rows and the stripe locks are segment.h's, shared with the
 *   rate limiter; the rest of this file is the cache's own.
 * - Readers never block on a writer.  Each entry carries a sequence number
 *   (odd while a writer is inside) and a checksum of its contents; a reader
 *   copies the entry out, then checks that the sequence did not move and the
 *   checksum matches.  A torn or corrupt entry is a miss (counted in
 *   cache_corrupt_entries), never served.  A reader retries a bounded number
 *   of times, then gives up (a miss), so a writer that died mid-write (its
 *   sequence left odd) cannot hang readers.
 * - Writers serialise per stripe with robust process-shared mutexes; a
 *   writer killed while holding one is repaired by the next locker
 *   (EOWNERDEAD -> the stripe's entries are checked, pthread_mutex_consistent).
 * - Refresh locks are lock-free words with an expiry: a worker that dies
 *   holding one cannot wedge a key; its lock is free as soon as its process
 *   is gone (reaped), and in any case at the lock's ttl.
 * - Full is never an error: entries are evicted (CLOCK).  Values larger than
 *   max_value are not cached (HKV_ETOOBIG, the caller serves from the owner).
 *
 * Times are CLOCK_MONOTONIC milliseconds (system-wide, so every process of a
 * host agrees); the key's own expiry is carried as unix ms, as the owner
 * sends it.  All functions are safe to call from any process attached to the
 * segment, concurrently.
 */
#ifndef HKV_CACHE_H
#define HKV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/hkv.h"
#include "proto/stamp.h"

struct cache;

struct cache_opts {
    size_t bytes;          /* whole segment (cache-memory), >= 1 MB */
    size_t max_value;      /* cache-max-value: larger values are not cached */
    uint32_t hot_sample;   /* sketch: count one read in this many (power of 2, >= 1) */
};

/* What a lookup found.  `value` is filled into the caller's buffer (the
 * entry itself may change the moment the lookup returns). */
struct cache_hit {
    int negative;          /* an authoritative "no such key", cached */
    hkv_stamp stamp;
    int64_t fresh_until;   /* monotonic ms: serve without asking anyone until then */
    int64_t keep_until;    /* monotonic ms: serve as stale until then */
    int64_t stored_at;     /* monotonic ms: when the value was fetched or pushed */
    int64_t expire_at;     /* the key's own expiry, unix ms, 0 = none */
};

/* Counters, declared once.  X(name, help): INFO's "# Cache" lines and the
 * /metrics families (hotkvd_<name>_total, per colo) come from this list. */
#define CACHE_COUNTERS(X)                                                                       \
    X(cache_hits, "Reads answered from the colo cache, fresh")                                 \
    X(cache_stale_hits, "Reads answered from the colo cache with a stale value")               \
    X(cache_misses, "Reads the colo cache could not answer")                                    \
    X(cache_refreshes, "Fetches from an owner to fill or refresh the colo cache")               \
    X(cache_refresh_lock_waits, "Reads that waited for another edge's refresh of the key")      \
    X(cache_negative_hits, "Reads answered from a cached absence")                              \
    X(cache_evictions, "Entries evicted from the colo cache to make room")                      \
    X(cache_corrupt_entries, "Torn or corrupt entries found and not served")                    \
    X(cache_lock_repairs, "Cache stripe locks recovered from a process that died holding one") \
    X(cache_not_cached_too_big, "Values not cached: larger than cache-max-value")              \
    X(cache_not_cached_unpushed, "Values not cached: the owner did not know the push link yet") \
    X(degraded_replies, "Reads answered by their class's on-timeout rule")                      \
    X(pushes_received, "Owner pushes and invalidations applied to the colo cache")            \
    X(owner_silent_marks, "Owners marked silent in this colo (outage episodes: cache_health.h)") \
    X(cache_silent_stale_hits, "Stale reads answered at once because their owner is silent")   \
    X(owner_probes, "Probes sent to owners marked silent")

enum cache_counter {
#define X(name, help) CACHE_CTR_##name,
    CACHE_COUNTERS(X)
#undef X
    CACHE_CTR_COUNT
};

struct cache_stats {
    uint64_t counters[CACHE_CTR_COUNT];
    uint64_t used_memory;  /* bytes of live entries */
    uint64_t entries;
    uint64_t capacity;     /* bytes usable for entries */
};

struct cache_hotkey {
    char key[128];         /* the first min(klen, 128) bytes; NUL-padded, not terminated */
    size_t klen;           /* the key's real length */
    uint64_t reads_per_sec;/* estimated */
};

/* Master, before fork: maps a new segment (memfd + MAP_SHARED; inherited by
 * children, never named, so nothing outside the process tree can open it;
 * the fd is closed once mapped).  The largest slot is one slab page, a
 * power of 2 from 4 KB to 1 MB, about 1/16 of a stripe's share of bytes
 * and no larger than max_value needs (256 MB -> 1 MB pages, 2 MB -> 8 KB).
 * HKV_OK, HKV_EINVAL (bytes < 1 MB, or hot_sample not a power of 2; errno
 * EINVAL), HKV_ENOMEM (errno says why). */
int cache_create(const struct cache_opts *o, struct cache **out);
/* Validates the header of an inherited segment (a child calls this once
 * after fork).  HKV_OK or HKV_ECORRUPT. */
int cache_attach(struct cache *c);
/* Unmaps (this process's view); sets *c = NULL. */
void cache_destroy(struct cache **c);

/* Looks `key` up.  `khash` is the caller's hash of the key (router_hash).
 * HKV_OK: found (value copied into *value, which is reset first; for a
 * negative entry value is empty and hit->negative = 1); HKV_ENOENT: miss
 * (absent, a tombstone, at or past keep_until, stamped before a FLUSHALL
 * (cache_forget_below), or torn/corrupt: never
 * served; torn/corrupt ones are counted here in cache_corrupt_entries);
 * HKV_ENOMEM (value could not grow).  No lock, no syscall, no allocation
 * once *value has grown to the value's size; a hit sets the entry's CLOCK
 * bit, which is kept outside the entry (a reader never writes into one).
 * Hits, misses and stale hits are the caller's to count. */
int cache_get(struct cache *c, const char *key, size_t klen, uint64_t khash, int64_t now,
              struct hkv_buf *value, struct cache_hit *hit);

/* Stores a value (or a negative entry: val NULL, negative 1), read from *in
 * during the call only.  Stamp-guarded:
 * an entry holding a newer stamp is kept (HKV_ESTALE), so a late fetch or
 * push never replaces a newer value; an equal stamp refreshes the times.
 * A tombstone (cache_invalidate) guards with its stamp until its
 * guard_until, and guards nothing from then on.  A stamp from before a
 * FLUSHALL is refused too (HKV_ESTALE, cache_forget_below).  When full, an entry is
 * evicted (counted in cache_evictions) and the put succeeds.
 * HKV_OK, HKV_ESTALE, HKV_ETOOBIG (over max_value or the largest slot: not
 * cached, and not counted here: cache_not_cached_too_big is the caller's),
 * HKV_EINVAL, HKV_ECORRUPT (the stripe's mutex is unrecoverable: only if
 * the segment was scribbled on). */
struct cache_entry {
    const char *key;
    size_t klen;
    uint64_t khash;        /* the caller's router_hash of the key (its route's) */
    const void *val;       /* NULL with vlen 0 for a negative entry */
    size_t vlen;
    int negative;          /* an authoritative "no such key" */
    hkv_stamp stamp;
    int64_t fresh_until;   /* monotonic ms, as in struct cache_hit */
    int64_t keep_until;    /* monotonic ms */
    int64_t expire_at;     /* the key's own expiry, unix ms, 0 = none */
};
int cache_put(struct cache *c, const struct cache_entry *in, int64_t now);

/* A write whose new value is not known here (a delete, a cold write's push,
 * INCRBY ...): the key's entry becomes a tombstone stamped `stamp`, whether
 * or not the segment held the key.  A tombstone is never served (cache_get:
 * HKV_ENOENT); until guard_until a put with an older stamp (a fetch that
 * started before the write, a negative answer with stamp 0) is refused
 * (HKV_ESTALE), and a put with stamp >= it replaces it; from guard_until on
 * it guards nothing and is just an entry to reuse.  guard_until is the
 * caller's: the last moment a fill or push that started before the write
 * can still be stored.  Tombstones are entries like any other (a class-0
 * slot each, evicted by CLOCK like the rest), so an evicted one guards
 * nothing either.  An entry holding a newer stamp (a live tombstone
 * included) is left as it is.  HKV_OK (a tombstone stored, or a newer
 * entry left), HKV_ETOOBIG (the key alone does not fit a slot: nothing is
 * stored, and no value of that key can be cached either), HKV_EINVAL,
 * HKV_ECORRUPT. */
int cache_invalidate(struct cache *c, const char *key, size_t klen, uint64_t khash,
                     hkv_stamp stamp, int64_t guard_until, int64_t now);

/* FLUSHALL: forgetting everything from before a flush, cache-wide.  An
 * owner's flush gives a version (`floor`) newer than every version that
 * owner issued before it; the owner is the stamp's writer (proto/stamp.h),
 * so one floor per writer says exactly which values are older than the
 * flush, whatever path they take into the segment: from then on cache_get
 * misses every entry (value, negative or tombstone) stamped below its
 * writer's floor, and cache_put refuses such a stamp (HKV_ESTALE), be it a
 * fill whose fetch the owner answered before the flush, a push written
 * before it and read after, or a write's own update.  Nothing is cleared:
 * forgotten entries are misses and are reused or evicted like the rest.
 * Floors only rise (an older floor is ignored); stamp 0 (a "not found" of a
 * key the owner never held) is below no floor.  Lock-free: one atomic per
 * writer, so the master applies it from outside the colo, and a put racing
 * with it is caught at the next read.  NULL c: nothing (never forgotten). */
void cache_forget_below(struct cache *c, hkv_stamp floor);
/* 1 if stamp is below its writer's flush floor. */
int cache_forgotten(const struct cache *c, hkv_stamp stamp);

/* Colo-wide refresh lock of a key.  `token` identifies the caller and must
 * be pid << 32 | sequence (the pid of the calling process, a sequence that
 * differs between the caller's concurrent holds).  1 = acquired (until
 * now + ttl_ms, or release; also 1, without extending, if this token already
 * holds it; also 1 when the holder's process is gone: its lock is taken
 * over), 0 = held by someone else whose process exists, and not expired.
 * Expiry is compared modulo 2^40 ms (no wrap for 17 years).  Fails open: the
 * table is direct-mapped by khash, and if the key's slot holds another key's
 * live lock the call returns 1 (counted nowhere: the caller just fetches).
 * Lock-free; a syscall (kill(pid, 0)) only when the key is held by another
 * process, at most once per 20 ms per process for the same hold. */
int cache_lock(struct cache *c, uint64_t khash, uint64_t token, int64_t now, int64_t ttl_ms);
/* Releases the lock if `token` still holds it. */
void cache_unlock(struct cache *c, uint64_t khash, uint64_t token);

/* Counts one read of key in the hot-key sketch (sampled: one call in
 * hot_sample per thread does any shared write); returns the key's
 * estimated reads per second, scaled by hot_sample (0 when not sampled
 * this time).  Never blocks. */
uint64_t cache_sketch_read(struct cache *c, const char *key, size_t klen, uint64_t khash,
                           int64_t now);
/* The estimated reads/s of key (0 if not among the tracked hot keys). */
uint64_t cache_sketch_rate(struct cache *c, uint64_t khash, int64_t now);
/* Up to max hottest keys, hottest first.  Returns how many. */
int cache_hotkeys(struct cache *c, struct cache_hotkey *out, int max, int64_t now);

/* Counters are relaxed atomics in the segment's counter rows (segment.h),
 * one row per process (by pid) so edges do not share a cache line;
 * cache_stats sums the rows.  cache_reset_counters zeroes every row, so the
 * whole colo's cache counters (CONFIG RESETSTAT); entries, memory and the
 * sketch are untouched.  NULL c: nothing. */
void cache_count(struct cache *c, enum cache_counter which, uint64_t n);
void cache_stats(struct cache *c, struct cache_stats *out);
void cache_reset_counters(struct cache *c);

#endif
