/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "cpu-set.h"
#include "error.h"
#include "host.h"
#include "root.h"
#include "schema.h"

/* Where a profile went wrong is an Error (error.h) whose pointer is the JSON pointer: "FILE: POINTER:
 * MESSAGE", e.g. "lab.json: /irq/rules/0/cpus: CPU 64 does not exist (online: 0-63)". */

typedef struct Profile {
        char *name; /* file stem ("realtime-virtual-host") */
        char *path; /* root-relative file it was read from; NULL: from a document */
        char *summary;
        json_t *doc;          /* merged over its includes, not yet resolved against a host */
        json_t *origins;      /* JSON pointer → file that set it, for messages */
        char **files;         /* every file read, the profile's last */
        const Schema *schema; /* of the whole document, as it was loaded with */
} Profile;

/* The schema of a whole profile document: the core's keys (include, variables, vendor, summary,
 * description, cpus, drift, check) around the sections of the knob domains, which a vendor overlay
 * carries too. The backends layer makes it of its sections (backend_profile_schema()); profiles
 * know no backend. */
#define PROFILE_SECTIONS_MAX 32
typedef struct ProfileSchema {
        Schema top, fragment, vendor;
        SchemaField top_fields[3 + 3 + PROFILE_SECTIONS_MAX + 2 + 1];
        SchemaField fragment_fields[3 + PROFILE_SECTIONS_MAX + 2 + 1];
        SchemaField vendor_fields[3];
} ProfileSchema;

/* Fills s: the document's schema around sections (n of them, at most PROFILE_SECTIONS_MAX, in the
 * order messages list them). s must stay where it is: its schemas point into it. */
void profile_schema_init(ProfileSchema *s, const SchemaField *sections, size_t n);

/* Profile search path, relative to the root: user profiles first. */
extern const char * const profile_dirs[];

/* Loads a profile by name (searched in profile_dirs) or by path (contains '/' or ends ".json";
 * relative paths are taken from the current directory, not the root), with its includes, each
 * file checked against schema (a ProfileSchema's top, e.g. backend_profile_schema()). Every
 * file must be a regular file of at most 1 MiB with no NUL byte, owned by root or by the
 * effective uid, and writable by no one else (by its group only when that is gid 0); else
 * -EINVAL naming the file and the fix. */
int profile_load(Root *root, const Schema *schema, const char *name_or_path, Profile **ret, Error *ret_error);
/* Whether a profile argument names a file (contains '/' or ends ".json"), else a profile name. */
bool profile_is_path(const char *name_or_path);
/* A profile from its merged document (Profile.doc of a profile loaded before, as the journal keeps
 * it), checked against the same schema as a file; path and files are NULL. */
int profile_from_document(const Schema *schema, const char *name, const json_t *doc, Profile **ret, Error *ret_error);
Profile *profile_free(Profile *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Profile *, profile_free);

/* Every profile name found in profile_dirs under the root (user ones shadow shipped ones) and, for
 * a --root that is not this system, the profiles shipped with the program itself; sorted. */
typedef struct ProfileInfo {
        char *name;
        char *path;    /* as a person finds it: ROOT/etc/rtpart/profiles/x.json */
        char *summary; /* NULL if the file does not parse */
        bool user;     /* from etc/rtpart/profiles */
        bool shadows;  /* a user profile that hides a shipped one of the same name */
} ProfileInfo;
int profile_list(Root *root, ProfileInfo **ret, size_t *ret_n);
void profile_info_free_many(ProfileInfo *l, size_t n);

/* A profile resolved against a host: vendor overlay applied, CPU classes computed, variables
 * expanded, every CPU expression checked against the host's topology. */
typedef struct Resolved {
        char *name;
        json_t *doc; /* expanded; CPU expressions replaced by canonical lists */
        CpuSet isolated, housekeeping;
        const Host *host;
        Profile *profile; /* not owned */
        char **notes;     /* what resolving noticed for the plan's notes (SMT siblings split) */
} Resolved;

int profile_resolve(Profile *p, const Host *host, Resolved **ret, Error *ret_error);
Resolved *resolved_free(Resolved *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Resolved *, resolved_free);

/* Parses a CPU expression against the host: a comma-separated list of CPU numbers and ranges,
 * classes (isolated, housekeeping, all), topology selectors (node:N, package:N, l3:N), each
 * optionally prefixed by '!' to subtract it. iso/hk may be NULL while classes are not yet known.
 * On error returns -EINVAL and a message in *ret_message. */
int cpu_expr_parse(const char *expr, const Host *host, const CpuSet *iso, const CpuSet *hk, CpuSet *ret,
                   char **ret_message);

/* JSON pointer helpers (RFC 6901). */
char *json_pointer_append(const char *base, const char *token);
char *json_pointer_append_index(const char *base, size_t i);
