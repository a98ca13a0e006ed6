#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The per-CPU PM QoS resume latency (cpu.resume_latency_us) on the fake 4-CPU VM host (isolated
1-3), with the sim rtpartctl: planned on the isolated CPUs only (housekeeping CPU 0 keeps its deep
C-states), 0 written as the kernel's "n/a" and a number as it is; applied, journalled, verified
(a CPU's limit changed behind rtpart's back is drift), reverted byte for byte; a CPU without the
file is a note; a profile without "value" is refused at its JSON pointer.

Run by meson (suite sysroot) with RTPARTCTL and RTPART_SOURCE_DIR set.
"""
import json
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sysroot_apply import STATE, Host, diff, snapshot  # noqa: E402

QOS = "sys/devices/system/cpu/cpu%d/power/pm_qos_resume_latency_us"


class ResumeLatency(unittest.TestCase):
    def setUp(self):
        self.h = Host("vm")
        self.profiles = os.path.join(self.h.root, "etc", "rtpart", "profiles")
        os.makedirs(self.profiles, exist_ok=True)

    def tearDown(self):
        shutil.rmtree(self.h.tmp, ignore_errors=True)

    def profile(self, name, cpu):
        with open(os.path.join(self.profiles, name + ".json"), "w") as f:
            json.dump({"cpu": cpu}, f)

    def changes(self, name):
        p = self.h.run("plan", name, json_out=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        return {c["knob"]: (c["path"], c["current"], c["desired"]) for c in doc["changes"]}, doc

    def test_isolated_cpus_apply_verify_revert(self):
        self.profile("qos", {"resume_latency_us": {"cpus": "isolated", "value": 0}})
        changes, _ = self.changes("qos")
        self.assertEqual(changes, {f"cpu/{n}/resume_latency_us": ("/" + QOS % n, "0", "n/a") for n in (1, 2, 3)})
        before = snapshot(self.h.root)
        p = self.h.run("apply", "qos")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([self.h.read(QOS % n) for n in range(4)], ["0\n", "n/a\n", "n/a\n", "n/a\n"])
        # Journalled: the original of CPU 1, and the same for 2-3 (the journal folds equal ones).
        original = self.h.state()["originals"]["cpu/1/resume_latency_us"]
        self.assertEqual((original["value"], original.get("also")), ("0", "2-3"))
        p = self.h.run("verify")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # Lifted by someone else: drift, named.
        self.h.write(QOS % 2, "0\n")
        p = self.h.run("verify", json_out=True)
        self.assertEqual(p.returncode, 3, p.stderr)
        drift = json.loads(p.stdout)["drift"]
        self.assertEqual([(d["knob"], d["expected"], d["actual"]) for d in drift],
                         [("cpu/2/resume_latency_us", "n/a", "0")])
        p = self.h.run("revert")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(diff(before, snapshot(self.h.root)), [])

    def test_value_and_cpus(self):
        self.profile("qos", {"resume_latency_us": {"cpus": "2", "value": 10}})
        changes, _ = self.changes("qos")
        self.assertEqual(changes, {"cpu/2/resume_latency_us": ("/" + QOS % 2, "0", "10")})
        p = self.h.run("apply", "qos")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.h.read(QOS % 2), "10\n")

    def test_missing_file_is_a_note(self):
        os.unlink(os.path.join(self.h.root, QOS % 3))
        self.profile("qos", {"resume_latency_us": {"value": 0}})
        changes, doc = self.changes("qos")
        self.assertEqual(sorted(changes), ["cpu/1/resume_latency_us", "cpu/2/resume_latency_us"])
        self.assertIn("cpu: CPUs 3 have no power/pm_qos_resume_latency_us (per-CPU PM QoS, CONFIG_PM); "
                      "resume_latency_us not set there", doc["notes"])

    def test_refused(self):
        for cpu, pointer, words in (({"resume_latency_us": {"cpus": "isolated"}}, "/cpu/resume_latency_us",
                                     '"value" is missing'),
                                    ({"resume_latency_us": {"value": -1}}, "/cpu/resume_latency_us/value",
                                     "out of range"),
                                    ({"resume_latency_us": {"value": "n/a"}}, "/cpu/resume_latency_us/value",
                                     "expected an integer")):
            with self.subTest(cpu=cpu):
                self.profile("bad", cpu)
                p = self.h.run("plan", "bad")
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(f"bad.json: {pointer}: ", p.stderr)
                self.assertIn(words, p.stderr)


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
