#!/usr/bin/env python3
"""The floor's list (see bench/floor.c) of one rtpartctl command, from an strace of the command.

rtpartctl runs once under `strace -f -y -xx`; what it did (open, getdents64, write, mkdir, unlink)
becomes the list of the fewest calls for the same work, and the count of all its calls is kept
beside (counts["syscalls"], and counts["fsyncs"] of them):
  - r: every file it opened to read, once (the first time), whether the open worked or not,
  - d: every directory it listed (getdents64),
  - w: every file it opened to write without creating it (a knob), with the last bytes written,
  - f: every file it replaced (a temporary ".#NAME.PID.tmp" renamed over NAME: boot arguments,
    module options), with the last content, written once,
  - m / x / u: the directories it made or removed and the files it unlinked, leaving out what the
    simulator does inside a directory made or removed by the same command (a cgroup's own files),
  - c: the journal. Whatever the command writes under the state directory is replaced by COMMITS
    (1 by default) durable commits of a file the size of the changed knobs' paths and values, in a
    directory beside it: the originals must be on disk before the first knob is written; one
    commit is the least that allows that (a reader of the journal tells a finished transaction
    from the knobs themselves).
Left out: the dynamic loader's and libc's files (shared libraries, ld.so.cache, locales), the real
/dev (urandom has no end to read to; a fake host's dev/ stays in), lock files (opened, never written), directories opened only as a base for *at() calls.

    python3 bench/floorlist.py [--state-dir DIR] [--commits N] -o LIST -- rtpartctl ARGS...
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HEXSTR = r'"((?:\\x[0-9a-f]{2})*)"(\.\.\.)?'
FD = r"(AT_FDCWD|-?\d+)(?:<((?:\\x[0-9a-f]{2})*)>)?"
RET = r"= (-?\d+)"
PATTERNS = {
    "openat": re.compile(rf"openat\({FD}, {HEXSTR}, ([A-Z_|0-9x]+)(?:, \d+)?\) {RET}"),
    "openat2": re.compile(rf"openat2\({FD}, {HEXSTR}, \{{flags=([A-Z_|0-9x]+)[^}}]*\}}, \d+\) {RET}"),
    "open": re.compile(rf"open\({HEXSTR}, ([A-Z_|0-9x]+)(?:, \d+)?\) {RET}"),
    "getdents64": re.compile(rf"getdents64\({FD}, "),
    "write": re.compile(rf"(?:write|pwrite64)\({FD}, {HEXSTR}, \d+(?:, \d+)?\) {RET}"),
    "mkdirat": re.compile(rf"mkdirat\({FD}, {HEXSTR}, \d+\) {RET}"),
    "mkdir": re.compile(rf"mkdir\({HEXSTR}, \d+\) {RET}"),
    "unlinkat": re.compile(rf"unlinkat\({FD}, {HEXSTR}, (\w+)\) {RET}"),
    "unlink": re.compile(rf"unlink\({HEXSTR}\) {RET}"),
    "rmdir": re.compile(rf"rmdir\({HEXSTR}\) {RET}"),
}
SKIP_PREFIXES = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/etc/ld.so", "/usr/share/locale/",
                 "/etc/localtime", "/usr/share/zoneinfo/", "/etc/nsswitch.conf", "/etc/passwd",
                 "/etc/group")
TMP = re.compile(r"^\.#(.+)\.\d+\.tmp$")


def skipped(path):
    return path.startswith(SKIP_PREFIXES) or (path.startswith("/dev/") and not path.startswith("/dev/shm/"))


def unhex(s):
    return bytes.fromhex(s.replace("\\x", "")) if s else b""


def fd_path(token, hexpath):
    """The directory a *at() call starts from; None for the working directory."""
    if token == "AT_FDCWD":
        return None
    return unhex(hexpath).decode(errors="surrogateescape") if hexpath else "/"


def join(base, rel):
    """An absolute path: rel from base (an openat2 RESOLVE_IN_ROOT path, even "/x", is below base)."""
    if base is None:
        return os.path.normpath(os.path.join(os.getcwd(), rel))
    return os.path.normpath(os.path.join(base, rel.lstrip("/")))


class Open:
    def __init__(self, path, flags, ok):
        self.path, self.flags, self.ok = path, flags, ok
        self.listed = False
        self.data = None  # bytes written, when written
        self.truncated = False  # strace showed only the first -s bytes of a write

    @property
    def writing(self):
        return "O_WRONLY" in self.flags or "O_RDWR" in self.flags


def trace(cmd, out, env=None):
    """Runs cmd under strace; returns its exit code. The trace goes to out."""
    env = dict(env if env is not None else os.environ)
    # LeakSanitizer cannot run under ptrace; an ASan build's leak check would fail the traced run
    env["ASAN_OPTIONS"] = ":".join(o for o in (env.get("ASAN_OPTIONS"), "detect_leaks=0") if o)
    p = subprocess.run(["strace", "-f", "-qq", "-y", "-xx", "-s", str(1 << 20), "-o", out, "-e", "signal=none"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    return p.returncode, p.stderr.decode(errors="replace")


def events(path, totals):
    """The calls of a trace, in order: (kind, ...). totals["syscalls"]: how many calls it made in all."""
    fds = {}  # (pid, fd) → Open
    with open(path, errors="surrogateescape") as f:
        for line in f:
            pid, _, call = line.partition(" ")
            call = call.lstrip()
            name = call.partition("(")[0]
            if not call.startswith(("+++", "---", "<...")):
                totals["syscalls"] = totals.get("syscalls", 0) + 1
            if name in ("fsync", "fdatasync", "sync_file_range", "syncfs", "sync"):
                totals["fsyncs"] = totals.get("fsyncs", 0) + 1
            if name not in ("openat", "openat2", "open", "getdents64", "write", "pwrite64", "mkdir", "mkdirat", "rmdir",
                            "unlink", "unlinkat"):
                continue
            if "<unfinished" in call:
                sys.exit(f"floorlist: {path}: a call interrupted by another thread; trace a single-threaded command")
            m = PATTERNS["write" if name == "pwrite64" else name].match(call)
            if not m:
                continue
            g = m.groups()
            if name in ("openat", "openat2"):
                base = fd_path(g[0], g[1])
                o = Open(join(base, unhex(g[2]).decode(errors="surrogateescape")), g[4], int(g[5]) >= 0)
                if o.ok:
                    fds[(pid, int(g[5]))] = o
                yield "open", o
            elif name == "open":
                o = Open(join(None, unhex(g[0]).decode(errors="surrogateescape")), g[2], int(g[3]) >= 0)
                if o.ok:
                    fds[(pid, int(g[3]))] = o
                yield "open", o
            elif name == "getdents64":
                o = fds.get((pid, int(g[0]))) if g[0] != "AT_FDCWD" else None
                if o:
                    o.listed = True
            elif name in ("write", "pwrite64"):
                o = fds.get((pid, int(g[0])))
                if o:
                    o.truncated = o.truncated or bool(g[3])  # the journal may be longer than -s
                    o.data = (o.data or b"") + unhex(g[2]) if name == "write" else unhex(g[2])
            elif name == "mkdirat":
                yield "mkdir", join(fd_path(g[0], g[1]), unhex(g[2]).decode(errors="surrogateescape")), int(g[4]) >= 0
            elif name == "mkdir":
                yield "mkdir", join(None, unhex(g[0]).decode(errors="surrogateescape")), int(g[2]) >= 0
            elif name == "unlinkat":
                p = join(fd_path(g[0], g[1]), unhex(g[2]).decode(errors="surrogateescape"))
                yield ("rmdir" if "AT_REMOVEDIR" in g[4] else "unlink"), p, int(g[5]) >= 0
            elif name == "unlink":
                yield "unlink", join(None, unhex(g[0]).decode(errors="surrogateescape")), int(g[2]) >= 0
            elif name == "rmdir":
                yield "rmdir", join(None, unhex(g[0]).decode(errors="surrogateescape")), int(g[2]) >= 0


def under(path, d):
    return d is not None and (path == d or path.startswith(d.rstrip("/") + "/"))


def make_list(trace_path, state_dir=None, commits=1, journal=None):
    """The floor's list (lines, without newlines) of a trace, and counts by op."""
    opens, dirops, totals = [], [], {}
    for ev in events(trace_path, totals):
        if ev[0] == "open":
            opens.append(ev[1])
            dirops.append(("open", ev[1]))
        else:
            dirops.append(ev)
    state_dir = os.path.normpath(state_dir) if state_dir else None

    made = [p for kind, p, ok in (e for e in dirops if e[0] == "mkdir") if ok and not under(p, state_dir)]
    removed = [p for kind, p, ok in (e for e in dirops if e[0] == "rmdir") if not under(p, state_dir)]
    ops, seen_read, last_write, journal_written = [], set(), {}, False
    for ev in dirops:
        if ev[0] == "open":
            o = ev[1]
            if skipped(o.path) or "O_PATH" in o.flags:
                continue
            if under(o.path, state_dir) and o.writing:
                journal_written = journal_written or o.data is not None
                continue
            if o.writing:
                if o.data is None:
                    continue  # a lock, or a knob opened and left alone
                tmp = TMP.match(os.path.basename(o.path))
                if tmp:
                    target = os.path.join(os.path.dirname(o.path), tmp.group(1))
                    key = ("f", target)
                elif "O_CREAT" in o.flags:
                    continue  # a file the simulator makes
                else:
                    key = ("w", o.path)
                if o.truncated:
                    sys.exit(f"floorlist: {trace_path}: a write to {o.path} longer than strace's -s; raise it")
                if key not in last_write:
                    ops.append(key)
                last_write[key] = o.data
            elif "O_DIRECTORY" in o.flags and not o.listed:
                continue  # a base for *at() calls
            elif o.listed and any(under(o.path, d) for d in removed):
                continue  # the simulator emptying a directory the command removes
            else:
                key = ("d" if o.listed else "r", o.path)
                if key not in seen_read:
                    seen_read.add(key)
                    ops.append(key)
        else:
            kind, p, ok = ev
            if under(p, state_dir) or TMP.match(os.path.basename(p)):
                continue
            if kind == "mkdir" and (not ok or any(under(p, d) and p != d for d in made)):
                continue
            if kind in ("unlink", "rmdir") and any(under(p, d) and p != d for d in removed):
                continue  # the simulator emptying a directory the command removes
            ops.append(({"mkdir": "m", "rmdir": "x", "unlink": "u"}[kind], p))

    unlinked = {p for k, p in ops if k == "u"}
    ops = [(k, p) for k, p in ops if not (k == "f" and p in unlinked)]  # rewritten, then removed: removed
    lines, counts = [], {}
    journal_size = sum(len(p) + len(last_write[(k, p)]) for k, p in ops if k in ("w", "f"))
    if journal_written and commits:
        # Before the first knob written: the originals are on disk before anything changes.
        first = next((i for i, (k, _) in enumerate(ops) if k in ("w", "f", "m", "x", "u")), len(ops))
        for i in range(commits):
            ops.insert(first if i == 0 else len(ops), ("c", journal))
    for k, p in ops:
        if "\t" in p or "\n" in p:
            continue
        counts[k] = counts.get(k, 0) + 1
        if k in ("w", "f"):
            lines.append(f"{k}\t{p}\t{last_write[(k, p)].hex()}")
        elif k == "c":
            lines.append(f"c\t{p}\t{max(journal_size, 1)}")
        else:
            lines.append(f"{k}\t{p}")
    counts["syscalls"] = totals.get("syscalls", 0)  # rtpart's, all kinds, for comparison
    counts["fsyncs"] = totals.get("fsyncs", 0)  # rtpart's, against the floor's two per commit
    return lines, counts


def record(cmd, out, state_dir=None, commits=1, journal=None, env=None, expect=(0,)):
    """Runs cmd once under strace and writes the floor's list of it to out; returns the counts by op."""
    with tempfile.NamedTemporaryFile(prefix="rtpart-floor-", suffix=".strace", delete=False) as t:
        trace_path = t.name
    try:
        rc, err = trace(cmd, trace_path, env=env)
        if rc not in expect:
            sys.exit(f"floorlist: {' '.join(cmd)} exited {rc} under strace: {err[-2000:]}")
        lines, counts = make_list(trace_path, state_dir, commits, journal)
    finally:
        os.unlink(trace_path)
    with open(out, "w") as f:
        f.write("".join(ln + "\n" for ln in lines))
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--state-dir", help="rtpart's state directory (the journal): its writes become commits")
    ap.add_argument("--commits", type=int, default=1)
    ap.add_argument("--journal", help="the floor's commit file (default: beside the state directory)")
    ap.add_argument("cmd", nargs="+")
    args = ap.parse_args()
    journal = args.journal or (args.state_dir.rstrip("/") + "-floor-journal" if args.state_dir else "/tmp/floor-journal")
    counts = record(args.cmd, args.output, args.state_dir, args.commits, journal, expect=range(256))
    print(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
