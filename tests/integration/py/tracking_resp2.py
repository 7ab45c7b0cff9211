"""tracking_resp2.py - Debian's redis-py (4.3.x: RESP2 only, no client-side
cache of its own) doing server-assisted caching as Redis 7.0 defines it for
RESP2: invalidations on the __redis__:invalidate channel of a redirect
connection.  Run by tests/integration/check_csc.c against hotkvd once it
has SUBSCRIBE; checked against redis-server 7.0 with
    /usr/bin/python3 tracking_resp2.py PORT

Asserted (Redis 7.0's behaviour): CLIENT TRACKING ON REDIRECT <id> through
redis-py's client_tracking_on; a write from another connection sends the
key on the channel, once (the key leaves the table until read again); BCAST
PREFIX sends every matching key and no other; NOLOOP keeps the tracker's
own writes; OPTIN tracks only after CLIENT CACHING yes; FLUSHALL sends a
message with a null payload; CLIENT GETREDIR and TRACKINGINFO; a redirect
to a connection that is gone is refused with Redis's error.  The redirect
target sits on the same edge as the tracker unless --cross (hotkvd's
redirect across edges: INFO server's edge_pid).  Every wait is bounded.
Prints "tracking-resp2 passed" or raises."""

import sys
import time

import redis

PORT = int(sys.argv[1])
CROSS = "--cross" in sys.argv
CHAN = b"__redis__:invalidate"


def edge(conn):
    return conn.info("server").get("edge_pid")


def redirect_target():
    """A raw connection subscribed to the channel, its client id and edge."""
    c = redis.Connection(host="127.0.0.1", port=PORT, socket_timeout=5)
    c.connect()
    c.send_command("CLIENT", "ID")
    cid = c.read_response()
    c.send_command("INFO", "server")
    info = c.read_response().decode()
    pid = [ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("edge_pid:")]
    c.send_command("SUBSCRIBE", CHAN)
    assert c.read_response() == [b"subscribe", CHAN, 1]
    c.send_command("PING")  # RESP2 subscribed mode: PING answers [pong, ""]
    assert c.read_response() == [b"pong", b""], "PING in subscribed mode"
    return c, cid, (int(pid[0]) if pid else None)


def tracker(want_same_as):
    """A client whose edge is want_same_as's (or another, with --cross);
    redis-server and a one-edge daemon: the first one."""
    for _ in range(40):
        t = redis.Redis(port=PORT, single_connection_client=True, socket_timeout=5)
        e = edge(t)
        if want_same_as is None or (e == want_same_as) != CROSS:
            return t
        t.close()
    raise AssertionError("40 connections, none on the wanted edge")


def messages(c, ms):
    """Messages on the channel within ms (after the first, 100 ms more)."""
    out = []
    end = time.monotonic() + ms / 1000.0
    while time.monotonic() < end:
        if not c.can_read(timeout=max(0.0, end - time.monotonic())):
            break
        m = c.read_response()
        assert m[0] == b"message" and m[1] == CHAN, m
        out.append(m[2])
        end = min(end, time.monotonic() + 0.1)
    return out


def main():
    w = redis.Redis(port=PORT, socket_timeout=5)
    w.flushall()
    inv, rid, inv_edge = redirect_target()
    t = tracker(inv_edge)

    # Default mode through redis-py's helper.
    assert t.client_tracking_on(clientid=rid) in (True, b"OK")
    assert t.client_getredir() == rid
    info = t.client_trackinginfo()
    assert info[1] == [b"on"] and info[3] == rid, info
    w.set("rk", "v1")
    assert t.get("rk") == b"v1"
    w.set("rk", "v2")
    assert messages(inv, 3000) == [[b"rk"]], "one invalidation of rk"
    w.set("rk", "v3")  # not read since: nothing
    assert messages(inv, 300) == [], "rk left the table"
    assert t.get("rk") == b"v3"
    w.delete("rk")
    assert messages(inv, 3000) == [[b"rk"]]

    # NOLOOP: the tracker's own write is not sent back; another's is.
    t.client_tracking_off()
    t.client_tracking_on(clientid=rid, noloop=True)
    t.get("nl")
    t.set("nl", "mine")
    assert messages(inv, 300) == [], "NOLOOP"
    t.get("nl")
    w.set("nl", "theirs")
    assert messages(inv, 3000) == [[b"nl"]]

    # OPTIN: only a read after CLIENT CACHING yes is tracked.
    t.client_tracking_off()
    t.client_tracking_on(clientid=rid, optin=True)
    t.get("o1")
    assert t.execute_command("CLIENT", "CACHING", "yes") in (True, b"OK")
    t.get("o2")
    w.set("o1", "x")
    w.set("o2", "x")
    assert messages(inv, 3000) == [[b"o2"]], "OPTIN"

    # BCAST with a prefix: every matching key, read or not, and no other.
    t.client_tracking_off()
    t.client_tracking_on(clientid=rid, bcast=True, prefix=["bc:"])
    w.set("bc:1", "a")
    w.set("zz", "a")
    w.set("bc:2", "a")
    got = messages(inv, 3000)
    assert got == [[b"bc:1"], [b"bc:2"]], got

    # FLUSHALL: a message with a null payload.
    t.client_tracking_off()
    t.client_tracking_on(clientid=rid)
    t.get("f")
    w.flushall()
    assert messages(inv, 3000) == [None], "FLUSHALL"

    # A redirect target that is gone: Redis's error.
    t.client_tracking_off()
    inv.disconnect()
    time.sleep(0.1)
    try:
        t.client_tracking_on(clientid=rid)
        raise AssertionError("tracking on with a closed redirect target")
    except redis.ResponseError as e:
        assert str(e) == "The client ID you want redirect to does not exist", str(e)
    t.close()
    w.close()
    print("tracking-resp2 passed")


if __name__ == "__main__":
    main()
