/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CPU numbers 0 … CPU_SET_MAX-1, as the kernel's NR_CPUS on the largest distribution builds. */
#define CPU_SET_MAX 8192U
#define CPU_SET_WORDS (CPU_SET_MAX / 64U)

typedef struct CpuSet {
        uint64_t bits[CPU_SET_WORDS];
} CpuSet;

/* Where and why a CPU list or mask did not parse: `pos` is the byte offset of the offending
 * character in the input, `reason` a static phrase ("expected a digit", …). */
typedef struct CpuSetError {
        size_t pos;
        const char *reason;
} CpuSetError;

static inline void cpu_set_zero(CpuSet *s) {
        *s = (CpuSet) {};
}
static inline void cpu_set_add(CpuSet *s, unsigned cpu) {
        if (cpu < CPU_SET_MAX)
                s->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}
static inline void cpu_set_del(CpuSet *s, unsigned cpu) {
        if (cpu < CPU_SET_MAX)
                s->bits[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}
static inline bool cpu_set_has(const CpuSet *s, unsigned cpu) {
        return cpu < CPU_SET_MAX && (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

void cpu_set_add_range(CpuSet *s, unsigned first, unsigned last);
unsigned cpu_set_count(const CpuSet *s);
bool cpu_set_is_empty(const CpuSet *s);
bool cpu_set_equal(const CpuSet *a, const CpuSet *b);
bool cpu_set_is_subset(const CpuSet *sub, const CpuSet *super);
bool cpu_set_intersects(const CpuSet *a, const CpuSet *b);
void cpu_set_or(CpuSet *dst, const CpuSet *src);
void cpu_set_and(CpuSet *dst, const CpuSet *src);
void cpu_set_andnot(CpuSet *dst, const CpuSet *src);
/* First CPU >= from in the set, or -1. */
int cpu_set_next(const CpuSet *s, unsigned from);
/* Highest CPU in the set, or -1. */
int cpu_set_last(const CpuSet *s);

#define CPU_SET_FOREACH(cpu, set) \
        for (int cpu = cpu_set_next((set), 0); cpu >= 0; cpu = cpu_set_next((set), (unsigned) cpu + 1))

/* "0-3,8,10-11" (also the kernel's "0-15:2/4" stride form and surrounding whitespace). An empty
 * string is the empty set. Returns 0, -EINVAL (bad syntax) or -ERANGE (CPU ≥ CPU_SET_MAX). */
int cpu_set_parse_list(const char *s, CpuSet *ret, CpuSetError *ret_error);
/* Kernel hex mask: comma-separated 32-bit words, most significant first ("ffffffff,00000000"),
 * optional 0x prefix on the whole mask. */
int cpu_set_parse_mask(const char *s, CpuSet *ret, CpuSetError *ret_error);

/* Canonical list form ("0-3,8"); "" for the empty set. Returns NULL on OOM. */
char *cpu_set_format_list(const CpuSet *s);
/* Kernel mask form with enough 32-bit words for `nbits` CPUs (at least one word). */
char *cpu_set_format_mask(const CpuSet *s, unsigned nbits);
