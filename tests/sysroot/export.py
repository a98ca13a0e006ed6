#!/usr/bin/env python3
"""rtpartctl export libvirt / export nova on the fake hosts.

Every document export libvirt prints (Host.run) is checked by libvirt's own schema (virt-xml-validate,
Debian package libvirt-clients; exit 77 without it): the fragment inside a minimal domain, and
merges into the domain files of tests/fixtures/libvirt. The pins are checked against the host's
sysfs: one isolated CPU per vCPU, on one NUMA node when one has room, SMT siblings apart (the
default) or together (cpus.vcpu_siblings), emulator and I/O threads on housekeeping CPUs of the
vCPUs' nodes; the <cachetune> against the L3 ways the plan's resctrl groups leave free (none
free: no <cachetune>, and a note); the realtime guide's settings (host-passthrough with
tsc-deadline where the host has it, PMU off, no balloon, locked unshared huge pages, strict
NUMA, guest NUMA cells across nodes); the merge keeps every other byte of the domain file,
names what it replaced or dropped on stderr, and gives the same document when run on its own
output; too many vCPUs are refused with exit status 2; nova's sets, reserved huge pages and
flavor are the profile's split; without a profile argument the applied profile is exported.

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
        """rtpartctl on this host; every domain export libvirt prints is checked by libvirt's
        schema here (a fragment inside minimal.xml), whatever the test then looks at."""
        p = subprocess.run([CTL, "--root", self.root, "--no-daemon"] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=300)
        if p.returncode == 0 and list(args[:2]) == ["export", "libvirt"]:
            doc = p.stdout if "--domain" in args else in_minimal_domain(p.stdout)
            check_schema(doc, "export libvirt %s on %s" % (" ".join(args[2:]), self.name))
        return p.returncode, p.stdout, p.stderr

    def free_ways(self, profile=PROFILE):
        """Cache id → the L3 ways no resctrl group of the plan holds (the default group's too)."""
        rc, out, err = self.run("--json", "plan", "--all", profile)
        assert rc == 0, err
        plan = json.loads(out)
        cbm = int(self.oracle["resctrl"]["cbm_mask"], 16)
        held = {}
        for k in plan["changes"] + plan["unchanged"]:
            if re.fullmatch(r"resctrl/[^/]+/schemata/L3", k["knob"]):
                for d in k.get("desired", k.get("value")).split(";"):
                    i, m = d.split("=")
                    held[int(i)] = held.get(int(i), 0) | int(m, 16)
        return {i: cbm & ~m for i, m in held.items()}

    def way_kib(self, cache):
        first = min(cpu_list(self.oracle["l3"][str(cache)]))
        with open(os.path.join(self.root, "sys/devices/system/cpu/cpu%d/cache/index3/size" % first)) as f:
            kib = int(f.read().strip().rstrip("K"))
        return kib // bin(int(self.oracle["resctrl"]["cbm_mask"], 16)).count("1")

    def tsc_deadline(self):
        with open(os.path.join(self.root, "proc", "cpuinfo")) as f:
            return " tsc_deadline_timer" in f.read()

    def capacity(self, together=False):
        cores = {}
        for c in self.isolated:
            cores.setdefault(self.core(c), []).append(c)
        return len(self.isolated) if together else len(cores)


def largest_run(mask):
    """The largest contiguous run of set bits: what libvirt makes a <cachetune> of."""
    return max((len(r) for r in bin(mask)[2:].split("0")), default=0)


def check_schema(text, what):
    """virt-xml-validate's verdict on a domain document: AssertionError when it refuses it."""
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(text)
    try:
        p = subprocess.run([VALIDATE, f.name, "domain"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            raise AssertionError("%s does not validate: %s\n%s" % (what, p.stdout, text))
    finally:
        os.unlink(f.name)


def in_minimal_domain(fragment):
    """The fragment inside tests/fixtures/libvirt/minimal.xml (which has no element it brings but
    <devices>: the fragment's <memballoon/> goes into minimal's)."""
    with open(os.path.join(DOMAINS, "minimal.xml")) as f:
        minimal = f.read()
    m = re.search(r"^  <devices>\n(.*?)^  </devices>\n", fragment, re.M | re.S)
    if m:
        fragment = fragment[:m.start()] + fragment[m.end():]
        minimal = minimal.replace("  </devices>", m.group(1) + "  </devices>")
    return minimal.replace("</domain>", fragment + "</domain>")


MANAGED = {"vcpu", "cputune", "numatune", "memoryBacking", "cpu"}
MANAGED_CHILDREN = {"pmu", "memballoon"}


def strip_elements(text, names, children=()):
    """The text without the lines of the domain's children named and of the grandchildren named
    in children (pretty-printed files)."""
    out, skip = [], None
    for line in text.splitlines(keepends=True):
        s = line.strip()
        if skip is None:
            m = re.match(r"<(\w+)[\s>/]", s)
            indent = line[:len(line) - len(line.lstrip())]
            if m and ((m.group(1) in names and indent in ("  ", "\t")) or m.group(1) in children):
                if not (s.endswith("/>") or ("</%s>" % m.group(1)) in s):
                    skip = m.group(1)
                continue
            out.append(line)
        elif s == "</%s>" % skip:
            skip = None
    return "".join(out)


def outside_managed(orig, out):
    """Both documents without what export manages, for a byte-for-byte comparison: the managed
    elements, <pmu/> and <memballoon/>, and the <features>/<devices> export adds where the
    domain has none."""
    a, b = strip_elements(orig, MANAGED, MANAGED_CHILDREN), strip_elements(out, MANAGED, MANAGED_CHILDREN)
    for parent in ("features", "devices"):
        if "<%s" % parent not in orig:
            b = "".join(l for l in b.splitlines(keepends=True) if l.strip() not in ("<%s>" % parent, "</%s>" % parent))
    return a, b


def domain_notes(err, path):
    return [l for l in err.splitlines() if l.startswith("rtpartctl: note: %s: " % path)]


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
        self.check_cache(h, ct, cpus)
        nt = dom.find("numatune")
        if h.numa:
            self.assertEqual(cpu_list(nt.find("memory").get("nodeset")), nodes)
            self.assertEqual(nt.find("memory").get("mode"), "strict")
        else:
            self.assertIsNone(nt)
        self.check_realtime(h, dom, cpus)
        return cpus

    def check_cache(self, h, ct, cpus, profile=PROFILE):
        """<cachetune>: on each L3 cache the vCPUs use, the largest run of the ways free there (the
        smallest of those runs), or none where no way is free."""
        cache = ct.find("cachetune")
        if not h.oracle.get("resctrl"):
            self.assertIsNone(cache)
            return
        l3 = {int(i): cpu_list(c) for i, c in h.oracle["l3"].items()}
        used = {i for i, c in l3.items() if c & set(cpus)}
        free = h.free_ways(profile)
        ways = min(largest_run(free[i]) for i in used)
        if ways == 0:
            self.assertIsNone(cache, "a <cachetune> where no L3 way is free")
            return
        self.assertIsNotNone(cache, "no cachetune where ways are free: %s" % free)
        self.assertEqual({int(c.get("id")) for c in cache.findall("cache")}, used)
        for c in cache.findall("cache"):
            self.assertEqual(int(c.get("size")), ways * h.way_kib(int(c.get("id"))))
            self.assertEqual((c.get("level"), c.get("type"), c.get("unit")), ("3", "both", "KiB"))

    def check_realtime(self, h, dom, cpus):
        """What libvirt's kvm-realtime guide asks for besides the pins."""
        self.assertEqual(cpu_list(dom.find("vcpu").get("cpuset")), set(cpus))
        self.assertEqual(dom.find("vcpu").get("placement"), "static")
        cpu = dom.find("cpu")
        self.assertEqual(cpu.get("mode"), "host-passthrough")
        tsc = [f for f in cpu.findall("feature") if f.get("name") == "tsc-deadline"]
        if h.tsc_deadline():
            self.assertEqual([f.get("policy") for f in tsc], ["require"])
        else:
            self.assertEqual([f.get("policy") for f in tsc if f.get("policy") in ("require", "force")], [])
        self.assertEqual(dom.find("features/pmu").get("state"), "off")
        balloons = dom.findall("devices/memballoon")
        self.assertEqual([b.get("model") for b in balloons], ["none"])
        mb = dom.find("memoryBacking")
        self.assertIsNotNone(mb.find("locked"))
        self.assertIsNotNone(mb.find("nosharepages"))

    def test_fragment(self):
        for h in self.hosts.values():
            for n in sorted({1, 2, h.capacity()}):
                with self.subTest(host=h.name, vcpus=n):
                    rc, out, err = h.run("export", "libvirt", "--vcpus", str(n), PROFILE)
                    self.assertEqual(rc, 0, err)
                    doc = in_minimal_domain(out)
                    dom = ET.fromstring(doc)
                    self.assertEqual(dom.find("vcpu").text, str(n))
                    self.assertIsNone(dom.find("memoryBacking").find("hugepages"))  # none reserved
                    self.assertIn("no huge pages back the guest's memory", err)
                    self.check_pins(h, dom, n)

    def test_domain_merge(self):
        for h in self.hosts.values():
            for f in sorted(os.listdir(DOMAINS)):
                path = os.path.join(DOMAINS, f)
                with open(path) as fh:
                    orig = fh.read()
                with self.subTest(host=h.name, domain=f):
                    vcpu = ET.fromstring(orig).find("vcpu")
                    args = ["--vcpus", "2"] if vcpu is None else []
                    n = 2 if vcpu is None else int(vcpu.text)
                    if n > h.capacity():
                        rc, out, err = h.run("export", "libvirt", "--domain", path, PROFILE)
                        self.assertEqual((rc, out), (2, ""), err)
                        self.assertIn("%d vCPUs do not fit" % n, err)
                        continue
                    rc, out, err = h.run("export", "libvirt", "--domain", path, *args, PROFILE)
                    self.assertEqual(rc, 0, err)
                    dom = ET.fromstring(out)
                    self.check_pins(h, dom, n)
                    # the I/O threads the domain has, each pinned
                    odom = ET.fromstring(orig)
                    ids = [int(i.get("id")) for i in odom.findall("iothreadids/iothread")]
                    if not ids and odom.find("iothreads") is not None:
                        ids = list(range(1, int(odom.find("iothreads").text) + 1))
                    self.assertEqual([int(i.get("iothread")) for i in dom.findall("cputune/iothreadpin")], ids)
                    # memoryBacking keeps what it had besides hugepages, locked and nosharepages
                    old_mb = odom.find("memoryBacking")
                    ours = ("hugepages", "locked", "nosharepages")
                    if old_mb is not None:
                        kept = [c.tag for c in old_mb if c.tag not in ours]
                        self.assertEqual([c.tag for c in dom.find("memoryBacking") if c.tag not in ours], kept)
                    # cputune keeps what weighs the emulator threads, drops the vCPUs' CFS bandwidth
                    old_ct = odom.find("cputune")
                    for tag in ("shares", "emulator_period", "emulator_quota"):
                        if old_ct is not None and old_ct.find(tag) is not None:
                            self.assertEqual(dom.find("cputune/" + tag).text, old_ct.find(tag).text)
                    for tag in ("period", "quota"):
                        self.assertIsNone(dom.find("cputune/" + tag))
                        if old_ct is not None and old_ct.find(tag) is not None:
                            self.assertRegex(err, r"<cputune>: [^\n]*<%s>[^\n]* dropped: they limit the vCPUs' CFS" % tag)
                    # every other byte as it was
                    a, b = outside_managed(orig, out)
                    self.assertEqual(b, a)
                    # and exported again, the same document, with nothing more said about it
                    with tempfile.NamedTemporaryFile("w", suffix=".xml") as again:
                        again.write(out)
                        again.flush()
                        rc, out2, err2 = h.run("export", "libvirt", "--domain", again.name, PROFILE)
                        self.assertEqual(rc, 0, err2)
                        self.assertEqual(out2, out)
                        said = [l for l in domain_notes(err2, again.name)
                                if re.search(r"replaced|becomes|dropped|removed", l)]
                        self.assertEqual(said, [])

    def test_domain_conflicts(self):
        """A domain whose own tuning gets in the way: each thing replaced or dropped is named (the
        <vcpu cpuset> over housekeeping CPUs was kept, <period>/<quota> dropped silently)."""
        h = self.hosts["intel-2s"]
        path = os.path.join(DOMAINS, "conflicts.xml")
        rc, out, err = h.run("export", "libvirt", "--domain", path, PROFILE)
        self.assertEqual(rc, 0, err)
        dom = ET.fromstring(out)
        pins = self.check_pins(h, dom, 4)
        notes = "\n".join(domain_notes(err, path))
        self.assertIn("<vcpu cpuset='1-4,8-20,525'> becomes cpuset='%s', the CPUs its vCPUs are pinned to"
                      % dom.find("vcpu").get("cpuset"), notes)
        self.assertEqual(cpu_list(dom.find("vcpu").get("cpuset")), set(pins))
        self.assertIn("it held housekeeping CPUs 8,16, which the guest must stay off, CPUs this host does not have "
                      "(525) and CPUs none of its vCPUs is pinned to", notes)
        self.assertIn("<cputune>: <period>, <quota> dropped", notes)
        self.assertIn("<cputune>: its <vcpupin> ×2, <emulatorpin> replaced", notes)
        self.assertIn("<numatune> replaced: the guest's memory is strict on node 0", notes)
        self.assertIn("<memoryBacking>: its <hugepages> replaced", notes)
        self.assertIn("<cpu mode='host-model'> becomes mode='host-passthrough'", notes)
        self.assertIn("<cpu>: its <model> dropped", notes)
        self.assertIn("<cpu>: its <topology> makes 8 vCPUs, not 4", notes)
        self.assertIn("<features>: its <pmu state='on'/> becomes <pmu state='off'/>", notes)
        self.assertIn("<devices>: its <memballoon> becomes <memballoon model='none'/>", notes)
        # kept: what weighs the emulator, the other CPU feature and the CPU check
        self.assertEqual(dom.find("cputune/shares").text, "2048")
        self.assertEqual(dom.find("cputune/emulator_period").text, "100000")
        self.assertEqual([f.get("name") for f in dom.findall("cpu/feature")], ["invtsc", "tsc-deadline"])
        self.assertEqual(dom.find("cpu").get("check"), "partial")
        self.assertIsNone(dom.find("cpu/model"))
        self.assertEqual(dom.find("memoryBacking/source").get("type"), "memfd")
        self.assertIsNone(dom.find("devices/memballoon/address"))

    def test_cells(self):
        """vCPUs over two nodes: a guest NUMA cell per node, its memory in whole huge pages, strict
        on its node, the pages' nodeset the cells."""
        h = Host("intel-2s")
        try:
            for node in (0, 1):
                p = os.path.join(h.root, "sys/devices/system/node/node%d/hugepages/hugepages-1048576kB/nr_hugepages" % node)
                with open(p, "w") as f:
                    f.write("8\n")
            n = h.capacity() // 2 + 3
            rc, out, err = h.run("export", "libvirt", "--vcpus", str(n), "--memory", "12G", PROFILE)
            self.assertEqual(rc, 0, err)
            doc = in_minimal_domain(out)
            dom = ET.fromstring(doc)
            cpus = self.check_pins(h, dom, n)
            cells = dom.findall("cpu/numa/cell")
            self.assertEqual(len(cells), 2)
            self.assertEqual(sum(int(c.get("memory")) for c in cells), 12 * 1048576)
            for i, c in enumerate(cells):
                self.assertEqual(int(c.get("memory")) % 1048576, 0)
                self.assertEqual({h.node_of(cpus[v]) for v in cpu_list(c.get("cpus"))}, {i})
            memnodes = {int(m.get("cellid")): m.get("nodeset") for m in dom.findall("numatune/memnode")}
            self.assertEqual(memnodes, {0: "0", 1: "1"})
            page = dom.find("memoryBacking/hugepages/page")
            self.assertEqual((page.get("size"), page.get("nodeset")), ("1048576", "0-1"))
            # not told the memory: no cells, and a note that says how to have them
            rc, out, err = h.run("export", "libvirt", "--vcpus", str(n), PROFILE)
            self.assertEqual(rc, 0, err)
            self.assertNotIn("<numa>", out)
            self.assertIn("give --memory SIZE", err)
            # a node's pool short of the guest's memory there
            rc, out, err = h.run("export", "libvirt", "--vcpus", str(n), "--memory", "32G", PROFILE)
            self.assertEqual(rc, 0, err)
            self.assertRegex(err, r"node 0 holds 8388608 KiB of 1048576 KiB huge pages, less than the \d+ KiB")
        finally:
            h.close()

    def test_hugepages(self):
        h = Host("intel-2s")
        try:
            p = os.path.join(h.root, "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages")
            with open(p, "w") as f:
                f.write("512\n")
            rc, out, err = h.run("export", "libvirt", "--vcpus", "2", PROFILE)
            self.assertEqual(rc, 0, err)
            doc = in_minimal_domain(out)
            page = ET.fromstring(doc).find("memoryBacking/hugepages/page")
            self.assertEqual((page.get("size"), page.get("unit"), page.get("nodeset")), ("2048", "KiB", None))
            self.assertNotIn("no huge pages", err)
        finally:
            h.close()

    def test_shipped_cachetune(self):
        """The regression of the shipped realtime-virtual-host: its groups held every L3 way and
        export still wrote a <cachetune> (of rt's ways), which libvirt cannot make, so the guest
        did not start. Now the profile keeps ways for guests and the <cachetune> is theirs; a
        profile that keeps none gets no <cachetune>, and a note naming who holds the ways."""
        for name in ("intel-2s", "epyc"):
            h = self.hosts[name]
            with self.subTest(host=name):
                free = h.free_ways()
                self.assertTrue(all(largest_run(m) > 0 for m in free.values()), free)
                rc, out, err = h.run("export", "libvirt", "--vcpus", "2", PROFILE)
                self.assertEqual(rc, 0, err)
                dom = ET.fromstring(in_minimal_domain(out))
                self.assertIsNotNone(dom.find("cputune/cachetune"))
                self.check_cache(h, dom.find("cputune"), [int(p.get("cpuset")) for p in dom.findall("cputune/vcpupin")])
        h = Host("intel-2s")
        try:
            d = os.path.join(h.root, "etc", "rtpart", "profiles")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "no-guests.json"), "w") as f:
                # the cat section realtime-virtual-host had: every way held by rt and the default group
                json.dump({"include": "realtime", "cat": {"groups": [{"name": "rt", "cpus": "isolated",
                                                                      "l3": {"percent": 50}, "exclusive": True}]}}, f)
            self.assertEqual(h.free_ways("no-guests"), {0: 0, 1: 0})
            rc, out, err = h.run("export", "libvirt", "--vcpus", "2", "no-guests")
            self.assertEqual(rc, 0, err)
            self.assertNotIn("<cachetune", out)
            self.assertIn("note: no <cachetune>: on the L3 caches the vCPUs use, the profile's resctrl groups and the "
                          "default group hold every way (default 0x01f, rt 0x7e0)", err)
            self.assertIn("keep ways for guests with cat.guests.l3", err)
        finally:
            h.close()

    def test_cachetune_unknown_l3_size(self):
        """Where the L3 size is unknown, export says why it has no <cachetune> (it was left out silently)."""
        h = Host("intel-2s")
        try:
            rc, out, err = h.run("export", "libvirt", "--vcpus", "2", PROFILE)
            self.assertEqual(rc, 0, err)
            self.assertIn("<cachetune", out)
            self.assertNotIn("cachetune>:", err)
            for d in glob.glob(os.path.join(h.root, "sys/devices/system/cpu/cpu*/cache/index3")):
                os.unlink(os.path.join(d, "size"))
            rc, out, err = h.run("export", "libvirt", "--vcpus", "2", PROFILE)
            self.assertEqual(rc, 0, err)
            self.assertNotIn("<cachetune", out)
            self.assertRegex(err, r"note: no <cache id='\d+'> in <cachetune>: the size of L3 cache \d+ is unknown "
                                  r"\(/sys/devices/system/cpu/cpuN/cache/index3/size of its CPUs is missing")
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
        rc, out, err = h.run("export", "nova", "--memory", "4G", PROFILE)
        self.assertEqual(rc, 2)
        self.assertIn("export nova takes none of them", err)
        rc, out, err = h.run("export", "libvirt", "--vcpus", "2", "--memory", "4X", PROFILE)
        self.assertEqual(rc, 2)
        self.assertIn("--memory takes a size such as", err)
        rc, out, err = h.run("export", "libvirt", "--memory", "8G", "--domain", os.path.join(DOMAINS, "rt-guest.xml"),
                             PROFILE)
        self.assertEqual(rc, 2)
        self.assertIn("<memory> is 4194304 KiB but --memory is 8388608 KiB", err)
        with tempfile.NamedTemporaryFile("w", suffix=".xml") as f:
            f.write("<domain>\n  <name>a</name>\n  <cpu/>\n  <cpu/>\n</domain>\n")
            f.flush()
            rc, out, err = h.run("export", "libvirt", "--vcpus", "2", "--domain", f.name, PROFILE)
            self.assertEqual(rc, 2)
            self.assertIn("line 4: a second <cpu> (the first is on line 3): a domain has one", err)
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
                # no huge pages on these hosts: none reserved, and the flavor takes any large size
                self.assertIn("# reserved_huge_pages: none; this host holds no huge pages", out)
                self.assertNotIn("\nreserved_huge_pages =", out)
                self.assertIn("\nopenstack flavor set FLAVOR --property hw:cpu_policy=dedicated --property "
                              "hw:cpu_realtime=yes --property hw:cpu_realtime_mask=^0 --property "
                              "hw:emulator_threads_policy=share --property hw:mem_page_size=large --property "
                              "hw:pmu=false\n", out)
                # --json: the same as one document (it was silently ignored).
                rc, out, err = h.run("--json", "export", "nova", PROFILE)
                self.assertEqual(rc, 0, err)
                doc = json.loads(out)
                self.assertEqual(doc["profile"], PROFILE)
                self.assertEqual(cpu_list(doc["nova"]["compute"]["cpu_dedicated_set"]), h.isolated)
                self.assertEqual(cpu_list(doc["nova"]["compute"]["cpu_shared_set"]), h.housekeeping)
                self.assertEqual(doc["nova"]["DEFAULT"]["reserved_huge_pages"], [])
                self.assertEqual(doc["flavor"]["properties"]["hw:cpu_realtime_mask"], "^0")
                self.assertTrue(doc["flavor"]["command"].startswith("openstack flavor set FLAVOR --property "))
                self.assertEqual(cpu_list(doc["kubelet"]["reservedSystemCPUs"]), h.housekeeping)
        # export libvirt has no JSON form: refused, not ignored.
        rc, out, err = self.hosts["vm"].run("--json", "export", "libvirt", "--vcpus", "1", PROFILE)
        self.assertEqual((rc, out), (2, ""), err)
        self.assertIn("export libvirt prints libvirt's domain XML, which has no JSON form", err)

    def test_nova_huge_pages(self):
        """Pools of the flavor's page size are left to Nova's instances; the others are reserved."""
        h = Host("intel-2s")
        try:
            for node in (0, 1):
                for size, count in (("1048576", 8), ("2048", 1024)):
                    p = os.path.join(h.root, "sys/devices/system/node/node%d/hugepages/hugepages-%skB/nr_hugepages"
                                     % (node, size))
                    with open(p, "w") as f:
                        f.write("%d\n" % count)
            rc, out, err = h.run("export", "nova", PROFILE)
            self.assertEqual(rc, 0, err)
            self.assertIn("\n[DEFAULT]\nreserved_huge_pages = node:0,size:2048,count:1024\n"
                          "reserved_huge_pages = node:1,size:2048,count:1024\n", out)
            self.assertIn("# node:0,size:1GB,count:8, node:1,size:1GB,count:8.", out)
            self.assertIn("--property hw:mem_page_size=1GB", out)
            rc, out, err = h.run("--json", "export", "nova", PROFILE)
            self.assertEqual(rc, 0, err)
            doc = json.loads(out)
            self.assertEqual(doc["nova"]["DEFAULT"]["reserved_huge_pages"],
                             ["node:0,size:2048,count:1024", "node:1,size:2048,count:1024"])
            self.assertEqual(doc["flavor"]["huge_pages"], ["node:0,size:1GB,count:8", "node:1,size:1GB,count:8"])
            self.assertEqual(doc["flavor"]["properties"]["hw:mem_page_size"], "1GB")
        finally:
            h.close()

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
