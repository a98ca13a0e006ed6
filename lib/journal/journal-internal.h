/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the journal's files share: the model's appenders that take entries as they are (journal.c),
 * for the parser; and the numbers of "also" (journal-also.c), for the parser and the writer. */

#include "journal.h"

/* Append e (its strings already j's) to the originals, the applied list, the transaction's steps;
 * id (j's) to the transaction's new originals; path's original to o. */
int journal_originals_append(Journal *j, const JournalKnob *e);
int journal_applied_append(Journal *j, const JournalKnob *e);
int journal_steps_append(Journal *j, const JournalStep *s);
int journal_new_originals_append(Journal *j, const char *id);
int journal_original_file_append(Journal *j, JournalKnob *o, const char *path, const char *value);

/* journal_parse() of text whose digest is known. */
int journal_parse_digested(const char *text, size_t size, uint64_t digest, const char *name, Journal **ret, Error *e);

/* The id's number: its first run of digits (at *ret_x, *ret_len bytes), if it has no leading zero
 * and at most 9 digits. */
bool journal_entry_number(const char *id, const char **ret_x, size_t *ret_len, unsigned long *ret);
/* s with every run of digits that is x (len bytes) replaced by m; NULL for NULL (and on OOM, with
 * *oom set). */
char *journal_expand_number(const char *s, const char *x, size_t len, unsigned long m, bool *oom);
/* Whether (id, path) is the head's (hid, hpath) with the number *ret_m in place of the head's,
 * above last. */
bool journal_same_but_number(const char *hid, const char *hpath, const char *id, const char *path, unsigned long last,
                             unsigned long *ret_m);
