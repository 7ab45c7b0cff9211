/*
 * edge_command.h - the entries COMMAND answers with: Redis 7.0's own for
 * the commands Redis has (edge_cmdinfo.h, byte for byte, turned into RESP2
 * for a RESP2 client), hotkvd's for its own commands (HOTKEYS, GETMETA).
 * What is served is the registry's business (edge_registry.c runs COMMAND
 * and asks here for the entries).
 */
#ifndef HKV_EDGE_COMMAND_H
#define HKV_EDGE_COMMAND_H

#include "proto/buf.h"
#include "proto/cmd.h"
#include "proto/resp.h"

/* d's COMMAND INFO entry into out, for a client of protocol proto. */
void command_info_entry(struct hkv_buf *out, int proto, const struct cmd_def *d);
/* d's COMMAND DOCS map (without its name) into out. */
void command_docs_entry(struct hkv_buf *out, int proto, const struct cmd_def *d);
/* COMMAND GETKEYSANDFLAGS of argv (argc words, argv[0] d's name, arity
 * checked) by Redis's key specs (edge_keyspecs.c): 0 with the reply in
 * out; -1 the arguments do not fit the specs or name no key ("Invalid
 * arguments specified for command"); -2 d has no Redis entry here. */
int command_keys_and_flags(struct hkv_buf *out, int proto, const struct cmd_def *d, int argc,
                           const struct resp_slice *argv);
/* 1 if d is in ACL category cat ("read", "fast"; any case). */
int command_in_category(const struct cmd_def *d, const char *cat, size_t len);

#endif
