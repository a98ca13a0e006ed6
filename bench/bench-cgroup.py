#!/usr/bin/env python3
"""What libcgroup costs: apply and revert of a cpuset partition on this machine's kernel, whole
rtpartctl processes, through libcgroup (the default) and with RTPART_LIBCGROUP=0 (the cgroup files
written directly), run in turn, pair by pair.

The profile has one benchmark-unique isolated partition (rtpart-bench-cg-PID, the last CPU) and
nothing else ("confine" empty: no task is moved), as tests/host/host_cpuset.py applies it; each
apply is followed by its revert, so every run makes and removes the cpuset. The journal goes to a
--state-dir on disk (/var/tmp), so that its fsyncs cost what they cost. Prints, for apply, revert
and the two together, each way's median wall time and CPU time (user + system, from wait4) and the
median of the run-by-run ratios (libcgroup / direct). Needs root and a cpuset hierarchy (v1, or
v2 with the cpuset controller); whatever a failed run leaves is reverted.

    nice -n 10 python3 bench/bench-cgroup.py [--build build] [--runs 21] [--json out.json]
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


def run(cmd, env):
    """One whole process: its wall and CPU (user + system) time in ms."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1000
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {os.waitstatus_to_exitcode(status)}: {err.decode()[-2000:]}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-cgroup: needs root (it makes a cpuset on this machine's kernel)")
    ctl = os.path.join(args.build, "daemon", "ctl", "rtpartctl")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        sys.exit("bench-cgroup: needs 2 CPUs, one to isolate")
    tmp = tempfile.mkdtemp(prefix="rtpart-bench-cg-", dir="/var/tmp")
    state = os.path.join(tmp, "state")
    profile = os.path.join(tmp, "bench-cg.json")
    with open(profile, "w") as f:
        json.dump({"summary": "bench: one isolated cpuset, nothing else",
                   "cpus": {"housekeeping": ",".join(map(str, cpus[:-1]))},
                   "cpuset": {"confine": [], "partitions": [{"name": f"rtpart-bench-cg-{os.getpid()}",
                                                             "cpus": str(cpus[-1]), "mode": "isolated"}]}}, f)
    ways = {"libcgroup": dict(os.environ), "direct": {**os.environ, "RTPART_LIBCGROUP": "0"}}
    ways["libcgroup"].pop("RTPART_LIBCGROUP", None)
    times = {(w, c): [] for w in ways for c in ("apply", "revert", "cycle")}
    base = [ctl, "--no-daemon", "--state-dir", state]
    try:
        for i in range(args.runs + 1):  # the first pair warms the page cache: not counted
            for way, env in ways.items():
                a = run(base + ["apply", profile], env)
                r = run(base + ["revert"], env)
                if i == 0:
                    continue
                times[(way, "apply")].append(a)
                times[(way, "revert")].append(r)
                times[(way, "cycle")].append((a[0] + r[0], a[1] + r[1]))
    finally:
        if os.path.exists(os.path.join(state, "state.json")):
            subprocess.run(base + ["revert"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)

    out = []
    print(f"cpuset partition apply/revert, {args.runs} runs each way; libcgroup / direct (RTPART_LIBCGROUP=0)")
    for case in ("apply", "revert", "cycle"):
        lib, direct = times[("libcgroup", case)], times[("direct", case)]
        r = {"case": case, "runs": args.runs}
        for i, what in ((0, "wall"), (1, "cpu")):
            r[f"libcgroup_{what}_ms"] = round(statistics.median(t[i] for t in lib), 2)
            r[f"direct_{what}_ms"] = round(statistics.median(t[i] for t in direct), 2)
            r[f"{what}_ratio"] = round(statistics.median(a[i] / max(b[i], 0.001) for a, b in zip(lib, direct)), 3)
        out.append(r)
        print(f"{case:7s} wall {r['libcgroup_wall_ms']:7.2f} / {r['direct_wall_ms']:7.2f} ms = {r['wall_ratio']:5.3f}x"
              f"   cpu {r['libcgroup_cpu_ms']:6.2f} / {r['direct_cpu_ms']:6.2f} ms = {r['cpu_ratio']:5.3f}x", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
