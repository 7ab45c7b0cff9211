/*
 * edge_stats.c - commandstats and errorstats into this edge's scoreboard
 * slot (edge_stats.h).
 */
#include "server/edge/edge_stats.h"

#include <stdio.h>
#include <string.h>

#include "config/cfg.h"
#include "server/core/router.h"
#include "server/edge/edge_owners.h"
#include "server/edge/edge_subcmd.h"

_Static_assert(EDGE_STAT_IDS <= BOARD_CMDSTATS, "the scoreboard has no room for every command");
_Static_assert(BOARD_CLASS_NAME >= CFG_NAME_MAX, "the scoreboard cannot hold a class name");

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

enum board_kind stats_kind(unsigned stat)
{
    if (stat >= CMD_COUNT)
        return BOARD_KIND_ADMIN;
    uint32_t f = cmd_get((enum cmd_id)stat)->flags;
    return (f & CMD_F_WRITE) ? BOARD_KIND_WRITE : (f & CMD_F_READ) ? BOARD_KIND_READ
                                                                   : BOARD_KIND_ADMIN;
}

/* The slot's row for the class of key (row 0 without a key, or for a
 * command that takes none), naming a new
 * row the first time a class is seen; NULL once the rows are all named. */
static struct board_classlat *class_row(struct edge *e, unsigned stat, const char *key,
                                        size_t klen)
{
    struct board_slot *s = e->stats;
    /* the class as the router routes it (the config it was handed) */
    if (key == NULL || e->owners == NULL || e->owners->router == NULL || stat >= CMD_COUNT ||
        cmd_get((enum cmd_id)stat)->first_key == 0)
        return &s->classlat[0];
    const struct cfg_class *k = router_class(e->owners->router, key, klen);
    if (k == NULL)
        return &s->classlat[0];
    uint32_t n = atomic_load_explicit(&s->classlat_n, memory_order_relaxed);
    for (uint32_t i = 1; i < n; i++)
        if (strcmp(s->classlat[i].name, k->name) == 0)
            return &s->classlat[i];
    if (n == 0)
        n = 1; /* row 0 is the keyless commands' */
    if (n >= BOARD_CLASSLAT)
        return NULL;
    snprintf(s->classlat[n].name, sizeof(s->classlat[n].name), "%s", k->name);
    atomic_store_explicit(&s->classlat_n, n + 1, memory_order_release);
    return &s->classlat[n];
}

void stats_call(struct edge *e, unsigned stat, int64_t nsec, const char *reply, size_t len)
{
    stats_call_key(e, stat, nsec, reply, len, NULL, 0);
}

void stats_call_key(struct edge *e, unsigned stat, int64_t nsec, const char *reply, size_t len,
                    const char *key, size_t klen)
{
    if (stat >= BOARD_CMDSTATS)
        return;
    struct board_cmdstat *c = &e->stats->cmdstats[stat];
    uint64_t ns = nsec > 0 ? (uint64_t)nsec : 0;
    board_bump(&c->calls, 1);
    board_bump(&c->nsec, ns);
    board_bump(&e->stats->latency[stat].n[board_lat_bucket(ns)], 1);
    struct board_classlat *row = class_row(e, stat, key, klen);
    if (row != NULL) {
        enum board_kind kind = stats_kind(stat);
        board_bump(&row->nsec[kind], ns);
        board_bump(&row->lat[kind].n[board_lat_bucket(ns)], 1);
    }
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
