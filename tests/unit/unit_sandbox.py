#!/usr/bin/env python3
"""rtpartd.service's sandbox lets rtpartd and the bootloader tools it runs write the bootloader's
files (suite unit, a check of the tree).

ProtectSystem= mounts /usr, /boot and /efi (and /etc with "full") read-only; ReadWritePaths= opens
a directory below one of them, but not the very path ProtectSystem= names: that one stays
read-only (measured with systemd 252 in a Debian guest booted by GRUB: update-grub, run by
rtpartd, failed with "cannot create /boot/grub/grub.cfg.new: Read-only file system" while the unit
listed ReadWritePaths=-/boot). So no ReadWritePaths= entry may be such a path, and every file the
boot backend writes, or has update-grub write, must lie below an entry that is not one.
"""
import os
import sys

SOURCE = os.environ.get("RTPART_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNIT = os.path.join(SOURCE, "systemd", "rtpartd.service.in")
PROTECTED = {"yes": ["/usr", "/boot", "/efi"], "true": ["/usr", "/boot", "/efi"],
             "full": ["/usr", "/boot", "/efi", "/etc"]}
# What rtpartd writes below a protected directory, itself or through update-grub/grub2-mkconfig.
WRITTEN = ["/boot/grub/grub.cfg", "/boot/grub2/grub.cfg", "/boot/loader/entries/debian.conf",
           "/boot/efi/loader/entries/debian.conf", "/etc/default/grub.d/rtpart.cfg", "/etc/kernel/cmdline",
           "/etc/modprobe.d/rtpart.conf", "/etc/default/irqbalance"]


def settings(text, key):
    out = []
    for line in text.splitlines():
        k, sep, v = line.partition("=")
        if sep and k.strip() == key:
            out += v.split()
    return out


def below(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def main():
    with open(UNIT) as f:
        text = f.read()
    protect = (settings(text, "ProtectSystem") or ["no"])[-1]
    protected = PROTECTED.get(protect, [])
    writable = [p.lstrip("-+") for p in settings(text, "ReadWritePaths")]
    failed = 0
    for p in writable:
        if p in protected:
            failed += 1
            print(f"FAILED: {UNIT}: ReadWritePaths= names {p}, which ProtectSystem={protect} keeps read-only "
                  f"whatever ReadWritePaths= says; name the directories below it that rtpartd writes")
    for f in WRITTEN:
        top = [t for t in protected if below(f, t)]
        if top and not any(below(f, w) and w not in protected for w in writable):
            failed += 1
            print(f"FAILED: {UNIT}: {f} lies below {top[0]} (read-only under ProtectSystem={protect}) and below no "
                  f"ReadWritePaths= directory")
    print(f"{len(writable)} writable paths under ProtectSystem={protect}: {failed} problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
