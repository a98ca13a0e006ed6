#!/usr/bin/env python3
"""rtpartctl export libvirt / export nova on the fake hosts.

Every document export libvirt prints is checked by libvirt's own schema (virt-xml-validate,
Debian package libvirt-clients; exit 77 without it): the fragment inside a minimal domain, and
merges into the domain files of tests/fixtures/libvirt. The pins are checked against the host's
sysfs: one isolated CPU per vCPU, on one NUMA node when one has room, SMT siblings apart (the
default) or together (cpus.vcpu_siblings), emulator and I/O threads on housekeeping CPUs of the
vCPUs' nodes; the merge keeps every other byte of the domain file; too many vCPUs are refused
with exit status 2; nova's sets are the profile's split; without a profile argument the applied
profile is exported.

Run by meson (suite sysroot) with RTPARTCTL and RTPART_SOURCE_DIR set.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

CTL = os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "tests", "sim", "rtpartctl")
SRC = os.environ.get("RTPART_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from sysroot_apply import copy_host  # noqa: E402
DOMAINS = os.path.join(SRC, "tests", "fixtures", "libvirt")
VALIDATE = shutil.which("virt-xml-validate")
PROFILE = "realtime-virtual-host"


def cpu_list(s):
    out = set()
    for part in filter(None, s.strip().split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


class Host:
    def __init__(self, name):
        self.name = name
        self.tmp = tempfile.mkdtemp(prefix="rtpart-export-")
        self.root = os.path.join(self.tmp, "root")
        try:
            copy_host(name, self.root)
        except BaseException:
            self.close()
            raise
        with open(os.path.join(self.root, ".mkhost.json")) as f:
            self.oracle = json.load(f)
        self.isolated = cpu_list(self.oracle["isolated"])
        self.housekeeping = cpu_list(self.oracle["housekeeping"])
        self.nodes = {int(n): cpu_list(c) for n, c in (self.oracle.get("numa_nodes") or {}).items()}
        if not self.nodes:
            self.nodes = {0: cpu_list(self.oracle["online"])}
        self.numa = os.path.isdir(os.path.join(self.root, "sys", "devices", "system", "node"))

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def core(self, cpu):
        """The lowest CPU of cpu's SMT siblings (sysfs thread_siblings_list)."""
        p = os.path.join(self.root, "sys", "devices", "system", "cpu", "cpu%d" % cpu, "topology", "thread_siblings_list")
        with open(p) as f:
            return min(cpu_list(f.read()))

    def node_of(self, cpu):
        return next(n for n, cpus in self.nodes.items() if cpu in cpus)

    def run(self, *args):
        p = subprocess.run([CTL, "--root", self.root, "--no-daemon"] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=300)
        return p.returncode, p.stdout, p.stderr

    def rt_ways(self):
        """Cache id → ways of the profile's rt group, from the plan (resctrl/rt/schemata/L3)."""
        if getattr(self, "_ways", None):
            return self._ways
        rc, out, err = self.run("--json", "plan", "--all", PROFILE)
        assert rc == 0, err
        plan = json.loads(out)
        knob = next(k for k in plan["changes"] + plan["unchanged"] if k["knob"] == "resctrl/rt/schemata/L3")
        value = knob.get("desired", knob.get("value"))
        self._ways = {int(i): bin(int(m, 16)).count("1") for i, m in (d.split("=") for d in value.split(";"))}
        return self._ways

    def capacity(self, together=False):
        cores = {}
        for c in self.isolated:
            cores.setdefault(self.core(c), []).append(c)
        return len(self.isolated) if together else len(cores)


def validate(test, text, what):
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(text)
    try:
        p = subprocess.run([VALIDATE, f.name, "domain"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        test.assertEqual(p.returncode, 0, "%s does not validate: %s\n%s" % (what, p.stdout, text))
    finally:
        os.unlink(f.name)


def in_minimal_domain(fragment):
    """The fragment inside tests/fixtures/libvirt/minimal.xml (which has no element it brings)."""
    with open(os.path.join(DOMAINS, "minimal.xml")) as f:
        minimal = f.read()
    return minimal.replace("</domain>", fragment + "</domain>")


def strip_elements(text, names):
    """The text without the lines of the domain's children named (pretty-printed files)."""
    out, skip = [], None
    for line in text.splitlines(keepends=True):
        s = line.strip()
        if skip is None:
            m = re.match(r"<(\w+)[\s>/]", s)
            if m and m.group(1) in names and line[:len(line) - len(line.lstrip())] in ("  ", "\t"):
                if not (s.endswith("/>") or ("</%s>" % m.group(1)) in s):
                    skip = m.group(1)
                continue
            out.append(line)
        elif s == "</%s>" % skip:
            skip = None
    return "".join(out)


class ExportTest(unittest.TestCase):
    hosts = {}

    @classmethod
    def setUpClass(cls):
        for name in ("vm", "intel-2s", "epyc"):
            cls.hosts[name] = Host(name)
            cls.addClassCleanup(cls.hosts[name].close)

    def check_pins(self, h, dom, n, together=False):
        """The guest's pinning as the split and the topology want it."""
        ct = dom.find("cputune")
        self.assertIsNotNone(ct)
        pins = {int(p.get("vcpu")): int(p.get("cpuset")) for p in ct.findall("vcpupin")}
        self.assertEqual(sorted(pins), list(range(n)))
        cpus = [pins[v] for v in range(n)]
        self.assertEqual(len(set(cpus)), n, "two vCPUs on one CPU: %s" % cpus)
        self.assertTrue(set(cpus) <= h.isolated, "a vCPU off the isolated CPUs: %s" % cpus)
        # NUMA-local: one node when one has room
        nodes = {h.node_of(c) for c in cpus}
        room = {}
        for c in h.isolated:
            room.setdefault(h.node_of(c), set()).add(c if together else h.core(c))
        if any(len(r) >= n for r in room.values()):
            self.assertEqual(len(nodes), 1, "%s: %d vCPUs fit one node but use %s" % (h.name, n, nodes))
        # siblings
        cores = [h.core(c) for c in cpus]
        if together:
            for v in range(0, n - 1, 2):
                if cores.count(cores[v]) == 2:
                    self.assertEqual(cores[v], cores[v + 1], "siblings not consecutive: %s" % cpus)
            self.assertLess(len(set(cores)), n, "together used no core twice: %s" % cpus)
        else:
            self.assertEqual(len(set(cores)), n, "two vCPUs share a core: %s" % cpus)
        # emulator and I/O threads: housekeeping CPUs of the vCPUs' nodes
        emu = cpu_list(ct.find("emulatorpin").get("cpuset"))
        want = {c for c in h.housekeeping if h.node_of(c) in nodes} or h.housekeeping
        self.assertEqual(emu, want)
        for io in ct.findall("iothreadpin"):
            self.assertEqual(cpu_list(io.get("cpuset")), want)
        sched = ct.find("vcpusched")
        self.assertEqual((sched.get("vcpus"), sched.get("scheduler"), sched.get("priority")),
                         ("0-%d" % (n - 1) if n > 1 else "0", "fifo", "1"))
        # cachetune: the profile's rt group (half the L3 ways) on the caches the vCPUs use
        cache = ct.find("cachetune")
        if h.oracle.get("resctrl"):
            self.assertIsNotNone(cache, "no cachetune on a host with resctrl")
            l3 = {int(i): cpu_list(c) for i, c in h.oracle["l3"].items()}
            used = {i for i, c in l3.items() if c & set(cpus)}
            self.assertEqual({int(c.get("id")) for c in cache.findall("cache")}, used)
            bits = bin(int(h.oracle["resctrl"]["cbm_mask"], 16)).count("1")
            ways = h.rt_ways()
            for c in cache.findall("cache"):
                first = min(l3[int(c.get("id"))])
                with open(os.path.join(h.root, "sys/devices/system/cpu/cpu%d/cache/index3/size" % first)) as f:
                    kib = int(f.read().strip().rstrip("K"))
                self.assertEqual(int(c.get("size")), ways[int(c.get("id"))] * (kib // bits))
                self.assertEqual((c.get("level"), c.get("type"), c.get("unit")), ("3", "both", "KiB"))
        else:
            self.assertIsNone(cache)
        nt = dom.find("numatune")
        if h.numa:
            self.assertEqual(cpu_list(nt.find("memory").get("nodeset")), nodes)
            self.assertEqual(nt.find("memory").get("mode"), "strict")
        else:
            self.assertIsNone(nt)
        mb = dom.find("memoryBacking")
        self.assertIsNotNone(mb.find("locked"))
        return cpus

    def test_fragment(self):
        for h in self.hosts.values():
            for n in sorted({1, 2, h.capacity()}):
                with self.subTest(host=h.name, vcpus=n):
                    rc, out, err = h.run("export", "libvirt", "--vcpus", str(n), PROFILE)
                    self.assertEqual(rc, 0, err)
                    doc = in_minimal_domain(out)
                    validate(self, doc, "%s fragment of %d vCPUs" % (h.name, n))
                    dom = ET.fromstring(doc)
                    self.assertEqual(dom.find("vcpu").text, str(n))
                    self.assertIsNone(dom.find("memoryBacking").find("hugepages"))  # none reserved
                    self.check_pins(h, dom, n)

    def test_domain_merge(self):
        for h in self.hosts.values():
            for f in sorted(os.listdir(DOMAINS)):
                with open(os.path.join(DOMAINS, f)) as fh:
                    orig = fh.read()
                with self.subTest(host=h.name, domain=f):
                    vcpu = ET.fromstring(orig).find("vcpu")
                    args = ["--vcpus", "2"] if vcpu is None else []
                    n = 2 if vcpu is None else int(vcpu.text)
                    if n > h.capacity():
                        rc, out, err = h.run("export", "libvirt", "--domain", os.path.join(DOMAINS, f), PROFILE)
                        self.assertEqual((rc, out), (2, ""), err)
                        self.assertIn("%d vCPUs do not fit" % n, err)
                        continue
                    rc, out, err = h.run("export", "libvirt", "--domain", os.path.join(DOMAINS, f), *args, PROFILE)
                    self.assertEqual(rc, 0, err)
                    validate(self, out, "%s merged on %s" % (f, h.name))
                    dom = ET.fromstring(out)
                    self.check_pins(h, dom, n)
                    # the I/O threads the domain has, each pinned
                    odom = ET.fromstring(orig)
                    ids = [int(i.get("id")) for i in odom.findall("iothreadids/iothread")]
                    if not ids and odom.find("iothreads") is not None:
                        ids = list(range(1, int(odom.find("iothreads").text) + 1))
                    self.assertEqual([int(i.get("iothread")) for i in dom.findall("cputune/iothreadpin")], ids)
                    # memoryBacking keeps what it had besides hugepages and locked
                    old_mb = odom.find("memoryBacking")
                    if old_mb is not None:
                        kept = [c.tag for c in old_mb if c.tag not in ("hugepages", "locked")]
                        self.assertEqual([c.tag for c in dom.find("memoryBacking") if c.tag != "locked"], kept)
                    # every other byte as it was
                    names = {"cputune", "numatune", "memoryBacking"} | ({"vcpu"} if vcpu is None else set())
                    self.assertEqual(strip_elements(out, names), strip_elements(orig, names))
                    self.assertNotIn("<shares>", out)

    def test_hugepages(self):
        h = Host("intel-2s")
        try:
            p = os.path.join(h.root, "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
            with open(p, "w") as f:
                f.write("512\n")
            rc, out, err = h.run("export", "libvirt", "--vcpus", "2", PROFILE)
            self.assertEqual(rc, 0, err)
            doc = in_minimal_domain(out)
            validate(self, doc, "fragment with huge pages")
            page = ET.fromstring(doc).find("memoryBacking/hugepages/page")
            self.assertEqual((page.get("size"), page.get("unit")), ("2048", "KiB"))
        finally:
            h.close()

    def test_cachetune_unknown_l3_size(self):
        """Where the L3 size is unknown, export says why it has no <cachetune> (it was left out silently)."""
        h = Host("intel-2s")
        try:
            rc, out, err = h.run("export", "libvirt", "--vcpus", "2", PROFILE)
            self.assertEqual(rc, 0, err)
            self.assertIn("<cachetune", out)
            self.assertNotIn("note:", err)
            for d in glob.glob(os.path.join(h.root, "sys/devices/system/cpu/cpu*/cache/index3")):
                os.unlink(os.path.join(d, "size"))
            rc, out, err = h.run("export", "libvirt", "--vcpus", "2", PROFILE)
            self.assertEqual(rc, 0, err)
            validate(self, in_minimal_domain(out), "fragment without cachetune")
            self.assertNotIn("<cachetune", out)
            self.assertRegex(err, r"note: no <cache id='\d+'> in <cachetune> for resctrl group rt: the size of L3 "
                                  r"cache \d+ is unknown \(/sys/devices/system/cpu/cpu\d+/cache/index3/size is "
                                  r"missing")
        finally:
            h.close()

    def test_siblings_together(self):
        h = Host("epyc")
        try:
            d = os.path.join(h.root, "etc", "rtpart", "profiles")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "rt-smt.json"), "w") as f:
                json.dump({"include": PROFILE, "cpus": {"vcpu_siblings": "together"}}, f)
            for n in (4, h.capacity(together=True)):
                with self.subTest(vcpus=n):
                    rc, out, err = h.run("export", "libvirt", "--vcpus", str(n), "rt-smt")
                    self.assertEqual(rc, 0, err)
                    doc = in_minimal_domain(out)
                    validate(self, doc, "together fragment")
                    cpus = self.check_pins(h, ET.fromstring(doc), n, together=True)
                    self.assertEqual(h.core(cpus[0]), h.core(cpus[1]))
            rc, out, err = h.run("export", "libvirt", "--vcpus", str(h.capacity(together=True) + 1), "rt-smt")
            self.assertEqual(rc, 2)
            self.assertIn("give --vcpus %d or fewer" % h.capacity(together=True), err)
        finally:
            h.close()

    def test_refusal(self):
        for h in self.hosts.values():
            with self.subTest(host=h.name):
                n = h.capacity() + 1
                rc, out, err = h.run("export", "libvirt", "--vcpus", str(n), PROFILE)
                self.assertEqual(rc, 2, err)
                self.assertEqual(out, "")
                self.assertIn("%d vCPUs do not fit" % n, err)
                self.assertIn("isolates %d CPUs" % len(h.isolated), err)
                self.assertIn("give --vcpus %d or fewer" % h.capacity(), err)
        h = self.hosts["intel-2s"]
        rc, out, err = h.run("export", "libvirt", "--vcpus", "3", "--domain", os.path.join(DOMAINS, "rt-guest.xml"),
                             PROFILE)
        self.assertEqual(rc, 2)
        self.assertIn("<vcpu> is 4 but --vcpus is 3", err)
        rc, out, err = h.run("export", "libvirt", PROFILE)
        self.assertEqual(rc, 2)
        self.assertIn("--vcpus N", err)
        rc, out, err = h.run("export", "nova", "--vcpus", "2", PROFILE)
        self.assertEqual(rc, 2)
        rc, out, err = h.run("export", "vmware", PROFILE)
        self.assertEqual(rc, 2)
        self.assertIn("give 'libvirt' or 'nova'", err)
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write("<domain>\n  <cputune>\n</domain>\n")
            f.flush()
            rc, out, err = h.run("export", "libvirt", "--vcpus", "2", "--domain", f.name, PROFILE)
            self.assertEqual(rc, 2)
            self.assertIn("line 3: <cputune> (line 2) closed by </domain>", err)

    def test_domain_not_a_regular_file(self):
        # A FIFO no one writes to is refused at once (it hung), as a directory and a device are.
        h = self.hosts["intel-2s"]
        fifo = os.path.join(h.tmp, "domain.fifo")
        os.mkfifo(fifo)
        for path, what in ((fifo, "a FIFO"), (h.tmp, "a directory"), ("/dev/zero", "a device or socket")):
            with self.subTest(path=path):
                p = subprocess.run([CTL, "--root", h.root, "export", "libvirt", "--vcpus", "2", "--domain", path,
                                    PROFILE], capture_output=True, text=True, timeout=30)
                rc, out, err = p.returncode, p.stdout, p.stderr
                self.assertEqual((rc, out), (2, ""), err)
                self.assertIn(f"--domain {path}: not a regular file ({what}); give a libvirt domain XML file", err)

    def test_nova(self):
        for h in self.hosts.values():
            with self.subTest(host=h.name):
                rc, out, err = h.run("export", "nova", PROFILE)
                self.assertEqual(rc, 0, err)
                sect = re.search(r"^\[compute\]\ncpu_dedicated_set = (\S+)\ncpu_shared_set = (\S+)$", out, re.M)
                self.assertIsNotNone(sect, out)
                self.assertEqual(cpu_list(sect.group(1)), h.isolated)
                self.assertEqual(cpu_list(sect.group(2)), h.housekeeping)
                kubelet = re.search(r'^reservedSystemCPUs: "(\S+)"$', out, re.M)
                self.assertEqual(cpu_list(kubelet.group(1)), h.housekeeping)
                # --json: the same sets as one document (it was silently ignored).
                rc, out, err = h.run("--json", "export", "nova", PROFILE)
                self.assertEqual(rc, 0, err)
                doc = json.loads(out)
                self.assertEqual(doc["profile"], PROFILE)
                self.assertEqual(cpu_list(doc["nova"]["compute"]["cpu_dedicated_set"]), h.isolated)
                self.assertEqual(cpu_list(doc["nova"]["compute"]["cpu_shared_set"]), h.housekeeping)
                self.assertEqual(cpu_list(doc["kubelet"]["reservedSystemCPUs"]), h.housekeeping)
        # export libvirt has no JSON form: refused, not ignored.
        rc, out, err = self.hosts["vm"].run("--json", "export", "libvirt", "--vcpus", "1", PROFILE)
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("export libvirt prints libvirt's domain XML, which has no JSON form", err)

    def test_applied_profile(self):
        h = Host("vm")
        try:
            rc, out, err = h.run("export", "nova")
            self.assertEqual(rc, 2)
            self.assertIn("no profile is applied", err)
            d = os.path.join(h.root, "etc", "rtpart", "profiles")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "two.json"), "w") as f:
                json.dump({"include": PROFILE, "cpus": {"isolated": "2-3"}}, f)
            rc, out, err = h.run("apply", "two")
            self.assertIn(rc, (0, 4), err)
            # the applied profile is the journal's copy: changing the file changes nothing
            with open(os.path.join(d, "two.json"), "w") as f:
                json.dump({"include": PROFILE, "cpus": {"isolated": "1-3"}}, f)
            rc, out, err = h.run("export", "nova")
            self.assertEqual(rc, 0, err)
            self.assertIn("cpu_dedicated_set = 2-3\ncpu_shared_set = 0-1\n", out)
            rc, out, err = h.run("export", "libvirt", "--vcpus", "2")
            self.assertEqual(rc, 0, err)
            self.assertIn("<vcpupin vcpu='0' cpuset='2'/>", out)
            self.assertIn("<vcpupin vcpu='1' cpuset='3'/>", out)
            self.assertIn("<emulatorpin cpuset='0-1'/>", out)
        finally:
            h.close()


if __name__ == "__main__":
    if not VALIDATE:
        print("virt-xml-validate not found (Debian package libvirt-clients): skipped", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
