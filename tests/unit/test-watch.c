/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "strv.h"
#include "test-util.h"
#include "watch.h"

/* The Watcher (daemon/rtpartd/watch.c) on knob files in a temporary directory, driven by a real sd-event
 * loop: writes are reported with their knob ids, bursts coalesce into one report, replaced and
 * re-created files are watched again, the journal's directory, a directory of objects and the
 * safety timer fire; with the argument "netlink" (the meson test test-watch-netlink), an interface
 * brought up and a device added in a network namespace of the test's own are device events, or the
 * test skips (77) saying why it cannot (not root, no /dev/net/tun). The proc connector needs the
 * real kernel's tasks: not here. */

#define DEBOUNCE_USEC (30 * 1000ULL)

static sd_event *event;
static char *dir;
static Root *root;
static Watcher *watcher;

typedef struct Seen {
        unsigned reports; /* knobs_changed calls */
        char **knobs;     /* every knob id reported, in order, duplicates kept */
        unsigned ticks, journal;
        unsigned devices;                  /* device_added calls */
        char *device_action, *device_path; /* the last one's */
} Seen;
static Seen seen;

static void on_knobs(Watcher *w, char **knobs, void *userdata) {
        ck_assert_ptr_eq(w, watcher);
        ck_assert_ptr_eq(userdata, &seen);
        ck_assert_ptr_nonnull(knobs);
        ck_assert_ptr_nonnull(knobs[0]);
        seen.reports++;
        for (char **k = knobs; *k; k++)
                ck_assert_int_ge(strv_extend(&seen.knobs, *k), 0);
}

static void on_tick(Watcher *w, void *userdata) {
        seen.ticks++;
}

static void on_journal(Watcher *w, void *userdata) {
        seen.journal++;
}

static void on_device(Watcher *w, const char *action, const char *devpath, void *userdata) {
        seen.devices++;
        free(seen.device_action);
        free(seen.device_path);
        seen.device_action = strdup(action);
        seen.device_path = strdup(devpath);
}

static const WatchCallbacks callbacks = {
        .knobs_changed = on_knobs,
        .device_added = on_device,
        .tick = on_tick,
        .journal_changed = on_journal,
};

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* Turns the loop for `usec`. */
static void run_for(uint64_t usec) {
        uint64_t end = now_usec() + usec;
        for (uint64_t now = now_usec(); now < end; now = now_usec())
                ck_assert_int_ge(sd_event_run(event, end - now), 0);
}

/* Turns the loop until *counter exceeds `before` (at most 5 s), then for two debounce periods
 * more, so that a second, wrong report would be seen too. */
static void run_until_more(const unsigned *counter, unsigned before) {
        uint64_t end = now_usec() + 5 * 1000000ULL;
        while (*counter <= before && now_usec() < end)
                ck_assert_int_ge(sd_event_run(event, 100 * 1000), 0);
        ck_assert_msg(*counter > before, "no callback within 5 s");
        run_for(2 * DEBOUNCE_USEC);
}

static char *path_of(const char *rel) {
        char *p;
        ck_assert(asprintf(&p, "%s/%s", dir, rel) >= 0);
        return p;
}

/* One write(2) into the existing file, as the kernel's knob files are written. */
static void write_value(const char *rel, const char *value) {
        _cleanup_free_ char *p = path_of(rel);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, value, strlen(value)), (ssize_t) strlen(value));
}

/* A new file with the same name, renamed over the old one (a new inode). */
static void replace_file(const char *rel, const char *value) {
        _cleanup_free_ char *p = path_of(rel), *tmp = NULL;
        ck_assert(asprintf(&tmp, "%s.new", p) >= 0);
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, value, strlen(value)), (ssize_t) strlen(value));
        ck_assert_int_eq(rename(tmp, p), 0);
}

static void remove_file(const char *rel) {
        _cleanup_free_ char *p = path_of(rel);
        ck_assert_int_eq(unlink(p), 0);
}

static void create_file(const char *rel, const char *value) {
        _cleanup_free_ char *p = path_of(rel);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, value, strlen(value)), (ssize_t) strlen(value));
}

static bool seen_knob(const char *knob) {
        return strv_contains(seen.knobs, knob);
}

static size_t count_knob(const char *knob) {
        size_t n = 0;
        for (char **k = seen.knobs; k && *k; k++)
                n += streq(*k, knob);
        return n;
}

/* Turns the loop until the next report, which must be one and hold `knob` (and `n_knobs` ids). */
static void expect_report(const char *knob, size_t n_knobs) {
        unsigned before = seen.reports;
        size_t n = strv_length(seen.knobs);
        run_until_more(&seen.reports, before);
        ck_assert_uint_eq(seen.reports, before + 1);
        ck_assert_uint_eq(strv_length(seen.knobs), n + n_knobs);
        ck_assert(strv_contains(seen.knobs + n, knob));
}

static void seen_reset(void) {
        strv_free(seen.knobs);
        free(seen.device_action);
        free(seen.device_path);
        seen = (Seen) {};
}

static const WatchFile files[] = {
        { "sysctl/vm.stat_interval", "proc/sys/vm/stat_interval" },
        { "irq/41/affinity", "proc/irq/41/smp_affinity_list" },
        { "irq/41/affinity", "proc/irq/41/smp_affinity" },
        { "irq/default_affinity", "proc/irq/default_smp_affinity" },
        /* Two knobs behind one file. */
        { "sysfs/devices/virtual/workqueue/cpumask", "sys/devices/virtual/workqueue/cpumask" },
        { "sysfs/workqueue/alias", "sys/devices/virtual/workqueue/cpumask" },
};

static void setup(void) {
        dir = test_tmpdir();
        test_write(dir, "proc/sys/vm/stat_interval", "1\n");
        test_write(dir, "proc/irq/41/smp_affinity_list", "0-3\n");
        test_write(dir, "proc/irq/41/smp_affinity", "f\n");
        test_write(dir, "proc/irq/default_smp_affinity", "f\n");
        test_write(dir, "sys/devices/virtual/workqueue/cpumask", "f\n");
        test_write(dir, "var/lib/rtpart/.keep", "");
        ck_assert_int_ge(root_new(dir, &root), 0);
        ck_assert_int_ge(sd_event_new(&event), 0);
        ck_assert_int_ge(watcher_new(event, root, &callbacks, &seen, &watcher), 0);
        watcher_set_debounce(watcher, DEBOUNCE_USEC);
        seen_reset();
}

static void teardown(void) {
        watcher = watcher_free(watcher);
        event = sd_event_unref(event);
        root = root_free(root);
        test_rmtree(dir);
        free(dir);
        dir = NULL;
        seen_reset();
}

static void watch_all(void) {
        size_t missing = SIZE_MAX;
        /* Five paths, one of them holding two knobs. */
        ck_assert_int_eq(watcher_set_files(watcher, files, ELEMENTSOF(files), &missing), 5);
        ck_assert_uint_eq(missing, 0);
        ck_assert_uint_eq(watcher_n_files(watcher), 5);
}

START_TEST(test_write_is_reported) {
        watch_all();
        write_value("proc/sys/vm/stat_interval", "10\n");
        expect_report("sysctl/vm.stat_interval", 1);

        /* Either file of an IRQ knob names the knob. */
        write_value("proc/irq/41/smp_affinity", "3\n");
        expect_report("irq/41/affinity", 1);

        /* A file shared by two knobs reports both. */
        write_value("sys/devices/virtual/workqueue/cpumask", "3\n");
        expect_report("sysfs/devices/virtual/workqueue/cpumask", 2);
        ck_assert(seen_knob("sysfs/workqueue/alias"));

        /* Nothing written, nothing reported. */
        run_for(3 * DEBOUNCE_USEC);
        ck_assert_uint_eq(seen.reports, 3);
}
END_TEST

START_TEST(test_burst_coalesces) {
        watch_all();
        /* Many writes to one file, and to both files of one knob, within the debounce: one report,
         * each knob once. */
        for (unsigned i = 0; i < 50; i++) {
                char v[16];
                snprintf(v, sizeof(v), "%u\n", i);
                write_value("proc/sys/vm/stat_interval", v);
                write_value(i % 2 ? "proc/irq/41/smp_affinity" : "proc/irq/41/smp_affinity_list", v);
        }
        run_until_more(&seen.reports, 0);
        ck_assert_uint_eq(seen.reports, 1);
        ck_assert_uint_eq(count_knob("sysctl/vm.stat_interval"), 1);
        ck_assert_uint_eq(count_knob("irq/41/affinity"), 1);
        ck_assert_uint_eq(strv_length(seen.knobs), 2);
        ck_assert(!seen_knob("irq/default_affinity"));

        /* A write after the report is a new report. */
        write_value("proc/irq/default_smp_affinity", "3\n");
        expect_report("irq/default_affinity", 1);
}
END_TEST

START_TEST(test_flush_drops_own_writes) {
        watch_all();
        /* The daemon's own writes, followed by a flush, are not drift. */
        write_value("proc/sys/vm/stat_interval", "7\n");
        write_value("proc/irq/default_smp_affinity", "7\n");
        watcher_flush(watcher);
        run_for(3 * DEBOUNCE_USEC);
        ck_assert_uint_eq(seen.reports, 0);

        /* The watches stay: a later write is reported. */
        write_value("proc/sys/vm/stat_interval", "8\n");
        expect_report("sysctl/vm.stat_interval", 1);
}
END_TEST

START_TEST(test_replaced_file_is_watched_again) {
        watch_all();
        /* Renamed over: reported, and the watch moves to the new inode. */
        replace_file("proc/sys/vm/stat_interval", "20\n");
        expect_report("sysctl/vm.stat_interval", 1);
        ck_assert_uint_eq(watcher_n_files(watcher), 5);

        write_value("proc/sys/vm/stat_interval", "21\n");
        expect_report("sysctl/vm.stat_interval", 1);
}
END_TEST

START_TEST(test_removed_and_recreated) {
        watch_all();
        /* Removed: reported, and the file is no longer watched (the timer looks at it). */
        remove_file("proc/irq/default_smp_affinity");
        expect_report("irq/default_affinity", 1);
        ck_assert_uint_eq(watcher_n_files(watcher), 4);

        /* Re-created (a sysfs object that comes back): the next watched set picks it up. */
        create_file("proc/irq/default_smp_affinity", "f\n");
        watch_all();
        write_value("proc/irq/default_smp_affinity", "3\n");
        expect_report("irq/default_affinity", 1);

        /* Removed and re-created within one debounce: the watcher follows the new file itself. */
        remove_file("proc/irq/default_smp_affinity");
        create_file("proc/irq/default_smp_affinity", "f\n");
        expect_report("irq/default_affinity", 1);
        ck_assert_uint_eq(watcher_n_files(watcher), 5);
        write_value("proc/irq/default_smp_affinity", "1\n");
        expect_report("irq/default_affinity", 1);
}
END_TEST

START_TEST(test_missing_and_replaced_set) {
        static const WatchFile some[] = {
                { "sysctl/vm.stat_interval", "proc/sys/vm/stat_interval" },
                { "sysctl/kernel.timer_migration", "proc/sys/kernel/timer_migration" },
        };
        size_t missing = 0;

        watch_all();
        /* A new set replaces the old: the dropped files are no longer reported, a missing one is
         * counted. */
        ck_assert_int_eq(watcher_set_files(watcher, some, ELEMENTSOF(some), &missing), 1);
        ck_assert_uint_eq(missing, 1);
        ck_assert_uint_eq(watcher_n_files(watcher), 1);
        write_value("proc/irq/default_smp_affinity", "3\n");
        write_value("sys/devices/virtual/workqueue/cpumask", "3\n");
        run_for(3 * DEBOUNCE_USEC);
        ck_assert_uint_eq(seen.reports, 0);

        write_value("proc/sys/vm/stat_interval", "3\n");
        expect_report("sysctl/vm.stat_interval", 1);

        /* An empty set watches nothing. */
        ck_assert_int_eq(watcher_set_files(watcher, NULL, 0, &missing), 0);
        ck_assert_uint_eq(missing, 0);
        ck_assert_uint_eq(watcher_n_files(watcher), 0);
}
END_TEST

START_TEST(test_timer) {
        ck_assert_int_eq(watcher_set_interval(watcher, 0), -EINVAL);
        ck_assert_int_ge(watcher_set_interval(watcher, 20 * 1000), 0);
        ck_assert_uint_eq(watcher_get_interval(watcher), 20 * 1000);
        /* The timer has an accuracy of a second: three ticks arrive within a few seconds. */
        uint64_t end = now_usec() + 10 * 1000000ULL;
        while (seen.ticks < 3 && now_usec() < end)
                ck_assert_int_ge(sd_event_run(event, 100 * 1000), 0);
        ck_assert_uint_ge(seen.ticks, 3);
        ck_assert_uint_eq(seen.reports, 0);
}
END_TEST

START_TEST(test_journal_directory) {
        ck_assert_int_eq(watcher_watch_journal(watcher, root, "var/lib/rtpart"), 0);
        /* Again: nothing new. */
        ck_assert_int_eq(watcher_watch_journal(watcher, root, "var/lib/rtpart"), 0);

        /* Another file in the directory: not the journal. */
        create_file("var/lib/rtpart/other", "x");
        run_for(3 * DEBOUNCE_USEC);
        ck_assert_uint_eq(seen.journal, 0);

        /* state.json written in place, and replaced atomically (temp file, rename). */
        create_file("var/lib/rtpart/state.json", "{}");
        run_until_more(&seen.journal, 0);
        unsigned n = seen.journal;
        create_file("var/lib/rtpart/state.json.tmp", "{}");
        _cleanup_free_ char *tmp = path_of("var/lib/rtpart/state.json.tmp"),
                            *state = path_of("var/lib/rtpart/state.json");
        ck_assert_int_eq(rename(tmp, state), 0);
        run_until_more(&seen.journal, n);
        n = seen.journal;

        /* Removed. */
        remove_file("var/lib/rtpart/state.json");
        run_until_more(&seen.journal, n);
        ck_assert_uint_eq(seen.reports, 0);

        /* A directory that does not exist. */
        Watcher *other = NULL;
        ck_assert_int_ge(watcher_new(event, root, &callbacks, &seen, &other), 0);
        ck_assert_int_eq(watcher_watch_journal(other, root, "var/lib/nowhere"), -ENOENT);
        watcher_free(other);
}
END_TEST

START_TEST(test_objects_directory) {
        ck_assert_int_eq(watcher_watch_objects(watcher, "proc/irq"), 0);
        /* A file written in an object's directory is not a new object. */
        write_value("proc/irq/41/smp_affinity_list", "0-1\n");
        run_for(3 * DEBOUNCE_USEC);
        ck_assert_uint_eq(seen.devices, 0);

        /* Three new IRQs made back to back: one call, naming the last. */
        _cleanup_free_ char *a = path_of("proc/irq/51"), *b = path_of("proc/irq/52"), *c = path_of("proc/irq/53");
        ck_assert_int_eq(mkdir(a, 0755), 0);
        ck_assert_int_eq(mkdir(b, 0755), 0);
        ck_assert_int_eq(mkdir(c, 0755), 0);
        run_until_more(&seen.devices, 0);
        ck_assert_uint_eq(seen.devices, 1);
        ck_assert_str_eq(seen.device_action, "created");
        ck_assert_str_eq(seen.device_path, "53");

        /* A missing directory. */
        Watcher *other = NULL;
        ck_assert_int_ge(watcher_new(event, root, &callbacks, &seen, &other), 0);
        ck_assert_int_eq(watcher_watch_objects(other, "proc/nowhere"), -ENOENT);
        watcher_free(other);
}
END_TEST

/* An interface brought up: its driver has requested its IRQs. In a network namespace of this
 * test's own (the test runs in a child process), whose loopback is brought up. */
START_TEST(test_link_up) {
        ck_assert_msg(unshare(CLONE_NEWNET) >= 0, "cannot make a network namespace: %s", strerror(errno));
        Watcher *w = NULL;
        ck_assert_int_ge(watcher_new(event, root, &callbacks, &seen, &w), 0);
        ck_assert_int_eq(watcher_enable_uevents(w), 0);
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        struct ifreq ifr = {};
        strcpy(ifr.ifr_name, "lo");
        ck_assert_int_eq(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
        ck_assert(!(ifr.ifr_flags & IFF_UP));
        ifr.ifr_flags |= IFF_UP;
        ck_assert_int_eq(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
        run_until_more(&seen.devices, 0);
        ck_assert_str_eq(seen.device_action, "up");
        ck_assert_str_eq(seen.device_path, "ifindex 1");
        watcher_free(w);
}
END_TEST

/* A device added: the kernel's uevent, read off the netlink socket. The device is a tun interface
 * of this test's own network namespace (uevents of a network device go to its namespace), gone
 * with the fd and the namespace. */
START_TEST(test_device_added) {
        ck_assert_msg(unshare(CLONE_NEWNET) >= 0, "cannot make a network namespace: %s", strerror(errno));
        _cleanup_close_ int tun = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
        ck_assert_msg(tun >= 0, "cannot open /dev/net/tun: %s", strerror(errno));
        Watcher *w = NULL;
        ck_assert_int_ge(watcher_new(event, root, &callbacks, &seen, &w), 0);
        ck_assert_int_eq(watcher_enable_uevents(w), 0);
        struct ifreq ifr = { .ifr_flags = IFF_TUN | IFF_NO_PI };
        strcpy(ifr.ifr_name, "rtpartt%d");
        ck_assert_int_eq(ioctl(tun, TUNSETIFF, &ifr), 0);
        run_until_more(&seen.devices, 0);
        ck_assert_uint_eq(seen.devices, 1); /* the device and its queues: one call */
        ck_assert_str_eq(seen.device_action, "add");
        _cleanup_free_ char *netdev = NULL;
        ck_assert_int_ge(asprintf(&netdev, "/devices/virtual/net/%s", ifr.ifr_name), 0);
        ck_assert_msg(strncmp(seen.device_path, netdev, strlen(netdev)) == 0, "%s is not under %s", seen.device_path,
                      netdev);
        watcher_free(w);
}
END_TEST

/* Why the netlink cases cannot run here (NULL: they can): they need a network namespace of their
 * own (root) and /dev/net/tun. Tried in a child, which the namespace dies with. */
static char *netlink_missing(void) {
        pid_t pid = fork();
        if (pid == 0) {
                if (unshare(CLONE_NEWNET) < 0)
                        _exit(errno < 100 ? 100 + errno : 100);
                _exit(open("/dev/net/tun", O_RDWR | O_CLOEXEC) < 0 ? 1 : 0);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid)
                return strdup("cannot start a process to try");
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
        char *why = NULL;
        if (code == 0)
                return NULL;
        if (code >= 100)
                (void) asprintf(&why, "cannot make a network namespace (%s): run as root", strerror(code - 100));
        else
                (void) asprintf(&why, "no /dev/net/tun to make a device with");
        return why ?: strdup("cannot tell");
}

static Suite *watch_suite(bool netlink) {
        Suite *s = suite_create("watch");
        if (netlink) {
                /* Kernel events (test-watch-netlink): each case in a network namespace of its own. */
                TCase *tn = tcase_create("netlink");
                tcase_add_checked_fixture(tn, setup, teardown);
                tcase_set_timeout(tn, 60);
                tcase_add_test(tn, test_link_up);
                tcase_add_test(tn, test_device_added);
                suite_add_tcase(s, tn);
                return s;
        }
        TCase *tc = tcase_create("inotify");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_write_is_reported);
        tcase_add_test(tc, test_burst_coalesces);
        tcase_add_test(tc, test_flush_drops_own_writes);
        tcase_add_test(tc, test_replaced_file_is_watched_again);
        tcase_add_test(tc, test_removed_and_recreated);
        tcase_add_test(tc, test_missing_and_replaced_set);
        tcase_add_test(tc, test_timer);
        tcase_add_test(tc, test_journal_directory);
        tcase_add_test(tc, test_objects_directory);
        suite_add_tcase(s, tc);
        return s;
}

/* "netlink": only the cases of kernel events, which skip (77) saying why where they cannot run. */
int main(int argc, char **argv) {
        bool netlink = argc > 1 && streq(argv[1], "netlink");
        if (netlink) {
                _cleanup_free_ char *why = netlink_missing();
                if (why) {
                        printf("SKIP: the uevent and link watchers are not tested: %s\n", why);
                        return 77;
                }
        }
        return test_run(watch_suite(netlink));
}
