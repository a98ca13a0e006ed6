#!/usr/bin/env python3
"""The rtpart Ansible role (docs/ansible/roles/rtpart) through its example playbook
(docs/ansible/rollout.yml), run by ansible-playbook with the local connection against copies of a
fake host, with the sim rtpartctl (tests/sysroot/ansible_playbook.py does the same for docs/ansible/rtpart.yml;
tests/vm/vm_ansible.py runs the role over SSH on a real guest, through its reboot):

- the syntax of both playbooks (ansible-playbook --syntax-check) and ansible-lint where installed;
- a rollout deploys the user's profile, applies it, finds boot arguments waiting (verify's 4, no
  reboot with rtpart_reboot false) and runs the check command; the second run changes nothing;
- --check plans (the plan task is "changed", its knobs listed) and writes nothing on the host;
- drift found by a verify-only run (rtpart_apply false) fails the host and names the knob;
- a fleet of three with serial [1, 20%] and max_fail_percentage 0: the second host's check fails,
  the third is never touched;
- a wrong installed version fails the host, naming both versions.

Run by meson (suite sysroot) with RTPARTCTL (the sim build) and RTPART_SOURCE_DIR set; exits 77
without ansible-playbook (Debian package ansible-core).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("RTPART_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CTL = os.path.abspath(os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "tests", "sim", "rtpartctl"))
ANSIBLE = os.path.join(SRC, "docs", "ansible")
ROLLOUT = os.path.join(ANSIBLE, "rollout.yml")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sysroot_apply import copy_host  # noqa: E402
PLAYBOOK_BIN = shutil.which("ansible-playbook")
CALLBACKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ansible")
PROFILE = {"include": "realtime", "check": {"latency_max_us": 1000}}
T = "rtpart : "  # the role's tasks are named with its name


def ansible_env(home):
    return dict(os.environ, ANSIBLE_STDOUT_CALLBACK="rtpart_report", ANSIBLE_CALLBACK_PLUGINS=CALLBACKS,
                ANSIBLE_HOME=home, ANSIBLE_LOCAL_TEMP=home, ANSIBLE_REMOTE_TEMP=home, ANSIBLE_NOCOLOR="1",
                ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
                ANSIBLE_RETRY_FILES_ENABLED="False", ANSIBLE_PYTHON_INTERPRETER="auto_silent")


def report(p):
    """(stats by host, {host: {task: result}}) of the rtpart_report callback's JSON, every batch."""
    doc = json.loads(p.stdout)
    hosts = {}
    for play in doc["plays"]:
        for t in play["tasks"]:
            for h, r in t["hosts"].items():
                hosts.setdefault(h, {})[t["task"]["name"]] = r
    return doc["stats"], hosts


def tree_digest(root):
    """A digest of every file's path, mode and content under root."""
    h = hashlib.sha256()
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for n in sorted(files) + sorted(x for x in dirs if os.path.islink(os.path.join(d, x))):
            p = os.path.join(d, n)
            st = os.lstat(p)
            h.update(f"{os.path.relpath(p, root)} {st.st_mode}\n".encode())
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


class Role(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-role-")
        self.profile = os.path.join(self.tmp, "fleet.json")
        with open(self.profile, "w") as f:
            json.dump(PROFILE, f)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def host(self, name):
        root = os.path.join(self.tmp, name)
        copy_host("vm", root, profiles=False)
        return root

    def hostvars(self, root, **extra):
        v = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
             "rtpartctl": CTL, "rtpart_root": root, "rtpart_become": False, "rtpart_profile": "fleet",
             "rtpart_profiles": [self.profile], "rtpart_profiles_dir": os.path.join(root, "etc", "rtpart", "profiles"),
             "rtpart_package": "", "rtpart_reboot": False, "rtpart_check": ["status"]}
        v.update(extra)
        return v

    def play(self, hosts, *args):
        """Runs rollout.yml on {name: hostvars}: (exit status, stats, {host: {task: result}})."""
        inventory = os.path.join(self.tmp, "inventory.json")
        with open(inventory, "w") as f:
            json.dump({"rtpart": {"hosts": hosts}}, f)
        home = os.path.join(self.tmp, "ansible")
        p = subprocess.run([PLAYBOOK_BIN, "-i", inventory, ROLLOUT] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=ansible_env(home), timeout=300,
                           stdin=subprocess.DEVNULL)
        try:
            stats, results = report(p)
        except ValueError:
            self.fail(f"ansible-playbook printed no JSON report (status {p.returncode}): {p.stdout}{p.stderr}")
        return p.returncode, stats, results

    def test_syntax(self):
        home = os.path.join(self.tmp, "ansible")
        for book in (ROLLOUT, os.path.join(ANSIBLE, "rtpart.yml")):
            p = subprocess.run([PLAYBOOK_BIN, "--syntax-check", "-i", "localhost,", book], capture_output=True,
                               text=True, env=ansible_env(home))
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        lint = shutil.which("ansible-lint")
        if lint:
            p = subprocess.run([lint, ROLLOUT, os.path.join(ANSIBLE, "roles", "rtpart")], capture_output=True,
                               text=True, cwd=ANSIBLE, env=ansible_env(home))
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        else:
            print("ansible-lint is not installed: only --syntax-check", file=sys.stderr)

    def test_rollout_then_nothing(self):
        root = self.host("h1")
        rc, stats, res = self.play({"h1": self.hostvars(root)})
        self.assertEqual(rc, 0, res)
        t = res["h1"]
        # The profile directory made, the profile deployed, the profile applied.
        self.assertEqual((stats["h1"]["changed"], stats["h1"]["failures"]), (3, 0), stats)
        self.assertIs(t[T + "Deploy the profiles"]["changed"], True)
        with open(os.path.join(root, "etc", "rtpart", "profiles", "fleet.json")) as f:
            self.assertEqual(json.load(f), PROFILE)
        self.assertIs(t[T + "Plan the profile"]["changed"], False)
        self.assertIn("knob(s)", " ".join(t[T + "Say what applying the profile changes"]["msg"]))
        self.assertIs(t[T + "Apply the profile"]["changed"], True)
        self.assertEqual(t[T + "Verify the host against the profile"]["rc"], 4)
        self.assertIs(t[T + "Reboot for the boot arguments"].get("skipped"), True)
        self.assertIn("a reboot is needed for boot/", t[T + "Say that boot arguments wait for a reboot"]["msg"])
        checked = t[T + "Check the host against the profile's limits"]
        self.assertEqual((checked["rc"], checked["cmd"][-1]), (0, "status"))
        self.assertIs(t[T + "Fail on drift or on boot arguments a reboot did not bring"].get("skipped"), True)

        rc, stats, res = self.play({"h1": self.hostvars(root)})
        self.assertEqual(rc, 0, res)
        self.assertEqual((stats["h1"]["changed"], stats["h1"]["failures"]), (0, 0), stats)
        self.assertIs(res["h1"][T + "Apply the profile"]["changed"], False)

    def test_check_mode_plans_and_writes_nothing(self):
        root = self.host("h1")
        before = tree_digest(root)
        # The profile not deployed yet: the copy would change, the plan cannot be made, nothing fails.
        rc, stats, res = self.play({"h1": self.hostvars(root)}, "--check")
        self.assertEqual(rc, 0, res)
        self.assertIs(res["h1"][T + "Deploy the profiles"]["changed"], True)
        self.assertEqual(tree_digest(root), before)
        # Deployed: the plan is "changed" and names the knobs; apply, verify, reboot, check skipped.
        os.makedirs(os.path.join(root, "etc", "rtpart", "profiles"))
        shutil.copy(self.profile, os.path.join(root, "etc", "rtpart", "profiles"))
        before = tree_digest(root)
        rc, stats, res = self.play({"h1": self.hostvars(root)}, "--check")
        self.assertEqual(rc, 0, res)
        t = res["h1"]
        self.assertEqual((stats["h1"]["changed"], stats["h1"]["failures"]), (1, 0), stats)
        self.assertIs(t[T + "Plan the profile"]["changed"], True)
        self.assertIn("boot/isolcpus", t[T + "Say what applying the profile changes"]["msg"])
        for task in ("Apply the profile", "Verify the host against the profile", "Reboot for the boot arguments",
                     "Check the host against the profile's limits"):
            self.assertIs(t[T + task].get("skipped"), True, task)
        self.assertEqual(tree_digest(root), before)

    def test_drift_fails_naming_the_knob(self):
        root = self.host("h1")
        rc, _, res = self.play({"h1": self.hostvars(root)})
        self.assertEqual(rc, 0, res)
        with open(os.path.join(root, "proc", "sys", "kernel", "timer_migration"), "w") as f:
            f.write("1\n")
        rc, stats, res = self.play({"h1": self.hostvars(root, rtpart_apply=False)})
        self.assertNotEqual(rc, 0)
        self.assertEqual((stats["h1"]["changed"], stats["h1"]["failures"]), (0, 1), stats)
        self.assertEqual(res["h1"][T + "Verify the host against the profile"]["rc"], 3)
        msg = res["h1"][T + "Fail on drift or on boot arguments a reboot did not bring"]["msg"]
        self.assertIn("is not as fleet says: sysctl/kernel.timer_migration expected 0, found 1; run rtpartctl apply", msg)
        self.assertNotIn(T + "Check the host against the profile's limits", res["h1"])

    def test_failed_batch_stops_the_rollout(self):
        roots = {h: self.host(h) for h in ("h1", "h2", "h3")}
        hosts = {h: self.hostvars(r) for h, r in roots.items()}
        # The simulator has neither timerlat nor cyclictest: check latency exits 1 on h2.
        hosts["h2"]["rtpart_check"] = ["check", "latency", "--seconds", "1"]
        before = tree_digest(roots["h3"])
        rc, stats, res = self.play(hosts)
        self.assertNotEqual(rc, 0)
        self.assertEqual(stats["h1"]["failures"], 0, stats)
        self.assertEqual(res["h1"][T + "Check the host against the profile's limits"]["rc"], 0)
        failed = res["h2"][T + "Check the host against the profile's limits"]
        self.assertEqual((failed["rc"], failed["failed"]), (1, True))
        self.assertEqual(stats["h2"]["failures"], 1, stats)
        self.assertNotIn("h3", res)
        self.assertEqual(tree_digest(roots["h3"]), before)

    def test_version_checked(self):
        root = self.host("h1")
        rc, stats, res = self.play({"h1": self.hostvars(root, rtpart_package="dpkg", rtpart_version="0.0-not")})
        self.assertNotEqual(rc, 0)
        msg = res["h1"][T + "Check the installed version of rtpart"]["msg"]
        self.assertRegex(msg, r"dpkg is \S+ on h1, not 0\.0-not")
        self.assertNotIn(T + "Apply the profile", res["h1"])


def main():
    """The tests of the calling module; 77 without ansible-playbook."""
    if not PLAYBOOK_BIN:
        print("SKIP: no ansible-playbook (Debian package ansible-core; scripts/deps --test)")
        sys.exit(77)
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
