/*
 * ledger.h - a shard owner's in-memory map: key -> value, stamp, expiry,
 * class, dirty.
 *
 * One ledger belongs to one owner's event loop; nothing in it locks.  It
 * answers every read and write of a resident key without touching disk and
 * hands dirty keys to the persister as rows (storage/persist_row.h).
 *
 * Versions.  The ledger orders the writes of its keys: a write applies in
 * the order the calls come, and each applied write gives its key a new
 * version (the `stamp` of views, rows and pushes), issued here from the
 * ledger's own hybrid logical clock (proto/stamp.h, writer bits =
 * options.writer): greater than the key's current version (tombstone or
 * expired entry included) and than any version this ledger has issued or
 * loaded.  Callers never choose a version, so no caller's clock can reorder
 * two writes; exactly-once retries are the owner's business (a completion
 * table, server/owner/owner_rifl.h), not a stamp comparison.  Every write returns,
 * in *version (may be NULL), the version its key holds afterwards: the new
 * one if it applied, the current one (0 if none) if it did not, 0 on an
 * argument error (HKV_EINVAL before the key is looked at).
 *
 * Deletes leave a tombstone that carries the delete's version; the sweep
 * frees a tombstone once it is clean (persisted) and older than
 * tombstone_ttl_ms (a cache may hold the key's older versions until then).
 *
 * Clocks.  Every call that needs time takes a struct ledger_clock with both a
 * monotonic and a wall-clock reading in ms.  Deadlines are kept on the
 * monotonic clock and every expiry decision uses it only, so a wall-clock
 * step neither expires nor extends a key in memory; the wall-clock deadline
 * (unix ms) is kept alongside only to be written to disk.
 *
 * Residency ("not resident" convention).  The ledger is *complete* when it
 * holds every key of its leaves: after recovery the owner calls
 * ledger_mark_complete(), and the first eviction clears it for good.  On a
 * key that is not resident, get/ttl answer HKV_ENOENT when the ledger is
 * complete and HKV_EAGAIN when it is not; HKV_EAGAIN means "not resident:
 * ask the reader thread, then ledger_load() the row (or
 * ledger_load_absent() when SQLite has none) and call again".  Writes to a
 * non-resident key of an incomplete ledger answer HKV_EAGAIN too, because the
 * stamp guard needs the stored stamp.  A tombstone or an expired entry that
 * is resident is always an authoritative "missing".
 *
 * Pointers.  Value pointers handed out (struct ledger_view) are valid until
 * the next call on the ledger other than ledger_get, ledger_ttl, ledger_scan,
 * ledger_count, ledger_stats, ledger_dirty, ledger_is_complete and
 * ledger_collect_dirty; any write, load, sweep or persisted/failed call may
 * free or replace them.  Reads do not allocate.
 *
 * Memory.  Usage counts entries (header, key, value), bucket arrays and the
 * position order's nodes (ledger_scan_pos: about 20 bytes a key).  When
 * options.maxmemory is set and usage passes it after a write or load, clean
 * entries are evicted by a CLOCK hand (a referenced bit set on each access
 * gives an entry a second chance); dirty entries are never evicted.  If only
 * dirty entries remain the ledger stays over the bound; the owner refuses
 * writes by the dirty-bytes number (ledger_dirty()), the ledger does not.
 */
#ifndef HKV_LEDGER_H
#define HKV_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "proto/siphash.h"
#include "proto/stamp.h"
#include "storage/persist_row.h"

struct ledger;

struct ledger_options {
    size_t maxmemory;          /* bytes, 0 = unbounded */
    uint64_t tombstone_ttl_ms; /* horizon before a clean tombstone is freed */
    uint32_t writer;           /* low bits of every version issued (the owner's id) */
    int has_hash_key;          /* 1: use hash_key (tests); 0: getrandom(2) */
    uint8_t hash_key[SIPHASH_KEY_LEN];
};

struct ledger_clock {
    uint64_t mono_ms; /* CLOCK_MONOTONIC in ms; must be > 0 */
    int64_t wall_ms;  /* unix ms */
};

typedef enum ledger_expiry_kind {
    LEDGER_EXP_NONE = 0, /* no expiry (SET clears an existing one) */
    LEDGER_EXP_REL,      /* ms from now (EX/PX/EXPIRE/PEXPIRE) */
    LEDGER_EXP_ABS,      /* unix ms (EXAT/PXAT/EXPIREAT), converted via wall_ms */
    LEDGER_EXP_KEEP,     /* keep the key's current expiry (KEEPTTL) */
} ledger_expiry_kind;

struct ledger_expiry {
    ledger_expiry_kind kind;
    int64_t ms;
};

/* SET flags. */
#define LEDGER_NX 0x1u  /* only if the key is missing */
#define LEDGER_XX 0x2u  /* only if the key exists */
#define LEDGER_GET 0x4u /* fill *old with the previous value */

/* What a read sees.  val points into the ledger (see "Pointers" above). */
struct ledger_view {
    int found;             /* 1: a live key; 0: missing (fields below zero) */
    const char *val;       /* NUL-terminated copy inside the ledger, vlen bytes */
    size_t vlen;
    hkv_stamp stamp;
    int64_t ttl_ms;        /* remaining ms, -1 = no expiry */
    int64_t expire_at_ms;  /* wall-clock unix ms, 0 = none */
    uint16_t class_id;     /* also for a resident tombstone or expired entry */
    int dirty;             /* not yet persisted (also for a resident tombstone) */
    int enc;               /* enum ledger_enc: how the value was made (OBJECT ENCODING) */
};

/* How a value was made, as far as Redis's OBJECT ENCODING and REFCOUNT can
 * tell (Redis's encoding depends on the command that wrote the value, not
 * only on its bytes).  Kept in memory only: a value loaded from the file is
 * LEDGER_ENC_AUTO, as Redis re-encodes what it loads.  Every write that
 * stores a new value makes it AUTO; RENAME keeps it; COPY keeps it but an
 * AUTO becomes UNSHARED; the caller sets the others (ledger_set_enc). */
enum ledger_enc {
    LEDGER_ENC_AUTO = 0,      /* a value as SET stores it: "int" if it reads as an integer
                               * of at most 20 characters (a small one shared), else
                               * "embstr" up to 44 bytes, else "raw" */
    LEDGER_ENC_RAW = 1,       /* changed in place (APPEND to a key, SETRANGE, SETBIT): "raw" */
    LEDGER_ENC_STR = 2,       /* never an integer (INCRBYFLOAT): "embstr" or "raw" by length */
    LEDGER_ENC_UNSHARED = 3,  /* a copy (COPY): as AUTO, but never a shared integer */
};

struct ledger_stats {
    uint64_t reads;
    uint64_t writes;               /* writes that applied */
    uint64_t evictions;
    uint64_t expired;              /* expired keys turned into tombstones by the sweep */
    uint64_t expires;              /* resident live keys with a deadline now */
    uint64_t expire_mono_sum;      /* sum of their monotonic deadlines (ms): the
                                    * average TTL is sum / expires - now.mono_ms */
    uint64_t tombstones_collected;
    uint64_t tombstones;           /* resident tombstones now */
    uint64_t keys;                 /* resident non-tombstone entries now (may include
                                    * expired ones the sweep has not reached yet) */
    uint64_t sys_expires, sys_expire_mono_sum; /* of expires, hotkvd's own */
    uint64_t sys_keys;             /* of them, hotkvd's own (proto/syskey.h): not a
                                    * client's, DBSIZE leaves them out */
    uint64_t memory_bytes;
    uint64_t dirty_keys;
    uint64_t dirty_bytes;
    uint64_t buckets;              /* bucket slots, both tables while rehashing */
    uint64_t order_bytes;          /* of memory_bytes, the position order's nodes */
    uint64_t dirty_order_bytes;    /* of memory_bytes, the dirty keys' order (an array
                                    * of a slot per dirty key, freed when none is) */
    int rehashing;
    int complete;
};

/* Collect filter: return nonzero to collect a dirty key of this class. */
typedef int (*ledger_filter_fn)(uint16_t class_id, void *arg);
/* Scan callback: one live key (klen bytes, not NUL-terminated), valid only
 * during the call; must not call into the ledger. */
typedef void (*ledger_scan_fn)(const char *key, size_t klen, void *arg);

/* Creates an empty, incomplete ledger.  HKV_OK, HKV_ENOMEM, HKV_EIO
 * (getrandom failed). */
int ledger_create(const struct ledger_options *opts, struct ledger **out);
/* Frees everything; sets *l = NULL.  NULL-safe. */
void ledger_destroy(struct ledger **l);

/* After recovery: every version a read reports from now on is at least a
 * new floor, greater than any version the previous run of this owner can
 * have issued, persisted or not: the next version of the clock (which has
 * seen every loaded row) taken at no earlier than the newest loaded
 * version's time + margin_ms.  Every resident entry's version is raised to
 * it, and so is every row loaded later and the version of an absence.
 * Why: a write acknowledged from memory and lost in a crash may sit in a
 * cache with its version; the restarted owner's answers must order after it
 * so that the cache takes them (the restart is a newer state of the key).
 * The wall clock gives that across a restart; margin_ms covers a clock that
 * stepped back by less than it.  Returns the floor. */
hkv_stamp ledger_set_floor(struct ledger *l, struct ledger_clock now, uint64_t margin_ms);

/* Declares that every key of the leaves has been loaded.  HKV_OK, or HKV_EFULL
 * when something was evicted meanwhile (the ledger stays incomplete). */
int ledger_mark_complete(struct ledger *l);
int ledger_is_complete(const struct ledger *l);

/* Reads a key.  HKV_OK (out filled, out->found = 1), HKV_ENOENT (missing, for
 * sure: out->found = 0, and out->stamp is the version of the tombstone or the
 * expired entry if one is resident, else the floor), HKV_EAGAIN (not
 * resident, ledger incomplete). */
int ledger_get(struct ledger *l, const char *key, size_t klen, struct ledger_clock now,
               struct ledger_view *out);

/* Writes a value.  flags: LEDGER_NX / LEDGER_XX / LEDGER_GET; exp: NONE, REL,
 * ABS or KEEP.  An ABS deadline in the past writes a tombstone (the key is
 * deleted, like Redis).  With LEDGER_GET, *old (may be NULL otherwise)
 * receives the previous live value, also when NX refuses the write.
 *   HKV_OK        applied (*version: the new version)
 *   HKV_EEXIST    NX and the key is live: not applied
 *   HKV_ENOENT    XX and the key is missing: not applied
 *   HKV_EAGAIN    not resident, ledger incomplete: nothing done
 *   HKV_EINVAL    REL ms <= 0, ABS ms <= 0, NX together with XX
 *   HKV_ENOMEM
 * class_id replaces the key's class tag (an opaque number the owner chooses
 * and reads back in collect filters; hotkvd stores the key's durability). */
int ledger_set(struct ledger *l, const char *key, size_t klen, const char *val, size_t vlen,
               uint16_t class_id, unsigned flags, struct ledger_expiry exp,
               struct ledger_clock now, struct ledger_view *old, hkv_stamp *version);

/* Deletes a key: leaves a tombstone with a new version, also when the key
 * was missing (a cache orders it after every earlier write).  *existed (may
 * be NULL) = 1 if a live key was deleted; with old non-NULL, *old receives
 * the deleted live value (GETDEL), valid as described under "Pointers".
 * class_id replaces the key's class tag, as for ledger_set: a delete is a
 * write, and the tombstone must be collected as the class the caller
 * decides now (a durable delete of a key with no entry must not be a
 * tombstone of class 0 that any collect filter takes).
 * HKV_OK, HKV_EAGAIN, HKV_ENOMEM. */
int ledger_del(struct ledger *l, const char *key, size_t klen, uint16_t class_id,
               struct ledger_clock now, int *existed, struct ledger_view *old,
               hkv_stamp *version);

/* INCRBY with Redis semantics: the value must be a base-10 int64 string
 * ("-12", no spaces, no '+', no leading zeros); a missing key counts as 0;
 * the expiry is kept.  *result (may be NULL) receives the new value.
 * HKV_OK, HKV_EINVAL (not an integer, or overflow: nothing applied),
 * HKV_EAGAIN, HKV_ENOMEM. */
int ledger_incrby(struct ledger *l, const char *key, size_t klen, int64_t delta,
                  uint16_t class_id, struct ledger_clock now, int64_t *result,
                  hkv_stamp *version);

/* Sets a live key's deadline (exp.kind REL or ABS).  A deadline at or
 * before now deletes the key through a tombstone, and *deleted (may be
 * NULL) is set to 1.  HKV_OK, HKV_ENOENT (no live key: nothing applied),
 * HKV_EAGAIN, HKV_EINVAL, HKV_ENOMEM (nothing applied). */
int ledger_expire(struct ledger *l, const char *key, size_t klen, struct ledger_expiry exp,
                  struct ledger_clock now, int *deleted, hkv_stamp *version);

/* Read-modify-write of one value, computed by fn: it gets the live value
 * (found = 1) or none (found = 0) and returns 1 with *val and *vlen to store
 * (copied by the ledger; the deadline is kept), 0 to change nothing, or a
 * negative status that the call returns unchanged.  HKV_OK with *changed and
 * *version (the new one, or the current one when nothing changed), HKV_EAGAIN
 * (not resident), HKV_ENOMEM, or fn's status. */
typedef int (*ledger_rmw_fn)(void *arg, const char *cur, size_t curlen, int found,
                             const char **val, size_t *vlen);
int ledger_rmw(struct ledger *l, const char *key, size_t klen, uint16_t class_id,
               ledger_rmw_fn fn, void *arg, struct ledger_clock now, int *changed,
               hkv_stamp *version);

/* FLUSHALL: every key goes.  Resident entries are freed; the returned
 * *version (newer than anything issued) becomes the read floor (a missing
 * key reports it, so caches order the flush after every earlier write) and
 * the flush floor: a row older than it that is loaded later (from a file the
 * flush has not reached yet) is taken as deleted, so the ledger is complete
 * again (a missing key is authoritatively missing, until an eviction).  The
 * caller makes the flush durable with a persist batch whose flush_below is
 * *version.
 * HKV_OK. */
int ledger_flush(struct ledger *l, struct ledger_clock now, hkv_stamp *version);
/* Recovery: the flush floor the file recorded (persister_flush_floor).  It
 * is also the read floor, and the clock moves past it: the versions issued
 * from now on are newer than the flush even when the file holds no row
 * newer than it (a flush that emptied it). */
void ledger_set_flush_floor(struct ledger *l, hkv_stamp floor);

/* Sets how a live resident key's value was made (enum ledger_enc), with no
 * new version (it is not a write).  HKV_OK, HKV_ENOENT (no live resident
 * key). */
int ledger_set_enc(struct ledger *l, const char *key, size_t klen, int enc,
                   struct ledger_clock now);

/* RENAME / RENAMENX / COPY within this ledger: dst gets src's value and
 * deadline under class dst_class; without LEDGER_MOVE_COPY src becomes a
 * tombstone.  LEDGER_MOVE_NX (RENAMENX, COPY without REPLACE): nothing when dst
 * is live.  Both keys must be resident: HKV_EAGAIN changes nothing.  HKV_OK
 * with *applied (0: NX and dst live, or RENAMENX k k), HKV_ENOENT (no live
 * src), HKV_EINVAL (COPY k k), HKV_ENOMEM.  *src_version and *dst_version: the
 * keys' versions afterwards. */
#define LEDGER_MOVE_NX 0x1u
#define LEDGER_MOVE_COPY 0x2u
int ledger_move(struct ledger *l, const char *src, size_t slen, const char *dst, size_t dlen,
                uint16_t dst_class, unsigned flags, struct ledger_clock now, int *applied,
                hkv_stamp *src_version, hkv_stamp *dst_version);

/* Clears a live key's expiry.  HKV_OK with *changed = 1 (cleared: a new
 * version) or 0 (it had none: nothing applied), HKV_ENOENT (no live key),
 * HKV_EAGAIN, HKV_ENOMEM (nothing applied). */
int ledger_persist(struct ledger *l, const char *key, size_t klen, struct ledger_clock now,
                   int *changed, hkv_stamp *version);

/* PTTL: HKV_OK with *ttl_ms = remaining ms, -1 (no expiry) or -2 (missing);
 * HKV_EAGAIN when not resident and incomplete. */
int ledger_ttl(struct ledger *l, const char *key, size_t klen, struct ledger_clock now,
               int64_t *ttl_ms);

/* Iterates live resident keys with a reverse-binary cursor (as Redis's
 * SCAN): start with 0, pass back the returned cursor, stop when it returns 0.
 * Every key resident for the whole scan is reported at least once, across
 * any number of resizes between calls; some may be reported twice.  `count`
 * is a hint of keys per call; `pattern` (NULL = all) is a glob (* ? [a-z]
 * [^x] \x) matched against the key.  Only resident keys are seen: when the
 * ledger is incomplete the owner must also scan its SQLite file. */
uint64_t ledger_scan(struct ledger *l, uint64_t cursor, size_t count, const char *pattern,
                     size_t plen, struct ledger_clock now, ledger_scan_fn fn, void *arg);

/* Walks the live resident keys whose position (proto/place.h place_pos)
 * is in [from, to), in position order, calling fn for each that `pattern`
 * (NULL = all) matches, and returns where the walk stopped: `to` when it
 * went through the whole range, else the position of the first entry it did
 * not visit (every entry below it was visited), after at least `count`
 * keys reported or `max_visits` entries visited (tombstones, expired and
 * unmatched keys count as visits), but never between two entries of one
 * position.  Returns at once (to) for from >= to.  This is SCAN's order:
 * a key present for the whole of a walk that goes through its position is
 * reported, whatever was written meanwhile; only resident keys are seen
 * (an incomplete ledger's owner reads the rest from SQLite by position,
 * storage/persist_leaf.h, and merges: ledger_resident, ledger_row_live). */
uint64_t ledger_scan_pos(struct ledger *l, uint64_t from, uint64_t to, size_t count,
                         size_t max_visits, const char *pattern, size_t plen,
                         struct ledger_clock now, ledger_scan_fn fn, void *arg);
/* 1 if the ledger holds an entry for key (live, expired or a tombstone):
 * then it, not a row on disk, says what the key is. */
int ledger_resident(struct ledger *l, const char *key, size_t klen);
/* 1 if a row read from disk for a key that is not resident is a live key
 * at wall-clock time wall_ms: not a tombstone, not below the flush floor
 * (ledger_flush), not expired. */
int ledger_row_live(const struct ledger *l, const struct persist_row *row, int64_t wall_ms);
/* 1 if key matches SCAN's glob pattern (as ledger_scan and ledger_scan_pos
 * match), for keys that do not come from the ledger. */
int ledger_match(const char *pattern, size_t plen, const char *key, size_t klen);
/* Resident live keys (tombstones excluded; expired keys not yet swept
 * included, as Redis's DBSIZE). */
size_t ledger_count(const struct ledger *l);
void ledger_stats(const struct ledger *l, struct ledger_stats *out);
/* Dirty keys and the bytes they hold (for the persist-max-dirty bound). */
void ledger_dirty(const struct ledger *l, size_t *keys, size_t *bytes);

/* Copies the latest version of up to max_rows dirty keys that are not
 * already in flight into b (tombstones as tombstone rows), oldest first.
 * One row per key however many writes it had.  With a filter, only keys
 * whose class it accepts are taken (for "commit these durable writes now").
 * Collected keys stay dirty but are "in flight" until ledger_persisted /
 * ledger_persist_failed; a write meanwhile makes them collectable again.
 * Returns the number of rows added (>= 0) or HKV_ENOMEM (rows added before
 * the failure stay in the batch and are in flight). */
int ledger_collect_dirty(struct ledger *l, struct persist_batch *b, size_t max_rows,
                         ledger_filter_fn filter, void *arg);

/* The persister stored (key, stamp).  Clears the dirty flag only if the key
 * still holds that stamp.  HKV_OK (now clean), HKV_ESTALE (written again
 * meanwhile: stays dirty), HKV_ENOENT (not resident). */
int ledger_persisted(struct ledger *l, const char *key, size_t klen, hkv_stamp stamp);
/* The persister failed to store (key, stamp): if the key still holds that
 * stamp it becomes collectable again.  HKV_OK, HKV_ESTALE, HKV_ENOENT. */
int ledger_persist_failed(struct ledger *l, const char *key, size_t klen, hkv_stamp stamp);
/* Calls ledger_persisted (b->status == HKV_OK) or ledger_persist_failed for
 * every row of a finished batch. */
void ledger_batch_done(struct ledger *l, const struct persist_batch *b);

/* Inserts a clean entry from SQLite (a recovery row or a reader-thread
 * fetch).  Never overwrites a resident version with the same or a newer
 * stamp; the ledger's clock moves past the row's version, so every later
 * write gets a newer one.  A row whose wall-clock deadline has passed is loaded as an expired
 * entry.  HKV_OK (inserted or replaced an older one), HKV_EEXIST (resident
 * version as new or newer: row ignored), HKV_ENOMEM. */
int ledger_load(struct ledger *l, const struct persist_row *row, struct ledger_clock now);
/* Records that SQLite has no row for the key: a clean stamp-0 tombstone, so
 * the next lookup answers HKV_ENOENT.  HKV_OK, HKV_EEXIST
 * (resident already), HKV_ENOMEM. */
int ledger_load_absent(struct ledger *l, const char *key, size_t klen, struct ledger_clock now);

/* ---- a leaf moving (ledger_move.c) ---- */

/* One resident entry as a walk sees it; pointers valid during the call. */
struct ledger_item {
    const char *key;
    size_t klen;
    const char *val;       /* NULL for a tombstone */
    size_t vlen;
    hkv_stamp stamp;
    int64_t expire_at_ms;  /* wall-clock unix ms, 0 = none */
    uint16_t class_id;
    int tomb;
    int dirty;
};
#define LEDGER_WALK_KEEP 0
#define LEDGER_WALK_DROP 1
/* fn returns LEDGER_WALK_KEEP, or LEDGER_WALK_DROP to free the entry (clean
 * or dirty: a dirty one is forgotten, never persisted).  It must not call
 * into the ledger. */
typedef int (*ledger_walk_fn)(void *arg, const struct ledger_item *it);
/* Visits every resident entry, tombstones and expired ones included, with
 * SCAN's reverse-binary cursor: start with 0, pass back the returned
 * cursor, done when it returns 0; each call visits up to `buckets` buckets
 * (>= 1).  Every entry resident for the whole walk is visited at least once
 * (some twice).  A mutating call (fn may drop entries). */
uint64_t ledger_walk(struct ledger *l, uint64_t cursor, size_t buckets, ledger_walk_fn fn,
                     void *arg);
/* Inserts a clean entry that another owner wrote (a row of a leaf moving
 * here): as ledger_load, except that the row keeps its own version (no
 * floor raises it, the flush floor does not judge it), so of two rows of a
 * key the newer one stays, whatever order they come in.  The clock moves
 * past the row's version.  HKV_OK, HKV_EEXIST (a resident version as new or
 * newer: ignored), HKV_ENOMEM. */
int ledger_load_moved(struct ledger *l, const struct persist_row *row, struct ledger_clock now);
/* The same for a row a follower receives from its primary (CLUSTER.md §7),
 * except that the entry is dirty: this owner's write-behind persists the
 * latest version of each key, as for its own writes, instead of a batch
 * per received result. */
int ledger_load_followed(struct ledger *l, const struct persist_row *row, struct ledger_clock now);

/* Called with each key the ledger expires (ledger_expire_due, ledger_sweep)
 * right after it became a tombstone: keyspace notifications' "expired".
 * NULL turns it off.  The key bytes are valid during the call only. */
typedef void (*ledger_expired_fn)(void *arg, const char *key, size_t klen);
void ledger_on_expired(struct ledger *l, ledger_expired_fn fn, void *arg);

/* Expires keys whose deadline has passed, up to `budget` deadlines from the
 * active-expiry heap (so DBSIZE converges within one call of a key's
 * deadline, whatever the table size): each becomes a dirty tombstone with
 * its stamp, counted in `expired`.  A mutating call (frees values).  Returns
 * the number of keys expired. */
size_t ledger_expire_due(struct ledger *l, struct ledger_clock now, size_t budget);

/* First expires due keys (ledger_expire_due, budget * 8), then visits up to
 * `budget` buckets from a saved position: an expired key
 * becomes a dirty tombstone with its stamp (so the persister deletes the row
 * and a late write within the horizon is refused), counted in `expired`; a
 * clean tombstone older than tombstone_ttl_ms is freed.  Returns the number
 * of entries changed or freed. */
size_t ledger_sweep(struct ledger *l, struct ledger_clock now, size_t budget);

#endif
