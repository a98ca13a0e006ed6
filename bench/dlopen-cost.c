/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* dlopen-cost: what loading a library on first use costs a process, for the libraries rtpart loads
 * so (lib/kernel/libnl.c: ethtool's channels and rtpartd's netlink sockets, lib/kernel/systemd.c): each case runs in a fresh child process, RUNS
 * times, and prints the median, the lowest and the highest of the time it took (CLOCK_MONOTONIC,
 * µs) and of what it added to the process's resident memory (KiB, /proc/self/statm); and, with
 * IFNAME, one whole ETHTOOL_MSG_CHANNELS_GET of that interface the first time (libraries loaded,
 * socket, family resolved, request and reply) and a second time (the libraries already there).
 *
 *   dlopen-cost [-n RUNS] [IFNAME]
 *
 * Timings belong here, never in a test. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ethtool.h"

typedef struct Sample {
        double usec, kib;
} Sample;

static double now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static double resident_kib(void) {
        unsigned long size = 0, resident = 0;
        FILE *f = fopen("/proc/self/statm", "re");
        if (f) {
                if (fscanf(f, "%lu %lu", &size, &resident) != 2)
                        resident = 0;
                fclose(f);
        }
        return (double) resident * (double) sysconf(_SC_PAGESIZE) / 1024.0;
}

static const char *arg_ifname;

/* One case in this (child) process; 0 when it did what it measures. */
static int run_case(const char *name) {
        if (streq(name, "nothing"))
                return 0;
        if (streq(name, "libnl"))
                return dlopen(LIBNL_SONAME, RTLD_NOW) && dlopen(LIBNL_GENL_SONAME, RTLD_NOW) ? 0 : 1;
        if (streq(name, "libnl-route"))
                return dlopen(LIBNL_SONAME, RTLD_NOW) && dlopen(LIBNL_ROUTE_SONAME, RTLD_NOW) ? 0 : 1;
        if (streq(name, "libsystemd"))
                return dlopen(LIBSYSTEMD_SONAME, RTLD_NOW) ? 0 : 1;
        NetChannels c;
        if (streq(name, "channels-get"))
                return ethtool_channels_get(arg_ifname, &c, NULL) < 0;
        return 1;
}

/* Runs a case in a child: its time and memory through a pipe. */
static int sample(const char *name, bool warm, Sample *ret) {
        int p[2];
        if (pipe(p) < 0)
                return -1;
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                NetChannels c;
                if (warm && ethtool_channels_get(arg_ifname, &c, NULL) < 0)
                        _exit(1);
                Sample s;
                (void) resident_kib(); /* stdio's own pages in, before the first reading */
                (void) now_usec();
                double kib = resident_kib(), t = now_usec();
                int k = run_case(name);
                s.usec = now_usec() - t;
                s.kib = resident_kib() - kib;
                _exit(k == 0 && write(p[1], &s, sizeof(s)) == sizeof(s) ? 0 : 1);
        }
        close(p[1]);
        ssize_t n = read(p[0], ret, sizeof(*ret));
        close(p[0]);
        int status;
        waitpid(pid, &status, 0);
        return n == sizeof(*ret) && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static void report(const char *label, const char *name, bool warm, unsigned runs) {
        double *t = calloc(runs, sizeof(double)), *m = calloc(runs, sizeof(double));
        unsigned n = 0;
        for (unsigned i = 0; t && m && i < runs; i++) {
                Sample s;
                if (sample(name, warm, &s) < 0)
                        continue;
                t[n] = s.usec;
                m[n++] = s.kib;
        }
        if (n == 0) {
                printf("%-26s failed\n", label);
        } else {
                qsort(t, n, sizeof(double), cmp_double);
                qsort(m, n, sizeof(double), cmp_double);
                printf("%-26s %8.0f µs (%.0f-%.0f)   %6.0f KiB resident (%.0f-%.0f)   %u runs\n", label, t[n / 2], t[0],
                       t[n - 1], m[n / 2], m[0], m[n - 1], n);
        }
        free(t);
        free(m);
}

int main(int argc, char **argv) {
        unsigned runs = 51;
        int i = 1;
        if (argc > 2 && streq(argv[1], "-n")) {
                runs = (unsigned) strtoul(argv[2], NULL, 10);
                i = 3;
        }
        arg_ifname = i < argc ? argv[i] : NULL;
        if (runs == 0) {
                fprintf(stderr, "usage: dlopen-cost [-n RUNS] [IFNAME]\n");
                return 2;
        }
        report("nothing", "nothing", false, runs);
        report("libnl-3 + libnl-genl-3", "libnl", false, runs);
        report("libnl-3 + libnl-route-3", "libnl-route", false, runs);
        report("libsystemd", "libsystemd", false, runs);
        if (arg_ifname) {
                report("channels GET, first", "channels-get", false, runs);
                report("channels GET, loaded", "channels-get", true, runs);
        }
        return 0;
}
