#!/usr/bin/env python3
"""What rtpartctl prints for people, on a fake host (the sim build, working on the tree directly):

- status names every knob that drifted, with the value expected and the value found (it gave
  only their number), and status --json lists them under "drifted";
- plan --summary gives each domain with changes its heading and one line of counts and first
  knobs, the numbers those of the whole plan, for hosts where the whole plan runs to hundreds of
  lines; --json --summary has a "domains" object instead of the knob lists; --all and --summary
  exclude each other.

Run by meson (suite sysroot) with RTPARTCTL and RTPART_SOURCE_DIR set.
"""
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sysroot_apply import Host  # noqa: E402


class Status(unittest.TestCase):
    def setUp(self):
        self.h = Host("vm")

    def tearDown(self):
        self.h.close()

    def test_names_what_drifted(self):
        p = self.h.run("--no-daemon", "apply", "realtime")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.h.write("proc/sys/kernel/timer_migration", "1\n")
        self.h.write("proc/sys/vm/swappiness", "61\n")
        p = self.h.run("--no-daemon", "status")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^Knobs:       \d+ owned, 2 drifted:$")
        self.assertRegex(p.stdout, r"(?m)^  sysctl/kernel\.timer_migration +expected 0, found 1$")
        self.assertRegex(p.stdout, r"(?m)^  sysctl/vm\.swappiness +expected 10, found 61$")
        p = self.h.run("--no-daemon", "status", json_out=True)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["drift"], 2)
        self.assertEqual(sorted((d["knob"], d["domain"], d["expected"], d["actual"]) for d in doc["drifted"]),
                         [("sysctl/kernel.timer_migration", "sysctl", "0", "1"), ("sysctl/vm.swappiness", "sysctl", "10", "61")])
        # In sync: the count alone.
        self.h.write("proc/sys/kernel/timer_migration", "0\n")
        self.h.write("proc/sys/vm/swappiness", "10\n")
        p = self.h.run("--no-daemon", "status")
        self.assertRegex(p.stdout, r"(?m)^Knobs:       \d+ owned, 0 drifted$")


class Summary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.h = Host("intel-2s")
        p = cls.h.run("--no-daemon", "plan", "realtime-virtual-host", json_out=True)
        assert p.returncode == 0, p.stderr
        cls.plan = json.loads(p.stdout)
        cls.by_domain = {}
        for k in cls.plan["changes"]:
            cls.by_domain.setdefault(k["domain"], []).append(k)

    @classmethod
    def tearDownClass(cls):
        cls.h.close()

    def test_text(self):
        full = self.h.run("--no-daemon", "plan", "realtime-virtual-host")
        p = self.h.run("--no-daemon", "plan", "--summary", "realtime-virtual-host")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertLess(len(lines), len(full.stdout.splitlines()) / 4)
        # The first lines, the notes and the last line are the whole plan's.
        self.assertEqual(lines[:3], full.stdout.splitlines()[:3])
        self.assertEqual(p.stdout[p.stdout.index("\nNotes:\n"):], full.stdout[full.stdout.index("\nNotes:\n"):])
        # A domain's heading (its name first), then its line.
        counts = re.findall(r"(?m)^(\w+)\b.*\n  (\d+) changes?(?: \((\d+) needs? a reboot\))?, (\d+) already as "
                            r"desired: (.*)$", p.stdout)
        self.assertEqual(sorted(c[0] for c in counts), sorted(self.by_domain))
        for domain, n, reboot, same, first in counts:
            knobs = self.by_domain[domain]
            with self.subTest(domain=domain):
                self.assertEqual(int(n), len(knobs))
                self.assertEqual(int(reboot or 0), sum(1 for k in knobs if k["reboot"]))
                self.assertEqual(int(same), sum(1 for k in self.plan["unchanged"] if k["domain"] == domain))
                ids = [k["knob"] for k in knobs]
                want = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
                self.assertEqual(first, want)

    def test_json(self):
        p = self.h.run("--no-daemon", "plan", "--summary", "realtime-virtual-host", json_out=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertNotIn("changes", doc)
        self.assertNotIn("unchanged", doc)
        for key in ("profile", "cpus", "host", "notes", "summary"):
            self.assertEqual(doc[key], self.plan[key])
        domains = set(self.by_domain) | {k["domain"] for k in self.plan["unchanged"]}
        self.assertEqual(set(doc["domains"]), domains)
        for d, c in doc["domains"].items():
            self.assertEqual(c["changes"], len(self.by_domain.get(d, [])))
            self.assertEqual(c["unchanged"], sum(1 for k in self.plan["unchanged"] if k["domain"] == d))

    def test_refusals(self):
        p = self.h.run("--no-daemon", "plan", "--summary", "--all", "realtime")
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertIn("--all lists every knob and --summary none", p.stderr)
        p = self.h.run("--no-daemon", "verify", "--summary")
        self.assertEqual((p.returncode, p.stderr), (2, "rtpartctl: verify does not take --summary (plan's)\n"))


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
