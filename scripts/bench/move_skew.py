#!/usr/bin/python3
"""move_skew.py - automatic moves under a skewed load (issue 15's policy,
docs/cluster.md "When a leaf moves by itself"): a real etcd and one hotkvd
host with two hot owners, 8 leaves dealt between them.

  scripts/bench/move_skew.py --hotkvd bin/hotkvd --admin bin/hotkvd-admin
                             [--writers 3] [--window 1s] [--settle 60]
                             [--threshold-of-skew 0.8] [--etcd /usr/bin/etcd]

Two runs, each on a fresh cluster:
  skew     --writers processes write, pipelined, many keys (400) that all
           fall in two of owner 1's leaves.  With auto-moves off it measures
           each owner's busy fraction (INFO # Leaves owner_<n>_busy, the
           loop thread's CPU time over a move-window); then it sets
           move-busy-threshold to --threshold-of-skew times owner 1's figure
           (this machine is shared: an absolute threshold would measure the
           machine, not the policy) and auto-moves yes, and waits (at most
           --settle s) until every owner is under it for 3 windows.  It
           prints the busy fractions before and after, the moves and splits
           made, the time it took, the writes and the failed writes.
  hot key  the same writers on one key: the leaf must be refused (counted,
           the key named), not split nor moved.
Last line: one machine-readable `MOVE_SKEW k=v ...` line.  Every wait is
bounded; etcd and hotkvd are stopped by pid at the end, whatever happens.
"""
import argparse
import multiprocessing
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROUTE_KEY = b"hotkvd-route-v1\x00"  # proto/place.c
MASK = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & MASK


def siphash24(key, msg):
    """SipHash-2-4, as proto/siphash.c (the routing hash)."""
    k0, k1 = struct.unpack("<QQ", key)
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573

    def rnd():
        nonlocal v0, v1, v2, v3
        v0 = (v0 + v1) & MASK; v1 = _rotl(v1, 13); v1 ^= v0; v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & MASK; v3 = _rotl(v3, 16); v3 ^= v2
        v0 = (v0 + v3) & MASK; v3 = _rotl(v3, 21); v3 ^= v0
        v2 = (v2 + v1) & MASK; v1 = _rotl(v1, 17); v1 ^= v2; v2 = _rotl(v2, 32)

    n = len(msg)
    end = n - n % 8
    for i in range(0, end, 8):
        m = struct.unpack_from("<Q", msg, i)[0]
        v3 ^= m
        rnd(); rnd()
        v0 ^= m
    last = (n & 0xFF) << 56
    for i, c in enumerate(msg[end:]):
        last |= c << (8 * i)
    v3 ^= last
    rnd(); rnd()
    v0 ^= last
    v2 ^= 0xFF
    rnd(); rnd(); rnd(); rnd()
    return v0 ^ v1 ^ v2 ^ v3


def keys_in(start, bits, prefix, n):
    out, i = [], 0
    size = 1 << (32 - bits)
    while len(out) < n and i < 10_000_000:
        k = ("%s:%d" % (prefix, i)).encode()
        if 0 <= (siphash24(ROUTE_KEY, k) >> 32) - start < size:
            out.append(k)
        i += 1
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def resp(sock, *words):
    req = b"*%d\r\n" % len(words)
    for w in words:
        w = w if isinstance(w, bytes) else str(w).encode()
        req += b"$%d\r\n%s\r\n" % (len(w), w)
    sock.sendall(req)
    buf = b""
    while b"\r\n" not in buf:
        buf += sock.recv(65536)
    if buf[:1] == b"$":
        n = int(buf[1:buf.index(b"\r\n")])
        need = buf.index(b"\r\n") + 2 + max(n, 0) + 2
        while len(buf) < need:
            buf += sock.recv(65536)
        return buf[buf.index(b"\r\n") + 2:need - 2] if n >= 0 else None
    return buf[:buf.index(b"\r\n")]


def info(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        text = resp(s, "INFO", "leaves").decode(errors="replace")
    finally:
        s.close()
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


def writer(port, keys, stop_at, counts):
    """Pipelined SETs of random keys until stop_at (monotonic seconds)."""
    rnd = random.Random(os.getpid())
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    sent = failed = 0
    pipe = 32
    while time.monotonic() < stop_at.value:
        req = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$8\r\n%08d\r\n"
                       % (len(k), k, rnd.randrange(10**8))
                       for k in (rnd.choice(keys) for _ in range(pipe)))
        s.sendall(req)
        buf, lines = b"", 0
        while lines < pipe:
            chunk = s.recv(65536)
            if not chunk:
                raise SystemExit("connection closed")
            buf += chunk
            while b"\r\n" in buf and lines < pipe:
                line, buf = buf.split(b"\r\n", 1)
                lines += 1
                if line != b"+OK":
                    failed += 1
        sent += pipe
    s.close()
    with counts.get_lock():
        counts[0] += sent
        counts[1] += failed


class Cluster:
    def __init__(self, a, tmp):
        self.a, self.tmp, self.procs = a, tmp, []
        self.etcd_port, peer = free_port(), free_port()
        url = "http://127.0.0.1:%d" % self.etcd_port
        self.etcd = subprocess.Popen(
            [a.etcd, "--name", "b", "--data-dir", tmp + "/etcd", "--listen-client-urls", url,
             "--advertise-client-urls", url, "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
             "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
             "--initial-cluster", "b=http://127.0.0.1:%d" % peer,
             "--experimental-watch-progress-notify-interval=1s"],
            stdout=subprocess.DEVNULL, stderr=open(tmp + "/etcd.log", "w"))
        self.port = free_port()
        self.conf = tmp + "/hotkvd.conf"
        with open(self.conf, "w") as f:
            f.write("bind 127.0.0.1\nport %d\ndir %s\nlogfile %s/hotkvd.log\nedge-workers 2\ncluster mv\n"
                    "host h1\netcd-endpoints %s\netcd-lease-ttl 3s\nhot-owners 2\n"
                    "cold-owners 0\nclass default pool hot fresh 60s keep 120s\n"
                    "move-window %s\nmove-cooldown-owner 1s\nmove-cooldown-leaf 60s\n"
                    "auto-moves no\nmove-fence-timeout 2s\n"
                    % (self.port, tmp, tmp, url, a.window))
        end = time.monotonic() + 30
        while True:
            r = subprocess.run([a.hotkvd, "--cluster-init", self.conf, "--owners",
                                "h1/hot/0,h1/hot/1", "--bits", "3"], capture_output=True)
            if r.returncode == 0:
                break
            if time.monotonic() > end:
                raise SystemExit("--cluster-init failed: %s" % r.stderr.decode())
            time.sleep(0.5)
        self.hotkvd = subprocess.Popen([a.hotkvd, self.conf])
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=2)
                ok = resp(s, "PING") == b"+PONG"
                s.close()
                if ok:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit("hotkvd did not answer PING in 30 s")

    def admin(self, *args):
        return subprocess.run([self.a.admin, self.conf] + list(args), capture_output=True,
                              timeout=30).stdout.decode()

    def leaves_of(self, n):
        out = []
        for line in self.admin("leaf", "list").splitlines():
            w = line.split()
            if len(w) >= 8 and w[0] == "leaf" and w[1] == "hot" and w[3] == "owner" \
                    and int(w[4]) == n and "serving" in w:
                b, p = w[2].split("-")
                out.append((int(p, 16) << (32 - int(b)) if int(b) else 0, int(b)))
        return out

    def config_set(self, k, v):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        r = resp(s, "CONFIG", "SET", k, v)
        s.close()
        if r != b"+OK":
            raise SystemExit("CONFIG SET %s %s: %r" % (k, v, r))

    def stop(self):
        for p in (self.hotkvd, self.etcd):
            if p is None or p.poll() is not None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def busy(c):
    i = info(c.port)
    return [float(i.get("owner_%d_busy" % n, "-1")) for n in (1, 2)], i


def run(a, keys_of, label):
    tmp = tempfile.mkdtemp(prefix="move_skew.")
    c = None
    procs = []
    try:
        c = Cluster(a, tmp)
        keys = keys_of(c)
        stop_at = multiprocessing.Value("d", time.monotonic() + a.settle + 60)
        counts = multiprocessing.Array("q", 2)
        procs = [multiprocessing.Process(target=writer, args=(c.port, keys, stop_at, counts))
                 for _ in range(a.writers)]
        for p in procs:
            p.start()
        time.sleep(3)
        samples = []
        for _ in range(3):
            time.sleep(1.1)
            samples.append(busy(c)[0])
        before = [sum(s[k] for s in samples) / len(samples) for k in (0, 1)]
        thr = max(0.01, round(a.threshold_of_skew * before[0], 3))
        c.config_set("move-busy-threshold", "%.3f" % thr)
        c.config_set("auto-moves", "yes")
        t0 = time.monotonic()
        under, after, settled = 0, before, None
        while time.monotonic() - t0 < a.settle and under < 3:
            time.sleep(1.1)
            after, i = busy(c)
            done = int(i.get("auto_moves_started", 0)) + int(i.get("auto_refused_hot_key", 0))
            under = under + 1 if done and all(0 <= b < thr for b in after) else 0
            if label == "hot key" and int(i.get("auto_refused_hot_key", 0)) > 0:
                time.sleep(3)  # more windows: it must stay refused
                after, i = busy(c)
                break
            if under == 1:
                settled = time.monotonic() - t0
        stop_at.value = 0
        for p in procs:
            p.join(30)
        i = info(c.port)
        return {
            "before": before, "after": after, "threshold": thr,
            "moves": int(i.get("auto_moves_started", 0)),
            "splits": int(i.get("auto_splits_started", 0)),
            "refused": int(i.get("auto_refused_hot_key", 0)),
            "refused_key": i.get("auto_refused_last_key", ""),
            "leaves": len([l for l in c.admin("leaf", "list").splitlines()
                           if l.startswith("leaf hot ")]),
            "settled_s": settled, "settled": under >= 3,
            "writes": counts[0], "failed": counts[1],
        }
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(5)
        if c is not None:
            c.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hotkvd", default="bin/hotkvd")
    ap.add_argument("--admin", default="bin/hotkvd-admin")
    ap.add_argument("--etcd", default="/usr/bin/etcd")
    ap.add_argument("--writers", type=int, default=3)
    ap.add_argument("--window", default="1s")
    ap.add_argument("--settle", type=int, default=60)
    ap.add_argument("--threshold-of-skew", type=float, default=0.8)
    a = ap.parse_args()
    assert siphash24(bytes(range(16)), b"") == 0x726FDB47DD0E0E31  # the reference vector

    def skewed(c):
        l = c.leaves_of(1)
        return keys_in(l[0][0], l[0][1], "skA", 200) + keys_in(l[1][0], l[1][1], "skB", 200)

    def hot(c):
        l = c.leaves_of(1)
        return keys_in(l[0][0], l[0][1], "hot", 1)

    s = run(a, skewed, "skew")
    print("skewed load (400 keys in two of owner 1's leaves, %d pipelined writers):" % a.writers)
    print("  busy before  owner 1 %.3f  owner 2 %.3f   (auto-moves off)" % tuple(s["before"]))
    print("  threshold    %.3f (%.2f x owner 1's)" % (s["threshold"], a.threshold_of_skew))
    print("  busy after   owner 1 %.3f  owner 2 %.3f   %s" % (
        s["after"][0], s["after"][1],
        "every owner under it %.1f s after auto-moves yes" % s["settled_s"]
        if s["settled"] else "NOT settled in %d s" % a.settle))
    print("  moves %d, splits %d, refused %d; leaves now %d; writes %d, failed %d" % (
        s["moves"], s["splits"], s["refused"], s["leaves"], s["writes"], s["failed"]))
    h = run(a, hot, "hot key")
    print("one hot key (%d pipelined writers):" % a.writers)
    print("  busy before  owner 1 %.3f  owner 2 %.3f; threshold %.3f" % (
        h["before"][0], h["before"][1], h["threshold"]))
    print("  refused %d (key %s), moves %d, splits %d; leaves now %d (8 before); writes %d, "
          "failed %d" % (h["refused"], h["refused_key"], h["moves"], h["splits"], h["leaves"],
                         h["writes"], h["failed"]))
    print("MOVE_SKEW busy1_before=%.3f busy2_before=%.3f threshold=%.3f busy1_after=%.3f "
          "busy2_after=%.3f settled=%d settle_s=%s moves=%d splits=%d failed=%d "
          "hot_refused=%d hot_splits=%d hot_moves=%d hot_leaves=%d" % (
              s["before"][0], s["before"][1], s["threshold"], s["after"][0], s["after"][1],
              s["settled"], "%.1f" % s["settled_s"] if s["settled_s"] else "-", s["moves"],
              s["splits"], s["failed"] + h["failed"], h["refused"], h["splits"], h["moves"],
              h["leaves"]))
    ok = s["settled"] and h["refused"] >= 1 and h["splits"] == 0 and h["moves"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
