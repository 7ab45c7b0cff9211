"""run_nemesis.py - the faults of the history runner (run.py) and the crash
lines they imply: the nemesis (one fault at a time, on the main thread, each
logged as a fault line with its times), the watcher (an owner seen gone
without a kill lost its memory), and the reconciliation with the master's
log at the end (a death between two polls)."""

import datetime
import json
import os
import re
import signal
import threading
import time

from run_daemon import (BIG_KEY_BYTES, BIG_REQUEST_KEYS, CLASS_VARIANTS, REQUEST_TIMEOUT_S, WIRE_MAX_FRAME,
                        WRITE_TIMEOUT_MS, proc_alive)
from run_resp import Conn, RespError, Transport, config_set, info_fields

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
                        self.history.crash(title[len("owner "):], pid, t)
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
        self.killed_edges = set()
        self.leaves = None          # run_leaves.Leaves, with leaf-moves
        self.creds = None           # run_creds.Creds, with credential churn
        self.outlimit = None        # run_outlimit.OutLimit
        self.replicas = None        # run_replicas.Replicas, with --replicas
        self.cred_reloads = 0

    def fault(self, f, target, t0, t1, detail):
        self.history.write({"kind": "fault", "f": f, "target": target, "t0": t0, "t1": t1,
                            "detail": detail})
        self.log("fault %-14s %-12s %.2f..%.2f %s" % (f, target, t0, t1,
                                                     json.dumps(detail, sort_keys=True)))

    # -- helpers of the composed kinds (run_leaves.py, run_creds.py)

    def pause_ms(self):
        return int(WRITE_TIMEOUT_MS * self.rng.uniform(1.3, 2.0))

    def kill_owner_now(self, owner):
        """kill -9 of owner now, with its crash line; the pid or None."""
        pid, t = self._kill("owner " + owner)
        if pid is not None:
            self.history.crash(owner, pid, t)
        return pid

    def wait_owner_back(self, owner, pid):
        return self.hkv.wait_replaced("owner " + owner, pid)

    def pause_owner_for(self, owner, ms):
        """SIGSTOP owner for ms (on this thread); its pid or None."""
        pid = self.hkv.pid_of("owner " + owner)
        if not pid:
            return None
        self.hkv.stopped_pids.add(pid)
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(ms / 1000.0)
        finally:
            os.kill(pid, signal.SIGCONT)
            self.hkv.stopped_pids.discard(pid)
        return pid

    def reload(self, auto_moves=None):
        """Writes the config (auto-moves as asked) and reloads; the time every
        edge showed the new generation, or None."""
        from run_creds import current_generation, reload_and_confirm
        nedges = len(self.hkv.edge_names())
        if auto_moves is not None:
            self.hkv.auto_moves = auto_moves
        before = current_generation(self.hkv, nedges)
        self.hkv.write_conf()
        t, _ = reload_and_confirm(self.hkv, nedges, before)
        return t

    def do_leaf_split(self):
        self.leaves.do_split(self)

    def do_leaf_move(self):
        self.leaves.do_move(self)

    def do_move_pause(self):
        self.leaves.do_move_pause(self)

    def do_move_kill(self):
        self.leaves.do_move_kill(self)

    def do_auto_move(self):
        self.leaves.do_auto_move(self)

    def do_cred_churn(self):
        """A burst of reloads, each with new passwords (the old ones revoked
        once every edge runs it), while the probers try every credential."""
        from run_creds import current_generation, reload_and_confirm
        nedges = len(self.hkv.edge_names())
        n = self.rng.randint(15, 30)
        t0 = time.monotonic()
        confirmed = 0
        for _ in range(n):
            before = current_generation(self.hkv, nedges)
            self.creds.next_gen()
            self.hkv.write_conf()
            t, gens = reload_and_confirm(self.hkv, nedges, before)
            self.cred_reloads += 1
            if t is not None:
                self.creds.confirm(t)
                confirmed += 1
            time.sleep(self.rng.uniform(0.05, 0.3))
        self.fault("cred_churn", "master", t0, time.monotonic(),
                   {"reloads": n, "confirmed": confirmed, "generation": self.creds.gen})

    def do_slow_reader(self):
        self.outlimit.do_slow_reader(self)

    def do_http_stream(self):
        self.outlimit.do_http_stream(self)

    def do_kill_primary(self):
        self.replicas.do_kill_primary(self)

    def do_stop_follower(self):
        self.replicas.do_stop_follower(self)

    def do_leaf_failover(self):
        self.replicas.do_leaf_failover(self)

    def do_replica_config(self):
        self.replicas.do_replica_config(self)

    def settle_ms(self, kind):
        """Quiet time after a fault before the next one: a crash must never
        fall in a stall's backlog, so the checker's persist window holds."""
        return {"disk_stall": 1500, "disk_eio": 1500, "pause_owner": 500,
                "kill_master": 500, "stop_follower": 500}.get(kind, 0)

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
        self.history.crash(owner, pid, t)
        new = self.hkv.wait_replaced("owner " + owner, pid)
        self.fault("kill_owner", owner, t0, time.monotonic(),
                   {"pid": pid, "new_pid": new, "signal": "KILL"})

    def do_kill_edge(self):
        edge = self.rng.choice(self.hkv.edge_names())
        t0 = time.monotonic()
        pid, _ = self._kill("edge " + edge)
        self.killed_edges.add(pid)
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
            hkv.orphans = {pid: title for title, pid in kids.items()}
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
                    self.history.crash(title[len("owner "):], pid, t)
            while alive and time.monotonic() < end + 5.0:
                alive = {n: p for n, p in alive.items() if proc_alive(p)}
                time.sleep(0.02)
            hkv.orphans = {}
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
        ms = self.pause_ms()
        t0 = time.monotonic()
        pid = self.pause_owner_for(owner, ms)
        if not pid:
            self.log("pause_owner: owner %s not found" % owner)
            return
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
        detail = {"order": v["order"], "fresh_ms": v["fresh_ms"], "generation": gen,
                  "applied": gen is not None and gen0 is not None and gen > gen0}
        if hkv.replicas:
            detail["replica_timeout_ms"] = hkv.replica_timeout_ms
        self.fault("sighup_reorder", "master", t0, time.monotonic(), detail)

    def do_config_set(self):
        changes = [("miss-wait", "600ms"), ("negative-ttl", "500ms"), ("miss-wait", "800ms"),
                   ("negative-ttl", "1s")]
        if self.hkv.tracking and getattr(self.hkv, "tracking_evict", True):
            # Tracking clients (issue 28): a table too small for the workload's
            # keys for a while (random keys invalidated to fit), then the file's.
            back = self.hkv.tracking_max_keys
            changes[1:1] = [("tracking-table-max-keys", str(self.rng.choice([2, 5, 9])))]
            changes.append(("tracking-table-max-keys", str(back if back is not None else 1000000)))
        # An Idempotency-Key's record kept for less than the file's 24h for a
        # while (never under 10m: the runner's retries come within seconds).
        changes[-1:-1] = [("http-idempotency-ttl", self.rng.choice(["10m", "30m", "2h"]))]
        changes.append(("http-idempotency-ttl", "24h"))
        t0 = time.monotonic()
        replies = []
        for name, value in changes:
            try:
                r = config_set(self.hkv.port, name, value)
                replies.append("%s %s: %s" % (name, value, r))
            except (OSError, Transport) as e:
                replies.append("%s %s: %s" % (name, value, e))
            time.sleep(self.rng.uniform(0.2, 0.5))
        self.fault("config_set", "edges", t0, time.monotonic(), {"replies": replies})

    def do_big_request(self):
        """A request that cannot fit an owner-link frame: a DEL whose keys
        together pass wire-max-frame.  The edge must refuse it at once
        ("not applied"), without breaking the link other writes use."""
        self.big_n += 1
        keys = ["hl:big-%d-%d-" % (self.big_n, i) + "x" * BIG_KEY_BYTES
                for i in range(BIG_REQUEST_KEYS)]
        total = sum(len(k) for k in keys)
        t0 = time.monotonic()
        try:
            c = Conn(self.hkv.port, timeout=2.0)
            try:
                r = c.call(["DEL"] + keys, timeout=REQUEST_TIMEOUT_S)
            finally:
                c.close()
            reply = str(r) if not isinstance(r, RespError) else "-" + str(r)
        except (OSError, Transport) as e:
            reply = "runner: %s" % e
        self.fault("big_request", "DEL %d keys" % len(keys), t0, time.monotonic(),
                   {"bytes": total, "wire_max_frame": WIRE_MAX_FRAME,
                    "reply": reply[:200], "error_reply": reply.startswith("-")})

    # -- CLIENT PAUSE (server/edge/edge_pause.h: host-wide, parks, never fails)

    def pause_parked(self):
        """INFO stats client_pause_parked (the sum over the edges), or None."""
        try:
            return int(info_fields(self.hkv.info("stats")).get("client_pause_parked", ""))
        except (OSError, Transport, ValueError):
            return None

    def do_client_pause(self):
        """CLIENT PAUSE 50..800 ms WRITE or ALL on a fresh connection; half the
        times CLIENT UNPAUSE 10..300 ms later on another one (opened and logged
        in before the pause: AUTH is a command, ALL would park it).  The
        promise: a covered request is only delayed, so the checker stays
        clean and check_client_pauses finds no op failed in a pause."""
        ms = self.rng.randint(50, 800)
        mode = self.rng.choice(["WRITE", "ALL"])
        early_ms = self.rng.randint(10, 300) if self.rng.random() < 0.5 else None
        parked0 = self.pause_parked()
        detail = {"ms": ms, "mode": mode, "unpause_after_ms": early_ms}
        a = b = None
        t0 = time.monotonic()
        try:
            try:
                a = Conn(self.hkv.port, timeout=2.0)
                if early_ms is not None:
                    b = Conn(self.hkv.port, timeout=2.0)
            except OSError as e:
                detail["error"] = "connect: %s" % e
                self.fault("client_pause", "host", t0, time.monotonic(), detail)
                return
            t0 = time.monotonic()
            try:
                r = a.call(["CLIENT", "PAUSE", str(ms), mode], timeout=2.0)
            except Transport as e:
                r = "runner: %s" % e
            t_ok = time.monotonic()
            detail["reply"] = "-" + str(r) if isinstance(r, RespError) else str(r)
            detail["reply_ms"] = round((t_ok - t0) * 1000, 1)
            # the pause ends at most ms after its reply (the daemon's clock)
            end = t_ok + ms / 1000.0
            if b is not None:
                time.sleep(early_ms / 1000.0)
                tu = time.monotonic()
                try:
                    r = b.call(["CLIENT", "UNPAUSE"], timeout=2.0)
                except Transport as e:
                    r = "runner: %s" % e
                tu1 = time.monotonic()
                detail["unpause_reply"] = "-" + str(r) if isinstance(r, RespError) else str(r)
                detail["unpause_reply_ms"] = round((tu1 - tu) * 1000, 1)
                if tu < end:
                    # an UNPAUSE is never parked: answered long before the end
                    detail["unpause_parked"] = tu1 >= end - 0.005 and tu1 - tu > 0.1
                    end = tu1
            rest = end - time.monotonic()
            if rest > 0:
                time.sleep(rest)
        finally:
            for c in (a, b):
                if c is not None:
                    c.close()
        t1 = time.monotonic()
        parked1 = self.pause_parked()
        detail["parked"] = parked1 - parked0 if parked0 is not None and parked1 is not None \
            else None
        self.fault("client_pause", "host", t0, t1, detail)

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


LOG_EXIT = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z warning master\[\d+\]: "
                      r"(owner|edge) (\S+) \(pid (\d+)\) (.*?) after -?\d+ ms; restarting")


def reconcile_log(log_path, history, killed_edges, wall_minus_mono):
    """Child deaths the master logged that the run did not account for.

    The watcher polls every 20 ms; a child that is restarted and dies again
    between two polls would be missed.  The master logs every death it
    restarts from (master.c reaped()), so each owner death there without a
    crash line gets one now, at the logged time (on the runner's clock: the
    master's wall clock is never shifted).  Edge deaths the nemesis did not
    cause are returned too.  Returns [(role, name, pid, how, t)]."""
    out = []
    try:
        f = open(log_path, encoding="utf-8", errors="replace")
    except OSError:
        return out
    with f:
        for line in f:
            m = LOG_EXIT.match(line)
            if not m:
                continue
            stamp, role, name, pid, how = m.groups()
            pid = int(pid)
            wall = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            t = wall - wall_minus_mono
            if role == "owner" and pid not in history.crash_pids:
                history.crash(name, pid, t)
                out.append((role, name, pid, how, t))
            elif role == "edge" and pid not in killed_edges:
                out.append((role, name, pid, how, t))
    return out


# ---- CLIENT PAUSE's promise -------------------------------------------------

PAUSE_QUIET_S = 2.0   # after a kill, a stall, a move or a crash: not judged here
# Faults that fail no request of the workload's: an op across one is judged.
PAUSE_BENIGN = {"sighup_reorder", "config_set", "big_request", "clock_shift", "cred_churn",
                "slow_reader", "http_stream"}


def is_answer(error):
    """An error that answers the request, as without a pause: INCRBY of a
    non-integer, a wrong type, a 412 of an If-Match PUT (the version moved)."""
    return "not an integer" in error or error.startswith("WRONGTYPE") or \
        error.startswith("HTTP 412")


def check_client_pauses(hist_path):
    """Ops that failed or went unanswered (outcome fail or info) while a
    client_pause (its fault line) was in force, not across another fault
    (but PAUSE_BENIGN), a crash or a move or within PAUSE_QUIET_S after one:
    a pause only delays a request (is_answer: the errors that are answers,
    not failures; the checker judges those).  Also every pause whose CLIENT
    PAUSE or UNPAUSE was not answered OK, or whose UNPAUSE was parked.
    Returns (broken, summary line)."""
    broken, pauses, others, ops = [], [], [], []
    try:
        f = open(hist_path, encoding="utf-8")
    except OSError:
        return ["history not readable: %s" % hist_path], "client pauses: ?"
    with f:
        for line in f:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            k = o.get("kind")
            if k == "op":
                ops.append(o)
            elif k == "fault" and o.get("f") == "client_pause":
                pauses.append((o["t0"], o["t1"], o["detail"]))
            elif k == "fault" and o.get("f") not in PAUSE_BENIGN:
                others.append((o["t0"], o["t1"] if o.get("t1") is not None else o["t0"]))
            elif k == "crash":
                others.append((o["t"], o["t"]))
            elif k == "move":
                others.append((o["t0"], o["t1"] if o.get("t1") is not None else o["t0"]))
    for t0, t1, d in pauses:
        if d.get("reply") != "OK" or d.get("unpause_reply", "OK") != "OK" \
                or d.get("unpause_parked"):
            broken.append("client_pause %s %d ms at %.3f: %s" % (
                d["mode"], d["ms"], t0, json.dumps(d, sort_keys=True)))
    judged = delayed = 0
    wins = [(t0, t1 + 0.05) for t0, t1, _ in pauses]
    for o in ops:
        a = o["t0"]
        b = o.get("t1")
        if b is None:
            b = o.get("answered")
        if b is None:
            b = a + 30.0
        if not any(a <= w1 and b >= w0 for w0, w1 in wins):
            continue
        if any(a <= q1 + PAUSE_QUIET_S and b >= q0 for q0, q1 in others):
            continue
        judged += 1
        if o.get("cached"):
            continue
        if b - a > 0.04:
            delayed += 1
        if o["outcome"] == "ok":
            continue
        if o["outcome"] == "fail" and is_answer(str(o.get("error"))):
            continue
        broken.append("op %s %s %s via %s edge %s %.3f..%s: %s %s" % (
            o["id"], o["f"], o.get("key", o.get("keys")), o.get("via", "resp"), o.get("edge"),
            a, "%.3f" % o["t1"] if o.get("t1") is not None else "null", o["outcome"],
            o.get("error")))
    parked = [d.get("parked") for _, _, d in pauses if d.get("parked") is not None]
    line = ("client pauses: %d (WRITE %d, ALL %d, unpaused early %d), requests parked %d "
            "(INFO client_pause_parked); ops in a pause away from other faults %d (over 40 ms "
            "%d), failed or unanswered %d" % (
                len(pauses), sum(1 for _, _, d in pauses if d["mode"] == "WRITE"),
                sum(1 for _, _, d in pauses if d["mode"] == "ALL"),
                sum(1 for _, _, d in pauses if d.get("unpause_after_ms") is not None),
                sum(parked), judged, delayed,
                sum(1 for b in broken if b.startswith("op "))))
    return broken, line
