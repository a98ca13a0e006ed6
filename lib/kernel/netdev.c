/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netdev.h"
#include "strv.h"

void netdev_done(NetDev *d) {
        free(d->name);
        free(d->driver);
        free(d->device);
        *d = (NetDev) { .node = -1 };
}

void netdev_free_many(NetDev *l, size_t n) {
        for (size_t i = 0; l && i < n; i++)
                netdev_done(&l[i]);
        free(l);
}

/* The directory above a root-relative path ("" for a top-level one). */
static char *parent_of(const char *path) {
        const char *slash = strrchr(path, '/');
        return slash ? strndup(path, (size_t) (slash - path)) : strdup("");
}

/* "rx-12" → 13 for prefix "rx-", else 0. */
static unsigned queue_end(const char *name, const char *prefix) {
        if (!startswith(name, prefix))
                return 0;
        char *end;
        unsigned long n = strtoul(name + strlen(prefix), &end, 10);
        return *end || end == name + strlen(prefix) || n >= 65536 ? 0 : (unsigned) n + 1;
}

static void count_queues(Root *r, NetDev *d) {
        _cleanup_free_ char *dir = NULL;
        DIR *dh;
        if (asprintf(&dir, "sys/class/net/%s/queues", d->name) < 0 || root_opendir(r, dir, &dh) < 0)
                return;
        struct dirent *de;
        while ((de = readdir(dh))) {
                d->n_rx = MAX(d->n_rx, queue_end(de->d_name, "rx-"));
                d->n_tx = MAX(d->n_tx, queue_end(de->d_name, "tx-"));
        }
        closedir(dh);
}

/* file of the device, else of the device it sits on (a virtio device's PCI function). */
static char *device_file(Root *r, const NetDev *d, const char *file) {
        _cleanup_free_ char *up = parent_of(d->device);
        const char *dirs[] = { d->device, up };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                char *p;
                if (!dirs[i] || asprintf(&p, "%s/%s", dirs[i], file) < 0)
                        return NULL;
                if (root_exists(r, p))
                        return p;
                free(p);
        }
        return NULL;
}

int netdev_get(Root *r, const char *name, NetDev *ret) {
        _cleanup_free_ char *dev = NULL, *drv = NULL, *node = NULL;
        NetDev d = { .node = -1 };
        if (!*name || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return -ENOENT;
        if (asprintf(&dev, "sys/class/net/%s/device", name) < 0)
                return -ENOMEM;
        int k = root_canonicalize(r, dev, &d.device);
        if (k < 0 || !root_is_dir(r, d.device)) {
                netdev_done(&d);
                return k == -ENOMEM ? k : -ENOENT;
        }
        d.name = strdup(name);
        if (!d.name || asprintf(&drv, "%s/driver", d.device) < 0) {
                netdev_done(&d);
                return -ENOMEM;
        }
        _cleanup_free_ char *drv_path = NULL;
        if (root_canonicalize(r, drv, &drv_path) >= 0 && root_is_dir(r, drv_path)) {
                const char *b = strrchr(drv_path, '/');
                d.driver = strdup(b ? b + 1 : drv_path);
        }
        node = device_file(r, &d, "numa_node");
        unsigned n;
        if (node && root_read_uint(r, node, &n) >= 0) /* "-1" does not parse: no node */
                d.node = (int) n;
        count_queues(r, &d);
        *ret = d;
        return 0;
}

static int netdev_cmp(const void *a, const void *b) {
        return strcmp(((const NetDev *) a)->name, ((const NetDev *) b)->name);
}

int netdev_discover(Root *r, NetDev **ret, size_t *ret_n) {
        DIR *dh;
        int k = root_opendir(r, "sys/class/net", &dh);
        *ret = NULL;
        *ret_n = 0;
        if (k == -ENOENT)
                return 0;
        if (k < 0)
                return k;
        NetDev *l = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(dh))) {
                if (de->d_name[0] == '.')
                        continue;
                NetDev d;
                k = netdev_get(r, de->d_name, &d);
                if (k == -ENOENT)
                        continue; /* no device: a software interface */
                if (k < 0 || GROW_ARRAY(l, cap, n + 1, 8) < 0) {
                        if (k >= 0)
                                netdev_done(&d);
                        closedir(dh);
                        netdev_free_many(l, n);
                        return k < 0 ? k : -ENOMEM;
                }
                l[n++] = d;
        }
        closedir(dh);
        if (n > 1)
                qsort(l, n, sizeof(NetDev), netdev_cmp);
        *ret = l;
        *ret_n = n;
        return 0;
}

static int uint_cmp(const void *a, const void *b) {
        unsigned x = *(const unsigned *) a, y = *(const unsigned *) b;
        return x < y ? -1 : x > y;
}

int netdev_irqs(Root *r, const NetDev *d, unsigned **ret, size_t *ret_n) {
        _cleanup_free_ char *dir = device_file(r, d, "msi_irqs");
        DIR *dh;
        *ret = NULL;
        *ret_n = 0;
        if (!dir || root_opendir(r, dir, &dh) < 0)
                return 0;
        unsigned *l = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(dh))) {
                char *end;
                unsigned long irq = strtoul(de->d_name, &end, 10);
                if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end || irq > UINT32_MAX)
                        continue;
                if (GROW_ARRAY(l, cap, n + 1, 16) < 0) {
                        closedir(dh);
                        free(l);
                        return -ENOMEM;
                }
                l[n++] = (unsigned) irq;
        }
        closedir(dh);
        if (n > 1)
                qsort(l, n, sizeof(unsigned), uint_cmp);
        *ret = l;
        *ret_n = n;
        return 0;
}
