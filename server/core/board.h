/*
 * board.h - the scoreboard: one small shared mapping, made by the master before
 * it forks, in which every process publishes its liveness and counters and the
 * master publishes the config generation.  Any edge can then answer INFO for
 * the whole daemon without asking anyone.
 *
 * Layout: a header (magic, layout version, slot count) followed by one slot
 * per child process.  Only offsets and plain integers live here, never
 * pointers; every field is read and written with relaxed atomics, because
 * readers only need each number to be whole, not a consistent snapshot.
 * A slot is written by its one process (and reset by the master when that
 * process is replaced), so there are no locks.
 *
 * Clients.  After the slots, every slot has a table of client rows (the
 * "clients board"): an edge publishes one row per client connection, so
 * any edge can answer CLIENT LIST for the whole host, and asks another
 * edge to close one of its clients (CLIENT KILL) by writing the client's
 * id into the row's kill_id.  A row has one writer, the edge that owns the
 * client, which brackets every change with `seq` (odd while it writes);
 * a reader copies the row and keeps the copy only if `seq` was even and
 * unchanged around it.  A table is trusted only while its owner_pid is the
 * slot's live pid: an edge that died leaves rows nobody lists, and its
 * successor clears them (up to used) before it sets owner_pid.  Client ids
 * come from one counter in the header, so they are unique on the host and
 * grow with time, as Redis's.
 *
 * Monitor rings.  While a MONITOR client is open anywhere on the host
 * (`monitors` > 0), each edge appends a line per command to its slot's ring
 * (records [u32 length][bytes], `head` counting every byte ever written,
 * published with release), and the edges with MONITOR clients read every
 * ring from where they left it.  One writer per ring; a reader that falls
 * more than the ring's size behind has lost lines, and knows it.
 */
#ifndef HKV_BOARD_H
#define HKV_BOARD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"
#include "server/core/counters.h"

#define BOARD_MAGIC 0x686b76626f617264ULL /* "hkvboard" */
#define BOARD_VERSION 4

#define BOARD_CLIENTS_MIN 64      /* rows per slot at least (board_create) */
#define BOARD_CLIENTS_MAX 65536   /* and at most */
#define BOARD_CLIENT_NAME 256     /* bytes of a client's name another edge sees */

enum board_role { BOARD_EMPTY = 0, BOARD_EDGE = 1, BOARD_OWNER = 2, BOARD_AGENT = 3 };

/* INFO commandstats: an edge's counts per command stat id (the edge's own
 * numbering, the same in every edge: server/edge/edge_subcmd.h). */
#define BOARD_CMDSTATS 192
struct board_cmdstat {
    _Atomic uint64_t calls, nsec, rejected, failed; /* nsec: their time, ns */
};

/* INFO latencystats: an edge's command durations per command stat id, a
 * log-linear histogram in ns: bucket 0 holds everything under 128 ns, then
 * 8 buckets per power of two (each 1/8 of its octave wide, so a percentile
 * is known within 12.5%), the last one everything from ~2^37 ns (137 s) on. */
#define BOARD_LAT_BUCKETS 241
struct board_latency {
    _Atomic uint64_t n[BOARD_LAT_BUCKETS];
};

/* INFO errorstats: an edge's error replies by prefix ("ERR", "WRONGTYPE").
 * An entry's prefix is written once, before errstats_n counts it. */
#define BOARD_ERRSTATS 32
#define BOARD_ERRPREFIX 24
struct board_errstat {
    char prefix[BOARD_ERRPREFIX];  /* NUL-terminated */
    _Atomic uint64_t count;
};

/* /metrics: an edge's command durations by kind and by the class of the
 * command's first key (hotkvd_command_duration_seconds), in the buckets of
 * board_latency.  Row 0 is the commands without a key (name ""); a class
 * gets the next free row the first time one of its commands is counted, its
 * name written before classlat_n counts the row, and keeps it (rows are
 * named, not numbered by the config, so a reload that reorders the classes
 * moves nothing).  Classes past the last row are not counted here. */
#define BOARD_CLASSLAT 32
#define BOARD_CLASS_NAME 64        /* CFG_NAME_MAX */
enum board_kind { BOARD_KIND_READ = 0, BOARD_KIND_WRITE = 1, BOARD_KIND_ADMIN = 2, BOARD_KINDS = 3 };
struct board_classlat {
    char name[BOARD_CLASS_NAME];   /* NUL-terminated */
    _Atomic uint64_t nsec[BOARD_KINDS];
    struct board_latency lat[BOARD_KINDS];
};

struct board_slot {
    _Atomic int32_t pid;
    _Atomic uint32_t role;         /* enum board_role */
    _Atomic uint32_t ready;        /* serving */
    _Atomic uint32_t restarts;
    _Atomic int64_t started_ms;    /* CLOCK_MONOTONIC ms */
    _Atomic int64_t heartbeat_ms;  /* CLOCK_MONOTONIC ms, bumped by the process's loop */
    _Atomic uint64_t config_generation; /* the generation this process runs */
    _Atomic uint64_t heap_bytes;   /* anonymous resident bytes, each heartbeat */
    _Atomic uint32_t colo;         /* an edge: its colo's index + 1 */
    _Atomic uint64_t colo_bytes;   /* an edge: bytes its colo's cache holds */
    _Atomic uint64_t remote_links_up; /* an edge in a cluster: its links up to other
                                       * hosts' owners (each STATS poll, 1 s) */
    /* an edge's own counters (counters.h): INFO sums them over every edge */
#define X(name, kind, help) _Atomic uint64_t name;
    CTR_EDGE(X)
#undef X
    struct board_cmdstat cmdstats[BOARD_CMDSTATS];
    _Atomic uint32_t errstats_n;
    struct board_errstat errstats[BOARD_ERRSTATS];
    /* last: most of the slot, and only its used commands' pages are touched */
    struct board_latency latency[BOARD_CMDSTATS];
    _Atomic uint32_t classlat_n;   /* rows [0, classlat_n) are named (row 0: always usable) */
    struct board_classlat classlat[BOARD_CLASSLAT];
};

/* One client connection of an edge, as every other edge sees it.  Only its
 * edge writes it (under seq), except kill_id, which any edge may set. */
struct board_client {
    _Atomic uint32_t seq;         /* odd while the owning edge writes the row */
    uint32_t resp;                /* 2 or 3 */
    _Atomic uint64_t id;          /* 0: the row is free */
    _Atomic uint64_t kill_id;     /* set by any edge: close the client with this id */
    int64_t created_ms, last_ms;  /* CLOCK_MONOTONIC (the same clock in every process) */
    int32_t fd;
    uint16_t cmd;                 /* its last command's stat id; 0xffff: none */
    char events[2];               /* "r", "w", "rw" or "" (not NUL-terminated at 2) */
    uint64_t qbuf, qbuf_free, rbs, rbp, obl, oll, omem, tot_mem;
    uint32_t flags;               /* BOARD_CLIENT_F_* */
    uint32_t sub, psub;           /* its channels and patterns (pub/sub) */
    uint32_t name_len;            /* the whole name's length (name[] holds the first part) */
    char addr[48], laddr[48];
    char user[64];
    char name[BOARD_CLIENT_NAME];
};

#define BOARD_CLIENT_F_MONITOR 0x1  /* flags=O */
#define BOARD_CLIENT_F_PUBSUB 0x2   /* flags=P: in subscribed mode */

#define BOARD_RING (256u * 1024) /* bytes of one slot's monitor ring */

struct board_ring {
    _Atomic uint64_t head;        /* bytes ever written; data[head % BOARD_RING] is next */
    char data[BOARD_RING];
};

/* The header of one slot's client table. */
struct board_clients {
    _Atomic int32_t owner_pid;    /* the edge that publishes here; 0 = none */
    _Atomic uint32_t used;        /* rows [0, used) may be in use */
    _Atomic uint32_t kills;       /* kill requests since the owner last looked */
    uint32_t pad;
};

struct board {
    uint64_t magic;
    uint32_t version;
    uint32_t nslots;
    uint32_t clients_cap;         /* rows per slot */
    uint32_t pad;
    uint64_t clients_off;         /* from the board's start: nslots tables */
    _Atomic uint64_t next_client_id; /* the host's last client id */
    uint64_t rings_off;           /* from the board's start: nslots monitor rings */
    _Atomic uint32_t monitors;    /* MONITOR clients open on the host */
    uint32_t pad2;
    _Atomic int32_t master_pid;
    _Atomic uint64_t config_generation;
    _Atomic uint64_t config_reload_failures;
    _Atomic int64_t start_unix_ms;
    _Atomic uint64_t used_memory_peak; /* INFO memory: the most any INFO has seen */
    _Atomic uint64_t client_pause; /* CLIENT PAUSE: end << 1 | all, 0 = none (edge_pause.c) */
    uint64_t acllog_off;          /* from the board's start: the host's ACL LOG (acllog.h) */
    struct board_slot slots[];
};

/* Maps a new anonymous shared board with `nslots` slots and `clients` client
 * rows per slot (clamped to BOARD_CLIENTS_MIN..MAX; memfd + MAP_SHARED: it is
 * inherited across fork and survives no exec; untouched rows cost no
 * memory).  board_create: the minimum of rows.  NULL on failure. */
struct board *board_create_clients(uint32_t nslots, uint32_t clients);
struct board *board_create(uint32_t nslots);
void board_destroy(struct board **b);
/* Validates a board's header before use; HKV_OK or HKV_ECORRUPT. */
hkv_status board_check(const struct board *b);
/* Zeroes the slot's CTR_COUNTER fields, command stats and error stats
 * (CONFIG RESETSTAT); gauges stay. */
void board_reset_counters(struct board_slot *s);

/* Slot `slot`'s client table header and its row i (i < clients_cap). */
struct board_clients *board_clients(struct board *b, uint32_t slot);
struct board_client *board_client_row(struct board *b, uint32_t slot, uint32_t i);
/* A new client id, unique on the host (1, 2, ...). */
uint64_t board_client_id(struct board *b);
/* Slot `slot`'s monitor ring. */
struct board_ring *board_ring(struct board *b, uint32_t slot);
/* The host's ACL LOG. */
struct acllog;
struct acllog *board_acllog(struct board *b);

static inline uint64_t board_load(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}
static inline void board_add(_Atomic uint64_t *v, int64_t d)
{
    atomic_fetch_add_explicit(v, (uint64_t)d, memory_order_relaxed);
}
/* The latency bucket of a duration of ns nanoseconds, and the largest
 * duration bucket b holds (board_latency). */
static inline unsigned board_lat_bucket(uint64_t ns)
{
    if (ns < 128)
        return 0;
    unsigned e = 63u - (unsigned)__builtin_clzll(ns); /* 7 and up */
    unsigned b = 1 + (e - 7) * 8 + (unsigned)((ns >> (e - 3)) & 7);
    return b < BOARD_LAT_BUCKETS ? b : BOARD_LAT_BUCKETS - 1;
}
static inline uint64_t board_lat_upper(unsigned b)
{
    if (b == 0)
        return 127;
    unsigned e = 7 + (b - 1) / 8, sub = (b - 1) % 8;
    return ((8ull + sub + 1) << (e - 3)) - 1;
}
/* board_add for a field only the calling process writes (its own slot's
 * command and error stats): a plain load and store, no locked instruction
 * on the command path. */
static inline void board_bump(_Atomic uint64_t *v, uint64_t d)
{
    atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + d,
                          memory_order_relaxed);
}


#endif
