#!/usr/bin/env python3
"""Integration test: rtpartctl import-tuned on Debian's own tuned profiles.

tuned's profiles come from Debian 12's tuned package, fetched with `apt-get download tuned` and
unpacked with `dpkg-deb -x` into /var/cache/rtpart-test/tuned (kept for the next run); the tuned
daemon is never installed. Without the package (no network, no apt) the test exits 77 and says why.

- Every profile in the package imports on every fake host: exit 0, or exit 5 (written, with parts
  left out) with every option it could not map named as FILE:LINE: [SECTION] OPTION: unsupported:
  WHY, where FILE:LINE is really that option (or, in a profile's script, the statement quoted);
  never a crash, never another status. The profile written passes `rtpartctl show`; no value of
  it is one of tuned's "<N"/">N" comparisons.
- tuned's realtime, realtime-virtual-host, realtime-virtual-guest and cpu-partitioning import to
  profiles whose `plan --all --json` sets the same boot arguments, sysctls, IRQ and irqbalance
  placement, kernel thread placement and priorities, module parameters and KSM as rtpart's
  shipped profile of the same name on each fake host; each difference allowed is listed below
  with its reason. The parts of tuned's scripts (KVM's low-latency module parameters, KSM off)
  come from reading the scripts, which are never run.

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

CTL = os.environ.get("RTPARTCTL") or os.path.join(os.environ.get("RTPART_BUILD_DIR", "build"), "tests", "sim", "rtpartctl")
SRC = os.environ.get("RTPART_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from sysroot_apply import copy_host  # noqa: E402
PROFILES = os.path.join(SRC, "profiles")
CACHE = os.environ.get("RTPART_TUNED_CACHE", "/var/cache/rtpart-test/tuned")
HOST_NAMES = ("intel-2s", "epyc", "vm")
COMPARED = ("realtime", "realtime-virtual-host", "realtime-virtual-guest", "cpu-partitioning")
DOMAINS = ("boot", "sysctl", "irq", "irqbalance", "kthread", "module")
KSM = "sysfs/kernel/mm/ksm/run"

# The differences between an imported tuned profile and rtpart's shipped one, knob by knob: the
# knobs only one of the two plans sets, or sets to another value.
NEWER_TUNED = ("tuned 2.20 (Debian 12) does not set it; rtpart's shipped profiles follow later tuned "
               "releases, which add it")
ALLOWED_ALL = {
    "boot/rcupdate.rcu_normal_after_boot": NEWER_TUNED,
    "boot/rcutree.nohz_full_patience_delay": NEWER_TUNED,
}
ALLOWED = {
    "cpu-partitioning": {
        "boot/tsc": NEWER_TUNED,
        "boot/tuned.non_isolcpus": "read only by tuned's initramfs hook (00-tuned-pre-udev.sh), which the shipped "
                                   "profile leaves out (its description says why)",
    },
}
ALLOWED_AMD = {
    # On the AMD host (epyc).
    "realtime": {
        "boot/intel_pstate": "tuned writes intel_pstate=disable on every CPU; the shipped profile writes it under "
                             "vendor.intel only, where it means something",
        "boot/amd_pstate": "the shipped profile disables amd_pstate on AMD (vendor.amd), which tuned does not",
    },
    "cpu-partitioning": {
        "boot/amd_pstate": "the shipped profile disables amd_pstate on AMD (vendor.amd), which tuned does not",
        "module/kvm_amd/pause_filter_count": "the shipped profile turns AMD's PAUSE interception off too; tuned's "
                                             "script sets only Intel's ple_gap",
    },
}
ALLOWED_AMD["realtime-virtual-host"] = dict(ALLOWED_AMD["realtime"], **{
    "module/kvm_amd/pause_filter_count": ALLOWED_AMD["cpu-partitioning"]["module/kvm_amd/pause_filter_count"]})
ALLOWED_AMD["realtime-virtual-guest"] = ALLOWED_AMD["realtime"]

NOTE_LINE = re.compile(r"^(/[^:]+):(\d+): \[([^\]]*)\](?: (\S+))?: (unsupported|note): (.+)$")


def fetch_tuned():
    """The unpacked package's root, or None and why."""
    if os.path.isfile(os.path.join(CACHE, "usr", "lib", "tuned", "realtime", "tuned.conf")):
        return CACHE, None
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        return None, "apt-get or dpkg-deb missing"
    parent = os.path.dirname(CACHE)
    try:
        os.makedirs(parent, exist_ok=True)
        work = tempfile.mkdtemp(prefix="tuned-", dir=parent)
    except OSError as e:
        return None, f"cannot write {parent}: {e}"
    try:
        p = subprocess.run(["apt-get", "download", "tuned"], cwd=work, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        debs = glob.glob(os.path.join(work, "tuned_*.deb"))
        if p.returncode != 0 or not debs:
            last = (p.stdout.strip().splitlines() or [""])[-1]
            return None, f"apt-get download tuned failed: {last}"
        tree = os.path.join(work, "tree")
        subprocess.run(["dpkg-deb", "-x", debs[0], tree], check=True, timeout=300)
        try:
            os.rename(tree, CACHE)  # atomic: a concurrent run finds all of it or none
        except OSError:
            if not os.path.isdir(CACHE):
                raise
        return CACHE, None
    finally:
        shutil.rmtree(work, ignore_errors=True)


class Host:
    def __init__(self, name, tuned):
        # In memory where there is room (the machine's other tests fill /dev/shm at times), else on disk.
        for where in ("/dev/shm", None):
            if where and not os.path.isdir(where):
                continue
            self.tmp = tempfile.mkdtemp(prefix="rtpart-tuned-", dir=where)
            try:
                self.make(name, tuned)
                return
            except (OSError, shutil.Error) as e:
                self.close()
                if where is None or "No space left" not in str(e):
                    raise
            except BaseException:
                self.close()
                raise

    def make(self, name, tuned):
        self.root = os.path.join(self.tmp, "root")
        copy_host(name, self.root, profiles=False)
        # tuned's files where tuned has them: /usr/lib/tuned and /etc/tuned, under the root.
        shutil.copytree(os.path.join(tuned, "usr", "lib", "tuned"), os.path.join(self.root, "usr", "lib", "tuned"))
        shutil.copytree(os.path.join(tuned, "etc", "tuned"), os.path.join(self.root, "etc", "tuned"))

    def run(self, *args):
        return subprocess.run([CTL, "--root", self.root] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=300)

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


TUNED, WHY = fetch_tuned()


def tuned_profiles():
    d = os.path.join(TUNED, "usr", "lib", "tuned")
    return sorted(n for n in os.listdir(d) if os.path.isfile(os.path.join(d, n, "tuned.conf")))


class ImportTuned(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hosts = {}
        try:
            for n in HOST_NAMES:
                cls.hosts[n] = Host(n, TUNED)
        except BaseException:
            cls.tearDownClass()  # not called when setUpClass fails
            raise

    @classmethod
    def tearDownClass(cls):
        for h in cls.hosts.values():
            h.close()

    def import_profile(self, host, name):
        out = os.path.join(host.tmp, name + ".json")
        p = host.run("import-tuned", name, "-o", out)
        self.assertIn(p.returncode, (0, 5), f"{name}: status {p.returncode}\n{p.stderr}")
        return out, p

    def check_notes(self, host, name, p):
        """Every line on stderr is a note, an unsupported option at its real place, or the closing count."""
        unsupported = 0
        for line in p.stderr.splitlines():
            if re.match(r"^\d+ tuned options? w(as|ere) not imported", line):
                continue
            m = NOTE_LINE.match(line)
            self.assertTrue(m, f"{name}: stray line on stderr: {line!r}")
            path, lineno, section, option, kind = m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5)
            with open(os.path.join(host.root, path.lstrip("/"))) as f:
                text = f.read().splitlines()
            self.assertLessEqual(lineno, len(text), line)
            written = text[lineno - 1].strip()
            if not path.endswith("tuned.conf"):
                # A statement of a profile's script: quoted, at its line.
                self.assertEqual((section, option), ("script", None), line)
                self.assertIn(f"'{written}'", line)
            elif option is None:
                self.assertEqual(written, f"[{section}]", line)
            else:
                self.assertRegex(written, r"^" + re.escape(option) + r"\s*=", line)
            unsupported += kind == "unsupported"
        self.assertEqual(p.returncode == 5, unsupported > 0, p.stderr)
        if unsupported:
            self.assertIn(f"{unsupported} tuned option", p.stderr)

    def test_every_profile_imports(self):
        names = tuned_profiles()
        self.assertGreater(len(names), 30)  # Debian 12's tuned 2.20 has 37
        statuses = {}
        for host in self.hosts.values():
            for name in names:
                with self.subTest(host=os.path.basename(host.tmp), profile=name):
                    out, p = self.import_profile(host, name)
                    self.check_notes(host, name, p)
                    statuses[name] = p.returncode
                    with open(out) as f:
                        doc = json.load(f)
                    values = [v for s in doc.values() if isinstance(s, dict) for v in s.values()]
                    self.assertFalse([v for v in values if isinstance(v, str) and v[:1] in "<>"], name)
                    s = host.run("show", out)
                    self.assertEqual(s.returncode, 0, f"{name}: show: {s.stderr}")
        # Some import whole, most name what they leave out.
        self.assertIn(0, statuses.values())
        self.assertIn(5, statuses.values())
        # The operators of throughput-performance's sysctls are named, never written.
        p = self.hosts["vm"].run("import-tuned", "throughput-performance")
        self.assertIn("[sysctl] net.core.somaxconn: unsupported: '>2048' is tuned's \"at least 2048\"", p.stderr)
        self.assertNotIn("net.core.somaxconn", json.loads(p.stdout).get("sysctl", {}))

    def test_stdout_and_errors(self):
        h = self.hosts["vm"]
        p = h.run("import-tuned", "network-latency")
        self.assertEqual(p.returncode, 5, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["sysctl"]["net.core.busy_read"], 50)
        self.assertIn("[cpu] min_perf_pct: unsupported: ", p.stderr)
        p = h.run("import-tuned", "no-such-profile")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no tuned profile 'no-such-profile' in /etc/tuned or /usr/lib/tuned", p.stderr)
        self.assertEqual(p.stdout, "")
        # realtime asserts that isolated_cores is set: without its variables file it is not.
        os.rename(os.path.join(h.root, "etc/tuned/realtime-variables.conf"), os.path.join(h.tmp, "saved.conf"))
        try:
            p = h.run("import-tuned", "realtime")
        finally:
            os.rename(os.path.join(h.tmp, "saved.conf"), os.path.join(h.root, "etc/tuned/realtime-variables.conf"))
        self.assertEqual(p.returncode, 2)
        self.assertRegex(p.stderr, r"/usr/lib/tuned/realtime/tuned\.conf:\d+: assertion 'isolated_cores are set' failed")
        self.assertEqual(p.stdout, "")
        # --output is import-tuned's alone.
        p = h.run("show", "realtime", "-o", os.path.join(h.tmp, "x.json"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("show does not take --output (import-tuned's)", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(h.tmp, "x.json")))
        # A profile directory given by path.
        d = os.path.join(h.tmp, "mine")
        os.makedirs(d)
        with open(os.path.join(d, "tuned.conf"), "w") as f:
            f.write("[main]\ninclude=realtime\n[variables]\n[sysctl]\nvm.swappiness=1\n")
        p = h.run("import-tuned", d + "/")
        self.assertIn(p.returncode, (0, 5), p.stderr)
        self.assertEqual(json.loads(p.stdout)["sysctl"]["vm.swappiness"], 1)

    def placement(self, host, profile):
        p = host.run("--json", "plan", "--all", profile)
        self.assertIn(p.returncode, (0, 4), p.stderr)
        doc = json.loads(p.stdout)
        return {k["knob"]: k.get("desired", k.get("value")) for k in doc["changes"] + doc["unchanged"]
                if k["domain"] in DOMAINS or k["knob"] == KSM}

    def test_matches_shipped_profiles(self):
        for host_name, host in self.hosts.items():
            for name in COMPARED:
                with self.subTest(host=host_name, profile=name):
                    out, _ = self.import_profile(host, name)
                    imported = self.placement(host, out)
                    shipped = self.placement(host, os.path.join(PROFILES, name + ".json"))
                    for d in DOMAINS[:3]:
                        self.assertTrue(any(k.startswith(d + "/") for k in shipped), f"no {d} knob to compare")
                    differ = {k for k in set(imported) | set(shipped) if imported.get(k) != shipped.get(k)}
                    allowed = dict(ALLOWED_ALL)
                    allowed.update(ALLOWED.get(name, {}))
                    if host_name == "epyc":
                        allowed.update(ALLOWED_AMD.get(name, {}))
                    detail = "\n".join(f"  {k}: imported {imported.get(k)!r}, shipped {shipped.get(k)!r}"
                                       for k in sorted(differ))
                    self.assertEqual(differ, set(allowed), f"{host_name} {name}:\n{detail}")
                    if name in ("realtime-virtual-host", "cpu-partitioning"):
                        # From the scripts: KSM off, KVM's low-latency parameters where the modules are.
                        self.assertEqual(imported.get(KSM), "2")
                        if host_name == "intel-2s":
                            for k in ("module/kvm/kvmclock_periodic_sync", "module/kvm/nx_huge_pages",
                                      "module/kvm_intel/ple_gap"):
                                self.assertIn(k, imported)
                    if name in ("realtime-virtual-host", "realtime-virtual-guest"):
                        sched = [k for k in imported if k.startswith("kthread/ksoftirqd/") and k.endswith("/sched")]
                        self.assertTrue(sched, "no ksoftirqd priority compared")
                        self.assertEqual(imported[sched[0]], "fifo:2")


if __name__ == "__main__":
    if TUNED is None:
        print(f"skip: Debian's tuned package is not available: {WHY}")
        sys.exit(77)
    unittest.main()
