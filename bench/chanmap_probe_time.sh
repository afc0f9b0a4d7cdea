#!/bin/bash
# The channel probe's time on the MODEL 256 GiB host (tests/fixtures/probe/model-256g.json; not hardware):
# the windows it asks for and the probe time they imply at 20 ms each (what a real host of that size would
# take), plus this program's own run time on the model. The budget is twice the 7.4 s (368 windows) the
# probe needed before its attribution became a vote with a verification pass. Prints figures; asserts
# nothing (tests/unit/test_probe.c asserts the budget).
# usage: bench/chanmap_probe_time.sh BUILD_DIR
set -u
BUILD=${1:?usage: bench/chanmap_probe_time.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
start=$(date +%s%N)
"$BUILD/bin/chanmap" probe -q --model "$ROOT/tests/fixtures/probe/model-256g.json" -o "$T/map.json" 2>"$T/err" || {
	cat "$T/err"
	exit 1
}
end=$(date +%s%N)
windows=$(sed -n 's/.*interleaved region(s); \([0-9]*\) windows.*/\1/p' "$T/err")
secs=$(sed -n 's/.*that is \([0-9.]*\) s of probing.*/\1/p' "$T/err")
echo "chanmap probe, MODEL 256 GiB host: $windows windows, implied probe time $secs s at 20 ms per window" \
	"(budget 14.8 s: 2 x 7.4 s); $(((end - start) / 1000000)) ms to run on the model"
