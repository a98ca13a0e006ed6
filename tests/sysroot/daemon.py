#!/usr/bin/env python3
"""Integration tests: the real rtpartd on a copy of a fake host, over its varlink socket.

rtpartd --root COPY --no-dbus --varlink-socket TMP/sock; Apply through varlink; a write behind
its back to a knob file shows up on the Watch stream within 2 s (and the latency is measured);
with drift policy "correct" the file is put back; a non-root peer is refused; malformed input gets
an error and a closed connection while the daemon lives on; SIGTERM ends it cleanly.

varlink through socat (suite sysroot, needs socat): GetInfo and GetInterfaceDescription, pipelined
calls answered in order, a message split across writes, Monitor with "more" until the client hangs
up, and malformed input (bad JSON, no method, a message with no NUL past the 1 MiB bound) answered
with org.varlink.service.InvalidParameter and the connection closed by rtpartd; an unknown method or
interface is an error of that call only.

The non-root peer of the refusal tests (varlink, rtpartctl, D-Bus on a private dbus-daemon with the
project's policy file) is a real user, rtpart-test, created with useradd when missing and removed
at the end only if this run created it.

rtpartctl through the daemon (rtpartd on its default socket under the root): plan, apply, verify,
status and revert print the same JSON, text and exit status as rtpartctl --no-daemon on an
identical copy; an invalid profile is exit 2 with "FILE: POINTER: MESSAGE"; a non-root apply is
refused with exit 1; a socket nobody listens on is a silent fallback; rtpartctl watch prints a line
for a tampered file and exits 0 on SIGINT, 1 without a daemon. Only the processes this test
started are ended, by PID.

What one user can take (rtpartd on its default socket): the test user opens 300 connections and
holds them; rtpartd keeps 16, refuses the rest with org.rtpart.Manager.TooManyConnections and logs
that once; root's rtpartctl status still answers; the 16 pipeline calls and never read, and rtpartd's
peak RSS stays below 64 MiB. When root itself holds all 256, rtpartctl as root warns and works on
the host directly (watch, and the test user, get exit 1); --varlink-socket=/nonexistent is exit 1
with a message.

Run by meson (suite sysroot) with RTPART_SOURCE_DIR and RTPART_BUILD_DIR set. Exits 77 (skip)
with the reason when it cannot run here.
"""
import json
import os
import pwd
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import unittest

SRC = os.environ.get("RTPART_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("RTPART_BUILD_DIR", os.path.join(SRC, "build"))
# The sim builds (the real programs linked with the kernel simulator), as meson passes them.
DAEMON = os.environ.get("RTPARTD") or os.path.join(BUILD, "tests", "sim", "rtpartd")
CTL = os.environ.get("RTPARTCTL") or os.path.join(BUILD, "tests", "sim", "rtpartctl")
HOSTS = os.environ.get("RTPART_HOSTS_DIR") or os.path.join(BUILD, "tests", "fixtures", "hosts")
# RTPART_VALGRIND=1 (meson test --setup valgrind): rtpartd and rtpartctl run under memcheck, which
# logs to build/meson-logs/valgrind/PID.log and exits 99 on an error or a definite leak; every
# wait is SLOW times longer.
VALGRIND = os.environ.get("RTPART_VALGRIND") == "1"
VALGRIND_LOGS = os.path.join(BUILD, "meson-logs", "valgrind")
VG = ["valgrind", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite",
      "--show-leak-kinds=definite", "--log-file=" + os.path.join(VALGRIND_LOGS, "%p.log")] if VALGRIND else []
SLOW = 20 if VALGRIND else 1
if VALGRIND:
    os.makedirs(VALGRIND_LOGS, exist_ok=True)
    os.chmod(VALGRIND_LOGS, 0o1777)  # rtpartctl runs as the test user too
PROFILES = os.path.join(SRC, "profiles")
IFACE = "org.rtpart.Manager"


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


class TestUser:
    """A real unprivileged account, the peer the refusal tests speak as: created with useradd when
    it does not exist, and removed at the end only if this run created it."""

    NAME = "rtpart-test"
    uid = gid = None
    created = False
    error = None

    @classmethod
    def get(cls, test):
        """(uid, gid); skips the test with the reason when there can be no such user."""
        if cls.uid is None and cls.error is None:
            try:
                pw = pwd.getpwnam(cls.NAME)
            except KeyError:
                useradd = shutil.which("useradd") or "/usr/sbin/useradd"
                p = subprocess.run([useradd, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                                    "--shell", "/usr/sbin/nologin", "--comment", "rtpart test peer", cls.NAME],
                                   capture_output=True, text=True) if os.access(useradd, os.X_OK) else None
                if not p or p.returncode != 0:
                    cls.error = f"cannot create the test user {cls.NAME}: {p.stderr.strip() if p else 'no useradd'}"
                else:
                    cls.created = True
                    pw = pwd.getpwnam(cls.NAME)
            if cls.error is None:
                if pw.pw_uid == 0:
                    cls.error = f"user {cls.NAME} exists with uid 0"
                else:
                    cls.uid, cls.gid = pw.pw_uid, pw.pw_gid
        if cls.error:
            test.skipTest(cls.error)
        return cls.uid, cls.gid

    @classmethod
    def remove(cls):
        if cls.created:
            userdel = shutil.which("userdel") or "/usr/sbin/userdel"
            p = subprocess.run([userdel, cls.NAME], capture_output=True, text=True)
            if p.returncode != 0:
                print(f"could not remove the test user {cls.NAME}: {p.stderr.strip()}", file=sys.stderr)
            cls.created = False
            cls.uid = cls.gid = None


def tearDownModule():
    TestUser.remove()


def as_user(cmd, user):
    """cmd run as (uid, gid), without root's supplementary groups."""
    uid, gid = user
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"] + cmd


def user_python(test):
    """An interpreter the test user may run (a pyenv under /root is not one)."""
    py = next((x for x in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable)
               if os.access(x, os.X_OK) and not x.startswith("/root/")), None)
    if not py:
        test.skipTest(f"no python3 outside /root for the {TestUser.NAME} peer")
    return py


class Varlink:
    """A minimal varlink client: NUL-terminated JSON over a unix socket."""

    def __init__(self, path, timeout=10 * SLOW):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""

    def send(self, method, parameters=None, more=False, raw=None):
        if raw is not None:
            self.sock.sendall(raw)
            return
        msg = {"method": method}
        if parameters is not None:
            msg["parameters"] = parameters
        if more:
            msg["more"] = True
        self.sock.sendall(json.dumps(msg).encode() + b"\0")

    def recv(self, timeout=None):
        """The next message, or None when the connection closed; raises socket.timeout."""
        if timeout is not None:
            self.sock.settimeout(timeout)
        while b"\0" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                return None
            self.buf += data
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method, parameters=None):
        self.send(method, parameters)
        return self.recv()

    def close(self):
        self.sock.close()


def terminate(p, timeout=10 * SLOW):
    """Ends a process this test started, by its PID: SIGTERM, then SIGKILL after timeout s."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return p.returncode


def proc_status(pid, name):
    """A field of /proc/PID/status, in its unit (VmRSS: KiB)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return None


def memcheck_verdict(rc):
    """Under valgrind, exit status 99 is memcheck's: an error or a definite leak (its log named)."""
    if VALGRIND and rc == 99:
        raise AssertionError(f"memcheck found errors; see {VALGRIND_LOGS}")


def call_ok(sock, method, parameters=None, timeout=60 * SLOW):
    """One call of org.rtpart.Manager on a connection of its own: the reply's parameters; an
    error reply fails the test."""
    c = Varlink(sock, timeout=timeout)
    try:
        r = c.call(IFACE + "." + method, parameters)
    finally:
        c.close()
    if r is None or "error" in r:
        raise AssertionError(f"{method}: {r}")
    return r["parameters"]


class Daemon:
    def __init__(self, host="vm", extra_profiles=None, default_socket=False, make_host=None):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-daemon-")
        os.chmod(self.tmp, 0o755)  # the non-root peer must reach the socket
        self.root = os.path.join(self.tmp, "root")
        if make_host:  # made in place (a large host is not copied)
            make_host(self.root)
        else:
            shutil.copytree(os.path.join(HOSTS, host), self.root, symlinks=True)
        pdir = os.path.join(self.root, "usr", "share", "rtpart", "profiles")
        os.makedirs(pdir, exist_ok=True)
        for f in os.listdir(PROFILES):
            if f.endswith(".json"):
                shutil.copy(os.path.join(PROFILES, f), pdir)
        udir = os.path.join(self.root, "etc", "rtpart", "profiles")
        os.makedirs(udir, exist_ok=True)
        for name, doc in (extra_profiles or {}).items():
            with open(os.path.join(udir, name + ".json"), "w") as f:
                json.dump(doc, f)
        # The default socket is the one rtpartctl finds under --root by itself.
        self.default_socket = default_socket
        self.sock = os.path.join(self.root, "run", "rtpartd", "org.rtpart.Manager") if default_socket else \
            os.path.join(self.tmp, "rtpartd.sock")
        self.log = open(os.path.join(self.tmp, "rtpartd.log"), "w+")
        self.proc = None

    def start(self, *args, env=None):
        sock = [] if self.default_socket else ["--varlink-socket", self.sock]
        self.proc = subprocess.Popen(VG + [DAEMON, "--root", self.root, "--no-dbus"] + sock + list(args),
                                     stdout=self.log, stderr=subprocess.STDOUT, env=dict(os.environ, **(env or {})))
        end = time.monotonic() + 10 * SLOW
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError(f"rtpartd exited with {self.proc.returncode}:\n{self.logtext()}")
            if os.path.exists(self.sock):
                try:
                    c = Varlink(self.sock)
                    r = c.call(IFACE + ".Status")
                    c.close()
                    if r and "parameters" in r:
                        return
                except OSError:
                    pass
            time.sleep(0.02)
        raise AssertionError("rtpartd did not answer within 10 s:\n" + self.logtext())

    def client(self):
        return Varlink(self.sock)

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def path(self, rel):
        return os.path.join(self.root, rel)

    def read(self, rel):
        with open(self.path(rel)) as f:
            return f.read().strip()

    def write(self, rel, text):
        with open(self.path(rel), "w") as f:
            f.write(text)

    def status_field(self, name):
        return proc_status(self.proc.pid, name)

    def stop(self):
        rc = terminate(self.proc, timeout=10 * SLOW) if self.proc else None
        memcheck_verdict(rc)
        return rc

    def close(self):
        self.stop()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def watch(d):
    """A Watch stream, past its first (status) reply."""
    w = d.client()
    w.send(IFACE + ".Watch", more=True)
    first = w.recv(timeout=5 * SLOW)
    assert first and first["parameters"]["event"] == "status", first
    return w


def close_daemon(test, d, tail=None):
    """A test case's end: rtpartd's log (its last tail characters) on stderr when the case failed,
    then the daemon closed."""
    result = test._outcome.result
    if result and (result.failures or result.errors):
        text = d.logtext()
        sys.stderr.write(f"---- rtpartd log{' (tail)' if tail else ''} ----\n" + (text[-tail:] if tail else text))
    d.close()


class DaemonTest(unittest.TestCase):
    def setUp(self):
        self.d = None

    def tearDown(self):
        if self.d:
            close_daemon(self, self.d)

    def daemon(self, **kw):
        self.d = Daemon(**kw)
        self.d.start()
        return self.d

    def apply(self, profile):
        p = call_ok(self.d.sock, "Apply", {"profile": profile})
        self.assertTrue(p["ok"])
        return p

    def test_report_drift_with_latency(self):
        d = self.daemon()
        a = self.apply("realtime")
        self.assertGreater(a["changed"], 0)
        self.assertEqual(d.read("proc/sys/vm/swappiness"), "10")
        rss_kib = d.status_field("VmRSS")
        w = watch(d)

        # One write behind rtpartd's back: the drift event names the knob and both values.
        t0 = time.monotonic()
        d.write("proc/sys/vm/swappiness", "60\n")
        ev = w.recv(timeout=2 * SLOW)
        first_ms = (time.monotonic() - t0) * 1000
        self.assertIsNotNone(ev, "no drift event within 2 s")
        p = ev["parameters"]
        self.assertEqual(p["event"], "drift")
        self.assertTrue(ev.get("continues"))
        self.assertEqual(p["drift"], [{"knob": "sysctl/vm.swappiness", "domain": "sysctl", "expected": "10", "actual": "60"}])
        self.assertFalse(p["in_sync"])
        self.assertEqual(p["drift_count"], 1)
        self.assertEqual(d.read("proc/sys/vm/swappiness"), "60", "report policy must not write")

        # Latency over more writes: each a new value, so each is new drift.
        lat = []
        for i in range(40):
            t0 = time.monotonic()
            d.write("proc/sys/vm/swappiness", f"{61 + i}\n")
            ev = w.recv(timeout=2 * SLOW)
            self.assertIsNotNone(ev)
            self.assertEqual(ev["parameters"]["drift"][0]["actual"], str(61 + i))
            lat.append((time.monotonic() - t0) * 1000)
        lat.sort()
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        print(f"drift detection (write → varlink event): first {first_ms:.1f} ms, median {statistics.median(lat):.1f} ms, "
              f"p99 {p99:.1f} ms over {len(lat)} writes (debounce 5 ms, the default)")

        # Wake-ups while idle are bench/bench-daemon.py's to count (a timing, not a test's).
        print(f"rtpartd RSS after apply: {rss_kib} KiB")

        c = d.client()
        v = c.call(IFACE + ".Verify")["parameters"]
        c.close()
        self.assertFalse(v["in_sync"])
        self.assertEqual([x["knob"] for x in v["drift"]], ["sysctl/vm.swappiness"])
        w.close()

    def test_verify_from_live_state(self):
        # Verify answers from what file events and reads have established, says so ("daemon":
        # live, and per domain when its knobs were last read and whether events cover it), and a
        # value just written shows at once: the queued events are taken in before the answer,
        # whatever the debounce (2 s here, so no event is delivered before the call otherwise).
        d = self.daemon(host="vm")
        d.stop()
        d.start("--debounce=2000")
        self.apply("realtime")
        first = call_ok(d.sock, "Verify")
        self.assertIn("daemon", first)
        v = call_ok(d.sock, "Verify")
        self.assertTrue(v["daemon"]["live"], v)
        fresh = v["daemon"]["freshness"]
        self.assertTrue(fresh["sysctl"]["watched"], fresh)
        self.assertFalse(fresh["boot"]["watched"], fresh)  # no file event for a boot argument
        for dom in fresh.values():
            self.assertGreater(dom["checked_usec"], 1_600_000_000 * 10**6)
            self.assertGreaterEqual(dom["age_ms"], 0)
        self.assertEqual(v["drift"], [])
        self.assertEqual(v["checked"], first["checked"])

        d.write("proc/sys/vm/swappiness", "60\n")
        v = call_ok(d.sock, "Verify")
        self.assertTrue(v["daemon"]["live"], v)
        self.assertEqual(v["drift"], [{"knob": "sysctl/vm.swappiness", "domain": "sysctl", "expected": "10",
                                       "actual": "60"}])
        self.assertFalse(v["in_sync"])
        st = call_ok(d.sock, "Status")
        self.assertEqual(st["drift"], 1)
        self.assertIn("sysctl", st["daemon"]["freshness"])
        self.assertTrue(st["daemon"]["live"])

        # What no file event announces is read again for the answer: the boot arguments.
        cmdline = d.read("etc/kernel/cmdline")
        self.assertIn("isolcpus=", cmdline)
        d.write("etc/kernel/cmdline", " ".join(w for w in cmdline.split() if not w.startswith("isolcpus=")) + "\n")
        v = call_ok(d.sock, "Verify")
        self.assertTrue(v["daemon"]["live"], v)
        self.assertIn("boot/isolcpus", [e["knob"] for e in v["drift"]])
        self.assertEqual(v["drift"][-1]["knob"], "sysctl/vm.swappiness")  # journal order, as a full read

        d.write("proc/sys/vm/swappiness", "10\n")
        d.write("etc/kernel/cmdline", cmdline + "\n")
        v = call_ok(d.sock, "Verify")
        self.assertEqual(v["drift"], [])

    def test_correct_policy_puts_the_value_back(self):
        d = self.daemon(extra_profiles={"rt-correct": {"summary": "realtime, drift corrected", "include": "realtime",
                                                       "drift": {"policy": "correct"}}})
        self.apply("rt-correct")
        w = watch(d)
        t0 = time.monotonic()
        d.write("proc/sys/kernel/timer_migration", "1\n")
        ev = w.recv(timeout=2 * SLOW)
        self.assertIsNotNone(ev, "no drift event within 2 s")
        self.assertEqual(ev["parameters"]["event"], "drift")
        self.assertEqual(ev["parameters"]["drift"][0]["knob"], "sysctl/kernel.timer_migration")
        ev = w.recv(timeout=2 * SLOW)
        ms = (time.monotonic() - t0) * 1000
        self.assertIsNotNone(ev, "no corrected event within 2 s")
        self.assertEqual(ev["parameters"]["event"], "corrected")
        self.assertTrue(ev["parameters"]["in_sync"])
        self.assertEqual(d.read("proc/sys/kernel/timer_migration"), "0")
        print(f"write → corrected event: {ms:.1f} ms")

        # An IRQ affinity written behind its back is put back too.
        d.write("proc/irq/default_smp_affinity", "f\n")
        kinds = []
        while "corrected" not in kinds:
            ev = w.recv(timeout=2 * SLOW)
            self.assertIsNotNone(ev)
            kinds.append(ev["parameters"]["event"])
        self.assertEqual(int(d.read("proc/irq/default_smp_affinity"), 16), 1)
        w.close()

    def test_correct_writes_only_the_drift(self):
        # Correct writes back what the journal holds, and nothing else: not a profile file edited
        # since the apply, not the journal's profile or hash.
        d = self.daemon(extra_profiles={"lab": {"summary": "lab", "include": "realtime",
                                                "sysctl": {"vm.stat_interval": 10}}})
        self.apply("lab")
        with open(d.path("var/lib/rtpart/state.json")) as f:
            before = json.load(f)
        self.assertEqual(d.read("proc/sys/vm/stat_interval"), "10")
        with open(d.path("etc/rtpart/profiles/lab.json"), "w") as f:
            json.dump({"summary": "lab", "include": "realtime", "sysctl": {"vm.stat_interval": 20, "vm.swappiness": 5}}, f)
        w = watch(d)
        d.write("proc/sys/vm/swappiness", "60\n")
        ev = w.recv(timeout=2 * SLOW)
        self.assertEqual(ev["parameters"]["event"], "drift")
        c = d.client()
        r = c.call(IFACE + ".Correct")
        c.close()
        self.assertNotIn("error", r, r)
        self.assertEqual(r["parameters"]["written"], 1)
        self.assertEqual([x["knob"] for x in r["parameters"]["corrected"]], ["sysctl/vm.swappiness"])
        self.assertEqual(d.read("proc/sys/vm/swappiness"), "10")  # the journal's value, not the file's 5
        self.assertEqual(d.read("proc/sys/vm/stat_interval"), "10")  # not drifted: untouched
        with open(d.path("var/lib/rtpart/state.json")) as f:
            after = json.load(f)
        for key in ("profile", "hash", "profile_path", "applied_at", "originals"):
            self.assertEqual(after[key], before[key], key)
        self.assertEqual(after["applied"], before["applied"])
        self.assertIsNone(after["transaction"])
        w.close()

    def test_refusals_and_malformed_input(self):
        d = self.daemon()
        # Malformed input: an error, then the connection closes; the daemon lives on.
        for raw in (b"{not json\0", b"[1,2]\0", b'{"parameters":{}}\0', b"\xff\xfe\0"):
            c = d.client()
            c.send(None, raw=raw)
            r = c.recv(timeout=5 * SLOW)
            self.assertEqual(r["error"], "org.varlink.service.InvalidParameter", raw)
            self.assertIsNone(c.recv(timeout=5 * SLOW), "connection not closed")
            c.close()
        c = d.client()
        self.assertEqual(c.call(IFACE + ".Nope")["error"], "org.varlink.service.MethodNotFound")
        self.assertEqual(c.call(IFACE + ".Plan", {"profile": "no-such"})["error"], IFACE + ".InvalidProfile")
        info = c.call("org.varlink.service.GetInfo")["parameters"]
        self.assertIn(IFACE, info["interfaces"])
        c.close()
        self.assertIsNone(d.proc.poll())

        # A peer that is not root may read but not change.
        code = (
            "import json, os, pwd, socket, sys\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            "out = []\n"
            "for m, p in (('Apply', {'profile': 'realtime'}), ('Revert', None), ('Status', None)):\n"
            "    msg = {'method': 'org.rtpart.Manager.' + m}\n"
            "    if p: msg['parameters'] = p\n"
            "    s.sendall(json.dumps(msg).encode() + b'\\0')\n"
            "    buf = b''\n"
            "    while b'\\0' not in buf: buf += s.recv(65536)\n"
            "    out.append(json.loads(buf.split(b'\\0')[0]).get('error'))\n"
            "print(json.dumps([pwd.getpwuid(os.getuid()).pw_name, out]))\n"
        )

        uid, gid = TestUser.get(self)

        def drop():
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)

        p = subprocess.run([user_python(self), "-c", code, d.sock], preexec_fn=drop, capture_output=True, text=True, timeout=30 * SLOW)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout),
                         [TestUser.NAME, [IFACE + ".PermissionDenied", IFACE + ".PermissionDenied", None]])
        self.assertFalse(os.path.exists(d.path("var/lib/rtpart/state.json")), "a refused Apply wrote the journal")

    def test_restart_reapplies_and_sigterm_is_clean(self):
        d = self.daemon()
        self.apply("realtime")
        self.assertEqual(d.stop(), 0, d.logtext())
        self.assertFalse(os.path.exists(d.sock), "socket left behind")
        # As after a reboot: runtime values back at the kernel's.
        d.write("proc/sys/vm/swappiness", "60\n")
        d.start()
        self.assertEqual(d.read("proc/sys/vm/swappiness"), "10")
        c = d.client()
        st = c.call(IFACE + ".Status")["parameters"]
        c.close()
        self.assertEqual(st["profile"], "realtime")
        self.assertEqual(st["drift"], 0)
        self.assertGreater(st["daemon"]["watched_files"], 0)

    # The daemon applies again only what root applied (the journal's "source"), never what is at
    # the profile's path now: a user who owns that file cannot make rtpartd write their values.
    EVIL = "|/tmp/evil %p"

    def new_irq(self, d, n=51):
        """IRQ n appears as request_irq() makes it: /proc/irq/N and its handler, in
        /sys/kernel/irq/N/actions and /proc/interrupts."""
        self.new_irq_dir(d, n)
        self.interrupts_line(d, n)

    def wait_for(self, d, rel, want, timeout=10 * SLOW):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if d.read(rel) == want:
                return
            time.sleep(0.05)
        self.fail(f"{rel} is {d.read(rel)!r}, not {want!r}, after {timeout} s\n" + d.logtext())

    def lab_profile(self, d, sysctl):
        path = os.path.join(d.tmp, "lab", "lab.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"summary": "lab", "include": "realtime", "sysctl": sysctl}, f)
        return path

    def test_reapplies_the_applied_profile_not_the_file(self):
        d = self.daemon()
        d.write("proc/sys/kernel/core_pattern", "core\n")
        path = self.lab_profile(d, {"vm.stat_interval": 10})
        self.apply(path)
        self.assertEqual(d.read("proc/sys/vm/stat_interval"), "10")
        with open(d.path("var/lib/rtpart/state.json")) as f:
            st = json.load(f)
        self.assertEqual(st["profile_path"], os.path.realpath(path))
        self.assertEqual(st["source"]["sysctl"]["vm.stat_interval"], 10)
        self.assertEqual(st["source"]["irq"]["affinity"], "housekeeping")  # the include, merged
        self.assertNotIn("include", st["source"])
        housekeeping = d.read("proc/irq/50/smp_affinity_list")

        # 1. The file changed in place; a new IRQ makes the daemon apply the profile to it.
        self.lab_profile(d, {"vm.stat_interval": 20, "kernel.core_pattern": self.EVIL})
        self.new_irq(d, 51)
        d.proc.send_signal(signal.SIGHUP)
        self.wait_for(d, "proc/irq/51/smp_affinity_list", housekeeping)
        self.assertEqual(d.read("proc/sys/kernel/core_pattern"), "core")
        self.assertEqual(d.read("proc/sys/vm/stat_interval"), "10")

        # 2. The file deleted and made again, then a restart (after a reboot: values at the
        #    kernel's) and another new IRQ.
        os.unlink(path)
        self.lab_profile(d, {"vm.stat_interval": 30, "kernel.core_pattern": self.EVIL})
        self.assertEqual(d.stop(), 0, d.logtext())
        d.write("proc/sys/vm/stat_interval", "1\n")
        d.write("proc/sys/vm/swappiness", "60\n")
        d.start()
        self.assertEqual(d.read("proc/sys/vm/stat_interval"), "10")
        self.assertEqual(d.read("proc/sys/vm/swappiness"), "10")
        self.assertEqual(d.read("proc/sys/kernel/core_pattern"), "core")
        self.new_irq(d, 52)
        d.proc.send_signal(signal.SIGHUP)
        self.wait_for(d, "proc/irq/52/smp_affinity_list", housekeeping)
        self.assertEqual(d.read("proc/sys/kernel/core_pattern"), "core")
        with open(d.path("var/lib/rtpart/state.json")) as f:
            st2 = json.load(f)
        self.assertEqual(st2["source"], st["source"])
        self.assertEqual(st2["hash"], st["hash"])
        self.assertEqual(st2["profile_path"], st["profile_path"])
        self.assertNotIn("core_pattern", json.dumps(st2))

    def new_irq_dir(self, d, n):
        """The descriptor half of a new IRQ: /proc/irq/N and /sys/kernel/irq/N, no handler yet (an
        empty actions file, no /proc/interrupts line)."""
        if not os.path.isdir(d.path(f"sys/kernel/irq/{n}")):
            shutil.copytree(d.path("sys/kernel/irq/50"), d.path(f"sys/kernel/irq/{n}"))
            d.write(f"sys/kernel/irq/{n}/actions", "\n")
        # Made whole beside proc/irq and renamed into it, as the kernel shows it at once: a daemon
        # that looks while a copy is half written would place it, and the write after undo that.
        tmp = d.path(f"proc/.irq-{n}")
        shutil.copytree(d.path("proc/irq/50"), tmp)
        for name, value in (("smp_affinity_list", "0-3\n"), ("smp_affinity", "f\n")):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(value)
        os.rename(tmp, d.path(f"proc/irq/{n}"))

    def interrupts_line(self, d, n):
        """The handler half: request_irq() adds the action, which both files show."""
        if not os.path.isdir(d.path(f"sys/kernel/irq/{n}")):
            shutil.copytree(d.path("sys/kernel/irq/50"), d.path(f"sys/kernel/irq/{n}"))
        d.write(f"sys/kernel/irq/{n}/actions", f"eth{n}\n")
        with open(d.path("proc/interrupts"), "a") as f:
            f.write(f"\n {n}:          0          0          0          0   PCI-MSI 2621441-edge      eth{n}")

    def test_new_irq_placed_from_its_event_not_the_safety_check(self):
        # The safety check is a day away: only the event that announces the IRQ can place it
        # (here the entry made in the tree's proc/irq; on a host, a uevent or an interface brought
        # up). The time it takes is bench/bench-daemon.py's to measure.
        d = Daemon()
        self.d = d
        d.start("--interval=86400")
        self.apply("realtime")
        housekeeping = d.read("proc/irq/50/smp_affinity_list")
        self.assertNotEqual(housekeeping, "0-3")
        self.interrupts_line(d, 51)  # request_irq(): the action first, then /proc/irq/N
        self.new_irq_dir(d, 51)
        self.wait_for(d, "proc/irq/51/smp_affinity_list", housekeeping)
        with open(d.path("var/lib/rtpart/state.json")) as f:
            self.assertIn("irq/51/affinity", json.dumps(json.load(f)))

    def test_new_irq_seen_before_its_interrupts_line_is_not_missed(self):
        # /proc/irq/51 is there before /proc/interrupts lists it: the look that finds it places
        # nothing, and must not take 51 as done. It used to, for good: not even SIGHUP placed it.
        d = Daemon()
        self.d = d
        d.start("--interval=86400", "--verbose")
        self.apply("realtime")
        housekeeping = d.read("proc/irq/50/smp_affinity_list")
        self.new_irq_dir(d, 51)
        d.proc.send_signal(signal.SIGHUP)
        end = time.monotonic() + 10
        while "IRQ 51 is in /proc/irq but not yet in /proc/interrupts" not in d.logtext() and time.monotonic() < end:
            time.sleep(0.05)
        self.assertIn("IRQ 51 is in /proc/irq but not yet in /proc/interrupts", d.logtext())
        self.assertEqual(d.read("proc/irq/51/smp_affinity_list"), "0-3")
        # The line comes: the next look (the daemon keeps looking while an IRQ waits) places it.
        self.interrupts_line(d, 51)
        self.wait_for(d, "proc/irq/51/smp_affinity_list", housekeeping, timeout=20)

        # The same through SIGHUP alone, once the looks after the event are over.
        self.new_irq_dir(d, 52)
        end = time.monotonic() + 20
        while "still not in /proc/interrupts" not in d.logtext() and time.monotonic() < end:
            time.sleep(0.1)
        self.assertIn("still not in /proc/interrupts", d.logtext())
        self.interrupts_line(d, 52)
        d.proc.send_signal(signal.SIGHUP)
        self.wait_for(d, "proc/irq/52/smp_affinity_list", housekeeping)

    def test_audit_call(self):
        # Audit answers when its window ends, without holding the event loop: a Status asked in
        # the window is answered first. Root only; at most 4 at once; a caller that leaves
        # cancels its own (its slot is free again).
        d = self.daemon()
        self.user = TestUser.get(self)
        probe = [sys.executable, "-c",
                 "import json, socket, sys\n"
                 "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
                 "s.sendall(json.dumps({'method': 'org.rtpart.Manager.Audit', 'parameters': {'seconds': 1, "
                 "'cpus': '2'}}).encode() + b'\\0')\n"
                 "print(s.recv(65536).rstrip(b'\\0').decode())", d.sock]
        p = subprocess.run(as_user(probe, self.user), capture_output=True, text=True, timeout=30)
        err = json.loads(p.stdout)
        self.assertEqual(err["error"], IFACE + ".PermissionDenied")
        self.assertIn("Audit reads every task of the host and needs root", err["parameters"]["message"])

        c = Varlink(d.sock, timeout=30)
        c.send(IFACE + ".Audit", {"seconds": 3, "cpus": "2-3"})
        t0 = time.monotonic()
        st = call_ok(d.sock, "Status")
        self.assertIn("daemon", st)
        status_s = time.monotonic() - t0
        r = c.recv()
        c.close()
        self.assertNotIn("error", r, r)
        doc = r["parameters"]
        self.assertEqual((doc["cpus"], doc["source"], doc["verdict"]), ("2-3", "--cpus", "quiet"))
        self.assertEqual(doc["osnoise"]["ran"], False)
        self.assertIn("rtpartd runs no tracer", doc["osnoise"]["reason"])
        self.assertGreater(doc["seconds"], 0)  # how long is bench/bench-daemon.py's to measure
        print(f"Status answered {status_s * 1000:.1f} ms into a 3 s Audit window of {doc['seconds']:.2f} s")

        # Bad arguments.
        for params, name in (({"seconds": 0}, "org.varlink.service.InvalidParameter"),
                             ({"seconds": "x"}, "org.varlink.service.InvalidParameter"),
                             ({"cpus": 3}, "org.varlink.service.InvalidParameter"),
                             ({"cpus": "x-y"}, IFACE + ".InvalidArgument"),
                             ({}, IFACE + ".InvalidArgument")):  # nothing applied, nothing isolated
            c = Varlink(d.sock)
            r = c.call(IFACE + ".Audit", params)
            c.close()
            self.assertEqual(r.get("error"), name, (params, r))

        # Four at once; a fifth is Busy; one caller leaves and its slot is free again.
        conns = []
        for _ in range(4):
            c = Varlink(d.sock, timeout=30)
            c.send(IFACE + ".Audit", {"seconds": 30, "cpus": "1"})
            conns.append(c)
        call_ok(d.sock, "Status")  # the four are started
        c = Varlink(d.sock)
        r = c.call(IFACE + ".Audit", {"seconds": 1, "cpus": "1"})
        c.close()
        self.assertEqual(r.get("error"), IFACE + ".Busy", r)
        conns.pop().close()
        call_ok(d.sock, "Status")
        c = Varlink(d.sock, timeout=30)
        r = c.call(IFACE + ".Audit", {"seconds": 1, "cpus": "1"})
        c.close()
        self.assertNotIn("error", r, r)
        # A stop ends the audits still in their window (their callers see the connection close);
        # the sanitizer builds see that nothing of them is left.
        self.assertEqual(d.stop(), 0, d.logtext())
        for c in conns:
            self.assertIsNone(c.recv())
            c.close()

    def test_old_journal_falls_back_to_the_name(self):
        # A journal of the previous version has no "source": the daemon loads the profile by its
        # name from the profile directories, never from "profile_path".
        d = self.daemon(extra_profiles={"lab": {"summary": "lab", "include": "realtime", "sysctl": {"vm.stat_interval": 10}}})
        d.write("proc/sys/kernel/core_pattern", "core\n")
        self.apply("lab")
        self.assertEqual(d.stop(), 0, d.logtext())
        evil = self.lab_profile(d, {"vm.stat_interval": 20, "kernel.core_pattern": self.EVIL})
        with open(d.path("var/lib/rtpart/state.json")) as f:
            st = json.load(f)
        del st["source"]
        st["profile_path"] = evil
        with open(d.path("var/lib/rtpart/state.json"), "w") as f:
            json.dump(st, f)
        d.write("proc/sys/vm/stat_interval", "1\n")
        d.start()
        self.assertEqual(d.read("proc/sys/vm/stat_interval"), "10")
        self.assertEqual(d.read("proc/sys/kernel/core_pattern"), "core")
        self.assertIn("loading lab by name", d.logtext())
        with open(d.path("var/lib/rtpart/state.json")) as f:
            self.assertIn("source", json.load(f))  # stored by the re-apply

    def test_journal_hash_disagrees_nothing_written(self):
        # A journal whose stored document does not resolve to its hash (edited by hand, or by
        # whoever could write the file) is never acted on: not by the start-up re-apply, nor a
        # correction, nor for a new IRQ, nor at SIGHUP, and the file is never rewritten. Drift is
        # only reported. (It used to re-apply the edited document at start and rewrite the journal
        # with its hash.)
        d = self.daemon(extra_profiles={"rt-correct": {"include": "realtime", "drift": {"policy": "correct"}}})
        self.apply("rt-correct")
        applied = d.read("proc/sys/vm/stat_interval")
        self.assertEqual(d.stop(), 0, d.logtext())
        journal = d.path("var/lib/rtpart/state.json")
        with open(journal) as f:
            st = json.load(f)
        st["source"].setdefault("sysctl", {})["vm.stat_interval"] = 77
        with open(journal, "w") as f:
            json.dump(st, f)
        with open(journal, "rb") as f:
            edited = f.read()
        d.write("proc/sys/vm/swappiness", "60\n")  # drift of a knob the journal holds
        d.start()
        self.assertIn("resolves to", d.logtext())
        self.assertIn("nothing is written", d.logtext())
        self.assertEqual(d.read("proc/sys/vm/stat_interval"), applied)
        v = call_ok(d.sock, "Verify")
        self.assertIn("sysctl/vm.swappiness", [x["knob"] for x in v["drift"]])
        self.new_irq(d, 51)
        d.proc.send_signal(signal.SIGHUP)
        end = time.monotonic() + 10 * SLOW
        while "SIGHUP" not in d.logtext() and time.monotonic() < end:
            time.sleep(0.05)
        call_ok(d.sock, "Status")  # answered once the SIGHUP's look is over
        self.assertEqual(d.read("proc/sys/vm/swappiness"), "60")
        self.assertEqual(d.read("proc/sys/vm/stat_interval"), applied)
        self.assertEqual(d.read("proc/irq/51/smp_affinity_list"), "0-3")
        with open(journal, "rb") as f:
            self.assertEqual(f.read(), edited, "the journal was rewritten")

    def test_journal_that_is_no_file_never_hangs(self):
        # state.json a FIFO is opened without waiting and refused: while rtpartd runs (the journal
        # as last read is kept and every call answered, Verify with the reason) and at its start
        # (exit 1, naming the file and the fix). The timeouts only detect a hang.
        d = self.daemon()
        self.apply("realtime")
        journal = d.path("var/lib/rtpart/state.json")
        fifo = d.path("var/lib/rtpart/fifo")
        os.mkfifo(fifo)
        os.rename(fifo, journal)
        c = Varlink(d.sock, timeout=10 * SLOW)
        r = c.call(IFACE + ".Verify")
        self.assertEqual(r.get("error"), IFACE + ".Failed", r)
        self.assertIn("state.json: is not a regular file (a FIFO)", json.dumps(r))
        self.assertIn("parameters", c.call(IFACE + ".Describe"))
        c.close()
        self.assertEqual(d.stop(), 0, d.logtext())
        p = subprocess.run(VG + [DAEMON, "--root", d.root, "--no-dbus", "--varlink-socket", d.sock + "2"],
                           capture_output=True, text=True, timeout=30 * SLOW)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("state.json: is not a regular file (a FIFO)", p.stderr)
        self.assertIn("remove it", p.stderr)

    def test_pins_itself_through_the_root(self):
        # rtpartd pins itself to the applied profile's housekeeping CPUs through the root's ops:
        # the kernel's move it, the simulator's show it (RTPART_TEST_PIN_LOG).
        d = Daemon()
        self.d = d
        log = os.path.join(d.tmp, "pins")
        d.start(env={"RTPART_TEST_PIN_LOG": log})
        self.apply("realtime")
        plan = call_ok(d.sock, "Plan", {"profile": "realtime"})
        with open(log) as f:
            self.assertEqual(f.read().split()[-1], plan["cpus"]["housekeeping"])

    def test_profile_that_never_ends_is_refused_at_once(self):
        d = self.daemon()
        fifo = os.path.join(d.tmp, "fifo.json")
        os.mkfifo(fifo)
        for path, why in ((fifo, "not a regular file (a FIFO)"), ("/dev/zero", "not a regular file"), (d.tmp, "a directory")):
            # A daemon that waited on the FIFO or read /dev/zero without end would not answer
            # within the call's timeout, and c.call would raise: no clock is compared.
            c = Varlink(d.sock, timeout=5 * SLOW)
            r = c.call(IFACE + ".Apply", {"profile": path})
            c.close()
            self.assertEqual(r.get("error"), IFACE + ".InvalidProfile", r)
            self.assertIn(why, json.dumps(r))
        # And the next call is answered.
        c = Varlink(d.sock, timeout=5 * SLOW)
        self.assertIn("parameters", c.call(IFACE + ".Status"))
        c.close()


def ctl(root, *args, user=None, cwd=None):
    cmd = VG + [CTL, "--root", root] + list(args)
    if user is not None:
        cmd = as_user(cmd, user)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120 * SLOW, cwd=cwd)


def without(doc, *keys):
    return {k: v for k, v in doc.items() if k not in keys}


class CtlTest(unittest.TestCase):
    """rtpartctl through rtpartd (on the root's default socket) against rtpartctl --no-daemon on an
    identical copy of the same host: the same output and exit status."""

    def setUp(self):
        self.d = Daemon(default_socket=True)
        self.d.start()
        self.twin = os.path.join(self.d.tmp, "twin")
        shutil.copytree(os.path.join(HOSTS, "vm"), self.twin, symlinks=True)
        shutil.copytree(os.path.join(self.d.root, "usr", "share", "rtpart"), os.path.join(self.twin, "usr", "share", "rtpart"),
                        dirs_exist_ok=True)
        shutil.copytree(os.path.join(self.d.root, "etc", "rtpart"), os.path.join(self.twin, "etc", "rtpart"),
                        dirs_exist_ok=True)
        self.procs = []

    def tearDown(self):
        for p in self.procs:  # our own rtpartctl watch processes, by PID
            if p.poll() is None:
                p.kill()
                p.wait()
            for f in (p.stdout, p.stderr):
                if f:
                    f.close()
        close_daemon(self, self.d)

    def both(self, *args, json_out=True):
        """The same command through the daemon (root) and directly (twin); root paths made alike."""
        a = ctl(self.d.root, *((["--json"] if json_out else []) + list(args)))
        b = ctl(self.twin, *((["--json", "--no-daemon"] if json_out else ["--no-daemon"]) + list(args)))
        self.assertEqual(a.returncode, b.returncode, f"{args}: {a.stderr} / {b.stderr}")
        self.assertEqual(a.stderr.replace(self.d.root, "ROOT"), b.stderr.replace(self.twin, "ROOT"), args)
        out_a, out_b = a.stdout.replace(self.d.root, "ROOT"), b.stdout.replace(self.twin, "ROOT")
        if json_out:
            return json.loads(out_a), json.loads(out_b), a.returncode
        return out_a, out_b, a.returncode

    def test_same_output_through_the_daemon(self):
        # The daemon answers: status says what only it knows.
        st, st_direct, _ = self.both("status")
        self.assertIn("daemon", st)
        self.assertNotIn("daemon", st_direct)
        self.assertEqual(without(st, "daemon"), st_direct)

        for args in (("list",), ("plan", "realtime"), ("plan", "--all", "realtime-virtual-host")):
            a, b, rc = self.both(*args)
            self.assertEqual(a, b, args)
            self.assertEqual(rc, 0)
            a, b, rc = self.both(*args, json_out=False)
            self.assertEqual(a, b, args)

        a, b, rc = self.both("apply", "realtime")
        self.assertEqual(a, b)
        self.assertEqual(rc, 0)
        self.assertGreater(a["changed"], 0)
        self.assertIn("Applied realtime", self.d.logtext(), "the apply did not go through rtpartd")
        a, b, rc = self.both("apply", "realtime", json_out=False)
        self.assertEqual(a, b)

        # verify says more through the daemon: how fresh its answer is ("daemon", a "Checked:" line).
        a, b, rc = self.both("verify")
        self.assertIn("daemon", a)
        self.assertEqual(without(a, "daemon"), b)
        self.assertEqual(rc, 4)  # boot arguments wait for a reboot
        for root in (self.d.root, self.twin):
            with open(os.path.join(root, "proc/sys/vm/swappiness"), "w") as f:
                f.write("60\n")
        a, b, rc = self.both("verify")
        self.assertEqual(without(a, "daemon"), b)
        self.assertEqual(rc, 3)
        self.assertEqual(a["drift"], [{"knob": "sysctl/vm.swappiness", "domain": "sysctl", "expected": "10", "actual": "60"}])
        a, b, rc = self.both("verify", json_out=False)
        self.assertRegex(a, r"\nChecked: rtpartd")
        self.assertEqual("".join(l for l in a.splitlines(True) if not l.startswith("Checked: ")), b)
        self.assertIn("sysctl/vm.swappiness", a)

        st, st_direct, _ = self.both("status")
        self.assertEqual(without(st, "daemon", "applied_at"), without(st_direct, "applied_at"))
        a, b, rc = self.both("revert")
        self.assertEqual(a, b)
        self.assertEqual(rc, 0)
        self.assertIn("Reverted", self.d.logtext())

    def test_errors_through_the_daemon(self):
        # An invalid profile, given as a relative path: exit 2, the file named as the user gave it.
        bad = os.path.join(self.d.tmp, "lab")
        os.makedirs(bad)
        with open(os.path.join(bad, "lab.json"), "w") as f:
            json.dump({"include": "base.json"}, f)
        with open(os.path.join(bad, "base.json"), "w") as f:
            json.dump({"irq": {"rules": [{"match": "*", "cpus": "999"}]}}, f)
        for arg in ("lab.json", "./lab.json"):
            a = ctl(self.d.root, "plan", arg, cwd=bad)
            b = ctl(self.twin, "--no-daemon", "plan", arg, cwd=bad)
            self.assertEqual((a.returncode, a.stderr), (b.returncode, b.stderr), arg)
            self.assertEqual(a.returncode, 2)
            self.assertRegex(a.stderr, r"^base\.json: /irq/rules/0/cpus: ")
        a = ctl(self.d.root, "apply", "no-such-profile")
        self.assertEqual(a.returncode, 2)
        self.assertIn("no-such-profile", a.stderr)

        # Not root: rtpartd refuses the change; reading is open.
        if shutil.which("setpriv"):
            user = TestUser.get(self)
            p = ctl(self.d.root, "apply", "realtime", user=user)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("needs root", p.stderr)
            p = ctl(self.d.root, "--json", "status", user=user)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("daemon", json.loads(p.stdout))
        self.assertFalse(os.path.exists(self.d.path("var/lib/rtpart/state.json")), "a refused apply wrote the journal")

        # A socket nobody listens on: rtpartctl works on the host directly, and says nothing.
        self.d.stop()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(self.d.sock)
        s.close()
        p = ctl(self.d.root, "--json", "status")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        self.assertNotIn("daemon", json.loads(p.stdout))
        p = ctl(self.d.root, "watch")
        self.assertEqual(p.returncode, 1)
        self.assertIn("rtpartd is not running; watch needs it", p.stderr)
        os.unlink(self.d.sock)

    def watch(self, *args):
        p = subprocess.Popen(VG + [CTL, "--root", self.d.root] + list(args) + ["watch"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def readline(self, p, timeout=5 * SLOW):
        r, _, _ = select.select([p.stdout], [], [], timeout)
        self.assertTrue(r, "no line from rtpartctl watch within %d s" % timeout)
        return p.stdout.readline()

    def test_watch(self):
        self.assertEqual(ctl(self.d.root, "apply", "realtime").returncode, 0)
        text = self.watch()
        js = self.watch("--json")
        # Both have subscribed once the daemon counts two streams.
        end = time.monotonic() + 5 * SLOW
        while time.monotonic() < end:
            st = json.loads(ctl(self.d.root, "--json", "status").stdout)
            if st["daemon"]["streams"] == 2:
                break
            time.sleep(0.02)
        self.assertEqual(st["daemon"]["streams"], 2)
        self.d.write("proc/sys/vm/swappiness", "42\n")
        line = self.readline(text)
        self.assertRegex(line, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z  sysctl/vm\.swappiness +expected 10, found 42$")
        ev = json.loads(self.readline(js))
        self.assertEqual(without(ev, "time"), {"event": "drift", "knob": "sysctl/vm.swappiness", "domain": "sysctl",
                                               "expected": "10", "actual": "42"})
        err = {}
        for p in (text, js):
            p.send_signal(signal.SIGINT)  # our own child, by PID
            rc = p.wait(timeout=10 * SLOW)
            err[p] = p.stderr.read()
            self.assertEqual(rc, 0, err[p])
        self.assertIn("Watching realtime", err[text])


# Run as the test user: opens N connections to the socket and holds them; says how many the
# daemon kept and how many it refused (an error reply, then closed); then, when asked, pipelines
# calls on the kept ones without ever reading a reply, until the daemon stops taking them.
HOLDER = r"""
import json, select, socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
conns = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    conns.append(s)
time.sleep(1)
kept, refused = [], []
for s in conns:
    r, _, _ = select.select([s], [], [], 0)
    if not r:
        kept.append(s)
        continue
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    refused.append(json.loads(buf.split(b"\0")[0])["error"] if buf else "closed without a reply")
print(json.dumps({"kept": len(kept), "refused": sorted(set(refused)), "n_refused": len(refused)}), flush=True)
if sys.stdin.readline().strip() == "flood":
    call = json.dumps({"method": "org.varlink.service.GetInterfaceDescription",
                       "parameters": {"interface": "org.rtpart.Manager"}}).encode() + b"\0"
    data = call * 4000  # 4000 replies of 8 KiB per connection: 32 MiB each if all were queued
    sent = [0] * len(kept)
    for s in kept:
        s.setblocking(False)
    idle_since = time.monotonic()
    while time.monotonic() < idle_since + 2:
        for i, s in enumerate(kept):
            if sent[i] < len(data):
                try:
                    n = s.send(data[sent[i]:sent[i] + 65536])
                    sent[i] += n
                    idle_since = time.monotonic()
                except BlockingIOError:
                    pass
                except OSError:
                    sent[i] = len(data)  # closed by the daemon
        time.sleep(0.01)
    print(json.dumps({"sent": sent, "calls": len(data)}), flush=True)
    sys.stdin.readline()
"""


class DaemonProcsTest(unittest.TestCase):
    """A daemon for each test, and the client processes the test started (ended by PID)."""

    daemon_args = {}

    def setUp(self):
        self.d = Daemon(**self.daemon_args)
        self.d.start()
        self.procs = []

    def tearDown(self):
        for p in self.procs:  # our own client processes, by PID
            if p.poll() is None:
                p.kill()
                p.wait()
            for f in (p.stdin, p.stdout, p.stderr):
                if f:
                    f.close()
        close_daemon(self, self.d)


class LimitsTest(DaemonProcsTest):
    """What one local user can take of rtpartd: 16 connections and bounded memory; root still gets
    its answers, and rtpartctl, as root, works on the host directly when rtpartd has no room."""

    daemon_args = {"default_socket": True}

    def holder(self, n):
        uid, gid = TestUser.get(self)

        def drop():
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)

        p = subprocess.Popen([user_python(self), "-c", HOLDER, self.d.sock, str(n)], preexec_fn=drop, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.procs.append(p)
        r, _, _ = select.select([p.stdout], [], [], 30)
        self.assertTrue(r, "the holder did not report")
        line = p.stdout.readline()
        self.assertTrue(line, p.stderr.read() if p.poll() is not None else "no report")
        return p, json.loads(line)

    def test_one_user_cannot_lock_root_out(self):
        p, held = self.holder(300)
        st = ctl(self.d.root, "--json", "status")
        self.assertEqual(st.returncode, 0, st.stderr)
        self.assertEqual(st.stderr, "")
        self.assertIn("daemon", json.loads(st.stdout))
        self.assertEqual(held, {"kept": 16, "refused": [IFACE + ".TooManyConnections"], "n_refused": 284})
        # 284 refusals, one line in the log.
        self.assertEqual(self.d.logtext().count("refused"), 1, self.d.logtext())

        # The held connections pipeline calls and never read: the daemon stops reading them, and
        # its memory stays bounded (VmHWM: the most it ever had resident).
        p.stdin.write("flood\n")
        p.stdin.flush()
        r, _, _ = select.select([p.stdout], [], [], 120)
        self.assertTrue(r, "the flood did not end")
        flood = json.loads(p.stdout.readline())
        hwm = self.d.status_field("VmHWM")
        print(f"rtpartd peak RSS with 16 connections flooding: {hwm} KiB; calls sent: {flood['sent']}")
        if not VALGRIND:  # under memcheck, VmHWM is valgrind's own
            self.assertLess(hwm, 64 * 1024, f"rtpartd grew to {hwm} KiB")
        st = ctl(self.d.root, "status")
        self.assertEqual(st.returncode, 0, st.stderr)
        self.assertIsNone(self.d.proc.poll())

    def test_root_refused_works_directly(self):
        # Root itself holds every connection: rtpartctl, as root, says so and works alone.
        # Connections are opened, each with a call answered, until one is refused: then every slot
        # is ours, even one a connection of the daemon's start-up check held a while longer (under
        # memcheck its hangup is taken in late, and a fixed 256 left that slot to rtpartctl).
        conns = []
        while True:
            c = Varlink(self.d.sock)
            r = c.call("org.varlink.service.GetInfo")
            if r.get("error"):
                self.assertEqual(r["error"], IFACE + ".TooManyConnections", r)
                c.close()
                break
            conns.append(c)
            self.assertLessEqual(len(conns), 256, "rtpartd took more than 256 connections")
        try:
            st = ctl(self.d.root, "--json", "status")
            self.assertEqual(st.returncode, 0, st.stderr)
            self.assertRegex(st.stderr, r"^rtpartctl: warning: rtpartd did not take the connection \(too many "
                                        r"connections.*\); working on the host directly, as with --no-daemon\n$")
            self.assertNotIn("daemon", json.loads(st.stdout))
            # watch cannot work alone: it says why.
            w = ctl(self.d.root, "watch")
            self.assertEqual(w.returncode, 1)
            self.assertIn("too many connections", w.stderr)
            if shutil.which("setpriv"):
                p = ctl(self.d.root, "status", user=TestUser.get(self))
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn("rtpartd did not take the connection", p.stderr)
        finally:
            for c in conns:
                c.close()

    def test_unreachable_socket_is_an_error_not_a_crash(self):
        p = ctl(self.d.root, "--varlink-socket=/nonexistent", "status")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr, "rtpartctl: cannot connect to rtpartd at /nonexistent: No such file or directory\n")


@unittest.skipUnless(shutil.which("socat"), "socat missing (scripts/deps --test installs it)")
class SocatTest(DaemonProcsTest):
    """varlink as any client speaks it, through socat - UNIX-CONNECT:SOCKET: NUL-terminated JSON."""

    def once(self, data):
        """printf DATA | socat: every reply, in order, once rtpartd has closed the connection."""
        p = subprocess.run(["socat", "-t", "5", "-", "UNIX-CONNECT:" + self.d.sock], input=data,
                           capture_output=True, timeout=30 * SLOW)
        self.assertEqual(p.returncode, 0, p.stderr)
        *replies, rest = p.stdout.split(b"\0")
        self.assertEqual(rest, b"", "a reply without its NUL")
        return [json.loads(r) for r in replies]

    def session(self):
        """socat with its standard input kept open: the connection ends when rtpartd ends it (and
        socat, half a second after the socket's end, closes its output)."""
        p = subprocess.Popen(["socat", "-t", "0.5", "-", "UNIX-CONNECT:" + self.d.sock], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.procs.append(p)
        p.buf = b""
        return p

    def send(self, p, data):
        p.stdin.write(data)
        p.stdin.flush()

    def reply(self, p, timeout=5 * SLOW):
        """The next NUL-terminated reply, None when rtpartd closed the connection."""
        while b"\0" not in p.buf:
            ready, _, _ = select.select([p.stdout], [], [], timeout)
            if not ready:
                raise AssertionError(f"no reply within {timeout} s")
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                return None
            p.buf += chunk
        msg, _, p.buf = p.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method, parameters=None, more=False):
        m = {"method": method}
        if parameters is not None:
            m["parameters"] = parameters
        if more:
            m["more"] = True
        return json.dumps(m).encode() + b"\0"

    def assert_alive(self):
        self.assertIsNone(self.d.proc.poll(), "rtpartd died")
        self.assertIn("daemon", call_ok(self.d.sock, "Status"))

    def test_get_info_and_description(self):
        (info,) = self.once(self.call("org.varlink.service.GetInfo"))
        p = info["parameters"]
        self.assertEqual((p["vendor"], p["product"], p["url"]), ("rtpart", "rtpartd", "man:rtpartd(8)"))
        self.assertEqual(sorted(p["interfaces"]), ["org.rtpart.Manager", "org.varlink.service"])
        (desc,) = self.once(self.call("org.varlink.service.GetInterfaceDescription", {"interface": IFACE}))
        text = desc["parameters"]["description"]
        self.assertIn("interface org.rtpart.Manager\n", text)
        for m in ("Apply(profile: string)", "Monitor()", "Correct()", "error PermissionDenied"):
            self.assertIn(m, text)

    def test_pipelined_calls_answered_in_order(self):
        # Three calls in one write: three replies, in the order asked.
        replies = self.once(self.call("org.varlink.service.GetInfo") + self.call(IFACE + ".Status") +
                            self.call(IFACE + ".ListProfiles"))
        self.assertEqual(len(replies), 3, replies)
        self.assertIn("interfaces", replies[0]["parameters"])
        self.assertIn("daemon", replies[1]["parameters"])
        self.assertIn("realtime", [x["name"] for x in replies[2]["parameters"]["profiles"]])
        # A call cut in two writes is one call: nothing is answered before its NUL.
        s = self.session()
        msg = self.call(IFACE + ".Status")
        self.send(s, msg[:10])
        self.assertEqual(select.select([s.stdout], [], [], 0.3)[0], [], "answered before the message was complete")
        self.send(s, msg[10:] + self.call(IFACE + ".Verify"))
        self.assertIn("daemon", self.reply(s)["parameters"])
        self.assertIn("in_sync", self.reply(s)["parameters"])
        s.stdin.close()
        self.assertEqual(s.wait(timeout=10 * SLOW), 0)

    def test_monitor_with_more(self):
        call_ok(self.d.sock, "Apply", {"profile": "realtime"})
        s = self.session()
        self.send(s, self.call(IFACE + ".Monitor", more=True))
        first = self.reply(s)
        self.assertEqual(first["parameters"]["event"], "status")
        self.assertTrue(first["continues"])
        self.assertEqual(call_ok(self.d.sock, "Status")["daemon"]["streams"], 1)
        self.d.write("proc/sys/vm/swappiness", "61\n")
        ev = self.reply(s)
        self.assertTrue(ev["continues"])
        self.assertEqual(ev["parameters"]["event"], "drift")
        self.assertEqual(ev["parameters"]["drift"], [{"knob": "sysctl/vm.swappiness", "domain": "sysctl",
                                                      "expected": "10", "actual": "61"}])
        # The client hangs up: the stream is over, on both sides.
        s.stdin.close()
        self.assertEqual(s.wait(timeout=10 * SLOW), 0)
        end = time.monotonic() + 5 * SLOW
        while call_ok(self.d.sock, "Status")["daemon"]["streams"] != 0:
            self.assertLess(time.monotonic(), end, "the stream outlived its connection")
            time.sleep(0.02)
        # Monitor without "more" is refused, and the connection stays usable.
        s = self.session()
        self.send(s, self.call(IFACE + ".Monitor"))
        self.assertEqual(self.reply(s)["error"], "org.varlink.service.ExpectedMore")
        self.send(s, self.call("org.varlink.service.GetInfo"))
        self.assertIn("interfaces", self.reply(s)["parameters"])
        s.stdin.close()
        self.assertEqual(s.wait(timeout=10 * SLOW), 0)

    def test_malformed_input(self):
        # A protocol violation: one error, then rtpartd closes the connection although the client
        # keeps its side open (socat ends only because the socket did).
        bad = {
                b"{not json\0": None,
                b"[1, 2]\0": "message is not a JSON object",
                b'{"parameters": {}}\0': "method",
                b'{"method": "org.varlink.service.GetInfo", "more": "yes"}\0': "more",
                b"\xff\xfe\0": None,
                # No NUL at all, past the 1 MiB bound.
                b"{" + b" " * (1 << 20) + b"  ": "message too long",
        }
        for data, parameter in bad.items():
            s = self.session()
            try:
                self.send(s, data)
            except BrokenPipeError:
                pass  # rtpartd stopped reading at the bound and closed; socat went with it
            r = self.reply(s)
            self.assertEqual(r["error"], "org.varlink.service.InvalidParameter", data[:40])
            if parameter:
                self.assertEqual(r["parameters"]["parameter"], parameter)
            self.assertIsNone(self.reply(s), f"connection left open after {data[:40]!r}")
            s.wait(timeout=10 * SLOW)
            self.assert_alive()

        # An unknown method or interface is an error of that call, not of the connection.
        s = self.session()
        self.send(s, self.call(IFACE + ".Nope") + self.call("com.example.Nope.Call"))
        r = self.reply(s)
        self.assertEqual((r["error"], r["parameters"]), ("org.varlink.service.MethodNotFound", {"method": IFACE + ".Nope"}))
        r = self.reply(s)
        self.assertEqual((r["error"], r["parameters"]), ("org.varlink.service.InterfaceNotFound",
                                                          {"interface": "com.example.Nope"}))
        self.send(s, self.call("org.varlink.service.GetInfo"))
        self.assertIn("interfaces", self.reply(s)["parameters"])
        s.stdin.close()
        self.assertEqual(s.wait(timeout=10 * SLOW), 0)
        self.assert_alive()


BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={sock}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  <includedir>{policydir}</includedir>
</busconfig>
"""


@unittest.skipUnless(shutil.which("dbus-daemon") and shutil.which("busctl") and shutil.which("setpriv"),
                     "dbus-daemon, busctl or setpriv missing")
class DBusTest(unittest.TestCase):
    """rtpartd on a private bus that has only the project's policy file."""

    def setUp(self):
        self.d = Daemon()
        policydir = os.path.join(self.d.tmp, "system.d")
        os.makedirs(policydir)
        shutil.copy(os.path.join(SRC, "systemd", "org.rtpart.Manager1.conf"), policydir)
        busock = os.path.join(self.d.tmp, "bus")
        conf = os.path.join(self.d.tmp, "bus.conf")
        with open(conf, "w") as f:
            f.write(BUS_CONF.format(sock=busock, policydir=policydir))
        self.bus = subprocess.Popen(["dbus-daemon", "--nofork", "--config-file=" + conf],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 5 * SLOW
        while not os.path.exists(busock) and time.monotonic() < end:
            time.sleep(0.02)
        self.addr = "unix:path=" + busock
        self.env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.addr)
        self.proc = subprocess.Popen(VG + [DAEMON, "--root", self.d.root], stdout=self.d.log, stderr=subprocess.STDOUT, env=self.env)
        end = time.monotonic() + 10 * SLOW
        while time.monotonic() < end:
            if self.busctl("status", "org.rtpart.Manager1").returncode == 0:
                break
            self.assertIsNone(self.proc.poll(), self.d.logtext())
            time.sleep(0.05)

    def tearDown(self):
        rc = terminate(self.proc)  # our own children, by PID
        terminate(self.bus)
        self.d.close()
        memcheck_verdict(rc)

    def busctl(self, *args, user=None):
        cmd = ["busctl", "--address=" + self.addr] + list(args)
        if user:
            cmd = as_user(cmd, user)
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30 * SLOW)

    def obj(self, *args, user=None):
        return self.busctl(args[0], "org.rtpart.Manager1", "/org/rtpart/Manager1", *args[1:], user=user)

    def test_busctl(self):
        self.user = TestUser.get(self)
        # Non-root, before anything is applied: Apply is refused with rtpartd's own error (the
        # policy lets the call through), and nothing is written.
        p = self.obj("call", "org.rtpart.Manager1", "Apply", "s", "realtime", user=self.user)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("needs root", p.stderr)
        self.assertFalse(os.path.exists(self.d.path("var/lib/rtpart/state.json")), "a refused Apply wrote the journal")

        p = self.obj("introspect", "org.rtpart.Manager1")
        self.assertEqual(p.returncode, 0, p.stderr)
        for member in (".Apply", ".DriftDetected", ".ActiveProfile"):
            self.assertIn(member, p.stdout)
        p = self.obj("call", "org.rtpart.Manager1", "Apply", "s", "realtime", "--json=short")
        self.assertEqual(p.returncode, 0, p.stderr + self.d.logtext())
        self.assertTrue(json.loads(json.loads(p.stdout)["data"][0])["ok"])
        p = self.obj("get-property", "org.rtpart.Manager1", "ActiveProfile", user=self.user)
        self.assertEqual(p.stdout.strip(), 's "realtime"', p.stderr)

        # Non-root: read yes, change no — with rtpartd's own error, through the policy.
        p = self.obj("call", "org.rtpart.Manager1", "Revert", user=self.user)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("needs root", p.stderr)
        p = self.obj("call", "org.rtpart.Manager1", "Verify", user=self.user)
        self.assertEqual(p.returncode, 0, p.stderr)
        # Only root may own the name.
        p = self.busctl("call", "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
                        "su", "org.rtpart.Manager1", "0", user=self.user)
        self.assertNotEqual(p.returncode, 0)

        # A write behind rtpartd's back: DriftDetected on the bus.
        mon = subprocess.Popen(["busctl", "--address=" + self.addr, "monitor", "--json=short",
                                "--match", "type='signal',interface='org.rtpart.Manager1',member='DriftDetected'"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            time.sleep(0.5)
            self.d.write("proc/sys/vm/swappiness", "33\n")
            end = time.monotonic() + 5 * SLOW
            line = ""
            while time.monotonic() < end and "DriftDetected" not in line:
                line = mon.stdout.readline()
            self.assertIn("sysctl/vm.swappiness", line)
        finally:
            mon.terminate()
            mon.wait()
            mon.stdout.close()
        p = self.obj("get-property", "org.rtpart.Manager1", "DriftCount")
        self.assertEqual(p.stdout.strip(), "u 1")

        # Audit: root only, answered when the window ends; the read-only calls for everyone.
        p = self.obj("call", "org.rtpart.Manager1", "Audit", "u", "1", user=self.user)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("reads every task of the host and needs root", p.stderr)
        p = self.obj("call", "org.rtpart.Manager1", "Audit", "u", "1", "--json=short")
        self.assertEqual(p.returncode, 0, p.stderr + self.d.logtext())
        doc = json.loads(json.loads(p.stdout)["data"][0])
        self.assertIn("the isolated CPUs of realtime", doc["source"])
        p = self.obj("call", "org.rtpart.Manager1", "Audit", "u", "0")
        self.assertIn("seconds is 1 to 3600", p.stderr)
        for member in ("Describe", "GetDrift", "VerifyTyped"):
            p = self.obj("call", "org.rtpart.Manager1", member, user=self.user)
            self.assertEqual(p.returncode, 0, (member, p.stderr))


if __name__ == "__main__":
    if not os.access(DAEMON, os.X_OK) or not os.access(CTL, os.X_OK):
        skip(f"{DAEMON} or {CTL} not built")
    if not os.path.isdir(os.path.join(HOSTS, "vm")):
        skip(f"fixture host {HOSTS}/vm missing (the build makes it)")
    if os.geteuid() != 0:
        skip("Apply over varlink needs a root peer (SO_PEERCRED uid 0); run as root")
    unittest.main(verbosity=2)
