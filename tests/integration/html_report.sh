#!/bin/bash
# hvmtrace report --html in Debian's headless Chromium, driven over its DevTools pipe (tests/tools/cdp.py,
# check_html.py) with real mouse events: hover (GFN, host channel, counts), click (a page's history), a
# drag across the working-set chart (range, summary and counts recomputed) and playback, each checked
# against the trace's intervals as `hvmtrace export --jsonl` reads them, and the summaries against
# `hvmtrace report --json` of the same range; a mode-ad trace with channels and
# a dirty-log one without (accessed and bandwidth "not available"). Screenshots go to
# $BUILD/test-logs/html_report/. The same for a selection (--from/--to/--range), whose page must agree with
# export and report of that selection. The file is self-contained (no URL in it); bad input: one line, exit 2.
source "$(dirname "$0")/../lib/assert.bash"
command -v chromium >/dev/null || skip "chromium is not installed (scripts/install-deps.sh)"
command -v python3 >/dev/null || skip "python3 is not installed (scripts/install-deps.sh)"
SHOTS=$ROOT/$BUILD/test-logs/html_report
mkdir -p "$SHOTS"
# As root, Chromium runs as nobody with its sandbox on (it refuses root with it); its profile is private.
user=()
[ "$(id -u)" = 0 ] && user=(--user nobody)
mkdir -p "$T/profile" && [ "$(id -u)" = 0 ] && chown nobody "$T/profile"

# run NAME TRACE FROM TO CHECK_HTML-ARGS...: report --html of the selection ${SEL[@]} (--from/--to) and
# ${RANGE[@]} (--range), both arrays, empty for the whole trace; the oracles of the same selection (export
# --jsonl, report --json of it and of seqs FROM-TO in the range), then the browser checks, with a drag over
# FROM-TO.
SEL=() RANGE=() BY=()
run() {
	local name=$1 trace=$2 from=$3 to=$4
	shift 4
	"$HVT" report "$trace" "${SEL[@]}" "${RANGE[@]}" "${BY[@]}" --html "$T/$name.html" >"$T/$name.out" || fail "report --html $name"
	cat "$T/$name.out"
	"$HVT" export --jsonl "$T/$name.jsonl" "${SEL[@]}" "${RANGE[@]}" "$trace" || fail "export --jsonl $name"
	"$HVT" export --meta "$trace" >"$T/$name.meta" || fail "export --meta $name"
	"$HVT" report --json "${SEL[@]}" "${RANGE[@]}" "$trace" >"$T/$name.all.json" || fail "report --json $name"
	"$HVT" report --json --from "$from" --to "$to" "${RANGE[@]}" "$trace" >"$T/$name.range.json" ||
		fail "report --json --from $from --to $to ${RANGE[*]}"
	chmod 644 "$T/$name.html"
	! grep -Eq 'https?://|<link|<img|src=' "$T/$name.html" || fail "$name.html refers to something outside it"
	python3 tests/tools/check_html.py --html "$T/$name.html" --jsonl "$T/$name.jsonl" --meta "$T/$name.meta" \
		--shots "$SHOTS" --name "$name" --profile "$T/profile" "${user[@]}" --range-from "$from" --range-to "$to" \
		--report-all "$T/$name.all.json" --report-range "$T/$name.range.json" "$@" || fail "check_html $name"
}

"$TOOLS/synth_arrays" -o "$T/ad.hvt" --memory 512M --intervals 20 --channels 2 --extent 128M \
	--noise-written 64 --noise-accessed 512 >"$T/truth" || fail "synth_arrays"
pages=()
for arr in a b c; do
	first=$(awk -v a="$arr" '$1 == "array" && $2 == a {print $3}' "$T/truth")
	pages+=(--page "$(printf '0x%x' $((first + 3)))")
done
# 128 MiB extents, channels round robin: a and c on ch0, b and GFN 0x9000 on ch1
run ad "$T/ad.hvt" 8 14 "${pages[@]}" --page 0x9000
# The same trace through a selection: seqs 5-16 of GFNs a .. c (report's --from/--to/--range): the page,
# export and report all read the one selection, so the page holds to them as it does for the whole trace.
read -r _ _ a _ <<<"$(grep '^array a' "$T/truth")"
read -r _ _ c cn <<<"$(grep '^array c' "$T/truth")"
a=$((a)) c=$((c + cn - 1))
SEL=(--from 5 --to 16) RANGE=(--range "$a-$c")
run ad-sel "$T/ad.hvt" 8 12 "${pages[@]}" --page 0x9000
grep -q "wrote $T/ad-sel.html: 12 intervals; $((c - a + 1)) cells of 1 page" "$T/ad-sel.out" ||
	fail "report --html did not take the selection: $(cat "$T/ad-sel.out")"
SEL=() RANGE=()
# Owners (--by process, a snapshot file): the hover names each page's owner, the legend the top writers
# with report --by's page-intervals (tests/integration/owners_views.sh holds those to Python's count).
read -r _ _ b _ <<<"$(grep '^array b' "$T/truth")"
b=$((b)) c=$(awk '$1 == "array" && $2 == "c" {print $3}' "$T/truth")
c=$((c))
cat >"$T/own.json" <<EOF2
{"owners": [
 {"type": "process", "pid": 100, "name": "array", "cgroup": "/run", "runs": [[$b, 10], [$c, $((cn))]]},
 {"type": "process", "pid": 101, "name": "reader", "cgroup": "/run", "runs": [[$a, $((cn))], [$b, 10]]}
]}
EOF2
python3 "$ROOT/tests/tools/owners_snap.py" encode <"$T/own.json" >"$T/own.snap" || fail "owners_snap.py"
BY=(--by process --owners "$T/own.snap")
"$HVT" report --json "${BY[@]}" "$T/ad.hvt" >"$T/by.json" || fail "report --by"
legend=()
while read -r label written; do legend+=(--legend "$label=$written"); done < <(python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))["by_owner"]
for c in o["owners"]:
    print("%s[%d] %d" % (c["name"], c["pid"], c["written"]))
print("(shared) %d" % o["shared"]["written"])' "$T/by.json")
run owners "$T/ad.hvt" 8 14 "${pages[@]}" --owner "$(printf '0x%x' $((a + 3)))=reader[101]" \
	--owner "$(printf '0x%x' $((c + 3)))=array[100]" --owner "$(printf '0x%x' $((b + 3)))=(shared)" \
	--owner "$(printf '0x%x' $((b + 20)))=(no process)" "${legend[@]}"
BY=()
"$TOOLS/synth_arrays" -o "$T/dl.hvt" --memory 256M --intervals 8 --mode dirty-log >"$T/truth-dl" ||
	fail "synth_arrays dirty-log"
c=$(awk '$2 == "c" {print $3}' "$T/truth-dl")
run dirty-log "$T/dl.hvt" 3 6 --page "$(printf '0x%x' $((c + 1)))" --page 0x100
ls "$SHOTS"
[ "$(ls "$SHOTS"/ad-[0-9]*.png | wc -l)" = 4 ] || fail "expected 4 screenshots of the ad report in $SHOTS"
[ "$(ls "$SHOTS"/ad-sel-*.png | wc -l)" = 4 ] || fail "expected 4 screenshots of the selected ad report in $SHOTS"

# Bad input.
"$TOOLS/synth_arrays" -o "$T/empty.hvt" --intervals 0 >/dev/null || fail "synth_arrays --intervals 0"
expect 2 "cannot create /nonexistent/r.html" "$HVT" report "$T/ad.hvt" --html /nonexistent/r.html
expect 2 "the trace holds no interval" "$HVT" report "$T/empty.hvt" --html "$T/e.html"
[ ! -e "$T/e.html" ] || fail "a refused report left e.html behind"
# A torn trace: the page covers the intervals before the damage and says so; exit 3.
size=$(stat -c %s "$T/ad.hvt")
head -c $((size / 2)) "$T/ad.hvt" >"$T/torn.hvt"
rc=0
"$HVT" report "$T/torn.hvt" --html "$T/torn.html" >"$T/out" 2>"$T/err" || rc=$?
assert_eq "exit status of report --html on a torn trace" 3 "$rc"
assert_contains "$T/err" "incomplete trace"
grep -q '"incomplete":true' "$T/torn.html" || fail "torn.html does not say the trace is incomplete"
echo "ok: html report checked"
