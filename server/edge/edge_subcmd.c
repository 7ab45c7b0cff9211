/*
 * edge_subcmd.c - the container commands' subcommands (edge_subcmd.h), with
 * the arities redis-server 7.0 declares for them.
 */
#include "server/edge/edge_subcmd.h"

#include <strings.h>

const struct edge_subcmd edge_subcmds[] = {
    {CMD_ACL, "cat", "acl|cat", -2, 1, 0},
    {CMD_ACL, "deluser", "acl|deluser", -3, 0, 1},
    {CMD_ACL, "dryrun", "acl|dryrun", -4, 1, 1},
    {CMD_ACL, "genpass", "acl|genpass", -2, 1, 0},
    {CMD_ACL, "getuser", "acl|getuser", 3, 1, 1},
    {CMD_ACL, "help", "acl|help", 2, 1, 0},
    {CMD_ACL, "list", "acl|list", 2, 1, 1},
    {CMD_ACL, "load", "acl|load", 2, 0, 1},
    {CMD_ACL, "log", "acl|log", -2, 1, 1},
    {CMD_ACL, "save", "acl|save", 2, 0, 1},
    {CMD_ACL, "setuser", "acl|setuser", -3, 0, 1},
    {CMD_ACL, "users", "acl|users", 2, 1, 1},
    {CMD_ACL, "whoami", "acl|whoami", 2, 1, 0},
    {CMD_CLIENT, "caching", "client|caching", 3, 1, 0},
    {CMD_CLIENT, "getname", "client|getname", 2, 1, 0},
    {CMD_CLIENT, "getredir", "client|getredir", 2, 1, 0},
    {CMD_CLIENT, "help", "client|help", 2, 1, 0},
    {CMD_CLIENT, "id", "client|id", 2, 1, 0},
    {CMD_CLIENT, "info", "client|info", 2, 1, 0},
    {CMD_CLIENT, "kill", "client|kill", -3, 1, 1},
    {CMD_CLIENT, "list", "client|list", -2, 1, 1},
    {CMD_CLIENT, "no-evict", "client|no-evict", 3, 1, 1},
    {CMD_CLIENT, "pause", "client|pause", -3, 1, 1},
    {CMD_CLIENT, "reply", "client|reply", 3, 1, 0},
    {CMD_CLIENT, "setname", "client|setname", 3, 1, 0},
    {CMD_CLIENT, "tracking", "client|tracking", -3, 1, 0},
    {CMD_CLIENT, "trackinginfo", "client|trackinginfo", 2, 1, 0},
    {CMD_CLIENT, "unblock", "client|unblock", -3, 1, 1},
    {CMD_CLIENT, "unpause", "client|unpause", 2, 1, 1},
    {CMD_CLIENT, "setinfo", "client|setinfo", 4, 1, 0},     /* Redis 7.2's; clients send it */
    {CMD_CLIENT, "meta", "client|meta", 3, 1, 0},           /* hotkvd's own */
    {CMD_CONFIG, "get", "config|get", -3, 1, 1},
    {CMD_CONFIG, "set", "config|set", -4, 1, 1},
    {CMD_CONFIG, "resetstat", "config|resetstat", 2, 1, 1},
    {CMD_CONFIG, "rewrite", "config|rewrite", 2, 0, 1},
    {CMD_CONFIG, "help", "config|help", 2, 1, 0},
    {CMD_COMMAND, "count", "command|count", 2, 1, 0},
    {CMD_COMMAND, "docs", "command|docs", -2, 1, 0},
    {CMD_COMMAND, "getkeys", "command|getkeys", -4, 1, 0},
    {CMD_COMMAND, "getkeysandflags", "command|getkeysandflags", -4, 0, 0},
    {CMD_COMMAND, "help", "command|help", 2, 1, 0},
    {CMD_COMMAND, "info", "command|info", -2, 1, 0},
    {CMD_COMMAND, "list", "command|list", -2, 1, 0},
    {CMD_PUBSUB, "channels", "pubsub|channels", -2, 1, 0},
    {CMD_PUBSUB, "numpat", "pubsub|numpat", 2, 1, 0},
    {CMD_PUBSUB, "numsub", "pubsub|numsub", -2, 1, 0},
    {CMD_PUBSUB, "help", "pubsub|help", 2, 1, 0},
};

const size_t edge_nsubcmds = sizeof(edge_subcmds) / sizeof(edge_subcmds[0]);

_Static_assert(sizeof(edge_subcmds) / sizeof(edge_subcmds[0]) <= EDGE_STAT_IDS - CMD_COUNT,
               "EDGE_STAT_IDS has no room for every subcommand");

int subcmd_is_container(enum cmd_id id)
{
    return id == CMD_CLIENT || id == CMD_CONFIG || id == CMD_COMMAND || id == CMD_PUBSUB ||
           id == CMD_ACL;
}

const struct edge_subcmd *subcmd_lookup(enum cmd_id parent, const struct resp_slice *word)
{
    for (size_t i = 0; i < edge_nsubcmds; i++) {
        const struct edge_subcmd *s = &edge_subcmds[i];
        size_t n = 0;
        while (s->name[n])
            n++;
        if (s->parent == parent && word->len == n && strncasecmp(word->p, s->name, n) == 0)
            return s;
    }
    return NULL;
}

const char *subcmd_stat_name(unsigned id)
{
    if (id < (unsigned)CMD_COUNT)
        return cmd_get((enum cmd_id)id)->name;
    id -= (unsigned)CMD_COUNT;
    return id < edge_nsubcmds ? edge_subcmds[id].fullname : NULL;
}
