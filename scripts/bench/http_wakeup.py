#!/usr/bin/python3
"""http_wakeup.py - held HTTP long polls against a real hotkvd: how long a
write takes to reach every held poll, what a wakeup costs the edges in CPU,
and what a held poll costs in memory.

  scripts/bench/http_wakeup.py --hotkvd bin/hotkvd [--polls 200] [--rounds 20]
                               [--edge-workers 2] [--push yes|no]

It starts the daemon (temp dir, free ports), holds --polls long polls on one
key (each on its own keep-alive connection, spread over the edges by the
kernel), then --rounds times: writes the key over RESP and reads every
poll's answer, timing each from just before the write to the poll's whole
response, and holds them all again.  It prints:
  latency   p50 / p99 / max over every (write, poll) pair, in ms.  This is a
            single-threaded Python client reading N sockets one after
            another, so with many polls the tail includes the client's own
            time to read the others: measure the target (p99 <= 20 ms) with
            a few hundred polls, CPU and memory with many.
  cpu       the edges' user+system CPU during the write rounds, per write
            and per woken poll (from /proc/PID/stat).
  memory    the edges' RSS with every poll held minus before, per poll.
With --push no, only the writing edge's change ring and the other edges'
eventfds wake the polls (the owner pushes nothing).  Every wait is bounded;
the daemon is stopped by pid at the end, whatever happens.
"""
import argparse
import os
import selectors
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


def resp(sock, *words):
    out = b"*%d\r\n" % len(words)
    for w in words:
        w = w if isinstance(w, bytes) else str(w).encode()
        out += b"$%d\r\n%s\r\n" % (len(w), w)
    sock.sendall(out)
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("RESP connection closed")
        data += chunk
    return data


def info_int(port, field):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(b"*2\r\n$4\r\nINFO\r\n$3\r\nall\r\n")
        data, end = b"", time.monotonic() + 5
        while time.monotonic() < end:
            data += s.recv(1 << 20)
            if data.startswith(b"$"):
                n = int(data[1:data.index(b"\r\n")])
                if len(data) >= data.index(b"\r\n") + 2 + n:
                    break
        for line in data.decode(errors="replace").split("\r\n"):
            if line.startswith(field + ":"):
                return int(line.split(":", 1)[1])
    finally:
        s.close()
    return -1


def edge_pids(master):
    pids = []
    for line in open("/proc/%d/task/%d/children" % (master, master)).read().split():
        try:
            cmd = open("/proc/%s/cmdline" % line, "rb").read()
        except OSError:
            continue
        if b"edge" in cmd:
            pids.append(int(line))
    return pids


def cpu_ticks(pids):
    t = 0
    for p in pids:
        f = open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()
        t += int(f[11]) + int(f[12])  # utime, stime
    return t


def rss_kb(pids):
    kb = 0
    for p in pids:
        for line in open("/proc/%d/status" % p):
            if line.startswith("VmRSS:"):
                kb += int(line.split()[1])
    return kb


def read_response(sock, buf):
    """One response from buf + sock; returns (status, headers, rest) or None."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    hdr = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        hdr[k.strip().lower()] = v.strip()
    n = int(hdr.get("content-length", "0"))
    while len(rest) < n:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        rest += chunk
    return int(lines[0].split()[1]), hdr, rest[n:]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hotkvd", required=True)
    ap.add_argument("--polls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--edge-workers", type=int, default=2)
    ap.add_argument("--push", default="yes")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="hkv-wakeup-")
    port, hport = free_port(), free_port()
    conf = os.path.join(d, "hotkvd.conf")
    with open(conf, "w") as f:
        f.write("port %d\nhttp-port %d\ndir %s\nlogfile %s/log\nedge-workers %d\n"
                "hot-owners 1\ncold-owners 1\nowner-push %s\nmaxclients %d\n"
                "http-max-polls %d\n" % (port, hport, d, d, a.edge_workers, a.push,
                                         a.polls + 100, a.polls + 10))
    proc = subprocess.Popen([a.hotkvd, conf])
    socks = []
    try:
        end = time.monotonic() + 15
        while True:
            try:
                w = socket.create_connection(("127.0.0.1", port), timeout=5)
                resp(w, "PING")
                break
            except OSError:
                if time.monotonic() > end:
                    raise RuntimeError("hotkvd did not start")
                time.sleep(0.1)
        edges = edge_pids(proc.pid)
        resp(w, "SET", "wake:k", "v0")
        s0 = socket.create_connection(("127.0.0.1", hport), timeout=5)
        s0.sendall(b"GET /v1/kv/wake:k HTTP/1.1\r\nHost: b\r\n\r\n")
        st, hdr, _ = read_response(s0, b"")
        index = int(hdr["x-hotkvd-index"])
        s0.close()
        rss0 = rss_kb(edges)
        for _ in range(a.polls):
            s = socket.create_connection(("127.0.0.1", hport), timeout=10)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            socks.append(s)
        sel = selectors.DefaultSelector()
        lat, cpu, woken = [], 0, 0
        rss_held = None
        for rnd in range(a.rounds):
            req = b"GET /v1/kv/wake:k?index=%d&wait=60s HTTP/1.1\r\nHost: b\r\n\r\n" % index
            for s in socks:
                s.sendall(req)
            end = time.monotonic() + 30
            while info_int(port, "http_polls_held") < a.polls:
                if time.monotonic() > end:
                    raise RuntimeError("polls were not all held")
                time.sleep(0.02)
            if rss_held is None:
                rss_held = rss_kb(edges)
            c0 = cpu_ticks(edges)
            t0 = time.monotonic()
            resp(w, "SET", "wake:k", "v%d" % (rnd + 1))
            for s in socks:
                sel.register(s, selectors.EVENT_READ)
            left, bufs = len(socks), {}
            while left > 0:
                if time.monotonic() - t0 > 30:
                    raise RuntimeError("%d polls not answered" % left)
                for key, _ in sel.select(timeout=1):
                    s = key.fileobj
                    r = read_response(s, bufs.get(s, b""))
                    if r is None:
                        raise RuntimeError("a poll connection closed")
                    lat.append((time.monotonic() - t0) * 1000)
                    index = max(index, int(r[1]["x-hotkvd-index"]))
                    sel.unregister(s)
                    left -= 1
            cpu += cpu_ticks(edges) - c0
            woken += len(socks)
        hz = os.sysconf("SC_CLK_TCK")
        print("http_wakeup: %d polls on one key, %d writes, edge-workers %d, owner-push %s"
              % (a.polls, a.rounds, a.edge_workers, a.push))
        print("latency   write -> poll answered: p50 %.2f ms  p99 %.2f ms  max %.2f ms"
              % (pct(lat, 50), pct(lat, 99), max(lat)))
        print("cpu       edges: %.3f ms per write, %.1f us per woken poll"
              % (cpu * 1000.0 / hz / a.rounds, cpu * 1e6 / hz / max(woken, 1)))
        print("memory    edges' RSS: %.2f KB per held poll (connection included)"
              % ((rss_held - rss0) / float(a.polls)))
    finally:
        for s in socks:
            s.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
