/*
 * move.pml: the leaf move protocol of CLUSTER.md section 5 (issue 15), for Spin 6.5.
 *
 * One leaf L holding NK = 2 keys moves from its source owner S to a target owner T.
 * Processes: Source (S), Target (T), Etcd (applies S's commit txn whenever it gets it:
 * the txn can be in flight while S does other things, and after S died), Nemesis
 * (link loss; an edge's host losing its etcd lease), two Clients (edges issuing writes
 * and reads, routed by the map they last saw) and Final (the end-state check).  The
 * etcd key map/L is a compare-and-swap register {owner, state, to} whose mod_revision
 * is the epoch.  Faults are nondeterministic choices within a budget: link loss, S
 * crash and restart, T crash and restart, and an unknown commit outcome (the answer
 * to S's commit txn is lost: the txn may have been applied, may be applied later, or
 * never).  Owners are of the durable class: a write is acknowledged once committed to
 * SQLite, so a crash loses no acknowledged write of the owner itself.
 *
 * Every step is one STEP, a d_step (one event-loop callback, one etcd txn, one edge
 * action); each step that changes what check() reads ends with it, so I1, I2, I3 and
 * I8 are asserted in every reachable state.  Reads assert I4 when they are served.  Final asserts I1 and
 * I5 once the clients are done and the move has settled, and names I5 when the system
 * stops before that (a request parked for ever).
 *
 * The message, durable-state and map-state names are the C code's (README.md here).
 *
 * Deliberately broken variants, one -D macro each; each must give a counterexample:
 *   NO_FENCE           S keeps accepting writes after it sent HANDOFF_FENCE
 *   ACK_BEFORE_COMMIT  T acknowledges the fence before the rows are committed to SQLite
 *   DROP_ON_LINK_LOSS  T drops its copy when the link breaks, even after it acknowledged
 *   NO_GAP_CHECK       T acknowledges once it holds the last sequence number, gaps or not
 *   READS_IN_DOUBT     S serves reads after it sent the commit txn, until it knows
 * and two more, witnesses that the I2 and I5 checks can fail:
 *   RESUME_IN_DOUBT    S in doubt sees the map still moving, resumes, then aborts
 *   NO_RELEASE_ON_RESTART  a restarted S that finds itself gone leaves parked requests
 *
 * Bounds (-D): OPS operations per edge, MAXMOVES move attempts, FAULTS in all and MAX_*
 * of each kind, ROLES (edge 0 only writes, edge 1 only reads).
 */

#ifndef OPS
#define OPS 1
#endif
#ifndef MAXMOVES
#define MAXMOVES 1
#endif
#ifndef FAULTS
#define FAULTS 1
#endif
#ifndef MAX_LINKLOSS
#define MAX_LINKLOSS 1
#endif
#ifndef MAX_SCRASH
#define MAX_SCRASH 1
#endif
#ifndef MAX_TCRASH
#define MAX_TCRASH 1
#endif
#ifndef MAX_UNKNOWN
#define MAX_UNKNOWN 1
#endif
#ifndef MAX_LEASE
#define MAX_LEASE 1
#endif
/* One step: a d_step (no intermediate states, small and fast); COVERAGE makes it an
 * atomic so that pan's "unreached" list shows every branch never taken. */
#ifdef COVERAGE
#define STEP atomic
#else
#define STEP d_step
#endif
#define NC 2            /* edges; RELEASE and check() are written out for 2 */
#define NK 2            /* keys in L; the same */
#define MAXTRIES 2      /* MOVED redirects an edge follows for one request */
#define QSIZE 8         /* hand-off sequence numbers 1..7 */

/* The hand-off link; CLUSTER.md section 5 step in brackets. */
mtype = { HANDOFF_BEGIN,        /* S -> T  e1                          [2] */
          HANDOFF_READY,        /* T -> S  e1                          [2] */
          HANDOFF_ROW,          /* S -> T  seq, key, version, value    [3] */
          HANDOFF_WRITE,        /* S -> T  seq, key, version, value    [3] */
          HANDOFF_FENCE,        /* S -> T  last seq                    [4] */
          HANDOFF_FENCE_ACK,    /* T -> S  e1                          [5] */
          HANDOFF_FENCE_NACK,   /* T -> S  e1                          [5] */
          HANDOFF_COMMITTED,    /* S -> T  e1                          [7] */
          HANDOFF_ABORT };      /* S -> T  e1 [9]; T -> S  e1, BEGIN refused [2] */
mtype = { SERVING, MOVING };                         /* map/L state */
mtype = { OWNED, HANDING_OFF, RECEIVING, GONE };     /* durable ownership; 0: none */
mtype = { OWNER_S, OWNER_T };
mtype = { WRITE, READ };
mtype = { OK, MOVED, ERR, UNPARKED };                /* answers to an edge; 0: none */
/* What S does with L, in memory. */
mtype = { S_DOWN, S_RECOVERING, S_SERVING, S_INTENT, S_BEGIN, S_COPY, S_FENCED,
          S_COMMITTING, S_IN_DOUBT, S_GONE };
mtype = { T_DOWN, T_RECOVERING, T_IDLE, T_RECEIVING, T_OWNER };

/* etcd: map/L and its epoch (mod_revision), members/T, writers/<prefix>. */
mtype map_owner = OWNER_S;
mtype map_state = SERVING;
mtype map_to;
byte map_epoch = 1;
bit t_member = 1;
bit txn_inflight;       /* S's commit txn: sent, not yet processed by etcd */
byte txn_epoch;
byte txn_answer;        /* its answer on the way to S: 1 applied, 2 compare failed */
byte writers[2];        /* writers/<prefix>: edge + 1; 0: no such key */

/* S. Durable: s_dur, s_e1 (with HANDING_OFF), s_ver/s_wid (its SQLite rows).
 * Memory: the rest. */
bit s_up = 1;
mtype s_mode = S_SERVING;
mtype s_dur = OWNED;
byte s_e1;
byte s_ver[NK] = 1;     /* every key starts at version 1, acknowledged */
byte s_wid[NK];
byte s_moves;
byte s_seq;             /* last hand-off sequence number taken */
bit s_rows;             /* the rows have been read for the copy */
byte s_urows;           /* sequence numbers taken, not yet written to the link, */
byte s_uwrites;         /* by the row reader and by the write path */
byte q_k[QSIZE];        /* per sequence number: what it carries */
byte q_ver[QSIZE];
byte q_wid[QSIZE];

/* The hand-off link: FIFO both ways; a loss drops what is in flight and all after. */
bit link_up;
chan s2t = [10] of { mtype, byte, byte, byte, byte };
chan t2s = [3] of { mtype, byte };

/* T. Durable: t_dur, t_e1, t_dver/t_dwid and t_dmask (its SQLite rows and the
 * sequence numbers committed with them).  Memory: t_mver/t_mwid (what it holds and
 * serves), t_have (sequence numbers received), t_fence, t_acked. */
bit t_up = 1;
mtype t_mode = T_IDLE;
mtype t_dur;
byte t_e1;
byte t_mver[NK];
byte t_mwid[NK];
byte t_dver[NK];
byte t_dwid[NK];
byte t_have;
byte t_dmask;
byte t_fence;           /* last seq of a HANDOFF_FENCE not yet answered */
bit t_acked;

/* Edges: the owner each last saw in the map; one request at a time each. */
mtype view[NC] = OWNER_S;
mtype res[NC];
mtype parked_at[NC];
mtype req_op[NC];
byte req_k[NC];
byte req_wid[NC];
byte prefix[NC];
bit pfx_ok[NC];         /* the edge holds writers/<prefix[c]> and uses it */
bit lease_dying;        /* edge 0's host lost etcd; its writers/ key not yet expired */
byte done_clients;

/* Ghosts: the last acknowledged write per key (version, value), versions read. */
byte ack_ver[NK] = 1;
byte ack_wid[NK];
byte last_read[4];      /* [c * NK + k] */
byte max_read[NK];

/* The fault budget. */
byte faults;
byte n_ll;
byte n_sc;
byte n_tc;
byte n_unk;
byte n_lease;

/* Scratch, written before it is read within one step. */
hidden mtype hm;
hidden byte ha, hb, hc, hd, hq, hr;
/* The invariants' names, so that pan's "assertion violated" line names them. */
hidden byte I1 = 1, I2 = 1, I3 = 1, I4 = 1, I5 = 1, I8 = 1;

/* Who accepts writes and who serves reads of L. */
#ifdef NO_FENCE
#define S_ACCEPTS (s_up && (s_mode == S_SERVING || s_mode == S_INTENT || s_mode == S_BEGIN || \
                            s_mode == S_COPY || s_mode == S_FENCED))
#else
#define S_ACCEPTS (s_up && (s_mode == S_SERVING || s_mode == S_INTENT || s_mode == S_BEGIN || \
                            s_mode == S_COPY))
#endif
#ifdef READS_IN_DOUBT
#define S_READS (S_ACCEPTS || (s_up && (s_mode == S_FENCED || s_mode == S_COMMITTING || \
                                        s_mode == S_IN_DOUBT)))
#else
#define S_READS (S_ACCEPTS || (s_up && s_mode == S_FENCED))
#endif
#define T_ACCEPTS (t_up && t_mode == T_OWNER)
/* S streams every write it applies while a copy runs (steps 3-4). */
#define S_STREAMS (s_mode == S_COPY || s_mode == S_FENCED)
#define S_IN_MOVE (s_mode == S_BEGIN || s_mode == S_COPY || s_mode == S_FENCED || \
                   s_mode == S_COMMITTING || s_mode == S_IN_DOUBT)

/* T may acknowledge HANDOFF_FENCE(last) (step 5). */
#define BITS_UPTO(n) ((1 << ((n) + 1)) - 2)
#ifdef NO_GAP_CHECK
#define ACKABLE ((t_dmask & (1 << t_fence)) != 0)
#else
#ifdef ACK_BEFORE_COMMIT
#define ACKABLE ((t_have & BITS_UPTO(t_fence)) == BITS_UPTO(t_fence))
#else
#define ACKABLE ((t_dmask & BITS_UPTO(t_fence)) == BITS_UPTO(t_fence))
#endif
#endif

#define HOLDS(ver, wid, k) ((ver) > ack_ver[k] || ((ver) == ack_ver[k] && (wid) == ack_wid[k]))
#define SETTLED (s_up && t_up && \
    ((map_owner == OWNER_S && map_state == SERVING && s_mode == S_SERVING && t_mode == T_IDLE) || \
     (map_owner == OWNER_T && s_mode == S_GONE && t_mode == T_OWNER)))
#define QUIET (done_clients == NC && SETTLED)
#define CAN(n, max) (faults < FAULTS && (n) < (max) && !QUIET)

/* Probes (run.py --probes): situations the correct model must reach, one per -DPROBE=n.
 * pan must find each (it reports the probe's assertion as violated); one it cannot
 * find is a fault path the bounds or the model leave out. */
#if PROBE == 1          /* S in doubt while its commit is applied */
#define PROBE_EXPR (s_up && s_mode == S_IN_DOUBT && map_owner == OWNER_T)
#elif PROBE == 2        /* S aborted in doubt; its commit txn is still in flight */
#define PROBE_EXPR (s_mode == S_SERVING && txn_inflight)
#elif PROBE == 3        /* the commit's compare fails: T's members/ key expired */
#define PROBE_EXPR (txn_answer == 2)
#elif PROBE == 4        /* S restarts handing off and finds the move committed */
#define PROBE_EXPR (s_mode == S_RECOVERING && s_dur == HANDING_OFF && map_owner == OWNER_T)
#elif PROBE == 5        /* S restarts handing off and finds the move still open */
#define PROBE_EXPR (s_mode == S_RECOVERING && s_dur == HANDING_OFF && map_state == MOVING)
#elif PROBE == 6        /* T restarts receiving and finds the move committed */
#define PROBE_EXPR (t_mode == T_RECOVERING && map_owner == OWNER_T)
#elif PROBE == 7        /* T acknowledged, the link is lost, T keeps its copy */
#define PROBE_EXPR (t_mode == T_RECEIVING && t_acked && !link_up)
#elif PROBE == 8        /* HANDOFF_FENCE reaches T before some of the data: a gap */
#define PROBE_EXPR (t_mode == T_RECEIVING && t_fence != 0 && \
                    (t_have & BITS_UPTO(t_fence)) != BITS_UPTO(t_fence))
#elif PROBE == 9        /* a write S applied during the copy reaches T */
#define PROBE_EXPR (t_mode == T_RECEIVING && (t_mver[0] > 1 || t_mver[1] > 1))
#elif PROBE == 10       /* a write parked by the fence is taken after an abort */
#define PROBE_EXPR (req_op[0] == WRITE && res[0] == OK && s_mode == S_SERVING && map_epoch > 2)
#elif PROBE == 11       /* a write parked by the fence gets MOVED after the commit */
#define PROBE_EXPR (res[0] == MOVED && s_mode == S_GONE)
#elif PROBE == 12       /* S serves a read while fenced */
#define PROBE_EXPR (req_op[1] == READ && res[1] == OK && s_mode == S_FENCED)
#elif PROBE == 13       /* T serves a read after the commit */
#define PROBE_EXPR (req_op[1] == READ && res[1] == OK && view[1] == OWNER_T)
#elif PROBE == 14       /* an edge writes again after its prefix's lease expired */
#define PROBE_EXPR (n_lease > 0 && !lease_dying && res[0] == OK && req_op[0] == WRITE)
#endif
#define NPROBES 14

/* I1: whoever accepts writes holds every acknowledged write.  I2: at most one owner
 * accepts writes.  I3: the map names one owner (for one leaf, that is the partition).
 * I8: no two live edges use the same request-id prefix. */
inline check() {
    assert(I2 && !(S_ACCEPTS && T_ACCEPTS));
    assert(I3 && (map_owner == OWNER_S || map_owner == OWNER_T) &&
           (map_state == SERVING || (map_state == MOVING && map_to != map_owner)));
    assert(I1 && (!S_ACCEPTS || (HOLDS(s_ver[0], s_wid[0], 0) && HOLDS(s_ver[1], s_wid[1], 1))) &&
           (!T_ACCEPTS || (HOLDS(t_mver[0], t_mwid[0], 0) && HOLDS(t_mver[1], t_mwid[1], 1))));
    assert(I8 && !(pfx_ok[0] && pfx_ok[1] && prefix[0] == prefix[1]));
#ifdef PROBE_EXPR
    assert(!PROBE_EXPR)
#else
    skip
#endif
}

/* An owner acknowledges a write: it must carry a higher version than every write of
 * that key acknowledged before, else that one is lost (I1). */
inline ack_write(c, k, ver, wid) {
    assert(I1 && ver > ack_ver[k]);
    ack_ver[k] = ver;
    ack_wid[k] = wid;
    res[c] = OK
}

/* A read is served: never older than what this edge read before (I4 per client), than
 * what anyone read before (I4 in real time) or than an acknowledged write. */
inline serve_read(c, ver) {
    assert(I4 && ver >= last_read[c * NK + req_k[c]] && ver >= max_read[req_k[c]] &&
           ver >= ack_ver[req_k[c]]);
    last_read[c * NK + req_k[c]] = ver;
    if
    :: ver > max_read[req_k[c]] -> max_read[req_k[c]] = ver
    :: else -> skip
    fi;
    res[c] = OK
}

inline link_down() {
    link_up = 0;
    do
    :: s2t?_,_,_,_,_
    :: empty(s2t) -> break
    od;
    do
    :: t2s?_,_
    :: empty(t2s) -> break
    od
}

inline send_t2s(m, a) {
    if
    :: link_up -> t2s!m,a
    :: else -> skip
    fi
}

inline send_s2t(m, a) {
    if
    :: link_up -> s2t!m,a,0,0,0
    :: else -> skip
    fi
}

/* S takes a hand-off sequence number when it applies a write or reads a row (step 3). */
inline enqueue(k, isrow) {
    s_seq++;
    assert(s_seq < QSIZE);
    q_k[s_seq] = k;
    q_ver[s_seq] = s_ver[k];
    q_wid[s_seq] = s_wid[k];
    if
    :: isrow -> s_urows = s_urows | (1 << s_seq)
    :: else -> s_uwrites = s_uwrites | (1 << s_seq)
    fi
}

/* One producer writes its oldest unsent sequence number to the link. */
inline send_oldest(mask, m) {
    hq = 1;
    do
    :: (mask & (1 << hq)) == 0 -> hq++
    :: else -> break
    od;
    mask = mask & ~(1 << hq);
    if
    :: link_up -> s2t!m,hq,q_k[hq],q_ver[hq],q_wid[hq]
    :: else -> skip
    fi;
    q_k[hq] = 0; q_ver[hq] = 0; q_wid[hq] = 0;
    hq = 0
}

inline s_clear_stream() {
    s_seq = 0; s_rows = 0; s_urows = 0; s_uwrites = 0;
    hq = 1;
    do
    :: hq < QSIZE -> q_k[hq] = 0; q_ver[hq] = 0; q_wid[hq] = 0; hq++
    :: else -> break
    od;
    hq = 0
}

/* A request of edge c reaches S: served, parked (the edge waits, no error), MOVED or,
 * S being down, an error (the edge sees its link to S fail). */
inline s_request(c) {
    if
    :: !s_up -> res[c] = ERR
    :: s_up && s_mode == S_GONE -> res[c] = MOVED
    :: req_op[c] == WRITE && S_ACCEPTS ->
        s_ver[req_k[c]]++;
        s_wid[req_k[c]] = req_wid[c];
        if
        :: S_STREAMS -> enqueue(req_k[c], 0)
        :: else -> skip
        fi;
        ack_write(c, req_k[c], s_ver[req_k[c]], s_wid[req_k[c]])
    :: req_op[c] == READ && S_READS -> serve_read(c, s_ver[req_k[c]])
    :: else -> parked_at[c] = OWNER_S
    fi
}

inline t_request(c) {
    if
    :: !t_up -> res[c] = ERR
    :: req_op[c] == WRITE && T_ACCEPTS ->
        t_mver[req_k[c]]++;
        t_mwid[req_k[c]] = req_wid[c];
        t_dver[req_k[c]] = t_mver[req_k[c]];
        t_dwid[req_k[c]] = t_mwid[req_k[c]];
        ack_write(c, req_k[c], t_mver[req_k[c]], t_mwid[req_k[c]])
    :: req_op[c] == READ && T_ACCEPTS -> serve_read(c, t_mver[req_k[c]])
    :: else -> parked_at[c] = OWNER_T
    fi
}

/* Release the requests parked at owner o with MOVED, ERR or UNPARKED (the owner takes
 * the request now: it goes through s_request or t_request again, unchanged). */
#define RELEASE_ONE(o, c, how) \
    if \
    :: parked_at[c] == o -> parked_at[c] = 0; res[c] = how \
    :: else -> skip \
    fi
#define RELEASE(o, how) RELEASE_ONE(o, 0, how); RELEASE_ONE(o, 1, how)

/* Step 7: S knows the commit applied: gone, MOVED to parked and later requests. */
inline s_gone() {
    send_s2t(HANDOFF_COMMITTED, s_e1);
    s_dur = GONE;
    s_mode = S_GONE;
    s_e1 = 0;
    s_clear_stream();
    RELEASE(OWNER_S, MOVED)
}

/* Step 9: S owns L again and takes the parked requests. */
inline s_resume() {
    send_s2t(HANDOFF_ABORT, s_e1);
    s_dur = OWNED;
    s_mode = S_SERVING;
    s_e1 = 0;
    s_clear_stream();
    RELEASE(OWNER_S, UNPARKED)
}

/* Step 9: txn mod(map/L) == e1 -> {owner S, serving}.  Its failure branch reads map/L:
 * the commit got there first (gone), or L is S's already. */
inline s_abort() {
    if
    :: map_epoch == s_e1 && map_state == MOVING ->
        map_state = SERVING;
        map_to = 0;
        map_epoch++;
        hr = 0
    :: else -> hr = (map_owner == OWNER_T -> 1 : 0)
    fi;
    if
    :: hr == 1 -> s_gone()
    :: else -> s_resume()
    fi;
    hr = 0
}

inline t_purge() {
    t_mver[0] = 0; t_mwid[0] = 0; t_mver[1] = 0; t_mwid[1] = 0;
    t_dver[0] = 0; t_dwid[0] = 0; t_dver[1] = 0; t_dwid[1] = 0;
    t_have = 0; t_dmask = 0; t_fence = 0; t_acked = 0
}

/* T owns L.  Its version clock is above every version it received: versions are per
 * key here, and its next write of a key takes the version it holds + 1. */
inline t_adopt() {
    t_dver[0] = t_mver[0]; t_dwid[0] = t_mwid[0];
    t_dver[1] = t_mver[1]; t_dwid[1] = t_mwid[1];
    t_dur = OWNED;
    t_mode = T_OWNER;
    t_e1 = 0; t_have = 0; t_dmask = 0; t_fence = 0; t_acked = 0;
    RELEASE(OWNER_T, UNPARKED)
}

inline t_drop() {
    t_purge();
    t_dur = 0;
    t_mode = T_IDLE;
    t_e1 = 0;
    RELEASE(OWNER_T, MOVED)
}

active proctype Source() {
end_S:
    do
    /* Step 1: intent txn: mod(map/L) == e0, T a member (one move: a slot is free). */
    :: STEP { s_up && s_mode == S_SERVING && map_owner == OWNER_S && map_state == SERVING &&
                s_moves < MAXMOVES && done_clients < NC && t_member ->
        s_moves++;
        map_state = MOVING;
        map_to = OWNER_T;
        map_epoch++;
        s_e1 = map_epoch;
        s_mode = S_INTENT;
        check() }
    /* Step 1: record handing_off(e1).  Step 2: open the link (fails if T is down). */
    :: STEP { s_up && s_mode == S_INTENT ->
        s_dur = HANDING_OFF;
        link_down();
        link_up = t_up;
        send_s2t(HANDOFF_BEGIN, s_e1);
        s_mode = S_BEGIN;
        check() }
    :: STEP { t2s?hm,ha ->
        if
        :: hm == HANDOFF_READY && s_mode == S_BEGIN && ha == s_e1 -> s_mode = S_COPY
        /* Step 6: S stops serving reads too and sends the commit txn. */
        :: hm == HANDOFF_FENCE_ACK && s_mode == S_FENCED && ha == s_e1 ->
            s_mode = S_COMMITTING;
            txn_inflight = 1;
            txn_epoch = s_e1
        :: hm == HANDOFF_FENCE_NACK && s_mode == S_FENCED && ha == s_e1 -> s_abort()
        :: hm == HANDOFF_ABORT && s_mode == S_BEGIN && ha == s_e1 -> s_abort()
        :: else -> skip
        fi;
        hm = 0; ha = 0;
        check() }
    /* Step 3: read L's rows (through the hash index), each with a sequence number. */
    :: STEP { s_up && s_mode == S_COPY && !s_rows ->
        enqueue(0, 1);
        enqueue(1, 1);
        s_rows = 1;
        check() }
    /* Step 3: two producers write to the link, each in its own order: the row reader
     * and the write path.  Between them, any order: T does not care. */
    :: STEP { s_up && s_urows != 0 -> send_oldest(s_urows, HANDOFF_ROW); check() }
    :: STEP { s_up && s_uwrites != 0 -> send_oldest(s_uwrites, HANDOFF_WRITE); check() }
    /* Step 4: fence: park writes, send FENCE(last seq), arm the deadline. */
    :: STEP { s_up && s_mode == S_COPY && s_rows ->
        s_mode = S_FENCED;
        send_s2t(HANDOFF_FENCE, s_seq);
        check() }
    /* Step 9: abort when the link is lost before step 6 ... */
    :: STEP { s_up && (s_mode == S_BEGIN || s_mode == S_COPY || s_mode == S_FENCED) && !link_up ->
        s_abort();
        check() }
    /* ... or at the fence deadline. */
    :: STEP { s_up && s_mode == S_FENCED ->
        s_abort();
        check() }
    /* Steps 7, 9: the commit txn's answer: applied, or the compare failed (T gone). */
    :: STEP { s_up && s_mode == S_COMMITTING && txn_answer != 0 ->
        if
        :: txn_answer == 1 -> s_gone()
        :: else -> s_abort()
        fi;
        txn_answer = 0;
        check() }
    /* Step 8: the answer is lost (the txn timed out): the outcome is unknown. */
    :: STEP { s_up && s_mode == S_COMMITTING && CAN(n_unk, MAX_UNKNOWN) ->
        n_unk++;
        faults++;
        txn_answer = 0;
        s_mode = S_IN_DOUBT;
        check() }
    /* Step 8: L stays fenced (no reads, writes parked); S re-reads the map. */
    :: STEP { s_up && s_mode == S_IN_DOUBT && map_owner == OWNER_T -> s_gone(); check() }
    :: STEP { s_up && s_mode == S_IN_DOUBT && map_state == MOVING && map_epoch == s_e1 ->
        txn_inflight = 1;               /* still moving: send the commit txn again ... */
        txn_epoch = s_e1;
        s_mode = S_COMMITTING;
        check() }
    :: STEP { s_up && s_mode == S_IN_DOUBT && map_state == MOVING && map_epoch == s_e1 ->
#ifdef RESUME_IN_DOUBT
        s_resume();                     /* broken: takes "still moving" for "not committed" */
#else
        s_abort();                      /* ... or abort: the compare-and-swap decides */
#endif
        check() }
#ifdef RESUME_IN_DOUBT
    /* broken: ... and sends the abort txn afterwards, not waiting for it */
    :: STEP { s_up && s_mode == S_SERVING && map_state == MOVING ->
        map_state = SERVING;
        map_to = 0;
        map_epoch++;
        check() }
#endif
    :: STEP { s_up && s_mode == S_IN_DOUBT && map_owner == OWNER_S && map_state == SERVING ->
        s_resume();
        check() }
    /* S crashes: its memory is lost (the stream; parked requests: their edges see an
     * error); its commit txn may still be in flight. */
    :: STEP { s_up && CAN(n_sc, MAX_SCRASH) ->
        n_sc++;
        faults++;
        s_up = 0;
        s_mode = S_DOWN;
        txn_answer = 0;
        s_clear_stream();
        link_down();
        RELEASE(OWNER_S, ERR);
        if
        :: s_dur != HANDING_OFF -> s_e1 = 0
        :: else -> skip
        fi;
        check() }
    :: STEP { !s_up ->
        s_up = 1;
        s_mode = S_RECOVERING;
        check() }
    /* Step 10: after a restart L is not served until its state is resolved from the map. */
    :: STEP { s_up && s_mode == S_RECOVERING ->
        if
        :: s_dur == GONE ->
            s_mode = S_GONE;
#ifndef NO_RELEASE_ON_RESTART
            RELEASE(OWNER_S, MOVED)
#endif
        :: s_dur != GONE && map_owner == OWNER_T -> s_gone()
        :: s_dur != GONE && map_owner == OWNER_S && map_state == MOVING ->
            s_e1 = map_epoch;
            s_abort()
        :: s_dur != GONE && map_owner == OWNER_S && map_state == SERVING -> s_resume()
        fi;
        check() }
    od
}

active proctype Target() {
end_T:
    do
    :: STEP { s2t?hm,ha,hb,hc,hd ->
        if
        /* Step 2: the map must say moving to T at e1; purge leftovers, record receiving. */
        :: hm == HANDOFF_BEGIN && (t_mode == T_IDLE || t_mode == T_RECOVERING ||
                                   (t_mode == T_RECEIVING && t_e1 != ha)) ->
            if
            :: map_state == MOVING && map_to == OWNER_T && map_epoch == ha ->
                t_purge();
                t_dur = RECEIVING;
                t_e1 = ha;
                t_mode = T_RECEIVING;
                send_t2s(HANDOFF_READY, ha)
            :: else -> send_t2s(HANDOFF_ABORT, ha)
            fi
        /* Step 3: per key the higher version wins: order and duplicates do not matter. */
        :: (hm == HANDOFF_ROW || hm == HANDOFF_WRITE) && t_mode == T_RECEIVING ->
            t_have = t_have | (1 << ha);
            if
            :: hc > t_mver[hb] -> t_mver[hb] = hc; t_mwid[hb] = hd
            :: else -> skip
            fi
        :: hm == HANDOFF_FENCE && t_mode == T_RECEIVING && !t_acked -> t_fence = ha
        :: hm == HANDOFF_COMMITTED && t_mode == T_RECEIVING && ha == t_e1 -> t_adopt()
        :: hm == HANDOFF_ABORT && t_mode == T_RECEIVING && ha == t_e1 -> t_drop()
        :: else -> skip
        fi;
        hm = 0; ha = 0; hb = 0; hc = 0; hd = 0;
        check() }
    /* The persister commits what T received (one SQLite transaction). */
    :: STEP { t_up && t_mode == T_RECEIVING && t_have != t_dmask ->
        t_dver[0] = t_mver[0]; t_dwid[0] = t_mwid[0];
        t_dver[1] = t_mver[1]; t_dwid[1] = t_mwid[1];
        t_dmask = t_have;
        check() }
    /* Step 5: acknowledge only with no gap and all of it committed; else NACK. */
    :: STEP { t_up && t_mode == T_RECEIVING && t_fence != 0 && ACKABLE ->
        send_t2s(HANDOFF_FENCE_ACK, t_e1);
        t_acked = 1;
        t_fence = 0;
        check() }
    :: STEP { t_up && t_mode == T_RECEIVING && t_fence != 0 && !(ACKABLE) ->
        send_t2s(HANDOFF_FENCE_NACK, t_e1);
        t_fence = 0;
        check() }
    /* T's watch of the map: T owns L (the commit, if T missed HANDOFF_COMMITTED) ... */
    :: STEP { t_up && (t_mode == T_RECEIVING || t_mode == T_RECOVERING || t_mode == T_IDLE) &&
                map_owner == OWNER_T && map_state == SERVING ->
        t_adopt();
        check() }
    /* ... or the move it was receiving is over without it (step 9). */
    :: STEP { t_up && (t_mode == T_RECEIVING || t_mode == T_RECOVERING) &&
                map_owner == OWNER_S && (map_state == SERVING || map_epoch != t_e1) ->
        t_drop();
        check() }
#ifdef DROP_ON_LINK_LOSS
    :: STEP { t_up && t_mode == T_RECEIVING && !link_up ->
        t_drop();
        check() }
#endif
    /* T crashes: memory lost; its members/ key outlives it until its lease expires. */
    :: STEP { t_up && CAN(n_tc, MAX_TCRASH) ->
        n_tc++;
        faults++;
        t_up = 0;
        t_mode = T_DOWN;
        t_mver[0] = t_dver[0]; t_mwid[0] = t_dwid[0];
        t_mver[1] = t_dver[1]; t_mwid[1] = t_dwid[1];
        t_have = t_dmask;
        t_fence = 0;
        t_acked = 0;
        link_down();
        RELEASE(OWNER_T, ERR);
        check() }
    :: STEP { !t_up && t_member -> t_member = 0 }
    /* Step 10: restart from the durable state; receiving: resolved from the map. */
    :: STEP { !t_up ->
        t_up = 1;
        t_member = 1;
        if
        :: t_dur == RECEIVING -> t_mode = T_RECOVERING
        :: t_dur == OWNED -> t_mode = T_OWNER
        :: else -> t_mode = T_IDLE
        fi;
        check() }
    od
}

/* etcd applies S's commit txn (step 6) when it gets it: mod(map/L) == e1 and T a
 * member -> {owner T, serving}.  The answer reaches S only if S still waits for it. */
active proctype Etcd() {
end_E:
    do
    :: STEP { txn_inflight ->
        txn_inflight = 0;
        if
        :: map_epoch == txn_epoch && map_state == MOVING && t_member ->
            map_owner = OWNER_T;
            map_state = SERVING;
            map_to = 0;
            map_epoch++;
            hq = 1
        :: else -> hq = 2
        fi;
        if
        :: s_up && s_mode == S_COMMITTING && s_e1 == txn_epoch -> txn_answer = hq
        :: else -> skip
        fi;
        hq = 0;
        check() }
    /* A txn whose sender gave up or died may never reach etcd. */
    :: STEP { txn_inflight && !(s_up && s_mode == S_COMMITTING) -> txn_inflight = 0 }
    od
}

active proctype Nemesis() {
end_N:
    do
    :: STEP { link_up && (S_IN_MOVE || t_mode == T_RECEIVING) && CAN(n_ll, MAX_LINKLOSS) ->
        n_ll++;
        faults++;
        link_down();
        check() }
    /* Edge 0's host loses etcd.  The edge stops using its prefix when its own lease
     * deadline passes, which is before etcd expires the lease (the deadline counts from
     * when the last keepalive was sent); only then does etcd delete writers/<prefix>. */
    :: STEP { pfx_ok[0] && CAN(n_lease, MAX_LEASE) ->
        n_lease++;
        faults++;
        pfx_ok[0] = 0;
        lease_dying = 1;
        check() }
    :: STEP { lease_dying ->
        writers[prefix[0]] = 0;
        lease_dying = 0;
        check() }
    od
}

/* An edge's first write (and its first after losing its prefix) creates
 * writers/<prefix> for a free prefix, with create_revision == 0. */
inline register(c) {
    if
    :: writers[0] == 0 && !(c == 0 && lease_dying) ->
        writers[0] = c + 1; prefix[c] = 0; pfx_ok[c] = 1
    :: writers[0] != 0 && writers[1] == 0 && !(c == 0 && lease_dying) ->
        writers[1] = c + 1; prefix[c] = 1; pfx_ok[c] = 1
    :: else -> skip
    fi
}

inline issue(c) {
    if
    :: req_op[c] == WRITE && !pfx_ok[c] -> register(c)
    :: else -> skip
    fi;
    if
    :: req_op[c] == WRITE && !pfx_ok[c] -> res[c] = ERR     /* no request-id prefix */
    :: else ->
        assert(I8 && (req_op[c] == READ || writers[prefix[c]] == c + 1));
        if
        :: view[c] == OWNER_S -> s_request(c)
        :: else -> t_request(c)
        fi
    fi
}

/* ROLES: edge 0 only writes, edge 1 only reads; else both do both. */
#ifdef ROLES
#define ROLE_W(c) (c == 0)
#define ROLE_R(c) (c == 1)
#else
#define ROLE_W(c) 1
#define ROLE_R(c) 1
#endif
/* An answer that comes at once is taken in the same step. */
inline settle(c) {
    if
    :: res[c] == OK || res[c] == ERR ->
        res[c] = 0; tries = 0; i++;
        req_op[c] = 0; req_k[c] = 0; req_wid[c] = 0
    :: else -> skip
    fi
}
#define NEW_OP(c, role, op, k) \
    STEP { i < OPS && req_op[c] == 0 && role -> \
        req_op[c] = op; req_k[c] = k; \
        req_wid[c] = (op == WRITE -> c * OPS + i + 1 : 0); \
        issue(c); \
        check(); \
        settle(c) }

proctype Client(byte c) {
    byte i, tries;
    do
    :: NEW_OP(c, ROLE_W(c), WRITE, 0)
    :: NEW_OP(c, ROLE_W(c), WRITE, 1)
    :: NEW_OP(c, ROLE_R(c), READ, 0)
    :: NEW_OP(c, ROLE_R(c), READ, 1)
    /* a parked request is taken by its owner now */
    :: STEP { res[c] == UNPARKED -> res[c] = 0; issue(c); check(); settle(c) }
    /* MOVED: to the owner the map now names */
    :: STEP { res[c] == MOVED && tries < MAXTRIES ->
        tries++;
        view[c] = map_owner;
        res[c] = 0;
        issue(c);
        check();
        settle(c) }
    /* the answer (I5: a parked request waits here until it is released) */
    :: STEP { res[c] == OK || res[c] == ERR || (res[c] == MOVED && tries == MAXTRIES) ->
        res[c] = 0; tries = 0; i++;
        req_op[c] = 0; req_k[c] = 0; req_wid[c] = 0 }
    /* the edge's map follows etcd's (the agent's watch) */
    :: STEP { req_op[c] == 0 && view[c] != map_owner -> view[c] = map_owner }
    :: i == OPS && req_op[c] == 0 -> break
    od;
    done_clients++
}

/* The end: once the clients are done and the move has settled, the map's owner holds
 * every acknowledged write (I1), the durable states agree with the map, and no
 * request is parked (I5).  Stopping before that is an I5 violation. */
proctype Final() {
    if
    :: STEP { QUIET ->
        assert(I1 && ((map_owner == OWNER_S && HOLDS(s_ver[0], s_wid[0], 0) && HOLDS(s_ver[1], s_wid[1], 1) &&
                       s_dur == OWNED && t_dur == 0) ||
                      (map_owner == OWNER_T && HOLDS(t_mver[0], t_mwid[0], 0) && HOLDS(t_mver[1], t_mwid[1], 1) &&
                       s_dur == GONE && t_dur == OWNED)));
        assert(I5 && parked_at[0] == 0 && parked_at[1] == 0 && res[0] == 0 && res[1] == 0) }
    :: timeout -> assert(I5 && QUIET)
    fi
}

init {
    atomic {
        run Client(0);
        run Client(1);
        run Final()
    }
}
