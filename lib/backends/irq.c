/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "strv.h"

/* The "irq" section of a profile: where IRQs go, by default and by name. */
static const SchemaField irq_rule_fields[] = { { "match", &schema_string }, { "cpus", &schema_cpus }, {} };
static const Schema irq_rule_schema = { SCHEMA_OBJECT, .fields = irq_rule_fields };
static const Schema irq_rules_schema = { SCHEMA_ARRAY, .items = &irq_rule_schema };
static const SchemaField irq_fields[] = { { "affinity", &schema_cpus },
                                          { "default_affinity", &schema_cpus },
                                          { "rules", &irq_rules_schema },
                                          { "exclude", &schema_strings_array },
                                          {} };
static const Schema irq_schema = { SCHEMA_OBJECT, .fields = irq_fields };
static const SchemaField irq_section = { "irq", &irq_schema };

/* The "irqbalance" section: the CPUs irqbalance must leave alone. */
static const SchemaField irqbalance_fields[] = { { "banned_cpus", &schema_cpus }, {} };
static const Schema irqbalance_schema = { SCHEMA_OBJECT, .fields = irqbalance_fields };
static const SchemaField irqbalance_section = { "irqbalance", &irqbalance_schema };

/* IRQ affinities: every IRQ with an affinity file goes where the first matching rule says, or to
 * the section's "affinity" (housekeeping by default); default_smp_affinity covers IRQs yet to come. */

static bool actions_match(const char *actions, const char *pattern) {
        /* /proc/interrupts lists shared handlers as "a, b". */
        _cleanup_free_ char *copy = strdup(actions);
        char *save = NULL;
        if (!copy)
                return false;
        if (fnmatch(pattern, actions, 0) == 0)
                return true;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                while (*t == ' ')
                        t++;
                if (fnmatch(pattern, t, 0) == 0)
                        return true;
        }
        return false;
}

static const char *cpus_or(json_t *section, const char *key, const char *fallback) {
        const char *s = json_string_value(json_object_get(section, key));
        return s ? s : fallback;
}

static int irq_plan(PlanCtx *ctx) {
        const Resolved *r = ctx->resolved;
        const Host *h = ctx->host;
        json_t *irq = json_object_get(r->doc, "irq");
        int k;

        if (!irq)
                return 0;

        _cleanup_free_ char *hk = cpu_set_format_list(&r->housekeeping);
        if (!hk)
                return -ENOMEM;
        const char *def = cpus_or(irq, "default_affinity", hk);
        const char *all = cpus_or(irq, "affinity", hk);
        json_t *rules = json_object_get(irq, "rules");
        json_t *exclude = json_object_get(irq, "exclude");

        /* default_smp_affinity is a mask file: desired in mask form, compared as a set. */
        CpuSet def_set;
        if (cpu_set_parse_list(def, &def_set, NULL) < 0)
                return -EINVAL;
        _cleanup_free_ char *def_mask = cpu_set_format_mask(&def_set, h->n_cpu_ids);
        _cleanup_free_ char *cur_mask = NULL;
        if (!def_mask)
                return -ENOMEM;
        if (root_exists(ctx->root, "proc/irq/default_smp_affinity")) {
                cur_mask = cpu_set_format_mask(&h->default_irq_affinity, h->n_cpu_ids);
                if (!cur_mask)
                        return -ENOMEM;
        }
        k = plan_add(ctx, "irq/default_affinity", VALUE_CPU_MASK, "proc/irq/default_smp_affinity", cur_mask, def_mask,
                     false, NULL);
        if (k < 0)
                return k;

        size_t skipped = 0;
        /* IRQs share their affinity sets (Irq.affinity): each formatted once in a row of them. */
        const CpuSet *last = NULL;
        _cleanup_free_ char *cur = NULL;
        for (size_t i = 0; i < h->n_irqs; i++) {
                const Irq *q = &h->irqs[i];
                const char *want = all;
                bool excluded = false;
                size_t j;
                json_t *item;

                if (!q->has_affinity) {
                        skipped++;
                        continue;
                }
                /* A rule naming the IRQ wins; then exclusions; then the section's affinity. */
                bool ruled = false;
                json_array_foreach (rules, j, item)
                        if (actions_match(q->actions, json_string_value(json_object_get(item, "match")))) {
                                want = json_string_value(json_object_get(item, "cpus"));
                                ruled = true;
                                break;
                        }
                json_array_foreach (exclude, j, item)
                        if (!ruled && actions_match(q->actions, json_string_value(item)))
                                excluded = true;
                if (excluded)
                        continue;

                char id[64], path[64];
                snprintf(id, sizeof(id), "irq/%u/affinity", q->number);
                snprintf(path, sizeof(path), "proc/irq/%u/smp_affinity_list", q->number);
                if (q->affinity != last) {
                        free(cur);
                        cur = cpu_set_format_list(q->affinity);
                        if (!cur)
                                return -ENOMEM;
                        last = q->affinity;
                }
                Knob *kn;
                k = plan_add(ctx, id, VALUE_CPU_LIST, path, cur, want, false, &kn);
                if (k < 0)
                        return k;
                if (*q->actions && !(kn->note = strdup(q->actions)))
                        return -ENOMEM;
        }
        if (skipped > 0) {
                k = plan_note(ctx, "irq: %zu IRQs have no affinity file (per-CPU or chained); they are left alone",
                              skipped);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int irq_read(Root *root, const Knob *k, char **ret) {
        return knob_read_file(root, k, ret);
}

#define IRQ_REFUSAL "the kernel manages this IRQ's affinity (managed or per-CPU interrupt)"

static int irq_write(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        int r = knob_write_file(root, k, value);
        switch (r) {
        case -EIO:   /* managed IRQ: the kernel owns its affinity (EIO up to 6.11) */
        case -EPERM: /* the same refusal since 6.12 */
                if (streq(k->id, "irq/default_affinity"))
                        break;
                knob_result_reason(ret, IRQ_REFUSAL);
                r = KNOB_REFUSED;
                break;
        }
        return knob_result_finish(ret, r);
}

/* /proc/irq/N/smp_affinity is another inode over the value of smp_affinity_list: both are
 * watched. */
static int irq_watch(const Knob *k, char ***ret_paths) {
        _cleanup_strv_free_ char **l = NULL;
        size_t len = k->path ? strlen(k->path) : 0;
        if (!k->path) {
                *ret_paths = NULL;
                return 0;
        }
        if (strv_extend(&l, k->path) < 0)
                return -ENOMEM;
        if (len > 5 && streq(k->path + len - 5, "_list")) {
                char *sib = strndup(k->path, len - 5);
                if (!sib || strv_push(&l, sib) < 0) {
                        free(sib);
                        return -ENOMEM;
                }
        }
        int n = (int) strv_length(l);
        *ret_paths = TAKE_PTR(l);
        return n;
}

/* Rules: each matches IRQs by name and says where they go. */
static int irq_check(const char *file, json_t *section, const char *pointer, Error *e) {
        _cleanup_free_ char *p = json_pointer_append(pointer, "rules");
        return p ? backend_check_rules(file, json_object_get(section, "rules"), p,
                                       "missing \"cpus\": the CPUs the matching IRQs go to", NULL, NULL, e)
                 : -ENOMEM;
}

/* ---- the daemon's part: a new device's IRQs ----
 *
 * /proc/irq/N appears at request_irq() (and, for IRQs that existed at boot, stays after
 * free_irq()). No event names it: procfs raises no inotify event for a directory the kernel makes,
 * and a driver requests its IRQs after the uevent of its device (at probe) or when its interface is
 * brought up (ndo_open(), before the RTM_NEWLINK that says IFF_UP). So the daemon looks at
 * proc/irq a few times after each device event, soon and then less often; the plan places what
 * /proc/interrupts lists (BackendNewcomers). */

static bool irq_is_object(const char *entry) {
        char *end;
        errno = 0;
        unsigned long x = strtoul(entry, &end, 10);
        return end != entry && !*end && errno == 0 && x <= UINT_MAX && entry[0] >= '0' && entry[0] <= '9';
}

static int irq_discovered(const Host *host, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(host->n_irqs + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < host->n_irqs; i++)
                if (asprintf(&l[i], "%u", host->irqs[i].number) < 0) {
                        l[i] = NULL;
                        return -ENOMEM;
                }
        *ret = TAKE_PTR(l);
        return 0;
}

static const uint64_t irq_steps_usec[] = {
        20 * 1000ULL, 100 * 1000ULL, 500 * 1000ULL, 2000 * 1000ULL, 5000 * 1000ULL, 0
};

static const BackendNewcomers irq_newcomers = {
        .dir = "proc/irq",
        .is_object = irq_is_object,
        .discovered = irq_discovered,
        .steps_usec = irq_steps_usec,
        .noun = "IRQ",
        .discovery = "/proc/interrupts",
};

const Backend backend_irq = {
        .domain = DOMAIN_IRQ,
        .name = "irq",
        .schema = &irq_section,
        .check = irq_check,
        .plan = irq_plan,
        .read = irq_read,
        .write = irq_write,
        .refusal_reason = IRQ_REFUSAL,
        .flags = BACKEND_OBJECTS_VANISH | BACKEND_HOTPLUG_MOVES | BACKEND_KERNEL_SETS,
        .watch = irq_watch,
        .newcomers = &irq_newcomers,
};

/* irqbalance: the banned CPU list in its environment file, so that it never moves an IRQ onto an
 * isolated CPU. Debian: /etc/default/irqbalance; Fedora/RHEL: /etc/sysconfig/irqbalance. */

static const char *irqbalance_file(Root *root) {
        if (root_exists(root, "etc/default/irqbalance"))
                return "etc/default/irqbalance";
        if (root_exists(root, "etc/sysconfig/irqbalance"))
                return "etc/sysconfig/irqbalance";
        return NULL;
}

static int irqbalance_current(Root *root, const char *file, char **ret) {
        _cleanup_free_ char *text = NULL;
        int k = root_read_file(root, file, &text, NULL);
        if (k < 0)
                return k;
        _cleanup_free_ char *list = env_text_get(text, "IRQBALANCE_BANNED_CPULIST");
        if (list) {
                *ret = TAKE_PTR(list);
                return 0;
        }
        /* The deprecated mask form. */
        _cleanup_free_ char *mask = env_text_get(text, "IRQBALANCE_BANNED_CPUS");
        CpuSet s;
        if (mask && cpu_set_parse_mask(mask, &s, NULL) >= 0) {
                *ret = cpu_set_format_list(&s);
                return *ret ? 0 : -ENOMEM;
        }
        *ret = NULL;
        return 0;
}

static int irqbalance_plan(PlanCtx *ctx) {
        json_t *sec = json_object_get(ctx->resolved->doc, "irqbalance");
        int k;

        if (!sec)
                return 0;
        const char *file = irqbalance_file(ctx->root);
        if (!file) {
                if (!root_exists(ctx->root, "usr/sbin/irqbalance"))
                        return plan_note(
                                ctx,
                                "irqbalance: not installed (no /etc/default/irqbalance or /etc/sysconfig/irqbalance); skipped");
                file = "etc/default/irqbalance";
        }
        _cleanup_free_ char *iso = cpu_set_format_list(&ctx->resolved->isolated);
        if (!iso)
                return -ENOMEM;
        const char *want = cpus_or(sec, "banned_cpus", iso);
        _cleanup_free_ char *cur = NULL;
        k = irqbalance_current(ctx->root, file, &cur);
        if (k < 0 && k != -ENOENT)
                return k;
        return plan_add(ctx, "irqbalance/banned_cpus", VALUE_CPU_LIST, file, cur, want, false, NULL);
}

static int irqbalance_read(Root *root, const Knob *k, char **ret) {
        return irqbalance_current(root, k->path, ret);
}

/* Rewrites the environment file with IRQBALANCE_BANNED_CPULIST set (NULL: removed), keeping every
 * other line as it was. */
static int irqbalance_write_file(Root *root, const Knob *k, const char *value) {
        _cleanup_free_ char *text = NULL;
        int r = root_read_file(root, k->path, &text, NULL);
        if (r < 0 && r != -ENOENT)
                return r;
        StrBuf b = {};
        bool done = false;
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                const char *p = line;
                while (*p == ' ' || *p == '\t')
                        p++;
                if (startswith(p, "IRQBALANCE_BANNED_CPULIST=")) {
                        if (value && !done)
                                strbuf_appendf(&b, "IRQBALANCE_BANNED_CPULIST=\"%s\"\n", value);
                        done = true;
                        continue;
                }
                strbuf_appendf(&b, "%s\n", line);
        }
        if (value && !done)
                strbuf_appendf(&b, "IRQBALANCE_BANNED_CPULIST=\"%s\"\n", value);
        _cleanup_free_ char *out = strbuf_steal(&b);
        if (!out)
                return -ENOMEM;
        if (!value && !text)
                return 0;
        return root_write_file_atomic(root, k->path, out, strlen(out), 0644);
}

static int irqbalance_write(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        return knob_result_finish(ret, irqbalance_write_file(root, k, value));
}

static int irqbalance_flush(Root *root, const Host *host, char **ret_note) {
        /* irqbalance reads its environment only at start: systemd restarts it if it runs. */
        if (!root_can(root, ROOT_CAN_RESTART_UNITS) || !root_is_dir(root, "run/systemd/system"))
                return asprintf(ret_note, "restart irqbalance for its banned CPU list to take effect") < 0 ? -ENOMEM
                                                                                                           : 0;
        int r = root_try_restart_unit(root, "irqbalance.service");
        if (r < 0)
                return asprintf(ret_note,
                                "could not restart irqbalance.service (%s); restart it for its banned CPU list to "
                                "take effect",
                                strerror(-r)) < 0
                        ? -ENOMEM
                        : 0;
        return 0;
}

static const char * const irqbalance_replaces[] = { "etc/default/irqbalance", "etc/sysconfig/irqbalance", NULL };

const Backend backend_irqbalance = {
        .domain = DOMAIN_IRQBALANCE,
        .name = "irqbalance",
        .schema = &irqbalance_section,
        .plan = irqbalance_plan,
        .read = irqbalance_read,
        .write = irqbalance_write,
        .replaces = irqbalance_replaces,
        .flush = irqbalance_flush,
        .watch = knob_watch_file,
};
