/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "strv.h"
#include "test-util.h"

/* A host made in memory: `cpus` CPUs, SMT pairs (c, c + cpus/2) when smt, the cores split evenly
 * over `nodes` NUMA nodes (0: no NUMA). */
static Host *mem_host(unsigned cpus, bool smt, unsigned nodes) {
        Host *h = calloc(1, sizeof(Host));
        unsigned cores = smt ? cpus / 2 : cpus;
        ck_assert_ptr_nonnull(h);
        h->n_cpu_ids = cpus;
        h->cpus = calloc(cpus, sizeof(HostCpu));
        ck_assert_ptr_nonnull(h->cpus);
        h->numa = nodes > 0;
        h->n_nodes = nodes;
        h->nodes = calloc(nodes ? nodes : 1, sizeof(CpuSet));
        ck_assert_ptr_nonnull(h->nodes);
        for (unsigned c = 0; c < cpus; c++) {
                unsigned core = c % cores;
                cpu_set_add(&h->online, c);
                h->cpus[c] = (HostCpu) { .core = (int) core, .l3 = -1 };
                if (nodes) {
                        h->cpus[c].node = (int) (core / (cores / nodes));
                        cpu_set_add(&h->nodes[h->cpus[c].node], c);
                }
        }
        return h;
}

static void mem_host_free(Host *h) {
        free(h->l3);
        free(h->cpus);
        free(h->nodes);
        free(h);
}

static ExportSplit split_of(const char *iso, const char *hk, ExportSiblings sib) {
        ExportSplit s = { .siblings = sib };
        ck_assert_int_eq(cpu_set_parse_list(iso, &s.isolated, NULL), 0);
        ck_assert_int_eq(cpu_set_parse_list(hk, &s.housekeeping, NULL), 0);
        return s;
}

static char *pins_list(const ExportReservation *p) {
        StrBuf b = {};
        for (unsigned i = 0; i < p->n_vcpus; i++)
                strbuf_appendf(&b, "%s%u", i ? " " : "", p->cpus[i]);
        return strbuf_steal(&b);
}

/* 16 CPUs, 8 cores, siblings (c, c+8), node 0: cores 0-3, node 1: cores 4-7; the default split
 * makes core 0 and core 4 housekeeping. */
#define ISO "1-3,5-7,9-11,13-15"
#define HK "0,4,8,12"

START_TEST(test_pin_table) {
        static const struct {
                const char *iso, *hk;
                ExportSiblings sib;
                unsigned n;
                const char *pins, *nodes, *emulator; /* NULL pins: does not fit */
                unsigned capacity;
        } cases[] = {
                /* apart: a core each, node 0 first; siblings 9-11 stay idle */
                { ISO, HK, EXPORT_SIBLINGS_APART, 3, "1 2 3", "0", "0,8", 6 },
                { ISO, HK, EXPORT_SIBLINGS_APART, 1, "1", "0", "0,8", 6 },
                /* no node has room for 4 cores: node 0 filled, then node 1 */
                { ISO, HK, EXPORT_SIBLINGS_APART, 4, "1 2 3 5", "0-1", "0,4,8,12", 6 },
                { ISO, HK, EXPORT_SIBLINGS_APART, 6, "1 2 3 5 6 7", "0-1", "0,4,8,12", 6 },
                { ISO, HK, EXPORT_SIBLINGS_APART, 7, NULL, NULL, NULL, 6 },
                /* together: a core's two threads take consecutive vCPUs */
                { ISO, HK, EXPORT_SIBLINGS_TOGETHER, 4, "1 9 2 10", "0", "0,8", 12 },
                { ISO, HK, EXPORT_SIBLINGS_TOGETHER, 6, "1 9 2 10 3 11", "0", "0,8", 12 },
                { ISO, HK, EXPORT_SIBLINGS_TOGETHER, 7, "1 9 2 10 3 11 5", "0-1", "0,4,8,12", 12 },
                { ISO, HK, EXPORT_SIBLINGS_TOGETHER, 13, NULL, NULL, NULL, 12 },
                /* node 0 has room for one: two vCPUs go to node 1 whole, with its housekeeping CPUs */
                { "1,5-7", "0,2-4,8-15", EXPORT_SIBLINGS_APART, 2, "5 6", "1", "4,12-15", 4 },
                /* too many for either node: the roomier node 1 first */
                { "1,5-7", "0,2-4,8-15", EXPORT_SIBLINGS_APART, 4, "5 6 7 1", "0-1", "0,2-4,8-15", 4 },
                /* a core whose first thread is housekeeping still lends its isolated sibling */
                { "1-3,8", "0,4-7,9-15", EXPORT_SIBLINGS_APART, 4, "1 2 3 8", "0", "0,9-11", 4 },
                /* a node without housekeeping CPUs: the emulator goes to all housekeeping CPUs */
                { "4-7,12-15", "0-3,8-11", EXPORT_SIBLINGS_APART, 2, "4 5", "1", "0-3,8-11", 4 },
        };
        Host *h = mem_host(16, true, 2);

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ExportSplit s = split_of(cases[i].iso, cases[i].hk, cases[i].sib);
                _cleanup_(export_reservation_done) ExportReservation p = {};
                unsigned cap = 0;
                int r = export_reserve(h, &s, cases[i].n, &p, &cap);
                ck_assert_msg(cap == cases[i].capacity, "case %zu: capacity %u, expected %u", i, cap,
                              cases[i].capacity);
                if (!cases[i].pins) {
                        ck_assert_msg(r == -ENOSPC, "case %zu: %d, expected -ENOSPC", i, r);
                        continue;
                }
                ck_assert_msg(r == 0, "case %zu: %d", i, r);
                _cleanup_free_ char *pins = pins_list(&p), *nodes = cpu_set_format_list(&p.nodes),
                                    *emu = cpu_set_format_list(&p.emulator);
                ck_assert_msg(streq(pins, cases[i].pins), "case %zu: pins %s, expected %s", i, pins, cases[i].pins);
                ck_assert_msg(streq(nodes, cases[i].nodes), "case %zu: nodes %s", i, nodes);
                ck_assert_msg(streq(emu, cases[i].emulator), "case %zu: emulator %s", i, emu);
        }
        mem_host_free(h);
}
END_TEST

START_TEST(test_pin_no_numa) {
        Host *h = mem_host(4, false, 0);
        ExportSplit s = split_of("1-3", "0", EXPORT_SIBLINGS_APART);
        _cleanup_(export_reservation_done) ExportReservation p = {};
        unsigned cap;
        ck_assert_int_eq(export_reserve(h, &s, 3, &p, &cap), 0);
        _cleanup_free_ char *pins = pins_list(&p), *emu = cpu_set_format_list(&p.emulator);
        ck_assert_str_eq(pins, "1 2 3");
        ck_assert_str_eq(emu, "0");
        ck_assert_int_eq(export_reserve(h, &s, 0, &p, &cap), -ENOSPC);
        mem_host_free(h);
}
END_TEST

/* Gives the in-memory host one L3 cache per NUMA node, with that node's CPUs. */
static void mem_host_l3(Host *h) {
        h->n_l3 = h->n_nodes;
        h->l3 = calloc(h->n_l3, sizeof(CacheDomain));
        ck_assert_ptr_nonnull(h->l3);
        for (unsigned n = 0; n < h->n_nodes; n++)
                h->l3[n] = (CacheDomain) { .id = n, .cpus = h->nodes[n] };
}

START_TEST(test_reserve_cache) {
        Host *h = mem_host(16, true, 2);
        mem_host_l3(h);
        ExportSplit s = split_of(ISO, HK, EXPORT_SIBLINGS_APART);
        /* cache 0 has ways 4-7 free (and way 1), cache 1 only ways 2-3 */
        ExportCacheFree c[] = { { .id = 0, .type = "both", .ways = 0x0f2, .way_kib = 1024, .min_ways = 1 },
                                { .id = 1, .type = "both", .ways = 0x00c, .way_kib = 1024, .min_ways = 1 } };
        s.caches = c;
        s.n_caches = 2;
        s.cat = true;
        unsigned cap;
        _cleanup_(export_reservation_done) ExportReservation one = {}, both = {};
        ck_assert_int_eq(export_reserve(h, &s, 2, &one, &cap), 0);
        ck_assert_uint_eq(one.cache_ways, 4); /* node 0 only: its largest free run */
        ck_assert_int_eq(export_reserve(h, &s, 5, &both, &cap), 0);
        ck_assert_uint_eq(both.cache_ways, 2); /* both caches: the smaller run */
        /* no ways free on the caches used: none (min_cbm_bits 2 rules out a single way) */
        c[0].ways = 0x002;
        c[0].min_ways = 2;
        export_reservation_done(&one);
        ck_assert_int_eq(export_reserve(h, &s, 2, &one, &cap), 0);
        ck_assert_uint_eq(one.cache_ways, 0);
        mem_host_free(h);
}
END_TEST

START_TEST(test_reserve_hugepages) {
        static const struct {
                ExportHugePool pools[4];
                size_t n;
                uint64_t default_kb;
                const char *iso;
                uint64_t want;
        } cases[] = {
                /* the default size where the node has it */
                { { { 0, 2048, 512 }, { 0, 1048576, 4 } }, 2, 2048, "1-3", 2048 },
                /* else the largest */
                { { { 0, 2048, 512 }, { 0, 1048576, 4 } }, 2, 0, "1-3", 1048576 },
                /* the default size is not on node 0: the largest there */
                { { { 0, 2048, 512 }, { 1, 1048576, 4 } }, 2, 1048576, "1-3", 2048 },
                /* vCPUs on both nodes: a size both have */
                { { { 0, 2048, 512 }, { 0, 1048576, 4 }, { 1, 2048, 512 } }, 3, 0, "1,5-7", 2048 },
                /* none on the guest's node */
                { { { 1, 1048576, 4 } }, 1, 0, "1-3", 0 },
        };
        Host *h = mem_host(16, true, 2);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ExportSplit s = split_of(cases[i].iso, HK, EXPORT_SIBLINGS_APART);
                s.huge = (ExportHugePages) { .pools = (ExportHugePool *) cases[i].pools,
                                             .n_pools = cases[i].n,
                                             .default_kb = cases[i].default_kb };
                _cleanup_(export_reservation_done) ExportReservation r = {};
                unsigned cap;
                ck_assert_int_eq(export_reserve(h, &s, cpu_set_count(&s.isolated), &r, &cap), 0);
                ck_assert_msg(r.hugepage_kib == cases[i].want, "case %zu: %llu", i,
                              (unsigned long long) r.hugepage_kib);
        }
        mem_host_free(h);
}
END_TEST

/* The profile's hugepages section, as issue 24 gives it: 1G pages on the nodes of the isolated
 * CPUs, 2M pages on every node. */
START_TEST(test_hugepages_section) {
        Host *h = mem_host(16, true, 2);
        CpuSet iso, hk;
        ck_assert_int_eq(cpu_set_parse_list("5-7,13-15", &iso, NULL), 0);
        ck_assert_int_eq(cpu_set_parse_list("0-4,8-12", &hk, NULL), 0);
        json_t *doc = json_loads("{\"hugepages\": {\"default_size\": \"1G\", \"pages\": ["
                                 "{\"size\": \"1G\", \"nodes\": \"isolated\", \"count\": 8},"
                                 "{\"size\": \"2M\", \"count\": 1024}, {\"size\": \"2048kB\", \"nodes\": \"0\", "
                                 "\"count\": \"16\"}]}}",
                                 0, NULL);
        ck_assert_ptr_nonnull(doc);
        _cleanup_(export_huge_pages_done) ExportHugePages hp = {};
        _cleanup_free_ char *msg = NULL;
        ck_assert_int_eq(export_hugepages_read(NULL, h, doc, &iso, &hk, &hp, &msg), 0);
        ck_assert(hp.from_profile);
        ck_assert_uint_eq(hp.default_kb, 1048576);
        ck_assert_uint_eq(hp.n_pools, 3); /* 1G on node 1 (isolated), 2M on 0 (16: a later item) and 1 */
        ck_assert_uint_eq(hp.pools[0].node, 1);
        ck_assert_uint_eq(hp.pools[0].size_kb, 1048576);
        ck_assert_uint_eq(hp.pools[0].count, 8);
        ck_assert_uint_eq(hp.pools[1].node, 0);
        ck_assert_uint_eq(hp.pools[1].size_kb, 2048);
        ck_assert_uint_eq(hp.pools[1].count, 16);
        ck_assert_uint_eq(hp.pools[2].node, 1);
        ck_assert_uint_eq(hp.pools[2].count, 1024);
        json_decref(doc);

        doc = json_loads("{\"hugepages\": {\"pages\": [{\"size\": \"huge\", \"count\": 1}]}}", 0, NULL);
        export_huge_pages_done(&hp);
        ck_assert_int_eq(export_hugepages_read(NULL, h, doc, &iso, &hk, &hp, &msg), -EINVAL);
        ck_assert_ptr_nonnull(strstr(msg, "not a page size"));
        json_decref(doc);
        mem_host_free(h);
}
END_TEST

/* A split of the in-memory host with ways 4-7 of each cache free for guests, 1G pages on both
 * nodes and the TSC deadline timer. */
static ExportSplit rich_split(ExportCacheFree *c, ExportHugePool *pools) {
        ExportSplit s = split_of(ISO, HK, EXPORT_SIBLINGS_TOGETHER);
        c[0] = (ExportCacheFree) { .id = 0, .type = "both", .ways = 0x0f0, .way_kib = 1024, .min_ways = 1 };
        c[1] = (ExportCacheFree) { .id = 1, .type = "both", .ways = 0x0f0, .way_kib = 1024, .min_ways = 1 };
        pools[0] = (ExportHugePool) { 0, 1048576, 8 };
        pools[1] = (ExportHugePool) { 1, 1048576, 8 };
        s.caches = c;
        s.n_caches = 2;
        s.cat = true;
        s.huge = (ExportHugePages) { .pools = pools, .n_pools = 2, .default_kb = 1048576, .from_profile = true };
        s.tsc_deadline = true;
        s.mb = true;
        s.guest_mb = 50;
        return s;
}

/* The in-memory host with an L3 per node, rich_split() of it and a guest of n vCPUs on it. */
typedef struct Rich {
        Host *h;
        ExportCacheFree c[2];
        ExportHugePool pools[2];
        ExportSplit s;
        ExportReservation r;
} Rich;

static void rich_setup(Rich *x, unsigned n, ExportSiblings siblings) {
        unsigned cap;
        x->h = mem_host(16, true, 2);
        mem_host_l3(x->h);
        x->s = rich_split(x->c, x->pools);
        x->s.siblings = siblings;
        x->r = (ExportReservation) {};
        ck_assert_int_eq(export_reserve(x->h, &x->s, n, &x->r, &cap), 0);
}

static void rich_done(Rich *x) {
        export_reservation_done(&x->r);
        mem_host_free(x->h);
}

START_TEST(test_xml_elements) {
        Rich x;
        rich_setup(&x, 2, EXPORT_SIBLINGS_TOGETHER);
        _cleanup_(export_elements_done) ExportElements e = {};
        ExportXmlOptions o = {};
        ck_assert_int_eq(export_libvirt_elements(x.h, &x.s, &x.r, &o, &e), 0);
        _cleanup_free_ char *frag = export_elements_fragment(&e, "  ");
        ck_assert_str_eq(frag,
                         "  <vcpu placement='static' cpuset='1,9'>2</vcpu>\n"
                         "  <iothreads>1</iothreads>\n"
                         "  <cputune>\n"
                         "    <vcpupin vcpu='0' cpuset='1'/>\n"
                         "    <vcpupin vcpu='1' cpuset='9'/>\n"
                         "    <emulatorpin cpuset='0,8'/>\n"
                         "    <iothreadpin iothread='1' cpuset='0,8'/>\n"
                         "    <vcpusched vcpus='0-1' scheduler='fifo' priority='1'/>\n"
                         "    <cachetune vcpus='0-1'>\n"
                         "      <cache id='0' level='3' type='both' size='4096' unit='KiB'/>\n"
                         "    </cachetune>\n"
                         "    <memorytune vcpus='0-1'>\n"
                         "      <node id='0' bandwidth='50'/>\n"
                         "    </memorytune>\n"
                         "  </cputune>\n"
                         "  <numatune>\n"
                         "    <memory mode='strict' nodeset='0'/>\n"
                         "  </numatune>\n"
                         "  <memoryBacking>\n"
                         "    <hugepages>\n"
                         "      <page size='1048576' unit='KiB'/>\n"
                         "    </hugepages>\n"
                         "    <locked/>\n"
                         "    <nosharepages/>\n"
                         "  </memoryBacking>\n"
                         "  <cpu mode='host-passthrough'>\n"
                         "    <topology sockets='1' dies='1' cores='1' threads='2'/>\n"
                         "    <feature policy='require' name='tsc-deadline'/>\n"
                         "  </cpu>\n"
                         "  <features>\n"
                         "    <pmu state='off'/>\n"
                         "  </features>\n"
                         "  <devices>\n"
                         "    <memballoon model='none'/>\n"
                         "  </devices>\n");
        ck_assert_ptr_null(e.notes);
        rich_done(&x);
}
END_TEST

/* vCPUs over both nodes: a cell per node, its memory in whole pages, strict on its node. */
START_TEST(test_xml_cells) {
        Rich x;
        rich_setup(&x, 4, EXPORT_SIBLINGS_APART);
        _cleanup_(export_elements_done) ExportElements e = {}, none = {};
        ExportXmlOptions o = { .memory_kib = 5 * 1048576 };
        ck_assert_int_eq(export_libvirt_elements(x.h, &x.s, &x.r, &o, &e), 0);
        ck_assert_str_eq(e.part[EXPORT_PART_NUMATUNE],
                         "<numatune>\n"
                         "  <memory mode='strict' nodeset='0-1'/>\n"
                         "  <memnode cellid='0' mode='strict' nodeset='0'/>\n"
                         "  <memnode cellid='1' mode='strict' nodeset='1'/>\n"
                         "</numatune>\n");
        ck_assert_ptr_nonnull(strstr(e.part[EXPORT_PART_CPU],
                                     "  <numa>\n"
                                     "    <cell id='0' cpus='0-2' memory='3145728' unit='KiB'/>\n"
                                     "    <cell id='1' cpus='3' memory='2097152' unit='KiB'/>\n"
                                     "  </numa>\n"));
        ck_assert_ptr_nonnull(
                strstr(e.part[EXPORT_PART_MEMORY_BACKING], "<page size='1048576' unit='KiB' nodeset='0-1'/>"));
        ck_assert_ptr_nonnull(strstr(e.part[EXPORT_PART_CPUTUNE], "<cache id='1' level='3'"));
        ck_assert_ptr_null(e.notes);

        /* memory unknown: no cells, and a note that says how to have them */
        o.memory_kib = 0;
        ck_assert_int_eq(export_libvirt_elements(x.h, &x.s, &x.r, &o, &none), 0);
        ck_assert_ptr_null(strstr(none.part[EXPORT_PART_CPU], "<numa>"));
        ck_assert_ptr_nonnull(none.notes);
        ck_assert_ptr_nonnull(strstr(none.notes[0], "give --memory SIZE"));
        rich_done(&x);
}
END_TEST

/* The regression of issue 24's item 3: where the profile's groups and the default group hold
 * every L3 way, no <cachetune> (libvirt could not make its group and the guest would not start),
 * and a note that says why; without huge pages or the TSC deadline timer, notes too. */
START_TEST(test_xml_no_free_ways) {
        Host *h = mem_host(16, true, 2);
        mem_host_l3(h);
        ExportSplit s = split_of(ISO, HK, EXPORT_SIBLINGS_APART);
        ExportCacheFree c[] = { { .id = 0, .type = "both", .ways = 0, .way_kib = 1024, .min_ways = 1 } };
        s.caches = c;
        s.n_caches = 1;
        s.cat = true;
        s.holders = (char *) "default 0x01f, rt 0x7e0";
        _cleanup_(export_reservation_done) ExportReservation r = {};
        _cleanup_(export_elements_done) ExportElements e = {};
        unsigned cap;
        ck_assert_int_eq(export_reserve(h, &s, 2, &r, &cap), 0);
        ck_assert_uint_eq(r.cache_ways, 0);
        ExportXmlOptions o = {};
        ck_assert_int_eq(export_libvirt_elements(h, &s, &r, &o, &e), 0);
        ck_assert_ptr_null(strstr(e.part[EXPORT_PART_CPUTUNE], "cachetune"));
        _cleanup_free_ char *all = NULL;
        StrBuf b = {};
        for (char **n = e.notes; n && *n; n++)
                strbuf_appendf(&b, "%s\n", *n);
        all = strbuf_steal(&b);
        ck_assert_ptr_nonnull(strstr(all,
                                     "no <cachetune>: on the L3 caches the vCPUs use, the profile's resctrl groups "
                                     "and the default group hold every way (default 0x01f, rt 0x7e0)"));
        ck_assert_ptr_nonnull(strstr(all, "no huge pages back the guest's memory"));
        ck_assert_ptr_nonnull(strstr(all, "no tsc-deadline feature required"));
        ck_assert_ptr_null(strstr(e.part[EXPORT_PART_CPU], "tsc-deadline"));
        mem_host_free(h);
}
END_TEST

static const char domain_xml[] =
        "<?xml version='1.0'?>\n"
        "<!-- <cputune> in a comment stays -->\n"
        "<domain type='kvm'>\n"
        "  <name>g</name>\n"
        "  <description><![CDATA[</domain> <cputune>]]></description>\n"
        "  <memory unit='GiB'>4</memory>\n"
        "  <memoryBacking>\n"
        "    <hugepages/>\n"
        "    <source type=\"memfd\"/>\n"
        "  </memoryBacking>\n"
        "  <vcpu placement='static' current=\"2\">4</vcpu>\n"
        "  <iothreads>2</iothreads>\n"
        "  <iothreadids>\n"
        "    <iothread id='3'/>\n"
        "    <iothread id = \"9\"/>\n"
        "  </iothreadids>\n"
        "  <cputune><shares>10</shares><period>1000</period><vcpupin vcpu='0' cpuset='0'/></cputune>\n"
        "  <os attr='a > b'><type>hvm</type></os>\n"
        "</domain>\n";

/* Elements that show where each part goes. */
static void fake_elements(ExportElements *e) {
        static const char * const parts[_EXPORT_PART_MAX] = {
                [EXPORT_PART_VCPU] = "<NEWVCPU/>\n",
                [EXPORT_PART_CPUTUNE] = "<NEWTUNE>\n  <x/>\n</NEWTUNE>\n",
                [EXPORT_PART_NUMATUNE] = "<NEWNUMA/>\n",
                [EXPORT_PART_MEMORY_BACKING] = "<NEWMEM/>\n",
                [EXPORT_PART_CPU] = "<NEWCPU/>\n",
                [EXPORT_PART_PMU] = "<pmu state='off'/>\n",
                [EXPORT_PART_MEMBALLOON] = "<memballoon model='none'/>\n",
        };
        *e = (ExportElements) { .step = "  " };
        for (size_t i = 0; i < _EXPORT_PART_MAX; i++)
                e->part[i] = parts[i] ? strdup(parts[i]) : NULL;
}

START_TEST(test_domain_parse) {
        _cleanup_(export_domain_done) ExportDomain d = {};
        _cleanup_free_ char *error = NULL;
        ck_assert_int_eq(export_domain_parse(domain_xml, strlen(domain_xml), &d, &error), 0);
        ck_assert_uint_eq(d.vcpus, 4);
        ck_assert_str_eq(d.vcpu_attrs, " current=\"2\"");
        ck_assert_str_eq(d.vcpu_placement, "static");
        ck_assert_ptr_null(d.vcpu_cpuset);
        ck_assert_uint_eq(d.memory_kib, 4 * 1048576);
        ck_assert_uint_eq(d.n_iothreads, 2);
        ck_assert_uint_eq(d.iothreads[0], 3);
        ck_assert_uint_eq(d.iothreads[1], 9);
        ck_assert_str_eq(d.indent, "  ");
        ck_assert_str_eq(d.memory_keep[0], "<source type=\"memfd\"/>");
        ck_assert_ptr_null(d.memory_keep[1]);
        ck_assert_str_eq(d.memory_replaced[0], "<hugepages/>");
        ck_assert_str_eq(d.cputune_keep[0], "<shares>10</shares>");
        ck_assert_str_eq(d.cputune_dropped[0], "<period>1000</period>");
        ck_assert_str_eq(d.cputune_replaced[0], "<vcpupin vcpu='0' cpuset='0'/>");
        ck_assert(d.at[EXPORT_PART_VCPU].found && d.at[EXPORT_PART_CPUTUNE].found);
        ck_assert(!d.at[EXPORT_PART_CPU].found && !d.features.at.found && !d.devices.at.found);
}
END_TEST

START_TEST(test_domain_merge) {
        _cleanup_(export_domain_done) ExportDomain d = {};
        _cleanup_(export_elements_done) ExportElements e = {};
        _cleanup_free_ char *error = NULL;
        ck_assert_int_eq(export_domain_parse(domain_xml, strlen(domain_xml), &d, &error), 0);
        fake_elements(&e);
        _cleanup_free_ char *out = export_domain_merge(&d, &e);
        ck_assert_str_eq(out,
                         "<?xml version='1.0'?>\n"
                         "<!-- <cputune> in a comment stays -->\n"
                         "<domain type='kvm'>\n"
                         "  <name>g</name>\n"
                         "  <description><![CDATA[</domain> <cputune>]]></description>\n"
                         "  <memory unit='GiB'>4</memory>\n"
                         "  <NEWMEM/>\n"
                         "  <NEWVCPU/>\n"
                         "  <NEWNUMA/>\n"
                         "  <NEWCPU/>\n"
                         "  <features>\n"
                         "    <pmu state='off'/>\n"
                         "  </features>\n"
                         "  <devices>\n"
                         "    <memballoon model='none'/>\n"
                         "  </devices>\n"
                         "  <iothreads>2</iothreads>\n"
                         "  <iothreadids>\n"
                         "    <iothread id='3'/>\n"
                         "    <iothread id = \"9\"/>\n"
                         "  </iothreadids>\n"
                         "  <NEWTUNE>\n"
                         "    <x/>\n"
                         "  </NEWTUNE>\n"
                         "  <os attr='a > b'><type>hvm</type></os>\n"
                         "</domain>\n");
}
END_TEST

START_TEST(test_domain_insert) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                /* after <vcpu>, at the file's indent */
                { "<domain>\n\t<name>a</name>\n\t<vcpu>2</vcpu>\n\t<os/>\n</domain>",
                  "<domain>\n\t<name>a</name>\n\t<vcpu>2</vcpu>\n\t<NEW/>\n\t<os/>\n</domain>" },
                /* before </domain> */
                { "<domain>\n  <name>a</name>\n</domain>\n", "<domain>\n  <name>a</name>\n  <NEW/>\n</domain>\n" },
                /* one line */
                { "<domain><name>a</name><vcpu>1</vcpu><os/></domain>",
                  "<domain><name>a</name><vcpu>1</vcpu>\n  <NEW/><os/></domain>" },
                { "<domain><numatune/><name>a</name></domain>", "<domain><name>a</name>\n  <NEW/></domain>" },
                /* an element among others on its line is replaced in place */
                { "<domain><name>a</name><cputune/><os/></domain>", "<domain><name>a</name><NEW/><os/></domain>" },
                /* a child into its parent: at the end, on a line of its own, or in place */
                { "<domain>\n  <name>a</name>\n  <cputune/>\n  <features>\n    <acpi/>\n  </features>\n</domain>",
                  "<domain>\n  <name>a</name>\n  <NEW/>\n  <features>\n    <acpi/>\n    <pmu state='off'/>\n  "
                  "</features>\n</domain>" },
                { "<domain><cputune/><features><acpi/><pmu/></features></domain>",
                  "<domain><NEW/><features><acpi/><pmu state='off'/></features></domain>" },
                { "<domain><cputune/><features/></domain>",
                  "<domain><NEW/>\n  <features>\n    <pmu state='off'/>\n  </features></domain>" },
                { "<domain><cputune/><features><acpi/></features></domain>",
                  "<domain><NEW/><features><acpi/>\n    <pmu state='off'/></features></domain>" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(export_domain_done) ExportDomain d = {};
                _cleanup_free_ char *error = NULL;
                ExportElements e = { .step = "  " };
                e.keep[EXPORT_PART_VCPU] = true;
                e.part[EXPORT_PART_CPUTUNE] = (char *) "<NEW/>\n";
                e.part[EXPORT_PART_PMU] = i >= 5 ? (char *) "<pmu state='off'/>\n" : NULL;
                ck_assert_msg(export_domain_parse(cases[i].in, strlen(cases[i].in), &d, &error) == 0, "case %zu: %s", i,
                              strempty(error));
                _cleanup_free_ char *out = export_domain_merge(&d, &e);
                ck_assert_msg(streq(out, cases[i].out), "case %zu:\n%s", i, out);
        }
}
END_TEST

/* Exported once or twice, a domain is the same: what rtpart wrote is taken back as it is, and
 * noted no more. */
START_TEST(test_domain_again) {
        Rich x;
        rich_setup(&x, 4, EXPORT_SIBLINGS_TOGETHER);
        _cleanup_(export_elements_done) ExportElements e1 = {}, e2 = {};
        _cleanup_(export_domain_done) ExportDomain d1 = {}, d2 = {};
        _cleanup_free_ char *error = NULL;

        ck_assert_int_eq(export_domain_parse(domain_xml, strlen(domain_xml), &d1, &error), 0);
        ExportXmlOptions o = { .domain = &d1 };
        ck_assert_int_eq(export_libvirt_elements(x.h, &x.s, &x.r, &o, &e1), 0);
        ck_assert_ptr_nonnull(e1.notes); /* <period> dropped, <vcpupin> and <hugepages/> replaced */
        _cleanup_free_ char *once = export_domain_merge(&d1, &e1);
        ck_assert_ptr_nonnull(strstr(once, "    <shares>10</shares>\n    <vcpupin vcpu='0' cpuset='1'/>\n"));
        ck_assert_ptr_nonnull(strstr(once, "<vcpu placement='static' cpuset='1-2,9-10' current=\"2\">4</vcpu>"));
        ck_assert_ptr_null(strstr(once, "<period>"));
        ck_assert_int_eq(export_domain_parse(once, strlen(once), &d2, &error), 0);
        o.domain = &d2;
        ck_assert_int_eq(export_libvirt_elements(x.h, &x.s, &x.r, &o, &e2), 0);
        ck_assert_msg(!e2.notes, "%s", e2.notes ? e2.notes[0] : "");
        ck_assert(e2.keep[EXPORT_PART_VCPU] && e2.keep[EXPORT_PART_PMU] && e2.keep[EXPORT_PART_MEMBALLOON]);
        _cleanup_free_ char *twice = export_domain_merge(&d2, &e2);
        ck_assert_str_eq(twice, once);
        rich_done(&x);
}
END_TEST

START_TEST(test_domain_errors) {
        static const struct {
                const char *in, *error;
        } cases[] = {
                { "<domain>\n  <name>a</nam>\n</domain>", "line 2: <name> (line 2) closed by </nam>" },
                { "<domain>\n  <cputune>\n</domain>", "line 3: <cputune> (line 2) closed by </domain>" },
                { "<domain>\n  <name>a</name>\n", "line 1: <domain> is never closed" },
                { "<network><name>a</name></network>", "line 1: the root element is <network>, not <domain>" },
                { "<domain/>", "line 1: <domain/> is empty: a domain needs at least <name> and <os>" },
                { "<domain></domain><domain></domain>", "line 1: a second root element <domain>" },
                { "<domain><!-- x </domain>", "line 1: comment not closed with -->" },
                { "<domain><name a='>", "line 1: tag <name> not closed with >" },
                { "<domain>< name/></domain>", "line 1: '<' starts no tag (write &lt; for a literal '<')" },
                { "<domain><vcpu>four</vcpu></domain>", "line 1: <vcpu> holds no number of vCPUs" },
                { "<domain><iothreadids><iothread/></iothreadids></domain>",
                  "line 1: <iothread> without a numeric id" },
                { "junk<domain/>", "line 1: text outside the root element" },
                { "", "line 1: no root element" },
                { "<domain>\n<cputune/>\n<cputune/>\n</domain>",
                  "line 3: a second <cputune> (the first is on line 2): a domain has one" },
                /* found by fuzz-domain: a '<' in a tag, an end tag with more than its name */
                { "<domain typ/<e>\nor<locked/>\n</domain<app:info>\n", "line 1: '<' inside the tag <domain>" },
                { "<domain a='<'></domain>", "line 1: '<' inside the tag <domain>" },
                { "<domain><name>a</name></domain x>", "line 1: </domain x> holds more than the element's name" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ExportDomain d = {};
                _cleanup_free_ char *error = NULL;
                int r = export_domain_parse(cases[i].in, strlen(cases[i].in), &d, &error);
                ck_assert_msg(r == -EINVAL, "case %zu: %d", i, r);
                ck_assert_msg(error && streq(error, cases[i].error), "case %zu: %s", i, strempty(error));
        }
}
END_TEST

START_TEST(test_nova) {
        ExportSplit s = split_of(ISO, HK, EXPORT_SIBLINGS_APART);
        ExportHugePool pools[] = { { 0, 1048576, 8 }, { 1, 1048576, 8 }, { 0, 2048, 1024 }, { 1, 2048, 1024 } };
        s.huge = (ExportHugePages) { .pools = pools, .n_pools = 4, .default_kb = 1048576, .from_profile = true };
        _cleanup_(export_nova_done) ExportNova n = {};
        ck_assert_int_eq(export_nova_make(&s, &n), 0);
        ck_assert_str_eq(n.page_size, "1GB");
        ck_assert_str_eq(n.reserved[0], "node:0,size:2048,count:1024");
        ck_assert_str_eq(n.reserved[1], "node:1,size:2048,count:1024");
        ck_assert_ptr_null(n.reserved[2]);
        ck_assert_str_eq(n.for_instances[0], "node:0,size:1GB,count:8");
        _cleanup_free_ char *t = export_nova(&n, "p");
        ck_assert_ptr_nonnull(strstr(t,
                                     "\n[DEFAULT]\nreserved_huge_pages = node:0,size:2048,count:1024\n"
                                     "reserved_huge_pages = node:1,size:2048,count:1024\n"));
        ck_assert_ptr_nonnull(
                strstr(t, "\n[compute]\ncpu_dedicated_set = 1-3,5-7,9-11,13-15\ncpu_shared_set = 0,4,8,12\n"));
        ck_assert_ptr_nonnull(strstr(t,
                                     "\nopenstack flavor set FLAVOR --property hw:cpu_policy=dedicated --property "
                                     "hw:cpu_realtime=yes --property hw:cpu_realtime_mask=^0 --property "
                                     "hw:emulator_threads_policy=share --property hw:mem_page_size=1GB --property "
                                     "hw:pmu=false\n"));
        ck_assert_ptr_nonnull(strstr(t, "\nreservedSystemCPUs: \"0,4,8,12\"\n"));
        json_t *doc = export_nova_document(&n, "p");
        ck_assert_ptr_nonnull(doc);
        json_t *props = json_object_get(json_object_get(doc, "flavor"), "properties");
        ck_assert_str_eq(json_string_value(json_object_get(props, "hw:cpu_realtime_mask")), "^0");
        ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(json_object_get(doc, "nova"), "DEFAULT"),
                                                          "reserved_huge_pages")),
                          2);
        json_decref(doc);

        /* none reserved: "large", and a comment that says so */
        ExportSplit bare = split_of(ISO, HK, EXPORT_SIBLINGS_APART);
        _cleanup_(export_nova_done) ExportNova m = {};
        ck_assert_int_eq(export_nova_make(&bare, &m), 0);
        ck_assert_str_eq(m.page_size, "large");
        _cleanup_free_ char *u = export_nova(&m, "p");
        ck_assert_ptr_nonnull(strstr(u, "# reserved_huge_pages: none; this host holds no huge pages"));
        ck_assert_ptr_null(strstr(u, "[DEFAULT]"));
}
END_TEST

int main(void) {
        Suite *s = suite_create("export");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_pin_table);
        tcase_add_test(tc, test_pin_no_numa);
        tcase_add_test(tc, test_reserve_cache);
        tcase_add_test(tc, test_reserve_hugepages);
        tcase_add_test(tc, test_hugepages_section);
        tcase_add_test(tc, test_xml_elements);
        tcase_add_test(tc, test_xml_cells);
        tcase_add_test(tc, test_xml_no_free_ways);
        tcase_add_test(tc, test_domain_parse);
        tcase_add_test(tc, test_domain_merge);
        tcase_add_test(tc, test_domain_insert);
        tcase_add_test(tc, test_domain_again);
        tcase_add_test(tc, test_domain_errors);
        tcase_add_test(tc, test_nova);
        suite_add_tcase(s, tc);
        return test_run(s);
}
