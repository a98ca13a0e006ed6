/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "macro.h"
#include "strv.h"

/* Nova's side of the split: nova.conf's CPU sets and reserved huge pages, and the extra specs of
 * a realtime flavor (Nova's real-time guide: dedicated CPUs, a realtime mask leaving vCPU 0 to the
 * guest's housekeeping, emulator threads on cpu_shared_set, huge pages, no PMU); kubelet's
 * reservedSystemCPUs beside them. */

void export_nova_done(ExportNova *n) {
        free(n->dedicated);
        free(n->shared);
        strv_free(n->reserved);
        strv_free(n->for_instances);
        free(n->page_size);
        strv_free(n->properties);
        *n = (ExportNova) {};
}

/* A page size as Nova writes it: "1GB" for whole GiB, else KiB ("2048"). */
static char *nova_size(uint64_t kib) {
        char *s;
        int k = kib % 1048576 == 0 ? asprintf(&s, "%lluGB", (unsigned long long) (kib / 1048576))
                                   : asprintf(&s, "%llu", (unsigned long long) kib);
        return k < 0 ? NULL : s;
}

/* The flavor's page size: the profile's default size where pages of it are reserved, else the
 * largest size reserved; 0: none. */
static uint64_t flavor_page(const ExportHugePages *hp) {
        uint64_t best = 0;
        for (size_t i = 0; i < hp->n_pools; i++) {
                if (hp->pools[i].size_kb == hp->default_kb)
                        return hp->default_kb;
                best = MAX(best, hp->pools[i].size_kb);
        }
        return best;
}

static int nova_pools(const ExportSplit *s, uint64_t page, ExportNova *n) {
        for (size_t i = 0; i < s->huge.n_pools; i++) {
                const ExportHugePool *p = &s->huge.pools[i];
                _cleanup_free_ char *size = nova_size(p->size_kb);
                char *line;
                if (!size ||
                    asprintf(&line, "node:%u,size:%s,count:%llu", p->node, size, (unsigned long long) p->count) < 0)
                        return -ENOMEM;
                int k = strv_push(p->size_kb == page ? &n->for_instances : &n->reserved, line);
                if (k < 0)
                        return k;
        }
        return 0;
}

int export_nova_make(const ExportSplit *s, ExportNova *ret) {
        _cleanup_(export_nova_done) ExportNova n = {};
        uint64_t page = flavor_page(&s->huge);
        char *spec;
        int k;

        n.dedicated = cpu_set_format_list(&s->isolated);
        n.shared = cpu_set_format_list(&s->housekeeping);
        n.page_size = page ? nova_size(page) : strdup("large");
        n.from_profile = s->huge.from_profile;
        if (!n.dedicated || !n.shared || !n.page_size)
                return -ENOMEM;
        k = nova_pools(s, page, &n);
        if (k < 0)
                return k;
        const char *props[] = { "hw:cpu_policy=dedicated", "hw:cpu_realtime=yes", "hw:cpu_realtime_mask=^0",
                                "hw:emulator_threads_policy=share" };
        for (size_t i = 0; i < ELEMENTSOF(props); i++)
                if ((k = strv_extend(&n.properties, props[i])) < 0)
                        return k;
        if (asprintf(&spec, "hw:mem_page_size=%s", n.page_size) < 0 || (k = strv_push(&n.properties, spec)) < 0)
                return -ENOMEM;
        if ((k = strv_extend(&n.properties, "hw:pmu=false")) < 0)
                return k;
        *ret = n;
        n = (ExportNova) {};
        return 0;
}

static char *flavor_command(const ExportNova *n) {
        StrBuf b = {};
        strbuf_append(&b, "openstack flavor set FLAVOR");
        for (char **p = n->properties; p && *p; p++)
                strbuf_appendf(&b, " --property %s", *p);
        return strbuf_steal(&b);
}

static void append_list(StrBuf *b, char **l) {
        for (char **p = l; p && *p; p++)
                strbuf_appendf(b, "%s%s", p == l ? "" : ", ", *p);
}

/* [DEFAULT] reserved_huge_pages, with what it leaves to the instances. */
static void append_reserved(StrBuf *b, const ExportNova *n) {
        if (!n->reserved && !n->for_instances) {
                strbuf_appendf(b,
                               "# reserved_huge_pages: none; %s, and the flavor's hw:mem_page_size=large finds\n"
                               "# none here either: reserve them with the profile's hugepages section.\n",
                               n->from_profile ? "the profile reserves no huge pages"
                                               : "this host holds no huge pages");
                return;
        }
        strbuf_appendf(b, "# Nova gives its instances the huge pages of the flavor's size (hw:mem_page_size=%s)",
                       n->page_size);
        if (n->for_instances) {
                strbuf_append(b, ":\n# ");
                append_list(b, n->for_instances);
        }
        if (!n->reserved) {
                strbuf_append(b, ".\n# reserved_huge_pages: none, every pool is of that size.\n");
                return;
        }
        strbuf_append(b,
                      ".\n# reserved_huge_pages keeps the other pools from them, for the host's own use (remove\n"
                      "# a line to let instances of other flavors have that pool).\n[DEFAULT]\n");
        for (char **p = n->reserved; *p; p++)
                strbuf_appendf(b, "reserved_huge_pages = %s\n", *p);
}

char *export_nova(const ExportNova *n, const char *profile) {
        _cleanup_free_ char *cmd = flavor_command(n);
        StrBuf b = {};

        if (!cmd)
                return NULL;
        strbuf_appendf(&b,
                       "# The CPU split of profile %s on this host.\n"
                       "# nova.conf: dedicated (pinned, hw:cpu_policy=dedicated) guests on the isolated CPUs,\n"
                       "# emulator threads and shared guests on the housekeeping CPUs.\n",
                       profile);
        append_reserved(&b, n);
        strbuf_appendf(&b,
                       "\n[compute]\n"
                       "cpu_dedicated_set = %s\n"
                       "cpu_shared_set = %s\n"
                       "\n"
                       "# A realtime flavor of 2 vCPUs or more (FLAVOR: its name): vCPU 0 runs the guest's\n"
                       "# housekeeping, the others realtime (SCHED_FIFO); the emulator threads on cpu_shared_set;\n"
                       "# memory in huge pages; no virtual PMU.\n"
                       "%s\n"
                       "\n"
                       "# kubelet (KubeletConfiguration, with cpuManagerPolicy: static): the housekeeping CPUs\n"
                       "# are the system's, the isolated ones go to Guaranteed pods.\n"
                       "reservedSystemCPUs: \"%s\"\n",
                       n->dedicated, n->shared, cmd, n->shared);
        return strbuf_steal(&b);
}

static json_t *string_array(char **l) {
        json_t *a = json_array();
        for (char **p = l; a && p && *p; p++)
                if (json_array_append_new(a, json_string(*p)) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

json_t *export_nova_document(const ExportNova *n, const char *profile) {
        _cleanup_free_ char *cmd = flavor_command(n);
        _cleanup_(json_decrefp) json_t *props = json_object();
        if (!cmd || !props)
                return NULL;
        for (char **p = n->properties; p && *p; p++) {
                const char *eq = strchr(*p, '=');
                _cleanup_free_ char *key = strndup(*p, (size_t) (eq - *p));
                if (!key || json_object_set_new(props, key, json_string(eq + 1)) < 0)
                        return NULL;
        }
        return json_pack("{s:s, s:{s:{s:o}, s:{s:s, s:s}}, s:{s:O, s:s, s:o}, s:{s:s}}", "profile", profile, "nova",
                         "DEFAULT", "reserved_huge_pages", string_array(n->reserved), "compute", "cpu_dedicated_set",
                         n->dedicated, "cpu_shared_set", n->shared, "flavor", "properties", props, "command", cmd,
                         "huge_pages", string_array(n->for_instances), "kubelet", "reservedSystemCPUs", n->shared);
}
