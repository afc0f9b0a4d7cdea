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
# labqemuscenarios=phases,array,owners,damon,damon-host the scenarios (default: phases and array);
# labintervals=1s,100ms the phases scenarios' intervals (default both); labtdp=1,0 the MMU settings
# (l1_prelude.sh).
modes=$(sed -n 's/.*labqemumodes=\([a-z,-]*\).*/\1/p' /proc/cmdline | tr , ' ')
scenarios=$(sed -n 's/.*labqemuscenarios=\([a-z,-]*\).*/\1/p' /proc/cmdline | tr , ' ')
intervals=$(sed -n 's/.*labintervals=\([0-9a-z,]*\).*/\1/p' /proc/cmdline | tr , ' ')
# The Intel tier's L2 runs with IF=1 (phases_if.elf): Bochs 2.7 gives L1 no external-interrupt exit while L2
# runs with IF=0, and the payload spins without exits while it waits for the driver, so L1 starved (seen:
# no VM exit for minutes after the guest's first page faults; docs/lab.md §6). microvm without its PIT and
# PIC, so that no interrupt is raised for it (phases_if.elf masks the 8259s too, for the pc machine).
PHASES_ELF=/lab/phases.elf MICROVM=microvm
[ "$KVM_VENDOR" = kvm_amd ] || PHASES_ELF=/lab/phases_if.elf MICROVM=microvm,pit=off,pic=off
# labdamonattrs=S,A,MIN,MAX/... and labdamonloads=array,build: the damon scenarios' runs, one per set and load
# (default DAMON's own attributes, the array program); labdamonsecs=N the build-like load's seconds.
damon_attrs=$(sed -n 's|.*labdamonattrs=\([0-9,/]*\).*|\1|p' /proc/cmdline | tr / ' ')
damon_loads=$(sed -n 's/.*labdamonloads=\([a-z,]*\).*/\1/p' /proc/cmdline | tr , ' ')
damon_secs=$(sed -n 's/.*labdamonsecs=\([0-9]*\).*/\1/p' /proc/cmdline)

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

# linux_l2_start DIR RAM APPEND [QEMU ARGS...]: the built-in Linux guest as L2 under QEMU -M pc -accel kvm on
# L1's CPU 0, 512 MiB of RAM in the shared tmpfs file RAM, the kernel command line APPEND after the console
# settings, its first serial port stamped line by line into DIR/console (stamp_lines, for the clocks), the
# hvmtrace object at DIR/vm.sock, QEMU's output in DIR/qemu.err; sets qemu (timeout's pid) and stamp.
linux_l2_start() {
	l2_dir=$1 l2_ram=$2 l2_append=$3
	shift 3
	mkfifo "$l2_dir/serial"
	stamp_lines <"$l2_dir/serial" >"$l2_dir/console" &
	stamp=$!
	taskset -c 0 timeout 600 qemu-system-x86_64 -L /lab/qemu-data -M pc -accel kvm -cpu host -m 512M -smp 1 \
		-object "memory-backend-file,id=ram,size=512M,mem-path=$l2_ram,share=on" \
		-machine memory-backend=ram -kernel /lab/guest/vmlinux -initrd /lab/guest/initrd.gz -no-reboot \
		-nodefaults -vga none -display none -append "console=ttyS0 quiet panic=-1 $l2_append" \
		-serial "file:$l2_dir/serial" -object "hvmtrace,id=tr0,path=$l2_dir/vm.sock" "$@" \
		>"$l2_dir/qemu.err" 2>&1 &
	qemu=$!
}

# linux_l2_end RAM: after QEMU ended, the console's stamper (it ends at the fifo's end; a QEMU that died
# before opening it leaves it waiting) and the RAM file.
linux_l2_end() {
	for _ in $(seq 50); do kill -0 $stamp 2>/dev/null || break; sleep 0.1; done
	kill $stamp 2>/dev/null
	rm -f "$1"
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
	linux_l2_start "$d" /dev/shm/ram-owners "hvt.size=16777216 hvt.phase=5 hvt.owners=1" \
		-device virtio-serial-pci -chardev "socket,id=owners0,path=$d/owners.sock,server=on,wait=off" \
		-device virtserialport,chardev=owners0,name=org.hvmtrace.owners.0
	echo "lab: owners npt=$1: QEMU started"
	l1_wait $qemu [ -S "$d/vm.sock" ] && l1_wait $qemu [ -S "$d/owners.sock" ] || ok=0
	timeout 600 hvmtrace record --attach "$d/vm.sock" --owners-port "$d/owners.sock" --mode ad \
		--cpu "$TRACER_CPU" --interval 1s -o "$d/t.hvt" --jsonl "$d/rec.jsonl" 2>"$d/record.err" || ok=0
	wait "$qemu"
	linux_l2_end /dev/shm/ram-owners
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

# damon_c_recall RECORD CONSOLE OFFSET_NS: of the windows of a DAMON record (times moved by OFFSET_NS onto
# L1's clock) that lie wholly between the console's "HVT PHASE copy" and "HVT PHASE done" (stamped by
# stamp_lines on L1's clock), the share of the array's c (its "HVT C-RUN GFN COUNT" runs) inside DAMON's
# regions with nr_accesses >= 1. The array program reads or writes every page of c many times a window in
# both phases, so c is in every window's truth: this is DAMON's recall of the workload's own pages,
# apart from the kernel's and the recorders' (docs/score.md). Prints "windows N c_pages P mean M min m".
damon_c_recall() {
	awk '$2 == "HVT" && $3 == "C-RUN" { print $4, $5 }' "$2" | sort -n >"$2.c"
	ph_copy=$(awk '$2 == "HVT" && $3 == "PHASE" && $4 == "copy" { print $1; exit }' "$2")
	ph_done=$(awk '$2 == "HVT" && $3 == "PHASE" && $4 == "done" { print $1; exit }' "$2")
	awk -v off="$3" -v from="${ph_copy:-0}" -v to="${ph_done:-0}" '
	function window(   i, j, lo, hi, seen, r) {
		if (nr == 0)
			return
		if (have_prev && prev + off >= from && t + off <= to) {
			seen = 0
			i = 1; j = 1
			while (i <= nc && j <= nr) {
				lo = cs[i] > rs[j] ? cs[i] : rs[j]
				hi = ce[i] < re[j] ? ce[i] : re[j]
				if (hi > lo && ra[j] >= 1)
					seen += hi - lo
				if (ce[i] < re[j]) i++; else j++
			}
			r = seen / cpages
			w++; sum += r
			if (w == 1 || r < min) min = r
		}
		prev = t; have_prev = 1; nr = 0
	}
	FILENAME == ARGV[1] { nc++; cs[nc] = $1; ce[nc] = $1 + $2; cpages += $2; next }
	$1 ~ /^[0-9]+$/ {
		if ($1 != t) { window(); t = $1 }
		nr++; rs[nr] = int($2 / 4096); re[nr] = int($3 / 4096); ra[nr] = $4
	}
	END {
		window()
		printf "windows %d c_pages %d mean %.4f min %.4f\n", w, cpages, w ? sum / w : 0, w ? min : 0
	}' "$2.c" "$1"
}

# score_check NAME SCORE C_RECALL FLOOR: the checks on one scored record, appended to $d/check.out: every
# snapshot scored but at most 5 % (a window that holds no interval's midpoint is not: here, where the
# tracer missed its 20 ms deadlines by more than a window), precision and recall present and in [0, 1],
# c's mean recall (damon_c_recall) at least FLOOR (FLOOR -: no c, a load other than the array). Prints the score's overall lines and the c line, each
# prefixed, for the host side to keep.
score_check() {
	sed -n '/^overall:/,$s|^|lab: SCORE '"$1"': |p' "$2"
	[ "$4" = - ] || echo "lab: SCORE $1: array c recall: $3"
	awk -v name="$1" -v c="$3" -v floor="$4" '
	/^overall:/ { scored = $2; of = $4; what = $5 }
	/^precision / { p = $2; r = $4; have = 1 }
	END {
		split(c, f, " ")
		bad = 0
		if (!(of > 0 && scored >= 0.95 * of && what == "snapshots")) { print name ": " scored " of " of " snapshots scored"; bad = 1 }
		if (!have || p !~ /^[0-9.]+$/ || p < 0 || p > 1 || r < 0 || r > 1) { print name ": precision or recall missing or outside [0, 1]"; bad = 1 }
		if (floor != "-" && !(f[2] > 0 && f[6] >= floor)) { print name ": the array c recall " f[6] " over " f[2] " windows is under " floor; bad = 1 }
		if (!bad) print name ": " scored " snapshots scored, precision " p ", recall " r (floor == "-" ? "" : ", c recall " f[6] " (floor " floor ")")
		exit bad
	}' "$2" >>"$d/check.out"
}

# run_damon NPT HOST LOAD ATTRS: the built-in Linux guest as in run_owners, running the array program (16 MiB
# arrays, 5 s phases) with DAMON recording inside it (hvt.damon: paddr, attributes ATTRS; the record
# leaves by L2's second serial port into a file of L1), traced in mode ad at 20 ms (a few intervals per
# 100 ms DAMON window), then `hvmtrace score` in L1: in mode ad precision is measured too. The record's
# clock (L2's CLOCK_MONOTONIC, kvm-clock: L2's own TSC calibration drifted by -0.5 % to +0.2 % here) is
# moved onto the trace's (L1's) by the mean of the offsets at the two sync points (the guest's console
# lines stamped by stamp_lines), whose difference must be under one of the record's windows.
# With HOST=1, DAMON also runs in L1 (vaddr on QEMU's process, the same attributes) during the same run;
# its record, on L1's own clock, is moved to guest-physical addresses with QEMU's guest-RAM mapping
# (scripts/damon-hva-to-gpa.sh) and scored against the same trace.
# LOAD (array, or build: the build-like load as make score runs it, hvt.run=build for labdamonsecs seconds
# with 2 compilations) and ATTRS (DAMON's S,A,MIN,MAX, both sides) choose the run; c's recall is checked
# for the array only (the build has no c).
DAMON_C_FLOOR=0.5
run_damon() {
	tag="npt=$1 host=$2 load=$3 attrs=$4"
	d=/tmp/damon-$1-$2-$3-$(echo "$4" | tr , -)
	case $3 in
	array) run="hvt.size=16777216 hvt.phase=5" ;;
	*) run="hvt.run=build hvt.seconds=${damon_secs:-12} hvt.jobs=2" ;;
	esac
	rm -rf "$d" && mkdir -p "$d"
	t0=$(cut -d' ' -f1 /proc/uptime)
	ok=1 check=2
	files="qemu.err record.err console score.err"
	ram=/dev/shm/ram-damon
	linux_l2_start "$d" $ram "clocksource=kvm-clock $run hvt.damon=$4" -serial "file:$d/damon.raw"
	echo "lab: damon $tag: QEMU started"
	l1_wait $qemu [ -S "$d/vm.sock" ] || ok=0
	timeout 600 hvmtrace record --attach "$d/vm.sock" --mode ad --cpu "$TRACER_CPU" --interval 20ms \
		-o "$d/t.hvt" --jsonl "$d/rec.jsonl" 2>"$d/record.err" &
	rec=$!
	if [ "$2" = 1 ]; then
		files="$files host.err"
		# QEMU's own pid ($qemu is timeout's) and its mapping of the guest's RAM file, there once record has
		# attached: "START-END PERMS OFFSET ...", GPA = OFFSET + (HVA - START). The map starts at 1 MiB: below
		# lie the pc machine's legacy VGA and ROM holes, not RAM slots (the guest's own DAMON starts there too).
		l1_wait $rec grep -q 'attached to VM' "$d/record.err" || ok=0
		qpid=$(for p in /proc/[0-9]*; do grep -qs "$ram" "$p/maps" && echo "${p#/proc/}"; done | head -n 1)
		awk -v f="$ram" '$6 == f { split($1, a, "-"); print "0x" a[1], "0x" a[2], "0x" $3 }' \
			"/proc/$qpid/maps" >"$d/maps" || ok=0
		while read -r s e o; do
			if [ $((o)) -lt 1048576 ]; then
				echo "$((s + 1048576 - o)) $((e)) 1048576"
			else
				echo "$((s)) $((e)) $((o))"
			fi
		done <"$d/maps" >"$d/hva.map"
		echo "lab: damon $tag: QEMU pid $qpid, guest RAM at $(cat "$d/maps")"
		# shellcheck disable=SC2046 # the attributes, one word each
		damon-record start $(echo "$4" | tr , ' ') "$qpid" 2>"$d/host.err" || ok=0
		# Until the array program is done: DAMON stops by itself once its target exits.
		l1_wait $qemu grep -q 'HVT PHASE done' "$d/console"
		damon-record stop >"$d/host.rec" 2>>"$d/host.err" || ok=0
	fi
	wait $rec || ok=0
	wait "$qemu"
	linux_l2_end $ram
	grep -E "attached|intervals recorded" "$d/record.err" | sed 's|^|lab: |'
	grep -E "HVT (PHASE|EXIT|DAMON)" "$d/console" | sed "s|^|lab: damon $tag: |"
	grep -q "in ad mode" "$d/record.err" && grep -q "HVT EXIT 0" "$d/console" || ok=0
	tr -d '\r' <"$d/damon.raw" >"$d/damon.rec"
	hs=$(awk '$2 == "HVT" && $3 == "DAMON-SYNC" && $4 == "start" { print $1; exit }' "$d/console")
	he=$(awk '$2 == "HVT" && $3 == "DAMON-SYNC" && $4 == "end" { print $1; exit }' "$d/console")
	gs=$(awk '$1 == "#" && $2 == "sync" && $3 == "start" { print $4; exit }' "$d/damon.rec")
	ge=$(awk '$1 == "#" && $2 == "sync" && $3 == "end" { print $4; exit }' "$d/damon.rec")
	# check stays 2 when L2 did not get to the end (the lab's retry rule looks at a reset then).
	if [ -z "$hs" ] || [ -z "$he" ] || [ -z "$gs" ] || [ -z "$ge" ]; then
		echo "a sync point is missing in the console or the record" >"$d/check.out"
		return
	fi
	check=1
	# The mean of the two offsets: on a clock drifting at a steady rate, off by at most half their difference.
	off=$(((hs - gs + he - ge) / 2)) drift=$((he - ge - hs + gs))
	# The record's mean window (DAMON's windows run longer than aggr_us here: a slow sampling loop).
	window=$(awk '$1 ~ /^[0-9]/ && $1 != t { n++; t = $1; if (n == 1) first = t }
		END { printf "%d", (n > 1 ? (t - first) / (n - 1) : 0) }' "$d/damon.rec")
	echo "lab: damon $tag: guest->L1 clock offset $((hs - gs)) ns at the start, $drift ns more at the end;" \
		"$(awk '$1 ~ /^[0-9]/ { t[$1] = 1 } END { n = 0; for (k in t) n++; print n }' "$d/damon.rec") snapshots," \
		"$window ns a window"
	# A written page whose A bit someone else cleared (KVM's clear_young, for DAMON on the host) shows up
	# as written but not accessed: the trace's own count of what host aging took from it (docs/kvm-ad.md).
	echo "lab: damon $tag: trace: $(hvmtrace report --json "$d/t.hvt" 2>/dev/null |
		grep -oE '"(intervals|deadlines_missed|written_not_accessed)": *[0-9]+' | tr -d '" ' | tr '\n' ' ')"
	: >"$d/check.out"
	hvmtrace score "$d/t.hvt" --damon "$d/damon.rec" --record-clock trace --offset "${off}ns" \
		>"$d/score.txt" 2>"$d/score.err" || return
	sed "s|^|lab: damon $tag: guest: |" "$d/score.txt"
	check=0
	# Scored either way, so a failed run still shows its numbers.
	[ "${drift#-}" -le "$window" ] || { echo "clocks apart: $drift ns, over a window" >>"$d/check.out"; check=1; }
	crec="" floor=-
	[ "$3" != array ] || crec=$(damon_c_recall "$d/damon.rec" "$d/console" $off) floor=$DAMON_C_FLOOR
	score_check "guest $tag" "$d/score.txt" "$crec" $floor || check=1
	echo "clocks: the end's offset $drift ns from the start's, a window $window ns" >>"$d/check.out"
	[ "$2" = 1 ] || return
	sed "s|^|lab: damon $tag: host.rec: |" "$d/maps" "$d/hva.map"
	echo "lab: damon $tag: host.rec: $(grep -c '^[0-9]' "$d/host.rec") regions, $(head -n 2 "$d/host.rec" | tail -n 1)"
	if damon-hva-to-gpa "$d/hva.map" "$d/host.rec" >"$d/host-gpa.rec" 2>>"$d/score.err" &&
		hvmtrace score "$d/t.hvt" --damon "$d/host-gpa.rec" --record-clock trace >"$d/host-score.txt" \
			2>>"$d/score.err"; then
		sed "s|^|lab: damon $tag: host: |" "$d/host-score.txt"
		crec="" floor=-
		[ "$3" != array ] || crec=$(damon_c_recall "$d/host-gpa.rec" "$d/console" 0) floor=0
		score_check "host $tag" "$d/host-score.txt" "$crec" $floor || check=1
	else
		check=1
	fi
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
	# DAMON inside L2 and, with damon-host, in L1 over QEMU's address space beside it (npt=1 only, as owners).
	case " ${scenarios:-phases array} " in *" damon "*)
		[ $npt = 0 ] || for l in ${damon_loads:-array}; do for a in ${damon_attrs:-5000,100000,10,1000}; do
			scenario "qemu damon guest mode=ad npt=$npt interval=20ms load=$l attrs=$a" run_damon $npt 0 "$l" "$a"
		done; done
		;;
	esac
	case " ${scenarios:-phases array} " in *" damon-host "*)
		[ $npt = 0 ] || for l in ${damon_loads:-array}; do for a in ${damon_attrs:-5000,100000,10,1000}; do
			scenario "qemu damon guest+host mode=ad npt=$npt interval=20ms load=$l attrs=$a" run_damon $npt 1 "$l" "$a"
		done; done
		;;
	esac
	unload_kvm
done
lab_end
