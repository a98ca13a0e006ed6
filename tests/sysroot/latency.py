#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""rtpartctl check latency on a fake host whose tracefs the simulator drives (tests/sim/
sim-tracefs.c: current_tracer=timerlat puts 20 known wake-ups per CPU of osnoise/cpus into
trace_pipe).

Checked: the figures per CPU; tracefs byte for byte as before (after a run, after SIGINT in the
window, and after kill -9 in the window followed by the next run, which puts it back first and
says so); the profile's check.latency_max_us gives the verdict and exit 3; --svg; no timerlat and
no cyclictest: exit 1 naming what to install; no timerlat but cyclictest (the simulator's stand-in,
where the tree has usr/bin/cyclictest: tests/sim/sim-programs.c), run through the root: its
figures; bad usage: exit 2.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

SRC = os.environ.get("RTPART_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
BUILD = os.environ.get("RTPART_BUILD_DIR") or os.path.join(SRC, "build")
CTL = os.environ.get("RTPARTCTL") or os.path.join(BUILD, "tests", "sim", "rtpartctl")
HOSTS = os.environ.get("RTPART_HOSTS_DIR") or os.path.join(BUILD, "tests", "fixtures", "hosts")
PROFILES = os.path.join(SRC, "profiles")
TRACEFS = {
    "available_tracers": "timerlat osnoise function nop\n",
    "current_tracer": "nop\n",
    "tracing_on": "0\n",
    "osnoise/cpus": "0-3\n",
    "osnoise/timerlat_period_us": "500\n",
    "osnoise/stop_tracing_us": "40\n",
    "osnoise/stop_tracing_total_us": "0\n",
    "trace_pipe": "",
}


class Latency(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-latency-")
        self.root = os.path.join(self.tmp, "root")
        shutil.copytree(os.path.join(HOSTS, "vm"), self.root, symlinks=True)
        pdir = os.path.join(self.root, "usr", "share", "rtpart", "profiles")
        os.makedirs(pdir, exist_ok=True)
        for f in os.listdir(PROFILES):
            if f.endswith(".json"):
                shutil.copy(os.path.join(PROFILES, f), pdir)
        self.tracefs = os.path.join(self.root, "sys", "kernel", "tracing")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def make_tracefs(self):
        for rel, text in TRACEFS.items():
            path = os.path.join(self.tracefs, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)

    def tracefs_state(self):
        """Every file but trace_pipe (the samples are consumed), as bytes."""
        out = {}
        for rel in TRACEFS:
            if rel != "trace_pipe":
                with open(os.path.join(self.tracefs, rel), "rb") as f:
                    out[rel] = f.read()
        return out

    def ctl(self, *args, **kw):
        return subprocess.run([CTL, "--root", self.root] + list(args), capture_output=True, text=True, timeout=60,
                              **kw)

    def test_figures_and_tracefs_put_back(self):
        self.make_tracefs()
        before = self.tracefs_state()
        svg = os.path.join(self.tmp, "h.svg")
        p = self.ctl("--json", "check", "latency", "--cpus", "2-3", "--seconds", "1", "--svg", svg)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual((doc["tool"], doc["cpus"], doc["source"], doc["verdict"], doc["limit_us"]),
                         ("timerlat", "2-3", "--cpus", "measured", 0))
        self.assertEqual([c["cpu"] for c in doc["cpu"]], [2, 3])
        for c in doc["cpu"]:
            n = c["cpu"]
            self.assertEqual((c["irq"]["samples"], c["thread"]["samples"]), (20, 20))  # user-ret is no sample
            self.assertAlmostEqual(c["irq"]["min_us"], (1000 + n) / 1000)
            self.assertAlmostEqual(c["irq"]["max_us"], (1000 + 1900 + n) / 1000)
            self.assertAlmostEqual(c["thread"]["min_us"], (3000 + n) / 1000)
            self.assertAlmostEqual(c["thread"]["max_us"], (3000 + 9500 + n) / 1000)
            self.assertAlmostEqual(c["thread"]["avg_us"], (3000 + 4750 + n) / 1000)
            self.assertEqual(c["thread"]["p99_us"], 13)
            self.assertEqual(sum(b[1] for b in c["thread"]["histogram"]), 20)
        self.assertEqual(self.tracefs_state(), before)
        self.assertFalse(os.path.exists(os.path.join(self.root, "run", "rtpart", "tracefs.json")))
        with open(svg) as f:
            self.assertTrue(f.read().startswith("<svg "))
        # Text.
        p = self.ctl("check", "latency", "--cpus", "1", "--seconds", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^Latency of CPUs 1 \(--cpus\), timerlat over 1\.\d s\n\nCPU 1 +samples")
        self.assertRegex(p.stdout, r"\n  thread +20 +3\.0 +7\.8 +13 +12\.5\n")
        self.assertEqual(self.tracefs_state(), before)

    def test_profile_limit(self):
        self.make_tracefs()
        udir = os.path.join(self.root, "etc", "rtpart", "profiles")
        os.makedirs(udir, exist_ok=True)
        for name, limit in (("tight", 10), ("loose", 50)):
            with open(os.path.join(udir, name + ".json"), "w") as f:
                json.dump({"include": "realtime", "check": {"latency_max_us": limit}}, f)
        p = self.ctl("apply", "tight")
        self.assertIn(p.returncode, (0, 4), p.stderr)
        p = self.ctl("check", "latency", "--seconds", "1")
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        self.assertIn("(the isolated CPUs of tight), timerlat over", p.stdout)
        self.assertIn(": OVER the profile's limit of 10 µs", p.stdout)
        self.assertIn("over the limit", p.stdout)
        p = self.ctl("apply", "loose")
        self.assertIn(p.returncode, (0, 4), p.stderr)
        p = self.ctl("--json", "check", "latency", "--seconds", "1")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual((json.loads(p.stdout)["verdict"], json.loads(p.stdout)["limit_us"]), ("within", 50))
        # The limit is checked as the profile is loaded.
        with open(os.path.join(udir, "bad.json"), "w") as f:
            json.dump({"include": "realtime", "check": {"latency_max_us": 0}}, f)
        p = self.ctl("plan", "bad")
        self.assertEqual(p.returncode, 2)
        self.assertIn("/check/latency_max_us", p.stderr)

    def run_interrupted(self, sig):
        proc = subprocess.Popen([CTL, "--root", self.root, "check", "latency", "--cpus", "0-3", "--seconds", "30"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Wait until the tracer runs (the simulator filled trace_pipe), then interrupt.
        end = time.monotonic() + 20
        while time.monotonic() < end:
            with open(os.path.join(self.tracefs, "current_tracer")) as f:
                if f.read().strip() == "timerlat":
                    break
            time.sleep(0.02)
        else:
            proc.kill()
            self.fail("the tracer never started")
        time.sleep(0.3)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        return proc.returncode, out, err

    def test_sigint_puts_tracefs_back(self):
        self.make_tracefs()
        before = self.tracefs_state()
        rc, out, err = self.run_interrupted(signal.SIGINT)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("interrupted after", err)
        self.assertIn("tracefs is as it was", err)
        self.assertEqual(self.tracefs_state(), before)

    def test_kill9_next_run_puts_tracefs_back(self):
        self.make_tracefs()
        before = self.tracefs_state()
        rc, out, err = self.run_interrupted(signal.SIGKILL)
        self.assertEqual(rc, -9)
        self.assertNotEqual(self.tracefs_state(), before)  # left as the killed run set it
        self.assertTrue(os.path.exists(os.path.join(self.root, "run", "rtpart", "tracefs.json")))
        p = self.ctl("check", "latency", "--cpus", "2", "--seconds", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, r"put tracefs back as an interrupted latency check \(pid \d+, started \S+\) found it")
        self.assertEqual(self.tracefs_state(), before)
        self.assertFalse(os.path.exists(os.path.join(self.root, "run", "rtpart", "tracefs.json")))

    def test_nothing_to_measure_with(self):
        p = self.ctl("check", "latency", "--cpus", "1", "--seconds", "1")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("the kernel has no timerlat tracer (tracefs is not mounted", p.stderr)
        self.assertIn("cyclictest is not installed (apt install rt-tests)", p.stderr)
        self.make_tracefs()
        with open(os.path.join(self.tracefs, "available_tracers"), "w") as f:
            f.write("function nop\n")
        p = self.ctl("check", "latency", "--cpus", "1", "--seconds", "1")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("available_tracers does not list it", p.stderr)

    def test_cyclictest_through_the_root(self):
        """Without timerlat, cyclictest runs as the root runs programs (the simulator's stand-in here)."""
        os.makedirs(os.path.join(self.root, "usr", "bin"), exist_ok=True)
        open(os.path.join(self.root, "usr", "bin", "cyclictest"), "w").close()
        p = self.ctl("--json", "check", "latency", "--cpus", "1-2", "--seconds", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("measured with cyclictest", p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["tool"], "cyclictest")
        for c in doc["cpu"]:
            self.assertIsNone(c["irq"])
            self.assertEqual(c["thread"]["samples"], 20)
            self.assertEqual(c["thread"]["max_us"], 10 + c["cpu"])

    def test_usage(self):
        for args in (["check"], ["check", "noise"], ["check", "latency", "--seconds", "0"],
                     ["check", "latency", "--cpus", "x"], ["plan", "realtime", "--svg", "x.svg"]):
            p = self.ctl(*args)
            self.assertEqual(p.returncode, 2, (args, p.stderr))


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
