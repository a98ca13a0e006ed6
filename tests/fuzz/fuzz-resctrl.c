/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for resctrl's text formats (lib/kernel/resctrl.h). The first byte picks the resource
 * looked up and a cache mask width; the rest is a schemata file. What must hold: a value found has
 * no whitespace and its domains parse; the value rtpart writes for those domains (as a cache mask
 * and as a bandwidth) is found again in a schemata line and names the same domains; a capacity
 * mask that parses prints back to the same mask. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resctrl.h"
#include "strv.h"

static void check_format(const char *resource, const unsigned *d, size_t n, uint64_t value, unsigned bits) {
        _cleanup_free_ char *v = resctrl_schemata_format(d, n, value, bits), *text = NULL, *back = NULL;
        _cleanup_free_ unsigned *d2 = NULL;
        size_t n2;
        if (!v || asprintf(&text, "    %s:%s\n", resource, v) < 0)
                abort();
        if (resctrl_schemata_parse(text, resource, &back) < 0 || strcmp(back, v) != 0)
                abort();
        if (resctrl_schemata_domains(back, &d2, &n2) < 0 || n2 != n || memcmp(d, d2, n * sizeof(unsigned)) != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char * const resources[] = { "L3", "L3CODE", "L3DATA", "MB", "L2", "SMBA" };
        if (size < 1 || size > 16384)
                return 0;
        _cleanup_free_ char *s = strndup((const char *) data + 1, size - 1);
        if (!s)
                return 0;
        const char *resource = resources[data[0] % ELEMENTSOF(resources)];
        unsigned bits = 1 + (data[0] >> 3) % 32;

        uint64_t mask;
        if (resctrl_mask_parse(s, &mask) >= 0) {
                char buf[32];
                uint64_t again;
                snprintf(buf, sizeof(buf), "%" PRIx64, mask);
                if (resctrl_mask_parse(buf, &again) < 0 || again != mask)
                        abort();
        }

        _cleanup_free_ char *v = NULL;
        _cleanup_free_ unsigned *d = NULL;
        size_t n;
        if (resctrl_schemata_parse(s, resource, &v) < 0)
                return 0;
        for (const char *c = v; *c; c++)
                if (*c == ' ' || *c == '\t' || *c == '\n')
                        abort();
        if (resctrl_schemata_domains(v, &d, &n) < 0 || n == 0)
                abort();
        check_format(resource, d, n, UINT64_C(0x7f0), bits);
        check_format(resource, d, n, 100, 0);
        return 0;
}
