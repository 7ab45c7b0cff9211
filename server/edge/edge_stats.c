/*
 * edge_stats.c - commandstats and errorstats into this edge's scoreboard
 * slot (edge_stats.h).
 */
#include "server/edge/edge_stats.h"

#include <string.h>

#include "server/edge/edge_subcmd.h"

_Static_assert(EDGE_STAT_IDS <= BOARD_CMDSTATS, "the scoreboard has no room for every command");

/* Redis's afterErrorReply: the prefix is what precedes the first space
 * within the first 32 bytes of "-PREFIX text"; otherwise "ERR". */
static void count_error(struct edge *e, const char *text, size_t len)
{
    struct board_slot *s = e->stats;
    board_bump(&s->total_error_replies, 1);
    const char *p = "ERR";
    size_t n = 3;
    const char *sp = len > 1 ? memchr(text, ' ', len < 32 ? len : 32) : NULL;
    if (sp != NULL && sp - text > 1 && (size_t)(sp - text - 1) < BOARD_ERRPREFIX) {
        p = text + 1;
        n = (size_t)(sp - text - 1);
    }
    uint32_t have = atomic_load_explicit(&s->errstats_n, memory_order_relaxed);
    for (uint32_t i = 0; i < have; i++)
        if (strncmp(s->errstats[i].prefix, p, n) == 0 && s->errstats[i].prefix[n] == '\0') {
            board_bump(&s->errstats[i].count, 1);
            return;
        }
    if (have >= BOARD_ERRSTATS)
        return; /* as Redis past its limit: a new prefix is not tracked */
    memcpy(s->errstats[have].prefix, p, n);
    s->errstats[have].prefix[n] = '\0';
    atomic_store_explicit(&s->errstats[have].count, 1, memory_order_relaxed);
    atomic_store_explicit(&s->errstats_n, have + 1, memory_order_release);
}

void stats_call(struct edge *e, unsigned stat, int64_t nsec, const char *reply, size_t len)
{
    if (stat >= BOARD_CMDSTATS)
        return;
    struct board_cmdstat *c = &e->stats->cmdstats[stat];
    uint64_t ns = nsec > 0 ? (uint64_t)nsec : 0;
    board_bump(&c->calls, 1);
    board_bump(&c->nsec, ns);
    board_bump(&e->stats->latency[stat].n[board_lat_bucket(ns)], 1);
    if (len > 0 && reply[0] == '-') {
        board_bump(&c->failed, 1);
        count_error(e, reply, len);
    }
}

void stats_rejected(struct edge *e, unsigned stat, const char *text, size_t len)
{
    if (stat < BOARD_CMDSTATS)
        board_bump(&e->stats->cmdstats[stat].rejected, 1);
    if (len > 0 && text[0] == '-')
        count_error(e, text, len);
}
