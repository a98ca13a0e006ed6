/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "config.h"
#include "manager-metrics.h"
#include "manager.h"
#include "metrics.h"
#include "root.h"
#if __has_include("pm-qos.h")
#include "pm-qos.h"
#define HAVE_PM_QOS_HOLDER 1
#endif

#define VARLINK_SOCKET "run/rtpartd/org.rtpart.Manager"

static const char *arg_root = "/";
static const char *arg_state_dir = NULL;
static const char *arg_varlink_socket = NULL;
static bool arg_dbus = true;
static uint64_t arg_interval_usec = 0;
static uint64_t arg_debounce_usec = 0;
static const char *arg_metrics_dir = NULL;
static bool arg_metrics = true;

static void help(void) {
        printf("Usage: rtpartd [OPTIONS]\n"
               "\n"
               "Keeps a realtime (KVM) host partitioned: re-applies the active rtpart profile at\n"
               "start, watches every value it set and reports or corrects drift, over D-Bus\n"
               "(org.rtpart.Manager1) and varlink (org.rtpart.Manager).\n"
               "\n"
               "Options:\n"
               "  -r, --root=DIR            Manage the host tree under DIR instead of /\n"
               "      --state-dir=DIR       Keep the journal in DIR instead of /var/lib/rtpart\n"
               "                            under the root\n"
               "      --no-dbus             Do not connect to the system bus\n"
               "      --varlink-socket=PATH Listen on PATH instead of /run/rtpartd/org.rtpart.Manager\n"
               "                            under the root\n"
               "      --interval=SECONDS    Safety re-check period (default: the profile's\n"
               "                            drift.interval_s, else 60)\n"
               "      --debounce=MSEC       Coalesce knob file events for MSEC (default 5)\n"
               "      --metrics-dir=DIR     Write Prometheus metrics (rtpart.prom) into DIR instead of\n"
               "                            /var/lib/prometheus/node-exporter under the root\n"
               "      --no-metrics          Write no metrics\n"
               "  -v, --verbose             Log debug messages\n"
               "  -h, --help                Show this help\n"
               "      --version             Show the version\n"
               "\n"
               "See rtpartd(8) and org.rtpart.Manager1(5).\n");
}

static int parse_seconds(const char *s, uint64_t max, uint64_t *ret) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || *end || v == 0 || v > max || *s == '-')
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_argv(int argc, char **argv) {
        enum {
                ARG_STATE_DIR = 0x100,
                ARG_NO_DBUS,
                ARG_VARLINK,
                ARG_INTERVAL,
                ARG_DEBOUNCE,
                ARG_VERSION,
                ARG_METRICS_DIR,
                ARG_NO_METRICS
        };
        static const struct option options[] = { { "root", required_argument, NULL, 'r' },
                                                 { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                                                 { "no-dbus", no_argument, NULL, ARG_NO_DBUS },
                                                 { "varlink-socket", required_argument, NULL, ARG_VARLINK },
                                                 { "interval", required_argument, NULL, ARG_INTERVAL },
                                                 { "debounce", required_argument, NULL, ARG_DEBOUNCE },
                                                 { "metrics-dir", required_argument, NULL, ARG_METRICS_DIR },
                                                 { "no-metrics", no_argument, NULL, ARG_NO_METRICS },
                                                 { "verbose", no_argument, NULL, 'v' },
                                                 { "help", no_argument, NULL, 'h' },
                                                 { "version", no_argument, NULL, ARG_VERSION },
                                                 {} };
        uint64_t v;
        int c;

        while ((c = getopt_long(argc, argv, "r:vh", options, NULL)) >= 0)
                switch (c) {
                case 'r':
                        arg_root = optarg;
                        break;
                case ARG_STATE_DIR:
                        arg_state_dir = optarg;
                        break;
                case ARG_NO_DBUS:
                        arg_dbus = false;
                        break;
                case ARG_VARLINK:
                        if (optarg[0] != '/') {
                                log_error("--varlink-socket needs an absolute path, not '%s'", optarg);
                                return -EINVAL;
                        }
                        arg_varlink_socket = optarg;
                        break;
                case ARG_INTERVAL:
                        if (parse_seconds(optarg, 86400, &v) < 0) {
                                log_error("--interval takes whole seconds from 1 to 86400, not '%s'", optarg);
                                return -EINVAL;
                        }
                        arg_interval_usec = v * 1000000ULL;
                        break;
                case ARG_DEBOUNCE:
                        if (parse_seconds(optarg, 10000, &v) < 0) {
                                log_error("--debounce takes milliseconds from 1 to 10000, not '%s'", optarg);
                                return -EINVAL;
                        }
                        arg_debounce_usec = v * 1000ULL;
                        break;
                case ARG_METRICS_DIR:
                        if (optarg[0] != '/') {
                                log_error("--metrics-dir needs an absolute path, not '%s'", optarg);
                                return -EINVAL;
                        }
                        arg_metrics_dir = optarg;
                        arg_metrics = true;
                        break;
                case ARG_NO_METRICS:
                        arg_metrics = false;
                        break;
                case 'v':
                        log_max_level = LOG_DEBUG;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("rtpartd %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                log_error("rtpartd takes no arguments; try 'rtpartd --help'");
                return -EINVAL;
        }
        return 1;
}

/* One watch and one pin per knob file: 8192 IRQs are 16384 files, beyond the default soft limit. */
static void raise_nofile(void) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) >= 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

static int setup_varlink(sd_event *event, Root *root, Manager *m, VarlinkServer **ret) {
        _cleanup_(varlink_server_freep) VarlinkServer *s = NULL;
        _cleanup_free_ char *path = NULL;
        int r, n;

        r = varlink_server_new(event, &s);
        if (r < 0)
                return r;
        r = varlink_server_set_info(s, "rtpart", "rtpartd", PACKAGE_VERSION, "man:rtpartd(8)");
        if (r < 0)
                return r;
        r = manager_varlink_attach(m, s);
        if (r < 0)
                return r;

        /* Socket activation (rtpartd.socket) first. */
        n = arg_varlink_socket ? 0 : sd_listen_fds(/* unset_environment= */ true);
        for (int fd = SD_LISTEN_FDS_START; n > 0 && fd < SD_LISTEN_FDS_START + n; fd++)
                if (sd_is_socket_unix(fd, SOCK_STREAM, /* listening= */ 1, NULL, 0) > 0) {
                        r = varlink_server_listen_fd(s, fd);
                        if (r < 0)
                                return log_error_errno(r, "Cannot use the varlink socket systemd passed: %m");
                        log_info("Listening for varlink on the socket systemd passed");
                        *ret = TAKE_PTR(s);
                        return 0;
                }

        if (arg_varlink_socket)
                path = strdup(arg_varlink_socket);
        else {
                r = root_mkdir_p(root, "run/rtpartd", 0755);
                if (r < 0)
                        return log_error_errno(r, "Cannot create %s/run/rtpartd: %m",
                                               root_is_system(root) ? "" : root->path);
                if (root_is_system(root))
                        path = strdup("/" VARLINK_SOCKET);
                else if (asprintf(&path, "%s/%s", root->path, VARLINK_SOCKET) < 0)
                        path = NULL;
        }
        if (!path)
                return -ENOMEM;
        /* Anyone may connect: changes are checked against the peer's uid. */
        r = varlink_server_listen_address(s, path, 0666);
        if (r < 0)
                return log_error_errno(r, "Cannot listen on %s: %m", path);
        log_info("Listening for varlink on %s", path);
        *ret = TAKE_PTR(s);
        return 0;
}

/* The textfile directory of node_exporter: --metrics-dir (an absolute path of this system's, resolved
 * from "/"), else Debian's under the root; written through the root either way, so that under
 * --root a directory that is a symlink stays inside the tree. */
static int setup_metrics(Manager *m, Root *root, Root **ret_root, ManagerMetrics **ret) {
        _cleanup_(root_freep) Root *system = NULL;
        int r;

        if (arg_metrics_dir) {
                r = root_new("/", &system);
                if (r < 0)
                        return log_error_errno(r, "Cannot open / for the metrics: %m");
        }
        const char *dir = arg_metrics_dir ? arg_metrics_dir + strspn(arg_metrics_dir, "/") : METRICS_DIR_DEFAULT;
        r = manager_metrics_attach(m, system ?: root, *dir ? dir : ".", ret);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the metrics: %m");
        *ret_root = TAKE_PTR(system);
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        log_info("SIGHUP: re-reading the journal, checking every knob, placing new IRQs and kernel threads");
        manager_reload(userdata);
        return 0;
}

static int run(int argc, char **argv) {
        _cleanup_(root_freep) Root *root = NULL, *metrics_root = NULL;
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(varlink_server_freep) VarlinkServer *varlink = NULL;
        _cleanup_(manager_metrics_freep) ManagerMetrics *metrics = NULL;
        int r;

        log_setup_daemon();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;

        raise_nofile();
        r = root_new(arg_root, &root);
        if (r < 0)
                return log_error_errno(r, "Cannot open the root directory %s: %m", arg_root), 1;
        if (arg_state_dir) {
                r = root_set_state_dir(root, arg_state_dir);
                if (r < 0)
                        return log_error_errno(r, "Cannot use the state directory %s: %m", arg_state_dir), 1;
        }

        r = sd_event_default(&event);
        if (r < 0)
                return log_error_errno(r, "Cannot allocate the event loop: %m"), 1;
        r = sd_event_set_signal_exit(event, true);
        if (r < 0)
                return log_error_errno(r, "Cannot install the SIGTERM/SIGINT handlers: %m"), 1;
        (void) sd_event_set_watchdog(event, true);

        ManagerOptions opts = {
                .interval_usec = arg_interval_usec,
                .debounce_usec = arg_debounce_usec,
                .pin = true,
                .uevents = true,
                .proc_connector = true,
        };
        r = manager_new(event, root, &opts, &m);
        if (r < 0)
                return log_error_errno(r, "Cannot set up: %m"), 1;
        r = sd_event_add_signal(event, NULL, SIGHUP | SD_EVENT_SIGNAL_PROCMASK, on_sighup, m);
        if (r < 0)
                (void) log_warning_errno(r, "Cannot handle SIGHUP: %m");

        /* Objects first, then the name, then READY: a caller that sees the name finds the object. */
        if (arg_dbus) {
                r = sd_bus_open_system(&bus);
                if (r < 0)
                        return log_error_errno(r, "Cannot connect to the system bus: %m (use --no-dbus without one)"),
                               1;
                r = manager_dbus_attach(m, bus);
                if (r < 0)
                        return log_error_errno(r, "Cannot register %s: %m", MANAGER_DBUS_PATH), 1;
                r = sd_bus_attach_event(bus, event, SD_EVENT_PRIORITY_NORMAL);
                if (r < 0)
                        return log_error_errno(r, "Cannot attach the bus to the event loop: %m"), 1;
                (void) sd_bus_set_exit_on_disconnect(bus, true);
        }
        r = setup_varlink(event, root, m, &varlink);
        if (r < 0)
                return 1;
        if (arg_metrics && setup_metrics(m, root, &metrics_root, &metrics) < 0)
                return 1;

#ifdef HAVE_PM_QOS_HOLDER
        /* The PM QoS request of cpu/pm_qos lives as long as the process that holds it: this one. */
        cpu_pm_qos_set_holder(true);
#endif
        r = manager_startup(m);
        if (r < 0)
                return 1;
        if (metrics)
                manager_metrics_flush(metrics);

        if (bus) {
                r = sd_bus_request_name(bus, MANAGER_DBUS_NAME, 0);
                if (r < 0)
                        return log_error_errno(r,
                                               "Cannot own the name %s: %m (is another rtpartd running, and does the "
                                               "D-Bus policy org.rtpart.Manager1.conf allow root to own it?)",
                                               MANAGER_DBUS_NAME),
                               1;
        }
        (void) sd_notify(0, "READY=1");
        log_info("rtpartd %s ready%s", PACKAGE_VERSION, bus ? " on the system bus" : "");

        r = sd_event_loop(event);
        (void) sd_notify(0, "STOPPING=1\nSTATUS=Shutting down");
        if (r < 0)
                return log_error_errno(r, "The event loop failed: %m"), 1;
        log_info("Exiting");
        return 0;
}

/* Buffers of 64 KiB and more (state.json's text, /proc/interrupts' read buffer, an Apply's answer)
 * get their own mappings and go back to the kernel when freed. A fixed threshold also keeps glibc
 * from raising it to the largest buffer freed so far (1 MiB after the first /proc/interrupts),
 * which would leave every later such buffer in the heap, resident after its use. */
static void tune_malloc(void) {
        (void) mallopt(M_MMAP_THRESHOLD, 64 * 1024);
        (void) mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

int main(int argc, char **argv) {
        tune_malloc();
        return run(argc, argv);
}
