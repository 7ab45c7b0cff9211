/*
 * edge_http_info.c - INFO # HTTP: the front door's numbers for the whole
 * host, summed from every edge's scoreboard slot (the counters are also in
 * # Stats and /metrics, from the declared list in server/core/counters.h;
 * the gauges of held readers are only here and in /metrics).  Kept apart
 * from edge_http.c so that INFO depends on nothing of the front door but
 * the scoreboard and the config.
 */
#include "server/edge/edge_http.h"

#include <stddef.h>

#include "server/edge/edge_int.h"

static uint64_t sum(struct edge *e, size_t off)
{
    struct board *bd = e->ctx->board;
    uint64_t n = 0;
    for (uint32_t i = 0; i < bd->nslots; i++)
        if (atomic_load_explicit(&bd->slots[i].role, memory_order_relaxed) == BOARD_EDGE)
            n += board_load((_Atomic uint64_t *)((char *)&bd->slots[i] + off));
    return n;
}

void edge_http_info(struct hkv_buf *b, struct edge *e)
{
    const struct cfg *cfg = edge_config(e);
    buf_printf(b, "# HTTP\r\nhttp_port:%d\r\nhttps_port:%d\r\n", cfg->http_port, cfg->https_port);
#define X(name, kind, help)                                                                      \
    if (sizeof(#name) > 5 && __builtin_memcmp(#name, "http_", 5) == 0)                           \
        buf_printf(b, #name ":%llu\r\n",                                                          \
                   (unsigned long long)sum(e, offsetof(struct board_slot, name)));
    CTR_EDGE(X)
#undef X
    buf_printf(b, "http_max_polls:%lld\r\n\r\n", (long long)cfg->http_max_polls);
}
