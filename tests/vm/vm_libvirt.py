#!/usr/bin/env python3
"""The ledger with a real libvirt: libvirtd 9.0 (started here without systemd, after virtlogd, and
stopped by the PIDs it wrote), qemu TCG domains booted from the host's own kernel and initrd.

The ledger lives in a fake tree with this machine's CPUs (mkhost.py --cpus NPROC, one node, no SMT)
and cpu-partitioning applied to it: VMs are added with rtpartctl vm add until the isolated CPUs run
out (the next is refused with exit 2 naming how many are free); rtpart's hook is installed in
/etc/libvirt/hooks/qemu.d as a script that runs rtpart-libvirt-hook on that tree. Each VM is
defined from `rtpartctl export libvirt NAME --domain` and started, and its vCPU threads (CPU n/TCG)
must run on exactly the ledger's CPUs, disjoint from one another; rtpartctl vm list (the tree's
ledger through --state-dir, this kernel's threads) shows them there, and a thread moved by hand
(virsh vcpupin --live: libvirt keeps it in a cpuset cgroup of its CPU) as drift. A domain pinned
onto a VM's CPU is refused by the hook with rtpart's reason as libvirt's error; once that VM is
removed from the ledger (its cores free), the same domain starts. Where the kernel has RT group scheduling, a domain
with a FIFO vCPU is refused by the kernel ("Cannot set scheduler parameters … Operation not
permitted"), as rtpartctl(1) says it is.

What the export writes that this machine cannot run is taken out of the domain before it is
defined, and said: <cpu mode='host-passthrough'> and its tsc-deadline (TCG has no host CPU), and
<locked/> (this machine does not let libvirt raise qemu's RLIMIT_MEMLOCK: "cannot limit locked
memory … Operation not permitted"), and <vcpusched scheduler='fifo'> (this kernel has RT group
scheduling and libvirt's qemu.conf here puts vCPUs in the cpu controller, whose new groups have
0 µs of RT time: see rtpartctl(1), vm).

Exit 77 with the reason when it cannot run: not root, libvirtd/virtlogd/virsh missing, a libvirtd
already running (not ours to use), no kernel in /boot, or fewer than 2 CPUs. Leaves no domain
defined, no hook and no daemon of its own.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("RTPART_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("RTPART_BUILD_DIR", os.path.join(SRC, "build"))
CTL = os.environ.get("RTPARTCTL") or os.path.join(BUILD, "daemon", "ctl", "rtpartctl")
HOOK = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(BUILD, "daemon", "hook", "rtpart-libvirt-hook"))
HOOK_DIR = "/etc/libvirt/hooks/qemu.d"
HOOK_FILE = os.path.join(HOOK_DIR, "rtpart-test")


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def cpu_list(s):
    out = set()
    for part in filter(None, s.strip().split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def run(*cmd, check=True, **kw):
    p = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd}: exit {p.returncode}: {p.stderr}")
    return p


def preconditions():
    if os.geteuid() != 0:
        skip("needs root: libvirtd runs as the system's")
    for prog in ("libvirtd", "virtlogd", "virsh"):
        if not shutil.which(prog):
            skip(f"{prog} is not installed (Debian: libvirt-daemon-system, libvirt-clients)")
    if run("pgrep", "-x", "libvirtd", check=False).returncode == 0:
        skip("a libvirtd runs already: this test starts its own and uses no other")
    kernels = sorted(k for k in glob.glob("/boot/vmlinuz-*-amd64") if "-rt-" not in k)
    if not kernels or not os.path.exists(kernels[-1].replace("vmlinuz", "initrd.img")):
        skip("no kernel and initrd in /boot to boot the guests with")
    if os.cpu_count() < 2:
        skip("one CPU: nothing to isolate")
    if os.path.exists(HOOK_FILE):
        skip(f"{HOOK_FILE} exists: not ours to replace")
    return kernels[-1], kernels[-1].replace("vmlinuz", "initrd.img")


class Libvirt:
    def __init__(self, tmp):
        self.tmp = tmp
        self.pids = []
        self.made_dirs = []

    def make_dirs(self):
        # libvirtd without systemd makes a "machine" cgroup in every hierarchy for its domains: those
        # that were not here before go again once it stops (rmdir of empty cgroups, deepest first).
        self.machine_cgroups = [d for d in glob.glob("/sys/fs/cgroup/*/machine") if os.path.isdir(d)]
        for d in ("/var/log/libvirt", "/var/log/libvirt/qemu", "/etc/libvirt/hooks", HOOK_DIR):
            if not os.path.isdir(d):
                os.makedirs(d)
                self.made_dirs.append(d)

    def start(self):
        for prog in ("virtlogd", "libvirtd"):
            pidfile = os.path.join(self.tmp, prog + ".pid")
            run(prog, "-d", "-p", pidfile)
            end = time.monotonic() + 30
            while not os.path.exists(pidfile) and time.monotonic() < end:
                time.sleep(0.1)
            with open(pidfile) as f:
                self.pids.append(int(f.read().strip()))
        end = time.monotonic() + 60
        while run("virsh", "-c", "qemu:///system", "version", check=False).returncode != 0:
            if time.monotonic() > end:
                raise AssertionError("libvirtd does not answer")
            time.sleep(0.2)

    def virsh(self, *args, check=True):
        return run("virsh", "-c", "qemu:///system", *args, check=check)

    def stop(self, domains):
        for d in domains:
            self.virsh("destroy", d, check=False)
            self.virsh("undefine", d, check=False)
        for pid in reversed(self.pids):  # libvirtd, then virtlogd: only those started here
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
        if os.path.exists(HOOK_FILE):
            os.unlink(HOOK_FILE)
        for d in reversed(self.made_dirs):
            shutil.rmtree(d, ignore_errors=True)
        for top in glob.glob("/sys/fs/cgroup/*/machine"):
            if top in getattr(self, "machine_cgroups", [top]):
                continue
            for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
                try:
                    os.rmdir(dirpath)
                except OSError as e:
                    print(f"could not remove {dirpath}: {e}")


def vcpu_threads(name):
    """vCPU index → (tid, allowed CPUs) of the running domain's qemu."""
    with open(f"/run/libvirt/qemu/{name}.pid") as f:
        pid = int(f.read().strip())
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            m = re.fullmatch(r"CPU (\d+)/(KVM|TCG)", f.read().strip())
        if m:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                allowed = re.search(r"^Cpus_allowed_list:\s*(\S+)", f.read(), re.M).group(1)
            out[int(m.group(1))] = (int(tid), cpu_list(allowed))
    return out


def base_domain(name, kernel, initrd):
    return (f"<domain type='qemu'>\n  <name>{name}</name>\n  <memory unit='MiB'>160</memory>\n"
            f"  <vcpu>1</vcpu>\n  <os>\n    <type arch='x86_64' machine='pc'>hvm</type>\n"
            f"    <kernel>{kernel}</kernel>\n    <initrd>{initrd}</initrd>\n"
            f"    <cmdline>console=ttyS0 quiet</cmdline>\n  </os>\n  <devices>\n"
            f"    <serial type='pty'/>\n  </devices>\n</domain>\n")


def runnable_here(xml):
    """What this machine cannot run, taken out (see the module's doc)."""
    xml = re.sub(r"\s*<cpu mode='host-passthrough'>.*?</cpu>", "", xml, flags=re.S)
    xml = re.sub(r"\s*<locked/>", "", xml)
    return re.sub(r"\s*<vcpusched [^>]*/>", "", xml)


def main():
    kernel, initrd = preconditions()
    tmp = tempfile.mkdtemp(prefix="rtpart-libvirt-")
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "root")
    subprocess.run([sys.executable, os.path.join(SRC, "tests", "fixtures", "mkhost.py"), "--cpus",
                    str(os.cpu_count()), "--sockets", "1", "--smt", "1", "--irqs", "8", "--no-resctrl", root, "-q"],
                   check=True)
    pdir = os.path.join(root, "usr", "share", "rtpart", "profiles")
    os.makedirs(pdir, exist_ok=True)
    for f in glob.glob(os.path.join(SRC, "profiles", "*.json")):
        shutil.copy(f, pdir)
    ctl = [CTL, "--root", root, "--no-daemon"]
    run(*ctl, "apply", "cpu-partitioning")

    # VMs of one vCPU until the isolated CPUs run out (at most two); the next is refused.
    vms = []
    while len(vms) < 2:
        p = run(*ctl, "--json", "vm", "add", f"rt{len(vms)}", "--vcpus", "1", check=False)
        if p.returncode != 0:
            assert p.returncode == 2 and "0 are free" in p.stderr, p.stderr
            print("refused as full:", p.stderr.strip())
            break
        vms.append(json.loads(p.stdout))
    assert vms, "no VM fits"
    if len(vms) == 1:
        print(f"this machine has {os.cpu_count()} CPUs: one isolated, so one VM")

    lv = Libvirt(tmp)
    defined = []
    try:
        lv.make_dirs()
        with open(HOOK_FILE + ".new", "w") as f:
            f.write(f"#!/bin/sh\nRTPART_ROOT='{root}' exec '{HOOK}' \"$@\"\n")
        os.chmod(HOOK_FILE + ".new", 0o755)
        os.rename(HOOK_FILE + ".new", HOOK_FILE)
        lv.start()
        held = set()
        for vm in vms:
            base = os.path.join(tmp, vm["name"] + "-base.xml")
            with open(base, "w") as f:
                f.write(base_domain(vm["name"], kernel, initrd))
            xml = runnable_here(run(*ctl, "export", "libvirt", vm["name"], "--domain", base).stdout)
            path = os.path.join(tmp, vm["name"] + ".xml")
            with open(path, "w") as f:
                f.write(xml)
            lv.virsh("define", path)
            defined.append(vm["name"])
            lv.virsh("start", vm["name"])
            threads = vcpu_threads(vm["name"])
            want = sorted(cpu_list(vm["cpus"]))
            assert sorted(threads) == list(range(len(want))), threads
            for i, cpu in enumerate(want):
                assert threads[i][1] == {cpu}, (vm["name"], i, threads[i], cpu)
            assert not (held & set(want)), (held, want)
            held |= set(want)
            print(f"{vm['name']}: vCPU threads on CPUs {sorted(t[1] for t in threads.values())}, as the ledger says")

        # The running VM as rtpartctl sees it (the ledger of the tree, the threads of this kernel):
        # on its CPU; a thread moved by hand is drift.
        live = [CTL, "--state-dir", os.path.join(root, "var", "lib", "rtpart")]
        first = json.loads(run(*live, "--json", "vm", "list").stdout)["vms"][0]
        assert [(t["vcpu"], t["cpus"], t["drift"]) for t in first["vcpu_threads"]] == [(0, first["cpus"], False)], first
        tid = first["vcpu_threads"][0]["tid"]
        # libvirt keeps the thread in a cpuset cgroup of the VM's CPU: moved through libvirt itself.
        others = set(range(os.cpu_count())) - cpu_list(first["cpus"])
        lv.virsh("vcpupin", vms[0]["name"], "0", ",".join(map(str, sorted(others))), "--live")
        first = json.loads(run(*live, "--json", "vm", "list").stdout)["vms"][0]
        assert first["vcpu_threads"][0]["drift"] is True, first
        text = run(*live, "vm", "list").stdout
        assert "drift" in text and f"vCPU 0 (thread {tid}) may run on CPUs" in text, text
        print("moved by hand, seen as drift:\n" + text)

        # A domain pinned onto the first VM's CPU: refused by the hook, with rtpart's reason.
        target = vms[0]["cpus"]
        intruder = base_domain("intruder", kernel, initrd).replace(
            "  <vcpu>1</vcpu>\n", f"  <vcpu>1</vcpu>\n  <cputune><vcpupin vcpu='0' cpuset='{target}'/></cputune>\n")
        path = os.path.join(tmp, "intruder.xml")
        with open(path, "w") as f:
            f.write(intruder)
        lv.virsh("define", path)
        defined.append("intruder")
        p = lv.virsh("start", "intruder", check=False)
        assert p.returncode != 0, "the overlapping domain started"
        want = f"rtpart: domain intruder is pinned to CPUs {target}, which the ledger reserves for VM {vms[0]['name']}"
        assert want in p.stderr, p.stderr
        print("refused:", p.stderr.strip())

        # Where the kernel has RT group scheduling, a FIFO vCPU in libvirt's cpu cgroup cannot start
        # (rtpartctl(1), vm: why no hook can help, and what does).
        if os.path.exists("/sys/fs/cgroup/cpu/cpu.rt_runtime_us"):
            fifo = base_domain("fifo", kernel, initrd).replace(
                "  <vcpu>1</vcpu>\n", "  <vcpu>1</vcpu>\n  <cputune><vcpusched vcpus='0' scheduler='fifo' "
                "priority='1'/></cputune>\n")
            path = os.path.join(tmp, "fifo.xml")
            with open(path, "w") as f:
                f.write(fifo)
            lv.virsh("define", path)
            defined.append("fifo")
            p = lv.virsh("start", "fifo", check=False)
            if p.returncode == 0:
                print("a FIFO vCPU started here: libvirt's qemu.conf keeps vCPUs out of the cpu controller")
                lv.virsh("destroy", "fifo")
            else:
                assert "Cannot set scheduler parameters" in p.stderr, p.stderr
                print("FIFO vCPU refused by the kernel, as rtpartctl(1) says:", p.stderr.strip().splitlines()[-1])

        # Removed from the ledger, its cores are free: the same domain starts.
        lv.virsh("destroy", vms[0]["name"])
        run(*ctl, "vm", "remove", vms[0]["name"])
        lv.virsh("start", "intruder")
        print("after vm remove, intruder starts on", vcpu_threads("intruder")[0][1])
    finally:
        lv.stop(defined)
        shutil.rmtree(tmp, ignore_errors=True)
    left = run("pgrep", "-x", "libvirtd", check=False).returncode
    assert left != 0, "a libvirtd is left running"
    print("ok")


if __name__ == "__main__":
    main()
