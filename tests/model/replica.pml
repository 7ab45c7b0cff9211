/*
 * replica.pml: replicas and failover of one leaf, CLUSTER.md section 7 (issue 27), for
 * Spin 6.5.
 *
 * Three owners 0, 1, 2 on three hosts.  At the start owner 0 is the leaf's primary,
 * owner 1 an in-sync follower and owner 2 a follower being seeded (not in sync).  The
 * etcd key map/L is a compare-and-swap register {owner, isr} whose mod_revision is the
 * epoch (m_epoch, bumped by every CAS); members/<n> is owner n's host lease.  One client
 * (an edge) issues NR writes one after the other, each with a request id (rid 1..NR),
 * to the primary its (possibly stale) map names, and retries a write that failed or
 * timed out, within a budget of tries.
 *
 * An owner's copy of the leaf is a log of applied results, seq 1, 2, ...: each entry
 * is (rid, the epoch of the primary that applied it, whether it carries the request's
 * completion record).  The primary streams its log to each follower that follows it;
 * a follower applies in order, no gap (it takes seq len+1 or nothing), refuses a
 * sender of a lower epoch than its own, and acknowledges HELD(len).  The stream is
 * modelled as the follower pulling the next entry: loss, delay and resends are "not
 * now", and a lagging follower is one whose steps do not happen.
 *
 * Faults (bounded by FAULTS): the answer to an isr add CAS is lost; the primary
 * crashes (its process dies; its log is durable; its host lease expires later); or the
 * primary is cut from etcd but not from the client nor its followers (the
 * Sentinel-loss scenario: its lease expires, it cannot CAS, it goes on serving until it
 * self-fences, and the self-fence may come late: the model does not rely on the
 * clock); the cut heals.  A crashed primary restarts; a deposed one (restarted or
 * healed) learns the new map, drops its copy and is seeded again as a follower.
 *
 * Every step is one d_step (an event-loop callback, one etcd txn, an edge action); each
 * ends with check(), so R1 and R3 are asserted in every reachable state; R2, R4, R5,
 * R6 are asserted where an acknowledgment, an apply or a promotion happens.
 *
 * Broken variants, one -D macro each; each must give a counterexample:
 *   ACK_BEFORE_FOLLOWER     the primary answers a write once it applied it
 *   SHRINK_WITHOUT_CAS      a lagging follower is dropped locally, no CAS, then acks
 *   PROMOTE_OUT_OF_SYNC     the promotion may pick a live follower outside the isr
 *   NO_FENCE_OLD_PRIMARY    the old primary never self-fences, and a follower takes
 *                           frames of any primary whatever their epoch (dedup by seq)
 *   RECORDS_NOT_REPLICATED  followers get the results without completion records
 * and seven that show what the design text leaves open or only implies (README "What
 * the model found"):
 *   DROP_WHOLE_ON_FAILOVER  an in-sync follower drops its whole copy when the map no
 *                           longer names its sender as the primary
 *   NO_TRUNCATE             an in-sync follower keeps its log on a failover (entries of
 *                           the old primary past what the new one holds stay)
 *   RECORD_ANSWER_EARLY     a retry found in a completion record is answered at once,
 *                           not after the in-sync followers hold that entry
 *   ADD_COUNTS_AFTER_CAS    a follower being added is waited for only once the CAS
 *                           that adds it succeeded
 *   DROP_ADD_IN_DOUBT       a lagging follower whose add CAS got no answer is dropped
 *                           locally, as if the add had never been sent
 *   SAME_OWNER_RESUMES      a follower keys its stream on the primary's owner number
 *                           only, not on its term (needs two faults: make model)
 *   TRUNCATE_TO_START       an in-sync follower truncates to the new primary's length
 *                           at its takeover, not by epochs (two faults: make model)
 * ONLY_R1 leaves out the R3, R5 and R6 assertions, so that PROMOTE_OUT_OF_SYNC,
 * SHRINK_WITHOUT_CAS, NO_FENCE_OLD_PRIMARY and NO_TRUNCATE show the acknowledged write
 * they lose (R1), not only the rule they break.
 *
 * Bounds (-D): NR writes, TRIES tries in all, FAULTS, MAX_CRASH, MAX_CUT, MAX_UNKNOWN,
 * MAX_ISRCAS (isr adds and removals in all).
 */

#ifndef NR
#define NR 2
#endif
#ifndef TRIES
#define TRIES 3
#endif
#ifndef FAULTS
#define FAULTS 1
#endif
#ifndef MAX_CRASH
#define MAX_CRASH 1
#endif
#ifndef MAX_ISRCAS
#define MAX_ISRCAS 2
#endif
#ifndef MAX_UNKNOWN
#define MAX_UNKNOWN 1
#endif
#ifndef MAX_CUT
#define MAX_CUT 1
#endif
#ifdef COVERAGE
#define STEP atomic
#else
#define STEP d_step
#endif
#define N 3             /* owners; the inlines below are written out for 3 */
#define L 6             /* log slots: seq 1..5 */
#define B(i) (1 << (i))

mtype = { NONE, PRIMARY, FOLLOWER, WAITING };   /* an owner's role for the leaf */
mtype = { C_SEND, C_WAIT, C_OK, C_FAILED };     /* the client's request */

/* etcd */
byte m_owner = 0;
byte m_isr = 2;         /* bit f: owner f is an in-sync follower (the primary never) */
byte m_epoch = 1;
byte m_term = 1;        /* the epoch at which the map's primary got the leaf */
bit member[N] = 1;      /* members/<n> under n's host lease */

/* Owners.  Durable: the log (durable class: a crash keeps it).  Memory: the rest. */
bit up[N] = 1;
bit cut[N];             /* cut from etcd (not from the client, not from the others) */
bit fenced[N];          /* self-fenced: cannot prove its lease, serves nothing */
mtype role[N];
byte src[N];            /* a follower: the primary it follows ... */
byte sterm[N] = 1;      /* ... and that primary's term (the epoch it got the leaf at) */
byte pterm[N] = 1;      /* a primary: its term */
byte ep[N] = 1;         /* the epoch it acts at (primary) or knows (follower) */
byte ln[N];
byte lg[N * L];         /* rid of each entry */
byte le[N * L];         /* epoch of the primary that applied it */
bit lr[N * L];          /* carries the completion record */
byte has[N];            /* rids in the log (bit r) */
byte rec[N];            /* rids with a completion record in the log */
/* A primary's view: the isr at its epoch, followers being added (counted as required
 * from the moment the add starts), HELD per follower, and the seq each request waits
 * for before it can be answered (pw[n * 3 + rid], 0: none). */
byte pv_isr[N];
byte pv_add[N];
#ifdef TRUNCATE_TO_START
byte pstart[N];         /* a primary: its log's length when it took over */
#endif
byte add_doubt[N];      /* followers whose LEAF_ISR_ADD got no answer: outcome unknown */
byte hl[N * N];
byte pw[N * 3];

/* The client */
mtype c_st = C_SEND;
byte c_r = 1;
byte c_at;
byte c_tries;
byte c_view;            /* the primary the client's edge last saw in the map */

/* Ghosts */
byte ackd;              /* rids acknowledged to the client by some primary */
byte ackby[16];         /* per epoch: owner + 1 that acknowledged at it */
byte faults;
byte n_crash;
byte n_cut;
byte n_unk;
byte n_isrcas;          /* isr CASes (adds and removals) so far */
/* The probes' ghosts: outside the state vector unless a probe is compiled in. */
#ifdef PROBE
#define PGHOST
#else
#define PGHOST hidden
#endif
PGHOST byte g_rejoined[N];      /* n was deposed and seeded again */
PGHOST byte g_removed;          /* an isr removal CAS succeeded */
PGHOST byte g_seen;             /* probes: bit i, situation i + 1 happened */
PGHOST byte g_recwait;          /* rids whose answer comes from a completion record */

hidden byte hi, hj, hk, hs;
hidden byte R1 = 1, R2 = 1, R3 = 1, R4 = 1, R5 = 1, R6 = 1;

#ifdef ADD_COUNTS_AFTER_CAS
#define REQ(n) (pv_isr[n])
#else
#define REQ(n) (pv_isr[n] | pv_add[n])
#endif
#define HELDBY(n, f, s) ((REQ(n) & B(f)) == 0 || hl[(n) * N + (f)] >= (s))
#ifdef ACK_BEFORE_FOLLOWER
#define ALL_HELD(n, s) 1
#else
#define ALL_HELD(n, s) (HELDBY(n, 0, s) && HELDBY(n, 1, s) && HELDBY(n, 2, s))
#endif
/* A follower follows a primary by owner number and term: the same owner primary again
 * in a later term (A, B, A) is a new primary, whose log may not extend the old one.
 * SAME_OWNER_RESUMES (broken) keys on the owner number alone. */
#ifdef SAME_OWNER_RESUMES
#define SAME_TERM(f) 1
#define NEW_PRIMARY(f) (m_owner != src[f])
#else
#define SAME_TERM(f) (pterm[src[f]] == sterm[f])
#define NEW_PRIMARY(f) (m_owner != src[f] || m_term != sterm[f])
#endif
#ifdef NO_FENCE_OLD_PRIMARY
#define EPOCH_OK(f) 1
#else
#define EPOCH_OK(f) (ep[src[f]] >= ep[f])
#endif
#define SERVES(n) (up[n] && role[n] == PRIMARY && !fenced[n])
#define CAN(cnt, max) (faults < FAULTS && (cnt) < (max))

/* Probes (run.py --probes): situations the correct model must reach, one per
 * -DPROBE=n; pan reports each as a violated assertion.  1 a write acknowledged by a
 * promoted primary; 2 a retry answered by a promoted primary from a replicated
 * completion record; 3 an old primary answering late, after it was deposed; 4 a write
 * acknowledged after an isr removal CAS; 5 an in-sync follower cutting a tail at a
 * failover; 6 a deposed primary back in the isr; 7 a follower refusing a lower epoch
 * from its old primary; 8 a write failing explicitly while its primary is cut off;
 * 9 a write applied by a cut-off primary after the promotion (a stale edge map). */
#define FOLLOWS_LOWER(f) (up[f] && role[f] == FOLLOWER && up[src[f]] && role[src[f]] == PRIMARY && \
                          ep[src[f]] < ep[f] && ln[src[f]] > ln[f])
#if PROBE == 7
#define PROBE_EXPR (FOLLOWS_LOWER(0) || FOLLOWS_LOWER(1) || FOLLOWS_LOWER(2))
#elif PROBE == 9
#define PROBE_EXPR (g_seen & 64)
#else
#define PROBE_EXPR (g_seen & B(PROBE - 1))
#endif
#define NPROBES 9

/* R3: a follower of a serving primary holds a prefix of the primary's log (in order,
 * no gap, nothing of its own). */
inline prefix_of(f, p) {
    hk = 1;
    do
    :: hk <= ln[f] ->
        assert(R3 && hk <= ln[p] && lg[f * L + hk] == lg[p * L + hk] &&
               le[f * L + hk] == le[p * L + hk]);
        hk++
    :: else -> break
    od;
    hk = 0
}

/* R1: every acknowledged write is held by the map's primary and by every member of
 * the map's isr, in every state (so by every later primary: only those are promoted). */
inline check() {
    assert(R1 && (ackd & has[m_owner]) == ackd &&
           ((m_isr & 1) == 0 || (ackd & has[0]) == ackd) &&
           ((m_isr & 2) == 0 || (ackd & has[1]) == ackd) &&
           ((m_isr & 4) == 0 || (ackd & has[2]) == ackd));
#ifdef PROBE
    assert(!PROBE_EXPR);
#endif
    hj = 0;
    do
    :: hj < N ->
        if
#ifndef ONLY_R1
        :: up[hj] && role[hj] == FOLLOWER && up[src[hj]] && role[src[hj]] == PRIMARY &&
           ep[src[hj]] >= ep[hj] && SAME_TERM(hj) -> prefix_of(hj, src[hj])
#endif
        :: else -> skip
        fi;
        hj++
    :: else -> break
    od;
    hj = 0
}

/* R2: epochs only grow. */
inline set_ep(n, e) {
    assert(R2 && e >= ep[n]);
    ep[n] = e
}

inline recount(n) {
    has[n] = 0; rec[n] = 0;
    hk = 1;
    do
    :: hk <= ln[n] ->
        has[n] = has[n] | B(lg[n * L + hk]);
        if
        :: lr[n * L + hk] -> rec[n] = rec[n] | B(lg[n * L + hk])
        :: else -> skip
        fi;
        hk++
    :: else -> break
    od;
    hk = 0
}

/* Keep seq 1..k of n's log. */
inline truncate(n, k) {
    hk = k + 1;
    do
    :: hk < L -> lg[n * L + hk] = 0; le[n * L + hk] = 0; lr[n * L + hk] = 0; hk++
    :: else -> break
    od;
    if
    :: ln[n] > k -> ln[n] = k
    :: else -> skip
    fi;
    recount(n)
}

/* The longest common prefix of f's and p's logs, in hs.  Entries are compared by
 * (seq, epoch), as Kafka's leader-epoch truncation does: one primary per epoch, so
 * equal (seq, epoch) means equal entries and equal logs up to there. */
inline common_prefix(f, p) {
    hs = 0;
    do
    :: hs < ln[f] && hs < ln[p] && le[f * L + hs + 1] == le[p * L + hs + 1] -> hs++
    :: else -> break
    od
}

inline clear_primary(n) {
    pv_isr[n] = 0; pv_add[n] = 0; add_doubt[n] = 0;
    hl[n * N] = 0; hl[n * N + 1] = 0; hl[n * N + 2] = 0;
    pw[n * 3 + 1] = 0; pw[n * 3 + 2] = 0
}

/* The client's request at n is over without an answer (the link broke, the deadline). */
inline fail_client(n) {
    if
    :: c_st == C_WAIT && c_at == n -> c_st = C_FAILED
    :: else -> skip
    fi
}

/* n answers request r: an acknowledged write. */
inline ack(n, r) {
#ifndef ONLY_R1
    /* R6: every follower of the map's isr at n's epoch was waited for. */
    assert(R6 && (m_owner != n || m_epoch != ep[n] || (m_isr & ~REQ(n)) == 0));
#endif
    /* R2: one primary acknowledges per epoch.  (An old primary may answer late, at
     * its old epoch, a write its followers held before they learned the new one: that
     * write is held by the new primary too, which R1 checks.) */
    assert(R2 && (ackby[ep[n]] == 0 || ackby[ep[n]] == n + 1));
    ackby[ep[n]] = n + 1;
    if
    :: pterm[n] > 1 -> g_seen = g_seen | 1                  /* by a promoted primary */
    :: else -> skip
    fi;
    if
    :: pterm[n] > 1 && (g_recwait & B(r)) -> g_seen = g_seen | 2  /* from a record */
    :: else -> skip
    fi;
    g_recwait = g_recwait & ~B(r);
    if
    :: m_owner != n -> g_seen = g_seen | 4                  /* late, by a deposed one */
    :: else -> skip
    fi;
    if
    :: g_removed && m_owner == n -> g_seen = g_seen | 8     /* after an isr removal */
    :: else -> skip
    fi;
    ackd = ackd | B(r);
    if
    :: c_st == C_WAIT && c_at == n && c_r == r -> c_st = C_OK
    :: else -> skip
    fi
}

/* The write r reaches owner n. */
inline deliver(n, r) {
    if
    :: SERVES(n) && (rec[n] & B(r)) != 0 ->
        /* a retry: answered from its completion record, once the entry is held */
        hk = 1;
        do
        :: lg[n * L + hk] != r -> hk++
        :: else -> break
        od;
        c_at = n;
        c_st = C_WAIT;
        g_recwait = g_recwait | B(r);
#ifdef RECORD_ANSWER_EARLY
        ack(n, r);
#else
        pw[n * 3 + r] = hk;
#endif
        hk = 0
    :: SERVES(n) && (rec[n] & B(r)) == 0 && ln[n] < L - 1 ->
        /* R4: applied at most once in the history this primary carries */
        assert(R4 && (has[n] & B(r)) == 0);
        if
        :: m_owner != n -> g_seen = g_seen | 64
        :: else -> skip
        fi;
        ln[n]++;
        lg[n * L + ln[n]] = r;
        le[n * L + ln[n]] = ep[n];
        lr[n * L + ln[n]] = 1;
        has[n] = has[n] | B(r);
        rec[n] = rec[n] | B(r);
        c_at = n;
        c_st = C_WAIT;
        pw[n * 3 + r] = ln[n]
    :: else -> c_st = C_FAILED          /* not the primary, down, fenced: an error */
    fi
}

/* f takes seq len+1 from s (and acknowledges HELD(len) to s). */
inline take(f, s) {
    ln[f]++;
    lg[f * L + ln[f]] = lg[s * L + ln[f]];
    le[f * L + ln[f]] = le[s * L + ln[f]];
#ifdef RECORDS_NOT_REPLICATED
    lr[f * L + ln[f]] = 0;
#else
    lr[f * L + ln[f]] = lr[s * L + ln[f]];
#endif
    recount(f)
}

/* n, deposed (restarted or healed) or out of sync, drops its copy and follows the
 * map's primary: it will be seeded from seq 1. */
inline rejoin(n) {
    truncate(n, 0);
    clear_primary(n);
    fail_client(n);
    fenced[n] = 0;
    role[n] = FOLLOWER;
    src[n] = m_owner;
    sterm[n] = m_term;
    set_ep(n, m_epoch);
    member[n] = 1;
    g_rejoined[n] = 1
}

#ifdef SHRINK_WITHOUT_CAS
#define SHRINK(n, f) :: else -> pv_isr[n] = pv_isr[n] & ~B(f)   /* broken: no CAS */
#else
#define SHRINK(n, f) \
        :: (pv_add[n] & B(f)) == 0 && !cut[n] && m_owner == n && m_epoch == ep[n] -> \
            n_isrcas++; \
            m_isr = m_isr & ~B(f); \
            g_removed = 1; \
            m_epoch++; \
            set_ep(n, m_epoch); \
            pv_isr[n] = m_isr \
        :: else -> skip         /* no answer, or LOST: writes wait, then fail */
#endif
/* The lagging follower f: a pending add is dropped (certainly not in etcd); a member of
 * the isr is removed by CAS (mod == epoch); an add in doubt waits for the map read.
 * DROP_ADD_IN_DOUBT (broken) drops an add in doubt like one never sent. */
#ifdef DROP_ADD_IN_DOUBT
#define IN_DOUBT(n, f) 0
#else
#define IN_DOUBT(n, f) (add_doubt[n] & B(f))
#endif
#define DEL(n, f) \
    :: STEP { SERVES(n) && n != f && (REQ(n) & B(f)) && hl[n * N + f] < ln[n] -> \
        if \
        :: (pv_add[n] & B(f)) && !IN_DOUBT(n, f) -> pv_add[n] = pv_add[n] & ~B(f) \
        SHRINK(n, f) \
        fi; \
        check() }
/* broken (NO_FENCE_OLD_PRIMARY): frames of any primary s on an open stream are taken
 * whatever their epoch, by seq (a seq it has is a duplicate), and acknowledged. */
#define STALE(n, s) \
    :: STEP { up[n] && (role[n] == FOLLOWER || role[n] == PRIMARY) && n != s && up[s] && \
              role[s] == PRIMARY && hl[s * N + n] != ln[n] -> \
        if \
        :: role[n] == FOLLOWER && ln[n] < ln[s] -> take(n, s) \
        :: else -> skip \
        fi; \
        hl[s * N + n] = ln[n]; \
        check() }
#define ADD_CAS(n) (SERVES(n) && pv_add[n] != 0 && add_doubt[n] == 0 && !cut[n] && \
                    m_owner == n && m_epoch == ep[n] && n_isrcas < MAX_ISRCAS)
#define ADD(n, f) \
    :: STEP { SERVES(n) && n != f && (REQ(n) & B(f)) == 0 && up[f] && role[f] == FOLLOWER && \
              src[f] == n && hl[n * N + f] == ln[n] && n_isrcas < MAX_ISRCAS -> \
        pv_add[n] = pv_add[n] | B(f); \
        check() }

/* An owner: its primary's steps, its follower's steps, its watch of the map. */
proctype Owner(byte n) {
end_O:
    do
    /* Primary: the answer to request r, when every required follower holds it. */
    :: STEP { SERVES(n) && pw[n * 3 + 1] != 0 && ALL_HELD(n, pw[n * 3 + 1]) ->
        pw[n * 3 + 1] = 0;
        ack(n, 1); check() }
    :: STEP { SERVES(n) && pw[n * 3 + 2] != 0 && ALL_HELD(n, pw[n * 3 + 2]) ->
        pw[n * 3 + 2] = 0;
        ack(n, 2); check() }
    /* Primary: the write deadline passes: the waiting request fails explicitly. */
    :: STEP { up[n] && role[n] == PRIMARY && (pw[n * 3 + 1] != 0 || pw[n * 3 + 2] != 0) ->
        if
        :: cut[n] -> g_seen = g_seen | 128     /* failed explicitly: no etcd */
        :: else -> skip
        fi;
        pw[n * 3 + 1] = 0; pw[n * 3 + 2] = 0;
        fail_client(n); check() }
    /* Primary: remove a lagging follower by a CAS before answering without it; a
     * caught-up follower is counted as required from the start of its add. */
    DEL(n, 0)
    DEL(n, 1)
    DEL(n, 2)
    ADD(n, 0)
    ADD(n, 1)
    ADD(n, 2)
    :: STEP { ADD_CAS(n) ->
        n_isrcas++;
        if
        :: (g_rejoined[0] && (pv_add[n] & 1)) || (g_rejoined[1] && (pv_add[n] & 2)) ||
           (g_rejoined[2] && (pv_add[n] & 4)) -> g_seen = g_seen | 32  /* back in sync */
        :: else -> skip
        fi;
        m_isr = m_isr | pv_add[n];
        m_epoch++;
        set_ep(n, m_epoch);
        pv_isr[n] = m_isr;
        pv_add[n] = 0;
        check() }
    /* The add CAS's answer is lost (a fault): it was applied, or it never was; the
     * primary does not know which until it reads the map. */
    :: STEP { ADD_CAS(n) && CAN(n_unk, MAX_UNKNOWN) ->
        n_unk++; faults++; n_isrcas++;
        m_isr = m_isr | pv_add[n];
        m_epoch++;
        add_doubt[n] = pv_add[n];
        check() }
    :: STEP { ADD_CAS(n) && CAN(n_unk, MAX_UNKNOWN) ->
        n_unk++; faults++;
        add_doubt[n] = pv_add[n];
        check() }
    /* In doubt, the primary reads the map (a failed retry of the CAS shows the same). */
    :: STEP { SERVES(n) && add_doubt[n] != 0 && !cut[n] && m_owner == n ->
        if
        :: m_epoch > ep[n] -> set_ep(n, m_epoch)
        :: else -> skip
        fi;
        pv_isr[n] = m_isr;
        pv_add[n] = pv_add[n] & ~m_isr;
        add_doubt[n] = 0;
        check() }
#ifndef NO_FENCE_OLD_PRIMARY
    /* Primary cut from etcd: it cannot prove its lease and self-fences (at any time:
     * the model does not count on the clock being right). */
    :: STEP { up[n] && role[n] == PRIMARY && cut[n] && !fenced[n] ->
        fenced[n] = 1;
        fail_client(n);
        check() }
#endif
    /* Follower: take the next entry from its primary, refusing a lower epoch. */
    :: STEP { up[n] && role[n] == FOLLOWER && up[src[n]] && role[src[n]] == PRIMARY &&
              EPOCH_OK(n) && SAME_TERM(n) && (ln[n] < ln[src[n]] || hl[src[n] * N + n] != ln[n]) ->
        if
        :: ln[n] < ln[src[n]] -> take(n, src[n])
        :: else -> skip
        fi;
        if
        :: ep[src[n]] > ep[n] -> set_ep(n, ep[src[n]])     /* HANDOFF_EPOCH */
        :: else -> skip
        fi;
        hl[src[n] * N + n] = ln[n];
        check() }
#ifdef NO_FENCE_OLD_PRIMARY
    STALE(n, 0)
    STALE(n, 1)
    STALE(n, 2)
#endif
    /* Watch: the map names n the primary: it takes over, serving what it holds. */
    :: STEP { up[n] && !cut[n] && m_owner == n && role[n] == FOLLOWER ->
        role[n] = PRIMARY;
        set_ep(n, m_epoch);
        pterm[n] = m_term;
        clear_primary(n);
#ifdef TRUNCATE_TO_START
        pstart[n] = ln[n];
#endif
        pv_isr[n] = m_isr;
        check() }
    /* Watch: a follower whose sender is no longer the primary follows the new one once
     * it has taken over: in the isr it keeps what both hold, else it is seeded anew. */
    :: STEP { up[n] && !cut[n] && role[n] == FOLLOWER && m_owner != n && NEW_PRIMARY(n) &&
              up[m_owner] && role[m_owner] == PRIMARY && ep[m_owner] == m_epoch ->
        if
#if defined(DROP_WHOLE_ON_FAILOVER)
        :: truncate(n, 0)
#elif defined(NO_TRUNCATE)
        :: (m_isr & B(n)) != 0 -> skip
        :: else -> truncate(n, 0)
#else
        :: (m_isr & B(n)) != 0 ->
#ifdef TRUNCATE_TO_START
            /* broken: to where the new primary's term starts, whatever the epochs */
            hs = (ln[n] < pstart[m_owner] -> ln[n] : pstart[m_owner]);
#else
            common_prefix(n, m_owner);
#endif
            if
            :: hs < ln[n] -> g_seen = g_seen | 16       /* a tail cut at a failover */
            :: else -> skip
            fi;
            truncate(n, hs);
            hs = 0
        :: else -> truncate(n, 0)
#endif
        fi;
        src[n] = m_owner;
        sterm[n] = m_term;
        set_ep(n, m_epoch);
        check() }
    /* Watch: a follower learns the new epoch from the map (an isr change, or a
     * promotion: from then on it refuses its old primary's frames). */
    :: STEP { up[n] && !cut[n] && role[n] == FOLLOWER && m_owner != n && m_epoch > ep[n] ->
        set_ep(n, m_epoch);
        check() }
    /* Watch: a deposed primary (restarted, healed, or told by a failed CAS) drops its
     * copy and is seeded as a follower. */
    :: STEP { up[n] && !cut[n] && (role[n] == PRIMARY || role[n] == WAITING) && m_owner != n ->
        rejoin(n);
        check() }
    /* The primary was cut, the cut heals before any promotion: it proves its lease
     * again (its members/ key is registered again). */
    :: STEP { up[n] && cut[n] ->
        cut[n] = 0;
        if
        :: m_owner == n && role[n] == PRIMARY && m_epoch == ep[n] -> fenced[n] = 0; member[n] = 1
        :: else -> skip
        fi;
        check() }
    /* Faults: the primary crashes (memory lost, the log is durable) ... */
    :: STEP { up[n] && role[n] == PRIMARY && m_owner == n && CAN(n_crash, MAX_CRASH) ->
        n_crash++; faults++;
        up[n] = 0;
        cut[n] = 0;
        fenced[n] = 0;
        clear_primary(n);
        fail_client(n);
        check() }
    /* ... or is cut from etcd (its host lease will expire) but stays up. */
    :: STEP { up[n] && role[n] == PRIMARY && m_owner == n && !cut[n] && CAN(n_cut, MAX_CUT) ->
        n_cut++; faults++;
        cut[n] = 1;
        check() }
    /* Restart.  Still the map's primary: with an empty isr it serves its durable log;
     * with followers in sync it waits for the promotion (its members/ key stays absent
     * until then).  Otherwise the watch step above makes it a follower. */
    :: STEP { !up[n] ->
        up[n] = 1;
        if
        :: m_owner == n && m_isr == 0 -> role[n] = PRIMARY; member[n] = 1
        :: else -> role[n] = WAITING
        fi;
        check() }
    od
}

#define MEMBERS (member[0] | (member[1] << 1) | (member[2] << 2))
#ifdef PROMOTE_OUT_OF_SYNC
#define CANDIDATES (MEMBERS & ~B(m_owner))
#else
#define CANDIDATES (MEMBERS & m_isr)
#endif
/* The agents: lease expiry in etcd, and the promotion CAS:
 * mod == epoch and members/<primary> absent -> primary := the first live isr member,
 * isr := the other live members. */
active proctype Agents() {
end_A:
    do
    :: STEP { (!up[0] || cut[0]) && member[0] -> member[0] = 0; check() }
    :: STEP { (!up[1] || cut[1]) && member[1] -> member[1] = 0; check() }
    :: STEP { (!up[2] || cut[2]) && member[2] -> member[2] = 0; check() }
    :: STEP { !member[m_owner] && CANDIDATES != 0 ->
        if
#ifdef PROMOTE_OUT_OF_SYNC
        :: m_owner != 0 && member[0] -> hi = 0
        :: m_owner != 1 && member[1] -> hi = 1
        :: m_owner != 2 && member[2] -> hi = 2
#else
        :: (m_isr & 1) && member[0] -> hi = 0
        :: (m_isr & 1) == 0 && (m_isr & 2) && member[1] -> hi = 1
        :: (m_isr & 3) == 0 && (m_isr & 4) && member[2] -> hi = 2
#endif
        fi;
#ifndef ONLY_R1
        assert(R5 && (m_isr & B(hi)) != 0);
#endif
        m_owner = hi;
        m_isr = m_isr & ~B(hi);
        if
        :: !member[0] -> m_isr = m_isr & ~1
        :: else -> skip
        fi;
        if
        :: !member[1] -> m_isr = m_isr & ~2
        :: else -> skip
        fi;
        if
        :: !member[2] -> m_isr = m_isr & ~4
        :: else -> skip
        fi;
        m_epoch++;
        m_term = m_epoch;
        hi = 0;
        check() }
    od
}

/* The client: NR writes in turn, each sent to the primary its edge's map names (which
 * may be stale: an old primary cut from etcd still gets writes); a failed or timed-out
 * one is retried, within TRIES tries in all. */
active proctype Client() {
    do
    :: STEP { c_st == C_SEND && c_r <= NR -> c_tries++; deliver(c_view, c_r); check() }
    /* the edge's map follows etcd's, late (its watch), or at once after an error */
    :: STEP { c_st != C_WAIT && c_view != m_owner -> c_view = m_owner }
    :: STEP { c_st == C_OK -> c_r++; c_st = C_SEND; c_at = 0 }
    /* an error, or no answer in time: retry, or give up on this write */
    :: STEP { (c_st == C_FAILED || c_st == C_WAIT) && c_tries < TRIES -> c_st = C_SEND; c_at = 0 }
    :: STEP { (c_st == C_FAILED || c_st == C_WAIT) && c_tries >= TRIES ->
        c_r++; c_st = C_SEND; c_at = 0 }
    :: c_st == C_SEND && c_r > NR -> break
    od
}

init {
    atomic {
        role[0] = PRIMARY;
        role[1] = FOLLOWER;
        role[2] = FOLLOWER;
        pv_isr[0] = 2;
        run Owner(0);
        run Owner(1);
        run Owner(2)
    }
}
