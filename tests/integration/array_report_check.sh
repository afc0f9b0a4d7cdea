#!/bin/bash
# The lab's array check (tests/tools/check_array_report, run by tests/lab/qemu_init.sh on a real trace in
# mode ad) held to a synthetic array trace whose answers are known by construction (tests/tools/synth_arrays:
# copy in intervals 1-10, add in 11-20, switching at 11 s) and a phase log written here in qemu_phases' form:
# the right log passes; a log whose switch is 4 s later, and one that swaps a and c, fail (exit 1, with a
# MISMATCH line); a dirty-log trace is refused (exit 2: no accessed sets).
source "$(dirname "$0")/../lib/assert.bash"
CHECK=$TOOLS/check_array_report

"$TOOLS/synth_arrays" -o "$T/s.hvt" --memory 512M --intervals 20 --noise-written 0 --noise-accessed 0 \
	>"$T/truth" || fail "synth_arrays"
read -r _ _ a n <<<"$(grep '^array a' "$T/truth")"
read -r _ _ b _ <<<"$(grep '^array b' "$T/truth")"
read -r _ _ c _ <<<"$(grep '^array c' "$T/truth")"
grep -qx 'phase add 11 20' "$T/truth" || fail "synth_arrays' phases are not as this test assumes: $(cat "$T/truth")"

# phase_log FILE A C SWITCH_S: the array payload's log, a and c at the GFNs given, the add phase confirmed
# 1 ms after SWITCH_S s (its command 1 ms before); the trace's interval k runs from k to k+1 s.
phase_log() {
	local s=$(($4 * 1000000000))
	cat >"$1" <<EOF
{"type":"script","payload":"array","phases":[{"name":"copy","write":[[$(($3)),$((n)),1],[3,1,1]],"read":[[$(($2)),$((n)),1]]},{"name":"add","write":[[$(($3)),$((n)),1],[3,1,1]],"read":[[$(($2)),$((n)),1],[$((b)),$((n)),1]]}]}
{"type":"phase","index":0,"round":0,"t_earliest_ns":999000000,"t_ns":1001000000}
{"type":"phase","index":1,"round":0,"t_earliest_ns":$((s - 1000000)),"t_ns":$((s + 1000000))}
{"type":"done","t_earliest_ns":20999000000,"t_ns":21001000000}
EOF
}

# run LOG: range, report over it, check; the check's exit status.
run() {
	local range rc=0
	range=$("$CHECK" range --phase-log "$1" --trace "$T/s.hvt") || fail "check_array_report range: $range"
	"$HVT" report --json "$T/s.hvt" >"$T/all.json" || fail "report --json"
	"$HVT" report --json --pages --from "${range% *}" --to "${range#* }" "$T/s.hvt" >"$T/pages.json" ||
		fail "report --json --pages"
	"$CHECK" check --phase-log "$1" --trace "$T/s.hvt" --report "$T/all.json" --pages "$T/pages.json" \
		>"$T/out" 2>&1 || rc=$?
	cat "$T/out"
	echo "range $range"
	return $rc
}

# expect_check WHAT STATUS LOG PATTERN: run on LOG exits STATUS and says something matching PATTERN.
expect_check() {
	local out rc=0
	out=$(run "$3") || rc=$?
	assert_eq "$1" "$2" "$rc"
	grep -q "$4" <<<"$out" || fail "$out"
}

phase_log "$T/right.jsonl" "$a" "$c" 11
out=$(run "$T/right.jsonl") || fail "the right log failed: $out"
grep -q "range 2 19" <<<"$out" || fail "range: $out" # 1 began before the copy was confirmed, 20 ends after the run
grep -q "c ok ($((n))/$((n)) pages write-heavy" <<<"$out" || fail "$out"
grep -q "a ok ($((n))/$((n)) read-mostly" <<<"$out" || fail "$out"
grep -q "copy→add at 1.00 of interval 10+, accessed phases at \[11\]: ok" <<<"$out" || fail "$out"
echo "ok: the right log: $(head -n 1 <<<"$out")"

phase_log "$T/late.jsonl" "$a" "$c" 15
expect_check "a switch 4 s late" 1 "$T/late.jsonl" "MISMATCH no accessed-set phase boundary in intervals 14..16"
echo "ok: a switch 4 s late fails"

phase_log "$T/swapped.jsonl" "$c" "$a" 11
expect_check "a and c swapped" 1 "$T/swapped.jsonl" "MISMATCH $((n)) pages of c .* not write-heavy, $((n)) pages of a .* not read-mostly"
echo "ok: a and c swapped fails"

"$TOOLS/synth_arrays" -o "$T/s.hvt" --memory 512M --intervals 20 --noise-written 0 --noise-accessed 0 \
	--mode dirty-log >/dev/null || fail "synth_arrays --mode dirty-log"
expect_check "a dirty-log trace" 2 "$T/right.jsonl" "mode ad is needed"
echo "ok: a dirty-log trace is refused"
