#!/usr/bin/env python3
"""Load: many concurrent varlink and D-Bus clients of the sim rtpartd, from several users.

The daemon runs on a copy of the vm fixture host with realtime applied; the clients (their
kinds in tests/sysroot/load_client.py) run in one process per uid, started with setpriv:
root, rtpart-test and uids without an account (rtpartd and dbus-daemon only need the uid of
the socket's peer; no user is created). While they run, the test writes every IRQ's affinity
file of the fake host ten times a second (each burst is a drift event on every Monitor stream,
about 4 KiB each: the slow readers' streams fill up), keeps a root Status probe going on a
connection of its own and on a fresh connection each time, and samples the daemon's memory.

Varlink: RTPART_LOAD_CLIENTS (default 1000) clients: root's 5 % take at most 12 connections at
once (the probes two more: root stays within its reserve of 16), the rest spread over
RTPART_LOAD_USERS (default 20) other uids: two of them hostile only (slow readers, half-open
connections, pipelined floods: more than their 16 connections' worth), the others mostly
well-behaved with a few hostile clients each, below their 16. 20 uids x 16 > 240: the shared cap
is reached too. Asserted:
  - every well-behaved client has every answer: a refusal (TooManyConnections) is what a client
    may get, promptly, and its retry succeeds; no other error, no call left unanswered;
  - root is never refused, while others are, by both the per-user and the shared cap;
  - the probe is answered while the load runs (latencies printed, never asserted);
  - memory: the daemon's peak RSS (VmHWM) stays below BOUND, from varlink.h's caps (not
    asserted for an ASan build, whose RSS is the sanitizer's):
        baseline VmRSS (after a warm-up)
      + input buffers   16 MiB (every uid but 0) + 4 MiB (uid 0) + 256 x 16 KiB (each
                        connection's floor, beside those bounds)
      + queued output   16 MiB + 4 MiB + 2 replies (a Status or Verify here: < 64 KiB each)
      + one message being parsed: at most 4096 values (VARLINK_MESSAGE_VALUES_MAX), about
        1 MiB of JSON tree; 16 MiB allowed (the bloat clients send 1 MiB of "[{},{},…]", which
        took 80 MiB before that cap)
      + 256 connections x 16 KiB (connection, call, event sources, epoll entries)
      + 8 MiB for the allocator's slack
    = baseline + 72.1 MiB;
  - fds: once every client closed, the daemon's fd count is back to its baseline, and Status
    counts no stream.

D-Bus: the same kinds against org.rtpart.Manager1 on a private dbus-daemon, from root and
rtpart-test only (dbus-daemon refuses a uid without an account; the load test creates none): the
other workers are rtpart-test's too. The bus has the project's policy
file, and limits raised so that the bus itself takes the load: max_incomplete_connections 2000,
max_connections_per_user 2000, max_completed_connections 4000, auth_timeout 60 s,
max_message_size 1 MiB; and max_replies_per_connection 4: rtpartd answers the calls in the order
the bus hands them over, so every call waits behind the floods' pending calls, which only the bus
bounds; with the system bus's 128, 77 flooding connections keep ~9800 Verify calls ahead of
everyone's). A D-Bus flood is 2000 calls, not endless: the bus itself answers all but 4 of them
with LimitsExceeded, and an endless one only measures dbus-daemon. The bus's own queues
(max_incoming_bytes, max_outgoing_bytes) keep their defaults: at 1 MiB, the replies to floods
that never read fill the bus's queue from rtpartd, and every D-Bus caller waits. Every well-behaved client has every answer; the probe
(Status over the bus, root) is answered; rtpartd's peak RSS stays below baseline + 32 MiB (it
keeps nothing per bus client; its queues hold what the bus has not read yet); its fd count is
back to baseline.

Unprivileged Plans: six loops of Plan realtime-virtual-host by the test user, root's Describe and
drift detection sampled idle and beside them (RTPART_LOAD_PLAN_HOST, default vm; bench/load.sh:
big, the 1024-CPU host, over RTPART_LOAD_PLAN_SECONDS 60): printed, with the ratios to idle, never
asserted (measured there: Describe median 0.37 ms idle, 1,575 ms beside the loops before rtpartd
held a user's calls to a share of its time, 0.38 ms after; drift detection 9 ms, 1,108 ms, 6.5 ms).

The CI run (suite sysroot) is these 1000 clients x 2 cycles; bench/load.sh (4000 clients) or
RTPART_LOAD_CLIENTS=N RTPART_LOAD_CYCLES=N run larger ones. Figures are printed, one JSON line
per transport ("load: {...}"). Exits 77 when it cannot run here (not root, no setpriv, no
dbus-daemon for the D-Bus half).
"""
import json
import os
import resource
import select
import shutil
import statistics
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from daemon import (BUS_CONF, DAEMON, HOSTS, IFACE, SRC, Daemon, TestUser, Varlink, call_ok, close_daemon,  # noqa: E402
                    proc_status, skip, terminate)

CLIENTS = int(os.environ.get("RTPART_LOAD_CLIENTS", "1000"))
CYCLES = int(os.environ.get("RTPART_LOAD_CYCLES", "2"))
USERS = int(os.environ.get("RTPART_LOAD_USERS", "20"))
DEADLINE = float(os.environ.get("RTPART_LOAD_DEADLINE", "600"))  # a hang detector, not a timing goal
MIB = 1024
VARLINK_BOUND_KIB = (16 + 4) * MIB + 256 * 16 + (16 + 4) * MIB + 2 * 64 + 16 * MIB + 256 * 16 + 8 * MIB
DBUS_BOUND_KIB = 32 * MIB
CLIENT_SOURCE = open(os.path.join(HERE, "load_client.py")).read()
# Uids with no account: the peers the daemon and the bus know by SO_PEERCRED alone.
SPARE_UID = 4190000


def sanitized(pid):
    """Whether the process runs with AddressSanitizer, whose shadow memory and quarantine of freed
    blocks (256 MiB) make its RSS no measure of the program's."""
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


def n_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def python_for_users():
    return next((x for x in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable)
                 if os.access(x, os.X_OK) and not x.startswith("/root/")), None)


def plan(n_clients, n_users, test_uid, spare_uids=True):
    """[(uid, gid, max_conns, {kind: count})]: root first, then two hostile uids, then the others.
    Without spare uids (dbus-daemon wants an account for every uid), every other worker is
    rtpart-test's."""
    uids = [test_uid] + [SPARE_UID + i if spare_uids else test_uid for i in range(1, n_users)]
    n_root = max(8, n_clients * 5 // 100)
    root = {"good": n_root - 6, "pipeliner": 1, "halfclose": 1, "slow": 2, "flood": 1, "abort": 1}
    out = [(0, 0, 12, root)]
    rest = n_clients - n_root
    per_user = rest // n_users
    extra = rest - per_user * n_users
    for i, uid in enumerate(uids):
        n = per_user + (1 if i < extra else 0)
        gid = os.getgid() if uid == 0 else (TestUser.gid if uid == test_uid else uid)
        if i == 0:  # slow readers, floods and half-open connections only: 16 get in, the rest are refused
            kinds = {"slow": n // 3, "flood": n // 3, "partial": n - 2 * (n // 3)}
        elif i == 1:
            kinds = {"bloat": 4, "flood": n // 2, "eofpartial": n // 4}
            kinds["abort"] = max(0, n - sum(kinds.values()))
        else:  # below 16 hostile connections held: this user's well-behaved clients get in too
            kinds = {"slow": 2, "flood": 2, "partial": 1, "abort": 1, "eofpartial": 1, "halfclose": 2, "pipeliner": 2}
            kinds["good"] = max(0, n - sum(kinds.values()))
        out.append((uid, gid, 0, kinds))
    return out


class Load:
    """One load run: the workers, the probe, the drift generator, the samples."""

    def __init__(self, test, transport, address, daemon_pid, fake_root, probe):
        self.t = test
        self.transport = transport
        self.address = address
        self.pid = daemon_pid
        self.fake_root = fake_root
        self.probe = probe  # () -> one Status answered by the daemon (raises otherwise)
        self.workers = []
        self.latencies = []
        self.rss_max = 0

    def start(self, test_uid):
        py = python_for_users()
        if not py:
            self.t.skipTest("no python3 the other uids may run")
        for k, (uid, gid, max_conns, kinds) in enumerate(plan(CLIENTS, USERS, test_uid, self.transport == "varlink")):
            config = {"transport": self.transport, "address": self.address, "uid": uid, "seed": k, "cycles": CYCLES,
                      "max_conns": max_conns, "actors": kinds}
            cmd = [py, "-c", CLIENT_SOURCE, json.dumps(config)]
            if uid != 0:
                cmd = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"] + cmd
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 cwd="/")
            self.workers.append({"proc": p, "uid": uid, "kinds": kinds, "done": False})
        for w in self.workers:
            self.expect(w, "ready")

    def expect(self, w, key, timeout=60):
        r, _, _ = select.select([w["proc"].stdout], [], [], timeout)
        line = w["proc"].stdout.readline() if r else ""
        if not line:
            raise AssertionError(f"worker of uid {w['uid']}: no '{key}' line; stderr:\n"
                                 f"{w['proc'].stderr.read() if w['proc'].poll() is not None else '(running)'}")
        doc = json.loads(line)
        self.t.assertIn(key, doc)
        return doc

    def burst(self, n):
        """Every IRQ's affinity file, to a value realtime does not want: one drift event."""
        irqdir = os.path.join(self.fake_root, "proc", "irq")
        for d in os.listdir(irqdir):
            f = os.path.join(irqdir, d, "smp_affinity_list")
            if os.path.isfile(f):
                with open(f, "w") as fh:
                    fh.write("1-3\n" if n % 2 else "2-3\n")

    def sample(self):
        self.rss_max = max(self.rss_max, proc_status(self.pid, "VmRSS") or 0)

    def run(self):
        for w in self.workers:
            w["proc"].stdin.write("go\n")
            w["proc"].stdin.flush()
        start = time.monotonic()
        n = 0
        pending = {w["proc"].stdout.fileno(): w for w in self.workers}
        last_burst = 0
        while pending:
            if time.monotonic() > start + DEADLINE:
                raise AssertionError(f"well-behaved clients of uids {sorted(w['uid'] for w in pending.values())} "
                                     f"not done after {DEADLINE} s")
            r, _, _ = select.select(list(pending), [], [], 0.02)
            for fd in r:
                w = pending.pop(fd)
                self.expect(w, "behaved_done", timeout=0)
            if time.monotonic() - last_burst >= 0.1:
                self.burst(n)
                n += 1
                last_burst = time.monotonic()
            t0 = time.monotonic()
            self.probe()
            self.latencies.append(time.monotonic() - t0)
            self.sample()
        self.elapsed = time.monotonic() - start
        self.bursts = n
        self.sample()
        self.hwm = proc_status(self.pid, "VmHWM")

    def stop(self):
        reports = []
        for w in self.workers:
            w["proc"].stdin.write("stop\n")
            w["proc"].stdin.flush()
        for w in self.workers:
            doc = self.expect(w, "actors", timeout=60)
            reports.append(doc)
            self.t.assertEqual(w["proc"].wait(timeout=30), 0, w["proc"].stderr.read())
        return reports

    def kill(self):
        for w in self.workers:  # our own children, by PID
            p = w["proc"]
            if p.poll() is None:
                p.kill()
                p.wait()
            for f in (p.stdin, p.stdout, p.stderr):
                f.close()

    def check(self, reports, base_fds):
        totals = {"clients": 0, "behaved": 0, "answered": 0, "answers": 0, "refused": 0, "refused_root": 0,
                  "refused_uid": 0, "refused_all": 0, "connect_retries": 0, "flood_bytes": 0}
        failures = []
        for doc in reports:
            for a in doc["actors"]:
                totals["clients"] += 1
                totals["refused"] += a["refused"]
                totals["refused_uid"] += a["refused_uid"]
                totals["refused_all"] += a["refused_all"]
                totals["connect_retries"] += a["connect_retries"]
                totals["flood_bytes"] += a["sent"]
                if doc["uid"] == 0:
                    totals["refused_root"] += a["refused"]
                if a["behaved"]:
                    totals["behaved"] += 1
                    totals["answers"] += a["answers"]
                    if not a["failures"] and a["answers"] == a["expected"]:
                        totals["answered"] += 1
                    else:
                        failures.append((doc["uid"], a))
        self.t.assertEqual(totals["clients"], sum(sum(w["kinds"].values()) for w in self.workers))
        # Everything closed: the daemon's fds are back to what it had before.
        end = time.monotonic() + 60
        while n_fds(self.pid) != base_fds and time.monotonic() < end:
            time.sleep(0.05)
        totals["fds_base"] = base_fds
        totals["fds_after"] = n_fds(self.pid)
        lat = sorted(self.latencies)
        totals.update({
            "elapsed_s": round(self.elapsed, 1),
            "drift_bursts": self.bursts,
            "probe_calls": len(lat),
            "probe_median_ms": round(statistics.median(lat) * 1000, 2) if lat else None,
            "probe_p99_ms": round(lat[int(len(lat) * 0.99)] * 1000, 2) if lat else None,
            "probe_max_ms": round(lat[-1] * 1000, 2) if lat else None,
            "rss_max_kib": self.rss_max,
            "hwm_kib": self.hwm,
        })
        print("load: " + json.dumps(totals), flush=True)
        kinds = {}
        for uid, a in failures:
            key = f"{a['kind']}: {a['failures'][0] if a['failures'] else 'answers missing'}"
            kinds[key] = kinds.get(key, 0) + 1
        if kinds:
            print("load: failures by kind: " + json.dumps(kinds), flush=True)
        self.t.assertEqual([(uid, a["kind"], a["answers"], a["expected"], a["failures"][:2]) for uid, a in failures], [],
                           "well-behaved clients without all their answers")
        self.t.assertEqual(totals["answered"], totals["behaved"])
        return totals


def raise_nofile(n=65536):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(max(soft, n), hard) if hard != resource.RLIM_INFINITY else max(soft, n)
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


class VarlinkLoad(unittest.TestCase):
    def setUp(self):
        raise_nofile()
        self.test_uid = TestUser.get(self)[0]
        self.d = Daemon(host="vm")
        self.d.start()
        self.load = None

    def tearDown(self):
        if self.load:
            self.load.kill()
        close_daemon(self, self.d, tail=5000)

    def call(self, c, method, **kw):
        r = c.call(IFACE + "." + method, **kw)
        self.assertTrue(r and "parameters" in r, r)
        return r["parameters"]

    def test_varlink_load(self):
        c = self.d.client()
        c.sock.settimeout(120)
        self.assertTrue(self.call(c, "Apply", parameters={"profile": "realtime"})["ok"])
        # Warm-up: each call once, a stream, a burst of drift.
        self.call(c, "Verify")
        w = Varlink(self.d.sock)
        w.send(IFACE + ".Monitor", more=True)
        self.assertEqual(w.recv(timeout=10)["parameters"]["event"], "status")
        w.close()
        self.call(c, "Status")
        pid = self.d.proc.pid
        time.sleep(0.2)
        base_fds, base_rss = n_fds(pid), proc_status(pid, "VmRSS")
        bound = base_rss + VARLINK_BOUND_KIB
        # A root Watch that reads: drift events reach streams under load.
        watcher = Varlink(self.d.sock, timeout=120)
        watcher.send(IFACE + ".Watch", more=True)
        watcher.recv()

        def probe():
            self.call(c, "Status")  # on the probe's own connection
            f = Varlink(self.d.sock, timeout=120)  # and on a new one: accept() is served too
            try:
                r = f.call(IFACE + ".Status")
                self.assertTrue(r and "parameters" in r, f"root refused or not answered: {r}")
            finally:
                f.close()

        self.load = Load(self, "varlink", self.d.sock, pid, self.d.root, probe)
        self.load.start(self.test_uid)
        self.load.run()
        reports = self.load.stop()
        events = 0
        watcher.sock.settimeout(0.5)
        try:
            while watcher.recv() is not None:
                events += 1
        except OSError:
            pass
        watcher.close()
        totals = self.load.check(reports, base_fds)  # the probe's connection is in the baseline
        totals.update({"transport": "varlink", "rss_base_kib": base_rss, "bound_kib": bound, "watch_events": events})
        print("load (varlink): " + json.dumps(totals), flush=True)
        self.assertEqual(totals["refused_root"], 0, "root was refused: its reserve did not hold")
        self.assertGreater(totals["refused_uid"], 0, "the per-user cap was never reached")
        self.assertGreater(totals["refused_all"], 0, "the shared cap was never reached")
        self.assertGreater(events, 0, "no drift event reached a reading stream")
        if not sanitized(pid):
            self.assertLess(totals["hwm_kib"], bound, f"rtpartd's peak RSS passed the bound ({totals})")
        self.assertEqual(totals["fds_after"], base_fds, "fds left open after every client closed")
        self.assertEqual(self.call(Varlink(self.d.sock), "Status")["daemon"]["streams"], 0)
        self.assertIsNone(self.d.proc.poll())
        c.close()


# ---- one user's loops of Plan, and root beside them ----

# The host the Plans are made for: a fixture host, or "big" (mkhost.py big: 1024 CPUs, 8192 IRQs,
# made for the run, a minute and ~1 GB), as bench/load.sh asks for.
PLAN_HOST = os.environ.get("RTPART_LOAD_PLAN_HOST", "vm")
PLAN_LOOPS = 6
# How long root's calls are sampled, idle and then while the user floods (a sample every 0.1 s):
# long enough to span many of the user's Plans on a large host (bench/load.sh: 60 s).
PLAN_SECONDS = float(os.environ.get("RTPART_LOAD_PLAN_SECONDS", "3"))
PLANNER = r"""
import json, socket, sys
sock, profile, n = sys.argv[1], sys.argv[2], 0
while True:
    s = socket.socket(socket.AF_UNIX)  # a connection per call, as rtpartctl makes them
    s.connect(sock)
    s.sendall(json.dumps({"method": "org.rtpart.Manager.Plan", "parameters": {"profile": profile}}).encode() + b"\0")
    buf = b""
    while not buf.endswith(b"\0"):
        d = s.recv(1 << 20)
        if not d:
            sys.exit("connection closed")
        buf += d
    s.close()
    r = json.loads(buf[:-1])
    if "error" in r:
        sys.exit(json.dumps(r))
    n += 1
    print(n, flush=True)
"""


def quantiles(samples):
    s = sorted(samples)
    return {"median_ms": round(statistics.median(s) * 1000, 2), "p90_ms": round(s[int(len(s) * 0.9)] * 1000, 2),
            "max_ms": round(s[-1] * 1000, 2)}


class UnprivilegedPlans(unittest.TestCase):
    """Six loops of Plan realtime-virtual-host by one non-root user (issue 22, item 11): root's
    Describe (a connection per call) and drift detection (a write to a knob file until root's Watch
    stream reports it) measured idle and while the user floods. Printed ("load (unprivileged
    Plans)"), with the ratios bench/load.sh's goal is about (within 2x of idle on the 1024-CPU
    host); asserted is only that everything is answered and that the user is served too."""

    def setUp(self):
        self.test_uid, self.test_gid = TestUser.get(self)
        make = None
        if PLAN_HOST == "big":
            def make(root):
                subprocess.run([sys.executable, os.path.join(SRC, "tests", "fixtures", "mkhost.py"), "big", root, "-q"],
                               check=True)
        self.d = Daemon(host=PLAN_HOST, make_host=make)
        self.d.start()
        self.planners = []

    def tearDown(self):
        for p in self.planners:  # our own children, by PID
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdout.close()
        close_daemon(self, self.d, tail=5000)

    def measure(self, watcher, base):
        describe, drift = [], []
        end = time.monotonic() + PLAN_SECONDS
        for i in range(1000000):
            if i >= 5 and time.monotonic() >= end:
                break
            time.sleep(0.1)
            t0 = time.monotonic()
            self.assertIn("in_sync", call_ok(self.d.sock, "Describe"))
            describe.append(time.monotonic() - t0)
            value = str(base + i)
            t0 = time.monotonic()
            self.d.write("proc/sys/vm/swappiness", value + "\n")
            while True:
                ev = watcher.recv()
                self.assertIsNotNone(ev, "the Watch stream ended")
                if any(x["knob"] == "sysctl/vm.swappiness" and x["actual"] == value
                       for x in ev["parameters"].get("drift", [])):
                    break
            drift.append(time.monotonic() - t0)
        return describe, drift

    def test_root_beside_a_users_plans(self):
        py = python_for_users()
        if not py:
            self.skipTest("no python3 the other uids may run")
        call_ok(self.d.sock, "Apply", {"profile": "realtime-virtual-host"}, timeout=600)
        watcher = Varlink(self.d.sock, timeout=600)
        watcher.send(IFACE + ".Watch", more=True)
        watcher.recv()
        self.measure(watcher, 20)  # a warm-up, at the sampling's pace
        idle = self.measure(watcher, 20)
        for _ in range(PLAN_LOOPS):
            self.planners.append(subprocess.Popen(
                ["setpriv", f"--reuid={self.test_uid}", f"--regid={self.test_gid}", "--clear-groups", py, "-c",
                 PLANNER, self.d.sock, "realtime-virtual-host"], stdout=subprocess.PIPE, text=True, cwd="/"))
        # A Plan of the user's answered: the flood is on.
        r, _, _ = select.select([p.stdout for p in self.planners], [], [], 600)
        self.assertTrue(r, "no Plan of the user's was answered")
        flood = self.measure(watcher, 10000)
        plans = 0
        for p in self.planners:
            p.kill()
            p.wait()
            plans += max([0] + [int(n) for n in p.stdout.read().split()])  # each line is its count so far
        watcher.close()
        figures = {"host": PLAN_HOST, "loops": PLAN_LOOPS, "seconds": PLAN_SECONDS, "samples": len(idle[0]),
                   "flood_samples": len(flood[0]), "user_plans": plans}
        for name, k in (("describe", 0), ("drift", 1)):
            figures[name + "_idle"] = quantiles(idle[k])
            figures[name + "_flood"] = quantiles(flood[k])
            figures[name + "_ratio_median"] = round(statistics.median(flood[k]) / statistics.median(idle[k]), 2)
        print("load (unprivileged Plans): " + json.dumps(figures), flush=True)
        self.assertGreater(plans, 0)
        self.assertIsNone(self.d.proc.poll())


LOAD_BUS_LIMITS = """
  <limit name="max_incomplete_connections">2000</limit>
  <limit name="max_connections_per_user">2000</limit>
  <limit name="max_completed_connections">4000</limit>
  <limit name="max_replies_per_connection">4</limit>
  <limit name="auth_timeout">60000</limit>
  <limit name="max_message_size">1048576</limit>
</busconfig>
"""


@unittest.skipUnless(shutil.which("dbus-daemon"), "dbus-daemon missing")
class DBusLoad(unittest.TestCase):
    def setUp(self):
        raise_nofile()
        self.test_uid = TestUser.get(self)[0]
        self.d = Daemon(host="vm")
        self.load = None
        self.bus = self.proc = None
        policydir = os.path.join(self.d.tmp, "system.d")
        os.makedirs(policydir)
        shutil.copy(os.path.join(SRC, "systemd", "org.rtpart.Manager1.conf"), policydir)
        self.busock = os.path.join(self.d.tmp, "bus")
        conf = os.path.join(self.d.tmp, "bus.conf")
        with open(conf, "w") as f:
            f.write(BUS_CONF.format(sock=self.busock, policydir=policydir).replace("</busconfig>", LOAD_BUS_LIMITS))
        self.bus = subprocess.Popen(["dbus-daemon", "--nofork", "--config-file=" + conf],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 10
        while not os.path.exists(self.busock) and time.monotonic() < end:
            time.sleep(0.02)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=" + self.busock)
        self.proc = subprocess.Popen([DAEMON, "--root", self.d.root, "--varlink-socket", self.d.sock],
                                     stdout=self.d.log, stderr=subprocess.STDOUT, env=env)

    def tearDown(self):
        if self.load:
            self.load.kill()
        for p in (self.proc, self.bus):  # our own children, by PID
            if p:
                terminate(p)
        close_daemon(self, self.d, tail=5000)

    def test_dbus_load(self):
        import asyncio

        sys.path.insert(0, HERE)
        import load_client as lc

        loop = asyncio.new_event_loop()
        self.addCleanup(loop.close)

        async def connect():
            c = await lc.DBus.connect(self.busock)
            await c.auth(0)
            return c

        async def wait_name(conn):
            end = time.monotonic() + 30
            while time.monotonic() < end:
                self.assertIsNone(self.proc.poll(), self.d.logtext())
                try:
                    await conn.call(lc.NAME, lc.PATH, "org.freedesktop.DBus.Peer", "Ping")
                    return
                except AssertionError:
                    await asyncio.sleep(0.05)
            self.fail("rtpartd did not take its name on the bus")

        c = loop.run_until_complete(connect())
        loop.run_until_complete(wait_name(c))

        def status():
            doc = lc.json_body(loop.run_until_complete(asyncio.wait_for(c.call(lc.NAME, lc.PATH, lc.NAME, "Status"),
                                                                        120)))
            self.assertIn("daemon", doc)

        apply = lc.json_body(loop.run_until_complete(
            c.call(lc.NAME, lc.PATH, lc.NAME, "Apply", "s", lc.dbus_body_strings("realtime"))))
        self.assertTrue(apply["ok"])
        loop.run_until_complete(c.call(lc.NAME, lc.PATH, lc.NAME, "Verify"))
        status()
        pid = self.proc.pid
        time.sleep(0.2)
        base_fds, base_rss = n_fds(pid), proc_status(pid, "VmRSS")
        bound = base_rss + DBUS_BOUND_KIB
        self.load = Load(self, "dbus", self.busock, pid, self.d.root, status)
        self.load.start(self.test_uid)
        self.load.run()
        reports = self.load.stop()
        c.close()
        totals = self.load.check(reports, base_fds)
        totals.update({"transport": "dbus", "rss_base_kib": base_rss, "bound_kib": bound})
        print("load (D-Bus): " + json.dumps(totals), flush=True)
        if not sanitized(pid):
            self.assertLess(totals["hwm_kib"], bound, f"rtpartd's peak RSS passed the bound ({totals})")
        self.assertEqual(totals["fds_after"], base_fds, "fds left open after every client closed")
        self.assertIsNone(self.proc.poll())


if __name__ == "__main__":
    if not os.access(DAEMON, os.X_OK):
        skip(f"{DAEMON} not built")
    if not os.path.isdir(os.path.join(HOSTS, "vm")):
        skip(f"fixture host {HOSTS}/vm missing (the build makes it)")
    if os.geteuid() != 0:
        skip("the clients run as several uids (setpriv) and Apply needs root; run as root")
    if not shutil.which("setpriv"):
        skip("setpriv missing (util-linux)")
    unittest.main(verbosity=2)
