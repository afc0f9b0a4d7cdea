# hvmtrace-vmm, the test VMM, on this host's KVM (sourced after assert.bash).

# start_vmm SOCK ARGS...: hvmtrace-vmm listening on SOCK, in the background; sets VMM_PID.
start_vmm() {
	local sock=$1
	shift
	"$BIN/hvmtrace-vmm" --listen "$sock" "$@" >"$T/vmm.out" 2>&1 &
	VMM_PID=$!
	BG_PIDS+=("$VMM_PID")
	wait_socket "$sock"
}

# start_fakepeer SOCK MODE ARGS...: tests/tools/fakepeer (a scripted, misbehaving VMM) in MODE on SOCK, in the
# background, its output in SOCK's name with .out; sets FAKE_PID.
start_fakepeer() {
	local sock=$1
	shift
	rm -f "$sock"
	"$TOOLS/fakepeer" "$sock" "$@" >"${sock%.sock}.out" 2>&1 &
	FAKE_PID=$!
	BG_PIDS+=("$FAKE_PID")
	wait_socket "$sock"
}

# next_fakepeer SOCK MODE ARGS...: start_fakepeer, once the previous one (FAKE_PID) has gone. Ending, a
# fakepeer unlinks its socket: on a busy machine it did so after the next one had bound the same path, and
# the tracer found no socket (or the old one's, closed).
next_fakepeer() {
	[ -z "${FAKE_PID:-}" ] || { kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; }
	start_fakepeer "$@"
}

# fake_kvm_ad_preload: sets PRELOAD, what LD_PRELOAD must hold for hvmtrace to run against the fake
# KVM_AD_HARVEST of tests/preload/fake_kvm_ad.c; a sanitized tracer needs its ASan runtime first in the list.
fake_kvm_ad_preload() {
	local shim=$ROOT/$BUILD/tests/preload/fake_kvm_ad.so
	[ -f "$shim" ] || fail "$shim is not built (make tests)"
	PRELOAD="$(ldd "$BIN/hvmtrace" | awk '/libasan/ { print $3 }') $shim"
}

# trace_phases INTERVAL PHASE_TIME MIN_INSIDE: traces the phases4 payload from start to end and checks it
# page by page against the VMM's phase log; the JSON Lines written while recording must equal the trace's
# export. Each phase lasts PHASE_TIME and until the tracer has harvested MIN_INSIDE whole intervals inside
# it (the VMM follows the JSON Lines), so a busy machine makes phases longer, never too short for the check.
# VMM_ARGS (an array) adds options of the VMM's, e.g. (--high-ram 1T).
trace_phases() {
	start_vmm "$T/vmm.sock" --payload phases4 --phase-time "$2" --hold-intervals "$3" "${VMM_ARGS[@]}" \
		--follow "$T/rec.jsonl" --wait-attach \
		--phase-log "$T/phases.jsonl" --vcpu-cpu $VCPU_CPU
	"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval "$1" -o "$T/t.hvt" \
		--jsonl "$T/rec.jsonl" 2>"$T/record.err" || {
		cat "$T/record.err" "$T/vmm.out"
		fail "record failed"
	}
	cat "$T/record.err"
	wait "$VMM_PID" || {
		# No whole pass fitted inside any interval (the guest's CPU gave it too little time, or each pass
		# write-faults on pages every harvest protects again): nothing here can be held to the phase log
		# interval by interval, and nothing says the tracer is wrong.
		grep -q "passes take longer than an interval" "$T/vmm.out" &&
			skip "the guest's vCPU (CPU $VCPU_CPU) finished no whole pass of the phase pattern inside a $1 interval on this machine now ($(sed -n 's/.*(need [0-9]*); //p' "$T/vmm.out" | head -n 1))"
		fail "the VMM failed: $(cat "$T/vmm.out")"
	}
	"$TOOLS/check_phases" --trace "$T/t.hvt" --phase-log "$T/phases.jsonl" --min-inside "$3" ||
		fail "trace does not match the phases"
	"$BIN/hvmtrace" export --jsonl "$T/export.jsonl" "$T/t.hvt" || fail "export failed"
	cmp "$T/rec.jsonl" "$T/export.jsonl" || fail "the recorded JSON Lines differ from the export"
}
