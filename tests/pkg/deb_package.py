#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""rtpart's Debian package (suite pkg): `dpkg-buildpackage -b -us -uc` in a copy of the source
tree (tests/pkg/debbuild.py), once, then:

- debian/changelog carries meson.build's version, and so does the .deb; every Build-Depends is a
  package scripts/deps installs;
- the build ran the unit suite and nothing else (no host or vm test inside a package build);
- lintian on the .changes (the .deb, its -dbgsym and the .buildinfo) reports no error (warnings
  and information tags are printed);
- the .deb holds exactly what `meson install` installs: rtpartd and rtpartctl, the units, the
  D-Bus policy and activation file, tmpfiles.d, the man pages of man/*.scd and the profiles of
  profiles/*.json, plus the copyright and changelog; no test program, no simulator build, no
  library or header (librtpart is internal). The programs are the shipped builds, not the
  simulator's (which name the RTPART_TEST_ variables of tests/sim/sim-root.c);
- the unit starts the packaged rtpartd; the maintainer scripts enable rtpartd.service and
  rtpartd.socket and start them only where systemd runs (never in a chroot), and create the
  tmpfiles.d directories;
- it depends on the libraries the programs load.

The .deb is kept in the build directory (pkg/) for the vm suite, which installs it in its guests.
Exits 77 when dpkg-buildpackage, debhelper or lintian is missing (scripts/deps --test).
"""
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debbuild  # noqa: E402

SOURCE = os.environ.get("RTPART_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("RTPART_BUILD_DIR") or os.path.join(SOURCE, "build")

failures = []


def check(name, ok, got=None):
    print(("ok: " if ok else "FAILED: ") + name + ("" if ok or got is None else f" (got: {got})"))
    if not ok:
        failures.append(name)


def expected_files():
    """What `meson install` installs (meson.build, daemon/, systemd/, man/, profiles/), as the
    package's paths, plus what dh adds."""
    files = {
        "usr/bin/rtpartctl",
        "usr/bin/rtpartd",
        # Debian 12's systemd.pc puts units in /lib/systemd/system.
        "lib/systemd/system/rtpartd.service",
        "lib/systemd/system/rtpartd.socket",
        "usr/lib/tmpfiles.d/rtpart.conf",
        "usr/share/dbus-1/system.d/org.rtpart.Manager1.conf",
        "usr/share/dbus-1/system-services/org.rtpart.Manager1.service",
        "usr/share/doc/rtpart/copyright",
        "usr/share/doc/rtpart/changelog.gz",
        "usr/share/lintian/overrides/rtpart",  # debian/rtpart.lintian-overrides
        "usr/share/bash-completion/completions/rtpartctl",  # shell-completion/
        "usr/libexec/rtpart/rtpart-libvirt-hook",  # daemon/hook/
        "etc/libvirt/hooks/qemu.d/rtpart",  # its link, where libvirt looks
    }
    # docs/: the fleet's examples, uncompressed (debian/rules: dh_compress leaves them alone)
    for sub in ("ansible", "prometheus", "grafana"):
        for d, _, names in os.walk(os.path.join(SOURCE, "docs", sub)):
            for n in names:
                if n.endswith(".test.yml"):
                    continue  # the rules' promtool test stays in the source (docs/meson.build)
                files.add(os.path.join("usr/share/doc/rtpart", os.path.relpath(os.path.join(d, n), os.path.join(SOURCE, "docs"))))
    for n in os.listdir(os.path.join(SOURCE, "man")):
        m = re.match(r"(.+\.(\d))\.scd$", n)
        if m:
            files.add(f"usr/share/man/man{m.group(2)}/{m.group(1)}.gz")
    for n in os.listdir(os.path.join(SOURCE, "profiles")):
        if n.endswith(".json"):
            files.add(f"usr/share/rtpart/profiles/{n}")
    return files


def deb_members(deb):
    """{path: TarInfo} of the .deb's data (no leading ./), directories left out."""
    data = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE, check=True).stdout
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        for m in t.getmembers():
            if not m.isdir():
                out[os.path.normpath(m.name)] = (m, t.extractfile(m).read() if m.isfile() else None)
    return out


def deps_packages():
    """Every package scripts/deps names (its build and its --test lists)."""
    with open(os.path.join(SOURCE, "scripts", "deps")) as f:
        text = f.read()
    names = set()
    for m in re.finditer(r'PACKAGES="([^"]*)"', text):
        names |= {n for n in m.group(1).split() if not n.startswith("$")}
    return names


def build_depends():
    """The package names of debian/control's Build-Depends (comments left out)."""
    with open(os.path.join(SOURCE, "debian", "control")) as f:
        text = "".join(line for line in f if not line.startswith("#"))
    m = re.search(r"^Build-Depends:(.*?)(?=^\S)", text, re.M | re.S)
    names = []
    for dep in m.group(1).split(",") if m else []:
        dep = dep.split("|")[0].strip()
        if dep:
            names.append(re.match(r"[^\s(<\[]+", dep).group(0))
    return names


def main():
    tool = debbuild.missing_tool()
    if tool:
        print(f"SKIP: {tool} is not installed (scripts/deps --test)")
        return 77
    if not shutil.which("lintian"):
        print("SKIP: lintian (Debian package lintian) is not installed (scripts/deps --test)")
        return 77

    version = debbuild.project_version(SOURCE)
    check("debian/changelog's version is meson.build's project() version",
          version and debbuild.changelog_version(SOURCE) == version, f"{debbuild.changelog_version(SOURCE)} vs {version}")
    bd = build_depends()
    have = deps_packages() | {"debhelper-compat"}
    check("debian/control has Build-Depends", len(bd) > 5, bd)
    check("every Build-Depends is a package scripts/deps installs", set(bd) <= have, " ".join(sorted(set(bd) - have)))

    work = tempfile.mkdtemp(prefix="rtpart-deb-test-", dir="/var/tmp")
    try:
        files = debbuild.source_files(SOURCE)
        key = debbuild.tree_key(SOURCE, files)
        t0 = time.monotonic()
        rc, out, outdir = debbuild.build(SOURCE, work)
        print(f"dpkg-buildpackage -b -us -uc: exit {rc} after {time.monotonic() - t0:.0f} s")
        if rc != 0:
            print(out[-8000:])
            if "Unmet build dependencies" in out:
                print("(scripts/deps --test installs them)")
        check("dpkg-buildpackage -b -us -uc exits 0", rc == 0, rc)
        deb = debbuild.main_deb(outdir)
        changes = [os.path.join(outdir, n) for n in os.listdir(outdir) if n.endswith(".changes")]
        check("the build made one rtpart .deb and a .changes", deb and len(changes) == 1, sorted(os.listdir(outdir)))
        if rc != 0 or not deb or len(changes) != 1:
            return 1

        # Only the unit suite ran inside the build (no root, no VM, no change to this machine).
        tree = os.path.join(outdir, "rtpart")
        logs = [os.path.join(tree, d, "meson-logs", "testlog.json") for d in os.listdir(tree) if d.startswith("obj-")]
        suites, ran, bad = set(), 0, []
        for log in logs:
            if os.path.exists(log):
                with open(log) as f:
                    for line in f:
                        if line.strip():
                            t = json.loads(line)
                            # "rtpart:unit / test-cpu-set": the project and suite, then the test;
                            # "rtpart:unit+shipped / …" for a test of two suites: unit is the one
                            project, _, names = t.get("name", "").split(" / ")[0].partition(":")
                            suites.add(f"{project}:unit" if "unit" in names.split("+") else f"{project}:{names}")
                            ran += 1
                            if t.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL"):
                                bad.append(t.get("name"))
        check("dh_auto_test ran the unit suite, and only it", ran > 0 and suites == {"rtpart:unit"},
              " ".join(sorted(suites)) or "no test ran")
        check("every test of that run passed or skipped", ran > 0 and not bad, bad)

        # lintian
        p = subprocess.run(["lintian", "--display-info", "--show-overrides", changes[0]],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        tags = [line for line in p.stdout.splitlines() if re.match(r"[EWIPXON]: ", line)]
        for line in tags:
            print(f"lintian: {line}")
        errors = [t for t in tags if t.startswith("E: ")]
        check("lintian reports no error on the .changes (.deb, -dbgsym, .buildinfo)", not errors, errors)
        if not errors:
            check("lintian ran to its end (exit status 0)", p.returncode == 0, p.stdout[-2000:])

        # Control fields.
        arch = subprocess.run(["dpkg", "--print-architecture"], stdout=subprocess.PIPE, text=True).stdout.strip()
        fields = {f: debbuild.control_field(deb, f) for f in ("Package", "Version", "Architecture")}
        check("the package is rtpart, meson.build's version, this architecture",
              fields == {"Package": "rtpart", "Version": version, "Architecture": arch}, fields)
        deps = debbuild.depends_packages(deb)
        check("it depends on the libraries the programs load (libc6, libsystemd0, libjansson4, libcgroup2)",
              {"libc6", "libsystemd0", "libjansson4", "libcgroup2"} <= set(deps), deps)

        # The files.
        members = deb_members(deb)
        have_files = set(members)
        want = expected_files()
        check("the .deb holds everything meson installs", want <= have_files, " ".join(sorted(want - have_files)))
        extra = sorted(have_files - want)
        check("and nothing else (no test file, simulator build, library or header)", not extra, " ".join(extra))
        shady = [n for n in have_files if re.search(r"(^|/)(tests?|sim|fuzz|bench)(/|$)|\.(a|so|h|py)$|test", n)]
        check("no path names a test, the simulator, a fuzzer or a library", not shady, shady)
        for prog in ("rtpartctl", "rtpartd"):
            m, data = members.get(f"usr/bin/{prog}", (None, b""))
            check(f"/usr/bin/{prog} is an executable ELF file, root-owned",
                  m is not None and data[:4] == b"\x7fELF" and m.mode & 0o111 and m.uid == 0 and m.gid == 0,
                  m and (oct(m.mode), m.uid, m.gid))
            sim = sorted(set(re.findall(rb"RTPART_TEST_[A-Z_]+", data or b"")))
            check(f"/usr/bin/{prog} is the shipped build, not the simulator's (no RTPART_TEST_ variable)", not sim, sim)
        unit = (members.get("lib/systemd/system/rtpartd.service", (None, b""))[1] or b"").decode()
        check("rtpartd.service starts the packaged /usr/bin/rtpartd", "\nExecStart=/usr/bin/rtpartd\n" in unit,
              re.findall(r"ExecStart=.*", unit))
        policy = (members.get("usr/share/dbus-1/system.d/org.rtpart.Manager1.conf", (None, b""))[1] or b"").decode()
        check("the D-Bus policy lets root own org.rtpart.Manager1", '<allow own="org.rtpart.Manager1"/>' in policy)
        tmpfiles = (members.get("usr/lib/tmpfiles.d/rtpart.conf", (None, b""))[1] or b"").decode()
        check("tmpfiles.d makes /var/lib/rtpart", re.search(r"^d /var/lib/rtpart ", tmpfiles, re.M), tmpfiles)
        for n, (m, data) in members.items():
            if n.startswith("usr/share/man/"):
                check(f"{n} is a non-empty man page", data and len(data) > 100 and data[:2] == b"\x1f\x8b", len(data or b""))

        # The maintainer scripts: enabled the Debian way, started only where systemd runs.
        ctl = os.path.join(work, "control")
        subprocess.run(["dpkg-deb", "-e", deb, ctl], check=True)

        def script(name):
            path = os.path.join(ctl, name)
            return open(path).read() if os.path.exists(path) else ""

        postinst, prerm = script("postinst"), script("prerm")
        for u in ("rtpartd.service", "rtpartd.socket"):
            check(f"postinst enables {u} (deb-systemd-helper)", f"deb-systemd-helper enable '{u}'" in postinst)
        start = re.search(r"if \[ -d /run/systemd/system \]; then(.*?)\n\tfi", postinst, re.S)
        check("postinst starts rtpartd.service and rtpartd.socket only where systemd runs (not in a chroot)",
              start and "deb-systemd-invoke $_dh_action 'rtpartd.service' 'rtpartd.socket'" in start.group(1)
              and postinst.count("deb-systemd-invoke") == 1)
        check("postinst creates the tmpfiles.d directories", "systemd-tmpfiles" in postinst and "--create rtpart.conf" in postinst)
        check("prerm stops rtpartd on removal", "deb-systemd-invoke stop 'rtpartd.service' 'rtpartd.socket'" in prerm)

        if not failures:
            kept = debbuild.store(BUILD, key, deb)
            print(f"kept {kept} for the vm suite")
    finally:
        if os.environ.get("RTPART_PKG_KEEP"):
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
