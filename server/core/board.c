/* board.c - the shared scoreboard; see board.h. */
#include "board.h"

#include "server/core/acllog.h"
#include "server/core/shm.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t table_size(uint32_t cap)
{
    return sizeof(struct board_clients) + (size_t)cap * sizeof(struct board_client);
}

static size_t slots_end(uint32_t nslots)
{
    size_t n = sizeof(struct board) + (size_t)nslots * sizeof(struct board_slot);
    return (n + 63) & ~(size_t)63;
}

static size_t rings_start(uint32_t nslots, uint32_t cap)
{
    size_t n = slots_end(nslots) + (size_t)nslots * table_size(cap);
    return (n + 63) & ~(size_t)63;
}

static size_t acllog_start(uint32_t nslots, uint32_t cap)
{
    size_t n = rings_start(nslots, cap) + (size_t)nslots * sizeof(struct board_ring);
    return (n + 63) & ~(size_t)63;
}

static size_t board_size(uint32_t nslots, uint32_t cap)
{
    return acllog_start(nslots, cap) + sizeof(struct acllog);
}

struct board *board_create_clients(uint32_t nslots, uint32_t clients)
{
    uint32_t cap = clients < BOARD_CLIENTS_MIN ? BOARD_CLIENTS_MIN
                   : clients > BOARD_CLIENTS_MAX ? BOARD_CLIENTS_MAX : clients;
    size_t size = board_size(nslots, cap);
    struct board *b = shm_map("hotkvd-board", size);
    if (b == NULL)
        return NULL;
    b->magic = BOARD_MAGIC;
    b->version = BOARD_VERSION;
    b->nslots = nslots;
    b->clients_cap = cap;
    b->clients_off = slots_end(nslots);
    b->rings_off = rings_start(nslots, cap);
    b->acllog_off = acllog_start(nslots, cap);
    return b;
}

struct board *board_create(uint32_t nslots)
{
    return board_create_clients(nslots, BOARD_CLIENTS_MIN);
}

void board_destroy(struct board **bp)
{
    if (bp == NULL || *bp == NULL)
        return;
    shm_unmap(*bp, board_size((*bp)->nslots, (*bp)->clients_cap));
    *bp = NULL;
}

void board_reset_counters(struct board_slot *s)
{
#define X(name, kind, help)                                                   \
    if (kind == CTR_COUNTER)                                                  \
        atomic_store_explicit(&s->name, 0, memory_order_relaxed);
    CTR_EDGE(X)
#undef X
    for (size_t i = 0; i < BOARD_CMDSTATS; i++) {
        /* a histogram has samples only where calls were counted: the others
         * are not touched (their pages may never have been) */
        if (atomic_load_explicit(&s->cmdstats[i].calls, memory_order_relaxed) != 0)
            for (size_t k = 0; k < BOARD_LAT_BUCKETS; k++)
                atomic_store_explicit(&s->latency[i].n[k], 0, memory_order_relaxed);
        atomic_store_explicit(&s->cmdstats[i].calls, 0, memory_order_relaxed);
        atomic_store_explicit(&s->cmdstats[i].nsec, 0, memory_order_relaxed);
        atomic_store_explicit(&s->cmdstats[i].rejected, 0, memory_order_relaxed);
        atomic_store_explicit(&s->cmdstats[i].failed, 0, memory_order_relaxed);
    }
    /* the prefixes stay (an entry is never moved); a count of 0 is not shown */
    for (size_t i = 0; i < BOARD_ERRSTATS; i++)
        atomic_store_explicit(&s->errstats[i].count, 0, memory_order_relaxed);
    /* the class rows keep their names, as the prefixes do */
    uint32_t nc = atomic_load_explicit(&s->classlat_n, memory_order_relaxed);
    for (uint32_t i = 0; i < BOARD_CLASSLAT && (i == 0 || i < nc); i++)
        for (size_t k = 0; k < BOARD_KINDS; k++) {
            struct board_classlat *r = &s->classlat[i];
            if (atomic_load_explicit(&r->nsec[k], memory_order_relaxed) == 0 &&
                atomic_load_explicit(&r->lat[k].n[0], memory_order_relaxed) == 0)
                continue; /* never counted: its pages stay untouched */
            atomic_store_explicit(&r->nsec[k], 0, memory_order_relaxed);
            for (size_t j = 0; j < BOARD_LAT_BUCKETS; j++)
                atomic_store_explicit(&r->lat[k].n[j], 0, memory_order_relaxed);
        }
}

hkv_status board_check(const struct board *b)
{
    if (b == NULL || b->magic != BOARD_MAGIC || b->version != BOARD_VERSION || b->nslots > 65536 ||
        b->clients_cap < BOARD_CLIENTS_MIN || b->clients_cap > BOARD_CLIENTS_MAX ||
        b->clients_off != slots_end(b->nslots) ||
        b->rings_off != rings_start(b->nslots, b->clients_cap) ||
        b->acllog_off != acllog_start(b->nslots, b->clients_cap))
        return HKV_ECORRUPT;
    return HKV_OK;
}

struct board_clients *board_clients(struct board *b, uint32_t slot)
{
    return (struct board_clients *)((char *)b + b->clients_off +
                                    (size_t)slot * table_size(b->clients_cap));
}

struct board_client *board_client_row(struct board *b, uint32_t slot, uint32_t i)
{
    return (struct board_client *)((char *)board_clients(b, slot) +
                                   sizeof(struct board_clients)) + i;
}

struct board_ring *board_ring(struct board *b, uint32_t slot)
{
    return (struct board_ring *)((char *)b + b->rings_off) + slot;
}

struct acllog *board_acllog(struct board *b)
{
    return (struct acllog *)((char *)b + b->acllog_off);
}

uint64_t board_client_id(struct board *b)
{
    return atomic_fetch_add_explicit(&b->next_client_id, 1, memory_order_relaxed) + 1;
}

