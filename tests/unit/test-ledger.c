/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ledger.h"
#include "test-util.h"

/* The ledger on the bundled hosts: intel-2s (2 nodes, SMT pairs (c, c+16), housekeeping 0,8,16,24:
 * 7 isolated cores a node), epyc (2 nodes, 30 isolated cores each), vm (no NUMA, no SMT, 1-3). */

static char *host_dir, *prof_dir, *state_dir;
static Root *root;
static Host *host;

/* The bundled host read as it is; the journal and the ledger in a directory of their own
 * (--state-dir), so no test copies a tree of thousands of files. */
static void open_fixture(const char *name) {
        test_fixture(name, /* copy= */ false, &host_dir, &prof_dir, &root, &host);
        state_dir = test_tmpdir();
        ck_assert_int_eq(root_set_state_dir(root, state_dir), 0);
}

static void close_fixture(void) {
        test_fixture_clear(&host_dir, &prof_dir, &root, &host);
        test_rmtree(state_dir);
        free(TAKE_PTR(state_dir));
}

static LedgerSplit split_default(bool together) {
        LedgerSplit s = { .split_siblings = together };
        host_default_split(host, 1, &s.housekeeping, &s.isolated);
        return s;
}

static LedgerRequest req(const char *name, unsigned vcpus) {
        return (LedgerRequest) { .name = name, .n_vcpus = vcpus, .node = -1 };
}

/* Adds through the store, as the commands do; returns the VM's document (or NULL and *err set). */
static json_t *add(JournalStore *s, const LedgerSplit *split, LedgerRequest r, int expect, char **ret_err) {
        _cleanup_(error_done) Error e = {};
        json_t *doc = NULL;
        int k = ledger_add(s, host, split, &r, &doc, &e);
        ck_assert_msg(k == expect, "%s: %d, wanted %d (%s)", r.name, k, expect, strempty(e.message));
        if (ret_err)
                *ret_err = e.message ? strdup(e.message) : NULL;
        return doc;
}

static void assert_member(json_t *doc, const char *key, const char *want) {
        ck_assert_str_eq(json_string_value(json_object_get(doc, key)), want);
}

START_TEST(test_smt_nodes) {
        open_fixture("intel-2s");
        LedgerSplit split = split_default(false);
        _cleanup_(journal_store_freep) JournalStore *s = test_journal_locked(root);

        /* A core per vCPU, its sibling held idle; the emulator on node 0's housekeeping CPUs. */
        _cleanup_(json_decrefp) json_t *a = add(s, &split, req("rt-a", 4), 0, NULL);
        assert_member(a, "cpus", "1-4");
        assert_member(a, "reserved", "1-4,17-20");
        assert_member(a, "nodes", "0");
        assert_member(a, "emulator", "0,16");
        /* Node 0 has 3 cores left: the next 4 go to node 1 whole. */
        _cleanup_(json_decrefp) json_t *b = add(s, &split, req("rt-b", 4), 0, NULL);
        assert_member(b, "cpus", "9-12");
        assert_member(b, "nodes", "1");
        assert_member(b, "emulator", "8,24");
        /* 3 and 3 left: no node has room for 4; spread, node 0 first among equals. */
        _cleanup_(json_decrefp) json_t *c = add(s, &split, req("rt-c", 4), 0, NULL);
        assert_member(c, "cpus", "5-7,13");
        assert_member(c, "nodes", "0-1");
        assert_member(c, "emulator", "0,8,16,24");

        /* 2 cores left, both on node 1: refused, naming them. */
        _cleanup_free_ char *err = NULL;
        ck_assert_ptr_null(add(s, &split, req("rt-d", 3), -ENOSPC, &err));
        ck_assert_ptr_nonnull(strstr(err, "2 are free (node 1: 2 (CPUs 14-15))"));
        ck_assert_ptr_nonnull(strstr(err, "give --vcpus 2 or fewer"));

        /* Nothing written by the refusal; the file has the three, and survives a reload. */
        _cleanup_(ledger_freep) Ledger *l = NULL;
        ck_assert_int_eq(ledger_load(s, &l, NULL), 0);
        ck_assert_uint_eq(l->n_vms, 3);
        ck_assert_str_eq(l->vms[2].name, "rt-c");
        ck_assert_uint_eq(l->vms[2].vcpu_cpus[3], 13);
        _cleanup_free_ char *file = NULL;
        ck_assert_int_ge(asprintf(&file, "%s/ledger.json", state_dir), 0);
        ck_assert_int_eq(access(file, F_OK), 0);

        /* Removing one frees its cores for the next. */
        ck_assert_int_eq(ledger_remove(s, "rt-b", NULL, NULL), 0);
        _cleanup_(json_decrefp) json_t *d = add(s, &split, req("rt-d", 3), 0, NULL);
        assert_member(d, "cpus", "9-11");
        close_fixture();
}
END_TEST

START_TEST(test_node_and_emulator) {
        open_fixture("intel-2s");
        LedgerSplit split = split_default(false);
        _cleanup_(journal_store_freep) JournalStore *s = test_journal_locked(root);
        _cleanup_free_ char *err = NULL;

        LedgerRequest r = req("on1", 2);
        r.node = 1;
        r.emulator_policy = LEDGER_EMULATOR_ISOLATE;
        _cleanup_(json_decrefp) json_t *a = add(s, &split, r, 0, NULL);
        assert_member(a, "cpus", "9-10");
        assert_member(a, "emulator", "11,27"); /* a core of its own, held with the vCPUs' */
        assert_member(a, "reserved", "9-11,25-27");
        assert_member(a, "emulator_policy", "isolate");

        /* Node 1 has 4 cores left: 5 vCPUs there are refused, naming node 1 and the rest. */
        r = req("big", 5);
        r.node = 1;
        ck_assert_ptr_null(add(s, &split, r, -ENOSPC, &err));
        ck_assert_ptr_nonnull(strstr(err, "on node 1, which has 4; 11 cores are free in all"));
        free(err);
        r.node = 2;
        ck_assert_ptr_null(add(s, &split, r, -EINVAL, &err));
        ck_assert_ptr_nonnull(strstr(err, "no NUMA node 2"));
        free(err);

        /* Names: taken, invalid. */
        ck_assert_ptr_null(add(s, &split, req("on1", 1), -EEXIST, NULL));
        ck_assert_ptr_null(add(s, &split, req("-x", 1), -EINVAL, NULL));
        ck_assert_ptr_null(add(s, &split, req("a/b", 1), -EINVAL, NULL));

        /* Cache shares never sum over 100. */
        r = req("c1", 1);
        r.cache_percent = 60;
        json_decref(add(s, &split, r, 0, NULL));
        r = req("c2", 1);
        r.cache_percent = 50;
        ck_assert_ptr_null(add(s, &split, r, -EINVAL, &err));
        ck_assert_ptr_nonnull(strstr(err, "the 40% of the guests' L3 share other VMs leave"));
        close_fixture();
}
END_TEST

START_TEST(test_split_siblings) {
        open_fixture("intel-2s");
        LedgerSplit split = split_default(/* together= */ true);
        _cleanup_(journal_store_freep) JournalStore *s = test_journal_locked(root);
        /* A core's siblings take consecutive vCPUs; a core may be split between two VMs. */
        _cleanup_(json_decrefp) json_t *a = add(s, &split, req("t1", 3), 0, NULL);
        assert_member(a, "cpus", "1-2,17");
        assert_member(a, "reserved", "1-2,17");
        _cleanup_(json_decrefp) json_t *b = add(s, &split, req("t2", 1), 0, NULL);
        assert_member(b, "cpus", "18");
        /* 28 isolated CPUs, 4 taken: 24 fit, 25 do not, and the message counts CPUs. */
        _cleanup_free_ char *err = NULL;
        ck_assert_ptr_null(add(s, &split, req("t3", 25), -ENOSPC, &err));
        ck_assert_ptr_nonnull(strstr(err, "need 25 free isolated CPUs; 24 are free"));
        close_fixture();
}
END_TEST

START_TEST(test_no_numa) {
        open_fixture("vm");
        LedgerSplit split = split_default(false);
        _cleanup_(journal_store_freep) JournalStore *s = test_journal_locked(root);
        _cleanup_(json_decrefp) json_t *a = add(s, &split, req("small", 3), 0, NULL);
        assert_member(a, "cpus", "1-3");
        assert_member(a, "emulator", "0");
        assert_member(a, "nodes", "0");
        _cleanup_free_ char *err = NULL;
        ck_assert_ptr_null(add(s, &split, req("more", 1), -ENOSPC, &err));
        ck_assert_ptr_nonnull(strstr(err, "0 are free (none)"));
        close_fixture();
}
END_TEST

START_TEST(test_epyc_fill) {
        open_fixture("epyc");
        LedgerSplit split = split_default(false);
        _cleanup_(journal_store_freep) JournalStore *s = test_journal_locked(root);
        CpuSet all = {};
        char name[16];
        /* 15 isolated cores a node: fifteen 2-vCPU VMs take every one, none overlapping, each on one
         * node but the last, which has one core left on each. */
        for (unsigned i = 0; i < 15; i++) {
                snprintf(name, sizeof(name), "vm%u", i);
                _cleanup_(json_decrefp) json_t *d = add(s, &split, req(name, 2), 0, NULL);
                CpuSet r;
                ck_assert_int_eq(cpu_set_parse_list(json_string_value(json_object_get(d, "reserved")), &r, NULL), 0);
                ck_assert(!cpu_set_intersects(&all, &r));
                cpu_set_or(&all, &r);
                assert_member(d, "nodes", i < 7 ? "0" : i < 14 ? "1" : "0-1");
        }
        ck_assert(cpu_set_equal(&all, &split.isolated));
        ck_assert_ptr_null(add(s, &split, req("one-more", 1), -ENOSPC, NULL));
        close_fixture();
}
END_TEST

static void check_refused(const char *text, const char *pointer) {
        _cleanup_(error_done) Error e = {};
        Ledger *l = NULL;
        ck_assert_int_eq(ledger_parse(text, strlen(text), "ledger.json", &l, &e), -EBADMSG);
        ck_assert_ptr_null(l);
        ck_assert_msg(streq_ptr(e.pointer, pointer), "%s: %s", text, strempty(e.pointer));
}

START_TEST(test_parse) {
        const char *vm = "{\"name\":\"a\",\"vcpus\":2,\"cpus\":\"1-2\",\"reserved\":\"1-2\",\"emulator\":\"0\","
                         "\"emulator_policy\":\"share\",\"nodes\":\"0\"}";
        char text[1024];
        snprintf(text, sizeof(text), "{\"version\":1,\"vms\":[%s]}", vm);
        _cleanup_(ledger_freep) Ledger *l = NULL;
        ck_assert_int_eq(ledger_parse(text, strlen(text), "ledger.json", &l, NULL), 0);
        ck_assert_uint_eq(l->n_vms, 1);
        ck_assert_uint_eq(l->vms[0].vcpu_cpus[1], 2);

        snprintf(text, sizeof(text), "{\"version\":1,\"vms\":[%s,%s]}", vm, vm);
        check_refused(text, "/vms/1/name");
        check_refused("{\"version\":2,\"vms\":[]}", "/version");
        check_refused("{\"version\":1,\"vms\":[{\"name\":\"a\",\"vcpus\":3,\"cpus\":\"1-2\"}]}", "/vms/0/vcpus");
        check_refused("{\"version\":1,\"vms\":[{\"name\":\"a\",\"vcpus\":2,\"cpus\":\"1-2\",\"reserved\":\"1\"}]}",
                      "/vms/0/reserved");
        snprintf(text, sizeof(text),
                 "{\"version\":1,\"vms\":[%s,{\"name\":\"b\",\"vcpus\":1,\"cpus\":\"2\","
                 "\"reserved\":\"2\",\"emulator\":\"0\",\"emulator_policy\":\"share\","
                 "\"nodes\":\"0\"}]}",
                 vm);
        check_refused(text, "/vms/1/reserved");
}
END_TEST

START_TEST(test_running_vm_names) {
        static const struct {
                const char *comm;
                int index; /* -1: no vCPU thread */
        } comms[] = {
                { "CPU 0/KVM", 0 }, { "CPU 12/TCG", 12 },      { "CPU /KVM", -1 },        { "CPU 1", -1 },
                { "CPU 1/", -1 },   { "qemu-system-x86", -1 }, { "IO mon_iothread", -1 },
        };
        for (size_t i = 0; i < ELEMENTSOF(comms); i++) {
                unsigned n = 99;
                int r = ledger_vcpu_parse_comm(comms[i].comm, &n);
                ck_assert_msg(comms[i].index < 0 ? r == -EINVAL : r == 0 && n == (unsigned) comms[i].index, "%s",
                              comms[i].comm);
        }
        static const struct {
                const char *cmdline; /* '|' for NUL */
                const char *guest;   /* NULL: none */
        } cmdlines[] = {
                { "/usr/bin/qemu-system-x86_64|-name|guest=rt1,debug-threads=on|-S|", "rt1" },
                { "qemu|-name|plain|", "plain" },
                { "qemu|-name|guest=a,,b,debug-threads=on|", "a,b" },
                { "qemu|-machine|pc|", NULL },
                { "qemu|-name", NULL },
                { "qemu|-name|", NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cmdlines); i++) {
                _cleanup_free_ char *buf = strdup(cmdlines[i].cmdline), *guest = NULL;
                size_t n = strlen(buf);
                for (char *p = buf; *p; p++)
                        if (*p == '|')
                                *p = 0;
                int r = ledger_guest_parse_cmdline(buf, n, &guest);
                if (cmdlines[i].guest)
                        ck_assert_msg(r == 0 && streq(guest, cmdlines[i].guest), "%s: %d %s", cmdlines[i].cmdline, r,
                                      strempty(guest));
                else
                        ck_assert_msg(r == -ENOENT, "%s: %d", cmdlines[i].cmdline, r);
        }
}
END_TEST

static Suite *ledger_suite(void) {
        Suite *s = suite_create("ledger");
        TCase *tc = tcase_create("ledger");
        tcase_set_timeout(tc, 60 * test_slow());
        tcase_add_test(tc, test_smt_nodes);
        tcase_add_test(tc, test_node_and_emulator);
        tcase_add_test(tc, test_split_siblings);
        tcase_add_test(tc, test_no_numa);
        tcase_add_test(tc, test_epyc_fill);
        tcase_add_test(tc, test_parse);
        tcase_add_test(tc, test_running_vm_names);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return test_run(ledger_suite());
}
