#!/usr/bin/env python3
"""The shipped programs carry nothing of the simulator.

Usage: check-shipped.py LIBRTPART-SIM.A PROGRAM...

Fails if a PROGRAM defines a symbol the simulator library defines, or holds a strong
root_tree_ops (lib/ defines it weak; only the simulator's is strong), or any symbol named
"fake". Exits 77 (skip) without nm.
"""
import shutil
import subprocess
import sys


def symbols(path):
    """{name: type} of the symbols path defines."""
    out = subprocess.run(["nm", "--defined-only", path], check=True, capture_output=True, text=True).stdout
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
    failed = False
    for prog in sys.argv[2:]:
        syms = symbols(prog)
        bad = sorted(n for n in syms if (n in sim and n != "root_tree_ops") or "fake" in n.lower())
        if syms.get("root_tree_ops", "W") not in ("W", "V"):
            bad.append("root_tree_ops (strong: the simulator's)")
        if bad:
            failed = True
            print(f"{prog}: simulator symbols linked in: {', '.join(bad)}", file=sys.stderr)
        else:
            print(f"{prog}: no simulator symbol ({len(sim)} checked)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
