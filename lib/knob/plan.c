/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "strv.h"

/* The order is the order of application: boot first (nothing at runtime), then what moves work
 * off isolated CPUs (cgroups, IRQs, threads), then the rest. */
static const Backend * const backends[] = {
        &backend_boot,    &backend_cpuset, &backend_resctrl, &backend_irq, &backend_irqbalance,
        &backend_kthread, &backend_sysctl, &backend_sysfs,   &backend_cpu, &backend_module,
};

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
        for (int i = 0; i < _DOMAIN_MAX; i++)
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

char *knob_count_phrase(const size_t counts[_DOMAIN_MAX]) {
        size_t parts = 0, done = 0, n_table;
        const Backend * const *table = backend_table(&n_table);
        StrBuf b = {};
        for (size_t i = 0; i < n_table; i++)
                parts += counts[table[i]->domain] > 0;
        for (size_t i = 0; i < n_table; i++) {
                const Backend *be = table[i];
                size_t n = counts[be->domain];
                if (n == 0)
                        continue;
                done++;
                strbuf_appendf(&b, "%s%zu %s%s%s",
                               done == 1               ? ""
                                       : done == parts ? " and "
                                                       : ", ",
                               n, be->knob_noun ?: be->name, be->knob_noun ? "" : " knob", n == 1 ? "" : "s");
        }
        return strbuf_steal(&b);
}

const Backend *backend_for(Domain d) {
        for (size_t i = 0; i < ELEMENTSOF(backends); i++)
                if (backends[i]->domain == d)
                        return backends[i];
        return NULL;
}

const Backend * const *backend_table(size_t *ret_n) {
        *ret_n = ELEMENTSOF(backends);
        return backends;
}

Plan *plan_free(Plan *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_knobs; i++) {
                free(p->knobs[i].id);
                free(p->knobs[i].path);
                free(p->knobs[i].current);
                free(p->knobs[i].desired);
                free(p->knobs[i].note);
        }
        free(p->knobs);
        free(p->profile);
        strv_free(p->notes);
        free(p);
        return NULL;
}

static char *dup_or_null(const char *s, bool *oom) {
        if (!s)
                return NULL;
        char *d = strdup(s);
        if (!d)
                *oom = true;
        return d;
}

int plan_add(PlanCtx *ctx, const char *id, ValueKind kind, const char *path, const char *current, const char *desired,
             bool reboot, Knob **ret) {
        Plan *p = ctx->plan;
        bool oom = false;

        if (GROW_ARRAY(p->knobs, p->cap_knobs, p->n_knobs, 64) < 0)
                return -ENOMEM;
        Knob *k = &p->knobs[p->n_knobs];
        *k = (Knob) {
                .id = dup_or_null(id, &oom),
                .domain = _DOMAIN_INVALID,
                .kind = kind,
                .path = dup_or_null(path, &oom),
                .current = dup_or_null(current, &oom),
                .desired = dup_or_null(desired, &oom),
                .reboot = reboot,
        };
        if (oom) {
                free(k->id);
                free(k->path);
                free(k->current);
                free(k->desired);
                return -ENOMEM;
        }
        k->changed = !value_equal(kind, current, desired);
        p->n_knobs++;
        if (ret)
                *ret = k;
        return 0;
}

int plan_note(PlanCtx *ctx, const char *fmt, ...) {
        char *s;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        return strv_push(&ctx->plan->notes, s);
}

static int plan_failv(PlanCtx *ctx, const char *pointer, const char *fmt, va_list ap) {
        Error *e = ctx->error;
        if (!e)
                return -EINVAL;
        error_done(e);
        if (vasprintf(&e->message, fmt, ap) < 0)
                e->message = NULL;
        /* Find the file that set this pointer (or its closest parent). */
        const Profile *pr = ctx->resolved->profile;
        const char *file = pr ? pr->path : NULL;
        if (pr && pr->origins) {
                _cleanup_free_ char *p = strdup(pointer);
                while (p) {
                        const char *f = json_string_value(json_object_get(pr->origins, p));
                        if (f) {
                                file = f;
                                break;
                        }
                        char *slash = strrchr(p, '/');
                        if (!slash)
                                break;
                        *slash = 0;
                }
        }
        e->file = file ? strdup(file) : NULL;
        e->pointer = strdup(pointer);
        e->code = -EINVAL;
        return -EINVAL;
}

int plan_fail(PlanCtx *ctx, const char *pointer, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = plan_failv(ctx, pointer, fmt, ap);
        va_end(ap);
        return r;
}

int plan_fail_item(PlanCtx *ctx, const char *list, size_t i, const char *key, const char *fmt, ...) {
        char ptr[256];
        if (key)
                snprintf(ptr, sizeof(ptr), "%s/%zu/%s", list, i, key);
        else
                snprintf(ptr, sizeof(ptr), "%s/%zu", list, i);
        va_list ap;
        va_start(ap, fmt);
        int r = plan_failv(ctx, ptr, fmt, ap);
        va_end(ap);
        return r;
}

int knob_read_file(Root *root, const Knob *k, char **ret) {
        if (!k->path)
                return -ENOENT;
        return root_read_line(root, k->path, ret);
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

int knob_write_file(Root *root, const Knob *k, const char *value) {
        if (!value)
                return 0; /* the file did not exist before: nothing to put back */
        if (!k->path)
                return -EINVAL;
        _cleanup_free_ char *v = value_for_write(k->kind, value);
        if (!v)
                return -ENOMEM;
        return root_write_value(root, k->path, v);
}

int knob_write_file_verb(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        *ret = (KnobResult) {};
        return knob_result_finish(ret, knob_write_file(root, k, value));
}

int knob_watch_file(const Knob *k, char ***ret_paths) {
        char **l = NULL;
        if (k->path && strv_extend(&l, k->path) < 0)
                return -ENOMEM;
        *ret_paths = l;
        return k->path ? 1 : 0;
}

int knob_watch_none(const Knob *k, char ***ret_paths) {
        *ret_paths = NULL;
        return 0;
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

/* ---- kernel and module parameters in files a shell or a config parser reads ----
 *
 * The kernel splits its command line with next_arg() (lib/base/cmdline.c, kernel/params.c): arguments
 * are separated by whitespace, double quotes keep spaces inside one and cannot be escaped, the
 * first '=' ends the name, '-' and '_' are alike in names, and "module.param" reaches a built-in
 * module's parameter. So a name is [A-Za-z0-9_][A-Za-z0-9_.-]*, which is what parse_args()
 * matches against a parameter table (and "-", "--" or "=x" never are).
 *
 * Values are more than the kernel needs: rtpart restates them in etc/default/grub.d/rtpart.cfg,
 * which grub-mkconfig sources as root (inside "…", where $ ` \ " expand or end the string), in a
 * BLS entry's "options" line and in /etc/kernel/cmdline (whitespace-separated, one line), and in
 * /etc/modprobe.d (one "options" line; kmod passes a module's configured options to the shell of
 * an "install" command through $CMDLINE_OPTS). The set below is what the parameters of a realtime
 * host take, and nothing any of those readers gives a meaning:
 *   letters, digits   nohz_full=1-3, hugepagesz=1G, console=ttyS0,115200n8, idle=poll
 *   , -               isolcpus=managed_irq,domain,1-3 (Documentation/admin-guide/kernel-parameters.txt,
 *                     "cpu lists"), systemd.cpu_affinity=0,8
 *   _ .               rcu_nocb_poll, processor.max_cstate=1 (and values such as 8250.nr_uarts)
 *   = : /             root=UUID=…, root=/dev/disk/by-path/pci-0000:00:1f.2-ata-1, video=efifb:off
 *   +                 trace_event=sched:sched_switch,+irq; ftrace filters
 *   @ %               crashkernel=512M@16M, memmap=…@…; '%' is inert in every reader
 * Refused: whitespace and control characters (another argument, another line), non-ASCII, and
 * every shell metacharacter: $ ` \ " ' ; & | < > ( ) { } * ? [ ] ~ ! # ^. (memmap=nn$ss and
 * nn#ss need '$' and '#', which GRUB's own documentation says to escape by hand: not for a
 * profile.) */

bool bootarg_name_valid(const char *name) {
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > BOOTARG_NAME_MAX || name[0] == '-' || name[0] == '.')
                return false;
        for (const char *c = name; *c; c++)
                if (!isascii((unsigned char) *c) || (!isalnum((unsigned char) *c) && !strchr("_.-", *c)))
                        return false;
        return true;
}

const char *bootarg_value_invalid(const char *value) {
        for (const char *c = value; c && *c; c++)
                if (!isascii((unsigned char) *c) || (!isalnum((unsigned char) *c) && !strchr(BOOTARG_VALUE_PUNCT, *c)))
                        return c;
        return NULL;
}

bool bootarg_has_control(const char *value) {
        for (const char *c = value; c && *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return true;
        return false;
}

int plan_check_param_value(PlanCtx *ctx, const char *pointer, const char *kind, const char *readers,
                           const char *value) {
        if (!value)
                return 0;
        size_t n = strlen(value);
        if (n > BOOTARG_VALUE_MAX)
                return plan_fail(ctx, pointer,
                                 "the value is %zu characters long, longer than a kernel command line "
                                 "can hold; keep it under %d characters",
                                 n, BOOTARG_VALUE_MAX);
        const char *bad = bootarg_value_invalid(value);
        if (!bad)
                return 0;
        char what[16];
        if (isprint((unsigned char) *bad))
                snprintf(what, sizeof(what), "'%c'", *bad);
        else
                snprintf(what, sizeof(what), "byte 0x%02x", (unsigned char) *bad);
        bool printable = true;
        for (const char *c = value; *c; c++)
                printable = printable && isascii((unsigned char) *c) && isprint((unsigned char) *c);
        /* The value itself only when it prints as it is (no newline cutting the message). */
        return plan_fail(ctx, pointer,
                         "%s%s%s has %s, which %s cannot carry safely; %s parameter values use "
                         "letters, digits and %s",
                         printable ? "value \"" : "the value", printable ? value : "", printable ? "\"" : "", what,
                         readers, kind, BOOTARG_VALUE_PUNCT);
}

int backend_check_named_groups(const char *file, json_t *list, const char *list_ptr, const char * const *reserved,
                               Error *e) {
        size_t i;
        json_t *v;
        json_array_foreach (list, i, v) {
                const char *name = json_string_value(json_object_get(v, "name"));
                _cleanup_free_ char *p = json_pointer_append_index(list_ptr, i);
                if (!p)
                        return -ENOMEM;
                if (!name)
                        return error_set(e, -EINVAL, file, p, "missing \"name\"");
                for (const char *c = name; *c; c++)
                        if (!isalnum((unsigned char) *c) && !strchr("._-", *c))
                                return error_set(e, -EINVAL, file, p,
                                                 "name \"%s\" may hold only letters, digits, '.', '_' and '-'", name);
                bool taken = !*name || streq(name, ".") || streq(name, "..");
                for (const char * const *rn = reserved; !taken && rn && *rn; rn++)
                        taken = streq(name, *rn);
                if (taken)
                        return error_set(e, -EINVAL, file, p, "\"%s\" cannot be used as a group name", name);
                if (!json_object_get(v, "cpus"))
                        return error_set(e, -EINVAL, file, p, "missing \"cpus\"");
                for (size_t j = 0; j < i; j++)
                        if (streq_ptr(name, json_string_value(json_object_get(json_array_get(list, j), "name"))))
                                return error_set(e, -EINVAL, file, p, "name \"%s\" is used twice", name);
        }
        return 0;
}

int backend_check_rules(const char *file, json_t *list, const char *list_ptr, const char *missing_cpus,
                        const char *alternative, const char *missing_either, Error *e) {
        size_t i;
        json_t *v;
        json_array_foreach (list, i, v) {
                _cleanup_free_ char *p = json_pointer_append_index(list_ptr, i);
                if (!p)
                        return -ENOMEM;
                if (!json_object_get(v, "match"))
                        return error_set(e, -EINVAL, file, p,
                                         "missing \"match\" (a shell pattern such as \"eth1-TxRx-*\")");
                if (json_object_get(v, "cpus") || (alternative && json_object_get(v, alternative)))
                        continue;
                return error_set(e, -EINVAL, file, p, "%s", alternative ? missing_either : missing_cpus);
        }
        return 0;
}

size_t plan_count_changes(const Plan *p, size_t *ret_reboot) {
        size_t n = 0, reboot = 0;
        for (size_t i = 0; i < p->n_knobs; i++)
                if (p->knobs[i].changed) {
                        n++;
                        if (p->knobs[i].reboot)
                                reboot++;
                }
        if (ret_reboot)
                *ret_reboot = reboot;
        return n;
}

int plan_build(const Resolved *r, Root *root, Plan **ret, Error *ret_error) {
        _cleanup_(plan_freep) Plan *p = calloc(1, sizeof(Plan));
        int k;

        if (!p)
                return -ENOMEM;
        p->profile = strdup(r->name);
        if (!p->profile)
                return -ENOMEM;
        p->isolated = r->isolated;
        p->housekeeping = r->housekeeping;
        /* What resolving the profile noticed comes first. */
        for (char **n = r->notes; n && *n; n++)
                if (strv_extend(&p->notes, *n) < 0)
                        return -ENOMEM;

        PlanCtx ctx = {
                .plan = p,
                .resolved = r,
                .host = r->host,
                .root = root,
                .error = ret_error,
        };
        for (size_t i = 0; i < ELEMENTSOF(backends); i++) {
                size_t first = p->n_knobs;
                k = backends[i]->plan(&ctx);
                if (k < 0)
                        return k;
                for (size_t j = first; j < p->n_knobs; j++)
                        p->knobs[j].domain = backends[i]->domain;
        }
        /* The list grew by doubling; what follows (the journal's parse, the writes) reuses the
         * room it no longer needs. */
        if (p->n_knobs > 0 && p->n_knobs < p->cap_knobs) {
                Knob *l = realloc(p->knobs, p->n_knobs * sizeof(Knob));
                if (l) {
                        p->knobs = l;
                        p->cap_knobs = p->n_knobs;
                }
        }
        *ret = TAKE_PTR(p);
        return 0;
}
