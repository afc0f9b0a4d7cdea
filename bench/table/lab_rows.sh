#!/bin/bash
# Table section 2 from bench/lab_harvest.sh's output for one vendor: one row per mapping size, share touched
# and walk, from its lines "LAB_AD mapping=4k|2m|2m_gib touched=1|100 walk=pruned|full harvest_ns=N copy_ns=N
# pages=N", each case named by the vendor's nested paging (AMD NPT, Intel EPT); 2m_gib is the 4 GiB slot of
# 2 MiB mappings (16 GiB, harvested with KVM_AD_HARVEST_SPARSE) where the pruned walk skips whole GiBs, 1 %
# touched only. A case with no line is "not
# measured", with the reason; a lab that cannot run here (LAB_STATUS 77) is one row saying why; the full walk
# of a wholly touched slot also comes from the lab's earlier "BENCH mappings=4K|2M …
# harvest_all_set_ms_per_gib=… bitmap_copy_ms_per_gib=…" lines.
# usage: bench/table/lab_rows.sh LAB_OUTPUT LAB_STATUS [amd|intel]
#   LAB_STATUS: lab_harvest.sh's exit status (0: it measured; 77: skipped, the reason on its last line)
set -u
out=${1:?usage: lab_rows.sh LAB_OUTPUT LAB_STATUS [amd|intel]}
lab_ok=${2:-0}
case ${3:-amd} in
amd) paging="AMD NPT" l0="nested lab under QEMU TCG" ;;
intel) paging="Intel EPT" l0="nested lab under Bochs" ;;
*)
	echo "lab_rows.sh: vendor '$3': expected amd or intel" >&2
	exit 2
	;;
esac
if [ "$lab_ok" = 77 ]; then
	printf '| 2 | %s: KVM_AD_HARVEST in the %s | not measured: %s | | | |\n' "$paging" "$l0" \
		"$(tail -n 1 "$out" | sed 's/^skipped: //')"
	exit 0
fi
get() { grep -E "^ *LAB_AD mapping=$1 touched=$2 walk=$3 " "$out" | tail -n 1; }
val() { sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p" <<<"$2"; }
for m in 4k 2m 2m_gib; do
	for t in 1 100; do
		[ $m != 2m_gib ] || [ $t = 1 ] || continue
		full=$(get $m $t full)
		for w in pruned full; do
			line=$(get $m $t $w)
			case 	$m in
			4k) size="4 KiB mappings" ;;
			2m) size="2 MiB mappings" ;;
			*) size="2 MiB mappings over 16 GiB (1 GiB pruning, SPARSE)" ;;
			esac
			case="$paging, $size, $t % touched, $w walk"
			old=$(grep -E "^ *BENCH mappings=$([ $m = 4k ] && echo 4K || echo 2M) .*harvest_all_set_ms_per_gib=" "$out" | tail -n 1)
			if [ -z "$line" ] && [ $t = 100 ] && [ $w = full ] && [ -n "$old" ]; then
				# The lab's earlier form: the full walk of a slot with every page touched, per GiB.
				h=$(sed -n 's/.*harvest_all_set_ms_per_gib=\([0-9.]*\).*/\1/p' <<<"$old")
				c=$(sed -n 's/.*bitmap_copy_ms_per_gib=\([0-9.]*\).*/\1/p' <<<"$old")
				awk -v c="$case" -v h="$h" -v cp="$c" -v l0="$l0" 'BEGIN {
					printf "| 2 | %s | KVM_AD_HARVEST %.3f ms per GiB | bitmap copy %.4f ms per GiB | %.0f× | from the lab'"'"'s BENCH line (every page touched, 256 MiB slot; %s: only the ratios carry over) |\n", c, h, cp, h / cp, l0 }'
				continue
			fi
			if [ -z "$line" ]; then
				if [ "$lab_ok" != 0 ]; then
					why="failed: bench/lab_harvest.sh failed (its output above)"
				elif [ -n "$old" ] && ! grep -q 'LAB_AD ' "$out"; then
					why="not measured: this lab script measures only the full walk with every page touched (BENCH lines, no LAB_AD lines)"
				elif [ $w = pruned ]; then
					why="not measured: the lab printed no LAB_AD line for the pruned walk"
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
			awk -v c="$case" -v h="$h" -v cp="$c" -v also="$also" -v l0="$l0" 'BEGIN {
				printf "| 2 | %s | KVM_AD_HARVEST %.1f µs | bitmap copy %.1f µs | %.1f× | %s (%s: only the ratios carry over) |\n", \
					c, h / 1e3, cp / 1e3, h / cp, also, l0 }'
		done
	done
done
