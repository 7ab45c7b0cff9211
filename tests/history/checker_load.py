"""checker_load.py - reading a hotkvd history (format v1,
tests/history/README.md) for checker.py: the lines parsed and checked one
by one (a line that breaks the format is BadHistory with its number), the
header's classes and keys, ops with their arguments and answers, crashes
and faults, and the history's time zero.  Standard library only."""

import json
import os

INF = float("inf")
INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1
HOUR_MS = 3600 * 1000

READ_FS = ("get", "exists", "mget")
SINGLE_FS = ("get", "exists", "set", "getdel", "del", "incrby", "expire",
             "persist")
MULTI_FS = ("mset", "mget")


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
