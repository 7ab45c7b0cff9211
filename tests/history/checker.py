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
"""

import argparse
import bisect
import json
import os
import re
import sys
import time

INF = float("inf")
INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1
HOUR_MS = 3600 * 1000

EXIT_OK = 0
EXIT_ANOMALY = 1
EXIT_UNKNOWN = 2
EXIT_BAD_INPUT = 3

DEFAULT_TIME_LIMIT = 20.0       # seconds of search per key
DEFAULT_GLOBAL_LIMIT = 600.0    # seconds of search for the whole history
DEFAULT_MAX_CONFIGS = 1000000   # memoized configurations per key search
#                                 (about 450 MB for a key of 3000 ops)
MINIMIZE_KEY_BUDGET = 10.0      # seconds of delta debugging per anomalous key
MINIMIZE_TOTAL_BUDGET = 60.0    # seconds of delta debugging per history
# One check of the reduction: a relaxed core that takes longer (hundreds of
# INCRBYs made indeterminate multiply the search) is kept, not waited for.
CHECK_BUDGET = 0.5
REPORT_MAX_OPS = 60             # sub-history lines printed per anomaly

READ_FS = ("get", "exists", "mget")
SINGLE_FS = ("get", "exists", "set", "getdel", "del", "incrby", "expire",
             "persist")
MULTI_FS = ("mset", "mget")

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


class BadHistory(ValueError):
    """The history breaks the format; line is 1-based (0: the file as a whole)."""

    def __init__(self, line, msg):
        ValueError.__init__(self, "line %d: %s" % (line, msg))
        self.line = line
        self.msg = msg


# --------------------------------------------------------------------------
# Reading a history
# --------------------------------------------------------------------------

class Op:
    """One operation line, as recorded."""
    __slots__ = ("line", "id", "client", "colo", "edge", "f", "keys", "args",
                 "value", "error", "outcome", "t0", "t1", "stale", "degraded",
                 "cached")

    def to_dict(self, t_zero):
        d = {"id": self.id, "client": self.client, "f": self.f,
             "outcome": self.outcome, "t0": round(self.t0 - t_zero, 6),
             "t1": round(self.t1 - t_zero, 6), "line": self.line}
        if self.f in MULTI_FS:
            d["keys"] = list(self.keys)
        else:
            d["key"] = self.keys[0]
        if self.args:
            d["args"] = self.args
        if self.outcome == "ok":
            d["value"] = self.value
        elif self.outcome == "fail":
            d["error"] = self.error
        if self.stale:
            d["stale"] = True
        if self.degraded:
            d["degraded"] = True
        if self.cached:
            d["cached"] = True
        return d


class History:
    def __init__(self):
        self.header = None
        self.classes = {}
        self.keys = {}          # key -> {"class":..., "owner":...}
        self.ops = []
        self.faults = []        # dicts with line numbers
        self.crashes = []       # (t, owner, line)
        self.moves = []         # (t0, t1, keys, from, to, line)
        self.t_zero = 0.0
        self.replicas = 0       # the header's "replicas" (or --replicas)

    def set_replicas(self, n):
        """Replicas mode: with n >= 1 no class has a persist window (an
        owner kill loses no acknowledged write), and a loss is named
        A_REPLICA_LOST."""
        self.replicas = n
        for c in self.classes.values():
            c.setdefault("header_window", c["persist_window"])
            c["persist_window"] = 0.0 if n >= 1 else c["header_window"]
            c["no_loss"] = n >= 1

    def owner_spans(self, key):
        """[(owner, from, to)]: who may own key when.  The header's owner
        until the first move's t1; a move's target from its t0 (during a
        move both may hold the key); then the next move, ..."""
        spans = []
        cur, since = self.keys[key]["owner"], -INF
        for t0, t1, keys, frm, to, _ in sorted(m for m in self.moves if key in m[2]):
            if frm != cur:
                spans.append((frm, since, t1))    # a move the runner did not see
            spans.append((cur, since, t1))
            cur, since = to, t0
        spans.append((cur, since, INF))
        return spans

    def crashes_of_key(self, key):
        """[(t, owner, line)] of the crashes of an owner that may have held
        key at that time, in time order."""
        spans = self.owner_spans(key)
        return [(t, o, n) for t, o, n in sorted(self.crashes)
                if any(so == o and a <= t <= b for so, a, b in spans)]


def _num(obj, field, line, allow_none=False):
    v = obj.get(field)
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadHistory(line, "%s must be a number" % field)
    if v != v or v in (INF, -INF):
        raise BadHistory(line, "%s must be finite" % field)
    return float(v)


def _int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _str_or_none(v):
    return v is None or isinstance(v, str)


def _iter_lines(src):
    """Yields (line number, parsed object) from a path or an iterable of lines
    (str or already-parsed dict)."""
    if isinstance(src, (str, bytes, os.PathLike)):
        with open(src, "r", encoding="utf-8") as fh:
            yield from _iter_lines(list(fh))
        return
    for n, raw in enumerate(src, 1):
        if isinstance(raw, dict):
            yield n, raw
            continue
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8")
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as e:
            raise BadHistory(n, "not JSON: %s" % e)
        if not isinstance(obj, dict):
            raise BadHistory(n, "not a JSON object")
        yield n, obj


def _parse_header(obj, n, hist):
    if obj.get("version") != 1:
        raise BadHistory(n, "header version must be 1")
    classes = obj.get("classes")
    keys = obj.get("keys")
    if not isinstance(classes, dict) or not isinstance(keys, dict):
        raise BadHistory(n, "header needs objects 'classes' and 'keys'")
    for name, c in classes.items():
        if not isinstance(c, dict):
            raise BadHistory(n, "class %r is not an object" % name)
        for f in ("persist_window_ms", "read_delta_ms", "stale_delta_ms",
                  "crash_read_delta_ms", "cached_delta_ms"):
            v = c.get(f, 0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise BadHistory(n, "class %r: %s must be a number >= 0"
                                 % (name, f))
        hist.classes[name] = {
            "durability": c.get("durability", "ledger"),
            "persist_window": c.get("persist_window_ms", 0) / 1000.0,
            "read_delta": c.get("read_delta_ms", 0) / 1000.0,
            "stale_delta": c.get("stale_delta_ms", 0) / 1000.0,
            "crash_read_delta": c.get("crash_read_delta_ms", 0) / 1000.0,
            # A read a tracking client answered from its own cache (issue
            # 28): as old as the tracking promise's bound; absent = the
            # class's read_delta (no more slack than a server read).
            "cached_delta": c.get("cached_delta_ms",
                                  c.get("read_delta_ms", 0)) / 1000.0,
        }
    for k, v in keys.items():
        if not isinstance(v, dict) or v.get("class") not in hist.classes:
            raise BadHistory(n, "key %r: class missing or not in 'classes'" % k)
        if not isinstance(v.get("owner"), str):
            raise BadHistory(n, "key %r: owner must be a string" % k)
        hist.keys[k] = {"class": v["class"], "owner": v["owner"]}
    replicas = obj.get("replicas", 0)
    if not _int(replicas) or replicas < 0:
        raise BadHistory(n, "header replicas must be an integer >= 0")
    hist.set_replicas(replicas)
    hist.header = obj


def _check_args(op, n):
    a = op.args
    f = op.f
    if f == "set":
        if not isinstance(a.get("value"), str):
            raise BadHistory(n, "set needs args.value (string)")
        if a.get("ifeq") is not None and (not isinstance(a["ifeq"], str) or
                                          a.get("nx") or a.get("xx")):
            raise BadHistory(n, "set ifeq must be a string, without nx or xx")
        px = a.get("px")
        if px is not None and (not _int(px) or px < HOUR_MS):
            raise BadHistory(n, "set px must be null or an integer >= 1 hour "
                             "(the model has no expiry)")
    elif f == "incrby":
        if not _int(a.get("delta")):
            raise BadHistory(n, "incrby needs args.delta (integer)")
    elif f == "expire":
        ms = a.get("ms")
        if not _int(ms) or 0 < ms < HOUR_MS:
            raise BadHistory(n, "expire ms must be an integer <= 0 or >= 1 hour "
                             "(the model has no expiry)")
    elif f == "mset":
        vals = a.get("values")
        if (not isinstance(vals, list) or len(vals) != len(op.keys)
                or not all(isinstance(v, str) for v in vals)):
            raise BadHistory(n, "mset args.values must be strings, one per key")


def _check_value(op, n):
    v = op.value
    f = op.f
    ok = True
    if f in ("get", "getdel"):
        ok = _str_or_none(v)
    elif f == "set":
        ok = _str_or_none(v)
    elif f in ("exists", "del", "expire", "persist", "incrby"):
        ok = _int(v)
    elif f == "mset":
        ok = isinstance(v, str)
    elif f == "mget":
        ok = (isinstance(v, list) and len(v) == len(op.keys)
              and all(_str_or_none(x) for x in v))
    if not ok:
        raise BadHistory(n, "%s with outcome ok has a value of the wrong type: %r"
                         % (f, v))


def _parse_op(obj, n, hist):
    op = Op()
    op.line = n
    op.id = obj.get("id")
    op.client = obj.get("client")
    if not _int(op.client):
        raise BadHistory(n, "client must be an integer")
    op.colo = obj.get("colo")
    op.edge = obj.get("edge")
    op.f = obj.get("f")
    if op.f in MULTI_FS:
        keys = obj.get("keys")
        if not isinstance(keys, list) or not keys or \
                not all(isinstance(k, str) for k in keys):
            raise BadHistory(n, "%s needs a non-empty list 'keys'" % op.f)
        op.keys = keys
    elif op.f in SINGLE_FS:
        if not isinstance(obj.get("key"), str):
            raise BadHistory(n, "%s needs a string 'key'" % op.f)
        op.keys = [obj["key"]]
    else:
        raise BadHistory(n, "unknown op f %r" % (op.f,))
    for k in op.keys:
        if k not in hist.keys:
            raise BadHistory(n, "key %r is not in the header's keys" % k)
    op.args = obj.get("args") or {}
    if not isinstance(op.args, dict):
        raise BadHistory(n, "args must be an object")
    _check_args(op, n)
    op.outcome = obj.get("outcome")
    if op.outcome not in ("ok", "fail", "info"):
        raise BadHistory(n, "outcome must be ok, fail or info")
    op.t0 = _num(obj, "t0", n)
    t1 = _num(obj, "t1", n, allow_none=(op.outcome == "info"))
    op.t1 = op.t0 if t1 is None else t1
    if op.t1 < op.t0:
        raise BadHistory(n, "t1 is before t0")
    op.value = obj.get("value")
    op.error = obj.get("error")
    if op.outcome == "ok":
        _check_value(op, n)
    elif op.outcome == "fail" and not isinstance(op.error, str):
        raise BadHistory(n, "outcome fail needs an error string")
    op.stale = bool(obj.get("stale", False))
    op.degraded = bool(obj.get("degraded", False))
    op.cached = bool(obj.get("cached", False))
    if op.cached and op.f not in ("get", "mget"):
        raise BadHistory(n, "only get and mget may be cached (a tracking "
                         "client's own cache answers reads)")
    return op


def load_history(src):
    """Parses a history; raises BadHistory with the line number."""
    hist = History()
    for n, obj in _iter_lines(src):
        kind = obj.get("kind")
        if hist.header is None:
            if kind != "header":
                raise BadHistory(n, "the first line must be the header")
            _parse_header(obj, n, hist)
        elif kind == "op":
            hist.ops.append(_parse_op(obj, n, hist))
        elif kind == "fault":
            if not isinstance(obj.get("f"), str):
                raise BadHistory(n, "fault needs a string f")
            t0 = _num(obj, "t0", n)
            t1 = _num(obj, "t1", n, allow_none=True)
            hist.faults.append({"line": n, "f": obj["f"],
                                "target": obj.get("target"), "t0": t0,
                                "t1": t0 if t1 is None else max(t0, t1),
                                "detail": obj.get("detail")})
        elif kind == "crash":
            if not isinstance(obj.get("owner"), str):
                raise BadHistory(n, "crash needs a string owner")
            hist.crashes.append((_num(obj, "t", n), obj["owner"], n))
        elif kind == "move":
            keys, frm, to = obj.get("keys"), obj.get("from"), obj.get("to")
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                raise BadHistory(n, "move needs a list of keys")
            bad = [k for k in keys if k not in hist.keys]
            if bad:
                raise BadHistory(n, "move names key %r, not in the header" % bad[0])
            if not isinstance(frm, str) or not isinstance(to, str):
                raise BadHistory(n, "move needs string from and to")
            t0 = _num(obj, "t0", n)
            t1 = _num(obj, "t1", n)
            if t1 < t0:
                raise BadHistory(n, "t1 is before t0")
            hist.moves.append((t0, t1, keys, frm, to, n))
        elif kind == "header":
            raise BadHistory(n, "a second header")
        else:
            raise BadHistory(n, "unknown line kind %r" % (kind,))
    if hist.header is None:
        raise BadHistory(0, "empty history (no header)")
    times = [o.t0 for o in hist.ops] + [c[0] for c in hist.crashes] + \
        [f["t0"] for f in hist.faults]
    hist.t_zero = min(times) if times else 0.0
    return hist


# --------------------------------------------------------------------------
# The model: one Redis string key.  State = (value, has_ttl, saved) where
# saved is None, or between a crash's "open" and "restore" the frozenset of
# the (value, has_ttl) the key went through since "open" (the search adds
# each new state to it).
# Each step function returns the next state, or None when the recorded
# answer is impossible from this state.  A step that changes nothing returns
# its argument itself (the search relies on "is" for that).
# --------------------------------------------------------------------------

INIT_STATE = (None, False, None)
_INT_RE = re.compile(r"0|-?[1-9][0-9]{0,19}")


def redis_int(s):
    """Redis string2ll: the value as an int, or None when it is not one."""
    if not _INT_RE.fullmatch(s):
        return None
    n = int(s)
    if n < INT64_MIN or n > INT64_MAX:
        return None
    return n


def _incr_error(old, delta):
    """(error kind or None, new int)."""
    if old is None:
        n = 0
    else:
        n = redis_int(old)
        if n is None:
            return "not integer", None
    r = n + delta
    if r < INT64_MIN or r > INT64_MAX:
        return "overflow", None
    return None, r


def error_kind(msg):
    """Which model error a server error message is, or None."""
    m = msg.lower()
    if "not an integer" in m:
        return "not integer"
    if "overflow" in m:
        return "overflow"
    return None


# The model value of a write whose value no answer names: every such write
# leaves this one value, so states that differ only by unread values merge.
# Not a valid integer, like the values it stands for.
UNREAD = "\x00unread\x00"


def _mk_step(f, a, out, mode, mval=None):
    """mode: 'ok' (out must match), 'info' (out unconstrained) or 'err' (out is
    the model error kind the op must produce).  mval: the value a set/mset
    stores in the model (its own, or UNREAD)."""
    chk = mode == "ok"
    if f == "get":
        def step(s):
            return s if s[0] == out else None
    elif f == "exists":
        if out == 1:
            def step(s):
                return s if s[0] is not None else None
        elif out == 0:
            def step(s):
                return s if s[0] is None else None
        else:
            def step(s):
                return None
    elif f == "set":
        v = mval
        nx = bool(a.get("nx"))
        xx = bool(a.get("xx"))
        ifeq = a.get("ifeq")  # a compare-and-set: only over exactly that value
        get = bool(a.get("get"))
        keepttl = bool(a.get("keepttl"))
        px = a.get("px") is not None

        def step(s):
            old = s[0]
            cond = not ((nx and old is not None) or (xx and old is None) or
                        (ifeq is not None and old != ifeq))
            if chk:
                if get:
                    if out != old:
                        return None
                elif out != ("OK" if cond else None):
                    return None
            if not cond:
                return s
            return (v, px or (keepttl and s[1]), s[2])
    elif f == "mset":
        v = mval

        def step(s):
            if chk and out != "OK":
                return None
            return (v, False, s[2])
    elif f == "getdel":
        def step(s):
            if chk and out != s[0]:
                return None
            if s[0] is None:
                return s
            return (None, False, s[2])
    elif f == "del":
        def step(s):
            if s[0] is None:
                return None if chk and out != 0 else s
            if chk and out != 1:
                return None
            return (None, False, s[2])
    elif f == "incrby":
        d = a["delta"]
        if mode == "err":
            def step(s):
                return s if _incr_error(s[0], d)[0] == out else None
        else:
            def step(s):
                err, r = _incr_error(s[0], d)
                if err is not None:
                    return None if chk else s
                if chk and r != out:
                    return None
                return (str(r), s[1], s[2])
    elif f == "expire":
        ms = a["ms"]

        def step(s):
            if s[0] is None:
                return None if chk and out != 0 else s
            if chk and out != 1:
                return None
            if ms <= 0:
                return (None, False, s[2])
            return s if s[1] else (s[0], True, s[2])
    elif f == "persist":
        def step(s):
            if s[0] is not None and s[1]:
                return None if chk and out != 1 else (s[0], False, s[2])
            return None if chk and out != 0 else s
    elif f == "open":
        def step(s):
            return (s[0], s[1], frozenset(((s[0], s[1]),)))
    elif f == "restore":
        def step(s):
            # Several successors: one per state recorded since "open".
            sv = s[2]
            if sv is None:
                return None
            return [(v, ttl, None) for v, ttl in
                    sorted(sv, key=lambda x: (x[0] is None, x[0] or "", x[1]))]
    else:
        raise AssertionError(f)
    return step


# --------------------------------------------------------------------------
# Per-key sub-ops
# --------------------------------------------------------------------------

class Sub:
    """One key's share of an op (or a crash pseudo-op).

    mode: ok / info / err (kept, see _mk_step), ghost (an explicitly failed
    write: not in the model, as it had no effect, unless relaxed), open,
    restore.  ck/rk are the sort keys of the call and return events."""
    __slots__ = ("seq", "op", "key", "f", "a", "out", "mode", "call", "ret",
                 "ck", "rk", "info", "reads", "writes", "is_read", "crash",
                 "fixed", "pure", "pred")

    def t0(self):
        return self.op.t0 if self.op else self.call

    def t1(self):
        return self.op.t1 if self.op else self.ret


class KeyHistory:
    def __init__(self, key, cls, owner):
        self.key = key
        self.cls = cls
        self.owner = owner
        self.subs = []          # every Sub, ghosts and crash pseudo-ops too
        self.crashes = []       # crash times for this key's owner(s)
        self.crash_owner = {}   # crash line -> the owner that crashed
        self.dup = None         # naming: the write whose second application explains
        self.disturbed = []     # (t0, t1) of every fault, crash and move: retries happen there
        self.writers = {}       # value -> [Sub] (set/mset incl. ghost/info,
        #                         and incrby ok results as strings)
        self.has_incr = False
        self.cache = {}         # derived lists of the reductions (_cached)

    def model(self):
        """The search's ops for the whole key history."""
        return model_ops([(u, False) for u in self.subs])


def _new_sub(kh, seq, op, f, a, out, mode, call, ret):
    u = Sub()
    u.seq = seq
    u.op = op
    u.key = kh.key
    u.f = f
    u.a = a
    u.out = out
    u.mode = mode
    u.call = call
    u.ret = ret
    u.info = mode == "info"
    u.is_read = f in READ_FS
    u.crash = None
    u.fixed = False
    u.reads = None      # the value string this op's answer names
    u.writes = None     # the value string this op may leave in the key
    u.pure = _pure(f, a, out, mode)
    u.pred = None       # a read: the same client's op of the key just before
    if mode == "info":
        u.rk = (INF, 0, seq)
    elif ret > call:
        u.rk = (ret, 0, seq)
    else:
        u.rk = (call, 2, seq)
    u.ck = (call, 1, seq)
    kh.subs.append(u)
    return u


def _set_granted(a, out):
    """Whether an acknowledged SET stored its value, from its answer."""
    if a.get("get") and a.get("ifeq") is not None:
        return out == a["ifeq"]
    if a.get("get"):
        if a.get("nx"):
            return out is None
        if a.get("xx"):
            return out is not None
        return True
    return out == "OK"


def _pure(f, a, out, mode):
    """True when every state in which the op's answer is possible is left
    unchanged by it: such an op can be linearized as early as it fits."""
    if mode == "err":
        return True
    if mode != "ok":
        return False
    if f in ("get", "exists"):
        return True
    if f in ("del", "expire", "persist"):
        return out == 0
    if f == "getdel":
        return out is None
    if f == "set":
        if not a.get("get"):
            return out is None
        if a.get("ifeq") is not None:
            return out != a["ifeq"]
        return (a.get("nx") and out is not None) or (a.get("xx") and out is None)
    return False


class MOp:
    """What the search needs of one op: the sort keys of its call and return
    events, its step function and flags (see linearizable())."""
    __slots__ = ("ck", "rk", "step", "info", "pure", "blind", "icls", "multi",
                 "pred")


def _info_class(f, a, mval):
    """Two pending info ops of one class are interchangeable (same step,
    both returning at +inf), so the search tries one of them."""
    if f in ("del", "getdel") or (f == "expire" and a["ms"] <= 0):
        return ("delete",)
    if f in ("expire", "persist"):
        return (f,)
    if f == "incrby":
        return ("incrby", a["delta"])
    if f == "mset":
        return ("set", False, False, False, False, None, mval)
    return ("set", bool(a.get("nx")), bool(a.get("xx")),
            bool(a.get("keepttl")), a.get("px") is not None, a.get("ifeq"), mval)


def _init_step(read, allowed):
    """The free initial state of a sub-history that starts late: missing, or
    any value an answer names that an op called before the start could have
    written, or an unread value, or an integer such an op wrote, with or
    without a TTL."""
    vals = {v for v in read if v in allowed or (
        allowed.get("*int") and redis_int(v) is not None)}
    # An integer is never UNREAD in the model (INCRBY tells them apart).
    vals |= {v for v in allowed if v != "*int" and redis_int(v) is not None}
    vals = [None, UNREAD] + sorted(vals)
    states = [(v, ttl, None) for v in vals for ttl in (False, True)
              if v is not None or not ttl]

    def step(s):
        return states
    return step


def model_ops(items):
    """items: (Sub, relaxed) pairs.  Returns the MOps of the search.

    A relaxed op is taken as indeterminate: its answer is ignored and it may
    take effect at any time after its call, or never (a relaxed op that
    changes nothing, a read, is left out).  Relaxing only removes
    constraints, so a relaxed history that is not linearizable proves the
    original is not.  Explicitly failed writes (ghosts) are not in the model
    unless relaxed.  A SET whose value no determinate answer names stores
    UNREAD, so states that differ only by such values merge."""
    read = set()
    for u, rel in items:
        if not rel and u.reads is not None and u.mode == "ok":
            read.add(u.reads)
        if u.f == "set" and u.a.get("ifeq") is not None:
            # a compare-and-set tells the value it compares with from others
            read.add(u.a["ifeq"])
    res = []
    mop_of = {}
    for u, rel in items:
        mode = u.mode
        if rel and not u.fixed:
            if u.pure:
                continue
            mode = "info"
        if mode == "ghost":
            continue
        f = u.f
        a = u.a
        mval = None
        if f in ("set", "mset"):
            mval = a["value"]
            if mval not in read and redis_int(mval) is None:
                mval = UNREAD
        m = MOp()
        m.ck = u.ck
        if f == "init":
            m.step = _init_step(read, a)
        else:
            m.step = _mk_step(f, a, u.out, mode, mval)
        m.info = mode == "info"
        m.multi = f in ("restore", "init")
        m.pure = not m.info and u.pure
        if m.info:
            m.rk = (INF, 0, u.seq)
            m.icls = _info_class(f, a, mval)
            # Its next state does not depend on the state.
            m.blind = (f in ("mset", "del", "getdel")
                       or f == "expire" and a["ms"] <= 0
                       or f == "set" and not (a.get("nx") or a.get("xx") or a.get("ifeq")
                                              or a.get("keepttl")))
        else:
            m.rk = u.rk
            m.icls = None
            m.blind = False
        m.pred = u.pred
        mop_of[id(u)] = m
        res.append(m)
    # A read follows its client's previous op of the key (see build_keys)
    # only while that op is determinate here: relaxing it drops the order.
    for m in res:
        p = mop_of.get(id(m.pred)) if m.pred is not None else None
        m.pred = p if p is not None and not p.info else None
    return res


def _sets_floor(u):
    """Whether a client's later reads of u's key must not see a state older
    than u's: reads, and writes that changed the key or may have.  A write
    that changed nothing (PERSIST, EXPIRE or DEL answered 0, an INCRBY of a
    value that is not an integer) leaves the colo cache as it was: hotkvd
    promises read-your-writes and monotonic reads, not that a no-op makes
    the cache catch up with the owner.  Nor does a write without an answer
    (indeterminate): the edge updates the colo cache on the owner's OK only,
    so a later read may still come from a cache that is behind, within its
    delta (a stale-flagged read while the owner's host is cut off), ordered
    after the client's last determinate op of the key."""
    if u.mode in ("info", "ghost"):
        return False
    if u.mode == "ok" and u.f in ("persist", "expire", "del") and u.out == 0:
        return False
    if u.mode == "err":
        return u.is_read
    return True


def build_keys(hist):
    """Splits the history per key; returns {key: KeyHistory} for keys with
    at least one op that carries information."""
    khs = {}

    def kh_of(k):
        kh = khs.get(k)
        if kh is None:
            meta = hist.keys[k]
            kh = KeyHistory(k, meta["class"], meta["owner"])
            khs[k] = kh
        return kh

    key_crashes = {}    # key -> its owners' crashes (owners change with moves)

    def crashes_of(k):
        if k not in key_crashes:
            key_crashes[k] = hist.crashes_of_key(k)
        return key_crashes[k]

    seq = 0
    last_floor = {}     # (client, key) -> its latest Sub of the key that _sets_floor
    for op in sorted(hist.ops, key=lambda o: (o.t0, o.line)):
        f = op.f
        is_read = f in READ_FS
        if is_read and (op.outcome != "ok" or op.degraded):
            continue            # no information
        if op.outcome == "ok":
            mode = "ok"
        elif op.outcome == "info":
            mode = "info"
        elif f == "incrby" and error_kind(op.error):
            mode = "err"
        else:
            mode = "ghost"      # explicitly failed write: had no effect
        if f == "mset":
            last = {}
            for k, v in zip(op.keys, op.args["values"]):
                last[k] = v      # a key given twice: the last value wins
            parts = [(k, "mset", {"value": v}, op.value) for k, v in last.items()]
        elif f == "mget":
            parts = [(k, "get", {}, v) for k, v in zip(op.keys, op.value)]
        else:
            out = op.value
            if mode == "err":
                out = error_kind(op.error)
            parts = [(op.keys[0], f, op.args, out)]
        for k, sf, a, out in parts:
            kh = kh_of(k)
            cls = hist.classes[kh.cls]
            call = op.t0
            pred = None
            if is_read:
                delta = cls["stale_delta"] if op.stale else cls["read_delta"]
                if op.cached:
                    # From a tracking client's cache: the value its last
                    # fill got (flagged as that reply was), kept until an
                    # invalidation arrived, so as old as the tracking bound.
                    delta = max(delta, cls["cached_delta"])
                # A read may be as old as delta, but not older than its
                # client's previous op of the key that fixed a floor for it
                # (_sets_floor).  When that op is in the model (determinate),
                # the read is ordered after it in the search (Sub.pred) and
                # may start where it started: two reads of one client
                # through a cache that is behind (a push delayed by TCP
                # after a cut between hosts) may both see the old value,
                # each within delta, but never the second an older one than
                # the first, and a read still sees its client's own write.
                # After an indeterminate or failed op, the read starts after
                # that op ended.
                p = last_floor.get((op.client, k))
                if p is None:
                    call = op.t0 - delta
                elif p.mode in ("ok", "err"):
                    pred = p
                    call = max(op.t0 - delta, p.call)
                else:
                    call = max(op.t0 - delta, p.t1())
                # Within crash_read_delta after a crash of the key's owner a
                # read may be answered by a cache that still holds a value the
                # crash lost, or by the restarted owner: reads through
                # different paths may disagree, in any order, until the
                # caches have refreshed.  Such a read carries no ordering
                # information: it is left out, like a degraded read.
                if any(t_c < op.t0 <= t_c + cls["crash_read_delta"]
                       for t_c, _, _ in crashes_of(k)):
                    continue
                call = min(call, op.t0)
            u = _new_sub(kh, seq, op, sf, a, out, mode, call, op.t1)
            u.pred = pred
            if _sets_floor(u):
                last_floor[(op.client, k)] = u
            seq += 1
            if mode == "ok" and (sf in ("get", "getdel") or
                                 (sf == "set" and a.get("get"))):
                u.reads = out if isinstance(out, str) else None
            if sf in ("set", "mset"):
                u.writes = a["value"]
            elif sf == "incrby" and mode == "ok" and _int(out):
                u.writes = str(out)
                prev = out - a["delta"]
                if prev != 0:
                    u.reads = str(prev)
            if u.writes is not None:
                kh.writers.setdefault(u.writes, []).append(u)
    # Crash pseudo-ops for the keys of the crashed owner (of each key's
    # owner at the time: leaves move).
    for kh in khs.values():
        crashes = [(t, n) for t, o, n in crashes_of(kh.key)]
        kh.crash_owner = {n: o for t, o, n in crashes_of(kh.key)}
        w = hist.classes[kh.cls]["persist_window"]
        prev_t = None
        for t, n in crashes:
            if prev_t is not None and t <= prev_t:
                continue        # the same crash twice
            kh.crashes.append((t, n))
            # Sort keys: an op acknowledged before the window precedes
            # "open"; "restore" follows the ops acknowledged before t.
            if prev_t is not None and t - w <= prev_t:
                # Lost state cannot reach back before the previous restart.
                ts = prev_t
                ranks = (3, 3.1)
            else:
                ts = t - w
                ranks = (0.5, 0.6)
            s = _new_sub(kh, seq, None, "open", {}, None, "open", ts, ts)
            s.ck = (ts, ranks[0], seq)
            s.rk = (ts, ranks[1], seq)
            seq += 1
            r = _new_sub(kh, seq, None, "restore", {}, None, "restore", t, t)
            r.ck = (t, 1.5, seq)
            r.rk = (t, 2.5, seq)
            seq += 1
            s.crash = r.crash = (t, n)
            s.fixed = r.fixed = True
            prev_t = t
    spans = [(f["t0"], f["t1"]) for f in hist.faults] + [(t, t) for t, _, _ in hist.crashes] + \
        [(m[0], m[1]) for m in hist.moves]
    for kh in khs.values():
        kh.has_incr = any(u.f == "incrby" for u in kh.subs)
        kh.disturbed = spans
    return khs


# --------------------------------------------------------------------------
# The search
# --------------------------------------------------------------------------

class Budget:
    """A deadline and a configuration count; exceeded -> verdict unknown."""

    def __init__(self, deadline, max_configs=DEFAULT_MAX_CONFIGS):
        self.deadline = deadline
        self.max_configs = max_configs


def linearizable(subs, budget, stats=None):
    """True / False / None (a bound was hit) for one key's model sub-ops."""
    n = len(subs)
    remaining = sum(1 for u in subs if not u.info)
    if remaining == 0:
        return True
    if time.monotonic() > budget.deadline:
        return None
    events = []
    for i, u in enumerate(subs):
        events.append((u.ck, i, True))
        events.append((u.rk, i, False))
    events.sort(key=lambda e: e[0])
    m = len(events)
    # Doubly linked list over nodes 1..m; node 0 is the head, -1 the end.
    nxt = list(range(1, m + 2))
    nxt[m] = -1
    prv = list(range(-1, m))
    node_op = [None] * (m + 1)
    is_call = [False] * (m + 1)
    match = [0] * (m + 1)
    call_node = [0] * n
    ret_node = [0] * n
    ev_time = [INF] * (m + 1)
    for pos, (k, i, c) in enumerate(events, 1):
        ev_time[pos] = k[0]
        node_op[pos] = subs[i]
        is_call[pos] = c
        if c:
            call_node[i] = pos
        else:
            ret_node[i] = pos
    for i in range(n):
        match[call_node[i]] = ret_node[i]
    # Determinate ops: one bit each in lin.  Info ops: a count per class in
    # icnt, packed in fields of w bits whose top bit is a guard, so that
    # "a <= b in every field" is ((b | guard) - a) & guard == guard.
    cidx = {}
    for u in subs:
        if u.info:
            cidx.setdefault(u.icls, []).append(u)
    w = max((len(v) for v in cidx.values()), default=1).bit_length() + 1
    guard = 0
    ccode = {}
    for k, c in enumerate(cidx):
        guard |= 1 << (k * w + w - 1)
        ccode[c] = k
    bits = {}
    node_cls = {}
    for i, u in enumerate(subs):
        if u.info:
            k = ccode[u.icls]
            bits[call_node[i]] = 1 << (k * w)
            node_cls[call_node[i]] = k
        else:
            bits[call_node[i]] = 1 << i

    # A read runs only after its client's previous op of the key (MOp.pred).
    index_of = {id(u): i for i, u in enumerate(subs)}
    need = {}
    for i, u in enumerate(subs):
        if u.pred is not None and id(u.pred) in index_of:
            need[call_node[i]] = 1 << index_of[id(u.pred)]
    lin_now = [0]       # lin of the configuration candidates() is asked for

    front = [-INF]      # the latest return that stopped a scan

    def candidates(state, after_info):
        det = []
        inf = []
        classes = None
        node = nxt[0]
        while True:
            if node == -1:
                break
            if not is_call[node]:
                if ev_time[node] > front[0]:
                    front[0] = ev_time[node]
                break
            u = node_op[node]
            nd = need.get(node)
            if nd is not None and not lin_now[0] & nd:
                node = nxt[node]
                continue
            if after_info and u.blind:
                # Right after an info op, a blind info op gives a state the
                # parent reaches with that first op still pending.  Inside a
                # crash window the first op's state is also recorded, but a
                # path from the parent gets it back by restoring the state
                # before it (recorded too) and applying it then.
                node = nxt[node]
                continue
            if u.info:
                # One info op per class: the others are interchangeable.
                c = node_cls[node]
                if classes is None:
                    classes = {c}
                elif c in classes:
                    node = nxt[node]
                    continue
                else:
                    classes.add(c)
            new = u.step(state)
            if new is not None:
                if u.multi:
                    for st in new:
                        det.append((node, st, False))
                    node = nxt[node]
                    continue
                sv = new[2]
                if sv is not None and new is not state:
                    # Inside a crash window: record the state for "restore".
                    cur = (new[0], new[1])
                    if cur not in sv:
                        new = (new[0], new[1], sv | {cur})
                if u.info:
                    inf.append((node, new, True))
                elif u.pure:
                    return [(node, new, False)]     # forced
                else:
                    det.append((node, new, False))
            node = nxt[node]
        if inf:
            det.extend(inf)
        return det

    # (lin, state) -> the icnt seen with it.  A configuration whose icnt is
    # at least one seen, class by class, is pruned: with the same
    # determinate ops done, the same info ops are available, and one that
    # used fewer of each class can do all it can.
    cache = {}
    state = INIT_STATE
    lin = 0
    ilin = 0
    frames = [[candidates(state, False), 0]]
    path = []
    steps = 0
    configs = 0
    deadline = budget.deadline
    max_configs = budget.max_configs
    result = None
    while True:
        fr = frames[-1]
        cands = fr[0]
        i = fr[1]
        if i >= len(cands):
            frames.pop()
            if not path:
                result = False
                break
            node, state, lin, ilin, info = path.pop()
            # unlift: put the call and its return back
            r = match[node]
            p = prv[r]
            q = nxt[r]
            nxt[p] = r
            if q != -1:
                prv[q] = r
            p = prv[node]
            q = nxt[node]
            nxt[p] = node
            if q != -1:
                prv[q] = node
            if not info:
                remaining += 1
            continue
        fr[1] = i + 1
        node, new, info = cands[i]
        if info:
            nlin = lin
            nilin = ilin + bits[node]
        else:
            nlin = lin | bits[node]
            nilin = ilin
        key = (nlin, new)
        seen = cache.get(key)
        if seen is not None:
            pruned = False
            g = nilin | guard
            for s_ilin in seen:
                if (g - s_ilin) & guard == guard:
                    pruned = True
                    break
            if pruned:
                continue
            seen.append(nilin)
        else:
            cache[key] = [nilin]
        configs += 1
        path.append((node, state, lin, ilin, info))
        # lift: take the call and its return out of the list
        p = prv[node]
        q = nxt[node]
        nxt[p] = q
        if q != -1:
            prv[q] = p
        r = match[node]
        p = prv[r]
        q = nxt[r]
        nxt[p] = q
        if q != -1:
            prv[q] = p
        state = new
        lin = nlin
        ilin = nilin
        if not info:
            remaining -= 1
            if remaining == 0:
                result = True
                break
        lin_now[0] = lin
        frames.append([candidates(state, info), 0])
        steps += 1
        if steps & 1023 == 0:
            if time.monotonic() > deadline or configs > max_configs:
                result = None
                break
    if stats is not None:
        stats["configs"] = stats.get("configs", 0) + configs
        stats["frontier"] = front[0]
    return result


def check_subs(subs, budget, stats=None):
    """linearizable() in stages.  Leaving an info op out is one of its allowed
    outcomes (never applied), so a pass without some info ops is a pass.
    Stage 1 keeps only the info SETs whose value some answer names, stage 2
    all but the info SETs nobody reads, stage 3 everything; the first two get
    a quarter of the remaining time each.  Only stage 3 can say False."""
    stages = []
    s1 = [u for u in subs if not u.info or
          (u.icls[0] == "set" and u.icls[-1] != UNREAD)]
    s2 = [u for u in subs if not u.info or
          not (u.icls[0] == "set" and u.icls[-1] == UNREAD)]
    if len(s1) < len(subs):
        stages.append(s1)
    if len(s1) < len(s2) < len(subs):
        stages.append(s2)
    for st in stages:
        now = time.monotonic()
        if now > budget.deadline:
            return None
        b = Budget(now + (budget.deadline - now) / 4, budget.max_configs)
        if linearizable(st, b, stats):
            return True
    return linearizable(subs, budget, stats)


# --------------------------------------------------------------------------
# Delta debugging: a small sub-history that is still not linearizable
# --------------------------------------------------------------------------

def _cached(kh):
    """What the reductions look up in a key's history again and again,
    computed once: a key of 40 000 ops makes an O(n) scan per window check
    (and an O(n) one per start candidate) the whole cost of a report.

    order: the subs in _items' order (crash pseudo-ops by return, the rest
    by call), times: the time of each, side: the indexes of the info ops
    and crash pseudo-ops (kept however early they are), span: the longest
    call-to-return of the others (those called before start - span ended
    before start), first_t1: the earliest return of an op, wins: the crash
    windows (open call, crash time), det: _det's list."""
    c = kh.cache
    if "order" not in c:
        order = sorted(kh.subs, key=lambda x: x.rk if x.fixed else x.ck)
        c["order"] = order
        c["times"] = [(x.rk if x.fixed else x.ck)[0] for x in order]
        c["side"] = [i for i, x in enumerate(order)
                     if x.fixed or x.mode == "info"]
        c["span"] = max((x.t1() - x.call for x in order
                         if not x.fixed and x.mode != "info"), default=0.0)
        c["first_t1"] = min((x.t1() for x in order if x.op is not None),
                            default=INF)
        c["wins"] = sorted((x.call, x.crash[0]) for x in kh.subs
                           if x.f == "open")
        c["det"] = [u for u in kh.subs
                    if not u.fixed and u.mode in ("ok", "err", "ghost")]
        c["init"] = {}
    return c


def _init_sub(kh, start):
    """The pseudo-op that puts the key in a free state at start.  Its
    allowed values: those written by ops called before start; any integer
    when an INCRBY was."""
    memo = _cached(kh)["init"]
    allowed = memo.get(start)
    if allowed is None:
        allowed = {}
        for w in kh.subs:
            if w.op is not None and w.t0() < start and w.mode != "ghost":
                if w.writes is not None:
                    allowed[w.writes] = True
                if w.f == "incrby":
                    allowed["*int"] = True
        memo[start] = allowed
    u = Sub()
    u.seq = -1
    u.op = None
    u.key = None
    u.f = "init"
    u.a = allowed
    u.out = None
    u.mode = "init"
    u.call = u.ret = -INF
    u.ck = (-INF, 0, -1)
    u.rk = (-INF, 0.5, -1)
    u.info = False
    u.reads = u.writes = None
    u.is_read = False
    u.crash = None
    u.fixed = True
    u.pure = False
    u.pred = None
    return u


def _items(kh, core, cut, start=-INF, widen=False):
    """The relaxed sub-history between start and cut.

    Ops starting after cut are left out (they start after every kept op
    ended, so they could not change a kept answer).  Ops acknowledged before
    start are left out too (an info op never is: it may take effect later)
    and the key starts in a free state (any state they could have left).  Of the rest, the determinate ops in core that
    were acknowledged by cut and called after start are kept as they are,
    the others relaxed.  Crashes are kept when their window lies between
    start and cut (see _window_start).  widen: crash windows reach back to
    the previous restart (see _crash_explains)."""
    items = []
    c = _cached(kh)
    if c["first_t1"] < start:
        items.append((_init_sub(kh, start), False))
    prev_restore = start
    order = c["order"]
    times = c["times"]
    # Before start - span only info ops and crash pseudo-ops can be kept.
    lo = bisect.bisect_left(times, start - c["span"]) if start > -INF else 0
    hi = bisect.bisect_right(times, cut)
    idx = [i for i in c["side"] if i < lo]
    idx.extend(range(lo, hi))
    for i in idx:
        u = order[i]
        if u.fixed:
            if u.crash[0] > cut or u.crash[0] < start:
                continue
            if u.f == "restore":
                prev_restore = u.call
            elif widen:
                w = _clone_sub(u)
                w.ck = (prev_restore, 3, u.seq)
                w.rk = (prev_restore, 3.1, u.seq)
                w.call = w.ret = prev_restore
                u = w
            items.append((u, False))
        elif u.t0() > cut:
            continue
        elif u.mode == "info":
            # May take effect at any time after its call, even after start.
            items.append((u, False))
        elif u.t1() < start:
            continue
        else:
            items.append((u, not (u in core and u.t1() <= cut
                                  and u.call >= start)))
    return items


def _window_start(kh, start):
    """start moved back so that no crash window straddles it."""
    wins = _cached(kh)["wins"]
    moved = True
    while moved:
        moved = False
        for a, t in wins:
            if a < start <= t:
                start = a
                moved = True
    return start


def _det(kh):
    return _cached(kh)["det"]


def _window_fails(kh, core, cut, start, t_stop, stats=None):
    """True only when the relaxed window is shown not linearizable."""
    now = time.monotonic()
    if now > t_stop:
        return False
    r = check_subs(model_ops(_items(kh, core, cut, start)),
                   Budget(min(t_stop, now + 2.0)), stats)
    return r is False


def _latest_start(kh, fails, cut, t_stop):
    """The latest window start (an op's call) before cut for which fails()
    holds, or None.  Galloping back from the cut (1, 2, 4, ... starts back),
    then bisecting between the last start that passed and the first that
    failed: windows near the cut are small and cheap.  An op that straddles
    a start is relaxed, so this is not monotonic: the start found fails, but
    a later one might too."""
    starts = sorted({_window_start(kh, u.call) for u in _det(kh)
                     if u.t1() <= cut}, reverse=True)
    ok, bad = -1, None        # indexes into starts: passed, failed
    step = 1
    while bad is None:
        i = min(ok + step, len(starts) - 1)
        if time.monotonic() > t_stop:
            return None
        if fails(cut, starts[i]):
            bad = i
        elif i == len(starts) - 1:
            return None
        else:
            ok = i
            step *= 2
    while bad - ok > 1 and time.monotonic() < t_stop:
        mid = (ok + bad) // 2
        if fails(cut, starts[mid]):
            bad = mid
        else:
            ok = mid
    return starts[bad]


def find_window(kh, frontier, t_stop, stats=None):
    """A window (start, cut) that fails with every op of the key determinate:
    its end at a search frontier (the latest return a search could not get
    past), its start as late as found (_latest_start), then the earliest end
    for that start.  None if none is found by t_stop.  A failing window
    proves the key's history is not linearizable, whatever the rest of it
    is."""
    det = _det(kh)
    full = set(det)
    t1s = sorted({u.t1() for u in det})
    if not t1s:
        return None
    i = min(bisect.bisect_left(t1s, frontier), len(t1s) - 1)
    start = _latest_start(
        kh, lambda c, s: _window_fails(kh, full, c, s, t_stop, stats),
        t1s[i], t_stop)
    if start is None:
        return None
    lo, hi = bisect.bisect_left(t1s, start), i
    while lo < hi:
        mid = (lo + hi) // 2
        if _window_fails(kh, full, t1s[mid], start, t_stop, stats):
            hi = mid
        else:
            lo = mid + 1
    return start, t1s[hi]


def minimize(kh, budget_s, stats=None, frontier=INF, window=None):
    """A small core of determinate ops that, with every other op of the key
    between a start and a cut time relaxed, is still not linearizable.
    window: a failing (start, cut) already found.  Returns (core as a list
    of Subs in time order, start, cut, minimal)."""
    t_end = time.monotonic() + budget_s
    det = _det(kh)
    full = set(det)
    minimal = True

    def nonlin(core, cut, start=-INF):
        """True only when shown non-linearizable within the budget."""
        nonlocal minimal
        now = time.monotonic()
        if now > t_end:
            minimal = False
            return False
        r = check_subs(model_ops(_items(kh, core, cut, start)),
                       Budget(min(t_end, now + CHECK_BUDGET)),
                       stats)
        if r is None:
            minimal = False
        return r is False

    if window is None:
        window = find_window(kh, frontier, time.monotonic() + budget_s / 3,
                             stats)
    if window is not None:
        start, cut = window
    else:
        # The earliest failing cut by binary search over acknowledgment
        # times (the last one keeps all that can matter, which is known to
        # fail), then the latest start for it.
        t1s = sorted({u.t1() for u in det})
        lo, hi = 0, len(t1s) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if nonlin(full, t1s[mid]):
                hi = mid
            else:
                lo = mid + 1
        cut = t1s[hi] if t1s else INF
        start = _latest_start(kh, lambda c, s: nonlin(full, c, s), cut, t_end)
        if start is None:
            start = -INF
    core = {u for u in det if u.t1() <= cut and u.call >= start}
    # 3. Greedy ddmin: relax chunks while the rest still fails.
    order = sorted(core, key=lambda u: (u.t0(), u.seq))
    chunk = max(1, len(order) // 2)
    while order and time.monotonic() < t_end:
        changed = False
        i = 0
        while i < len(order) and time.monotonic() < t_end:
            cand = core - set(order[i:i + chunk])
            if nonlin(cand, cut, start):
                core = cand
                order = [u for u in order if u in core]
                changed = True
            else:
                i += chunk
        if not changed:
            if chunk == 1:
                break
            chunk = max(1, chunk // 2)
    if time.monotonic() >= t_end:
        minimal = False
    return sorted(core, key=lambda u: (u.t0(), u.seq)), start, cut, minimal


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


def _clone_sub(u):
    c = Sub()
    for f in Sub.__slots__:
        setattr(c, f, getattr(u, f))
    return c


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
