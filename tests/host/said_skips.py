#!/usr/bin/env python3
"""Tests that say when they did not run (suite host). Each case puts one of the project's test
programs where it cannot check what it is for, and expects it to say so, exit 77 with the reason,
or to fail; never to pass having checked nothing:

- test-backend-kthread-host's pinned case in a PID namespace of its own, whose /proc shows no
  ksoftirqd (root);
- test-backend-cpu-host's pm-qos and pm-qos-hold cases with an empty /dev, its idle case with an
  empty cpuidle directory, each in a mount namespace of its own (root);
- test-root under CK_FORK=no (meson's valgrind setup) runs its seccomp cases too;
- test-backend-cpu and test-backend-kthread with RTPART_HOSTS_DIR naming an empty directory fail,
  naming the missing host;
- check-shipped.py on a stripped program exits 77 saying it is stripped.

The cases that need root are skipped without it; the test then exits 77 naming them.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("RTPART_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("RTPART_BUILD_DIR") or os.path.join(SRC, "build")
ROOT = os.geteuid() == 0


def run(cmd, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=e, timeout=300)


def program(rel):
    path = os.path.join(BUILD, rel)
    if not os.access(path, os.X_OK):
        raise unittest.SkipTest(f"{path} not built")
    return path


class Host(unittest.TestCase):
    def expect_skip(self, p, reason):
        self.assertEqual(p.returncode, 77, p.stdout)
        self.assertIn("SKIP: ", p.stdout)
        self.assertIn(reason, p.stdout)

    @unittest.skipUnless(ROOT, "needs root: a PID namespace")
    def test_no_ksoftirqd(self):
        exe = program("tests/host/test-backend-kthread-host")
        if not shutil.which("unshare"):
            self.skipTest("no unshare (util-linux)")
        self.expect_skip(run(["unshare", "--pid", "--fork", "--mount-proc", exe, "pinned"]), "no ksoftirqd")

    @unittest.skipUnless(ROOT, "needs root: a mount namespace")
    def test_no_pm_qos(self):
        exe = program("tests/host/test-backend-cpu-host")
        for case in ("pm-qos", "pm-qos-hold"):
            with self.subTest(case=case):
                p = run(["unshare", "--mount", "sh", "-c", 'mount -t tmpfs none /dev && exec "$0" "$1"', exe, case])
                self.expect_skip(p, "no /dev/cpu_dma_latency")

    @unittest.skipUnless(ROOT, "needs root: a mount namespace")
    def test_no_idle_state(self):
        exe = program("tests/host/test-backend-cpu-host")
        dirs = sorted(glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpuidle"))
        if not dirs:
            self.skipTest("no cpuidle on this machine: the idle case skips here anyway")
        # the case looks at the last online CPU: hide every CPU's states
        script = "".join(f"mount -t tmpfs none {d} && " for d in dirs) + 'exec "$0" "$1"'
        self.expect_skip(run(["unshare", "--mount", "sh", "-c", script, exe, "idle"]), "no idle state but POLL")


class Sysroot(unittest.TestCase):
    def test_seccomp_under_no_fork(self):
        exe = program("tests/sysroot/test-root")
        forked = run([exe])
        self.assertEqual(forked.returncode, 0, forked.stdout)
        p = run([exe], env={"CK_FORK": "no"})
        self.assertIn(p.returncode, (0, 77), p.stdout)
        self.assertIn("root-seccomp", p.stdout)
        self.assertEqual(p.stdout.count("Checks: "), forked.stdout.count("Checks: "), p.stdout)
        self.assertNotIn("are skipped", p.stdout)

    def test_missing_host_fails(self):
        with tempfile.TemporaryDirectory() as empty:
            for name in ("tests/sysroot/test-backend-cpu", "tests/sysroot/test-backend-kthread"):
                with self.subTest(program=name):
                    p = run([program(name)], env={"RTPART_HOSTS_DIR": empty, "CK_RUN_CASE": "fixtures"})
                    self.assertNotIn(p.returncode, (0, 77), p.stdout)
                    self.assertIn(f"fake host {empty}/", p.stdout)

    def test_stripped_programs(self):
        sim = os.path.join(BUILD, "tests", "sim", "librtpart-sim.a")
        ctl = program("daemon/ctl/rtpartctl")
        if not os.path.exists(sim) or not shutil.which("strip") or not shutil.which("nm"):
            self.skipTest("no simulator library, strip or nm")
        with tempfile.TemporaryDirectory() as d:
            stripped = os.path.join(d, "rtpartctl")
            shutil.copy(ctl, stripped)
            subprocess.run(["strip", stripped], check=True)
            p = run([sys.executable, os.path.join(SRC, "tests", "sim", "check-shipped.py"), sim, stripped])
            self.assertEqual(p.returncode, 77, p.stdout)
            self.assertIn("stripped", p.stdout)
            p = run([sys.executable, os.path.join(SRC, "tests", "sim", "check-shipped.py"), sim, ctl])
            self.assertEqual(p.returncode, 0, p.stdout)


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped:
        print("SKIP: " + "; ".join(f"{t.id().split('.')[-1]}: {why}" for t, why in result.skipped))
        sys.exit(77)
    sys.exit(0)
