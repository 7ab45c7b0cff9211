"""run_outlimit.py - clients that pin edge memory, for the history runner
(run.py), and the edges' memory sampled against a bound.

Issue 25: every byte an edge holds for a client counts against that
client's output limits.  Two fault kinds:
  - slow_reader: RESP connections pipeline GETs of a large value and never
    read (the edge must drop each past client-output-buffer-limit);
  - http_stream: HTTP connections open `GET /v1/watch/KEY` (a request that
    never finishes) with GETs of the large value pipelined behind it, never
    reading (the edge must count what it holds for them, or refuse them).
A sampler reads every edge's VmRSS (/proc/PID/status) every 100 ms for the
whole run.  The bound: the largest edge's VmRSS once the daemon serves
(baseline), plus the colo cache (cache-memory, shared pages count in RSS),
plus the output limit (hard) twice for each output-limit client the run
holds at once (what the edge may legitimately buffer, and the kernel-side
slack), plus SLACK_MB."""

import base64
import socket
import threading
import time

from run_daemon import CACHE_MB, OUTPUT_LIMIT
import run_resp
from run_resp import Conn, Transport

BIG_KEY = "hl:ob-big"
BIG_BYTES = 512 * 1024
CLIENTS = 2              # connections per fault
PIPELINED = 240          # GETs of BIG_KEY each pipelines (120 MB of replies)
HOLD_S = 3.0
SLACK_MB = 48


def vm_rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


class OutLimit:
    def __init__(self, hkv, log):
        self.hkv = hkv
        self.log = log
        self.baseline_kb = None
        self.max_kb = 0
        self.max_edge = None
        self.max_t = None
        self.over = []               # (t, edge, kb) samples over the bound
        self.stop_ev = threading.Event()
        self.thread = None
        self.done = {"slow_reader": 0, "http_stream": 0}
        self.dropped = 0             # output-limit connections the edge closed
        self.lock = threading.Lock()

    def bound_kb(self):
        if self.baseline_kb is None:
            return None
        per = 2 * OUTPUT_LIMIT // 1024
        return self.baseline_kb + CACHE_MB * 1024 + CLIENTS * per + SLACK_MB * 1024

    def setup(self):
        c = Conn(self.hkv.port, timeout=5.0)
        try:
            c.call(["SET", BIG_KEY, "v" * BIG_BYTES], timeout=10.0)
        finally:
            c.close()
        self.baseline_kb = max([vm_rss_kb(p) or 0 for t, p in self.hkv.children().items()
                                if t.startswith("edge ")] or [0])
        self.thread = threading.Thread(target=self.sample, name="rss", daemon=True)
        self.thread.start()

    def sample(self):
        last_log = 0.0
        while not self.stop_ev.wait(0.1):
            bound = self.bound_kb()
            now = time.monotonic()
            if now - last_log >= 2.0:
                last_log = now
                self.log("rss: " + " ".join(
                    "%s=%.1fMB" % (t[len("edge "):], (vm_rss_kb(p) or 0) / 1024.0)
                    for t, p in sorted(self.hkv.children().items()) if t.startswith("edge ")))
            for title, pid in self.hkv.children().items():
                if not title.startswith("edge "):
                    continue
                kb = vm_rss_kb(pid)
                if kb is None:
                    continue
                with self.lock:
                    if kb > self.max_kb:
                        self.max_kb, self.max_edge, self.max_t = kb, title, time.monotonic()
                    if bound is not None and kb > bound:
                        self.over.append((time.monotonic(), title, kb))

    def stop(self):
        self.stop_ev.set()
        if self.thread is not None:
            self.thread.join(2.0)

    def _hold(self, socks):
        time.sleep(HOLD_S)
        closed = 0
        for s in socks:
            # A dropped client reads EOF (or a reset) once its buffer drains.
            try:
                s.setblocking(False)
                while True:
                    d = s.recv(1 << 20)
                    if not d:
                        closed += 1
                        break
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
            s.close()
        return closed

    def do_slow_reader(self, nem):
        t0 = time.monotonic()
        socks = []
        for _ in range(CLIENTS):
            try:
                c = Conn(self.hkv.port, timeout=3.0)
            except OSError:
                continue
            s = c.sock
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            req = Conn.encode(["GET", BIG_KEY]) * PIPELINED
            try:
                s.settimeout(2.0)
                s.sendall(req)
            except OSError:
                pass
            socks.append(s)
        closed = self._hold(socks)
        self.done["slow_reader"] += 1
        self.dropped += closed
        nem.fault("slow_reader", "edges", t0, time.monotonic(),
                  {"connections": len(socks), "pipelined": PIPELINED, "value_bytes": BIG_BYTES,
                   "closed_by_edge": closed, "max_rss_kb": self.max_kb})

    def do_http_stream(self, nem):
        t0 = time.monotonic()
        socks = []
        auth = ""
        if run_resp.AUTH is not None:
            auth = "Authorization: Basic %s\r\n" % base64.b64encode(
                ("%s:%s" % run_resp.AUTH).encode()).decode()
        watch = "GET /v1/watch/%s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (BIG_KEY, auth)
        get = "GET /v1/kv/%s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (BIG_KEY, auth)
        for _ in range(CLIENTS):
            try:
                s = socket.create_connection(("127.0.0.1", self.hkv.http_port), timeout=3.0)
            except OSError:
                continue
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            try:
                s.settimeout(2.0)
                s.sendall((watch + get * PIPELINED).encode())
            except OSError:
                pass
            socks.append(s)
        # The stream's events: a write of the key while nobody reads.
        try:
            c = Conn(self.hkv.port, timeout=3.0)
            c.call(["SET", BIG_KEY, "w" * BIG_BYTES], timeout=5.0)
            c.close()
        except (OSError, Transport):
            pass
        closed = self._hold(socks)
        self.done["http_stream"] += 1
        self.dropped += closed
        nem.fault("http_stream", "edges", t0, time.monotonic(),
                  {"connections": len(socks), "pipelined_behind_watch": PIPELINED,
                   "value_bytes": BIG_BYTES, "closed_by_edge": closed,
                   "max_rss_kb": self.max_kb})

    def summary(self):
        b = self.bound_kb()
        return ("edge RSS: max %.1f MB (%s) vs bound %.1f MB (baseline %.1f MB + cache %d MB + "
                "%d x 2 x output limit %d MB + slack %d MB)%s" % (
                    self.max_kb / 1024.0, self.max_edge or "-", (b or 0) / 1024.0,
                    (self.baseline_kb or 0) / 1024.0, CACHE_MB, CLIENTS, OUTPUT_LIMIT >> 20,
                    SLACK_MB, ("; OVER THE BOUND in %d samples, first at %s %.1f MB"
                               % (len(self.over), self.over[0][1], self.over[0][2] / 1024.0))
                    if self.over else ""))
