#!/bin/sh
# /init of the nested lab's L1 for tests/lab/test_record.sh: hvmtrace-vmm runs the phases4 payload in an L2
# guest (CPL3 payload) on our rebuilt KVM, `hvmtrace record` traces it in mode ad (the tracer harvests
# through the A/D fd), and check_phases compares the trace's written and accessed sets with the VMM's
# phase log page by page, and holds every interval to written ⊆ accessed as the kernel reported them and
# to no set holding a page the payload never touches (with npt=0 its page tables as well: check_phases
# --shadow-mmu). The tracer harvests with its default, the pruned walk (a full one where npt=0). Every combination of kvm_amd npt=1/0 and 1 s / 100 ms intervals. Each phase lasts
# its phase time and until the tracer has harvested MIN_INSIDE whole intervals inside it: the VMM follows
# the tracer's JSON Lines (--hold-intervals, --follow), so a slow or busy L1 lengthens phases instead of
# leaving too few exact intervals. Results go to the serial console: "CHECK record npt=N interval=I
# PASS|FAIL …", then "LAB-RESULT PASS|FAIL".
. /lab/l1_prelude.sh
. /lab/l1_scenario.sh

# run_one NPT INTERVAL PHASE_TIME MIN_INSIDE
run_one() {
	d=/tmp/rec-$1-$2
	rm -rf "$d" && mkdir -p "$d"
	t0=$(cut -d' ' -f1 /proc/uptime)
	echo "lab: npt=$1 interval=$2: starting"
	timeout 200 hvmtrace-vmm -v --listen "$d/vmm.sock" --payload phases4 --low-ram 256M --high-ram 64M \
		--phase-time "$3" --hold-intervals "$4" --follow "$d/rec.jsonl" --wait-attach \
		--phase-log "$d/phases.jsonl" --vcpu-cpu 0 >"$d/vmm.out" 2>&1 &
	vmm=$!
	ok=1
	l1_wait $vmm [ -S "$d/vmm.sock" ] || ok=0
	timeout 200 hvmtrace record --attach "$d/vmm.sock" --cpu 1 --interval "$2" -o "$d/t.hvt" \
		--jsonl "$d/rec.jsonl" 2>"$d/record.err" || ok=0
	wait "$vmm" || ok=0
	grep -q "in ad mode" "$d/record.err" || ok=0
	# The tracer's default, the pruned walk, where the kernel can prune (the TDP MMU, npt=1).
	walk=full
	[ "$1" = 1 ] && walk=pruned
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

for npt in 1 0; do
	load_kvm_amd $npt || continue
	scenario "record npt=$npt interval=1s" run_one $npt 1s 3.5s 2
	# phase 0 starts with first-touch faults, slow under TCG
	scenario "record npt=$npt interval=100ms" run_one $npt 100ms 1.2s 4
	unload_kvm_amd
done
lab_end
