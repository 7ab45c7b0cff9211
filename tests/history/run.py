#!/usr/bin/python3
"""run.py - the history workload and nemesis for hotkvd (issue 10).

Starts the real daemon on ephemeral ports in a temp dir, runs N clients (one
thread and one TCP connection each) issuing random operations on a small key
set while a nemesis injects faults on a seeded schedule, records everything
as a history (tests/history/README.md, format v1), stops the daemon, runs the
checker (tests/history/checker.py) on the history and prints a summary.

    /usr/bin/python3 tests/history/run.py --bin bin/hotkvd --duration 30 --seed 7 \\
        --shim build/release/tests/fault/stallfs.so \\
        --clockshim build/release/tests/history/clockshift.so --out /tmp/run7

Python 3 standard library only.  Every wait is bounded; every process the run
starts is stopped by pid at the end, also on an exception or a signal.

How a reply becomes an outcome is decided by REPLY_TABLE, just below: the one
place that says which error replies mean "not applied" (outcome fail) and
which mean "outcome unknown" (outcome info, the write may have been applied).
"""

import argparse
import ctypes
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

# ---- how replies are classified (printed by --help) -----------------------

# First word of an error reply -> outcome.  "fail": the command was NOT
# applied; the checker verifies that it really was not.  "info": the outcome
# is unknown (the write may have been applied, now or later).
REPLY_TABLE = [
    ("UNAVAILABLE", "info", "the owner did not acknowledge the write within write-deadline"),
    ("TIMEOUT", "info", "a durable write not committed within durable-timeout (may commit later)"),
    ("IOERR", "info", "a durable commit failed with an I/O error (the owner exits)"),
    ("MISCONF", "info", "disk full: a durable write not committed"),
    ("BUSY", "fail", "persist backlog over persist-max-dirty: write refused"),
    ("ERR", "fail", "syntax, wrong value (not an integer ...), refused request"),
    ("WRONGTYPE", "fail", "wrong type"),
    ("TRYAGAIN", "fail", "read: the owner did not answer (on-timeout error, miss-wait)"),
    ("OOM", "fail", "owner out of memory: write refused"),
    ("RATELIMITED", "fail", "over a rate limit: not run"),
    ("NOAUTH", "fail", "not authenticated: not run"),
]
REPLY_TABLE_NOTES = [
    "any other error word                    -> info (unknown, so not assumed harmless)",
    "TRYAGAIN on a write                     -> info (only reads are documented to say it)",
    "any error reply to MSET                 -> info (MSET is one SET per key, not atomic across"
    " owners: an error may leave some keys set)",
    "no reply within the request timeout     -> info (t1 = when the runner gave up)",
    "connection closed before the reply      -> info; the client reconnects as a new client",
]
ERROR_OUTCOME = {word: outcome for word, outcome, _ in REPLY_TABLE}


def reply_table_text():
    lines = ["error reply (first word) -> outcome:"]
    for word, outcome, why in REPLY_TABLE:
        lines.append("  -%-12s -> %-4s  %s" % (word, outcome, why))
    lines.append("and:")
    lines.extend("  " + n for n in REPLY_TABLE_NOTES)
    return "\n".join(lines)


def classify_error(text, f, is_write):
    """Outcome ("fail" or "info") of error reply `text` to operation f."""
    if f == "mset":
        return "info"
    word = text.split(" ", 1)[0].upper()
    outcome = ERROR_OUTCOME.get(word, "info")
    if word == "TRYAGAIN" and is_write:
        outcome = "info"
    return outcome


# Operation kinds of the workload and their weights (--ops picks a subset).
OP_WEIGHTS = [("set", 22), ("setnx", 5), ("setget", 3), ("get", 20), ("exists", 5),
              ("mget", 6), ("getdel", 4), ("del", 6), ("incr", 8), ("mset", 5),
              ("mset_dup", 2), ("expire", 7), ("persist", 7)]

FAULT_KINDS = ["kill_owner", "kill_edge", "kill_master", "pause_owner", "disk_stall",
               "disk_eio", "sighup_reorder", "config_set", "big_request", "clock_shift"]
WRITE_FS = {"set", "getdel", "del", "incrby", "expire", "persist", "mset"}

# ---- timing of the daemon under test ---------------------------------------

WRITE_TIMEOUT_MS = 1500
WRITE_DEADLINE_MS = 4000
DURABLE_TIMEOUT_MS = 1000
PERSIST_INTERVAL_MS = 100
COMMIT_ALLOWANCE_MS = 500      # one commit plus the runner's crash-detection lag
PUSH_ALLOWANCE_MS = 500        # owner push / refresh to another colo
KEEP_MS = 10000
WIRE_MAX_FRAME = 64 * 1024
BIG_REQUEST_BYTES = 100 * 1000  # > wire-max-frame, < proto-max-bulk-len
REQUEST_TIMEOUT_S = WRITE_DEADLINE_MS / 1000.0 + 4.0

# Two variants of the class lines; SIGHUP switches between them (order and
# fresh change, names and patterns stay).
CLASS_VARIANTS = [
    {"order": ["hl", "hd"], "fresh_ms": {"hl": 1000, "hd": 1000}},
    {"order": ["hd", "hl"], "fresh_ms": {"hl": 500, "hd": 2000}},
]
CLASSES = {
    "hl": {"durability": "ledger", "pool": "hot", "on_timeout": "degrade"},
    "hd": {"durability": "durable", "pool": "cold", "on_timeout": "error"},
}

# ---- routing: the owner of a key, as server/router.c computes it -----------

ROUTE_KEY = b"hotkvd-route-v1\x00"
ROUTER_LEAF_BITS = 10
M64 = 0xFFFFFFFFFFFFFFFF


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash24(key, data):
    """SipHash-2-4 as proto/siphash.c: 16-byte key, 64-bit result."""
    k0, k1 = struct.unpack("<QQ", key)
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rounds(v0, v1, v2, v3, n):
        for _ in range(n):
            v0 = (v0 + v1) & M64
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & M64
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & M64
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & M64
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)
        return v0, v1, v2, v3

    n = len(data)
    end = n - n % 8
    for i in range(0, end, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v3 ^= m
        v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    last = (n & 0xFF) << 56
    for i, byte in enumerate(data[end:]):
        last |= byte << (8 * i)
    v3 ^= last
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 2)
    v0 ^= last
    v2 ^= 0xFF
    v0, v1, v2, v3 = rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


def check_siphash():
    """The paper's vector and some of the reference table (tests/unit/check_siphash.c)."""
    key = bytes(range(16))
    assert siphash24(key, bytes(range(15))) == 0xA129CA6149BE45E5
    assert siphash24(key, b"") == 0x726FDB47DD0E0E31
    assert siphash24(key, bytes(range(8))) == 0x93F5F5799A932462
    assert siphash24(key, bytes(range(16))) == 0x3F2ACC7F57C29BDB


def owner_of(key, pool, nowners):
    """Owner index of key in its pool: leaf = top ROUTER_LEAF_BITS bits of the
    hash, leaves dealt round-robin (router.c map_init)."""
    leaf = siphash24(ROUTE_KEY, key.encode()) >> (64 - ROUTER_LEAF_BITS)
    return leaf % nowners


# ---- a minimal RESP2/RESP3 client ------------------------------------------


class RespError(Exception):
    """An error reply (the text without the leading '-')."""


class Transport(Exception):
    """No reply: timeout, refused or closed connection."""


class Conn:
    """One blocking connection; every read is bounded by a deadline."""

    def __init__(self, port, timeout=3.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.attrs = []

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    @staticmethod
    def encode(args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, int):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def send(self, args, deadline):
        data = self.encode(args)
        try:
            self.sock.settimeout(max(0.001, deadline - time.monotonic()))
            self.sock.sendall(data)
        except (OSError, socket.timeout) as e:
            raise Transport("send: %s" % e)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Transport("timeout")
        try:
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise Transport("timeout")
        except OSError as e:
            raise Transport("recv: %s" % e)
        if not chunk:
            raise Transport("connection closed")
        self.buf += chunk

    def _line(self, deadline):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return line
            self._fill(deadline)

    def _bytes(self, n, deadline):
        while len(self.buf) < n + 2:
            self._fill(deadline)
        data = bytes(self.buf[:n])
        del self.buf[:n + 2]
        return data

    def _value(self, deadline):
        line = self._line(deadline)
        if not line:
            raise Transport("empty reply line")
        t, rest = chr(line[0]), line[1:]
        if t == "+":
            return rest.decode("utf-8", "replace")
        if t == "-":
            return RespError(rest.decode("utf-8", "replace"))
        if t == ":":
            return int(rest)
        if t in "$=!":
            n = int(rest)
            if n < 0:
                return None
            data = self._bytes(n, deadline).decode("utf-8", "replace")
            if t == "=":
                return data[4:]  # "txt:" or "mkd:"
            if t == "!":
                return RespError(data)
            return data
        if t in "*~>":
            n = int(rest)
            if n < 0:
                return None
            return [self._value(deadline) for _ in range(n)]
        if t == "%":
            n = int(rest)
            d = {}
            for _ in range(n):
                k = self._value(deadline)
                d[k if not isinstance(k, list) else str(k)] = self._value(deadline)
            return d
        if t == "|":
            n = int(rest)
            d = {}
            for _ in range(n):
                k = self._value(deadline)
                d[k] = self._value(deadline)
            self.attrs.append(d)
            return self._value(deadline)
        if t == "_":
            return None
        if t == "#":
            return rest == b"t"
        if t == ",":
            return float(rest)
        if t == "(":
            return int(rest)
        raise Transport("unknown reply type %r" % t)

    def read(self, deadline):
        """One reply; attributes seen on the way are left in self.attrs."""
        self.attrs = []
        try:
            return self._value(deadline)
        except (ValueError, IndexError) as e:
            raise Transport("malformed reply: %s" % e)

    def call(self, args, timeout=3.0):
        deadline = time.monotonic() + timeout
        self.send(args, deadline)
        return self.read(deadline)


def info_fields(text):
    out = {}
    for line in (text or "").splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


# ---- the daemon -------------------------------------------------------------


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def proc_alive(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    state = stat[stat.rfind(")") + 2:][:1]
    return state not in ("Z", "X", "")


def proc_children(ppid):
    """{title: pid} of the processes whose parent is ppid, titled "hotkvd: ..."."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open("/proc/%d/stat" % pid) as f:
                stat = f.read()
            fields = stat[stat.rfind(")") + 2:].split()
            if int(fields[1]) != ppid or fields[0] in ("Z", "X"):
                continue
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        title = cmd.split(b"\0", 1)[0].decode("utf-8", "replace").strip()
        if title.startswith("hotkvd: "):
            out[title[len("hotkvd: "):]] = pid
    return out


def needs_asan(path):
    try:
        with open(path, "rb") as f:
            return b"libasan.so" in f.read()
    except OSError:
        return False


def asan_runtime():
    try:
        out = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out if out.startswith("/") and os.access(out, os.R_OK) else None


def _pdeathsig():
    # The daemon's master dies with this runner (a killed test), and its
    # children follow their master out.  Only the main thread spawns.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Daemon:
    def __init__(self, args, workdir, outdir, colos):
        self.bin = os.path.abspath(args.bin)
        self.dir = workdir
        self.conf = os.path.join(workdir, "hotkvd.conf")
        self.log = os.path.join(outdir, "hotkvd.log")
        self.stderr_path = os.path.join(outdir, "hotkvd.stderr")
        self.port = free_port()
        self.colos = colos
        self.edge_workers = 2
        self.hot_owners = 2
        self.cold_owners = 2
        self.variant = 0
        self.stall_flag = os.path.join(workdir, "stall")
        self.clock_file = os.path.join(workdir, "clockshift")
        self.shim = os.path.abspath(args.shim) if args.shim else None
        self.clockshim = os.path.abspath(args.clockshim) if args.clockshim else None
        self.proc = None
        self.old_procs = []
        self.stopped_pids = set()  # SIGSTOPped by the nemesis, to SIGCONT at the end

    def colo_names(self):
        if self.colos <= 1:
            return ["a"]
        return ["a-%d" % k for k in range(self.colos)]

    def owner_names(self):
        return ["hot/%d" % i for i in range(self.hot_owners)] + \
               ["cold/%d" % i for i in range(self.cold_owners)]

    def edge_names(self):
        return ["%s/%d" % (c, i) for c in self.colo_names() for i in range(self.edge_workers)]

    def class_lines(self, variant):
        v = CLASS_VARIANTS[variant]
        lines = []
        for name in v["order"]:
            c = CLASSES[name]
            lines.append('class %s pattern "%s:*" pool %s fresh %dms keep %dms durability %s '
                         'on-timeout %s' % (name, name, c["pool"], v["fresh_ms"][name], KEEP_MS,
                                            c["durability"], c["on_timeout"]))
        return lines

    def write_conf(self):
        lines = [
            "# written by tests/history/run.py (variant %d)" % self.variant,
            "bind 127.0.0.1",
            "port %d" % self.port,
            'dir "%s"' % self.dir,
            'logfile "%s"' % self.log,
            "loglevel verbose",
            "colo a",
            "colos %d" % self.colos,
            "edge-workers %d" % self.edge_workers,
            "hot-owners %d" % self.hot_owners,
            "cold-owners %d" % self.cold_owners,
            "shutdown-timeout 5s",
            "wire-max-frame %dkb" % (WIRE_MAX_FRAME // 1024),
            "proto-max-bulk-len 1mb",
            "write-timeout %dms" % WRITE_TIMEOUT_MS,
            "write-retry-backoff 300ms 600ms",
            "write-deadline %dms" % WRITE_DEADLINE_MS,
            "persist-interval %dms" % PERSIST_INTERVAL_MS,
            "durable-timeout %dms" % DURABLE_TIMEOUT_MS,
            "miss-wait 800ms",
            "negative-ttl 1s",
            "owner-push yes",
            "cache-memory 16mb",
        ] + self.class_lines(self.variant)
        tmp = self.conf + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, self.conf)

    def env(self):
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_PRELOAD", "HOTKVD_STALL_FLAG", "HKV_CLOCKSHIFT_FILE")}
        preload = []
        if (self.shim or self.clockshim) and needs_asan(self.bin):
            rt = asan_runtime()
            if rt is None:
                raise RuntimeError("the daemon needs the ASan runtime first in LD_PRELOAD; "
                                   "gcc -print-file-name=libasan.so found none")
            preload.append(rt)
        if self.shim:
            preload.append(self.shim)
            env["HOTKVD_STALL_FLAG"] = self.stall_flag
        if self.clockshim:
            preload.append(self.clockshim)
            env["HKV_CLOCKSHIFT_FILE"] = self.clock_file
        if preload:
            env["LD_PRELOAD"] = ":".join(preload)
        return env

    def start(self, timeout=20.0):
        """Starts the master and waits until every child serves."""
        err = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen([self.bin, self.conf], env=self.env(), stdin=subprocess.DEVNULL,
                                     stdout=err, stderr=err, preexec_fn=_pdeathsig,
                                     close_fds=True)
        err.close()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("hotkvd exited with %s at start; see %s and %s"
                                   % (self.proc.returncode, self.log, self.stderr_path))
            if self.all_ready():
                for lib in (self.shim, self.clockshim):
                    if lib and not self.has_mapped(self.proc.pid, lib):
                        raise RuntimeError("the daemon runs without %s" % lib)
                return
            time.sleep(0.05)
        raise RuntimeError("hotkvd did not become ready within %.0f s; see %s" % (timeout, self.log))

    @staticmethod
    def has_mapped(pid, lib):
        real = os.path.realpath(lib)
        try:
            with open("/proc/%d/maps" % pid) as f:
                return real in f.read()
        except OSError:
            return False

    def info(self, section, timeout=2.0):
        c = Conn(self.port, timeout=timeout)
        try:
            r = c.call(["INFO", section], timeout=timeout)
        finally:
            c.close()
        if isinstance(r, RespError):
            raise Transport(str(r))
        return r

    def processes(self):
        """[(pid, ready)] from INFO processes."""
        out = []
        for k, v in info_fields(self.info("processes")).items():
            if k.startswith("slot"):
                f = dict(kv.split("=", 1) for kv in v.split(",") if "=" in kv)
                out.append((int(f.get("pid", 0)), f.get("ready") == "1"))
        return out

    def all_ready(self):
        try:
            procs = self.processes()
        except (OSError, Transport):
            return False
        n = self.colos * self.edge_workers + self.hot_owners + self.cold_owners
        return len(procs) >= n and all(p > 0 and r for p, r in procs)

    def children(self):
        if self.proc is None or self.proc.poll() is not None:
            return {}
        return proc_children(self.proc.pid)

    def pid_of(self, title):
        return self.children().get(title)

    def wait_replaced(self, title, old_pid, timeout=15.0):
        """Waits until `title` runs under a pid other than old_pid and serves."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            pid = self.pid_of(title)
            if pid and pid != old_pid:
                try:
                    if any(p == pid and r for p, r in self.processes()):
                        return pid
                except (OSError, Transport):
                    pass
            time.sleep(0.02)
        return None

    def stop(self, timeout=15.0):
        """SIGTERM, bounded wait, SIGKILL what is left (master and children)."""
        for pid in list(self.stopped_pids):
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        self.stopped_pids.clear()
        status = None
        if self.proc is not None:
            kids = list(self.children().values())
            if self.proc.poll() is None:
                try:
                    self.proc.send_signal(signal.SIGTERM)
                    status = self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
            else:
                status = self.proc.returncode
            end = time.monotonic() + 3.0
            while kids and time.monotonic() < end:
                kids = [k for k in kids if proc_alive(k)]
                time.sleep(0.05)
            for k in kids:
                try:
                    os.kill(k, signal.SIGKILL)
                except OSError:
                    pass
        for p in self.old_procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
        return status


# ---- the history file -------------------------------------------------------


class History:
    def __init__(self, path):
        self.f = open(path, "w", encoding="utf-8")
        self.lock = threading.Lock()
        self.next_id = 0
        self.next_client = 0
        self.counts = {"ok": 0, "fail": 0, "info": 0}
        self.by_f = {}
        self.faults = {k: 0 for k in FAULT_KINDS + ["restart"]}
        self.crashes = {}
        self.surprises = []

    def op_id(self):
        with self.lock:
            self.next_id += 1
            return self.next_id

    def client_id(self):
        with self.lock:
            self.next_client += 1
            return self.next_client

    def write(self, obj):
        line = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        with self.lock:
            self.f.write(line + "\n")
            k = obj.get("kind")
            if k == "op":
                self.counts[obj["outcome"]] += 1
                st = self.by_f.setdefault(obj["f"], {"ok": 0, "fail": 0, "info": 0})
                st[obj["outcome"]] += 1
            elif k == "fault":
                self.faults[obj["f"]] = self.faults.get(obj["f"], 0) + 1
            elif k == "crash":
                self.crashes[obj["owner"]] = self.crashes.get(obj["owner"], 0) + 1

    def surprise(self, text):
        with self.lock:
            self.surprises.append(text)

    def close(self):
        with self.lock:
            self.f.close()


# ---- the workload -----------------------------------------------------------


class Workload:
    """What the clients share: the key set and the generator of operations."""

    def __init__(self, nkeys, owners, ops):
        self.keys = {cls: self.pick(cls, nkeys, owners[CLASSES[cls]["pool"]]) for cls in CLASSES}
        self.all_keys = self.keys["hl"] + self.keys["hd"]
        self.ops = [name for name, _ in OP_WEIGHTS if name in ops]
        self.weights = [w for name, w in OP_WEIGHTS if name in ops]

    @staticmethod
    def pick(cls, nkeys, nowners):
        """nkeys names "<cls>:<i>", the first i's that spread them evenly over
        the pool's owners (so every owner's faults touch the history)."""
        per = -(-nkeys // nowners)
        count = [0] * nowners
        keys, i = [], 0
        while len(keys) < nkeys:
            k = "%s:%d" % (cls, i)
            o = owner_of(k, CLASSES[cls]["pool"], nowners)
            if count[o] < per:
                count[o] += 1
                keys.append(k)
            i += 1
        return keys

    def gen(self, rng, client, opid):
        """(f, key-or-keys, args, command words) of the next operation."""
        kind = rng.choices(self.ops, weights=self.weights)[0]
        return getattr(self, "gen_" + kind)(rng, rng.choice(self.all_keys),
                                           "c%d-%d" % (client, opid))

    @staticmethod
    def set_args(value, nx=False, xx=False, get=False, keepttl=False, px=None):
        return {"value": value, "nx": nx, "xx": xx, "get": get, "keepttl": keepttl, "px": px}

    def gen_set(self, rng, key, value):
        v, w = rng.random(), rng.random()
        nx, xx = v < 0.15, 0.15 <= v < 0.30
        get = not nx and rng.random() < 0.15  # NX with GET left out: one meaning per op
        keepttl = w < 0.10
        px = rng.randint(3600000, 7200000) if 0.10 <= w < 0.20 else None
        words = ["SET", key, value] + (["NX"] if nx else []) + (["XX"] if xx else []) + \
            (["GET"] if get else []) + (["KEEPTTL"] if keepttl else []) + \
            (["PX", str(px)] if px is not None else [])
        return "set", key, self.set_args(value, nx, xx, get, keepttl, px), words

    def gen_setnx(self, rng, key, value):
        return "set", key, self.set_args(value, nx=True), ["SETNX", key, value]

    def gen_setget(self, rng, key, value):
        return "set", key, self.set_args(value, get=True), ["SET", key, value, "GET"]

    def gen_get(self, rng, key, value):
        return "get", key, {}, ["GET", key]

    def gen_exists(self, rng, key, value):
        return "exists", key, {}, ["EXISTS", key]

    def gen_mget(self, rng, key, value):
        keys = [rng.choice(self.all_keys) for _ in range(rng.randint(2, 4))]
        return "mget", keys, {}, ["MGET"] + keys

    def gen_getdel(self, rng, key, value):
        return "getdel", key, {}, ["GETDEL", key]

    def gen_del(self, rng, key, value):
        return "del", key, {}, ["DEL", key]

    def gen_incr(self, rng, key, value):
        if rng.random() < 0.5:
            return "incrby", key, {"delta": 1}, ["INCR", key]
        d = rng.randint(-5, 20)
        return "incrby", key, {"delta": d}, ["INCRBY", key, str(d)]

    def _mset(self, keys, value):
        values = ["%s.%d" % (value, i) for i in range(len(keys))]
        words = ["MSET"]
        for k, v in zip(keys, values):
            words += [k, v]
        return "mset", keys, {"values": values}, words

    def gen_mset(self, rng, key, value):
        return self._mset(rng.sample(self.all_keys, rng.randint(2, 3)), value)

    def gen_mset_dup(self, rng, key, value):
        keys = rng.sample(self.all_keys, rng.randint(1, 2))
        return self._mset(keys + [keys[0]], value)  # the same key twice: the last wins

    def gen_expire(self, rng, key, value):
        if rng.random() < 0.7:
            ms = rng.randint(3600000, 7200000)
        else:
            ms = rng.choice([0, -1, -1000])
        return "expire", key, {"ms": ms}, ["PEXPIRE", key, str(ms)]

    def gen_persist(self, rng, key, value):
        return "persist", key, {}, ["PERSIST", key]


def reply_value(f, args, reply):
    """The recorded value of an ok reply, or raises ValueError if the shape is
    not what f returns."""
    if f == "get" or f == "getdel":
        if reply is None or isinstance(reply, str):
            return reply
    elif f in ("exists", "del", "incrby", "expire", "persist"):
        if isinstance(reply, int) and not isinstance(reply, bool):
            return reply
    elif f == "set":
        if args.get("get"):
            if reply is None or isinstance(reply, str):
                return reply
        elif isinstance(reply, int) and not isinstance(reply, bool):  # SETNX
            if reply in (0, 1):
                return "OK" if reply == 1 else None
        elif reply is None or reply == "OK":
            return reply
    elif f == "mset":
        if reply == "OK":
            return reply
    elif f == "mget":
        if isinstance(reply, list) and all(v is None or isinstance(v, str) for v in reply):
            return reply
    raise ValueError("unexpected reply %r to %s" % (reply, f))


class Client(threading.Thread):
    """One worker: a connection (a new client number after each reconnect),
    one operation at a time, its own seeded RNG."""

    def __init__(self, index, seed, port, daemon, workload, history, stop, think_ms, nedges):
        super().__init__(name="client-%d" % index, daemon=True)
        self.index = index
        self.rng = random.Random("%s-client-%d" % (seed, index))
        self.port = port
        self.hkv = daemon
        self.workload = workload
        self.history = history
        self.stop_ev = stop
        self.think_ms = think_ms
        self.want_edge = index % max(1, nedges)
        self.conn = None
        self.client = None
        self.colo = None
        self.edge = None
        self.error = None

    def connect(self):
        """Connects (trying a few times to land on this client's edge) and
        sets up HELLO 3 and CLIENT META ON.  False if the daemon is down."""
        names = self.hkv.edge_names()
        want = names[self.want_edge % len(names)]
        best = None
        for _ in range(6):
            try:
                c = Conn(self.port, timeout=2.0)
            except OSError:
                return False
            try:
                hello = c.call(["HELLO", "3"], timeout=2.0)
                meta = c.call(["CLIENT", "META", "ON"], timeout=2.0)
                srv = c.call(["INFO", "server"], timeout=2.0)
                if isinstance(hello, RespError) or isinstance(meta, RespError) or \
                        isinstance(srv, RespError):
                    c.close()
                    return False
            except Transport:
                c.close()
                return False
            fields = info_fields(srv)
            colo = fields.get("colo")
            edge = None
            try:
                with open("/proc/%s/cmdline" % fields.get("edge_pid", "0"), "rb") as f:
                    title = f.read().split(b"\0", 1)[0].decode().strip()
                if title.startswith("hotkvd: edge "):
                    edge = title[len("hotkvd: edge "):]
            except (OSError, UnicodeDecodeError):
                pass
            if best is not None:
                best[0].close()
            best = (c, colo, edge)
            if edge == want:
                break
        self.conn, self.colo, self.edge = best
        self.client = self.history.client_id()
        return True

    def drop(self):
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def run(self):
        try:
            self.loop()
        except Exception as e:  # a runner bug: reported, fails the run
            self.error = "%s: %r" % (self.name, e)
        finally:
            self.drop()

    def loop(self):
        backoff = 0.05
        while not self.stop_ev.is_set():
            if self.conn is None:
                if not self.connect():
                    self.stop_ev.wait(backoff)
                    backoff = min(backoff * 2, 0.5)
                    continue
                backoff = 0.05
            opid = self.history.op_id()
            f, target, args, words = self.workload.gen(self.rng, self.client, opid)
            rec = {"kind": "op", "id": opid, "client": self.client, "colo": self.colo,
                   "edge": self.edge, "f": f}
            if isinstance(target, list):
                rec["keys"] = target
            else:
                rec["key"] = target
            rec["args"] = args
            is_write = f in WRITE_FS
            t0 = time.monotonic()
            deadline = t0 + REQUEST_TIMEOUT_S
            outcome, value, error, stale, degraded = "info", None, None, False, False
            try:
                self.conn.send(words, deadline)
                reply = self.conn.read(deadline)
                t1 = time.monotonic()
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
                for a in self.conn.attrs:
                    stale = stale or a.get("stale") is True
                    degraded = degraded or a.get("degraded") is True
            except Transport as e:
                t1 = time.monotonic()
                error = "runner: %s" % e
                self.drop()
            rec.update({"t0": t0, "t1": t1, "outcome": outcome, "value": value, "error": error,
                        "stale": stale, "degraded": degraded})
            self.history.write(rec)
            if self.think_ms > 0:
                self.stop_ev.wait(self.rng.uniform(0, self.think_ms) / 1000.0)


# ---- watching the owners: crash lines ----------------------------------------


class Watcher(threading.Thread):
    """Polls the daemon's children every 20 ms.  An owner that disappears
    without the nemesis having killed it (an I/O-error exit, a crash of the
    daemon) lost its memory: a crash line at the time it was seen gone.  The
    master restarts a child after at least 100 ms (master.c BACKOFF_MIN_MS),
    so no write reaches the new owner before the line's time."""

    def __init__(self, hkv, history, stop):
        super().__init__(name="watcher", daemon=True)
        self.hkv = hkv
        self.history = history
        self.stop_ev = stop
        self.lock = threading.Lock()
        self.table = {}          # title -> pid
        self.expected = set()    # pids the nemesis killed (it wrote their lines)
        self.suspended = 0       # >0 while the master is stopped or replaced
        self.unexpected = []     # (title, t, crash?)
        self.error = None

    def expect(self, pid):
        with self.lock:
            self.expected.add(pid)

    def suspend(self):
        with self.lock:
            self.suspended += 1

    def resume(self):
        with self.lock:
            self.suspended -= 1
            self.table = {}

    def deaths_since(self, t):
        with self.lock:
            return [(n, tt) for n, tt, _ in self.unexpected if tt >= t]

    def run(self):
        try:
            last_scan = 0.0
            while not self.stop_ev.wait(0.02):
                now = time.monotonic()
                with self.lock:
                    if self.suspended:
                        continue
                    table = dict(self.table)
                for title, pid in table.items():
                    if proc_alive(pid):
                        continue
                    t = time.monotonic()
                    with self.lock:
                        if self.suspended or self.table.get(title) != pid:
                            continue
                        del self.table[title]
                        if pid in self.expected:
                            continue
                        owner = title.startswith("owner ")
                        self.unexpected.append((title, t, owner))
                    if owner:
                        self.history.write({"kind": "crash", "owner": title[len("owner "):],
                                            "t": t})
                if now - last_scan >= 0.1 or len(table) == 0:
                    last_scan = now
                    kids = self.hkv.children()
                    with self.lock:
                        if not self.suspended:
                            for title, pid in kids.items():
                                if title.startswith("owner ") or title.startswith("edge "):
                                    self.table[title] = pid
        except Exception as e:
            self.error = "watcher: %r" % e


# ---- the nemesis -------------------------------------------------------------


class Nemesis:
    def __init__(self, hkv, history, watcher, rng, kinds, log):
        self.hkv = hkv
        self.history = history
        self.watcher = watcher
        self.rng = rng
        self.kinds = kinds
        self.log = log
        self.big_n = 0

    def fault(self, f, target, t0, t1, detail):
        self.history.write({"kind": "fault", "f": f, "target": target, "t0": t0, "t1": t1,
                            "detail": detail})
        self.log("fault %-14s %-12s %.2f..%.2f %s" % (f, target, t0, t1,
                                                     json.dumps(detail, sort_keys=True)))

    def settle_ms(self, kind):
        """Quiet time after a fault before the next one: a crash must never
        fall in a stall's backlog, so the checker's persist window holds."""
        return {"disk_stall": 1500, "disk_eio": 1500, "pause_owner": 500,
                "kill_master": 500}.get(kind, 0)

    def run_one(self, kind):
        getattr(self, "do_" + kind)()

    # -- processes

    def _kill(self, title):
        pid = self.hkv.pid_of(title)
        if not pid:
            return None, None
        self.watcher.expect(pid)
        os.kill(pid, signal.SIGKILL)
        return pid, time.monotonic()

    def do_kill_owner(self):
        owner = self.rng.choice(self.hkv.owner_names())
        t0 = time.monotonic()
        pid, t = self._kill("owner " + owner)
        if pid is None:
            self.log("kill_owner: owner %s not found" % owner)
            return
        self.history.write({"kind": "crash", "owner": owner, "t": t})
        new = self.hkv.wait_replaced("owner " + owner, pid)
        self.fault("kill_owner", owner, t0, time.monotonic(),
                   {"pid": pid, "new_pid": new, "signal": "KILL"})

    def do_kill_edge(self):
        edge = self.rng.choice(self.hkv.edge_names())
        t0 = time.monotonic()
        pid, _ = self._kill("edge " + edge)
        if pid is None:
            self.log("kill_edge: edge %s not found" % edge)
            return
        new = self.hkv.wait_replaced("edge " + edge, pid)
        self.fault("kill_edge", edge, t0, time.monotonic(),
                   {"pid": pid, "new_pid": new, "signal": "KILL"})

    def do_kill_master(self):
        """kill -9 of the master.  Its children get SIGTERM (PR_SET_PDEATHSIG,
        worker.c) and, seeing the master gone, stop fast; an owner still flushes
        every dirty key before it exits (owner.c: owner_persist_flush_all after
        its loop), so an owner that exits by itself lost nothing.  One still
        alive after the bound is killed here and gets a crash line.  Then the
        daemon is started again on the same dir and port."""
        hkv = self.hkv
        self.watcher.suspend()
        try:
            kids = hkv.children()
            master = hkv.proc
            t0 = time.monotonic()
            master.kill()
            master.wait(timeout=5)
            hkv.old_procs.append(master)
            end = time.monotonic() + 10.0
            alive = dict(kids)
            while alive and time.monotonic() < end:
                alive = {n: p for n, p in alive.items() if proc_alive(p)}
                time.sleep(0.02)
            killed = []
            for title, pid in alive.items():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    continue
                t = time.monotonic()
                if title.startswith("owner "):
                    killed.append(title[len("owner "):])
                    self.history.write({"kind": "crash", "owner": title[len("owner "):], "t": t})
            while alive and time.monotonic() < end + 5.0:
                alive = {n: p for n, p in alive.items() if proc_alive(p)}
                time.sleep(0.02)
            owners_exited = sorted(n[len("owner "):] for n in kids if n.startswith("owner ")
                                   and n[len("owner "):] not in killed)
            self.fault("kill_master", "master", t0, time.monotonic(),
                       {"pid": master.pid, "owners_exited_by_themselves": owners_exited,
                        "owners_killed_after_10s": killed})
            r0 = time.monotonic()
            hkv.start()
            self.fault("restart", "master", r0, time.monotonic(), {"pid": hkv.proc.pid})
        finally:
            self.watcher.resume()

    def do_pause_owner(self):
        owner = self.rng.choice(self.hkv.owner_names())
        pid = self.hkv.pid_of("owner " + owner)
        if not pid:
            self.log("pause_owner: owner %s not found" % owner)
            return
        ms = int(WRITE_TIMEOUT_MS * self.rng.uniform(1.3, 2.0))
        t0 = time.monotonic()
        self.hkv.stopped_pids.add(pid)
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(ms / 1000.0)
        finally:
            os.kill(pid, signal.SIGCONT)
            self.hkv.stopped_pids.discard(pid)
        self.fault("pause_owner", owner, t0, time.monotonic(), {"pid": pid, "ms": ms})

    # -- the disk (tests/fault/stallfs.c: one flag for the whole daemon)

    def do_disk_stall(self):
        ms = self.rng.randint(1500, 3000)
        t0 = time.monotonic()
        open(self.hkv.stall_flag, "w").close()
        try:
            time.sleep(ms / 1000.0)
        finally:
            os.unlink(self.hkv.stall_flag)
        self.fault("disk_stall", "owners", t0, time.monotonic(),
                   {"ms": ms, "scope": "every owner (the shim's flag is process-wide)"})

    def do_disk_eio(self):
        eio = self.hkv.stall_flag + ".eio"
        t0 = time.monotonic()
        open(eio, "w").close()
        try:
            end = time.monotonic() + 3.0
            while time.monotonic() < end and not self.watcher.deaths_since(t0):
                time.sleep(0.02)
            time.sleep(0.2)
        finally:
            os.unlink(eio)
        t1 = time.monotonic()
        exited = sorted(n for n, _ in self.watcher.deaths_since(t0))
        # Wait for the owners to come back before the next fault.
        for title in exited:
            self.hkv.wait_replaced(title, None, timeout=10.0)
        self.fault("disk_eio", "owners", t0, t1, {"exited": exited})

    # -- configuration

    def do_sighup_reorder(self):
        hkv = self.hkv
        try:
            gen0 = int(info_fields(hkv.info("server")).get("config_generation", "0"))
        except (OSError, Transport):
            gen0 = None
        hkv.variant = 1 - hkv.variant
        hkv.write_conf()
        t0 = time.monotonic()
        hkv.proc.send_signal(signal.SIGHUP)
        gen = None
        end = time.monotonic() + 5.0
        while time.monotonic() < end:
            try:
                gen = int(info_fields(hkv.info("server")).get("config_generation", "0"))
            except (OSError, Transport):
                gen = None
            if gen is not None and gen0 is not None and gen > gen0:
                break
            time.sleep(0.02)
        v = CLASS_VARIANTS[hkv.variant]
        self.fault("sighup_reorder", "master", t0, time.monotonic(),
                   {"order": v["order"], "fresh_ms": v["fresh_ms"], "generation": gen,
                    "applied": gen is not None and gen0 is not None and gen > gen0})

    def do_config_set(self):
        changes = [("miss-wait", "600ms"), ("negative-ttl", "500ms"), ("miss-wait", "800ms"),
                   ("negative-ttl", "1s")]
        t0 = time.monotonic()
        replies = []
        for name, value in changes:
            try:
                c = Conn(self.hkv.port, timeout=2.0)
                try:
                    r = c.call(["CONFIG", "SET", name, value], timeout=3.0)
                finally:
                    c.close()
                replies.append("%s %s: %s" % (name, value, r))
            except (OSError, Transport) as e:
                replies.append("%s %s: %s" % (name, value, e))
            time.sleep(self.rng.uniform(0.2, 0.5))
        self.fault("config_set", "edges", t0, time.monotonic(), {"replies": replies})

    def do_big_request(self):
        self.big_n += 1
        key = "hl:big-%d" % self.big_n  # outside the history's keys, on a hot owner
        value = "x" * BIG_REQUEST_BYTES
        t0 = time.monotonic()
        try:
            c = Conn(self.hkv.port, timeout=2.0)
            try:
                r = c.call(["SET", key, value], timeout=REQUEST_TIMEOUT_S)
            finally:
                c.close()
            reply = str(r) if not isinstance(r, RespError) else "-" + str(r)
        except (OSError, Transport) as e:
            reply = "runner: %s" % e
        self.fault("big_request", key, t0, time.monotonic(),
                   {"bytes": BIG_REQUEST_BYTES, "wire_max_frame": WIRE_MAX_FRAME,
                    "reply": reply[:200], "error_reply": reply.startswith("-")})

    # -- clocks

    def edge_time_offset(self, edge, tries=12):
        """Connects until it lands on `edge`; its TIME minus ours, in ms."""
        for _ in range(tries):
            try:
                c = Conn(self.hkv.port, timeout=2.0)
            except OSError:
                return None
            try:
                srv = info_fields(c.call(["INFO", "server"], timeout=2.0))
                pid = int(srv.get("edge_pid", "0"))
                if self.hkv.pid_of("edge " + edge) == pid:
                    before = time.time()
                    r = c.call(["TIME"], timeout=2.0)
                    after = time.time()
                    if isinstance(r, list) and len(r) == 2:
                        t = int(r[0]) + int(r[1]) / 1e6
                        return int(round((t - (before + after) / 2) * 1000))
                    return None
            except (Transport, ValueError):
                pass
            finally:
                c.close()
        return None

    def do_clock_shift(self):
        edge = self.rng.choice(self.hkv.edge_names())
        pid = self.hkv.pid_of("edge " + edge)
        if not pid:
            self.log("clock_shift: edge %s not found" % edge)
            return
        offset = self.rng.choice([-10000, 10000])
        ms = self.rng.randint(2000, 3500)
        path = self.hkv.clock_file
        t0 = time.monotonic()
        with open(path + ".tmp", "w") as f:
            f.write("%d %d\n" % (pid, offset))
        os.replace(path + ".tmp", path)
        try:
            time.sleep(0.1)  # the shim re-reads the file every 50 ms
            seen = self.edge_time_offset(edge)
            rest = ms / 1000.0 - (time.monotonic() - t0)
            if rest > 0:
                time.sleep(rest)
        finally:
            os.unlink(path)
        self.fault("clock_shift", edge, t0, time.monotonic() + 0.05,
                   {"offset_ms": offset, "pid": pid, "ms": ms, "observed_offset_ms": seen})


# ---- the run -------------------------------------------------------------------


def parse_duration(text):
    text = str(text).strip().lower()
    mult = 1.0
    if text.endswith("ms"):
        mult, text = 0.001, text[:-2]
    elif text.endswith("s"):
        text = text[:-1]
    elif text.endswith("m"):
        mult, text = 60.0, text[:-1]
    elif text.endswith("h"):
        mult, text = 3600.0, text[:-1]
    return float(text) * mult


def build_header(args, hkv, workload, seed):
    classes = {}
    for name, c in CLASSES.items():
        fresh = [v["fresh_ms"][name] for v in CLASS_VARIANTS]
        classes[name] = {
            "durability": c["durability"],
            "pool": c["pool"],
            "fresh_ms": CLASS_VARIANTS[0]["fresh_ms"][name],
            "keep_ms": KEEP_MS,
            "persist_window_ms": PERSIST_INTERVAL_MS + COMMIT_ALLOWANCE_MS
            if c["durability"] == "ledger" else 0,
            "read_delta_ms": 0 if args.colos <= 1 else max(fresh) + PUSH_ALLOWANCE_MS,
            "stale_delta_ms": KEEP_MS,
        }
    keys = {}
    for cls, ks in workload.keys.items():
        pool = CLASSES[cls]["pool"]
        n = hkv.hot_owners if pool == "hot" else hkv.cold_owners
        for k in ks:
            keys[k] = {"class": cls, "owner": "%s/%d" % (pool, owner_of(k, pool, n))}
    return {"kind": "header", "version": 1, "seed": seed, "started": time.time(),
            "classes": classes, "keys": keys, "colos": hkv.colo_names(),
            "clients": args.clients}


def run_checker(history_path, outdir, limit):
    """(exit code, output, result dict or None) of tests/history/checker.py,
    or (None, why, None) when it cannot run."""
    checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checker.py")
    if not os.path.exists(checker):
        return None, "checker not found: %s" % checker, None
    js = os.path.join(outdir, "checker.json")
    try:
        p = subprocess.run(["/usr/bin/python3", checker, history_path, "--json", js,
                            "--global-limit", "%g" % limit],
                           capture_output=True, text=True, timeout=limit * 2 + 300)
    except subprocess.TimeoutExpired:
        return 2, "checker did not finish within %g s" % (limit * 2 + 300), None
    out = p.stdout + (p.stderr if p.stderr else "")
    with open(os.path.join(outdir, "checker.txt"), "w") as f:
        f.write(out)
    try:
        with open(js) as f:
            res = json.load(f)
    except (OSError, ValueError):
        res = None
    return p.returncode, out, res


def replay_command(args, seed, outdir):
    here = os.path.relpath(os.path.abspath(__file__))
    cmd = ["/usr/bin/python3", here, "--bin", args.bin, "--duration", args.duration,
           "--seed", str(seed), "--clients", str(args.clients), "--faults", args.faults,
           "--colos", str(args.colos), "--keys", str(args.keys), "--think-ms", str(args.think_ms)]
    if args.ops != "all":
        cmd += ["--ops", args.ops]
    if args.check_limit:
        cmd += ["--check-limit", "%g" % args.check_limit]
    if args.shim:
        cmd += ["--shim", args.shim]
    if args.clockshim:
        cmd += ["--clockshim", args.clockshim]
    cmd += ["--out", outdir + "-replay"]
    if args.no_check:
        cmd.append("--no-check")
    return " ".join(cmd)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="hotkvd history workload + nemesis (issue 10); writes DIR/history.jsonl "
                    "and checks it with tests/history/checker.py.",
        epilog=reply_table_text() + "\n\nfault kinds: " + ", ".join(FAULT_KINDS) +
        "\nexit: 0 no anomaly, 1 anomalies, 2 unknown (checker bound), 3 run error",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="path of hotkvd")
    ap.add_argument("--duration", default="30", help="workload time: 30, 45s, 10m (default 30 s)")
    ap.add_argument("--seed", type=int, default=None, help="default: from the time")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--keys", type=int, default=8, help="keys per class, 5..20 (default 8)")
    ap.add_argument("--think-ms", type=float, default=10.0,
                    help="each client waits uniform(0, this) ms between operations")
    ap.add_argument("--out", default=None, help="output dir (default: a new temp dir)")
    ap.add_argument("--faults", default="all", help="all, none, or kind,kind,...")
    ap.add_argument("--colos", type=int, choices=[1, 2], default=1)
    ap.add_argument("--shim", default=None, help="stallfs.so (needed for disk_stall, disk_eio)")
    ap.add_argument("--clockshim", default=None, help="clockshift.so (needed for clock_shift)")
    ap.add_argument("--ops", default="all",
                    help="operation kinds, all or a comma list of: " +
                    ",".join(n for n, _ in OP_WEIGHTS))
    ap.add_argument("--no-check", action="store_true", help="write the history, do not check it")
    ap.add_argument("--check-limit", type=float, default=None,
                    help="seconds of checker search in all (its --global-limit; default "
                    "max(120, 2 x duration)); past it keys are unknown, never passed")
    ap.add_argument("--keep", action="store_true", help="keep the daemon's data dir")
    args = ap.parse_args(argv)

    check_siphash()
    if args.ops == "all":
        ops = [n for n, _ in OP_WEIGHTS]
    else:
        ops = [o.strip() for o in args.ops.split(",") if o.strip()]
        bad = [o for o in ops if o not in dict(OP_WEIGHTS)]
        if bad or not ops:
            ap.error("unknown operation kinds: %s" % ", ".join(bad or ["(none)"]))
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % 1000000007
    duration = parse_duration(args.duration)
    if not 1 <= args.keys <= 100:
        ap.error("--keys must be 1..100")
    if args.faults == "all":
        kinds = list(FAULT_KINDS)
        if not args.shim:
            kinds = [k for k in kinds if not k.startswith("disk_")]
        if not args.clockshim:
            kinds.remove("clock_shift")
    elif args.faults == "none":
        kinds = []
    else:
        kinds = [k.strip() for k in args.faults.split(",") if k.strip()]
        bad = [k for k in kinds if k not in FAULT_KINDS]
        if bad:
            ap.error("unknown fault kinds: %s" % ", ".join(bad))
        if any(k.startswith("disk_") for k in kinds) and not args.shim:
            ap.error("disk faults need --shim stallfs.so")
        if "clock_shift" in kinds and not args.clockshim:
            ap.error("clock_shift needs --clockshim clockshift.so")
    skipped = [k for k in FAULT_KINDS if k not in kinds] if args.faults == "all" else []

    outdir = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="hkv-history-")
    os.makedirs(outdir, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="hkvh-")
    logf = open(os.path.join(outdir, "run.log"), "w")
    t_start = time.monotonic()

    def log(msg):
        line = "[%7.2f] %s" % (time.monotonic() - t_start, msg)
        logf.write(line + "\n")
        logf.flush()

    def on_signal(sig, frame):
        raise KeyboardInterrupt("signal %d" % sig)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    hkv = Daemon(args, workdir, outdir, args.colos)
    history = History(os.path.join(outdir, "history.jsonl"))
    workload = Workload(args.keys, {"hot": hkv.hot_owners, "cold": hkv.cold_owners}, ops)
    stop_clients = threading.Event()
    stop_watch = threading.Event()
    clients, watcher = [], None
    run_error = None
    t_work0 = t_work1 = None
    try:
        hkv.write_conf()
        hkv.start()
        log("daemon up: pid %d port %d dir %s" % (hkv.proc.pid, hkv.port, workdir))
        history.write(build_header(args, hkv, workload, seed))
        watcher = Watcher(hkv, history, stop_watch)
        watcher.start()
        nedges = len(hkv.edge_names())
        for i in range(args.clients):
            c = Client(i, seed, hkv.port, hkv, workload, history, stop_clients, args.think_ms,
                       nedges)
            clients.append(c)
        t_work0 = time.monotonic()
        for c in clients:
            c.start()
        # The nemesis runs here, on the main thread: only it starts the
        # daemon (PR_SET_PDEATHSIG belongs to the thread that forked).
        rng = random.Random("%s-nemesis" % seed)
        nemesis = Nemesis(hkv, history, watcher, rng, kinds, log)
        end = t_work0 + duration
        # Rounds of every kind in a seeded order; the first round always
        # completes (the workload runs on until it has), later ones stop at
        # the end of the duration.
        queue, rounds = [], 0
        time.sleep(min(1.0, duration / 10))
        while True:
            if not kinds:
                if time.monotonic() >= end:
                    break
                time.sleep(min(0.2, max(0.0, end - time.monotonic())))
                continue
            if not queue:
                if rounds > 0 and time.monotonic() >= end:
                    break
                rounds += 1
                queue = list(kinds)
                rng.shuffle(queue)
            elif rounds > 1 and time.monotonic() >= end:
                break
            kind = queue.pop(0)
            if hkv.proc.poll() is not None:
                raise RuntimeError("the master exited by itself (status %s)" % hkv.proc.returncode)
            log("nemesis: round %d: %s" % (rounds, kind))
            nemesis.run_one(kind)
            # Spread what is left of the first round over what is left of
            # the run: gaps shrink when time is short, never below 0.2 s.
            left = max(0.0, end - time.monotonic())
            per = left / (len(queue) + 1) if rounds == 1 else 1.0
            gap = max(0.2, min(rng.uniform(0.5, 1.5), per * 0.5))
            time.sleep(gap + nemesis.settle_ms(kind) / 1000.0)
        stop_clients.set()
        for c in clients:
            c.join(timeout=REQUEST_TIMEOUT_S + 5)
        t_work1 = time.monotonic()
        errors = [c.error for c in clients if c.error] + \
                 ([watcher.error] if watcher.error else [])
        if errors:
            run_error = "; ".join(errors)
    except KeyboardInterrupt as e:
        run_error = "interrupted (%s)" % e
    except Exception as e:
        run_error = "%s: %s" % (type(e).__name__, e)
        import traceback
        log(traceback.format_exc())
    finally:
        stop_clients.set()
        for c in clients:
            c.join(timeout=REQUEST_TIMEOUT_S + 5)
        if watcher is not None:
            watcher.suspend()
        stop_watch.set()
        status = hkv.stop()
        if watcher is not None:
            watcher.join(timeout=5)
        history.close()
        log("daemon stopped: status %s" % status)
        for name in (hkv.conf,):
            try:
                shutil.copy(name, os.path.join(outdir, os.path.basename(name)))
            except OSError:
                pass
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    hist_path = os.path.join(outdir, "history.jsonl")
    if args.no_check or run_error:
        code, out, res = None, "not run (%s)" % ("--no-check" if args.no_check
                                                 else "the run failed"), None
    else:
        limit = args.check_limit if args.check_limit else max(120.0, 2 * duration)
        code, out, res = run_checker(hist_path, outdir, limit)

    # ---- summary
    print("hotkvd history run: seed %d, %d clients, %d colo(s), %d keys per class, faults %s"
          % (seed, args.clients, args.colos, args.keys, ",".join(kinds) or "none"))
    if t_work0 is not None and t_work1 is not None:
        print("workload: %.1f s" % (t_work1 - t_work0))
    total = sum(history.counts.values())
    print("operations: %d (ok %d, fail %d, info %d)" % (total, history.counts["ok"],
                                                       history.counts["fail"],
                                                       history.counts["info"]))
    print("  by f: " + ", ".join("%s %d/%d/%d" % (f, s["ok"], s["fail"], s["info"])
                                 for f, s in sorted(history.by_f.items())) + "  (ok/fail/info)")
    print("faults: " + " ".join("%s=%d" % (k, history.faults.get(k, 0))
                                for k in FAULT_KINDS + ["restart"]))
    if skipped:
        print("  not run (no shim given): " + ", ".join(skipped))
    print("crashes: " + (", ".join("%s=%d" % kv for kv in sorted(history.crashes.items()))
                         or "none"))
    if watcher is not None and watcher.unexpected:
        print("unexpected exits: " + ", ".join("%s at %.2f" % (n, t - t_start)
                                               for n, t, _ in watcher.unexpected))
    if history.surprises:
        print("unexpected reply shapes: %d (first: %s)" % (len(history.surprises),
                                                          history.surprises[0]))
    if run_error:
        print("RUN ERROR: %s" % run_error)
    if res is not None:
        names = {}
        for a in res.get("anomalies", []):
            names[a["name"]] = names.get(a["name"], 0) + 1
        print("histories checked: %s of %s keys; anomalies: %d%s; unknown: %d; checker %.1f s"
              % (res.get("keys_checked"), res.get("keys"), len(res.get("anomalies", [])),
                 " (" + ", ".join("%s %d" % kv for kv in sorted(names.items())) + ")"
                 if names else "", len(res.get("unknown", [])), res.get("seconds", 0)))
    if code is None:
        print("checker: %s" % out)
    else:
        lines = out.rstrip("\n").split("\n")
        print("checker: exit %d (%s); full output in %s" %
              (code, {0: "no anomaly", 1: "anomalies", 2: "unknown", 3: "bad input"}.get(code, "?"),
               os.path.join(outdir, "checker.txt")))
        shown = lines if len(lines) <= 80 else lines[:40] + ["..."] + lines[-30:]
        for line in shown:
            print("  | " + line)
    print("history: %s" % hist_path)
    print("replay: %s" % replay_command(args, seed, outdir))
    if run_error:
        return 3
    if history.surprises:
        return 1
    if code is None:
        return 0 if args.no_check else 3  # asked to check, and could not
    return {0: 0, 1: 1, 2: 2}.get(code, 3)


if __name__ == "__main__":
    sys.exit(main())
