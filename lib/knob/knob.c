/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu-set.h"
#include "knob.h"
#include "strv.h"

static const char * const domain_table[_DOMAIN_MAX] = {
        [DOMAIN_BOOT] = "boot",     [DOMAIN_IRQ] = "irq",         [DOMAIN_IRQBALANCE] = "irqbalance",
        [DOMAIN_CPUSET] = "cpuset", [DOMAIN_RESCTRL] = "resctrl", [DOMAIN_SYSCTL] = "sysctl",
        [DOMAIN_SYSFS] = "sysfs",   [DOMAIN_KTHREAD] = "kthread", [DOMAIN_CPU] = "cpu",
        [DOMAIN_MODULE] = "module",
};

static const char * const value_kind_table[_VALUE_KIND_MAX] = {
        [VALUE_AUTO] = "auto",     [VALUE_CPU_LIST] = "cpu-list", [VALUE_CPU_MASK] = "cpu-mask",
        [VALUE_SELECT] = "select", [VALUE_BOOTARG] = "bootarg",   [VALUE_SCHEMATA] = "schemata",
};

const char *value_kind_to_string(ValueKind k) {
        return k >= 0 && k < _VALUE_KIND_MAX ? value_kind_table[k] : NULL;
}

ValueKind value_kind_from_string(const char *s) {
        for (int i = 0; s && i < _VALUE_KIND_MAX; i++)
                if (streq(value_kind_table[i], s))
                        return (ValueKind) i;
        return _VALUE_KIND_INVALID;
}

const char *domain_to_string(Domain d) {
        return d >= 0 && d < _DOMAIN_MAX ? domain_table[d] : NULL;
}

Domain domain_from_string(const char *s) {
        for (int i = 0; s && i < _DOMAIN_MAX; i++)
                if (streq(domain_table[i], s))
                        return (Domain) i;
        return _DOMAIN_INVALID;
}

Domain knob_id_domain(const char *id) {
        char name[32];
        size_t n = strcspn(id, "/");
        if (n >= sizeof(name))
                return _DOMAIN_INVALID;
        memcpy(name, id, n);
        name[n] = 0;
        return domain_from_string(name);
}

void knob_result_done(KnobResult *r) {
        free(r->reason);
        *r = (KnobResult) {};
}

void knob_result_reason(KnobResult *r, const char *fmt, ...) {
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        /* A reason is a courtesy: without memory for it, the errno still says what. */
        if (vasprintf(&s, fmt, ap) >= 0) {
                free(r->reason);
                r->reason = s;
        }
        va_end(ap);
}

int knob_result_finish(KnobResult *ret, int r) {
        ret->status = r < 0         ? KNOB_FAILED
                : r == KNOB_REFUSED ? KNOB_REFUSED
                : r == KNOB_SKIPPED ? KNOB_SKIPPED
                                    : KNOB_DONE;
        ret->error = MIN(r, 0);
        return r;
}

/* ---- semantic comparison ---- */

static bool parse_int(const char *s, long long *ret) {
        while (isspace((unsigned char) *s))
                s++;
        if (streq(s, "Y") || streq(s, "y")) {
                *ret = 1;
                return true;
        }
        if (streq(s, "N") || streq(s, "n")) {
                *ret = 0;
                return true;
        }
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 0);
        if (errno || end == s)
                return false;
        while (isspace((unsigned char) *end))
                end++;
        if (*end)
                return false;
        *ret = v;
        return true;
}

static char *normalize_ws(const char *s) {
        char *out = malloc(strlen(s) + 1), *o = out; /* never longer than s */
        bool space = false;
        if (!out)
                return NULL;
        while (isspace((unsigned char) *s))
                s++;
        for (; *s; s++) {
                if (isspace((unsigned char) *s)) {
                        space = true;
                        continue;
                }
                if (space)
                        *o++ = ' ';
                space = false;
                *o++ = *s;
        }
        *o = 0;
        return out;
}

static char *select_value(const char *s) {
        const char *a = strchr(s, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b)
                return strndup(a + 1, (size_t) (b - a - 1));
        return normalize_ws(s);
}

static bool parse_cpus(const char *s, bool mask_first, CpuSet *ret) {
        if (mask_first && cpu_set_parse_mask(s, ret, NULL) >= 0)
                return true;
        if (cpu_set_parse_list(s, ret, NULL) >= 0)
                return true;
        return !mask_first && cpu_set_parse_mask(s, ret, NULL) >= 0;
}

/* "managed_irq,domain,2-7" → flags {managed_irq,domain} (sorted string) + CPU set. */
static bool split_bootarg(const char *s, char **ret_flags, CpuSet *ret_cpus) {
        _cleanup_strv_free_ char **flags = NULL;
        const char *p = s;
        for (;;) {
                const char *comma = strchr(p, ',');
                if (isdigit((unsigned char) *p) || !*p)
                        break;
                _cleanup_free_ char *f = comma ? strndup(p, (size_t) (comma - p)) : strdup(p);
                if (!f || strv_push(&flags, TAKE_PTR(f)) < 0)
                        return false;
                if (!comma) {
                        p += strlen(p);
                        break;
                }
                p = comma + 1;
        }
        if (*p && cpu_set_parse_list(p, ret_cpus, NULL) < 0)
                return false;
        if (!*p)
                cpu_set_zero(ret_cpus);
        strv_sort(flags);
        StrBuf b = {};
        for (char **f = flags; f && *f; f++)
                strbuf_appendf(&b, "%s,", *f);
        *ret_flags = strbuf_steal(&b);
        return *ret_flags != NULL;
}

static bool schemata_equal(const char *a, const char *b) {
        /* "0=7f0;1=7f0" — domain ids (below 256) and values, order-insensitive. Both sides of a
         * comparison hold the same resource, so parsing every value as hex compares cache masks
         * correctly and MB percentages consistently (equal decimals are equal in any base). */
        unsigned long long va[256], vb[256];
        bool seen_a[256] = {}, seen_b[256] = {};
        const char *sides[2] = { a, b };
        unsigned long long *vals[2] = { va, vb };
        bool *seen[2] = { seen_a, seen_b };
        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *copy = strdup(sides[i]);
                char *save = NULL;
                if (!copy)
                        return false;
                for (char *t = strtok_r(copy, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
                        unsigned id;
                        char val[64];
                        while (isspace((unsigned char) *t))
                                t++;
                        if (sscanf(t, "%u=%63s", &id, val) != 2 || id >= 256)
                                return false;
                        seen[i][id] = true;
                        vals[i][id] = strtoull(val, NULL, 16);
                }
        }
        return memcmp(seen_a, seen_b, sizeof(seen_a)) == 0 && ({
                       bool eq = true;
                       for (int i = 0; i < 256; i++)
                               if (seen_a[i] && va[i] != vb[i])
                                       eq = false;
                       eq;
               });
}

bool value_equal(ValueKind kind, const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        /* The same text is the same value in every kind (each parse below is a function of the
         * text); the common case of a verify, and no 1 KiB CPU sets to fill for it. */
        if (streq(a, b))
                return true;

        switch (kind) {
        case VALUE_CPU_LIST:
        case VALUE_CPU_MASK: {
                CpuSet x, y;
                bool mask = kind == VALUE_CPU_MASK;
                if (parse_cpus(a, mask, &x) && parse_cpus(b, mask, &y))
                        return cpu_set_equal(&x, &y);
                break;
        }
        case VALUE_SELECT: {
                _cleanup_free_ char *x = select_value(a), *y = select_value(b);
                return x && y && streq(x, y);
        }
        case VALUE_BOOTARG: {
                _cleanup_free_ char *fa = NULL, *fb = NULL;
                CpuSet x, y;
                if (split_bootarg(a, &fa, &x) && split_bootarg(b, &fb, &y))
                        return streq(fa, fb) && cpu_set_equal(&x, &y);
                break;
        }
        case VALUE_SCHEMATA:
                return schemata_equal(a, b);
        case VALUE_AUTO: {
                long long x, y;
                if (parse_int(a, &x) && parse_int(b, &y))
                        return x == y;
                _cleanup_free_ char *sa = select_value(a), *sb = select_value(b);
                if (strchr(a, '[') || strchr(b, '['))
                        return sa && sb && streq(sa, sb);
                break;
        }
        default:
                break;
        }
        _cleanup_free_ char *na = normalize_ws(a), *nb = normalize_ws(b);
        return na && nb && streq(na, nb);
}

char *value_display(ValueKind kind, const char *v) {
        if (!v)
                return strdup("(absent)");
        if (kind == VALUE_CPU_MASK) {
                CpuSet s;
                if (cpu_set_parse_mask(v, &s, NULL) >= 0) {
                        _cleanup_free_ char *l = cpu_set_format_list(&s);
                        char *out;
                        return l && asprintf(&out, "%s (%s)", v, *l ? l : "none") >= 0 ? out : NULL;
                }
        }
        if (kind == VALUE_SELECT || (kind == VALUE_AUTO && strchr(v, '[')))
                return select_value(v);
        if (!*v)
                return strdup(kind == VALUE_BOOTARG ? "(set)" : "(empty)");
        return normalize_ws(v);
}

char *value_for_write(ValueKind kind, const char *v) {
        if (!v)
                return NULL;
        if (kind == VALUE_SELECT || (kind == VALUE_AUTO && strchr(v, '[')))
                return select_value(v);
        return strdup(v);
}
