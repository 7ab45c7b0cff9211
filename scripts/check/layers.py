#!/usr/bin/env python3
"""layers.py - keeps the doors between hotkvd's rooms one-way (STYLE.md, Layering).

Reads `nm` of every object of the library and builds the graph "module A calls
(or reads) a global defined by module B".  It fails when:
  * a room calls a room that is not below it (the ranks are ROOMS below; rooms
    of equal rank, such as edge and owner, may not call each other), or
  * modules call each other in a circle, inside a room or across rooms.
A module is one .c file, except the few multi-file modules in GROUPS, whose
files share a private header by design.  Anything that must flow upward is a
callback handed in at setup, which nm does not see as a call: that is the point.

usage: layers.py BUILD_DIR [--graph] [--inject A:B ...]
  --graph      print the room graph and every module's calls (the closing picture)
  --inject A:B pretend module A calls module B (used by the self-test to show
               that an upward call or a circle is refused)
"""
import collections
import glob
import os
import subprocess
import sys

# room -> rank; a room may call only rooms of strictly lower rank.
ROOMS = {
    'proto': 0,
    'config': 1, 'storage': 1,
    'server/core': 2,
    'server/colo': 3,
    'server/edge': 4, 'server/owner': 4, 'server/agent': 4,
    'server/master': 5,
    'server/admin': 6,      # the command-line tools: use the agent's code and the master's config
    'server': 7,            # server/main.c, server/hotkvd_admin.c: the programs
}
# module name -> file stems that form it (one private header, one idea).
GROUPS = {
    'storage/ledger': ['storage/ledger', 'storage/ledger_scan', 'storage/ledger_cmd',
                       'storage/ledger_expire', 'storage/ledger_more', 'storage/ledger_pos',
                       'storage/ledger_move', 'storage/ledger_entry', 'storage/ledger_dirty'],
    'storage/persist_db': ['storage/persist_db', 'storage/persist_db_file',
                           'storage/persist_db_migrate'],
    'storage/persister': ['storage/persister', 'storage/persister_read', 'storage/persister_job'],
    'storage/lstore': ['storage/lstore_table', 'storage/lstore_log', 'storage/lstore_txn'],
    'server/owner/owner_move': ['server/owner/owner_move', 'server/owner/owner_move_ctl'],
    'server/owner/owner_recv': ['server/owner/owner_recv', 'server/owner/owner_recv_map',
                                'server/owner/owner_follow'],
    'server/owner/owner_repl': ['server/owner/owner_repl', 'server/owner/owner_repl_wait'],
    'server/owner/owner_own': ['server/owner/owner_own', 'server/owner/owner_own_wait'],
}


def module_of(stem):
    for name, stems in GROUPS.items():
        if stem in stems:
            return name
    return stem


def room_of(mod):
    d = os.path.dirname(mod)
    if d not in ROOMS:
        sys.exit('layers: %s is in no known room (add it to ROOMS in %s)' % (mod, __file__))
    return d


def read_graph(build):
    defs, uses = {}, collections.defaultdict(set)
    objs = [o for o in glob.glob(os.path.join(build, '**', '*.o'), recursive=True)]
    objs = [o for o in objs
            if os.path.relpath(o, build).split(os.sep)[0] in ('proto', 'storage', 'config', 'server')]
    if not objs:
        sys.exit('layers: no objects under %s (build first)' % build)
    for o in sorted(objs):
        stem = os.path.relpath(o, build)[:-2]
        if not os.path.exists(stem + '.c'):
            continue        # a stale object of a file that moved or went
        mod = module_of(stem)
        out = subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in 'TDBRCVW':
                defs[f[2]] = mod
            elif len(f) == 2 and f[0] == 'U':
                uses[mod].add(f[1])
        uses.setdefault(mod, set())
    graph = collections.defaultdict(dict)
    for mod, syms in uses.items():
        for s in sorted(syms):
            callee = defs.get(s)
            if callee is not None and callee != mod:
                graph[mod].setdefault(callee, []).append(s)
        graph.setdefault(mod, {})
    return graph


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    build, show = argv[1], '--graph' in argv
    graph = read_graph(build)
    for i, a in enumerate(argv):
        if a == '--inject' and i + 1 < len(argv):
            src, dst = argv[i + 1].split(':')
            graph.setdefault(dst, {})
            graph.setdefault(src, {}).setdefault(dst, []).append('<injected>')
    bad = []
    for mod in sorted(graph):
        for callee, syms in sorted(graph[mod].items()):
            r1, r2 = room_of(mod), room_of(callee)
            if r1 != r2 and ROOMS[r2] >= ROOMS[r1]:
                bad.append('upward call: %s (%s) -> %s (%s): %s'
                           % (mod, r1, callee, r2, ' '.join(syms[:6])))
    for comp in cycles(graph):
        edges = ['%s -> %s' % (a, b) for a in comp for b in sorted(graph[a]) if b in comp]
        bad.append('circle of %d modules: %s' % (len(comp), '; '.join(edges)))
    if show:
        rooms = collections.defaultdict(set)
        for mod in graph:
            for callee in graph[mod]:
                if room_of(mod) != room_of(callee):
                    rooms[room_of(mod)].add(room_of(callee))
        print('rooms (caller -> callees):')
        for r in sorted(ROOMS, key=lambda r: (-ROOMS[r], r)):
            print('  %-14s -> %s' % (r, ', '.join(sorted(rooms[r])) or '-'))
        print('modules (caller -> callees):')
        for mod in sorted(graph):
            if graph[mod]:
                print('  %s -> %s' % (mod, ', '.join(sorted(graph[mod]))))
    for b in bad:
        print('layers: ' + b, file=sys.stderr)
    if bad:
        print('layers: %d violation(s); anything that must flow upward is a callback passed at '
              'setup (STYLE.md, Layering)' % len(bad), file=sys.stderr)
        return 1
    print('layers: %d modules in %d rooms, no upward call, no circle'
          % (len(graph), len({room_of(m) for m in graph})))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
