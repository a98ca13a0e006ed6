#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""rtpartctl check hardware on this machine's own kernel, as root, with the shipped rtpartctl.

  host_check.py settings   the checklist: every setting with a verdict, and what it says agrees
                           with what the kernel shows (SMT, the NMI watchdog, THP, PREEMPT_RT,
                           the clocksource, kvm.nx_huge_pages); the SMI count, or the reason it
                           is not available (an AMD CPU, a virtual machine, no msr module); the
                           exit status the verdict gives; tracefs as it was (mounted or not, and
                           every file hwlat sets, byte for byte).
  host_check.py hwlat      hwlat's figures for every CPU checked, where the kernel has the tracer;
                           77 with the kernel's reason where it has not.

Run by meson (suite host) with RTPARTCTL (the shipped rtpartctl); 77 without root.
"""
import json
import os
import subprocess
import sys

CTL = os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "daemon",
                                                             "ctl", "rtpartctl")
SETTINGS = ["smt", "idle", "turbo", "pstate", "governor", "tsc", "clocksource", "tsc_watchdog", "nmi_watchdog",
            "irqbalance", "thp", "preempt", "nx_huge_pages"]
TRACEFS_FILES = ["current_tracer", "tracing_on", "tracing_cpumask", "tracing_thresh", "tracing_max_latency",
                 "hwlat_detector/width", "hwlat_detector/window", "hwlat_detector/mode"]


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def tracefs_state():
    """Whether tracefs is mounted, and every file a hwlat run sets where it is."""
    with open("/proc/mounts") as f:
        mounts = sorted(line.split()[1] for line in f if line.split()[2] == "tracefs")
    files = {}
    for d in mounts:
        for rel in TRACEFS_FILES:
            files[f"{d}/{rel}"] = read(f"{d}/{rel}")
    return mounts, files


def run():
    before = tracefs_state()
    p = subprocess.run([CTL, "--json", "check", "hardware", "--seconds", "2"], capture_output=True, text=True,
                       timeout=120)
    after = tracefs_state()
    print(p.stderr, end="")
    return p, json.loads(p.stdout) if p.stdout else None, before, after


def check_settings(p, doc, before, after):
    checks = []
    settings = {s["id"]: s for s in doc["settings"]}
    flags = next((line.split(":", 1)[1].split() for line in open("/proc/cpuinfo") if line.startswith("flags")), [])
    vendor = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("vendor_id")), "")
    for s in doc["settings"]:
        print(f"{s['id']:14} {s['verdict']:5} {s['found']}" + (f"\n{'':20}→ {s['fix']}" if s.get("fix") else ""))
    print("hwlat:", doc["hwlat"])
    print("smi:", {k: v for k, v in doc["smi"].items() if k != "cpu"})

    smt = read("/sys/devices/system/cpu/smt/active")
    nmi = read("/proc/sys/kernel/nmi_watchdog")
    thp = read("/sys/kernel/mm/transparent_hugepage/enabled")
    realtime = read("/sys/kernel/realtime") == "1" or "PREEMPT_RT" in os.uname().version
    source = read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    nx = read("/sys/module/kvm/parameters/nx_huge_pages")
    checks += [
        ("every setting of the checklist, in order", [s["id"] for s in doc["settings"]] == SETTINGS),
        ("each with ok, warn or bad, and a fix unless ok",
         all(s["verdict"] in ("ok", "warn", "bad") and (s.get("fix") is None) == (s["verdict"] == "ok")
             for s in doc["settings"])),
        ("the kernel is this one", doc["host"]["kernel"] == os.uname().release),
        ("SMT as smt/active says", smt is None or (settings["smt"]["verdict"] == "warn") == (smt == "1")),
        ("the NMI watchdog as kernel.nmi_watchdog says",
         nmi is None or (settings["nmi_watchdog"]["verdict"] == "warn") == (nmi != "0")),
        ("THP as its enabled file says", thp is None or f"[{settings['thp']['found']}]" in thp),
        ("PREEMPT_RT or not", (settings["preempt"]["verdict"] == "ok") == realtime),
        ("the clocksource", source is None or settings["clocksource"]["found"] == source),
        ("kvm.nx_huge_pages", settings["nx_huge_pages"]["found"] == (nx if nx else "kvm is not loaded")),
        ("the virtual machine as /proc/cpuinfo says", doc["host"]["virtual"] == ("hypervisor" in flags)),
    ]
    smi = doc["smi"]
    if "hypervisor" in flags:
        checks.append(("no SMI count in a virtual machine, said", not smi["available"] and "virtual machine" in smi["reason"]))
    elif vendor != "GenuineIntel":
        checks.append(("no SMI count on a CPU that is not Intel's, said", not smi["available"] and "SMI counter" in smi["reason"]))
    else:
        checks.append(("an SMI count, or why not", smi["available"] or bool(smi["reason"])))
    bad = any(s["verdict"] == "bad" for s in doc["settings"])
    want = 3 if bad or doc["hwlat"].get("verdict") == "over" else 1 if not doc["hwlat"]["ran"] else 0
    checks += [
        ("the exit status the verdict gives", p.returncode == want and doc["verdict"] ==
         {3: "over", 1: "incomplete", 0: "within"}[want]),
        ("tracefs as it was: mounted or not, and every file hwlat sets", before == after),
    ]
    return checks


def check_hwlat(p, doc):
    hw = doc["hwlat"]
    if not hw["ran"]:
        print(f"SKIP: the hwlat part: {hw['reason']} (the settings checklist runs all the same: host-check-settings)")
        sys.exit(77)
    cpus = set()
    for part in doc["cpus"].split(","):
        a, _, b = part.partition("-")
        cpus.update(range(int(a), int(b or a) + 1))
    print("hwlat:", hw)
    return [
        ("hwlat ran its window", hw["seconds"] >= 1.5 and hw["threshold_us"] == 1 and hw["limit_us"] > 0),
        ("a line for every CPU checked", sorted(c["cpu"] for c in hw["cpu"]) == sorted(cpus)),
        ("the largest gap is a CPU's", hw["max_us"] == max([c["max_us"] for c in hw["cpu"]] + [0])),
    ]


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (the real kernel's tracefs and MSRs)")
        return 77
    if not os.access(CTL, os.X_OK):
        print(f"SKIP: {CTL} is not built")
        return 77
    p, doc, before, after = run()
    if doc is None:
        print(f"FAIL: no document (exit {p.returncode})")
        return 1
    checks = check_hwlat(p, doc) if sys.argv[1:] == ["hwlat"] else check_settings(p, doc, before, after)
    failed = [name for name, ok in checks if not ok]
    for name, ok in checks:
        print(f"{'ok' if ok else 'FAILED'}: {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
