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
static const SchemaField cat_fields[] = { { "groups", &cat_groups_schema }, { "shrink_default", &schema_bool }, {} };
static const Schema cat_schema = { SCHEMA_OBJECT, .fields = cat_fields };
static const SchemaField resctrl_section = { "cat", &cat_schema };

/* resctrl: Intel CAT/CDP/MBA and AMD L3 QoS through /sys/fs/resctrl. The profile's "cat" section
 * names groups, each with CPUs and a share of the L3 cache (a mask, a number of ways or a
 * percentage) and optionally of memory bandwidth. Knobs:
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

#define RESCTRL_MOUNT_DEFAULT "sys/fs/resctrl"

/* A file that is not there (yet): the group does not exist, or the kernel lacks the file. */
static bool is_absent(int k) {
        return k == -ENOENT || k == -ENOTDIR;
}

/* What a plan shows as "absent": also a file this user may not read (plan needs no privileges). */
static bool is_unknown(int k) {
        return is_absent(k) || k == -EACCES || k == -EPERM;
}

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

/* ---- masks ---- */

static unsigned popcount64(uint64_t m) {
        return (unsigned) __builtin_popcountll(m);
}

static bool mask_contiguous(uint64_t m) {
        if (m == 0)
                return false;
        m >>= __builtin_ctzll(m);
        return (m & (m + 1)) == 0;
}

static uint64_t mask_run(unsigned n, unsigned start) {
        uint64_t run = n >= 64 ? UINT64_MAX : (UINT64_C(1) << n) - 1;
        return start >= 64 ? 0 : run << start;
}

/* The highest run of n bits inside cbm that misses `taken`; 0 if none. */
static uint64_t mask_alloc_top(uint64_t cbm, unsigned cbm_bits, uint64_t taken, unsigned n) {
        if (n == 0 || n > cbm_bits)
                return 0;
        for (int start = (int) (cbm_bits - n); start >= 0; start--) {
                uint64_t m = mask_run(n, (unsigned) start);
                if ((m & cbm) == m && !(m & taken))
                        return m;
        }
        return 0;
}

/* The largest contiguous run of bits in m (the lower one of equals). */
static uint64_t mask_largest_run(uint64_t m) {
        uint64_t best = 0;
        unsigned best_n = 0;
        for (unsigned i = 0; i < 64;) {
                if (!(m >> i & 1)) {
                        i++;
                        continue;
                }
                unsigned j = i;
                while (j < 64 && (m >> j & 1))
                        j++;
                if (j - i > best_n) {
                        best_n = j - i;
                        best = mask_run(j - i, i);
                }
                i = j;
        }
        return best;
}

/* "0x7f0", zero-padded to the host's width. */
static const char *mask_str(char buf[static 24], uint64_t m, unsigned bits) {
        char hex[17];
        int len = snprintf(hex, sizeof(hex), "%llx", (unsigned long long) m);
        int width = (int) MIN(MAX((bits + 3) / 4, 1U), 16U), pad = MAX(width - len, 0);
        memcpy(buf, "0x", 2);
        memset(buf + 2, '0', (size_t) pad);
        memcpy(buf + 2 + pad, hex, (size_t) len + 1);
        return buf;
}

/* "ways 4-10" */
static char *mask_ways(uint64_t m) {
        if (m == 0)
                return strdup("no ways");
        unsigned lo = (unsigned) __builtin_ctzll(m), hi = 63U - (unsigned) __builtin_clzll(m);
        char *s;
        if (mask_contiguous(m))
                return asprintf(&s, lo == hi ? "way %u" : "ways %u-%u", lo, hi) < 0 ? NULL : s;
        return asprintf(&s, "%u ways between %u and %u", popcount64(m), lo, hi) < 0 ? NULL : s;
}

/* ---- the profile's groups ---- */

typedef enum CatShareKind {
        SHARE_L3,
        SHARE_L3CODE,
        SHARE_L3DATA,
        _SHARE_MAX,
} CatShareKind;

static const char * const share_key[_SHARE_MAX] = { "l3", "l3code", "l3data" };

typedef struct CatShare {
        json_t *spec; /* {"mask": …} | {"ways": N} | {"percent": N}; NULL if not given */
        uint64_t mask;
        bool allocated; /* from ways/percent */
} CatShare;

typedef struct CatGroup {
        const char *name;
        const char *cpus_list;
        CpuSet cpus;
        bool exclusive;
        CatShare share[_SHARE_MAX];
        bool has_mb;
        unsigned mb, mb_asked;
} CatGroup;

static uint64_t group_ways(const CatGroup *g) {
        uint64_t u = 0;
        for (int s = 0; s < _SHARE_MAX; s++)
                u |= g->share[s].mask;
        return u;
}

static const char *group_first_share(const CatGroup *g) {
        for (int s = 0; s < _SHARE_MAX; s++)
                if (g->share[s].spec)
                        return share_key[s];
        return NULL;
}

/* Host-independent checks, and the ones that need only the vendor: names, CPUs, "mb" on AMD. */
static int cat_groups_parse(PlanCtx *ctx, json_t *arr, CatGroup *groups, size_t n) {
        for (size_t i = 0; i < n; i++) {
                json_t *v = json_array_get(arr, i);
                CatGroup *g = &groups[i];

                g->name = json_string_value(json_object_get(v, "name"));
                g->cpus_list = json_string_value(json_object_get(v, "cpus"));
                if (!g->name || !g->cpus_list)
                        return plan_fail_item(ctx, "/cat/groups", i, NULL, "a group needs \"name\" and \"cpus\"");
                if (streq(g->name, "mon_data"))
                        return plan_fail_item(
                                ctx, "/cat/groups", i, "name",
                                "\"mon_data\" is the resctrl root's monitoring directory; choose another name");
                if (streq(g->name, "default"))
                        return plan_fail_item(
                                ctx, "/cat/groups", i, "name",
                                "\"default\" names resctrl's root group in rtpart's knob ids (resctrl/default/…); "
                                "choose another name");
                if (cpu_set_parse_list(g->cpus_list, &g->cpus, NULL) < 0)
                        return plan_fail_item(ctx, "/cat/groups", i, "cpus", "\"%s\" is not a CPU list", g->cpus_list);
                for (size_t j = 0; j < i; j++)
                        if (cpu_set_intersects(&g->cpus, &groups[j].cpus)) {
                                CpuSet both = g->cpus;
                                cpu_set_and(&both, &groups[j].cpus);
                                _cleanup_free_ char *l = cpu_set_format_list(&both);
                                return plan_fail_item(
                                        ctx, "/cat/groups", i, "cpus",
                                        "CPUs %s are also in group \"%s\" (/cat/groups/%zu); a CPU belongs to one "
                                        "resctrl group, so give each group its own CPUs",
                                        strempty(l), groups[j].name, j);
                        }
                g->exclusive = json_is_true(json_object_get(v, "exclusive"));
                for (int s = 0; s < _SHARE_MAX; s++)
                        g->share[s].spec = json_object_get(v, share_key[s]);
                json_t *mb = json_object_get(v, "mb");
                if (mb) {
                        g->has_mb = true;
                        g->mb = g->mb_asked = (unsigned) json_integer_value(mb);
                        if (ctx->host->vendor == CPU_VENDOR_AMD)
                                /* AMD's MB values are absolute (1/8 GB/s units, info/MB/bandwidth_gran
                                 * 1, maximum about 2048): a percentage has no fixed translation. */
                                return plan_fail_item(
                                        ctx, "/cat/groups", i, "mb",
                                        "\"mb\" is a percentage of memory bandwidth (Intel MBA); on this AMD "
                                        "host resctrl's MB is an absolute limit in 1/8 GB/s units, which rtpart "
                                        "does not translate; remove \"mb\" or move it under \"vendor\": "
                                        "{\"intel\": …}");
                }
        }
        return 0;
}

/* ---- the host's side ---- */

typedef struct CatHost {
        const Resctrl *rc;
        const char *mount;
        /* The cache resource the masks are checked against: L3, or L3CODE when CDP is on (its
         * L3DATA twin has the same cbm_mask). */
        const ResctrlResource *cache;
        const char *cache_name;
        bool sparse;
        unsigned min_bits;
        unsigned *domains;
        size_t n_domains;
        char *root_schemata; /* text of <mount>/schemata, NULL if unreadable */
} CatHost;

static void cat_host_done(CatHost *ch) {
        free(ch->domains);
        free(ch->root_schemata);
}

static int read_optional(Root *root, const char *path, char **ret) {
        int k = root_read_line(root, path, ret);
        if (is_unknown(k)) {
                *ret = NULL;
                return 0;
        }
        return k;
}

static int cat_host_init(PlanCtx *ctx, CatHost *ch) {
        const Resctrl *rc = &ctx->host->resctrl;
        char path[512];
        int k;

        ch->rc = rc;
        ch->mount = rc->mount ? rc->mount : RESCTRL_MOUNT_DEFAULT;
        if (rc->cdp) {
                ch->cache = &rc->l3code;
                ch->cache_name = "L3CODE";
        } else if (rc->l3.present) {
                ch->cache = &rc->l3;
                ch->cache_name = "L3";
        }
        if (ch->cache) {
                /* Kernels before 6.8 have no sparse_masks file but take sparse masks on AMD. */
                ch->sparse = ch->cache->sparse_masks == 1 ||
                        (ch->cache->sparse_masks < 0 && ctx->host->vendor == CPU_VENDOR_AMD);
                ch->min_bits = MAX(ch->cache->min_cbm_bits, 1U);
        }

        snprintf(path, sizeof(path), "%s/schemata", ch->mount);
        k = root_read_file(ctx->root, path, &ch->root_schemata, NULL);
        if (k < 0 && !is_unknown(k))
                return k;

        if (rc->n_domains > 0) {
                ch->domains = malloc(rc->n_domains * sizeof(unsigned));
                if (!ch->domains)
                        return -ENOMEM;
                memcpy(ch->domains, rc->domains, rc->n_domains * sizeof(unsigned));
                ch->n_domains = rc->n_domains;
                return 0;
        }
        /* No L3 cache ids in sysfs (some VMs): take the ids the root group's schemata lists. */
        const char *names[] = { ch->cache_name ? ch->cache_name : "L3", "MB" };
        for (size_t i = 0; i < ELEMENTSOF(names) && ch->root_schemata; i++) {
                _cleanup_free_ char *v = NULL;
                if (resctrl_schemata_parse(ch->root_schemata, names[i], &v) < 0)
                        continue;
                k = resctrl_schemata_domains(v, &ch->domains, &ch->n_domains);
                if (k == -ENOMEM)
                        return k;
                if (k >= 0) {
                        for (size_t a = 1; a < ch->n_domains; a++) /* ascending, as the kernel prints them */
                                for (size_t b = a; b > 0 && ch->domains[b - 1] > ch->domains[b]; b--) {
                                        unsigned t = ch->domains[b];
                                        ch->domains[b] = ch->domains[b - 1];
                                        ch->domains[b - 1] = t;
                                }
                        break;
                }
        }
        return 0;
}

/* The resources a group's keys need must exist, and fit the number of CLOSIDs. */
static int cat_check_resources(PlanCtx *ctx, const CatHost *ch, CatGroup *groups, size_t n) {
        const Resctrl *rc = ch->rc;

        for (size_t i = 0; i < n; i++) {
                CatGroup *g = &groups[i];
                for (int s = 0; s < _SHARE_MAX; s++) {
                        if (!g->share[s].spec)
                                continue;
                        if (!rc->l3.present && !rc->cdp)
                                return plan_fail_item(
                                        ctx, "/cat/groups", i, share_key[s],
                                        "this host's resctrl has no L3 cache allocation (no info/L3 under "
                                        "/%s); remove \"%s\"",
                                        ch->mount, share_key[s]);
                        if (s != SHARE_L3 && !rc->cdp)
                                return plan_fail_item(ctx, "/cat/groups", i, share_key[s],
                                                      "CDP is not enabled; mount resctrl with -o cdp or use \"l3\"");
                }
                if (g->has_mb && !rc->mb.present)
                        return plan_fail_item(
                                ctx, "/cat/groups", i, "mb",
                                "this host's resctrl has no memory bandwidth allocation (no info/MB under /%s); "
                                "remove \"mb\"",
                                ch->mount);
        }

        /* CLOSIDs: the kernel uses the smallest num_closids of its allocation resources. */
        const ResctrlResource *res[] = { &rc->l3, &rc->l3code, &rc->l3data, &rc->mb };
        const char *names[] = { "L3", "L3CODE", "L3DATA", "MB" };
        unsigned limit = 0;
        const char *limit_by = NULL;
        StrBuf all = {};
        size_t n_res = 0;
        for (size_t r = 0; r < ELEMENTSOF(res); r++) {
                if (!res[r]->present || res[r]->num_closids == 0)
                        continue;
                strbuf_appendf(&all, "%s%s %u", n_res++ ? ", " : "", names[r], res[r]->num_closids);
                if (limit == 0 || res[r]->num_closids < limit) {
                        limit = res[r]->num_closids;
                        limit_by = names[r];
                }
        }
        _cleanup_free_ char *all_s = strbuf_steal(&all);
        if (limit > 0 && n > limit - 1)
                return plan_fail_item(
                        ctx, "/cat/groups", limit - 1, NULL,
                        "too many groups: this host's resctrl has %u CLOSIDs (info/%s/num_closids%s%s) and "
                        "the default group holds one, so at most %u groups fit; merge or drop groups",
                        limit, limit_by, n_res > 1 ? "; the kernel uses the smallest of " : "",
                        n_res > 1 ? strempty(all_s) : "", limit - 1);
        return 0;
}

static int cat_check_mask(PlanCtx *ctx, const CatHost *ch, size_t i, const char *key, uint64_t m) {
        const ResctrlResource *r = ch->cache;
        char a[24], b[24];

        if (m == 0)
                return plan_fail_item(ctx, "/cat/groups", i, key,
                                      "mask 0 selects no cache ways; this host has %u ways (cbm_mask %s)", r->cbm_bits,
                                      mask_str(b, r->cbm_mask, r->cbm_bits));
        if (m & ~r->cbm_mask)
                return plan_fail_item(ctx, "/cat/groups", i, key,
                                      "mask 0x%llx exceeds this host's cbm_mask %s (%u ways)", (unsigned long long) m,
                                      mask_str(b, r->cbm_mask, r->cbm_bits), r->cbm_bits);
        if (popcount64(m) < ch->min_bits)
                return plan_fail_item(ctx, "/cat/groups", i, key,
                                      "mask %s has %u bit%s; this host's min_cbm_bits is %u: give at least %u ways",
                                      mask_str(a, m, r->cbm_bits), popcount64(m), popcount64(m) == 1 ? "" : "s",
                                      ch->min_bits, ch->min_bits);
        if (!ch->sparse && !mask_contiguous(m)) {
                unsigned cnt = popcount64(m), top = 63U - (unsigned) __builtin_clzll(m);
                return plan_fail_item(ctx, "/cat/groups", i, key,
                                      "mask %s is not contiguous and this host's CPUs take only contiguous masks "
                                      "(info/%s/sparse_masks is not 1); use e.g. %s",
                                      mask_str(a, m, r->cbm_bits), ch->cache_name,
                                      mask_str(b, mask_run(cnt, top + 1 - cnt), r->cbm_bits));
        }
        return 0;
}

/* Explicit masks first (they are fixed), then ways and percentages from the top bits down, in
 * group order, around every explicit mask and every earlier allocation; the default group keeps
 * the low bits. Exclusive groups also stay off the shareable bits (the kernel refuses exclusive
 * mode on them). */
static int cat_compute_masks(PlanCtx *ctx, const CatHost *ch, CatGroup *groups, size_t n) {
        const ResctrlResource *r = ch->cache;
        uint64_t taken = 0;
        char a[24], b[24];
        int k;

        if (!r)
                return 0;
        for (size_t i = 0; i < n; i++)
                for (int s = 0; s < _SHARE_MAX; s++) {
                        json_t *spec = groups[i].share[s].spec;
                        json_t *mask = json_object_get(spec, "mask");
                        if (!mask)
                                continue;
                        uint64_t m;
                        if (!json_is_string(mask) || resctrl_mask_parse(json_string_value(mask), &m) < 0)
                                return plan_fail_item(
                                        ctx, "/cat/groups", i, share_key[s],
                                        "\"%s\" is not a capacity bitmask; write hex digits such as \"0x7f0\"",
                                        json_is_string(mask) ? json_string_value(mask) : "mask");
                        k = cat_check_mask(ctx, ch, i, share_key[s], m);
                        if (k < 0)
                                return k;
                        groups[i].share[s].mask = m;
                        taken |= m;
                }

        for (size_t i = 0; i < n; i++) {
                CatGroup *g = &groups[i];
                for (int s = 0; s < _SHARE_MAX; s++) {
                        json_t *spec = g->share[s].spec;
                        json_t *ways = json_object_get(spec, "ways"), *pct = json_object_get(spec, "percent");
                        unsigned want;
                        if (ways) {
                                want = (unsigned) json_integer_value(ways);
                                if (want > r->cbm_bits)
                                        return plan_fail_item(ctx, "/cat/groups", i, share_key[s],
                                                              "%u ways exceed this host's %u ways (cbm_mask %s)", want,
                                                              r->cbm_bits, mask_str(a, r->cbm_mask, r->cbm_bits));
                                if (want < ch->min_bits)
                                        return plan_fail_item(ctx, "/cat/groups", i, share_key[s],
                                                              "%u way%s is fewer than this host's min_cbm_bits %u",
                                                              want, want == 1 ? "" : "s", ch->min_bits);
                        } else if (pct) {
                                long long p = json_integer_value(pct);
                                want = (unsigned) ((r->cbm_bits * p + 50) / 100);
                                want = MAX(want, ch->min_bits);
                        } else
                                continue;

                        uint64_t avoid = taken | (g->exclusive ? r->shareable_bits : 0);
                        uint64_t m = mask_alloc_top(r->cbm_mask, r->cbm_bits, avoid, want);
                        if (m == 0) {
                                char extra[160] = "";
                                if (g->exclusive && r->shareable_bits)
                                        snprintf(extra, sizeof(extra),
                                                 " and an exclusive group cannot use the shareable_bits %s (ways I/O "
                                                 "devices and other agents fill)",
                                                 mask_str(b, r->shareable_bits, r->cbm_bits));
                                return plan_fail_item(
                                        ctx, "/cat/groups", i, share_key[s],
                                        "%u contiguous ways do not fit: this host has %u ways (cbm_mask %s), "
                                        "%s are given to other groups%s; ask for fewer ways or give an explicit "
                                        "\"mask\" to share ways with another group",
                                        want, r->cbm_bits, mask_str(a, r->cbm_mask, r->cbm_bits),
                                        mask_str(b, taken, r->cbm_bits), extra);
                        }
                        g->share[s].mask = m;
                        g->share[s].allocated = true;
                        taken |= m;
                }
        }
        return 0;
}

static int cat_check_exclusive(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n) {
        const ResctrlResource *r = ch->cache;
        char a[24], b[24], c[24];

        for (size_t i = 0; i < n; i++) {
                const CatGroup *g = &groups[i];
                uint64_t u = group_ways(g);
                if (g->exclusive && !group_first_share(g))
                        return plan_fail_item(ctx, "/cat/groups", i, "exclusive",
                                              "an exclusive group needs cache ways of its own: give \"l3\" (or "
                                              "\"l3code\"/\"l3data\")");
                if (!r || u == 0)
                        continue;
                for (size_t j = 0; j < i; j++) {
                        const CatGroup *o = &groups[j];
                        uint64_t w = group_ways(o);
                        if (!(g->exclusive || o->exclusive) || !(u & w))
                                continue;
                        if (o->exclusive)
                                return plan_fail_item(
                                        ctx, "/cat/groups", i, group_first_share(g),
                                        "ways %s overlap those of exclusive group \"%s\" (%s); an exclusive "
                                        "group shares no ways with any other group",
                                        mask_str(a, u, r->cbm_bits), o->name, mask_str(b, w, r->cbm_bits));
                        return plan_fail_item(
                                ctx, "/cat/groups", i, group_first_share(g),
                                "this group is exclusive but its ways %s overlap those of group \"%s\" (%s); an "
                                "exclusive group shares no ways with any other group",
                                mask_str(a, u, r->cbm_bits), o->name, mask_str(b, w, r->cbm_bits));
                }
                if (g->exclusive && (u & r->shareable_bits)) {
                        uint64_t alt = mask_alloc_top(r->cbm_mask, r->cbm_bits, r->shareable_bits, popcount64(u));
                        return plan_fail_item(
                                ctx, "/cat/groups", i, group_first_share(g),
                                "ways %s overlap this host's shareable_bits %s (ways I/O devices and other "
                                "agents fill); the kernel refuses exclusive mode there; use e.g. %s",
                                mask_str(a, u, r->cbm_bits), mask_str(b, r->shareable_bits, r->cbm_bits),
                                alt ? mask_str(c, alt, r->cbm_bits) : "fewer ways");
                }
        }
        return 0;
}

static int cat_check_mb(PlanCtx *ctx, const CatHost *ch, CatGroup *groups, size_t n) {
        const ResctrlResource *mb = &ch->rc->mb;

        for (size_t i = 0; i < n; i++) {
                CatGroup *g = &groups[i];
                if (!g->has_mb)
                        continue;
                if (g->mb < mb->min_bandwidth)
                        return plan_fail_item(ctx, "/cat/groups", i, "mb",
                                              "mb %u%% is below this host's min_bandwidth %u%%; use %u to 100", g->mb,
                                              mb->min_bandwidth, mb->min_bandwidth);
                /* The kernel rounds up to the granularity (bw_validate()); say so beforehand. */
                if (mb->bandwidth_gran > 1 && g->mb % mb->bandwidth_gran)
                        g->mb = MIN((g->mb / mb->bandwidth_gran + 1) * mb->bandwidth_gran, 100U);
        }
        return 0;
}

/* The default group's ways once shrunk: every way no exclusive group holds (on hosts without
 * sparse masks, the largest contiguous run of them). */
static int cat_default_mask(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n, uint64_t *ret,
                            uint64_t *ret_unused) {
        const ResctrlResource *r = ch->cache;
        uint64_t excl = 0;
        size_t last = 0;
        char a[24], b[24], c[24];

        for (size_t i = 0; i < n; i++)
                if (groups[i].exclusive) {
                        excl |= group_ways(&groups[i]);
                        last = i;
                }
        uint64_t free_ways = r->cbm_mask & ~excl;
        uint64_t d = ch->sparse ? free_ways : mask_largest_run(free_ways);
        if (popcount64(d) < ch->min_bits)
                return plan_fail_item(
                        ctx, "/cat/groups", last, group_first_share(&groups[last]),
                        "exclusive groups take %s of this host's cbm_mask %s, leaving the default group %s: "
                        "fewer than min_cbm_bits %u; leave at least %u way%s (contiguous) outside exclusive groups",
                        mask_str(a, excl, r->cbm_bits), mask_str(b, r->cbm_mask, r->cbm_bits),
                        mask_str(c, d, r->cbm_bits), ch->min_bits, ch->min_bits, ch->min_bits == 1 ? "" : "s");
        *ret = d;
        *ret_unused = free_ways & ~d;
        return 0;
}

/* ---- knobs ---- */

static int group_current(PlanCtx *ctx, const CatHost *ch, const char *name, const char *file, const char *resource,
                         char **ret) {
        char path[512];
        _cleanup_free_ char *text = NULL;

        if (name)
                snprintf(path, sizeof(path), "%s/%s/%s", ch->mount, name, file);
        else
                snprintf(path, sizeof(path), "%s/%s", ch->mount, file);
        if (!resource)
                return read_optional(ctx->root, path, ret);
        int k = root_read_file(ctx->root, path, &text, NULL);
        if (is_unknown(k)) {
                *ret = NULL;
                return 0;
        }
        if (k < 0)
                return k;
        k = resctrl_schemata_parse(text, resource, ret);
        if (k == -ENOENT || k == -EINVAL) {
                *ret = NULL;
                return 0;
        }
        return k;
}

static int add_schemata(PlanCtx *ctx, const CatHost *ch, const char *group, const char *resource, uint64_t value,
                        unsigned bits, const char *note) {
        char id[256], path[512];
        _cleanup_free_ char *cur = NULL, *want = NULL;
        Knob *kn;
        int k;

        snprintf(id, sizeof(id), "resctrl/%s/schemata/%s", group ? group : "default", resource);
        if (group)
                snprintf(path, sizeof(path), "%s/%s/schemata", ch->mount, group);
        else
                snprintf(path, sizeof(path), "%s/schemata", ch->mount);
        k = group_current(ctx, ch, group, "schemata", resource, &cur);
        if (k < 0)
                return k;
        want = resctrl_schemata_format(ch->domains, ch->n_domains, value, bits);
        if (!want)
                return -ENOMEM;
        k = plan_add(ctx, id, VALUE_SCHEMATA, path, cur, want, false, &kn);
        if (k < 0)
                return k;
        if (note && !(kn->note = strdup(note)))
                return -ENOMEM;
        return 0;
}

static int add_group_file(PlanCtx *ctx, const CatHost *ch, const CatGroup *g, const char *what, const char *file,
                          ValueKind kind, const char *want) {
        char id[256], path[512];
        _cleanup_free_ char *cur = NULL;
        int k;

        snprintf(id, sizeof(id), "resctrl/%s/%s", g->name, what);
        snprintf(path, sizeof(path), "%s/%s/%s", ch->mount, g->name, file);
        k = group_current(ctx, ch, g->name, file, NULL, &cur);
        if (k < 0)
                return k;
        return plan_add(ctx, id, kind, path, cur, want, false, NULL);
}

static int cat_note_foreign(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n) {
        DIR *d;
        StrBuf b = {};
        size_t foreign = 0;

        if (root_opendir(ctx->root, ch->mount, &d) < 0)
                return 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' || streq(de->d_name, "info") || streq(de->d_name, "mon_groups") ||
                    streq(de->d_name, "mon_data"))
                        continue;
                char path[512];
                snprintf(path, sizeof(path), "%s/%s", ch->mount, de->d_name);
                if (!root_is_dir(ctx->root, path))
                        continue;
                bool ours = false;
                for (size_t i = 0; i < n; i++)
                        if (streq(groups[i].name, de->d_name))
                                ours = true;
                if (ours)
                        continue;
                strbuf_appendf(&b, "%s%s", foreign++ ? ", " : "", de->d_name);
        }
        closedir(d);
        _cleanup_free_ char *list = strbuf_steal(&b);
        if (foreign == 0)
                return 0;
        if (!list)
                return -ENOMEM;
        unsigned limit = ch->cache ? ch->cache->num_closids : 0;
        if (ch->rc->mb.present && ch->rc->mb.num_closids && (!limit || ch->rc->mb.num_closids < limit))
                limit = ch->rc->mb.num_closids;
        if (limit > 0 && n + foreign > limit - 1)
                return plan_note(
                        ctx,
                        "cat: resctrl groups not in this profile hold CLOSIDs too (%s): with this profile's %zu "
                        "groups that is %zu of the %u available besides the default group; remove them before "
                        "apply or it runs out of CLOSIDs",
                        list, n, n + foreign, limit - 1);
        return plan_note(ctx, "cat: resctrl groups not in this profile are left alone: %s", list);
}

/* resctrl/mount: as it is where resctrl is mounted (owned, so that verify sees it vanish), else
 * mounted by apply. */
static int add_mount(PlanCtx *ctx, const CatHost *ch, bool cdp) {
        _cleanup_free_ char *cur = NULL;
        Knob *kn;
        int k = resctrl_read_mount(ctx->root, ch->mount, &cur);
        if (k < 0)
                return k;
        k = plan_add(ctx, "resctrl/mount", VALUE_AUTO, ch->mount, cur,
                     cur           ? cur
                             : cdp ? "mounted,cdp"
                                   : "mounted",
                     false, &kn);
        if (k >= 0 && !cur &&
            !(kn->note = strdup(root_can(ctx->root, ROOT_CAN_MOUNT) ? "mount -t resctrl" : "not mounted under --root")))
                return -ENOMEM;
        return k;
}

static int cat_plan_unmounted(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n) {
        bool cdp = false;
        int k;

        for (size_t i = 0; i < n; i++)
                cdp = cdp || groups[i].share[SHARE_L3CODE].spec || groups[i].share[SHARE_L3DATA].spec;
        k = plan_note(ctx,
                      "cat: resctrl is supported but not mounted; apply mounts it at /%s%s. Without its info/ "
                      "directory the cache masks and bandwidth cannot be checked against this host, so only the "
                      "groups' CPUs are planned: mount it (mount -t resctrl%s resctrl /%s) and plan again to see them",
                      RESCTRL_MOUNT_DEFAULT, cdp ? " with -o cdp" : "", cdp ? " -o cdp" : "", RESCTRL_MOUNT_DEFAULT);
        if (k >= 0)
                k = add_mount(ctx, ch, cdp);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++) {
                k = add_group_file(ctx, ch, &groups[i], "cpus", "cpus_list", VALUE_CPU_LIST, groups[i].cpus_list);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int resctrl_plan(PlanCtx *ctx) {
        json_t *cat = json_object_get(ctx->resolved->doc, "cat");
        const Resctrl *rc = &ctx->host->resctrl;
        _cleanup_(cat_host_done) CatHost ch = {};
        int k;

        if (!cat)
                return 0;
        if (!rc->supported && !rc->mounted)
                return plan_note(ctx,
                                 "cat: resctrl is not available on this host (no Intel RDT / AMD QoS in this kernel "
                                 "or CPU); cache partitioning skipped");

        json_t *arr = json_object_get(cat, "groups");
        size_t n = json_array_size(arr);
        json_t *sd = json_object_get(cat, "shrink_default");
        bool shrink = !sd || json_is_true(sd);
        if (n == 0)
                return 0;

        _cleanup_free_ CatGroup *groups = calloc(n, sizeof(CatGroup));
        if (!groups)
                return -ENOMEM;
        k = cat_groups_parse(ctx, arr, groups, n);
        if (k < 0)
                return k;
        k = cat_host_init(ctx, &ch);
        if (k < 0)
                return k;
        if (!rc->mounted)
                return cat_plan_unmounted(ctx, &ch, groups, n);

        /* Everything is checked before the first knob is added. */
        k = cat_check_resources(ctx, &ch, groups, n);
        if (k < 0)
                return k;
        k = cat_compute_masks(ctx, &ch, groups, n);
        if (k < 0)
                return k;
        k = cat_check_exclusive(ctx, &ch, groups, n);
        if (k < 0)
                return k;
        k = cat_check_mb(ctx, &ch, groups, n);
        if (k < 0)
                return k;
        bool any_exclusive = false;
        for (size_t i = 0; i < n; i++)
                any_exclusive = any_exclusive || groups[i].exclusive;
        uint64_t def = 0, unused = 0;
        bool shrinking = shrink && any_exclusive && ch.cache;
        if (shrinking) {
                k = cat_default_mask(ctx, &ch, groups, n, &def, &unused);
                if (k < 0)
                        return k;
        }

        if (ch.n_domains == 0)
                return plan_note(ctx,
                                 "cat: cannot tell this host's resctrl domains (no L3 cache ids in sysfs and no "
                                 "readable /%s/schemata); cache partitioning skipped",
                                 ch.mount);

        const ResctrlResource *r = ch.cache;
        char a[24];

        k = add_mount(ctx, &ch, rc->cdp);
        if (k < 0)
                return k;

        /* The default group first: exclusive mode is refused while it still shares the ways. */
        if (shrinking) {
                _cleanup_free_ char *ways = mask_ways(def);
                _cleanup_free_ char *note = NULL;
                if (!ways || asprintf(&note, "default group: %s, outside exclusive groups", ways) < 0)
                        return -ENOMEM;
                if (rc->cdp) {
                        k = add_schemata(ctx, &ch, NULL, "L3CODE", def, r->cbm_bits, note);
                        if (k >= 0)
                                k = add_schemata(ctx, &ch, NULL, "L3DATA", def, r->cbm_bits, note);
                } else
                        k = add_schemata(ctx, &ch, NULL, "L3", def, r->cbm_bits, note);
                if (k < 0)
                        return k;
                if (unused) {
                        _cleanup_free_ char *left = mask_ways(unused);
                        k = plan_note(ctx,
                                      "cat: the default group keeps %s; %s stay unused, as this host takes only "
                                      "contiguous masks",
                                      mask_str(a, def, r->cbm_bits), strempty(left));
                        if (k < 0)
                                return k;
                }
        } else if (any_exclusive && ch.cache && ch.root_schemata) {
                /* shrink_default is off: the user manages the default group, but the kernel will refuse
                 * exclusive mode while the default group overlaps. */
                uint64_t excl = 0;
                for (size_t i = 0; i < n; i++)
                        if (groups[i].exclusive)
                                excl |= group_ways(&groups[i]);
                _cleanup_free_ char *cur = NULL;
                if (resctrl_schemata_parse(ch.root_schemata, ch.cache_name, &cur) >= 0) {
                        bool overlap = false;
                        for (const char *p = cur; *p;) {
                                const char *eq = strchr(p, '=');
                                if (!eq)
                                        break;
                                overlap = overlap || (strtoull(eq + 1, NULL, 16) & excl);
                                p = strchrnul(p, ';');
                                if (*p)
                                        p++;
                        }
                        if (overlap) {
                                k = plan_note(ctx,
                                              "cat: shrink_default is false and the default group (%s:%s) shares "
                                              "ways with the exclusive groups (%s); the kernel refuses exclusive mode "
                                              "until the default group gives them up",
                                              ch.cache_name, cur, mask_str(a, excl, r->cbm_bits));
                                if (k < 0)
                                        return k;
                        }
                }
        }

        for (size_t i = 0; i < n; i++) {
                const CatGroup *g = &groups[i];
                for (int s = 0; s < _SHARE_MAX && r; s++) {
                        const CatShare *sh = &g->share[s];
                        if (!sh->spec)
                                continue;
                        _cleanup_free_ char *note = NULL;
                        if (sh->allocated) {
                                _cleanup_free_ char *ways = mask_ways(sh->mask);
                                if (!ways ||
                                    asprintf(&note, "%s (%u of %u)", ways, popcount64(sh->mask), r->cbm_bits) < 0)
                                        return -ENOMEM;
                        }
                        if (s == SHARE_L3 && rc->cdp) {
                                /* With CDP on, "l3" is the same mask for code and data. */
                                k = add_schemata(ctx, &ch, g->name, "L3CODE", sh->mask, r->cbm_bits, note);
                                if (k >= 0)
                                        k = add_schemata(ctx, &ch, g->name, "L3DATA", sh->mask, r->cbm_bits, note);
                        } else {
                                const char *res = s == SHARE_L3 ? "L3" : s == SHARE_L3CODE ? "L3CODE" : "L3DATA";
                                k = add_schemata(ctx, &ch, g->name, res, sh->mask, r->cbm_bits, note);
                        }
                        if (k < 0)
                                return k;
                }
                if (g->has_mb) {
                        if (g->mb != g->mb_asked) {
                                k = plan_note(ctx,
                                              "cat: group %s: mb %u%% is rounded up to %u%%, a multiple of this "
                                              "host's bandwidth_gran %u%%, as the kernel would",
                                              g->name, g->mb_asked, g->mb, rc->mb.bandwidth_gran);
                                if (k < 0)
                                        return k;
                        }
                        k = add_schemata(ctx, &ch, g->name, "MB", g->mb, 0, NULL);
                        if (k < 0)
                                return k;
                }
                k = add_group_file(ctx, &ch, g, "cpus", "cpus_list", VALUE_CPU_LIST, g->cpus_list);
                if (k < 0)
                        return k;
                k = add_group_file(ctx, &ch, g, "mode", "mode", VALUE_AUTO, g->exclusive ? "exclusive" : "shareable");
                if (k < 0)
                        return k;
        }
        return cat_note_foreign(ctx, &ch, groups, n);
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
                if (is_absent(r)) {
                        *ret = NULL;
                        return 0;
                }
                return r;
        }
        r = root_read_file(root, k->path, &text, NULL);
        if (is_absent(r)) {
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
