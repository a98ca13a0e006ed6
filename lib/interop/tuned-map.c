/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strv.h"
#include "tuned-internal.h"

/* tuned's options onto rtpart's profile keys: a note for every option that maps with a
 * difference, an "unsupported" note for every one that has no place in an rtpart profile. */

/* ---- values ---- */

json_t *tuned_obj(json_t *parent, const char *key) {
        json_t *o = json_object_get(parent, key);
        if (!o) {
                o = json_object();
                if (!o || json_object_set_new(parent, key, o) < 0)
                        return NULL;
        }
        return o;
}

json_t *tuned_literal(const char *s) {
        StrBuf b = {};
        strbuf_append(&b, "");
        for (const char *p = s; *p; p++) {
                if (*p == '$' && (p[1] == '{' || p[1] == '$'))
                        strbuf_append(&b, "$");
                char c[2] = { *p, 0 };
                strbuf_append(&b, c);
        }
        _cleanup_free_ char *t = strbuf_steal(&b);
        return t ? json_string(t) : NULL;
}

json_t *tuned_scalar(const char *v) {
        long n;
        const char *p = v;
        if (*p == '-')
                p++;
        bool digits = *p && strlen(p) < 18 && (p[0] != '0' || p[1] == 0);
        for (const char *q = p; digits && *q; q++)
                digits = isdigit((unsigned char) *q);
        if (digits && tuned_py_int(v, strlen(v), &n))
                return json_integer(n);
        return tuned_literal(v);
}

char *tuned_cpu_symbol(Mapper *m, const CpuSet *s, CpuForm form) {
        const char *cls = NULL;
        if (m->have_isolated && cpu_set_equal(s, &m->isolated))
                cls = "isolated";
        else if (m->have_isolated && cpu_set_equal(s, &m->housekeeping))
                cls = "housekeeping";
        else if (cpu_set_equal(s, &m->online))
                cls = form == FORM_CLASS ? "all" : "online";
        if (cls) {
                char *r = NULL;
                if (form == FORM_CLASS)
                        return strdup(cls);
                if (asprintf(&r, "${%s%s}", cls, form == FORM_MASK ? "_mask" : "") < 0)
                        return NULL;
                return r;
        }
        if (form == FORM_MASK)
                return tuned_format_hex(s);
        return cpu_set_format_list(s);
}

int tuned_set_cpus(Mapper *m, json_t *o, const char *key, const char *value, CpuForm form) {
        CpuSet s;
        if (!tuned_cpulist_parse(value, &s) || cpu_set_is_empty(&s))
                return EV_NOTE(m->ev, true, "'%s' is not a CPU list rtpart can use", value);
        _cleanup_free_ char *sym = tuned_cpu_symbol(m, &s, form);
        if (!sym)
                return -ENOMEM;
        return JSET(o, key, json_string(sym));
}

void tuned_map_at(Mapper *m, const char *section, const TunedOption *o) {
        m->ev->section = section;
        m->ev->file = o->file;
        m->ev->line = o->line;
        m->ev->option = o->key;
}

/* ---- [bootloader] ---- */

static bool boot_value_ok(const char *v) {
        for (const char *p = v; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("_.,:=/+@%-", *p))
                        return false;
        return true;
}

static bool is_cpu_param(const char *name) {
        static const char * const names[] = { "nohz_full",    "rcu_nocbs", "irqaffinity",
                                              "kthread_cpus", "isolcpus",  "rcu_nocb_poll_cpus" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(names[i], name))
                        return true;
        return false;
}

static int map_boot_arg(Mapper *m, json_t *args, const char *tok) {
        const char *eq = strchr(tok, '=');
        _cleanup_free_ char *name = eq ? strndup(tok, (size_t) (eq - tok)) : strdup(tok);
        if (!name)
                return -ENOMEM;
        if (!*name || !boot_value_ok(name) || (eq && (!eq[1] || !boot_value_ok(eq + 1))))
                return UNSUPPORTED(m,
                                   "kernel argument '%s': rtpart's boot arguments are name=value with letters, "
                                   "digits and _.,:=/+@%%- only",
                                   tok);
        if (!eq)
                return JSET(args, name, json_true());

        const char *v = eq + 1;
        if (is_cpu_param(name)) {
                /* isolcpus=[flags,]LIST: the flags are words. */
                const char *list = v;
                for (const char *p = v;;) {
                        const char *c = strchr(p, ',');
                        if (!c || !isalpha((unsigned char) *p))
                                break;
                        list = c + 1;
                        p = c + 1;
                }
                CpuSet s;
                if (tuned_cpulist_parse(list, &s) && !cpu_set_is_empty(&s)) {
                        _cleanup_free_ char *sym = tuned_cpu_symbol(m, &s, FORM_LIST), *full = NULL;
                        if (!sym || asprintf(&full, "%.*s%s", (int) (list - v), v, sym) < 0)
                                return -ENOMEM;
                        return JSET(args, name, json_string(full));
                }
        } else if (streq(name, "tuned.non_isolcpus")) {
                CpuSet s = {};
                tuned_hex_add(&s, v, strlen(v));
                _cleanup_free_ char *sym = tuned_cpu_symbol(m, &s, FORM_MASK);
                if (!sym)
                        return -ENOMEM;
                (void) NOTE(m, "tuned.non_isolcpus= is read by tuned's initramfs hook only; kept as an argument");
                return JSET(args, name, json_string(sym));
        }
        return JSET(args, name, json_string(v));
}

/* What later tuned releases put on network-latency's command line (as rtpart's shipped profiles
 * do) and an older tuned's profile lacks: imported as it is, with a note that says so. */
static int note_newer_tuned(Mapper *m, const char *key, const char *v) {
        static const char * const newer[] = { "rcupdate.rcu_normal_after_boot=1",
                                              "rcutree.nohz_full_patience_delay=1000" };
        if (!streq(key, "cmdline_network_latency"))
                return 0;
        StrBuf b = {};
        strbuf_append(&b, "");
        for (size_t i = 0; i < ELEMENTSOF(newer); i++)
                if (!strstr(v, newer[i]))
                        strbuf_appendf(&b, "%s%s", b.len ? " " : "", newer[i]);
        _cleanup_free_ char *missing = strbuf_steal(&b);
        if (!missing)
                return -ENOMEM;
        if (!*missing)
                return 0;
        return NOTE(m,
                    "later tuned releases also put %s here, and so do rtpart's shipped profiles; this tuned's "
                    "network-latency does not: add them to boot.args for the same command line",
                    missing);
}

/* The kernel command line of every cmdline* option in order: "+" appends, "-" takes away the
 * arguments written after it, anything else appends. */
static int map_bootloader(Mapper *m, TunedSection *u) {
        _cleanup_strv_free_ char **line = NULL;
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                m->ev->file = o->file;
                m->ev->line = o->line;
                m->ev->option = o->key;
                if (!startswith(o->key, "cmdline")) {
                        if (streq(o->key, "priority") || tuned_unit_key(o->key))
                                continue;
                        int r = UNSUPPORTED(m,
                                            "%s: rtpart edits the kernel command line only; initrd images and "
                                            "bootloader files are not its business",
                                            o->key);
                        if (r < 0)
                                return r;
                        continue;
                }
                _cleanup_free_ char *v = NULL;
                int r = tuned_expand(m->ev, strempty(o->value), &v);
                if (r < 0)
                        return r;
                if ((r = note_newer_tuned(m, o->key, v)) < 0)
                        return r;
                if (!*v)
                        continue;
                bool remove = v[0] == '-';
                const char *rest = v;
                if (v[0] == '+' || v[0] == '-' || (v[0] == '\\' && strchr("\\+-", v[1] ?: 'x')))
                        rest = v + 1;
                _cleanup_free_ char *copy = strdup(rest);
                if (!copy)
                        return -ENOMEM;
                for (char *sp = NULL, *tok = strtok_r(copy, " \t\n", &sp); tok; tok = strtok_r(NULL, " \t\n", &sp)) {
                        if (!remove) {
                                if (strv_extend(&line, tok) < 0)
                                        return -ENOMEM;
                                continue;
                        }
                        for (size_t k = strv_length(line); k > 0; k--)
                                if (streq(line[k - 1], tok)) {
                                        free(line[k - 1]);
                                        memmove(&line[k - 1], &line[k], (strv_length(line) - k + 1) * sizeof(char *));
                                }
                }
        }
        if (strv_length(line) == 0)
                return 0;
        json_t *args = tuned_obj(tuned_obj(m->profile, "boot"), "args");
        if (!args)
                return -ENOMEM;
        for (char **t = line; *t; t++) {
                int r = map_boot_arg(m, args, *t);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const char *first_alternative(Mapper *m, const char *v, char *buf, size_t size) {
        const char *bar = strchr(v, '|');
        if (!bar)
                return v;
        snprintf(buf, size, "%.*s", (int) (bar - v), v);
        (void) NOTE(m, "'%s': tuned takes the first the host offers; the profile takes '%s'", v, buf);
        return buf;
}

static int map_cpu(Mapper *m, TunedSection *u) {
        json_t *cpu = tuned_obj(m->profile, "cpu");
        if (!cpu)
                return -ENOMEM;
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                _cleanup_free_ char *v = NULL;
                char buf[256];
                int r;
                m->ev->file = o->file;
                m->ev->line = o->line;
                m->ev->option = o->key;
                if (streq(o->key, "type") || streq(o->key, "enabled") || streq(o->key, "priority"))
                        continue;
                if ((r = tuned_expand(m->ev, strempty(o->value), &v)) < 0)
                        return r;
                if (streq(o->key, "devices")) {
                        if (streq(v, "*"))
                                continue;
                        CpuSet s = {};
                        bool ok = true;
                        _cleanup_free_ char *copy = strdup(v);
                        if (!copy)
                                return -ENOMEM;
                        for (char *sp = NULL, *t = strtok_r(copy, ", ", &sp); t && ok; t = strtok_r(NULL, ", ", &sp)) {
                                long c;
                                ok = startswith(t, "cpu") && tuned_py_int(t + 3, strlen(t + 3), &c) && c >= 0;
                                if (ok)
                                        tuned_add_range(&s, c, c);
                        }
                        if (!ok || cpu_set_is_empty(&s))
                                r = UNSUPPORTED(m, "devices '%s' is not a list of cpuN", v);
                        else {
                                _cleanup_free_ char *sym = tuned_cpu_symbol(m, &s, FORM_CLASS);
                                r = sym ? JSET(cpu, "cpus", json_string(sym)) : -ENOMEM;
                        }
                } else if (streq(o->key, "governor"))
                        r = JSET(cpu, "governor", tuned_literal(first_alternative(m, v, buf, sizeof buf)));
                else if (streq(o->key, "energy_perf_bias")) {
                        const char *e = first_alternative(m, v, buf, sizeof buf);
                        if (streq(e, "powersave"))
                                e = "power";
                        r = JSET(cpu, "energy_perf_bias", tuned_literal(e));
                } else if (streq(o->key, "force_latency")) {
                        long us;
                        const char *bar = strchr(v, '|');
                        if (tuned_py_int(v, strlen(v), &us) && us >= 0)
                                r = JSET(cpu, "pm_qos_latency_us", json_integer(us));
                        else if (startswith(v, "cstate.") && bar && tuned_py_int(bar + 1, strlen(bar + 1), &us) &&
                                 us >= 0) {
                                r = JSET(cpu, "pm_qos_latency_us", json_integer(us));
                                if (r >= 0)
                                        r = NOTE(m,
                                                 "'%s': tuned reads the C-state's exit latency on the host it runs on; "
                                                 "the profile takes the fallback, %ld µs, so that it is the same on "
                                                 "every host",
                                                 v, us);
                        } else if (streq(v, "n/a") || streq(v, "none") || !*v)
                                continue;
                        else
                                r = UNSUPPORTED(m, "force_latency '%s' is not a number of µs or cstate.*:…|N", v);
                } else if (streq(o->key, "no_turbo")) {
                        bool on = streq(v, "1") || strcasecmp(v, "true") == 0 || strcasecmp(v, "y") == 0;
                        r = JSET(cpu, "no_turbo", json_boolean(on));
                } else if (streq(o->key, "min_perf_pct") || streq(o->key, "max_perf_pct"))
                        r = UNSUPPORTED(m,
                                        "%s is intel_pstate's; rtpart's cpu section has the governor, the "
                                        "energy-performance bias and turbo",
                                        o->key);
                else
                        r = UNSUPPORTED(m,
                                        "%s is not one of the cpu settings rtpart has (governor, energy_perf_bias, "
                                        "force_latency, no_turbo)",
                                        o->key);
                if (r < 0)
                        return r;
        }
        if (json_object_size(cpu) == 0)
                (void) json_object_del(m->profile, "cpu");
        return 0;
}

/* sysfs paths of settings tuned has its own plugin for. */
static int set_sysfs(Mapper *m, const char *path, const char *v) {
        json_t *sysfs = tuned_obj(m->profile, "sysfs");
        if (!sysfs)
                return -ENOMEM;
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (streq(base, "cpumask") || streq(base, "cpumask_requested") || streq(base, "smp_affinity") ||
            streq(base, "default_smp_affinity")) {
                CpuSet s = {};
                tuned_hex_add(&s, v, strlen(v));
                _cleanup_free_ char *sym = tuned_cpu_symbol(m, &s, FORM_MASK);
                if (!sym)
                        return -ENOMEM;
                return JSET(sysfs, path, json_string(sym));
        }
        return JSET(sysfs, path, tuned_scalar(v));
}

/* tuned's "<N" and ">N" (at most N, at least N): tuned writes N only where the host's value is
 * above (below) N when tuned starts, and leaves it else; rtpart's profile sets one value, always.
 * 1 after an "unsupported" note (the option is left out, never written as that text), 0 for any
 * other value. */
static int map_comparison(Mapper *m, const char *type, const char *key, const char *v) {
        if ((v[0] != '<' && v[0] != '>') || !v[1])
                return 0;
        const char *what = v[0] == '>' ? "at least" : "at most";
        int r;
        if (streq(type, "sysfs"))
                /* tuned's sysfs plugin has no such operator: it writes the text as it is. */
                r = UNSUPPORTED(m,
                                "'%s' is no value a sysfs file takes (tuned writes it as it is, and the kernel "
                                "refuses it); left out: set %s to a number if wanted",
                                v, key);
        else
                r = UNSUPPORTED(m,
                                "'%s' is tuned's \"%s %s\": tuned writes %s only where the host's value is %s "
                                "when tuned starts; an rtpart profile sets one value on every host: left out, "
                                "add {\"%s\": %s} to %s if this host needs it (rtpartctl plan shows the "
                                "current value)",
                                v, what, v + 1, v + 1, v[0] == '>' ? "lower" : "higher", key, v + 1, type);
        return r < 0 ? r : 1;
}

/* modules: "kvm = +r halt_poll_ns=0", parameters of the module key. */
static int map_module(Mapper *m, const char *module, const char *v) {
        _cleanup_free_ char *copy = strdup(v);
        json_t *mod = NULL;
        int r = 0;
        if (!copy)
                return -ENOMEM;
        for (char *sp = NULL, *t = strtok_r(copy, " \t", &sp); t && r >= 0; t = strtok_r(NULL, " \t", &sp)) {
                char *eq = strchr(t, '=');
                if (streq(t, "+r")) {
                        r = NOTE(m,
                                 "+r: rtpart sets parameters at runtime where the module allows, else in "
                                 "/etc/modprobe.d for its next load");
                        continue;
                }
                if (!eq || eq == t) {
                        r = UNSUPPORTED(m, "'%s' is not parameter=value", t);
                        continue;
                }
                *eq = 0;
                if (!boot_value_ok(eq + 1)) {
                        r = UNSUPPORTED(m,
                                        "parameter %s: value '%s' has characters rtpart refuses in module "
                                        "parameters",
                                        t, eq + 1);
                        continue;
                }
                if (!mod && !(mod = tuned_obj(tuned_obj(m->profile, "modules"), module)))
                        return -ENOMEM;
                r = JSET(mod, t, tuned_scalar(eq + 1));
        }
        if (r >= 0 && !mod)
                r = UNSUPPORTED(m,
                                "loading module %s: rtpart sets the parameters of loaded modules only (load it "
                                "with /etc/modules-load.d)",
                                module);
        return r;
}

/* sysctl, sysfs, vm and selinux: files under /proc/sys and /sys. */
static int map_file_option(Mapper *m, const char *type, const char *key, const char *v) {
        int r = map_comparison(m, type, key, v);
        if (r != 0)
                return r < 0 ? r : 0;
        if (streq(type, "sysctl"))
                return streq(key, "reapply_sys_config") ? NOTE(m, "rtpart leaves /etc/sysctl.d alone")
                                                        : JSET(tuned_obj(m->profile, "sysctl"), key, tuned_scalar(v));
        if (streq(type, "sysfs"))
                return startswith(key, "/sys/") ? set_sysfs(m, key, v) : UNSUPPORTED(m, "'%s' is not under /sys", key);
        if (streq(type, "vm")) {
                if (streq(key, "transparent_hugepages") || streq(key, "transparent_hugepage"))
                        return set_sysfs(m, "/sys/kernel/mm/transparent_hugepage/enabled", v);
                if (streq(key, "transparent_hugepage.defrag"))
                        return set_sysfs(m, "/sys/kernel/mm/transparent_hugepage/defrag", v);
                return UNSUPPORTED(m, "%s is not a vm setting rtpart knows", key);
        }
        if (streq(key, "avc_cache_threshold"))
                return set_sysfs(m, "/sys/fs/selinux/avc/cache_threshold", v);
        return UNSUPPORTED(m, "%s is not a selinux setting rtpart knows", key);
}

static int map_option(Mapper *m, const char *type, const char *key, const char *v) {
        if (streq(key, "devices"))
                return UNSUPPORTED(m, "devices: rtpart's %s settings are host-wide", type);
        if (streq(type, "sysctl") || streq(type, "sysfs") || streq(type, "vm") || streq(type, "selinux"))
                return map_file_option(m, type, key, v);
        if (streq(type, "irqbalance"))
                return streq(key, "banned_cpus")
                        ? tuned_set_cpus(m, tuned_obj(m->profile, "irqbalance"), "banned_cpus", v, FORM_CLASS)
                        : UNSUPPORTED(m, "%s is not an irqbalance setting rtpart has", key);
        if (streq(type, "modules"))
                return map_module(m, key, v);
        if (streq(type, "systemd") && streq(key, "cpu_affinity"))
                return UNSUPPORTED(m,
                                   "CPUAffinity= for every service: rtpart confines cgroups instead (cpuset.confine "
                                   "and cpuset.confine_cpus \"housekeeping\"), which also forbids moving a service "
                                   "onto isolated CPUs; add it by hand where that is wanted");
        if (streq(type, "systemd"))
                return UNSUPPORTED(m, "%s is not a systemd setting rtpart has", key);
        return UNSUPPORTED(m, "unsupported");
}

static int map_options(Mapper *m, TunedSection *u, const char *type) {
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                _cleanup_free_ char *v = NULL;
                tuned_map_at(m, u->name, o);
                if (streq(o->key, "type") || streq(o->key, "enabled") || streq(o->key, "priority") ||
                    (streq(o->key, "devices") && o->value && streq(o->value, "*")))
                        continue;
                int r = tuned_expand(m->ev, strempty(o->value), &v);
                if (r >= 0)
                        r = map_option(m, type, o->key, v);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const char *plugin_reason(const char *type) {
        static const struct {
                const char *type, *why;
        } reasons[] = {
                { "net", "NIC settings (ethtool) have no section in rtpart's profile" },
                { "disk", "disk settings (elevator, readahead, APM) have no section in rtpart's profile" },
                { "scsi_host", "SCSI host link power management has no section in rtpart's profile" },
                { "audio", "audio power saving has no section in rtpart's profile" },
                { "video", "graphics power saving has no section in rtpart's profile" },
                { "usb", "USB autosuspend has no section in rtpart's profile" },
                { "eeepc_she", "Eee PC super hybrid engine has no section in rtpart's profile" },
                { "mounts", "mount options have no section in rtpart's profile" },
                { "acpi", "ACPI platform profiles have no section in rtpart's profile" },
                { "rtentsk", "tuned's timestamping socket is a daemon's behaviour, not a setting" },
                { "irq", "per-IRQ rules by name are written in irq.rules by hand" },
        };
        for (size_t i = 0; i < ELEMENTSOF(reasons); i++)
                if (streq(reasons[i].type, type))
                        return reasons[i].why;
        return "rtpart has no section for this tuned plugin";
}

static int map_unit(Mapper *m, TunedSection *u) {
        TunedOption *t = tuned_section_option(u, "type");
        const char *type = t && t->value ? t->value : u->name;
        m->ev->section = u->name;
        m->ev->file = u->file;
        m->ev->line = u->line;
        m->ev->option = NULL;

        TunedOption *en = tuned_section_option(u, "enabled");
        if (en && en->value && !tuned_true(en->value))
                return NOTE(m, "disabled (enabled=%s): nothing to map", en->value);
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                if (streq(o->key, "cpuinfo_regex") || streq(o->key, "uname_regex") ||
                    streq(o->key, "devices_udev_regex") || streq(o->key, "script_pre") ||
                    streq(o->key, "script_post")) {
                        m->ev->file = o->file;
                        m->ev->line = o->line;
                        m->ev->option = o->key;
                        return UNSUPPORTED(m,
                                           "[%s] applies only where %s matches; rtpart profiles have no such "
                                           "condition (only vendor overlays): the whole section is left out",
                                           u->name, o->key);
                }
        }
        TunedOption *prio = tuned_section_option(u, "priority");
        if (prio) {
                m->ev->file = prio->file;
                m->ev->line = prio->line;
                m->ev->option = "priority";
                int r = NOTE(m, "the order of tuned's plugins; rtpart applies its domains in its own order");
                if (r < 0)
                        return r;
        }
        if (streq(type, "bootloader"))
                return map_bootloader(m, u);
        if (streq(type, "scheduler"))
                return tuned_map_scheduler(m, u);
        if (streq(type, "cpu"))
                return map_cpu(m, u);
        if (streq(type, "script"))
                return tuned_map_script(m, u);
        if (streq(type, "sysctl") || streq(type, "sysfs") || streq(type, "vm") || streq(type, "selinux") ||
            streq(type, "irqbalance") || streq(type, "modules") || streq(type, "systemd"))
                return map_options(m, u, type);

        const char *why = plugin_reason(type);
        if (u->n_options == 0)
                return UNSUPPORTED(m, "%s", why);
        for (size_t i = 0; i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                if (streq(o->key, "type") || streq(o->key, "enabled") || streq(o->key, "priority"))
                        continue;
                m->ev->file = o->file;
                m->ev->line = o->line;
                m->ev->option = o->key;
                int r = UNSUPPORTED(m, "%s", why);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int map_main(Mapper *m, TunedSection *u, const char *name) {
        json_t *p = m->profile;
        TunedOption *s = u ? tuned_section_option(u, "summary") : NULL;
        TunedOption *d = u ? tuned_section_option(u, "description") : NULL;
        _cleanup_free_ char *desc = NULL;
        if (s && s->value)
                if (JSET(p, "summary", tuned_literal(s->value)) < 0)
                        return -ENOMEM;
        if (asprintf(&desc, "Imported from tuned's profile %s by rtpartctl import-tuned.%s%s", name,
                     d && d->value ? " " : "", d && d->value ? d->value : "") < 0)
                return -ENOMEM;
        if (JSET(p, "description", tuned_literal(desc)) < 0)
                return -ENOMEM;
        for (size_t i = 0; u && i < u->n_options; i++) {
                TunedOption *o = &u->options[i];
                if (streq(o->key, "summary") || streq(o->key, "description"))
                        continue;
                m->ev->section = "main";
                m->ev->file = o->file;
                m->ev->line = o->line;
                m->ev->option = o->key;
                int r = UNSUPPORTED(m, "[main] %s has no equivalent in rtpart's profile", o->key);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The isolated CPUs: [scheduler] isolated_cores, as the host evaluates it. */
static int map_cpus(Mapper *m, TunedIni *merged) {
        for (size_t i = 0; i < merged->n_sections; i++) {
                TunedSection *u = &merged->sections[i];
                TunedOption *t = tuned_section_option(u, "type");
                TunedOption *iso = tuned_section_option(u, "isolated_cores");
                if (!streq(t && t->value ? t->value : u->name, "scheduler") || !iso || !iso->value)
                        continue;
                m->ev->section = u->name;
                m->ev->file = iso->file;
                m->ev->line = iso->line;
                m->ev->option = "isolated_cores";
                _cleanup_free_ char *v = NULL;
                int r = tuned_expand(m->ev, iso->value, &v);
                if (r < 0)
                        return r;
                CpuSet s;
                if (!*v)
                        continue;
                if (!tuned_cpulist_parse(v, &s) || cpu_set_is_empty(&s))
                        return error_set_line(m->ev->error, -EINVAL, iso->file, iso->line,
                                              "isolated_cores '%s' is not a CPU list; set isolated_cores in the "
                                              "profile's variables file",
                                              v);
                CpuSet off = s;
                cpu_set_andnot(&off, &m->online);
                if (!cpu_set_is_empty(&off)) {
                        _cleanup_free_ char *l = cpu_set_format_list(&off);
                        return error_set_line(m->ev->error, -EINVAL, iso->file, iso->line,
                                              "isolated_cores has CPUs this host does not have online: %s",
                                              strempty(l));
                }
                m->have_isolated = true;
                m->isolated = s;
                m->housekeeping = m->online;
                cpu_set_andnot(&m->housekeeping, &s);
                json_t *cpus = tuned_obj(m->profile, "cpus");
                if (!cpus)
                        return -ENOMEM;
                /* Derived from calc_isolated_cores, it is rtpart's default split, on any host. */
                if (m->ev->calc_used && cpu_set_equal(&m->ev->calc_set, &s)) {
                        if (JSET(cpus, "housekeeping_cores_per_node", json_integer(m->ev->calc_n)) < 0)
                                return -ENOMEM;
                        r = NOTE(m,
                                 "calc_isolated_cores:%u is rtpart's default split with "
                                 "cpus.housekeeping_cores_per_node %u: the first %u core(s) of every NUMA node, with "
                                 "their SMT siblings, are housekeeping (tuned takes the first CPUs of every socket "
                                 "and leaves their SMT siblings isolated)",
                                 m->ev->calc_n, m->ev->calc_n, m->ev->calc_n);
                } else {
                        _cleanup_free_ char *l = cpu_set_format_list(&s);
                        if (!l)
                                return -ENOMEM;
                        if (JSET(cpus, "isolated", json_string(l)) < 0)
                                return -ENOMEM;
                }
                json_t *irq = tuned_obj(m->profile, "irq"), *kt = tuned_obj(m->profile, "kthreads");
                if (!irq || !kt)
                        return -ENOMEM;
                if (JSET(irq, "affinity", json_string("housekeeping")) < 0)
                        return -ENOMEM;
                if (JSET(irq, "default_affinity", json_string("housekeeping")) < 0)
                        return -ENOMEM;
                if (JSET(kt, "affinity", json_string("housekeeping")) < 0)
                        return -ENOMEM;
                return r;
        }
        return 0;
}

void tuned_import_done(TunedImport *t) {
        if (!t)
                return;
        json_decref(t->profile);
        for (size_t i = 0; i < t->n_notes; i++) {
                free(t->notes[i].file);
                free(t->notes[i].section);
                free(t->notes[i].option);
                free(t->notes[i].message);
        }
        free(t->notes);
        strv_free(t->files);
        *t = (TunedImport) {};
}

typedef enum ImportFrom {
        IMPORT_NAME,  /* one profile name */
        IMPORT_DIR,   /* the profile in a directory */
        IMPORT_NAMES, /* names separated by blanks, as /etc/tuned/active_profile holds them */
} ImportFrom;

/* The profile's files read; several names are merged in order, as tuned does. */
static int load_profile(Loader *l, const char *name, ImportFrom from) {
        if (from == IMPORT_DIR)
                return tuned_load_dir(l, name);
        bool safe = strspn(name, " ") < strlen(name);
        for (const char *p = name; *p; p++)
                safe = safe && (isalnum((unsigned char) *p) || strchr(from == IMPORT_NAMES ? "_.- " : "_.-", *p));
        if (!safe)
                return error_set_line(l->error, -EINVAL, name, 0,
                                      "a tuned profile name is letters, digits and _.- only; give a directory with "
                                      "a path containing '/'");
        _cleanup_free_ char *names = strdup(name);
        if (!names)
                return -ENOMEM;
        for (char *p = names; *p; p++)
                if (*p == ' ')
                        *p = ',';
        return tuned_load_names(l, names, /* from_file= */ NULL, 0);
}

/* The directory's name, or the names, for the description. */
static char *profile_name(const char *name, bool dir) {
        if (!dir)
                return strdup(name);
        size_t n = strlen(name);
        while (n > 1 && name[n - 1] == '/')
                n--;
        const char *s = name + n;
        while (s > name && s[-1] != '/')
                s--;
        return strndup(s, (size_t) (name + n - s));
}

static int map_profile(Mapper *m, TunedIni *merged, const char *pname) {
        int r = map_main(m, tuned_ini_section(merged, "main"), pname);
        if (r >= 0)
                r = map_cpus(m, merged);
        for (size_t i = 0; r >= 0 && i < merged->n_sections; i++) {
                TunedSection *u = &merged->sections[i];
                if (!streq(u->name, "main") && !streq(u->name, "variables"))
                        r = map_unit(m, u);
        }
        return r;
}

static int import_profile(const TunedEnv *env, const char *name, ImportFrom from, TunedImport *ret, Error *ret_error) {
        bool dir = from == IMPORT_DIR;
        _cleanup_(tuned_import_done) TunedImport out = {};
        Eval ev = { .env = env, .out = &out, .error = ret_error };
        Loader l = { .env = env, .ev = &ev, .error = ret_error };
        Mapper m = { .ev = &ev, .online = env->online };
        _cleanup_free_ char *pname = profile_name(name, dir), *user_dir = NULL;
        int r;

        if (!pname)
                return -ENOMEM;
        r = load_profile(&l, name, from);
        if (r >= 0 && !(out.profile = json_object()))
                r = -ENOMEM;
        if (r >= 0)
                r = tuned_load_variables(&ev, &l, tuned_ini_section(&l.merged, "variables"));
        if (r >= 0 && dir) {
                /* ${i:PROFILE_DIR} of the directory's own files, which are the user's. */
                size_t n = strlen(name);
                while (n > 1 && name[n - 1] == '/')
                        n--;
                if (!(user_dir = strndup(name, n)))
                        r = -ENOMEM;
        }
        if (r >= 0) {
                m.profile = out.profile;
                m.user_dir = user_dir;
                out.files = TAKE_PTR(l.files); /* the scripts read are added */
                r = map_profile(&m, &l.merged, pname);
        }
        if (r >= 0) {
                *ret = out;
                out = (TunedImport) {};
                r = 0;
        }
        tuned_eval_done(&ev);
        tuned_ini_done(&l.merged);
        strv_free(l.files);
        return r;
}

int tuned_import(const TunedEnv *env, const char *name, bool dir, TunedImport *ret, Error *ret_error) {
        return import_profile(env, name, dir ? IMPORT_DIR : IMPORT_NAME, ret, ret_error);
}

int tuned_import_names(const TunedEnv *env, const char *names, TunedImport *ret, Error *ret_error) {
        return import_profile(env, names, IMPORT_NAMES, ret, ret_error);
}
