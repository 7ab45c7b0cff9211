/*
 * changes.h - the colo's change ring: which key (by hash) reached which
 * version in this colo's cache, so that a reader held on a key (an HTTP long
 * poll or watch stream) on ANY edge of the colo wakes when a write or a push
 * lands on any edge of it, and only when its own key changed.
 *
 * Why a ring and an eventfd per edge.  An owner pushes a write to ONE edge
 * per colo (its push link), and a write's own edge updates the cache; the
 * pollers of the key may sit on every other edge.  The edge that applied
 * the change appends (key hash, version) to this ring in the colo's shared
 * memory, then signals the eventfd of every edge that holds readers (an
 * "armed" edge).  A woken edge reads the records from where it left off and
 * re-checks only the readers of those hashes (then their keys, through the
 * cache): another key's write wakes nobody, unlike Consul's global index
 * (hashicorp/consul#3890).  Signals coalesce: an edge is signalled once
 * until it acknowledges (changes_ack), however many records pile up, so a
 * write burst costs each armed edge one wakeup per loop turn, and an edge
 * with no readers costs a writer nothing but the record.
 *
 * What a record says.  Besides the hash and version, a record carries the
 * key's first CHANGES_KEY_MAX bytes and its length (CLIENT TRACKING's BCAST
 * clients match prefixes on them, and every tracking client is told the
 * key's name), the client id of the connection whose write made it (0: a
 * push or a fill; NOLOOP skips a client's own writes) and flags: a FLUSH
 * record says "every key may have changed" (FLUSHALL, a push link that went
 * down or came back: pushes may have been missed), which readers treat as
 * CHANGES_LOST.
 *
 * The ring is lossy by design: it holds the last CHANGES_SLOTS records
 * (a power of two); a reader that falls further behind, or finds a record
 * whose writer died half-way, is told (CHANGES_LOST) and re-checks all its
 * readers, which is always correct (a reader re-checked for nothing goes
 * back to waiting).  Records are published per slot with a sequence word
 * (odd while written), as the cache's entries are; nothing read from the
 * segment is trusted beyond "some key with this hash may have changed".
 *
 * The segment is made by the master before it forks (segment.h: a memfd,
 * never named), with one eventfd per edge of the colo, inherited by every
 * edge (a restarted edge gets the same fd).  All functions are safe from any
 * process of the colo; each edge uses only its own index for the reader
 * side.  A NULL struct changes (HTTP off) makes every call a no-op.
 */
#ifndef HKV_CHANGES_H
#define HKV_CHANGES_H

#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"
#include "proto/stamp.h"

#define CHANGES_SLOTS 4096       /* records in the ring */
#define CHANGES_EDGES_MAX 256    /* edges of one colo (edge-workers' bound) */
#define CHANGES_KEY_MAX 200      /* key bytes a record carries */

#define CHANGES_F_FLUSH 1u       /* every key may have changed */
#define CHANGES_F_FILL 2u        /* a read's answer brought this version (not a write) */

/* One record, as a reader gets it (key valid only during the callback). */
struct change {
    uint64_t hash;
    hkv_stamp version;
    uint64_t origin;             /* the writing client's id; 0: none known */
    uint32_t flags;              /* CHANGES_F_* */
    uint32_t klen;               /* the key's whole length */
    const char *key;             /* its first min(klen, CHANGES_KEY_MAX) bytes */
};

struct changes;

/* changes_read's answers */
enum changes_rc {
    CHANGES_OK = 0,              /* every record up to the head was read */
    CHANGES_PENDING = 1,         /* stopped at a record still being written:
                                  * call again later (its writer signals) */
    CHANGES_LOST = 2,            /* records were lost (overwritten, or a writer
                                  * died inside one): re-check every reader; the
                                  * cursor is now at the head */
};

/* Master, before fork: a ring for nedges edges (1..CHANGES_EDGES_MAX), each
 * with an eventfd.  HKV_OK, HKV_EINVAL, HKV_ENOMEM (errno says why). */
int changes_create(uint32_t nedges, struct changes **out);
/* A child, once after fork: validates the inherited segment and makes this
 * process edge `edge` of it (its armed flag cleared).  HKV_OK or
 * HKV_ECORRUPT (then the caller serves without wakeups: its readers wait
 * for their deadlines). */
int changes_attach(struct changes *ch, uint32_t edge);
/* Unmaps this process's view and closes its eventfds; *ch = NULL. */
void changes_destroy(struct changes **ch);

/* Writer side: key (klen bytes, hash `hash`) reached `version` in the
 * colo's cache (call after the cache holds it), written by client `origin`
 * (0: a push or a fill).  Signals every armed edge not yet signalled (this
 * one included).  Lock-free; a write(2) per edge signalled. */
void changes_note_key(struct changes *ch, const char *key, size_t klen, uint64_t hash,
                      hkv_stamp version, uint64_t origin);
/* A fill's version (CHANGES_F_FILL): held readers re-check, trackers skip. */
void changes_note_fill(struct changes *ch, const char *key, size_t klen, uint64_t hash,
                       hkv_stamp version);
/* The same without a key (tests, and writers that have none). */
void changes_note(struct changes *ch, uint64_t hash, hkv_stamp version);
/* A FLUSH record: every key of the colo may have changed. */
void changes_note_flush(struct changes *ch);

/* Reader side, for this process's edge. */
/* The eventfd to watch for EV_READ; -1 when none. */
int changes_fd(const struct changes *ch);
/* on: this edge holds readers (writers signal it); off: it holds none.
 * Returns the ring's head when it arms (the cursor to read from: every
 * change before it is in the cache already), else 0. */
uint64_t changes_arm(struct changes *ch, int on);
/* The ring's head now (records ever claimed): a cursor to read from. */
uint64_t changes_head(const struct changes *ch);
/* After a signal: clears the eventfd and the "signalled" flag, so that the
 * next change signals again.  Call before changes_read. */
void changes_ack(struct changes *ch);
/* Calls fn(arg, record) for each record from *cursor up to the head,
 * advancing *cursor.  See enum changes_rc; on CHANGES_PENDING *cursor is the
 * record being written; changes_skip passes it (then re-check everyone). */
typedef void (*changes_fn)(void *arg, const struct change *c);
int changes_read(struct changes *ch, uint64_t *cursor, changes_fn fn, void *arg);
void changes_skip(struct changes *ch, uint64_t *cursor);

/* Test hook: claims the next position and leaves it half-written, as a
 * writer killed inside changes_note would (tests/unit/check_changes.c). */
void changes_test_abandon(struct changes *ch);

#endif
