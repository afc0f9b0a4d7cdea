#!/bin/bash
# The fuzz smoke: every libFuzzer harness (tests/fuzz, built by make check into build/fuzz) runs for
# FUZZ_SMOKE_SECONDS (default 20), two at a time (FUZZ_JOBS=2: the suite's other tests run one at a time),
# from its seed corpus, with no crash, leak, timeout or memory blow-up, and executes a fair number of inputs
# (a harness that rejects everything, or hangs, would not).
# The long runs and their figures: docs/reliability.md, "Fuzzing".
# one build: the fuzzers are a build of their own (FUZZ_BUILD), the same whichever BUILD the suite runs against
# lab lane: it runs for a fixed time whatever else runs, so the lab's lane takes it, not the longer one
source "$(dirname "$0")/../lib/assert.bash"
FB=${FUZZ_BUILD:-build/fuzz}
SECS=${FUZZ_SMOKE_SECONDS:-20}
command -v clang >/dev/null || skip "no clang (scripts/install-deps.sh installs it) to build the fuzzers"
ls "$FB"/fuzz/fuzz_* >/dev/null 2>&1 || fail "no fuzzers in $FB/fuzz (make check builds them: make fuzzers)"
rm -rf "$T/fb" && mkdir -p "$T/fb" && ln -s "$ROOT/$FB/fuzz" "$T/fb/fuzz"
FUZZ_JOBS=${FUZZ_JOBS:-2} tests/fuzz/run.sh "$T/fb" "$SECS" | tee "$T/summary" || {
	for f in "$T"/fb/findings/*/*; do [ -f "$f" ] && cp "$f" "$ROOT/$FB/" && echo "finding kept: $ROOT/$FB/$(basename "$f")"; done
	fail "a fuzzer found something (above)"
}
n=$(ls "$FB"/fuzz/fuzz_* | wc -l)
[ "$(grep -c ' 0 finding(s)$' "$T/summary")" = "$n" ] || fail "not every one of the $n fuzzers ran clean"
while read -r name execs _; do
	[ "$execs" -ge $((SECS * 100)) ] || fail "$name ran only $execs inputs in $SECS s"
done < <(sed 's/:\(.*\) executions.*/\1/' "$T/summary")
echo "ok: $n fuzzers, $SECS s each, no finding"
