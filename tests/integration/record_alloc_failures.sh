#!/bin/bash
# No allocation failure may abort `record` (issue 13, item 6): tests/preload/fail_alloc.so fails the N-th
# allocation of the tracer, for N swept over a short recording of the test VMM (10 ms intervals, 50 ms).
# Every run must either complete, or end with a message (exit 1: the trace holds everything before the
# failure; exit 2: refused before recording), never by a signal, an abort or a sanitizer report; and any
# trace it leaves must be readable to its last complete interval (export exits 0 or 3), holding the
# intervals of the JSON Lines written alongside. Allocations are counted from main() (before it, the shared
# libraries' constructors run; GLib's abort by design when one fails). The sweep covers every allocation with
# ALLOC_STEP=1 (about 650 runs); by default a seeded stride of about 150 (ALLOC_SEED repeats one).
# Allocations json-c makes are spared (HVT_ALLOC_SPARE): json-c 0.16 (Debian 12) does not check the strdup
# of an object key in json_object_object_add_ex and crashes in strlen(NULL) when it fails, which no caller
# can prevent; the runs that met one are counted and printed, not hidden.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
source "$(dirname "$0")/../lib/storm.bash"
need_kvm
SHIM=$ROOT/$BUILD/tests/preload/fail_alloc.so
[ -f "$SHIM" ] || fail "$SHIM is not built (make tests)"
ldd "$HVT" | grep -q libasan &&
	skip "an allocator under AddressSanitizer cannot be wrapped from a preload; the optimised build runs this"

start_vmm "$T/vmm.sock" --payload phases4 --phase-time 0.05s --repeat 0 --vcpu-cpu $VCPU_CPU
rec() {
	LD_PRELOAD=$SHIM "$HVT" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 10ms --duration 50ms \
		-o "$T/a.hvt" --jsonl "$T/a.jsonl" "$@"
}
HVT_ALLOC_COUNT_TO=$T/count rec 2>"$T/err" || fail "record without a failure: $(cat "$T/err")"
total=$(cat "$T/count")
[ "$total" -gt 100 ] || fail "only $total allocations counted: is the preload in?"

RANDOM=${ALLOC_SEED:-$$}
step=${ALLOC_STEP:-$((total / 150 + 1))}
echo "seed $RANDOM; $total allocations in a run; every ${step}th"
done=0 completed=0 ended=0 refused=0 spared=0
for ((n = 1 + RANDOM % step; n <= total; n += step)); do
	rm -f "$T/a.hvt" "$T/a.jsonl"
	rc=0
	HVT_FAIL_ALLOC=$n HVT_ALLOC_SPARE=libjson-c HVT_ALLOC_COUNT_TO=$T/run.count rec 2>"$T/err" || rc=$?
	grep -q '^spared' "$T/run.count" 2>/dev/null && spared=$((spared + 1))
	grep -E 'Aborted|abort|AddressSanitizer|runtime error|Segmentation|core dumped|Assertion' "$T/err" &&
		fail "allocation $n: $(tail -3 "$T/err")"
	# what a failed allocation was once reported as (the VMM sends no null, the metadata is sane)
	grep -E 'JSON null|not an hvmtrace VMM|a reader would refuse|error -12' "$T/err" &&
		fail "allocation $n: a failed allocation reported as something else"
	case $rc in
	0) completed=$((completed + 1)) ;;
	1 | 2)
		grep -q '^hvmtrace record: ' "$T/err" || fail "allocation $n: exit $rc without a message"
		[ $rc = 1 ] && ended=$((ended + 1)) || refused=$((refused + 1))
		;;
	*) fail "allocation $n: exit $rc: $(tail -3 "$T/err")" ;;
	esac
	if [ -e "$T/a.hvt" ]; then
		[ -e "$T/a.jsonl" ] || : >"$T/a.jsonl"
		check_recovered "allocation $n (exit $rc)" "$T/a.hvt" "$T/a.jsonl" 0 3
	elif [ $rc = 0 ] || [ $rc = 1 ]; then
		fail "allocation $n: exit $rc but no trace"
	fi
	done=$((done + 1))
done
echo "ok: $done runs ($spared of them at an allocation of json-c's, not failed): $completed completed, $ended ended with a message and their trace, $refused refused before recording"
