#!/usr/bin/env python3
"""libvirt's qemu hook (rtpart-libvirt-hook, installed in /etc/libvirt/hooks/qemu.d/) on a fake host.

Two VMs reserved with rtpartctl vm add; the hook is run as libvirt runs it (DOMAIN prepare begin -,
the domain XML on standard input) with RTPART_ROOT naming the tree: a domain of the ledger pinned
as its reservation says starts (exit 0); pinned elsewhere, with a vCPU unpinned or more vCPUs than
reserved, or onto the other VM's CPUs (its vCPUs or its emulator), it is refused with exit 1 and
the reason on standard error (what libvirt shows as the start's error); a domain the ledger does
not know starts on CPUs no VM holds and is refused on a VM's. export libvirt NAME writes a VM's
domain from its reservation (valid for virt-xml-validate where it is installed), and the hook lets it
start. Operations other than prepare begin
are let through without reading anything, and so is every domain while the ledger is empty.

Run by meson (suite sysroot) with the hook's path as argument, RTPARTCTL and RTPART_HOSTS_DIR set.
"""
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vm_ledger import Host  # noqa: E402

HOOK = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "daemon",
                                                              "hook", "rtpart-libvirt-hook")


def domain(name, pins, emulator=None, comment=True):
    tune = "".join(f"\n    <vcpupin vcpu='{i}' cpuset='{c}'/>" for i, c in enumerate(pins))
    if emulator:
        tune += f"\n    <emulatorpin cpuset=\"{emulator}\"/>"
    return (f"<?xml version='1.0'?>\n{'<!-- <name>not-this</name> -->' if comment else ''}\n"
            f"<domain type='qemu'>\n  <name>{name}</name>\n  <uuid>0</uuid>\n  <vcpu placement='static'>"
            f"{len(pins)}</vcpu>\n  <cputune>{tune}\n  </cputune>\n  <devices><disk><source name='x'/></disk>"
            f"</devices>\n</domain>\n")


class Hook(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.h = Host("intel-2s")
        cls.h.ok("apply", "realtime-virtual-host")

    @classmethod
    def tearDownClass(cls):
        cls.h.close()

    def hook(self, name, xml, op=("prepare", "begin")):
        p = subprocess.run([HOOK, name, *op, "-"], input=xml, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=dict(os.environ, RTPART_ROOT=self.h.root), timeout=60)
        return p.returncode, p.stderr

    def test_hook(self):
        # An empty ledger refuses nothing.
        self.assertEqual(self.hook("x", domain("x", ["1"])), (0, ""))
        a = self.h.add("a", "--vcpus", "2")
        b = self.h.add("b", "--vcpus", "2", "--emulator", "isolate")
        self.assertEqual((a["cpus"], b["cpus"], b["emulator"]), ("1-2", "3-4", "5,21"))
        ok = [(("a", ["1", "2"]), None), (("b", ["3", "4"], "5,21"), None), (("free", ["6-7"]), None),
              (("unknown-emulator-on-hk", ["9"], "0,16"), None)]
        refused = [(("a", ["2", "1"]), "pins vCPU 0 to CPUs 2, but the ledger reserves CPU 1 for it"),
                   (("a", ["1"]), "pins 1 of the 2 vCPUs"),
                   (("a", ["1", "2", "6"]), "pins vCPU 2, but the ledger reserves CPUs for 2 vCPUs"),
                   (("a", ["1", "2"], "5"), "CPUs 5, which the ledger reserves for VM b"),
                   (("intruder", ["3", "6"]), "domain intruder is pinned to CPUs 3, which the ledger reserves for VM b"),
                   (("intruder", ["6"], "21"), "CPUs 21, which the ledger reserves for VM b")]
        for args, _ in ok:
            with self.subTest(args=args):
                self.assertEqual(self.hook(args[0], domain(*args)), (0, ""))
        for args, reason in refused:
            with self.subTest(args=args):
                rc, err = self.hook(args[0], domain(*args))
                self.assertEqual(rc, 1, err)
                self.assertIn(reason, err)
                self.assertTrue(err.startswith("rtpart: "), err)
        # export libvirt NAME writes the VM's domain from its reservation, which the hook lets start.
        path = os.path.join(self.h.tmp, "b.xml")
        with open(path, "w") as f:
            f.write("<domain type='kvm'>\n  <name>b</name>\n  <memory unit='GiB'>1</memory>\n  <vcpu>2</vcpu>\n"
                    "  <os><type arch='x86_64'>hvm</type></os>\n</domain>\n")
        xml = self.h.ok("export", "libvirt", "b", "--domain", path)
        self.assertIn("<vcpupin vcpu='0' cpuset='3'/>", xml)
        self.assertIn("<vcpupin vcpu='1' cpuset='4'/>", xml)
        self.assertIn("<emulatorpin cpuset='5,21'/>", xml)
        self.assertEqual(self.hook("b", xml), (0, ""))
        if shutil.which("virt-xml-validate"):  # libvirt's own schema accepts it
            with open(path, "w") as f:
                f.write(xml)
            p = subprocess.run(["virt-xml-validate", path, "domain"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
            self.assertEqual(p.returncode, 0, p.stdout)
        # Two VMs exported get their own CPUs (before the ledger, every guest exported got the same).
        pins = {}
        for name in ("a", "b"):
            out = self.h.ok("export", "libvirt", name)
            pins[name] = set(re.findall(r"<vcpupin vcpu='\d+' cpuset='(\d+)'/>", out))
        self.assertEqual(pins, {"a": {"1", "2"}, "b": {"3", "4"}})
        rc, _, err = self.h.run("export", "libvirt", "b", "--vcpus", "3")
        self.assertEqual(rc, 2)
        self.assertIn("VM b has 2 vCPUs in the ledger, but --vcpus is 3", err)
        # Other operations are not checked.
        for op in (("start", "begin"), ("release", "end"), ("prepare", "end")):
            self.assertEqual(self.hook("a", domain("a", ["7", "8"]), op), (0, ""))
        # A domain XML it cannot read is refused with why.
        rc, err = self.hook("a", "<domain><uuid>1</uuid></domain>")
        self.assertEqual(rc, 1)
        self.assertIn("no <name>", err)
        # Its cores freed, b's domain may go anywhere b held.
        self.h.ok("vm", "remove", "b")
        self.assertEqual(self.hook("intruder", domain("intruder", ["3", "6"])), (0, ""))


if __name__ == "__main__":
    unittest.main(verbosity=2)
