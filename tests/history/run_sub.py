"""run_sub.py - a subscriber of the history run (run_notify.py,
run_pubsub.py): a thread that holds its subscription through every fault,
reconnecting when its connection goes (a killed edge, a restart), and hands
each message it reads to take(), which records it or says what is wrong
with it (the thread stops at the first such message: an error in the
subscription is the daemon's, never the fault's)."""

import select
import threading
import time

from run_resp import Transport


class SubscriberThread(threading.Thread):
    """Subclasses set self.stop (an Event) and define connect() (a new
    subscribed Conn; OSError or Transport when it cannot be made) and
    take(v, t) (None, or an error text); finish() runs at the end."""

    def __init__(self, name):
        threading.Thread.__init__(self, daemon=True, name=name)
        self.reconnects = 0
        self.error = None

    def finish(self):
        pass

    def run(self):
        conn = None
        try:
            while not self.stop.is_set():
                if conn is None:
                    try:
                        conn = self.connect()
                    except (OSError, Transport):
                        time.sleep(0.2)
                        continue
                if not conn.buf:
                    ready, _, _ = select.select([conn.sock], [], [], 0.2)
                    if not ready:
                        continue
                try:
                    v = conn.read(time.monotonic() + 3.0)
                except Transport:
                    conn.close()
                    conn = None
                    self.reconnects += 1
                    continue
                err = self.take(v, time.monotonic())
                if err is not None:
                    self.error = "%s: %s" % (self.name, err)
                    break
        finally:
            if conn is not None:
                conn.close()
            self.finish()
