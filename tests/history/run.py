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

Issue 25 composes features: the daemon runs with leaf-moves yes, HTTP and
users, and the nemesis also splits and moves leaves (run_leaves.py: with
owners paused or killed around a move, and automatic moves), churns
credentials by reload (run_creds.py: probers log in with revoked ones),
and pins edge memory with output-limit clients (run_outlimit.py: VmRSS
sampled against a bound); HTTP readers (run_http.py) read in the history.
Issue 28: tracking clients (run_track.py, --tracking N) answer reads from
their own caches, kept by CLIENT TRACKING invalidations; those reads are in
the history too ("cached": true), judged against the tracking bound; and
keyspace notification subscribers (run_notify.py, --notify N) whose events
are judged against the operations after the run; and pub/sub publishers and
subscribers (run_pubsub.py, --pubsub N) whose messages are judged likewise.
A scanner (run_scan.py, --scan) walks the keyspace with SCAN through every
fault; each complete walk must return every stable key written before it.
CL.THROTTLE clients (run_throttle.py, --throttle N, --throttle-http N) call the
edge's rate limiter on keys of their own; after the run every reply must be
well formed and no window admit more than GCRA allows (restarts excepted).

Python 3 standard library only.  Every wait is bounded; every process the run
starts is stopped by pid at the end, also on an exception or a signal.

How a reply becomes an outcome is decided by REPLY_TABLE (run_workload.py): the one
place that says which error replies mean "not applied" (outcome fail) and
which mean "outcome unknown" (outcome info, the write may have been applied).
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from run_daemon import (CLASS_VARIANTS, CLASSES, COMMIT_ALLOWANCE_MS, KEEP_MS,
                        MISS_WAIT_MS, PERSIST_INTERVAL_MS, PUSH_ALLOWANCE_MS, REQUEST_TIMEOUT_S, Daemon,
                        daemon_trouble)
import run_resp
from run_creds import WORKER, AuthLog, Creds, Prober, check_auth
from run_http import HttpReader
from run_leaves import Leaves
from run_nemesis import Nemesis, Watcher, check_client_pauses, reconcile_log
from run_outlimit import OutLimit
from run_replicas import REPLICA_ONLY, Replicas
from run_resp import Transport, info_fields
from run_route import check_siphash, owner_of
import run_notify
import run_pubsub
import run_scan
import run_throttle
import run_track
# The workload, its clients and the reply table (run_workload.py); run_refserver.py
# reaches them as run.Workload, run.Client, ...
from run_workload import (FAULT_KINDS, HOTKVD_ONLY_OPS, LEAF_KINDS, OP_WEIGHTS, Client, History, Workload,
                          reply_table_text)


TRACKING_DEFAULT = 2   # the CI history suites run with tracking clients


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
            "persist_window_ms": hkv.persist_interval_ms + COMMIT_ALLOWANCE_MS
            if c["durability"] == "ledger" else 0,
            # The staleness bound (README): fresh + miss-wait.  One colo:
            # every write goes through it and is in its cache before OK.
            "read_delta_ms": 0 if args.colos <= 1
            else max(fresh) + MISS_WAIT_MS + PUSH_ALLOWANCE_MS,
            "stale_delta_ms": KEEP_MS,
            # After an owner crash, a ledger write it lost may still be in
            # colo caches, served until fresh + miss-wait after it was stored
            # (nothing pushes a crash); durable writes are seen only once
            # committed, so a crash takes back nothing anyone saw.
            # With followers (--replicas >= 1) a kill loses no acknowledged
            # write, and caches hold only acknowledged values (an edge caches
            # on OK, owners push after the followers hold a write): reads
            # right after a kill are checked too.
            "crash_read_delta_ms": max(fresh) + MISS_WAIT_MS + PUSH_ALLOWANCE_MS
            if c["durability"] == "ledger" and not args.replicas else 0,
            # A tracking client's read from its own cache (issue 28): the
            # promise's bound, the staleness bound, in every mode (one colo
            # too: an invalidation travels after the write's OK).
            "cached_delta_ms": max(fresh) + MISS_WAIT_MS + PUSH_ALLOWANCE_MS,
        }
    keys = {}
    for cls, ks in workload.keys.items():
        ks = ks + [workload.counter[k] for k in ks]
        pool = CLASSES[cls]["pool"]
        n = hkv.hot_owners if pool == "hot" else hkv.cold_owners
        for k in ks:
            keys[k] = {"class": cls, "owner": "%s/%d" % (pool, owner_of(k, pool, n))}
    # "replicas": the checker's mode (>= 1: no loss across a kill), the
    # daemon's setting unless --strict-loss asks for it without followers
    # (the control: it must find losses); "daemon_replicas": the setting.
    return {"kind": "header", "version": 1, "seed": seed, "started": time.time(),
            "classes": classes, "keys": keys, "colos": hkv.colo_names(),
            "clients": args.clients, "tracking": getattr(args, "tracking", 0),
            "replicas": max(args.replicas, 1 if args.strict_loss else 0),
            "daemon_replicas": args.replicas}


def run_checker(history_path, outdir, limit, reduce_limit=None):
    """(exit code, output, result dict or None) of tests/history/checker.py,
    or (None, why, None) when it cannot run."""
    checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "checker.py")
    if not os.path.exists(checker):
        return None, "checker not found: %s" % checker, None
    js = os.path.join(outdir, "checker.json")
    try:
        # a key's search gets a tenth of the whole (20 s at least): a 10-minute
        # torture's busiest key needed more than the checker's 20 s default
        # (seed 1796155000: hl:4 unknown at 20 s, decided within 120 s)
        p = subprocess.run(["/usr/bin/python3", checker, history_path, "--json", js,
                            "--global-limit", "%g" % limit,
                            "--time-limit", "%g" % max(20.0, limit / 10)] +
                           (["--reduce-limit", "%g" % reduce_limit] if reduce_limit else []),
                           capture_output=True, text=True,
                           timeout=limit * 2 + 300 + 6 * (reduce_limit or 0))
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
    if args.leaf_moves != "yes":
        cmd += ["--leaf-moves", args.leaf_moves]
    if args.http_readers != 2:
        cmd += ["--http-readers", str(args.http_readers)]
    if args.http_writes != 0.3:
        cmd += ["--http-writes", "%g" % args.http_writes]
    if args.admin:
        cmd += ["--admin", args.admin]
    if args.reduce_limit:
        cmd += ["--reduce-limit", "%g" % args.reduce_limit]
    if args.replicas:
        cmd += ["--replicas", str(args.replicas)]
    if args.strict_loss:
        cmd.append("--strict-loss")
    if args.persist_interval:
        cmd += ["--persist-interval", str(args.persist_interval)]
    if args.tracking != TRACKING_DEFAULT:
        cmd += ["--tracking", str(args.tracking)]
    if args.tracking_evict != "yes":
        cmd += ["--tracking-evict", args.tracking_evict]
    if args.notify != run_notify.NOTIFY_DEFAULT:
        cmd += ["--notify", str(args.notify)]
    if args.pubsub != run_pubsub.PUBSUB_DEFAULT:
        cmd += ["--pubsub", str(args.pubsub)]
    if args.scan != 1:
        cmd += ["--scan", str(args.scan)]
    if args.throttle != run_throttle.THROTTLE_DEFAULT:
        cmd += ["--throttle", str(args.throttle)]
    if args.throttle_http != run_throttle.THROTTLE_HTTP_DEFAULT:
        cmd += ["--throttle-http", str(args.throttle_http)]
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
    ap.add_argument("--reduce-limit", type=float, default=None,
                    help="the checker's --reduce-limit: seconds to shrink each anomaly's proof")
    ap.add_argument("--admin", default=None, help="hotkvd-admin (default: next to --bin)")
    ap.add_argument("--leaf-moves", choices=["yes", "no"], default="yes",
                    help="run the daemon with leaf-moves yes (needed by the leaf kinds)")
    ap.add_argument("--http-readers", type=int, default=2,
                    help="readers over HTTP (GET /v1/kv and long polls) in the history")
    ap.add_argument("--http-writes", type=float, default=0.3,
                    help="the share of the HTTP clients' ops that are PUT or DELETE (0-1)")
    ap.add_argument("--replicas", type=int, choices=[0, 1, 2, 3], default=0,
                    help="issue 27: the daemon runs with `replicas N` (needs --leaf-moves yes); "
                    "N >= 1 checks in replicas mode (no acknowledged write of any class lost "
                    "across an owner kill) and adds " + ", ".join(REPLICA_ONLY) +
                    " to --faults all")
    ap.add_argument("--strict-loss", action="store_true",
                    help="check in replicas mode even with --replicas 0: the control, which "
                    "must find losses (with a long --persist-interval and kill_primary)")
    ap.add_argument("--persist-interval", type=int, default=None, metavar="MS",
                    help="the daemon's persist-interval in ms (default %d)" % PERSIST_INTERVAL_MS)
    ap.add_argument("--tracking", type=int, default=TRACKING_DEFAULT, metavar="N",
                    help="issue 28: clients with CLIENT TRACKING and a local cache whose reads "
                    "from it are in the history (run_track.py; default %d)" % TRACKING_DEFAULT)
    ap.add_argument("--notify", type=int, default=run_notify.NOTIFY_DEFAULT, metavar="N",
                    help="keyspace notification subscribers (notify-keyspace-events KEA; "
                    "run_notify.py; 0: off; default %d)" % run_notify.NOTIFY_DEFAULT)
    ap.add_argument("--pubsub", type=int, default=run_pubsub.PUBSUB_DEFAULT, metavar="N",
                    help="pub/sub subscribers (SUBSCRIBE under RESP2, PSUBSCRIBE under RESP3, "
                    "by turns) hearing %d publishers (run_pubsub.py; 0: neither; default %d)"
                    % (run_pubsub.PUBLISHERS, run_pubsub.PUBSUB_DEFAULT))
    ap.add_argument("--scan", type=int, default=1, choices=[0, 1],
                    help="a scanner walking the keyspace with SCAN through every fault, judged "
                    "on stable keys (run_scan.py; 0: off; default 1)")
    ap.add_argument("--throttle", type=int, default=run_throttle.THROTTLE_DEFAULT, metavar="N",
                    help="RESP clients calling CL.THROTTLE on keys thr:0..3, judged after the run "
                    "(run_throttle.py; 0: off; default %d)" % run_throttle.THROTTLE_DEFAULT)
    ap.add_argument("--throttle-http", type=int, default=run_throttle.THROTTLE_HTTP_DEFAULT,
                    metavar="N", help="HTTP clients calling POST /v1/ratelimit/KEY on the same "
                    "keys (default %d)" % run_throttle.THROTTLE_HTTP_DEFAULT)
    ap.add_argument("--tracking-evict", choices=["yes", "no"], default="yes",
                    help="with tracking clients, a small tracking-table-max-keys (odd seeds: 4 in "
                    "the file; config_set: 2, 5 or 9 for a while), so evictions happen")
    args = ap.parse_args(argv)
    args.http = True
    if not 0 <= args.tracking <= 16:
        ap.error("--tracking must be 0..16")
    if not 0 <= args.notify <= 8:
        ap.error("--notify must be 0..8")
    if not 0 <= args.pubsub <= 8:
        ap.error("--pubsub must be 0..8")
    if not 0 <= args.throttle <= 8 or not 0 <= args.throttle_http <= 4:
        ap.error("--throttle must be 0..8, --throttle-http 0..4")
    if (args.replicas or args.strict_loss) and args.leaf_moves != "yes":
        ap.error("--replicas and --strict-loss need --leaf-moves yes")

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
        if args.leaf_moves != "yes":
            kinds = [k for k in kinds if k not in LEAF_KINDS]
        if not args.replicas:
            kinds = [k for k in kinds if k not in REPLICA_ONLY]
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
        if LEAF_KINDS & set(kinds) and args.leaf_moves != "yes":
            ap.error("leaf fault kinds need --leaf-moves yes")
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
    hkv.tracking_evict = args.tracking_evict == "yes"
    hkv.notify = args.notify > 0
    if args.tracking and hkv.tracking_evict and seed % 2:
        hkv.tracking_max_keys = 4   # far under the workload's keys: evictions all along
    creds = hkv.creds = Creds(seed)
    run_resp.AUTH = WORKER
    history = History(os.path.join(outdir, "history.jsonl"))
    authlog = AuthLog(os.path.join(outdir, "auth.jsonl"))
    workload = Workload(args.keys, {"hot": hkv.hot_owners, "cold": hkv.cold_owners}, ops)
    stop_clients = threading.Event()
    stop_watch = threading.Event()
    clients, watcher, nemesis = [], None, None
    trackers, track_info = [], None
    notifiers = []
    publishers, subscribers = [], []
    scanner = None
    throttlers, thr_info = [], None
    leaves = None
    outlimit = OutLimit(hkv, log)
    extra = []          # HTTP readers and credential probers: joined with the clients
    wall_minus_mono = time.time() - time.monotonic()
    run_error = None
    t_work0 = t_work1 = None
    try:
        hkv.write_conf()
        hkv.start()
        log("daemon up: pid %d port %d dir %s" % (hkv.proc.pid, hkv.port, workdir))
        history.write(build_header(args, hkv, workload, seed))
        watcher = Watcher(hkv, history, stop_watch)
        watcher.start()
        if hkv.leaf_moves:
            pools = {k: CLASSES[k.split(":", 1)[0]]["pool"]
                     for k in workload.all_keys + list(workload.counter.values())}
            leaves = Leaves(hkv, history, workload, pools, log)
            leaves.start()
        outlimit.setup()
        nedges = len(hkv.edge_names())
        for i in range(args.clients):
            c = Client(i, seed, hkv.port, hkv, workload, history, stop_clients, args.think_ms,
                       nedges)
            clients.append(c)
        trackers = [run_track.TrackingClient(i, seed, hkv.port, hkv, workload, history,
                                             stop_clients, args.think_ms, nedges)
                    for i in range(args.tracking)]
        clients += trackers
        for i in range(args.http_readers if hkv.http_port else 0):
            extra.append(HttpReader(i, seed, hkv, workload, history, stop_clients, WORKER,
                                    args.think_ms, args.http_writes))
        if "cred_churn" in kinds:
            for i, kind in enumerate(["resp-new", "resp-again", "http", "http", "http"]):
                extra.append(Prober(kind, i, seed, hkv, creds, authlog, stop_clients,
                                    workload.all_keys[0]))
        t_work0 = time.monotonic()
        notifiers = [run_notify.Subscriber(i, hkv, stop_clients,
                                           os.path.join(outdir, "notify.jsonl"))
                     for i in range(args.notify)]
        extra += notifiers
        if args.pubsub:
            publishers = [run_pubsub.Publisher(i, seed, hkv, stop_clients)
                          for i in range(run_pubsub.PUBLISHERS)]
            subscribers = [run_pubsub.Subscriber(i, hkv, stop_clients)
                           for i in range(args.pubsub)]
        extra += publishers + subscribers
        if args.scan:
            # its keys first, and on disk before any fault (run_scan.py)
            run_scan.write_stable(hkv)
            time.sleep(hkv.persist_interval_ms / 1000.0 + 0.3)
            scanner = run_scan.Scanner(seed, hkv, stop_clients)
            extra.append(scanner)
        throttlers = [run_throttle.ThrottleClient(i, seed, hkv, history, stop_clients,
                                                  args.think_ms) for i in range(args.throttle)]
        throttlers += [run_throttle.ThrottleHttp(i, seed, hkv, history, stop_clients, WORKER,
                                                 args.think_ms)
                       for i in range(args.throttle_http if hkv.http_port else 0)]
        if throttlers:
            thr_info = run_throttle.FailopenSampler(hkv, stop_clients)
            thr_info.sample()
            extra += throttlers + [thr_info]
        for c in clients + extra:
            c.start()
        # The nemesis runs here, on the main thread: only it starts the
        # daemon (PR_SET_PDEATHSIG belongs to the thread that forked).
        rng = random.Random("%s-nemesis" % seed)
        nemesis = Nemesis(hkv, history, watcher, rng, kinds, log)
        nemesis.leaves, nemesis.creds, nemesis.outlimit = leaves, creds, outlimit
        if leaves is not None:
            nemesis.replicas = Replicas(hkv, leaves, log)
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
                # The kinds where retries meet moves twice a round: each
                # finds a retry applied twice only now and then.
                queue = list(kinds) + [k for k in kinds if k in ("move_pause", "move_kill")]
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
        for c in clients + extra:
            c.join(timeout=REQUEST_TIMEOUT_S + 5)
        t_work1 = time.monotonic()
        if thr_info is not None:
            thr_info.sample()
        if trackers or publishers:
            try:
                track_info = info_fields(hkv.info("stats"))
            except (OSError, Transport):
                track_info = None
        if leaves is not None:
            leaves.sync("end")
        errors = [c.error for c in clients + extra if c.error] + \
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
        for c in clients + extra:
            c.join(timeout=REQUEST_TIMEOUT_S + 5)
        outlimit.stop()
        authlog.close()
        if watcher is not None:
            watcher.suspend()
        stop_watch.set()
        status = hkv.stop()
        if watcher is not None:
            watcher.join(timeout=5)
        nemesis_edges = nemesis.killed_edges if nemesis is not None else set()
        from_log = reconcile_log(hkv.log, history, nemesis_edges, wall_minus_mono)
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
        code, out, res = run_checker(hist_path, outdir, limit, args.reduce_limit)

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
        print("  not run (no shim given, leaf-moves no, or replicas 0): " + ", ".join(skipped))
    if leaves is not None:
        print("leaves: moves done %d (not done %d), splits done %d, automatic moves %d and "
              "splits %d (agent's INFO), move lines %d" % (
                  leaves.moves_done, leaves.moves_failed, leaves.splits_done,
                  leaves.auto["moves"], leaves.auto["splits"], leaves.move_lines))
    http = [c for c in extra if isinstance(c, HttpReader)]
    if http:
        print("http clients: %d gets, %d long polls, %d puts (%d with If-Match, %d of them "
              "412), %d deletes; Idempotency-Key: idem %d, idem-retries %d, idem-replayed %d "
              "(unknown outcomes settled by a retry %d, not retried after a crash %d)"
              % tuple(sum(c.counts[k] for c in http) for k in (
                  "get", "poll", "put", "if-match", "if-match-412", "delete", "idem",
                  "idem-retries", "idem-replayed", "idem-settled", "idem-crash-kept")))
    auth_bad = []
    if "cred_churn" in kinds:
        try:
            attempts = [json.loads(l) for l in open(os.path.join(outdir, "auth.jsonl"))]
        except (OSError, ValueError):
            attempts = []
        tried, auth_bad = check_auth(attempts, creds.revoked)
        with open(os.path.join(outdir, "auth-revoked.json"), "w") as f:
            json.dump([[u, p, t] for (u, p), t in creds.revoked.items()], f)
        print("credentials: %d reloads (%d confirmed on every edge), %d login attempts, revoked "
              "credentials tried %d, accepted %d" % (
                  nemesis.cred_reloads if nemesis else 0, creds.confirmed, len(attempts), tried,
                  len(auth_bad)))
        if auth_bad:
            by = {}
            for a in auth_bad:
                by.setdefault(a["via"], set()).add((a["user"], a["password"]))
            print("  accepted by way: " + ", ".join("%s %d attempts (%d credentials)" % (
                v, sum(1 for a in auth_bad if a["via"] == v), len(c)) for v, c in sorted(by.items())))
        for a in auth_bad[:5]:
            print("  REVOKED CREDENTIAL ACCEPTED: %s %s:%s at %+.3f (revoked at %+.3f): %s" % (
                a["via"], a["user"], a["password"], a["t0"] - t_start,
                creds.revoked[(a["user"], a["password"])] - t_start, a["reply"]))
    if trackers:
        print(run_track.summary(trackers, track_info) +
              (" (tracking-table-max-keys %d)" % hkv.tracking_max_keys
               if hkv.tracking_max_keys else ""))
    print(outlimit.summary())
    notify_bad = []
    if notifiers and not run_error:
        notify_bad, line = run_notify.check(notifiers, hist_path)
        print(line)
        for b in notify_bad[:10]:
            print("  PROMISE BROKEN: " + b)
    pubsub_bad = []
    if publishers and not run_error:
        run_pubsub.write(os.path.join(outdir, "pubsub.jsonl"), publishers, subscribers)
        pubsub_bad, line = run_pubsub.check(publishers, subscribers)
        pubsub_bad += [x.error for x in publishers + subscribers if x.error]
        if track_info is not None:  # the switches between the owner route and the fallback
            line += "; %s published through the local fallback (INFO, since the edges' start)" % (
                track_info.get("pubsub_published_local", "?"))
        print(line)
        for b in pubsub_bad[:10]:
            print("  PROMISE BROKEN: " + b)
    scan_bad = []
    if scanner is not None and not run_error:
        print(scanner.summary())
        scan_bad = scanner.broken
        for b in scan_bad[:10]:
            print("  PROMISE BROKEN: " + b)
    thr_bad = []
    if throttlers and not run_error:
        recs = run_throttle.write(os.path.join(outdir, "throttle.jsonl"), throttlers)
        thr_bad, line = run_throttle.check(recs, hist_path, args.colos,
                                           (thr_info.total, thr_info.samples), t_start)
        print(line)
        for b in thr_bad[:10]:
            print("  PROMISE BROKEN: " + b)
        if len(thr_bad) > 10:
            print("  ... %d more in all" % len(thr_bad))
    pause_bad = []
    if nemesis is not None and "client_pause" in kinds and not run_error:
        pause_bad, line = check_client_pauses(hist_path)
        print(line)
        for b in pause_bad[:10]:
            print("  PROMISE BROKEN: " + b)
    if nemesis is not None and nemesis.replicas is not None and (
            "kill_primary" in kinds or args.replicas or args.strict_loss):
        print(nemesis.replicas.summary() + " (daemon replicas %d, checker %s)" % (
            args.replicas, "replicas mode" if args.replicas or args.strict_loss else "default"))
    broken = []  # the replication promises the runner checks itself (run_replicas.py)
    if nemesis is not None and nemesis.replicas is not None and not run_error:
        broken = nemesis.replicas.report(os.path.join(outdir, "history.jsonl"), kinds)
    if leaves is not None:
        for b in leaves.broken[:10]:
            print("  PROMISE BROKEN: " + b)
        broken = broken + leaves.broken
    print("crashes: " + (", ".join("%s=%d" % kv for kv in sorted(history.crashes.items()))
                         or "none"))
    if watcher is not None and watcher.unexpected:
        print("exits not caused by a kill (crash lines for owners): " + ", ".join("%s at %.2f" % (n, t - t_start)
                                               for n, t, _ in watcher.unexpected))
    for role, name, pid, how, t in from_log:
        print("from the log: %s %s (pid %d) %s at %.2f%s" % (
            role, name, pid, how, t - t_start,
            ": crash line added" if role == "owner" else " (not a nemesis kill)"))
    trouble, leaks = daemon_trouble(hkv.log, hkv.stderr_path)
    for line in trouble:
        print("DAEMON CRASH OR SANITIZER ERROR: " + line)
    for line in leaks:
        print("daemon leak at exit (not failing the run): " + line)
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
    if history.surprises or auth_bad or outlimit.over or broken or trouble or notify_bad \
            or pubsub_bad or scan_bad or pause_bad or thr_bad:
        return 1
    if code is None:
        return 0 if args.no_check else 3  # asked to check, and could not
    return {0: 0, 1: 1, 2: 2}.get(code, 3)


if __name__ == "__main__":
    sys.exit(main())
