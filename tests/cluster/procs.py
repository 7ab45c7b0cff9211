"""procs.py - every process the cluster harness starts: spawned with its
output in a log file and PR_SET_PDEATHSIG (it dies with the harness even if
the harness is killed -9), remembered by pid, stopped by pid (SIGTERM, a
bounded wait, SIGKILL) and, for daemons that fork, their descendants too
(found by parent pid in /proc, never by name)."""

import ctypes
import os
import signal
import subprocess
import threading
import time

_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def _pdeathsig():
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG, kept across exec


def stat_fields(pid):
    """(state, ppid) of pid, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return None
    rest = stat[stat.rfind(")") + 2:].split()
    try:
        return rest[0], int(rest[1])
    except (IndexError, ValueError):
        return None


def alive(pid):
    st = stat_fields(pid)
    return st is not None and st[0] not in ("Z", "X")


def title(pid):
    """argv[0] as the process shows it (hotkvd sets "hotkvd: agent" ...)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0", 1)[0].decode("utf-8", "replace").strip()
    except OSError:
        return ""


def children(ppid):
    """{pid: title} of the live children of ppid."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = stat_fields(int(name))
        if st is not None and st[1] == ppid and st[0] not in ("Z", "X"):
            out[int(name)] = title(int(name))
    return out


def descendants(pid):
    out, todo = [], [pid]
    for _ in range(4):          # master -> children (-> a helper at most)
        nxt = []
        for p in todo:
            kids = list(children(p))
            out += kids
            nxt += kids
        todo = nxt
        if not todo:
            break
    return out


class Procs:
    """The registry: spawn, stop one, stop all."""

    def __init__(self):
        self.lock = threading.Lock()
        self.procs = {}   # pid -> (name, Popen)

    def spawn(self, name, argv, log_path, env=None):
        log = open(log_path, "ab")
        try:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                 preexec_fn=_pdeathsig, close_fds=True)
        finally:
            log.close()
        with self.lock:
            self.procs[p.pid] = (name, p)
        return p

    def stop(self, p, timeout=10.0, sig=signal.SIGTERM):
        """Stops p and what it forked: sig, wait up to timeout, SIGKILL the
        rest.  Returns p's exit status (None if it had to be killed)."""
        kids = descendants(p.pid) if p.poll() is None else []
        status = p.poll()
        if status is None:
            try:
                p.send_signal(sig)
                status = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        end = time.monotonic() + 3
        while kids and time.monotonic() < end:
            kids = [k for k in kids if alive(k)]
            time.sleep(0.05)
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass
        with self.lock:
            self.procs.pop(p.pid, None)
        return status

    def kill9(self, p):
        """SIGKILL p alone (its children, if any, are left to their fate:
        the test decides) and reap it."""
        try:
            p.kill()
        except OSError:
            pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        with self.lock:
            self.procs.pop(p.pid, None)

    def stop_all(self):
        with self.lock:
            items = list(self.procs.values())
        for _, p in items:
            self.stop(p, timeout=8)
