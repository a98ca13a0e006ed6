/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "resctrl-internal.h"
#include "resctrl.h"
#include "strv.h"

/* What each group of the profile's "cat" section gets: its masks, checked against the host's
 * resctrl (resources, CLOSIDs, mask rules, exclusive groups, the default group's share). */

/* ---- masks ---- */

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
const char *cat_mask_str(char buf[static 24], uint64_t m, unsigned bits) {
        char hex[17];
        int len = snprintf(hex, sizeof(hex), "%llx", (unsigned long long) m);
        int width = (int) MIN(MAX((bits + 3) / 4, 1U), 16U), pad = MAX(width - len, 0);
        memcpy(buf, "0x", 2);
        memset(buf + 2, '0', (size_t) pad);
        memcpy(buf + 2 + pad, hex, (size_t) len + 1);
        return buf;
}

/* "ways 4-10" */
char *cat_mask_ways(uint64_t m) {
        if (m == 0)
                return strdup("no ways");
        unsigned lo = (unsigned) __builtin_ctzll(m), hi = 63U - (unsigned) __builtin_clzll(m);
        char *s;
        if (mask_contiguous(m))
                return asprintf(&s, lo == hi ? "way %u" : "ways %u-%u", lo, hi) < 0 ? NULL : s;
        return asprintf(&s, "%u ways between %u and %u", cat_popcount(m), lo, hi) < 0 ? NULL : s;
}

/* ---- the profile's groups ---- */

const char * const cat_share_key[_SHARE_MAX] = { "l3", "l3code", "l3data" };

uint64_t cat_group_ways(const CatGroup *g) {
        uint64_t u = 0;
        for (int s = 0; s < _SHARE_MAX; s++)
                u |= g->share[s].mask;
        return u;
}

static const char *group_first_share(const CatGroup *g) {
        for (int s = 0; s < _SHARE_MAX; s++)
                if (g->share[s].spec)
                        return cat_share_key[s];
        return NULL;
}

/* Host-independent checks, and the ones that need only the vendor: names, CPUs, "mb" on AMD. */
int cat_groups_parse(PlanCtx *ctx, json_t *arr, CatGroup *groups, size_t n) {
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
                        g->share[s].spec = json_object_get(v, cat_share_key[s]);
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

int cat_guests_parse(PlanCtx *ctx, json_t *cat, CatGuests *ret) {
        json_t *g = json_object_get(cat, "guests"), *mb = json_object_get(g, "mb");

        *ret = (CatGuests) { .l3.spec = json_object_get(g, "l3") };
        if (!mb)
                return 0;
        if (ctx->host->vendor == CPU_VENDOR_AMD)
                return plan_fail(
                        ctx, "/cat/guests/mb",
                        "\"mb\" is a percentage of memory bandwidth (Intel MBA); on this AMD host resctrl's MB "
                        "is an absolute limit in 1/8 GB/s units, which rtpart does not translate; remove "
                        "\"mb\" or move it under \"vendor\": {\"intel\": …}");
        ret->has_mb = true;
        ret->mb = ret->mb_asked = (unsigned) json_integer_value(mb);
        return 0;
}

/* ---- the host's side ---- */

void cat_host_done(CatHost *ch) {
        free(ch->domains);
        free(ch->root_schemata);
}

int cat_read_optional(Root *root, const char *path, char **ret) {
        int k = root_read_line(root, path, ret);
        if (resctrl_unknown(k)) {
                *ret = NULL;
                return 0;
        }
        return k;
}

int cat_host_init(PlanCtx *ctx, CatHost *ch) {
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
        if (k < 0 && !resctrl_unknown(k))
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

/* The resources a group's keys (and the guests') need must exist, and fit the number of CLOSIDs. */
int cat_check_resources(PlanCtx *ctx, const CatHost *ch, CatGroup *groups, size_t n, const CatGuests *guests) {
        const Resctrl *rc = ch->rc;

        for (size_t i = 0; i < n; i++) {
                CatGroup *g = &groups[i];
                for (int s = 0; s < _SHARE_MAX; s++) {
                        if (!g->share[s].spec)
                                continue;
                        if (!rc->l3.present && !rc->cdp)
                                return plan_fail_item(
                                        ctx, "/cat/groups", i, cat_share_key[s],
                                        "this host's resctrl has no L3 cache allocation (no info/L3 under "
                                        "/%s); remove \"%s\"",
                                        ch->mount, cat_share_key[s]);
                        if (s != SHARE_L3 && !rc->cdp)
                                return plan_fail_item(ctx, "/cat/groups", i, cat_share_key[s],
                                                      "CDP is not enabled; mount resctrl with -o cdp or use \"l3\"");
                }
                if (g->has_mb && !rc->mb.present)
                        return plan_fail_item(
                                ctx, "/cat/groups", i, "mb",
                                "this host's resctrl has no memory bandwidth allocation (no info/MB under /%s); "
                                "remove \"mb\"",
                                ch->mount);
        }
        if (guests->l3.spec && !rc->l3.present && !rc->cdp)
                return plan_fail(ctx, "/cat/guests/l3",
                                 "this host's resctrl has no L3 cache allocation (no info/L3 under /%s); remove "
                                 "\"l3\"",
                                 ch->mount);
        if (guests->has_mb && !rc->mb.present)
                return plan_fail(
                        ctx, "/cat/guests/mb",
                        "this host's resctrl has no memory bandwidth allocation (no info/MB under /%s); remove "
                        "\"mb\"",
                        ch->mount);

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

static int cat_check_mask(PlanCtx *ctx, const CatHost *ch, const char *pointer, uint64_t m) {
        const ResctrlResource *r = ch->cache;
        char a[24], b[24];

        if (m == 0)
                return plan_fail(ctx, pointer, "mask 0 selects no cache ways; this host has %u ways (cbm_mask %s)",
                                 r->cbm_bits, cat_mask_str(b, r->cbm_mask, r->cbm_bits));
        if (m & ~r->cbm_mask)
                return plan_fail(ctx, pointer, "mask 0x%llx exceeds this host's cbm_mask %s (%u ways)",
                                 (unsigned long long) m, cat_mask_str(b, r->cbm_mask, r->cbm_bits), r->cbm_bits);
        if (cat_popcount(m) < ch->min_bits)
                return plan_fail(ctx, pointer,
                                 "mask %s has %u bit%s; this host's min_cbm_bits is %u: give at least %u ways",
                                 cat_mask_str(a, m, r->cbm_bits), cat_popcount(m), cat_popcount(m) == 1 ? "" : "s",
                                 ch->min_bits, ch->min_bits);
        if (!ch->sparse && !mask_contiguous(m)) {
                unsigned cnt = cat_popcount(m), top = 63U - (unsigned) __builtin_clzll(m);
                return plan_fail(ctx, pointer,
                                 "mask %s is not contiguous and this host's CPUs take only contiguous masks "
                                 "(info/%s/sparse_masks is not 1); use e.g. %s",
                                 cat_mask_str(a, m, r->cbm_bits), ch->cache_name,
                                 cat_mask_str(b, mask_run(cnt, top + 1 - cnt), r->cbm_bits));
        }
        return 0;
}

/* A share's explicit "mask", checked against the host (0 when it gives none). */
static int share_explicit(PlanCtx *ctx, const CatHost *ch, json_t *spec, const char *pointer, uint64_t *ret) {
        json_t *mask = json_object_get(spec, "mask");
        uint64_t m;

        *ret = 0;
        if (!mask)
                return 0;
        if (!json_is_string(mask) || resctrl_mask_parse(json_string_value(mask), &m) < 0)
                return plan_fail(ctx, pointer, "\"%s\" is not a capacity bitmask; write hex digits such as \"0x7f0\"",
                                 json_is_string(mask) ? json_string_value(mask) : "mask");
        int k = cat_check_mask(ctx, ch, pointer, m);
        if (k < 0)
                return k;
        *ret = m;
        return 0;
}

/* How many ways a share's "ways" or "percent" asks for (0: it gives neither). */
static int share_want(PlanCtx *ctx, const CatHost *ch, json_t *spec, const char *pointer, unsigned *ret) {
        const ResctrlResource *r = ch->cache;
        json_t *ways = json_object_get(spec, "ways"), *pct = json_object_get(spec, "percent");
        unsigned want = 0;
        char a[24];

        if (ways) {
                want = (unsigned) json_integer_value(ways);
                if (want > r->cbm_bits)
                        return plan_fail(ctx, pointer, "%u ways exceed this host's %u ways (cbm_mask %s)", want,
                                         r->cbm_bits, cat_mask_str(a, r->cbm_mask, r->cbm_bits));
                if (want < ch->min_bits)
                        return plan_fail(ctx, pointer, "%u way%s is fewer than this host's min_cbm_bits %u", want,
                                         want == 1 ? "" : "s", ch->min_bits);
        } else if (pct) {
                long long p = json_integer_value(pct);
                want = (unsigned) ((r->cbm_bits * p + 50) / 100);
                want = MAX(want, ch->min_bits);
        }
        *ret = want;
        return 0;
}

/* The highest run of `want` ways that misses `taken` (and the shareable bits for an exclusive
 * group), or an error at pointer saying why there is none. */
static int share_alloc(PlanCtx *ctx, const CatHost *ch, const char *pointer, unsigned want, uint64_t taken,
                       bool exclusive, bool guests, uint64_t *ret) {
        const ResctrlResource *r = ch->cache;
        uint64_t avoid = taken | (exclusive ? r->shareable_bits : 0);
        char a[24], b[24];

        *ret = mask_alloc_top(r->cbm_mask, r->cbm_bits, avoid, want);
        if (*ret != 0)
                return 0;
        char extra[160] = "";
        if (exclusive && r->shareable_bits)
                snprintf(extra, sizeof(extra),
                         " and an exclusive group cannot use the shareable_bits %s (ways I/O devices and other "
                         "agents fill)",
                         cat_mask_str(b, r->shareable_bits, r->cbm_bits));
        return plan_fail(ctx, pointer,
                         "%u contiguous ways do not fit: this host has %u ways (cbm_mask %s), %s are given to %s%s; "
                         "%s",
                         want, r->cbm_bits, cat_mask_str(a, r->cbm_mask, r->cbm_bits),
                         cat_mask_str(b, taken, r->cbm_bits), guests ? "the groups" : "other groups", extra,
                         guests ? "keep fewer ways for guests, or give the groups fewer"
                                : "ask for fewer ways or give an explicit \"mask\" to share ways with another group");
}

/* Explicit masks first (they are fixed), then ways and percentages from the top bits down, in
 * group order, around every explicit mask and every earlier allocation, the guests' ways after
 * the groups'; the default group keeps the low bits. Exclusive groups also stay off the shareable
 * bits (the kernel refuses exclusive mode on them). */
int cat_compute_masks(PlanCtx *ctx, const CatHost *ch, CatGroup *groups, size_t n, CatGuests *guests) {
        uint64_t taken = 0;
        char ptr[256];
        int k;

        if (!ch->cache)
                return 0;
        for (size_t i = 0; i < n; i++)
                for (int s = 0; s < _SHARE_MAX; s++) {
                        snprintf(ptr, sizeof(ptr), "/cat/groups/%zu/%s", i, cat_share_key[s]);
                        k = share_explicit(ctx, ch, groups[i].share[s].spec, ptr, &groups[i].share[s].mask);
                        if (k < 0)
                                return k;
                        taken |= groups[i].share[s].mask;
                }
        k = share_explicit(ctx, ch, guests->l3.spec, "/cat/guests/l3", &guests->l3.mask);
        if (k < 0)
                return k;
        taken |= guests->l3.mask;

        for (size_t i = 0; i <= n; i++)
                for (int s = 0; s < (i < n ? _SHARE_MAX : 1); s++) {
                        CatShare *sh = i < n ? &groups[i].share[s] : &guests->l3;
                        unsigned want = 0;
                        if (i < n)
                                snprintf(ptr, sizeof(ptr), "/cat/groups/%zu/%s", i, cat_share_key[s]);
                        else
                                snprintf(ptr, sizeof(ptr), "/cat/guests/l3");
                        k = share_want(ctx, ch, sh->spec, ptr, &want);
                        if (k < 0)
                                return k;
                        if (want == 0)
                                continue;
                        k = share_alloc(ctx, ch, ptr, want, taken, i < n && groups[i].exclusive, i == n, &sh->mask);
                        if (k < 0)
                                return k;
                        sh->allocated = true;
                        taken |= sh->mask;
                }
        return 0;
}

int cat_check_exclusive(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n) {
        const ResctrlResource *r = ch->cache;
        char a[24], b[24], c[24];

        for (size_t i = 0; i < n; i++) {
                const CatGroup *g = &groups[i];
                uint64_t u = cat_group_ways(g);
                if (g->exclusive && !group_first_share(g))
                        return plan_fail_item(ctx, "/cat/groups", i, "exclusive",
                                              "an exclusive group needs cache ways of its own: give \"l3\" (or "
                                              "\"l3code\"/\"l3data\")");
                if (!r || u == 0)
                        continue;
                for (size_t j = 0; j < i; j++) {
                        const CatGroup *o = &groups[j];
                        uint64_t w = cat_group_ways(o);
                        if (!(g->exclusive || o->exclusive) || !(u & w))
                                continue;
                        if (o->exclusive)
                                return plan_fail_item(
                                        ctx, "/cat/groups", i, group_first_share(g),
                                        "ways %s overlap those of exclusive group \"%s\" (%s); an exclusive "
                                        "group shares no ways with any other group",
                                        cat_mask_str(a, u, r->cbm_bits), o->name, cat_mask_str(b, w, r->cbm_bits));
                        return plan_fail_item(
                                ctx, "/cat/groups", i, group_first_share(g),
                                "this group is exclusive but its ways %s overlap those of group \"%s\" (%s); an "
                                "exclusive group shares no ways with any other group",
                                cat_mask_str(a, u, r->cbm_bits), o->name, cat_mask_str(b, w, r->cbm_bits));
                }
                if (g->exclusive && (u & r->shareable_bits)) {
                        uint64_t alt = mask_alloc_top(r->cbm_mask, r->cbm_bits, r->shareable_bits, cat_popcount(u));
                        return plan_fail_item(
                                ctx, "/cat/groups", i, group_first_share(g),
                                "ways %s overlap this host's shareable_bits %s (ways I/O devices and other "
                                "agents fill); the kernel refuses exclusive mode there; use e.g. %s",
                                cat_mask_str(a, u, r->cbm_bits), cat_mask_str(b, r->shareable_bits, r->cbm_bits),
                                alt ? cat_mask_str(c, alt, r->cbm_bits) : "fewer ways");
                }
        }
        return 0;
}

/* The guests' ways are no group's: a group's explicit mask over them is refused (a group given
 * ways or a percentage is allocated around them). */
int cat_check_guests(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n, const CatGuests *guests) {
        const ResctrlResource *r = ch->cache;
        uint64_t gw = guests->l3.mask;
        char a[24], b[24];

        if (!r || gw == 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                uint64_t u = cat_group_ways(&groups[i]);
                if (!(u & gw))
                        continue;
                return plan_fail_item(ctx, "/cat/groups", i, group_first_share(&groups[i]),
                                      "ways %s overlap the ways kept for guests (/cat/guests/l3: %s); no group takes "
                                      "the guests' ways, so that libvirt can give them to each guest's <cachetune>; "
                                      "give the group other ways or keep fewer for guests",
                                      cat_mask_str(a, u, r->cbm_bits), cat_mask_str(b, gw, r->cbm_bits));
        }
        return 0;
}

/* An "mb" the host's MBA takes: at least min_bandwidth, rounded up to bandwidth_gran as the kernel
 * would (libvirt refuses a <memorytune> bandwidth off the granularity, so the guests' is rounded
 * too). */
static int mb_check(PlanCtx *ctx, const ResctrlResource *mb, const char *pointer, unsigned *value) {
        if (*value < mb->min_bandwidth)
                return plan_fail(ctx, pointer, "mb %u%% is below this host's min_bandwidth %u%%; use %u to 100", *value,
                                 mb->min_bandwidth, mb->min_bandwidth);
        if (mb->bandwidth_gran > 1 && *value % mb->bandwidth_gran)
                *value = MIN((*value / mb->bandwidth_gran + 1) * mb->bandwidth_gran, 100U);
        return 0;
}

int cat_check_mb(PlanCtx *ctx, const CatHost *ch, CatGroup *groups, size_t n, CatGuests *guests) {
        const ResctrlResource *mb = &ch->rc->mb;
        char ptr[256];
        int k;

        for (size_t i = 0; i < n; i++) {
                if (!groups[i].has_mb)
                        continue;
                snprintf(ptr, sizeof(ptr), "/cat/groups/%zu/mb", i);
                k = mb_check(ctx, mb, ptr, &groups[i].mb);
                if (k < 0)
                        return k;
        }
        return guests->has_mb ? mb_check(ctx, mb, "/cat/guests/mb", &guests->mb) : 0;
}

/* The default group's ways once shrunk: every way no exclusive group holds and the guests' ways
 * are not (on hosts without sparse masks, the largest contiguous run of them; *ret_unused: the
 * ways then left to no group at all). */
int cat_default_mask(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n, const CatGuests *guests,
                     uint64_t *ret, uint64_t *ret_unused) {
        const ResctrlResource *r = ch->cache;
        uint64_t excl = 0, held = 0;
        size_t last = 0;
        char a[24], b[24], c[24], e[24];

        for (size_t i = 0; i < n; i++) {
                held |= cat_group_ways(&groups[i]);
                if (groups[i].exclusive) {
                        excl |= cat_group_ways(&groups[i]);
                        last = i;
                }
        }
        uint64_t free_ways = r->cbm_mask & ~excl & ~guests->l3.mask;
        uint64_t d = ch->sparse ? free_ways : mask_largest_run(free_ways);
        if (cat_popcount(d) < ch->min_bits) {
                if (guests->l3.mask)
                        return plan_fail(ctx, "/cat/guests/l3",
                                         "exclusive groups take %s and the guests' ways are %s of this host's cbm_mask "
                                         "%s, leaving the default group %s: fewer than min_cbm_bits %u; keep fewer "
                                         "ways for guests or give the exclusive groups fewer",
                                         cat_mask_str(a, excl, r->cbm_bits),
                                         cat_mask_str(b, guests->l3.mask, r->cbm_bits),
                                         cat_mask_str(c, r->cbm_mask, r->cbm_bits), cat_mask_str(e, d, r->cbm_bits),
                                         ch->min_bits);
                return plan_fail_item(
                        ctx, "/cat/groups", last, group_first_share(&groups[last]),
                        "exclusive groups take %s of this host's cbm_mask %s, leaving the default group %s: "
                        "fewer than min_cbm_bits %u; leave at least %u way%s (contiguous) outside exclusive groups",
                        cat_mask_str(a, excl, r->cbm_bits), cat_mask_str(b, r->cbm_mask, r->cbm_bits),
                        cat_mask_str(c, d, r->cbm_bits), ch->min_bits, ch->min_bits, ch->min_bits == 1 ? "" : "s");
        }
        *ret = d;
        *ret_unused = free_ways & ~d & ~held;
        return 0;
}
