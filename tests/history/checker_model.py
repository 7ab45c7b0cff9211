"""checker_model.py - the model of one Redis string key for checker.py, and
each key's history as sub-ops for the search."""

import re

from checker_load import INF, INT64_MAX, INT64_MIN, READ_FS, _int

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


def _clone_sub(u):
    c = Sub()
    for f in Sub.__slots__:
        setattr(c, f, getattr(u, f))
    return c
