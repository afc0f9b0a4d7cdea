# Shared by the integration tests (sourced; not a test itself).
# BUILD is the build directory under test (tests/run.sh exports it).
set -u
BUILD=${BUILD:-build/check}
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$ROOT" || exit 1
BIN=$ROOT/$BUILD/bin
TOOLS=$ROOT/$BUILD/tests/tools
T=$(mktemp -d /tmp/hvmtrace-test.XXXXXX)
chmod 755 "$T"
BG_PIDS=()

cleanup() {
	# Children first: a background "timeout QEMU …" must not leave QEMU behind.
	for p in "${BG_PIDS[@]}"; do
		pkill -9 -P "$p" 2>/dev/null
		kill -9 "$p" 2>/dev/null
	done
	# ... and whatever else still works in this test's directory (the other side of a pipeline).
	pkill -9 -f "$T/" 2>/dev/null
	wait 2>/dev/null
	if [ "${KEEP_TEST_DIR:-0}" = 1 ]; then echo "test files kept in $T"; else rm -rf "$T"; fi
	[ -z "${SHM:-}" ] || rm -rf "$SHM"
}

# make_shm: a directory on tmpfs ($SHM, removed at exit) for guest RAM files. Guest RAM in a file on disk
# makes every first touch of a page a filesystem block allocation (milliseconds), not a payload's write.
make_shm() {
	SHM=$(mktemp -d /dev/shm/hvmtrace-test.XXXXXX) || fail "cannot create a directory in /dev/shm"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

skip() {
	echo "$*"
	exit 77
}

need_kvm() {
	[ -c /dev/kvm ] || skip "no /dev/kvm on this machine"
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || skip "/dev/kvm is not accessible to $(id -un)"
}

# Waits up to $2 seconds (default 10) for the socket $1 to appear.
wait_socket() {
	local i
	for ((i = 0; i < ${2:-10} * 20; i++)); do
		[ -S "$1" ] && return 0
		sleep 0.05
	done
	fail "socket $1 did not appear"
}

# start_vmm SOCK ARGS...: hvmtrace-vmm listening on SOCK, in the background; sets VMM_PID.
start_vmm() {
	local sock=$1
	shift
	"$BIN/hvmtrace-vmm" --listen "$sock" "$@" >"$T/vmm.out" 2>&1 &
	VMM_PID=$!
	BG_PIDS+=("$VMM_PID")
	wait_socket "$sock"
}

# The CPUs tests pin to: the VM's vCPU on the first, the tracer and harvest thread on the last.
NCPUS=$(nproc)
VCPU_CPU=0
TRACER_CPU=$((NCPUS - 1))

assert_eq() { # what expected actual
	[ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
}

assert_contains() { # file text
	grep -qF -- "$2" "$1" || {
		echo "--- $1:"
		cat "$1"
		fail "$1 does not say '$2'"
	}
}

# expect EXIT TEXT COMMAND...: runs COMMAND, which must exit EXIT and say TEXT on stderr.
expect() {
	local want=$1 text=$2 rc=0
	shift 2
	"$@" >"$T/out" 2>"$T/err" || rc=$?
	[ "$rc" = "$want" ] || {
		cat "$T/err"
		fail "'$*' exited $rc, expected $want"
	}
	assert_contains "$T/err" "$text"
	echo "ok ($rc): $* -> $(head -c 300 "$T/err" | tr '\n' ' ')"
}

# trace_phases INTERVAL PHASE_TIME MIN_INSIDE: traces the phases4 payload from start to end and checks
# it page by page against the VMM's phase log; the JSON Lines written while recording must equal the
# trace's export.
trace_phases() {
	start_vmm "$T/vmm.sock" --payload phases4 --phase-time "$2" --wait-attach \
		--phase-log "$T/phases.jsonl" --vcpu-cpu $VCPU_CPU
	"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval "$1" -o "$T/t.hvt" \
		--jsonl "$T/rec.jsonl" 2>"$T/record.err" || {
		cat "$T/record.err" "$T/vmm.out"
		fail "record failed"
	}
	cat "$T/record.err"
	wait "$VMM_PID" || fail "the VMM failed: $(cat "$T/vmm.out")"
	"$TOOLS/check_phases" --trace "$T/t.hvt" --phase-log "$T/phases.jsonl" --min-inside "$3" ||
		fail "trace does not match the phases"
	"$BIN/hvmtrace" export --jsonl "$T/export.jsonl" "$T/t.hvt" || fail "export failed"
	cmp "$T/rec.jsonl" "$T/export.jsonl" || fail "the recorded JSON Lines differ from the export"
}

# qemu_dir: the patched QEMU build (scripts/build-qemu.sh; make check builds it first). Sets QEMU and QEMU_L
# (the -L options it needs: its own option ROMs, Debian's SeaBIOS and qboot).
# HVMTRACE_QEMU_DIR=DIR (a directory like the one build-qemu.sh prints) tests a QEMU built elsewhere, e.g.
# a working tree while developing the patches.
need_qemu() {
	local dir=${HVMTRACE_QEMU_DIR:-}
	[ -n "$dir" ] || dir=$("$ROOT/scripts/build-qemu.sh" --check) || fail "patched QEMU is not built: run make qemu"
	QEMU=$dir/qemu-system-x86_64
	QEMU_L=(-L "$dir/optionrom" -L /usr/share/seabios -L /usr/share/qemu) # the last: qboot for microvm
}

# start_phases_qemu DIR [QEMU ARGS...]: patched QEMU (-M microvm under KVM, on $VCPU_CPU) booting the PVH
# phase payload (phases.elf). Its 4 GiB of guest RAM (0-3 GiB and 4-5 GiB) is the tmpfs file $RAM, which
# `qemu_phases prepare --payload phases4` fills first. QMP on DIR/qmp.sock, stderr in DIR/qemu.err; returns
# once QMP listens. Sets RAM and QEMU_PID.
start_phases_qemu() {
	local d=$1 elf=$ROOT/$BUILD/guest/phases.elf
	shift
	[ -f "$elf" ] || fail "$elf not built"
	[ -n "${SHM:-}" ] || make_shm
	RAM=$SHM/ram-$(basename "$d")
	mkdir -p "$d"
	"$TOOLS/qemu_phases" prepare --ram "$RAM" --low-ram 3G --high-ram 1G --payload phases4 ||
		fail "qemu_phases prepare"
	taskset -c $VCPU_CPU timeout 300 "$QEMU" "${QEMU_L[@]}" -M microvm -accel kvm -cpu qemu64 -m 4G \
		-object "memory-backend-file,id=ram,size=4G,mem-path=$RAM,share=on" -machine memory-backend=ram \
		-kernel "$elf" -no-reboot -nodefaults -display none -qmp "unix:$d/qmp.sock,server=on,wait=off" \
		"$@" 2>"$d/qemu.err" &
	QEMU_PID=$!
	BG_PIDS+=($!)
	wait_socket "$d/qmp.sock" 20
}

# The nested lab (tests/lab/): Debian's kernel K (6.1|6.12) as L1 under TCG -cpu max with our KVM modules.
# lab_prepare K: sets LAB_KDIR (the guest kernel: PVH vmlinux and modules) and LAB_KVM_FILES (mkinitramfs.sh
# arguments putting the modules L1 loads, ours built by scripts/kvm-modules.sh as a user builds them, and
# tests/lab/l1_common.sh into /lab). Skips when the kernel's headers are missing.
lab_prepare() {
	local abi mods
	. "$ROOT/versions.env"
	case $1 in 6.1) abi=$KERNEL_6_1_ABI ;; 6.12) abi=$KERNEL_6_12_ABI ;; *) fail "LAB_KERNELS: no kernel '$1'" ;; esac
	[ -f "/usr/src/linux-headers-$abi/Makefile" ] ||
		skip "linux-headers-$abi not installed (scripts/install-deps.sh installs it)"
	LAB_KDIR=$(scripts/guest-kernel.sh -q "$1") || fail "guest kernel $1"
	mods=$(scripts/kvm-modules.sh -q "$abi" 2>"$T/mods-$1.err") || fail "kvm modules for $abi: $(tail -5 "$T/mods-$1.err")"
	LAB_KVM_FILES=(-f "$mods/kvm.ko:/lab/kvm.ko" -f "$mods/kvm-amd.ko:/lab/kvm-amd.ko"
		-f "$LAB_KDIR/modules/kernel/virt/lib/irqbypass.ko:/lab/irqbypass.ko"
		-f "$LAB_KDIR/modules/kernel/drivers/crypto/ccp/ccp.ko:/lab/ccp.ko"
		-f "$ROOT/tests/lab/l1_common.sh:/lab/l1_common.sh")
}

# lab_boot K INITRAMFS MEM_MIB APPEND KIND N: boots L1 with two CPUs (a vCPU thread on one, the tracer on
# the other, as on a real host), prints its LAB/CHECK/lab: lines, and fails unless it reported
# "LAB-RESULT PASS" with N "CHECK KIND … PASS" lines. The serial log is kept as $T/lab-K.log.
# L0 is the QEMU 10.0 we build (need_qemu), not Debian's 7.2: under 7.2 two-CPU L1s died where the kernel
# patches its own code, under 10.0 none did (docs/lab.md §5).
# loglevel=4: L1's warnings (lockups, oopses) reach the log, its boot chatter does not.
# An L1 that stops reporting is cut off after LAB_TIMEOUT seconds, where each of its CPUs was is printed
# (lab_where), and it is booted once more; so is an L1 whose QEMU exits without a result (a panic:
# panic=-1 and -no-reboot). The hangs and panics seen, and their causes: docs/lab.md §5.
# The output says which, with L1's first kernel report; $T/lab-K.bootN.log keeps each failed boot's log.
lab_boot() {
	local start wall n try pid s how first
	for try in 1 2; do
		start=$(date +%s%N)
		rm -f "$T/l1-$1.qmp"
		"$QEMU" "${QEMU_L[@]}" -accel tcg -cpu max -m "$3" -smp 2 -display none -no-reboot \
			-serial "file:$T/serial-$1.log" -serial "file:$T/sections-$1.txt" -monitor none \
			-qmp "unix:$T/l1-$1.qmp,server=on,wait=off" \
			-nodefaults -kernel "$LAB_KDIR/vmlinux" -initrd "$2" \
			-append "console=ttyS0 nokaslr panic=-1 loglevel=4 $4" </dev/null >"$T/qemu-$1.out" 2>&1 &
		pid=$!
		BG_PIDS+=("$pid")
		for ((s = 0; s < ${LAB_TIMEOUT:-400}; s++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 1
		done
		how="L1 STOPPED (QEMU exited) with no result"
		if kill -0 "$pid" 2>/dev/null; then
			how="L1 HUNG: no result"
			lab_where "$1"
			kill "$pid"
		fi
		wait "$pid" 2>/dev/null
		tr -d '\r' <"$T/serial-$1.log" >"$T/lab-$1.log"
		wall=$((($(date +%s%N) - start) / 1000000))
		grep -E '^(LAB|CHECK|lab:)' "$T/lab-$1.log"
		grep -q '^LAB-RESULT' "$T/lab-$1.log" && break
		# From L1's first oops, warning or stall report if there is one, else its last lines.
		first=$(grep -n -m1 -E 'Oops|BUG:|WARNING:|Kernel panic|rcu: INFO' "$T/lab-$1.log" | cut -d: -f1)
		echo "lab $1: $how after $wall ms; ${first:+from its first kernel report: }its lines:"
		if [ -n "$first" ]; then tail -n "+$first" "$T/lab-$1.log" | head -n 60; else tail -n 40 "$T/lab-$1.log"; fi |
			sed 's/^/  | /'
		cp "$T/lab-$1.log" "$T/lab-$1.boot$try.log"
		[ "$try" = 1 ] && echo "lab $1: booting L1 once more" || fail "lab $1: $how, twice"
	done
	if ! grep -q '^LAB-RESULT PASS' "$T/lab-$1.log"; then
		# At loglevel=4 whatever the kernel printed is a warning or worse (RCU stalls, oopses).
		grep -E '^\[ *[0-9]+\.[0-9]+\]' "$T/lab-$1.log" | head -n 30 | sed "s/^/lab $1: L1 kernel: /"
		fail "lab $1: $(grep -E '^(CHECK .*FAIL|LAB.*FAIL)' "$T/lab-$1.log" | head -5)"
	fi
	n=$(grep -c "^CHECK $5 .* PASS" "$T/lab-$1.log")
	[ "$n" -eq "$6" ] || fail "lab $1: $n of $6 $5 scenarios passed"
	echo "lab $1: $n $5 scenarios passed in $wall ms wall$([ "$try" = 2 ] && echo " (on the second boot; the first: $how)")"
}

# lab_where K: where L1's CPUs are (RIP and CPL, and for an address in the KVM modules, module, section and
# offset, from the section addresses L1 listed on its second serial port: `objdump -t` of the module in
# the kvm-modules cache names the function), read three times over 2 s through L0's QMP. Other kernel
# addresses stay numbers (L1 runs with nokaslr: the System.map of Debian's linux-image-ABI-dbg names them).
lab_where() {
	local i rip cpl
	tr -d '\r' <"$T/sections-$1.txt" | sed 's/^0x//' | sort -k1,1 >"$T/sections-$1.sorted"
	for i in 1 2 3; do
		"$TOOLS/qmp" "$T/l1-$1.qmp" \
			'{"execute":"human-monitor-command","arguments":{"command-line":"info registers -a"}}' |
			sed 's/\\r\\n/\n/g' | sed -n 's/^[RE]IP=\([0-9a-f]*\) .*\(CPL=[0-3]\).*/\1 \2/p' |
			while read -r rip cpl; do
				# Both are 16 hex digits: as strings they sort like the addresses (mawk has no strtonum,
				# and its numbers are doubles: the offset is bash's 64-bit arithmetic).
				set -- "$1" $(awk -v a="$rip" '($1 "") > (a "") { exit } { s = $0 } END { print s }' \
					"$T/sections-$1.sorted")
				if [ $# = 4 ] && [ $((0x$rip - 0x$2)) -lt $((4 << 20)) ]; then
					printf 'lab %s: L1 CPU at %s %s in %s %s+0x%x\n' "$1" "$rip" "$cpl" "$3" "$4" $((0x$rip - 0x$2))
				else
					echo "lab $1: L1 CPU at $rip $cpl"
				fi
			done
		sleep 1
	done
}
