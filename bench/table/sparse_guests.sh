#!/bin/bash
# Table sections 1 and 5: dirty-log harvest + encode + write per interval for sparse test-VMM guests of
# 1 GiB to 1 TiB with 0.1 %, 1 % and 10 % of their pages written (hvmtrace-vmm --payload sparse), next to the
# time one copy of the guest's bitmap takes (the limit), with the tracer's share of one core at 1 s and
# 100 ms; and the trace's bytes per interval next to the raw bitmap. Every figure comes from the trace
# `record` wrote (harvest_us, tracer_cpu_us, written_pages, the INTERVAL records' sizes).
# usage: bench/table/sparse_guests.sh BUILD_DIR OUT1 OUT5   (appends Markdown rows to OUT1 and OUT5)
# A row whose written pages would take more than a quarter of the host's available RAM is not run (the machine
# is shared), and says so. SIZES and EVERY override the guest sizes and the write strides (every Nth page: 1000 100 10).
# MODE=dirty-ring runs the VMM on KVM's dirty ring (--dirty-ring 65536, the most KVM allows) and records in that
# mode: its rows name the mode, beside dirty-log's of the same case (issue 25).
set -u
BUILD=${1:?usage: sparse_guests.sh BUILD_DIR OUT1 OUT5}
OUT1=${2:?} OUT5=${3:?}
SIZES=${SIZES:-1G 16G 256G 1T}
EVERY=${EVERY:-1000 100 10}
MODE=${MODE:-dirty-log}
case $MODE in
dirty-log) vmm_mode=() label= ;;
dirty-ring) vmm_mode=(--dirty-ring 65536) label=", dirty-ring" ;;
*) echo "sparse_guests: MODE: $MODE is not dirty-log or dirty-ring" >&2; exit 2 ;;
esac
HERE=$(dirname "$0")
T=$(mktemp -d)
vmm=
trap '[ -n "$vmm" ] && kill $vmm 2>/dev/null; rm -rf "$T"' EXIT
status=0

bytes_of() { # 1G -> 1073741824
	local n=${1%[KMGT]} u=${1##*[0-9]}
	case $n in "" | *[!0-9]*) echo "sparse_guests: SIZES: $1 is not a size (K, M, G, T)" >&2; exit 2 ;; esac
	case $u in K) echo $((n << 10)) ;; M) echo $((n << 20)) ;; G) echo $((n << 30)) ;; T) echo $((n << 40)) ;; *) echo "$n" ;; esac
}
human() { # bytes -> "32 KiB"
	awk -v b="$1" 'BEGIN { split("B KiB MiB GiB TiB", u); i = 1; while (b >= 1024 && i < 5) { b /= 1024; i++ }
		printf(b == int(b) ? "%d %s" : b < 10 && i > 1 ? "%.1f %s" : "%.0f %s", b, u[i]) }'
}
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
avail_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)

for size in $SIZES; do
	guest=$(bytes_of "$size")
	high=$((guest - (32 << 20)))
	copy=$("$BUILD/bench/bitmap_copy" "$size") || {
		status=1
		printf '| 1 | %s | failed: bench/bitmap_copy failed | | | |\n' "$size" >>"$OUT1"
		continue
	}
	copy_ns=$(field ns "$copy")
	raw=$((guest / 4096 / 8))
	for every in $EVERY; do
		pct=$(awk -v e="$every" 'BEGIN { printf "%g %%", 100 / e }')
		case="$(human "$guest"), $pct written$label"
		pages=$((high / 4096 / every))
		need_kib=$((pages * 4))
		if [ $need_kib -gt $((avail_kib / 4)) ]; then
			why="not measured: its $pages written pages become $(human $((need_kib * 1024))) of host RAM, more than a quarter of the $(human $((avail_kib * 1024))) this host has available"
			printf '| 1 | %s | %s | | | |\n' "$case" "$why" >>"$OUT1"
			printf '| 5 | %s | %s | | | |\n' "$case" "not measured (see section 1)" >>"$OUT5"
			continue
		fi
		echo "sparse_guests: $case ($pages pages per pass)" >&2
		rm -f "$T"/*
		"$BUILD/bin/hvmtrace-vmm" "${vmm_mode[@]}" --payload sparse --write-every "$every" --low-ram 32M --high-ram "$high" \
			--phase-time 1h --pass-log-gap 1h --vcpu-cpu 0 --listen "$T/vm.sock" --phase-log "$T/pl.jsonl" \
			2>"$T/vmm.err" &
		vmm=$!
		# The first pass makes every page of the pattern resident: trace once it is done, so the rows show
		# the steady state, not the first touches.
		until grep -q '"type":"pass"' "$T/pl.jsonl" 2>/dev/null; do
			kill -0 $vmm 2>/dev/null || break
			sleep 0.2
		done
		ok=1
		for iv in 1s 100ms; do
			[ $iv = 1s ] && dur=4s || dur=1500ms
			"$BUILD/bin/hvmtrace" record -q --attach "$T/vm.sock" --mode "$MODE" --cpu 1 --interval $iv --duration $dur \
				-o "$T/$iv.hvt" 2>"$T/rec-$iv.err" || { ok=0; echo "sparse_guests: $case: record at $iv failed:" >&2; cat "$T/rec-$iv.err" "$T/vmm.err" >&2; }
		done
		kill $vmm 2>/dev/null
		wait $vmm
		vmm=
		if [ $ok = 1 ] && s1=$("$HERE/trace_stats.py" "$BUILD/bin/hvmtrace" "$T/1s.hvt") &&
			s2=$("$HERE/trace_stats.py" "$BUILD/bin/hvmtrace" "$T/100ms.hvt"); then
			:
		else
			status=1
			printf '| 1 | %s | failed: a run it depends on failed (stderr above) | | | |\n' "$case" >>"$OUT1"
			continue
		fi
		awk -v c="$case" -v copy="$copy_ns" -v raw="$raw" -v total="$((guest / 4096))" \
			-v h1="$(field harvest_us "$s1")" -v c1="$(field tracer_cpu_us "$s1")" -v w1="$(field written "$s1")" \
			-v d1="$(field duration_s "$s1")" -v b1="$(field bytes "$s1")" \
			-v h2="$(field harvest_us "$s2")" -v c2="$(field tracer_cpu_us "$s2")" -v w2="$(field written "$s2")" \
			-v d2="$(field duration_s "$s2")" -v out1="$OUT1" -v out5="$OUT5" 'BEGIN {
			us = h1 + c1
			printf "| 1 | %s | harvest %.0f µs + tracer CPU %.0f µs = %.0f µs per 1 s interval | bitmap copy %.1f µs | %.0f× | tracer %.2f %% / %.2f %% of a core at 1 s / 100 ms (harvest %.2f %% / %.2f %%); written per interval %d (%.3f %%) at 1 s, %d at 100 ms |\n", \
				c, h1, c1, us, copy / 1e3, us * 1e3 / copy, 100 * c1 / (d1 * 1e6), 100 * c2 / (d2 * 1e6), \
				100 * h1 / (d1 * 1e6), 100 * h2 / (d2 * 1e6), w1, 100 * w1 / total, w2 >> out1
			printf "| 5 | %s | %d B per interval | raw bitmap %d B | %.4f× | %d written pages per interval (a regular stride), %.3f B per written page |\n", \
				c, b1, raw, b1 / raw, w1, b1 / (w1 ? w1 : 1) >> out5 }'
	done
done
exit $status
