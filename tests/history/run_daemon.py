"""run_daemon.py - the daemon under test, for the history runner (run.py): its
config (two classes, short write timeouts, the SIGHUP variants), starting it
under the shims (stallfs.so, clockshift.so; the ASan runtime first when the
binary needs it) and waiting until every child serves, finding its children
by process title in /proc, and stopping everything by pid."""

import ctypes
import os
import re
import signal
import socket
import subprocess
import time

from run_resp import Conn, RespError, Transport, info_fields

# ---- timing of the daemon under test ---------------------------------------

WRITE_TIMEOUT_MS = 1500
WRITE_DEADLINE_MS = 4000
DURABLE_TIMEOUT_MS = 1000
PERSIST_INTERVAL_MS = 100
REPLICA_TIMEOUT_MS = 1000      # with --replicas (issue 27)
COMMIT_ALLOWANCE_MS = 500      # one commit plus the runner's crash-detection lag
PUSH_ALLOWANCE_MS = 500        # owner push / refresh to another colo
MISS_WAIT_MS = 800             # the refresh allowance A of the staleness bound
KEEP_MS = 10000
WIRE_MAX_FRAME = 4 * 1024 * 1024
BIG_REQUEST_KEYS = 5           # a DEL of 5 keys of BIG_KEY_BYTES: > wire-max-frame,
BIG_KEY_BYTES = 1000 * 1000    # each key < proto-max-bulk-len (a single bulk cannot pass
                               # the frame: the config check refuses such a config)
OUTPUT_LIMIT = 4 * 1024 * 1024  # client-output-buffer-limit hard (soft half, 1 s)
CACHE_MB = 16
REQUEST_TIMEOUT_S = WRITE_DEADLINE_MS / 1000.0 + 4.0

# Two variants of the class lines; SIGHUP switches between them (order and
# fresh change, names and patterns stay).  With --replicas the reload also
# changes replica-timeout (a reloadable directive of the replication path:
# the owners' in-sync removal deadline and the primaries' waits).
CLASS_VARIANTS = [
    {"order": ["hl", "hd"], "fresh_ms": {"hl": 1000, "hd": 1000},
     "replica_timeout_ms": REPLICA_TIMEOUT_MS},
    {"order": ["hd", "hl"], "fresh_ms": {"hl": 500, "hd": 2000},
     "replica_timeout_ms": REPLICA_TIMEOUT_MS * 3 // 2},
]
CLASSES = {
    "hl": {"durability": "ledger", "pool": "hot", "on_timeout": "degrade"},
    "hd": {"durability": "durable", "pool": "cold", "on_timeout": "error"},
}


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


def proc_title(pid):
    """The process title without "hotkvd: ", or None."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read()
    except OSError:
        return None
    title = cmd.split(b"\0", 1)[0].decode("utf-8", "replace").strip()
    return title[len("hotkvd: "):] if title.startswith("hotkvd: ") else None


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
        except (OSError, ValueError, IndexError):
            continue
        title = proc_title(pid)
        if title is not None:
            out[title] = pid
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
        open(self.stderr_path, "w").close()  # each start appends; a reused dir starts empty
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
        self.admin_bin = os.path.abspath(getattr(args, "admin", None) or
                                         os.path.join(os.path.dirname(self.bin), "hotkvd-admin"))
        self.leaf_moves = getattr(args, "leaf_moves", "no") == "yes"
        # issue 27: followers per leaf, and a persist-interval long enough
        # that a kill without them visibly loses ledger writes
        self.replicas = getattr(args, "replicas", 0) or 0
        self.replicas_file = None  # replica_config by reload: the file's replicas meanwhile
        # Tracking clients (run_track.py, issue 28): their count, and the file's
        # tracking-table-max-keys (None: the default; small: evictions).
        self.tracking = getattr(args, "tracking", 0)
        self.tracking_max_keys = None
        self.notify = False         # run_notify.py: keyspace notifications on
        self.persist_interval_ms = getattr(args, "persist_interval", None) or PERSIST_INTERVAL_MS
        self.auto_moves = False
        self.http_port = free_port() if getattr(args, "http", True) else 0
        self.creds = None          # run_creds.Creds: the users of the config
        self.output_limit = OUTPUT_LIMIT
        self.proc = None
        self.old_procs = []
        self.orphans = {}          # pid -> title: children of a killed master
        self.stopped_pids = set()  # SIGSTOPped by the nemesis, to SIGCONT at the end

    @property
    def replica_timeout_ms(self):
        """replica-timeout of the config file as written now (the variant's)."""
        return CLASS_VARIANTS[self.variant]["replica_timeout_ms"]

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
            "wire-max-frame %dmb" % (WIRE_MAX_FRAME // (1024 * 1024)),
            "proto-max-bulk-len 1mb",
            "write-timeout %dms" % WRITE_TIMEOUT_MS,
            "write-retry-backoff 300ms 600ms",
            "write-deadline %dms" % WRITE_DEADLINE_MS,
            "persist-interval %dms" % self.persist_interval_ms,
            "durable-timeout %dms" % DURABLE_TIMEOUT_MS,
            "miss-wait %dms" % MISS_WAIT_MS,
            "negative-ttl 1s",
            "owner-push yes",
            "cache-memory %dmb" % CACHE_MB,
            # The runner, its clients and the credential probers log in from
            # one address, hundreds of times a second.
            "ratelimit-command auth off",
            "client-output-buffer-limit %dmb %dmb 1s" % (OUTPUT_LIMIT // (1 << 20),
                                                         OUTPUT_LIMIT // (2 << 20)),
        ] + self.class_lines(self.variant)
        if self.http_port:
            lines.append("http-port %d" % self.http_port)
        if self.leaf_moves:
            # Automatic moves: off until the nemesis turns them on (auto_move),
            # then an owner busy over 5 % of a 1 s window sheds a leaf; short
            # cool-downs so a run sees several.
            lines += ["leaf-moves yes", "auto-moves %s" % ("yes" if self.auto_moves else "no"),
                      "move-window 1s", "move-busy-threshold 0.05", "move-cooldown-leaf 2s",
                      "move-cooldown-owner 1s", "move-fence-timeout 1s"]
        if self.replicas:
            lines += ["replicas %d" % (self.replicas if self.replicas_file is None
                                       else self.replicas_file),
                      "replica-timeout %dms" % self.replica_timeout_ms]
        if self.tracking_max_keys is not None:
            lines.append("tracking-table-max-keys %d" % self.tracking_max_keys)
        if self.notify:
            lines.append("notify-keyspace-events KEA")
        if self.creds is not None:
            lines += self.creds.conf_lines()
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
        for pid, title in self.orphans.items():
            # Left by a kill_master that did not finish (an exception): the
            # title check guards against a reused pid.
            if proc_alive(pid) and proc_title(pid) == title:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        self.orphans = {}
        for p in self.old_procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
        return status


# ---- what the daemon said about itself -------------------------------------

def daemon_trouble(log_path, stderr_path, max_lines=5):
    """(fatal, notes) after a run: fatal, the sanitizer errors on the
    daemon's stderr (ASan, UBSan: the ASan build aborts at the first) and
    every child the master saw killed by a signal other than SIGKILL (the
    nemesis's: a SIGSEGV at the stop, after the owners flushed, is lost on
    nobody's history but is a crash); notes, the LeakSanitizer summaries
    (what a process left allocated at its exit).  Lines as found, at most
    max_lines of each."""
    fatal, notes = [], []
    try:
        with open(stderr_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if "runtime error:" in line or "ERROR: AddressSanitizer" in line:
                    fatal.append("stderr: " + line)
                elif line.startswith("SUMMARY: AddressSanitizer:") and "leaked" in line:
                    notes.append("stderr: " + line)
    except OSError:
        pass
    killed = re.compile(r"master\[\d+\]: (.*? was killed by signal (\d+) \([^)]*\))")
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = killed.search(line)
                if m and int(m.group(2)) != signal.SIGKILL:
                    fatal.append("log: " + line.rstrip("\n")[:200])
    except OSError:
        pass
    return fatal[:max_lines] + (["... %d more" % (len(fatal) - max_lines)]
                                if len(fatal) > max_lines else []), notes[:max_lines]
