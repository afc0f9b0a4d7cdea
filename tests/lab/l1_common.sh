# Sourced by the nested lab's L1 /init scripts (record_init.sh, qemu_init.sh): mounts, the KVM modules
# L1 needs before kvm-amd, and kvm-amd loading per npt setting. Sets result=PASS (scenarios set FAIL).
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
echo "LAB-L1-UP uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r) cpus=$(nproc)"
cd /lab || exit 1
result=PASS
insmod ./irqbypass.ko && insmod ./ccp.ko && insmod ./kvm.ko || result=FAIL
# Where the KVM modules' code sections are, on the second serial port, so the host can place a hung L1's
# addresses in them (tests/integration/common.bash, lab_where; reading /proc/kallsyms costs ~10 s here).
code_sections() {
	for f in /sys/module/"$1"/sections/.*text*; do echo "$(cat "$f") $1 ${f##*/}"; done >/dev/ttyS1 2>/dev/null
}
code_sections kvm
# Sanitized test builds: leak checking needs nothing from the lab, but keep it quiet and fatal-free.
export ASAN_OPTIONS=detect_leaks=0

# load_kvm_amd NPT: our kvm-amd.ko with npt=NPT (1: TDP MMU, 0: shadow MMU); says which, or FAIL.
load_kvm_amd() {
	if ! insmod ./kvm-amd.ko npt="$1"; then
		echo "LAB npt=$1 FAIL cannot load kvm-amd.ko"
		result=FAIL
		return 1
	fi
	echo "LAB npt=$1 kvm_amd.npt=$(cat /sys/module/kvm_amd/parameters/npt)"
	code_sections kvm_amd
}

unload_kvm_amd() {
	for _ in 1 2 3 4 5; do rmmod kvm_amd 2>/dev/null && return; sleep 1; done
}

lab_end() {
	echo "LAB-RESULT $result uptime=$(cut -d' ' -f1 /proc/uptime)"
	poweroff -f
}

# scenario WHAT FN ARGS...: runs FN ARGS, one scenario, which leaves its files in $d, its start in $t0,
# ok=1 when all but the trace check held, check = check_phases' exit code, and in $files the files of $d
# to show on failure; then reports it (report). A wrong set (check exit 1) is never run again, but two
# failures that are not about the sets run the scenario once more, saying why:
# - too few exact intervals (exit 3) after the tracer missed deadlines: L1 stopped for seconds under TCG
#   (RCU stall warnings name both its CPUs), so the run had fewer intervals than planned;
# - L2 reset (QEMU's bye: guest-reset) without its IDT handler reporting a vector (driver.err): a triple
#   fault that reached no handler, cause open (docs/lab.md §5).
scenario() {
	what=$1
	shift
	"$@"
	missed=$(sed -n 's/.*recorded (\([0-9]*\) deadlines missed).*/\1/p' "$d/record.err")
	why=""
	if [ "$ok" = 1 ] && [ "$check" = 3 ] && [ "${missed:-0}" -gt 0 ]; then
		why="the tracer missed $missed deadlines (L1 stalled), leaving too few exact intervals:"
		why="$why $(grep -E '^(only|phase [0-9]+: only)' "$d/check.out" | tr '\n' ' ')"
	elif [ "$check" != 1 ] && grep -q 'QEMU stops the VM: guest-reset' "$d/record.err" &&
		! grep -qs 'reached the guest' "$d/driver.err"; then
		why="L2 was reset by a triple fault that reached no handler: $(tail -n 1 "$d/driver.err")"
	fi
	if [ -n "$why" ]; then
		echo "lab: $what: RERUN: $why"
		"$@"
	fi
	[ "$check" = 0 ] || ok=0
	# shellcheck disable=SC2086
	report "$what" "$ok" "$t0" "$d" $files
}

# report WHAT OK T0 DIR FILE...: the scenario's "CHECK WHAT PASS|FAIL (checker summary; …)" line from
# DIR/check.out; on failure also the last lines of each FILE in DIR and the checker's mismatches.
report() {
	what=$1 ok=$2 t0=$3 d=$4
	shift 4
	summary=$(tail -n 1 "$d/check.out")
	if [ "$ok" = 1 ]; then
		echo "CHECK $what PASS ($summary; L1 uptime $t0..$(cut -d' ' -f1 /proc/uptime) s)"
		return
	fi
	echo "CHECK $what FAIL ($summary)"
	for f in "$@"; do sed "s|^|lab: $f: |" "$d/$f" | tail -n 20; done
	grep -B3 -A3 MISMATCH "$d/check.out" | sed "s|^|lab: check.out: |" | head -n 60
	result=FAIL
}
