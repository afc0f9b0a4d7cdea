#!/bin/bash
# Runs every test tier this machine can run against the programs in BUILD (default build/check) and ends
# with one line "N passed, N failed, N skipped". Tiers: unit tests are cmocka programs (counted per test case
# via their TAP output); the integration (tests/integration/*.sh), e2e (tests/e2e/*.sh) and lab
# (tests/lab/test_*.sh) tiers are scripts, each one test (exit 0 pass, 77 skip with the reason as the last
# line of output, anything else fails). Their shared helpers are tests/lib/*.bash. Logs go to
# BUILD/test-logs/.
#
# tests/run.sh BUILD [MORE_BUILDS...]: the integration and e2e tiers run again against each further build
# (`make check` gives the optimised build/, the one `make` installs, whose failures the sanitizer build can
# hide: an abort under the memory lock, a slow path that only -O2 reaches in time). A script whose header
# has a line "# one build: WHY" runs only against the first build; WHY says why that one is enough.
#
# Two lanes (TEST_LANES=1 runs everything in one): the lab tier runs beside the others from the start. Its
# emulators (TCG, Bochs) keep about one core busy for a quarter of an hour while the rest of the suite,
# which mostly waits on its guests, runs on the other: the suite takes the longer lane's time, not the sum.
# A script whose header has a line "# lab lane: WHY" runs in the lab's lane too (first), to even the lanes.
# Tests hold on a busy machine by design (they follow observed progress, never the wall clock), and a lab
# test shares nothing with the others but the build cache, whose builders take a lock (scripts/cache.sh).
set -u
BUILD=${1:-build/check}
MORE_BUILDS=("${@:2}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
for b in "$BUILD" "${MORE_BUILDS[@]}"; do
	rm -rf "$b/test-logs" && mkdir -p "$b/test-logs"
done
LOGS="$BUILD/test-logs"
export BUILD ROOT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
LANES=${TEST_LANES:-2}
case $LANES in 1 | 2) ;; *) echo "tests/run.sh: TEST_LANES=$LANES: 1 or 2" >&2 && exit 2 ;; esac

# Every verdict is a line "pass|fail|skip COUNT NAME" here, from either lane (short appends are atomic).
RESULTS=$LOGS/results
: >"$RESULTS"
verdict() { echo "$1 $2 $3" >>"$RESULTS"; }

# run_scripts BUILD LABEL SCRIPTS...: each script one test against the programs in BUILD.
run_scripts() {
	local build=$1 label=$2 t tier name log start rc secs
	shift 2
	for t in "$@"; do
		[ -f "$t" ] || continue
		tier=$(basename "$(dirname "$t")")
		name=$tier/$(basename "$t" .sh)$label
		log="$build/test-logs/$tier-$(basename "$t" .sh).log"
		start=$(date +%s)
		# In the background and waited for, so that a lane told to stop can stop the test it runs.
		BUILD=$build bash "$t" >"$log" 2>&1 &
		TEST_PID=$!
		wait "$TEST_PID"
		rc=$?
		TEST_PID=""
		secs=$(($(date +%s) - start))
		case $rc in
		0)
			verdict pass 1 "$name"
			echo "PASS $name (${secs}s)"
			;;
		77)
			verdict skip 1 "$name"
			echo "SKIP $name: $(tail -n 1 "$log")"
			;;
		*)
			verdict fail 1 "$name"
			# One write, so that the other lane's lines do not cut into it.
			printf '%s\n' "FAIL $name (exit $rc, ${secs}s; log: $log)$(tail -n 25 "$log" | sed 's/^/    /;1s/^/\n/')"
			;;
		esac
	done
}

# An interrupted suite stops the tests it runs and leaves no emulator behind: a background job of a
# non-interactive shell ignores the terminal's SIGINT, so each lane passes on a SIGTERM to its test, whose
# cleanup (tests/lib/assert.bash) ends what the test started.
TEST_PID="" LAB_LANE=""
stop_tests() {
	[ -z "$TEST_PID" ] || kill -TERM "$TEST_PID" 2>/dev/null
	[ -z "$LAB_LANE" ] || kill -TERM "$LAB_LANE" 2>/dev/null
	wait
}
trap 'stop_tests; exit 130' INT
trap 'stop_tests; exit 143' TERM
if [ "$LANES" = 2 ]; then
	(
		trap 'stop_tests; exit 143' TERM
		run_scripts "$BUILD" "" $(grep -l '^# lab lane: ' tests/integration/*.sh tests/e2e/*.sh) tests/lab/test_*.sh
	) &
	LAB_LANE=$!
fi

for t in "$BUILD"/tests/unit/test_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	log="$LOGS/unit-$name.log"
	CMOCKA_MESSAGE_OUTPUT=TAP "$t" >"$log" 2>&1
	rc=$?
	ok=$(grep -c '^ok ' "$log")
	# cmocka's TAP writes a skipped case as "not ok N # SKIP"
	skip=$(grep -c '^not ok .*# SKIP' "$log")
	bad=$(($(grep -c '^not ok ' "$log") - skip))
	if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		bad=1 # crashed or a sanitizer stopped it outside any counted case
	fi
	verdict pass "$ok" "unit/$name"
	verdict skip "$skip" "unit/$name"
	if [ "$bad" -gt 0 ]; then
		verdict fail "$bad" "unit/$name"
		echo "FAIL unit/$name ($ok ok, $bad failed; log: $log)"
		grep -E '^not ok |ERROR|Sanitizer|runtime error' "$log" | head -20 | sed 's/^/    /'
	else
		echo "PASS unit/$name ($ok cases$([ "$skip" -gt 0 ] && echo ", $skip skipped: $(grep -B1 '^not ok .*# SKIP' "$log" | head -1)"))"
	fi
done

if [ "$LANES" = 2 ]; then
	run_scripts "$BUILD" "" $(grep -L '^# lab lane: ' tests/integration/*.sh tests/e2e/*.sh)
else
	run_scripts "$BUILD" "" tests/integration/*.sh tests/e2e/*.sh tests/lab/test_*.sh
fi
for b in "${MORE_BUILDS[@]}"; do
	run_scripts "$b" " [$b]" $(grep -L '^# one build: ' tests/integration/*.sh tests/e2e/*.sh)
done
if [ -n "$LAB_LANE" ]; then
	wait "$LAB_LANE"
	LAB_LANE=""
fi

count() { awk -v k="$1" '$1 == k { n += $2 } END { print n + 0 }' "$RESULTS"; }
passed=$(count pass) failed=$(count fail) skipped=$(count skip)
failures=$(awk '$1 == "fail" { $1 = $2 = ""; sub(/^ +/, ""); printf "%s%s", sep, $0; sep = ", " }' "$RESULTS")
[ -z "$failures" ] || echo "failed: $failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
