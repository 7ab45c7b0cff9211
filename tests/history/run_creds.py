"""run_creds.py - credential churn for the history runner (run.py): the users
of the daemon's config, changed by reload while probers log in with every
credential the run ever used, over RESP (AUTH on a new connection and again
on an old one) and over HTTP (Basic auth, on keep-alive sessions that keep
one credential across reloads: a session that cached a login must not keep
it once the login is revoked).

The promise checked (issue 25): a credential revoked by a reload is never
accepted once every edge runs the new config (INFO server
config_generation, asked of each edge).  Passwords are never reused, so a
credential once revoked stays revoked.  Attempts go to DIR/auth.jsonl, one
line each; check_auth() (also `python3 run_creds.py DIR/auth.jsonl`) is
the checker, tested in test_checker.py.

The users: `worker` (every client and the runner log in as it; never
changed), the default user's requirepass, a user `churn` whose password
changes, and a user `tmpN` that exists for one generation only; the table
keeps its size across generations (the bug this finds: a session caching a
pointer to a freed users table that a later reload allocates again)."""

import base64
import json
import random
import socket
import threading
import time

from run_resp import Conn, RespError, Transport, info_fields

WORKER = ("worker", "worker-pw-0")
MARGIN_S = 0.05        # after every edge shows the generation


class Creds:
    """The users of the config now, and when each credential was revoked."""

    def __init__(self, seed):
        self.rng = random.Random("%s-creds" % seed)
        self.lock = threading.Lock()
        self.gen = 0
        self.current = self._make(0)
        self.known = list(self.current)        # every (user, password) ever valid
        self.revoked = {}                      # (user, pw) -> t every edge had it revoked
        self.pending = []                      # creds revoked by a reload not yet confirmed
        self.reloads = 0
        self.confirmed = 0

    def _make(self, gen):
        tag = "%d-%06x" % (gen, self.rng.getrandbits(24))
        return [("default", "rp-" + tag), ("churn", "ch-" + tag), ("tmp%d" % gen, "tmp-" + tag)]

    def conf_lines(self):
        with self.lock:
            cur = list(self.current)
        lines = ["requirepass %s" % cur[0][1],
                 "user %s on >%s ~* +@all" % WORKER]
        for user, pw in cur[1:]:
            lines.append("user %s on >%s ~* +@read" % (user, pw))
        return lines

    def next_gen(self):
        """A new set of credentials (the conf is written from it); returns
        the credentials this generation revokes."""
        with self.lock:
            self.gen += 1
            old = self.current
            self.current = self._make(self.gen)
            self.known.extend(self.current)
            self.pending.append(list(old))
            return old

    def confirm(self, t):
        """Every edge runs the config written last: its revocations hold from t."""
        with self.lock:
            for creds in self.pending:
                for c in creds:
                    self.revoked.setdefault(c, t)
            self.pending = []
            self.confirmed += 1

    def pick(self, rng):
        with self.lock:
            recent = self.known[-12:]
            return rng.choice(recent if rng.random() < 0.7 else self.known)

    def revoked_at(self, cred):
        with self.lock:
            return self.revoked.get(tuple(cred))


def edge_generations(hkv, nedges, tries=24):
    """{edge pid: config_generation} of as many edges as a few connections reach."""
    out = {}
    for _ in range(tries):
        try:
            c = Conn(hkv.port, timeout=2.0)
        except OSError:
            continue
        try:
            f = info_fields(c.call(["INFO", "server"], timeout=2.0))
            out[f.get("edge_pid")] = int(f.get("config_generation", "0") or 0)
        except (Transport, ValueError, AttributeError):
            pass
        finally:
            c.close()
        if len(out) >= nedges:
            break
    return out


def reload_and_confirm(hkv, nedges, before, timeout=5.0):
    """SIGHUP (the conf already written); waits until every edge shows a
    config_generation above `before`.  Returns (confirmed time or None, gens)."""
    import signal
    hkv.proc.send_signal(signal.SIGHUP)
    end = time.monotonic() + timeout
    gens = {}
    while time.monotonic() < end:
        gens = edge_generations(hkv, nedges)
        if len(gens) >= nedges and all(g > before for g in gens.values()):
            return time.monotonic(), gens
        time.sleep(0.02)
    return None, gens


def current_generation(hkv, nedges):
    gens = edge_generations(hkv, nedges)
    return max(gens.values()) if gens else 0


# ---- the probers ---------------------------------------------------------------


class AuthLog:
    def __init__(self, path):
        self.f = open(path, "w", encoding="utf-8")
        self.lock = threading.Lock()
        self.n = 0

    def write(self, via, cred, t0, t1, accepted, reply):
        line = json.dumps({"via": via, "user": cred[0], "password": cred[1], "t0": t0,
                           "t1": t1, "accepted": accepted, "reply": reply[:80]})
        with self.lock:
            self.f.write(line + "\n")
            self.n += 1

    def close(self):
        with self.lock:
            self.f.close()


def http_request(sock, path, cred, deadline):
    """One keep-alive GET; (status, headers dict, body) or raises OSError."""
    auth = base64.b64encode(("%s:%s" % cred).encode()).decode()
    sock.settimeout(max(0.01, deadline - time.monotonic()))
    sock.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Basic %s\r\n\r\n"
                  % (path, auth)).encode())
    return read_http_response(sock, deadline)


def read_http_response(sock, deadline, buf=None):
    """(status, headers, body) of one response (Content-Length framed)."""
    buf = buf if buf is not None else bytearray()
    while b"\r\n\r\n" not in buf:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("closed")
        buf += chunk
    head, rest = bytes(buf).split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for l in lines[1:]:
        if ":" in l:
            k, v = l.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", "0"))
    body = bytearray(rest)
    while len(body) < n:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("closed")
        body += chunk
    return status, headers, bytes(body[:n])


class Prober(threading.Thread):
    """Logs in, again and again, with credentials of the run; records each
    attempt.  kind: "resp-new" (AUTH on a new connection), "resp-again"
    (AUTH on one long connection), "http" (a keep-alive session that keeps
    the credential it started with for up to a few seconds)."""

    def __init__(self, kind, idx, seed, hkv, creds, log, stop, key):
        super().__init__(name="prober-%s-%d" % (kind, idx), daemon=True)
        self.kind = kind
        self.rng = random.Random("%s-prober-%s-%d" % (seed, kind, idx))
        self.hkv = hkv
        self.creds = creds
        self.log = log
        self.stop_ev = stop
        self.key = key
        self.error = None

    def run(self):
        try:
            getattr(self, "loop_" + self.kind.replace("-", "_"))()
        except Exception as e:
            self.error = "%s: %r" % (self.name, e)

    def resp_auth(self, c, cred):
        t0 = time.monotonic()
        args = ["AUTH", cred[1]] if cred[0] == "default" else ["AUTH", cred[0], cred[1]]
        try:
            r = c.call(args, timeout=3.0)
        except Transport as e:
            return None, t0, str(e)
        t1 = time.monotonic()
        ok = not isinstance(r, RespError) and r == "OK"
        self.log.write(self.kind, cred, t0, t1, ok, str(r))
        return ok, t0, str(r)

    def loop_resp_new(self):
        while not self.stop_ev.wait(self.rng.uniform(0.01, 0.04)):
            cred = self.creds.pick(self.rng)
            try:
                c = Conn(self.hkv.port, timeout=2.0, auth=None)
            except OSError:
                continue
            try:
                self.resp_auth(c, cred)
            finally:
                c.close()

    def loop_resp_again(self):
        c = None
        while not self.stop_ev.wait(self.rng.uniform(0.01, 0.04)):
            if c is None:
                try:
                    c = Conn(self.hkv.port, timeout=2.0, auth=None)
                except OSError:
                    continue
            ok, _, _ = self.resp_auth(c, self.creds.pick(self.rng))
            if ok is None:
                c.close()
                c = None
        if c is not None:
            c.close()

    def loop_http(self):
        sock, cred, until = None, None, 0.0
        while not self.stop_ev.wait(self.rng.uniform(0.005, 0.02)):
            now = time.monotonic()
            if sock is None or now > until:
                if sock is not None:
                    sock.close()
                try:
                    sock = socket.create_connection(("127.0.0.1", self.hkv.http_port), timeout=2.0)
                except OSError:
                    sock = None
                    continue
                # Start with a credential valid now, mostly: that is the
                # login a session may cache, then keep sending it.
                with self.creds.lock:
                    cur = list(self.creds.current)
                cred = self.rng.choice(cur) if self.rng.random() < 0.8 else \
                    self.creds.pick(self.rng)
                until = now + self.rng.uniform(1.0, 4.0)
            t0 = time.monotonic()
            try:
                status, _, _ = http_request(sock, "/v1/kv/" + self.key, cred, t0 + 3.0)
            except (OSError, ValueError, IndexError):
                sock.close()
                sock = None
                continue
            self.log.write("http", cred, t0, time.monotonic(), status != 401, str(status))
        if sock is not None:
            sock.close()


# ---- the check -------------------------------------------------------------------


def check_auth(attempts, revoked, margin=MARGIN_S):
    """attempts: dicts with via, user, password, t0, accepted; revoked:
    {(user, password): t}.  Returns (tried, accepted list): attempts with a
    credential revoked before t0 - margin, and those of them accepted."""
    tried, bad = 0, []
    for a in attempts:
        t = revoked.get((a["user"], a["password"]))
        if t is None or a["t0"] < t + margin:
            continue
        tried += 1
        if a["accepted"]:
            bad.append(a)
    return tried, bad


def load_attempts(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]
