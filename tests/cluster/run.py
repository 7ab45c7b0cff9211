#!/usr/bin/python3
"""run.py - the cluster tests of issue 14: the harness's self-test, then
etcd and three hotkvd hosts in network namespaces (or on loopback addresses,
said loudly, when namespaces cannot be made), the scenarios in order, the
figures, and a summary.  Every process is stopped by pid at the end, however
the run ends.

    /usr/bin/python3 tests/cluster/run.py --bin bin/hotkvd \\
        --clockshim build/release/tests/history/clockshift.so [--quick]

--quick is what `make test` runs (tests/integration/check_cluster.c: a
shorter etcd outage and history run, to stay under 3 minutes); without it,
`make cluster-test`: the 30 s etcd outage and a longer history run.
Exit: 0 every scenario passed (skips are listed with their reasons),
1 a scenario failed, 3 the harness could not run (setup failed).
"""

import argparse
import os
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "history"))

import scenarios as S  # noqa: E402
from cluster import Cluster  # noqa: E402
from history_run import run_history  # noqa: E402
import replica_scenarios as R  # noqa: E402
from selftest import SelfTestFailure, run_selftest  # noqa: E402


def history_across_cluster(ctx):
    """(h) the history checker over the cluster, faults included."""
    faults = None if ctx.args.history_faults == "all" else \
        [f for f in ctx.args.history_faults.split(",") if f]
    summary, details, problems, outdir = run_history(ctx, ctx.args.history_seconds,
                                                     seed=ctx.args.seed, faults=faults)
    ctx.notes.append("history: " + summary)
    if problems:
        ctx.cl.failed = True
        raise S.Fail("; ".join(problems) + "\n    " + summary +
                     ("\n    | " + "\n    | ".join(details) if details else ""))
    return summary


# (letter, function), in the order they run on the one cluster.
SCENARIOS = [
    ("a", S.push_visible_across_hosts),
    ("adm", S.admin_status_and_info),
    ("fig", S.figures_latency),
    ("fig", S.figures_map_change),
    ("fig", S.figures_etcd_traffic),
    ("f", S.compaction_during_watch),
    ("e", S.owner_started_twice_refused),
    ("d", S.agent_kill9_restarted),
    ("b", S.etcd_outage_no_errors),
    ("c", S.owner_host_cut_off),
    ("c", S.owner_host_one_way_cut),
    ("c", S.retry_after_lost_reply_applied_once),
    ("g", S.clock_skew_changes_nothing),
    ("h", history_across_cluster),
    # issue 27: replicas 1 from here on (so last); the control first
    ("r", R.replica_control_loss_seen),
    ("r", R.replicas_on),
    ("r", R.replica_follower_cut),
    ("r", R.replica_etcd_cut),
    ("r", R.replica_etcd_cut_clock_back),
    ("rh", R.replica_history),
]
# Left out of --quick (make test), run by make cluster-test: each takes
# 30-150 s; --only names them to run them in a quick run anyway.
FULL_ONLY = {"replica_control_loss_seen", "replica_etcd_cut_clock_back", "replica_history"}


class Ctx:
    def __init__(self, cl, args):
        self.cl = cl
        self.args = args
        self.figures = {}
        self.notes = []


def main(argv=None):
    ap = argparse.ArgumentParser(description="hotkvd cluster tests (issue 14)")
    ap.add_argument("--bin", required=True, help="path of hotkvd (hotkvd-admin beside it)")
    ap.add_argument("--admin", default=None, help="path of hotkvd-admin (default: "
                    "$HOTKVD_ADMIN_BIN, or beside --bin)")
    ap.add_argument("--clockshim", default=None, help="clockshift.so (scenario g, history)")
    ap.add_argument("--quick", action="store_true",
                    help="the make-test settings: shorter outage and history run")
    ap.add_argument("--only", default="", help="letters to run: a,adm,b,c,d,e,f,g,h,fig,r,rh "
                    "(default: all)")
    ap.add_argument("--etcd-outage", type=float, default=None, help="s (default 30; quick 8)")
    ap.add_argument("--history-seconds", type=float, default=None,
                    help="s of history workload (default 60; quick 25)")
    ap.add_argument("--offsets", default=None, help="clock skews of h3 in ms "
                    "(default 10000,-10000; quick 10000)")
    ap.add_argument("--latency-requests", type=int, default=None)
    ap.add_argument("--traffic-seconds", type=float, default=None)
    ap.add_argument("--twice-seconds", type=float, default=None)
    ap.add_argument("--history-faults", default="all",
                    help="all, or some of kill_agent,clock_shift,kill_etcd,link_down,cut_one_way")
    ap.add_argument("--replica-faults", default="all", help="all, or some of "
                    "kill_host,etcd_cut,stop_host,follower_cut,etcd_cut_clock,move_failover (rh)")
    ap.add_argument("--replica-history-seconds", type=float, default=30.0,
                    help="rh runs at least this long (its five faults take 60-120 s)")
    ap.add_argument("--seed", type=int, default=None, help="history seed (default: the time)")
    ap.add_argument("--budget", type=float, default=0, help="s; 0 = none.  A scenario that "
                    "would start past it is not run: a failure, named")
    ap.add_argument("--loopback", default=None, metavar="REASON",
                    help="run without namespaces (as if they could not be made)")
    ap.add_argument("--selftest-only", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    args = ap.parse_args(argv)
    q = args.quick
    defaults = {"etcd_outage": 8 if q else 30, "history_seconds": 25 if q else 60,
                "offsets": "10000" if q else "10000,-10000",
                "latency_requests": 300 if q else 2000, "traffic_seconds": 3 if q else 60,
                "twice_seconds": 6 if q else 15}
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.offsets = [int(x) for x in str(args.offsets).split(",") if x.strip()]
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    t_start = time.monotonic()

    def log(msg):
        print(msg, flush=True)

    if not os.access(args.bin, os.X_OK):
        log("cluster: %s is not an executable" % args.bin)
        return 3
    if args.clockshim and not os.access(args.clockshim, os.R_OK):
        log("cluster: clock shim %s missing" % args.clockshim)
        return 3

    tmp = tempfile.mkdtemp(prefix="hkv-cluster-%d-selftest-" % os.getpid())
    try:
        run_selftest(tmp, log, args.loopback)
    except (SelfTestFailure, Exception) as e:
        log("selftest: FAILED: %s" % e)
        traceback.print_exc()
        return 3
    finally:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    if args.selftest_only:
        return 0
    if args.quick:
        log("cluster: quick run (make test): etcd outage %g s instead of 30 s, history %g s; "
            "`make cluster-test` runs the full ones" % (args.etcd_outage, args.history_seconds))

    results = []
    figures, notes = {}, []
    cl = None
    try:
        t0 = time.monotonic()
        cl = Cluster(args.bin, log=log, force_loopback=args.loopback, keep=args.keep,
                     clockshim=args.clockshim, admin=args.admin)
        if cl.net.mode == "netns":
            log("cluster: network namespaces %s-{br,etcd,h1,h2,h3,dup} on %s.0/24"
                % (cl.net.tag, cl.net.subnet))
        else:
            log("cluster: LOOPBACK MODE (%s): hosts on %s.0/24 in the root namespace"
                % (cl.net.reason, cl.net.subnet))
        cl.up()
        log("cluster: etcd and %d hosts up in %.1f s (temp dir %s)" % (
            len(cl.hosts), time.monotonic() - t0, cl.tmp))
        ctx = Ctx(cl, args)
        for letter, fn in SCENARIOS:
            if only and letter not in only:
                continue
            if args.quick and fn.__name__ in FULL_ONLY and not only:
                log("scenario %s %s: not in --quick (make cluster-test runs it)" %
                    (letter, fn.__name__))
                continue
            name = "%s %s" % (letter, fn.__name__)
            if args.budget and time.monotonic() - t_start > args.budget:
                results.append((name, "FAIL", "not run: the %g s budget was used up" %
                                args.budget, 0))
                log("scenario %s: FAIL: not run, budget used up" % name)
                continue
            why = S.healthy(cl)
            if why:
                results.append((name, "FAIL", "cluster not healthy before it: " + why, 0))
                log("scenario %s: FAIL: cluster not healthy before it: %s" % (name, why))
                continue
            ts = time.monotonic()
            try:
                detail = fn(ctx) or ""
                status = "PASS"
            except S.Skip as e:
                status, detail = "SKIP", str(e)
            except (S.Fail, AssertionError) as e:
                status, detail = "FAIL", str(e)
                cl.failed = True
            except Exception as e:
                status, detail = "FAIL", "harness error: %s: %s\n%s" % (
                    type(e).__name__, e, traceback.format_exc())
                cl.failed = True
            dt = time.monotonic() - ts
            results.append((name, status, detail, dt))
            log("scenario %s: %s (%.1f s): %s" % (name, status, dt, detail))
        figures, notes = ctx.figures, ctx.notes
    except KeyboardInterrupt as e:
        log("cluster: interrupted (%s)" % e)
        results.append(("setup", "FAIL", "interrupted", 0))
    except Exception as e:
        log("cluster: SETUP FAILED: %s: %s" % (type(e).__name__, e))
        traceback.print_exc(file=sys.stdout)
        if cl is not None:
            cl.failed = True
            for h in cl.hosts.values():
                log(h.tail(15))
        results.append(("setup", "ERROR", str(e), 0))
    finally:
        if cl is not None:
            cl.close()

    for n in notes:
        log(n)
    log("figures:")
    for k, v in figures.items():
        log("  %s: %s" % (k, v))
    passed = [r for r in results if r[1] == "PASS"]
    failed = [r for r in results if r[1] in ("FAIL", "ERROR")]
    skipped = [r for r in results if r[1] == "SKIP"]
    for r in skipped:
        log("skipped: %s: %s" % (r[0], r[2]))
    for r in failed:
        log("failed: %s: %s" % (r[0], r[2].split("\n")[0]))
    log("cluster: %d passed, %d failed, %d skipped in %.0f s" % (
        len(passed), len(failed), len(skipped), time.monotonic() - t_start))
    if any(r[1] == "ERROR" for r in results):
        return 3
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
