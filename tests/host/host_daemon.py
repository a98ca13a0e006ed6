#!/usr/bin/env python3
"""rtpartd on this machine's real kernel (suite host, needs root).

rtpartd runs with --no-dbus, a private --state-dir and --varlink-socket, and a safety timer of an
hour, so that whatever it reports within seconds came from a kernel event:

- an IRQ's affinity written behind its back is reported on the varlink Monitor stream and by
  rtpartctl watch, and put back under the "correct" policy;
- a user task started on an isolated CPU (taskset) is reported as task/PID from the proc
  connector's exec event, once, and forgotten when it exits; a burst of such tasks is reported at
  most 16 to an event; under drift.domains.task "correct" it is moved to the housekeeping CPU, and
  a SCHED_FIFO one is left where it is.

Changes only what it records first and restores after, whatever happens: one movable IRQ's
affinity and /proc/irq/default_smp_affinity (the journal's revert puts them back, and tearDown
checks). The task tests isolate the last CPU now, as rtpartd checks only CPUs isolated at present
(no isolcpus= here): with a test-unique cpuset partition rtpart-test-<pid> that revert removes
(on cgroup v1 also the root cpuset's sched_load_balance, recorded and restored). The tasks it reports or moves are its own "rtpart-probe" processes (every other task is
allowed by the profile's drift.task_allow), ended by PID.

rtpartd changes cgroups through libcgroup, which it loads the first time it changes one: its
/proc/PID/maps holds libcgroup once it applied the partition, and not after an IRQ-only profile.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sysroot"))
from daemon import CTL, DAEMON, IFACE, Varlink, call_ok, terminate  # noqa: E402
from host_apply import movable_irq, read, restore, write  # noqa: E402
from host_cpuset import v1_cpuset_mount  # noqa: E402

DEFAULT_AFFINITY = "/proc/irq/default_smp_affinity"
PROBE = "rtpart-probe"


def cpus_allowed(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split()[1]
    return None


def maps_libcgroup(pid):
    """Whether the process has libcgroup mapped."""
    with open(f"/proc/{pid}/maps") as f:
        return any("/libcgroup.so." in line for line in f)


class HostDaemon(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root to change the real kernel's settings")
        if os.cpu_count() < 2:
            raise unittest.SkipTest("needs at least 2 CPUs to have one to isolate")
        if not os.access(DAEMON, os.X_OK):
            raise unittest.SkipTest(f"{DAEMON} not built")

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-host-daemon-")
        self.saved = {DEFAULT_AFFINITY: read(DEFAULT_AFFINITY)}
        self.partition = f"rtpart-test-{os.getpid()}"
        self.v1 = v1_cpuset_mount()
        if self.v1:
            pre = "cpuset." if os.path.exists(os.path.join(self.v1, "cpuset.cpus")) else ""
            balance = os.path.join(self.v1, pre + "sched_load_balance")
            self.saved[balance] = read(balance)
        self.subtree = read("/sys/fs/cgroup/cgroup.subtree_control") if not self.v1 else None
        self.proc = None
        self.children = []
        self.log = open(os.path.join(self.tmp, "rtpartd.log"), "w+")
        self.sock = os.path.join(self.tmp, "rtpartd.sock")
        # A probe whose comm names it: exec'd through a link, the kernel takes the link's name.
        self.probe = os.path.join(self.tmp, PROBE)
        os.symlink(shutil.which("sleep"), self.probe)

    def tearDown(self):
        failed = self._outcome.result and (self._outcome.result.failures or self._outcome.result.errors)
        for p in self.children:  # our own probes, by PID
            if p.poll() is None:
                p.kill()
                p.wait()
        if self.proc and self.proc.poll() is None:
            try:
                call_ok(self.sock, "Revert")
            except (OSError, AssertionError) as e:
                print(f"revert through rtpartd failed: {e}", file=sys.stderr)
            terminate(self.proc)  # our own child, by PID
        for hier in filter(None, [self.v1, "/sys/fs/cgroup"]):
            d = os.path.join(hier, self.partition)
            if os.path.isdir(d):  # a failed revert: the cpuset the test made goes
                try:
                    os.rmdir(d)
                except OSError as e:
                    print(f"could not remove {d}: {e}", file=sys.stderr)
        if self.subtree is not None and "cpuset" not in self.subtree.split() and \
                "cpuset" in read("/sys/fs/cgroup/cgroup.subtree_control").split():
            try:
                write("/sys/fs/cgroup/cgroup.subtree_control", "-cpuset")
            except OSError as e:
                print(f"could not take back +cpuset: {e}", file=sys.stderr)
        restore(self.saved)
        if failed:
            sys.stderr.write("---- rtpartd log ----\n" + self.logtext())
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def start(self, profile, *args):
        """rtpartd on the real root with a private journal and socket, profile applied."""
        path = os.path.join(self.tmp, "host-daemon-test.json")
        with open(path, "w") as f:
            json.dump(profile, f)
        # Its metrics go to a directory of its own, never the host's node_exporter directory.
        os.makedirs(os.path.join(self.tmp, "metrics"), exist_ok=True)
        self.proc = subprocess.Popen([DAEMON, "--no-dbus", "--state-dir", os.path.join(self.tmp, "state"),
                                      "--varlink-socket", self.sock, "--interval", "3600",
                                      "--metrics-dir", os.path.join(self.tmp, "metrics"), *args],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 10
        while not os.path.exists(self.sock):
            self.assertIsNone(self.proc.poll(), self.logtext())
            self.assertLess(time.monotonic(), end, "rtpartd did not listen within 10 s")
            time.sleep(0.02)
        p = call_ok(self.sock, "Apply", {"profile": path})
        self.assertTrue(p["ok"])
        return p

    def status(self):
        return call_ok(self.sock, "Status")

    def monitor(self):
        m = Varlink(self.sock)
        m.send(IFACE + ".Monitor", more=True)
        first = m.recv(timeout=5)
        self.assertEqual(first["parameters"]["event"], "status")
        return m

    def next_event(self, m, timeout=2, kind=None, knob=None):
        """The next event (of that kind, naming that knob) within timeout seconds, else None."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            try:
                ev = m.recv(timeout=left)
            except socket.timeout:
                return None
            self.assertIsNotNone(ev, "rtpartd closed the Monitor stream")
            p = ev["parameters"]
            if kind and p["event"] != kind:
                continue
            if knob and knob not in [d["knob"] for d in p["drift"]]:
                continue
            return p

    def spawn_probe(self, cpu, *prefix):
        p = subprocess.Popen([*prefix, "taskset", "-c", str(cpu), self.probe, "120"])
        self.children.append(p)
        return p

    # ---- IRQs ----

    def irq_profile(self, **drift):
        irq = movable_irq()
        if not irq:
            self.skipTest("no IRQ here accepts a new affinity")
        self.irq_no, name, aff = irq
        self.irq_path = f"/proc/irq/{self.irq_no}/smp_affinity_list"
        self.saved[self.irq_path] = aff
        # Only the IRQ and the default affinity; every user task allowed (no task check).
        return {"summary": "host daemon test: one IRQ", "cpus": {"housekeeping": "0"},
                "irq": {"default_affinity": "0", "rules": [{"match": name, "cpus": "0"}], "exclude": ["*"]},
                "drift": dict(task_allow=["*"], **drift)}

    def test_irq_affinity_changed_behind_its_back_is_reported(self):
        self.start(self.irq_profile())
        self.assertEqual(read(self.irq_path), "0")
        st = self.status()
        self.assertFalse(st["daemon"]["task_check"], "task_allow [\"*\"] must turn the task check off")
        self.assertGreaterEqual(st["daemon"]["watched_files"], 2)
        self.assertFalse(maps_libcgroup(self.proc.pid), "rtpartd changed no cgroup, yet mapped libcgroup")
        knob = f"irq/{self.irq_no}/affinity"

        m = self.monitor()
        w = subprocess.Popen([CTL, "--varlink-socket", self.sock, "--json", "watch"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.children.append(w)
        end = time.monotonic() + 5
        while self.status()["daemon"]["streams"] < 2:
            self.assertLess(time.monotonic(), end, "rtpartctl watch did not subscribe")
            time.sleep(0.02)

        everything = f"0-{os.cpu_count() - 1}"
        t0 = time.monotonic()
        write(self.irq_path, everything)
        ev = self.next_event(m, kind="drift", knob=knob)
        ms = (time.monotonic() - t0) * 1000
        self.assertIsNotNone(ev, "no drift event within 2 s of the external write")
        d = next(x for x in ev["drift"] if x["knob"] == knob)
        self.assertEqual(d, {"knob": knob, "domain": "irq", "expected": "0", "actual": everything})
        self.assertFalse(ev["in_sync"])
        self.assertEqual(read(self.irq_path), everything, "the report policy must not write")
        print(f"IRQ {self.irq_no}: external write → varlink drift event in {ms:.1f} ms")

        line = None
        end = time.monotonic() + 5
        while time.monotonic() < end:
            line = json.loads(w.stdout.readline())
            if line.get("knob") == knob:
                break
        self.assertEqual({k: line[k] for k in ("event", "knob", "domain", "expected", "actual")},
                         {"event": "drift", "knob": knob, "domain": "irq", "expected": "0", "actual": everything})
        w.send_signal(signal.SIGINT)  # our own child, by PID
        self.assertEqual(w.wait(timeout=10), 0, w.stderr.read())
        w.stdout.close()
        w.stderr.close()

        self.assertIn(knob, [x["knob"] for x in call_ok(self.sock, "Verify")["drift"]])
        call_ok(self.sock, "Revert")
        self.assertEqual(read(DEFAULT_AFFINITY), self.saved[DEFAULT_AFFINITY])
        self.assertEqual(read(self.irq_path), self.saved[self.irq_path])
        m.close()

    def test_irq_correct_policy_rewrites(self):
        self.start(self.irq_profile(domains={"irq": "correct"}))
        knob = f"irq/{self.irq_no}/affinity"
        m = self.monitor()
        write(self.irq_path, f"0-{os.cpu_count() - 1}")
        self.assertIsNotNone(self.next_event(m, kind="drift", knob=knob), "no drift event within 2 s")
        ev = self.next_event(m, kind="corrected", knob=knob)
        self.assertIsNotNone(ev, "no corrected event within 2 s")
        self.assertEqual(read(self.irq_path), "0")
        self.assertIn(f"Corrected: {knob} set back to 0", self.logtext())
        m.close()

    # ---- user tasks ----

    def task_profile(self, **drift):
        # The default affinity is the only knob (recorded, restored); every task but the probes
        # is allowed on the isolated CPU, so that nothing else on this machine is reported or moved.
        # The last CPU is isolated now by a test-unique partition (nothing else isolates it here).
        last = max(os.sched_getaffinity(0))
        return {"summary": "host daemon test: tasks", "cpus": {"housekeeping": "0"}, "irq": {"exclude": ["*"]},
                "cpuset": {"confine": [], "partitions": [{"name": self.partition, "cpus": str(last),
                                                          "mode": "isolated"}]},
                "drift": dict(task_allow=["*", "!" + PROBE + "*"], **drift)}

    def start_tasks(self, *args, **drift):
        self.start(self.task_profile(**drift), *args)
        if "Cannot listen to the proc connector" in self.logtext():
            self.skipTest("the proc connector is not available here: " + self.logtext())
        self.assertTrue(self.status()["daemon"]["task_check"])
        self.assertTrue(maps_libcgroup(self.proc.pid), "rtpartd made the partition without libcgroup")

    def test_task_on_isolated_cpu_is_reported_once_and_forgotten(self):
        self.start_tasks()
        m = self.monitor()
        last = os.cpu_count() - 1
        fine = self.spawn_probe(0)            # housekeeping only: nothing to say
        t0 = time.monotonic()
        p = self.spawn_probe(last)
        knob = f"task/{p.pid}"
        ev = self.next_event(m, kind="drift")
        ms = (time.monotonic() - t0) * 1000
        self.assertIsNotNone(ev, "no drift event within 2 s of a task landing on an isolated CPU")
        self.assertEqual([(d["knob"], d["domain"], d["expected"]) for d in ev["drift"]], [(knob, "task", "0")])
        self.assertRegex(ev["drift"][0]["actual"], rf"^{last} \({PROBE} in /.*\)$")
        self.assertNotIn(f"task/{fine.pid}", json.dumps(ev))
        self.assertEqual(ev["drift_count"], 1)
        print(f"task on isolated CPU {last}: exec → varlink drift event in {ms:.1f} ms")
        st = self.status()
        self.assertEqual(st["daemon"]["tasks_on_isolated"], 1)
        self.assertEqual(cpus_allowed(p.pid), str(last), "the report policy must not move it")

        # A full check (SIGHUP) finds it again: not reported twice.
        self.proc.send_signal(signal.SIGHUP)  # our own child, by PID
        self.assertIsNone(self.next_event(m, timeout=1.5, kind="drift"), "the same task was reported again")
        self.assertIn("SIGHUP", self.logtext())

        # It exits: forgotten, from the exit event (the timer is an hour away).
        p.kill()
        p.wait()
        end = time.monotonic() + 2
        while self.status()["daemon"]["tasks_on_isolated"] != 0:
            self.assertLess(time.monotonic(), end, "an exited task is still counted")
            time.sleep(0.02)
        self.assertEqual(self.status()["drift"], 0)
        m.close()

    def test_task_burst_is_capped(self):
        # One debounce window of a second: the burst is one check.
        self.start_tasks("--debounce", "1000")
        m = self.monitor()
        last = os.cpu_count() - 1
        probes = [self.spawn_probe(last) for _ in range(40)]
        pids = {f"task/{p.pid}" for p in probes}
        reported, sizes, count = set(), [], 0
        end = time.monotonic() + 5
        while count < 40 and time.monotonic() < end:
            ev = self.next_event(m, timeout=end - time.monotonic(), kind="drift")
            if not ev:
                break
            sizes.append(len(ev["drift"]))
            reported |= {d["knob"] for d in ev["drift"]}
            count = ev["drift_count"]
        self.assertEqual(count, 40, f"DriftCount should count every probe (events: {sizes})")
        self.assertTrue(sizes and max(sizes) == 16, f"events carried {sizes} entries; at most 16 each")
        self.assertLessEqual(reported, pids)
        self.assertLess(len(reported), 40)
        self.assertRegex(self.logtext(), r"Drift: \d+ more user tasks may run on isolated CPUs")
        self.assertEqual(self.status()["daemon"]["tasks_on_isolated"], 40)
        # Every one of them is listed to a new stream.
        m2 = Varlink(self.sock)
        m2.send(IFACE + ".Monitor", more=True)
        first = m2.recv(timeout=5)["parameters"]
        self.assertEqual({d["knob"] for d in first["drift"]}, pids)
        m2.close()
        m.close()

    def test_task_correct_moves_it_but_not_a_realtime_task(self):
        self.start_tasks(domains={"task": "correct"})
        m = self.monitor()
        last = os.cpu_count() - 1
        p = self.spawn_probe(last)
        knob = f"task/{p.pid}"
        self.assertIsNotNone(self.next_event(m, kind="drift", knob=knob), "no drift event within 2 s")
        self.assertIsNotNone(self.next_event(m, kind="corrected", knob=knob), "no corrected event within 2 s")
        self.assertEqual(cpus_allowed(p.pid), "0")
        self.assertIn(f"Corrected: {knob} ({PROBE}) moved to CPUs 0", self.logtext())
        self.assertEqual(self.status()["daemon"]["tasks_on_isolated"], 0)

        # SCHED_FIFO: reported, left where it is.
        if subprocess.run(["chrt", "-f", "1", "true"], capture_output=True).returncode != 0:
            self.skipTest("cannot run a SCHED_FIFO task here")
        rt = self.spawn_probe(last, "chrt", "-f", "1")
        knob = f"task/{rt.pid}"
        self.assertIsNotNone(self.next_event(m, kind="drift", knob=knob), "no drift event within 2 s")
        self.assertIsNone(self.next_event(m, timeout=1, kind="corrected", knob=knob), "a realtime task was moved")
        self.assertEqual(cpus_allowed(rt.pid), str(last))
        self.assertIn(f"{knob} ({PROBE}) is left on the isolated CPUs: a realtime task", self.logtext())
        m.close()


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    # Everything skipped is a skip (77 for meson), never a pass. A skip in setUpClass runs no test
    # (testsRun 0) and records one skip for the class.
    sys.exit(77 if result.skipped and len(result.skipped) >= result.testsRun else 0)
