/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the simulator's files share (sim-kernel.c): a fake tree's files read and written as the
 * kernel's objects need them, and the task lists of cgroups. Only tests/sim uses it. */

#include <stdbool.h>
#include <sys/types.h>

#include "cpu-set.h"
#include "macro.h"
#include "sim-kernel.h"

/* "a/b/c", leaving out NULL and empty parts. */
char *sim_path_join(const char *a, const char *b, const char *c);
/* The whole file a/b/c, or NULL if it cannot be read. */
char *sim_get(Root *r, const char *a, const char *b, const char *c);
/* The file a/b/c as a CPU (or node) list. */
bool sim_get_set(Root *r, const char *a, const char *b, const char *c, CpuSet *ret);
bool sim_exists(Root *r, const char *a, const char *b, const char *c);
/* Replaces a file's content (creating it with `mode`); an existing file keeps its mode. */
int sim_put(Root *r, const char *dir, const char *file, const char *text, mode_t mode);
int sim_putf(Root *r, const char *dir, const char *file, mode_t mode, const char *fmt, ...) _printf_(5, 6);
/* The set as a list and a newline. */
int sim_put_list(Root *r, const char *dir, const char *file, const CpuSet *s, mode_t mode);
/* Removes dir with everything below it (only ever a group directory rtpart created). */
int sim_remove_tree(Root *r, const char *dir);
/* Subdirectories of dir, sorted, without dot entries and the names in `skip`. */
int sim_list_dirs(Root *r, const char *dir, const char * const *skip, char ***ret);

/* Task lists ("1\n2\n…", sorted as cgroup v1 prints them). */
typedef struct SimIds {
        long *v;
        size_t n;
} SimIds;

void sim_ids_done(SimIds *ids);
int sim_ids_parse(const char *text, SimIds *ret);
bool sim_ids_has(const SimIds *ids, long v);
int sim_ids_add(SimIds *ids, long v);
void sim_ids_del(SimIds *ids, long v);
int sim_put_ids(Root *r, const char *dir, const char *file, const SimIds *ids);
int sim_get_ids(Root *r, const char *dir, const char *file, SimIds *ret);
/* A thread's process and PF_* flags from proc/: the leader's own directory, or any process's
 * task/ directory for other threads (the fake trees, like procfs' readdir, list only leaders). */
int sim_task_lookup(Root *r, long tid, long *ret_tgid, unsigned *ret_flags);
