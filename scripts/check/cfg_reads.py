#!/usr/bin/env python3
"""cfg_reads.py - only the process files read the live config (STYLE.md, A process's modules).

A process (edge, owner, agent, master) reads the config it is given and hands
each module its options at setup and at reload; a module reads its options,
never the config.  This check fails when a file other than a process file
reaches the config in effect: through the worker context (`ctx->cfg`,
`ctx.cfg`, `o->ctx->cfg`, `e->ctx->cfg` ...) or down a `->cfg->` chain (the
four-pointers-deep reads issue 26 counted: 76 in 38 files).  Comments and
strings are skipped.

Process files (PROCESS): edge.c, owner.c, agent.c, the master's boot, loop and
reload (master.c, master_boot.c with its front-door step master_http.c,
master_reload.c: the master's job is the config: it parses, validates, diffs
and hands it out), server/main.c, config/.
EXEMPT names files that handle the config as a thing rather than read options
out of it, each with why.

Reads still being moved out are listed in cfg_reads.allow ("path count": that
file may hold up to count reads); a read in a file not listed there, or more
reads than listed, fails.  The lead empties the list when the parts of issue 26
land.  A listed count above the real one is reported (not failed), so the list
can only shrink.

usage: cfg_reads.py [ROOT] [--allow FILE] [--inject PATH:TEXT ...] [--list]
  --inject PATH:TEXT  pretend PATH holds one more line TEXT (the self-test shows
                      that a read in a module is refused)
  --list              print every read found, allowed or not
"""
import os
import re
import sys

PROCESS = {
    'server/edge/edge.c', 'server/owner/owner.c', 'server/agent/agent.c',
    'server/master/master.c', 'server/master/master_boot.c', 'server/master/master_reload.c',
    'server/master/master_http.c',  # master_boot's front-door step, apart by size
    'server/main.c',
}
PROCESS_DIRS = ('config/',)
EXEMPT = {
    # installs a validated config as ctx->cfg on reload: the mechanism itself
    'server/core/worker.c',
    # handed the config by its process (router_create, router_set_config) for
    # the class table and the pools' owner counts it routes by
    'server/core/router.c',
}
SCAN = ('server', 'proto', 'storage', 'config')
READ = re.compile(r'\bctx\s*(?:->|\.)\s*cfg\b|(?:->|\.)\s*cfg\s*->')


def strip(text):
    """Blanks comments and string/char literals, keeping line breaks."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (min(j, n) - i - 1) + (c if j < n else ''))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def reads(root, inject):
    found = {}  # path -> [(line number, text)]
    paths = []
    for top in SCAN:
        for d, _, files in os.walk(os.path.join(root, top)):
            paths += [os.path.relpath(os.path.join(d, f), root) for f in files
                      if f.endswith(('.c', '.h'))]
    for p in sorted(set(paths) | set(inject)):
        if p in PROCESS or p.startswith(PROCESS_DIRS) or p in EXEMPT:
            continue
        full = os.path.join(root, p)
        text = open(full, encoding='utf-8', errors='replace').read() if os.path.exists(full) else ''
        lines = text.split('\n') + inject.get(p, [])
        for no, (raw, code) in enumerate(zip(lines, strip('\n'.join(lines)).split('\n')), 1):
            if READ.search(code):
                found.setdefault(p, []).append((no, raw.strip()))
    return found


def main(argv):
    root, allow_path, inject, show = '.', None, {}, False
    args = iter(argv)
    for a in args:
        if a == '--allow':
            allow_path = next(args)
        elif a == '--inject':
            p, _, t = next(args).partition(':')
            inject.setdefault(p, []).append(t)
        elif a == '--list':
            show = True
        else:
            root = a
    if allow_path is None:
        allow_path = os.path.join(root, 'scripts/check/cfg_reads.allow')
    allow = {}
    if os.path.exists(allow_path):
        for line in open(allow_path):
            line = line.split('#', 1)[0].split()
            if line:
                allow[line[0]] = int(line[1])
    found = reads(root, inject)
    bad = 0
    for p, rs in sorted(found.items()):
        if show:
            for no, t in rs:
                print('%s:%d: %s' % (p, no, t))
        if len(rs) > allow.get(p, 0):
            bad += 1
            print('cfg_reads: %s reads the live config %d time(s) (allowed %d); a module reads '
                  'the options its process hands it at setup and reload:' % (p, len(rs), allow.get(p, 0)))
            for no, t in rs:
                print('  %s:%d: %s' % (p, no, t))
    for p, n in sorted(allow.items()):
        have = len(found.get(p, []))
        if have < n:
            print('cfg_reads: note: %s is allowed %d read(s) and has %d: lower it in %s'
                  % (p, n, have, os.path.relpath(allow_path, root)))
    total = sum(len(v) for v in found.values())
    if bad:
        return 1
    print('cfg_reads: %d config read(s) outside the process files, all in the allow list (%d file(s))'
          % (total, len(found)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
