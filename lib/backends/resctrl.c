/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <unistd.h>

#include "backend.h"
#include "resctrl-internal.h"
#include "resctrl.h"
#include "strv.h"

/* The "cat" section of a profile: cache and memory-bandwidth groups. */
static const SchemaField share_fields[] = {
        { "mask", &schema_string }, { "ways", &schema_cores }, { "percent", &schema_percent }, {}
};
static const Schema share_schema = { SCHEMA_OBJECT, .fields = share_fields };
static const SchemaField cat_group_fields[] = { { "name", &schema_string },    { "cpus", &schema_cpus },
                                                { "l3", &share_schema },       { "l3code", &share_schema },
                                                { "l3data", &share_schema },   { "mb", &schema_percent },
                                                { "exclusive", &schema_bool }, {} };
static const Schema cat_group_schema = { SCHEMA_OBJECT, .fields = cat_group_fields };
static const Schema cat_groups_schema = { SCHEMA_ARRAY, .items = &cat_group_schema };
static const SchemaField cat_guests_fields[] = { { "l3", &share_schema }, { "mb", &schema_percent }, {} };
static const Schema cat_guests_schema = { SCHEMA_OBJECT, .fields = cat_guests_fields };
static const SchemaField cat_fields[] = {
        { "groups", &cat_groups_schema }, { "shrink_default", &schema_bool }, { "guests", &cat_guests_schema }, {}
};
static const Schema cat_schema = { SCHEMA_OBJECT, .fields = cat_fields };
static const SchemaField resctrl_section = { "cat", &cat_schema };

/* resctrl: Intel CAT/CDP/MBA and AMD L3 QoS through /sys/fs/resctrl. The profile's "cat" section
 * names groups, each with CPUs and a share of the L3 cache (a mask, a number of ways or a
 * percentage) and optionally of memory bandwidth, and the ways kept for guests ("guests": no
 * group and not the default group takes them; libvirt makes each guest's <cachetune> group of
 * them, so they have no knob). Knobs:
 *
 *   resctrl/<group>/schemata/<RES>   <mount>/<group>/schemata   "0=7f0;1=7f0" (VALUE_SCHEMATA)
 *   resctrl/<group>/cpus             <mount>/<group>/cpus_list  CPU list
 *   resctrl/<group>/mode             <mount>/<group>/mode       "exclusive" or "shareable"
 *   resctrl/default/schemata/<RES>   <mount>/schemata           the root (default) group
 *   resctrl/mount                    <mount>                    "mounted" or "mounted,cdp"
 *
 * RES is the resource's name in the schemata file (L3, L3CODE, L3DATA, MB), so that a writer
 * writes "RES:VALUE\n" to the path; the group's directory is the path's parent.
 *
 * Writing: resctrl/mount comes first and mounts resctrl (with -o cdp when a group splits code
 * and data) on the real host where the kernel has it and nobody mounted it; revert unmounts it
 * again if rtpart mounted it. Every other write holds flock(LOCK_EX) on the mount directory, as
 * the kernel's documentation asks of every program changing resctrl. A group is created
 * (mkdir) by the first of its knobs written; any of its knobs written as absent removes it
 * (rmdir: the kernel gives its CPUs and tasks back to the default group), and the default
 * group's schemata comes back through its own knob, written first and so reverted last. A
 * refused write's reason, info/last_cmd_status, goes into its result. Groups are
 * made, written and removed through the root's ops (ROOT_FS_RESCTRL objects); a root that cannot
 * mount (ROOT_CAN_MOUNT: any tree) skips the mount knob. */

/* ---- text formats ---- */

static bool schemata_value_valid(const char *v) {
        if (!*v)
                return false;
        for (const char *p = v; *p;) {
                const char *end = strchrnul(p, ';');
                const char *eq = memchr(p, '=', (size_t) (end - p));
                if (!eq || eq == p || eq + 1 == end)
                        return false;
                /* A domain id: what resctrl_schemata_domains() takes, at most UINT32_MAX. */
                uint64_t id = 0;
                for (const char *c = p; c < eq; c++) {
                        if (!isdigit((unsigned char) *c))
                                return false;
                        id = id * 10 + (uint64_t) (*c - '0');
                        if (id > UINT32_MAX)
                                return false;
                }
                for (const char *c = eq + 1; c < end; c++)
                        if (!isxdigit((unsigned char) *c))
                                return false;
                p = *end ? end + 1 : end;
        }
        return true;
}

int resctrl_schemata_parse(const char *text, const char *resource, char **ret) {
        size_t rl = strlen(resource);

        for (const char *p = text; p && *p;) {
                const char *eol = strchrnul(p, '\n');
                const char *s = p;
                while (s < eol && isspace((unsigned char) *s))
                        s++;
                if ((size_t) (eol - s) > rl && strncmp(s, resource, rl) == 0) {
                        const char *c = s + rl;
                        while (c < eol && (*c == ' ' || *c == '\t'))
                                c++;
                        if (c < eol && *c == ':') {
                                _cleanup_free_ char *v = malloc((size_t) (eol - c) + 1);
                                char *o = v;
                                if (!v)
                                        return -ENOMEM;
                                for (c++; c < eol; c++)
                                        if (!isspace((unsigned char) *c))
                                                *o++ = *c;
                                *o = 0;
                                if (!schemata_value_valid(v))
                                        return -EINVAL;
                                *ret = TAKE_PTR(v);
                                return 0;
                        }
                }
                p = *eol ? eol + 1 : eol;
        }
        return -ENOENT;
}

int resctrl_schemata_domains(const char *value, unsigned **ret, size_t *ret_n) {
        _cleanup_free_ unsigned *ids = NULL;
        size_t n = 0;

        if (!schemata_value_valid(value))
                return -EINVAL;
        for (const char *p = value; *p;) {
                char *end;
                errno = 0;
                unsigned long id = strtoul(p, &end, 10);
                if (errno || id > UINT32_MAX)
                        return -EINVAL;
                unsigned *m = realloc(ids, (n + 1) * sizeof(unsigned));
                if (!m)
                        return -ENOMEM;
                ids = m;
                ids[n++] = (unsigned) id;
                p = strchrnul(p, ';');
                if (*p)
                        p++;
        }
        *ret = TAKE_PTR(ids);
        *ret_n = n;
        return 0;
}

int resctrl_mask_parse(const char *s, uint64_t *ret) {
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                s += 2;
        size_t n = strlen(s);
        if (n == 0 || n > 16)
                return -EINVAL;
        for (const char *c = s; *c; c++)
                if (!isxdigit((unsigned char) *c))
                        return -EINVAL;
        *ret = strtoull(s, NULL, 16);
        return 0;
}

char *resctrl_schemata_format(const unsigned *domains, size_t n, uint64_t value, unsigned cbm_bits) {
        StrBuf b = {};
        for (size_t i = 0; i < n; i++)
                if (cbm_bits > 0)
                        strbuf_appendf(&b, "%s%u=%0*llx", i ? ";" : "", domains[i], (int) ((cbm_bits + 3) / 4),
                                       (unsigned long long) value);
                else
                        strbuf_appendf(&b, "%s%u=%llu", i ? ";" : "", domains[i], (unsigned long long) value);
        if (n == 0)
                strbuf_append(&b, "");
        return strbuf_steal(&b);
}

/* ---- read and write ---- */

static const char * const mount_options[] = { "cdp", "cdpl2", "mba_MBps" };

int resctrl_read_mount(Root *root, const char *path, char **ret) {
        _cleanup_free_ char *text = NULL;
        bool mountinfo = true;
        int k = root_read_file(root, "proc/self/mountinfo", &text, NULL);
        if (k == -ENOENT) {
                mountinfo = false; /* an old or minimal tree: /proc/mounts has the same facts */
                k = root_read_file(root, "proc/mounts", &text, NULL);
        }
        if (k < 0)
                return k == -ENOENT ? (*ret = NULL, 0) : k;
        while (*path == '/')
                path++;
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                /* id parent maj:min root mountpoint opts [optional…] - fstype source superopts */
                char *f[32], *save = NULL;
                size_t n = 0;
                for (char *t = strtok_r(line, " ", &save); t && n < ELEMENTSOF(f); t = strtok_r(NULL, " ", &save))
                        f[n++] = t;
                /* mountinfo: the mount point is field 4, options 5 and dash+3; mounts: "source
                 * mountpoint fstype options", as if the dash were field 0 (options at 3). */
                size_t dash = 0, mp = 4, opts = 5;
                for (size_t i = 6; mountinfo && i < n && !dash; i++)
                        if (streq(f[i], "-"))
                                dash = i;
                if (!mountinfo) {
                        if (n < 4)
                                continue;
                        dash = 1;
                        mp = 1;
                        opts = 3;
                } else if (!dash)
                        continue;
                if (dash + 1 >= n || !streq(f[mountinfo ? dash + 1 : 2], "resctrl") ||
                    !streq(f[mp] + (f[mp][0] == '/'), path))
                        continue;
                StrBuf b = {};
                strbuf_append(&b, "mounted");
                for (size_t o = 0; o < ELEMENTSOF(mount_options); o++) {
                        bool on = false;
                        for (size_t i = 0; i < n; i++) {
                                if (i != opts && !(mountinfo && i == dash + 3))
                                        continue;
                                _cleanup_free_ char *padded = NULL;
                                if (asprintf(&padded, ",%s,", f[i]) < 0) {
                                        strbuf_done(&b);
                                        return -ENOMEM;
                                }
                                char want[32];
                                snprintf(want, sizeof(want), ",%s,", mount_options[o]);
                                on = on || strstr(padded, want);
                        }
                        if (on)
                                strbuf_appendf(&b, ",%s", mount_options[o]);
                }
                *ret = strbuf_steal(&b);
                return *ret ? 0 : -ENOMEM;
        }
        *ret = NULL;
        return 0;
}

/* Whether dir holds resctrl groups rtpart did not remove (a mount it would take with it). */
static int foreign_groups(Root *root, const char *mount, char **ret) {
        DIR *d;
        StrBuf b = {};
        int k = root_opendir(root, mount, &d);
        if (k < 0)
                return k;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && !streq(de->d_name, "info") && !streq(de->d_name, "mon_groups") &&
                    !streq(de->d_name, "mon_data") && de->d_type == DT_DIR)
                        strbuf_appendf(&b, "%s%s", b.len ? ", " : "", de->d_name);
        closedir(d);
        *ret = strbuf_steal(&b);
        return *ret ? 0 : -ENOMEM;
}

static int write_mount(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        _cleanup_free_ char *cur = NULL, *abs = NULL;
        int r = resctrl_read_mount(root, k->path, &cur);
        if (r < 0)
                return r;
        if (!!cur == !!value)
                return 0; /* mounted (options are never changed under groups), or not */
        if (!root_can(root, ROOT_CAN_MOUNT))
                return KNOB_SKIPPED; /* a tree has no kernel to mount anything */
        if (asprintf(&abs, "/%s", k->path) < 0)
                return -ENOMEM;
        if (value) {
                const char *opts = strchr(value, ',');
                r = root_mount(root, k->path, "resctrl", opts ? opts + 1 : NULL);
                if (r < 0) {
                        knob_result_reason(ret, "mount -t resctrl%s%s resctrl %s: %s", opts ? " -o " : "",
                                           opts ? opts + 1 : "", abs, strerror(-r));
                        return r;
                }
                return 0;
        }
        /* Unmounting would destroy groups someone created since: then resctrl stays. */
        _cleanup_free_ char *others = NULL;
        r = foreign_groups(root, k->path, &others);
        if (r < 0)
                return r;
        if (*others) {
                knob_result_reason(ret, "resctrl stays mounted at %s: it holds groups rtpart did not create (%s)", abs,
                                   others);
                return KNOB_SKIPPED;
        }
        r = root_umount(root, k->path);
        if (r < 0) {
                knob_result_reason(ret, "umount %s: %s", abs, strerror(-r));
                return r;
        }
        return 0;
}

/* A knob's group and mount: "resctrl/<group>/…" at "<mount>/<group>/<file>", or the default group
 * at "<mount>/schemata" (group NULL). */
typedef struct ResctrlKnob {
        char *mount;
        char *group;
        const char *file;
        const char *resource; /* schemata knobs: "L3", "MB", … */
} ResctrlKnob;

static void resctrl_knob_done(ResctrlKnob *c) {
        free(c->mount);
        free(c->group);
}

/* The resource a schemata knob is about: "resctrl/rt/schemata/L3" → "L3"; NULL for other knobs. */
static const char *knob_resource(const Knob *k) {
        const char *s = strstr(k->id, "/schemata/");
        return s ? s + strlen("/schemata/") : NULL;
}

static int resctrl_knob_parse(const Knob *k, ResctrlKnob *ret) {
        const char *id = k->id + strlen("resctrl/"), *slash = strchr(id, '/');
        const char *file = k->path ? strrchr(k->path, '/') : NULL;
        if (!startswith(k->id, "resctrl/") || !slash || !file)
                return -EINVAL;
        file++;
        _cleanup_free_ char *group = strndup(id, (size_t) (slash - id));
        if (!group)
                return -ENOMEM;
        bool def = streq(group, "default");
        size_t cut = strlen(file) + 1 + (def ? 0 : strlen(group) + 1), len = strlen(k->path);
        if (len <= cut)
                return -EINVAL;
        char *mount = strndup(k->path, len - cut);
        if (!mount)
                return -ENOMEM;
        *ret = (ResctrlKnob) {
                .mount = mount,
                .group = def ? NULL : TAKE_PTR(group),
                .file = file,
                .resource = knob_resource(k),
        };
        return 0;
}

/* After a refusal: the kernel's reason, info/last_cmd_status. */
static void keep_last_cmd_status(Root *root, const char *mount, KnobResult *ret) {
        _cleanup_free_ char *p = NULL, *t = NULL;
        if (asprintf(&p, "%s/info/last_cmd_status", mount) < 0 || root_read_line(root, p, &t) < 0)
                return;
        if (*t && !streq(t, "ok"))
                knob_result_reason(ret, "%s", t);
}

static int group_exists(Root *root, const ResctrlKnob *c, int mfd) {
        struct stat st;
        return fstatat(mfd, c->group, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
}

static int resctrl_write_value(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        _cleanup_(resctrl_knob_done) ResctrlKnob c = {};
        _cleanup_free_ char *mounted = NULL, *data = NULL;
        int r;

        if (streq(k->id, "resctrl/mount"))
                return write_mount(root, k, value, ret);
        r = resctrl_knob_parse(k, &c);
        if (r < 0)
                return r;
        r = resctrl_read_mount(root, c.mount, &mounted);
        if (r < 0)
                return r;
        if (!mounted) {
                if (!root_can(root, ROOT_CAN_MOUNT))
                        return KNOB_SKIPPED; /* not mounted in a tree that cannot mount it: nothing to change */
                knob_result_reason(ret, "resctrl is not mounted at /%s", c.mount);
                return -ENODEV;
        }

        /* Serialize with every other program changing resctrl (libvirt, pqos, goresctrl). */
        _cleanup_close_ int mfd = root_open(root, c.mount, O_RDONLY | O_DIRECTORY, 0);
        if (mfd < 0)
                return mfd;
        if (flock(mfd, LOCK_EX) < 0)
                return -errno;

        if (!value) {
                if (!c.group || !group_exists(root, &c, mfd))
                        return 0; /* the default group is always there; the group is already gone */
                r = root_rmdir_object(root, ROOT_FS_RESCTRL, c.mount, c.group);
        } else {
                bool created = false;
                if (c.group && !group_exists(root, &c, mfd)) {
                        r = root_mkdir_object(root, ROOT_FS_RESCTRL, c.mount, c.group);
                        if (r < 0 && r != -EEXIST) {
                                keep_last_cmd_status(root, c.mount, ret); /* ENOSPC: "out of CLOSIDs" */
                                return r;
                        }
                        created = true;
                }
                /* Schemata: only this resource's line, "L3:0=7f0;1=7f0"; the kernel keeps the rest. */
                if (c.resource ? asprintf(&data, "%s:%s", c.resource, value) < 0 : !(data = strdup(value)))
                        r = -ENOMEM;
                else
                        r = root_write_object(root, ROOT_FS_RESCTRL, c.mount, c.group, c.file, data);
                if (r < 0) {
                        keep_last_cmd_status(root, c.mount, ret);
                        /* A refused write leaves nothing behind: not the group it created either
                         * (the journal knows only of the write, not of the mkdir). */
                        if (created)
                                (void) root_rmdir_object(root, ROOT_FS_RESCTRL, c.mount, c.group);
                        return r;
                }
                return 0;
        }
        if (r < 0)
                keep_last_cmd_status(root, c.mount, ret);
        return r;
}

static int resctrl_write(Root *root, const Knob *k, const char *value, const KnobKeep *keep, KnobResult *ret) {
        *ret = (KnobResult) {};
        return knob_result_finish(ret, resctrl_write_value(root, k, value, ret));
}

static int resctrl_read(Root *root, const Knob *k, char **ret) {
        const char *res = knob_resource(k);
        _cleanup_free_ char *text = NULL;
        int r;

        if (!k->path)
                return -ENOENT;
        if (streq(k->id, "resctrl/mount"))
                return resctrl_read_mount(root, k->path, ret);
        if (!res) {
                r = knob_read_file(root, k, ret);
                if (resctrl_absent(r)) {
                        *ret = NULL;
                        return 0;
                }
                return r;
        }
        r = root_read_file(root, k->path, &text, NULL);
        if (resctrl_absent(r)) {
                *ret = NULL;
                return 0;
        }
        if (r < 0)
                return r;
        r = resctrl_schemata_parse(text, res, ret);
        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        return r;
}

/* Cache groups: named groups (not the names resctrl gives its own directories), each share
 * given one way, and either one L3 share or code and data shares (CDP). */
static int resctrl_check(const char *file, json_t *section, const char *pointer, Error *e) {
        static const char * const reserved[] = { "default", "info", "mon_groups", "mon_data", NULL };
        json_t *groups = json_object_get(section, "groups"), *v;
        _cleanup_free_ char *p = json_pointer_append(pointer, "groups");
        if (!p)
                return -ENOMEM;
        int k = backend_check_named_groups(file, groups, p, reserved, e);
        if (k < 0)
                return k;
        size_t i;
        json_array_foreach (groups, i, v) {
                _cleanup_free_ char *pi = json_pointer_append_index(p, i);
                if (!pi)
                        return -ENOMEM;
                const char *shares[] = { "l3", "l3code", "l3data" };
                for (size_t s = 0; s < ELEMENTSOF(shares); s++) {
                        json_t *sh = json_object_get(v, shares[s]);
                        if (sh && json_object_size(sh) != 1) {
                                _cleanup_free_ char *ps = json_pointer_append(pi, shares[s]);
                                return error_set(e, -EINVAL, file, ps,
                                                 "give exactly one of \"mask\", \"ways\" or \"percent\"");
                        }
                }
                if (json_object_get(v, "l3") && (json_object_get(v, "l3code") || json_object_get(v, "l3data"))) {
                        _cleanup_free_ char *ps = json_pointer_append(pi, "l3");
                        return error_set(e, -EINVAL, file, ps, "use either \"l3\" or \"l3code\"/\"l3data\", not both");
                }
        }
        return 0;
}

const Backend backend_resctrl = {
        .domain = DOMAIN_RESCTRL,
        .name = "resctrl",
        .schema = &resctrl_section,
        .check = resctrl_check,
        .plan = resctrl_plan,
        .read = resctrl_read,
        .write = resctrl_write,
        .watch = knob_watch_file,
};
