#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The benchmark's floor (bench/floor.c) does every call of its list, and bench/floorlist.py lists
what rtpartctl does. A smoke test: no figure is timed here.

Checked: on the bundled vm host, the floor reads every file listed (its counts, the bytes read equal
to the files' sizes, a missing file counted as a failed read), lists a directory, writes a knob's
bytes exactly (truncating the old value), replaces a file, makes and removes directories, unlinks,
commits a journal of the given size; a malformed line exits 2. With strace: the list of an
`rtpartctl plan` on a copy of the vm host names the files rtpart reads (/proc/interrupts among them),
each once, and the floor reads all of them.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("RTPART_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
BUILD = os.environ.get("RTPART_BUILD_DIR") or os.path.join(SRC, "build")
CTL = os.environ.get("RTPARTCTL") or os.path.join(BUILD, "tests", "sim", "rtpartctl")
FLOOR = os.environ.get("FLOOR") or os.path.join(BUILD, "bench", "floor")
VM = os.path.join(os.environ.get("RTPART_HOSTS_DIR") or os.path.join(BUILD, "tests", "fixtures", "hosts"), "vm")
sys.path.insert(0, os.path.join(SRC, "bench"))
import floorlist  # noqa: E402


def read(path):
    with open(path) as f:
        return f.read()


def counts(out):
    return {k: int(v) for k, v in (kv.split("=") for kv in out.split())}


class Floor(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-floor-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def floor(self, lines, expect=0):
        lst = os.path.join(self.tmp, "list")
        with open(lst, "w") as f:
            f.write("".join(ln + "\n" for ln in lines))
        p = subprocess.run([FLOOR, lst], capture_output=True, text=True)
        self.assertEqual(p.returncode, expect, p.stderr)
        return counts(p.stdout) if expect == 0 else p

    def test_reads_every_file(self):
        files = []
        for top in ("proc/irq", "sys/devices/system/cpu/cpu0"):
            for d, _, names in os.walk(os.path.join(VM, top)):
                files += [os.path.join(d, n) for n in sorted(names) if os.path.isfile(os.path.join(d, n))
                          and not os.path.islink(os.path.join(d, n))]
        self.assertGreater(len(files), 20)
        missing = os.path.join(VM, "proc", "no-such-file")
        c = self.floor([f"r\t{p}" for p in files] + [f"r\t{missing}", f"d\t{os.path.join(VM, 'proc', 'irq')}"])
        self.assertEqual(c["read"], len(files) + 1)
        self.assertEqual(c["read_failed"], 1)
        self.assertEqual(c["read_bytes"], sum(os.path.getsize(p) for p in files))
        self.assertEqual((c["dir"], c["dir_failed"]), (1, 0))

    def test_writes(self):
        t = self.tmp
        with open(os.path.join(t, "knob"), "w") as f:
            f.write("0-1023\n")
        os.mkdir(os.path.join(t, "old"))
        with open(os.path.join(t, "gone"), "w") as f:
            f.write("x")
        three, conf = b"3\n".hex(), b"a=1\n".hex()
        c = self.floor([f"w\t{t}/knob\t{three}", f"f\t{t}/conf\t{conf}", f"m\t{t}/grp",
                        f"x\t{t}/old", f"u\t{t}/gone", f"c\t{t}/journal\t100", f"w\t{t}/absent\t30"])
        self.assertEqual((c["write"], c["write_failed"], c["file"], c["mkdir"], c["rmdir"], c["unlink"], c["commit"]),
                         (2, 1, 1, 1, 1, 1, 1))
        self.assertEqual(read(f"{t}/knob"), "3\n")
        self.assertEqual(read(f"{t}/conf"), "a=1\n")
        self.assertTrue(os.path.isdir(f"{t}/grp"))
        self.assertFalse(os.path.exists(f"{t}/old") or os.path.exists(f"{t}/gone") or os.path.exists(f"{t}/absent"))
        self.assertEqual(os.path.getsize(f"{t}/journal"), 100)
        self.assertEqual(c["written_bytes"], 2 + 4 + 100)

    def test_malformed(self):
        for line in ("q\t/x", "r /x", "w\t/x", "w\t/x\tzz", "c\t/x\tmany", "r\t"):
            p = self.floor([line], expect=2)
            self.assertIn("not a line of the list", p.stderr, line)

    def test_list_of_plan(self):
        if not shutil.which("strace"):
            self.skipTest("strace is not installed")
        root = os.path.join(self.tmp, "vm")
        shutil.copytree(VM, root, symlinks=True)
        pdir = os.path.join(root, "usr", "share", "rtpart", "profiles")
        os.makedirs(pdir)
        for f in os.listdir(os.path.join(SRC, "profiles")):
            if f.endswith(".json"):
                shutil.copy(os.path.join(SRC, "profiles", f), pdir)
        lst = os.path.join(self.tmp, "plan.list")
        rc, err = floorlist.trace(["true"], os.path.join(self.tmp, "probe.strace"))
        if rc != 0:
            self.skipTest(f"strace cannot trace here: {err.strip()[-200:]}")
        made = floorlist.record([CTL, "--root", root, "plan", "realtime-virtual-host"], lst,
                                state_dir=os.path.join(root, "var", "lib", "rtpart"))
        with open(lst) as f:
            ops = [ln.rstrip("\n").split("\t") for ln in f]
        reads = [p for op, p, *_ in ops if op == "r"]
        self.assertEqual(made.get("r"), len(reads))
        self.assertEqual(len(reads), len(set(reads)), "a file listed twice")
        self.assertIn(os.path.join(root, "proc", "interrupts"), reads)
        self.assertFalse([op for op, *_ in ops if op not in ("r", "d")], "plan writes nothing")
        c = counts(subprocess.run([FLOOR, lst], capture_output=True, text=True, check=True).stdout)
        self.assertEqual(c["read"], len(reads))
        absent = sum(not os.path.exists(p) for p in reads)
        self.assertEqual(c["read_failed"], absent)


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
