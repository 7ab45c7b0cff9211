"""servers.py - the two servers of the differential test, started the way
tests/harness.c starts the daemon: a temp dir, a config file written there,
a free loopback port, a wait (bounded) until every child serves, and a stop
by PID (SIGTERM to the master, then SIGKILL to anything left of it and its
children).  Both die with this process (PR_SET_PDEATHSIG), so a killed test
leaves nothing behind.

redis-server runs with no persistence (save "", appendonly no) and ONE
database (databases 1): hotkvd has one, so SELECT 1 is the same error on both
instead of sending Redis to another keyspace.
"""

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import resp

# The daemon under test: two edges (the second connection may land on the
# other one), two owners per pool, and three classes so that multi-key
# commands span owners, pools and durabilities (keys "h:*" hot, "d:*"
# durable, the rest the cold default).  Timing is made generous so that a
# loaded machine changes no reply: AUTH is not rate limited (hotkvd limits
# it to 10/s by default, which a fast test reaches), a read waits up to 10 s
# for its owner and then answers an error, never a degraded nil, and a
# durable write waits 20 s for its commit.
HOTKVD_FIXTURE = (
    "ratelimit-command auth off\n"
    "miss-wait 10s\ndurable-timeout 20s\n"
    "edge-workers 2\nhot-owners 2\ncold-owners 2\n"
    "class live pattern \"h:*\" pool hot fresh 1s keep 1m on-timeout error\n"
    "class money pattern \"d:*\" pool cold durability durable on-timeout error\n"
    "class default pool cold on-timeout error\n"
)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _pdeathsig():
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X", "")


def _children(ppid):
    """PIDs whose parent is ppid (the daemon's children, from /proc)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
            if int(stat[stat.rfind(")") + 2:].split()[1]) == ppid:
                out.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return out


class Server:
    name = "?"

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="hkv-diff-%s-" % self.name)
        self.port = free_port()
        self.proc = None
        self.log = os.path.join(self.dir, self.name + ".log")

    def argv(self):
        raise NotImplementedError

    def ready(self):
        try:
            c = resp.Conn(self.port, timeout=2.0)
        except OSError:
            return False
        try:
            return c.call([b"PING"]) == (b"+", b"PONG") and self.all_up(c)
        except resp.Closed:
            return False
        finally:
            c.close()

    def all_up(self, conn):
        return True

    def start(self, timeout=15.0):
        """Starts the server and waits until it serves; raises RuntimeError
        with the log's tail if it exits or does not answer in time."""
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                     stdout=open(os.path.join(self.dir, "stdout"), "wb"),
                                     stderr=subprocess.STDOUT, preexec_fn=_pdeathsig,
                                     cwd=self.dir)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                break
            if self.ready():
                return
            time.sleep(0.05)
        tail = self.log_tail()
        self.stop()
        raise RuntimeError("%s did not start on port %d:\n%s" % (self.name, self.port, tail))

    def log_tail(self, n=40):
        text = ""
        for p in (self.log, os.path.join(self.dir, "stdout")):
            try:
                with open(p, "rb") as f:
                    text += f.read().decode("utf-8", "replace")
            except OSError:
                pass
        return "\n".join(text.splitlines()[-n:])

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, keep_dir=False):
        """SIGTERM, wait up to 15 s, SIGKILL the master and its children if
        they are still there; returns the master's exit status."""
        status = None
        if self.proc is not None:
            kids = _children(self.proc.pid)
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
            status = self.proc.returncode
            for pid in kids:
                if _alive(pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            self.proc = None
        if not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        return status


class Redis(Server):
    name = "redis"

    def __init__(self, binary):
        self.binary = binary
        super().__init__()

    def argv(self):
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", self.dir, "--daemonize", "no", "--save", "", "--appendonly", "no",
                "--databases", "1", "--logfile", self.log]


class Hotkvd(Server):
    name = "hotkvd"

    def __init__(self, binary):
        self.binary = os.path.abspath(binary)
        super().__init__()
        self.conf = os.path.join(self.dir, "hotkvd.conf")

    def argv(self):
        with open(self.conf, "w") as f:
            f.write("# written by tests/diff/servers.py\n"
                    "bind 127.0.0.1\nport %d\ndir %s\nlogfile %s\nloglevel verbose\n"
                    % (self.port, self.dir, self.log) + HOTKVD_FIXTURE)
        return [self.binary, self.conf]

    def all_up(self, conn):
        # Serving means every child is up, not just the edge that answered
        # (as tests/harness.c: INFO processes, no child with ready=0).
        r = conn.call([b"INFO", b"processes"])
        return r[0] in (b"$", b"=") and r[1] is not None and b"slot0:" in r[1] \
            and b"ready=0" not in r[1]
