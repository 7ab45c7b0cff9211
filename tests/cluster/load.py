"""load.py - background clients for the scenarios that must show "service
uninterrupted": each Loader is one connection to one host looping SET k v /
GET k (expecting v: the writer's own host has it) over keys owned by every
host, and counts every error reply, lost connection and wrong value, with
the first few kept for the report.  Bounded: each request has a timeout, the
loop stops on an event and every reconnect backs off."""

import threading
import time

from run_resp import Transport


class Loader(threading.Thread):
    def __init__(self, host, keys, label, think=0.005, timeout=5.0):
        super().__init__(name="load-" + label, daemon=True)
        self.host = host
        self.keys = keys
        self.label = label
        self.think = think
        self.timeout = timeout
        self.stop_ev = threading.Event()
        self.ops = 0
        self.errors = 0
        self.first = []         # (t, what) of the first errors
        self.max_ms = 0.0
        self.t0 = time.monotonic()

    def error(self, what):
        self.errors += 1
        if len(self.first) < 8:
            self.first.append("%.2f s %s" % (time.monotonic() - self.t0, what))

    def timed(self, conn, words):
        t = time.monotonic()
        r = conn.call(words, timeout=self.timeout)
        self.max_ms = max(self.max_ms, (time.monotonic() - t) * 1000)
        self.ops += 1
        return r

    def run(self):
        conn, i, backoff = None, 0, 0.05
        while not self.stop_ev.is_set():
            if conn is None:
                try:
                    conn = self.host.conn(timeout=self.timeout)
                    backoff = 0.05
                except OSError as e:
                    self.error("connect: %s" % e)
                    self.stop_ev.wait(backoff)
                    backoff = min(1.0, backoff * 2)
                    continue
            key = self.keys[i % len(self.keys)]
            val = "%s-%d" % (self.label, i)
            i += 1
            try:
                r = self.timed(conn, ["SET", key, val])
                if r != "OK":
                    self.error("SET %s: %r" % (key, r))
                    continue
                r = self.timed(conn, ["GET", key])
                if r != val:
                    self.error("GET %s: %r, expected %r" % (key, r, val))
            except Transport as e:
                self.error("%s: %s" % (key, e))
                conn.close()
                conn = None
            self.stop_ev.wait(self.think)
        if conn is not None:
            conn.close()

    def stop(self):
        self.stop_ev.set()
        self.join(self.timeout + 2)

    def summary(self):
        return "%s: %d ops, %d errors, slowest %.0f ms%s" % (
            self.label, self.ops, self.errors, self.max_ms,
            (" (first: %s)" % "; ".join(self.first)) if self.first else "")


def start_loaders(cl, per_host_keys=2, cls="hl", think=0.005):
    """One loader per host, each over keys of its own (a loader reads its own
    writes back) owned by every host."""
    out = []
    for name, h in cl.hosts.items():
        keys = []
        for owner_host in cl.host_names:
            keys += cl.keys_on(owner_host, cls, per_host_keys, tag="load-" + name)
        ld = Loader(h, keys, "load@" + name, think=think)
        ld.start()
        out.append(ld)
    return out


def stop_loaders(loaders):
    for ld in loaders:
        ld.stop_ev.set()
    for ld in loaders:
        ld.join(ld.timeout + 2)
    return sum(ld.errors for ld in loaders), sum(ld.ops for ld in loaders)
