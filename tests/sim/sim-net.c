/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim-internal.h"
#include "sim-kernel.h"
#include "strv.h"

/* A NIC's channels, as ethtool's generic netlink family would give and take them (test code).
 *
 * No sysfs file holds a NIC's channels: the simulator keeps them in a file of its own in the
 * interface's sysfs directory, sys/class/net/IF/sim-channels, which no kernel has (mkhost.py writes
 * it for every NIC of a fixture). One line per kind, its count and its maximum, and optionally a
 * refusal, for a driver that takes no other count:
 *
 *   rx 0 0
 *   tx 0 0
 *   other 1 1
 *   combined 16 63
 *   refuse EOPNOTSUPP the driver has no set_channels
 *   queue-irqs 25 26 27 28
 *
 * A NIC without the file has no channels (-EOPNOTSUPP, as a driver without get_channels); a name
 * without sys/class/net/NAME is -ENODEV. A set is checked as the kernel's ethnl_set_channels()
 * checks it (a count above its maximum, no receive or no transmit channel: -EINVAL with the
 * kernel's words), then, as a driver's set_channels does through netif_set_real_num_rx_queues()
 * and _tx_queues(), the queues follow: queues/rx-N for N < combined + rx and tx-N for
 * N < combined + tx, the new ones with the kernel's defaults (empty RPS and XPS masks, no flow
 * table), the others gone with their files. With queue-irqs (the IRQs of queue pair 0, input then
 * output, then of pair 1, …), the driver also places its queue pairs' IRQs at every set, as
 * virtio_net's virtnet_set_affinity() does: the online CPUs split in as many groups as there are
 * combined channels, each pair's IRQs on its group (one channel: every online CPU), whatever
 * anyone set before. What a driver does beyond that (virtio_net setting every queue's XPS, IRQs
 * requested again) is not simulated. */

typedef struct SimChannels {
        NetChannels c;
        int refuse;   /* errno of a set, 0 */
        char *reason; /* its words, NULL */
        unsigned queue_irqs[64];
        size_t n_queue_irqs;
} SimChannels;

static char *channels_file(const char *ifname) {
        char *p;
        return asprintf(&p, "sys/class/net/%s/sim-channels", ifname) < 0 ? NULL : p;
}

static int parse_refusal(const char *s, SimChannels *ret) {
        static const struct {
                const char *name;
                int error;
        } names[] = { { "EOPNOTSUPP", EOPNOTSUPP }, { "EINVAL", EINVAL }, { "EBUSY", EBUSY }, { "EPERM", EPERM } };
        size_t n = strcspn(s, " ");
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strlen(names[i].name) == n && strncmp(s, names[i].name, n) == 0) {
                        ret->refuse = names[i].error;
                        if (s[n] == ' ' && s[n + 1] && !(ret->reason = strdup(s + n + 1)))
                                return -ENOMEM;
                        return 0;
                }
        return -EINVAL;
}

static int parse_queue_irqs(const char *s, SimChannels *ret) {
        for (const char *p = s; *p;) {
                char *end;
                unsigned long v = strtoul(p, &end, 10);
                if (end == p || ret->n_queue_irqs >= ELEMENTSOF(ret->queue_irqs))
                        return -EINVAL;
                ret->queue_irqs[ret->n_queue_irqs++] = (unsigned) v;
                p = end + strspn(end, " ");
        }
        return 0;
}

static int channels_load(Root *r, const char *ifname, SimChannels *ret) {
        _cleanup_free_ char *path = channels_file(ifname), *dir = NULL, *text = NULL;
        if (!path || asprintf(&dir, "sys/class/net/%s", ifname) < 0)
                return -ENOMEM;
        if (!root_is_dir(r, dir))
                return -ENODEV;
        int k = root_read_file(r, path, &text, NULL);
        if (k == -ENOENT)
                return -EOPNOTSUPP;
        if (k < 0)
                return k;
        SimChannels s = {};
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                char kind[16];
                unsigned count, max;
                if (startswith(line, "refuse ")) {
                        k = parse_refusal(line + strlen("refuse "), &s);
                } else if (startswith(line, "queue-irqs ")) {
                        k = parse_queue_irqs(line + strlen("queue-irqs "), &s);
                } else if (sscanf(line, "%15s %u %u", kind, &count, &max) == 3) {
                        uint32_t *f = streq(kind, "rx")   ? &s.c.rx
                                : streq(kind, "tx")       ? &s.c.tx
                                : streq(kind, "other")    ? &s.c.other
                                : streq(kind, "combined") ? &s.c.combined
                                                          : NULL;
                        if (f) {
                                f[0] = count;
                                f[&s.c.max_rx - &s.c.rx] = max; /* the maxima follow the counts */
                        }
                        k = f ? 0 : -EINVAL;
                } else
                        k = -EINVAL;
                if (k < 0) {
                        free(s.reason);
                        return k == -ENOMEM ? k : -EBADMSG;
                }
        }
        *ret = s;
        return 0;
}

int sim_channels_get(Root *r, const char *ifname, NetChannels *ret, char **ret_reason) {
        SimChannels s;
        int k = channels_load(r, ifname, &s);
        if (k < 0)
                return k;
        free(s.reason);
        *ret = s.c;
        return 0;
}

static bool endswith_cpus(const char *file) {
        size_t n = strlen(file);
        return n >= 5 && streq(file + n - 5, "_cpus");
}

/* A queue directory with the files a kernel makes for it, at their defaults (an empty mask, 0). */
static int queue_make(Root *r, const char *ifname, const char *kind, unsigned q, const char *zero) {
        _cleanup_free_ char *dir = NULL;
        if (asprintf(&dir, "sys/class/net/%s/queues/%s-%u", ifname, kind, q) < 0)
                return -ENOMEM;
        int k = root_mkdir_p(r, dir, 0755);
        if (k < 0)
                return k;
        static const struct {
                bool rx;
                const char *file;
                mode_t mode;
        } files[] = {
                { true, "rps_cpus", 0644 },    { true, "rps_flow_cnt", 0644 }, { false, "tx_maxrate", 0644 },
                { false, "tx_timeout", 0444 }, { false, "xps_cpus", 0644 },
        };
        bool is_rx = streq(kind, "rx");
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                if (files[i].rx != is_rx)
                        continue;
                const char *value = endswith_cpus(files[i].file) ? zero : "0";
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%s", dir, files[i].file) < 0)
                        return -ENOMEM;
                /* A tree's files carry the modes its maker gave them: the new queue takes queue 0's. */
                _cleanup_free_ char *first = NULL;
                struct stat st;
                if (asprintf(&first, "sys/class/net/%s/queues/%s-0/%s", ifname, kind, files[i].file) < 0)
                        return -ENOMEM;
                mode_t mode = root_stat(r, first, &st) >= 0 ? st.st_mode & 07777 : files[i].mode;
                _cleanup_close_ int fd = root_open(r, p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode);
                if (fd >= 0 && fchmod(fd, mode) < 0)
                        return -errno;
                if (fd < 0)
                        return fd;
                if (dprintf(fd, "%s\n", value) < 0)
                        return -EIO;
        }
        return 0;
}

/* A queue directory and its files (flat: the fixtures make no subdirectories in queues). */
static int queue_remove(Root *r, const char *ifname, const char *kind, unsigned q) {
        _cleanup_free_ char *dir = NULL;
        if (asprintf(&dir, "sys/class/net/%s/queues/%s-%u", ifname, kind, q) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = root_open(r, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
        if (fd < 0)
                return fd == -ENOENT ? 0 : fd;
        DIR *d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -EBADF;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' || (de->d_name[1] && strcmp(de->d_name, "..")))
                        (void) unlinkat(dirfd(d), de->d_name, 0);
        closedir(d);
        return root_file_rmdir(r, dir);
}

/* The queues of one kind follow a count: from `from` queues to `to`. */
static int queues_follow(Root *r, const char *ifname, const char *kind, unsigned from, unsigned to, const char *zero) {
        int k = 0;
        for (unsigned q = to; q < from && k >= 0; q++)
                k = queue_remove(r, ifname, kind, q);
        for (unsigned q = from; q < to && k >= 0; q++)
                k = queue_make(r, ifname, kind, q, zero);
        return k;
}

/* An empty mask as wide as the kernel prints one for this host's CPUs. */
static char *zero_mask(Root *r) {
        CpuSet possible, none = {};
        if (root_read_cpu_list(r, "sys/devices/system/cpu/possible", &possible) < 0)
                return NULL;
        int last = cpu_set_last(&possible);
        return cpu_set_format_mask(&none, last < 0 ? 1 : (unsigned) last + 1);
}

/* virtnet_set_affinity(): `pairs` queue pairs over the online CPUs, the first ones a CPU more when
 * they do not divide evenly; each pair's IRQs set to its group. */
static int queue_irqs_spread(Root *r, const SimChannels *s, unsigned pairs) {
        CpuSet online;
        int k = root_read_cpu_list(r, "sys/devices/system/cpu/online", &online);
        if (k < 0 || pairs == 0)
                return k;
        unsigned n = cpu_set_count(&online), stride = MAX(n / pairs, 1U), stragglers = n >= pairs ? n % pairs : 0;
        int cpu = cpu_set_next(&online, 0);
        for (unsigned i = 0; i < pairs && 2 * i + 1 < s->n_queue_irqs; i++) {
                CpuSet group = {};
                for (unsigned j = 0; j < stride + (i < stragglers ? 1 : 0); j++) {
                        cpu_set_add(&group, (unsigned) cpu);
                        cpu = cpu_set_next(&online, (unsigned) cpu + 1);
                        if (cpu < 0)
                                cpu = cpu_set_next(&online, 0);
                }
                for (unsigned d = 0; d < 2; d++) {
                        char path[64];
                        snprintf(path, sizeof(path), "proc/irq/%u/smp_affinity_list", s->queue_irqs[2 * i + d]);
                        k = sim_put_list(r, NULL, path, &group, 0644);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

static int refuse(char **ret_reason, int error, const char *why) {
        if (ret_reason && why && !(*ret_reason = strdup(why)))
                return -ENOMEM;
        return -error;
}

int sim_channels_set(Root *r, const char *ifname, const NetChannels *want, char **ret_reason) {
        SimChannels s;
        int k = channels_load(r, ifname, &s);
        if (k < 0)
                return k;
        _cleanup_free_ char *reason = s.reason;
        const NetChannels *c = &s.c;
        if (s.refuse)
                return refuse(ret_reason, s.refuse, reason);
        if (want->rx > c->max_rx || want->tx > c->max_tx || want->other > c->max_other ||
            want->combined > c->max_combined)
                return refuse(ret_reason, EINVAL, "requested channel count exceeds maximum");
        if (want->combined + want->rx == 0 || want->combined + want->tx == 0)
                return refuse(ret_reason, EINVAL, "requested channel counts would result in no RX or TX channel");
        _cleanup_free_ char *zero = zero_mask(r), *path = channels_file(ifname), *text = NULL;
        if (!zero || !path)
                return -ENOMEM;
        k = queues_follow(r, ifname, "rx", c->combined + c->rx, want->combined + want->rx, zero);
        if (k >= 0)
                k = queues_follow(r, ifname, "tx", c->combined + c->tx, want->combined + want->tx, zero);
        if (k < 0)
                return k;
        if (asprintf(&text, "rx %u %u\ntx %u %u\nother %u %u\ncombined %u %u\n", want->rx, c->max_rx, want->tx,
                     c->max_tx, want->other, c->max_other, want->combined, c->max_combined) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < s.n_queue_irqs; i++) {
                char *t = NULL;
                bool last = i + 1 == s.n_queue_irqs;
                if (asprintf(&t, "%s%s%u%s", text, i == 0 ? "queue-irqs " : " ", s.queue_irqs[i], last ? "\n" : "") < 0)
                        return -ENOMEM;
                free(text);
                text = t;
        }
        k = sim_unshare_file(r, path);
        if (k < 0)
                return k;
        _cleanup_close_ int fd = root_open(r, path, O_WRONLY | O_TRUNC | O_NOFOLLOW, 0);
        if (fd < 0)
                return fd;
        if (write(fd, text, strlen(text)) != (ssize_t) strlen(text))
                return -EIO;
        return queue_irqs_spread(r, &s, want->combined);
}
