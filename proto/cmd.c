/*
 * cmd.c - command lookup.  A small open-addressing table over lower-cased
 * names, built once from CMD_LIST; a lookup hashes the name case-folded on
 * the fly, so the hot path neither allocates nor copies.
 */
#include "cmd.h"

#include <string.h>

static const struct cmd_def cmd_table[CMD_COUNT] = {
#define X(id, name, arity, flags, fk, lk, st) {CMD_##id, name, arity, flags, fk, lk, st},
    CMD_LIST(X)
#undef X
};

#define CMD_SLOTS 512 /* power of two, several times CMD_COUNT */
static int cmd_slots[CMD_SLOTS]; /* index + 1, 0 = empty */
static int cmd_built;

static inline unsigned char fold(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c + 32) : c;
}

static uint32_t hash_name(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ fold((unsigned char)s[i])) * 16777619u;
    return h;
}

static void build(void)
{
    _Static_assert(CMD_COUNT * 4 <= CMD_SLOTS, "grow CMD_SLOTS");
    for (int i = 0; i < CMD_COUNT; i++) {
        uint32_t h = hash_name(cmd_table[i].name, strlen(cmd_table[i].name)) & (CMD_SLOTS - 1);
        while (cmd_slots[h] != 0)
            h = (h + 1) & (CMD_SLOTS - 1);
        cmd_slots[h] = i + 1;
    }
    cmd_built = 1;
}

const struct cmd_def *cmd_lookup(const char *name, size_t len)
{
    if (!cmd_built)
        build();
    if (len == 0 || len > 32)
        return NULL;
    uint32_t h = hash_name(name, len) & (CMD_SLOTS - 1);
    while (cmd_slots[h] != 0) {
        const struct cmd_def *c = &cmd_table[cmd_slots[h] - 1];
        if (strlen(c->name) == len) {
            size_t i = 0;
            while (i < len && fold((unsigned char)name[i]) == (unsigned char)c->name[i])
                i++;
            if (i == len)
                return c;
        }
        h = (h + 1) & (CMD_SLOTS - 1);
    }
    return NULL;
}

const struct cmd_def *cmd_get(enum cmd_id id)
{
    return &cmd_table[id];
}
