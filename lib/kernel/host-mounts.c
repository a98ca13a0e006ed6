/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-internal.h"
#include "host.h"
#include "strv.h"

/* Host discovery, mounts: cgroup v2, the v1 cpuset hierarchy and resctrl, with what resctrl
 * offers. */

static char *unescape_mount(const char *s) {
        char *out = malloc(strlen(s) + 1), *o = out;
        if (!out)
                return NULL;
        while (*s) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
                    s[3] <= '7') {
                        *o++ = (char) ((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 4;
                } else
                        *o++ = *s++;
        }
        *o = 0;
        return out;
}

static int set_mount(char **slot, const char *mountpoint) {
        if (*slot)
                return 0; /* first one wins */
        while (*mountpoint == '/')
                mountpoint++;
        *slot = strdup(mountpoint);
        return *slot ? 0 : -ENOMEM;
}

static bool has_option(const char *opts, const char *opt) {
        size_t n = strlen(opt);
        for (const char *p = opts; p && *p;) {
                if (strncmp(p, opt, n) == 0 && (p[n] == ',' || p[n] == 0))
                        return true;
                p = strchr(p, ',');
                if (p)
                        p++;
        }
        return false;
}

int host_parse_mounts(Host *h, char *text, bool mountinfo) {
        bool any_v1 = false;
        int k;

        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;

                char *fields[12] = {}, *save = NULL;
                size_t n = 0;
                for (char *t = strtok_r(line, " ", &save); t && n < ELEMENTSOF(fields); t = strtok_r(NULL, " ", &save))
                        fields[n++] = t;

                const char *mp, *fstype, *opts;
                if (mountinfo) {
                        /* id parent maj:min root mountpoint opts [optional…] - fstype source superopts */
                        size_t dash = 0;
                        for (size_t i = 6; i < n; i++)
                                if (streq(fields[i], "-")) {
                                        dash = i;
                                        break;
                                }
                        if (dash == 0 || dash + 3 >= n + 1 || n < 5)
                                continue;
                        mp = fields[4];
                        fstype = fields[dash + 1];
                        opts = dash + 3 < n ? fields[dash + 3] : "";
                } else {
                        if (n < 4)
                                continue;
                        mp = fields[1];
                        fstype = fields[2];
                        opts = fields[3];
                }
                if (!fstype)
                        continue;
                _cleanup_free_ char *mpu = unescape_mount(mp);
                if (!mpu)
                        return -ENOMEM;

                if (streq(fstype, "cgroup2"))
                        k = set_mount(&h->cgroup2_mount, mpu);
                else if (streq(fstype, "cgroup")) {
                        any_v1 = true;
                        k = has_option(opts, "cpuset") ? set_mount(&h->cpuset_v1_mount, mpu) : 0;
                } else if (streq(fstype, "resctrl")) {
                        h->resctrl.mounted = true;
                        k = set_mount(&h->resctrl.mount, mpu);
                } else
                        k = 0;
                if (k < 0)
                        return k;
        }

        if (h->cgroup2_mount && streq(h->cgroup2_mount, "sys/fs/cgroup") && !any_v1)
                h->cgroup_mode = CGROUP_V2;
        else if (any_v1 && h->cgroup2_mount)
                h->cgroup_mode = CGROUP_HYBRID;
        else if (any_v1)
                h->cgroup_mode = CGROUP_V1;
        else if (h->cgroup2_mount)
                h->cgroup_mode = CGROUP_V2;
        else
                h->cgroup_mode = CGROUP_NONE;

        return 0;
}

int host_discover_mounts(Host *h) {
        _cleanup_free_ char *text = NULL;
        bool mountinfo = true;
        int k;

        k = root_read_file(h->root, "proc/self/mountinfo", &text, NULL);
        if (k < 0) {
                mountinfo = false;
                k = root_read_file(h->root, "proc/mounts", &text, NULL);
                if (k < 0)
                        return k == -ENOENT ? 0 : k;
        }
        k = host_parse_mounts(h, text, mountinfo);
        if (k < 0)
                return k;

        if (h->cgroup2_mount) {
                _cleanup_free_ char *ctl = NULL, *path = NULL;
                if (asprintf(&path, "%s/cgroup.controllers", h->cgroup2_mount) < 0)
                        return -ENOMEM;
                if (root_read_line(h->root, path, &ctl) >= 0) {
                        _cleanup_free_ char *padded = NULL;
                        if (asprintf(&padded, " %s ", ctl) < 0)
                                return -ENOMEM;
                        h->cgroup2_cpuset = strstr(padded, " cpuset ") != NULL;
                }
        }
        return 0;
}

static int hex64(const char *s, uint64_t *ret) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 16);
        if (errno || end == s)
                return -EINVAL;
        *ret = v;
        return 0;
}

static void read_resctrl_resource(Host *h, const char *name, ResctrlResource *res) {
        Resctrl *rc = &h->resctrl;
        char path[256];
        _cleanup_free_ char *s = NULL;

        snprintf(path, sizeof(path), "%s/info/%s", rc->mount, name);
        if (!root_is_dir(h->root, path))
                return;
        res->present = true;
        res->sparse_masks = -1;

#define RD(file, var) \
        do { \
                snprintf(path, sizeof(path), "%s/info/%s/" file, rc->mount, name); \
                (void) root_read_uint(h->root, path, &(var)); \
        } while (0)
        RD("num_closids", res->num_closids);
        RD("min_cbm_bits", res->min_cbm_bits);
        RD("min_bandwidth", res->min_bandwidth);
        RD("bandwidth_gran", res->bandwidth_gran);
#undef RD
        unsigned v;
        snprintf(path, sizeof(path), "%s/info/%s/delay_linear", rc->mount, name);
        if (root_read_uint(h->root, path, &v) >= 0)
                res->delay_linear = v;
        snprintf(path, sizeof(path), "%s/info/%s/sparse_masks", rc->mount, name);
        if (root_read_uint(h->root, path, &v) >= 0)
                res->sparse_masks = (int) v;
        snprintf(path, sizeof(path), "%s/info/%s/cbm_mask", rc->mount, name);
        if (root_read_line(h->root, path, &s) >= 0 && hex64(s, &res->cbm_mask) >= 0)
                res->cbm_bits = res->cbm_mask ? 64U - (unsigned) __builtin_clzll(res->cbm_mask) : 0;
        free(s);
        s = NULL;
        snprintf(path, sizeof(path), "%s/info/%s/shareable_bits", rc->mount, name);
        if (root_read_line(h->root, path, &s) >= 0)
                (void) hex64(s, &res->shareable_bits);
}

static int uint_cmp(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

int host_discover_resctrl(Host *h) {
        Resctrl *rc = &h->resctrl;
        _cleanup_free_ char *fs = NULL;

        if (root_read_file(h->root, "proc/filesystems", &fs, NULL) >= 0)
                rc->supported = strstr(fs, "\tresctrl\n") != NULL;
        if (!rc->mounted)
                return 0;
        rc->supported = true;

        read_resctrl_resource(h, "L3", &rc->l3);
        read_resctrl_resource(h, "L3CODE", &rc->l3code);
        read_resctrl_resource(h, "L3DATA", &rc->l3data);
        read_resctrl_resource(h, "MB", &rc->mb);
        rc->cdp = rc->l3code.present && rc->l3data.present;

        /* Domain ids: from the L3 cache ids the CPUs report; those are what schemata uses. */
        rc->domains = calloc(MAX(h->n_l3, (size_t) 1), sizeof(unsigned));
        if (!rc->domains)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_l3; i++)
                rc->domains[i] = h->l3[i].id;
        rc->n_domains = h->n_l3;
        qsort(rc->domains, rc->n_domains, sizeof(unsigned), uint_cmp);
        return 0;
}
