/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The installed profiles: the profile directories' files that are profiles by name, with their
 * summaries (rtpartctl list, rtpartd's ListProfiles). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile-internal.h"
#include "strv.h"

void profile_info_free_many(ProfileInfo *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(l[i].name);
                free(l[i].path);
                free(l[i].summary);
        }
        free(l);
}

static int info_cmp(const void *a, const void *b) {
        return strcmp(((const ProfileInfo *) a)->name, ((const ProfileInfo *) b)->name);
}

static int profile_info_add(Root *root, const char *dir, bool user, const char *file, ProfileInfo **l, size_t *n) {
        size_t len = strlen(file);
        _cleanup_free_ char *name = strndup(file, len - 5), *rel = NULL, *text = NULL;

        if (!name)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
                if (streq((*l)[i].name, name)) {
                        (*l)[i].shadows = (*l)[i].shadows || (*l)[i].user; /* the user's hides a shipped one */
                        return 0;
                }
        if (asprintf(&rel, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        char *summary = NULL;
        /* A file that is no profile (a FIFO, another user's) gets no summary; apply says why. */
        if (profile_read_file(root, rel, rel, &text, NULL) >= 0) {
                json_t *doc = json_loads(text, 0, NULL);
                const char *s = json_string_value(json_object_get(doc, "summary"));
                summary = s ? strdup(s) : NULL;
                json_decref(doc);
        }
        char *path = root_display_path(root, rel);
        ProfileInfo *m = realloc(*l, (*n + 1) * sizeof(ProfileInfo));
        if (!m || !path) {
                free(summary);
                free(path);
                if (m)
                        *l = m;
                return -ENOMEM;
        }
        *l = m;
        m[(*n)++] = (ProfileInfo) { .name = TAKE_PTR(name), .path = path, .summary = summary, .user = user };
        return 0;
}

/* A file's name without ".json" (n bytes) is listed only when it is a name plan and apply take as
 * one: "$(touch x).json" is no profile's name (and completing it must not run it), "a.json.json"
 * would be read as the path "a.json". */
static bool listed_name(const char *file, size_t n) {
        char name[129];
        if (n >= sizeof(name))
                return false;
        memcpy(name, file, n);
        name[n] = 0;
        return profile_name_valid(name) && !profile_is_path(name);
}

int profile_list(Root *root, ProfileInfo **ret, size_t *ret_n) {
        ProfileInfo *l = NULL;
        size_t n = 0;
        SearchPath sp;

        search_path_init(root, &sp);
        for (size_t di = 0; di < sp.n; di++) {
                struct dirent **entries;
                _cleanup_close_ int fd = root_open(sp.d[di].root, sp.d[di].dir, O_RDONLY | O_DIRECTORY, 0);
                if (fd < 0)
                        continue;
                int k = scandirat(fd, ".", &entries, NULL, alphasort);
                if (k < 0)
                        continue;
                int r = 0;
                for (int i = 0; i < k; i++) {
                        const char *f = entries[i]->d_name;
                        size_t len = strlen(f);
                        if (r >= 0 && len > 5 && streq(f + len - 5, ".json") && listed_name(f, len - 5))
                                r = profile_info_add(sp.d[di].root, sp.d[di].dir, sp.d[di].user, f, &l, &n);
                        free(entries[i]);
                }
                free(entries);
                if (r < 0) {
                        search_path_done(&sp);
                        profile_info_free_many(l, n);
                        return r;
                }
        }
        search_path_done(&sp);
        if (n)
                qsort(l, n, sizeof(ProfileInfo), info_cmp);
        *ret = l;
        *ret_n = n;
        return 0;
}
