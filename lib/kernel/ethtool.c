/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dlfcn.h>
#include <linux/ethtool_netlink.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "dlopen-note.h"
#include "ethtool.h"
#include "libnl.h"

/* libnl-3 and libnl-genl-3 are loaded the first time a NIC is asked. Mapping them costs a process
 * about what mapping libsystemd does (bench/bench-dlopen.py measures both), which every command
 * that touches no NIC (verify of a host without a net section, status, show) would pay for
 * nothing; libnl-genl-3 needs libnl-3, which the loader maps with it. */
DLOPEN_NOTE(libnl_note,
            "[{\"soname\":[\"" LIBNL_SONAME "\",\"" LIBNL_GENL_SONAME "\"],\"feature\":\"nic-channels\","
            "\"description\":\"A NIC's channels through ethtool's generic netlink family\","
            "\"priority\":\"recommended\"}]");

/* What one request got back: the reply's channels, the kernel's errno and words, the end. */
typedef struct Exchange {
        NetChannels channels;
        bool replied;
        bool acked;
        int error;    /* the kernel's negative errno, 0 */
        char *reason; /* its extended acknowledgement's message, NULL */
} Exchange;

/* The reply's attributes as the kernel sends them: counts and maxima are u32, the header a nest. */
static struct nla_policy channels_policy[ETHTOOL_A_CHANNELS_MAX + 1] = {
        [ETHTOOL_A_CHANNELS_HEADER] = { .type = NLA_NESTED },
        [ETHTOOL_A_CHANNELS_RX_MAX] = { .type = NLA_U32 },
        [ETHTOOL_A_CHANNELS_TX_MAX] = { .type = NLA_U32 },
        [ETHTOOL_A_CHANNELS_OTHER_MAX] = { .type = NLA_U32 },
        [ETHTOOL_A_CHANNELS_COMBINED_MAX] = { .type = NLA_U32 },
        [ETHTOOL_A_CHANNELS_RX_COUNT] = { .type = NLA_U32 },
        [ETHTOOL_A_CHANNELS_TX_COUNT] = { .type = NLA_U32 },
        [ETHTOOL_A_CHANNELS_OTHER_COUNT] = { .type = NLA_U32 },
        [ETHTOOL_A_CHANNELS_COMBINED_COUNT] = { .type = NLA_U32 },
};

static int on_reply(struct nl_msg *msg, void *arg) {
        Exchange *x = arg;
        struct nlattr *tb[ETHTOOL_A_CHANNELS_MAX + 1];
        if (sym_genlmsg_parse(sym_nlmsg_hdr(msg), 0, tb, ETHTOOL_A_CHANNELS_MAX, channels_policy) < 0) {
                x->error = -EBADMSG;
                return NL_STOP;
        }
        static const struct {
                int attr;
                size_t offset;
        } fields[] = {
                { ETHTOOL_A_CHANNELS_RX_COUNT, offsetof(NetChannels, rx) },
                { ETHTOOL_A_CHANNELS_TX_COUNT, offsetof(NetChannels, tx) },
                { ETHTOOL_A_CHANNELS_OTHER_COUNT, offsetof(NetChannels, other) },
                { ETHTOOL_A_CHANNELS_COMBINED_COUNT, offsetof(NetChannels, combined) },
                { ETHTOOL_A_CHANNELS_RX_MAX, offsetof(NetChannels, max_rx) },
                { ETHTOOL_A_CHANNELS_TX_MAX, offsetof(NetChannels, max_tx) },
                { ETHTOOL_A_CHANNELS_OTHER_MAX, offsetof(NetChannels, max_other) },
                { ETHTOOL_A_CHANNELS_COMBINED_MAX, offsetof(NetChannels, max_combined) },
        };
        /* The kernel leaves out a kind whose maximum is 0: that kind is 0 of 0. */
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                *(uint32_t *) ((char *) &x->channels + fields[i].offset) =
                        tb[fields[i].attr] ? sym_nla_get_u32(tb[fields[i].attr]) : 0;
        x->replied = true;
        return NL_OK;
}

static int on_ack(struct nl_msg *msg, void *arg) {
        ((Exchange *) arg)->acked = true;
        return NL_STOP;
}

/* The kernel's errno, and the message of its extended acknowledgement: attributes after the
 * nlmsgerr (the request is not echoed: NETLINK_CAP_ACK). */
static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg) {
        Exchange *x = arg;
        const struct nlmsghdr *h = (const struct nlmsghdr *) ((const char *) e - NLMSG_HDRLEN);
        x->error = e->error < 0 ? e->error : -EIO;
        if (!(h->nlmsg_flags & NLM_F_ACK_TLVS) || !(h->nlmsg_flags & NLM_F_CAPPED))
                return NL_STOP;
        const char *p = (const char *) (e + 1), *end = (const char *) h + h->nlmsg_len;
        while (p + NLA_HDRLEN <= end) {
                const struct nlattr *a = (const struct nlattr *) p;
                if (a->nla_len < NLA_HDRLEN || p + a->nla_len > end)
                        break;
                if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG && a->nla_len > NLA_HDRLEN) {
                        free(x->reason);
                        x->reason = strndup(p + NLA_HDRLEN, a->nla_len - NLA_HDRLEN);
                }
                p += NLA_ALIGN(a->nla_len);
        }
        return NL_STOP;
}

/* libnl's own errors (NLE_*) in errno terms, for what the kernel did not answer itself. */
static int nl_to_errno(int nle) {
        switch (-nle) {
        case NLE_NOMEM:
                return -ENOMEM;
        case NLE_PERM:
                return -EPERM;
        case NLE_OBJ_NOTFOUND: /* no "ethtool" family: a kernel before 5.6, or without ETHTOOL_NETLINK */
                return -EOPNOTSUPP;
        default:
                return -EIO;
        }
}

static void sock_freep(struct nl_sock **s) {
        if (*s)
                sym_nl_socket_free(*s);
}

static void msg_freep(struct nl_msg **m) {
        if (*m)
                sym_nlmsg_free(*m);
}

/* One request of ethtool's family about ifname (cmd; set: the counts to send), its reply and
 * acknowledgement read into x. */
static int exchange(const char *ifname, uint8_t cmd, const NetChannels *set, Exchange *x, char **ret_reason) {
        int k = libnl_load(LIBNL_GENL, "a NIC's channels", ret_reason);
        if (k < 0)
                return k;
        _cleanup_(sock_freep) struct nl_sock *sk = sym_nl_socket_alloc();
        _cleanup_(msg_freep) struct nl_msg *m = sym_nlmsg_alloc();
        if (!sk || !m)
                return -ENOMEM;
        if ((k = sym_genl_connect(sk)) < 0)
                return nl_to_errno(k);
        int family = sym_genl_ctrl_resolve(sk, ETHTOOL_GENL_NAME);
        if (family < 0) {
                if (ret_reason && family == -NLE_OBJ_NOTFOUND &&
                    !(*ret_reason = strdup("the kernel has no ethtool netlink family (Linux 5.6 or later has it)")))
                        return -ENOMEM;
                return nl_to_errno(family);
        }
        /* The kernel's words on a refusal, and no copy of our request in its answer. */
        int one = 1, fd = sym_nl_socket_get_fd(sk);
        (void) setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
        (void) setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));

        if (!sym_genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, 0, cmd, ETHTOOL_GENL_VERSION))
                return -ENOMEM;
        struct nlattr *hdr = sym_nla_nest_start(m, ETHTOOL_A_CHANNELS_HEADER);
        if (!hdr || sym_nla_put_string(m, ETHTOOL_A_HEADER_DEV_NAME, ifname) < 0)
                return -ENOMEM;
        sym_nla_nest_end(m, hdr);
        if (set &&
            (sym_nla_put_u32(m, ETHTOOL_A_CHANNELS_RX_COUNT, set->rx) < 0 ||
             sym_nla_put_u32(m, ETHTOOL_A_CHANNELS_TX_COUNT, set->tx) < 0 ||
             sym_nla_put_u32(m, ETHTOOL_A_CHANNELS_OTHER_COUNT, set->other) < 0 ||
             sym_nla_put_u32(m, ETHTOOL_A_CHANNELS_COMBINED_COUNT, set->combined) < 0))
                return -ENOMEM;

        if ((k = sym_nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_reply, x)) < 0 ||
            (k = sym_nl_socket_modify_cb(sk, NL_CB_ACK, NL_CB_CUSTOM, on_ack, x)) < 0 ||
            (k = sym_nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, on_error, x)) < 0)
                return nl_to_errno(k);
        if ((k = sym_nl_send_auto(sk, m)) < 0)
                return nl_to_errno(k);
        /* The reply (GET), then the acknowledgement nl_send_auto() asked for; or the error. */
        while (!x->acked && !x->error) {
                k = sym_nl_recvmsgs_default(sk);
                if (k < 0 && !x->error)
                        return nl_to_errno(k);
        }
        if (x->error < 0 && ret_reason && x->reason) {
                *ret_reason = TAKE_PTR(x->reason);
        }
        return x->error;
}

int ethtool_channels_get(const char *ifname, NetChannels *ret, char **ret_reason) {
        Exchange x = {};
        int k = exchange(ifname, ETHTOOL_MSG_CHANNELS_GET, NULL, &x, ret_reason);
        free(x.reason);
        if (k < 0)
                return k;
        if (!x.replied)
                return -EBADMSG;
        *ret = x.channels;
        return 0;
}

int ethtool_channels_set(const char *ifname, const NetChannels *want, char **ret_reason) {
        Exchange x = {};
        int k = exchange(ifname, ETHTOOL_MSG_CHANNELS_SET, want, &x, ret_reason);
        free(x.reason);
        return k;
}
