"""history_run.py - (h) the history checker across the cluster: the
workload of tests/history/run.py (its operation generator, its clients'
recording and reply classification, its History file and its checker) with
clients spread over the three hosts' edges, keys owned by all six owners,
and cluster faults on a schedule: agent kill -9, one host's clock 10 s off,
etcd killed, leaves holding history keys moved to an owner of another host
while the clients run (issue 15: `hotkvd-admin leaf move`, twice), a move
whose target owner is SIGSTOPped the moment it serves the leaf while the
clients hammer the leaf's key with INCRBY (issue 25: writes that met MOVED
time out there and are resent), an owner host cut off (link down) and a
one-way cut (the last two only with namespaces).  Every move is also a move
line of the history (the key's owner changes).  The checker must find no
anomaly."""

import importlib.util
import os
import random
import signal
import threading
import time

from run_resp import RespError, Transport, info_fields

from clock import ClockShift
from hosts import CLASSES, KEEP_MS, MISS_WAIT_MS, WRITE_TIMEOUT_MS

HERE = os.path.dirname(os.path.abspath(__file__))
HIST = os.path.join(os.path.dirname(HERE), "history")
PUSH_ALLOWANCE_MS = 500
PERSIST_WINDOW_MS = 100 + 500      # persist-interval + commit allowance


def _load_history_runner():
    spec = importlib.util.spec_from_file_location("history_run_py", os.path.join(HIST, "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class HostHistory:
    """What run_nemesis.reconcile_log needs of a History, naming owners
    "<host>/<pool>/<k>" as the keys' header does."""

    def __init__(self, history, host):
        self.h = history
        self.host = host
        self.crash_pids = history.crash_pids

    def crash(self, owner, pid, t):
        self.h.crash("%s/%s" % (self.host, owner), pid, t)


FAULTS = ["kill_agent", "clock_shift", "kill_etcd", "move_leaves", "move_pause", "link_down",
          "cut_one_way"]


def move_leaves(cl, hosts, keys, rng, n=2):
    """Moves the leaves of n random history keys, each to an owner of its
    pool on another host (the source host's agent runs the move); returns
    [(key, leaf, from id, to id, exit code, last output line)]."""
    from cluster import POOL_OF, place
    leaves, owners = cl.read_map()
    done = []
    for key in rng.sample(keys, n):
        pool = POOL_OF[key.split(":", 1)[0]]
        h = place(key)
        leaf = [(b, p, o) for b, p, o, _ in leaves.get(pool, [])
                if (h >> (64 - b) if b else 0) == p]
        if not leaf:
            continue
        bits, prefix, owner = leaf[0]
        src = owners.get(owner, "")
        targets = [n for n, oid in owners.items()
                   if oid.split("/")[1] == pool and oid.split("/")[0] != src.split("/")[0]]
        if not targets:
            continue
        to = rng.choice(targets)
        name = "%d-%08x" % (bits, prefix)
        code, out = hosts[0].admin("leaf", "move", pool, name, str(to), "--wait", "20000",
                                   timeout=30)
        done.append((key, name, src, owners[to], code, out.strip().split("\n")[-1][:120]))
        leaves, owners = cl.read_map()
    return done


def leaf_of(cl, key):
    """(pool, "bits-prefix", owner number, owner id) of key's leaf now."""
    from cluster import POOL_OF, place
    leaves, owners = cl.read_map()
    pool = POOL_OF[key.split(":", 1)[0]]
    h = place(key)
    for b, p, o, _ in leaves.get(pool, []):
        if (h >> (64 - b) if b else 0) == p:
            return pool, "%d-%08x" % (b, p), o, owners.get(o, "")
    return pool, None, None, None


def move_pause(cl, hosts, key, rng, wl):
    """Moves key's leaf to an owner of another host, the clients focused on
    key (INCRBY mostly), and SIGSTOPs for 1.3-2 x write-timeout the source
    as the move starts (2 of 3 times: what found retries applied twice on a
    single host) or the target the moment it serves the leaf.  Returns
    (detail, from id, to id)."""
    pool, name, num, src = leaf_of(cl, key)
    if name is None:
        return {"error": "no leaf"}, None, None
    _, owners = cl.read_map()
    targets = [n for n, oid in owners.items()
               if oid.split("/")[1] == pool and oid.split("/")[0] != src.split("/")[0]]
    if not targets:
        return {"error": "no owner on another host"}, None, None
    to = rng.choice(targets)
    dst = owners[to]
    who = rng.choice(["target", "source", "source"])
    victim = dst if who == "target" else src
    host = cl.hosts[victim.split("/")[0]]
    res = {}
    wl.set_focus([key])
    try:
        time.sleep(0.3)
        th = threading.Thread(target=lambda: res.setdefault("r", hosts[0].admin(
            "leaf", "move", pool, name, str(to), "--wait", "20000", timeout=30)), daemon=True)
        th.start()
        end = time.monotonic() + (20.0 if who == "target" else 0.0)
        while time.monotonic() < end and th.is_alive():
            if leaf_of(cl, key)[2] == to:
                break
            time.sleep(0.02)
        pid = host.child("hotkvd: owner " + victim.split("/", 1)[1])
        ms = int(WRITE_TIMEOUT_MS * rng.uniform(1.3, 2.0))
        if pid:
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(ms / 1000.0)
            finally:
                os.kill(pid, signal.SIGCONT)
        th.join(35)
        time.sleep(0.5)
    finally:
        wl.set_focus(None)
    code, out = res.get("r", (-1, "admin did not finish"))
    return ({"key": key, "leaf": name, "from": src, "to": dst, "paused": victim,
             "paused_pid": pid, "pause_ms": ms,
             "exit": code, "out": out.strip().split("\n")[-1][:120]}, src, dst)


class HistRun:
    """One history run across the cluster: the workload (3 keys per host per
    class), its clients spread over the hosts, the history file and its
    header; fault/move/crash lines; then the checker and the verdict.  The
    fault schedules (run_history's below, replicas.py's) drive it."""

    def __init__(self, ctx, seed=None, clients_per_host=2, replicas=0, daemon_replicas=None,
                 name="history", tag="hist", trackers_per_host=1):
        self.H = H = _load_history_runner()
        self.ctx = ctx
        self.cl = cl = ctx.cl
        self.seed = seed if seed is not None else int(time.time()) % 1000000007
        self.outdir = os.path.join(cl.tmp, name)
        os.makedirs(self.outdir, exist_ok=True)
        self.history = history = H.History(os.path.join(self.outdir, "history.jsonl"))
        self.wl = wl = object.__new__(H.Workload)
        cl.read_map()   # the header's owners: the map now, not a cached one
        # each run its own keys (the tag): the model starts from missing keys
        wl.keys = {cls: _spread_keys(cl, cls, 3, tag) for cls in ("hl", "hd")}
        wl.all_keys = wl.keys["hl"] + wl.keys["hd"]
        wl.ops = [n for n, _ in H.OP_WEIGHTS]
        wl.weights = [w for _, w in H.OP_WEIGHTS]
        wl.focus = None
        wl.recent = {}  # SET ... IFEQ compares with these (run_workload.Workload)
        wl.counter = {k: "%s:n{%s}" % (k.split(":", 1)[0], k) for k in wl.all_keys}
        classes = {}
        for name, pool, fresh, keep, dur, _ in CLASSES:
            if name not in wl.keys:
                continue
            fresh_max = max(c[2] for c in CLASSES if c[0] in wl.keys)
            classes[name] = {
                "durability": dur, "pool": pool, "fresh_ms": fresh, "keep_ms": keep,
                "persist_window_ms": PERSIST_WINDOW_MS if dur == "ledger" else 0,
                "read_delta_ms": fresh_max + MISS_WAIT_MS + PUSH_ALLOWANCE_MS,
                "stale_delta_ms": KEEP_MS,
                "crash_read_delta_ms": fresh_max + MISS_WAIT_MS + PUSH_ALLOWANCE_MS
                if dur == "ledger" else 0,
            }
        self.keys = {k: {"class": cls, "owner": cl.owner_of(k)} for cls, ks in wl.keys.items()
                     for k in ks + [wl.counter[x] for x in ks]}
        self.nclients = clients_per_host * len(cl.hosts)
        header = {"kind": "header", "version": 1, "seed": self.seed, "started": time.time(),
                  "classes": classes, "keys": self.keys, "colos": list(cl.host_names),
                  "clients": self.nclients + trackers_per_host * len(cl.hosts),
                  "tracking": trackers_per_host * len(cl.hosts)}
        if replicas:
            # the checker's replicas mode: no acknowledged write of any class
            # may be lost across an owner's death (persist windows count as 0)
            header["replicas"] = replicas
            header["daemon_replicas"] = replicas if daemon_replicas is None else daemon_replicas
        history.write(header)
        self.stop = threading.Event()
        self.clients = []
        self.hosts = hosts = list(cl.hosts.values())
        client_cls = _cluster_client(H)
        for i in range(self.nclients):
            c = client_cls(i, self.seed, None, None, wl, history, self.stop, 10.0, 1)
            c.chost = hosts[i % len(hosts)]
            self.clients.append(c)
        tracker_cls = _cluster_tracker(H)
        self.trackers = []
        for i in range(trackers_per_host * len(hosts)):
            c = tracker_cls(self.nclients + i, self.seed, None, None, wl, history, self.stop,
                            10.0, 1)
            c.chost = hosts[i % len(hosts)]
            self.trackers.append(c)
        self.clients += self.trackers
        self.wall_minus_mono = time.time() - time.monotonic()
        self.log = []
        self.skipped = []
        self.extra_problems = []
        self.rng = random.Random(self.seed)
        self.t_start = time.monotonic()

    def start(self):
        self.t_start = time.monotonic()
        for c in self.clients:
            c.start()

    def fault(self, f, target, t0, t1, detail=None):
        self.history.write({"kind": "fault", "f": f, "target": target, "t0": t0, "t1": t1,
                            "detail": detail or {}})
        self.log.append("%s %s at %.1f..%.1f s" % (f, target, t0 - self.t_start,
                                                   (t1 or t0) - self.t_start))

    def move(self, keys, src, dst, t0, t1):
        """A move line: the keys' owner changed from src to dst in [t0, t1]."""
        self.history.write({"kind": "move", "keys": list(keys), "from": src, "to": dst,
                            "t0": t0, "t1": t1})

    def until(self, t):
        time.sleep(max(0.0, self.t_start + t - time.monotonic()))

    def elapsed(self):
        return time.monotonic() - self.t_start

    def stop_clients(self):
        self.stop.set()
        for c in self.clients:
            c.join(15)

    def finish(self, err, seconds, limit=None):
        """Stops the clients, adds the crashes the hosts' masters logged,
        runs the checker; returns (summary, details, problems, outdir)."""
        from run_nemesis import reconcile_log
        self.stop_clients()
        history = self.history
        for h in self.hosts:
            reconcile_log(h.log, HostHistory(history, h.name), set(), self.wall_minus_mono)
        history.close()
        errors = [c.error for c in self.clients if c.error]
        total = sum(history.counts.values())
        code, out, res = self.H.run_checker(os.path.join(self.outdir, "history.jsonl"),
                                            self.outdir, limit or max(60.0, 2 * seconds))
        self.checker_code, self.checker_res = code, res
        anomalies = len(res.get("anomalies", [])) if res else None
        unknown = len(res.get("unknown", [])) if res else None
        track = self.H.run_track.summary(self.trackers, None)
        summary = ("%d ops (ok %d, fail %d, info %d) by %d clients on %d hosts in %.0f s "
                   "(seed %d); faults: %s%s; checker exit %s, anomalies %s, unknown %s, "
                   "crashes %s" % (
                       total, history.counts["ok"], history.counts["fail"],
                       history.counts["info"], self.nclients, len(self.hosts), seconds,
                       self.seed, ", ".join(self.log) or "none",
                       ("; not run: " + ", ".join(self.skipped)) if self.skipped else "",
                       code, anomalies, unknown, history.crashes or "none")) + (
                           "; " + track if track else "")
        details = out.rstrip("\n").split("\n")[-40:] if code else []
        problems = []
        if err:
            problems.append("run error: " + err)
        if errors:
            problems.append("client errors: " + "; ".join(errors))
        if history.surprises:
            problems.append("unexpected reply shapes: %s" % history.surprises[:3])
        if code != 0:
            problems.append("checker exit %s (0 = no anomaly): %s/history.jsonl and "
                            "%s/checker.txt in the kept cluster dir (below)" % (
                                code, os.path.basename(self.outdir),
                                os.path.basename(self.outdir)))
        if total < 300:
            problems.append("only %d operations recorded" % total)
        if self.trackers and sum(c.counts["cached"] for c in self.trackers) == 0:
            problems.append("the tracking clients read nothing from their caches")
        problems += self.extra_problems
        return summary, details, problems, self.outdir


def _spread_keys(cl, cls, n, tag):
    """n keys of cls per host, owned there; after failovers a host may own
    no leaf of a pool (nothing moves them back): its share comes from the
    others."""
    out, short = [], 0
    for h in cl.host_names:
        try:
            out += cl.keys_on(h, cls, n, tag=tag)
        except RuntimeError:
            short += n
    i = 0
    while short and i < 100000:
        k = "%s:%s:%d" % (cls, tag, i)
        if k not in out:
            out.append(k)
            short -= 1
        i += 1
    return out


def _host_connect(client, cls=None):
    """A history client's connect() on its host (client.chost), inside the
    host's namespace: HELLO 3, CLIENT META ON, and the colo and edge it
    landed on.  False if the host does not answer."""
    try:
        c = client.chost.conn(timeout=2.0, cls=cls)
    except OSError:
        return False
    try:
        r = [c.call(w, timeout=2.0) for w in (["HELLO", "3"], ["CLIENT", "META", "ON"],
                                              ["INFO", "server"])]
    except Transport:
        c.close()
        return False
    if any(isinstance(x, RespError) for x in r):
        c.close()
        return False
    fields = info_fields(r[2])
    client.conn, client.colo = c, fields.get("colo", client.chost.name)
    client.edge = "%s/%s" % (client.chost.name, fields.get("edge_pid", "?"))
    client.client = client.history.client_id()
    return True


def _cluster_client(H):
    class ClusterClient(H.Client):
        def connect(self):
            return _host_connect(self)
    return ClusterClient


def _cluster_tracker(H):
    """A tracking client (tests/history/run_track.py) on a cluster host: its
    cache is kept by invalidations that come from whichever host's owner
    wrote the key (issue 28's promise across hosts)."""
    from hosts import HostConn

    class TrackHostConn(H.run_track.TrackConn, HostConn):
        pass

    class ClusterTracker(H.run_track.TrackingClient):
        def connect(self):
            return _host_connect(self, TrackHostConn) and self.track_on()
    return ClusterTracker


def run_history(ctx, seconds, clients_per_host=2, seed=None, faults=None):
    """Returns (summary line, details, problems, outdir)."""
    run = HistRun(ctx, seed, clients_per_host)
    cl, hosts, wl, rng = run.cl, run.hosts, run.wl, run.rng
    fault, until, log = run.fault, run.until, run.log
    netns_ok = cl.net.mode == "netns"
    faults = FAULTS if faults is None else faults
    skipped = run.skipped
    skipped += ["%s (not asked for)" % f for f in FAULTS if f not in faults]
    err = None
    try:
        run.start()
        D = float(seconds)
        # 1. agent kill -9 on a random host
        until(0.08 * D)
        h = rng.choice(hosts)
        pid = h.child("hotkvd: agent")
        t0 = time.monotonic()
        if pid and "kill_agent" in faults:
            os.kill(pid, signal.SIGKILL)
            fault("kill_agent", h.name, t0, None, {"pid": pid})
        # 2. one host's clock 10 s off for a while
        until(0.15 * D)
        if "clock_shift" not in faults:
            pass
        elif cl.clockshim:
            h = rng.choice(hosts)
            off = rng.choice([-10000, 10000])
            t0 = time.monotonic()
            with ClockShift(cl, h, off):
                time.sleep(max(1.0, 0.15 * D))
            fault("clock_shift", h.name, t0, time.monotonic() + 0.05, {"offset_ms": off})
        else:
            skipped.append("clock_shift (no clock shim)")
        # 3. etcd killed, then back
        until(0.35 * D)
        if "kill_etcd" in faults:
            t0 = time.monotonic()
            cl.etcd.kill9()
            time.sleep(max(2.0, 0.15 * D))
            cl.etcd.start()
            fault("kill_etcd", "etcd", t0, time.monotonic())
        # 3b. leaves moving between hosts under the clients (issue 15)
        until(0.52 * D)
        if "move_leaves" in faults:
            t0 = time.monotonic()
            moved = move_leaves(cl, hosts, wl.all_keys, rng)
            fault("move_leaves", ",".join(m[1] for m in moved), t0, time.monotonic(),
                  {"moves": [list(m) for m in moved]})
            for m in moved:
                log.append("leaf %s (%s) %s -> %s: admin exit %d (%s)" % (
                    m[1], m[0], m[2], m[3], m[4], m[5]))
                if m[4] == 0 and m[2] and m[3]:
                    run.move([m[0], wl.counter[m[0]]], m[2], m[3], t0, time.monotonic())
        # 3c. a move while its target owner is paused and writes retry (issue 25)
        until(0.56 * D)
        if "move_pause" in faults:
            t0 = time.monotonic()
            key = rng.choice(wl.keys["hl"] + wl.keys["hd"])
            detail, src, dst = move_pause(cl, hosts, key, rng, wl)
            t1 = time.monotonic()
            fault("move_pause", detail.get("leaf", "-"), t0, t1, detail)
            if src and dst and leaf_of(cl, key)[3] == dst:
                run.move([key, wl.counter[key]], src, dst, t0, t1)
                log.append("move_pause: %s %s -> %s, %s paused %d ms" % (
                    key, src, dst, detail["paused"], detail["pause_ms"]))
        # 4. an owner host cut off, then back
        until(0.6 * D)
        if netns_ok:
            h = rng.choice(hosts)
            if "link_down" in faults:
                t0 = time.monotonic()
                cl.net.link_down(h.node)
                try:
                    time.sleep(max(2.0, 0.12 * D))
                finally:
                    cl.net.link_up(h.node)
                fault("link_down", h.name, t0, time.monotonic())
            # 5. a one-way cut between two hosts
            until(0.8 * D)
            a, b = rng.sample(hosts, 2)
            if "cut_one_way" not in faults:
                pass
            elif cl.net.nft_ok:
                t0 = time.monotonic()
                cl.net.cut(a.node, b.node)
                try:
                    time.sleep(max(1.5, 0.08 * D))
                finally:
                    cl.net.heal(a.node)
                fault("cut_one_way", "%s->%s" % (a.name, b.name), t0, time.monotonic())
            else:
                skipped.append("cut_one_way (%s)" % cl.net.nft_reason)
        else:
            skipped += ["%s (no namespaces: %s)" % (f, cl.net.reason)
                        for f in ("link_down", "cut_one_way") if f in faults]
        until(D)
    except Exception as e:  # a harness failure: reported, the run fails
        err = "%s: %s" % (type(e).__name__, e)
    finally:
        run.stop_clients()
        if cl.net.mode == "netns":
            for h in hosts:
                if h.node in cl.net.down:
                    cl.net.link_up(h.node)
            cl.net.heal()
        if not cl.etcd.running():
            cl.etcd.start()
    return run.finish(err, seconds)
