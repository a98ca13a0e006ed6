/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The PM QoS CPU latency request behind the knob cpu/pm_qos (profile key cpu.pm_qos_latency_us).
 *
 * The kernel keeps such a request only while a process holds /dev/cpu_dma_latency open: close()
 * (or exit) drops it. rtpartctl exits right after apply, so it cannot hold one; rtpartd can. The
 * request therefore lives in a process-wide holder that is off by default:
 *
 *   - off (rtpartctl): the cpu backend's write of cpu/pm_qos returns KNOB_SKIPPED, so the engine
 *     neither owns nor journals the knob and says so in a note;
 *   - on (rtpartd calls cpu_pm_qos_set_holder(true) once at startup, before it applies anything):
 *     the write verb holds the request in this process through cpu_pm_qos_hold() and drops it
 *     through cpu_pm_qos_release().
 *
 * What the write verb does with a value (the engine writes "desired" on apply and the recorded
 * value on rollback and revert):
 *
 *   NULL, or ≥ 2000000000 (the kernel's "no constraint", PM_QOS_CPU_LATENCY_DEFAULT_VALUE)
 *                        release: rtpart no longer asks for anything
 *   anything else        hold a request at that value; when none is held yet and the kernel's
 *                        target already is that value (another holder asks for it), hold nothing
 *
 * A held request is updated in place (one write of the new s32), never dropped and re-added, so a
 * change from 3 to 5 µs leaves no instant without a constraint. Reverting to a value another
 * holder asks for (tuned's 10 µs) keeps a request of ours at that same value until the daemon
 * releases it or exits: harmless, as the target is the minimum over all requests.
 *
 * The request dies with rtpartd: when the daemon starts again, verify shows cpu/pm_qos as drift
 * (the kernel's target is back at its default) and applying the active profile holds it again.
 * Revert must go through the daemon that holds it; a revert by `rtpartctl --no-daemon` skips the
 * knob (the holder is off there) and the request lasts until rtpartd releases it or exits.
 *
 * The request is opened through the root's ops (root_pm_qos_open(), ROOT_CAN_HOLD_PM_QOS); a
 * root that cannot hold one (a tree) skips the knob. Where dev/cpu_dma_latency is a regular file
 * rather than the kernel's device (the simulator's trees), the cpu backend's read of cpu/pm_qos in
 * this process returns the smaller of the file and the held value, as the kernel's aggregate
 * would.
 *
 * Not thread-safe: call from the thread that runs the engine. */

#include <stdbool.h>
#include <stdint.h>

#include "root.h"

/* The kernel's default for the CPU latency target: no constraint. */
#define CPU_PM_QOS_DEFAULT_US INT32_C(2000000000)

/* Turns the holder on or off for this process. Turning it off releases a held request. */
void cpu_pm_qos_set_holder(bool enabled);
bool cpu_pm_qos_holder_enabled(void);

/* Holds (or updates) this process's request at us µs on root's dev/cpu_dma_latency. Works whether
 * or not the holder is enabled (the holder only decides what the write verb does). Returns 0,
 * -ENOENT if the root has no dev/cpu_dma_latency, -EOPNOTSUPP if it cannot hold a request, or the
 * errno of open()/write(). */
int cpu_pm_qos_hold(Root *root, int32_t us);
/* Drops the request, if one is held. */
void cpu_pm_qos_release(void);
/* The value held now: true and *ret_us, or false if none. ret_us may be NULL. */
bool cpu_pm_qos_held(int32_t *ret_us);
/* The kernel's CPU latency target now, in µs as text (*ret NULL where the root has no
 * dev/cpu_dma_latency), with this process's request counted as the kernel counts it. */
int cpu_pm_qos_read(Root *root, char **ret);
