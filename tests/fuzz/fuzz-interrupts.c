/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the /proc/interrupts parser (host_parse_interrupts). The text is parsed
 * twice, with the per-CPU counts and without (which skips the count columns by their fixed
 * width where it can), for a host whose CPU count is the first byte. What must hold: both parses
 * agree (the same IRQs, chips, hardware IRQs and actions), and the IRQs come sorted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1 || size > 65536)
                return 0;
        _cleanup_free_ char *s = strndup((const char *) data + 1, size - 1);
        _cleanup_(host_freep) Host *a = calloc(1, sizeof(Host)), *b = calloc(1, sizeof(Host));
        if (!s || !a || !b)
                return 0;
        a->n_cpu_ids = b->n_cpu_ids = data[0] % 64;

        int ka = host_parse_interrupts(a, s, /* want_counts= */ false);
        int kb = host_parse_interrupts(b, s, /* want_counts= */ true);
        if (ka != kb)
                abort();
        if (ka < 0)
                return 0;
        if (a->n_irqs != b->n_irqs || a->n_irq_columns != b->n_irq_columns || a->n_irq_columns == 0)
                abort();
        for (size_t i = 0; i < a->n_irqs; i++) {
                const Irq *x = &a->irqs[i], *y = &b->irqs[i];
                if (i > 0 && x->number < a->irqs[i - 1].number)
                        abort();
                if (x->number != y->number || strcmp(x->chip, y->chip) != 0 || strcmp(x->hwirq, y->hwirq) != 0 ||
                    strcmp(x->actions, y->actions) != 0)
                        abort();
                if (x->counts || !y->counts)
                        abort();
                if (strchr(x->chip, '\n') || strchr(x->hwirq, '\n') || strchr(x->actions, '\n'))
                        abort();
        }
        return 0;
}
