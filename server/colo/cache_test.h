/*
 * cache_test.h - TEST-ONLY hooks into the colo segment (server/colo/cache.h).
 * They break the segment's rules on purpose, to prove the rules hold: the
 * daemon never calls them.  They live in the library so tests/unit can
 * reach the segment's insides without a second build of it.
 */
#ifndef HKV_CACHE_TEST_H
#define HKV_CACHE_TEST_H

#include <stddef.h>
#include <stdint.h>

struct cache;

/* Takes the stripe mutex of khash and returns holding it (HKV_OK); the
 * caller is meant to die holding it. */
int cache_test_hold_stripe(struct cache *c, uint64_t khash);

/* Takes the stripe mutex, opens key's entry for writing (seq odd),
 * scribbles half of its value and returns HKV_OK still holding the mutex,
 * like a writer killed mid-write.  HKV_ENOENT if the key is not stored
 * (the mutex is then released). */
int cache_test_open_write(struct cache *c, const char *key, size_t klen, uint64_t khash);

/* Flips one bit of byte `off` of key's stored value behind the seqlock's
 * back, like a stray write.  HKV_OK, HKV_ENOENT, HKV_EINVAL (off past the
 * value). */
int cache_test_flip(struct cache *c, const char *key, size_t klen, uint64_t khash, size_t off);

/* Changes the header's generation without fixing its checksum, so the
 * next cache_attach must refuse the segment. */
void cache_test_scribble_header(struct cache *c);

/* Where key's entry is (its stripe, page, slot and slot class), as a
 * reader that validated it sees it.  HKV_OK or HKV_ENOENT. */
struct cache_test_where {
    uint32_t stripe, page, slot, cls;
};
int cache_test_where(struct cache *c, const char *key, size_t klen, uint64_t khash,
                     struct cache_test_where *w);
/* Gives a page to another slot class now (its entries evicted), as the
 * allocator does when memory moves between classes. */
void cache_test_give_page(struct cache *c, uint32_t stripe, uint32_t page, uint32_t cls);
/* What cache_get does after a validated hit (the CLOCK mark), for an entry
 * at w: played late, after the page changed hands, it is the reader that
 * was preempted between its check and its mark. */
void cache_test_touch(struct cache *c, const struct cache_test_where *w);

/* The stripe a hash falls in. */
uint32_t cache_test_stripe(struct cache *c, uint64_t khash);

/* Owner slot g's two health words (cache_health.c), to scribble on. */
uint64_t *cache_test_health_words(struct cache *c, unsigned g);

struct cache_test_geometry {
    uint32_t nstripes, pages_per_stripe, page_size, nclasses, index_per_stripe, refresh_locks;
};
void cache_test_geometry(struct cache *c, struct cache_test_geometry *g);

#endif
