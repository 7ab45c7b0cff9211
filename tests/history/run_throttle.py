"""run_throttle.py - CL.THROTTLE in the history runner (run.py).

RESP clients (`--throttle N`, RESP3 with CLIENT META ON) and HTTP clients
(`--throttle-http N`, `POST /v1/ratelimit/KEY?burst=B&rate=N&period=S
[&quantity=Q]`) call the edge's rate limiter (README "Rate limits for
applications", server/edge/edge_throttle.h) on a few keys of their own,
`thr:0`..`thr:3` (no history key: the checker's keys are strings), each with
a fixed limit (THROTTLE_KEYS), through every fault.  Each call is one line of
`DIR/throttle.jsonl`: send time t0 and answer time t1 (the runner's
CLOCK_MONOTONIC), the limit, the quantity, the reply (redis-cell's five
integers), whether it failed open (the RESP3 attribute `failopen 1`, HTTP's
body `"failopen":1`), or the error / transport failure.  A sampler reads INFO
ratelimit every second for `app_ratelimit_failopen` (summed across restarts,
which zero it).

After the run, check() judges against the promises (GCRA, server/colo/gcra.h:
T = period / count; max_burst + 1 requests pass at once, then one per T):

- every answer is well formed: five integers, limited 0 or 1, limit =
  max_burst + 1, 0 <= remaining <= limit, 0 <= reset_after <= (max_burst+1)
  x T, allowed => retry_after = -1, limited => 0 <= retry_after <= quantity x
  T (quantity <= max_burst + 1 here, so it can always pass later); over HTTP
  also 200 iff allowed, 429 iff limited, RateLimit-Limit / -Remaining /
  -Reset equal to the body's fields, Retry-After iff limited; and no error
  reply (the arguments are valid, the user may, nothing is refused);
- the window bound, per key and colo: over every window [a, b], the
  quantities of the admitted calls (limited 0, not failed open) decided in it
  are at most (max_burst + 1) + (b - a) / T + SLACK_UNITS.  The edge decides
  at some moment s in [t0, t1] on CLOCK_MONOTONIC, the clock the runner reads
  (system-wide; tests/history/clockshift.c shifts only the wall clock, so
  clock_shift changes nothing here), so a call is counted in [a, b] when its
  whole [t0, t1] lies in it.  Counting by the answer time alone would not be
  sound: a runner thread may read its clock tens of ms after the reply
  arrived (the GIL), so an early decision can look late.  SLACK_UNITS = 1
  covers a clock read or rounding off by less than T.  Windows never span a
  reset: a kill_master (from its t0 to its restart's t1) starts every counter
  afresh (the segment is the master's), so calls overlapping one are left
  out and the others are split into epochs; kill_edge is no reset (the
  segment outlives an edge).  Failed-open calls are left out (they were not
  counted by the table).  Computed exactly for every window by a sweep over
  the send times with a segment tree over the answer times (range add, range
  max): O(n log n) per key;
- no limit without cause: a call limited with quantity q needs, in the table,
  a bucket whose tat passed now + tolerance - q T, which only an admission in
  the last q T could have set (an admission leaves tat <= its now +
  tolerance), so some admitted, not failed-open call of the key and colo
  must have t1 > t0 - q T (and t0 < the limited call's t1).  Admissions of
  any epoch count (a reset only makes the table more permissive).

With two colos each colo has its own table: RESP calls are judged per
(key, colo) by the colo their connection reports; HTTP calls, whose colo
the runner does not know, only in the sum over the colos, against the sum
of the colos' bounds."""

import bisect
import json
import math
import random
import socket
import threading
import time

import base64

from run_creds import read_http_response
from run_daemon import REQUEST_TIMEOUT_S, proc_title
from run_resp import Conn, RespError, Transport, info_fields

# key -> (max_burst, count_per_period, period_s): T = period / count
THROTTLE_KEYS = {
    "thr:0": (4, 10, 1),     # T = 100 ms, 5 at once
    "thr:1": (4, 10, 1),
    "thr:2": (2, 5, 1),      # T = 200 ms, 3 at once
    "thr:3": (9, 20, 2),     # T = 100 ms, 10 at once
}
THROTTLE_DEFAULT = 3         # RESP clients
THROTTLE_HTTP_DEFAULT = 1    # HTTP clients (when the daemon has an HTTP port)
SLACK_UNITS = 1              # admitted units over the bound a window may show
EPS_S = 0.001                # on "an admission in the last q T" (clock reads)


def interval_s(key):
    burst, count, period = THROTTLE_KEYS[key]
    return (period * 1000000000 // count) / 1e9   # gcra_interval: integer ns


def draw(rng):
    """(key, quantity, send the quantity word?) of the next call."""
    key = rng.choice(sorted(THROTTLE_KEYS))
    x = rng.random()
    q = 0 if x < 0.04 else 2 if x < 0.14 else 1
    return key, q, q != 1 or rng.random() < 0.5


class ThrottleClient(threading.Thread):
    """CL.THROTTLE over RESP3 (CLIENT META ON: the failopen attribute), one
    call at a time, a new connection after a transport failure."""

    def __init__(self, index, seed, hkv, history, stop, think_ms):
        super().__init__(name="throttle-%d" % index, daemon=True)
        self.index = index
        self.rng = random.Random("%s-throttle-%d" % (seed, index))
        self.hkv = hkv
        self.history = history
        self.stop_ev = stop
        self.think_ms = think_ms
        self.records = []
        self.error = None
        self.conn = None

    def connect(self):
        """A connection, on this client's edge if a few tries land there (the
        edges of a colo share one table: calls of one key through both)."""
        names = self.hkv.edge_names()
        want = names[self.index % len(names)]
        best = None
        for _ in range(6):
            try:
                c = Conn(self.hkv.port, timeout=2.0)
            except OSError:
                break
            try:
                srv = None
                for words in (["HELLO", "3"], ["CLIENT", "META", "ON"], ["INFO", "server"]):
                    srv = c.call(words, timeout=2.0)
                    if isinstance(srv, RespError):
                        raise Transport(str(srv))
            except Transport:
                c.close()
                break
            fields = info_fields(srv)
            try:
                title = proc_title(int(fields.get("edge_pid", "0"))) or ""
            except ValueError:
                title = ""
            edge = title[len("edge "):] if title.startswith("edge ") else None
            if best is not None:
                best[0].close()
            best = (c, fields.get("colo"), edge)
            if edge == want:
                break
        if best is None:
            return False
        self.conn, self.colo, self.edge = best
        self.client = self.history.client_id()
        return True

    def run(self):
        try:
            self.loop()
        except Exception as e:  # a runner bug: reported, fails the run
            self.error = "%s: %r" % (self.name, e)
        finally:
            if self.conn is not None:
                self.conn.close()

    def loop(self):
        backoff = 0.05
        while not self.stop_ev.is_set():
            if self.conn is None:
                if not self.connect():
                    self.stop_ev.wait(backoff)
                    backoff = min(backoff * 2, 0.5)
                    continue
                backoff = 0.05
            key, q, qword = draw(self.rng)
            burst, count, period = THROTTLE_KEYS[key]
            words = ["CL.THROTTLE", key, str(burst), str(count), str(period)] + \
                ([str(q)] if qword else [])
            rec = {"kind": "throttle", "via": "resp", "client": self.client, "colo": self.colo,
                   "edge": self.edge, "key": key, "burst": burst, "count": count,
                   "period": period, "quantity": q}
            t0 = time.monotonic()
            deadline = t0 + REQUEST_TIMEOUT_S
            try:
                self.conn.send(words, deadline)
                reply = self.conn.read(deadline)
                t1 = time.monotonic()
                if isinstance(reply, RespError):
                    rec.update(outcome="error", error=str(reply))
                else:
                    rec.update(outcome="ok", reply=reply,
                               failopen=any(a.get("failopen") in (1, True, "1")
                                            for a in self.conn.attrs))
            except Transport as e:
                t1 = time.monotonic()
                rec.update(outcome="info", error="runner: %s" % e)
                self.conn.close()
                self.conn = None
            rec.update(t0=t0, t1=t1)
            self.records.append(rec)
            if self.think_ms > 0:
                self.stop_ev.wait(self.rng.uniform(0, self.think_ms) / 1000.0)


class ThrottleHttp(threading.Thread):
    """POST /v1/ratelimit/KEY on a keep-alive connection (Basic auth)."""

    def __init__(self, index, seed, hkv, history, stop, cred, think_ms):
        super().__init__(name="throttle-http-%d" % index, daemon=True)
        self.rng = random.Random("%s-throttle-http-%d" % (seed, index))
        self.hkv = hkv
        self.history = history
        self.stop_ev = stop
        self.cred = cred
        self.think_ms = think_ms
        self.records = []
        self.error = None

    def run(self):
        try:
            self.loop()
        except Exception as e:
            self.error = "%s: %r" % (self.name, e)

    def loop(self):
        sock, client = None, None
        auth = base64.b64encode(("%s:%s" % self.cred).encode()).decode()
        colo = self.hkv.colo_names()[0] if self.hkv.colos <= 1 else None
        while not self.stop_ev.is_set():
            if sock is None:
                try:
                    sock = socket.create_connection(("127.0.0.1", self.hkv.http_port), timeout=2.0)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    sock = None
                    self.stop_ev.wait(0.1)
                    continue
                client = self.history.client_id()
            key, q, qword = draw(self.rng)
            burst, count, period = THROTTLE_KEYS[key]
            path = "/v1/ratelimit/%s?burst=%d&rate=%d&period=%d" % (key, burst, count, period) + \
                ("&quantity=%d" % q if qword else "")
            request = ("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n"
                       "Content-Length: 0\r\n\r\n" % (path, auth)).encode()
            rec = {"kind": "throttle", "via": "http", "client": client, "colo": colo,
                   "edge": "http", "key": key, "burst": burst, "count": count,
                   "period": period, "quantity": q}
            t0 = time.monotonic()
            try:
                sock.settimeout(REQUEST_TIMEOUT_S)
                sock.sendall(request)
                status, hdr, body = read_http_response(sock, t0 + REQUEST_TIMEOUT_S)
                t1 = time.monotonic()
                rec["status"] = status
                rec["headers"] = {k: hdr[k] for k in ("ratelimit-limit", "ratelimit-remaining",
                                                      "ratelimit-reset", "retry-after")
                                  if k in hdr}
                text = body.decode("utf-8", "replace")
                try:
                    js = json.loads(text) if status in (200, 429) else None
                except ValueError:
                    js = None
                if isinstance(js, dict):
                    rec.update(outcome="ok", body=js, failopen=js.get("failopen") == 1,
                               reply=[js.get(k) for k in ("limited", "limit", "remaining",
                                                          "retry_after", "reset_after")])
                else:
                    rec.update(outcome="error", error="HTTP %d %s" % (status, text[:80]))
                if hdr.get("connection", "").lower() == "close":
                    sock.close()
                    sock = None
            except (OSError, ValueError, IndexError) as e:
                t1 = time.monotonic()
                rec.update(outcome="info", error="runner: %s" % e)
                sock.close()
                sock = None
            rec.update(t0=t0, t1=t1)
            self.records.append(rec)
            if self.think_ms > 0:
                self.stop_ev.wait(self.rng.uniform(0, self.think_ms) / 1000.0)
        if sock is not None:
            sock.close()


class FailopenSampler(threading.Thread):
    """INFO ratelimit every second: app_ratelimit_failopen summed over the
    daemon's lives (a restart zeroes it: a lower value is a new count)."""

    def __init__(self, hkv, stop):
        super().__init__(name="throttle-info", daemon=True)
        self.hkv = hkv
        self.stop_ev = stop
        self.total = 0
        self.last = None
        self.samples = 0
        self.error = None
        self.fields = {}

    def sample(self):
        try:
            f = info_fields(self.hkv.info("ratelimit"))
            v = int(f.get("app_ratelimit_failopen", ""))
        except (OSError, Transport, ValueError):
            return
        self.fields = f
        self.samples += 1
        self.total += v if self.last is None or v < self.last else v - self.last
        self.last = v

    def run(self):
        while not self.stop_ev.wait(1.0):
            self.sample()


def write(path, clients):
    recs = sorted((r for c in clients for r in c.records), key=lambda r: r["t0"])
    with open(path, "w", encoding="utf-8") as f:
        for i, r in enumerate(recs):
            r["id"] = i + 1
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    return recs


# ---- the checks ---------------------------------------------------------------


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def malformed(r):
    """Why the answer of ok record r breaks the reply's shape, or None."""
    rep = r.get("reply")
    B, q = r["burst"], r["quantity"]
    T = interval_s(r["key"])
    if not isinstance(rep, list) or len(rep) != 5 or not all(is_int(v) for v in rep):
        return "not five integers: %r" % (rep,)
    limited, limit, remaining, retry, reset = rep
    if limited not in (0, 1):
        return "limited %d" % limited
    if limit != B + 1:
        return "limit %d, max_burst + 1 is %d" % (limit, B + 1)
    if not 0 <= remaining <= limit:
        return "remaining %d outside 0..%d" % (remaining, limit)
    if not 0 <= reset <= (B + 1) * T + 1e-9:
        return "reset_after %d outside 0..%g s" % (reset, (B + 1) * T)
    if limited == 0 and retry != -1:
        return "allowed with retry_after %d" % retry
    if limited == 1 and not 0 <= retry <= q * T + 1e-9:
        return "limited with retry_after %d outside 0..%g s" % (retry, q * T)
    if r.get("failopen") and limited:
        return "failed open but limited"
    if r["via"] == "http":
        st, h = r.get("status"), r.get("headers", {})
        if st != (429 if limited else 200):
            return "HTTP %s with limited %d" % (st, limited)
        for name, v in (("ratelimit-limit", limit), ("ratelimit-remaining", remaining),
                        ("ratelimit-reset", reset)):
            if h.get(name) != str(v):
                return "%s %r, body %d" % (name, h.get(name), v)
        if ("retry-after" in h) != bool(limited) or (limited and h["retry-after"] != str(retry)):
            return "Retry-After %r with limited %d retry_after %d" % (
                h.get("retry-after"), limited, retry)
    return None


class MaxTree:
    """Range add, range max (with its position) over n values: a segment tree
    whose nodes keep their subtree's max including their own pending add."""

    def __init__(self, values):
        self.n = len(values)
        self.size = 1
        while self.size < self.n:
            self.size *= 2
        self.mx = [(-math.inf, -1)] * (2 * self.size)
        self.ad = [0.0] * (2 * self.size)
        for i, v in enumerate(values):
            self.mx[self.size + i] = (v, i)
        for i in range(self.size - 1, 0, -1):
            self.mx[i] = max(self.mx[2 * i], self.mx[2 * i + 1])

    def add(self, lo, hi, v, node=1, nl=0, nr=None):
        if nr is None:
            nr = self.size
        if hi <= nl or nr <= lo:
            return
        if lo <= nl and nr <= hi:
            self.ad[node] += v
            m, i = self.mx[node]
            self.mx[node] = (m + v, i)
            return
        mid = (nl + nr) // 2
        self.add(lo, hi, v, 2 * node, nl, mid)
        self.add(lo, hi, v, 2 * node + 1, mid, nr)
        m, i = max(self.mx[2 * node], self.mx[2 * node + 1])
        self.mx[node] = (m + self.ad[node], i)

    def query(self, lo, hi, node=1, nl=0, nr=None):
        if nr is None:
            nr = self.size
        if hi <= nl or nr <= lo:
            return (-math.inf, -1)
        if lo <= nl and nr <= hi:
            return self.mx[node]
        mid = (nl + nr) // 2
        m, i = max(self.query(lo, hi, 2 * node, nl, mid),
                   self.query(lo, hi, 2 * node + 1, mid, nr))
        return (m + self.ad[node], i)


def worst_window(calls, T):
    """calls: [(t0, t1, units)].  The window [a, b] (a a send time, b an
    answer time) that maximizes units(calls within it) - (b - a) / T:
    (excess, a, b, units); excess is units - (b - a) / T."""
    if not calls:
        return None
    ends = sorted(c[1] for c in calls)
    tree = MaxTree([-b / T for b in ends])
    best = None
    for t0, t1, u in sorted(calls, key=lambda c: -c[0]):
        tree.add(bisect.bisect_left(ends, t1), len(ends), u)
        lo = bisect.bisect_left(ends, t0)
        m, i = tree.query(lo, len(ends))
        if i < 0:
            continue
        ex = m + t0 / T
        if best is None or ex > best[0] + 1e-12:
            best = (ex, t0, ends[i])
    ex, a, b = best
    units = sum(u for t0, t1, u in calls if t0 >= a and t1 <= b)
    return ex, a, b, units


def resets_of(hist_path):
    """[(t0, t1)] of the counters' resets: each kill_master from its t0 to
    the t1 of the restart after it (inf when there was none)."""
    kills, restarts = [], []
    try:
        with open(hist_path, encoding="utf-8") as f:
            for line in f:
                if '"fault"' not in line:
                    continue
                o = json.loads(line)
                if o.get("f") == "kill_master":
                    kills.append(o["t0"])
                elif o.get("f") == "restart":
                    restarts.append(o["t1"] if o.get("t1") is not None else o["t0"])
    except (OSError, ValueError):
        return None
    out = []
    for t in sorted(kills):
        after = [r for r in restarts if r >= t]
        out.append((t, min(after) if after else math.inf))
    return out


def check(recs, hist_path, ncolos, failopen_info=None, t_base=0.0, limit=10):
    """(broken, summary line) for the throttle records of a run."""
    broken = []
    resets = resets_of(hist_path)
    if resets is None:
        return ["throttle: history not readable: %s" % hist_path], "throttle: ?"

    def rel(t):
        return t - t_base

    def show(r):
        return "#%d %s c%s %s %s q%d %+.4f..%+.4f %s%s" % (
            r["id"], r["via"], r["client"], r.get("edge"), r["key"], r["quantity"], rel(r["t0"]),
            rel(r["t1"]), r.get("reply", r.get("error")), " failopen" if r.get("failopen") else "")

    ok = [r for r in recs if r["outcome"] == "ok"]
    errors = [r for r in recs if r["outcome"] == "error"]
    info = [r for r in recs if r["outcome"] == "info"]
    bad_shape = []
    for r in ok:
        why = malformed(r)
        if why:
            bad_shape.append(r)
            broken.append("throttle: malformed answer %s: %s" % (show(r), why))
    for r in errors:
        broken.append("throttle: error answer %s" % show(r))
    good = [r for r in ok if r not in bad_shape] if bad_shape else ok
    admitted = [r for r in good if r["reply"][0] == 0 and not r.get("failopen")]
    limited = [r for r in good if r["reply"][0] == 1]
    failopen = [r for r in good if r.get("failopen")]

    def epoch(r):
        """The number of resets before r, or None if r overlaps one."""
        n = 0
        for a, b in resets:
            if r["t1"] < a:
                break
            if r["t0"] <= b:
                return None
            n += 1
        return n

    # groups: (key, colo) of RESP calls with one colo per connection;
    # with several colos also (key, "*") over every call, k times the bound
    groups = {}
    across = 0
    for r in admitted:
        if r["quantity"] == 0:
            continue
        e = epoch(r)
        if e is None:
            across += 1
            continue
        if ncolos <= 1:
            groups.setdefault((r["key"], "a", e), []).append(r)
        else:
            if r["colo"] is not None:
                groups.setdefault((r["key"], r["colo"], e), []).append(r)
            groups.setdefault((r["key"], "*", e), []).append(r)
    windows = []
    for (key, colo, e), rs in sorted(groups.items()):
        B, count, period = THROTTLE_KEYS[key]
        T = interval_s(key)
        k = ncolos if colo == "*" else 1
        # units - (b - a) / T <= (B + 1) + SLACK  with k colos: k (B + 1) + k (b - a) / T
        res = worst_window([(r["t0"], r["t1"], r["quantity"]) for r in rs], T / k)
        if res is None:
            continue
        ex, a, b, units = res
        allowed = k * (B + 1) + k * (b - a) / T + SLACK_UNITS
        windows.append((units - allowed, key, colo, e, a, b, units, allowed, len(rs)))
        if units > allowed + 1e-9:
            inside = [r for r in rs if r["t0"] >= a and r["t1"] <= b]
            broken.append(
                "throttle: %s colo %s epoch %d: %d units admitted within [%+.4f, %+.4f] "
                "(%.4f s), bound (max_burst+1=%d)%s + (b-a)/T (T=%g s) + %d slack = %.2f; "
                "the calls: %s" % (
                    key, colo, e, units, rel(a), rel(b), b - a, B + 1,
                    " x %d colos" % k if k > 1 else "", T, SLACK_UNITS, allowed,
                    "; ".join(show(r) for r in inside[:12]) +
                    (" ... (%d in all)" % len(inside) if len(inside) > 12 else "")))
    # no limit without cause
    def gcolo(r):
        return "a" if ncolos <= 1 else r["colo"]

    by = {}
    for r in admitted:
        if r["quantity"] > 0:
            if gcolo(r) is not None:
                by.setdefault((r["key"], gcolo(r)), []).append(r)
            if ncolos > 1:
                by.setdefault((r["key"], "*"), []).append(r)
    idx = {}
    for g, rs in by.items():
        rs.sort(key=lambda r: r["t1"])
        t1s = [r["t1"] for r in rs]
        sufmin = [0.0] * len(rs)
        m = math.inf
        for i in range(len(rs) - 1, -1, -1):
            m = min(m, rs[i]["t0"])
            sufmin[i] = m
        idx[g] = (t1s, sufmin, rs)
    uncaused = 0
    for r in limited:
        if ncolos > 1 and r["colo"] is None:
            continue  # an HTTP call of an unknown colo: no table to look in
        T = interval_s(r["key"])
        g = (r["key"], gcolo(r))
        cands = [g] if g in idx else []
        found = False
        for g in cands:
            t1s, sufmin, rs = idx[g]
            i = bisect.bisect_right(t1s, r["t0"] - r["quantity"] * T - EPS_S)
            if i < len(rs) and sufmin[i] < r["t1"]:
                found = True
        if not found:
            uncaused += 1
            broken.append("throttle: limited without an admission in the last quantity x T "
                          "(%g s): %s" % (r["quantity"] * T, show(r)))
    worst = max(windows) if windows else None
    line = ("throttle: %d calls (resp %d, http %d): admitted %d (%d failed open), limited %d, "
            "errors %d, unanswered %d; %d keys x colo x epoch windows judged (%d admitted across "
            "a restart left out), closest window %s; malformed %d, over the bound %d, limited "
            "without cause %d" % (
                len(recs), sum(1 for r in recs if r["via"] == "resp"),
                sum(1 for r in recs if r["via"] == "http"), len(admitted) + len(failopen),
                len(failopen), len(limited), len(errors), len(info), len(windows), across,
                ("%s/%s/e%d %d units in %.3f s vs bound %.2f" % (
                    worst[1], worst[2], worst[3], worst[6], worst[5] - worst[4], worst[7])
                 if worst else "none"),
                len(bad_shape), sum(1 for w in windows if w[0] > 1e-9), uncaused))
    if failopen_info is not None:
        line += "; INFO app_ratelimit_failopen +%s over the run (%s samples)" % failopen_info
    return broken, line
