/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "root.h"

/* A --root other than "/": a directory tree to read and write as files, nothing more. No kernel
 * stands behind it, so it can do none of RootCan, a directory made below a cgroup hierarchy is an
 * empty directory, and a write replaces a file's content. rtpartctl plans, shows and verifies on
 * such a tree; tests that apply on fake hosts use the simulator instead (tests/sim/). */

static int tree_write_value(Root *r, const char *rel, const char *value) {
        _cleanup_free_ char *data = NULL;
        if (asprintf(&data, "%s\n", value) < 0)
                return -ENOMEM;
        /* O_TRUNC: a plain file holds exactly the value, as a kernel file would read back. */
        return root_write_once(r, rel, O_TRUNC, data);
}

static int tree_mkdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        _cleanup_close_ int fd = root_open(r, mount, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd;
        return mkdirat(fd, name, 0755) < 0 ? -errno : 0;
}

static int tree_rmdir_object(Root *r, RootFs fs, const char *mount, const char *name) {
        _cleanup_close_ int fd = root_open(r, mount, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd;
        return unlinkat(fd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int tree_write_object(Root *r, RootFs fs, const char *mount, const char *name, const char *file,
                             const char *value) {
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s%s%s/%s", mount, name ? "/" : "", strempty(name), file) < 0)
                return -ENOMEM;
        return tree_write_value(r, p, value);
}

const RootOps root_plain_tree_ops = {
        .name = "tree",
        .can = 0,
        .write_value = tree_write_value,
        .mkdir_object = tree_mkdir_object,
        .rmdir_object = tree_rmdir_object,
        .write_object = tree_write_object,
        ROOT_FILE_OPS,
};

/* Weak: the simulator's strong definition wins in the programs linked with it (root.h). */
__attribute__((weak)) const RootOps *root_tree_ops(void) {
        return &root_plain_tree_ops;
}
