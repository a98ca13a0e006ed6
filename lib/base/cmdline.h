/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The kernel command line, read the way the kernel's next_arg() (lib/base/cmdline.c in Linux) reads
 * it: arguments are separated by whitespace, and whitespace between double quotes belongs to the
 * argument; an argument is a parameter name, or "name=value" split at the first '='; quotes
 * around a value, or around the whole argument, are not part of the value. The same syntax is
 * used by the bootloaders' option lines (GRUB_CMDLINE_LINUX, BLS "options", /etc/kernel/cmdline). */

#include <stdbool.h>
#include <stddef.h>

/* The next argument in [p, e): its start in *ret_start and its end returned, bytes as written
 * (quotes kept). With none left, *ret_start and the return are e. */
const char *cmdline_next(const char *p, const char *e, const char **ret_start);

/* Every argument of s (NULL: none), each as written, in order; an empty vector for none. */
int cmdline_split(const char *s, char ***ret);

/* The name and the value of one argument of n bytes as written; *ret_value NULL for an argument
 * without '=' ("quiet"), "" for "name=". ret_value may be NULL. */
int cmdline_parse_arg(const char *arg, size_t n, char **ret_name, char **ret_value);

/* Whether an argument as written sets the parameter key. */
bool cmdline_arg_is(const char *arg, const char *key);

/* Whether an argument of n bytes as written is "--": the arguments after it are init's. */
bool cmdline_arg_ends_kernel(const char *arg, size_t n);

/* The value of key: the last occurrence wins, as for most of the kernel's parameters; "" for an
 * argument without a value; NULL (and 0) when absent. "--" ends the kernel's arguments: what
 * follows is init's. */
int cmdline_get(const char *cmdline, const char *key, char **ret);
