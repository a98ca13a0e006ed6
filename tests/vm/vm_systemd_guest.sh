#!/bin/bash
# The guest side of tests/vm/vm_systemd.py: runs as rtpart-vm-test.service (Type=simple) in a
# Debian 12 guest with systemd as PID 1 and rtpart's .deb in /var/lib/rtpart-vm-test, and reports every result
# on the serial console as "@@R key=value" lines (command output as "@@O name| line", rtpartd's
# journal as "@@J stage| line") between "@@BEGIN stage=N" and "@@END stage=N". The host parses
# and judges them; this script only measures.
#
# Stage 1 (first boot): the package installed with apt, which enables and starts rtpartd; the
# units verify; enable --now; D-Bus and varlink; plan, apply, verify;
# the cpuset partition and the confined slices; reload and daemon-reload; drift seen by
# `rtpartctl watch`; SIGKILL and Restart=on-failure. Then it marks stage 2 on disk, prints the
# command line the bootloader stand-in (/etc/kernel/cmdline) now holds, and reboots.
# Stage 2 (after the reboot, with that command line): rtpartd re-applied the profile at start;
# verify is clean; a clean stop, then socket and bus activation; revert undoes everything; then
# power off, or, with the Ansible part ($S/ansible), stay up for the host's play over SSH.
# Stage 3 (the boots the play's reboot makes): reports that the system is up, nothing else.

exec > /dev/ttyS0 2>&1
S=/var/lib/rtpart-vm-test
N=org.rtpart.Manager1
OBJ=/org/rtpart/Manager1
PROFILE=realtime-virtual-host
DRIFT_SYSCTL=kernel.timer_migration
cd "$S" || exit 1

# r KEY VALUE: one result line; newlines become spaces.
r() { printf '@@R %s=%s\n' "$1" "$(printf '%s' "$2" | tr '\n' ' ' | sed 's/ *$//')"; }
# f KEY FILE: a file's content, or "(absent)".
f() { if [ -e "$2" ]; then r "$1" "$(cat "$2" 2>&1)"; else r "$1" "(absent)"; fi; }
# run NAME CMD...: runs CMD, prints its whole output and reports NAME_rc.
# What the unit's sandbox would refuse rtpartd: a filtered call (EPERM, SystemCallErrorNumber=),
# a read-only path (EROFS), a closed device, or SIGSYS; counted in this boot's rtpartd journal.
sandbox_refusals() {
        r sandbox_refusals "$(journalctl -b -u rtpartd.service -o cat | grep -ci 'operation not permitted\|read-only file system\|SIGSYS\|bad system call')"
}
run() {
        local name=$1 rc
        shift
        "$@" > "$S/$name.out" 2>&1
        rc=$?
        sed "s/^/@@O $name| /" "$S/$name.out"
        r "${name}_rc" "$rc"
        return "$rc"
}
prop() { busctl get-property "$N" "$OBJ" "$N" "$1" 2>&1; }
svc() { systemctl show rtpartd.service -p "$1" --value; }
# What rtpartd's journal (state.json) owns, and which of those it never wrote (already as
# desired: no original to keep), for the log.
owned() {
        r "owned_$1" "$(jq -r '.applied | length' /var/lib/rtpart/state.json 2>&1)"
        r "no_original_$1" "$(jq -r '[.applied[].knob] - (.originals | keys) | join(" ")' /var/lib/rtpart/state.json 2>&1)"
        r "unmovable_$1" "$(jq -r '.unmovable | keys | join(" ")' /var/lib/rtpart/state.json 2>&1)"
}
journal() { journalctl -b -u rtpartd.service --no-pager -o short-monotonic | tail -n 120 | sed "s/^/@@J $1| /"; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
# The file of the partition's mode, as the plan names it (never a cgroup path of our own).
part_path() {
        jq -r '[.changes[], .unchanged[]] | map(select(.knob == "cpuset/rtpart-rt/partition")) | .[0].path // empty' \
                "$S/plan.json" 2>/dev/null
}
common() {
        r kernel "$(uname -r)"
        r nproc "$(nproc)"
        f cmdline /proc/cmdline
        r system_state "$(systemctl is-system-running)"
        r failed_units "$(systemctl list-units --failed --no-legend --plain | awk '{print $1}')"
}

# The install: rtpart's Debian package, offline (its dependencies are in the root). Its postinst
# enables rtpartd.service and rtpartd.socket and, systemd running, starts them.
install_package() {
        # Its output as it comes: a slow or stuck install shows where it is.
        env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ./rtpart_*.deb 2>&1 |
                sed -u 's/^/@@O install| /'
        r install_rc "${PIPESTATUS[0]}"
        r pkg_status "$(dpkg-query -W -f='${Version} ${Status}' rtpart 2>&1)"
        r pkg_enabled "$(systemctl is-enabled rtpartd.service rtpartd.socket 2>&1)"
        r pkg_active "$(systemctl is-active rtpartd.service rtpartd.socket 2>&1)"
}

stage1() {
        common
        install_package
        r libs_missing "$(ldd "$(command -v rtpartd)" "$(command -v rtpartctl)" 2>&1 | grep -c "not found\\|not a dynamic")"
        r policy_file "$(ls /usr/share/dbus-1/system.d/org.rtpart.Manager1.conf 2>&1)"
        r unit_file "$(systemctl show rtpartd.service -p FragmentPath --value)"

        # The shipped units, as systemd reads them.
        run analyze systemd-analyze verify --man=no rtpartd.service rtpartd.socket
        r analyze_ours "$(grep -ci rtpart "$S/analyze.out")"
        r exposure "$(systemd-analyze security --no-pager rtpartd.service 2>&1 | grep -i 'overall exposure')"

        # enable --now, the documented install command: the package already enabled and started
        # the socket (Also=) and the service, so it changes nothing and exits 0.
        r enabled_before "$(systemctl is-enabled rtpartd.service 2>&1)"
        local t0=$(ms)
        run enable systemctl enable --now rtpartd.service
        r enable_ms $(( $(ms) - t0 ))
        r enabled "$(systemctl is-enabled rtpartd.service 2>&1)"
        r socket_state "$(systemctl is-active rtpartd.socket) $(systemctl is-enabled rtpartd.socket 2>&1)"
        local p
        for p in ActiveState SubState Type Result StatusText WatchdogUSec NRestarts; do
                r "svc_$p" "$(svc $p)"
        done
        local pid=$(svc MainPID)
        r svc_MainPID "$pid"
        r no_new_privs "$(awk '/^NoNewPrivs/ {print $2}' /proc/"$pid"/status 2>&1)"
        r seccomp "$(awk '/^Seccomp:/ {print $2}' /proc/"$pid"/status 2>&1)"
        r fd_passed "$(journalctl -b -u rtpartd.service -o cat | grep -c 'the socket systemd passed')"

        # D-Bus: the name, its owner, the interface, a property; as root and as nobody.
        run bus_status busctl status --no-pager "$N"
        r bus_pid "$(sed -n 's/^PID=//p' "$S/bus_status.out")"
        r bus_unit "$(sed -n 's/^Unit=//p' "$S/bus_status.out")"
        r bus_listed "$(busctl list --no-pager --no-legend | awk -v n="$N" '$1 == n {print $1, $2}')"
        run introspect busctl introspect --no-pager "$N" "$OBJ" "$N"
        r members "$(awk '$1 ~ /^\./ {print substr($1, 2)}' "$S/introspect.out" | sort | tr '\n' ' ')"
        r prop_profile0 "$(prop ActiveProfile)"
        r nobody_read "$(runuser -u nobody -- busctl get-property "$N" "$OBJ" "$N" InSync 2>&1)"
        r nobody_apply "$(runuser -u nobody -- busctl call "$N" "$OBJ" "$N" Apply s "$PROFILE" 2>&1)"

        # Varlink, spoken directly on the socket systemd holds.
        r varlink_info "$(printf '{"method":"org.varlink.service.GetInfo"}\0' |
                socat -t 5 - UNIX-CONNECT:/run/rtpartd/org.rtpart.Manager 2>&1 | tr '\0' '\n' | head -c 600)"

        # rtpartctl through the daemon.
        run status0 rtpartctl status
        run list rtpartctl list
        rtpartctl plan "$PROFILE" --json > "$S/plan.json" 2> "$S/plan.err"
        r plan_rc $?
        sed 's/^/@@O plan_err| /' "$S/plan.err"
        r plan_summary "$(jq -c .summary "$S/plan.json" 2>&1)"
        r plan_cpus "$(jq -c .cpus "$S/plan.json" 2>&1)"
        r plan_host "$(jq -c .host "$S/plan.json" 2>&1)"
        r plan_notes "$(jq -r '.notes[]' "$S/plan.json" 2>&1)"
        r plan_knobs "$(jq -r '[.changes[], .unchanged[]] | map(.knob) | join(" ")' "$S/plan.json" 2>&1)"
        local part=$(part_path)
        r part_path "$part"
        cp /etc/kernel/cmdline "$S/cmdline.orig"
        f timer_migration0 /proc/sys/kernel/timer_migration

        t0=$(ms)
        # On failure rtpartctl's whole output is above; rtpartd's side of it too.
        run apply rtpartctl apply "$PROFILE" || journal apply
        r apply_ms $(( $(ms) - t0 ))
        run verify1 rtpartctl verify
        rtpartctl verify --json > "$S/verify1.json" 2>&1
        r verify1_drift "$(jq -c '[.drift[].knob]' "$S/verify1.json" 2>&1)"
        r verify1_pending "$(jq -c '.reboot_pending' "$S/verify1.json" 2>&1)"
        run status1 rtpartctl status
        owned 1
        r slice_allowed1 "$(systemctl show system.slice -p AllowedCPUs --value)"
        f slice_cpus1 /sys/fs/cgroup/system.slice/cpuset.cpus
        r user_slice_allowed1 "$(systemctl show user.slice -p AllowedCPUs --value)"
        if [ -n "$part" ]; then
                f partition1 "$part"
                f partition1_cpus "$(dirname "$part")/cpuset.cpus"
        else
                r partition1 "(no knob cpuset/rtpart-rt/partition in the plan)"
        fi
        r prop_profile1 "$(prop ActiveProfile)"
        r prop_sync1 "$(prop InSync) $(prop RebootRequired) $(prop DriftCount)"
        r svc_StatusText1 "$(svc StatusText)"
        r daemon_cpus "$(awk '/^Cpus_allowed_list/ {print $2}' /proc/"$pid"/status)"
        # cpu/pm_qos: the request lives as long as rtpartd holds the device open.
        r pm_qos_held "$(ls -l /proc/"$pid"/fd | grep -c /dev/cpu_dma_latency)"

        # ExecReload=: SIGHUP re-reads the journal and checks every knob, in the same process.
        run reload systemctl reload rtpartd.service
        r reload_seen "$(journalctl -b -u rtpartd.service -o cat _PID="$pid" | grep -c '^SIGHUP')"
        r reload_pid "$(svc MainPID) $(svc ActiveState)"
        # systemd keeps AllowedCPUs= in its control drop-ins, and a daemon-reload (systemd
        # realizing every cgroup again) leaves the slices and the partition as they were.
        r slice_dropin "$(cat /etc/systemd/system.control/system.slice.d/*AllowedCPUs*.conf 2>&1 | grep '^AllowedCPUs')"
        systemctl daemon-reload
        r daemon_reload_rc $?
        rtpartctl verify --json > "$S/verify_reload.json" 2>&1
        r verify_reload_drift "$(jq -c '[.drift[].knob]' "$S/verify_reload.json" 2>&1)"
        [ -n "$part" ] && f partition_reload "$part"
        f kernel_cmdline_file /etc/kernel/cmdline

        # Drift behind rtpartd's back: a sysctl the profile sets.
        rtpartctl watch > "$S/watch.out" 2> "$S/watch.err" &
        local watch=$! i
        for i in $(seq 100); do grep -q Watching "$S/watch.err" && break; sleep 0.1; done
        r watch_banner "$(head -n 1 "$S/watch.err")"
        local was=$(cat /proc/sys/kernel/timer_migration)
        local other=$(( was == 0 ? 1 : 0 ))
        t0=$(ms)
        echo "$other" > /proc/sys/kernel/timer_migration
        for i in $(seq 100); do grep -q "sysctl/$DRIFT_SYSCTL" "$S/watch.out" && break; sleep 0.05; done
        r drift_ms $(( $(ms) - t0 ))
        r drift_watch "$(grep "sysctl/$DRIFT_SYSCTL" "$S/watch.out" | sed 's/^[^ ]*  //')"
        r drift_prop "$(prop DriftCount) $(prop InSync)"
        run verify_drift rtpartctl verify
        echo "$was" > /proc/sys/kernel/timer_migration
        for i in $(seq 50); do [ "$(prop DriftCount)" = "u 0" ] && break; sleep 0.1; done
        r drift_cleared "$(prop DriftCount) $(prop InSync)"
        kill "$watch"
        wait "$watch"
        r watch_rc $?

        # SIGKILL: Restart=on-failure brings it back, and it re-applies from its journal.
        local n1=$(svc NRestarts)
        t0=$(ms)
        systemctl kill -s KILL rtpartd.service
        r kill_rc $?
        local st newpid
        for i in $(seq 150); do
                sleep 0.2
                st=$(svc ActiveState)
                newpid=$(svc MainPID)
                [ "$st" = active ] && [ "$newpid" != 0 ] && [ "$newpid" != "$pid" ] && break
        done
        r restart_ms $(( $(ms) - t0 ))
        r restart_state "$st $(svc SubState)"
        r restart_pid "$pid -> $newpid"
        r restart_n "$n1 -> $(svc NRestarts)"
        r restart_reapplied "$(journalctl -b -u rtpartd.service -o cat _PID="$newpid" | grep -c 'Re-applying')"
        run verify2 rtpartctl verify
        rtpartctl verify --json > "$S/verify2.json" 2>&1
        r verify2_drift "$(jq -c '[.drift[].knob]' "$S/verify2.json" 2>&1)"
        owned 2
        [ -n "$part" ] && f partition2 "$part"
        r slice_allowed2 "$(systemctl show system.slice -p AllowedCPUs --value)"

        # Reboot into what the bootloader configuration now says.
        echo 2 > "$S/stage"
        f next_cmdline /etc/kernel/cmdline
        sandbox_refusals
        journal 1
        sync
        echo "@@END stage=1"
        systemctl reboot
}

stage2() {
        common
        f isolated /sys/devices/system/cpu/isolated
        f nohz_full /sys/devices/system/cpu/nohz_full
        r svc_state "$(systemctl is-active rtpartd.service) $(systemctl is-enabled rtpartd.service 2>&1)"
        r svc_StatusText "$(svc StatusText)"
        r reapplied "$(journalctl -b -u rtpartd.service -o cat | grep -c 'Re-applying')"
        local part=$(part_path)
        run status3 rtpartctl status
        run verify3 rtpartctl verify
        rtpartctl verify --json > "$S/verify3.json" 2>&1
        r verify3_drift "$(jq -c '[.drift[].knob]' "$S/verify3.json" 2>&1)"
        r verify3_pending "$(jq -c '.reboot_pending' "$S/verify3.json" 2>&1)"
        owned 3
        r slice_allowed3 "$(systemctl show system.slice -p AllowedCPUs --value)"
        f slice_cpus3 /sys/fs/cgroup/system.slice/cpuset.cpus
        [ -n "$part" ] && f partition3 "$part"
        r prop_sync3 "$(prop ActiveProfile) $(prop InSync) $(prop RebootRequired) $(prop DriftCount)"

        # A clean stop; then rtpartd.socket (varlink) and the D-Bus activation file each start
        # it again on demand.
        run stop systemctl stop rtpartd.service
        r stop_result "$(svc ActiveState) $(svc Result) $(svc ExecMainStatus)"
        r stop_socket "$(systemctl is-active rtpartd.socket)"
        local t0=$(ms)
        run status_activated rtpartctl status
        r socket_activation "$(systemctl is-active rtpartd.service) $(( $(ms) - t0 ))ms"
        systemctl stop rtpartd.service
        t0=$(ms)
        r bus_activation "$(busctl --timeout=120 get-property "$N" "$OBJ" "$N" ActiveProfile 2>&1)"
        r bus_activated "$(systemctl is-active rtpartd.service) $(( $(ms) - t0 ))ms"

        run revert rtpartctl revert
        r slice_allowed4 "$(systemctl show system.slice -p AllowedCPUs --value)"
        f slice_cpus4 /sys/fs/cgroup/system.slice/cpuset.cpus
        r user_slice_allowed4 "$(systemctl show user.slice -p AllowedCPUs --value)"
        # A service of system.slice may run on every CPU again (systemd does not write a reset
        # AllowedCPUs= into a running cgroup: rtpart gives the slice all CPUs first).
        r dbus_cpus4 "$(taskset -pc "$(systemctl show dbus.service -p MainPID --value)" 2>&1 | sed 's/.*: //')"
        [ -n "$part" ] && f partition4 "$part"
        [ -n "$part" ] && f partition4_dir "$(dirname "$part")"
        run verify4 rtpartctl verify
        r cmdline_restored "$(cmp -s /etc/kernel/cmdline "$S/cmdline.orig" && echo yes || echo no)"
        f timer_migration4 /proc/sys/kernel/timer_migration
        r prop_profile4 "$(prop ActiveProfile)"

        # A partition alone, with nothing else of rtpart's asking systemd for cpuset: it is a slice
        # systemd made with AllowedCPUs=, so systemd keeps cpuset on at the root through a
        # daemon-reload. A unit started in the slice runs on its CPUs, and revert refuses to take
        # the slice away while it runs.
        cat > "$S/part.json" <<'EOF'
{"summary": "vm test: a partition only", "cpus": {"housekeeping": "0-1"},
 "cpuset": {"confine": [], "partitions": [{"name": "rtpart-rt", "cpus": "2-3", "mode": "isolated"}]}}
EOF
        rtpartctl plan --json "$S/part.json" > "$S/plan5.json" 2>&1
        local p5=$(jq -r '[.changes[], .unchanged[]] | map(select(.knob == "cpuset/rtpart-rt/partition")) | .[0].path // empty' \
                "$S/plan5.json" 2>/dev/null)
        r part5_path "$p5"
        run apply5 rtpartctl apply "$S/part.json"
        f part5 "$p5"
        f part5_cpus "$(dirname "$p5")/cpuset.cpus"
        r part5_unit "$(systemctl show 'rtpart\x2drt.slice' -p ActiveState --value) $(systemctl show 'rtpart\x2drt.slice' -p AllowedCPUs --value)"
        systemctl daemon-reload
        sleep 2
        f part5_reload "$p5"
        f root_subtree5 /sys/fs/cgroup/cgroup.subtree_control
        run verify5 rtpartctl verify
        systemd-run --quiet --slice='rtpart\x2drt.slice' --unit=rtpart-probe sleep 300
        sleep 1
        local probe=$(systemctl show rtpart-probe -p MainPID --value)
        r probe5_cpus "$(taskset -pc "$probe" 2>&1 | sed 's/.*: //')"
        r probe5_cgroup "$(cat /proc/$probe/cgroup 2>&1)"
        run revert5_busy rtpartctl revert
        f part5_busy "$p5"
        systemctl stop rtpart-probe
        run revert5 rtpartctl revert
        f part5_after "$p5"
        r part5_unit_after "$(systemctl is-active 'rtpart\x2drt.slice')"
        # The same with rtpartd stopped: rtpartctl asks systemd itself, through the libsystemd it
        # loads only then.
        systemctl stop rtpartd.socket rtpartd.service
        run apply6 rtpartctl --no-daemon apply "$S/part.json"
        f part6 "$p5"
        r part6_unit "$(systemctl show 'rtpart\x2drt.slice' -p ActiveState --value) $(systemctl show 'rtpart\x2drt.slice' -p AllowedCPUs --value)"
        run revert6 rtpartctl --no-daemon revert
        f part6_after "$p5"
        r part6_unit_after "$(systemctl is-active 'rtpart\x2drt.slice')"
        sandbox_refusals
        journal 2
        echo "@@END stage=2"
        # With the Ansible part (tests/vm/vm_ansible.py), the guest stays up for the host's
        # ansible-playbook over SSH, which reboots it and powers it off; every later boot is stage 3.
        if [ -e "$S/ansible" ]; then
                echo 3 > "$S/stage"
        else
                systemctl poweroff
        fi
}

# Stage 3: a boot the Ansible role asked for; the host's play goes on over SSH.
stage3() {
        common
        r sshd "$(systemctl is-active ssh.service)"
        echo "@@END stage=3"
}

stage=$(cat "$S/stage" 2>/dev/null || echo 1)
echo "@@BEGIN stage=$stage"
systemctl is-system-running --wait > /dev/null
case "$stage" in
2) stage2 ;;
3) stage3 ;;
*) stage1 ;;
esac
