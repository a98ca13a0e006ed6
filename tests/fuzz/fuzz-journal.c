/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the journal (state.json): parse the bytes as a journal, and for one that
 * parses check load → save → load: its document parses again, and formats to the same bytes (so
 * nothing a journal keeps is lost or changed by a save). A refused journal says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 65536)
                return 0;
        _cleanup_(journal_freep) Journal *j = NULL, *again = NULL;
        _cleanup_(error_done) Error e = {};
        int k = journal_parse((const char *) data, size, "state.json", &j, &e);
        if (k == -EBADMSG && (!e.message || e.code != -EBADMSG || !e.file))
                abort();
        error_done(&e);
        if (k < 0)
                return 0;

        _cleanup_free_ char *text = NULL, *text2 = NULL;
        size_t n, n2;
        if (journal_format(j, &text, &n) < 0)
                abort();
        if (journal_parse(text, n, "state.json", &again, &e) < 0)
                abort();
        if (journal_format(again, &text2, &n2) < 0 || n != n2 || memcmp(text, text2, n) != 0)
                abort();
        if (again->n_originals != journal_count_originals(j) || again->n_applied != j->n_applied ||
            again->n_unmovable != j->n_unmovable || again->transaction_open != j->transaction_open ||
            again->has_last_error != j->has_last_error)
                abort();
        for (size_t i = 0; i < j->n_originals; i++)
                if (!j->originals[i].removed && !journal_find_original(again, j->originals[i].id))
                        abort();
        return 0;
}
