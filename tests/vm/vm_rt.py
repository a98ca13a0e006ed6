#!/usr/bin/env python3
"""audit and check latency on Debian's PREEMPT_RT kernel (suite vm).

Boots linux-image-rt-amd64 under qemu (TCG, 4 CPUs) with a busy-box initramfs holding the
rtpartctl under test, on the command line `isolcpus=managed_irq,domain,2-3 nohz_full=2-3
rcu_nocbs=2-3 irqaffinity=0-1`. In the guest:

  1. check latency with tracefs not mounted: timerlat runs on CPUs 2-3 (the kernel's isolated
     ones), every CPU has IRQ and thread samples, and tracefs is unmounted again after;
  2. with tracefs mounted and its osnoise settings changed by hand: check latency leaves every
     file it touched as it was;
  3. audit while the serial port's IRQ is moved onto CPU 2 and written to, and a busy loop is
     pinned to CPU 3: CPU 2 names that IRQ, CPU 3 names the loop, both are noisy, and the osnoise
     tracer's figures are there for both (its own threads not listed).
  4. check hardware --json: hwlat on CPUs 2-3 and every setting judged, no SMI count in a VM (said
     why); check --html: the file holds the hardware, audit and latency sections and their SVG
     charts and names nothing outside itself (2 s windows each); check hardware interrupted by SIGINT
     puts every file hwlat sets back, and killed with -9 leaves hwlat on for the next run to put back.

Latency figures under TCG mean nothing: printed, never checked. The kernel package is downloaded
(apt-get download, Debian's registry) into /var/cache/rtpart-test/rt once and only its vmlinuz
is unpacked; nothing is installed. Exits 77 with the reason when qemu, busybox or the package is
not to be had. $RTPART_VM_RT_KERNEL names a kernel image to use instead.
"""
import base64
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vm_cpuset import GUEST_BEGIN, GUEST_END, guest_base, report, skip  # noqa: E402

CTL = os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "daemon", "ctl", "rtpartctl")
CACHE = "/var/cache/rtpart-test/rt"
TIMEOUT = 240

INIT = GUEST_BEGIN + r"""T=/sys/kernel/tracing
r() { echo "@@R $1=$2"; }
j() { echo "@@J $1=$(tr -d '\n' < $2)"; }
echo "@@BEGIN"
r kernel "$(uname -r)"
r realtime "$(cat /sys/kernel/realtime 2>/dev/null)"
r isolated "$(cat /sys/devices/system/cpu/isolated)"
r nohz_full "$(cat /sys/devices/system/cpu/nohz_full)"
r tracefs_before "$(grep -c tracefs /proc/mounts)"
rtpartctl --json check latency --seconds 3 > /tmp/lat.json 2>/tmp/lat.err; r lat_rc $?
j lat /tmp/lat.json
sed 's/^/@@ERR /' /tmp/lat.err
r tracefs_after "$(grep -c tracefs /proc/mounts)"

mount -t tracefs nodev $T
echo 0-1 > $T/osnoise/cpus
echo 700 > $T/osnoise/timerlat_period_us
echo 0 > $T/tracing_on
snap() { for f in current_tracer tracing_on osnoise/cpus osnoise/timerlat_period_us osnoise/stop_tracing_us osnoise/stop_tracing_total_us; do echo "$f: $(cat $T/$f)"; done | md5sum | cut -c1-32; }
r tracefs_sum_before "$(snap)"
rtpartctl check latency --seconds 2 > /tmp/lat2.txt 2>&1; r lat2_rc $?
sed 's/^/@@LAT /' /tmp/lat2.txt
r tracefs_sum_after "$(snap)"
r tracer_after "$(cat $T/current_tracer)"
umount $T

echo 2 > /proc/irq/4/smp_affinity_list; r irq_move_rc $?
r irq4_effective "$(cat /proc/irq/4/effective_affinity_list 2>/dev/null)"
taskset -c 3 sh -c 'while :; do :; done' &
B=$!
r busy_pid $B
( i=0; while [ $i -lt 400 ]; do echo "noise $i" > /dev/ttyS0; i=$((i+1)); sleep 0.01; done ) &
W=$!
rtpartctl --json audit --seconds 3 > /tmp/audit.json 2>/tmp/audit.err; r audit_rc $?
kill $B $W 2>/dev/null
# The writer must be gone before the report goes to the same serial port: a "noise" line it wrote
# in the middle of a long line would break that line's JSON.
wait $B $W 2>/dev/null
j audit /tmp/audit.json
sed 's/^/@@ERR /' /tmp/audit.err

rtpartctl --json check hardware --seconds 2 > /tmp/hw.json 2>/tmp/hw.err; r hw_rc $?
j hw /tmp/hw.json
sed 's/^/@@ERR /' /tmp/hw.err
rtpartctl check --seconds 2 --html /tmp/check.html > /tmp/check.txt 2>&1; r check_rc $?
sed 's/^/@@CHECK /' /tmp/check.txt
r html "$(base64 -w 0 /tmp/check.html)"
r tracefs_end "$(grep -c tracefs /proc/mounts)"

mount -t tracefs nodev $T
hsnap() { for f in current_tracer tracing_on tracing_cpumask tracing_thresh tracing_max_latency hwlat_detector/width hwlat_detector/window hwlat_detector/mode; do echo "$f: $(cat $T/$f)"; done | md5sum | cut -c1-32; }
started() { i=0; while [ "$(cat $T/current_tracer)" != hwlat ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; sleep 1; }
r hw_sum_before "$(hsnap)"
rtpartctl check hardware --seconds 60 > /tmp/int.txt 2>&1 &
P=$!; started; kill -INT $P; wait $P; r int_rc $?
sed 's/^/@@INT /' /tmp/int.txt
r hw_sum_int "$(hsnap)"
rtpartctl check hardware --seconds 60 > /dev/null 2>&1 &
P=$!; started; kill -9 $P; wait $P
r tracer_killed "$(cat $T/current_tracer)"
rtpartctl check hardware --seconds 1 > /tmp/next.txt 2>&1; r next_rc $?
sed 's/^/@@NEXT /' /tmp/next.txt
r hw_sum_next "$(hsnap)"
umount $T
""" + GUEST_END


def rt_kernel():
    k = os.environ.get("RTPART_VM_RT_KERNEL")
    if k:
        return k if os.access(k, os.R_OK) else None
    found = sorted(glob.glob(os.path.join(CACHE, "boot", "vmlinuz-*-rt-amd64")))
    if found:
        return found[-1]
    os.makedirs(CACHE, exist_ok=True)
    p = subprocess.run(["apt-cache", "depends", "linux-image-rt-amd64"], capture_output=True, text=True)
    pkg = next((w.split()[1] for w in p.stdout.splitlines() if "Depends: linux-image-" in w), None)
    if not pkg:
        return None
    if not glob.glob(os.path.join(CACHE, pkg + "_*.deb")):
        d = subprocess.run(["apt-get", "download", pkg], cwd=CACHE, capture_output=True, text=True)
        if d.returncode != 0:
            print(d.stderr)
            return None
    deb = sorted(glob.glob(os.path.join(CACHE, pkg + "_*.deb")))[-1]
    tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", CACHE, "--wildcards", "./boot/vmlinuz-*"], stdin=tar.stdout, check=True)
    tar.wait()
    found = sorted(glob.glob(os.path.join(CACHE, "boot", "vmlinuz-*-rt-amd64")))
    return found[-1] if found else None


def build_initramfs(path, busybox):
    c = guest_base(busybox)
    c.file("init", INIT.encode())
    with open(path, "wb") as f:
        f.write(c.finish())


def main():
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        skip("qemu-system-x86_64 is not installed (Debian package qemu-system-x86)")
    busybox = shutil.which("busybox") or "/bin/busybox"
    if not os.path.exists(busybox):
        skip("busybox is not installed (Debian package busybox-static)")
    if not os.access(CTL, os.X_OK):
        skip(f"{CTL} is not built")
    kernel = rt_kernel()
    if not kernel:
        skip("no PREEMPT_RT kernel: linux-image-rt-amd64 could not be downloaded from Debian's registry")

    tmp = tempfile.mkdtemp(prefix="rtpart-vm-rt-")
    try:
        initrd = os.path.join(tmp, "initrd.cpio")
        build_initramfs(initrd, busybox)
        cmd = [qemu, "-accel", "tcg", "-cpu", "max", "-smp", "4", "-m", "768",
               "-kernel", kernel, "-initrd", initrd,
               "-append", "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init "
                          "isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1",
               "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot", "-nodefaults"]
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
            out = p.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            print((e.stdout or b"").decode(errors="replace")[-6000:])
            print(f"FAIL: the guest did not power off within {TIMEOUT} s")
            return 1
        elapsed = time.monotonic() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    body = out.split("@@BEGIN", 1)[-1].split("@@END", 1)[0] if "@@BEGIN" in out else ""
    print(f"guest ran {elapsed:.1f} s on {os.path.basename(kernel)}")
    res, docs = {}, {}
    for line in body.splitlines():
        line = line.rstrip("\r")
        if line.startswith("@@R "):
            k, _, v = line[4:].partition("=")
            res[k] = v
            print(line)
        elif line.startswith("@@J "):
            k, _, v = line[4:].partition("=")
            try:
                docs[k] = json.loads(v)
            except json.JSONDecodeError as e:
                print(f"{k}: not JSON ({e}): {v[:400]!r} ... around the error: {v[max(0, e.pos - 200):e.pos + 200]!r}")
        elif line.startswith("@@"):
            print(line)
    if "@@END" not in out:
        print(out[-4000:])
        print("FAIL: no @@END marker from the guest")
        return 1

    lat, audit = docs.get("lat", {}), docs.get("audit", {})
    for c in lat.get("cpu", []):
        t, i = c["thread"], c["irq"] or {}
        print(f"CPU {c['cpu']}: timerlat {t['samples']} samples, irq max {i.get('max_us')} µs, "
              f"thread avg {t['avg_us']:.1f} max {t['max_us']:.1f} µs (TCG: not a measurement)")
    cpus = {c["cpu"]: c for c in audit.get("cpu", [])}
    c2, c3 = cpus.get(2, {}), cpus.get(3, {})
    irq4 = [e for e in c2.get("interrupts", []) if e.get("irq") == 4]
    busy = [t for t in c3.get("threads", []) if str(t.get("pid")) == res.get("busy_pid")]
    for n, c in sorted(cpus.items()):
        print(f"audit CPU {n}: {c['verdict']}; interrupts " +
              ", ".join(f"{e.get('irq', e.get('row'))}×{e['count']}" for e in c["interrupts"]) +
              f"; tick {c['tick']['rate']:.1f}/s; threads " + ", ".join(t["comm"] for t in c["threads"]) +
              (f"; osnoise {c['osnoise']['available_percent']:.2f}% available, max single "
               f"{c['osnoise']['max_single_us']} µs" if c.get("osnoise") else ""))

    hw = docs.get("hw", {})
    html = base64.b64decode(res.get("html", "")).decode(errors="replace")
    print(f"check hardware: {hw.get('verdict')}; hwlat {hw.get('hwlat')}; smi {hw.get('smi', {}).get('reason')}")
    print(f"check --html: {len(html)} bytes (exit {res.get('check_rc')}; TCG figures are no measurement)")
    checks = [
        ("the guest runs the PREEMPT_RT kernel", "rt" in res.get("kernel", "") and res.get("realtime") == "1"),
        ("the kernel isolates CPUs 2-3", res.get("isolated") == "2-3" and res.get("nohz_full") == "2-3"),
        ("check latency exits 0", res.get("lat_rc") == "0"),
        ("with timerlat, on the kernel's isolated CPUs",
         lat.get("tool") == "timerlat" and lat.get("cpus") == "2-3" and "kernel's isolated" in lat.get("source", "")),
        ("every CPU has IRQ and thread samples",
         len(lat.get("cpu", [])) == 2 and all(c["thread"]["samples"] > 0 and c["irq"]["samples"] > 0
                                              for c in lat.get("cpu", []))),
        ("tracefs, mounted for the run, is unmounted after it",
         res.get("tracefs_before") == "0" and res.get("tracefs_after") == "0"),
        ("a second run exits 0", res.get("lat2_rc") == "0"),
        ("and leaves tracefs's files as they were",
         res.get("tracefs_sum_before") and res.get("tracefs_sum_before") == res.get("tracefs_sum_after")
         and res.get("tracer_after") == "nop"),
        ("the serial IRQ moves onto CPU 2", res.get("irq_move_rc") == "0"),
        ("audit exits 3 (noisy) on CPUs 2-3", res.get("audit_rc") == "3" and audit.get("cpus") == "2-3"),
        ("audit names IRQ 4 on CPU 2", len(irq4) == 1 and irq4[0]["count"] > 0),
        ("audit names the busy loop on CPU 3", len(busy) == 1 and not busy[0]["kernel"]),
        ("audit ran the osnoise tracer: figures for CPUs 2 and 3",
         audit.get("osnoise", {}).get("ran") is True and
         all((c.get("osnoise") or {}).get("periods", 0) > 0 for c in (c2, c3))),
        ("and left none of its threads in the lists",
         not any(t["comm"].startswith("osnoise/") for c in (c2, c3) for t in c.get("threads", []))),
        ("check hardware ran hwlat on CPUs 2-3, every setting judged",
         res.get("hw_rc") in ("0", "3") and hw.get("cpus") == "2-3" and hw.get("hwlat", {}).get("ran") is True and
         sorted(c["cpu"] for c in hw["hwlat"]["cpu"]) == [2, 3] and len(hw.get("settings", [])) == 13 and
         all(s["verdict"] in ("ok", "warn", "bad") for s in hw["settings"])),
        ("and said why there is no SMI count in a virtual machine",
         hw.get("smi", {}).get("available") is False and bool(hw["smi"].get("reason"))),
        ("check --html: exit 0 or 3, the three sections and their charts",
         res.get("check_rc") in ("0", "3") and all(f'<h2 id="{x}">' in html for x in ("hardware", "audit", "latency"))
         and html.count("<svg ") >= 3),
        ("and the file names nothing outside itself",
         html.startswith("<!DOCTYPE html>") and
         not re.search(r"(?i)https?:|<script|<link|<img|<iframe|src=|href=|url\(|@import", html)),
        ("tracefs unmounted after check", res.get("tracefs_end") == "0"),
        ("check hardware interrupted by SIGINT: exit 1, every file hwlat sets as it was",
         res.get("int_rc") == "1" and res.get("hw_sum_int") == res.get("hw_sum_before")),
        ("killed with -9 it left hwlat on, and the next run put every file back",
         res.get("tracer_killed") == "hwlat" and res.get("hw_sum_next") == res.get("hw_sum_before")),
    ]
    return report(checks)


if __name__ == "__main__":
    sys.exit(main())
