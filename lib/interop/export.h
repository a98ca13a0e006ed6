/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The host's split handed to what runs on it: a realtime guest's libvirt domain (its pins, cache,
 * memory and the settings libvirt's kvm-realtime guide asks for), nova.conf's CPU sets and
 * reserved huge pages with a realtime flavor's extra specs, kubelet's reservedSystemCPUs.
 * Everything comes from a profile's plan for the host (its isolated and housekeeping CPUs, the
 * L3 ways its resctrl groups leave to guests, its huge pages) and the host's topology; nothing is
 * recomputed here.
 *
 * A guest's share of the host is an ExportReservation: export_reserve() makes one from the split
 * (the isolated CPUs, as today), a ledger of VMs makes its own, and export_libvirt_elements()
 * writes the guest's elements from either. */

#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "cpu-set.h"
#include "host.h"
#include "root.h"

/* Whether two vCPUs may share a core (cpus.vcpu_siblings in the profile). */
typedef enum ExportSiblings {
        EXPORT_SIBLINGS_APART,    /* one vCPU per core; its SMT siblings stay idle (the default) */
        EXPORT_SIBLINGS_TOGETHER, /* a core's isolated siblings take consecutive vCPUs */
        _EXPORT_SIBLINGS_MAX,
        _EXPORT_SIBLINGS_INVALID = -EINVAL,
} ExportSiblings;

const char *export_siblings_to_string(ExportSiblings s);
ExportSiblings export_siblings_from_string(const char *s);

/* The L3 ways of one cache that libvirt finds free for a guest's <cachetune>: those neither the
 * default group nor a resctrl group of the plan holds (the ways cat.guests keeps, and any the
 * groups leave over). */
typedef struct ExportCacheFree {
        unsigned id;       /* L3 cache id (resctrl domain) */
        const char *type;  /* "both" (L3), "code" (L3CODE), "data" (L3DATA) */
        uint64_t ways;     /* the free ways, a mask */
        uint64_t way_kib;  /* one way in KiB (the cache's size over its cbm_mask's width); 0: unknown */
        unsigned min_ways; /* min_cbm_bits */
} ExportCacheFree;

/* A pool of huge pages on a NUMA node. The same facts as HugepagePool of the hugepages backend
 * (hugepages.h), which export_hugepages_read() gives way to once it is in the library. */
typedef struct ExportHugePool {
        unsigned node;    /* NUMA node id (0 on a host without NUMA) */
        uint64_t size_kb; /* page size in KiB */
        uint64_t count;   /* pages of that size the node holds */
} ExportHugePool;

typedef struct ExportHugePages {
        ExportHugePool *pools; /* count > 0 only */
        size_t n_pools;
        uint64_t default_kb; /* the profile's default_size; 0: not set */
        bool from_profile;   /* the profile's hugepages section; else the pools the host holds now */
} ExportHugePages;

void export_huge_pages_done(ExportHugePages *p);

/* The pools the resolved profile's "hugepages" section reserves (pages of a size, a count per
 * node, nodes by number or by the CPUs they hold), else, without such a section, the pools the
 * host holds now (each node's nr_hugepages). -EINVAL with *ret_message for a section that cannot
 * be read (the backend's plan says the same, with the JSON pointer). */
int export_hugepages_read(Root *root, const Host *h, const json_t *doc, const CpuSet *isolated,
                          const CpuSet *housekeeping, ExportHugePages *ret, char **ret_message);

typedef struct ExportSplit {
        CpuSet isolated, housekeeping;
        ExportSiblings siblings;
        bool cat;                /* the plan gives resctrl groups L3 masks (libvirt's groups come after) */
        ExportCacheFree *caches; /* per L3 cache and type; none without masks in the plan */
        size_t n_caches;
        char *holders;     /* who holds the L3 ways, for notes: "default 0x00f, rt 0x700" */
        unsigned guest_mb; /* cat.guests.mb as the plan rounds it: each guest's <memorytune>; 0: none */
        bool mb;           /* the host has MBA */
        ExportHugePages huge;
        bool tsc_deadline; /* the host's CPUs have the TSC deadline timer (tsc_deadline_timer) */
        char **notes;      /* what the split could not tell (an L3 size unknown) */
} ExportSplit;

void export_split_done(ExportSplit *s);

/* The split of a plan: its CPU classes, cpus.vcpu_siblings and cat.guests.mb of the resolved
 * profile (doc), the L3 ways the plan's resctrl groups leave free (their schemata knobs; the
 * default group's from the host where the plan does not shrink it; the L3 sizes from the host's
 * sysfs), the huge pages (export_hugepages_read()) and the host's CPU flags. */
int export_split_from_plan(Root *root, const Host *h, const Plan *plan, const json_t *doc, ExportSplit *ret,
                           char **ret_message);

/* One guest's share of the host: what a ledger of VMs reserves for it, or export_reserve(). */
typedef struct ExportReservation {
        unsigned n_vcpus;
        unsigned *cpus;        /* host CPU of vCPU i */
        CpuSet nodes;          /* the NUMA nodes of those CPUs (node 0 on a host without NUMA) */
        CpuSet emulator;       /* the CPUs of the emulator and I/O threads */
        unsigned cache_ways;   /* L3 ways of the free ones its <cachetune> takes on each cache; 0: none */
        uint64_t hugepage_kib; /* the huge page size backing its memory; 0: normal pages */
} ExportReservation;

void export_reservation_done(ExportReservation *r);

/* The share of a guest of n vCPUs without a ledger: one isolated CPU per vCPU (siblings as
 * s->siblings says), on a single NUMA node when one has room (the lowest-numbered such node), else
 * across the nodes with the most room first, each filled before the next; the emulator on the
 * housekeeping CPUs of those nodes (all housekeeping CPUs when they have none); every free L3 way
 * (the largest contiguous run free on each cache the vCPUs use, the smallest of those); the
 * profile's default huge page size where every node of the guest has pages of it, else the
 * largest such size. -ENOSPC when n does not fit, with *ret_capacity set to how many vCPUs would
 * (it is set on success too). */
int export_reserve(const Host *h, const ExportSplit *s, unsigned n, ExportReservation *ret, unsigned *ret_capacity);

/* The parts of a domain export libvirt writes. */
typedef enum ExportPart {
        EXPORT_PART_VCPU,           /* <vcpu placement='static' cpuset=…>N</vcpu> */
        EXPORT_PART_IOTHREADS,      /* <iothreads>1</iothreads>: a fragment's only */
        EXPORT_PART_CPUTUNE,        /* pins, FIFO, <cachetune>, <memorytune> */
        EXPORT_PART_NUMATUNE,       /* strict on the guest's nodes; NULL without NUMA */
        EXPORT_PART_MEMORY_BACKING, /* huge pages, <locked/>, <nosharepages/> */
        EXPORT_PART_CPU,            /* host-passthrough, tsc-deadline, guest NUMA cells */
        EXPORT_PART_PMU,            /* inside <features> */
        EXPORT_PART_MEMBALLOON,     /* inside <devices> */
        _EXPORT_PART_MAX,
} ExportPart;

typedef struct ExportElements {
        /* Each part's element, its lines ended by "\n" and indented from the element's own level by
         * `step` per level (the element's first line has no indent). NULL: the part is left out (or,
         * in a domain, removed) unless keep[part]. */
        char *part[_EXPORT_PART_MAX];
        bool keep[_EXPORT_PART_MAX]; /* the domain's own element already is what rtpart writes: kept */
        char step[16];               /* one level of indent */
        char **notes;                /* what was replaced, dropped or left out, and why */
} ExportElements;

void export_elements_done(ExportElements *e);

typedef struct ExportDomain ExportDomain;

typedef struct ExportXmlOptions {
        const ExportDomain *domain; /* the domain the elements go into (--domain); NULL: a fragment */
        uint64_t memory_kib;        /* the guest's memory, for its NUMA cells; 0: the domain's <memory> */
} ExportXmlOptions;

/* The guest's elements for reservation r (on split s of host h), as libvirt's kvm-realtime guide
 * asks for them, with what the domain has that they replace kept where it is compatible and
 * named in a note where it is not. */
int export_libvirt_elements(const Host *h, const ExportSplit *s, const ExportReservation *r, const ExportXmlOptions *o,
                            ExportElements *ret);

/* The elements as a fragment for inside <domain>, each at indent (<pmu/> inside a <features>,
 * <memballoon/> inside a <devices>). */
char *export_elements_fragment(const ExportElements *e, const char *indent);

/* A libvirt domain XML document as found: the parts export replaces located, and what it keeps of
 * them, for a merge that keeps every other byte. */
typedef struct ExportSpan {
        size_t start, end; /* [start, end): the element with its line where it has one to itself */
        bool found;
} ExportSpan;

/* <features> or <devices>, which export adds a child to. */
typedef struct ExportParent {
        ExportSpan at;
        bool empty;   /* written as <features/>: replaced whole */
        size_t close; /* where a child goes: the line start of the end tag, or the tag itself */
        char *indent; /* of its children */
} ExportParent;

struct ExportDomain {
        const char *text; /* not owned */
        size_t size;
        char *indent; /* of the domain's children */
        char *step;   /* one level deeper than a child: "\t" where the file indents with tabs, else "  " */

        unsigned vcpus;   /* <vcpu>; 0: none */
        char *vcpu_attrs; /* <vcpu>'s attributes besides placement and cpuset, as written (" current='2'") */
        char *vcpu_cpuset, *vcpu_placement; /* as written; NULL: none */
        uint64_t memory_kib;                /* <memory>; 0: none */
        unsigned *iothreads;
        size_t n_iothreads;

        char **cputune_keep;         /* children of <cputune> export keeps, as written */
        char **cputune_dropped;      /* children it drops, as written (<period>, <quota>) */
        char **cputune_replaced;     /* the children it replaces, as written */
        char *numatune;              /* <numatune> as written */
        char **memory_keep;          /* children of <memoryBacking> kept, as written (<source>, <access>, …) */
        char **memory_replaced;      /* its <hugepages>, <locked/>, <nosharepages/> as written */
        char *cpu_attrs;             /* <cpu>'s attributes besides mode and match, as written */
        char *cpu_mode;              /* NULL: no <cpu>, or one without a mode (custom) */
        char **cpu_keep;             /* children of <cpu> kept, as written (<cache>, <maxphysaddr>, <feature>) */
        char **cpu_dropped;          /* children dropped, as written (<model>, <vendor>) */
        char *cpu_topology;          /* as written */
        unsigned cpu_topology_vcpus; /* sockets × dies × cores × threads; 0: none */
        char *cpu_tsc;               /* its tsc-deadline <feature>, as written */
        char *cpu_numa;              /* its <numa>, as written */
        unsigned cpu_cells;          /* the <cell>s of that <numa> */
        char *pmu, *memballoon;      /* as written */
        bool pmu_off;                /* <pmu state='off'/>: kept as it is */
        bool memballoon_none;        /* <memballoon model='none'/> with nothing in it: kept as it is */

        ExportSpan at[_EXPORT_PART_MAX]; /* where each part is (PMU, MEMBALLOON: inside their parent) */
        ExportParent features, devices;
        size_t insert_at; /* where missing parts go: after <vcpu>, else before </domain> */
};

void export_domain_done(ExportDomain *d);

/* Reads a domain XML document (root element <domain>). -EINVAL with *ret_error ("line 12:
 * <cputune> closed by </domain>") when it is no well-formed domain document. */
int export_domain_parse(const char *text, size_t size, ExportDomain *ret, char **ret_error);

/* The document with each part replaced by e's (inserted where it has none: <pmu/> into its
 * <features>, <memballoon/> into its <devices>, each made where missing), every other byte as
 * it was. */
char *export_domain_merge(const ExportDomain *d, const ExportElements *e);

/* The realtime flavor and what nova.conf needs for it on this host. */
typedef struct ExportNova {
        char *dedicated, *shared; /* [compute] cpu_dedicated_set, cpu_shared_set */
        char **reserved;          /* [DEFAULT] reserved_huge_pages: pools the flavor does not use */
        char **for_instances;     /* the pools it does use ("node:0,size:1GB,count:8"), for the comment */
        char *page_size;          /* hw:mem_page_size: "1GB", "2048", or "large" where none is reserved */
        char **properties;        /* the flavor's extra specs, "hw:cpu_policy=dedicated", … */
        bool from_profile;        /* the pools are the profile's hugepages section's (else the host's) */
} ExportNova;

void export_nova_done(ExportNova *n);
int export_nova_make(const ExportSplit *s, ExportNova *ret);

/* nova.conf's [DEFAULT] reserved_huge_pages and [compute] sets, the flavor's `openstack flavor
 * set` line, and kubelet's reservedSystemCPUs, as text; and the same as one JSON document. */
char *export_nova(const ExportNova *n, const char *profile);
json_t *export_nova_document(const ExportNova *n, const char *profile);
