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
# serial console: "CHECK qemu [array ]mode=M npt=N interval=I PASS|FAIL …" (ept= on Intel), then
# "LAB-RESULT PASS|FAIL". The Intel tier (tests/lab/test_intel_qemu.sh) runs it with kvm_intel ept=1/0 on one
# CPU: the vCPU thread and the tracer share it (TRACER_CPU, l1_prelude.sh).
. /lab/l1_prelude.sh
. /lab/l1_scenario.sh

# labqemumodes=ad,dirty-log on the kernel command line picks the modes (default: ad);
# labqemuscenarios=phases,array,owners the scenarios (default: phases and array); labintervals=1s,100ms the
# phases scenarios' intervals (default both); labtdp=1,0 the MMU settings (l1_prelude.sh).
modes=$(sed -n 's/.*labqemumodes=\([a-z,-]*\).*/\1/p' /proc/cmdline | tr , ' ')
scenarios=$(sed -n 's/.*labqemuscenarios=\([a-z,]*\).*/\1/p' /proc/cmdline | tr , ' ')
intervals=$(sed -n 's/.*labintervals=\([0-9a-z,]*\).*/\1/p' /proc/cmdline | tr , ' ')
# The Intel tier's L2 runs with IF=1 (phases_if.elf): Bochs 2.7 gives L1 no external-interrupt exit while L2
# runs with IF=0, and the payload spins without exits while it waits for the driver, so L1 starved (seen:
# no VM exit for minutes after the guest's first page faults; docs/lab.md §6). microvm without its PIT and
# PIC, so that no interrupt is raised for it (phases_if.elf masks the 8259s too, for the pc machine).
PHASES_ELF=/lab/phases.elf MICROVM=microvm
[ "$KVM_VENDOR" = kvm_amd ] || PHASES_ELF=/lab/phases_if.elf MICROVM=microvm,pit=off,pic=off

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
	taskset -c 0 timeout 200 qemu-system-x86_64 -L /lab/qemu-data -M $MICROVM -accel kvm -cpu qemu64 -m 4G \
		-object "memory-backend-file,id=ram,size=4G,mem-path=$ram,share=on" -machine memory-backend=ram \
		-kernel $PHASES_ELF -no-reboot -nodefaults -display none \
		-qmp "unix:$d/qmp.sock,server=on,wait=off" -object "hvmtrace,id=tr0,path=$d/vm.sock" \
		>"$d/qemu.err" 2>&1 &
	qemu=$!
	echo "lab: mode=$1 $MMU=$2 interval=$3: QEMU started"
	l1_wait $qemu [ -S "$d/vm.sock" ] && l1_wait $qemu [ -S "$d/qmp.sock" ] || ok=0
	qemu_phases ready --ram "$ram" --pid $qemu >"$d/driver.err" 2>&1 || ok=0
	echo "lab: mode=$1 $MMU=$2 interval=$3: guest ready ($(tr -d '\n' <"$d/driver.err"))"
	timeout 200 hvmtrace record --attach "$d/vm.sock" --mode "$1" --cpu "$TRACER_CPU" --interval "$3" \
		-o "$d/t.hvt" --jsonl "$d/rec.jsonl" 2>"$d/record.err" &
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
	echo "lab: array $MMU=$1: check_phases: $(tail -n 1 "$d/check.out")"
	[ "$check" = 0 ] || return
	files="$files report.err"
	if hvmtrace report --json "$d/t.hvt" >"$d/all.json" 2>"$d/report.err" &&
		range=$(check_array_report range --phase-log "$d/phases.jsonl" --trace "$d/t.hvt" 2>>"$d/report.err") &&
		hvmtrace report --json --pages --from "${range% *}" --to "${range#* }" "$d/t.hvt" >"$d/pages.json" \
			2>>"$d/report.err" &&
		check_array_report check --phase-log "$d/phases.jsonl" --trace "$d/t.hvt" --report "$d/all.json" \
			--pages "$d/pages.json" >>"$d/check.out" 2>>"$d/report.err"; then
		echo "lab: array $MMU=$1: report --pages --from ${range% *} --to ${range#* }"
	else
		check=1
	fi
}

# run_owners NPT: the built-in Linux guest (scripts/guest-workloads.sh: Debian's 6.12 kernel and a busybox
# initramfs) as L2 under QEMU -M pc -accel kvm, its RAM a shared tmpfs file (L1 maps that with 4 KiB
# pages; anonymous RAM gets transparent huge pages, and a 2 MiB NPT entry's dirty bit makes all its 512
# pages written: 15,360 pages a copy interval for c's 4,096), running the array program (16 MiB arrays,
# 5 s phases) with the guest agent (hvt.owners=1) onto QEMU's virtio-serial port; hvmtrace record traces
# it in mode ad at 1 s with --owners-port. check_array holds every copy and add interval's written set to
# c (the program printed c's frames from its pagemap); then in every copy interval `hvmtrace attribute`
# must give the array process at least c's pages written, and at least c's and a's pages accessed (copy
# reads a, writes c; the agent's snapshots give all three arrays to array, as anonymous memory, in the
# e2e test qemu_owners). Prints the L2 boot (record's attach to the agent's start) and the whole run.
run_owners() {
	d=/tmp/owners-$1
	rm -rf "$d" && mkdir -p "$d"
	t0=$(cut -d' ' -f1 /proc/uptime)
	ok=1 check=2
	files="qemu.err record.err console"
	mkfifo "$d/serial"
	stamp_lines <"$d/serial" >"$d/console" &
	stamp=$!
	taskset -c 0 timeout 600 qemu-system-x86_64 -L /lab/qemu-data -M pc -accel kvm -cpu host -m 512M -smp 1 \
		-object "memory-backend-file,id=ram,size=512M,mem-path=/dev/shm/ram-owners,share=on" \
		-machine memory-backend=ram -kernel /lab/guest/vmlinux -initrd /lab/guest/initrd.gz -no-reboot \
		-nodefaults -vga none -display none \
		-append "console=ttyS0 quiet panic=-1 hvt.size=16777216 hvt.phase=5 hvt.owners=1" \
		-serial "file:$d/serial" -object "hvmtrace,id=tr0,path=$d/vm.sock" \
		-device virtio-serial-pci -chardev "socket,id=owners0,path=$d/owners.sock,server=on,wait=off" \
		-device virtserialport,chardev=owners0,name=org.hvmtrace.owners.0 >"$d/qemu.err" 2>&1 &
	qemu=$!
	echo "lab: owners npt=$1: QEMU started"
	l1_wait $qemu [ -S "$d/vm.sock" ] && l1_wait $qemu [ -S "$d/owners.sock" ] || ok=0
	timeout 600 hvmtrace record --attach "$d/vm.sock" --owners-port "$d/owners.sock" --mode ad \
		--cpu "$TRACER_CPU" --interval 1s -o "$d/t.hvt" --jsonl "$d/rec.jsonl" 2>"$d/record.err" || ok=0
	wait "$qemu"
	# stamp_lines ends at the fifo's end; a QEMU that died before opening it leaves it waiting.
	for _ in $(seq 50); do kill -0 $stamp 2>/dev/null || break; sleep 0.1; done
	kill $stamp 2>/dev/null
	rm -f /dev/shm/ram-owners
	grep -E "attached|intervals recorded|snapshots stored" "$d/record.err" | sed 's|^|lab: |'
	grep -E "HVT (OWNERS|PHASE|EXIT)" "$d/console" | sed "s|^|lab: owners npt=$1: |"
	grep -q "in ad mode" "$d/record.err" && grep -q "HVT EXIT 0" "$d/console" || ok=0
	attach=$(head -n 1 "$d/rec.jsonl" | sed 's/.*"t_start_ns":\([0-9]*\).*/\1/')
	agent=$(awk '/HVT OWNERS agent/ { print $1 }' "$d/console")
	echo "lab: owners npt=$1: L2 booted to its agent in $(awk -v a="$attach" -v b="$agent" \
		'BEGIN { printf "%.1f", (b - a) / 1e9 }') s; run $t0..$(cut -d' ' -f1 /proc/uptime) s of L1 uptime"
	check_array --trace "$d/t.hvt" --console "$d/console" --min-intervals 2 --slack 1 >"$d/check.out" 2>&1
	check=$?
	sed -n '/^interval/s|^|lab: owners npt='"$1"': check_array: |p' "$d/check.out"
	[ "$check" = 0 ] || return
	# attribute numbers intervals from 0 in the trace's order; check_array names them by seq.
	awk -F'"seq":' '{ split($2, a, ","); print a[1], NR - 1 }' "$d/rec.jsonl" >"$d/index"
	awk '/\(copy\)/ { print $2 }' "$d/check.out" >"$d/copy"
	cpages=$(awk '/HVT C-PAGES/ { print $NF; exit }' "$d/console")
	files="$files attr.err"
	if hvmtrace attribute "$d/t.hvt" --intervals >"$d/attr.txt" 2>"$d/attr.err"; then
		awk -v c="$cpages" 'FILENAME ~ /index$/ { index_of[$1] = $2; next }
			FILENAME ~ /copy$/ { copy[index_of[$1]] = $1; n++; next }
			$1 in copy && $3 ~ /^array\[/ { w[$1] = $4; a[$1] = $5 }
			END {
				for (i in copy) {
					bad += !(w[i] >= c && a[i] >= 2 * c)
					printf "copy interval %s: array wrote %d and accessed %d pages; c and a %d each\n",
						copy[i], w[i], a[i], c
				}
				printf "%d copy intervals, %d not attributed to array\n", n, bad
				exit (bad > 0 || n == 0)
			}' "$d/index" "$d/copy" "$d/attr.txt" >>"$d/check.out" || check=1
	else
		check=1
	fi
	sed -n '/^copy interval/s|^|lab: owners npt='"$1"': |p' "$d/check.out"
}

for npt in $LAB_TDP; do
	load_kvm $npt || continue
	case " ${scenarios:-phases array} " in *" phases "*)
		for mode in ${modes:-ad}; do
			for i in ${intervals:-1s 100ms}; do
				if [ "$i" = 1s ]; then hold="3.5s 2"; else hold="1.2s 4"; fi
				# shellcheck disable=SC2086
				scenario "qemu mode=$mode $MMU=$npt interval=$i" run_one "$mode" $npt $i $hold
			done
		done
		;;
	esac
	case " ${scenarios:-phases array} " in *" array "*)
		scenario "qemu array mode=ad $MMU=$npt interval=1s" run_array $npt
		;;
	esac
	# The Linux L2 with npt=1 only: under the shadow MMU (npt=0) it printed nothing for 300 s (docs/lab.md).
	case " ${scenarios:-phases array} " in *" owners "*)
		[ $npt = 0 ] || scenario "qemu owners mode=ad $MMU=$npt interval=1s" run_owners $npt
		;;
	esac
	unload_kvm
done
lab_end
