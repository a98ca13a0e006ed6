#!/usr/bin/env python3
"""Cache allocation (resctrl) on this machine's real kernel (suite host, needs root).

Where the kernel has resctrl and the CPU has L3 allocation (Intel CAT, AMD L3 QoS):

  test_group: rtpartctl applies a profile whose only section is one test-unique, shareable cat
  group (rtpart-test-<pid>) on the last CPU with the fewest ways the host allows; the test reads
  the kernel's own files: the group's cpus_list, its normalised schemata (the same mask in every
  L3 domain), mode, info/last_cmd_status; verify is in sync; revert removes the group and leaves
  the default group's schemata and every other group as they were.
  test_mount: when resctrl was not mounted, apply mounts it and revert unmounts it again.

The group is shareable and shrink_default is off, so the default group and every other group
keep their ways: nothing but the group the test created changes. If the test mounted resctrl
itself (test_group, to see the group planned in full), it unmounts it at the end. The journal goes
to a temporary --state-dir.

Skips (77) when not root, when the kernel has no resctrl (not in /proc/filesystems), or when the
CPU offers no L3 allocation (no info/L3 after mounting; flags rdt_a / cat_l3).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

CTL = os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "daemon", "ctl", "rtpartctl")
MNT = "/sys/fs/resctrl"


def read(path):
    with open(path) as f:
        return f.read().strip()


def kernel_has_resctrl():
    with open("/proc/filesystems") as f:
        return any(line.split()[-1] == "resctrl" for line in f if line.strip())


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def mounted():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[fields.index("-") + 1] == "resctrl":
                return fields[4]
    return None


def l3_line(schemata, resource="L3"):
    for line in schemata.splitlines():
        name, _, doms = line.strip().partition(":")
        if name.strip() == resource:
            return {int(d): v for d, v in (x.split("=") for x in doms.strip().split(";"))}
    return None


@unittest.skipUnless(os.geteuid() == 0, "needs root to change resctrl")
class RealResctrl(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not kernel_has_resctrl():
            raise unittest.SkipTest("this kernel has no resctrl (not in /proc/filesystems)")
        if not ({"rdt_a", "cat_l3"} & cpu_flags()):
            raise unittest.SkipTest("the CPU offers no L3 cache allocation (no rdt_a or cat_l3 flag)")
        cls.cpus = sorted(os.sched_getaffinity(0))
        if len(cls.cpus) < 2:
            raise unittest.SkipTest("needs at least 2 CPUs")

    def setUp(self):
        self.was_mounted = mounted()
        self.we_mounted = False
        self.name = f"rtpart-test-{os.getpid()}"
        self.tmp = tempfile.mkdtemp(prefix="rtpart-host-resctrl-")
        self.state = os.path.join(self.tmp, "state")
        self.cpu = self.cpus[-1]

    def tearDown(self):
        group = os.path.join(MNT, self.name)
        if mounted() and os.path.isdir(group):
            try:
                os.rmdir(group)  # a failed test: the group the test created goes
            except OSError as e:
                print(f"could not remove {group}: {e}", file=sys.stderr)
        if self.we_mounted and mounted():
            subprocess.run(["umount", MNT], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def mount(self):
        if not mounted():
            subprocess.run(["mount", "-t", "resctrl", "resctrl", MNT], check=True)
            self.we_mounted = True
        if not os.path.isdir(os.path.join(MNT, "info", "L3")):
            raise unittest.SkipTest("resctrl has no L3 resource on this host (info/L3 missing)")

    def profile(self, ways):
        path = os.path.join(self.tmp, "host-resctrl.json")
        hk = ",".join(str(c) for c in self.cpus[:-1])
        with open(path, "w") as f:
            json.dump({
                "summary": "host test: one test-unique shareable cat group, nothing else",
                "cpus": {"housekeeping": hk},
                "cat": {"groups": [{"name": self.name, "cpus": str(self.cpu), "l3": {"ways": ways}}],
                        "shrink_default": False},
            }, f)
        return path

    def run_ctl(self, *args):
        return subprocess.run([CTL, "--no-daemon", "--state-dir", self.state, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)

    def groups(self):
        return sorted(d for d in os.listdir(MNT) if d not in ("info", "mon_groups", "mon_data"))

    def test_group(self):
        self.mount()
        info = os.path.join(MNT, "info", "L3")
        min_bits = int(read(os.path.join(info, "min_cbm_bits")))
        cbm_mask = int(read(os.path.join(info, "cbm_mask")), 16)
        root_before = read(os.path.join(MNT, "schemata"))
        groups_before = self.groups()

        p = self.run_ctl("apply", self.profile(min_bits))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        group = os.path.join(MNT, self.name)
        self.assertTrue(os.path.isdir(group), "apply made no group")
        self.assertEqual(read(os.path.join(group, "cpus_list")), str(self.cpu))
        self.assertEqual(read(os.path.join(group, "mode")), "shareable")
        self.assertEqual(read(os.path.join(info, "..", "last_cmd_status")), "ok")
        doms = l3_line(read(os.path.join(group, "schemata"))) or l3_line(read(os.path.join(group, "schemata")), "L3CODE")
        self.assertTrue(doms, "no L3 line in the group's schemata")
        masks = {int(v, 16) for v in doms.values()}
        self.assertEqual(len(masks), 1, f"different masks per domain: {doms}")
        mask = masks.pop()
        self.assertEqual(bin(mask).count("1"), min_bits)
        self.assertEqual(mask & ~cbm_mask, 0, f"mask {mask:x} outside cbm_mask {cbm_mask:x}")

        p = self.run_ctl("verify")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

        p = self.run_ctl("revert")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse(os.path.exists(group), "revert left the group behind")
        self.assertEqual(self.groups(), groups_before)
        self.assertEqual(read(os.path.join(MNT, "schemata")), root_before)

    def test_mount(self):
        if self.was_mounted:
            self.skipTest(f"resctrl is already mounted at {self.was_mounted}; the test does not unmount what it did "
                          "not mount")
        p = self.run_ctl("apply", self.profile(1))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.we_mounted = bool(mounted())  # so that tearDown unmounts it if revert does not
        self.assertEqual(mounted(), MNT, "apply did not mount resctrl")
        p = self.run_ctl("verify")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = self.run_ctl("revert")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIsNone(mounted(), "revert left resctrl mounted")


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    # Everything skipped is a skip (77 for meson), never a pass.
    sys.exit(77 if result.skipped and len(result.skipped) >= result.testsRun else 0)
