/* board.c - the shared scoreboard; see board.h. */
#include "board.h"

#include "server/core/shm.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t board_size(uint32_t nslots)
{
    return sizeof(struct board) + (size_t)nslots * sizeof(struct board_slot);
}

struct board *board_create(uint32_t nslots)
{
    size_t size = board_size(nslots);
    struct board *b = shm_map("hotkvd-board", size);
    if (b == NULL)
        return NULL;
    b->magic = BOARD_MAGIC;
    b->version = BOARD_VERSION;
    b->nslots = nslots;
    return b;
}

void board_destroy(struct board **bp)
{
    if (bp == NULL || *bp == NULL)
        return;
    shm_unmap(*bp, board_size((*bp)->nslots));
    *bp = NULL;
}

void board_reset_counters(struct board_slot *s)
{
#define X(name, kind, help)                                                   \
    if (kind == CTR_COUNTER)                                                  \
        atomic_store_explicit(&s->name, 0, memory_order_relaxed);
    CTR_EDGE(X)
#undef X
}

hkv_status board_check(const struct board *b)
{
    if (b == NULL || b->magic != BOARD_MAGIC || b->version != BOARD_VERSION || b->nslots > 65536)
        return HKV_ECORRUPT;
    return HKV_OK;
}

