#!/usr/bin/env python3
"""The example Ansible playbook (docs/ansible/rtpart.yml), run by ansible-playbook with the local
connection against a copy of a fake host, with the sim rtpartctl: the first run reports changed,
the second ok and unchanged; boot arguments waiting for a reboot (verify's status 4) are not a
failure; an invalid profile (status 2) fails the play and changes nothing; drift the play cannot
mend is a failure.

Run by meson (suite sysroot) with RTPARTCTL (the sim build) and RTPART_SOURCE_DIR set; exits 77
without ansible-playbook (Debian package ansible-core; scripts/deps --test).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("RTPART_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CTL = os.path.abspath(os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "tests", "sim", "rtpartctl"))
PLAYBOOK = os.path.join(SRC, "docs", "ansible", "rtpart.yml")
from sysroot_apply import copy_host  # noqa: E402
from ansible_role import PLAYBOOK_BIN, ansible_env, main  # noqa: E402


class Playbook(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-ansible-")
        self.root = os.path.join(self.tmp, "root")
        copy_host("vm", self.root, profiles=False)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def play(self, profile, ctl=CTL):
        """ansible-playbook's JSON report of one run: (exit status, stats of localhost, {task: result})."""
        home = os.path.join(self.tmp, "ansible")
        env = ansible_env(home)
        p = subprocess.run([PLAYBOOK_BIN, "-c", "local", "-i", "localhost,", PLAYBOOK,
                            "-e", json.dumps({"rtpartctl": ctl, "rtpart_root": self.root, "rtpart_profile": profile,
                                              "rtpart_become": False})],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=300,
                           stdin=subprocess.DEVNULL)
        try:
            report = json.loads(p.stdout)
        except ValueError:
            self.fail(f"ansible-playbook printed no JSON report (status {p.returncode}): {p.stdout}{p.stderr}")
        tasks = {t["task"]["name"]: t["hosts"]["localhost"] for t in report["plays"][0]["tasks"]}
        return p.returncode, report["stats"]["localhost"], tasks

    def test_changed_then_not(self):
        rc, stats, tasks = self.play("realtime")
        self.assertEqual(rc, 0, tasks)
        self.assertEqual((stats["changed"], stats["failures"]), (1, 0), stats)
        applied = tasks["Apply the rtpart profile"]
        self.assertIs(applied["changed"], True)
        self.assertIs(json.loads(applied["stdout"])["host_changed"], True)
        # The vm host boots with none of realtime's boot arguments: status 4, not a failure.
        verified = tasks["Verify the host against the profile"]
        self.assertEqual((verified["rc"], verified.get("failed", False)), (4, False))
        self.assertNotIn("skipped", tasks["Say that boot arguments wait for a reboot"])
        self.assertIs(tasks["Reboot for the boot arguments"].get("skipped"), True)

        rc, stats, tasks = self.play("realtime")
        self.assertEqual(rc, 0, tasks)
        self.assertEqual((stats["changed"], stats["failures"]), (0, 0), stats)
        self.assertIs(tasks["Apply the rtpart profile"]["changed"], False)

    def test_invalid_profile_fails(self):
        rc, stats, tasks = self.play("no-such-profile")
        self.assertNotEqual(rc, 0)
        self.assertEqual((stats["changed"], stats["failures"]), (0, 1), stats)
        applied = tasks["Apply the rtpart profile"]
        self.assertEqual((applied["rc"], applied["failed"]), (2, True))
        self.assertNotIn("Verify the host against the profile", tasks)

    def test_drift_fails(self):
        # An rtpartctl whose apply does nothing, on a host where realtime is applied and then
        # tampered with: verify finds drift (status 3), and the play fails on it.
        self.assertEqual(subprocess.run([CTL, "--root", self.root, "apply", "realtime"],
                                        stdout=subprocess.DEVNULL).returncode, 0)
        with open(os.path.join(self.root, "proc", "sys", "kernel", "timer_migration"), "w") as f:
            f.write("1\n")
        fake = os.path.join(self.tmp, "rtpartctl")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\nfor a; do [ "$a" = apply ] && { echo \'{"ok": true, "host_changed": false}\'; '
                    f'exit 0; }}; done\nexec {CTL} "$@"\n')
        os.chmod(fake, 0o755)
        rc, stats, tasks = self.play("realtime", ctl=fake)
        self.assertNotEqual(rc, 0)
        self.assertEqual(stats["failures"], 1, stats)
        verified = tasks["Verify the host against the profile"]
        self.assertEqual((verified["rc"], verified["failed"]), (3, True))


if __name__ == "__main__":
    main()
