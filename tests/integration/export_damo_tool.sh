#!/bin/bash
# hvmtrace export --damo read by the real damo (its source checkout in DAMO_SRC, e.g. a clone of
# https://github.com/damonitor/damo; CI has none, PyPI being unreachable): damo's default commands
# `report record_info`, `report heatmap`, `report wss` and `report access` run on the export of a trace known
# by construction (tests/tools/synth_arrays) and agree with `hvmtrace report`.
source "$(dirname "$0")/../lib/assert.bash"
[ -n "${DAMO_SRC:-}" ] || skip "DAMO_SRC is not set (a damo source checkout: git clone https://github.com/damonitor/damo)"
[ -x "$DAMO_SRC/damo" ] || skip "DAMO_SRC=$DAMO_SRC has no executable damo"
command -v file >/dev/null || skip "damo needs file(1) to tell its record formats apart"
command -v jq >/dev/null || skip "needs jq"
damo() { "$DAMO_SRC/damo" "$@"; }
echo "damo $(damo version)"

"$TOOLS/synth_arrays" -o "$T/a.hvt" --memory 512M --intervals 40 --noise-written 0 --noise-accessed 0 \
	>"$T/truth" || fail "synth_arrays"
read -r _ _ a n <<<"$(grep '^array a' "$T/truth")"
read -r _ _ b _ <<<"$(grep '^array b' "$T/truth")"
a=$((a)) b=$((b)) n=$((n))
"$HVT" export --damo "$T/a.damo" "$T/a.hvt" || fail "export --damo"

# record_info: the guest's RAM from the first page on (page 0 is damo's "unset"), the trace's time
damo report record_info -i "$T/a.damo" --raw_numbers >"$T/info" 2>&1 || fail "record_info: $(cat "$T/info")"
cat "$T/info"
assert_contains "$T/info" "time: [1000000000, 41000000000) (40000000000)" "region	 0: [4096, 536870912) (536866816)"

# wss, every snapshot, in time order: the pages accessed in each window of 10 intervals, as report counts
damo report wss -i "$T/a.damo" --exclude_samples 0 --all_wss --raw_number --sortby time >"$T/wss" 2>&1 ||
	fail "wss: $(cat "$T/wss")"
"$HVT" report --json --window 10 "$T/a.hvt" >"$T/r.json" || fail "report --json"
assert_eq "damo's wss" "$(jq -r '.intervals[] | select(.seq % 10 == 0) | .window_accessed * 4096' "$T/r.json")" \
	"$(awk '!/^#/ { print $2 }' "$T/wss")"
damo report wss -i "$T/a.damo" >"$T/wss.default" 2>&1 || fail "wss with damo's defaults: $(cat "$T/wss.default")"

# heatmap (raw: time, address, heat per pixel): a's pixel is hot in every row, b's only from the add phase
damo report heatmap -i "$T/a.damo" --output raw --resol 4 8 >"$T/heat" 2>&1 || fail "heatmap: $(cat "$T/heat")"
awk -v a=$((a * 4096)) -v b=$((b * 4096)) -v n=$((n * 4096)) '
	NF != 3 { next } { px[$1] = 1 }
	$2 <= a && a < $2 + 64 * 1048576 { if ($3 > 0.4) hot_a[$1] = 1 }
	$2 <= b && b < $2 + 64 * 1048576 { heat_b[$1] = $3 }
	END { for (t in px) { rows++; if (!(t in hot_a)) bad = bad " a cold at " t }
	      if (rows != 4) bad = bad " rows " rows
	      for (t in heat_b) if ((t + 0 >= 2e10) != (heat_b[t] > 0.4)) bad = bad " b " heat_b[t] " at " t
	      if (bad) { print bad; exit 1 } }' "$T/heat" >"$T/heat.bad" || fail "heatmap:$(cat "$T/heat.bad")"
damo report heatmap -i "$T/a.damo" >"$T/heat.default" 2>&1 || fail "heatmap with damo's defaults: $(cat "$T/heat.default")"

# access: the intervals are there (it refuses records without them), and the hot regions show 1 hz
damo report access -i "$T/a.damo" >"$T/access" 2>&1 || fail "access: $(cat "$T/access")"
grep -v "^heatmap:" "$T/access" | head -n 12
assert_contains "$T/access" "intervals: sample 1 s aggr 10 s"
grep -q "access 1.000 hz" "$T/access" || fail "access: no region at 1 hz"
echo "ok: damo's record_info, wss, heatmap and access read the export and agree with report"
