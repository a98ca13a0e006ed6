/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What profile loading (profile.c), resolution (profile-resolve.c) and the list of installed
 * profiles (profile-list.c) share. */

#include <jansson.h>

#include "profile.h"

/* Merges src into dst at ptr: objects merge, everything else (arrays included) replaces; null
 * deletes. origins (may be NULL) records file as the origin of every pointer set. */
int profile_merge(json_t *dst, json_t *src, const char *ptr, json_t *origins, const char *file);
/* The file that set ptr or its closest parent, else fallback. */
const char *profile_origin_of(const json_t *origins, const char *ptr, const char *fallback);

/* Where names are looked up: the root's user and shipped directories; then, when --root is not this
 * system, the profiles shipped with this program (installed, or its source tree when it runs from
 * its build directory): shipped profiles belong to the program, not to the host it examines. */
typedef struct SearchPath {
        struct {
                Root *root;
                const char *dir;
                bool user;
        } d[8];
        size_t n;
        Root *program, *source;
} SearchPath;
void search_path_init(Root *root, SearchPath *sp);
void search_path_done(SearchPath *sp);

/* A name profile_load() looks up as a name: letters, digits, '.', '_' and '-', not beginning with
 * '.', 128 characters at most. */
bool profile_name_valid(const char *s);
/* The text of a profile file (rel below root, or a path of this system for root NULL) that passes
 * the trust checks of rtpart.profile(5) (a regular file, its owner, its mode, its size); display
 * names it in the error. */
int profile_read_file(Root *root, const char *rel, const char *display, char **ret_text, Error *e);
