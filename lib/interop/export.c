/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export-internal.h"
#include "export.h"
#include "macro.h"
#include "resctrl.h"
#include "strv.h"

/* The split of a plan (CPU classes, the L3 ways left to guests, huge pages, CPU flags) and a
 * guest's share of it without a ledger (export_reserve()). */

static const char * const siblings_names[_EXPORT_SIBLINGS_MAX] = {
        [EXPORT_SIBLINGS_APART] = "apart",
        [EXPORT_SIBLINGS_TOGETHER] = "together",
};

const char *export_siblings_to_string(ExportSiblings s) {
        return s >= 0 && s < _EXPORT_SIBLINGS_MAX ? siblings_names[s] : NULL;
}

ExportSiblings export_siblings_from_string(const char *s) {
        for (int i = 0; s && i < _EXPORT_SIBLINGS_MAX; i++)
                if (streq(siblings_names[i], s))
                        return (ExportSiblings) i;
        return _EXPORT_SIBLINGS_INVALID;
}

void export_split_done(ExportSplit *s) {
        free(s->caches);
        free(s->holders);
        export_huge_pages_done(&s->huge);
        strv_free(s->notes);
        *s = (ExportSplit) {};
}

/* ---- the L3 ways left free ---- */

/* The size of L3 cache `id` in KiB, from the sysfs of one of its CPUs ("11264K"); 0 if unknown. */
static uint64_t l3_size_kib(Root *root, const Host *h, unsigned id) {
        CpuSet cpus;
        char path[128];
        _cleanup_free_ char *v = NULL;

        if (!host_l3_cpus(h, id, &cpus) || cpu_set_is_empty(&cpus))
                return 0;
        snprintf(path, sizeof(path), "sys/devices/system/cpu/cpu%d/cache/index3/size", cpu_set_next(&cpus, 0));
        if (root_read_line(root, path, &v) < 0)
                return 0;
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (end == v)
                return 0;
        if (*end == 'M')
                n *= 1024;
        else if (*end != 'K')
                return 0;
        return n;
}

static const char *resource_type(const char *res) {
        return streq(res, "L3") ? "both" : streq(res, "L3CODE") ? "code" : streq(res, "L3DATA") ? "data" : NULL;
}

static ExportCacheFree *cache_get(ExportSplit *s, unsigned id, const char *type) {
        for (size_t i = 0; i < s->n_caches; i++)
                if (s->caches[i].id == id && streq(s->caches[i].type, type))
                        return &s->caches[i];
        ExportCacheFree *n = realloc(s->caches, (s->n_caches + 1) * sizeof(ExportCacheFree));
        if (!n)
                return NULL;
        s->caches = n;
        s->caches[s->n_caches] = (ExportCacheFree) { .id = id, .type = type, .ways = UINT64_MAX };
        return &s->caches[s->n_caches++];
}

/* One group's schemata value ("0=00f;1=00f") for resource type: its ways are no guest's. */
static int split_hold(ExportSplit *s, StrBuf *holders, const char *group, const char *type, const char *value) {
        bool first = true;
        for (const char *p = value; p && *p;) {
                char *end;
                unsigned long id = strtoul(p, &end, 10);
                if (end == p || *end != '=')
                        break;
                const char *v = end + 1, *semi = strchrnul(v, ';');
                _cleanup_free_ char *m = strndup(v, (size_t) (semi - v));
                uint64_t mask;
                if (!m)
                        return -ENOMEM;
                if (resctrl_mask_parse(m, &mask) >= 0) {
                        ExportCacheFree *c = cache_get(s, (unsigned) id, type);
                        if (!c)
                                return -ENOMEM;
                        c->ways &= ~mask;
                        if (first)
                                strbuf_appendf(holders, "%s%s 0x%s", holders->len ? ", " : "", group, m);
                        first = false;
                }
                p = *semi ? semi + 1 : semi;
        }
        return 0;
}

/* The default group's masks on the host, where the plan leaves the default group as it is. */
static int split_hold_default(Root *root, const Host *h, ExportSplit *s, StrBuf *holders) {
        static const char * const res[] = { "L3", "L3CODE", "L3DATA" };
        char path[512];
        _cleanup_free_ char *text = NULL;

        snprintf(path, sizeof(path), "%s/schemata", h->resctrl.mount ? h->resctrl.mount : "sys/fs/resctrl");
        if (root_read_file(root, path, &text, NULL) < 0)
                return 0; /* unreadable: libvirt reads it itself; nothing to subtract here */
        for (size_t i = 0; i < ELEMENTSOF(res); i++) {
                _cleanup_free_ char *v = NULL;
                if (resctrl_schemata_parse(text, res[i], &v) < 0)
                        continue;
                int k = split_hold(s, holders, "default", resource_type(res[i]), v);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* The free ways of every cache the plan gives masks on: the host's ways less every group's. */
static int split_caches(Root *root, const Host *h, const Plan *plan, ExportSplit *s) {
        StrBuf holders = {};
        bool default_planned = false;
        int k = 0;

        for (size_t i = 0; k >= 0 && i < plan->n_knobs; i++) {
                const Knob *kn = &plan->knobs[i];
                if (!startswith(kn->id, "resctrl/") || !kn->desired)
                        continue;
                const char *rest = kn->id + strlen("resctrl/"), *slash = strchr(rest, '/'), *type;
                if (!slash || !startswith(slash, "/schemata/") || !(type = resource_type(slash + strlen("/schemata/"))))
                        continue;
                _cleanup_free_ char *group = strndup(rest, (size_t) (slash - rest));
                if (!group)
                        k = -ENOMEM;
                else {
                        default_planned = default_planned || streq(group, "default");
                        k = split_hold(s, &holders, group, type, kn->desired);
                }
        }
        s->cat = s->n_caches > 0;
        if (k >= 0 && s->cat && !default_planned)
                k = split_hold_default(root, h, s, &holders);
        s->holders = strbuf_steal(&holders);
        if (k < 0)
                return k;
        if (!s->holders)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_caches; i++) {
                ExportCacheFree *c = &s->caches[i];
                const ResctrlResource *r = streq(c->type, "both") ? &h->resctrl.l3 : &h->resctrl.l3code;
                uint64_t size = l3_size_kib(root, h, c->id);
                c->ways &= r->cbm_mask;
                c->way_kib = r->cbm_bits > 0 ? size / r->cbm_bits : 0;
                c->min_ways = MAX(r->min_cbm_bits, 1U);
        }
        return 0;
}

/* ---- the rest of the split ---- */

/* cat.guests.mb, rounded up to the host's bandwidth_gran as the plan does. */
static unsigned guest_mb(const Host *h, const json_t *doc) {
        json_t *mb = json_object_get(json_object_get(json_object_get(doc, "cat"), "guests"), "mb");
        unsigned v = (unsigned) json_integer_value(mb), gran = h->resctrl.mb.bandwidth_gran;

        if (!mb || !h->resctrl.mb.present || h->vendor == CPU_VENDOR_AMD)
                return 0;
        if (gran > 1 && v % gran)
                v = MIN((v / gran + 1) * gran, 100U);
        return v;
}

/* Whether the CPUs' flags in proc/cpuinfo name the TSC deadline timer. */
static bool host_tsc_deadline(Root *root) {
        _cleanup_free_ char *text = NULL;
        if (root_read_file(root, "proc/cpuinfo", &text, NULL) < 0)
                return false;
        for (const char *p = text; (p = strstr(p, "tsc_deadline_timer")); p++) {
                char after = p[strlen("tsc_deadline_timer")];
                if (p > text && (p[-1] == ' ' || p[-1] == '\t') && (after == ' ' || after == '\n' || after == 0))
                        return true;
        }
        return false;
}

int export_split_from_plan(Root *root, const Host *h, const Plan *plan, const json_t *doc, ExportSplit *ret,
                           char **ret_message) {
        _cleanup_(export_split_done) ExportSplit s = { .isolated = plan->isolated, .housekeeping = plan->housekeeping };
        const char *sib = json_string_value(json_object_get(json_object_get(doc, "cpus"), "vcpu_siblings"));
        int r;

        *ret_message = NULL;
        s.siblings = sib ? export_siblings_from_string(sib) : EXPORT_SIBLINGS_APART;
        if (s.siblings < 0)
                s.siblings = EXPORT_SIBLINGS_APART; /* the schema allows no other value */
        r = split_caches(root, h, plan, &s);
        if (r < 0)
                return r;
        s.guest_mb = guest_mb(h, doc);
        s.mb = h->resctrl.mb.present;
        s.tsc_deadline = host_tsc_deadline(root);
        r = export_hugepages_read(root, h, doc, &s.isolated, &s.housekeeping, &s.huge, ret_message);
        if (r < 0)
                return r;
        *ret = s;
        s = (ExportSplit) {};
        return 0;
}

/* ---- a guest's share ---- */

void export_reservation_done(ExportReservation *r) {
        free(r->cpus);
        *r = (ExportReservation) {};
}

/* The CPUs vCPUs may take on one node, in the order they take them: cores in CPU number order;
 * per core its lowest isolated CPU (apart) or all its isolated CPUs (together). */
static unsigned node_slots(const Host *h, const ExportSplit *s, const CpuSet *node, unsigned *ret) {
        CpuSet cand = *node, cores = {};
        unsigned n = 0;
        cpu_set_and(&cand, &s->isolated);
        CPU_SET_FOREACH (c, &cand) {
                int core = (unsigned) c < h->n_cpu_ids && h->cpus[c].core >= 0 ? h->cpus[c].core : c;
                if (cpu_set_has(&cores, (unsigned) core))
                        continue;
                cpu_set_add(&cores, (unsigned) core);
                if (s->siblings == EXPORT_SIBLINGS_APART) {
                        if (ret)
                                ret[n] = (unsigned) c;
                        n++;
                        continue;
                }
                CPU_SET_FOREACH (t, &cand) {
                        int tc = (unsigned) t < h->n_cpu_ids && h->cpus[t].core >= 0 ? h->cpus[t].core : t;
                        if (tc != core)
                                continue;
                        if (ret)
                                ret[n] = (unsigned) t;
                        n++;
                }
        }
        return n;
}

/* The order the nodes are filled in: one node when one has room for n (the lowest such), else the
 * roomiest first (stable: lower ids first). Returns how many nodes to use. */
static unsigned node_order(const unsigned *room, unsigned n_nodes, unsigned n, unsigned *order) {
        for (unsigned i = 0; i < n_nodes; i++)
                order[i] = i;
        for (unsigned i = 0; i < n_nodes; i++)
                if (room[i] >= n) {
                        order[0] = i;
                        return 1;
                }
        for (unsigned i = 1; i < n_nodes; i++)
                for (unsigned j = i; j > 0 && room[order[j]] > room[order[j - 1]]; j--) {
                        unsigned t = order[j];
                        order[j] = order[j - 1];
                        order[j - 1] = t;
                }
        return n_nodes;
}

unsigned export_largest_run(uint64_t m) {
        unsigned best = 0;
        while (m) {
                m >>= __builtin_ctzll(m);
                unsigned n = (unsigned) __builtin_ctzll(~m);
                best = MAX(best, n);
                m = n >= 64 ? 0 : m >> n;
        }
        return best;
}

bool export_cache_used(const Host *h, const ExportCacheFree *c, const ExportReservation *r) {
        CpuSet l3;
        if (!host_l3_cpus(h, c->id, &l3))
                return false;
        for (unsigned v = 0; v < r->n_vcpus; v++)
                if (cpu_set_has(&l3, r->cpus[v]))
                        return true;
        return false;
}

/* Every way free on each cache the guest uses: the smallest of their largest runs. */
static unsigned reserve_cache(const Host *h, const ExportSplit *s, const ExportReservation *r) {
        unsigned ways = UINT_MAX;
        for (size_t i = 0; i < s->n_caches; i++)
                if (export_cache_used(h, &s->caches[i], r)) {
                        unsigned run = export_largest_run(s->caches[i].ways);
                        ways = MIN(ways, run >= s->caches[i].min_ways ? run : 0);
                }
        return ways == UINT_MAX ? 0 : ways;
}

/* The size of the huge pages every node of the guest has: the default size where it is one of
 * them, else the largest. */
static uint64_t reserve_hugepages(const ExportHugePages *hp, const CpuSet *nodes) {
        uint64_t best = 0;
        for (size_t i = 0; i < hp->n_pools; i++) {
                uint64_t size = hp->pools[i].size_kb;
                bool everywhere = true;
                CPU_SET_FOREACH (n, nodes) {
                        bool has = false;
                        for (size_t j = 0; j < hp->n_pools; j++)
                                has = has || (hp->pools[j].node == (unsigned) n && hp->pools[j].size_kb == size);
                        everywhere = everywhere && has;
                }
                if (!everywhere)
                        continue;
                if (size == hp->default_kb)
                        return size;
                best = MAX(best, size);
        }
        return best;
}

int export_reserve(const Host *h, const ExportSplit *s, unsigned n, ExportReservation *ret, unsigned *ret_capacity) {
        CpuSet single = h->online;
        const CpuSet *nodes = h->numa && h->n_nodes > 0 ? h->nodes : &single;
        unsigned n_nodes = h->numa && h->n_nodes > 0 ? h->n_nodes : 1, total = 0;
        _cleanup_free_ unsigned *room = calloc(n_nodes, sizeof(unsigned));
        _cleanup_free_ unsigned *order = calloc(n_nodes, sizeof(unsigned));
        _cleanup_free_ unsigned *slots = calloc(CPU_SET_MAX, sizeof(unsigned));

        if (!room || !order || !slots)
                return -ENOMEM;
        for (unsigned i = 0; i < n_nodes; i++) {
                room[i] = node_slots(h, s, &nodes[i], NULL);
                total += room[i];
        }
        *ret_capacity = total;
        if (n == 0 || n > total)
                return -ENOSPC;

        unsigned used = node_order(room, n_nodes, n, order), v = 0;
        _cleanup_(export_reservation_done) ExportReservation r = { .n_vcpus = n, .cpus = calloc(n, sizeof(unsigned)) };
        if (!r.cpus)
                return -ENOMEM;
        for (unsigned i = 0; i < used && v < n; i++) {
                unsigned k = node_slots(h, s, &nodes[order[i]], slots);
                if (k == 0)
                        continue;
                cpu_set_add(&r.nodes, order[i]);
                CpuSet hk = nodes[order[i]];
                cpu_set_and(&hk, &s->housekeeping);
                cpu_set_or(&r.emulator, &hk);
                for (unsigned j = 0; j < k && v < n; j++)
                        r.cpus[v++] = slots[j];
        }
        if (cpu_set_is_empty(&r.emulator))
                r.emulator = s->housekeeping;
        r.cache_ways = reserve_cache(h, s, &r);
        r.hugepage_kib = reserve_hugepages(&s->huge, &r.nodes);
        *ret = r;
        r = (ExportReservation) {};
        return 0;
}
