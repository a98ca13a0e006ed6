#!/usr/bin/env python3
"""A NIC driver that places its queues' IRQs itself, when its channel count is set, never leaves an
IRQ off the profile's CPUs while verify says in sync.

virtio_net (virtnet_set_affinity()) spreads its queue pairs over the online CPUs each time its
channels are set: cut to one channel, queue pair 0's IRQs (virtio0-input.0, virtio0-output.0) go
to every online CPU, whatever was written there before. On the vm host (4 CPUs, enp1s0 a 4-queue
virtio_net NIC), the simulator does the same (sim-channels' queue-irqs line). A profile that cuts
enp1s0 to the housekeeping channel count (CPU 0: one channel) and puts every IRQ on housekeeping
is applied, then applied again at rtpartd's start after a reboot (a fresh proc, sys and run from
the fixture, the journal kept). Each time, every queue IRQ of enp1s0 must be on CPU 0, and verify
must not say in sync while one is not.
"""
import mmap
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import daemon as dm  # noqa: E402

NIC = "sys/class/net/enp1s0"
PROFILE = {
    "summary": "IRQ boot test: enp1s0's channels cut to housekeeping, every IRQ on housekeeping",
    "cpus": {"housekeeping": "0"},
    "irq": {"affinity": "housekeeping", "default_affinity": "housekeeping"},
    "net": {"nics": [{"match": "enp1s0", "channels": "housekeeping"}]},
    "drift": {"task_allow": ["*"]},
}


class IrqBoot(unittest.TestCase):
    def tearDown(self):
        if getattr(self, "d", None):
            dm.close_daemon(self, self.d)

    def queue_irqs(self, d):
        """enp1s0's queue IRQs, pair by pair (input, output), from /proc/interrupts."""
        found = {}
        for line in d.read("proc/interrupts").splitlines():
            m = re.match(r"\s*(\d+):.*virtio0-(input|output)\.(\d+)$", line)
            if m:
                found[(int(m.group(3)), m.group(2) == "output")] = int(m.group(1))
        return [found[k] for k in sorted(found)]

    def boot(self, d):
        """What a reboot leaves: proc, sys and run as the kernel makes them, the driver placing its
        queue IRQs at every channel count set; etc and the journal under var kept."""
        for top in ("proc", "sys", "run"):
            shutil.rmtree(d.path(top))
            shutil.copytree(os.path.join(dm.HOSTS, "vm", top), d.path(top), symlinks=True)
        irqs = " ".join(str(n) for n in self.queue_irqs(d))
        d.write(NIC + "/sim-channels", d.read(NIC + "/sim-channels") + "\nqueue-irqs " + irqs + "\n")

    def check_placed(self, d, when):
        off = {n: d.read(f"proc/irq/{n}/smp_affinity_list") for n in self.queue_irqs(d)}
        off = {n: a for n, a in off.items() if a != "0"}
        v = dm.call_ok(d.sock, "Verify")
        drifted = {e["knob"] for e in v["drift"]}
        for n in off:
            self.assertIn(f"irq/{n}/affinity", drifted, f"{when}: IRQ {n} on {off[n]}, verify: {v}")
        self.assertEqual(off, {}, f"{when}: enp1s0's queue IRQs not on CPU 0:\n{d.logtext()}")
        self.assertTrue(v["in_sync"], v)
        self.assertEqual(d.read(NIC + "/sim-channels").splitlines()[3], "combined 1 4")

    def test_driver_placed_queue_irqs_are_placed_again(self):
        d = self.d = dm.Daemon(extra_profiles={"irq-boot": PROFILE})
        self.boot(d)
        d.start()
        self.assertTrue(dm.call_ok(d.sock, "Apply", {"profile": "irq-boot"})["ok"])
        self.check_placed(d, "after Apply")
        d.stop()
        self.boot(d)
        d.start()
        self.check_placed(d, "after a reboot")

    def test_verify_reads_what_a_driver_set(self):
        # A driver's write raises no file event: the file changed in place as the kernel changes
        # it (through a mapping: no inotify event), and verify, answering from the live state,
        # reads it all the same.
        d = self.d = dm.Daemon(extra_profiles={"irq-boot": PROFILE})
        d.start()
        self.assertTrue(dm.call_ok(d.sock, "Apply", {"profile": "irq-boot"})["ok"])
        dm.call_ok(d.sock, "Verify")
        v = dm.call_ok(d.sock, "Verify")
        self.assertTrue(v["in_sync"], v)
        self.assertTrue(v["daemon"]["live"], v)
        self.assertFalse(v["daemon"]["freshness"]["irq"]["watched"], v)
        n = self.queue_irqs(d)[0]
        with open(d.path(f"proc/irq/{n}/smp_affinity_list"), "r+b") as f:
            with mmap.mmap(f.fileno(), 0) as mem:
                self.assertEqual(mem[:2], b"0\n")
                mem[:2] = b"2\n"
        v = dm.call_ok(d.sock, "Verify")
        self.assertFalse(v["in_sync"], v)
        self.assertEqual(v["drift"], [{"knob": f"irq/{n}/affinity", "domain": "irq", "expected": "0", "actual": "2"}])

    def test_apply_without_the_daemon_places_them_too(self):
        d = self.d = dm.Daemon(extra_profiles={"irq-boot": PROFILE})
        self.boot(d)
        p = subprocess.run([dm.CTL, "--root", d.root, "--no-daemon", "apply", "irq-boot"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        off = {n: d.read(f"proc/irq/{n}/smp_affinity_list") for n in self.queue_irqs(d)}
        self.assertEqual({n: a for n, a in off.items() if a != "0"}, {}, p.stdout)
        p = subprocess.run([dm.CTL, "--root", d.root, "--no-daemon", "verify"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
