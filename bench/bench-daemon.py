#!/usr/bin/env python3
"""rtpartd benchmark: the daemon as a whole process, on a copy of the intel-2s fake host in /dev/shm.

Reports, with the goals of issue 5 beside them:
  - start to READY: from exec to the first answer on the varlink socket (org.varlink.service.GetInfo),
    with an empty journal and with realtime-virtual-host applied (the start then re-applies it);
    median over --starts starts,
  - RSS after apply: resident memory of rtpartd once Apply realtime-virtual-host over varlink
    is done (one more round trip after its answer), summed from /proc/PID/smaps (exact; VmRSS is a per-CPU-cached estimate that can be off by
    hundreds of KiB), median over --rss-runs daemons, with its breakdown by kind of mapping:
    heap, anonymous mmaps, stack, rtpartd's own binary, libc and ld.so, the other libraries;
    each with Rss, Pss, Private_Dirty and Shared_Clean,
  - drift event latency: a write to proc/sys/vm/swappiness (open, write, close) → the Watch
    event naming it; median and p99 over --writes writes, each a new value,
  - coalescing: events per burst of 10 back-to-back writes to one file, and per burst of writes
    to every IRQ affinity file of the profile (as irqbalance rewrites them),
  - new IRQ placement: an IRQ made in the tree as request_irq() makes it (its /proc/interrupts line
    and /sys/kernel/irq/N/actions, then /proc/irq/N) → its smp_affinity_list rewritten by the
    daemon; median over --new-irqs,
  - wake-ups while idle: voluntary context switches of rtpartd over --idle seconds (60 by default)
    with nothing changing (a Watch stream open), and how many of them were safety-timer ticks
    (the daemon's own count, from Status); the goal is none between ticks,
for each --debounce value (default 5 and 20 ms), then the ratios between them.

    python3 bench/bench-daemon.py [--build build] [--debounce 5,20] [--writes 200] [--idle 60]
                                  [--starts 11] [--rss-runs 5] [--json out.json] [--quick]

--quick is for a first look: --idle 10, --writes 100, --starts 5, --rss-runs 3, one debounce.
rtpartd runs with the environment systemd/rtpartd.service.in gives it (Environment=), as
installed; --no-unit-env runs it without.

Only the rtpartd processes this script starts are ended, by PID. Needs root (Apply over varlink
is refused to other uids).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
IFACE = "org.rtpart.Manager"
PROFILE = "realtime-virtual-host"
KNOB_FILE = "proc/sys/vm/swappiness"
GOAL_LATENCY_MS = 10
GOAL_RSS_KIB = 3 * 1024
GOAL_NEW_IRQ_MS = 100


class Varlink:
    def __init__(self, path, timeout=30):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""

    def send(self, method, parameters=None, more=False):
        msg = {"method": method, "parameters": parameters or {}}
        if more:
            msg["more"] = True
        self.sock.sendall(json.dumps(msg).encode() + b"\0")

    def recv(self, timeout=None):
        self.sock.settimeout(timeout)
        while b"\0" not in self.buf:
            data = self.sock.recv(1 << 20)
            if not data:
                return None
            self.buf += data
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method, parameters=None):
        self.send(method, parameters)
        r = self.recv(timeout=120)
        if r is None or "error" in r:
            sys.exit(f"bench: {method} answered {r}")
        return r["parameters"]

    def close(self):
        self.sock.close()


def unit_environment():
    """The Environment= assignments of the service unit, as systemd would pass them."""
    env = {}
    with open(os.path.join(SRC, "systemd", "rtpartd.service.in")) as f:
        for ln in f:
            if ln.startswith("Environment="):
                for assignment in ln[len("Environment="):].split():
                    key, _, value = assignment.strip('"').partition("=")
                    env[key] = value
    return env


DAEMON_ENV = dict(os.environ)


class Daemon:
    def __init__(self, exe, root, sock, log, args=(), ready_s=60):
        self.sock = sock
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([exe, "--root", root, "--no-dbus", "--varlink-socket", sock] + list(args),
                                     stdout=log, stderr=subprocess.STDOUT, env=DAEMON_ENV)
        # Ready: the socket answers a call (it listens before the start-up work, and answers after).
        end = time.monotonic() + ready_s
        while True:
            if self.proc.poll() is not None:
                sys.exit(f"bench: rtpartd exited with {self.proc.returncode}; see {log.name}")
            if time.monotonic() > end:
                self.stop()
                sys.exit(f"bench: rtpartd did not answer within {ready_s} s")
            try:
                c = Varlink(sock, timeout=60)
                c.send("org.varlink.service.GetInfo")
                r = c.recv(timeout=60)
                c.close()
                if r and "parameters" in r:
                    break
            except OSError:
                time.sleep(0.0005)
        self.ready_ms = (time.perf_counter() - t0) * 1000

    def status(self, field):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # our own child, by PID
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# Kinds of mapping, as the RSS breakdown names them.
RSS_CLASSES = ("heap", "anonymous mmaps", "stack", "rtpartd binary", "libc + ld.so", "other libraries", "kernel (vdso)")


def rss_class(name, exe):
    if name == "[heap]":
        return "heap"
    if name == "[stack]":
        return "stack"
    if name in ("", "[anon]") or name.startswith("[anon:"):
        return "anonymous mmaps"
    if name.startswith("["):
        return "kernel (vdso)"
    if os.path.realpath(name) == os.path.realpath(exe):
        return "rtpartd binary"
    base = os.path.basename(name)
    if base.startswith(("libc.so", "ld-linux")):
        return "libc + ld.so"
    return "other libraries"


def smaps(pid, exe):
    """{class: {Rss, Pss, Private_Dirty, Private_Clean, Shared_Clean}} and the same per library, in KiB."""
    fields = ("Rss", "Pss", "Private_Dirty", "Private_Clean", "Shared_Clean")
    by_class, by_lib, cur = {}, {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for ln in f:
            parts = ln.split()
            if not parts[0].endswith(":"):
                name = parts[5] if len(parts) > 5 else ""
                cls = rss_class(name, exe)
                cur = [by_class.setdefault(cls, dict.fromkeys(fields, 0))]
                if cls in ("other libraries", "libc + ld.so"):
                    cur.append(by_lib.setdefault(os.path.basename(name), dict.fromkeys(fields, 0)))
            elif parts[0][:-1] in fields:
                for c in cur:
                    c[parts[0][:-1]] += int(parts[1])
    return by_class, by_lib


def p99(values):
    return statistics.quantiles(values, n=100)[98] if len(values) >= 2 else values[0]


def line(name, value, unit, goal=None, lower_is_better=True, extra=""):
    verdict = ""
    if goal is not None:
        ok = value <= goal if lower_is_better else value >= goal
        ratio = f", {value / goal:.2f}x the goal" if goal else ""
        verdict = f"  (goal <= {goal:g}{' ' + unit if unit else ''}: {'met' if ok else 'MISSED'}{ratio})"
    print(f"{name:52s} {value:10.2f} {unit:4s}{extra}{verdict}", flush=True)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def drain(w, seconds):
    """Events arriving within `seconds` (the stream stays open)."""
    events = []
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return events
        try:
            ev = w.recv(timeout=left)
        except socket.timeout:
            return events
        if ev is None:
            sys.exit("bench: the Watch stream closed")
        events.append(ev["parameters"])


def measure_events(exe, root, sock, log, debounce, writes, idle_s, new_irqs):
    d = Daemon(exe, root, sock, log, ["--debounce", str(debounce)])
    res = {"debounce_ms": debounce}
    try:
        w = Varlink(sock)
        w.send(IFACE + ".Watch", more=True)
        first = w.recv(timeout=10)
        assert first and first["parameters"]["event"] == "status", first
        knob = os.path.join(root, KNOB_FILE)

        # Latency: each write a new value, so each is new drift; the event names it.
        lat = []
        for i in range(writes + 5):
            value = str(20 + i % 150 + (i // 150) * 1000)
            t0 = time.perf_counter()
            write(knob, value + "\n")
            while True:
                ev = w.recv(timeout=5)
                if ev is None:
                    sys.exit("bench: the Watch stream closed")
                p = ev["parameters"]
                if p["event"] == "drift" and any(x["knob"] == "sysctl/vm.swappiness" and x["actual"] == value
                                                  for x in p["drift"]):
                    break
            if i >= 5:  # the first few warm the page cache and the allocator
                lat.append((time.perf_counter() - t0) * 1000)
        res["latency_median_ms"] = statistics.median(lat)
        res["latency_p99_ms"] = p99(lat)
        res["latency_min_ms"] = min(lat)

        # Coalescing: a burst of 10 writes to one file; a burst over every IRQ affinity file.
        per_burst = []
        for b in range(20):
            for j in range(10):
                write(knob, f"{3000 + b * 10 + j}\n")
            per_burst.append(len(drain(w, 0.2 + debounce / 1000)))
        res["events_per_10_writes"] = statistics.mean(per_burst)
        irq_files = sorted(f for f in (os.path.join(root, "proc", "irq", n, "smp_affinity_list")
                                       for n in os.listdir(os.path.join(root, "proc", "irq")) if n.isdigit())
                           if os.path.exists(f))
        per_burst, knobs_seen = [], []
        for b in range(10):
            for f in irq_files:
                write(f, "0-%d\n" % (1 + b % 2))
            evs = drain(w, 0.3 + debounce / 1000)
            per_burst.append(len(evs))
            knobs_seen.append(sum(len(e["drift"]) for e in evs))
        res["irq_files"] = len(irq_files)
        res["events_per_irq_burst"] = statistics.mean(per_burst)

        # Idle: nothing changes; the stream stays open. The daemon counts its safety-timer ticks;
        # asking it is a wake-up too, so the counts are read outside the window.
        drain(w, 0.5)
        c = Varlink(sock)
        s0 = c.call(IFACE + ".Status")["daemon"]
        c.close()
        drain(w, 0.2)
        c0 = d.status("voluntary_ctxt_switches")
        time.sleep(idle_s)
        c1 = d.status("voluntary_ctxt_switches")
        c = Varlink(sock)
        s1 = c.call(IFACE + ".Status")["daemon"]
        c.close()
        res["idle_wakeups"] = c1 - c0
        res["idle_ticks"] = s1.get("safety_checks", 0) - s0.get("safety_checks", 0)
        res["idle_wakeups_between_ticks"] = max(0, res["idle_wakeups"] - res["idle_ticks"])
        res["interval_s"] = s0.get("interval_s")
        res["idle_seconds"] = idle_s

        # A new IRQ (its /proc/interrupts line, then /proc/irq/N, as request_irq() makes them)
        # → its affinity written: placed from the event, not the safety check.
        irq_dir = os.path.join(root, "proc", "irq")
        template = min((n for n in os.listdir(irq_dir) if n.isdigit()), key=int)
        housekeeping = None
        placed = []
        for i in range(new_irqs + 3):
            n = 4000 + i + debounce * 100
            with open(os.path.join(root, "proc", "interrupts"), "a") as f:
                f.write(f"\n {n}:" + "          0" * 4 + f"   PCI-MSI {n}-edge      bench{n}")
            sys_irq = os.path.join(root, "sys", "kernel", "irq")
            if os.path.isdir(os.path.join(sys_irq, template)):  # the handler shows there too
                shutil.copytree(os.path.join(sys_irq, template), os.path.join(sys_irq, str(n)))
                write(os.path.join(sys_irq, str(n), "actions"), f"bench{n}\n")
            t0 = time.perf_counter()
            shutil.copytree(os.path.join(irq_dir, template), os.path.join(irq_dir, str(n)))
            write(os.path.join(irq_dir, str(n), "smp_affinity_list"), "0-999\n")
            f = os.path.join(irq_dir, str(n), "smp_affinity_list")
            end = time.monotonic() + 10
            while time.monotonic() < end:
                with open(f) as fh:
                    v = fh.read().strip()
                if v != "0-999":
                    break
                time.sleep(0.0005)
            else:
                sys.exit(f"bench: new IRQ {n} was not placed within 10 s")
            housekeeping = v
            if i >= 3:
                placed.append((time.perf_counter() - t0) * 1000)
        res["new_irq_median_ms"] = statistics.median(placed)
        res["new_irq_max_ms"] = max(placed)
        res["new_irqs"] = len(placed)
        res["new_irq_affinity"] = housekeeping
        w.close()
    finally:
        d.stop()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--debounce", default="5,20", help="debounce values to compare, in ms (first: the default)")
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--idle", type=float, default=60)
    ap.add_argument("--starts", type=int, default=11)
    ap.add_argument("--new-irqs", type=int, default=20, help="new IRQs made, one at a time, per debounce value")
    ap.add_argument("--rss-runs", type=int, default=5)
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--quick", action="store_true", help="--idle 10 --writes 100 --starts 5 --rss-runs 3, one debounce")
    ap.add_argument("--no-unit-env", action="store_true", help="run rtpartd without the unit's Environment=")
    args = ap.parse_args()
    unit_env = {} if args.no_unit_env else unit_environment()
    DAEMON_ENV.update(unit_env)
    if args.quick:
        args.idle, args.writes, args.starts, args.rss_runs = 10, 100, 5, 3
        args.debounce = args.debounce.split(",")[0]
    if args.writes < 100:
        sys.exit("bench: --writes takes 100 or more (the p99 of fewer says little)")

    exe = os.path.join(args.build, "tests", "sim", "rtpartd")  # the sim build, for fake hosts
    if not os.access(exe, os.X_OK):
        sys.exit(f"bench: {exe} not found; build first (ninja -C build)")
    if os.geteuid() != 0:
        sys.exit("bench: Apply over varlink needs uid 0; run as root")
    debounces = [int(x) for x in args.debounce.split(",") if x]

    tmp = tempfile.mkdtemp(prefix="rtpart-bench-daemon-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    out = {"host": "intel-2s", "profile": PROFILE, "starts": {}, "events": []}
    try:
        root = os.path.join(tmp, "root")
        shutil.copytree(os.path.join(args.build, "tests", "fixtures", "hosts", "intel-2s"), root, symlinks=True)
        pdir = os.path.join(root, "usr", "share", "rtpart", "profiles")
        os.makedirs(pdir, exist_ok=True)
        for f in os.listdir(os.path.join(SRC, "profiles")):
            if f.endswith(".json"):
                shutil.copy(os.path.join(SRC, "profiles", f), pdir)
        sock = os.path.join(tmp, "rtpartd.sock")
        log = open(os.path.join(tmp, "rtpartd.log"), "w")
        print(f"rtpartd on a copy of intel-2s in {tmp}, profile {PROFILE}", flush=True)
        print("environment from systemd/rtpartd.service.in: " +
              (" ".join(f"{k}={v}" for k, v in unit_env.items()) or "none"), flush=True)
        out["unit_environment"] = unit_env

        def starts(label):
            times = []
            for i in range(args.starts + 1):
                d = Daemon(exe, root, sock, log)
                d.stop()
                if i:
                    times.append(d.ready_ms)
            med = statistics.median(times)
            line(f"start to READY, {label}", med, "ms", extra=f"  (min {min(times):.2f}, max {max(times):.2f})")
            out["starts"][label] = {"median_ms": med, "min_ms": min(times), "max_ms": max(times)}
            return med

        empty = starts("empty journal")
        runs = []
        for i in range(args.rss_runs):
            d = Daemon(exe, root, sock, log)
            c = Varlink(sock)
            a = c.call(IFACE + ".Apply", {"profile": PROFILE})
            # The answer goes out before the call's own clean-up (the heap is given back after it,
            # in the same loop iteration): one more round trip, and that is done.
            c.call("org.varlink.service.GetInfo")
            by_class, by_lib = smaps(d.proc.pid, exe)
            st_files = c.call(IFACE + ".Status")["daemon"]["watched_files"]
            if i < args.rss_runs - 1:
                c.call(IFACE + ".Revert")  # the last run leaves it applied, for what follows
            c.close()
            d.stop()
            total = {k: sum(v[k] for v in by_class.values()) for k in ("Rss", "Pss", "Private_Dirty", "Shared_Clean")}
            runs.append((total["Rss"], total, by_class, by_lib, a["changed"], st_files))
        runs.sort(key=lambda r: r[0])
        rss, total, by_class, by_lib, changed, st_files = runs[len(runs) // 2]
        line("RSS after apply (smaps, median)", rss, "KiB", GOAL_RSS_KIB,
             extra=f"  ({changed} knobs written, {st_files} files watched; {args.rss_runs} runs, "
                   f"min {runs[0][0]}, max {runs[-1][0]})")
        print(f"{'  PSS / Private_Dirty / Shared_Clean':52s} {total['Pss']:10.2f} KiB / {total['Private_Dirty']} KiB / "
              f"{total['Shared_Clean']} KiB", flush=True)
        print(f"  {'by mapping (KiB)':34s} {'Rss':>7s} {'Pss':>7s} {'PrivDirty':>9s} {'PrivClean':>9s} {'ShClean':>7s}")
        for cls in RSS_CLASSES:
            v = by_class.get(cls)
            if v:
                print(f"  {cls:34s} {v['Rss']:7d} {v['Pss']:7d} {v['Private_Dirty']:9d} {v['Private_Clean']:9d} "
                      f"{v['Shared_Clean']:7d}", flush=True)
        for lib, v in sorted(by_lib.items(), key=lambda x: -x[1]["Rss"]):
            if v["Rss"]:
                print(f"    {lib:32s} {v['Rss']:7d} {v['Pss']:7d} {v['Private_Dirty']:9d} {v['Private_Clean']:9d} "
                      f"{v['Shared_Clean']:7d}", flush=True)
        out["rss_kib"], out["pss_kib"] = rss, total["Pss"]
        out["rss_runs_kib"] = [r[0] for r in runs]
        out["rss_by_mapping_kib"], out["rss_by_library_kib"] = by_class, by_lib
        applied = starts("profile applied (re-applied at start)")
        print(f"{'  ratio applied / empty':52s} {applied / empty:10.2f} x", flush=True)

        for deb in debounces:
            print(f"-- debounce {deb} ms", flush=True)
            r = measure_events(exe, root, sock, log, deb, args.writes, args.idle, args.new_irqs)
            out["events"].append(r)
            line("drift event latency, median", r["latency_median_ms"], "ms", GOAL_LATENCY_MS,
                 extra=f"  (min {r['latency_min_ms']:.2f}, {args.writes} writes)")
            line("drift event latency, p99", r["latency_p99_ms"], "ms")
            line("events per burst of 10 writes to one file", r["events_per_10_writes"], "")
            line(f"events per burst over {r['irq_files']} IRQ affinity files", r["events_per_irq_burst"], "")
            line(f"wake-ups (voluntary ctx switches) idle for {args.idle:g} s", r["idle_wakeups"], "",
                 extra=f"  ({r['idle_ticks']} safety-timer tick(s), interval {r['interval_s']} s)")
            line("  of which between safety-timer ticks", r["idle_wakeups_between_ticks"], "", 0)
            line("new IRQ placed (proc/irq/N made → affinity written), median", r["new_irq_median_ms"], "ms",
                 GOAL_NEW_IRQ_MS, extra=f"  (max {r['new_irq_max_ms']:.2f}, {r['new_irqs']} IRQs, "
                                       f"{r['new_irq_median_ms'] / r['latency_median_ms']:.1f} x the drift event latency)")

        if len(out["events"]) > 1:
            base = out["events"][-1]
            for r in out["events"][:-1]:
                print(f"-- ratios, debounce {r['debounce_ms']} ms / {base['debounce_ms']} ms", flush=True)
                for k in ("latency_median_ms", "latency_p99_ms", "events_per_10_writes", "events_per_irq_burst"):
                    if base[k]:
                        print(f"{'  ' + k:52s} {r[k] / base[k]:10.2f} x", flush=True)

        c = None
        d = Daemon(exe, root, sock, log)
        c = Varlink(sock)
        c.call(IFACE + ".Revert")
        c.close()
        d.stop()
        log.close()
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
