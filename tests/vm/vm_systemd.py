#!/usr/bin/env python3
"""rtpartd under its shipped systemd unit, with systemd as PID 1 (suite vm).

Takes rtpart's Debian package of the tree (tests/pkg/debbuild.py: the .deb the pkg suite's
deb-package test kept in the build directory for this tree, else dpkg-buildpackage in a copy of
it); builds a Debian 12 (bookworm) root with debootstrap (systemd, dbus, udev, the Debian kernel
(and the PREEMPT_RT one, for vm-rt-boot's guest from the same root) and the packages the .deb
depends on), cached as a tarball keyed by its package list; puts the
.deb into a fresh copy, adds the guest driver tests/vm/vm_systemd_guest.sh as a Type=simple unit,
makes a raw ext4 image with `mkfs.ext4 -d` (no loop devices) and boots it under qemu TCG with the
guest's own kernel and initrd. The guest checks, and reports on the serial console between
markers:

  stage 1: `apt-get install ./rtpart_*.deb` (offline: its dependencies are in the root), which
    enables and starts rtpartd.service and rtpartd.socket the Debian way; `systemd-analyze
    verify` of both; `systemctl enable --now rtpartd`, the documented install command, changes
    nothing (Type=notify ready, StatusText, watchdog, the socket passed in); the bus name
    org.rtpart.Manager1 owned by the unit under the shipped policy, its interface and properties,
    read by nobody and Apply refused to nobody; varlink on /run/rtpartd/org.rtpart.Manager;
    rtpartctl status/plan/apply/verify through the daemon; system.slice AllowedCPUs= and
    cpuset.cpus on the housekeeping CPUs, kept in systemd's control drop-in; the partition knob of
    the plan reads "isolated"; the PM QoS device is held; reload (SIGHUP) and daemon-reload
    change nothing; a sysctl changed behind rtpartd's back is reported by `rtpartctl watch` and
    DriftCount; SIGKILL and Restart=on-failure bring rtpartd back in sync. Then it reboots;
  stage 2: qemu (-no-reboot) stops at the reboot and this script boots the guest again with the
    command line its /etc/kernel/cmdline now holds (the bootloader's part, with the boot
    arguments rtpart wrote); rtpartd, enabled, re-applied the profile: verify is clean with no
    reboot pending, the slices are still confined, the partition is back; after a clean stop,
    a varlink connection (rtpartd.socket) and a D-Bus call each start it again; `rtpartctl revert`
    empties AllowedCPUs=, removes the partition and leaves nothing applied. Then it powers off.

Needs root. Installs nothing on this machine: exits 77 (skip) with the reason when
qemu-system-x86_64, debootstrap, mkfs.ext4, dpkg-buildpackage or debhelper is missing
(scripts/deps --test installs them). Environment:
RTPART_VM_CACHE (default /var/cache/rtpart-test) holds the debootstrapped tarball,
RTPART_VM_MIRROR overrides the Debian mirror (default: the bookworm one in the apt sources, else
http://deb.debian.org/debian), RTPART_VM_KEEP=1 keeps the work directory. The serial console of
each boot is kept in the build directory's meson-logs/vm-systemd-stage*.log.
"""
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pkg"))
import debbuild  # noqa: E402

SOURCE = os.environ.get("RTPART_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("RTPART_BUILD_DIR") or os.path.join(SOURCE, "build")
GUEST_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vm_systemd_guest.sh")
CACHE = os.environ.get("RTPART_VM_CACHE") or "/var/cache/rtpart-test"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# What the guest needs beyond the packages rtpart's .deb depends on: systemd as PID 1 and the
# bus, the kernel, jq to read plan --json, socat to speak varlink directly.
BASE_PACKAGES = ["systemd", "systemd-sysv", "dbus", "udev", "kmod", "iproute2", "linux-image-amd64", "jq", "socat"]
# One root for both guests of the suite, debootstrapped once on a machine: this one boots its
# Debian kernel; vm-rt-boot (tests/vm/vm_rt_boot.py) the PREEMPT_RT one through systemd-boot.
GUEST_PACKAGES = BASE_PACKAGES + ["linux-image-rt-amd64", "systemd-boot-efi"]
# The guest's own boot arguments; the bootloader stand-in /etc/kernel/cmdline starts with these.
# no_timer_check: under TCG on a loaded host the kernel's IO-APIC timer check can fail and panic
# at boot ("IO-APIC + timer doesn't work!", seen here).
BASE_CMDLINE = "root=/dev/vda rw console=ttyS0 panic=-1 quiet loglevel=3 systemd.show_status=false no_timer_check"
STAGE_TIMEOUT = 600  # seconds for one boot, its checks and its reboot or poweroff (TCG on a loaded host)
DEBOOTSTRAP_TIMEOUT = 900


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


def log(msg):
    print(msg, flush=True)


def mirror():
    """The Debian mirror the apt sources name for bookworm (deb822 or one-line), else the default."""
    if os.environ.get("RTPART_VM_MIRROR"):
        return os.environ["RTPART_VM_MIRROR"]
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path) as f:
            for stanza in f.read().split("\n\n"):
                fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
                if SUITE in fields.get("Suites", "").split() and "deb" in fields.get("Types", "").split():
                    return fields.get("URIs", "").split()[0]
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
        try:
            with open(path) as f:
                for line in f:
                    m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
                    if m and m.group(2) == SUITE:
                        return m.group(1)
        except OSError:
            pass
    return DEFAULT_MIRROR


def package_deb():
    """rtpart's .deb of this tree (kept by the pkg suite or built now), or skips (77) without
    the tools to build one."""
    tool = debbuild.missing_tool()
    if tool:
        skip(f"{tool} is not installed: the guest installs rtpart's Debian package (scripts/deps --test)")
    return debbuild.cached_deb(SOURCE, BUILD, log)


def install_deb(root, deb):
    """The .deb into the guest, where its test driver installs it with apt (/var/lib/rtpart-vm-test)."""
    d = os.path.join(root, "var/lib/rtpart-vm-test")
    os.makedirs(d, exist_ok=True)
    shutil.copy(deb, d)


def cached_root(packages, mirror_url):
    """The tarball of the debootstrapped root for this package list: built once, then reused by
    both guests of the suite."""
    key = hashlib.sha256(" ".join([SUITE, "minbase"] + sorted(packages)).encode()).hexdigest()[:16]
    tarball = os.path.join(CACHE, f"{SUITE}-{key}.tar")
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once debootstrap once
        if os.path.exists(tarball):
            return tarball, False
        for old in glob.glob(os.path.join(CACHE, f"{SUITE}-*.tar")):
            os.unlink(old)  # another package list's (or the RT guest's own, as it once had): outdated
        tmp = tempfile.mkdtemp(prefix="debootstrap-", dir=CACHE)
        try:
            root = os.path.join(tmp, "root")
            cmd = ["debootstrap", "--variant=minbase", "--include=" + ",".join(sorted(packages)), SUITE, root, mirror_url]
            log("debootstrap: " + " ".join(cmd))
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=DEBOOTSTRAP_TIMEOUT)
            if p.returncode != 0:
                print(p.stdout[-6000:])
                raise RuntimeError(f"debootstrap failed with status {p.returncode} (mirror {mirror_url})")
            # Downloaded packages and indexes: not needed in the guest.
            for junk in glob.glob(os.path.join(root, "var/cache/apt/archives/*.deb")) + \
                    glob.glob(os.path.join(root, "var/cache/apt/*.bin")) + \
                    glob.glob(os.path.join(root, "var/lib/apt/lists/*_Packages")):
                os.unlink(junk)
            subprocess.run(["tar", "-C", root, "--numeric-owner", "--xattrs", "--xattrs-include=*", "-cf",
                            tarball + ".partial", "."], check=True)
            os.replace(tarball + ".partial", tarball)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return tarball, True


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def symlink(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)
    os.symlink(target, path)


TEST_UNIT = """[Unit]
Description=rtpart VM test driver (tests/vm/vm_systemd.py)
After=basic.target

[Service]
Type=simple
ExecStart=/usr/local/sbin/rtpart-vm-test
StandardInput=null
"""


def prepare_root(root, deb):
    """rtpart's .deb put into the guest (its driver installs it), plus the test driver and what a
    headless boot needs."""
    install_deb(root, deb)
    etc = os.path.join(root, "etc")
    write(os.path.join(etc, "hostname"), "rtpart-vm\n")
    write(os.path.join(etc, "hosts"), "127.0.0.1 localhost rtpart-vm\n")
    write(os.path.join(etc, "fstab"), "# the root is mounted from the kernel command line\n")
    # A machine id of its own: no first-boot wizard on the console.
    write(os.path.join(etc, "machine-id"), uuid.uuid4().hex + "\n", 0o444)
    # The bootloader configuration rtpart edits; the host boots stage 2 with what it then says.
    write(os.path.join(etc, "kernel", "cmdline"), BASE_CMDLINE + "\n")
    # The console is the test's: no login prompt on it, no jobs that wait for a network.
    for unit in ("serial-getty@ttyS0.service", "getty@tty1.service", "apt-daily.timer", "apt-daily-upgrade.timer"):
        symlink(os.path.join(etc, "systemd", "system", unit), "/dev/null")
    shutil.copy(GUEST_SCRIPT, os.path.join(root, "usr/local/sbin/rtpart-vm-test"))
    os.chmod(os.path.join(root, "usr/local/sbin/rtpart-vm-test"), 0o755)
    write(os.path.join(etc, "systemd/system/rtpart-vm-test.service"), TEST_UNIT)
    symlink(os.path.join(etc, "systemd/system/multi-user.target.wants/rtpart-vm-test.service"),
            "/etc/systemd/system/rtpart-vm-test.service")


def make_image(root, img):
    used = int(subprocess.run(["du", "-sm", "--apparent-size", root], stdout=subprocess.PIPE, text=True,
                              check=True).stdout.split()[0])
    size_mb = used + used // 4 + 512
    with open(img, "wb") as f:
        f.truncate(size_mb << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "rtpart-vm", "-d", root, img], check=True)


def boot(qemu, kernel, initrd, img, cmdline, console):
    """Boots the image once, until the guest powers off or reboots (-no-reboot), bounded."""
    cmd = [qemu, "-accel", "tcg", "-cpu", "max", "-smp", "4", "-m", "1024",
           "-kernel", kernel, "-initrd", initrd, "-append", cmdline,
           "-drive", f"file={img},format=raw,if=virtio",
           "-display", "none", "-serial", f"file:{console}", "-monitor", "none", "-nodefaults", "-no-reboot"]
    if os.path.exists(console):
        os.unlink(console)  # qemu appends: an older run's markers would read as this one's
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    timed_out = False
    try:
        qemu_out, _ = p.communicate(timeout=STAGE_TIMEOUT)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.kill(p.pid, 9)  # the qemu this run started, by its PID
        qemu_out, _ = p.communicate()
    with open(console, "rb") as f:
        text = f.read().decode(errors="replace")
    return text, qemu_out.decode(errors="replace"), time.monotonic() - t0, timed_out


def parse(text, stage):
    """The @@ lines of one stage: results, and every line for the log."""
    res, lines = {}, []
    inside = False
    for raw in text.splitlines():
        i = raw.find("@@")
        if i < 0:
            continue
        line = raw[i:].rstrip("\r")
        if line.startswith("@@BEGIN"):
            inside = line == f"@@BEGIN stage={stage}"
        if not inside:
            continue
        lines.append(line)
        if line.startswith("@@R "):
            k, _, v = line[4:].partition("=")
            res[k] = v
        if line == f"@@END stage={stage}":
            res["@end"] = "yes"
            inside = False
    return res, lines


class Checks:
    def __init__(self):
        self.items = []

    def __call__(self, name, ok, got=None):
        self.items.append((name, bool(ok), got))

    def report(self):
        failed = 0
        for name, ok, got in self.items:
            if ok:
                print(f"ok: {name}")
            else:
                failed += 1
                print(f"FAILED: {name}" + (f" (got: {got})" if got is not None else ""))
        print(f"{len(self.items) - failed} passed, {failed} failed")
        return 1 if failed else 0


def int_or(v, d=-1):
    try:
        return int(v)
    except (TypeError, ValueError):
        return d


def check_install(c, r):
    """The package's install in the guest (install_package of the guest scripts)."""
    c("apt-get install ./rtpart_*.deb exits 0 in the guest", r.get("install_rc") == "0", r.get("@install"))
    c("dpkg has rtpart installed", r.get("pkg_status", "").endswith(" install ok installed"), r.get("pkg_status"))
    c("installing the package enabled rtpartd.service and rtpartd.socket", r.get("pkg_enabled") == "enabled enabled",
      r.get("pkg_enabled"))
    c("and started both (systemd runs: the postinst's deb-systemd-invoke)", r.get("pkg_active") == "active active",
      r.get("pkg_active"))


def check_stage1(c, r):
    check_install(c, r)
    c("the guest runs systemd and rtpart's libraries resolve", r.get("libs_missing") == "0", r.get("libs_missing"))
    c("the D-Bus policy is installed in /usr/share/dbus-1/system.d",
      r.get("policy_file") == "/usr/share/dbus-1/system.d/org.rtpart.Manager1.conf", r.get("policy_file"))
    c("systemd-analyze verify passes for rtpartd.service and rtpartd.socket",
      r.get("analyze_rc") == "0" and r.get("analyze_ours") == "0", f"rc {r.get('analyze_rc')}, {r.get('analyze_ours')} lines about rtpart")
    c("systemctl enable --now rtpartd exits 0", r.get("enable_rc") == "0", r.get("enable_rc"))
    c("rtpartd.service is enabled, rtpartd.socket (Also=) enabled and listening",
      r.get("enabled") == "enabled" and r.get("socket_state") == "active enabled",
      f"{r.get('enabled')}; socket {r.get('socket_state')}")
    c("Type=notify: rtpartd reached active/running (READY=1)",
      r.get("svc_Type") == "notify" and r.get("svc_ActiveState") == "active" and r.get("svc_SubState") == "running",
      f"{r.get('svc_Type')} {r.get('svc_ActiveState')}/{r.get('svc_SubState')}")
    c("StatusText is set (no profile yet)", r.get("svc_StatusText", "").startswith("No profile applied"), r.get("svc_StatusText"))
    c("WatchdogSec= is in force", r.get("svc_WatchdogUSec") == "3min", r.get("svc_WatchdogUSec"))
    c("NoNewPrivileges= holds in the daemon", r.get("no_new_privs") == "1", r.get("no_new_privs"))
    m = re.search(r"Overall exposure level for rtpartd\.service: ([0-9.]+)", r.get("exposure", ""))
    c("systemd-analyze security rates rtpartd.service at 4.5 or below", m is not None and float(m.group(1)) <= 4.5,
      r.get("exposure"))
    c("SystemCallFilter= is in force in the daemon (Seccomp: 2)", r.get("seccomp") == "2", r.get("seccomp"))
    c("stage 1: the sandbox refused rtpartd nothing (no EPERM, EROFS or SIGSYS in its journal)",
      r.get("sandbox_refusals") == "0", r.get("sandbox_refusals"))
    c("rtpartd took the varlink socket rtpartd.socket passed", int_or(r.get("fd_passed")) >= 1, r.get("fd_passed"))
    c("org.rtpart.Manager1 is owned by rtpartd.service's main process",
      r.get("bus_unit") == "rtpartd.service" and r.get("bus_pid") == r.get("svc_MainPID") and r.get("bus_pid"),
      f"PID {r.get('bus_pid')} unit {r.get('bus_unit')}, MainPID {r.get('svc_MainPID')}")
    c("busctl list shows the name", r.get("bus_listed", "").startswith("org.rtpart.Manager1 "), r.get("bus_listed"))
    members = r.get("members", "").split()
    want = {"ActiveProfile", "InSync", "RebootRequired", "DriftCount", "Apply", "Plan", "Verify", "Revert",
            "Correct", "Status", "ListProfiles", "DriftDetected", "Corrected", "ProfileApplied"}
    c("busctl introspect lists the org.rtpart.Manager1 interface", want <= set(members), " ".join(sorted(want - set(members))) or None)
    c("ActiveProfile reads empty before any apply", r.get("prop_profile0") == 's ""', r.get("prop_profile0"))
    c("nobody may read properties (shipped policy)", r.get("nobody_read", "").startswith("b "), r.get("nobody_read"))
    c("nobody's Apply reaches rtpartd and is refused with PermissionDenied",
      "needs root" in r.get("nobody_apply", ""), r.get("nobody_apply"))
    c("varlink org.varlink.service.GetInfo answers on /run/rtpartd/org.rtpart.Manager",
      '"org.rtpart.Manager"' in r.get("varlink_info", ""), r.get("varlink_info"))
    c("rtpartctl status through the daemon", r.get("status0_rc") == "0", r.get("status0_rc"))
    c("rtpartctl plan realtime-virtual-host --json exits 0", r.get("plan_rc") == "0", r.get("plan_rc"))
    c("the plan has a knob cpuset/rtpart-rt/partition with a path", r.get("part_path", "").startswith("/"), r.get("part_path"))
    c("rtpartctl apply realtime-virtual-host exits 0 (see @@O apply lines)", r.get("apply_rc") == "0", r.get("apply_rc"))
    pending = json.loads(r.get("verify1_pending") or "[]")
    c("verify after apply: in sync, boot arguments (and read-only module parameters) pending (exit 4)",
      r.get("verify1_rc") == "4" and r.get("verify1_drift") == "[]" and "boot/nohz_full" in pending and
      all(k.startswith(("boot/", "module/")) for k in pending),
      f"rc {r.get('verify1_rc')}, drift {r.get('verify1_drift')}, pending {r.get('verify1_pending')}")
    c("system.slice AllowedCPUs= is the housekeeping CPU 0", r.get("slice_allowed1") == "0", r.get("slice_allowed1"))
    c("system.slice/cpuset.cpus reads 0", r.get("slice_cpus1") == "0", r.get("slice_cpus1"))
    c("user.slice AllowedCPUs= is 0", r.get("user_slice_allowed1") == "0", r.get("user_slice_allowed1"))
    c("the partition reads isolated", r.get("partition1") == "isolated", r.get("partition1"))
    c("the partition holds the isolated CPUs 1-3", r.get("partition1_cpus") == "1-3", r.get("partition1_cpus"))
    c("ActiveProfile, InSync, RebootRequired after apply",
      r.get("prop_profile1") == 's "realtime-virtual-host"' and r.get("prop_sync1") == "b true b true u 0",
      f"{r.get('prop_profile1')} / {r.get('prop_sync1')}")
    c("StatusText names the profile and its state",
      r.get("svc_StatusText1", "").startswith("realtime-virtual-host: in sync, reboot pending"), r.get("svc_StatusText1"))
    c("rtpartd pinned itself to the housekeeping CPU", r.get("daemon_cpus") == "0", r.get("daemon_cpus"))
    if "cpu/pm_qos" in r.get("plan_knobs", "").split():
        c("rtpartd holds /dev/cpu_dma_latency open (cpu/pm_qos; the device policy lets it)",
          int_or(r.get("pm_qos_held")) == 1, r.get("pm_qos_held"))
    c("systemctl reload rtpartd: SIGHUP reaches the same process, which stays up",
      r.get("reload_rc") == "0" and int_or(r.get("reload_seen")) >= 1 and r.get("reload_pid") == f"{r.get('svc_MainPID')} active",
      f"rc {r.get('reload_rc')}, seen {r.get('reload_seen')}, {r.get('reload_pid')}")
    # systemd writes a reset before the value: "AllowedCPUs=" then "AllowedCPUs=0"; the last one counts.
    c("systemd keeps AllowedCPUs=0 of system.slice in its control drop-in",
      (r.get("slice_dropin") or "?").split()[-1] == "AllowedCPUs=0",
      r.get("slice_dropin"))
    c("systemctl daemon-reload leaves everything in sync, the partition isolated",
      r.get("daemon_reload_rc") == "0" and r.get("verify_reload_drift") == "[]" and r.get("partition_reload") == "isolated",
      f"rc {r.get('daemon_reload_rc')}, drift {r.get('verify_reload_drift')}, partition {r.get('partition_reload')}")
    c("apply wrote the boot arguments to /etc/kernel/cmdline",
      "nohz_full=1-3" in r.get("kernel_cmdline_file", "") and "isolcpus=managed_irq,domain,1-3" in r.get("kernel_cmdline_file", ""),
      r.get("kernel_cmdline_file"))
    c("rtpartctl watch reported the sysctl drift", "sysctl/kernel.timer_migration" in r.get("drift_watch", ""), r.get("drift_watch"))
    c("within 2 s", 0 <= int_or(r.get("drift_ms")) <= 2000, r.get("drift_ms"))
    c("DriftCount 1 and InSync false meanwhile", r.get("drift_prop") == "u 1 b false", r.get("drift_prop"))
    c("verify exits 3 on the drift", r.get("verify_drift_rc") == "3", r.get("verify_drift_rc"))
    c("the drift clears when the value is put back", r.get("drift_cleared") == "u 0 b true", r.get("drift_cleared"))
    c("rtpartctl watch ends with 0 on SIGTERM", r.get("watch_rc") == "0", r.get("watch_rc"))
    pids = r.get("restart_pid", "").split(" -> ")
    n = [int_or(x) for x in r.get("restart_n", "").split(" -> ")]
    c("after SIGKILL, Restart=on-failure brings rtpartd back (new MainPID, NRestarts+1)",
      r.get("restart_state") == "active running" and len(pids) == 2 and pids[0] != pids[1] and len(n) == 2 and n[1] == n[0] + 1,
      f"{r.get('restart_state')}, pid {r.get('restart_pid')}, NRestarts {r.get('restart_n')}")
    c("the restarted rtpartd re-applied from its journal", int_or(r.get("restart_reapplied")) >= 1, r.get("restart_reapplied"))
    c("and is in sync (verify exit 4, no drift)", r.get("verify2_rc") == "4" and r.get("verify2_drift") == "[]",
      f"rc {r.get('verify2_rc')}, drift {r.get('verify2_drift')}")
    c("the partition and the slice survived the restart",
      r.get("partition2") == "isolated" and r.get("slice_allowed2") == "0", f"{r.get('partition2')}, {r.get('slice_allowed2')}")


def check_stage2(c, r, next_cmdline):
    c("stage 2 booted with the command line rtpart wrote", r.get("cmdline") == next_cmdline,
      f"{r.get('cmdline')!r} vs {next_cmdline!r}")
    c("the kernel isolates CPUs 1-3 (isolcpus, nohz_full)", r.get("isolated") == "1-3" and r.get("nohz_full") == "1-3",
      f"isolated {r.get('isolated')}, nohz_full {r.get('nohz_full')}")
    c("rtpartd is enabled and active after the reboot", r.get("svc_state") == "active enabled", r.get("svc_state"))
    c("stage 2: the sandbox refused rtpartd nothing (no EPERM, EROFS or SIGSYS in its journal)",
      r.get("sandbox_refusals") == "0", r.get("sandbox_refusals"))
    c("it re-applied the active profile at start", int_or(r.get("reapplied")) >= 1, r.get("reapplied"))
    c("StatusText: in sync, no reboot pending", r.get("svc_StatusText", "").startswith("realtime-virtual-host: in sync;"),
      r.get("svc_StatusText"))
    c("rtpartctl status after the reboot", r.get("status3_rc") == "0", r.get("status3_rc"))
    c("verify after the reboot: in sync, nothing pending (exit 0)",
      r.get("verify3_rc") == "0" and r.get("verify3_drift") == "[]" and r.get("verify3_pending") == "[]",
      f"rc {r.get('verify3_rc')}, drift {r.get('verify3_drift')}, pending {r.get('verify3_pending')}")
    c("system.slice is still confined to CPU 0", r.get("slice_allowed3") == "0" and r.get("slice_cpus3") == "0",
      f"{r.get('slice_allowed3')}, {r.get('slice_cpus3')}")
    c("the partition is isolated again", r.get("partition3") == "isolated", r.get("partition3"))
    c("properties after the reboot", r.get("prop_sync3") == 's "realtime-virtual-host" b true b false u 0', r.get("prop_sync3"))
    c("systemctl stop rtpartd: a clean exit (SIGTERM through the event loop)",
      r.get("stop_rc") == "0" and r.get("stop_result") == "inactive success 0", f"rc {r.get('stop_rc')}, {r.get('stop_result')}")
    c("rtpartd.socket stays listening while the service is stopped", r.get("stop_socket") == "active", r.get("stop_socket"))
    c("a varlink connection on rtpartd.socket starts rtpartd (rtpartctl status answers)",
      r.get("status_activated_rc") == "0" and r.get("socket_activation", "").startswith("active ") and
      "Profile:     realtime-virtual-host" in r.get("@status_activated", ""),
      f"rc {r.get('status_activated_rc')}, {r.get('socket_activation')}")
    c("a D-Bus call to org.rtpart.Manager1 starts rtpartd (bus activation, SystemdService=)",
      r.get("bus_activation") == 's "realtime-virtual-host"' and r.get("bus_activated", "").startswith("active "),
      f"{r.get('bus_activation')}, {r.get('bus_activated')}")
    c("rtpartctl revert exits 0", r.get("revert_rc") == "0", r.get("revert_rc"))
    c("revert empties AllowedCPUs= of system.slice and user.slice",
      r.get("slice_allowed4") == "" and r.get("user_slice_allowed4") == "",
      f"{r.get('slice_allowed4')!r}, {r.get('user_slice_allowed4')!r}")
    c("system.slice/cpuset.cpus is unrestricted again", r.get("slice_cpus4") in ("", "(absent)", "0-3"), r.get("slice_cpus4"))
    c("a service of system.slice runs on every CPU again", r.get("dbus_cpus4") == "0-3", r.get("dbus_cpus4"))
    c("revert removed the partition", r.get("partition4") == "(absent)" and r.get("partition4_dir") == "(absent)",
      f"{r.get('partition4')}, {r.get('partition4_dir')}")
    c("verify after revert: nothing applied", r.get("verify4_rc") == "0" and "No profile is applied" in r.get("@verify4", ""),
      f"rc {r.get('verify4_rc')}: {r.get('@verify4')}")
    c("revert restored /etc/kernel/cmdline byte for byte", r.get("cmdline_restored") == "yes", r.get("cmdline_restored"))
    c("ActiveProfile is empty after revert", r.get("prop_profile4") == 's ""', r.get("prop_profile4"))

    # A partition alone: the slice systemd made for it.
    p5 = r.get("part5_path", "")
    c("under systemd the partition is the slice rtpart\\x2drt.slice", p5 == "/sys/fs/cgroup/rtpart\\x2drt.slice/cpuset.cpus.partition", p5)
    c("apply of a partition-only profile exits 0", r.get("apply5_rc") == "0", r.get("@apply5"))
    c("the partition is isolated on CPUs 2-3", r.get("part5") == "isolated" and r.get("part5_cpus") == "2-3",
      f"{r.get('part5')}, {r.get('part5_cpus')}")
    c("systemd runs the slice with AllowedCPUs=2-3", r.get("part5_unit") == "active 2-3", r.get("part5_unit"))
    c("daemon-reload keeps cpuset at the root and the partition isolated",
      r.get("part5_reload") == "isolated" and "cpuset" in r.get("root_subtree5", "").split(),
      f"{r.get('part5_reload')}, root subtree_control {r.get('root_subtree5')}")
    c("verify after daemon-reload: in sync", r.get("verify5_rc") == "0", r.get("@verify5"))
    c("a unit started in the slice runs on the partition's CPUs",
      r.get("probe5_cpus") in ("2-3", "2,3") and "rtpart\\x2drt.slice/rtpart-probe.service" in r.get("probe5_cgroup", ""),
      f"{r.get('probe5_cpus')}, {r.get('probe5_cgroup')}")
    c("revert refuses while a task runs in the slice, and says why",
      r.get("revert5_busy_rc") == "1" and "still runs tasks" in r.get("@revert5_busy", "") and r.get("part5_busy") == "isolated",
      f"rc {r.get('revert5_busy_rc')}, {r.get('part5_busy')}: {r.get('@revert5_busy')}")
    c("revert once it is empty: the slice is stopped and gone",
      r.get("revert5_rc") == "0" and r.get("part5_after") == "(absent)" and r.get("part5_unit_after") == "inactive",
      f"rc {r.get('revert5_rc')}, {r.get('part5_after')}, {r.get('part5_unit_after')}: {r.get('@revert5')}")
    # rtpartctl alone: it loads libsystemd to ask systemd (it does not link it).
    c("rtpartctl --no-daemon apply: systemd runs the slice with AllowedCPUs=2-3, isolated",
      r.get("apply6_rc") == "0" and r.get("part6_unit") == "active 2-3" and r.get("part6") == "isolated",
      f"rc {r.get('apply6_rc')}, {r.get('part6_unit')}, {r.get('part6')}: {r.get('@apply6')}")
    c("rtpartctl --no-daemon revert: the slice is stopped and gone",
      r.get("revert6_rc") == "0" and r.get("part6_after") == "(absent)" and r.get("part6_unit_after") == "inactive",
      f"rc {r.get('revert6_rc')}, {r.get('part6_after')}, {r.get('part6_unit_after')}: {r.get('@revert6')}")


def main():
    if os.geteuid() != 0:
        skip("debootstrap, the image's root-owned files and the guest need root")
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        skip("qemu-system-x86_64 is not installed (Debian package qemu-system-x86; scripts/deps --test)")
    for tool, pkg in (("debootstrap", "debootstrap"), ("mkfs.ext4", "e2fsprogs")):
        if not shutil.which(tool):
            skip(f"{tool} is not installed (Debian package {pkg}; scripts/deps --test)")

    t_all = time.monotonic()
    try:
        deb = package_deb()
    except (RuntimeError, subprocess.SubprocessError) as e:
        print(f"FAIL: cannot build rtpart's Debian package: {e}")
        return 1
    # The root holds what the package depends on, and nothing of rtpart: apt in the guest finds
    # every dependency installed or fails naming the one the package forgot.
    packages = set(GUEST_PACKAGES) | set(debbuild.depends_packages(deb))
    url = mirror()
    t0 = time.monotonic()
    try:
        tarball, built = cached_root(packages, url)
    except (RuntimeError, subprocess.SubprocessError) as e:
        print(f"FAIL: cannot build the Debian root: {e}")
        return 1
    log(f"root: {'debootstrapped' if built else 'cached'} {tarball} ({time.monotonic() - t0:.0f} s; packages: {' '.join(sorted(packages))})")

    work = tempfile.mkdtemp(prefix="rtpart-vm-systemd-", dir="/var/tmp")
    logdir = os.path.join(BUILD, "meson-logs")
    os.makedirs(logdir, exist_ok=True)
    c = Checks()
    try:
        t0 = time.monotonic()
        root = os.path.join(work, "root")
        os.mkdir(root)
        subprocess.run(["tar", "-C", root, "--numeric-owner", "--xattrs", "--xattrs-include=*", "-xf", tarball], check=True)
        prepare_root(root, deb)
        # Debian's kernel, not the PREEMPT_RT one vm-rt-boot boots from the same root
        kernels = sorted(k for k in glob.glob(os.path.join(root, "boot", "vmlinuz-*")) if "-rt-" not in k)
        initrds = sorted(k for k in glob.glob(os.path.join(root, "boot", "initrd.img-*")) if "-rt-" not in k)
        if not kernels or not initrds:
            print("FAIL: the debootstrapped root has no kernel or initrd in /boot")
            return 1
        kernel, initrd = os.path.join(work, "vmlinuz"), os.path.join(work, "initrd.img")
        shutil.copy(kernels[-1], kernel)
        shutil.copy(initrds[-1], initrd)
        img = os.path.join(work, "disk.img")
        make_image(root, img)
        shutil.rmtree(root)
        log(f"image: {time.monotonic() - t0:.0f} s ({os.path.basename(kernels[-1])})")

        cmdline = BASE_CMDLINE
        results = {}
        for stage in (1, 2):
            console = os.path.join(logdir, f"vm-systemd-stage{stage}.log")
            text, qemu_out, elapsed, timed_out = boot(qemu, kernel, initrd, img, cmdline, console)
            r, lines = parse(text, stage)
            # The output of each command, joined, for the checks that look into it.
            for line in lines:
                m = re.match(r"@@O (\w+)\| ?(.*)", line)
                if m:
                    r["@" + m.group(1)] = (r.get("@" + m.group(1), "") + "\n" + m.group(2)).strip("\n")
            results[stage] = r
            log(f"stage {stage}: {elapsed:.0f} s, console in {console}")
            for line in lines:
                print(line)
            if qemu_out.strip():
                print(f"qemu said: {qemu_out.strip()[-2000:]}")
            if r.get("@end") != "yes":
                print("\n".join(text.splitlines()[-60:]))
                why = f"did not finish within {STAGE_TIMEOUT} s" if timed_out else "stopped before its @@END marker"
                c(f"stage {stage} of the guest ran to its end", False, why)
                break
            c(f"stage {stage}: the system came up (is-system-running)", r.get("system_state") in ("running", "degraded"),
              r.get("system_state"))
            c(f"stage {stage}: no failed units", r.get("failed_units") == "", r.get("failed_units"))
            if stage == 1:
                check_stage1(c, r)
                # The bootloader's part: the next boot takes what /etc/kernel/cmdline says.
                cmdline = r.get("next_cmdline") or BASE_CMDLINE
            else:
                check_stage2(c, r, cmdline)
    finally:
        if os.environ.get("RTPART_VM_KEEP"):
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    log(f"total: {time.monotonic() - t_all:.0f} s")
    return c.report()


if __name__ == "__main__":
    sys.exit(main())
