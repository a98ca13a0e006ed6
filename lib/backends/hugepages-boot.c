/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hugepages-internal.h"
#include "numa.h"
#include "strv.h"

bool hugepages_parse_count(const char *s, uint64_t *ret) {
        if (!s || !isdigit((unsigned char) *s))
                return false;
        char *e;
        errno = 0;
        unsigned long long v = strtoull(s, &e, 10);
        while (isspace((unsigned char) *e))
                e++;
        if (errno || *e || v > COUNT_MAX)
                return false;
        *ret = v;
        return true;
}

/* ---- boot arguments ---- */

/* The pages of size_kb a command line reserves on node at boot: hugepages= after hugepagesz=SIZE
 * (before any hugepagesz=: the default size's, default_hugepagesz= or the architecture's), as
 * "N:C,…" per node, or as one count the kernel spreads over the nodes with memory in turn. */
static uint64_t cmdline_pool(const char *cmdline, bool numa, const CpuSet *nodes, unsigned node, uint64_t size_kb) {
        _cleanup_strv_free_ char **args = NULL;
        _cleanup_free_ char *def = NULL;
        uint64_t def_kb = ARCH_DEFAULT_KB, cur = 0, count = 0;
        if (!cmdline || cmdline_split(cmdline, &args) < 0)
                return 0;
        if (cmdline_get(cmdline, "default_hugepagesz", &def) >= 0 && def)
                (void) hugepage_size_parse(def, &def_kb);
        cur = def_kb;
        for (char **a = args; *a; a++) {
                _cleanup_free_ char *name = NULL, *value = NULL;
                if (cmdline_arg_ends_kernel(*a, strlen(*a)))
                        break;
                if (cmdline_parse_arg(*a, strlen(*a), &name, &value) < 0 || !value)
                        continue;
                if (streq(name, "hugepagesz"))
                        (void) hugepage_size_parse(value, &cur);
                if (!streq(name, "hugepages") || cur != size_kb)
                        continue;
                count = 0;
                if (!strchr(value, ':')) {
                        uint64_t n = 0, k = MAX(cpu_set_count(nodes), 1U), idx = 0;
                        (void) hugepages_parse_count(value, &n);
                        CPU_SET_FOREACH (m, nodes) {
                                if ((unsigned) m == node)
                                        count = n / k + (idx < n % k);
                                idx++;
                        }
                        if (!numa)
                                count = n;
                        continue;
                }
                for (char *p = value; p && *p;) {
                        unsigned long nd = strtoul(p, &p, 10);
                        unsigned long long c = *p == ':' ? strtoull(p + 1, &p, 10) : 0;
                        if (nd == node)
                                count = c;
                        p = strchr(p, ',');
                        p = p ? p + 1 : NULL;
                }
        }
        return count;
}

/* The same of the bootloader's configuration (configured) and of the running kernel's command
 * line (running). */
int hugepages_boot_pools(Root *root, unsigned node, uint64_t size_kb, uint64_t *ret_configured, uint64_t *ret_running) {
        _cleanup_free_ char *configured = NULL, *running = NULL, *why = NULL;
        bool numa;
        CpuSet nodes;
        int k = numa_memory_nodes(root, &numa, &nodes);
        if (k < 0)
                return k;
        k = boot_configured_cmdline(root, &configured, &why);
        if (k < 0 && k != -ENOENT && k != -EBADMSG)
                return k;
        k = root_read_line(root, "proc/cmdline", &running);
        if (k < 0 && k != -ENOENT)
                return k;
        *ret_configured = cmdline_pool(configured, numa, &nodes, node, size_kb);
        *ret_running = cmdline_pool(running, numa, &nodes, node, size_kb);
        return 0;
}

/* ---- plan ---- */

/* A boot argument the section needs must not be the boot section's too. */
static int refuse_boot_arg(PlanCtx *ctx, const char *name, const char *key) {
        json_t *args = json_object_get(json_object_get(ctx->resolved->doc, "boot"), "args");
        if (!json_object_get(args, name))
                return 0;
        _cleanup_free_ char *ptr = json_pointer_append("/boot/args", name);
        return plan_fail(ctx, ptr ?: "/boot/args",
                         "%s is set by the hugepages section (\"%s\"); remove it from the boot section", name, key);
}

/* The bootloader's configuration must leave hugepages= to rtpart: one hugepagesz= and one
 * hugepages= after it, or none (an argument of another size, or one for the default size, would
 * be replaced). */
static int check_configured(PlanCtx *ctx, const char *configured) {
        _cleanup_strv_free_ char **args = NULL;
        size_t sz = 0, pages = 0;
        bool pages_first = false;
        if (!configured)
                return 0;
        if (cmdline_split(configured, &args) < 0)
                return -ENOMEM;
        for (char **a = args; *a; a++) {
                if (cmdline_arg_ends_kernel(*a, strlen(*a)))
                        break;
                sz += cmdline_arg_is(*a, "hugepagesz");
                if (cmdline_arg_is(*a, "hugepages"))
                        pages_first = pages_first || (pages++ == 0 && sz == 0);
        }
        if (sz <= 1 && pages <= 1 && !pages_first)
                return 0;
        return plan_fail(ctx, "/hugepages",
                         "the bootloader's configuration already reserves huge pages (%s), which rtpart's "
                         "hugepagesz= and hugepages= would replace; remove them from it (the kernel command line "
                         "in etc/default/grub, etc/kernel/cmdline or the boot entries), or set \"boot_size\": \"none\"",
                         pages_first ? "hugepages= for the default page size" : "of several sizes");
}

/* Whether the running kernel is older than major.minor. */
static bool kernel_before(const char *release, unsigned major, unsigned minor) {
        unsigned a, b;
        return release && sscanf(release, "%u.%u", &a, &b) == 2 && (a < major || (a == major && b < minor));
}

/* hugepages= for the boot size: "NODE:COUNT,…" (Linux 5.16 and later), or the one count every
 * node gets where the kernel is older and every node with memory gets the same (it spreads a
 * count over them in turn); without NUMA, the count. */
static int boot_pages_arg(PlanCtx *ctx, const Section *s, const char *size, char **ret) {
        uint64_t first = 0, total = 0;
        size_t nodes = 0;
        bool equal = true;
        StrBuf b = {};
        for (size_t i = 0; i < s->res.n_pools; i++) {
                const HugepagePool *p = &s->res.pools[i];
                if (!p->boot)
                        continue;
                first = nodes++ ? first : p->count;
                equal = equal && p->count == first;
                total += p->count;
                if (p->count > 0)
                        strbuf_appendf(&b, "%s%u:%" PRIu64, b.len ? "," : "", p->node, p->count);
        }
        _cleanup_free_ char *list = strbuf_steal(&b);
        if (!list)
                return -ENOMEM;
        if (s->numa && !kernel_before(ctx->host->kernel_release, 5, 16)) {
                *ret = TAKE_PTR(list);
                return 0;
        }
        if (s->numa && (!equal || nodes != cpu_set_count(&s->nodes)))
                return plan_fail(ctx, "/hugepages",
                                 "this host runs Linux %s, whose hugepages= takes no count per node (5.16 and later "
                                 "do); give every node with memory the same count of %s pages, or set "
                                 "\"boot_size\": \"none\"",
                                 ctx->host->kernel_release, size);
        return asprintf(ret, "%" PRIu64, total) < 0 ? -ENOMEM : 0;
}

/* A boot argument of the boot domain, noted as the section's (key: what sets it). */
static int plan_boot_arg(PlanCtx *ctx, const char *name, const char *value, const char *key) {
        Knob *kn;
        char *note;
        int k = boot_plan_arg(ctx, name, value, &kn);
        if (k < 0)
                return k;
        if (asprintf(&note, "set by the hugepages section (%s)%s%s", key, kn->note ? "; " : "", strempty(kn->note)) < 0)
                return -ENOMEM;
        free(kn->note);
        kn->note = note;
        return 0;
}

int hugepages_plan_boot_args(PlanCtx *ctx, const Section *s) {
        _cleanup_free_ char *configured = NULL, *why = NULL;
        int k = boot_configured_cmdline(ctx->root, &configured, &why);
        if (k < 0 && k != -ENOENT && k != -EBADMSG)
                return k;
        if (s->res.default_kb) {
                _cleanup_free_ char *f = hugepage_size_format(s->res.default_kb);
                if ((k = refuse_boot_arg(ctx, "default_hugepagesz", "default_size")) < 0 ||
                    (k = plan_boot_arg(ctx, "default_hugepagesz", f, "default_size")) < 0)
                        return k;
        }
        if (!s->res.boot_kb)
                return 0;
        if ((k = refuse_boot_arg(ctx, "hugepagesz", "boot_size")) < 0 ||
            (k = refuse_boot_arg(ctx, "hugepages", "boot_size")) < 0 || (k = check_configured(ctx, configured)) < 0)
                return k;
        _cleanup_free_ char *list = NULL, *f = hugepage_size_format(s->res.boot_kb);
        if (!f)
                return -ENOMEM;
        if ((k = boot_pages_arg(ctx, s, f, &list)) < 0)
                return k;
        if (!configured && why &&
            (k = plan_note(ctx, "hugepages: %s pages the kernel cannot give at runtime cannot be reserved at boot: %s",
                           f, why)) < 0)
                return k;
        if (!configured && !why &&
            (k = plan_note(ctx,
                           "hugepages: no bootloader configuration found: %s pages the kernel cannot give at "
                           "runtime cannot be reserved at boot",
                           f)) < 0)
                return k;
        if ((k = plan_boot_arg(ctx, "hugepagesz", f, "boot_size")) < 0)
                return k;
        return plan_boot_arg(ctx, "hugepages", list, "boot_size");
}
