/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwlat.h"
#include "strv.h"
#include "tracefs.h"

/* The window and width hwlat is run with: the kernel's defaults (half of every second, with
 * interrupts off), and the threshold of 1 µs so that every window's largest gap is seen. */
#define HWLAT_WINDOW_US 1000000U
#define HWLAT_WIDTH_US 500000U
#define HWLAT_THRESHOLD_US 1U

#define MSR_SMI_COUNT 0x34

/* ---- trace lines ---- */

/* A number after "key:" in a line's tail, if the key is there. */
static bool tail_number(const char *tail, const char *key, unsigned *ret) {
        const char *p = strstr(tail, key);
        if (!p || (p > tail && p[-1] != ' '))
                return false;
        p += strlen(key);
        if (!isdigit((unsigned char) *p))
                return false;
        errno = 0;
        unsigned long v = strtoul(p, NULL, 10);
        if (errno || v > UINT32_MAX)
                return false;
        *ret = (unsigned) v;
        return true;
}

static bool parse_us(const char **p, char stop, uint64_t *ret) {
        while (**p == ' ')
                (*p)++;
        if (!isdigit((unsigned char) **p))
                return false;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(*p, &end, 10);
        if (errno || (*end != stop && !(stop == ' ' && !*end)))
                return false;
        *ret = v;
        *p = end;
        return true;
}

int hwlat_parse_line(const char *line, unsigned *ret_cpu, HwlatSample *ret) {
        unsigned cpu;
        char *end;
        if (!tracefs_line_cpu(line, &cpu, &end))
                return 0;
        const char *p = strstr(end, " inner/outer(us):");
        if (!p)
                return 0;
        p += strlen(" inner/outer(us):");
        HwlatSample s = {};
        if (!parse_us(&p, '/', &s.inner_us))
                return 0;
        p++;
        if (!parse_us(&p, ' ', &s.outer_us))
                return 0;
        (void) tail_number(p, "count:", &s.count);
        (void) tail_number(p, "nmi-count:", &s.nmi_count);
        *ret_cpu = cpu;
        *ret = s;
        return 1;
}

/* ---- the run ---- */

void hwlat_result_done(HwlatResult *r) {
        if (!r)
                return;
        free(r->cpus);
        *r = (HwlatResult) {};
}

static void hwlat_line(const char *line, void *userdata) {
        HwlatResult *r = userdata;
        HwlatSample s;
        unsigned cpu;
        if (hwlat_parse_line(line, &cpu, &s) <= 0)
                return;
        for (size_t i = 0; i < r->n_cpus; i++) {
                HwlatCpu *c = &r->cpus[i];
                if (c->cpu != cpu)
                        continue;
                uint64_t gap = MAX(s.inner_us, s.outer_us);
                c->samples++;
                c->max_us = MAX(c->max_us, gap);
                c->over += r->limit_us > 0 && gap > r->limit_us;
                c->nmi += s.nmi_count;
        }
}

/* How the tracer is to visit the CPUs: all at once where the kernel can ("per-cpu"), else one
 * after the other; NULL where it has no hwlat_detector/mode (before 5.14: one after the other). */
static const char *hwlat_mode(Root *root, const char *dir) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        if (asprintf(&path, "%s/hwlat_detector/mode", dir) < 0 || root_read_file(root, path, &text, NULL) < 0)
                return NULL;
        for (char *save = NULL, *w = strtok_r(text, " []\n", &save); w; w = strtok_r(NULL, " []\n", &save))
                if (streq(w, "per-cpu"))
                        return "per-cpu";
        return "round-robin";
}

int hwlat_run(Root *root, const char *dir, bool mounted, const CpuSet *cpus, unsigned seconds, unsigned limit_us,
              volatile sig_atomic_t *stop, HwlatResult *ret) {
        HwlatResult res = {
                .width_us = HWLAT_WIDTH_US,
                .window_us = HWLAT_WINDOW_US,
                .threshold_us = HWLAT_THRESHOLD_US,
                .limit_us = limit_us,
                .mode = hwlat_mode(root, dir),
        };
        char window[16], width[16], thresh[16];
        _cleanup_free_ char *mask = cpu_set_format_mask(cpus, (unsigned) cpu_set_last(cpus) + 1);
        res.cpus = calloc(MAX(cpu_set_count(cpus), 1U), sizeof(HwlatCpu));
        if (!mask || !res.cpus) {
                free(res.cpus);
                return -ENOMEM;
        }
        CPU_SET_FOREACH (c, cpus)
                res.cpus[res.n_cpus++].cpu = (unsigned) c;
        snprintf(window, sizeof(window), "%u", res.window_us);
        snprintf(width, sizeof(width), "%u", res.width_us);
        snprintf(thresh, sizeof(thresh), "%u", res.threshold_us);
        const TracefsSetting setup[] = {
                { "tracing_cpumask", mask },
                { "hwlat_detector/mode", res.mode ?: "round-robin" },
                /* The window before the width: the kernel keeps the width below the window. */
                { "hwlat_detector/window", window },
                { "hwlat_detector/width", width },
                { "tracing_thresh", thresh },
                { "tracing_max_latency", "0" },
        };
        const TracefsRun run = {
                .tracer = "hwlat", .by = "hardware check", .setup = setup, .n_setup = ELEMENTSOF(setup)
        };
        if (!res.mode)
                res.mode = "round-robin";
        int r = tracefs_run(root, dir, mounted, &run, seconds, stop, hwlat_line, &res, NULL, NULL, &res.seconds);
        if (r < 0) {
                hwlat_result_done(&res);
                return r;
        }
        *ret = res;
        return 0;
}

int hwlat_document(const HwlatResult *r, json_t **ret) {
        _cleanup_(json_decrefp) json_t *cpus = json_array();
        uint64_t max = 0;
        unsigned samples = 0, over = 0;
        if (!cpus)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_cpus; i++) {
                const HwlatCpu *c = &r->cpus[i];
                max = MAX(max, c->max_us);
                samples += c->samples;
                over += c->over;
                if (json_array_append_new(cpus,
                                          json_pack("{s:i, s:i, s:I, s:i, s:i}", "cpu", (int) c->cpu, "samples",
                                                    (int) c->samples, "max_us", (json_int_t) c->max_us, "over",
                                                    (int) c->over, "nmi", (int) c->nmi)) < 0)
                        return -ENOMEM;
        }
        const char *verdict = r->limit_us == 0 ? "measured" : over > 0 ? "over" : "within";
        json_t *doc = json_pack("{s:b, s:f, s:s, s:i, s:i, s:i, s:i, s:I, s:i, s:i, s:s, s:O}", "ran", true, "seconds",
                                r->seconds, "mode", r->mode, "width_us", (int) r->width_us, "window_us",
                                (int) r->window_us, "threshold_us", (int) r->threshold_us, "limit_us",
                                (int) r->limit_us, "max_us", (json_int_t) max, "samples", (int) samples, "over",
                                (int) over, "verdict", verdict, "cpu", cpus);
        if (!doc)
                return -ENOMEM;
        *ret = doc;
        return 0;
}

char *hwlat_summary(json_t *doc) {
        long long windows = json_integer_value(json_object_get(doc, "samples"));
        char *s;
        if (asprintf(&s,
                     "hwlat over %.1f s (%s, %lld µs of every %lld with interrupts off): largest gap %lld µs, %lld "
                     "window%s above %lld µs, %lld above the limit of %lld µs",
                     json_number_value(json_object_get(doc, "seconds")),
                     strempty(json_string_value(json_object_get(doc, "mode"))),
                     (long long) json_integer_value(json_object_get(doc, "width_us")),
                     (long long) json_integer_value(json_object_get(doc, "window_us")),
                     (long long) json_integer_value(json_object_get(doc, "max_us")), windows, windows == 1 ? "" : "s",
                     (long long) json_integer_value(json_object_get(doc, "threshold_us")),
                     (long long) json_integer_value(json_object_get(doc, "over")),
                     (long long) json_integer_value(json_object_get(doc, "limit_us"))) < 0)
                return NULL;
        return s;
}

/* ---- SMIs ---- */

int smi_read(Root *root, unsigned cpu, uint64_t *ret) {
        _cleanup_close_ int fd = root_openf(root, O_RDONLY | O_NOCTTY, "dev/cpu/%u/msr", cpu);
        uint64_t v;
        if (fd < 0)
                return fd;
        /* The msr device reads the MSR whose number is the file offset, 8 bytes. */
        ssize_t n = pread(fd, &v, sizeof(v), MSR_SMI_COUNT);
        if (n < 0)
                return -errno;
        if (n != (ssize_t) sizeof(v))
                return -EIO;
        *ret = v;
        return 0;
}

void smi_counts_done(SmiCounts *c) {
        if (!c)
                return;
        free(c->reason);
        free(c->cpus);
        free(c->before);
        free(c->after);
        *c = (SmiCounts) {};
}

static char *smi_reason(int r, unsigned cpu) {
        char *s = NULL;
        int k;
        switch (-r) {
        case ENOENT:
        case ENODEV:
        case ENXIO:
                k = asprintf(&s, "no /dev/cpu/%u/msr: the msr module is not loaded (modprobe msr)", cpu);
                break;
        case EACCES:
        case EPERM:
                k = asprintf(&s, "reading /dev/cpu/%u/msr needs root (CAP_SYS_RAWIO)", cpu);
                break;
        case EIO:
                k = asprintf(&s, "the CPU has no MSR_SMI_COUNT: reading MSR 0x34 on CPU %u faults", cpu);
                break;
        default:
                k = asprintf(&s, "cannot read /dev/cpu/%u/msr: %s", cpu, strerror(-r));
        }
        return k < 0 ? NULL : s;
}

int smi_counts_begin(Root *root, const CpuSet *cpus, const char *vendor, bool virtual, SmiCounts *ret) {
        SmiCounts c = {};
        unsigned n = cpu_set_count(cpus);
        int k = 0;

        if (virtual)
                k = asprintf(&c.reason,
                             "a virtual machine: its MSR_SMI_COUNT counts only what the hypervisor "
                             "emulates, not the host's SMIs (run check hardware on the host)");
        else if (!vendor || !streq(vendor, "GenuineIntel"))
                k = asprintf(&c.reason, "%s CPU has no SMI counter (MSR_SMI_COUNT is Intel's)",
                             vendor && (streq(vendor, "AuthenticAMD") || streq(vendor, "HygonGenuine")) ? "an AMD"
                                     : vendor                                                           ? "this"
                                                                                                        : "an unknown");
        if (k < 0)
                return -ENOMEM;
        if (c.reason) {
                *ret = c;
                return 0;
        }
        c.cpus = calloc(MAX(n, 1U), sizeof(unsigned));
        c.before = calloc(MAX(n, 1U), sizeof(uint64_t));
        c.after = calloc(MAX(n, 1U), sizeof(uint64_t));
        if (!c.cpus || !c.before || !c.after) {
                smi_counts_done(&c);
                return -ENOMEM;
        }
        CPU_SET_FOREACH (cpu, cpus) {
                k = smi_read(root, (unsigned) cpu, &c.before[c.n]);
                if (k < 0) {
                        free(c.cpus), free(c.before), free(c.after);
                        c = (SmiCounts) { .reason = smi_reason(k, (unsigned) cpu) };
                        if (!c.reason)
                                return -ENOMEM;
                        break;
                }
                c.after[c.n] = c.before[c.n];
                c.cpus[c.n++] = (unsigned) cpu;
        }
        c.available = !c.reason;
        *ret = c;
        return 0;
}

void smi_counts_end(Root *root, SmiCounts *c) {
        for (size_t i = 0; c->available && i < c->n; i++)
                if (smi_read(root, c->cpus[i], &c->after[i]) < 0)
                        c->after[i] = c->before[i];
}

int smi_document(const SmiCounts *c, json_t **ret) {
        _cleanup_(json_decrefp) json_t *cpus = json_array();
        uint64_t most = 0;
        if (!cpus)
                return -ENOMEM;
        for (size_t i = 0; i < c->n; i++) {
                most = MAX(most, c->after[i] - MIN(c->before[i], c->after[i]));
                if (json_array_append_new(cpus,
                                          json_pack("{s:i, s:I, s:I}", "cpu", (int) c->cpus[i], "before",
                                                    (json_int_t) c->before[i], "after", (json_int_t) c->after[i])) < 0)
                        return -ENOMEM;
        }
        json_t *doc = c->available
                ? json_pack("{s:b, s:n, s:I, s:O}", "available", true, "reason", "count", (json_int_t) most, "cpu",
                            cpus)
                : json_pack("{s:b, s:s, s:n, s:O}", "available", false, "reason", c->reason, "count", "cpu", cpus);
        if (!doc)
                return -ENOMEM;
        *ret = doc;
        return 0;
}
