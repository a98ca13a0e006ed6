/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"

static char *cg_dir(const char *hier, const char *name) {
        char *s;
        return asprintf(&s, "%s%s%s", hier, name ? "/" : "", strempty(name)) < 0 ? NULL : s;
}

/* ---- operations ---- */

bool cgroup_is_v2(Root *r, const char *hier) {
        _cleanup_free_ char *p = NULL;
        return asprintf(&p, "%s/cgroup.controllers", hier) >= 0 && root_exists(r, p);
}

bool cgroup_exists(Root *r, const char *hier, const char *name) {
        _cleanup_free_ char *dir = cg_dir(hier, name);
        return dir && root_is_dir(r, dir);
}

int cgroup_mkdir(Root *r, const char *hier, const char *name) {
        if (cgroup_exists(r, hier, name))
                return 0;
        int k = root_mkdir_object(r, ROOT_FS_CGROUP, hier, name);
        return k == -EEXIST ? 0 : k;
}

int cgroup_write_file(Root *r, const char *hier, const char *name, const char *file, const char *value) {
        return root_write_object(r, ROOT_FS_CGROUP, hier, name, file, value);
}

int cgroup_move_task(Root *r, const char *hier, const char *name, long id) {
        char v[32];
        snprintf(v, sizeof(v), "%ld", id);
        return root_write_object(r, ROOT_FS_CGROUP, hier, name, cgroup_is_v2(r, hier) ? "cgroup.procs" : "tasks", v);
}

int cgroup_read_tasks(Root *r, const char *hier, const char *name, long **ret, size_t *ret_n) {
        _cleanup_free_ char *dir = cg_dir(hier, name), *p = NULL, *text = NULL;
        _cleanup_free_ long *ids = NULL;
        size_t n = 0;

        if (!dir || asprintf(&p, "%s/%s", dir, cgroup_is_v2(r, hier) ? "cgroup.procs" : "tasks") < 0)
                return -ENOMEM;
        int k = root_read_file(r, p, &text, NULL);
        if (k < 0)
                return k;
        for (char *s = text; *s;) {
                char *end;
                long v = strtol(s, &end, 10);
                if (end == s) {
                        s++;
                        continue;
                }
                long *m = realloc(ids, (n + 1) * sizeof(long));
                if (!m)
                        return -ENOMEM;
                ids = m;
                ids[n++] = v;
                s = end;
        }
        *ret = TAKE_PTR(ids);
        *ret_n = n;
        return 0;
}

int cgroup_rmdir(Root *r, const char *hier, const char *name) {
        _cleanup_free_ long *ids = NULL;
        size_t n = 0;
        int k;

        if (!name || !cgroup_exists(r, hier, name))
                return 0;
        /* rmdir(2) fails while tasks remain: they go to the root first (a task that exited
         * meanwhile is fine). */
        k = cgroup_read_tasks(r, hier, name, &ids, &n);
        if (k < 0 && k != -ENOENT)
                return k;
        for (size_t i = 0; i < n; i++) {
                k = cgroup_move_task(r, hier, NULL, ids[i]);
                if (k < 0 && k != -ESRCH)
                        return k;
        }
        k = root_rmdir_object(r, ROOT_FS_CGROUP, hier, name);
        return k == -ENOENT ? 0 : k;
}
