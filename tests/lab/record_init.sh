#!/bin/sh
# /init of the nested lab's L1 for tests/lab/test_record.sh and test_intel_record.sh: hvmtrace-vmm runs the
# phases4 payload in an L2 guest (CPL3 payload) on our rebuilt KVM, `hvmtrace record` traces it in mode ad
# (the tracer harvests through the A/D fd), and check_phases compares the trace's written and accessed sets
# with the VMM's phase log page by page, and holds every interval to written ⊆ accessed as the kernel
# reported them and to no set holding a page the payload never touches (with npt=0 its page tables as well:
# check_phases --shadow-mmu). The tracer harvests with its default, the pruned walk (a full one where npt=0).
# Every combination of kvm_amd npt=1/0 (or kvm_intel ept=1/0; labtdp= picks, l1_prelude.sh) and 1 s / 100 ms
# intervals (labintervals=1s picks one); labeptad0=1 adds kvm_intel ept=1 eptad=0 at 1 s. Each phase
# lasts its phase time and until the tracer has harvested MIN_INSIDE whole intervals inside it: the VMM
# follows the tracer's JSON Lines (--hold-intervals, --follow), so a slow or busy L1 lengthens phases
# instead of leaving too few exact intervals. Results go to the serial console: "CHECK record npt=N
# interval=I PASS|FAIL …" (ept= on Intel), then "LAB-RESULT PASS|FAIL". Before the first scenario, with
# the first MMU setting loaded, `hvmtrace doctor` checks this L1 (l1_doctor.sh: "CHECK doctor …").
. /lab/l1_prelude.sh
. /lab/l1_scenario.sh
. /lab/l1_doctor.sh

# run_one NPT INTERVAL PHASE_TIME MIN_INSIDE
run_one() {
	d=/tmp/rec-$1-$2
	rm -rf "$d" && mkdir -p "$d"
	t0=$(cut -d' ' -f1 /proc/uptime)
	echo "lab: $MMU=$1 interval=$2: starting"
	timeout 200 hvmtrace-vmm -v --listen "$d/vmm.sock" --payload phases4 --low-ram 256M --high-ram 64M \
		--phase-time "$3" --hold-intervals "$4" --follow "$d/rec.jsonl" --wait-attach \
		--phase-log "$d/phases.jsonl" --vcpu-cpu 0 $GUEST_IF >"$d/vmm.out" 2>&1 &
	vmm=$!
	ok=1
	# Listening, not just bound: the socket exists from bind() on, and a connect() before listen() is
	# refused (seen once: record refused, the VMM waiting for it until its timeout).
	l1_wait $vmm grep -q "listening on" "$d/vmm.out" || ok=0
	timeout 200 hvmtrace record --attach "$d/vmm.sock" --cpu "$TRACER_CPU" --interval "$2" -o "$d/t.hvt" \
		--jsonl "$d/rec.jsonl" 2>"$d/record.err" || ok=0
	wait "$vmm" || ok=0
	grep -q "in ad mode" "$d/record.err" || ok=0
	# The tracer's default, the pruned walk, where the kernel can prune (the TDP MMU, npt=1 or ept=1, with
	# A/D bits: not kvm_intel eptad=0).
	walk=full
	[ "$1" = 1 ] && [ "$(cat /sys/module/kvm_intel/parameters/eptad 2>/dev/null)" != N ] && walk=pruned
	grep -q "($walk walk)" "$d/record.err" || ok=0
	shadow=""
	[ "$1" = 0 ] && shadow=--shadow-mmu
	check_phases --trace "$d/t.hvt" --phase-log "$d/phases.jsonl" --min-inside "$4" --accessed $shadow \
		>"$d/check.out" 2>&1
	check=$?
	files="record.err vmm.out"
	grep -E "harvest_ns|attached|intervals recorded|written but not accessed" "$d/record.err" | sed 's|^|lab: |' | head -5
	grep -E "held" "$d/vmm.out" | sed 's|^|lab: |'
}

# The Intel tier's L2 runs with IF=1 (hvmtrace-vmm --guest-if): Bochs 2.7 was seen to give no interrupt exits
# while its L2 ran with IF=0 (docs/lab.md §6).
GUEST_IF=""
[ "$KVM_VENDOR" = kvm_amd ] || GUEST_IF=--guest-if
intervals=$(sed -n 's/.*labintervals=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' ')
doctored=0
for tdp in $LAB_TDP; do
	load_kvm $tdp || continue
	[ "$doctored" = 1 ] || { doctor_check; doctored=1; }
	for i in ${intervals:-1s 100ms}; do
		# phase 0 starts with first-touch faults, slow under TCG: longer phases at 100 ms
		if [ "$i" = 1s ]; then hold="3.5s 2"; else hold="1.2s 4"; fi
		# shellcheck disable=SC2086
		scenario "record $MMU=$tdp interval=$i" run_one $tdp $i $hold
	done
	unload_kvm
done
# kvm_intel eptad=0: EPT without A/D bits, where KVM harvests by access tracking (a full walk) at 1 s.
if grep -q 'labeptad0=1' /proc/cmdline && load_kvm 1 eptad=0; then
	scenario "record ept=1 eptad=0 interval=1s" run_one 1 1s 3.5s 2
	unload_kvm
fi
lab_end
