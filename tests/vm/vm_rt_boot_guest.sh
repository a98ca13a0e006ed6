#!/bin/bash
# The guest side of tests/vm/vm_rt_boot.py: Debian 12 with systemd as PID 1 on Debian's PREEMPT_RT
# kernel, booted by systemd-boot (OVMF) from the BLS entry /boot/efi/loader/entries/rtpart.conf,
# the file rtpart edits. Runs as rtpart-vm-test.service and reports "@@R key=value" lines
# (JSON documents as "@@J name=...", command output as "@@O name| line") between
# "@@BEGIN stage=N" and "@@END stage=N". The host judges; this script only measures.
#
# Stage 1: install rtpart's .deb (its postinst enables and starts rtpartd), enable --now rtpartd
#   (the documented install command; a no-op then), apply realtime-virtual-host (the BLS entry gets its boot
#   arguments); reboot through the bootloader.
# Stage 2: the kernel command line carries them, verify is clean; audit while the housekeeping
#   CPU does disk I/O; then the serial port's IRQ moved onto an isolated CPU behind rtpart's back
#   and written to, and audit again; check latency (timerlat); revert; reboot.
# Stage 3: the original command line and BLS entry are back; power off.

exec > /dev/ttyS0 2>&1
S=/var/lib/rtpart-vm-test
ENTRY=/boot/efi/loader/entries/rtpart.conf
T=/sys/kernel/tracing
cd "$S" || exit 1

r() { printf '@@R %s=%s\n' "$1" "$(printf '%s' "$2" | tr '\n' ' ' | sed 's/ *$//')"; }
# A JSON document on one line, compacted (rtpartctl --json indents: check latency's histograms grow
# tenfold, and 190 KB through the 8250 at once once made the guest's kernel give up the serial
# IRQ, "Disabling IRQ #4", and the console stop mid-line).
j() { printf '@@J %s=%s\n' "$1" "$(jq -c . < "$2" 2>/dev/null || tr -d '\n' < "$2")"; }
run() {
        local name=$1 rc
        shift
        "$@" > "$S/$name.out" 2>&1
        rc=$?
        sed "s/^/@@O $name| /" "$S/$name.out"
        r "${name}_rc" "$rc"
        return "$rc"
}
tracefs_sum() {
        for f in current_tracer tracing_on osnoise/cpus osnoise/timerlat_period_us osnoise/stop_tracing_us \
                osnoise/stop_tracing_total_us; do
                echo "$f: $(cat "$T/$f" 2>&1)"
        done | md5sum | cut -c1-32
}

# rtpart's Debian package, offline (its dependencies are in the root): as in vm_systemd_guest.sh.
install_package() {
        # Its output as it comes: a slow or stuck install shows where it is.
        env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ./rtpart_*.deb 2>&1 |
                sed -u 's/^/@@O install| /'
        r install_rc "${PIPESTATUS[0]}"
        r pkg_status "$(dpkg-query -W -f='${Version} ${Status}' rtpart 2>&1)"
        r pkg_enabled "$(systemctl is-enabled rtpartd.service rtpartd.socket 2>&1)"
        r pkg_active "$(systemctl is-active rtpartd.service rtpartd.socket 2>&1)"
}

stage=$(cat "$S/stage" 2>/dev/null || echo 1)
systemctl is-system-running --wait > /dev/null 2>&1
echo "@@BEGIN stage=$stage"
r system_state "$(systemctl is-system-running)"
r failed_units "$(systemctl list-units --failed --plain --no-legend | awk '{print $1}')"
r kernel "$(uname -r)"
r realtime "$(cat /sys/kernel/realtime 2>/dev/null)"
r cmdline "$(cat /proc/cmdline)"
r entry_options "$(grep '^options' "$ENTRY")"
r entry_sum "$(md5sum < "$ENTRY" | cut -c1-32)"
r isolated "$(cat /sys/devices/system/cpu/isolated)"
r nohz_full "$(cat /sys/devices/system/cpu/nohz_full)"

case "$stage" in
1)
        install_package
        r bootloader "$(rtpartctl --no-daemon --json plan realtime-virtual-host | jq -r .host.bootloader)"
        run enable systemctl enable --now rtpartd
        run apply rtpartctl apply realtime-virtual-host
        r entry_options_applied "$(grep '^options' "$ENTRY")"
        r journal_applied "$(jq -c '{profile, transaction_open}' /var/lib/rtpart/state.json 2>&1)"
        echo 2 > "$S/stage"
        sync
        echo "@@END stage=1"
        systemctl reboot
        ;;
2)
        r svc_state "$(systemctl is-active rtpartd) $(systemctl is-enabled rtpartd)"
        r journal_at_boot "$(jq -c '{profile, transaction_open}' /var/lib/rtpart/state.json 2>&1)"
        journalctl -b -u rtpartd.service --no-pager -o cat | tail -n 40 | sed 's/^/@@O rtpartd| /' 
        run verify rtpartctl verify
        # The housekeeping CPU busy with disk I/O (virtio-blk's IRQs) and network traffic
        # (virtio-net's: TCP connections to qemu's user-mode gateway, answered by a reset) through
        # the first audit.
        NIC=$(ip -o link show | awk -F': ' '$2 != "lo" { print $2; exit }')
        r nic "$NIC"
        ip link set "$NIC" up && ip addr add 10.0.2.15/24 dev "$NIC"
        r nic_rc $?
        (while :; do dd if=/dev/zero of="$S/io" bs=64k count=64 conv=fsync 2> /dev/null; done) &
        IO=$!
        (while :; do (exec 3<> /dev/tcp/10.0.2.2/9) 2> /dev/null; done) &
        NET=$!
        NET_IRQS_BEFORE=$(grep virtio /proc/interrupts | grep -E 'input|output' | awk '{ n = 0; for (i = 2; i <= 5; i++) n += $i; s += n } END { print s + 0 }')
        rtpartctl --json audit --seconds 5 > "$S/audit1.json" 2> "$S/audit1.err"
        r audit1_rc $?
        kill $NET 2> /dev/null
        wait $NET 2> /dev/null
        NET_IRQS_AFTER=$(grep virtio /proc/interrupts | grep -E 'input|output' | awk '{ n = 0; for (i = 2; i <= 5; i++) n += $i; s += n } END { print s + 0 }')
        r net_irqs "$((NET_IRQS_AFTER - NET_IRQS_BEFORE))"
        j audit1 "$S/audit1.json"
        sed 's/^/@@O audit1| /' "$S/audit1.err"
        # The serial port's IRQ moved onto the first isolated CPU behind rtpart's back, and written to.
        FIRST=$(cut -d, -f1 /sys/devices/system/cpu/isolated | cut -d- -f1)
        IRQ=$(awk '/ttyS0/ { sub(":", "", $1); print $1; exit }' /proc/interrupts)
        r serial_irq "$IRQ"
        r moved_to "$FIRST"
        OLD=$(cat /proc/irq/"$IRQ"/smp_affinity_list)
        echo "$FIRST" > /proc/irq/"$IRQ"/smp_affinity_list
        r move_rc $?
        (i=0; while [ $i -lt 400 ]; do echo "noise $i"; i=$((i + 1)); sleep 0.01; done) &
        W=$!
        rtpartctl --json audit --seconds 4 > "$S/audit2.json" 2> "$S/audit2.err"
        r audit2_rc $?
        kill $W 2> /dev/null
        wait $W 2> /dev/null
        echo "$OLD" > /proc/irq/"$IRQ"/smp_affinity_list
        j audit2 "$S/audit2.json"
        kill $IO 2> /dev/null
        wait $IO 2> /dev/null
        # check latency: timerlat on the isolated CPUs; tracefs as it was afterwards.
        mountpoint -q $T || mount -t tracefs nodev $T
        r tracefs_sum_before "$(tracefs_sum)"
        rtpartctl --json check latency --seconds 5 > "$S/lat.json" 2> "$S/lat.err"
        r lat_rc $?
        j lat "$S/lat.json"
        sed 's/^/@@O lat| /' "$S/lat.err"
        r tracefs_sum_after "$(tracefs_sum)"
        run revert rtpartctl revert
        r entry_options_reverted "$(grep '^options' "$ENTRY")"
        echo 3 > "$S/stage"
        sync
        echo "@@END stage=2"
        systemctl reboot
        ;;
3)
        run verify3 rtpartctl verify
        echo "@@END stage=3"
        systemctl poweroff
        ;;
esac
