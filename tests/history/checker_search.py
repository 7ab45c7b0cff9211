"""checker_search.py - the linearizability search of checker.py (Wing &
Gong with Lowe's improvements, as in Porcupine) and the delta debugging
that shrinks a failing key to a small relaxed sub-history."""

import bisect
import time

from checker_load import INF
from checker_model import INIT_STATE, UNREAD, Sub, _clone_sub, model_ops

DEFAULT_MAX_CONFIGS = 1000000   # memoized configurations per key search
#                                 (about 450 MB for a key of 3000 ops)
# One check of the reduction: a relaxed core that takes longer (hundreds of
# INCRBYs made indeterminate multiply the search) is kept, not waited for.
CHECK_BUDGET = 0.5


# --------------------------------------------------------------------------
# The search
# --------------------------------------------------------------------------

class Budget:
    """A deadline and a configuration count; exceeded -> verdict unknown."""

    def __init__(self, deadline, max_configs=DEFAULT_MAX_CONFIGS):
        self.deadline = deadline
        self.max_configs = max_configs


def linearizable(subs, budget, stats=None):
    """True / False / None (a bound was hit) for one key's model sub-ops."""
    n = len(subs)
    remaining = sum(1 for u in subs if not u.info)
    if remaining == 0:
        return True
    if time.monotonic() > budget.deadline:
        return None
    events = []
    for i, u in enumerate(subs):
        events.append((u.ck, i, True))
        events.append((u.rk, i, False))
    events.sort(key=lambda e: e[0])
    m = len(events)
    # Doubly linked list over nodes 1..m; node 0 is the head, -1 the end.
    nxt = list(range(1, m + 2))
    nxt[m] = -1
    prv = list(range(-1, m))
    node_op = [None] * (m + 1)
    is_call = [False] * (m + 1)
    match = [0] * (m + 1)
    call_node = [0] * n
    ret_node = [0] * n
    ev_time = [INF] * (m + 1)
    for pos, (k, i, c) in enumerate(events, 1):
        ev_time[pos] = k[0]
        node_op[pos] = subs[i]
        is_call[pos] = c
        if c:
            call_node[i] = pos
        else:
            ret_node[i] = pos
    for i in range(n):
        match[call_node[i]] = ret_node[i]
    # Determinate ops: one bit each in lin.  Info ops: a count per class in
    # icnt, packed in fields of w bits whose top bit is a guard, so that
    # "a <= b in every field" is ((b | guard) - a) & guard == guard.
    cidx = {}
    for u in subs:
        if u.info:
            cidx.setdefault(u.icls, []).append(u)
    w = max((len(v) for v in cidx.values()), default=1).bit_length() + 1
    guard = 0
    ccode = {}
    for k, c in enumerate(cidx):
        guard |= 1 << (k * w + w - 1)
        ccode[c] = k
    bits = {}
    node_cls = {}
    for i, u in enumerate(subs):
        if u.info:
            k = ccode[u.icls]
            bits[call_node[i]] = 1 << (k * w)
            node_cls[call_node[i]] = k
        else:
            bits[call_node[i]] = 1 << i

    # A read runs only after its client's previous op of the key (MOp.pred).
    index_of = {id(u): i for i, u in enumerate(subs)}
    need = {}
    for i, u in enumerate(subs):
        if u.pred is not None and id(u.pred) in index_of:
            need[call_node[i]] = 1 << index_of[id(u.pred)]
    lin_now = [0]       # lin of the configuration candidates() is asked for

    front = [-INF]      # the latest return that stopped a scan

    def candidates(state, after_info):
        det = []
        inf = []
        classes = None
        node = nxt[0]
        while True:
            if node == -1:
                break
            if not is_call[node]:
                if ev_time[node] > front[0]:
                    front[0] = ev_time[node]
                break
            u = node_op[node]
            nd = need.get(node)
            if nd is not None and not lin_now[0] & nd:
                node = nxt[node]
                continue
            if after_info and u.blind:
                # Right after an info op, a blind info op gives a state the
                # parent reaches with that first op still pending.  Inside a
                # crash window the first op's state is also recorded, but a
                # path from the parent gets it back by restoring the state
                # before it (recorded too) and applying it then.
                node = nxt[node]
                continue
            if u.info:
                # One info op per class: the others are interchangeable.
                c = node_cls[node]
                if classes is None:
                    classes = {c}
                elif c in classes:
                    node = nxt[node]
                    continue
                else:
                    classes.add(c)
            new = u.step(state)
            if new is not None:
                if u.multi:
                    for st in new:
                        det.append((node, st, False))
                    node = nxt[node]
                    continue
                sv = new[2]
                if sv is not None and new is not state:
                    # Inside a crash window: record the state for "restore".
                    cur = (new[0], new[1])
                    if cur not in sv:
                        new = (new[0], new[1], sv | {cur})
                if u.info:
                    inf.append((node, new, True))
                elif u.pure:
                    return [(node, new, False)]     # forced
                else:
                    det.append((node, new, False))
            node = nxt[node]
        if inf:
            det.extend(inf)
        return det

    # (lin, state) -> the icnt seen with it.  A configuration whose icnt is
    # at least one seen, class by class, is pruned: with the same
    # determinate ops done, the same info ops are available, and one that
    # used fewer of each class can do all it can.
    cache = {}
    state = INIT_STATE
    lin = 0
    ilin = 0
    frames = [[candidates(state, False), 0]]
    path = []
    steps = 0
    configs = 0
    deadline = budget.deadline
    max_configs = budget.max_configs
    result = None
    while True:
        fr = frames[-1]
        cands = fr[0]
        i = fr[1]
        if i >= len(cands):
            frames.pop()
            if not path:
                result = False
                break
            node, state, lin, ilin, info = path.pop()
            # unlift: put the call and its return back
            r = match[node]
            p = prv[r]
            q = nxt[r]
            nxt[p] = r
            if q != -1:
                prv[q] = r
            p = prv[node]
            q = nxt[node]
            nxt[p] = node
            if q != -1:
                prv[q] = node
            if not info:
                remaining += 1
            continue
        fr[1] = i + 1
        node, new, info = cands[i]
        if info:
            nlin = lin
            nilin = ilin + bits[node]
        else:
            nlin = lin | bits[node]
            nilin = ilin
        key = (nlin, new)
        seen = cache.get(key)
        if seen is not None:
            pruned = False
            g = nilin | guard
            for s_ilin in seen:
                if (g - s_ilin) & guard == guard:
                    pruned = True
                    break
            if pruned:
                continue
            seen.append(nilin)
        else:
            cache[key] = [nilin]
        configs += 1
        path.append((node, state, lin, ilin, info))
        # lift: take the call and its return out of the list
        p = prv[node]
        q = nxt[node]
        nxt[p] = q
        if q != -1:
            prv[q] = p
        r = match[node]
        p = prv[r]
        q = nxt[r]
        nxt[p] = q
        if q != -1:
            prv[q] = p
        state = new
        lin = nlin
        ilin = nilin
        if not info:
            remaining -= 1
            if remaining == 0:
                result = True
                break
        lin_now[0] = lin
        frames.append([candidates(state, info), 0])
        steps += 1
        if steps & 1023 == 0:
            if time.monotonic() > deadline or configs > max_configs:
                result = None
                break
    if stats is not None:
        stats["configs"] = stats.get("configs", 0) + configs
        stats["frontier"] = front[0]
    return result


def check_subs(subs, budget, stats=None):
    """linearizable() in stages.  Leaving an info op out is one of its allowed
    outcomes (never applied), so a pass without some info ops is a pass.
    Stage 1 keeps only the info SETs whose value some answer names, stage 2
    all but the info SETs nobody reads, stage 3 everything; the first two get
    a quarter of the remaining time each.  Only stage 3 can say False."""
    stages = []
    s1 = [u for u in subs if not u.info or
          (u.icls[0] == "set" and u.icls[-1] != UNREAD)]
    s2 = [u for u in subs if not u.info or
          not (u.icls[0] == "set" and u.icls[-1] == UNREAD)]
    if len(s1) < len(subs):
        stages.append(s1)
    if len(s1) < len(s2) < len(subs):
        stages.append(s2)
    for st in stages:
        now = time.monotonic()
        if now > budget.deadline:
            return None
        b = Budget(now + (budget.deadline - now) / 4, budget.max_configs)
        if linearizable(st, b, stats):
            return True
    return linearizable(subs, budget, stats)


# --------------------------------------------------------------------------
# Delta debugging: a small sub-history that is still not linearizable
# --------------------------------------------------------------------------

def _cached(kh):
    """What the reductions look up in a key's history again and again,
    computed once: a key of 40 000 ops makes an O(n) scan per window check
    (and an O(n) one per start candidate) the whole cost of a report.

    order: the subs in _items' order (crash pseudo-ops by return, the rest
    by call), times: the time of each, side: the indexes of the info ops
    and crash pseudo-ops (kept however early they are), span: the longest
    call-to-return of the others (those called before start - span ended
    before start), first_t1: the earliest return of an op, wins: the crash
    windows (open call, crash time), det: _det's list."""
    c = kh.cache
    if "order" not in c:
        order = sorted(kh.subs, key=lambda x: x.rk if x.fixed else x.ck)
        c["order"] = order
        c["times"] = [(x.rk if x.fixed else x.ck)[0] for x in order]
        c["side"] = [i for i, x in enumerate(order)
                     if x.fixed or x.mode == "info"]
        c["span"] = max((x.t1() - x.call for x in order
                         if not x.fixed and x.mode != "info"), default=0.0)
        c["first_t1"] = min((x.t1() for x in order if x.op is not None),
                            default=INF)
        c["wins"] = sorted((x.call, x.crash[0]) for x in kh.subs
                           if x.f == "open")
        c["det"] = [u for u in kh.subs
                    if not u.fixed and u.mode in ("ok", "err", "ghost")]
        c["init"] = {}
    return c


def _init_sub(kh, start):
    """The pseudo-op that puts the key in a free state at start.  Its
    allowed values: those written by ops called before start; any integer
    when an INCRBY was."""
    memo = _cached(kh)["init"]
    allowed = memo.get(start)
    if allowed is None:
        allowed = {}
        for w in kh.subs:
            if w.op is not None and w.t0() < start and w.mode != "ghost":
                if w.writes is not None:
                    allowed[w.writes] = True
                if w.f == "incrby":
                    allowed["*int"] = True
        memo[start] = allowed
    u = Sub()
    u.seq = -1
    u.op = None
    u.key = None
    u.f = "init"
    u.a = allowed
    u.out = None
    u.mode = "init"
    u.call = u.ret = -INF
    u.ck = (-INF, 0, -1)
    u.rk = (-INF, 0.5, -1)
    u.info = False
    u.reads = u.writes = None
    u.is_read = False
    u.crash = None
    u.fixed = True
    u.pure = False
    u.pred = None
    return u


def _items(kh, core, cut, start=-INF, widen=False):
    """The relaxed sub-history between start and cut.

    Ops starting after cut are left out (they start after every kept op
    ended, so they could not change a kept answer).  Ops acknowledged before
    start are left out too (an info op never is: it may take effect later)
    and the key starts in a free state (any state they could have left).  Of the rest, the determinate ops in core that
    were acknowledged by cut and called after start are kept as they are,
    the others relaxed.  Crashes are kept when their window lies between
    start and cut (see _window_start).  widen: crash windows reach back to
    the previous restart (see _crash_explains)."""
    items = []
    c = _cached(kh)
    if c["first_t1"] < start:
        items.append((_init_sub(kh, start), False))
    prev_restore = start
    order = c["order"]
    times = c["times"]
    # Before start - span only info ops and crash pseudo-ops can be kept.
    lo = bisect.bisect_left(times, start - c["span"]) if start > -INF else 0
    hi = bisect.bisect_right(times, cut)
    idx = [i for i in c["side"] if i < lo]
    idx.extend(range(lo, hi))
    for i in idx:
        u = order[i]
        if u.fixed:
            if u.crash[0] > cut or u.crash[0] < start:
                continue
            if u.f == "restore":
                prev_restore = u.call
            elif widen:
                w = _clone_sub(u)
                w.ck = (prev_restore, 3, u.seq)
                w.rk = (prev_restore, 3.1, u.seq)
                w.call = w.ret = prev_restore
                u = w
            items.append((u, False))
        elif u.t0() > cut:
            continue
        elif u.mode == "info":
            # May take effect at any time after its call, even after start.
            items.append((u, False))
        elif u.t1() < start:
            continue
        else:
            items.append((u, not (u in core and u.t1() <= cut
                                  and u.call >= start)))
    return items


def _window_start(kh, start):
    """start moved back so that no crash window straddles it."""
    wins = _cached(kh)["wins"]
    moved = True
    while moved:
        moved = False
        for a, t in wins:
            if a < start <= t:
                start = a
                moved = True
    return start


def _det(kh):
    return _cached(kh)["det"]


def _window_fails(kh, core, cut, start, t_stop, stats=None):
    """True only when the relaxed window is shown not linearizable."""
    now = time.monotonic()
    if now > t_stop:
        return False
    r = check_subs(model_ops(_items(kh, core, cut, start)),
                   Budget(min(t_stop, now + 2.0)), stats)
    return r is False


def _latest_start(kh, fails, cut, t_stop):
    """The latest window start (an op's call) before cut for which fails()
    holds, or None.  Galloping back from the cut (1, 2, 4, ... starts back),
    then bisecting between the last start that passed and the first that
    failed: windows near the cut are small and cheap.  An op that straddles
    a start is relaxed, so this is not monotonic: the start found fails, but
    a later one might too."""
    starts = sorted({_window_start(kh, u.call) for u in _det(kh)
                     if u.t1() <= cut}, reverse=True)
    ok, bad = -1, None        # indexes into starts: passed, failed
    step = 1
    while bad is None:
        i = min(ok + step, len(starts) - 1)
        if time.monotonic() > t_stop:
            return None
        if fails(cut, starts[i]):
            bad = i
        elif i == len(starts) - 1:
            return None
        else:
            ok = i
            step *= 2
    while bad - ok > 1 and time.monotonic() < t_stop:
        mid = (ok + bad) // 2
        if fails(cut, starts[mid]):
            bad = mid
        else:
            ok = mid
    return starts[bad]


def find_window(kh, frontier, t_stop, stats=None):
    """A window (start, cut) that fails with every op of the key determinate:
    its end at a search frontier (the latest return a search could not get
    past), its start as late as found (_latest_start), then the earliest end
    for that start.  None if none is found by t_stop.  A failing window
    proves the key's history is not linearizable, whatever the rest of it
    is."""
    det = _det(kh)
    full = set(det)
    t1s = sorted({u.t1() for u in det})
    if not t1s:
        return None
    i = min(bisect.bisect_left(t1s, frontier), len(t1s) - 1)
    start = _latest_start(
        kh, lambda c, s: _window_fails(kh, full, c, s, t_stop, stats),
        t1s[i], t_stop)
    if start is None:
        return None
    lo, hi = bisect.bisect_left(t1s, start), i
    while lo < hi:
        mid = (lo + hi) // 2
        if _window_fails(kh, full, t1s[mid], start, t_stop, stats):
            hi = mid
        else:
            lo = mid + 1
    return start, t1s[hi]


def minimize(kh, budget_s, stats=None, frontier=INF, window=None):
    """A small core of determinate ops that, with every other op of the key
    between a start and a cut time relaxed, is still not linearizable.
    window: a failing (start, cut) already found.  Returns (core as a list
    of Subs in time order, start, cut, minimal)."""
    t_end = time.monotonic() + budget_s
    det = _det(kh)
    full = set(det)
    minimal = True

    def nonlin(core, cut, start=-INF):
        """True only when shown non-linearizable within the budget."""
        nonlocal minimal
        now = time.monotonic()
        if now > t_end:
            minimal = False
            return False
        r = check_subs(model_ops(_items(kh, core, cut, start)),
                       Budget(min(t_end, now + CHECK_BUDGET)),
                       stats)
        if r is None:
            minimal = False
        return r is False

    if window is None:
        window = find_window(kh, frontier, time.monotonic() + budget_s / 3,
                             stats)
    if window is not None:
        start, cut = window
    else:
        # The earliest failing cut by binary search over acknowledgment
        # times (the last one keeps all that can matter, which is known to
        # fail), then the latest start for it.
        t1s = sorted({u.t1() for u in det})
        lo, hi = 0, len(t1s) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if nonlin(full, t1s[mid]):
                hi = mid
            else:
                lo = mid + 1
        cut = t1s[hi] if t1s else INF
        start = _latest_start(kh, lambda c, s: nonlin(full, c, s), cut, t_end)
        if start is None:
            start = -INF
    core = {u for u in det if u.t1() <= cut and u.call >= start}
    # 3. Greedy ddmin: relax chunks while the rest still fails.
    order = sorted(core, key=lambda u: (u.t0(), u.seq))
    chunk = max(1, len(order) // 2)
    while order and time.monotonic() < t_end:
        changed = False
        i = 0
        while i < len(order) and time.monotonic() < t_end:
            cand = core - set(order[i:i + chunk])
            if nonlin(cand, cut, start):
                core = cand
                order = [u for u in order if u in core]
                changed = True
            else:
                i += chunk
        if not changed:
            if chunk == 1:
                break
            chunk = max(1, chunk // 2)
    if time.monotonic() >= t_end:
        minimal = False
    return sorted(core, key=lambda u: (u.t0(), u.seq)), start, cut, minimal
