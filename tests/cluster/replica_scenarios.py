"""replica_scenarios.py - the scenarios (r) of issue 27 on the cluster of
run.py, run last (they turn `replicas 1` on for good):

  r replicas_on             every host gets `replicas 1` (config file and
                            CONFIG SET); every leaf has an in-sync follower
                            on another host; INFO # Replication agrees;
  r replica_follower_cut    a leaf's primary host cut from its follower's
                            host: the follower leaves the isr by a CAS
                            within replica-timeout + etcd-timeout (+1 s),
                            writes through the third host go on;
  r replica_etcd_cut        a primary's host cut from etcd, not from
                            clients: its leaf promoted to an isr member at
                            a higher epoch, the old primary fenced (log
                            line, INFO cluster lease age, a SET through it
                            not acknowledged), it rejoins as a follower;
  rh replica_history        the history checker with clients on all hosts
                            and the five nemeses of replica_nemeses.py in
                            turn (each followed by a wait for every leaf to
                            be in sync again): 0 anomalies, so 0
                            acknowledged writes lost.

Direct scenarios aim at a leaf holding no history key (a probe key)."""

import random
import threading
import time

from scenarios import Fail, Skip
from history_run import HistRun
from replica_nemeses import NEMESES, Target
from cluster import wait_until
from replicas import (MapWatch, enable, kill_host, pick_leaf, probe_key, read_map, unsynced,
                      wait_replicated)

FAULT_ORDER = ["kill_host", "etcd_cut", "stop_host", "follower_cut", "etcd_cut_clock",
               "move_failover"]
NEEDS_NETNS = {"follower_cut"}
NEEDS_SHIM = {"etcd_cut_clock"}
FOCUS_S = 12.0       # the old primary is back 7-10 s after an etcd cut or a SIGSTOP


def _fmt(detail, keys=("promoted_s", "writes_back_s", "removed_s", "rejoined_s", "resynced_s")):
    return ", ".join("%s %s" % (k, detail[k]) for k in keys if k in detail)


def _probe_target(cl, rng):
    """A probe key whose leaf has a follower in sync."""
    m = read_map(cl)
    if m is None:
        raise Fail("map unreadable")
    leaves = sorted(lf for lf, e in m.leaves.items() if e["isr"] and lf[0] == "hot")
    if not leaves:
        raise Fail("no hot leaf has a follower in sync")
    pool, name = rng.choice(leaves)
    return probe_key(pool, name)


def _need_replicas(ctx):
    if not getattr(ctx, "replicas_on", False):
        raise Skip("replicas_on did not pass")
    n, took = wait_replicated(ctx.cl, 60)
    if n is None:
        raise Fail("not every leaf has a follower in sync 60 s before the scenario: " +
                   unsynced(ctx.cl))


def replica_control_loss_seen(ctx):
    """The control (before replicas_on: the cluster runs `replicas 0`):
    the history run's kill_host on a ledger key's host, checked in
    replicas mode, must show the loss (acknowledged ledger writes of the
    last persist-interval die with the host), else rh could not see one."""
    cl = ctx.cl
    run = HistRun(ctx, ctx.args.seed, replicas=1, daemon_replicas=0, name="history-control",
                  tag="chist")
    watch = MapWatch(run)
    err, detail = None, {}
    try:
        run.start()
        watch.start()
        run.until(3.0)
        key = run.rng.choice(run.wl.keys["hl"])
        t = Target(cl, key)
        detail = t.describe()
        # 5 s between commits (as check_failover's control): the writes of
        # the last seconds are in memory only (at 100 ms an idle persister
        # can leave nothing to lose: seed 13 saw no loss)
        r = t.host.call("CONFIG", "SET", "persist-interval", "5s")
        if r != "OK":
            raise Fail("CONFIG SET persist-interval 5s on %s: %r" % (t.host.name, r))
        run.wl.set_focus([key])
        time.sleep(1.5)
        try:
            # no follower to promote: the host is restarted at once and
            # serves what its disk had (persist-interval 100 ms behind)
            t0 = kill_host(cl, t.host, run.history)
            time.sleep(0.5)
            t.host.start(wait=True, timeout=60)
            time.sleep(2.0)
        finally:
            run.wl.set_focus(None)
        run.fault("kill_host", t.host.name, t0, time.monotonic(), detail)
        run.until(run.elapsed() + 5.0)
    except Exception as e:  # a harness failure: reported, the run fails
        err = "%s: %s" % (type(e).__name__, e)
    finally:
        run.stop_clients()
        watch.stop()
        _repair(cl)
    summary = run.finish(err, run.elapsed())[0]
    if err:
        raise Fail("control run error: " + err)
    res = run.checker_res or {}
    names = sorted({"%s on %s" % (a.get("name", "?"), a.get("key", "?"))
                    for a in res.get("anomalies", [])})
    if run.checker_code != 1:
        raise Fail("CONTROL: kill -9 of host %s with replicas 0 (key %s focused), the checker "
                   "in replicas mode: exit %s, no anomaly: rh could not see a lost write; %s"
                   % (t.host.name, key, run.checker_code, summary))
    return "the checker saw the loss (%s); %s" % (", ".join(names)[:200], summary)


def replicas_on(ctx):
    cl = ctx.cl
    took = enable(cl, cl.log)
    m = read_map(cl)
    for (pool, name), e in m.leaves.items():
        hosts = {m.host_of(n) for n in e["isr"]}
        if m.host_of(e["owner"]) in hosts:
            raise Fail("leaf %s/%s: follower on its primary's host %s" %
                       (pool, name, m.host_of(e["owner"])))
    n, total = m.in_sync()

    def views():
        # each edge sums the STATS of every owner it polls, its host's and
        # the others': every host's INFO is the cluster's
        out = {}
        for h in cl.hosts.values():
            f = h.info("replication")
            out[h.tag] = (f.get("replicas"), int(f.get("repl_role_primary_leaves", 0)),
                          int(f.get("repl_role_follower_leaves", 0)))
        return out
    want = ("1", total, total)
    v, _ = wait_until(lambda: (lambda x: x if all(t == want for t in x.values()) else None)(
        views()), 5.0, 0.25)
    if not v:
        raise Fail("INFO replication (replicas, repl_role_primary_leaves, "
                   "repl_role_follower_leaves) per host: %s; the map: %d leaves, all in sync"
                   % (views(), total))
    ctx.replicas_on = True
    ctx.figures["replicas 1: every leaf in sync after"] = "%.1f s (%d leaves)" % (took, total)
    return "%d leaves, each with a follower on another host, %.1f s after replicas 1" % (
        total, took)


def _direct(ctx, name):
    _need_replicas(ctx)
    cl = ctx.cl
    if name in NEEDS_NETNS and cl.net.mode != "netns":
        raise Skip("%s needs network namespaces: %s" % (name, cl.net.reason))
    if name in NEEDS_SHIM and not cl.clockshim:
        raise Skip("%s needs the clock shim (--clockshim)" % name)
    rng = random.Random(ctx.args.seed if ctx.args.seed is not None else time.time())
    key = _probe_target(cl, rng)
    detail, problems = NEMESES[name](cl, rng, key)
    n, took = wait_replicated(cl, 60)
    if n is None:
        problems.append("not every leaf in sync 60 s after the fault: " + unsynced(cl))
    ctx.figures["replicas %s" % name] = _fmt(detail)
    if problems:
        raise Fail("; ".join(problems) + "\n    detail: %s" % detail)
    return "%s; in sync again %.1f s later; detail %s" % (_fmt(detail), took, detail)


def replica_follower_cut(ctx):
    return _direct(ctx, "follower_cut")


def replica_etcd_cut(ctx):
    return _direct(ctx, "etcd_cut")


def replica_etcd_cut_clock_back(ctx):
    return _direct(ctx, "etcd_cut_clock")


def replica_history(ctx):
    _need_replicas(ctx)
    cl = ctx.cl
    asked = ctx.args.replica_faults
    faults = FAULT_ORDER if asked == "all" else [f for f in asked.split(",") if f]
    bad = [f for f in faults if f not in NEMESES]
    if bad:
        raise Fail("--replica-faults: unknown %s (known: %s)" % (bad, ",".join(FAULT_ORDER)))
    run = HistRun(ctx, ctx.args.seed, replicas=1, name="history-replicas", tag="rhist")
    no_ns = [f for f in faults if f in NEEDS_NETNS and cl.net.mode != "netns"]
    run.skipped += ["%s (no namespaces: %s)" % (f, cl.net.reason) for f in no_ns]
    no_shim = [f for f in faults if f in NEEDS_SHIM and not cl.clockshim]
    run.skipped += ["%s (no clock shim)" % f for f in no_shim]
    faults = [f for f in faults if f not in no_ns and f not in no_shim]
    watch = MapWatch(run)
    err = None
    timings = []
    try:
        run.start()
        watch.start()
        run.until(3.0)
        used = set()
        for f in faults:
            key, _, _, _ = pick_leaf(run, used)
            if key is None:
                run.extra_problems.append("%s: no history key's leaf has a follower" % f)
                continue
            # the clients focus on the key for the whole nemesis: while the
            # fault lasts, and as the old primary returns (a stale read
            # there, or a write it answers, is what the checker looks for)
            used.add(key)
            run.wl.set_focus([key])
            # at most FOCUS_S: a leaf that stays unavailable (move_failover)
            # piles up indeterminate INCRBYs no search can decide
            unfocus = threading.Timer(FOCUS_S, run.wl.set_focus, [None])
            unfocus.start()
            time.sleep(0.5)
            t0 = time.monotonic()
            try:
                detail, problems = NEMESES[f](cl, run.rng, key, run.history)
                time.sleep(1.0)
            finally:
                unfocus.cancel()
                run.wl.set_focus(None)
            t1 = time.monotonic()
            n, took = wait_replicated(cl, 60)
            detail["all_in_sync_after_s"] = round(took, 2) if n else None
            if n is None:
                problems.append("not every leaf in sync 60 s after the fault: " + unsynced(cl))
            run.fault(f, detail.get("host", detail.get("primary_host", "-")), t0, t1, detail)
            run.extra_problems += ["%s: %s" % (f, p) for p in problems]
            timings.append("%s %s" % (f, _fmt(detail)))
            run.log.append("%s on %s: %s" % (f, key, _fmt(detail)))
            run.until(run.elapsed() + 2.0)
        run.until(max(ctx.args.replica_history_seconds, run.elapsed() + 3.0))
    except Exception as e:  # a harness failure: reported, the run fails
        import traceback
        err = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())
    finally:
        run.stop_clients()
        watch.stop()
        _repair(cl)
    # a focused key's history is long (thousands of INCRBYs across faults):
    # 30 s of search per key, 300 s in all (20 s left hl:n{hl:rhist:5}
    # undecided, seed 7)
    summary, details, problems, outdir = run.finish(err, run.elapsed(),
                                                    limit=max(300.0, 3 * run.elapsed()))
    summary += "; map reads %d (failed %d)" % (watch.reads, watch.failed_reads)
    ctx.notes.append("replica history: " + summary)
    for t in timings:
        ctx.figures["replica history " + t.split(" ", 1)[0]] = t.split(" ", 1)[1]
    if problems:
        cl.failed = True
        raise Fail("; ".join(problems) + "\n    " + summary +
                   ("\n    | " + "\n    | ".join(details) if details else ""))
    return summary


def _repair(cl):
    """After a failed nemesis: cuts healed, proxies open, every host up."""
    if cl.net.mode == "netns":
        cl.net.heal()
    for px in cl.proxies.values():
        try:
            px.blackhole(False)
        except OSError:
            pass
    for h in cl.hosts.values():
        if not h.running():
            try:
                h.start(wait=True, timeout=60)
            except RuntimeError as e:
                cl.log("replicas: restart of %s failed: %s" % (h.tag, e))
