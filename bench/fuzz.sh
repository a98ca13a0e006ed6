#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs every libFuzzer target (tests/fuzz/fuzz-*.c) for RUNS executions each, one at a time under
# nice, and prints a table: target, executions, executions per second, findings, corpus files.
#
#     bench/fuzz.sh [RUNS [TARGET…]]        RUNS defaults to 10000000, TARGET to all of them
#
# Builds build-fuzz with clang (-Dfuzzer=true: ASan + UBSan, UBSan findings fatal). Each target
# starts from tests/fuzz/corpus/TARGET, copied: new inputs go to OUT/corpus/TARGET and findings
# (crash-*, timeout-*, oom-*) to OUT/TARGET-*, where OUT is $FUZZ_OUT or a new directory under
# /tmp; the tree's corpora are not touched (minimise new ones into them with -merge=1). A target
# also stops after $FUZZ_MAX_TIME seconds (default 3600). The exit status is 1 if anything was
# found.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${1:-10000000}
[ $# -gt 0 ] && shift
BUILD=$SRC/build-fuzz
OUT=${FUZZ_OUT:-$(mktemp -d /tmp/rtpart-fuzz.XXXXXX)}
MAX_TIME=${FUZZ_MAX_TIME:-3600}

if [ ! -f "$BUILD/build.ninja" ]; then
        CC=clang meson setup "$BUILD" "$SRC" -Dfuzzer=true >/dev/null
fi
ninja -C "$BUILD" >/dev/null

if [ $# -gt 0 ]; then
        TARGETS=$*
else
        TARGETS=$(cd "$SRC/tests/fuzz" && ls fuzz-*.c | sed -e 's/^fuzz-//' -e 's/\.c$//' | grep -v '^main$')
fi

export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
found=0
mkdir -p "$OUT/corpus"
printf '%-12s %12s %10s %9s %7s\n' target execs exec/s findings corpus > "$OUT/table"
for t in $TARGETS; do
        work=$OUT/corpus/$t
        mkdir -p "$work"
        cp -n "$SRC/tests/fuzz/corpus/$t"/* "$work"/ 2>/dev/null || true
        dict=
        [ -f "$SRC/tests/fuzz/$t.dict" ] && dict=-dict=$SRC/tests/fuzz/$t.dict
        nice -n 10 "$BUILD/tests/fuzz/fuzz-$t" -runs="$RUNS" -max_total_time="$MAX_TIME" -max_len=4096 \
                -print_final_stats=1 -artifact_prefix="$OUT/$t-" $dict "$work" > "$OUT/$t.log" 2>&1 || true
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$t.log" | tail -1)
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$OUT/$t.log" | tail -1)
        n=$(find "$OUT" -maxdepth 1 -name "$t-*" \( -name "*crash-*" -o -name "*timeout-*" -o -name "*oom-*" -o -name "*leak-*" \) | wc -l)
        [ "$n" -gt 0 ] && found=1
        printf '%-12s %12s %10s %9s %7s\n' "$t" "${execs:-?}" "${rate:-?}" "$n" "$(ls "$work" | wc -l)" >> "$OUT/table"
        tail -1 "$OUT/table"
done
echo "logs, findings and corpora in $OUT"
cat "$OUT/table"
exit $found
