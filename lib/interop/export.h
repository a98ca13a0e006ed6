/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The host's split handed to what runs on it: libvirt's <cputune>, <numatune> and <memoryBacking>
 * for a realtime guest, nova.conf's cpu_dedicated_set and cpu_shared_set, kubelet's
 * reservedSystemCPUs. Everything comes from a profile's plan for the host (its isolated and
 * housekeeping CPUs, its resctrl groups) and the host's topology; nothing is recomputed here. */

#include <errno.h>
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

/* One cache of a resctrl group of the plan: libvirt's <cache id= level='3' type= size=>. */
typedef struct ExportCache {
        unsigned id;      /* L3 cache id (resctrl domain) */
        const char *type; /* "both" (L3), "code" (L3CODE), "data" (L3DATA) */
        uint64_t kib;     /* the ways of the group's mask, in KiB */
} ExportCache;

/* A resctrl group of the plan, with the CPUs it is planned for. */
typedef struct ExportCatGroup {
        char *name;
        CpuSet cpus;
        ExportCache *caches;
        size_t n_caches;
} ExportCatGroup;

typedef struct ExportSplit {
        CpuSet isolated, housekeeping;
        ExportSiblings siblings;
        ExportCatGroup *groups; /* the plan's resctrl groups with an L3 mask; none without resctrl */
        size_t n_groups;
        uint64_t hugepage_kib; /* the largest huge page size the host has pages of; 0: none */
        char **notes;          /* why a resctrl group of the plan makes no <cachetune> (or less of one) */
} ExportSplit;

void export_split_done(ExportSplit *s);

/* The split of a plan: its CPU classes, cpus.vcpu_siblings of the resolved profile (doc), its
 * resctrl groups (the schemata and cpus knobs, with the L3 size from the host's sysfs), and the
 * huge pages the host has reserved (sys/kernel/mm/hugepages). */
int export_split_from_plan(Root *root, const Host *h, const Plan *plan, const json_t *doc, ExportSplit *ret);

/* Where the vCPUs go. */
typedef struct ExportPins {
        unsigned n_vcpus;
        unsigned *cpus;            /* host CPU of vCPU i */
        CpuSet nodes;              /* the NUMA node ids the vCPUs use (node 0 on a host without NUMA) */
        CpuSet emulator;           /* housekeeping CPUs for the emulator and I/O threads: those of the
                           * vCPUs' nodes, all housekeeping CPUs when those nodes have none */
        const ExportCatGroup *cat; /* the resctrl group whose CPUs hold every vCPU, or NULL */
} ExportPins;

void export_pins_done(ExportPins *p);

/* Pins n vCPUs, one per isolated CPU (siblings as s->siblings says), on a single NUMA node when
 * one has room (the lowest-numbered such node), else across the nodes with the most room first,
 * each node filled before the next. -ENOSPC when n does not fit, with *ret_capacity set to how
 * many vCPUs would (it is set on success too). */
int export_pin(const Host *h, const ExportSplit *s, unsigned n, ExportPins *ret, unsigned *ret_capacity);

/* How the libvirt elements are written. */
typedef struct ExportXmlOptions {
        const char *indent;        /* of the elements themselves (domain's children), e.g. "  "; one
                                     * more level is one more tab where it is tabs, else 2 spaces */
        bool with_vcpu;            /* also <vcpu placement='static'>N</vcpu> */
        bool with_iothread;        /* also <iothreads>1</iothreads>, pinned (a fragment) */
        const unsigned *iothreads; /* the domain's iothread ids, each pinned with <iothreadpin> */
        size_t n_iothreads;
        char * const *memory_keep; /* children of an existing <memoryBacking> to carry over, as
                                     * written (<source>, <access>, <allocation>, <discard>) */
} ExportXmlOptions;

/* <cputune>, <numatune> (on a NUMA host) and <memoryBacking>, one element a line. */
char *export_libvirt_xml(const Host *h, const ExportSplit *s, const ExportPins *p, const ExportXmlOptions *o);

/* A libvirt domain XML document as found: its direct children located, for a merge that keeps
 * every other byte. */
typedef struct ExportDomain {
        const char *text; /* not owned */
        size_t size;
        unsigned vcpus; /* <vcpu>; 0: none */
        unsigned *iothreads;
        size_t n_iothreads;
        char **memory_keep; /* see ExportXmlOptions */
        char *indent;       /* of the domain's children */
        size_t insert_at;   /* where the new elements go */
        struct {
                size_t start, end;
        } remove[16]; /* <cputune>, <numatune>, <memoryBacking>, with their lines, sorted */
        size_t n_remove;
} ExportDomain;

void export_domain_done(ExportDomain *d);

/* Reads a domain XML document (root element <domain>). -EINVAL with *ret_error ("line 12:
 * <cputune> closed by </domain>") when it is no well-formed domain document. */
int export_domain_parse(const char *text, size_t size, ExportDomain *ret, char **ret_error);

/* The document with its <cputune>, <numatune> and <memoryBacking> replaced by xml (what
 * export_libvirt_xml() made with the domain's indent), every other byte as it was. */
char *export_domain_merge(const ExportDomain *d, const char *xml);

/* nova.conf's [compute] cpu_dedicated_set and cpu_shared_set and kubelet's reservedSystemCPUs. */
char *export_nova(const ExportSplit *s, const char *profile);
