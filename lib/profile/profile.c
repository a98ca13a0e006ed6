/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Profile loading: files and their trust, includes, merge and origins, the document's schema and
 * names. Resolution is in profile-resolve.c, CPU expressions in cpu-expr.c, the schema types in
 * schema.c, the list of installed profiles in profile-list.c. */
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "profile-internal.h"
#include "schema.h"
#include "strv.h"

const char * const profile_dirs[] = {
        PROFILE_DIR_USER,
        PROFILE_DIR_SYSTEM,
#ifdef PROFILE_DIR_DISTRO
        PROFILE_DIR_DISTRO, /* the distribution's place, when built with another prefix */
#endif
        NULL,
};

#define MAX_INCLUDE_DEPTH 16
#define PROFILE_SIZE_MAX (1024 * 1024) /* bytes a profile file may hold */

static bool running_from_build_dir(void) {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return false;
        exe[n] = 0;
        return startswith(exe, BUILD_DIR "/");
}

void search_path_done(SearchPath *sp) {
        root_free(sp->program);
        root_free(sp->source);
        *sp = (SearchPath) {};
}

void search_path_init(Root *root, SearchPath *sp) {
        *sp = (SearchPath) {};
        for (const char * const *dir = profile_dirs; *dir && sp->n < ELEMENTSOF(sp->d); dir++)
                sp->d[sp->n++] = (typeof(sp->d[0])) { root, *dir, streq(*dir, PROFILE_DIR_USER) };
        if (root_is_system(root))
                return;
        if (root_new("/", &sp->program) >= 0)
                for (const char * const *dir = profile_dirs + 1; *dir && sp->n < ELEMENTSOF(sp->d); dir++)
                        sp->d[sp->n++] = (typeof(sp->d[0])) { sp->program, *dir, false };
        if (running_from_build_dir() && root_new(SOURCE_PROFILE_DIR, &sp->source) >= 0 && sp->n < ELEMENTSOF(sp->d))
                sp->d[sp->n++] = (typeof(sp->d[0])) { sp->source, ".", false };
}

/* ---- errors ---- */

char *json_pointer_append(const char *base, const char *token) {
        StrBuf b = {};
        strbuf_append(&b, base);
        strbuf_append(&b, "/");
        for (const char *p = token; *p; p++) {
                if (*p == '~')
                        strbuf_append(&b, "~0");
                else if (*p == '/')
                        strbuf_append(&b, "~1");
                else {
                        char c[2] = { *p, 0 };
                        strbuf_append(&b, c);
                }
        }
        return strbuf_steal(&b);
}

char *json_pointer_append_index(const char *base, size_t i) {
        char *s;
        return asprintf(&s, "%s/%zu", base, i) < 0 ? NULL : s;
}

/* ---- schema ---- */

/* The keys that belong to no domain; each domain's section is in its backend file. */

static const char * const vcpu_siblings_choices[] = { "apart", "together", NULL };
static const Schema vcpu_siblings_schema = { SCHEMA_STRING, .choices = vcpu_siblings_choices };
static const SchemaField cpus_fields[] = { { "isolated", &schema_cpus },
                                           { "housekeeping", &schema_cpus },
                                           { "housekeeping_cores_per_node", &schema_cores },
                                           { "vcpu_siblings", &vcpu_siblings_schema },
                                           {} };
static const Schema cpus_schema = { SCHEMA_OBJECT, .fields = cpus_fields };

static const char * const drift_policies[] = { "report", "correct", NULL };
static const Schema drift_policy_schema = { SCHEMA_STRING, .choices = drift_policies };
static const Schema drift_domains_schema = { SCHEMA_MAP, .items = &drift_policy_schema };
static const SchemaField drift_fields[] = { { "policy", &drift_policy_schema },
                                            { "domains", &drift_domains_schema },
                                            { "interval_s", &schema_interval },
                                            { "task_allow", &schema_strings_array },
                                            {} };
static const Schema drift_schema = { SCHEMA_OBJECT, .fields = drift_fields };

static const Schema latency_limit_schema = { SCHEMA_INT, .min = 1, .max = 1000000 };
static const SchemaField check_fields[] = { { "latency_max_us", &latency_limit_schema }, {} };
static const Schema check_schema = { SCHEMA_OBJECT, .fields = check_fields };

static const Schema variables_schema = { SCHEMA_MAP, .items = &schema_scalar };

/* An entry of drift.task_allow must match something. */
static int check_drift(const char *file, json_t *drift, const char *ptr, Error *e) {
        size_t i;
        json_t *v;
        json_array_foreach (json_object_get(drift, "task_allow"), i, v) {
                const char *entry = json_string_value(v);
                if (entry && (!*entry || streq(entry, "!"))) {
                        _cleanup_free_ char *p = NULL;
                        if (asprintf(&p, "%s/task_allow/%zu", ptr, i) < 0)
                                return -ENOMEM;
                        return error_set(e, -EINVAL, file, p,
                                         "an empty entry matches nothing; give a comm pattern (\"qemu-*\"), a cgroup "
                                         "(\"/machine.slice\") or an exception (\"!stress*\")");
                }
        }
        return 0;
}

/* A fragment is what a vendor overlay may carry: everything but include, variables and vendor.
 * Its keys are these, then the sections, then the tail. */
static const SchemaField fragment_head[] = {
        { "summary", &schema_string }, { "description", &schema_string }, { "cpus", &cpus_schema }, {}
};
static const SchemaField fragment_tail[] = { { "drift", &drift_schema, check_drift }, { "check", &check_schema }, {} };

/* A whole document: these, then a fragment's keys. */
static const SchemaField top_head[] = {
        { "include", &schema_strings }, { "variables", &variables_schema }, { "vendor" }, {}
};

static size_t fields_append(SchemaField *l, size_t n, const SchemaField *add) {
        for (; add->key; add++)
                l[n++] = *add;
        return n;
}

void profile_schema_init(ProfileSchema *s, const SchemaField *sections, size_t n_sections) {
        assert(n_sections <= PROFILE_SECTIONS_MAX);
        *s = (ProfileSchema) {
                .top = { SCHEMA_OBJECT, .fields = s->top_fields },
                .fragment = { SCHEMA_OBJECT, .fields = s->fragment_fields },
                .vendor = { SCHEMA_OBJECT, .fields = s->vendor_fields },
        };
        size_t n = fields_append(s->fragment_fields, 0, fragment_head);
        for (size_t i = 0; i < n_sections; i++)
                s->fragment_fields[n++] = sections[i];
        n = fields_append(s->fragment_fields, n, fragment_tail);
        s->fragment_fields[n] = (SchemaField) {};

        s->vendor_fields[0] = (SchemaField) { "intel", &s->fragment };
        s->vendor_fields[1] = (SchemaField) { "amd", &s->fragment };
        s->vendor_fields[2] = (SchemaField) {};

        n = fields_append(s->top_fields, 0, top_head);
        for (size_t i = 0; i < n; i++)
                if (!s->top_fields[i].schema) /* "vendor": overlays of this document's own shape */
                        s->top_fields[i].schema = &s->vendor;
        n = fields_append(s->top_fields, n, s->fragment_fields);
        s->top_fields[n] = (SchemaField) {};
}

/* ---- loading and merging ---- */

Profile *profile_free(Profile *p) {
        if (!p)
                return NULL;
        free(p->name);
        free(p->path);
        free(p->summary);
        json_decref(p->doc);
        json_decref(p->origins);
        strv_free(p->files);
        free(p);
        return NULL;
}

bool profile_is_path(const char *s) {
        size_t n = strlen(s);
        return strchr(s, '/') || (n > 5 && streq(s + n - 5, ".json"));
}

bool profile_name_valid(const char *s) {
        if (!*s || strlen(s) > 128)
                return false;
        for (const char *c = s; *c; c++)
                if (!isalnum((unsigned char) *c) && !strchr("._-", *c))
                        return false;
        return s[0] != '.';
}

static char *stem(const char *path) {
        const char *b = strrchr(path, '/');
        b = b ? b + 1 : path;
        size_t n = strlen(b);
        if (n > 5 && streq(b + n - 5, ".json"))
                n -= 5;
        return strndup(b, n);
}

static const char *file_type_name(mode_t mode) {
        switch (mode & S_IFMT) {
        case S_IFDIR:
                return "a directory";
        case S_IFIFO:
                return "a FIFO";
        case S_IFCHR:
                return "a character device";
        case S_IFBLK:
                return "a block device";
        case S_IFSOCK:
                return "a socket";
        default:
                return "not a plain file";
        }
}

/* The checks a profile file passes before a byte of it is read, on what was opened (fstat of the
 * fd, never the path again): a regular file, owned by root or by the reader, writable by no one
 * else. A profile rtpartd (root) applies is one that only root could have written. */
static int check_trusted(int fd, const char *display, Error *e) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return error_set(e, -errno, display, NULL, "cannot read profile: %s", strerror(errno));
        if (!S_ISREG(st.st_mode))
                return error_set(e, -EINVAL, display, NULL, "not a regular file (%s); give a profile's .json file",
                                 file_type_name(st.st_mode));
        uid_t me = geteuid();
        if (st.st_uid != 0 && st.st_uid != me) {
                if (me == 0)
                        return error_set(
                                e, -EINVAL, display, NULL,
                                "owned by uid %u, not by root; a profile rtpartd applies must be owned by root "
                                "(chown root: %s)",
                                (unsigned) st.st_uid, display);
                return error_set(e, -EINVAL, display, NULL,
                                 "owned by uid %u, neither by root nor by you (uid %u); use a copy you own (cp %s .)",
                                 (unsigned) st.st_uid, (unsigned) me, display);
        }
        if ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != 0))
                return error_set(e, -EINVAL, display, NULL,
                                 "%s (mode %04o); a profile must be writable by its owner only (chmod go-w %s)",
                                 st.st_mode & S_IWOTH ? "world-writable" : "group-writable",
                                 (unsigned) (st.st_mode & 07777), display);
        if (st.st_size > PROFILE_SIZE_MAX)
                return error_set(e, -EINVAL, display, NULL,
                                 "larger than 1 MiB (%lld bytes); a profile is at most 1 MiB", (long long) st.st_size);
        return 0;
}

/* Reads what check_trusted() let through, at most PROFILE_SIZE_MAX bytes (the file may grow after
 * the fstat), as text: a NUL byte in it is refused, not silently the end of the profile. */
static int read_trusted(int fd, const char *display, char **ret_text, Error *e) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;

        for (;;) {
                if (len == cap) {
                        if (cap > PROFILE_SIZE_MAX)
                                break;
                        cap = MIN(cap ? 2 * cap : 16384, (size_t) PROFILE_SIZE_MAX + 1);
                        char *n = realloc(buf, cap + 1);
                        if (!n)
                                return -ENOMEM;
                        buf = n;
                }
                ssize_t r = read(fd, buf + len, cap - len);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return error_set(e, -errno, display, NULL, "cannot read profile: %s", strerror(errno));
                if (r == 0)
                        break;
                len += (size_t) r;
        }
        if (len > PROFILE_SIZE_MAX)
                return error_set(e, -EINVAL, display, NULL, "larger than 1 MiB; a profile is at most 1 MiB");
        const char *nul = memchr(buf ?: "", 0, len);
        if (nul)
                return error_set(
                        e, -EINVAL, display, NULL,
                        "a NUL byte at offset %zu; a profile is JSON text (was the file truncated or overwritten?)",
                        (size_t) (nul - buf));
        if (!buf && !(buf = malloc(1)))
                return -ENOMEM;
        buf[len] = 0;
        *ret_text = TAKE_PTR(buf);
        return 0;
}

/* Every profile file and include is read here: rel under root, or with root NULL a path from the
 * current directory. Opening never blocks (a FIFO is refused, not waited on); what is read is
 * what was checked. -ENOENT when there is no such file, with the error set. */
int profile_read_file(Root *root, const char *rel, const char *display, char **ret_text, Error *e) {
        const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
        _cleanup_close_ int fd = root ? root_open(root, rel, flags, 0) : open(rel, flags);
        if (!root && fd < 0)
                fd = -errno;
        if (fd < 0)
                return error_set(e, fd, display, NULL, "cannot open profile: %s", strerror(-fd));
        int k = check_trusted(fd, display, e);
        if (k < 0)
                return k;
        return read_trusted(fd, display, ret_text, e);
}

/* rel beside the directory dir (rel itself when absolute), as people read a path: without "."
 * components and repeated slashes, which name no other file ("./a/./b.json" is "a/b.json"). ".."
 * stays: past a symbolic link it is not the parent the text shows. NULL on OOM. */
static char *path_join(const char *dir, const char *rel) {
        _cleanup_free_ char *joined = NULL;
        if (rel[0] == '/' || !dir)
                joined = strdup(rel);
        else if (asprintf(&joined, "%s/%s", dir, rel) < 0)
                joined = NULL;
        if (!joined)
                return NULL;
        StrBuf b = {};
        if (joined[0] == '/')
                strbuf_append(&b, "/");
        bool first = true;
        for (char *seg = joined, *next; seg; seg = next) {
                next = strchr(seg, '/');
                if (next)
                        *next++ = 0;
                if (!*seg || streq(seg, "."))
                        continue;
                strbuf_appendf(&b, "%s%s", first ? "" : "/", seg);
                first = false;
        }
        if (first && b.len == 0)
                strbuf_append(&b, ".");
        return strbuf_steal(&b);
}

/* The identity of a profile file for cycle detection: its real path where it has one. */
static char *file_key(const char *display) {
        char *real = realpath(display, NULL);
        return real ? real : strdup(display);
}

static int read_profile_text(Root *root, const char *name_or_path, const char *include_dir, char * const *loading,
                             char **ret_text, char **ret_display, char **ret_dir, Error *e) {
        _cleanup_free_ char *text = NULL, *display = NULL, *dir = NULL;
        int k;

        if (profile_is_path(name_or_path)) {
                /* An include's path is relative to the including file's directory. */
                _cleanup_free_ char *path = include_dir ? path_join(include_dir, name_or_path) : strdup(name_or_path);
                if (!path)
                        return -ENOMEM;
                k = profile_read_file(NULL, path, path, &text, e);
                if (k < 0)
                        return k;
                char *slash = strrchr(path, '/');
                dir = slash ? strndup(path, (size_t) (slash - path)) : strdup(".");
                if (slash == path) {
                        free(dir);
                        dir = strdup("/");
                }
                display = TAKE_PTR(path);
        } else {
                if (!profile_name_valid(name_or_path))
                        return error_set(
                                e, -EINVAL, name_or_path, NULL,
                                "not a profile name; names use letters, digits, '.', '_' and '-' (see rtpartctl list), or give a path to a .json file");
                /* An include by name from a profile read by path looks beside that file first, so
                 * a directory of profiles works wherever it is. */
                if (include_dir) {
                        _cleanup_free_ char *file = NULL, *beside = NULL;
                        if (asprintf(&file, "%s.json", name_or_path) < 0 || !(beside = path_join(include_dir, file)))
                                return -ENOMEM;
                        _cleanup_free_ char *bkey = file_key(beside);
                        if (access(beside, F_OK) >= 0 && !strv_contains(loading, bkey))
                                return read_profile_text(root, beside, NULL, loading, ret_text, ret_display, ret_dir,
                                                         e);
                }
                k = -ENOENT;
                SearchPath sp;
                search_path_init(root, &sp);
                for (size_t i = 0; i < sp.n; i++) {
                        _cleanup_free_ char *rel = NULL;
                        if (asprintf(&rel, "%s/%s.json", sp.d[i].dir, name_or_path) < 0) {
                                search_path_done(&sp);
                                return -ENOMEM;
                        }
                        _cleanup_free_ char *cand = root_display_path(sp.d[i].root, rel), *ckey = NULL;
                        if (!cand || !(ckey = file_key(cand))) {
                                search_path_done(&sp);
                                return -ENOMEM;
                        }
                        /* A user profile that includes the shipped profile of its own name gets
                         * the shipped one, not itself. */
                        if (strv_contains(loading, ckey))
                                continue;
                        k = profile_read_file(sp.d[i].root, rel, cand, &text, e);
                        if (k == -ENOENT)
                                continue;
                        if (k < 0) {
                                search_path_done(&sp);
                                return k;
                        }
                        display = TAKE_PTR(cand);
                        char *slash = strrchr(display, '/');
                        dir = slash ? strndup(display, (size_t) (slash - display)) : strdup(".");
                        if (!dir) {
                                search_path_done(&sp);
                                return -ENOMEM;
                        }
                        break;
                }
                search_path_done(&sp);
                if (k == -ENOENT) {
                        _cleanup_free_ char *a = root_display_path(root, profile_dirs[0]);
                        _cleanup_free_ char *b = root_display_path(root, profile_dirs[1]);
                        return error_set(e, -ENOENT, name_or_path, NULL,
                                         "no such profile in %s or %s; see rtpartctl list", strempty(a), strempty(b));
                }
        }
        *ret_text = TAKE_PTR(text);
        *ret_display = TAKE_PTR(display);
        if (ret_dir)
                *ret_dir = TAKE_PTR(dir);
        return 0;
}

/* Objects merge, everything else (arrays included) replaces; null deletes. origins records which
 * file set each pointer. */
int profile_merge(json_t *dst, json_t *src, const char *ptr, json_t *origins, const char *file) {
        const char *key;
        json_t *v;

        json_object_foreach (src, key, v) {
                _cleanup_free_ char *p = json_pointer_append(ptr, key);
                if (!p)
                        return -ENOMEM;
                json_t *cur = json_object_get(dst, key);
                if (json_is_object(v) && json_is_object(cur)) {
                        int k = profile_merge(cur, v, p, origins, file);
                        if (k < 0)
                                return k;
                        continue;
                }
                if (json_object_set_new(dst, key, json_deep_copy(v)) < 0)
                        return -ENOMEM;
                if (origins && json_object_set_new(origins, p, json_string(file)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Records `file` as the origin of every pointer inside v (so later lookups find the deepest). */
static int mark_origin(json_t *v, const char *ptr, json_t *origins, const char *file) {
        if (json_object_set_new(origins, ptr, json_string(file)) < 0)
                return -ENOMEM;
        const char *key;
        json_t *c;
        if (json_is_object(v))
                json_object_foreach (v, key, c) {
                        _cleanup_free_ char *p = json_pointer_append(ptr, key);
                        if (!p || mark_origin(c, p, origins, file) < 0)
                                return -ENOMEM;
                }
        return 0;
}

const char *profile_origin_of(const json_t *origins, const char *ptr, const char *fallback) {
        _cleanup_free_ char *p = strdup(ptr);
        if (!p)
                return fallback;
        for (;;) {
                const char *f = json_string_value(json_object_get(origins, p));
                if (f)
                        return f;
                char *slash = strrchr(p, '/');
                if (!slash)
                        return fallback;
                *slash = 0;
        }
}

typedef struct LoadState {
        Root *root;
        const Schema *schema;
        char **stack; /* files being loaded, as displayed */
        char **keys;  /* … and their real paths, for cycle detection */
        char **files;
} LoadState;

/* The shape of one profile document and what its checks say (its vendor overlays included). */
static int validate_document(const char *file, const json_t *doc, const Schema *schema, Error *e) {
        int k = schema_validate(file, "", doc, schema, e);
        if (k < 0)
                return k;
        return schema_check(file, "", (json_t *) doc, schema, e);
}

static int load_rec(LoadState *st, const char *name_or_path, const char *include_dir, const char *from_file,
                    const char *from_ptr, json_t **ret_doc, json_t *origins, char **ret_summary, Error *e) {
        _cleanup_free_ char *text = NULL, *display = NULL, *dir = NULL;
        json_error_t jerr;
        int k;

        k = read_profile_text(st->root, name_or_path, include_dir, st->keys, &text, &display, &dir, e);
        if (k < 0) {
                if (from_file && e && e->code == -ENOENT) {
                        _cleanup_free_ char *msg = e->message ? strdup(e->message) : NULL;
                        return error_set(e, -EINVAL, from_file, from_ptr, "included profile \"%s\": %s", name_or_path,
                                         strempty(msg));
                }
                return k;
        }
        _cleanup_free_ char *key = file_key(display);
        if (!key)
                return -ENOMEM;
        if (strv_contains(st->keys, key)) {
                StrBuf chain = {};
                for (char **s = st->stack; *s; s++)
                        strbuf_appendf(&chain, "%s -> ", *s);
                strbuf_append(&chain, display);
                _cleanup_free_ char *c = strbuf_steal(&chain);
                return error_set(e, -EINVAL, from_file, from_ptr, "include cycle: %s; remove one of these includes",
                                 strempty(c));
        }
        if (strv_length(st->stack) >= MAX_INCLUDE_DEPTH)
                return error_set(e, -EINVAL, from_file, from_ptr, "includes nest deeper than %d levels",
                                 MAX_INCLUDE_DEPTH);

        _cleanup_(json_decrefp) json_t *doc = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
        if (!doc) {
                _cleanup_free_ char *where = NULL;
                if (asprintf(&where, "%s:%d:%d", display, jerr.line, jerr.column) < 0)
                        return -ENOMEM;
                return error_set(e, -EINVAL, where, NULL, "not valid JSON: %s", jerr.text);
        }
        k = validate_document(display, doc, st->schema, e);
        if (k < 0)
                return k;

        k = strv_extend(&st->stack, display);
        if (k >= 0)
                k = strv_extend(&st->keys, key);
        if (k < 0)
                return k;

        /* Includes first, in order; this file on top. */
        _cleanup_(json_decrefp) json_t *merged = json_object();
        if (!merged)
                return -ENOMEM;
        json_t *inc = json_object_get(doc, "include");
        json_t *inc_list = json_is_string(inc) ? json_pack("[O]", inc) : json_incref(inc);
        size_t i;
        json_t *item;
        json_array_foreach (inc_list, i, item) {
                _cleanup_(json_decrefp) json_t *sub = NULL;
                _cleanup_free_ char *ptr =
                        json_is_array(inc) ? json_pointer_append_index("/include", i) : strdup("/include");
                k = load_rec(st, json_string_value(item), dir, display, ptr, &sub, origins, NULL, e);
                if (k < 0) {
                        json_decref(inc_list);
                        return k;
                }
                k = profile_merge(merged, sub, "", NULL, display); /* origins were set by the sub-load */
                if (k < 0) {
                        json_decref(inc_list);
                        return k;
                }
        }
        json_decref(inc_list);
        json_object_del(doc, "include");

        /* Variables merge like everything else; the including file's win. */
        k = profile_merge(merged, doc, "", origins, display);
        if (k < 0)
                return k;
        k = mark_origin(doc, "", origins, display);
        if (k < 0)
                return k;

        if (ret_summary) {
                const char *s = json_string_value(json_object_get(merged, "summary"));
                *ret_summary = s ? strdup(s) : NULL;
        }
        free(st->stack[strv_length(st->stack) - 1]);
        st->stack[strv_length(st->stack) - 1] = NULL;
        free(st->keys[strv_length(st->keys) - 1]);
        st->keys[strv_length(st->keys) - 1] = NULL;
        if (!strv_contains(st->files, display)) {
                k = strv_extend(&st->files, display);
                if (k < 0)
                        return k;
        }
        *ret_doc = TAKE_PTR(merged);
        return 0;
}

int profile_load(Root *root, const Schema *schema, const char *name_or_path, Profile **ret, Error *ret_error) {
        _cleanup_(profile_freep) Profile *p = NULL;
        LoadState st = { .root = root, .schema = schema };
        int k;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->origins = json_object();
        p->name = stem(name_or_path);
        p->schema = schema;
        if (!p->origins || !p->name)
                return -ENOMEM;

        k = load_rec(&st, name_or_path, NULL, NULL, NULL, &p->doc, p->origins, &p->summary, ret_error);
        strv_free(st.stack);
        strv_free(st.keys);
        if (k < 0) {
                strv_free(st.files);
                return k;
        }
        p->files = st.files;
        size_t n = strv_length(p->files);
        p->path = n ? strdup(p->files[n - 1]) : NULL;
        error_done(ret_error); /* a name not found in an earlier search directory left one */
        *ret = TAKE_PTR(p);
        return 0;
}

int profile_from_document(const Schema *schema, const char *name, const json_t *doc, Profile **ret, Error *ret_error) {
        _cleanup_(profile_freep) Profile *p = NULL;
        _cleanup_free_ char *label = NULL;
        int k;

        if (asprintf(&label, "%s (as applied, in the journal)", strempty(name)) < 0)
                return -ENOMEM;
        if (!name || !*name || !doc)
                return error_set(ret_error, -EINVAL, label, NULL, "no profile document; apply the profile again");
        k = validate_document(label, doc, schema, ret_error);
        if (k < 0)
                return k;
        if (json_object_get(doc, "include"))
                return error_set(ret_error, -EINVAL, label, "/include",
                                 "an applied profile has its includes merged and names none; apply the profile again");

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->name = strdup(name);
        p->schema = schema;
        p->doc = json_deep_copy(doc);
        p->origins = json_object();
        if (!p->name || !p->doc || !p->origins)
                return -ENOMEM;
        k = mark_origin(p->doc, "", p->origins, label);
        if (k < 0)
                return k;
        const char *summary = json_string_value(json_object_get(doc, "summary"));
        if (summary && !(p->summary = strdup(summary)))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}
