#!/usr/bin/env python3
"""The cgroup v2 isolated partition on a real kernel (suite vm).

Boots a Debian kernel under qemu in TCG mode (this machine's /dev/kvm cannot run a normal
kernel) with a busybox initramfs that holds the rtpartctl under test, its shared libraries and a
profile. Inside the guest (4 CPUs, cgroup2 mounted, no systemd):

  1. apply a profile with an isolated partition on CPUs 2-3 under --root / (the guest);
  2. print cpuset.cpus.partition and the partition's files, run verify, move a process into the
     partition and read its affinity;
  3. revert: the partition is gone, the process is back in the root cgroup with all CPUs;
  4. a sibling cgroup that claims CPU 3 makes the kernel report "isolated invalid (reason)":
     apply fails, rolls back, and leaves no partition behind;

apply and revert change the cgroups through libcgroup, which rtpartctl dlopens (so ldd does not
list it: the initramfs gets it and what it needs beside the libraries ldd lists); glibc's loader
reports it loaded by apply and not by verify (LD_DEBUG=files, into files of its own), and the
partition's directory has libcgroup's mode (its mkdir asks 0775, rtpart's own 0755; umask 0);

then powers off. Results come back on the serial console between markers. Installs nothing:
exits 77 (skip) with the reason when qemu-system-x86_64, a kernel image or busybox is missing
(Debian packages: qemu-system-x86, linux-image-amd64, busybox-static). Kernel: $RTPART_VM_KERNEL
or the newest readable /boot/vmlinuz-*.
"""
import glob
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

CTL = os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "daemon", "ctl", "rtpartctl")
TIMEOUT = 55  # seconds for the whole guest run; boot alone is about 8 s under TCG

PROFILE = {
    "summary": "vm test: an isolated cgroup v2 partition on CPUs 2-3",
    "cpus": {"housekeeping": "0-1"},
    "cpuset": {"confine": [], "partitions": [{"name": "rtpart-rt", "cpus": "2-3", "mode": "isolated"}]},
}

# How a busybox guest ends. `poweroff -f` powers off at once: what the serial port has not sent yet
# (its driver holds up to 4 KiB, sent at the emulated 115200 baud, about 11 KB/s) would be lost,
# or cut by the kernel's own "reboot: Power down" line, and with it the marker. stty sets the
# console's modes back as they are with TCSADRAIN, which returns only once the port has sent all.
GUEST_END = r"""echo "@@END"
stty -F /dev/console "$(stty -F /dev/console -g)"
poweroff -f
"""

INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /run
mkdir -p /var/lib/rtpart /tmp
CG=/sys/fs/cgroup
P=$CG/rtpart-rt
r() { echo "@@R $1=$2"; }
f() { if [ -e "$2" ]; then r "$1" "$(cat "$2" | tr '\n' ' ' | sed 's/ *$//')"; else r "$1" "(absent)"; fi; }
echo "@@BEGIN"
r kernel "$(uname -r)"
r nproc "$(grep -c ^processor /proc/cpuinfo)"
f root_controllers $CG/cgroup.controllers
f root_subtree_before $CG/cgroup.subtree_control
f root_isolated_file $CG/cpuset.cpus.isolated
rtpartctl --no-daemon plan /test.json > /tmp/plan.txt 2>&1; r plan_rc $?
sed 's/^/@@PLAN /' /tmp/plan.txt
(umask 000; LD_DEBUG=files LD_DEBUG_OUTPUT=/tmp/ld-apply rtpartctl --no-daemon apply /test.json > /tmp/apply.txt 2>&1); r apply_rc $?
sed 's/^/@@APPLY /' /tmp/apply.txt
r apply_libcgroup "$(cat /tmp/ld-apply.* | grep -c 'file=libcgroup.so.2 .*dynamically loaded by')"
r partition_mode "$(stat -c %a $P)"
f partition $P/cpuset.cpus.partition
f cpus $P/cpuset.cpus
f cpus_effective $P/cpuset.cpus.effective
f exclusive $P/cpuset.cpus.exclusive
f root_subtree_after $CG/cgroup.subtree_control
f root_effective $CG/cpuset.cpus.effective
LD_DEBUG=files LD_DEBUG_OUTPUT=/tmp/ld-verify rtpartctl --no-daemon verify > /tmp/verify.txt 2>&1; r verify_rc $?
r verify_libcgroup "$(cat /tmp/ld-verify.* | grep -c 'file=libcgroup.so.2 .*dynamically loaded by')"
sed 's/^/@@VERIFY /' /tmp/verify.txt
sleep 300 &
S=$!
echo $S > $P/cgroup.procs; r move_rc $?
f sleep_cgroup /proc/$S/cgroup
r sleep_affinity "$(grep Cpus_allowed_list /proc/$S/status | cut -f2)"
rtpartctl --no-daemon revert > /tmp/revert.txt 2>&1; r revert_rc $?
sed 's/^/@@REVERT /' /tmp/revert.txt
f after_revert $P
f root_subtree_reverted $CG/cgroup.subtree_control
f sleep_cgroup_after /proc/$S/cgroup
r sleep_affinity_after "$(grep Cpus_allowed_list /proc/$S/status | cut -f2)"
kill $S
# The user's own cgroup on CPU 3 (cpuset enabled by the user: revert disabled what apply enabled).
echo +cpuset > $CG/cgroup.subtree_control
mkdir $CG/other && echo 3 > $CG/other/cpuset.cpus
rtpartctl --no-daemon apply /test.json > /tmp/apply2.txt 2>&1; r invalid_apply_rc $?
sed 's/^/@@INVALID /' /tmp/apply2.txt
f after_invalid $P
rmdir $CG/other
mkdir $CG/probe && echo 2-3 > $CG/probe/cpuset.cpus && mkdir $CG/probe2 && echo 3 > $CG/probe2/cpuset.cpus
echo isolated > $CG/probe/cpuset.cpus.partition; r probe_write_rc $?
f probe_partition $CG/probe/cpuset.cpus.partition
rmdir $CG/probe $CG/probe2
""" + GUEST_END


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


def find_kernel():
    k = os.environ.get("RTPART_VM_KERNEL")
    if k:
        return k if os.access(k, os.R_OK) else None

    def version(p):
        return [int(x) if x.isdigit() else x for x in re.split(r"[.-]", os.path.basename(p)[len("vmlinuz-"):])]
    cands = [p for p in glob.glob("/boot/vmlinuz-*") if os.access(p, os.R_OK)]
    cands.sort(key=lambda p: [(0, x) if isinstance(x, int) else (1, x) for x in version(p)])
    return cands[-1] if cands else None


# What rtpartctl dlopens itself (tests/unit/shipped_libraries.py checks the list): not in ldd's.
DLOPENED = ["libcgroup.so.2"]


def dlopened_libs():
    """The files of DLOPENED (ldconfig's cache) and those they load in turn."""
    cache = subprocess.run(["ldconfig", "-p"], stdout=subprocess.PIPE, text=True).stdout
    libs = []
    for soname in DLOPENED:
        paths = [line.split("=>")[-1].strip() for line in cache.splitlines() if line.strip().startswith(soname + " ")]
        if paths:
            libs += [paths[0]] + shared_libs(paths[0])
    return libs


def shared_libs(binary):
    """The files ldd says a binary loads (the ELF interpreter included)."""
    p = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if "not a dynamic executable" in p.stdout or "statically linked" in p.stdout:
        return []
    libs = []
    for line in p.stdout.splitlines():
        m = re.search(r"(/\S+)", line.split("=>")[-1])
        if m and os.path.exists(m.group(1)):
            libs.append(m.group(1))
    return libs


class Cpio:
    """newc ("070701") archive writer: what the kernel unpacks as an initramfs."""

    def __init__(self):
        self.out = bytearray()
        self.ino = 1
        self.dirs = set()

    def _entry(self, name, mode, data=b""):
        hdr = "070701" + "".join("%08x" % v for v in (
            self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0))
        self.ino += 1
        self.out += hdr.encode() + name.encode() + b"\0"
        self.out += b"\0" * (-len(self.out) % 4)
        self.out += data
        self.out += b"\0" * (-len(self.out) % 4)

    def dir(self, name):
        name = name.strip("/")
        parts = name.split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d and d not in self.dirs:
                self.dirs.add(d)
                self._entry(d, stat.S_IFDIR | 0o755)

    def file(self, name, data, mode=0o755):
        name = name.strip("/")
        if "/" in name:
            self.dir(os.path.dirname(name))
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name, target):
        name = name.strip("/")
        if "/" in name:
            self.dir(os.path.dirname(name))
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def finish(self):
        self._entry("TRAILER!!!", 0)
        self.out += b"\0" * (-len(self.out) % 512)
        return bytes(self.out)


def build_initramfs(path, busybox):
    c = Cpio()
    for d in ("bin", "sbin", "proc", "sys", "dev", "tmp", "run", "etc", "var/lib/rtpart"):
        c.dir(d)
    with open(busybox, "rb") as f:
        c.file("bin/busybox", f.read())
    c.symlink("bin/sh", "busybox")
    with open(CTL, "rb") as f:
        c.file("bin/rtpartctl", f.read())
    for lib in sorted(set(shared_libs(busybox) + shared_libs(CTL) + dlopened_libs())):
        real = os.path.realpath(lib)
        with open(real, "rb") as f:
            c.file(lib, f.read())
        # /lib64 and /lib are symlinks on merged-/usr systems: the loader's path must exist as given
    c.file("test.json", json.dumps(PROFILE).encode(), 0o644)
    c.file("init", INIT.encode())
    with open(path, "wb") as f:
        f.write(c.finish())


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
    if not os.access(CTL, os.X_OK):
        skip(f"{CTL} is not built")

    tmp = tempfile.mkdtemp(prefix="rtpart-vm-")
    try:
        initrd = os.path.join(tmp, "initrd.cpio")
        build_initramfs(initrd, busybox)
        cmd = [qemu, "-accel", "tcg", "-cpu", "max", "-smp", "4", "-m", "512",
               "-kernel", kernel, "-initrd", initrd,
               "-append", "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init",
               "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot", "-nodefaults"]
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
            out = p.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace")
            print(out)
            print(f"FAIL: the guest did not power off within {TIMEOUT} s")
            return 1
        elapsed = time.monotonic() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    body = out.split("@@BEGIN", 1)[-1].split("@@END", 1)[0] if "@@BEGIN" in out else ""
    print(f"guest ran {elapsed:.1f} s on {os.path.basename(kernel)}")
    for line in body.splitlines():
        if line.startswith("@@"):
            print(line.rstrip("\r"))
    if "@@END" not in out:
        print(out[-4000:])
        print("FAIL: no @@END marker from the guest")
        return 1
    res = {}
    for line in body.splitlines():
        if line.startswith("@@R "):
            k, _, v = line[4:].rstrip("\r").partition("=")
            res[k] = v

    checks = [
        ("apply exits 0", res.get("apply_rc") == "0"),
        ("the partition reads back isolated", res.get("partition") == "isolated"),
        ("its CPUs are 2-3", res.get("cpus") == "2-3" and res.get("cpus_effective") == "2-3"),
        ("apply made it through libcgroup, loaded when the first cgroup changed",
         res.get("apply_libcgroup") == "1" and res.get("partition_mode") == "775"),
        ("verify, which changes no cgroup, did not load libcgroup", res.get("verify_libcgroup") == "0"),
        ("apply enabled cpuset for the root's children", "cpuset" in res.get("root_subtree_after", "").split()),
        ("verify is clean", res.get("verify_rc") == "0"),
        ("a process moved into the partition runs on CPUs 2-3",
         res.get("move_rc") == "0" and res.get("sleep_affinity") == "2-3" and res.get("sleep_cgroup") == "0::/rtpart-rt"),
        ("revert exits 0", res.get("revert_rc") == "0"),
        ("revert removed the partition", res.get("after_revert") == "(absent)"),
        ("revert gave the root's subtree_control back as it was",
         res.get("root_subtree_reverted") == res.get("root_subtree_before")),
        ("the process is back in the root cgroup on every CPU",
         res.get("sleep_cgroup_after") == "0::/" and res.get("sleep_affinity_after") == "0-3"),
        ("an invalid partition fails apply", res.get("invalid_apply_rc") == "1"),
        ("and is rolled back", res.get("after_invalid") == "(absent)"),
        ("the kernel takes the write and reports the reason on read",
         res.get("probe_write_rc") == "0" and res.get("probe_partition", "").startswith("isolated invalid")),
    ]
    failed = [name for name, ok in checks if not ok]
    for name, ok in checks:
        print(f"{'ok' if ok else 'FAILED'}: {name}")
    print(f"{len(checks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
