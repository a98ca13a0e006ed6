#!/usr/bin/env python3
"""apply / verify / revert on this machine's real kernel (suite host, needs root).

Touches only what it records first and restores after, whatever happens: one movable IRQ's
affinity, /proc/irq/default_smp_affinity, two sysctls and the workqueue cpumask. The journal
goes to a temporary --state-dir, never to /var/lib/rtpart.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

CTL = os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "daemon", "ctl", "rtpartctl")

FILES = [
    "/proc/irq/default_smp_affinity",
    "/proc/sys/kernel/timer_migration",
    "/proc/sys/vm/stat_interval",
    "/sys/devices/virtual/workqueue/cpumask",
]


def read(path):
    with open(path) as f:
        return f.read().strip()


def write(path, value):
    with open(path, "w") as f:
        f.write(value + "\n")


def restore(saved):
    """Writes back every recorded value that differs now; reports what it could not."""
    for path, value in saved.items():
        try:
            if read(path) != value:
                write(path, value)
        except OSError as e:
            print(f"could not restore {path}: {e}", file=sys.stderr)


def movable_irq():
    """An IRQ with a single action name whose affinity the kernel lets us set."""
    with open("/proc/interrupts") as f:
        lines = f.read().splitlines()
    ncpu = len(lines[0].split())
    for line in lines[1:]:
        head, _, rest = line.partition(":")
        if not head.strip().isdigit():
            continue
        irq = int(head)
        fields = rest.split()
        name = fields[ncpu + 2:] if len(fields) > ncpu + 2 else []
        if len(name) != 1 or "," in name[0]:
            continue
        path = f"/proc/irq/{irq}/smp_affinity_list"
        try:
            cur = read(path)
            write(path, cur)  # the kernel says whether it may be moved
        except OSError:
            continue
        return irq, name[0], cur
    return None


@unittest.skipUnless(os.geteuid() == 0, "needs root to change the real kernel's settings")
class RealHost(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.cpu_count() < 2:
            raise unittest.SkipTest("needs at least 2 CPUs to have something to isolate")
        for f in FILES:
            if not os.path.exists(f):
                raise unittest.SkipTest(f"{f} does not exist on this kernel")
        cls.irq = movable_irq()
        if not cls.irq:
            raise unittest.SkipTest("no IRQ here accepts a new affinity")

    def setUp(self):
        self.saved = {f: read(f) for f in FILES}
        self.irq_no, self.irq_name, irq_aff = self.irq
        self.irq_path = f"/proc/irq/{self.irq_no}/smp_affinity_list"
        self.saved[self.irq_path] = irq_aff
        self.tmp = tempfile.mkdtemp(prefix="rtpart-host-")
        self.state = os.path.join(self.tmp, "state")
        self.profile = os.path.join(self.tmp, "host-test.json")
        with open(self.profile, "w") as f:
            json.dump({
                "summary": "host test: only what the test records and restores",
                "cpus": {"housekeeping": "0"},
                "irq": {"default_affinity": "0", "rules": [{"match": self.irq_name, "cpus": "0"}], "exclude": ["*"]},
                "sysctl": {"kernel.timer_migration": 0, "vm.stat_interval": 7},
                "sysfs": {"/sys/devices/virtual/workqueue/cpumask": "${housekeeping_mask}"},
            }, f)

    def tearDown(self):
        restore(self.saved)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_ctl(self, *args):
        return subprocess.run([CTL, "--state-dir", self.state, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)

    def test_apply_verify_revert(self):
        p = self.run_ctl("apply", self.profile)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(read(self.irq_path), "0")
        self.assertEqual(read("/proc/sys/kernel/timer_migration"), "0")
        self.assertEqual(read("/proc/sys/vm/stat_interval"), "7")
        self.assertEqual(int(read("/proc/irq/default_smp_affinity").replace(",", ""), 16), 1)
        self.assertEqual(int(read("/sys/devices/virtual/workqueue/cpumask").replace(",", ""), 16), 1)

        p = self.run_ctl("verify")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

        p = self.run_ctl("apply", self.profile)
        self.assertEqual(p.returncode, 0)
        self.assertIn("already applied", p.stdout)

        write("/proc/sys/vm/stat_interval", "3")
        p = self.run_ctl("--json", "verify")
        self.assertEqual(p.returncode, 3, p.stdout)
        drift = json.loads(p.stdout)["drift"]
        self.assertEqual([d["knob"] for d in drift], ["sysctl/vm.stat_interval"])
        self.assertEqual(drift[0]["actual"], "3")

        p = self.run_ctl("revert")
        self.assertEqual(p.returncode, 0, p.stderr)
        for path, value in self.saved.items():
            self.assertEqual(read(path), value, path)


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    # Everything skipped is a skip (77 for meson), never a pass.
    sys.exit(77 if result.skipped and len(result.skipped) >= result.testsRun else 0)
