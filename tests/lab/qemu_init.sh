#!/bin/sh
# /init of the nested lab's L1 for tests/lab/test_qemu.sh: patched QEMU (-M microvm -accel kvm on
# our rebuilt KVM) runs the PVH phase payload (phases.elf) as L2 with guest RAM in a shared tmpfs file,
# qemu_phases drives its phases through that file, `hvmtrace record` traces it through QEMU's hvmtrace
# object, and check_phases compares the trace with the phase log page by page (with written ⊆ accessed as
# the kernel reported them, and no page the payload never touches in any set): mode ad (written and
# accessed sets) with kvm_amd npt=1 and npt=0 at 1 s and 100 ms (and QEMU's dirty-log mode as well when
# the kernel command line asks for it, for comparison). The array payload (copy writes c reading a, then
# add writes c reading a and b) runs once more per npt setting in mode ad at 1 s, checked the same way, and
# then its analyses: check_array_report holds `hvmtrace report --json` to its phase log (c write-heavy, a
# read-mostly, an accessed-set phase boundary within one interval of the copy→add switch). Each phase
# lasts its hold and until the tracer has harvested MIN_INSIDE whole intervals inside it (qemu_phases
# follows the tracer's JSON Lines); the waits for QEMU and the guest end when QEMU exits. Results on the
# serial console: "CHECK qemu [array ]mode=M npt=N interval=I PASS|FAIL …", then "LAB-RESULT PASS|FAIL".
. /lab/l1_prelude.sh
. /lab/l1_scenario.sh

# labqemumodes=ad,dirty-log on the kernel command line picks the modes (default: ad);
# labqemuscenarios=phases,array the scenarios (default: both).
modes=$(sed -n 's/.*labqemumodes=\([a-z,-]*\).*/\1/p' /proc/cmdline | tr , ' ')
scenarios=$(sed -n 's/.*labqemuscenarios=\([a-z,]*\).*/\1/p' /proc/cmdline | tr , ' ')

# run_one MODE NPT INTERVAL HOLD MIN_INSIDE [PAYLOAD [PAYLOAD OPTIONS...]] (default phases4)
run_one() {
	payload=${6:-phases4}
	d=/tmp/qemu-$1-$2-$3-$payload
	ram=/dev/shm/ram-$1-$2-$3
	rm -rf "$d" && mkdir -p "$d"
	t0=$(cut -d' ' -f1 /proc/uptime)
	ok=1
	accessed="" shadow=""
	[ "$1" = ad ] && accessed=--accessed
	[ "$2" = 0 ] && shadow=--shadow-mmu
	popts="--payload $payload"
	[ $# -gt 6 ] && popts="$popts $(shift 6; echo "$@")"
	# shellcheck disable=SC2086
	qemu_phases prepare --ram "$ram" $popts || ok=0
	taskset -c 0 timeout 200 qemu-system-x86_64 -L /lab/qemu-data -M microvm -accel kvm -cpu qemu64 -m 4G \
		-object "memory-backend-file,id=ram,size=4G,mem-path=$ram,share=on" -machine memory-backend=ram \
		-kernel /lab/phases.elf -no-reboot -nodefaults -display none \
		-qmp "unix:$d/qmp.sock,server=on,wait=off" -object "hvmtrace,id=tr0,path=$d/vm.sock" \
		>"$d/qemu.err" 2>&1 &
	qemu=$!
	echo "lab: mode=$1 npt=$2 interval=$3: QEMU started"
	l1_wait $qemu [ -S "$d/vm.sock" ] && l1_wait $qemu [ -S "$d/qmp.sock" ] || ok=0
	qemu_phases ready --ram "$ram" --pid $qemu >"$d/driver.err" 2>&1 || ok=0
	echo "lab: mode=$1 npt=$2 interval=$3: guest ready ($(tr -d '\n' <"$d/driver.err"))"
	timeout 200 hvmtrace record --attach "$d/vm.sock" --mode "$1" --cpu 1 --interval "$3" -o "$d/t.hvt" \
		--jsonl "$d/rec.jsonl" 2>"$d/record.err" &
	rec=$!
	l1_wait $rec grep -q 'attached to VM' "$d/record.err" || ok=0
	# shellcheck disable=SC2086
	qemu_phases run --ram "$ram" $popts --hold "$4" --hold-intervals "$5" --follow "$d/rec.jsonl" \
		--phase-log "$d/phases.jsonl" --pid $qemu >>"$d/driver.err" 2>&1 || ok=0
	qmp "$d/qmp.sock" '{"execute":"quit"}' >/dev/null 2>&1 || ok=0
	wait "$rec" || ok=0
	wait "$qemu"
	grep -q "in $1 mode" "$d/record.err" || ok=0
	# Mode ad harvests with the tracer's default, the pruned walk, where the kernel can prune (npt=1).
	if [ "$1" = ad ]; then
		walk=full
		[ "$2" = 1 ] && walk=pruned
		grep -q "($walk walk)" "$d/record.err" || ok=0
	fi
	check_phases --trace "$d/t.hvt" --phase-log "$d/phases.jsonl" --min-inside "$5" $accessed $shadow \
		>"$d/check.out" 2>&1
	check=$?
	files="qemu.err driver.err record.err"
	grep -E "attached|intervals recorded" "$d/record.err" | sed 's|^|lab: |' | head -3
	grep -E "held" "$d/driver.err" | sed 's|^|lab: |'
	rm -f "$ram"
}

# run_array NPT: the array payload, 8 MiB arrays (2,048 pages each), in mode ad at 1 s, each phase held
# until 4 whole intervals lie inside it (the phase detector compares 3 intervals on each side); its sets
# checked as in run_one, then report's classes (over the intervals inside the phases) and phases.
run_array() {
	run_one ad "$1" 1s 4s 4 array --array-size 8M
	echo "lab: array npt=$1: check_phases: $(tail -n 1 "$d/check.out")"
	[ "$check" = 0 ] || return
	files="$files report.err"
	if hvmtrace report --json "$d/t.hvt" >"$d/all.json" 2>"$d/report.err" &&
		range=$(check_array_report range --phase-log "$d/phases.jsonl" --trace "$d/t.hvt" 2>>"$d/report.err") &&
		hvmtrace report --json --pages --from "${range% *}" --to "${range#* }" "$d/t.hvt" >"$d/pages.json" \
			2>>"$d/report.err" &&
		check_array_report check --phase-log "$d/phases.jsonl" --trace "$d/t.hvt" --report "$d/all.json" \
			--pages "$d/pages.json" >>"$d/check.out" 2>>"$d/report.err"; then
		echo "lab: array npt=$1: report --pages --from ${range% *} --to ${range#* }"
	else
		check=1
	fi
}

for npt in 1 0; do
	load_kvm $npt || continue
	case " ${scenarios:-phases array} " in *" phases "*)
		for mode in ${modes:-ad}; do
			scenario "qemu mode=$mode npt=$npt interval=1s" run_one "$mode" $npt 1s 3.5s 2
			scenario "qemu mode=$mode npt=$npt interval=100ms" run_one "$mode" $npt 100ms 1.2s 4
		done
		;;
	esac
	case " ${scenarios:-phases array} " in *" array "*)
		scenario "qemu array mode=ad npt=$npt interval=1s" run_array $npt
		;;
	esac
	unload_kvm
done
lab_end
