/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* "also": consecutive entries alike but for a number, one entry in the document. What the parser
 * expands and the writer folds. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal-internal.h"
#include "strv.h"

/* ---- "also": consecutive entries alike but for a number, written as one ----
 *
 * An entry's number is the first run of digits in its knob id ("41" in irq/41/affinity), written
 * without leading zeros. A run of entries that agree in everything but their id and path, where
 * each one's id and path are the first one's with every run of digits equal to its number replaced
 * by another number, ascending, is written as the first entry with "also": the other numbers as a
 * list of ranges ("42-97,120"). 8192 IRQs placed alike take one entry, not 8192. */

#define NUMBER_MAX_DIGITS 9

/* The id's number: its first run of digits, if it has no leading zero and at most 9 digits. */
bool journal_entry_number(const char *id, const char **ret_x, size_t *ret_len, unsigned long *ret) {
        const char *x = id ? strpbrk(id, "0123456789") : NULL;
        if (!x)
                return false;
        size_t n = strspn(x, "0123456789");
        if (n > NUMBER_MAX_DIGITS || (n > 1 && x[0] == '0'))
                return false;
        *ret_x = x;
        *ret_len = n;
        *ret = strtoul(x, NULL, 10);
        return true;
}

/* s with every run of digits that is x (len bytes) replaced by m; NULL for NULL (and on OOM, with
 * *oom set). Called for every knob an "also" stands for (8192 per IRQ entry): copies, no printf. */
char *journal_expand_number(const char *s, const char *x, size_t len, unsigned long m, bool *oom) {
        if (!s)
                return NULL;
        char num[24], *e = num + sizeof(num);
        do
                *--e = (char) ('0' + m % 10);
        while ((m /= 10) > 0);
        size_t nlen = (size_t) (num + sizeof(num) - e), slen = strlen(s);
        /* Each run of len digits may grow to nlen: at most slen / len of them. */
        char *out = malloc(slen + (nlen > len ? slen / len * (nlen - len) : 0) + 1), *o = out;
        if (!out) {
                *oom = true;
                return NULL;
        }
        for (const char *c = s; *c;) {
                size_t d = strspn(c, "0123456789");
                if (d == 0) {
                        size_t n = strcspn(c, "0123456789");
                        memcpy(o, c, n);
                        o += n;
                        c += n;
                        continue;
                }
                if (d == len && memcmp(c, x, len) == 0) {
                        memcpy(o, e, nlen);
                        o += nlen;
                } else {
                        memcpy(o, c, d);
                        o += d;
                }
                c += d;
        }
        *o = 0;
        return out;
}

/* Whether t is journal_expand_number(s, x, len, m), where num (nlen bytes) is m in decimal: compared as it
 * would be built, nothing allocated (the writer asks it of every pair of neighbouring entries). */
static bool is_expansion(const char *s, const char *x, size_t len, const char *num, size_t nlen, const char *t) {
        for (const char *c = s; *c;) {
                size_t d = strspn(c, "0123456789");
                if (d == 0)
                        d = strcspn(c, "0123456789");
                else if (d == len && memcmp(c, x, len) == 0) {
                        if (strncmp(t, num, nlen) != 0)
                                return false;
                        t += nlen;
                        c += d;
                        continue;
                }
                if (strncmp(t, c, d) != 0)
                        return false;
                t += d;
                c += d;
        }
        return *t == '\0';
}

/* Whether (id, path) is the head's with the number m in place of the head's, m > *last. */
bool journal_same_but_number(const char *hid, const char *hpath, const char *id, const char *path, unsigned long last,
                             unsigned long *ret_m) {
        const char *hx, *x;
        size_t hlen, len;
        unsigned long h, m;
        if (!journal_entry_number(hid, &hx, &hlen, &h) || !journal_entry_number(id, &x, &len, &m) || m <= last ||
            (hx - hid) != (x - id) || (!hpath) != (!path))
                return false;
        /* m's digits are id's own (journal_entry_number() takes them without leading zeros). */
        if (!is_expansion(hid, hx, hlen, x, len, id) || (hpath && !is_expansion(hpath, hx, hlen, x, len, path)))
                return false;
        *ret_m = m;
        return true;
}
