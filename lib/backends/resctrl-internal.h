/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the resctrl backend's files share: resctrl.c (schema, text formats, read, write),
 * resctrl-alloc.c (each group's share, computed and checked) and resctrl-plan.c (the knobs). */

#include <stdint.h>

#include "backend.h"

#define RESCTRL_MOUNT_DEFAULT "sys/fs/resctrl"

/* A file that is not there (yet): the group does not exist, or the kernel lacks the file. */
static inline bool resctrl_absent(int k) {
        return k == -ENOENT || k == -ENOTDIR;
}

/* What a plan shows as "absent": also a file this user may not read (plan needs no privileges). */
static inline bool resctrl_unknown(int k) {
        return resctrl_absent(k) || k == -EACCES || k == -EPERM;
}

static inline unsigned cat_popcount(uint64_t m) {
        return (unsigned) __builtin_popcountll(m);
}

typedef enum CatShareKind {
        SHARE_L3,
        SHARE_L3CODE,
        SHARE_L3DATA,
        _SHARE_MAX,
} CatShareKind;

extern const char * const cat_share_key[_SHARE_MAX];

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

/* What the profile keeps for guests (cat.guests): ways no group and not the default group takes,
 * so that libvirt can make each guest's <cachetune> group of them, and the memory bandwidth each
 * guest's group may use (libvirt's <memorytune>). */
typedef struct CatGuests {
        CatShare l3; /* spec NULL: no ways kept */
        bool has_mb;
        unsigned mb, mb_asked;
} CatGuests;

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

/* ---- resctrl-alloc.c ---- */

/* "0x7f0", zero-padded to the host's width. */
const char *cat_mask_str(char buf[static 24], uint64_t m, unsigned bits);
/* "ways 4-10" */
char *cat_mask_ways(uint64_t m);
/* Every way the group's shares take. */
uint64_t cat_group_ways(const CatGroup *g);
/* Host-independent checks, and the ones that need only the vendor: names, CPUs, "mb" on AMD. */
int cat_groups_parse(PlanCtx *ctx, json_t *arr, CatGroup *groups, size_t n);
/* The same for cat.guests (absent: nothing kept). */
int cat_guests_parse(PlanCtx *ctx, json_t *cat, CatGuests *ret);
/* A file's first line; absent or unreadable by this user: NULL. */
int cat_read_optional(Root *root, const char *path, char **ret);
int cat_host_init(PlanCtx *ctx, CatHost *ch);
void cat_host_done(CatHost *ch);
/* Everything is checked before the first knob is added: these in order. */
int cat_check_resources(PlanCtx *ctx, const CatHost *ch, CatGroup *groups, size_t n, const CatGuests *guests);
int cat_compute_masks(PlanCtx *ctx, const CatHost *ch, CatGroup *groups, size_t n, CatGuests *guests);
int cat_check_exclusive(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n);
int cat_check_guests(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n, const CatGuests *guests);
int cat_check_mb(PlanCtx *ctx, const CatHost *ch, CatGroup *groups, size_t n, CatGuests *guests);
/* The default group's ways once shrunk: every way no exclusive group holds and the guests' ways
 * are not (on hosts without sparse masks, the largest contiguous run of them; *ret_unused: the
 * ways then left to no group at all). */
int cat_default_mask(PlanCtx *ctx, const CatHost *ch, const CatGroup *groups, size_t n, const CatGuests *guests,
                     uint64_t *ret, uint64_t *ret_unused);

/* ---- resctrl-plan.c ---- */

int resctrl_plan(PlanCtx *ctx);
