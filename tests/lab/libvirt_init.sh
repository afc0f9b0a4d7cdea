#!/bin/sh
# /init of the nested lab's L1 for tests/lab/test_libvirt.sh: the whole libvirt chain on a real memmap=
# reservation. Debian's libvirtd (11.3, packaged defaults but stdio_handler = "file"; files from
# scripts/lab-libvirt-root.sh) starts the domain `hvmtrace virt-xml` made: guest RAM is L1's memmap= range
# 0x80000000+256M through /dev/mem, which only the devmem helper the hook starts opens; QEMU runs as
# libvirt-qemu with no capabilities (checked in /proc/PID/status); the hook (`hvmtrace libvirt-hook`,
# detached supervisor: no systemd here) starts the tracer in mode ad. L2 is the PVH phase payload on the pc
# machine (libvirt has no microvm) with max-ram-below-4g=128M, so 128M lie at 0 and 128M at 4 GiB, driven by
# qemu_phases through /dev/mem, each phase lasting until the tracer (its JSON Lines, jsonl='on') harvested
# 2 whole intervals inside it. check_phases holds written AND accessed sets to the phase log as in
# qemu_init.sh; intervals before the first phase (the tracer attached when the domain started, before
# SeaBIOS and the loader ran) are not held (--from-first-phase). With kvm_amd npt=1 and npt=0, at 1 s.
# Results: "CHECK libvirt npt=N interval=1s PASS|FAIL …" (ept= on Intel), then "LAB-RESULT PASS|FAIL".
# On Intel (kvm_intel, ept=; the tracer on TRACER_CPU, L1's last) L2 is phases_if.elf, the payload with IF=1
# and the 8259s masked: Bochs gives no interrupt exit while L2 runs with IF=0 (qemu_init.sh).
. /lab/l1_prelude.sh
. /lab/l1_scenario.sh

RESERVED=0x80000000
chmod 0755 / /lab # mkinitramfs.sh builds in a mktemp -d directory: its root would be 0700, closed to QEMU's user
mkdir -p /etc/libvirt/hooks/qemu.d /etc/libvirt/hooks/daemon.d /lab/img /lab/traces /run/hvmtrace /var
ln -s /run /var/run # as on Debian: libvirt's clients look for /var/run/libvirt/libvirt-sock
echo 'stdio_handler = "file"' >>/etc/libvirt/qemu.conf
cp /lab/qemu-hook /etc/libvirt/hooks/qemu.d/hvmtrace && chmod 0755 /etc/libvirt/hooks/qemu.d/hvmtrace
# the daemon hook, so that virt-xml --check finds the daemon has loaded the hooks (docs/libvirt.md §4.1)
cp /lab/daemon-hook /etc/libvirt/hooks/daemon.d/hvmtrace && chmod 0755 /etc/libvirt/hooks/daemon.d/hvmtrace
PHASES_ELF=/lab/phases.elf
[ "$KVM_VENDOR" = kvm_amd ] || PHASES_ELF=/lab/phases_if.elf
cp $PHASES_ELF /lab/img/phases.elf # libvirt relabels the kernel for QEMU's user
grep -i "^ *8.*: Reserved" /proc/iomem | sed 's/^ */lab: iomem: /'

VIRSH="virsh -q -c qemu:///system"

start_libvirtd() {
	rm -f /run/libvirt/libvirt-sock
	libvirtd -f /etc/libvirt/libvirtd.conf >/tmp/libvirtd.out 2>&1 &
	libvirtd_pid=$!
	l1_wait $libvirtd_pid [ -S /run/libvirt/libvirt-sock ] && kill -0 $libvirtd_pid 2>/dev/null
}
stop_libvirtd() {
	kill -TERM "$libvirtd_pid" 2>/dev/null
	wait "$libvirtd_pid"
}

# The domain, once: virt-xml in L1 (the CPU, chanmap and iomem it checks are L1's).
plain_domain() {
	cat <<EOX
<domain type='kvm' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>lab</name>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type><kernel>/lab/img/phases.elf</kernel></os>
  <cpu mode='custom' match='exact'><model fallback='forbid'>qemu64</model><feature policy='disable' name='svm'/></cpu>
  <on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot><on_crash>destroy</on_crash>
  <devices><memballoon model='none'/></devices>
  <qemu:commandline><qemu:arg value='-machine'/><qemu:arg value='max-ram-below-4g=128M'/></qemu:commandline>
</domain>
EOX
}

phases() { # VERB ARGS...: qemu_phases on the domain's RAM, L1's /dev/mem at the reservation
	verb=$1
	shift
	qemu_phases "$verb" --ram /dev/mem --ram-offset $RESERVED --pc --low-ram 128M --high-ram 128M "$@"
}

# run_one NPT: one start of the domain, its phases, its destroy, the check (scenario() reports it).
run_one() {
	d=/tmp/libvirt-$1
	rm -rf "$d" /lab/traces/* && mkdir -p "$d"
	t0=$(cut -d' ' -f1 /proc/uptime)
	ok=1 check=2
	files="virsh.err qemu.log status maps record.err driver.err libvirtd.log"
	# What udev does on Debian, each time kvm-amd or kvm-intel makes /dev/kvm: group kvm (libvirt-qemu's
	# group), 0660.
	chgrp kvm /dev/kvm && chmod 0660 /dev/kvm || ok=0
	start_libvirtd || { ok=0; echo "lab: $MMU=$1: libvirtd did not start: $(tail -n 3 /tmp/libvirtd.out)"; }
	echo "lab: $MMU=$1: libvirtd up after $(awk -v a="$t0" '{ printf "%.1f", $1 - a }' /proc/uptime) s of L1"
	[ -e /etc/libvirt/qemu/lab.xml ] || define_domain || ok=0
	phases prepare --payload phases4 >"$d/driver.err" 2>&1 || ok=0
	$VIRSH start lab >>"$d/virsh.err" 2>&1 || ok=0
	qpid=$(cat /run/libvirt/qemu/lab.pid 2>/dev/null)
	if [ -n "$qpid" ]; then
		echo "lab: $MMU=$1: domain started, QEMU pid $qpid, after $(awk -v a="$t0" \
			'{ printf "%.1f", $1 - a }' /proc/uptime) s of L1"
		run_domain "$1"
	else
		ok=0
		echo "lab: $MMU=$1: virsh start failed: $(tail -n 3 "$d/virsh.err" | tr '\n' ' ')"
	fi
	cp /lab/traces/lab.log "$d/record.err" 2>/dev/null
	cp /var/log/libvirt/qemu/lab.log "$d/qemu.log" 2>/dev/null
	stop_libvirtd
	cp /tmp/libvirtd.out "$d/libvirtd.log"
}

# run_domain NPT: the running domain (QEMU $qpid): who QEMU runs as, the guest's phases while the hook's
# tracer follows them, virsh destroy, the tracer's end and the check of its trace.
run_domain() {
	shadow=""
	[ "$1" = 0 ] && shadow=--shadow-mmu
	grep -E '^(Uid|Gid|CapEff|CapPrm)' "/proc/$qpid/status" >"$d/status" 2>&1
	uid=$(awk -F: '$1 == "libvirt-qemu" { print $3 }' /etc/passwd)
	[ "$(awk '/^Uid/ { print $2, $3, $4, $5 }' "$d/status")" = "$uid $uid $uid $uid" ] || ok=0
	[ "$(awk '/^CapEff/ { print $2 }' "$d/status")" = 0000000000000000 ] || ok=0
	echo "lab: $MMU=$1: QEMU $(tr '\t\n' '  ' <"$d/status")"
	# Its guest RAM is the reservation through /dev/mem, which only the helper opened for it.
	# (its log, appended to at each start, says so once the fds have gone: maybe after virsh start returned)
	l1_wait "$qpid" grep -q 'fds handed over' /lab/traces/lab.log || ok=0
	grep -E " 80000000 [0-9a-f:]+ [0-9]+ +/dev/mem$" "/proc/$qpid/maps" >"$d/maps" || ok=0
	echo "lab: $MMU=$1: QEMU maps $(awk '{ print $1, $3, $6 }' "$d/maps" | head -n 1); $(grep 'devmem helper' /lab/traces/lab.log | tail -n 1)"
	phases ready --pid "$qpid" >>"$d/driver.err" 2>&1 || ok=0
	l1_wait "$qpid" sh -c 'ls /lab/traces/lab-*.jsonl' >/dev/null 2>&1 || ok=0
	jsonl=$(ls /lab/traces/lab-*.jsonl 2>/dev/null | head -n 1)
	l1_wait "$qpid" grep -q 'attached to VM' /lab/traces/lab.log || ok=0
	echo "lab: $MMU=$1: guest ready, tracer $(grep -o 'in [a-z-]* mode' /lab/traces/lab.log | tail -n 1)"
	phases run --payload phases4 --hold 3.5s --hold-intervals 2 --follow "$jsonl" --phase-log "$d/phases.jsonl" \
		--pid "$qpid" >>"$d/driver.err" 2>&1 || ok=0
	$VIRSH destroy lab >>"$d/virsh.err" 2>&1 || ok=0
	l1_wait "$libvirtd_pid" [ ! -e /run/hvmtrace/lab/supervisor.pid ] || ok=0
	grep -q 'in ad mode' /lab/traces/lab.log || ok=0
	grep -q 'the tracer ended with status 0' /lab/traces/lab.log || ok=0
	trace=$(ls /lab/traces/lab-*.hvt 2>/dev/null | head -n 1)
	check_phases --trace "$trace" --phase-log "$d/phases.jsonl" --min-inside 2 --accessed $shadow \
		--from-first-phase >"$d/check.out" 2>&1
	check=$?
	grep -E "attached|intervals recorded" /lab/traces/lab.log | sed 's|^|lab: |' | tail -n 2
	grep -E "held" "$d/driver.err" | sed 's|^|lab: |'
}

# The domain, once, with libvirtd running and kvm-amd loaded (a kvm domain needs /dev/kvm): virt-xml in L1
# (the CPU, chanmap and iomem it checks are L1's), its --check, virsh define.
define_domain() {
	plain_domain >/lab/plain.xml
	hvmtrace virt-xml /lab/plain.xml -o /lab/lab.xml --emulator /lab/qemu/qemu-system-x86_64 \
		--cpu "$TRACER_CPU" --interval 1s --mode ad --bandwidth off --jsonl on --output-dir /lab/traces \
		--chanmap /lab/chanmap.json --channels s0.mc0.ch0 2>>"$d/virsh.err" &&
		hvmtrace virt-xml --check /lab/lab.xml 2>>"$d/virsh.err" &&
		$VIRSH define /lab/lab.xml >/dev/null 2>>"$d/virsh.err" &&
		echo "lab: domain lab defined from virt-xml's output"
}

cat >/lab/chanmap.json <<'EOC'
{"schema": "hvmtrace-chanmap", "version": 1, "created": "2026-01-01T00:00:00Z",
 "source": "MODEL map for the nested lab: one channel, L1's memmap= range (L1 has no uncore PMU)",
 "host": {"hostname": "lab-l1", "kernel": "lab", "machine_id": ""},
 "cpu": {"vendor": "GenuineIntel", "family": 6, "model": 85, "name": "MODEL", "generation": "skx"},
 "sockets": 1,
 "channels": [
  {"id": "s0.mc0.ch0", "socket": 0, "controller": 0, "channel": 0, "pmu": "uncore_imc_0",
   "ranges": [{"start": "0x80000000", "size": "0x10000000"}]}],
 "interleaved": [], "advice": ""}
EOC

for npt in $LAB_TDP; do
	load_kvm $npt || continue
	scenario "libvirt $MMU=$npt interval=1s" run_one $npt
	unload_kvm
done
lab_end
