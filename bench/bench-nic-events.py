#!/usr/bin/env python3
"""NIC event → re-placed: how long rtpartd takes to put a NIC's channels and RPS mask back after
the kernel says the NIC came up again (issue 25's goal: 100 ms, median).

Each run is a whole rtpartd process (the simulator's, built in BUILD/tests/sim, on a copy of the vm
host in a network namespace of its own, as tests/sysroot/daemon_nic_events.py runs it) with a
profile that cuts enp1s0 to the housekeeping channels and puts RPS and XPS on housekeeping; a veth
named enp1s0 in that namespace stands for the NIC. Each of --events events: the link set down, its
files reset as its driver would (channels back to 4, rx-0's RPS mask cleared), then up; the time
is from `ip link set up` having returned (the kernel sent RTM_NEWLINK in it: a lower bound) and
from its start (an upper bound: ip's own start included) to both files read back as the profile
wants them (polled every 0.2 ms). Reports the medians of each run, and the median and p90 over all.

    sudo nice -n 10 python3 bench/bench-nic-events.py [--build build] [--runs 5] [--events 20]

Only the rtpartd processes this script starts are ended, by PID. Needs root.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def one_run(mod, events):
    """A fresh rtpartd: (lower, upper) latencies in ms of each event."""
    d = mod.NetnsDaemon(host="vm", extra_profiles={"nic-events": mod.PROFILE})
    try:
        d.start("--interval", "3600")
        c = mod.Varlink(d.sock)
        r = c.call(mod.IFACE + ".Apply", {"profile": "nic-events"})
        c.close()
        if not r["parameters"]["ok"]:
            raise SystemExit(f"apply failed: {r}")
        want = (d.read(mod.NIC + "/sim-channels").splitlines()[-1], d.read(mod.NIC + "/queues/rx-0/rps_cpus"))
        d.ip("link", "add", "enp1s0", "type", "veth", "peer", "name", "rtpt-peer")
        out = []
        for _ in range(events):
            d.ip("link", "set", "enp1s0", "down")
            time.sleep(0.05)  # the down event's own look is over
            mod.reset(d)
            time.sleep(0.05)
            start = time.monotonic()
            d.ip("link", "set", "enp1s0", "up")
            sent = time.monotonic()
            end = sent + 5
            while time.monotonic() < end:
                # read as it is written (truncated, then the new text): an empty file is not yet
                got = (d.read(mod.NIC + "/sim-channels").splitlines()[-1:],
                       d.read(mod.NIC + "/queues/rx-0/rps_cpus"))
                if got == ([want[0]], want[1]):
                    break
                time.sleep(0.0002)
            else:
                raise SystemExit(f"not put back within 5 s:\n{d.logtext()}")
            done = time.monotonic()
            out.append(((done - sent) * 1000, (done - start) * 1000))
        return out
    finally:
        d.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--events", type=int, default=20)
    a = ap.parse_args()
    os.environ.setdefault("RTPART_BUILD_DIR", os.path.abspath(a.build))
    os.environ.setdefault("RTPART_HOSTS_DIR", os.path.join(os.path.abspath(a.build), "tests", "fixtures", "hosts"))
    sys.path.insert(0, os.path.join(SRC, "tests", "sysroot"))
    import daemon_nic_events as mod
    why = mod.missing()
    if why:
        print(f"cannot run: {why}", file=sys.stderr)
        return 77
    lows, highs = [], []
    for run in range(a.runs):
        res = one_run(mod, a.events)
        lo, hi = [x[0] for x in res], [x[1] for x in res]
        lows += lo
        highs += hi
        print(f"run {run + 1}: median {statistics.median(lo):.1f} ms after ip returned, "
              f"{statistics.median(hi):.1f} ms from its start ({len(res)} events)")
    print(f"all {len(lows)} events: median {statistics.median(lows):.1f} ms (p90 {percentile(lows, 90):.1f}) "
          f"after ip returned, {statistics.median(highs):.1f} ms (p90 {percentile(highs, 90):.1f}) from its start; "
          "goal 100 ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
