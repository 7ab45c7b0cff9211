#!/usr/bin/python3
"""
struct_fields.py - counts the members of named C structs, and fails when one
has more than its bound.  Issue 26 bounds the two structs that grow by
accretion: `struct edge` (the edge process: one pointer per module, as
`struct owner` is) and `struct conn` (a connection's own fields: the session
state of the layers above lives in their slots).  A member is one declarator:
`int a, b;` is two; a nested struct or union counts as one member.

  struct_fields.py [--bound NAME=N ...] FILE...   prints NAME: N fields
Exit 1 when a bounded struct is over its bound or was not found.
"""
import re
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def struct_bodies(text):
    """Yields (name, body) for each `struct NAME {...};` definition."""
    for m in re.finditer(r"\bstruct\s+(\w+)\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        yield m.group(1), text[m.end():i - 1]


def count_members(body):
    # Nested braces (inner struct/union, initialisers) collapse to one token.
    flat, depth = [], 0
    for ch in body:
        if ch == "{":
            depth += 1
            if depth == 1:
                flat.append(" NESTED ")
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            flat.append(ch)
    n = 0
    for decl in "".join(flat).split(";"):
        decl = re.sub(r"\([^()]*\)\s*\(", "(", decl)  # function pointer params
        decl = re.sub(r"\([^()]*\)", "", decl) if "(*" not in decl else decl
        decl = decl.strip()
        if not decl or decl.startswith("#"):
            continue
        # commas outside parentheses separate declarators
        depth, parts = 0, 1
        for ch in decl:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                parts += 1
        n += parts
    return n


def main(argv):
    bounds, files = {}, []
    it = iter(argv)
    for a in it:
        if a == "--bound":
            name, n = next(it).split("=")
            bounds[name] = int(n)
        else:
            files.append(a)
    found = {}
    for f in files:
        with open(f) as fh:
            text = strip_comments(fh.read())
        text = "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("#"))
        for name, body in struct_bodies(text):
            if not bounds or name in bounds:
                found[name] = count_members(body)
    bad = 0
    for name in sorted(found):
        over = name in bounds and found[name] > bounds[name]
        print(f"struct {name}: {found[name]} fields" + (f" (bound {bounds[name]}: OVER)" if over else
              (f" (bound {bounds[name]})" if name in bounds else "")))
        bad |= over
    for name in bounds:
        if name not in found:
            print(f"struct {name}: not found in {' '.join(files)}")
            bad = 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
