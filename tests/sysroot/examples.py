#!/usr/bin/env python3
"""Every example of README.md and the man pages runs as the text says.

The examples are taken from the files themselves, so that one added later is run too:
- profiles: every code block of README.md and rtpart.profile(5) that is a JSON object (or a member
  of one, as '"check": {...}') is a profile; each is planned on the fake EPYC host (2 NUMA nodes,
  SMT, the host rtpart.profile(5)'s EXAMPLE describes) and must exit 0.
- commands: every line of a code block whose command is rtpartctl (after a "$ " or "# " prompt
  and a sudo) runs, block after block, on that host with a profile applied first (as on the host
  the examples speak of), in a directory holding the files they name (lab.json, rt-guest.xml).
  --root is the fake host; a path the example writes outside it (--output, --state-dir) is put
  under a temporary directory. What follows the command on the line (a pipe into jq, a
  redirection, "; echo $?") is not run, but for jq, which runs on the output when jq is
  installed. Exit status 0 (verify, audit and check also 3 and 4, which the examples print).
Other commands (systemctl, meson, virsh, busctl, socat) are not rtpartctl's to run here.

Run by meson (suite sysroot) with RTPARTCTL and RTPART_SOURCE_DIR set.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sysroot_apply import CTL, SRC, copy_host  # noqa: E402

HOST = "epyc"
DOCS = ["README.md"] + sorted(os.path.join("man", f) for f in os.listdir(os.path.join(SRC, "man")) if f.endswith(".scd"))
PROFILE_DOCS = ("README.md", os.path.join("man", "rtpart.profile.5.scd"))
OPERATORS = ("|", "||", "&&", ";", ">", ">>", "<", "&", "2>", "2>&1")
# Commands an example may print an exit status of other than 0 for.
STATUSES = {"verify": (0, 3, 4), "audit": (0, 3), "check": (0, 3)}
TUNED = "[main]\nsummary=An example tuned profile\n\n[sysctl]\nvm.swappiness=10\n\n[bootloader]\ncmdline=skew_tick=1\n"


def code_blocks(doc):
    """(line, text) of every fenced code block of doc (scdoc indents some with tabs)."""
    with open(os.path.join(SRC, doc)) as f:
        lines = f.read().split("\n")
    start, body = None, []
    for i, line in enumerate(lines, 1):
        if line.strip().startswith("```"):
            if start is None:
                start, body = i, []
            else:
                yield start, "\n".join(l.strip() for l in body)
                start = None
        elif start is not None:
            body.append(line)


def profile_examples():
    """(where, profile document) of every profile example."""
    for doc in PROFILE_DOCS:
        for line, text in code_blocks(doc):
            for candidate in (text, "{" + text + "}"):
                try:
                    value = json.loads(candidate)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    yield f"{doc}:{line}", value
                break


def command_examples():
    """(where, [(argv of rtpartctl, jq's argv or None)]) of every code block with rtpartctl in it."""
    for doc in DOCS:
        for line, text in code_blocks(doc):
            commands = []
            for row in text.split("\n"):
                row = re.sub(r"^[$#] ", "", row)
                lex = shlex.shlex(row, posix=True, punctuation_chars=True)
                lex.commenters = "#"
                lex.whitespace_split = True
                try:
                    words = list(lex)
                except ValueError:
                    continue
                if words[:1] == ["sudo"]:
                    words = words[1:]
                if words[:1] != ["rtpartctl"]:
                    continue
                cut = next((i for i, w in enumerate(words) if w in OPERATORS or w[0] in "|&;<>"), len(words))
                jq = None
                if cut < len(words) and words[cut] == "|" and words[cut + 1:cut + 2] == ["jq"]:
                    rest = words[cut + 2:]
                    jq = ["jq"] + rest[:next((i for i, w in enumerate(rest) if w in OPERATORS), len(rest))]
                commands.append((words[1:cut], jq))
            if commands:
                yield f"{doc}:{line}", commands


VALUED = ("--root", "-r", "--state-dir", "--output", "-o", "--seconds", "--cpus", "--svg", "--vcpus", "--domain",
          "--varlink-socket")


def command_of(args):
    """The command of rtpartctl's arguments: the first that is neither an option nor its value."""
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in VALUED:
            skip = True
        elif not a.startswith("-"):
            return a
    return ""


class Examples(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rtpart-examples-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        cls.root = os.path.join(cls.tmp, "root")
        copy_host(HOST, cls.root)
        # What the examples name: a profile of one's own beside them (README's), a domain file,
        # a tuned profile.
        cls.cwd = os.path.join(cls.tmp, "cwd")
        os.makedirs(cls.cwd)
        readme = next(p for where, p in profile_examples() if where.startswith("README.md"))
        with open(os.path.join(cls.cwd, "lab.json"), "w") as f:
            json.dump(readme, f)
        shutil.copy(os.path.join(SRC, "tests", "fixtures", "libvirt", "rt-guest.xml"), cls.cwd)
        os.makedirs(os.path.join(cls.root, "etc", "tuned", "my-tuned-profile"))
        with open(os.path.join(cls.root, "etc", "tuned", "my-tuned-profile", "tuned.conf"), "w") as f:
            f.write(TUNED)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_ctl(self, args):
        return subprocess.run([CTL] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=self.cwd, stdin=subprocess.DEVNULL, timeout=300)

    def rewrite(self, args):
        """args with --root the fake host, and the paths written outside it put under tmp."""
        out, i, root = [], 0, False
        while i < len(args):
            a = args[i]
            name, eq, value = a.partition("=")
            takes = name in ("--root", "-r", "--state-dir", "--output", "-o")
            if takes and not eq and i + 1 < len(args):
                value, i = args[i + 1], i + 1
            if name in ("--root", "-r"):
                out += ["--root", self.root]
                root = True
            elif takes:
                path = os.path.join(self.tmp, "out", value.lstrip("/")) if value.startswith("/") else value
                os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
                out += [name, path]
            else:
                out.append(a)
            i += 1
        return out if root else ["--root", self.root] + out

    def test_profiles(self):
        found = list(profile_examples())
        self.assertGreaterEqual(len(found), 4, found)  # README's; realtime.json, check, EXAMPLE in (5)
        d = os.path.join(self.root, "etc", "rtpart", "profiles")
        os.makedirs(d, exist_ok=True)
        for where, profile in found:
            with self.subTest(example=where):
                with open(os.path.join(d, "example.json"), "w") as f:
                    json.dump(profile, f)
                p = self.run_ctl(["--root", self.root, "--no-daemon", "plan", "example"])
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("Profile example for", p.stdout)

    def test_commands(self):
        found = list(command_examples())
        self.assertGreaterEqual(sum(len(c) for _, c in found), 20, found)
        jq = shutil.which("jq")
        for where, commands in found:
            # On a host where a profile is applied, as the examples' host is.
            p = self.run_ctl(["--root", self.root, "--no-daemon", "apply", "realtime-virtual-host"])
            self.assertEqual(p.returncode, 0, p.stderr)
            for args, filt in commands:
                with self.subTest(example=where, command=shlex.join(["rtpartctl"] + args)):
                    p = self.run_ctl(self.rewrite(args))
                    verb = command_of(args)
                    self.assertIn(p.returncode, STATUSES.get(verb, (0,)), p.stderr)
                    if filt and jq:
                        q = subprocess.run(filt, input=p.stdout, capture_output=True, text=True, timeout=60)
                        self.assertEqual(q.returncode, 0, (q.stderr, p.stdout[:2000]))


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
