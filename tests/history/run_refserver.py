#!/usr/bin/python3
"""run_refserver.py - the history runner against a reference server that is
linearizable by construction, so a clean history is the only right answer.

The server is a Python dict under one lock speaking the RESP3 subset the
workload uses (HELLO 3, CLIENT META, INFO server, SET NX/XX/GET/KEEPTTL/PX,
SETNX, GET, EXISTS, MGET, GETDEL, DEL, INCR, INCRBY, MSET, PEXPIRE, PERSIST).
To exercise every path of the runner's reply classification it also
misbehaves, at random but honestly: it sleeps up to 1 ms around each command
(overlapping operations), answers some writes "-BUSY" without applying them
(outcome fail), answers some "-UNAVAILABLE" after applying them or not
(outcome info), and closes some connections before or after applying a write
(outcome info, then a reconnect as a new client).

    /usr/bin/python3 tests/history/run_refserver.py --duration 10 --seed 3

writes DIR/history.jsonl with run.py's clients (the same workload and
recording code), runs checker.py on it and exits with the checker's code: 0
is the only correct result.  With --bug the server lies on purpose (applies
a write it answers -BUSY, or answers OK to a SET it drops) and 1 is the only
correct result.  `make test` runs both (tests/integration/check_history.c),
so a runner change that records a wrong history fails.
"""

import argparse
import os
import random
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import types

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import run  # noqa: E402

MISBEHAVE = 0.004  # chance of each kind of misbehaviour per write


class Err(str):
    pass


class Simple(str):
    pass


OK = Simple("OK")


def encode(v):
    if v is None:
        return b"_\r\n"
    if isinstance(v, bool):
        return b"#t\r\n" if v else b"#f\r\n"
    if isinstance(v, int):
        return b":%d\r\n" % v
    if isinstance(v, Err):
        return b"-" + v.encode() + b"\r\n"
    if isinstance(v, Simple):
        return b"+" + v.encode() + b"\r\n"
    if isinstance(v, str):
        b = v.encode()
        return b"$%d\r\n%s\r\n" % (len(b), b)
    if isinstance(v, list):
        return b"*%d\r\n" % len(v) + b"".join(encode(x) for x in v)
    if isinstance(v, dict):
        return b"%%%d\r\n" % len(v) + b"".join(encode(k) + encode(x) for k, x in v.items())
    raise TypeError(v)


def canonical_int(s):
    try:
        return str(int(s)) == s
    except ValueError:
        return False


class Store:
    """key -> [value, has_ttl]; TTLs in the workload are >= 1 h: never fire."""

    def __init__(self):
        self.lock = threading.Lock()
        self.db = {}

    def execute(self, a):
        c = a[0].upper()
        db = self.db
        if c == "GET":
            return db[a[1]][0] if a[1] in db else None
        if c == "EXISTS":
            return 1 if a[1] in db else 0
        if c == "MGET":
            return [db[k][0] if k in db else None for k in a[1:]]
        if c == "SETNX":
            if a[1] in db:
                return 0
            db[a[1]] = [a[2], False]
            return 1
        if c == "SET":
            k, v, opts = a[1], a[2], [x.upper() for x in a[3:]]
            old = db.get(k)
            get = "GET" in opts
            if ("NX" in opts and old) or ("XX" in opts and not old):
                return (old[0] if old else None) if get else None
            ttl = "PX" in opts or ("KEEPTTL" in opts and old is not None and old[1])
            db[k] = [v, bool(ttl)]
            return (old[0] if old else None) if get else OK
        if c == "GETDEL":
            old = db.pop(a[1], None)
            return old[0] if old else None
        if c == "DEL":
            return 1 if db.pop(a[1], None) else 0
        if c in ("INCR", "INCRBY"):
            d = 1 if c == "INCR" else int(a[2])
            old = db.get(a[1])
            if old and not canonical_int(old[0]):
                return Err("ERR value is not an integer or out of range")
            n = (int(old[0]) if old else 0) + d
            db[a[1]] = [str(n), old[1] if old else False]
            return n
        if c == "MSET":
            for i in range(1, len(a), 2):
                db[a[i]] = [a[i + 1], False]
            return OK
        if c == "PEXPIRE":
            if a[1] not in db:
                return 0
            if int(a[2]) <= 0:
                del db[a[1]]
            else:
                db[a[1]][1] = True
            return 1
        if c == "PERSIST":
            if a[1] in db and db[a[1]][1]:
                db[a[1]][1] = False
                return 1
            return 0
        return Err("ERR unknown command '%s'" % a[0])


WRITES = {"SET", "SETNX", "GETDEL", "DEL", "INCR", "INCRBY", "MSET", "PEXPIRE", "PERSIST"}


def make_handler(store, seed, bug):
    counter = [0]
    lock = threading.Lock()

    class Handler(socketserver.StreamRequestHandler):
        def setup(self):
            super().setup()
            with lock:
                counter[0] += 1
                n = counter[0]
            self.rng = random.Random("%s-ref-%d" % (seed, n))

        def handle(self):
            f = self.rfile
            while True:
                line = f.readline()
                if not line:
                    return
                args = []
                for _ in range(int(line[1:])):
                    n = int(f.readline()[1:])
                    args.append(f.read(n + 2)[:-2].decode())
                reply = self.one(args)
                if reply is None:
                    return  # close the connection
                self.wfile.write(reply)

        def one(self, args):
            c = args[0].upper()
            if c == "HELLO":
                return encode({"server": "refserver", "proto": 3})
            if c == "CLIENT":
                return encode(OK)
            if c == "INFO":
                return encode("# Server\r\ncolo:a\r\nedge_pid:0\r\n")
            r = self.rng.random()
            time.sleep(self.rng.random() * 0.001)
            write = c in WRITES
            if write and r < MISBEHAVE:
                if bug == "busy-applied":  # a lie the checker must catch
                    with store.lock:
                        store.execute(args)
                return encode(Err("BUSY refused, not applied"))
            if write and bug == "ok-not-applied" and r < 1.5 * MISBEHAVE and c == "SET":
                return encode(OK)  # acknowledged, never applied: a lost write
            if write and r < 2 * MISBEHAVE:
                return None  # closed before applying
            with store.lock:
                reply = store.execute(args)
            time.sleep(self.rng.random() * 0.001)
            if write and r < 3 * MISBEHAVE:
                return None  # applied, then the connection closed
            if write and r < 4 * MISBEHAVE:
                return encode(Err("UNAVAILABLE applied, but said unknown"))
            return encode(reply)

    return Handler


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class FakeDaemon:
    """What run.Client and build_header ask of the daemon."""
    hot_owners = 2
    cold_owners = 2
    persist_interval_ms = 100   # the daemon's default (build_header's persist window)

    def edge_names(self):
        return ["a/0"]

    def colo_names(self):
        return ["a"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--out", default=None)
    ap.add_argument("--bug", choices=["none", "busy-applied", "ok-not-applied"], default="none",
                    help="make the server wrong on purpose: the checker must then exit 1")
    args = ap.parse_args(argv)
    outdir = os.path.abspath(args.out) if args.out else tempfile.mkdtemp(prefix="hkv-ref-")
    os.makedirs(outdir, exist_ok=True)

    store = Store()
    srv = Server(("127.0.0.1", 0), make_handler(store, args.seed, args.bug))
    threading.Thread(target=srv.serve_forever, name="refserver", daemon=True).start()
    fake = FakeDaemon()
    workload = run.Workload(8, {"hot": 2, "cold": 2}, [n for n, _ in run.OP_WEIGHTS
                                                       if n not in run.HOTKVD_ONLY_OPS])
    path = os.path.join(outdir, "history.jsonl")
    history = run.History(path)
    hargs = types.SimpleNamespace(colos=1, clients=args.clients, replicas=0, strict_loss=False)
    history.write(run.build_header(hargs, fake, workload, args.seed))
    stop = threading.Event()
    clients = [run.Client(i, args.seed, srv.server_address[1], fake, workload, history, stop,
                          2.0, 1) for i in range(args.clients)]
    for c in clients:
        c.start()
    stop.wait(args.duration)
    stop.set()
    for c in clients:
        c.join(timeout=run.REQUEST_TIMEOUT_S + 5)
    srv.shutdown()
    history.close()
    errors = [c.error for c in clients if c.error] + history.surprises[:5]
    print("reference server run: seed %d, %.0f s, operations %d (ok %d, fail %d, info %d), "
          "clients %d" % (args.seed, args.duration, sum(history.counts.values()),
                          history.counts["ok"], history.counts["fail"], history.counts["info"],
                          history.next_client))
    if errors:
        print("runner errors: %s" % "; ".join(errors))
        return 3
    if min(history.counts.values()) == 0:
        print("every outcome must occur (ok, fail, info): the run proves too little")
        return 3
    checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checker.py")
    p = subprocess.run(["/usr/bin/python3", checker, path], capture_output=True, text=True,
                       timeout=600)
    sys.stdout.write(p.stdout[-20000:] + p.stderr[-5000:])
    print("history: %s" % path)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
