/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "cgroup.h"
#include "config.h"
#include "proc.h"
#include "strv.h"
#include "systemd.h"

/* The "cpuset" section of a profile: partitions, and the slices confined to the rest. */
static const char * const partition_modes[] = { "isolated", "root", "member", NULL };
static const Schema partition_mode_schema = { SCHEMA_STRING, .choices = partition_modes };
static const SchemaField partition_fields[] = { { "name", &schema_string },
                                                { "cpus", &schema_cpus },
                                                { "mode", &partition_mode_schema },
                                                { "mems", &schema_string },
                                                {} };
static const Schema partition_schema = { SCHEMA_OBJECT, .fields = partition_fields };
static const Schema partitions_schema = { SCHEMA_ARRAY, .items = &partition_schema };
static const SchemaField cpuset_fields[] = {
        { "partitions", &partitions_schema }, { "confine", &schema_strings_array }, { "confine_cpus", &schema_cpus }, {}
};
static const Schema cpuset_schema = { SCHEMA_OBJECT, .fields = cpuset_fields };
static const SchemaField cpuset_section = { "cpuset", &cpuset_schema };

/* cpusets: the profile's "partitions" become cgroups whose CPUs nothing else may use, and the
 * "confine" cgroups (systemd's slices) are kept on the housekeeping CPUs. Knobs:
 *
 * cgroup v2 (partition roots, Documentation/admin-guide/cgroup-v2.rst):
 *   cpuset/<part>/cpus            <cg2>/<part>/cpuset.cpus            CPU list
 *   cpuset/<part>/cpus.exclusive  <cg2>/<part>/cpuset.cpus.exclusive  CPU list (kernels ≥ 6.7)
 *   cpuset/<part>/mems            <cg2>/<part>/cpuset.mems            node list, when given
 *   cpuset/<part>/partition       <cg2>/<part>/cpuset.cpus.partition  "isolated" | "root" | "member"
 *   cpuset/<slice>/cpus           <cg2>/<slice>/cpuset.cpus           CPU list (AllowedCPUs= under systemd)
 *   cpuset/root/controller        <cg2>/cgroup.subtree_control        "+cpuset" | "-cpuset" (without systemd)
 *
 * cgroup v1 (Documentation/admin-guide/cgroup-v1/cpusets.rst):
 *   cpuset/<part>/cpus, /mems, /cpu_exclusive ("1"), /sched_load_balance ("0" isolated, "1" root)
 *   cpuset/rtpart-nrt/cpus, /mems, /sched_load_balance   the housekeeping cpuset every task moves to
 *   cpuset/rtpart-nrt/tasks                              <v1>/rtpart-nrt/tasks: "movable" once no
 *                                                        user-space task is left in the root cpuset,
 *                                                        else "N user tasks in the root cpuset"
 *   cpuset/root/sched_load_balance                       <v1>/cpuset.sched_load_balance
 *
 * Knobs are listed in the order a writer applies them: CPUs before modes, the cgroup created by
 * the first knob that needs it. Writing any knob of a cgroup as absent (NULL, the original of a
 * cgroup rtpart created) removes the cgroup, its tasks moved to the root first; revert goes in
 * reverse order, so the mode goes first and takes the cgroup with it.
 *
 * Where systemd runs and owns the tree (ROOT_CAN_ASK_SYSTEMD and run/systemd/system), a confined
 * slice's CPUs are set with AllowedCPUs= over D-Bus (systemd.h), never by writing its cgroup.
 * Elsewhere the slice's cpuset.cpus is written directly as the stand-in for what systemd would
 * write there. Every cgroup change goes through the root's ops: see cgroup.h. */

#define NRT_CPUSET "rtpart-nrt"
#define NRT_MOVABLE "movable"

static int cpuset_read(Root *root, const Knob *k, char **ret);

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

static bool is_absent(int k) {
        return k == -ENOENT || k == -ENOTDIR;
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
        if (is_absent(k) || k == -EACCES || k == -EPERM) {
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

static int cpuset_conf_parse(PlanCtx *ctx, json_t *sec, CpusetConf *c) {
        const Resolved *r = ctx->resolved;
        json_t *arr = json_object_get(sec, "partitions");
        size_t n = json_array_size(arr);
        int k;

        c->parts = calloc(MAX(n, (size_t) 1), sizeof(Partition));
        if (!c->parts)
                return -ENOMEM;
        c->n_parts = n;

        /* confine: the default three when the key is absent; [] turns confinement off. */
        json_t *confine = json_object_get(sec, "confine");
        if (!confine)
                for (const char * const *d = default_confine; *d; d++) {
                        k = strv_extend(&c->confine, *d);
                        if (k < 0)
                                return k;
                }
        else {
                size_t i;
                json_t *v;
                json_array_foreach (confine, i, v) {
                        const char *name = json_string_value(v);
                        char ptr[64];
                        snprintf(ptr, sizeof(ptr), "/cpuset/confine/%zu", i);
                        bool ok = name && *name && !streq(name, ".") && !streq(name, "..");
                        for (const char *ch = name; ok && *ch; ch++)
                                if (*ch == '/' || *ch == ' ' || *ch == '\n')
                                        ok = false;
                        if (!ok)
                                return plan_fail(
                                        ctx, ptr,
                                        "\"%s\" is not a cgroup name; name slices or scopes directly under the "
                                        "cgroup root, e.g. \"system.slice\"",
                                        strempty(name));
                        if (strv_contains(c->confine, name))
                                return plan_fail(ctx, ptr, "\"%s\" is listed twice", name);
                        k = strv_extend(&c->confine, name);
                        if (k < 0)
                                return k;
                }
        }

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

        for (size_t i = 0; i < n; i++) {
                json_t *v = json_array_get(arr, i);
                Partition *p = &c->parts[i];

                p->name = json_string_value(json_object_get(v, "name"));
                p->cpus_list = json_string_value(json_object_get(v, "cpus"));
                p->mode = json_string_value(json_object_get(v, "mode"));
                p->mems = json_string_value(json_object_get(v, "mems"));
                if (!p->mode)
                        p->mode = "isolated";
                if (!p->name || !p->cpus_list)
                        return plan_fail_item(ctx, "/cpuset/partitions", i, NULL,
                                              "a partition needs \"name\" and \"cpus\"");
                if (streq(p->name, "root") || streq(p->name, NRT_CPUSET))
                        return plan_fail_item(
                                ctx, "/cpuset/partitions", i, "name",
                                "\"%s\" is reserved: rtpart's knob ids use it for the %s; choose another name", p->name,
                                streq(p->name, "root") ? "root cpuset" : "housekeeping cpuset of cgroup v1");
                if (systemd_is_unit_cgroup(p->name))
                        return plan_fail_item(
                                ctx, "/cpuset/partitions", i, "name",
                                "\"%s\" is a systemd unit name; name the partition without the suffix (where "
                                "systemd runs, partition \"rt\" is the slice rt.slice, which rtpart creates)",
                                p->name);
                if (strv_contains(c->confine, p->name))
                        return plan_fail_item(
                                ctx, "/cpuset/partitions", i, "name",
                                "\"%s\" is also in \"confine\"; a partition and a confined cgroup are different "
                                "cgroups",
                                p->name);
                if (cpu_set_parse_list(p->cpus_list, &p->cpus, NULL) < 0)
                        return plan_fail_item(ctx, "/cpuset/partitions", i, "cpus", "\"%s\" is not a CPU list",
                                              p->cpus_list);
                if (partition_is_root(p) && cpu_set_is_empty(&p->cpus))
                        return plan_fail_item(ctx, "/cpuset/partitions", i, "cpus",
                                              "no CPUs: a partition in mode \"%s\" needs at least one CPU", p->mode);
                for (size_t j = 0; j < i; j++)
                        if (cpu_set_intersects(&p->cpus, &c->parts[j].cpus)) {
                                CpuSet both = p->cpus;
                                cpu_set_and(&both, &c->parts[j].cpus);
                                _cleanup_free_ char *l = cpu_set_format_list(&both);
                                return plan_fail_item(ctx, "/cpuset/partitions", i, "cpus",
                                                      "CPUs %s are also in partition \"%s\" (/cpuset/partitions/%zu); "
                                                      "partitions do not share CPUs",
                                                      strempty(l), c->parts[j].name, j);
                        }
                if (cpu_set_intersects(&p->cpus, &c->confine_set)) {
                        CpuSet both = p->cpus;
                        cpu_set_and(&both, &c->confine_set);
                        _cleanup_free_ char *l = cpu_set_format_list(&both);
                        return plan_fail_item(
                                ctx, "/cpuset/partitions", i, "cpus",
                                "CPUs %s are also in confine_cpus (%s), where the system's cgroups run; take "
                                "them out of the partition or out of confine_cpus",
                                strempty(l), c->confine_cpus);
                }
                if (p->mems) {
                        CpuSet m;
                        _cleanup_free_ char *nodes = cpu_set_format_list(&mem_nodes);
                        if (cpu_set_parse_list(p->mems, &m, NULL) < 0 || cpu_set_is_empty(&m))
                                return plan_fail_item(
                                        ctx, "/cpuset/partitions", i, "mems",
                                        "\"%s\" is not a list of NUMA nodes; write e.g. \"0\" or \"0-1\" (nodes: %s)",
                                        p->mems, strempty(nodes));
                        CpuSet missing = m;
                        cpu_set_andnot(&missing, &mem_nodes);
                        if (!cpu_set_is_empty(&missing)) {
                                _cleanup_free_ char *l = cpu_set_format_list(&missing);
                                return plan_fail_item(ctx, "/cpuset/partitions", i, "mems",
                                                      "NUMA node %s %s not exist on this host (nodes: %s)", strempty(l),
                                                      cpu_set_count(&missing) > 1 ? "do" : "does", strempty(nodes));
                        }
                }
        }

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

/* Whether a cgroup.subtree_control line lists the controller. */
static bool controller_enabled(const char *list, const char *ctrl) {
        size_t n = strlen(ctrl);
        for (const char *p = list; p && (p = strstr(p, ctrl)); p += n)
                if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ' || p[n] == '\n'))
                        return true;
        return false;
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
                bool enabled = controller_enabled(subtree, "cpuset");
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

static int plan_v1(PlanCtx *ctx, const CpusetConf *c) {
        const char *v1 = ctx->host->cpuset_v1_mount;
        _cleanup_free_ char *probe = NULL, *root_mems = NULL, *f_cpus = NULL, *f_mems = NULL, *f_excl = NULL,
                            *f_balance = NULL;
        bool any_isolated = false;
        int k;

        /* Mounted with "noprefix" (old /dev/cpuset setups), the files lack the "cpuset." prefix. */
        if (asprintf(&probe, "%s/cpuset.cpus", v1) < 0)
                return -ENOMEM;
        const char *pre = "cpuset.";
        if (!root_exists(ctx->root, probe)) {
                free(probe);
                if (asprintf(&probe, "%s/cpus", v1) < 0)
                        return -ENOMEM;
                if (root_exists(ctx->root, probe))
                        pre = "";
        }
        if (asprintf(&f_cpus, "%scpus", pre) < 0 || asprintf(&f_mems, "%smems", pre) < 0 ||
            asprintf(&f_excl, "%scpu_exclusive", pre) < 0 || asprintf(&f_balance, "%ssched_load_balance", pre) < 0)
                return -ENOMEM;

        /* A cpuset takes no task while its mems is empty: default to the root's. */
        free(probe);
        if (asprintf(&probe, "%s/%s", v1, f_mems) < 0)
                return -ENOMEM;
        if (root_read_line(ctx->root, probe, &root_mems) < 0 || !*root_mems) {
                CpuSet nodes;
                k = host_mem_nodes(ctx, &nodes);
                if (k < 0)
                        return k;
                free(root_mems);
                root_mems = cpu_set_format_list(&nodes);
                if (!root_mems)
                        return -ENOMEM;
        }

        for (size_t i = 0; i < c->n_parts; i++) {
                const Partition *p = &c->parts[i];
                const char *mems = p->mems ? p->mems : root_mems;
                k = add_partition_file(ctx, v1, p->name, "cpus", f_cpus, VALUE_CPU_LIST, p->cpus_list);
                if (k >= 0)
                        k = add_partition_file(ctx, v1, p->name, "mems", f_mems, VALUE_CPU_LIST, mems);
                if (k >= 0 && partition_is_root(p)) {
                        bool isolated = streq(p->mode, "isolated");
                        any_isolated = any_isolated || isolated;
                        k = add_partition_file(ctx, v1, p->name, "cpu_exclusive", f_excl, VALUE_AUTO, "1");
                        if (k >= 0)
                                k = add_partition_file(ctx, v1, p->name, "sched_load_balance", f_balance, VALUE_AUTO,
                                                       isolated ? "0" : "1");
                }
                if (k < 0)
                        return k;
        }

        if (c->confine) {
                k = add_partition_file(ctx, v1, NRT_CPUSET, "cpus", f_cpus, VALUE_CPU_LIST, c->confine_cpus);
                if (k >= 0)
                        k = add_partition_file(ctx, v1, NRT_CPUSET, "mems", f_mems, VALUE_CPU_LIST, root_mems);
                if (k >= 0 && any_isolated)
                        /* The root stops balancing: this cpuset balances the housekeeping CPUs. */
                        k = add_partition_file(ctx, v1, NRT_CPUSET, "sched_load_balance", f_balance, VALUE_AUTO, "1");
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
                return add_file(ctx, "cpuset/root/sched_load_balance", v1, f_balance, VALUE_AUTO, "0", NULL);
        return 0;
}

static int cpuset_plan(PlanCtx *ctx) {
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

/* ---- read and write ---- */

/* A knob's parts: "cpuset/<knob name>/<what>" with path "<hier>/<name>/<file>", or "<hier>/<file>"
 * for the hierarchy's root ("cpuset/root/…", name NULL). The cgroup's name is the knob's, except
 * for a partition where systemd owns the tree: its slice (systemd_partition_slice()). */
typedef struct CpusetKnob {
        char *hier;
        char *name; /* the cgroup directory */
        bool slice; /* a partition's slice, made by systemd */
        const char *what;
        const char *file;
} CpusetKnob;

static void cpuset_knob_done(CpusetKnob *c) {
        free(c->hier);
        free(c->name);
}

static int cpuset_knob_parse(const Knob *k, CpusetKnob *ret) {
        const char *id = k->id + strlen("cpuset/"), *slash = strchr(id, '/');
        const char *file = k->path ? strrchr(k->path, '/') : NULL;
        if (!startswith(k->id, "cpuset/") || !slash || !file)
                return -EINVAL;
        file++;
        _cleanup_free_ char *knob_name = strndup(id, (size_t) (slash - id));
        if (!knob_name)
                return -ENOMEM;
        bool is_root = streq(knob_name, "root");
        /* <hier>/<name>/<file>: the cgroup is the directory the file is in. */
        size_t dir_len = (size_t) (file - 1 - k->path);
        const char *name = NULL;
        if (!is_root) {
                name = memrchr(k->path, '/', dir_len);
                if (!name || name == k->path)
                        return -EINVAL;
                name++;
        }
        char *hier = strndup(k->path, is_root ? dir_len : (size_t) (name - 1 - k->path));
        char *dir = is_root ? NULL : strndup(name, (size_t) (file - 1 - name));
        if (!hier || (!is_root && !dir)) {
                free(hier);
                free(dir);
                return -ENOMEM;
        }
        *ret = (CpusetKnob) {
                .hier = hier,
                .name = dir,
                .slice = dir && !streq(dir, knob_name),
                .what = slash + 1,
                .file = file,
        };
        return 0;
}

static bool is_nrt_tasks(const CpusetKnob *c) {
        return c->name && streq(c->name, NRT_CPUSET) && streq(c->what, "tasks");
}

/* PF_* flags of a thread, from its stat file (procfs lets a thread's id be opened directly; a
 * fake tree has it below its process's task/ directory). */
static int task_flags(Root *root, long tid, unsigned *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        if (asprintf(&path, "proc/%ld/stat", tid) < 0)
                return -ENOMEM;
        if (root_read_file(root, path, &text, NULL) < 0) {
                _cleanup_strv_free_ char **m = NULL;
                free(path);
                if (asprintf(&path, "proc/[0-9]*/task/%ld/stat", tid) < 0)
                        return -ENOMEM;
                int k = root_glob(root, path, &m);
                if (k < 0)
                        return k;
                if (!m[0] || root_read_file(root, m[0], &text, NULL) < 0)
                        return -ESRCH;
        }
        ProcStat ps;
        int k = proc_stat_parse(text, &ps);
        if (k < 0)
                return k;
        *ret = ps.flags;
        proc_stat_done(&ps);
        return 0;
}

/* cpuset/rtpart-nrt/tasks: NULL while the housekeeping cpuset does not exist; "movable" once no
 * user-space task is left in the root cpuset; else how many are. Kernel threads do not count:
 * which of them the kernel lets move differs between versions (PF_NO_SETAFFINITY ones never,
 * kthreadd on newer kernels neither), and a value verify compares must not depend on that. */
static int read_nrt_tasks(Root *root, const CpusetKnob *c, char **ret) {
        _cleanup_free_ long *ids = NULL;
        size_t n, user = 0;

        if (!cgroup_exists(root, c->hier, c->name)) {
                *ret = NULL;
                return 0;
        }
        int k = cgroup_read_tasks(root, c->hier, NULL, &ids, &n);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n; i++) {
                unsigned flags;
                if (task_flags(root, ids[i], &flags) >= 0 && !(flags & PROC_PF_KTHREAD))
                        user++;
        }
        if (user == 0)
                return (*ret = strdup(NRT_MOVABLE)) ? 0 : -ENOMEM;
        return asprintf(ret, "%zu user task%s in the root cpuset", user, user == 1 ? "" : "s") < 0 ? -ENOMEM : 0;
}

/* "movable": every task of the root cpuset that the kernel lets go moves into rtpart-nrt, in
 * passes until none is left to move (tasks fork meanwhile). Anything else (the original, or
 * NULL): every task of rtpart-nrt goes back to the root. */
static int write_nrt_tasks(Root *root, const CpusetKnob *c, const char *value, KnobResult *ret) {
        _cleanup_free_ long *ids = NULL;
        size_t n;
        int k;

        if (!value || !streq(value, NRT_MOVABLE)) {
                if (!cgroup_exists(root, c->hier, c->name))
                        return 0;
                k = cgroup_read_tasks(root, c->hier, c->name, &ids, &n);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < n; i++) {
                        k = cgroup_move_task(root, c->hier, NULL, ids[i]);
                        if (k < 0 && k != -ESRCH) /* ESRCH: exited meanwhile */
                                return k;
                }
                return 0;
        }
        for (unsigned pass = 0; pass < 8; pass++) {
                size_t moved = 0;
                free(ids);
                ids = NULL;
                k = cgroup_read_tasks(root, c->hier, NULL, &ids, &n);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < n; i++) {
                        k = cgroup_move_task(root, c->hier, c->name, ids[i]);
                        switch (k) {
                        case 0:
                                moved++;
                                break;
                        case -EINVAL: /* a thread the kernel pins (PF_NO_SETAFFINITY, kthreadd): stays */
                        case -ESRCH:  /* exited meanwhile */
                                break;
                        default:
                                knob_result_reason(ret, "moving task %ld into %s: %s", ids[i], c->name, strerror(-k));
                                return k;
                        }
                }
                if (moved == 0)
                        break;
        }
        return 0;
}

/* cgroup v2: the cpuset files of a child exist only while its parent enables the controller. */
static int enable_cpuset(Root *root, const char *hier) {
        _cleanup_free_ char *path = NULL, *cur = NULL;
        if (asprintf(&path, "%s/cgroup.subtree_control", hier) < 0)
                return -ENOMEM;
        int k = root_read_line(root, path, &cur);
        if (k < 0)
                return k;
        if (controller_enabled(cur, "cpuset"))
                return 0;
        return cgroup_write_file(root, hier, NULL, "cgroup.subtree_control", "+cpuset");
}

/* systemd answers a property change before it writes the cgroup: wait, up to 5 s, until the
 * cgroup's file shows `value` (a CPU or node list; NULL: until the cgroup is gone). */
static int wait_for_systemd(Root *root, const CpusetKnob *c, const char *file, const char *value, KnobResult *ret) {
        _cleanup_free_ char *path = NULL;
        CpuSet want = {};
        if (asprintf(&path, "%s/%s/%s", c->hier, c->name, file) < 0)
                return -ENOMEM;
        if (value && cpu_set_parse_list(value, &want, NULL) < 0)
                return -EINVAL;
        for (unsigned i = 0; i < 2500; i++) {
                _cleanup_free_ char *got = NULL;
                CpuSet s;
                int k = root_read_line(root, path, &got);
                if (!value ? is_absent(k) && !cgroup_exists(root, c->hier, c->name)
                           : k >= 0 && cpu_set_parse_list(got, &s, NULL) >= 0 && cpu_set_equal(&s, &want))
                        return 0;
                (void) usleep(2000);
        }
        knob_result_reason(ret, "systemd accepted the change of %s but its %s did not follow within 5 s", c->name,
                           file);
        return -ETIMEDOUT;
}

static int set_allowed_cpus(const CpusetKnob *c, const CpuSet *s, KnobResult *ret) {
        _cleanup_free_ char *err = NULL;
        int k = systemd_set_allowed_cpus(NULL, c->name, s, &err);
        if (k < 0)
                knob_result_reason(ret, "systemd refused AllowedCPUs= for %s: %s", c->name, err ? err : strerror(-k));
        return k;
}

/* A confined slice's CPUs through systemd: AllowedCPUs=, reset when the original was empty.
 * systemd does not write a reset into a running unit's cgroup (its cpuset.cpus keeps the old CPUs,
 * systemd issue 43846), so a reset first gives the slice every CPU the root has (no partition is
 * left by then: partitions are reverted first), and then empties AllowedCPUs=: the slice ends on
 * all CPUs, and systemd's setting is empty, as it was. */
static int write_allowed_cpus(Root *root, const CpusetKnob *c, const char *value, KnobResult *ret) {
        CpuSet s = {};
        int k;
        if (value && cpu_set_parse_list(value, &s, NULL) < 0)
                return -EINVAL;
        if (!cpu_set_is_empty(&s)) {
                k = set_allowed_cpus(c, &s, ret);
                return k < 0 ? k : wait_for_systemd(root, c, "cpuset.cpus", value, ret);
        }
        _cleanup_free_ char *eff = NULL, *list = NULL;
        CpuSet all;
        if (asprintf(&eff, "%s/cpuset.cpus.effective", c->hier) < 0)
                return -ENOMEM;
        if (root_read_cpu_list(root, eff, &all) >= 0 && !cpu_set_is_empty(&all)) {
                if (!(list = cpu_set_format_list(&all)))
                        return -ENOMEM;
                k = set_allowed_cpus(c, &all, ret);
                if (k >= 0)
                        k = wait_for_systemd(root, c, "cpuset.cpus", list, ret);
                if (k < 0)
                        return k;
        }
        return set_allowed_cpus(c, &s, ret);
}

static int check_partition(Root *root, const Knob *k, const char *value, KnobResult *ret);

/* Whether a cgroup or any below it holds a task: cgroup.events "populated 1". */
static bool cgroup_populated(Root *root, const CpusetKnob *c) {
        _cleanup_free_ char *text = NULL, *path = NULL;
        if (asprintf(&path, "%s/%s/cgroup.events", c->hier, c->name) < 0 || root_read_file(root, path, &text, NULL) < 0)
                return false;
        return strstr(text, "populated 1") != NULL;
}

/* A partition's slice where systemd owns the tree. systemd makes and removes it and writes its
 * CPUs and memory nodes (AllowedCPUs=, AllowedMemoryNodes=, for now only: rtpartd makes it again at
 * boot); rtpart writes only cpuset.cpus.partition (unless systemd has CPUSetPartition=) and
 * cpuset.cpus.exclusive, files systemd leaves alone. */
static int write_partition_slice(Root *root, const Knob *k, const CpusetKnob *c, const char *value, KnobResult *ret) {
        _cleanup_free_ char *err = NULL;
        bool exists = cgroup_exists(root, c->hier, c->name);
        CpuSet s = {};
        int r;

        if (!value) {
                if (!exists)
                        return 0;
                if (cgroup_populated(root, c)) {
                        /* Stopping the slice would stop every unit in it: the realtime work itself. */
                        knob_result_reason(ret,
                                           "%s still runs tasks; stop them or move them out of the slice first (rtpart "
                                           "does not stop them)",
                                           c->name);
                        return -EBUSY;
                }
                (void) cgroup_write_file(root, c->hier, c->name, "cpuset.cpus.partition", "member");
                r = systemd_stop_unit(NULL, c->name, &err);
                if (r < 0) {
                        knob_result_reason(ret, "systemd refused to stop %s: %s", c->name, err ? err : strerror(-r));
                        return r;
                }
                return wait_for_systemd(root, c, "cgroup.procs", NULL, ret);
        }

        if (streq(c->what, "cpus") || streq(c->what, "mems")) {
                bool cpus = streq(c->what, "cpus");
                if (cpu_set_parse_list(value, &s, NULL) < 0)
                        return -EINVAL;
                if (cpus && !exists) {
                        const char *id = k->id + strlen("cpuset/");
                        _cleanup_free_ char *desc = NULL;
                        if (asprintf(&desc, "rtpart cpuset partition %.*s", (int) strcspn(id, "/"), id) < 0)
                                return -ENOMEM;
                        r = systemd_start_slice(NULL, c->name, desc, &s, &err);
                } else
                        r = systemd_set_cpus(NULL, c->name, cpus ? "AllowedCPUs" : "AllowedMemoryNodes", &s,
                                             /* runtime= */ true, &err);
                if (r < 0) {
                        knob_result_reason(ret, "systemd refused %s %s for %s: %s", exists ? "to set" : "to start with",
                                           cpus ? "AllowedCPUs=" : "AllowedMemoryNodes=", c->name,
                                           err ? err : strerror(-r));
                        return r;
                }
                return wait_for_systemd(root, c, c->file, value, ret);
        }

        if (!exists) {
                knob_result_reason(ret, "%s does not exist: its CPUs come first", c->name);
                return -ENOENT;
        }
        if (streq(c->what, "partition") && systemd_set_partition(NULL, c->name, value, NULL) >= 0)
                return check_partition(root, k, value, ret);
        r = cgroup_write_file(root, c->hier, c->name, c->file, value);
        if (r >= 0 && streq(c->what, "partition"))
                r = check_partition(root, k, value, ret);
        return r;
}

/* The kernel takes any partition mode and reports trouble only when read:
 * "isolated invalid (Cpu list in cpuset.cpus not exclusive)". */
static int check_partition(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        _cleanup_free_ char *got = NULL;
        int r = root_read_line(root, k->path, &got);
        if (r >= 0 && !streq(got, value)) {
                knob_result_reason(ret, "%s", got);
                r = -EINVAL;
        }
        return r;
}

static int cpuset_write_value(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        _cleanup_(cpuset_knob_done) CpusetKnob c = {};
        int r;

        r = cpuset_knob_parse(k, &c);
        if (r < 0)
                return r;
        if (!c.name)
                /* A file of the hierarchy's root (v1 sched_load_balance): always there. */
                return value ? cgroup_write_file(root, c.hier, NULL, c.file, value) : 0;

        bool v2 = cgroup_is_v2(root, c.hier);
        if (!v2 && is_nrt_tasks(&c))
                return write_nrt_tasks(root, &c, value, ret);
        if (v2 && c.slice && systemd_owns_cgroups(root))
                return write_partition_slice(root, k, &c, value, ret);
        if (v2 && streq(c.what, "cpus") && systemd_owns_cgroups(root) && systemd_is_unit_cgroup(c.name) &&
            cgroup_exists(root, c.hier, c.name))
                /* Never write into a cgroup systemd manages: it would overwrite it anyway. */
                return write_allowed_cpus(root, &c, value, ret);

        if (!value) {
                /* The cgroup did not exist before rtpart: remove it (the partition ends first). */
                if (!cgroup_exists(root, c.hier, c.name))
                        return 0;
                if (v2) {
                        _cleanup_free_ char *p = NULL;
                        if (asprintf(&p, "%s/%s/cpuset.cpus.partition", c.hier, c.name) < 0)
                                return -ENOMEM;
                        if (root_exists(root, p))
                                (void) cgroup_write_file(root, c.hier, c.name, "cpuset.cpus.partition", "member");
                }
                return cgroup_rmdir(root, c.hier, c.name);
        }

        bool created = false;
        if (!cgroup_exists(root, c.hier, c.name)) {
                if (v2) {
                        r = enable_cpuset(root, c.hier);
                        if (r < 0)
                                return r;
                }
                r = cgroup_mkdir(root, c.hier, c.name);
                if (r < 0)
                        return r;
                created = true;
        }
        r = cgroup_write_file(root, c.hier, c.name, c.file, value);
        if (r >= 0 && v2 && streq(c.what, "partition"))
                r = check_partition(root, k, value, ret);
        if (r < 0 && created)
                /* A refused write leaves nothing behind: not the cgroup it created either (the
                 * journal knows only of the write). */
                (void) cgroup_rmdir(root, c.hier, c.name);
        return r;
}

static int cpuset_read(Root *root, const Knob *k, char **ret) {
        _cleanup_(cpuset_knob_done) CpusetKnob c = {};
        bool parsed = cpuset_knob_parse(k, &c) >= 0;
        if (parsed && is_nrt_tasks(&c) && !cgroup_is_v2(root, c.hier))
                return read_nrt_tasks(root, &c, ret);
        int r = knob_read_file(root, k, ret);
        if (r >= 0 && parsed && !c.name && streq(c.what, "controller")) {
                /* cpuset/root/controller: "+cpuset" or "-cpuset", as written to the file. */
                char *v = strdup(controller_enabled(*ret, "cpuset") ? "+cpuset" : "-cpuset");
                free(*ret);
                *ret = v;
                return v ? 0 : -ENOMEM;
        }
        if (is_absent(r)) {
                *ret = NULL;
                return 0;
        }
        return r;
}

static int cpuset_write(Root *root, const Knob *k, const char *value, KnobResult *ret) {
        *ret = (KnobResult) {};
        int r = cpuset_write_value(root, k, value, ret);
        return knob_result_finish(ret, r);
}

static char *cpuset_heading(json_t *host) {
        char *s;
        return asprintf(&s, "cpuset (cgroup %s%s)", strempty(json_string_value(json_object_get(host, "cgroup"))),
                        json_is_true(json_object_get(host, "systemd")) ? ", slices through systemd" : "") < 0
                ? NULL
                : s;
}

/* Partitions: named groups; "root" and the v1 housekeeping cpuset's name are taken. */
static int cpuset_check(const char *file, json_t *section, const char *pointer, Error *e) {
        static const char * const reserved[] = { "root", NRT_CPUSET, NULL };
        _cleanup_free_ char *p = json_pointer_append(pointer, "partitions");
        return p ? backend_check_named_groups(file, json_object_get(section, "partitions"), p, reserved, e) : -ENOMEM;
}

const Backend backend_cpuset = {
        .domain = DOMAIN_CPUSET,
        .name = "cpuset",
        .schema = &cpuset_section,
        .check = cpuset_check,
        .plan = cpuset_plan,
        .read = cpuset_read,
        .write = cpuset_write,
        .watch = knob_watch_file,
        .heading = cpuset_heading,
        .flags = BACKEND_HOTPLUG_MOVES,
};
