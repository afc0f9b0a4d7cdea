#!/bin/bash
# Table section 2 from bench/lab_harvest.sh's output: one row per mapping size, share touched and walk, from
# its lines "LAB_AD mapping=4k|2m touched=1|100 walk=pruned|full harvest_ns=N copy_ns=N pages=N". A case
# with no line is "not measured", with the reason.
# usage: bench/table/lab_rows.sh LAB_OUTPUT LAB_STATUS   (LAB_STATUS: 0 when lab_harvest.sh succeeded)
set -u
out=${1:?usage: lab_rows.sh LAB_OUTPUT LAB_STATUS}
lab_ok=${2:-0}
get() { grep -E "^ *LAB_AD mapping=$1 touched=$2 walk=$3 " "$out" | tail -n 1; }
val() { sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" <<<"$2"; }
for m in 4k 2m; do
	for t in 1 100; do
		full=$(get $m $t full)
		for w in pruned full; do
			line=$(get $m $t $w)
			case="$([ $m = 4k ] && echo 4 KiB || echo 2 MiB) mappings, $t % touched, $w walk"
			if [ -z "$line" ]; then
				if [ "$lab_ok" != 0 ]; then
					why="failed: bench/lab_harvest.sh failed (its output above)"
				elif [ $w = pruned ]; then
					why="not measured: the lab printed no pruned walk (its kernel's KVM_AD_HARVEST has none)"
				else
					why="not measured: the lab printed no LAB_AD line for it"
				fi
				printf '| 2 | %s | %s | | | |\n' "$case" "$why"
				continue
			fi
			h=$(val harvest_ns "$line") c=$(val copy_ns "$line") p=$(val pages "$line")
			also="$p pages"
			if [ $w = pruned ] && [ -n "$full" ]; then
				also="$also; pruned / full walk = $(awk -v a="$h" -v b="$(val harvest_ns "$full")" 'BEGIN { printf "%.3f", a / b }')"
			fi
			awk -v c="$case" -v h="$h" -v cp="$c" -v also="$also" 'BEGIN {
				printf "| 2 | %s | KVM_AD_HARVEST %.1f µs | bitmap copy %.1f µs | %.1f× | %s (nested lab under TCG: only the ratios carry over) |\n", \
					c, h / 1e3, cp / 1e3, h / cp, also }'
		done
	done
done
