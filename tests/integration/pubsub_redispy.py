"""redis-py's PubSub against hotkvd (run by check_pubsub.c with the port):
subscribe, psubscribe, get_message, publish counts, unsubscribe, over RESP2
(Debian's python3-redis).  Prints "ok" when every check held."""
import sys
import time

import redis

port = int(sys.argv[1])
r = redis.Redis(host="127.0.0.1", port=port)
ps = r.pubsub()
ps.subscribe("py:chan")
ps.psubscribe("py:*")


def next_message(kind, deadline=5.0):
    end = time.time() + deadline
    while time.time() < end:
        m = ps.get_message(timeout=0.2)
        if m is not None and m["type"] == kind:
            return m
    raise SystemExit("no %s" % kind)


assert next_message("subscribe")["channel"] == b"py:chan"
assert next_message("psubscribe")["channel"] == b"py:*"
assert r.publish("py:chan", "hello") == 2, "publish count"
m = next_message("message")
assert (m["channel"], m["data"]) == (b"py:chan", b"hello"), m
m = next_message("pmessage")
assert (m["pattern"], m["channel"], m["data"]) == (b"py:*", b"py:chan", b"hello"), m
assert r.pubsub_numsub("py:chan") == [(b"py:chan", 1)]
assert r.pubsub_numpat() == 1
assert r.pubsub_channels() == [b"py:chan"]
ps.unsubscribe()
ps.punsubscribe()
next_message("unsubscribe")
next_message("punsubscribe")
assert r.publish("py:chan", "x") == 0
ps.close()
print("ok")
