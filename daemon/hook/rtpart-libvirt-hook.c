/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libvirt's qemu hook, installed as /etc/libvirt/hooks/qemu.d/rtpart (libvirt >= 6.5 runs every
 * executable there): at "prepare begin", before a domain starts, its pins are checked against the
 * ledger (lib/interop/hook.h), and a domain that would run on CPUs not its own is refused: the
 * reason on standard error, which libvirt reports as the start's error. Every other operation is
 * let through at once. libvirt calls it as: HOOK DOMAIN OPERATION SUB-OPERATION EXTRA, with the
 * domain's XML on standard input.
 *
 * RT bandwidth: where the kernel has RT group scheduling (cpu.rt_runtime_us in the cpu
 * controller), libvirt makes each vCPU's cgroup only once qemu runs its vCPU threads, after the
 * last hook before them ("start"), and sets SCHED_FIFO at once; a new group gets 0 µs of RT time,
 * so no hook can give it bandwidth in time. The answer is to keep libvirt's vCPU threads out of
 * the cpu controller (qemu.conf: cgroup_controllers without "cpu"), where they run with the root
 * group's RT bandwidth; see rtpartctl(1), vm. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hook.h"
#include "journal.h"
#include "log.h"

#define XML_MAX (16U << 20)

static int read_stdin(char **ret, size_t *ret_size) {
        size_t size = 0, cap = 0;
        char *buf = NULL;
        for (;;) {
                if (size + 4096 > cap) {
                        char *b = cap >= XML_MAX ? NULL : realloc(buf, cap = cap ? cap * 2 : 65536);
                        if (!b) {
                                free(buf);
                                return -ENOMEM;
                        }
                        buf = b;
                }
                ssize_t n = read(STDIN_FILENO, buf + size, cap - size - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        free(buf);
                        return -errno;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
        }
        buf[size] = 0;
        *ret = buf;
        *ret_size = size;
        return 0;
}

static int run(const char *root_path) {
        _cleanup_(root_freep) Root *root = NULL;
        _cleanup_(journal_store_freep) JournalStore *store = NULL;
        _cleanup_(ledger_freep) Ledger *l = NULL;
        _cleanup_(hook_domain_done) HookDomain d = {};
        _cleanup_(error_done) Error e = {};
        _cleanup_free_ char *xml = NULL, *why = NULL;
        size_t size = 0;

        int r = read_stdin(&xml, &size);
        if (r < 0)
                return log_error_errno(r, "rtpart: cannot read the domain XML on standard input: %m");
        if ((r = root_new(root_path, &root)) < 0 || (r = journal_store_open(root, &store)) < 0)
                return log_error_errno(r, "rtpart: cannot open %s: %m", root_path);
        r = ledger_load(store, &l, &e);
        if (r < 0) {
                why = error_format(&e, NULL);
                return log_error_errno(r, "rtpart: cannot read the ledger: %s; fix or remove it to start domains",
                                       why ?: strerror(-r));
        }
        if (l->n_vms == 0)
                return 0;
        r = hook_domain_parse(xml, size, &d, &why);
        if (r < 0)
                return log_error_errno(r, "rtpart: cannot read the domain XML: %s", why ?: strerror(-r));
        r = hook_check(l, &d, &why);
        if (r < 0) {
                fprintf(stderr, "%s\n", why ?: "rtpart: refused");
                return r;
        }
        return 0;
}

int main(int argc, char **argv) {
        log_setup_tool("rtpart-libvirt-hook");
        /* Only "prepare begin" decides anything; libvirt waits for every call, so the others end here. */
        if (argc < 4 || !streq(argv[2], "prepare") || !streq(argv[3], "begin"))
                return EXIT_SUCCESS;
        /* RTPART_ROOT: a fake host's tree, for the tests. */
        return run(getenv("RTPART_ROOT") ?: "/") < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
