# Sourced by the phase-checking /init scripts of L1 (record_init.sh, qemu_init.sh) after l1_prelude.sh:
# one scenario (a traced L2 guest whose trace check_phases holds to its phase log) run and reported.

# scenario WHAT FN ARGS...: runs FN ARGS, one scenario, which leaves its files in $d, its start in $t0,
# ok=1 when all but the trace check held, check = check_phases' exit code, and in $files the files of $d
# to show on failure; then reports it (report). The lab's retry rule (tests/lib/lab.bash) runs it once more,
# saying why, in one case only: L2 was reset (QEMU's bye: guest-reset) without its IDT handler reporting a
# vector (driver.err), a triple fault that reached no handler. Seen in 2 of about 100 npt=1 QEMU scenarios
# (mode ad, on 6.1 and on 6.12) and once before in mode dirty-log, never with hvmtrace-vmm (which has no
# interrupt controller); the cause is open (docs/lab.md, known issues). Anything else fails: a wrong set
# (check exit 1), and too few exact intervals (exit 3), since each phase lasts until the tracer has
# harvested enough whole intervals inside it (--hold-intervals).
scenario() {
	what=$1
	shift
	"$@"
	if [ "$check" != 1 ] && grep -q 'QEMU stops the VM: guest-reset' "$d/record.err" &&
		! grep -qs 'reached the guest' "$d/driver.err"; then
		echo "lab: $what: RERUN: L2 was reset by a triple fault that reached no handler: $(tail -n 1 "$d/driver.err")"
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
