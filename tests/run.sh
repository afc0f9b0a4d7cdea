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

passed=0 failed=0 skipped=0
failures=()

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
	skipped=$((skipped + skip))
	if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		bad=1 # crashed or a sanitizer stopped it outside any counted case
	fi
	passed=$((passed + ok))
	failed=$((failed + bad))
	if [ "$bad" -gt 0 ]; then
		failures+=("unit/$name")
		echo "FAIL unit/$name ($ok ok, $bad failed; log: $log)"
		grep -E '^not ok |ERROR|Sanitizer|runtime error' "$log" | head -20 | sed 's/^/    /'
	else
		echo "PASS unit/$name ($ok cases$([ "$skip" -gt 0 ] && echo ", $skip skipped: $(grep -B1 '^not ok .*# SKIP' "$log" | head -1)"))"
	fi
done

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
		BUILD=$build bash "$t" >"$log" 2>&1
		rc=$?
		secs=$(($(date +%s) - start))
		case $rc in
		0)
			passed=$((passed + 1))
			echo "PASS $name (${secs}s)"
			;;
		77)
			skipped=$((skipped + 1))
			echo "SKIP $name: $(tail -n 1 "$log")"
			;;
		*)
			failed=$((failed + 1))
			failures+=("$name")
			echo "FAIL $name (exit $rc, ${secs}s; log: $log)"
			tail -n 25 "$log" | sed 's/^/    /'
			;;
		esac
	done
}

run_scripts "$BUILD" "" tests/integration/*.sh tests/e2e/*.sh tests/lab/test_*.sh
for b in "${MORE_BUILDS[@]}"; do
	run_scripts "$b" " [$b]" $(grep -L '^# one build: ' tests/integration/*.sh tests/e2e/*.sh)
done

[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
