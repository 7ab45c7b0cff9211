/* board.c - the shared scoreboard; see board.h. */
#include "board.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static size_t board_size(uint32_t nslots)
{
    return sizeof(struct board) + (size_t)nslots * sizeof(struct board_slot);
}

struct board *board_create(uint32_t nslots)
{
    size_t size = board_size(nslots);
    int fd = memfd_create("hotkvd-board", MFD_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return NULL;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd); /* the mapping keeps the memory alive */
    if (p == MAP_FAILED)
        return NULL;
    struct board *b = p;
    memset(b, 0, size);
    b->magic = BOARD_MAGIC;
    b->version = BOARD_VERSION;
    b->nslots = nslots;
    return b;
}

void board_destroy(struct board **bp)
{
    if (bp == NULL || *bp == NULL)
        return;
    munmap(*bp, board_size((*bp)->nslots));
    *bp = NULL;
}

hkv_status board_check(const struct board *b)
{
    if (b == NULL || b->magic != BOARD_MAGIC || b->version != BOARD_VERSION || b->nslots > 65536)
        return HKV_ECORRUPT;
    return HKV_OK;
}

int64_t board_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
