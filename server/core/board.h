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
#include "server/core/counters.h"

#define BOARD_MAGIC 0x686b76626f617264ULL /* "hkvboard" */
#define BOARD_VERSION 1

enum board_role { BOARD_EMPTY = 0, BOARD_EDGE = 1, BOARD_OWNER = 2 };

struct board_slot {
    _Atomic int32_t pid;
    _Atomic uint32_t role;         /* enum board_role */
    _Atomic uint32_t ready;        /* serving */
    _Atomic uint32_t restarts;
    _Atomic int64_t started_ms;    /* CLOCK_MONOTONIC ms */
    _Atomic int64_t heartbeat_ms;  /* CLOCK_MONOTONIC ms, bumped by the process's loop */
    _Atomic uint64_t config_generation; /* the generation this process runs */
    /* an edge's own counters (counters.h): INFO sums them over every edge */
#define X(name, kind, help) _Atomic uint64_t name;
    CTR_EDGE(X)
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
/* Zeroes the slot's CTR_COUNTER fields (CONFIG RESETSTAT); gauges stay. */
void board_reset_counters(struct board_slot *s);

static inline uint64_t board_load(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}
static inline void board_add(_Atomic uint64_t *v, int64_t d)
{
    atomic_fetch_add_explicit(v, (uint64_t)d, memory_order_relaxed);
}


#endif
