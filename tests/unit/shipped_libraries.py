#!/usr/bin/env python3
"""The shipped programs link only the libraries they need at every start.

Usage: shipped_libraries.py RTPARTCTL RTPARTD

rtpartctl loads libsystemd itself the first time it asks systemd (lib/kernel/systemd.c): linked, it
and the six libraries it brings are mapped by every run, about 2 ms of each process's start. Both
programs change cgroups through libcgroup, which they load the first time a cgroup changes
(lib/kernel/root-cgroup.c): each must name its SONAME for dlopen and neither may link it. rtpartd
links libsystemd (sd-event, sd-bus); its netlink sockets (uevents, links, the proc connector) are
plain sockets, so it does not link libnl-3, whose pages cost it about 140 KiB of memory. Reads the
programs' DT_NEEDED entries with readelf, and the SONAMEs they dlopen from their strings; exits 77
without readelf.
"""
import re
import shutil
import subprocess
import sys

ALLOWED = {
    "rtpartctl": {"libc.so.6", "libjansson.so.4"},
    "rtpartd": {"libc.so.6", "libjansson.so.4", "libsystemd.so.0"},
}

# The SONAMEs each program dlopens on first use (strings in it), none of them in its DT_NEEDED.
DLOPENED = {
    "rtpartctl": {"libsystemd.so.0", "libcgroup.so.2"},
    "rtpartd": {"libcgroup.so.2"},
}

# The runtimes of a -Db_sanitize= build (scripts/test's ASan lane).
SANITIZERS = ("libasan.so", "libubsan.so", "liblsan.so", "libtsan.so")


def needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return {line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line}


def dlopen_list(path, libs):
    """The SONAMEs in the program's strings that it does not link: those it names for dlopen."""
    with open(path, "rb") as f:
        names = {m.decode() for m in re.findall(rb"lib[A-Za-z0-9_+-]+\.so\.[0-9]+", f.read())}
    return names - libs


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
        loaded = dlopen_list(path, libs)
        if not DLOPENED[name] <= loaded or DLOPENED[name] & libs:
            failed = True
            print(f"{path}: dlopens {', '.join(sorted(loaded)) or 'nothing'}, links {', '.join(sorted(libs))}; "
                  f"must dlopen and not link {', '.join(sorted(DLOPENED[name]))}", file=sys.stderr)
        else:
            print(f"{path}: dlopens {', '.join(sorted(loaded))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
