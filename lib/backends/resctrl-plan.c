/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "resctrl-internal.h"
#include "resctrl.h"
#include "strv.h"

/* The resctrl backend's plan: the knobs of the groups resctrl-alloc.c computed (see resctrl.c for
 * the knobs). */

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
                return cat_read_optional(ctx->root, path, ret);
        int k = root_read_file(ctx->root, path, &text, NULL);
        if (resctrl_unknown(k)) {
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

/* shrink_default is off: the user manages the default group, but the kernel will refuse
 * exclusive mode while it overlaps an exclusive group, and libvirt finds no free ways for a guest
 * while it holds the guests' ways. */
static int note_user_default(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n,
                             const CatGuests *guests) {
        const ResctrlResource *r = ch->cache;
        uint64_t excl = 0, cur_ways = 0;
        char a[24];
        int k = 0;

        for (size_t i = 0; i < n; i++)
                if (groups[i].exclusive)
                        excl |= cat_group_ways(&groups[i]);
        if ((!excl && !guests->l3.mask) || !r || !ch->root_schemata)
                return 0;
        _cleanup_free_ char *cur = NULL;
        if (resctrl_schemata_parse(ch->root_schemata, ch->cache_name, &cur) < 0)
                return 0;
        for (const char *p = cur; *p;) {
                const char *eq = strchr(p, '=');
                if (!eq)
                        break;
                cur_ways |= strtoull(eq + 1, NULL, 16);
                p = strchrnul(p, ';');
                if (*p)
                        p++;
        }
        if (cur_ways & excl)
                k = plan_note(ctx,
                              "cat: shrink_default is false and the default group (%s:%s) shares ways with the "
                              "exclusive groups (%s); the kernel refuses exclusive mode until the default group gives "
                              "them up",
                              ch->cache_name, cur, cat_mask_str(a, excl, r->cbm_bits));
        if (k >= 0 && (cur_ways & guests->l3.mask))
                k = plan_note(ctx,
                              "cat: shrink_default is false and the default group (%s:%s) holds ways kept for guests "
                              "(%s); libvirt cannot make a guest's <cachetune> group of them until the default group "
                              "gives them up",
                              ch->cache_name, cur, cat_mask_str(a, guests->l3.mask, r->cbm_bits));
        return k;
}

/* The default group's knobs, first: exclusive mode is refused while it still shares the ways.
 * shrinking: it gets def (unused: the ways left to nobody); else a note where the user's default
 * group is in the way. */
static int plan_default_group(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n,
                              const CatGuests *guests, bool shrinking, uint64_t def, uint64_t unused) {
        const ResctrlResource *r = ch->cache;
        char a[24];
        int k;

        if (!shrinking)
                return note_user_default(ctx, ch, groups, n, guests);
        _cleanup_free_ char *ways = cat_mask_ways(def);
        _cleanup_free_ char *note = NULL;
        if (!ways ||
            asprintf(&note, "default group: %s, outside exclusive groups%s", ways,
                     guests->l3.mask ? " and the guests' ways" : "") < 0)
                return -ENOMEM;
        if (ch->rc->cdp) {
                k = add_schemata(ctx, ch, NULL, "L3CODE", def, r->cbm_bits, note);
                if (k >= 0)
                        k = add_schemata(ctx, ch, NULL, "L3DATA", def, r->cbm_bits, note);
        } else
                k = add_schemata(ctx, ch, NULL, "L3", def, r->cbm_bits, note);
        if (k < 0 || !unused)
                return k;
        _cleanup_free_ char *left = cat_mask_ways(unused);
        return plan_note(ctx,
                         "cat: the default group keeps %s; %s stay unused, as this host takes only contiguous masks",
                         cat_mask_str(a, def, r->cbm_bits), strempty(left));
}

/* What the guests get: their ways (libvirt's <cachetune> groups are made of them, one CLOSID
 * each) and each guest's memory bandwidth. */
static int note_guests(PlanCtx *ctx, const CatHost *ch, size_t n, const CatGuests *guests) {
        const ResctrlResource *r = ch->cache;
        char a[24];
        int k = 0;

        if (guests->l3.mask && r) {
                _cleanup_free_ char *ways = cat_mask_ways(guests->l3.mask);
                unsigned limit = r->num_closids;
                if (ch->rc->mb.present && ch->rc->mb.num_closids && (!limit || ch->rc->mb.num_closids < limit))
                        limit = ch->rc->mb.num_closids;
                k = plan_note(
                        ctx,
                        "cat: %s (%s, %u of %u) are kept for guests: no group and not the default group holds "
                        "them, so libvirt makes each guest's <cachetune> group of them (export libvirt sizes it); "
                        "%u CLOSIDs are left for those groups",
                        strempty(ways), cat_mask_str(a, guests->l3.mask, r->cbm_bits), cat_popcount(guests->l3.mask),
                        r->cbm_bits, limit > n + 1 ? limit - 1 - (unsigned) n : 0);
        }
        if (k >= 0 && guests->has_mb && guests->mb != guests->mb_asked)
                k = plan_note(ctx,
                              "cat: guests: mb %u%% is rounded up to %u%%, a multiple of this host's bandwidth_gran "
                              "%u%%, as libvirt's <memorytune> needs",
                              guests->mb_asked, guests->mb, ch->rc->mb.bandwidth_gran);
        return k;
}

/* A group's knobs: its cache shares, its memory bandwidth, its CPUs and its mode. */
static int plan_group(PlanCtx *ctx, const CatHost *ch, const CatGroup *g) {
        const ResctrlResource *r = ch->cache;
        int k;

        for (int s = 0; s < _SHARE_MAX && r; s++) {
                const CatShare *sh = &g->share[s];
                if (!sh->spec)
                        continue;
                _cleanup_free_ char *note = NULL;
                if (sh->allocated) {
                        _cleanup_free_ char *ways = cat_mask_ways(sh->mask);
                        if (!ways || asprintf(&note, "%s (%u of %u)", ways, cat_popcount(sh->mask), r->cbm_bits) < 0)
                                return -ENOMEM;
                }
                if (s == SHARE_L3 && ch->rc->cdp) {
                        /* With CDP on, "l3" is the same mask for code and data. */
                        k = add_schemata(ctx, ch, g->name, "L3CODE", sh->mask, r->cbm_bits, note);
                        if (k >= 0)
                                k = add_schemata(ctx, ch, g->name, "L3DATA", sh->mask, r->cbm_bits, note);
                } else {
                        const char *res = s == SHARE_L3 ? "L3" : s == SHARE_L3CODE ? "L3CODE" : "L3DATA";
                        k = add_schemata(ctx, ch, g->name, res, sh->mask, r->cbm_bits, note);
                }
                if (k < 0)
                        return k;
        }
        if (g->has_mb) {
                if (g->mb != g->mb_asked) {
                        k = plan_note(ctx,
                                      "cat: group %s: mb %u%% is rounded up to %u%%, a multiple of this host's "
                                      "bandwidth_gran %u%%, as the kernel would",
                                      g->name, g->mb_asked, g->mb, ch->rc->mb.bandwidth_gran);
                        if (k < 0)
                                return k;
                }
                k = add_schemata(ctx, ch, g->name, "MB", g->mb, 0, NULL);
                if (k < 0)
                        return k;
        }
        k = add_group_file(ctx, ch, g, "cpus", "cpus_list", VALUE_CPU_LIST, g->cpus_list);
        if (k < 0)
                return k;
        return add_group_file(ctx, ch, g, "mode", "mode", VALUE_AUTO, g->exclusive ? "exclusive" : "shareable");
}

/* Every check, then the masks: before the first knob is added. */
static int cat_check_all(PlanCtx *ctx, const CatHost *ch, CatGroup *groups, size_t n, CatGuests *guests) {
        int k = cat_check_resources(ctx, ch, groups, n, guests);
        if (k >= 0)
                k = cat_compute_masks(ctx, ch, groups, n, guests);
        if (k >= 0)
                k = cat_check_exclusive(ctx, ch, groups, n);
        if (k >= 0)
                k = cat_check_guests(ctx, ch, groups, n, guests);
        if (k >= 0)
                k = cat_check_mb(ctx, ch, groups, n, guests);
        return k;
}

int resctrl_plan(PlanCtx *ctx) {
        json_t *cat = json_object_get(ctx->resolved->doc, "cat");
        const Resctrl *rc = &ctx->host->resctrl;
        _cleanup_(cat_host_done) CatHost ch = {};
        CatGuests guests = {};
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
        k = cat_guests_parse(ctx, cat, &guests);
        if (k < 0)
                return k;
        if (n == 0 && !guests.l3.spec && !guests.has_mb)
                return 0;

        _cleanup_free_ CatGroup *groups = calloc(MAX(n, 1U), sizeof(CatGroup));
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
        k = cat_check_all(ctx, &ch, groups, n, &guests);
        if (k < 0)
                return k;
        bool any_exclusive = false;
        for (size_t i = 0; i < n; i++)
                any_exclusive = any_exclusive || groups[i].exclusive;
        uint64_t def = 0, unused = 0;
        bool shrinking = shrink && (any_exclusive || guests.l3.mask) && ch.cache;
        if (shrinking && (k = cat_default_mask(ctx, &ch, groups, n, &guests, &def, &unused)) < 0)
                return k;

        if (ch.n_domains == 0)
                return plan_note(ctx,
                                 "cat: cannot tell this host's resctrl domains (no L3 cache ids in sysfs and no "
                                 "readable /%s/schemata); cache partitioning skipped",
                                 ch.mount);
        k = add_mount(ctx, &ch, rc->cdp);
        if (k >= 0)
                k = plan_default_group(ctx, &ch, groups, n, &guests, shrinking, def, unused);
        for (size_t i = 0; k >= 0 && i < n; i++)
                k = plan_group(ctx, &ch, &groups[i]);
        if (k >= 0)
                k = note_guests(ctx, &ch, n, &guests);
        return k < 0 ? k : cat_note_foreign(ctx, &ch, groups, n);
}
