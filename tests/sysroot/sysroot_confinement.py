#!/usr/bin/env python3
"""--root confinement with the real rtpartctl: a fake host where one knob file is immutable
(chattr +i, so its write fails with EPERM) and another knob's path is an absolute symlink whose
target exists both inside the tree and, with other bytes, outside it. apply fails on the
immutable knob and rolls back the knobs it had written, the symlinked one included: the tree is
as before and nothing outside it changed. (Before the fix, the EPERM switched the process to
plain openat and the rollback wrote through the link to the file outside.)

Needs root and a filesystem with the immutable flag: the trees live in the build directory
(tmpfs has no chattr +i before Linux 6.0). Exits 77 with the reason otherwise.
Run by meson (suite sysroot) with RTPARTCTL, RTPART_SOURCE_DIR and RTPART_BUILD_DIR set.
"""
import fcntl
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sysroot_apply import CTL, HOSTS, SRC, copy_host, diff, snapshot  # noqa: E402

BUILD = os.environ.get("RTPART_BUILD_DIR", os.path.join(SRC, "build"))
FS_IOC_GETFLAGS = 0x80086601
FS_IOC_SETFLAGS = 0x40086602
FS_IMMUTABLE_FL = 0x10

IMMUTABLE = "proc/sys/kernel/timer_migration"  # written late in apply
LINKED = "proc/sys/vm/swappiness"              # written early: the rollback rewrites it


def set_immutable(path, on):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        buf = bytearray(fcntl.ioctl(fd, FS_IOC_GETFLAGS, b"\0" * 8))
        flags = struct.unpack("i", buf[:4])[0]
        flags = flags | FS_IMMUTABLE_FL if on else flags & ~FS_IMMUTABLE_FL
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", flags) + b"\0" * 4)
    finally:
        os.close(fd)


def why_unsupported():
    if os.geteuid() != 0:
        return "chattr +i needs root (CAP_LINUX_IMMUTABLE)"
    if not os.path.isdir(os.path.join(HOSTS, "vm")):
        return "fixture host vm missing"
    d = tempfile.mkdtemp(prefix="rtpart-probe-", dir=BUILD)
    try:
        p = os.path.join(d, "f")
        open(p, "w").close()
        set_immutable(p, True)
        set_immutable(p, False)
    except OSError as e:
        return f"the filesystem of {BUILD} has no immutable flag ({e.strerror})"
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return None


class Confinement(unittest.TestCase):
    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="rtpart-confine-", dir=BUILD)
        self.root = os.path.join(self.base, "root")
        self.immutable = []
        copy_host("vm", self.root)

        # LINKED -> /BASE/outside/swappiness: in the tree that is ROOT/BASE/outside/swappiness
        # (the host's value), outside it BASE/outside/swappiness (other bytes).
        self.outside = os.path.join(self.base, "outside", "swappiness")
        os.makedirs(os.path.dirname(self.outside))
        with open(self.outside, "w") as f:
            f.write("outside, not a knob\n")
        mirror = os.path.join(self.root, self.outside.lstrip("/"))
        os.makedirs(os.path.dirname(mirror))
        os.rename(os.path.join(self.root, LINKED), mirror)
        os.symlink(self.outside, os.path.join(self.root, LINKED))
        self.mirror = mirror

    def tearDown(self):
        for p in self.immutable:
            try:
                set_immutable(p, False)
            except OSError:
                pass
        shutil.rmtree(self.base, ignore_errors=True)

    def make_immutable(self, rel):
        p = os.path.join(self.root, rel)
        set_immutable(p, True)
        self.immutable.append(p)

    def run_ctl(self, *args):
        e = dict(os.environ)
        e.pop("RTPART_TEST_CRASH_AFTER", None)
        return subprocess.run([CTL, "--root", self.root] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=e, text=True)

    def outside_bytes(self):
        with open(self.outside) as f:
            return f.read()

    def test_apply_cycle_through_absolute_link(self):
        """Without the immutable file: the linked knob is set and restored inside the tree."""
        before = snapshot(self.root)
        p = self.run_ctl("apply", "realtime")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(self.mirror) as f:
            self.assertEqual(f.read().strip(), "10")
        self.assertEqual(self.outside_bytes(), "outside, not a knob\n")
        p = self.run_ctl("revert")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(diff(before, snapshot(self.root)), [])
        self.assertEqual(self.outside_bytes(), "outside, not a knob\n")

    def test_state_directory_root_cannot_write(self):
        """root told the real reason when the state directory refuses it: not "needs root"."""
        state = os.path.join(self.root, "var", "lib", "rtpart")
        os.makedirs(state, exist_ok=True)
        set_immutable(state, True)
        self.immutable.append(state)
        before = snapshot(self.root)
        p = self.run_ctl("apply", "realtime")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("cannot lock", p.stderr)
        self.assertNotIn("needs root", p.stderr)
        self.assertIn("even root may not write the state directory", p.stderr)
        self.assertEqual(diff(before, snapshot(self.root)), [])

    def test_immutable_knob_then_rollback(self):
        self.make_immutable(IMMUTABLE)
        before = snapshot(self.root)
        outside_dir = sorted(os.listdir(os.path.dirname(self.outside)))

        p = self.run_ctl("apply", "realtime")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("sysctl/kernel.timer_migration", p.stderr)
        self.assertIn("undone", p.stderr)
        self.assertEqual(diff(before, snapshot(self.root)), [], "the rollback left changes in the tree")
        self.assertEqual(self.outside_bytes(), "outside, not a knob\n", "a write left the tree")
        self.assertEqual(sorted(os.listdir(os.path.dirname(self.outside))), outside_dir)

        # Every later run stays confined too: apply again, then revert (nothing to revert).
        p = self.run_ctl("apply", "realtime")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        p = self.run_ctl("revert")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(diff(before, snapshot(self.root)), [])
        self.assertEqual(self.outside_bytes(), "outside, not a knob\n")


if __name__ == "__main__":
    why = why_unsupported()
    if why:
        print(f"skipped: {why}", file=sys.stderr)
        sys.exit(77)
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
