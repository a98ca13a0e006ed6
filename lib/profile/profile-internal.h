/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What profile loading (profile.c) and resolution (profile-resolve.c) share. */

#include <jansson.h>

#include "profile.h"

/* Merges src into dst at ptr: objects merge, everything else (arrays included) replaces; null
 * deletes. origins (may be NULL) records file as the origin of every pointer set. */
int profile_merge(json_t *dst, json_t *src, const char *ptr, json_t *origins, const char *file);
/* The file that set ptr or its closest parent, else fallback. */
const char *profile_origin_of(const json_t *origins, const char *ptr, const char *fallback);
