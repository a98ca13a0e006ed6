/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the libvirt domain XML that export libvirt --domain merges into
 * (lib/interop/export-domain.c export_domain_parse, export_domain_merge). What must hold for a document it
 * takes: the spans it would replace lie inside the text, sorted and apart, the insertion point is
 * not inside one of them, and the merged document (with a <cputune/> in place of the elements
 * replaced) is taken again, with the same vCPUs and I/O threads and that one <cputune/> to
 * replace. A document it refuses comes with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ExportDomain d = {}, again = {};
        char *error = NULL, *block = NULL, *merged = NULL;

        if (export_domain_parse((const char *) data, size, &d, &error) < 0) {
                if (!error)
                        abort();
                free(error);
                return 0;
        }
        if (error || d.insert_at > size || !d.indent)
                abort();
        for (size_t i = 0; i < d.n_remove; i++) {
                if (d.remove[i].start > d.remove[i].end || d.remove[i].end > size)
                        abort();
                if (i > 0 && d.remove[i].start < d.remove[i - 1].end)
                        abort();
                if (d.insert_at > d.remove[i].start && d.insert_at < d.remove[i].end)
                        abort();
        }
        if (asprintf(&block, "%s<cputune/>\n", d.indent) < 0)
                abort();
        merged = export_domain_merge(&d, block);
        if (!merged)
                abort();
        if (export_domain_parse(merged, strlen(merged), &again, &error) < 0)
                abort();
        if (again.vcpus != d.vcpus || again.n_iothreads != d.n_iothreads || again.n_remove != 1)
                abort();
        for (size_t i = 0; i < d.n_iothreads; i++)
                if (again.iothreads[i] != d.iothreads[i])
                        abort();
        export_domain_done(&again);
        export_domain_done(&d);
        free(merged);
        free(block);
        return 0;
}
