"""run_http.py - readers over HTTP in the history (run.py): `GET /v1/kv/KEY`
and long polls (`?index=N&wait=...`, N the index the reader last saw of the
key) on keep-alive connections, logged in with Basic auth as the runner's
user.  Each answer is a get op of the history (tests/history/README.md):
200 the value, 404 missing, `X-Hotkvd-Stale: 1` the stale flag,
`X-Hotkvd-Degraded: 1` degraded (no information), 503/429 failed reads
(ignored), no answer info.  A long poll is a read anywhere in its interval:
answered when the key's version passes N or at the end of the wait, with
the value current then.  The op line carries "via": "http" and, for a
poll, "poll": {"index": N, "wait_ms": W}."""

import random
import socket
import threading
import time

from run_creds import http_request
from run_daemon import REQUEST_TIMEOUT_S


class HttpReader(threading.Thread):
    def __init__(self, index, seed, hkv, workload, history, stop, cred, think_ms):
        super().__init__(name="http-%d" % index, daemon=True)
        self.rng = random.Random("%s-http-%d" % (seed, index))
        self.hkv = hkv
        self.workload = workload
        self.history = history
        self.stop_ev = stop
        self.cred = cred
        self.think_ms = think_ms
        self.index_of = {}
        self.error = None
        self.counts = {"get": 0, "poll": 0}

    def run(self):
        try:
            self.loop()
        except Exception as e:
            self.error = "%s: %r" % (self.name, e)

    def loop(self):
        sock, client = None, None
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
            key = self.rng.choice(self.workload.all_keys)
            path = "/v1/kv/" + key
            poll = None
            if key in self.index_of and self.rng.random() < 0.3:
                poll = {"index": self.index_of[key], "wait_ms": self.rng.randint(300, 1500)}
                path += "?index=%s&wait=%dms" % (poll["index"], poll["wait_ms"])
            opid = self.history.op_id()
            rec = {"kind": "op", "id": opid, "client": client,
                   "colo": self.hkv.colo_names()[0], "edge": "http",
                   "f": "get", "key": key, "args": {}, "via": "http"}
            if poll:
                rec["poll"] = poll
            t0 = time.monotonic()
            outcome, value, error, stale, degraded = "info", None, None, False, False
            deadline = t0 + REQUEST_TIMEOUT_S + (poll["wait_ms"] / 500.0 if poll else 0)
            try:
                status, hdr, body = http_request(sock, path, self.cred, deadline)
                t1 = time.monotonic()
                if status in (200, 404):
                    outcome = "ok"
                    value = body.decode("utf-8", "replace") if status == 200 else None
                    stale = hdr.get("x-hotkvd-stale") == "1"
                    degraded = hdr.get("x-hotkvd-degraded") == "1"
                    if "x-hotkvd-index" in hdr and not degraded:
                        self.index_of[key] = hdr["x-hotkvd-index"]
                else:
                    outcome = "fail"
                    error = "HTTP %d %s" % (status, body[:60].decode("utf-8", "replace"))
                if hdr.get("connection", "").lower() == "close":
                    sock.close()
                    sock = None
            except (OSError, ValueError, IndexError) as e:
                t1 = time.monotonic()
                error = "runner: %s" % e
                sock.close()
                sock = None
            rec.update({"t0": t0, "t1": t1, "outcome": outcome, "value": value, "error": error,
                        "stale": stale, "degraded": degraded})
            self.history.write(rec)
            self.counts["poll" if poll else "get"] += 1
            if self.think_ms > 0:
                self.stop_ev.wait(self.rng.uniform(0, self.think_ms) / 1000.0)
        if sock is not None:
            sock.close()
