#!/usr/bin/env python3
"""The shipped programs link only the libraries they need at every start.

Usage: shipped_libraries.py RTPARTCTL RTPARTD

rtpartctl loads libsystemd itself the first time it asks systemd (lib/kernel/systemd.c): linked, it
and the six libraries it brings are mapped by every run, about 2 ms of each process's start. v1
cpusets are plain cgroupfs files, so neither program links or loads libcgroup. rtpartd links
libsystemd (sd-event, sd-bus); its netlink sockets (uevents, links, the proc connector) are plain
sockets, so it does not link libnl-3, whose pages cost it about 140 KiB of memory. Reads the
programs' DT_NEEDED entries with readelf; exits 77 without it.
"""
import shutil
import subprocess
import sys

ALLOWED = {
    "rtpartctl": {"libc.so.6", "libjansson.so.4"},
    "rtpartd": {"libc.so.6", "libjansson.so.4", "libsystemd.so.0"},
}

# The runtimes of a -Db_sanitize= build (scripts/test's ASan lane).
SANITIZERS = ("libasan.so", "libubsan.so", "liblsan.so", "libtsan.so")


def needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return {line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line}


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    if not shutil.which("readelf"):
        print("readelf not found (Debian package binutils): cannot read the programs' libraries", file=sys.stderr)
        return 77
    failed = False
    for name, path in zip(("rtpartctl", "rtpartd"), sys.argv[1:]):
        libs = needed(path)
        extra = sorted(lib for lib in libs - ALLOWED[name] if not lib.startswith(SANITIZERS))
        if extra or "libc.so.6" not in libs:
            failed = True
            print(f"{path}: links {', '.join(extra) or 'no libc'}; allowed: {', '.join(sorted(ALLOWED[name]))}",
                  file=sys.stderr)
        else:
            print(f"{path}: links {', '.join(sorted(libs))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
