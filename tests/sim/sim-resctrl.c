/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu-set.h"
#include "sim-internal.h"
#include "strv.h"

/* The kernel's side of resctrl for the simulator (sim-kernel.h): groups, schemata, CPUs and
 * modes. */

/* One line of a schemata file as the kernel prints it (show_doms()): the resource name padded
 * to max_name_width, then "id=value" per domain, values padded to max_data_width. */
typedef struct SchemaLine {
        char *prefix; /* "    L3": the name with its padding */
        char *name;   /* "L3" */
        size_t n;
        unsigned *ids;
        char **vals; /* as printed, padding included: "7ff", " 10" */
} SchemaLine;

typedef struct Schemata {
        SchemaLine *l;
        size_t n;
} Schemata;

static void schemata_done(Schemata *s) {
        for (size_t i = 0; i < s->n; i++) {
                free(s->l[i].prefix);
                free(s->l[i].name);
                free(s->l[i].ids);
                for (size_t j = 0; j < s->l[i].n; j++)
                        free(s->l[i].vals[j]);
                free(s->l[i].vals);
        }
        free(s->l);
        *s = (Schemata) {};
}

static int schemata_parse(const char *text, Schemata *ret) {
        _cleanup_(schemata_done) Schemata s = {};
        for (const char *p = text ? text : ""; *p;) {
                const char *eol = strchrnul(p, '\n'), *colon = memchr(p, ':', (size_t) (eol - p));
                if (!colon) {
                        p = *eol ? eol + 1 : eol;
                        continue;
                }
                SchemaLine *m = realloc(s.l, (s.n + 1) * sizeof(SchemaLine));
                if (!m)
                        return -ENOMEM;
                s.l = m;
                SchemaLine *l = &s.l[s.n++];
                *l = (SchemaLine) { .prefix = strndup(p, (size_t) (colon - p)) };
                const char *nb = p;
                while (nb < colon && *nb == ' ')
                        nb++;
                l->name = strndup(nb, (size_t) (colon - nb));
                if (!l->prefix || !l->name)
                        return -ENOMEM;
                for (const char *q = colon + 1; q < eol;) {
                        const char *end = memchr(q, ';', (size_t) (eol - q));
                        if (!end)
                                end = eol;
                        const char *eq = memchr(q, '=', (size_t) (end - q));
                        if (!eq)
                                return -EINVAL;
                        unsigned *ids = realloc(l->ids, (l->n + 1) * sizeof(unsigned));
                        if (ids)
                                l->ids = ids;
                        char **vals = realloc(l->vals, (l->n + 1) * sizeof(char *));
                        if (vals)
                                l->vals = vals;
                        if (!ids || !vals)
                                return -ENOMEM;
                        l->ids[l->n] = (unsigned) strtoul(q, NULL, 10);
                        if (!(l->vals[l->n] = strndup(eq + 1, (size_t) (end - eq - 1))))
                                return -ENOMEM;
                        l->n++;
                        q = *end == ';' ? end + 1 : end;
                }
                p = *eol ? eol + 1 : eol;
        }
        *ret = s;
        s = (Schemata) {};
        return 0;
}

static char *schemata_format(const Schemata *s) {
        StrBuf b = {};
        for (size_t i = 0; i < s->n; i++) {
                strbuf_appendf(&b, "%s:", s->l[i].prefix);
                for (size_t j = 0; j < s->l[i].n; j++)
                        strbuf_appendf(&b, "%s%u=%s", j ? ";" : "", s->l[i].ids[j], s->l[i].vals[j]);
                strbuf_append(&b, "\n");
        }
        return strbuf_steal(&b);
}

static SchemaLine *schemata_find(const Schemata *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->l[i].name, name))
                        return &s->l[i];
        return NULL;
}

static int line_domain(const SchemaLine *l, unsigned id) {
        for (size_t j = 0; j < l->n; j++)
                if (l->ids[j] == id)
                        return (int) j;
        return -1;
}

static uint64_t line_mask(const SchemaLine *l, unsigned id) {
        int j = l ? line_domain(l, id) : -1;
        return j < 0 ? 0 : strtoull(l->vals[j], NULL, 16);
}

/* A value in the width the kernel printed its predecessor with: %0*x for masks, %*u for MB. */
static char *format_value(const char *old, bool cache, uint64_t v) {
        char *s;
        int w = (int) strlen(old);
        if (cache)
                return asprintf(&s, "%0*llx", w, (unsigned long long) v) < 0 ? NULL : s;
        return asprintf(&s, "%*llu", w, (unsigned long long) v) < 0 ? NULL : s;
}

typedef struct ResInfo {
        bool cache;
        uint64_t cbm;
        unsigned bits, min_bits;
        uint64_t shareable;
        bool sparse;
        unsigned min_bw, gran, max_bw;
        unsigned num_closids;
} ResInfo;

static unsigned info_uint(Root *r, const char *mount, const char *res, const char *file, unsigned dflt, int base) {
        _cleanup_free_ char *dir = sim_path_join(mount, "info", res), *t = sim_get(r, dir, file, NULL);
        return t ? (unsigned) strtoul(t, NULL, base) : dflt;
}

static bool host_is_amd(Root *r) {
        _cleanup_free_ char *t = NULL;
        return root_read_file(r, "proc/cpuinfo", &t, NULL) >= 0 && strstr(t, "AuthenticAMD");
}

static void res_info(Root *r, const char *mount, const char *res, ResInfo *ret) {
        _cleanup_free_ char *dir = sim_path_join(mount, "info", res), *cbm = sim_get(r, dir, "cbm_mask", NULL);
        ResInfo i = { .num_closids = info_uint(r, mount, res, "num_closids", 0, 10) };
        if (cbm) {
                i.cache = true;
                i.cbm = strtoull(cbm, NULL, 16);
                i.bits = (unsigned) __builtin_popcountll(i.cbm);
                i.min_bits = info_uint(r, mount, res, "min_cbm_bits", 1, 10);
                i.shareable = info_uint(r, mount, res, "shareable_bits", 0, 16);
                _cleanup_free_ char *sp = sim_get(r, dir, "sparse_masks", NULL);
                i.sparse = sp ? atoi(sp) == 1 : host_is_amd(r);
        } else {
                /* Intel MBA is a percentage (default 100); AMD's limit is in 1/8 GB/s, default 2048. */
                bool amd = host_is_amd(r);
                i.min_bw = info_uint(r, mount, res, "min_bandwidth", 0, 10);
                i.gran = info_uint(r, mount, res, "bandwidth_gran", 1, 10);
                i.max_bw = amd ? 2048 : 100;
        }
        *ret = i;
}

static bool mask_contiguous(uint64_t m) {
        if (m == 0)
                return true;
        m >>= __builtin_ctzll(m);
        return (m & (m + 1)) == 0;
}

/* The kernel's control groups: "" (the default group) first, then the directories. */
static int resctrl_groups(Root *r, const char *mount, char ***ret) {
        static const char * const skip[] = { "info", "mon_groups", "mon_data", NULL };
        _cleanup_strv_free_ char **l = NULL, **dirs = NULL;
        int k = sim_list_dirs(r, mount, skip, &dirs);
        if (k < 0)
                return k;
        k = strv_extend(&l, "");
        for (char **d = dirs; *d && k >= 0; d++)
                k = strv_extend(&l, *d);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(l);
        return 0;
}

static int group_schemata(Root *r, const char *mount, const char *g, Schemata *ret) {
        _cleanup_free_ char *dir = sim_path_join(mount, g, NULL), *t = dir ? sim_get(r, dir, "schemata", NULL) : NULL;
        return schemata_parse(t, ret);
}

static bool group_exclusive(Root *r, const char *mount, const char *g) {
        _cleanup_free_ char *dir = sim_path_join(mount, g, NULL), *t = dir ? sim_get(r, dir, "mode", NULL) : NULL;
        return t && startswith(t, "exclusive");
}

/* "L3CODE" ↔ "L3DATA": with CDP a CLOSID's code and data masks share the same ways. */
static char *cdp_peer(const char *res) {
        size_t n = strlen(res);
        char *s;
        if (n > 4 && streq(res + n - 4, "CODE"))
                return asprintf(&s, "%.*sDATA", (int) (n - 4), res) < 0 ? NULL : s;
        if (n > 4 && streq(res + n - 4, "DATA"))
                return asprintf(&s, "%.*sCODE", (int) (n - 4), res) < 0 ? NULL : s;
        return NULL;
}

/* rdtgroup_cbm_overlaps(): whether mask m of resource res in domain id overlaps the ways of
 * another group (only exclusive ones, if asked) in res or its CDP peer. */
static bool overlaps(Root *r, const char *mount, char **groups, const char *self, const char *res, unsigned id,
                     uint64_t m, bool only_exclusive) {
        _cleanup_free_ char *peer = cdp_peer(res);
        for (char **g = groups; *g; g++) {
                if (streq(*g, self) || (only_exclusive && !group_exclusive(r, mount, *g)))
                        continue;
                _cleanup_(schemata_done) Schemata s = {};
                if (group_schemata(r, mount, *g, &s) < 0)
                        continue;
                if ((line_mask(schemata_find(&s, res), id) & m) ||
                    (peer && (line_mask(schemata_find(&s, peer), id) & m)))
                        return true;
        }
        return false;
}

_printf_(3, 4) static void set_status(Root *r, const char *mount, const char *fmt, ...) {
        _cleanup_free_ char *t = NULL, *dir = sim_path_join(mount, "info", NULL);
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&t, fmt, ap);
        va_end(ap);
        if (n >= 0 && dir && sim_exists(r, dir, "last_cmd_status", NULL))
                (void) sim_putf(r, dir, "last_cmd_status", 0444, "%s\n", t);
}

/* The cache's size in bytes for domain id (sysfs cache/indexN/size of a CPU with that id). The
 * CPUs of every other domain met on the way (its shared_cpu_list) are not read again: two reads
 * per domain, not one per CPU, on a 1024-CPU tree. */
static uint64_t cache_bytes_find(Root *r, unsigned level, unsigned id) {
        DIR *d;
        if (root_opendir(r, "sys/devices/system/cpu", &d) < 0)
                return 0;
        CpuSet seen = {};
        uint64_t bytes = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                unsigned cpu;
                char tail;
                if (sscanf(de->d_name, "cpu%u%c", &cpu, &tail) != 1 || cpu_set_has(&seen, cpu))
                        continue;
                char base[128], path[160];
                _cleanup_free_ char *v = NULL, *size = NULL;
                snprintf(base, sizeof(base), "sys/devices/system/cpu/cpu%u/cache/index%u", cpu, level);
                if (root_read_linef(r, &v, "%s/id", base) < 0)
                        continue;
                if ((unsigned) strtoul(v, NULL, 10) != id) {
                        CpuSet shared = {};
                        snprintf(path, sizeof(path), "%s/shared_cpu_list", base);
                        if (root_read_cpu_list(r, path, &shared) >= 0)
                                cpu_set_or(&seen, &shared);
                        continue;
                }
                if (root_read_linef(r, &size, "%s/size", base) >= 0) {
                        char *end;
                        bytes = strtoull(size, &end, 10);
                        bytes = *end == 'K' ? bytes << 10 : *end == 'M' ? bytes << 20 : bytes;
                }
                break;
        }
        closedir(d);
        return bytes;
}

/* The same, remembered per tree, level and id: a tree's caches do not change, and on 1024 CPUs
 * the search reads a file of every CPU for each domain of every schemata write. */
static uint64_t cache_bytes(Root *r, unsigned level, unsigned id) {
        static struct {
                char *tree;
                unsigned level, id;
                uint64_t bytes;
        } known[64];
        static size_t n_known = 0;
        for (size_t i = 0; i < n_known; i++)
                if (known[i].level == level && known[i].id == id && streq(known[i].tree, r->path))
                        return known[i].bytes;
        uint64_t b = cache_bytes_find(r, level, id);
        char *tree = n_known < ELEMENTSOF(known) ? strdup(r->path) : NULL;
        if (tree)
                known[n_known++] = (__typeof__(known[0])) { tree, level, id, b };
        return b;
}

/* rdtgroup_size_show(): bytes of cache per domain, bandwidth values as they are. */
static int update_size(Root *r, const char *mount, const char *dir, const Schemata *s) {
        if (!sim_exists(r, dir, "size", NULL))
                return 0;
        StrBuf b = {};
        for (size_t i = 0; i < s->n; i++) {
                const SchemaLine *l = &s->l[i];
                ResInfo info;
                res_info(r, mount, l->name, &info);
                strbuf_appendf(&b, "%s:", l->prefix);
                for (size_t j = 0; j < l->n; j++) {
                        unsigned long long v;
                        if (info.cache) {
                                unsigned level = startswith(l->name, "L2") ? 2 : 3;
                                uint64_t m = strtoull(l->vals[j], NULL, 16);
                                v = info.bits ? cache_bytes(r, level, l->ids[j]) / info.bits *
                                                (unsigned) __builtin_popcountll(m)
                                              : 0;
                        } else
                                v = strtoull(l->vals[j], NULL, 10);
                        strbuf_appendf(&b, "%s%u=%llu", j ? ";" : "", l->ids[j], v);
                }
                strbuf_append(&b, "\n");
        }
        _cleanup_free_ char *t = strbuf_steal(&b);
        return t ? sim_put(r, dir, "size", t, 0444) : -ENOMEM;
}

/* The width of the kernel's CPU masks here: as many bits as the default group's mask shows. */
static unsigned mask_bits(Root *r, const char *mount) {
        _cleanup_free_ char *t = sim_get(r, mount, "cpus", NULL);
        unsigned n = 0;
        for (const char *c = t; c && *c; c++)
                n += isxdigit((unsigned char) *c) ? 4 : 0;
        return n;
}

static int put_group_cpus(Root *r, const char *mount, const char *dir, const CpuSet *s) {
        _cleanup_free_ char *mask = cpu_set_format_mask(s, mask_bits(r, mount));
        if (!mask)
                return -ENOMEM;
        int k = sim_putf(r, dir, "cpus", 0644, "%s\n", mask);
        return k < 0 ? k : sim_put_list(r, dir, "cpus_list", s, 0644);
}

/* rdtgroup_init_alloc(): a new group's schemata s (the default group's, to start from): caches
 * get every way no exclusive group holds (on hosts without sparse masks the lowest contiguous run
 * of them, cbm_ensure_valid()), MB its default. */
static int init_alloc(Root *r, const char *mount, char **groups, Schemata *s) {
        for (size_t i = 0; i < s->n; i++) {
                SchemaLine *l = &s->l[i];
                ResInfo info;
                res_info(r, mount, l->name, &info);
                for (size_t j = 0; j < l->n; j++) {
                        uint64_t v;
                        if (info.cache) {
                                uint64_t excl = 0;
                                _cleanup_free_ char *peer = cdp_peer(l->name);
                                for (char **g = groups; *g; g++) {
                                        _cleanup_(schemata_done) Schemata o = {};
                                        if (!group_exclusive(r, mount, *g) || group_schemata(r, mount, *g, &o) < 0)
                                                continue;
                                        excl |= line_mask(schemata_find(&o, l->name), l->ids[j]);
                                        if (peer)
                                                excl |= line_mask(schemata_find(&o, peer), l->ids[j]);
                                }
                                v = info.cbm & ~excl;
                                if (!info.sparse && v) {
                                        unsigned lo = (unsigned) __builtin_ctzll(v);
                                        uint64_t x = v >> lo;
                                        v = ((x ^ (x + 1)) >> 1) << lo; /* the ones below x's first zero */
                                }
                                if ((unsigned) __builtin_popcountll(v) < MAX(info.min_bits, 1U)) {
                                        set_status(r, mount, "No space on %s:%u", l->name, l->ids[j]);
                                        return -ENOSPC;
                                }
                        } else if (info.max_bw && streq(l->name, "MB"))
                                v = info.max_bw;
                        else
                                continue; /* other resources: the default group's value */
                        char *nv = format_value(l->vals[j], info.cache, v);
                        if (!nv)
                                return -ENOMEM;
                        free(l->vals[j]);
                        l->vals[j] = nv;
                }
        }
        return 0;
}

/* mon_data: the default group's monitoring files, counting from zero. */
static int add_mon_data(Root *r, const char *mount, const char *dir) {
        _cleanup_strv_free_ char **mon = NULL;
        _cleanup_free_ char *pattern = sim_path_join(mount, "mon_data/*/*", NULL);
        int k = pattern ? root_glob(r, pattern, &mon) : -ENOMEM;
        for (char **m = mon; k >= 0 && m && *m; m++) {
                _cleanup_free_ char *target = sim_path_join(dir, *m + strlen(mount) + 1, NULL);
                if (!target)
                        return -ENOMEM;
                char *slash = strrchr(target, '/');
                *slash = 0;
                k = root_mkdir_p(r, target, 0755);
                if (k >= 0)
                        k = sim_put(r, target, slash + 1, "0\n", 0444);
        }
        return k;
}

/* The files of a new group whose schemata is s. */
static int add_group_files(Root *r, const char *mount, const char *dir, const Schemata *s) {
        _cleanup_free_ char *text = schemata_format(s);
        CpuSet none = {};
        int k = text ? sim_put(r, dir, "schemata", text, 0644) : -ENOMEM;
        if (k >= 0)
                k = put_group_cpus(r, mount, dir, &none);
        if (k >= 0)
                k = sim_put(r, dir, "mode", "shareable\n", 0644);
        if (k >= 0)
                k = sim_put(r, dir, "tasks", "", 0644);
        if (k >= 0 && sim_exists(r, mount, "size", NULL))
                k = sim_put(r, dir, "size", "", 0444);
        if (k >= 0)
                k = update_size(r, mount, dir, s);
        if (k >= 0 && sim_exists(r, mount, "mon_groups", NULL)) {
                _cleanup_free_ char *mg = sim_path_join(dir, "mon_groups", NULL);
                k = mg ? root_mkdir_p(r, mg, 0755) : -ENOMEM;
        }
        return k < 0 ? k : add_mon_data(r, mount, dir);
}

int sim_resctrl_mkdir(Root *r, const char *mount, const char *group) {
        _cleanup_strv_free_ char **groups = NULL;
        _cleanup_(schemata_done) Schemata s = {};
        _cleanup_free_ char *dir = sim_path_join(mount, group, NULL);
        int k;

        if (!dir)
                return -ENOMEM;
        if (root_exists(r, dir))
                return -EEXIST;
        k = resctrl_groups(r, mount, &groups);
        if (k >= 0)
                k = group_schemata(r, mount, "", &s);
        if (k < 0)
                return k;

        /* closid_alloc(): the smallest num_closids of the allocation resources. */
        unsigned closids = 0;
        for (size_t i = 0; i < s.n; i++) {
                ResInfo info;
                res_info(r, mount, s.l[i].name, &info);
                if (info.num_closids && (!closids || info.num_closids < closids))
                        closids = info.num_closids;
        }
        if (closids && strv_length(groups) >= closids) {
                set_status(r, mount, "out of CLOSIDs");
                return -ENOSPC;
        }
        k = init_alloc(r, mount, groups, &s);
        if (k < 0)
                return k;

        _cleanup_close_ int mfd = root_open(r, mount, O_RDONLY | O_DIRECTORY, 0);
        if (mfd < 0)
                return mfd;
        if (mkdirat(mfd, group, 0755) < 0)
                return -errno;
        k = add_group_files(r, mount, dir, &s);
        if (k < 0) {
                (void) sim_remove_tree(r, dir);
                return k;
        }
        set_status(r, mount, "ok");
        return 0;
}

int sim_resctrl_rmdir(Root *r, const char *mount, const char *group) {
        _cleanup_free_ char *dir = sim_path_join(mount, group, NULL);
        CpuSet mine = {}, def = {};
        _cleanup_(sim_ids_done) SimIds tasks = {}, dtasks = {};
        int k;

        if (!dir)
                return -ENOMEM;
        if (!root_is_dir(r, dir))
                return -ENOENT;
        /* rdtgroup_rmdir_ctrl(): CPUs and tasks go back to the default group. */
        (void) sim_get_set(r, dir, "cpus_list", NULL, &mine);
        (void) sim_get_set(r, mount, "cpus_list", NULL, &def);
        cpu_set_or(&def, &mine);
        k = put_group_cpus(r, mount, mount, &def);
        if (k >= 0)
                k = sim_get_ids(r, dir, "tasks", &tasks);
        if (k >= 0)
                k = sim_get_ids(r, mount, "tasks", &dtasks);
        for (size_t i = 0; k >= 0 && i < tasks.n; i++)
                k = sim_ids_add(&dtasks, tasks.v[i]);
        if (k >= 0 && tasks.n > 0)
                k = sim_put_ids(r, mount, "tasks", &dtasks);
        if (k >= 0)
                k = sim_remove_tree(r, dir);
        if (k >= 0)
                set_status(r, mount, "ok");
        return k;
}

static int write_schemata(Root *r, const char *mount, const char *g, const char *dir, const char *value) {
        _cleanup_strv_free_ char **groups = NULL;
        _cleanup_(schemata_done) Schemata s = {}, in = {};
        int k;

        k = resctrl_groups(r, mount, &groups);
        if (k >= 0)
                k = group_schemata(r, mount, g, &s);
        if (k < 0)
                return k;
        if (!strchr(value, ':') || !strchr(value, '=') || schemata_parse(value, &in) < 0 || in.n != 1) {
                set_status(r, mount, "Missing ':' or '=' in \"%s\"", value);
                return -EINVAL;
        }
        SchemaLine *want = &in.l[0], *line = schemata_find(&s, want->name);
        if (!line) {
                set_status(r, mount, "Unknown or unsupported resource name '%s'", want->name);
                return -EINVAL;
        }
        ResInfo info;
        res_info(r, mount, want->name, &info);
        bool self_excl = group_exclusive(r, mount, g);

        /* Everything is checked before anything changes (rdtgroup_schemata_write()). */
        for (size_t j = 0; j < want->n; j++) {
                const char *v = want->vals[j];
                unsigned id = want->ids[j];
                char *end;
                int d = line_domain(line, id);
                if (d < 0) {
                        set_status(r, mount, "Unknown domain %u for %s", id, want->name);
                        return -EINVAL;
                }
                while (*v == ' ')
                        v++;
                if (info.cache) {
                        errno = 0;
                        uint64_t m = strtoull(v, &end, 16);
                        if (!*v || *end || errno) {
                                set_status(r, mount, "Non-hex character in the mask %s", v);
                                return -EINVAL;
                        }
                        if ((info.min_bits > 0 && m == 0) || (m & ~info.cbm)) {
                                set_status(r, mount, "Mask out of range");
                                return -EINVAL;
                        }
                        if (!info.sparse && !mask_contiguous(m)) {
                                set_status(r, mount, "The mask %llx has non-consecutive 1-bits",
                                           (unsigned long long) m);
                                return -EINVAL;
                        }
                        if ((unsigned) __builtin_popcountll(m) < info.min_bits) {
                                set_status(r, mount, "Need at least %u bits in the mask", info.min_bits);
                                return -EINVAL;
                        }
                        if (overlaps(r, mount, groups, g, want->name, id, m, true)) {
                                set_status(r, mount, "Overlaps with exclusive group");
                                return -EINVAL;
                        }
                        if (self_excl && overlaps(r, mount, groups, g, want->name, id, m, false)) {
                                set_status(r, mount, "Overlaps with other group");
                                return -EINVAL;
                        }
                } else {
                        errno = 0;
                        unsigned long bw = strtoul(v, &end, 10);
                        if (!*v || *end || errno) {
                                set_status(r, mount, "Non-decimal digit in MB value %s", v);
                                return -EINVAL;
                        }
                        if (info.max_bw && (bw < info.min_bw || bw > info.max_bw)) {
                                set_status(r, mount, "MB value %lu out of range [%u,%u]", bw, info.min_bw, info.max_bw);
                                return -EINVAL;
                        }
                }
        }
        for (size_t j = 0; j < want->n; j++) {
                int d = line_domain(line, want->ids[j]);
                uint64_t v = info.cache ? strtoull(want->vals[j], NULL, 16) : strtoull(want->vals[j], NULL, 10);
                if (!info.cache && info.gran > 1) /* bw_validate(): rounded up to the granularity */
                        v = (v + info.gran - 1) / info.gran * info.gran;
                char *nv = format_value(line->vals[d], info.cache, v);
                if (!nv)
                        return -ENOMEM;
                free(line->vals[d]);
                line->vals[d] = nv;
        }
        _cleanup_free_ char *text = schemata_format(&s);
        k = text ? sim_put(r, dir, "schemata", text, 0644) : -ENOMEM;
        return k < 0 ? k : update_size(r, mount, dir, &s);
}

/* cpus_ctrl_write(): a group takes its CPUs from every other group; CPUs it drops return to the
 * default group, which itself cannot drop any. */
static int write_cpus(Root *r, const char *mount, const char *g, const char *value) {
        _cleanup_strv_free_ char **groups = NULL;
        CpuSet want, old = {};
        int k;

        if (cpu_set_parse_list(value, &want, NULL) < 0) {
                set_status(r, mount, "Bad CPU list/mask");
                return -EINVAL;
        }
        k = resctrl_groups(r, mount, &groups);
        if (k < 0)
                return k;
        _cleanup_free_ char *dir = sim_path_join(mount, g, NULL);
        if (!dir)
                return -ENOMEM;
        (void) sim_get_set(r, dir, "cpus_list", NULL, &old);
        if (!*g && !cpu_set_is_subset(&old, &want)) {
                set_status(r, mount, "Can't drop CPUs from default group");
                return -EINVAL;
        }
        CpuSet dropped = old;
        cpu_set_andnot(&dropped, &want);
        for (char **o = groups; *o; o++) {
                if (streq(*o, g))
                        continue;
                _cleanup_free_ char *od = sim_path_join(mount, *o, NULL);
                CpuSet c = {};
                if (!od)
                        return -ENOMEM;
                (void) sim_get_set(r, od, "cpus_list", NULL, &c);
                CpuSet n = c;
                cpu_set_andnot(&n, &want);
                if (!**o)
                        cpu_set_or(&n, &dropped);
                if (!cpu_set_equal(&n, &c) && (k = put_group_cpus(r, mount, od, &n)) < 0)
                        return k;
        }
        return put_group_cpus(r, mount, dir, &want);
}

/* rdtgroup_mode_write(): exclusive only while no other group (the default one included) and no
 * shareable bit overlaps the group's ways. */
static int write_mode(Root *r, const char *mount, const char *g, const char *dir, const char *value) {
        if (!streq(value, "shareable") && !streq(value, "exclusive")) {
                set_status(r, mount, "Unknown or unsupported mode");
                return -EINVAL;
        }
        if (streq(value, "exclusive")) {
                _cleanup_strv_free_ char **groups = NULL;
                _cleanup_(schemata_done) Schemata s = {};
                bool has_cache = false;
                int k = resctrl_groups(r, mount, &groups);
                if (k >= 0)
                        k = group_schemata(r, mount, g, &s);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < s.n; i++) {
                        ResInfo info;
                        res_info(r, mount, s.l[i].name, &info);
                        if (!info.cache)
                                continue;
                        has_cache = true;
                        for (size_t j = 0; j < s.l[i].n; j++) {
                                uint64_t m = strtoull(s.l[i].vals[j], NULL, 16);
                                if ((m & info.shareable) ||
                                    overlaps(r, mount, groups, g, s.l[i].name, s.l[i].ids[j], m, false)) {
                                        set_status(r, mount, "Schemata overlaps");
                                        return -EINVAL;
                                }
                        }
                }
                if (!has_cache) {
                        set_status(r, mount, "Cannot be exclusive without CAT/CDP");
                        return -EINVAL;
                }
        }
        return sim_putf(r, dir, "mode", 0644, "%s\n", value);
}

int sim_resctrl_write(Root *r, const char *mount, const char *group, const char *file, const char *value) {
        const char *g = group ? group : "";
        _cleanup_free_ char *dir = sim_path_join(mount, g, NULL);
        int k;

        if (!dir)
                return -ENOMEM;
        if (!sim_exists(r, dir, file, NULL))
                return -ENOENT;
        if (streq(file, "schemata"))
                k = write_schemata(r, mount, g, dir, value);
        else if (streq(file, "cpus_list"))
                k = write_cpus(r, mount, g, value);
        else if (streq(file, "mode"))
                k = write_mode(r, mount, g, dir, value);
        else
                k = sim_putf(r, dir, file, 0644, "%s\n", value);
        if (k >= 0)
                set_status(r, mount, "ok");
        return k;
}
