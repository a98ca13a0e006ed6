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

static char *pins_list(const ExportPins *p) {
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
                _cleanup_(export_pins_done) ExportPins p = {};
                unsigned cap = 0;
                int r = export_pin(h, &s, cases[i].n, &p, &cap);
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
        _cleanup_(export_pins_done) ExportPins p = {};
        unsigned cap;
        ck_assert_int_eq(export_pin(h, &s, 3, &p, &cap), 0);
        _cleanup_free_ char *pins = pins_list(&p), *emu = cpu_set_format_list(&p.emulator);
        ck_assert_str_eq(pins, "1 2 3");
        ck_assert_str_eq(emu, "0");
        ck_assert_int_eq(export_pin(h, &s, 0, &p, &cap), -ENOSPC);
        mem_host_free(h);
}
END_TEST

START_TEST(test_pin_cat_group) {
        Host *h = mem_host(16, true, 2);
        ExportSplit s = split_of(ISO, HK, EXPORT_SIBLINGS_APART);
        ExportCache c = { .id = 0, .type = "both", .kib = 6144 };
        ExportCatGroup g[2] = { { .name = (char *) "small", .caches = &c, .n_caches = 1 },
                                { .name = (char *) "rt", .caches = &c, .n_caches = 1 } };
        ck_assert_int_eq(cpu_set_parse_list("1-2", &g[0].cpus, NULL), 0);
        ck_assert_int_eq(cpu_set_parse_list(ISO, &g[1].cpus, NULL), 0);
        s.groups = g;
        s.n_groups = 2;
        _cleanup_(export_pins_done) ExportPins p = {};
        unsigned cap;
        ck_assert_int_eq(export_pin(h, &s, 3, &p, &cap), 0);
        ck_assert_ptr_eq(p.cat, &g[1]); /* "small" does not hold CPU 3 */
        export_pins_done(&p);
        ck_assert_int_eq(export_pin(h, &s, 2, &p, &cap), 0);
        ck_assert_ptr_eq(p.cat, &g[0]);
        mem_host_free(h);
}
END_TEST

START_TEST(test_xml_elements) {
        Host *h = mem_host(16, true, 2);
        ExportSplit s = split_of(ISO, HK, EXPORT_SIBLINGS_TOGETHER);
        s.hugepage_kib = 1048576;
        _cleanup_(export_pins_done) ExportPins p = {};
        unsigned cap, io[] = { 2, 5 };
        char *keep[] = { (char *) "<access mode='shared'/>", NULL };
        ck_assert_int_eq(export_pin(h, &s, 2, &p, &cap), 0);
        ExportXmlOptions o = { .indent = "  ", .iothreads = io, .n_iothreads = 2, .memory_keep = keep };
        _cleanup_free_ char *x = export_libvirt_xml(h, &s, &p, &o);
        ck_assert_str_eq(x,
                         "  <cputune>\n"
                         "    <vcpupin vcpu='0' cpuset='1'/>\n"
                         "    <vcpupin vcpu='1' cpuset='9'/>\n"
                         "    <emulatorpin cpuset='0,8'/>\n"
                         "    <iothreadpin iothread='2' cpuset='0,8'/>\n"
                         "    <iothreadpin iothread='5' cpuset='0,8'/>\n"
                         "    <vcpusched vcpus='0-1' scheduler='fifo' priority='1'/>\n"
                         "  </cputune>\n"
                         "  <numatune>\n"
                         "    <memory mode='strict' nodeset='0'/>\n"
                         "  </numatune>\n"
                         "  <memoryBacking>\n"
                         "    <hugepages>\n"
                         "      <page size='1048576' unit='KiB'/>\n"
                         "    </hugepages>\n"
                         "    <locked/>\n"
                         "    <access mode='shared'/>\n"
                         "  </memoryBacking>\n");
        mem_host_free(h);
}
END_TEST

static const char domain_xml[] = "<?xml version='1.0'?>\n"
                                 "<!-- <cputune> in a comment stays -->\n"
                                 "<domain type='kvm'>\n"
                                 "  <name>g</name>\n"
                                 "  <description><![CDATA[</domain> <cputune>]]></description>\n"
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
                                 "  <cputune><shares>10</shares></cputune>\n"
                                 "  <os attr='a > b'><type>hvm</type></os>\n"
                                 "</domain>\n";

START_TEST(test_domain_merge) {
        _cleanup_(export_domain_done) ExportDomain d = {};
        _cleanup_free_ char *error = NULL;
        ck_assert_int_eq(export_domain_parse(domain_xml, strlen(domain_xml), &d, &error), 0);
        ck_assert_uint_eq(d.vcpus, 4);
        ck_assert_uint_eq(d.n_iothreads, 2);
        ck_assert_uint_eq(d.iothreads[0], 3);
        ck_assert_uint_eq(d.iothreads[1], 9);
        ck_assert_str_eq(d.indent, "  ");
        ck_assert_ptr_nonnull(d.memory_keep);
        ck_assert_str_eq(d.memory_keep[0], "<source type=\"memfd\"/>");
        ck_assert_ptr_null(d.memory_keep[1]);
        _cleanup_free_ char *out = export_domain_merge(&d, "  <NEW/>\n");
        ck_assert_str_eq(out,
                         "<?xml version='1.0'?>\n"
                         "<!-- <cputune> in a comment stays -->\n"
                         "<domain type='kvm'>\n"
                         "  <name>g</name>\n"
                         "  <description><![CDATA[</domain> <cputune>]]></description>\n"
                         "  <NEW/>\n"
                         "  <vcpu placement='static' current=\"2\">4</vcpu>\n"
                         "  <iothreads>2</iothreads>\n"
                         "  <iothreadids>\n"
                         "    <iothread id='3'/>\n"
                         "    <iothread id = \"9\"/>\n"
                         "  </iothreadids>\n"
                         "  <os attr='a > b'><type>hvm</type></os>\n"
                         "</domain>\n");
}
END_TEST

START_TEST(test_domain_insert) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                /* after <vcpu> */
                { "<domain>\n\t<name>a</name>\n\t<vcpu>2</vcpu>\n\t<os/>\n</domain>",
                  "<domain>\n\t<name>a</name>\n\t<vcpu>2</vcpu>\n<NEW/>\n\t<os/>\n</domain>" },
                /* before </domain> */
                { "<domain>\n  <name>a</name>\n</domain>\n", "<domain>\n  <name>a</name>\n<NEW/>\n</domain>\n" },
                /* one line */
                { "<domain><name>a</name><vcpu>1</vcpu><os/></domain>",
                  "<domain><name>a</name><vcpu>1</vcpu>\n<NEW/>\n<os/></domain>" },
                { "<domain><numatune/><name>a</name></domain>", "<domain>\n<NEW/>\n<name>a</name></domain>" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(export_domain_done) ExportDomain d = {};
                _cleanup_free_ char *error = NULL;
                ck_assert_msg(export_domain_parse(cases[i].in, strlen(cases[i].in), &d, &error) == 0, "case %zu: %s", i,
                              strempty(error));
                _cleanup_free_ char *out = export_domain_merge(&d, "<NEW/>\n");
                ck_assert_msg(streq(out, cases[i].out), "case %zu:\n%s", i, out);
        }
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
        _cleanup_free_ char *n = export_nova(&s, "p");
        ck_assert_ptr_nonnull(
                strstr(n, "\n[compute]\ncpu_dedicated_set = 1-3,5-7,9-11,13-15\ncpu_shared_set = 0,4,8,12\n"));
        ck_assert_ptr_nonnull(strstr(n, "\nreservedSystemCPUs: \"0,4,8,12\"\n"));
}
END_TEST

int main(void) {
        Suite *s = suite_create("export");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_pin_table);
        tcase_add_test(tc, test_pin_no_numa);
        tcase_add_test(tc, test_pin_cat_group);
        tcase_add_test(tc, test_xml_elements);
        tcase_add_test(tc, test_domain_merge);
        tcase_add_test(tc, test_domain_insert);
        tcase_add_test(tc, test_domain_errors);
        tcase_add_test(tc, test_nova);
        suite_add_tcase(s, tc);
        return test_run(s);
}
