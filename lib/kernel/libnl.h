/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* libnl-3 and the parts of it rtpart uses (libnl-genl-3: ethtool's family, lib/kernel/ethtool.c;
 * libnl-route-3: rtpartd's link events), loaded the first time one is needed: neither program
 * links them, so a command that touches no NIC and opens no netlink socket maps none of them.
 * Their functions are called through the sym_ pointers below, which libnl_load() sets. Each user
 * declares what it loads in its own .note.dlopen (dlopen-note.h). */

#include <netlink/attr.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>

#define LIBNL_FUNCTIONS(X) \
        X(nl_socket_alloc) \
        X(nl_socket_free) \
        X(nl_socket_get_fd) \
        X(nl_socket_modify_cb) \
        X(nl_socket_modify_err_cb) \
        X(nl_socket_add_membership) \
        X(nl_socket_disable_seq_check) \
        X(nl_socket_disable_auto_ack) \
        X(nl_socket_set_nonblocking) \
        X(nl_socket_set_buffer_size) \
        X(nl_connect) \
        X(nl_send_auto) \
        X(nl_send_simple) \
        X(nl_recv) \
        X(nl_recvmsgs_default) \
        X(nl_msg_parse) \
        X(nlmsg_alloc) \
        X(nlmsg_free) \
        X(nlmsg_hdr) \
        X(nlmsg_get_src) \
        X(nlmsg_ok) \
        X(nlmsg_next) \
        X(nlmsg_valid_hdr) \
        X(nlmsg_data) \
        X(nlmsg_datalen) \
        X(nla_put_u32) \
        X(nla_put_string) \
        X(nla_nest_start) \
        X(nla_nest_end) \
        X(nla_get_u32)
#define LIBNL_GENL_FUNCTIONS(X) \
        X(genl_connect) \
        X(genl_ctrl_resolve) \
        X(genlmsg_put) \
        X(genlmsg_parse)
#define LIBNL_ROUTE_FUNCTIONS(X) \
        X(rtnl_link_get_name) \
        X(rtnl_link_get_flags) \
        X(rtnl_link_get_ifindex)

#define LIBNL_DECLARE_SYM(f) extern __typeof__(f) *sym_##f;
LIBNL_FUNCTIONS(LIBNL_DECLARE_SYM)
LIBNL_GENL_FUNCTIONS(LIBNL_DECLARE_SYM)
LIBNL_ROUTE_FUNCTIONS(LIBNL_DECLARE_SYM)
#undef LIBNL_DECLARE_SYM

typedef enum LibnlParts {
        LIBNL_GENL = 1 << 0,  /* libnl-genl-3 */
        LIBNL_ROUTE = 1 << 1, /* libnl-route-3 (its link objects: nl_msg_parse() of RTM_*LINK) */
} LibnlParts;

/* Loads libnl-3 and the parts asked for, once each. 0, or -EOPNOTSUPP with the loader's reason in
 * *ret_reason (optional; "PURPOSE need SONAME: WHY"). */
int libnl_load(LibnlParts parts, const char *purpose, char **ret_reason);
