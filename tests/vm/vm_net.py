#!/usr/bin/env python3
"""A NIC's channels, RPS and XPS on a real kernel (suite vm).

Boots a Debian kernel under qemu (TCG) with a busybox initramfs, as vm_cpuset.py does, and a
multiqueue virtio-net NIC: 4 queue pairs (`-device virtio-net-pci,mq=on,vectors=10` on a tap
netdev with queues=4; user networking has one queue). The tap is qemu's own: made for the guest
(not configured, down, no address) and gone when qemu exits; it needs /dev/net/tun and
CAP_NET_ADMIN. The initramfs holds the rtpartctl and rtpartd under test with the libraries ldd
lists, the libnl-3, libnl-genl-3 and libnl-route-3 they load when they first ask a NIC or listen
for events (not in ldd's list), ethtool when this machine has it, and the virtio modules. Inside
the guest (4 CPUs, housekeeping 0):

  1. the NIC's queues, masks, queue IRQs and channels (ethtool -l) before;
  2. apply a profile whose net section cuts every NIC to the housekeeping count and puts every
     queue's RPS and XPS there, with every IRQ on housekeeping CPUs (one channel: virtio_net then
     puts queue pair 0's IRQs and XPS on every CPU itself, and rtpartctl must place them again);
  3. read it all back: the channels through rtpartctl's own netlink read (plan --json) and
     ethtool -l, every queue's rps_cpus, xps_cpus and rps_flow_cnt, every queue IRQ's affinity;
     verify;
  4. the NIC's events, first with no rtpartd: a link down and up (which on virtio_net changes
     none of it), then an unbind and bind of virtio_net through /sys/bus/virtio/drivers, which
     gives back the driver's 4 channels, RPS cleared and queue pair N's XPS and IRQs on CPU N:
     read, this is what the checks below must see undone;
  5. rtpartd started in the background (no D-Bus, no metrics; the journal apply left in
     /var/lib/rtpart), which applies the profile again as it does at every start; then the same
     two events with it running. After each, the NIC is polled (10 s at most) until it has one
     queue pair whose RPS and XPS are CPU 0 and every queue IRQ is on CPU 0: whether it came
     back is checked, and how long it took (the guest's uptime from before the event's first
     command, polling included) is printed, never asserted; rtpartd's log (-v) must show it
     handled each event. rtpartd is stopped by its PID, and verify is clean;
  6. revert, and read it all again: channels and every queue file as before.

Results come back on the serial console between markers. One boot. Installs nothing: exits 77
with the reason when qemu-system-x86_64, a kernel image with its virtio modules, busybox, libnl,
the built rtpartd or the tap device is missing. Kernel: $RTPART_VM_KERNEL or the newest readable
/boot/vmlinuz-* without PREEMPT_RT.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from vm_cpuset import CTL, GUEST_BEGIN, GUEST_END, find_kernel, guest_base, report, skip

TIMEOUT = 150  # seconds for the whole guest run; boot alone is about 8 s under TCG
QUEUES = 4
LIBNL = ("libnl-3.so.200", "libnl-genl-3.so.200", "libnl-route-3.so.200")
MODULES = ("virtio_pci", "virtio_net")
DAEMON = os.environ.get("RTPARTD") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "daemon", "rtpartd",
                                                   "rtpartd")

PROFILE = {
    "summary": "vm test: a NIC's channels and queue masks on housekeeping CPU 0",
    "cpus": {"housekeeping": "0"},
    "irq": {"affinity": "housekeeping", "default_affinity": "housekeeping"},
    "net": {"rps_sock_flow_entries": 4096,
            "nics": [{"match": "*", "channels": "housekeeping", "rps_cpus": "housekeeping",
                      "xps_cpus": "housekeeping", "rps_flow_cnt": 256}]},
}

INIT = GUEST_BEGIN + r"""for m in $(cat /modules.order); do insmod /lib/modules/$m 2>/dev/null; done
r() { echo "@@R $1=$2"; }
IF=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
state() {
        for d in /sys/class/net/$IF/queues/*; do
                echo "@@Q $1 $(basename $d) rps=$(cat $d/rps_cpus 2>/dev/null) flow=$(cat $d/rps_flow_cnt 2>/dev/null) xps=$(cat $d/xps_cpus 2>/dev/null)"
        done
        for n in $(grep -E 'virtio[0-9]+-(input|output)' /proc/interrupts | cut -d: -f1); do
                echo "@@IRQ $1 $n $(cat /proc/irq/$n/smp_affinity_list) $(grep -E "^ *$n:" /proc/interrupts | awk '{print $NF}')"
        done
        if command -v ethtool >/dev/null; then ethtool -l $IF 2>&1 | tr '\t' ' ' | sed "s/^/@@ETHTOOL $1 /"; fi
        rtpartctl --no-daemon --json plan /test.json > /tmp/plan.json 2>/tmp/plan.err; r plan_$1_rc $?
        echo "@@JSON $1 $(tr -d '\n' < /tmp/plan.json)"
}
# Uptime in hundredths of a second.
now() { cut -d' ' -f1 /proc/uptime | tr -d .; }
# 0 when the NIC is as the profile puts it: one queue pair, every queue's RPS and XPS and every
# queue IRQ on CPU 0.
placed() {
        [ "$(ls /sys/class/net/$IF/queues 2>/dev/null | tr '\n' ' ')" = "rx-0 tx-0 " ] || return 1
        [ "$(cat /sys/class/net/$IF/queues/rx-0/rps_cpus)" = 1 ] || return 1
        [ "$(cat /sys/class/net/$IF/queues/tx-0/xps_cpus)" = 1 ] || return 1
        ns=$(grep -E 'virtio[0-9]+-(input|output)' /proc/interrupts | cut -d: -f1)
        [ -n "$ns" ] || return 1
        for n in $ns; do [ "$(cat /proc/irq/$n/smp_affinity_list)" = 0 ] || return 1; done
}
# Waits (10 s at most) for an interface to exist again.
comes() {
        i=0
        while [ ! -e /sys/class/net/$1 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
}
# Polls placed (10 s at most) from the time $2 (now's): NAME_back is 0 once it is, NAME_cs the
# hundredths of a second it took.
back() {
        rc=1
        while [ $(($(now) - $2)) -lt 1000 ]; do placed && { rc=0; break; }; sleep 0.02; done
        r $1_cs $(($(now) - $2))
        r $1_back $rc
}
echo "@@BEGIN"
r kernel "$(uname -r)"
r ifname "$IF"
state before
rtpartctl --no-daemon apply /test.json > /tmp/apply.txt 2>&1; r apply_rc $?
sed 's/^/@@APPLY /' /tmp/apply.txt
state applied
rtpartctl --no-daemon verify > /tmp/verify.txt 2>&1; r verify_rc $?
sed 's/^/@@VERIFY /' /tmp/verify.txt
DEV=$(basename "$(readlink /sys/class/net/$IF/device)")
VN=/sys/bus/virtio/drivers/virtio_net
r device "$DEV"
ip link set $IF up
# The events with no rtpartd: what they leave behind.
ip link set $IF down; ip link set $IF up
sleep 1
placed; r nodaemon_updown_placed $?
state nodaemon_updown
echo $DEV > $VN/unbind; echo $DEV > $VN/bind
comes $IF
sleep 1
placed; r nodaemon_rebind_placed $?
state nodaemon_rebind
# rtpartd, which applies the journal's profile again when it starts, then the events.
rtpartd --no-dbus --no-metrics --interval 3600 -v > /tmp/rtpartd.txt 2>&1 &
D=$!
T=$(now); back daemon_start $T
t=$(now); ip link set $IF down; ip link set $IF up; back updown $t
state updown
t=$(now); echo $DEV > $VN/unbind; echo $DEV > $VN/bind; comes $IF; back rebind $t
state rebind
kill $D; wait $D; r daemon_rc $?
sed 's/^/@@DAEMON /' /tmp/rtpartd.txt
rtpartctl --no-daemon verify > /tmp/verify2.txt 2>&1; r verify_after_rc $?
sed 's/^/@@VERIFY2 /' /tmp/verify2.txt
rtpartctl --no-daemon revert > /tmp/revert.txt 2>&1; r revert_rc $?
sed 's/^/@@REVERT /' /tmp/revert.txt
state reverted
""" + GUEST_END


def module_order(kver):
    """The .ko files (relative to /lib/modules/KVER) of MODULES, each after what it needs."""
    base = os.path.join("/lib/modules", kver)
    deps = {}
    try:
        with open(os.path.join(base, "modules.dep")) as f:
            for line in f:
                mod, _, rest = line.partition(":")
                deps[mod] = rest.split()
    except OSError:
        return None
    order = []

    def add(mod):
        if mod in order:
            return
        for d in reversed(deps.get(mod, [])):
            add(d)
        order.append(mod)
    for name in MODULES:
        found = [m for m in deps if os.path.basename(m).split(".ko")[0] == name]
        if not found:
            return None
        add(found[0])
    if any(not m.endswith(".ko") or not os.path.exists(os.path.join(base, m)) for m in order):
        return None  # compressed modules: busybox insmod takes plain ones only
    return order


def library_path(soname):
    """Where the loader finds soname on this machine (ldconfig's cache), or None."""
    p = subprocess.run(["ldconfig", "-p"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout.splitlines():
        if line.strip().startswith(soname + " ") and "x86-64" in line:
            return line.rsplit("=>", 1)[-1].strip()
    return None


def build_initramfs(path, busybox, kver, modules, libnl):
    ethtool = shutil.which("ethtool") or ("/usr/sbin/ethtool" if os.path.exists("/usr/sbin/ethtool") else None)
    c = guest_base(busybox, [DAEMON] + ([ethtool] if ethtool else []), libnl)
    for m in modules:
        with open(os.path.join("/lib/modules", kver, m), "rb") as f:
            c.file("lib/modules/" + m, f.read(), 0o644)
    c.file("modules.order", "\n".join(modules).encode() + b"\n", 0o644)
    c.file("test.json", json.dumps(PROFILE).encode(), 0o644)
    c.file("init", INIT.encode())
    with open(path, "wb") as f:
        f.write(c.finish())
    return ethtool is not None


def parse(body):
    """The guest's results: key=value pairs, queue files, IRQs, ethtool lines and plan documents
    by phase."""
    res, queues, irqs, eth, plans = {}, {}, {}, {}, {}
    for line in body.splitlines():
        line = line.rstrip("\r")
        if line.startswith("@@R "):
            k, _, v = line[4:].partition("=")
            res[k] = v
        elif line.startswith("@@DAEMON "):
            res["daemon_log"] = res.get("daemon_log", "") + line[9:] + "\n"
        elif line.startswith("@@Q "):
            _, phase, q, *files = line.split(" ")
            queues.setdefault(phase, {})[q] = " ".join(files)
        elif line.startswith("@@IRQ "):
            _, phase, n, aff, *name = line.split(" ")
            irqs.setdefault(phase, {})[n] = (aff, " ".join(name))
        elif line.startswith("@@ETHTOOL "):
            _, phase, text = line.split(" ", 2)
            eth.setdefault(phase, []).append(text)
        elif line.startswith("@@JSON "):
            _, phase, text = line.split(" ", 2)
            try:
                plans[phase] = json.loads(text)
            except json.JSONDecodeError:
                plans[phase] = None
    return res, queues, irqs, eth, plans


def ethtool_combined(lines):
    """(maximum, current) combined channels from ethtool -l's output, or None."""
    nums = [int(m.group(1)) for m in (re.match(r"\s*Combined:\s*(\d+)", t) for t in lines or []) if m]
    return tuple(nums) if len(nums) == 2 else None


def channels(plan, ifname):
    """The channel counts rtpartctl read (plan --json: the knob's current value), or None."""
    for e in (plan or {}).get("changes", []):
        if e.get("knob") == f"net/{ifname}/channels":
            return e.get("current")
    for e in (plan or {}).get("unchanged", []):
        if e.get("knob") == f"net/{ifname}/channels":
            return e.get("value")
    return None


def checks_of(res, queues, irqs, eth, plans, have_ethtool):
    ifname = res.get("ifname", "")
    before, applied, reverted = (queues.get(p, {}) for p in ("before", "applied", "reverted"))
    hk = "1"  # CPU 0, as a mask of 4 CPUs
    log = res.get("daemon_log", "")
    c = [
        (f"the guest's NIC has {QUEUES} queue pairs", sorted(before) == sorted(
            [f"rx-{q}" for q in range(QUEUES)] + [f"tx-{q}" for q in range(QUEUES)])),
        ("rtpartctl reads its channels", channels(plans.get("before"), ifname) == f"rx 0 tx 0 other 0 combined {QUEUES}"),
        ("apply exits 0", res.get("apply_rc") == "0"),
        ("after apply rtpartctl reads the housekeeping count of channels",
         channels(plans.get("applied"), ifname) == "rx 0 tx 0 other 0 combined 1"),
        ("the NIC has 1 queue pair", sorted(applied) == ["rx-0", "tx-0"]),
        ("every receive queue's RPS is housekeeping, its flow table 256",
         all(v.startswith(f"rps={hk} flow=256 ") for q, v in applied.items() if q.startswith("rx-"))),
        ("every transmit queue's XPS is housekeeping",
         all(v.endswith(f"xps={hk}") for q, v in applied.items() if q.startswith("tx-"))),
        ("every queue IRQ is on housekeeping CPUs",
         irqs.get("applied") and all(a == "0" for a, _ in irqs["applied"].values())),
        ("verify is clean", res.get("verify_rc") == "0"),
        ("without rtpartd, an unbind/bind of the driver leaves the NIC off housekeeping (what rtpartd "
         "must undo)",
         res.get("nodaemon_rebind_placed") == "1" and len(queues.get("nodaemon_rebind", {})) == 2 * QUEUES),
        ("rtpartd, started, puts the NIC back on housekeeping", res.get("daemon_start_back") == "0"),
        ("after a link down/up with rtpartd running the NIC is on housekeeping", res.get("updown_back") == "0"),
        ("rtpartd handled the link coming up", f"Interface {ifname} (up)" in log),
        ("after an unbind/bind of the driver rtpartd puts the NIC back on housekeeping",
         res.get("rebind_back") == "0"),
        ("rtpartd set the rebound NIC's knobs again", f"Interface {ifname} (add): set " in log),
        ("after the events rtpartctl reads the housekeeping count of channels",
         channels(plans.get("rebind"), ifname) == "rx 0 tx 0 other 0 combined 1"),
        ("rtpartd exits 0 on SIGTERM", res.get("daemon_rc") == "0"),
        ("verify is clean after the events", res.get("verify_after_rc") == "0"),
        ("revert exits 0", res.get("revert_rc") == "0"),
        ("after revert rtpartctl reads the channels as before",
         channels(plans.get("reverted"), ifname) == channels(plans.get("before"), ifname)),
        ("every queue's files are as before", reverted == before),
        ("every queue IRQ is where it was", irqs.get("reverted") == irqs.get("before")),
    ]
    if have_ethtool:
        c += [
            ("ethtool -l: 4 combined channels of 4 before", ethtool_combined(eth.get("before")) == (QUEUES, QUEUES)),
            ("ethtool -l: 1 after apply", ethtool_combined(eth.get("applied")) == (QUEUES, 1)),
            ("ethtool -l: 4 after an unbind/bind without rtpartd",
             ethtool_combined(eth.get("nodaemon_rebind")) == (QUEUES, QUEUES)),
            ("ethtool -l: 1 after the events with rtpartd", ethtool_combined(eth.get("rebind")) == (QUEUES, 1)),
            ("ethtool -l: 4 after revert", ethtool_combined(eth.get("reverted")) == (QUEUES, QUEUES)),
        ]
    return c


def run_guest(qemu, kernel, initrd):
    tap = f"rtpnet{os.getpid() % 100000}"
    cmd = [qemu, "-accel", "tcg", "-cpu", "max", "-smp", "4", "-m", "512",
           "-kernel", kernel, "-initrd", initrd,
           "-append", "console=ttyS0 panic=-1 quiet loglevel=3 rdinit=/init",
           "-netdev", f"tap,id=n0,ifname={tap},script=no,downscript=no,queues={QUEUES},vhost=off",
           "-device", f"virtio-net-pci,netdev=n0,mq=on,vectors={2 * QUEUES + 2}",
           "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot", "-nodefaults"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
        return p.stdout.decode(errors="replace"), None
    except subprocess.TimeoutExpired as e:
        return (e.stdout or b"").decode(errors="replace"), f"the guest did not power off within {TIMEOUT} s"


def main():
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        skip("qemu-system-x86_64 is not installed (Debian package qemu-system-x86)")
    kernel = find_kernel(plain=True)
    if not kernel:
        skip("no readable kernel image (/boot/vmlinuz-*; Debian package linux-image-amd64)")
    kver = os.path.basename(kernel)[len("vmlinuz-"):]
    modules = module_order(kver)
    if not modules:
        skip(f"no plain virtio_pci and virtio_net modules in /lib/modules/{kver}")
    busybox = shutil.which("busybox") or "/bin/busybox"
    if not os.path.exists(busybox):
        skip("busybox is not installed (Debian package busybox-static)")
    for prog in (CTL, DAEMON):
        if not os.access(prog, os.X_OK):
            skip(f"{prog} is not built")
    libnl = [library_path(s) for s in LIBNL]
    if None in libnl:
        skip("libnl-3, libnl-genl-3 or libnl-route-3 is not installed (Debian packages libnl-3-200, "
             "libnl-genl-3-200, libnl-route-3-200)")
    if not os.access("/dev/net/tun", os.R_OK | os.W_OK):
        skip("no /dev/net/tun to give the guest a multiqueue tap")

    tmp = tempfile.mkdtemp(prefix="rtpart-vm-")
    try:
        initrd = os.path.join(tmp, "initrd.cpio")
        have_ethtool = build_initramfs(initrd, busybox, kver, modules, libnl)
        t0 = time.monotonic()
        out, error = run_guest(qemu, kernel, initrd)
        elapsed = time.monotonic() - t0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if error and ("could not configure /dev/net/tun" in out or "Operation not permitted" in out):
        skip(f"qemu cannot make a tap device here: {out.strip()[-300:]}")
    body = out.split("@@BEGIN", 1)[-1].split("@@END", 1)[0] if "@@BEGIN" in out else ""
    print(f"guest ran {elapsed:.1f} s on {os.path.basename(kernel)}")
    for line in body.splitlines():
        if line.startswith("@@") and not line.startswith("@@JSON"):
            print(line.rstrip("\r"))
    if error or "@@END" not in out:
        print(out[-4000:])
        print(f"FAIL: {error or 'no @@END marker from the guest'}")
        return 1
    parsed = parse(body)
    res = parsed[0]
    # How long the NIC took to be seen back on housekeeping (the guest's uptime, 10 ms steps, from
    # before the event's first command; the shell's own polling under TCG included): printed only.
    print("without rtpartd, link down/up left the NIC " +
          ("as placed" if res.get("nodaemon_updown_placed") == "0" else "off housekeeping"))
    for key, what in (("daemon_start", "rtpartd started"), ("updown", "ip link set down; up"),
                      ("rebind", "virtio_net unbind; bind")):
        if res.get(key + "_back") == "0" and res.get(key + "_cs", "").isdigit():
            print(f"{what}: NIC seen on housekeeping after {int(res[key + '_cs']) * 10} ms")
        elif key + "_back" in res:
            print(f"{what}: NIC not on housekeeping within 10 s")
    return report(checks_of(*parsed, have_ethtool))


if __name__ == "__main__":
    sys.exit(main())
