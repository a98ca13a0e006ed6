/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libvirt's qemu hook: a domain's pins against the ledger (hook.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"

void hook_domain_done(HookDomain *d) {
        if (!d)
                return;
        free(d->name);
        free(d->pins);
        *d = (HookDomain) {};
}

/* The value of attribute name in a tag's text [p, end), NUL-terminated into buf; NULL if absent. */
static const char *attr(const char *p, const char *end, const char *name, char *buf, size_t size) {
        size_t n = strlen(name);
        for (const char *a = p; a + n + 2 < end; a++) {
                if ((a[-1] != ' ' && a[-1] != '\t' && a[-1] != '\n') || strncmp(a, name, n) != 0 || a[n] != '=' ||
                    (a[n + 1] != '\'' && a[n + 1] != '"'))
                        continue;
                const char *v = a + n + 2, *q = memchr(v, a[n + 1], (size_t) (end - v));
                if (!q || (size_t) (q - v) >= size)
                        return NULL;
                memcpy(buf, v, (size_t) (q - v));
                buf[q - v] = 0;
                return buf;
        }
        return NULL;
}

/* The end of the tag that starts at p (its '>'), quotes skipped; NULL when it does not end. */
static const char *tag_end(const char *p, const char *end) {
        char quote = 0;
        for (; p < end; p++) {
                if (quote)
                        quote = *p == quote ? 0 : quote;
                else if (*p == '\'' || *p == '"')
                        quote = *p;
                else if (*p == '>')
                        return p;
        }
        return NULL;
}

static bool is_tag(const char *p, const char *end, const char *name) {
        size_t n = strlen(name);
        return (size_t) (end - p) > n && strncmp(p, name, n) == 0 && strchr(" \t\n/>", p[n]);
}

static int add_pin(HookDomain *d, const char *p, const char *end, char **ret_error) {
        char vcpu[16], cpuset[1024];
        HookPin pin = {};
        char *e;
        if (!attr(p, end, "vcpu", vcpu, sizeof(vcpu)) || !attr(p, end, "cpuset", cpuset, sizeof(cpuset)))
                return asprintf(ret_error, "a <vcpupin> without vcpu= or cpuset=") < 0 ? -ENOMEM : -EINVAL;
        pin.vcpu = (unsigned) strtoul(vcpu, &e, 10);
        if (*e || !*vcpu || cpu_set_parse_list(cpuset, &pin.cpus, NULL) < 0)
                return asprintf(ret_error, "<vcpupin vcpu='%s' cpuset='%s'> does not read as a vCPU and a CPU list",
                                vcpu, cpuset) < 0
                        ? -ENOMEM
                        : -EINVAL;
        HookPin *pins = realloc(d->pins, (d->n_pins + 1) * sizeof(HookPin));
        if (!pins)
                return -ENOMEM;
        d->pins = pins;
        d->pins[d->n_pins++] = pin;
        return 0;
}

/* One element's start at p ('<' + 1) to its '>' at q, its parent parent: what it says, stored. */
static int take_element(HookDomain *d, const char *parent, const char *p, const char *q, const char *end,
                        char **ret_error) {
        char buf[1024];
        if (streq(parent, "domain") && (is_tag(p, q + 1, "name") || is_tag(p, q + 1, "vcpu"))) {
                const char *t = q + 1, *close = memchr(t, '<', (size_t) (end - t));
                if (!close)
                        return -EINVAL;
                if (is_tag(p, q + 1, "vcpu")) {
                        d->vcpus = (unsigned) strtoul(t, NULL, 10);
                        return 0;
                }
                free(d->name);
                return (d->name = strndup(t, (size_t) (close - t))) ? 0 : -ENOMEM;
        }
        if (!streq(parent, "cputune"))
                return 0;
        if (is_tag(p, q + 1, "vcpupin"))
                return add_pin(d, p, q, ret_error);
        if (is_tag(p, q + 1, "emulatorpin") && attr(p, q, "cpuset", buf, sizeof(buf)) &&
            cpu_set_parse_list(buf, &d->emulator, NULL) < 0)
                return asprintf(ret_error, "<emulatorpin cpuset='%s'> is no CPU list", buf) < 0 ? -ENOMEM : -EINVAL;
        return 0;
}

int hook_domain_parse(const char *xml, size_t size, HookDomain *ret, char **ret_error) {
        _cleanup_(hook_domain_done) HookDomain d = {};
        const char *end = xml + size;
        char stack[8][16] = {}; /* the open elements' names, as deep as the check looks */
        size_t depth = 0;
        *ret_error = NULL;
        for (const char *p = memchr(xml, '<', size); p; p = memchr(p, '<', (size_t) (end - p))) {
                p++;
                if (p < end && (*p == '!' || *p == '?')) { /* a comment, a declaration */
                        const char *q = *p == '!' && end - p > 2 && strncmp(p, "!--", 3) == 0
                                ? memmem(p, (size_t) (end - p), "-->", 3)
                                : tag_end(p, end);
                        if (!q)
                                break;
                        p = q;
                        continue;
                }
                const char *q = tag_end(p, end);
                if (!q)
                        return asprintf(ret_error, "a tag that does not end") < 0 ? -ENOMEM : -EINVAL;
                if (*p == '/') {
                        depth -= depth > 0;
                        p = q;
                        continue;
                }
                int r = take_element(&d, depth > 0 && depth <= 8 ? stack[depth - 1] : "", p, q, end, ret_error);
                if (r < 0)
                        return r;
                if (q[-1] != '/') { /* not <x/>: it is open until its end tag */
                        if (depth < 8) {
                                size_t n = strcspn(p, " \t\n/>");
                                snprintf(stack[depth], sizeof(stack[depth]), "%.*s", (int) MIN(n, (size_t) 15), p);
                        }
                        depth++;
                }
                p = q;
        }
        if (!d.name)
                return asprintf(ret_error, "no <name> in the domain") < 0 ? -ENOMEM : -EINVAL;
        *ret = d;
        d = (HookDomain) {};
        return 0;
}

int hook_check(const Ledger *l, const HookDomain *d, char **ret_reason) {
        const LedgerVm *vm = ledger_find(l, d->name);
        CpuSet others = {}, pinned = d->emulator;
        for (size_t i = 0; l && i < l->n_vms; i++)
                if (&l->vms[i] != vm)
                        cpu_set_or(&others, &l->vms[i].reserved);
        for (size_t i = 0; i < d->n_pins; i++) {
                const HookPin *p = &d->pins[i];
                _cleanup_free_ char *got = cpu_set_format_list(&p->cpus);
                cpu_set_or(&pinned, &p->cpus);
                if (!vm)
                        continue;
                if (p->vcpu >= vm->n_vcpus)
                        return asprintf(ret_reason,
                                        "rtpart: domain %s pins vCPU %u, but the ledger reserves CPUs for %u vCPUs; "
                                        "give it <vcpu>%u</vcpu>, or 'rtpartctl vm remove %s' and add it again with "
                                        "--vcpus %u",
                                        d->name, p->vcpu, vm->n_vcpus, vm->n_vcpus, d->name, p->vcpu + 1) < 0
                                ? -ENOMEM
                                : -EPERM;
                CpuSet want = {};
                cpu_set_add(&want, vm->vcpu_cpus[p->vcpu]);
                if (!cpu_set_equal(&want, &p->cpus))
                        return asprintf(ret_reason,
                                        "rtpart: domain %s pins vCPU %u to CPUs %s, but the ledger reserves CPU %u for "
                                        "it; pin it there (rtpartctl export libvirt %s)",
                                        d->name, p->vcpu, strempty(got), vm->vcpu_cpus[p->vcpu], d->name) < 0
                                ? -ENOMEM
                                : -EPERM;
        }
        if (vm && d->n_pins < vm->n_vcpus)
                return asprintf(ret_reason,
                                "rtpart: domain %s pins %zu of the %u vCPUs the ledger reserves CPUs for; pin every "
                                "one (rtpartctl export libvirt %s)",
                                d->name, d->n_pins, vm->n_vcpus, d->name) < 0
                        ? -ENOMEM
                        : -EPERM;
        if (cpu_set_intersects(&pinned, &others)) {
                for (size_t i = 0; i < l->n_vms; i++) {
                        if (&l->vms[i] == vm || !cpu_set_intersects(&pinned, &l->vms[i].reserved))
                                continue;
                        CpuSet both = pinned;
                        cpu_set_and(&both, &l->vms[i].reserved);
                        _cleanup_free_ char *cpus = cpu_set_format_list(&both);
                        return asprintf(ret_reason,
                                        "rtpart: domain %s is pinned to CPUs %s, which the ledger reserves for VM %s; "
                                        "%s",
                                        d->name, strempty(cpus), l->vms[i].name,
                                        vm ? "pin it to its own reservation (rtpartctl export libvirt NAME)"
                                           : "reserve CPUs of its own (rtpartctl vm add NAME --vcpus N) and pin it "
                                             "there") < 0
                                ? -ENOMEM
                                : -EPERM;
                }
        }
        return 0;
}
