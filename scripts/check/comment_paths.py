#!/usr/bin/env python3
"""comment_paths.py - every source path a comment names exists.

Comments point readers at other files ("see server/colo/cache.h"); when a file
moves, such a pointer goes stale silently (issue 26 found server/cache.h and
server/ratelimit.h, gone since the rooms landed).  This scans the C sources
for "dir/name.c" / "dir/name.h" outside #include lines and fails on one that
is found neither from the top, nor from the file's own folder, nor under
server/ (comments say "core/router_map.h" for server/core/router_map.h).

usage: comment_paths.py [ROOT]
"""
import os
import re
import subprocess
import sys

PATH = re.compile(r'(?<![\w/.-])((?:[a-z_0-9]+/)+[a-z_0-9]+\.[ch])\b')


def main(argv):
    root = argv[0] if argv else '.'
    files = subprocess.run(['git', '-C', root, 'ls-files', '*.c', '*.h'], capture_output=True,
                           text=True, check=True).stdout.split()
    bad = 0
    for f in files:
        with open(os.path.join(root, f), encoding='utf-8', errors='replace') as fh:
            lines = fh.read().split('\n')
        for no, line in enumerate(lines, 1):
            if line.lstrip().startswith('#include'):
                continue
            for m in PATH.finditer(line):
                p = m.group(1)
                where = [p, os.path.join(os.path.dirname(f), p), os.path.join('server', p)]
                if not any(os.path.exists(os.path.join(root, w)) for w in where):
                    print('comment_paths: %s:%d names %s, which does not exist' % (f, no, p))
                    bad += 1
    if bad:
        return 1
    print('comment_paths: every path named in %d source files exists' % len(files))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
