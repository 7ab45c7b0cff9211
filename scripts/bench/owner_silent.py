#!/usr/bin/python3
"""owner_silent.py - what a silent owner costs readers (issue 25, item 4).

Starts hotkvd (--bin) on a free port in a temp dir with two edges in one
colo, caches --keys keys of a class with fresh 1s (the default miss-wait,
1200 ms), leaves them idle past fresh + miss-wait, SIGSTOPs the owner that
holds them for --stop seconds and reads the keys round-robin over --conns
connections (spread over both edges) the whole time, one read at a time.
Reports how many reads waited more than --slow-ms, how the waits group
into episodes (a run of slow reads less than a miss-wait apart), and the
latency percentiles, then SIGCONTs the owner (always, also on error),
checks that a write is read back, and stops the daemon by pid.

Raw sockets, no client library.  Usage:
  scripts/bench/owner_silent.py --bin bin/hotkvd [--keys 1000] [--stop 20]
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, *words):
        out = [b"*%d\r\n" % len(words)]
        for w in words:
            w = w if isinstance(w, bytes) else str(w).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(w), w))
        self.s.sendall(b"".join(out))

    def _line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        v, self.buf = self.buf[:n], self.buf[n + 2:]
        return v

    def reply(self):
        """One RESP2/RESP3 reply; an attribute (|) is returned as
        ('attr', dict, value)."""
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-", b":", b"#", b","):
            return (t.decode(), rest.decode())
        if t in (b"$", b"="):
            n = int(rest)
            return ("bulk", None) if n < 0 else ("bulk", self._exact(n))
        if t == b"_":
            return ("bulk", None)
        if t in (b"*", b"~", b">"):
            n = int(rest)
            return ("array", [self.reply() for _ in range(max(n, 0))])
        if t == b"%":
            n = int(rest)
            return ("map", [(self.reply(), self.reply()) for _ in range(n)])
        if t == b"|":
            n = int(rest)
            attr = {}
            for _ in range(n):
                k, v = self.reply(), self.reply()
                attr[k[1].decode() if isinstance(k[1], bytes) else k[1]] = v[1]
            return ("attr", attr, self.reply())
        raise ValueError("bad reply %r" % line)

    def cmd(self, *words):
        self.send(*words)
        return self.reply()


def info_field(port, name):
    c = Conn(port)
    r = c.cmd("INFO", "all")
    c.s.close()
    for line in r[1].decode().splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return None


def children(master):
    kids = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != master:
                continue
            with open("/proc/%s/cmdline" % p, "rb") as f:
                kids[int(p)] = f.read().split(b"\0")[0].decode(errors="replace")
        except (OSError, ValueError, IndexError):
            pass
    return kids


def pct(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--stop", type=float, default=20.0)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--slow-ms", type=float, default=50.0)
    ap.add_argument("--miss-wait-ms", type=int, default=1200)
    a = ap.parse_args()

    d = tempfile.mkdtemp(prefix="hkv-silent-")
    port = free_port()
    conf = os.path.join(d, "hotkvd.conf")
    with open(conf, "w") as f:
        f.write("bind 127.0.0.1\nport %d\ndir %s\nlogfile %s/hotkvd.log\n"
                "edge-workers 2\nhot-owners 1\ncold-owners 1\nmiss-wait %dms\n"
                "class bench pattern \"b:*\" pool hot fresh 1s keep 10m on-timeout degrade\n"
                % (port, d, d, a.miss_wait_ms))
    daemon = subprocess.Popen([a.bin, conf])
    owner = 0
    try:
        for _ in range(200):
            try:
                c = Conn(port)
                if c.cmd("PING")[1] == "PONG":
                    c.s.close()
                    break
            except OSError:
                time.sleep(0.05)
        time.sleep(0.5)
        conns = [Conn(port) for _ in range(a.conns)]
        edges = {}
        for c in conns:
            pid = None
            for line in c.cmd("INFO", "server")[1].decode().splitlines():
                if line.startswith("edge_pid:"):
                    pid = int(line.split(":")[1])
            edges[pid] = edges.get(pid, 0) + 1
            c.cmd("HELLO", "3")
            c.cmd("CLIENT", "META", "ON")
        keys = ["b:%d" % i for i in range(a.keys)]
        for i, k in enumerate(keys):
            conns[i % len(conns)].cmd("SET", k, "v%d" % i)
        for i, k in enumerate(keys):
            conns[(i + 1) % len(conns)].cmd("GET", k)
        time.sleep(1.0 + a.miss_wait_ms / 1000.0 + 0.5)  # idle past fresh + miss-wait

        for pid, title in children(daemon.pid).items():
            if title.startswith("hotkvd: owner hot/0"):
                owner = pid
        if owner == 0:
            raise RuntimeError("no owner hot/0 among %r" % children(daemon.pid))
        os.kill(owner, signal.SIGSTOP)
        t0 = time.monotonic()
        lat, slow_at, wrong, unflagged, n = [], [], 0, 0, 0
        while time.monotonic() < t0 + a.stop:
            i = n % len(keys)
            c = conns[n % len(conns)]
            t = time.monotonic()
            r = c.cmd("GET", keys[i])
            dt = (time.monotonic() - t) * 1000.0
            lat.append(dt)
            if dt > a.slow_ms:
                slow_at.append((t - t0) * 1000.0)
            val = r[2] if r[0] == "attr" else r
            if val != ("bulk", b"v%d" % i):
                wrong += 1
            elif r[0] != "attr" or r[1].get("stale") not in ("t", True):
                unflagged += 1
            n += 1
        os.kill(owner, signal.SIGCONT)
        stopped = owner
        owner = 0
        episodes = 0
        last = None
        for t in slow_at:
            if last is None or t - last > a.miss_wait_ms:
                episodes += 1
            last = t
        lat.sort()
        print("binary: %s" % a.bin)
        print("edges: %d (connections per edge pid: %s)" % (len(edges), edges))
        print("owner %d stopped %.0f s: %d reads of %d keys round-robin over %d connections"
              % (stopped, a.stop, n, a.keys, len(conns)))
        print("reads that waited > %.0f ms: %d in %d episode(s) (at ms %s)"
              % (a.slow_ms, len(slow_at), episodes,
                 ", ".join("%.0f" % t for t in slow_at[:10]) + (" ..." if len(slow_at) > 10 else "")))
        print("latency ms: p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f max %.1f"
              % (pct(lat, .5), pct(lat, .9), pct(lat, .99), pct(lat, .999), lat[-1]))
        print("wrong values: %d, not flagged stale: %d" % (wrong, unflagged))
        for f in ("owner_silent_marks", "cache_silent_stale_hits", "owner_probes",
                  "cache_stale_hits", "owners_silent"):
            print("%s: %s" % (f, info_field(port, f)))
        t1 = time.monotonic()
        conns[0].cmd("SET", keys[0], "after")
        back = None
        while time.monotonic() < t1 + 5:
            r = conns[1].cmd("GET", keys[0])
            if (r[2] if r[0] == "attr" else r) == ("bulk", b"after"):
                back = (time.monotonic() - t1) * 1000.0
                break
            time.sleep(0.01)
        print("after SIGCONT: a write read back through another connection: %s"
              % ("after %.1f ms" % back if back is not None else "NO"))
        for c in conns:
            c.s.close()
    finally:
        if owner:
            os.kill(owner, signal.SIGCONT)
        daemon.terminate()
        try:
            daemon.wait(15)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
