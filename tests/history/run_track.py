"""run_track.py - tracking clients in the history (issue 28): RESP3 clients
with CLIENT TRACKING on that keep a local cache (key -> the value of their
last GET/MGET reply of it) and answer reads from it, as client-side caching
libraries do (node-redis's clientSideCache, redis-py >= 5.1).  A read
answered from the cache is a get (or mget) op of the history with
`"cached": true`, its t0 = t1 = the moment the client looked in the cache,
and the stale/degraded flags of the reply that filled the entry; the
checker gives it the class's `cached_delta_ms` (the tracking promise's
bound: fresh + miss-wait + push allowance), so a cached value older than
that is an anomaly like any other (README, "tracking clients").

What the client does, and why:
- `>invalidate` pushes drop their keys; a null payload (a flush: a push
  link down or back, ring loss, a full table) drops everything.
- Before it answers from the cache it reads every push already on its
  socket, without blocking.  That is the best a library can do.  A library
  that does not drain first (one that reads pushes only with its next
  reply) answers from entries whose invalidation already sits in its
  socket buffer: on an idle or read-mostly connection such a value has no
  age bound at all, and no server can keep a staleness promise for it.
- Its own writes drop their keys before they are sent: the invalidation of
  its own write follows the write's reply, so a library that kept the
  entry would answer its old value until that push arrived.
- A closed connection empties the cache, and the client reconnects as a new
  client number (libraries do the same: what they were told is lost).
- Modes, one per client by seed: default (keys read), BCAST with PREFIX
  hl: and hd: (every key of the workload), OPTIN (CLIENT CACHING yes before
  most GETs; a GET sent without it is not tracked, so its answer is not
  cached).
"""

import time

from run_daemon import REQUEST_TIMEOUT_S
from run_resp import Conn, RespError, Transport
from run_workload import WRITE_FS, Client, classify_error, reply_value

MODES = ["default", "bcast", "optin"]


class _Incomplete(Exception):
    """The buffer ends inside a frame (non-blocking parse)."""


class TrackConn(Conn):
    """A Conn that sets pushes apart from replies: each push goes to
    on_push as it is read, in stream order with the replies."""

    on_push = None
    _nb = False

    def _fill(self, deadline):
        if not self._nb:
            return Conn._fill(self, deadline)
        raise _Incomplete()

    def _push_ahead(self):
        return len(self.buf) > 0 and self.buf[0] == ord(">")

    def drain(self):
        """Every push already received or waiting in the socket, without
        blocking.  Transport when the connection is gone."""
        try:
            self.sock.setblocking(False)
            while True:
                try:
                    chunk = self.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    break
                if not chunk:
                    raise Transport("connection closed")
                self.buf += chunk
        except OSError as e:
            raise Transport("recv: %s" % e)
        while self._push_ahead():
            keep = bytes(self.buf)
            self._nb = True
            try:
                v = self._value(0)
            except _Incomplete:
                self.buf[:] = keep
                return
            except (ValueError, IndexError) as e:
                raise Transport("malformed push: %s" % e)
            finally:
                self._nb = False
            self.on_push(v)
        if self.buf:
            raise Transport("a reply nobody asked for: %r" % bytes(self.buf[:40]))

    def read(self, deadline):
        """The next reply; pushes before it go to on_push."""
        while True:
            while not self.buf:
                Conn._fill(self, deadline)
            if not self._push_ahead():
                return Conn.read(self, deadline)
            try:
                v = self._value(deadline)
            except (ValueError, IndexError) as e:
                raise Transport("malformed push: %s" % e)
            self.on_push(v)


class TrackingClient(Client):
    """A history client with CLIENT TRACKING and a local cache."""

    conn_class = TrackConn

    def __init__(self, index, seed, port, daemon, workload, history, stop, think_ms, nedges):
        super().__init__(index, seed, port, daemon, workload, history, stop, think_ms, nedges)
        self.name = "tracking-%d" % index
        self.rng.seed("%s-tracking-%d" % (seed, index))
        self.mode = MODES[(index + seed) % len(MODES)]
        self.cache = {}     # key -> (value, stale, degraded)
        self.counts = {"cached": 0, "sent_reads": 0, "fills": 0, "pushes": 0,
                       "keys_invalidated": 0, "flushes": 0, "reconnects": 0,
                       "uncached_optin": 0, "refused": 0}

    def on_push(self, v):
        if not isinstance(v, list) or len(v) < 2 or v[0] != "invalidate":
            return          # not tracking's (none expected)
        self.counts["pushes"] += 1
        if v[1] is None:
            self.counts["flushes"] += 1
            self.cache.clear()
            return
        for k in v[1] if isinstance(v[1], list) else []:
            self.counts["keys_invalidated"] += 1
            self.cache.pop(k, None)

    def connect(self):
        return super().connect() and self.track_on()

    def track_on(self):
        """CLIENT TRACKING on in this client's mode, on the connection just
        made; False (dropped) if refused or gone."""
        self.conn.on_push = self.on_push
        words = ["CLIENT", "TRACKING", "on"]
        if self.mode == "bcast":
            words += ["BCAST", "PREFIX", "hl:", "PREFIX", "hd:"]
        elif self.mode == "optin":
            words.append("OPTIN")
        try:
            r = self.conn.call(words, timeout=2.0)
        except Transport:
            self.drop()
            return False
        if r != "OK":
            # An edge draining or a login refused mid-reload: tried again
            # (counted; a run whose clients never track reads nothing from
            # their caches, which the suites assert against).
            self.counts["refused"] += 1
            self.drop()
            return False
        return True

    def drop(self):
        if self.conn is not None:
            self.counts["reconnects"] += 1
        self.cache.clear()      # what it was told is lost with the connection
        super().drop()

    def loop(self):
        backoff = 0.05
        while not self.stop_ev.is_set():
            if self.conn is None:
                if not self.connect():
                    self.stop_ev.wait(backoff)
                    backoff = min(backoff * 2, 0.5)
                    continue
                backoff = 0.05
            self.one_op()
            if self.think_ms > 0 and not self.workload.focus:
                self.stop_ev.wait(self.rng.uniform(0, self.think_ms) / 1000.0)

    def one_op(self):
        opid = self.history.op_id()
        if self.rng.random() < 0.5:     # read-mostly, as cache users are,
            # and half of those again of a key it holds (what a cache is for)
            held = list(self.cache) if self.rng.random() < 0.5 else None
            key = self.rng.choice(held or self.workload.all_keys)
            f, target, args, words = "get", key, {}, ["GET", key]
        else:
            f, target, args, words = self.workload.gen(self.rng, self.client, opid)
            for _ in range(16):  # the plain clients do the compare-and-sets (run_cas.py)
                if f != "cas":
                    break
                f, target, args, words = self.workload.gen(self.rng, self.client, opid)
            if f == "cas":
                f, target, args, words = "get", target, {}, ["GET", target]
        keys = target if isinstance(target, list) else [target]
        rec = {"kind": "op", "id": opid, "client": self.client, "colo": self.colo,
               "edge": self.edge, "f": f, "tracking": self.mode}
        if isinstance(target, list):
            rec["keys"] = target
        else:
            rec["key"] = target
        rec["args"] = args
        if f in ("get", "mget"):
            try:
                self.conn.drain()
            except Transport:
                self.drop()
                return
            t = time.monotonic()
            if all(k in self.cache for k in keys):
                got = [self.cache[k] for k in keys]
                value = got[0][0] if f == "get" else [g[0] for g in got]
                rec.update({"t0": t, "t1": t, "outcome": "ok", "value": value, "error": None,
                            "stale": any(g[1] for g in got),
                            "degraded": any(g[2] for g in got), "cached": True})
                self.history.write(rec)
                self.counts["cached"] += 1
                return
        is_write = f in WRITE_FS
        if is_write:
            for k in keys:
                self.cache.pop(k, None)
        tracked = self.mode != "optin"
        if f in ("get", "mget", "exists") and self.mode == "optin":
            if self.rng.random() < 0.8:
                try:
                    r = self.conn.call(["CLIENT", "CACHING", "yes"], timeout=2.0)
                except Transport:
                    self.drop()
                    return
                if r == "OK":
                    tracked = True
                else:
                    self.counts["refused"] += 1
            else:
                self.counts["uncached_optin"] += 1
        t0 = time.monotonic()
        deadline = t0 + REQUEST_TIMEOUT_S
        outcome, value, error, stale, degraded = "info", None, None, False, False
        try:
            self.conn.send(words, deadline)
            reply = self.conn.read(deadline)
            t1 = time.monotonic()
            for a in self.conn.attrs:
                stale = stale or a.get("stale") is True
                degraded = degraded or a.get("degraded") is True
            if isinstance(reply, RespError):
                error = str(reply)
                outcome = classify_error(error, f, is_write)
            else:
                try:
                    value = reply_value(f, args, reply)
                    outcome = "ok"
                except ValueError as e:
                    error = "runner: %s" % e
                    self.history.surprise("op %d: %s" % (opid, e))
        except Transport as e:
            t1 = time.monotonic()
            error = "runner: %s" % e
            self.drop()
        rec.update({"t0": t0, "t1": t1, "outcome": outcome, "value": value, "error": error,
                    "stale": stale, "degraded": degraded})
        self.history.write(rec)
        if f in ("get", "mget"):
            self.counts["sent_reads"] += 1
            # The reply fills the cache: pushes read before it were for older
            # versions (the edge places an invalidation after every reply owed
            # when the change reached it), so this answer is the newest known.
            if outcome == "ok" and tracked and self.conn is not None:
                vals = [value] if f == "get" else value
                for k, v in zip(keys, vals):
                    self.cache[k] = (v, stale, degraded)
                self.counts["fills"] += 1


def summary(clients, info):
    """The summary line of the tracking clients, with the edges' INFO
    counters (a dict, or None when INFO could not be read)."""
    if not clients:
        return None
    tot = {}
    for c in clients:
        for k, v in c.counts.items():
            tot[k] = tot.get(k, 0) + v
    modes = ",".join(c.mode for c in clients)
    line = ("tracking clients: %d (%s): reads from their caches %d, reads sent %d (%d filled), "
            "invalidation pushes %d (%d keys, %d flushes), reconnects %d, TRACKING/CACHING "
            "refused %d" % (
                len(clients), modes, tot["cached"], tot["sent_reads"], tot["fills"],
                tot["pushes"], tot["keys_invalidated"], tot["flushes"], tot["reconnects"],
                tot["refused"]))
    if info:
        line += "; INFO tracking_invalidations %s, tracking_flushes %s, " \
                "tracking_evicted_keys %s" % (info.get("tracking_invalidations", "?"),
                                              info.get("tracking_flushes", "?"),
                                              info.get("tracking_evicted_keys", "?"))
    return line
