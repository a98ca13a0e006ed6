/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The network interfaces of a host that sit on a device (sys/class/net/NAME/device): NICs, physical
 * or virtual (virtio-net), with their driver, NUMA node, queues and IRQs. Loopback, bridges, bonds,
 * veth pairs, VLANs and tunnels have no device and are not listed: their queues are software's. */

#include "root.h"

typedef struct NetDev {
        char *name;          /* "eth1" */
        char *driver;        /* "ixgbe"; NULL when no driver is bound */
        char *device;        /* root-relative canonical directory of its device */
        int node;            /* NUMA node of its device (or the PCI device it sits on), -1 if none */
        unsigned n_rx, n_tx; /* its queues now: queues/rx-0 … rx-(n_rx - 1), tx-0 … */
} NetDev;

/* Every such interface under the root, sorted by name (*ret_n of them, *ret NULL when none). A
 * root without sys/class/net has none. */
int netdev_discover(Root *r, NetDev **ret, size_t *ret_n);
/* One interface by name: -ENOENT when it is not there or sits on no device. */
int netdev_get(Root *r, const char *name, NetDev *ret);
void netdev_done(NetDev *d);
void netdev_free_many(NetDev *l, size_t n);

/* The IRQs of d's device, from msi_irqs/ of the device or of the PCI device under it (virtio-net
 * sits on a virtio device on a PCI one), sorted; none (0, *ret NULL) for a device without MSI. */
int netdev_irqs(Root *r, const NetDev *d, unsigned **ret, size_t *ret_n);
