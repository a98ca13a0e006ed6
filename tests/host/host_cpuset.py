#!/usr/bin/env python3
"""cgroup v1 cpusets on this machine's real kernel (suite host, needs root).

rtpartctl applies a profile whose only partition is a test-unique cpuset
(rtpart-test-<pid>, CPUs: the last one, isolated) under the real v1 cpuset hierarchy: mkdir(2),
writes of its files and of its tasks file, rmdir(2). The test starts a `sleep`, moves it (and nothing else) into the partition, checks that
its affinity is the partition's CPUs, reverts, and checks that every cpuset the test created is
gone, the sleep is back in the root cpuset with the root's CPUs, and the root's
sched_load_balance is as before. It ends only its own sleep, by PID. "confine" is empty: the
"every movable task" knob would move other processes, which a test never does on a real host
(that knob is tested on fake trees). The journal goes to a temporary --state-dir.

A second test stands in for libvirt's "machine" cpuset, which holds every CPU on a libvirt host:
it creates a test-unique sibling cpuset with every CPU of the root and one below it, applies the
same profile (the partition exclusive: cgroup v1 lets no sibling share its CPUs), checks that both
were shrunk off the partition's CPU, reverts, checks that both have every CPU again, and removes
the two cpusets it made. It skips when a cpuset it did not make already holds the partition's CPU
(the test changes only what it created and rtpart's own).

A third test checks the way those cgroup operations take: through libcgroup, loaded by apply and
revert (glibc's loader says so under LD_DEBUG=files: no tracer), not by verify, which changes no
cgroup, and the partition made by its mkdir (mode 0775 under umask 0, where rtpart's own mkdir
asks 0755); with RTPART_LIBCGROUP=0 the same apply and revert write the files directly and do not
load it; and with libcgroup unloadable (a private mount namespace binds /dev/null over its file)
apply fails, names libcgroup and what to do, and leaves nothing behind.

Skips (77) when not root, without a v1 cpuset hierarchy, or with a single CPU.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

CTL = os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "daemon", "ctl", "rtpartctl")


def v1_cpuset_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            if fields[dash + 1] == "cgroup" and "cpuset" in fields[dash + 3].split(","):
                return fields[4]
    return None


def read(path):
    with open(path) as f:
        return f.read().strip()


def cpu_list(s):
    out = set()
    for part in s.split(","):
        if part:
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    return out


@unittest.skipUnless(os.geteuid() == 0, "needs root to create cpusets")
class V1Base(unittest.TestCase):
    """A test-unique partition (the last CPU, isolated) under the real v1 cpuset hierarchy."""

    @classmethod
    def setUpClass(cls):
        cls.mnt = v1_cpuset_mount()
        if not cls.mnt:
            raise unittest.SkipTest("no cgroup v1 cpuset hierarchy on this machine")
        cls.prefix = "cpuset." if os.path.exists(os.path.join(cls.mnt, "cpuset.cpus")) else ""
        cls.root_cpus = cpu_list(read(os.path.join(cls.mnt, cls.prefix + "cpus")))
        if len(cls.root_cpus) < 2:
            raise unittest.SkipTest("needs at least 2 CPUs in the root cpuset to isolate one")

    def setUp(self):
        self.name = f"rtpart-test-{os.getpid()}"
        self.dir = os.path.join(self.mnt, self.name)
        self.cpu = max(self.root_cpus)
        self.balance_path = os.path.join(self.mnt, self.prefix + "sched_load_balance")
        self.balance = read(self.balance_path)
        self.tmp = tempfile.mkdtemp(prefix="rtpart-host-cpuset-")
        self.state = os.path.join(self.tmp, "state")
        self.profile = os.path.join(self.tmp, "host-cpuset.json")
        hk = ",".join(str(c) for c in sorted(self.root_cpus - {self.cpu}))
        with open(self.profile, "w") as f:
            json.dump({
                "summary": "host test: one test-unique isolated cpuset, nothing else",
                "cpus": {"housekeeping": hk},
                "cpuset": {"confine": [], "partitions": [{"name": self.name, "cpus": str(self.cpu), "mode": "isolated"}]},
            }, f)
        self.sleep = None

    def tearDown(self):
        if self.sleep:
            if self.sleep.poll() is None:
                os.kill(self.sleep.pid, signal.SIGKILL)
            self.sleep.wait()
        if os.path.isdir(self.dir):
            # a failed test: move what is left to the root, remove the cpuset
            try:
                for t in read(os.path.join(self.dir, "tasks")).split():
                    with open(os.path.join(self.mnt, "tasks"), "w") as f:
                        f.write(t)
                os.rmdir(self.dir)
            except OSError as e:
                print(f"could not remove {self.dir}: {e}", file=sys.stderr)
        if read(self.balance_path) != self.balance:
            with open(self.balance_path, "w") as f:
                f.write(self.balance)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_ctl(self, *args, env=None, prefix=(), umask=None):
        return subprocess.run([*prefix, CTL, "--no-daemon", "--state-dir", self.state, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=None if env is None else {**os.environ, **env},
                              umask=-1 if umask is None else umask)


class RealCpusetV1(V1Base):

    def test_isolated_cpuset(self):
        p = self.run_ctl("apply", self.profile)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertTrue(os.path.isdir(self.dir))
        self.assertEqual(read(os.path.join(self.dir, self.prefix + "cpus")), str(self.cpu))
        self.assertEqual(read(os.path.join(self.dir, self.prefix + "cpu_exclusive")), "1")
        self.assertEqual(read(os.path.join(self.dir, self.prefix + "sched_load_balance")), "0")
        self.assertEqual(read(self.balance_path), "0")

        p = self.run_ctl("verify")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

        # Only a process this test started goes into the partition.
        self.sleep = subprocess.Popen(["sleep", "600"])
        with open(os.path.join(self.dir, "tasks"), "w") as f:
            f.write(str(self.sleep.pid))
        self.assertEqual(os.sched_getaffinity(self.sleep.pid), {self.cpu})
        with open(f"/proc/{self.sleep.pid}/status") as f:
            allowed = [l.split()[1] for l in f if l.startswith("Cpus_allowed_list:")][0]
        self.assertEqual(cpu_list(allowed), {self.cpu})
        self.assertEqual(read(f"/proc/{self.sleep.pid}/cpuset"), "/" + self.name)

        p = self.run_ctl("revert")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse(os.path.exists(self.dir), "revert left the cpuset behind")
        self.assertEqual([d for d in os.listdir(self.mnt) if d.startswith(self.name)], [])
        self.assertEqual(read(f"/proc/{self.sleep.pid}/cpuset"), "/")
        self.assertEqual(os.sched_getaffinity(self.sleep.pid), self.root_cpus)
        self.assertEqual(read(self.balance_path), self.balance)
        self.assertEqual(self.sleep.poll(), None, "the sleep died")


class RealCpusetV1Sibling(V1Base):
    """A sibling holding the partition's CPU is shrunk off it and given it back by revert."""

    def setUp(self):
        cpu = max(self.root_cpus)
        for name in os.listdir(self.mnt):
            path = os.path.join(self.mnt, name)
            if os.path.isdir(path) and cpu in cpu_list(read(os.path.join(path, self.prefix + "cpus"))):
                self.skipTest(f"cpuset {path} (not made by this test) holds CPU {cpu}")
        super().setUp()
        self.sib = os.path.join(self.mnt, f"rtpart-test-machine-{os.getpid()}")
        self.sib_child = os.path.join(self.sib, "vm")
        self.made = []
        mems = read(os.path.join(self.mnt, self.prefix + "mems"))
        cpus = read(os.path.join(self.mnt, self.prefix + "cpus"))
        for d in (self.sib, self.sib_child):
            os.mkdir(d)
            self.made.append(d)
            for f, v in (("cpus", cpus), ("mems", mems)):
                with open(os.path.join(d, self.prefix + f), "w") as fh:
                    fh.write(v)

    def tearDown(self):
        for d in reversed(self.made):
            try:
                os.rmdir(d)
            except OSError as e:
                print(f"could not remove {d}: {e}", file=sys.stderr)
        super().tearDown()

    def test_sibling_shrunk(self):
        all_cpus = cpu_list(read(os.path.join(self.sib, self.prefix + "cpus")))
        p = self.run_ctl("plan", self.profile)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(f"the cpuset {os.path.basename(self.sib)} holds CPUs of the exclusive partitions", p.stdout)
        p = self.run_ctl("apply", self.profile)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for d in (self.sib, self.sib_child):
            self.assertEqual(cpu_list(read(os.path.join(d, self.prefix + "cpus"))), all_cpus - {self.cpu}, d)
        self.assertEqual(read(os.path.join(self.dir, self.prefix + "cpu_exclusive")), "1")
        p = self.run_ctl("verify")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = self.run_ctl("revert")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse(os.path.exists(self.dir), "revert left the cpuset behind")
        for d in (self.sib, self.sib_child):
            self.assertEqual(cpu_list(read(os.path.join(d, self.prefix + "cpus"))), all_cpus, d)
        self.assertEqual(read(self.balance_path), self.balance)


def loads_libcgroup(p):
    """Whether glibc's loader (LD_DEBUG=files) reported libcgroup dlopen'ed by the run."""
    return any("file=libcgroup.so." in line and "dynamically loaded by" in line for line in p.stderr.splitlines())


class RealCpusetV1Libcgroup(V1Base):
    """The cgroup operations go through libcgroup, loaded when a cgroup changes."""

    def check_applied(self, mode):
        self.assertEqual(read(os.path.join(self.dir, self.prefix + "cpus")), str(self.cpu))
        self.assertEqual(read(os.path.join(self.dir, self.prefix + "cpu_exclusive")), "1")
        self.assertEqual(oct(os.stat(self.dir).st_mode & 0o777), oct(mode), "the mode of whose mkdir")

    def test_through_libcgroup(self):
        ld = {"LD_DEBUG": "files"}
        p = self.run_ctl("apply", self.profile, env=ld, umask=0)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-3000:])
        self.assertTrue(loads_libcgroup(p), "apply made the cpuset without loading libcgroup")
        self.check_applied(0o775)
        p = self.run_ctl("verify", env=ld)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-3000:])
        self.assertFalse(loads_libcgroup(p), "verify changes no cgroup, yet loaded libcgroup")
        p = self.run_ctl("revert", env=ld)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-3000:])
        self.assertTrue(loads_libcgroup(p), "revert removed the cpuset without loading libcgroup")
        self.assertFalse(os.path.exists(self.dir), "revert left the cpuset behind")

    def test_direct_when_asked(self):
        env = {"LD_DEBUG": "files", "RTPART_LIBCGROUP": "0"}
        p = self.run_ctl("apply", self.profile, env=env, umask=0)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-3000:])
        self.assertFalse(loads_libcgroup(p), "RTPART_LIBCGROUP=0, yet apply loaded libcgroup")
        self.check_applied(0o755)
        p = self.run_ctl("revert", env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr[-3000:])
        self.assertFalse(loads_libcgroup(p))
        self.assertFalse(os.path.exists(self.dir), "revert left the cpuset behind")

    def test_libcgroup_missing(self):
        probe = subprocess.run(["ldconfig", "-p"], stdout=subprocess.PIPE, text=True).stdout
        libs = [line.split("=>")[-1].strip() for line in probe.splitlines() if "libcgroup.so.2 " in line]
        if not libs or not shutil.which("unshare"):
            self.skipTest("libcgroup.so.2 is not in ldconfig's cache, or no unshare(1)")
        real = os.path.realpath(libs[0])
        # Only this run's private mount namespace sees the library's file empty.
        p = self.run_ctl("apply", self.profile, prefix=("unshare", "-m", "sh", "-c",
                                                        f'mount --bind /dev/null "{real}" && exec "$0" "$@"'))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("changed through libcgroup", p.stderr)
        self.assertIn("install libcgroup", p.stderr)
        self.assertIn("RTPART_LIBCGROUP=0", p.stderr)
        self.assertFalse(os.path.exists(self.dir), "a failed apply left the cpuset behind")
        self.assertEqual(read(self.balance_path), self.balance)


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    # Everything skipped is a skip (77 for meson), never a pass.
    sys.exit(77 if result.skipped and len(result.skipped) >= result.testsRun else 0)
