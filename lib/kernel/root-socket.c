/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A socket of the root, connected to from inside it: the socket file is found as every other
 * file of the root is (root_open(), so that a symlinked run/ cannot lead to another tree's or the
 * system's socket), then connected to through that very inode. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "root.h"

int root_connect_unix(Root *r, const char *rel, int *ret_fd) {
        _cleanup_close_ int inode = -EBADF, fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;

        inode = root_open(r, rel, O_PATH, 0);
        if (inode < 0)
                return inode;
        if (fstat(inode, &st) < 0)
                return -errno;
        if (!S_ISSOCK(st.st_mode))
                return -ENOTSOCK;
        /* connect(2) takes a path, not an fd: the fd's own link in /proc names the inode opened,
         * whatever the path to it is now. */
        snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", inode);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}
