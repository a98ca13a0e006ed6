/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* ethtool's generic netlink family (Linux 5.6+), through libnl-3 and libnl-genl-3: what rtpart asks
 * of a NIC's driver that no sysfs file holds (its channels). No ethtool binary, no SIOCETHTOOL
 * ioctl. The two libraries are loaded the first time a NIC is asked (rtpartctl and rtpartd link
 * neither), so a command that touches no NIC does not map them; where they cannot be loaded the
 * calls return -EOPNOTSUPP with the loader's reason. Only the kernel's root ops call these. */

#include "root.h"

/* ETHTOOL_MSG_CHANNELS_GET of ifname: -ENODEV without such an interface, -EOPNOTSUPP when its
 * driver has no channels (or the kernel no ethtool family). *ret_reason (optional): the kernel's
 * extended acknowledgement or the loader's reason, when there is one. */
int ethtool_channels_get(const char *ifname, NetChannels *ret, char **ret_reason);
/* ETHTOOL_MSG_CHANNELS_SET of ifname to want's counts (its maxima are not sent). The kernel's own
 * refusal keeps its errno (EINVAL: a count the driver or the core refuses, EOPNOTSUPP: a driver
 * that cannot change its channels, EPERM without CAP_NET_ADMIN) and its words in *ret_reason. */
int ethtool_channels_set(const char *ifname, const NetChannels *want, char **ret_reason);
