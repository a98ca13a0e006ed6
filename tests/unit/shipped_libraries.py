#!/usr/bin/env python3
"""The shipped programs link only the libraries they need at every start, and declare the ones they
load on first use.

Usage: shipped_libraries.py RTPARTCTL RTPARTD

rtpartctl loads libsystemd itself the first time it asks systemd (lib/kernel/systemd.c): linked, it
and the six libraries it brings are mapped by every run, about 2 ms of each process's start. Both
programs load libnl-3 and libnl-genl-3 the first time they ask a NIC's channels (ethtool's generic
netlink family, lib/kernel/ethtool.c): a command that touches no NIC maps neither (bench/
bench-dlopen.py measures what mapping them costs). Both change cgroups through libcgroup, which
they load the first time a cgroup changes (lib/kernel/root-cgroup.c). rtpartd links libsystemd
(sd-event, sd-bus); its netlink sockets (uevents, links, the proc connector) are libnl's, with
libnl-route-3 for link messages, loaded when it starts listening: it links no libnl.

A library loaded with dlopen() is declared in the program as an ELF note (section .note.dlopen,
owner "FDO", type 0x407c0c0a, a JSON list of {"soname": [...], ...}: lib/base/dlopen-note.h). The
test reads each program's DT_NEEDED entries and its notes with readelf (77 without it), and fails
when a program links a library it should load, or loads one it does not declare, or declares one
that is not what it should load."""
import json
import shutil
import struct
import subprocess
import sys

LINKED = {
    "rtpartctl": {"libc.so.6", "libjansson.so.4"},
    "rtpartd": {"libc.so.6", "libjansson.so.4", "libsystemd.so.0"},
}
LIBNL = {"libnl-3.so.200", "libnl-genl-3.so.200"}
LOADED = {
    "rtpartctl": {"libsystemd.so.0", "libcgroup.so.2"} | LIBNL,
    # libsystemd: linked, so found loaded; libnl-route-3: its netlink sockets
    "rtpartd": {"libsystemd.so.0", "libcgroup.so.2", "libnl-route-3.so.200"} | LIBNL,
}

# The runtimes of a -Db_sanitize= build (scripts/test's ASan lane).
SANITIZERS = ("libasan.so", "libubsan.so", "liblsan.so", "libtsan.so")
NOTE_OWNER = b"FDO\0"
NOTE_TYPE = 0x407C0C0A


def needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return {line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line}


def section_bytes(path, name):
    """The bytes of a section, from readelf's hex dump; b"" when the program has none."""
    res = subprocess.run(["readelf", "--wide", "-x", name, path], capture_output=True, text=True)
    data = bytearray()
    for line in res.stdout.splitlines():
        parts = line.split()
        if not parts or not parts[0].startswith("0x"):
            continue
        for word in parts[1:5]:
            if all(c in "0123456789abcdefABCDEF" for c in word):
                data += bytes.fromhex(word)
    return bytes(data)


def dlopen_notes(path):
    """The sonames the program's .note.dlopen notes declare, and what is wrong with them."""
    data, off, sonames, errors = section_bytes(path, ".note.dlopen"), 0, set(), []
    while off + 12 <= len(data):
        namesz, descsz, ntype = struct.unpack_from("<III", data, off)
        off += 12
        name = data[off:off + namesz]
        off += (namesz + 3) & ~3
        desc = data[off:off + descsz]
        off += (descsz + 3) & ~3
        if name != NOTE_OWNER or ntype != NOTE_TYPE:
            errors.append(f"a note of owner {name!r} and type {ntype:#x} in .note.dlopen")
            continue
        try:
            entries = json.loads(desc.rstrip(b"\0").decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            errors.append(f"a note that is not JSON: {e}")
            continue
        for e in entries:
            if not isinstance(e.get("soname"), list) or not e.get("feature") or \
                    e.get("priority") not in ("required", "recommended", "suggested"):
                errors.append(f"a note without soname list, feature or priority: {e}")
            sonames.update(e.get("soname") or [])
    return sonames, errors


def check(name, path):
    """The problems of one program (a list of messages), and what it links and loads."""
    libs = needed(path)
    loads, problems = dlopen_notes(path)
    extra = sorted(lib for lib in libs - LINKED[name] if not lib.startswith(SANITIZERS))
    if extra or "libc.so.6" not in libs:
        problems.append(f"links {', '.join(extra) or 'no libc'}; allowed: {', '.join(sorted(LINKED[name]))}")
    linked_loaded = sorted(libs & (LOADED[name] - LINKED[name]))
    if linked_loaded:
        problems.append(f"links {', '.join(linked_loaded)}, which it should load when it first uses it")
    if loads != LOADED[name]:
        problems.append(f"declares it loads {', '.join(sorted(loads)) or 'nothing'}; "
                        f"expected {', '.join(sorted(LOADED[name]))}")
    return problems, libs, loads


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    if not shutil.which("readelf"):
        print("readelf not found (Debian package binutils): cannot read the programs' libraries", file=sys.stderr)
        return 77
    failed = False
    for name, path in zip(("rtpartctl", "rtpartd"), sys.argv[1:]):
        problems, libs, loads = check(name, path)
        for p in problems:
            failed = True
            print(f"{path}: {p}", file=sys.stderr)
        if not problems:
            print(f"{path}: links {', '.join(sorted(libs))}; loads {', '.join(sorted(loads))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
