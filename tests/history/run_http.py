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
an equal value), so it is recorded as not applied (fail), which it was.

Idempotency-Key (README "HTTP", Writes): half the PUTs and DELETEs (drawn
from a stream of their own, `idem_rng`) carry
`Idempotency-Key: "<seed>-<reader>-<n>"`, unique in the run.  When such a
write's answer is 504 or there is none (timeout, closed connection), the
very same request (method, body, headers, key) is sent again on a new
connection after 50-200 ms, at most IDEM_ATTEMPTS attempts in all, each
bounded by REQUEST_TIMEOUT_S; a 503 or 429 on a retry refuses only that
attempt and is retried the same way.  The op's interval runs from the first
attempt's send to the last answer, and its outcome is that answer's by the
table above (a retry's 200/201/204/404/412 is the request's fate: the
owner's record of the first answer, or the first never ran); only when
every attempt leaves it unknown is it info, `answered` the last attempt's
end.  The op line says "idem": true, "idem_key", "attempts" and, when an
answer carried `Idempotent-Replayed: true`, "replayed": true; the next op
after a retried one is a new client (it went on another connection).  A
422 (the key is unique, the attempts byte-identical) or a replay answer to
a request without the header is a broken promise: self.error, the run
fails.  A write applied twice shows to the checker as a value read again
after another write, or a failed/NX-not-met/DEL-0 answer whose effect is
read (values are unique).  Not retried: a ledger key after a crash line of
its pool since the first attempt, with `replicas 0` (README: such a crash
may lose the record without the write, so a retry may apply it again;
counted as idem-crash-kept), and once the run is stopping."""

import random
import socket
import threading
import time

import base64

import run_cas

from run_creds import http_request, read_http_response
from run_daemon import CLASSES, REQUEST_TIMEOUT_S

IDEM_SHARE = 0.5        # of the PUTs and DELETEs: with an Idempotency-Key
IDEM_ATTEMPTS = 3       # attempts of such a write while its outcome is unknown


class HttpReader(threading.Thread):
    def __init__(self, index, seed, hkv, workload, history, stop, cred, think_ms,
                 write_ratio=0.0, idem_ratio=IDEM_SHARE):
        super().__init__(name="http-%d" % index, daemon=True)
        self.rng = random.Random("%s-http-%d" % (seed, index))
        # a stream of its own: self.rng draws the same choices as without it
        self.idem_rng = random.Random("%s-http-idem-%d" % (seed, index))
        self.seed, self.index = seed, index
        self.idem_ratio = idem_ratio
        self.idem_n = 0
        # With followers (replicas >= 1) a kill loses no record a write kept;
        # without them a retry across a crash of a ledger key is not made.
        self.no_loss_retry = bool(getattr(hkv, "replicas", 0))
        self.hkv = hkv
        self.workload = workload
        self.history = history
        self.stop_ev = stop
        self.cred = cred
        self.think_ms = think_ms
        self.index_of = {}
        self.error = None
        self.counts = {"get": 0, "poll": 0, "put": 0, "delete": 0, "if-match": 0,
                       "if-match-412": 0, "idem": 0, "idem-retries": 0, "idem-replayed": 0,
                       "idem-settled": 0, "idem-crash-kept": 0}
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

    # -- writes

    def _crashes(self, key):
        """Crash lines so far of the owners of key's pool (the key's owner may
        change by a move, never its pool)."""
        pool = CLASSES[key.split(":", 1)[0]]["pool"] + "/"
        with self.history.lock:
            return sum(n for o, n in self.history.crashes.items() if o.startswith(pool))

    def _connect(self, deadline):
        """A new connection for a retry, tried until deadline; None if none."""
        while not self.stop_ev.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                s = socket.create_connection(("127.0.0.1", self.hkv.http_port),
                                             timeout=min(2.0, left))
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return s
            except OSError:
                self.stop_ev.wait(min(0.1, max(0.0, deadline - time.monotonic())))
        return None

    def write(self, sock, client, key):
        """One PUT or DELETE of key on sock (with an Idempotency-Key, retried
        on new connections while its outcome is unknown): its op line; the
        socket to go on with (None: closed, or the op was retried: the next
        op is a new client)."""
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
        idem = None
        if self.idem_rng.random() < self.idem_ratio:
            self.idem_n += 1
            idem = "%s-%d-%d" % (self.seed, self.index, self.idem_n)
            extra += 'Idempotency-Key: "%s"\r\n' % idem
            rec["idem"], rec["idem_key"] = True, idem
        auth = base64.b64encode(("%s:%s" % self.cred).encode()).decode()
        request = ("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n%s"
                   "Content-Length: %d\r\n\r\n" % (method, path, auth, extra, len(body))
                   ).encode() + body
        ok = {("PUT", 200): "OK", ("PUT", 201): "OK", ("PUT", 412): None,
              ("DELETE", 204): 1, ("DELETE", 404): 0}
        crashes0 = self._crashes(key) if idem else 0
        t0 = time.monotonic()
        attempts, replayed = 0, False
        while True:
            attempts += 1
            ta = time.monotonic() if attempts > 1 else t0
            if attempts > 1:
                sock = self._connect(ta + REQUEST_TIMEOUT_S)
            outcome, value, error, status, hdr = "info", None, None, None, {}
            if sock is None:
                error = "runner: no connection for the retry"
            else:
                try:
                    sock.settimeout(REQUEST_TIMEOUT_S)
                    sock.sendall(request)
                    status, hdr, text = read_http_response(sock, ta + REQUEST_TIMEOUT_S)
                    if hdr.get("connection", "").lower() == "close":
                        sock.close()
                        sock = None
                except (OSError, ValueError, IndexError) as e:
                    error = "runner: %s" % e  # the write may still be applied
                    sock.close()
                    sock = None
            t1 = time.monotonic()
            if hdr.get("idempotent-replayed", "").lower() == "true":
                replayed = True
                self.counts["idem-replayed"] += 1
                if idem is None and self.error is None:
                    self.error = "%s: op %d %s %s without Idempotency-Key answered with " \
                                 "Idempotent-Replayed" % (self.name, opid, method, key)
            retry_ok = False  # this answer leaves the op's outcome unknown, a retry may settle it
            if status is None:
                pass
            elif status == 504:
                error = "HTTP 504 %s" % text[:60].decode("utf-8", "replace")
                retry_ok = True
            elif attempts > 1 and status in (503, 429):
                # this attempt was refused (not applied); the first one's fate is still open
                error = "HTTP %d on retry %d %s" % (status, attempts - 1,
                                                    text[:60].decode("utf-8", "replace"))
                retry_ok = True
            elif status == 422 and idem is not None:
                # the key is new and every attempt byte-identical: a broken promise
                error = "HTTP 422 %s" % text[:60].decode("utf-8", "replace")
                if attempts == 1:
                    outcome = "fail"    # README: 422 is not applied
                if self.error is None:
                    self.error = ("%s: PROMISE BROKEN: op %d %s %s Idempotency-Key %s: attempt "
                                  "%d of the same request answered 422 (%s)" % (
                                      self.name, opid, method, key, idem, attempts, error))
            elif cas is not None and status == 412:
                outcome = "fail"       # not applied; the value may still be equal
                error = "HTTP 412 If-Match"
                self.counts["if-match-412"] += 1
            elif (method, status) in ok:
                outcome, value = "ok", ok[(method, status)]
                if cas is not None and "etag" in hdr:
                    self.etags[key] = (hdr["etag"], rec["args"]["value"])
            elif attempts == 1:
                outcome = "fail"
                error = "HTTP %d %s" % (status, text[:60].decode("utf-8", "replace"))
            else:
                # refused on a retry: says nothing of the first attempt
                error = "HTTP %d on retry %d %s" % (status, attempts - 1,
                                                    text[:60].decode("utf-8", "replace"))
            if outcome != "info" or idem is None or attempts >= IDEM_ATTEMPTS \
                    or (status is not None and not retry_ok):
                break
            # Outcome unknown: the very same request again, on a new connection.
            if sock is not None:
                sock.close()
                sock = None
            if self.stop_ev.wait(self.idem_rng.uniform(0.05, 0.2)):
                break   # the run is over: no attempt that could outlive the join
            if not self.no_loss_retry and self._crashes(key) != crashes0 and \
                    CLASSES[key.split(":", 1)[0]]["durability"] == "ledger":
                # README: without followers a crash may lose a ledger write's
                # record and not the write (or both, after a read saw it):
                # a retry may then apply it again, which is not promised
                self.counts["idem-crash-kept"] += 1
                break
        if outcome == "info":
            rec["answered"] = t1  # when it was told "unknown" or gave up (the effect is open)
            t1 = None
        elif attempts > 1:
            self.counts["idem-settled"] += 1
        if idem is not None:
            rec["attempts"] = attempts
            if replayed:
                rec["replayed"] = True
        rec.update({"t0": t0, "t1": t1, "outcome": outcome, "value": value, "error": error,
                    "stale": False, "degraded": False})
        self.history.write(rec)
        self.counts["delete" if method == "DELETE" else "put"] += 1
        self.counts["if-match"] += cas is not None
        self.counts["idem"] += idem is not None
        self.counts["idem-retries"] += attempts - 1
        if attempts > 1 and sock is not None:
            sock.close()   # the next op on a new connection: a new client
            sock = None
        if self.think_ms > 0:
            self.stop_ev.wait(self.rng.uniform(0, self.think_ms) / 1000.0)
        return sock
