"""clock.py - one host's wall clock moved, through the history tests' shim
(tests/history/clockshift.c, preloaded into every hotkvd of the cluster by
cluster.py when it is given): the shim shifts the processes whose pids the
control file lists, so a thread here lists every process of the host (its
master and all descendants, re-read every 100 ms: a restarted child is
shifted too) until stopped; the file is removed at the end (real clocks)."""

import os
import threading
import time


class ClockShift(threading.Thread):
    def __init__(self, cl, host, offset_ms):
        super().__init__(name="clock-" + host.tag, daemon=True)
        self.cl = cl
        self.host = host
        self.offset = offset_ms
        self.stop_ev = threading.Event()

    def write(self):
        path = self.cl.clock_file
        with open(path + ".tmp", "w") as f:
            for pid in self.host.pids():
                f.write("%d %d\n" % (pid, self.offset))
        os.replace(path + ".tmp", path)

    def run(self):
        while not self.stop_ev.is_set():
            try:
                self.write()
            except OSError:
                pass
            self.stop_ev.wait(0.1)

    def __enter__(self):
        if not self.cl.clockshim:
            raise RuntimeError("no clock shim (clockshift.so) was given")
        self.write()
        self.start()
        time.sleep(0.2)      # the shim re-reads the file every 50 ms
        return self

    def __exit__(self, *exc):
        self.stop_ev.set()
        self.join(2)
        try:
            os.unlink(self.cl.clock_file)
        except OSError:
            pass
        time.sleep(0.1)
        return False


def observed_offset_ms(host):
    """The host's TIME minus ours, in ms (None if TIME did not answer)."""
    c = host.conn()
    try:
        before = time.time()
        r = c.call(["TIME"])
        after = time.time()
    finally:
        c.close()
    if not (isinstance(r, list) and len(r) == 2):
        return None
    t = int(r[0]) + int(r[1]) / 1e6
    return int(round((t - (before + after) / 2) * 1000))
