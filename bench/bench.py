#!/usr/bin/env python3
"""rtpart benchmark: times whole rtpartctl processes, as a user runs them.

Generates the large fake host (1024 CPUs, 8192 IRQs) with tests/fixtures/mkhost.py, installs the
shipped profiles into it, and reports the median (and min/max) wall time over --runs runs, after
one warm-up run, of:
  - plan realtime-virtual-host on the large host,
  - apply, verify and revert of realtime-virtual-host on the large host (each apply on a host
    reverted by the previous run, so every run does the full work),
  - apply, verify and revert on this machine's real kernel (as root) of a profile that changes
    only what the host test changes: one IRQ, default_smp_affinity, two sysctls and the workqueue
    cpumask; every value is recorded first and restored after.
Goals from the issues are printed beside each figure.

    python3 bench/bench.py [--build build] [--runs 11] [--json out.json] [--no-real]
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
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))


def run(cmd, expect=(0,), env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    dt = (time.perf_counter() - t0) * 1000
    if p.returncode not in expect:
        sys.exit(f"bench: {' '.join(cmd)} exited {p.returncode}: {p.stderr.decode()[-2000:]}")
    return dt


def summary(name, times, goal):
    med = statistics.median(times)
    verdict = "" if goal is None else "  (goal <= %d ms: %s)" % (goal, "met" if med <= goal else "MISSED")
    print(f"{name:58s} median {med:8.2f} ms  min {min(times):8.2f}  max {max(times):8.2f}{verdict}", flush=True)
    return {"case": name, "median_ms": round(med, 2), "min_ms": round(min(times), 2), "max_ms": round(max(times), 2),
            "runs": len(times), "goal_ms": goal}


def cycle(ctl, base, profile, runs, goals, label):
    """apply / verify / revert, each timed, runs+1 times (the first is a warm-up)."""
    t_apply, t_verify, t_revert = [], [], []
    for i in range(runs + 1):
        a = run(ctl + base + ["apply", profile])
        v = run(ctl + base + ["verify"], expect=(0, 4))
        r = run(ctl + base + ["revert"])
        if i:
            t_apply.append(a)
            t_verify.append(v)
            t_revert.append(r)
    return [summary(f"apply {label}", t_apply, goals[0]), summary(f"verify {label}", t_verify, goals[1]),
            summary(f"revert {label}", t_revert, goals[2])]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--no-real", action="store_true", help="skip the real-kernel cases")
    args = ap.parse_args()

    # The sim build: the fake host's kernel files react to writes as the kernel's would.
    ctl = [os.path.join(args.build, "tests", "sim", "rtpartctl")]
    if not os.access(ctl[0], os.X_OK):
        sys.exit(f"bench: {ctl[0]} not found; build first (meson setup build && ninja -C build)")

    # tmpfs: the large host is ~330k files, which a disk-backed /tmp writes ten times slower
    tmp = tempfile.mkdtemp(prefix="rtpart-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    results = []
    try:
        host = os.path.join(tmp, "big")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, os.path.join(SRC, "tests", "fixtures", "mkhost.py"), "big", host], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"generated the 1024-CPU / 8192-IRQ host in {time.perf_counter() - t0:.1f} s", flush=True)
        pdir = os.path.join(host, "usr", "share", "rtpart", "profiles")
        os.makedirs(pdir, exist_ok=True)
        for f in os.listdir(os.path.join(SRC, "profiles")):
            if f.endswith(".json"):
                shutil.copy(os.path.join(SRC, "profiles", f), pdir)

        big = ["--root", host]
        times = [run(ctl + big + ["plan", "realtime-virtual-host"]) for _ in range(args.runs + 1)][1:]
        results.append(summary("plan realtime-virtual-host (1024 CPUs, 8192 IRQs)", times, 100))
        times = [run(ctl + big + ["--json", "plan", "realtime-virtual-host"]) for _ in range(args.runs + 1)][1:]
        results.append(summary("plan --json realtime-virtual-host (1024 CPUs, 8192 IRQs)", times, 100))
        results += cycle(ctl, big, "realtime-virtual-host", args.runs, (100, 30, None), "realtime-virtual-host (1024 CPUs)")

        if args.no_real:
            pass
        elif os.geteuid() != 0:
            print("real-kernel cases skipped: they need root")
        else:
            import host_apply  # the host test's helpers: what it touches, and how it restores it
            saved = {f: host_apply.read(f) for f in host_apply.FILES}
            irq = host_apply.movable_irq()
            if irq is None:
                print("real-kernel cases skipped: no IRQ here accepts a new affinity")
            else:
                irq_path = f"/proc/irq/{irq[0]}/smp_affinity_list"
                saved[irq_path] = irq[2]
                profile = os.path.join(tmp, "real.json")
                with open(profile, "w") as f:
                    json.dump({"cpus": {"housekeeping": "0"},
                               "irq": {"default_affinity": "0", "rules": [{"match": irq[1], "cpus": "0"}], "exclude": ["*"]},
                               "sysctl": {"kernel.timer_migration": 0, "vm.stat_interval": 7},
                               "sysfs": {"/sys/devices/virtual/workqueue/cpumask": "${housekeeping_mask}"}}, f)
                try:
                    shipped = [os.path.join(args.build, "daemon", "rtpartctl")]  # the kernel's own
                    results += cycle(shipped, ["--state-dir", os.path.join(tmp, "state")], profile, args.runs,
                                     (25, 5, None), "on this machine's kernel (5 knobs)")
                finally:
                    for path, value in saved.items():
                        if host_apply.read(path) != value:
                            host_apply.write(path, value)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
