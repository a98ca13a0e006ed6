#!/usr/bin/env python3
"""rtpartctl as rtpartd's client, against a fake rtpartd: a small varlink server (this file run
with --serve) that answers each call with a reply the test chose.

- The socket is found inside --root: with ROOT/run a symlink (absolute, or relative through "..")
  to another tree's run directory where a server listens, rtpartctl --root ROOT never connects
  to that server and works on the tree directly.
- The peer is checked: a server running as another user (uid 65534) gets no call and its answer is
  never printed; root's rtpartctl exits 1 and says who serves the socket.
- A reply of the wrong shape ({"changes": [{}]} for Plan, a string where a number belongs, …) is
  exit 1 with a message naming the JSON pointer, for every verb that prints rtpartd's documents;
  never a crash.
- Control characters in a reply (ESC, OSC, BEL, C1) are printed escaped ("\\x1b"), on standard
  output and standard error, in every text output.

Run by meson (suite sysroot) with RTPARTCTL, RTPART_SOURCE_DIR and RTPART_BUILD_DIR set. The foreign
peer needs root (77 for that test otherwise).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sysroot_apply import CTL, copy_host  # noqa: E402

SOCKET = os.path.join("run", "rtpartd", "org.rtpart.Manager")
IFACE = "org.rtpart.Manager"
NOBODY = 65534

SERVER = r'''
import json, os, socket, sys
path, replies = sys.argv[1], json.loads(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o777)
s.listen(16)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    buf = b""
    while b"\0" not in buf:
        d = c.recv(65536)
        if not d:
            break
        buf += d
    if b"\0" not in buf:
        c.close()
        continue
    method = json.loads(buf.split(b"\0")[0]).get("method", "")
    print("call", method, flush=True)
    answer = replies.get(method.rsplit(".", 1)[-1], {"error": "org.varlink.service.MethodNotFound"})
    for m in answer if isinstance(answer, list) else [answer]:
        c.sendall((m if isinstance(m, str) else json.dumps(m)).encode() + b"\0")
    c.close()
'''


def python_for(uid):
    """An interpreter uid may run (a pyenv under /root is not one for uid 65534)."""
    if uid is None:
        return sys.executable
    py = next((x for x in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable)
               if os.access(x, os.X_OK) and not x.startswith("/root/")), None)
    if not py:
        raise unittest.SkipTest("no python3 outside /root for a server of another user")
    return py


class FakeDaemon:
    """The server at path, as uid when given; calls() lists the methods it was called with."""

    def __init__(self, path, replies, uid=None):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if uid is not None:
            os.chown(os.path.dirname(path), uid, uid)
        self.proc = subprocess.Popen([python_for(uid), "-c", SERVER, path, json.dumps(replies)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     user=uid, group=uid, extra_groups=[] if uid is not None else None)
        line = self.proc.stdout.readline()
        assert line == "ready\n", (line, self.proc.stderr.read())

    def calls(self):
        """The methods called; ends the server (by its PID)."""
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=30)
        return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("call ")]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.communicate(timeout=30)


def ctl(root, *args):
    return subprocess.run([CTL, "--root", root, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, timeout=120)


def plan_doc(marker):
    return {"profile": marker, "cpus": {"isolated": "1", "housekeeping": "0"},
            "host": {"cpus_online": 2, "nodes": 1, "cgroup": "v2", "bootloader": "grub", "systemd": False},
            "changes": [], "unchanged": [], "notes": [], "summary": {"changes": 0, "reboot": 0, "unchanged": 0}}


class ClientTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rtpart-client-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        os.chmod(self.tmp, 0o755)
        self.root = os.path.join(self.tmp, "root")
        copy_host("vm", self.root)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def serve(self, path, replies, uid=None):
        if os.path.exists(path):
            os.unlink(path)
        s = FakeDaemon(path, replies, uid)
        self.servers.append(s)
        return s


def status_doc(profile):
    return {"profile": profile, "applied_at": "2024-01-01T00:00:00Z", "knobs": 2, "drift": 1,
            "drifted": [{"knob": "sysctl/kernel.panic", "domain": "sysctl", "expected": "0", "actual": "77"}],
            "reboot_required": False, "reboot_pending": [], "unmovable": [], "originals": 2, "last_error": None,
            "transaction_open": False}


def verify_doc():
    return {"profile": "p", "in_sync": True, "reboot_required": False, "drift": [], "reboot_pending": [],
            "unmovable": [], "checked": 1, "transaction_open": False}


def apply_doc():
    return {"ok": True, "profile": "p", "host_changed": True, "changed": 1, "unchanged": 0, "unmovable": 0,
            "skipped": 0, "restored": 0, "reboot_required": False, "reboot_changes": 0, "reboot_knobs": [],
            "recovered": False, "notes": []}


def revert_doc():
    return {"ok": True, "restored": 1, "failed": 0, "skipped": 0, "recovered": False, "error": None, "notes": []}


# Each verb, the method it calls, and answers of the wrong shape, with the first member named.
WRONG = [
    ("plan", "Plan", {"parameters": {"changes": [{}]}}, "/profile: missing"),  # the crash of issue 22
    ("plan", "Plan", {"parameters": dict(plan_doc("x"), changes=[{}])}, "/changes/0/knob: missing"),
    ("plan", "Plan", {"parameters": dict(plan_doc("x"), changes=[{"knob": "sysctl/a"}])}, "/changes/0/domain: missing"),
    ("plan", "Plan", {"parameters": dict(plan_doc("x"), changes=[{"knob": "sysctl/a", "domain": "nosuch"}])},
     "/changes/0/domain: a knob domain's name belongs here"),
    ("plan", "Plan", {"parameters": dict(plan_doc("x"), summary={"changes": "1", "reboot": 0, "unchanged": 0})},
     "/summary/changes: an integer belongs here"),
    ("list", "ListProfiles", {"parameters": {"profiles": [{"summary": "no name"}]}}, "/0/name: missing"),
    ("list", "ListProfiles", {"parameters": {"profiles": "x"}}, "/: an array belongs here"),
    ("apply", "Apply", {"parameters": dict(apply_doc(), profile=3)}, "/profile: a string belongs here"),
    ("apply", "Apply", {"error": IFACE + ".Failed", "parameters": {"message": "m", "details": {"ok": False}}},
     "/error: missing"),
    ("verify", "Verify", {"parameters": dict(verify_doc(), drift=[{"knob": 1}])}, "/drift/0/knob: a string belongs here"),
    ("status", "Status", {"parameters": {}}, "/knobs: missing"),
    ("status", "Status", {"parameters": dict(status_doc("p"), drifted=[{"knob": "k"}])}, "/drifted/0/domain: missing"),
    ("revert", "Revert", {"parameters": dict(revert_doc(), ok="yes")}, "/ok: true or false belongs here"),
    ("revert", "Revert", {"error": IFACE + ".Failed", "parameters": {"message": "m", "details": {"ok": False}}},
     "/restored: missing"),
    ("watch", "Watch", [{"parameters": {"event": 5}, "continues": True}], "/event: a string belongs here"),
]

ESC = "\u001b]0;pwned\u0007\u001b[2J\u009b31m"


class Shape(ClientTest):
    def test_wrong_shape_is_exit_1_named(self):
        for verb, method, reply, pointer in WRONG:
            with self.subTest(verb=verb, reply=reply):
                server = self.serve(os.path.join(self.root, SOCKET), {method: reply})
                p = ctl(self.root, verb, *(["realtime"] if verb in ("plan", "apply") else []))
                self.assertEqual(server.calls(), [f"{IFACE}.{method}"])
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertEqual(p.stdout, b"")
                self.assertIn(f"rtpartd's answer to {method} is not what rtpartctl reads ({pointer}".encode(),
                              p.stderr)


class Escapes(ClientTest):
    def check(self, p):
        for stream in (p.stdout, p.stderr):
            for byte in (b"\x1b", b"\x07", b"\xc2\x9b"):
                self.assertNotIn(byte, stream)
        self.assertIn(b"\\x1b]0;pwned\\x07\\x1b[2J\\xc2\\x9b31m", p.stdout + p.stderr)

    def test_control_characters_printed_escaped(self):
        plan = plan_doc(ESC)
        plan["notes"] = [ESC]
        plan["changes"] = [{"knob": "sysctl/kernel.panic", "domain": "sysctl", "current": ESC, "desired": "0",
                            "kind": "auto", "note": ESC}]
        replies = {
            "Plan": {"parameters": plan},
            "ListProfiles": {"parameters": {"profiles": [{"name": "x", "summary": ESC, "origin": "user"}]}},
            "Status": {"parameters": dict(status_doc(ESC), unmovable=[ESC], last_error={"message": ESC, "at": ESC})},
            "Verify": {"parameters": {"profile": ESC, "in_sync": False, "reboot_required": False, "checked": 1,
                                      "drift": [{"knob": ESC, "domain": "sysctl", "expected": ESC, "actual": ESC}],
                                      "reboot_pending": [], "unmovable": [], "transaction_open": False}},
            "Apply": {"error": IFACE + ".InvalidProfile", "parameters": {"message": ESC}},
            "Revert": {"error": IFACE + ".Failed", "parameters": {"message": ESC}},
            "Watch": [{"parameters": {"event": "status", "profile": ESC, "drift_count": 1,
                                      "drift": [{"knob": ESC, "domain": "sysctl", "expected": ESC}]},
                       "continues": True}],
        }
        self.serve(os.path.join(self.root, SOCKET), replies)
        for args in (["plan", "realtime"], ["list"], ["status"], ["verify"], ["apply", "realtime"], ["revert"],
                     ["watch"]):
            with self.subTest(args=args):
                p = ctl(self.root, *args)
                self.assertIn(p.returncode, (0, 1, 2, 3), p.stderr)
                self.check(p)
        # A profile's own strings, printed by rtpartctl itself.
        d = os.path.join(self.root, "etc", "rtpart", "profiles")
        os.makedirs(d)
        with open(os.path.join(d, "evil.json"), "w") as f:
            json.dump({"summary": ESC, "include": "realtime"}, f)
        with open(os.path.join(d, "bad.json"), "w") as f:
            json.dump({"cpus": {"isolated": ESC}}, f)
        p = ctl(self.root, "--no-daemon", "list")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.check(p)
        p = ctl(self.root, "--no-daemon", "plan", "bad")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.check(p)
        # JSON escapes them as JSON does, C1 too.
        p = ctl(self.root, "--no-daemon", "--json", "list")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(all(0x20 <= b < 0x7f or b == 0x0a for b in p.stdout))
        self.assertEqual([e["summary"] for e in json.loads(p.stdout) if e["name"] == "evil"], [ESC])


class SocketInRoot(ClientTest):
    def elsewhere(self):
        """A server in another tree's run directory, answering Status as no rtpartd would."""
        other = os.path.join(self.tmp, "other")
        status = {"parameters": {"profile": "OTHER-HOST", "applied_at": "2024-01-01T00:00:00Z", "knobs": 1,
                                 "drift": 0, "reboot_required": False, "reboot_pending": [], "unmovable": [],
                                 "originals": 1, "last_error": None, "transaction_open": False}}
        return self.serve(os.path.join(other, SOCKET), {"Status": status, "Revert": status})

    def check_not_reached(self, server):
        p = ctl(self.root, "status")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(b"OTHER-HOST", p.stdout)
        self.assertIn(b"Profile:     none applied", p.stdout)
        self.assertEqual(server.calls(), [])

    def test_absolute_link_to_another_run(self):
        server = self.elsewhere()
        shutil.rmtree(os.path.join(self.root, "run"))
        os.symlink(os.path.join(self.tmp, "other", "run"), os.path.join(self.root, "run"))
        self.check_not_reached(server)

    def test_relative_link_through_dotdot(self):
        server = self.elsewhere()
        shutil.rmtree(os.path.join(self.root, "run"))
        os.symlink(os.path.join("..", "other", "run"), os.path.join(self.root, "run"))
        self.check_not_reached(server)

    def test_socket_of_the_tree_is_used(self):
        server = self.serve(os.path.join(self.root, SOCKET), {"Plan": {"parameters": plan_doc("IN-TREE")}})
        p = ctl(self.root, "plan", "realtime")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"Profile IN-TREE for", p.stdout)
        self.assertEqual(server.calls(), [IFACE + ".Plan"])


class Peer(ClientTest):
    def test_foreign_server_gets_no_call(self):
        if os.geteuid() != 0:
            self.skipTest("a server of another user needs root to start")
        server = self.serve(os.path.join(self.root, SOCKET), {"Plan": {"parameters": plan_doc("FAKE")}}, uid=NOBODY)
        p = ctl(self.root, "plan", "realtime")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stdout, b"")
        self.assertIn(f"{self.root}/{SOCKET} is served by uid {NOBODY} (pid ".encode(), p.stderr)
        self.assertIn(b"neither root nor you", p.stderr)
        self.assertEqual(server.calls(), [])
        # Given explicitly, the same.
        server = self.serve(os.path.join(self.tmp, "sock", "s"), {"Plan": {"parameters": plan_doc("FAKE")}}, uid=NOBODY)
        p = ctl(self.root, "--varlink-socket", os.path.join(self.tmp, "sock", "s"), "plan", "realtime")
        self.assertEqual((p.returncode, p.stdout), (1, b""), p.stderr)
        self.assertEqual(server.calls(), [])


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
