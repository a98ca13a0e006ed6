/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "strv.h"
#include "tracefs.h"

#define SAVED "run/rtpart/tracefs.json"

/* Every file a run may change, in the order they are put back: the tracer stopped first, started
 * again (if it was another) last. */
static const char * const saved_files[] = {
        "osnoise/cpus",
        "osnoise/timerlat_period_us",
        "osnoise/stop_tracing_us",
        "osnoise/stop_tracing_total_us",
        "tracing_cpumask",
        "hwlat_detector/mode",
        "hwlat_detector/window",
        "hwlat_detector/width",
        "tracing_thresh",
        "tracing_max_latency",
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

const char *tracefs_find(Root *root) {
        if (root_exists(root, "sys/kernel/tracing/available_tracers"))
                return "sys/kernel/tracing";
        if (root_exists(root, "sys/kernel/debug/tracing/available_tracers"))
                return "sys/kernel/debug/tracing";
        return NULL;
}

bool tracefs_has_tracer(Root *root, const char *dir, const char *tracer) {
        _cleanup_free_ char *text = NULL;
        if (root_read_file(root, tpath(pbuf, dir, "available_tracers"), &text, NULL) < 0)
                return false;
        for (char *save = NULL, *t = strtok_r(text, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
                if (streq(t, tracer))
                        return true;
        return false;
}

char *tracefs_read(Root *root, const char *dir, const char *file) {
        _cleanup_free_ char *text = NULL;
        if (root_read_file(root, tpath(pbuf, dir, file), &text, NULL) < 0)
                return NULL;
        size_t n = strlen(text);
        while (n > 0 && text[n - 1] == '\n')
                text[--n] = 0;
        /* A choice file shows every choice with the chosen one in brackets; it takes that one. */
        char *open = strchr(text, '['), *close = open ? strchr(open, ']') : NULL;
        if (close && (open == text || open[-1] == ' ') && (close[1] == ' ' || !close[1]))
                return strndup(open + 1, (size_t) (close - open - 1));
        return TAKE_PTR(text);
}

bool tracefs_line_cpu(const char *line, unsigned *ret_cpu, char **ret_end) {
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

/* Writes every file of files (file → value) under dir, in the order of saved_files; those the
 * kernel refuses with EINVAL (an order it needs: hwlat's width below its window) once more after
 * the others. The first error. */
static int write_files(Root *root, const char *dir, json_t *files) {
        bool again[ELEMENTSOF(saved_files)] = {};
        int r = 0, k;
        for (unsigned pass = 0; pass < 2; pass++)
                for (size_t i = 0; saved_files[i]; i++) {
                        const char *v = json_string_value(json_object_get(files, saved_files[i]));
                        if (!v || (pass == 1 && !again[i]))
                                continue;
                        /* An empty CPU list reads back as "" but is written as a newline. */
                        k = root_write_value(root, tpath(pbuf, dir, saved_files[i]), v);
                        again[i] = pass == 0 && k == -EINVAL;
                        if (k < 0 && !again[i] && r == 0)
                                r = k;
                }
        return r;
}

/* Puts back every file of saved (an object: file → value) under dir: the tracer stopped first. */
static int restore(Root *root, const char *dir, json_t *files) {
        int r = 0;
        if (json_object_get(files, "current_tracer"))
                r = root_write_value(root, tpath(pbuf, dir, "current_tracer"), "nop");
        int k = write_files(root, dir, files);
        return r < 0 ? r : k;
}

int tracefs_recover(Root *root, char **ret_message) {
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
        if (asprintf(ret_message, "put tracefs back as an interrupted %s (pid %lld, started %s) found it",
                     json_string_value(json_object_get(doc, "by")) ?: "latency check",
                     (long long) json_integer_value(json_object_get(doc, "pid")),
                     strempty(json_string_value(json_object_get(doc, "started")))) < 0)
                return -ENOMEM;
        return 1;
}

/* Whether a run of run changes file. */
static bool run_changes(const TracefsRun *run, const char *file) {
        if (streq(file, "tracing_on") || streq(file, "current_tracer"))
                return true;
        for (size_t i = 0; i < run->n_setup; i++)
                if (streq(run->setup[i].file, file))
                        return true;
        return false;
}

static int save(Root *root, const char *dir, bool mounted, const TracefsRun *run, json_t **ret_files) {
        _cleanup_(json_decrefp) json_t *files = json_object(), *doc = NULL;
        _cleanup_free_ char *started = journal_now_iso8601(), *text = NULL;
        if (!files || !started)
                return -ENOMEM;
        for (const char * const *f = saved_files; *f; f++) {
                if (!run_changes(run, *f))
                        continue;
                _cleanup_free_ char *v = tracefs_read(root, dir, *f);
                if (!v) {
                        if (!root_exists(root, tpath(pbuf, dir, *f)))
                                continue; /* an older kernel's tracefs */
                        return -EIO;
                }
                if (json_object_set_new(files, *f, json_string(v)) < 0)
                        return -ENOMEM;
        }
        doc = json_pack("{s:s, s:b, s:s, s:I, s:s, s:O}", "tracefs", dir, "mounted", mounted, "by", run->by, "pid",
                        (json_int_t) getpid(), "started", started, "files", files);
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

/* Stopped, the run's files set (those the kernel has), tracing on, the tracer started. */
static int set_up(Root *root, const char *dir, const TracefsRun *run, json_t *saved) {
        _cleanup_(json_decrefp) json_t *want = json_object();
        if (!want)
                return -ENOMEM;
        for (size_t i = 0; i < run->n_setup; i++)
                if (json_object_get(saved, run->setup[i].file) &&
                    json_object_set_new(want, run->setup[i].file, json_string(run->setup[i].value)) < 0)
                        return -ENOMEM;
        int r = root_write_value(root, tpath(pbuf, dir, "current_tracer"), "nop");
        if (r >= 0)
                r = write_files(root, dir, want);
        if (r >= 0 && json_object_get(saved, "tracing_on"))
                r = root_write_value(root, tpath(pbuf, dir, "tracing_on"), "1");
        if (r >= 0)
                r = root_write_value(root, tpath(pbuf, dir, "current_tracer"), run->tracer);
        return r;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* Feeds every complete line of buf[0..*len) to f, keeps the rest at the start of buf. */
static void take_lines(char *buf, size_t *len, TracefsLineFunc f, void *userdata) {
        char *p = buf, *end = buf + *len, *nl;
        while ((nl = memchr(p, '\n', (size_t) (end - p)))) {
                *nl = 0;
                f(p, userdata);
                p = nl + 1;
        }
        *len = (size_t) (end - p);
        memmove(buf, p, *len);
}

/* Reads trace_pipe (fd) for `seconds`, or until *stop. */
static int read_window(int fd, unsigned seconds, volatile sig_atomic_t *stop, TracefsLineFunc f, void *userdata) {
        uint64_t start = now_usec(), end = start + (uint64_t) seconds * 1000000ULL;
        static char buf[1 << 16];
        size_t len = 0;
        for (uint64_t now = start; now < end && !(stop && *stop); now = now_usec()) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int left = (int) MIN((end - now) / 1000 + 1, (uint64_t) 200);
                int k = poll(&p, 1, left);
                if (k < 0 && errno != EINTR)
                        return -errno;
                if (k <= 0)
                        continue;
                ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return -errno;
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
        return 0;
}

int tracefs_run(Root *root, const char *dir, bool mounted, const TracefsRun *run, unsigned seconds,
                volatile sig_atomic_t *stop, TracefsLineFunc f, void *userdata, TracefsWindowFunc window,
                void *window_data, double *ret_seconds) {
        _cleanup_(json_decrefp) json_t *files = NULL;
        int r = save(root, dir, mounted, run, &files);
        if (r < 0)
                return r;
        r = set_up(root, dir, run, files);
        if (r < 0)
                goto finish;
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
                uint64_t start = now_usec();
                r = read_window(fd, seconds, stop, f, userdata);
                if (r < 0)
                        goto finish;
                if (ret_seconds)
                        *ret_seconds = (double) (now_usec() - start) / 1e6;
                if (window)
                        r = window(false, window_data);
        }

finish:;
        int k = restore(root, dir, files);
        if (k >= 0)
                (void) root_unlink(root, SAVED);
        return r < 0 ? r : k;
}
