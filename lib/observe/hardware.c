/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit-advice.h"
#include "cmdline.h"
#include "hardware.h"
#include "pm-qos.h"
#include "strv.h"

#define CPU_SYS "sys/devices/system/cpu"

/* The exit latency up to which a CPU's deepest idle state is no concern: C1 and C1E (1-10 µs on
 * current servers), not C6 (100 µs and more). */
#define IDLE_OK_US 10

/* ---- the host ---- */

void hardware_host_done(HardwareHost *h) {
        if (!h)
                return;
        free(h->hostname);
        free(h->release);
        free(h->version);
        free(h->vendor);
        free(h->model);
        free(h->flags);
        *h = (HardwareHost) {};
}

/* The value of "key\t: value" in the first processor's block of proc/cpuinfo. */
static char *cpuinfo_get(const char *text, const char *key) {
        size_t n = strlen(key);
        for (const char *p = text; *p;) {
                const char *eol = strchrnul(p, '\n');
                if (p == eol)
                        return NULL; /* the end of the first block */
                if (strncmp(p, key, n) == 0 && (p[n] == ' ' || p[n] == '\t' || p[n] == ':')) {
                        const char *v = memchr(p, ':', (size_t) (eol - p));
                        if (!v)
                                return NULL;
                        for (v++; *v == ' ' || *v == '\t'; v++)
                                ;
                        return strndup(v, (size_t) (eol - v));
                }
                p = *eol ? eol + 1 : eol;
        }
        return NULL;
}

static bool has_word(const char *list, const char *word) {
        size_t n = strlen(word);
        for (const char *p = list; p && *p;) {
                p += strspn(p, " \t");
                size_t len = strcspn(p, " \t\n");
                if (len == n && strncmp(p, word, n) == 0)
                        return true;
                p += len;
        }
        return false;
}

int hardware_host(Root *root, HardwareHost *ret) {
        _cleanup_free_ char *cpuinfo = NULL;
        HardwareHost h = {};
        (void) root_read_line(root, "proc/sys/kernel/hostname", &h.hostname);
        (void) root_read_line(root, "proc/sys/kernel/osrelease", &h.release);
        (void) root_read_line(root, "proc/sys/kernel/version", &h.version);
        if (root_read_file(root, "proc/cpuinfo", &cpuinfo, NULL) >= 0) {
                h.vendor = cpuinfo_get(cpuinfo, "vendor_id");
                h.model = cpuinfo_get(cpuinfo, "model name");
                h.flags = cpuinfo_get(cpuinfo, "flags");
        }
        h.virtual = has_word(h.flags, "hypervisor");
        *ret = h;
        return 0;
}

json_t *hardware_host_json(const HardwareHost *h) {
        return json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:b}", "hostname", h->hostname, "kernel", h->release,
                         "version", h->version, "cpu", h->model, "vendor", h->vendor, "virtual", h->virtual);
}

/* ---- the settings ---- */

typedef struct Check {
        Root *root;
        const HardwareHost *host;
        const CpuSet *cpus;
        char *cmdline;
        json_t *list;
} Check;

/* One setting: what was found (printf-style), the verdict, and for a verdict other than "ok" the
 * fix of advice (audit_advice_hardware()). */
static int add(Check *c, const char *id, const char *setting, const char *verdict, const char *advice, const char *fmt,
               ...) _printf_(6, 7);
static int add(Check *c, const char *id, const char *setting, const char *verdict, const char *advice, const char *fmt,
               ...) {
        _cleanup_free_ char *found = NULL, *fix = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&found, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        if (!streq(verdict, "ok") && advice && !(fix = audit_advice_hardware(advice)))
                return -ENOMEM;
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s?}", "id", id, "setting", setting, "found", found, "verdict",
                              verdict, "fix", fix);
        return o && json_array_append_new(c->list, o) >= 0 ? 0 : -ENOMEM;
}

/* The first line of a file, NULL when it is missing or unreadable. */
static char *line_of(Root *root, const char *fmt, ...) _printf_(2, 3);
static char *line_of(Root *root, const char *fmt, ...) {
        _cleanup_free_ char *path = NULL;
        char *v = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&path, fmt, ap);
        va_end(ap);
        if (k < 0 || root_read_line(root, path, &v) < 0)
                return NULL;
        return v;
}

/* The word of a choice file in brackets ("always [madvise] never"), or in parentheses as debugfs
 * shows the preemption model ("none voluntary (full)"). */
static char *chosen(const char *text, char open, char close) {
        const char *a = text ? strchr(text, open) : NULL, *b = a ? strchr(a, close) : NULL;
        return b ? strndup(a + 1, (size_t) (b - a - 1)) : NULL;
}

static int check_smt(Check *c) {
        _cleanup_free_ char *active = line_of(c->root, CPU_SYS "/smt/active");
        _cleanup_free_ char *control = line_of(c->root, CPU_SYS "/smt/control");
        if (!active)
                return add(c, "smt", "SMT", "ok", NULL, "not shown (no /sys/devices/system/cpu/smt)");
        if (streq(active, "1"))
                return add(c, "smt", "SMT", "warn", "smt", "on (smt/active 1)");
        return add(c, "smt", "SMT", "ok", NULL, "off (smt/control %s)", strempty(control));
}

/* A CPU's resume latency limit in µs: "n/a" none allowed, "0" no limit. */
static long resume_limit(const char *v) {
        if (!v || streq(v, "0"))
                return INT32_MAX;
        if (streq(v, "n/a"))
                return 0;
        return strtol(v, NULL, 10);
}

/* The deepest idle state cpu may enter: its exit latency (-1 for none but polling) and name. */
static long deepest_state(Check *c, int cpu, long qos, char **ret_name) {
        _cleanup_free_ char *resume = line_of(c->root, CPU_SYS "/cpu%d/power/pm_qos_resume_latency_us", cpu);
        long limit = MIN(qos, resume_limit(resume)), deepest = -1;
        for (unsigned s = 1;; s++) {
                _cleanup_free_ char *lat = line_of(c->root, CPU_SYS "/cpu%d/cpuidle/state%u/latency", cpu, s);
                _cleanup_free_ char *dis = line_of(c->root, CPU_SYS "/cpu%d/cpuidle/state%u/disable", cpu, s);
                if (!lat)
                        return deepest;
                long us = strtol(lat, NULL, 10);
                if ((dis && streq(dis, "1")) || us > limit || us <= deepest)
                        continue;
                deepest = us;
                free(*ret_name);
                *ret_name = line_of(c->root, CPU_SYS "/cpu%d/cpuidle/state%u/name", cpu, s);
        }
}

static int check_idle(Check *c) {
        _cleanup_free_ char *driver = line_of(c->root, CPU_SYS "/cpuidle/current_driver"), *qos_text = NULL,
                            *name = NULL;
        long qos = INT32_MAX, worst = -1;
        int worst_cpu = -1;
        if (cpu_pm_qos_read(c->root, &qos_text) >= 0 && qos_text && strtol(qos_text, NULL, 10) < CPU_PM_QOS_DEFAULT_US)
                qos = strtol(qos_text, NULL, 10);
        if (!driver || streq(driver, "none"))
                return add(c, "idle", "idle states", "ok", NULL, "no cpuidle driver: an idle CPU halts");
        CPU_SET_FOREACH (cpu, c->cpus) {
                _cleanup_free_ char *n = NULL;
                long d = deepest_state(c, cpu, qos, &n);
                if (d > worst) {
                        worst = d, worst_cpu = cpu;
                        free(name);
                        name = TAKE_PTR(n);
                }
        }
        if (worst < 0)
                return add(c, "idle", "idle states", "ok", NULL, "%s: only polling allowed", driver);
        return add(c, "idle", "idle states", worst > IDLE_OK_US ? "warn" : "ok", "idle",
                   "%s: CPU %d may enter %s (exit latency %ld µs)%s", driver, worst_cpu, name ?: "a state", worst,
                   qos < INT32_MAX ? " under the PM QoS target" : "");
}

static int check_turbo(Check *c) {
        _cleanup_free_ char *no_turbo = line_of(c->root, CPU_SYS "/intel_pstate/no_turbo");
        _cleanup_free_ char *boost = no_turbo ? NULL : line_of(c->root, CPU_SYS "/cpufreq/boost");
        if (no_turbo)
                return streq(no_turbo, "0") ? add(c, "turbo", "turbo", "warn", "turbo", "on (intel_pstate/no_turbo 0)")
                                            : add(c, "turbo", "turbo", "ok", NULL, "off (intel_pstate/no_turbo 1)");
        if (boost)
                return streq(boost, "1") ? add(c, "turbo", "turbo", "warn", "turbo", "on (cpufreq/boost 1)")
                                         : add(c, "turbo", "turbo", "ok", NULL, "off (cpufreq/boost 0)");
        return add(c, "turbo", "turbo", "ok", NULL, "no turbo control (no intel_pstate/no_turbo or cpufreq/boost)");
}

static int check_pstate(Check *c) {
        _cleanup_free_ char *intel = line_of(c->root, CPU_SYS "/intel_pstate/status");
        _cleanup_free_ char *amd = line_of(c->root, CPU_SYS "/amd_pstate/status");
        int first = cpu_set_next(c->cpus, 0);
        _cleanup_free_ char *driver = line_of(c->root, CPU_SYS "/cpu%d/cpufreq/scaling_driver", first);
        if (intel && !streq(intel, "off"))
                return add(c, "pstate", "frequency driver", streq(intel, "active") ? "warn" : "ok", "intel_pstate",
                           "intel_pstate, %s mode", intel);
        if (amd && !streq(amd, "disable"))
                return add(c, "pstate", "frequency driver", streq(amd, "passive") ? "ok" : "warn", "amd_pstate",
                           "amd_pstate, %s mode", amd);
        if (driver)
                return add(c, "pstate", "frequency driver", "ok", NULL, "%s", driver);
        return add(c, "pstate", "frequency driver", "ok", NULL, "no cpufreq driver");
}

static int check_governor(Check *c) {
        CpuSet other = {};
        _cleanup_free_ char *example = NULL;
        bool any = false;
        CPU_SET_FOREACH (cpu, c->cpus) {
                _cleanup_free_ char *g = line_of(c->root, CPU_SYS "/cpu%d/cpufreq/scaling_governor", cpu);
                any = any || g;
                if (g && !streq(g, "performance")) {
                        cpu_set_add(&other, (unsigned) cpu);
                        if (!example)
                                example = TAKE_PTR(g);
                }
        }
        if (!any)
                return add(c, "governor", "cpufreq governor", "ok", NULL, "no cpufreq on the checked CPUs");
        if (cpu_set_is_empty(&other))
                return add(c, "governor", "cpufreq governor", "ok", NULL, "performance");
        _cleanup_free_ char *l = cpu_set_format_list(&other);
        return add(c, "governor", "cpufreq governor", "warn", "governor", "%s on CPUs %s", example, strempty(l));
}

static int check_tsc(Check *c) {
        bool constant = has_word(c->host->flags, "constant_tsc"), nonstop = has_word(c->host->flags, "nonstop_tsc");
        _cleanup_free_ char *source =
                line_of(c->root, "sys/devices/system/clocksource/clocksource0/current_clocksource");
        _cleanup_free_ char *tsc = NULL;
        int k;
        if (!c->host->flags)
                k = add(c, "tsc", "TSC", "ok", NULL, "not shown (no flags in /proc/cpuinfo)");
        else if (constant && nonstop)
                k = add(c, "tsc", "TSC", "ok", NULL, "constant_tsc nonstop_tsc");
        else
                k = add(c, "tsc", "TSC", "bad", "tsc_flags", "without %s", !constant ? "constant_tsc" : "nonstop_tsc");
        if (k < 0)
                return k;
        if (!source)
                k = add(c, "clocksource", "clocksource", "ok", NULL, "not shown");
        else if (streq(source, "tsc") || (c->host->virtual && streq(source, "kvm-clock")))
                k = add(c, "clocksource", "clocksource", "ok", NULL, "%s", source);
        else
                k = add(c, "clocksource", "clocksource", "warn", "clocksource", "%s", source);
        if (k < 0)
                return k;
        if (cmdline_get(c->cmdline, "tsc", &tsc) < 0)
                return -ENOMEM;
        if (tsc && streq(tsc, "reliable"))
                return add(c, "tsc_watchdog", "TSC watchdog", "ok", NULL, "off (tsc=reliable)");
        return add(c, "tsc_watchdog", "TSC watchdog", "warn", "tsc_reliable",
                   "on: no tsc=reliable on the command line");
}

static int check_nmi_watchdog(Check *c) {
        _cleanup_free_ char *v = line_of(c->root, "proc/sys/kernel/nmi_watchdog");
        if (!v)
                return add(c, "nmi_watchdog", "NMI watchdog", "ok", NULL, "not in this kernel");
        if (streq(v, "0"))
                return add(c, "nmi_watchdog", "NMI watchdog", "ok", NULL, "off");
        return add(c, "nmi_watchdog", "NMI watchdog", "warn", "nmi_watchdog", "on (kernel.nmi_watchdog %s)", v);
}

/* The PID of a running irqbalance, 0 for none. */
static int irqbalance_pid(Root *root) {
        DIR *d = NULL;
        int pid = 0;
        if (root_opendir(root, "proc", &d) < 0)
                return 0;
        for (struct dirent *de; pid == 0 && (de = readdir(d));) {
                if (!isdigit((unsigned char) de->d_name[0]))
                        continue;
                _cleanup_free_ char *comm = line_of(root, "proc/%s/comm", de->d_name);
                if (comm && streq(comm, "irqbalance"))
                        pid = atoi(de->d_name);
        }
        closedir(d);
        return pid;
}

/* The CPUs irqbalance is banned from: its own environment where it can be read, else its
 * environment file's (what it read at its start, unless it changed since). */
static int irqbalance_banned(Root *root, int pid, CpuSet *ret) {
        _cleanup_free_ char *env = NULL, *path = NULL, *list = NULL, *mask = NULL;
        size_t n = 0;
        if (asprintf(&path, "proc/%d/environ", pid) < 0)
                return -ENOMEM;
        if (root_read_file(root, path, &env, &n) >= 0) {
                for (size_t i = 0; i < n; i++)
                        if (env[i] == 0)
                                env[i] = '\n';
        } else if (root_read_file(root, "etc/default/irqbalance", &env, NULL) < 0 &&
                   root_read_file(root, "etc/sysconfig/irqbalance", &env, NULL) < 0)
                return 0;
        *ret = (CpuSet) {};
        list = env_text_get(env, "IRQBALANCE_BANNED_CPULIST");
        mask = list ? NULL : env_text_get(env, "IRQBALANCE_BANNED_CPUS");
        if (list)
                (void) cpu_set_parse_list(list, ret, NULL);
        else if (mask)
                (void) cpu_set_parse_mask(mask, ret, NULL);
        return 0;
}

static int check_irqbalance(Check *c) {
        int pid = irqbalance_pid(c->root);
        CpuSet banned = {}, open;
        if (pid == 0)
                return add(c, "irqbalance", "irqbalance", "ok", NULL, "not running");
        int k = irqbalance_banned(c->root, pid, &banned);
        if (k < 0)
                return k;
        open = *c->cpus;
        cpu_set_andnot(&open, &banned);
        _cleanup_free_ char *b = cpu_set_format_list(&banned), *o = cpu_set_format_list(&open);
        if (!b || !o)
                return -ENOMEM;
        if (cpu_set_is_empty(&open))
                return add(c, "irqbalance", "irqbalance", "ok", NULL, "running (pid %d), banned from CPUs %s", pid, b);
        return add(c, "irqbalance", "irqbalance", "bad", "irqbalance",
                   "running (pid %d) and not banned from CPUs %s: it moves IRQs there", pid, o);
}

static int check_thp(Check *c) {
        _cleanup_free_ char *text = line_of(c->root, "sys/kernel/mm/transparent_hugepage/enabled");
        _cleanup_free_ char *mode = chosen(text, '[', ']');
        if (!mode)
                return add(c, "thp", "transparent hugepages", "ok", NULL, "not in this kernel");
        return add(c, "thp", "transparent hugepages", streq(mode, "always") ? "warn" : "ok", "thp", "%s", mode);
}

static int check_preempt(Check *c) {
        _cleanup_free_ char *rt = line_of(c->root, "sys/kernel/realtime"), *arg = NULL;
        _cleanup_free_ char *dynamic = line_of(c->root, "sys/kernel/debug/sched/preempt");
        _cleanup_free_ char *model = chosen(dynamic, '(', ')');
        const char *v = strempty(c->host->version);
        if ((rt && streq(rt, "1")) || strstr(v, "PREEMPT_RT"))
                return add(c, "preempt", "preemption model", "ok", NULL, "PREEMPT_RT");
        if (strstr(v, "PREEMPT_DYNAMIC")) {
                if (!model && cmdline_get(c->cmdline, "preempt", &arg) < 0)
                        return -ENOMEM;
                const char *m = model ?: arg;
                if (m)
                        return add(c, "preempt", "preemption model", streq(m, "full") ? "warn" : "bad", "preempt",
                                   "PREEMPT_DYNAMIC, %s preemption", m);
                return add(c, "preempt", "preemption model", "bad", "preempt",
                           "PREEMPT_DYNAMIC, the build's default model (no preempt=full on the command line)");
        }
        if (strstr(v, "PREEMPT "))
                return add(c, "preempt", "preemption model", "warn", "preempt", "PREEMPT (full), not PREEMPT_RT");
        return add(c, "preempt", "preemption model", "bad", "preempt", "no preemption or voluntary (%s)", v);
}

static int check_nx_huge_pages(Check *c) {
        _cleanup_free_ char *v = line_of(c->root, "sys/module/kvm/parameters/nx_huge_pages");
        if (!v)
                return add(c, "nx_huge_pages", "kvm.nx_huge_pages", "ok", NULL, "kvm is not loaded");
        if (streq(v, "Y") || streq(v, "force") || streq(v, "1"))
                return add(c, "nx_huge_pages", "kvm.nx_huge_pages", "warn", "nx_huge_pages", "%s", v);
        return add(c, "nx_huge_pages", "kvm.nx_huge_pages", "ok", NULL, "%s", v);
}

int hardware_settings(Root *root, const HardwareHost *h, const CpuSet *cpus, json_t **ret) {
        int (* const checks[])(Check * c) = {
                check_smt,          check_idle,       check_turbo, check_pstate,  check_governor,      check_tsc,
                check_nmi_watchdog, check_irqbalance, check_thp,   check_preempt, check_nx_huge_pages,
        };
        _cleanup_free_ char *cmdline = NULL;
        Check c = { .root = root, .host = h, .cpus = cpus, .list = json_array() };
        if (!c.list)
                return -ENOMEM;
        (void) root_read_line(root, "proc/cmdline", &cmdline);
        c.cmdline = cmdline;
        for (size_t i = 0; i < ELEMENTSOF(checks); i++) {
                int k = checks[i](&c);
                if (k < 0) {
                        json_decref(c.list);
                        return k;
                }
        }
        *ret = c.list;
        return 0;
}

/* ---- the document ---- */

int hardware_document(const HardwareHost *h, const char *cpus, const char *source, json_t *settings, json_t *hwlat,
                      json_t *smi, json_t **ret) {
        const char *worst = "ok";
        size_t i;
        json_t *s;
        json_array_foreach (settings, i, s) {
                const char *v = json_string_value(json_object_get(s, "verdict"));
                if (streq_ptr(v, "bad") || (streq_ptr(v, "warn") && streq(worst, "ok")))
                        worst = v;
        }
        bool ran = json_is_true(json_object_get(hwlat, "ran"));
        const char *hv = json_string_value(json_object_get(hwlat, "verdict"));
        const char *verdict = streq(worst, "bad") || streq_ptr(hv, "over") ? "over" : !ran ? "incomplete" : "within";
        json_t *doc = json_pack("{s:o, s:s, s:s, s:o, s:s, s:o, s:o, s:s}", "host", hardware_host_json(h), "cpus", cpus,
                                "source", source, "settings", settings, "settings_verdict", worst, "hwlat", hwlat,
                                "smi", smi, "verdict", verdict);
        if (!doc)
                return -ENOMEM;
        *ret = doc;
        return 0;
}
