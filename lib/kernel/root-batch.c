/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "root.h"

#if HAVE_LIBURING
#include <liburing.h>
#endif

/* Batched reads of many small files (root_read_many). By default one file after the other
 * (root_read_each): open, one read, close.
 *
 * Built with -Dio_uring=enabled, a batch goes to the kernel through io_uring instead: one open and
 * one read per file, linked, a submission of up to ROOT_BATCH files per io_uring_enter(2).
 * The opens resolve exactly as root_open()/root_openat() do (openat2 with RESOLVE_IN_ROOT or
 * RESOLVE_BENEATH on a tree) into the ring's own file table: no descriptor of the process is used
 * and none needs closing. It is not the default because it costs more than it saves on the files
 * rtpart reads: procfs and sysfs files (and opens below a tree's root, RESOLVE_IN_ROOT) cannot be
 * served without blocking, so io_uring hands nearly every open and read to its worker threads,
 * one context switch per file; on Linux 6.18, plan on a 1024-CPU fake host took 24% more CPU
 * time that way (28k context switches for 20k files), and plan on this kernel's own /proc and
 * /sys 30% more. A pool of threads doing the system calls in parallel was no faster either on
 * the 2-CPU machine measured (CPU time +4%, wall time within noise). Without io_uring at run time
 * (a kernel before 5.19, io_uring disabled by sysctl, a seccomp filter) and on roots that walk
 * paths in user space, the files are read one after the other. */

/* Below this many files a ring's setup costs more than it saves. */
#define ROOT_BATCH_MIN 8U

#if HAVE_LIBURING
/* -1: this process found io_uring unusable; don't ask again. */
static int uring_state = 0;

static int read_uring(Root *r, int dirfd, RootReadItem *items, size_t n) {
        struct io_uring ring;
        int k;

        k = io_uring_queue_init(2 * ROOT_BATCH, &ring, IORING_SETUP_SUBMIT_ALL);
        if (k < 0)
                return k;
        k = io_uring_register_files_sparse(&ring, ROOT_BATCH);
        if (k < 0) {
                io_uring_queue_exit(&ring);
                return k;
        }
        uint64_t resolve = r->is_host ? 0 : dirfd >= 0 ? RESOLVE_BENEATH : RESOLVE_IN_ROOT;
        /* no O_CLOEXEC: a direct descriptor is no fd of the process (and the kernel refuses it) */
        struct open_how how = { .flags = O_RDONLY, .resolve = resolve };
        int dfd = dirfd >= 0 ? dirfd : r->fd;

        for (size_t first = 0; first < n; first += ROOT_BATCH) {
                size_t m = MIN(n - first, (size_t) ROOT_BATCH);
                for (size_t i = 0; i < m; i++) {
                        RootReadItem *it = &items[first + i];
                        const char *rel = it->rel;
                        if (dirfd < 0)
                                while (*rel == '/')
                                        rel++;
                        struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
                        io_uring_prep_openat2_direct(sqe, dfd, *rel ? rel : ".", &how, (unsigned) i);
                        sqe->flags |= IOSQE_IO_LINK;
                        io_uring_sqe_set_data64(sqe, (first + i) << 1);
                        sqe = io_uring_get_sqe(&ring);
                        /* offset -1: the file's position, as read(2) */
                        io_uring_prep_read(sqe, (int) i, it->buf, (unsigned) (it->size - 1), (uint64_t) -1);
                        sqe->flags |= IOSQE_FIXED_FILE;
                        io_uring_sqe_set_data64(sqe, ((first + i) << 1) | 1);
                        it->result = -ECANCELED;
                }
                k = io_uring_submit_and_wait(&ring, (unsigned) (2 * m));
                if (k < 0)
                        goto finish;
                for (size_t seen = 0; seen < 2 * m;) {
                        struct io_uring_cqe *cqe;
                        k = io_uring_wait_cqe(&ring, &cqe);
                        if (k == -EINTR)
                                continue;
                        if (k < 0)
                                goto finish;
                        uint64_t data = io_uring_cqe_get_data64(cqe);
                        RootReadItem *it = &items[data >> 1];
                        int res = cqe->res;
                        io_uring_cqe_seen(&ring, cqe);
                        seen++;
                        if (!(data & 1)) {
                                if (res < 0)
                                        it->result = res; /* the open's errno; its read is cancelled */
                        } else if (it->result == -ECANCELED) {
                                it->result = res;
                                if (res >= 0)
                                        it->buf[res] = 0;
                        }
                }
                /* What io_uring answers differently from the system calls: EAGAIN from openat2
                 * (a rename raced the lookup: root_openat2() retries), EINTR. Those again, alone. */
                for (size_t i = 0; i < m; i++) {
                        RootReadItem *it = &items[first + i];
                        if (it->result == -EAGAIN || it->result == -EINTR || it->result == -ECANCELED)
                                (void) root_read_each(r, dirfd, it, 1);
                }
        }
        k = 0;
finish:
        io_uring_queue_exit(&ring);
        return k;
}
#endif

int root_read_batched(Root *r, int dirfd, RootReadItem *items, size_t n) {
#if HAVE_LIBURING
        if (n >= ROOT_BATCH_MIN && uring_state >= 0 && (r->is_host || r->resolve == ROOT_RESOLVE_KERNEL)) {
                int k = read_uring(r, dirfd, items, n);
                if (k >= 0)
                        return k;
                if (k == -ENOMEM)
                        return k;
                /* ENOSYS, EPERM (seccomp, kernel.io_uring_disabled), EINVAL (a kernel without
                 * sparse file tables): the system calls, from now on. */
                uring_state = -1;
        }
#endif
        return root_read_each(r, dirfd, items, n);
}
