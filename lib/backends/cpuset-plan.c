/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cgroup.h"
#include "cpuset-internal.h"
#include "strv.h"
#include "systemd.h"

/* The cpuset backend's plan: the profile's "cpuset" section checked against the host, and the
 * knobs of cgroup v2 or of a v1 cpuset hierarchy (see cpuset.c for the knobs and their order). */

static const char * const default_confine[] = { "system.slice", "user.slice", "init.scope", NULL };

typedef struct Partition {
        const char *name;
        const char *cpus_list;
        CpuSet cpus;
        const char *mode; /* "isolated", "root", "member" */
        const char *mems; /* NULL: not given */
} Partition;

static bool partition_is_root(const Partition *p) {
        return streq(p->mode, "isolated") || streq(p->mode, "root");
}

/* NUMA nodes memory may be placed on: node/online where sysfs has it (memory-only nodes have no
 * CPUs), else the nodes with CPUs, else node 0. */
static int host_mem_nodes(PlanCtx *ctx, CpuSet *ret) {
        const Host *h = ctx->host;
        CpuSet s = {};

        if (root_read_cpu_list(ctx->root, "sys/devices/system/node/online", &s) >= 0 && !cpu_set_is_empty(&s)) {
                *ret = s;
                return 0;
        }
        for (unsigned n = 0; n < h->n_nodes; n++)
                if (!cpu_set_is_empty(&h->nodes[n]))
                        cpu_set_add(&s, n);
        if (cpu_set_is_empty(&s))
                cpu_set_add(&s, 0);
        *ret = s;
        return 0;
}

static int read_optional(Root *root, const char *path, char **ret) {
        int k = root_read_line(root, path, ret);
        /* Absent, or not readable by this user (plan needs no privileges): shown as absent. */
        if (cpuset_absent(k) || k == -EACCES || k == -EPERM) {
                *ret = NULL;
                return 0;
        }
        return k;
}

/* Adds knob `id` for file `dir`/`file`, its current value read from there. */
static int add_file(PlanCtx *ctx, const char *id, const char *dir, const char *file, ValueKind kind, const char *want,
                    Knob **ret) {
        _cleanup_free_ char *path = NULL, *cur = NULL;
        int k;

        if (asprintf(&path, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        k = read_optional(ctx->root, path, &cur);
        if (k < 0)
                return k;
        return plan_add(ctx, id, kind, path, cur, want, false, ret);
}

/* Knob cpuset/<name>/<what> for <base>/<cgroup>/<file>; cgroup NULL: the cgroup is named `name`. */
static int add_cgroup_file(PlanCtx *ctx, const char *base, const char *name, const char *cgroup, const char *what,
                           const char *file, ValueKind kind, const char *want) {
        _cleanup_free_ char *id = NULL, *dir = NULL;

        if (asprintf(&id, "cpuset/%s/%s", name, what) < 0 || asprintf(&dir, "%s/%s", base, cgroup ?: name) < 0)
                return -ENOMEM;
        return add_file(ctx, id, dir, file, kind, want, NULL);
}

static int add_partition_file(PlanCtx *ctx, const char *base, const char *name, const char *what, const char *file,
                              ValueKind kind, const char *want) {
        return add_cgroup_file(ctx, base, name, NULL, what, file, kind, want);
}

/* ---- the profile ---- */

typedef struct CpusetConf {
        Partition *parts;
        size_t n_parts;
        char **confine; /* cgroup names; empty: no confinement */
        const char *confine_cpus;
        CpuSet confine_set;
        char *hk_list;
} CpusetConf;

static void cpuset_conf_done(CpusetConf *c) {
        free(c->parts);
        strv_free(c->confine);
        free(c->hk_list);
}

/* confine: the default three when the key is absent; [] turns confinement off. */
static int conf_parse_confine(PlanCtx *ctx, json_t *sec, CpusetConf *c) {
        json_t *confine = json_object_get(sec, "confine"), *v;
        size_t i;
        int k;

        if (!confine) {
                for (const char * const *d = default_confine; *d; d++)
                        if ((k = strv_extend(&c->confine, *d)) < 0)
                                return k;
                return 0;
        }
        json_array_foreach (confine, i, v) {
                const char *name = json_string_value(v);
                char ptr[64];
                snprintf(ptr, sizeof(ptr), "/cpuset/confine/%zu", i);
                bool ok = name && *name && !streq(name, ".") && !streq(name, "..");
                for (const char *ch = name; ok && *ch; ch++)
                        if (*ch == '/' || *ch == ' ' || *ch == '\n')
                                ok = false;
                if (!ok)
                        return plan_fail(ctx, ptr,
                                         "\"%s\" is not a cgroup name; name slices or scopes directly under the "
                                         "cgroup root, e.g. \"system.slice\"",
                                         strempty(name));
                if (strv_contains(c->confine, name))
                        return plan_fail(ctx, ptr, "\"%s\" is listed twice", name);
                if ((k = strv_extend(&c->confine, name)) < 0)
                        return k;
        }
        return 0;
}

/* A partition's name: not rtpart's own, no systemd unit, not confined. */
static int conf_check_name(PlanCtx *ctx, const CpusetConf *c, size_t i, const Partition *p) {
        if (streq(p->name, "root") || streq(p->name, NRT_CPUSET))
                return plan_fail_item(ctx, "/cpuset/partitions", i, "name",
                                      "\"%s\" is reserved: rtpart's knob ids use it for the %s; choose another name",
                                      p->name,
                                      streq(p->name, "root") ? "root cpuset" : "housekeeping cpuset of cgroup v1");
        if (systemd_is_unit_cgroup(p->name))
                return plan_fail_item(ctx, "/cpuset/partitions", i, "name",
                                      "\"%s\" is a systemd unit name; name the partition without the suffix (where "
                                      "systemd runs, partition \"rt\" is the slice rt.slice, which rtpart creates)",
                                      p->name);
        if (strv_contains(c->confine, p->name))
                return plan_fail_item(ctx, "/cpuset/partitions", i, "name",
                                      "\"%s\" is also in \"confine\"; a partition and a confined cgroup are different "
                                      "cgroups",
                                      p->name);
        return 0;
}

/* The CPUs of partition i that are also in `other` (what): a profile error. */
static int conf_fail_overlap(PlanCtx *ctx, size_t i, const CpuSet *a, const CpuSet *other, const char *what) {
        CpuSet both = *a;
        cpu_set_and(&both, other);
        _cleanup_free_ char *l = cpu_set_format_list(&both);
        return plan_fail_item(ctx, "/cpuset/partitions", i, "cpus", "CPUs %s are also in %s", strempty(l), what);
}

static int conf_check_mems(PlanCtx *ctx, size_t i, const Partition *p, const CpuSet *mem_nodes) {
        CpuSet m;
        _cleanup_free_ char *nodes = cpu_set_format_list(mem_nodes);
        if (cpu_set_parse_list(p->mems, &m, NULL) < 0 || cpu_set_is_empty(&m))
                return plan_fail_item(ctx, "/cpuset/partitions", i, "mems",
                                      "\"%s\" is not a list of NUMA nodes; write e.g. \"0\" or \"0-1\" (nodes: %s)",
                                      p->mems, strempty(nodes));
        CpuSet missing = m;
        cpu_set_andnot(&missing, mem_nodes);
        if (cpu_set_is_empty(&missing))
                return 0;
        _cleanup_free_ char *l = cpu_set_format_list(&missing);
        return plan_fail_item(ctx, "/cpuset/partitions", i, "mems",
                              "NUMA node %s %s not exist on this host (nodes: %s)", strempty(l),
                              cpu_set_count(&missing) > 1 ? "do" : "does", strempty(nodes));
}

/* Partition i of the profile, checked against the ones before it and the host. */
static int conf_parse_partition(PlanCtx *ctx, CpusetConf *c, size_t i, json_t *v, const CpuSet *mem_nodes) {
        Partition *p = &c->parts[i];
        int k;

        p->name = json_string_value(json_object_get(v, "name"));
        p->cpus_list = json_string_value(json_object_get(v, "cpus"));
        p->mode = json_string_value(json_object_get(v, "mode"));
        p->mems = json_string_value(json_object_get(v, "mems"));
        if (!p->mode)
                p->mode = "isolated";
        if (!p->name || !p->cpus_list)
                return plan_fail_item(ctx, "/cpuset/partitions", i, NULL, "a partition needs \"name\" and \"cpus\"");
        k = conf_check_name(ctx, c, i, p);
        if (k < 0)
                return k;
        if (cpu_set_parse_list(p->cpus_list, &p->cpus, NULL) < 0)
                return plan_fail_item(ctx, "/cpuset/partitions", i, "cpus", "\"%s\" is not a CPU list", p->cpus_list);
        if (partition_is_root(p) && cpu_set_is_empty(&p->cpus))
                return plan_fail_item(ctx, "/cpuset/partitions", i, "cpus",
                                      "no CPUs: a partition in mode \"%s\" needs at least one CPU", p->mode);
        for (size_t j = 0; j < i; j++)
                if (cpu_set_intersects(&p->cpus, &c->parts[j].cpus)) {
                        _cleanup_free_ char *what = NULL;
                        if (asprintf(&what, "partition \"%s\" (/cpuset/partitions/%zu); partitions do not share CPUs",
                                     c->parts[j].name, j) < 0)
                                return -ENOMEM;
                        return conf_fail_overlap(ctx, i, &p->cpus, &c->parts[j].cpus, what);
                }
        if (cpu_set_intersects(&p->cpus, &c->confine_set)) {
                _cleanup_free_ char *what = NULL;
                if (asprintf(&what,
                             "confine_cpus (%s), where the system's cgroups run; take them out of the partition or "
                             "out of confine_cpus",
                             c->confine_cpus) < 0)
                        return -ENOMEM;
                return conf_fail_overlap(ctx, i, &p->cpus, &c->confine_set, what);
        }
        return p->mems ? conf_check_mems(ctx, i, p, mem_nodes) : 0;
}

static int cpuset_conf_parse(PlanCtx *ctx, json_t *sec, CpusetConf *c) {
        const Resolved *r = ctx->resolved;
        json_t *arr = json_object_get(sec, "partitions");
        size_t n = json_array_size(arr);
        int k;

        c->parts = calloc(MAX(n, (size_t) 1), sizeof(Partition));
        if (!c->parts)
                return -ENOMEM;
        c->n_parts = n;
        k = conf_parse_confine(ctx, sec, c);
        if (k < 0)
                return k;

        c->hk_list = cpu_set_format_list(&r->housekeeping);
        if (!c->hk_list)
                return -ENOMEM;
        c->confine_cpus = json_string_value(json_object_get(sec, "confine_cpus"));
        if (!c->confine_cpus)
                c->confine_cpus = c->hk_list;
        if (cpu_set_parse_list(c->confine_cpus, &c->confine_set, NULL) < 0)
                return plan_fail(ctx, "/cpuset/confine_cpus", "\"%s\" is not a CPU list", c->confine_cpus);
        if (c->confine && cpu_set_is_empty(&c->confine_set))
                return plan_fail(
                        ctx, "/cpuset/confine_cpus",
                        "no CPUs: the confined cgroups (%s, …) need at least one CPU to run on; name housekeeping "
                        "CPUs, or set \"confine\": [] to leave them alone",
                        c->confine[0]);

        CpuSet mem_nodes;
        k = host_mem_nodes(ctx, &mem_nodes);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++)
                if ((k = conf_parse_partition(ctx, c, i, json_array_get(arr, i), &mem_nodes)) < 0)
                        return k;

        /* The system keeps at least one housekeeping CPU outside every partition root. */
        CpuSet left = r->housekeeping, taken = {};
        size_t last = 0;
        for (size_t i = 0; i < n; i++)
                if (partition_is_root(&c->parts[i])) {
                        cpu_set_andnot(&left, &c->parts[i].cpus);
                        cpu_set_or(&taken, &c->parts[i].cpus);
                        last = i;
                }
        if (n > 0 && !cpu_set_is_empty(&taken) && cpu_set_is_empty(&left))
                return plan_fail_item(
                        ctx, "/cpuset/partitions", last, "cpus",
                        "the partitions take every housekeeping CPU (%s); leave at least one for the system",
                        c->hk_list);
        return 0;
}

/* ---- cgroup v2 ---- */

/* The confined slices: knobs before the partitions', so that revert takes the partitions away
 * first and a slice given back all CPUs conflicts with none. enabling: the root's controller knob
 * gives its children cpuset first; a slice's cpuset.cpus, absent until then, is what the kernel
 * makes it then ("": its parent's CPUs), and so what revert writes back before the controller
 * goes again. */
static int plan_v2_confine(PlanCtx *ctx, const CpusetConf *c, bool enabling) {
        const Host *h = ctx->host;
        const char *cg = h->cgroup2_mount;
        int k;

        if (!c->confine)
                return 0;
        StrBuf missing = {}, confined = {};
        for (char **s = c->confine; *s; s++) {
                _cleanup_free_ char *dir = NULL, *id = NULL;
                if (asprintf(&dir, "%s/%s", cg, *s) < 0 || asprintf(&id, "cpuset/%s/cpus", *s) < 0) {
                        strbuf_done(&missing);
                        strbuf_done(&confined);
                        return -ENOMEM;
                }
                if (!root_is_dir(ctx->root, dir)) {
                        strbuf_appendf(&missing, "%s%s", missing.len ? ", " : "", *s);
                        continue;
                }
                Knob *kn = NULL;
                k = add_file(ctx, id, dir, "cpuset.cpus", VALUE_CPU_LIST, c->confine_cpus, &kn);
                if (k >= 0 && enabling && !kn->current && !(kn->current = strdup("")))
                        k = -ENOMEM;
                /* Say how apply will write it: through systemd only where systemd is there to ask. */
                if (k >= 0 && h->systemd_running &&
                    !(kn->note =
                              strdup(systemd_owns_cgroups(ctx->root) ? "systemd AllowedCPUs="
                                                                     : "cpuset.cpus (no systemd to ask under --root)")))
                        k = -ENOMEM;
                if (k < 0) {
                        strbuf_done(&missing);
                        strbuf_done(&confined);
                        return k;
                }
                strbuf_appendf(&confined, "%s%s", confined.len ? ", " : "", *s);
        }
        _cleanup_free_ char *m = strbuf_steal(&missing), *done = strbuf_steal(&confined);
        if (m && *m) {
                k = plan_note(ctx, "cpuset: not on this host, so not confined: %s", m);
                if (k < 0)
                        return k;
        }
        if (done && *done && h->systemd_running)
                return plan_note(ctx,
                                 "cpuset: %s belong to systemd: apply confines them to CPUs %s through AllowedCPUs= "
                                 "(over D-Bus, so systemd keeps it), and verify reads their cpuset.cpus%s",
                                 done, c->confine_cpus,
                                 root_can(ctx->root, ROOT_CAN_ASK_SYSTEMD)
                                         ? ""
                                         : "; under --root, with no systemd to ask, their cpuset.cpus is "
                                           "written directly in its place");
        return 0;
}

static int plan_v2(PlanCtx *ctx, const CpusetConf *c) {
        const Host *h = ctx->host;
        const char *cg = h->cgroup2_mount;
        _cleanup_free_ char *isolated_file = NULL, *subtree_file = NULL, *subtree = NULL;
        int k = 0;

        if (asprintf(&isolated_file, "%s/cpuset.cpus.isolated", cg) < 0 ||
            asprintf(&subtree_file, "%s/cgroup.subtree_control", cg) < 0)
                return -ENOMEM;
        /* cpuset.cpus.exclusive came with cpuset.cpus.isolated (6.7), a file only the root has. */
        bool has_exclusive = root_exists(ctx->root, isolated_file);

        /* The partitions' and the slices' cpuset files exist only while the root enables cpuset
         * for its children. Without systemd, enabling it is a knob of its own, before the slices'
         * and partitions', so that revert disables it again, after them, when apply was what
         * enabled it. Where systemd owns the tree, systemd keeps cpuset enabled for the slices
         * that ask for it. */
        bool enabling = false;
        if ((c->n_parts > 0 || c->confine) && root_read_line(ctx->root, subtree_file, &subtree) >= 0) {
                bool enabled = cpuset_controller_enabled(subtree, "cpuset");
                enabling = !enabled && !h->systemd_running;
                if (!h->systemd_running)
                        k = plan_add(ctx, "cpuset/root/controller", VALUE_AUTO, subtree_file,
                                     enabled ? "+cpuset" : "-cpuset", "+cpuset", false, NULL);
                else if (!enabled && c->n_parts > 0)
                        k = plan_note(ctx,
                                      "cpuset: the root cgroup does not enable cpuset for its children yet; "
                                      "apply writes +cpuset to /%s first",
                                      subtree_file);
                if (k < 0)
                        return k;
        }

        k = plan_v2_confine(ctx, c, enabling);
        if (k < 0)
                return k;

        for (size_t i = 0; i < c->n_parts; i++) {
                const Partition *p = &c->parts[i];
                /* Where systemd owns the tree, the partition is a slice systemd creates (see
                 * cpuset_write), directly under the root: the parent of an isolated partition must
                 * be a partition root, and the root always is. */
                _cleanup_free_ char *slice = h->systemd_running ? systemd_partition_slice(p->name) : NULL;
                if (h->systemd_running && !slice)
                        return -ENOMEM;
                k = add_cgroup_file(ctx, cg, p->name, slice, "cpus", "cpuset.cpus", VALUE_CPU_LIST, p->cpus_list);
                if (k >= 0 && has_exclusive && partition_is_root(p))
                        k = add_cgroup_file(ctx, cg, p->name, slice, "cpus.exclusive", "cpuset.cpus.exclusive",
                                            VALUE_CPU_LIST, p->cpus_list);
                if (k >= 0 && p->mems)
                        k = add_cgroup_file(ctx, cg, p->name, slice, "mems", "cpuset.mems", VALUE_CPU_LIST, p->mems);
                /* Read verbatim: "isolated invalid (Cpu list in cpuset.cpus not exclusive)" differs
                 * from "isolated", as it should. */
                if (k >= 0)
                        k = add_cgroup_file(ctx, cg, p->name, slice, "partition", "cpuset.cpus.partition", VALUE_AUTO,
                                            p->mode);
                if (k >= 0 && slice)
                        k = plan_note(ctx,
                                      "cpuset: systemd owns the cgroup tree, so partition %s is the slice %s: systemd "
                                      "creates it and sets its CPUs (AllowedCPUs=), rtpart sets its partition mode; "
                                      "start realtime work in it with Slice=%s or systemd-run --slice=%s%s",
                                      p->name, slice, slice, slice,
                                      root_can(ctx->root, ROOT_CAN_ASK_SYSTEMD)
                                              ? ""
                                              : " (under --root, with no systemd to ask, rtpart makes "
                                                "the cgroup itself in its place)");
                if (k < 0)
                        return k;
        }

        return 0;
}

/* ---- cgroup v1 ---- */

/* The knob that moves every movable task into the housekeeping cpuset; its value is computed
 * (see cpuset_read), not a file's content. */
static int add_nrt_tasks(PlanCtx *ctx, const char *v1) {
        _cleanup_free_ char *path = NULL, *cur = NULL;
        if (asprintf(&path, "%s/%s/tasks", v1, NRT_CPUSET) < 0)
                return -ENOMEM;
        Knob probe = { .id = (char *) "cpuset/" NRT_CPUSET "/tasks", .domain = DOMAIN_CPUSET, .path = path };
        int k = cpuset_read(ctx->root, &probe, &cur);
        if (k < 0 && k != -ENOENT && k != -EACCES && k != -EPERM)
                return k;
        return plan_add(ctx, probe.id, VALUE_AUTO, path, k < 0 ? NULL : cur, NRT_MOVABLE, false, NULL);
}

/* A v1 hierarchy's file names: mounted with "noprefix" (old /dev/cpuset setups), the files lack the
 * "cpuset." prefix. */
typedef struct V1Files {
        char *cpus, *mems, *excl, *balance;
        char *root_mems; /* what a new cpuset's mems is: the root's */
} V1Files;

static void v1_files_done(V1Files *f) {
        free(f->cpus);
        free(f->mems);
        free(f->excl);
        free(f->balance);
        free(f->root_mems);
}

static int v1_files(PlanCtx *ctx, const char *v1, V1Files *f) {
        _cleanup_free_ char *probe = NULL, *noprefix = NULL, *mems = NULL;
        if (asprintf(&probe, "%s/cpuset.cpus", v1) < 0 || asprintf(&noprefix, "%s/cpus", v1) < 0)
                return -ENOMEM;
        const char *pre = !root_exists(ctx->root, probe) && root_exists(ctx->root, noprefix) ? "" : "cpuset.";
        if (asprintf(&f->cpus, "%scpus", pre) < 0 || asprintf(&f->mems, "%smems", pre) < 0 ||
            asprintf(&f->excl, "%scpu_exclusive", pre) < 0 || asprintf(&f->balance, "%ssched_load_balance", pre) < 0 ||
            asprintf(&mems, "%s/%s", v1, f->mems) < 0)
                return -ENOMEM;

        /* A cpuset takes no task while its mems is empty: default to the root's. */
        if (root_read_line(ctx->root, mems, &f->root_mems) < 0 || !*f->root_mems) {
                CpuSet nodes;
                int k = host_mem_nodes(ctx, &nodes);
                if (k < 0)
                        return k;
                free(f->root_mems);
                f->root_mems = cpu_set_format_list(&nodes);
                if (!f->root_mems)
                        return -ENOMEM;
        }
        return 0;
}

/* The cpus knobs that take the CPUs of excl off the cpuset rel (below v1) and every one below it,
 * children first (a child's CPUs lie in its parent's), appended to *shrink as "rel" with its
 * current and wanted value. A cpuset left without CPUs would refuse its tasks and new ones:
 * *ret_blocked names the first instead. */
typedef struct Shrink {
        char *rel, *current, *want;
} Shrink;

static int collect_shrink(PlanCtx *ctx, const char *v1, const char *rel, const V1Files *f, const CpuSet *excl,
                          Shrink **shrink, size_t *n, char **ret_blocked) {
        _cleanup_free_ char *dir = NULL, *file = NULL, *cur = NULL;
        _cleanup_strv_free_ char **children = NULL;
        CpuSet cpus;
        if (asprintf(&dir, "%s/%s", v1, rel) < 0 || asprintf(&file, "%s/%s", dir, f->cpus) < 0)
                return -ENOMEM;
        if (root_read_line(ctx->root, file, &cur) < 0 || cpu_set_parse_list(cur, &cpus, NULL) < 0 ||
            !cpu_set_intersects(&cpus, excl))
                return 0;
        int k = cpuset_v1_children(ctx->root, dir, &children);
        for (char **ch = children; k >= 0 && *ch && !*ret_blocked; ch++) {
                _cleanup_free_ char *sub = NULL;
                k = asprintf(&sub, "%s/%s", rel, *ch) < 0
                        ? -ENOMEM
                        : collect_shrink(ctx, v1, sub, f, excl, shrink, n, ret_blocked);
        }
        if (k < 0 || *ret_blocked)
                return k;
        cpu_set_andnot(&cpus, excl);
        if (cpu_set_is_empty(&cpus))
                return (*ret_blocked = strdup(rel)) ? 0 : -ENOMEM;
        Shrink *m = realloc(*shrink, (*n + 1) * sizeof(Shrink));
        if (!m)
                return -ENOMEM;
        *shrink = m;
        m[*n] = (Shrink) { .rel = strdup(rel), .current = TAKE_PTR(cur), .want = cpu_set_format_list(&cpus) };
        (*n)++;
        return m[*n - 1].rel && m[*n - 1].want ? 0 : -ENOMEM;
}

static void shrink_free(Shrink *s, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(s[i].rel);
                free(s[i].current);
                free(s[i].want);
        }
        free(s);
}

/* cgroup v1 lets no cpuset share a CPU with an exclusive sibling (validate_change(): EINVAL for the
 * write of cpu_exclusive). A sibling of the partitions holding CPUs of an exclusive one (libvirt's
 * "machine" holds every CPU) is shrunk off them first: its cpus, and those of the cpusets below
 * it, are knobs, which revert gives back. One that cannot be (exclusive itself, or left with no
 * CPU) is named in a note with what to do; apply then fails at the partition's cpu_exclusive. */
static int plan_v1_siblings(PlanCtx *ctx, const CpusetConf *c, const char *v1, const V1Files *f) {
        _cleanup_strv_free_ char **siblings = NULL;
        _cleanup_free_ char *excl_list = NULL;
        CpuSet excl = {};
        int k;

        for (size_t i = 0; i < c->n_parts; i++)
                if (partition_is_root(&c->parts[i]))
                        cpu_set_or(&excl, &c->parts[i].cpus);
        if (cpu_set_is_empty(&excl) || cpuset_v1_children(ctx->root, v1, &siblings) < 0)
                return 0;
        if (!(excl_list = cpu_set_format_list(&excl)))
                return -ENOMEM;
        for (char **sib = siblings; *sib; sib++) {
                bool ours = streq(*sib, NRT_CPUSET);
                for (size_t i = 0; i < c->n_parts && !ours; i++)
                        ours = streq(*sib, c->parts[i].name);
                if (ours)
                        continue;
                Shrink *shrink = NULL;
                size_t n = 0;
                _cleanup_free_ char *blocked = NULL, *excl_file = NULL, *is_excl = NULL;
                if (asprintf(&excl_file, "%s/%s/%s", v1, *sib, f->excl) < 0)
                        return -ENOMEM;
                k = collect_shrink(ctx, v1, *sib, f, &excl, &shrink, &n, &blocked);
                /* A cpuset someone made exclusive is theirs to shrink. */
                bool exclusive = (n > 0 || blocked) && root_read_line(ctx->root, excl_file, &is_excl) >= 0 &&
                        streq(is_excl, "1");
                if (k >= 0 && exclusive) {
                        free(blocked);
                        if (!(blocked = strdup(*sib)))
                                k = -ENOMEM;
                }
                for (size_t i = 0; k >= 0 && !blocked && i < n; i++) {
                        _cleanup_free_ char *id = NULL, *path = NULL;
                        if (asprintf(&id, "cpuset/%s/cpus", shrink[i].rel) < 0 ||
                            asprintf(&path, "%s/%s/%s", v1, shrink[i].rel, f->cpus) < 0)
                                k = -ENOMEM;
                        else
                                k = plan_add(ctx, id, VALUE_CPU_LIST, path, shrink[i].current, shrink[i].want, false,
                                             NULL);
                }
                if (k >= 0 && blocked)
                        k = plan_note(
                                ctx,
                                "cpuset: the exclusive partitions' CPUs %s cannot be taken off the cpuset %s (%s), "
                                "and cgroup v1 lets no sibling share CPUs with an exclusive cpuset: give it other "
                                "CPUs or stop what runs there (a VM pinned to those CPUs: pin it to housekeeping "
                                "CPUs, or start it in the partition), or make the partition \"member\"; until "
                                "then apply fails at the partition's cpu_exclusive",
                                excl_list, blocked,
                                exclusive ? "it is exclusive itself" : "it would be left without CPUs");
                else if (k >= 0 && n > 0)
                        k = plan_note(ctx,
                                      "cpuset: the cpuset %s holds CPUs of the exclusive partitions (%s), which cgroup "
                                      "v1 lets no sibling share: apply takes them off it first, and off the cpusets "
                                      "below it, and revert gives them back",
                                      *sib, excl_list);
                shrink_free(shrink, n);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int plan_v1(PlanCtx *ctx, const CpusetConf *c) {
        const char *v1 = ctx->host->cpuset_v1_mount;
        _cleanup_(v1_files_done) V1Files f = {};
        bool any_isolated = false;
        int k = v1_files(ctx, v1, &f);
        if (k < 0)
                return k;
        k = plan_v1_siblings(ctx, c, v1, &f);
        if (k < 0)
                return k;

        for (size_t i = 0; i < c->n_parts; i++) {
                const Partition *p = &c->parts[i];
                const char *mems = p->mems ? p->mems : f.root_mems;
                k = add_partition_file(ctx, v1, p->name, "cpus", f.cpus, VALUE_CPU_LIST, p->cpus_list);
                if (k >= 0)
                        k = add_partition_file(ctx, v1, p->name, "mems", f.mems, VALUE_CPU_LIST, mems);
                if (k >= 0 && partition_is_root(p)) {
                        bool isolated = streq(p->mode, "isolated");
                        any_isolated = any_isolated || isolated;
                        k = add_partition_file(ctx, v1, p->name, "cpu_exclusive", f.excl, VALUE_AUTO, "1");
                        if (k >= 0)
                                k = add_partition_file(ctx, v1, p->name, "sched_load_balance", f.balance, VALUE_AUTO,
                                                       isolated ? "0" : "1");
                }
                if (k < 0)
                        return k;
        }

        if (c->confine) {
                k = add_partition_file(ctx, v1, NRT_CPUSET, "cpus", f.cpus, VALUE_CPU_LIST, c->confine_cpus);
                if (k >= 0)
                        k = add_partition_file(ctx, v1, NRT_CPUSET, "mems", f.mems, VALUE_CPU_LIST, f.root_mems);
                if (k >= 0 && any_isolated)
                        /* The root stops balancing: this cpuset balances the housekeeping CPUs. */
                        k = add_partition_file(ctx, v1, NRT_CPUSET, "sched_load_balance", f.balance, VALUE_AUTO, "1");
                if (k >= 0)
                        k = add_nrt_tasks(ctx, v1);
                if (k >= 0)
                        k = plan_note(ctx,
                                      "cpuset: cgroup v1: apply moves every movable task into the housekeeping cpuset "
                                      "%s (CPUs %s); kernel threads bound to a CPU stay where they are. \"confine\" "
                                      "names cgroup v2 slices and is not used here",
                                      NRT_CPUSET, c->confine_cpus);
                if (k < 0)
                        return k;
        }

        if (any_isolated)
                /* The scheduler stops balancing across all CPUs, so none lands on isolated ones. */
                return add_file(ctx, "cpuset/root/sched_load_balance", v1, f.balance, VALUE_AUTO, "0", NULL);
        return 0;
}

int cpuset_plan(PlanCtx *ctx) {
        json_t *sec = json_object_get(ctx->resolved->doc, "cpuset");
        const Host *h = ctx->host;
        _cleanup_(cpuset_conf_done) CpusetConf c = {};
        int k;

        if (!sec)
                return 0;
        k = cpuset_conf_parse(ctx, sec, &c);
        if (k < 0)
                return k;

        if (h->cgroup2_mount && h->cgroup2_cpuset)
                return plan_v2(ctx, &c);
        if (h->cpuset_v1_mount)
                return plan_v1(ctx, &c);
        if (h->cgroup2_mount)
                return plan_note(ctx,
                                 "cpuset: the cpuset controller is not in /%s/cgroup.controllers (disabled on the "
                                 "kernel command line, or not built in); cpuset partitioning skipped",
                                 h->cgroup2_mount);
        return plan_note(ctx,
                         "cpuset: no cgroup cpuset hierarchy is mounted on this host (neither cgroup v2 with the "
                         "cpuset controller nor a v1 cpuset); cpuset partitioning skipped");
}
