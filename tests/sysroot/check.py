#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""rtpartctl check hardware and rtpartctl check on fake hosts whose tracefs the simulator drives
(tests/sim/sim-tracefs.c: current_tracer=hwlat with tracing on puts three windows per CPU of
tracing_cpumask into trace_pipe, gaps of 3 + 5·i + CPU µs, those above tracing_thresh, and adds two
SMIs to each of those CPUs' dev/cpu/N/msr; timerlat and osnoise as latency.py describes).

Checked: hwlat's figures per CPU and the SMI count read at MSR 0x34 before and after (intel-2s,
whose fixture has the msr module's files); the SMI count not available with the reason on AMD, in
a VM and without the msr module; every setting of the checklist with its verdict and, where it is
wanting, a fix that names a profile setting; the profile's check.hwlat_max_us; tracefs byte for
byte as before after a run, after SIGINT in the window and after kill -9 in the window followed by
the next run, which puts it back first and says so, and after SIGINT in each of check's three
windows; no hwlat tracer: the settings all the same, hwlat said not run, exit 1. check: the
report's four checks against the defaults and the profile's limits, exit 0, 3, or 1 when a
measurement could not run; --html: one file with the three sections and their charts that names
nothing outside itself; bad usage: exit 2.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sysroot_apply import CTL, copy_host, files_state, run_interrupted, write_files  # noqa: E402

TRACEFS = {
    "available_tracers": "hwlat timerlat osnoise function nop\n",
    "current_tracer": "nop\n",
    "tracing_on": "1\n",
    "tracing_cpumask": "ffffffff\n",
    "tracing_thresh": "0\n",
    "tracing_max_latency": "0\n",
    "hwlat_detector/width": "500000\n",
    "hwlat_detector/window": "1000000\n",
    "hwlat_detector/mode": "none [round-robin] per-cpu\n",
    "osnoise/cpus": "0-31\n",
    "osnoise/timerlat_period_us": "1000\n",
    "osnoise/stop_tracing_us": "0\n",
    "osnoise/stop_tracing_total_us": "0\n",
    "trace_pipe": "",
}
SETTINGS = ["smt", "idle", "turbo", "pstate", "governor", "tsc", "clocksource", "tsc_watchdog", "nmi_watchdog",
            "irqbalance", "thp", "preempt", "nx_huge_pages"]
SAVED = os.path.join("run", "rtpart", "tracefs.json")


def smi_count(root, cpu):
    with open(os.path.join(root, "dev", "cpu", str(cpu), "msr"), "rb") as f:
        f.seek(0x34)
        return int.from_bytes(f.read(8), "little")


class Check(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-check-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self.root = os.path.join(self.tmp, "root")
        self.host("intel-2s")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def host(self, name, tracefs=True):
        shutil.rmtree(self.root, ignore_errors=True)
        copy_host(name, self.root)
        self.tracefs = os.path.join(self.root, "sys", "kernel", "tracing")
        if tracefs:
            write_files(self.tracefs, TRACEFS)

    def tracefs_state(self):
        """Every file but trace_pipe (what the tracer wrote), as bytes."""
        return files_state(self.tracefs, TRACEFS)

    def ctl(self, *args):
        return subprocess.run([CTL, "--root", self.root] + list(args), capture_output=True, text=True, timeout=120,
                              cwd=self.tmp)

    def profile(self, name, doc):
        d = os.path.join(self.root, "etc", "rtpart", "profiles")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name + ".json"), "w") as f:
            json.dump(doc, f)
        p = self.ctl("apply", name)
        self.assertIn(p.returncode, (0, 4), p.stderr)

    def test_hardware(self):
        before = self.tracefs_state()
        p = self.ctl("--json", "check", "hardware", "--cpus", "1-3", "--seconds", "1")
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)  # irqbalance may move IRQs onto 1-3: bad
        doc = json.loads(p.stdout)
        self.assertEqual((doc["cpus"], doc["source"], doc["verdict"]), ("1-3", "--cpus", "over"))
        self.assertEqual((doc["host"]["hostname"], doc["host"]["vendor"], doc["host"]["virtual"]),
                         ("rt-xeon", "GenuineIntel", False))
        hw = doc["hwlat"]
        self.assertEqual((hw["ran"], hw["mode"], hw["threshold_us"], hw["width_us"], hw["window_us"], hw["limit_us"]),
                         (True, "per-cpu", 1, 500000, 1000000, 20))
        self.assertEqual([(c["cpu"], c["samples"], c["max_us"], c["over"], c["nmi"]) for c in hw["cpu"]],
                         [(n, 3, 13 + n, 0, 1) for n in (1, 2, 3)])
        self.assertEqual((hw["max_us"], hw["samples"], hw["over"], hw["verdict"]), (16, 9, 0, "within"))
        smi = doc["smi"]
        self.assertEqual((smi["available"], smi["count"]), (True, 2))
        self.assertEqual([(c["cpu"], c["before"], c["after"]) for c in smi["cpu"]], [(n, 42, 44) for n in (1, 2, 3)])
        settings = {s["id"]: s for s in doc["settings"]}
        self.assertEqual([s["id"] for s in doc["settings"]], SETTINGS)
        verdicts = {k: s["verdict"] for k, s in settings.items()}
        self.assertEqual(verdicts, {"smt": "warn", "idle": "warn", "turbo": "warn", "pstate": "warn", "governor": "warn",
                                    "tsc": "ok", "clocksource": "ok", "tsc_watchdog": "warn", "nmi_watchdog": "warn",
                                    "irqbalance": "bad", "thp": "ok", "preempt": "ok", "nx_huge_pages": "warn"})
        self.assertEqual(doc["settings_verdict"], "bad")
        self.assertIn("C6 (exit latency 133 µs)", settings["idle"]["found"])
        for k, s in settings.items():
            self.assertEqual(s["fix"] is None, s["verdict"] == "ok", k)
        # The fixes name the settings as the shipped profiles set them.
        self.assertIn('irqbalance.banned_cpus = "isolated"', settings["irqbalance"]["fix"])
        self.assertIn("modules.kvm.nx_huge_pages = false", settings["nx_huge_pages"]["fix"])
        self.assertIn('boot.args.tsc = "reliable"', settings["tsc_watchdog"]["fix"])
        self.assertIn('sysctl."kernel.nmi_watchdog" = 0', settings["nmi_watchdog"]["fix"])
        self.assertIn("cpu.resume_latency_us", settings["idle"]["fix"])
        self.assertEqual(self.tracefs_state(), before)
        self.assertFalse(os.path.exists(os.path.join(self.root, SAVED)))
        # Text, for CPU 1 alone: its three windows.
        p = self.ctl("check", "hardware", "--cpus", "1", "--seconds", "1")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("largest gap 14 µs, 3 windows above 1 µs, 0 above the limit of 20 µs: within", p.stdout)
        self.assertIn("SMIs in the window: 2 (MSR_SMI_COUNT)", p.stdout)
        self.assertRegex(p.stdout, r"\n  irqbalance +running \(pid \d+\) and not banned from CPUs 1: it moves IRQs there +bad\n")
        self.assertEqual(self.tracefs_state(), before)

    def test_profile_limit_and_banned(self):
        self.profile("tight", {"irqbalance": {"banned_cpus": "isolated"}, "check": {"hwlat_max_us": 14}})
        p = self.ctl("--json", "check", "hardware", "--cpus", "1-3", "--seconds", "1")
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual([(c["cpu"], c["over"]) for c in doc["hwlat"]["cpu"]], [(1, 0), (2, 1), (3, 1)])
        self.assertEqual((doc["hwlat"]["limit_us"], doc["hwlat"]["verdict"]), (14, "over"))
        self.assertEqual([s["verdict"] for s in doc["settings"] if s["id"] == "irqbalance"], ["ok"])
        # The isolated CPUs of the profile, without --cpus.
        p = self.ctl("--json", "check", "hardware", "--seconds", "1")
        doc = json.loads(p.stdout)
        self.assertEqual(doc["source"], "the isolated CPUs of tight")

    def run_interrupted(self, sig):
        return run_interrupted([CTL, "--root", self.root, "check", "hardware", "--cpus", "0-3", "--seconds", "30"],
                               self.tracefs, "hwlat", sig)

    def test_sigint_puts_tracefs_back(self):
        before = self.tracefs_state()
        rc, out, err = self.run_interrupted(signal.SIGINT)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("interrupted after", err)
        self.assertIn("tracefs is as it was", err)
        self.assertEqual(self.tracefs_state(), before)

    def test_kill9_next_run_puts_tracefs_back(self):
        before = self.tracefs_state()
        rc, out, err = self.run_interrupted(signal.SIGKILL)
        self.assertEqual(rc, -9)
        left = self.tracefs_state()
        self.assertNotEqual(left, before)  # as the killed run set it
        self.assertEqual((left["current_tracer"], left["tracing_cpumask"], left["hwlat_detector/mode"],
                          left["tracing_thresh"]), (b"hwlat\n", b"f\n", b"none round-robin [per-cpu]\n", b"1\n"))
        self.assertTrue(os.path.exists(os.path.join(self.root, SAVED)))
        with open(os.path.join(self.tracefs, "available_tracers"), "w") as f:
            f.write("function nop\n")  # the next run cannot run hwlat, and puts tracefs back all the same
        before["available_tracers"] = b"function nop\n"
        with open(os.path.join(self.root, "etc", "default", "irqbalance"), "a") as f:
            f.write('IRQBALANCE_BANNED_CPULIST="2"\n')  # no bad setting: incomplete, 1
        p = self.ctl("check", "hardware", "--cpus", "2", "--seconds", "1")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"put tracefs back as an interrupted hardware check \(pid \d+, started \S+\) found it")
        self.assertEqual(self.tracefs_state(), before)
        self.assertFalse(os.path.exists(os.path.join(self.root, SAVED)))

    def test_check_sigint_in_each_section(self):
        """check interrupted in hardware's hwlat, audit's osnoise or latency's timerlat window: it
        stops there, exit 1, and every tracefs file is as it was."""
        with open(os.path.join(self.root, "etc", "default", "irqbalance"), "a") as f:
            f.write('IRQBALANCE_BANNED_CPULIST="1-3"\n')
        before = self.tracefs_state()
        for tracer in ("hwlat", "osnoise", "timerlat"):
            with self.subTest(tracer=tracer):
                rc, out, err = run_interrupted([CTL, "--root", self.root, "check", "--cpus", "1-3", "--seconds", "4"],
                                               self.tracefs, tracer, signal.SIGINT)
                self.assertEqual(rc, 1, out + err)
                self.assertIn("interrupted", err)
                self.assertIn("tracefs is as it was", err)
                self.assertEqual(self.tracefs_state(), before)
                self.assertFalse(os.path.exists(os.path.join(self.root, SAVED)))

    def test_no_hwlat(self):
        with open(os.path.join(self.tracefs, "available_tracers"), "w") as f:
            f.write("timerlat osnoise nop\n")
        p = self.ctl("--json", "check", "hardware", "--cpus", "1", "--seconds", "1")
        self.assertEqual(p.returncode, 3, p.stderr)  # irqbalance: over wins
        doc = json.loads(p.stdout)
        self.assertEqual(doc["hwlat"], {"ran": False, "reason": "the kernel has no hwlat tracer (CONFIG_HWLAT_TRACER; "
                                                              "tracing/available_tracers does not list it)"})
        self.assertEqual([s["id"] for s in doc["settings"]], SETTINGS)
        self.host("intel-2s", tracefs=False)
        with open(os.path.join(self.root, "etc", "default", "irqbalance"), "a") as f:
            f.write('IRQBALANCE_BANNED_CPULIST="1"\n')
        p = self.ctl("--json", "check", "hardware", "--cpus", "1", "--seconds", "1")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("check hardware is incomplete", p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual((doc["verdict"], doc["hwlat"]["reason"]), ("incomplete", "no tracefs (/sys/kernel/tracing)"))
        self.assertEqual([s["verdict"] for s in doc["settings"] if s["id"] == "irqbalance"], ["ok"])

    def test_smi_not_available(self):
        for host, words in (("epyc", "an AMD CPU has no SMI counter (MSR_SMI_COUNT is Intel's)"),
                            ("vm", "a virtual machine: its MSR_SMI_COUNT counts only what the hypervisor emulates"),
                            ("vm-amd", "a virtual machine: its MSR_SMI_COUNT counts only what the hypervisor emulates"),
                            ("intel-2s", "no /dev/cpu/1/msr: the msr module is not loaded (modprobe msr)")):
            with self.subTest(host=host):
                self.host(host.removesuffix("-amd"))
                if host.endswith("-amd"):  # qemu's default CPU model says AuthenticAMD: the VM is the reason
                    cpuinfo = os.path.join(self.root, "proc", "cpuinfo")
                    with open(cpuinfo) as f:
                        text = f.read().replace("GenuineIntel", "AuthenticAMD")
                    with open(cpuinfo, "w") as f:
                        f.write(text)
                shutil.rmtree(os.path.join(self.root, "dev", "cpu"), ignore_errors=True)
                p = self.ctl("--json", "check", "hardware", "--cpus", "1", "--seconds", "1")
                self.assertIn(p.returncode, (0, 3), p.stderr)
                smi = json.loads(p.stdout)["smi"]
                self.assertFalse(smi["available"])
                self.assertIn(words, smi["reason"])

    def check_html(self, path):
        with open(path) as f:
            html = f.read()
        self.assertTrue(html.startswith("<!DOCTYPE html>"))
        for section in ('<h2 id="hardware">', '<h2 id="audit">', '<h2 id="latency">'):
            self.assertIn(section, html)
        self.assertGreaterEqual(html.count("<svg "), 3)  # hwlat, osnoise, latency
        # Nothing outside the file: no address, no script, no style sheet or image fetched.
        self.assertIsNone(re.search(r"(?i)https?:|<script|<link|<img|<iframe|src=|href=|url\(|@import", html))
        return html

    def test_check(self):
        html = os.path.join(self.tmp, "report.html")
        with open(os.path.join(self.root, "etc", "default", "irqbalance"), "a") as f:
            f.write('IRQBALANCE_BANNED_CPULIST="1-3"\n')
        before = self.tracefs_state()
        p = self.ctl("--json", "check", "--cpus", "1-3", "--seconds", "1", "--html", html)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual((doc["cpus"], doc["verdict"], doc["limits"]["from"]), ("1-3", "within", "the defaults"))
        checks = {c["check"]: c for c in doc["checks"]}
        self.assertEqual([c["check"] for c in doc["checks"]], ["hwlat", "settings", "noise", "latency"])
        self.assertEqual((checks["hwlat"]["value"], checks["hwlat"]["limit"], checks["hwlat"]["cpu"]), (16, 20, 3))
        self.assertEqual((checks["settings"]["value"], checks["settings"]["verdict"]), (0, "within"))
        self.assertAlmostEqual(checks["noise"]["value"], 100 * 103 / 1000000, places=6)  # CPU 3: 3 × 103 µs of 3 s
        self.assertEqual((checks["noise"]["limit"], checks["noise"]["cpu"]), (0.1, 3))
        self.assertEqual((checks["latency"]["value"], checks["latency"]["limit"]), (12.503, 50))
        self.assertEqual(set(doc["hardware"]) >= {"settings", "hwlat", "smi"}, True)
        self.assertEqual(doc["audit"]["cpus"], "1-3")
        self.assertEqual(doc["latency"]["tool"], "timerlat")
        self.assertEqual(self.tracefs_state(), before)
        page = self.check_html(html)
        self.assertIn("rtpart check of rt-xeon", page)
        self.assertIn("hwlat: the largest gap per CPU", page)
        self.assertIn("timerlat thread latency", page)
        # Text: the summary first.
        p = self.ctl("check", "--cpus", "1-3", "--seconds", "1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^Check of CPUs 1-3 \(--cpus\) on rt-xeon, \S+; limits from the defaults: within\n")
        self.assertRegex(p.stdout, r"\n  latency   12\.5 µs +limit 50 µs +within \(CPU 3\)\n")
        for section in ("\n== Hardware ==\n", "\n== Audit ==\n", "\n== Latency ==\n"):
            self.assertIn(section, p.stdout)

    def test_check_profile_limits(self):
        self.profile("tight", {"irqbalance": {"banned_cpus": "isolated"},
                               "check": {"hwlat_max_us": 100, "latency_max_us": 10, "noise_max_percent": 0.005}})
        p = self.ctl("--json", "check", "--seconds", "1")
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["limits"], {"hwlat_max_us": 100, "latency_max_us": 10, "noise_max_percent": 0.005,
                                         "from": "the profile tight"})
        self.assertEqual({c["check"]: c["verdict"] for c in doc["checks"]},
                         {"hwlat": "within", "settings": "within", "noise": "over", "latency": "over"})
        self.assertEqual(doc["profile"], "tight")
        # Text: figures as numbers at any size, never in exponent form ("1e+06 µs").
        self.profile("loose", {"irqbalance": {"banned_cpus": "isolated"}, "check": {"hwlat_max_us": 1000000}})
        p = self.ctl("check", "--seconds", "1")
        self.assertRegex(p.stdout, r"\n  hwlat +\d+ µs +limit 1000000 µs +within \(CPU \d+\)\n")
        self.assertRegex(p.stdout, r"\n  noise +0\.\d+ % +limit 0\.1 % ")

    def test_check_incomplete(self):
        html = os.path.join(self.tmp, "report.html")
        with open(os.path.join(self.root, "etc", "default", "irqbalance"), "a") as f:
            f.write('IRQBALANCE_BANNED_CPULIST="1-3"\n')
        with open(os.path.join(self.tracefs, "available_tracers"), "w") as f:
            f.write("hwlat nop\n")
        p = self.ctl("--json", "check", "--cpus", "1-3", "--seconds", "1", "--html", html)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("check is incomplete", p.stderr)
        doc = json.loads(p.stdout)
        checks = {c["check"]: c for c in doc["checks"]}
        self.assertEqual((doc["verdict"], checks["noise"]["verdict"], checks["latency"]["verdict"]),
                         ("incomplete", "not measured", "not measured"))
        self.assertIn("no osnoise tracer", checks["noise"]["reason"])
        self.assertIn("cyclictest is not installed", checks["latency"]["reason"])
        self.assertIsNone(doc["latency"])
        with open(html) as f:
            page = f.read()
        self.assertIn("not measured", page)
        self.assertIn('<h2 id="latency">', page)

    def test_usage(self):
        for args, words in ((["check", "noise"], "check knows 'hardware' and 'latency'"),
                            (["check", "hardware", "--svg", "x.svg"], "--svg is check latency's"),
                            (["check", "latency", "--html", "x.html"], "--html writes the report of check"),
                            (["check", "hardware", "--seconds", "0"], "--seconds"),
                            (["check", "hardware", "latency"], "takes at most one"),
                            (["audit", "--html", "x.html"], "audit does not take --html (check's)")):
            with self.subTest(args=args):
                p = self.ctl(*args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(words, p.stderr)


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
