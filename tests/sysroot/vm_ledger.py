#!/usr/bin/env python3
"""rtpartctl vm add / remove / list: the ledger of which VM holds which isolated CPUs, on the fake
hosts (intel-2s: two nodes with SMT, epyc, and the 1024-CPU big host of mkhost.py), on the host
directly and through rtpartd.

Every reservation is checked against the host's sysfs: its vCPU CPUs are isolated CPUs of the
applied profile, a core each (the sibling held idle and no other VM's), on one NUMA node when one
has room, disjoint from every other VM's; the emulator on housekeeping CPUs of its node, or an
isolated core of its own with --emulator isolate. When the isolated cores run out, vm add exits 2
naming how many are free on which nodes, and writes nothing; vm remove frees a VM's cores for the
next. Through rtpartd (its socket under the root): the same documents, the ledger kept across a
restart, and its refusals exit 2 too.

Run by meson (suite sysroot) with RTPARTCTL, RTPARTD and RTPART_SOURCE_DIR set.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import cpu_list  # noqa: E402
from sysroot_apply import copy_host, install_profiles  # noqa: E402

BUILD = os.environ.get("RTPART_BUILD_DIR", "build")
CTL = os.environ.get("RTPARTCTL") or os.path.join(BUILD, "tests", "sim", "rtpartctl")
DAEMON = os.environ.get("RTPARTD") or os.path.join(BUILD, "tests", "sim", "rtpartd")
SRC = os.environ.get("RTPART_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PROFILE = "realtime-virtual-host"


class Host:
    def __init__(self, name, make=False):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-vm-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self.root = os.path.join(self.tmp, "root")
        if make:  # the big host is made, not bundled
            subprocess.run([sys.executable, os.path.join(SRC, "tests", "fixtures", "mkhost.py"), name, self.root,
                            "-q"], check=True)
            install_profiles(self.root)
        else:
            copy_host(name, self.root)
        sysfs = os.path.join(self.root, "sys", "devices", "system")
        self.nodes = {}
        for d in os.listdir(os.path.join(sysfs, "node")) if os.path.isdir(os.path.join(sysfs, "node")) else []:
            if re.fullmatch(r"node\d+", d):
                with open(os.path.join(sysfs, "node", d, "cpulist")) as f:
                    self.nodes[int(d[4:])] = cpu_list(f.read())
        self.sysfs = sysfs

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def siblings(self, cpu):
        with open(os.path.join(self.sysfs, "cpu", "cpu%d" % cpu, "topology", "thread_siblings_list")) as f:
            return cpu_list(f.read())

    def node_of(self, cpu):
        return next((n for n, cpus in self.nodes.items() if cpu in cpus), 0)

    def run(self, *args, daemon=False):
        cmd = [CTL, "--root", self.root] + ([] if daemon else ["--no-daemon"]) + list(args)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        return p.returncode, p.stdout, p.stderr

    def ok(self, *args, daemon=False):
        rc, out, err = self.run(*args, daemon=daemon)
        if rc != 0:
            raise AssertionError(f"{args}: exit {rc}: {err}")
        return out

    def split(self):
        doc = json.loads(self.ok("show", PROFILE))
        return cpu_list(doc["cpus"]["isolated"]), cpu_list(doc["cpus"]["housekeeping"])

    def add(self, name, *opts, daemon=False):
        return json.loads(self.ok("--json", "vm", "add", name, *opts, daemon=daemon))

    def read_ledger(self):
        with open(os.path.join(self.root, "var", "lib", "rtpart", "ledger.json")) as f:
            return f.read()

    def ledger(self, daemon=False):
        return json.loads(self.ok("--json", "vm", "list", daemon=daemon))["vms"]


class Checks:
    def check_vm(self, h, vm, isolated, housekeeping, others):
        cpus = cpu_list(vm["cpus"])
        reserved = cpu_list(vm["reserved"])
        self.assertEqual(len(cpus), vm["vcpus"])
        self.assertTrue(cpus <= isolated, vm)
        self.assertTrue(cpus <= reserved, vm)
        # A core per vCPU: no two vCPUs on siblings, and each one's isolated siblings held.
        for c in cpus:
            sib = h.siblings(c) & isolated
            self.assertEqual(len(sib & cpus), 1, (c, vm))
            self.assertTrue(sib <= reserved, (c, vm))
        for o in others:
            self.assertFalse(reserved & cpu_list(o["reserved"]), (vm, o))
        nodes = {h.node_of(c) for c in cpus}
        self.assertEqual(cpu_list(vm["nodes"]), nodes)
        if vm["emulator_policy"] == "share":
            emu = cpu_list(vm["emulator"])
            self.assertTrue(emu and emu <= housekeeping, vm)
            self.assertEqual({h.node_of(c) for c in emu}, nodes, vm)


class TestLedgerDirect(unittest.TestCase, Checks):
    def fill(self, h):
        """VMs of 3 vCPUs until the cores run out: each checked, the last refused."""
        h.ok("apply", PROFILE)
        iso, hk = h.split()
        cores = {min(h.siblings(c) & iso) for c in iso}
        per_node = {n: len({c for c in cores if h.node_of(c) == n}) for n in (h.nodes or {0: None})}
        vms = []
        while True:
            free = len(cores) - sum(len(cpu_list(v["reserved"]) & cores) for v in vms)
            if free < 3:
                break
            held = set().union(*[cpu_list(v["reserved"]) for v in vms]) if vms else set()
            vm = h.add("vm%d" % len(vms), "--vcpus", "3")
            self.check_vm(h, vm, iso, hk, vms)
            # On one node whenever one had room for it: the lowest-numbered such.
            room = [n for n in sorted(per_node) if len({c for c in cores - held if h.node_of(c) == n}) >= 3]
            if room:
                self.assertEqual(vm["nodes"], str(room[0]), vm)
            vms.append(vm)
        before = h.read_ledger()
        rc, out, err = h.run("vm", "add", "full", "--vcpus", "3")
        self.assertEqual(rc, 2, err)
        self.assertRegex(err, r"need 3 free isolated cores.*; %d are free \(" % free)
        self.assertEqual(h.read_ledger(), before)
        self.assertEqual(len(h.ledger()), len(vms))
        # Removing one frees its cores: the same 3 vCPUs fit again, on them.
        out = h.ok("vm", "remove", vms[0]["name"])
        self.assertIn("Removed " + vms[0]["name"], out)
        again = h.add("again", "--vcpus", "3")
        self.assertEqual(again["cpus"], vms[0]["cpus"])
        return vms

    def test_intel_2s(self):
        h = Host("intel-2s")
        try:
            self.assertEqual(len(self.fill(h)), 4)  # 7 cores a node: 2 VMs each, then 1 + 1 left
        finally:
            h.close()

    def test_epyc(self):
        h = Host("epyc")
        try:
            self.fill(h)
        finally:
            h.close()

    def test_big(self):
        h = Host("big", make=True)
        try:
            h.ok("apply", PROFILE)
            iso, hk = h.split()
            vms = []
            for i, opts in enumerate([("--vcpus", "63"), ("--vcpus", "8", "--node", "7"),
                                      ("--vcpus", "4", "--emulator", "isolate"), ("--vcpus", "100")]):
                vm = h.add("big%d" % i, *opts)
                self.check_vm(h, vm, iso, hk, vms)
                vms.append(vm)
            self.assertEqual(vms[0]["nodes"], "0")
            self.assertEqual(vms[1]["nodes"], "7")
            self.assertEqual(len(cpu_list(vms[2]["emulator"]) & iso), 2)  # an isolated core, both siblings
            self.assertGreater(len(cpu_list(vms[3]["nodes"])), 1)  # no node has 100 cores: spread
            rc, _, err = h.run("vm", "add", "x", "--vcpus", "70", "--node", "7")
            self.assertEqual(rc, 2)
            self.assertIn("on node 7, which has", err)
        finally:
            h.close()

    def test_refusals(self):
        h = Host("vm")
        try:
            rc, _, err = h.run("vm", "add", "a", "--vcpus", "1")
            self.assertEqual(rc, 2)
            self.assertIn("no profile is applied", err)
            h.ok("apply", PROFILE)
            for args, fragment in [(("vm", "add", "a"), "needs --vcpus"),
                                   (("vm", "add", "a/b", "--vcpus", "1"), "is no VM name"),
                                   (("vm", "add", "a", "--vcpus", "1", "--node", "1"), "no NUMA node 1"),
                                   (("vm", "add", "a", "--vcpus", "1", "--emulator", "x"), "share or isolate"),
                                   (("vm", "add", "a", "--vcpus", "1", "--hugepages", "3X"), "no huge page size"),
                                   (("vm", "remove", "nope"), "no VM 'nope'"),
                                   (("vm", "list", "x"), "takes no NAME"),
                                   (("vm", "remove", "x", "--vcpus", "2"), "takes no --vcpus"),
                                   (("vm", "frob"), "add, remove or list")]:
                rc, _, err = h.run(*args)
                self.assertEqual(rc, 2, (args, err))
                self.assertIn(fragment, err, args)
            vm = h.add("a", "--vcpus", "3", "--hugepages", "2MB")
            self.assertEqual((vm["cpus"], vm["emulator"], vm["hugepages"]), ("1-3", "0", "2M"))
            rc, _, err = h.run("vm", "add", "a", "--vcpus", "1")
            self.assertIn("is in the ledger already", err)
        finally:
            h.close()


class TestLedgerDaemon(unittest.TestCase, Checks):
    def test_through_rtpartd(self):
        h = Host("intel-2s")
        log = open(os.path.join(h.tmp, "rtpartd.log"), "w+")
        sock = os.path.join(h.root, "run", "rtpartd", "org.rtpart.Manager")
        proc = None

        def start():
            p = subprocess.Popen([DAEMON, "--root", h.root, "--no-dbus"], stdout=log, stderr=subprocess.STDOUT)
            end = time.monotonic() + 20
            while not os.path.exists(sock) and time.monotonic() < end and p.poll() is None:
                time.sleep(0.05)
            self.assertTrue(os.path.exists(sock), "rtpartd did not listen")
            return p

        def stop(p):
            p.terminate()
            p.wait(timeout=20)

        try:
            proc = start()
            h.ok("apply", PROFILE, daemon=True)
            iso, hk = h.split()
            a = h.add("a", "--vcpus", "4", daemon=True)
            b = h.add("b", "--vcpus", "2", "--emulator", "isolate", "--node", "1", daemon=True)
            self.check_vm(h, a, iso, hk, [])
            self.check_vm(h, b, iso, hk, [a])
            log.flush()
            log.seek(0)
            self.assertIn("VM b reserved", log.read())  # rtpartd made it, not rtpartctl
            rc, _, err = h.run("vm", "add", "c", "--vcpus", "20", daemon=True)
            self.assertEqual(rc, 2, err)
            self.assertIn("7 are free", err)  # 14 cores, 4 + 2 + the emulator's taken
            # The ledger outlives rtpartd.
            stop(proc)
            proc = start()
            self.assertEqual([v["name"] for v in h.ledger(daemon=True)], ["a", "b"])
            self.assertIn("Removed a", h.ok("vm", "remove", "a", daemon=True))
            self.assertEqual([v["name"] for v in h.ledger()], ["b"])
        finally:
            if proc:
                stop(proc)
            log.close()
            h.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
