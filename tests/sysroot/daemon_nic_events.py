#!/usr/bin/env python3
"""rtpartd applies a NIC's knobs again when the kernel says the NIC came or came back up.

rtpartd (the simulator's, on a copy of the vm host, whose enp1s0 is a 4-queue virtio_net NIC)
runs in a network namespace of its own (unshare --net, as root), so that its uevent and rtnetlink
sockets hear only what this test does there on this machine's kernel. A profile cuts enp1s0 to the
housekeeping channel count with RPS and XPS on housekeeping. The test then does what a driver does
when its NIC is reset (the channels back to 4, rx-0's RPS mask cleared: the files of the tree) and
makes the kernel event in the namespace:

- a new interface named enp1s0 (a veth pair: uevent "add" and RTM_NEWLINK), as after a driver
  unbind and bind or a new NIC;
- enp1s0 set down, reset, and up again (RTM_NEWLINK with IFF_UP).

The driver also places its queue pairs' IRQs at every channel count set, as virtio_net does: cut to
one channel, pair 0's IRQs go to every CPU; rtpartd places them again on housekeeping.

Each time rtpartd puts the channels and the mask back, says so in its log ("Interface enp1s0
(add|up): set N knobs ... again") and sends a "corrected" event naming the NIC's knobs on the
Monitor stream. Under drift policy "report" (the default) nothing else would write them back.

Exits 77 without root, unshare or ip. bench/bench-nic-events.py measures the time it takes.
"""
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import DAEMON, IFACE, VG, Daemon, Varlink, close_daemon  # noqa: E402

NIC = "sys/class/net/enp1s0"
PROFILE = {
    "summary": "NIC events test: enp1s0's channels and packet steering",
    "cpus": {"housekeeping": "0"},
    "net": {"nics": [{"match": "enp1s0", "channels": "housekeeping", "rps_cpus": "housekeeping",
                      "xps_cpus": "housekeeping"}]},
    "irq": {"affinity": "housekeeping"},
    "drift": {"task_allow": ["*"]},
}


def missing():
    """Why the test cannot run here (None: it can)."""
    if os.geteuid() != 0:
        return "needs root for a network namespace"
    for tool in ("unshare", "nsenter", "ip"):
        if not shutil.which(tool):
            return f"{tool} is not installed (Debian packages util-linux, iproute2)"
    p = subprocess.run(["unshare", "--net", "true"], capture_output=True, text=True)
    if p.returncode != 0:
        return f"cannot make a network namespace: {p.stderr.strip()}"
    return None


class NetnsDaemon(Daemon):
    """rtpartd in a network namespace of its own (unshare execs it: the same PID)."""

    def start(self, *args, env=None):
        global_vg = list(VG)
        VG[:] = ["unshare", "--net"] + global_vg
        try:
            super().start(*args, env=env)
        finally:
            VG[:] = global_vg

    def ip(self, *args):
        subprocess.run(["nsenter", "-t", str(self.proc.pid), "-n", "ip", *args], check=True)

# enp1s0's queue pairs' IRQs (input, output) on the vm host, which its driver places itself at
# every channel count set: cut to one channel, pair 0's go to every CPU (virtnet_set_affinity()).
QUEUE_IRQS = [31, 32, 33, 34, 35, 36, 37, 38]


def reset(d):
    """What a driver's reset leaves: all its channels, each queue pair's IRQs on its own CPU, no
    RPS mask on rx-0."""
    d.write(NIC + "/sim-channels", "rx 0 0\ntx 0 0\nother 0 0\ncombined 4 4\nqueue-irqs %s\n" %
            " ".join(str(n) for n in QUEUE_IRQS))
    for i, n in enumerate(QUEUE_IRQS):
        d.write(f"proc/irq/{n}/smp_affinity_list", f"{i // 2}\n")
    d.write(NIC + "/queues/rx-0/rps_cpus", "0\n")


class NicEvents(unittest.TestCase):
    def setUp(self):
        why = missing()
        if why:
            self.skipTest(why)
        self.d = NetnsDaemon(host="vm", extra_profiles={"nic-events": PROFILE})
        self.d.start()
        c = Varlink(self.d.sock)
        r = c.call(IFACE + ".Apply", {"profile": "nic-events"})
        c.close()
        self.assertTrue(r["parameters"]["ok"], r)
        self.m = Varlink(self.d.sock)
        self.m.send(IFACE + ".Monitor", more=True)
        self.assertEqual(self.m.recv(timeout=5)["parameters"]["event"], "status")

    def tearDown(self):
        if getattr(self, "d", None):
            self.m.close()
            close_daemon(self, self.d)

    def applied(self):
        combined = [x for x in self.d.read(NIC + "/sim-channels").splitlines() if x.startswith("combined ")]
        return combined[0], self.d.read(NIC + "/queues/rx-0/rps_cpus")

    def corrected(self, timeout=5):
        """The knobs of the next "corrected" event within timeout seconds (None: none came)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                ev = self.m.recv(timeout=end - time.monotonic())
            except OSError:
                return None
            if ev and ev["parameters"]["event"] == "corrected":
                return sorted(x["knob"] for x in ev["parameters"]["drift"])
        return None

    def check_put_back(self, action, before):
        knobs = self.corrected()
        self.assertIsNotNone(knobs, f"no corrected event after {action}:\n{self.d.logtext()}")
        self.assertIn("net/enp1s0/channels", knobs)
        self.assertIn("net/enp1s0/rx-0/rps_cpus", knobs)
        self.assertEqual(self.applied(), before)
        self.assertIn(f"Interface enp1s0 ({action}): set ", self.d.logtext())
        # Its driver moved pair 0's IRQs when the channels were cut: they are placed again.
        for n in QUEUE_IRQS:
            self.assertEqual(self.d.read(f"proc/irq/{n}/smp_affinity_list"), "0", f"IRQ {n}:\n{self.d.logtext()}")

    def test_new_interface_and_link_up_put_the_nic_back(self):
        before = self.applied()
        self.assertEqual(before, ("combined 1 4", "1"))
        reset(self.d)
        self.assertNotEqual(self.applied(), before)
        # A NIC of that name comes (driver bound again, new NIC).
        self.d.ip("link", "add", "enp1s0", "type", "veth", "peer", "name", "rtpt-peer")
        self.check_put_back("add", before)
        # Down, reset by its driver, up.
        self.d.ip("link", "set", "enp1s0", "down")
        reset(self.d)
        self.d.ip("link", "set", "enp1s0", "up")
        self.check_put_back("up", before)

    def test_another_interface_changes_nothing(self):
        before = self.applied()
        reset(self.d)
        self.d.ip("link", "add", "rtpt-other", "type", "veth", "peer", "name", "rtpt-peer")
        self.d.ip("link", "set", "rtpt-other", "up")
        self.assertIsNone(self.corrected(timeout=1))
        self.assertNotEqual(self.applied(), before)


if __name__ == "__main__":
    why = missing()
    if why:
        print(f"SKIP: {why}")
        sys.exit(77)
    unittest.main(verbosity=2)
