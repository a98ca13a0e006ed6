/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "strv.h"
#include "test-tree.h"
#include "test-util.h"

/* The net backend on copies of the fixtures, whose NICs' channels the simulator keeps
 * (tests/sim/sim-net.c): intel-2s has eth1 (ixgbe, node 0), eth2 (i40e, node 0) and eth3 (ice,
 * node 1), 16 combined channels each; its housekeeping CPUs are 0,8,16,24, two on each node. */

#define NET "sys/class/net"
#define HK_MASK "01010101" /* 0,8,16,24 */

static const char *every_nic = "{\"net\": {\"rps_sock_flow_entries\": 30000, \"nics\": [{\"match\": \"*\", "
                               "\"channels\": \"housekeeping\", \"rps_cpus\": \"housekeeping\", "
                               "\"xps_cpus\": \"housekeeping\", \"rps_flow_cnt\": 100}]}}";

static char *host_dir, *prof_dir;

static void setup(void) {
        host_dir = tree_copy_host("intel-2s");
        prof_dir = test_tmpdir();
}

static void teardown(void) {
        tree_remove(host_dir);
        test_rmtree(prof_dir);
        free(host_dir);
        free(prof_dir);
        host_dir = prof_dir = NULL;
}

static char *profile(const char *json) {
        return test_profile(prof_dir, "nics", json);
}

static Plan *plan_of(const char *json, Root **ret_root, Host **ret_host) {
        test_open_host(host_dir, ret_root, ret_host);
        return test_plan_ok(*ret_root, *ret_host, prof_dir, "nics", json);
}

static void assert_knob(const Plan *p, const char *id, const char *current, const char *desired) {
        const Knob *k = plan_find(p, id);
        ck_assert_msg(k, "%s is not planned", id);
        ck_assert_msg(streq_ptr(k->current, current), "%s: current '%s', expected '%s'", id, strempty(k->current),
                      strempty(current));
        ck_assert_msg(streq_ptr(k->desired, desired), "%s: desired '%s', expected '%s'", id, strempty(k->desired),
                      strempty(desired));
}

/* Every NIC gets as many channels as there are housekeeping CPUs on its node, and the queues it
 * has after that (not the ones it has now) their masks; loopback sits on no device and is left
 * alone; flow table sizes are rounded up to powers of two, as the kernel rounds them. */
START_TEST(test_plan_every_nic) {
        Root *root;
        Host *host;
        _cleanup_(plan_freep) Plan *p = plan_of(every_nic, &root, &host);
        assert_knob(p, "net/eth1/channels", "rx 0 tx 0 other 1 combined 16", "rx 0 tx 0 other 1 combined 2");
        assert_knob(p, "net/eth3/channels", "rx 0 tx 0 other 1 combined 16", "rx 0 tx 0 other 1 combined 2");
        assert_knob(p, "net/eth2/rx-1/rps_cpus", "00000000", HK_MASK);
        assert_knob(p, "net/eth2/rx-0/rps_flow_cnt", "0", "128");
        assert_knob(p, "net/eth3/tx-0/xps_cpus", "00000100", HK_MASK);
        assert_knob(p, "net/rps_sock_flow_entries", "0", "32768");
        ck_assert_ptr_null(plan_find(p, "net/eth1/rx-2/rps_cpus"));
        ck_assert_ptr_null(plan_find(p, "net/eth1/tx-15/xps_cpus"));
        ck_assert_ptr_null(plan_find(p, "net/lo/rx-0/rps_cpus"));
        /* 3 NICs: channels, 2 rx queues with 2 files, 2 tx queues; and the flow table. */
        ck_assert_uint_eq(plan_count_domain(p, DOMAIN_NET), 3 * (1 + 4 + 2) + 1);
        /* NIC channels go before the IRQs a channel change requests again or moves. */
        size_t first_irq = SIZE_MAX, last_net = 0;
        for (size_t i = 0; i < p->n_knobs; i++)
                if (p->knobs[i].domain == DOMAIN_IRQ && first_irq == SIZE_MAX)
                        first_irq = i;
                else if (p->knobs[i].domain == DOMAIN_NET)
                        last_net = i;
        ck_assert(first_irq == SIZE_MAX || last_net < first_irq);
        host_free(host);
        root_free(root);
}
END_TEST

/* Rules: the first that matches a NIC wins, by name or driver (both where both are given); a rule
 * that sets nothing leaves its NICs alone; a number is a number, capped at the NIC's maximum. */
START_TEST(test_plan_rules) {
        Root *root;
        Host *host;
        _cleanup_(plan_freep) Plan *p =
                plan_of("{\"net\": {\"nics\": [{\"match\": \"eth3\"}, {\"driver\": \"i40e\", \"channels\": 99},"
                        " {\"match\": \"eth*\", \"driver\": \"ixgbe\", \"channels\": 4, \"xps_cpus\": \"0-1\"}]}}",
                        &root, &host);
        assert_knob(p, "net/eth2/channels", "rx 0 tx 0 other 1 combined 16", "rx 0 tx 0 other 1 combined 32");
        assert_knob(p, "net/eth1/channels", "rx 0 tx 0 other 1 combined 16", "rx 0 tx 0 other 1 combined 4");
        assert_knob(p, "net/eth1/tx-3/xps_cpus", "00000008", "00000003");
        ck_assert_ptr_null(plan_find(p, "net/eth1/tx-4/xps_cpus"));
        ck_assert_ptr_null(plan_find(p, "net/eth1/rx-0/rps_cpus"));
        ck_assert_ptr_null(plan_find(p, "net/eth3/channels"));
        ck_assert(plan_has_note(p, "eth2 takes at most 32 channels"));
        host_free(host);
        root_free(root);
}
END_TEST

/* What a profile file cannot say: each is refused at its pointer with the fix. */
START_TEST(test_plan_errors) {
        Root *root;
        Host *host;
        test_open_host(host_dir, &root, &host);
        test_plan_err(root, host, prof_dir, "bad", "{\"net\": {\"nics\": [{\"channels\": 2}]}}", "/net/nics/0",
                      "missing \"match\"");
        test_plan_err(root, host, prof_dir, "bad",
                      "{\"net\": {\"nics\": [{\"match\": \"*\", \"channels\": \"many\"}]}}", "/net/nics/0/channels",
                      "\"housekeeping\"");
        test_plan_err(root, host, prof_dir, "bad", "{\"net\": {\"nics\": [{\"match\": \"*\", \"tx_channels\": 0}]}}",
                      "/net/nics/0/tx_channels", "from 1");
        test_plan_err(root, host, prof_dir, "bad", "{\"net\": {\"nics\": [{\"match\": \"*\", \"rps_cpu\": \"0\"}]}}",
                      "/net/nics/0/rps_cpu", "did you mean \"rps_cpus\"");
        test_plan_err(root, host, prof_dir, "bad", "{\"net\": {\"rps_sock_flow_entries\": -1}}",
                      "/net/rps_sock_flow_entries", "");
        host_free(host);
        root_free(root);
}
END_TEST

/* Apply cuts the channels and writes the masks of the queues left; verify finds it all in sync;
 * revert brings back the counts, the queues the change took and every mask, byte for byte. */
START_TEST(test_apply_verify_revert) {
        _cleanup_free_ char *before = tree_snapshot(host_dir), *path = profile(every_nic);
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, path, &res), 0);
        ck_assert_uint_eq(res.skipped, 0);
        ck_assert_uint_eq(res.refused, 0);
        engine_result_done(&res);
        tree_assert_file(host_dir, NET "/eth1/sim-channels", "rx 0 0\ntx 0 0\nother 1 1\ncombined 2 63\n");
        ck_assert(!tree_exists(host_dir, NET "/eth1/queues/rx-2"));
        ck_assert(!tree_exists(host_dir, NET "/eth3/queues/tx-2"));
        tree_assert_file(host_dir, NET "/eth3/queues/rx-1/rps_cpus", HK_MASK "\n");
        tree_assert_file(host_dir, NET "/eth3/queues/tx-1/xps_cpus", HK_MASK "\n");
        tree_assert_file(host_dir, NET "/eth3/queues/rx-0/rps_flow_cnt", "128\n");
        tree_assert_file(host_dir, "proc/sys/net/core/rps_sock_flow_entries", "32768\n");
        _cleanup_free_ char *drift = NULL;
        ck_assert_msg(tree_verify(host_dir, &drift) == 0, "%s", strempty(drift));

        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "after revert");
        ck_assert(!tree_exists(host_dir, "var/lib/rtpart/net-backup/eth1"));
}
END_TEST

/* A mask, a flow table and a channel count changed behind rtpart's back are drift; the queue files
 * are watched, the channels (no file) are read again. */
START_TEST(test_drift) {
        _cleanup_free_ char *path = profile(every_nic);
        ck_assert_int_eq(tree_apply(host_dir, path, NULL), 0);
        test_write(host_dir, NET "/eth2/queues/rx-1/rps_cpus", "000000ff\n");
        Root *root;
        Host *host;
        test_open_host(host_dir, &root, &host);
        NetChannels c;
        ck_assert_int_eq(root_channels_get(root, "eth3", &c, NULL), 0);
        c.combined = 8;
        ck_assert_int_eq(root_channels_set(root, "eth3", &c, NULL), 0);
        _cleanup_(journal_freep) Journal *j = test_journal_load(root);
        VerifyResult v = {};
        ck_assert_int_eq(engine_verify(root, j, "", &v), 0);
        ck_assert_uint_eq(v.n_drift, 2);
        bool mask = false, channels = false;
        for (size_t i = 0; i < v.n_drift; i++) {
                mask = mask ||
                        (streq(v.drift[i].knob, "net/eth2/rx-1/rps_cpus") && streq(v.drift[i].actual, "000000ff"));
                channels = channels ||
                        (streq(v.drift[i].knob, "net/eth3/channels") &&
                         streq(v.drift[i].actual, "rx 0 tx 0 other 1 combined 8"));
        }
        ck_assert(mask && channels);
        verify_result_done(&v);

        char **files = NULL;
        Knob q = { .id = (char *) "net/eth2/rx-1/rps_cpus",
                   .domain = DOMAIN_NET,
                   .path = (char *) NET "/eth2/queues/rx-1/rps_cpus" };
        Knob ch = { .id = (char *) "net/eth3/channels", .domain = DOMAIN_NET };
        ck_assert_int_eq(backend_net.watch(&q, &files), 1);
        ck_assert_str_eq(files[0], NET "/eth2/queues/rx-1/rps_cpus");
        strv_free(files);
        ck_assert_int_eq(backend_net.watch(&ch, &files), 0);
        host_free(host);
        root_free(root);
}
END_TEST

/* A driver that takes no other count (fixed queues) refuses with EOPNOTSUPP, one that cannot take
 * this one with EINVAL and its words: each is recorded as refused with the reason, as a managed
 * IRQ is; the apply goes on, the queues the NIC keeps get their masks, the other NICs their
 * channels, verify finds no drift and lists the refusal, and revert puts everything back. */
START_TEST(test_refused) {
        _cleanup_free_ char *before = NULL, *path = profile(every_nic);
        test_write(host_dir, NET "/eth2/sim-channels",
                   "rx 0 0\ntx 0 0\nother 1 1\ncombined 16 32\nrefuse EOPNOTSUPP the driver has no set_channels\n");
        test_write(host_dir, NET "/eth3/sim-channels", "rx 0 0\ntx 0 0\nother 1 1\ncombined 16 32\nrefuse EINVAL\n");
        before = tree_snapshot(host_dir);
        EngineResult res = {};
        ck_assert_int_eq(tree_apply(host_dir, path, &res), 0);
        ck_assert_uint_eq(res.refused, 2);
        engine_result_done(&res);
        tree_assert_file(host_dir, NET "/eth1/sim-channels", "rx 0 0\ntx 0 0\nother 1 1\ncombined 2 63\n");
        ck_assert(tree_exists(host_dir, NET "/eth2/queues/rx-15"));
        tree_assert_file(host_dir, NET "/eth2/queues/rx-1/rps_cpus", HK_MASK "\n");
        tree_assert_file(host_dir, NET "/eth2/queues/rx-2/rps_cpus", "00000000\n");
        ck_assert(!tree_exists(host_dir, "var/lib/rtpart/net-backup/eth2"));

        Root *root;
        ck_assert_int_eq(root_new(host_dir, &root), 0);
        _cleanup_(journal_freep) Journal *j = test_journal_load(root);
        ck_assert_str_eq(strempty(journal_find_unmovable(j, "net/eth2/channels")), "the driver has no set_channels");
        ck_assert_str_eq(strempty(journal_find_unmovable(j, "net/eth3/channels")),
                         "the NIC's driver refuses this channel count (fixed queues)");
        VerifyResult v = {};
        ck_assert_int_eq(engine_verify(root, j, "", &v), 0);
        ck_assert_uint_eq(v.n_drift, 0);
        ck_assert_uint_eq(strv_length(v.unmovable), 2);
        verify_result_done(&v);
        root_free(root);

        /* Applied again: nothing to change, and the refusals are not tried again. */
        ck_assert_int_eq(tree_apply(host_dir, path, &res), 0);
        ck_assert_uint_eq(res.written, 0);
        engine_result_done(&res);
        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "after revert");
}
END_TEST

/* More channels than the NIC has: the queues come with the change, get their masks after it, and
 * go again with the revert. */
START_TEST(test_grow) {
        _cleanup_free_ char *before = tree_snapshot(host_dir);
        _cleanup_free_ char *path =
                profile("{\"net\": {\"nics\": [{\"match\": \"eth1\", \"channels\": 20, \"rps_cpus\": \"0\"}]}}");
        ck_assert_int_eq(tree_apply(host_dir, path, NULL), 0);
        tree_assert_file(host_dir, NET "/eth1/queues/rx-19/rps_cpus", "00000001\n");
        ck_assert(!tree_exists(host_dir, NET "/eth1/queues/rx-20"));
        ck_assert_uint_eq(tree_verify(host_dir, NULL), 0);
        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "after revert");
}
END_TEST

/* A NIC reset (its driver bound again: all its queues back, with the kernel's and the driver's
 * defaults, and its IRQs requested again on every CPU) is put right by one call: engine_apply_interface() applies
 * that NIC's channels, queue masks and IRQs and nothing else; revert still gives back the
 * original NIC. */
START_TEST(test_interface_reapply) {
        _cleanup_free_ char *before = tree_snapshot(host_dir);
        _cleanup_free_ char *path = profile("{\"irq\": {\"affinity\": \"housekeeping\"}, \"net\": {\"nics\": "
                                            "[{\"match\": \"*\", \"channels\": \"housekeeping\", \"rps_cpus\": "
                                            "\"housekeeping\", \"xps_cpus\": \"housekeeping\"}]}}");
        ck_assert_int_eq(tree_apply(host_dir, path, NULL), 0);

        Root *root;
        Host *host;
        ck_assert_int_eq(root_new(host_dir, &root), 0);
        NetChannels c;
        ck_assert_int_eq(root_channels_get(root, "eth1", &c, NULL), 0);
        c.combined = 16;
        ck_assert_int_eq(root_channels_set(root, "eth1", &c, NULL), 0);
        root_free(root);
        test_write(host_dir, NET "/eth1/queues/rx-0/rps_cpus", "00000000\n");
        test_write(host_dir, NET "/eth1/queues/tx-0/xps_cpus", "00000001\n");
        /* eth1's first queue IRQ and the one of eth2, both moved. */
        const char *eth1_irq = "proc/irq/83/smp_affinity_list";
        _cleanup_free_ char *actions = tree_read(host_dir, "sys/kernel/irq/83/actions");
        ck_assert_str_eq(strempty(actions), "eth1-TxRx-0\n");
        test_write(host_dir, eth1_irq, "0-31\n");
        test_write(host_dir, "proc/irq/101/smp_affinity_list", "0-31\n");
        test_write(host_dir, NET "/eth3/queues/rx-0/rps_cpus", "00000000\n");
        /* eth1's channels, rx-0, tx-0 and IRQ, eth2's IRQ, eth3's rx-0 */
        ck_assert_uint_eq(tree_verify(host_dir, NULL), 6);

        /* What rtpartd does on the event: the host as it is now, the applied profile planned. */
        test_open_host(host_dir, &root, &host);

        Profile *pr = NULL;
        Resolved *r = NULL;
        Plan *plan = NULL;
        _cleanup_free_ char *err = NULL;
        ck_assert_int_eq(test_resolve(root, host, path, &pr, &r, &err), 0);
        Error pe = {};
        ck_assert_int_eq(plan_build(r, root, &plan, &pe), 0);
        EngineResult res = {};
        JournalStore *store = test_journal_locked(root);
        ck_assert_int_eq(engine_apply_interface(root, store, host, plan, "eth1", &res), 0);
        ck_assert_uint_eq(res.written, 4); /* its channels, rx-0, tx-0 and IRQ */
        engine_result_done(&res);
        journal_store_free(store);
        plan_free(plan);
        resolved_free(r);
        profile_free(pr);

        tree_assert_file(host_dir, eth1_irq, "0,8,16,24\n");
        tree_assert_file(host_dir, NET "/eth1/sim-channels", "rx 0 0\ntx 0 0\nother 1 1\ncombined 2 63\n");
        tree_assert_file(host_dir, "proc/irq/101/smp_affinity_list", "0-31\n"); /* eth2's: not this NIC */
        tree_assert_file(host_dir, NET "/eth3/queues/rx-0/rps_cpus", "00000000\n");
        host_free(host);
        root_free(root);

        test_write(host_dir, "proc/irq/101/smp_affinity_list", "0,8,16,24\n");
        test_write(host_dir, NET "/eth3/queues/rx-0/rps_cpus", HK_MASK "\n");
        ck_assert_uint_eq(tree_verify(host_dir, NULL), 0);
        ck_assert_int_eq(tree_revert(host_dir), 0);
        _cleanup_free_ char *after = tree_snapshot(host_dir);
        tree_assert_same(before, after, "after revert");
}
END_TEST

static Suite *net_suite(void) {
        Suite *s = suite_create("backend-net");
        TCase *tc = tcase_create("plan");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_plan_every_nic);
        tcase_add_test(tc, test_plan_rules);
        tcase_add_test(tc, test_plan_errors);
        suite_add_tcase(s, tc);

        tc = tcase_create("apply");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_apply_verify_revert);
        tcase_add_test(tc, test_drift);
        tcase_add_test(tc, test_refused);
        tcase_add_test(tc, test_grow);
        tcase_add_test(tc, test_interface_reapply);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(net_suite());
}
