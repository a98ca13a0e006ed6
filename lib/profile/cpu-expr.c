/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CPU expressions: "2-7,!node:1,isolated" → a CPU set of the host (declared in profile.h). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "schema.h"
#include "strv.h"

/* "node:1" with prefix "node:" → 1: decimal digits and nothing after them. An id past UINT_MAX
 * is UINT_MAX, which no host has ("node:4294967297" is not node 1). */
static bool selector_id(const char *tok, const char *prefix, unsigned *ret) {
        if (!startswith(tok, prefix))
                return false;
        const char *p = tok + strlen(prefix);
        if (!isdigit((unsigned char) *p))
                return false;
        char *end;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (*end)
                return false;
        *ret = errno == ERANGE || v > UINT_MAX ? UINT_MAX : (unsigned) v;
        return true;
}

int cpu_expr_parse(const char *expr, const Host *host, const CpuSet *iso, const CpuSet *hk, CpuSet *ret,
                   char **ret_message) {
        CpuSet plus = {}, minus = {};
        _cleanup_free_ char *copy = strdup(expr);
        char *save = NULL;
        bool any = false;

        if (!copy)
                return -ENOMEM;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                while (isspace((unsigned char) *tok))
                        tok++;
                size_t tl = strlen(tok);
                while (tl > 0 && isspace((unsigned char) tok[tl - 1]))
                        tok[--tl] = 0;
                bool neg = tok[0] == '!';
                if (neg)
                        tok++;
                CpuSet *dst = neg ? &minus : &plus;
                CpuSet s;
                unsigned id;
                any = true;

                if (streq(tok, "all") || streq(tok, "online"))
                        s = host->online;
                else if (streq(tok, "isolated") || streq(tok, "housekeeping")) {
                        const CpuSet *c = streq(tok, "isolated") ? iso : hk;
                        if (!c)
                                return asprintf(ret_message,
                                                "\"%s\" cannot be used here: the CPU classes are being defined",
                                                tok) < 0
                                        ? -ENOMEM
                                        : -EINVAL;
                        s = *c;
                } else if (selector_id(tok, "node:", &id)) {
                        if (!host_node_cpus(host, id, &s))
                                return asprintf(ret_message,
                                                "NUMA node %s does not exist or has no online CPUs (nodes: 0-%u)",
                                                strchr(tok, ':') + 1, host->n_nodes - 1) < 0
                                        ? -ENOMEM
                                        : -EINVAL;
                } else if (selector_id(tok, "package:", &id) || selector_id(tok, "socket:", &id)) {
                        if (!host_package_cpus(host, id, &s))
                                return asprintf(ret_message, "package %s does not exist on this host",
                                                strchr(tok, ':') + 1) < 0
                                        ? -ENOMEM
                                        : -EINVAL;
                } else if (selector_id(tok, "l3:", &id)) {
                        if (!host_l3_cpus(host, id, &s)) {
                                StrBuf b = {};
                                for (size_t i = 0; i < host->n_l3; i++)
                                        strbuf_appendf(&b, "%s%u", i ? "," : "", host->l3[i].id);
                                _cleanup_free_ char *ids = strbuf_steal(&b);
                                return asprintf(ret_message, "L3 cache domain %s does not exist (cache ids: %s)",
                                                strchr(tok, ':') + 1, ids && *ids ? ids : "none") < 0
                                        ? -ENOMEM
                                        : -EINVAL;
                        }
                } else if (isdigit((unsigned char) tok[0])) {
                        CpuSetError err;
                        int k = cpu_set_parse_list(tok, &s, &err);
                        if (k < 0)
                                return asprintf(ret_message, "\"%s\" is not a CPU list: %s at \"%s\"", tok, err.reason,
                                                tok + err.pos) < 0
                                        ? -ENOMEM
                                        : -EINVAL;
                        CpuSet missing = s;
                        cpu_set_andnot(&missing, &host->online);
                        if (!cpu_set_is_empty(&missing)) {
                                _cleanup_free_ char *m = cpu_set_format_list(&missing);
                                _cleanup_free_ char *on = cpu_set_format_list(&host->online);
                                return asprintf(ret_message, "CPU %s %s not exist (online: %s)", strempty(m),
                                                cpu_set_count(&missing) > 1 ? "do" : "does", strempty(on)) < 0
                                        ? -ENOMEM
                                        : -EINVAL;
                        }
                } else {
                        const char *words[] = { "isolated", "housekeeping", "all", "node:", "package:", "l3:" };
                        const char *hint = schema_closest(tok, words, ELEMENTSOF(words));
                        if (hint)
                                return asprintf(ret_message, "\"%s\" is not a CPU expression; did you mean \"%s\"?",
                                                tok, hint) < 0
                                        ? -ENOMEM
                                        : -EINVAL;
                        return asprintf(
                                       ret_message,
                                       "\"%s\" is not a CPU expression; use CPU numbers and ranges (2-7,10), isolated, housekeeping, all, node:N, package:N or l3:N",
                                       tok) < 0
                                ? -ENOMEM
                                : -EINVAL;
                }
                cpu_set_or(dst, &s);
        }
        (void) any;
        cpu_set_andnot(&plus, &minus);
        *ret = plus;
        return 0;
}
