#!/bin/sh
# A larger run of the load test (tests/sysroot/load.py; its CI run is 1000 clients x 2
# cycles): CLIENTS clients (default 4000) over USERS uids (default 40), CYCLES cycles each
# (default 5), varlink and D-Bus; and six loops of Plan realtime-virtual-host by one non-root user
# on PLAN_HOST (default big: the 1024-CPU host, made for the run) with root's Describe and drift
# detection sampled for PLAN_SECONDS (default 60) idle and then beside them (the goal: within 2x
# of idle). Prints the test's "load (varlink)", "load (D-Bus)" and "load (unprivileged Plans)"
# figures. Needs root and a build (BUILD, default build).
set -eu
cd "$(dirname "$0")/.."
build=${BUILD:-build}
export RTPART_SOURCE_DIR="$PWD" RTPART_BUILD_DIR="$PWD/$build"
export RTPARTD="$PWD/$build/tests/sim/rtpartd" RTPARTCTL="$PWD/$build/tests/sim/rtpartctl"
export RTPART_LOAD_CLIENTS="${CLIENTS:-4000}" RTPART_LOAD_USERS="${USERS:-40}" RTPART_LOAD_CYCLES="${CYCLES:-5}"
export RTPART_LOAD_DEADLINE="${DEADLINE:-1800}"
export RTPART_LOAD_PLAN_HOST="${PLAN_HOST:-big}" RTPART_LOAD_PLAN_SECONDS="${PLAN_SECONDS:-60}"
nice -n 10 python3 tests/sysroot/load.py 2>&1 | grep -E '^load|^(OK|FAILED)|Error'
