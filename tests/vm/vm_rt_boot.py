#!/usr/bin/env python3
"""PREEMPT_RT end to end, through a real bootloader (suite vm).

A Debian 12 guest with systemd as PID 1 and Debian's PREEMPT_RT kernel (linux-image-rt-amd64):
vm-systemd's root, debootstrapped once for both and cached (tests/vm/vm_systemd.py), rtpart's
Debian package of the tree installed into it by apt in the guest (as in vm-systemd). It boots as a machine does: OVMF (UEFI firmware) starts systemd-boot from an
EFI system partition (a FAT image made with mkfs.vfat and mtools: no loop device), which reads
the BLS entry loader/entries/rtpart.conf and boots the kernel with its "options". The guest
mounts that partition at /boot/efi, so the entry rtpart edits is the file the bootloader reads.
One qemu run spans three boots (tests/vm/vm_rt_boot_guest.sh reboots the guest itself):

  1. the .deb installed (it enables and starts rtpartd), realtime-virtual-host applied: the entry gets the boot
     arguments; reboot;
  2. /proc/cmdline carries them, the kernel isolates the CPUs, verify exits 0; audit while the
     housekeeping CPU does disk and network I/O (virtio-blk, and virtio-net on qemu's user-mode
     network) finds no device IRQ on an isolated CPU; the serial port's IRQ
     moved onto an isolated CPU behind rtpart's back is named by audit; check latency runs
     timerlat on the isolated CPUs (figures printed, never judged: TCG) and leaves tracefs as it
     was; revert; reboot;
  3. the original command line and the entry, byte for byte, are back.

Needs root. Installs nothing on this machine: exits 77 with the reason when qemu, OVMF (ovmf),
mkfs.vfat (dosfstools), mcopy (mtools), debootstrap, mkfs.ext4, dpkg-buildpackage or debhelper is
missing (scripts/deps --test installs them). The serial console is kept in the build directory's meson-logs/vm-rt-boot.log.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vm_systemd as vs  # noqa: E402

GUEST_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vm_rt_boot_guest.sh")
PACKAGES = vs.GUEST_PACKAGES
OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.fd"
TIMEOUT = 1500  # three boots under TCG, UEFI firmware included
ESP_MB = 256
# The guest's own arguments: vm-systemd's.
CMDLINE = vs.BASE_CMDLINE


def make_esp(root, esp):
    """The EFI system partition, partitionless FAT: systemd-boot as the removable-media loader,
    the guest's kernel and initrd, and the one BLS entry."""
    efi = os.path.join(root, "usr/lib/systemd/boot/efi/systemd-bootx64.efi")
    kernels = sorted(glob.glob(os.path.join(root, "boot", "vmlinuz-*-rt-amd64")))
    initrds = sorted(glob.glob(os.path.join(root, "boot", "initrd.img-*-rt-amd64")))
    if not os.path.exists(efi) or not kernels or not initrds:
        raise RuntimeError("the guest root lacks systemd-bootx64.efi or the RT kernel and initrd")
    subprocess.run(["mkfs.vfat", "-C", "-n", "ESP", esp, str(ESP_MB * 1024)], check=True, stdout=subprocess.DEVNULL)
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")

    def mcopy(src, dst):
        subprocess.run(["mcopy", "-i", esp, src, "::" + dst], check=True, env=env)

    subprocess.run(["mmd", "-i", esp, "::/EFI", "::/EFI/BOOT", "::/loader", "::/loader/entries"], check=True, env=env)
    mcopy(efi, "/EFI/BOOT/BOOTX64.EFI")
    mcopy(kernels[-1], "/vmlinuz")
    mcopy(initrds[-1], "/initrd.img")
    with tempfile.TemporaryDirectory() as t:
        conf, entry = os.path.join(t, "loader.conf"), os.path.join(t, "rtpart.conf")
        with open(conf, "w") as f:
            f.write("timeout 0\ndefault rtpart.conf\n")
        with open(entry, "w") as f:
            f.write(f"title Debian GNU/Linux 12 (PREEMPT_RT)\nlinux /vmlinuz\ninitrd /initrd.img\n"
                    f"options {CMDLINE}\n")
        mcopy(conf, "/loader/loader.conf")
        mcopy(entry, "/loader/entries/rtpart.conf")
    return os.path.basename(kernels[-1])


def main():
    if os.geteuid() != 0:
        vs.skip("debootstrap, the image's root-owned files and the guest need root")
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        vs.skip("qemu-system-x86_64 is not installed (Debian package qemu-system-x86; scripts/deps --test)")
    for tool, pkg in (("debootstrap", "debootstrap"), ("mkfs.ext4", "e2fsprogs"), ("mkfs.vfat", "dosfstools"),
                      ("mcopy", "mtools")):
        if not shutil.which(tool):
            vs.skip(f"{tool} is not installed (Debian package {pkg}; scripts/deps --test)")
    if not os.path.exists(OVMF_CODE):
        vs.skip(f"{OVMF_CODE} is missing (Debian package ovmf; scripts/deps --test)")

    t_all = time.monotonic()
    try:
        deb = vs.package_deb()
    except (RuntimeError, subprocess.SubprocessError) as e:
        print(f"FAIL: cannot build rtpart's Debian package: {e}")
        return 1
    packages = set(PACKAGES) | set(vs.debbuild.depends_packages(deb))
    t0 = time.monotonic()
    try:
        tarball, built = vs.cached_root(packages, vs.mirror())
    except (RuntimeError, subprocess.SubprocessError) as e:
        print(f"FAIL: cannot build the Debian root: {e}")
        return 1
    vs.log(f"root: {'debootstrapped' if built else 'cached'} {tarball} ({time.monotonic() - t0:.0f} s)")

    work = tempfile.mkdtemp(prefix="rtpart-vm-rt-boot-", dir="/var/tmp")
    logdir = os.path.join(vs.BUILD, "meson-logs")
    os.makedirs(logdir, exist_ok=True)
    console = os.path.join(logdir, "vm-rt-boot.log")
    c = vs.Checks()
    try:
        root = os.path.join(work, "root")
        os.mkdir(root)
        subprocess.run(["tar", "-C", root, "--numeric-owner", "--xattrs", "--xattrs-include=*", "-xf", tarball],
                       check=True)
        vs.prepare_root(root, deb)
        # The bootloader is real here: no /etc/kernel/cmdline stand-in; the ESP at /boot/efi.
        os.unlink(os.path.join(root, "etc/kernel/cmdline"))
        os.makedirs(os.path.join(root, "boot/efi"), exist_ok=True)
        vs.write(os.path.join(root, "etc/fstab"), "/dev/vdb /boot/efi vfat defaults 0 0\n")
        shutil.copy(GUEST_SCRIPT, os.path.join(root, "usr/local/sbin/rtpart-vm-test"))
        os.chmod(os.path.join(root, "usr/local/sbin/rtpart-vm-test"), 0o755)
        esp = os.path.join(work, "esp.img")
        kernel = make_esp(root, esp)
        img = os.path.join(work, "disk.img")
        vs.make_image(root, img)
        shutil.rmtree(root)
        vars_fd = os.path.join(work, "vars.fd")
        shutil.copy(OVMF_VARS, vars_fd)
        vs.log(f"images ready ({kernel}); booting through OVMF and systemd-boot")

        cmd = [qemu, "-accel", "tcg", "-cpu", "max", "-smp", "4", "-m", "1024",
               "-drive", f"if=pflash,format=raw,readonly=on,file={OVMF_CODE}",
               "-drive", f"if=pflash,format=raw,file={vars_fd}",
               "-drive", f"file={img},format=raw,if=virtio",
               "-drive", f"file={esp},format=raw,if=virtio",
               "-netdev", "user,id=net0", "-device", "virtio-net-pci,netdev=net0",
               "-display", "none", "-serial", f"file:{console}", "-monitor", "none", "-nodefaults"]
        if os.path.exists(console):
            os.unlink(console)  # qemu appends: an older run's markers would read as this one's
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        timed_out, ended = False, None
        # Until the guest powers off; given 180 s for that once its last stage has ended.
        while p.poll() is None:
            now = time.monotonic()
            if ended is None and os.path.exists(console):
                with open(console, "rb") as f:
                    if b"@@END stage=3" in f.read():
                        ended = now
            if now - t0 > TIMEOUT or (ended is not None and now - ended > 180):
                timed_out = ended is None
                os.kill(p.pid, 9)  # the qemu this run started, by its PID
                p.wait()
                break
            time.sleep(2)
        elapsed = time.monotonic() - t0
        with open(console, "rb") as f:
            text = f.read().decode(errors="replace")
        vs.log(f"guest: {elapsed:.0f} s, console in {console}")

        res, docs = {}, {}
        for stage in (1, 2, 3):
            r, lines = vs.parse(text, stage)
            for line in lines:
                if line.startswith("@@J "):
                    k, _, v = line[4:].partition("=")
                    try:
                        docs[k] = json.loads(v)
                    except ValueError:
                        docs[k] = {}
                        print(f"{k}: not JSON: {v[:300]!r}")
                elif not line.startswith("@@O "):
                    print(line)
            res[stage] = r
            if r.get("@end") != "yes":
                print("\n".join(text.splitlines()[-60:]))
                c(f"stage {stage} ran to its end", False, f"timed out after {TIMEOUT} s" if timed_out else "no @@END")
                return c.report()
        r1, r2, r3 = res[1], res[2], res[3]
        for n, r in res.items():
            c(f"boot {n}: the system came up on the PREEMPT_RT kernel",
              r.get("system_state") in ("running", "degraded") and "rt" in r.get("kernel", "") and r.get("realtime") == "1",
              f"{r.get('system_state')}, {r.get('kernel')}, realtime {r.get('realtime')}")
            c(f"boot {n}: no failed units", r.get("failed_units") == "", r.get("failed_units"))
        vs.check_install(c, r1)
        c("rtpart finds the BLS entry (bootloader bls)", r1.get("bootloader") == "bls", r1.get("bootloader"))
        c("systemctl enable --now rtpartd", r1.get("enable_rc") == "0", r1.get("enable_rc"))
        c("apply realtime-virtual-host", r1.get("apply_rc") == "0", r1.get("apply_rc"))
        applied = r1.get("entry_options_applied", "")
        c("apply wrote the boot arguments into the entry the bootloader reads",
          "isolcpus=managed_irq,domain,1-3" in applied and "nohz_full=1-3" in applied, applied)
        # systemd-boot puts initrd= before the entry's options.
        c("boot 2: the kernel command line is the entry's options",
          r2.get("cmdline", "").endswith(applied[len("options "):].strip()) and "nohz_full=1-3" in r2.get("cmdline", ""),
          r2.get("cmdline"))
        c("boot 2: the kernel isolates CPUs 1-3", r2.get("isolated") == "1-3" and r2.get("nohz_full") == "1-3",
          f"{r2.get('isolated')}, {r2.get('nohz_full')}")
        c("boot 2: rtpartd enabled and active", r2.get("svc_state") == "active enabled", r2.get("svc_state"))
        c("boot 2: verify exits 0", r2.get("verify_rc") == "0", r2.get("verify_rc"))

        a1, a2, lat = docs.get("audit1", {}), docs.get("audit2", {}), docs.get("lat", {})
        for name, a in (("audit under disk I/O", a1), ("audit with the IRQ moved", a2)):
            for cpu in a.get("cpu", []):
                irqs = ", ".join(f"{e.get('irq', e.get('row'))}x{e['count']}" for e in cpu["interrupts"]) or "none"
                noise = cpu.get("osnoise") or {}
                print(f"{name}: CPU {cpu['cpu']} {cpu['verdict']}; interrupts {irqs}; tick {cpu['tick']['rate']:.1f}/s; "
                      f"osnoise {noise.get('available_percent', 0):.2f}% available")
        c("audit observes the isolated CPUs of realtime-virtual-host",
          a1.get("cpus") == "1-3" and "realtime-virtual-host" in a1.get("source", ""), a1.get("source"))
        device = [(cpu["cpu"], e["irq"]) for cpu in a1.get("cpu", []) for e in cpu["interrupts"] if e["source"] == "irq"]
        c("the housekeeping CPU had network traffic during it (virtio-net IRQs counted)",
          r2.get("nic_rc") == "0" and vs.int_or(r2.get("net_irqs")) > 0, f"{r2.get('nic')}: {r2.get('net_irqs')}")
        c("no device IRQ on an isolated CPU while the housekeeping CPU does disk and network I/O", a1 and not device,
          device)
        moved = [e for cpu in a2.get("cpu", []) if str(cpu["cpu"]) == r2.get("moved_to")
                 for e in cpu["interrupts"] if str(e.get("irq")) == r2.get("serial_irq")]
        c("the IRQ moved behind rtpart's back is named by audit on its CPU",
          r2.get("move_rc") == "0" and len(moved) == 1 and moved[0]["count"] > 0 and "rtpart placed" in moved[0]["fix"],
          moved or r2.get("move_rc"))
        c("audit exits 3 then (noisy)", r2.get("audit2_rc") == "3", r2.get("audit2_rc"))
        for cpu in lat.get("cpu", []):
            print(f"check latency: CPU {cpu['cpu']} {cpu['thread']['samples']} samples, thread max "
                  f"{cpu['thread']['max_us']:.1f} µs (TCG: not a measurement)")
        c("check latency runs timerlat on CPUs 1-3",
          r2.get("lat_rc") == "0" and lat.get("tool") == "timerlat" and lat.get("cpus") == "1-3" and
          all(cpu["thread"]["samples"] > 0 for cpu in lat.get("cpu", [])), f"rc {r2.get('lat_rc')}")
        c("tracefs is as it was after check latency",
          r2.get("tracefs_sum_before") and r2.get("tracefs_sum_before") == r2.get("tracefs_sum_after"))
        c("revert exits 0", r2.get("revert_rc") == "0", r2.get("revert_rc"))
        c("revert gave the entry its options back", r2.get("entry_options_reverted") == r1.get("entry_options"),
          r2.get("entry_options_reverted"))
        c("boot 3: the original command line", r3.get("cmdline", "").endswith(CMDLINE) and
          "nohz_full" not in r3.get("cmdline", ""), r3.get("cmdline"))
        c("boot 3: the entry is byte for byte what it was", r3.get("entry_sum") == r1.get("entry_sum"),
          f"{r3.get('entry_sum')} vs {r1.get('entry_sum')}")
        c("boot 3: nothing isolated, verify exits 0", r3.get("isolated") == "" and r3.get("verify3_rc") == "0",
          f"{r3.get('isolated')!r}, rc {r3.get('verify3_rc')}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    vs.log(f"total: {time.monotonic() - t_all:.0f} s")
    return c.report()


if __name__ == "__main__":
    sys.exit(main())
