/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the libvirt domain XML that export libvirt --domain merges into
 * (lib/interop/export-domain.c export_domain_parse, export_domain_merge). What must hold for a
 * document it takes: every span it found lies inside the text, where missing parts go too; the
 * merged document (each part replaced or added: <vcpu>, <cputune>, <numatune>, <memoryBacking>,
 * <cpu>, <pmu/> into <features>, <memballoon/> into <devices>) is taken again, with the same vCPUs
 * and I/O threads, every part found this time; and merged again it is the same document. A
 * document it refuses comes with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "macro.h"

static void check_span(const ExportSpan *s, size_t size) {
        if (s->found && (s->start > s->end || s->end > size))
                abort();
}

static void make_elements(const ExportDomain *d, ExportElements *e) {
        *e = (ExportElements) { .step = "  " };
        if (asprintf(&e->part[EXPORT_PART_VCPU], "<vcpu placement='static'>%u</vcpu>\n", d->vcpus) < 0)
                abort();
        e->part[EXPORT_PART_CPUTUNE] = strdup("<cputune>\n  <vcpupin vcpu='0' cpuset='1'/>\n</cputune>\n");
        e->part[EXPORT_PART_NUMATUNE] = strdup("<numatune>\n  <memory mode='strict' nodeset='0'/>\n</numatune>\n");
        e->part[EXPORT_PART_MEMORY_BACKING] = strdup("<memoryBacking>\n  <locked/>\n</memoryBacking>\n");
        e->part[EXPORT_PART_CPU] = strdup("<cpu mode='host-passthrough'/>\n");
        e->part[EXPORT_PART_PMU] = strdup("<pmu state='off'/>\n");
        e->part[EXPORT_PART_MEMBALLOON] = strdup("<memballoon model='none'/>\n");
        for (size_t i = 0; i < _EXPORT_PART_MAX; i++)
                if (i != EXPORT_PART_IOTHREADS && !e->part[i])
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ExportDomain d = {}, again = {}, third = {};
        ExportElements e = {};
        char *error = NULL, *merged = NULL, *twice = NULL;

        if (export_domain_parse((const char *) data, size, &d, &error) < 0) {
                if (!error)
                        abort();
                free(error);
                return 0;
        }
        if (error || d.insert_at > size || !d.indent || !d.step)
                abort();
        for (size_t i = 0; i < _EXPORT_PART_MAX; i++)
                check_span(&d.at[i], size);
        check_span(&d.features.at, size);
        check_span(&d.devices.at, size);
        if ((d.features.at.found && d.features.close > size) || (d.devices.at.found && d.devices.close > size))
                abort();

        make_elements(&d, &e);
        merged = export_domain_merge(&d, &e);
        if (!merged)
                abort();
        if (export_domain_parse(merged, strlen(merged), &again, &error) < 0)
                abort();
        if (again.vcpus != d.vcpus || again.n_iothreads != d.n_iothreads)
                abort();
        for (size_t i = 0; i < d.n_iothreads; i++)
                if (again.iothreads[i] != d.iothreads[i])
                        abort();
        for (size_t i = 0; i < _EXPORT_PART_MAX; i++)
                if (i != EXPORT_PART_IOTHREADS && !again.at[i].found)
                        abort();
        twice = export_domain_merge(&again, &e);
        if (!twice || strcmp(twice, merged) != 0)
                abort();
        if (export_domain_parse(twice, strlen(twice), &third, &error) < 0)
                abort();

        export_elements_done(&e);
        export_domain_done(&third);
        export_domain_done(&again);
        export_domain_done(&d);
        free(twice);
        free(merged);
        return 0;
}
