#!/usr/bin/env python3
"""The fault sweep: a failed or interrupted write at every point of apply and revert leaves the
user's tree exactly as it was.

The sim build of rtpartctl (RTPARTCTL) numbers every write it makes to a tree: a knob value, a
cgroup or resctrl object, a configuration file or drop-in replaced, a file or directory made or
removed, the journal (kept here in a --state-dir outside the tree, which the simulator wraps too).
RTPART_TEST_FAIL_AT=K with RTPART_TEST_FAIL_ERRNO fails the Kth write with that errno;
RTPART_TEST_CRASH_AFTER=K kills the process (SIGKILL) right after it (tests/sim/sim-root.c). For a
shipped profile on a bundled host (the build makes them in BUILD/tests/fixtures/hosts, with their
modes) and every point k:

  apply, its kth write failing with EIO, EPERM or ENOSPC: exit 1 and the tree byte for byte the
      original (every file's bytes and mode, the set of files, directories and symlinks), the
      journal closed with the failure as its last error, which `status` then shows; or exit 0 (the
      failure was one apply takes in its stride: a knob the kernel refuses) and `revert` then gives
      the original back;
  apply killed after its kth write: the next command (`status`) says the interrupted apply was
      rolled back and the tree is the original, or the kill came after the commit and `revert`
      gives the original back;
  revert (after a clean apply), its kth write failing with each errno or killed after it: then
      `status` and `revert` again give the original back (an interrupted revert is reported as
      rolled back first);

and after every command no temporary file (".#NAME.PID.tmp" or ".#NAME.PID-XXXXXXXX.tmp", the
journal's reserve) is left in the tree or the state directory. A file replaced is two points (its
temporary written, then its rename), so a kill also falls between them. The sweep counts the
points where a write really failed or the run was really killed (the write log, the exit status)
and fails when there are none: a sweep whose faults never happened proves nothing. The daemon: rtpartd (RTPARTD, the sim build) applying through varlink
with its kth write failing rolls back before it answers, answers with the failure and stays up.

Regressions, each a specific point of the sweep: the journal's last write of apply failing with
ENOSPC (direct and through rtpartd) once left the knobs changed and the transaction open; as root,
the same with the state directory on a real, nearly full tmpfs (skipped without root or mount);
revert with the write of an IRQ's original refused (EIO) once forgot that original; an apply killed
while rtpartd runs was once left open until some later command, rtpartd's safety check now rolls
it back; apply or revert killed between the GRUB drop-in's temporary and its rename once left the
temporary for good (the journal does not name the drop-in).

Bounded (meson, suite sysroot): every profile on the vm host at every k, and a deterministic sample
of k (every 29th, the first 8 and the last 8) on intel-2s and epyc for the first profile; the daemon
on the vm host at a sample of k. In full, from a shell (minutes to an hour; nice it):

    nice -n 10 python3 tests/sysroot/fault_sweep.py --full [--jobs N] [--hosts vm,epyc] [--profiles P,Q]

which runs every profile on every bundled host at every k and prints the points tried, the
failures (with the command that reproduces each) and the time taken. Exits 77 when the fixtures
or the programs are missing.
"""
import argparse
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("RTPART_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("RTPART_BUILD_DIR", os.path.join(SRC, "build"))
CTL = os.environ.get("RTPARTCTL") or os.path.join(BUILD, "tests", "sim", "rtpartctl")
DAEMON = os.environ.get("RTPARTD") or os.path.join(BUILD, "tests", "sim", "rtpartd")
HOSTS = os.environ.get("RTPART_HOSTS_DIR") or os.path.join(BUILD, "tests", "fixtures", "hosts")
from sysroot_apply import copy_host  # noqa: E402
PROFILES = ("realtime", "realtime-virtual-host", "realtime-virtual-guest", "cpu-partitioning")
ALL_HOSTS = ("vm", "intel-2s", "epyc")
ERRNOS = ("EIO", "EPERM", "ENOSPC")
VARIANTS = ERRNOS + ("kill",)
FAULT_ENV = ("RTPART_TEST_CRASH_AFTER", "RTPART_TEST_FAIL_AT", "RTPART_TEST_FAIL_ERRNO", "RTPART_TEST_WRITE_LOG")
TEMPORARY = re.compile(r"^\.#.*(\.\d+(-[0-9a-f]{8})?\.tmp|\.reserve)$")
TMPBASE = "/dev/shm" if os.path.isdir("/dev/shm") else None
VERBOSE = "--full" in sys.argv or "-v" in sys.argv


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


# ---- trees ----

def snapshot(root, skip_rel=()):
    """rel → (kind, mode, size, mtime_ns, link target): what a byte-for-byte comparison starts from.
    One lstat per entry (os.scandir), for trees of tens of thousands of files."""
    out = {}
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        with os.scandir(os.path.join(root, rel_dir)) as it:
            for e in it:
                rel = os.path.join(rel_dir, e.name) if rel_dir else e.name
                if rel in skip_rel:
                    continue
                st = e.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    out[rel] = ("link", st.st_mode, 0, 0, os.readlink(e.path))
                elif stat.S_ISDIR(st.st_mode):
                    out[rel] = ("dir", st.st_mode, 0, 0, None)
                    stack.append(rel)
                else:
                    out[rel] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, None)
    return out


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class Tree:
    """A copy of a bundled host with the shipped profiles, its journal in a state directory beside
    it, and the pristine copy every run is compared with."""

    def __init__(self, host):
        self.host = host
        self.tmp = tempfile.mkdtemp(prefix=f"rtpart-fault-{host}-", dir=TMPBASE)
        self.pristine = os.path.join(self.tmp, "pristine")
        self.root = os.path.join(self.tmp, "root")
        self.state = os.path.join(self.tmp, "state")
        self.fired = None  # what the last check_point() really did: "fail", "kill" or None
        copy_host(host, self.pristine)
        self.orig = snapshot(self.pristine)
        self.reset(full=True)

    def reset(self, full=False):
        """An empty state directory, and with full the tree copied again from the pristine copy
        (after a point that held, the tree is the original already)."""
        shutil.rmtree(self.state, ignore_errors=True)
        os.makedirs(self.state)
        if full:
            shutil.rmtree(self.root, ignore_errors=True)
            shutil.copytree(self.pristine, self.root, symlinks=True)

    def differences(self, limit=8):
        """Paths where the tree is not the pristine copy: bytes, mode, kind, link target, or present
        in one only."""
        now = snapshot(self.root, skip_rel=("run/rtpartd",))
        out = []
        for rel in sorted(set(now) | set(self.orig)):
            a, b = self.orig.get(rel), now.get(rel)
            if a is None or b is None or a[0] != b[0] or a[1] != b[1] or a[4] != b[4]:
                out.append(rel)
            elif a[0] == "file" and (a[2] != b[2] or a[3] != b[3]) and \
                    file_bytes(os.path.join(self.pristine, rel)) != file_bytes(os.path.join(self.root, rel)):
                out.append(rel)
            if len(out) >= limit:
                break
        return out

    def temporaries(self, in_root=True):
        out = []
        for base in (self.root, self.state) if in_root else (self.state,):
            for dirpath, dirnames, filenames in os.walk(base):
                out += [os.path.relpath(os.path.join(dirpath, f), self.tmp) for f in filenames if TEMPORARY.match(f)]
        return out

    def journal(self):
        try:
            with open(os.path.join(self.state, "state.json")) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def ctl(self, *args, env=None):
        e = {k: v for k, v in os.environ.items() if k not in FAULT_ENV}
        e.update(env or {})
        return subprocess.run([CTL, "--root", self.root, "--state-dir", self.state] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, text=True, timeout=300)

    def count_writes(self, *args):
        log = os.path.join(self.tmp, "writes.log")
        if os.path.exists(log):
            os.unlink(log)
        p = self.ctl(*args, env={"RTPART_TEST_WRITE_LOG": log})
        n = sum(1 for _ in open(log)) if os.path.exists(log) else 0
        return p, n

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def rotate(k, profile):
    """The variant of point k in a bounded sweep: each k one of them, in turn, starting elsewhere
    for every profile (so that each early point meets every variant)."""
    return VARIANTS[(k + PROFILES.index(profile)) % len(VARIANTS)]


def fault_env(variant, k):
    if variant == "kill":
        return {"RTPART_TEST_CRASH_AFTER": str(k)}
    return {"RTPART_TEST_FAIL_AT": str(k), "RTPART_TEST_FAIL_ERRNO": variant}


def write_failed(log, k):
    """Whether the write log (tests/sim/sim-root.c: "N OP PATH RESULT") has the kth write failed: the
    proof that a point of a failing variant was really tried."""
    try:
        with open(log) as f:
            for line in f:
                fields = line.split()
                if fields and fields[0] == str(k):
                    return fields[-1] != "ok"
    except FileNotFoundError:
        pass
    return False


# ---- one point ----

def check_point(t, phase, profile, variant, k):
    """Runs one fault point on tree t (pristine, empty state directory); returns a list of problems
    (empty: the point holds)."""
    problems = []

    def expect(cond, what, p=None):
        if not cond:
            out = f": exit {p.returncode}: {(p.stdout + p.stderr).strip()[:600]}" if p is not None else ""
            problems.append(what + out)
        return cond

    def original(after):
        """The tree is the original (so it holds no temporary either), the state directory has no
        temporary: one walk of the tree."""
        d = t.differences()
        expect(not d, f"after {after}, the tree differs from the original at {d}")
        tmp = t.temporaries(in_root=False)
        expect(not tmp, f"after {after}, temporary files are left: {tmp}")

    def no_temporaries(after):
        tmp = t.temporaries()
        expect(not tmp, f"after {after}, temporary files are left: {tmp}")

    env = fault_env(variant, k)
    log = os.path.join(t.tmp, "fault.log")
    if os.path.exists(log):
        os.unlink(log)
    env["RTPART_TEST_WRITE_LOG"] = log
    t.fired = None
    if phase == "revert":
        p = t.ctl("apply", profile)
        if not expect(p.returncode == 0, "the clean apply before the revert failed", p):
            return problems
        p = t.ctl("revert", env=env)
    else:
        p = t.ctl("apply", profile, env=env)
    what = f"{phase} with {'a kill after' if variant == 'kill' else variant + ' at'} write {k}"
    j = t.journal()
    # Whether the fault really happened: the process was killed, or the write log has its kth
    # write failed. A sweep in which none did proved nothing (fault injection broken).
    if variant == "kill" and p.returncode == -9:
        t.fired = "kill"
    elif variant != "kill" and write_failed(log, k):
        t.fired = "fail"

    if variant == "kill":
        if not expect(p.returncode in (-9, 0), f"{what}: not killed", p):
            return problems
        was_open = bool(j and j["transaction"])
        s = t.ctl("status")
        expect(s.returncode == 0, f"status after {what}", s)
        if was_open:
            expect("rolled back" in s.stderr, f"status after {what} does not say it rolled back", s)
            j = t.journal()
            expect(j is not None and j["transaction"] is None, f"status after {what} left the transaction open")
        if phase == "apply" and (not j or not j["profile"]):
            original(f"status after {what}")
        else:
            no_temporaries(f"status after {what}")
        # Whatever was left applied (the kill came after the commit, or an interrupted revert was
        # rolled back to the profile), revert gives the original back.
        r = t.ctl("revert")
        expect(r.returncode == 0, f"revert after {what}", r)
        original(f"revert after {what}")
        return problems

    if phase == "apply":
        if not expect(p.returncode in (0, 1), f"{what}: unexpected exit", p):
            return problems
        if p.returncode == 1:
            expect(p.stderr.strip() != "", f"{what}: no message", p)
            original(what)
            expect(j is None or j["transaction"] is None, f"{what}: the journal's transaction is left open")
            if j and j["last_error"]:
                s = t.ctl("status")
                expect(s.returncode == 0 and "Last error:" in s.stdout, f"status after {what} shows no last error", s)
            return problems
        no_temporaries(what)
        r = t.ctl("revert")
        expect(r.returncode == 0, f"revert after {what} (which succeeded)", r)
        original(f"revert after {what}")
        return problems

    # revert with a failing write: whatever it did, status answers and a revert finishes the job
    if not expect(p.returncode in (0, 1), f"{what}: unexpected exit", p):
        return problems
    if p.returncode == 1:
        expect(p.stderr.strip() != "", f"{what}: no message", p)
        expect(j is None or j["transaction"] is None, f"{what}: the journal's transaction is left open")
    no_temporaries(what)
    s = t.ctl("status")
    expect(s.returncode == 0, f"status after {what}", s)
    r = t.ctl("revert")
    expect(r.returncode == 0, f"revert after {what}", r)
    original(f"revert after {what}")
    return problems


def sample(n, every):
    """Every k of 1..n with every=1; else the first 8, the last 8 and every every-th between."""
    if every <= 1:
        return list(range(1, n + 1))
    return sorted(set(range(1, min(n, 8) + 1)) | set(range(max(1, n - 7), n + 1)) | set(range(1, n + 1, every)))


def probe(t, profile):
    """(writes of apply, writes of revert) on a fresh tree, and whether the clean cycle holds."""
    t.reset()
    p, n_apply = t.count_writes("apply", profile)
    if p.returncode != 0:
        raise RuntimeError(f"{t.host}/{profile}: clean apply failed: {p.stderr}")
    p, n_revert = t.count_writes("revert")
    if p.returncode != 0 or t.differences():
        raise RuntimeError(f"{t.host}/{profile}: clean revert failed or left differences: {p.stderr} {t.differences()}")
    return n_apply, n_revert


def sweep_task(task):
    """One (host, profile, phase, variant, ks) on a tree of its own: (points tried, failures, {"fail":
    writes that really failed, "kill": runs really killed})."""
    host, profile, phase, variant, every = task
    t = Tree(host)
    started = time.monotonic()
    fired = {"fail": 0, "kill": 0}
    try:
        n_apply, n_revert = probe(t, profile)
        ks = sample(n_apply if phase == "apply" else n_revert, every)
        failures = []
        for k in ks:
            v = rotate(k, profile) if variant == "rotate" else variant
            t.reset()
            problems = check_point(t, phase, profile, v, k)
            if t.fired:
                fired[t.fired] += 1
            for prob in problems:
                failures.append(f"{host} {profile} {phase} {v} k={k}: {prob}")
                if VERBOSE:
                    print("FAIL:", failures[-1], flush=True)
            if problems:
                t.reset(full=True)
        if VERBOSE:
            print(f"  {host} {profile} {phase} {variant}: {len(ks)} points, {len(failures)} failures, "
                  f"{time.monotonic() - started:.0f} s", flush=True)
        return len(ks), failures, fired
    finally:
        t.close()


def run_sweep(hosts, profiles, every_for, jobs, phases=("apply", "revert"), variants=VARIANTS):
    """variants ("rotate",): each k with one variant, in turn."""
    tasks = [(h, prof, ph, v, every_for(h)) for h in hosts for prof in profiles(h) for ph in phases for v in variants]
    points, failures, fired = 0, [], {"fail": 0, "kill": 0}
    if jobs <= 1:
        results = map(sweep_task, tasks)
    else:
        pool = multiprocessing.Pool(jobs)
        results = pool.imap_unordered(sweep_task, tasks)
    for n, f, x in results:
        points += n
        failures += f
        for key in fired:
            fired[key] += x[key]
    if jobs > 1:
        pool.close()
        pool.join()
    return points, failures, fired


# ---- the daemon ----

class Varlink:
    def __init__(self, path, timeout=60):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""

    def call(self, method, parameters=None):
        msg = {"method": "org.rtpart.Manager." + method}
        if parameters is not None:
            msg["parameters"] = parameters
        self.sock.sendall(json.dumps(msg).encode() + b"\0")
        while b"\0" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                return None
            self.buf += data
        m, _, self.buf = self.buf.partition(b"\0")
        return json.loads(m)

    def close(self):
        self.sock.close()


class Daemon:
    """rtpartd (the sim build) on tree t, its journal in t's state directory, its socket beside."""

    def __init__(self, t, env=None, args=()):
        self.t = t
        self.sock = os.path.join(t.tmp, "rtpartd.sock")
        self.log = open(os.path.join(t.tmp, "rtpartd.log"), "w+")
        e = {k: v for k, v in os.environ.items() if k not in FAULT_ENV}
        e.update(env or {})
        self.proc = subprocess.Popen([DAEMON, "--root", t.root, "--state-dir", t.state, "--no-dbus",
                                      "--varlink-socket", self.sock] + list(args), stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     env=e)
        end = time.monotonic() + 20
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"rtpartd exited with {self.proc.returncode}: {self.logtext()}")
            if os.path.exists(self.sock):
                try:
                    if self.call("Status") is not None:
                        return
                except OSError:
                    pass
            time.sleep(0.02)
        raise RuntimeError("rtpartd did not answer within 20 s: " + self.logtext())

    def call(self, method, parameters=None):
        c = Varlink(self.sock)
        try:
            return c.call(method, parameters)
        finally:
            c.close()

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        return self.proc.returncode


def daemon_writes(t, profile):
    """(writes rtpartd makes before its first call, writes of its Apply of profile)."""
    t.reset()
    log = os.path.join(t.tmp, "daemon-writes.log")
    if os.path.exists(log):
        os.unlink(log)
    d = Daemon(t, env={"RTPART_TEST_WRITE_LOG": log})
    try:
        start = sum(1 for _ in open(log)) if os.path.exists(log) else 0
        r = d.call("Apply", {"profile": profile})
        if not r or "error" in r:
            raise RuntimeError(f"rtpartd: clean Apply failed: {r}")
        total = sum(1 for _ in open(log))
    finally:
        d.stop()
        t.reset(full=True)
    return start, total - start


def check_daemon_point(t, profile, errno, k, start):
    """rtpartd applying with its kth write of Apply failing: problems (empty: the point holds)."""
    problems = []
    t.reset()
    log = os.path.join(t.tmp, "daemon-fault.log")
    if os.path.exists(log):
        os.unlink(log)
    d = Daemon(t, env={"RTPART_TEST_FAIL_AT": str(start + k), "RTPART_TEST_FAIL_ERRNO": errno,
                       "RTPART_TEST_WRITE_LOG": log})
    what = f"rtpartd Apply {profile} with {errno} at write {k}"
    t.fired = None
    try:
        r = d.call("Apply", {"profile": profile})
        if write_failed(log, start + k):
            t.fired = "fail"
        alive = d.proc.poll() is None and d.call("Status") is not None
        if not alive:
            problems.append(f"{what}: rtpartd did not stay up: {d.logtext()[-600:]}")
            return problems
        if r is None:
            problems.append(f"{what}: no answer")
        elif "error" in r:
            # It answered with the failure, after putting everything back.
            msg = json.dumps(r)
            if not r.get("parameters", {}).get("message") and "failed" not in msg:
                problems.append(f"{what}: the error does not say what failed: {msg[:300]}")
            diffs = t.differences()
            if diffs:
                problems.append(f"{what}: answered {msg[:200]}, but the tree differs from the original at {diffs}")
            j = t.journal()
            if j and j["transaction"] is not None:
                problems.append(f"{what}: the journal's transaction is left open")
            tmp = t.temporaries()
            if tmp:
                problems.append(f"{what}: temporary files are left: {tmp}")
        else:
            rv = d.call("Revert")
            if not rv or "error" in rv or t.differences():
                problems.append(f"{what}: succeeded, but Revert did not give the original back: {rv} {t.differences()}")
    finally:
        d.stop()
        if problems:
            t.reset(full=True)
    return problems


def run_daemon_sample(host, profile, every, errnos=ERRNOS):
    """(points tried, failures, writes that really failed)."""
    t = Tree(host)
    try:
        start, n = daemon_writes(t, profile)
        points, failures, fired = 0, [], 0
        for k in sample(n, every):
            for e in errnos:
                points += 1
                failures += check_daemon_point(t, profile, e, k, start)
                fired += t.fired == "fail"
        return points, failures, fired
    finally:
        t.close()


# ---- the regressions of a full state directory ----

def last_journal_write(t, *args):
    """The number of the last write of a command: the journal's commit."""
    log = os.path.join(t.tmp, "writes.log")
    if os.path.exists(log):
        os.unlink(log)
    p = t.ctl(*args, env={"RTPART_TEST_WRITE_LOG": log})
    lines = open(log).read().split("\n")[:-1]
    assert p.returncode == 0, p.stderr
    last = lines[-1].split()
    assert last[1] == "replace" and last[2].endswith("state.json"), last
    return int(last[0])


def regression_full_journal_direct():
    """Apply whose journal's last write fails with ENOSPC: every knob put back before exit 1, the
    journal closed, the file named."""
    t = Tree("vm")
    try:
        k = last_journal_write(t, "apply", "realtime-virtual-host")
        t.reset(full=True)
        problems = check_point(t, "apply", "realtime-virtual-host", "ENOSPC", k)
        t.reset(full=True)
        p = t.ctl("apply", "realtime-virtual-host", env=fault_env("ENOSPC", k))
        if p.returncode != 1 or "state.json" not in p.stderr or "No space left on device" not in p.stderr:
            problems.append(f"apply with a full journal: exit {p.returncode}, message {p.stderr.strip()[:300]}")
        return problems
    finally:
        t.close()


def regression_full_journal_daemon():
    """The same through rtpartd: rolled back before it answers, and it stays up."""
    t = Tree("vm")
    try:
        start, n = daemon_writes(t, "realtime-virtual-host")
        return check_daemon_point(t, "realtime-virtual-host", "ENOSPC", n, start)
    finally:
        t.close()


def regression_refused_restore():
    """Revert whose write of an IRQ's original affinity the kernel refuses (EIO, as for a managed
    IRQ): the original stays in the journal and the revert says so (exit 1); a later revert puts
    it back. It once counted the refusal as restored and forgot the original for good."""
    t = Tree("vm")
    try:
        t.reset()
        assert t.ctl("apply", "cpu-partitioning").returncode == 0
        log = os.path.join(t.tmp, "writes.log")
        p = t.ctl("revert", env={"RTPART_TEST_WRITE_LOG": log})
        assert p.returncode == 0, p.stderr
        k = next(int(line.split()[0]) for line in open(log)
                 if line.split()[1] == "write" and line.split()[2].endswith("/smp_affinity_list"))
        t.reset()
        problems = check_point(t, "revert", "cpu-partitioning", "EIO", k)
        t.reset(full=True)
        assert t.ctl("apply", "cpu-partitioning").returncode == 0
        p = t.ctl("revert", env=fault_env("EIO", k))
        if p.returncode != 1 or "smp_affinity_list" not in p.stderr and "/affinity" not in p.stderr:
            problems.append(f"revert with a refused restore: exit {p.returncode}: {p.stderr.strip()[:300]}")
        return problems
    finally:
        t.close()


def regression_daemon_safety_check():
    """An apply killed while rtpartd runs (rtpartctl --no-daemon, killed after its 40th write): rtpartd
    rolls the transaction back at its next safety check, not only at its next start."""
    t = Tree("vm")
    d = Daemon(t, args=("--interval", "1"))
    problems = []
    try:
        p = t.ctl("--no-daemon", "apply", "realtime-virtual-host", env={"RTPART_TEST_CRASH_AFTER": "40"})
        j = t.journal()
        if p.returncode != -9 or not j or not j["transaction"]:
            return [f"the apply was not left open: exit {p.returncode}"]
        end = time.monotonic() + 60  # a bound for a loaded machine, not a measurement
        while time.monotonic() < end and t.journal()["transaction"] is not None:
            time.sleep(0.1)
        if t.journal()["transaction"] is not None:
            problems.append("rtpartd's safety checks left the interrupted transaction open")
        elif t.differences():
            problems.append(f"rtpartd rolled back, but the tree differs at {t.differences()}")
        if d.proc.poll() is not None:
            problems.append("rtpartd did not stay up")
    finally:
        d.stop()
        if problems:
            problems.append("rtpartd's log: " + open(os.path.join(t.tmp, "rtpartd.log")).read()[-600:])
        t.close()
    return problems


def regression_nearly_full_tmpfs():
    """The state directory on a real tmpfs with room for the journal with its transaction open but
    not for its last write: the apply fails before it writes a knob (the reserve), the tree as it
    was. None: cannot run here (not root, no mount)."""
    if os.geteuid() != 0:
        return None
    t = Tree("vm")
    mnt = os.path.join(t.tmp, "mnt")
    os.makedirs(mnt)
    try:
        # Sizes of the journal: with the transaction open (its first write) and at the commit.
        p = t.ctl("apply", "realtime-virtual-host", env={"RTPART_TEST_CRASH_AFTER": "3"})
        open_size = os.path.getsize(os.path.join(t.state, "state.json")) if t.journal() else 0
        t.reset(full=True)
        t.ctl("apply", "realtime-virtual-host")
        final = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(t.state) for f in fs)
        if not open_size or not final:
            return [f"cannot size the journal: open {open_size}, final {final}"]
        t.reset(full=True)
        page = 4096
        # Room for the journal with its transaction open and the bootloader backups, not for the
        # journal's last write beside it.
        pages = -(-open_size // page) + 2 + (-(-final // page)) // 2
        size = pages * page
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "rtpart-fault", mnt],
                           capture_output=True, text=True)
        if p.returncode != 0:
            return None
        try:
            shutil.rmtree(t.state)
            os.symlink(mnt, t.state)
            p = t.ctl("apply", "realtime-virtual-host")
            problems = []
            if p.returncode != 1 or "No space left on device" not in p.stderr:
                problems.append(f"apply on a full state directory: exit {p.returncode}: {p.stderr.strip()[:300]}")
            d = t.differences()
            if d:
                problems.append(f"apply on a full state directory left the tree changed at {d}")
            j = t.journal()
            if j and j["transaction"] is not None:
                problems.append("apply on a full state directory left the transaction open")
            tmp = [f for f in os.listdir(mnt) if TEMPORARY.match(f)]
            if tmp:
                problems.append(f"apply on a full state directory left {tmp}")
            return problems
        finally:
            os.unlink(t.state)
            subprocess.run(["umount", mnt], capture_output=True)
    finally:
        t.close()


def regression_kill_between_temporary_and_rename():
    """Apply and revert on a GRUB host killed between the drop-in's temporary and its rename (the
    write "replace-temp etc/default/grub.d/rtpart.cfg"): the next command removes the temporary,
    which the journal does not name (a boot argument has no path there), and revert gives the
    original back. Such a temporary once outlived every later command."""
    t = Tree("intel-2s")
    profile = "realtime-virtual-host"
    problems = []
    try:
        for phase in ("apply", "revert"):
            t.reset(full=True)
            if phase == "revert":
                assert t.ctl("apply", profile).returncode == 0
            log = os.path.join(t.tmp, "writes.log")
            if os.path.exists(log):
                os.unlink(log)
            p = t.ctl(*((phase, profile) if phase == "apply" else (phase,)), env={"RTPART_TEST_WRITE_LOG": log})
            assert p.returncode == 0, p.stderr
            ks = [int(line.split()[0]) for line in open(log)
                  if line.split()[1] == "replace-temp" and line.split()[2] == "etc/default/grub.d/rtpart.cfg"]
            if not ks:
                problems.append(f"{phase} wrote no temporary of the GRUB drop-in: nothing to kill between")
                continue
            t.reset(full=True)
            problems += check_point(t, phase, profile, "kill", ks[0])
            if t.fired != "kill":
                problems.append(f"{phase} killed after write {ks[0]}: the process was not killed")
        return problems
    finally:
        t.close()


# ---- main ----

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", default=os.environ.get("RTPART_FAULT_SWEEP") == "full",
                    help="every profile on every bundled host at every k")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--hosts", default=",".join(ALL_HOSTS))
    ap.add_argument("--profiles", default=",".join(PROFILES), help="the profiles swept (a subset, to reproduce)")
    ap.add_argument("--only", choices=("regressions", "sweep", "daemon"), help="run one part only")
    a = ap.parse_args()

    for h in ALL_HOSTS:
        if not os.path.isdir(os.path.join(HOSTS, h)):
            skip(f"fixture host {h} missing")
    for prog in (CTL, DAEMON):
        if not os.access(prog, os.X_OK):
            skip(f"{prog} not built")
    hosts = [h for h in a.hosts.split(",") if h]
    profiles = [p for p in PROFILES if p in a.profiles.split(",")]
    failures = []
    fired = {"fail": 0, "kill": 0}
    start = time.monotonic()

    if a.only in (None, "regressions"):
        for name, fn in (("full journal, direct", regression_full_journal_direct),
                         ("full journal, rtpartd", regression_full_journal_daemon),
                         ("nearly full tmpfs", regression_nearly_full_tmpfs),
                         ("refused restore", regression_refused_restore),
                         ("kill between a temporary and its rename", regression_kill_between_temporary_and_rename),
                         ("rtpartd's safety check", regression_daemon_safety_check)):
            r = fn()
            if r is None:
                print(f"regression {name}: skipped (needs root and a tmpfs mount)")
                continue
            print(f"regression {name}: {'ok' if not r else 'FAILED'}")
            failures += [f"regression {name}: {x}" for x in r]

    points = 0
    if a.only in (None, "sweep"):
        if a.full:
            n, f, x = run_sweep(hosts, lambda h: profiles, lambda h: 1, a.jobs)
        else:
            # vm: every profile at every k, with one of the variants in turn; the large hosts: the
            # first profile at a sample of k.
            n, f, x = run_sweep([h for h in hosts if h == "vm"], lambda h: profiles, lambda h: 1, a.jobs,
                                variants=("rotate",))
            n2, f2, x2 = run_sweep([h for h in hosts if h != "vm"], lambda h: profiles[:1], lambda h: 29, a.jobs,
                                   variants=("rotate",))
            n, f = n + n2, f + f2
            x = {key: x[key] + x2[key] for key in x}
        points += n
        failures += f
        for key in fired:
            fired[key] += x[key]
        print(f"sweep: {n} fault points tried (each: EIO, EPERM, ENOSPC or a kill, of apply or revert): "
              f"{x['fail']} writes really failed, {x['kill']} runs really killed")
        if n > 0 and (x["fail"] == 0 or x["kill"] == 0):
            failures.append(f"the sweep tried {n} points, but {x['fail']} writes failed and {x['kill']} runs were "
                            "killed: fault injection (tests/sim/sim-root.c) did not happen, so nothing was proved")

    if a.only in (None, "daemon"):
        dn, dfired = 0, 0
        for h in hosts if a.full else ["vm"]:
            for prof in profiles if a.full else profiles[1:2] or profiles[:1]:
                n, f, x = run_daemon_sample(h, prof, every=1 if a.full else 10)
                dn += n
                dfired += x
                failures += f
        points += dn
        fired["fail"] += dfired
        print(f"daemon: {dn} fault points of Apply through rtpartd tried: {dfired} writes really failed")
        if dn > 0 and dfired == 0:
            failures.append(f"rtpartd was given {dn} fault points, but no write failed: fault injection did not "
                            "happen, so nothing was proved")

    elapsed = time.monotonic() - start
    print(f"{points} fault points tried ({fired['fail']} writes failed, {fired['kill']} runs killed), "
          f"{len(failures)} failures, {elapsed:.0f} s")
    for f in failures[:200]:
        print("FAIL:", f)
    if len(failures) > 200:
        print(f"... and {len(failures) - 200} more")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
