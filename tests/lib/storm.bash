# Shared by the storm tests (tests/integration/storm_*.sh; sourced after assert.bash and vmm.bash): what a
# trace left by a tracer that was killed, stopped, starved or cut off must still hold.

# drop_torn_line FILE: removes a last line without its newline (a kill may tear the line being written).
drop_torn_line() {
	if [ -s "$1" ] && [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" != '\n' ]; then
		sed -i '$d' "$1"
	fi
}

# check_recovered WHAT TRACE JSONL WANT_EXIT...: exports TRACE, which must exit with one of WANT_EXIT
# (0 closed, 3 incomplete; the export goes to $T), and holds the complete lines of JSONL, the tracer's own stream, as their first
# lines, identical, with at most one interval more (written to the trace just before the tracer stopped).
# Sets RECOVERED (intervals exported) and WRITTEN (complete JSONL lines).
check_recovered() {
	local what=$1 trace=$2 jsonl=$3 rc=0 out=$T/$(basename "$2").export
	shift 3
	drop_torn_line "$jsonl"
	WRITTEN=$(wc -l <"$jsonl")
	"$BIN/hvmtrace" export --jsonl "$out" "$trace" 2>"$out.err" || rc=$?
	[[ " $* " == *" $rc "* ]] || {
		cat "$out.err"
		fail "$what: export exited $rc, expected one of: $*"
	}
	RECOVERED=$(wc -l <"$out")
	[ "$RECOVERED" -ge "$WRITTEN" ] && [ "$RECOVERED" -le $((WRITTEN + 1)) ] ||
		fail "$what: the trace holds $RECOVERED intervals, the tracer had finished $WRITTEN"
	head -n "$WRITTEN" "$out" | cmp -s - "$jsonl" ||
		fail "$what: the intervals in the trace differ from what the tracer wrote alongside"
}

# storm_vmm PHASE_TIME: the storm's VMM, running the phases4 payload without end at PHASE_TIME a phase.
storm_vmm() {
	start_vmm "$T/vmm.sock" --payload phases4 --phase-time "$1" --repeat 0 --vcpu-cpu $VCPU_CPU
}

# storm_seed: seeds $RANDOM with STORM_SEED (default: this shell's pid) and prints the seed, so that
# STORM_SEED=<it> repeats the run. (It printed the first number drawn after seeding, which repeats nothing.)
storm_seed() {
	local seed=${STORM_SEED:-$$}
	echo "seed $seed (STORM_SEED=$seed repeats this run)"
	RANDOM=$seed
}
