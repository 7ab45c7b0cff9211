/*
 * owner_int.h - what the owner's files share: the owner context, an edge
 * link, and a durable write waiting for its commit.  Private to
 * server/owner*.c (and the owner's unit tests).
 *
 * The owner's modules, bottom first; each calls only modules listed before
 * it (scripts/check/layers.py keeps it so):
 *
 *   owner_clock.c    the ledger's clock
 *   owner_rifl.c     completion records: exactly-once retries
 *   owner_own.c      in a cluster: this owner's number and leaves (from the
 *                    cluster map, kept durable), MOVED for the rest
 *   owner_link.c     edge links: framing, handshake (HELLO's cluster, owner
 *                    number and, over TCP+TLS, the peer's host checked),
 *                    sending; the requests go up through struct
 *                    olink_hooks
 *   owner_pushq.c    pushes: the keys written in a loop turn, sent once
 *                    per colo at its end with their latest state
 *   owner_ticket.c   commit tickets: durable replies held until their commit
 *   owner_persist.c  the write-behind glue: batches, parked requests (run
 *                    again through a replay callback), recovery
 *   owner_admin.c    SCAN (the owner's table walk: KEYS, RANDOMKEY) and STATS
 *   owner_scan.c     SCAN_RANGE: a range of positions' keys, from the ledger
 *                    and, when it is incomplete, from SQLite (a persister job)
 *   owner_gate.c     the gates every request passes (ours, retry, backlog,
 *                    durable pending) and how a write is finished
 *                    (recorded, then sent or held for its commit)
 *   owner_cmd_util.c the Redis command context (owner_cmd.h): reads,
 *                    writes that note their change, argument parsing
 *   owner_cmd_*.c    the Redis command handlers, one family a file
 *   owner_cmds.c     the Redis command table (names, arity, keys, flags)
 *   owner_call.c     CALL and EXEC: a Redis command, or a transaction,
 *                    run in one loop turn -> one RESP reply
 *   owner_ops.c      the request executor: one request against the ledger
 *                    -> one reply (or a parked request, or a held reply)
 *   owner.c          process lifecycle; wires owner_execute into the link
 *                    layer's on_request and the persister's replay
 *
 * Upward, only callbacks set at setup: owner_request_fn (a request to run,
 * the executor) and owner_link_gone_fn (a link is going away).
 */
#ifndef HKV_OWNER_INT_H
#define HKV_OWNER_INT_H

#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "proto/buf.h"
#include "proto/wire.h"
#include "server/owner/owner_rifl.h"
#include "server/core/counters.h"
#include "server/core/router.h"
#include "server/core/worker.h"
#include "server/owner/owner.h"
#include "server/owner/owner_opts.h"
#include "storage/ledger.h"
#include "storage/persister.h"
#include "server/core/topo.h"

struct olink;
struct owner;
struct scan_wait;
struct opushq;
struct onotify;                /* owner_notify.h */
struct owner_own;
struct persist_own;
struct ssl_ctx_st;                /* OpenSSL's SSL_CTX */

/* Runs one decoded request that arrived on l (payload is its frame, for a
 * request that must wait and run again): appends the reply to l->out, or
 * parks the request, or holds the reply for a commit.  The request executor
 * (owner_ops.c owner_execute) is the one such function; the layers below it
 * reach it only through this pointer (the link layer's on_request, the
 * persister's replay). */
typedef void (*owner_request_fn)(struct owner *o, struct olink *l, const struct wire_msg *m,
                                 const char *payload, size_t plen);
/* l is going away: whatever remembers it (a held reply, a parked request)
 * must forget it. */
typedef void (*owner_link_gone_fn)(struct owner *o, struct olink *l);

/* The link layer's calls up, set once with olink_setup() before the first
 * link is attached. */
/* A connection whose first frame is a leaf move's (proto/wire_hand.h), not
 * an edge's HELLO: bev (taken, the frame still in its input) becomes a
 * hand-off link; tls says it came in over TCP + TLS. */
typedef void (*owner_handoff_fn)(struct owner *o, struct bufferevent *bev, int tls);

struct olink_hooks {
    owner_request_fn on_request;  /* a request after the handshake */
    owner_link_gone_fn on_close;  /* may be NULL */
    owner_handoff_fn on_handoff;  /* may be NULL: such a link is refused */
};

/* The class tag the ledger keeps with each key (ledger.h class_id): the
 * key's durability when it was written. */
#define OWNER_TAG_LEDGER 0
#define OWNER_TAG_DURABLE 1

/* Every field STATS answers (and from there the edges' INFO), by the one
 * list in server/core/counters.h.  In o->st the owner counts what happens in
 * its loop (owner_reads, owner_writes ...); the fields read from the ledger,
 * the persister and the completion records there stay 0 and are filled in a
 * copy when STATS is answered (owner_admin.c). */
struct owner_counters {
#define X(name, kind, help) uint64_t name;
    CTR_OWNER(X)
#undef X
};

/* A reply held until a commit (owner_persist.c). */
struct dwait {
    struct olink *link;      /* NULL once the link closed: reply dropped */
    uint64_t id;             /* the request id on that link */
    int64_t deadline_ms;     /* monotonic: -TIMEOUT (outcome unknown) past it */
    struct hkv_buf reply;    /* the frame to send once committed */
    struct dwait *next;
};

/* One key a ticket needs committed at `version` or newer. */
struct tkey {
    char *key;
    size_t klen;
    uint64_t khash;
    hkv_stamp version;
    int done;
};

/* A commit ticket: the durable keys one write changed (one for SET, several
 * for a multi-key DEL) and the replies that wait for all of them to be in a
 * committed durable batch: the original request's and those of its retries
 * (owner_rifl.h).  A ticket lives until every key is committed; waiters
 * that give up (durable-timeout, a failed commit) are answered "outcome
 * unknown" and leave, the ticket stays. */
struct ticket {
    uint64_t id;             /* != 0, what a completion record names */
    struct tkey *keys;
    size_t nkeys, left;
    hkv_stamp flush;         /* FLUSHALL: also waits for a committed flush batch whose
                              * floor is this or newer; 0 once it came (or none) */
    struct dwait *waiters;
    struct ticket *next;
};

/* A request parked until the reader thread brings its key from SQLite. */
struct parked {
    struct olink *link;      /* NULL once the link closed */
    char *payload;           /* a copy of the frame's payload, replayed */
    size_t plen;
    char *key;               /* disk waits: the key being read (a copy) */
    size_t klen;
    int reading;             /* disk waits: this one's read is in flight */
    struct parked *next;
};

struct owner {
    struct worker_ctx *ctx;
    struct owner_opts opts;       /* from the config in effect (owner.c) */
    struct event_base *base;
    struct worker *worker;
    enum cfg_pool pool;
    int index;
    struct router *router;
    struct ledger *ledger;
    struct persister *persister;
    struct evconnlistener *listener;
    struct evconnlistener *tcp_listener; /* cluster: other hosts' edges, TCP + mutual TLS */
    struct ssl_ctx_st *cluster_tls; /* its server context (tls_cluster.h); rebuilt on reload */
    struct owner_own *own;        /* cluster: number and leaves (owner_own.c); NULL on a
                                   * single host */
    /* leaf moves (owner_move_int.h); all NULL on a single host */
    struct oagent *agent;         /* the agent's control channel */
    struct ohlinks *hlinks;       /* hand-off links */
    struct opark *park;           /* requests waiting for a leaf */
    struct opurge *purge;         /* leaves being dropped */
    struct orecv *recv;           /* the target's side of incoming moves */
    struct omove *move;           /* the source's side of the outgoing move */
    struct orepl *repl;           /* a primary's streams to followers (owner_repl.h) */
    struct ohandover *handover;   /* a planned hand-over to a follower (owner_repl.h) */
    struct owork_run *work;       /* load measured for automatic moves (owner_work_report.c) */
    struct olink *links;
    struct opushq *pushq;         /* keys to push at the end of the turn (owner_pushq.c) */
    struct onotify *events;       /* events waiting for their push (owner_notify.c) */
    struct olink_hooks link_hooks; /* owner_link.c calls up through these */
    struct event *persist_tick;
    struct event *sweep_tick;
    struct event *durable_tick;
    struct event *notify;
    struct event *flush_now;      /* a zero-delay event: commit durable writes */
    struct ticket *tickets;       /* pending commit tickets, newest first */
    uint64_t next_ticket;
    struct parked *parked, *parked_tail; /* disk waits, in arrival order */
    struct parked *commit_parked; /* reads waiting for a durable commit */
    struct scan_wait *scan_waits; /* SCAN_RANGE pages reading from disk (owner_scan.c) */
    owner_request_fn replay;      /* owner_persist.c runs parked requests again through it */
    struct rifl *rifl;            /* completion records (exactly-once retries) */
    uint64_t incarnation;         /* this process; in HELLO_OK, checked against rid.prev */
    uint64_t next_batch_id;
    int ledger_inflight;          /* ledger batches submitted, not yet done */
    int durable_inflight;         /* durable batches submitted, not yet done */
    int durable_orphans;          /* durable keys dirty with no waiter to flush them */
    int durable_tagged;           /* a write was durable (owner_key_tag, owner_is_durable)
                                   * or keys came in by a leaf move: until then no key can
                                   * hold an uncommitted durable write
                                   * (owner_durable_pending) */
    hkv_stamp flush_pending;      /* FLUSHALL: a flush floor not committed yet (0: none);
                                   * the persist tick submits it again after a failure */
    int flush_inflight;           /* flush batches submitted, not yet done */
    struct owner_counters st;
    struct owner_counters st_base;  /* CTR_COUNTER values at the last RESETSTAT (STATS
                                     * answers the difference) */
    struct wire_decoder dec;
    int stopping;
};

struct olink {
    struct owner *o;
    struct bufferevent *bev;
    struct hkv_buf out;           /* replies of the current read batch */
    int hello;                    /* handshake done */
    int closing;                  /* close once the output is written */
    int tls;                      /* a TCP + TLS link from another host */
    uint8_t role;
    uint32_t edge_id;
    uint64_t edge_inc;            /* the edge process's incarnation (HELLO) */
    char colo[2 * TOPO_COLO_NAME_MAX]; /* push links: the colo this edge serves ("<host>/<colo>"
                                        * in a cluster: colo names repeat across hosts) */
    struct olink *prev, *next;
};

/* The writer bits of the versions this owner issues: unique per owner of a
 * host (hot owners 1.., cold owners 2049..).  In a cluster, see
 * owner_own_writer. */
static inline uint32_t owner_writer_id(const struct owner *o)
{
    return (uint32_t)(1 + (o->pool == CFG_POOL_HOT ? 0 : 2048) + o->index) & STAMP_WRITER_MAX;
}

/* ---- owner_clock.c ---- */
/* Now, for the ledger (monotonic and wall); while held, the time the hold
 * began. */
struct ledger_clock owner_clock(void);
/* Holds the clock for one request (nests; every hold needs its release):
 * the executor holds it around each request. */
void owner_clock_hold(void);
void owner_clock_release(void);

/* ---- owner_own.c: a cluster owner's number and leaves ---- */
/* In a cluster (cfg->cluster set): makes o->own and loads the stored
 * ownership table (before the persister starts: owner_persist_setup calls
 * it).  0 (nothing to do on a single host), or -1 (logged). */
int owner_own_load(struct owner *o);
/* Follows the cluster map from now on (a 20 ms poll of its revision).  0/-1. */
int owner_own_start(struct owner *o);
void owner_own_teardown(struct owner *o);
/* This owner's cluster number (0: not known yet), the map revision it
 * follows (0: none yet), and how many leaves it serves. */
unsigned owner_own_number(const struct owner *o);
/* The writer bits of this owner's versions: on a single host
 * owner_writer_id; in a cluster its cluster number (1..CMAP_MAX_OWNERS),
 * read from the map at start, since owner k of one host and owner k of
 * another would otherwise issue the same versions (colo caches order and
 * floor by them).  Reads the whole map: call once, at start. */
uint32_t owner_own_writer(const struct owner *o);
int64_t owner_own_revision(const struct owner *o);
size_t owner_own_leaves(const struct owner *o);
/* Takes the cluster map now if its revision moved since the last poll (a
 * HELLO or a key this owner's last copy does not give it). */
void owner_own_refresh(struct owner *o);
/* fn runs whenever a new map copy has been taken, before any request sees
 * it (the follower side settles its copies there: owner_follow.c). */
void owner_own_on_map(struct owner *o, void (*fn)(struct owner *o));
/* 1 if placement hash `place` is in a leaf this owner serves.  o->own set. */
int owner_own_has(const struct owner *o, uint64_t place);
/* The leaf this owner serves that holds `place`: 1 with *prefix and *bits,
 * or 0 if it serves none.  o->own set. */
int owner_own_leaf(const struct owner *o, uint64_t place, uint32_t *prefix, uint8_t *bits);
/* owner_own_has, else appends MOVED (what the map says of the leaf) or, with
 * no map yet, ERROR TRYAGAIN for request id to l->out, counts it, returns 0. */
int owner_own_ours(struct owner *o, struct olink *l, uint64_t id, uint64_t place);
/* TEST-ONLY: stops the periodic poll, so only owner_own_refresh takes a map. */
void owner_own_test_stop_poll(struct owner *o);
/* The persister finished a batch carrying ownership table t (status). */
void owner_own_saved(struct owner *o, const struct persist_own *t, int status);

/* Marks: the leaves a move is about (owner_own.c has the rules).  state is
 * a storage/persist_own.h enum persist_own_state; block says which requests
 * on the leaf wait (owner_own_blocks).  At most OWN_MAX_MARKS: one outgoing
 * move, two incoming, and what a restart found. */
#define OWN_MAX_MARKS 8
enum own_block { OWN_BLOCK_NONE = 0, OWN_BLOCK_WRITES = 1, OWN_BLOCK_ALL = 2 };
struct own_mark {
    int used;
    uint32_t start;
    uint8_t bits;
    uint8_t state;        /* PERSIST_HANDING_OFF, PERSIST_RECEIVING, PERSIST_GONE */
    uint8_t block;        /* enum own_block */
    uint8_t unresolved;   /* read back at start: settle it from the map first */
    uint8_t adopted;      /* RECEIVING: the commit is known, served (stored as OWNED) */
    int64_t e1, e2;       /* the intent's epoch; GONE: the commit's */
    uint32_t peer;        /* the other owner of the move */
};
/* The mark covering place, or the one on leaf (start, bits); NULL if none. */
struct own_mark *owner_own_mark_at(const struct owner *o, uint64_t place);
struct own_mark *owner_own_mark(const struct owner *o, uint32_t start, uint8_t bits);
/* A new mark (or the leaf's, replaced); NULL when all are taken.  Changes
 * to a mark's durable fields (state, e1, e2, peer, adopted) are followed by
 * owner_own_changed; block and unresolved are memory only. */
struct own_mark *owner_own_mark_add(struct owner *o, uint32_t start, uint8_t bits, uint8_t state,
                                    int64_t e1, uint32_t peer);
void owner_own_mark_del(struct owner *o, struct own_mark *m);
/* The OWN_MAX_MARKS marks (check `used`), NULL on a single host. */
struct own_mark *owner_own_marks(const struct owner *o);
/* The table changed: it is saved at the next poll, or now with
 * owner_own_save_now.  owner_own_gen counts changes; owner_own_saved_gen
 * is the count the last committed save held (a change is durable once
 * owner_own_saved_gen reaches the owner_own_gen read after it). */
void owner_own_changed(struct owner *o);
void owner_own_save_now(struct owner *o);
uint64_t owner_own_gen(const struct owner *o);
uint64_t owner_own_saved_gen(const struct owner *o);
/* The map copy (NULL: none yet), valid until the next poll or refresh. */
const struct cmap_table *owner_own_map(const struct owner *o);
/* 1 if requests on place must wait (a mark blocks it: all, or writes). */
int owner_own_blocks(const struct owner *o, uint64_t place, int write);
/* A planned hand-over's fence (memory only, one leaf at a time): requests
 * on leaf (start, bits) wait as block says (OWN_BLOCK_NONE: the hold ends;
 * owner_park_release runs them again). */
void owner_own_hold(struct owner *o, uint32_t start, uint8_t bits, int block);
/* 1 if some mark blocks requests now (the fence gate's fast check). */
int owner_own_any_block(const struct owner *o);

/* ---- owner_link.c: edge links ---- */
/* Sets the hooks (copied) every link of o calls up through. */
void olink_setup(struct owner *o, const struct olink_hooks *hooks);
/* Accepts edge links on the listening socket fd (the master's).  0 or -1. */
int olink_listen(struct owner *o, int fd);
/* Accepts other hosts' edges on the TCP socket fd (the master's), TLS with
 * o->cluster_tls (set before).  0 or -1. */
int olink_listen_tls(struct owner *o, int fd);
/* A new link over bev (taken on success; freed with the link): its requests
 * go to the hooks once it has said HELLO.  NULL on allocation failure (bev
 * is left to the caller).  olink_listen's accepted sockets come here; a test
 * attaches one end of a bufferevent pair. */
struct olink *olink_attach(struct owner *o, struct bufferevent *bev);
/* Calls on_close, then frees the link and its bufferevent. */
void olink_close(struct olink *l);
void olink_close_all(struct owner *o);
/* Sends what is in l->out. */
void olink_flush(struct olink *l);

/* ---- owner_pushq.c: pushes, coalesced per loop turn ---- */
/* After a write applied to key (giving it version `stamp`): queues the key;
 * at the end of the loop turn its state then is sent once per colo that has
 * a push link (hot pool: PUSH with the value and its stamp, or INVALIDATE
 * with the newest stamp known if it is gone; cold pool: INVALIDATE), so colo
 * caches see the write in milliseconds.  Several writes of a key in one turn
 * make one push, of the latest state. */
void owner_push(struct owner *o, const char *key, size_t klen, hkv_stamp stamp);
/* The same when the caller has the key's placement hash (router_place). */
void owner_push_at(struct owner *o, const char *key, size_t klen, uint64_t place, hkv_stamp stamp);
/* Frees the queue (whatever it holds is not sent). */
void owner_pushq_teardown(struct owner *o);
/* The flush runs at the end of this turn even with no key queued (an
 * expired event to send). */
void owner_pushq_kick(struct owner *o);

/* PUBLISH: the message to one push link of every colo, then PONG (owner_pushq.c). */
void owner_publish(struct owner *o, struct olink *from, const struct wire_msg *m);

/* ---- owner_ticket.c: commit tickets ---- */
/* A new ticket for a durable write that changed keys[0..n) to `version`
 * (copied).  Returns its id, 0 on allocation failure. */
uint64_t owner_ticket_new(struct owner *o, const struct wire_slice *keys, size_t n,
                          hkv_stamp version);
/* Holds `reply` (taken) until ticket `t` is committed; returns 0, or -1 if
 * the ticket is no longer pending (committed: send the reply now, it is left
 * in `reply`). */
int owner_ticket_wait(struct owner *o, uint64_t t, struct olink *l, uint64_t id,
                      struct hkv_buf *reply);
/* A new ticket for a FLUSHALL whose flush floor is `floor`: complete once a
 * durable batch with that flush floor or a newer one has committed.  Its id,
 * 0 on allocation failure. */
uint64_t owner_ticket_flush(struct owner *o, hkv_stamp floor);
/* A durable batch finished: marks the ticket keys it holds at their version
 * or newer, releases (and pushes) the tickets that are complete, and answers
 * the waiters of tickets it touched "outcome unknown" if it failed.  A
 * committed flush batch (flush_below) completes the flush tickets at or
 * below its floor and every ticket key whose version is below it: that
 * write is ordered before the flush, which is now durable, so nothing a
 * crash could undo remains of it. */
void owner_tickets_settle(struct owner *o, const struct persist_batch *b);
/* Answers "outcome unknown" to waiters past durable-timeout (their tickets
 * stay, and are committed later). */
void owner_tickets_expire(struct owner *o);
void owner_tickets_forget_link(struct owner *o, struct olink *l);
size_t owner_tickets_waiting(const struct owner *o);
void owner_tickets_free(struct owner *o);

/* ---- owner_persist.c: write-behind, parked requests, recovery ---- */
/* Creates the ledger and the persister, recovers the ledger from the
 * owner's SQLite file and starts the persister and the timers.  Parked
 * requests run again through `run_again` (the request executor).  0, or -1
 * (logged; owner_persist_teardown frees what was made). */
int owner_persist_setup(struct owner *o, owner_request_fn run_again);
/* A reload: applies the reloadable persist settings of `next` (the persist
 * tick's interval, the persister's fsync bound).  Called from the reload
 * hook, before next replaces o->opts. */
void owner_persist_reload(struct owner *o, const struct owner_opts *next);
void owner_persist_teardown(struct owner *o);
/* Parks a read that would see a durable write not yet committed; it runs
 * again after the next durable commit (and parks again if it must). */
void owner_park_commit(struct owner *o, struct olink *l, const char *payload, size_t plen);
/* Parks a request until key is read from disk. */
void owner_park(struct owner *o, struct olink *l, const char *key, size_t klen,
                const char *payload, size_t plen);
/* A link is going away: its waiters and parked requests lose their reply
 * (an owner_link_gone_fn: the link layer's on_close). */
void owner_forget_link(struct owner *o, struct olink *l);
/* owner_diskwait.c: the persister's read answers are in (each key's parked
 * requests run again, in arrival order); a durable batch committed (the
 * reads that waited for a commit run again); teardown frees both lists. */
void owner_diskwait_take_reads(struct owner *o);
void owner_diskwait_commit_done(struct owner *o);
void owner_diskwait_free(struct owner *o);
/* FLUSHALL: makes the ledger's flush at `floor` durable: a durable batch
 * with flush_below = floor (every older row deleted, the floor recorded in
 * the file, one transaction), submitted now and again at the persist tick
 * until one commits (o->flush_pending).  Waiters use owner_ticket_flush. */
void owner_persist_flush(struct owner *o, hkv_stamp floor);
/* Writes every dirty key and waits for the commit (used when stopping). */
void owner_persist_flush_all(struct owner *o);
/* 1 if the persist backlog is over persist-max-dirty. */
int owner_backlog_full(struct owner *o);

/* ---- owner_admin.c: SCAN and STATS, answered into l->out ---- */
void owner_op_scan(struct owner *o, struct olink *l, const struct wire_msg *m);
void owner_op_stats(struct owner *o, struct olink *l, const struct wire_msg *m);
/* Fills the persist_* fields of v and those of the durable waiters and
 * completion records. */
void owner_persist_stats(struct owner *o, struct owner_counters *v);
/* CONFIG RESETSTAT (the worker's resetstat hook, arg the owner): STATS
 * answers its CTR_COUNTER fields from 0 again; gauges are untouched. */
void owner_stats_reset(void *arg);

/* ---- owner_scan.c: SCAN_RANGE ---- */
/* Answers a page of the keys of [from, to) cut to the leaf that holds from
 * (SCAN_REPLY, or MOVED), now or, when the ledger is incomplete, once the
 * disk rows are read (then sent and flushed on l). */
void owner_op_scan_range(struct owner *o, struct olink *l, const struct wire_msg *m);
/* l is going away: pages it waits for are dropped when they come. */
void owner_scan_forget_link(struct owner *o, struct olink *l);

/* ---- owner_work_report.c: the load automatic moves decide on (owner_work.h) ---- */
/* Starts measuring (any owner: STATS owner_busy_permille) and, in a cluster,
 * reporting a LEAF_LOAD to the agent every move-window.  0, or -1. */
int owner_work_setup(struct owner *o);
void owner_work_teardown(struct owner *o);
/* The request path's hooks: a request for a key of this owner, a write
 * applied, a result pushed to `colos` colos (`bytes` in all). */
void owner_work_request(struct owner *o, uint64_t place, struct wire_slice key);
void owner_work_write(struct owner *o, struct wire_slice key);
void owner_work_push(struct owner *o, const char *key, size_t klen, unsigned colos,
                     uint64_t bytes);

/* ---- owner_gate.c: gates and the end of a write ---- */
/* The class the live config gives key. */
const struct cfg_class *owner_class(struct owner *o, const char *key, size_t klen);
/* The ledger tag of a key written now: its durability, fixed at write time. */
uint16_t owner_key_tag(struct owner *o, struct wire_slice key);
/* After a write applied to key: 1 if what it left is durable, by the tag of
 * the key's entry (its class when its value was written; a delete keeps
 * the tag of what it deleted, and the tombstone of a key the owner did not
 * hold is not durable), since the tag is what decides which batches
 * persist it, so the only thing a commit ticket may wait for; the live
 * config's class when the key is not resident. */
int owner_is_durable(struct owner *o, struct wire_slice key);
/* 1 if key routes to this owner; otherwise appends MOVED for request id to
 * l->out (and counts it) and returns 0. */
int owner_ours(struct owner *o, struct olink *l, uint64_t id, struct wire_slice key);
/* owner_ours for a placement hash. */
int owner_ours_place(struct owner *o, struct olink *l, uint64_t id, uint64_t place);
/* The leaf that holds placement hash `place` as this owner sees it: in a
 * cluster its own leaf if it serves one there, else the router's. */
void owner_leaf_of(struct owner *o, uint64_t place, uint32_t *prefix, uint8_t *bits);
/* One request as the gates see it: what its command's declaration says
 * (proto/cmd.h flags: CMD_F_WRITE or CMD_F_ALLKEYS make it a write) and its
 * keys, whether it came as a typed message or as a CALL's or EXEC's words. */
typedef int (*owner_key_fn)(void *arg, struct wire_slice key);
struct owner_req {
    uint64_t id;
    struct wire_rid rid;
    uint32_t flags;                  /* proto/cmd.h CMD_F_* of its command */
    const struct wire_slice *keys;   /* its keys (nkeys), or NULL: walk them with each */
    uint32_t nkeys;
    int (*each)(const void *src, owner_key_fn fn, void *arg); /* calls fn on every key until
                                                               * it returns nonzero: that */
    const void *src;
    const uint64_t *place;           /* one key's placement hash when the caller has it
                                        (SET's push queue takes it too): taken as is */
    int resident;                    /* 1: every key resident before anything runs (several
                                        keys: a parked request replays whole); 0: the ledger
                                        call parks the one key itself */
    const char *payload;             /* the request's bytes, to park it */
    size_t plen;
};
/* The gates every request passes before its handler, in one order
 * (owner_rifl.h's rule: the exactly-once gate BEFORE ownership, so a MOVED
 * means "no record here, none forgotten"):
 *   admit: a write's exactly-once gate (owner_write_gate), then every key
 *          ours (else MOVED), then a write's room in the persist backlog;
 *   ready: (resident) every key resident, else parked on the first that is
 *          not; then no key holds a durable write not yet committed, else
 *          parked until that commit.
 * Each returns 1 (go on) or 0 (answered or parked).  Between them a caller
 * does what must follow admission and precede the ledger (CALL's read ack,
 * due expiries). */
int owner_gate_admit(struct owner *o, struct olink *l, const struct owner_req *r);
int owner_gate_ready(struct owner *o, struct olink *l, const struct owner_req *r);
/* Runs before every write, before its keys' ownership is looked at: 1 =
 * apply it (if the keys are ours); 0 = answered (a retry, from its
 * completion record; or "outcome unknown" when the request cannot be proved
 * new: owner_rifl.h's rule).  heir: every key is in a leaf this owner was
 * promoted to from the process the retry's first attempt went to
 * (ofollow_inherits), which proves it new when no record is here. */
enum owner_heir {
    OWNER_HEIR_NO = 0,
    OWNER_HEIR_YES,   /* promoted from the process the first attempt reached */
    OWNER_HEIR_SOON,  /* a follower of the keys' leaf: its map may not show the promotion
                       * yet, the edge's already does (answered HKV_ERESEND, not applied) */
};
int owner_write_gate(struct owner *o, struct olink *l, uint64_t id, struct wire_rid rid,
                     enum owner_heir heir);
/* Sends a recorded result: at once, or once its commit ticket is done. */
void owner_answer(struct owner *o, struct olink *l, uint64_t id, const struct rifl_result *r);
/* A write is finished: makes a ticket for the durable keys it changed
 * (dkeys[0..ndkeys), committed at dversion or newer; none when ndkeys is
 * 0), records the result (owner_rifl.h) and sends it or holds it until that
 * commit.  r->ticket is set here. */
void owner_finish(struct owner *o, struct olink *l, uint64_t id, struct wire_rid rid,
                  struct rifl_result *r, const struct wire_slice *dkeys, size_t ndkeys,
                  hkv_stamp dversion);
/* owner_finish for a FLUSHALL: the result waits for the commit of the flush
 * at `floor` (owner_ticket_flush) instead of keys. */
void owner_finish_flush(struct owner *o, struct olink *l, uint64_t id, struct wire_rid rid,
                        struct rifl_result *r, hkv_stamp floor);
/* 1 (BUSY appended, counted) if the persist backlog refuses writes now. */
int owner_backlog_refused(struct owner *o, struct olink *l, uint64_t id);
/* Pushes a write that applied to the colos now, unless the key is durable:
 * a durable write is seen by nobody before its commit (reads of the key wait
 * for it, owner_park_commit), so its push goes out when its ticket is done.
 * Returns 1 if the key is durable (what owner_is_durable says), for the
 * caller's owner_finish. */
int owner_push_applied(struct owner *o, struct wire_slice key, hkv_stamp version);
/* The same when the caller knows the key's durability (the class tag it
 * just wrote): no ledger lookup. */
void owner_push_written(struct owner *o, struct wire_slice key, uint64_t place, hkv_stamp version,
                        int durable);
/* A write applied to key (owner_push_applied calls it; so does every other
 * path that applies one): a leaf move sends its result to the target. */
void owner_applied(struct owner *o, struct wire_slice key);
/* 1 if key holds a durable write not yet committed: every request on it
 * waits (owner_park_commit) until that commit, reads and writes alike, since
 * a write's answer (EXPIRE 0, SET NX refused, INCR's result ...) would
 * otherwise tell its client about a state a crash can still take back. */
int owner_durable_pending(struct owner *o, struct wire_slice key);

/* ---- owner_call.c: Redis commands (CALL) and transactions (EXEC) ---- */
/* Runs a CALL or an EXEC request (m->type WIRE_CALL / WIRE_EXEC) as
 * owner_execute does any request: answers RESP, MOVED or ERROR into l->out,
 * or parks it, or holds its reply for a commit. */
void owner_op_call(struct owner *o, struct olink *l, const struct wire_msg *m,
                   const char *payload, size_t plen);
void owner_op_exec(struct owner *o, struct olink *l, const struct wire_msg *m,
                   const char *payload, size_t plen);

/* ---- owner_ops.c: the request executor ---- */
/* Runs one decoded request (an owner_request_fn): appends its reply to
 * l->out, or parks it, or holds its reply in a commit ticket. */
void owner_execute(struct owner *o, struct olink *l, const struct wire_msg *m, const char *payload,
                   size_t plen);

/* ---- owner.c: assembly ---- */
/* Fills *o for ctx and octx (ctx->cfg is read, not taken): event base, router,
 * completion records, incarnation, and the link hooks (owner_execute,
 * owner_forget_link).  0, or -1 (owner_deinit frees what was made). */
int owner_init(struct owner *o, struct worker_ctx *ctx, const struct owner_ctx *octx);
/* Recovers the ledger and starts persistence (owner_persist_setup, with
 * owner_execute as the replay callback).  0 or -1 (logged). */
int owner_open(struct owner *o);
/* Closes every link and frees what owner_init and owner_open made (and
 * o->worker, if set).  Safe after a failed init or open. */
void owner_deinit(struct owner *o);

#endif
