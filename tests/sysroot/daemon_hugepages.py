#!/usr/bin/env python3
"""rtpartd watches the huge page pools it reserved as it watches every knob: on the two-node fake
host intel-2s, a profile reserving 2M pages on every node is applied over varlink; a write behind
rtpartd's back to node 1's pool (nr_hugepages) is a drift event on the Watch stream naming
hugepages/node1/2M with the expected and the actual count, Verify lists it, Correct puts the
pool back, and with drift policy "correct" rtpartd puts it back by itself. rtpartd watches, for a
node's pool, the node's file and the machine's pool of that size (a write there changes the
nodes' pools without an event on theirs).

Run by meson (suite sysroot) with the variables of daemon.py. Exits 77 (skip) with the reason when
it cannot run here (not root, the sim builds or the fake host missing).
"""
import os
import time
import unittest

from daemon import CTL, DAEMON, HOSTS, IFACE, SLOW, Daemon, call_ok, close_daemon, skip, watch

POOL = "sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages"
PAGES = {"summary": "2M pages on every node", "hugepages": {"pages": [{"size": "2M", "count": 64}]}}


class HugepagesDriftTest(unittest.TestCase):
    def setUp(self):
        self.d = None

    def tearDown(self):
        if self.d:
            close_daemon(self, self.d)

    def start(self, profile):
        self.d = Daemon(host="intel-2s", extra_profiles={"pages": profile})
        self.d.start()
        p = call_ok(self.d.sock, "Apply", {"profile": "pages"})
        self.assertTrue(p["ok"], p)
        self.assertEqual(self.d.read(POOL), "64")
        return self.d

    def next_event(self, w, kind):
        """The next event of kind on the Watch stream w (others, such as status, skipped)."""
        while True:
            ev = w.recv(timeout=2 * SLOW)
            self.assertIsNotNone(ev, f"no {kind} event within 2 s")
            if ev["parameters"]["event"] == kind:
                return ev["parameters"]

    def test_drift_reported_and_corrected(self):
        d = self.start(PAGES)
        c = d.client()
        st = c.call(IFACE + ".Status")["parameters"]
        c.close()
        self.assertEqual(st["drift"], 0)
        w = watch(d)
        t0 = time.monotonic()
        d.write(POOL, "0\n")
        ev = self.next_event(w, "drift")
        print(f"pool write → drift event: {(time.monotonic() - t0) * 1000:.1f} ms")
        self.assertEqual(ev["drift"], [{"knob": "hugepages/node1/2M", "domain": "hugepages", "expected": "64",
                                        "actual": "0"}])
        w.close()
        v = call_ok(d.sock, "Verify")
        self.assertEqual([x["knob"] for x in v["drift"]], ["hugepages/node1/2M"])
        r = call_ok(d.sock, "Correct")
        self.assertEqual([x["knob"] for x in r["corrected"]], ["hugepages/node1/2M"])
        self.assertEqual(d.read(POOL), "64")
        self.assertEqual(call_ok(d.sock, "Verify")["drift"], [])

    def test_correct_policy_puts_the_pool_back(self):
        d = self.start(dict(PAGES, drift={"policy": "correct"}))
        w = watch(d)
        d.write(POOL, "3\n")
        ev = self.next_event(w, "drift")
        self.assertEqual(ev["drift"][0]["knob"], "hugepages/node1/2M")
        ev = self.next_event(w, "corrected")
        self.assertTrue(ev["in_sync"])
        self.assertEqual(d.read(POOL), "64")
        w.close()

    def test_machine_pool_is_watched(self):
        # The files rtpartd watches: each node's pool file and the machine's pool of the size,
        # which both name (once).
        d = self.start(PAGES)
        c = d.client()
        st = c.call(IFACE + ".Status")["parameters"]
        c.close()
        self.assertEqual(st["daemon"]["watched_files"], 3)


if __name__ == "__main__":
    if not os.access(DAEMON, os.X_OK) or not os.access(CTL, os.X_OK):
        skip(f"{DAEMON} or {CTL} not built")
    if not os.path.isdir(os.path.join(HOSTS, "intel-2s")):
        skip(f"fixture host {HOSTS}/intel-2s missing (the build makes it)")
    if os.geteuid() != 0:
        skip("Apply over varlink needs a root peer (SO_PEERCRED uid 0); run as root")
    unittest.main(verbosity=2)
