/*
 * edge_cmdinfo.h - Redis 7.0's COMMAND INFO and COMMAND DOCS entries, as
 * redis-server sends them in RESP3, for the command groups hotkvd serves
 * (generated into edge_cmdinfo.c by scripts/gen_cmdinfo.py; see there what
 * is patched to say what hotkvd does).  Pure data.
 */
#ifndef HKV_EDGE_CMDINFO_H
#define HKV_EDGE_CMDINFO_H

#include <stddef.h>

struct cmdinfo {
    const char *name;             /* lower case; the table is sorted by it */
    size_t info_len, docs_len;
    const char *info;             /* one COMMAND INFO entry, RESP3 */
    const char *docs;             /* its COMMAND DOCS map (without the name), RESP3 */
};

extern const struct cmdinfo cmdinfo_table[];
extern const size_t cmdinfo_count;

#endif
