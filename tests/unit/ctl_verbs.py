#!/usr/bin/env python3
"""rtpartctl's verb table: every verb has its usage and help, argument counts are checked once
for all, and help, --help and --version answer without touching any host (--root names a
directory that does not exist: a verb that ran would fail on it).

Run by meson (suite unit) with RTPARTCTL and RTPART_SOURCE_DIR set.
"""
import os
import re
import subprocess
import sys
import unittest

SRC = os.environ.get("RTPART_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CTL = os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "daemon", "ctl", "rtpartctl")
RTPARTD = os.environ.get("RTPARTD") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "daemon", "rtpartd", "rtpartd")
NOWHERE = "/nonexistent-rtpart-root"

# The DESIGN's commands that exist today (a verb added to the table is found from the overview).
KNOWN = {"list", "show", "plan", "apply", "verify", "revert", "status", "watch", "audit", "check", "export", "import-tuned",
         "vm", "help"}


def ctl(*args):
    return subprocess.run([CTL, "--root", NOWHERE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, stdin=subprocess.DEVNULL, timeout=30)


def overview_verbs(text):
    """{verb: argument spec ('', 'PROFILE' or '[VERB]')} from the overview's Commands section."""
    verbs = {}
    block = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    for line in block.splitlines():
        # "  VERB [SPEC]  SUMMARY", or "  VERB SPEC" alone on its line when too long for the column
        m = re.match(r"^  (\S+)(?: (\S+(?: \S+)*))?(?:\s{2,}\S|$)", line)
        if m:
            verbs[m.group(1)] = m.group(2) or ""
    return verbs


class VerbTable(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        p = ctl("help")
        assert p.returncode == 0, p.stderr
        cls.overview = p.stdout
        cls.verbs = overview_verbs(p.stdout)

    def test_overview(self):
        self.assertEqual(set(self.verbs), KNOWN)
        self.assertTrue(self.overview.startswith("Usage: rtpartctl [OPTIONS] COMMAND [ARG]\n"))
        for args in (["--help"], ["-h"]):
            p = ctl(*args)
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, self.overview, ""), args)

    def test_version(self):
        with open(os.path.join(SRC, "meson.build")) as f:
            version = re.search(r"version : '([^']+)'", f.read()).group(1)
        p = ctl("--version")
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, f"rtpartctl {version}\n", ""))
        # After any command too, which then does not run.
        for verb in self.verbs:
            p = ctl(verb, "--version")
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, f"rtpartctl {version}\n", ""), verb)
        p = subprocess.run([RTPARTD, "--root", NOWHERE, "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, stdin=subprocess.DEVNULL, timeout=30)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, f"rtpartd {version}\n", ""))

    def test_verb_help(self):
        for verb, spec in self.verbs.items():
            with self.subTest(verb=verb):
                p = ctl(verb, "--help")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stderr, "")
                usage = f"Usage: rtpartctl {verb} [OPTIONS]" + (f" {spec}" if spec else "") + "\n"
                self.assertTrue(p.stdout.startswith(usage), p.stdout)
                self.assertIn("\nOptions:\n", p.stdout)
                self.assertIn("  -h, --help        Show this help\n", p.stdout)
                self.assertIn("      --version     Show the version\n", p.stdout)
                # The same, however asked.
                for other in (["help", verb], ["--help", verb], [verb, "-h"]):
                    q = ctl(*other)
                    self.assertEqual((q.returncode, q.stdout, q.stderr), (0, p.stdout, ""), other)
                # A verb's help lists only options the overview has.
                for line in p.stdout.split("\nOptions:\n", 1)[1].splitlines():
                    if line.startswith("  -") or line.startswith("      -"):
                        self.assertIn(line + "\n", self.overview)

    def wrong_counts(self, spec):
        """Argument lists of a wrong length for a verb whose usage names spec."""
        if spec == "":
            return [["x"], ["x", "y"]]
        if spec.startswith("["):
            return [["x", "y"], ["x", "y", "z"]]
        if " " in spec:  # one argument, then optional ones: "libvirt|nova [PROFILE]"
            return [[], ["x", "y", "z"]]
        return [[], ["x", "y"]]

    def test_wrong_count(self):
        for verb, spec in self.verbs.items():
            usage = f"Usage: rtpartctl {verb} [OPTIONS]" + (f" {spec}" if spec else "") + "\n"
            for args in self.wrong_counts(spec):
                with self.subTest(verb=verb, args=args):
                    p = ctl(verb, *args)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertEqual(p.stdout, "")
                    self.assertRegex(p.stderr, rf"^rtpartctl: {verb} (takes no argument|needs exactly one \S+|needs exactly one argument: \S+|"
                                               rf"takes at most one \S+|needs .+|takes at most \d+ arguments: .+)\n")
                    self.assertTrue(p.stderr.endswith(usage), p.stderr)

    def test_unknown(self):
        p = ctl("frobnicate")
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertEqual(p.stderr, "rtpartctl: unknown command 'frobnicate'; try 'rtpartctl --help'\n")
        p = ctl("help", "frobnicate")
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertIn("unknown command 'frobnicate'", p.stderr)
        p = ctl()
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "rtpartctl: missing command; try 'rtpartctl --help'\n")

    def test_options_not_taken(self):
        # Each option refused names the verbs that take it, and only the options given.
        for args, message in (
                (["audit", "--svg", "x"], "audit does not take --svg (check's)"),
                (["check", "latency", "--no-osnoise"], "check does not take --no-osnoise (audit's)"),
                (["verify", "--seconds", "2", "-o", "f"],
                 "verify does not take --seconds (audit's and check's), --output (import-tuned's)"),
                (["status", "--all"], "status does not take --all (plan's)"),
                (["apply", "--vcpus", "2", "--domain", "d", "x"],
                 "apply does not take --vcpus (export's and vm's), --domain (export's)"),
                (["show", "--cpus", "1", "x"], "show does not take --cpus (audit's and check's)")):
            with self.subTest(args=args):
                p = ctl(*args)
                self.assertEqual((p.returncode, p.stdout, p.stderr), (2, "", f"rtpartctl: {message}\n"))

    def test_runs_with_right_count(self):
        # With the count right the verb runs: here it fails on the missing root, as bad usage.
        p = ctl("--no-daemon", "verify")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertTrue(p.stderr.startswith(f"rtpartctl: cannot open root directory {NOWHERE}: "), p.stderr)


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
