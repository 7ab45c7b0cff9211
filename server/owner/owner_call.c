/*
 * owner_call.c - CALL and EXEC: Redis commands run by the owner from its
 * command table (owner_cmd.h), one command or one MULTI/EXEC transaction
 * per request, answered RESP with the list of keys changed.
 *
 * Both are one "job": a list of commands (one for CALL), plus the watched
 * keys of an EXEC.  A job passes every gate BEFORE any command runs, so it
 * runs whole in one loop turn (atomically: nothing else touches the ledger
 * meanwhile) or not at all:
 *   1. every key (each command's, each watched one) routes here, else MOVED;
 *   2. a job with a write command is a write: exactly-once through its
 *      completion record (owner_write_gate), refused BUSY over the persist
 *      backlog; a job of reads only is run again on a retry, as any read;
 *   3. every key is resident, else the job parks on the first one that is
 *      not and runs again, from the start, once the reader thread brought it;
 *   4. no key holds a durable write not yet committed, else the job waits
 *      for that commit (its answer would tell of a state a crash can undo);
 *   5. EXEC: a watched key whose version is not the one the edge saw makes
 *      the reply the nil EXEC reply, and nothing runs.
 * Then each command runs; a command's Redis error is its element of the
 * EXEC reply and the others still run, as in Redis.  Every changed key is
 * listed once with its final version; the ledger-class ones are pushed to
 * the colos at once, the durable ones get ONE commit ticket for the whole
 * job, and the reply waits for that commit (a transaction's durable writes
 * are acknowledged together, after all of them are on disk).  The reply and
 * the change list are recorded for a retry.  FLUSHALL (CMD_F_ALLKEYS) runs as a
 * CALL only, and its reply waits for the flush's commit instead of keys.
 *
 * An EXEC whose first command is the edge's "hkv.idem" word (an HTTP
 * Idempotency-Key, owner_idem.c) is answered from its record when it has
 * one, and otherwise runs and keeps its reply under the record key in the
 * same change list; the record key is one of the job's keys for every gate.
 *
 * One exception to "whole or not at all": under maxmemory a write of the
 * job may evict a clean key that a later command of the same job needs.  If
 * nothing was changed yet the job parks and runs again; otherwise that
 * command's element is an error, and the commands before it stay applied.
 *
 * The work is bounded by the request: the decoder bounds a CALL's args and
 * an EXEC's watches + args by max_items and the frame by wire-max-frame, and
 * each command's cost by its arguments (LCS by proto-max-bulk-len, as in
 * Redis), and memory by the frame: a command whose reply would pass half a
 * frame answers an error instead (its writes, if any, stay applied).
 */
#include <stdlib.h>
#include <string.h>

#include "proto/syskey.h"
#include "server/owner/owner_cmd.h"
#include "server/owner/owner_int.h"
#include "server/owner/owner_repl.h"

#define EXPIRE_BUDGET 64    /* due deadlines turned into tombstones before a job */
#define FRAME_SLACK 1024    /* the RESP frame's own bytes besides reply and keys */

struct job {
    uint64_t id;
    struct wire_rid rid;
    uint8_t proto;
    const struct wire_cmd *cmds;
    uint32_t ncmds;
    const struct cmd_def **defs;    /* per command, NULL: unknown or bad arity */
    const struct wire_watch *watch;
    uint32_t nwatch;
    const struct wire_cmd *idem;    /* an HTTP Idempotency-Key's word (owner_idem.c), or NULL */
    int exec;                       /* an EXEC: an array reply, watches */
    int write;                      /* some command writes */
};

/* Calls fn on every key of the job (watched keys first) until it returns
 * nonzero; returns that, or 0 (struct owner_req's each). */
static int each_key(const void *src, owner_key_fn fn, void *arg)
{
    const struct job *j = src;
    if (j->idem != NULL) {
        int rc = fn(arg, j->idem->args[1]); /* the record: resident, here, committed */
        if (rc != 0)
            return rc;
    }
    for (uint32_t i = 0; i < j->nwatch; i++) {
        int rc = fn(arg, j->watch[i].key);
        if (rc != 0)
            return rc;
    }
    for (uint32_t i = 0; i < j->ncmds; i++) {
        const struct cmd_def *d = j->defs[i];
        if (d == NULL)
            continue;
        uint32_t argc = j->cmds[i].nargs, n = ocmd_key_count(d, argc);
        for (uint32_t k = 0; k < n; k++) {
            int rc = fn(arg, j->cmds[i].args[ocmd_key_pos(d, argc, k)]);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

/* 1 if a watched key's version is no longer the one the edge saw. */
static int watch_broken(struct owner *o, const struct job *j)
{
    struct ledger_clock now = owner_clock();
    for (uint32_t i = 0; i < j->nwatch; i++) {
        struct ledger_view v;
        ledger_get(o->ledger, j->watch[i].key.p, j->watch[i].key.len, now, &v);
        if (v.stamp != j->watch[i].version)
            return 1; /* found or not, v.stamp is what a VALUE or NOTFOUND carries */
    }
    return 0;
}

/* The error element of a command that could not answer. */
static const char *why(int rc)
{
    switch (rc) {
    case HKV_ETOOBIG:
        return "ERR the reply is larger than wire-max-frame allows";
    case HKV_EAGAIN:
        return "ERR a key of the transaction left memory before this command ran "
               "(maxmemory); the commands before it applied";
    default:
        return "OOM owner out of memory running this command";
    }
}

/* Runs the commands into body (an EXEC: one element each).  HKV_OK, or
 * HKV_EAGAIN (parked: nothing was changed) or HKV_ENOMEM (nothing was
 * changed: answer an error). */
static int run(struct ocmd *c, const struct job *j, struct olink *l, const char *payload,
               size_t plen)
{
    for (uint32_t i = 0; i < j->ncmds; i++) {
        const struct wire_slice *argv = j->cmds[i].args;
        uint32_t argc = j->cmds[i].nargs;
        const struct cmd_def *d = j->defs[i];
        if (d == NULL) {
            const struct cmd_def *known = ocmd_lookup(argv[0].p, argv[0].len);
            if (known != NULL)
                ocmd_reply_arity(c->out, known);
            else
                ocmd_reply_unknown(c->out, argv, argc);
            continue;
        }
        if (j->exec && (d->flags & CMD_F_ALLKEYS)) {
            resp_add_errorf(c->out, "ERR %s is not allowed in a transaction: it runs on "
                            "every owner, a transaction on one", d->name);
            continue;
        }
        size_t mark = buf_unread(c->out);
        uint32_t before = c->nchanges;
        int rc = ocmd_table[d->id].fn(c, d, argv, argc);
        owner_notify_cmd(c->o, d, argv, argc, c->changes + before, c->nchanges - before);
        if (rc == HKV_OK && c->max_reply != 0 && buf_unread(c->out) > c->max_reply)
            rc = HKV_ETOOBIG; /* a reply not made by ocmd_bulk (LCS, GETRANGE) */
        if (rc == HKV_OK)
            continue;
        c->out->len = c->out->off + mark; /* drop what the command had appended */
        c->status = HKV_OK;
        if (c->nchanges == 0 && rc != HKV_ETOOBIG) {
            if (rc == HKV_EAGAIN)
                owner_park(c->o, l, c->missing.p, c->missing.len, payload, plen);
            return rc == HKV_EAGAIN ? HKV_EAGAIN : HKV_ENOMEM;
        }
        resp_add_error(c->out, why(rc));
    }
    return HKV_OK;
}

/* The end of a job that ran (or found a watch broken): pushes, the commit
 * ticket, the record and the reply. */
static void conclude(struct owner *o, struct olink *l, const struct job *j, struct ocmd *c,
                     struct hkv_buf *reply)
{
    size_t keybytes = 0;
    for (uint32_t i = 0; i < c->nchanges; i++)
        keybytes += c->changes[i].key.len + 16;
    if (buf_unread(reply) + keybytes + FRAME_SLACK > o->opts.wire_max_frame) {
        buf_reset(reply);
        resp_add_error(reply, why(HKV_ETOOBIG));
    }
    if (!j->write) {
        wire_put_resp(&l->out, j->id, wire_slice(buf_head(reply), buf_unread(reply)), NULL, 0);
        return;
    }
    if (c->flushed != 0) {
        /* FLUSHALL (a CALL of its own): answered once the flush committed,
         * with the flush's version under the empty key, which every key now
         * reports (the edge makes the colo caches forget what is older) */
        struct wire_watch all = {wire_slice("", 0), c->flushed};
        struct rifl_result r = {.type = WIRE_RESP, .version = c->flushed,
                                .resp = buf_head(reply), .resplen = buf_unread(reply),
                                .changes = &all, .nchanges = 1};
        owner_finish_flush(o, l, j->id, j->rid, &r, c->flushed);
        return;
    }
    for (uint32_t i = 0; i < c->nchanges; i++)
        owner_applied(o, c->changes[i].key); /* before anything can fail: it applied */
    uint32_t nsys = 0; /* Idempotency-Key records: persisted and moved, never pushed or told */
    struct wire_slice small[16], *dk = c->nchanges <= 16 ? small
                                                          : calloc(c->nchanges, sizeof(*dk));
    if (dk == NULL) {
        wire_put_error(&l->out, j->id, HKV_ENOMEM,
                       wire_cstr("OOM owner out of memory (outcome unknown)"));
        return;
    }
    size_t ndur = 0;
    hkv_stamp first = 0, newest = 0;
    for (uint32_t i = 0; i < c->nchanges; i++) {
        struct wire_watch *ch = &c->changes[i];
        int sys = syskey_is(ch->key.p, ch->key.len);
        nsys += sys;
        newest = ch->version > newest && !sys ? ch->version : newest;
        if (!owner_is_durable(o, ch->key)) {
            if (sys)
                continue;
            if (!owner_repl_defer_push(o, ch->key.p, ch->key.len,
                                       router_place(ch->key.p, ch->key.len), ch->version))
                owner_push(o, ch->key.p, ch->key.len, ch->version);
            continue;
        }
        /* the ticket waits for each key at the job's oldest durable version
         * or newer: versions only grow, so that is this job's write or a
         * later one */
        dk[ndur++] = ch->key;
        if (first == 0 || ch->version < first)
            first = ch->version;
    }
    for (uint32_t i = 0, k = 0; nsys > 0 && i < c->nchanges; i++) /* the edge's list: clients' keys */
        if (!syskey_is(c->changes[i].key.p, c->changes[i].key.len))
            c->changes[k++] = c->changes[i];
    c->nchanges -= nsys;
    struct rifl_result r = {.type = WIRE_RESP, .version = newest, .resp = buf_head(reply),
                            .resplen = buf_unread(reply), .changes = c->changes,
                            .nchanges = c->nchanges};
    owner_finish(o, l, j->id, j->rid, &r, dk, ndur, first);
    if (dk != small)
        free(dk);
}

static void run_job(struct owner *o, struct olink *l, struct job *j, const char *payload,
                    size_t plen)
{
    /* the gates a typed request passes (owner_gate.c), over every key of every
     * command: a retry first, its record answers it wherever its keys are now */
    struct owner_req req = {.id = j->id, .rid = j->rid,
                            .flags = j->write ? CMD_F_WRITE : CMD_F_READ, .each = each_key,
                            .src = j, .resident = 1, .payload = payload, .plen = plen};
    if (!owner_gate_admit(o, l, &req))
        return;
    if (!j->write) {
        rifl_ack(o->rifl, l->edge_id, l->edge_inc, j->rid.ack);
        o->st.owner_reads++;
    }
    /* due deadlines become tombstones first: the job sees, and DBSIZE
     * counts, what Redis's lazy expiry would leave */
    ledger_expire_due(o->ledger, owner_clock(), EXPIRE_BUDGET);
    if (!owner_gate_ready(o, l, &req))
        return;
    struct hkv_buf body = HKV_BUF_INIT, reply = HKV_BUF_INIT;
    struct ocmd c;
    ocmd_init(&c, o, j->proto, &body);
    int rc = j->idem != NULL ? owner_idem_replay(&c, j->idem, &reply) : 0;
    if (rc < 0) {
        wire_put_error(&l->out, j->id, HKV_ENOMEM, wire_cstr("OOM owner out of memory"));
        goto out;
    }
    if (rc == 1) {
        /* answered from its record (or refused): nothing runs */
    } else if (j->exec && watch_broken(o, j)) {
        resp_add_null_array(&reply, j->proto);
    } else {
        rc = run(&c, j, l, payload, plen);
        if (rc == HKV_ENOMEM)
            wire_put_error(&l->out, j->id, HKV_ENOMEM, wire_cstr("OOM owner out of memory"));
        if (rc != HKV_OK)
            goto out;
        ocmd_changes_final(&c);
        if (j->exec)
            resp_add_array(&reply, j->ncmds + (j->idem != NULL));
        if (j->idem != NULL)
            owner_idem_head(&c, j->idem, &reply);
        buf_append(&reply, buf_head(&body), buf_unread(&body));
    }
    if (rc != 1 && j->idem != NULL) {
        if (owner_idem_keep(&c, j->idem, &reply) != HKV_OK) {
            buf_reset(&reply); /* what ran stays applied: the client must not take it for not */
            resp_add_error(&reply, "OOM the Idempotency-Key record could not be kept "
                                   "(outcome unknown)");
        }
        ocmd_changes_final(&c);
    }
    conclude(o, l, j, &c, &reply);
out:
    ocmd_deinit(&c);
    buf_deinit(&body);
    buf_deinit(&reply);
}

/* Looks up every command of j (j->defs: small, or allocated into *heap);
 * sets j->write.  0, or -1 on allocation failure. */
static int plan(struct job *j, const struct cmd_def **small, size_t nsmall,
                const struct cmd_def ***heap)
{
    *heap = NULL;
    j->defs = small;
    if (j->ncmds > nsmall) {
        *heap = calloc(j->ncmds, sizeof(**heap));
        if (*heap == NULL)
            return -1;
        j->defs = *heap;
    }
    for (uint32_t i = 0; i < j->ncmds; i++) {
        const struct wire_slice *argv = j->cmds[i].args;
        const struct cmd_def *d = ocmd_lookup(argv[0].p, argv[0].len);
        if (d != NULL && !ocmd_arity_ok(d, j->cmds[i].nargs))
            d = NULL;
        j->defs[i] = d;
        if (d != NULL && ocmd_writes(d))
            j->write = 1;
    }
    return 0;
}

void owner_op_call(struct owner *o, struct olink *l, const struct wire_msg *m,
                   const char *payload, size_t plen)
{
    struct wire_cmd one = {m->u.call.args, m->u.call.nargs};
    const struct cmd_def *d = ocmd_lookup(one.args[0].p, one.args[0].len);
    if (d == NULL || !ocmd_arity_ok(d, one.nargs)) {
        /* refused before anything ran: answered, as Redis, and not recorded */
        struct hkv_buf r = HKV_BUF_INIT;
        if (d == NULL)
            ocmd_reply_unknown(&r, one.args, one.nargs);
        else
            ocmd_reply_arity(&r, d);
        rifl_ack(o->rifl, l->edge_id, l->edge_inc, m->u.call.rid.ack);
        wire_put_resp(&l->out, m->id, wire_slice(buf_head(&r), buf_unread(&r)), NULL, 0);
        buf_deinit(&r);
        return;
    }
    const struct cmd_def *defs[1] = {d};
    struct job j = {.id = m->id, .rid = m->u.call.rid, .proto = m->u.call.proto, .cmds = &one,
                    .ncmds = 1, .defs = defs, .write = ocmd_writes(d)};
    run_job(o, l, &j, payload, plen);
}

void owner_op_exec(struct owner *o, struct olink *l, const struct wire_msg *m,
                   const char *payload, size_t plen)
{
    struct job j = {.id = m->id, .rid = m->u.exec.rid, .proto = m->u.exec.proto,
                    .cmds = m->u.exec.cmds, .ncmds = m->u.exec.ncmds,
                    .watch = m->u.exec.watch, .nwatch = m->u.exec.nwatch, .exec = 1};
    if (j.ncmds >= 2 && owner_idem_is(&j.cmds[0])) { /* an HTTP Idempotency-Key (owner_idem.c) */
        j.idem = &j.cmds[0];
        j.cmds++;
        j.ncmds--;
    }
    const struct cmd_def *small[32], **heap;
    if (plan(&j, small, 32, &heap) != 0) {
        wire_put_error(&l->out, m->id, HKV_ENOMEM, wire_cstr("OOM owner out of memory"));
        return;
    }
    run_job(o, l, &j, payload, plen);
    free(heap);
}
