#!/usr/bin/env python3
"""What the metrics file costs rtpartd: the daemon's CPU time per varlink call and per drift event,
with the metrics written (--metrics-dir) against the floor of the same daemon with --no-metrics,
measured in the same run, on a copy of the intel-2s fake host in /dev/shm with
realtime-virtual-host applied.

For each of --runs rounds (the two variants alternate): start the sim rtpartd, Apply, then
  - --calls Describe calls (which read nothing from the host: the cheapest call, where the render
    after each turn of the loop weighs most), one after the other on one connection: the time
    rtpartd ran (/proc/PID/schedstat), per call;
  - --writes writes of a new value to proc/sys/vm/swappiness, each waited for on a Watch stream:
    CPU time per drift event (with metrics, each one rewrites the file: drift_events_total moves).
Prints medians and the ratio with/without.

    python3 bench/bench-metrics.py [--build build] [--runs 5] [--calls 5000] [--writes 100]

Needs root (Apply over varlink is refused to other uids). Only the rtpartd processes it starts are
ended, by PID.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
IFACE = "org.rtpart.Manager"
sys.path.insert(0, HERE)
from bench import load_bench_daemon  # noqa: E402

Varlink = load_bench_daemon().Varlink  # call() gives a reply's parameters; an error ends the run



def cpu_seconds(pid):
    """Time the process's (one) thread ran, from /proc/PID/schedstat (ns)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def one_run(exe, host, metrics, calls, writes):
    tmp = tempfile.mkdtemp(prefix="rtpart-bench-metrics-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    root = os.path.join(tmp, "root")
    shutil.copytree(host, root, symlinks=True)
    pdir = os.path.join(root, "usr", "share", "rtpart", "profiles")
    os.makedirs(pdir, exist_ok=True)
    for f in os.listdir(os.path.join(SRC, "profiles")):
        if f.endswith(".json"):
            shutil.copy(os.path.join(SRC, "profiles", f), pdir)
    prom = os.path.join(tmp, "prom")
    os.makedirs(prom)
    sock = os.path.join(tmp, "sock")
    args = [exe, "--root", root, "--no-dbus", "--varlink-socket", sock]
    args += ["--metrics-dir", prom] if metrics else ["--no-metrics"]
    log = open(os.path.join(tmp, "log"), "w")
    p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 30
        while not os.path.exists(sock):
            if time.monotonic() > end or p.poll() is not None:
                raise RuntimeError("rtpartd did not start")
            time.sleep(0.01)
        time.sleep(0.05)
        c = Varlink(sock)
        c.call(IFACE + ".Apply", {"profile": "realtime-virtual-host"})
        w = Varlink(sock)
        w.send(IFACE + ".Watch", more=True)
        w.recv(timeout=30)

        t0 = cpu_seconds(p.pid)
        for _ in range(calls):
            c.call(IFACE + ".Describe")
        per_call = (cpu_seconds(p.pid) - t0) / calls

        knob = os.path.join(root, "proc/sys/vm/swappiness")
        t0 = cpu_seconds(p.pid)
        for i in range(writes):
            with open(knob, "w") as f:
                f.write(f"{20 + i}\n")
            while w.recv(timeout=30)["parameters"]["event"] != "drift":
                pass
        per_event = (cpu_seconds(p.pid) - t0) / writes
        if metrics:
            assert os.path.exists(os.path.join(prom, "rtpart.prom"))
        c.sock.close()
        w.sock.close()
        return per_call, per_event
    finally:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--writes", type=int, default=100)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench-metrics needs root (Apply over varlink)", file=sys.stderr)
        return 77
    exe = os.path.join(a.build, "tests", "sim", "rtpartd")
    host = os.path.join(a.build, "tests", "fixtures", "hosts", "intel-2s")
    res = {True: ([], []), False: ([], [])}
    for _ in range(a.runs):
        for metrics in (False, True):
            call, event = one_run(exe, host, metrics, a.calls, a.writes)
            res[metrics][0].append(call)
            res[metrics][1].append(event)
    for i, what in enumerate(("per Describe call", "per drift event")):
        floor = statistics.median(res[False][i]) * 1e6
        with_m = statistics.median(res[True][i]) * 1e6
        print(f"rtpartd CPU {what}: {with_m:.1f} µs with metrics, {floor:.1f} µs without "
              f"(ratio {with_m / floor if floor else float('nan'):.2f}; medians of {a.runs} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
