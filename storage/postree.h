/*
 * postree.h - an ordered set of (position, pointer) pairs: a B+ tree.
 *
 * The ledger keeps its entries in a hash table by identity hash; walks in
 * hash-space order (SCAN's cursor is a position, proto/place.h; a leaf's
 * keys for a hand-off) need them in position order too, at a bounded cost
 * per step.  This is that second order, beside the table: every entry is
 * in it once, as (its position, its address).  Pairs compare by position,
 * then by address, so each is unique (two keys may share a position) and a
 * removal finds exactly its entry.
 *
 * Why a B+ tree: 16 bytes a pair in nodes of POSTREE_FANOUT pairs, kept at
 * least a quarter full by borrowing and merging on removal, so the cost per
 * key stays about 16 / fill bytes (measured in check_postree: ~20 bytes a
 * key after random inserts, a full leaf filling a sibling before it splits)
 * whatever was deleted, where a balanced binary tree threaded through the
 * entries costs 24-32 bytes a key in every entry
 * and a cache miss a level.  Leaves are linked, so a walk from a seek is a
 * pointer step per leaf.  Nothing is intrusive: the ledger's entries do
 * not grow.
 *
 * Not thread-safe (one owner loop).  Node memory is added to and taken from
 * the counter given at creation, so the ledger's memory figure (and its
 * maxmemory bound) includes it.
 */
#ifndef HKV_POSTREE_H
#define HKV_POSTREE_H

#include <stddef.h>
#include <stdint.h>

#define POSTREE_FANOUT 62 /* pairs a leaf holds (a node is ~1 KiB) */

struct postree;

/* Where a walk is: a leaf and an index in it.  Valid until the tree next
 * changes (an insert or remove may split, merge or free the leaf). */
struct postree_iter {
    const void *leaf;
    int i;
};

/* An empty tree whose node bytes are added to *bytes (may be NULL).  NULL
 * on allocation failure. */
struct postree *postree_create(uint64_t *bytes);
/* Frees the nodes (not what the pointers point to); *t = NULL.  NULL-safe. */
void postree_destroy(struct postree **t);

/* Adds (pos, p).  HKV_OK, HKV_EEXIST (that very pair is in already: nothing
 * changed), HKV_ENOMEM (nothing changed). */
int postree_insert(struct postree *t, uint64_t pos, void *p);
/* Removes (pos, p).  1 if it was there, 0 if not.  Never allocates. */
int postree_remove(struct postree *t, uint64_t pos, void *p);

size_t postree_count(const struct postree *t);
/* Bytes of its nodes now. */
uint64_t postree_bytes(const struct postree *t);

/* Positions *it at the first pair with position >= pos.  Returns 1, or 0
 * when there is none (then postree_get says so too). */
int postree_seek(const struct postree *t, uint64_t pos, struct postree_iter *it);
/* The pair at *it: 1 with *pos and *p set, or 0 past the end. */
int postree_get(const struct postree_iter *it, uint64_t *pos, void **p);
/* Steps *it to the next pair (in position, then address, order). */
void postree_next(struct postree_iter *it);

/* TEST-ONLY: checks every invariant (order, fill, separators, leaf links,
 * count, bytes); 0 if they hold, else the number of the failed check. */
int postree_check(const struct postree *t);

#endif
