#!/usr/bin/env python3
"""The shipped programs carry nothing of the simulator.

Usage: check-shipped.py LIBRTPART-SIM.A PROGRAM...

Fails if a PROGRAM defines a symbol the simulator library defines, or holds a strong
root_tree_ops (lib/ defines it weak; only the simulator's is strong), or any symbol named
"fake". A stripped PROGRAM has no symbol table to look into: without a failure elsewhere, exits
77 (skip) naming it, as it does without nm, rather than pass having checked nothing.
"""
import shutil
import subprocess
import sys


def symbols(path):
    """{name: type} of the symbols path defines (none when it is stripped)."""
    p = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True)
    if p.returncode != 0 and "no symbols" not in p.stderr:
        raise SystemExit(f"nm {path}: {p.stderr.strip()}")
    out = p.stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            syms[parts[2]] = parts[1]
    return syms


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    if not shutil.which("nm"):
        print("nm not found: cannot look into the programs", file=sys.stderr)
        return 77
    sim = {name for name, kind in symbols(sys.argv[1]).items() if kind.isupper()}  # global ones
    if not sim:
        print(f"{sys.argv[1]}: no global symbol: not the simulator library", file=sys.stderr)
        return 1
    failed = False
    stripped = []
    for prog in sys.argv[2:]:
        syms = symbols(prog)
        if "main" not in syms:
            stripped.append(prog)
            continue
        bad = sorted(n for n in syms if (n in sim and n != "root_tree_ops") or "fake" in n.lower())
        if syms.get("root_tree_ops", "W") not in ("W", "V"):
            bad.append("root_tree_ops (strong: the simulator's)")
        if bad:
            failed = True
            print(f"{prog}: simulator symbols linked in: {', '.join(bad)}", file=sys.stderr)
        else:
            print(f"{prog}: no simulator symbol ({len(sim)} checked)")
    if failed:
        return 1
    if stripped:
        print(f"SKIP: {', '.join(stripped)}: stripped (no symbol table), not checked for the simulator's symbols; "
              "build without stripping (meson's default) to check them")
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
