/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* tuned profiles read the way tuned reads them, and mapped onto rtpart's profile schema.
 *
 *   tuned.conf      an INI file (Python configparser: "key = value", "#" and ";" comments, "#"
 *                   after whitespace ends a value, indented lines continue it, a repeated key
 *                   or section updates the earlier one)
 *   [main] include  profiles this one builds on, by name (/etc/tuned/NAME, then
 *                   /usr/lib/tuned/NAME; a "-" before the name: skipped when missing); merged
 *                   section by section, option by option, later over earlier
 *   [variables]     names for values; "include=" reads a variables file; "${name}" and the
 *                   "${f:function:arg:...}" built-ins are expanded in every option's value
 *
 * The result is an rtpart profile (JSON), and a note for every option: what it became, or why it
 * has no place in rtpart's profile (unsupported). Parsers take buffers; the caller reads the
 * files through TunedEnv.read_file. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cpu-set.h"
#include "error.h"

typedef struct TunedEnv {
        /* The host the host-dependent functions are evaluated on. */
        CpuSet online, present;
        /* calc_isolated_cores:N: the isolated CPUs when N cores of each NUMA node are housekeeping
         * (rtpart's default split, cpus.housekeeping_cores_per_node). */
        void (*split)(void *userdata, unsigned cores_per_node, CpuSet *ret_isolated);
        /* A file's text (NUL-terminated): 0, -ENOENT when there is none, or another negative
         * errno. host_path: the path is in the host's namespace (/etc/tuned/..., under rtpartctl's
         * root); else it is a path the user gave, read as it is. */
        int (*read_file)(void *userdata, const char *path, bool host_path, char **ret);
        void *userdata;
} TunedEnv;

/* One option read from a file: where it was written. */
typedef struct TunedOption {
        char *key;
        char *value; /* NULL for a key without "=" (variables files only) */
        char *file;
        unsigned line;
} TunedOption;

typedef struct TunedSection {
        char *name;
        TunedOption *options;
        size_t n_options;
        char *file;
        unsigned line;
} TunedSection;

typedef struct TunedIni {
        TunedSection *sections;
        size_t n_sections;
} TunedIni;

/* What became of one option. */
typedef struct TunedNote {
        char *file;
        unsigned line;
        char *section;
        char *option; /* NULL for the section as a whole */
        char *message;
        bool unsupported; /* false: mapped, the note says how it differs */
} TunedNote;

typedef struct TunedImport {
        json_t *profile;
        TunedNote *notes;
        size_t n_notes, n_unsupported;
        char **files; /* every tuned file read, in order */
} TunedImport;

/* Parses one file's text. allow_no_value: keys without "=" are accepted (variables files);
 * text before the first section header is then in a section named "" (variables files have
 * none). */
int tuned_ini_parse(const char *text, const char *file, bool allow_no_value, TunedIni *ret, Error *ret_error);
void tuned_ini_done(TunedIni *ini);

/* Imports the profile NAME (dir false) or the profile in the directory DIR (dir true). Returns 0
 * and *ret (its notes say what is unsupported); -EINVAL with *ret_error ("FILE:LINE: MESSAGE",
 * line 0: the file as a whole) for a profile tuned would not load either (not found, a syntax
 * error, an include not found, a failed assertion); -ENOMEM; or another negative errno from
 * read_file (a file that exists but cannot be read) with *ret_error naming the file. */
int tuned_import(const TunedEnv *env, const char *name, bool dir, TunedImport *ret, Error *ret_error);
/* The same for the profiles names (separated by blanks, as /etc/tuned/active_profile holds them:
 * tuned-adm profile a b), merged in order as tuned merges them. */
int tuned_import_names(const TunedEnv *env, const char *names, TunedImport *ret, Error *ret_error);
void tuned_import_done(TunedImport *t);

/* The tuned CPU list syntax ("1-3,5", "0x0f", "^2", with ",," between a mask and a list), as
 * tuned's cpulist_unpack reads it: false (and an empty set) where tuned gives an empty list
 * for a bad element. */
bool tuned_cpulist_parse(const char *s, CpuSet *ret);
