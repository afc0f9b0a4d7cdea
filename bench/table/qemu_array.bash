# Sourced by the QEMU rows of make bench (qemu_peer.sh, qemu_ring.sh): the patched QEMU running the array
# payload, brought to its steady state. The caller sets qdir (the QEMU build), BUILD, TOOLS, T, SHM and
# ARRAY (the array's size), and keeps pids (killed at its exit).

# qemu_array_start NAME SIZE ACCEL: QEMU (microvm, -accel ACCEL, SIZE of RAM in the sparse file $SHM/NAME:
# 3 GiB below the PCI hole, the rest above it; its threads named for perf) with the hvmtrace object on
# $T/NAME/vm.sock and QMP on $T/NAME/qmp.sock, the array payload in its copy phase for longer than any
# measurement, returning once the first pass made the array resident. Sets QEMU_PID, QMP and SOCK; on
# failure returns 1 with the reason in QEMU_ERR (and stops the QEMU it started).
qemu_array_start() {
	local name=$1 size=$2 accel=$3 d=$T/$1 high=$((${2%G} - 3))G
	mkdir -p "$d"
	rm -f "$SHM/$name"
	"$TOOLS/qemu_phases" prepare --ram "$SHM/$name" --low-ram 3G --high-ram $high --payload array \
		--array-size "$ARRAY" >&2 || { QEMU_ERR="qemu_phases prepare failed" && return 1; }
	taskset -c 0 "$qdir/qemu-system-x86_64" -L "$qdir/optionrom" -L /usr/share/seabios -L /usr/share/qemu \
		-M microvm -accel "$accel" -cpu qemu64 -m "$size" -name bench,debug-threads=on \
		-object "memory-backend-file,id=ram,size=$size,mem-path=$SHM/$name,share=on" -machine memory-backend=ram \
		-kernel "$BUILD/guest/phases.elf" -no-reboot -nodefaults -display none \
		-qmp "unix:$d/qmp.sock,server=on,wait=off" -object "hvmtrace,id=tr0,path=$d/vm.sock" \
		>/dev/null 2>"$d/qemu.err" &
	QEMU_PID=$!
	pids+=($!)
	QMP=$d/qmp.sock SOCK=$d/vm.sock
	for _ in $(seq 300); do [ -S "$QMP" ] && [ -S "$SOCK" ] && break; kill -0 $QEMU_PID 2>/dev/null || break; sleep 0.1; done
	if [ ! -S "$SOCK" ]; then
		QEMU_ERR="QEMU did not start: $(cat "$d/qemu.err")"
	elif ! "$TOOLS/qemu_phases" ready --ram "$SHM/$name" --low-ram 3G --high-ram $high --pid $QEMU_PID >&2; then
		QEMU_ERR="the guest did not boot: $(cat "$d/qemu.err")"
	else
		"$TOOLS/qemu_phases" run --ram "$SHM/$name" --low-ram 3G --high-ram $high --payload array \
			--array-size "$ARRAY" --hold 600s --phase-log "$d/phases.jsonl" --pid $QEMU_PID >/dev/null \
			2>"$d/phases.err" &
		pids+=($!)
		until grep -q '"type":"pass"' "$d/phases.jsonl" 2>/dev/null; do
			kill -0 $QEMU_PID 2>/dev/null || break
			sleep 0.1
		done
		grep -q '"type":"pass"' "$d/phases.jsonl" 2>/dev/null && return 0
		QEMU_ERR="QEMU stopped: $(cat "$d/qemu.err" "$d/phases.err")"
	fi
	kill $QEMU_PID 2>/dev/null
	wait $QEMU_PID 2>/dev/null
	return 1
}
