/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The kernel simulator (test code, never in the shipped programs): the kernel's side of cgroupfs
 * and resctrl, mirrored in a fake host tree.
 *
 * On a real host, mkdir in cgroupfs or resctrl makes the kernel create a group's control files,
 * a write to a control file is checked and normalized by the kernel (and may change other
 * files: CPUs move between resctrl groups, a partition root turns "invalid"), and rmdir drops
 * them again. In a tree a directory is only a directory and a file only a file. The simulator's
 * root ops (sim-root.c) call these functions for the objects the backends make, write and remove
 * (root_mkdir_object() and friends), so that a fake host reads back as a real one would and the
 * sim builds of rtpartctl and rtpartd can be tested on it (apply → the kernel's files, verify,
 * revert → the original tree).
 *
 * What is emulated (kernel 6.1-6.8 semantics; the function comments name the kernel code):
 *   cgroup v2   mkdir creates the cgroup core and cpuset files; cpuset.cpus/mems/cpus.exclusive are
 *               normalized ("1,2,3" → "1-3") with their .effective twins; cpuset.cpus.partition
 *               reads back "isolated invalid (reason)" where the kernel would refuse the partition
 *               (empty, not exclusive among siblings, taking all of the parent's CPUs), and the
 *               root's cpuset.cpus.isolated follows the valid isolated partitions; "+cpuset" in
 *               cgroup.subtree_control; writing a PID to cgroup.procs moves it.
 *   cgroup v1   mkdir creates the cpuset files (with or without the "cpuset." prefix); cpus must
 *               lie in the parent's, cpu_exclusive siblings must not overlap (EINVAL); writing a
 *               TID to tasks moves it (ENOSPC while cpus or mems is empty, EINVAL for threads
 *               with PF_NO_SETAFFINITY, ESRCH for unknown ones) and updates cgroup.procs.
 *   resctrl     mkdir creates cpus, cpus_list, mode, schemata (every resource at the kernel's
 *               default: the ways no exclusive group holds, MB at 100 or AMD's 2048), size, tasks,
 *               mon_groups/ and mon_data/, or fails with ENOSPC "Out of CLOSIDs"; schemata writes
 *               are validated (range, contiguity, min_cbm_bits, overlap with exclusive groups, MB
 *               range and granularity) and merged into the file in the kernel's padded format,
 *               with size recomputed; a group's CPUs are taken from every other group and
 *               dropped ones return to the default group; mode "exclusive" fails while the
 *               schemata overlaps another group or shareable_bits; info/last_cmd_status says
 *               "ok" or the reason, as the kernel's does.
 * Not emulated: other controllers' files, cgroup.events, sibling .effective updates,
 * resctrl bit_usage and monitoring values, and anything the kernel does on its own.
 *
 * Every function returns 0 or the negative errno the kernel would give. */

#include "root.h"

/* Gives rel an inode of its own if it shares one (a hard link: fixture trees link identical
 * files to save space), so that a write changes this path only, as on the kernel's filesystems. */
int sim_unshare_file(Root *r, const char *rel);
/* After a value was written to rel: what tracefs does (sim-tracefs.c). */
void sim_tracefs_written(Root *r, const char *rel, const char *value);
/* root_run_program() on a fake host (sim-programs.c). */
int sim_run_program(Root *r, char * const *argv, char **ret_output);

/* The simulator's ops table (sim-root.c), which root_new() gives every root other than "/" in the
 * programs linked with the simulator. */
extern const RootOps sim_root_ops;
/* The units this process asked a simulated root to restart (root_try_restart_unit()), in order; a
 * NULL-terminated list (NULL: none yet) the simulator owns. */
char * const *sim_restarted_units(void);

/* hier: the hierarchy's root-relative mount ("sys/fs/cgroup", "sys/fs/cgroup/cpuset"); whether it
 * is cgroup v2 or a v1 cpuset is read from the tree (v2 has cgroup.controllers). name: a
 * direct child of hier. */
int sim_cgroup_mkdir(Root *r, const char *hier, const char *name);
/* -EBUSY while the cgroup holds tasks or child cgroups, as rmdir(2) in cgroupfs. */
int sim_cgroup_rmdir(Root *r, const char *hier, const char *name);
/* Writes value (no trailing newline) to hier/name/file (name NULL: the hierarchy's root). */
int sim_cgroup_write(Root *r, const char *hier, const char *name, const char *file, const char *value);

/* mount: resctrl's root-relative mount point; group: a control group directly below it. */
int sim_resctrl_mkdir(Root *r, const char *mount, const char *group);
int sim_resctrl_rmdir(Root *r, const char *mount, const char *group);
/* group NULL: the default group. file: "schemata" (value "L3:0=7f0;1=7f0"), "cpus_list", "mode". */
int sim_resctrl_write(Root *r, const char *mount, const char *group, const char *file, const char *value);
