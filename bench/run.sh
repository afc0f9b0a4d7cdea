#!/bin/sh
# Runs every benchmark program built into BUILD_DIR/bench (`make bench-parts` passes BUILD_DIR) and prints
# its figures; `make bench` prints the one table of bench/table.sh instead. Benchmarks measure and print;
# none of them asserts anything about time.
set -u
build=${1:?usage: bench/run.sh BUILD_DIR}
dir=$build/bench
if [ ! -d "$dir" ]; then
	echo "bench/run.sh: no $dir: build the benchmarks first (make bench)" >&2
	exit 1
fi
status=0
for prog in "$dir"/*; do
	[ -f "$prog" ] && [ -x "$prog" ] || continue
	echo "== ${prog##*/}"
	"$prog"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "bench/run.sh: ${prog##*/} failed (exit $rc)" >&2
		status=1
	fi
	echo
done
for script in "$(dirname "$0")"/*.sh; do
	case ${script##*/} in run.sh | table.sh) continue ;; esac
	echo "== ${script##*/}"
	"$script" "$build" || status=1
	echo
done
exit $status
