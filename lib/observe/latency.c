/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "latency.h"
#include "strv.h"

#define SAVED "run/rtpart/tracefs.json"

/* The tracefs files a timerlat run changes, in the order they are put back: the tracer stopped
 * first, started again (if it was another) last. */
static const char * const saved_files[] = {
        "osnoise/cpus",
        "osnoise/timerlat_period_us",
        "osnoise/stop_tracing_us",
        "osnoise/stop_tracing_total_us",
        "tracing_on",
        "current_tracer",
        NULL,
};

/* dir/file in buf (tracefs paths are short); one path at a time. */
static char pbuf[128];
static const char *tpath(char buf[static 128], const char *dir, const char *file) {
        snprintf(buf, 128, "%s/%s", dir, file);
        return buf;
}

/* ---- results ---- */

void latency_result_done(LatencyResult *r) {
        if (!r)
                return;
        free(r->cpus);
        *r = (LatencyResult) {};
}

LatencyCpu *latency_cpu(LatencyResult *r, unsigned cpu) {
        for (size_t i = 0; i < r->n_cpus; i++)
                if (r->cpus[i].cpu == cpu)
                        return &r->cpus[i];
        return NULL;
}

static int result_init(LatencyResult *r, const CpuSet *cpus, const char *tool) {
        *r = (LatencyResult) { .tool = tool };
        r->cpus = calloc(MAX(cpu_set_count(cpus), 1U), sizeof(LatencyCpu));
        if (!r->cpus)
                return -ENOMEM;
        CPU_SET_FOREACH (c, cpus)
                r->cpus[r->n_cpus++].cpu = (unsigned) c;
        return 0;
}

void latency_stats_add(LatencyStats *s, uint64_t ns) {
        if (s->samples == 0 || ns < s->min_ns)
                s->min_ns = ns;
        if (ns > s->max_ns)
                s->max_ns = ns;
        s->samples++;
        s->sum_ns += ns;
        uint64_t us = ns / 1000;
        s->hist[us < LATENCY_HIST_US ? us : LATENCY_HIST_US]++;
}

uint64_t latency_stats_percentile_us(const LatencyStats *s, double p) {
        if (s->samples == 0)
                return 0;
        uint64_t want = (uint64_t) ((double) s->samples * p / 100.0 + 0.999999), seen = 0;
        if (want == 0)
                want = 1;
        for (unsigned us = 0; us <= LATENCY_HIST_US; us++) {
                seen += s->hist[us];
                if (seen >= want)
                        return us < LATENCY_HIST_US ? MIN((uint64_t) us + 1, (s->max_ns + 999) / 1000)
                                                    : (s->max_ns + 999) / 1000;
        }
        return (s->max_ns + 999) / 1000;
}

/* ---- trace lines ---- */

/* A trace line's CPU: the first "[NNN]" after the task; *ret_end at its ']'. False for a comment,
 * an empty line or a line without one. */
static bool trace_line_cpu(const char *line, unsigned *ret_cpu, char **ret_end) {
        const char *p = line;
        while (*p == ' ' || *p == '\t')
                p++;
        if (*p == '#' || !*p)
                return false;
        const char *b = strchr(p, '[');
        if (!b || !isdigit((unsigned char) b[1]))
                return false;
        errno = 0;
        unsigned long cpu = strtoul(b + 1, ret_end, 10);
        if (errno || **ret_end != ']' || cpu >= CPU_SET_MAX)
                return false;
        *ret_cpu = (unsigned) cpu;
        return true;
}

int latency_parse_timerlat_line(const char *line, unsigned *ret_cpu, bool *ret_thread, uint64_t *ret_ns) {
        char *end;
        unsigned cpu;
        if (!trace_line_cpu(line, &cpu, &end))
                return 0;
        const char *c = strstr(end, " context ");
        if (!c)
                return 0;
        c += strlen(" context ");
        while (*c == ' ')
                c++;
        bool thread;
        if (strncmp(c, "irq ", 4) == 0)
                thread = false;
        else if (strncmp(c, "thread ", 7) == 0)
                thread = true;
        else
                return 0; /* user-ret, … */
        const char *t = strstr(c, "timer_latency");
        if (!t)
                return 0;
        t += strlen("timer_latency");
        while (*t == ' ')
                t++;
        if (!isdigit((unsigned char) *t))
                return 0;
        errno = 0;
        unsigned long long v = strtoull(t, &end, 10);
        if (errno)
                return 0;
        while (*end == ' ')
                end++;
        if (strncmp(end, "ns", 2) == 0)
                ;
        else if (strncmp(end, "us", 2) == 0) {
                if (v > UINT64_MAX / 1000)
                        return 0;
                v *= 1000;
        } else
                return 0;
        *ret_cpu = cpu;
        *ret_thread = thread;
        *ret_ns = v;
        return 1;
}

/* ---- tracefs ---- */

const char *latency_tracefs(Root *root) {
        if (root_exists(root, "sys/kernel/tracing/available_tracers"))
                return "sys/kernel/tracing";
        if (root_exists(root, "sys/kernel/debug/tracing/available_tracers"))
                return "sys/kernel/debug/tracing";
        return NULL;
}

bool latency_has_tracer(Root *root, const char *dir, const char *tracer) {
        _cleanup_free_ char *text = NULL;
        if (root_read_file(root, tpath(pbuf, dir, "available_tracers"), &text, NULL) < 0)
                return false;
        for (char *save = NULL, *t = strtok_r(text, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
                if (streq(t, tracer))
                        return true;
        return false;
}

static char *read_value(Root *root, const char *dir, const char *file) {
        _cleanup_free_ char *text = NULL;
        if (root_read_file(root, tpath(pbuf, dir, file), &text, NULL) < 0)
                return NULL;
        size_t n = strlen(text);
        while (n > 0 && text[n - 1] == '\n')
                text[--n] = 0;
        return TAKE_PTR(text);
}

/* Puts back every file of saved (an object: file → value) under dir: the tracer stopped first. */
static int restore(Root *root, const char *dir, json_t *files) {
        int r = 0, k;
        if (json_object_get(files, "current_tracer")) {
                k = root_write_value(root, tpath(pbuf, dir, "current_tracer"), "nop");
                if (k < 0 && r == 0)
                        r = k;
        }
        for (const char * const *f = saved_files; *f; f++) {
                const char *v = json_string_value(json_object_get(files, *f));
                if (!v)
                        continue;
                /* An empty CPU list reads back as "" but is written as a newline. */
                k = root_write_value(root, tpath(pbuf, dir, *f), v);
                if (k < 0 && r == 0)
                        r = k;
        }
        return r;
}

int latency_recover(Root *root, char **ret_message) {
        _cleanup_free_ char *text = NULL;
        *ret_message = NULL;
        int r = root_read_file(root, SAVED, &text, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        _cleanup_(json_decrefp) json_t *doc = json_loads(text, 0, NULL);
        const char *dir = json_string_value(json_object_get(doc, "tracefs"));
        if (!dir || (!streq(dir, "sys/kernel/tracing") && !streq(dir, "sys/kernel/debug/tracing")))
                return -EBADMSG;
        r = restore(root, dir, json_object_get(doc, "files"));
        if (r < 0)
                return r;
        if (json_is_true(json_object_get(doc, "mounted")))
                (void) root_umount(root, dir);
        (void) root_unlink(root, SAVED);
        if (asprintf(ret_message, "put tracefs back as an interrupted latency check (pid %lld, started %s) found it",
                     (long long) json_integer_value(json_object_get(doc, "pid")),
                     strempty(json_string_value(json_object_get(doc, "started")))) < 0)
                return -ENOMEM;
        return 1;
}

static char *now_iso8601(void) {
        time_t t = time(NULL);
        struct tm tm;
        char buf[32];
        if (!gmtime_r(&t, &tm) || strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return NULL;
        return strdup(buf);
}

static int save(Root *root, const char *dir, bool mounted, json_t **ret_files) {
        _cleanup_(json_decrefp) json_t *files = json_object(), *doc = NULL;
        _cleanup_free_ char *started = now_iso8601(), *text = NULL;
        if (!files || !started)
                return -ENOMEM;
        for (const char * const *f = saved_files; *f; f++) {
                _cleanup_free_ char *v = read_value(root, dir, *f);
                if (!v) {
                        if (!root_exists(root, tpath(pbuf, dir, *f)))
                                continue; /* an older kernel's tracefs */
                        return -EIO;
                }
                if (json_object_set_new(files, *f, json_string(v)) < 0)
                        return -ENOMEM;
        }
        doc = json_pack("{s:s, s:b, s:I, s:s, s:O}", "tracefs", dir, "mounted", mounted, "pid", (json_int_t) getpid(),
                        "started", started, "files", files);
        text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        if (!text)
                return -ENOMEM;
        int r = root_mkdir_p(root, "run/rtpart", 0755);
        if (r < 0)
                return r;
        r = root_write_file_atomic(root, SAVED, text, strlen(text), 0600);
        if (r < 0)
                return r;
        *ret_files = TAKE_PTR(files);
        return 0;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

typedef void (*LineFunc)(const char *line, void *userdata);

/* Feeds every complete line of buf[0..*len) to f, keeps the rest at the start of buf. */
static void take_lines(char *buf, size_t *len, LineFunc f, void *userdata) {
        char *p = buf, *end = buf + *len, *nl;
        while ((nl = memchr(p, '\n', (size_t) (end - p)))) {
                *nl = 0;
                f(p, userdata);
                p = nl + 1;
        }
        *len = (size_t) (end - p);
        memmove(buf, p, *len);
}

/* Runs `tracer` (timerlat, osnoise) on cpus for `seconds`, every line of trace_pipe to f; tracefs
 * saved first and put back after, whatever happens. *ret_seconds: how long it ran. */
static int run_tracer(Root *root, const char *dir, bool mounted, const char *tracer, const CpuSet *cpus,
                      unsigned seconds, volatile sig_atomic_t *stop, LineFunc f, void *userdata,
                      LatencyWindowFunc window, void *window_data, double *ret_seconds) {
        _cleanup_(json_decrefp) json_t *files = NULL;
        _cleanup_free_ char *list = cpu_set_format_list(cpus);
        int r;

        if (!list)
                return -ENOMEM;
        r = save(root, dir, mounted, &files);
        if (r < 0)
                return r;

        /* Set up: stopped, only these CPUs, a 1 ms timerlat period, never stop on a threshold. */
        const struct {
                const char *file, *value;
        } setup[] = {
                { "current_tracer", "nop" },
                { "osnoise/cpus", list },
                { "osnoise/timerlat_period_us", "1000" },
                { "osnoise/stop_tracing_us", "0" },
                { "osnoise/stop_tracing_total_us", "0" },
                { "tracing_on", "1" },
                { "current_tracer", tracer },
        };
        for (size_t i = 0; i < ELEMENTSOF(setup); i++) {
                if (!json_object_get(files, setup[i].file))
                        continue;
                r = root_write_value(root, tpath(pbuf, dir, setup[i].file), setup[i].value);
                if (r < 0)
                        goto finish;
        }

        {
                _cleanup_close_ int fd = root_open(root, tpath(pbuf, dir, "trace_pipe"), O_RDONLY | O_NONBLOCK, 0);
                if (fd < 0) {
                        r = fd;
                        goto finish;
                }
                /* The window is the tracer's running time: what setting it up and taking it down
                 * cost the CPUs (ftrace's code patching sends IPIs to every CPU) is outside. */
                if (window) {
                        r = window(true, window_data);
                        if (r < 0)
                                goto finish;
                }
                uint64_t start = now_usec(), end = start + (uint64_t) seconds * 1000000ULL;
                static char buf[1 << 16];
                size_t len = 0;
                for (uint64_t now = start; now < end && !(stop && *stop); now = now_usec()) {
                        struct pollfd p = { .fd = fd, .events = POLLIN };
                        int left = (int) MIN((end - now) / 1000 + 1, (uint64_t) 200);
                        int k = poll(&p, 1, left);
                        if (k < 0 && errno != EINTR) {
                                r = -errno;
                                goto finish;
                        }
                        if (k <= 0)
                                continue;
                        ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
                        if (n < 0 && errno != EAGAIN && errno != EINTR) {
                                r = -errno;
                                goto finish;
                        }
                        if (n == 0) {
                                /* A regular file (a host tree) is at its end: wait for more. */
                                (void) poll(NULL, 0, left);
                                continue;
                        }
                        if (n > 0) {
                                len += (size_t) n;
                                take_lines(buf, &len, f, userdata);
                                if (len == sizeof(buf) - 1)
                                        len = 0; /* a line longer than the buffer is no sample */
                        }
                }
                if (ret_seconds)
                        *ret_seconds = (double) (now_usec() - start) / 1e6;
                if (window) {
                        r = window(false, window_data);
                        if (r < 0)
                                goto finish;
                }
        }
        r = 0;

finish:;
        int k = restore(root, dir, files);
        if (k >= 0)
                (void) root_unlink(root, SAVED);
        return r < 0 ? r : k;
}

static void timerlat_line(const char *line, void *userdata) {
        LatencyResult *r = userdata;
        unsigned cpu;
        bool thread;
        uint64_t ns;
        if (latency_parse_timerlat_line(line, &cpu, &thread, &ns) > 0) {
                LatencyCpu *c = latency_cpu(r, cpu);
                if (c)
                        latency_stats_add(thread ? &c->thread : &c->irq, ns);
        }
}

int latency_run_timerlat(Root *root, const char *dir, bool mounted, const CpuSet *cpus, unsigned seconds,
                         volatile sig_atomic_t *stop, LatencyResult *ret) {
        LatencyResult res = {};
        int r = result_init(&res, cpus, "timerlat");
        if (r < 0)
                return r;
        res.has_irq = true;
        r = run_tracer(root, dir, mounted, "timerlat", cpus, seconds, stop, timerlat_line, &res, NULL, NULL,
                       &res.seconds);
        if (r < 0) {
                latency_result_done(&res);
                return r;
        }
        *ret = res;
        return 0;
}

/* ---- osnoise ---- */

int latency_parse_osnoise_line(const char *line, unsigned *ret_cpu, OsnoiseSample *ret) {
        char *end;
        unsigned cpu;
        if (!trace_line_cpu(line, &cpu, &end))
                return 0;
        /* After "TIMESTAMP:": runtime noise %available max-single hw nmi irq softirq thread. */
        const char *colon = strchr(end, ':');
        if (!colon)
                return 0;
        /* Whole numbers but the percentage (which is not kept): a float cast of "1e30" would be
         * undefined, and the kernel prints none. */
        uint64_t v[9];
        const char *q = colon + 1;
        for (unsigned i = 0; i < 9; i++) {
                while (*q == ' ' || *q == '\t')
                        q++;
                if (!isdigit((unsigned char) *q))
                        return 0;
                errno = 0;
                if (i == 2) {
                        double pct = strtod(q, &end);
                        if (errno || !(pct >= 0 && pct <= 100))
                                return 0;
                        v[i] = 0;
                } else {
                        unsigned long long n = strtoull(q, &end, 10);
                        if (errno)
                                return 0;
                        v[i] = n;
                }
                if (*end && *end != ' ' && *end != '\t')
                        return 0;
                q = end;
        }
        while (*q == ' ' || *q == '\t')
                q++;
        if (*q)
                return 0;
        *ret_cpu = cpu;
        *ret = (OsnoiseSample) {
                .runtime_us = v[0],
                .noise_us = v[1],
                .max_single_us = v[3],
                .hw = v[4],
                .nmi = v[5],
                .irq = v[6],
                .softirq = v[7],
                .thread = v[8],
        };
        return 1;
}

void osnoise_result_done(OsnoiseResult *r) {
        if (!r)
                return;
        free(r->cpus);
        *r = (OsnoiseResult) {};
}

const OsnoiseCpu *osnoise_cpu(const OsnoiseResult *r, unsigned cpu) {
        for (size_t i = 0; r && i < r->n_cpus; i++)
                if (r->cpus[i].cpu == cpu)
                        return &r->cpus[i];
        return NULL;
}

static void osnoise_line(const char *line, void *userdata) {
        OsnoiseResult *r = userdata;
        unsigned cpu;
        OsnoiseSample s;
        if (latency_parse_osnoise_line(line, &cpu, &s) <= 0)
                return;
        OsnoiseCpu *c = (OsnoiseCpu *) osnoise_cpu(r, cpu);
        if (!c)
                return;
        c->periods++;
        c->total.runtime_us += s.runtime_us;
        c->total.noise_us += s.noise_us;
        c->total.max_single_us = MAX(c->total.max_single_us, s.max_single_us);
        c->total.hw += s.hw;
        c->total.nmi += s.nmi;
        c->total.irq += s.irq;
        c->total.softirq += s.softirq;
        c->total.thread += s.thread;
}

int latency_run_osnoise(Root *root, const char *dir, bool mounted, const CpuSet *cpus, unsigned seconds,
                        volatile sig_atomic_t *stop, LatencyWindowFunc window, void *window_data, OsnoiseResult *ret) {
        OsnoiseResult res = {};
        res.cpus = calloc(MAX(cpu_set_count(cpus), 1U), sizeof(OsnoiseCpu));
        if (!res.cpus)
                return -ENOMEM;
        CPU_SET_FOREACH (c, cpus)
                res.cpus[res.n_cpus++].cpu = (unsigned) c;
        int r = run_tracer(root, dir, mounted, "osnoise", cpus, seconds, stop, osnoise_line, &res, window, window_data,
                           &res.seconds);
        if (r < 0) {
                osnoise_result_done(&res);
                return r;
        }
        *ret = res;
        return 0;
}

/* ---- cyclictest ---- */

int latency_parse_cyclictest(const char *text, const CpuSet *cpus, LatencyResult *ret) {
        LatencyResult res = {};
        int r = result_init(&res, cpus, "cyclictest");
        if (r < 0)
                return r;
        bool any = false;
        for (const char *p = text; *p;) {
                const char *eol = strchrnul(p, '\n');
                _cleanup_free_ char *line = strndup(p, (size_t) (eol - p));
                p = *eol ? eol + 1 : eol;
                if (!line) {
                        latency_result_done(&res);
                        return -ENOMEM;
                }
                char *save = NULL, *tok = strtok_r(line, " \t", &save);
                if (!tok)
                        continue;
                if (streq(tok, "#")) {
                        /* "# Max Latencies: 00012 00009": the true maxima (the histogram stops). */
                        char *w1 = strtok_r(NULL, " \t", &save), *w2 = strtok_r(NULL, " \t", &save);
                        bool max = w1 && w2 && streq(w1, "Max") && streq(w2, "Latencies:");
                        bool min = w1 && w2 && streq(w1, "Min") && streq(w2, "Latencies:");
                        for (size_t i = 0; (max || min) && i < res.n_cpus; i++) {
                                char *v = strtok_r(NULL, " \t", &save);
                                if (!v)
                                        break;
                                uint64_t us = strtoull(v, NULL, 10);
                                if (res.cpus[i].thread.samples == 0)
                                        continue;
                                if (max)
                                        res.cpus[i].thread.max_ns = us * 1000;
                                else
                                        res.cpus[i].thread.min_ns = us * 1000;
                        }
                        continue;
                }
                /* "000012 000345 000001": a latency in µs, then a count per thread. */
                if (!isdigit((unsigned char) tok[0]))
                        continue;
                uint64_t us = strtoull(tok, NULL, 10);
                for (size_t i = 0; i < res.n_cpus; i++) {
                        char *v = strtok_r(NULL, " \t", &save);
                        if (!v)
                                break;
                        uint64_t n = strtoull(v, NULL, 10);
                        LatencyStats *s = &res.cpus[i].thread;
                        if (n == 0)
                                continue;
                        if (s->samples == 0 || us * 1000 < s->min_ns)
                                s->min_ns = us * 1000;
                        s->max_ns = MAX(s->max_ns, us * 1000);
                        s->samples += n;
                        s->sum_ns += n * us * 1000;
                        s->hist[us < LATENCY_HIST_US ? us : LATENCY_HIST_US] += n;
                        any = true;
                }
        }
        if (!any) {
                latency_result_done(&res);
                return -EBADMSG;
        }
        *ret = res;
        return 0;
}

int latency_run_cyclictest(Root *root, const CpuSet *cpus, unsigned seconds, LatencyResult *ret) {
        _cleanup_free_ char *list = cpu_set_format_list(cpus), *text = NULL;
        char threads[16], duration[32];

        if (!list)
                return -ENOMEM;
        snprintf(threads, sizeof(threads), "-t%u", cpu_set_count(cpus));
        snprintf(duration, sizeof(duration), "-D%us", seconds);
        char *argv[] = { (char *) "cyclictest",
                         (char *) "-q",
                         (char *) "-m",
                         (char *) "-p95",
                         (char *) "-i1000",
                         threads,
                         (char *) "-a",
                         list,
                         duration,
                         (char *) "-h1000",
                         NULL };
        int r = root_run_program(root, argv, &text);
        if (r < 0)
                return r;
        r = latency_parse_cyclictest(text, cpus, ret);
        if (r >= 0)
                ret->seconds = seconds;
        return r;
}

/* ---- the document, the picture ---- */

static json_t *stats_json(const LatencyStats *s, unsigned limit_us, bool *over) {
        _cleanup_(json_decrefp) json_t *hist = json_array();
        if (!hist)
                return NULL;
        for (unsigned us = 0; us <= LATENCY_HIST_US; us++)
                if (s->hist[us] &&
                    json_array_append_new(hist, json_pack("[I, I]", (json_int_t) us, (json_int_t) s->hist[us])) < 0)
                        return NULL;
        double max_us = (double) s->max_ns / 1000.0;
        bool o = limit_us > 0 && max_us > limit_us;
        if (over)
                *over = *over || o;
        return json_pack("{s:I, s:f, s:f, s:I, s:f, s:b, s:O}", "samples", (json_int_t) s->samples, "min_us",
                         (double) s->min_ns / 1000.0, "avg_us",
                         s->samples ? (double) s->sum_ns / (double) s->samples / 1000.0 : 0.0, "p99_us",
                         (json_int_t) latency_stats_percentile_us(s, 99.0), "max_us", max_us, "over_limit", o,
                         "histogram", hist);
}

int latency_document(const LatencyResult *r, unsigned limit_us, json_t **ret, bool *ret_over) {
        _cleanup_(json_decrefp) json_t *cpus = json_array(), *doc = NULL;
        bool over = false;
        if (!cpus)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_cpus; i++) {
                const LatencyCpu *c = &r->cpus[i];
                json_t *th = stats_json(&c->thread, limit_us, &over);
                json_t *irq = r->has_irq ? stats_json(&c->irq, limit_us, NULL) : json_null();
                json_t *o =
                        th && irq ? json_pack("{s:i, s:o, s:o}", "cpu", (int) c->cpu, "irq", irq, "thread", th) : NULL;
                if (!o || json_array_append_new(cpus, o) < 0)
                        return -ENOMEM;
        }
        doc = json_pack("{s:s, s:f, s:i, s:s, s:O}", "tool", r->tool, "seconds", r->seconds, "limit_us", (int) limit_us,
                        "verdict",
                        limit_us == 0  ? "measured"
                                : over ? "over"
                                       : "within",
                        "cpu", cpus);
        if (!doc)
                return -ENOMEM;
        *ret = TAKE_PTR(doc);
        if (ret_over)
                *ret_over = over;
        return 0;
}

/* log10(n) for a count n >= 1, to a millionth: a bar's height on the log scale. Written here so
 * that rtpart needs no libm (one library fewer mapped into rtpartd, which uses none of it). */
static double log10_count(uint64_t n) {
        int e = 63 - __builtin_clzll(n);
        double m = (double) n / (double) (UINT64_C(1) << e); /* in [1, 2) */
        double z = (m - 1) / (m + 1), z2 = z * z;            /* ln m = 2 atanh z, z < 1/3 */
        double ln_m = 2 * z * (1 + z2 * (1.0 / 3 + z2 * (1.0 / 5 + z2 * (1.0 / 7 + z2 * (1.0 / 9 + z2 / 11)))));
        return (e * 0.69314718055994531 + ln_m) / 2.30258509299404568;
}

int latency_svg(const LatencyResult *r, unsigned limit_us, char **ret) {
        const int W = 640, H = 140, L = 56, B = 28, T = 22;
        StrBuf b = {};
        unsigned top_us = 16;
        for (size_t i = 0; i < r->n_cpus; i++)
                for (unsigned us = 0; us < LATENCY_HIST_US; us++)
                        if (r->cpus[i].thread.hist[us])
                                top_us = MAX(top_us, us + 1);
        top_us = MIN(top_us + top_us / 8, LATENCY_HIST_US);
        strbuf_appendf(&b,
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" "
                       "font-family=\"sans-serif\" font-size=\"11\">\n",
                       W, (size_t) H * MAX(r->n_cpus, (size_t) 1));
        for (size_t i = 0; i < r->n_cpus; i++) {
                const LatencyStats *s = &r->cpus[i].thread;
                int y0 = (int) i * H, pw = W - L - 10, ph = H - T - B;
                double maxlog = 1;
                for (unsigned us = 0; us < top_us; us++)
                        if (s->hist[us])
                                maxlog = MAX(maxlog, log10_count(s->hist[us]) + 1);
                strbuf_appendf(
                        &b, "<text x=\"%d\" y=\"%d\">CPU %u: %s thread latency, %llu samples, max %.1f µs</text>\n", L,
                        y0 + 15, r->cpus[i].cpu, r->tool, (unsigned long long) s->samples, (double) s->max_ns / 1000.0);
                strbuf_appendf(&b,
                               "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n",
                               L, y0 + T, pw, ph);
                for (unsigned us = 0; us < top_us; us++) {
                        if (!s->hist[us])
                                continue;
                        double h = (log10_count(s->hist[us]) + 1) / maxlog * ph;
                        double x = L + (double) us * pw / top_us, w = MAX((double) pw / top_us, 1.0);
                        strbuf_appendf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                                       x, y0 + T + ph - h, w, h,
                                       limit_us > 0 && us >= limit_us ? "#c0392b" : "#2e86c1");
                }
                if (limit_us > 0 && limit_us < top_us) {
                        double x = L + (double) limit_us * pw / top_us;
                        strbuf_appendf(&b,
                                       "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#c0392b\" "
                                       "stroke-dasharray=\"4 3\"/>\n",
                                       x, y0 + T, x, y0 + T + ph);
                }
                strbuf_appendf(
                        &b,
                        "<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%u µs</text>\n", L,
                        y0 + H - 10, L + pw, y0 + H - 10, top_us);
                strbuf_appendf(&b, "<text x=\"4\" y=\"%d\">log count</text>\n", y0 + T + ph / 2);
        }
        strbuf_append(&b, "</svg>\n");
        *ret = strbuf_steal(&b);
        return *ret ? 0 : -ENOMEM;
}
