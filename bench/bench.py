#!/usr/bin/env python3
"""rtpart benchmark: times whole rtpartctl processes, as a user runs them.

Generates the large fake host (1024 CPUs, 8192 IRQs) with tests/fixtures/mkhost.py, installs the
shipped profiles into it, and reports the median (and min/max) wall time of each command over
--runs runs, after one warm-up run. Goals from the issues are printed beside each figure.

    python3 bench/bench.py [--build build] [--runs 21] [--json out.json]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)


def timed(cmd, runs, expect=(0,)):
    times = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        dt = time.perf_counter() - t0
        if p.returncode not in expect:
            sys.exit(f"bench: {' '.join(cmd)} exited {p.returncode}: {p.stderr.decode()[-2000:]}")
        if i > 0:  # the first run warms the page cache
            times.append(dt * 1000)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--keep", action="store_true", help="keep the generated host")
    args = ap.parse_args()

    ctl = os.path.join(args.build, "daemon", "rtpartctl")
    if not os.access(ctl, os.X_OK):
        sys.exit(f"bench: {ctl} not found; build first (meson setup build && ninja -C build)")

    tmp = tempfile.mkdtemp(prefix="rtpart-bench-")
    host = os.path.join(tmp, "big")
    try:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, os.path.join(SRC, "tests", "fixtures", "mkhost.py"), "big", host], check=True,
                       stdout=subprocess.DEVNULL)
        gen = time.perf_counter() - t0
        pdir = os.path.join(host, "usr", "share", "rtpart", "profiles")
        os.makedirs(pdir, exist_ok=True)
        for f in os.listdir(os.path.join(SRC, "profiles")):
            if f.endswith(".json"):
                shutil.copy(os.path.join(SRC, "profiles", f), pdir)
        print(f"generated the 1024-CPU / 8192-IRQ host in {gen:.1f} s")

        cases = [
            ("plan realtime-virtual-host (1024 CPUs, 8192 IRQs)", [ctl, "--root", host, "plan", "realtime-virtual-host"], 100),
            ("plan --json realtime-virtual-host (1024 CPUs, 8192 IRQs)",
             [ctl, "--root", host, "--json", "plan", "realtime-virtual-host"], 100),
            ("plan realtime-virtual-host (this machine)", [ctl, "plan", "--root", "/", os.path.join(SRC, "profiles", "realtime-virtual-host.json")], None),
        ]
        results = []
        for name, cmd, goal in cases:
            t = timed(cmd, args.runs)
            med = statistics.median(t)
            r = {"case": name, "median_ms": round(med, 2), "min_ms": round(min(t), 2), "max_ms": round(max(t), 2),
                 "runs": len(t), "goal_ms": goal}
            results.append(r)
            verdict = "" if goal is None else ("  (goal ≤%d ms: %s)" % (goal, "met" if med <= goal else "MISSED"))
            print(f"{name:60s} median {med:8.2f} ms  min {min(t):8.2f}  max {max(t):8.2f}{verdict}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        if args.keep:
            print(f"host kept in {host}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
