#!/usr/bin/env python3
"""Huge pages per NUMA node on a real kernel, across a reboot (suite vm).

Boots a Debian kernel under qemu in TCG mode with two NUMA nodes (CPUs 0-1 and 2-3, each node
its own memory-backend-ram) and a busybox initramfs that holds the rtpartctl and rtpartd under
test, their shared libraries, a profile reserving 1G pages on the isolated CPUs' nodes and 2M
pages on every node, and etc/kernel/cmdline (the kernel-install bootloader configuration, whose
content is the guest's command line). Two boots:

  1. plan (each node's memory, the boot arguments), apply: the 2M pools are filled at runtime,
     the 1G pages are asked of the kernel at runtime and reserved by hugepagesz=1G
     hugepages=0:N,1:N (and default_hugepagesz=1G) in etc/kernel/cmdline; verify exits 4 (a
     reboot pending); the journal and etc/kernel/cmdline come back on the serial console (a tar,
     base64);
  2. the guest boots again with the command line rtpart wrote and that state: the 1G pools hold
     their pages from the boot arguments before anything runs, the 2M pools are empty (verify
     exits 3); rtpartd starts and applies the profile again as it does at every start, and verify
     exits 0; revert (rtpartd stopped) empties every pool and gives etc/kernel/cmdline back byte for
     byte.

Installs nothing: exits 77 (skip) with the reason when qemu-system-x86_64, a kernel image or
busybox is missing (Debian packages: qemu-system-x86, linux-image-amd64, busybox-static). Kernel:
$RTPART_VM_KERNEL or the newest readable /boot/vmlinuz-*.
"""
import base64
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm_cpuset  # noqa: E402
from vm_cpuset import GUEST_END, Cpio, shared_libs, skip  # noqa: E402

BUILD = os.environ.get("RTPART_BUILD_DIR", "build")
CTL = os.environ.get("RTPARTCTL") or os.path.join(BUILD, "daemon", "ctl", "rtpartctl")
DAEMON = os.environ.get("RTPARTD") or os.path.join(BUILD, "daemon", "rtpartd", "rtpartd")
TIMEOUT = 60  # seconds for one guest run; a boot is about 8 s under TCG

# Node 0 is 3 GiB below the PCI hole, node 1 1.5 GiB above 4 GiB: each has an aligned 1 GiB range
# the boot-time allocation finds free (the kernel and the nodes' struct pages lie elsewhere).
NODE_MB = (3072, 1536)
ONE_G = 1
TWO_M = 64
PROFILE = {
    "summary": "vm test: 1G pages on the isolated CPUs' nodes, 2M pages on every node",
    "hugepages": {
        "default_size": "1G",
        "pages": [{"size": "1G", "nodes": "isolated", "count": ONE_G}, {"size": "2M", "count": TWO_M}],
    },
}
# init_on_alloc=0: pages the kernel hands out are not zeroed, so the pools do not make qemu touch
# gigabytes of host memory; nokaslr: the kernel stays at 16 MiB, out of node 0's free 1 GiB range.
CMDLINE = "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init init_on_alloc=0 nokaslr"

COMMON = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /run
mkdir -p /var/lib/rtpart /tmp
N=/sys/devices/system/node
r() { echo "@@R $1=$2"; }
pools() {
    for n in 0 1; do for s in 2048 1048576; do
        r "$1_node${n}_${s}" "$(cat $N/node$n/hugepages/hugepages-${s}kB/nr_hugepages)"
    done; done
}
run() { name=$1; shift; "$@" > /tmp/$name.txt 2>&1; r ${name}_rc $?; sed "s/^/@@OUT $name: /" /tmp/$name.txt; r ${name}_uptime "$(cut -d' ' -f1 /proc/uptime)"; }
echo "@@BEGIN"
r kernel "$(uname -r)"
r proc_cmdline "$(cat /proc/cmdline)"
r nodes "$(cat $N/has_memory)"
for n in 0 1; do r "memtotal_node$n" "$(grep MemTotal $N/node$n/meminfo | tr -s ' ' | cut -d' ' -f4)"; done
"""

BOOT1 = COMMON + r"""
pools before
run plan rtpartctl --no-daemon plan /test.json
run apply rtpartctl --no-daemon apply /test.json
pools applied
run verify rtpartctl --no-daemon verify
r cmdline_file "$(cat /etc/kernel/cmdline)"
echo "@@TAR-BEGIN"
tar -cf - var/lib/rtpart etc/kernel | gzip -9 | base64
echo "@@TAR-END"
""" + GUEST_END

BOOT2 = COMMON + r"""
pools booted
run verify_booted rtpartctl --no-daemon verify
rtpartd --no-dbus --no-metrics > /tmp/rtpartd.txt 2>&1 &
D=$!
rc=1
for i in $(seq 1 60); do
    rtpartctl --no-daemon verify > /dev/null 2>&1 && { rc=0; break; }
    sleep 0.5
done
r daemon_settled $rc
pools daemon
run verify_daemon rtpartctl verify
kill $D; wait $D
sed "s/^/@@OUT rtpartd: /" /tmp/rtpartd.txt
run revert rtpartctl --no-daemon revert
pools reverted
r cmdline_file_reverted "$(cat /etc/kernel/cmdline)"
""" + GUEST_END


def find_kernel():
    """$RTPART_VM_KERNEL, else the newest /boot/vmlinuz-* that is not PREEMPT_RT (which boots
    twice as slowly under TCG), else the newest."""
    if os.environ.get("RTPART_VM_KERNEL"):
        return vm_cpuset.find_kernel()
    plain = [k for k in glob.glob("/boot/vmlinuz-*") if "-rt-" not in k and os.access(k, os.R_OK)]
    if plain:
        plain.sort(key=lambda p: [int(x) if x.isdigit() else x for x in re.split(r"[.-]", p)])
        return plain[-1]
    return vm_cpuset.find_kernel()


def build_initramfs(path, busybox, init, files):
    c = Cpio()
    for d in ("bin", "sbin", "proc", "sys", "dev", "tmp", "run", "etc/kernel", "var/lib/rtpart"):
        c.dir(d)
    with open(busybox, "rb") as f:
        c.file("bin/busybox", f.read())
    c.symlink("bin/sh", "busybox")
    for prog, name in ((CTL, "rtpartctl"), (DAEMON, "rtpartd")):
        with open(prog, "rb") as f:
            c.file("bin/" + name, f.read())
    for lib in sorted(set(shared_libs(busybox) + shared_libs(CTL) + shared_libs(DAEMON))):
        with open(os.path.realpath(lib), "rb") as f:
            c.file(lib, f.read())
    c.file("test.json", json.dumps(PROFILE).encode(), 0o644)
    for name, (data, mode) in sorted(files.items()):
        if data is None:
            c.dir(name)
        else:
            c.file(name, data, mode)
    c.file("init", init.encode())
    with open(path, "wb") as f:
        f.write(c.finish())


def boot(qemu, kernel, initrd, cmdline):
    """One guest run: its console between the markers, the elapsed seconds (None: it hung)."""
    mem = "-object memory-backend-ram,id=m0,size={}M -object memory-backend-ram,id=m1,size={}M".format(*NODE_MB)
    cmd = [qemu, "-accel", "tcg", "-cpu", "max", "-smp", "4", "-m", "%dM" % sum(NODE_MB), *mem.split(),
           "-numa", "node,nodeid=0,cpus=0-1,memdev=m0", "-numa", "node,nodeid=1,cpus=2-3,memdev=m1",
           "-kernel", kernel, "-initrd", initrd, "-append", cmdline,
           "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot", "-nodefaults"]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
        out = p.stdout.decode(errors="replace").replace("\r", "")
    except subprocess.TimeoutExpired as e:
        return (e.stdout or b"").decode(errors="replace"), None
    return out, time.monotonic() - t0


def results(out):
    body = out.split("@@BEGIN", 1)[-1].split("@@END", 1)[0] if "@@BEGIN" in out else ""
    res = {}
    for line in body.splitlines():
        if line.startswith("@@R "):
            k, _, v = line[4:].partition("=")
            res[k] = v
    return body, res


def guest_state(body):
    """The files the first boot sent back: {path: (bytes, mode)}, directories with None."""
    text = body.split("@@TAR-BEGIN", 1)[-1].split("@@TAR-END", 1)[0]
    data = base64.b64decode("".join(text.split()))
    files = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
        for m in t.getmembers():
            if m.isdir():
                files[m.name] = (None, 0)
            elif m.isfile():
                files[m.name] = (t.extractfile(m).read(), m.mode & 0o7777)
    return files


def show(body):
    for line in body.splitlines():
        if line.startswith("@@") and not line.startswith("@@TAR"):
            print(line)


def main():
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        skip("qemu-system-x86_64 is not installed (Debian package qemu-system-x86)")
    kernel = find_kernel()
    if not kernel:
        skip("no readable kernel image (/boot/vmlinuz-*; Debian package linux-image-amd64)")
    busybox = shutil.which("busybox") or "/bin/busybox"
    if not os.path.exists(busybox):
        skip("busybox is not installed (Debian package busybox-static)")
    for prog in (CTL, DAEMON):
        if not os.access(prog, os.X_OK):
            skip(f"{prog} is not built")

    tmp = tempfile.mkdtemp(prefix="rtpart-vm-")
    initrd = os.path.join(tmp, "initrd.cpio")

    def guest(n, init, files, cmdline):
        """Boot n with init and files in its initramfs: its console's body and results, or None."""
        build_initramfs(initrd, busybox, init, files)
        out, t = boot(qemu, kernel, initrd, cmdline)
        body, res = results(out)
        print(f"boot {n}: {t and round(t, 1)} s on {os.path.basename(kernel)}, command line: {cmdline}")
        show(body)
        if t is None or "@@END" not in out:
            print(out[-4000:])
            print(f"FAIL: boot {n} did not end")
            return None
        return body, res

    try:
        one = guest(1, BOOT1, {"etc/kernel/cmdline": ((CMDLINE + "\n").encode(), 0o644)}, CMDLINE)
        if not one:
            return 1
        body1, r1 = one
        state = guest_state(body1)
        two = guest(2, BOOT2, state, state.get("etc/kernel/cmdline", (b"", 0))[0].decode().strip())
        if not two:
            return 1
        body2, r2 = two
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    G, M = "1048576", "2048"
    args = "default_hugepagesz=1G hugepagesz=1G hugepages=0:%d,1:%d" % (ONE_G, ONE_G)
    checks = [
        ("two NUMA nodes with memory", r1.get("nodes") == "0-1"),
        ("plan exits 0 and shows each node's memory",
         r1.get("plan_rc") == "0" and "node 0 has" in body1 and "node 1 has" in body1),
        ("apply exits 0", r1.get("apply_rc") == "0"),
        ("the 2M pools are filled at runtime",
         all(r1.get(f"applied_node{n}_{M}") == str(TWO_M) for n in (0, 1))),
        ("the 1G pages are reserved by boot argument", r1.get("cmdline_file") == CMDLINE + " " + args),
        ("verify says a reboot is pending", r1.get("verify_rc") == "4" and "boot/hugepages" in body1),
        ("the second boot runs with rtpart's command line", r2.get("proc_cmdline") == CMDLINE + " " + args),
        ("the 1G pools hold their pages from the boot arguments",
         all(r2.get(f"booted_node{n}_{G}") == str(ONE_G) for n in (0, 1))),
        ("the reboot emptied the 2M pools: verify finds them drifted",
         all(r2.get(f"booted_node{n}_{M}") == "0" for n in (0, 1)) and r2.get("verify_booted_rc") == "3"),
        ("rtpartd fills them again when it starts", r2.get("daemon_settled") == "0"
         and all(r2.get(f"daemon_node{n}_{M}") == str(TWO_M) for n in (0, 1))),
        ("verify exits 0 after the reboot", r2.get("verify_daemon_rc") == "0"),
        ("revert exits 0", r2.get("revert_rc") == "0"),
        ("revert empties every pool",
         all(r2.get(f"reverted_node{n}_{s}") == "0" for n in (0, 1) for s in (M, G))),
        ("revert gives etc/kernel/cmdline back", r2.get("cmdline_file_reverted") == CMDLINE),
    ]
    runtime_1g = [r1.get(f"applied_node{n}_{G}") for n in (0, 1)]
    print(f"1G pages the kernel gave at runtime on nodes 0 and 1: {', '.join(map(str, runtime_1g))} of {ONE_G}")
    failed = [name for name, ok in checks if not ok]
    for name, ok in checks:
        print(f"{'ok' if ok else 'FAILED'}: {name}")
    print(f"{len(checks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
