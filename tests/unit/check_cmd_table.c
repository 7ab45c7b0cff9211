/*
 * check_cmd_table.c - the command is declared once (proto/cmd.h) and the
 * process tables indexed by its id stay complete: every id has an edge row
 * (server/edge/edge_registry.c), every command an owner must run from its
 * words (a write, which EXEC and the retry path send as words; a CALL-family
 * command) has an owner handler (server/owner/owner_cmds.c), and the owner
 * runs nothing that is not about keys.
 */
#include <check.h>
#include <string.h>

#include "proto/cmd.h"
#include "server/edge/edge_registry.h"
#include "server/owner/owner_cmd.h"

START_TEST(every_id_has_an_edge_row)
{
    for (int i = 0; i < CMD_COUNT; i++) {
        const struct cmd_def *d = cmd_get((enum cmd_id)i);
        ck_assert_int_eq(d->id, i);
        ck_assert_msg(edge_commands[i].handler != NULL, "%s has no edge handler", d->name);
    }
}
END_TEST

START_TEST(every_owner_write_has_an_owner_handler)
{
    int writes = 0;
    for (int i = 0; i < CMD_COUNT; i++) {
        const struct cmd_def *d = cmd_get((enum cmd_id)i);
        int owner_runs = ocmd_writes(d) || edge_commands[i].family == EDGE_FAM_CALL;
        writes += ocmd_writes(d);
        if (owner_runs)
            ck_assert_msg(ocmd_table[i].fn != NULL, "%s has no owner handler", d->name);
        if (ocmd_table[i].fn != NULL)
            ck_assert_msg(d->flags & (CMD_F_READ | CMD_F_WRITE | CMD_F_ALLKEYS),
                          "the owner runs %s, which is about no key", d->name);
    }
    ck_assert_int_ge(writes, 29); /* SET ... FLUSHDB today */
}
END_TEST

START_TEST(owner_lookup_is_the_declaration)
{
    const struct cmd_def *d = ocmd_lookup("SeT", 3);
    ck_assert_ptr_eq(d, cmd_get(CMD_SET));
    ck_assert_str_eq(d->name, "set");
    ck_assert(ocmd_writes(d));
    ck_assert(ocmd_writes(cmd_get(CMD_FLUSHALL)));
    ck_assert(!ocmd_writes(cmd_get(CMD_GET)));
    ck_assert_ptr_null(ocmd_lookup("ping", 4));   /* declared, but not the owner's */
    ck_assert_ptr_null(ocmd_lookup("nosuch", 6));
    /* MSET's keys: every other word from the first */
    d = ocmd_lookup("mset", 4);
    ck_assert(ocmd_arity_ok(d, 5));
    ck_assert(!ocmd_arity_ok(d, 2));
    ck_assert_uint_eq(ocmd_key_count(d, 5), 2);
    ck_assert_uint_eq(ocmd_key_pos(d, 5, 1), 3);
    ck_assert_uint_eq(ocmd_key_count(ocmd_lookup("copy", 4), 5), 2);
    ck_assert_uint_eq(ocmd_key_count(ocmd_lookup("flushall", 8), 2), 0);
}
END_TEST

Suite *cmd_table_suite(void)
{
    Suite *s = suite_create("cmd_table");
    TCase *tc = tcase_create("tables");
    tcase_add_test(tc, every_id_has_an_edge_row);
    tcase_add_test(tc, every_owner_write_has_an_owner_handler);
    tcase_add_test(tc, owner_lookup_is_the_declaration);
    suite_add_tcase(s, tc);
    return s;
}
