#!/usr/bin/python3
"""checker.py - linearizability checker for hotkvd histories (format v1).

A history (tests/history/README.md) records what clients asked and heard.
This file decides, per key, whether some sequential order of the operations
explains every answer, with the answers of one Redis string key as the model
(Jepsen Knossos / Porcupine style), and names what went wrong when none does.

Design choices a reader would otherwise have to reverse-engineer (the
README says more):
- P-compositionality: linearizability is checked per key.  A multi-key op
  (MSET, MGET) becomes one sub-op per key with the same interval and outcome.
- The search is Wing & Gong's with Lowe's improvements, as in Porcupine: the
  call and return events form a linked list in time order; the candidates of a
  configuration are the calls before the first return still in the list; a
  configuration (determinate ops linearized, model state) is memoized so it
  is expanded once.  What keeps it cheap in CPython:
    * a "pure" op (one that changes nothing in any state its answer allows: a
      read, a SET NX that answered nil, a DEL that answered 0) is forced: it
      can move to the front of any linearization from here, so it is the
      only candidate tried;
    * indeterminate ("info") ops return at +inf and need not be linearized:
      the search succeeds once every determinate op is.  Info ops with the
      same step form a class and are interchangeable, so one per class is
      tried, and the memo keeps per (determinate ops, state) the per-class
      counts of info ops used, pruning a configuration that used at least as
      many of each class as one already seen;
    * right after an info op, an info op that overwrites the whole state is
      not tried (the parent reaches that state with the first one unused);
    * a SET whose value no answer names stores one placeholder value, so
      states that differ only by unread values merge;
    * the check runs in stages without the info SETs (leaving an info op out
      is one of its outcomes, so a pass is a pass).
- A crash is two pseudo-ops per key: "open" at t - persist_window starts
  recording the states the key goes through, "restore" at t picks one of
  them (one successor per recorded state): a "snap" somewhere in the window
  without a search over where it goes.
- A key's search is bounded by a time limit and a configuration count; a key
  that hits a bound is "unknown", never a pass.
- Proofs of anomalies use relaxed sub-histories: ops left out when they
  start after a cut time, replaced by a free initial state when they ended
  before a start time, and made indeterminate otherwise.  Relaxing only
  removes constraints, so a relaxed sub-history that fails proves the whole
  history fails.  A search that stalls is followed by a check of small
  windows ending where it stalled (often an immediate proof); the report
  is the smallest core of determinate ops found by greedy delta debugging.

Runs with /usr/bin/python3 (3.11), standard library only.
Importable: check_history(path_or_lines, time_limit=20.0) -> CheckResult.
Its parts: checker_load.py reads a history, checker_model.py is the model
and each key's sub-ops, checker_search.py the search and delta debugging;
this file names anomalies, reports them and runs the whole.
"""

import argparse
import json
import os
import sys
import time

from checker_load import INF, BadHistory, _int, load_history
from checker_model import _clone_sub, _set_granted, build_keys, model_ops, redis_int
from checker_search import (DEFAULT_MAX_CONFIGS, Budget, _det, _items, _window_fails,
                            check_subs, find_window, minimize)


EXIT_OK = 0
EXIT_ANOMALY = 1
EXIT_UNKNOWN = 2
EXIT_BAD_INPUT = 3

DEFAULT_TIME_LIMIT = 20.0       # seconds of search per key
DEFAULT_GLOBAL_LIMIT = 600.0    # seconds of search for the whole history
MINIMIZE_KEY_BUDGET = 10.0      # seconds of delta debugging per anomalous key
MINIMIZE_TOTAL_BUDGET = 60.0    # seconds of delta debugging per history
REPORT_MAX_OPS = 60             # sub-history lines printed per anomaly


# Anomaly names (README "How to read a report").
A_FAILED_REAPPEARED = "failed write reappeared"
A_NEVER_WRITTEN = "read of a value never written"
A_FUTURE = "read of a value before its write began"
A_DURABLE_CRASH = "durable write lost after crash"
A_LEDGER_CRASH = "ledger write lost beyond the persist window"
# Replicas mode (issue 27, CLUSTER.md §7): with `replicas` >= 1 an owner's
# death promotes an in-sync follower that holds every acknowledged write of
# any class, so no window is allowed: a crash may take back only writes
# whose outcome was unknown.
A_REPLICA_LOST = "acknowledged write lost across an owner kill (replicas)"
A_DOUBLE_NX = "double SET NX"
A_DOUBLE_INCR = "double increment"
A_APPLIED_TWICE = "write applied twice"
A_INCR_TOTAL = "increment total wrong"
A_READ_DELETED = "read of deleted key"
A_OWN_WRITE = "read did not see own write"
A_STALE = "stale read"
A_LOST = "lost write"
A_GENERIC = "not linearizable"


# --------------------------------------------------------------------------
# Naming the anomaly
# --------------------------------------------------------------------------

def _is_delete(u):
    if u.mode != "ok":
        return False
    if u.f == "del":
        return u.out == 1
    if u.f == "getdel":
        return u.out is not None
    if u.f == "expire":
        return u.a["ms"] <= 0 and u.out == 1
    return False


def _written(u):
    """The value an acknowledged op left in the key, or None."""
    if u.mode != "ok":
        return None
    if u.f == "mset":
        return u.writes
    if u.f == "set":
        return u.writes if _set_granted(u.a, u.out) else None
    if u.f == "incrby":
        return u.writes
    return None


def _says_missing(u):
    """An acknowledged answer, other than a read's, that says the key was
    missing."""
    if u.mode != "ok":
        return False
    f, a, out = u.f, u.a, u.out
    if f in ("exists", "del", "expire"):
        return out == 0
    if f == "set" and not a.get("get"):
        return (a.get("nx") and out == "OK") or (a.get("xx") and out is None)
    if f == "incrby":
        return _int(out) and out == a["delta"]
    return False


def _ghost_explains(kh, core, start, cut):
    """True when the relaxed sub-history becomes linearizable once its
    explicitly failed writes may have taken effect."""
    ghosts = {u for u in core if u.mode == "ghost"}
    if not ghosts:
        return False
    r = check_subs(model_ops(_items(kh, set(core) - ghosts, cut, start)),
                   Budget(time.monotonic() + 2.0))
    return r is True


def _crash_explains(kh, core, start, cut):
    """True when the relaxed sub-history becomes linearizable once its
    crashes may lose everything back to the previous restart: the crash lost
    more than the persist window allows."""
    if not any(start <= t <= cut for t, _ in kh.crashes):
        return False
    r = check_subs(model_ops(_items(kh, set(core), cut, start, widen=True)),
                   Budget(time.monotonic() + 2.0))
    return r is True


DUP_BUDGET = 5.0        # seconds for the "applied twice" hypothesis per key


def _dup_explains(kh, core, start, cut):
    """The acknowledged write of the core that, taking effect a second time
    (an indeterminate copy of it, as a retry applied again would be), makes
    the relaxed sub-history linearizable; or None.  Only writes whose second
    application changes something: INCRBY, SET/MSET, DEL that said 1..."""
    t_end = time.monotonic() + DUP_BUDGET
    def disturbed(u):
        return any(a <= u.t1() and b >= u.t0() for a, b in kh.disturbed)

    # The core's writes and the window's relaxed ones (each may apply once).
    near = [u for u in kh.subs if u.op is not None and u.mode == "ok"
            and u.call <= cut and u.t1() >= start]
    cands = [u for u in near if u.f == "incrby" and u.a["delta"] != 0]
    cands += [u for u in near if u.f in ("set", "mset", "del", "getdel")]
    # Only writes in flight across a fault, a crash or a move: a retry.
    cands = [u for u in cands if disturbed(u)]
    # INCRBYs first (their answers pin the count), then the others;
    # retried requests took long: the longest first.
    cands.sort(key=lambda u: (u.f != "incrby", -(u.t1() - u.t0())))
    # First with every answer of the window kept (reads too: the strongest
    # evidence of which write it was), then with the core's only.
    for keep in (set(_det(kh)), set(core)):
        base = _items(kh, keep, cut, start)
        for w in cands:
            if time.monotonic() > t_end:
                return None
            d = _clone_sub(w)
            d.seq = w.seq + 10 ** 9
            d.mode, d.info, d.pure = "info", True, False
            d.rk = (INF, 0, d.seq)
            d.ck = (w.call, 1, d.seq)
            r = check_subs(model_ops(base + [(d, True)]),
                           Budget(min(t_end, time.monotonic() + 0.5)))
            if r is True:
                return w
    return None


def _reduce_dup(kh, core, start, cut, minimal, budget, stats):
    """A core the reduction could not shrink in time (many INCRBYs, each
    relaxed one multiplies the search) is retried in a window that ends at
    the same cut and starts as late as still fails, found by a scan back
    over the calls from the call of the write whose second application
    explains it (where a retry applied twice lives) to the old start (not a
    bisection: the free state at the start makes failure non-monotonic in
    it).  The smaller proof wins."""
    dup = _dup_explains(kh, core, start, cut)
    if dup is None:
        return core, start, cut, minimal
    det = set(_det(kh))
    calls = sorted({u.call for u in det if start < u.call <= dup.call}, reverse=True)
    t_stop = time.monotonic() + budget / 3
    best = None
    for c in calls:
        if time.monotonic() > t_stop:
            break
        if _window_fails(kh, det, cut, c, t_stop, stats):
            best = c
            break
    if best is None:
        return core, start, cut, minimal
    core2, s2, c2, min2 = minimize(kh, budget, stats, window=(best, cut))
    if len(core2) < len(core):
        kh.dup = None
        return core2, s2, c2, min2
    return core, start, cut, minimal


def _rcall(r):
    """When a read began for the naming rules: its call, or the end of its
    client's previous op of the key, which the search orders before it."""
    return max(r.call, r.pred.t1()) if r.pred is not None else r.call


def name_anomaly(kh, core, start, cut, hist_classes):
    """A name for what the core (see minimize) shows; heuristics, in order."""
    ops = list(core)
    readers = [u for u in ops if u.mode == "ok" and (
        u.is_read and u.f == "get" or u.f == "getdel"
        or (u.f == "set" and u.a.get("get")))]
    # 1. A read named a write that failed explicitly, or nobody's write.
    for r in readers:
        v = r.out
        if isinstance(v, str):
            ws = kh.writers.get(v)
            if ws and all(w.mode == "ghost" for w in ws):
                return A_FAILED_REAPPEARED
            if not ws:
                if kh.has_incr and redis_int(v) is not None:
                    return A_INCR_TOTAL
                return A_NEVER_WRITTEN
            if redis_int(v) is None and all(w.t0() > r.t1() for w in ws
                                            if w.mode != "ghost"):
                return A_FUTURE
    # 1b. A write that failed explicitly took effect after all.
    if _ghost_explains(kh, core, start, cut):
        return A_FAILED_REAPPEARED
    # 1b'. Replicas mode: a loss across a kill is what the run is about;
    #      named before "applied twice", which a loss near a crash also
    #      satisfies.
    if hist_classes[kh.cls].get("no_loss") and _crash_explains(kh, core, start, cut):
        return A_REPLICA_LOST
    # 1c. One acknowledged write took effect twice (a retry applied
    #     again: issue 25); tried before the crash rule, which a second
    #     application also satisfies when a crash is near.
    dup = _dup_explains(kh, core, start, cut)
    if dup is not None:
        kh.dup = dup
        return A_APPLIED_TWICE
    # 2. A crash lost more than the window allows.
    if _crash_explains(kh, core, start, cut):
        if hist_classes[kh.cls].get("no_loss"):
            return A_REPLICA_LOST
        if hist_classes[kh.cls]["durability"] == "durable":
            return A_DURABLE_CRASH
        return A_LEDGER_CRASH
    # 3. Two SET NX granted with no delete between them.
    granted = sorted((u for u in ops if u.f == "set" and u.mode == "ok"
                      and u.a.get("nx") and not u.a.get("get")
                      and u.out == "OK"), key=lambda u: u.t0())
    deletes = [u for u in ops if _is_delete(u)]
    for a, b in zip(granted, granted[1:]):
        if not any(d.t1() > a.t0() and d.t0() < b.t1() for d in deletes):
            return A_DOUBLE_NX
    # 4. Counters.
    incs = [u for u in ops if u.f == "incrby" and u.mode == "ok"]
    if incs:
        outs = [u.out for u in incs]
        if len(set(outs)) < len(outs):
            return A_DOUBLE_INCR
        return A_INCR_TOTAL
    # 5. A read that returned a value older than one it had to see: a newer
    #    write was acknowledged, or a newer value read, before it was called.
    def writer(v):
        """The write of a SET value (values name their writes)."""
        if not isinstance(v, str) or redis_int(v) is not None:
            return None
        ws = [w for w in kh.writers.get(v, ()) if w.mode in ("ok", "info")]
        return ws[0] if len(ws) == 1 else None

    # An answer that says the key is missing reads None.
    seen = [(r, r.out) for r in readers] + [(u, None) for u in ops
                                            if _says_missing(u)]
    for r, v in sorted(seen, key=lambda x: x[0].t0()):
        wv = writer(v)
        v_t0 = wv.t0() if wv else -INF
        v_t1 = (wv.t1() if wv.mode == "ok" else INF) if wv else -INF
        if v is not None and any(d.t1() <= _rcall(r) and d.t0() > v_t0
                                 for d in deletes):
            return A_READ_DELETED
        if v is not None and any(
                x is not r and x.t1() <= _rcall(r) and x.call > v_t1 and (
                    x in readers and x.out is None
                    or x.f == "exists" and x.out == 0) for x in ops):
            return A_READ_DELETED
        newer = [(w, _written(w)) for w in ops
                 if w is not r and _written(w) is not None
                 and _written(w) != v and w.t1() <= _rcall(r) and w.t0() > v_t1]
        for r2, v2 in seen:
            # v2 is newer than v when its write began after v's was
            # acknowledged, or when r2 saw it after that acknowledgment.
            w2 = writer(v2)
            if r2 is not r and r2.t1() <= _rcall(r) and v2 != v and \
                    w2 is not None and (w2.t0() > v_t1 or r2.call >= v_t1):
                newer.append((w2, v2))
        if not newer:
            continue
        o, ov = max(newer, key=lambda x: x[0].t1())
        nxt_w = min((w.t0() for w in kh.subs if w.op is not None
                     and w is not o and w.writes is not None
                     and w.mode != "ghost" and w.t0() > o.t0()), default=INF)
        later = [x for x in kh.subs if x.op is not None and x.mode == "ok"
                 and x.f == "get" and x.t0() > r.t1() and x.t1() < nxt_w]
        if any(x.out == ov for x in later):
            return A_OWN_WRITE if o.op.client == r.op.client else A_STALE
        if later or v is None:
            return A_LOST
        if writer(ov) is not None and not any(x.reads == ov
                                              for x in kh.subs):
            return A_LOST       # nobody ever read the acknowledged value
        return A_OWN_WRITE if o.op.client == r.op.client else A_STALE
    # 6. Reads alone that cannot agree: one of them saw an overwritten value.
    if len({r.out for r in readers}) > 1 and all(u.pure for u in ops):
        return A_STALE
    return A_GENERIC


# --------------------------------------------------------------------------
# Results and reports
# --------------------------------------------------------------------------

class Anomaly:
    def __init__(self, key, name, cls, durability, owner, ops, crashes,
                 faults, minimal, t_zero):
        self.key = key
        self.name = name
        self.cls = cls
        self.durability = durability
        self.owner = owner
        self.ops = ops              # list of Op (each once)
        self.crashes = crashes      # (crash time, owner)
        self.faults = faults        # fault dicts
        self.minimal = minimal
        self.t_zero = t_zero
        self.relaxed = 0            # other ops of the key taken as info
        self.cut = INF              # ops starting after it were left out
        self.start = -INF           # ops acknowledged before it too
        self.dup = None             # the Op whose second application explains the core

    def to_dict(self):
        z = self.t_zero
        return {"key": self.key, "name": self.name, "class": self.cls,
                "durability": self.durability, "owner": self.owner,
                "minimal": self.minimal, "relaxed": self.relaxed,
                "cut": None if self.cut == INF else round(self.cut - z, 6),
                "start": None if self.start == -INF else
                round(self.start - z, 6),
                "ops": [o.to_dict(z) for o in self.ops],
                "crashes": [round(t - z, 6) for t, _ in self.crashes],
                "applied_twice": self.dup.id if self.dup is not None else None,
                "faults": [_fault_dict(f, z) for f in self.faults]}

    def text(self):
        z = self.t_zero
        lines = ["ANOMALY %s (class %s, %s, owner %s): %s"
                 % (self.key, self.cls, self.durability, self.owner, self.name),
                 "  sub-history: %d ops%s" % (
                     len(self.ops), "" if self.minimal else
                     " (reduction stopped at its time bound: may not be minimal)")]
        for o in self.ops[:REPORT_MAX_OPS]:
            lines.append("    " + _op_text(o, z) +
                         ("   <- applied twice?" if o is self.dup else ""))
        if len(self.ops) > REPORT_MAX_OPS:
            lines.append("    ... %d more" % (len(self.ops) - REPORT_MAX_OPS))
        if self.relaxed:
            lines.append("  with %d other ops of the key%s%s taken as "
                         "indeterminate (answers ignored)" % (
                             self.relaxed,
                             "" if self.start == -INF else
                             " acknowledged after %+.6f" % (self.start - z),
                             "" if self.cut == INF else
                             " started by %+.6f" % (self.cut - z)))
        if self.start != -INF:
            lines.append("  and the key in any state at %+.6f"
                         % (self.start - z))
        if self.dup is not None:
            lines.append("  linearizable if op id %d took effect a second time (a retry applied "
                         "again)" % self.dup.id)
        for t, o in self.crashes:
            lines.append("  crash of %s at %+.6f" % (o, t - z))
        for f in self.faults:
            lines.append("  fault %s %s %+.6f..%+.6f%s" % (
                f["f"], f["target"], f["t0"] - z, f["t1"] - z,
                " " + json.dumps(f["detail"], sort_keys=True)
                if f["detail"] else ""))
        return "\n".join(lines)


def _fault_dict(f, z):
    return {"f": f["f"], "target": f["target"], "t0": round(f["t0"] - z, 6),
            "t1": round(f["t1"] - z, 6), "detail": f["detail"],
            "line": f["line"]}


def _op_text(o, z):
    keys = ",".join(o.keys)
    args = " " + json.dumps(o.args, sort_keys=True) if o.args else ""
    if o.outcome == "ok":
        res = "-> " + json.dumps(o.value)
    elif o.outcome == "fail":
        res = "-> error " + json.dumps(o.error)
    else:
        res = "-> ?"
    flags = "".join([" stale" if o.stale else "",
                     " degraded" if o.degraded else "",
                     " cached" if o.cached else ""])
    t1 = "%+.6f" % (o.t1 - z)
    if o.outcome == "info":
        t1 += "(gave up)"
    return "id %s c%s %s %s%s %s [%s%s] %+.6f..%s" % (
        o.id, o.client, o.f, keys, args, res, o.outcome, flags, o.t0 - z, t1)


class CheckResult:
    """What check_history found.  verdicts: key -> 'ok' | 'anomaly' |
    'unknown'.  exit_code follows the CLI's codes (0, 1, 2)."""

    def __init__(self):
        self.path = None
        self.ops = 0
        self.keys = 0
        self.keys_checked = 0
        self.verdicts = {}
        self.anomalies = []
        self.unknown = []
        self.seconds = 0.0
        self.configs = 0
        self.replicas = 0

    @property
    def exit_code(self):
        if self.anomalies:
            return EXIT_ANOMALY
        if self.unknown:
            return EXIT_UNKNOWN
        return EXIT_OK

    def summary(self):
        return ("ops %d, keys %d, keys checked %d, anomalies %d, unknown %d, "
                "%.2f s%s" % (self.ops, self.keys, self.keys_checked,
                              len(self.anomalies), len(self.unknown),
                              self.seconds,
                              ", replicas %d: no loss across a crash"
                              % self.replicas if self.replicas else ""))

    def report(self, quiet=False):
        lines = []
        for a in self.anomalies:
            lines.append(("ANOMALY %s: %s" % (a.key, a.name)) if quiet
                         else a.text())
        if self.unknown:
            lines.append("UNKNOWN (search bound hit): " +
                         " ".join(sorted(self.unknown)))
        lines.append(self.summary())
        return "\n".join(lines)

    def to_dict(self):
        return {"path": self.path, "ops": self.ops, "keys": self.keys,
                "keys_checked": self.keys_checked,
                "anomalies": [a.to_dict() for a in self.anomalies],
                "unknown": sorted(self.unknown), "verdicts": self.verdicts,
                "seconds": round(self.seconds, 3), "exit": self.exit_code,
                "replicas": self.replicas}


def _make_anomaly(hist, kh, core, start, cut, minimal):
    name = name_anomaly(kh, core, start, cut, hist.classes)
    # The explicitly failed writes of the values the core read: the proof
    # says nobody else could have written them.
    extra = []
    for u in core:
        ws = kh.writers.get(u.reads) if u.reads is not None else None
        if ws and all(w.mode == "ghost" for w in ws):
            extra.extend(ws)
    if kh.dup is not None:
        extra.append(kh.dup)
    seen = set()
    ops = []
    for u in sorted(list(core) + extra, key=lambda x: (x.t0(), x.seq)):
        if id(u.op) not in seen:
            seen.add(id(u.op))
            ops.append(u.op)
    if ops:
        lo = min(o.t0 for o in ops)
        hi = max(o.t1 for o in ops)
    else:
        lo, hi = -INF, INF
    others = {id(u.op) for u in kh.subs if u.op is not None
              and u.t0() <= cut and u.t1() >= start} - seen
    crashes = [(t, kh.crash_owner.get(n, kh.owner)) for t, n in kh.crashes
               if max(lo, start) <= t <= cut]
    faults = [f for f in hist.faults if f["t0"] <= hi and f["t1"] >= lo]
    cls = hist.classes[kh.cls]
    a = Anomaly(kh.key, name, kh.cls, cls["durability"], kh.owner, ops,
                crashes, faults, minimal, hist.t_zero)
    a.relaxed = len(others)
    a.dup = kh.dup.op if kh.dup is not None else None
    # "Any state at start" only when ops ended before it (see _items).
    if any(u.op is not None and u.t1() < start for u in kh.subs):
        a.start = start
    a.cut = cut
    return a


def check_history(path_or_lines, time_limit=DEFAULT_TIME_LIMIT,
                  global_limit=DEFAULT_GLOBAL_LIMIT, minimize_ops=True,
                  max_configs=DEFAULT_MAX_CONFIGS, replicas=None):
    """Checks a history (a path, or an iterable of JSON lines or dicts).
    replicas: None = the header's (default 0); >= 1 = replicas mode (no
    loss across a crash, see History.set_replicas).  Raises BadHistory on
    a malformed history."""
    start = time.monotonic()
    hist = load_history(path_or_lines)
    if replicas is not None:
        hist.set_replicas(replicas)
    res = CheckResult()
    res.replicas = hist.replicas
    if isinstance(path_or_lines, (str, os.PathLike)):
        res.path = os.fspath(path_or_lines)
    res.ops = len(hist.ops)
    khs = build_keys(hist)
    res.keys = len({k for o in hist.ops for k in o.keys})
    global_end = start + global_limit
    min_end = None
    stats = {}
    for key in sorted(khs):
        kh = khs[key]
        now = time.monotonic()
        deadline = min(now + time_limit, global_end)
        # A short search first; if it stalls, a small window ending where it
        # stalled may prove an anomaly at once; else the whole search.
        quick = min(deadline, now + max(0.5, time_limit / 10))
        model = kh.model()
        r = check_subs(model, Budget(quick, max_configs), stats)
        frontier = stats.get("frontier", INF)
        window = None
        if r is None and time.monotonic() < deadline:
            window = find_window(kh, frontier, min(
                deadline, time.monotonic() + max(0.5, time_limit / 10)))
            if window is not None:
                r = False
            else:
                r = check_subs(model, Budget(deadline, max_configs), stats)
                frontier = stats.get("frontier", INF)
        if r is None:
            res.verdicts[key] = "unknown"
            res.unknown.append(key)
            continue
        res.keys_checked += 1
        if r:
            res.verdicts[key] = "ok"
            continue
        res.verdicts[key] = "anomaly"
        if min_end is None:
            min_end = time.monotonic() + MINIMIZE_TOTAL_BUDGET
        b = min(MINIMIZE_KEY_BUDGET, max(time_limit, MINIMIZE_KEY_BUDGET),
                max(0.0, min_end - time.monotonic()))
        if minimize_ops and b > 0:
            core, w_start, cut, minimal = minimize(kh, b, stats, frontier,
                                                   window)
        else:
            w_start, cut = window if window else (-INF, INF)
            core = sorted((u for u in _det(kh)
                           if u.call >= w_start and u.t1() <= cut),
                          key=lambda u: (u.t0(), u.seq))
            minimal = False
            if not minimal and len(core) > 12:
                core, w_start, cut, minimal = _reduce_dup(kh, core, w_start, cut,
                                                          minimal, b, stats)
        res.anomalies.append(_make_anomaly(hist, kh, core, w_start, cut,
                                           minimal))
    res.configs = stats.get("configs", 0)
    res.seconds = time.monotonic() - start
    return res


def main(argv=None):
    global MINIMIZE_KEY_BUDGET, MINIMIZE_TOTAL_BUDGET
    ap = argparse.ArgumentParser(
        description="Check a hotkvd history (JSON Lines, format v1) for "
        "linearizability per key.  Exit 0: no anomaly and no unknown; "
        "1: anomalies; 2: unknown keys (no anomaly); 3: bad input.")
    ap.add_argument("history")
    ap.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT,
                    help="seconds of search per key (default %(default)s)")
    ap.add_argument("--global-limit", type=float, default=DEFAULT_GLOBAL_LIMIT,
                    help="seconds of search in all (default %(default)s)")
    ap.add_argument("--max-configs", type=int, default=DEFAULT_MAX_CONFIGS,
                    help="memoized configurations per key search, a memory "
                    "bound (default %(default)s)")
    ap.add_argument("--replicas", type=int, default=None,
                    help="replicas mode when >= 1: no acknowledged write of any class "
                    "may be lost across an owner kill (default: the header's, else 0)")
    ap.add_argument("--json", metavar="OUT", help="write the result as JSON")
    ap.add_argument("--quiet", action="store_true",
                    help="no sub-histories: anomaly names and the summary")
    ap.add_argument("--reduce-limit", type=float, default=MINIMIZE_KEY_BUDGET,
                    help="seconds of reduction (delta debugging) per anomalous key; "
                    "the history's total is 6 times it (default %(default)s)")
    args = ap.parse_args(argv)
    MINIMIZE_KEY_BUDGET = args.reduce_limit
    MINIMIZE_TOTAL_BUDGET = max(MINIMIZE_TOTAL_BUDGET, 6 * args.reduce_limit)
    try:
        res = check_history(args.history, time_limit=args.time_limit,
                            global_limit=args.global_limit,
                            max_configs=args.max_configs,
                            replicas=args.replicas)
    except BadHistory as e:
        print("%s: bad input: %s" % (args.history, e), file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as e:
        print("%s: %s" % (args.history, e), file=sys.stderr)
        return EXIT_BAD_INPUT
    print(res.report(quiet=args.quiet))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(res.to_dict(), fh, indent=1)
            fh.write("\n")
    return res.exit_code


if __name__ == "__main__":
    sys.exit(main())
