# The patched QEMU (scripts/build-qemu.sh) and the PVH phase payload under it (sourced after assert.bash).

# need_qemu: the patched QEMU build (make check builds it first). Sets QEMU and QEMU_L (the -L options it
# needs: its own option ROMs, Debian's SeaBIOS and qboot).
# HVMTRACE_QEMU_DIR=DIR (a directory like the one build-qemu.sh prints) tests a QEMU built elsewhere, e.g.
# a working tree while developing the patches.
need_qemu() {
	local dir=${HVMTRACE_QEMU_DIR:-}
	[ -n "$dir" ] || dir=$("$ROOT/scripts/build-qemu.sh" --check) || fail "patched QEMU is not built: run make qemu"
	QEMU=$dir/qemu-system-x86_64
	QEMU_L=(-L "$dir/optionrom" -L /usr/share/seabios -L /usr/share/qemu) # the last: qboot for microvm
}

# guest_linux: the built-in Linux guest (scripts/guest-workloads.sh: Debian's kernel, and an initramfs with
# BUILD's guest programs) as $kernel and $initrd.
guest_linux() {
	{ read -r kernel; read -r initrd; } < <("$ROOT/scripts/guest-workloads.sh" "$BUILD")
	[ -f "$kernel" ] && [ -f "$initrd" ] || fail "no guest kernel or initramfs (scripts/guest-workloads.sh)"
}

# make_shm: a directory on tmpfs ($SHM, removed at exit) for guest RAM files. Guest RAM in a file on disk
# makes every first touch of a page a filesystem block allocation (milliseconds), not a payload's write.
make_shm() {
	SHM=$(mktemp -d /dev/shm/hvmtrace-test.XXXXXX) || fail "cannot create a directory in /dev/shm"
}

# start_phases_qemu DIR [QEMU ARGS...]: patched QEMU (-M microvm under KVM, on $VCPU_CPU) booting the PVH
# phase payload (phases.elf). Its 4 GiB of guest RAM (0-3 GiB and 4-5 GiB) is the tmpfs file $RAM, which
# `qemu_phases prepare` fills first with the payload PAYLOAD (an array of its options, default
# (--payload phases4)). QMP on DIR/qmp.sock, stderr in DIR/qemu.err; returns once QMP listens. Sets RAM and
# QEMU_PID. QEMU_ACCEL (default kvm) is the -accel option, e.g. kvm,dirty-ring-size=1024.
start_phases_qemu() {
	local d=$1 elf=$ROOT/$BUILD/guest/phases.elf payload=("${PAYLOAD[@]}")
	shift
	[ ${#payload[@]} -gt 0 ] || payload=(--payload phases4)
	[ -f "$elf" ] || fail "$elf not built"
	[ -n "${SHM:-}" ] || make_shm
	RAM=$SHM/ram-$(basename "$d")
	mkdir -p "$d"
	"$TOOLS/qemu_phases" prepare --ram "$RAM" --low-ram 3G --high-ram 1G "${payload[@]}" ||
		fail "qemu_phases prepare"
	taskset -c $VCPU_CPU timeout 300 "$QEMU" "${QEMU_L[@]}" -M microvm -accel "${QEMU_ACCEL:-kvm}" -cpu qemu64 -m 4G \
		-object "memory-backend-file,id=ram,size=4G,mem-path=$RAM,share=on" -machine memory-backend=ram \
		-kernel "$elf" -no-reboot -nodefaults -display none -qmp "unix:$d/qmp.sock,server=on,wait=off" \
		"$@" 2>"$d/qemu.err" &
	QEMU_PID=$!
	BG_PIDS+=($!)
	wait_socket "$d/qmp.sock"
}
