"""run_http.py - readers over HTTP in the history (run.py): `GET /v1/kv/KEY`
and long polls (`?index=N&wait=...`, N the index the reader last saw of the
key) on keep-alive connections, logged in with Basic auth as the runner's
user.  Each answer is a get op of the history (tests/history/README.md):
200 the value, 404 missing, `X-Hotkvd-Stale: 1` the stale flag,
`X-Hotkvd-Degraded: 1` degraded (no information), 503/429 failed reads
(ignored), no answer info.  A long poll is a read anywhere in its interval:
answered when the key's version passes N or at the end of the wait, with
the value current then.  The op line carries "via": "http" and, for a
poll, "poll": {"index": N, "wait_ms": W}.

Writes over HTTP (issue 28; a share `write_ratio` of each reader's ops):
`PUT /v1/kv/KEY` (body a unique value, sometimes `If-None-Match: *` and
`?ttl=` of an hour or more) is a set op, `DELETE /v1/kv/KEY` a del op, both
with "via": "http", recorded with README's error table in HTTP's words:
200/201 set "OK", 412 set null (NX not met), 204 del 1, 404 del 0; 504 or
no answer outcome unknown (info); any other status not applied (fail).

A share of the PUTs is a compare-and-set on the owner's version (`If-Match`
with the ETag a GET of this reader last answered with the value it came
with), recorded as run_cas.py records SETIFMATCH: 200 is SET value IFEQ
<that value> answered OK (the key still held the write the ETag names); a
412 says only that the version moved (an EXPIRE makes a new version over
an equal value), so it is recorded as not applied (fail), which it was."""

import random
import socket
import threading
import time

import base64

import run_cas

from run_creds import http_request, read_http_response
from run_daemon import REQUEST_TIMEOUT_S


class HttpReader(threading.Thread):
    def __init__(self, index, seed, hkv, workload, history, stop, cred, think_ms,
                 write_ratio=0.0):
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
        self.counts = {"get": 0, "poll": 0, "put": 0, "delete": 0, "if-match": 0,
                       "if-match-412": 0}
        self.etags = {}  # key -> (ETag, value) of this reader's last 200
        self.write_ratio = write_ratio

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
            if self.rng.random() < self.write_ratio:
                sock = self.write(sock, client, key)
                continue
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
                    if status == 200 and not degraded and "etag" in hdr:
                        self.etags[key] = (hdr["etag"], value)
                    else:
                        self.etags.pop(key, None)
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

    def write(self, sock, client, key):
        """One PUT or DELETE of key on sock: its op line; the socket to go on
        with (None: closed)."""
        opid = self.history.op_id()
        rec = {"kind": "op", "id": opid, "client": client,
               "colo": self.hkv.colo_names()[0], "edge": "http", "key": key, "via": "http"}
        extra, body, path = "", b"", "/v1/kv/" + key
        cas = None
        if self.rng.random() < 0.3:
            method, rec["f"], rec["args"] = "DELETE", "del", {}
        else:
            value = "h%d-%d" % (client, opid)
            cas = self.etags.pop(key, None) if self.rng.random() < 0.4 else None
            nx = cas is None and self.rng.random() < 0.2
            ttl = self.rng.randint(3600, 7200) if self.rng.random() < 0.1 else None
            method, rec["f"], body = "PUT", "set", value.encode()
            rec["args"] = {"value": value, "nx": nx, "xx": False, "get": False,
                           "keepttl": False, "px": ttl * 1000 if ttl else None}
            if nx:
                extra += "If-None-Match: *\r\n"
            if cas is not None:
                extra += "If-Match: %s\r\n" % cas[0]
                rec["args"] = run_cas.set_args(value, cas[1])
                rec["args"]["via"] = "http-if-match"
                rec["args"]["px"] = ttl * 1000 if ttl else None
            if ttl:
                path += "?ttl=%d" % ttl
        auth = base64.b64encode(("%s:%s" % self.cred).encode()).decode()
        t0 = time.monotonic()
        outcome, value, error = "info", None, None
        try:
            sock.settimeout(REQUEST_TIMEOUT_S)
            sock.sendall(("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n%s"
                          "Content-Length: %d\r\n\r\n" % (method, path, auth, extra, len(body))
                          ).encode() + body)
            status, hdr, text = read_http_response(sock, t0 + REQUEST_TIMEOUT_S)
            t1 = time.monotonic()
            ok = {("PUT", 200): "OK", ("PUT", 201): "OK", ("PUT", 412): None,
                  ("DELETE", 204): 1, ("DELETE", 404): 0}
            if cas is not None and status == 412:
                outcome = "fail"       # not applied; the value may still be equal
                error = "HTTP 412 If-Match"
                self.counts["if-match-412"] += 1
            elif (method, status) in ok:
                outcome, value = "ok", ok[(method, status)]
                if cas is not None and "etag" in hdr:
                    self.etags[key] = (hdr["etag"], rec["args"]["value"])
            elif status == 504:
                error = "HTTP 504 %s" % text[:60].decode("utf-8", "replace")
                rec["answered"] = t1  # when it was told "unknown" (t1: the effect is open)
                t1 = None
            else:
                outcome = "fail"
                error = "HTTP %d %s" % (status, text[:60].decode("utf-8", "replace"))
            if hdr.get("connection", "").lower() == "close":
                sock.close()
                sock = None
        except (OSError, ValueError, IndexError) as e:
            t1 = None  # the write may still be applied: outcome unknown, open-ended
            rec["answered"] = time.monotonic()
            error = "runner: %s" % e
            sock.close()
            sock = None
        rec.update({"t0": t0, "t1": t1, "outcome": outcome, "value": value, "error": error,
                    "stale": False, "degraded": False})
        self.history.write(rec)
        self.counts["delete" if method == "DELETE" else "put"] += 1
        self.counts["if-match"] += cas is not None
        if self.think_ms > 0:
            self.stop_ev.wait(self.rng.uniform(0, self.think_ms) / 1000.0)
        return sock
