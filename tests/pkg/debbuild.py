# SPDX-License-Identifier: LGPL-2.1-or-later
"""Building rtpart's Debian package from the source tree, for the tests (tests/pkg/deb_package.py
and the vm suite's systemd guests, which install it).

The package is built the way a user builds it, `dpkg-buildpackage -b -us -uc`, in a copy of the
source tree (the files git knows, tracked or new and not ignored: what a clone holds, without any
build directory), so that the tree itself is never touched. A build's .deb is kept in the build
directory under pkg/ keyed by a hash of every copied file, so that the vm tests install the
package of the tree as it is without building it again.
"""
import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile

BUILD_TIMEOUT = 1800
# What a build needs beyond rtpart's own build dependencies: tool, Debian package.
TOOLS = (("dpkg-buildpackage", "dpkg-dev"), ("dh", "debhelper"), ("dpkg-deb", "dpkg"))


def missing_tool():
    """The first tool a package build lacks, as "TOOL (Debian package PKG)", or None."""
    for tool, pkg in TOOLS:
        if not shutil.which(tool):
            return f"{tool} (Debian package {pkg})"
    return None


def source_files(source):
    """The files of the tree, relative to it: git's tracked and untracked-but-not-ignored files
    when it is a git checkout, else every file outside build directories and .git."""
    p = subprocess.run(["git", "-C", source, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if p.returncode == 0 and p.stdout:
        names = [n.decode() for n in p.stdout.split(b"\0") if n]
        # A file deleted but not yet staged is still listed.
        return sorted(n for n in set(names) if os.path.isfile(os.path.join(source, n)))
    files = []
    for d, dirs, names in os.walk(source):
        rel = os.path.relpath(d, source)
        dirs[:] = [x for x in dirs if x != ".git" and not (rel == "." and (x == "build" or x.startswith(("build-", "obj-"))))]
        files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    return sorted(files)


# Files the package build never reads: the tests and the benchmark that take its .deb. A change
# to them keeps the package kept for the tree.
KEY_EXCLUDED = ("tests/vm/", "tests/pkg/", "bench/isolation")


def tree_key(source, files):
    """A hash of the tree: every file's name, executable bit and content (but KEY_EXCLUDED)."""
    h = hashlib.sha256()
    for n in files:
        if n.startswith(KEY_EXCLUDED):
            continue
        path = os.path.join(source, n)
        h.update(n.encode() + b"\0" + (b"x" if os.access(path, os.X_OK) else b"-"))
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()[:16]


def copy_tree(source, files, dest):
    """The files into dest (made), with their modes."""
    for n in files:
        d = os.path.join(dest, os.path.dirname(n))
        os.makedirs(d, exist_ok=True)
        shutil.copy2(os.path.join(source, n), d, follow_symlinks=False)


def project_version(source):
    """The version in meson.build's project()."""
    with open(os.path.join(source, "meson.build")) as f:
        m = re.search(r"project\([^)]*?version\s*:\s*'([^']+)'", f.read(), re.S)
    return m.group(1) if m else None


def changelog_version(source):
    """The version of debian/changelog's first entry."""
    with open(os.path.join(source, "debian", "changelog")) as f:
        m = re.match(r"\S+ \(([^)]+)\)", f.readline())
    return m.group(1) if m else None


def build_env():
    """The environment of a build: this one without the test harness's own variables (meson's,
    Check's and rtpart's test variables would reach the package's unit suite)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("RTPART_", "MESON_", "CK_", "ASAN_", "UBSAN_"))}


def build(source, work):
    """Builds the package in a copy of source under work (made). Returns (returncode, output,
    outdir): outdir holds the .deb files, .changes and .buildinfo (the copy's parent)."""
    files = source_files(source)
    outdir = os.path.join(work, "out")
    tree = os.path.join(outdir, "rtpart")
    copy_tree(source, files, tree)
    p = subprocess.run(["nice", "-n", "10", "dpkg-buildpackage", "-b", "-us", "-uc"], cwd=tree, env=build_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=BUILD_TIMEOUT)
    return p.returncode, p.stdout, outdir


def main_deb(outdir):
    """The rtpart .deb of a build (not its -dbgsym), or None."""
    debs = glob.glob(os.path.join(outdir, "rtpart_*.deb"))
    return debs[0] if len(debs) == 1 else None


def cache_dir(build_dir):
    return os.path.join(build_dir, "pkg")


def store(build_dir, key, deb):
    """Keeps a build's .deb as the package of the tree with this key (replacing older ones)."""
    cache = cache_dir(build_dir)
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _store(cache, key, deb)


def _store(cache, key, deb):
    tmp = tempfile.mkdtemp(prefix=".new-", dir=cache)
    os.chmod(tmp, 0o755)
    shutil.copy2(deb, tmp)
    final = os.path.join(cache, key)
    shutil.rmtree(final, ignore_errors=True)
    os.rename(tmp, final)
    for old in os.listdir(cache):
        if old not in (key, ".lock") and not old.startswith(".new-"):
            shutil.rmtree(os.path.join(cache, old), ignore_errors=True)
    return os.path.join(final, os.path.basename(deb))


def cached_deb(source, build_dir, log=print):
    """The .deb of the tree as it is now: the one kept in build_dir/pkg for its key, else built
    (and kept). Raises RuntimeError when the build fails."""
    files = source_files(source)
    key = tree_key(source, files)
    cache = cache_dir(build_dir)
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; a second caller takes the first's
        kept = main_deb(os.path.join(cache, key))
        if kept:
            log(f"package: {kept} (kept for this tree)")
            return kept
        work = tempfile.mkdtemp(prefix="rtpart-deb-", dir="/var/tmp")
        try:
            log("package: dpkg-buildpackage -b -us -uc in a copy of the tree")
            rc, out, outdir = build(source, work)
            deb = main_deb(outdir)
            if rc != 0 or not deb:
                print(out[-6000:])
                raise RuntimeError(f"dpkg-buildpackage exited with {rc}" if rc else "the build made no rtpart .deb")
            return _store(cache, key, deb)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def control_field(deb, field):
    """A field of the .deb's control file ("" when absent)."""
    p = subprocess.run(["dpkg-deb", "-f", deb, field], stdout=subprocess.PIPE, text=True, check=True)
    return p.stdout.strip()


def depends_packages(deb):
    """The names of the packages the .deb depends on (the first of each set of alternatives)."""
    names = []
    for dep in control_field(deb, "Depends").split(","):
        dep = dep.split("|")[0].strip()
        if dep:
            names.append(re.match(r"[^\s(:]+", dep).group(0))
    return names
