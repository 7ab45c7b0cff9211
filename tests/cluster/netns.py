"""netns.py - many hosts on one machine: network namespaces on a private bridge.

Layout (every name carries the test's pid, so a crashed run's leftovers are
findable and the next run removes them):

    hkv-<pid>-br      a namespace holding only the bridge br0 and one veth
                      end per node (v-<node>)
    hkv-<pid>-<node>  one namespace per node (h1, h2, h3, etcd ...): lo up,
                      eth0 (the other veth end) with one address of a private
                      10.a.b.0/24 that exists only inside these namespaces

The root namespace's interfaces are never touched: each veth pair is created
inside the bridge namespace with its peer created directly in the node's
namespace.  Faults: `link_down`/`link_up` (the node's veth end in the bridge
namespace), and one-way cuts with nftables inside a node's namespace
(`cut(src, dst)`: packets from src to dst are dropped, the other way flows).

When namespaces cannot be made (no CAP_NET_ADMIN, no `ip`), `probe()` says
why and the harness uses `LoopNet` instead: every node is an address of
127.0.0.0/8 in the root namespace, nothing is isolated, and the faults that
need namespaces raise `NeedsNetns` (the scenarios report them skipped, with
the reason).  Everything here is bounded in time (each command has a
timeout) and `close()` is safe to call twice.
"""

import ctypes
import os
import random
import re
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager

CMD_TIMEOUT = 10.0
CLONE_NEWNET = 0x40000000
PREFIX = "hkv-"
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


class NeedsNetns(Exception):
    """A fault that only network namespaces can make (the reason is the text)."""


class NetError(Exception):
    """A namespace command failed: the command and its output."""


def run(argv, check=True, timeout=CMD_TIMEOUT):
    """Runs argv, bounded; returns (exit code, stdout+stderr)."""
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise NetError("%s: no answer within %.0f s" % (" ".join(argv), timeout))
    except OSError as e:
        raise NetError("%s: %s" % (" ".join(argv), e))
    out = (p.stdout + p.stderr).strip()
    if check and p.returncode != 0:
        raise NetError("%s: exit %d: %s" % (" ".join(argv), p.returncode, out))
    return p.returncode, out


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as f:
            stat = f.read()
        return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X")
    except OSError:
        return False


def is_harness(pid):
    """True if pid is alive and is a Python run of this harness (a reused pid
    belonging to something else does not keep leftovers alive)."""
    if not pid_alive(pid):
        return False
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmd = f.read().decode("utf-8", "replace")
    except OSError:
        return False
    return "python" in cmd and ("tests/cluster" in cmd or "cluster" in cmd)


def kill_pids(pids):
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def namespaces():
    """Names of the existing network namespaces."""
    try:
        _, out = run(["ip", "netns", "list"], check=False)
    except NetError:
        return []
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def ns_pids(ns):
    try:
        _, out = run(["ip", "netns", "pids", ns], check=False)
    except NetError:
        return []
    return [int(x) for x in out.split() if x.isdigit()]


def cleanup_leftovers(log=print):
    """Removes what crashed runs left: namespaces hkv-<pid>-* (and every
    process in them, SIGKILL) and temp dirs /tmp/hkv-cluster-<pid>-* with the
    processes whose command line names them, for pids no harness runs under.
    Returns the number of things removed."""
    removed = 0
    dead = {}
    for ns in namespaces():
        m = re.match(r"^hkv-(\d+)-", ns)
        if not m:
            continue
        pid = int(m.group(1))
        if pid == os.getpid() or dead.setdefault(pid, not is_harness(pid)) is False:
            continue
        kill_pids(ns_pids(ns))
        run(["ip", "netns", "del", ns], check=False)
        log("cleanup: removed namespace %s left by pid %d" % (ns, pid))
        removed += 1
    tmp = "/tmp"
    for name in os.listdir(tmp):
        path = os.path.join(tmp, name)
        if name.startswith("hkv-cluster-kept-"):
            try:
                if time.time() - os.stat(path).st_mtime > 86400:
                    shutil.rmtree(path, ignore_errors=True)
                    removed += 1
            except OSError:
                pass
            continue
        m = re.match(r"^hkv-cluster-(\d+)-", name)
        if not m:
            continue
        pid = int(m.group(1))
        if pid == os.getpid() or dead.setdefault(pid, not is_harness(pid)) is False:
            continue
        path = os.path.join(tmp, name)
        kill_pids(pids_naming(path))
        shutil.rmtree(path, ignore_errors=True)
        log("cleanup: removed %s left by pid %d" % (path, pid))
        removed += 1
    return removed


def pids_naming(text):
    """Pids whose command line contains text (the processes of a temp dir)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as f:
                if text.encode() in f.read():
                    out.append(int(name))
        except OSError:
            pass
    return out


def probe():
    """(True, "") if this process can make network namespaces with a bridge
    and veth pairs inside them, else (False, why).  Tries it for real."""
    for tool in ("ip",):
        if shutil.which(tool) is None:
            return False, "`%s` is not installed (apt-get install iproute2)" % tool
    a, b = "%s%d-probe-a" % (PREFIX, os.getpid()), "%s%d-probe-b" % (PREFIX, os.getpid())
    try:
        run(["ip", "netns", "add", a])
        try:
            run(["ip", "netns", "add", b])
            run(["ip", "-n", a, "link", "add", "br0", "type", "bridge"])
            run(["ip", "-n", a, "link", "add", "v-x", "type", "veth", "peer", "name", "eth0",
                 "netns", b])
        finally:
            run(["ip", "netns", "del", b], check=False)
    except NetError as e:
        return False, "cannot make network namespaces (no CAP_NET_ADMIN?): %s" % e
    finally:
        run(["ip", "netns", "del", a], check=False)
    return True, ""


def nft_usable():
    if shutil.which("nft") is None:
        return False, "`nft` is not installed (apt-get install nftables)"
    return True, ""


@contextmanager
def _in_netns(path):
    """Runs the body with this thread in the namespace at path (sockets made
    inside stay in it), then puts the thread back."""
    here = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    there = None
    try:
        there = os.open(path, os.O_RDONLY)
        if _libc.setns(there, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise NetError("setns %s: %s" % (path, os.strerror(e)))
        try:
            yield
        finally:
            if _libc.setns(here, CLONE_NEWNET) != 0:
                # A thread left in the wrong namespace would make every later
                # socket wrong: better to stop the run.
                e = ctypes.get_errno()
                os.write(2, b"netns: cannot return to the original namespace\n")
                os._exit(70 + (e & 7))
    finally:
        os.close(here)
        if there is not None:
            os.close(there)


class Net:
    """Namespaces on a bridge.  Nodes are added with add(name)."""

    mode = "netns"

    def __init__(self, log=print):
        self.log = log
        self.tag = "%s%d" % (PREFIX, os.getpid())
        self.br = self.tag + "-br"
        self.subnet = "10.%d.%d" % (random.randint(64, 250), random.randint(1, 250))
        self.nodes = {}     # name -> (ns, addr)
        self.cuts = {}      # node -> [(dst, rule text)]
        self.down = set()
        self.nft_ok, self.nft_reason = nft_usable()
        self.closed = False
        run(["ip", "netns", "add", self.br])
        try:
            run(["ip", "-n", self.br, "link", "set", "lo", "up"])
            run(["ip", "-n", self.br, "link", "add", "br0", "type", "bridge"])
            run(["ip", "-n", self.br, "link", "set", "br0", "up"])
        except NetError:
            self.close()
            raise

    def add(self, name):
        """A node: its namespace, its veth on the bridge, its address.
        Returns the address."""
        assert re.match(r"^[a-z0-9]{1,8}$", name), name
        ns = "%s-%s" % (self.tag, name)
        addr = "%s.%d" % (self.subnet, 10 + len(self.nodes))
        run(["ip", "netns", "add", ns])
        self.nodes[name] = (ns, addr)
        veth = "v-" + name
        run(["ip", "-n", self.br, "link", "add", veth, "type", "veth", "peer", "name", "eth0",
             "netns", ns])
        run(["ip", "-n", self.br, "link", "set", veth, "master", "br0"])
        run(["ip", "-n", self.br, "link", "set", veth, "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        # No IPv6 (no DAD noise, no link-local surprises): only our /24.
        run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
            check=False)
        run(["ip", "-n", ns, "addr", "add", addr + "/24", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        return addr

    def addr(self, name):
        return self.nodes[name][1]

    def ns(self, name):
        return self.nodes[name][0]

    def prefix(self, name):
        """The argv prefix that runs a command inside node's namespace."""
        return ["ip", "netns", "exec", self.ns(name)]

    def enter(self, name):
        """Context manager: this thread inside node's namespace."""
        return _in_netns("/run/netns/" + self.ns(name))

    def pids(self, name):
        return ns_pids(self.ns(name))

    # ---- faults

    def link_down(self, name):
        """Cuts node off the bridge (both ways; its own address stays up)."""
        run(["ip", "-n", self.br, "link", "set", "v-" + name, "down"])
        self.down.add(name)

    def link_up(self, name):
        run(["ip", "-n", self.br, "link", "set", "v-" + name, "up"])
        self.down.discard(name)

    def cut(self, src, dst):
        """One-way cut: packets from src to dst are dropped (in src's
        namespace, output hook); dst -> src still flows."""
        if not self.nft_ok:
            raise NeedsNetns(self.nft_reason)
        ns = self.ns(src)
        if src not in self.cuts:
            script = ("add table inet hkvcut\n"
                      "add chain inet hkvcut out { type filter hook output priority 0; "
                      "policy accept; }\n")
            self._nft(ns, script)
            self.cuts[src] = []
        self._nft(ns, "add rule inet hkvcut out ip daddr %s counter drop\n" % self.addr(dst))
        self.cuts[src].append(dst)

    def heal(self, src=None):
        """Removes the one-way cuts of src (all nodes when None)."""
        for node in [src] if src is not None else list(self.cuts):
            if node in self.cuts:
                self._nft(self.ns(node), "delete table inet hkvcut\n")
                del self.cuts[node]

    def dropped(self, src):
        """Packets the one-way cuts of src dropped so far."""
        if src not in self.cuts:
            return 0
        _, out = run(self.prefix(src) + ["nft", "list", "table", "inet", "hkvcut"])
        return sum(int(x) for x in re.findall(r"counter packets (\d+)", out))

    def _nft(self, ns, script):
        try:
            p = subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=script,
                               capture_output=True, text=True, timeout=CMD_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise NetError("nft in %s: no answer within %.0f s" % (ns, CMD_TIMEOUT))
        if p.returncode != 0:
            raise NetError("nft in %s: %s: %s" % (ns, script.strip(), p.stderr.strip()))

    # ---- teardown

    def close(self):
        """Kills every process left in the namespaces (SIGKILL by pid, from
        `ip netns pids`) and deletes them; the veth pairs go with them."""
        if self.closed:
            return
        self.closed = True
        names = [ns for ns, _ in self.nodes.values()] + [self.br]
        for ns in names:
            kill_pids(ns_pids(ns))
        end = time.monotonic() + 5
        for ns in names:
            while ns_pids(ns) and time.monotonic() < end:
                time.sleep(0.05)
            run(["ip", "netns", "del", ns], check=False)
        left = [ns for ns in namespaces() if ns.startswith(self.tag + "-")]
        if left:
            self.log("netns: could not delete %s" % ", ".join(left))


class LoopNet:
    """The fallback without namespaces: nodes are 127.0.0.x addresses of the
    root namespace.  Faults that need isolation raise NeedsNetns."""

    mode = "loopback"

    def __init__(self, reason, log=print):
        self.reason = reason
        self.log = log
        self.nodes = {}
        self.down = set()
        self.nft_ok, self.nft_reason = False, "no network namespaces: " + reason
        base = random.randint(2, 200)
        self.subnet = "127.%d.%d" % (base, random.randint(1, 250))

    def add(self, name):
        addr = "%s.%d" % (self.subnet, 10 + len(self.nodes))
        self.nodes[name] = (None, addr)
        return addr

    def addr(self, name):
        return self.nodes[name][1]

    def ns(self, name):
        return None

    def prefix(self, name):
        return []

    @contextmanager
    def enter(self, name):
        yield

    def pids(self, name):
        return []

    def link_down(self, name):
        raise NeedsNetns("cutting a host off needs network namespaces: " + self.reason)

    link_up = link_down

    def cut(self, src, dst):
        raise NeedsNetns("one-way cuts need network namespaces: " + self.reason)

    def heal(self, src=None):
        pass

    def dropped(self, src):
        return 0

    def close(self):
        pass


def make_net(log=print, force_loopback=None):
    """A Net if namespaces work here, else a LoopNet saying why, loudly.
    force_loopback (a reason string) skips the probe: for testing the
    fallback itself."""
    if force_loopback:
        ok, why = False, force_loopback
    else:
        ok, why = probe()
    if ok:
        return Net(log)
    log("!" * 72)
    log("!! cluster tests WITHOUT network namespaces: %s" % why)
    log("!! hosts run on 127.x addresses of the root namespace; faults that need")
    log("!! isolation (link down, one-way cuts) are SKIPPED and reported as such.")
    log("!" * 72)
    return LoopNet(why, log)
