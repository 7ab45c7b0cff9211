#!/usr/bin/python3
"""
follower_seed.py - a follower seeded for a 1 GiB leaf under writes (issue 27,
target (B): "without failing a write").

It reuses scripts/bench/move_bench (imported, not copied): a single-node
etcd and one hotkvd host "h1" of cluster "mb" with two hot owner processes
(`--cluster-init --bits 2`: two leaves each, `auto-moves no`), owner 1's
first leaf filled with --size bytes of --value-size values and persisted
(move_bench's load and wait), then:

  before  move_bench's writers (--writers threads, --rate SET/s in all, to
          256 keys of that leaf, --value-size values, each write timed from
          send to reply) for --before seconds, `replicas 0`;
  seed    `CONFIG SET replicas 1` (reloadable): the agent orders a follower
          for every leaf (one host: the other owner process); the seed time
          is CONFIG SET -> the loaded leaf's in-sync set holding owner 2
          (`hotkvd-admin leaf list` shows "isr 2", polled every 0.25 s);
  after   the writers go on for --after seconds.

Reported: the seed time, the writes' p50/p99/max before / during the seed /
after, failed writes (any reply but +OK, or none), each owner's RSS (VmRSS,
sampled every 0.25 s) before, at its peak during the seed and at the end,
owner CPU, the owners' log lines about the leaf's follow, and INFO
# Replication at the end.  The one host is the single-host form of a
cluster (no namespaces): the follower is in another owner PROCESS, the
copy goes over the owners' hand-off socket as a cross-host one would.

  follower_seed.py [--hotkvd bin/hotkvd] [--admin bin/hotkvd-admin] [--size 1G]
      [--value-size 16384] [--rate 1000] [--writers 8] [--before 10] [--after 5]
      [--seed-timeout 900] [--out DIR] [--keep]

Exit 0 when the follower came in sync and no write failed; 1 otherwise.
"""
import argparse
import importlib.machinery
import importlib.util
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True


def import_move_bench():
    path = os.path.join(HERE, "move_bench")
    loader = importlib.machinery.SourceFileLoader("move_bench", path)
    spec = importlib.util.spec_from_loader("move_bench", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


MB = import_move_bench()
log = MB.log


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class RssSampler(threading.Thread):
    """(t, rss owner 1, rss owner 2) every `every` s."""

    def __init__(self, pids, every=0.25):
        super().__init__(daemon=True)
        self.pids, self.every = pids, every
        self.samples = []
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            self.samples.append((time.monotonic(), rss_kb(self.pids[1]), rss_kb(self.pids[2])))
            self.stop_ev.wait(self.every)

    def at(self, t, o):
        s = [x for x in self.samples if x[0] <= t and x[o] is not None]
        return s[-1][o] if s else None

    def peak(self, a, b, o):
        s = [x[o] for x in self.samples if a <= x[0] <= b and x[o] is not None]
        return max(s) if s else None


def isr_of(h, leaf):
    rc, out = h.admin("leaf", "list", timeout=30)
    for line in out.splitlines():
        if line.startswith("leaf hot %s " % leaf):
            m = re.search(r" isr ([0-9,]+)", line)
            return m.group(1).split(",") if m else []
    return None


def mib(kb):
    return "n/a" if kb is None else "%.0f" % (kb / 1024.0)


def frac(x):
    return "n/a" if x is None else "%.2f" % x


def ms(x):
    return "n/a" if x is None else "%.1f" % x


def run(args):
    tmp = tempfile.mkdtemp(prefix="hkv-seed-bench-")
    res = {"ok": False}
    try:
        etcd, url = MB.start_etcd(tmp)
        h = MB.Host(args, tmp, url)
        with open(h.conf, "a") as f:     # the defaults, said: replicas 0 until the seed
            f.write("replicas 0\nreplica-timeout 1s\n")
        h.init()
        h.start()
        bits, prefix = h.leaf_of(1)
        leaf = "%d-%08x" % (bits, prefix)
        nkeys = args.size // args.value_size
        log("follower seed: host up (port %d, owners pid %d and %d); owner 1's leaf %s gets "
            "%d keys of %d B; load %s" % (h.port, h.owner_pid[1], h.owner_pid[2], leaf, nkeys,
                                          args.value_size, os.getloadavg()))
        tags = MB.leaf_names("t%d", bits, prefix, 512)
        wkeys = MB.leaf_names("mw:%d", bits, prefix, 256)
        t = time.monotonic()
        refused = MB.load(h.port, nkeys, tags, args.value_size)
        load_s = time.monotonic() - t
        t = time.monotonic()
        MB.wait_for("persist backlog 0", lambda: MB.persisted(h.port, nkeys), 900, 0.5)
        log("  loaded in %.1f s (%d refused and sent again), persisted %.1f s later" % (
            load_s, refused, time.monotonic() - t))
        cpu = MB.Sampler(h.owner_pid)
        cpu.th.start()
        mem = RssSampler(h.owner_pid)
        mem.start()
        wr = MB.Writers(h.port, wkeys, args.rate, args.writers, args.value_size)
        wr.start()
        time.sleep(args.before)
        t_seed, wall_seed = time.monotonic(), time.time()
        c = MB.Resp(h.port)
        r = c.cmd("CONFIG", "SET", "replicas", "1")
        c.close()
        if r != "OK":
            raise RuntimeError("CONFIG SET replicas 1: %r" % (r,))
        t_sync = None
        end = t_seed + args.seed_timeout
        while time.monotonic() < end:
            isr = isr_of(h, leaf)
            if isr and "2" in isr:
                t_sync = time.monotonic()
                break
            if not h.proc.alive():
                raise RuntimeError("hotkvd exited during the seed; see %s" % h.logpath)
            time.sleep(0.25)
        time.sleep(args.after)
        recs = wr.finish()
        t_end = time.monotonic()
        cpu.stop.set()
        mem.stop_ev.set()
        cpu.th.join()
        mem.join()
        seed_end = t_sync if t_sync is not None else t_end
        b0 = wr.t0 + 1.0
        phases = (("before", b0, t_seed), ("seed", t_seed, seed_end), ("after", seed_end, t_end))
        lines = []
        for name, a, b in phases:
            n, p50, p99, mx = MB.lat_stats(recs, a, b)
            lines.append("%s %s/%s/%s (%d)" % (name, ms(p50), ms(p99), ms(mx), n))
        failed = sum(1 for x in recs if not x[2])
        log("  seed: %s" % ("in sync %.1f s after CONFIG SET replicas 1" % (t_sync - t_seed)
                            if t_sync is not None else "NOT in sync within %.0f s"
                            % args.seed_timeout))
        log("  writes p50/p99/max ms (count): %s" % ", ".join(lines))
        log("  failed writes: %d of %d %s" % (failed, len(recs), wr.first_failure or ""))
        for o in (1, 2):
            log("  owner %d RSS MiB: before %s, peak during the seed %s, end %s; CPU (of one "
                "core) before %s, during %s" % (
                    o, mib(mem.at(t_seed, o)), mib(mem.peak(t_seed, seed_end, o)),
                    mib(mem.at(t_end, o)), frac(cpu.busy(b0, t_seed, o)),
                    frac(cpu.busy(t_seed, seed_end, o))))
        shown, began, synced = 0, None, None
        with open(h.logpath, errors="replace") as f:
            for line in f:
                lt = MB.log_time(line)
                if lt is None or lt < wall_seed - 0.01 or leaf not in line:
                    continue
                if began is None and "seeding follower 2" in line:
                    began = lt
                if synced is None and "follower 2 is in sync" in line:
                    synced = lt
                if shown < 8:
                    log("    %+.2f s %s" % (lt - wall_seed, line.rstrip().split(": ", 1)[-1][:150]))
                    shown += 1
        if began is not None and synced is not None:
            log("  seed by the primary's log: 'seeding follower 2' -> 'follower 2 is in sync' "
                "%.2f s (starting %.2f s after CONFIG SET)" % (synced - began, began - wall_seed))
        info = MB.info(h.port, "replication")
        log("  INFO # Replication: %s" % " ".join("%s=%s" % kv for kv in sorted(info.items())))
        log("  load average at the end: %s" % (os.getloadavg(),))
        with open(os.path.join(args.out, "seed-writes.log"), "w") as f:
            f.write("# t_s latency_us ok (from the writers' start; CONFIG SET at %.3f, in sync at "
                    "%s)\n" % (t_seed - wr.t0, "%.3f" % (t_sync - wr.t0) if t_sync else "-"))
            for x in recs:
                f.write("%.4f %d %d\n" % (x[0] - wr.t0, x[1] * 1e6, x[2]))
        res["ok"] = t_sync is not None and failed == 0
        h.proc.stop()
        etcd.stop()
    finally:
        MB.stop_all()
        if args.keep:
            log("  kept: %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return res["ok"]


def main():
    ap = argparse.ArgumentParser(description="a follower seeded for a big leaf under writes",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("--hotkvd", default=os.path.join(ROOT, "bin", "hotkvd"))
    ap.add_argument("--admin", default=os.path.join(ROOT, "bin", "hotkvd-admin"))
    ap.add_argument("--size", type=MB.parse_size, default=1 << 30)
    ap.add_argument("--value-size", type=int, default=16384)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--before", type=float, default=10.0)
    ap.add_argument("--after", type=float, default=5.0)
    ap.add_argument("--seed-timeout", type=float, default=900.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    args.out = os.path.abspath(args.out or tempfile.mkdtemp(prefix="hkv-seed-out-"))
    os.makedirs(args.out, exist_ok=True)
    signal.signal(signal.SIGINT, MB.on_signal)
    signal.signal(signal.SIGTERM, MB.on_signal)
    try:
        ok = run(args)
    except (RuntimeError, MB.Interrupted) as e:
        log("follower_seed: %s" % e)
        ok = False
    log("results: %s" % args.out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
