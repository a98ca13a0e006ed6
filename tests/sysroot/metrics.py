#!/usr/bin/env python3
"""rtpartd's Prometheus metrics (rtpartd(8), METRICS): the sim rtpartd on a copy of the vm fake host
with --metrics-dir.

Without an argument (suite sysroot): the file rtpart.prom is written at start, and again after an
Apply, drift found, drift cleared, an Audit call (its per-CPU counts those of the call's document),
a failed Apply (rtpart_last_apply_success 0) and a Revert; it is replaced by rename each time (a
new inode, mode 0644, no temporary file left), and left alone (same inode and bytes) across calls
that change nothing (Status, Verify, Describe, SIGHUP) and safety-timer ticks. A missing metrics
directory is one log line, no file, and a daemon that works on.

With "node-exporter" (suite sysroot): Debian's prometheus-node-exporter, downloaded once with
`apt-get download` into /var/cache/rtpart-test/node-exporter and unpacked there (nothing is
installed), serves the directory with its textfile collector alone on 127.0.0.1 and a free port;
/metrics shows the rtpart_ metrics with the drift and then without it, and
node_textfile_scrape_error is 0. promtool checks the file when the package has it (Debian 12's does
not: that part is skipped with a message). node_exporter is stopped by its PID. Exits 77 with the
reason when the package cannot be had.
"""
import glob
import json
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
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import SLOW, Daemon, Varlink, call_ok, close_daemon, terminate  # noqa: E402

IFACE = "org.rtpart.Manager"
FILE = "rtpart.prom"
CACHE = "/var/cache/rtpart-test/node-exporter"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """{(name, ((label, value), …)): float} of the sample lines; HELP and TYPE lines kept apart."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


class MetricsDir:
    """The metrics file as last seen: (inode, mtime, bytes), or None when there is none."""

    def __init__(self, d, path):
        self.d, self.path = d, path
        self.file = os.path.join(path, FILE)
        self.held = None  # an open fd of the file as seen: a rename over it unlinks it (nlink 0)
        self.seen = self.state()
        self.hold()

    def hold(self):
        if self.held is not None:
            os.close(self.held)
            self.held = None
        try:
            self.held = os.open(self.file, os.O_RDONLY)
        except FileNotFoundError:
            pass

    def state(self):
        try:
            st = os.stat(self.file)
            with open(self.file) as f:
                return (st.st_ino, st.st_mtime_ns, f.read())
        except FileNotFoundError:
            return None

    def wait_change(self, what):
        """Waits (10 s at most) for the file to be replaced; returns its samples."""
        end = time.monotonic() + 10 * SLOW
        while time.monotonic() < end:
            now = self.state()
            if now is not None and now != self.seen:
                # Not the inode number: a filesystem may give a freed one to the next file.
                assert self.held is None or os.fstat(self.held).st_nlink == 0, \
                    f"{what}: {FILE} was rewritten in place, not replaced"
                self.seen = now
                self.hold()
                self.check_dir()
                return parse(now[2])
            time.sleep(0.01)
        raise AssertionError(f"{what}: {FILE} did not change within 10 s:\n{self.d.logtext()[-2000:]}")

    def assert_unchanged(self, what):
        # A call answered after the change would have been made: rtpartd renders after every
        # turn of its event loop, and this call's turn comes after the others.
        call_ok(self.d.sock, "Status")
        assert self.state() == self.seen, f"{what}: {FILE} was written although nothing it says changed"

    def check_dir(self):
        st = os.stat(self.file)
        assert st.st_mode & 0o7777 == 0o644, oct(st.st_mode)
        left = [f for f in os.listdir(self.path) if f != FILE]
        assert not left, f"left in the metrics directory: {left}"


def bump_interrupts(root, irq, cpu, by):
    """IRQ irq's and LOC's counts on cpu go up (by, and 1000) in the fake host's /proc/interrupts."""
    path = os.path.join(root, "proc", "interrupts")
    with open(path) as f:
        lines = f.read().split("\n")
    n = len(lines[0].split())
    out = [lines[0]]
    for line in lines[1:]:
        m = re.match(r"^(\s*)(\w+):(.*)$", line)
        if m and m.group(2) in (str(irq), "LOC"):
            cols = m.group(3).split()
            counts = [int(c) for c in cols[:n]]
            counts[cpu] += by if m.group(2) != "LOC" else 1000
            line = f"{m.group(1)}{m.group(2)}:" + "".join(f"{c:11d}" for c in counts) + "   " + " ".join(cols[n:])
        out.append(line)
    with open(path, "w") as f:
        f.write("\n".join(out))


def wait_for(cond, what, timeout=10):
    end = time.monotonic() + timeout * SLOW
    while time.monotonic() < end:
        r = cond()
        if r:
            return r
        time.sleep(0.02)
    raise AssertionError(f"no {what} within {timeout} s")


def entry_knobs(entry):
    """How many knobs a journal entry stands for: itself and the numbers of its "also" list
    ("1-99,101", journal version 2)."""
    n = 1
    for part in filter(None, entry.get("also", "").split(",")):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


class MetricsFileTest(unittest.TestCase):
    def setUp(self):
        self.d = None

    def tearDown(self):
        if self.d:
            close_daemon(self, self.d)

    def start(self, *args, env=None):
        self.d = Daemon()
        self.prom = os.path.join(self.d.tmp, "node-exporter")
        os.makedirs(self.prom)
        saved = {k: os.environ.get(k) for k in (env or {})}
        os.environ.update(env or {})
        try:
            self.d.start("--metrics-dir", self.prom, *args)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return MetricsDir(self.d, self.prom)

    def test_written_on_every_change_and_only_then(self):
        m = self.start("-v", "--interval", "1")
        d = self.d
        s = m.wait_change("start") if m.seen is None else parse(m.seen[2])
        m.check_dir()
        self.assertEqual(value(s, "rtpart_profile_applied"), 0)
        self.assertEqual(value(s, "rtpart_in_sync"), 1)
        self.assertIsNone(value(s, "rtpart_last_apply_success"))
        m.assert_unchanged("Status")

        # Apply.
        t0 = time.time()
        a = call_ok(d.sock, "Apply", {"profile": "realtime"})
        self.assertTrue(a["ok"])
        s = m.wait_change("Apply")
        self.assertEqual(value(s, "rtpart_profile_info", profile="realtime"), 1)
        self.assertEqual(value(s, "rtpart_profile_applied"), 1)
        self.assertEqual(value(s, "rtpart_in_sync"), 1)
        self.assertEqual(value(s, "rtpart_reboot_required"), 1)  # boot arguments on a fake host
        self.assertEqual(value(s, "rtpart_last_apply_success"), 1)
        self.assertGreaterEqual(value(s, "rtpart_last_apply_timestamp_seconds"), int(t0))
        self.assertLessEqual(value(s, "rtpart_last_apply_timestamp_seconds"), time.time() + 1)
        v = call_ok(d.sock, "Verify")
        with open(d.path("var/lib/rtpart/state.json")) as f:
            journal = json.load(f)
        for dom in {k["domain"] for k in journal["applied"]}:
            self.assertEqual(value(s, "rtpart_owned_knobs", domain=dom),
                             sum(entry_knobs(k) for k in journal["applied"] if k["domain"] == dom), dom)
            self.assertEqual(value(s, "rtpart_drifted_knobs", domain=dom), 0, dom)
        self.assertEqual(value(s, "rtpart_drifted_knobs", domain="task"), 0)
        self.assertEqual(value(s, "rtpart_drift_events_total"), 0)
        self.assertTrue(v["in_sync"])

        # Calls and a reload that change nothing, and safety-timer ticks (--interval 1).
        for call in ("Status", "Verify", "Describe"):
            call_ok(d.sock, call)
            m.assert_unchanged(call)
        d.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "SIGHUP" in d.logtext(), "SIGHUP log line")
        m.assert_unchanged("SIGHUP")
        ticks = call_ok(d.sock, "Status")["daemon"]["safety_checks"]
        wait_for(lambda: call_ok(d.sock, "Status")["daemon"]["safety_checks"] >= ticks + 2, "two safety checks", 20)
        m.assert_unchanged("safety checks")

        # Drift found, then cleared.
        d.write("proc/sys/vm/swappiness", "60\n")
        s = m.wait_change("drift")
        self.assertEqual(value(s, "rtpart_in_sync"), 0)
        self.assertEqual(value(s, "rtpart_drifted_knobs", domain="sysctl"), 1)
        self.assertEqual(value(s, "rtpart_drifted_knobs", domain="irq"), 0)
        self.assertEqual(value(s, "rtpart_drift_events_total"), 1)
        m.assert_unchanged("Status while drifted")
        d.write("proc/sys/vm/swappiness", "10\n")
        s = m.wait_change("drift cleared")
        self.assertEqual(value(s, "rtpart_in_sync"), 1)
        self.assertEqual(value(s, "rtpart_drifted_knobs", domain="sysctl"), 0)
        self.assertEqual(value(s, "rtpart_drift_events_total"), 1)

        # An Audit call: its document's per-CPU counts.
        c = Varlink(d.sock, timeout=30 * SLOW)
        c.send(IFACE + ".Audit", {"seconds": 2})
        wait_for(lambda: "Audit of" in d.logtext(), "Audit start in the log")
        bump_interrupts(d.root, irq=50, cpu=3, by=7)
        r = c.recv()
        c.close()
        self.assertNotIn("error", r, r)
        doc = r["parameters"]
        s = m.wait_change("Audit")
        self.assertGreater(len(doc["cpu"]), 0)
        for cpu in doc["cpu"]:
            n = str(cpu["cpu"])
            self.assertEqual(value(s, "rtpart_audit_interrupts", cpu=n), sum(e["count"] for e in cpu["interrupts"]), n)
            self.assertEqual(value(s, "rtpart_audit_tick_interrupts", cpu=n), cpu["tick"]["count"], n)
            self.assertEqual(value(s, "rtpart_audit_softirqs", cpu=n), sum(e["count"] for e in cpu["softirqs"]), n)
            self.assertEqual(value(s, "rtpart_audit_noise_threads", cpu=n), len(cpu["threads"]), n)
            self.assertEqual(value(s, "rtpart_audit_noisy", cpu=n), 1 if cpu["verdict"] == "noisy" else 0, n)
        self.assertEqual(value(s, "rtpart_audit_interrupts", cpu="3"), 7)
        self.assertEqual(value(s, "rtpart_audit_tick_interrupts", cpu="3"), 1000)
        self.assertEqual(value(s, "rtpart_audit_noisy", cpu="3"), 1)
        self.assertAlmostEqual(value(s, "rtpart_last_audit_window_seconds"), doc["seconds"], delta=0.002)
        m.assert_unchanged("Status after the audit")

        # Revert.
        call_ok(d.sock, "Revert")
        s = m.wait_change("Revert")
        self.assertEqual(value(s, "rtpart_profile_applied"), 0)
        self.assertIsNone(value(s, "rtpart_profile_info", profile="realtime"))
        self.assertEqual(value(s, "rtpart_owned_knobs", domain="sysctl"), 0)
        self.assertEqual(value(s, "rtpart_last_apply_success"), 1)  # the last apply is still that one
        self.assertEqual(value(s, "rtpart_audit_interrupts", cpu="3"), 7)  # and the last audit
        m.assert_unchanged("Status after the revert")
        self.assertEqual(d.logtext().count("Writing metrics to"), 1, d.logtext())

    def test_failed_apply(self):
        # The simulator's write log says which write of an Apply begins its transaction (the
        # journal's); failing that one fails the Apply.
        log = os.path.join(tempfile.gettempdir(), f"rtpart-metrics-writes-{os.getpid()}.log")
        try:
            self.start(env={"RTPART_TEST_WRITE_LOG": log})
            before = sum(1 for _ in open(log)) if os.path.exists(log) else 0
            call_ok(self.d.sock, "Apply", {"profile": "realtime"})
            with open(log) as f:
                lines = f.read().splitlines()
        finally:
            if os.path.exists(log):
                os.unlink(log)
        k = next(i + 1 for i, line in enumerate(lines) if i >= before and "state.json" in line and "replace" in line)
        self.d.close()

        m = self.start(env={"RTPART_TEST_FAIL_AT": str(k), "RTPART_TEST_FAIL_ERRNO": "ENOSPC"})
        if m.seen is None:
            m.wait_change("start")
        c = Varlink(self.d.sock, timeout=60 * SLOW)
        r = c.call(IFACE + ".Apply", {"profile": "realtime"})
        c.close()
        self.assertIn("error", r, r)
        s = m.wait_change("failed Apply")
        self.assertEqual(value(s, "rtpart_last_apply_success"), 0)
        self.assertEqual(value(s, "rtpart_profile_applied"), 0)
        self.assertIsNotNone(value(s, "rtpart_last_apply_timestamp_seconds"))

    def test_under_root_the_directory_stays_in_the_tree(self):
        # Without --metrics-dir the directory is the root's var/lib/prometheus/node-exporter: a
        # var/lib/prometheus that is a symlink (absolute, or climbing with "..") resolves inside
        # the tree, never to the directory outside it named.
        outside = tempfile.mkdtemp(prefix="rtpart-metrics-outside-")
        self.addCleanup(shutil.rmtree, outside, ignore_errors=True)
        os.makedirs(os.path.join(outside, "node-exporter"))
        for target in (outside, "../" * 12 + os.path.relpath(outside, "/")):
            with self.subTest(target=target):
                self.d = Daemon()
                os.makedirs(self.d.path("var/lib"), exist_ok=True)
                os.symlink(target, self.d.path("var/lib/prometheus"))
                self.d.start()
                call_ok(self.d.sock, "Apply", {"profile": "realtime"})
                call_ok(self.d.sock, "Status")  # answered after the Apply's metrics were rendered
                self.assertEqual(os.listdir(os.path.join(outside, "node-exporter")), [])
                self.assertIn("no metrics are written", self.d.logtext())
                close_daemon(self, self.d)
                self.d = None

    def test_planted_temporaries_neither_block_nor_own_it(self):
        # A metrics directory others can write: what a user plants at the temporary's names (a
        # FIFO, a file of theirs) and at rtpart.prom itself neither blocks rtpartd (Describe is
        # answered) nor becomes rtpart.prom, which is always a regular file rtpartd made. The names
        # are the ones rtpartd's writers used (".rtpart.prom.PID.tmp" before the root's, whose is
        # ".#rtpart.prom.PID.tmp"). The timeouts only detect a hang.
        m = self.start()
        os.chmod(self.prom, 0o1777)
        pid, user = self.d.proc.pid, 4190001
        fifo = os.path.join(self.prom, f".#{FILE}.{pid}.tmp")
        os.mkfifo(fifo, 0o666)
        planted = []
        for name in (f".{FILE}.{pid}.tmp", FILE):
            path = os.path.join(self.prom, name)
            with open(path, "w") as f:
                f.write("planted 1\n")
            os.chmod(path, 0o666)
            planted.append(path)
        for path in planted + [fifo]:
            os.chown(path, user, user)
        m.seen = m.state()
        c = Varlink(self.d.sock, timeout=10 * SLOW)
        r = c.call(IFACE + ".Apply", {"profile": "realtime"})
        self.assertNotIn("error", r, r)
        self.assertIn("parameters", c.call(IFACE + ".Describe"))
        c.close()
        s = wait_for(lambda: (lambda st: st if st and "planted" not in st[2] else None)(m.state()), "rtpart.prom")
        st = os.lstat(m.file)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual((st.st_uid, st.st_mode & 0o7777), (0, 0o644))
        self.assertEqual(value(parse(s[2]), "rtpart_profile_applied"), 1)
        for path in planted[:1]:
            with open(path) as f:
                self.assertEqual(f.read(), "planted 1\n", f"{path} was written")
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))

    def test_missing_directory(self):
        self.d = Daemon()
        missing = os.path.join(self.d.tmp, "no-node-exporter")
        self.d.start("--metrics-dir", missing)
        call_ok(self.d.sock, "Apply", {"profile": "realtime"})
        self.d.write("proc/sys/vm/swappiness", "60\n")
        wait_for(lambda: not call_ok(self.d.sock, "Describe")["in_sync"], "drift")
        call_ok(self.d.sock, "Revert")
        self.assertIsNone(self.d.proc.poll(), "rtpartd exited")
        self.assertFalse(os.path.exists(missing))
        log = self.d.logtext()
        self.assertEqual(log.count("no metrics are written"), 1, log)
        self.assertIn(f"No directory {missing}: no metrics are written", log)

        # A relative directory is refused at start.
        p = subprocess.run([os.environ.get("RTPARTD", "rtpartd"), "--metrics-dir", "relative", "--no-dbus"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--metrics-dir needs an absolute path, not 'relative'", p.stderr)


# ---- node_exporter ----

def node_exporter():
    """The prometheus-node-exporter binary, unpacked into CACHE (downloaded once); or (None, why)."""
    exe = os.path.join(CACHE, "usr", "bin", "prometheus-node-exporter")
    if os.access(exe, os.X_OK):
        return exe, None
    for tool in ("apt-get", "dpkg-deb"):
        if not shutil.which(tool):
            return None, f"no {tool} to fetch prometheus-node-exporter"
    os.makedirs(CACHE, exist_ok=True)
    if not glob.glob(os.path.join(CACHE, "prometheus-node-exporter_*.deb")):
        p = subprocess.run(["apt-get", "download", "prometheus-node-exporter"], cwd=CACHE, capture_output=True,
                           text=True, timeout=300)
        if p.returncode != 0:
            return None, f"apt-get download prometheus-node-exporter failed: {p.stderr.strip()[-300:]}"
    deb = sorted(glob.glob(os.path.join(CACHE, "prometheus-node-exporter_*.deb")))[-1]
    p = subprocess.run(["dpkg-deb", "-x", deb, CACHE], capture_output=True, text=True)
    if p.returncode != 0 or not os.access(exe, os.X_OK):
        return None, f"dpkg-deb -x {deb} failed: {p.stderr.strip()}"
    return exe, None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NodeExporter:
    def __init__(self, exe, directory, log):
        self.proc = None
        for _ in range(5):  # another program may take the port between bind and listen
            self.port = free_port()
            self.proc = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{self.port}",
                                          "--collector.disable-defaults", "--collector.textfile",
                                          f"--collector.textfile.directory={directory}"],
                                         stdout=log, stderr=subprocess.STDOUT)
            end = time.monotonic() + 20 * SLOW
            while time.monotonic() < end and self.proc.poll() is None:
                try:
                    self.scrape()
                    return
                except OSError:
                    time.sleep(0.05)
            terminate(self.proc)
        raise AssertionError("node_exporter did not serve /metrics")

    def scrape(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            return r.read().decode()

    def stop(self):
        if self.proc:
            terminate(self.proc)


class NodeExporterTest(unittest.TestCase):
    exe = None

    def test_scraped(self):
        d = Daemon()
        ne = None
        log = open(os.path.join(d.tmp, "node-exporter.log"), "w+")
        try:
            prom = os.path.join(d.tmp, "textfile")
            os.makedirs(prom)
            d.start("--metrics-dir", prom)
            m = MetricsDir(d, prom)
            if m.seen is None:
                m.wait_change("start")
            call_ok(d.sock, "Apply", {"profile": "realtime"})
            m.wait_change("Apply")
            d.write("proc/sys/vm/swappiness", "60\n")
            m.wait_change("drift")

            ne = NodeExporter(self.exe, prom, log)
            text = ne.scrape()
            s = parse(text)
            self.assertEqual(value(s, "node_textfile_scrape_error"), 0, text)
            self.assertEqual(value(s, "rtpart_profile_info", profile="realtime"), 1, text)
            self.assertEqual(value(s, "rtpart_in_sync"), 0, text)
            self.assertEqual(value(s, "rtpart_drifted_knobs", domain="sysctl"), 1, text)
            self.assertEqual(value(s, "rtpart_drift_events_total"), 1, text)
            self.assertEqual(value(s, "rtpart_last_apply_success"), 1, text)
            self.assertIn("# TYPE rtpart_drift_events_total counter", text)
            self.assertIn("# TYPE rtpart_in_sync gauge", text)
            self.assertIsNotNone(value(s, "node_textfile_mtime_seconds", file=os.path.join(prom, FILE))
                                 or value(s, "node_textfile_mtime_seconds", file=FILE), text)
            # Every rtpart_ sample of the file, as the file says.
            with open(os.path.join(prom, FILE)) as f:
                mine = parse(f.read())
            for k, v in mine.items():
                self.assertEqual(s.get(k), v, k)

            # The drift cleared: the next scrape says so.
            d.write("proc/sys/vm/swappiness", "10\n")
            m.wait_change("drift cleared")
            s = parse(ne.scrape())
            self.assertEqual(value(s, "rtpart_in_sync"), 1)
            self.assertEqual(value(s, "rtpart_drifted_knobs", domain="sysctl"), 0)
            self.assertEqual(value(s, "node_textfile_scrape_error"), 0)

            promtool = shutil.which("promtool") or next(
                (p for p in (os.path.join(CACHE, "usr", "bin", "promtool"),) if os.access(p, os.X_OK)), None)
            if promtool:
                with open(os.path.join(prom, FILE)) as f:
                    p = subprocess.run([promtool, "check", "metrics"], stdin=f, capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                print(f"promtool check metrics: {(p.stdout + p.stderr).strip() or 'clean'}")
            else:
                print("promtool is not in prometheus-node-exporter (nor on PATH): its format check is skipped; "
                      "node_exporter's own parser read the file (node_textfile_scrape_error 0)")
        except Exception:
            log.seek(0)
            sys.stderr.write("---- node_exporter log ----\n" + log.read() + "---- rtpartd log ----\n" + d.logtext())
            raise
        finally:
            if ne:
                ne.stop()
            log.close()
            d.close()


def main():
    if sys.argv[1:] == ["node-exporter"]:
        exe, why = node_exporter()
        if not exe:
            print(f"SKIP: {why}")
            sys.exit(77)
        NodeExporterTest.exe = exe
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(NodeExporterTest)
    else:
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(MetricsFileTest)
    r = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if r.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
