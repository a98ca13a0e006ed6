/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "pm-qos.h"
#include "strv.h"

/* The "cpu" section of a profile: frequency, idle states and the PM QoS latency. */
static const SchemaField cpu_fields[] = { { "cpus", &schema_cpus },
                                          { "governor", &schema_string },
                                          { "energy_perf_bias", &schema_string },
                                          { "idle_max_latency_us", &schema_nonneg },
                                          { "pm_qos_latency_us", &schema_nonneg },
                                          { "no_turbo", &schema_bool },
                                          {} };
static const Schema cpu_schema = { SCHEMA_OBJECT, .fields = cpu_fields };
static const SchemaField cpu_section = { "cpu", &cpu_schema };

/* CPU power management: what keeps an isolated CPU at one frequency and out of deep C-states.
 *
 *   cpu/<N>/governor                cpuN/cpufreq/scaling_governor           "performance"
 *   cpu/<N>/energy_perf_bias        cpuN/power/energy_perf_bias             "0" … "15" (names mapped)
 *   cpu/<N>/idle/<state>/disable    cpuN/cpuidle/stateK/disable             "1"
 *   cpu/pm_qos                      dev/cpu_dma_latency (held open)         µs, decimal
 *   cpu/no_turbo                    intel_pstate/no_turbo "1", else cpufreq/boost "0"
 *
 * Desired values are what the file takes, and the read verb returns what the file shows, which the
 * file takes back: the write verb writes either as it is (knob_write_file()). Each file is read
 * once: on a 1024-CPU host this is a few thousand small reads.
 *
 * cpu/pm_qos is no file but a request held open by a process: see pm-qos.h. */

#define CPU_SYS "sys/devices/system/cpu"

/* The kernel's names for the x86 energy-performance bias (arch/x86/kernel/cpu/intel_epb.c). */
static const struct {
        const char *name;
        unsigned value;
} epb_names[] = {
        { "performance", 0 }, { "balance-performance", 4 }, { "normal", 6 }, { "balance-power", 8 }, { "power", 15 },
};

static int epb_parse(const char *s, unsigned *ret) {
        for (size_t i = 0; i < ELEMENTSOF(epb_names); i++)
                if (streq(s, epb_names[i].name)) {
                        *ret = epb_names[i].value;
                        return 0;
                }
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || *end || !isdigit((unsigned char) *s) || v > 15)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

/* Is word one of the space-separated words of list? */
static bool word_in(const char *list, const char *word) {
        size_t n = strlen(word);
        for (const char *p = list; *p;) {
                while (isspace((unsigned char) *p))
                        p++;
                size_t len = strcspn(p, " \t\n");
                if (len == n && strncmp(p, word, n) == 0)
                        return true;
                p += len;
        }
        return false;
}

/* Reads a sysfs value; a missing file is *ret = NULL and 1 ("absent"), found is 0. */
static int read_optional(Root *root, const char *path, char **ret) {
        int k = root_read_line(root, path, ret);
        if (k == -ENOENT || k == -ENOTDIR) {
                *ret = NULL;
                return 1;
        }
        return k;
}

/* This process's PM QoS request (pm-qos.h): the fd root_pm_qos_open() gave. */
static struct {
        bool enabled;
        bool held;
        int32_t us;
        int fd;
} holder = { .fd = -EBADF };

void cpu_pm_qos_set_holder(bool enabled) {
        if (!enabled)
                cpu_pm_qos_release();
        holder.enabled = enabled;
}

bool cpu_pm_qos_holder_enabled(void) {
        return holder.enabled;
}

bool cpu_pm_qos_held(int32_t *ret_us) {
        if (holder.held && ret_us)
                *ret_us = holder.us;
        return holder.held;
}

void cpu_pm_qos_release(void) {
        if (holder.fd >= 0)
                (void) close(holder.fd); /* drops the request */
        holder.fd = -EBADF;
        holder.held = false;
        holder.us = 0;
}

int cpu_pm_qos_hold(Root *root, int32_t us) {
        if (us < 0)
                return -EINVAL; /* -1 is the kernel's "default"; other negatives mean nothing */
        if (holder.fd < 0) {
                int fd = root_pm_qos_open(root);
                if (fd < 0)
                        return fd;
                holder.fd = fd;
        }
        /* Exactly four bytes: the kernel takes them as a native s32 (any other length as hex text).
         * The open fd's request is updated in place. */
        ssize_t n = write(holder.fd, &us, sizeof(us));
        if (n != (ssize_t) sizeof(us)) {
                int k = n < 0 ? -errno : -EIO;
                if (!holder.held)
                        cpu_pm_qos_release(); /* do not keep a default request around */
                return k;
        }
        holder.held = true;
        holder.us = us;
        return 0;
}

/* The current PM QoS CPU latency target. On a real host dev/cpu_dma_latency is a character
 * device whose read() returns the aggregate target as a native s32 (every holder's request, not
 * only ours); opening it adds a request at the default value, which changes nothing and wakes no
 * CPU, and close() drops it. A tree has a regular file holding text or those 4 bytes. */
static int pm_qos_read(Root *root, const char *path, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        char buf[64];
        size_t len = 0;

        fd = root_open(root, path, O_RDONLY, 0);
        if (fd == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        while (len < sizeof(buf) - 1) {
                ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (S_ISCHR(st.st_mode))
                        break; /* one s32 per read */
        }
        buf[len] = 0;

        int32_t v;
        bool text = !S_ISCHR(st.st_mode) && len > 0;
        if (text) {
                size_t i = 0;
                while (i < len && isspace((unsigned char) buf[i]))
                        i++;
                if (i < len && buf[i] == '-')
                        i++;
                size_t digits = i;
                while (i < len && isdigit((unsigned char) buf[i]))
                        i++;
                text = i > digits;
                while (i < len && isspace((unsigned char) buf[i]))
                        i++;
                text = text && i == len;
        }
        if (text) {
                char *end;
                errno = 0;
                long long t = strtoll(buf, &end, 10);
                if (errno || t < INT32_MIN || t > INT32_MAX)
                        return -EINVAL;
                v = (int32_t) t;
        } else if (len == sizeof(int32_t))
                memcpy(&v, buf, sizeof(v));
        else
                return -EINVAL;
        /* A regular file is no aggregate: it states the other holders' target, and a request of
         * ours (held where the root can, see pm-qos.h) counts as the kernel would count it. */
        if (!S_ISCHR(st.st_mode) && holder.held && holder.us < v)
                v = holder.us;
        return asprintf(ret, "%" PRId32, v) < 0 ? -ENOMEM : 0;
}

/* "C1E" as an id component: no '/' or spaces. */
static void sanitize_name(char *s) {
        for (char *c = s; *c; c++)
                if (!isalnum((unsigned char) *c) && !strchr("_-.+", *c))
                        *c = '_';
}

typedef struct Missing {
        CpuSet cpus; /* selected CPUs without the file */
        bool any;    /* some selected CPU has it */
} Missing;

/* One note when a feature is missing on every selected CPU, or on some of them. */
static int note_missing(PlanCtx *ctx, const Missing *m, const char *what, const char *key) {
        if (cpu_set_is_empty(&m->cpus))
                return 0;
        if (!m->any)
                return plan_note(ctx, "cpu: no %s on this host; %s skipped", what, key);
        _cleanup_free_ char *l = cpu_set_format_list(&m->cpus);
        if (!l)
                return -ENOMEM;
        return plan_note(ctx, "cpu: CPUs %s have no %s; %s not set there", l, what, key);
}

static int plan_idle(PlanCtx *ctx, int cpu, long long max_us, Missing *missing) {
        char path[128], id[192];
        int k;

        for (unsigned state = 0;; state++) {
                _cleanup_free_ char *lat = NULL, *name = NULL, *cur = NULL;
                snprintf(path, sizeof(path), CPU_SYS "/cpu%d/cpuidle/state%u/latency", cpu, state);
                k = read_optional(ctx->root, path, &lat);
                if (k < 0)
                        return k;
                if (k > 0) {
                        if (state == 0)
                                cpu_set_add(&missing->cpus, (unsigned) cpu);
                        else
                                missing->any = true;
                        return 0;
                }
                /* state0 is POLL (or the shallowest ACPI C1 on non-x86): never disabled, as a CPU
                 * with every state disabled still polls in state0. */
                if (state == 0)
                        continue;
                char *end;
                errno = 0;
                unsigned long long us = strtoull(lat, &end, 10);
                if (errno || end == lat || *end)
                        continue; /* unreadable latency: not ours to judge */
                if ((long long) us <= max_us)
                        continue;
                snprintf(path, sizeof(path), CPU_SYS "/cpu%d/cpuidle/state%u/name", cpu, state);
                k = read_optional(ctx->root, path, &name);
                if (k < 0 && k != -EACCES)
                        return k;
                if (name && streq(name, "POLL"))
                        continue;
                if (!name || !*name) {
                        free(name);
                        if (asprintf(&name, "state%u", state) < 0)
                                return -ENOMEM;
                }
                sanitize_name(name);
                snprintf(path, sizeof(path), CPU_SYS "/cpu%d/cpuidle/state%u/disable", cpu, state);
                k = read_optional(ctx->root, path, &cur);
                if (k < 0 && k != -EACCES)
                        return k;
                snprintf(id, sizeof(id), "cpu/%d/idle/%s/disable", cpu, name);
                Knob *kn;
                k = plan_add(ctx, id, VALUE_AUTO, path, cur, "1", false, &kn);
                if (k < 0)
                        return k;
                if (asprintf(&kn->note, "exit latency %llu µs > %lld µs", us, max_us) < 0) {
                        kn->note = NULL;
                        return -ENOMEM;
                }
        }
}

/* The section's "cpus", online ones only (default: every online CPU). */
static int plan_cpus(PlanCtx *ctx, json_t *sec, CpuSet *ret) {
        const Host *h = ctx->host;
        const char *list = json_string_value(json_object_get(sec, "cpus"));
        if (!list) {
                *ret = h->online;
                return 0;
        }
        if (cpu_set_parse_list(list, ret, NULL) < 0)
                return plan_fail(ctx, "/cpu/cpus", "\"%s\" is not a CPU list", list);
        cpu_set_and(ret, &h->online);
        if (!cpu_set_is_empty(ret))
                return 0;
        _cleanup_free_ char *on = cpu_set_format_list(&h->online);
        return plan_fail(ctx, "/cpu/cpus", "no online CPU selected (online: %s); name at least one, e.g. \"all\"",
                         strempty(on));
}

/* The request checked first, so that an invalid profile adds no knobs; epb_want: the bias as the
 * kernel's number. */
static int check_request(PlanCtx *ctx, json_t *sec, const CpuSet *cpus, char epb_want[static 16]) {
        const char *governor = json_string_value(json_object_get(sec, "governor"));
        const char *epb = json_string_value(json_object_get(sec, "energy_perf_bias"));
        json_t *pm_qos = json_object_get(sec, "pm_qos_latency_us");
        _cleanup_free_ char *avail = NULL;
        char path[128];

        if (epb) {
                unsigned v;
                if (epb_parse(epb, &v) < 0)
                        return plan_fail(ctx, "/cpu/energy_perf_bias",
                                         "\"%s\" is not an energy-performance bias; use performance, "
                                         "balance-performance, normal, balance-power, power or a number "
                                         "from 0 (performance) to 15 (power)",
                                         epb);
                snprintf(epb_want, 16, "%u", v);
        }
        if (pm_qos && json_integer_value(pm_qos) > INT32_MAX)
                return plan_fail(ctx, "/cpu/pm_qos_latency_us", "%lld µs is more than the kernel takes; use at most %d",
                                 (long long) json_integer_value(pm_qos), INT32_MAX);
        if (!governor)
                return 0;
        /* The list is the same for every policy: it depends only on the cpufreq driver. */
        CPU_SET_FOREACH (cpu, cpus) {
                snprintf(path, sizeof(path), CPU_SYS "/cpu%d/cpufreq/scaling_available_governors", cpu);
                int k = read_optional(ctx->root, path, &avail);
                if (k < 0 && k != -EACCES)
                        return k;
                if (k == 0)
                        break;
        }
        if (avail && !word_in(avail, governor))
                return plan_fail(ctx, "/cpu/governor", "governor \"%s\" is not available on this host; available: %s",
                                 governor, *avail ? avail : "none");
        return 0;
}

/* The knob cpu/CPU/what of CPU_SYS/cpuCPU/file, or the CPU counted as missing the file. */
static int plan_cpu_file(PlanCtx *ctx, int cpu, const char *what, const char *file, const char *want,
                         Missing *missing) {
        _cleanup_free_ char *cur = NULL;
        char path[128], id[64];
        snprintf(path, sizeof(path), CPU_SYS "/cpu%d/%s", cpu, file);
        int k = read_optional(ctx->root, path, &cur);
        if (k < 0)
                return k;
        if (k > 0) {
                cpu_set_add(&missing->cpus, (unsigned) cpu);
                return 0;
        }
        missing->any = true;
        snprintf(id, sizeof(id), "cpu/%d/%s", cpu, what);
        return plan_add(ctx, id, VALUE_AUTO, path, cur, want, false, NULL);
}

/* The knobs of every selected CPU, and a note for each feature some of them lack. */
static int plan_per_cpu(PlanCtx *ctx, json_t *sec, const CpuSet *cpus, const char *epb_want) {
        const char *governor = json_string_value(json_object_get(sec, "governor"));
        bool epb = json_object_get(sec, "energy_perf_bias");
        json_t *idle_max = json_object_get(sec, "idle_max_latency_us");
        Missing no_freq = {}, no_epb = {}, no_idle = {};
        int k = 0;

        CPU_SET_FOREACH (cpu, cpus) {
                if (governor)
                        k = plan_cpu_file(ctx, cpu, "governor", "cpufreq/scaling_governor", governor, &no_freq);
                if (k >= 0 && epb)
                        k = plan_cpu_file(ctx, cpu, "energy_perf_bias", "power/energy_perf_bias", epb_want, &no_epb);
                if (k >= 0 && idle_max)
                        k = plan_idle(ctx, cpu, json_integer_value(idle_max), &no_idle);
                if (k < 0)
                        return k;
        }
        k = note_missing(ctx, &no_freq, "cpufreq", "governor");
        if (k >= 0)
                k = note_missing(
                        ctx, &no_epb,
                        ctx->host->vendor == CPU_VENDOR_INTEL
                                ? "power/energy_perf_bias (the kernel offers it where the CPU has the EPB register)"
                                : "power/energy_perf_bias (an Intel CPU feature)",
                        "energy_perf_bias");
        if (k >= 0)
                k = note_missing(ctx, &no_idle, "cpuidle", "idle_max_latency_us");
        return k;
}

static int plan_pm_qos(PlanCtx *ctx, json_t *pm_qos) {
        _cleanup_free_ char *cur = NULL, *want = NULL;
        Knob *kn;
        int k = pm_qos_read(ctx->root, "dev/cpu_dma_latency", &cur);
        if (k < 0 && k != -EACCES && k != -EPERM && k != -EINVAL)
                return k;
        if (asprintf(&want, "%lld", (long long) json_integer_value(pm_qos)) < 0)
                return -ENOMEM;
        k = plan_add(ctx, "cpu/pm_qos", VALUE_AUTO, "dev/cpu_dma_latency", cur, want, false, &kn);
        if (k < 0)
                return k;
        kn->note = strdup(cur || root_exists(ctx->root, "dev/cpu_dma_latency")
                                  ? "µs; a request rtpartd holds open; current is the kernel's target over all requests"
                                  : "µs; no /dev/cpu_dma_latency on this host");
        return kn->note ? 0 : -ENOMEM;
}

static int plan_no_turbo(PlanCtx *ctx, bool off) {
        const char *file, *want, *note;
        _cleanup_free_ char *cur = NULL;
        if (ctx->host->vendor == CPU_VENDOR_INTEL && root_exists(ctx->root, CPU_SYS "/intel_pstate/no_turbo")) {
                file = CPU_SYS "/intel_pstate/no_turbo";
                want = off ? "1" : "0";
                note = NULL;
        } else if (root_exists(ctx->root, CPU_SYS "/cpufreq/boost")) {
                file = CPU_SYS "/cpufreq/boost";
                want = off ? "0" : "1";
                note = "cpufreq boost: the inverse of no_turbo";
        } else
                return plan_note(
                        ctx,
                        "cpu: no turbo control on this host (neither intel_pstate/no_turbo nor cpufreq/boost); "
                        "no_turbo skipped");
        int k = read_optional(ctx->root, file, &cur);
        if (k < 0 && k != -EACCES)
                return k;
        Knob *kn;
        k = plan_add(ctx, "cpu/no_turbo", VALUE_AUTO, file, cur, want, false, &kn);
        if (k < 0)
                return k;
        return note && !(kn->note = strdup(note)) ? -ENOMEM : 0;
}

static int cpu_plan(PlanCtx *ctx) {
        json_t *sec = json_object_get(ctx->resolved->doc, "cpu");
        char epb_want[16] = "";
        CpuSet cpus;

        if (!sec)
                return 0;
        int k = plan_cpus(ctx, sec, &cpus);
        if (k >= 0)
                k = check_request(ctx, sec, &cpus, epb_want);
        if (k >= 0)
                k = plan_per_cpu(ctx, sec, &cpus, epb_want);
        if (k >= 0 && json_object_get(sec, "pm_qos_latency_us"))
                k = plan_pm_qos(ctx, json_object_get(sec, "pm_qos_latency_us"));
        if (k >= 0 && json_object_get(sec, "no_turbo"))
                k = plan_no_turbo(ctx, json_is_true(json_object_get(sec, "no_turbo")));
        return k;
}

static int cpu_read(Root *root, const Knob *k, char **ret) {
        if (streq(k->id, "cpu/pm_qos"))
                return pm_qos_read(root, k->path, ret);
        int r = knob_read_file(root, k, ret);
        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        return r;
}

static int parse_us(const char *s, int32_t *ret) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        while (end != s && isspace((unsigned char) *end))
                end++;
        if (errno || end == s || *end || v < 0 || v > INT32_MAX)
                return -EINVAL;
        *ret = (int32_t) v;
        return 0;
}

/* See pm-qos.h for what each value does. */
static int pm_qos_write(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        int32_t us;
        int r;

        if (!root_can(root, ROOT_CAN_HOLD_PM_QOS)) {
                /* a tree: no kernel to hold a request with */
                knob_result_reason(ret,
                                   "a PM QoS request (cpu/pm_qos) is held open on the running system's "
                                   "/dev/cpu_dma_latency, by rtpartd");
                return KNOB_SKIPPED;
        }
        if (!root_exists(root, k->path ? k->path : "dev/cpu_dma_latency")) {
                knob_result_reason(ret, "this kernel has no /dev/cpu_dma_latency (CONFIG_CPU_IDLE off)");
                return KNOB_SKIPPED;
        }
        if (!holder.enabled) {
                /* rtpartctl: the request would die with this process */
                knob_result_reason(ret,
                                   "a PM QoS request (cpu/pm_qos) lasts only while a process holds it open: "
                                   "rtpartd holds it, so apply through rtpartd");
                return KNOB_SKIPPED;
        }
        if (!value) {
                cpu_pm_qos_release();
                return 0;
        }
        r = parse_us(value, &us);
        if (r < 0)
                return r;
        if (us >= CPU_PM_QOS_DEFAULT_US) {
                cpu_pm_qos_release();
                return 0;
        }
        if (!holder.held) {
                _cleanup_free_ char *cur = NULL;
                if (pm_qos_read(root, k->path ? k->path : "dev/cpu_dma_latency", &cur) >= 0 && cur &&
                    value_equal(VALUE_AUTO, cur, value))
                        return 0; /* another holder asks for exactly this */
        }
        r = cpu_pm_qos_hold(root, us);
        if (r == -ENOENT) {
                knob_result_reason(ret, "this kernel has no /dev/cpu_dma_latency (CONFIG_CPU_IDLE off)");
                return KNOB_SKIPPED;
        }
        return r;
}

static int cpu_write(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        if (streq(k->id, "cpu/pm_qos"))
                return knob_result_finish(ret, pm_qos_write(root, k, value, ret));
        int r = knob_write_file(root, k, value);
        if (r == -ENOENT) {
                /* The CPU went offline (its cpufreq and cpuidle directories go with it) or the
                 * driver went away: nothing takes the value now. */
                knob_result_reason(ret, "the CPU is offline or its cpufreq driver is gone");
                r = KNOB_SKIPPED;
        }
        return knob_result_finish(ret, r);
}

static int cpu_watch(const Knob *k, char ***ret_paths) {
        if (streq(k->id, "cpu/pm_qos"))
                return knob_watch_none(k, ret_paths); /* a character device */
        return knob_watch_file(k, ret_paths);
}

const Backend backend_cpu = {
        .domain = DOMAIN_CPU,
        .name = "cpu",
        .schema = &cpu_section,
        .plan = cpu_plan,
        .read = cpu_read,
        .write = cpu_write,
        .flags = BACKEND_NEEDS_DAEMON,
        .watch = cpu_watch,
};
