#!/usr/bin/env python3
"""unit_ratio.py - unit-test lines per production line, for each room.

A room's production lines are the non-blank lines of its .c and .h files
(proto/, storage/, config/, server/<room>/; only the files directly in the
folder, so server/ itself, main.c and the daemon's entry points, is no room).
Its unit-test lines are the non-blank lines of the tests/unit/check_*.c suites
whose subject is in that room, plus a share of the fixture headers
(tests/unit/*.h) those suites include.

Which room a suite tests (its subject):
  1. SUBJECT below, when it names the suite: a small explicit map for the
     suites the rule in 3 gets wrong (a storage suite that includes more proto
     headers than storage ones, say);
  2. else a suite named for a process room's prefix (check_owner_*,
     check_agent_*, check_edge_*, check_master_*, check_admin_*) tests that
     room: those suites include core's headers for their fixtures;
  3. else the room whose headers ("proto/x.h", "server/edge/y.h") the suite
     includes most; tests/ headers do not count;
  4. on a tie, the room that has a source file named like the suite
     (check_cmap.c -> server/core/cmap.c, check_ledger_pos.c ->
     storage/ledger_pos.c, or failing that the longest prefix of it); if none
     or several do, the first of the tied rooms in ROOMS order.
A fixture header's lines are split evenly among the distinct rooms of the
suites that include it (fake_owner.h serves the edge's suites, fake_edge.h the
owner's); a header no suite includes counts for no room.

Lines are a crude measure (a table of cases is cheap, a fixture costs), but
they are the measure the issues quote: the closing note of issue 26 prints
this table.

usage: unit_ratio.py [--root DIR] [--suites]
  --suites   also list every suite and fixture with its room and lines
"""
import collections
import glob
import os
import re
import sys

ROOMS = ['proto', 'storage', 'config', 'server/core', 'server/colo', 'server/edge',
         'server/owner', 'server/agent', 'server/master', 'server/admin']

# suite file name -> room, where the include count points elsewhere.
SUBJECT = {
    'check_ledger.c': 'storage',          # includes proto's buf and resp for its values
    'check_ledger_pos.c': 'storage',
    'check_rifl.c': 'server/owner',       # the owner's request-id filter; wire helpers
    'check_owner_persist.c': 'server/owner',  # the owner's persistence over storage/
    'check_elink_tls.c': 'server/edge',   # the edge's owner link over TLS; core's tls
    'check_elink_timeout.c': 'server/edge',
    'check_rifl_move.c': 'server/owner',
    'check_place.c': 'proto',             # proto/place.c; core's topology for its input
}
PREFIXES = {'owner': 'server/owner', 'agent': 'server/agent', 'edge': 'server/edge',
            'master': 'server/master', 'admin': 'server/admin'}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def nonblank(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return sum(1 for line in f if line.strip())


def room_of_header(inc):
    d = os.path.dirname(inc)
    return d if d in ROOMS else None


def room_files(root):
    """room -> the stems of its .c files."""
    out = {}
    for r in ROOMS:
        out[r] = [os.path.basename(p)[:-2] for p in glob.glob(os.path.join(root, r, '*.c'))]
    return out


def subject(root, name, text, stems):
    if name in SUBJECT:
        return SUBJECT[name], 'map'
    pre = name[len('check_'):].split('_')[0].split('.')[0]
    if pre in PREFIXES and '_' in name[len('check_'):]:
        return PREFIXES[pre], 'prefix'
    counts = collections.Counter()
    for inc in INCLUDE.findall(text):
        r = room_of_header(inc)
        if r is not None:
            counts[r] += 1
    if not counts:
        return None, 'none'
    top = max(counts.values())
    tied = [r for r in ROOMS if counts[r] == top]
    if len(tied) == 1:
        return tied[0], 'includes'
    want = name[len('check_'):-2]
    # the room with a file of exactly that name, else the longest prefix match
    exact = [r for r in tied if want in stems[r]]
    if len(exact) == 1:
        return exact[0], 'name'
    best, best_len = [], 0
    for r in tied:
        for s in stems[r]:
            n = len(os.path.commonprefix([s, want]))
            if n > best_len:
                best, best_len = [r], n
            elif n == best_len and n > 0 and r not in best:
                best.append(r)
    if len(best) == 1 and best_len >= 3:
        return best[0], 'name'
    return tied[0], 'tie'


def main(argv):
    root = '.'
    show = False
    i = 1
    while i < len(argv):
        if argv[i] == '--root' and i + 1 < len(argv):
            root = argv[i + 1]
            i += 1
        elif argv[i] == '--suites':
            show = True
        else:
            sys.stderr.write(__doc__)
            return 2
        i += 1
    stems = room_files(root)
    prod = {}
    for r in ROOMS:
        files = glob.glob(os.path.join(root, r, '*.[ch]'))
        prod[r] = sum(nonblank(p) for p in files)
    tests = collections.Counter()
    nsuites = collections.Counter()
    users = collections.defaultdict(set)   # fixture header -> rooms of suites including it
    rows = []
    for path in sorted(glob.glob(os.path.join(root, 'tests/unit/check_*.c'))):
        name = os.path.basename(path)
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        r, why = subject(root, name, text, stems)
        n = nonblank(path)
        rows.append((name, r, why, n))
        if r is None:
            continue
        tests[r] += n
        nsuites[r] += 1
        for inc in INCLUDE.findall(text):
            if inc.startswith('tests/unit/') and inc.endswith('.h'):
                users[os.path.basename(inc)].add(r)
    for path in sorted(glob.glob(os.path.join(root, 'tests/unit/*.h'))):
        name = os.path.basename(path)
        n = nonblank(path)
        rs = sorted(users.get(name, ()), key=ROOMS.index)
        rows.append((name, ','.join(rs) or None, 'fixture', n))
        for r in rs:
            tests[r] += n / len(rs)
    if show:
        for name, r, why, n in rows:
            print('%-28s %-14s %-8s %5d' % (name, r or '-', why, n))
        print()
    print('%-14s %7s %7s %6s %6s' % ('room', 'prod', 'unit', 'suites', 'ratio'))
    for r in ROOMS:
        if prod[r] == 0 and tests[r] == 0:
            continue
        ratio = tests[r] / prod[r] if prod[r] else 0.0
        print('%-14s %7d %7d %6d %6.2f' % (r, prod[r], round(tests[r]), nsuites[r], ratio))
    ps = prod['proto'] + prod['storage']
    ts = tests['proto'] + tests['storage']
    print('%-14s %7d %7d %6d %6.2f' % ('proto+storage', ps, round(ts),
                                       nsuites['proto'] + nsuites['storage'],
                                       ts / ps if ps else 0.0))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
