#!/bin/bash
# Table section 6: record's resident memory (issue 25, item 3). For test-VMM guests of SIZES (default 1T, the
# goal's case), what record locks at start for the worst written pattern (hvmtrace/record/mem_budget.c) next
# to the goal of 0.5 GiB, with record's peak resident memory, the tracer's CPU and the intervals of a short
# run at 1 s of the phase payload (sparse: most pages never touched), and the working memory of mode ad for the
# same guest RAM, computed (bench/record_budget_terms). Runs alone too.
# usage: bench/table/record_budget.sh BUILD_DIR OUT   (appends Markdown rows to OUT)
set -u
BUILD=${1:?usage: record_budget.sh BUILD_DIR OUT}
OUT=${2:?}
SIZES=${SIZES:-1T}
HERE=$(dirname "$0")
T=$(mktemp -d)
vmm=
trap '[ -n "$vmm" ] && kill $vmm 2>/dev/null; rm -rf "$T"' EXIT
status=0

for size in $SIZES; do
	case="record's memory budget, a $size guest (hvmtrace-vmm --high-ram $size, dirty-log)"
	echo "record_budget: $case" >&2
	rm -f "$T"/*
	"$BUILD/bin/hvmtrace-vmm" --listen "$T/vm.sock" --payload phases4 --high-ram "$size" --phase-time 0.5s \
		--repeat 0 --vcpu-cpu 0 >"$T/vmm.out" 2>&1 &
	vmm=$!
	for _ in $(seq 100); do [ -S "$T/vm.sock" ] && break; sleep 0.1; done
	"$BUILD/tests/tools/maxrss" -c "$T/cpu" "$T/rss" "$BUILD/bin/hvmtrace" record --attach "$T/vm.sock" --cpu 1 \
		--interval 1s --duration 6s -o "$T/t.hvt" 2>"$T/rec.err"
	rc=$?
	kill $vmm 2>/dev/null
	wait $vmm 2>/dev/null
	vmm=
	line=$(grep '^hvmtrace record: resident memory' "$T/rec.err")
	if [ $rc != 0 ] || [ -z "$line" ] || ! s=$("$HERE/trace_stats.py" "$BUILD/bin/hvmtrace" "$T/t.hvt"); then
		cat "$T/rec.err" "$T/vmm.out" >&2
		printf '| 6 | %s | failed: record exited %s (stderr above) | | | |\n' "$case" "$rc" >>"$OUT"
		status=1
		continue
	fi
	# "resident memory 379.1 MiB (379.1 MiB locked), enough for guest RAM up to 1283.75 GiB"
	resident=$(sed -n 's/.*resident memory \([0-9.]* [KMG]iB\).*/\1/p' <<<"$line")
	locked=$(sed -n 's/.*(\([0-9.]* [KMG]iB\) locked).*/\1/p' <<<"$line")
	upto=$(sed -n 's/.*enough for guest RAM up to //p' <<<"$line")
	intervals=$("$BUILD/bin/hvmtrace" export --csv - "$T/t.hvt" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "missed_deadlines") m = i; next }
		{ n++; missed += $m } END { printf "%d intervals, %d missed deadlines", n, missed }')
	awk -v c="$case" -v locked="$locked" -v resident="$resident" -v upto="$upto" -v rss_kib="$(cat "$T/rss")" -v iv="$intervals" \
		-v h="$(sed -n 's/.*harvest_us=\([^ ]*\).*/\1/p' <<<"$s")" -v t="$(sed -n 's/.*tracer_cpu_us=\([^ ]*\).*/\1/p' <<<"$s")" \
		-v d="$(sed -n 's/.*duration_s=\([^ ]*\).*/\1/p' <<<"$s")" 'BEGIN {
		split(locked, a, " "); mib = a[1] * (a[2] == "GiB" ? 1024 : a[2] == "KiB" ? 1 / 1024 : 1)
		printf "| 6 | %s | %s locked at start (enough for guest RAM up to %s) | goal 512 MiB (issue 25) | %.2f× | resident %s at start, peak RSS %.1f MiB; harvest %.2f %% / tracer %.2f %% of a core at 1 s; %s |\n", \
			c, locked, upto, mib / 512, resident, rss_kib / 1024, 100 * h / (d * 1e6), 100 * t / (d * 1e6), iv }' >>"$OUT"
	# Mode ad for the same guest RAM: computed (the test VMM offers no accessed bits to harvest).
	gib=$(awk '{ print $1 * ($2 == "TiB" ? 1024 : $2 == "MiB" ? 1 / 1024 : 1) }' <<<"$upto")
	for mode in dirty-log ad; do
		"$BUILD/bench/record_budget_terms" "$gib" "$mode" || status=1
	done >"$T/terms"
	awk -v c="record's working memory, a $size guest in mode ad (mem_budget_terms, computed: the test VMM has no accessed bits)" -v upto="$upto" '
		{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } m[v["mode"]] = v["working"] / 1048576
		  if (v["mode"] == "ad") { sets = v["sets"] / 1048576; rec = v["record"] / 1048576 } }
		END { printf "| 6 | %s | %.1f MiB working memory (guest RAM up to %s) | goal 512 MiB (issue 25) | %.2f× | bitmaps %.1f MiB, INTERVAL record %.1f MiB; mode dirty-log %.1f MiB working |\n", \
			c, m["ad"], upto, m["ad"] / 512, sets, rec, m["dirty-log"] }' "$T/terms" >>"$OUT"
done
exit $status
