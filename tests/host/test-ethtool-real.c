/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ethtool's generic netlink family on this machine's kernel, through libnl (lib/kernel/ethtool.c)
 * and the Root seam: reads, and a set the kernel refuses before any driver sees it (a count above
 * the NIC's maximum). Changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netdev.h"
#include "test-util.h"

static Root *root;

static void setup(void) {
        ck_assert_int_eq(root_new("/", &root), 0);
}

static void teardown(void) {
        root = root_free(root);
}

/* The first NIC of this machine whose channels can be read, or NULL. */
static char *nic_with_channels(NetChannels *ret) {
        NetDev *l;
        size_t n;
        char *name = NULL;
        ck_assert_int_eq(netdev_discover(root, &l, &n), 0);
        for (size_t i = 0; i < n && !name; i++) {
                ck_assert_str_ne(l[i].name, "lo"); /* on no device */
                if (root_channels_get(root, l[i].name, ret, NULL) == 0)
                        name = strdup(l[i].name);
        }
        netdev_free_many(l, n);
        return name;
}

/* An interface without channels and one that is not there, each with the kernel's errno (and its
 * words where it gives them). */
START_TEST(test_get_refusals) {
        NetChannels c;
        char *why = NULL;
        ck_assert_int_eq(root_channels_get(root, "lo", &c, NULL), -EOPNOTSUPP);
        ck_assert_int_eq(root_channels_get(root, "rtpart-none0", &c, &why), -ENODEV);
        ck_assert_msg(why && strstr(why, "no device"), "reason: %s", why ? why : "(none)");
        free(why);
}
END_TEST

/* A count above the maximum: -EINVAL with the kernel's words, and the counts as they were. */
START_TEST(test_set_refused_changes_nothing) {
        NetChannels before, want, after;
        _cleanup_free_ char *nic = nic_with_channels(&before), *why = NULL;
        if (!nic) {
                fprintf(stderr, "no NIC on this machine has channels to read: nothing to refuse\n");
                return;
        }
        want = before;
        if (before.max_combined > 0)
                want.combined = before.max_combined + 1;
        else
                want.rx = before.max_rx + 1;
        ck_assert_int_eq(root_channels_set(root, nic, &want, &why), -EINVAL);
        ck_assert_msg(why && strstr(why, "exceeds maximum"), "%s: reason: %s", nic, why ? why : "(none)");
        ck_assert_int_eq(root_channels_get(root, nic, &after, NULL), 0);
        ck_assert(memcmp(&before, &after, sizeof(before)) == 0);
}
END_TEST

static Suite *ethtool_suite(void) {
        Suite *s = suite_create("ethtool-real");
        TCase *tc = tcase_create("get");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_get_refusals);
        suite_add_tcase(s, tc);
        tc = tcase_create("set");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_set_refused_changes_nothing);
        test_add_root_tcase(s, tc, "a channel set needs CAP_NET_ADMIN: run as root");
        return s;
}

int main(void) {
        return test_run(ethtool_suite());
}
