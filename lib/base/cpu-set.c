/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu-set.h"
#include "macro.h"

void cpu_set_add_range(CpuSet *s, unsigned first, unsigned last) {
        if (last >= CPU_SET_MAX)
                last = CPU_SET_MAX - 1;
        for (unsigned c = first; c <= last;) {
                if (c % 64 == 0 && c + 63 <= last) {
                        s->bits[c / 64] = UINT64_MAX;
                        c += 64;
                } else
                        cpu_set_add(s, c++);
        }
}

unsigned cpu_set_count(const CpuSet *s) {
        unsigned n = 0;
        for (unsigned i = 0; i < CPU_SET_WORDS; i++)
                n += (unsigned) __builtin_popcountll(s->bits[i]);
        return n;
}

bool cpu_set_is_empty(const CpuSet *s) {
        for (unsigned i = 0; i < CPU_SET_WORDS; i++)
                if (s->bits[i])
                        return false;
        return true;
}

bool cpu_set_equal(const CpuSet *a, const CpuSet *b) {
        return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

bool cpu_set_is_subset(const CpuSet *sub, const CpuSet *super) {
        for (unsigned i = 0; i < CPU_SET_WORDS; i++)
                if (sub->bits[i] & ~super->bits[i])
                        return false;
        return true;
}

bool cpu_set_intersects(const CpuSet *a, const CpuSet *b) {
        for (unsigned i = 0; i < CPU_SET_WORDS; i++)
                if (a->bits[i] & b->bits[i])
                        return true;
        return false;
}

void cpu_set_or(CpuSet *dst, const CpuSet *src) {
        for (unsigned i = 0; i < CPU_SET_WORDS; i++)
                dst->bits[i] |= src->bits[i];
}

void cpu_set_and(CpuSet *dst, const CpuSet *src) {
        for (unsigned i = 0; i < CPU_SET_WORDS; i++)
                dst->bits[i] &= src->bits[i];
}

void cpu_set_andnot(CpuSet *dst, const CpuSet *src) {
        for (unsigned i = 0; i < CPU_SET_WORDS; i++)
                dst->bits[i] &= ~src->bits[i];
}

int cpu_set_next(const CpuSet *s, unsigned from) {
        if (from >= CPU_SET_MAX)
                return -1;
        unsigned w = from / 64;
        uint64_t word = s->bits[w] & (UINT64_MAX << (from % 64));
        for (;;) {
                if (word)
                        return (int) (w * 64 + (unsigned) __builtin_ctzll(word));
                if (++w >= CPU_SET_WORDS)
                        return -1;
                word = s->bits[w];
        }
}

int cpu_set_last(const CpuSet *s) {
        for (unsigned w = CPU_SET_WORDS; w-- > 0;)
                if (s->bits[w])
                        return (int) (w * 64 + 63 - (unsigned) __builtin_clzll(s->bits[w]));
        return -1;
}

static int fail(CpuSetError *e, const char *start, const char *p, const char *reason, int r) {
        if (e) {
                e->pos = (size_t) (p - start);
                e->reason = reason;
        }
        return r;
}

static int parse_uint(const char *start, const char **p, unsigned *ret, CpuSetError *e) {
        const char *q = *p;
        unsigned long v = 0;

        if (!isdigit((unsigned char) *q))
                return fail(e, start, q, *q ? "expected a CPU number" : "CPU number missing at end", -EINVAL);
        while (isdigit((unsigned char) *q)) {
                v = v * 10 + (unsigned long) (*q - '0');
                if (v >= CPU_SET_MAX)
                        return fail(e, start, *p, "CPU number too large (the limit is 8191)", -ERANGE);
                q++;
        }
        *ret = (unsigned) v;
        *p = q;
        return 0;
}

int cpu_set_parse_list(const char *s, CpuSet *ret, CpuSetError *ret_error) {
        const char *p = s;
        CpuSet set = {};
        int r;

        while (isspace((unsigned char) *p))
                p++;
        while (*p && !isspace((unsigned char) *p)) {
                unsigned a, b, used = 0, group = 0;

                r = parse_uint(s, &p, &a, ret_error);
                if (r < 0)
                        return r;
                b = a;
                if (*p == '-') {
                        p++;
                        r = parse_uint(s, &p, &b, ret_error);
                        if (r < 0)
                                return r;
                        if (b < a)
                                return fail(ret_error, s, p - 1, "range end is below its start", -EINVAL);
                        if (*p == ':') {
                                p++;
                                r = parse_uint(s, &p, &used, ret_error);
                                if (r < 0)
                                        return r;
                                if (*p != '/')
                                        return fail(ret_error, s, p, "expected '/' in a stride (a-b:used/group)",
                                                    -EINVAL);
                                p++;
                                r = parse_uint(s, &p, &group, ret_error);
                                if (r < 0)
                                        return r;
                                if (used == 0 || group == 0 || used > group)
                                        return fail(ret_error, s, p - 1, "stride needs 0 < used <= group", -EINVAL);
                        }
                }
                if (group == 0)
                        cpu_set_add_range(&set, a, b);
                else
                        for (unsigned c = a; c <= b; c++)
                                if ((c - a) % group < used)
                                        cpu_set_add(&set, c);

                if (*p == ',') {
                        p++;
                        if (!*p || isspace((unsigned char) *p))
                                return fail(ret_error, s, p, "CPU number missing after ','", -EINVAL);
                } else if (*p && !isspace((unsigned char) *p))
                        return fail(ret_error, s, p, "expected ',' or '-'", -EINVAL);
        }
        while (isspace((unsigned char) *p))
                p++;
        if (*p)
                return fail(ret_error, s, p, "unexpected text after the list", -EINVAL);

        *ret = set;
        return 0;
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int cpu_set_parse_mask(const char *s, CpuSet *ret, CpuSetError *ret_error) {
        const char *p = s, *begin, *end;
        CpuSet set = {};
        unsigned bit = 0;

        while (isspace((unsigned char) *p))
                p++;
        if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
                p += 2;
        begin = p;
        end = p + strlen(p);
        while (end > begin && isspace((unsigned char) end[-1]))
                end--;
        if (end == begin)
                return fail(ret_error, s, p, "empty mask", -EINVAL);

        /* Walk backwards: the last hex digit is CPUs 0-3. Words are separated by commas; a word
         * has at most 8 digits. */
        unsigned digits_in_word = 0;
        for (const char *q = end; q > begin;) {
                q--;
                if (*q == ',') {
                        if (digits_in_word == 0)
                                return fail(ret_error, s, q, "empty word in mask", -EINVAL);
                        /* A short word is padded: the next word starts at the next 32-bit boundary. */
                        bit = (bit + 31) / 32 * 32;
                        digits_in_word = 0;
                        continue;
                }
                int v = hexval(*q);
                if (v < 0)
                        return fail(ret_error, s, q, "expected a hex digit or ','", -EINVAL);
                if (++digits_in_word > 8)
                        return fail(ret_error, s, q, "mask word longer than 8 hex digits", -EINVAL);
                for (unsigned i = 0; i < 4; i++, bit++)
                        if (v & (1 << i)) {
                                if (bit >= CPU_SET_MAX)
                                        return fail(ret_error, s, q, "mask names CPUs above 8191", -ERANGE);
                                cpu_set_add(&set, bit);
                        }
        }
        if (digits_in_word == 0)
                return fail(ret_error, s, begin, "empty word in mask", -EINVAL);

        *ret = set;
        return 0;
}

char *cpu_set_format_list(const CpuSet *s) {
        size_t cap = 64, len = 0;
        char *buf = malloc(cap);
        if (!buf)
                return NULL;
        buf[0] = 0;

        for (int a = cpu_set_next(s, 0); a >= 0;) {
                int b = a;
                while ((unsigned) b + 1 < CPU_SET_MAX && cpu_set_has(s, (unsigned) b + 1))
                        b++;
                if (cap - len < 24) {
                        cap *= 2;
                        char *n = realloc(buf, cap);
                        if (!n) {
                                free(buf);
                                return NULL;
                        }
                        buf = n;
                }
                len += (size_t) (a == b ? snprintf(buf + len, cap - len, "%s%d", len ? "," : "", a)
                                        : snprintf(buf + len, cap - len, "%s%d-%d", len ? "," : "", a, b));
                a = cpu_set_next(s, (unsigned) b + 1);
        }
        return buf;
}

char *cpu_set_format_mask(const CpuSet *s, unsigned nbits) {
        int last = cpu_set_last(s);
        if (last >= 0 && (unsigned) last + 1 > nbits)
                nbits = (unsigned) last + 1;
        if (nbits == 0)
                nbits = 1;
        unsigned words = (nbits + 31) / 32;
        char *buf = malloc(words * 9 + 1), *p = buf;
        if (!buf)
                return NULL;
        for (unsigned w = words; w-- > 0;) {
                uint32_t v = (uint32_t) (s->bits[w / 2] >> (32 * (w % 2)));
                if (w + 1 == words) /* the kernel prints the top word with only the digits nbits needs */
                        p += sprintf(p, "%0*x", (int) (((nbits - 1) % 32) / 4 + 1), v);
                else
                        p += sprintf(p, ",%08x", v);
        }
        return buf;
}
