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
 */
#ifndef HKV_BOARD_H
#define HKV_BOARD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/hkv.h"

#define BOARD_MAGIC 0x686b76626f617264ULL /* "hkvboard" */
#define BOARD_VERSION 1

enum board_role { BOARD_EMPTY = 0, BOARD_EDGE = 1, BOARD_OWNER = 2 };

/* Edge counters, declared once: INFO sums them over every edge.
 * X(name, is_gauge) */
#define BOARD_EDGE_STATS(X)            \
    X(connected_clients, 1)            \
    X(total_connections_received, 0)   \
    X(rejected_connections, 0)         \
    X(total_commands_processed, 0)     \
    X(protocol_errors, 0)              \
    X(write_retries, 0)                \
    X(write_failures, 0)               \
    X(auth_failures, 0)                \
    X(tls_connections, 1)              \
    X(tls_handshake_failures, 0)

struct board_slot {
    _Atomic int32_t pid;
    _Atomic uint32_t role;         /* enum board_role */
    _Atomic uint32_t ready;        /* serving */
    _Atomic uint32_t restarts;
    _Atomic int64_t started_ms;    /* CLOCK_MONOTONIC ms */
    _Atomic int64_t heartbeat_ms;  /* CLOCK_MONOTONIC ms, bumped by the process's loop */
    _Atomic uint64_t config_generation; /* the generation this process runs */
#define X(name, g) _Atomic uint64_t name;
    BOARD_EDGE_STATS(X)
#undef X
};

struct board {
    uint64_t magic;
    uint32_t version;
    uint32_t nslots;
    _Atomic int32_t master_pid;
    _Atomic uint64_t config_generation;
    _Atomic uint64_t config_reload_failures;
    _Atomic int64_t start_unix_ms;
    struct board_slot slots[];
};

/* Maps a new anonymous shared board with `nslots` slots (memfd + MAP_SHARED:
 * it is inherited across fork and survives no exec).  NULL on failure. */
struct board *board_create(uint32_t nslots);
void board_destroy(struct board **b);
/* Validates a board's header before use; HKV_OK or HKV_ECORRUPT. */
hkv_status board_check(const struct board *b);

static inline uint64_t board_load(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}
static inline void board_add(_Atomic uint64_t *v, int64_t d)
{
    atomic_fetch_add_explicit(v, (uint64_t)d, memory_order_relaxed);
}


#endif
