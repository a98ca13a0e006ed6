#!/usr/bin/env python3
"""rtpartctl's bash completion (shell-completion/rtpartctl.bash), driven as bash drives it: the
bash-completion library and the script sourced, COMP_WORDS/COMP_CWORD/COMP_LINE set, the
completion function called, COMPREPLY read. Commands, options (a command's own), option values,
the literal argument of check, the commands after help, and profile names from the tree of the
--root given on the line (a fake host with a profile of its own in etc/rtpart/profiles). No word is
ever evaluated: a profile file named "$(touch${IFS}x).json" is neither listed nor run on Tab, and
a list that prints such names (a fake rtpartctl) gets none of them run or offered.

Run by meson (suite sysroot) with RTPARTCTL (the sim build) and RTPART_SOURCE_DIR set; exits 77
without bash or the bash-completion package (scripts/deps --test).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("RTPART_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CTL = os.path.abspath(os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "tests", "sim", "rtpartctl"))
SCRIPT = os.path.join(SRC, "shell-completion", "rtpartctl.bash")
LIBRARY = "/usr/share/bash-completion/bash_completion"
HOST = os.path.join(os.environ.get("RTPART_HOSTS_DIR") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "tests", "fixtures", "hosts"), "vm")
COMMANDS = {"list", "show", "plan", "apply", "verify", "revert", "status", "watch", "audit", "check", "export",
            "import-tuned", "vm", "help"}
SHIPPED = {"realtime", "realtime-virtual-host", "realtime-virtual-guest", "cpu-partitioning"}

DRIVER = r'''
source "$1" && source "$2" || exit 99
shift 2
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
_rtpartctl "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}"
'''


def complete(*words, cwd=None):
    """COMPREPLY for the command line CTL WORDS..., the cursor at the end of the last word."""
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", DRIVER, "driver", LIBRARY, SCRIPT, CTL, *words],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60, cwd=cwd,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, (words, p.returncode, p.stderr)
    assert p.stderr == "", (words, p.stderr)
    return {w for w in p.stdout.split("\n") if w}


class Completion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rtpart-completion-")
        cls.root = os.path.join(cls.tmp, "root")
        shutil.copytree(HOST, cls.root, symlinks=True)
        d = os.path.join(cls.root, "etc", "rtpart", "profiles")
        os.makedirs(d)
        with open(os.path.join(d, "lab-only.json"), "w") as f:
            f.write('{"summary": "a profile of this tree alone", "include": ["realtime"]}\n')
        os.makedirs(os.path.join(cls.tmp, "dirs", "alpha"))
        os.makedirs(os.path.join(cls.tmp, "dirs", "albatross"))
        open(os.path.join(cls.tmp, "dirs", "alfile"), "w").close()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_registered(self):
        p = subprocess.run(["bash", "--norc", "-c", 'source "$1" && source "$2" && complete -p rtpartctl', "x",
                            LIBRARY, SCRIPT], stdout=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(p.stdout.strip(), "complete -F _rtpartctl rtpartctl")

    def test_shellcheck(self):
        if not shutil.which("shellcheck"):
            self.skipTest("no shellcheck (Debian package shellcheck; scripts/deps --test)")
        p = subprocess.run(["shellcheck", "-s", "bash", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, ""))

    def test_commands(self):
        self.assertEqual(complete(""), COMMANDS)
        self.assertEqual(complete("a"), {"apply", "audit"})
        self.assertEqual(complete("--json", "st"), {"status"})
        # After an option's value, still the command.
        self.assertEqual(complete("--root", self.root, "re"), {"revert"})
        self.assertEqual(complete("frobnicate", ""), set())

    def test_options(self):
        every = complete("-")
        for o in ("-r", "--root=", "--json", "--no-daemon", "--state-dir=", "--seconds=", "--svg=", "--help",
                  "--version"):
            self.assertIn(o, every)
        plan = complete("plan", "--")
        self.assertIn("--all", plan)
        self.assertIn("--root=", plan)
        self.assertIn("--version", plan)
        self.assertNotIn("--seconds=", plan)  # audit's and check's
        self.assertNotIn("--all", complete("apply", "--"))
        self.assertEqual(complete("audit", "--s"), {"--seconds=", "--state-dir="})
        self.assertEqual(complete("check", "latency", "--s"), {"--seconds=", "--state-dir=", "--svg="})
        self.assertEqual(complete("watch", "--no"), set())  # watch needs rtpartd: no --no-daemon

    def test_option_values(self):
        cwd = os.path.join(self.tmp, "dirs")
        self.assertEqual(complete("--root", "al", cwd=cwd), {"alpha", "albatross"})  # DIR: directories
        self.assertEqual(complete("--root=alb", cwd=cwd), {"albatross"})
        self.assertEqual(complete("-r", "alp", cwd=cwd), {"alpha"})
        self.assertEqual(complete("check", "latency", "--svg", "alf", cwd=cwd), {"alfile"})  # FILE
        self.assertEqual(complete("audit", "--seconds", ""), set())  # N: nothing to offer
        self.assertEqual(complete("vm", "add", "x", "--emulator", ""), {"share", "isolate"})  # A|B: both
        self.assertEqual(complete("vm", "add", "x", "--emulator", "i"), {"isolate"})

    def test_arguments(self):
        self.assertEqual(complete("check", ""), {"hardware", "latency"})
        self.assertEqual(complete("check", "latency", ""), set())
        self.assertEqual(complete("help", ""), COMMANDS)
        self.assertEqual(complete("vm", ""), {"add", "remove", "list"})
        self.assertEqual(complete("vm", "add", ""), set())  # a new NAME: nothing to offer
        self.assertEqual(complete("help", "pl"), {"plan"})
        self.assertEqual(complete("verify", ""), set())

    def test_profiles(self):
        for words in (("--root", self.root, "apply", ""), ("--root=" + self.root, "plan", ""),
                      ("show", "-r", self.root, ""), ("plan", "--json", "--root", self.root, "")):
            with self.subTest(words=words):
                got = complete(*words)
                self.assertIn("lab-only", got)
                self.assertTrue(SHIPPED <= got, got)
        self.assertEqual(complete("--root", self.root, "apply", "lab"), {"lab-only"})
        self.assertEqual(complete("--root", self.root, "apply", "lab-only", ""), set())
        # Another root, another list: the profile is this tree's alone.
        self.assertNotIn("lab-only", complete("--root", HOST, "apply", ""))
        # A path: .json files.
        self.assertEqual(complete("--root", self.root, "plan", self.root + "/etc/rtpart/profiles/la"),
                         {self.root + "/etc/rtpart/profiles/lab-only.json"})

    def test_never_runs_a_word(self):
        # A profile file whose name is a command substitution: not listed (plan would not take the
        # name), and Tab after plan runs nothing.
        cwd = os.path.join(self.tmp, "cwd")
        os.makedirs(cwd, exist_ok=True)
        evil = os.path.join(self.root, "etc", "rtpart", "profiles", "$(touch${IFS}x).json")
        with open(evil, "w") as f:
            f.write('{"summary": "evil", "include": ["realtime"]}\n')
        try:
            p = subprocess.run([CTL, "--root", self.root, "list"], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn("touch", p.stdout)
            got = complete("--root", self.root, "plan", "", cwd=cwd)
            self.assertIn("lab-only", got)
            self.assertFalse(any("touch" in w for w in got), got)
            self.assertEqual(os.listdir(cwd), [])
        finally:
            os.unlink(evil)
        # Whatever a list prints (another rtpartctl's, a wrapper's), no word of it is evaluated, and
        # none with a character the shell acts on is offered.
        fake = os.path.join(self.tmp, "fake-rtpartctl")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\ncase " $* " in\n*" list "*) printf \'%%s  x\\n\' \'$(touch${IFS}y)\' '
                    '\'`touch z`\' \'${IFS}\' \'ok-name\' \'*\' ;;\n*) exec %s "$@" ;;\nesac\n' % CTL)
        os.chmod(fake, 0o755)
        p = subprocess.run(["bash", "--norc", "--noprofile", "-c", DRIVER, "driver", LIBRARY, SCRIPT, fake, "plan", ""],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60, cwd=cwd,
                           stdin=subprocess.DEVNULL)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertEqual(p.stdout, "ok-name\n")
        self.assertEqual(os.listdir(cwd), [])


if __name__ == "__main__":
    if not shutil.which("bash"):
        print("SKIP: no bash")
        sys.exit(77)
    if not os.path.exists(LIBRARY):
        print(f"SKIP: {LIBRARY} missing (Debian package bash-completion; scripts/deps --test)")
        sys.exit(77)
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
