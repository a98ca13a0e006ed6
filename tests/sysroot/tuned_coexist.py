#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""tuned on the same host (issue: plan and apply said nothing, and the two fought over the knobs).

On the fake vm host, with a tuned profile of its own in etc/tuned/lab (no tuned package needed):

- tuned's active profile set (etc/tuned/active_profile) but tuned not running: plan marks every
  knob the profile sets too, with tuned's value, and says tuned would write them when it starts;
  apply goes on.
- tuned running (run/tuned/tuned.pid, proc/PID/comm "tuned"): plan says so; apply refuses with
  status 2, names the knobs and the fix, and changes nothing; apply --force applies. A pid file
  whose process is not tuned is no running tuned.
- a profile rtpart cannot read: plan says it may set the same knobs; apply refuses while tuned runs.
- through rtpartd, plan says the same.
- import-tuned --active imports tuned's active profile with the post-loaded one.

Run by meson (suite sysroot) with RTPARTCTL and RTPARTD set.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sysroot_apply import CTL, copy_host  # noqa: E402

DAEMON = os.environ.get("RTPARTD") or os.path.join(os.path.dirname(CTL), "rtpartd")

LAB = """[main]
summary=A lab profile
[sysctl]
kernel.timer_migration=1
vm.swappiness=30
[bootloader]
cmdline=skew_tick=1
"""
POST = "[sysctl]\nkernel.nmi_watchdog=1\n"


class TunedCoexist(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-tuned-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self.root = os.path.join(self.tmp, "root")
        copy_host("vm", self.root)
        self.write("etc/tuned/lab/tuned.conf", LAB)
        self.write("etc/tuned/lab-post/tuned.conf", POST)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def read(self, rel):
        with open(os.path.join(self.root, rel)) as f:
            return f.read()

    def run_ctl(self, *args):
        return subprocess.run([CTL, "--root", self.root] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=300)

    def tuned_runs(self, pid=4242, comm="tuned"):
        self.write("run/tuned/tuned.pid", f"{pid}\n")
        self.write(f"proc/{pid}/comm", comm + "\n")

    def plan(self, *args):
        p = self.run_ctl("--json", *args, "plan", "realtime")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        knobs = {k["knob"]: k.get("note") or "" for k in doc["changes"] + doc["unchanged"]}
        return knobs, doc["notes"]

    def assert_marked(self, knobs):
        self.assertIn("tuned's profile lab sets it too, to 1", knobs["sysctl/kernel.timer_migration"])
        self.assertIn("tuned's profile lab sets it too, to 30", knobs["sysctl/vm.swappiness"])
        self.assertIn("tuned's profile lab sets it too, to the same value", knobs["boot/skew_tick"])
        marked = [k for k, n in knobs.items() if "tuned's profile" in n]
        self.assertEqual(len(marked), 3, marked)

    def test_no_tuned(self):
        knobs, notes = self.plan()
        self.assertFalse([n for n in notes if "tuned" in n], notes)
        self.assertFalse([k for k, n in knobs.items() if "tuned" in n])

    def test_active_but_not_running(self):
        self.write("etc/tuned/active_profile", "lab\n")
        # A pid file left behind, of a process that is no tuned: not running.
        self.tuned_runs(comm="bash")
        knobs, notes = self.plan()
        self.assert_marked(knobs)
        self.assertTrue([n for n in notes if n.startswith("tuned is not running, but when it starts it applies its "
                                                           "active profile lab") and "sets 3 of this plan's" in n],
                        notes)
        p = self.run_ctl("apply", "realtime")
        self.assertIn(p.returncode, (0, 4), p.stderr)
        self.assertEqual(self.read("proc/sys/kernel/timer_migration").strip(), "0")

    def test_running_refuses_apply(self):
        self.write("etc/tuned/active_profile", "lab\n")
        self.tuned_runs()
        knobs, notes = self.plan()
        self.assert_marked(knobs)
        self.assertTrue([n for n in notes if n.startswith("tuned runs (pid 4242) with the profile lab, which sets 3")
                         and "apply refuses while tuned runs, unless --force" in n], notes)
        # Text: the note beside the knob, and the plan's.
        p = self.run_ctl("plan", "realtime")
        self.assertRegex(p.stdout, r"sysctl/kernel.timer_migration .*\[tuned's profile lab sets it too, to 1\]")
        p = self.run_ctl("apply", "realtime")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("tuned runs (pid 4242) with the profile lab, which sets 3 knobs of realtime too", p.stderr)
        self.assertIn("sysctl/kernel.timer_migration", p.stderr)
        self.assertIn("add --force", p.stderr)
        self.assertEqual(self.read("proc/sys/kernel/timer_migration").strip(), "1")
        self.assertFalse(os.path.exists(os.path.join(self.root, "var/lib/rtpart/state.json")))
        p = self.run_ctl("apply", "--force", "realtime")
        self.assertIn(p.returncode, (0, 4), p.stderr)
        self.assertEqual(self.read("proc/sys/kernel/timer_migration").strip(), "0")
        # --force is apply's alone.
        p = self.run_ctl("plan", "--force", "realtime")
        self.assertEqual(p.returncode, 2)
        self.assertIn("plan does not take --force (apply's)", p.stderr)

    def test_unreadable_profile(self):
        self.write("etc/tuned/active_profile", "nosuch\n")
        self.tuned_runs()
        _, notes = self.plan()
        self.assertTrue([n for n in notes if "which rtpart cannot read (no tuned profile 'nosuch'" in n], notes)
        p = self.run_ctl("apply", "realtime")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("may set the same knobs as realtime", p.stderr)

    def test_through_rtpartd(self):
        self.write("etc/tuned/active_profile", "lab\n")
        self.tuned_runs()
        sock = os.path.join(self.tmp, "rtpartd.sock")
        log = open(os.path.join(self.tmp, "rtpartd.log"), "w+")
        d = subprocess.Popen([DAEMON, "--root", self.root, "--no-dbus", "--varlink-socket", sock], stdout=log,
                             stderr=subprocess.STDOUT)
        try:
            end = time.monotonic() + 30
            while not os.path.exists(sock) and d.poll() is None and time.monotonic() < end:
                time.sleep(0.05)
            self.assertTrue(os.path.exists(sock), "rtpartd did not listen")
            knobs, notes = self.plan("--varlink-socket", sock)
            self.assert_marked(knobs)
            self.assertTrue([n for n in notes if n.startswith("tuned runs (pid 4242)")], notes)
        finally:
            d.terminate()
            d.wait(timeout=30)
            log.close()

    def test_import_active(self):
        p = self.run_ctl("import-tuned", "--active")
        self.assertEqual(p.returncode, 2)
        self.assertIn("tuned has no active profile", p.stderr)
        self.write("etc/tuned/active_profile", "lab\n")
        self.write("etc/tuned/post_loaded_profile", "lab-post\n")
        p = self.run_ctl("import-tuned", "--active")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["sysctl"], {"kernel.timer_migration": 1, "vm.swappiness": 30, "kernel.nmi_watchdog": 1})
        self.assertIn("tuned's profile lab lab-post", doc["description"])
        self.assertIn("tuned is not running", p.stderr)
        p = self.run_ctl("import-tuned", "--active", "lab")
        self.assertEqual(p.returncode, 2)


if __name__ == "__main__":
    unittest.main()
