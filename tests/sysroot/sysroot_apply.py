#!/usr/bin/env python3
"""Integration tests: the real rtpartctl binary on copies of the fake hosts.

apply → expected files; apply twice → no change; tamper → verify 3 naming the knob;
revert → byte-for-byte the original tree apart from the state directory; a write failing
midway → exit 1 and the original tree; SIGKILL after every single write of apply (and of
revert) → the next run rolls back to the original tree.

Run by meson (suite sysroot) with RTPARTCTL and RTPART_SOURCE_DIR set.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

# The sim build (the real program linked with the kernel simulator), as meson passes it.
CTL = os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "tests", "sim", "rtpartctl")
SRC = os.environ.get("RTPART_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HOSTS = os.environ.get("RTPART_HOSTS_DIR") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "tests", "fixtures", "hosts")
PROFILES = os.path.join(SRC, "profiles")
STATE = os.path.join("var", "lib", "rtpart")


def snapshot(root):
    """Every file, directory and symlink under root with its content and mode, except the journal."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel == STATE or rel.startswith(STATE + os.sep):
            continue
        for d in dirnames:
            p = os.path.join(dirpath, d)
            r = os.path.relpath(p, root)
            if r == STATE:
                continue
            out[r] = ("link", os.readlink(p)) if os.path.islink(p) else ("dir", os.lstat(p).st_mode)
        for f in filenames:
            p = os.path.join(dirpath, f)
            r = os.path.relpath(p, root)
            if os.path.islink(p):
                out[r] = ("link", os.readlink(p))
            else:
                with open(p, "rb") as fh:
                    out[r] = ("file", os.lstat(p).st_mode, hashlib.sha256(fh.read()).hexdigest())
    return out


def diff(a, b):
    keys = sorted(set(a) | set(b))
    return [k for k in keys if a.get(k) != b.get(k)]


def install_profiles(root):
    d = os.path.join(root, "usr", "share", "rtpart", "profiles")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(PROFILES):
        if f.endswith(".json"):
            shutil.copy(os.path.join(PROFILES, f), d)


def copy_host(name, root, profiles=True):
    """A copy of the fixture host name at root, its files' modes kept (the build gave the bundled
    hosts those of tests/fixtures/modes) and, with profiles, the shipped profiles installed in it."""
    shutil.copytree(os.path.join(HOSTS, name), root, symlinks=True)
    if profiles:
        install_profiles(root)


class Host:
    def __init__(self, name):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-it-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self.root = os.path.join(self.tmp, "root")
        copy_host(name, self.root)

    def run(self, *args, env=None, json_out=False):
        e = dict(os.environ)
        e.pop("RTPART_TEST_CRASH_AFTER", None)
        if env:
            e.update(env)
        cmd = [CTL, "--root", self.root] + (["--json"] if json_out else []) + list(args)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, text=True, timeout=300)
        return p

    def read(self, rel):
        with open(os.path.join(self.root, rel)) as f:
            return f.read()

    def write(self, rel, text):
        with open(os.path.join(self.root, rel), "w") as f:
            f.write(text)

    def state(self):
        with open(os.path.join(self.root, STATE, "state.json")) as f:
            return json.load(f)

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def expand_also(entries, key="knob"):
    """The entries of a journal's "applied" list (or "steps") one per knob: an entry with "also"
    stands for itself and one more per number in it, with that number in place of the first
    number of its knob id, there and in its path (lib/journal/journal.c)."""
    out = []
    for e in entries:
        out.append(e)
        if "also" not in e:
            continue
        num = re.search(r"[0-9]+", e[key]).group(0)

        def sub(s, m):
            return None if s is None else re.sub(r"[0-9]+", lambda d: m if d.group(0) == num else d.group(0), s)
        for part in e["also"].split(","):
            a, _, b = part.partition("-")
            for m in range(int(a), int(b or a) + 1):
                out.append(dict(e, **{key: sub(e[key], str(m)), "path": sub(e["path"], str(m))}))
    return out


JOURNALS = os.path.join(SRC, "tests", "fixtures", "journals")


def have_fixtures():
    return all(os.path.isdir(os.path.join(HOSTS, h)) for h in ("intel-2s", "epyc", "vm"))


@unittest.skipUnless(have_fixtures(), "fixture hosts missing")
class ApplyVerifyRevert(unittest.TestCase):
    def setUp(self):
        self.hosts = []

    def tearDown(self):
        for h in self.hosts:
            h.close()

    def host(self, name):
        h = Host(name)
        self.hosts.append(h)
        return h

    def cycle(self, name, profile):
        h = self.host(name)
        before = snapshot(h.root)

        p = h.run("apply", profile)
        self.assertEqual(p.returncode, 0, p.stderr)
        after = snapshot(h.root)
        self.assertTrue(diff(before, after), "apply changed nothing")

        p = h.run("apply", profile)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("already applied", p.stdout)
        self.assertEqual(diff(after, snapshot(h.root)), [], "a second apply changed files")

        p = h.run("verify", json_out=True)
        self.assertIn(p.returncode, (0, 4), p.stdout + p.stderr)
        v = json.loads(p.stdout)
        self.assertTrue(v["in_sync"])
        self.assertEqual(v["profile"], profile)
        self.assertEqual(v["drift"], [])
        self.assertEqual(p.returncode == 4, v["reboot_required"])

        p = h.run("revert")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(diff(before, snapshot(h.root)), [], "revert did not restore the original tree")
        p = h.run("verify", json_out=True)
        self.assertEqual(p.returncode, 0)
        self.assertIsNone(json.loads(p.stdout)["profile"])
        return h

    def test_cycle_every_profile_every_host(self):
        for name in ("intel-2s", "epyc", "vm"):
            for profile in ("realtime", "realtime-virtual-host", "realtime-virtual-guest", "cpu-partitioning"):
                with self.subTest(host=name, profile=profile):
                    self.cycle(name, profile)

    def test_apply_sets_expected_values(self):
        h = self.host("intel-2s")
        p = h.run("apply", "realtime-virtual-host")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(h.read("proc/sys/kernel/timer_migration").strip(), "0")
        self.assertEqual(h.read("proc/sys/kernel/sched_rt_runtime_us").strip(), "-1")
        # every movable IRQ on the housekeeping CPUs of the default split
        st = h.state()
        irqs = [a for a in expand_also(st["applied"]) if a["knob"].startswith("irq/") and
                a["knob"] != "irq/default_affinity"]
        self.assertGreater(len(irqs), 50)
        for a in irqs:
            self.assertEqual(a["desired"], "0,8,16,24", a)
            self.assertEqual(h.read(a["path"]).strip(), "0,8,16,24")
        dropin = h.read("etc/default/grub.d/rtpart.cfg")
        self.assertIn("isolcpus=managed_irq,domain,1-7,9-15,17-23,25-31", dropin)
        self.assertIn("nohz_full=1-7,9-15,17-23,25-31", dropin)
        self.assertIn("irqaffinity=0,8,16,24", dropin)
        self.assertIn('IRQBALANCE_BANNED_CPULIST="1-7,9-15,17-23,25-31"', h.read("etc/default/irqbalance"))
        self.assertEqual(h.read("sys/kernel/mm/transparent_hugepage/enabled").strip(), "always madvise [never]")
        p = h.run("verify")
        self.assertEqual(p.returncode, 4, p.stdout)  # boot arguments wait for a reboot
        self.assertIn("reboot pending", p.stdout)

    def test_tamper_is_drift(self):
        h = self.host("intel-2s")
        self.assertEqual(h.run("apply", "realtime").returncode, 0)
        h.write("proc/sys/vm/swappiness", "60\n")
        h.write("proc/irq/default_smp_affinity", "ffffffff\n")
        p = h.run("verify", json_out=True)
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        v = json.loads(p.stdout)
        self.assertFalse(v["in_sync"])
        got = {d["knob"]: d for d in v["drift"]}
        self.assertEqual(set(got), {"sysctl/vm.swappiness", "irq/default_affinity"})
        self.assertEqual(got["sysctl/vm.swappiness"], {"knob": "sysctl/vm.swappiness", "domain": "sysctl",
                                                       "expected": "10", "actual": "60"})
        p = h.run("verify")
        self.assertEqual(p.returncode, 3)
        self.assertIn("sysctl/vm.swappiness", p.stdout)
        # semantically equal values are not drift
        h.write("proc/sys/vm/swappiness", " 10 \n")
        h.write("proc/irq/default_smp_affinity", "01010101\n")
        self.assertIn(h.run("verify").returncode, (0, 4))

    def test_journal_grows_with_kinds_of_change(self):
        # Knobs alike but for their number (every IRQ placed on the same CPUs, every CPU's
        # governor) are one entry with "also": version 1 wrote each in full, as original and as
        # applied (84796 bytes here).
        h = self.host("intel-2s")
        self.assertEqual(h.run("apply", "realtime-virtual-host").returncode, 0)
        st = h.state()
        self.assertEqual(st["version"], 2)
        size = os.path.getsize(os.path.join(h.root, STATE, "state.json"))
        self.assertLess(size, 40000)
        applied = expand_also(st["applied"])
        irqs = [a for a in applied if re.match(r"irq/[0-9]+/affinity$", a["knob"])]
        self.assertGreater(len(irqs), 50)
        self.assertLess(len([a for a in st["applied"] if a["knob"].startswith("irq/")]), 5)
        for a in irqs:
            n = a["knob"].split("/")[1]
            self.assertEqual(a["path"], f"proc/irq/{n}/smp_affinity_list")
            self.assertEqual(h.read(a["path"]).strip(), a["desired"])
        self.assertEqual(h.run("verify").returncode, 4)
        self.assertEqual(h.run("revert").returncode, 0)

    def test_journal_of_version_1(self):
        # A journal written by rtpart before version 2 (tests/fixtures/journals: realtime-virtual-
        # host applied to intel-2s) still verifies and reverts: every original put back.
        h = self.host("intel-2s")
        before = snapshot(h.root)
        self.assertEqual(h.run("apply", "realtime-virtual-host").returncode, 0)
        with open(os.path.join(JOURNALS, "intel-2s-realtime-virtual-host.v1.json")) as f:
            old = f.read()
        self.assertEqual(json.loads(old)["version"], 1)
        h.write(os.path.join(STATE, "state.json"), old)
        p = h.run("verify")
        self.assertEqual(p.returncode, 4, p.stdout + p.stderr)
        p = h.run("revert")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(diff(before, snapshot(h.root)), [])
        st = h.state()
        self.assertEqual((st["version"], st["originals"], st["applied"]), (2, {}, []))

    @unittest.skipUnless(shutil.which("strace"), "strace is not installed")
    def test_journal_commits_twice(self):
        # Apply and revert of knobs that live in kernel files only: the journal's two commits
        # (intent, done), each the temp file's fsync(2) before its rename and the directory's
        # after, and no other sync.
        h = self.host("vm")
        prof = os.path.join(h.tmp, "sysctl-only.json")
        with open(prof, "w") as f:
            json.dump({"summary": "two sysctls", "sysctl": {"vm.swappiness": 7, "vm.stat_interval": 9}}, f)
        for args in (["apply", prof], ["revert"]):
            log = os.path.join(h.tmp, "strace.log")
            cmd = ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync,sync,syncfs", "-o", log, CTL, "--root", h.root]
            p = subprocess.run(cmd + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
            if p.returncode != 0 and "ptrace" in p.stderr:
                self.skipTest(f"strace cannot trace here: {p.stderr.strip()[:200]}")
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(log) as f:
                syncs = [line for line in f if "sync" in line and "resumed" not in line]
            self.assertEqual(len(syncs), 4, f"{args[0]}: {syncs}")

    @unittest.skipUnless(shutil.which("strace"), "strace is not installed")
    def test_unwritable_knobs_are_not_journalled(self):
        # Kernel threads under a tree: their backend cannot write them here, and apply knows it
        # before it writes anything. So they get no step and no original: nothing changes, and the
        # journal is committed once (the profile applied), not as an intent of one step per thread
        # and then a second commit to say each was skipped.
        h = self.host("intel-2s")
        prof = os.path.join(h.tmp, "kthreads-only.json")
        with open(prof, "w") as f:
            json.dump({"summary": "kthread priorities", "cpus": {"isolated": "1-7"},
                       "kthreads": {"rules": [{"match": "ksoftirqd/*", "policy": "fifo", "priority": 2}]}}, f)
        log = os.path.join(h.tmp, "strace.log")
        cmd = ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync,sync,syncfs", "-o", log, CTL, "--root", h.root]
        p = subprocess.run(cmd + ["apply", prof], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=300)
        if p.returncode != 0 and "ptrace" in p.stderr:
            self.skipTest(f"strace cannot trace here: {p.stderr.strip()[:200]}")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"\d+ knobs left as they are and not recorded as applied: \d+ kthread knobs "
                                   r"\(thread scheduling needs the real host\)")
        with open(log) as f:
            syncs = [line for line in f if "sync" in line and "resumed" not in line]
        self.assertEqual(len(syncs), 2, syncs)
        st = h.state()
        self.assertEqual((st["originals"], st["applied"]), ({}, []))

    def test_failure_midway_restores_everything(self):
        h = self.host("intel-2s")
        before = snapshot(h.root)
        # A sysctl the profile writes late is replaced by a directory: its write fails with EISDIR
        target = os.path.join(h.root, "proc/sys/vm/stat_interval")
        os.unlink(target)
        os.mkdir(target)
        before = snapshot(h.root)
        p = h.run("apply", "realtime-virtual-host")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("sysctl/vm.stat_interval", p.stderr)
        self.assertIn("proc/sys/vm/stat_interval", p.stderr)
        self.assertIn("undone", p.stderr)
        self.assertEqual(diff(before, snapshot(h.root)), [], "a failed apply left changes behind")
        st = h.state()
        self.assertIsNone(st["transaction"])
        self.assertIsNone(st["profile"])
        self.assertEqual(st["last_error"]["knob"], "sysctl/vm.stat_interval")
        self.assertEqual(st["originals"], {})

    def test_crash_at_every_step(self):
        probe = self.host("vm")
        before = snapshot(probe.root)  # a fresh copy of the vm host, the same for every point
        p = probe.run("apply", "realtime-virtual-host", json_out=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        changes = json.loads(p.stdout)["changed"]
        self.assertGreater(changes, 5)
        applied = snapshot(probe.root)
        # The simulator crashes after the Nth write to the tree (a value, a cgroup, a resctrl
        # group, a configuration file, the journal): every knob write is one or more of them.
        # Crash at every one, until the apply runs past the last. A point that left the tree the
        # original (rolled back, or killed before it changed anything) hands it to the next point
        # without its journal, as a fresh copy would be; any other gets a fresh copy.
        h = None
        try:
            for n in range(1, 10 * changes):
                reusable = False
                with self.subTest(crash_after=n):
                    if h is None:
                        h = Host("vm")
                    shutil.rmtree(os.path.join(h.root, STATE), ignore_errors=True)
                    t = h
                    p = t.run("apply", "realtime-virtual-host", env={"RTPART_TEST_CRASH_AFTER": str(n)})
                    if p.returncode == 0:
                        self.assertGreater(n, changes, "fewer crash points than knobs written")
                        return
                    self.assertEqual(p.returncode, -9, p.stdout + p.stderr)
                    path = os.path.join(t.root, STATE, "state.json")
                    st = t.state() if os.path.exists(path) else None
                    p = t.run("status")  # any next run rolls back first
                    self.assertEqual(p.returncode, 0, p.stderr)
                    if st and st["transaction"] is not None:
                        self.assertIn("rolled back", p.stderr)
                        self.assertIsNone(t.state()["transaction"])
                        self.assertEqual(diff(before, snapshot(t.root)), [])
                        reusable = True
                    elif st and st["profile"]:
                        # killed after its commit, the journal's last write: the apply is done
                        self.assertIn("realtime-virtual-host", p.stdout)
                        self.assertEqual(diff(applied, snapshot(t.root)), [])
                    else:
                        # killed before the journal held the transaction: nothing was changed
                        self.assertEqual(diff(before, snapshot(t.root)), [])
                        reusable = True
                if not reusable and h:
                    h.close()
                    h = None
        finally:
            if h:
                h.close()
        self.fail("the apply never ran past its last change")

    def test_crash_during_revert(self):
        h = self.host("vm")
        before = snapshot(h.root)
        self.assertEqual(h.run("apply", "realtime").returncode, 0)
        applied = snapshot(h.root)
        p = h.run("revert", env={"RTPART_TEST_CRASH_AFTER": "3"})
        self.assertEqual(p.returncode, -9)
        # the interrupted revert is rolled back: the host is tuned as before the revert …
        p = h.run("verify")
        self.assertIn(p.returncode, (0, 4), p.stdout + p.stderr)
        self.assertEqual(diff(applied, snapshot(h.root)), [])
        # … and a full revert then restores the original
        self.assertEqual(h.run("revert").returncode, 0)
        self.assertEqual(diff(before, snapshot(h.root)), [])

    def test_json_says_whether_the_host_changed(self):
        h = self.host("vm")
        before = snapshot(h.root)
        p = h.run("apply", "realtime", json_out=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertIs(doc["host_changed"], True)
        self.assertGreater(doc["changed"], 0)
        after = snapshot(h.root)
        p = h.run("apply", "realtime", json_out=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual((doc["host_changed"], doc["changed"], doc["restored"]), (False, 0, 0))
        self.assertEqual(diff(after, snapshot(h.root)), [])
        # Another profile: knobs written, others given back.
        doc = json.loads(h.run("apply", "cpu-partitioning", json_out=True).stdout)
        self.assertIs(doc["host_changed"], True)
        self.assertEqual(h.run("revert").returncode, 0)
        self.assertEqual(diff(before, snapshot(h.root)), [])

    def test_switch_profiles_keeps_first_originals(self):
        h = self.host("intel-2s")
        before = snapshot(h.root)
        self.assertEqual(h.run("apply", "realtime-virtual-host").returncode, 0)
        self.assertEqual(h.run("apply", "cpu-partitioning").returncode, 0)
        st = h.state()
        self.assertEqual(st["profile"], "cpu-partitioning")
        self.assertEqual(st["originals"]["sysctl/kernel.timer_migration"]["value"], "1")
        # sched_rt_runtime_us belongs to the realtime family only: switching restored it
        self.assertEqual(h.read("proc/sys/kernel/sched_rt_runtime_us").strip(), "950000")
        self.assertEqual(h.run("revert").returncode, 0)
        self.assertEqual(diff(before, snapshot(h.root)), [])

    def test_bad_profile_changes_nothing(self):
        h = self.host("intel-2s")
        before = snapshot(h.root)
        bad = os.path.join(h.tmp, "lab.json")
        with open(bad, "w") as f:
            f.write('{"include": "realtime", "irq": {"rules": [{"match": "eth*", "cpus": "64"}]}}')
        p = h.run("apply", bad)
        self.assertEqual(p.returncode, 2)
        self.assertIn("lab.json: /irq/rules/0/cpus: CPU 64 does not exist (online: 0-31)", p.stderr)
        self.assertEqual(diff(before, snapshot(h.root)), [])
        self.assertFalse(os.path.exists(os.path.join(h.root, STATE, "state.json")))

        # Files that are no profile: exit 2 at once, naming the file.
        fifo = os.path.join(h.tmp, "fifo.json")
        os.mkfifo(fifo)
        for path, why in ((fifo, "not a regular file (a FIFO)"), (h.tmp, "not a regular file (a directory)"),
                          ("/dev/zero", "not a regular file (a character device)")):
            p = h.run("apply", path)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(f"{path}: {why}", p.stderr)
        self.assertEqual(diff(before, snapshot(h.root)), [])

    @unittest.skipUnless(os.geteuid() == 0, "root refuses a profile another user owns; as a user, every profile "
                         "is one's own to apply (and chown to another uid needs root)")
    def test_foreign_profile_refused_to_root(self):
        # A profile not one root may apply: exit 2 at once, naming the file.
        h = self.host("vm")
        before = snapshot(h.root)
        theirs = os.path.join(h.tmp, "theirs.json")
        with open(theirs, "w") as f:
            f.write('{"include": "realtime"}')
        os.chown(theirs, 65534, 65534)
        p = h.run("apply", theirs)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(f"{theirs}: owned by uid 65534, not by root", p.stderr)
        self.assertEqual(diff(before, snapshot(h.root)), [])

    def test_boot_arg_injection_refused(self):
        # A boot argument value is restated in etc/default/grub.d/rtpart.cfg, which grub-mkconfig
        # sources as root: shell syntax in it is refused before anything is written.
        h = self.host("intel-2s")
        before = snapshot(h.root)
        grub_d = sorted(os.listdir(os.path.join(h.root, "etc", "default", "grub.d")))
        bad = os.path.join(h.tmp, "lab.json")
        with open(bad, "w") as f:
            f.write('{"boot": {"args": {"x": "$(id>/tmp/pwned)"}}}')
        for verb in ("plan", "apply"):
            with self.subTest(verb=verb):
                p = h.run(verb, bad)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn("lab.json: /boot/args/x: value \"$(id>/tmp/pwned)\" has '$'", p.stderr)
                self.assertIn("kernel parameter values use letters, digits and _.,:=/+@%-", p.stderr)
        self.assertEqual(diff(before, snapshot(h.root)), [])
        self.assertEqual(sorted(os.listdir(os.path.join(h.root, "etc", "default", "grub.d"))), grub_d)
        self.assertFalse(os.path.exists(os.path.join(h.root, "etc", "default", "grub.d", "rtpart.cfg")))
        self.assertFalse(os.path.exists(os.path.join(h.root, STATE, "state.json")))



ENTRIES = os.path.join("boot", "loader", "entries")
OTHER_KVER = "6.1.0-29-rt-amd64"


@unittest.skipUnless(have_fixtures(), "fixture hosts missing")
class BootEntries(unittest.TestCase):
    """Boot arguments live in every BLS entry: each entry's own arguments come back, byte for byte."""

    def setUp(self):
        self.hosts = []

    def tearDown(self):
        for h in self.hosts:
            h.close()

    def host(self, extra_options="isolcpus=3 mitigations=off", grub=False, kernel_cmdline=False):
        """epyc (systemd-boot) with a second entry, not the running kernel's, carrying its own arguments."""
        h = Host("epyc")
        self.hosts.append(h)
        d = os.path.join(h.root, ENTRIES)
        (running,) = os.listdir(d)
        self.running = os.path.join(ENTRIES, running)
        kver = h.read("proc/sys/kernel/osrelease").strip()
        text = h.read(self.running).replace(kver, OTHER_KVER).replace(" ro quiet\n", " ro quiet %s\n" % extra_options)
        self.other = os.path.join(ENTRIES, running.replace(kver, OTHER_KVER))
        h.write(self.other, text)
        if grub:  # Fedora's layout: GRUB reads the BLS entries (blscfg)
            h.write("etc/default/grub", 'GRUB_CMDLINE_LINUX="rhgb quiet"\nGRUB_ENABLE_BLSCFG=true\n')
        if kernel_cmdline:
            h.write("etc/kernel/cmdline", "root=UUID=9b7e3c2a-41d5-4f60-a8e1-6d2c0f9b8a37 ro quiet nosmt\n")
        return h

    def options(self, h, rel):
        return [l for l in h.read(rel).splitlines() if l.startswith("options")][0].split()[1:]

    def test_revert_restores_every_entry(self):
        for layout in ({}, {"grub": True}, {"kernel_cmdline": True}):
            with self.subTest(**layout):
                h = self.host(**layout)
                before = snapshot(h.root)
                p = h.run("apply", "realtime")
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertIn("isolcpus=managed_irq,domain,", " ".join(self.options(h, self.other)))
                self.assertIn("mitigations=off", self.options(h, self.other))
                p = h.run("revert")
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertEqual(self.options(h, self.other)[-2:], ["isolcpus=3", "mitigations=off"])
                self.assertEqual(diff(before, snapshot(h.root)), [], "revert did not restore every entry")

    def test_switch_profiles_restores_each_entry(self):
        # cpu-partitioning sets no isolcpus: switching to it gives each entry its own back.
        h = self.host()
        before = snapshot(h.root)
        self.assertEqual(h.run("apply", "realtime-virtual-host").returncode, 0)
        self.assertEqual(h.run("apply", "cpu-partitioning").returncode, 0)
        self.assertIn("isolcpus=3", self.options(h, self.other))
        self.assertNotIn("isolcpus", h.read(self.running))
        self.assertEqual(h.run("revert").returncode, 0)
        self.assertEqual(diff(before, snapshot(h.root)), [])

    def test_journal_has_each_entry_original(self):
        h = self.host()
        self.assertEqual(h.run("apply", "realtime").returncode, 0)
        o = h.state()["originals"]["boot/isolcpus"]
        self.assertIsNone(o["value"])  # the running kernel's entry, as plan shows it
        self.assertEqual(o["files"], {self.running: None, self.other: "3"})

    def test_failed_apply_restores_every_entry(self):
        h = self.host()
        # A sysctl the profile writes after the boot arguments fails with EISDIR: the rollback puts
        # each entry's own value back.
        target = os.path.join(h.root, "proc/sys/vm/stat_interval")
        os.unlink(target)
        os.mkdir(target)
        before = snapshot(h.root)
        p = h.run("apply", "realtime")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(diff(before, snapshot(h.root)), [], "a failed apply changed an entry")

    def test_entry_added_after_apply(self):
        h = self.host()
        before = snapshot(h.root)
        self.assertEqual(h.run("apply", "realtime").returncode, 0)
        # A kernel installed after apply: kernel-install copies the configured arguments (rtpart's)
        # into its entry; another entry the user wrote with an isolcpus of their own.
        inherited = os.path.join(ENTRIES, "new-6.1.0-31-rt-amd64.conf")
        h.write(inherited, h.read(self.running))
        own = os.path.join(ENTRIES, "own-6.1.0-31-rt-amd64.conf")
        h.write(own, "title own\noptions root=/dev/sda1 isolcpus=5\nlinux /vmlinuz\n")
        p = h.run("revert")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.options(h, inherited), self.options(h, self.running))
        self.assertEqual(h.read(own), "title own\noptions root=/dev/sda1 isolcpus=5\nlinux /vmlinuz\n")
        os.unlink(os.path.join(h.root, inherited))
        os.unlink(os.path.join(h.root, own))
        self.assertEqual(diff(before, snapshot(h.root)), [])

    def test_entry_added_then_another_apply(self):
        # The entry of a kernel installed after the first apply holds rtpart's value; a second apply
        # that changes the argument records the entry's original as the running entry's, not as
        # rtpart's first value.
        h = self.host()
        profiles = {}
        for name, value in (("p1", "5"), ("p2", "6")):
            profiles[name] = os.path.join(h.tmp, name + ".json")
            with open(profiles[name], "w") as f:
                json.dump({"boot": {"args": {"isolcpus": value}}}, f)
        self.assertEqual(h.run("apply", profiles["p1"]).returncode, 0)
        inherited = os.path.join(ENTRIES, "new-6.1.0-31-rt-amd64.conf")
        h.write(inherited, h.read(self.running))
        self.assertIn("isolcpus=5", self.options(h, inherited))
        self.assertEqual(h.run("apply", profiles["p2"]).returncode, 0)
        self.assertIn("isolcpus=6", self.options(h, inherited))
        self.assertEqual(h.state()["originals"]["boot/isolcpus"]["files"][inherited], None)
        self.assertEqual(h.run("revert").returncode, 0)
        self.assertNotIn("isolcpus", h.read(inherited))
        self.assertEqual(self.options(h, self.other)[-2:], ["isolcpus=3", "mitigations=off"])

    def test_entry_removed_after_apply(self):
        h = self.host()
        before = snapshot(h.root)
        self.assertEqual(h.run("apply", "realtime").returncode, 0)
        os.unlink(os.path.join(h.root, self.other))
        p = h.run("revert")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        del before[self.other]
        self.assertEqual(diff(before, snapshot(h.root)), [])

    def test_journal_without_entry_originals(self):
        # A journal written before originals were kept per entry: revert still loads it and writes
        # the one original to every entry, as rtpart did then.
        h = self.host()
        self.assertEqual(h.run("apply", "realtime").returncode, 0)
        st = h.state()
        for o in st["originals"].values():
            o.pop("files", None)
        h.write(os.path.join(STATE, "state.json"), json.dumps(st))
        p = h.run("revert")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.options(h, self.other)[-1:], ["mitigations=off"])
        self.assertNotIn("isolcpus", h.read(self.running))



@unittest.skipUnless(have_fixtures(), "fixture hosts missing")
class Messages(unittest.TestCase):
    """What apply and status say names what they count (issue 11.10)."""

    def setUp(self):
        self.h = Host("intel-2s")

    def tearDown(self):
        self.h.close()

    def test_immutable_state_dir_is_not_called_a_lack_of_root(self):
        # Issue 11.9: root was told "run as root" when the state directory refused it.
        if os.geteuid() != 0:
            self.skipTest("needs root (chattr)")
        tmp = tempfile.mkdtemp(prefix="rtpart-it-", dir="/var/tmp")
        root = os.path.join(tmp, "root")
        state = os.path.join(root, STATE)
        try:
            # Killed right after the journal holds the transaction (its first rename of state.json,
            # found in the simulator's write log of the same apply on a copy).
            scratch, log = os.path.join(tmp, "scratch"), os.path.join(tmp, "writes.log")
            shutil.copytree(self.h.root, scratch, symlinks=True)
            subprocess.run([CTL, "--root", scratch, "apply", "realtime"], env=dict(os.environ, RTPART_TEST_WRITE_LOG=log),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
            with open(log) as f:
                k = next(line.split()[0] for line in f
                         if line.split()[1] == "replace" and line.split()[2].endswith("state.json"))
            shutil.copytree(self.h.root, root, symlinks=True)
            p = subprocess.run([CTL, "--root", root, "apply", "realtime"], env=dict(os.environ, RTPART_TEST_CRASH_AFTER=k),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
            self.assertEqual(p.returncode, -9, p.stderr)
            if subprocess.run(["chattr", "+i", state], stderr=subprocess.DEVNULL).returncode != 0:
                self.skipTest("chattr +i does not work on /var/tmp here")
            p = subprocess.run([CTL, "--root", root, "status"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=300)
            self.assertIn("could not be rolled back: Operation not permitted (even root may not write the state "
                          "directory: check its permissions, attributes and mount)", p.stderr)
            self.assertNotIn("run as root", p.stderr)
        finally:
            subprocess.run(["chattr", "-i", state], stderr=subprocess.DEVNULL)
            shutil.rmtree(tmp, ignore_errors=True)

    def test_reboot_names_boot_arguments_and_module_parameters(self):
        # realtime-virtual-host sets 11 kernel arguments and 2 KVM module parameters that this
        # host's kernel takes only at load (read-only in sysfs).
        p = self.h.run("apply", "realtime-virtual-host")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("A reboot is needed for 11 boot arguments and 2 module parameters to take effect.\n", p.stdout)
        p = self.h.run("status")
        self.assertIn("Reboot:      needed for 11 boot arguments and 2 module parameters\n", p.stdout)
        p = self.h.run("status", json_out=True)
        self.assertEqual(len(json.loads(p.stdout)["reboot_pending"]), 13)
        p = self.h.run("apply", "realtime-virtual-host", json_out=True)
        self.assertEqual(json.loads(p.stdout)["reboot_knobs"], [])

    def test_skipped_knobs_say_why_each(self):
        p = self.h.run("apply", "realtime-virtual-host")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        note = [l for l in p.stdout.splitlines() if "not recorded as applied" in l]
        self.assertEqual(len(note), 1, p.stdout)
        self.assertRegex(note[0], r"\d+ kthread knobs \(thread scheduling needs the real host\)")
        self.assertIn("1 cpu knob (this kernel has no /dev/cpu_dma_latency (CONFIG_CPU_IDLE off))", note[0])

    def test_pm_qos_needs_rtpartd(self):
        # With the device there, rtpartctl on its own still holds no PM QoS request: it would end
        # with the process.
        self.h.write("dev/cpu_dma_latency", "2000000000\n")
        p = self.h.run("apply", "realtime-virtual-host")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("1 cpu knob (a PM QoS request (cpu/pm_qos) lasts only while a process holds it open: "
                      "rtpartd holds it, so apply through rtpartd)", p.stdout)


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    # Everything skipped is a skip (77 for meson), never a pass.
    sys.exit(77 if result.skipped and len(result.skipped) >= result.testsRun else 0)
